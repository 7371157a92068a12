//! `roofprobe export --format …` on the checked-in host run, and the exports loaded by the
//! estimators themselves (scripts/check-exports.py: llm-analysis and AIConfigurator's own
//! loaders where `.tools/venv` has them, Calculon's and LLM-Viewer's schemas from their source),
//! each estimate required to follow our bandwidth (halved bandwidth, about twice the time).

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A checked-in host run's files (CSV, calibration JSON): the latest one whose calibration has
/// no size fit (the runs of 2026-11-30 predate the efficiency sweep), since the tests below add
/// their own.
fn host_run(ext: &str) -> PathBuf {
    let json = crate::common::checked_in("json")
        .into_iter()
        .rev()
        .find(|p| {
            !std::fs::read_to_string(p)
                .unwrap()
                .contains("\"size_efficiency\"")
        })
        .expect("results/ holds a run without a size fit");
    json.with_extension(ext)
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
    let dram = crate::common::dram_gbps(&json);
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
            // every key the file lacks is named, the ones the tool defaults too
            if format == "llm-analysis" {
                for key in ["peak_i8_TFLOPS", "inter_node_bandwidth_in_GB_per_sec"] {
                    assert!(!out.contains(key), "{format}: {key} in\n{out}");
                    assert!(err.contains(key), "{format}: {key} unnamed in\n{err}");
                }
            }
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

/// The checked-in host run's calibration with a `size_efficiency` section added, written into
/// `dir`: a test input (the fit's figures are chosen, consistent with each other as the reader
/// requires, never a measurement). Returns the file, the constant (s), the asymptotic GB/s
/// and the points' (bytes, GB/s).
fn with_size_fit(dir: &Path) -> (PathBuf, f64, f64, Vec<(u64, f64)>) {
    let mut cal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(host_run("json")).unwrap()).unwrap();
    assert!(
        cal.get("size_efficiency").is_none(),
        "the checked-in run already has a size fit: this test's input would not be its own"
    );
    let (constant, gbps) = (3.5e-6, 11.25);
    let points: Vec<(u64, f64)> = (0..8u32)
        .map(|i| {
            let bytes = 3u64 << (20 + i);
            let secs = constant + bytes as f64 / (gbps * 1e9);
            (bytes, bytes as f64 / secs / 1e9)
        })
        .collect();
    cal["size_efficiency"] = serde_json::json!([{
        "kernel": "triad",
        "precision": "f32",
        "constant_secs": constant,
        "asymptotic_gbps": gbps,
        "rms_relative_residual": 0.0,
        "points": points.iter().map(|&(bytes, g)| serde_json::json!({
            "case": format!("efficiency/triad/f32/{}", (bytes / 3) >> 10),
            "bytes": bytes,
            "secs": bytes as f64 / g / 1e9,
            "gbps": g,
            "efficiency": g / gbps,
        })).collect::<Vec<_>>(),
    }]);
    let path = dir.join("with-size-fit.json");
    std::fs::write(&path, serde_json::to_string_pretty(&cal).unwrap()).unwrap();
    (path, constant, gbps, points)
}

/// The size sweep's fit feeds AIConfigurator's constant latency and bandwidth factor and
/// Calculon's `MB_efficiency`: with the section, each file carries the fit's figures, marked
/// measured from the fit's rows; without it (the checked-in run), none of them.
#[test]
fn the_size_fit_feeds_the_constant_the_factor_and_the_curve() {
    let dir = tempfile::tempdir().unwrap();
    let (path, constant, gbps, points) = with_size_fit(dir.path());
    let dram = crate::common::dram_gbps(&path);
    let path = path.to_str().unwrap();
    let (code, out, err) = export(&[path, "--format", "aiconfigurator"]);
    assert_eq!(code, 0, "{err}");
    let line = |key: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{key}:")))
            .unwrap_or_else(|| panic!("no {key} in\n{out}"))
            .to_string()
    };
    let latency = line("mem_empirical_constant_latency");
    assert!(
        latency.contains(&format!(": {constant:?}"))
            && latency.contains("measured: a: efficiency/triad/f32 fit"),
        "{latency}"
    );
    // mem_bw stays the DRAM ceiling; mem_bw × factor is the fit's asymptote
    assert!(line("mem_bw").contains(&format!(": {:?}", dram * 1e9)));
    let factor = line("mem_bw_empirical_scaling_factor");
    assert!(
        factor.contains(&format!(": {:?}", gbps / dram))
            && factor.contains("efficiency/triad/f32 fit"),
        "{factor}"
    );
    let (code, out, err) = export(&[path, "--format", "calculon"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let curve: Vec<(f64, f64)> = json["mem1"]["MB_efficiency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect();
    let mut want: Vec<(f64, f64)> = points
        .iter()
        .rev()
        .map(|&(bytes, g)| (bytes as f64 / 1e6, (g / dram).min(1.0)))
        .collect();
    want.push((0.0, want.last().unwrap().1));
    assert_eq!(curve.len(), want.len());
    for (got, want) in curve.iter().zip(&want) {
        assert!(
            (got.0 - want.0).abs() < 1e-9 && (got.1 - want.1).abs() < 1e-12,
            "{got:?} vs {want:?}"
        );
    }
    assert!(json["roofprobe_sources"]["mem1.MB_efficiency"]
        .as_str()
        .unwrap()
        .contains("efficiency/triad/f32 fit"));
    // the checked-in run has no size fit: no constant, and a one-point curve
    let (_, out, _) = export(&[
        host_run("json").to_str().unwrap(),
        "--format",
        "aiconfigurator",
    ]);
    assert!(!out.contains("mem_empirical_constant_latency:"), "{out}");
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
    let inputs = tempfile::tempdir().unwrap();
    // the checked-in run, the same with a size fit (whose constant and curve the script
    // requires the tools to use), and the newest checked-in run with GEMM rows (where the
    // script's cross-check gives llm-analysis the shares of the ceilings that our prefill and
    // decode reach)
    let (with_fit, ..) = with_size_fit(inputs.path());
    let with_gemm = crate::common::checked_in("json")
        .into_iter()
        .rev()
        .find(|p| {
            let cal: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            cal["gemm_efficiency"]
                .as_array()
                .is_some_and(|g| !g.is_empty())
        })
        .expect("results/ holds a run with GEMM rows");
    for calibration in [host_run("json"), with_fit, with_gemm] {
        let work = tempfile::tempdir().unwrap();
        let out = match Command::new(&python)
            .arg(repo().join("scripts/check-exports.py"))
            .arg(env!("CARGO_BIN_EXE_roofprobe"))
            .arg(&calibration)
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
        eprintln!("{}:\n{text}", calibration.display());
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("check-exports: ok"), "{text}");
    }
}
