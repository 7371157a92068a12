//! The calibration file: what one device really does, in a versioned JSON schema that other
//! estimators load with [`Calibration`].
//!
//! One calibration describes one run of one device: identity, when it was measured, the clocks
//! seen, the fitted ceilings with their spec figures and efficiencies, the ridge points and the
//! classified points ([`crate::roofline`] explains the method). It is built from a run's CSV
//! rows ([`Calibration::from_records`]) and nothing else, so `roofprobe export` on any machine
//! gives what the run itself wrote.
//!
//! # Versioning
//!
//! [`SCHEMA`] names the version. Adding an optional field or a section keeps the version
//! (readers ignore what they do not know); renaming, removing or changing the meaning or unit
//! of a field bumps it. Sections added by later suites (`latency`, `host_link`, …) go in
//! [`Calibration::extensions`] under their own key until they get a field of their own.
//!
//! This module must not measure, print or look at anything but its inputs.

use crate::backend::BackendKind;
use crate::bench::{Family, Precision};
use crate::record::Record;
use crate::roofline::{
    self, ComputeCeiling, GemmEfficiency, MemoryCeiling, MemoryLevel, Point, RidgePoint,
};
use crate::specs::{self, DeviceAttributes, SpecBasis};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The calibration schema this build writes and reads.
pub const SCHEMA: &str = "roofprobe-calibration/1";

/// The device a calibration describes, as its driver reported it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// The name the driver reports (`NVIDIA A100-SXM4-80GB`) or the CPU model.
    pub name: String,
    /// `cuda` or `host`.
    pub backend: BackendKind,
    /// `cuda:0` or `host`.
    pub id: String,
    /// `8.0`; empty for the host.
    #[serde(default)]
    pub compute_capability: String,
    /// SMs, or CPU threads used.
    #[serde(default)]
    pub units: u32,
    /// Driver version, or the host's OS kernel.
    #[serde(default)]
    pub driver: String,
    /// The machine it is in.
    #[serde(default)]
    pub host: String,
}

/// When and from what the calibration was measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The run's id (`<host>-<device>-<UTC stamp>`), shared by its CSV rows.
    pub run_id: String,
    /// First and last measurement, RFC 3339 UTC.
    pub first_utc: String,
    pub last_utc: String,
    /// Rows in the run, and how many were valid.
    pub cases: u32,
    pub valid_cases: u32,
}

/// Run conditions seen across the run's rows. `clock_mhz` is the SM clock on a GPU, the core
/// clock on the host. Fields are absent when the device did not report them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClocksSeen {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mhz_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mhz_max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mhz_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mhz_max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w_max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c_max: Option<f64>,
    /// Every throttle reason seen on any row.
    #[serde(default)]
    pub throttle: Vec<String>,
}

