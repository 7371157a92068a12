//! The CUDA backend driven end to end through the simulated driver (`simcuda/`): on a machine
//! without a GPU, the GPU tests of this binary, `roofprobe devices` and a `roofprobe run` on
//! `cuda:0` all go through cudarc, the driver API, PTX loading, launches, events and
//! read-backs, with every kernel run by the PTX interpreter.
//!
//! The simulated driver never shadows a real one: it is built as `libsimcuda.so` (cargo puts
//! target/*/deps on `LD_LIBRARY_PATH`, so it must not be called libcuda there), and each test
//! opts in by running a child process with a directory of its own first on `LD_LIBRARY_PATH`,
//! holding `libcuda.so.1` and `libcuda.so` links to it (and, unless a test asks otherwise,
//! `libnvidia-ml.so.1` for its simulated NVML, and the `libcublas`/`libcublasLt` names, for its
//! simulated cuBLAS). This process never loads it.

use crate::common::text;
use std::collections::BTreeSet;
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
    /// More environment for the child.
    env: Vec<(String, std::ffi::OsString)>,
}

impl Sim {
    /// The simulated driver as on a GPU machine: the simulated NVML beside it (linked as
    /// `libnvidia-ml.so.1`, so that a real NVML on the loader's path is never the one found), and
    /// the simulated cuBLAS, linked under every name roofprobe's search tries on the loader's path
    /// (`cublas::NAMES`), and each name's cuBLASLt, so that a real cuBLAS elsewhere on it is
    /// never the one found.
    pub fn new(settings: &str) -> Sim {
        let sim = Sim::without_cublas(settings);
        let lib = library();
        for cublas in roofprobe::backend::cuda::cublas::NAMES {
            for name in [
                cublas.to_string(),
                cublas.replace("libcublas", "libcublasLt"),
            ] {
                std::os::unix::fs::symlink(&lib, sim.dir.path().join(name))
                    .expect("linking libcublas");
            }
        }
        sim
    }

    /// The simulated driver and NVML: no cuBLAS where the child looks first (the cuBLAS rows say
    /// why they were skipped, unless a real cuBLAS lies on the loader's path).
    pub fn without_cublas(settings: &str) -> Sim {
        let sim = Sim::driver_alone(settings);
        std::os::unix::fs::symlink(library(), sim.dir.path().join("libnvidia-ml.so.1"))
            .expect("linking libnvidia-ml");
        sim
    }

    /// The simulated driver alone: no NVML and no cuBLAS where the child looks first.
    pub fn driver_alone(settings: &str) -> Sim {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let lib = library();
        for name in ["libcuda.so.1", "libcuda.so"] {
            std::os::unix::fs::symlink(&lib, dir.path().join(name)).expect("linking libcuda");
        }
        Sim {
            dir,
            settings: settings.to_string(),
            env: Vec::new(),
        }
    }

    /// The simulated driver, with the simulated cuBLAS only where a GPU machine's image keeps
    /// it: in the CUDA 13 wheel's folder (`nvidia/cu13/lib`) of a venv outside every standard
    /// place (`opt/torch/.venv`), which the child knows only through a `python3` on its `PATH`
    /// that links to the venv's. Nothing on the loader's path is a cuBLAS. Returns the folder
    /// cuBLAS lies in.
    pub fn with_cublas_in_a_venv(settings: &str) -> (Sim, PathBuf) {
        let sim = Sim::without_cublas(settings);
        let lib = library();
        let image = sim.dir.path().join("image");
        let venv = image.join("opt/torch/.venv");
        let wheel = venv.join("lib/python3.12/site-packages/nvidia/cu13/lib");
        std::fs::create_dir_all(&wheel).unwrap();
        for name in ["libcublas.so.13", "libcublasLt.so.13"] {
            std::os::unix::fs::symlink(&lib, wheel.join(name)).expect("linking libcublas");
        }
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("bin/python3"), "").unwrap();
        let bin = image.join("usr/local/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink("../../../opt/torch/.venv/bin/python3", bin.join("python3"))
            .unwrap();
        let mut path = vec![bin];
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let path = std::env::join_paths(path).expect("a path list");
        (sim.with_env("PATH", path), wheel)
    }

    /// The same, with `key=value` in the child's environment.
    pub fn with_env(mut self, key: &str, value: impl Into<std::ffi::OsString>) -> Sim {
        self.env.push((key.to_string(), value.into()));
        self
    }

    /// `program` set up to load the simulated driver as its libcuda.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        crate::common::library_dir_first(&mut cmd, self.dir.path())
            .env("SIMCUDA", &self.settings)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// The roofprobe binary, set up likewise.
    pub fn roofprobe(&self) -> Command {
        self.command(assert_cmd::cargo::cargo_bin("roofprobe"))
    }
}

/// Runs `cmd` to completion, killing it and every process it started after `limit` (a hang is
/// a failure, not a stuck CI).
pub fn run_limited(cmd: &mut Command, limit: Duration) -> Output {
    crate::common::Signalled::start(cmd, limit).wait()
}

/// A quick `run` on cuda:0 of `sim` with `filters`: it must end 0, or 4 where figures are
/// flagged suspect (an interpreter is far below any theory and noisy; a flag is not an invalid
/// row). The CSV it wrote (in `dir`) and its rows.
fn run_filtered(
    sim: &Sim,
    dir: &Path,
    filters: &[&str],
) -> (PathBuf, Vec<roofprobe::results::record::Record>) {
    let (csv, rows, _) = run_quick(sim, dir, &[], filters);
    (csv, rows)
}

/// [`run_filtered`] with `extra` arguments to `run`, and what it printed on stdout too.
fn run_quick(
    sim: &Sim,
    dir: &Path,
    extra: &[&str],
    filters: &[&str],
) -> (PathBuf, Vec<roofprobe::results::record::Record>, String) {
    let mut cmd = sim.roofprobe();
    cmd.args(["run", "--quick", "--device", "cuda:0"])
        .args(extra)
        .arg("--out")
        .arg(dir);
    for f in filters {
        cmd.args(["--filter", f]);
    }
    let out = run_limited(&mut cmd, Duration::from_secs(300));
    assert!(
        matches!(out.status.code(), Some(0 | 4)),
        "{:?}: {}",
        out.status.code(),
        text(&out.stderr)
    );
    let csv = csv_in(dir);
    let rows = roofprobe::results::csv::read_csv(&csv).unwrap();
    (csv, rows, text(&out.stdout))
}

/// Every GPU test of this binary (tests/gpu.rs, tests/compute_gpu.rs), run against the
/// simulated driver with a missing device made a failure: none may skip, the fault and runaway
/// tests included. Two children side by side, each with a simulated device of its own: the
/// slowest test (every planned case; the whole test took 132 s on 2026-12-02 on a 2-core
/// machine, where on the simulated Ada it used before the lot was noted at about 120 s) beside
/// all the
/// others, which run one at a time, as tests sharing one process's device must. The device is
/// a Hopper (compute capability 9.0), the one GPU a device check meets: its plan has the wgmma
/// rows and the legacy mma.sync notes an Ada's lacks (the GPU tests once failed on these
/// notes, found by a rehearsal of the device check on the simulated driver). Its SM clock boosts
/// above the driver's CLOCK_RATE attribute (64 MHz against 54), as a GeForce board's does: a
/// clock bound taken from the attribute alone fails the compute test.
#[test]
fn the_gpu_tests_run_on_the_simulated_driver() {
    const SLOWEST: &str = "gpu::planned_cases_fit_and_validate_at_a_small_size";
    let sim = Sim::new("cc=9.0,memory=16M,clock_attribute=54000");
    let exe = std::env::current_exe().expect("the test binary");
    let run = |args: &[&str]| {
        run_limited(
            sim.command(&exe)
                .args(args)
                .args(["--skip", "sim::", "--test-threads=1"])
                .env(crate::gpu::REQUIRE_GPU, "1"),
            Duration::from_secs(900),
        )
    };
    let outs = std::thread::scope(|s| {
        let slowest = s.spawn(|| run(&[SLOWEST, "--exact"]));
        let others = s.spawn(|| run(&["gpu::", "--skip", SLOWEST]));
        [slowest.join().unwrap(), others.join().unwrap()]
    });
    let mut stdout = String::new();
    let mut stderr = String::new();
    for out in &outs {
        let (o, e) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{o}\n{e}");
        stdout += &o;
        stderr += &e;
    }
    let expected = [
        "gpu::every_stream_kernel_validates_on_every_device",
        "gpu::planned_cases_fit_and_validate_at_a_small_size",
        "gpu::an_impossible_size_is_a_clear_error",
        "gpu::events_time_every_launch_of_a_batch",
        "gpu::an_abandoned_batch_frees_nothing_under_queued_launches",
        "gpu::a_device_fault_fails_later_cases_clearly",
        "gpu::a_runaway_kernel_fails_its_case_and_does_not_hang",
        "gpu::a_quick_run_on_the_gpu_writes_valid_rows",
        "gpu::gemm_launches_read_each_copy_of_b_in_turn",
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

/// The size sweep on the simulated GPU (16 MiB of memory, so 1 MiB arrays fit): the STREAM
/// kernels at each size through the CUDA backend, each row checked element by element; copy's
/// two sizes give the table's fit line and the calibration's `size_efficiency` section.
///
/// The simulated kernels' times are the interpreter's wall time, so a machine busy with other
/// work can make the larger copy the faster one, and then there is rightly no fit: such a run
/// (a row flagged `high_cv`, no fit line) is run once more, saying why, before the test judges.
#[test]
fn the_size_sweep_runs_on_the_simulated_gpu() {
    let sim = Sim::new("memory=16M");
    let mut dir = tempfile::tempdir().unwrap();
    let sweep = |dir: &Path| run_quick(&sim, dir, &["--size", "2MiB"], &["efficiency/copy/"]);
    let (mut csv, mut rows, mut stdout) = sweep(dir.path());
    let fitted = |stdout: &str| stdout.contains("size efficiency/copy/f32: t = a + bytes/BW");
    let noisy = |rows: &[roofprobe::results::record::Record]| {
        rows.iter().any(|r| r.flags.contains("high_cv"))
    };
    if !fitted(&stdout) && noisy(&rows) {
        eprintln!(
            "the size sweep's times were too noisy to fit (a busy machine): once more\n{stdout}"
        );
        dir = tempfile::tempdir().unwrap();
        (csv, rows, stdout) = sweep(dir.path());
    }
    let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(
        ids,
        ["efficiency/copy/f32/1024", "efficiency/copy/f32/2048"],
        "{stdout}"
    );
    for r in &rows {
        assert!(r.valid && r.gbps.is_some(), "{}: {}", r.case_id(), r.status);
        assert_eq!(r.backend.as_str(), "cuda");
        assert_eq!(r.samples, 3, "{}", r.case_id());
    }
    assert!(fitted(&stdout), "{stdout}");
    let cal = roofprobe::Calibration::load(csv.with_extension("json")).unwrap();
    assert_eq!(cal.size_efficiency.len(), 1);
    assert_eq!(cal.size_efficiency[0].points.len(), 2);
}

/// The STREAM cases filled and checked on the device (kernels/prep.ptx), as a GPU's DRAM-sized
/// arrays are (`describe::DEVICE_PREP_FROM_BYTES`, moved to 0 here, where the simulated arrays
/// are small): every row valid, its inputs written by the fill kernels and its output checked by
/// the check kernel, once, after the samples; the prep module loaded once for all the cases.
#[test]
fn stream_cases_filled_and_checked_on_the_simulated_gpu_are_valid() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let sim = Sim::new(&format!("trace={}", trace.display()))
        .with_env(roofprobe::backend::cuda::DEVICE_PREP_FROM_VAR, "0");
    let (_, rows) = run_filtered(&sim, &dir.path().join("out"), &["stream/"]);
    assert_eq!(rows.len(), 14, "{rows:?}");
    for r in &rows {
        assert!(r.valid, "{}: {}", r.case_id(), r.status);
    }
    let trace = std::fs::read_to_string(&trace).unwrap();
    let launches = |name: &str| launches_of(&trace, name);
    // every array filled: 2 inputs and an output (add, triad, dot), 1 and 1 (copy, scale,
    // read), the output alone (write), in each precision
    assert_eq!(
        (launches("fill_b32"), launches("fill_b64")),
        (16, 16),
        "{trace}"
    );
    // each map kernel's output checked once, after its samples
    assert_eq!(
        (launches("check_f32"), launches("check_f64")),
        (5, 5),
        "{trace}"
    );
    assert_eq!(
        trace
            .lines()
            .filter(|l| l.starts_with("load ") && l.contains("fill_b32"))
            .count(),
        1,
        "the prep module loaded once: {trace}"
    );
}

/// The intensity sweep filled and checked on the device (kernels/prep.ptx's `fill_sweep_b<w>`
/// and `check_sweep_b<w>`), as a GPU's DRAM-sized sweep is (`describe::DEVICE_PREP_FROM_BYTES`,
/// moved to 0 here): one point of every precision, each row valid (its output checked on the
/// device against its gold table, its block records on the host), each input filled once, each
/// output poisoned once and checked once, after its samples.
#[test]
fn sweep_points_filled_and_checked_on_the_simulated_gpu_are_valid() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let sim = Sim::new(&format!("trace={}", trace.display()))
        .with_env(roofprobe::backend::cuda::DEVICE_PREP_FROM_VAR, "0");
    let filters = [
        "intensity/fma/f32/0",
        "intensity/fma/f64/4",
        "intensity/fma/f16x2/8",
        "intensity/fma/bf16x2/64",
        "intensity/fma/i32/32",
    ];
    let (_, rows, _) = run_quick(
        &sim,
        &dir.path().join("out"),
        &["--size", "16KiB"],
        &filters,
    );
    let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(ids.len(), filters.len(), "{ids:?}");
    for r in &rows {
        assert!(r.valid, "{}: {}", r.case_id(), r.status);
    }
    let trace = std::fs::read_to_string(&trace).unwrap();
    let launches = |name: &str| launches_of(&trace, name);
    // f32, f16x2, bf16x2 and i32 in 32-bit words, f64 in 64-bit ones
    assert_eq!(
        (launches("fill_sweep_b32"), launches("fill_sweep_b64")),
        (4, 1),
        "{trace}"
    );
    assert_eq!(
        (launches("fill_b32"), launches("fill_b64")),
        (4, 1),
        "{trace}"
    );
    assert_eq!(
        (launches("check_sweep_b32"), launches("check_sweep_b64")),
        (4, 1),
        "{trace}"
    );
}

