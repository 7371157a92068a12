//! The empirical roofline: ceilings fitted from one run's measurements, held against the spec,
//! with ridge points and every measurement point classified against the roof.
//!
//! # Method (what users cite)
//!
//! - **Memory ceiling** (DRAM): the highest GB/s of any valid `stream` row whose working set is
//!   at least 4× the last-level cache (smaller ones are cache figures, listed as excluded),
//!   whichever kernel and precision set it; the ceiling names that case.
//! - **Cache ceilings** (L1, L2, and the host's L3): where the bandwidth sweep ran
//!   (`cache/sweep/i32/<KiB>`), the plateaus its curve forms ([`sweep_levels`],
//!   [`crate::stats::changepoint`]): a plateau matched to a reported cache level sets that level's
//!   ceiling: its median step (the upper one of an even count, the plateau's own figure; a
//!   plateau's first steps can still carry the ramp from the level above, so not its best),
//!   and the ceiling names that step and the plateau. A cache is never slower than the levels
//!   behind it (L1 ≥ L2 ≥ L3 ≥ DRAM): a plateau whose median step lies below the ceiling of an
//!   outer level (set first, DRAM's then L3's then L2's) is a dip, not its level, and sets
//!   nothing ([`PlateauRole::BelowOuter`]).
//!   A level no plateau set falls back to the highest GB/s of any valid `cache` row
//!   of that level (`cache/l2/i32/<KiB>`: a working set sized to stay in it, see
//!   [`crate::cases::cache`]). No spec sheet gives cache bandwidth, so they have no efficiency.
//! - **Compute ceilings**: per family and precision (`peak` f64, f32, f16x2, …; `tensor` f16.f32,
//!   s8.s32, …), the highest GFLOP/s (GOP/s for integers) of any valid row.
//! - **Invalid rows never contribute**: a row counts only when `valid` is true and its figure is
//!   finite and positive. Invalid rows are listed, not fitted.
//! - **Flagged rows set a ceiling only where nothing else can**: a ceiling that takes the
//!   highest row (DRAM, a cache level's fixed-size rows, each compute ceiling) takes the highest
//!   *unflagged* row wherever one has a figure, since a flagged figure (`high_cv`, `busy_host`,
//!   … see [`crate::analysis::suspect`]) is not to be trusted and noise mostly raises a maximum;
//!   only where every row is flagged does a flagged one set it, and the ceiling then says so
//!   (`suspect`, with the row's case and flags as `suspect_reason`). A plateau's median step
//!   that is flagged marks its cache ceiling the same way.
//! - **Spec and efficiency**: each ceiling is held against its spec figure (sheet column or
//!   theoretical, see [`crate::specs`]); `efficiency = measured / spec`. A measured figure above
//!   its spec is flagged (`above_spec`), never clipped.
//! - **Ridge point** of a memory ceiling and a compute ceiling: `compute GFLOP/s / memory GB/s`,
//!   in flop per byte, for the measured pair and for the spec pair.
//! - **Points**: every valid row with both an arithmetic intensity (flops / bytes) and a GFLOP/s
//!   figure (the intensity sweep; STREAM kernels that do arithmetic; GEMM rows, whose intensity
//!   is the product's, A, B and C each moved once). Its roof at intensity `I` is `min(P, I × B)`
//!   with `B` the DRAM ceiling and `P` the compute ceiling of the point's own precision (the ALU
//!   peak; for a GEMM in a tensor-core type, that type's tensor peak), measured where there is
//!   one, else spec (the point says which). A point left of the ridge (`I × B < P`) is
//!   memory-bound, else compute-bound; `fraction_of_roof` is measured / roof (1 = on the roof).
//! - **Above the roof**: no point can truly exceed its roof, but two noisy measurements can
//!   cross. A point is `above_roof` only when `fraction_of_roof > 1 + ROOF_NOISE_SPREADS × s`,
//!   where `s = √(cv_point² + cv_roof²)` combines the point's own CV with the CV of the row that
//!   set its roof (0 for a spec roof): within that, the crossing is noise; beyond it, one of the
//!   two figures is not what the hardware does (the roof was measured in a slower state of the
//!   machine, or the point was disturbed), and [`crate::analysis::suspect`] flags the point.
//! - **GEMM efficiency**: per implementation and precision, every valid GEMM row's GFLOP/s over
//!   the compute ceiling of its precision (measured, and spec where there is one), against the
//!   product's size in GFLOP ([`GemmEfficiency`]): the curve estimators such as Calculon take as
//!   `gflops_efficiency`.
//!
//! This module is pure: records and a spec function in, a [`Roofline`] out. It must not read files,
//! print, or look specs up itself.

