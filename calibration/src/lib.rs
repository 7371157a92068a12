//! The roofprobe calibration file: what one device really does, in a versioned JSON schema that
//! estimators load with [`Calibration`], without building roofprobe itself (no CUDA, NVML, clap
//! or plotting: this crate depends on serde alone, and serde_json for the text).
//!
//! One calibration describes one run of one device: identity, when it was measured, the clocks
//! seen, the fitted ceilings with their spec figures and efficiencies, the ridge points and the
//! classified points. `roofprobe export` writes it from a run's CSV; `roofprobe::Calibration` is
//! this type.
//!
//! # Trust
//!
//! A file is checked before it is handed over ([`check`]): every ceiling, clock and point is
//! finite and positive, every derived figure (efficiency, ridge point, fraction of roof) agrees
//! with what it derives from, no text holds a control character, and the file is at most
//! [`check::MAX_FILE_BYTES`]. A file that fails is refused with its line, never used.
//!
//! # Versioning
//!
//! [`SCHEMA`] names the version. Adding an optional field or a section keeps the version
//! (readers ignore what they do not know); renaming, removing or changing the meaning or unit
//! of a field bumps it. Sections added by later suites (`latency`, `host_link`, …) go in
//! [`Calibration::extensions`] under their own key until they get a field of their own.
//!
//! roofprobe-calibration/2 renamed `device.units` (a count of SMs or CPU threads, not a unit)
//! to `device.compute_units`, and added the [`Calibration::units`] table and the ceilings'
//! `suspect` and `suspect_reason`. Files of [`SCHEMA_1`] still load: `units` is read as
//! `compute_units`, the table is this crate's, and no ceiling says it is suspect (the `suspect`
//! list of rows still does, [`Calibration::is_suspect`]).
//!
//! # Units
//!
//! Every figure's unit is a word of its name, as [`UNITS`] lists them and every file of this
//! schema repeats under `units`: `gbps` is GB/s (10^9 bytes per second, STREAM counting),
//! `gflops` GFLOP/s, `secs` and `_s` seconds, `bytes` bytes, `mhz` MHz, `_w` watts, `_c`
//! degrees Celsius, `flop_per_byte` FLOP per byte, `gflop` 10^9 FLOP; an `efficiency` or a
//! `fraction` is a ratio of two figures of one unit.
//!
//! This crate must not measure, print or look at anything but its inputs.

pub mod check;
mod error;
pub mod finite;
mod identity;
mod names;
mod param;
mod roof;

pub use error::{Error, Result};

pub use identity::Identity;
pub use names::{BackendKind, Family, Precision};
pub use param::{Param, Shape};
pub use roof::{
    gemm_ceiling_family, Bound, ComputeCeiling, GemmEfficiency, GemmEfficiencyPoint, MemoryCeiling,
    MemoryLevel, Point, RidgePoint, SpecBasis, SweepPlateau,
};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The calibration schema this version writes and reads.
pub const SCHEMA: &str = "roofprobe-calibration/2";

/// The schema before it, which this version still reads (see the crate's Versioning).
pub const SCHEMA_1: &str = "roofprobe-calibration/1";

/// What each unit word in a figure's name means: the `units` table every file of [`SCHEMA`]
/// carries, so a reader needs no documentation to know that `gbps` counts 10^9 bytes, not
/// 2^30. The one source of truth: a file's table must agree with it ([`check`]).
pub const UNITS: [(&str, &str); 12] = [
    (
        "gbps",
        "GB/s: 10^9 bytes per second, STREAM counting (bytes read + bytes written by the kernel, \
         each element once, no write-allocate)",
    ),
    (
        "gflops",
        "GFLOP/s: 10^9 operations per second (an FMA counts 2; GOP/s for integer precisions)",
    ),
    ("gflop", "10^9 operations (a GEMM's size: 2·M·N·K / 10^9)"),
    (
        "flop_per_byte",
        "operations per byte (arithmetic intensity)",
    ),
    ("bytes", "bytes (2^30 bytes = 1 GiB)"),
    ("secs", "seconds"),
    ("_s", "seconds"),
    ("mhz", "MHz (10^6 cycles per second)"),
    ("_w", "watts"),
    ("_c", "degrees Celsius"),
    (
        "efficiency",
        "a ratio of two figures of one unit: measured / spec, or a size's rate / the fit's or \
         the ceiling's",
    ),
    (
        "compute_units",
        "a count: SMs on a GPU, CPU threads used on the host",
    ),
];

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// [`UNITS`] as the map a file holds.
pub fn units_table() -> BTreeMap<String, String> {
    UNITS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

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
    /// SMs on a GPU, CPU threads used on the host (`units` in files of [`SCHEMA_1`]).
    #[serde(default, alias = "units")]
    pub compute_units: u32,
    /// The last-level cache the driver or OS reports: a GPU's L2, the host's L3 (or L2), in
    /// bytes. Absent where unknown, and in files written before it (added within schema 2).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub last_level_cache_bytes: u64,
    /// Driver version, or the host's OS kernel.
    #[serde(default)]
    pub driver: String,
    /// The machine it is in.
    #[serde(default)]
    pub host: String,
    /// What tells it from another device of the same name: CPU vendor, family, model,
    /// microarchitecture and ISA; a GPU's UUID, PCI bus id, VBIOS, ECC and MIG modes, power
    /// limit and application clocks (the CSV's identity columns; empty where unknown).
    #[serde(default)]
    pub identity: Identity,
}