/// The kernels [`a_wrong_word_makes_its_row_invalid`] spoils (SIMCUDA `wrong=`), as their rows'
/// filters and their entries: a STREAM map kernel, a reduction and an intensity-sweep point.
const SPOILED: [(&str, &str); 3] = [
    ("stream/triad/f32", "triad_f32"),
    ("stream/dot/f32", "dot_f32"),
    ("intensity/fma/f32/4", "fma_f32_k4"),
];

/// A quick run of the [`SPOILED`] cases and `stream/copy/f32` on a simulated device whose
/// `SPOILED` kernels each leave one word of their output wrong after every launch
/// (simcuda's `wrong=`: the output's 32-bit word 2·⌊n/4⌋ gets its top mantissa bit
/// flipped), with the arrays checked on the device from `device_prep_from` bytes on: the run
/// exits with the invalid-row code, each spoiled row is invalid and its status names the wrong
/// word (a map kernel's element and a sweep's value at their index, the reduction's total
/// against its gold one), and the copy stays valid. Returns the rows by id and the trace.
fn a_wrong_word_makes_its_row_invalid(
    device_prep_from: u64,
) -> (
    std::collections::BTreeMap<String, roofprobe::results::record::Record>,
    String,
) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let wrong: Vec<&str> = SPOILED.iter().map(|(_, entry)| *entry).collect();
    let sim = Sim::new(&format!(
        "trace={},wrong={}",
        trace.display(),
        wrong.join("+")
    ))
    .with_env(
        roofprobe::backend::cuda::DEVICE_PREP_FROM_VAR,
        device_prep_from.to_string(),
    );
    let mut cmd = sim.roofprobe();
    cmd.args(["run", "--quick", "--device", "cuda:0", "--size", "16KiB"])
        .arg("--out")
        .arg(dir.path().join("out"));
    for (filter, _) in SPOILED {
        cmd.args(["--filter", filter]);
    }
    cmd.args(["--filter", "stream/copy/f32"]);
    let out = run_limited(&mut cmd, Duration::from_secs(300));
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(roofprobe::cli::EXIT_INVALID),
        "{stderr}"
    );
    let rows: std::collections::BTreeMap<_, _> =
        roofprobe::results::csv::read_csv(&csv_in(&dir.path().join("out")))
            .unwrap()
            .into_iter()
            .map(|r| (r.case_id(), r))
            .collect();
    let ids: Vec<&str> = rows.keys().map(String::as_str).collect();
    assert_eq!(
        ids,
        [
            "intensity/fma/f32/4",
            "stream/copy/f32",
            "stream/dot/f32",
            "stream/triad/f32"
        ],
        "{stderr}"
    );
    assert!(
        rows["stream/copy/f32"].valid,
        "{}",
        rows["stream/copy/f32"].status
    );
    // `invalid: 1 of N elements wrong: [I] is …, should be …`, I the word simcuda spoiled
    let one_wrong_word = |id: &str, what: &str| {
        let status = &rows[id].status;
        assert!(!rows[id].valid, "{id}: {status}");
        let n: u64 = status
            .strip_prefix("invalid: 1 of ")
            .and_then(|s| s.split_once(&format!(" {what} wrong: [")))
            .and_then(|(n, _)| n.parse().ok())
            .unwrap_or_else(|| panic!("{id}: {status}"));
        let named = format!("{what} wrong: [{}] is ", 2 * (n / 4));
        assert!(
            status.contains(&named) && status.contains("should be"),
            "{id}: {status}"
        );
    };
    one_wrong_word("stream/triad/f32", "elements");
    one_wrong_word("intensity/fma/f32/4", "values");
    let dot = &rows["stream/dot/f32"];
    assert!(
        !dot.valid
            && dot.status.starts_with("invalid: sum is ")
            && dot.status.contains("should be"),
        "{}",
        dot.status
    );
    let trace = std::fs::read_to_string(&trace).unwrap();
    for (_, entry) in SPOILED {
        assert!(
            trace
                .lines()
                .any(|l| l.starts_with(&format!("wrong {entry} 0x"))),
            "{entry} spoiled: {trace}"
        );
    }
    (rows, trace)
}

/// Launches of the kernel `name` in a simulated driver's trace.
fn launches_of(trace: &str, name: &str) -> usize {
    trace
        .lines()
        .filter(|l| l.starts_with(&format!("launch {name} ")))
        .count()
}

/// A kernel that leaves one word of its output wrong is caught by the check on the device
/// (kernels/prep.ptx, `ROOFPROBE_DEVICE_PREP_FROM` at 0): the map kernel's and the sweep's
/// outputs by their check kernels, which ran (the reduction's partial sums are the host's to
/// add, on either path), and the row is invalid with the word named.
#[test]
fn a_wrong_output_word_is_caught_by_the_device_check() {
    let (_, trace) = a_wrong_word_makes_its_row_invalid(0);
    // checked on the device: the triad and the copy by check_f32, the sweep by its own
    assert_eq!(
        (
            launches_of(&trace, "check_f32"),
            launches_of(&trace, "check_sweep_b32")
        ),
        (2, 1),
        "{trace}"
    );
}

/// The same wrong word with the arrays filled and checked on the host (device preparation
/// never, `ROOFPROBE_DEVICE_PREP_FROM` at its most): the host's check catches it alike.
#[test]
fn a_wrong_output_word_is_caught_by_the_host_check() {
    let (_, trace) = a_wrong_word_makes_its_row_invalid(u64::MAX);
    assert!(
        !trace.contains("launch check_") && !trace.contains("launch fill_"),
        "nothing prepared on the device: {trace}"
    );
}

/// A wider device: 8 SMs of 4 blocks each, a one-wave grid of 32 blocks where every other test
/// has 2 (an H200's is up to 1,056), so the grid-sized buffers (the dot product's partial sums,
/// the peak and sweep kernels' block records, the cache kernels' blocks) go through the driver
/// at more than the smallest size: the rows are valid and the grid is what the occupancy query
/// gave.
#[test]
fn a_run_on_a_wider_simulated_gpu_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let sim = Sim::new(&format!(
        "cc=9.0,sms=8,blocks_per_sm=4,memory=2M,trace={}",
        trace.display()
    ));
    let out = dir.path().join("run");
    let filters = [
        "stream/copy/f32",
        "stream/dot/f64",
        "peak/fma/f32",
        "intensity/fma/f32/4",
        "cache/l1/i32/128",
        "cache/l2/i32/16",
    ];
    let (_, rows) = run_filtered(&sim, &out, &filters);
    let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(ids.len(), filters.len(), "{ids:?}");
    for r in &rows {
        assert!(r.valid && r.units == 8, "{}: {}", r.case_id(), r.status);
    }
    // the one-wave kernels (all but the cache kernels' fixed grids) ran 32 blocks
    let trace = std::fs::read_to_string(&trace).unwrap();
    for entry in ["copy_f32 ", "dot_f64 ", "fma_f32 "] {
        let grids: BTreeSet<&str> = trace
            .lines()
            .filter_map(|l| l.strip_prefix("launch "))
            .filter(|l| l.starts_with(entry))
            .filter_map(|l| l.split(" grid ").nth(1)?.split(' ').next())
            .collect();
        assert_eq!(grids, BTreeSet::from(["32x1x1"]), "{entry}: {trace}");
    }
}

/// `run --dry-run` on a GPU plans in one worker and stops there: the device's cases listed with
/// their estimates, the worker's plan the same as a run's (the ids a quick run's plan has), and no
/// kernel launched, no array allocated beyond what planning loads, nothing written.
#[test]
fn a_dry_run_on_the_simulated_gpu_plans_and_launches_nothing() {
    let trace_dir = tempfile::tempdir().unwrap();
    let trace = trace_dir.path().join("trace");
    let sim = Sim::new(&format!("cc=9.0,trace={}", trace.display()));
    let out = trace_dir.path().join("never-made");
    let listed = run_limited(
        sim.roofprobe()
            .args(["run", "--device", "cuda:0", "--dry-run", "--out"])
            .arg(&out),
        Duration::from_secs(120),
    );
    let stdout = text(&listed.stdout);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert!(
        stdout.starts_with("dry run on roofprobe simulated GPU (cuda:0)"),
        "{stdout}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("plan: ") && last.contains("(the default suite)") && last.ends_with(" s"),
        "{last}"
    );
    for family in [
        "stream/",
        "peak/",
        "tensor/",
        "intensity/",
        "gemm/",
        "capacity/",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(family)),
            "{family}: {stdout}"
        );
    }
    let traced = std::fs::read_to_string(&trace).unwrap_or_default();
    assert!(traced.lines().any(|l| l.starts_with("load ")), "{traced}");
    assert!(
        !traced
            .lines()
            .any(|l| l.starts_with("launch") || l.starts_with("library")),
        "a dry run launched: {traced}"
    );
    assert!(!out.exists());
}

/// Issue 57's falling clock on the simulated GPU: a power-capped part's clock still falls
/// while a compute peak's samples run (`clock_fall=400:60:6`: 400 MHz at the first launch,
/// 68 MHz less each launch, 60 from the sixth on; a quick run of `peak/fma/f32` is six
/// launches, the samples the last three). The CUDA backend reads each sample's block records,
/// and the row's clock is the one its median sample ran at (each sample's time in cycles, their
/// median over the median time), not the last launch's, the lowest, which the runner once
/// paired with the median time and which made %theory read high. The interpreter's times are
/// wall time: where they spread more than the samples' clocks do, no pairing can be told from
/// the last clock by this test, which then says so and checks only that the clock lies among
/// the samples'.
#[test]
fn a_peak_under_a_falling_clock_records_its_samples_clock_not_the_last_launchs() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let sim = Sim::new(&format!("clock_fall=400:60:6,trace={}", trace.display()));
    let (_, rows) = run_filtered(&sim, &dir.path().join("run"), &["peak/fma/f32"]);
    let [row] = &rows[..] else {
        panic!("{} rows", rows.len())
    };
    assert!(row.valid, "{}", row.status);
    let trace = std::fs::read_to_string(&trace).unwrap();
    // the clock of every launch of the kernel, in order
    let clocks: Vec<f64> = trace
        .lines()
        .filter_map(|l| l.strip_prefix("clock fma_f32 "))
        .map(|mhz| mhz.parse().unwrap())
        .collect();
    let (reps, samples) = (row.reps as usize, row.samples as usize);
    assert!(clocks.len() > samples * reps, "{clocks:?}");
    // each sample's clock, the last launch of its batch's (its records'); the last sample first
    let mut sampled: Vec<f64> = (0..samples)
        .map(|i| clocks[clocks.len() - 1 - i * reps])
        .collect();
    let last = sampled[0];
    sampled.sort_by(f64::total_cmp);
    let mhz = row.clock_mhz.unwrap();
    // the records' clock is cycles over whole nanoseconds: a little above the clock's
    let (lowest, highest) = (sampled[0], sampled[samples - 1]);
    assert!(
        (lowest - 0.5..=highest + 0.5).contains(&mhz),
        "{mhz} MHz, the samples ran at {sampled:?}"
    );
    // Each sample's cycles are at least its clock × the fastest time, and the median time at
    // most the slowest: the paired clock is at least the samples' median clock over the times'
    // spread, above the last clock wherever that bound is.
    let spread = row.time_max_s.unwrap() / row.time_min_s.unwrap();
    let median_clock = roofprobe::stats::median(&sampled).unwrap();
    if median_clock / spread > last + 0.5 {
        assert!(
            mhz >= median_clock / spread - 0.5,
            "{mhz} MHz: the last launch's clock ({last} MHz), not the samples' {sampled:?} \
             (times spread {spread:.2} x)"
        );
    } else {
        eprintln!(
            "the samples' times spread {spread:.2} x, their clocks {sampled:?}: a clock paired \
             with the median time cannot be told from the last one here, only its bounds checked"
        );
    }
}

