//! The host backend's compute cases: FMA peaks with SIMD (AVX-512F, AVX2+FMA or NEON, detected
//! at run time, with a portable fallback), the arithmetic-intensity sweep's kernels (its case is
//! [`super::sweep_case`]), and the core clock
//! measured from a timed chain of dependent adds, which with the SIMD width and the core's FMA
//! datapath ([`crate::specs::theory::host_fma_x86`]) gives the theoretical peak.
//!
//! The kernels compute exactly what the GPU kernels compute (the maps of
//! [`crate::cases::arith`]), so the same gold checks apply. Each worker of the pinned pool runs
//! its own registers (peaks) or its own slice of the arrays (sweep), which it first-touched.
//! The sweep stores as the STREAM cases do (`super::stream`): streaming stores on x86
//! where its arrays are larger than the last-level cache, so its memory-bound points move the
//! bytes they count, each block first asking for the next block's input (`prefetcht0`), and
//! plain stores elsewhere. With plain stores a DRAM point moved 3 bytes for the 2 it counts.
//! On a 2-vCPU Intel Xeon VM (2026-12-03, 4 interleaved rounds, f32 medians against plain
//! stores): k = 0 … 8 read and wrote 1.8–2.1× faster (k = 1: 24.2 → 46.4 GB/s, the STREAM
//! write's roof), k = 16, 32, 64 1.64×, 1.29×, 1.22×; k = 128 0.91× (0.87–0.99 by round),
//! k = 512 1.08×, k = 256 and 1024 unchanged; i32 at k = 16 1.54×, k = 32 and 64 unchanged.
//! Streaming stores without the prefetch gained less (k = 1 1.63×) and lost at k = 128 too;
//! the prefetch with plain stores fell far short (k = 1: 27.1 GB/s against 45.5 with streaming
//! stores, 4 rounds).
//!
//! This module must not print; it returns [`crate::Error`]s. `unsafe` here is limited to
//! calling SIMD kernels on the instruction set that was detected, and to raw pointers into
//! slices each worker owns.

use super::arena::Arena;
use super::clock::{higher_clock, measure_pool_mhz};
use super::cpu;
use super::pool::Pool;
use super::sweep_case::SweepCase;
use super::PreparedCase;
use crate::cases::{arith, intensity, peak, Case, Family, Precision, Verdict};
use crate::specs::theory::{self, HostFma};
use crate::{Error, Result};

/// The precisions with host peak kernels.
pub const PEAK_PRECISIONS: [Precision; 3] = [Precision::F64, Precision::F32, Precision::I32];
/// The precisions of the host sweep. (The host has no f16/bf16 FMA instruction: emulating one
/// would measure an emulator.)
pub const SWEEP_PRECISIONS: [Precision; 3] = [Precision::F32, Precision::F64, Precision::I32];

/// FMA steps per chain per loop trip of the host peak kernels.
pub const UNROLL: u64 = 2;

/// The SIMD instruction set the host kernels use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simd {
    Avx512,
    Avx2,
    Neon,
    /// Scalar `mul_add`; no theoretical peak is claimed for it.
    Portable,
}

impl Simd {
    /// The widest instruction set this CPU runs, detected at run time.
    pub fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("fma") {
                return Simd::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Simd::Avx2;
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if std::arch::is_aarch64_feature_detected!("neon") {
                return Simd::Neon;
            }
        }
        Simd::Portable
    }

    /// Register width in bits.
    pub fn bits(self) -> u32 {
        match self {
            Simd::Avx512 => 512,
            Simd::Avx2 => 256,
            Simd::Neon => 128,
            Simd::Portable => 64,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Simd::Avx512 => "AVX-512F",
            Simd::Avx2 => "AVX2+FMA",
            Simd::Neon => "NEON",
            Simd::Portable => "scalar",
        }
    }

    /// Independent accumulators of the peak kernels: at least FMA latency × FMA pipes (4 × 2 on
    /// current cores), and as many as the register file holds beside the two constants.
    pub fn chains(self) -> usize {
        match self {
            Simd::Avx512 | Simd::Neon => 16,
            Simd::Avx2 => 12,
            Simd::Portable => 8,
        }
    }

    /// Whether the set has streaming (non-temporal) stores here: x86's `vmovntps` and kin.
    /// Rust has no streaming-store intrinsic for NEON, and the portable loop stores plainly.
    pub fn streams(self) -> bool {
        matches!(self, Simd::Avx512 | Simd::Avx2)
    }

    /// Elements of `precision` in one register.
    pub fn lanes(self, precision: Precision) -> usize {
        match self {
            Simd::Portable => 1,
            _ => (self.bits() / (arith::word_bytes(precision) as u32 * 8)) as usize,
        }
    }
}

