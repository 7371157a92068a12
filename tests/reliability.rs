//! Issue 60 through the real binary, one test per class, each input generated from a committed
//! run with one thing changed: figures past physics and subnormal ceilings refused, fields read
//! as written and bounded, run ids that slug alike kept apart, a command's files all written or
//! none, a file-size limit met with an error line, a malformed driver limit a usage error.

use std::path::{Path, PathBuf};
use std::process::Command;

fn roofprobe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_roofprobe"))
}

const RUN: &str = "results/vm-host-amd-epyc-20261130T072645Z.csv";

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The committed run with `edit` applied to its text, written to `dir/name`.
fn edited(dir: &Path, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let text = std::fs::read_to_string(RUN).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, edit(&text)).unwrap();
    path
}

fn output(cmd: &mut Command) -> (i32, String, String) {
    let o = cmd.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Class 1-3: a calibration with a subnormal DRAM ceiling, and one past physics, are refused on
/// read with their line; nothing downstream prints `inf`.
#[test]
fn ceilings_beyond_physics_or_subnormal_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("a.json");
    let (code, _, err) = output(roofprobe().args(["export", RUN, "-o"]).arg(&json));
    assert_eq!(code, 0, "{err}");
    let good = std::fs::read_to_string(&json).unwrap();
    let cal = roofprobe::Calibration::from_json("a.json", &good).unwrap();
    let gbps = cal.dram_gbps().unwrap();
    for bad in ["5e-324", "1e-300", "2e6", "1e300"] {
        let text = good.replacen(&format!("\"gbps\": {gbps}"), &format!("\"gbps\": {bad}"), 1);
        assert_ne!(text, good);
        let path = dir.path().join(format!("bad-{bad}.json"));
        std::fs::write(&path, text).unwrap();
        let (code, out, err) = output(roofprobe().args(["compare", RUN]).arg(&path));
        assert_ne!(code, 0, "{bad}: {out}");
        assert!(err.contains("bad-") && err.contains("gbps"), "{bad}: {err}");
        assert!(!out.contains("inf") && !out.contains("NaN"), "{bad}: {out}");
    }
}

/// Class 3: `timestamp_utc` is read as the writer writes it, and a 5 MB run id is refused in a
/// short line.
#[test]
fn fields_are_read_as_written_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    for (name, from, to) in [
        ("day.csv", "2026-11-30T07:26:45Z", "yesterday".to_string()),
        (
            "nines.csv",
            "2026-11-30T07:26:45Z",
            "9999-99-99".to_string(),
        ),
        (
            "long.csv",
            "vm-host-amd-epyc-20261130T072645Z,2026",
            format!("{},2026", "r".repeat(5 << 20)),
        ),
    ] {
        let path = edited(dir.path(), name, |t| t.replacen(from, &to, 1));
        let (code, _, err) = output(roofprobe().arg("report").arg(&path));
        assert_ne!(code, 0, "{name}");
        assert!(
            err.contains(name),
            "{name}: the error names the file: {err}"
        );
        assert!(err.len() < 1000, "{name}: {} bytes of error", err.len());
    }
}

/// Class 4: two runs whose ids slug alike (`A/B`, `a-b`) get files of their own.
#[test]
fn runs_whose_ids_slug_alike_keep_their_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let id = "vm-host-amd-epyc-20261130T072645Z";
    let text = std::fs::read_to_string(RUN).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    let mut both = format!("{header}\n");
    for new in ["A/B", "a-b"] {
        for r in &rows {
            both.push_str(&r.replacen(id, new, 1));
            both.push('\n');
        }
    }
    let csv = dir.path().join("two.csv");
    std::fs::write(&csv, both).unwrap();
    let out = dir.path().join("out");
    for _ in 0..2 {
        let (code, _, err) = output(
            roofprobe()
                .arg("report")
                .arg(&csv)
                .arg("-o")
                .arg(&out)
                .arg("--force"),
        );
        assert_eq!(code, 0, "{err}");
        assert_eq!(names(&out).len(), 4, "{:?}", names(&out));
    }
}

/// Class 5: two outputs of one command naming one file, or one that exists, are refused before
/// anything is written or printed.
#[test]
fn a_commands_files_are_all_written_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x");
    let (code, out, err) = output(
        roofprobe()
            .args(["compare", RUN, "--csv"])
            .arg(&x)
            .arg("--svg")
            .arg(&x)
            .arg("--force"),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("same file"), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));

    let existing = dir.path().join("e.svg");
    std::fs::write(&existing, "keep").unwrap();
    let (code, out, err) = output(
        roofprobe()
            .args(["compare", RUN, "--csv"])
            .arg(dir.path().join("c.csv"))
            .arg("--svg")
            .arg(&existing),
    );
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "no table before the refusal: {out}");
    assert_eq!(names(dir.path()), ["e.svg"]);
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep");
}

