//! `roofprobe estimate`'s arithmetic: a dense decoder-only transformer's memory, time and bound,
//! for inference and for training, on a [`Machine`] (ceilings from a calibration or a spec
//! entry). docs/estimate.md gives every formula with its source.
//!
//! Workloads are [`Model`] (by shape, a preset of [`presets`], or a Hugging Face `config.json`)
//! with [`Dtypes`]; the answers are [`Inference`] and [`Training`], each figure with the bound
//! that set it. This module computes; it must not print, read files or measure.

pub mod presets;

use serde::Serialize;

/// A number type's size, as the workload stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Fp32,
    Bf16,
    F16,
    Fp8,
    Int8,
    Int4,
}

impl Dtype {
    pub fn bytes(self) -> f64 {
        match self {
            Dtype::Fp32 => 4.0,
            Dtype::Bf16 | Dtype::F16 => 2.0,
            Dtype::Fp8 | Dtype::Int8 => 1.0,
            Dtype::Int4 => 0.5,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
            Dtype::Fp8 => "fp8",
            Dtype::Int8 => "int8",
            Dtype::Int4 => "int4",
        }
    }
}

/// The dtypes of weights, activations (the arithmetic: its ceiling is the one used) and KV cache.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Dtypes {
    pub weights: Dtype,
    pub activations: Dtype,
    pub kv_cache: Dtype,
}

/// A dense decoder-only transformer (Llama/GPT layout).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Model {
    pub name: String,
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    /// Per-head size (hidden / heads unless the config says otherwise).
    pub head_dim: u64,
    /// FFN inner size.
    pub ffn: u64,
    /// Gated FFN (SwiGLU: gate, up and down projections) or not (up and down).
    pub gated_ffn: bool,
    pub vocab: u64,
    /// Output projection shares the embedding's weights.
    pub tied_embeddings: bool,
    /// Tokens a sliding-window layer attends to, and keeps in its KV cache (Mistral's rolling
    /// buffer); None where no layer has a window.
    pub sliding_window: Option<u64>,
    /// Layers that attend through the window; the others see the whole context.
    pub window_layers: u64,
    /// The longest sequence the model was trained for (`max_position_embeddings`), where the
    /// shape's source gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_context_tokens: Option<u64>,
    /// Where the shape comes from (a config file's path, a preset's source).
    pub source: String,
}

