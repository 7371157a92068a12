//! The host's STREAM kernels: one explicit SIMD loop per kernel, instruction set and element
//! type, the same shape for all of them.
//!
//! Each worker runs [`StreamSimd::run`] over its own chunk of the arrays (the caller splits
//! them, `super::stream_case`). The loop moves four vectors per array per iteration with
//! unaligned loads, and stores that are either
//!
//! - **streaming** (`vmovntps`/`vmovntpd`, then `sfence`) on x86 when the arrays are larger than
//!   the last-level cache (the DRAM cases): a line written is not read first, so the DRAM moves
//!   exactly the bytes a row counts. Each step then asks for its inputs' lines `AHEAD_BYTES` (1
//!   KiB) ahead (`prefetcht0`) before it stores. Most likely streaming stores hold line fill
//!   buffers until their lines reach memory, and the next loads, which need those buffers too,
//!   waited behind them: in the sweep (`host::compute`) the same prefetch with plain stores fell far
//!   short of it with streaming stores. On a 2-vCPU Intel Xeon VM (2026-12-03, 6 interleaved
//!   rounds) copy rose from 34.8 to 47.8 GB/s, scale 34.7 → 43.7, add 41.0 → 44.7, triad 40.9 →
//!   47.0 (f32 medians; f64 alike), with read, dot and write, which have no such stores, unchanged;
//!   or
//! - **plain** (`vmovups`/`vmovupd`, `st1`) elsewhere: in cache, and on NEON, where Rust has no
//!   streaming-store intrinsic. A plain store to a line not in cache reads it first (write
//!   allocate), so a DRAM copy with plain stores moves 3 × 8n bytes for the 2 × 8n it counts:
//!   what the compiled loops of McCalpin's STREAM and BabelStream's OpenMP model do (gcc emits
//!   no streaming stores for them), about two thirds of the rate streaming stores reach.
//!
//! What a row counts is STREAM's convention, not the traffic: bytes of the arrays read and
//! written once each (copy and scale 2 × 8n or 2 × 4n, add and triad 3 ×, dot 2 ×, read and
//! write 1 ×), never a write-allocate read. `scale` is `c = s·a`, `add` `c = a + b`,
//! `triad` `c = a + s·b` (fused where the set has FMA: the checker's integer inputs make it
//! exact either way), `write` `c = s`; the reductions `dot` (Σ a·b) and `read` (Σ a) keep four
//! vector accumulators and add their horizontal sum to an f64 once per
//! [`SUM_BLOCK`](super::stream_case) elements, so every partial sum is an integer the element type
//! holds exactly. `read` takes its chunk as four parts of whole blocks, read in step with one
//! accumulator each (the rest as `dot`), so four sequential streams are in flight where it had
//! one (`dot` reads two arrays): on a 2-vCPU Intel Xeon VM (2026-12-04, 4 interleaved rounds
//! against the build before, per-round ratio) f32 1.13× (1.11–1.13, 28.7 → 32.3 GB/s median),
//! f64 1.08× (1.07–1.10); `dot` with four parts per array was no faster in a C test of its own
//! (1, 2 and 4 parts: 29.2, 27.9, 30.3 GB/s, medians of 6 rounds).
//!
//! Sets: AVX-512F (16 f32 / 8 f64 lanes), AVX (8 / 4; AVX2 machines run it), NEON (4 / 2),
//! detected at run time ([`super::compute::Simd`]); a portable scalar loop elsewhere.
//!
//! This module must not print. `unsafe` here is limited to SIMD intrinsics on the set that was
//! detected, over ranges the caller proves in bounds.

use super::compute::Simd;
use super::HostFloat;
use crate::cases::stream::StreamKernel;
use crate::cases::Precision;

/// Vectors per array one loop iteration moves.
const UNROLL: usize = 4;

/// How far ahead of its loads a kernel with streaming stores asks for its inputs' lines.
const AHEAD_BYTES: usize = 1024;

