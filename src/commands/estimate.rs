//! `roofprobe estimate`: will a transformer fit, and is each phase bound by capacity, bandwidth
//! or compute, on measured ceilings (runs) or spec entries, several devices side by side.
//!
//! This command gathers the workload and the devices ([`crate::analysis::estimate::Machine`]: each
//! figure with its source) and prints; the arithmetic is [`crate::analysis::estimate`]'s.

use crate::analysis::calibration::Calibration;
use crate::analysis::estimate::{
    self, presets, Answer, DeviceAnswer, Dtype, Dtypes, InferenceShape, Machine, Mode, Model,
    Report, Sourced, TrainingShape,
};
use crate::analysis::inputs::load_inputs;
use crate::cases::capacity::Figure;
use crate::cases::{Family, Precision};
use crate::cli::EstimateArgs;
use crate::commands::{emit, emit_json};
use crate::render::estimate::{gib, table};
use crate::specs::{self, GpuSpec};
use crate::text::letter;
use crate::{Error, Result};
use roofprobe_calibration::check::MAX_MEMORY_BYTES;

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
                    &Some(crate::cases::capacity::case(Figure::Free, free).id())
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
        format!("measured: {case} ({})", crate::render::exports::SUSPECT)
    } else {
        format!("measured: {case}")
    }
}

/// A device measured: its ceilings, the sheet's figures where it measured nothing.
fn measured(args: &EstimateArgs, cal: &Calibration, dtype: Dtype) -> Result<Machine> {
    let sheet = crate::render::exports::sheet_of(cal)?;
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
    let mut ceiling = ceiling_for(dtype);
    let rate = |(family, precision, column): (Family, Precision, &str)| {
        cal.compute(family, precision)
            .and_then(|c| {
                Some(Sourced {
                    value: c.gflops? * 1e9,
                    source: measured_source(cal, &c.case),
                })
            })
            .or_else(|| from_sheet(sheet, column, 1e12))
    };
    let mut compute_flops = ceiling.and_then(rate);
    // A 16-bit type nothing measured and no sheet gives (a CPU without bf16 units, as the AMD
    // EPYC runs): its arithmetic runs at the f32 rate, converted, so the f32 ceiling (and the
    // f32 GEMMs and GEMVs) stand for it, said to be so.
    if compute_flops.is_none() && matches!(dtype, Dtype::Bf16 | Dtype::F16) {
        let f32 = ceiling_for(Dtype::Fp32);
        compute_flops = f32.and_then(rate).map(|s| Sourced {
            value: s.value,
            source: format!(
                "{} (no {} rate measured or on a sheet: {} arithmetic at the f32 rate, as a \
                 device without {} units runs it)",
                s.source,
                dtype.as_str(),
                dtype.as_str(),
                dtype.as_str()
            ),
        });
        if compute_flops.is_some() {
            ceiling = f32;
        }
    }
    let curve = ceiling
        .and_then(|(_, precision, _)| crate::render::exports::best_gemm_curve(cal, precision));
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
            max_context_tokens: None,
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
        // the bound every reader holds a device's memory to: no device holds a pebibyte
        let most = (MAX_MEMORY_BYTES as f64) / GIB;
        if !(g.is_normal() && g > 0.0 && g <= most) {
            return Err(Error::Usage(format!(
                "--memory-gib is {}; it must be a positive number of GiB, at most {most} (a \
                 pebibyte: no device holds more)",
                roofprobe_calibration::check::figure(g)
            )));
        }
    }
    Ok(())
}

/// Says on stderr where the workload's sequence is longer than the model's context (its
/// `max_position_embeddings`): the model was not trained for it, and its answers there are not
/// what the estimate's bytes and flops assume. The estimate goes on.
fn warn_past_context(args: &EstimateArgs, model: &Model) {
    let Some(max) = model.max_context_tokens else {
        return;
    };
    let (tokens, what) = match args.mode {
        Mode::Inference => (
            prompt(args).saturating_add(generate(args)),
            format!("--prompt {} + --generate {}", prompt(args), generate(args)),
        ),
        Mode::Training => (seq(args), format!("--seq {}", seq(args))),
    };
    if tokens > max {
        crate::say!(
            "warning: {what} = {tokens} tokens is past {}'s context of {max} tokens \
             (max_position_embeddings): the model was not trained for it; the estimate goes on",
            model.name
        );
    }
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

/// Every figure of the report finite, before the table or the JSON is made from it: the table
/// would print `inf`, the JSON `null`. Inputs within their bounds keep every figure finite; this
/// holds where a combination at the edges would not.
fn finite(report: &Report) -> Result<()> {
    match roofprobe_calibration::finite::first_non_finite(report) {
        None => Ok(()),
        Some((figure, value)) => Err(Error::NotFinite {
            output: "estimate".into(),
            figure,
            value,
        }),
    }
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
            crate::analysis::calibration::require_valid(&input.run.calibration, &input.path)?;
            machines.push(measured(args, &input.run.calibration, compute)?);
        }
    }
    warn_past_context(args, &model);
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
    finite(&report)?;
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::Internal(format!("estimate JSON: {e}")))?;
        emit_json(&format!("{text}\n"))?;
    } else {
        emit(&table(&report))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report with a figure that is not finite (a device's memory of 10^300 GiB, past the
    /// bound `--memory-gib` now holds) is an error naming the figure, never a table or JSON
    /// holding `inf` or `null`; the same report with a finite memory passes.
    #[test]
    fn a_non_finite_figure_is_an_error_naming_it() {
        let model = presets::find("llama-3.1-8b").unwrap();
        let dtypes = Dtypes {
            weights: Dtype::Bf16,
            activations: Dtype::Bf16,
            kv_cache: Dtype::Bf16,
        };
        let shape = InferenceShape {
            batch: 1,
            prompt: 512,
            generate: 128,
        };
        let report = |memory_bytes: f64| {
            let figure = |value: f64| {
                Some(Sourced {
                    value,
                    source: "test".into(),
                })
            };
            let machine = Machine {
                name: "test".into(),
                basis: "calibration".into(),
                memory_bytes: figure(memory_bytes),
                bandwidth_bps: figure(1e12),
                compute_flops: figure(1e14),
                gemm: vec![],
                gemm_source: String::new(),
                gemv: vec![],
            };
            let answer = Answer::Inference(estimate::inference(&model, dtypes, shape, &machine));
            Report {
                mode: Mode::Inference,
                params: model.params(),
                model: model.clone(),
                compute_dtype: Dtype::Bf16,
                dtypes: Some(dtypes),
                inference: Some(shape),
                training: None,
                devices: vec![DeviceAnswer { machine, answer }],
            }
        };
        finite(&report(80.0 * GIB)).unwrap();
        let e = finite(&report(1e300 * GIB)).unwrap_err().to_string();
        assert!(
            e.starts_with("estimate: `devices[0].machine.memory_bytes.value` would be inf"),
            "{e}"
        );
    }

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