impl Model {
    /// Refuses a shape no transformer has, with one line saying which figure and why.
    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [
            ("layers", self.layers),
            ("hidden size", self.hidden),
            ("heads", self.heads),
            ("KV heads", self.kv_heads),
            ("head size", self.head_dim),
            ("FFN size", self.ffn),
            ("vocabulary", self.vocab),
        ] {
            if v == 0 {
                return Err(format!("the model's {name} is 0; it must be at least 1"));
            }
            if v > 1 << 24 {
                return Err(format!(
                    "the model's {name} is {v}; no transformer is that large"
                ));
            }
        }
        if self.window_layers > self.layers
            || (self.window_layers > 0) != self.sliding_window.is_some_and(|w| w > 0)
        {
            return Err(format!(
                "{} of {} layers have a sliding window of {:?} tokens; a window needs at least \
                 one token and at most every layer",
                self.window_layers, self.layers, self.sliding_window
            ));
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(format!(
                "{} heads cannot share {} KV heads evenly: heads must be a multiple of KV heads",
                self.heads, self.kv_heads
            ));
        }
        Ok(())
    }

    /// Query (and output-projection) width: heads × head size.
    pub fn q_dim(&self) -> f64 {
        (self.heads * self.head_dim) as f64
    }

    /// K and V width each: KV heads × head size.
    pub fn kv_dim(&self) -> f64 {
        (self.kv_heads * self.head_dim) as f64
    }

    /// Weights of one layer's matrix multiplications: Q, K, V, O and the FFN.
    pub fn layer_matmul_params(&self) -> f64 {
        let h = self.hidden as f64;
        let attention = h * self.q_dim() + 2.0 * h * self.kv_dim() + self.q_dim() * h;
        let ffn = (if self.gated_ffn { 3.0 } else { 2.0 }) * h * self.ffn as f64;
        attention + ffn
    }

    /// Weights every token multiplies by: every layer's matrices and the output projection (the
    /// embedding is a lookup, not a product).
    pub fn matmul_params(&self) -> f64 {
        self.layers as f64 * self.layer_matmul_params() + (self.vocab * self.hidden) as f64
    }

    /// Every weight stored: layers (with two norms each), embedding, final norm and the output
    /// projection unless it is tied to the embedding.
    pub fn params(&self) -> f64 {
        let h = self.hidden as f64;
        let embedding = self.vocab as f64 * h;
        let output = if self.tied_embeddings { 0.0 } else { embedding };
        self.layers as f64 * (self.layer_matmul_params() + 2.0 * h) + embedding + h + output
    }

    /// The embedding table's parameters, `V·h` (the output projection's too, untied).
    pub fn embedding_params(&self) -> f64 {
        (self.vocab * self.hidden) as f64
    }

    /// Bytes of every stored weight: the layers' matrices in `weights`; the embedding, the
    /// output projection and the norms in [`edge_bytes`] (16-bit beside narrower weights, as
    /// weight-only quantization leaves them).
    pub fn weight_bytes(&self, weights: Dtype) -> f64 {
        let matrices = self.layers as f64 * self.layer_matmul_params();
        matrices * weights.bytes() + (self.params() - matrices) * edge_bytes(weights)
    }

    /// Weight bytes a forward pass of `tokens` reads: every weight once, except an untied
    /// embedding table, of which a lookup reads only its tokens' rows (at most the table).
    pub fn weight_read_bytes(&self, weights: Dtype, tokens: f64) -> f64 {
        let edge = edge_bytes(weights);
        let table = if self.tied_embeddings {
            0.0
        } else {
            self.embedding_params() * edge
        };
        let rows = tokens.min(self.vocab as f64) * self.hidden as f64 * edge;
        self.weight_bytes(weights) - table + rows
    }

    /// KV cache bytes of one token in one layer: its K and V.
    pub fn kv_bytes_per_layer_token(&self, kv: Dtype) -> f64 {
        2.0 * self.kv_dim() * kv.bytes()
    }

    /// The window in tokens, for the layers that have one.
    fn window(&self) -> Option<f64> {
        self.sliding_window
            .filter(|_| self.window_layers > 0)
            .map(|w| w as f64)
    }

    /// (layers without a window, layers with one).
    fn layer_split(&self) -> (f64, f64) {
        let windowed = if self.window().is_some() {
            self.window_layers as f64
        } else {
            0.0
        };
        (self.layers as f64 - windowed, windowed)
    }

    /// Tokens a sequence of `context` tokens holds in its KV cache, summed over layers (a
    /// windowed layer holds at most its window), and which a new token attends to.
    pub fn layer_tokens(&self, context: f64) -> f64 {
        let (full, windowed) = self.layer_split();
        full * context + windowed * self.window().map_or(0.0, |w| context.min(w))
    }

    /// [`Model::layer_tokens`] averaged over a decode that grows the context from `prompt` to
    /// `prompt + generate` tokens.
    pub fn mean_layer_tokens(&self, prompt: f64, generate: f64) -> f64 {
        let (full, windowed) = self.layer_split();
        let mean_windowed = self.window().map_or(0.0, |w| {
            let end = prompt + generate;
            if end <= w {
                prompt + generate / 2.0
            } else if prompt >= w {
                w
            } else {
                // the mean of min(c, w) for c from the prompt to the end
                ((w * w - prompt * prompt) / 2.0 + (end - w) * w) / generate
            }
        });
        full * (prompt + generate / 2.0) + windowed * mean_windowed
    }

    /// (query, key) pairs causal attention over a sequence of `seq` tokens computes, summed
    /// over layers: half of `seq²` a layer, a windowed layer's queries each seeing at most the
    /// window.
    pub fn causal_pairs(&self, seq: f64) -> f64 {
        let (full, windowed) = self.layer_split();
        let pairs_windowed = self.window().map_or(0.0, |w| {
            if seq <= w {
                seq * seq / 2.0
            } else {
                w * seq - w * w / 2.0
            }
        });
        full * seq * seq / 2.0 + windowed * pairs_windowed
    }

    /// FLOPs for one new token attending to `layer_tokens` earlier ones summed over layers
    /// ([`Model::layer_tokens`]): the matrix products with every weight (2 per weight) and the
    /// attention's scores and weighted sum (2 × 2 per attended position and query channel).
    pub fn flops_per_token(&self, layer_tokens: f64) -> f64 {
        2.0 * self.matmul_params() + 4.0 * layer_tokens * self.q_dim()
    }
}

