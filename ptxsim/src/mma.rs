//! `mma.sync` and `ldmatrix`: which lane holds which matrix element, exactly as the PTX ISA
//! specifies ("Matrix Fragments for mma.m8n8k4 / m16n8k4 / m16n8k8 / m16n8k16 / m16n8k32",
//! "Warp-level matrix load instruction: ldmatrix"), and the arithmetic of one warp-wide
//! multiply-accumulate.
//!
//! With `groupID = laneid >> 2` and `threadID_in_group = laneid % 4`, each function here maps
//! (lane, element index) to (row, column); element `i` of a lane's fragment sits in register
//! `i / per_register` at bit `(i % per_register) * width` ("elements low to high").
//!
//! Numerics (documented assumptions, since hardware leaves order and internal precision
//! unspecified): inputs are decoded exactly (tf32 operands use only their top 19 bits, as the
//! tensor cores do); floating-point D = C + sum over k of A*B is accumulated in f64 in k order
//! and rounded once (round to nearest even) to the D type; f64 mma is a chain of fused
//! multiply-adds in k order; integer mma is exact, wrapping to 32 bits (or clamping with
//! `.satfinite`). Tests use values whose exact result is representable, so that the order
//! cannot matter.

use crate::ir::MmaShape;
use crate::numeric;
use crate::types::Ty;

/// The fragment layout of one supported `mma` form.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub shape: MmaShape,
    pub atype: Ty,
    pub btype: Ty,
    pub ctype: Ty,
    pub dtype: Ty,
}

fn elem_bits(t: Ty) -> u32 {
    match t {
        Ty::F16 | Ty::Bf16 => 16,
        Ty::Tf32 | Ty::F32 | Ty::S32 => 32,
        Ty::F64 => 64,
        _ => 8,
    }
}

/// Elements of type `t` per register (a register is 32 bits, or 64 for f64).
pub fn per_register(t: Ty) -> usize {
    match elem_bits(t) {
        64 | 32 => 1,
        16 => 2,
        _ => 4,
    }
}

fn is8(t: Ty) -> bool {
    matches!(t, Ty::S8 | Ty::U8 | Ty::E4m3 | Ty::E5m2)
}

fn is16(t: Ty) -> bool {
    matches!(t, Ty::F16 | Ty::Bf16)
}

impl Layout {
    /// The supported (shape, types) combinations; `None` for anything else.
    pub fn new(shape: MmaShape, atype: Ty, btype: Ty, ctype: Ty, dtype: Ty) -> Option<Layout> {
        use MmaShape::*;
        let ok = match shape {
            M8n8k4 => [atype, btype, ctype, dtype] == [Ty::F64; 4],
            M16n8k4 => {
                (atype == Ty::Tf32 && btype == Ty::Tf32 && ctype == Ty::F32 && dtype == Ty::F32)
                    || [atype, btype, ctype, dtype] == [Ty::F64; 4]
            }
            M16n8k8 | M16n8k16 if atype == Ty::F64 => [atype, btype, ctype, dtype] == [Ty::F64; 4],
            M16n8k8 | M16n8k16 => {
                // ptxas: "dtype must be .f16 when ctype is .f16" (and .f32 likewise).
                let f16 = atype == Ty::F16
                    && btype == Ty::F16
                    && matches!(ctype, Ty::F16 | Ty::F32)
                    && dtype == ctype;
                let bf16 =
                    atype == Ty::Bf16 && btype == Ty::Bf16 && ctype == Ty::F32 && dtype == Ty::F32;
                let tf32 = shape == M16n8k8
                    && atype == Ty::Tf32
                    && btype == Ty::Tf32
                    && ctype == Ty::F32
                    && dtype == Ty::F32;
                let int8 = shape == M16n8k16
                    && matches!(atype, Ty::S8 | Ty::U8)
                    && matches!(btype, Ty::S8 | Ty::U8)
                    && ctype == Ty::S32
                    && dtype == Ty::S32;
                let fp8 = shape == M16n8k16
                    && matches!(atype, Ty::E4m3 | Ty::E5m2)
                    && matches!(btype, Ty::E4m3 | Ty::E5m2)
                    && matches!(ctype, Ty::F16 | Ty::F32)
                    && ctype == dtype;
                f16 || bf16 || tf32 || int8 || fp8
            }
            M16n8k32 => {
                let int8 = matches!(atype, Ty::S8 | Ty::U8)
                    && matches!(btype, Ty::S8 | Ty::U8)
                    && ctype == Ty::S32
                    && dtype == Ty::S32;
                let fp8 = matches!(atype, Ty::E4m3 | Ty::E5m2)
                    && matches!(btype, Ty::E4m3 | Ty::E5m2)
                    && matches!(ctype, Ty::F16 | Ty::F32)
                    && ctype == dtype;
                int8 || fp8
            }
        };
        ok.then_some(Layout {
            shape,
            atype,
            btype,
            ctype,
            dtype,
        })
    }