/// One kernel over `n` elements: inputs `a` (and `b`), output `c`, the scalar `s` (scale and
/// triad's factor, write's value). Returns the sum of a reduction (`dot`, `read`), else 0.
///
/// # Safety
/// The CPU supports the set the function was built for; `a`, `b` and `c` hold `n` elements
/// where the kernel reads or writes them (unused pointers are not touched) and `c` overlaps
/// neither input.
pub type Kernel<T> =
    unsafe fn(StreamKernel, usize, T, *const T, *const T, *mut T, usize, bool) -> f64;

/// The STREAM kernels of one set for one element type.
#[derive(Clone, Copy)]
pub struct StreamSimd<T> {
    kernel: Kernel<T>,
    /// What the loop is built from, for the row's note: `AVX-512F`, `AVX2`, `NEON` or `scalar`.
    pub name: &'static str,
    /// Whether the set has streaming stores here (x86's `vmovntps`/`vmovntpd`; NEON and the
    /// scalar loop store plainly).
    pub streams: bool,
}

impl<T> StreamSimd<T> {
    /// Runs `kernel` over `n` elements (see [`Kernel`]); the reductions add their terms in
    /// blocks of `block` elements (a multiple of every set's unrolled step, 64). With
    /// `streaming`, on a set that has them ([`StreamSimd::streams`]) and an output aligned to
    /// the vector, stores are streaming (non-temporal), fenced before it returns.
    ///
    /// # Safety
    /// As [`Kernel`], except the set: [`stream_simd`] picked one this CPU supports.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn run(
        &self,
        kernel: StreamKernel,
        n: usize,
        s: T,
        a: *const T,
        b: *const T,
        c: *mut T,
        block: usize,
        streaming: bool,
    ) -> f64 {
        (self.kernel)(kernel, n, s, a, b, c, block, streaming)
    }
}

/// Stores the `UNROLL` vectors of `$v` to `$c` from element `$i` on: streaming stores when
/// `$streaming`, else plain ones (one store block for every map kernel of [`stream_kernel`]).
macro_rules! store_unrolled {
    (
        $v:ident, $c:ident, $i:ident, $lanes:expr, $streaming:ident,
        |$nq:ident, $nv:ident| $nstore:expr,
        |$q:ident, $sv:ident| $store:expr
    ) => {
        for (u, x) in $v.iter().enumerate() {
            if $streaming {
                let ($nq, $nv) = ($c.add($i + u * $lanes), *x);
                $nstore;
            } else {
                let ($q, $sv) = ($c.add($i + u * $lanes), *x);
                $store;
            }
        }
    };
}

