//! `roofprobe export --format …` on the checked-in host runs and on the simulated GPU with a
//! spec entry (tests/fixtures/), and the exports loaded by the estimators themselves
//! (scripts/check-exports.py: llm-analysis and AIConfigurator's own loaders where `.tools/venv`
//! has them, Calculon's and LLM-Viewer's schemas and rules from their source), with no `--set`,
//! each decode step required to follow the measured bandwidth (halved bandwidth, 1.9–2.1 times
//! the time); a run with no valid row refused; `--set` held to each format's schema.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The newest checked-in host run's files (CSV, calibration JSON): it has what the exports
/// take from a host run (capacity, launch, GEMM and size-sweep rows).
fn host_run(ext: &str) -> PathBuf {
    newest_csv("amd-epyc").with_extension(ext)
}

/// The calibration JSON of `input` (a CSV or a JSON) as this roofprobe reads it, in `dir`.
fn calibration_of(input: &Path, dir: &Path) -> PathBuf {
    if input.extension().is_some_and(|e| e == "json") {
        return input.to_path_buf();
    }
    let out = dir.join(format!(
        "{}.json",
        input.file_stem().unwrap().to_string_lossy()
    ));
    let (code, _, err) = export(&[
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(code, 0, "{}: {err}", input.display());
    out
}

/// The newest checked-in run of a CPU family (`amd-epyc`, `intel`), its CSV.
fn newest_csv(family: &str) -> PathBuf {
    crate::common::checked_in("csv")
        .into_iter()
        .rev()
        .find(|p| p.to_string_lossy().contains(family))
        .unwrap_or_else(|| panic!("results/ holds a {family} run"))
}

/// The simulated GPU run with an A100's name, so its sheet entry applies (not a measurement:
/// tests/fixtures/README.md says how it was made).
fn simulated_gpu() -> PathBuf {
    repo().join("tests/fixtures/simulated-gpu-named-a100-sxm4-80gb.csv")
}

fn export(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    crate::common::roofprobe_output(&all)
}

const FORMATS: [&str; 4] = ["aiconfigurator", "llm-analysis", "calculon", "llm-viewer"];

/// Every format, from a host run's CSV and JSON and from the simulated GPU with a spec entry,
/// with no `--set`: exit 0, the measured DRAM figure in the file, and nothing the tool needs
/// left out (before, llm-analysis needed `intra_node_min_message_latency` given, four keys on
/// the host, and LLM-Viewer `onchip_buffer`).
#[test]
fn every_format_exports_without_set_for_a_host_and_a_gpu_with_a_sheet() {
    let dir = tempfile::tempdir().unwrap();
    let csv = host_run("csv");
    let json = host_run("json");
    let sim = simulated_gpu();
    for input in [&csv, &json, &sim] {
        let dram = crate::common::dram_gbps(&calibration_of(input, dir.path()));
        let input = input.to_str().unwrap();
        for (format, expect) in [
            ("aiconfigurator", format!("mem_bw: {:?}", dram * 1e9)),
            (
                "llm-analysis",
                format!("\"hbm_bandwidth_in_GB_per_sec\": {dram:?}"),
            ),
            ("calculon", "\"MB_efficiency\"".to_string()),
            ("llm-viewer", format!("\"bandwidth\": {:?}", dram * 1e9)),
        ] {
            let (code, out, err) = export(&[input, "--format", format]);
            assert_eq!(code, 0, "{format} from {input}: {err}");
            assert!(out.contains(&expect), "{format}: no `{expect}` in\n{out}");
            assert!(!err.contains("needs"), "{format} from {input}: {err}");
            let keys: &[&str] = match format {
                "aiconfigurator" => &["data_dir:", "misc:", "p2p_latency:", "inter_node_bw:"],
                "llm-analysis" => &[
                    "\"intra_node_min_message_latency\"",
                    "\"mem_per_GPU_in_GB\"",
                    "\"intra_node_bandwidth_in_GB_per_sec\"",
                    "\"peak_fp16_TFLOPS\"",
                ],
                "calculon" => &["\"mem2\"", "\"networks\"", "\"bfloat16\""],
                _ => &["\"onchip_buffer\"", "\"FP16\""],
            };
            for key in keys {
                assert!(
                    out.contains(key),
                    "{format} from {input}: no {key} in\n{out}"
                );
            }
        }
    }
    // a run of 2026-11-30, before the capacity rows: what a model may use is unknown there,
    // and no sheet or default can say it; the error names the field, where the file used to
    // leave it out for the tool to refuse
    let old = crate::common::checked_in("csv").remove(0);
    let (code, out, err) = export(&[old.to_str().unwrap(), "--format", "llm-analysis"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert_eq!(
        err.trim_end(),
        "error: --format llm-analysis needs mem_per_GPU_in_GB, which this run did not measure \
         and no spec-sheet entry or default gives; give it with --set KEY=VALUE"
    );
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
        out.contains("\"onchip_buffer\": 20480000.0,  # bytes; given with --set"),
        "{out}"
    );
}

/// The newest checked-in host run's calibration with its `size_efficiency` section replaced by
/// one fit of relative residual `rms`, written into `dir`: a test input (the fit's figures are
/// chosen, consistent with each other as the reader requires, never a measurement). Returns the file, the constant (s), the asymptotic GB/s
/// and the points' (bytes, GB/s).
fn with_size_fit(dir: &Path, rms: f64) -> (PathBuf, f64, f64, Vec<(u64, f64)>) {
    let mut cal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(host_run("json")).unwrap()).unwrap();
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
        "rms_relative_residual": rms,
        "points": points.iter().map(|&(bytes, g)| serde_json::json!({
            "case": format!("efficiency/triad/f32/{}", (bytes / 3) >> 10),
            "bytes": bytes,
            "secs": bytes as f64 / g / 1e9,
            "gbps": g,
            "efficiency": g / gbps,
        })).collect::<Vec<_>>(),
    }]);
    let path = dir.join(format!("with-size-fit-{rms}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&cal).unwrap()).unwrap();
    (path, constant, gbps, points)
}

/// The size sweep's fit feeds AIConfigurator's constant latency and bandwidth factor and
/// Calculon's `MB_efficiency`: with the section, each file carries the fit's figures, marked
/// measured from the fit's rows; a fit beyond
/// its quality bound (rms relative residual 0.935, as the committed Xeon run's) is left out
/// with a note, where it was exported whatever its quality.
#[test]
fn the_size_fit_feeds_the_constant_the_factor_and_the_curve() {
    let dir = tempfile::tempdir().unwrap();
    let (path, constant, gbps, points) = with_size_fit(dir.path(), 0.0);
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
    // the checked-in run's own fits are beyond their bound (rms 1.06 and 1.23): none is used
    let (_, out, err) = export(&[
        host_run("json").to_str().unwrap(),
        "--format",
        "aiconfigurator",
    ]);
    assert!(!out.contains("efficiency/triad"), "{out}");
    assert!(
        err.contains("is left out: its rms relative residual"),
        "{err}"
    );
    // a fit beyond its bound: left out of every format, with a note on stderr
    let (poor, ..) = with_size_fit(dir.path(), 0.935);
    for format in ["aiconfigurator", "calculon"] {
        let (code, out, err) = export(&[poor.to_str().unwrap(), "--format", format]);
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains("efficiency/triad"), "{format}: {out}");
        assert!(
            err.contains(&format!(
                "{format}: the size sweep's fit efficiency/triad/f32 is left out: its rms \
                 relative residual 0.935 is above the bound 0.1"
            )),
            "{format}: {err}"
        );
    }
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
            vec![csv, "--format", "calculon", "--set", "mem3.GiB=1"],
            "error: --set: `mem3.GiB` is not a key of --format calculon; it knows:",
        ),
        (
            vec![
                csv,
                "--format",
                "aiconfigurator",
                "--set",
                "gpu.mem_bw=fast",
            ],
            "error: --set: `gpu.mem_bw` needs a number; got `fast`",
        ),
        // what the tools would refuse in the file, refused here (issue 58, item 9)
        (
            vec![csv, "--format", "aiconfigurator", "--set", "gpu.mem_bw=0"],
            "error: --set: `gpu.mem_bw` must be above 0, at least 1e3 and at most 1e15 (no device \
             is beyond these); got `0`",
        ),
        (
            vec![
                csv,
                "--format",
                "llm-analysis",
                "--set",
                "mem_per_GPU_in_GB=0",
            ],
            "error: --set: `mem_per_GPU_in_GB` must be above 0, at least 9.313225746e-10 and at \
             most 1.048576e6 (no device is beyond these); got `0`",
        ),
        (
            vec![
                csv,
                "--format",
                "aiconfigurator",
                "--set",
                "gpu.mem_bw_empirical_scaling_factor=5",
            ],
            "error: --set: `gpu.mem_bw_empirical_scaling_factor` is a fraction, above 0 and at \
             most 1; got `5`",
        ),
        (
            vec![csv, "--format", "calculon", "--set", "processing_mode=foo"],
            "error: --set: `processing_mode` is one of roofline, no_overlap; got `foo`",
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

/// A host CSV with every row marked invalid, as a run writes an invalid row (the reason in
/// `status`, no figures, no flags), under `dir`.
pub fn all_invalid_csv(dir: &Path) -> PathBuf {
    use roofprobe::results::csv::{read_csv, to_csv_bytes};
    let mut rows = read_csv(&host_run("csv")).unwrap();
    for r in rows.iter_mut() {
        r.valid = false;
        r.status = "invalid: [0] is 1, should be 2".into();
        r.flags.clear();
        r.stopped_by.clear();
        r.time_min_s = None;
        r.time_median_s = None;
        r.time_mean_s = None;
        r.time_max_s = None;
        r.time_stddev_s = None;
        r.cv = None;
        r.gbps = None;
        r.gflops = None;
        r.theory_gflops = None;
        r.ratio_to_reference = None;
    }
    let path = dir.join("all-invalid.csv");
    std::fs::write(&path, to_csv_bytes(&rows)).unwrap();
    path
}

/// A run whose rows are all invalid has nothing to export: every format exits 1 with one
/// line naming the file and the run, and writes nothing (it exited 0 with files of no figures).
#[test]
fn a_run_with_no_valid_row_is_an_error_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let csv = all_invalid_csv(dir.path());
    let csv = csv.to_str().unwrap();
    for format in ["roofprobe"].into_iter().chain(FORMATS) {
        let (code, out, err) = export(&[csv, "--format", format]);
        assert_eq!(code, 1, "{format}: {err}");
        assert!(out.is_empty(), "{format}: {out}");
        assert_eq!(err.lines().count(), 1, "{format}: {err}");
        assert!(
            err.starts_with(&format!("error: {csv}:1: run "))
                && err.contains("has no valid row")
                && err.contains("every one invalid; the first: "),
            "{format}: {err}"
        );
    }
}

