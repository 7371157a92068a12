//! `roofprobe estimate`: will a transformer fit, and is each phase bound by capacity, bandwidth
//! or compute, on measured ceilings (runs) or spec entries, several devices side by side.
//!
//! This command gathers the workload and the devices ([`crate::estimate::Machine`]: each
//! figure with its source) and prints; the arithmetic is [`crate::estimate`]'s.

use crate::bench::capacity::Figure;
use crate::bench::{Family, Precision};
use crate::calibration::Calibration;
use crate::cli::EstimateArgs;
use crate::commands::{emit, emit_json};
use crate::estimate::{
    self, presets, Bound, Dtype, Dtypes, InferenceShape, Machine, Model, Phase, Sourced,
    TrainingShape,
};
use crate::inputs::load_inputs;
use crate::specs::{self, GpuSpec};
use crate::{Error, Result};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Inference,
    Training,
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The ceiling and the sheet column for the arithmetic of `dtype`.
fn ceiling_for(dtype: Dtype) -> Option<(Family, Precision, &'static str)> {
    match dtype {
        Dtype::Bf16 => Some((Family::Tensor, Precision::Bf16F32, "bf16_tensor_tflops")),
        Dtype::F16 => Some((
            Family::Tensor,
            Precision::F16F32,
            "fp16_tensor_fp32acc_tflops",
        )),
        Dtype::Fp8 => Some((Family::Tensor, Precision::E4m3F32, "fp8_tensor_tflops")),
        Dtype::Int8 => Some((Family::Tensor, Precision::S8S32, "int8_tensor_tops")),
        Dtype::Fp32 => Some((Family::Peak, Precision::F32, "fp32_tflops")),
        Dtype::Int4 => None,
    }
}

fn from_sheet(sheet: Option<&GpuSpec>, column: &str, scale: f64) -> Option<Sourced> {
    let s = sheet?;
    let v = s.figure(column).filter(|v| v.is_finite() && *v > 0.0)?;
    Some(Sourced {
        value: v * scale,
        source: format!("spec sheet \"{}\": {column} (not measured)", s.device),
    })
}

/// Usable memory: what the run measured free (a GPU's right after its context was created,
/// the host's `MemAvailable`: the `capacity` family), else the sheet's capacity (vendors state
/// these in GiB: an A100 80GB reports 81920 MiB), else `--memory-gib` (a run without capacity
/// rows and no sheet entry).
fn memory(
    args: &EstimateArgs,
    cal: Option<&Calibration>,
    sheet: Option<&GpuSpec>,
) -> Option<Sourced> {
    cal.and_then(|cal| {
        let free = cal.capacity?.free_bytes;
        Some(Sourced {
            value: free as f64,
            source: format!(
                "{} ({})",
                measured_source(
                    cal,
                    &Some(crate::bench::capacity::case(Figure::Free, free).id())
                ),
                if cal.device.backend == roofprobe_calibration::BackendKind::Host {
                    "the OS's MemAvailable when the run read it"
                } else {
                    "free right after the run created its context"
                }
            ),
        })
    })
    .or_else(|| from_sheet(sheet, "memory_gb", GIB))
    .or_else(|| {
        args.memory_gib.map(|g| Sourced {
            value: g * GIB,
            source: GIVEN_MEMORY.into(),
        })
    })
}

/// The source of a capacity taken from `--memory-gib`.
const GIVEN_MEMORY: &str = "given with --memory-gib";

/// A device's column in the table and the notes: A, B, … (the first the base of the ratios).
fn letter(i: usize) -> char {
    (b'A' + (i % 26) as u8) as char
}

