//! The catalogue of cases: what each one computes, how much work it does, and how its output
//! is checked.
//!
//! A [`Case`] is backend-neutral: the same `stream/triad/f32` case runs as a PTX kernel on a GPU
//! and as a Rust kernel on the host, does the same analytic work ([`Work`]: bytes read, bytes
//! written, arithmetic operations) and is checked against the same gold values. The work table
//! is the one place where time becomes bandwidth (BabelStream's weight table made explicit);
//! nothing else in the crate counts bytes.
//!
//! This module must not launch or time anything: that is the backends' and the runner's job.

pub mod arith;
pub mod cache;
pub mod gemm;
pub mod intensity;
pub mod peak;
pub mod stream;
pub mod tensor;

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
    /// Matrix products: square, and the LLM batch sweep ([`gemm`]).
    Gemm,
}

impl Family {
    pub const ALL: [Family; 6] = [
        Family::Stream,
        Family::Peak,
        Family::Tensor,
        Family::Intensity,
        Family::Cache,
        Family::Gemm,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Family::Stream => "stream",
            Family::Peak => "peak",
            Family::Tensor => "tensor",
            Family::Intensity => "intensity",
            Family::Cache => "cache",
            Family::Gemm => "gemm",
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
}

impl Precision {
    pub const ALL: [Precision; 12] = [
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

/// The analytic work of one launch of a case, counted the STREAM way: every element read or
/// written by the kernel counts once, with no write-allocate traffic, and arithmetic counts 2 per
/// fused multiply-add per lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Work {
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Arithmetic operations (floating point, or integer for integer precisions).
    pub flops: u64,
}

impl Work {
    /// Bytes moved: read + written.
    pub fn bytes(&self) -> u64 {
        self.bytes_read + self.bytes_written
    }

    /// Arithmetic intensity in operations per byte; `None` for a case that moves no bytes.
    pub fn intensity(&self) -> Option<f64> {
        let bytes = self.bytes();
        (bytes > 0).then(|| self.flops as f64 / bytes as f64)
    }
}

/// One measurable case: a kernel in a precision on a problem of a given size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub family: Family,
    /// The kernel's name in the user's words (`triad`, `fma`, `mma_m16n8k16`).
    pub kernel: String,
    pub precision: Precision,
    /// The family's parameter: operations per element in the intensity sweep, KiB of working set
    /// in the cache sweep, the `MxNxK` shape of a GEMM; `None` elsewhere.
    pub param: Option<Param>,
    /// Problem size in elements (of `precision`) per array.
    pub elements: u64,
    /// Bytes of memory the case's arrays occupy (its working set).
    pub working_set_bytes: u64,
    /// The work of one launch.
    pub work: Work,
}

impl Case {
    /// A stable identifier: `family/kernel/precision[/param]`.
    pub fn id(&self) -> String {
        match self.param {
            Some(p) => format!("{}/{}/{}/{}", self.family, self.kernel, self.precision, p),
            None => format!("{}/{}/{}", self.family, self.kernel, self.precision),
        }
    }

    /// The count parameter (the sweep's k, the cache sweep's KiB), if the case has one.
    pub fn count(&self) -> Option<u32> {
        self.param.and_then(Param::count)
    }
}

/// A case's parameter, as the CSV's `param` column holds it: a count (operations per word in
/// the intensity sweep, KiB of working set in the cache sweep) or a GEMM shape (`MxNxK`).
///
/// A count is written as a number (as schema 1 wrote every parameter), a shape as its text;
/// either reads back from a CSV field or a JSON number or string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Param {
    Count(u32),
    Shape(gemm::Shape),
}

impl Param {
    pub fn count(self) -> Option<u32> {
        match self {
            Param::Count(c) => Some(c),
            Param::Shape(_) => None,
        }
    }

    pub fn shape(self) -> Option<gemm::Shape> {
        match self {
            Param::Shape(s) => Some(s),
            Param::Count(_) => None,
        }
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Param::Count(c) => write!(f, "{c}"),
            Param::Shape(s) => write!(f, "{s}"),
        }
    }
}

impl FromStr for Param {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.contains('x') {
            return s.parse().map(Param::Shape);
        }
        s.parse::<u32>()
            .map(Param::Count)
            .map_err(|_| format!("`{s}` is not a parameter: expected a count or an MxNxK shape"))
    }
}

impl Serialize for Param {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Param::Count(c) => serializer.serialize_u32(*c),
            Param::Shape(s) => serializer.collect_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for Param {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Param;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a count or an MxNxK shape")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Param, E> {
                u32::try_from(v)
                    .map(Param::Count)
                    .map_err(|_| E::custom(format!("count {v} is too large")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Param, E> {
                u32::try_from(v)
                    .map(Param::Count)
                    .map_err(|_| E::custom(format!("{v} is not a count")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Param, E> {
                v.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// The outcome of checking a case's output against its gold values.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub valid: bool,
    /// Empty when valid; otherwise the first failures, BabelStream style (is / should / diff).
    pub detail: String,
}

impl Verdict {
    pub fn valid() -> Self {
        Verdict {
            valid: true,
            detail: String::new(),
        }
    }

    pub fn invalid(detail: impl Into<String>) -> Self {
        Verdict {
            valid: false,
            detail: detail.into(),
        }
    }
}

/// Deterministic pseudo-random bits for input element `index` of array `array`.
///
/// SplitMix64 of the pair, so any element can be regenerated on its own: the host produces a
/// GPU case's inputs, and the checker regenerates them instead of keeping a copy.
pub fn input_bits(array: u64, index: u64) -> u64 {
    let mut z = index
        .wrapping_add(array.wrapping_mul(0xD1B5_4A32_D192_ED03))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Family::ALL {
            assert_eq!(f.as_str().parse::<Family>().unwrap(), f);
        }
        for p in Precision::ALL {
            assert_eq!(p.as_str().parse::<Precision>().unwrap(), p);
            // serde uses the same spelling as Display
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{p}\""));
        }
        assert!("f17".parse::<Precision>().unwrap_err().contains("f16x2"));
        assert!("gemv".parse::<Family>().is_err());
        for p in [
            Param::Count(64),
            Param::Shape(gemm::Shape::new(1, 4096, 14336)),
        ] {
            assert_eq!(p.to_string().parse::<Param>().unwrap(), p);
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<Param>(&json).unwrap(), p);
        }
        // a count stays a JSON number, as schema 1 wrote it
        assert_eq!(serde_json::to_string(&Param::Count(64)).unwrap(), "64");
        assert!("64x".parse::<Param>().is_err() && "many".parse::<Param>().is_err());
    }

    #[test]
    fn work_intensity() {
        let w = Work {
            bytes_read: 8,
            bytes_written: 4,
            flops: 6,
        };
        assert_eq!(w.bytes(), 12);
        assert_eq!(w.intensity(), Some(0.5));
        assert_eq!(Work::default().intensity(), None);
    }

    #[test]
    fn input_bits_differ_by_array_and_index() {
        let a: Vec<u64> = (0..1000).map(|i| input_bits(0, i)).collect();
        let b: Vec<u64> = (0..1000).map(|i| input_bits(1, i)).collect();
        assert_ne!(a, b);
        let mut sorted = a.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 1000, "no repeats in a small range");
        assert_eq!(input_bits(3, 77), input_bits(3, 77));
    }
}
