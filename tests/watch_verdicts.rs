//! The watch's verdicts (analysis::watch) on readings written here: a reading placed in the
//! roofline's units, each verdict's rule, four phases getting their four verdicts, memory growing
//! to full called capacity before a sample sees it, and a calibration of another model refused
//! unless forced. tests/watch.rs runs `roofprobe watch` against the simulated driver.

use roofprobe::analysis::calibration::Calibration;
use roofprobe::analysis::watch::*;
use roofprobe::backend::watch::{Reading, Signal, WatchedDevice};
use roofprobe::cases::Precision;
use roofprobe::device::DeviceInfo;
use roofprobe::device::{BackendKind, Identity};
use roofprobe::results::timeline::TimelineRow;

fn device(signal: Signal) -> WatchedDevice {
    WatchedDevice {
        info: DeviceInfo {
            backend: BackendKind::Cuda,
            id: "cuda:0".into(),
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: "9.0".into(),
            units: 132,
            clock_mhz: Some(1980.0),
            memory_clock_mhz: Some(2619.0),
            memory_bus_bits: Some(5120),
            llc_bytes: 50 << 20,
            caches: Vec::new(),
            memory_total_bytes: 80 << 30,
            memory_free_bytes: 0,
            driver: String::new(),
            identity: Identity::default(),
            extra: Vec::new(),
        },
        signal,
        signal_why: Vec::new(),
        unseen: Vec::new(),
        power_limit_w: Some(700.0),
    }
}

fn ceilings() -> Ceilings {
    let c = |m: f64, s: f64| Ceiling {
        measured: Some(m),
        measured_by: "x".into(),
        spec: Some(s),
        spec_basis: "sheet".into(),
    };
    Ceilings {
        dram_gbps: c(3000.0, 3350.0),
        pipes: Pipe::ALL
            .iter()
            .map(|&pipe| PipeCeiling {
                pipe,
                label: format!("{pipe:?}"),
                precision: Precision::Bf16F32,
                ceiling: c(600_000.0, 989_000.0),
            })
            .collect(),
        capacity: Some(Capacity {
            usable_bytes: 79 << 30,
            basis: "measured".into(),
        }),
        sources: Vec::new(),
    }
}

/// A reading of the scripted levels: SM, DRAM, tensor %, memory in use (GiB).
fn reading(sm: f64, dram: f64, tensor: f64, gib: f64) -> Reading {
    Reading {
        span_secs: 0.5,
        memory_used_bytes: Some((gib * (1u64 << 30) as f64) as u64),
        memory_total_bytes: Some(80 << 30),
        sm_active_pct: Some(sm),
        dram_active_pct: Some(dram),
        tensor_active_pct: Some(tensor),
        tensor_f16_pct: Some(tensor),
        fp32_active_pct: Some(2.0),
        ..Reading::default()
    }
}

fn rows_of(readings: &[Reading], device: &WatchedDevice, ceilings: &Ceilings) -> Vec<TimelineRow> {
    let ctx = Context {
        device,
        ceilings,
        watch_id: "w",
        host: "h",
        pid: None,
    };
    readings
        .iter()
        .enumerate()
        .map(|(i, r)| place(&ctx, r, 0.5 * (i + 1) as f64, String::new()))
        .collect()
}

/// The units: DRAM activity against the spec peak, placed under the measured ceiling; the
/// busiest pipe's activity times its measured peak; intensity their ratio.
#[test]
fn a_reading_is_placed_in_the_rooflines_units() {
    let (d, c) = (device(Signal::Gpm), ceilings());
    let row = &rows_of(&[reading(95.0, 80.0, 5.0, 40.0)], &d, &c)[0];
    assert!((row.dram_gbps.unwrap() - 0.8 * 3350.0).abs() < 1e-6);
    assert_eq!(row.dram_ceiling_gbps, Some(3000.0));
    assert_eq!(row.dram_basis, "measured");
    assert!((row.compute_gflops.unwrap() - 0.05 * 600_000.0).abs() < 1e-6);
    assert_eq!(row.compute_pipe, "TensorF16");
    assert!((row.flop_per_byte.unwrap() - 30_000.0 / 2680.0).abs() < 1e-9);
    assert_eq!(row.verdict, "bandwidth");
    // without a spec figure the activity is taken against the measured ceiling, and said
    let mut no_spec = c.clone();
    no_spec.dram_gbps.spec = None;
    let row = &rows_of(&[reading(95.0, 80.0, 5.0, 40.0)], &d, &no_spec)[0];
    assert!((row.dram_gbps.unwrap() - 2400.0).abs() < 1e-6);
    assert!(
        row.dram_basis.contains("no spec figure"),
        "{}",
        row.dram_basis
    );
}

#[test]
fn each_verdict_has_its_rule() {
    let l = |mem: f64, sm: f64, dram: f64, pipe: f64| Levels {
        memory_fraction: Some(mem),
        sm_pct: Some(sm),
        dram_pct: Some(dram),
        pipe_pct: Some(pipe),
        ..Levels::default()
    };
    let g = |x: Levels| classify(&x, Signal::Gpm, 132);
    assert_eq!(g(l(0.97, 90.0, 80.0, 5.0)), Verdict::Capacity);
    assert_eq!(g(l(0.5, 95.0, 80.0, 5.0)), Verdict::Bandwidth);
    assert_eq!(g(l(0.5, 98.0, 20.0, 85.0)), Verdict::Compute);
    assert_eq!(g(l(0.5, 12.0, 3.0, 2.0)), Verdict::Idle);
    assert_eq!(g(l(0.5, 90.0, 30.0, 30.0)), Verdict::Latency);
    let u = |gpu: f64, mc: f64| Levels {
        gpu_util_pct: Some(gpu),
        memory_util_pct: Some(mc),
        ..Levels::default()
    };
    let coarse = |x: Levels| classify(&x, Signal::Utilisation, 132);
    assert_eq!(coarse(u(100.0, 80.0)), Verdict::Bandwidth);
    assert_eq!(coarse(u(100.0, 20.0)), Verdict::Busy);
    assert_eq!(coarse(u(20.0, 5.0)), Verdict::Idle);
}

