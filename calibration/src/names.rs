//! The names a calibration shares with roofprobe's CSV rows: which family of cases, which number
//! format, which kind of backend. Each serialises exactly as it prints.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A family of cases, i.e. which part of the roofline it measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// STREAM-style memory bandwidth (DRAM working sets).
    Stream,
    /// Peak arithmetic, register resident.
    Peak,
    /// Tensor-core peaks (`mma.sync`).
    Tensor,
    /// Arithmetic-intensity sweep: k operations per element loaded.
    Intensity,
    /// Cache bandwidth: a read-only sum over a working set that stays in one cache level.
    Cache,
    /// Matrix products (`C = A·Bᵀ`): square, and the LLM batch sweep; the parameter is the
    /// shape ([`crate::Shape`]).
    Gemm,
    /// Load-to-use latency: a dependent pointer chase, one cache line per hop, one thread.
    Latency,
    /// Usable memory: the total, what is free, what a context costs and the largest single
    /// allocation that succeeds, in bytes (the row's `working_set_bytes`).
    Capacity,
    /// STREAM copy and triad against size: arrays from 1 MiB up, fitted as
    /// time = constant + bytes / bandwidth; the parameter is KiB per array.
    Efficiency,
    /// Launch overhead: an empty kernel's launch time back to back on one stream and the event
    /// timer's resolution on a GPU, waking the worker threads and one barrier on the host; the
    /// time columns carry the per-launch time.
    Launch,
    /// Copies over the host link and within a device (`cuMemcpy*Async`), at sizes from 4 KiB
    /// to 1 GiB; the parameter is the copy's KiB, the figure its bytes (once) over its time.
    Link,
}

impl Family {
    pub const ALL: [Family; 11] = [
        Family::Stream,
        Family::Peak,
        Family::Tensor,
        Family::Intensity,
        Family::Cache,
        Family::Gemm,
        Family::Latency,
        Family::Capacity,
        Family::Efficiency,
        Family::Launch,
        Family::Link,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Family::Stream => "stream",
            Family::Peak => "peak",
            Family::Tensor => "tensor",
            Family::Intensity => "intensity",
            Family::Cache => "cache",
            Family::Gemm => "gemm",
            Family::Latency => "latency",
            Family::Capacity => "capacity",
            Family::Efficiency => "efficiency",
            Family::Launch => "launch",
            Family::Link => "link",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Family {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Family::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown family `{s}`; expected one of: {}",
                    Family::ALL.map(Family::as_str).join(", ")
                )
            })
    }
}

/// The number format a case computes in. Tensor-core formats name the input and the
/// accumulator type (`f16.f32`: f16 inputs, f32 accumulation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Precision {
    #[serde(rename = "f64")]
    F64,
    #[serde(rename = "f32")]
    F32,
    /// Two f16 lanes per 32-bit register (`fma.rn.f16x2`).
    #[serde(rename = "f16x2")]
    F16x2,
    /// Two bf16 lanes per 32-bit register (`fma.rn.bf16x2`).
    #[serde(rename = "bf16x2")]
    Bf16x2,
    /// 32-bit integer multiply-add; counted as 2 operations, reported as "flops".
    #[serde(rename = "i32")]
    I32,
    #[serde(rename = "f16.f16")]
    F16F16,
    #[serde(rename = "f16.f32")]
    F16F32,
    #[serde(rename = "bf16.f32")]
    Bf16F32,
    #[serde(rename = "tf32.f32")]
    Tf32F32,
    #[serde(rename = "s8.s32")]
    S8S32,
    #[serde(rename = "f64.f64")]
    F64F64,
    #[serde(rename = "e4m3.f32")]
    E4m3F32,
    /// fp8 e5m2 inputs, f32 accumulation (Hopper's `wgmma`).
    #[serde(rename = "e5m2.f32")]
    E5m2F32,
    /// Bytes, counted as they are: the unit of a capacity row.
    #[serde(rename = "u8")]
    U8,
}

impl Precision {
    pub const ALL: [Precision; 14] = [
        Precision::F64,
        Precision::F32,
        Precision::F16x2,
        Precision::Bf16x2,
        Precision::I32,
        Precision::F16F16,
        Precision::F16F32,
        Precision::Bf16F32,
        Precision::Tf32F32,
        Precision::S8S32,
        Precision::F64F64,
        Precision::E4m3F32,
        Precision::E5m2F32,
        Precision::U8,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
            Precision::F16x2 => "f16x2",
            Precision::Bf16x2 => "bf16x2",
            Precision::I32 => "i32",
            Precision::F16F16 => "f16.f16",
            Precision::F16F32 => "f16.f32",
            Precision::Bf16F32 => "bf16.f32",
            Precision::Tf32F32 => "tf32.f32",
            Precision::S8S32 => "s8.s32",
            Precision::F64F64 => "f64.f64",
            Precision::E4m3F32 => "e4m3.f32",
            Precision::E5m2F32 => "e5m2.f32",
            Precision::U8 => "u8",
        }
    }

    /// True for the integer formats, whose operations are not floating point.
    pub fn is_integer(self) -> bool {
        matches!(self, Precision::I32 | Precision::S8S32)
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Precision::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown precision `{s}`; expected one of: {}",
                    Precision::ALL.map(Precision::as_str).join(", ")
                )
            })
    }
}

/// Which kind of backend measured a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Cuda,
    Host,
}

impl BackendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Host => "host",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Family::ALL {
            assert_eq!(f.as_str().parse::<Family>().unwrap(), f);
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{f}\""));
        }
        for p in Precision::ALL {
            assert_eq!(p.as_str().parse::<Precision>().unwrap(), p);
            // serde uses the same spelling as Display
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{p}\""));
        }
        assert!("f17".parse::<Precision>().unwrap_err().contains("f16x2"));
        assert!("gemv".parse::<Family>().is_err());
        for b in [BackendKind::Cuda, BackendKind::Host] {
            assert_eq!(serde_json::to_string(&b).unwrap(), format!("\"{b}\""));
        }
    }
}
