//! The comparison of runs (render::compare): its lines, ratios, gaps that say why, and its
//! table, CSV and JSON (snapshots under tests/snapshots/).

use roofprobe::analysis::calibration::{Calibration, FromRecords};
use roofprobe::analysis::fixtures::{invalidate, retime, row, synthetic_run};
use roofprobe::analysis::inputs::Run;
use roofprobe::cases::{Family, Precision};
use roofprobe::render::compare::*;
use roofprobe::results::record::Record;
use roofprobe::text::letter;

/// The synthetic A100 run, and a second device (an RTX 3090 by name) that ran fewer cases,
/// ran one more, and failed one.
pub fn two_runs() -> Vec<Run> {
    let a = synthetic_run();
    let mut b: Vec<Record> = synthetic_run()
        .into_iter()
        .filter(|r| r.family != Family::Intensity && r.family != Family::Tensor)
        .map(|mut r| {
            // half the time: twice the rate
            if let Some(t) = r.time_median_s {
                retime(&mut r, t / 2.0);
            }
            r
        })
        .collect();
    b.push(row(
        Family::Stream,
        "scale",
        Precision::F32,
        None,
        (8 << 20, 1 << 20),
        1e-2,
        true,
    ));
    // the triad of B failed
    for r in b.iter_mut().filter(|r| r.kernel == "triad") {
        invalidate(r, "[5] is 0, should be 7");
    }
    for r in b.iter_mut() {
        r.host = "box".into();
        r.timestamp_utc = "2026-01-02T00:00:00Z".into();
        r.run_id = "box-cuda0-nvidia-geforce-rtx-3090-20260102T000000Z".into();
        r.device_name = "NVIDIA GeForce RTX 3090".into();
        r.compute_capability = "8.6".into();
        r.isa = "sm_86".into();
        r.units = 82;
    }
    let run = |rows: Vec<Record>| Run {
        calibration: Calibration::from_records(&rows, None).unwrap(),
        records: Some(rows),
    };
    vec![run(a), run(b)]
}

