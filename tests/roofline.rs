//! The empirical roofline fitted from synthetic runs (analysis::roofline): ceilings per level
//! and precision from the valid rows only, the sweep's plateaus as cache ceilings, ridges,
//! points against their roof, GEMM efficiency and batch sweeps' turns.

use roofprobe::analysis::fixtures::{
    gemm_row, retime, row, synthetic_run, synthetic_run_with_batch_sweeps,
};
use roofprobe::analysis::roofline::*;
use roofprobe::cases::{cache, Family, Param, Precision};
use roofprobe::results::record::Record;
use roofprobe::specs::SpecFigure;

fn a100_like_spec(family: Family, precision: Precision) -> Result<SpecFigure, String> {
    let value = match (family, precision) {
        (Family::Stream, _) => 2000.0,
        (Family::Peak, Precision::F32) => 19_500.0,
        (Family::Peak, Precision::F64) => 9_700.0,
        (Family::Tensor, Precision::F16F32) => 240_000.0,
        _ => return Err("no spec: the test sheet is blank here".into()),
    };
    Ok(SpecFigure {
        value,
        basis: "sheet: test".into(),
    })
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
}

/// Cache ceilings: per level, the best valid row of that level; an invalid faster row does
/// not count; a level nobody measured has no ceiling; none has a spec or an efficiency.
#[test]
fn cache_rows_give_one_ceiling_per_level() {
    let cache_row = |kernel: &str, kib: u32, gbps: f64, valid: bool| {
        let bytes = 1u64 << 30;
        row(
            Family::Cache,
            kernel,
            Precision::I32,
            Some(Param::Count(kib)),
            (bytes, 0),
            bytes as f64 / (gbps * 1e9),
            valid,
        )
    };
    let mut records = synthetic_run();
    records.extend([
        cache_row("l1", 2048, 18_000.0, true),
        cache_row("l1", 4096, 19_500.0, true),
        cache_row("l1", 8192, 90_000.0, false),
        cache_row("l2", 8192, 7_000.0, true),
    ]);
    let fit = fit(&records, &a100_like_spec);
    let l1 = fit.memory(MemoryLevel::L1).unwrap();
    assert!(close(l1.gbps, 19_500.0), "{l1:?}");
    assert_eq!(l1.case.as_deref(), Some("cache/l1/i32/4096"));
    assert_eq!(
        (l1.spec_gbps, l1.efficiency, l1.above_spec),
        (None, None, false)
    );
    assert!(close(fit.memory(MemoryLevel::L2).unwrap().gbps, 7_000.0));
    assert!(fit.memory(MemoryLevel::L3).is_none());
    // DRAM still comes from STREAM alone, and comes first
    assert_eq!(fit.memory_ceilings[0].level, MemoryLevel::Dram);
    assert!(close(fit.memory(MemoryLevel::Dram).unwrap().gbps, 1500.0));
    // the ridge of L1 and f32: 15 000 GFLOP/s over 19 500 GB/s
    let ridge = fit
        .ridge_points
        .iter()
        .find(|r| r.memory == MemoryLevel::L1 && r.precision == Precision::F32)
        .unwrap();
    assert!(close(ridge.flop_per_byte, 15_000.0 / 19_500.0));
    // cache rows are not roofline points (they do no arithmetic)
    assert!(fit.points.iter().all(|p| p.family != Family::Cache));
}

/// One valid step of the cache sweep: `bytes` of working set read 64 times at `gbps`, its
/// note the run's cache list.
fn sweep_step(bytes: u64, gbps: f64, note: &str) -> Record {
    roofprobe::analysis::fixtures::sweep_step(bytes, gbps, &format!("2 pinned threads; {note}"))
}

