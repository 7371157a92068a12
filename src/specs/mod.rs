//! The vendor spec database and its lookup: what each GPU's sheet promises, matched by the name
//! the driver reports or by a name a person types.
//!
//! One source of truth: `data/gpu_specs.csv` (a verbatim copy of the reference table), embedded
//! with `include_str!` and parsed once. Figures keep the text the table prints (`40.0` stays
//! `40.0`) beside the number, so `roofprobe specs` shows exactly what the vendor wrote.
//!
//! Matching is fuzzy but safe: a name matches an entry when it equals the entry's device or
//! driver name, or when every word of it is a word of exactly one entry (`RTX 3090`,
//! `A100 80GB SXM4`, `NVIDIA A100-SXM4-80GB`). A name with a word no entry has (`Laptop`,
//! `MIG`, `L40`) never matches a bigger entry, and a name that fits several entries (`H100`) is
//! ambiguous, not guessed.
//!
//! Where no entry matches, [`theoretical_dram_gbps`] and [`theoretical_peak_gflops`] derive
//! figures from device attributes, and every figure says which basis it came from
//! ([`SpecFigure::basis`]). The host CPU has no sheet: its figures are absent, never invented.
//!
//! This module must not measure or print anything.

pub mod theory;

use crate::cases::{Family, Precision};
use crate::device::{BackendKind, DeviceInfo};
use crate::{Error, Result};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// The embedded table, byte for byte the file in the repository.
pub const GPU_SPECS_CSV: &str = include_str!("../../data/gpu_specs.csv");

/// A figure from the table: the text as printed there and its value.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Figure {
    #[serde(skip)]
    pub value: f64,
    pub text: String,
}

impl<'de> Deserialize<'de> for Figure {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let value: f64 = text
            .trim()
            .parse()
            .map_err(|_| serde::de::Error::custom(format!("`{text}` is not a number")))?;
        if !value.is_finite() || value < 0.0 {
            return Err(serde::de::Error::custom(format!(
                "`{text}` is not a finite non-negative figure"
            )));
        }
        Ok(Figure { value, text })
    }
}

/// One row of the table: a device variant as its vendor describes it. Field names are the
/// table's columns; units are in them (`_mhz`, `_gb`, `_gbs` GB/s, `_tflops` 10^12 op/s).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    pub device: String,
    pub nvidia_smi_name: String,
    pub architecture: String,
    pub compute_capability: String,
    pub sm_count: Option<Figure>,
    pub boost_clock_mhz: Option<Figure>,
    pub memory_type: String,
    pub memory_gb: Option<Figure>,
    pub memory_bus_bits: Option<Figure>,
    pub memory_data_rate_gbps: Option<Figure>,
    pub mem_bandwidth_gbs: Option<Figure>,
    pub l2_cache_mb: Option<Figure>,
    pub pcie: String,
    pub nvlink_gbs: Option<Figure>,
    pub tdp_w: Option<Figure>,
    pub fp64_tflops: Option<Figure>,
    pub fp64_tensor_tflops: Option<Figure>,
    pub fp32_tflops: Option<Figure>,
    pub tf32_tensor_tflops: Option<Figure>,
    pub fp16_nontensor_tflops: Option<Figure>,
    pub bf16_tensor_tflops: Option<Figure>,
    pub fp16_tensor_fp32acc_tflops: Option<Figure>,
    pub fp16_tensor_fp16acc_tflops: Option<Figure>,
    pub int8_tensor_tops: Option<Figure>,
    pub fp8_tensor_tflops: Option<Figure>,
    pub sparsity_note: String,
    pub notes: String,
    pub source: String,
}

/// A field of [`GpuSpec`] by its column name, as text (`None` when blank).
pub type FieldText<'a> = (&'static str, Option<&'a str>);

