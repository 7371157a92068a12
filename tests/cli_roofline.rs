//! The roofline commands end to end: `specs`, a real host run with its JSON and SVG beside the
//! CSV, then `report`, `export`, `plot` and `compare` on what it wrote, and every kind of bad
//! input each of them can meet. Every error must be one `error: file:line: …` line and exit 1,
//! never a panic.

use assert_cmd::Command;
use predicates::prelude::*;
use roofprobe::Calibration;
use std::path::{Path, PathBuf};

fn roofprobe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_roofprobe"))
}

/// Runs roofprobe and returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = roofprobe().args(args).output().expect("roofprobe runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts a failure (exit 1) printed as exactly one `error: …` line that starts with `prefix`.
fn fails_with(args: &[&str], prefix: &str) -> String {
    fails_with_code(1, args, prefix)
}

/// As [`fails_with`], for a usage error (exit 2).
fn usage_fails_with(args: &[&str], prefix: &str) -> String {
    fails_with_code(2, args, prefix)
}

fn fails_with_code(expected: i32, args: &[&str], prefix: &str) -> String {
    let (code, _, err) = run(args);
    assert_eq!(code, expected, "{args:?}: exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: one error line, got {err}");
    assert!(
        lines[0].starts_with(&format!("error: {prefix}")),
        "{args:?}: expected `error: {prefix}…`, got {}",
        lines[0]
    );
    lines[0].to_string()
}