use crate::cases::{cache, Family, Param, Precision};
use crate::results::record::Record;
use crate::specs::SpecFigure;
use serde::{Deserialize, Serialize};

/// Whether a row's working set is at least 4× the device's last-level cache, the design's rule
/// for a DRAM figure (true where the cache size is unknown, 0).
pub fn is_dram_working_set(r: &Record) -> bool {
    r.llc_bytes == 0 || r.working_set_bytes >= 4 * r.llc_bytes
}

// The types a calibration file holds live in the lean calibration crate; this module fits them.
pub use roofprobe_calibration::{
    gemm_ceiling_family, Bound, ComputeCeiling, GemmEfficiency, GemmEfficiencyPoint, MemoryCeiling,
    MemoryLevel, Point, RidgePoint, SweepPlateau,
};

/// Everything fitted from one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Roofline {
    pub memory_ceilings: Vec<MemoryCeiling>,
    pub compute_ceilings: Vec<ComputeCeiling>,
    pub ridge_points: Vec<RidgePoint>,
    pub points: Vec<Point>,
    /// Per implementation and precision, GEMM GFLOP/s over the ceiling, by size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gemm_efficiency: Vec<GemmEfficiency>,
    /// Rows that contributed nothing: `case: status`.
    pub excluded: Vec<String>,
}

impl Roofline {
    pub fn memory(&self, level: MemoryLevel) -> Option<&MemoryCeiling> {
        self.memory_ceilings.iter().find(|m| m.level == level)
    }

    pub fn compute(&self, family: Family, precision: Precision) -> Option<&ComputeCeiling> {
        self.compute_ceilings
            .iter()
            .find(|c| c.family == family && c.precision == precision)
    }
}

/// How many combined spreads (CVs) above its roof a point must be to be `above_roof`: at 2, a
/// point on the roof whose figures vary normally crosses it that far about once in 40 (one
/// side of a 2σ interval).
pub const ROOF_NOISE_SPREADS: f64 = 2.0;

/// A figure usable as a ceiling or a point: finite and positive.
fn usable(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite() && *v > 0.0)
}

/// The compute ceilings a spec may have even when nothing measured them.
const SPEC_CEILINGS: [(Family, Precision); 10] = [
    (Family::Peak, Precision::F64),
    (Family::Peak, Precision::F32),
    (Family::Peak, Precision::F16x2),
    (Family::Tensor, Precision::F64F64),
    (Family::Tensor, Precision::Tf32F32),
    (Family::Tensor, Precision::F16F32),
    (Family::Tensor, Precision::F16F16),
    (Family::Tensor, Precision::Bf16F32),
    (Family::Tensor, Precision::E4m3F32),
    (Family::Tensor, Precision::S8S32),
];

fn efficiency(measured: Option<f64>, spec: Option<f64>) -> (Option<f64>, bool) {
    match (measured, spec) {
        (Some(m), Some(s)) if s > 0.0 => (Some(m / s), m > s),
        _ => (None, false),
    }
}

/// The memory level a reported cache's name (`L1d`, `L2`, `L3`) is.
fn memory_level(name: &str) -> Option<MemoryLevel> {
    match name.trim_end_matches(['d', 'D']) {
        "L1" => Some(MemoryLevel::L1),
        "L2" => Some(MemoryLevel::L2),
        "L3" => Some(MemoryLevel::L3),
        _ => None,
    }
}

/// What became of one plateau of the bandwidth sweep.
#[derive(Clone, Debug, PartialEq)]
pub enum PlateauRole {
    /// It set the ceiling of its level: its median step.
    Ceiling(MemoryLevel),
    /// Matched to `level`, but its median step lies below the ceiling of `outer`, a level
    /// further out (`outer_gbps`): a cache is never slower than the levels behind it (L1 ≥ L2
    /// ≥ L3 ≥ DRAM), so the plateau is a dip, not the level, and the level's ceiling comes
    /// from its fixed-size rows (`fixed_rows`: whether it has any).
    BelowOuter {
        level: MemoryLevel,
        outer: MemoryLevel,
        outer_gbps: f64,
        fixed_rows: bool,
    },
    /// Matched to a reported level that has no ceiling here (not L1, L2 or L3).
    NoCeiling,
    /// The last plateau, past the largest reported cache: DRAM, whose ceiling STREAM sets.
    Dram,
    /// Matched to no level ([`crate::stats::changepoint::Unmatched`] says why).
    Unmatched(crate::stats::changepoint::Unmatched),
}