/// The FMA datapath of this machine's cores, from `/proc/cpuinfo`.
pub fn host_fma() -> Option<HostFma> {
    host_fma_from_cpuinfo(&cpu::cpuinfo())
}

/// The FMA datapath named by a `/proc/cpuinfo` text: x86 by vendor, family and model; Arm by
/// `CPU implementer` and `CPU part` (hexadecimal). `None` for a core the tables do not know.
pub fn host_fma_from_cpuinfo(cpuinfo: &str) -> Option<HostFma> {
    let field = |key: &str| cpu::cpuinfo_field(cpuinfo, key);
    if let Some(vendor) = field("vendor_id") {
        let family = field("cpu family")?.parse().ok()?;
        let model = field("model")?.parse().ok()?;
        let flags = field("flags").unwrap_or_default();
        let brand = field("model name").unwrap_or_default();
        return theory::host_fma_x86(&vendor, family, model, &brand, &flags);
    }
    cpu::arm_core_of(cpuinfo)?.1
}

/// The theoretical FMA peak of `threads` cores at `clock_mhz` with `simd`, for f32 and f64;
/// `None` for integers, for the scalar fallback and for a core the table does not know.
pub fn theory_gflops(
    threads: usize,
    clock_mhz: f64,
    simd: Simd,
    precision: Precision,
    fma: Option<HostFma>,
) -> Option<f64> {
    if simd == Simd::Portable || !matches!(precision, Precision::F32 | Precision::F64) {
        return None;
    }
    let element_bits = arith::word_bytes(precision) as u32 * 8;
    Some(theory::host_peak_gflops(
        threads as u32,
        clock_mhz,
        fma?,
        simd.bits(),
        element_bits,
    ))
}

// ---------------------------------------------------------------------------------------------
// Kernels