/// Bytes of the weights quantization leaves wide: the embedding, the output projection and the
/// norms stay 16-bit beside fp8, int8 or int4 layer weights (GPTQ, AWQ and vLLM's fp8 keep
/// them so); fp32 weights keep them fp32.
pub fn edge_bytes(weights: Dtype) -> f64 {
    weights.bytes().max(2.0)
}

/// A figure and where it came from (`measured: stream/triad/f64`, `spec sheet "…": …`, `given`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sourced {
    pub value: f64,
    pub source: String,
}

/// What one device offers the estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Machine {
    /// `NVIDIA H200 (cuda:0) on lab, 2026-01-01` or `spec sheet "RTX 4090"`.
    pub name: String,
    /// `calibration` (measured ceilings) or `spec sheet` (the vendor's figures only).
    pub basis: String,
    /// Usable memory in bytes.
    pub memory_bytes: Option<Sourced>,
    /// DRAM bandwidth in bytes/s.
    pub bandwidth_bps: Option<Sourced>,
    /// Arithmetic rate for the activations' dtype, in FLOP/s.
    pub compute_flops: Option<Sourced>,
    /// Measured GEMMs of that dtype: (GFLOP of the product, achieved GFLOP/s), ascending in
    /// size; empty where the run measured none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gemm: Vec<(f64, f64)>,
    /// Which GEMM implementation and precision `gemm` is.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub gemm_source: String,
    /// Measured matrix-vector products (M = 1) of that dtype, one per weight size (N × K),
    /// ascending; empty where the run measured none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gemv: Vec<Gemv>,
}

/// A measured matrix-vector product: a decode step's product at batch 1.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Gemv {
    /// Elements of its weight matrix, N × K.
    pub weight_elements: f64,
    /// The minimum bytes it moves over its time, in bytes/s: the fastest shape and
    /// implementation of that size.
    pub bandwidth_bps: f64,
    /// Its case (`gemm/simd/f32/1x14336x4096`), said to be suspect where the run flagged it.
    pub source: String,
}

impl Machine {
    /// The rate a GEMM of `gflop` reaches: the measured GEMM of the largest size not above it
    /// (the smallest measured, for a smaller one); None where no GEMM was measured.
    pub fn gemm_rate(&self, gflop: f64) -> Option<Sourced> {
        let (size, gflops) = self
            .gemm
            .iter()
            .rev()
            .find(|(size, _)| *size <= gflop)
            .or_else(|| self.gemm.first())?;
        Some(Sourced {
            value: gflops * 1e9,
            source: format!(
                "measured GEMM {} at {size:.4} GFLOP (the prefill's FFN product is {gflop:.4})",
                self.gemm_source
            ),
        })
    }

    /// The bandwidth a decode step's bytes move at: the measured matrix-vector product of the
    /// largest weight matrix not above `ffn_elements` (the smallest measured, for a smaller
    /// one), else the DRAM ceiling.
    pub fn decode_bandwidth(&self, ffn_elements: f64) -> Option<Sourced> {
        let gemv = self
            .gemv
            .iter()
            .rev()
            .find(|g| g.weight_elements <= ffn_elements)
            .or_else(|| self.gemv.first());
        match gemv {
            Some(g) => Some(Sourced {
                value: g.bandwidth_bps,
                source: format!(
                    "{}, the matrix-vector product of {:.1} M weights (the FFN's is {:.1} M)",
                    g.source,
                    g.weight_elements / 1e6,
                    ffn_elements / 1e6
                ),
            }),
            None => self.bandwidth_bps.clone(),
        }
    }
}