    /// Elements per lane of A, B and C/D.
    pub fn elements(&self) -> (usize, usize, usize) {
        let (m, n, k) = self.shape.mnk();
        (m * k / 32, k * n / 32, m * n / 32)
    }

    /// Registers per lane of A, B, C, D.
    pub fn register_counts(&self) -> (usize, usize, usize, usize) {
        let (a, b, c) = self.elements();
        (
            a / per_register(self.atype),
            b / per_register(self.btype),
            c / per_register(self.ctype),
            c / per_register(self.dtype),
        )
    }

    /// (row, col) in A (M x K) of element `i` held by `lane`.
    pub fn a_coord(&self, lane: usize, i: usize) -> (usize, usize) {
        let g = lane >> 2;
        let t = lane & 3;
        match self.shape {
            MmaShape::M8n8k4 => (g, t),
            MmaShape::M16n8k4 => (g + 8 * i, t),
            MmaShape::M16n8k8 if is16(self.atype) => (g + 8 * (i >> 1), 2 * t + (i & 1)),
            MmaShape::M16n8k8 => (g + 8 * (i & 1), t + 4 * (i >> 1)),
            MmaShape::M16n8k16 if is8(self.atype) => (g + 8 * (i >> 2), 4 * t + (i & 3)),
            // .f64 (sm_90): a0…a7 as m16n8k8's .tf32/.f64 layout, two more column groups of 4
            MmaShape::M16n8k16 if self.atype == Ty::F64 => (g + 8 * (i & 1), t + 4 * (i >> 1)),
            MmaShape::M16n8k16 => (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)),
            MmaShape::M16n8k32 => (g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)),
        }
    }

    /// (row, col) in B (K x N) of element `i` held by `lane`.
    pub fn b_coord(&self, lane: usize, i: usize) -> (usize, usize) {
        let g = lane >> 2;
        let t = lane & 3;
        match self.shape {
            MmaShape::M8n8k4 | MmaShape::M16n8k4 => (t, g),
            MmaShape::M16n8k8 if is16(self.btype) => (2 * t + i, g),
            MmaShape::M16n8k8 => (t + 4 * i, g),
            MmaShape::M16n8k16 if is8(self.btype) => (4 * t + i, g),
            MmaShape::M16n8k16 if self.btype == Ty::F64 => (t + 4 * i, g),
            MmaShape::M16n8k16 => (2 * t + (i & 1) + 8 * (i >> 1), g),
            MmaShape::M16n8k32 => (4 * t + (i & 3) + 16 * (i >> 2), g),
        }
    }

    /// (row, col) in C/D (M x N) of element `i` held by `lane`.
    pub fn c_coord(&self, lane: usize, i: usize) -> (usize, usize) {
        let g = lane >> 2;
        let t = lane & 3;
        match self.shape {
            MmaShape::M8n8k4 => (g, 2 * t + i),
            _ => (g + 8 * (i >> 1), 2 * t + (i & 1)),
        }
    }
}

/// Element `i` of a fragment, as raw bits, from the lane's registers.
pub fn element_bits(regs: &[u64], ty: Ty, i: usize) -> u64 {
    let per = per_register(ty);
    let width = elem_bits(ty);
    let r = regs[i / per];
    if width == 64 {
        return r;
    }
    (r >> ((i % per) as u32 * width)) & ((1u64 << width) - 1)
}

