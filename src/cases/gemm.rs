//! General matrix products (`gemm/<implementation>/<precision>/<M>x<N>x<K>`): where real
//! workloads sit on the roofline. A large square product sits far right; a decode step at batch
//! 1 is a matrix-vector product far left; the batch sweep between them shows where inference
//! stops being bandwidth-bound.
//!
//! # What is computed
//!
//! `C = A · Bᵀ`, with every matrix row-major:
//!
//! | matrix | shape | layout |
//! | --- | --- | --- |
//! | A (activations) | M × K | row-major, K contiguous |
//! | B (weights) | N × K | row-major, K contiguous: a weight as a linear layer stores it (`out_features × in_features`), so `C = A · Bᵀ` is `y = x · Wᵀ` |
//! | C (output) | M × N | row-major, N contiguous, written once (no β·C term: C is not read) |
//!
//! In BLAS terms (column-major) this is `C' = op(B') · A'` with `op = T`; for `mma.sync` it is
//! the `.row.col` operand order.
//!
//! # Work (one source of truth)
//!
//! - operations: `2·M·N·K` (one multiply and one add per multiply-add);
//! - minimum bytes: A and B read once and C written once, each in its own type ([`input_bytes`],
//!   [`output_bytes`]); what a kernel re-reads from cache does not count, as the STREAM counting
//!   leaves out write-allocate. So the intensity is the product's, not a kernel's.
//!
//! # Shapes
//!
//! - **Square**: M = N = K from 256 to 16384 ([`SQUARE`]), capped by memory (A, B and C must
//!   fit) and by time (a launch at the device's theoretical peak may last at most the planner's
//!   limit).
//! - **LLM projections**: M tokens in a batch, 1, 2, 4 … 8192 ([`BATCH`]), against the weight
//!   shapes N × K of [`WEIGHTS`], the projections of Llama 3 8B (model dimension 4096, FFN
//!   dimension 14336) and Llama 3 70B (model dimension 8192, FFN dimension 28672), from "The Llama
//!   3 Herd of Models" (Llama Team, AI @ Meta, 2024, arXiv:2407.21783, Table 3). M = 1 is one
//!   decode step (a matrix-vector product), large M a prefill.
//!
//! # Inputs and the check
//!
//! A and B hold pseudo-random non-zero small integers, ±1 … ±4 ([`input`]): exact in every
//! input type (f64, f32, tf32, bf16, f16, s8), and every product and partial sum is an integer
//! below 16·K in magnitude, exact in an f32 accumulator (and so in any order of summation) while
//! 16·K < 2^24, i.e. K < 2^20 ([`exact_accumulation`]). Then C must equal the exact product,
//! element for element, and the check ([`check`]) demands equality:
//!
//! 1. every element of C is a finite integer (poison, NaN, a half-written tile fail here);
//! 2. Freivalds' test on both sides, in exact integer arithmetic: `C·r = A·(Bᵀ·r)` and
//!    `sᵀ·C = (sᵀ·A)·Bᵀ` for pseudo-random non-zero integer vectors r and s. Any single wrong
//!    element changes one entry of each side, so the whole of C is checked in O(MN + MK + NK)
//!    operations, not O(MNK), reading C once, A twice and B once (64-bit sums: C's elements
//!    are held to what the product can give and A's and B's to the inputs first); a mismatch
//!    names its row and column, and the element there is computed exactly for the message
//!    (is / should / diff).
//!
//! Where the accumulation could not be exact ([`exact_accumulation`] false: K ≥ 2^20, or an
//! accumulator narrower than f32), the check is a relative Frobenius error against an f64
//! reference on sampled rows and columns (every element of up to [`SAMPLED_LINES`] rows and as
//! many columns, chosen spread over the matrix), at most [`frobenius_tolerance`] per type.
//!
//! Small integers toggle fewer bits than random floats, so a power-limited GPU may clock a
//! little higher here than under a real workload; the row records the clock it ran at.
//!
//! This module must not launch or time anything.

use super::{input_bits, Case, Family, Param, Precision, Verdict, Work};

/// One product's dimensions (`MxNxK`): defined with the other names a calibration shares with
/// the rows, in the calibration crate.
pub use roofprobe_calibration::Shape;

/// Our host kernel: blocked, packed SIMD ([`crate::backend::host::gemm`]).
pub const HOST_OURS: &str = "simd";
/// The host's matrix unit: bf16 on Intel AMX tiles ([`crate::backend::host::amx_gemm`]); it has
/// no reference line (the reference crate has no bf16 kernel).
pub const HOST_AMX: &str = "amx";
/// The host's reference line: the `gemm` crate (faer's kernel), a well-kept blocked GEMM.
pub const HOST_REFERENCE: &str = "gemm-crate";
/// Our GPU kernels: hand-written PTX (`kernels/gemm.ptx.in`, `kernels/gemm_simt.ptx`).
pub const GPU_OURS: &str = "ptx";
/// The GPU's reference line: cuBLAS / cuBLASLt, loaded at run time.
pub const GPU_REFERENCE: &str = "cublas";
/// Our Hopper GEMM: `wgmma` (`kernels/gemm_wgmma.ptx.in`, sm_90a), on compute capability 9.0.
pub const GPU_WGMMA: &str = "wgmma";
/// Our Hopper GEMM fed by TMA through mbarriers, with a producer warpgroup
/// (`kernels/gemm_tma.ptx.in`, sm_90a), on compute capability 9.0.
pub const GPU_TMA: &str = "tma";
/// The TMA GEMM in clusters of [`TMA_CLUSTER`] CTAs that share B's tile through TMA multicast
/// (the cluster expansion of `kernels/gemm_tma.ptx.in`), on compute capability 9.0: beside
/// `tma` in the same run, so the rows say whether the cluster helps.
pub const GPU_TMA_CLUSTER: &str = "tma-cluster";