/// A real quick host run of a few cases into `dir`; returns its CSV. Arrays are 2× the
/// last-level cache, so even copy's two arrays make a DRAM working set (4× LLC).
fn host_run(dir: &Path, filters: &[&str]) -> PathBuf {
    let size = (2 * roofprobe::backend::host::host_info().llc_bytes).to_string();
    let mut args = vec![
        "run",
        "--device",
        "host",
        "--quick",
        "--size",
        &size,
        "--out",
        dir.to_str().unwrap(),
    ];
    for f in filters {
        args.extend(["--filter", f]);
    }
    let (code, out, err) = run(&args);
    // 4: finished, some figures suspect (a machine the tests share is rarely quiet)
    assert!(
        code == 0 || code == 3 || code == roofprobe::cli::EXIT_SUSPECT,
        "run failed ({code}): {err}"
    );
    let csv = out
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .unwrap_or_else(|| panic!("no results line in {out}"));
    PathBuf::from(csv)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `--json` on `specs` (the table, an entry, a pair) and `compare`: one JSON document on
/// stdout, figures as numbers.
#[test]
fn specs_and_compare_speak_json() {
    let json = |args: &[&str]| -> serde_json::Value {
        let (code, out, err) = run(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    };
    let all = json(&["specs", "--json"]);
    assert!(all.as_array().unwrap().len() >= 28);
    let one = json(&["specs", "RTX 3090", "--json"]);
    assert_eq!(one["mem_bandwidth_gbs"], 936.0);
    let pair = json(&["specs", "--compare", "RTX 3090", "A100 80GB SXM4", "--json"]);
    assert_eq!(pair["a"]["device"], "RTX 3090");
    assert!(pair["b_over_a"]["mem_bandwidth_gbs"].as_f64().unwrap() > 2.0);

    let dir = tempfile::tempdir().unwrap();
    let a = host_run(&dir.path().join("a"), &["stream/triad/f32"]);
    let b = host_run(&dir.path().join("b"), &["stream/triad/f32"]);
    let svg = dir.path().join("both.svg");
    let (code, out, err) = run(&["compare", s(&a), s(&b), "--json", "--svg", s(&svg)]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    assert_eq!(v["runs"][0]["device"]["backend"], "host");
    assert!(v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["key"] == "stream/triad/f32" && r["run"] == "B"));
    // what was written is said on stderr, so stdout stays one JSON document
    assert!(err.contains("roofline: "), "{err}");
    assert!(svg.exists());
}

#[test]
fn specs_lists_shows_and_compares_without_a_gpu() {
    let (code, out, _) = run(&["specs"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("28 entries") || out.contains(" entries."),
        "{out}"
    );
    // a header, then a line per entry
    assert!(
        out.lines().take_while(|l| !l.is_empty()).count() > 28,
        "{out}"
    );

    roofprobe()
        .args(["specs", "NVIDIA A100-SXM4-80GB"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "device                       A100 80GB SXM4",
        ))
        .stdout(predicate::str::contains(
            "mem_bandwidth_gbs            2039",
        ));

    let (code, out, _) = run(&["specs", "--compare", "RTX 3090", "A100 80GB SXM4"]);
    assert_eq!(code, 0);
    let line = |column: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(column))
            .unwrap_or_else(|| panic!("no {column} line in {out}"))
            .split_whitespace()
            .skip(1)
            .map(str::to_string)
            .collect()
    };
    // the vendor figures exactly as the reference table prints them, then B/A
    assert_eq!(line("mem_bandwidth_gbs"), ["936", "2039", "2.18x"]);
    assert_eq!(line("fp32_tflops"), ["35.6", "19.5", "0.55x"]);
    assert_eq!(line("fp16_tensor_fp32acc_tflops"), ["71", "312", "4.39x"]);
    assert_eq!(line("fp16_tensor_fp16acc_tflops"), ["142", "312", "2.20x"]);
    assert_eq!(line("fp64_tflops"), ["-", "9.7"]);
    assert_eq!(line("memory_data_rate_gbps"), ["19.5", "3.19", "0.16x"]);
}

#[test]
fn specs_names_that_do_not_fit_are_errors_with_candidates() {
    let e = usage_fails_with(&["specs", "H100"], "`H100` fits 3 spec entries");
    assert!(e.contains("\"H100 SXM5 80GB\""), "{e}");
    let e = usage_fails_with(
        &["specs", "RTX 3009"],
        "no spec entry matches `RTX 3009`; closest: ",
    );
    assert!(e.contains("\"RTX 3090\""), "{e}");
    usage_fails_with(
        &[
            "specs",
            "--compare",
            "RTX 3090",
            "NVIDIA GeForce RTX 4090 Laptop GPU",
        ],
        "no spec entry matches `NVIDIA GeForce RTX 4090 Laptop GPU`",
    );
}

#[test]
fn a_host_run_writes_json_and_svg_and_report_regenerates_them() {
    let dir = tempfile::tempdir().unwrap();
    let csv = host_run(dir.path(), &["triad", "copy"]);
    let stem = csv.file_stem().unwrap().to_str().unwrap().to_string();
    let json = dir.path().join(format!("{stem}.json"));
    let svg = dir.path().join(format!("{stem}.svg"));

    let cal = Calibration::load(&json).expect("the run's calibration loads");
    assert_eq!(cal.schema, roofprobe::analysis::calibration::SCHEMA);
    assert_eq!(cal.device.backend, roofprobe::device::BackendKind::Host);
    assert!(cal.dram_gbps().is_some_and(|g| g > 0.0));
    assert!(cal.spec.describe().starts_with("no spec (host CPU"));
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.contains("Roofline: "));
    assert!(svg_text.contains("Arithmetic intensity (FLOP/byte)"));
    // the title names the CPU by its identity, not only "host"
    let isa = roofprobe::backend::host::host_info().identity.isa;
    assert!(svg_text.contains("(host CPU, "), "{svg_text}");
    assert!(svg_text.contains(&format!(", {isa})")), "{isa}");

    // export from the CSV alone gives what the run wrote
    let (code, exported, _) = run(&["export", s(&csv)]);
    assert_eq!(code, 0);
    assert_eq!(exported, std::fs::read_to_string(&json).unwrap());

    // report regenerates beside the CSV without overwriting anything
    let (code, out, err) = run(&["report", s(&csv)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("stream/triad/f32") && out.contains("Roofline of"),
        "{out}"
    );
    let json2 = dir.path().join(format!("{stem}-2.json"));
    let svg2 = dir.path().join(format!("{stem}-2.svg"));
    assert!(
        out.contains(&format!("calibration: {}", json2.display())),
        "{out}"
    );
    assert_eq!(
        std::fs::read(&json2).unwrap(),
        std::fs::read(&json).unwrap()
    );
    assert_eq!(std::fs::read(&svg2).unwrap(), std::fs::read(&svg).unwrap());

    // export --out refuses an existing file (a usage error), and --force replaces it
    let before = std::fs::read(&json).unwrap();
    usage_fails_with(
        &["export", s(&csv), "--out", s(&json)],
        &format!("{} exists", json.display()),
    );
    assert_eq!(std::fs::read(&json).unwrap(), before);
    std::fs::write(&json, "stale").unwrap();
    let (code, _, err) = run(&["export", s(&csv), "-o", s(&json), "--force"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&json).unwrap(), before);
    // -o names the file here; a folder is a usage error
    usage_fails_with(
        &["export", s(&csv), "-o", s(dir.path())],
        &format!("{} is a folder", dir.path().display()),
    );
    // report --force rewrites <stem>.json in place instead of adding <stem>-3.json
    std::fs::write(&json, "stale").unwrap();
    let (code, _, err) = run(&["report", s(&csv), "--force"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&json).unwrap(), before);
    assert!(!dir.path().join(format!("{stem}-3.json")).exists());
    // report -o names a folder; a file is a usage error
    usage_fails_with(
        &["report", s(&csv), "-o", s(&json)],
        &format!("{} is a file", json.display()),
    );

    // plot, from the CSV and from the JSON, beside the input by default
    let (code, out, _) = run(&["plot", s(&csv)]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("{stem}-3.svg")), "{out}");
    let from_json = dir.path().join("from-json.svg");
    roofprobe()
        .args(["plot", s(&json), "-o", s(&from_json)])
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&from_json).unwrap(),
        std::fs::read(&svg).unwrap()
    );
}