/// Generates an instruction set's peak and sweep kernels for one element type from the
/// operations given (pasted in place, so every one is compiled with the target feature).
macro_rules! simd_kernels {
    (
        $name:ident, feature $feature:literal, elem $elem:ty, vec $vec:ty,
        lanes $lanes:expr, chains $chains:expr, block $block:expr,
        splat |$sx:ident| $splat:expr,
        fma |$x:ident, $a:ident, $b:ident| $fma:expr,
        load |$p:ident| $load:expr,
        store |$q:ident, $v:ident| $store:expr,
        stream |$sq:ident, $sv:ident| $stream:expr,
        fence $fence:expr,
        scalar |$y:ident, $ya:ident, $yb:ident| $scalar:expr
    ) => {
        pub mod $name {
            #[allow(unused_imports)]
            #[cfg(target_arch = "aarch64")]
            use std::arch::aarch64::*;
            #[allow(unused_imports)]
            #[cfg(target_arch = "x86_64")]
            use std::arch::x86_64::*;

            pub const LANES: usize = $lanes;
            pub const CHAINS: usize = $chains;

            /// `CHAINS` accumulators, all lanes of chain c starting at `starts[c]`, each stepped
            /// `iterations × UNROLL` times; writes chain c's lanes to `out[c·LANES ..]`.
            ///
            /// # Safety
            /// The CPU must support the target feature; `out` holds `CHAINS × LANES` elements.
            #[target_feature(enable = $feature)]
            pub unsafe fn peak(
                iterations: u64,
                starts: &[$elem],
                a: $elem,
                b: $elem,
                out: &mut [$elem],
            ) {
                assert!(starts.len() >= CHAINS && out.len() >= CHAINS * LANES);
                let av: $vec = {
                    let $sx = a;
                    $splat
                };
                let bv: $vec = {
                    let $sx = b;
                    $splat
                };
                let mut acc = [av; CHAINS];
                for c in 0..CHAINS {
                    let $sx = starts[c];
                    acc[c] = $splat;
                }
                for _ in 0..iterations {
                    for _ in 0..super::UNROLL {
                        for c in 0..CHAINS {
                            let ($x, $a, $b) = (acc[c], av, bv);
                            acc[c] = $fma;
                        }
                    }
                }
                for c in 0..CHAINS {
                    let ($q, $v) = (out.as_mut_ptr().add(c * LANES), acc[c]);
                    $store;
                }
            }

            /// `output[i] = f^k(input[i])` for `n` elements, `$block` registers in flight.
            /// With `streaming`, the whole vectors are stored with the set's streaming
            /// (non-temporal) stores, fenced before it returns; plain stores otherwise.
            ///
            /// # Safety
            /// The CPU must support the target feature; both pointers cover `n` elements; with
            /// `streaming`, `output` is aligned to the vector.
            #[target_feature(enable = $feature)]
            pub unsafe fn sweep(
                k: u32,
                a: $elem,
                b: $elem,
                input: *const $elem,
                output: *mut $elem,
                n: usize,
                streaming: bool,
            ) {
                const BLOCK: usize = $block;
                let av: $vec = {
                    let $sx = a;
                    $splat
                };
                let bv: $vec = {
                    let $sx = b;
                    $splat
                };
                let mut i = 0;
                while i + BLOCK * LANES <= n {
                    let mut v = [av; BLOCK];
                    for j in 0..BLOCK {
                        let $p = input.add(i + j * LANES);
                        v[j] = $load;
                    }
                    if streaming {
                        // the next block's input asked for now, before this block's streaming
                        // stores hold the line fill buffers its loads would otherwise wait on
                        crate::backend::host::pool::prefetch(
                            input.wrapping_add(i + BLOCK * LANES),
                            BLOCK * LANES * std::mem::size_of::<$elem>(),
                        );
                    }
                    for _ in 0..k {
                        for j in 0..BLOCK {
                            let ($x, $a, $b) = (v[j], av, bv);
                            v[j] = $fma;
                        }
                    }
                    if streaming {
                        for j in 0..BLOCK {
                            let ($sq, $sv) = (output.add(i + j * LANES), v[j]);
                            $stream;
                        }
                    } else {
                        for j in 0..BLOCK {
                            let ($q, $v) = (output.add(i + j * LANES), v[j]);
                            $store;
                        }
                    }
                    i += BLOCK * LANES;
                }
                if streaming {
                    $fence;
                }
                while i < n {
                    let mut $y = *input.add(i);
                    for _ in 0..k {
                        let ($ya, $yb) = (a, b);
                        $y = $scalar;
                    }
                    *output.add(i) = $y;
                    i += 1;
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::UNROLL;

    simd_kernels!(avx512_f32, feature "avx512f,fma", elem f32, vec __m512, lanes 16, chains 16,
        block 16,
        splat |s| _mm512_set1_ps(s),
        fma |x, a, b| _mm512_fmadd_ps(x, a, b),
        load |p| _mm512_loadu_ps(p),
        store |q, v| _mm512_storeu_ps(q, v),
        stream |q, v| _mm512_stream_ps(q, v),
        fence _mm_sfence(),
        scalar |y, a, b| y.mul_add(a, b));
    simd_kernels!(avx512_f64, feature "avx512f,fma", elem f64, vec __m512d, lanes 8, chains 16,
        block 16,
        splat |s| _mm512_set1_pd(s),
        fma |x, a, b| _mm512_fmadd_pd(x, a, b),
        load |p| _mm512_loadu_pd(p),
        store |q, v| _mm512_storeu_pd(q, v),
        stream |q, v| _mm512_stream_pd(q, v),
        fence _mm_sfence(),
        scalar |y, a, b| y.mul_add(a, b));
    simd_kernels!(avx512_i32, feature "avx512f,fma", elem i32, vec __m512i, lanes 16,
        chains 16, block 16,
        splat |s| _mm512_set1_epi32(s),
        fma |x, a, b| _mm512_add_epi32(_mm512_mullo_epi32(x, a), b),
        load |p| _mm512_loadu_si512(p.cast()),
        store |q, v| _mm512_storeu_si512(q.cast(), v),
        stream |q, v| _mm512_stream_si512(q.cast(), v),
        fence _mm_sfence(),
        scalar |y, a, b| y.wrapping_mul(a).wrapping_add(b));
    simd_kernels!(avx2_f32, feature "avx2,fma", elem f32, vec __m256, lanes 8, chains 12,
        block 12,
        splat |s| _mm256_set1_ps(s),
        fma |x, a, b| _mm256_fmadd_ps(x, a, b),
        load |p| _mm256_loadu_ps(p),
        store |q, v| _mm256_storeu_ps(q, v),
        stream |q, v| _mm256_stream_ps(q, v),
        fence _mm_sfence(),
        scalar |y, a, b| y.mul_add(a, b));
    simd_kernels!(avx2_f64, feature "avx2,fma", elem f64, vec __m256d, lanes 4, chains 12,
        block 12,
        splat |s| _mm256_set1_pd(s),
        fma |x, a, b| _mm256_fmadd_pd(x, a, b),
        load |p| _mm256_loadu_pd(p),
        store |q, v| _mm256_storeu_pd(q, v),
        stream |q, v| _mm256_stream_pd(q, v),
        fence _mm_sfence(),
        scalar |y, a, b| y.mul_add(a, b));
    simd_kernels!(avx2_i32, feature "avx2,fma", elem i32, vec __m256i, lanes 8, chains 12,
        block 12,
        splat |s| _mm256_set1_epi32(s),
        fma |x, a, b| _mm256_add_epi32(_mm256_mullo_epi32(x, a), b),
        load |p| _mm256_loadu_si256(p.cast()),
        store |q, v| _mm256_storeu_si256(q.cast(), v),
        stream |q, v| _mm256_stream_si256(q.cast(), v),
        fence _mm_sfence(),
        scalar |y, a, b| y.wrapping_mul(a).wrapping_add(b));
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::UNROLL;

    simd_kernels!(neon_f32, feature "neon", elem f32, vec float32x4_t, lanes 4, chains 16,
        block 16,
        splat |s| vdupq_n_f32(s),
        fma |x, a, b| vfmaq_f32(b, x, a),
        load |p| vld1q_f32(p),
        store |q, v| vst1q_f32(q, v),
        stream |q, v| vst1q_f32(q, v),
        fence (),
        scalar |y, a, b| y.mul_add(a, b));
    simd_kernels!(neon_f64, feature "neon", elem f64, vec float64x2_t, lanes 2, chains 16,
        block 16,
        splat |s| vdupq_n_f64(s),
        fma |x, a, b| vfmaq_f64(b, x, a),
        load |p| vld1q_f64(p),
        store |q, v| vst1q_f64(q, v),
        stream |q, v| vst1q_f64(q, v),
        fence (),
        scalar |y, a, b| y.mul_add(a, b));
    simd_kernels!(neon_i32, feature "neon", elem i32, vec int32x4_t, lanes 4, chains 16,
        block 16,
        splat |s| vdupq_n_s32(s),
        fma |x, a, b| vmlaq_s32(b, x, a),
        load |p| vld1q_s32(p),
        store |q, v| vst1q_s32(q, v),
        stream |q, v| vst1q_s32(q, v),
        fence (),
        scalar |y, a, b| y.wrapping_mul(a).wrapping_add(b));
}

/// Element types of the host compute kernels, with the portable kernels.
pub trait HostElement: Copy + Send + Sync + Default + 'static {
    const PRECISION: Precision;
    fn from_bits(bits: u64) -> Self;
    fn to_bits(self) -> u64;
    fn fma(x: Self, a: Self, b: Self) -> Self;
}

impl HostElement for f32 {
    const PRECISION: Precision = Precision::F32;
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
    fn fma(x: Self, a: Self, b: Self) -> Self {
        x.mul_add(a, b)
    }
}

impl HostElement for f64 {
    const PRECISION: Precision = Precision::F64;
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn fma(x: Self, a: Self, b: Self) -> Self {
        x.mul_add(a, b)
    }
}

impl HostElement for i32 {
    const PRECISION: Precision = Precision::I32;
    fn from_bits(bits: u64) -> Self {
        bits as u32 as i32
    }
    fn to_bits(self) -> u64 {
        self as u32 as u64
    }
    fn fma(x: Self, a: Self, b: Self) -> Self {
        x.wrapping_mul(a).wrapping_add(b)
    }
}

/// The portable peak kernel: `chains` scalar accumulators.
fn portable_peak<T: HostElement>(iterations: u64, starts: &[T], a: T, b: T, out: &mut [T]) {
    const CHAINS: usize = 8;
    let mut acc = [T::default(); CHAINS];
    acc.copy_from_slice(&starts[..CHAINS]);
    for _ in 0..iterations {
        for _ in 0..UNROLL {
            for x in acc.iter_mut() {
                *x = T::fma(*x, a, b);
            }
        }
    }
    out[..CHAINS].copy_from_slice(&acc);
}

/// The portable sweep kernel, eight independent elements at a time.
fn portable_sweep<T: HostElement>(k: u32, a: T, b: T, input: &[T], output: &mut [T]) {
    for (ins, outs) in input.chunks(8).zip(output.chunks_mut(8)) {
        let mut v = [T::default(); 8];
        v[..ins.len()].copy_from_slice(ins);
        for _ in 0..k {
            for x in v.iter_mut() {
                *x = T::fma(*x, a, b);
            }
        }
        outs.copy_from_slice(&v[..outs.len()]);
    }
}

/// Invokes `$call!(module)` with the SIMD kernel module for (`$simd`, `$precision`), or
/// evaluates `$fallback` where this build has none: the one table of which kernel runs where.
macro_rules! for_kernel {
    ($simd:expr, $precision:expr, $call:ident, $fallback:expr) => {
        match ($simd, $precision) {
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx512, Precision::F32) => $call!(x86::avx512_f32),
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx512, Precision::F64) => $call!(x86::avx512_f64),
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx512, Precision::I32) => $call!(x86::avx512_i32),
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx2, Precision::F32) => $call!(x86::avx2_f32),
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx2, Precision::F64) => $call!(x86::avx2_f64),
            #[cfg(target_arch = "x86_64")]
            (Simd::Avx2, Precision::I32) => $call!(x86::avx2_i32),
            #[cfg(target_arch = "aarch64")]
            (Simd::Neon, Precision::F32) => $call!(arm::neon_f32),
            #[cfg(target_arch = "aarch64")]
            (Simd::Neon, Precision::F64) => $call!(arm::neon_f64),
            #[cfg(target_arch = "aarch64")]
            (Simd::Neon, Precision::I32) => $call!(arm::neon_i32),
            _ => $fallback,
        }
    };
}

