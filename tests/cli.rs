//! CLI integration tests (testing layer 2): the real binary on the host backend — a quick run
//! and its CSV, the devices listing, and every kind of bad input getting one clear line and a
//! non-zero exit, never a panic.

use assert_cmd::Command;
use predicates::prelude::*;
use roofprobe::results::csv::read_csv;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn roofprobe() -> Command {
    Command::cargo_bin("roofprobe").unwrap()
}

/// The CSV files in `dir`.
fn csvs(dir: &Path) -> Vec<PathBuf> {
    crate::common::files_with_ext(dir, "csv")
}

/// The exit codes of a run that finished with every case valid: 0, or 4 when some figures are
/// suspect, which the tests cannot rule out on a machine they share with each other (and a
/// developer's builds).
fn finished() -> impl predicates::Predicate<i32> {
    predicate::in_iter([0, roofprobe::cli::EXIT_SUSPECT])
}

/// A small, quick host run: the default suite's cases with the fewest samples, 1 MiB arrays.
fn quick_host_run(out: &Path) -> assert_cmd::assert::Assert {
    roofprobe()
        .args([
            "run", "--device", "host", "--quick", "--size", "1MiB", "--out",
        ])
        .arg(out)
        .assert()
}

#[test]
fn host_run_writes_a_valid_csv_and_a_table() {
    let dir = tempfile::tempdir().unwrap();
    quick_host_run(dir.path())
        .code(finished())
        .stdout(predicate::str::contains("stream/triad/f32"))
        .stdout(predicate::str::contains("bytes = read + written"))
        .stderr(predicate::str::contains("host CPU, no GPU used"));
    let files = csvs(dir.path());
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    // <host>-host-<cpu>-<stamp>Z-<8 hex digits>.csv
    let suffix = name
        .strip_suffix(".csv")
        .unwrap()
        .rsplit('-')
        .next()
        .unwrap();
    assert!(name.contains("-host-") && name.contains("Z-"), "{name}");
    assert!(
        suffix.len() == 8 && suffix.chars().all(|c| c.is_ascii_hexdigit()),
        "{name}"
    );
    let rows = read_csv(&files[0]).unwrap();
    // the default suite: 6 STREAM cases (copy, triad, read), then the compute cases: 3 host
    // peaks and 3 × 7 sweep points, then the cache levels at their fixed sizes (from this
    // machine's caches, not from --size)
    let count = |family: &str| rows.iter().filter(|r| r.family.as_str() == family).count();
    assert_eq!(
        (count("stream"), count("peak"), count("intensity")),
        (6, 3, 21)
    );
    assert!(count("cache") >= 2, "an L1 and an L2 size at least");
    assert!(
        rows.iter()
            .filter(|r| r.family.as_str() == "cache")
            .all(|r| !r.kernel.contains("sweep")),
        "the default has no cache sweep"
    );
    // no latency chase in the default; the full plan's runs 4 KiB to 4 × this machine's LLC,
    // every power of two
    assert_eq!(count("latency"), 0);
    use roofprobe::backend::Backend;
    let full = roofprobe::backend::host::HostBackend::new()
        .cases(roofprobe::backend::SizeRequest::BytesPerArray(1 << 20))
        .unwrap();
    let chases = full
        .iter()
        .filter(|p| p.case.family == roofprobe::cases::Family::Latency)
        .count();
    assert!(chases >= 6, "4 KiB to at least 128 KiB: {chases}");
    // GEMM, no matrix above the 1 MiB --size: one square per implementation and precision,
    // the largest planned (512² in f32, 256² in f64), by the reference crate and by our
    // kernel, ours with its ratio to the reference; and where the matrix unit may run bf16,
    // 512² on it (`amx`, no reference line)
    let amx_gemm =
        roofprobe::backend::host::tensor::available(roofprobe::backend::host::amx_gemm::PRECISION)
            .is_ok();
    let amx_rows: Vec<String> = rows
        .iter()
        .filter(|r| r.family.as_str() == "gemm" && r.kernel == "amx")
        .map(|r| r.case_id())
        .collect();
    if amx_gemm {
        assert_eq!(amx_rows, ["gemm/amx/bf16.f32/512x512x512"]);
    } else {
        assert!(amx_rows.is_empty(), "{amx_rows:?}");
        eprintln!("no AMX GEMM rows checked: this host has no AMX bf16 it may use");
    }
    let squares: Vec<String> = rows
        .iter()
        .filter(|r| r.family.as_str() == "gemm" && r.kernel != "amx")
        .map(|r| r.case_id())
        .collect();
    assert_eq!(
        squares,
        [
            "gemm/gemm-crate/f32/512x512x512",
            "gemm/simd/f32/512x512x512",
            "gemm/gemm-crate/f64/256x256x256",
            "gemm/simd/f64/256x256x256",
        ]
    );
    assert_eq!(count("gemm"), 4 + amx_rows.len());
    for r in rows.iter().filter(|r| r.family.as_str() == "gemm") {
        assert_eq!(
            r.ratio_to_reference.is_some(),
            r.kernel == "simd",
            "{}",
            r.case_id()
        );
    }
    // capacity: the kernel's MemTotal and MemAvailable, nothing probed
    assert_eq!(count("capacity"), 2);
    let capacity = |kernel: &str| {
        rows.iter()
            .find(|r| r.family.as_str() == "capacity" && r.kernel == kernel)
            .map(|r| r.working_set_bytes)
            .unwrap()
    };
    assert!(capacity("free") <= capacity("total") && capacity("free") > 0);
    // launch: waking the workers and one barrier, per round of a fixed batch
    assert_eq!(count("launch"), 1);
    let wake = rows
        .iter()
        .find(|r| r.case_id() == "launch/wake_barrier/i32")
        .unwrap();
    assert_eq!(
        wake.reps,
        roofprobe::cases::launch::WAKE_ROUNDS_PER_SAMPLE,
        "{}",
        wake.note
    );
    assert!(wake.time_median_s.is_some_and(|t| t > 0.0 && t < 1.0));
    // the matrix unit, in every precision this CPU and OS grant (AMX), each its own row
    let amx: Vec<String> = roofprobe::backend::host::tensor::PRECISIONS
        .into_iter()
        .filter(|&p| roofprobe::backend::host::tensor::available(p).is_ok())
        .map(|p| format!("tensor/amx/{p}"))
        .collect();
    let tensor: Vec<String> = rows
        .iter()
        .filter(|r| r.family.as_str() == "tensor")
        .map(|r| r.case_id())
        .collect();
    assert_eq!(tensor, amx);
    if amx.is_empty() {
        eprintln!("no tensor rows checked: this host has no AMX it may use (`roofprobe devices`)");
    }
    assert_eq!(
        rows.len(),
        30 + count("tensor")
            + count("cache")
            + count("gemm")
            + count("latency")
            + count("capacity")
            + count("efficiency")
            + 1
    );
    // the size sweep at `--size 1MiB`: copy and triad at 1 MiB per array
    assert_eq!(count("efficiency"), 2);
    for r in &rows {
        assert!(r.valid, "{}: {}", r.case_id(), r.status);
        assert_eq!(r.backend.as_str(), "host");
        if matches!(r.family.as_str(), "stream" | "intensity") {
            assert_eq!(r.working_set_bytes % (1 << 20), 0, "{}", r.case_id());
        }
        assert_eq!(r.gbps.is_some(), r.bytes > 0, "{}", r.case_id());
        assert_eq!(r.gflops.is_some(), r.flops > 0, "{}", r.case_id());
        assert!(r.gbps.unwrap_or(1.0) > 0.0 && r.gflops.unwrap_or(1.0) > 0.0);
        assert!(r.samples >= 3);
        assert_eq!(r.stopped_by, "count", "{}", r.case_id());
    }
    // compute rows carry the clock the host measured
    let peak = rows.iter().find(|r| r.case_id() == "peak/fma/f32").unwrap();
    assert!(peak.clock_mhz.is_some_and(|mhz| mhz > 100.0));
    // the calibration beside the CSV carries the host's launch figure
    let json = files[0].with_extension("json");
    let cal = roofprobe::Calibration::load(&json).unwrap();
    assert_eq!(
        cal.launch.and_then(|l| l.wake_barrier_secs),
        wake.time_median_s
    );
    // a second run writes a second file, never over the first
    quick_host_run(dir.path()).code(finished());
    assert_eq!(csvs(dir.path()).len(), 2);
}

