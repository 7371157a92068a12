//! A calibration in other estimators' own files: AIConfigurator's system YAML, llm-analysis's
//! GPU config JSON, Calculon's system JSON and LLM-Viewer's hardware parameters
//! (`roofprobe export --format FORMAT`); the fifth format, roofprobe's own calibration JSON, is
//! [`crate::render::json`]'s.
//!
//! Each format is a list of [`Field`]s: the tool's key, the value in the tool's unit, and where
//! the value came from ([`Source`]): a measured ceiling of the run, the vendor spec sheet where
//! nothing measured it, the driver's report (the SM version), a documented default where no
//! run can know the figure (the node's network, a perf-data folder), or the user (`--set
//! KEY=VALUE`, checked against the format's `Key`s). Every field the tool needs to load the
//! file and time a model is filled, so the file loads with no `--set`; a required field that
//! nothing can fill (no DRAM measured and no sheet) is an error naming it. Where the tool
//! computes with one figure, it is the measured one (the sheet's may sit beside it). Units
//! follow each tool's source, cited per field in docs/exports.md; several tools say GB where
//! they compute GiB.
//!
//! This module holds what the formats share (the sources, the values, the figures a calibration
//! offers every format, `--set`, the assembly of an export); each format's fields, keys and
//! rendering are in its own file, whose top documents the tool's schema and units:
//! `aiconfigurator`, `llm_analysis`, `calculon`, `llm_viewer`.
//!
//! It renders text and lists what was spec-derived or defaulted; it must not print, read files
//! or measure anything (the `export` command does the I/O).

mod aiconfigurator;
mod calculon;
#[doc(hidden)]
pub mod fixtures;
mod llm_analysis;
mod llm_viewer;

pub use calculon::best_gemm_curve;

use crate::analysis::calibration::Calibration;
use crate::cases::{Family, Precision};
use crate::specs::{self, GpuSpec};
use crate::{Error, Result};
use roofprobe_calibration::check::{
    MAX_GBPS, MAX_GFLOPS, MAX_MEMORY_BYTES, MAX_WATTS, MIN_CEILING, MIN_SECS,
};
use roofprobe_calibration::{BackendKind, MemoryLevel, SizeEfficiency, SpecBasis};

/// The formats `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// roofprobe's own calibration JSON (the default).
    Roofprobe,
    /// AIConfigurator's system YAML (`systems/<name>.yaml`).
    Aiconfigurator,
    /// llm-analysis's GPU config JSON (`gpu_configs/<name>.json`).
    LlmAnalysis,
    /// Calculon's system JSON (`systems/<name>.json`).
    Calculon,
    /// LLM-Viewer's hardware parameters (`hardwares/hardware_params.py`).
    LlmViewer,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Roofprobe => "roofprobe",
            Format::Aiconfigurator => "aiconfigurator",
            Format::LlmAnalysis => "llm-analysis",
            Format::Calculon => "calculon",
            Format::LlmViewer => "llm-viewer",
        }
    }
}

/// Where a field's value came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A measured ceiling of the run (its case id), possibly over a spec figure (`over`).
    Measured(String),
    /// The spec sheet's column, for the sheet entry named; nothing in the run measured it.
    Spec { entry: String, column: String },
    /// The spec sheet's column where the format's field is the rated figure, the run's
    /// measurement going into the field named (a fraction of this one).
    Rated {
        entry: String,
        column: String,
        measured_in: String,
    },
    /// The device's own report (driver, compute capability, SM count, cache size).
    Device(String),
    /// Given on the command line (`--set`).
    Given,
    /// A fixed choice of the export, not a figure (explained in docs/exports.md).
    Choice(&'static str),
    /// A figure no run measures and no sheet holds, which the tool needs to load the file: a
    /// documented default (what it is and whose), to be replaced with `--set` where it matters.
    Default(String),
}

impl Source {
    pub fn describe(&self) -> String {
        match self {
            Source::Measured(how) => format!("measured: {how}"),
            Source::Spec { entry, column } => {
                format!("spec sheet \"{entry}\": {column} (not measured)")
            }
            Source::Rated {
                entry,
                column,
                measured_in,
            } => format!(
                "spec sheet \"{entry}\": {column}, the rated figure the format asks for (the \
                 run's measurement is in {measured_in})"
            ),
            Source::Device(what) => format!("device report: {what}"),
            Source::Given => "given with --set".to_string(),
            Source::Choice(why) => format!("export choice: {why}"),
            Source::Default(what) => format!("default, not measured: {what}"),
        }
    }