/// Generates one set's kernel function for one element type.
macro_rules! stream_kernel {
    (
        $name:ident, feature $feature:literal, elem $elem:ty, vec $vec:ty, lanes $lanes:expr,
        zero $zero:expr,
        splat |$sx:ident| $splat:expr,
        load |$p:ident| $load:expr,
        store |$q:ident, $v:ident| $store:expr,
        stream |$nq:ident, $nv:ident| $nstore:expr,
        fence $fence:expr,
        add |$aa:ident, $ab:ident| $add:expr,
        mul |$ma:ident, $mb:ident| $mul:expr,
        fma |$fa:ident, $fb:ident, $fc:ident| $fma:expr,
        sum |$hv:ident| $hsum:expr
    ) => {
        /// # Safety
        /// As [`super::Kernel`], on a CPU with the target feature.
        #[target_feature(enable = $feature)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name(
            kernel: StreamKernel,
            n: usize,
            s: $elem,
            a: *const $elem,
            b: *const $elem,
            c: *mut $elem,
            block: usize,
            streaming: bool,
        ) -> f64 {
            const STEP: usize = super::UNROLL * $lanes;
            // streaming stores need whole vectors at aligned addresses: else plain ones
            let streaming = streaming && (c as usize) % std::mem::size_of::<$vec>() == 0;
            let whole = n / STEP * STEP;
            let sv: $vec = {
                let $sx = s;
                $splat
            };
            // With streaming stores, each step asks for its inputs' lines AHEAD_BYTES ahead
            // before its stores hold the line fill buffers (as the sweep does, host::compute).
            macro_rules! ahead {
                ($x:ident, $at:expr) => {
                    if streaming {
                        crate::backend::host::pool::prefetch(
                            $x.wrapping_add($at).wrapping_byte_add(super::AHEAD_BYTES),
                            STEP * std::mem::size_of::<$elem>(),
                        );
                    }
                };
            }
            let mut i = 0;
            match kernel {
                StreamKernel::Copy => {
                    while i < whole {
                        ahead!(a, i);
                        let mut v: [$vec; super::UNROLL] = [$zero; super::UNROLL];
                        for (u, x) in v.iter_mut().enumerate() {
                            let $p = a.add(i + u * $lanes);
                            *x = $load;
                        }
                        store_unrolled!(
                            v,
                            c,
                            i,
                            $lanes,
                            streaming,
                            |$nq, $nv| $nstore,
                            |$q, $v| $store
                        );
                        i += STEP;
                    }
                    for j in whole..n {
                        *c.add(j) = *a.add(j);
                    }
                }
                StreamKernel::Scale => {
                    while i < whole {
                        ahead!(a, i);
                        let mut v: [$vec; super::UNROLL] = [$zero; super::UNROLL];
                        for (u, x) in v.iter_mut().enumerate() {
                            let $p = a.add(i + u * $lanes);
                            let ($ma, $mb) = (sv, $load);
                            *x = $mul;
                        }
                        store_unrolled!(
                            v,
                            c,
                            i,
                            $lanes,
                            streaming,
                            |$nq, $nv| $nstore,
                            |$q, $v| $store
                        );
                        i += STEP;
                    }
                    for j in whole..n {
                        *c.add(j) = s * *a.add(j);
                    }
                }
                StreamKernel::Add => {
                    while i < whole {
                        ahead!(a, i);
                        ahead!(b, i);
                        let mut v: [$vec; super::UNROLL] = [$zero; super::UNROLL];
                        for (u, x) in v.iter_mut().enumerate() {
                            let $p = a.add(i + u * $lanes);
                            let $aa = $load;
                            let $p = b.add(i + u * $lanes);
                            let $ab = $load;
                            *x = $add;
                        }
                        store_unrolled!(
                            v,
                            c,
                            i,
                            $lanes,
                            streaming,
                            |$nq, $nv| $nstore,
                            |$q, $v| $store
                        );
                        i += STEP;
                    }
                    for j in whole..n {
                        *c.add(j) = *a.add(j) + *b.add(j);
                    }
                }
                StreamKernel::Triad => {
                    while i < whole {
                        ahead!(a, i);
                        ahead!(b, i);
                        let mut v: [$vec; super::UNROLL] = [$zero; super::UNROLL];
                        for (u, x) in v.iter_mut().enumerate() {
                            let $p = a.add(i + u * $lanes);
                            let $fc = $load;
                            let $p = b.add(i + u * $lanes);
                            let ($fa, $fb) = (sv, $load);
                            *x = $fma;
                        }
                        store_unrolled!(
                            v,
                            c,
                            i,
                            $lanes,
                            streaming,
                            |$nq, $nv| $nstore,
                            |$q, $v| $store
                        );
                        i += STEP;
                    }
                    for j in whole..n {
                        *c.add(j) = s.mul_add(*b.add(j), *a.add(j));
                    }
                }
                StreamKernel::Write => {
                    let v: [$vec; super::UNROLL] = [sv; super::UNROLL];
                    while i < whole {
                        store_unrolled!(
                            v,
                            c,
                            i,
                            $lanes,
                            streaming,
                            |$nq, $nv| $nstore,
                            |$q, $v| $store
                        );
                        i += STEP;
                    }
                    for j in whole..n {
                        *c.add(j) = s;
                    }
                }
                StreamKernel::Dot | StreamKernel::Read => {
                    let dot = kernel == StreamKernel::Dot;
                    let mut total = 0.0f64;
                    let mut start = 0;
                    if !dot {
                        // read: UNROLL parts of whole blocks, read in step, one accumulator
                        // each, so as many sequential streams are in flight (dot has two
                        // already); each part's block adds to the total on its own
                        let part = n / super::UNROLL / block * block;
                        let mut off = 0;
                        while off < part {
                            let mut acc: [$vec; super::UNROLL] = [$zero; super::UNROLL];
                            let mut j = off;
                            while j < off + block {
                                for (u, x) in acc.iter_mut().enumerate() {
                                    let $p = a.add(u * part + j);
                                    let ($aa, $ab) = ($load, *x);
                                    *x = $add;
                                }
                                j += $lanes;
                            }
                            for x in acc {
                                let $hv = x;
                                let sum: $elem = $hsum;
                                total += sum as f64;
                            }
                            off += block;
                        }
                        start = super::UNROLL * part;
                    }
                    while start < n {
                        let end = (start + block).min(n);
                        let stop = start + (end - start) / STEP * STEP;
                        let mut acc: [$vec; super::UNROLL] = [$zero; super::UNROLL];
                        let mut j = start;
                        while j < stop {
                            for (u, x) in acc.iter_mut().enumerate() {
                                let $p = a.add(j + u * $lanes);
                                let term = $load;
                                *x = if dot {
                                    let $p = b.add(j + u * $lanes);
                                    let ($fa, $fb, $fc) = (term, $load, *x);
                                    $fma
                                } else {
                                    let ($aa, $ab) = (term, *x);
                                    $add
                                };
                            }
                            j += STEP;
                        }
                        let mut part: $elem = 0.0;
                        for x in acc {
                            let $hv = x;
                            part += $hsum;
                        }
                        for t in stop..end {
                            part += if dot {
                                *a.add(t) * *b.add(t)
                            } else {
                                *a.add(t)
                            };
                        }
                        total += part as f64;
                        start = end;
                    }
                    return total;
                }
            }
            if streaming {
                // the streaming stores are seen before the barrier that ends the repetition
                $fence;
            }
            0.0
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::StreamKernel;
    use std::arch::x86_64::*;

    stream_kernel!(avx512_f32, feature "avx512f", elem f32, vec __m512, lanes 16,
        zero _mm512_setzero_ps(),
        splat |s| _mm512_set1_ps(s),
        load |p| _mm512_loadu_ps(p),
        store |q, v| _mm512_storeu_ps(q, v),
        stream |q, v| _mm512_stream_ps(q, v),
        fence _mm_sfence(),
        add |a, b| _mm512_add_ps(a, b),
        mul |a, b| _mm512_mul_ps(a, b),
        fma |a, b, c| _mm512_fmadd_ps(a, b, c),
        sum |v| _mm512_reduce_add_ps(v));
    stream_kernel!(avx512_f64, feature "avx512f", elem f64, vec __m512d, lanes 8,
        zero _mm512_setzero_pd(),
        splat |s| _mm512_set1_pd(s),
        load |p| _mm512_loadu_pd(p),
        store |q, v| _mm512_storeu_pd(q, v),
        stream |q, v| _mm512_stream_pd(q, v),
        fence _mm_sfence(),
        add |a, b| _mm512_add_pd(a, b),
        mul |a, b| _mm512_mul_pd(a, b),
        fma |a, b, c| _mm512_fmadd_pd(a, b, c),
        sum |v| _mm512_reduce_add_pd(v));
    stream_kernel!(avx_f32, feature "avx2,fma", elem f32, vec __m256, lanes 8,
    zero _mm256_setzero_ps(),
    splat |s| _mm256_set1_ps(s),
    load |p| _mm256_loadu_ps(p),
    store |q, v| _mm256_storeu_ps(q, v),
    stream |q, v| _mm256_stream_ps(q, v),
    fence _mm_sfence(),
    add |a, b| _mm256_add_ps(a, b),
    mul |a, b| _mm256_mul_ps(a, b),
    fma |a, b, c| _mm256_fmadd_ps(a, b, c),
    sum |v| {
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), v);
        lanes.iter().sum::<f32>()
    });
    stream_kernel!(avx_f64, feature "avx2,fma", elem f64, vec __m256d, lanes 4,
    zero _mm256_setzero_pd(),
    splat |s| _mm256_set1_pd(s),
    load |p| _mm256_loadu_pd(p),
    store |q, v| _mm256_storeu_pd(q, v),
    stream |q, v| _mm256_stream_pd(q, v),
    fence _mm_sfence(),
    add |a, b| _mm256_add_pd(a, b),
    mul |a, b| _mm256_mul_pd(a, b),
    fma |a, b, c| _mm256_fmadd_pd(a, b, c),
    sum |v| {
        let mut lanes = [0f64; 4];
        _mm256_storeu_pd(lanes.as_mut_ptr(), v);
        lanes.iter().sum::<f64>()
    });
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::StreamKernel;
    use std::arch::aarch64::*;

    stream_kernel!(neon_f32, feature "neon", elem f32, vec float32x4_t, lanes 4,
        zero vdupq_n_f32(0.0),
        splat |s| vdupq_n_f32(s),
        load |p| vld1q_f32(p),
        store |q, v| vst1q_f32(q, v),
        stream |q, v| vst1q_f32(q, v),
        fence (),
        add |a, b| vaddq_f32(a, b),
        mul |a, b| vmulq_f32(a, b),
        fma |a, b, c| vfmaq_f32(c, a, b),
        sum |v| vaddvq_f32(v));
    stream_kernel!(neon_f64, feature "neon", elem f64, vec float64x2_t, lanes 2,
        zero vdupq_n_f64(0.0),
        splat |s| vdupq_n_f64(s),
        load |p| vld1q_f64(p),
        store |q, v| vst1q_f64(q, v),
        stream |q, v| vst1q_f64(q, v),
        fence (),
        add |a, b| vaddq_f64(a, b),
        mul |a, b| vmulq_f64(a, b),
        fma |a, b, c| vfmaq_f64(c, a, b),
        sum |v| vaddvq_f64(v));
}