/// Says on stderr where `--memory-gib` was given but a device took a measured or sheet
/// capacity instead, so the flag is never ignored silently.
fn note_unused_memory_gib(args: &EstimateArgs, machines: &[Machine]) {
    let Some(g) = args.memory_gib else {
        return;
    };
    for (i, m) in machines.iter().enumerate() {
        if let Some(mem) = m.memory_bytes.as_ref().filter(|s| s.source != GIVEN_MEMORY) {
            crate::say!(
                "note: --memory-gib {g} is not used for {} ({}): it has {} GiB, {}",
                letter(i),
                m.name,
                gib(mem.value),
                mem.source
            );
        }
    }
}

/// `measured: CASE`, said to be suspect where the run flagged the row.
fn measured_source(cal: &Calibration, case: &Option<String>) -> String {
    let case = case.clone().unwrap_or_default();
    if cal.is_suspect(&case) {
        format!("measured: {case} ({})", crate::exports::SUSPECT)
    } else {
        format!("measured: {case}")
    }
}

/// A device measured: its ceilings, the sheet's figures where it measured nothing.
fn measured(args: &EstimateArgs, cal: &Calibration, dtype: Dtype) -> Result<Machine> {
    let sheet = crate::exports::sheet_of(cal)?;
    let bandwidth_bps = cal
        .memory_ceilings
        .iter()
        .find(|m| m.level == roofprobe_calibration::MemoryLevel::Dram)
        .and_then(|m| {
            Some(Sourced {
                value: m.gbps? * 1e9,
                source: measured_source(cal, &m.case),
            })
        })
        .or_else(|| from_sheet(sheet, "mem_bandwidth_gbs", 1e9));
    let ceiling = ceiling_for(dtype);
    let compute_flops = ceiling.and_then(|(family, precision, column)| {
        cal.compute(family, precision)
            .and_then(|c| {
                Some(Sourced {
                    value: c.gflops? * 1e9,
                    source: measured_source(cal, &c.case),
                })
            })
            .or_else(|| from_sheet(sheet, column, 1e12))
    });
    let curve =
        ceiling.and_then(|(_, precision, _)| crate::exports::best_gemm_curve(cal, precision));
    let gemv = ceiling.map_or_else(Vec::new, |(_, precision, _)| {
        matrix_vector_products(cal, precision)
    });
    Ok(Machine {
        name: cal.title(),
        basis: "calibration (measured ceilings)".into(),
        memory_bytes: memory(args, Some(cal), sheet),
        bandwidth_bps,
        compute_flops,
        gemm: curve.map_or_else(Vec::new, |c| {
            c.points.iter().map(|p| (p.gflop, p.gflops)).collect()
        }),
        gemm_source: curve.map_or_else(String::new, |c| format!("{} {}", c.kernel, c.precision)),
        gemv,
    })
}

/// The run's matrix-vector products (GEMM points with M = 1) of `precision`: per weight size
/// (N × K) the fastest shape and implementation's bandwidth (its minimum bytes over its time),
/// ascending in size. A point above its roof by more than the noise is left out (one of its
/// figures is not what the hardware does); a flagged one is named suspect.
fn matrix_vector_products(cal: &Calibration, precision: Precision) -> Vec<estimate::Gemv> {
    let mut best: Vec<estimate::Gemv> = Vec::new();
    for p in &cal.points {
        let Some(shape) = p.param.and_then(|x| x.shape()) else {
            continue;
        };
        if p.family != Family::Gemm
            || p.precision != precision
            || shape.m != 1
            || p.above_roof
            || !(p.gflops > 0.0 && p.flop_per_byte > 0.0)
        {
            continue;
        }
        let g = estimate::Gemv {
            weight_elements: (shape.n * shape.k) as f64,
            bandwidth_bps: p.gflops / p.flop_per_byte * 1e9,
            source: measured_source(cal, &Some(p.case.clone())),
        };
        match best
            .iter_mut()
            .find(|b| b.weight_elements == g.weight_elements)
        {
            Some(b) if b.bandwidth_bps >= g.bandwidth_bps => {}
            Some(b) => *b = g,
            None => best.push(g),
        }
    }
    best.sort_by(|a, b| a.weight_elements.total_cmp(&b.weight_elements));
    best
}