/// Dispatches a peak run to `simd`'s kernel for `T`. `out` holds `chains × lanes` elements.
fn run_peak<T: HostElement>(simd: Simd, iterations: u64, starts: &[T], a: T, b: T, out: &mut [T]) {
    macro_rules! call {
        ($m:path) => {{
            use $m as k;
            // SAFETY: `simd` was detected on this CPU (Simd::detect) before it was chosen;
            // `out` was sized from Simd::chains × Simd::lanes, which equal the kernel's
            // CHAINS × LANES (checked in tests); the element types match by PRECISION.
            unsafe {
                k::peak(
                    iterations,
                    std::slice::from_raw_parts(starts.as_ptr().cast(), starts.len()),
                    std::mem::transmute_copy(&a),
                    std::mem::transmute_copy(&b),
                    std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), out.len()),
                )
            }
        }};
    }
    for_kernel!(
        simd,
        T::PRECISION,
        call,
        portable_peak(iterations, starts, a, b, out)
    )
}

/// Dispatches a sweep over one worker's slice to `simd`'s kernel for `T`, with streaming
/// stores when `streaming` and the output is aligned to the vector (else plain ones).
pub(super) fn run_sweep<T: HostElement>(
    simd: Simd,
    k: u32,
    a: T,
    b: T,
    input: &[T],
    output: &mut [T],
    streaming: bool,
) {
    let n = input.len().min(output.len());
    let streaming = streaming
        && simd.streams()
        && (output.as_ptr() as usize).is_multiple_of(simd.bits() as usize / 8);
    macro_rules! call {
        ($m:path) => {{
            use $m as kern;
            // SAFETY: as in `run_peak`; both pointers cover n elements of the matching type,
            // and with `streaming` the output is aligned to the vector (checked above).
            unsafe {
                kern::sweep(
                    k,
                    std::mem::transmute_copy(&a),
                    std::mem::transmute_copy(&b),
                    input.as_ptr().cast(),
                    output.as_mut_ptr().cast(),
                    n,
                    streaming,
                )
            }
        }};
    }
    for_kernel!(
        simd,
        T::PRECISION,
        call,
        portable_sweep(k, a, b, &input[..n], &mut output[..n])
    )
}