#[test]
fn gaps_are_shown_not_dropped() {
    let runs = two_runs();
    let lines = lines(&runs);
    let find = |k: &str| {
        lines
            .iter()
            .find(|l| l.key == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    // only A ran the sweep
    let sweep = find("intensity/fma_chain/f32/16");
    assert_eq!(sweep.cells[1].status, "not run");
    assert_eq!(sweep.ratio(1), None);
    // only B ran scale
    assert_eq!(find("stream/scale/f32").cells[0].status, "not run");
    // B's triad failed
    assert_eq!(find("stream/triad/f32").cells[1].status, "invalid");
    // copy: both ran, B twice as fast; spec ratio 936 / 2039
    let copy = find("stream/copy/f32");
    assert!((copy.ratio(1).unwrap() - 2.0).abs() < 1e-9);
    assert!((copy.spec_ratio(1).unwrap() - 936.0 / 2039.0).abs() < 1e-9);
    // ceilings: f32 peak doubles; RTX 3090 sheet 35.6 vs A100 19.5
    let f32 = find("f32");
    assert!((f32.ratio(1).unwrap() - 2.0).abs() < 1e-9);
    assert!((f32.spec_ratio(1).unwrap() - 35.6 / 19.5).abs() < 1e-9);
    // DRAM ceiling of B is its copy (the triad failed), 2 × 1400
    let dram = find("DRAM");
    assert!((dram.cells[1].measured.unwrap() - 2800.0).abs() < 1e-6);
}

/// A latency case compares in ns per load, from its fastest sample, and the best of a
/// run's rows is the fewest.
#[test]
fn latency_compares_in_ns_per_load_and_the_fewest_is_best() {
    let mut runs = two_runs();
    let chase = |secs: f64| {
        row(
            Family::Latency,
            "ca",
            Precision::I32,
            Some(roofprobe::cases::Param::Count(4)),
            (8000, 0),
            secs,
            true,
        )
    };
    // A: 1000 loads (of a GPU's 8-byte addresses), fastest samples 0.99 µs and 1.98 µs; B:
    // one at 0.495 µs
    runs[0]
        .records
        .as_mut()
        .unwrap()
        .extend([chase(2e-6), chase(1e-6)]);
    let mut b = chase(0.5e-6);
    let like = &runs[1].records.as_ref().unwrap()[0];
    (b.run_id, b.device_name, b.host) = (
        like.run_id.clone(),
        like.device_name.clone(),
        like.host.clone(),
    );
    runs[1].records.as_mut().unwrap().push(b);
    let lines = lines(&runs);
    let l = lines
        .iter()
        .find(|l| l.key == "latency/ca/i32/4")
        .expect("a latency line");
    assert_eq!(l.unit, "ns/load");
    assert!((l.cells[0].measured.unwrap() - 0.99).abs() < 1e-9, "{l:?}");
    assert!((l.cells[1].measured.unwrap() - 0.495).abs() < 1e-9, "{l:?}");
}

/// A launch case compares in µs, from the median per launch (the timer from its least
/// sample), and the best of a run's rows is the fewest.
#[test]
fn launch_compares_in_microseconds_and_the_fewest_is_best() {
    use roofprobe::cases::launch::{self, What};
    let mut runs = two_runs();
    let mut in_run = |what: What, median: f64, run: usize| {
        let mut r = roofprobe::results::fixtures::measured(&launch::case(what), median, true);
        let like = &runs[run].records.as_ref().unwrap()[0];
        (r.run_id, r.device_name, r.host) = (
            like.run_id.clone(),
            like.device_name.clone(),
            like.host.clone(),
        );
        runs[run].records.as_mut().unwrap().push(r);
    };
    in_run(What::Empty, 4e-6, 0);
    in_run(What::Empty, 3e-6, 0);
    in_run(What::Empty, 6e-6, 1);
    in_run(What::Timer, 1e-6, 1);
    let lines = lines(&runs);
    let find = |key: &str| lines.iter().find(|l| l.key == key).expect(key);
    let empty = find("launch/empty/i32");
    assert_eq!(empty.unit, "µs");
    assert!(
        (empty.cells[0].measured.unwrap() - 3.0).abs() < 1e-9,
        "{empty:?}"
    );
    assert!(
        (empty.cells[1].measured.unwrap() - 6.0).abs() < 1e-9,
        "{empty:?}"
    );
    // the timer's figure is its least sample: 0.9 of the median
    let timer = find("launch/timer/i32");
    assert!(
        (timer.cells[1].measured.unwrap() - 0.9).abs() < 1e-9,
        "{timer:?}"
    );
    assert_eq!(timer.cells[0].status, "not run");
}

/// A capacity case compares its figure in GiB: the most is the best, except for the
/// context's cost, where the least is.
#[test]
fn capacity_compares_in_gib_and_a_context_is_best_smallest() {
    let mut runs = two_runs();
    let figure = |kernel: &str, gib: u64, run: usize| {
        let mut r = row(
            Family::Capacity,
            kernel,
            Precision::U8,
            None,
            (8, 0),
            1e-5,
            true,
        );
        r.working_set_bytes = gib << 30;
        r.elements = gib << 30;
        let like = &runs[run].records.as_ref().unwrap()[0];
        (r.run_id, r.device_name, r.host) = (
            like.run_id.clone(),
            like.device_name.clone(),
            like.host.clone(),
        );
        r
    };
    let a = [
        figure("largest", 70, 0),
        figure("context", 2, 0),
        figure("context", 1, 0),
    ];
    let b = [figure("largest", 20, 1)];
    runs[0].records.as_mut().unwrap().extend(a);
    runs[1].records.as_mut().unwrap().extend(b);
    let lines = lines(&runs);
    let largest = lines
        .iter()
        .find(|l| l.key == "capacity/largest/u8")
        .expect("a capacity line");
    assert_eq!(largest.unit, "GiB");
    assert_eq!(largest.cells[0].measured, Some(70.0));
    assert_eq!(largest.cells[1].measured, Some(20.0));
    let context = lines
        .iter()
        .find(|l| l.key == "capacity/context/u8")
        .unwrap();
    assert_eq!(context.cells[0].measured, Some(1.0));
}

/// A link case compares in GB/s, the copy's bytes over its time, each run's figure held
/// against the nominal rate of the PCIe link its row's note recorded (none where the note
/// says the link was not known).
#[test]
fn link_compares_in_gb_per_s_against_the_link_each_row_saw() {
    use roofprobe::cases::link::{self, PcieLink, Transfer};
    let mut runs = two_runs();
    let copy = |secs: f64, generation: Option<u32>, run: usize| {
        let mut r = roofprobe::results::fixtures::measured(
            &link::case(Transfer::HostToDevice, 1 << 30),
            secs,
            true,
        );
        r.note = link::link_note(
            generation
                .map(|g| {
                    (
                        PcieLink {
                            generation: g,
                            width: 16,
                        },
                        None,
                    )
                })
                .ok_or_else(|| "NVML absent".to_string()),
        );
        let like = &runs[run].records.as_ref().unwrap()[0];
        (r.run_id, r.device_name, r.host) = (
            like.run_id.clone(),
            like.device_name.clone(),
            like.host.clone(),
        );
        r
    };
    let a = copy(0.02, Some(5), 0);
    let b = copy(0.04, None, 1);
    runs[0].records.as_mut().unwrap().push(a);
    runs[1].records.as_mut().unwrap().push(b);
    let lines = lines(&runs);
    let line = lines
        .iter()
        .find(|l| l.key == "link/host_to_device_memcpy_ce/u8/1048576")
        .expect("a link line");
    assert_eq!(line.unit, "GB/s");
    let gb = (1u64 << 30) as f64 / 1e9;
    assert!((line.cells[0].measured.unwrap() - gb / 0.02).abs() < 1e-9);
    assert!((line.ratio(1).unwrap() - 0.5).abs() < 1e-9);
    assert!((line.cells[0].spec.unwrap() - 63.015).abs() < 0.01);
    assert_eq!(line.cells[1].spec, None);
}

#[test]
fn calibration_only_runs_have_ceilings_but_no_cases() {
    let mut runs = two_runs();
    runs[1].records = None;
    let lines = lines(&runs);
    let copy = lines.iter().find(|l| l.key == "stream/copy/f32").unwrap();
    assert_eq!(copy.cells[1].status, "no rows");
    assert!(lines.iter().find(|l| l.key == "DRAM").unwrap().cells[1]
        .measured
        .is_some());
}

#[test]
fn table_and_csv_snapshots() {
    let runs = two_runs();
    insta::assert_snapshot!("compare_table", table(&runs));
    let csv = String::from_utf8(csv(&runs)).unwrap();
    assert!(csv.starts_with("section,key,unit,run,run_id,device_name,microarch,isa,uuid,host,measured,spec,status,ratio_to_a,spec_ratio_to_a\n"));
    insta::assert_snapshot!("compare_csv", csv);
}

/// The header written before the rows is the one serde writes for them.
#[test]
fn the_written_header_is_serdes() {
    let runs = two_runs();
    let lines = lines(&runs);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(rows(&lines, &runs).next().unwrap()).unwrap();
    let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
    assert_eq!(text.lines().next().unwrap(), CSV_HEADER.join(","));
}

/// Calibrations without a ceiling have nothing to compare: the CSV still has its header
/// (it was an empty file, which fuzzing found).
#[test]
fn nothing_to_compare_still_writes_the_header() {
    let mut runs = two_runs();
    for run in &mut runs {
        run.records = None;
        run.calibration.memory_ceilings.clear();
        run.calibration.compute_ceilings.clear();
    }
    assert!(lines(&runs).is_empty());
    assert!(table(&runs).contains("Nothing to compare"));
    let csv = String::from_utf8(csv(&runs)).unwrap();
    assert_eq!(csv, format!("{}\n", CSV_HEADER.join(",")));
}

/// The two VMs: both "AMD EPYC" on host "vm", one a Zen 5 running AVX-512, one a
/// Zen 3 running AVX2. Their identity tells them apart in the table, the titles and the CSV.
#[test]
fn two_machines_of_one_name_are_told_apart() {
    let vm = |stamp: &str, model: &str, microarch: &str, isa: &str| {
        let rows: Vec<Record> = synthetic_run()
            .into_iter()
            .filter(|r| r.family == Family::Stream)
            .map(|mut r| {
                r.backend = roofprobe::device::BackendKind::Host;
                r.device_id = "host".into();
                r.device_name = "AMD EPYC".into();
                r.compute_capability.clear();
                r.host = "vm".into();
                r.run_id = format!("vm-host-amd-epyc-{stamp}");
                r.vendor = "AuthenticAMD".into();
                r.cpu_family = if microarch == "Zen 5" { "26" } else { "25" }.into();
                r.cpu_model = model.into();
                r.microarch = microarch.into();
                r.isa = isa.into();
                r
            })
            .collect();
        Run {
            calibration: Calibration::from_records(&rows, None).unwrap(),
            records: Some(rows),
        }
    };
    let runs = [
        vm("20261130T082122Z", "2", "Zen 5", "AVX-512F"),
        vm("20261201T100000Z", "1", "Zen 3", "AVX2+FMA"),
    ];
    let text = table(&runs);
    assert!(
        text.contains("[A] AMD EPYC (host CPU, Zen 5, AVX-512F) on vm"),
        "{text}"
    );
    assert!(
        text.contains("[B] AMD EPYC (host CPU, Zen 3, AVX2+FMA) on vm"),
        "{text}"
    );
    assert!(text.contains("family 26, model 2, microarchitecture Zen 5"));
    assert!(text.contains("family 25, model 1, microarchitecture Zen 3"));
    let csv = String::from_utf8(csv(&runs)).unwrap();
    assert!(csv.contains(",AMD EPYC,Zen 5,AVX-512F,,vm,"), "{csv}");
    assert!(csv.contains(",AMD EPYC,Zen 3,AVX2+FMA,,vm,"), "{csv}");
}

#[test]
fn json_has_the_runs_and_the_csv_rows() {
    let runs = two_runs();
    let v: serde_json::Value = serde_json::from_str(&json(&runs)).unwrap();
    assert_eq!(v["runs"][1]["run"], "B");
    assert_eq!(v["runs"][1]["device"]["name"], "NVIDIA GeForce RTX 3090");
    assert_eq!(v["runs"][1]["device"]["identity"]["isa"], "sm_86");
    assert_eq!(v["runs"][0]["has_cases"], true);
    let rows = v["rows"].as_array().unwrap();
    let csv_rows = String::from_utf8(csv(&runs)).unwrap().lines().count() - 1;
    assert_eq!(rows.len(), csv_rows);
    let copy_b = rows
        .iter()
        .find(|r| r["key"] == "stream/copy/f32" && r["run"] == "B")
        .unwrap();
    assert_eq!(copy_b["ratio_to_a"], 2.0);
    assert_eq!(copy_b["status"], "ok");
}

/// `r` as a row of the run `first` is of (its run, host, time and device).
fn of_run(mut r: Record, first: &Record) -> Record {
    r.run_id.clone_from(&first.run_id);
    r.host.clone_from(&first.host);
    r.timestamp_utc.clone_from(&first.timestamp_utc);
    r.device_name.clone_from(&first.device_name);
    r.compute_capability.clone_from(&first.compute_capability);
    r.isa.clone_from(&first.isa);
    r.units = first.units;
    r
}

/// Cache rows are bandwidths: GB/s in the lines, the table and the CSV, like the memory
/// ceilings, never GOP/s for their i32 elements; an integer peak stays GOP/s.
#[test]
fn cache_rows_are_bandwidths() {
    let mut runs = two_runs();
    for run in &mut runs {
        let rows = run.records.as_mut().unwrap();
        let first = rows[0].clone();
        for (family, kernel, param, work) in [
            (
                Family::Cache,
                "l2",
                Some(roofprobe::cases::Param::Count(4096)),
                (1u64 << 30, 0),
            ),
            (Family::Peak, "fma", None, (0, 1u64 << 40)),
        ] {
            rows.push(of_run(
                row(family, kernel, Precision::I32, param, work, 1e-3, true),
                &first,
            ));
        }
        run.calibration = Calibration::from_records(rows, None).unwrap();
    }
    let lines = lines(&runs);
    let unit = |key: &str| lines.iter().find(|l| l.key == key).unwrap().unit;
    assert_eq!(unit("cache/l2/i32/4096"), "GB/s");
    assert_eq!(unit("L2"), "GB/s");
    assert_eq!(unit("peak/fma/i32"), "GOP/s");
    assert_eq!(unit("i32"), "GOP/s");
    let table = table(&runs);
    let cache_row = table
        .lines()
        .find(|l| l.starts_with("cache/l2/i32/4096"))
        .unwrap();
    assert!(cache_row.contains(" GB/s "), "{cache_row}");
    let csv = String::from_utf8(csv(&runs)).unwrap();
    assert!(csv.contains("case,cache/l2/i32/4096,GB/s,A,"), "{csv}");
    assert!(csv.contains("case,cache/l2/i32/4096,GB/s,B,"), "{csv}");
    assert!(!csv.contains("cache/l2/i32/4096,GOP/s"));
}

/// `intensity/fma/*/0` does no arithmetic (k = 0): it compares its GB/s, as it measured
/// them, where it read `no figure` under a GFLOP/s unit; k = 1 stays GFLOP/s.
#[test]
fn an_intensity_row_without_arithmetic_compares_its_bandwidth() {
    let mut runs = two_runs();
    for (i, run) in runs.iter_mut().enumerate() {
        let rows = run.records.as_mut().unwrap();
        let first = rows[0].clone();
        for k in [0u32, 1] {
            let bytes: u64 = 8 << 20;
            let r = row(
                Family::Intensity,
                "fma",
                Precision::F32,
                Some(roofprobe::cases::Param::Count(k)),
                (bytes, u64::from(k) * (1 << 20)),
                bytes as f64 / (100e9 * (i + 1) as f64),
                true,
            );
            rows.push(of_run(r, &first));
        }
        run.calibration = Calibration::from_records(rows, None).unwrap();
    }
    let lines = lines(&runs);
    let line = |key: &str| lines.iter().find(|l| l.key == key).unwrap();
    let k0 = line("intensity/fma/f32/0");
    assert_eq!(k0.unit, "GB/s");
    let measured: Vec<Option<f64>> = k0.cells.iter().map(|c| c.measured).collect();
    assert!(
        (measured[0].unwrap() - 100.0).abs() < 1e-6 && (measured[1].unwrap() - 200.0).abs() < 1e-6,
        "{measured:?}"
    );
    assert!(k0.cells.iter().all(|c| c.status == "ok"));
    assert_eq!(k0.ratio(1), Some(2.0));
    assert_eq!(line("intensity/fma/f32/1").unit, "GFLOP/s");
    let table = table(&runs);
    let k0_row = table
        .lines()
        .find(|l| l.starts_with("intensity/fma/f32/0 "))
        .unwrap();
    assert!(
        k0_row.contains(" GB/s ") && !k0_row.contains("no figure"),
        "{k0_row}"
    );
}

#[test]
fn letters() {
    assert_eq!(letter(0), "A");
    assert_eq!(letter(25), "Z");
    assert_eq!(letter(26), "AA");
    assert_eq!(letter(27), "AB");
}
