//! The finiteness check every output passes before it is written or printed: the first figure
//! in a value that is not finite (NaN, ±inf), with its path (`devices[0].answer.prefill.time_s`).
//!
//! serde_json writes a non-finite float as `null`, so a check of the written text cannot tell a
//! figure gone wrong from a figure that is absent; this walks the value itself, through its
//! `Serialize`, so that every figure of every type that can be written is seen, fields added
//! later included. It only reads: it neither writes text nor judges a figure's bounds (that is
//! [`crate::check`]'s).

use crate::check::{display, Seg};
use serde::ser::{self, Serialize};

/// The first figure of `value` that is not finite, with its path; `None` when all are.
pub fn first_non_finite<T: Serialize + ?Sized>(value: &T) -> Option<(String, f64)> {
    let mut walk = Walk {
        path: Vec::new(),
        found: None,
    };
    // the walk stops at the first figure found (its `Err`); any other error is a type this walk
    // cannot see into, which no roofprobe output has
    let _ = value.serialize(&mut walk);
    walk.found
}

struct Walk {
    path: Vec<Seg>,
    found: Option<(String, f64)>,
}

/// Why the walk stopped: a figure was found (or a type it cannot see into).
#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped")
    }
}

impl std::error::Error for Stop {}

impl ser::Error for Stop {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Stop
    }
}

impl Walk {
    fn figure(&mut self, v: f64) -> Result<(), Stop> {
        if v.is_finite() {
            Ok(())
        } else {
            self.found = Some((display(&self.path), v));
            Err(Stop)
        }
    }

    fn under<T: Serialize + ?Sized>(&mut self, seg: Seg, value: &T) -> Result<(), Stop> {
        self.path.push(seg);
        let r = value.serialize(&mut *self);
        self.path.pop();
        r
    }
}

/// A sequence, tuple or map being walked: the index of the next element, a map's key.
struct Items<'a> {
    walk: &'a mut Walk,
    next: usize,
    key: Option<String>,
}

impl<'a> Items<'a> {
    fn new(walk: &'a mut Walk) -> Self {
        Items {
            walk,
            next: 0,
            key: None,
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        let seg = Seg::Index(self.next);
        self.next += 1;
        self.walk.under(seg, value)
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Stop> {
        self.walk.under(Seg::Key(key.to_string()), value)
    }
}

impl<'a> ser::Serializer for &'a mut Walk {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Items<'a>;
    type SerializeTuple = Items<'a>;
    type SerializeTupleStruct = Items<'a>;
    type SerializeTupleVariant = Items<'a>;
    type SerializeMap = Items<'a>;
    type SerializeStruct = Items<'a>;
    type SerializeStructVariant = Items<'a>;

    fn serialize_f32(self, v: f32) -> Result<(), Stop> {
        self.figure(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Stop> {
        self.figure(v)
    }
    fn serialize_bool(self, _: bool) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_i128(self, _: i128) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_u128(self, _: u128) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_char(self, _: char) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        self.under(Seg::Key(variant.to_string()), value)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Items<'a>, Stop> {
        Ok(Items::new(self))
    }
    fn serialize_tuple(self, _: usize) -> Result<Items<'a>, Stop> {
        Ok(Items::new(self))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Items<'a>, Stop> {
        Ok(Items::new(self))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Items<'a>, Stop> {
        self.path.push(Seg::Key(variant.to_string()));
        Ok(Items::new(self))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Items<'a>, Stop> {
        Ok(Items::new(self))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Items<'a>, Stop> {
        Ok(Items::new(self))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Items<'a>, Stop> {
        self.path.push(Seg::Key(variant.to_string()));
        Ok(Items::new(self))
    }
}

impl ser::SerializeSeq for Items<'_> {
    type Ok = ();
    type Error = Stop;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }
    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeTuple for Items<'_> {
    type Ok = ();
    type Error = Stop;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }
    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Items<'_> {
    type Ok = ();
    type Error = Stop;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }
    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Items<'_> {
    type Ok = ();
    type Error = Stop;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }
    fn end(self) -> Result<(), Stop> {
        self.walk.path.pop();
        Ok(())
    }
}

impl ser::SerializeMap for Items<'_> {
    type Ok = ();
    type Error = Stop;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Stop> {
        // a figure used as a key is checked as one; the key names the value's place
        key.serialize(&mut *self.walk)?;
        self.key = Some(match serde_json::to_value(key) {
            Ok(serde_json::Value::String(s)) => s,
            Ok(other) => other.to_string(),
            Err(_) => String::from("?"),
        });
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        let key = self.key.take().unwrap_or_default();
        self.field(&key, value)
    }
    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeStruct for Items<'_> {
    type Ok = ();
    type Error = Stop;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Items<'_> {
    type Ok = ();
    type Error = Stop;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Stop> {
        self.walk.path.pop();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize)]
    struct Phase {
        time_s: Option<f64>,
        points: Vec<(f64, f64)>,
    }

    #[derive(serde::Serialize)]
    enum Answer {
        Inference { prefill: Phase },
    }

    #[derive(serde::Serialize)]
    struct Report {
        devices: Vec<Answer>,
        extra: BTreeMap<String, f32>,
    }

    fn report(time_s: f64, point: f64, extra: f32) -> Report {
        Report {
            devices: vec![
                Answer::Inference {
                    prefill: Phase {
                        time_s: Some(1.0),
                        points: vec![],
                    },
                },
                Answer::Inference {
                    prefill: Phase {
                        time_s: Some(time_s),
                        points: vec![(1.0, 2.0), (3.0, point)],
                    },
                },
            ],
            extra: [("a".to_string(), extra)].into(),
        }
    }

    /// Every non-finite figure is found with its path, however deep (an enum's struct variant,
    /// an `Option`, a tuple in a list, a map's value); a value whose figures are finite, at the
    /// extremes of f64 included, passes.
    #[test]
    fn every_non_finite_figure_is_found_with_its_path() {
        assert_eq!(first_non_finite(&report(1.0, 2.0, 3.0)), None);
        assert_eq!(
            first_non_finite(&report(f64::MAX, f64::MIN_POSITIVE, f32::MAX)),
            None
        );
        let (path, v) = first_non_finite(&report(f64::INFINITY, 2.0, 3.0)).unwrap();
        assert_eq!(path, "devices[1].Inference.prefill.time_s");
        assert_eq!(v, f64::INFINITY);
        let (path, v) = first_non_finite(&report(1.0, f64::NAN, 3.0)).unwrap();
        assert_eq!(path, "devices[1].Inference.prefill.points[1][1]");
        assert!(v.is_nan());
        let (path, _) = first_non_finite(&report(1.0, 2.0, f32::NEG_INFINITY)).unwrap();
        assert_eq!(path, "extra.a");
        // serde_json would have written `null` for each, without a word
        let text = serde_json::to_string(&report(f64::INFINITY, 2.0, 3.0)).unwrap();
        assert!(text.contains("\"time_s\":null"), "{text}");
    }
}
