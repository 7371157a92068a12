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
pub mod intensity;
pub mod peak;
pub mod stream;
pub mod tensor;

use serde::{Deserialize, Serialize};

// The names a calibration shares with the rows live in the lean calibration crate, so an
// estimator that loads a calibration builds none of roofprobe.
pub use roofprobe_calibration::{Family, Precision};

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
    /// in the cache sweep; `None` elsewhere.
    pub param: Option<u32>,
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