impl GpuSpec {
    /// Every column with its text, in table order (blank columns as `None`).
    pub fn fields(&self) -> Vec<FieldText<'_>> {
        fn s(v: &str) -> Option<&str> {
            (!v.is_empty()).then_some(v)
        }
        fn f(v: &Option<Figure>) -> Option<&str> {
            v.as_ref().map(|f| f.text.as_str())
        }
        vec![
            ("device", s(&self.device)),
            ("nvidia_smi_name", s(&self.nvidia_smi_name)),
            ("architecture", s(&self.architecture)),
            ("compute_capability", s(&self.compute_capability)),
            ("sm_count", f(&self.sm_count)),
            ("boost_clock_mhz", f(&self.boost_clock_mhz)),
            ("memory_type", s(&self.memory_type)),
            ("memory_gb", f(&self.memory_gb)),
            ("memory_bus_bits", f(&self.memory_bus_bits)),
            ("memory_data_rate_gbps", f(&self.memory_data_rate_gbps)),
            ("mem_bandwidth_gbs", f(&self.mem_bandwidth_gbs)),
            ("l2_cache_mb", f(&self.l2_cache_mb)),
            ("pcie", s(&self.pcie)),
            ("nvlink_gbs", f(&self.nvlink_gbs)),
            ("tdp_w", f(&self.tdp_w)),
            ("fp64_tflops", f(&self.fp64_tflops)),
            ("fp64_tensor_tflops", f(&self.fp64_tensor_tflops)),
            ("fp32_tflops", f(&self.fp32_tflops)),
            ("tf32_tensor_tflops", f(&self.tf32_tensor_tflops)),
            ("fp16_nontensor_tflops", f(&self.fp16_nontensor_tflops)),
            ("bf16_tensor_tflops", f(&self.bf16_tensor_tflops)),
            (
                "fp16_tensor_fp32acc_tflops",
                f(&self.fp16_tensor_fp32acc_tflops),
            ),
            (
                "fp16_tensor_fp16acc_tflops",
                f(&self.fp16_tensor_fp16acc_tflops),
            ),
            ("int8_tensor_tops", f(&self.int8_tensor_tops)),
            ("fp8_tensor_tflops", f(&self.fp8_tensor_tflops)),
            ("sparsity_note", s(&self.sparsity_note)),
            ("notes", s(&self.notes)),
            ("source", s(&self.source)),
        ]
    }

    /// The numeric value of a column by name, if it is a figure and not blank.
    pub fn figure(&self, column: &str) -> Option<f64> {
        let f = match column {
            "sm_count" => &self.sm_count,
            "boost_clock_mhz" => &self.boost_clock_mhz,
            "memory_gb" => &self.memory_gb,
            "memory_bus_bits" => &self.memory_bus_bits,
            "memory_data_rate_gbps" => &self.memory_data_rate_gbps,
            "mem_bandwidth_gbs" => &self.mem_bandwidth_gbs,
            "l2_cache_mb" => &self.l2_cache_mb,
            "nvlink_gbs" => &self.nvlink_gbs,
            "tdp_w" => &self.tdp_w,
            "fp64_tflops" => &self.fp64_tflops,
            "fp64_tensor_tflops" => &self.fp64_tensor_tflops,
            "fp32_tflops" => &self.fp32_tflops,
            "tf32_tensor_tflops" => &self.tf32_tensor_tflops,
            "fp16_nontensor_tflops" => &self.fp16_nontensor_tflops,
            "bf16_tensor_tflops" => &self.bf16_tensor_tflops,
            "fp16_tensor_fp32acc_tflops" => &self.fp16_tensor_fp32acc_tflops,
            "fp16_tensor_fp16acc_tflops" => &self.fp16_tensor_fp16acc_tflops,
            "int8_tensor_tops" => &self.int8_tensor_tops,
            "fp8_tensor_tflops" => &self.fp8_tensor_tflops,
            _ => return None,
        };
        f.as_ref().map(|f| f.value)
    }
}

/// Parses a spec table (the embedded one, or a test's). Errors name the line.
pub fn parse_table(text: &str) -> std::result::Result<Vec<GpuSpec>, String> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut out = Vec::new();
    for (i, row) in reader.deserialize::<GpuSpec>().enumerate() {
        let line = i + 2;
        let spec = row.map_err(|e| format!("data/gpu_specs.csv:{line}: {e}"))?;
        if spec.source.trim().is_empty() {
            return Err(format!(
                "data/gpu_specs.csv:{line}: `{}` has no source",
                spec.device
            ));
        }
        out.push(spec);
    }
    Ok(out)
}

/// Serialises entries back into the table's CSV form (the inverse of [`parse_table`]).
pub fn to_table(specs: &[GpuSpec]) -> String {
    // The table ends its lines with CRLF, as RFC 4180 has it.
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    for s in specs {
        w.serialize(s).expect("serialising to memory cannot fail");
    }
    String::from_utf8(w.into_inner().expect("flushing to memory cannot fail"))
        .expect("CSV of UTF-8 fields is UTF-8")
}