/// Every STREAM row of a host run flagged: the DRAM ceiling had to come from a flagged row, so
/// the calibration says so (`suspect: true` and why) and every other format warns on stderr.
/// With one unflagged row left, that row sets it and nothing warns of the DRAM figure.
#[test]
fn a_ceiling_from_a_flagged_row_is_marked_and_warned_of() {
    use roofprobe::results::csv::{read_csv, to_csv_bytes};
    let dir = tempfile::tempdir().unwrap();
    let mut rows = read_csv(&newest_csv("amd-epyc")).unwrap();
    let stream = |r: &roofprobe::results::record::Record| {
        r.family == roofprobe::cases::Family::Stream && r.valid
    };
    for r in rows.iter_mut().filter(|r| stream(r)) {
        if r.flags.is_empty() {
            r.flags = "busy_host(0.50 CPUs)".into();
        }
    }
    let path = dir.path().join("flagged.csv");
    std::fs::write(&path, to_csv_bytes(&rows)).unwrap();
    let path = path.to_str().unwrap();
    let (code, out, err) = export(&[path]);
    assert_eq!(code, 0, "{err}");
    let cal: serde_json::Value = serde_json::from_str(&out).unwrap();
    let dram = &cal["memory_ceilings"][0];
    assert_eq!(dram["level"], "dram");
    assert_eq!(dram["suspect"], true, "{dram}");
    let case = dram["case"].as_str().unwrap();
    assert!(
        dram["suspect_reason"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{case}: ")),
        "{dram}"
    );
    for format in FORMATS {
        let (code, _, err) = export(&[path, "--format", format]);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("warning: {format}: "))
                    && l.contains(&format!("{case} (flagged suspect in the run"))),
            "{format}: {err}"
        );
    }
    // one unflagged STREAM row: it sets the ceiling, and the DRAM figure is not warned of
    let first = rows.iter().position(stream).unwrap();
    rows[first].flags.clear();
    let clean_case = rows[first].case_id();
    std::fs::write(dir.path().join("flagged.csv"), to_csv_bytes(&rows)).unwrap();
    let (_, out, _) = export(&[path]);
    let cal: serde_json::Value = serde_json::from_str(&out).unwrap();
    let dram = &cal["memory_ceilings"][0];
    assert_eq!(dram["case"], clean_case.as_str(), "{dram}");
    assert!(dram.get("suspect").is_none(), "{dram}");
    let (_, _, err) = export(&[path, "--format", "llm-viewer"]);
    assert!(!err.contains("`bandwidth` is measured"), "{err}");
}