    pub fn is_spec(&self) -> bool {
        matches!(self, Source::Spec { .. } | Source::Rated { .. })
    }

    pub fn is_default(&self) -> bool {
        matches!(self, Source::Default(_))
    }

    /// A sheet figure this field holds as the rated one, the measurement in `measured_in`.
    pub(super) fn rated(self, measured_in: &str) -> Source {
        match self {
            Source::Spec { entry, column } => Source::Rated {
                entry,
                column,
                measured_in: measured_in.to_string(),
            },
            other => other,
        }
    }
}

/// A value in the tool's unit.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Num(f64),
    Int(u64),
    Text(String),
    /// Calculon's efficiency curve: `[[size, efficiency], …]`, sizes falling to 0.
    Curve(Vec<(f64, f64)>),
    /// A structure written as it is (Calculon's network tiers).
    Json(serde_json::Value),
}

impl Value {
    pub(super) fn json(&self) -> String {
        match self {
            Value::Num(v) => num(*v),
            Value::Int(v) => v.to_string(),
            Value::Text(s) => serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()),
            Value::Curve(points) => format!(
                "[{}]",
                points
                    .iter()
                    .map(|(s, e)| format!("[{}, {}]", num(*s), num(*e)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Value::Json(v) => serde_json::to_string(v).unwrap_or_else(|_| "null".into()),
        }
    }

    /// The value as a number, where it is one.
    pub(super) fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Num(v) => Some(*v),
            Value::Int(v) => Some(*v as f64),
            _ => None,
        }
    }
}

/// A float as JSON/YAML/Python read it back exactly (`1e12`, `0.5`, never `NaN`).
fn num(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

/// One field of an export: the tool's key (dotted for nesting), its value and unit, its source.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub key: String,
    pub value: Value,
    pub unit: &'static str,
    pub source: Source,
}

/// An export: the fields found, the keys the format knows that nothing gave and the tool does
/// without, what the reader should know, and the rendered text.
#[derive(Debug)]
pub struct Export {
    pub format: Format,
    pub fields: Vec<Field>,
    /// Keys left out that the tool does without (its own default or a derived figure).
    pub defaulted: Vec<&'static str>,
    /// Notes for stderr: a measurement left out and why (a size fit below its quality bound).
    pub notes: Vec<String>,
    pub text: String,
}

impl Export {
    /// The fields that come from the spec sheet, for the stderr note.
    pub fn spec_fields(&self) -> Vec<&Field> {
        self.fields.iter().filter(|f| f.source.is_spec()).collect()
    }

    /// The fields that hold a documented default, for the stderr note.
    pub fn default_fields(&self) -> Vec<&Field> {
        self.fields
            .iter()
            .filter(|f| f.source.is_default())
            .collect()
    }
}

/// What a `--set` value of a key may be: the tool's own type and range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind {
    /// A rate, size or time the tool divides by or allocates: finite, above 0 and within the
    /// physical bounds of what it measures, given in the key's unit.
    Positive(Measure, Unit),
    /// A latency or a size that may be nil: finite, at least 0, within the bounds of its
    /// measure.
    NonNegative(Measure, Unit),
    /// An efficiency or scaling factor: above 0 and at most `max`.
    Fraction { max: f64 },
    /// A whole number in 1..=max (a count, an SM version, a capacity in bytes).
    Whole { max: u64 },
    /// A whole number of bytes, 0 ..= [`MAX_MEMORY_BYTES`].
    WholeBytes,
    /// Text without control characters.
    Text,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A structure roofprobe writes whole (Calculon's network tiers): not for `--set`.
    Structure,
}

/// What a figure of a key measures: the physical bounds a `--set` value is held to, the same a
/// file read back is held to ([`roofprobe_calibration::check`]), so a value no device has never
/// reaches a tool.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Measure {
    /// GB/s: [`MIN_CEILING`] ..= [`MAX_GBPS`].
    Bandwidth,
    /// GFLOP/s (or GOP/s): [`MIN_CEILING`] ..= [`MAX_GFLOPS`].
    Compute,
    /// Bytes: 1 ..= [`MAX_MEMORY_BYTES`].
    Memory,
    /// Watts: up to [`MAX_WATTS`].
    Power,
    /// Seconds: up to [`MAX_LATENCY_SECS`].
    Latency,
}