/// The embedded database, parsed once.
pub fn database() -> Result<&'static [GpuSpec]> {
    static DB: OnceLock<std::result::Result<Vec<GpuSpec>, String>> = OnceLock::new();
    match DB.get_or_init(|| parse_table(GPU_SPECS_CSV)) {
        Ok(v) => Ok(v),
        Err(e) => Err(Error::Internal(format!(
            "the embedded spec table is broken: {e}"
        ))),
    }
}

/// Words that say nothing about which variant a device is.
const VENDOR_WORDS: [&str; 3] = ["nvidia", "geforce", "tesla"];

/// The words of a name: lower case, split at anything not a letter or digit, vendor words
/// dropped, `80 GB` joined into `80gb`.
fn words(name: &str) -> BTreeSet<String> {
    let raw: Vec<String> = name
        .to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < raw.len() {
        let w = &raw[i];
        if w.chars().all(|c| c.is_ascii_digit()) && raw.get(i + 1).is_some_and(|n| n == "gb") {
            out.insert(format!("{w}gb"));
            i += 2;
            continue;
        }
        if !VENDOR_WORDS.contains(&w.as_str()) {
            out.insert(w.clone());
        }
        i += 1;
    }
    out
}

/// Whether a typed word stands for an entry's word: equal, or a form-factor word without its
/// generation number (`sxm` for `sxm4`). Numbers must match whole, so `L40` never means `L40S`
/// and `A10` never means `A100`.
fn word_matches(typed: &str, entry: &str) -> bool {
    typed == entry
        || (typed.chars().all(|c| c.is_ascii_alphabetic())
            && entry.len() > typed.len()
            && entry.starts_with(typed)
            && entry[typed.len()..].chars().all(|c| c.is_ascii_digit()))
}

/// A name as the exact match compares it: its words one space apart, in lower case (`NVIDIA
/// A100-SXM4-80GB` and `nvidia  a100-sxm4-80gb` are one name).
pub fn normalised(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The outcome of looking a name up.
#[derive(Debug)]
pub enum Lookup<'a> {
    Found(&'a GpuSpec),
    /// Several entries fit the name equally well.
    Ambiguous(Vec<&'a GpuSpec>),
    /// Nothing fits; the closest names by spelling, best first.
    NotFound(Vec<&'a GpuSpec>),
}

/// Looks `name` up among `specs`: exact device or driver name first, then the same words, then
/// every typed word standing for a word of exactly one entry.
pub fn lookup_in<'a>(specs: &'a [GpuSpec], name: &str) -> Lookup<'a> {
    let n = normalised(name);
    if let Some(s) = specs
        .iter()
        .find(|s| normalised(&s.device) == n || normalised(&s.nvidia_smi_name) == n)
    {
        return Lookup::Found(s);
    }
    let typed = words(name);
    if typed.is_empty() {
        return Lookup::NotFound(closest(specs, name));
    }
    let same: Vec<&GpuSpec> = specs
        .iter()
        .filter(|s| words(&s.device) == typed || words(&s.nvidia_smi_name) == typed)
        .collect();
    match same.len() {
        1 => return Lookup::Found(same[0]),
        0 => {}
        _ => return Lookup::Ambiguous(same),
    }
    let covers = |entry: &BTreeSet<String>| {
        typed
            .iter()
            .all(|t| entry.iter().any(|e| word_matches(t, e)))
    };
    let fits: Vec<&GpuSpec> = specs
        .iter()
        .filter(|s| covers(&words(&s.device)) || covers(&words(&s.nvidia_smi_name)))
        .collect();
    match fits.len() {
        0 => Lookup::NotFound(closest(specs, name)),
        1 => Lookup::Found(fits[0]),
        _ => Lookup::Ambiguous(fits),
    }
}

/// The three entries whose names are spelled most like `name`.
fn closest<'a>(specs: &'a [GpuSpec], name: &str) -> Vec<&'a GpuSpec> {
    let n = normalised(name);
    let score = |s: &GpuSpec| {
        strsim::jaro_winkler(&n, &normalised(&s.device))
            .max(strsim::jaro_winkler(&n, &normalised(&s.nvidia_smi_name)))
    };
    let mut scored: Vec<(f64, &GpuSpec)> = specs.iter().map(|s| (score(s), s)).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(3).map(|(_, s)| s).collect()
}

/// Finds the entry a person means by `name`; an unknown or ambiguous name is an error that lists
/// the candidates.
pub fn find(name: &str) -> Result<&'static GpuSpec> {
    let db = database()?;
    let list = |v: &[&GpuSpec]| {
        v.iter()
            .map(|s| format!("\"{}\"", s.device))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match lookup_in(db, name) {
        Lookup::Found(s) => Ok(s),
        Lookup::Ambiguous(v) => Err(Error::Usage(format!(
            "`{name}` fits {} spec entries: {}; name one of them",
            v.len(),
            list(&v)
        ))),
        Lookup::NotFound(v) => Err(Error::Usage(format!(
            "no spec entry matches `{name}`; closest: {} (`roofprobe specs` lists all {})",
            list(&v),
            db.len()
        ))),
    }
}