/// When and from what the calibration was measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The run's id (`<host>-<device>-<UTC stamp>-<suffix>`), shared by its CSV rows.
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
/// An estimator loads a file with [`Calibration::load`]; here the JSON is inline (figures
/// illustrative, not a measurement). Sections other than `schema`, `device` and `spec` may be
/// absent.
///
/// ```
/// use roofprobe_calibration::{Calibration, Family, Precision};
///
/// let json = r#"{
///   "schema": "roofprobe-calibration/1",
///   "device": { "name": "NVIDIA A100-SXM4-80GB", "backend": "cuda", "id": "cuda:0" },
///   "spec": { "basis": "sheet", "entry": "A100 80GB SXM4", "source": "vendor datasheet" },
///   "memory_ceilings": [
///     { "level": "dram", "gbps": 1600.0, "case": "stream/triad/f64", "spec_gbps": 2039.0,
///       "spec_basis": "sheet: mem_bandwidth_gbs", "efficiency": 0.7847, "above_spec": false }
///   ],
///   "compute_ceilings": [
///     { "family": "peak", "precision": "f64", "gflops": 9000.0, "case": "peak/fma/f64",
///       "spec_gflops": 9700.0, "spec_basis": "sheet: fp64_tflops", "efficiency": 0.9278,
///       "above_spec": false }
///   ]
/// }"#;
/// let cal = Calibration::from_json("a100.json", json)?;
/// assert_eq!(cal.dram_gbps(), Some(1600.0));
/// assert_eq!(cal.peak_gflops(Family::Peak, Precision::F64), Some(9000.0));
/// // The ridge point follows from the ceilings: 9000 / 1600 flop per byte.
/// assert_eq!(cal.ridge_flop_per_byte(Family::Peak, Precision::F64), Some(5.625));
///
/// // A file of the schema before (this one is) still loads, and is written back as this one;
/// // a file of a later version is refused with its file, line and what was expected.
/// assert_eq!(cal.schema, "roofprobe-calibration/2");
/// let newer = json.replace("roofprobe-calibration/1", "roofprobe-calibration/3");
/// let err = Calibration::from_json("a100.json", &newer).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "a100.json:2: schema `roofprobe-calibration/3` is not supported; this roofprobe reads \
///      roofprobe-calibration/2 and roofprobe-calibration/1 (re-export the CSV with `roofprobe \
///      export`)"
/// );
///
/// // So is a figure that cannot be: a ceiling must be finite and positive.
/// let damaged = json.replace("1600.0", "-1409.0");
/// let err = Calibration::from_json("a100.json", &damaged).unwrap_err();
/// assert!(err.to_string().starts_with("a100.json:6: `memory_ceilings[0].gbps` is -1409"));
/// # Ok::<(), roofprobe_calibration::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// [`SCHEMA`] (a file of [`SCHEMA_1`] says so here once loaded, and is written back as
    /// [`SCHEMA`]).
    pub schema: String,
    /// The program and version that wrote it (`roofprobe 0.1.0`).
    #[serde(default)]
    pub generator: String,
    /// What each unit word of a figure's name means ([`UNITS`]); a file of [`SCHEMA_1`], which
    /// has none, reads with this crate's.
    #[serde(default = "units_table")]
    pub units: BTreeMap<String, String>,
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
    /// product's size (GFLOP): each valid GEMM row over its precision's compute ceiling. An
    /// optional section (added within schema 1); absent when the run had no GEMM rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gemm_efficiency: Vec<GemmEfficiency>,
    /// The device's usable memory (the `capacity` family). An optional section (added within
    /// schema 1); absent when the run had no valid capacity rows, and in files written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
    /// Bandwidth against size (the `efficiency` family): per STREAM kernel, the fit
    /// `time = constant + bytes / bandwidth` and the efficiency curve. An optional section
    /// (added within schema 1); absent when the run had no such rows, and in files written
    /// before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_efficiency: Vec<SizeEfficiency>,
    /// What launching costs (the `launch` family). An optional section (added within schema 1);
    /// absent when the run had no valid launch rows, and in files written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<LaunchOverhead>,
    /// The host link's copies (the `link` family), each direction fitted as
    /// `time = latency + bytes / bandwidth`. An optional section (added within schema 1);
    /// absent when the run had no fit, and in files written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<Link>,
    /// Rows that contributed no number (`case: status`).
    #[serde(default)]
    pub excluded: Vec<String>,
    /// Valid rows whose figure is suspect (`case: flags`, the CSV's `flags` column): they count
    /// in the fit, but a ceiling or point they set is not to be trusted without a rerun.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspect: Vec<String>,
    /// Sections added by later suites (`latency`, `host_link`, …), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, serde_json::Value>,
}

/// One STREAM kernel's bandwidth against size: the fit `time = constant_secs + bytes /
/// (asymptotic_gbps · 10^9)` over its sizes (the bandwidth from ordinary least squares, the
/// constant then from least squares on the relative residuals, at least 0: roofprobe's
/// `bench::efficiency`), the fit's root-mean-square relative
/// residual, and each size's bandwidth over the asymptotic one (not over the spec sheet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeEfficiency {
    /// `copy`, `triad`.
    pub kernel: String,
    pub precision: Precision,
    /// `a`: seconds a launch costs whatever its size.
    pub constant_secs: f64,
    /// `BW`: GB/s (10^9 bytes/s, STREAM counting) a launch approaches as it grows.
    pub asymptotic_gbps: f64,
    /// Root-mean-square of `(t − fitted) / t` over the sizes.
    pub rms_relative_residual: f64,
    /// True where the fitted constant was negative and is reported as 0.
    #[serde(default)]
    pub constant_clamped: bool,
    /// The sizes, ascending.
    pub points: Vec<SizeEfficiencyPoint>,
}

impl SizeEfficiency {
    /// The largest root-mean-square relative residual at which the line `t = a + bytes / BW`
    /// still describes the sizes: beyond 10 %, the times do not follow one constant and one
    /// bandwidth (a cache served the small sizes, or the machine was busy), and an estimator
    /// given `a` and `BW` (or the curve) would be told a shape the run did not see. The
    /// committed host runs of December 2026 fit at 0.5 to 1.4.
    pub const MAX_RMS_RELATIVE_RESIDUAL: f64 = 0.10;

    /// Whether the fit describes its sizes well enough to hand to an estimator; if not, why.
    pub fn quality(&self) -> std::result::Result<(), String> {
        if self.points.len() < 2 {
            return Err(format!("{} size(s), too few for a line", self.points.len()));
        }
        let r = self.rms_relative_residual;
        if r.is_nan() || r > Self::MAX_RMS_RELATIVE_RESIDUAL {
            return Err(format!(
                "its rms relative residual {:.3} is above the bound {} (the sizes do not follow \
                 t = a + bytes / BW{})",
                self.rms_relative_residual,
                Self::MAX_RMS_RELATIVE_RESIDUAL,
                if self.constant_clamped {
                    "; its constant was negative and clamped to 0"
                } else {
                    ""
                }
            ));
        }
        Ok(())
    }
}

/// One size of a [`SizeEfficiency`] curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeEfficiencyPoint {
    /// The row's case id (`efficiency/triad/f32/1024`).
    pub case: String,
    /// Bytes one launch moves (STREAM counting: read + written).
    pub bytes: u64,
    /// The median seconds per launch.
    pub secs: f64,
    /// `bytes / secs / 10^9`.
    pub gbps: f64,
    /// `gbps / asymptotic_gbps`.
    pub efficiency: f64,
}

/// A device's usable memory, in bytes: what the driver or OS reports as total and free (a GPU's
/// free right after the run created its context; the host's `MemAvailable`), what was in use
/// at that moment (a GPU's context cost, at most: the driver's reservation and other
/// processes' memory count too) and the largest single allocation that succeeded (a GPU's,
/// by a binary search to 64 MiB). A file is refused unless `largest ≤ free ≤ total` and
/// `context ≤ total`, each positive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    pub total_bytes: u64,
    pub free_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub largest_allocation_bytes: Option<u64>,
}

/// What launching work costs a device, in seconds, each from the valid `launch` rows of a run:
/// a GPU's empty kernel launched back to back on one stream (per launch, the median sample of
/// many launches between two events) and its event timer's resolution (the smallest non-zero
/// time between two events recorded back to back, the least over every try); the host's cost
/// of waking its worker threads and one barrier among them (per round, the median sample). A
/// file is refused unless each figure present is positive, finite and below a second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LaunchOverhead {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_kernel_secs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_resolution_secs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_barrier_secs: Option<f64>,
}

