//! Test data builders: synthetic runs written as a run writes its rows, with no measurement
//! behind them, for the tests of the roofline, its calibration and every reader above it
//! (the library's own tests and the suite's in tests/ take them from here, one copy).
//!
//! Compiled always so that tests/ can use them, hidden from the docs; no code outside the
//! tests uses them.

use crate::analysis::calibration::{Calibration, FromRecords};
use crate::analysis::roofline::attainable_gflops;
use crate::cases::{Family, Param, Precision};
use crate::device::BackendKind;
use crate::results::record::{Record, SCHEMA};

/// Sets a row's median time (min, mean, max and spread around it) and the figures that
/// derive from it, as a run writes them.
pub fn retime(r: &mut Record, secs: f64) {
    r.time_min_s = Some(secs * 0.99);
    r.time_median_s = Some(secs);
    r.time_mean_s = Some(secs);
    r.time_max_s = Some(secs * 1.01);
    r.time_stddev_s = Some(secs * 0.01);
    r.cv = Some(0.01);
    r.gbps = (r.bytes > 0).then(|| r.bytes as f64 / secs / 1e9);
    r.gflops = (r.flops > 0).then(|| r.flops as f64 / secs / 1e9);
}

/// Marks a row invalid as a run does: the reason in `status`, no figures.
pub fn invalidate(r: &mut Record, why: &str) {
    r.valid = false;
    r.status = format!("invalid: {why}");
    r.time_min_s = None;
    r.time_median_s = None;
    r.time_mean_s = None;
    r.time_max_s = None;
    r.time_stddev_s = None;
    r.cv = None;
    r.gbps = None;
    r.gflops = None;
    r.theory_gflops = None;
}

/// A synthetic row: `gbps`/`gflops` derived from bytes, flops and a time, as runs do.
pub fn row(
    family: Family,
    kernel: &str,
    precision: Precision,
    param: Option<Param>,
    (bytes, flops): (u64, u64),
    secs: f64,
    valid: bool,
) -> Record {
    Record {
        schema: SCHEMA.into(),
        run_id: "lab-cuda0-nvidia-a100-sxm4-80gb-20260101T000000Z".into(),
        timestamp_utc: "2026-01-01T00:00:00Z".into(),
        host: "lab".into(),
        backend: BackendKind::Cuda,
        device_id: "cuda:0".into(),
        device_name: "NVIDIA A100-SXM4-80GB".into(),
        compute_capability: "8.0".into(),
        units: 108,
        llc_bytes: 40 << 20,
        memory_bus_bits: Some(5120),
        max_memory_clock_mhz: None,
        driver: "CUDA 12.4, driver 550.54.15".into(),
        // what describe() reads without NVML
        vendor: "NVIDIA".into(),
        cpu_family: String::new(),
        cpu_model: String::new(),
        microarch: "Ampere".into(),
        isa: "sm_80".into(),
        uuid: String::new(),
        pci_bus_id: String::new(),
        vbios: String::new(),
        ecc: String::new(),
        mig: String::new(),
        power_limit_w: None,
        app_clock_mhz: None,
        app_memory_clock_mhz: None,
        family,
        kernel: kernel.into(),
        precision,
        param,
        elements: 1 << 20,
        // a DRAM working set (4x the L2 and more) whatever one launch moves
        working_set_bytes: 1 << 30,
        bytes,
        flops,
        reps: 10,
        samples: 10,
        stopped_by: if valid { "count" } else { "" }.into(),
        time_min_s: valid.then_some(secs * 0.99),
        time_median_s: valid.then_some(secs),
        time_mean_s: valid.then_some(secs),
        time_max_s: valid.then_some(secs * 1.01),
        time_stddev_s: valid.then_some(secs * 0.01),
        cv: valid.then_some(0.01),
        gbps: (valid && bytes > 0).then(|| bytes as f64 / secs / 1e9),
        gflops: (valid && flops > 0).then(|| flops as f64 / secs / 1e9),
        theory_gflops: None,
        ratio_to_reference: None,
        intensity: (bytes > 0).then(|| flops as f64 / bytes as f64),
        valid,
        status: if valid {
            "ok".into()
        } else {
            "invalid: [0] is NaN, should be 1".into()
        },
        flags: String::new(),
        clock_mhz: Some(1410.0),
        memory_clock_mhz: Some(1593.0),
        power_w: Some(300.0),
        temperature_c: Some(60.0),
        throttle: String::new(),
        other_cpus_busy: None,
        other_gpu_processes: Some(0),
        parallel_devices: None,
        note: String::new(),
    }
}