/// No latency a tool models (a message, a memory op's constant cost) reaches a second.
pub(super) const MAX_LATENCY_SECS: f64 = 1.0;

/// A key's unit, as the measure's house unit it is (a B/s is 1e-9 GB/s, a GiB 2^30 bytes).
pub(super) type Unit = f64;
/// B/s, FLOP/s: 1e-9 GB/s, GFLOP/s.
pub(super) const PER_SECOND: Unit = 1e-9;
/// GB/s, GFLOP/s, bytes, W, s: the house unit itself.
pub(super) const SAME: Unit = 1.0;
/// TFLOP/s: 1e3 GFLOP/s.
pub(super) const TERA: Unit = 1e3;

impl Measure {
    /// The least and the largest figure, in the house unit; `positive` keys start above 0.
    fn bounds(self, positive: bool) -> (f64, f64) {
        let (least, most) = match self {
            Measure::Bandwidth => (MIN_CEILING, MAX_GBPS),
            Measure::Compute => (MIN_CEILING, MAX_GFLOPS),
            Measure::Memory => (1.0, MAX_MEMORY_BYTES as f64),
            Measure::Power => (f64::MIN_POSITIVE, MAX_WATTS),
            Measure::Latency => (MIN_SECS, MAX_LATENCY_SECS),
        };
        (if positive { least } else { 0.0 }, most)
    }
}

/// One key of a format: its name (dotted for nesting), what a value may be, and whether the
/// tool needs it to load the file and time a model.
#[derive(Clone, Copy, Debug)]
pub(super) struct Key {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
}

/// A key the tool needs.
pub(super) const fn needs(name: &'static str, kind: Kind) -> Key {
    Key {
        name,
        kind,
        required: true,
    }
}

/// A key the tool does without (it has a default of its own, or the key is a refinement).
pub(super) const fn may(name: &'static str, kind: Kind) -> Key {
    Key {
        name,
        kind,
        required: false,
    }
}

/// The keys of a format, in the file's order.
fn keys(format: Format) -> &'static [Key] {
    match format {
        Format::Roofprobe => &[],
        Format::Aiconfigurator => aiconfigurator::KEYS,
        Format::LlmAnalysis => llm_analysis::KEYS,
        Format::Calculon => calculon::KEYS,
        Format::LlmViewer => llm_viewer::KEYS,
    }
}

/// The keys `--set` may give, per format (every key the format writes).
pub fn known_keys(format: Format) -> Vec<&'static str> {
    keys(format).iter().map(|k| k.name).collect()
}

/// What the assembly of an export draws on: the calibration and its spec-sheet entry (if any).
pub(super) struct Inputs<'a> {
    pub(super) cal: &'a Calibration,
    pub(super) sheet: Option<&'a GpuSpec>,
}

pub(super) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Said beside a measured figure whose row the run flagged (`flags`): it counts, but rerun.
pub const SUSPECT: &str = "flagged suspect in the run: rerun before trusting it";

/// The register file of one SM, in bytes: 64 K 32-bit registers on every compute capability
/// from 5.0 to 10.x (the CUDA C++ Programming Guide's technical specifications per compute
/// capability).
const REGISTER_FILE_BYTES_PER_SM: u64 = 65_536 * 4;

