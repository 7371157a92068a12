//! A calibration in other estimators' own files: AIConfigurator's system YAML, llm-analysis's
//! GPU config JSON, Calculon's system JSON and LLM-Viewer's hardware parameters
//! (`roofprobe export --format FORMAT`).
//!
//! Each format is a list of [`Field`]s: the tool's key, the value in the tool's unit, and where
//! the value came from ([`Source`]): a measured ceiling of the run, the vendor spec sheet where
//! nothing measured it, the driver's report (the SM version), or the user (`--set KEY=VALUE`,
//! for what no GPU run can know: the node's topology, a perf-data folder). A field neither
//! measured nor on the sheet nor given is left out. Units follow each tool's source, cited per
//! field in docs/exports.md; several tools say GB where they compute GiB.
//!
//! This module renders text and lists what was spec-derived; it must not print, read files or
//! measure anything (the `export` command does the I/O).

use crate::analysis::calibration::Calibration;
use crate::cases::{Family, Precision};
use crate::specs::{self, GpuSpec};
use crate::{Error, Result};
use roofprobe_calibration::{
    GemmEfficiency, GemmEfficiencyPoint, MemoryLevel, SizeEfficiency, SpecBasis,
};
use std::fmt::Write as _;

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
    fn rated(self, measured_in: &str) -> Source {
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
    fn json(&self) -> String {
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
struct Inputs<'a> {
    cal: &'a Calibration,
    sheet: Option<&'a GpuSpec>,
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Said beside a measured figure whose row the run flagged (`flags`): it counts, but rerun.
pub const SUSPECT: &str = "flagged suspect in the run: rerun before trusting it";

impl Inputs<'_> {
    fn entry(&self) -> String {
        self.sheet.map(|s| s.device.clone()).unwrap_or_default()
    }

    fn spec(&self, column: &str) -> Option<(f64, Source)> {
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
    fn case(&self, case: &Option<String>) -> String {
        let case = case.clone().unwrap_or_default();
        if self.cal.is_suspect(&case) {
            format!("{case} ({SUSPECT})")
        } else {
            case
        }
    }

    /// The DRAM ceiling in GB/s (10^9 B/s) and its case.
    fn dram(&self) -> Option<(f64, String)> {
        self.cal
            .memory_ceilings
            .iter()
            .find(|m| m.level == MemoryLevel::Dram)
            .and_then(|m| Some((m.gbps?, self.case(&m.case))))
            .filter(|(v, _)| v.is_finite() && *v > 0.0)
    }

    /// The size sweep's fit the exports take (`size_efficiency`): triad's (read 2 : write 1,
    /// the mix of most memory-bound operators), else copy's; `None` without one.
    fn size_fit(&self) -> Option<&SizeEfficiency> {
        ["triad", "copy"].into_iter().find_map(|k| {
            self.cal
                .size_efficiency
                .iter()
                .find(|s| s.kernel == k && !s.points.is_empty())
        })
    }

    /// Where a figure from the fit came from, for the file: the kernel, the sizes, the fit.
    fn size_fit_source(fit: &SizeEfficiency, what: &str) -> Source {
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
    fn compute(&self, family: Family, precision: Precision) -> Option<(f64, String)> {
        let c = self.cal.compute(family, precision)?;
        Some((c.gflops?, self.case(&c.case))).filter(|(v, _)| v.is_finite())
    }

    /// A rate in FLOP/s: measured (`family`/`precision`) first, else the sheet's column (TFLOP/s).
    fn flops(&self, family: Family, precision: Precision, column: &str) -> Option<(f64, Source)> {
        match self.compute(family, precision) {
            Some((g, case)) => Some((g * 1e9, Source::Measured(case))),
            None => self.spec(column).map(|(t, s)| (t * 1e12, s)),
        }
    }

    /// Memory capacity in bytes: the sheet's `memory_gb`, which vendors state in GiB for these
    /// parts (an A100 80GB reports 81920 MiB), as AIConfigurator's and llm-analysis's own files
    /// read it.
    fn capacity_bytes(&self) -> Option<(f64, Source)> {
        self.spec("memory_gb").map(|(g, s)| (g * GIB, s))
    }

    /// NVLink per direction in GB/s: the sheet's figure is both directions together.
    fn nvlink_per_direction_gbs(&self) -> Option<(f64, Source)> {
        self.spec("nvlink_gbs").map(|(g, s)| (g / 2.0, s))
    }

    /// PCIe per direction in GB/s: measured where the run fitted its pinned copies (the lower of
    /// the host-to-device and device-to-host asymptotes: a transfer's rate is its slower
    /// direction's in a round trip, and an estimator given one figure should not be promised
    /// the faster), else the sheet's `(N GB/s)` (both directions together) halved.
    fn pcie_per_direction_gbs(&self) -> Option<(f64, Source)> {
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
    fn sm_version(&self) -> Option<(u64, Source)> {
        let cc = &self.cal.device.compute_capability;
        let (major, minor) = cc.split_once('.')?;
        let v = major.parse::<u64>().ok()? * 10 + minor.parse::<u64>().ok()?;
        Some((v, Source::Device(format!("compute capability {cc}"))))
    }

    /// The name the tool files the device under: the device's, in the tool's lowercase style.
    fn name(&self) -> String {
        let slug = crate::units::slug(&self.cal.device.name);
        if slug.is_empty() {
            "roofprobe-device".into()
        } else {
            slug
        }
    }
}

/// The keys `--set` may give, per format (those that no run measures and no sheet holds, and
/// any other key the format writes, to override it).
pub fn known_keys(format: Format) -> &'static [&'static str] {
    match format {
        Format::Roofprobe => &[],
        Format::Aiconfigurator => &[
            "data_dir",
            "gpu.mem_bw",
            "gpu.mem_bw_empirical_scaling_factor",
            "gpu.mem_empirical_constant_latency",
            "gpu.mem_capacity",
            "gpu.bfloat16_tc_flops",
            "gpu.int8_tc_flops",
            "gpu.fp8_tc_flops",
            "gpu.power",
            "gpu.sm_version",
            "node.num_gpus_per_node",
            "node.inter_node_bw",
            "node.intra_node_bw",
            "node.pcie_bw",
            "node.p2p_latency",
        ],
        Format::LlmAnalysis => &[
            "name",
            "mem_per_GPU_in_GB",
            "hbm_bandwidth_in_GB_per_sec",
            "intra_node_bandwidth_in_GB_per_sec",
            "intra_node_min_message_latency",
            "peak_fp16_TFLOPS",
            "peak_i8_TFLOPS",
            "inter_node_bandwidth_in_GB_per_sec",
        ],
        Format::Calculon => &[
            "matrix.float16.tflops",
            "matrix.bfloat16.tflops",
            "matrix.float8.tflops",
            "matrix.float32.tflops",
            "vector.float32.tflops",
            "vector.float16.tflops",
            "mem1.GiB",
            "mem1.GBps",
            "processing_mode",
        ],
        Format::LlmViewer => &["bandwidth", "FP16", "INT8", "onchip_buffer"],
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
        Format::Aiconfigurator => aiconfigurator_fields(&inputs),
        Format::LlmAnalysis => llm_analysis_fields(&inputs),
        Format::Calculon => calculon_fields(&inputs),
        Format::LlmViewer => llm_viewer_fields(&inputs),
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
        Format::Aiconfigurator => render_yaml(&header, &fields),
        Format::LlmAnalysis => render_flat_json(&fields),
        Format::Calculon => render_calculon(&header, &fields),
        Format::LlmViewer => render_llm_viewer(&header, &inputs.name(), &fields),
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
    matches!(
        (format, key),
        (Format::Aiconfigurator, "gpu.mem_empirical_constant_latency")
            | (
                Format::Aiconfigurator,
                "gpu.mem_bw_empirical_scaling_factor"
            )
            | (Format::LlmAnalysis, "inter_node_bandwidth_in_GB_per_sec")
            | (Format::LlmAnalysis, "peak_i8_TFLOPS")
            | (Format::Calculon, "matrix.float8.tflops")
            | (Format::Calculon, "matrix.float32.tflops")
            | (Format::Calculon, "vector.float16.tflops")
    )
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

fn push(fields: &mut Vec<Field>, key: &str, unit: &'static str, found: Option<(Value, Source)>) {
    if let Some((value, source)) = found {
        fields.push(Field {
            key: key.to_string(),
            value,
            unit,
            source,
        });
    }
}

fn rate(found: Option<(f64, Source)>, scale: f64) -> Option<(Value, Source)> {
    found.map(|(v, s)| (Value::Num(v * scale), s))
}

fn aiconfigurator_fields(x: &Inputs) -> Vec<Field> {
    let mut f = Vec::new();
    // mem_bw is the tool's rated figure and the scaling factor its observed fraction of it
    // (AIConfigurator's own files say so): with a sheet entry, the sheet's rate and measured /
    // rated; without one, the measured rate itself and a factor of 1.
    let dram = x.dram();
    let spec_bw = x.spec("mem_bandwidth_gbs");
    // mem_bw is the rated figure: the sheet's, else the measured DRAM ceiling
    let rated: Option<(f64, Source)> = match (&dram, spec_bw) {
        (Some(_), Some((spec, src))) => {
            Some((spec, src.rated("gpu.mem_bw_empirical_scaling_factor")))
        }
        (None, Some((spec, src))) => Some((spec, src)),
        (Some((gbps, case)), None) => Some((*gbps, Source::Measured(case.clone()))),
        (None, None) => None,
    };
    if let Some((rated_gbps, src)) = &rated {
        f.push(Field {
            key: "gpu.mem_bw".into(),
            value: Value::Num(rated_gbps * 1e9),
            unit: "B/s",
            source: src.clone(),
        });
    }
    // AIConfigurator's memory op: bytes / (mem_bw · scaling_factor) + constant_latency
    // (aiconfigurator-core `mem_op_latency_ms`): the size sweep's fit is exactly that line, so
    // mem_bw · factor is its asymptotic bandwidth and the constant its `a`.
    match (x.size_fit(), &rated, &dram) {
        (Some(fit), Some((rated_gbps, _)), _) => {
            f.push(Field {
                key: "gpu.mem_bw_empirical_scaling_factor".into(),
                value: Value::Num(fit.asymptotic_gbps / rated_gbps),
                unit: "fraction",
                source: Inputs::size_fit_source(
                    fit,
                    &format!("BW / mem_bw {} GB/s", sig(*rated_gbps)),
                ),
            });
            f.push(Field {
                key: "gpu.mem_empirical_constant_latency".into(),
                value: Value::Num(fit.constant_secs),
                unit: "s",
                source: Inputs::size_fit_source(fit, "a"),
            });
        }
        (None, Some((spec, _)), Some((gbps, case))) if x.sheet.is_some() => {
            f.push(Field {
                key: "gpu.mem_bw_empirical_scaling_factor".into(),
                value: Value::Num(gbps / spec),
                unit: "fraction",
                source: Source::Measured(format!("{case} {} GB/s / sheet {spec} GB/s", sig(*gbps))),
            });
        }
        (None, Some(_), Some(_)) => {
            f.push(Field {
                key: "gpu.mem_bw_empirical_scaling_factor".into(),
                value: Value::Num(1.0),
                unit: "fraction",
                source: Source::Choice("mem_bw is already the measured rate"),
            });
        }
        _ => {}
    }
    push(
        &mut f,
        "gpu.mem_capacity",
        "bytes",
        x.capacity_bytes()
            .map(|(b, s)| (Value::Int(b.round() as u64), s)),
    );
    push(
        &mut f,
        "gpu.bfloat16_tc_flops",
        "FLOP/s",
        rate(
            x.flops(Family::Tensor, Precision::Bf16F32, "bf16_tensor_tflops"),
            1.0,
        ),
    );
    push(
        &mut f,
        "gpu.int8_tc_flops",
        "OP/s",
        rate(
            x.flops(Family::Tensor, Precision::S8S32, "int8_tensor_tops"),
            1.0,
        ),
    );
    push(
        &mut f,
        "gpu.fp8_tc_flops",
        "FLOP/s",
        rate(
            x.flops(Family::Tensor, Precision::E4m3F32, "fp8_tensor_tflops"),
            1.0,
        ),
    );
    push(&mut f, "gpu.power", "W", rate(x.spec("tdp_w"), 1.0));
    push(
        &mut f,
        "gpu.sm_version",
        "",
        x.sm_version().map(|(v, s)| (Value::Int(v), s)),
    );
    push(
        &mut f,
        "node.intra_node_bw",
        "B/s per direction",
        rate(x.nvlink_per_direction_gbs(), 1e9),
    );
    push(
        &mut f,
        "node.pcie_bw",
        "B/s per direction",
        rate(x.pcie_per_direction_gbs(), 1e9),
    );
    f
}

fn llm_analysis_fields(x: &Inputs) -> Vec<Field> {
    let mut f = vec![Field {
        key: "name".into(),
        value: Value::Text(x.name()),
        unit: "",
        source: Source::Device(format!("device name `{}`", x.cal.device.name)),
    }];
    // llm-analysis multiplies mem_per_GPU_in_GB by 1024**3: it is GiB.
    push(
        &mut f,
        "mem_per_GPU_in_GB",
        "GiB",
        rate(x.capacity_bytes(), 1.0 / GIB),
    );
    push(
        &mut f,
        "hbm_bandwidth_in_GB_per_sec",
        "GB/s (10^9 B/s)",
        x.dram()
            .map(|(g, case)| (Value::Num(g), Source::Measured(case)))
            .or_else(|| rate(x.spec("mem_bandwidth_gbs"), 1.0)),
    );
    push(
        &mut f,
        "intra_node_bandwidth_in_GB_per_sec",
        "GB/s per direction",
        rate(x.nvlink_per_direction_gbs(), 1.0),
    );
    push(
        &mut f,
        "peak_fp16_TFLOPS",
        "TFLOP/s",
        rate(
            x.flops(
                Family::Tensor,
                Precision::F16F32,
                "fp16_tensor_fp32acc_tflops",
            ),
            1e-12,
        ),
    );
    push(
        &mut f,
        "peak_i8_TFLOPS",
        "TOP/s",
        rate(
            x.flops(Family::Tensor, Precision::S8S32, "int8_tensor_tops"),
            1e-12,
        ),
    );
    f
}

/// One efficiency point: Calculon scales its rated figure by the efficiency of the op's size.
/// roofprobe measures each ceiling at one size, so the curve has one point, from size 0 (which
/// Calculon's lookup needs) up; a measured figure above the rated one keeps the measured figure
/// as the rate and efficiency 1 (Calculon refuses efficiencies above 1).
#[allow(clippy::too_many_arguments)]
fn calculon_rate(
    f: &mut Vec<Field>,
    key: &str,
    measured: Option<(f64, String)>,
    rated: Option<(f64, Source)>,
    scale_to_unit: f64,
    curve_key: &str,
    unit: &'static str,
) {
    let (rate_value, rate_source, eff, eff_source) = match (measured, rated) {
        (Some((m, case)), Some((r, src))) if m <= r => (
            r,
            src.rated(curve_key),
            m / r,
            Source::Measured(format!("{case}: {} of the rated figure", sig(m / r))),
        ),
        (Some((m, case)), _) => (
            m,
            Source::Measured(case.clone()),
            1.0,
            Source::Choice("the rate is the measured figure"),
        ),
        (None, Some((r, src))) => (
            r,
            src,
            1.0,
            Source::Choice("nothing measured: the rated figure at every size"),
        ),
        (None, None) => return,
    };
    f.push(Field {
        key: key.to_string(),
        value: Value::Num(rate_value * scale_to_unit),
        unit,
        source: rate_source,
    });
    f.push(Field {
        key: curve_key.to_string(),
        value: Value::Curve(vec![(0.0, eff)]),
        unit: "[[size, efficiency]]",
        source: eff_source,
    });
}

/// Calculon's `MB_efficiency` from the size sweep (`size_efficiency`): each measured size, in MB
/// (10^6 bytes) moved per launch, largest first, at its bandwidth over the written `mem1.GBps`
/// (Calculon's `Memory.efficiency(op_bytes)` takes the first entry whose size the op reaches
/// and scales `GBps` by it), capped at 1 (Calculon refuses more; a size a cache served ran
/// above the DRAM rate), and the smallest size's efficiency carried down to size 0 (Calculon's
/// lookup needs it; below 1 MiB arrays nothing was measured).
fn size_curve(f: &mut [Field], fit: &SizeEfficiency) {
    let Some(rate_gbps) = f
        .iter()
        .find(|g| g.key == "mem1.GBps")
        .and_then(|g| match g.value {
            Value::Num(v) if v > 0.0 => Some(v),
            _ => None,
        })
    else {
        return;
    };
    let mut points: Vec<(f64, f64)> = fit
        .points
        .iter()
        .rev()
        .map(|p| (p.bytes as f64 / 1e6, (p.gbps / rate_gbps).min(1.0)))
        .filter(|(_, e)| e.is_finite() && *e > 0.0)
        .collect();
    let Some(&(_, smallest)) = points.last() else {
        return;
    };
    points.push((0.0, smallest));
    let source = Inputs::size_fit_source(
        fit,
        &format!(
            "each size's GB/s / mem1.GBps {} (capped at 1), the smallest carried to 0",
            sig(rate_gbps)
        ),
    );
    if let Some(curve) = f.iter_mut().find(|g| g.key == "mem1.MB_efficiency") {
        curve.value = Value::Curve(points);
        curve.source = source;
    }
}

/// The GEMM efficiency curve of `precision` that reaches the most (of the implementations the
/// run measured: cuBLAS, PTX, the host's), with at least one point.
pub fn best_gemm_curve(cal: &Calibration, precision: Precision) -> Option<&GemmEfficiency> {
    let top = |g: &GemmEfficiency| g.points.iter().map(|p| p.gflops).fold(0.0, f64::max);
    cal.gemm_efficiency
        .iter()
        .filter(|g| g.precision == precision && !g.points.is_empty())
        .max_by(|a, b| top(a).total_cmp(&top(b)))
}

/// Calculon's `gflops_efficiency` from a measured GEMM curve: each measured size (GFLOP of the
/// product, largest first) at its achieved rate over the written rate, and the smallest size's
/// efficiency carried down to size 0 (which Calculon's lookup needs; not measured). Calculon
/// takes one efficiency a size; where several shapes have the same size (256³ and 1 × 4096 ×
/// 4096 are both 0.0336 GFLOP), the lowest measured there, as an estimator should not be
/// promised more than the run measured at that size ([`one_point_per_size`]). The rate is
/// raised to the fastest GEMM where that beat it, since Calculon refuses efficiencies above 1.
/// Where no rate was written (a host has no tensor figure), the curve's own ceiling is the rate.
fn gemm_curve(f: &mut Vec<Field>, x: &Inputs, dtype: &str, curve: &GemmEfficiency) {
    let rate_key = format!("matrix.{dtype}.tflops");
    let curve_key = format!("matrix.{dtype}.gflops_efficiency");
    let family = roofprobe_calibration::gemm_ceiling_family(curve.precision);
    let written = f
        .iter()
        .find(|g| g.key == rate_key)
        .and_then(|g| match g.value {
            Value::Num(t) => Some((t * 1e3, g.source.clone())),
            _ => None,
        });
    let (mut rate_gflops, mut source) = match written {
        Some(w) => w,
        None => match x.compute(family, curve.precision) {
            Some((g, case)) => (g, Source::Measured(case)),
            None => match curve.spec_gflops {
                Some(g) => (
                    g,
                    Source::Spec {
                        entry: x.entry(),
                        column: curve.ceiling.clone(),
                    },
                ),
                None => return,
            },
        },
    };
    let fastest = curve
        .points
        .iter()
        .max_by(|a, b| a.gflops.total_cmp(&b.gflops))
        .expect("a curve with points");
    if fastest.gflops > rate_gflops {
        rate_gflops = fastest.gflops;
        source = Source::Measured(format!(
            "gemm/{}/{}/{} (the fastest GEMM, above the ceiling)",
            curve.kernel, curve.precision, fastest.shape
        ));
    }
    let per_size = one_point_per_size(&curve.points);
    // Calculon needs sizes strictly falling
    let mut points: Vec<(f64, f64)> = per_size
        .iter()
        .rev()
        .map(|p| (p.gflop, (p.gflops / rate_gflops).min(1.0)))
        .collect();
    if let Some(&(size, eff)) = points.last() {
        if size > 0.0 {
            points.push((0.0, eff));
        }
    }
    let (smallest, largest) = (per_size[0], per_size[per_size.len() - 1]);
    f.retain(|g| g.key != rate_key && g.key != curve_key);
    f.push(Field {
        key: rate_key,
        value: Value::Num(rate_gflops / 1e3),
        unit: "TFLOP/s",
        source,
    });
    f.push(Field {
        key: curve_key,
        value: Value::Curve(points),
        unit: "[[GFLOP, efficiency]]",
        source: Source::Measured(format!(
            "gemm/{}/{}: {} sizes from {} GEMMs (where shapes share a size, the lowest \
             efficiency), {} to {}; below {} its efficiency carried down (not measured)",
            curve.kernel,
            curve.precision,
            per_size.len(),
            curve.points.len(),
            smallest.shape,
            largest.shape,
            smallest.shape
        )),
    });
}

/// A GEMM curve's points, one per size (GFLOP of the product), ascending: at a size several
/// shapes share, the one that ran slowest (the lowest efficiency; the first in the curve's
/// order among equal rates).
fn one_point_per_size(points: &[GemmEfficiencyPoint]) -> Vec<&GemmEfficiencyPoint> {
    let mut sorted: Vec<&GemmEfficiencyPoint> = points.iter().collect();
    sorted.sort_by(|a, b| a.gflop.total_cmp(&b.gflop));
    let mut out: Vec<&GemmEfficiencyPoint> = Vec::new();
    for p in sorted {
        match out.last_mut() {
            Some(kept) if kept.gflop == p.gflop => {
                if p.gflops < kept.gflops {
                    *kept = p;
                }
            }
            _ => out.push(p),
        }
    }
    out
}

fn calculon_fields(x: &Inputs) -> Vec<Field> {
    let mut f = Vec::new();
    let flops = |family, precision| x.compute(family, precision).map(|(g, c)| (g * 1e9, c));
    let spec_t = |column: &str| x.spec(column).map(|(t, s)| (t * 1e12, s));
    for (dtype, precision, column, gemm) in [
        (
            "float16",
            Precision::F16F32,
            "fp16_tensor_fp32acc_tflops",
            &[Precision::F16F32][..],
        ),
        (
            "bfloat16",
            Precision::Bf16F32,
            "bf16_tensor_tflops",
            &[Precision::Bf16F32][..],
        ),
        (
            "float8",
            Precision::E4m3F32,
            "fp8_tensor_tflops",
            &[Precision::E4m3F32][..],
        ),
        (
            "float32",
            Precision::Tf32F32,
            "tf32_tensor_tflops",
            &[Precision::Tf32F32, Precision::F32][..],
        ),
    ] {
        calculon_rate(
            &mut f,
            &format!("matrix.{dtype}.tflops"),
            flops(Family::Tensor, precision),
            spec_t(column),
            1e-12,
            &format!("matrix.{dtype}.gflops_efficiency"),
            "TFLOP/s",
        );
        if let Some(curve) = gemm.iter().find_map(|p| best_gemm_curve(x.cal, *p)) {
            gemm_curve(&mut f, x, dtype, curve);
        }
    }
    for (dtype, precision, column) in [
        ("float32", Precision::F32, "fp32_tflops"),
        ("float16", Precision::F16x2, "fp16_nontensor_tflops"),
    ] {
        calculon_rate(
            &mut f,
            &format!("vector.{dtype}.tflops"),
            flops(Family::Peak, precision),
            spec_t(column),
            1e-12,
            &format!("vector.{dtype}.gflops_efficiency"),
            "TFLOP/s",
        );
    }
    // Calculon: `GiB` times 1024**3, `GBps` times 1e9 (calculon/memory.py).
    push(
        &mut f,
        "mem1.GiB",
        "GiB",
        rate(x.capacity_bytes(), 1.0 / GIB),
    );
    calculon_rate(
        &mut f,
        "mem1.GBps",
        x.dram(),
        x.spec("mem_bandwidth_gbs"),
        1.0,
        "mem1.MB_efficiency",
        "GB/s",
    );
    if let Some(fit) = x.size_fit() {
        size_curve(&mut f, fit);
    }
    f.push(Field {
        key: "processing_mode".into(),
        value: Value::Text("roofline".into()),
        unit: "",
        source: Source::Choice("time = max(compute, memory), the roofline roofprobe measured"),
    });
    f
}

fn llm_viewer_fields(x: &Inputs) -> Vec<Field> {
    let mut f = Vec::new();
    push(
        &mut f,
        "bandwidth",
        "B/s",
        x.dram()
            .map(|(g, case)| (Value::Num(g * 1e9), Source::Measured(case)))
            .or_else(|| rate(x.spec("mem_bandwidth_gbs"), 1e9)),
    );
    push(
        &mut f,
        "FP16",
        "FLOP/s",
        rate(
            x.flops(
                Family::Tensor,
                Precision::F16F32,
                "fp16_tensor_fp32acc_tflops",
            ),
            1.0,
        ),
    );
    push(
        &mut f,
        "INT8",
        "OP/s",
        rate(
            x.flops(Family::Tensor, Precision::S8S32, "int8_tensor_tops"),
            1.0,
        ),
    );
    f
}

/// Four significant figures, for comments.
fn sig(v: f64) -> String {
    format!("{v:.4}")
}

fn comment(field: &Field) -> String {
    let unit = if field.unit.is_empty() {
        String::new()
    } else {
        format!("{}; ", field.unit)
    };
    format!("{unit}{}", field.source.describe())
}

/// AIConfigurator's YAML: sections `gpu` and `node`, top-level `data_dir`; every field with a
/// comment saying its unit and source (YAML comments are what that format allows).
fn render_yaml(header: &[String], fields: &[Field]) -> String {
    let mut out = String::new();
    for h in header {
        let _ = writeln!(out, "# {h}");
    }
    let _ = writeln!(
        out,
        "# data_dir, node.num_gpus_per_node, node.inter_node_bw and node.p2p_latency describe \
         the perf data and the node, which no run measures: give them with --set"
    );
    let mut section = "";
    for f in fields {
        let (sec, key) = f.key.split_once('.').unwrap_or(("", f.key.as_str()));
        if sec != section {
            if !sec.is_empty() {
                let _ = writeln!(out, "{sec}:");
            }
            section = sec;
        }
        let indent = if sec.is_empty() { "" } else { "  " };
        let _ = writeln!(out, "{indent}{key}: {} # {}", f.value.json(), comment(f));
    }
    out
}

/// llm-analysis's GPU config: a flat JSON object. The tool builds `GPUConfig(**json)`, which
/// refuses any key it does not know, so the sources cannot go in the file: `export` says them
/// on stderr.
fn render_flat_json(fields: &[Field]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|f| {
            format!(
                "  {}: {}",
                Value::Text(f.key.clone()).json(),
                f.value.json()
            )
        })
        .collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}

/// Calculon's system JSON (nested), with a `roofprobe_sources` map beside the sections, which
/// Calculon's `System` does not read.
fn render_calculon(header: &[String], fields: &[Field]) -> String {
    let mut root = serde_json::Map::new();
    let mut sources = serde_json::Map::new();
    for f in fields {
        let value: serde_json::Value =
            serde_json::from_str(&f.value.json()).unwrap_or(serde_json::Value::Null);
        let parts: Vec<&str> = f.key.split('.').collect();
        let mut node = &mut root;
        for p in &parts[..parts.len() - 1] {
            node = node
                .entry(p.to_string())
                .or_insert_with(|| serde_json::Value::Object(Default::default()))
                .as_object_mut()
                .expect("sections are objects");
        }
        node.insert(parts[parts.len() - 1].to_string(), value);
        sources.insert(f.key.clone(), comment(f).into());
    }
    sources.insert("_about".into(), header.join("; ").into());
    root.insert(
        "roofprobe_sources".into(),
        serde_json::Value::Object(sources),
    );
    let mut s = serde_json::to_string_pretty(&serde_json::Value::Object(root))
        .unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// LLM-Viewer's `hardware_params` dict, as Python source with a comment per field.
fn render_llm_viewer(header: &[String], name: &str, fields: &[Field]) -> String {
    let mut out = String::new();
    for h in header {
        let _ = writeln!(out, "# {h}");
    }
    let _ = writeln!(
        out,
        "# merge into LLM-Viewer's hardwares/hardware_params.py (onchip_buffer: register file + \
         shared memory in bytes, which no run measures: give it with --set)"
    );
    let _ = writeln!(out, "hardware_params = {{");
    let _ = writeln!(out, "    {}: {{", Value::Text(name.to_string()).json());
    for f in fields {
        let _ = writeln!(
            out,
            "        {}: {},  # {}",
            Value::Text(f.key.clone()).json(),
            f.value.json(),
            comment(f)
        );
    }
    let _ = writeln!(out, "    }},");
    let _ = writeln!(out, "}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::calibration::FromRecords;
    use crate::analysis::fixtures::synthetic_run;

    /// The synthetic A100 80GB SXM4 run: DRAM 1500 GB/s and f16.f32 tensor 250 TFLOP/s
    /// measured; everything else from the sheet (2039 GB/s, 80 GB, BF16 312, INT8 624,
    /// NVLink 600, PCIe Gen4 x16 (64 GB/s), 400 W).
    fn a100(format: Format, sets: &[(String, Value)]) -> Export {
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        let sheet = sheet_of(&cal).unwrap();
        assert_eq!(sheet.unwrap().device, "A100 80GB SXM4");
        build(&cal, sheet, format, sets).unwrap()
    }

    fn field<'a>(e: &'a Export, key: &str) -> &'a Field {
        e.fields
            .iter()
            .find(|f| f.key == key)
            .unwrap_or_else(|| panic!("no {key} in {:?}", e.fields))
    }

    fn close(v: &Value, want: f64) {
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
    fn llm_analysis_gets_gib_gb_per_s_and_tflops_with_spec_fields_marked() {
        let e = a100(Format::LlmAnalysis, &[]);
        // measured
        close(&field(&e, "hbm_bandwidth_in_GB_per_sec").value, 1500.0);
        close(&field(&e, "peak_fp16_TFLOPS").value, 250.0);
        assert!(matches!(
            field(&e, "peak_fp16_TFLOPS").source,
            Source::Measured(_)
        ));
        // from the sheet, marked: llm-analysis multiplies by 1024**3, so 80 GB is 80 here
        close(&field(&e, "mem_per_GPU_in_GB").value, 80.0);
        close(&field(&e, "peak_i8_TFLOPS").value, 624.0);
        close(
            &field(&e, "intra_node_bandwidth_in_GB_per_sec").value,
            300.0,
        );
        let spec: Vec<&str> = e.spec_fields().iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            spec,
            [
                "mem_per_GPU_in_GB",
                "intra_node_bandwidth_in_GB_per_sec",
                "peak_i8_TFLOPS"
            ]
        );
        assert_eq!(e.missing, ["intra_node_min_message_latency"]);
        let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
        assert_eq!(json["hbm_bandwidth_in_GB_per_sec"], 1500.0);
        assert_eq!(json["name"], "nvidia-a100-sxm4-80gb");
    }

    #[test]
    fn aiconfigurator_gets_bytes_per_second_and_the_measured_fraction() {
        let sets = [("node.num_gpus_per_node".to_string(), Value::Int(8))];
        let e = a100(Format::Aiconfigurator, &sets);
        close(&field(&e, "gpu.mem_bw").value, 2039e9);
        // the rated figure the format asks for, and where the measurement went: not "not
        // measured", which the run's DRAM row contradicts
        let said = field(&e, "gpu.mem_bw").source.describe();
        assert!(field(&e, "gpu.mem_bw").source.is_spec());
        assert!(
            said.contains("the rated figure")
                && said.contains("in gpu.mem_bw_empirical_scaling_factor")
                && !said.contains("not measured"),
            "{said}"
        );
        close(
            &field(&e, "gpu.mem_bw_empirical_scaling_factor").value,
            1500.0 / 2039.0,
        );
        close(&field(&e, "gpu.mem_capacity").value, 80.0 * GIB);
        close(&field(&e, "gpu.bfloat16_tc_flops").value, 312e12);
        close(&field(&e, "gpu.sm_version").value, 80.0);
        close(&field(&e, "node.pcie_bw").value, 32e9);
        close(&field(&e, "node.intra_node_bw").value, 300e9);
        assert_eq!(field(&e, "node.num_gpus_per_node").source, Source::Given);
        // the YAML says each field's source beside it
        let line = |key: &str| {
            e.text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{key}:")))
                .unwrap_or_else(|| panic!("no {key} in\n{}", e.text))
                .to_string()
        };
        assert!(
            line("bfloat16_tc_flops").contains("# FLOP/s; spec sheet \"A100 80GB SXM4\""),
            "{}",
            e.text
        );
        assert!(line("mem_bw_empirical_scaling_factor").contains("measured: stream/"));
        assert!(line("num_gpus_per_node").ends_with("given with --set"));
        assert!(e.text.contains("\ngpu:\n") && e.text.contains("\nnode:\n"));
        // no FP8 on an A100: neither measured nor on the sheet, so left out
        assert_eq!(
            e.missing,
            [
                "data_dir",
                "gpu.fp8_tc_flops",
                "node.inter_node_bw",
                "node.p2p_latency"
            ]
        );
    }

    #[test]
    fn calculon_gets_rated_figures_and_measured_efficiencies() {
        let e = a100(Format::Calculon, &[]);
        let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
        let f16 = &json["matrix"]["float16"];
        assert_eq!(f16["tflops"], 312.0);
        let eff = f16["gflops_efficiency"][0][1].as_f64().unwrap();
        assert!((eff - 250.0 / 312.0).abs() < 1e-12);
        assert_eq!(json["mem1"]["GBps"], 2039.0);
        assert_eq!(json["mem1"]["GiB"], 80.0);
        let eff = json["mem1"]["MB_efficiency"][0][1].as_f64().unwrap();
        assert!((eff - 1500.0 / 2039.0).abs() < 1e-12);
        let sources = &json["roofprobe_sources"];
        assert!(sources["matrix.bfloat16.tflops"]
            .as_str()
            .unwrap()
            .contains("spec sheet"));
        // measured, so the rated figure names where the measurement is
        let said = sources["mem1.GBps"].as_str().unwrap();
        assert!(
            said.contains("the rated figure") && said.contains("in mem1.MB_efficiency"),
            "{said}"
        );
        assert!(sources["mem1.MB_efficiency"]
            .as_str()
            .unwrap()
            .starts_with("[[size, efficiency]]; measured: stream/"));
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

    #[test]
    fn calculon_takes_the_measured_gemm_curve() {
        use crate::analysis::fixtures::gemm_row;
        use crate::cases::gemm::Shape;
        let mut rows = synthetic_run();
        rows.extend([
            gemm_row(
                "ptx",
                Precision::F16F32,
                Shape::square(1024),
                100_000.0,
                true,
            ),
            gemm_row(
                "ptx",
                Precision::F16F32,
                Shape::square(8192),
                200_000.0,
                true,
            ),
            gemm_row("simd", Precision::F32, Shape::square(4096), 12_000.0, true),
        ]);
        let cal = Calibration::from_records(&rows, None).unwrap();
        let e = build(&cal, sheet_of(&cal).unwrap(), Format::Calculon, &[]).unwrap();
        let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
        let f16 = &json["matrix"]["float16"];
        // the rate stays the sheet's 312 TFLOP/s; each size at its own GEMM over it, largest
        // (2·8192³ = 1099.5 GFLOP) first, the smallest (2·1024³) carried down to 0
        assert_eq!(f16["tflops"], 312.0);
        let curve: Vec<(f64, f64)> = f16["gflops_efficiency"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        let big = 2.0 * 8192f64.powi(3) / 1e9;
        let small = 2.0 * 1024f64.powi(3) / 1e9;
        assert_eq!(curve.len(), 3, "{curve:?}");
        assert!((curve[0].0 - big).abs() < 1e-9 && (curve[0].1 - 200.0 / 312.0).abs() < 1e-12);
        assert!((curve[1].0 - small).abs() < 1e-9 && (curve[1].1 - 100.0 / 312.0).abs() < 1e-12);
        assert_eq!(curve[2], (0.0, curve[1].1));
        let source = json["roofprobe_sources"]["matrix.float16.gflops_efficiency"]
            .as_str()
            .unwrap();
        assert!(
            source.contains("measured: gemm/ptx/f16.f32: 2 sizes from 2 GEMMs"),
            "{source}"
        );
        assert!(source.contains("carried down (not measured)"), "{source}");
        // an A100 has a TF32 figure on its sheet: float32 is the tensor rate, its efficiency
        // from the f32 GEMM against it
        assert_eq!(json["matrix"]["float32"]["tflops"], 156.0);
    }

    /// Shapes of one size (2·256³ = 2·1·4096·4096 flops) give Calculon one point, the lowest
    /// efficiency measured there, whichever order the shapes sort in; the source counts the
    /// sizes written and the GEMMs they came from. The Xeon run b3b7c787 kept 256³ (0.4266) over
    /// the GEMV beside it (0.0161), carried that down to 0, and said 59 sizes for 24.
    #[test]
    fn calculon_takes_the_lowest_efficiency_where_shapes_share_a_size() {
        use crate::analysis::fixtures::gemm_row;
        use crate::cases::gemm::Shape;
        let gemv = Shape::new(1, 4096, 4096);
        assert_eq!(gemv.flops(), Shape::square(256).flops());
        for (square, vector) in [(5_000.0, 200.0), (200.0, 5_000.0)] {
            let mut rows = synthetic_run();
            rows.extend([
                gemm_row("simd", Precision::F32, Shape::square(256), square, true),
                gemm_row("simd", Precision::F32, gemv, vector, true),
                gemm_row("simd", Precision::F32, Shape::square(1024), 9_000.0, true),
            ]);
            let cal = Calibration::from_records(&rows, None).unwrap();
            let e = build(&cal, sheet_of(&cal).unwrap(), Format::Calculon, &[]).unwrap();
            let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
            let rate = json["matrix"]["float32"]["tflops"].as_f64().unwrap() * 1e3;
            let curve: Vec<(f64, f64)> = json["matrix"]["float32"]["gflops_efficiency"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
                .collect();
            let small = gemv.flops() as f64 / 1e9;
            assert_eq!(curve.len(), 3, "{curve:?}");
            assert!((curve[1].0 - small).abs() < 1e-12, "{curve:?}");
            assert!((curve[1].1 - 200.0 / rate).abs() < 1e-12, "{curve:?}");
            assert_eq!(curve[2], (0.0, curve[1].1));
            let slowest = if square < vector {
                "256x256x256"
            } else {
                "1x4096x4096"
            };
            let source = json["roofprobe_sources"]["matrix.float32.gflops_efficiency"]
                .as_str()
                .unwrap();
            assert!(
                source.contains(&format!(
                    "measured: gemm/simd/f32: 2 sizes from 3 GEMMs (where shapes share a size, \
                     the lowest efficiency), {slowest} to 1024x1024x1024; below {slowest}"
                )),
                "{source}"
            );
        }
    }

    #[test]
    fn a_measured_figure_above_the_rated_one_is_the_rate_at_efficiency_one() {
        let mut f = Vec::new();
        let rated = Some((
            1000.0,
            Source::Spec {
                entry: "X".into(),
                column: "c".into(),
            },
        ));
        calculon_rate(
            &mut f,
            "m",
            Some((1200.0, "case".into())),
            rated,
            1.0,
            "e",
            "",
        );
        close(&f[0].value, 1200.0);
        assert_eq!(f[1].value, Value::Curve(vec![(0.0, 1.0)]));
    }
}