/// What bounds a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Does not fit in memory.
    Capacity,
    /// Bytes over bandwidth take longer than flops over compute.
    Bandwidth,
    Compute,
    /// A ceiling it needs is unknown.
    Unknown,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Capacity => "capacity",
            Bound::Bandwidth => "bandwidth",
            Bound::Compute => "compute",
            Bound::Unknown => "unknown",
        }
    }
}

/// One phase's time: bytes and flops, their times, the larger one and the bound.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase {
    pub bytes: f64,
    pub flops: f64,
    pub memory_s: Option<f64>,
    pub compute_s: Option<f64>,
    /// max(memory, compute), where both are known.
    pub time_s: Option<f64>,
    pub bound: Bound,
}

/// A phase's bytes at `bandwidth` (bytes/s) and its flops at `compute` (FLOP/s).
fn phase(bytes: f64, flops: f64, bandwidth: Option<&Sourced>, compute: Option<&Sourced>) -> Phase {
    let memory_s = bandwidth.map(|b| bytes / b.value);
    let compute_s = compute.map(|c| flops / c.value);
    let (time_s, bound) = match (memory_s, compute_s) {
        (Some(mem), Some(cmp)) if mem >= cmp => (Some(mem), Bound::Bandwidth),
        (Some(_), Some(cmp)) => (Some(cmp), Bound::Compute),
        _ => (None, Bound::Unknown),
    };
    Phase {
        bytes,
        flops,
        memory_s,
        compute_s,
        time_s,
        bound,
    }
}