/// `devices` and a quick filtered `run` on cuda:0 through the binary: one case of every family,
/// each a valid `cuda` row of the simulated device; the compute rows carry the clock their
/// kernel measured.
#[test]
fn a_run_on_the_simulated_gpu_gives_valid_rows_for_every_family() {
    let trace_dir = tempfile::tempdir().unwrap();
    let trace = trace_dir.path().join("trace");
    let sim = Sim::new(&format!("trace={}", trace.display()));
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
        // the whole sweep, short here: 2 SMs × 2,048 threads × 16 bytes = 64 KiB up to 4 × the
        // 32 KiB L2, at 3 steps per octave
        "cache/sweep/",
        "gemm/ptx/bf16.f32/256x256x256",
        "gemm/cublas/bf16.f32/256x256x256",
        "latency/ca/i32/16",
        "latency/cg/i32/4",
        // all four figures: total, free, context, largest
        "capacity/",
        // the empty kernel and the event timer
        "launch/",
        // every copy at every size that fits the simulated device
        "link/",
    ];
    let (csv, rows) = run_filtered(&sim, dir.path(), &filters);
    let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    // not Hopper: mma.sync is the tensor path here, no legacy mark
    let mma = rows
        .iter()
        .find(|r| r.case_id() == "tensor/mma_m16n8k16/bf16.f32")
        .expect("the mma.sync row");
    assert!(!mma.note.contains("legacy"), "{}", mma.note);
    // link: planned at the device's free memory as the context was created (896 KiB)
    let link_cases = roofprobe::backend::cuda::plan::link_cases(896 << 10, &[]).len();
    assert!(link_cases >= 10, "{link_cases}");
    // capacity's 4 figures, the sweep's 4 steps, launch's 2 and the link's copies under one
    // filter each
    assert_eq!(
        ids.len(),
        filters.len() + 3 + 3 + 1 + link_cases - 1,
        "{ids:?}"
    );
    let steps: Vec<&str> = ids
        .iter()
        .filter(|id| id.starts_with("cache/sweep/"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        steps,
        [
            "cache/sweep/i32/64",
            "cache/sweep/i32/81",
            "cache/sweep/i32/102",
            "cache/sweep/i32/128"
        ]
    );
    let step = rows.iter().find(|r| r.kernel == "sweep").unwrap();
    assert_eq!(
        roofprobe::cases::cache::reported_levels(&step.note),
        // the sweep reads past L1 (ld.global.cg): its plateaus are matched to the L2 alone
        [("L2".to_string(), 32 << 10)]
    );
    // every copy ran and its destination checked (the loop below: valid); each host-link row
    // names the PCIe link the simulated NVML reports
    let link_rows: Vec<_> = rows
        .iter()
        .filter(|r| r.family.as_str() == "link")
        .collect();
    assert_eq!(link_rows.len(), link_cases);
    host_links_say(&rows, SIMULATED_PCIE);
    for r in &link_rows {
        assert!(r.gbps.is_some_and(|g| g > 0.0), "{}", r.case_id());
    }
    // the SM copies ran as kernels through mapped host memory, at two sizes each (what a fit
    // needs), and their destinations held the pattern (valid, above)
    for kernel in ["host_to_device_memcpy_sm", "device_to_host_memcpy_sm"] {
        let sm: Vec<_> = link_rows.iter().filter(|r| r.kernel == kernel).collect();
        assert!(sm.len() >= 2, "{kernel}: {} rows", sm.len());
        for r in sm {
            assert!(
                r.note.contains("mapped into the device") && r.note.contains("copy_f32, grid"),
                "{}: {}",
                r.case_id(),
                r.note
            );
        }
    }
    // capacity: largest <= free <= total on the simulated device (1 MiB, 128 KiB context),
    // the figures in `working_set_bytes`, and in the calibration beside the CSV
    let figure = |kernel: &str| {
        rows.iter()
            .find(|r| r.family.as_str() == "capacity" && r.kernel == kernel)
            .map(|r| r.working_set_bytes)
            .unwrap_or_else(|| panic!("no capacity/{kernel} row: {ids:?}"))
    };
    let (total, free, context, largest) = (
        figure("total"),
        figure("free"),
        figure("context"),
        figure("largest"),
    );
    assert_eq!((total, context), (1 << 20, 128 << 10));
    assert_eq!(free, total - context);
    assert!(largest <= free && largest > free / 2, "{largest} of {free}");
    let json = csv.with_extension("json");
    let cal = roofprobe::Calibration::load(&json).unwrap();
    let c = cal.capacity.expect("a capacity section");
    assert_eq!(
        (c.total_bytes, c.free_bytes, c.largest_allocation_bytes),
        (total, free, Some(largest))
    );
    // launch: the empty kernel's time per launch (its count checked against every launch the
    // backend issued) and the timer's resolution, both in the calibration's launch section
    let launch = |kernel: &str| {
        rows.iter()
            .find(|r| r.family.as_str() == "launch" && r.kernel == kernel)
            .unwrap_or_else(|| panic!("no launch/{kernel} row: {ids:?}"))
    };
    let (empty, timer) = (launch("empty"), launch("timer"));
    assert_eq!(
        (empty.reps, timer.reps),
        (roofprobe::cases::launch::LAUNCHES_PER_SAMPLE, 1)
    );
    assert_eq!((empty.gbps, empty.gflops), (None, None));
    let l = cal.launch.expect("a launch section");
    assert_eq!(
        (
            l.empty_kernel_secs,
            l.timer_resolution_secs,
            l.wake_barrier_secs
        ),
        (empty.time_median_s, timer.time_min_s, None)
    );
    for r in &rows {
        assert_eq!(r.backend.as_str(), "cuda");
        assert!(r.valid, "{}: {} ({})", r.case_id(), r.status, r.note);
        assert_eq!(r.device_name, "roofprobe simulated GPU");
        if r.family == roofprobe::cases::Family::Gemm {
            // the simulated cuBLAS beside the driver: its product checked like ours, and ours
            // given its ratio to it
            if r.kernel == roofprobe::cases::gemm::GPU_REFERENCE {
                assert!(r.note.contains("cublasGemmEx TN"), "{}", r.note);
            } else {
                assert!(r.ratio_to_reference.is_some(), "{}", r.case_id());
            }
        }
        use roofprobe::cases::Family;
        let measures_its_clock = match r.family {
            Family::Peak | Family::Tensor | Family::Latency => true,
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
    // The L1 kernel asked for the smallest shared-memory carveout (the largest L1) before it
    // ran; the L2 kernel left the default.
    let trace = std::fs::read_to_string(&trace).unwrap();
    let launches = |entry: &str| -> Vec<&str> {
        trace
            .lines()
            .filter(|l| l.starts_with(&format!("launch {entry} ")))
            .collect()
    };
    assert!(!launches("l1_i32").is_empty(), "{trace}");
    assert!(
        launches("l1_i32").iter().all(|l| l.ends_with("carveout 0")),
        "{trace}"
    );
    assert!(
        launches("l2_i32")
            .iter()
            .all(|l| l.ends_with("carveout -1")),
        "{trace}"
    );
}

/// The tf32 GEMM and the f32 SIMT GEMM (both f32 in memory: A, B and C 768 KiB at 256³, more
/// than the default simulated 1 MiB leaves) on a simulated GPU with 2 MiB: planned, launched
/// (tf32 with its 64 KiB of dynamic shared memory, f32 with static shared memory only), each
/// row valid (the exact product) with a figure; so is each cuBLAS row on the simulated cuBLAS,
/// tf32 through `CUBLAS_COMPUTE_32F_FAST_TF32` and f32 through `CUBLAS_COMPUTE_32F`.
#[test]
fn tf32_and_f32_gemm_rows_are_valid_on_the_simulated_gpu() {
    let sim = Sim::new("memory=2M");
    let dir = tempfile::tempdir().unwrap();
    let filters = [
        "gemm/ptx/tf32.f32/256x256x256",
        "gemm/cublas/tf32.f32/256x256x256",
        "gemm/ptx/f32/256x256x256",
        "gemm/cublas/f32/256x256x256",
    ];
    let (_, rows) = run_filtered(&sim, dir.path(), &filters);
    let mut ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    ids.sort();
    let mut wanted = filters.map(String::from).to_vec();
    wanted.sort();
    assert_eq!(ids, wanted);
    for r in &rows {
        assert!(r.valid, "{}: {} ({})", r.case_id(), r.status, r.note);
        assert!(r.gflops.is_some_and(|g| g > 0.0), "{:?}", r.gflops);
        if r.kernel == roofprobe::cases::gemm::GPU_REFERENCE {
            let fast = r.note.contains("f32 (fast tf32) compute");
            assert_eq!(fast, r.precision.to_string() == "tf32.f32", "{}", r.note);
        } else {
            assert!(r.ratio_to_reference.is_some(), "{}", r.case_id());
        }
    }
}

/// The cuBLAS rows on a shape that is not square (a decode step's 2 × 4096 × 4096: row-major
/// A, B and C become column-major operands of other sizes, so a swapped operand, operation or
/// leading dimension cannot pass unseen as it can at m = n = k), valid on the simulated cuBLAS
/// found in a CUDA 13 wheel of a venv named only by the python3 on `PATH`;
/// and with no cuBLAS to load (`ROOFPROBE_CUBLAS` naming a file that is not there) the rows
/// say `skipped: <why>` while ours still run.
#[test]
fn cublas_rows_are_checked_and_skipped_without_cublas() {
    // found where a GPU machine's PyTorch image keeps it (the `nvidia-cublas` wheel of CUDA
    // 13, in a venv that only the python3 on PATH names), and `devices` says which
    let (sim, wheel) = Sim::with_cublas_in_a_venv("memory=40M");
    let cublas = line_of(&devices(&sim), "cuBLAS:");
    let expected = wheel.canonicalize().unwrap().join("libcublas.so.13");
    assert!(
        cublas.contains(&format!("({})", expected.display())),
        "{cublas}, not {}",
        expected.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let (_, rows) = run_filtered(&sim, dir.path(), &["gemm/cublas/bf16.f32/2x4096x4096"]);
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert!(
        r.valid && r.note.contains("cublasGemmEx TN") && r.note.contains("lda = ldb = 4096"),
        "{}: {} ({})",
        r.case_id(),
        r.status,
        r.note
    );

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-libcublas.so");
    let sim = Sim::without_cublas("").with_env(roofprobe::backend::cuda::cublas::ENV, &missing);
    // (a skipped row is not a failed one)
    let (_, rows) = run_filtered(
        &sim,
        dir.path(),
        &[
            "gemm/ptx/bf16.f32/256x256x256",
            "gemm/cublas/bf16.f32/256x256x256",
        ],
    );
    assert_eq!(rows.len(), 2);
    for r in &rows {
        if r.kernel == roofprobe::cases::gemm::GPU_REFERENCE {
            assert!(
                !r.valid
                    && r.status.starts_with("skipped: ")
                    && r.status.contains(&format!(
                        "{}: cannot open shared object file",
                        missing.display()
                    ))
                    && r.status.matches("no-libcublas.so").count() == 2,
                "{}",
                r.status
            );
        } else {
            assert!(r.valid && r.ratio_to_reference.is_none(), "{}", r.status);
        }
    }
}

/// `devices` says which libcuda it loaded and whether each kernel module JIT-compiles, with the
/// JIT log of one that does not; a run then fails only that module's rows, saying why.
#[test]
fn a_module_the_jit_refuses_is_named_and_fails_only_its_rows() {
    let sim = Sim::new("reject=e4m3");
    let listed = run_limited(sim.roofprobe().arg("devices"), Duration::from_secs(60));
    let listing = text(&listed.stdout);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let line = |key: &str| line_of(&listing, key);
    assert!(
        line("libcuda").contains("libcuda.so") && line("libcuda").contains("libsimcuda.so"),
        "{listing}"
    );
    assert!(line("NVML").contains("loaded (clocks"), "{listing}");
    assert!(line("kernels/mma.ptx").ends_with("JIT ok"), "{listing}");
    // the modules a case loads are tried too: every one a default plan on this device runs
    for module in [
        "kernels/launch.ptx",
        "kernels/gemm_simt.ptx",
        "kernels/gemm.ptx.in#bf16.f32",
        "kernels/gemm.ptx.in#f16.f32",
        "kernels/gemm.ptx.in#tf32.f32",
    ] {
        assert!(line(module).ends_with("JIT ok"), "{module}: {listing}");
    }
    let fp8 = line("kernels/mma_sm89.ptx");
    assert!(
        fp8.contains("JIT FAILED") && fp8.contains("JIT log") && fp8.contains("rejects"),
        "{fp8}"
    );
    assert_eq!(
        listing.matches("kernels/intensity.ptx.in#k=1024").count(),
        5,
        "{listing}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = run_limited(
        sim.roofprobe()
            .args(["run", "--quick", "--device", "cuda:0", "--filter"])
            .args(["tensor/mma_m16n8k32", "--out"])
            .arg(dir.path()),
        Duration::from_secs(300),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let rows = roofprobe::results::csv::read_csv(&csv_in(dir.path())).unwrap();
    let by_id = |id: &str| rows.iter().find(|r| r.case_id() == id).unwrap();
    let fp8 = by_id("tensor/mma_m16n8k32/e4m3.f32");
    assert!(
        !fp8.valid
            && fp8.status.contains("CUDA_ERROR_INVALID_PTX")
            && fp8.status.contains("JIT log"),
        "{}",
        fp8.status
    );
    assert!(by_id("tensor/mma_m16n8k32/s8.s32").valid);
}

/// A GEMM module the JIT refuses (loaded per case) fails only our row, with the JIT's log, and
/// costs nothing of the cuBLAS row beside it, which runs on its arrays but not its kernel: the
/// mma.sync GEMM's (bf16, cuBLAS) and, on Hopper, the TMA GEMM's (fp8, cuBLASLt).
#[test]
fn a_gemm_the_jit_refuses_leaves_its_cublas_row_standing() {
    for (config, ours, reference) in [
        (
            "reject=ldmatrix",
            "gemm/ptx/bf16.f32/256x256x256",
            "gemm/cublas/bf16.f32/256x256x256",
        ),
        (
            "cc=9.0,clock_mhz=1,reject=cp.async.bulk.tensor",
            "gemm/tma/e4m3.f32/256x256x256",
            "gemm/cublas/e4m3.f32/256x256x256",
        ),
    ] {
        let sim = Sim::new(config);
        let dir = tempfile::tempdir().unwrap();
        let out = run_limited(
            sim.roofprobe()
                .args(["run", "--quick", "--device", "cuda:0"])
                .args(["--filter", ours, "--filter", reference, "--out"])
                .arg(dir.path()),
            Duration::from_secs(300),
        );
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
        let rows = roofprobe::results::csv::read_csv(&csv_in(dir.path())).unwrap();
        let by_id = |id: &str| rows.iter().find(|r| r.case_id() == id).unwrap();
        let refused = by_id(ours);
        assert!(
            !refused.valid
                && refused.status.contains("CUDA_ERROR_INVALID_PTX")
                && refused.status.contains("JIT log")
                && refused.status.contains("rejects"),
            "{config}: {}",
            refused.status
        );
        let cublas = by_id(reference);
        assert!(cublas.valid, "{config}: {}", cublas.status);
    }
}

/// Hopper's `wgmma` peaks and GEMMs through the simulated driver: on a 9.0 device `devices` says
/// the sm_90a modules JIT-compile, the wgmma rows (A from shared memory and from registers) are
/// valid and say what they ran, the `mma.sync` row of a type wgmma also runs is marked as the
/// legacy path, and the Hopper GEMMs (cp.async-fed, and TMA-fed: its tensor maps encoded by
/// the driver's `cuTensorMapEncodeTiled`, in bf16 and in fp8 e4m3, alone and in clusters of two
/// CTAs sharing B by multicast) give valid rows on the device's largest bf16 square, with their
/// dynamic shared memory 16-byte but not 1024-byte aligned (which the kernels round up; tests/
/// kernel_args.rs plants the old assumption); on the default 8.9 device the module is not
/// loaded, saying why.
#[test]
fn hopper_runs_the_wgmma_peaks_on_the_simulated_gpu() {
    // a 1 MHz clock: one loop trip a launch, so the interpreter has little to do
    let sim = Sim::new("cc=9.0,clock_mhz=1,smem_base=misaligned");
    let listing = devices(&sim);
    for module in [
        "kernels/wgmma.ptx.in",
        "kernels/mma_sm90.ptx",
        "kernels/gemm_wgmma.ptx.in#bf16.f32",
        "kernels/gemm_tma.ptx.in#bf16.f32",
        "kernels/gemm_tma.ptx.in#cluster2,bf16.f32",
    ] {
        let line = line_of(&listing, module);
        assert!(line.ends_with("JIT ok"), "{line}");
    }
    let dir = tempfile::tempdir().unwrap();
    let filters = [
        "tensor/wgmma_m64n256k16/bf16.f32",
        "tensor/wgmma_m64n256k32_rs/e5m2.f32",
        "tensor/mma_m16n8k16/bf16.f32",
        "tensor/mma_m16n8k16/f64.f64",
        "gemm/wgmma/bf16.f32/256x256x256",
        "gemm/tma/bf16.f32/256x256x256",
        "gemm/tma/e4m3.f32/256x256x256",
        "gemm/tma-cluster/bf16.f32/256x256x256",
        "gemm/tma-cluster/e4m3.f32/256x256x256",
        "gemm/cublas/bf16.f32/256x256x256",
        "gemm/cublas/e4m3.f32/256x256x256",
    ];
    let (_, rows) = run_filtered(&sim, dir.path(), &filters);
    let mut ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    ids.sort();
    let mut wanted = filters.map(String::from).to_vec();
    wanted.sort();
    assert_eq!(ids, wanted);
    for r in &rows {
        assert!(r.valid, "{}: {} ({})", r.case_id(), r.status, r.note);
        assert!(r.gflops.is_some_and(|g| g > 0.0), "{:?}", r.gflops);
        if r.kernel == roofprobe::cases::gemm::GPU_REFERENCE {
            // bf16 through cublasGemmEx, fp8 through cuBLASLt (TN, its heuristic's algorithm
            // and workspace), on the simulated cuBLAS
            let call = if r.precision.to_string() == "e4m3.f32" {
                "cublasLtMatmul TN, e4m3 in"
            } else {
                "cublasGemmEx TN"
            };
            assert!(r.note.contains(call), "{}: {}", r.case_id(), r.note);
        } else if r.family == roofprobe::cases::Family::Gemm {
            // beside the reference of its type on the same square
            assert!(r.ratio_to_reference.is_some(), "{}", r.case_id());
        } else if r.kernel.starts_with("wgmma_") {
            assert!(r.note.contains("wgmma"), "{}: {}", r.case_id(), r.note);
        } else if r.precision.to_string() == "f64.f64" {
            // Hopper's own f64 shape (kernels/mma_sm90.ptx): no wgmma covers f64
            assert!(
                r.note
                    .ends_with(roofprobe::backend::cuda::plan::HOPPER_F64_SHAPE_NOTE),
                "{}: {}",
                r.case_id(),
                r.note
            );
        } else {
            assert!(
                r.note.contains("legacy mma.sync"),
                "{}: {}",
                r.case_id(),
                r.note
            );
        }
    }

    let listing = devices(&Sim::new(""));
    let line = line_of(&listing, "kernels/wgmma.ptx.in");
    // (a_run_on_the_simulated_gpu_gives_valid_rows_for_every_family: no wgmma row there)
    assert!(
        line.contains("not loaded") && line.contains("9.0 only"),
        "{line}"
    );
    let line = line_of(&listing, "kernels/mma_sm90.ptx");
    assert!(
        line.contains("not loaded") && line.contains("9.0 or later"),
        "{line}"
    );
}

/// The PCIe link the simulated NVML reports, as a link row's note gives it.
const SIMULATED_PCIE: &str = "PCIe Gen5 x16 (NVML current; max Gen5 x16): 63.0 GB/s";

/// Every host-link row of `rows` (a copy between the host and the device) is valid and its note
/// says `what` of its link; there is one at least.
fn host_links_say(rows: &[roofprobe::results::record::Record], what: &str) {
    let host_links: Vec<_> = rows
        .iter()
        .filter(|r| {
            r.family == roofprobe::cases::Family::Link
                && (r.kernel.starts_with("host_to_device")
                    || r.kernel.starts_with("device_to_host"))
        })
        .collect();
    assert!(!host_links.is_empty(), "no host-link row");
    for r in host_links {
        assert!(
            r.valid && r.note.contains(what),
            "{}: {} ({})",
            r.case_id(),
            r.note,
            r.status
        );
    }
}

/// What `roofprobe devices` prints against `sim`, which must succeed.
fn devices(sim: &Sim) -> String {
    let listed = run_limited(sim.roofprobe().arg("devices"), Duration::from_secs(60));
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    text(&listed.stdout)
}

/// The line of `listing` that starts with `key` (indentation aside).
fn line_of(listing: &str, key: &str) -> String {
    listing
        .lines()
        .find(|l| l.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("no {key} line:\n{listing}"))
        .to_string()
}

/// NVML as a GPU machine has it. `devices` and every row's identity columns carry what it says
/// of the board (PCI bus id, VBIOS, ECC, MIG, power limit, application clocks, the driver's
/// version), a link row's note carries the PCIe link, and every row carries the readings taken
/// while its samples ran. The simulated NVML reports a busy device (the full clock, `power_w`,
/// 70 °C, the `throttle` reasons) only while work runs on it, and an idle one otherwise (half the
/// clock, a quarter of the power, 35 °C, `gpu_idle` alone), so readings taken around the samples
/// instead would show; its energy counter moves every 20 ms here and its power reading says 1 W
/// throughout, and the row's power is the counter's mean over the samples. The reasons arrive through whichever of NVML's two calls the driver
/// answers (`nvml-wrapper` calls only the deprecated one), and another process on the device is
/// counted. Without NVML, `devices` says so and the reading columns stay empty.
#[test]
fn nvml_is_read_while_the_samples_run_through_either_reasons_call() {
    for (reasons, others) in [("events", 1), ("throttle", 0)] {
        let sim = Sim::new(&format!(
            "throttle=sw_power_cap+hw_slowdown,nvml_reasons={reasons},others={others},power_w=250,\
             energy_ms=20,power_reading=1"
        ));
        let listing = devices(&sim);
        let line = |key: &str| line_of(&listing, key);
        assert!(line("NVML").contains("loaded (clocks"), "{listing}");
        for (key, value) in [
            ("PCI bus id", "00000000:10:00.0"),
            ("VBIOS", "simcuda"),
            ("power limit", "500 W"),
            ("application clocks", "64 MHz SM, 1000 MHz memory"),
            ("driver", "CUDA 12.4, driver simcuda"),
        ] {
            assert!(line(key).ends_with(value), "{key}: {listing}");
        }
        let dir = tempfile::tempdir().unwrap();
        // samples for at least half a second (--quick's three are shorter than the energy
        // counter's 20 ms step)
        let (_, rows, _) = run_quick(
            &sim,
            dir.path(),
            &["--until-stable", "0.0001", "--stable-limit", "0.5"],
            &["stream/triad/f32", "link/host_to_device_memcpy_ce"],
        );
        assert!(rows.len() > 1 && rows.iter().all(|r| r.valid), "{rows:?}");
        let triad = rows
            .iter()
            .find(|r| r.kernel == "triad")
            .expect("the triad row");
        assert_eq!(
            (triad.clock_mhz, triad.temperature_c),
            (Some(64.0), Some(70.0)),
            "nvml_reasons={reasons}: the busy readings"
        );
        // the power: the energy counter's mean over the samples, between the idle board's
        // 62.5 W and the busy one's 250 (the power reading says 1 W throughout here, so a
        // figure taken from the readings would show)
        let watts = triad.power_w.expect("a power");
        assert!(
            (62.5..=250.0 * 1.01).contains(&watts),
            "nvml_reasons={reasons}: {watts} W"
        );
        assert_eq!(triad.memory_clock_mhz, Some(1000.0));
        assert_eq!(triad.throttle, "hw_slowdown;sw_power_cap", "{reasons}");
        assert_eq!(triad.other_gpu_processes, Some(others), "{reasons}");
        // another process on the device makes the figure suspect, and the flag says so
        assert_eq!(
            triad.flags.contains("busy_gpu(1 process)"),
            others == 1,
            "{}",
            triad.flags
        );
        assert_eq!(
            (
                triad.pci_bus_id.as_str(),
                triad.vbios.as_str(),
                triad.ecc.as_str()
            ),
            ("00000000:10:00.0", "simcuda", "off")
        );
        assert_eq!(
            (triad.power_limit_w, triad.app_clock_mhz, triad.mig.as_str()),
            (Some(500.0), Some(64.0), "off")
        );
        host_links_say(&rows, SIMULATED_PCIE);
    }
    let bare = Sim::driver_alone("");
    assert!(line_of(&devices(&bare), "NVML").contains("not found"));
    let dir = tempfile::tempdir().unwrap();
    let (_, rows) = run_filtered(
        &bare,
        dir.path(),
        &["stream/triad/f32", "link/host_to_device_memcpy_ce"],
    );
    let triad = rows
        .iter()
        .find(|r| r.kernel == "triad")
        .expect("the triad row");
    assert!(triad.valid, "{}", triad.status);
    host_links_say(
        &rows,
        "link not known (NVML absent, or it does not know this device): held against nothing",
    );
    assert_eq!(
        (triad.power_w, triad.temperature_c, triad.throttle.as_str()),
        (None, None, "")
    );
    assert_eq!(
        (triad.pci_bus_id.as_str(), triad.other_gpu_processes),
        ("", None)
    );
}

/// Where the driver reports no SM clock (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`, which CUDA deprecated,
/// answering 0), NVML's maximum SM clock stands in: `devices` shows it and the compute cases are
/// sized by it, so a peak row runs and is valid; without NVML too, `devices` shows no clock.
#[test]
fn nvml_gives_the_clock_a_driver_does_not() {
    let sim = Sim::new("clock_attribute=0");
    assert!(line_of(&devices(&sim), "max clock").ends_with("64 MHz"));
    let dir = tempfile::tempdir().unwrap();
    let (_, rows) = run_filtered(&sim, dir.path(), &["peak/fma/f32"]);
    assert!(rows.len() == 1 && rows[0].valid, "{rows:?}");
    let bare = devices(&Sim::driver_alone("clock_attribute=0"));
    assert!(!bare.contains("max clock"), "{bare}");
    assert!(line_of(&devices(&Sim::driver_alone("")), "max clock").ends_with("64 MHz"));
}

/// A GeForce board computes in P2, its memory clock below the maximum (an RTX 3090's 9501 MHz
/// of 9751), and NVML's current clock says so. A device no spec sheet names gets its theoretical
/// DRAM figure from the maximum all the same: in the run's calibration, and in what `report`
/// makes of the CSV alone, which records the maximum beside the readings (once it took the
/// highest reading, and read 5 % low).
#[test]
fn a_geforce_in_p2_gets_its_theoretical_dram_from_the_maximum_memory_clock() {
    use roofprobe::analysis::roofline::MemoryLevel;
    use roofprobe::FromRecords;
    let sim = Sim::new("memory_p2=950");
    let dir = tempfile::tempdir().unwrap();
    let (csv, rows) = run_filtered(&sim, dir.path(), &["stream/triad/f32"]);
    let triad = &rows[0];
    assert!(rows.len() == 1 && triad.valid, "{rows:?}");
    assert_eq!(
        (triad.memory_clock_mhz, triad.max_memory_clock_mhz),
        (Some(950.0), Some(1000.0)),
        "the reading is P2's, the maximum the device's"
    );
    // the simulated bus: 256 bits x 1000 MHz x 2 / 8 = 64 GB/s (at P2's 950 MHz, 60.8)
    let dram_spec = |cal: &roofprobe::Calibration| {
        let dram = cal
            .memory_ceilings
            .iter()
            .find(|c| c.level == MemoryLevel::Dram)
            .expect("a DRAM ceiling");
        (dram.spec_gbps, dram.spec_basis.clone())
    };
    let want = (
        Some(64.0),
        "theoretical: 256-bit bus × 1000 MHz × 2 / 8".to_string(),
    );
    let run = roofprobe::Calibration::load(csv.with_extension("json")).unwrap();
    assert_eq!(dram_spec(&run), want, "the run's calibration");
    let from_csv = roofprobe::Calibration::from_records(&rows, None).unwrap();
    assert_eq!(dram_spec(&from_csv), want, "from the CSV alone");
    // and `report`, which reads the CSV and nothing else, writes the same
    let again = dir.path().join("again");
    let out = sim
        .roofprobe()
        .arg("report")
        .arg(&csv)
        .arg("-o")
        .arg(&again)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stem = csv.file_stem().unwrap();
    let written = roofprobe::Calibration::load(again.join(stem).with_extension("json")).unwrap();
    assert_eq!(dram_spec(&written), want, "report's calibration");
}

/// A driver whose `cuInit` never returns is given up on after the time limit: `devices` says so
/// and lists the host, and `run --device auto` measures the host instead of hanging.
#[test]
fn a_driver_that_never_initialises_is_given_up_on() {
    let sim = Sim::new("init=hang");
    let started = Instant::now();
    let listed = run_limited(
        sim.roofprobe()
            .arg("devices")
            .env(roofprobe::backend::cuda::INIT_TIMEOUT_VAR, "1"),
        Duration::from_secs(30),
    );
    let listing = text(&listed.stdout);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert!(
        listing.contains("cuInit did not return within 1 s") && listing.contains("host — "),
        "{listing}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = run_limited(
        sim.roofprobe()
            .args([
                "run",
                "--quick",
                "--size",
                "64KiB",
                "--filter",
                "stream/copy/f32",
            ])
            .arg("--out")
            .arg(dir.path())
            .env(roofprobe::backend::cuda::INIT_TIMEOUT_VAR, "1"),
        Duration::from_secs(60),
    );
    let stderr = text(&out.stderr);
    // 4: valid, but flagged (this machine is shared, and the host run sees the others' load)
    assert!(matches!(out.status.code(), Some(0 | 4)), "{stderr}");
    assert!(
        stderr.contains("cuInit did not return") && stderr.contains("measuring the host CPU"),
        "{stderr}"
    );
    let rows = roofprobe::results::csv::read_csv(&csv_in(dir.path())).unwrap();
    assert!(rows.iter().all(|r| r.backend.as_str() == "host" && r.valid));
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// The bug: `ROOFPROBE_CUDA_INIT_TIMEOUT=abc` (or `0`, `-5`) was ignored and 60 s used. Now a
/// malformed value stops `run` with one line naming the variable and the form it takes, exit 2
/// (under `--device auto` too, which once took any driver error for "no GPU"); `3s` is 3 s, as
/// `--kernel-timeout` reads it.
#[test]
fn a_malformed_init_timeout_is_refused() {
    let sim = Sim::new("");
    let var = roofprobe::backend::cuda::INIT_TIMEOUT_VAR;
    for (value, device) in [("abc", "cuda:0"), ("0", "auto"), ("-5", "all")] {
        let dir = tempfile::tempdir().unwrap();
        let out = run_limited(
            sim.roofprobe()
                .args(["run", "--quick", "--size", "64KiB", "--device", device])
                .args(["--filter", "stream/copy/f32", "--out"])
                .arg(dir.path())
                .env(var, value),
            Duration::from_secs(60),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with(&format!(
                "error: {var}: `{value}` is not a time above 0 in seconds"
            )) && last.contains(&format!("{var}=120")),
            "{err}"
        );
        assert!(crate::common::files_with_ext(dir.path(), "csv").is_empty());
    }
    let listed = run_limited(
        sim.roofprobe().arg("devices").env(var, "3s"),
        Duration::from_secs(60),
    );
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert!(
        text(&listed.stdout).contains("cuda:0 — "),
        "{}",
        text(&listed.stdout)
    );
}

/// The bug: after `run` stopped on an error writing a row, its GPU worker went on measuring,
/// reparented, seconds later still running. Now the worker is killed and reaped on every early
/// return: nothing of the run's process group outlives it. (Its CSV is limited to its first
/// row by `RLIMIT_FSIZE`, a full disk that needs no privilege.)
#[test]
fn a_run_stopped_by_a_write_error_leaves_no_worker_running() {
    let sim = Sim::new("");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = sim.roofprobe();
    cmd.args([
        "run",
        "--device",
        "cuda:0",
        "--samples",
        "60",
        "--size",
        "256KiB",
    ])
    .args(["--filter", "stream/", "--out"])
    .arg(dir.path());
    let header = roofprobe::results::csv::header().join(",").len() as u64 + 1;
    // a GPU row is 590 to 650 bytes: the first fits, not the second
    crate::files::files_limited_to(&mut cmd, header + 900);
    let run = crate::common::Signalled::start(&mut cmd, Duration::from_secs(240));
    // finish() fails if anything of its process group is left once it has ended
    let (code, _, err) = run.finish();
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("was not written"), "{err}");
    let rows = roofprobe::results::csv::read_csv(&csv_in(dir.path())).unwrap();
    assert_eq!(rows.len(), 1, "{err}");
}

/// A CUDA toolkit's stub libcuda on the search path (`cuInit` answering
/// `CUDA_ERROR_STUB_LIBRARY`, 34) is named as such, with what to do, by `devices` and by a run
/// asked for the GPU.
#[test]
fn a_stub_driver_is_named_with_what_to_do() {
    let sim = Sim::new("init=34");
    let listing = devices(&sim);
    let hint = "is a CUDA toolkit's stub, not the driver: take its folder, a `stubs` one, out of \
                LD_LIBRARY_PATH";
    let first = listing.lines().next().unwrap_or_default();
    assert!(
        (first.contains("CUDA_ERROR_STUB_LIBRARY") || first.contains("CUDA error 34 "))
            && first.contains(hint)
            && first.contains("libsimcuda.so"),
        "{listing}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = run_limited(
        sim.roofprobe()
            .args(["run", "--device", "cuda:0", "--quick", "--out"])
            .arg(dir.path()),
        Duration::from_secs(30),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(hint), "{stderr}");
}

/// A copy of libsimcuda.so at `path`, cut at half of what the loader maps (the end of its last
/// `PT_LOAD` segment): the loader maps it and dies touching a page past its end (`SIGBUS`),
/// as it does on a damaged install or a copy cut short.
fn truncated_library(path: &Path) {
    let bytes = std::fs::read(library()).unwrap();
    let at = |offset: usize, len: usize| {
        let mut word = [0u8; 8];
        word[..len].copy_from_slice(&bytes[offset..offset + len]);
        u64::from_le_bytes(word) as usize
    };
    // ELF64: e_phoff, e_phentsize, e_phnum; each header's p_type, p_offset, p_filesz
    let (table, size, count) = (at(0x20, 8), at(0x36, 2), at(0x38, 2));
    let mapped_end = (0..count)
        .map(|i| table + i * size)
        .filter(|&h| at(h, 4) == 1)
        .map(|h| at(h + 8, 8) + at(h + 32, 8))
        .max()
        .expect("a PT_LOAD segment");
    std::fs::write(path, &bytes[..mapped_end / 2]).unwrap();
}

/// `roofprobe ARGS` under `sim`: it must end 1 with one line saying `said`.
fn one_line_error(sim: &Sim, args: &[&str], said: &str) {
    let out = run_limited(sim.roofprobe().args(args), Duration::from_secs(60));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with(said), "{args:?}: {stderr}");
}

/// A damaged or truncated NVIDIA library on the loader's path (the driver's libcuda, NVML,
/// cuBLAS) makes the loader die of `SIGBUS` inside `dlopen`: each is one line naming the
/// library and what to do, and exit code 1, not `Bus error (core dumped)`; and the host is
/// still measured with `--device host`, which loads none of them. In a run, a crashing cuBLAS
/// costs only the row that loads it, which says why, and the run's later cuBLAS rows are
/// skipped, saying why.
#[test]
fn a_truncated_library_is_one_line_not_a_crash() {
    let crashed = "crashed the loader (a damaged or truncated file on the loader's path?): ";
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("run");
    let out = out_dir.to_str().unwrap();
    // the driver: `devices`, and a run that looks for GPUs
    let sim = Sim::driver_alone("");
    let cuda = sim.dir.path().join("libcuda.so.1");
    std::fs::remove_file(&cuda).unwrap();
    truncated_library(&cuda);
    std::fs::remove_file(sim.dir.path().join("libcuda.so")).unwrap();
    std::os::unix::fs::symlink("libcuda.so.1", sim.dir.path().join("libcuda.so")).unwrap();
    let said = format!(
        "error: loading the CUDA driver's libcuda {crashed}reinstall the NVIDIA driver, or \
         measure the host CPU with --device host"
    );
    one_line_error(&sim, &["devices"], &said);
    let quick = [
        "run",
        "--quick",
        "--filter",
        "stream/copy/f32",
        "--out",
        out,
    ];
    one_line_error(&sim, &quick, &said);
    assert!(!out_dir.exists(), "the run left its folder");
    let on_host = run_limited(
        sim.roofprobe().args(quick).args(["--device", "host"]),
        Duration::from_secs(120),
    );
    assert!(
        matches!(on_host.status.code(), Some(0 | 4)),
        "{}",
        text(&on_host.stderr)
    );
    // NVML, beside a driver that loads
    let sim = Sim::without_cublas("");
    let nvml = sim.dir.path().join("libnvidia-ml.so.1");
    std::fs::remove_file(&nvml).unwrap();
    truncated_library(&nvml);
    one_line_error(
        &sim,
        &["devices"],
        &format!("error: loading NVML (libnvidia-ml.so.1) {crashed}reinstall the NVIDIA driver"),
    );
    // cuBLAS, where ROOFPROBE_CUBLAS names it
    let cublas = dir.path().join("libcublas.so.13");
    truncated_library(&cublas);
    let sim = Sim::without_cublas("").with_env("ROOFPROBE_CUBLAS", &cublas);
    one_line_error(
        &sim,
        &["devices"],
        &format!(
            "error: loading {} {crashed}set ROOFPROBE_CUBLAS to another cuBLAS, or reinstall it",
            cublas.display()
        ),
    );
    // in a run, cuBLAS is loaded by its first row, in the GPU worker: the crash costs that row
    // (exit 3), which says why; ours runs after it in a fresh worker, and the next cuBLAS row
    // is skipped, saying why, instead of crashing another worker
    let shapes = ["bf16.f32/256x256x256", "f16.f32/256x256x256"];
    let gemm_dir = dir.path().join("gemm");
    let mut cmd = sim.roofprobe();
    cmd.args(["run", "--quick", "--device", "cuda:0", "--out"])
        .arg(&gemm_dir);
    for shape in shapes {
        for kernel in ["cublas", "ptx"] {
            cmd.args(["--filter", &format!("gemm/{kernel}/{shape}")]);
        }
    }
    let ran = run_limited(&mut cmd, Duration::from_secs(300));
    let stderr = text(&ran.stderr);
    assert_eq!(ran.status.code(), Some(3), "{stderr}");
    let said = format!("loading {} {crashed}", cublas.display());
    assert_eq!(
        stderr.matches(&format!("error: {said}")).count(),
        1,
        "{stderr}"
    );
    let rows = roofprobe::results::csv::read_csv(&csv_in(&gemm_dir)).unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    let expected: Vec<String> = shapes
        .iter()
        .flat_map(|shape| ["cublas", "ptx"].map(|kernel| format!("gemm/{kernel}/{shape}")))
        .collect();
    assert_eq!(ids, expected);
    let [first, ours, second, ours_too] = &rows[..] else {
        unreachable!("four rows")
    };
    assert!(
        !first.valid
            && first
                .status
                .contains(&format!("the measuring process ended: {said}")),
        "{}",
        first.status
    );
    assert!(
        !second.valid
            && second.status.starts_with(&format!("skipped: {said}"))
            && second.status.contains("in an earlier process of this run"),
        "{}",
        second.status
    );
    assert!(
        ours.valid && ours_too.valid,
        "{} / {}",
        ours.status,
        ours_too.status
    );
}

/// The one CSV a run wrote into `dir`.
pub fn csv_in(dir: &Path) -> PathBuf {
    let csvs = crate::common::files_with_ext(dir, "csv");
    assert_eq!(csvs.len(), 1, "{csvs:?}");
    csvs[0].clone()
}

/// A kernel fault costs its own case only: its row says what happened, the rows before it stay,
/// and the cases after it run in a fresh process and are valid.
#[test]
fn a_fault_costs_its_case_and_the_run_goes_on_in_a_fresh_process() {
    let sim = Sim::new("fault=scale_f32");
    let dir = tempfile::tempdir().unwrap();
    let out = run_limited(
        sim.roofprobe()
            .args(["run", "--quick", "--device", "cuda:0"])
            .args([
                "--filter",
                "stream/copy/f32",
                "--filter",
                "stream/scale/f32",
            ])
            .args(["--filter", "stream/add/f32", "--out"])
            .arg(dir.path()),
        Duration::from_secs(120),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("continuing the 1 cases left in a fresh process"),
        "{stderr}"
    );
    let rows = roofprobe::results::csv::read_csv(&csv_in(dir.path())).unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(
        ids,
        ["stream/copy/f32", "stream/scale/f32", "stream/add/f32"]
    );
    assert!(rows[0].valid && rows[2].valid, "{:?}", rows[2].status);
    assert!(
        !rows[1].valid && rows[1].status.contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
        "{}",
        rows[1].status
    );
    // one run id for all of them, from both processes
    assert!(rows.iter().all(|r| r.run_id == rows[0].run_id));
}

/// A signal to `run` alone (SIGTERM from `timeout` or a scheduler, which a terminal's Ctrl-C
/// is not) reaches the worker measuring the GPU: the case it runs finishes and its row is
/// written, no other case starts, no fresh worker is started, and the run writes what it
/// measured and exits 130 with nothing of it left running.
#[test]
fn a_signal_to_run_alone_reaches_its_worker() {
    let sim = Sim::new("");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = sim.roofprobe();
    cmd.args([
        "run",
        "--quick",
        "--device",
        "cuda:0",
        "--kernel-timeout",
        "60",
    ])
    .args(["--filter", "stream/", "--out"])
    .arg(dir.path());
    let mut run =
        crate::common::Signalled::start(&mut cmd, Duration::from_secs(240)).writing_to(dir.path());
    let before = run.wait_rows(1);
    run.signal(libc::SIGTERM);
    let (code, _, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    let rows = roofprobe::results::csv::read_csv(&csv_in(dir.path())).unwrap();
    assert!(
        (before..=before + 1).contains(&rows.len()),
        "{before} rows at the signal, {} after: {err}",
        rows.len()
    );
    assert!(rows.iter().all(|r| r.valid), "{err}");
    assert!(
        err.contains(&format!("interrupted after {} of ", rows.len())),
        "{err}"
    );
    assert!(!err.contains("fresh process"), "{err}");
    assert_eq!(
        crate::common::files_with_ext(dir.path(), "json").len(),
        1,
        "{err}"
    );
}

/// A quick run on cuda:0 of a simulated device set up by `settings` (a planted runaway) with
/// a kernel timeout of 2 s, of the cases `filters` pick, which must end within `limit` and exit
/// 3 (a row invalid); its rows, and what it printed on stderr.
fn run_with_a_runaway(
    settings: &str,
    filters: &[&str],
    limit: Duration,
) -> (Vec<roofprobe::results::record::Record>, String) {
    let sim = Sim::new(settings);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = sim.roofprobe();
    cmd.args([
        "run",
        "--quick",
        "--device",
        "cuda:0",
        "--kernel-timeout",
        "2",
    ])
    .arg("--out")
    .arg(dir.path());
    for f in filters {
        cmd.args(["--filter", f]);
    }
    let out = run_limited(&mut cmd, limit);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let rows = roofprobe::results::csv::read_csv(&csv_in(dir.path())).unwrap();
    (rows, stderr)
}

/// Whether a row says its work was given up on after the 2 s deadline.
fn given_up(r: &roofprobe::results::record::Record) -> bool {
    !r.valid && r.status.contains("did not finish within 2 s")
}

/// The rows of a run of two cases, `ids`: the first given up on, the second valid after it.
fn the_second_ran_after_the_first(
    rows: &[roofprobe::results::record::Record],
    stderr: &str,
    ids: [&str; 2],
) {
    let got: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(got, ids, "{stderr}");
    assert!(given_up(&rows[0]), "{}", rows[0].status);
    assert!(rows[1].valid, "{}", rows[1].status);
}

/// A kernel that never ends costs its case only: it is given up on after the case's deadline,
/// its process exits at once, and the cases after it run in a fresh one.
#[test]
fn a_runaway_kernel_costs_its_case_and_the_run_goes_on() {
    let (rows, stderr) = run_with_a_runaway(
        "hang=scale_f32",
        &["stream/scale/f32", "stream/add/f32"],
        Duration::from_secs(60),
    );
    the_second_ran_after_the_first(&rows, &stderr, ["stream/scale/f32", "stream/add/f32"]);
}

/// A display's watchdog (`CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT`, a GeForce card driving a
/// screen): `devices` says the device has a kernel run-time limit; a kernel that runs past it
/// ends with CUDA_ERROR_LAUNCH_TIMEOUT before the case's own deadline, which costs its case only
/// (the context is gone, so the run goes on in a fresh process); and the GPU tests' runaway
/// test takes the watchdog's error path.
#[test]
fn a_display_s_watchdog_costs_its_case_and_the_run_goes_on() {
    let settings = "hang=scale_f32,watchdog=1";
    let listing = devices(&Sim::new(settings));
    let line = line_of(&listing, roofprobe::backend::cuda::KERNEL_RUN_TIME_LIMIT);
    assert!(line.contains("watchdog"), "{line}");
    assert!(!devices(&Sim::new("")).contains(roofprobe::backend::cuda::KERNEL_RUN_TIME_LIMIT));
    let (rows, stderr) = run_with_a_runaway(
        settings,
        &["stream/scale/f32", "stream/add/f32"],
        Duration::from_secs(60),
    );
    let got: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(got, ["stream/scale/f32", "stream/add/f32"], "{stderr}");
    assert!(
        !rows[0].valid && rows[0].status.contains("CUDA_ERROR_LAUNCH_TIMEOUT"),
        "{}",
        rows[0].status
    );
    assert!(rows[1].valid, "{}", rows[1].status);
    // the runaway test of tests/gpu.rs, on a device whose watchdog ends kernels after 1 s
    let sim = Sim::new("watchdog=1,memory=16M");
    let exe = std::env::current_exe().expect("the test binary");
    let out = run_limited(
        sim.command(&exe)
            .args([
                "gpu::a_runaway_kernel_fails_its_case_and_does_not_hang",
                "--exact",
                "--nocapture",
            ])
            .env(crate::gpu::REQUIRE_GPU, "1"),
        Duration::from_secs(300),
    );
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{o}\n{e}");
    assert!(o.contains("CUDA_ERROR_LAUNCH_TIMEOUT"), "{o}\n{e}");
    assert!(o.contains("kernel run-time limit"), "{o}\n{e}");
}

/// A driver's error code that the CUDA 12.0 binding's `CUresult` enum does not name (226,
/// `CUDA_ERROR_CONTAINED`, a CUDA 12.x code) costs its case only. Such a value is undefined
/// behaviour inside cudarc 0.19, which keeps an asynchronous error as a number and transmutes
/// it back to the enum (`CudaContext::check_err`): a debug build aborts there ("trying to
/// construct an enum from an invalid value 0xe2"), a release build reads it on as its number,
/// which roofprobe names with the driver's own `cuGetErrorName` and holds sticky by number.
/// Either way it happens in the measuring process, which the run replaces: the case's row is an
/// error (the code's name, or the process's death), and the next case is valid.
#[test]
fn an_error_code_the_binding_does_not_name_costs_its_case_only() {
    let (rows, stderr) = run_with_a_runaway(
        "fault=scale_f32,fault_code=226",
        &["stream/scale/f32", "stream/add/f32"],
        Duration::from_secs(60),
    );
    let got: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(got, ["stream/scale/f32", "stream/add/f32"], "{stderr}");
    let named = rows[0].status.contains("CUDA_ERROR_CONTAINED");
    let aborted = cfg!(debug_assertions) && rows[0].status.contains("measuring process died");
    assert!(!rows[0].valid && (named || aborted), "{}", rows[0].status);
    assert!(rows[1].valid, "{}", rows[1].status);
}

/// A cuBLAS call that never ends costs its row only, as a kernel does: its handle is not
/// destroyed after the deadline (cublasDestroy waits for the whole device, as the simulated one
/// does), so the worker exits and the run goes on in a fresh one.
#[test]
fn a_runaway_cublas_call_costs_its_row_and_the_run_goes_on() {
    let (rows, stderr) = run_with_a_runaway(
        "hang=cublasGemmEx",
        &["gemm/cublas/bf16.f32/256x256x256", "launch/empty"],
        Duration::from_secs(60),
    );
    let ids = ["gemm/cublas/bf16.f32/256x256x256", "launch/empty/i32"];
    the_second_ran_after_the_first(&rows, &stderr, ids);
}

/// An SM copy through mapped host memory that never ends costs its row only: it is waited for
/// like a kernel's batch, and its buffers are not freed under it.
#[test]
fn a_runaway_link_copy_costs_its_row_and_the_run_goes_on() {
    let (rows, stderr) = run_with_a_runaway(
        "hang=copy_f32",
        &["link/host_to_device_memcpy_sm/", "launch/empty"],
        Duration::from_secs(90),
    );
    let (copies, rest): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r.family.as_str() == "link");
    assert!(!copies.is_empty(), "{stderr}");
    for r in &copies {
        assert!(given_up(r), "{}: {}", r.case_id(), r.status);
    }
    let ids: Vec<String> = rest.iter().map(|r| r.case_id()).collect();
    assert_eq!(ids, ["launch/empty/i32"], "{stderr}");
    assert!(rest[0].valid, "{}", rest[0].status);
}

/// Two simulated GPUs: cuda:0 reads from and writes to cuda:1's memory, one direction and both,
/// each copy checked at its destination (on either device), each row naming its peer; a single
/// GPU plans none of them (the full run above).
#[test]
fn the_peer_matrix_runs_between_two_simulated_gpus() {
    let sim = Sim::new("devices=2");
    let dir = tempfile::tempdir().unwrap();
    let (_, rows) = run_filtered(&sim, dir.path(), &["device_to_device_"]);
    let kernels: Vec<&str> = rows.iter().map(|r| r.kernel.as_str()).collect();
    assert_eq!(
        kernels,
        [
            "device_to_device_memcpy_read_ce",
            "device_to_device_memcpy_write_ce",
            "device_to_device_bidirectional_memcpy_read_ce",
            "device_to_device_bidirectional_memcpy_write_ce",
        ]
    );
    for r in &rows {
        assert!(r.valid, "{}: {}", r.case_id(), r.status);
        assert_eq!(
            r.param,
            Some(roofprobe::cases::Param::Count(1)),
            "{}",
            r.case_id()
        );
        assert!(
            r.note.contains("peer cuda:1")
                && r.note
                    .ends_with("PCIe, closest common ancestor HostBridge (NVML)"),
            "{}: {}",
            r.case_id(),
            r.note
        );
    }
    let devices = run_limited(sim.roofprobe().arg("devices"), Duration::from_secs(60));
    let listing = text(&devices.stdout);
    assert!(
        listing.contains("peer to peer") && listing.contains("cuda:1"),
        "{listing}"
    );
}

/// `run --device all --parallel` on two simulated GPUs: both measured at once, each in its own
/// workers (a fault on each costs that device's case only, and each goes on in a fresh process),
/// every GPU row saying two ran together, the host measured after them, alone.
#[test]
fn parallel_measures_every_gpu_at_once_and_says_so_on_every_row() {
    let sim = Sim::new("devices=2,fault=scale_f32");
    let dir = tempfile::tempdir().unwrap();
    let out = run_limited(
        sim.roofprobe()
            .args(["run", "--quick", "--device", "all", "--parallel"])
            .args(["--size", "256KiB", "--filter", "stream/copy/f32"])
            .args(["--filter", "stream/scale/f32", "--filter", "stream/add/f32"])
            .arg("--out")
            .arg(dir.path()),
        Duration::from_secs(180),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    // Both GPUs started before either finished: their runs overlapped.
    let at = |line: &str| {
        stderr
            .find(line)
            .unwrap_or_else(|| panic!("no `{line}` in:\n{stderr}"))
    };
    let started = at("cuda:0: measuring").max(at("cuda:1: measuring"));
    let finished = at("cuda:0: time:").min(at("cuda:1: time:"));
    assert!(started < finished, "one GPU after the other:\n{stderr}");
    let host = at("host CPU, no GPU used");
    assert!(
        at("cuda:0: time:") < host && at("cuda:1: time:") < host,
        "{stderr}"
    );
    let mut gpus = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "csv") {
            continue;
        }
        let rows = roofprobe::results::csv::read_csv(&path).unwrap();
        let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
        assert_eq!(
            ids,
            ["stream/copy/f32", "stream/scale/f32", "stream/add/f32"],
            "{}",
            path.display()
        );
        if rows[0].backend.as_str() == "host" {
            assert!(rows.iter().all(|r| r.valid && r.parallel_devices.is_none()));
            continue;
        }
        gpus += 1;
        assert!(
            rows.iter().all(|r| r.parallel_devices == Some(2)),
            "{rows:?}"
        );
        assert!(rows[0].valid && rows[2].valid, "{}", rows[2].status);
        assert!(
            rows[1].status.contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
            "{}",
            rows[1].status
        );
    }
    assert_eq!(gpus, 2);

    // Alone (the default), the rows say nothing of the kind; --parallel with one device is a
    // usage error.
    let dir = tempfile::tempdir().unwrap();
    let out = run_limited(
        sim.roofprobe()
            .args(["run", "--quick", "--device", "auto", "--size", "256KiB"])
            .args(["--filter", "stream/copy/f32", "--out"])
            .arg(dir.path()),
        Duration::from_secs(120),
    );
    assert!(
        matches!(out.status.code(), Some(0 | 4)),
        "{}",
        text(&out.stderr)
    );
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "csv") {
            let rows = roofprobe::results::csv::read_csv(&entry.path()).unwrap();
            assert!(rows.iter().all(|r| r.parallel_devices.is_none()));
        }
    }
    let out = run_limited(
        sim.roofprobe()
            .args(["run", "--device", "cuda:0", "--parallel", "--out"])
            .arg(dir.path()),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error: --parallel measures every GPU at once"));
}

/// The modules of `kernels::all()` a device of compute capability `cc` (8.x or 9.0) takes, by
/// their names: on 9.0 all of them; below it none of Hopper's (its f64 shape, and the sm_90a
/// wgmma peaks and GEMMs), and below 8.9 not the fp8 module either.
fn modules_for(cc: (u32, u32)) -> Vec<String> {
    let hopper = ["mma_sm90.", "wgmma.", "gemm_wgmma.", "gemm_tma."];
    roofprobe::kernels::all()
        .into_iter()
        .map(|s| s.name)
        .filter(|name| cc == (9, 0) || !hopper.iter().any(|p| name.starts_with(p)))
        .filter(|name| cc >= (8, 9) || !name.starts_with("mma_sm89."))
        .collect()
}

/// `devices --jit-out DIR` under `sim`, which must succeed: what it listed.
fn jit_out(sim: &Sim, dir: &Path) -> String {
    let listed = run_limited(
        sim.roofprobe().arg("devices").arg("--jit-out").arg(dir),
        Duration::from_secs(300),
    );
    let listing = text(&listed.stdout);
    assert!(
        listed.status.success(),
        "{}\n{listing}",
        text(&listed.stderr)
    );
    listing
}

/// A module newer than the driver's JIT reads (an R535 driver, CUDA 12.2, reads PTX ISA 8.2;
/// the fp8 mma.sync module is 8.4), which the driver would refuse with
/// `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`: `devices` says it is not loaded and why, a run's fp8
/// tensor row on an Ada says so while the others are valid, and `devices --jit-out` on a
/// Hopper names it under `not for this driver` and succeeds with every other module written
/// (it exited 1 there). The simulated driver's table of what each CUDA version reads is the
/// backend's.
#[test]
fn a_module_newer_than_the_drivers_jit_is_named_not_failed() {
    use roofprobe::backend::cuda::jit::newest_ptx_isa;
    for cuda in [
        11080, 12000, 12020, 12040, 12050, 12060, 12070, 12080, 12090, 13000, 13010,
    ] {
        let sim = simcuda::config::Config::parse(&format!("driver={cuda}")).unwrap();
        assert_eq!(sim.max_ptx_version(), newest_ptx_isa(cuda), "CUDA {cuda}");
    }
    let why = "its PTX ISA 8.4 is newer than the 8.2 this driver (CUDA 12.2) compiles: update \
               the NVIDIA driver";
    let sim = Sim::new("cc=8.9,driver=12020");
    let listing = devices(&sim);
    assert!(
        line_of(&listing, "kernels/mma_sm89.ptx").ends_with(&format!("not loaded: {why}")),
        "{listing}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = run_limited(
        sim.roofprobe()
            .args(["run", "--quick", "--device", "cuda:0"])
            .args(["--filter", "tensor/mma_m16n8k32/e4m3.f32"])
            .args(["--filter", "tensor/mma_m16n8k16/bf16.f32", "--out"])
            .arg(dir.path()),
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let rows = roofprobe::results::csv::read_csv(&csv_in(dir.path())).unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(
        ids,
        [
            "tensor/mma_m16n8k16/bf16.f32",
            "tensor/mma_m16n8k32/e4m3.f32"
        ]
    );
    assert!(rows[0].valid, "{}", rows[0].status);
    assert!(
        !rows[1].valid && rows[1].status.contains(why),
        "{}",
        rows[1].status
    );

    // a module a case loads itself (Hopper's wgmma GEMM, PTX ISA 8.0) on a CUDA 11.8 driver (7.8)
    let why_80 = "its PTX ISA 8.0 is newer than the 7.8 this driver (CUDA 11.8) compiles: \
                  update the NVIDIA driver";
    let sim = Sim::new("cc=9.0,memory=16M,driver=11080");
    let listing = devices(&sim);
    assert!(
        line_of(&listing, "kernels/gemm_wgmma.ptx.in#bf16.f32")
            .ends_with(&format!("not loaded: {why_80}")),
        "{listing}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = run_limited(
        sim.roofprobe()
            .args(["run", "--quick", "--device", "cuda:0"])
            .args(["--filter", "gemm/wgmma/bf16.f32", "--out"])
            .arg(dir.path()),
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let rows = roofprobe::results::csv::read_csv(&csv_in(dir.path())).unwrap();
    assert!(!rows.is_empty());
    for r in &rows {
        assert!(!r.valid && r.status.contains(why_80), "{}", r.status);
    }

    let test = "a_module_newer_than_the_drivers_jit_is_named_not_failed";
    let Some(ptxas) = crate::tools::or_skip("ptxas", "PTXAS", test) else {
        return;
    };
    let sim = Sim::new(&format!("cc=9.0,driver=12020,ptxas={}", ptxas.display()));
    let out = tempfile::tempdir().unwrap();
    let listing = jit_out(&sim, out.path());
    // the one module, after the key's padding
    assert!(
        line_of(&listing, "not for this driver").ends_with(&format!("  mma_sm89.ptx ({why})")),
        "{listing}"
    );
    let wanted = modules_for((9, 0)).len() - 1;
    assert!(
        line_of(&listing, "driver's code")
            .contains(&format!("{wanted} modules compiled by the driver's JIT")),
        "{listing}"
    );
    assert!(!listing.contains("FAILED"), "{listing}");
}

/// `devices --jit-out DIR` writes the driver's own machine code for every module the device
/// takes, compiled through the driver's linker (the simulated one runs ptxas for the device's
/// architecture, as a driver's JIT compiles): a CUDA ELF object and the JIT's log (registers,
/// spills) each, nothing for the modules the device does not take (named instead), and
/// `scripts/jit-sass` reads three of them, one object a module.
#[test]
fn devices_writes_the_drivers_own_code_for_every_module_the_device_takes() {
    let test = "devices_writes_the_drivers_own_code_for_every_module_the_device_takes";
    let Some(ptxas) = crate::tools::or_skip("ptxas", "PTXAS", test) else {
        return;
    };
    for cc in [(9, 0), (8, 0)] {
        let sim = Sim::new(&format!("cc={}.{},ptxas={}", cc.0, cc.1, ptxas.display()));
        let out = tempfile::tempdir().unwrap();
        let listing = jit_out(&sim, out.path());
        let wanted = modules_for(cc);
        let dir = out.path().join("cuda0");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files.len(), 2 * wanted.len(), "{cc:?}: {files:?}");
        for name in &wanted {
            let stem = roofprobe::backend::cuda::jit::file_stem(name);
            let cubin = std::fs::read(dir.join(format!("{stem}.cubin")))
                .unwrap_or_else(|e| panic!("{name}: {e}: {files:?}"));
            assert!(cubin.starts_with(b"\x7fELF"), "{name}: not an ELF object");
            assert_eq!(
                cubin[18..20],
                190u16.to_le_bytes(),
                "{name}: not a CUDA object"
            );
            let log = std::fs::read_to_string(dir.join(format!("{stem}.log"))).unwrap();
            let arch = format!("sm_{}{}", cc.0, cc.1);
            assert!(
                log.contains(&format!("for '{arch}")) && log.contains("registers"),
                "{name}: {log}"
            );
        }
        let line = |key: &str| line_of(&listing, key);
        assert!(
            line("driver's code").contains(&format!(
                "{} modules compiled by the driver's JIT",
                wanted.len()
            )),
            "{listing}"
        );
        assert!(line("driver's spills").ends_with("none"), "{listing}");
        if cc == (8, 0) {
            let skipped = line("not for this device");
            assert!(
                skipped.contains(
                    "wgmma.ptx.in#sm_90a (sm_90a code runs on compute capability 9.0 only)"
                ) && skipped.contains("mma_sm89.ptx (sm_89 code needs compute capability 8.9)"),
                "{skipped}"
            );
        } else {
            assert!(!listing.contains("not for this device"), "{listing}");
            let Some(cuobjdump) = crate::tools::or_skip("cuobjdump", "CUOBJDUMP", test) else {
                return;
            };
            // jit-sass reads three of the modules, each a cubin and its log as `devices` wrote
            // them: its SASS dump of all 80-odd took 31 s of this test's 46 (2026-12-06), and
            // every cubin was checked above to be a CUDA object for the device
            let three = tempfile::tempdir().unwrap();
            let read_here = ["stream.ptx", "peak.ptx", "wgmma.ptx.in#sm_90a"];
            for name in read_here {
                assert!(wanted.iter().any(|w| w == name), "{name}: {wanted:?}");
                let stem = roofprobe::backend::cuda::jit::file_stem(name);
                for ext in ["cubin", "log"] {
                    let file = format!("{stem}.{ext}");
                    std::fs::copy(dir.join(&file), three.path().join(&file)).unwrap();
                }
            }
            let sass = tempfile::tempdir().unwrap();
            let read = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/jit-sass"))
                .arg(three.path())
                .arg(sass.path())
                .env("CUOBJDUMP", &cuobjdump)
                .output()
                .unwrap();
            let said = text(&read.stdout);
            assert!(read.status.success(), "{}{said}", text(&read.stderr));
            assert_eq!(said.lines().count(), read_here.len(), "{said}");
            assert!(said.contains("sm_90a, 14 kernels"), "{said}");
            assert!(said.contains("sm_90, 14 kernels"), "{said}");
        }
    }
}

/// A stand-in for ptxas, for the simulated driver's linker: its object is `bytes` zero bytes
/// (written with its own file-size limit lifted) and its log one `-v` line.
fn fake_ptxas(dir: &Path, bytes: usize) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(format!("ptxas-{bytes}"));
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nulimit -S -f unlimited 2>/dev/null\nout=\nwhile [ $# -gt 0 ]; do \
             [ \"$1\" = -o ] && {{ out=$2; shift; }}; shift; done\nhead -c {bytes} /dev/zero \
             > \"$out\"\necho \"ptxas info    : Used 8 registers\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The bugs: `devices --jit-out` wrote with a plain write, so a full disk left 0-byte and
/// cut-off `.cubin` files under their real names, an existing file was overwritten without
/// --force, and a folder that could not be made was "1 module(s) not written" when none was.
/// Now every file is written whole or not at all, existing ones kept unless --force, and the
/// count is every module the device takes.
#[test]
fn devices_writes_the_drivers_code_whole_and_never_over_a_file() {
    let tools = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let n = modules_for((8, 9)).len();
    let devices = |sim: &Sim, dir: &Path, force: bool, limit: Option<u64>| {
        let mut cmd = sim.roofprobe();
        cmd.arg("devices").arg("--jit-out").arg(dir);
        if force {
            cmd.arg("--force");
        }
        if let Some(bytes) = limit {
            crate::files::files_limited_to(&mut cmd, bytes);
        }
        let o = run_limited(&mut cmd, Duration::from_secs(300));
        (o.status.code(), text(&o.stderr))
    };
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };

    // a folder that cannot be made: every module the device takes counted
    let file = out.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let (code, err) = devices(&Sim::new(""), &file.join("sub"), false, None);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: the driver's code of {n} module(s) was not written"
        )) && err.contains("cannot make the folder"),
        "{err}"
    );

    // written, then kept without --force, then replaced with it
    let small = Sim::new(&format!(
        "ptxas={}",
        fake_ptxas(tools.path(), 100).display()
    ));
    let dir = out.path().join("code");
    let (code, err) = devices(&small, &dir, false, None);
    assert_eq!(code, Some(0), "{err}");
    let cuda0 = dir.join("cuda0");
    assert_eq!(names(&cuda0).len(), 2 * n, "{:?}", names(&cuda0));
    let stream = cuda0.join("stream.ptx.cubin");
    std::fs::write(&stream, "mine").unwrap();
    let (code, err) = devices(&small, &dir, false, None);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&stream).unwrap(), b"mine");
    let (code, err) = devices(&small, &dir, true, None);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read(&stream).unwrap().len(), 100);
    assert_eq!(names(&cuda0).len(), 2 * n, "{:?}", names(&cuda0));

    // a disk that fills (objects of 2 MiB, files limited to 1 MiB): no file cut off
    let big = Sim::new(&format!(
        "ptxas={}",
        fake_ptxas(tools.path(), 2 << 20).display()
    ));
    let dir = out.path().join("full");
    let (code, err) = devices(&big, &dir, false, Some(1 << 20));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert_eq!(names(&dir.join("cuda0")), Vec::<String>::new());
}