/// The host's launch row is invalid, without a figure, when a worker misses a round (the
/// fault hook's planted defect: worker 0 skips its count once).
#[test]
fn a_worker_that_misses_a_round_makes_the_launch_row_invalid() {
    let dir = tempfile::tempdir().unwrap();
    roofprobe()
        .env(
            roofprobe::backend::host::FAULT_ENV,
            "launch/wake_barrier/i32",
        )
        .args([
            "run", "--device", "host", "--quick", "--filter", "launch/", "--out",
        ])
        .arg(dir.path())
        .assert()
        .code(3);
    let rows = read_csv(&csvs(dir.path())[0]).unwrap();
    assert_eq!(rows.len(), 1);
    assert!(
        !rows[0].valid
            && rows[0].status.contains("worker 0 ran")
            && rows[0].time_median_s.is_none(),
        "{}",
        rows[0].status
    );
}

#[test]
fn auto_without_a_gpu_measures_the_host_and_says_so() {
    if roofprobe::backend::cuda::device_count().is_ok_and(|n| n > 0) {
        eprintln!("skipped auto_without_a_gpu_measures_the_host_and_says_so: a GPU is present");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    roofprobe()
        .args([
            "run", "--quick", "--size", "64KiB", "--filter", "copy/f32", "--out",
        ])
        .arg(dir.path())
        .assert()
        .code(finished())
        .stderr(predicate::str::contains("measuring the host CPU"));
    assert_eq!(read_csv(&csvs(dir.path())[0]).unwrap().len(), 1);
}

/// `run --device host --quick --size SIZE --filter FILTER --out OUT`, to run.
fn quick_host_case(size: &str, filter: &str, out: &std::path::Path) -> Command {
    let mut command = roofprobe();
    command
        .args([
            "run", "--device", "host", "--quick", "--size", size, "--filter", filter, "--out",
        ])
        .arg(out);
    command
}

/// With `ROOFPROBE_CASE_TIMES` set, `run` says where each case's time went after its row, and
/// the parts it names fit in the case's whole; the run's `time:` line follows as always.
#[test]
fn case_times_are_said_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let out = quick_host_case("8MiB", "stream/copy/f32", dir.path())
        .env(roofprobe::run::orchestrate::CASE_TIMES_ENV, "1")
        .assert()
        .code(finished())
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    let line = err
        .lines()
        .find(|l| l.trim_start().starts_with("time of stream/copy/f32: "))
        .unwrap_or_else(|| panic!("no case times in:\n{err}"));
    let secs: Vec<f64> = line
        .split([':', ',', '('])
        .filter_map(|part| part.split_whitespace().next()?.parse().ok())
        .collect();
    let [timing, preparing, touching, checking, total] = secs[..] else {
        panic!("five figures wanted: {line}");
    };
    assert!(timing > 0.0 && total > 0.0, "{line}");
    assert!(touching <= preparing, "{line}");
    assert!(timing + preparing + checking <= total + 0.02, "{line}");
    assert!(err.lines().any(|l| l.starts_with("time: ")), "{err}");
}