/// Chains of the kernel `run_peak` picks for (`simd`, `T`).
fn kernel_chains(simd: Simd) -> usize {
    simd.chains()
}

// ---------------------------------------------------------------------------------------------
// Cases

/// Operations one host peak launch should do per thread: about 10 ms at 64 flops per cycle and
/// 3 GHz, so pool dispatch (tens of µs) stays far below 1 % of a launch. An unoptimised (debug)
/// build runs the SIMD intrinsics as calls, a hundred times slower, and measures nothing worth
/// keeping: it gets short launches so the test suite stays quick.
const PEAK_FLOPS_PER_THREAD: f64 = if cfg!(debug_assertions) { 2e7 } else { 2e9 };

/// The host peak case of `precision` for `threads` workers using `simd`.
pub fn peak_case(precision: Precision, threads: usize, simd: Simd) -> Case {
    let elements = (threads * simd.chains() * simd.lanes(precision)) as u64;
    let target =
        PEAK_FLOPS_PER_THREAD * threads as f64 / if simd == Simd::Portable { 16.0 } else { 1.0 };
    let iterations = peak::iterations_for(precision, elements, UNROLL, target);
    peak::case(precision, elements, iterations, UNROLL)
}

/// The host sweep cases over `n_for(precision)` words per array.
pub fn sweep_cases(n_for: impl Fn(Precision) -> u64) -> Vec<Case> {
    intensity::cases(&SWEEP_PRECISIONS, n_for)
}