/// The host link as a run measured it: the PCIe link NVML reported beside the copies, and one fit
/// per kind of copy (`host_to_device_memcpy_ce`, …: nvbandwidth's test names) over the sizes
/// the run copied.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// `PCIe Gen5 x16`, as NVML reported it while the copies ran; empty where it could not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pcie: String,
    /// That link's nominal rate per direction, GB/s (10^9 B/s); absent where it is not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominal_gbps: Option<f64>,
    pub transfers: Vec<LinkTransfer>,
}

/// One kind of copy, fitted over its sizes: `time = latency_s + bytes / (bandwidth_gbps·10^9)`,
/// counting each copy's bytes once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkTransfer {
    pub kernel: String,
    pub latency_s: f64,
    pub bandwidth_gbps: f64,
    /// Sizes the fit took (at least 2).
    pub sizes: u32,
}

impl Link {
    /// The fit of `kernel`, if the run made one.
    pub fn transfer(&self, kernel: &str) -> Option<&LinkTransfer> {
        self.transfers.iter().find(|t| t.kernel == kernel)
    }
}

/// Whether text looks like a roofprobe results CSV (its header), not a calibration.
fn looks_like_results_csv(text: &str) -> bool {
    text.trim_start_matches('\u{FEFF}')
        .trim_start()
        .starts_with("schema,")
}

impl Calibration {
    /// Reads a calibration file (at most [`check::MAX_FILE_BYTES`]). Errors name the file, the
    /// line and what was expected; a results CSV is named as such.
    pub fn load(path: impl AsRef<Path>) -> Result<Calibration> {
        let path = path.as_ref();
        let bytes = check::read_limited(path)?;
        let text = String::from_utf8_lossy(&bytes);
        if !looks_like_results_csv(&text) && std::str::from_utf8(&bytes).is_err() {
            return Err(Error::parse(
                path,
                1,
                format!("not UTF-8 text; expected a roofprobe calibration JSON ({SCHEMA})"),
            ));
        }
        Self::from_json(path, &text)
    }