#[test]
fn an_invalid_case_is_reported_without_numbers_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    roofprobe()
        .env(roofprobe::backend::host::FAULT_ENV, "stream/triad/f64")
        .args([
            "run", "--device", "host", "--quick", "--size", "64KiB", "--filter", "triad", "--out",
        ])
        .arg(dir.path())
        .assert()
        .code(3)
        .stdout(predicate::str::contains(
            "invalid: 1 of 8192 elements wrong: [0] is",
        ));
    let rows = read_csv(&csvs(dir.path())[0]).unwrap();
    let bad = rows
        .iter()
        .find(|r| r.case_id() == "stream/triad/f64")
        .unwrap();
    assert!(!bad.valid);
    assert_eq!((bad.gbps, bad.time_median_s), (None, None));
    let good = rows
        .iter()
        .find(|r| r.case_id() == "stream/triad/f32")
        .unwrap();
    assert!(good.valid && good.gbps.is_some());
}

/// The size sweep on the host: `--size 2MiB` gives copy and triad at 1 and 2 MiB per array, each
/// row checked element by element like a STREAM row (a corrupted element, planted with the
/// testing hook, makes its row invalid and the run exit 3), and the table fits each kernel's
/// line over its sizes.
#[test]
fn the_size_sweep_checks_every_size_and_fits_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = quick_host_case("2MiB", "efficiency/", dir.path())
        .env(
            roofprobe::backend::host::FAULT_ENV,
            "efficiency/triad/f32/2048",
        )
        .assert()
        .code(3)
        .stdout(predicate::str::contains(
            "invalid: 1 of 524288 elements wrong: [0] is",
        ))
        .get_output()
        .stdout
        .clone();
    let stdout = String::from_utf8_lossy(&out);
    let rows = read_csv(&csvs(dir.path())[0]).unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
    assert_eq!(
        ids,
        [
            "efficiency/copy/f32/1024",
            "efficiency/copy/f32/2048",
            "efficiency/triad/f32/1024",
            "efficiency/triad/f32/2048",
        ]
    );
    for r in &rows {
        let planted = r.case_id() == "efficiency/triad/f32/2048";
        assert_eq!(r.valid, !planted, "{}: {}", r.case_id(), r.status);
        // the size sweep's schedule: 3 samples
        assert!(
            planted || r.samples == 3,
            "{}: {} samples",
            r.case_id(),
            r.samples
        );
        assert_eq!(r.working_set_bytes, r.bytes, "{}", r.case_id());
    }
    // copy has two valid sizes, so a fit where its time rises with size (on a loaded machine
    // the two small sizes may not); triad one valid size, so none
    let median = |id: &str| {
        rows.iter()
            .find(|r| r.case_id() == id)
            .and_then(|r| r.time_median_s)
            .unwrap()
    };
    let rises = median("efficiency/copy/f32/2048") > median("efficiency/copy/f32/1024");
    assert_eq!(
        stdout.contains("size efficiency/copy/f32: t = a + bytes/BW"),
        rises,
        "{stdout}"
    );
    assert!(!stdout.contains("size efficiency/triad/f32"), "{stdout}");
}