#[test]
fn compare_shows_two_runs_with_gaps_and_writes_svg_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let a = host_run(&dir.path().join("a"), &["triad"]);
    let b = host_run(&dir.path().join("b"), &["triad/f32", "scale"]);
    let svg = dir.path().join("overlay.svg");
    let table_csv = dir.path().join("compare.csv");
    let (code, out, err) = run(&[
        "compare",
        s(&a),
        s(&b),
        "--svg",
        s(&svg),
        "--csv",
        s(&table_csv),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Comparing 2 runs"), "{out}");
    let line = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in {out}"))
            .to_string()
    };
    // both ran triad f32: a ratio; f64 triad only in A, scale only in B: gaps, not dropped
    assert!(line("stream/triad/f32 ").contains('x'), "{out}");
    assert!(line("stream/triad/f64 ").contains("not run"), "{out}");
    assert!(line("stream/scale/f32 ").contains("not run"), "{out}");
    assert!(line("DRAM ").contains('x'));
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.contains("Roofline: 2 runs overlaid"));
    let csv_text = std::fs::read_to_string(&table_csv).unwrap();
    assert!(csv_text.starts_with("section,key,unit,run,run_id,"));
    assert!(csv_text.contains(",not run,"));

    // a calibration JSON compares too: ceilings, and "no rows" for its cases
    let json = a.with_extension("json");
    let (code, out, _) = run(&["compare", s(&b), s(&json)]);
    assert_eq!(code, 0);
    assert!(out.contains("calibration file: ceilings only"));
    assert!(
        line_of(&out, "stream/triad/f32 ").contains("no rows"),
        "{out}"
    );
}

