//! The fleet report (render::fleet): runs grouped by device and driver, each metric's median
//! and MAD, the slow run flagged against its peers, duplicates counted once; its table, CSV,
//! JSON and strip plots. Then the command:
//!
//! `roofprobe fleet` over a checked-in host run of `results/` and two copies of it under other run
//! ids (its peers), plus a planted slow run: a copy whose STREAM rows take 1/0.8 of the time (so
//! their bandwidths, which the reader re-derives from bytes and time, are 80 %). It must be the
//! one run flagged, with exit code 4; the same files without it flag nothing.

use assert_cmd::Command;
use roofprobe::analysis::calibration::{Calibration, FromRecords};
use roofprobe::analysis::fixtures::synthetic_run;
use roofprobe::analysis::inputs::Run;
use roofprobe::cases::Family;
use roofprobe::render::fleet::*;
use roofprobe::render::svg::axis::linear_step;
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

#[test]
fn ticks_stay_few_whatever_the_range() {
    assert!((linear_step(0.9) - 0.1).abs() < 1e-12);
    assert!((linear_step(0.35) - 0.025).abs() < 1e-12);
    for range in [0.04, 0.9, 3.0, 1e3, 1e12, 1e300] {
        let n = range / linear_step(range);
        assert!((1.0..=15.0).contains(&n), "{range}: {n} ticks");
    }
}

/// A run of the synthetic device, every figure scaled by `scale`, under its own run id.
pub fn run(id: &str, scale: f64) -> (PathBuf, Run) {
    let mut rows = synthetic_run();
    for r in &mut rows {
        r.run_id = id.into();
        r.scale_speed(scale);
    }
    let calibration = Calibration::from_records(&rows, None).unwrap();
    (
        PathBuf::from(format!("{id}.csv")),
        Run {
            calibration,
            records: Some(rows),
        },
    )
}

#[test]
fn the_slow_run_is_flagged_and_its_peers_are_not() {
    let fleet = analyse(
        vec![
            run("a", 1.0),
            run("b", 1.02),
            run("c", 0.99),
            run("slow", 0.8),
        ],
        DEFAULT_THRESHOLD,
    );
    assert_eq!(fleet.groups.len(), 1);
    let g = &fleet.groups[0];
    let dram = g.metrics.iter().find(|m| m.metric == "DRAM").unwrap();
    let base = run("a", 1.0).1.calibration.memory_ceilings[0].gbps.unwrap();
    // median of 0.8, 0.99, 1.0, 1.02 = 0.995
    assert!((dram.median / base - 0.995).abs() < 1e-9, "{dram:?}");
    assert!((dram.mad / base - 0.015).abs() < 1e-9, "{dram:?}");
    let flagged: Vec<&str> = fleet.flagged().map(|r| r.run_id.as_str()).collect();
    assert_eq!(flagged, ["slow"]);
    let slow = &g.runs[3];
    assert!(
        slow.verdict.starts_with("SLOW: DRAM 0.80"),
        "{}",
        slow.verdict
    );
    assert!(g.runs[..3].iter().all(|r| r.verdict == "ok"));
    // a looser threshold flags nothing
    let fleet = analyse(vec![run("a", 1.0), run("b", 1.0), run("s", 0.8)], 0.75);
    assert_eq!(fleet.flagged().count(), 0);
}

/// The host link's pinned asymptotes are fleet metrics, one per direction, judged like the
/// others: a run whose host-to-device bandwidth trails its peers' is flagged for it.
#[test]
fn link_bandwidths_are_metrics_and_a_slow_link_is_flagged() {
    let with_link = |id: &str, h2d: f64| {
        let (path, mut r) = run(id, 1.0);
        r.calibration.link = Some(roofprobe_calibration::Link {
            pcie: "PCIe Gen5 x16".into(),
            nominal_gbps: Some(63.0),
            transfers: [
                "host_to_device_memcpy_ce",
                "device_to_host_memcpy_ce",
                "host_to_device_pageable_memcpy_ce",
            ]
            .iter()
            .map(|k| roofprobe_calibration::LinkTransfer {
                kernel: k.to_string(),
                latency_s: 1e-5,
                bandwidth_gbps: if k.starts_with("host_to_device_memcpy") {
                    h2d
                } else {
                    50.0
                },
                sizes: 10,
            })
            .collect(),
        });
        (path, r)
    };
    let fleet = analyse(
        vec![
            with_link("a", 52.0),
            with_link("b", 53.0),
            with_link("c", 51.0),
            with_link("x16-at-x4", 13.0),
        ],
        DEFAULT_THRESHOLD,
    );
    let names: Vec<String> = metric_names(&fleet).into_iter().map(|(m, _)| m).collect();
    assert!(
        names.contains(&"link host_to_device_memcpy_ce".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"link device_to_host_memcpy_ce".to_string()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("pageable")), "{names:?}");
    let flagged: Vec<&str> = fleet.flagged().map(|r| r.run_id.as_str()).collect();
    assert_eq!(flagged, ["x16-at-x4"]);
    let slow = fleet.groups[0]
        .runs
        .iter()
        .find(|r| r.run_id == "x16-at-x4")
        .unwrap();
    assert!(
        slow.verdict.contains("link host_to_device_memcpy_ce"),
        "{}",
        slow.verdict
    );
}