/// Stores element `i` of a fragment into the lane's registers.
pub fn set_element_bits(regs: &mut [u64], ty: Ty, i: usize, value: u64) {
    let per = per_register(ty);
    let width = elem_bits(ty);
    if width == 64 {
        regs[i] = value;
        return;
    }
    let shift = (i % per) as u32 * width;
    let mask = ((1u64 << width) - 1) << shift;
    let r = &mut regs[i / per];
    *r = (*r & !mask) | ((value << shift) & mask);
}

/// The exact value of an input element.
pub fn decode_float(ty: Ty, bits: u64) -> f64 {
    match ty {
        // (the fast exact conversions; a NaN as `Format::to_f64` gives it)
        Ty::F16 | Ty::Bf16 => {
            let v = numeric::half_to_f64(bits as u16, ty == Ty::Bf16);
            if v.is_nan() {
                f64::NAN
            } else {
                v
            }
        }
        // Tensor cores read only the top 19 bits of a tf32 operand.
        Ty::Tf32 => f32::from_bits(bits as u32 & !0x1fff) as f64,
        Ty::F32 => f32::from_bits(bits as u32) as f64,
        Ty::F64 => f64::from_bits(bits),
        Ty::E4m3 => numeric::E4M3.to_f64(bits),
        Ty::E5m2 => numeric::E5M2.to_f64(bits),
        _ => unreachable!("decode_float on a non-float mma type"),
    }
}

fn decode_int(ty: Ty, bits: u64) -> i64 {
    match ty {
        Ty::S8 => bits as u8 as i8 as i64,
        Ty::U8 => bits as u8 as i64,
        Ty::S32 => bits as u32 as i32 as i64,
        _ => unreachable!("decode_int on a non-integer mma type"),
    }
}

/// The most registers a lane holds of one fragment (A of `.m16n8k16.f64`: 8).
pub const MAX_FRAGMENT_REGISTERS: usize = 8;

/// One fragment of a warp: each lane's registers, the first `register_counts()` of them used.
pub type Fragment = [[u64; MAX_FRAGMENT_REGISTERS]; 32];

/// The most elements of A (M × K), B (K × N) and C (M × N) of any shape: m16n8k32's.
const MAX_A: usize = 16 * 32;
const MAX_B: usize = 32 * 8;
const MAX_C: usize = 16 * 8;

