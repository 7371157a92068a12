//! The CUDA backend driven end to end through the simulated driver (`simcuda/`): on a machine
//! without a GPU, the GPU tests of this binary, `roofprobe devices` and a `roofprobe run` on
//! `cuda:0` all go through cudarc, the driver API, PTX loading, launches, events and
//! read-backs, with every kernel run by the PTX interpreter.
//!
//! The simulated driver never shadows a real one: it is built as `libsimcuda.so` (cargo puts
//! target/*/deps on `LD_LIBRARY_PATH`, so it must not be called libcuda there), and each test
//! opts in by running a child process with a directory of its own first on `LD_LIBRARY_PATH`,
//! holding `libcuda.so.1` and `libcuda.so` links to it. This process never loads it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// libsimcuda.so, which cargo builds beside this test binary (roofprobe dev-depends on it).
pub fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/<profile>/deps");
    let lib = deps.join("libsimcuda.so");
    assert!(
        lib.is_file(),
        "{} is missing: cargo builds it with the tests (simcuda is a dev-dependency)",
        lib.display()
    );
    lib
}

/// A child process's view of the simulated driver: the link directory and the device settings
/// (`SIMCUDA`, see simcuda's config module).
pub struct Sim {
    dir: tempfile::TempDir,
    settings: String,
}

impl Sim {
    pub fn new(settings: &str) -> Sim {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let lib = library();
        for name in ["libcuda.so.1", "libcuda.so"] {
            std::os::unix::fs::symlink(&lib, dir.path().join(name)).expect("linking libcuda");
        }
        Sim {
            dir,
            settings: settings.to_string(),
        }
    }

    /// `program` set up to load the simulated driver as its libcuda.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        let mut paths = vec![self.dir.path().to_path_buf()];
        if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
            paths.extend(std::env::split_paths(&old));
        }
        cmd.env(
            "LD_LIBRARY_PATH",
            std::env::join_paths(paths).expect("a path list"),
        )
        .env("SIMCUDA", &self.settings);
        cmd
    }

    /// The roofprobe binary, set up likewise.
    pub fn roofprobe(&self) -> Command {
        self.command(assert_cmd::cargo::cargo_bin("roofprobe"))
    }
}

/// Runs `cmd` to completion, killing it after `limit` (a hang is a failure, not a stuck CI).
pub fn run_limited(cmd: &mut Command, limit: Duration) -> Output {
    use std::io::Read;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting the child");
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting") {
            break s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "still running after {limit:?}, killed; stderr:\n{}",
                String::from_utf8_lossy(&err.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every GPU test of this binary (tests/gpu.rs, tests/compute_gpu.rs), run in a child against
/// the simulated driver with a missing device made a failure: none may skip, the fault and
/// runaway tests included.
#[test]
fn the_gpu_tests_run_on_the_simulated_driver() {
    let sim = Sim::new("memory=16M");
    let exe = std::env::current_exe().expect("the test binary");
    let out = run_limited(
        sim.command(&exe)
            .args(["gpu::", "--skip", "sim::", "--test-threads=1"])
            .env(crate::gpu::REQUIRE_GPU, "1"),
        Duration::from_secs(900),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let expected = [
        "gpu::every_stream_kernel_validates_on_every_device",
        "gpu::planned_cases_fit_and_validate_at_a_small_size",
        "gpu::an_impossible_size_is_a_clear_error",
        "gpu::events_time_every_launch_of_a_batch",
        "gpu::an_abandoned_batch_frees_nothing_under_queued_launches",
        "gpu::a_device_fault_fails_later_cases_clearly",
        "gpu::a_runaway_kernel_fails_its_case_and_does_not_hang",
        "gpu::a_quick_run_on_the_gpu_writes_valid_rows",
        "compute_gpu::every_compute_kernel_validates_on_every_gpu",
    ];
    for t in expected {
        assert!(
            stdout.contains(&format!("test {t} ... ok")),
            "{t} did not pass:\n{stdout}\n{stderr}"
        );
    }
    assert!(!stderr.contains("SKIPPED"), "{stderr}");
}

/// `devices` and a quick filtered `run` on cuda:0 through the binary: one case of every family,
/// each a valid `cuda` row of the simulated device; the compute rows carry the clock their
/// kernel measured.
#[test]
fn a_run_on_the_simulated_gpu_gives_valid_rows_for_every_family() {
    let sim = Sim::new("");
    let listed = run_limited(sim.roofprobe().arg("devices"), Duration::from_secs(60));
    let listing = text(&listed.stdout);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert!(
        listing.contains("cuda:0 — roofprobe simulated GPU") && listing.contains("8.9"),
        "{listing}"
    );
    let dir = tempfile::tempdir().unwrap();
    let filters = [
        "stream/triad/f32",
        "peak/fma/f32",
        "tensor/mma_m16n8k16/bf16.f32",
        "intensity/fma/f32/16",
        "cache/l1/i32/16",
        "cache/l2/i32/16",
    ];
    let mut cmd = sim.roofprobe();
    cmd.args(["run", "--quick", "--device", "cuda:0", "--out"])
        .arg(dir.path());
    for f in filters {
        cmd.args(["--filter", f]);
    }
    let out = run_limited(&mut cmd, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let csv = csv_in(dir.path());
    let rows = roofprobe::record::read_csv(&csv).unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(ids.len(), filters.len(), "{ids:?}");
    for r in &rows {
        assert!(r.valid, "{}: {} ({})", r.case_id(), r.status, r.note);
        assert_eq!(r.backend.as_str(), "cuda");
        assert_eq!(r.device_name, "roofprobe simulated GPU");
        use roofprobe::bench::Family;
        let measures_its_clock = match r.family {
            Family::Peak | Family::Tensor => true,
            Family::Intensity => r.flops > 0,
            _ => false,
        };
        if measures_its_clock {
            assert!(
                r.clock_mhz.is_some_and(|mhz| (mhz - 64.0).abs() < 1.0),
                "{}: the kernel's own clock, {:?}",
                r.case_id(),
                r.clock_mhz
            );
        }
    }
}

/// The one CSV a run wrote into `dir`.
pub fn csv_in(dir: &Path) -> PathBuf {
    let csvs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    assert_eq!(csvs.len(), 1, "{csvs:?}");
    csvs[0].clone()
}
