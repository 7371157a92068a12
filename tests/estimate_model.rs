//! The estimate's model (analysis::estimate): a model's parameter count, inference (prefill at
//! the measured GEMM of its size, decode at weights and KV cache over the bandwidth or the measured
//! matrix-vector product, quantized weights, a sliding window, what fits in memory) and training
//! (optimizer bytes, checkpointing), and the shapes it refuses. tests/estimate.rs runs the command.

use roofprobe::analysis::estimate::*;

fn llama_8b() -> Model {
    presets::find("llama-3.1-8b").unwrap()
}

fn machine(memory_gib: f64, gbps: f64, tflops: f64) -> Machine {
    let s = |v| {
        Some(Sourced {
            value: v,
            source: "test".into(),
        })
    };
    Machine {
        name: "test".into(),
        basis: "test".into(),
        memory_bytes: s(memory_gib * 1024.0 * 1024.0 * 1024.0),
        bandwidth_bps: s(gbps * 1e9),
        compute_flops: s(tflops * 1e12),
        gemm: Vec::new(),
        gemm_source: String::new(),
        gemv: Vec::new(),
    }
}

#[test]
fn prefill_runs_at_the_measured_gemm_of_its_size() {
    let model = llama_8b();
    let w = InferenceShape {
        batch: 1,
        prompt: 512,
        generate: 8,
    };
    let mut m = machine(80.0, 1000.0, 300.0);
    let ceiling = inference(&model, BF16, w, &m);
    // the FFN product: 2 × 512 × 4096 × 14336 / 1e9 = 60.13 GFLOP; GEMMs measured at
    // 2.147 GFLOP (100 TFLOP/s) and 1099.5 GFLOP (200 TFLOP/s): the 2.147 one applies
    m.gemm = vec![(2.147, 100_000.0), (1099.5, 200_000.0)];
    m.gemm_source = "ptx bf16.f32".into();
    let gemm = inference(&model, BF16, w, &m);
    let rate = gemm.prefill_compute_flops.as_ref().unwrap();
    assert_eq!(rate.value, 100e12);
    assert!(
        rate.source.contains("ptx bf16.f32 at 2.1470 GFLOP"),
        "{}",
        rate.source
    );
    let (with, without) = (
        gemm.prefill.compute_s.unwrap(),
        ceiling.prefill.compute_s.unwrap(),
    );
    assert!((with / without - 3.0).abs() < 1e-12, "{with} {without}");
    // decode is unchanged: its products are GEMVs, bound by bandwidth
    assert_eq!(gemm.decode_step, ceiling.decode_step);
}

const BF16: Dtypes = Dtypes {
    weights: Dtype::Bf16,
    activations: Dtype::Bf16,
    kv_cache: Dtype::Bf16,
};

#[test]
fn llama_3_1_8b_has_its_published_parameter_count() {
    // by hand: per layer Q 4096², K and V 4096×1024 each, O 4096², FFN 3×4096×14336,
    // norms 2×4096 = 218,112,000; × 32 = 6,979,584,000; embedding and output
    // 2 × 128256 × 4096 = 1,050,673,152; final norm 4096: 8,030,261,248 ("8B").
    assert_eq!(llama_8b().params(), 8_030_261_248.0);
    // KV per token and layer: 2 × 1024 × 2 bytes = 4,096 (131,072 over 32 layers)
    assert_eq!(llama_8b().kv_bytes_per_layer_token(Dtype::Bf16), 4_096.0);
    assert_eq!(llama_8b().layer_tokens(1.0), 32.0);
}

#[test]
fn decode_at_batch_one_is_weights_and_kv_over_bandwidth() {
    // 1000 GB/s, 100 TFLOP/s, 80 GiB; prompt 1000, generate 200: mean context 1100.
    let m = machine(80.0, 1000.0, 100.0);
    let w = InferenceShape {
        batch: 1,
        prompt: 1000,
        generate: 200,
    };
    let r = inference(&llama_8b(), BF16, w, &m);
    // bytes: the weights, 8,030,261,248 × 2, but of the untied embedding table
    // (128256 × 4096 × 2 = 1,050,673,152) one row (4096 × 2), and 131,072 × 1100 of KV:
    // 15,154,036,736 → 15.154 ms
    assert_eq!(r.decode_step.bytes, 15_154_036_736.0);
    let t = r.decode_step.time_s.unwrap();
    assert!((t - 0.015_154_036_736).abs() < 1e-15, "{t}");
    assert_eq!(r.decode_step.bound, Bound::Bandwidth);
    assert_eq!(r.bound, Bound::Bandwidth);
    assert_eq!(r.memory.fits, Some(true));
    // flops: 2 × (6,979,321,856 + 525,336,576) + 4 × 32 × 1100 × 4096 = 15,586,033,664
    assert_eq!(r.decode_step.flops, 15_586_033_664.0);
    assert!((r.decode_tokens_per_s.unwrap() - 1.0 / t).abs() < 1e-9);
    // compute-bound from B = (W/bw) / (f/C − k/bw), W the weights read once a step
    // (16,060,522,496 less the table, 15,009,849,344), k a sequence's bytes (its KV,
    // 144,179,200, and its row, 8,192): W/bw = 0.015009849344 s; f/C = 1.5586033664e-4;
    // k/bw = 1.44187392e-4; B = 0.015009849344 / 1.167294464e-5 = 1285.9 → 1286
    assert_eq!(r.compute_bound_batch, Some(1286));
}

