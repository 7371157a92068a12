//! `roofprobe export --format …` on the checked-in host run, and the exports loaded by the
//! estimators themselves (scripts/check-exports.py: llm-analysis and AIConfigurator's own
//! loaders where `.tools/venv` has them, Calculon's and LLM-Viewer's schemas from their source),
//! each estimate required to follow our bandwidth (halved bandwidth, about twice the time).

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The checked-in host run's files (CSV, calibration JSON): the latest one.
fn host_run(ext: &str) -> PathBuf {
    crate::common::checked_in(ext)
        .pop()
        .expect("results/ holds a run")
}

fn export(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    crate::common::roofprobe_output(&all)
}

#[test]
fn every_format_exports_the_checked_in_host_run() {
    let csv = host_run("csv");
    let json = host_run("json");
    let cal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let dram = cal["memory_ceilings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["level"] == "dram")
        .unwrap()["gbps"]
        .as_f64()
        .unwrap();
    for input in [&csv, &json] {
        let input = input.to_str().unwrap();
        for (format, expect) in [
            ("aiconfigurator", format!("mem_bw: {:?}", dram * 1e9)),
            (
                "llm-analysis",
                format!("\"hbm_bandwidth_in_GB_per_sec\": {dram:?}"),
            ),
            ("calculon", format!("\"GBps\": {dram:?}")),
            ("llm-viewer", format!("\"bandwidth\": {:?}", dram * 1e9)),
        ] {
            let (code, out, err) = export(&[input, "--format", format]);
            assert_eq!(code, 0, "{format} from {input}: {err}");
            assert!(out.contains(&expect), "{format}: no `{expect}` in\n{out}");
            // a host run has no sheet entry: nothing is marked spec, and what the tool needs
            // but nothing gave is named on stderr
            assert!(!err.contains("spec sheet"), "{format}: {err}");
            assert!(err.contains("left out"), "{format}: {err}");
        }
    }
    // a --set value goes in, marked as given
    let (code, out, _) = export(&[
        csv.to_str().unwrap(),
        "--format",
        "llm-viewer",
        "--set",
        "onchip_buffer=20480000",
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains("\"onchip_buffer\": 20480000.0,  # given with --set"),
        "{out}"
    );
}

#[test]
fn bad_export_requests_get_one_clear_line() {
    let csv = host_run("csv");
    let csv = csv.to_str().unwrap();
    for (args, expect) in [
        (
            vec![csv, "--format", "calculon", "--set", "mem1.GBps"],
            "error: --set `mem1.GBps` is not KEY=VALUE",
        ),
        (
            vec![csv, "--format", "calculon", "--set", "mem2.GiB=1"],
            "error: --set: `mem2.GiB` is not a key of --format calculon; it knows:",
        ),
        (
            vec![
                csv,
                "--format",
                "aiconfigurator",
                "--set",
                "gpu.mem_bw=fast",
            ],
            "error: --set: `gpu.mem_bw` needs a finite number, 0 or more; got `fast`",
        ),
        (
            vec![csv, "--set", "gpu.mem_bw=1"],
            "error: --set is for the other formats; --format roofprobe takes none",
        ),
    ] {
        let (code, out, err) = export(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(expect), "{args:?}: {err}");
    }
}

/// The estimators load the exports and follow our bandwidth. Skips with a printed reason where
/// Python is missing; the script itself reports a tool not installed as absent, a failure under
/// ROOFPROBE_REQUIRE_TOOLS=1 (set by .ci/run, which installs them).
#[test]
fn estimators_load_the_exports_and_follow_the_bandwidth() {
    let require = std::env::var("ROOFPROBE_REQUIRE_TOOLS").as_deref() == Ok("1");
    let venv = repo().join(".tools/venv/bin/python");
    let python = if venv.is_file() {
        venv
    } else {
        PathBuf::from("python3")
    };
    let work = tempfile::tempdir().unwrap();
    let out = match Command::new(&python)
        .arg(repo().join("scripts/check-exports.py"))
        .arg(env!("CARGO_BIN_EXE_roofprobe"))
        .arg(host_run("json"))
        .arg(work.path())
        .output()
    {
        Ok(out) => out,
        Err(e) if !require => {
            eprintln!("skipped: no Python to run scripts/check-exports.py ({e})");
            return;
        }
        Err(e) => panic!("{}: {e}", python.display()),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("check-exports: ok"), "{text}");
}