/// A device built to have a 1500 GB/s DRAM roof and a 15 000 GFLOP/s f32 peak (ridge 10
/// flop/byte), measured by STREAM, peak and an intensity sweep that follows the roof at 90 %.
pub fn synthetic_run() -> Vec<Record> {
    let gb = 1e9;
    let mut rows = vec![
        // triad f32: 12 bytes and 2 flops per element, at 1500 GB/s
        row(
            Family::Stream,
            "triad",
            Precision::F32,
            None,
            (12 << 20, 2 << 20),
            (12 << 20) as f64 / (1500.0 * gb),
            true,
        ),
        // copy f32 slower
        row(
            Family::Stream,
            "copy",
            Precision::F32,
            None,
            (8 << 20, 0),
            (8 << 20) as f64 / (1400.0 * gb),
            true,
        ),
        // an invalid copy that "would" have been faster: must not count
        row(
            Family::Stream,
            "copy",
            Precision::F64,
            None,
            (16 << 20, 0),
            (16 << 20) as f64 / (9000.0 * gb),
            false,
        ),
        // peak f32 at 15 000 GFLOP/s
        row(
            Family::Peak,
            "fma",
            Precision::F32,
            None,
            (0, 15_000_000_000_000),
            1.0,
            true,
        ),
        // an invalid peak that would be higher
        row(
            Family::Peak,
            "fma",
            Precision::F32,
            None,
            (0, 99_000_000_000_000),
            1.0,
            false,
        ),
        // tensor f16.f32 at 250 TFLOP/s
        row(
            Family::Tensor,
            "mma_m16n8k16",
            Precision::F16F32,
            None,
            (0, 250_000_000_000_000),
            1.0,
            true,
        ),
    ];
    // intensity sweep: k flops per 8 bytes (read one f32, write one f32), at 90 % of the roof
    for k in [1u32, 4, 16, 64, 256, 1024] {
        let bytes: u64 = 8 << 20;
        let flops = u64::from(k) * (1 << 20);
        let intensity = flops as f64 / bytes as f64;
        let roof = attainable_gflops(intensity, 1500.0, 15_000.0);
        let secs = flops as f64 / (0.9 * roof * gb);
        rows.push(row(
            Family::Intensity,
            "fma_chain",
            Precision::F32,
            Some(Param::Count(k)),
            (bytes, flops),
            secs,
            true,
        ));
    }
    rows
}

/// One valid step of the cache sweep: `bytes` of working set read 64 times at `gbps`, with
/// `note` (the caches reported, [`crate::cases::cache::sweep_note`]).
pub fn sweep_step(bytes: u64, gbps: f64, note: &str) -> Record {
    let read = 64 * bytes;
    let mut r = row(
        Family::Cache,
        crate::cases::cache::SWEEP,
        Precision::I32,
        Some(Param::Count((bytes >> 10) as u32)),
        (read, 0),
        read as f64 / (gbps * 1e9),
        true,
    );
    r.working_set_bytes = bytes;
    r.note = note.to_string();
    r
}

/// A GEMM row as a run writes it: the shape's work and sizes ([`crate::cases::gemm::case`]),
/// at `gflops`.
pub fn gemm_row(
    kernel: &str,
    p: Precision,
    shape: crate::cases::gemm::Shape,
    gflops: f64,
    valid: bool,
) -> Record {
    let case = crate::cases::gemm::case(kernel, p, shape);
    let mut r = row(
        Family::Gemm,
        kernel,
        p,
        case.param,
        (case.work.bytes(), case.work.flops),
        case.work.flops as f64 / (gflops * 1e9),
        valid,
    );
    r.elements = case.elements;
    r.working_set_bytes = case.working_set_bytes;
    r
}