/// A sweep whose curve has three caches sets the L1, L2 and L3 ceilings from its
/// plateaus, names the plateau each came from, and wins over a fixed-size row; an invalid
/// step contributes nothing.
#[test]
fn sweep_plateaus_set_the_cache_ceilings() {
    // (a GPU-like sweep: every level above the synthetic run's 1500 GB/s DRAM)
    let caps = [
        (64u64 << 10, 15_000.0f64),
        (2 << 20, 6_000.0),
        (32 << 20, 2_000.0),
    ];
    let note = cache::sweep_note(&[
        ("L1d".to_string(), 64 << 10),
        ("L2".to_string(), 2 << 20),
        ("L3".to_string(), 32 << 20),
    ]);
    let mut records = synthetic_run();
    for bytes in cache::sweep_sizes(cache::MIN_BYTES, 128 << 20, 8) {
        let x = (bytes as f64).log2();
        let (mut log_g, mut prev) = (40_000f64.ln(), 40_000f64);
        for (cap, next) in caps {
            let t = 1.0 / (1.0 + (-(x - (cap as f64).log2()) / 0.25).exp());
            log_g += t * (next.ln() - prev.ln());
            prev = next;
        }
        records.push(sweep_step(bytes, log_g.exp(), &note));
    }
    // a disturbed step that failed its check: its figure counts nowhere
    let bad = records.len() - 60;
    records[bad].valid = false;
    records[bad].gbps = Some(1e6);
    records.push(row(
        Family::Cache,
        "l1",
        Precision::I32,
        Some(Param::Count(32)),
        (1 << 30, 0),
        (1u64 << 30) as f64 / 500e9,
        true,
    ));
    let plateaus = sweep_levels(&records);
    let matched: Vec<&str> = plateaus
        .iter()
        .map(|p| p.plateau.matched.as_str())
        .collect();
    assert_eq!(matched, ["L1d", "L2", "L3", "DRAM"], "{plateaus:?}");
    let fit = fit(&records, &a100_like_spec);
    for (level, gbps) in [
        (MemoryLevel::L1, 40_000.0),
        (MemoryLevel::L2, 15_000.0),
        (MemoryLevel::L3, 6_000.0),
    ] {
        let m = fit.memory(level).unwrap();
        let g = m.gbps.unwrap();
        assert!(g >= gbps * 0.97 && g < gbps * 1.03, "{m:?}");
        assert!(m.case.as_deref().unwrap().starts_with("cache/sweep/i32/"));
        let p = m.plateau.as_ref().unwrap();
        // the ceiling is the plateau's own figure, one median
        assert_eq!(m.gbps, Some(p.median_gbps));
        let edge = p.edge_bytes.unwrap() as f64 / p.reported_bytes.unwrap() as f64;
        assert!(edge > 0.8 && edge < 1.25, "{p:?}");
    }
    // DRAM is still STREAM's
    assert!(close(fit.memory(MemoryLevel::Dram).unwrap().gbps, 1500.0));
    // without the notes nothing is matched, and the fixed-size row sets L1 again
    for r in records.iter_mut() {
        r.note.clear();
    }
    assert!(sweep_levels(&records)
        .iter()
        .all(|p| p.plateau.matched.is_empty()));
    let fit = roofprobe::analysis::roofline::fit(&records, &a100_like_spec);
    let l1 = fit.memory(MemoryLevel::L1).unwrap();
    assert_eq!(l1.case.as_deref(), Some("cache/l1/i32/32"));
    assert!(l1.plateau.is_none());
}