/// Class 6: past `ulimit -f`, the write fails with an error line and no temporary file stays.
#[test]
fn a_file_size_limit_is_an_error_line_not_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "ulimit -f 1 && exec '{}' export '{RUN}' -o '{}'",
        env!("CARGO_BIN_EXE_roofprobe"),
        dir.path().join("a.json").display()
    );
    let (code, _, err) = output(Command::new("sh").args(["-c", &script]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("a.json"),
        "{err}"
    );
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

/// Class 8: a malformed `ROOFPROBE_CUDA_INIT_TIMEOUT` is a usage error for `devices`, as for
/// `run`.
#[test]
fn a_malformed_driver_limit_makes_devices_exit_2() {
    let (code, _, err) = output(
        roofprobe()
            .arg("devices")
            .env("ROOFPROBE_CUDA_INIT_TIMEOUT", "soon"),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ROOFPROBE_CUDA_INIT_TIMEOUT"), "{err}");
}

/// The newest committed run's calibration with every memory ceiling at `gbps` and every compute
/// ceiling at `gflops`, the figures derived from them rewritten (ridges) or left out (points,
/// fits), its capacity kept or dropped: a device at the edges of the bounds a reader holds.
fn edge_calibration(dir: &Path, gbps: f64, gflops: f64, capacity: bool) -> PathBuf {
    let text =
        std::fs::read_to_string("results/vm-host-amd-epyc-20261203T184829Z-f90759ee.json").unwrap();
    let mut cal: serde_json::Value = serde_json::from_str(&text).unwrap();
    for m in cal["memory_ceilings"].as_array_mut().unwrap() {
        m["gbps"] = gbps.into();
        if let Some(p) = m.get_mut("plateau").and_then(|p| p.as_object_mut()) {
            p.insert("median_gbps".into(), gbps.into());
        }
    }
    for c in cal["compute_ceilings"].as_array_mut().unwrap() {
        c["gflops"] = gflops.into();
    }
    for r in cal["ridge_points"].as_array_mut().unwrap() {
        r["flop_per_byte"] = (gflops / gbps).into();
    }
    for derived in ["points", "gemm_efficiency", "size_efficiency"] {
        cal[derived] = serde_json::json!([]);
    }
    if !capacity {
        cal["capacity"] = serde_json::Value::Null;
    }
    let path = dir.join(format!("edge-{gbps:e}-{gflops:e}-{capacity}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&cal).unwrap()).unwrap();
    path
}

/// A figure that is not a number in text a tool or a person reads: `inf`, `NaN`, `infinity`,
/// as a word of its own (a comment's `inference` is a word).
fn non_number(text: &str) -> Option<&str> {
    text.split(|c: char| !c.is_ascii_alphabetic())
        .find(|w| ["nan", "inf", "infinity"].contains(&w.to_ascii_lowercase().as_str()))
}

/// Class 2: a device at the edges of the bounds (ceilings of 10^-6 GB/s and GFLOP/s, of 10^6
/// GB/s and 10^8 GFLOP/s, mixed), with the largest workload the arguments take, gives
/// `estimate` (table and JSON) and every export format figures that are all finite; a memory
/// past the bound (`--memory-gib 1e300`, which made `inf` GiB) is refused as a usage error.
#[test]
fn figures_at_the_edges_of_the_bounds_stay_finite_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let most = u64::MAX.to_string();
    for (gbps, gflops) in [(1e-6, 1e-6), (1e6, 1e8), (1e-6, 1e8), (1e6, 1e-6)] {
        let cal = edge_calibration(dir.path(), gbps, gflops, true);
        for mode in [
            vec!["--batch", &most, "--prompt", &most, "--generate", &most],
            vec!["--mode", "training", "--batch", &most, "--seq", &most],
        ] {
            for json in [false, true] {
                let mut cmd = roofprobe();
                cmd.arg("estimate")
                    .arg(&cal)
                    .args(["--model", "llama-3.1-8b"])
                    .args(&mode);
                if json {
                    cmd.arg("--json");
                }
                let (code, out, err) = output(&mut cmd);
                let what = format!("{gbps} GB/s, {gflops} GFLOP/s, {mode:?}, json {json}");
                assert_eq!(code, 0, "{what}: {err}");
                // the table's first line names the mode (`inference`): the figures follow
                let figures = out.lines().skip(1).collect::<Vec<_>>().join("\n");
                assert_eq!(non_number(&figures), None, "{what}: {out}");
                if json {
                    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                    let answer = &v["devices"][0]["answer"];
                    assert!(answer.to_string().len() > 100, "{what}: {answer}");
                    // a non-finite figure would have been written as `null`
                    let phase = if mode[0] == "--mode" {
                        "step"
                    } else {
                        "prefill"
                    };
                    assert!(answer[phase]["time_s"].is_number(), "{what}: {answer}");
                    let capacity = match phase {
                        "step" => &answer["capacity_bytes"],
                        _ => &answer["memory"]["capacity_bytes"],
                    };
                    assert!(capacity.is_number(), "{what}: {answer}");
                }
            }
        }
        for (format, name) in [
            ("calculon", "x.json"),
            ("aiconfigurator", "x.yaml"),
            ("llm-analysis", "x.json"),
            ("llm-viewer", "x.py"),
        ] {
            let out = dir
                .path()
                .join(format!("{gbps:e}-{gflops:e}-{format}-{name}"));
            let (code, _, err) = output(
                roofprobe()
                    .arg("export")
                    .arg(&cal)
                    .args(["--format", format, "-o"])
                    .arg(&out),
            );
            assert_eq!(code, 0, "{format} at {gbps} GB/s, {gflops} GFLOP/s: {err}");
            let text = std::fs::read_to_string(&out).unwrap();
            // YAML's and Python's comments quote the run, not figures
            let code_lines: String = text
                .lines()
                .map(|l| {
                    if name.ends_with(".json") {
                        l
                    } else {
                        l.split('#').next().unwrap()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            assert_eq!(non_number(&code_lines), None, "{format}: {text}");
            if name.ends_with(".json") {
                // a figure that is not finite would be `null`: as many as in the export of the
                // run itself (Calculon's `p2p` scaling is one by design)
                let nulls = |t: &str| {
                    let v: serde_json::Value = serde_json::from_str(t).unwrap();
                    v.to_string().matches("null").count()
                };
                let (code, usual, err) = output(roofprobe().args([
                    "export",
                    "results/vm-host-amd-epyc-20261203T184829Z-f90759ee.json",
                    "--format",
                    format,
                ]));
                assert_eq!(code, 0, "{err}");
                assert_eq!(nulls(&text), nulls(&usual), "{format}: {text}");
            }
        }
    }
    let cal = edge_calibration(dir.path(), 1e6, 1e8, false);
    for (gib, code_wanted) in [("1e300", 2), ("1048577", 2), ("1048576", 0)] {
        let (code, out, err) = output(roofprobe().arg("estimate").arg(&cal).args([
            "--model",
            "llama-3.1-8b",
            "--memory-gib",
            gib,
        ]));
        assert_eq!(code, code_wanted, "--memory-gib {gib}: {err}");
        assert_eq!(
            non_number(&out.lines().skip(1).collect::<String>()),
            None,
            "{out}"
        );
        if code != 0 {
            assert!(err.starts_with("error: --memory-gib is "), "{err}");
            // a long figure is quoted in exponent form, never hundreds of digits
            assert!(err.len() < 200, "{err}");
        }
    }
}

/// Class 6, for `run`: under `ulimit -f` (the shell's own, SIGXFSZ not ignored by anyone but
/// roofprobe) a host run whose CSV outgrows the limit ends with one error line, keeps the rows
/// written before whole (the row that did not fit is cut back, the CSV reads), and leaves no
/// temporary file and no JSON or SVG. The limit is whole 512-byte blocks (`ulimit -f` in a
/// POSIX shell), taken from a run without it: the first block past the first row.
#[test]
fn a_run_under_a_file_size_limit_keeps_whole_rows_and_no_temporary_file() {
    let run = |out: &Path, limit: Option<u64>| {
        let args = format!(
            "'{}' run --device host --quick --size 64KiB --filter copy/f32 --filter scale/f32 -o '{}'",
            env!("CARGO_BIN_EXE_roofprobe"),
            out.display()
        );
        let script = match limit {
            Some(blocks) => format!("ulimit -f {blocks} && exec {args}"),
            None => format!("exec {args}"),
        };
        output(Command::new("sh").args(["-c", &script]))
    };
    let free = tempfile::tempdir().unwrap();
    let (code, _, err) = run(free.path(), None);
    assert!(matches!(code, 0 | 4), "{err}");
    let csv = |dir: &Path| {
        names(dir)
            .into_iter()
            .filter(|n| n.ends_with(".csv"))
            .map(|n| dir.join(n))
            .collect::<Vec<_>>()
    };
    let whole = std::fs::read(&csv(free.path())[0]).unwrap();
    let ends: Vec<usize> = (0..whole.len()).filter(|&i| whole[i] == b'\n').collect();
    assert_eq!(ends.len(), 3, "a header and two rows");
    // a block boundary well past the first row's end (its figures' digits vary by a few bytes
    // between runs) and before the second row's
    let blocks = (ends[1] as u64 + 1 + 40).div_ceil(512);
    assert!(
        blocks * 512 + 40 < ends[2] as u64 + 1,
        "the limit falls inside the second row: {ends:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run(dir.path(), Some(blocks));
    assert_eq!(code, 1, "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].starts_with("error: ") && errors[0].contains("ulimit -f"),
        "{err}"
    );
    let left = names(dir.path());
    assert!(
        left.iter()
            .all(|n| n.ends_with(".csv") && !roofprobe::files::is_temporary(Path::new(n))),
        "only the CSV stays: {left:?}"
    );
    let kept = csv(dir.path());
    assert_eq!(kept.len(), 1, "{left:?}");
    let bytes = std::fs::read(&kept[0]).unwrap();
    assert!(bytes.ends_with(b"\n") && bytes.len() as u64 <= blocks * 512);
    let rows = roofprobe::results::csv::parse_csv(&kept[0], &bytes).unwrap();
    assert_eq!(
        rows.len(),
        1,
        "the first row kept whole, the second cut back: {err}"
    );
    assert_eq!(rows[0].kernel, "copy", "{err}");
}