impl Inputs<'_> {
    pub(super) fn entry(&self) -> String {
        self.sheet.map(|s| s.device.clone()).unwrap_or_default()
    }

    pub(super) fn is_host(&self) -> bool {
        self.cal.device.backend == BackendKind::Host
    }

    pub(super) fn spec(&self, column: &str) -> Option<(f64, Source)> {
        let s = self.sheet?;
        s.figure(column)
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(|v| {
                (
                    v,
                    Source::Spec {
                        entry: s.device.clone(),
                        column: column.to_string(),
                    },
                )
            })
    }

    /// The case that set a ceiling, said to be suspect where the run flagged it (the ceiling's
    /// own mark, or, in a file of schema 1, the run's list of flagged rows).
    pub(super) fn case(&self, case: &Option<String>, suspect: bool) -> String {
        let case = case.clone().unwrap_or_default();
        if suspect || self.cal.is_suspect(&case) {
            format!("{case} ({SUSPECT})")
        } else {
            case
        }
    }

    /// The DRAM ceiling in GB/s (10^9 B/s) and its case.
    pub(super) fn dram(&self) -> Option<(f64, String)> {
        self.cal
            .memory_ceilings
            .iter()
            .find(|m| m.level == MemoryLevel::Dram)
            .and_then(|m| Some((m.gbps?, self.case(&m.case, m.suspect))))
            .filter(|(v, _)| v.is_finite() && *v > 0.0)
    }

    /// The DRAM rate a tool computes with, in GB/s: measured, else the sheet's (marked). Where
    /// both exist the sheet's figure is named beside the measured one.
    pub(super) fn dram_rate(&self) -> Option<(f64, Source)> {
        match (self.dram(), self.spec("mem_bandwidth_gbs")) {
            (Some((gbps, case)), Some((spec, _))) => Some((
                gbps,
                Source::Measured(format!("{case} (the sheet's figure is {} GB/s)", sig(spec))),
            )),
            (Some((gbps, case)), None) => Some((gbps, Source::Measured(case))),
            (None, sheet) => sheet,
        }
    }

    /// The size sweep's fits, triad's (read 2 : write 1, the mix of most memory-bound
    /// operators) first, then copy's.
    fn size_fits(&self) -> impl Iterator<Item = &SizeEfficiency> {
        ["triad", "copy"].into_iter().filter_map(|k| {
            self.cal
                .size_efficiency
                .iter()
                .find(|s| s.kernel == k && !s.points.is_empty())
        })
    }

    /// The size sweep's fit the exports take: the first of [`Inputs::size_fits`] within the
    /// quality bound ([`SizeEfficiency::quality`]); `None` without one.
    pub(super) fn size_fit(&self) -> Option<&SizeEfficiency> {
        self.size_fits().find(|f| f.quality().is_ok())
    }

    /// The fits left out for their quality, each with why: for the export's notes.
    pub(super) fn size_fits_left_out(&self) -> Vec<String> {
        self.size_fits()
            .filter_map(|f| {
                f.quality().err().map(|why| {
                    format!(
                        "the size sweep's fit efficiency/{}/{} is left out: {why}; the fields it \
                         would give fall back as docs/exports.md says",
                        f.kernel, f.precision
                    )
                })
            })
            .collect()
    }

    /// Where a figure from the fit came from, for the file: the kernel, the sizes, the fit.
    pub(super) fn size_fit_source(fit: &SizeEfficiency, what: &str) -> Source {
        let (first, last) = (
            fit.points.first().map_or(0, |p| p.bytes),
            fit.points.last().map_or(0, |p| p.bytes),
        );
        Source::Measured(format!(
            "{what}: efficiency/{}/{} fit t = a + bytes/BW over {} sizes ({} to {} bytes per \
             launch), a = {:e} s{}, BW = {} GB/s, rms relative residual {}",
            fit.kernel,
            fit.precision,
            fit.points.len(),
            first,
            last,
            fit.constant_secs,
            if fit.constant_clamped {
                " (clamped to 0)"
            } else {
                ""
            },
            sig(fit.asymptotic_gbps),
            sig(fit.rms_relative_residual)
        ))
    }

    /// A compute ceiling in GFLOP/s and its case.
    pub(super) fn compute(&self, family: Family, precision: Precision) -> Option<(f64, String)> {
        let c = self.cal.compute(family, precision)?;
        Some((c.gflops?, self.case(&c.case, c.suspect))).filter(|(v, _)| v.is_finite())
    }

    /// A rate in FLOP/s: measured (`family`/`precision`) first, else the sheet's column (TFLOP/s).
    pub(super) fn flops(
        &self,
        family: Family,
        precision: Precision,
        column: &str,
    ) -> Option<(f64, Source)> {
        match self.compute(family, precision) {
            Some((g, case)) => Some((g * 1e9, Source::Measured(case))),
            None => self.spec(column).map(|(t, s)| (t * 1e12, s)),
        }
    }

    /// The one 16-bit tensor rate a tool takes, in FLOP/s: `prefer` (tensor f16.f32 or
    /// bf16.f32) measured, else the other 16-bit tensor type measured (the two run at one rate
    /// on every GPU and CPU that has both), else the sheet's column for `prefer`, else the f32
    /// peak measured: a device without 16-bit units (a CPU without AMX or AVX-512 BF16)
    /// converts and computes 16-bit values in f32, so that is its 16-bit rate. Each says which.
    pub(super) fn sixteen_bit(&self, prefer: Precision) -> Option<(f64, Source)> {
        let (other, column) = match prefer {
            Precision::Bf16F32 => (Precision::F16F32, "bf16_tensor_tflops"),
            _ => (Precision::Bf16F32, "fp16_tensor_fp32acc_tflops"),
        };
        if let Some((g, case)) = self.compute(Family::Tensor, prefer) {
            return Some((g * 1e9, Source::Measured(case)));
        }
        if let Some((g, case)) = self.compute(Family::Tensor, other) {
            return Some((
                g * 1e9,
                Source::Measured(format!(
                    "{case} (no tensor {prefer} rate measured; {other} runs at the same rate)"
                )),
            ));
        }
        if let Some((t, s)) = self.spec(column) {
            return Some((t * 1e12, s));
        }
        self.compute(Family::Peak, Precision::F32).map(|(g, case)| {
            (
                g * 1e9,
                Source::Measured(format!(
                    "{case} (no 16-bit rate measured or on a sheet: a device without 16-bit \
                     units computes 16-bit values at its f32 rate)"
                )),
            )
        })
    }

    /// The measured capacity: (total, free) bytes, where the run read them.
    fn capacity(&self) -> Option<(u64, u64)> {
        self.cal.capacity.map(|c| (c.total_bytes, c.free_bytes))
    }

    /// What a model may use, in bytes: what the run measured free (a GPU's right after its
    /// context was created, the host's `MemAvailable`), else the sheet's `memory_gb`, which
    /// vendors state in GiB for these parts (an A100 80GB reports 81920 MiB).
    pub(super) fn usable_memory_bytes(&self) -> Option<(f64, Source)> {
        match self.capacity() {
            Some((_, free)) => Some((
                free as f64,
                Source::Measured(format!(
                    "capacity/free: {}",
                    if self.is_host() {
                        "the OS's MemAvailable when the run read it"
                    } else {
                        "free right after the run created its context"
                    }
                )),
            )),
            None => self.spec("memory_gb").map(|(g, s)| (g * GIB, s)),
        }
    }

    /// The device's whole memory, in bytes: what the run measured as total, else the sheet's.
    pub(super) fn total_memory_bytes(&self) -> Option<(f64, Source)> {
        match self.capacity() {
            Some((total, _)) => Some((
                total as f64,
                Source::Measured("capacity/total: the driver's or OS's total".into()),
            )),
            None => self.spec("memory_gb").map(|(g, s)| (g * GIB, s)),
        }
    }

    /// What the run measured in use before any model (total − free: a GPU's context, and on
    /// the host every other process), in bytes.
    pub(super) fn memory_in_use_bytes(&self) -> Option<(f64, Source)> {
        let (total, free) = self.capacity()?;
        Some((
            total.saturating_sub(free) as f64,
            Source::Measured(
                "capacity/total − capacity/free: in use before any model (a GPU's context; on \
                 the host, every other process)"
                    .into(),
            ),
        ))
    }

    /// NVLink per direction in GB/s: the sheet's figure is both directions together.
    pub(super) fn nvlink_per_direction_gbs(&self) -> Option<(f64, Source)> {
        self.spec("nvlink_gbs").map(|(g, s)| (g / 2.0, s))
    }

    /// PCIe per direction in GB/s: measured where the run fitted its pinned copies (the lower of
    /// the host-to-device and device-to-host asymptotes: a transfer's rate is its slower
    /// direction's in a round trip, and an estimator given one figure should not be promised
    /// the faster), else the sheet's `(N GB/s)` (both directions together) halved.
    pub(super) fn pcie_per_direction_gbs(&self) -> Option<(f64, Source)> {
        let measured = self.cal.link.as_ref().and_then(|l| {
            crate::cases::link::Transfer::FITTED
                .into_iter()
                .filter_map(|t| {
                    let fit = l.transfer(t.as_str())?;
                    Some((fit.bandwidth_gbps, t.as_str()))
                })
                .filter(|(g, _)| g.is_finite() && *g > 0.0)
                .min_by(|a, b| a.0.total_cmp(&b.0))
        });
        if let Some((gbps, kernel)) = measured {
            return Some((
                gbps,
                Source::Measured(format!(
                    "link/{kernel}: the asymptote of its fit over sizes (the slower pinned direction)"
                )),
            ));
        }
        let s = self.sheet?;
        let open = s.pcie.find('(')?;
        let inner = &s.pcie[open + 1..];
        let gbs: f64 = inner.split_whitespace().next()?.parse().ok()?;
        (gbs > 0.0).then(|| {
            (
                gbs / 2.0,
                Source::Spec {
                    entry: s.device.clone(),
                    column: "pcie".into(),
                },
            )
        })
    }

    /// The device's link to its host memory, per direction in GB/s: PCIe (measured, else the
    /// sheet's) for a GPU; for the host CPU, which is its own host, a copy to host memory is a
    /// memory copy, at the DRAM rate.
    pub(super) fn host_link_gbs(&self) -> Option<(f64, Source)> {
        if self.is_host() {
            return self.dram().map(|(g, case)| {
                (
                    g,
                    Source::Measured(format!(
                        "{case} (the host CPU is its own host: a copy to host memory is a \
                         memory copy)"
                    )),
                )
            });
        }
        self.pcie_per_direction_gbs()
    }

    /// The link between two devices of one node, per direction in GB/s: NVLink where the sheet
    /// has it, else the host link (peers talk over PCIe, or a host's memory).
    pub(super) fn peer_link_gbs(&self) -> Option<(f64, Source)> {
        self.nvlink_per_direction_gbs()
            .or_else(|| self.host_link_gbs())
    }

    /// `90` for compute capability `9.0`, as the driver reported it.
    pub(super) fn sm_version(&self) -> Option<(u64, Source)> {
        let cc = &self.cal.device.compute_capability;
        let (major, minor) = cc.split_once('.')?;
        let v = major.parse::<u64>().ok()? * 10 + minor.parse::<u64>().ok()?;
        Some((v, Source::Device(format!("compute capability {cc}"))))
    }

    /// The fastest on-chip store a kernel tiles into, in bytes, as LLM-Viewer's own entries
    /// count it: a GPU's register files (its SMs × 256 KiB; LLM-Viewer's A100 is 108 × 256 kB),
    /// the host's last-level cache (LLM-Viewer's Core i9-13900K is its 36 MB L3).
    pub(super) fn onchip_bytes(&self) -> Option<(f64, Source)> {
        let d = &self.cal.device;
        if self.is_host() {
            if d.last_level_cache_bytes > 0 {
                return Some((
                    d.last_level_cache_bytes as f64,
                    Source::Device(format!(
                        "the last-level cache the OS reports, {} bytes",
                        d.last_level_cache_bytes
                    )),
                ));
            }
            // a file of schema 1 does not carry it: the largest level the sweep matched
            self.cal
                .memory_ceilings
                .iter()
                .filter_map(|m| {
                    let p = m.plateau.as_ref()?;
                    Some((p.reported_bytes?, p.matched.clone()))
                })
                .max_by_key(|(bytes, _)| *bytes)
                .map(|(bytes, level)| {
                    (
                        bytes as f64,
                        Source::Device(format!(
                            "the {level} the OS reports, {bytes} bytes: the largest cache level \
                             the bandwidth sweep matched (this file does not say the last level)"
                        )),
                    )
                })
        } else {
            (d.compute_units > 0).then(|| {
                (
                    (u64::from(d.compute_units) * REGISTER_FILE_BYTES_PER_SM) as f64,
                    Source::Device(format!(
                        "{} SMs × their 256 KiB register file",
                        d.compute_units
                    )),
                )
            })
        }
    }

    /// The name the tool files the device under: the device's, in the tool's lowercase style.
    pub(super) fn name(&self) -> String {
        let slug = crate::units::slug(&self.cal.device.name);
        if slug.is_empty() {
            "roofprobe-device".into()
        } else {
            slug
        }
    }
}