#[test]
fn decode_runs_at_the_measured_matrix_vector_product_of_its_size() {
    let w = InferenceShape {
        batch: 1,
        prompt: 1000,
        generate: 200,
    };
    let mut m = machine(80.0, 1000.0, 100.0);
    let ceiling = inference(&llama_8b(), BF16, w, &m);
    assert_eq!(ceiling.decode_bandwidth_bps, m.bandwidth_bps);
    let gemv = |elements: f64, gbps: f64, case: &str| Gemv {
        weight_elements: elements,
        bandwidth_bps: gbps * 1e9,
        source: format!("measured: {case}"),
    };
    // Llama-3.1-8B's FFN matrix is 4096 × 14336 = 58,720,256 weights: of these the
    // 14336 × 4096 product applies (the largest not above it), not the one above it
    m.gemv = vec![
        gemv(16_777_216.0, 900.0, "gemm/x/bf16.f32/1x4096x4096"),
        gemv(58_720_256.0, 800.0, "gemm/x/bf16.f32/1x14336x4096"),
        gemv(67_108_864.0, 950.0, "gemm/x/bf16.f32/1x8192x8192"),
    ];
    let r = inference(&llama_8b(), BF16, w, &m);
    let bw = r.decode_bandwidth_bps.as_ref().unwrap();
    assert_eq!(bw.value, 800e9);
    assert!(
        bw.source
            .starts_with("measured: gemm/x/bf16.f32/1x14336x4096, the matrix-vector"),
        "{}",
        bw.source
    );
    // the same bytes at 0.8 of the ceiling's rate: 1.25 × the time, and the compute-bound
    // batch from that rate: (W/bw) / (f/C − k/bw) with bw = 8e11:
    // 0.02007565312 / (1.5586033664e-4 − 1.80224e-4) < 0: never
    assert_eq!(r.decode_step.bytes, ceiling.decode_step.bytes);
    let ratio = r.decode_step.time_s.unwrap() / ceiling.decode_step.time_s.unwrap();
    assert!((ratio - 1.25).abs() < 1e-12, "{ratio}");
    assert_eq!(r.compute_bound_batch, None);
    assert_eq!(ceiling.compute_bound_batch, Some(1286));
    // why never: a sequence's 1.5586e10 FLOP over its 1.441874e8 bytes (KV cache and
    // embedding row), 108.1 FLOP/byte, under the ridge at 800 GB/s (125) and above the
    // one at 1000 (100)
    let limit = r.decode_intensity_limit.unwrap();
    assert!(
        (limit - 15_586_033_664.0 / 144_187_392.0).abs() < 1e-9,
        "{limit}"
    );
    assert_eq!(ceiling.decode_intensity_limit, r.decode_intensity_limit);
    assert_eq!(r.decode_ridge, Some(125.0));
    assert_eq!(ceiling.decode_ridge, Some(100.0));
    // 80 GiB less 16,060,522,496 bytes of weights, 69,838,823,424, over one sequence's
    // 1200 tokens of KV (157,286,400 bytes) and its workspace (1000 × (2 × 4096 + 4096 +
    // 2 × 1024 + 2 × 14336) × 2 + 128256 × 4 = 86,529,024): / 243,815,424 = 286.4
    assert_eq!(r.max_batch, Some(286));
    assert_eq!(ceiling.max_batch, Some(286));
    // whatever batch was asked for; and past it, nothing fits
    let seven = inference(&llama_8b(), BF16, InferenceShape { batch: 7, ..w }, &m);
    assert_eq!(seven.max_batch, Some(286));
    let big = inference(&llama_8b(), BF16, InferenceShape { batch: 287, ..w }, &m);
    assert_eq!((big.max_batch, big.memory.fits), (Some(286), Some(false)));
    let at = inference(&llama_8b(), BF16, InferenceShape { batch: 286, ..w }, &m);
    assert_eq!(at.memory.fits, Some(true));
    // prefill keeps the DRAM ceiling
    assert_eq!(r.prefill, ceiling.prefill);
    // a model smaller than every measured product takes the smallest
    let small = Model {
        hidden: 768,
        ffn: 3072,
        ..llama_8b()
    };
    let r = inference(&small, BF16, w, &m);
    assert_eq!(r.decode_bandwidth_bps.unwrap().value, 900e9);
}