/// [`synthetic_run`] with two batch sweeps against the 4096 × 4096 weight (M = 1, 16, 256
/// and 4096): `simd` at 80 % of the roof everywhere, the `gemm` crate at 40 % at M = 1 and
/// 80 % beyond; one `gemm` point against 14336 × 4096, and a 1024³ square.
pub fn synthetic_run_with_batch_sweeps() -> Vec<Record> {
    use crate::cases::gemm::Shape;
    let rate = |share: f64, shape: Shape| {
        let case = crate::cases::gemm::case("simd", Precision::F32, shape);
        let i = case.work.flops as f64 / case.work.bytes() as f64;
        share * attainable_gflops(i, 1500.0, 15_000.0)
    };
    let mut rows = synthetic_run();
    for m in [1, 16, 256, 4096] {
        let shape = Shape::new(m, 4096, 4096);
        rows.push(gemm_row(
            "simd",
            Precision::F32,
            shape,
            rate(0.8, shape),
            true,
        ));
        let share = if m == 1 { 0.4 } else { 0.8 };
        rows.push(gemm_row(
            "gemm",
            Precision::F32,
            shape,
            rate(share, shape),
            true,
        ));
    }
    let one = Shape::new(1, 14336, 4096);
    rows.push(gemm_row("gemm", Precision::F32, one, rate(0.8, one), true));
    let square = Shape::square(1024);
    rows.push(gemm_row(
        "simd",
        Precision::F32,
        square,
        rate(0.8, square),
        true,
    ));
    rows
}

/// A GPU-like run, synthetic (no measurement): STREAM f32 and f64, L1 and L2, every ALU
/// peak and tensor format the A100's sheet has a figure for, and f32, f64 and i32 intensity
/// sweeps under the roof; `gbps` and `gflops` scale the DRAM roof and the f32 peak.
pub fn gpu_like_run(
    device: &str,
    capability: &str,
    sms: u32,
    gbps: f64,
    gflops: f64,
) -> Vec<Record> {
    let n: u64 = 1 << 24;
    let secs = |bytes: u64, rate_gbps: f64| bytes as f64 / (rate_gbps * 1e9);
    let mut rows = Vec::new();
    for (precision, size) in [(Precision::F32, 4u64), (Precision::F64, 8)] {
        for (kernel, arrays, flops, efficiency) in [
            ("copy", 2, 0, 0.92),
            ("scale", 2, 1, 0.93),
            ("add", 3, 1, 0.95),
            ("triad", 3, 2, 0.96),
            ("dot", 2, 2, 0.90),
        ] {
            let bytes = arrays * size * n;
            rows.push(row(
                Family::Stream,
                kernel,
                precision,
                None,
                (bytes, flops * n),
                secs(bytes, gbps * efficiency),
                true,
            ));
        }
    }
    for (kernel, kib, factor) in [("l1", 64, 12.0), ("l2", 20_480, 3.4)] {
        let bytes = 1u64 << 32;
        rows.push(row(
            Family::Cache,
            kernel,
            Precision::I32,
            Some(crate::cases::Param::Count(kib)),
            (bytes, 0),
            secs(bytes, gbps * factor),
            true,
        ));
    }
    // Rates relative to the f32 peak.
    for (family, precision, share) in [
        (Family::Peak, Precision::F64, 0.5),
        (Family::Peak, Precision::F32, 1.0),
        (Family::Peak, Precision::F16x2, 1.9),
        (Family::Peak, Precision::I32, 0.97),
        (Family::Tensor, Precision::F16F32, 15.0),
        (Family::Tensor, Precision::Bf16F32, 14.8),
        (Family::Tensor, Precision::Tf32F32, 7.6),
        (Family::Tensor, Precision::S8S32, 30.0),
        (Family::Tensor, Precision::F64F64, 1.0),
    ] {
        let flops = 1u64 << 44;
        rows.push(row(
            family,
            "fma",
            precision,
            None,
            (0, flops),
            flops as f64 / (gflops * share * 1e9),
            true,
        ));
    }
    for (precision, size, share) in [
        (Precision::F32, 4u64, 1.0),
        (Precision::F64, 8, 0.5),
        (Precision::I32, 4, 0.97),
    ] {
        for k in [1u32, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024] {
            let bytes = 2 * size * n;
            let flops = 2 * u64::from(k) * n;
            let roof = crate::analysis::roofline::attainable_gflops(
                flops as f64 / bytes as f64,
                gbps,
                gflops * share,
            );
            // 70 to 95 % of the roof, a little different for each k
            let fraction = 0.7 + 0.25 * f64::from(k % 7) / 6.0;
            rows.push(row(
                Family::Intensity,
                "fma",
                precision,
                Some(crate::cases::Param::Count(k)),
                (bytes, flops),
                flops as f64 / (roof * fraction * 1e9),
                true,
            ));
        }
    }
    let slug: String = device
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    for r in &mut rows {
        r.device_name = device.into();
        r.compute_capability = capability.into();
        r.units = sms;
        r.run_id = format!("lab-cuda0-{slug}-20260101T000000Z");
    }
    rows
}