/// Where the host's theory and clock come from, shared by its compute cases.
#[derive(Clone, Copy, Debug)]
pub struct HostCompute {
    pub simd: Simd,
    pub fma: Option<HostFma>,
}

impl HostCompute {
    pub fn detect() -> HostCompute {
        HostCompute {
            simd: Simd::detect(),
            fma: host_fma(),
        }
    }

    /// The theoretical peak of `threads` workers in `precision` at `clock_mhz` on this SIMD set
    /// and FMA datapath ([`theory_gflops`]).
    pub fn peak_gflops(&self, threads: usize, precision: Precision, clock_mhz: f64) -> Option<f64> {
        theory_gflops(threads, clock_mhz, self.simd, precision, self.fma)
    }

    /// What the theoretical peak assumes, for the record: `theory: 2 FMA pipes x 512 bits`.
    pub fn theory_note(&self) -> String {
        match (self.simd, self.fma) {
            (Simd::Portable, _) => "no theory for scalar code".to_string(),
            (_, Some(f)) => format!(
                "theory: {} FMA pipes x {} bits per core",
                f.pipes,
                f.datapath_bits.min(self.simd.bits())
            ),
            (_, None) => "no theory: this CPU's FMA datapath is not in specs::theory".to_string(),
        }
    }
}

/// Prepares a host compute case (peak or sweep) of any precision the host runs. `llc_bytes`:
/// the last-level cache; a sweep whose arrays are larger together stores streaming where the
/// set can, as the STREAM cases do.
pub fn prepare<'p>(
    pool: &'p Pool,
    arena: &Arena,
    compute: HostCompute,
    llc_bytes: u64,
    case: &Case,
) -> Result<Box<dyn PreparedCase + 'p>> {
    match (case.family, case.precision) {
        (Family::Peak, Precision::F32) => Ok(Box::new(PeakCase::<f32>::new(pool, compute, case)?)),
        (Family::Peak, Precision::F64) => Ok(Box::new(PeakCase::<f64>::new(pool, compute, case)?)),
        (Family::Peak, Precision::I32) => Ok(Box::new(PeakCase::<i32>::new(pool, compute, case)?)),
        (Family::Intensity, Precision::F32) => Ok(Box::new(SweepCase::<f32>::new(
            pool, arena, compute, llc_bytes, case,
        )?)),
        (Family::Intensity, Precision::F64) => Ok(Box::new(SweepCase::<f64>::new(
            pool, arena, compute, llc_bytes, case,
        )?)),
        (Family::Intensity, Precision::I32) => Ok(Box::new(SweepCase::<i32>::new(
            pool, arena, compute, llc_bytes, case,
        )?)),
        _ => Err(Error::Usage(format!(
            "the host backend has no kernel for {}",
            case.id()
        ))),
    }
}

/// A peak case: every worker runs the chains in registers and stores them at the end.
struct PeakCase<'p, T: HostElement> {
    pool: &'p Pool,
    compute: HostCompute,
    iterations: u64,
    /// Chain c's lanes at `[(worker · chains + c) · lanes ..]`.
    out: Vec<T>,
    clock_mhz: Option<f64>,
}

impl<'p, T: HostElement> PeakCase<'p, T> {
    fn new(pool: &'p Pool, compute: HostCompute, case: &Case) -> Result<Self> {
        let simd = compute.simd;
        let per_worker = simd.chains() * simd.lanes(T::PRECISION);
        if case.elements != (pool.threads() * per_worker) as u64 {
            return Err(Error::Usage(format!(
                "{} was planned for another thread count or instruction set",
                case.id()
            )));
        }
        let iterations = peak::iterations_of(case, UNROLL).map_err(Error::Usage)?;
        let poison = T::from_bits(0x7FC0_DEAD_7FC0_DEAD);
        Ok(PeakCase {
            pool,
            compute,
            iterations,
            out: vec![poison; pool.threads() * per_worker],
            clock_mhz: None,
        })
    }
}