/// One plateau of the bandwidth sweep: what it is ([`SweepPlateau`], `matched` the level it
/// was matched to, if any), the case of its median step, and what became of it.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepLevel {
    pub plateau: SweepPlateau,
    /// The case of its median step (`cache/sweep/i32/861`).
    pub median_case: String,
    pub role: PlateauRole,
}

/// The plateaus of one run's bandwidth sweep (its valid `cache/sweep` rows, GB/s against
/// working set), each with the reported level it was matched to ([`crate::stats::changepoint`]; the
/// reported levels are those the rows' notes carry, [`cache::reported_levels`]), the case of
/// its median step, and its role as far as matching goes. Empty where the sweep did not run or
/// found no plateau.
fn sweep_matches(records: &[Record]) -> Vec<SweepLevel> {
    use crate::stats::changepoint::{detect, match_levels, Level};
    let steps: Vec<&Record> = records
        .iter()
        .filter(|r| r.family == Family::Cache && r.kernel == cache::SWEEP)
        .collect();
    let points: Vec<(u64, f64)> = steps
        .iter()
        .filter(|r| r.valid)
        .filter_map(|r| usable(r.gbps).map(|g| (r.working_set_bytes, g)))
        .collect();
    let reported = steps
        .iter()
        .map(|r| cache::reported_levels(&r.note))
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let detected = detect(&points);
    let levels = match_levels(&detected.plateaus, &reported);
    detected
        .plateaus
        .iter()
        .zip(levels)
        .map(|(p, level)| {
            let (matched, reported_bytes, role) = match level {
                Level::Cache { name, bytes } => {
                    let role = match memory_level(&name) {
                        Some(level) => PlateauRole::Ceiling(level),
                        None => PlateauRole::NoCeiling,
                    };
                    (name, Some(bytes), role)
                }
                Level::Dram => ("DRAM".to_string(), None, PlateauRole::Dram),
                Level::Unmatched(why) => (String::new(), None, PlateauRole::Unmatched(why)),
            };
            let median_case = steps
                .iter()
                .find(|r| r.valid && r.working_set_bytes == p.median_bytes)
                .map(|r| r.case_id())
                .unwrap_or_default();
            SweepLevel {
                plateau: SweepPlateau {
                    matched,
                    reported_bytes,
                    from_bytes: p.from_bytes,
                    to_bytes: p.to_bytes,
                    edge_bytes: p.edge_bytes,
                    median_gbps: p.gbps,
                    steps: (p.last + 1 - p.first) as u32,
                },
                median_case,
                role,
            }
        })
        .collect()
}

/// The plateaus of one run's bandwidth sweep and what became of each: the level whose ceiling
/// it set, or why it set none (see [`PlateauRole`]; the ceilings are [`fit`]'s). Empty where
/// the sweep did not run or found no plateau.
pub fn sweep_levels(records: &[Record]) -> Vec<SweepLevel> {
    cache_ceilings(records, dram_best(records).map(|d| d.value)).1
}