/// The implementation an implementation's row is held against: ours against the reference that
/// runs on the same shape in the same run; `None` for a reference itself.
pub fn reference_of(kernel: &str) -> Option<&'static str> {
    match kernel {
        HOST_OURS => Some(HOST_REFERENCE),
        GPU_OURS | GPU_WGMMA | GPU_TMA | GPU_TMA_CLUSTER => Some(GPU_REFERENCE),
        _ => None,
    }
}

/// Square sides, 256 to 16384.
pub const SQUARE: [u64; 7] = [256, 512, 1024, 2048, 4096, 8192, 16384];

/// Tokens in a batch: 1, 2, 4 … 8192.
pub const BATCH: [u64; 14] = [
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
];

/// A weight shape of the batch sweep: N × K, and what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weight {
    pub n: u64,
    pub k: u64,
    pub what: &'static str,
}

/// Llama-class projections (arXiv:2407.21783, Table 3: Llama 3 8B has model dimension 4096 and
/// FFN dimension 14336; Llama 3 70B 8192 and 28672).
pub const WEIGHTS: [Weight; 5] = [
    Weight {
        n: 4096,
        k: 4096,
        what: "Llama 3 8B attention q/o projection",
    },
    Weight {
        n: 14336,
        k: 4096,
        what: "Llama 3 8B FFN gate/up projection",
    },
    Weight {
        n: 4096,
        k: 14336,
        what: "Llama 3 8B FFN down projection",
    },
    Weight {
        n: 8192,
        k: 8192,
        what: "Llama 3 70B attention q/o projection",
    },
    Weight {
        n: 28672,
        k: 8192,
        what: "Llama 3 70B FFN gate/up projection",
    },
];

/// The weight shape a shape belongs to, if it is one of the batch sweep's (a square shape
/// whose side is a weight's N = K, 4096³ and 8192³, is both).
pub fn weight_of(shape: Shape) -> Option<Weight> {
    WEIGHTS
        .into_iter()
        .find(|w| w.n == shape.n && w.k == shape.k && BATCH.contains(&shape.m))
}

/// Bytes of one element of A and B.
pub fn input_bytes(precision: Precision) -> u64 {
    match precision {
        Precision::F64 | Precision::F64F64 => 8,
        Precision::F32 | Precision::Tf32F32 | Precision::I32 => 4,
        Precision::F16F16 | Precision::F16F32 | Precision::Bf16F32 => 2,
        Precision::S8S32 | Precision::E4m3F32 | Precision::E5m2F32 | Precision::U8 => 1,
        Precision::F16x2 | Precision::Bf16x2 => 4,
    }
}

/// Bytes of one element of C: the accumulator's type (f64, f32, s32; f16 for f16.f16).
pub fn output_bytes(precision: Precision) -> u64 {
    match precision {
        Precision::F64 | Precision::F64F64 => 8,
        Precision::F16F16 => 2,
        _ => 4,
    }
}

/// Bytes of A, B and C together: the minimum a product moves, and its working set.
pub fn matrix_bytes(precision: Precision, shape: Shape) -> u64 {
    let input = input_bytes(precision);
    (shape.m * shape.k + shape.n * shape.k) * input + shape.m * shape.n * output_bytes(precision)
}

/// The case of `kernel` (an implementation) in `precision` on `shape`.
pub fn case(kernel: &str, precision: Precision, shape: Shape) -> Case {
    let input = input_bytes(precision);
    Case {
        family: Family::Gemm,
        kernel: kernel.to_string(),
        precision,
        param: Some(Param::Shape(shape)),
        elements: shape.m * shape.n,
        working_set_bytes: matrix_bytes(precision, shape),
        work: Work {
            bytes_read: (shape.m * shape.k + shape.n * shape.k) * input,
            bytes_written: shape.m * shape.n * output_bytes(precision),
            flops: shape.flops(),
        },
    }
}

/// Bytes of B (the weight, N × K) in `precision`.
pub fn weight_bytes(precision: Precision, shape: Shape) -> u64 {
    shape.n * shape.k * input_bytes(precision)
}

/// How many copies of B `case` rotates through, one per launch in turn: 1, unless planned
/// otherwise by [`rotate_weights`], which says so in the case's working set.
pub fn weight_copies(case: &Case) -> u64 {
    match case.param {
        Some(Param::Shape(s)) if case.family == Family::Gemm => {
            let extra = case
                .working_set_bytes
                .saturating_sub(matrix_bytes(case.precision, s));
            1 + extra / weight_bytes(case.precision, s).max(1)
        }
        _ => 1,
    }
}

/// Gives each GEMM case with M ≤ `max_m` whose matrices are smaller than `dram_bytes` enough
/// copies of B to rotate through that its working set reaches `dram_bytes`, as far as
/// `usable_bytes` allows; its `working_set_bytes` says how many. A square (M = N = K) is the
/// square sweep's compute point, not a weight's: it keeps its one B.
///
/// A decode step (small M) reads a weight once from memory, and that is what its point on the
/// roofline stands for. Launched again and again on one B that fits in the last-level cache,
/// it reads the cache instead: on this project's AVX-512 VM (480 MiB L3) the 64 MiB
/// `1x4096x4096` f32 product ran at 114 % of the DRAM roof (2026-12-02), and an H200's 60 MB L2
/// holds a 4096 × 4096 bf16 weight whole. The design's rule for a DRAM figure (a working set of
/// 4 × the last-level cache) applied to B through copies keeps each launch's B cold.
pub fn rotate_weights(cases: &mut [Case], max_m: u64, dram_bytes: u64, usable_bytes: u64) {
    for case in cases.iter_mut() {
        let Ok(s) = shape_of(case) else { continue };
        let (matrices, weight) = (
            matrix_bytes(case.precision, s),
            weight_bytes(case.precision, s),
        );
        let square = s.m == s.n && s.n == s.k;
        if square || s.m > max_m || matrices >= dram_bytes || weight == 0 {
            continue;
        }
        let others = matrices - weight;
        let wanted = (dram_bytes - others).div_ceil(weight);
        let room = usable_bytes.saturating_sub(others) / weight;
        let copies = wanted.min(room).max(1);
        case.working_set_bytes = others + copies * weight;
    }
}

