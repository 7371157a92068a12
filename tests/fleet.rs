//! `roofprobe fleet` over a checked-in host run of `results/` and two copies of it under other run
//! ids (its peers), plus a planted slow run: a copy whose STREAM rows take 1/0.8 of the time (so
//! their bandwidths, which the reader re-derives from bytes and time, are 80 %). It must be the
//! one run flagged, with exit code 4; the same files without it flag nothing.

use assert_cmd::Command;
use roofprobe::cases::Family;
use roofprobe::results::csv::{read_csv, to_csv_bytes};
use roofprobe::results::record::SCHEMA;
use std::path::{Path, PathBuf};

fn roofprobe() -> Command {
    Command::cargo_bin("roofprobe").unwrap()
}

/// The checked-in results CSVs.
fn results() -> Vec<PathBuf> {
    let v = crate::common::checked_in("csv");
    assert!(v.len() >= 3, "results/ holds {} CSVs", v.len());
    v
}

/// A copy of `from` as another run (`run_id`), its STREAM rows slowed to `scale` of their
/// bandwidth.
fn planted(from: &Path, run_id: &str, scale: f64, to: &Path) {
    let mut rows = read_csv(from).unwrap();
    for r in &mut rows {
        r.run_id = run_id.into();
        // written as this version writes: schema 2, whose measured rows say why sampling
        // stopped (the checked-in runs are of schema 1, which has no such column; they took a
        // fixed count of samples)
        r.schema = SCHEMA.into();
        if r.time_median_s.is_some() && r.stopped_by.is_empty() {
            r.stopped_by = "count".into();
        }
        if r.family == Family::Stream && r.valid {
            r.scale_speed(scale);
        }
    }
    std::fs::write(to, to_csv_bytes(&rows)).unwrap();
}

#[test]
fn fleet_flags_the_planted_slow_run_with_exit_4() {
    let dir = tempfile::tempdir().unwrap();
    // One real run and two copies of it as further runs of its machine: peers by construction.
    // (The checked-in runs of one machine need not agree: a VM's memory switches modes, and a
    // run taken in the slow one is rightly flagged among them.)
    let source = &results()[0];
    let mut files = vec![source.clone()];
    for peer in ["peer-run-a", "peer-run-b"] {
        let p = dir.path().join(format!("{peer}.csv"));
        planted(source, peer, 1.0, &p);
        files.push(p);
    }
    let slow = dir.path().join("slow.csv");
    planted(source, "planted-slow-run", 0.8, &slow);

    // The peers alone: none flagged.
    let out = roofprobe().arg("fleet").args(&files).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("no run flagged"), "{stdout}");

    // With the slow copy, and the first CSV given twice: flagged, 4, the duplicate said.
    let (csv, json, plots) = (
        dir.path().join("fleet.csv"),
        dir.path().join("fleet.json"),
        dir.path().join("plots"),
    );
    let run = || {
        roofprobe()
            .arg("fleet")
            .args(&files)
            .arg(&files[0])
            .arg(&slow)
            .arg("--csv")
            .arg(&csv)
            .arg("--json")
            .arg(&json)
            .arg("--out")
            .arg(&plots)
            .output()
            .unwrap()
    };
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stdout}{stderr}");
    assert!(stdout.contains("1 run(s) flagged"), "{stdout}");
    assert!(stdout.contains("counted once"), "{stdout}");
    let flagged: Vec<&str> = stdout.lines().filter(|l| l.contains("SLOW:")).collect();
    assert_eq!(flagged.len(), 1, "{stdout}");
    assert!(flagged[0].contains("planted-slow-run"), "{stdout}");
    assert!(flagged[0].contains("DRAM 0.8"), "{stdout}");

    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let runs: Vec<&serde_json::Value> = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["runs"].as_array().unwrap())
        .collect();
    assert_eq!(runs.len(), files.len() + 1, "each run once");
    assert_eq!(report["duplicates"].as_array().unwrap().len(), 1);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text
        .lines()
        .any(|l| l.contains("planted-slow-run") && l.contains(",DRAM,") && l.contains(",true,")));
    let dram = plots.join("fleet-dram.svg");
    let svg = std::fs::read_to_string(&dram).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let crossed = doc.descendants().filter(|n| n.has_tag_name("path")).count();
    assert_eq!(crossed, 1, "one flagged run marked");

    // Nothing is overwritten without --force: a usage error, the file as it was.
    let out = run();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), text);
}

#[test]
fn fleet_refuses_bad_input_and_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "not,a,roofprobe,csv\n1,2,3,4\n").unwrap();
    let out = roofprobe().arg("fleet").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.lines().count() == 1,
        "{stderr}"
    );
    for t in ["0", "1.5", "nan", "-1"] {
        let out = roofprobe()
            .args(["fleet", "--threshold", t])
            .args(results())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--threshold {t}");
    }
}