/// The portable loop: the same kernels on scalars, for CPUs without a detected set.
///
/// # Safety
/// As [`Kernel`].
#[allow(clippy::too_many_arguments)]
unsafe fn portable<T: HostFloat>(
    kernel: StreamKernel,
    n: usize,
    s: T,
    a: *const T,
    b: *const T,
    c: *mut T,
    block: usize,
    _streaming: bool,
) -> f64 {
    match kernel {
        StreamKernel::Copy => (0..n).for_each(|j| *c.add(j) = *a.add(j)),
        StreamKernel::Scale => (0..n).for_each(|j| *c.add(j) = s * *a.add(j)),
        StreamKernel::Add => (0..n).for_each(|j| *c.add(j) = *a.add(j) + *b.add(j)),
        StreamKernel::Triad => (0..n).for_each(|j| *c.add(j) = *a.add(j) + s * *b.add(j)),
        StreamKernel::Write => (0..n).for_each(|j| *c.add(j) = s),
        StreamKernel::Dot | StreamKernel::Read => {
            let mut total = 0.0;
            let mut start = 0;
            while start < n {
                let end = (start + block).min(n);
                let mut part = T::default();
                for j in start..end {
                    part = part
                        + if kernel == StreamKernel::Dot {
                            *a.add(j) * *b.add(j)
                        } else {
                            *a.add(j)
                        };
                }
                total += part.to_f64();
                start = end;
            }
            return total;
        }
    }
    0.0
}