/// Spins one thread per CPU in this process until the guard is dropped: the load of other
/// processes, as a run in a child process sees it.
struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start() -> Load {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..cpus)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_add(1));
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The loaded machine: a run while every CPU is also busy elsewhere finishes, keeps its
/// figures, flags every row `busy_host` in the CSV, the table and the summary, and exits 4.
/// The same run with bounds nothing reaches exits 0 with no flag: the bounds are the user's.
#[test]
fn a_loaded_machine_s_figures_are_flagged_and_exit_4() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--device",
        "host",
        "--quick",
        "--size",
        "4MiB",
        "--filter",
        "stream/triad/f32",
        "--filter",
        "peak/fma/f32",
    ];
    let out = {
        let _load = Load::start();
        roofprobe()
            .args(args)
            .arg("--out")
            .arg(dir.path().join("loaded"))
            .assert()
            .code(roofprobe::cli::EXIT_SUSPECT)
    };
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let rows = read_csv(&csvs(&dir.path().join("loaded"))[0]).unwrap();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert!(r.valid && r.gbps.or(r.gflops).is_some(), "{}", r.case_id());
        assert!(
            r.flags.contains("busy_host("),
            "{}: flags `{}`, others busy {:?} CPUs",
            r.case_id(),
            r.flags,
            r.other_cpus_busy
        );
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&r.case_id()))
            .unwrap();
        assert!(
            line.contains("suspect: ") && line.contains("busy_host("),
            "{line}"
        );
    }
    assert!(
        stdout.contains("\nSUSPECT: 2 of 2 valid figures"),
        "{stdout}"
    );

    let out = {
        let _load = Load::start();
        roofprobe()
            .args(args)
            .args(["--max-cv", "100000%", "--max-other-load", "100000%"])
            .args(["--min-of-theory", "0.001%", "--out"])
            .arg(dir.path().join("lenient"))
            .assert()
            .code(0)
    };
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!stdout.contains("SUSPECT"), "{stdout}");
    let rows = read_csv(&csvs(&dir.path().join("lenient"))[0]).unwrap();
    assert!(rows.iter().all(|r| r.valid && r.flags.is_empty()));
    // the load was still seen and recorded
    assert!(rows
        .iter()
        .all(|r| r.other_cpus_busy.is_some_and(|c| c > 0.2)));
}

/// `--until-stable` records in each row whether the target spread was reached or the time
/// limit came first.
#[test]
fn until_stable_records_why_sampling_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &str, target: &str, limit: &str| {
        let out = dir.path().join(out);
        roofprobe()
            .args(["run", "--device", "host", "--quick", "--size", "64KiB"])
            .args(["--filter", "stream/copy/f32", "--until-stable", target])
            .args(["--stable-limit", limit, "--out"])
            .arg(&out)
            .assert()
            .code(finished());
        read_csv(&csvs(&out)[0]).unwrap().remove(0)
    };
    // a target any spread meets: stable after the minimum samples (a limit 10 samples of at
    // least 20 ms each meet even on a busy machine)
    let easy = run("easy", "100000%", "120");
    assert_eq!(easy.stopped_by, "stable");
    assert_eq!(easy.samples, 10);
    // a target no machine meets: the limit stops it
    let hard = run("hard", "0.000001%", "0.5");
    assert_eq!(hard.stopped_by, "time_limit");
    assert!(hard.samples >= 3);
}