/// The AMD EPYC run of 2026-12-03 (f90759ee): a 5-step dip at 724 KiB .. 1.0 MiB (75.7
/// GB/s) was the only plateau within 2x of the 2 MiB L2, and set an L2 ceiling below the
/// 149 GB/s of L3's plateau. A level's plateau below an outer level's ceiling sets nothing:
/// the fixed-size rows set the level, and the plateau says why it did not.
#[test]
fn a_plateau_below_an_outer_level_does_not_set_its_ceiling() {
    const KIB: u64 = 1 << 10;
    let note = cache::sweep_note(&[
        ("L1d".to_string(), 64 * KIB),
        ("L2".to_string(), 2 << 20),
        ("L3".to_string(), 32 << 20),
    ]);
    // The curve: L1 3000 GB/s to 64 KiB, L2 at 1800 to 512 KiB, a dip at 750 from 724 KiB to
    // 1 MiB, L3 at 1600 to 24 MiB, then DRAM at 400 (below STREAM's 1500, which no cache
    // plateau here comes near).
    let gbps_at = |bytes: u64| match bytes {
        b if b <= 64 * KIB => 3000.0,
        b if b <= 512 * KIB => 1800.0,
        b if b < 724 * KIB => 1200.0,
        b if b <= 1024 * KIB => 750.0,
        b if b <= 24 << 20 => 1600.0,
        _ => 400.0,
    };
    let mut records = synthetic_run();
    for bytes in cache::sweep_sizes(cache::MIN_BYTES, 128 << 20, 8) {
        records.push(sweep_step(bytes, gbps_at(bytes), &note));
    }
    let fixed_l2 = |gbps: f64| {
        row(
            Family::Cache,
            "l2",
            Precision::I32,
            Some(Param::Count(1024)),
            (1 << 30, 0),
            (1u64 << 30) as f64 / (gbps * 1e9),
            true,
        )
    };
    records.push(fixed_l2(1750.0));
    let levels = sweep_levels(&records);
    let dip = levels
        .iter()
        .find(|s| s.plateau.matched == "L2")
        .unwrap_or_else(|| panic!("{levels:?}"));
    assert_eq!(dip.plateau.from_bytes, 724 * KIB, "{levels:?}");
    assert!(
        matches!(
            dip.role,
            PlateauRole::BelowOuter {
                level: MemoryLevel::L2,
                outer: MemoryLevel::L3,
                outer_gbps,
                fixed_rows: true,
            } if (outer_gbps - 1600.0).abs() < 1.0
        ),
        "{dip:?}"
    );
    let fit = fit(&records, &a100_like_spec);
    let l2 = fit.memory(MemoryLevel::L2).unwrap();
    assert_eq!(l2.case.as_deref(), Some("cache/l2/i32/1024"), "{l2:?}");
    assert!(close(l2.gbps, 1750.0));
    assert!(l2.plateau.is_none());
    // L1 and L3 still come from their plateaus
    let l3 = fit.memory(MemoryLevel::L3).unwrap();
    assert!(close(l3.gbps, 1600.0), "{l3:?}");
    assert!(fit.memory(MemoryLevel::L1).unwrap().plateau.is_some());
    // Without a fixed-size row the level has no ceiling: never the dip's.
    records.pop();
    let fit = roofprobe::analysis::roofline::fit(&records, &a100_like_spec);
    assert!(fit.memory(MemoryLevel::L2).is_none());
    // An L3 plateau below DRAM's ceiling sets no L3 either.
    for r in records.iter_mut().filter(|r| r.family == Family::Stream) {
        retime(r, r.bytes as f64 / (1700.0 * 1e9));
    }
    let fit = roofprobe::analysis::roofline::fit(&records, &a100_like_spec);
    assert!(
        fit.memory(MemoryLevel::L3).is_none(),
        "{:?}",
        fit.memory_ceilings
    );
    assert!(sweep_levels(&records).iter().any(|s| matches!(
        s.role,
        PlateauRole::BelowOuter {
            level: MemoryLevel::L3,
            outer: MemoryLevel::Dram,
            fixed_rows: false,
            ..
        }
    )));
}

/// On Hopper the tensor ceiling is the `wgmma` rows', even where a `mma.sync` row of the
/// type measured more; where no wgmma row has a figure, the mma.sync row sets it.
#[test]
fn the_tensor_ceiling_comes_from_the_wgmma_rows() {
    let flops = 1u64 << 40;
    let tensor = |kernel: &str, secs: f64, valid: bool| {
        row(
            Family::Tensor,
            kernel,
            Precision::Bf16F32,
            None,
            (0, flops),
            secs,
            valid,
        )
    };
    let mut records = synthetic_run();
    records.retain(|r| r.family != Family::Tensor);
    records.push(tensor("mma_m16n8k16", 1.0, true));
    records.push(tensor("wgmma_m64n256k16", 2.0, true));
    records.push(tensor("wgmma_m64n256k16_rs", 4.0, true));
    let ceiling = |records: &[Record]| {
        let fit = fit(records, &a100_like_spec);
        let c = fit.compute(Family::Tensor, Precision::Bf16F32).unwrap();
        (c.gflops, c.case.clone().unwrap())
    };
    let (gflops, case) = ceiling(&records);
    assert!(close(gflops, flops as f64 / 2.0 / 1e9), "{gflops:?}");
    assert_eq!(case, "tensor/wgmma_m64n256k16/bf16.f32");
    for r in records.iter_mut().filter(|r| is_wgmma(&r.kernel)) {
        r.valid = false;
    }
    let (gflops, case) = ceiling(&records);
    assert!(close(gflops, flops as f64 / 1e9), "{gflops:?}");
    assert_eq!(case, "tensor/mma_m16n8k16/bf16.f32");
}