/// The kernels of `simd` for `T`: the one table of which STREAM loop runs where.
pub fn stream_simd<T: HostFloat>(simd: Simd) -> StreamSimd<T> {
    macro_rules! pick {
        ($f:path, $name:expr) => {
            // SAFETY (of the transmute): T is exactly the element type of this kernel, as
            // T::PRECISION says; the function pointer types differ only in that name.
            StreamSimd {
                kernel: unsafe { std::mem::transmute::<*const (), Kernel<T>>($f as *const ()) },
                name: $name,
                streams: simd.streams(),
            }
        };
    }
    match (simd, T::PRECISION) {
        #[cfg(target_arch = "x86_64")]
        (Simd::Avx512, Precision::F32) => pick!(x86::avx512_f32, "AVX-512F"),
        #[cfg(target_arch = "x86_64")]
        (Simd::Avx512, Precision::F64) => pick!(x86::avx512_f64, "AVX-512F"),
        #[cfg(target_arch = "x86_64")]
        (Simd::Avx2, Precision::F32) => pick!(x86::avx_f32, "AVX2"),
        #[cfg(target_arch = "x86_64")]
        (Simd::Avx2, Precision::F64) => pick!(x86::avx_f64, "AVX2"),
        #[cfg(target_arch = "aarch64")]
        (Simd::Neon, Precision::F32) => pick!(arm::neon_f32, "NEON"),
        #[cfg(target_arch = "aarch64")]
        (Simd::Neon, Precision::F64) => pick!(arm::neon_f64, "NEON"),
        _ => StreamSimd {
            kernel: portable::<T>,
            name: "scalar",
            streams: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::stream;

    /// Every kernel of every set this CPU runs, and the portable one, on sizes around the
    /// unrolled step and the reduction block, against the scalar definition: outputs element
    /// for element, sums exactly; nothing outside the range is touched.
    fn kernels_match_the_definition<T: HostFloat>() {
        // (only x86 adds a set below)
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut sets = vec![Simd::Portable, Simd::detect()];
        #[cfg(target_arch = "x86_64")]
        if Simd::detect() == Simd::Avx512 {
            sets.push(Simd::Avx2);
        }
        for simd in sets {
            let k = stream_simd::<T>(simd);
            // (read's parts start at 4 blocks: 16384 elements)
            for n in [
                0usize, 1, 7, 63, 64, 65, 200, 4095, 4096, 4097, 10_000, 16_384, 16_447, 40_000,
            ] {
                let s = T::from_f64(stream::SCALAR);
                for (kernel, streaming, shift) in StreamKernel::ALL
                    .into_iter()
                    .flat_map(|k| [(k, false, 0), (k, true, 0), (k, true, 1)])
                {
                    // the kernel's own inputs (integers for the reductions)
                    let input = |array: u64| -> Vec<T> {
                        (0..n)
                            .map(|i| T::from_f64(stream::input(kernel, array, i as u64)))
                            .collect()
                    };
                    let (a, b) = (input(0), input(1));
                    // the output at a 64-byte boundary plus `shift` elements (streaming stores
                    // fall back to plain ones off the vector's alignment), one guard element
                    // past its end
                    let mut room = vec![T::poison(); n + 32];
                    let start = room.as_ptr().align_offset(64) + shift;
                    let c = &mut room[start..start + n + 1];
                    // SAFETY: a, b hold n elements, c n + 1; the set is one this CPU runs.
                    let sum = unsafe {
                        k.run(
                            kernel,
                            n,
                            s,
                            a.as_ptr(),
                            b.as_ptr(),
                            c.as_mut_ptr(),
                            4096,
                            streaming,
                        )
                    };
                    let what = format!(
                        "{} {kernel:?} n={n} streaming={streaming} shift={shift}",
                        k.name
                    );
                    assert_eq!(
                        c[n].to_f64().to_bits(),
                        T::poison().to_f64().to_bits(),
                        "{what}"
                    );
                    let want = |j: usize| -> f64 {
                        let (x, y, s) = (a[j].to_f64(), b[j].to_f64(), stream::SCALAR);
                        match kernel {
                            StreamKernel::Copy => x,
                            StreamKernel::Scale => s * x,
                            StreamKernel::Add => x + y,
                            StreamKernel::Triad => x + s * y,
                            StreamKernel::Write => stream::SCALAR,
                            StreamKernel::Dot => x * y,
                            StreamKernel::Read => x,
                        }
                    };
                    if kernel.is_reduction() {
                        let exact: f64 = (0..n).map(want).sum();
                        assert_eq!(sum, exact, "{what}");
                    } else {
                        assert_eq!(sum, 0.0, "{what}");
                        for (j, &got) in c.iter().take(n).enumerate() {
                            assert_eq!(got, T::from_f64(want(j)), "{what} at {j}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_set_computes_each_kernel_exactly_f32() {
        kernels_match_the_definition::<f32>();
    }

    #[test]
    fn every_set_computes_each_kernel_exactly_f64() {
        kernels_match_the_definition::<f64>();
    }

    /// The set the host detects is the one its STREAM rows run (not the scalar fallback).
    #[test]
    fn the_detected_set_runs() {
        let name = stream_simd::<f32>(Simd::detect()).name;
        match Simd::detect() {
            Simd::Portable => assert_eq!(name, "scalar"),
            _ => assert_ne!(name, "scalar"),
        }
    }
}