/// The cache ceilings of one run, outermost level first as each is held against the levels
/// behind it, and the sweep's plateaus with what became of each. A level's ceiling is the
/// sweep's plateau matched to it, unless its median step is below an outer level's ceiling
/// (`dram_gbps`, or a cache's set before it); else the best of its fixed-size rows. In the
/// order the fit lists them: the sweep's levels in working-set order, then the fixed rows'.
fn cache_ceilings(
    records: &[Record],
    dram_gbps: Option<f64>,
) -> (Vec<MemoryCeiling>, Vec<SweepLevel>) {
    let mut sweep = sweep_matches(records);
    // (index in the sweep's plateaus, or past them for a fixed row's, and the ceiling)
    let mut ceilings: Vec<(usize, MemoryCeiling)> = Vec::new();
    let mut outer: Option<(MemoryLevel, f64)> = dram_gbps.map(|g| (MemoryLevel::Dram, g));
    for (position, (kernel, level)) in cache::LEVELS.into_iter().enumerate().rev() {
        let matched = sweep
            .iter()
            .position(|s| s.role == PlateauRole::Ceiling(level));
        let mut fixed = records
            .iter()
            .filter(|r| r.family == Family::Cache && r.kernel == kernel)
            .peekable();
        let has_fixed = fixed.peek().is_some();
        // the matched plateau's median step, unless it lies below an outer level's ceiling
        let from_sweep = matched.and_then(|i| {
            let s = &mut sweep[i];
            match outer {
                Some((outer, outer_gbps)) if s.plateau.median_gbps < outer_gbps => {
                    s.role = PlateauRole::BelowOuter {
                        level,
                        outer,
                        outer_gbps,
                        fixed_rows: has_fixed,
                    };
                    None
                }
                _ => {
                    let median_row = records.iter().find(|r| {
                        r.valid
                            && r.family == Family::Cache
                            && r.kernel == cache::SWEEP
                            && r.case_id() == s.median_case
                    });
                    let measured = Best {
                        value: s.plateau.median_gbps,
                        case: s.median_case.clone(),
                        suspect: median_row.and_then(suspect_reason),
                    };
                    Some((
                        i,
                        cache_ceiling(level, Some(measured), Some(s.plateau.clone())),
                    ))
                }
            }
        });
        // else the best of the level's fixed-size rows
        let ceiling = from_sweep.or_else(|| {
            has_fixed.then(|| {
                let measured = best(fixed, |r| r.gbps);
                (sweep.len() + position, cache_ceiling(level, measured, None))
            })
        });
        if let Some((order, c)) = ceiling {
            if let Some(g) = c.gbps {
                if outer.is_none_or(|(_, o)| g > o) {
                    outer = Some((level, g));
                }
            }
            ceilings.push((order, c));
        }
    }
    ceilings.sort_by_key(|(order, _)| *order);
    (ceilings.into_iter().map(|(_, c)| c).collect(), sweep)
}

/// The best valid GB/s of the STREAM rows whose working set is a DRAM working set ([`best`]).
fn dram_best(records: &[Record]) -> Option<Best> {
    best(
        records
            .iter()
            .filter(|r| r.family == Family::Stream && is_dram_working_set(r)),
        |r| r.gbps,
    )
}

/// A cache level's ceiling: its measured GB/s and the case that set it (from the sweep's
/// `plateau` where one matched the level), held against no spec sheet (none gives one).
fn cache_ceiling(
    level: MemoryLevel,
    measured: Option<Best>,
    plateau: Option<SweepPlateau>,
) -> MemoryCeiling {
    let suspect_reason = measured.as_ref().and_then(|m| m.suspect.clone());
    MemoryCeiling {
        level,
        gbps: measured.as_ref().map(|m| m.value),
        case: measured.map(|m| m.case),
        spec_gbps: None,
        spec_basis: "no spec sheet gives cache bandwidth".to_string(),
        efficiency: None,
        above_spec: false,
        suspect: suspect_reason.is_some(),
        suspect_reason,
        plateau,
    }
}

/// Whether a tensor row's kernel is a `wgmma` one (Hopper's dense path).
pub fn is_wgmma(kernel: &str) -> bool {
    kernel.starts_with("wgmma_")
}

/// The figure that sets a ceiling: its value, its case, and the flags of its row where it had
/// to come from a flagged one.
#[derive(Clone, Debug, PartialEq)]
struct Best {
    value: f64,
    case: String,
    /// `case: flags` of a flagged row: the ceiling is suspect, and this says why.
    suspect: Option<String>,
}

/// The best valid figure among `rows`: the best unflagged row's wherever one has a figure (a
/// flagged figure is not to be trusted however high it is, and noise mostly raises a maximum),
/// else the best flagged row's, said to be suspect. Ties keep the first row.
fn best<'a>(
    rows: impl Iterator<Item = &'a Record>,
    figure: impl Fn(&Record) -> Option<f64>,
) -> Option<Best> {
    let mut clean: Option<(f64, &Record)> = None;
    let mut flagged: Option<(f64, &Record)> = None;
    for r in rows.filter(|r| r.valid) {
        if let Some(v) = usable(figure(r)) {
            let slot = if r.flags.is_empty() {
                &mut clean
            } else {
                &mut flagged
            };
            if slot.as_ref().is_none_or(|(b, _)| v > *b) {
                *slot = Some((v, r));
            }
        }
    }
    clean.or(flagged).map(|(value, r)| Best {
        value,
        case: r.case_id(),
        suspect: suspect_reason(r),
    })
}

