//! The SIMD kernels of our host GEMM ([`super::gemm`]): the element types, the micro-kernel
//! of each instruction set (AVX-512F, AVX2+FMA, NEON, a portable scalar one) with its register
//! blocking ([`Blocking`]), the dot-product tiles and the GEMV of decode steps ([`DotTile`]),
//! and the packing of slivers. `unsafe` here is limited to SIMD on the instruction set that was
//! detected and raw pointers whose bounds the callers state. The blocking, the loops around
//! these kernels and the measurements behind their shapes are the GEMM module's doc.

use super::compute::Simd;
use super::gemm::{GEMV_ROWS, SMALL_M};
use super::pool::prefetch;
use crate::cases::Precision;
/// Element types of the host GEMM.
pub trait GemmElement:
    Copy + Send + Sync + Default + PartialEq + std::ops::Add<Output = Self> + 'static
{
    const PRECISION: Precision;
    fn from_i64(v: i64) -> Self;
    fn to_f64(self) -> f64;
    fn nan() -> Self;
    fn mul_add(self, a: Self, b: Self) -> Self;
}

impl GemmElement for f32 {
    const PRECISION: Precision = Precision::F32;
    fn from_i64(v: i64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn nan() -> Self {
        f32::from_bits(0x7FC0_DEAD)
    }
    fn mul_add(self, a: Self, b: Self) -> Self {
        f32::mul_add(self, a, b)
    }
}

impl GemmElement for f64 {
    const PRECISION: Precision = Precision::F64;
    fn from_i64(v: i64) -> Self {
        v as f64
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn nan() -> Self {
        f64::from_bits(0x7FF8_0000_DEAD_BEEF)
    }
    fn mul_add(self, a: Self, b: Self) -> Self {
        f64::mul_add(self, a, b)
    }
}

/// The micro-kernel: `kc` rank-1 updates of an MR × NR tile from packed slivers `a` (kc × MR)
/// and `b` (kc × NR), stored into (or, with `accumulate`, added to) `c` with row stride `ldc`.
pub(super) type Micro<T> = unsafe fn(usize, *const T, *const T, *mut T, usize, bool);

/// Most elements one dot-product tile computes (its rows of A × its rows of B).
pub const DOT_OUT: usize = 24;

/// The dot-product kernel of one tile: `out[i·RB + j] = Σ_k a_i[k] · b_j[k]` for its `MA` rows
/// of A at `a` (stride `lda`) and `RB` rows of B at `b` (stride `ldb`), over `k` elements.
pub(super) type Dot<T> = unsafe fn(usize, *const T, usize, *const T, usize, &mut [T; DOT_OUT]);

/// The register tile of the dot-product path: `rows_a` of A's rows against `rows_b` of B's,
/// `rows_a × rows_b` vector accumulators, and the vectors of the shorter side held in registers
/// at each step of K (the other side's loaded one at a time).
pub struct DotTile<T> {
    pub rows_a: usize,
    pub rows_b: usize,
    /// The largest M the dot-product path takes (at least [`SMALL_M`]); above it the packed one.
    pub max_m: usize,
    /// Whether, above [`SMALL_M`], it also needs A's padded rows and a tile's rows of B to fit
    /// in a core's L2 (every group of A's rows is read from cache once per tile of B's rows,
    /// and B's rows once per group).
    pub a_in_l2: bool,
    pub(super) f: Dot<T>,
}

impl<T> Clone for DotTile<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DotTile<T> {}

impl<T> DotTile<T> {
    /// A's rows the tile reads for M = `m`: M padded to whole tiles.
    pub fn padded_rows(&self, m: usize) -> usize {
        self.rows_a * m.div_ceil(self.rows_a)
    }