/// A device from the spec sheet alone.
fn rated(args: &EstimateArgs, name: &str, dtype: Dtype) -> Result<Machine> {
    let sheet = specs::find(name)?;
    Ok(Machine {
        name: format!("spec sheet \"{}\"", sheet.device),
        basis: "spec sheet (vendor figures, nothing measured)".into(),
        memory_bytes: memory(args, None, Some(sheet)),
        bandwidth_bps: from_sheet(Some(sheet), "mem_bandwidth_gbs", 1e9),
        compute_flops: ceiling_for(dtype)
            .and_then(|(_, _, column)| from_sheet(Some(sheet), column, 1e12)),
        gemm: Vec::new(),
        gemm_source: String::new(),
        gemv: Vec::new(),
    })
}

fn model(args: &EstimateArgs) -> Result<Model> {
    let model = if let Some(name) = &args.model {
        presets::find(name).map_err(Error::Usage)?
    } else if let Some(path) = &args.config {
        let bytes = crate::files::read_input(path)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| Error::parse(path, 1, format!("not UTF-8 text ({e})")))?;
        presets::from_hf_config(&path.display().to_string(), &text).map_err(Error::Usage)?
    } else if let (Some(layers), Some(hidden), Some(heads), Some(ffn), Some(vocab)) =
        (args.layers, args.hidden, args.heads, args.ffn, args.vocab)
    {
        Model {
            name: "by shape".into(),
            layers,
            hidden,
            heads,
            kv_heads: args.kv_heads.unwrap_or(heads),
            head_dim: hidden.checked_div(heads).unwrap_or(0),
            ffn,
            gated_ffn: !args.ungated_ffn,
            vocab,
            tied_embeddings: false,
            sliding_window: None,
            window_layers: 0,
            source: "given on the command line".into(),
        }
    } else {
        return Err(Error::Usage(format!(
            "no model: give --model ({}), --config FILE (a Hugging Face config.json) or the shape \
             (--layers --hidden --heads --ffn --vocab)",
            presets::names().join(", ")
        )));
    };
    model.check().map_err(Error::Usage)?;
    if !model.hidden.is_multiple_of(model.heads) && args.config.is_none() {
        return Err(Error::Usage(format!(
            "hidden size {} is not a multiple of {} heads",
            model.hidden, model.heads
        )));
    }
    Ok(model)
}

fn check_workload(args: &EstimateArgs) -> Result<()> {
    let positive = |name: &str, v: u64| {
        if v == 0 {
            Err(Error::Usage(format!(
                "--{name} is 0; it must be at least 1"
            )))
        } else {
            Ok(())
        }
    };
    positive("batch", args.batch)?;
    // the other mode's arguments are refused, not ignored
    let refuse = |given: &[(&str, bool)], why: &str| match given.iter().find(|(_, set)| *set) {
        Some((name, _)) => Err(Error::Usage(format!("--{name} {why}"))),
        None => Ok(()),
    };
    match args.mode {
        Mode::Inference => {
            refuse(
                &[
                    ("seq", args.seq.is_some()),
                    ("optimizer", args.optimizer.is_some()),
                    ("fp32-training", args.fp32_training),
                    ("checkpointing", args.checkpointing),
                ],
                "applies to --mode training; inference reads --prompt and --generate",
            )?;
            positive("prompt", prompt(args))?;
            positive("generate", generate(args))?;
        }
        Mode::Training => {
            refuse(
                &[
                    ("prompt", args.prompt.is_some()),
                    ("generate", args.generate.is_some()),
                    ("weights", args.weights.is_some()),
                    ("kv-cache", args.kv_cache.is_some()),
                ],
                "applies to inference; training reads --seq, and keeps its weights in 16 bits \
                 with fp32 master copies (mixed precision) or in fp32 (--fp32-training)",
            )?;
            positive("seq", seq(args))?;
            match (args.fp32_training, args.activations) {
                (_, None) | (true, Some(Dtype::Fp32)) | (false, Some(Dtype::Bf16 | Dtype::F16)) => {
                }
                (true, Some(d)) => {
                    return Err(Error::Usage(format!(
                        "--fp32-training computes in fp32, not --activations {}",
                        d.as_str()
                    )))
                }
                (false, Some(d)) => {
                    return Err(Error::Usage(format!(
                        "mixed-precision training computes in bf16 or f16, not --activations {} \
                         (fp32: --fp32-training)",
                        d.as_str()
                    )))
                }
            }
        }
    }
    if let Some(g) = args.memory_gib {
        if !(g.is_finite() && g > 0.0) {
            return Err(Error::Usage(format!(
                "--memory-gib is {g}; it must be a positive number of GiB"
            )));
        }
    }
    Ok(())
}

