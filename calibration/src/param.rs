//! A case's parameter, as the CSV's `param` column and a calibration's points hold it: a count
//! (operations per word in the intensity sweep, KiB of working set in the cache sweep) or the
//! shape of a matrix product, `MxNxK` ([`Shape`]).
//!
//! A count is written as a number (as `roofprobe-csv/1` wrote every parameter), a shape as its
//! text; either reads back from a CSV field or a JSON number or string.
//!
//! Plain data: what a product's shape costs (its operations and bytes) is roofprobe's
//! `bench::gemm`'s business.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One product's dimensions: C (M × N) = A (M × K) · Bᵀ (B: N × K).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
}

impl Shape {
    pub const fn new(m: u64, n: u64, k: u64) -> Shape {
        Shape { m, n, k }
    }

    /// A square product of side `n`.
    pub const fn square(n: u64) -> Shape {
        Shape { m: n, n, k: n }
    }

    /// `2·M·N·K` (one multiply and one add per multiply-add), saturating.
    pub fn flops(&self) -> u64 {
        2u64.saturating_mul(self.m)
            .saturating_mul(self.n)
            .saturating_mul(self.k)
    }

    pub fn is_square(&self) -> bool {
        self.m == self.n && self.n == self.k
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.n, self.k)
    }
}

impl FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let dims: Vec<&str> = s.split('x').collect();
        // digits only: `+4`, ` 4` or `4_096` are not a dimension as roofprobe writes one
        let parse = |d: &str| {
            (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .then(|| d.parse::<u64>().ok())
                .flatten()
                .filter(|&v| v > 0)
        };
        match dims.as_slice() {
            [m, n, k] => match (parse(m), parse(n), parse(k)) {
                (Some(m), Some(n), Some(k)) => Ok(Shape { m, n, k }),
                _ => Err(format!(
                    "`{s}` is not a GEMM shape: M, N and K must be positive integers (MxNxK)"
                )),
            },
            _ => Err(format!("`{s}` is not a GEMM shape; expected MxNxK")),
        }
    }
}

/// A case's parameter: a count, or a product's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Param {
    Count(u32),
    Shape(Shape),
}

impl Param {
    pub fn count(self) -> Option<u32> {
        match self {
            Param::Count(c) => Some(c),
            Param::Shape(_) => None,
        }
    }

    pub fn shape(self) -> Option<Shape> {
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
        let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        digits
            .then(|| s.parse::<u32>().ok())
            .flatten()
            .map(Param::Count)
            .ok_or_else(|| format!("`{s}` is not a parameter: expected a count or an MxNxK shape"))
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

/// A shape serialises as its `MxNxK` text.
impl Serialize for Shape {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_round_trip_as_text_and_json() {
        for p in [Param::Count(64), Param::Shape(Shape::new(1, 4096, 14336))] {
            assert_eq!(p.to_string().parse::<Param>().unwrap(), p);
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<Param>(&json).unwrap(), p);
        }
        // a count stays a JSON number, as schema 1 wrote it; a shape is its text
        assert_eq!(serde_json::to_string(&Param::Count(64)).unwrap(), "64");
        assert_eq!(
            serde_json::to_string(&Param::Shape(Shape::square(256))).unwrap(),
            "\"256x256x256\""
        );
        for bad in [
            "64x", "many", "0x1x1", "1x1", "1x1x1x1", "-1", "+4", "+4x4x4", "4x 4x4",
        ] {
            assert!(bad.parse::<Param>().is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<Param>("-3").is_err());
        assert!(serde_json::from_str::<Param>("4294967296").is_err());
        assert_eq!(Shape::new(2, 3, 4).flops(), 48);
        assert_eq!(Shape::new(u64::MAX, 2, 2).flops(), u64::MAX);
    }
}