    /// Parses calibration JSON; `origin` names it in errors. A file of another schema version
    /// is an error, never a silent misreading, and so is any figure that fails [`check`].
    pub fn from_json(origin: impl AsRef<Path>, text: &str) -> Result<Calibration> {
        let origin = origin.as_ref();
        if text.trim().is_empty() {
            return Err(Error::parse(
                origin,
                1,
                format!("empty file; expected a roofprobe calibration JSON ({SCHEMA})"),
            ));
        }
        if looks_like_results_csv(text) {
            return Err(Error::parse(
                origin,
                1,
                "this is a roofprobe results CSV, not a calibration; run `roofprobe export \
                 FILE.csv -o FILE.json` first and load the JSON",
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
            Some(serde_json::Value::String(s)) if s == SCHEMA || s == SCHEMA_1 => {}
            Some(serde_json::Value::String(s))
                if s.starts_with("roofprobe-calibration/")
                    && check::first_forbidden(s).is_none() =>
            {
                return Err(Error::parse(
                    origin,
                    schema_line,
                    format!(
                        "schema `{}` is not supported; this roofprobe reads {SCHEMA} and \
                         {SCHEMA_1} (re-export the CSV with `roofprobe export`)",
                        check::shortened(s, 60)
                    ),
                ))
            }
            Some(other) => {
                // JSON-escaped: no control character gets through.
                return Err(Error::parse(
                    origin,
                    schema_line,
                    format!(
                        "schema {} is not a roofprobe calibration; expected `{SCHEMA}`",
                        check::shortened(&other.to_string(), 60)
                    ),
                ));
            }
            None => {
                return Err(Error::parse(
                    origin,
                    1,
                    format!("not a roofprobe calibration: no `schema` field; expected `{SCHEMA}`"),
                ))
            }
        }
        let located = |p: check::Problem| {
            let line = check::line_of(text, &p.path).unwrap_or(1);
            Error::parse(
                origin,
                line,
                format!(
                    "{}; the file is damaged or hand-edited: export it again from its CSV",
                    p.message
                ),
            )
        };
        if let Some(p) = check::check_text(&value, &mut Vec::new()) {
            return Err(located(p));
        }
        let mut calibration: Calibration = serde_json::from_str(text).map_err(|e| {
            Error::parse(
                origin,
                e.line().max(1) as u64,
                format!("does not match {SCHEMA}: {e}"),
            )
        })?;
        if let Some(p) = check::check_figures(&calibration) {
            return Err(located(p));
        }
        // What /1 lacks is filled as documented above; written back, it is a file of /2.
        calibration.schema = SCHEMA.to_string();
        Ok(calibration)
    }

    /// What a reader would refuse in this calibration, if anything ([`check`]): for one built in
    /// memory (from a run's rows) before it is written or used, so that nothing a reader would
    /// refuse (a figure beyond the bounds, an infinity) reaches an output. First, every figure
    /// of every field finite ([`finite`]): the JSON would hold `null` where one is not.
    pub fn problem(&self) -> Option<String> {
        if let Some((path, v)) = finite::first_non_finite(self) {
            return Some(format!("`{path}` is {v}, not a finite figure"));
        }
        let value = match serde_json::to_value(self) {
            Ok(v) => v,
            Err(e) => return Some(format!("cannot be written as JSON: {e}")),
        };
        check::check_text(&value, &mut Vec::new())
            .or_else(|| check::check_figures(self))
            .map(|p| p.message)
    }

    /// Pretty JSON with a final newline, as files are written.
    pub fn to_json(&self) -> String {
        // serde_json writes a non-finite float as `null`, never fails on these types.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
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

    /// Whether the row that set a ceiling or point (`case`) was flagged as suspect.
    pub fn is_suspect(&self, case: &str) -> bool {
        self.suspect
            .iter()
            .any(|s| s.split_once(": ").is_some_and(|(c, _)| c == case))
    }

    /// `NVIDIA H200 (cuda:0, GPU-5a1c2b3d) on lab, 2026-01-01`, `AMD EPYC (host CPU, Zen 4,
    /// AVX-512F) on vm, 2026-11-30`: how plots and tables name the device, with enough of its
    /// identity that two machines of one name do not read as one.
    pub fn title(&self) -> String {
        let date = self.run.first_utc.get(..10).unwrap_or_default();
        let identity = &self.device.identity;
        let mut labels = vec![match self.device.backend {
            BackendKind::Host => "host CPU".to_string(),
            BackendKind::Cuda => self.device.id.clone(),
        }];
        match self.device.backend {
            BackendKind::Host => labels.extend([identity.cpu_phrase(), identity.isa.clone()]),
            // The UUID's first group is unique enough to tell GPUs apart in a title.
            BackendKind::Cuda => labels.push(identity.uuid.chars().take(12).collect()),
        }
        labels.retain(|l| !l.is_empty());
        let mut t = format!("{} ({})", self.device.name, labels.join(", "));
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

    /// A small, consistent calibration: DRAM 1600 GB/s against a 2000 GB/s sheet, f32 at
    /// 16 000 GFLOP/s against 19 500, their ridge (10 flop/byte) and one point at 90 % of the roof.
    const GOOD: &str = r#"{
  "schema": "roofprobe-calibration/1",
  "device": { "name": "NVIDIA A100-SXM4-80GB", "backend": "cuda", "id": "cuda:0" },
  "run": { "run_id": "lab-x", "first_utc": "2026-01-01T00:00:00Z", "last_utc": "2026-01-01T00:01:00Z", "cases": 3, "valid_cases": 3 },
  "spec": { "basis": "sheet", "entry": "A100 80GB SXM4", "source": "vendor datasheet" },
  "clocks_seen": { "clock_mhz_min": 1200.0, "clock_mhz_max": 1410.0, "power_w_max": 300.0 },
  "memory_ceilings": [
    { "level": "dram", "gbps": 1600.0, "case": "stream/triad/f32", "spec_gbps": 2000.0,
      "spec_basis": "sheet", "efficiency": 0.8, "above_spec": false }
  ],
  "compute_ceilings": [
    { "family": "peak", "precision": "f32", "gflops": 16000.0, "case": "peak/fma/f32",
      "spec_gflops": 19500.0, "spec_basis": "sheet", "efficiency": 0.8205128205128205,
      "above_spec": false }
  ],
  "ridge_points": [
    { "memory": "dram", "family": "peak", "precision": "f32", "flop_per_byte": 10.0,
      "spec_flop_per_byte": 9.75 }
  ],
  "points": [
    { "case": "intensity/fma/f32/4", "family": "intensity", "precision": "f32", "param": 4,
      "flop_per_byte": 1.0, "gflops": 1440.0, "bound": "memory", "roof_gflops": 1600.0,
      "fraction_of_roof": 0.9, "roof_basis": "measured DRAM, measured f32 peak" }
  ]
}"#;

    fn err(text: &str) -> String {
        Calibration::from_json("c.json", text)
            .unwrap_err()
            .to_string()
    }

    /// The line of the first line of `text` containing `needle`.
    fn line_with(text: &str, needle: &str) -> usize {
        text.lines().position(|l| l.contains(needle)).unwrap() + 1
    }

    /// The point of this crate: an estimator that loads a calibration builds serde and nothing
    /// of roofprobe's (no cudarc, NVML, clap or plotters).
    #[test]
    fn depends_on_serde_alone() {
        let manifest = include_str!("../Cargo.toml");
        let deps: Vec<&str> = manifest
            .split("[dependencies]")
            .nth(1)
            .unwrap()
            .lines()
            .take_while(|l| !l.starts_with('['))
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|l| l.split('=').next().unwrap().trim())
            .collect();
        assert_eq!(deps, ["serde", "serde_json"]);
    }

    /// A figure written is the figure read, to the last bit. serde_json's default float parser
    /// may land one unit in the last place off (`4.0151689999999996e-5` read back as
    /// `4.015169e-5`), so a calibration no longer equalled the CSV row it came from.
    #[test]
    fn every_figure_reads_back_bit_for_bit() {
        let mut cal = Calibration::from_json("c.json", GOOD).unwrap();
        let awkward: [f64; 4] = [
            4.0151689999999996e-5,
            0.1 + 0.2,
            1.0 / 3.0,
            2.2250738585072014e-308,
        ];
        for t in awkward {
            cal.launch = Some(LaunchOverhead {
                wake_barrier_secs: Some(t),
                ..LaunchOverhead::default()
            });
            let back = Calibration::from_json("c.json", &cal.to_json()).unwrap();
            let read = back.launch.and_then(|l| l.wake_barrier_secs).unwrap();
            assert_eq!(read.to_bits(), t.to_bits(), "{t:e}");
        }
    }

    #[test]
    fn a_consistent_file_loads() {
        let cal = Calibration::from_json("c.json", GOOD).unwrap();
        assert_eq!(cal.dram_gbps(), Some(1600.0));
        let back = Calibration::from_json("c.json", &cal.to_json()).unwrap();
        assert_eq!(back, cal);
    }

    /// Issue 60, class 1 to 3: a figure past physics (a PB/s, an exaflop on one device), a
    /// subnormal or absurdly small ceiling (5e-324 GB/s made `compare` print `infx`), a time not
    /// as the writer writes it and an endless text are each refused with their line. Each case
    /// is made from the good file, one field changed.
    #[test]
    fn figures_beyond_physics_and_unbounded_text_are_refused() {
        let long = "x".repeat(check::MAX_TEXT_CHARS + 1);
        for (from, to, field) in [
            ("\"gbps\": 1600.0", "\"gbps\": 2e6".to_string(), "gbps"),
            ("\"gbps\": 1600.0", "\"gbps\": 5e-324".into(), "gbps"),
            ("\"gbps\": 1600.0", "\"gbps\": 1e-7".into(), "gbps"),
            (
                "\"spec_gbps\": 2000.0",
                "\"spec_gbps\": 1e-300".into(),
                "spec_gbps",
            ),
            ("\"gflops\": 16000.0", "\"gflops\": 1e9".into(), "gflops"),
            ("\"gflops\": 1440.0", "\"gflops\": 1e-310".into(), "gflops"),
            (
                "\"roof_gflops\": 1600.0",
                "\"roof_gflops\": 4e-320".into(),
                "roof_gflops",
            ),
            (
                "\"first_utc\": \"2026-01-01T00:00:00Z\"",
                "\"first_utc\": \"yesterday\"".into(),
                "first_utc",
            ),
            (
                "\"first_utc\": \"2026-01-01T00:00:00Z\"",
                "\"first_utc\": \"9999-99-99T00:00:00Z\"".into(),
                "first_utc",
            ),
            (
                "\"last_utc\": \"2026-01-01T00:01:00Z\"",
                "\"last_utc\": \"2025-02-29T00:00:00Z\"".into(),
                "last_utc",
            ),
            (
                "\"last_utc\": \"2026-01-01T00:01:00Z\"",
                "\"last_utc\": \"2025-12-31T23:59:59Z\"".into(),
                "first_utc",
            ),
            (
                "\"run_id\": \"lab-x\"",
                format!("\"run_id\": \"{long}\""),
                "run_id",
            ),
            (
                "\"name\": \"NVIDIA A100-SXM4-80GB\"",
                format!("\"name\": \"{long}\""),
                "name",
            ),
        ] {
            let bad = GOOD.replacen(from, &to, 1);
            assert_ne!(bad, GOOD, "{from}");
            let e = err(&bad);
            assert!(e.contains(field), "{to}: {e}");
            assert!(e.len() < 400, "an error stays short: {e}");
        }
        // the bounds themselves are figures a device may have
        for (from, to) in [
            ("\"gbps\": 1600.0", "\"gbps\": 1e6"),
            ("\"gbps\": 1600.0", "\"gbps\": 1e-6"),
            (
                "\"last_utc\": \"2026-01-01T00:01:00Z\"",
                "\"last_utc\": \"2028-02-29T23:59:59Z\"",
            ),
        ] {
            let fine = GOOD
                .replacen(from, to, 1)
                .replace("\"efficiency\": 0.8,", "")
                .replace("\"spec_gbps\": 2000.0,", "")
                .replace("\"flop_per_byte\": 10.0,", "")
                .replace("\"roof_gflops\": 1600.0,", "")
                .replace("\"fraction_of_roof\": 0.9,", "");
            if let Err(e) = Calibration::from_json("c.json", &fine) {
                assert!(!e.to_string().contains("physical"), "{to}: {e}");
                assert!(!e.to_string().contains("_utc"), "{to}: {e}");
            }
        }
    }

    #[test]
    fn utc_stamps_are_read_as_written() {
        for good in [
            "2026-12-06T13:09:00Z",
            "2024-02-29T23:59:59Z",
            "1970-01-01T00:00:00Z",
        ] {
            assert!(check::is_utc_stamp(good), "{good}");
        }
        for bad in [
            "",
            "yesterday",
            "9999-99-99",
            "2026-12-06 13:09:00Z",
            "2026-12-06T13:09:00",
            "2026-12-06T13:09:00+00:00",
            "2023-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-12-06T24:00:00Z",
            "2026-12-06T13:60:00Z",
            "+026-12-06T13:09:00Z",
            "2026-12-06T13:09:00.5Z",
        ] {
            assert!(!check::is_utc_stamp(bad), "{bad}");
        }
        assert_eq!(check::shortened("abcdef", 4), "abc…");
        assert_eq!(check::shortened("abc", 4), "abc");
        assert_eq!(check::shortened("ééééé", 3), "éé…");
    }

    /// Issue 60: a calibration built in memory with a figure that is not finite is refused
    /// before it is written, naming the figure (its JSON would have said `null`).
    #[test]
    fn a_non_finite_figure_is_a_problem_naming_it() {
        let good = Calibration::from_json("c.json", GOOD).unwrap();
        assert_eq!(good.problem(), None);
        for bad in [f64::INFINITY, f64::NAN] {
            let mut cal = good.clone();
            cal.memory_ceilings[0].gbps = Some(bad);
            let why = cal.problem().unwrap();
            assert!(
                why.starts_with("`memory_ceilings[0].gbps` is ")
                    && why.ends_with("not a finite figure"),
                "{why}"
            );
        }
    }

    /// What fuzzing found: negative and zero ceilings were drawn (`DRAM -1409 GB/s`) and gave
    /// NaN and infinite ratios; now each is refused with its line.
    #[test]
    fn impossible_figures_are_refused_with_their_line() {
        for (from, to, field) in [
            (
                "\"gbps\": 1600.0",
                "\"gbps\": -1409.0",
                "memory_ceilings[0].gbps",
            ),
            (
                "\"gbps\": 1600.0",
                "\"gbps\": 0.0",
                "memory_ceilings[0].gbps",
            ),
            (
                "\"spec_gbps\": 2000.0",
                "\"spec_gbps\": -1.0",
                "memory_ceilings[0].spec_gbps",
            ),
            (
                "\"gflops\": 16000.0",
                "\"gflops\": 1e300",
                "compute_ceilings[0].gflops",
            ),
            ("\"gflops\": 1440.0", "\"gflops\": -0.0", "points[0].gflops"),
            (
                "\"clock_mhz_min\": 1200.0",
                "\"clock_mhz_min\": -4000.0",
                "clocks_seen.clock_mhz_min",
            ),
            (
                "\"power_w_max\": 300.0",
                "\"power_w_max\": -3.0",
                "clocks_seen.power_w_max",
            ),
        ] {
            let bad = GOOD.replacen(from, to, 1);
            let e = err(&bad);
            let line = line_with(&bad, to);
            assert!(
                e.starts_with(&format!("c.json:{line}: `{field}` is ")),
                "{to}: {e}"
            );
            assert!(e.contains("export it again"), "{e}");
        }
    }

    #[test]
    fn derived_figures_must_agree_with_what_they_derive_from() {
        for (from, to, what) in [
            (
                "\"efficiency\": 0.8,",
                "\"efficiency\": 0.9,",
                "gbps / spec_gbps",
            ),
            (
                "\"flop_per_byte\": 10.0",
                "\"flop_per_byte\": 12.0",
                "compute ceiling",
            ),
            (
                "\"spec_flop_per_byte\": 9.75",
                "\"spec_flop_per_byte\": null",
                "spec compute",
            ),
            (
                "\"fraction_of_roof\": 0.9",
                "\"fraction_of_roof\": 0.5",
                "gflops / roof_gflops",
            ),
            (
                "\"above_spec\": false }\n  ],\n  \"compute",
                "\"above_spec\": true }\n  ],\n  \"compute",
                "above_spec",
            ),
            ("\"valid_cases\": 3", "\"valid_cases\": 4", "valid_cases"),
        ] {
            let bad = GOOD.replacen(from, to, 1);
            assert_ne!(bad, GOOD, "{from}");
            let e = err(&bad);
            assert!(e.contains(what), "{to}: {e}");
        }
        // a ridge point of a ceiling the file does not have
        let bad = GOOD.replacen("\"memory\": \"dram\"", "\"memory\": \"l2\"", 1);
        assert!(err(&bad).contains("without both ceilings"), "{}", err(&bad));
        // rounding to four digits is not damage
        let rounded = GOOD.replacen("0.8205128205128205", "0.8205", 1);
        assert!(Calibration::from_json("c.json", &rounded).is_ok());
    }

    /// What the hygiene rules add to a calibration (identity, suspect rows, points above their
    /// roof) reads back, names the device and is checked like every other figure.
    #[test]
    fn identity_suspects_and_points_above_the_roof() {
        let with = GOOD
            .replacen(
                "\"id\": \"cuda:0\" }",
                "\"id\": \"cuda:0\", \"host\": \"lab\",\n    \"identity\": { \"vendor\": \"NVIDIA\", \"cpu_family\": \"\", \"cpu_model\": \"\", \"microarch\": \"Ampere\", \"isa\": \"sm_80\", \"uuid\": \"GPU-5a1c2b3d-0000-1111\", \"pci_bus_id\": \"\", \"vbios\": \"\", \"ecc\": \"on\", \"mig\": \"off\",\n      \"power_limit_w\": 400.0, \"app_clock_mhz\": 1410.0, \"app_memory_clock_mhz\": null } }",
                1,
            )
            .replacen(
                "\"points\": [",
                "\"suspect\": [\"peak/fma/f32: high_cv(12.3%)\"],\n  \"points\": [",
                1,
            );
        assert_ne!(with, GOOD);
        let cal = Calibration::from_json("c.json", &with).unwrap();
        assert_eq!(cal.device.identity.uuid, "GPU-5a1c2b3d-0000-1111");
        assert_eq!(
            cal.title(),
            "NVIDIA A100-SXM4-80GB (cuda:0, GPU-5a1c2b3d) on lab, 2026-01-01"
        );
        assert!(cal.is_suspect("peak/fma/f32"));
        assert!(!cal.is_suspect("peak/fma"));
        assert!(!cal.is_suspect("stream/triad/f32"));
        assert_eq!(
            Calibration::from_json("c.json", &cal.to_json()).unwrap(),
            cal
        );
        // a file without them (every file before the hygiene rules) reads with none
        let plain = Calibration::from_json("c.json", GOOD).unwrap();
        assert_eq!(plain.device.identity, Identity::default());
        assert!(plain.suspect.is_empty() && !plain.points[0].above_roof);
        assert_eq!(plain.title(), "NVIDIA A100-SXM4-80GB (cuda:0), 2026-01-01");
        // the host names its CPU and ISA instead of a UUID
        let mut host = plain.clone();
        host.device.backend = BackendKind::Host;
        host.device.identity = Identity {
            vendor: "AuthenticAMD".into(),
            cpu_family: "26".into(),
            cpu_model: "2".into(),
            isa: "AVX-512F".into(),
            ..Identity::default()
        };
        assert_eq!(
            host.title(),
            "NVIDIA A100-SXM4-80GB (host CPU, AuthenticAMD family 26 model 2, AVX-512F), 2026-01-01"
        );
        // impossible identity figures are refused with their line
        for (from, to, field) in [
            (
                "\"power_limit_w\": 400.0",
                "\"power_limit_w\": -400.0",
                "device.identity.power_limit_w",
            ),
            (
                "\"app_clock_mhz\": 1410.0",
                "\"app_clock_mhz\": 0.0",
                "device.identity.app_clock_mhz",
            ),
        ] {
            let bad = with.replacen(from, to, 1);
            let e = err(&bad);
            let line = line_with(&bad, to);
            assert!(
                e.starts_with(&format!("c.json:{line}: `{field}` is ")),
                "{to}: {e}"
            );
        }
        // a point at 90 % of its roof cannot be above it
        let bad = GOOD.replacen(
            "\"fraction_of_roof\": 0.9,",
            "\"fraction_of_roof\": 0.9, \"above_roof\": true,",
            1,
        );
        let e = err(&bad);
        assert!(
            e.starts_with(&format!(
                "c.json:{}: `points[0].above_roof` is true",
                line_with(&bad, "above_roof")
            )),
            "{e}"
        );
        // control characters in the identity or a suspect entry are refused like any text
        for (from, to) in [
            ("\"ecc\": \"on\"", "\"ecc\": \"on\\u001b[2J\""),
            ("high_cv(12.3%)", "high_cv\\n(12.3%)"),
        ] {
            let bad = with.replacen(from, to, 1);
            assert!(err(&bad).contains("control character"), "{}", err(&bad));
        }
    }

    /// The launch section: absent from a file written before it (GOOD has none) and then
    /// `None`; present, it reads back as written, a host's figure alone too; a figure that is
    /// not a time between 0 and 1 s is refused with its line.
    #[test]
    fn launch_reads_back_and_is_checked() {
        assert_eq!(Calibration::from_json("c.json", GOOD).unwrap().launch, None);
        let section = concat!(
            "  \"launch\": { \"empty_kernel_secs\": 2.5e-6,\n",
            "    \"timer_resolution_secs\": 5.12e-7 },\n",
            "  \"points\": ["
        );
        let with = GOOD.replacen("  \"points\": [", section, 1);
        assert_ne!(with, GOOD);
        let cal = Calibration::from_json("c.json", &with).unwrap_or_else(|e| panic!("{e}"));
        let l = cal.launch.expect("a launch section");
        assert_eq!(
            (
                l.empty_kernel_secs,
                l.timer_resolution_secs,
                l.wake_barrier_secs
            ),
            (Some(2.5e-6), Some(5.12e-7), None)
        );
        assert_eq!(
            Calibration::from_json("c.json", &cal.to_json()).unwrap(),
            cal
        );
        let host = with.replacen(
            "\"empty_kernel_secs\": 2.5e-6,\n    \"timer_resolution_secs\": 5.12e-7",
            "\"wake_barrier_secs\": 1.5e-5",
            1,
        );
        let l = Calibration::from_json("c.json", &host)
            .unwrap()
            .launch
            .unwrap();
        assert_eq!(l.wake_barrier_secs, Some(1.5e-5));
        for (from, to, why) in [
            ("2.5e-6", "0.0", "`launch.empty_kernel_secs` is 0"),
            (
                "5.12e-7",
                "-5.12e-7",
                "`launch.timer_resolution_secs` is -0.000000512",
            ),
            ("2.5e-6", "2.5", "`launch.empty_kernel_secs` is 2.5"),
        ] {
            let bad = with.replacen(from, to, 1);
            let e = err(&bad);
            assert!(e.contains(why), "{e}");
            assert!(e.starts_with("c.json:"), "{e}");
        }
    }

    /// The capacity section: absent from a file written before it (GOOD has none) and then
    /// `None`; present, it reads back as written; inconsistent figures are refused with their
    /// line.
    #[test]
    fn capacity_reads_back_and_is_checked() {
        assert_eq!(
            Calibration::from_json("c.json", GOOD).unwrap().capacity,
            None
        );
        assert!(!Calibration::from_json("c.json", GOOD)
            .unwrap()
            .to_json()
            .contains("capacity"));
        let section = concat!(
            "  \"capacity\": { \"total_bytes\": 85899345920, \"free_bytes\": 85000000000,\n",
            "    \"context_bytes\": 899345920, \"largest_allocation_bytes\": 84959067136 },\n",
            "  \"points\": ["
        );
        let with = GOOD.replacen("  \"points\": [", section, 1);
        assert_ne!(with, GOOD);
        let cal = Calibration::from_json("c.json", &with).unwrap_or_else(|e| panic!("{e}"));
        let c = cal.capacity.expect("a capacity section");
        assert_eq!(
            (
                c.total_bytes,
                c.free_bytes,
                c.context_bytes,
                c.largest_allocation_bytes
            ),
            (85899345920, 85000000000, Some(899345920), Some(84959067136))
        );
        assert_eq!(
            Calibration::from_json("c.json", &cal.to_json()).unwrap(),
            cal
        );
        // the host's: total and free only
        let host = with.replacen(
            ",\n    \"context_bytes\": 899345920, \"largest_allocation_bytes\": 84959067136 }",
            " }",
            1,
        );
        let c = Calibration::from_json("c.json", &host)
            .unwrap()
            .capacity
            .unwrap();
        assert_eq!((c.context_bytes, c.largest_allocation_bytes), (None, None));
        for (from, to, why) in [
            (
                "84959067136",
                "85000000001",
                "`capacity.largest_allocation_bytes` 85000000001 is above `free_bytes`",
            ),
            (
                "\"free_bytes\": 85000000000",
                "\"free_bytes\": 95000000000",
                "`capacity.free_bytes` 95000000000 is above `total_bytes`",
            ),
            (
                "\"context_bytes\": 899345920",
                "\"context_bytes\": 0",
                "`capacity.context_bytes` is 0",
            ),
        ] {
            let bad = with.replacen(from, to, 1);
            let e = err(&bad);
            assert!(e.contains(why), "{e}");
            assert!(
                e.starts_with(&format!("c.json:{}:", line_with(&bad, "\"capacity\"")))
                    || e.starts_with(&format!("c.json:{}:", line_with(&bad, "context_bytes"))),
                "{e}"
            );
        }
    }

    /// The link section: absent from a file written before it (GOOD has none); present, it
    /// reads back as written; a fit that is not one is refused with its line.
    #[test]
    fn link_reads_back_and_is_checked() {
        assert_eq!(Calibration::from_json("c.json", GOOD).unwrap().link, None);
        let section = concat!(
            "  \"link\": { \"pcie\": \"PCIe Gen5 x16\", \"nominal_gbps\": 63.015,\n",
            "    \"transfers\": [ { \"kernel\": \"host_to_device_memcpy_ce\",\n",
            "      \"latency_s\": 0.00001, \"bandwidth_gbps\": 52.5, \"sizes\": 10 } ] },\n",
            "  \"points\": ["
        );
        let with = GOOD.replacen("  \"points\": [", section, 1);
        assert_ne!(with, GOOD);
        let cal = Calibration::from_json("c.json", &with).unwrap_or_else(|e| panic!("{e}"));
        let l = cal.link.clone().expect("a link section");
        assert_eq!(l.pcie, "PCIe Gen5 x16");
        let t = l.transfer("host_to_device_memcpy_ce").unwrap();
        assert_eq!((t.latency_s, t.bandwidth_gbps, t.sizes), (1e-5, 52.5, 10));
        assert_eq!(
            Calibration::from_json("c.json", &cal.to_json()).unwrap(),
            cal
        );
        for (from, to, why) in [
            (
                "\"bandwidth_gbps\": 52.5",
                "\"bandwidth_gbps\": 0",
                "`link.transfers[0].bandwidth_gbps` is 0",
            ),
            (
                "\"latency_s\": 0.00001",
                "\"latency_s\": -1",
                "`link.transfers[0].latency_s` is -1",
            ),
            (
                "\"sizes\": 10",
                "\"sizes\": 1",
                "`link.transfers[0].sizes` is 1",
            ),
            (
                "\"nominal_gbps\": 63.015",
                "\"nominal_gbps\": -3",
                "`link.nominal_gbps` is -3",
            ),
        ] {
            let bad = with.replacen(from, to, 1);
            let e = err(&bad);
            assert!(e.contains(why), "{e}");
        }
    }

    /// The `gemm_efficiency` section: a GEMM point's shape as `MxNxK`, the curve's ceiling the
    /// file's own compute ceiling, every figure derived as documented; each damage refused with
    /// its line; a file without the section (every file before it) reads with none.
    #[test]
    fn gemm_efficiency_reads_back_and_is_checked() {
        let with = GOOD
            .replacen("\"cases\": 3, \"valid_cases\": 3", "\"cases\": 5, \"valid_cases\": 5", 1)
            .replacen(
                "\"roof_basis\": \"measured DRAM, measured f32 peak\" }\n  ]",
                concat!(
                    "\"roof_basis\": \"measured DRAM, measured f32 peak\" },\n",
                    "    { \"case\": \"gemm/simd/f32/1024x1024x1024\", \"family\": \"gemm\", ",
                    "\"precision\": \"f32\", \"param\": \"1024x1024x1024\",\n",
                    "      \"flop_per_byte\": 170.66666666666666, \"gflops\": 8000.0, ",
                    "\"bound\": \"compute\", \"roof_gflops\": 16000.0,\n",
                    "      \"fraction_of_roof\": 0.5, \"roof_basis\": \"measured DRAM, measured f32 peak\" }\n",
                    "  ],\n",
                    "  \"gemm_efficiency\": [\n",
                    "    { \"kernel\": \"simd\", \"precision\": \"f32\", \"ceiling\": \"peak f32\",\n",
                    "      \"ceiling_gflops\": 16000.0, \"spec_gflops\": 19500.0,\n",
                    "      \"points\": [\n",
                    "        { \"shape\": \"1x4096x4096\", \"gflop\": 0.033554432, \"gflops\": 700.0,\n",
                    "          \"efficiency\": 0.04375, \"spec_efficiency\": 0.035897435897435895 },\n",
                    "        { \"shape\": \"1024x1024x1024\", \"gflop\": 2.147483648, \"gflops\": 8000.0,\n",
                    "          \"efficiency\": 0.5, \"spec_efficiency\": 0.41025641025641024 }\n",
                    "      ] }\n",
                    "  ]"
                ),
                1,
            );
        assert_ne!(with, GOOD);
        let cal = Calibration::from_json("c.json", &with).unwrap_or_else(|e| panic!("{e}"));
        let curve = &cal.gemm_efficiency[0];
        assert_eq!(curve.points[1].shape, Shape::square(1024));
        assert_eq!(cal.points[1].param, Some(Param::Shape(Shape::square(1024))));
        assert_eq!(cal.points[0].param, Some(Param::Count(4)));
        assert_eq!(
            Calibration::from_json("c.json", &cal.to_json()).unwrap(),
            cal
        );
        assert!(Calibration::from_json("c.json", GOOD)
            .unwrap()
            .gemm_efficiency
            .is_empty());
        for (from, to, what) in [
            (
                "\"efficiency\": 0.5,",
                "\"efficiency\": 0.6,",
                "gflops / ceiling_gflops",
            ),
            (
                "\"spec_efficiency\": 0.035897435897435895",
                "\"spec_efficiency\": null",
                "gflops / spec_gflops",
            ),
            (
                "\"gflop\": 2.147483648",
                "\"gflop\": 2.0",
                "2·M·N·K / 1e9 of 1024x1024x1024",
            ),
            (
                "\"ceiling_gflops\": 16000.0",
                "\"ceiling_gflops\": 17000.0",
                "compute ceiling",
            ),
            (
                "\"ceiling\": \"peak f32\"",
                "\"ceiling\": \"tensor f32\"",
                "held against `peak f32`",
            ),
            (
                "\"gflops\": 700.0",
                "\"gflops\": -700.0",
                "not a finite positive",
            ),
            (
                "\"shape\": \"1x4096x4096\"",
                "\"shape\": \"4096x4096\"",
                "not a GEMM shape",
            ),
            (
                "\"param\": \"1024x1024x1024\"",
                "\"param\": \"1024x0x1024\"",
                "not a GEMM shape",
            ),
        ] {
            let bad = with.replacen(from, to, 1);
            assert_ne!(bad, with, "{from}");
            let e = err(&bad);
            assert!(e.contains(what), "{to}: {e}");
            assert!(
                e.starts_with(&format!("c.json:{}: ", line_with(&bad, to))),
                "{to}: {e}"
            );
        }
        // the curve's figure and the point's are one row's
        let bad = with.replacen(
            "\"gflops\": 8000.0, \"bound\": \"compute\", \"roof_gflops\": 16000.0,\n      \"fraction_of_roof\": 0.5,",
            "\"gflops\": 8100.0, \"bound\": \"compute\", \"roof_gflops\": 16000.0,\n      \"fraction_of_roof\": 0.50625,",
            1,
        );
        assert_ne!(bad, with);
        assert!(
            err(&bad).contains("the `gflops` of point gemm/simd/f32/1024x1024x1024"),
            "{}",
            err(&bad)
        );
        // points ascend in size
        let first = concat!(
            "        { \"shape\": \"1x4096x4096\", \"gflop\": 0.033554432, \"gflops\": 700.0,\n",
            "          \"efficiency\": 0.04375, \"spec_efficiency\": 0.035897435897435895 }"
        );
        let second = concat!(
            "        { \"shape\": \"1024x1024x1024\", \"gflop\": 2.147483648, \"gflops\": 8000.0,\n",
            "          \"efficiency\": 0.5, \"spec_efficiency\": 0.41025641025641024 }"
        );
        let swapped = with.replacen(
            &format!("{first},\n{second}"),
            &format!("{second},\n{first}"),
            1,
        );
        assert_ne!(swapped, with);
        assert!(
            err(&swapped).contains("points ascend in size"),
            "{}",
            err(&swapped)
        );
    }

    /// roofprobe-calibration/2 renamed `device.units` to `device.compute_units` and added the
    /// units table: a file of /1 (GOOD, and every checked-in one) loads, its `units` read as
    /// `compute_units`, the table this crate's, and is written back as /2 with both.
    #[test]
    fn a_file_of_schema_1_loads_and_is_written_back_as_schema_2() {
        let old = GOOD.replacen(
            "\"id\": \"cuda:0\" }",
            "\"id\": \"cuda:0\", \"units\": 108 }",
            1,
        );
        assert!(old.contains("roofprobe-calibration/1"));
        let cal = Calibration::from_json("c.json", &old).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cal.device.compute_units, 108);
        assert_eq!(cal.schema, SCHEMA);
        assert_eq!(cal.units, units_table());
        let written = cal.to_json();
        assert!(written.contains("\"schema\": \"roofprobe-calibration/2\""));
        assert!(written.contains("\"compute_units\": 108"), "{written}");
        assert!(!written.contains("\"units\": 108"), "{written}");
        assert!(
            written.contains("\"gbps\": \"GB/s: 10^9 bytes per second"),
            "{written}"
        );
        assert_eq!(Calibration::from_json("c.json", &written).unwrap(), cal);
    }

    /// The units table says what the figures' names mean; a file whose table means something
    /// else by a word this reader knows is refused (its figures would be misread), while a word
    /// this reader does not know (a later addition) is not.
    #[test]
    fn a_units_table_that_means_other_units_is_refused() {
        let cal = Calibration::from_json("c.json", GOOD).unwrap();
        let mut other = cal.clone();
        other
            .units
            .insert("gbps".into(), "GiB/s: 2^30 bytes per second".into());
        let text = other.to_json();
        let e = err(&text);
        assert!(
            e.starts_with(&format!(
                "c.json:{}: `units.gbps` says",
                line_with(&text, "GiB/s")
            )) && e.contains("would be misread"),
            "{e}"
        );
        let mut later = cal.clone();
        later.units.insert("joules".into(), "J".into());
        assert_eq!(
            Calibration::from_json("c.json", &later.to_json()).unwrap(),
            later
        );
    }

    /// A ceiling set by a flagged row says so (`suspect`, and why: `case: flags`); the two agree
    /// or the file is refused; a file without them (every file before /2) reads as unflagged.
    #[test]
    fn a_suspect_ceiling_says_why_and_the_two_agree() {
        let plain = Calibration::from_json("c.json", GOOD).unwrap();
        assert!(!plain.memory_ceilings[0].suspect);
        assert!(!plain.to_json().contains("suspect"));
        let with = GOOD.replacen(
            "\"efficiency\": 0.8, \"above_spec\": false }",
            "\"efficiency\": 0.8, \"above_spec\": false,\n      \"suspect\": true, \"suspect_reason\": \"stream/triad/f32: high_cv(26.5%)\" }",
            1,
        );
        assert_ne!(with, GOOD);
        let cal = Calibration::from_json("c.json", &with).unwrap_or_else(|e| panic!("{e}"));
        let m = &cal.memory_ceilings[0];
        assert!(m.suspect);
        assert_eq!(
            m.suspect_reason.as_deref(),
            Some("stream/triad/f32: high_cv(26.5%)")
        );
        assert_eq!(
            Calibration::from_json("c.json", &cal.to_json()).unwrap(),
            cal
        );
        for (from, to, why) in [
            (
                "\"suspect\": true, ",
                "\"suspect\": false, ",
                "`suspect` is false but the ceiling has a `suspect_reason`",
            ),
            (
                ", \"suspect_reason\": \"stream/triad/f32: high_cv(26.5%)\"",
                "",
                "`suspect` is true but the ceiling has no `suspect_reason`",
            ),
            (
                "stream/triad/f32: high_cv",
                "stream/copy/f32: high_cv",
                "does not name the ceiling's case",
            ),
        ] {
            let bad = with.replacen(from, to, 1);
            assert_ne!(bad, with, "{from}");
            let e = err(&bad);
            assert!(e.contains(why), "{to}: {e}");
        }
    }

    #[test]
    fn control_characters_are_refused_anywhere() {
        for (from, to) in [
            ("NVIDIA A100", "NVIDIA\\u001b[2J A100"),
            ("lab-x", "lab\\nerror: forged"),
            ("vendor datasheet", "vendor\\u0000"),
        ] {
            let bad = GOOD.replacen(from, to, 1);
            let e = err(&bad);
            let line = line_with(&bad, to);
            assert!(
                e.starts_with(&format!("c.json:{line}: `")) && e.contains("control character"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_csv_is_named_as_such() {
        let e = err("schema,run_id,timestamp_utc\nroofprobe-csv/1,x,y\n");
        assert_eq!(
            e,
            "c.json:1: this is a roofprobe results CSV, not a calibration; run `roofprobe export \
             FILE.csv -o FILE.json` first and load the JSON"
        );
        let dir = std::env::temp_dir().join(format!("rpcal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("run.csv");
        std::fs::write(&p, "\u{feff}schema,run_id\n").unwrap();
        let e = Calibration::load(&p).unwrap_err().to_string();
        assert!(e.contains("this is a roofprobe results CSV"), "{e}");
        std::fs::write(&p, [0xff, 0xfe, 0x00]).unwrap();
        let e = Calibration::load(&p).unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