/// What one device really does: the contents of a calibration JSON file.
///
/// # Example
///
/// Another estimator loads a file with [`Calibration::load`]; here the JSON is inline (figures
/// illustrative, not a measurement). Sections other than `schema`, `device` and `spec` may be
/// absent.
///
/// ```
/// use roofprobe::bench::{Family, Precision};
/// use roofprobe::Calibration;
///
/// let json = r#"{
///   "schema": "roofprobe-calibration/1",
///   "device": { "name": "NVIDIA A100-SXM4-80GB", "backend": "cuda", "id": "cuda:0" },
///   "spec": { "basis": "sheet", "entry": "A100 80GB SXM4", "source": "vendor datasheet" },
///   "memory_ceilings": [
///     { "level": "dram", "gbps": 1600.0, "case": "stream/triad/f64", "spec_gbps": 2039.0,
///       "spec_basis": "sheet: mem_bandwidth_gbs", "efficiency": 0.785, "above_spec": false }
///   ],
///   "compute_ceilings": [
///     { "family": "peak", "precision": "f64", "gflops": 9000.0, "case": "peak/fma/f64",
///       "spec_gflops": 9700.0, "spec_basis": "sheet: fp64_tflops", "efficiency": 0.928,
///       "above_spec": false }
///   ]
/// }"#;
/// let cal = Calibration::from_json("a100.json", json)?;
/// assert_eq!(cal.dram_gbps(), Some(1600.0));
/// assert_eq!(cal.peak_gflops(Family::Peak, Precision::F64), Some(9000.0));
/// // The ridge point follows from the ceilings: 9000 / 1600 flop per byte.
/// assert_eq!(cal.ridge_flop_per_byte(Family::Peak, Precision::F64), Some(5.625));
///
/// // A file of another schema version is refused with its file, line and what was expected.
/// let newer = json.replace("roofprobe-calibration/1", "roofprobe-calibration/2");
/// let err = Calibration::from_json("a100.json", &newer).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "a100.json:2: schema `roofprobe-calibration/2` is not supported; this roofprobe reads \
///      roofprobe-calibration/1 (re-export the CSV with `roofprobe export`)"
/// );
/// # Ok::<(), roofprobe::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The program and version that wrote it (`roofprobe 0.1.0`).
    #[serde(default)]
    pub generator: String,
    pub device: Device,
    #[serde(default)]
    pub run: RunInfo,
    /// What the spec figures are based on: a sheet entry, theoretical, or none (the host).
    pub spec: SpecBasis,
    #[serde(default)]
    pub clocks_seen: ClocksSeen,
    /// Bandwidth ceilings in GB/s (10^9 bytes/s, STREAM counting), DRAM first.
    #[serde(default)]
    pub memory_ceilings: Vec<MemoryCeiling>,
    /// Arithmetic ceilings in GFLOP/s (GOP/s for integer types), per family and precision.
    #[serde(default)]
    pub compute_ceilings: Vec<ComputeCeiling>,
    /// flop/byte where each memory ceiling meets each compute ceiling.
    #[serde(default)]
    pub ridge_points: Vec<RidgePoint>,
    /// Measurements placed on the roofline, each memory- or compute-bound.
    #[serde(default)]
    pub points: Vec<Point>,
    /// The achieved GEMM efficiency per implementation and precision, as a function of the
    /// product's size (GFLOP): each valid GEMM row over its precision's compute ceiling. Added
    /// within schema 1 (an optional section); absent when the run had no GEMM rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gemm_efficiency: Vec<GemmEfficiency>,
    /// Rows that contributed no number (`case: status`).
    #[serde(default)]
    pub excluded: Vec<String>,
    /// Sections added by later suites (`latency`, `host_link`, …), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, serde_json::Value>,
}

fn range(values: impl Iterator<Item = Option<f64>>) -> (Option<f64>, Option<f64>) {
    let v: Vec<f64> = values.flatten().filter(|v| v.is_finite()).collect();
    (
        v.iter().copied().reduce(f64::min),
        v.iter().copied().reduce(f64::max),
    )
}

impl Calibration {
    /// Builds the calibration of one run from its rows. `attributes` describe the device when
    /// the run itself is at hand (they add the bus width a theoretical DRAM figure needs); from
    /// a CSV alone, pass `None`.
    pub fn from_records(
        records: &[Record],
        attributes: Option<DeviceAttributes>,
    ) -> Result<Calibration> {
        let first = records
            .first()
            .ok_or_else(|| Error::Usage("a calibration needs at least one measurement".into()))?;
        let mut runs: Vec<&str> = records.iter().map(|r| r.run_id.as_str()).collect();
        runs.dedup();
        if runs.len() > 1 {
            runs.sort_unstable();
            runs.dedup();
            return Err(Error::Usage(format!(
                "the rows come from {} runs ({}); a calibration describes one",
                runs.len(),
                runs.join(", ")
            )));
        }
        let attributes = attributes.unwrap_or_else(|| DeviceAttributes::from_records(records));
        let (basis, sheet) = specs::basis_for(&attributes);
        let spec = |family: Family, precision: Precision| {
            specs::spec_figure(&basis, sheet, &attributes, family, precision)
        };
        let fit = roofline::fit(records, &spec);

        let mut stamps: Vec<&str> = records.iter().map(|r| r.timestamp_utc.as_str()).collect();
        stamps.sort_unstable();
        let (clock_mhz_min, clock_mhz_max) = range(records.iter().map(|r| r.clock_mhz));
        let (memory_mhz_min, memory_mhz_max) = range(records.iter().map(|r| r.memory_clock_mhz));
        let mut throttle: Vec<String> = records
            .iter()
            .flat_map(|r| r.throttle.split(';'))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        throttle.sort();
        throttle.dedup();
        Ok(Calibration {
            schema: SCHEMA.to_string(),
            generator: format!("roofprobe {}", env!("CARGO_PKG_VERSION")),
            device: Device {
                name: first.device_name.clone(),
                backend: first.backend,
                id: first.device_id.clone(),
                compute_capability: first.compute_capability.clone(),
                units: first.units,
                driver: first.driver.clone(),
                host: first.host.clone(),
            },
            run: RunInfo {
                run_id: first.run_id.clone(),
                first_utc: stamps.first().unwrap_or(&"").to_string(),
                last_utc: stamps.last().unwrap_or(&"").to_string(),
                cases: records.len() as u32,
                valid_cases: records.iter().filter(|r| r.valid).count() as u32,
            },
            spec: basis,
            clocks_seen: ClocksSeen {
                clock_mhz_min,
                clock_mhz_max,
                memory_mhz_min,
                memory_mhz_max,
                power_w_max: range(records.iter().map(|r| r.power_w)).1,
                temperature_c_max: range(records.iter().map(|r| r.temperature_c)).1,
                throttle,
            },
            memory_ceilings: fit.memory_ceilings,
            compute_ceilings: fit.compute_ceilings,
            ridge_points: fit.ridge_points,
            points: fit.points,
            gemm_efficiency: fit.gemm_efficiency,
            excluded: fit.excluded,
            extensions: BTreeMap::new(),
        })
    }