/// `case: flags` of a flagged row; `None` for an unflagged one.
fn suspect_reason(r: &Record) -> Option<String> {
    (!r.flags.is_empty()).then(|| format!("{}: {}", r.case_id(), r.flags))
}

/// Fits the roofline of one run. `spec(family, precision)` gives the spec figure of a ceiling
/// (GB/s for `stream`, GFLOP/s otherwise) or why there is none.
pub fn fit(
    records: &[Record],
    spec: &dyn Fn(Family, Precision) -> Result<SpecFigure, String>,
) -> Roofline {
    let mut fit = Roofline {
        excluded: excluded_rows(records),
        ..Roofline::default()
    };
    // Memory: DRAM from the STREAM rows whose working set is a DRAM working set.
    fit.memory_ceilings
        .extend(dram_ceiling(records, spec, &mut fit.excluded));
    // Caches: the sweep's plateau matched to a level where it is no slower than the levels
    // behind, else the best fixed-size row of that level.
    let dram_gbps = fit.memory(MemoryLevel::Dram).and_then(|m| m.gbps);
    fit.memory_ceilings
        .extend(cache_ceilings(records, dram_gbps).0);
    fit.compute_ceilings = compute_ceilings(records, spec);
    fit.ridge_points = ridge_points(&fit.memory_ceilings, &fit.compute_ceilings);
    fit.points = points(records, &fit);
    fit.gemm_efficiency = gemm_efficiency(records, &fit);
    fit
}

/// The rows that give nothing to fit: every invalid row (`case: status`), and every valid one
/// without a finite positive figure.
fn excluded_rows(records: &[Record]) -> Vec<String> {
    let mut excluded = Vec::new();
    for r in records {
        let has_figure = usable(r.gbps).is_some() || usable(r.gflops).is_some();
        if !r.valid {
            excluded.push(format!("{}: {}", r.case_id(), r.status));
        } else if !has_figure && r.family != Family::Launch {
            // (a launch row is a time, which the calibration's launch section keeps; it has
            // no rate to fit by design, so it is not listed as a row that failed to give one)
            excluded.push(format!("{}: no finite positive figure", r.case_id()));
        }
    }
    excluded
}

/// The DRAM ceiling: the best STREAM row whose working set is a DRAM working set, against the
/// spec; none when there is neither such a row nor a spec. The valid STREAM rows that ran in a
/// cache are listed in `excluded`.
fn dram_ceiling(
    records: &[Record],
    spec: &dyn Fn(Family, Precision) -> Result<SpecFigure, String>,
    excluded: &mut Vec<String>,
) -> Option<MemoryCeiling> {
    let stream: Vec<&Record> = records
        .iter()
        .filter(|r| r.family == Family::Stream)
        .filter(|r| {
            let dram = is_dram_working_set(r);
            if !dram && r.valid {
                excluded.push(format!(
                    "{}: working set {} bytes is under 4x the last-level cache ({} bytes): not a \
                     DRAM figure",
                    r.case_id(),
                    r.working_set_bytes,
                    r.llc_bytes
                ));
            }
            dram
        })
        .collect();
    let dram_spec = spec(Family::Stream, Precision::F32);
    if stream.is_empty() && dram_spec.is_err() {
        return None;
    }
    let measured = dram_best(records);
    let (spec_gbps, spec_basis) = split_spec(dram_spec);
    let (efficiency, above_spec) = efficiency(measured.as_ref().map(|m| m.value), spec_gbps);
    let suspect_reason = measured.as_ref().and_then(|m| m.suspect.clone());
    Some(MemoryCeiling {
        level: MemoryLevel::Dram,
        gbps: measured.as_ref().map(|m| m.value),
        case: measured.map(|m| m.case),
        spec_gbps,
        spec_basis,
        efficiency,
        above_spec,
        suspect: suspect_reason.is_some(),
        suspect_reason,
        plateau: None,
    })
}