impl<T: HostElement> PreparedCase for PeakCase<'_, T> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let simd = self.compute.simd;
        let chains = kernel_chains(simd);
        let per_worker = chains * simd.lanes(T::PRECISION);
        let map = peak::map(T::PRECISION);
        let (a, b) = (T::from_bits(map.a), T::from_bits(map.b));
        let starts: Vec<T> = (0..chains as u64)
            .map(|c| T::from_bits(peak::chain_start(T::PRECISION, c)))
            .collect();
        let iterations = self.iterations;
        let kernel = |mine: &mut [T]| run_peak(simd, iterations, &starts, a, b, mine);
        self.pool
            .time_in_slices(&mut self.out, per_worker, reps, "peak kernel", kernel)
    }

    fn verify(&mut self) -> Result<Verdict> {
        let simd = self.compute.simd;
        let (chains, lanes) = (kernel_chains(simd), simd.lanes(T::PRECISION));
        let steps = self.iterations * UNROLL;
        let want: Vec<u64> = (0..chains as u64)
            .map(|c| peak::chain_value(T::PRECISION, c, steps))
            .collect();
        Ok(arith::check_words(
            T::PRECISION,
            self.out.len(),
            |i| self.out[i].to_bits(),
            |i| want[i / lanes % chains],
        ))
    }

    fn launch_note(&self) -> String {
        format!(
            "{} pinned threads, {} x {} chains, {}",
            self.pool.threads(),
            self.compute.simd.name(),
            kernel_chains(self.compute.simd),
            self.compute.theory_note()
        )
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        // Measured right after the samples, on the same pinned cores, while they are still at
        // the clock the kernel left them at; asked again, read again (see the trait).
        self.clock_mhz = higher_clock(self.clock_mhz, measure_pool_mhz(self.pool));
        self.clock_mhz
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        self.compute
            .peak_gflops(self.pool.threads(), T::PRECISION, clock_mhz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::pool::allowed_cpus;

    #[test]
    fn chain_and_lane_counts_match_the_kernels() {
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(Simd::Avx512.chains(), x86::avx512_f32::CHAINS);
            assert_eq!(Simd::Avx512.lanes(Precision::F32), x86::avx512_f32::LANES);
            assert_eq!(Simd::Avx512.lanes(Precision::F64), x86::avx512_f64::LANES);
            assert_eq!(Simd::Avx512.lanes(Precision::I32), x86::avx512_i32::LANES);
            assert_eq!(Simd::Avx2.chains(), x86::avx2_f64::CHAINS);
            assert_eq!(Simd::Avx2.lanes(Precision::F64), x86::avx2_f64::LANES);
        }
        assert_eq!(Simd::Portable.lanes(Precision::F64), 1);
    }

    /// NEON is part of every AArch64 Linux target, so an aarch64 build must run NEON kernels.
    #[test]
    #[cfg(target_arch = "aarch64")]
    fn aarch64_runs_neon() {
        assert_eq!(Simd::detect(), Simd::Neon);
        assert_eq!(Simd::Neon.chains(), arm::neon_f32::CHAINS);
        assert_eq!(Simd::Neon.lanes(Precision::F32), arm::neon_f32::LANES);
        assert_eq!(Simd::Neon.lanes(Precision::F64), arm::neon_f64::LANES);
        assert_eq!(Simd::Neon.lanes(Precision::I32), arm::neon_i32::LANES);
    }

    #[test]
    fn fma_datapath_from_cpuinfo_text() {
        let zen5 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n";
        let fma = host_fma_from_cpuinfo(zen5).unwrap();
        assert_eq!((fma.pipes, fma.datapath_bits), (2, 512));
        // /proc/cpuinfo on a Grace (Neoverse V2) core: no vendor_id, no model name.
        let grace = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve2\n\
                     CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n\
                     CPU part\t: 0xd4f\nCPU revision\t: 0\n";
        let fma = host_fma_from_cpuinfo(grace).unwrap();
        assert_eq!((fma.pipes, fma.datapath_bits), (4, 128));
        assert_eq!(
            theory_gflops(72, 3000.0, Simd::Neon, Precision::F64, Some(fma)),
            Some(72.0 * 3.0 * 4.0 * 2.0 * 2.0)
        );
        // An Intel core that reports a client model number (a VM's) but AMX: two 512-bit pipes.
        let vm = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\n\
                  flags\t\t: fpu avx512f avx512_fp16 amx_tile amx_int8\n";
        let fma = host_fma_from_cpuinfo(vm).unwrap();
        assert_eq!((fma.pipes, fma.datapath_bits), (2, 512));
        let fma = host_fma_from_cpuinfo(&vm.replace(" amx_tile", "")).unwrap();
        assert_eq!((fma.pipes, fma.datapath_bits), (2, 256));
        // A bare Cascade Lake: its brand string decides between one and two 512-bit units.
        let cascade_lake = |name: &str| {
            format!(
                "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n\
                 model name\t: Intel(R) Xeon(R) {name} CPU @ 2.30GHz\nflags\t\t: fpu avx512f\n"
            )
        };
        let fma = host_fma_from_cpuinfo(&cascade_lake("Gold 6252")).unwrap();
        assert_eq!((fma.pipes, fma.datapath_bits), (2, 512));
        let fma = host_fma_from_cpuinfo(&cascade_lake("Gold 5218")).unwrap();
        assert_eq!((fma.pipes, fma.datapath_bits), (2, 256));
        let unknown_part = grace.replace("0xd4f", "0xfff");
        assert_eq!(host_fma_from_cpuinfo(&unknown_part), None);
        assert_eq!(host_fma_from_cpuinfo("processor\t: 0\n"), None);
    }

    /// Every instruction set this CPU has, and the portable one, compute the same bits as the
    /// reference, for the peak and for the sweep on odd sizes, the sweep with plain stores (a
    /// last-level cache larger than its arrays) and streaming ones (a smaller one) alike; the
    /// sweep's note names streaming stores exactly where the set has them and they were asked
    /// for.
    #[test]
    fn every_available_kernel_matches_the_reference() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let detected = Simd::detect();
        let mut sets = vec![Simd::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                sets.push(Simd::Avx2);
            }
        }
        if !sets.contains(&detected) {
            sets.push(detected);
        }
        for simd in sets {
            let compute = HostCompute { simd, fma: None };
            for p in PEAK_PRECISIONS {
                let mut case = peak_case(p, pool.threads(), simd);
                // a short launch: 50 trips
                let elements = case.elements;
                case = peak::case(p, elements, 50, UNROLL);
                let mut prepared =
                    prepare(&pool, &Arena::new(1 << 30), compute, u64::MAX, &case).unwrap();
                prepared.run(2).unwrap();
                let v = prepared.verify().unwrap();
                assert!(v.valid, "{} {}: {}", simd.name(), case.id(), v.detail);
            }
            for p in SWEEP_PRECISIONS {
                for (k, n) in [(0u32, 1001u64), (1, 17), (7, 4099), (64, 777)] {
                    let case = intensity::case(p, k, n);
                    for llc_bytes in [u64::MAX, 0] {
                        let mut prepared =
                            prepare(&pool, &Arena::new(1 << 30), compute, llc_bytes, &case)
                                .unwrap();
                        prepared.run(2).unwrap();
                        let v = prepared.verify().unwrap();
                        let streams = llc_bytes == 0 && simd.streams();
                        assert!(
                            v.valid,
                            "{} {} n={n} streaming {streams}: {}",
                            simd.name(),
                            case.id(),
                            v.detail
                        );
                        assert_eq!(
                            prepared.launch_note().contains("streaming stores"),
                            streams,
                            "{}",
                            prepared.launch_note()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn unrun_sweep_is_invalid_and_theory_needs_a_known_core() {
        let pool = Pool::new(vec![allowed_cpus()[0]]);
        let compute = HostCompute::detect();
        let case = intensity::case(Precision::F32, 4, 100);
        let mut prepared = prepare(&pool, &Arena::new(1 << 30), compute, u64::MAX, &case).unwrap();
        assert!(!prepared.verify().unwrap().valid);
        let zen5 = theory::host_fma_x86("AuthenticAMD", 0x1A, 2, "", "");
        assert_eq!(
            theory_gflops(2, 4000.0, Simd::Avx512, Precision::F32, zen5),
            Some(512.0)
        );
        assert_eq!(
            theory_gflops(2, 4000.0, Simd::Avx512, Precision::I32, zen5),
            None
        );
        assert_eq!(
            theory_gflops(2, 4000.0, Simd::Portable, Precision::F32, zen5),
            None
        );
        assert_eq!(
            theory_gflops(2, 4000.0, Simd::Avx512, Precision::F32, None),
            None
        );
    }
}