/// An inference workload.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct InferenceShape {
    pub batch: u64,
    pub prompt: u64,
    pub generate: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Memory {
    pub weights_bytes: f64,
    pub kv_cache_bytes: f64,
    pub workspace_bytes: f64,
    pub total_bytes: f64,
    pub capacity_bytes: Option<f64>,
    /// None where the capacity is unknown.
    pub fits: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Inference {
    pub memory: Memory,
    pub prefill: Phase,
    /// The rate prefill's flops run at: the measured GEMM of its size, else the ceiling.
    pub prefill_compute_flops: Option<Sourced>,
    /// The rate a decode step's bytes move at: the measured matrix-vector product of its
    /// size, else the DRAM ceiling.
    pub decode_bandwidth_bps: Option<Sourced>,
    /// One decode step for the whole batch, at the mean context (prompt + generate / 2).
    pub decode_step: Phase,
    pub decode_tokens_per_s: Option<f64>,
    /// Prefill plus every decode step.
    pub total_s: Option<f64>,
    /// The smallest batch at which a decode step turns compute-bound; None where it never does
    /// (the KV cache read grows as fast as the arithmetic) or a ceiling is unknown.
    pub compute_bound_batch: Option<u64>,
    /// The FLOP per byte a decode step tends to as the batch grows: one sequence's arithmetic
    /// over its own bytes, its KV-cache read and its embedding row (the weights' read shared by
    /// ever more sequences). A decode step turns compute-bound at some batch only where this is
    /// above the ridge (compute ÷ the decode bandwidth).
    pub decode_intensity_limit: Option<f64>,
    /// The ridge a decode step is held against: compute over the decode bandwidth, FLOP/byte.
    pub decode_ridge: Option<f64>,
    /// The largest batch (at this prompt and generation length) whose weights, KV cache and
    /// workspace fit in memory; 0 if not even one sequence does; None where the capacity is
    /// unknown. Set beside `compute_bound_batch`, it says whether a batch large enough to make
    /// decode compute-bound fits at all.
    pub max_batch: Option<u64>,
    /// The overall answer: capacity where it does not fit, else decode's bound.
    pub bound: Bound,
}

/// Inference memory, prefill, decode and the compute-bound batch (docs/estimate.md, "Inference").
impl Inference {
    /// Where no batch turns a decode step compute-bound though both ceilings are known: the
    /// FLOP per byte it tends to and the ridge that stays above it.
    pub fn never_compute_bound(&self) -> Option<(f64, f64)> {
        match (
            self.compute_bound_batch,
            self.decode_intensity_limit,
            self.decode_ridge,
        ) {
            (None, Some(limit), Some(ridge)) => Some((limit, ridge)),
            _ => None,
        }
    }
}

/// The largest batch whose `fixed` bytes and `per_seq` bytes a sequence fit in `capacity`
/// (0 if not even one; `None` where the capacity is unknown).
fn largest_batch(capacity: Option<f64>, fixed: f64, per_seq: f64) -> Option<u64> {
    capacity.map(|c| ((c - fixed) / per_seq).floor().max(0.0) as u64)
}

pub fn inference(model: &Model, d: Dtypes, w: InferenceShape, m: &Machine) -> Inference {
    let b = w.batch as f64;
    let p = w.prompt as f64;
    let g = w.generate as f64;
    let weights = model.weight_bytes(d.weights);
    let kv_layer_token = model.kv_bytes_per_layer_token(d.kv_cache);
    let kv_cache = kv_layer_token * b * model.layer_tokens(p + g);
    // The largest live activations of one prefill layer (input, Q/K/V, the FFN's inner
    // tensors; attention by a fused kernel, so no prompt² score matrix), plus fp32 logits of
    // the last token of each sequence.
    let ffn_inner = (if model.gated_ffn { 2.0 } else { 1.0 }) * model.ffn as f64;
    let workspace = b
        * p
        * (2.0 * model.hidden as f64 + model.q_dim() + 2.0 * model.kv_dim() + ffn_inner)
        * d.activations.bytes()
        + b * model.vocab as f64 * 4.0;
    let total = weights + kv_cache + workspace;
    let capacity = m.memory_bytes.as_ref().map(|c| c.value);
    let fits = capacity.map(|c| total <= c);
    // the KV cache and the workspace grow with the batch, one sequence's worth each
    let per_seq = (kv_cache + workspace) / b;
    let max_batch = largest_batch(capacity, weights, per_seq);

    // Prefill: every prompt token through every weight, causal attention over the prompt
    // (half of p² pairs, a windowed layer's at most the window), the output projection for
    // the last token only; the weights read once (of an untied embedding table, the prompt's
    // rows) and the prompt's K and V written in every layer.
    let prefill_flops = 2.0 * (model.matmul_params() - model.embedding_params()) * b * p
        + 4.0 * model.q_dim() * b * model.causal_pairs(p)
        + 2.0 * b * model.embedding_params();
    let prefill_bytes =
        model.weight_read_bytes(d.weights, b * p) + kv_layer_token * model.layers as f64 * b * p;
    // At the measured GEMM efficiency of the prefill's shapes where the run measured GEMMs:
    // the rate of its largest product, the FFN's up projection (B·p × h × f).
    let ffn_gflop = 2.0 * b * p * model.hidden as f64 * model.ffn as f64 / 1e9;
    let prefill_compute = m.gemm_rate(ffn_gflop).or_else(|| m.compute_flops.clone());
    let prefill = phase(
        prefill_bytes,
        prefill_flops,
        m.bandwidth_bps.as_ref(),
        prefill_compute.as_ref(),
    );

    // A decode step at the mean of the decode's contexts: the weights read once for the
    // batch (each sequence's embedding row apart), each sequence's KV cache and row.
    let layer_tokens = model.mean_layer_tokens(p, g);
    let shared_bytes = model.weight_read_bytes(d.weights, 0.0);
    let seq_bytes = kv_layer_token * layer_tokens + model.hidden as f64 * edge_bytes(d.weights);
    let seq_flops = model.flops_per_token(layer_tokens);
    let step_bytes = model.weight_read_bytes(d.weights, b) + kv_layer_token * layer_tokens * b;
    let step_flops = b * seq_flops;
    // Its products are matrix-vector products at batch 1 (and read the weights once at any
    // batch): their bytes move at the measured rate of one of the FFN's size where the run
    // measured one, which a read-only stream may reach only in part of the DRAM ceiling.
    let decode_bandwidth = m.decode_bandwidth(model.hidden as f64 * model.ffn as f64);
    let decode_step = phase(
        step_bytes,
        step_flops,
        decode_bandwidth.as_ref(),
        m.compute_flops.as_ref(),
    );
    let decode_tokens_per_s = decode_step.time_s.map(|t| b / t);
    let total_s = match (prefill.time_s, decode_step.time_s) {
        (Some(pf), Some(dc)) => Some(pf + g * dc),
        _ => None,
    };
    // B × f / C ≥ (W + B × k) / bw  ⇔  B ≥ (W / bw) / (f / C − k / bw)
    let compute_bound_batch = match (&decode_bandwidth, &m.compute_flops) {
        (Some(bw), Some(c)) => {
            let per_seq = seq_flops / c.value - seq_bytes / bw.value;
            (per_seq > 0.0).then(|| ((shared_bytes / bw.value) / per_seq).ceil().max(1.0) as u64)
        }
        _ => None,
    };
    let decode_intensity_limit = (seq_bytes > 0.0).then(|| seq_flops / seq_bytes);
    let decode_ridge = match (&decode_bandwidth, &m.compute_flops) {
        (Some(bw), Some(c)) if bw.value > 0.0 => Some(c.value / bw.value),
        _ => None,
    };
    let bound = match fits {
        Some(false) => Bound::Capacity,
        _ => decode_step.bound,
    };
    Inference {
        memory: Memory {
            weights_bytes: weights,
            kv_cache_bytes: kv_cache,
            workspace_bytes: workspace,
            total_bytes: total,
            capacity_bytes: capacity,
            fits,
        },
        prefill,
        prefill_compute_flops: prefill_compute,
        decode_bandwidth_bps: decode_bandwidth,
        decode_step,
        decode_tokens_per_s,
        total_s,
        compute_bound_batch,
        decode_intensity_limit,
        decode_ridge,
        max_batch,
        bound,
    }
}

/// The optimizer, for its states' bytes per parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// Adam / AdamW: two fp32 moments.
    Adam,
    /// SGD with momentum: one fp32 buffer.
    Sgd,
}