    /// Reads a calibration file. Errors name the file, the line and what was expected.
    pub fn load(path: impl AsRef<Path>) -> Result<Calibration> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_json(path, &text)
    }

    /// Parses calibration JSON; `origin` names it in errors. A file of another schema version
    /// is an error, never a silent misreading.
    pub fn from_json(origin: impl AsRef<Path>, text: &str) -> Result<Calibration> {
        let origin = origin.as_ref();
        if text.trim().is_empty() {
            return Err(Error::parse(
                origin,
                1,
                format!("empty file; expected a roofprobe calibration JSON ({SCHEMA})"),
            ));
        }
        // First only the version, so a file of another schema is named as such rather than
        // failing on whichever field changed.
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            Error::parse(
                origin,
                e.line().max(1) as u64,
                format!("not valid JSON ({e}); expected a roofprobe calibration ({SCHEMA})"),
            )
        })?;
        let Some(object) = value.as_object() else {
            return Err(Error::parse(
                origin,
                1,
                format!("expected a JSON object with `\"schema\": \"{SCHEMA}\"`"),
            ));
        };
        let schema_line = text
            .lines()
            .position(|l| l.contains("\"schema\""))
            .map_or(1, |i| i as u64 + 1);
        match object.get("schema") {
            Some(serde_json::Value::String(s)) if s == SCHEMA => {}
            Some(serde_json::Value::String(s)) if s.starts_with("roofprobe-calibration/") => {
                return Err(Error::parse(
                    origin,
                    schema_line,
                    format!(
                        "schema `{s}` is not supported; this roofprobe reads {SCHEMA} \
                         (re-export the CSV with `roofprobe export`)"
                    ),
                ))
            }
            Some(other) => {
                return Err(Error::parse(
                    origin,
                    schema_line,
                    format!("schema {other} is not a roofprobe calibration; expected `{SCHEMA}`"),
                ))
            }
            None => {
                return Err(Error::parse(
                    origin,
                    1,
                    format!("not a roofprobe calibration: no `schema` field; expected `{SCHEMA}`"),
                ))
            }
        }
        serde_json::from_str(text).map_err(|e| {
            Error::parse(
                origin,
                e.line().max(1) as u64,
                format!("does not match {SCHEMA}: {e}"),
            )
        })
    }

    /// Pretty JSON with a final newline, as files are written.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self)
            .expect("a calibration holds only finite numbers and strings");
        s.push('\n');
        s
    }

    /// The measured bandwidth ceiling of a memory level, GB/s.
    pub fn memory_gbps(&self, level: MemoryLevel) -> Option<f64> {
        self.memory_ceilings
            .iter()
            .find(|m| m.level == level)
            .and_then(|m| m.gbps)
    }

    /// The measured DRAM bandwidth ceiling, GB/s.
    pub fn dram_gbps(&self) -> Option<f64> {
        self.memory_gbps(MemoryLevel::Dram)
    }

    /// The measured compute ceiling of a family (`Peak` or `Tensor`) and precision, GFLOP/s.
    pub fn peak_gflops(&self, family: Family, precision: Precision) -> Option<f64> {
        self.compute(family, precision).and_then(|c| c.gflops)
    }

    pub fn compute(&self, family: Family, precision: Precision) -> Option<&ComputeCeiling> {
        self.compute_ceilings
            .iter()
            .find(|c| c.family == family && c.precision == precision)
    }

    /// The measured DRAM ridge point of a compute ceiling, flop/byte.
    pub fn ridge_flop_per_byte(&self, family: Family, precision: Precision) -> Option<f64> {
        Some(self.peak_gflops(family, precision)? / self.dram_gbps()?)
    }

    /// `NVIDIA H200 (cuda:0) on lab, 2026-01-01`: how plots and tables name the device.
    pub fn title(&self) -> String {
        let date = self.run.first_utc.get(..10).unwrap_or_default();
        let backend = match self.device.backend {
            BackendKind::Host => ", host CPU",
            BackendKind::Cuda => "",
        };
        let mut t = format!("{} ({}{backend})", self.device.name, self.device.id);
        if !self.device.host.is_empty() {
            t.push_str(&format!(" on {}", self.device.host));
        }
        if !date.is_empty() {
            t.push_str(&format!(", {date}"));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roofline::tests::synthetic_run;

    #[test]
    fn a_run_round_trips_through_json() {
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        assert_eq!(cal.schema, SCHEMA);
        assert!(matches!(&cal.spec, SpecBasis::Sheet { entry, .. } if entry == "A100 80GB SXM4"));
        assert_eq!(cal.run.cases, 12);
        assert_eq!(cal.run.valid_cases, 10);
        assert_eq!(cal.clocks_seen.clock_mhz_max, Some(1410.0));
        let back = Calibration::from_json("x.json", &cal.to_json()).unwrap();
        assert_eq!(back, cal);
        let dram = cal.dram_gbps().unwrap();
        assert!((dram - 1500.0).abs() < 1e-6);
        let ridge = cal
            .ridge_flop_per_byte(Family::Peak, Precision::F32)
            .unwrap();
        assert!((ridge - 10.0).abs() < 1e-9);
        assert_eq!(
            cal.title(),
            "NVIDIA A100-SXM4-80GB (cuda:0) on lab, 2026-01-01"
        );
    }

    #[test]
    fn rows_of_several_runs_are_refused() {
        let mut rows = synthetic_run();
        rows[3].run_id = "other".into();
        let e = Calibration::from_records(&rows, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("come from 2 runs") && e.contains("other"), "{e}");
        assert!(Calibration::from_records(&[], None).is_err());
    }

    #[test]
    fn bad_json_names_file_line_and_expectation() {
        let err = |t: &str| Calibration::from_json("c.json", t).unwrap_err().to_string();
        assert_eq!(
            err(""),
            "c.json:1: empty file; expected a roofprobe calibration JSON (roofprobe-calibration/1)"
        );
        assert!(
            err("{\n  \"schema\": \"roofprobe-calibration/1\",\n  \"device\": ")
                .starts_with("c.json:3: not valid JSON")
        );
        let e = err("[1, 2]");
        assert!(e.contains("expected a JSON object"), "{e}");
        assert_eq!(
            err("{\"name\": \"x\"}"),
            "c.json:1: not a roofprobe calibration: no `schema` field; expected `roofprobe-calibration/1`"
        );
        assert!(err("{\n\"schema\": \"roofprobe-csv/1\"}")
            .starts_with("c.json:2: schema \"roofprobe-csv/1\" is not a roofprobe calibration"));
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        let json = cal.to_json();
        let e = err(&json.replace(SCHEMA, "roofprobe-calibration/0"));
        assert!(
            e.starts_with("c.json:2: schema `roofprobe-calibration/0` is not supported"),
            "{e}"
        );
        // a field of the wrong type: line of the field
        let broken = json.replacen("\"units\": 108", "\"units\": \"many\"", 1);
        let line = broken.lines().position(|l| l.contains("\"many\"")).unwrap() + 1;
        let e = err(&broken);
        assert!(
            e.starts_with(&format!("c.json:{line}: does not match")),
            "{e}"
        );
    }

    #[test]
    fn load_reads_files_and_names_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        std::fs::write(&p, cal.to_json()).unwrap();
        assert_eq!(Calibration::load(&p).unwrap(), cal);
        let missing = Calibration::load(dir.path().join("none.json")).unwrap_err();
        assert!(matches!(missing, Error::Io { .. }));
    }
}