fn line_of(text: &str, key: &str) -> String {
    text.lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn bad_inputs_name_file_line_and_expectation_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let good = host_run(&dir.path().join("run"), &["triad"]);
    let text = std::fs::read_to_string(&good).unwrap();
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let empty = write("empty.csv", "");
    let foreign = write("foreign.csv", "name,score\nada,3\n");
    let malformed = write("malformed.csv", &text.replacen(",triad,", ",triad,\"", 1));
    // the last row cut after its tenth field (cutting a fixed count of bytes left a whole row
    // once the last row's note grew longer than the cut)
    let truncated = {
        let (head, last) = text.trim_end().rsplit_once('\n').unwrap();
        let cut: Vec<&str> = last.split(',').take(10).collect();
        write("truncated.csv", &format!("{head}\n{}\n", cut.join(",")))
    };
    let header_only = write("header.csv", &format!("{}\n", text.lines().next().unwrap()));
    let other_schema = write(
        "other.csv",
        &text.replace(roofprobe::results::record::SCHEMA, "roofprobe-csv/7"),
    );
    let json = good.with_extension("json");
    let json_text = std::fs::read_to_string(&json).unwrap();
    let newer_json = write(
        "newer.json",
        &json_text.replace(
            roofprobe::analysis::calibration::SCHEMA,
            "roofprobe-calibration/3",
        ),
    );
    let foreign_json = write("foreign.json", "{\n  \"name\": \"not ours\"\n}\n");
    let broken_json = write("broken.json", &json_text[..json_text.len() / 2]);
    let missing = dir.path().join("missing.csv");

    let csv_cases: Vec<(&Path, String)> = vec![
        (&empty, format!("{}:1: empty file", empty.display())),
        (
            &foreign,
            format!("{}:1: not a roofprobe results CSV", foreign.display()),
        ),
        (&malformed, format!("{}:2:", malformed.display())),
        (&truncated, format!("{}:", truncated.display())),
        (
            &header_only,
            format!(
                "{}:2: the file has a header but no measurements",
                header_only.display()
            ),
        ),
        (
            &other_schema,
            format!(
                "{}:2: schema `roofprobe-csv/7` is not supported",
                other_schema.display()
            ),
        ),
        (&missing, format!("{}: ", missing.display())),
    ];
    for command in ["report", "plot", "compare", "export"] {
        for (path, expected) in &csv_cases {
            fails_with(&[command, s(path)], expected);
        }
    }
    // the truncated file names its last line, and says it looks cut off
    let lines = text.lines().count();
    let e = fails_with(
        &["report", s(&truncated)],
        &format!("{}:{lines}: the last row has 10 of", truncated.display()),
    );
    assert!(e.contains("looks cut off"), "{e}");

    // calibration JSONs: plot and compare read them and refuse other schemas
    for command in ["plot", "compare"] {
        fails_with(
            &[command, s(&newer_json)],
            &format!(
                "{}:2: schema `roofprobe-calibration/3` is not supported; this roofprobe reads roofprobe-calibration/2 and roofprobe-calibration/1",
                newer_json.display()
            ),
        );
        fails_with(
            &[command, s(&foreign_json)],
            &format!(
                "{}:1: not a roofprobe calibration: no `schema` field",
                foreign_json.display()
            ),
        );
        fails_with(
            &[command, s(&broken_json)],
            &format!("{}:", broken_json.display()),
        );
    }
    // report and export read CSVs only, and say so
    for command in ["report", "export"] {
        fails_with(
            &[command, s(&json)],
            &format!(
                "{}:1: this is a JSON file; expected a roofprobe results CSV",
                json.display()
            ),
        );
    }
    // export of a file with several runs asks which one
    let run_id = text.lines().nth(1).unwrap().split(',').nth(1).unwrap();
    let second: String = text
        .lines()
        .skip(1)
        .map(|l| l.replacen(run_id, "second-run", 1) + "\n")
        .collect();
    let two = write("two.csv", &format!("{text}{second}"));
    let e = usage_fails_with(
        &["export", s(&two)],
        &format!("{} holds 2 runs", two.display()),
    );
    assert!(e.contains("--run"), "{e}");
    usage_fails_with(
        &["export", s(&two), "--run", "nope"],
        &format!("{} has no run `nope`", two.display()),
    );
    roofprobe()
        .args(["export", s(&two), "--run", "second-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"run_id\": \"second-run\""));
}