#[test]
fn fit_recovers_the_ceilings_and_ridge_it_was_built_from() {
    let fit = fit(&synthetic_run(), &a100_like_spec);
    let dram = fit.memory(MemoryLevel::Dram).unwrap();
    assert!(close(dram.gbps, 1500.0), "{dram:?}");
    assert_eq!(
        dram.case.as_deref(),
        Some("stream/triad/f32"),
        "names the kernel"
    );
    assert!(close(dram.efficiency, 0.75));
    assert!(!dram.above_spec);

    let f32 = fit.compute(Family::Peak, Precision::F32).unwrap();
    assert!(
        close(f32.gflops, 15_000.0),
        "the invalid 99 000 does not count: {f32:?}"
    );
    assert!(close(f32.efficiency, 15_000.0 / 19_500.0));

    let ridge = fit
        .ridge_points
        .iter()
        .find(|r| r.family == Family::Peak && r.precision == Precision::F32)
        .unwrap();
    assert!(close(ridge.flop_per_byte, 10.0), "{ridge:?}");
    assert!(close(ridge.spec_flop_per_byte, 19_500.0 / 2000.0));

    // the sweep: left of 10 flop/byte memory-bound, right of it compute-bound, all at 90 %
    let sweep: Vec<&Point> = fit
        .points
        .iter()
        .filter(|p| p.family == Family::Intensity)
        .collect();
    assert_eq!(sweep.len(), 6);
    for p in &sweep {
        let expected = if p.flop_per_byte < 10.0 {
            Bound::Memory
        } else {
            Bound::Compute
        };
        assert_eq!(p.bound, expected, "{p:?}");
        assert!(close(p.fraction_of_roof, 0.9), "{p:?}");
        assert_eq!(p.roof_basis, "measured DRAM, measured f32 peak");
    }
    // triad itself sits on the roof
    let triad = fit
        .points
        .iter()
        .find(|p| p.case == "stream/triad/f32")
        .unwrap();
    assert!(close(triad.fraction_of_roof, 1.0));
    // copy does no arithmetic: not a point
    assert!(!fit.points.iter().any(|p| p.case.contains("copy")));
    // invalid rows are listed, not fitted
    assert_eq!(fit.excluded.len(), 2, "{:?}", fit.excluded);
    assert!(fit.excluded[0].starts_with("stream/copy/f64: invalid"));
}

/// A batch sweep turns where the bandwidth of its smallest M meets its best rate: at the
/// ridge when both ran at the same share of their ceilings, at twice it when the smallest
/// M ran at half that share. A weight with one point, and a square, turn nowhere.
#[test]
fn batch_sweeps_turn_where_their_bandwidth_meets_their_best_rate() {
    let rows = synthetic_run_with_batch_sweeps();
    let fit = fit(&rows, &a100_like_spec);
    let turns = batch_turns(&fit.points, &fit.ridge_points);
    let names: Vec<(&str, (u64, u64))> = turns
        .iter()
        .map(|t| (t.kernel.as_str(), t.weight))
        .collect();
    assert_eq!(names, [("gemm", (4096, 4096)), ("simd", (4096, 4096))]);
    let (ours, theirs) = (&turns[1], &turns[0]);
    assert_eq!((ours.points, ours.first_m), (4, 1));
    assert!(close(Some(ours.first_gbps), 0.8 * 1500.0), "{ours:?}");
    assert!(close(Some(ours.best_gflops), 0.8 * 15_000.0), "{ours:?}");
    assert!(close(Some(ours.flop_per_byte), 10.0), "{ours:?}");
    assert!(close(ours.ridge, 10.0), "{ours:?}");
    assert!(close(Some(theirs.flop_per_byte), 20.0), "{theirs:?}");
}