/// A `--set` value checked against its key's kind.
fn given_value(key: &Key, text: &str) -> std::result::Result<Value, String> {
    let name = key.name;
    let float = || {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("`{name}` needs a number; got `{text}`"))
    };
    match key.kind {
        Kind::Structure => Err(format!(
            "`{name}` is a structure, not a figure: edit it in the written file"
        )),
        Kind::Text => {
            if text.is_empty()
                || text
                    .chars()
                    .any(roofprobe_calibration::check::is_forbidden_char)
            {
                Err(format!("`{name}` needs a text without control characters"))
            } else {
                Ok(Value::Text(text.to_string()))
            }
        }
        Kind::OneOf(words) => {
            if words.contains(&text) {
                Ok(Value::Text(text.to_string()))
            } else {
                Err(format!(
                    "`{name}` is one of {}; got `{text}`",
                    words.join(", ")
                ))
            }
        }
        Kind::Whole { .. } | Kind::WholeBytes => {
            let (least, most) = match key.kind {
                Kind::Whole { max } => (1, max),
                _ => (0, MAX_MEMORY_BYTES),
            };
            text.parse::<u64>()
                .ok()
                .filter(|v| (least..=most).contains(v))
                .map(Value::Int)
                .ok_or_else(|| {
                    format!(
                        "`{name}` needs a whole number, at least {least} and at most {most}; \
                         got `{text}`"
                    )
                })
        }
        Kind::Positive(measure, unit) | Kind::NonNegative(measure, unit) => {
            let positive = matches!(key.kind, Kind::Positive(..));
            let (least, most) = measure.bounds(positive);
            // (to ten figures: 1e-6 GB/s over 1e-9 is 999.9999999999999 B/s in binary)
            let in_unit = |x: f64| format!("{:.9e}", x / unit).parse().unwrap_or(x / unit);
            let (least, most): (f64, f64) = (in_unit(least), in_unit(most));
            float()
                .and_then(|v| {
                    let fits = v >= least && v <= most && (!positive || v.is_normal());
                    fits.then_some(v).ok_or_else(|| {
                        format!(
                            "`{name}` must be {} and at most {most:e} (no device is beyond \
                             these); got `{text}`",
                            if positive {
                                format!("above 0, at least {least:e}")
                            } else {
                                "0 or more".to_string()
                            }
                        )
                    })
                })
                .map(Value::Num)
        }
        Kind::Fraction { max } => float()
            .and_then(|v| {
                (v > 0.0 && v <= max).then_some(v).ok_or_else(|| {
                    format!("`{name}` is a fraction, above 0 and at most {max}; got `{text}`")
                })
            })
            .map(Value::Num),
    }
}

