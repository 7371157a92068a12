//! A calibration in other estimators' own files: AIConfigurator's system YAML, llm-analysis's
//! GPU config JSON, Calculon's system JSON and LLM-Viewer's hardware parameters
//! (`roofprobe export --format FORMAT`); the fifth format, roofprobe's own calibration JSON, is
//! [`crate::render::json`]'s.
//!
//! Each format is a list of [`Field`]s: the tool's key, the value in the tool's unit, and where
//! the value came from ([`Source`]): a measured ceiling of the run, the vendor spec sheet where
//! nothing measured it, the driver's report (the SM version), or the user (`--set KEY=VALUE`,
//! for what no GPU run can know: the node's topology, a perf-data folder). A field neither
//! measured nor on the sheet nor given is left out. Units follow each tool's source, cited per
//! field in docs/exports.md; several tools say GB where they compute GiB.
//!
//! This module holds what the formats share (the sources, the values, the figures a calibration
//! offers every format, `--set`, the assembly of an export); each format's fields, keys and
//! rendering are in its own file, whose top documents the tool's schema and units:
//! [`aiconfigurator`], [`llm_analysis`], [`calculon`], [`llm_viewer`].
//!
//! It renders text and lists what was spec-derived; it must not print, read files or measure
//! anything (the `export` command does the I/O).

mod aiconfigurator;
mod calculon;
mod llm_analysis;
mod llm_viewer;

pub use calculon::best_gemm_curve;

use crate::analysis::calibration::Calibration;
use crate::cases::{Family, Precision};
use crate::specs::{self, GpuSpec};
use crate::{Error, Result};
use roofprobe_calibration::{MemoryLevel, SizeEfficiency, SpecBasis};

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
    /// The device's own report (driver, compute capability).
    Device(String),
    /// Given on the command line (`--set`).
    Given,
    /// A fixed choice of the export, not a figure (explained in docs/exports.md).
    Choice(&'static str),
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
        }
    }

    pub fn is_spec(&self) -> bool {
        matches!(self, Source::Spec { .. } | Source::Rated { .. })
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

/// An export: the fields found, the keys the format knows but nothing gave (left out), and the
/// rendered text.
#[derive(Debug)]
pub struct Export {
    pub format: Format,
    pub fields: Vec<Field>,
    pub missing: Vec<&'static str>,
    /// Keys left out that the tool does without (its own default or a derived figure).
    pub defaulted: Vec<&'static str>,
    pub text: String,
}

impl Export {
    /// The fields that come from the spec sheet, for the stderr note.
    pub fn spec_fields(&self) -> Vec<&Field> {
        self.fields.iter().filter(|f| f.source.is_spec()).collect()
    }
}

/// What an export draws on: the calibration and its spec-sheet entry (if any).
pub(super) struct Inputs<'a> {
    pub(super) cal: &'a Calibration,
    pub(super) sheet: Option<&'a GpuSpec>,
}

pub(super) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Said beside a measured figure whose row the run flagged (`flags`): it counts, but rerun.
pub const SUSPECT: &str = "flagged suspect in the run: rerun before trusting it";