    /// Whether the dot-product path takes a product of M = `m` and depth `k` in elements of
    /// `elem_bytes`, on cores of `l2_bytes` of L2 each: always to [`SMALL_M`], then to
    /// [`DotTile::max_m`] (while A and a tile of B fit in L2, where the tile asks for that).
    pub fn takes(&self, m: usize, k: usize, elem_bytes: usize, l2_bytes: u64) -> bool {
        let rows = (self.padded_rows(m) + self.rows_b) as u64;
        let bytes = rows.saturating_mul(k as u64 * elem_bytes as u64);
        m <= SMALL_M || (m <= self.max_m && (!self.a_in_l2 || bytes <= l2_bytes))
    }
}

/// A core's L2 where the host reports none, for [`DotTile::takes`].
pub const DEFAULT_L2_BYTES: u64 = 1 << 20;

/// The matrix-vector kernel (M = 1): `out[r] = Σ_k x[k] · b_r[k]` for `rows` rows of B at `b`
/// (stride `ldb`), over `k` elements, [`GEMV_ROWS`] rows at a time.
pub(super) type Gemv<T> = unsafe fn(usize, *const T, *const T, usize, usize, *mut T);

/// A register blocking and its kernels.
#[derive(Clone, Copy)]
pub struct Blocking<T> {
    pub mr: usize,
    pub nr: usize,
    pub(super) micro: Micro<T>,
    pub dot: DotTile<T>,
    pub(super) gemv: Gemv<T>,
    pub name: &'static str,
}

/// Generates the matrix-vector kernel for one instruction set and element type: [`GEMV_ROWS`]
/// rows of B against one load of A's row per vector, one accumulator per row (as many
/// independent FMA chains), each reduced once at the row's end.
macro_rules! gemv_kernel {
    (
        $gemv:ident, feature $feature:literal, elem $elem:ty, vec $vec:ty, lanes $lanes:expr,
        zero $zero:expr,
        load |$p:ident| $load:expr,
        fma |$fa:ident, $fb:ident, $fc:ident| $fma:expr,
        sum |$hv:ident| $hsum:expr
    ) => {
        /// # Safety
        /// The CPU supports the target feature; `x` holds `k` elements, `b` `rows` rows of `k`
        /// at stride `ldb`, `out` `rows` elements.
        #[target_feature(enable = $feature)]
        pub unsafe fn $gemv(
            k: usize,
            x: *const $elem,
            b: *const $elem,
            ldb: usize,
            rows: usize,
            out: *mut $elem,
        ) {
            // GEMV_ROWS rows at a time, one accumulator each: as many sequential streams of B
            // in flight per core (one stream alone leaves DRAM latency uncovered)
            const G: usize = super::GEMV_ROWS;
            let whole = k / $lanes * $lanes;
            let mut r = 0;
            while r + G <= rows {
                let mut acc: [$vec; G] = [$zero; G];
                let mut t = 0;
                while t < whole {
                    let $p = x.add(t);
                    let xv = $load;
                    for (j, a) in acc.iter_mut().enumerate() {
                        let $p = b.add((r + j) * ldb + t);
                        let ($fa, $fb, $fc) = (xv, $load, *a);
                        *a = $fma;
                    }
                    t += $lanes;
                }
                for (j, a) in acc.iter().enumerate() {
                    let $hv = *a;
                    let mut s: $elem = $hsum;
                    for tt in whole..k {
                        s = (*x.add(tt)).mul_add(*b.add((r + j) * ldb + tt), s);
                    }
                    *out.add(r + j) = s;
                }
                r += G;
            }
            // the last rows one at a time
            while r < rows {
                let row = b.add(r * ldb);
                let mut acc: $vec = $zero;
                let mut t = 0;
                while t < whole {
                    let $p = x.add(t);
                    let xv = $load;
                    let $p = row.add(t);
                    let ($fa, $fb, $fc) = (xv, $load, acc);
                    acc = $fma;
                    t += $lanes;
                }
                let $hv = acc;
                let mut s: $elem = $hsum;
                for tt in whole..k {
                    s = (*x.add(tt)).mul_add(*row.add(tt), s);
                }
                *out.add(r) = s;
                r += 1;
            }
        }
    };
}

/// Generates a micro-kernel and a dot-product kernel for one instruction set and element type.
macro_rules! gemm_kernels {
    (
        $micro:ident, $dot:ident, $gemv:ident, feature $feature:literal, elem $elem:ty, vec $vec:ty,
        lanes $lanes:expr, mr $mr:expr, nv $nv:expr,
        zero $zero:expr,
        splat |$sx:ident| $splat:expr,
        load |$p:ident| $load:expr,
        store |$q:ident, $v:ident| $store:expr,
        fma |$fa:ident, $fb:ident, $fc:ident| $fma:expr,
        add |$aa:ident, $ab:ident| $add:expr,
        sum |$hv:ident| $hsum:expr
    ) => {
        /// # Safety
        /// The CPU supports the target feature; `a` holds `kc × MR`, `b` `kc × NR` elements;
        /// `c` covers an MR × NR tile with row stride `ldc`.
        #[target_feature(enable = $feature)]
        pub unsafe fn $micro(
            kc: usize,
            a: *const $elem,
            b: *const $elem,
            c: *mut $elem,
            ldc: usize,
            accumulate: bool,
        ) {
            const MR: usize = $mr;
            const NV: usize = $nv;
            const NR: usize = NV * $lanes;
            // B's sliver streams from L2 (A's stays in L1): its lines are asked for B_AHEAD
            // steps of k ahead, where the next-line prefetch alone came too late.
            const B_AHEAD: usize = 16;
            // The tile of C is read (or written) only after the K loop: asking for its lines now
            // hides their latency behind the loop.
            const ROW_BYTES: usize = NR * std::mem::size_of::<$elem>();
            for i in 0..MR {
                super::prefetch(c.add(i * ldc), ROW_BYTES);
            }
            let mut acc: [[$vec; NV]; MR] = [[$zero; NV]; MR];
            for k in 0..kc {
                super::prefetch(b.wrapping_add((k + B_AHEAD) * NR), ROW_BYTES);
                let mut bv: [$vec; NV] = [$zero; NV];
                for v in 0..NV {
                    let $p = b.add(k * NR + v * $lanes);
                    bv[v] = $load;
                }
                for i in 0..MR {
                    let $sx = *a.add(k * MR + i);
                    let av: $vec = $splat;
                    for v in 0..NV {
                        let ($fa, $fb, $fc) = (av, bv[v], acc[i][v]);
                        acc[i][v] = $fma;
                    }
                }
            }
            for i in 0..MR {
                for v in 0..NV {
                    let ptr = c.add(i * ldc + v * $lanes);
                    let mut x = acc[i][v];
                    if accumulate {
                        let $p = ptr as *const $elem;
                        let old: $vec = $load;
                        let ($aa, $ab) = (x, old);
                        x = $add;
                    }
                    let ($q, $v) = (ptr, x);
                    $store;
                }
            }
        }

        /// The tile's step of K holds the shorter side's vectors and loads the other side's one
        /// at a time: `MA × RB + min(MA, RB) + 1` vector registers, `MA + RB` loads.
        ///
        /// # Safety
        /// The CPU supports the target feature; the `MA` rows at `a` and the `RB` rows at `b`
        /// hold `k` elements; `MA × RB` ≤ [`super::DOT_OUT`].
        #[target_feature(enable = $feature)]
        pub unsafe fn $dot<const MA: usize, const RB: usize>(
            k: usize,
            a: *const $elem,
            lda: usize,
            b: *const $elem,
            ldb: usize,
            out: &mut [$elem; super::DOT_OUT],
        ) {
            let mut acc: [[$vec; RB]; MA] = [[$zero; RB]; MA];
            let whole = k / $lanes * $lanes;
            let mut kk = 0;
            // (MA and RB are constants: the compiler keeps one of the two loops)
            while MA > RB && kk < whole {
                // B's RB vectors held, each of A's MA rows loaded once into RB accumulators
                let mut bv: [$vec; RB] = [$zero; RB];
                for (j, v) in bv.iter_mut().enumerate() {
                    let $p = b.add(j * ldb + kk);
                    *v = $load;
                }
                for (i, row) in acc.iter_mut().enumerate() {
                    let $p = a.add(i * lda + kk);
                    let ai: $vec = $load;
                    for (x, &bj) in row.iter_mut().zip(bv.iter()) {
                        let ($fa, $fb, $fc) = (ai, bj, *x);
                        *x = $fma;
                    }
                }
                kk += $lanes;
            }
            while kk < whole {
                // A's MA vectors held, each of B's RB rows loaded once into MA accumulators
                let mut av: [$vec; MA] = [$zero; MA];
                for (i, v) in av.iter_mut().enumerate() {
                    let $p = a.add(i * lda + kk);
                    *v = $load;
                }
                for j in 0..RB {
                    let $p = b.add(j * ldb + kk);
                    let bj: $vec = $load;
                    for (row, &ai) in acc.iter_mut().zip(av.iter()) {
                        let ($fa, $fb, $fc) = (ai, bj, row[j]);
                        row[j] = $fma;
                    }
                }
                kk += $lanes;
            }
            for (i, row) in acc.iter().enumerate() {
                for (j, &x) in row.iter().enumerate() {
                    let $hv = x;
                    let mut s: $elem = $hsum;
                    for t in whole..k {
                        s = (*a.add(i * lda + t)).mul_add(*b.add(j * ldb + t), s);
                    }
                    out[i * RB + j] = s;
                }
            }
        }

        gemv_kernel!($gemv, feature $feature, elem $elem, vec $vec, lanes $lanes,
            zero $zero,
            load |$p| $load,
            fma |$fa, $fb, $fc| $fma,
            sum |$hv| $hsum);
    };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    gemm_kernels!(avx512_f32_micro, avx512_f32_dot, avx512_f32_gemv, feature "avx512f,fma", elem f32,
        vec __m512, lanes 16, mr 12, nv 2,
        zero _mm512_setzero_ps(),
        splat |s| _mm512_set1_ps(s),
        load |p| _mm512_loadu_ps(p),
        store |q, v| _mm512_storeu_ps(q, v),
        fma |a, b, c| _mm512_fmadd_ps(a, b, c),
        add |a, b| _mm512_add_ps(a, b),
        sum |v| _mm512_reduce_add_ps(v));
    gemm_kernels!(avx512_f64_micro, avx512_f64_dot, avx512_f64_gemv, feature "avx512f,fma", elem f64,
        vec __m512d, lanes 8, mr 8, nv 2,
        zero _mm512_setzero_pd(),
        splat |s| _mm512_set1_pd(s),
        load |p| _mm512_loadu_pd(p),
        store |q, v| _mm512_storeu_pd(q, v),
        fma |a, b, c| _mm512_fmadd_pd(a, b, c),
        add |a, b| _mm512_add_pd(a, b),
        sum |v| _mm512_reduce_add_pd(v));
    gemm_kernels!(avx2_f32_micro, avx2_f32_dot, avx2_f32_gemv, feature "avx2,fma", elem f32,
    vec __m256, lanes 8, mr 6, nv 2,
    zero _mm256_setzero_ps(),
    splat |s| _mm256_set1_ps(s),
    load |p| _mm256_loadu_ps(p),
    store |q, v| _mm256_storeu_ps(q, v),
    fma |a, b, c| _mm256_fmadd_ps(a, b, c),
    add |a, b| _mm256_add_ps(a, b),
    sum |v| {
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), v);
        lanes.iter().sum()
    });
    gemm_kernels!(avx2_f64_micro, avx2_f64_dot, avx2_f64_gemv, feature "avx2,fma", elem f64,
    vec __m256d, lanes 4, mr 6, nv 2,
    zero _mm256_setzero_pd(),
    splat |s| _mm256_set1_pd(s),
    load |p| _mm256_loadu_pd(p),
    store |q, v| _mm256_storeu_pd(q, v),
    fma |a, b, c| _mm256_fmadd_pd(a, b, c),
    add |a, b| _mm256_add_pd(a, b),
    sum |v| {
        let mut lanes = [0f64; 4];
        _mm256_storeu_pd(lanes.as_mut_ptr(), v);
        lanes.iter().sum()
    });
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;