/// GEMM rows are points held against the peak of their precision (a tensor type's tensor
/// peak), and give an efficiency curve per implementation and precision, ascending in size.
#[test]
fn gemm_rows_are_points_and_give_an_efficiency_curve() {
    use roofprobe::cases::gemm::Shape;
    let mut rows = synthetic_run();
    rows.extend([
        // a GEMV at 90 % of the DRAM roof: 1500 GB/s × ~0.5 flop/byte
        gemm_row(
            "simd",
            Precision::F32,
            Shape::new(1, 4096, 4096),
            0.9 * 1500.0 * 0.4999,
            true,
        ),
        gemm_row("simd", Precision::F32, Shape::square(4096), 12_000.0, true),
        gemm_row("simd", Precision::F32, Shape::square(1024), 6_000.0, true),
        gemm_row("simd", Precision::F32, Shape::square(512), 99_000.0, false),
        gemm_row(
            "ptx",
            Precision::F16F32,
            Shape::square(8192),
            200_000.0,
            true,
        ),
    ]);
    let fit = fit(&rows, &a100_like_spec);
    let gemv = fit
        .points
        .iter()
        .find(|p| p.case == "gemm/simd/f32/1x4096x4096")
        .unwrap();
    assert_eq!(gemv.bound, Bound::Memory);
    assert!(
        (gemv.fraction_of_roof.unwrap() - 0.9).abs() < 1e-3,
        "{gemv:?}"
    );
    let big = fit
        .points
        .iter()
        .find(|p| p.case == "gemm/simd/f32/4096x4096x4096")
        .unwrap();
    assert_eq!(big.bound, Bound::Compute);
    assert!(close(big.fraction_of_roof, 0.8));
    let tensor = fit
        .points
        .iter()
        .find(|p| p.case.starts_with("gemm/ptx"))
        .unwrap();
    assert_eq!(
        tensor.roof_basis,
        "measured DRAM, measured f16.f32 tensor peak"
    );
    assert!(close(tensor.fraction_of_roof, 0.8));
    // the curve: valid rows only, ascending in size, against measured and spec ceilings
    let simd = &fit.gemm_efficiency[0];
    assert_eq!(
        (simd.kernel.as_str(), simd.precision),
        ("simd", Precision::F32)
    );
    assert_eq!(simd.ceiling, "peak f32");
    let sizes: Vec<String> = simd.points.iter().map(|p| p.shape.to_string()).collect();
    assert_eq!(sizes, ["1x4096x4096", "1024x1024x1024", "4096x4096x4096"]);
    assert!(close(simd.points[2].efficiency, 0.8));
    assert!(close(simd.points[2].spec_efficiency, 12_000.0 / 19_500.0));
    assert!(close(
        Some(simd.points[1].gflop),
        2.0 * 1024f64.powi(3) / 1e9
    ));
    let ptx = &fit.gemm_efficiency[1];
    assert_eq!(ptx.ceiling, "tensor f16.f32");
    assert!(close(ptx.points[0].efficiency, 0.8));
}