/// Parses `--set KEY=VALUE` against the format's keys, each value against its key's type and
/// range (`Kind`); an unknown key or a bad value is one usage error naming what is allowed.
pub fn parse_sets(format: Format, sets: &[String]) -> Result<Vec<(String, Value)>> {
    let known = keys(format);
    sets.iter()
        .map(|s| {
            let (name, text) = s
                .split_once('=')
                .ok_or_else(|| Error::Usage(format!("--set `{s}` is not KEY=VALUE")))?;
            let Some(key) = known.iter().find(|k| k.name == name) else {
                return Err(Error::Usage(if known.is_empty() {
                    format!(
                        "--set is for the other formats; --format {} takes none",
                        format.as_str()
                    )
                } else {
                    format!(
                        "--set: `{name}` is not a key of --format {}; it knows: {}",
                        format.as_str(),
                        known_keys(format).join(", ")
                    )
                }));
            };
            let v = given_value(key, text).map_err(|e| Error::Usage(format!("--set: {e}")))?;
            Ok((name.to_string(), v))
        })
        .collect()
}

/// The sheet entry a calibration was held against, if it names one.
pub fn sheet_of(cal: &Calibration) -> Result<Option<&'static GpuSpec>> {
    match &cal.spec {
        SpecBasis::Sheet { entry, .. } => {
            let db = specs::database()?;
            Ok(db.iter().find(|s| &s.device == entry))
        }
        _ => Ok(None),
    }
}