/// A training workload.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TrainingShape {
    pub batch: u64,
    pub seq: u64,
    pub optimizer: Optimizer,
    /// 16-bit weights and gradients with fp32 master weights, else everything fp32.
    pub mixed_precision: bool,
    /// Full activation checkpointing (recompute each layer in the backward pass).
    pub checkpointing: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Training {
    pub params: f64,
    /// Weights, gradients, master weights and optimizer states per parameter.
    pub bytes_per_param: f64,
    pub states_bytes: f64,
    pub activations_bytes: f64,
    pub total_bytes: f64,
    pub capacity_bytes: Option<f64>,
    pub fits: Option<bool>,
    /// The largest batch (at this sequence length) that fits; 0 if not even one.
    pub max_batch: Option<u64>,
    /// One step: three forward passes' flops (four with checkpointing), a forward pass being
    /// 2 × the matrix weights × tokens and causal attention; the states read and written.
    pub step: Phase,
    pub tokens_per_s: Option<f64>,
    pub bound: Bound,
}

/// Bytes per parameter of weights, gradients, master weights and optimizer states (ZeRO,
/// Rajbhandari et al. 2020, §3.1: mixed-precision Adam is 2 + 2 + 12 = 16).
pub fn bytes_per_param(optimizer: Optimizer, mixed: bool) -> f64 {
    let moments = match optimizer {
        Optimizer::Adam => 8.0,
        Optimizer::Sgd => 4.0,
    };
    // [weights, gradients, master weights]: 16-bit with an fp32 master copy, or all fp32
    let copies: [f64; 3] = if mixed {
        [2.0, 2.0, 4.0]
    } else {
        [4.0, 4.0, 0.0]
    };
    copies.iter().sum::<f64>() + moments
}