/// A flagged row sets no ceiling where an unflagged one has a figure, however high it ran
/// (the Xeon run b3b7c787's DRAM ceiling was write/f32 at CV 26.5 %, 7 % above its unflagged
/// copy and triad); where every row is flagged the best of them does, and the ceiling says
/// it is suspect and why. The same for a compute ceiling.
#[test]
fn a_ceiling_comes_from_an_unflagged_row_wherever_one_exists() {
    let mut rows = synthetic_run();
    // a noisy dot at 1700 GB/s, above the unflagged triad's 1500
    let mut dot = row(
        Family::Stream,
        "dot",
        Precision::F32,
        None,
        (8 << 20, 2 << 20),
        (8 << 20) as f64 / 1700e9,
        true,
    );
    dot.flags = "high_cv(26.5%)".into();
    rows.push(dot);
    let mut peak = rows
        .iter()
        .find(|r| r.case_id() == "peak/fma/f32" && r.valid)
        .unwrap()
        .clone();
    peak.flags = "busy_host(0.4 CPUs)".into();
    peak.gflops = Some(16_000.0);
    rows.push(peak);
    let fit1 = fit(&rows, &a100_like_spec);
    let dram = fit1.memory(MemoryLevel::Dram).unwrap();
    assert!(close(dram.gbps, 1500.0), "{dram:?}");
    assert_eq!(dram.case.as_deref(), Some("stream/triad/f32"));
    assert!(!dram.suspect && dram.suspect_reason.is_none());
    let f32 = fit1.compute(Family::Peak, Precision::F32).unwrap();
    assert!(close(f32.gflops, 15_000.0) && !f32.suspect, "{f32:?}");
    // every STREAM row flagged: the best flagged one, said to be suspect and why
    for r in rows
        .iter_mut()
        .filter(|r| r.family == Family::Stream && r.valid)
    {
        if r.flags.is_empty() {
            r.flags = "busy_host(0.2 CPUs)".into();
        }
    }
    let fit2 = fit(&rows, &a100_like_spec);
    let dram = fit2.memory(MemoryLevel::Dram).unwrap();
    assert!(close(dram.gbps, 1700.0), "{dram:?}");
    assert!(dram.suspect);
    assert_eq!(
        dram.suspect_reason.as_deref(),
        Some("stream/dot/f32: high_cv(26.5%)")
    );
}

#[test]
fn cache_resident_stream_rows_are_not_a_dram_ceiling() {
    let mut rows = synthetic_run();
    // the triad that set the 1500 GB/s ceiling ran on 100 MiB: under 4x the 40 MiB L2
    let triad = rows
        .iter_mut()
        .find(|r| r.case_id() == "stream/triad/f32")
        .unwrap();
    triad.working_set_bytes = 100 << 20;
    let fit = fit(&rows, &a100_like_spec);
    let dram = fit.memory(MemoryLevel::Dram).unwrap();
    assert!(close(dram.gbps, 1400.0), "the copy sets it now");
    assert_eq!(dram.case.as_deref(), Some("stream/copy/f32"));
    assert!(fit
        .excluded
        .iter()
        .any(|e| e.starts_with("stream/triad/f32: working set 104857600 bytes is under 4x")));
}

#[test]
fn above_spec_is_flagged_and_spec_only_ceilings_are_kept() {
    let fit = fit(&synthetic_run(), &a100_like_spec);
    let tensor = fit.compute(Family::Tensor, Precision::F16F32).unwrap();
    assert!(tensor.above_spec, "250 T measured against a 240 T sheet");
    assert!(close(tensor.efficiency, 250.0 / 240.0));
    // on the sheet, not measured: spec ceiling with no number and no efficiency
    let f64 = fit.compute(Family::Peak, Precision::F64).unwrap();
    assert_eq!((f64.gflops, f64.efficiency), (None, None));
    assert!(close(f64.spec_gflops, 9_700.0));
    let r = fit
        .ridge_points
        .iter()
        .find(|r| r.precision == Precision::F64)
        .unwrap();
    assert_eq!(r.flop_per_byte, None);
    assert!(close(r.spec_flop_per_byte, 9_700.0 / 2000.0));
    // a column the sheet leaves blank and nothing measured: no ceiling
    assert!(fit.compute(Family::Tensor, Precision::S8S32).is_none());
}

#[test]
fn without_spec_or_compute_ceilings_points_meet_the_memory_roof_only() {
    let rows: Vec<Record> = synthetic_run()
        .into_iter()
        .filter(|r| r.family != Family::Peak)
        .collect();
    let no_spec = |_: Family, _: Precision| Err::<SpecFigure, _>("no spec: host CPU".to_string());
    let fit = fit(&rows, &no_spec);
    let dram = fit.memory(MemoryLevel::Dram).unwrap();
    assert_eq!(
        (dram.spec_gbps, dram.efficiency, dram.above_spec),
        (None, None, false)
    );
    assert_eq!(dram.spec_basis, "no spec: host CPU");
    assert!(fit.compute(Family::Peak, Precision::F32).is_none());
    let p = fit
        .points
        .iter()
        .find(|p| p.family == Family::Intensity)
        .unwrap();
    assert_eq!(p.bound, Bound::Memory);
    assert_eq!(p.roof_basis, "measured DRAM only: no f32 compute ceiling");
    // only the tensor ceiling (no DRAM pair for it lacks nothing) gives a ridge
    assert!(fit.ridge_points.iter().all(|r| r.family == Family::Tensor));
}

