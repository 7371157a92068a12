//! CLI integration tests (testing layer 2): the real binary on the host backend — a quick run
//! and its CSV, the devices listing, and every kind of bad input getting one clear line and a
//! non-zero exit, never a panic.

use assert_cmd::Command;
use predicates::prelude::*;
use roofprobe::record::read_csv;
use std::path::{Path, PathBuf};

fn roofprobe() -> Command {
    Command::cargo_bin("roofprobe").unwrap()
}

/// The CSV files in `dir`.
fn csvs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    v.sort();
    v
}

/// A small, quick host run: every case, 1 MiB arrays.
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
        .success()
        .stdout(predicate::str::contains("stream/triad/f32"))
        .stdout(predicate::str::contains("bytes = read + written"))
        .stderr(predicate::str::contains("host CPU, no GPU used"));
    let files = csvs(dir.path());
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.contains("-host-") && name.ends_with("Z.csv"), "{name}");
    let rows = read_csv(&files[0]).unwrap();
    // 14 STREAM cases, then the compute cases: 3 host peaks and 3 × 12 sweep points, then the
    // cache sweep (its sizes come from this machine's caches, not from --size)
    let count = |family: &str| rows.iter().filter(|r| r.family.as_str() == family).count();
    assert_eq!(
        (count("stream"), count("peak"), count("intensity")),
        (14, 3, 36)
    );
    assert!(count("cache") >= 2, "an L1 and an L2 size at least");
    // GEMM, no matrix above the 1 MiB --size: 256² and 512² in f32, 256² in f64, each by the
    // reference crate and by our kernel, ours with its ratio to the reference
    assert_eq!(count("gemm"), 6);
    for r in rows.iter().filter(|r| r.family.as_str() == "gemm") {
        assert_eq!(
            r.ratio_to_reference.is_some(),
            r.kernel == "simd",
            "{}",
            r.case_id()
        );
    }
    assert_eq!(rows.len(), 53 + count("cache") + count("gemm"));
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
    }
    // compute rows carry the clock the host measured
    let peak = rows.iter().find(|r| r.case_id() == "peak/fma/f32").unwrap();
    assert!(peak.clock_mhz.is_some_and(|mhz| mhz > 100.0));
    // a second run writes a second file, never over the first
    quick_host_run(dir.path()).success();
    assert_eq!(csvs(dir.path()).len(), 2);
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
        .success()
        .stderr(predicate::str::contains("measuring the host CPU"));
    assert_eq!(read_csv(&csvs(dir.path())[0]).unwrap().len(), 1);
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

#[test]
fn devices_lists_the_host() {
    roofprobe()
        .arg("devices")
        .assert()
        .success()
        .stdout(predicate::str::contains("host — "))
        .stdout(predicate::str::contains("memory"))
        .stdout(predicate::str::contains("cuBLAS: "));
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

/// Bad input: one `error: …` line saying what to do, exit 1, no panic.
fn fails_cleanly(args: &[&str], message: &str) {
    let out = roofprobe().args(args).assert().code(1);
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
        &["run", "--device", "gpu7", "--out", out],
        "unknown device `gpu7`",
    );
    fails_cleanly(
        &["run", "--device", "host", "--size", "lots", "--out", out],
        "not a byte count",
    );
    fails_cleanly(
        &["run", "--device", "host", "--size", "100TiB", "--out", out],
        "pass a smaller --size",
    );
    fails_cleanly(
        &["run", "--device", "host", "--samples", "1", "--out", out],
        "at least 2",
    );
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    fails_cleanly(
        &["run", "--device", "host", "--out", file.to_str().unwrap()],
        "not-a-dir",
    );
    if roofprobe::backend::cuda::device_count().is_err() {
        fails_cleanly(
            &["run", "--device", "cuda:0", "--out", out],
            "no CUDA driver found",
        );
    }
    // nothing was written by any failed run
    assert!(csvs(dir.path()).is_empty());
}

#[test]
fn usage_errors_exit_2() {
    roofprobe().arg("frobnicate").assert().code(2);
    roofprobe().args(["run", "--bogus"]).assert().code(2);
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