fn prompt(args: &EstimateArgs) -> u64 {
    args.prompt.unwrap_or(512)
}

fn generate(args: &EstimateArgs) -> u64 {
    args.generate.unwrap_or(128)
}

fn seq(args: &EstimateArgs) -> u64 {
    args.seq.unwrap_or(2048)
}

/// The arithmetic's dtype, whose ceiling the compute-bound phases run at: `--activations`
/// (bf16 by default), or fp32 for `--fp32-training`.
fn compute_dtype(args: &EstimateArgs) -> Dtype {
    if args.mode == Mode::Training && args.fp32_training {
        Dtype::Fp32
    } else {
        args.activations.unwrap_or(Dtype::Bf16)
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Answer {
    Inference(estimate::Inference),
    Training(estimate::Training),
}

#[derive(Serialize)]
struct DeviceAnswer {
    machine: Machine,
    answer: Answer,
}

#[derive(Serialize)]
struct Report {
    mode: Mode,
    model: Model,
    params: f64,
    /// The arithmetic's dtype (its ceiling is the compute one).
    compute_dtype: Dtype,
    /// Inference's dtypes; training's follow from `training.mixed_precision`.
    #[serde(skip_serializing_if = "Option::is_none")]
    dtypes: Option<Dtypes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inference: Option<InferenceShape>,
    #[serde(skip_serializing_if = "Option::is_none")]
    training: Option<TrainingShape>,
    devices: Vec<DeviceAnswer>,
}

pub fn estimate(args: &EstimateArgs) -> Result<i32> {
    check_workload(args)?;
    let model = model(args)?;
    let compute = compute_dtype(args);
    let dtypes = Dtypes {
        weights: args.weights.unwrap_or(Dtype::Bf16),
        activations: compute,
        kv_cache: args.kv_cache.unwrap_or(Dtype::Bf16),
    };
    if args.files.is_empty() && args.specs.is_empty() {
        return Err(Error::Usage(
            "no device: give results CSVs or calibration JSONs (measured), or --spec NAME".into(),
        ));
    }
    let mut machines = Vec::new();
    if !args.files.is_empty() {
        for input in load_inputs(&args.files, true)? {
            machines.push(measured(args, &input.run.calibration, compute)?);
        }
    }
    for name in &args.specs {
        machines.push(rated(args, name, compute)?);
    }
    note_unused_memory_gib(args, &machines);
    let inference_shape = InferenceShape {
        batch: args.batch,
        prompt: prompt(args),
        generate: generate(args),
    };
    let training_shape = TrainingShape {
        batch: args.batch,
        seq: seq(args),
        optimizer: args.optimizer.unwrap_or(estimate::Optimizer::Adam),
        mixed_precision: !args.fp32_training,
        checkpointing: args.checkpointing,
    };
    let devices: Vec<DeviceAnswer> = machines
        .into_iter()
        .map(|m| {
            let answer = match args.mode {
                Mode::Inference => {
                    Answer::Inference(estimate::inference(&model, dtypes, inference_shape, &m))
                }
                Mode::Training => Answer::Training(estimate::training(&model, training_shape, &m)),
            };
            DeviceAnswer { machine: m, answer }
        })
        .collect();
    let report = Report {
        mode: args.mode,
        params: model.params(),
        model,
        compute_dtype: compute,
        dtypes: (args.mode == Mode::Inference).then_some(dtypes),
        inference: (args.mode == Mode::Inference).then_some(inference_shape),
        training: (args.mode == Mode::Training).then_some(training_shape),
        devices,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::Internal(format!("estimate JSON: {e}")))?;
        emit_json(&format!("{text}\n"))?;
    } else {
        emit(&table(&report))?;
    }
    Ok(0)
}

fn gib(v: f64) -> String {
    format!("{:.2}", v / GIB)
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "unknown".to_string(), f)
}