/// Computes D for the whole warp. `a`, `b`, `c` hold each lane's registers (lane-major);
/// returns each lane's D registers. On the stack, not the heap: an interpreted `mma` kernel
/// spent a sixth of its time allocating the fragments and matrices.
pub fn execute(
    layout: &Layout,
    satfinite: bool,
    a: &Fragment,
    b: &Fragment,
    c: &Fragment,
) -> Fragment {
    let (m, n, k) = layout.shape.mnk();
    let (na, nb, nc) = layout.elements();
    assert!(
        m * k <= MAX_A && k * n <= MAX_B && m * n <= MAX_C,
        "an mma shape larger than m16n8k32"
    );
    let mut out = [[0u64; MAX_FRAGMENT_REGISTERS]; 32];
    let integer = layout.dtype == Ty::S32;
    if integer {
        let mut am = [0i64; MAX_A];
        let mut bm = [0i64; MAX_B];
        let mut cm = [0i64; MAX_C];
        for lane in 0..32 {
            for i in 0..na {
                let (r, col) = layout.a_coord(lane, i);
                am[r * k + col] = decode_int(layout.atype, element_bits(&a[lane], layout.atype, i));
            }
            for i in 0..nb {
                let (r, col) = layout.b_coord(lane, i);
                bm[r * n + col] = decode_int(layout.btype, element_bits(&b[lane], layout.btype, i));
            }
            for i in 0..nc {
                let (r, col) = layout.c_coord(lane, i);
                cm[r * n + col] = decode_int(layout.ctype, element_bits(&c[lane], layout.ctype, i));
            }
        }
        for (lane, dl) in out.iter_mut().enumerate() {
            for i in 0..nc {
                let (r, col) = layout.c_coord(lane, i);
                let mut acc = cm[r * n + col];
                for kk in 0..k {
                    acc += am[r * k + kk] * bm[kk * n + col];
                }
                let v = if satfinite {
                    acc.clamp(i32::MIN as i64, i32::MAX as i64) as i32
                } else {
                    acc as i32
                };
                set_element_bits(dl, layout.dtype, i, v as u32 as u64);
            }
        }
        return out;
    }
    let mut am = [0f64; MAX_A];
    let mut bm = [0f64; MAX_B];
    let mut cm = [0f64; MAX_C];
    for lane in 0..32 {
        for i in 0..na {
            let (r, col) = layout.a_coord(lane, i);
            am[r * k + col] = decode_float(layout.atype, element_bits(&a[lane], layout.atype, i));
        }
        for i in 0..nb {
            let (r, col) = layout.b_coord(lane, i);
            bm[r * n + col] = decode_float(layout.btype, element_bits(&b[lane], layout.btype, i));
        }
        for i in 0..nc {
            let (r, col) = layout.c_coord(lane, i);
            cm[r * n + col] = decode_float(layout.ctype, element_bits(&c[lane], layout.ctype, i));
        }
    }
    for (lane, dl) in out.iter_mut().enumerate() {
        for i in 0..nc {
            let (r, col) = layout.c_coord(lane, i);
            let mut acc = cm[r * n + col];
            for kk in 0..k {
                if layout.dtype == Ty::F64 {
                    acc = am[r * k + kk].mul_add(bm[kk * n + col], acc);
                } else {
                    acc += am[r * k + kk] * bm[kk * n + col];
                }
            }
            let bits = match layout.dtype {
                Ty::F64 => acc.to_bits(),
                Ty::F32 => {
                    if acc.is_nan() {
                        0x7fff_ffff
                    } else {
                        (acc as f32).to_bits() as u64
                    }
                }
                // the same bits as `round_f64(acc, F16, NearestEven, false)`, NaN included
                Ty::F16 => numeric::round_odd_to_half(acc, false) as u64,
                _ => unreachable!("float mma D type"),
            };
            set_element_bits(dl, layout.dtype, i, bits);
        }
    }
    out
}

/// `wgmma.mma_async .m64nNkK`, 32-bit accumulator numbering (PTX ISA, "Register Fragments"
/// of wgmma, matrix D): element `i` of lane `lane` of warp `warp` (0..4 within the warpgroup)
/// is at (row, col) of the 64 x N matrix D. An f16 accumulator packs elements 2j (low half)
/// and 2j + 1 (high half) into register j.
pub fn wgmma_d_coord(warp: usize, lane: usize, i: usize) -> (usize, usize) {
    (
        16 * warp + lane / 4 + 8 * ((i / 2) % 2),
        8 * (i / 4) + 2 * (lane % 4) + (i % 2),
    )
}

/// The A fragment of a register-A `wgmma.mma_async`: each warp holds its 16 rows in the
/// layout of `mma.m16n8kK` with the same A type (K = 16 for f16/bf16, 8 for tf32, 32 for
/// 8-bit types); this is that layout.
pub fn wgmma_a_layout(atype: Ty) -> Layout {
    let (shape, c) = match atype {
        Ty::F16 | Ty::Bf16 => (MmaShape::M16n8k16, Ty::F32),
        Ty::Tf32 => (MmaShape::M16n8k8, Ty::F32),
        Ty::S8 | Ty::U8 => (MmaShape::M16n8k32, Ty::S32),
        _ => (MmaShape::M16n8k32, Ty::F32),
    };
    Layout::new(shape, atype, atype, c, c).expect("an mma layout for every wgmma A type")
}

/// The matrices of one `wgmma.mma_async`, as raw element bits: A is 64 x K (row-major), B is
/// N x K (each of B's N columns with its K elements, as K-major shared memory holds them),
/// C (`None` when scale-d is false) is 64 x N.
pub struct WgmmaOperands<'a> {
    pub n: usize,
    pub k: usize,
    pub atype: Ty,
    pub btype: Ty,
    pub dtype: Ty,
    pub satfinite: bool,
    pub neg_a: bool,
    pub neg_b: bool,
    pub a: &'a [u64],
    pub b: &'a [u64],
    pub c: Option<&'a [u64]>,
}