/// Whether a field fills a key: the key itself, or a key below it (`misc.nccl_mem.1`).
fn fills(field: &str, key: &str) -> bool {
    field == key || field.starts_with(&format!("{key}."))
}

/// Builds the export of `cal` in `format` (not [`Format::Roofprobe`], which is the calibration's
/// own JSON), with `sets` applied over what was found. A key the tool needs that nothing filled
/// (not measured, not on the sheet, no default, not given) is an error naming each.
pub fn build(
    cal: &Calibration,
    sheet: Option<&GpuSpec>,
    format: Format,
    sets: &[(String, Value)],
) -> Result<Export> {
    let inputs = Inputs { cal, sheet };
    let mut fields = match format {
        Format::Roofprobe => {
            return Err(Error::Internal(
                "the roofprobe format is the calibration's own JSON".into(),
            ))
        }
        Format::Aiconfigurator => aiconfigurator::fields(&inputs),
        Format::LlmAnalysis => llm_analysis::fields(&inputs),
        Format::Calculon => calculon::fields(&inputs),
        Format::LlmViewer => llm_viewer::fields(&inputs),
    };
    for (key, value) in sets {
        let unit = fields.iter().find(|f| &f.key == key).map_or("", |f| f.unit);
        fields.retain(|f| !fills(&f.key, key));
        fields.push(Field {
            key: key.clone(),
            value: value.clone(),
            unit,
            source: Source::Given,
        });
    }
    let order = keys(format);
    let rank = |k: &str| {
        order
            .iter()
            .position(|o| fills(k, o.name))
            .unwrap_or(order.len())
    };
    fields.sort_by_key(|f| rank(&f.key));
    let unfilled: Vec<&Key> = order
        .iter()
        .filter(|k| !fields.iter().any(|f| fills(&f.key, k.name)))
        .collect();
    let missing: Vec<&str> = unfilled
        .iter()
        .filter(|k| k.required)
        .map(|k| k.name)
        .collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "--format {} needs {}, which this run did not measure and no spec-sheet entry or \
             default gives; give {} with --set KEY=VALUE",
            format.as_str(),
            missing.join(", "),
            if missing.len() == 1 { "it" } else { "them" }
        )));
    }
    finite(format, &fields)?;
    let defaulted = unfilled.iter().map(|k| k.name).collect();
    let header = header_lines(cal, &inputs);
    let text = match format {
        Format::Aiconfigurator => aiconfigurator::render(&header, &inputs, &fields),
        Format::LlmAnalysis => llm_analysis::render(&header, &inputs, &fields),
        Format::Calculon => calculon::render(&header, &inputs, &fields),
        Format::LlmViewer => llm_viewer::render(&header, &inputs, &fields),
        Format::Roofprobe => unreachable!("refused above"),
    };
    Ok(Export {
        format,
        fields,
        defaulted,
        notes: inputs.size_fits_left_out(),
        text,
    })
}