/// A CSV of the schema before (`roofprobe-csv/1`, no identity columns), as the real run kept in
/// `results/` was written, still reads: `report` regenerates its table and roofline.
#[test]
fn report_reads_a_schema_1_csv() {
    let old =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("results/vm-host-amd-epyc-20261130T082122Z.csv");
    let text = std::fs::read_to_string(&old).unwrap();
    assert!(text.lines().nth(1).unwrap().starts_with("roofprobe-csv/1,"));
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run(&["report", s(&old), "--out", s(dir.path())]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("peak/fma/f32"), "{out}");
    assert!(
        out.contains("Roofline of AMD EPYC (host CPU) on vm"),
        "{out}"
    );
}

/// The ceilings a run's bandwidth sweep sets, on two real runs where they went wrong: on the
/// AMD EPYC VM (f90759ee) a 5-step dip at 724 KiB .. 1.0 MiB, the only plateau within 2x of
/// the 2 MiB L2, set an L2 of 75.7 GB/s below the L3's 149; on the Xeon VM (b3b7c787) the
/// falling edge at 2.2 .. 3.1 MiB (5 steps, 252 GB/s) took L2 from its 33-step plateau (355
/// GB/s) for its nearer edge, and the plateau was said to have no cache within 2x.
#[test]
fn sweep_levels_come_from_their_plateaus_not_a_dip_or_a_falling_edge() {
    let report = |name: &str| {
        let csv = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results")
            .join(name);
        let dir = tempfile::tempdir().unwrap();
        let (code, out, err) = run(&["report", s(&csv), "--out", s(dir.path())]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let amd = report("vm-host-amd-epyc-20261203T184829Z-f90759ee.csv");
    assert!(
        amd.contains(
            "plateau 724.0 KiB .. 1.0 MiB: 75.7 GB/s median of 5 steps, edge at 1.0 MiB  -> L2 \
             (reported 2.0 MiB), but below L3's 149 GB/s, so not its ceiling: L2 from its \
             fixed-size rows"
        ),
        "{amd}"
    );
    let l2 = line_of(&amd, "L2 ");
    assert!(l2.contains("178 GB/s  cache/l2/i32/512"), "{l2}");
    // (53.0 MiB is 1.7x from the 32 MiB L3: near enough, but a longer plateau took it)
    assert!(
        amd.contains(
            "plateau 29.3 MiB .. 49.4 MiB: 88.8 GB/s median of 7 steps, edge at 53.0 MiB  -> \
             unmatched: L3 went to the plateau 1.1 MiB .. 17.4 MiB (33 steps to its 7)"
        ),
        "{amd}"
    );
    let xeon = report("vm-host-intel-r-xeon-r-processor-20261204T215604Z-b3b7c787.csv");
    let l2 = line_of(&xeon, "L2 ");
    assert!(l2.contains("355 GB/s  cache/sweep/i32/431"), "{l2}");
    assert!(
        xeon.contains(
            "plateau 108.0 KiB .. 1.7 MiB: 355 GB/s median of 33 steps, edge at 2.1 MiB  -> L2 \
             (reported 4.0 MiB)"
        ),
        "{xeon}"
    );
    assert!(
        xeon.contains(
            "plateau 2.2 MiB .. 3.1 MiB: 252 GB/s median of 5 steps, edge at 4.2 MiB  -> \
             unmatched: L2 went to the plateau 108.0 KiB .. 1.7 MiB (33 steps to its 5)"
        ),
        "{xeon}"
    );
    assert!(
        xeon.contains(
            "plateau 181.0 MiB .. 1.9 GiB: 30.8 GB/s median of 29 steps  -> unmatched: the last \
             plateau, not past the largest cache reported (not DRAM)"
        ),
        "{xeon}"
    );
}