/// The edge shapes every GEMM kernel is checked at (issue: M, N and K of 1, 17 and 129): the 27
/// products of those sides, each below, at and past a tile's edge for every kernel here.
pub fn edge_shapes() -> Vec<Shape> {
    let sides = [1, 17, 129];
    sides
        .into_iter()
        .flat_map(|m| {
            sides
                .into_iter()
                .flat_map(move |n| sides.into_iter().map(move |k| Shape::new(m, n, k)))
        })
        .collect()
}

/// The shape of a GEMM case, or why it has none.
pub fn shape_of(case: &Case) -> Result<Shape, String> {
    match case.param {
        Some(Param::Shape(s)) if case.family == Family::Gemm => Ok(s),
        _ => Err(format!(
            "{} is not a GEMM case with an MxNxK shape",
            case.id()
        )),
    }
}

/// What bounds the shapes a device plans.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Bytes of memory A, B and C together may take.
    pub usable_bytes: u64,
    /// The largest matrix any one of A, B, C may be (an explicit `--size`), if any.
    pub max_matrix_bytes: Option<u64>,
    /// Most operations one launch may do: the longest launch allowed at the theoretical peak.
    pub max_flops: f64,
}

impl Limits {
    /// Whether `shape` in `precision` fits.
    pub fn allow(&self, precision: Precision, shape: Shape) -> bool {
        let (i, o) = (input_bytes(precision), output_bytes(precision));
        let largest = (shape.m * shape.k * i)
            .max(shape.n * shape.k * i)
            .max(shape.m * shape.n * o);
        matrix_bytes(precision, shape) <= self.usable_bytes
            && self.max_matrix_bytes.is_none_or(|cap| largest <= cap)
            && shape.flops() as f64 <= self.max_flops
    }
}

/// The square sides that fit `limits` in `precision`, ascending.
pub fn square_shapes(precision: Precision, limits: &Limits) -> Vec<Shape> {
    SQUARE
        .into_iter()
        .map(Shape::square)
        .filter(|s| limits.allow(precision, *s))
        .collect()
}

/// The batch sweep that fits `limits` in `precision`: for each weight shape, M ascending.
pub fn batch_shapes(precision: Precision, limits: &Limits) -> Vec<Shape> {
    WEIGHTS
        .into_iter()
        .flat_map(|w| BATCH.into_iter().map(move |m| Shape::new(m, w.n, w.k)))
        .filter(|s| limits.allow(precision, *s))
        .collect()
}