/// D = A * B (+ C), 64 x N element bits, with the numerics of [`execute`]: products exact,
/// accumulated in f64 and rounded once to D's type (integers exact, wrapping or with
/// `.satfinite` clamping to 32 bits).
pub fn wgmma_execute(o: &WgmmaOperands) -> Vec<u64> {
    let (m, n, k) = (64, o.n, o.k);
    let mut out = vec![0u64; m * n];
    if o.dtype == Ty::S32 {
        let a: Vec<i64> = o.a.iter().map(|&x| decode_int(o.atype, x)).collect();
        let b: Vec<i64> = o.b.iter().map(|&x| decode_int(o.btype, x)).collect();
        for r in 0..m {
            for c in 0..n {
                let mut acc = o.c.map_or(0, |cm| decode_int(Ty::S32, cm[r * n + c]));
                for kk in 0..k {
                    acc += a[r * k + kk] * b[c * k + kk];
                }
                let v = if o.satfinite {
                    acc.clamp(i32::MIN as i64, i32::MAX as i64) as i32
                } else {
                    acc as i32
                };
                out[r * n + c] = v as u32 as u64;
            }
        }
        return out;
    }
    let sa = if o.neg_a { -1.0 } else { 1.0 };
    let sb = if o.neg_b { -1.0 } else { 1.0 };
    let a: Vec<f64> = o.a.iter().map(|&x| sa * decode_float(o.atype, x)).collect();
    let b: Vec<f64> = o.b.iter().map(|&x| sb * decode_float(o.btype, x)).collect();
    for r in 0..m {
        for c in 0..n {
            let mut acc = o.c.map_or(0.0, |cm| decode_float(o.dtype, cm[r * n + c]));
            for kk in 0..k {
                acc += a[r * k + kk] * b[c * k + kk];
            }
            out[r * n + c] = match o.dtype {
                Ty::F32 => {
                    if acc.is_nan() {
                        0x7fff_ffff
                    } else {
                        (acc as f32).to_bits() as u64
                    }
                }
                _ => numeric::round_f64(acc, numeric::F16, numeric::Rounding::NearestEven, false),
            };
        }
    }
    out
}