/// The GPU-like A100 run of [`gpu_like_run`]: 1560 GB/s, 18.7 TFLOP/s f32.
pub fn a100_like_run() -> Vec<Record> {
    gpu_like_run("NVIDIA A100-SXM4-80GB", "8.0", 108, 1560.0, 18_700.0)
}

/// The GPU-like H100 run of [`gpu_like_run`]: 2900 GB/s, 60 TFLOP/s f32.
pub fn h100_like_run() -> Vec<Record> {
    gpu_like_run("NVIDIA H100 80GB HBM3", "9.0", 132, 2900.0, 60_000.0)
}

/// A real run in results/ (this repository's host runs), by its stamp (`20261130T082122Z`).
pub fn committed_run(stamp: &str) -> Vec<Record> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("results/vm-host-amd-epyc-{stamp}.csv"));
    crate::results::csv::read_csv(&path).unwrap()
}

/// The calibration of `records`, with no spec file.
pub fn calibration(records: &[Record]) -> Calibration {
    Calibration::from_records(records, None).unwrap()
}

/// A watch summary of an H100 over two phases, bandwidth-bound then compute-bound, against
/// measured and spec roofs: what the trail's drawing is tested on.
pub fn watch_summary() -> crate::analysis::watch::DeviceSummary {
    use crate::analysis::watch::{
        Capacity, Ceiling, Ceilings, DeviceSummary, Levels, Phase, Pipe, PipeCeiling, Verdict,
    };
    use crate::backend::watch::Signal;
    let ceiling = |m: f64, sp: f64| Ceiling {
        measured: Some(m),
        measured_by: "x".into(),
        spec: Some(sp),
        spec_basis: "sheet".into(),
    };
    let phase = |first: usize, v: Verdict, x: f64, y: f64| Phase {
        first,
        last: first + 4,
        from_s: first as f64,
        to_s: first as f64 + 4.0,
        samples: 5,
        verdict: v,
        levels: Levels::default(),
        dram_gbps: Some(y / x),
        compute_gflops: Some(y),
        compute_pipe: "tensor bf16.f32".into(),
        flop_per_byte: Some(x),
        memory_peak_bytes: None,
        memory_growth_bytes_per_s: None,
        memory_fell_to_bytes: None,
        figure: format!("figure of {}", v.as_str()),
        remedies: Vec::new(),
    };
    DeviceSummary {
        device_id: "cuda:0".into(),
        device_name: "NVIDIA H100 80GB HBM3".into(),
        signal: Signal::Gpm,
        signal_why: Vec::new(),
        unseen: Vec::new(),
        ceilings: Ceilings {
            dram_gbps: ceiling(3000.0, 3350.0),
            pipes: vec![PipeCeiling {
                pipe: Pipe::TensorF16,
                label: "tensor bf16.f32".into(),
                precision: Precision::Bf16F32,
                ceiling: ceiling(600_000.0, 989_000.0),
            }],
            capacity: Some(Capacity {
                usable_bytes: 1,
                basis: "x".into(),
            }),
            sources: vec!["measured: run r".into()],
        },
        samples: 10,
        from_s: 0.0,
        to_s: 9.0,
        verdict: Some(Verdict::Bandwidth),
        shares: Vec::new(),
        figure: String::new(),
        remedies: Vec::new(),
        phases: vec![
            phase(0, Verdict::Bandwidth, 10.0, 30_000.0),
            phase(5, Verdict::Compute, 300.0, 500_000.0),
        ],
        full_in_s: None,
    }
}