#[test]
fn two_runs_are_not_judged_and_duplicates_count_once() {
    let fleet = analyse(vec![run("a", 1.0), run("slow", 0.5)], DEFAULT_THRESHOLD);
    assert_eq!(fleet.flagged().count(), 0);
    assert!(fleet.groups[0].runs[1].verdict.starts_with("not judged"));
    // the slow run given three times is one run: of three, it is the one flagged
    let fleet = analyse(
        vec![
            run("a", 1.0),
            run("slow", 0.5),
            run("slow", 0.5),
            run("b", 1.0),
            run("slow", 0.5),
        ],
        DEFAULT_THRESHOLD,
    );
    assert_eq!(fleet.run_count(), 3);
    assert_eq!(fleet.duplicates.len(), 1);
    assert_eq!(fleet.duplicates[0].files.len(), 3);
    assert!(!fleet.duplicates[0].differ);
    assert_eq!(fleet.flagged().count(), 1);
    // the same run id with other figures: said so
    let fleet = analyse(vec![run("a", 1.0), run("a", 0.5)], DEFAULT_THRESHOLD);
    assert!(fleet.duplicates[0].differ);
}

#[test]
fn groups_by_device_and_driver_and_verdicts_name_the_conditions() {
    let mut other = run("other-driver", 0.5);
    other.1.calibration.device.driver = "999.1".into();
    let (path, mut throttled) = run("hot", 0.7);
    if let Some(rows) = &mut throttled.records {
        rows[0].throttle = "sw_power_cap;applications_clocks".into();
        rows[1].other_gpu_processes = Some(2);
    }
    let fleet = analyse(
        vec![run("a", 1.0), other, run("b", 1.0), (path, throttled)],
        DEFAULT_THRESHOLD,
    );
    assert_eq!(fleet.groups.len(), 2);
    assert_eq!(fleet.groups[1].runs[0].run_id, "other-driver");
    let hot = fleet.flagged().next().unwrap();
    assert_eq!(hot.run_id, "hot");
    assert!(
        hot.verdict
            .contains("throttled (sw_power_cap), other GPU processes (2)"),
        "{}",
        hot.verdict
    );
}

#[test]
fn outputs_carry_every_run_and_the_plot_is_well_formed() {
    let mut fleet = analyse(
        vec![run("a", 1.0), run("b", 1.0), run("<slow&\"", 0.8)],
        DEFAULT_THRESHOLD,
    );
    fleet.groups[0].device_name = "=cmd|' /C calc'!A0".into();
    let csv = String::from_utf8(csv(&fleet)).unwrap();
    let rows = csv.lines().count() - 1;
    let metrics: usize = fleet.groups[0].runs.iter().map(|r| r.metrics.len()).sum();
    assert_eq!(rows, metrics);
    assert!(csv.contains("'=cmd"), "spreadsheet-safe: {csv}");
    // the written header is the one serde would write for the rows
    let mut serde_header = csv::Writer::from_writer(Vec::new());
    let r = &fleet.groups[0].runs[0];
    serde_header
        .serialize(CsvRow {
            device_name: String::new(),
            backend: "",
            driver: String::new(),
            run_id: String::new(),
            host: String::new(),
            device_id: String::new(),
            metric: String::new(),
            unit: "",
            value: r.metrics[0].value,
            peer_median: None,
            peer_mad: None,
            peers: 0,
            ratio: None,
            flagged: false,
            run_flagged: false,
            conditions: String::new(),
            verdict: String::new(),
        })
        .unwrap();
    let serde_header = String::from_utf8(serde_header.into_inner().unwrap()).unwrap();
    assert_eq!(csv.lines().next(), serde_header.lines().next());
    let back: serde_json::Value = serde_json::from_str(&json(&fleet)).unwrap();
    assert_eq!(back["groups"][0]["runs"][2]["flagged"], true);
    let svg = strip_svg(&fleet, "DRAM").unwrap();
    assert!(svg.contains("&lt;slow&amp;&quot;"), "{svg}");
    assert!(!svg.contains("<slow"));
    assert!(svg.matches(FLAG_COLOR).count() > 2);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let dots = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle"))
        .count();
    assert_eq!(dots, 3);
    assert!(strip_svg(&fleet, "no such metric").is_none());
    assert_eq!(strip_stem("tensor f16.f32"), "fleet-tensor-f16-f32");
    // no measured metric anywhere: the header alone, never an empty file
    for g in &mut fleet.groups {
        for r in &mut g.runs {
            r.metrics.clear();
        }
    }
    let empty = String::from_utf8(roofprobe::render::fleet::csv(&fleet)).unwrap();
    assert_eq!(empty, format!("{}\n", CSV_HEADER.join(",")));
}