#[test]
fn an_interrupted_run_keeps_what_it_measured() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("roofprobe"))
        .args(["run", "--device", "host", "--size", "4MiB", "--out"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let rows = loop {
        let rows = csvs(dir.path())
            .first()
            .map(|f| {
                std::fs::read_to_string(f)
                    .unwrap()
                    .lines()
                    .count()
                    .saturating_sub(1)
            })
            .unwrap_or(0);
        if rows >= 2 || std::time::Instant::now() > deadline {
            break rows;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(rows >= 2, "the run wrote {rows} rows in 60 s");
    let kept = read_csv(&csvs(dir.path())[0]).unwrap();
    assert!(kept.len() >= 2 && kept.len() < 14, "{} rows", kept.len());
    assert!(kept.iter().all(|r| r.valid));
}

/// A quick host run of a few STREAM cases, to be signalled: the child and its folder.
fn host_run_to_signal() -> (crate::common::Signalled, tempfile::TempDir) {
    let (mut cmd, dir) = host_run("4MiB", &["--filter", "stream/"]);
    let run =
        crate::common::Signalled::start(&mut cmd, Duration::from_secs(120)).writing_to(dir.path());
    (run, dir)
}

/// `roofprobe run --device host --quick --size SIZE ARGS… --out DIR`, not started, and `DIR`.
fn host_run(size: &str, args: &[&str]) -> (std::process::Command, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("roofprobe"));
    cmd.args(["run", "--device", "host", "--quick", "--size", size])
        .args(args)
        .arg("--out")
        .arg(dir.path());
    (cmd, dir)
}

/// SIGTERM (as `timeout` or a scheduler sends it, to `run` alone): the case that runs
/// finishes, no other starts, and what was measured gets its table, calibration JSON and SVG,
/// with exit code 130 and a line saying how many cases were left.
#[test]
fn a_signal_stops_the_run_after_its_case_and_writes_what_it_measured() {
    let (mut run, dir) = host_run_to_signal();
    let before = run.wait_rows(2);
    run.signal(libc::SIGTERM);
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    let rows = read_csv(&csvs(dir.path())[0]).unwrap();
    // the case running when the signal came, at most, finished after it
    assert!(
        (before..=before + 1).contains(&rows.len()),
        "{before} rows at the signal, {} after: {err}",
        rows.len()
    );
    assert!(rows.iter().all(|r| r.valid));
    let planned = err
        .lines()
        .find_map(|l| l.strip_prefix(&format!("interrupted after {} of ", rows.len())))
        .unwrap_or_else(|| panic!("no count of the cases measured: {err}"));
    let planned: usize = planned.split(' ').next().unwrap().parse().unwrap();
    assert!(planned > rows.len(), "{err}");
    assert!(
        err.contains("interrupted: finishing the case that runs"),
        "{err}"
    );
    // the run's outputs, as at its end
    let stem = csvs(dir.path())[0].with_extension("");
    for ext in ["json", "svg"] {
        assert!(stem.with_extension(ext).is_file(), "no .{ext}: {err}");
    }
    assert!(
        out.contains("calibration: ") && out.contains("stream/"),
        "{out}"
    );
}

/// A second signal ends the run at once, in the middle of a case (one of 1 GiB arrays, seconds
/// to prepare and check), and says so.
#[test]
fn a_second_signal_ends_the_run_at_once() {
    let (mut cmd, dir) = host_run("1GiB", &["--filter", "stream/copy/f32"]);
    let mut run =
        crate::common::Signalled::start(&mut cmd, Duration::from_secs(120)).writing_to(dir.path());
    // inside the case: its two arrays half made (a signal before a case starts would start
    // none)
    run.wait_rss(1 << 30);
    run.signal(libc::SIGINT);
    run.wait_stderr("interrupted: finishing the case that runs");
    let again = std::time::Instant::now();
    run.signal(libc::SIGINT);
    let (code, _, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted again: stopping at once"), "{err}");
    assert!(
        again.elapsed() < Duration::from_secs(10),
        "{:?}",
        again.elapsed()
    );
    // the case never finished: no row, and so no file
    assert!(csvs(dir.path()).is_empty(), "{err}");
}

/// Under `--until-stable` a signal ends the case that runs once it has its fewest samples, not
/// at its time limit: its row is written, `stopped_by` `interrupted`, and the run stops there.
#[test]
fn a_signal_cuts_a_case_waiting_to_be_stable_short() {
    let (mut cmd, dir) = host_run(
        "256MiB",
        &[
            "--filter",
            "stream/copy/f32",
            "--filter",
            "stream/scale/f32",
        ],
    );
    cmd.args(["--until-stable", "0.000001%", "--stable-limit", "60"]);
    let mut run =
        crate::common::Signalled::start(&mut cmd, Duration::from_secs(120)).writing_to(dir.path());
    // inside the first case: its two arrays made (a signal before it would start none)
    run.wait_rss(480 << 20);
    let signalled = std::time::Instant::now();
    run.signal(libc::SIGTERM);
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    assert!(
        signalled.elapsed() < Duration::from_secs(30),
        "{:?}",
        signalled.elapsed()
    );
    let rows = read_csv(&csvs(dir.path())[0]).unwrap();
    assert_eq!(rows.len(), 1, "{err}");
    assert!(
        rows[0].valid && rows[0].stopped_by == "interrupted",
        "{:?}",
        rows[0]
    );
    assert!(rows[0].samples >= 3, "{}", rows[0].samples);
    assert!(
        out.contains("1 stopped by the interruption first (stopped_by = interrupted)"),
        "{out}"
    );
}

/// A signal the run was started with ignored (`nohup` ignores SIGHUP) stays ignored: the run
/// goes on measuring.
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    use std::os::unix::process::CommandExt;
    let (mut cmd, dir) = host_run("4MiB", &["--filter", "stream/"]);
    // SAFETY: only `signal`, async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut run =
        crate::common::Signalled::start(&mut cmd, Duration::from_secs(120)).writing_to(dir.path());
    let before = run.wait_rows(1);
    run.signal(libc::SIGHUP);
    // two more cases measured after it: it did not stop
    run.wait_rows(before + 2);
    run.signal(libc::SIGTERM);
    let (code, _, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
}

#[test]
fn devices_lists_the_host() {
    let out = roofprobe()
        .arg("devices")
        .assert()
        .success()
        .stdout(predicate::str::contains("host — "))
        .stdout(predicate::str::contains("memory"))
        .stdout(predicate::str::contains("cuBLAS: "));
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let host: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("host — "))
        .skip(1)
        .collect();
    // every fact once: no two lines share a label, none repeats the CPU count
    let labels: Vec<&str> = host.iter().map(|l| l[..24].trim()).collect();
    let mut unique = labels.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "{text}");
    assert_eq!(
        labels
            .iter()
            .filter(|l| l.to_lowercase().starts_with("cpus"))
            .count(),
        1,
        "the CPU count once: {text}"
    );
    // the CPU's identity, where /proc/cpuinfo gives one
    if std::path::Path::new("/proc/cpuinfo").exists() {
        for label in ["vendor", "family", "model", "ISA used"] {
            assert!(labels.contains(&label), "no `{label}` in {text}");
        }
    }
    // the matrix unit the tensor cases use, or why there is none
    let unit = host
        .iter()
        .find(|l| l.trim_start().starts_with("matrix unit"))
        .unwrap_or_else(|| panic!("no `matrix unit` in {text}"));
    let any_amx = roofprobe::backend::host::tensor::PRECISIONS
        .into_iter()
        .any(|p| roofprobe::backend::host::tensor::available(p).is_ok());
    assert_eq!(unit.contains("AMX ("), any_amx, "{unit}");
    assert_eq!(unit.contains("none: "), !any_amx, "{unit}");
    // whether large arrays ask for huge pages, as the OS's mode allows
    let huge = host
        .iter()
        .find(|l| l.trim_start().starts_with("huge pages"))
        .unwrap_or_else(|| panic!("no `huge pages` in {text}"));
    let thp = roofprobe::backend::host::pool::thp_mode();
    let asked = roofprobe::backend::host::pool::thp_asks(thp);
    assert_eq!(
        huge.contains("asked for on arrays of 4 MiB"),
        asked,
        "{huge}"
    );
    if let Some(mode) = thp {
        assert!(huge.contains(&format!("mode {mode}")), "{huge}");
    }
    // `devices` says which cuBLAS it found, or why none: here, one named that is not a library
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("libcublas.so.13");
    std::fs::write(&fake, "not a library").unwrap();
    roofprobe()
        .arg("devices")
        .env("ROOFPROBE_CUBLAS", &fake)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "cuBLAS: none: ROOFPROBE_CUBLAS={} does not load as cuBLAS",
            fake.display()
        )));
}