/// Four phases (bandwidth, compute, idle gaps, memory growing to full) are found as four,
/// in order, each with its verdict and its figures, a noisy sample or a straddling one
/// notwithstanding.
#[test]
fn four_phases_get_their_four_verdicts() {
    let mut readings = Vec::new();
    for i in 0..20 {
        let jitter = if i % 3 == 0 { 1.5 } else { -1.0 };
        readings.push(reading(95.0 + jitter, 80.0 + jitter, 5.0, 40.0));
    }
    // a sample straddling the change
    readings.push(reading(96.0, 50.0, 45.0, 40.0));
    for _ in 0..20 {
        readings.push(reading(98.0, 15.0, 85.0, 40.0));
    }
    for i in 0..20 {
        readings.push(reading(12.0, 3.0, if i == 7 { 30.0 } else { 2.0 }, 40.0));
    }
    for i in 0..20 {
        readings.push(reading(60.0, 30.0, 30.0, 40.0 + 39.5 * (i as f64 / 19.0)));
    }
    let (d, c) = (device(Signal::Gpm), ceilings());
    let rows = rows_of(&readings, &d, &c);
    let s = summarise(&d, &c, &rows);
    let verdicts: Vec<Verdict> = s.phases.iter().map(|p| p.verdict).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Bandwidth,
            Verdict::Compute,
            Verdict::Idle,
            Verdict::Capacity
        ],
        "{:#?}",
        s.phases
    );
    let bw = &s.phases[0];
    assert!((bw.dram_gbps.unwrap() / (0.8 * 3350.0) - 1.0).abs() < 0.05);
    assert!(bw.figure.contains("of the measured"), "{}", bw.figure);
    let compute = &s.phases[1];
    assert!((compute.compute_gflops.unwrap() / (0.85 * 600_000.0) - 1.0).abs() < 0.05);
    // 39.5 GiB in 19 samples of 0.5 s
    let growth = s.phases[3].memory_growth_bytes_per_s.unwrap();
    assert!(
        (growth / (39.5 * (1u64 << 30) as f64 / 9.5) - 1.0).abs() < 0.01,
        "{growth}"
    );
    assert_eq!(s.verdict, Some(Verdict::Capacity));
    assert!(s.phases[3].remedies[0].contains("checkpointing"));
    assert!(s.phases[2].remedies[0].contains("data loader"));
}

/// An allocation that fails falls between two samples: memory past [`RISK`] and growing
/// into [`FULL`] within the horizon is capacity before any sample sees it full; growth far
/// from full, or memory that stays put, is not. The samples after the fall are no part of
/// the growth, and the fall is said.
#[test]
fn memory_growing_into_full_is_capacity_before_a_sample_sees_it() {
    let (d, c) = (device(Signal::Gpm), ceilings());
    let run = |gib: &[f64]| {
        let readings: Vec<Reading> = gib.iter().map(|&g| reading(60.0, 30.0, 30.0, g)).collect();
        let rows = rows_of(&readings, &d, &c);
        (runs_full(&rows), phases(&rows, Signal::Gpm, 132))
    };
    // 79 GiB usable: 66.4 GiB grows 2.4 GiB a sample (4.8 GiB/s): 95 % in 1.4 s
    let (full, phases) = run(&[55.0, 57.4, 59.8, 62.2, 64.6, 67.0, 0.0]);
    assert!(full);
    assert_eq!(
        phases.last().unwrap().verdict,
        Verdict::Capacity,
        "{phases:#?}"
    );
    let p = phases.last().unwrap();
    assert!(p.figure.contains("then it fell to 0 B"), "{}", p.figure);
    let g = p.memory_growth_bytes_per_s.unwrap() / (1u64 << 30) as f64;
    assert!((g - 4.8).abs() < 0.01, "{g} GiB/s");
    // far from full, or not growing
    assert!(!run(&[10.0, 12.0, 14.0, 16.0, 18.0]).0);
    assert!(!run(&[70.0, 70.0, 70.0, 70.0]).0);
}

#[test]
fn a_calibration_of_another_model_is_refused_unless_forced() {
    let d = device(Signal::Gpm);
    let mut cal: Calibration = serde_json::from_str(
        r#"{"schema":"roofprobe-calibration/1","device":{"name":"NVIDIA A100-SXM4-80GB",
        "backend":"cuda","id":"cuda:0"},"spec":{"basis":"none","reason":"x"}}"#,
    )
    .unwrap();
    cal.run.run_id = "a100-run".into();
    let err = check_models(&d.info, std::slice::from_ref(&cal), false).unwrap_err();
    assert!(err.to_string().contains("not this device's"), "{err}");
    assert_eq!(
        check_models(&d.info, &[cal.clone()], true).unwrap().len(),
        1
    );
    cal.device.name = "NVIDIA  H100 80GB HBM3".into();
    assert!(check_models(&d.info, &[cal], false).unwrap().is_empty());
}