/// Activation bytes of one sequence in training: what each layer keeps for its backward pass
/// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
/// §4's accounting, applied to a pre-norm decoder with flash attention and no dropout): per
/// token, the two norms' inputs and outputs (`4h`), Q, K and V (`a·d + 2·k·d`), the attention's
/// output (`a·d`), the FFN's inner tensors (gated: gate, up, the activation and the product,
/// `4f`; else `2f`), each of `act_bytes`, and the softmax's fp32 statistics (`4·a` bytes); no
/// `s²` score matrix (flash attention recomputes it). With full checkpointing each layer keeps
/// only its input (`h`), plus one layer's full set while it is recomputed. Plus the fp32 logits
/// (`s·V·4`).
pub fn activation_bytes_per_sequence(
    model: &Model,
    seq: u64,
    checkpointing: bool,
    act_bytes: f64,
) -> f64 {
    let s = seq as f64;
    let h = model.hidden as f64;
    let ffn = (if model.gated_ffn { 4.0 } else { 2.0 }) * model.ffn as f64;
    let elements = 4.0 * h + 2.0 * model.q_dim() + 2.0 * model.kv_dim() + ffn;
    let layer = s * (elements * act_bytes + 4.0 * model.heads as f64);
    let layers = if checkpointing {
        model.layers as f64 * s * h * act_bytes + layer
    } else {
        model.layers as f64 * layer
    };
    layers + s * model.vocab as f64 * 4.0
}

/// Training memory, the largest batch that fits, and the step time (docs/estimate.md,
/// "Training").
pub fn training(model: &Model, w: TrainingShape, m: &Machine) -> Training {
    let params = model.params();
    let per_param = bytes_per_param(w.optimizer, w.mixed_precision);
    let states = params * per_param;
    // 16-bit activations in mixed precision, fp32 otherwise
    let act_bytes = if w.mixed_precision { 2.0 } else { 4.0 };
    let per_seq = activation_bytes_per_sequence(model, w.seq, w.checkpointing, act_bytes);
    let activations = per_seq * w.batch as f64;
    let total = states + activations;
    let capacity = m.memory_bytes.as_ref().map(|c| c.value);
    let fits = capacity.map(|c| total <= c);
    let max_batch = largest_batch(capacity, states, per_seq);
    // in f64: the product of two u64 can pass u64::MAX
    let tokens = w.batch as f64 * w.seq as f64;
    // a forward pass: 2 per weight per token and causal attention (4 per pair and query
    // channel); the backward pass twice that, and with checkpointing one more forward
    let forward = 2.0 * model.matmul_params() * tokens
        + 4.0 * model.q_dim() * w.batch as f64 * model.causal_pairs(w.seq as f64);
    let flops = if w.checkpointing { 4.0 } else { 3.0 } * forward;
    // each state read and written once by the optimizer step
    let step = phase(
        2.0 * states,
        flops,
        m.bandwidth_bps.as_ref(),
        m.compute_flops.as_ref(),
    );
    let tokens_per_s = step.time_s.map(|t| tokens / t);
    let bound = match fits {
        Some(false) => Bound::Capacity,
        _ => step.bound,
    };
    Training {
        params,
        bytes_per_param: per_param,
        states_bytes: states,
        activations_bytes: activations,
        total_bytes: total,
        capacity_bytes: capacity,
        fits,
        max_batch,
        step,
        tokens_per_s,
        bound,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
/// What is estimated: serving the model, or training it.
pub enum Mode {
    Inference,
    Training,
}

#[derive(Serialize)]
#[serde(untagged)]
/// One device's answer: inference's or training's.
pub enum Answer {
    Inference(Inference),
    Training(Training),
}

#[derive(Serialize)]
/// A device and its answer.
pub struct DeviceAnswer {
    pub machine: Machine,
    pub answer: Answer,
}

#[derive(Serialize)]
/// Everything `estimate` found: the workload, and an answer per device, as the table and
/// `--json` show it.
pub struct Report {
    pub mode: Mode,
    pub model: Model,
    pub params: f64,
    /// The arithmetic's dtype (its ceiling is the compute one).
    pub compute_dtype: Dtype,
    /// Inference's dtypes; training's follow from `training.mixed_precision`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtypes: Option<Dtypes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<InferenceShape>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingShape>,
    pub devices: Vec<DeviceAnswer>,
}