fn ms(v: Option<f64>) -> String {
    opt(v, |s| format!("{:.3}", s * 1e3))
}

fn phase_rows(rows: &mut Vec<Row>, name: &str, p: &[&Phase]) {
    rows.push(Row::new(
        &format!("{name} time (ms)"),
        p.iter().map(|x| x.time_s).collect(),
        ms,
    ));
    rows.push(Row::text(
        &format!("{name} bound"),
        p.iter().map(|x| x.bound.as_str().to_string()).collect(),
    ));
    rows.push(Row::new(
        &format!("{name}: bytes / bandwidth (ms)"),
        p.iter().map(|x| x.memory_s).collect(),
        ms,
    ));
    rows.push(Row::new(
        &format!("{name}: flops / compute (ms)"),
        p.iter().map(|x| x.compute_s).collect(),
        ms,
    ));
}

/// One table row: a figure per device (kept for the ratios) and its text.
struct Row {
    label: String,
    values: Vec<Option<f64>>,
    cells: Vec<String>,
}

impl Row {
    fn new(label: &str, values: Vec<Option<f64>>, f: impl Fn(Option<f64>) -> String) -> Row {
        Row {
            label: label.into(),
            cells: values.iter().map(|v| f(*v)).collect(),
            values,
        }
    }

    fn text(label: &str, cells: Vec<String>) -> Row {
        Row {
            label: label.into(),
            values: vec![None; cells.len()],
            cells,
        }
    }
}

/// The row of the largest batch that fits, per device (`unknown` where the capacity is).
fn largest_batch(batches: impl Iterator<Item = Option<u64>>) -> Row {
    Row::text(
        "largest batch that fits",
        batches
            .map(|b| b.map_or_else(|| "unknown".into(), |b| b.to_string()))
            .collect(),
    )
}