/// `devices --jit-out` where the driver's JIT gives no code: the whole listing is still printed,
/// each failed module named with the driver's error and JIT log, and the command ends with one
/// error line and exit code 1; a module the JIT refuses fails alone; with no device at all it is
/// an error saying there is nothing to compile for.
#[test]
fn devices_says_which_modules_the_drivers_jit_gave_no_code_for() {
    let test = "devices_says_which_modules_the_drivers_jit_gave_no_code_for";
    let out = tempfile::tempdir().unwrap();
    let jit_out = |sim: &Sim| {
        run_limited(
            sim.roofprobe()
                .arg("devices")
                .arg("--jit-out")
                .arg(out.path()),
            Duration::from_secs(300),
        )
    };
    // a driver without its JIT compiler (the simulated one, given no ptxas)
    let listed = jit_out(&Sim::new(""));
    let (listing, err) = (text(&listed.stdout), text(&listed.stderr));
    assert_eq!(listed.status.code(), Some(1), "{err}\n{listing}");
    assert!(
        listing.contains("cuda:0 — ") && listing.contains("host — "),
        "{listing}"
    );
    let failed = line_of(&listing, "driver's code FAILED");
    assert!(
        failed.contains("kernels/stream.ptx")
            && failed.contains("CUDA_ERROR_JIT_COMPILER_NOT_FOUND")
            && failed.contains("JIT log: this simulated driver has no JIT compiler"),
        "{failed}"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    let n = modules_for((8, 9)).len();
    assert!(
        lines[0].starts_with(&format!(
            "error: the driver's code of {n} module(s) was not written; the first: cuda:0: \
             kernels/stream.ptx: "
        )),
        "{err}"
    );
    // one module the JIT refuses: the others are written
    if let Some(ptxas) = crate::tools::or_skip("ptxas", "PTXAS", test) {
        let sim = Sim::new(&format!("reject=e4m3,ptxas={}", ptxas.display()));
        let listed = jit_out(&sim);
        let (listing, err) = (text(&listed.stdout), text(&listed.stderr));
        assert_eq!(listed.status.code(), Some(1), "{err}\n{listing}");
        let failed: Vec<&str> = listing
            .lines()
            .filter(|l| l.contains("driver's code FAILED"))
            .collect();
        assert!(!failed.is_empty(), "{listing}");
        for l in &failed {
            assert!(
                l.contains("CUDA_ERROR_INVALID_PTX") && l.contains("JIT log: ptxas fatal"),
                "{l}"
            );
        }
        let written = std::fs::read_dir(out.path().join("cuda0")).unwrap().count();
        assert_eq!(
            written,
            2 * (modules_for((8, 9)).len() - failed.len()),
            "{listing}"
        );
        assert!(
            err.contains(&format!("{} module(s) was not written", failed.len())),
            "{err}"
        );
    }
    // no device to compile for
    let listed = jit_out(&Sim::new("devices=0"));
    let err = text(&listed.stderr);
    assert_eq!(listed.status.code(), Some(1), "{err}");
    assert_eq!(
        err.trim(),
        format!(
            "error: --jit-out {}: no CUDA device to compile for (CUDA: the driver reports no \
             device)",
            out.path().display()
        )
    );
    // (and the listing names the driver that reports none: the library loaded, its CUDA)
    let listing = text(&listed.stdout);
    let mut lines = listing.lines();
    assert_eq!(
        lines.next(),
        Some("CUDA: the driver reports no device"),
        "{listing}"
    );
    let driver = lines.next().unwrap_or_default();
    assert!(
        driver.starts_with("  libcuda ") && driver.contains("libsimcuda.so, CUDA 12."),
        "{listing}"
    );
}

/// The bench target (benches/kernels.rs) as `cargo test` built it beside this binary (its
/// `kernels-HASH`), or `None` after saying why the caller skips (a failure in CI): not built
/// (`cargo test --test suite` builds only this binary), or older than the library it links,
/// which a run of this binary alone rebuilt without it.
fn bench_binary(test: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/<profile>/deps");
    let newest = |prefix: &str, ext: Option<&str>| {
        std::fs::read_dir(deps)
            .expect("the deps folder")
            .filter_map(|e| e.ok())
            .filter(|e| {
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with(prefix) && path.extension().and_then(|x| x.to_str()) == ext
            })
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .max()
    };
    let why = match (
        newest("kernels-", None),
        newest("libroofprobe-", Some("rlib")),
    ) {
        (None, _) => "the bench target is not built: run `cargo test` (every target)".to_string(),
        (Some((built, _)), Some((lib, lib_path))) if built < lib => format!(
            "the bench target is older than {}: run `cargo test` (every target)",
            lib_path.display()
        ),
        (Some((_, path)), _) => return Some(path),
    };
    crate::tools::skip(test, &why);
    None
}

/// The bench target run once in criterion's test mode under `sim` at `size` bytes per array,
/// with criterion's `filter` if any: it must end 0, skip nothing, and test every benchmark on
/// the simulated GPU (the bench falls back to the host without a word otherwise). The ids it
/// tested, the device's name left out.
fn bench_cases(bench: &Path, sim: &Sim, size: &str, filter: Option<&str>) -> Vec<String> {
    let out = run_limited(
        sim.command(bench)
            .env("ROOFPROBE_BENCH_SIZE", size)
            // a busy machine's interpreter may take more than the 10 s a GPU's launch may
            // (an mma.sync peak took over 10 s under a load of 8 on 2026-12-06)
            .env("ROOFPROBE_BENCH_KERNEL_TIMEOUT", "120")
            .args(filter),
        Duration::from_secs(300),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{:?}: {stderr}", out.status.code());
    assert!(!stderr.contains("skipped"), "{stderr}");
    let tested: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Testing "))
        .collect();
    let on_gpu: Vec<String> = tested
        .iter()
        .filter_map(|id| id.strip_prefix("roofprobe simulated GPU/"))
        .map(str::to_string)
        .collect();
    assert!(
        !on_gpu.is_empty() && on_gpu.len() == tested.len(),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().filter(|l| *l == "Success").count(),
        tested.len(),
        "{stdout}"
    );
    on_gpu
}

/// `cargo bench` on a GPU: the bench target, run as `cargo test` runs it (criterion's test
/// mode: every benchmark once, its output checked), in its own process against the simulated
/// driver. Every case of the plan prepares, runs and validates through the CUDA backend (no
/// worker process here: the bench opens the device itself), none is skipped, and the device is
/// the GPU, not the host the bench falls back to: the whole plan on the simulated Ada (its
/// longest case about 3 s of the 10 s a launch may take in the interpreter), the size sweep at
/// 1 MiB alone (its smallest array is above 256 KiB), and on a simulated Hopper what only a
/// Hopper plans, a wgmma peak of each A source and the wgmma and TMA GEMMs (its mma.sync peaks,
/// sized for the wgmma rate, take some 9 s each there). A case that faults ends the bench with
/// one `error:` line naming it, never a panic or a figure.
#[test]
fn the_bench_runs_every_case_on_the_simulated_gpu() {
    let Some(bench) = bench_binary("sim::the_bench_runs_every_case_on_the_simulated_gpu") else {
        return;
    };
    let ada = Sim::new("memory=16M");
    let cases = bench_cases(&bench, &ada, "256K", None);
    // every family but the size sweep
    let families: BTreeSet<&str> = cases.iter().filter_map(|id| id.split('/').next()).collect();
    for family in roofprobe::cases::Family::ALL {
        let expected = family != roofprobe::cases::Family::Efficiency;
        assert_eq!(
            families.contains(family.as_str()),
            expected,
            "{family:?}: {cases:?}"
        );
    }
    for kind in ["gemm/ptx/", "gemm/cublas/", "tensor/mma_m16n8k32/e4m3"] {
        assert!(
            cases.iter().any(|id| id.starts_with(kind)),
            "{kind}: {cases:?}"
        );
    }
    // criterion's filter, which the bench reads too, keeps the other cases from being prepared
    let swept = bench_cases(&bench, &ada, "1M", Some("efficiency/"));
    assert!(
        swept.iter().all(|id| id.starts_with("efficiency/")),
        "{swept:?}"
    );
    let hopper = Sim::new("cc=9.0,memory=16M");
    let only_hopper = bench_cases(
        &bench,
        &hopper,
        "256K",
        Some("wgmma_m64n256k16(_rs)?/bf16|gemm/(wgmma|tma)"),
    );
    for kind in [
        "tensor/wgmma_m64n256k16/",
        "tensor/wgmma_m64n256k16_rs/",
        "gemm/wgmma/",
        "gemm/tma/bf16",
        "gemm/tma/e4m3",
        "gemm/tma-cluster/",
    ] {
        assert!(
            only_hopper.iter().any(|id| id.starts_with(kind)),
            "{kind}: {only_hopper:?}"
        );
    }

    // a fault: one line, exit 1
    let sim = Sim::new("memory=16M,fault=scale_f32");
    let out = run_limited(
        sim.command(&bench)
            .env("ROOFPROBE_BENCH_SIZE", "256K")
            .arg("stream/scale/f32"),
        Duration::from_secs(120),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: stream/scale/f32: running it:")
            && last.contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