/// A point above its roof is `above_roof` only beyond the noise of its own figure and of the
/// row that set the roof: 2 × √(cv² + cv_roof²).
#[test]
fn above_the_roof_means_beyond_the_noise() {
    let case = "intensity/fma_chain/f32/16";
    // the point at `fraction` of its roof, with CV `cv`; the DRAM row (triad) has CV 1 %
    let placed = |fraction: f64, cv: f64| {
        let mut rows = synthetic_run();
        let roof = fit(&rows, &a100_like_spec)
            .points
            .iter()
            .find(|p| p.case == case)
            .and_then(|p| p.roof_gflops)
            .unwrap();
        let r = rows.iter_mut().find(|r| r.case_id() == case).unwrap();
        r.gflops = Some(fraction * roof);
        r.cv = Some(cv);
        let fit = fit(&rows, &a100_like_spec);
        let p = fit.points.into_iter().find(|p| p.case == case).unwrap();
        assert!(close(p.fraction_of_roof, fraction), "{p:?}");
        p.above_roof
    };
    // 139 % of the roof, as on the loaded machine of the issue, with 1 % CVs: above
    assert!(placed(1.39, 0.01));
    // the same with a CV of 30 %: within the noise (and the CV itself is flagged)
    assert!(!placed(1.39, 0.30));
    // 2 × √(0.01² + 0.01²) = 2.83 %: 102 % is noise, 104 % is not
    assert!(!placed(1.02, 0.01));
    assert!(placed(1.04, 0.01));
    // on or below the roof never is
    assert!(!placed(1.0, 0.0));
    assert!(!placed(0.5, 0.0));
    // the synthetic sweep at 90 % is not
    assert!(fit(&synthetic_run(), &a100_like_spec)
        .points
        .iter()
        .all(|p| !p.above_roof));
}

#[test]
fn nothing_valid_fits_nothing_and_nothing_panics() {
    let mut rows = synthetic_run();
    for r in &mut rows {
        r.valid = false;
    }
    let fit1 = fit(&rows, &a100_like_spec);
    let dram = fit1.memory(MemoryLevel::Dram).unwrap();
    assert_eq!(dram.gbps, None);
    assert!(fit1.points.is_empty());
    assert_eq!(fit1.excluded.len(), rows.len());
    // NaN, infinite and negative figures marked valid are not numbers either
    let mut rows = synthetic_run();
    rows[0].gbps = Some(f64::NAN);
    rows[1].gbps = Some(f64::INFINITY);
    rows[3].gflops = Some(-1.0);
    let fit2 = fit(&rows, &a100_like_spec);
    assert_eq!(fit2.memory(MemoryLevel::Dram).unwrap().gbps, None);
    assert_eq!(
        fit2.compute(Family::Peak, Precision::F32).unwrap().gflops,
        None
    );
    assert_eq!(fit(&[], &a100_like_spec).points.len(), 0);
}

/// A valid launch row has a time and no rate, as every launch row has: it is not listed
/// among the rows that failed to give a figure; an invalid one still is.
#[test]
fn a_launch_row_is_not_a_figure_that_went_missing() {
    let launch = |valid| {
        row(
            Family::Launch,
            "empty",
            Precision::I32,
            None,
            (0, 0),
            1.6e-6,
            valid,
        )
    };
    let mut rows = synthetic_run();
    let before = fit(&rows, &a100_like_spec).excluded;
    rows.push(launch(true));
    assert_eq!(fit(&rows, &a100_like_spec).excluded, before);
    rows.push(launch(false));
    let excluded = fit(&rows, &a100_like_spec).excluded;
    assert_eq!(excluded.len(), before.len() + 1, "{excluded:?}");
    assert!(excluded.last().unwrap().starts_with("launch/empty/i32: "));
}