/// `ldmatrix .m8n8 .b16`: the 16-bit element of the stored 8x8 matrix that `lane` receives
/// in half `h` (0 = low, 1 = high) of its register: (row, col) in the stored matrix, whose
/// row `r` starts at the address given by thread `8 * matrix + r`.
pub fn ldmatrix_source(lane: usize, h: usize, trans: bool) -> (usize, usize) {
    let row = lane / 4;
    let col = 2 * (lane % 4) + h;
    if trans {
        (col, row)
    } else {
        (row, col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_layout() -> Vec<Layout> {
        use MmaShape::*;
        let combos = [
            (M8n8k4, Ty::F64, Ty::F64, Ty::F64, Ty::F64),
            (M16n8k4, Ty::Tf32, Ty::Tf32, Ty::F32, Ty::F32),
            (M16n8k8, Ty::F16, Ty::F16, Ty::F32, Ty::F32),
            (M16n8k8, Ty::Tf32, Ty::Tf32, Ty::F32, Ty::F32),
            (M16n8k16, Ty::F16, Ty::F16, Ty::F16, Ty::F16),
            (M16n8k16, Ty::Bf16, Ty::Bf16, Ty::F32, Ty::F32),
            (M16n8k16, Ty::S8, Ty::S8, Ty::S32, Ty::S32),
            (M16n8k32, Ty::S8, Ty::U8, Ty::S32, Ty::S32),
            (M16n8k32, Ty::E4m3, Ty::E4m3, Ty::F32, Ty::F32),
            (M16n8k4, Ty::F64, Ty::F64, Ty::F64, Ty::F64),
            (M16n8k8, Ty::F64, Ty::F64, Ty::F64, Ty::F64),
            (M16n8k16, Ty::F64, Ty::F64, Ty::F64, Ty::F64),
        ];
        combos
            .iter()
            .map(|&(s, a, b, c, d)| Layout::new(s, a, b, c, d).expect("supported"))
            .collect()
    }

    /// Every element of A, B and C is held by exactly one (lane, index): a layout that drops
    /// or duplicates an element cannot pass.
    #[test]
    fn every_layout_is_a_bijection() {
        for l in every_layout() {
            let (m, n, k) = l.shape.mnk();
            let (na, nb, nc) = l.elements();
            let mut seen_a = vec![0; m * k];
            let mut seen_b = vec![0; k * n];
            let mut seen_c = vec![0; m * n];
            for lane in 0..32 {
                for i in 0..na {
                    let (r, c) = l.a_coord(lane, i);
                    seen_a[r * k + c] += 1;
                }
                for i in 0..nb {
                    let (r, c) = l.b_coord(lane, i);
                    seen_b[r * n + c] += 1;
                }
                for i in 0..nc {
                    let (r, c) = l.c_coord(lane, i);
                    seen_c[r * n + c] += 1;
                }
            }
            assert!(seen_a.iter().all(|&x| x == 1), "{l:?} A");
            assert!(seen_b.iter().all(|&x| x == 1), "{l:?} B");
            assert!(seen_c.iter().all(|&x| x == 1), "{l:?} C");
        }
    }

    /// Spot checks copied from the PTX ISA formulas, written out by hand.
    #[test]
    fn hand_checked_coordinates() {
        let f16 = Layout::new(MmaShape::M16n8k16, Ty::F16, Ty::F16, Ty::F32, Ty::F32).unwrap();
        // lane 5: groupID 1, threadID_in_group 1.
        assert_eq!(f16.a_coord(5, 0), (1, 2));
        assert_eq!(f16.a_coord(5, 3), (9, 3));
        assert_eq!(f16.a_coord(5, 4), (1, 10));
        assert_eq!(f16.a_coord(5, 7), (9, 11));
        assert_eq!(f16.b_coord(5, 0), (2, 1));
        assert_eq!(f16.b_coord(5, 3), (11, 1));
        assert_eq!(f16.c_coord(5, 2), (9, 2));
        let tf32 = Layout::new(MmaShape::M16n8k8, Ty::Tf32, Ty::Tf32, Ty::F32, Ty::F32).unwrap();
        assert_eq!(tf32.a_coord(5, 1), (9, 1));
        assert_eq!(tf32.a_coord(5, 2), (1, 5));
        assert_eq!(tf32.b_coord(5, 1), (5, 1));
        let i8 = Layout::new(MmaShape::M16n8k32, Ty::S8, Ty::S8, Ty::S32, Ty::S32).unwrap();
        assert_eq!(i8.a_coord(5, 4), (9, 4));
        assert_eq!(i8.a_coord(5, 9), (1, 21));
        assert_eq!(i8.b_coord(5, 5), (21, 1));
        let f64l = Layout::new(MmaShape::M8n8k4, Ty::F64, Ty::F64, Ty::F64, Ty::F64).unwrap();
        assert_eq!(f64l.a_coord(5, 0), (1, 1));
        assert_eq!(f64l.c_coord(5, 1), (1, 3));
        assert_eq!(ldmatrix_source(5, 1, false), (1, 3));
        assert_eq!(ldmatrix_source(5, 1, true), (3, 1));
    }

    /// The wgmma D numbering covers the 64 x N tile once, whatever N.
    #[test]
    fn wgmma_d_layout_is_a_bijection() {
        for n in [8usize, 24, 256] {
            let mut seen = vec![0; 64 * n];
            for w in 0..4 {
                for l in 0..32 {
                    for i in 0..n / 2 {
                        let (r, c) = wgmma_d_coord(w, l, i);
                        seen[r * n + c] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&x| x == 1), "n{n}");
        }
        // Hand-checked: warp 1, lane 5 (groupID 1, threadID_in_group 1), element 6.
        assert_eq!(wgmma_d_coord(1, 5, 6), (16 + 1 + 8, 8 + 2));
    }

    #[test]
    fn packing_is_low_to_high() {
        let mut regs = vec![0u64; 2];
        set_element_bits(&mut regs, Ty::S8, 5, 0xab);
        assert_eq!(regs[1], 0xab00);
        assert_eq!(element_bits(&regs, Ty::S8, 5), 0xab);
        set_element_bits(&mut regs, Ty::F16, 1, 0x3c00);
        assert_eq!(regs[0], 0x3c00_0000);
    }
}