/// The Xeon runs measured AMX's bf16 rate: that is llm-analysis's 16-bit peak (it was left out,
/// and needed a --set); an AMD run without one gets its f32 peak, said to be so.
#[test]
fn a_measured_amx_bf16_rate_is_llm_analysiss_16_bit_peak() {
    let xeon = newest_csv("intel");
    let (code, json, err) = export(&[xeon.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let cal: serde_json::Value = serde_json::from_str(&json).unwrap();
    let bf16 = cal["compute_ceilings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["family"] == "tensor" && c["precision"] == "bf16.f32")
        .expect("the Xeon run measured AMX bf16")["gflops"]
        .as_f64()
        .unwrap();
    let (code, out, _) = export(&[xeon.to_str().unwrap(), "--format", "llm-analysis"]);
    assert_eq!(code, 0);
    let file: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(file["peak_fp16_TFLOPS"].as_f64().unwrap(), bf16 / 1e3);
}

/// The estimators load the exports with no `--set` and follow the measured bandwidth, in every
/// mode, on the host runs and on the simulated GPU with a spec entry. Skips with a printed
/// reason where Python is missing; the script itself reports a tool not installed as absent, a
/// failure under ROOFPROBE_REQUIRE_TOOLS=1 (set by .ci/run, which installs them).
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
    // the newest AMD run's calibration JSON with a good size fit (whose constant and curve the
    // script requires AIConfigurator to use), that run's CSV (GEMM rows, no 16-bit units, fits
    // beyond their bound), the newest Xeon run (AMX), and the simulated GPU with a sheet
    let (with_fit, ..) = with_size_fit(inputs.path(), 0.0);
    for input in [
        with_fit,
        newest_csv("amd-epyc"),
        newest_csv("intel"),
        simulated_gpu(),
    ] {
        let work = tempfile::tempdir().unwrap();
        let out = match Command::new(&python)
            .arg(repo().join("scripts/check-exports.py"))
            .arg(env!("CARGO_BIN_EXE_roofprobe"))
            .arg(&input)
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
        eprintln!("{}:\n{text}", input.display());
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("check-exports: ok"), "{text}");
        // every tool and mode timed its step, unless the tool is absent
        for tool in [
            "llm-analysis [",
            "aiconfigurator-core [SOL]",
            "aiconfigurator-core [EMPIRICAL]",
            "calculon [no_overlap]",
            "calculon [roofline]",
            "llm-viewer [",
        ] {
            let tool_name = tool.split_whitespace().next().unwrap();
            assert!(
                text.contains(&format!("RATIO {tool}"))
                    || text.contains(&format!("{tool_name}: absent")),
                "{tool}: {text}"
            );
        }
    }
}