pub use roofprobe_calibration::SpecBasis;

/// What a device is, as far as spec comparison needs: from [`DeviceInfo`] during a run, or from
/// the rows of a CSV afterwards (which carry no bus width, so a theoretical DRAM figure needs
/// the run itself).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceAttributes {
    pub is_gpu: bool,
    /// The name the driver reports.
    pub name: String,
    pub compute_capability: Option<(u32, u32)>,
    pub sms: Option<u32>,
    /// Highest SM clock known (the device's maximum, or the highest seen in a run).
    pub clock_mhz: Option<f64>,
    /// Memory clock as the driver reports it (half the DDR data rate per pin).
    pub memory_clock_mhz: Option<f64>,
    pub memory_bus_bits: Option<u32>,
}

pub fn parse_cc(cc: &str) -> Option<(u32, u32)> {
    let (a, b) = cc.trim().split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

impl DeviceAttributes {
    pub fn from_info(info: &DeviceInfo) -> Self {
        DeviceAttributes {
            is_gpu: info.backend == BackendKind::Cuda,
            name: info.name.clone(),
            compute_capability: parse_cc(&info.compute_capability),
            sms: (info.backend == BackendKind::Cuda).then_some(info.units),
            clock_mhz: info.clock_mhz,
            memory_clock_mhz: info.memory_clock_mhz,
            memory_bus_bits: info.memory_bus_bits,
        }
    }
}

/// Chooses the basis for a device: its sheet if the driver-reported name matches one entry whose
/// compute capability agrees, else theoretical figures for a GPU, else none.
pub fn basis_for(device: &DeviceAttributes) -> (SpecBasis, Option<&'static GpuSpec>) {
    if !device.is_gpu {
        return (
            SpecBasis::None {
                reason: "host CPU: roofprobe has no spec sheet for CPUs".into(),
            },
            None,
        );
    }
    let db = match database() {
        Ok(db) => db,
        Err(e) => {
            return (
                SpecBasis::Theoretical {
                    reason: e.to_string(),
                },
                None,
            )
        }
    };
    let reason = match lookup_in(db, &device.name) {
        Lookup::Found(spec) => {
            let sheet_cc = parse_cc(&spec.compute_capability);
            if device.compute_capability.is_some() && sheet_cc != device.compute_capability {
                format!(
                    "`{}` resembles \"{}\" but reports compute capability {}, the sheet {}",
                    device.name,
                    spec.device,
                    device
                        .compute_capability
                        .map_or_else(String::new, |(a, b)| format!("{a}.{b}")),
                    spec.compute_capability
                )
            } else {
                let sheet_sms = spec.figure("sm_count").map(|v| v as u32);
                let caveat = match (device.sms, sheet_sms) {
                    (Some(d), Some(s)) if d != s => Some(format!(
                        "the device reports {d} SMs, the sheet {s}: a partition or another \
                         variant; efficiencies are against the full sheet figures"
                    )),
                    _ => None,
                };
                return (
                    SpecBasis::Sheet {
                        entry: spec.device.clone(),
                        source: spec.source.clone(),
                        caveat,
                    },
                    Some(spec),
                );
            }
        }
        Lookup::Ambiguous(v) => format!(
            "`{}` fits several spec entries ({})",
            device.name,
            v.iter()
                .map(|s| s.device.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Lookup::NotFound(_) => format!("`{}` is not in the spec table", device.name),
    };
    (SpecBasis::Theoretical { reason }, None)
}

/// The spec column a measurement is held against, or why there is none.
pub fn column_for(
    family: Family,
    precision: Precision,
) -> std::result::Result<&'static str, String> {
    use Precision as P;
    let column = match (family, precision) {
        (Family::Stream, _) => "mem_bandwidth_gbs",
        (Family::Peak, P::F64) => "fp64_tflops",
        (Family::Peak, P::F32) => "fp32_tflops",
        (Family::Peak, P::F16x2) => "fp16_nontensor_tflops",
        (Family::Tensor, P::F16F16) => "fp16_tensor_fp16acc_tflops",
        (Family::Tensor, P::F16F32) => "fp16_tensor_fp32acc_tflops",
        (Family::Tensor, P::Bf16F32) => "bf16_tensor_tflops",
        (Family::Tensor, P::Tf32F32) => "tf32_tensor_tflops",
        (Family::Tensor, P::S8S32) => "int8_tensor_tops",
        (Family::Tensor, P::F64F64) => "fp64_tensor_tflops",
        (Family::Tensor, P::E4m3F32 | P::E5m2F32) => "fp8_tensor_tflops",
        (Family::Peak, P::Bf16x2) => {
            return Err("the spec table has no non-tensor bf16 column".into())
        }
        (Family::Peak, P::I32) => return Err("the spec table has no integer ALU column".into()),
        (Family::Intensity, _) => {
            return Err("intensity-sweep points are held against the roof, not a column".into())
        }
        (f, p) => return Err(format!("no spec column for {f} {p}")),
    };
    Ok(column)
}

/// A spec figure for a ceiling, in the measurement's unit (GB/s or GFLOP/s), and where it came
/// from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecFigure {
    pub value: f64,
    /// `sheet: fp32_tflops` or `theoretical: …`, enough to recompute it.
    pub basis: String,
}

/// Theoretical peak arithmetic rate from device attributes, GFLOP/s (GOP/s for integers):
/// [`theory::peak_gflops_for`], which knows the GeForce parts' half-rate FP32 accumulation from
/// the device name.
pub fn theoretical_peak_gflops(device: &DeviceAttributes, precision: Precision) -> Option<f64> {
    theory::peak_gflops_for(
        &device.name,
        device.compute_capability?,
        device.sms?,
        device.clock_mhz?,
        precision,
    )
    .filter(|v| v.is_finite() && *v > 0.0)
}

/// Theoretical DRAM bandwidth in GB/s: bus width × memory clock × 2 (DDR) / 8, with the memory
/// clock as the driver reports it (an A100 80GB SXM4: 5120 bits × 1593 MHz × 2 / 8 = 2039 GB/s).
pub fn theoretical_dram_gbps(memory_bus_bits: u32, memory_clock_mhz: f64) -> Option<f64> {
    let gbps = memory_bus_bits as f64 * memory_clock_mhz * 2.0 / 8.0 / 1000.0;
    (gbps.is_finite() && gbps > 0.0).then_some(gbps)
}

/// The spec figure for a `family`/`precision` ceiling of `device` under `basis`, or why none.
pub fn spec_figure(
    basis: &SpecBasis,
    sheet: Option<&GpuSpec>,
    device: &DeviceAttributes,
    family: Family,
    precision: Precision,
) -> std::result::Result<SpecFigure, String> {
    match basis {
        SpecBasis::None { reason } => Err(format!("no spec: {reason}")),
        SpecBasis::Sheet { entry, .. } => {
            let column = column_for(family, precision)?;
            let sheet = sheet.ok_or_else(|| format!("no spec: sheet \"{entry}\" not loaded"))?;
            let value = sheet.figure(column).ok_or_else(|| {
                format!("no spec: the sheet for \"{entry}\" leaves {column} blank")
            })?;
            // The table gives compute in 10^12/s; measurements are in 10^9/s.
            let value = if column == "mem_bandwidth_gbs" {
                value
            } else {
                value * 1000.0
            };
            Ok(SpecFigure {
                value,
                basis: format!("sheet: {column}"),
            })
        }
        SpecBasis::Theoretical { .. } => {
            if family == Family::Stream {
                let (bits, clock) = device
                    .memory_bus_bits
                    .zip(device.memory_clock_mhz)
                    .ok_or("no spec: the bus width is not recorded in the CSV, so no theoretical DRAM figure")?;
                let value = theoretical_dram_gbps(bits, clock)
                    .ok_or("no spec: bus width or memory clock is zero")?;
                Ok(SpecFigure {
                    value,
                    basis: format!("theoretical: {bits}-bit bus × {clock:.0} MHz × 2 / 8"),
                })
            } else {
                column_for(family, precision)?;
                let value = theoretical_peak_gflops(device, precision)
                    .ok_or("no spec: no theoretical peak for this precision yet")?;
                Ok(SpecFigure {
                    value,
                    basis: format!(
                        "theoretical: {} SMs at {:.0} MHz, compute capability {}",
                        device.sms.unwrap_or(0),
                        device.clock_mhz.unwrap_or(0.0),
                        device
                            .compute_capability
                            .map_or_else(String::new, |(a, b)| format!("{a}.{b}"))
                    ),
                })
            }
        }
    }
}
