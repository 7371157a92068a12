//! What a calibration says about the roof: bandwidth and compute ceilings, the ridge points
//! where they meet, the measurements placed under them, and what the spec figures rest on.
//!
//! Plain data. How roofprobe fits these from a run's rows is `roofprobe::roofline`'s business;
//! how a file is checked is [`crate::check`]'s.

use crate::names::{Family, Precision};
use crate::param::Param;
use serde::{Deserialize, Serialize};

/// A level of the memory hierarchy that has a bandwidth ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryLevel {
    Dram,
    /// The host's last-level cache where it has three levels.
    L3,
    L2,
    L1,
}

impl MemoryLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryLevel::Dram => "DRAM",
            MemoryLevel::L3 => "L3",
            MemoryLevel::L2 => "L2",
            MemoryLevel::L1 => "L1",
        }
    }
}

/// A bandwidth ceiling, GB/s (10^9 bytes per second, STREAM counting).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryCeiling {
    pub level: MemoryLevel,
    /// Best valid measurement; `None` when no valid row measured this level.
    pub gbps: Option<f64>,
    /// The case that set it (`stream/triad/f32`).
    pub case: Option<String>,
    pub spec_gbps: Option<f64>,
    /// Where the spec figure comes from, or why there is none.
    pub spec_basis: String,
    /// measured / spec.
    pub efficiency: Option<f64>,
    /// The measurement exceeds the spec figure.
    pub above_spec: bool,
    /// The row that set it was flagged (a figure not to be trusted without a rerun): no
    /// unflagged row of this level had a figure. Absent (false) otherwise, and in files written
    /// before roofprobe-calibration/2.
    #[serde(default, skip_serializing_if = "is_false")]
    pub suspect: bool,
    /// Why, where `suspect`: the row's case and flags (`stream/write/f32: high_cv(26.5%)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect_reason: Option<String>,
    /// Where a cache ceiling came from the bandwidth sweep: the plateau it is the best row of.
    /// Absent for other ceilings, and in files written before the sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plateau: Option<SweepPlateau>,
}

/// A plateau of the bandwidth-against-working-set sweep (`cache/sweep/…`), found by change
/// points, and the reported level it was matched to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPlateau {
    /// The level it was matched to as the device or OS names it (`L1d`, `L2`), `DRAM` beyond
    /// the largest reported cache, or empty where it was matched to none (nothing reported
    /// lies within 2x of its edge, or a longer plateau took the level).
    pub matched: String,
    /// The reported size of that level, bytes (summed over the cores or SMs the sweep used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_bytes: Option<u64>,
    /// Its first and last working sets.
    pub from_bytes: u64,
    pub to_bytes: u64,
    /// Where it ends: the working set where the curve crosses halfway (in log) to the next
    /// plateau; absent for the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge_bytes: Option<u64>,
    /// The GB/s of its median step (the upper of the two middle steps of an even count): a step
    /// that was measured, the one a ceiling from this plateau names.
    pub median_gbps: f64,
    /// How many steps it spans.
    pub steps: u32,
}

/// An arithmetic ceiling, GFLOP/s (GOP/s for integer precisions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComputeCeiling {
    /// `peak` (ALU) or `tensor` (tensor cores).
    pub family: Family,
    pub precision: Precision,
    pub gflops: Option<f64>,
    pub case: Option<String>,
    pub spec_gflops: Option<f64>,
    pub spec_basis: String,
    pub efficiency: Option<f64>,
    pub above_spec: bool,
    /// The row that set it was flagged: no unflagged row of this family and precision had a
    /// figure (as [`MemoryCeiling::suspect`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub suspect: bool,
    /// Why, where `suspect`: the row's case and flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect_reason: Option<String>,
}

/// Whether a flag is unset, so a file leaves it out.
fn is_false(b: &bool) -> bool {
    !*b
}

impl ComputeCeiling {
    /// `f32`, `tensor f16.f32`: how a ceiling is named in tables and plots.
    pub fn label(&self) -> String {
        match self.family {
            Family::Tensor => format!("tensor {}", self.precision),
            _ => self.precision.to_string(),
        }
    }
}

/// Where a memory ceiling meets a compute ceiling, in flop per byte.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RidgePoint {
    pub memory: MemoryLevel,
    pub family: Family,
    pub precision: Precision,
    /// Measured compute / measured bandwidth.
    pub flop_per_byte: Option<f64>,
    /// Spec compute / spec bandwidth.
    pub spec_flop_per_byte: Option<f64>,
}