    gemm_kernels!(neon_f32_micro, neon_f32_dot, neon_f32_gemv, feature "neon", elem f32,
        vec float32x4_t, lanes 4, mr 8, nv 2,
        zero vdupq_n_f32(0.0),
        splat |s| vdupq_n_f32(s),
        load |p| vld1q_f32(p),
        store |q, v| vst1q_f32(q, v),
        fma |a, b, c| vfmaq_f32(c, a, b),
        add |a, b| vaddq_f32(a, b),
        sum |v| vaddvq_f32(v));
    gemm_kernels!(neon_f64_micro, neon_f64_dot, neon_f64_gemv, feature "neon", elem f64,
        vec float64x2_t, lanes 2, mr 8, nv 2,
        zero vdupq_n_f64(0.0),
        splat |s| vdupq_n_f64(s),
        load |p| vld1q_f64(p),
        store |q, v| vst1q_f64(q, v),
        fma |a, b, c| vfmaq_f64(c, a, b),
        add |a, b| vaddq_f64(a, b),
        sum |v| vaddvq_f64(v));
}

/// The portable micro-kernel: a 4 × 4 tile of scalars.
pub(super) unsafe fn portable_micro<T: GemmElement>(
    kc: usize,
    a: *const T,
    b: *const T,
    c: *mut T,
    ldc: usize,
    accumulate: bool,
) {
    let mut acc = [[T::default(); 4]; 4];
    for k in 0..kc {
        for (i, row) in acc.iter_mut().enumerate() {
            let av = *a.add(k * 4 + i);
            for (j, x) in row.iter_mut().enumerate() {
                *x = av.mul_add(*b.add(k * 4 + j), *x);
            }
        }
    }
    for (i, row) in acc.iter().enumerate() {
        for (j, &x) in row.iter().enumerate() {
            let p = c.add(i * ldc + j);
            *p = if accumulate { *p + x } else { x };
        }
    }
}