/// The compute ceilings, per family and precision that rows measured or the sheet has, in
/// family and precision order.
fn compute_ceilings(
    records: &[Record],
    spec: &dyn Fn(Family, Precision) -> Result<SpecFigure, String>,
) -> Vec<ComputeCeiling> {
    let mut keys: Vec<(Family, Precision)> = records
        .iter()
        .filter(|r| matches!(r.family, Family::Peak | Family::Tensor))
        .map(|r| (r.family, r.precision))
        .chain(
            SPEC_CEILINGS
                .into_iter()
                .filter(|(f, p)| spec(*f, *p).is_ok()),
        )
        .collect();
    keys.sort_by_key(|(f, p)| (*f, Precision::ALL.iter().position(|q| q == p)));
    keys.dedup();
    let mut ceilings = Vec::new();
    for (family, precision) in keys {
        let rows = || {
            records
                .iter()
                .filter(move |r| r.family == family && r.precision == precision)
        };
        // Hopper: the tensor ceiling is the `wgmma` rows' (the dense path); `mma.sync` rows stay
        // points on the plot, the legacy path, and set the ceiling only where no wgmma row has a
        // figure (another device, or every wgmma row invalid).
        let measured = best(rows().filter(|r| is_wgmma(&r.kernel)), |r| r.gflops)
            .or_else(|| best(rows(), |r| r.gflops));
        let (spec_gflops, spec_basis) = split_spec(spec(family, precision));
        let (efficiency, above_spec) = efficiency(measured.as_ref().map(|m| m.value), spec_gflops);
        let suspect_reason = measured.as_ref().and_then(|m| m.suspect.clone());
        ceilings.push(ComputeCeiling {
            family,
            precision,
            gflops: measured.as_ref().map(|m| m.value),
            case: measured.map(|m| m.case),
            spec_gflops,
            spec_basis,
            efficiency,
            above_spec,
            suspect: suspect_reason.is_some(),
            suspect_reason,
        });
    }
    ceilings
}

/// The ridge points: every memory ceiling with every compute ceiling, where the measured or the
/// spec pair has both figures.
fn ridge_points(memory: &[MemoryCeiling], compute: &[ComputeCeiling]) -> Vec<RidgePoint> {
    let mut ridges = Vec::new();
    for m in memory {
        for c in compute {
            let ratio = |p: Option<f64>, b: Option<f64>| p.zip(b).map(|(p, b)| p / b);
            let ridge = RidgePoint {
                memory: m.level,
                family: c.family,
                precision: c.precision,
                flop_per_byte: ratio(c.gflops, m.gbps),
                spec_flop_per_byte: ratio(c.spec_gflops, m.spec_gbps),
            };
            if ridge.flop_per_byte.is_some() || ridge.spec_flop_per_byte.is_some() {
                ridges.push(ridge);
            }
        }
    }
    ridges
}

/// The points: every valid row with an intensity and an arithmetic rate, held against its roof
/// (the DRAM ceiling and the compute ceiling of its precision, in `fit`).
fn points(records: &[Record], fit: &Roofline) -> Vec<Point> {
    let dram = fit.memory(MemoryLevel::Dram);
    // The CV of the row that set a measured ceiling (0 for a spec figure, which has none).
    let spread_of = |case: Option<&String>| {
        case.and_then(|c| records.iter().find(|r| r.valid && r.case_id() == *c))
            .and_then(|r| usable(r.cv))
            .unwrap_or(0.0)
    };
    let mut points = Vec::new();
    for r in records.iter().filter(|r| r.valid) {
        let (Some(flop_per_byte), Some(gflops)) = (usable(r.intensity), usable(r.gflops)) else {
            continue;
        };
        if !matches!(r.family, Family::Stream | Family::Intensity | Family::Gemm) {
            continue;
        }
        // (figure, basis, spread of the figure)
        let memory = dram.and_then(|m| {
            m.gbps
                .map(|v| (v, "measured DRAM", spread_of(m.case.as_ref())))
                .or(m.spec_gbps.map(|v| (v, "spec DRAM", 0.0)))
        });
        // The compute ceiling of the point's own precision: the ALU peak (an intensity sweep
        // runs FMAs, not tensor instructions), or a tensor-core GEMM's tensor peak.
        let ceiling_family = if r.family == Family::Gemm {
            gemm_ceiling_family(r.precision)
        } else {
            Family::Peak
        };
        let compute = fit.compute(ceiling_family, r.precision).and_then(|c| {
            c.gflops
                .map(|v| (v, "measured", spread_of(c.case.as_ref())))
                .or(c.spec_gflops.map(|v| (v, "spec", 0.0)))
        });
        let memory_roof = memory.map(|(b, _, spread)| (flop_per_byte * b, spread));
        let (bound, roof) = match (memory_roof, compute.map(|c| (c.0, c.2))) {
            (Some(m), Some(p)) if m.0 < p.0 => (Bound::Memory, Some(m)),
            (Some(_), Some(p)) => (Bound::Compute, Some(p)),
            (Some(m), None) => (Bound::Memory, Some(m)),
            (None, Some(p)) => (Bound::Compute, Some(p)),
            (None, None) => (Bound::Unknown, None),
        };
        let peak = if ceiling_family == Family::Tensor {
            "tensor peak"
        } else {
            "peak"
        };
        let roof_basis = match (memory, compute) {
            (Some((_, m, _)), Some((_, c, _))) => format!("{m}, {c} {} {peak}", r.precision),
            (Some((_, m, _)), None) => format!("{m} only: no {} compute ceiling", r.precision),
            (None, Some((_, c, _))) => {
                format!("{c} {} {peak} only: no DRAM ceiling", r.precision)
            }
            (None, None) => "no DRAM or compute ceiling".to_string(),
        };
        let fraction_of_roof = roof.map(|(roof, _)| gflops / roof);
        let noise = roof.map_or(0.0, |(_, spread)| usable(r.cv).unwrap_or(0.0).hypot(spread));
        points.push(Point {
            case: r.case_id(),
            family: r.family,
            precision: r.precision,
            param: r.param,
            flop_per_byte,
            gflops,
            bound,
            roof_gflops: roof.map(|(roof, _)| roof),
            fraction_of_roof,
            above_roof: fraction_of_roof.is_some_and(|f| f > 1.0 + ROOF_NOISE_SPREADS * noise),
            roof_basis,
        });
    }
    points
}