/// Weight-only quantization narrows the layers' matrices: the embedding, the output
/// projection and the norms stay 16-bit.
#[test]
fn quantized_weights_leave_the_embeddings_16_bit() {
    let model = llama_8b();
    // layers' matrices 32 × 218,103,808 = 6,979,321,856 at ½ byte; the other
    // 1,050,939,392 (two 128256 × 4096 tables, 65 norms) at 2
    assert_eq!(model.weight_bytes(Dtype::Int4), 5_591_539_712.0);
    assert_eq!(model.weight_bytes(Dtype::Bf16), 2.0 * 8_030_261_248.0);
    assert_eq!(model.weight_bytes(Dtype::Fp32), 4.0 * 8_030_261_248.0);
    let w = InferenceShape {
        batch: 1,
        prompt: 512,
        generate: 128,
    };
    let int4 = Dtypes {
        weights: Dtype::Int4,
        ..BF16
    };
    let r = inference(&model, int4, w, &machine(24.0, 1000.0, 165.0));
    assert_eq!(r.memory.weights_bytes, 5_591_539_712.0);
}

/// Mistral 7B v0.1's layers attend through a 4096-token window and keep at most that many
/// tokens of KV cache (the paper's rolling buffer).
#[test]
fn a_sliding_window_bounds_the_kv_cache_and_the_attention() {
    let model = presets::find("mistral-7b-v0.1").unwrap();
    let w = InferenceShape {
        batch: 4,
        prompt: 8192,
        generate: 512,
    };
    let r = inference(&model, BF16, w, &machine(141.0, 4800.0, 989.5));
    // 4 sequences × 32 layers × 4096 tokens × 4096 bytes (K and V of 1024, bf16): 2 GiB,
    // not the 8704 tokens' 4.25
    assert_eq!(r.memory.kv_cache_bytes, 2.0 * 1024.0 * 1024.0 * 1024.0);
    // a step reads the weights (less the table but 4 rows) and 4 windows of KV:
    // 14,483,464,192 − 262,144,000 + 32,768 + 4 × 536,870,912 = 16,368,836,608
    assert_eq!(r.decode_step.bytes, 16_368_836_608.0);
    // within the window, all of it; past it, the window; between, the mean of the two
    assert_eq!(model.mean_layer_tokens(1000.0, 200.0), 32.0 * 1100.0);
    assert_eq!(model.mean_layer_tokens(8192.0, 512.0), 32.0 * 4096.0);
    let mean = model.mean_layer_tokens(3000.0, 2000.0) / 32.0;
    // ((4096² − 3000²) / 2 + 904 × 4096) / 2000 = 3795.696
    assert!((mean - 3795.696).abs() < 1e-9, "{mean}");
    // a query past the window sees 4096 keys: 4096 × 8192 − 4096² / 2 pairs a layer
    assert_eq!(model.causal_pairs(8192.0), 32.0 * 25_165_824.0);
    assert_eq!(model.causal_pairs(2048.0), 32.0 * 2048.0 * 2048.0 / 2.0);
    let unwindowed = Model {
        sliding_window: None,
        window_layers: 0,
        ..model.clone()
    };
    let full = inference(&unwindowed, BF16, w, &machine(141.0, 4800.0, 989.5));
    assert_eq!(full.memory.kv_cache_bytes, 4.0 * 32.0 * 8704.0 * 4096.0);
    let bad = Model {
        window_layers: 33,
        ..model
    };
    assert!(bad.check().unwrap_err().contains("33 of 32 layers"));
}

#[test]
fn a_70b_model_in_bf16_does_not_fit_in_24_gb() {
    let m = machine(24.0, 1000.0, 165.0);
    let w = InferenceShape {
        batch: 1,
        prompt: 512,
        generate: 128,
    };
    let model = presets::find("llama-3.1-70b").unwrap();
    let r = inference(&model, BF16, w, &m);
    assert_eq!(r.memory.fits, Some(false));
    assert_eq!(r.bound, Bound::Capacity);
    assert!(r.memory.weights_bytes > 140e9, "{}", r.memory.weights_bytes);
}