/// The portable dot-product kernel.
pub(super) unsafe fn portable_dot<T: GemmElement, const MA: usize, const RB: usize>(
    k: usize,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    out: &mut [T; DOT_OUT],
) {
    for i in 0..MA {
        for j in 0..RB {
            let mut s = T::default();
            for t in 0..k {
                s = (*a.add(i * lda + t)).mul_add(*b.add(j * ldb + t), s);
            }
            out[i * RB + j] = s;
        }
    }
}

/// The portable matrix-vector kernel.
pub(super) unsafe fn portable_gemv<T: GemmElement>(
    k: usize,
    x: *const T,
    b: *const T,
    ldb: usize,
    rows: usize,
    out: *mut T,
) {
    for r in 0..rows {
        let mut s = T::default();
        for t in 0..k {
            s = (*x.add(t)).mul_add(*b.add(r * ldb + t), s);
        }
        *out.add(r) = s;
    }
}

/// The blocking and kernels of `simd` for `T`: the one table of which GEMM kernel runs where.
pub fn blocking<T: GemmElement>(simd: Simd) -> Blocking<T> {
    macro_rules! pick {
        (
            $mr:expr, $nr:expr, $micro:path,
            $ma:literal x $rb:literal to $max_m:literal a_in_l2 $l2:literal $($dot:ident)::+,
            $gemv:path, $name:expr
        ) => {{
            // SAFETY (of the transmutes): T is exactly the element type of these kernels, as
            // T::PRECISION says; the function pointer types differ only in that name.
            Blocking {
                mr: $mr,
                nr: $nr,
                micro: unsafe { std::mem::transmute::<*const (), Micro<T>>($micro as *const ()) },
                dot: DotTile {
                    rows_a: $ma,
                    rows_b: $rb,
                    max_m: $max_m,
                    a_in_l2: $l2,
                    f: unsafe {
                        let dot = $($dot)::+::<$ma, $rb> as *const ();
                        std::mem::transmute::<*const (), Dot<T>>(dot)
                    },
                },
                gemv: unsafe { std::mem::transmute::<*const (), Gemv<T>>($gemv as *const ()) },
                name: $name,
            }
        }};
    }
    match (simd, T::PRECISION) {
        #[cfg(target_arch = "x86_64")]
        (Simd::Avx512, Precision::F32) => pick!(
            12,
            32,
            x86::avx512_f32_micro,
            8 x 3 to 64 a_in_l2 true x86::avx512_f32_dot,
            x86::avx512_f32_gemv,
            "AVX-512F 12x32"
        ),
        #[cfg(target_arch = "x86_64")]
        (Simd::Avx512, Precision::F64) => pick!(
            8,
            16,
            x86::avx512_f64_micro,
            4 x 4 to 16 a_in_l2 false x86::avx512_f64_dot,
            x86::avx512_f64_gemv,
            "AVX-512F 8x16"
        ),
        #[cfg(target_arch = "x86_64")]
        (Simd::Avx2, Precision::F32) => pick!(
            6,
            16,
            x86::avx2_f32_micro,
            2 x 6 to 64 a_in_l2 false x86::avx2_f32_dot,
            x86::avx2_f32_gemv,
            "AVX2+FMA 6x16"
        ),
        #[cfg(target_arch = "x86_64")]
        (Simd::Avx2, Precision::F64) => {
            pick!(
                6,
                8,
                x86::avx2_f64_micro,
                2 x 6 to 32 a_in_l2 false x86::avx2_f64_dot,
                x86::avx2_f64_gemv,
                "AVX2+FMA 6x8"
            )
        }
        #[cfg(target_arch = "aarch64")]
        (Simd::Neon, Precision::F32) => {
            pick!(
                8,
                8,
                arm::neon_f32_micro,
                4 x 4 to 16 a_in_l2 false arm::neon_f32_dot,
                arm::neon_f32_gemv,
                "NEON 8x8"
            )
        }
        #[cfg(target_arch = "aarch64")]
        (Simd::Neon, Precision::F64) => {
            pick!(
                8,
                4,
                arm::neon_f64_micro,
                4 x 4 to 16 a_in_l2 false arm::neon_f64_dot,
                arm::neon_f64_gemv,
                "NEON 8x4"
            )
        }
        _ => Blocking {
            mr: 4,
            nr: 4,
            micro: portable_micro::<T>,
            dot: DotTile {
                rows_a: 4,
                rows_b: 4,
                max_m: SMALL_M,
                a_in_l2: false,
                f: portable_dot::<T, 4, 4>,
            },
            gemv: portable_gemv::<T>,
            name: "scalar 4x4",
        },
    }
}