/// Every shape of `precision` (square sweep, then the batch sweep if `batch`), each with the
/// reference implementation first and ours after it, so our row can carry its ratio to the
/// reference measured just before on the same shape.
pub fn cases(
    ours: &str,
    reference: Option<&str>,
    precision: Precision,
    limits: &Limits,
    batch: bool,
) -> Vec<Case> {
    let mut shapes = square_shapes(precision, limits);
    if batch {
        // a square whose side is a weight's N = K (4096³, 8192³) is in both sweeps: once
        for s in batch_shapes(precision, limits) {
            if !shapes.contains(&s) {
                shapes.push(s);
            }
        }
    }
    shapes
        .into_iter()
        .flat_map(|s| {
            reference
                .map(|r| case(r, precision, s))
                .into_iter()
                .chain([case(ours, precision, s)])
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The PTX kernels (kernels/gemm.ptx.in, kernels/gemm_simt.ptx)

/// The precisions of the PTX GEMM kernels, f32 accumulation and output: the tensor-core ones
/// ([`TENSOR_PRECISIONS`]) and f32 on the ALUs ([`SIMT_PRECISION`]).
pub const GPU_PRECISIONS: [Precision; 4] = [
    Precision::Bf16F32,
    Precision::F16F32,
    Precision::Tf32F32,
    SIMT_PRECISION,
];

/// The tensor-core GEMMs, expansions of [`crate::kernels::gemm::TEMPLATE`]: bf16 and f16 inputs
/// (`mma.sync.m16n8k16`), and f32 inputs rounded to tf32 (`mma.sync.m16n8k8`).
pub const TENSOR_PRECISIONS: [Precision; 3] =
    [Precision::Bf16F32, Precision::F16F32, Precision::Tf32F32];

/// The SIMT GEMM's precision (`kernels/gemm_simt.ptx`): f32 inputs, one FFMA per product, f32
/// accumulation; named `f32` like the host's f32 GEMM and held against the f32 FMA peak, not a
/// tensor peak (`roofprobe_calibration::gemm_ceiling_family`).
pub const SIMT_PRECISION: Precision = Precision::F32;

/// The SIMT kernel's block tile: 128 × 128 of C (as the tensor-core kernels' [`GPU_TILE_M`] ×
/// [`GPU_TILE_N`]), K in steps of 8, 256 threads of 8 × 8 outputs each.
pub const SIMT_TILE_K: u64 = 8;
/// The SIMT kernel's static shared memory: two stages of A's and B's tiles, transposed
/// (k-major), 8 rows of 128 + 4 f32 each (the padding keeps the transposing stores off each
/// other's banks).
pub const SIMT_SHARED_BYTES: u32 = 2 * 2 * (SIMT_TILE_K as u32) * (GPU_TILE_M as u32 + 4) * 4;

/// Block tile of the PTX kernels: 128 × 128 of C per block, K in steps of
/// [`GPU_TILE_K_BYTES`] ([`gpu_tile_k`] elements).
pub const GPU_TILE_M: u64 = 128;
pub const GPU_TILE_N: u64 = 128;
/// Bytes of one row of a K tile: four 16-byte chunks (32 16-bit elements, or 16 f32).
pub const GPU_TILE_K_BYTES: u64 = 64;
/// Threads per block (8 warps: 2 along M × 4 along N, each 64 × 32 of C).
pub const GPU_BLOCK: u32 = 256;
/// Pipeline stages, each an A and a B tile of 128 rows × [`GPU_TILE_K_BYTES`].
pub const GPU_STAGES: u32 = 4;
/// Dynamic shared memory per block: 64 KiB, above the 48 KiB default (the launch raises it).
pub const GPU_SHARED_BYTES: u32 = GPU_STAGES * 2 * (GPU_TILE_M as u32) * (GPU_TILE_K_BYTES as u32);
/// Elements the rows of A and B are padded to: the kernels' `cp.async` copies 16-byte chunks
/// from 16-byte aligned rows (8 elements are 16 bytes of bf16/f16 and 32 of f32; one rule for
/// every type).
pub const GPU_ROW_ALIGN: u64 = 8;

/// Elements of K in one tile of `precision`'s PTX kernel: 32 (bf16, f16), 16 (tf32) or 8 (the
/// SIMT f32 kernel).
pub fn gpu_tile_k(precision: Precision) -> u64 {
    if precision == SIMT_PRECISION {
        return SIMT_TILE_K;
    }
    GPU_TILE_K_BYTES / input_bytes(precision)
}

/// Dynamic shared memory a launch of `precision`'s PTX kernel asks for: the tensor-core
/// kernels' [`GPU_SHARED_BYTES`]; none for the SIMT kernel, whose 16.5 KiB are static.
pub fn gpu_dynamic_shared_bytes(precision: Precision) -> u32 {
    if precision == SIMT_PRECISION {
        0
    } else {
        GPU_SHARED_BYTES
    }
}

/// The type name of a PTX GEMM's inputs: `bf16`, `f16`, `tf32`, `f32` (SIMT).
pub fn input_type(precision: Precision) -> &'static str {
    match precision {
        Precision::Bf16F32 => "bf16",
        Precision::F16F32 => "f16",
        Precision::Tf32F32 => "tf32",
        SIMT_PRECISION => "f32",
        Precision::E4m3F32 => "e4m3",
        other => panic!("{other} has no PTX GEMM kernel"),
    }
}

/// The PTX entry of `precision`'s GEMM: `gemm_bf16_f32`, `gemm_f32_f32` (SIMT).
pub fn entry_name(precision: Precision) -> String {
    format!("gemm_{}_f32", input_type(precision))
}

/// The Hopper GEMM's input types (f32 accumulation and output).
pub const WGMMA_PRECISIONS: [Precision; 2] = [Precision::Bf16F32, Precision::F16F32];
/// The Hopper GEMM's block tile: 128 × 256 of C (two warpgroups of 64 × 256), K in steps of
/// 64 elements (128 bytes: one line of the 128-byte swizzle).
pub const WGMMA_TILE_M: u64 = 128;
pub const WGMMA_TILE_N: u64 = 256;
pub const WGMMA_TILE_K: u64 = 64;
/// Its pipeline stages, each A's 128 and B's 256 rows of 128 bytes.
pub const WGMMA_STAGES: u32 = 4;
/// Its dynamic shared memory: 4 × 48 KiB, raised above the default per function.
pub const WGMMA_SHARED_BYTES: u32 =
    WGMMA_STAGES * ((WGMMA_TILE_M + WGMMA_TILE_N) as u32) * 2 * (WGMMA_TILE_K as u32);
/// Dynamic shared memory a Hopper GEMM's launch asks for beyond what its stages (and
/// barriers) use: the toolchains promise the dynamic region 16-byte alignment only (NVIDIA/cccl
/// #5122), and the 128-byte swizzle's atoms need 1024, so each kernel rounds its base up into
/// this slack (and traps where a launch gives less).
pub const HOPPER_SHARED_SLACK: u32 = 1024;
/// The fixed bits of the Hopper GEMMs' matrix descriptors, ORed onto a tile's address / 16:
/// the 128-byte swizzle (1 in bits 62-63), SBO 1024 bytes (64 in bits 32-45), LBO 1.
pub const WGMMA_DESC_BITS: u64 = (1 << 62) | (64 << 32) | (1 << 16);
/// Threads of a Hopper GEMM block: two warpgroups.
pub const WGMMA_BLOCK: u32 = 256;

/// The PTX entry of the Hopper GEMM: `gemm_wgmma_bf16_f32`.
pub fn wgmma_entry_name(precision: Precision) -> String {
    format!("gemm_wgmma_{}_f32", input_type(precision))
}

/// Blocks of a Hopper GEMM launch: one per 128 × 256 tile of C.
pub fn wgmma_blocks(shape: Shape) -> u64 {
    shape.m.div_ceil(WGMMA_TILE_M) * shape.n.div_ceil(WGMMA_TILE_N)
}

/// Threads of a TMA GEMM block: a producer warpgroup and two consumers.
pub const TMA_BLOCK: u32 = 384;
/// Its dynamic shared memory: the 4 stages, then 4 full and 4 empty barriers.
pub const TMA_SHARED_BYTES: u32 = WGMMA_SHARED_BYTES + 64;

/// The shared-memory swizzle of the TMA GEMM's tensor maps, in bytes: one 64-element K row
/// of a tile is one 128-byte swizzle line, which the `wgmma` descriptors read (mode 1).
pub const TMA_SWIZZLE_BYTES: u32 = 128;

/// The TMA GEMM's input types (f32 accumulation and output): the Hopper GEMM's, and fp8 e4m3.
pub const TMA_PRECISIONS: [Precision; 3] =
    [Precision::Bf16F32, Precision::F16F32, Precision::E4m3F32];

/// Bytes of K in one K tile of the TMA GEMM: one 128-byte swizzle line per row.
pub const TMA_TILE_K_BYTES: u64 = 128;

/// Elements of K in one K tile of the TMA GEMM: 64 of a 16-bit type, 128 of fp8.
pub fn tma_tile_k(precision: Precision) -> u64 {
    TMA_TILE_K_BYTES / input_bytes(precision)
}

/// CTAs in a cluster of the cluster TMA GEMM ([`GPU_TMA_CLUSTER`]): two, on adjacent row
/// tiles of one column tile.
pub const TMA_CLUSTER: u64 = 2;

/// Whether `kernel` is one of the TMA GEMMs, and whether it is the cluster one.
pub fn tma_kernel(kernel: &str) -> Option<bool> {
    match kernel {
        GPU_TMA => Some(false),
        GPU_TMA_CLUSTER => Some(true),
        _ => None,
    }
}

/// The box one TMA load of the TMA GEMM copies, in elements, K first: a K tile of A's 128 rows
/// (`matrix` 0) or of B's 256 (`matrix` 1); in the cluster kernel, of half of B's (each CTA
/// loads one half and multicasts it to both).
pub fn tma_box(precision: Precision, matrix: u64, cluster: bool) -> [u32; 2] {
    let rows = match (matrix, cluster) {
        (0, _) => WGMMA_TILE_M,
        (_, false) => WGMMA_TILE_N,
        (_, true) => WGMMA_TILE_N / TMA_CLUSTER,
    };
    [tma_tile_k(precision) as u32, rows as u32]
}

/// The PTX entry of the TMA GEMM: `gemm_tma_bf16_f32`, or the cluster one's
/// `gemm_tma_cluster2_bf16_f32`.
pub fn tma_entry_name(precision: Precision, cluster: bool) -> String {
    format!("gemm_tma_{}_f32", tma_name(precision, cluster))
}

/// The middle of the TMA GEMM's names: the input type, after `cluster2_` for the cluster one.
pub fn tma_name(precision: Precision, cluster: bool) -> String {
    let ty = input_type(precision);
    if cluster {
        format!("cluster{TMA_CLUSTER}_{ty}")
    } else {
        ty.to_string()
    }
}

/// Blocks of a TMA GEMM launch: one per 128 × 256 tile of C; in the cluster kernel, whole
/// clusters (an odd count of row tiles gets a CTA past M, which loads zeros and stores nothing).
pub fn tma_blocks(shape: Shape, cluster: bool) -> u64 {
    if !cluster {
        return wgmma_blocks(shape);
    }
    let pairs = shape.m.div_ceil(WGMMA_TILE_M * TMA_CLUSTER);
    pairs * TMA_CLUSTER * shape.n.div_ceil(WGMMA_TILE_N)
}

/// Elements a PTX GEMM's rows of A and B are padded to a multiple of: [`GPU_ROW_ALIGN`], or 16
/// for fp8 inputs (16-byte rows either way for f16, bf16 and fp8; 32 for f32).
pub fn gpu_row_align(precision: Precision) -> u64 {
    if input_bytes(precision) == 1 {
        16
    } else {
        GPU_ROW_ALIGN
    }
}

/// The leading dimension (row stride, elements) the PTX kernels get for A and B: K rounded up
/// to [`gpu_row_align`]; the padding holds zeros the kernel never reads.
pub fn gpu_leading_dimension(precision: Precision, k: u64) -> u64 {
    let align = gpu_row_align(precision);
    k.div_ceil(align) * align
}

/// Blocks of a PTX GEMM launch: one per 128 × 128 tile of C.
pub fn gpu_blocks(shape: Shape) -> u64 {
    shape.m.div_ceil(GPU_TILE_M) * shape.n.div_ceil(GPU_TILE_N)
}

/// What the PTX kernels need of their operands, checked before a launch: dimensions that fit
/// the kernel's `.u32` parameters and 2^31 − 1 blocks, leading dimensions that are multiples of
/// [`gpu_row_align`] and at least K (16-byte aligned rows; the device arrays themselves are
/// 256-byte aligned).
pub fn check_operands(
    precision: Precision,
    shape: Shape,
    lda: u64,
    ldb: u64,
) -> Result<(), String> {
    let fits = |v: u64| v <= u32::MAX as u64;
    if !(fits(shape.m) && fits(shape.n) && fits(shape.k) && fits(lda) && fits(ldb)) {
        return Err(format!(
            "{shape}: dimensions past 2^32 do not fit the kernel's .u32"
        ));
    }
    if gpu_blocks(shape) > i32::MAX as u64 {
        return Err(format!(
            "{shape}: more tiles than the driver's 2^31 - 1 blocks"
        ));
    }
    let align = gpu_row_align(precision);
    for (name, ld) in [("lda", lda), ("ldb", ldb)] {
        if ld < shape.k || ld % align != 0 {
            return Err(format!(
                "{shape}: {name} = {ld} must be at least K and a multiple of {align} \
                 elements (16-byte rows for cp.async and TMA)"
            ));
        }
    }
    Ok(())
}

/// Bits of the 16-bit input element `v` (a small integer, exact) in `precision`'s input type.
pub fn input_bits16(precision: Precision, v: i64) -> u16 {
    match precision {
        Precision::Bf16F32 => super::arith::bf16_bits(v as f64),
        Precision::F16F32 => super::arith::f16_bits(v as f64),
        other => panic!("{other} has no 16-bit inputs"),
    }
}

/// Bits of the fp8 input element `v` (a small integer, ±1 … ±4: exact) in `precision`'s type.
pub fn input_bits8(precision: Precision, v: i64) -> u8 {
    assert_eq!(
        precision,
        Precision::E4m3F32,
        "{precision} has no 8-bit GEMM inputs"
    );
    // e4m3: exponent bias 7, 3 mantissa bits
    let magnitude = match v.abs() {
        0 => 0x00,
        1 => 0x38, // 2^0
        2 => 0x40, // 2^1
        3 => 0x44, // 2^1 × 1.5
        4 => 0x48, // 2^2
        _ => panic!("{v} is not a GEMM input"),
    };
    magnitude | if v < 0 { 0x80 } else { 0 }
}

/// 32-bit words of a PTX GEMM input of `rows` rows of `ld` elements: four fp8 elements or two
/// 16-bit elements per word, or one f32 (tf32 and SIMT f32 inputs are f32 in memory).
pub fn operand_words(precision: Precision, rows: u64, ld: u64) -> u64 {
    rows * ld * input_bytes(precision) / 4
}

/// Word `i` (32 bits: four fp8 or two 16-bit elements, the lower address low, or one f32) of
/// input `matrix`
/// (0: A, 1: B) of `shape`, stored row-major with row stride `ld` elements, zero in the
/// padding.
pub fn operand_word(precision: Precision, shape: Shape, matrix: u64, ld: u64, i: u64) -> u64 {
    let rows = if matrix == 0 { shape.m } else { shape.n };
    let value = |e: u64| -> Option<i64> {
        let (row, col) = (e / ld, e % ld);
        (row < rows && col < shape.k).then(|| input(matrix, row * shape.k + col))
    };
    if matches!(precision, Precision::Tf32F32 | SIMT_PRECISION) {
        // a small integer is exact in f32 and in tf32 (10-bit mantissa)
        return value(i).map_or(0, |v| (v as f32).to_bits() as u64);
    }
    if input_bytes(precision) == 1 {
        let element = |e: u64| value(e).map_or(0, |v| input_bits8(precision, v) as u64);
        return (0..4).fold(0, |w, j| w | element(4 * i + j) << (8 * j));
    }
    let element = |e: u64| value(e).map_or(0, |v| input_bits16(precision, v) as u64);
    element(2 * i) | element(2 * i + 1) << 16
}

/// Hash streams of the two inputs.
const A_ARRAY: u64 = 0x6A;
const B_ARRAY: u64 = 0x6B;

/// Element `index` of input `matrix` (0: A, 1: B): a non-zero integer ±1 … ±4.
pub fn input(matrix: u64, index: u64) -> i64 {
    let bits = input_bits(if matrix == 0 { A_ARRAY } else { B_ARRAY }, index);
    let magnitude = (bits & 3) as i64 + 1;
    if bits & 4 == 0 {
        magnitude
    } else {
        -magnitude
    }
}

/// `A[i][k]` of `shape` (row-major, K contiguous).
pub fn a_value(shape: Shape, i: u64, k: u64) -> i64 {
    input(0, i * shape.k + k)
}

/// `B[n][k]` of `shape` (row-major, K contiguous).
pub fn b_value(shape: Shape, n: u64, k: u64) -> i64 {
    input(1, n * shape.k + k)
}

/// The largest |input|.
pub const MAX_INPUT: i64 = 4;

/// Significand bits Hopper's fp8 tensor cores keep while they accumulate into f32: about 14,
/// not f32's 24 (DeepSeek-V3 technical report, arXiv:2412.19437, section 3.3.2, measured on
/// H800), so an fp8 GEMM is held to that, not to f32's rounding.
pub const FP8_ACCUMULATION_BITS: i32 = 14;

/// Whether an accumulator of `precision` sums the products of K terms exactly: every partial
/// sum is an integer below `MAX_INPUT² · K`, exact in f32 below 2^24, in f64 below 2^53, in s32
/// below 2^31, in f16 below 2^11, in fp8's accumulation below 2^14.
pub fn exact_accumulation(precision: Precision, k: u64) -> bool {
    let bound = (MAX_INPUT * MAX_INPUT) as u64 * k;
    let limit: u64 = match precision {
        Precision::F64 | Precision::F64F64 => 1 << 53,
        Precision::F16F16 => 1 << 11,
        Precision::E4m3F32 | Precision::E5m2F32 => 1 << FP8_ACCUMULATION_BITS,
        Precision::S8S32 | Precision::I32 => 1 << 31,
        _ => 1 << 24,
    };
    bound < limit
}

/// The relative Frobenius error allowed where the accumulation is not exact: a few units of the
/// accumulator's rounding times the sum's growth, √K (a random walk of rounding errors), with
/// room to spare. f16.f16: 11-bit significand; fp8 inputs [`FP8_ACCUMULATION_BITS`]; other
/// f32-accumulating types 24 bits; f64 53.
pub fn frobenius_tolerance(precision: Precision, k: u64) -> f64 {
    let unit = match precision {
        Precision::F16F16 => 2f64.powi(-11),
        Precision::E4m3F32 | Precision::E5m2F32 => 2f64.powi(-FP8_ACCUMULATION_BITS),
        Precision::F64 | Precision::F64F64 => 2f64.powi(-53),
        _ => 2f64.powi(-24),
    };
    8.0 * unit * (k.max(1) as f64).sqrt()
}

/// Rows (and columns) whose every element the Frobenius check compares.
pub const SAMPLED_LINES: u64 = 16;

/// `count` indices spread over `0..len`: the first, the last and evenly between.
pub fn spread(len: u64, count: u64) -> Vec<u64> {
    if len <= count {
        return (0..len).collect();
    }
    let mut v: Vec<u64> = (0..count)
        .map(|i| i * (len - 1) / (count - 1).max(1))
        .collect();
    v.dedup();
    v
}

/// The weights of Freivalds' test: non-zero integers ±1 … ±3 (`side` 0: over columns, 1: over
/// rows).
pub fn weight(side: u64, index: u64) -> i64 {
    let bits = input_bits(0xF0 + side, index);
    let magnitude = (bits % 3) as i64 + 1;
    if bits & 8 == 0 {
        magnitude
    } else {
        -magnitude
    }
}

/// Checks C of a product of `shape` in `precision`. `a(i, k)` and `b(n, k)` give the inputs
/// as the device received them (integers), `c(i, j)` the output element as a value.
pub fn check(
    precision: Precision,
    shape: Shape,
    a: impl Fn(u64, u64) -> i64 + Sync,
    b: impl Fn(u64, u64) -> i64 + Sync,
    c: impl Fn(u64, u64) -> f64 + Sync,
) -> Verdict {
    if exact_accumulation(precision, shape.k) {
        check_exact(shape, a, b, c)
    } else {
        check_frobenius(precision, shape, a, b, c)
    }
}

/// Input pairs [`check`] multiplies for a product of `shape` in `precision`: the exact check's
/// pass over C and its Freivalds passes (A twice; B once, two products per element), or the sampled
/// check's dot products (every element of up to [`SAMPLED_LINES`] rows and columns).
pub fn check_terms(precision: Precision, shape: Shape) -> u64 {
    let Shape { m, n, k } = shape;
    if exact_accumulation(precision, k) {
        m * n + 2 * (m + n) * k
    } else {
        (SAMPLED_LINES.min(m) * n + SAMPLED_LINES.min(n) * m) * k
    }
}

/// The exact element `(A·Bᵀ)[i][j]`.
pub fn exact_element(
    shape: Shape,
    a: &impl Fn(u64, u64) -> i64,
    b: &impl Fn(u64, u64) -> i64,
    i: u64,
    j: u64,
) -> i64 {
    (0..shape.k).map(|k| a(i, k) * b(j, k)).sum()
}

fn show(v: f64) -> String {
    if v.is_finite() && v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// 1 where `x` is no input (past ±[`MAX_INPUT`]), else 0: a count's term.
fn past_inputs(x: i64) -> u64 {
    u64::from(x.unsigned_abs() > MAX_INPUT as u64)
}

/// `Σ_row weights[row] · x(row, ·)`, the K sums of `rows` rows weighted: each thread a band of
/// rows into its own K partial sums, every row's elements read in order. With how many of the
/// elements read are no input ([`past_inputs`]).
fn weighted_rows(
    rows: u64,
    k: u64,
    weights: &[i64],
    x: &(impl Fn(u64, u64) -> i64 + Sync),
) -> (Vec<i64>, u64) {
    let bands = crate::cases::host_cores().min(rows as usize).max(1);
    let band = rows.div_ceil(bands as u64);
    let partial = crate::cases::par_map_heavy(bands, |p| {
        let (mut sums, mut past) = (vec![0i64; k as usize], 0u64);
        for row in p as u64 * band..((p as u64 + 1) * band).min(rows) {
            let w = weights[row as usize];
            for (kk, sum) in sums.iter_mut().enumerate() {
                let v = x(row, kk as u64);
                past += past_inputs(v);
                // wrapping: an element past the inputs may overflow, and fails the check anyway
                *sum = sum.wrapping_add(w.wrapping_mul(v));
            }
        }
        (sums, past)
    });
    let (mut sums, mut past) = (vec![0i64; k as usize], 0u64);
    for (part, p) in partial {
        past += p;
        for (total, p) in sums.iter_mut().zip(part) {
            *total = total.wrapping_add(p);
        }
    }
    (sums, past)
}

/// One pass over B's `n` rows of K: each row's dot product with `u` (K sums), and the K sums
/// `t = Σ_j r_j · B[j]`; with how many of B's elements are no input ([`past_inputs`]). Each
/// thread takes a band of rows and keeps its own partial `t`.
fn b_pass(
    n: u64,
    k: u64,
    r: &[i64],
    u: &[i64],
    b: &(impl Fn(u64, u64) -> i64 + Sync),
) -> (Vec<i64>, Vec<i64>, u64) {
    let bands = crate::cases::host_cores().min(n as usize).max(1);
    let band = n.div_ceil(bands as u64);
    let partial = crate::cases::par_map_heavy(bands, |p| {
        let (mut dots, mut t, mut past) = (Vec::new(), vec![0i64; k as usize], 0u64);
        for j in p as u64 * band..((p as u64 + 1) * band).min(n) {
            let (rj, mut dot) = (r[j as usize], 0i64);
            for (kk, (tk, &uk)) in t.iter_mut().zip(u).enumerate() {
                let v = b(j, kk as u64);
                past += past_inputs(v);
                // wrapping, as in `weighted_rows`
                dot = dot.wrapping_add(uk.wrapping_mul(v));
                *tk = tk.wrapping_add(rj.wrapping_mul(v));
            }
            dots.push(dot);
        }
        (dots, t, past)
    });
    let (mut dots, mut t, mut past) = (Vec::with_capacity(n as usize), vec![0i64; k as usize], 0);
    for (d, part, p) in partial {
        dots.extend(d);
        past += p;
        for (total, p) in t.iter_mut().zip(part) {
            *total = total.wrapping_add(p);
        }
    }
    (dots, t, past)
}

/// Freivalds' test on both sides in exact integer arithmetic: C·r against A·(Bᵀ·r), and sᵀ·C
/// against (sᵀ·A)·Bᵀ, with fixed weights r, s of ±1 … ±3. One wrong element of C changes both
/// (its weights are not 0); errors that cancel in one side's sum must also cancel in the
/// other's. Reads C once, A twice and B once.
///
/// The sums are `i64`: C's elements are first held to the integers the product can give (at
/// most `MAX_INPUT² · K` in size) and A's and B's to the inputs (at most `MAX_INPUT`), so no sum
/// passes `3 · MAX_INPUT² · K · max(M, N)`: 64 bits hold it while `K · max(M, N)` is under 2^57,
/// and past that the verdict says so rather than overflow.
fn check_exact(
    shape: Shape,
    a: impl Fn(u64, u64) -> i64 + Sync,
    b: impl Fn(u64, u64) -> i64 + Sync,
    c: impl Fn(u64, u64) -> f64 + Sync,
) -> Verdict {
    let Shape { m, n, k } = shape;
    let largest = (MAX_INPUT * MAX_INPUT) as u128 * 3 * m.max(n) as u128 * k as u128;
    if largest > i64::MAX as u128 {
        return Verdict::invalid(format!(
            "{shape}: too large for the exact check's 64-bit sums"
        ));
    }
    let most = (MAX_INPUT * MAX_INPUT) as f64 * k as f64;
    // Every loop below runs on all host cores (`par_map_heavy`): at 8192³ each is tens of
    // millions of generated inputs, seconds on one core, and a device check's GEMM step has a
    // minute.
    // 1. Every element an integer the product can give; C as integers, in blocks of rows, with
    // both Freivalds sums (C·r per row; sᵀ·C per column, summed over the blocks).
    const ROWS: u64 = 64;
    let r: Vec<i64> = (0..n).map(|j| weight(0, j)).collect();
    let blocks = crate::cases::par_map_heavy(m.div_ceil(ROWS) as usize, |blk| {
        let mut not_integers = 0u64;
        let mut first = Vec::new();
        let mut c_r = Vec::new();
        let mut s_c = vec![0i64; n as usize];
        for i in blk as u64 * ROWS..((blk as u64 + 1) * ROWS).min(m) {
            let s = weight(1, i);
            let mut row = 0i64;
            for (j, &r) in (0..n).zip(&r) {
                let v = c(i, j);
                if !(v == v.trunc() && v.abs() <= most) {
                    not_integers += 1;
                    if first.len() < 3 {
                        first.push((i, j, v));
                    }
                    continue;
                }
                let v = v as i64;
                row += v * r;
                s_c[j as usize] += s * v;
            }
            c_r.push(row);
        }
        (not_integers, first, c_r, s_c)
    });
    let mut not_integers = 0u64;
    let mut first = Vec::new();
    let mut c_r = Vec::with_capacity(m as usize); // C·r
    let mut s_c = vec![0i64; n as usize]; // sᵀ·C
    for (count, firsts, rows, cols) in blocks {
        not_integers += count;
        first.extend(firsts);
        c_r.extend(rows);
        for (total, part) in s_c.iter_mut().zip(cols) {
            *total += part;
        }
    }
    if not_integers > 0 {
        let first: Vec<String> = first
            .into_iter()
            .take(3)
            .map(|(i, j, v)| {
                format!(
                    "C[{i}][{j}] is {v}, should be {}",
                    exact_element(shape, &a, &b, i, j)
                )
            })
            .collect();
        return Verdict::invalid(format!(
            "{not_integers} of {} elements of C are not the integers the product gives: {}",
            m * n,
            first.join("; ")
        ));
    }
    // 2. Freivalds: u = sᵀ·A (K); then, in one pass over B, each row's u·B[j] against
    // (sᵀ·C)[j] and t = Bᵀ·r (K); then A·t against C·r. Rows are read in order, as they lie.
    let s: Vec<i64> = (0..m).map(|i| weight(1, i)).collect();
    let (u, past_a) = weighted_rows(m, k, &s, &a);
    let (u_b, t, past_b) = b_pass(n, k, &r, &u, &b);
    if past_a + past_b > 0 {
        return Verdict::invalid(format!(
            "{past_a} of {} elements of A and {past_b} of {} of B are no inputs (past ±{MAX_INPUT})",
            m * k,
            n * k
        ));
    }
    let row_ok = crate::cases::par_map_heavy(m as usize, |i| {
        let want: i64 = (0..k).map(|kk| a(i as u64, kk) * t[kk as usize]).sum();
        want == c_r[i]
    });
    let col_ok: Vec<bool> = u_b.iter().zip(&s_c).map(|(w, s)| w == s).collect();
    let bad = |ok: Vec<bool>| -> Vec<u64> {
        ok.iter()
            .enumerate()
            .filter(|(_, ok)| !**ok)
            .map(|(i, _)| i as u64)
            .collect()
    };
    let (bad_rows, bad_cols) = (bad(row_ok), bad(col_ok));
    if bad_rows.is_empty() && bad_cols.is_empty() {
        return Verdict::valid();
    }
    // Name the wrong elements where a wrong row meets a wrong column.
    let mut wrong = Vec::new();
    'found: for &i in &bad_rows {
        for &j in &bad_cols {
            let (is, should) = (c(i, j), exact_element(shape, &a, &b, i, j));
            if is != should as f64 {
                wrong.push(format!(
                    "C[{i}][{j}] is {}, should be {should}, diff {}",
                    show(is),
                    show(is - should as f64)
                ));
                if wrong.len() == 3 {
                    break 'found;
                }
            }
        }
    }
    Verdict::invalid(format!(
        "C differs from A·Bᵀ in {} of {m} rows and {} of {n} columns (Freivalds' test){}{}",
        bad_rows.len(),
        bad_cols.len(),
        if wrong.is_empty() { "" } else { ": " },
        wrong.join("; ")
    ))
}

fn check_frobenius(
    precision: Precision,
    shape: Shape,
    a: impl Fn(u64, u64) -> i64 + Sync,
    b: impl Fn(u64, u64) -> i64 + Sync,
    c: impl Fn(u64, u64) -> f64 + Sync,
) -> Verdict {
    let rows = spread(shape.m, SAMPLED_LINES);
    let cols = spread(shape.n, SAMPLED_LINES);
    let mut elements: Vec<(u64, u64)> = rows
        .iter()
        .flat_map(|&i| (0..shape.n).map(move |j| (i, j)))
        .chain(cols.iter().flat_map(|&j| (0..shape.m).map(move |i| (i, j))))
        .collect();
    elements.sort_unstable();
    elements.dedup();
    // each a K-term dot product (at 8192³, 2 × 16 lines of 8192 elements: on all host cores)
    let pairs = crate::cases::par_map_heavy(elements.len(), |e| {
        let (i, j) = elements[e];
        (exact_element(shape, &a, &b, i, j) as f64, c(i, j))
    });
    let (mut err2, mut ref2) = (0.0f64, 0.0f64);
    let mut first_bad = None;
    for (&(i, j), &(want, is)) in elements.iter().zip(&pairs) {
        if !is.is_finite() && first_bad.is_none() {
            first_bad = Some(format!("C[{i}][{j}] is {is}, should be {}", show(want)));
        }
        err2 += (is - want) * (is - want);
        ref2 += want * want;
    }
    let tolerance = frobenius_tolerance(precision, shape.k);
    let relative = if ref2 > 0.0 {
        (err2 / ref2).sqrt()
    } else {
        err2.sqrt()
    };
    match first_bad {
        Some(bad) => Verdict::invalid(bad),
        None if relative <= tolerance => Verdict::valid(),
        None => Verdict::invalid(format!(
            "relative Frobenius error {relative:.3e} on {} sampled elements is above the {tolerance:.3e} \
             allowed for {precision} with K = {}",
            elements.len(),
            shape.k
        )),
    }
}