#[test]
fn mixed_precision_adam_is_16_bytes_and_checkpointing_costs_a_forward() {
    assert_eq!(bytes_per_param(Optimizer::Adam, true), 16.0);
    assert_eq!(bytes_per_param(Optimizer::Sgd, true), 12.0);
    assert_eq!(bytes_per_param(Optimizer::Adam, false), 16.0);
    assert_eq!(bytes_per_param(Optimizer::Sgd, false), 12.0);
    let m = machine(80.0, 2000.0, 300.0);
    let mut w = TrainingShape {
        batch: 1,
        seq: 2048,
        optimizer: Optimizer::Adam,
        mixed_precision: true,
        checkpointing: false,
    };
    let model = llama_8b();
    let plain = training(&model, w, &m);
    w.checkpointing = true;
    let ckpt = training(&model, w, &m);
    assert_eq!(plain.states_bytes, 16.0 * 8_030_261_248.0);
    // three forward passes against four: a forward pass is 2 × N × T (7,504,658,432 ×
    // 2048 × 2 = 30,739,080,937,472) and causal attention, 4 × 4096 × 32 layers × 2048² / 2
    // = 1,099,511,627,776: 3 × 31,838,592,565,248 = 95,515,777,695,744 (Megatron's count,
    // Narayanan et al. eq. 3, counts every pair: 9.88e13)
    assert_eq!(plain.step.flops, 95_515_777_695_744.0);
    assert_eq!(ckpt.step.flops / plain.step.flops, 4.0 / 3.0);
    // activations per layer and token: norms 4 × 4096, Q and the attention's output
    // 2 × 4096, K and V 2 × 1024, the FFN's four 14336-wide tensors: 83,968 bf16 values
    // and 32 fp32 softmax statistics, 168,064 bytes; × 2048 tokens = 344,195,072 a layer;
    // × 32 layers + logits 2048 × 128256 × 4 = 11,014,242,304 + 1,050,673,152
    assert_eq!(plain.activations_bytes, 12_064_915_456.0);
    // checkpointed: 32 × 2048 × 4096 × 2 + 344,195,072 + 1,050,673,152 = 1,931,739,136
    assert_eq!(ckpt.activations_bytes, 1_931_739_136.0);
    // fp32 training keeps them in fp32: 83,968 × 4 + 128 = 336,000 bytes a token and layer
    w.checkpointing = false;
    w.mixed_precision = false;
    let fp32 = training(&model, w, &m);
    assert_eq!(
        fp32.activations_bytes,
        32.0 * 2048.0 * 336_000.0 + 1_050_673_152.0
    );
    // 128.5 GB of states do not fit in 80 GiB: capacity-bound, no batch fits
    assert_eq!(plain.fits, Some(false));
    assert_eq!(plain.bound, Bound::Capacity);
    assert_eq!(plain.max_batch, Some(0));
}

/// Tokens a step are counted in f64: batch × sequence can pass `u64::MAX` (it wrapped to 0
/// in a release build, and the step then held no arithmetic).
#[test]
fn a_training_step_past_u64_tokens_still_counts_them() {
    let m = machine(80.0, 2000.0, 300.0);
    let w = TrainingShape {
        batch: 1 << 32,
        seq: 1 << 32,
        optimizer: Optimizer::Adam,
        mixed_precision: true,
        checkpointing: false,
    };
    let model = llama_8b();
    let t = training(&model, w, &m);
    let tokens = 2f64.powi(64);
    // 2^32 sequences of 2^32 tokens: the attention's pairs are 2^32 × 32 × 2^64 / 2
    let attention = 4.0 * 4096.0 * 2f64.powi(32) * 16.0 * 2f64.powi(64);
    let flops = 3.0 * (2.0 * model.matmul_params() * tokens + attention);
    assert!(
        (t.step.flops / flops - 1.0).abs() < 1e-12,
        "{}",
        t.step.flops
    );
    assert_eq!(t.step.bound, Bound::Compute);
    let rate = t.tokens_per_s.unwrap();
    assert!(
        (rate / (300e12 * tokens / flops) - 1.0).abs() < 1e-9,
        "{rate}"
    );
}

#[test]
fn bad_shapes_are_refused_with_the_reason() {
    let mut m = llama_8b();
    m.kv_heads = 5;
    assert_eq!(
        m.check().unwrap_err(),
        "32 heads cannot share 5 KV heads evenly: heads must be a multiple of KV heads"
    );
    m.kv_heads = 8;
    m.layers = 0;
    assert_eq!(
        m.check().unwrap_err(),
        "the model's layers is 0; it must be at least 1"
    );
}