#[test]
fn devices_json_describes_the_host() {
    let out = roofprobe().args(["devices", "--json"]).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let devices = v["devices"].as_array().unwrap();
    let host = devices.last().unwrap();
    assert_eq!(host["backend"], "host");
    assert!(host["units"].as_u64().unwrap() >= 1);
    assert!(host["identity"]["isa"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert!(v["cuda"].is_string() && v["unusable"].is_array());
    // the GEMM rows' reference line: the cuBLAS found, or why none
    assert!(v["cublas"].is_string(), "{v}");
}

/// `completions SHELL` prints a script that knows the commands and their options.
#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = roofprobe().args(["completions", shell]).assert().success();
        let script = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        for word in ["roofprobe", "until-stable", "compare", "max-cv"] {
            assert!(script.contains(word), "{shell}: no `{word}`");
        }
    }
}

/// `--size` takes a fraction of a unit: 1.5 KiB arrays are 384 f32 elements.
#[test]
fn a_fractional_size_is_bytes() {
    let dir = tempfile::tempdir().unwrap();
    roofprobe()
        .args(["run", "--device", "host", "--quick", "--size", "1.5KiB"])
        .args(["--filter", "stream/copy/f32", "--out"])
        .arg(dir.path())
        .assert()
        .code(finished());
    let rows = read_csv(&csvs(dir.path())[0]).unwrap();
    assert_eq!(rows[0].elements, 384);
}