/// Rows ahead of the one being packed whose elements [`pack_sliver`] asks the cache for.
pub(super) const PREFETCH_ROWS: usize = 2;

/// Packs one sliver, k-major: row `r < width` of the row-major matrix at `src` (row stride
/// `ld`; its `kc` elements from `src`) goes to `dst[kk · width + r]`, and rows at or past `rows`
/// (the matrix's rows left from `src`) are zero.
///
/// Each row's `kc` elements are a short stream of their own, and for a large `ld` on a page of
/// their own, which the hardware prefetchers pick up only after it has started: reading them
/// as they come left the packing of 2048³ f32 bound by memory latency, 15 % of the product's
/// time on one core of this project's AVX-512 VM (perf, 2026-12-02). So the rows
/// [`PREFETCH_ROWS`] ahead, the next sliver's too, are asked for while this one is copied.
///
/// # Safety
/// The first `min(rows, width + PREFETCH_ROWS)` rows at `src` hold `kc` elements each, and
/// `dst` holds `kc · width`.
pub(super) unsafe fn pack_sliver<T: GemmElement>(
    src: *const T,
    ld: usize,
    rows: usize,
    width: usize,
    kc: usize,
    dst: &mut [T],
) {
    for r in 0..width {
        if r + PREFETCH_ROWS < rows {
            prefetch(
                src.add((r + PREFETCH_ROWS) * ld),
                kc * std::mem::size_of::<T>(),
            );
        }
        if r < rows {
            let row = std::slice::from_raw_parts(src.add(r * ld), kc);
            for (kk, &v) in row.iter().enumerate() {
                dst[kk * width + r] = v;
            }
        } else {
            for kk in 0..kc {
                dst[kk * width + r] = T::default();
            }
        }
    }
}