/// Per implementation and precision, in order of first appearance, every valid GEMM row's
/// figure over its precision's compute ceiling, ascending in size.
fn gemm_efficiency(records: &[Record], fit: &Roofline) -> Vec<GemmEfficiency> {
    let mut out: Vec<GemmEfficiency> = Vec::new();
    for r in records
        .iter()
        .filter(|r| r.valid && r.family == Family::Gemm)
    {
        let (Some(gflops), Some(shape)) = (usable(r.gflops), r.param.and_then(Param::shape)) else {
            continue;
        };
        let index = match out
            .iter()
            .position(|e| e.kernel == r.kernel && e.precision == r.precision)
        {
            Some(i) => i,
            None => {
                let ceiling = fit.compute(gemm_ceiling_family(r.precision), r.precision);
                out.push(GemmEfficiency {
                    kernel: r.kernel.clone(),
                    precision: r.precision,
                    ceiling: GemmEfficiency::ceiling_name(r.precision),
                    ceiling_gflops: ceiling.and_then(|c| c.gflops),
                    spec_gflops: ceiling.and_then(|c| c.spec_gflops),
                    points: Vec::new(),
                });
                out.len() - 1
            }
        };
        let e = &mut out[index];
        let (ceiling, spec) = (e.ceiling_gflops, e.spec_gflops);
        e.points.push(GemmEfficiencyPoint {
            shape,
            gflop: shape.flops() as f64 / 1e9,
            gflops,
            efficiency: ceiling.map(|c| gflops / c),
            spec_efficiency: spec.map(|s| gflops / s),
        });
    }
    for e in &mut out {
        e.points
            .sort_by(|a, b| a.gflop.total_cmp(&b.gflop).then(a.shape.cmp(&b.shape)));
    }
    out
}

fn split_spec(s: Result<SpecFigure, String>) -> (Option<f64>, String) {
    match s {
        Ok(f) => (usable(Some(f.value)), f.basis),
        Err(why) => (None, why),
    }
}

/// The turn of one batch sweep (one implementation, precision and weight N × K, ascending in
/// M): the knee of the two lines a roofline draws through its points, the bandwidth its
/// smallest M ran at (a line rising with intensity) and the best rate of the series (a flat
/// top), which meet at best ÷ bandwidth FLOP/byte; beside the measured ridge of the series'
/// ceiling (its precision's, [`gemm_ceiling_family`]) over DRAM. A series that behaves as the
/// roofline says turns near the ridge.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchTurn {
    pub kernel: String,
    pub precision: Precision,
    /// The weight, N × K.
    pub weight: (u64, u64),
    /// Valid points in the series (distinct M).
    pub points: usize,
    /// The smallest M of the series, and the GB/s it ran at (GFLOP/s ÷ FLOP/byte).
    pub first_m: u64,
    pub first_gbps: f64,
    /// The series' best GFLOP/s.
    pub best_gflops: f64,
    /// best_gflops ÷ first_gbps.
    pub flop_per_byte: f64,
    /// The measured ridge it is held against, FLOP/byte, if one was fitted.
    pub ridge: Option<f64>,
}