/// Which side of the ridge a point lies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Memory,
    Compute,
    /// No roof to hold it against (no memory and no compute ceiling, measured or spec).
    Unknown,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory-bound",
            Bound::Compute => "compute-bound",
            Bound::Unknown => "no roof",
        }
    }
}

/// A measurement placed on the roofline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub case: String,
    pub family: Family,
    pub precision: Precision,
    /// The family's parameter (operations per element in the intensity sweep, `MxNxK` of a
    /// GEMM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<Param>,
    /// flops / bytes.
    pub flop_per_byte: f64,
    pub gflops: f64,
    pub bound: Bound,
    /// The roof at this intensity, `min(P, I × B)`.
    pub roof_gflops: Option<f64>,
    /// gflops / roof_gflops: 1 is on the roof.
    pub fraction_of_roof: Option<f64>,
    /// Above the roof by more than the noise of the point and of the row that set its roof
    /// (`roofprobe::roofline` explains the rule): one of the two figures is not what the
    /// hardware does. Only ever true when `fraction_of_roof` is above 1.
    #[serde(default)]
    pub above_roof: bool,
    /// Which ceilings made the roof (`measured DRAM, measured f32`), or what was missing.
    pub roof_basis: String,
}

/// What the spec comparison of one device is based on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "basis", rename_all = "snake_case")]
pub enum SpecBasis {
    /// A row of the spec table matched the driver-reported name.
    Sheet {
        /// The entry's `device` column, e.g. `A100 80GB SXM4`.
        entry: String,
        /// The entry's `source` column.
        source: String,
        /// Anything that weakens the match (SM count differs from the sheet, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        caveat: Option<String>,
    },
    /// No row matched: figures derived from device attributes where possible.
    Theoretical {
        /// Why no row matched.
        reason: String,
    },
    /// No spec figures at all (the host CPU, or a GPU without the attributes needed).
    None { reason: String },
}

impl SpecBasis {
    /// One line for tables and plot captions.
    pub fn describe(&self) -> String {
        match self {
            SpecBasis::Sheet { entry, caveat, .. } => match caveat {
                Some(c) => format!("spec sheet \"{entry}\" ({c})"),
                None => format!("spec sheet \"{entry}\""),
            },
            SpecBasis::Theoretical { reason } => {
                format!("theoretical peaks from device attributes ({reason})")
            }
            SpecBasis::None { reason } => format!("no spec ({reason})"),
        }
    }
}

/// The compute ceiling a GEMM of `precision` is held against: the tensor-core peak of a
/// tensor-core type (its inputs and accumulator named, `bf16.f32`), else the ALU peak.
pub fn gemm_ceiling_family(precision: Precision) -> Family {
    match precision {
        Precision::F16F16
        | Precision::F16F32
        | Precision::Bf16F32
        | Precision::Tf32F32
        | Precision::S8S32
        | Precision::F64F64
        | Precision::E4m3F32
        | Precision::E5m2F32 => Family::Tensor,
        _ => Family::Peak,
    }
}

/// One GEMM measurement against its compute ceiling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmEfficiencyPoint {
    /// `MxNxK`.
    pub shape: crate::param::Shape,
    /// The product's size: 2·M·N·K / 10^9.
    pub gflop: f64,
    pub gflops: f64,
    /// gflops / the measured ceiling; absent where it was not measured. Not capped at 1: a
    /// library may use instructions the ceiling's kernel does not (wgmma above mma.sync).
    pub efficiency: Option<f64>,
    /// gflops / the spec ceiling; absent where the sheet has none.
    pub spec_efficiency: Option<f64>,
}

/// The achieved GEMM efficiency of one implementation in one precision, as a function of the
/// product's size: the curve estimators such as Calculon take as `gflops_efficiency`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmEfficiency {
    /// The implementation (`simd`, `gemm-crate`, `ptx`, `cublas`).
    pub kernel: String,
    pub precision: Precision,
    /// The ceiling it is held against ([`gemm_ceiling_family`]): `peak f32`, `tensor bf16.f32`.
    pub ceiling: String,
    /// That ceiling, measured and on the spec sheet (the calibration's compute ceiling).
    pub ceiling_gflops: Option<f64>,
    pub spec_gflops: Option<f64>,
    /// Ascending in size.
    pub points: Vec<GemmEfficiencyPoint>,
}

impl GemmEfficiency {
    /// `peak f32`, `tensor bf16.f32`: how the ceiling of a GEMM of `precision` is named.
    pub fn ceiling_name(precision: Precision) -> String {
        format!("{} {precision}", gemm_ceiling_family(precision))
    }
}