/// Bad input: one `error: …` line saying what to do, exit `code` (1 error, 2 usage), no panic.
fn fails_cleanly(code: i32, args: &[&str], message: &str) {
    let out = roofprobe().args(args).assert().code(code);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("note:")).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    assert!(lines[0].contains(message), "`{message}` not in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_input_gets_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    fails_cleanly(
        1,
        &["run", "--device", "host", "--size", "100TiB", "--out", out],
        "pass a smaller --size",
    );
    // in units a person reads, beside the exact count
    fails_cleanly(
        1,
        &["run", "--device", "host", "--size", "100TiB", "--out", out],
        "(3 arrays) needs 300.0 TiB (329853488332800 bytes) but only ",
    );
    // (a malformed --device, --size or --samples is clap's usage error, exit 2, with clap's
    // usage lines after it: `usage_errors_exit_2` checks each)
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    fails_cleanly(
        2,
        &["run", "--device", "host", "-o", file.to_str().unwrap()],
        "not-a-dir is a file; -o/--out names a folder",
    );
    // a filter that matches nothing: a usage error, no empty CSV, nor the folder it would have
    // made
    let fresh = dir.path().join("fresh");
    for folder in [out, fresh.to_str().unwrap()] {
        fails_cleanly(
            2,
            &[
                "run",
                "--device",
                "host",
                "--filter",
                "no-such-case",
                "--out",
                folder,
            ],
            "no case matches --filter no-such-case",
        );
    }
    assert!(!fresh.exists(), "a failed run left the folder it made");
    if roofprobe::backend::cuda::device_count().is_err() {
        fails_cleanly(
            1,
            &["run", "--device", "cuda:0", "--out", out],
            "no CUDA driver found",
        );
    }
    // nothing was written by any failed run
    assert!(csvs(dir.path()).is_empty());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only not-a-dir"
    );
}