fn table(r: &Report) -> String {
    let m: Vec<&Machine> = r.devices.iter().map(|d| &d.machine).collect();
    let mut rows = vec![
        Row::new(
            "memory (GiB)",
            m.iter()
                .map(|x| x.memory_bytes.as_ref().map(|s| s.value))
                .collect(),
            |v| opt(v, gib),
        ),
        Row::new(
            "DRAM bandwidth (GB/s)",
            m.iter()
                .map(|x| x.bandwidth_bps.as_ref().map(|s| s.value))
                .collect(),
            |v| opt(v, |b| format!("{:.1}", b / 1e9)),
        ),
        Row::new(
            &format!("{} compute (TFLOP/s)", r.compute_dtype.as_str()),
            m.iter()
                .map(|x| x.compute_flops.as_ref().map(|s| s.value))
                .collect(),
            |v| opt(v, |c| format!("{:.2}", c / 1e12)),
        ),
    ];
    let fits = |f: Option<bool>| match f {
        Some(true) => "yes".to_string(),
        Some(false) => "NO".to_string(),
        None => "unknown (no capacity: --memory-gib)".to_string(),
    };
    let inference: Vec<&estimate::Inference> = r
        .devices
        .iter()
        .filter_map(|d| match &d.answer {
            Answer::Inference(i) => Some(i),
            Answer::Training(_) => None,
        })
        .collect();
    let training: Vec<&estimate::Training> = r
        .devices
        .iter()
        .filter_map(|d| match &d.answer {
            Answer::Training(t) => Some(t),
            Answer::Inference(_) => None,
        })
        .collect();
    if !inference.is_empty() {
        let i = &inference;
        rows.push(Row::new(
            "weights (GiB)",
            i.iter().map(|x| Some(x.memory.weights_bytes)).collect(),
            |v| opt(v, gib),
        ));
        rows.push(Row::new(
            "KV cache (GiB)",
            i.iter().map(|x| Some(x.memory.kv_cache_bytes)).collect(),
            |v| opt(v, gib),
        ));
        rows.push(Row::new(
            "workspace (GiB)",
            i.iter().map(|x| Some(x.memory.workspace_bytes)).collect(),
            |v| opt(v, gib),
        ));
        rows.push(Row::new(
            "total (GiB)",
            i.iter().map(|x| Some(x.memory.total_bytes)).collect(),
            |v| opt(v, gib),
        ));
        rows.push(Row::text(
            "fits",
            i.iter().map(|x| fits(x.memory.fits)).collect(),
        ));
        rows.push(Row::new(
            "prefill compute (TFLOP/s)",
            i.iter()
                .map(|x| x.prefill_compute_flops.as_ref().map(|s| s.value))
                .collect(),
            |v| opt(v, |c| format!("{:.2}", c / 1e12)),
        ));
        phase_rows(
            &mut rows,
            "prefill",
            &i.iter().map(|x| &x.prefill).collect::<Vec<_>>(),
        );
        rows.push(Row::new(
            "decode bandwidth (GB/s)",
            i.iter()
                .map(|x| x.decode_bandwidth_bps.as_ref().map(|s| s.value))
                .collect(),
            |v| opt(v, |b| format!("{:.1}", b / 1e9)),
        ));
        phase_rows(
            &mut rows,
            "decode step",
            &i.iter().map(|x| &x.decode_step).collect::<Vec<_>>(),
        );
        rows.push(Row::new(
            "decode tokens/s",
            i.iter().map(|x| x.decode_tokens_per_s).collect(),
            |v| opt(v, |t| format!("{t:.1}")),
        ));
        rows.push(Row::new(
            "total time (s)",
            i.iter().map(|x| x.total_s).collect(),
            |v| opt(v, |t| format!("{t:.3}")),
        ));
        rows.push(largest_batch(i.iter().map(|x| x.max_batch)));
        rows.push(Row::text(
            "decode compute-bound from batch",
            i.iter()
                .map(|x| match (x.compute_bound_batch, x.never_compute_bound()) {
                    (Some(b), _) => b.to_string(),
                    (None, Some(_)) => "never".to_string(),
                    (None, None) => "unknown".to_string(),
                })
                .collect(),
        ));
        rows.push(Row::text(
            "bound",
            i.iter().map(|x| x.bound.as_str().to_string()).collect(),
        ));
    }
    if !training.is_empty() {
        let t = &training;
        rows.push(Row::text(
            "bytes per parameter",
            t.iter().map(|x| format!("{}", x.bytes_per_param)).collect(),
        ));
        rows.push(Row::new(
            "weights+grads+optimizer (GiB)",
            t.iter().map(|x| Some(x.states_bytes)).collect(),
            |v| opt(v, gib),
        ));
        rows.push(Row::new(
            "activations (GiB)",
            t.iter().map(|x| Some(x.activations_bytes)).collect(),
            |v| opt(v, gib),
        ));
        rows.push(Row::new(
            "total (GiB)",
            t.iter().map(|x| Some(x.total_bytes)).collect(),
            |v| opt(v, gib),
        ));
        rows.push(Row::text("fits", t.iter().map(|x| fits(x.fits)).collect()));
        rows.push(largest_batch(t.iter().map(|x| x.max_batch)));
        phase_rows(
            &mut rows,
            "step",
            &t.iter().map(|x| &x.step).collect::<Vec<_>>(),
        );
        rows.push(Row::new(
            "tokens/s",
            t.iter().map(|x| x.tokens_per_s).collect(),
            |v| opt(v, |s| format!("{s:.1}")),
        ));
        rows.push(Row::text(
            "bound",
            t.iter().map(|x| x.bound.as_str().to_string()).collect(),
        ));
    }

    // columns: the figure, each device, then each device over the first
    let letters: Vec<String> = (0..m.len()).map(|i| letter(i).to_string()).collect();
    let mut header = vec!["".to_string()];
    header.extend(letters.iter().cloned());
    for l in letters.iter().skip(1) {
        header.push(format!("{l}/A"));
    }
    let mut grid = vec![header];
    for row in &rows {
        let mut line = vec![row.label.clone()];
        line.extend(row.cells.iter().cloned());
        for v in row.values.iter().skip(1) {
            line.push(match (row.values[0], v) {
                (Some(a), Some(b)) if a > 0.0 => format!("{:.3}", b / a),
                _ => String::new(),
            });
        }
        grid.push(line);
    }
    let widths: Vec<usize> = (0..grid[0].len())
        .map(|c| grid.iter().map(|l| l[c].chars().count()).max().unwrap_or(0))
        .collect();
    let (what, dtypes) = match r.mode {
        Mode::Inference => {
            let (s, d) = (
                r.inference.expect("inference shape"),
                r.dtypes.expect("dtypes"),
            );
            (
                format!(
                    "inference, batch {}, prompt {}, generate {}",
                    s.batch, s.prompt, s.generate
                ),
                format!(
                    "weights {}, activations {}, KV {}",
                    d.weights.as_str(),
                    d.activations.as_str(),
                    d.kv_cache.as_str()
                ),
            )
        }
        Mode::Training => {
            let s = r.training.expect("training shape");
            (
                format!(
                    "training, batch {}, sequence {}, {:?}, {}{}",
                    s.batch,
                    s.seq,
                    s.optimizer,
                    if s.mixed_precision {
                        "mixed precision"
                    } else {
                        "fp32"
                    },
                    if s.checkpointing {
                        ", checkpointing"
                    } else {
                        ""
                    }
                ),
                format!("compute {}", r.compute_dtype.as_str()),
            )
        }
    };
    let window = match r.model.sliding_window {
        Some(w) if r.model.window_layers > 0 => {
            format!(", {} with a {w}-token window", r.model.window_layers)
        }
        _ => String::new(),
    };
    let mut out = format!(
        "{what} on {} ({:.2} B parameters, {} layers{window}; {dtypes}): {}\n",
        r.model.name,
        r.params / 1e9,
        r.model.layers,
        r.model.source,
    );
    for line in &grid {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(c, s)| {
                if c == 0 {
                    format!("{s:<w$}", w = widths[c])
                } else {
                    format!("{s:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push('\n');
    for (l, d) in letters.iter().zip(&r.devices) {
        let x = &d.machine;
        let src = |s: &Option<Sourced>| {
            s.as_ref()
                .map_or_else(|| "none".to_string(), |s| s.source.clone())
        };
        out.push_str(&format!(
            "{l}: {} — {}; memory: {}; bandwidth: {}; compute: {}{}{}\n",
            x.name,
            x.basis,
            src(&x.memory_bytes),
            src(&x.bandwidth_bps),
            src(&x.compute_flops),
            if x.gemm.is_empty() {
                String::new()
            } else {
                format!("; prefill at the measured GEMM {}", x.gemm_source)
            },
            match &d.answer {
                Answer::Inference(i) if !x.gemv.is_empty() => {
                    format!("; decode at {}", src(&i.decode_bandwidth_bps))
                }
                _ => String::new(),
            }
        ));
    }
    for (l, d) in letters.iter().zip(&r.devices) {
        if let Answer::Inference(i) = &d.answer {
            if let Some((limit, ridge)) = i.never_compute_bound() {
                out.push_str(&format!(
                    "{l}: decode never turns compute-bound: as the batch grows a step tends to \
                     one sequence's arithmetic over its own bytes (its KV cache and embedding \
                     row), {limit:.1} FLOP/byte, \
                     under the ridge's {ridge:.1} (compute over the decode bandwidth)\n"
                ));
            }
            if let (Some(turn), Some(fit)) = (i.compute_bound_batch, i.max_batch) {
                if turn > fit {
                    out.push_str(&format!(
                        "{l}: decode turns compute-bound at batch {turn}, but at most {fit} \
                         sequences of this length fit in memory: capacity runs out first\n"
                    ));
                }
            }
        }
    }
    if r.devices.iter().any(|d| match &d.answer {
        Answer::Inference(i) => i.bound == Bound::Capacity,
        Answer::Training(t) => t.bound == Bound::Capacity,
    }) {
        out.push_str("capacity-bound: the workload does not fit in that device's memory\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checked-in host run with the batch sweep in f32 (ours and the `gemm` crate's).
    fn run() -> Calibration {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results/vm-host-amd-epyc-20261203T184829Z-f90759ee.json");
        Calibration::load(path).unwrap()
    }

    /// The fastest M = 1 point of `precision` at weight shape `n` × `k`, by hand.
    fn fastest(cal: &Calibration, precision: Precision, n: u64, k: u64) -> (f64, String) {
        cal.points
            .iter()
            .filter(|p| {
                p.family == Family::Gemm
                    && p.precision == precision
                    && !p.above_roof
                    && p.case.ends_with(&format!("/1x{n}x{k}"))
            })
            .map(|p| (p.gflops / p.flop_per_byte * 1e9, p.case.clone()))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .unwrap()
    }

    #[test]
    fn the_products_are_the_fastest_m1_rows_of_their_precision_none_above_its_roof() {
        let mut cal = run();
        let got = matrix_vector_products(&cal, Precision::F32);
        let sizes: Vec<f64> = got.iter().map(|g| g.weight_elements).collect();
        // the five weight shapes' four sizes, ascending, each the fastest shape of its size
        assert_eq!(
            sizes,
            [16_777_216.0, 58_720_256.0, 67_108_864.0, 234_881_024.0]
        );
        let shapes: [&[(u64, u64)]; 4] = [
            &[(4096, 4096)],
            &[(14336, 4096), (4096, 14336)],
            &[(8192, 8192)],
            &[(28672, 8192)],
        ];
        for (g, shapes) in got.iter().zip(shapes) {
            let (gbps, case) = shapes
                .iter()
                .map(|&(n, k)| fastest(&cal, Precision::F32, n, k))
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .unwrap();
            assert_eq!(g.bandwidth_bps, gbps);
            assert!(
                g.source.starts_with(&format!("measured: {case}")),
                "{}",
                g.source
            );
        }
        // no other precision's, and none above its roof
        assert!(matrix_vector_products(&cal, Precision::F64).is_empty());
        assert!(matrix_vector_products(&cal, Precision::Bf16F32).is_empty());
        let (_, top) = fastest(&cal, Precision::F32, 28672, 8192);
        for p in cal.points.iter_mut().filter(|p| p.case == top) {
            p.above_roof = true;
        }
        let without = matrix_vector_products(&cal, Precision::F32);
        let (gbps, case) = fastest(&cal, Precision::F32, 28672, 8192);
        assert_ne!(case, top);
        assert_eq!(without[3].bandwidth_bps, gbps);
    }
}
