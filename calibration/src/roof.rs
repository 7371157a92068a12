//! What a calibration says about the roof: bandwidth and compute ceilings, the ridge points
//! where they meet, the measurements placed under them, and what the spec figures rest on.
//!
//! Plain data. How roofprobe fits these from a run's rows is `roofprobe::roofline`'s business;
//! how a file is checked is [`crate::check`]'s.

use crate::names::{Family, Precision};
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
    /// The family's parameter (operations per element in the intensity sweep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<u32>,
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