impl Inputs<'_> {
    pub(super) fn entry(&self) -> String {
        self.sheet.map(|s| s.device.clone()).unwrap_or_default()
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

    /// The case that set a ceiling, said to be suspect where the run flagged it.
    pub(super) fn case(&self, case: &Option<String>) -> String {
        let case = case.clone().unwrap_or_default();
        if self.cal.is_suspect(&case) {
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
            .and_then(|m| Some((m.gbps?, self.case(&m.case))))
            .filter(|(v, _)| v.is_finite() && *v > 0.0)
    }

    /// The size sweep's fit the exports take (`size_efficiency`): triad's (read 2 : write 1,
    /// the mix of most memory-bound operators), else copy's; `None` without one.
    pub(super) fn size_fit(&self) -> Option<&SizeEfficiency> {
        ["triad", "copy"].into_iter().find_map(|k| {
            self.cal
                .size_efficiency
                .iter()
                .find(|s| s.kernel == k && !s.points.is_empty())
        })
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
        Some((c.gflops?, self.case(&c.case))).filter(|(v, _)| v.is_finite())
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

    /// Memory capacity in bytes: the sheet's `memory_gb`, which vendors state in GiB for these
    /// parts (an A100 80GB reports 81920 MiB), as AIConfigurator's and llm-analysis's own files
    /// read it.
    pub(super) fn capacity_bytes(&self) -> Option<(f64, Source)> {
        self.spec("memory_gb").map(|(g, s)| (g * GIB, s))
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

    /// `90` for compute capability `9.0`, as the driver reported it.
    pub(super) fn sm_version(&self) -> Option<(u64, Source)> {
        let cc = &self.cal.device.compute_capability;
        let (major, minor) = cc.split_once('.')?;
        let v = major.parse::<u64>().ok()? * 10 + minor.parse::<u64>().ok()?;
        Some((v, Source::Device(format!("compute capability {cc}"))))
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

/// The keys `--set` may give, per format (those that no run measures and no sheet holds, and
/// The keys `--set` may give, per format (those that no run measures and no sheet holds, and
/// any other key the format writes, to override it).
pub fn known_keys(format: Format) -> &'static [&'static str] {
    match format {
        Format::Roofprobe => &[],
        Format::Aiconfigurator => aiconfigurator::KEYS,
        Format::LlmAnalysis => llm_analysis::KEYS,
        Format::Calculon => calculon::KEYS,
        Format::LlmViewer => llm_viewer::KEYS,
    }
}

/// Keys whose value is text or a whole number rather than a rate.
fn given_value(key: &str, text: &str) -> std::result::Result<Value, String> {
    match key {
        "data_dir" | "name" | "processing_mode" => {
            if text.is_empty() || text.chars().any(char::is_control) {
                Err(format!("`{key}` needs a text without control characters"))
            } else {
                Ok(Value::Text(text.to_string()))
            }
        }
        "node.num_gpus_per_node" | "gpu.sm_version" | "gpu.mem_capacity" => text
            .parse::<u64>()
            .ok()
            .filter(|v| *v > 0)
            .map(Value::Int)
            .ok_or_else(|| format!("`{key}` needs a whole number above 0; got `{text}`")),
        _ => text
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(Value::Num)
            .ok_or_else(|| format!("`{key}` needs a finite number, 0 or more; got `{text}`")),
    }
}

/// Parses `--set KEY=VALUE` against the format's keys; an unknown key or a bad value is one
/// usage error naming the keys the format knows.
pub fn parse_sets(format: Format, sets: &[String]) -> Result<Vec<(String, Value)>> {
    let known = known_keys(format);
    sets.iter()
        .map(|s| {
            let (key, text) = s
                .split_once('=')
                .ok_or_else(|| Error::Usage(format!("--set `{s}` is not KEY=VALUE")))?;
            if !known.contains(&key) {
                return Err(Error::Usage(if known.is_empty() {
                    format!(
                        "--set is for the other formats; --format {} takes none",
                        format.as_str()
                    )
                } else {
                    format!(
                        "--set: `{key}` is not a key of --format {}; it knows: {}",
                        format.as_str(),
                        known.join(", ")
                    )
                }));
            }
            let v = given_value(key, text).map_err(|e| Error::Usage(format!("--set: {e}")))?;
            Ok((key.to_string(), v))
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

/// Builds the export of `cal` in `format` (not [`Format::Roofprobe`], which is the calibration's
/// own JSON), with `sets` applied over what was found.
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
        fields.retain(|f| &f.key != key);
        fields.push(Field {
            key: key.clone(),
            value: value.clone(),
            unit,
            source: Source::Given,
        });
    }
    let order = known_keys(format);
    let rank = |k: &str| {
        order
            .iter()
            .position(|o| *o == k || k.starts_with(&format!("{o}.")))
            .unwrap_or(order.len())
    };
    fields.sort_by_key(|f| rank(&f.key));
    let (defaulted, missing): (Vec<&'static str>, Vec<&'static str>) = order
        .iter()
        .copied()
        .filter(|k| {
            !fields
                .iter()
                .any(|f| f.key == *k || f.key.starts_with(&format!("{k}.")))
        })
        .partition(|k| optional_in_tool(format, k));
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
        missing,
        defaulted,
        text,
    })
}

/// Keys a tool does without (it has a default, or a derived figure): not reported as missing.
fn optional_in_tool(format: Format, key: &str) -> bool {
    match format {
        Format::Roofprobe => false,
        Format::Aiconfigurator => aiconfigurator::OPTIONAL.contains(&key),
        Format::LlmAnalysis => llm_analysis::OPTIONAL.contains(&key),
        Format::Calculon => calculon::OPTIONAL.contains(&key),
        Format::LlmViewer => llm_viewer::OPTIONAL.contains(&key),
    }
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
                "fields marked `spec sheet` come from \"{}\", not from this run",
                inputs.entry()
            ),
            None => "no spec-sheet entry: every figure here was measured or given".to_string(),
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

/// AIConfigurator's YAML: sections `gpu` and `node`, top-level `data_dir`; every field with a
/// comment saying its unit and source (YAML comments are what that format allows).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::calibration::FromRecords;
    use crate::analysis::roofline::tests::synthetic_run;

    /// The synthetic A100 80GB SXM4 run: DRAM 1500 GB/s and f16.f32 tensor 250 TFLOP/s
    /// measured; everything else from the sheet (2039 GB/s, 80 GB, BF16 312, INT8 624,
    /// NVLink 600, PCIe Gen4 x16 (64 GB/s), 400 W).
    pub(super) fn a100(format: Format, sets: &[(String, Value)]) -> Export {
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        let sheet = sheet_of(&cal).unwrap();
        assert_eq!(sheet.unwrap().device, "A100 80GB SXM4");
        build(&cal, sheet, format, sets).unwrap()
    }

    pub(super) fn field<'a>(e: &'a Export, key: &str) -> &'a Field {
        e.fields
            .iter()
            .find(|f| f.key == key)
            .unwrap_or_else(|| panic!("no {key} in {:?}", e.fields))
    }

    pub(super) fn close(v: &Value, want: f64) {
        let got = match v {
            Value::Num(x) => *x,
            Value::Int(x) => *x as f64,
            other => panic!("{other:?} is not a number"),
        };
        assert!((got - want).abs() <= want.abs() * 1e-12, "{got} != {want}");
    }

    /// A run that fitted its pinned copies gives `node.pcie_bw` from the slower direction's
    /// asymptote, said to be measured; without the section it stays the sheet's.
    #[test]
    fn pcie_bw_is_the_measured_pinned_link_where_the_run_has_one() {
        let mut cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        let sheet = sheet_of(&cal).unwrap();
        let t = |kernel: &str, gbps: f64| roofprobe_calibration::LinkTransfer {
            kernel: kernel.into(),
            latency_s: 1e-5,
            bandwidth_gbps: gbps,
            sizes: 10,
        };
        cal.link = Some(roofprobe_calibration::Link {
            pcie: "PCIe Gen4 x16".into(),
            nominal_gbps: Some(31.5),
            transfers: vec![
                t("host_to_device_memcpy_ce", 24.5),
                t("device_to_host_memcpy_ce", 26.0),
                t("host_to_device_pageable_memcpy_ce", 9.0),
            ],
        });
        let e = build(&cal, sheet, Format::Aiconfigurator, &[]).unwrap();
        let f = field(&e, "node.pcie_bw");
        close(&f.value, 24.5e9);
        assert!(
            matches!(&f.source, Source::Measured(c) if c.contains("host_to_device_memcpy_ce")),
            "{:?}",
            f.source
        );
    }

    #[test]
    fn a_figure_from_a_flagged_row_says_so() {
        let mut rows = synthetic_run();
        let cal = Calibration::from_records(&rows, None).unwrap();
        let case = cal.memory_ceilings[0].case.clone().unwrap();
        let row = rows.iter_mut().find(|r| r.case_id() == case).unwrap();
        row.flags = "busy_host(30%)".into();
        let cal = Calibration::from_records(&rows, None).unwrap();
        let e = build(&cal, sheet_of(&cal).unwrap(), Format::LlmViewer, &[]).unwrap();
        let bandwidth = field(&e, "bandwidth").source.describe();
        assert_eq!(bandwidth, format!("measured: {case} ({SUSPECT})"));
        assert!(!field(&e, "FP16").source.describe().contains(SUSPECT));
    }
}