/// Every usage error exits 2 (clap's code), with a line that names the value and what to write,
/// and writes nothing.
#[test]
fn usage_errors_exit_2() {
    roofprobe().arg("frobnicate").assert().code(2);
    roofprobe().args(["run", "--bogus"]).assert().code(2);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    for (args, says) in [
        (
            &["--device", "gpu"][..],
            "unknown device `gpu`; use auto, host, all or cuda:N",
        ),
        (&["--device", "gpu7"], "unknown device `gpu7`"),
        (&["--size", "12XB"], "unknown unit `XB`"),
        (&["--size", "abc"], "`abc` is not a byte count"),
        (&["--size", "lots"], "not a byte count"),
        (&["--samples", "0"], "--samples"),
        (&["--samples", "1"], "--samples"),
        (&["--max-cv", "much"], "not a percentage"),
        (&["--until-stable=0"], "--until-stable"),
        (&["--stable-limit", "0"], "--stable-limit"),
    ] {
        let mut cmd = roofprobe();
        cmd.args(["run", "--out", out]);
        if args[0] != "--device" {
            cmd.args(["--device", "host"]);
        }
        let assert = cmd.args(args).assert().code(2);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: ") && first.contains(says),
            "{args:?}: `{says}` not in {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(csvs(dir.path()).is_empty(), "nothing written");
    roofprobe().args(["devices", "--bogus"]).assert().code(2);
    roofprobe().args(["completions", "tcsh"]).assert().code(2);
    // --until-stable replaces the sample count; its limit needs it
    roofprobe()
        .args(["run", "--until-stable", "--samples", "5"])
        .assert()
        .code(2);
    roofprobe()
        .args(["run", "--stable-limit", "3"])
        .assert()
        .code(2);
}

/// `roofprobe devices | head -0`: a closed stdout ends the output quietly, no panic.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    for args in [&["devices"][..], &["specs"][..]] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("roofprobe"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader goes away before anything is written
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

/// The lines of a dry run's listing: the header (the device, the columns), one line per case
/// (its id, its estimate in seconds, its note), and the `plan:` line with the total in seconds
/// last. Returns the cases' (id, seconds) and the total.
fn dry_run_listing(stdout: &str) -> (Vec<(String, f64)>, f64) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() >= 4, "{stdout}");
    assert!(lines[0].starts_with("dry run on "), "{stdout}");
    assert!(
        lines[0].ends_with(": nothing is measured or written"),
        "{stdout}"
    );
    let last = lines[lines.len() - 1];
    let total: f64 = last
        .strip_prefix("plan: ")
        .and_then(|l| l.rsplit_once(": "))
        .and_then(|(_, s)| s.strip_suffix(" s"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no total on the last line: {last}"));
    let cases = lines[2..lines.len() - 1]
        .iter()
        .map(|l| {
            let mut words = l.split_whitespace();
            let id = words.next().unwrap().to_string();
            let secs: f64 = words.next().and_then(|s| s.parse().ok()).unwrap();
            assert_eq!(words.next(), Some("s"), "{l}");
            (id, secs)
        })
        .collect();
    (cases, total)
}

/// `run --dry-run` lists the run's plan, each case with its estimate, and the whole estimate
/// (the sum, in seconds, last), measures nothing and writes nothing (no folder either); its
/// filters and suites choose as a run's do, and a filter that keeps nothing is the same usage
/// error.
#[test]
fn a_dry_run_lists_the_plan_with_its_estimate_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never-made");
    let listed = |args: &[&str]| {
        let done = roofprobe()
            .args(["run", "--device", "host", "--dry-run", "--out"])
            .arg(&out)
            .args(args)
            .timeout(Duration::from_secs(60))
            .assert()
            .success();
        let stdout = String::from_utf8_lossy(&done.get_output().stdout).into_owned();
        dry_run_listing(&stdout)
    };
    let (default, total) = listed(&[]);
    assert!(default.len() > 20, "{default:?}");
    let sum: f64 = default.iter().map(|(_, s)| s).sum();
    // the per-case figures are printed to the hundredth: their sum is the total within that
    assert!(
        (sum - total).abs() <= 0.01 * default.len() as f64 + 0.1,
        "{sum} against {total}"
    );
    assert!(default
        .iter()
        .any(|(id, _)| id.starts_with("stream/triad/")));
    let (full, full_total) = listed(&["--full"]);
    assert!(full.len() > default.len() && full_total > total);
    let (stream, _) = listed(&["--quick", "--filter", "stream/"]);
    assert!(!stream.is_empty());
    assert!(
        stream.iter().all(|(id, _)| id.contains("stream/")),
        "{stream:?}"
    );
    assert!(!out.exists(), "a dry run made {}", out.display());
    roofprobe()
        .args([
            "run",
            "--device",
            "host",
            "--dry-run",
            "--filter",
            "no-such-case",
            "--out",
        ])
        .arg(&out)
        .assert()
        .code(roofprobe::cli::EXIT_USAGE)
        .stderr(predicate::str::contains(
            "no case matches --filter no-such-case",
        ));
    assert!(!out.exists());
}