/// The GEMM points of a run as series: one per implementation, precision and weight shape of
/// the batch sweep ([`crate::cases::gemm::weight_of`]), ascending in M; every other shape (the
/// square sweep) a series of its own point. Points without a finite positive intensity and
/// rate are left out. In order of implementation, precision and weight.
pub struct GemmSeries<'a> {
    pub kernel: &'a str,
    pub precision: Precision,
    /// N × K of a batch sweep's weight.
    pub weight: Option<(u64, u64)>,
    pub points: Vec<&'a Point>,
}

impl GemmSeries<'_> {
    /// A reference implementation's (cuBLAS, the `gemm` crate), not ours.
    pub fn reference(&self) -> bool {
        crate::cases::gemm::reference_of(self.kernel).is_none()
    }
}

/// The series of the GEMM points among `points` ([`GemmSeries`]).
pub fn gemm_series(points: &[Point]) -> Vec<GemmSeries<'_>> {
    use crate::cases::gemm;
    /// implementation, precision, weight shape (N, K) of a batch sweep, M, the point
    type Keyed<'a> = (&'a str, Precision, Option<(u64, u64)>, u64, &'a Point);
    let mut keyed: Vec<Keyed<'_>> = points
        .iter()
        .filter(|p| p.family == Family::Gemm)
        .filter(|p| usable(Some(p.flop_per_byte)).is_some() && usable(Some(p.gflops)).is_some())
        .filter_map(|p| {
            let shape = p.param?.shape()?;
            let kernel = p.case.split('/').nth(1).unwrap_or_default();
            let weight = gemm::weight_of(shape).map(|w| (w.n, w.k));
            Some((kernel, p.precision, weight, shape.m, p))
        })
        .collect();
    keyed.sort_by(|a, b| (a.0, a.1, a.2, a.3).cmp(&(b.0, b.1, b.2, b.3)));
    let mut out: Vec<GemmSeries<'_>> = Vec::new();
    for (kernel, precision, weight, _, point) in keyed {
        match out.last_mut() {
            Some(s)
                if weight.is_some()
                    && (s.kernel, s.precision, s.weight) == (kernel, precision, weight) =>
            {
                s.points.push(point)
            }
            _ => out.push(GemmSeries {
                kernel,
                precision,
                weight,
                points: vec![point],
            }),
        }
    }
    out
}

/// The turn of every batch sweep among `points` with at least two sizes of M, in order of
/// implementation, precision and weight ([`gemm_series`]).
pub fn batch_turns(points: &[Point], ridges: &[RidgePoint]) -> Vec<BatchTurn> {
    gemm_series(points)
        .into_iter()
        .filter_map(|s| {
            let weight = s.weight?;
            // (M, FLOP/byte, GFLOP/s), ascending in M, each M once
            let mut m: Vec<(u64, f64, f64)> = s
                .points
                .iter()
                .filter_map(|p| Some((p.param?.shape()?.m, p.flop_per_byte, p.gflops)))
                .collect();
            m.dedup_by_key(|&mut (m, _, _)| m);
            if m.len() < 2 {
                return None;
            }
            let (first_m, i, g) = m[0];
            let first_gbps = g / i;
            let best_gflops = m.iter().map(|&(_, _, g)| g).fold(0.0, f64::max);
            Some(BatchTurn {
                kernel: s.kernel.to_string(),
                precision: s.precision,
                weight,
                points: m.len(),
                first_m,
                first_gbps,
                best_gflops,
                flop_per_byte: best_gflops / first_gbps,
                ridge: ridges
                    .iter()
                    .find(|r| {
                        r.memory == MemoryLevel::Dram
                            && r.family == gemm_ceiling_family(s.precision)
                            && r.precision == s.precision
                    })
                    .and_then(|r| usable(r.flop_per_byte)),
            })
        })
        .collect()
}

/// The attainable rate at `flop_per_byte` under a bandwidth and a compute ceiling.
pub fn attainable_gflops(flop_per_byte: f64, gbps: f64, gflops: f64) -> f64 {
    (flop_per_byte * gbps).min(gflops)
}