/// Every figure of every field finite, before the file's text is made: a field is a ceiling in
/// the tool's unit or a figure derived from several (a rate over a sheet's, a curve), and a
/// tool reads `inf` or `.nan` as a figure (Calculon's JSON would hold `null`). Figures read
/// within their bounds keep every field finite; this holds where a combination at the edges, or
/// a format added later, would not. Public for the tests, hidden from the docs.
#[doc(hidden)]
pub fn finite(format: Format, fields: &[Field]) -> Result<()> {
    for f in fields {
        let bad = match &f.value {
            Value::Num(v) => (!v.is_finite()).then_some(*v),
            Value::Curve(points) => points
                .iter()
                .flat_map(|(size, efficiency)| [*size, *efficiency])
                .find(|v| !v.is_finite()),
            Value::Json(v) => roofprobe_calibration::finite::first_non_finite(v).map(|(_, v)| v),
            Value::Int(_) | Value::Text(_) => None,
        };
        if let Some(value) = bad {
            return Err(Error::NotFinite {
                output: format!("--format {}", format.as_str()),
                figure: f.key.clone(),
                value,
            });
        }
    }
    Ok(())
}

fn header_lines(cal: &Calibration, inputs: &Inputs) -> Vec<String> {
    vec![
        format!(
            "written by {} from run {} ({}), {} to {}",
            if cal.generator.is_empty() {
                "roofprobe"
            } else {
                &cal.generator
            },
            cal.run.run_id,
            cal.title(),
            cal.run.first_utc,
            cal.run.last_utc
        ),
        match inputs.sheet {
            Some(_) => format!(
                "fields marked `spec sheet` come from \"{}\", not from this run; fields marked \
                 `default` from no run",
                inputs.entry()
            ),
            None => "no spec-sheet entry: every figure here was measured or given, or is a \
                     default marked as one"
                .to_string(),
        },
    ]
}

pub(super) fn push(
    fields: &mut Vec<Field>,
    key: &str,
    unit: &'static str,
    found: Option<(Value, Source)>,
) {
    if let Some((value, source)) = found {
        fields.push(Field {
            key: key.to_string(),
            value,
            unit,
            source,
        });
    }
}

pub(super) fn rate(found: Option<(f64, Source)>, scale: f64) -> Option<(Value, Source)> {
    found.map(|(v, s)| (Value::Num(v * scale), s))
}

/// A documented default: `value` and what it is.
pub(super) fn default(value: Value, what: &str) -> Option<(Value, Source)> {
    Some((value, Source::Default(what.to_string())))
}

/// Four significant figures, for comments.
pub(super) fn sig(v: f64) -> String {
    format!("{v:.4}")
}

pub(super) fn comment(field: &Field) -> String {
    let unit = if field.unit.is_empty() {
        String::new()
    } else {
        format!("{}; ", field.unit)
    };
    format!("{unit}{}", field.source.describe())
}
