//! Tensor-core peak cases (`tensor/mma_m16n8k16/f16.f32`, …): `mma.sync` on register fragments,
//! every warp keeping [`CHAINS`] independent accumulators busy, and the exact check that proves
//! the matrix product (fragment layouts included) was computed.
//!
//! | precision | instruction | A, B, C/D | flops per mma |
//! | --- | --- | --- | --- |
//! | f16.f16 | `mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16` | f16, f16 | 4096 |
//! | f16.f32 | `….m16n8k16.row.col.f32.f16.f16.f32` | f16, f32 | 4096 |
//! | bf16.f32 | `….m16n8k16.row.col.f32.bf16.bf16.f32` | bf16, f32 | 4096 |
//! | tf32.f32 | `….m16n8k8.row.col.f32.tf32.tf32.f32` | tf32, f32 | 2048 |
//! | s8.s32 | `….m16n8k32.row.col.s32.s8.s8.s32` | s8, s32 | 8192 |
//! | f64.f64 | `….m8n8k4.row.col.f64.f64.f64.f64` | f64, f64 | 512 |
//! | f64.f64 (sm_90+, [`HOPPER_F64`]) | `….m16n8k16.row.col.f64.f64.f64.f64` | f64, f64 | 4096 |
//! | e4m3.f32 | `….m16n8k32.row.col.f32.e4m3.e4m3.f32` (sm_89+) | e4m3, f32 | 8192 |
//!
//! The loop: each trip runs, for every chain, [`UNROLL`] pairs `D ← A·B + D; D ← A·(−B) + D`,
//! then after the loop one more `D ← A·B + D`. A and B hold small integers (−3…3), and C starts
//! at small integers, so every product and sum is exact in every format (|D| < 2^11, exact even
//! in f16): each pair returns D to exactly where it was, and the final D is exactly C + A·B —
//! whatever the loop count, independent of the tensor cores' internal rounding, and sensitive to
//! any error in the data path or in the fragment layouts (from the PTX ISA's "Matrix Fragments
//! for mma.m16n8k*" sections), which the host uses to place each matrix element in a register.
//!
//! Data-dependent power: small integers toggle fewer bits than random data, so a part that is
//! power-limited may clock a little higher here than under a real GEMM. The clock the run
//! observed is recorded beside the figure.
//!
//! This module must not launch or time anything.

use super::arith;
use super::{input_bits, Case, Family, Precision, Verdict, Work};

/// The tensor-core precisions, in display order.
pub const PRECISIONS: [Precision; 7] = [
    Precision::F16F16,
    Precision::F16F32,
    Precision::Bf16F32,
    Precision::Tf32F32,
    Precision::S8S32,
    Precision::F64F64,
    Precision::E4m3F32,
];

/// Independent accumulators per warp.
pub const CHAINS: u64 = 8;
/// (+B, −B) pairs per chain per loop trip.
pub const UNROLL: u64 = 4;
/// Threads per warp.
pub const WARP: usize = 32;

/// An MMA shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

/// One `mma.sync` form a tensor row runs: a precision at one of its shapes. Every precision has
/// one form on every GPU (`Mma::from(precision)`, the shape in the table above); f64 has a
/// second from Hopper on, [`HOPPER_F64`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mma {
    pub precision: Precision,
    pub shape: Shape,
}

impl From<Precision> for Mma {
    fn from(precision: Precision) -> Mma {
        Mma {
            precision,
            shape: default_shape(precision),
        }
    }
}

/// f64 at m16n8k16 (`….m16n8k16.row.col.f64.f64.f64.f64`, PTX ISA 7.8, sm_90 and later):
/// Hopper's SASS runs it as one `DMMA.16x8x16` (4096 flops), where Ampere's m8n8k4 is one
/// `DMMA.8x8x4` (512); kernels/mma_sm90.ptx.
pub const HOPPER_F64: Mma = Mma {
    precision: Precision::F64F64,
    shape: Shape { m: 16, n: 8, k: 16 },
};

/// Every form this family has: each of [`PRECISIONS`] at its own shape, then [`HOPPER_F64`].
pub fn forms() -> Vec<Mma> {
    PRECISIONS
        .into_iter()
        .map(Mma::from)
        .chain([HOPPER_F64])
        .collect()
}

impl Mma {
    /// The form a tensor case runs: its precision at the shape its kernel names.
    pub fn of_case(case: &Case) -> Result<Mma, String> {
        forms()
            .into_iter()
            .find(|m| m.precision == case.precision && kernel_name(*m) == case.kernel)
            .ok_or_else(|| format!("{} is not a tensor case this build made", case.id()))
    }

    /// Whether the form needs sm_90 (kernels/mma_sm90.ptx).
    pub fn needs_sm90(self) -> bool {
        self == HOPPER_F64
    }
}

/// The shape of a form's MMA.
pub fn shape(mma: impl Into<Mma>) -> Shape {
    mma.into().shape
}

/// The shape of `precision`'s MMA on every GPU.
fn default_shape(precision: Precision) -> Shape {
    let (m, n, k) = match precision {
        Precision::F16F16 | Precision::F16F32 | Precision::Bf16F32 => (16, 8, 16),
        Precision::Tf32F32 => (16, 8, 8),
        Precision::S8S32 | Precision::E4m3F32 => (16, 8, 32),
        Precision::F64F64 => (8, 8, 4),
        other => panic!("{other} is not a tensor-core precision"),
    };
    Shape { m, n, k }
}

/// The kernel name in ids: `mma_m16n8k16`.
pub fn kernel_name(mma: impl Into<Mma>) -> String {
    let s = shape(mma);
    format!("mma_m{}n{}k{}", s.m, s.n, s.k)
}

/// The PTX entry: `mma_m16n8k16_f16_f32`.
pub fn entry_name(mma: impl Into<Mma>) -> String {
    let mma = mma.into();
    format!(
        "{}_{}",
        kernel_name(mma),
        mma.precision.as_str().replace('.', "_")
    )
}

/// True for the precisions that need sm_89 (kernels/mma_sm89.ptx).
pub fn needs_sm89(precision: Precision) -> bool {
    precision == Precision::E4m3F32
}

/// Operations of one MMA (2 per multiply-add).
pub fn flops_per_mma(mma: impl Into<Mma>) -> u64 {
    let s = shape(mma);
    2 * (s.m * s.n * s.k) as u64
}

/// MMAs one warp runs in a launch of `iterations` trips.
pub fn mmas_per_warp(iterations: u64) -> u64 {
    CHAINS * (2 * UNROLL * iterations + 1)
}

/// Bits of one element of the A/B matrices (or of C/D).
fn input_element_bits(precision: Precision) -> usize {
    match precision {
        Precision::F16F16 | Precision::F16F32 | Precision::Bf16F32 => 16,
        Precision::Tf32F32 => 32,
        Precision::S8S32 | Precision::E4m3F32 => 8,
        Precision::F64F64 => 64,
        other => panic!("{other} is not a tensor-core precision"),
    }
}

fn accumulator_bits(precision: Precision) -> usize {
    match precision {
        Precision::F16F16 => 16,
        Precision::F64F64 => 64,
        _ => 32,
    }
}

/// Bits of one fragment register: 64 for f64, else 32.
pub fn register_bits(precision: Precision) -> usize {
    if precision == Precision::F64F64 {
        64
    } else {
        32
    }
}

/// Fragment registers per thread: (A, B, C/D).
pub fn registers(mma: impl Into<Mma>) -> (usize, usize, usize) {
    let Mma {
        precision,
        shape: s,
    } = mma.into();
    let per_reg = |bits: usize| register_bits(precision) / bits;
    let e = input_element_bits(precision);
    (
        s.m * s.k / WARP / per_reg(e),
        s.k * s.n / WARP / per_reg(e),
        s.m * s.n / WARP / per_reg(accumulator_bits(precision)),
    )
}

/// (row, col) of element `i` of lane `lane`'s A fragment (elements numbered low to high across
/// its registers, as in the PTX ISA).
pub fn a_coord(mma: impl Into<Mma>, lane: usize, i: usize) -> (usize, usize) {
    let mma = mma.into();
    let (g, t) = (lane >> 2, lane % 4);
    match mma.shape {
        // f64 (Hopper): row groupID (+8 for odd i), column threadID_in_group + 4 (i / 2)
        Shape { m: 16, k: 16, .. } if mma.precision == Precision::F64F64 => {
            (g + 8 * (i & 1), t + 4 * (i >> 1))
        }
        Shape { m: 16, k: 16, .. } => {
            let row = if i < 2 || (4..6).contains(&i) {
                g
            } else {
                g + 8
            };
            let col = t * 2 + (i & 1) + if i >= 4 { 8 } else { 0 };
            (row, col)
        }
        Shape { m: 16, k: 8, .. } => {
            let row = if i == 0 || i == 2 { g } else { g + 8 };
            let col = if i < 2 { t } else { t + 4 };
            (row, col)
        }
        Shape { m: 16, k: 32, .. } => {
            let row = if i < 4 || (8..12).contains(&i) {
                g
            } else {
                g + 8
            };
            let col = t * 4 + (i & 3) + if i >= 8 { 16 } else { 0 };
            (row, col)
        }
        _ => (g, t), // m8n8k4 f64
    }
}

/// (row, col) of element `i` of lane `lane`'s B fragment (B is k × n).
pub fn b_coord(mma: impl Into<Mma>, lane: usize, i: usize) -> (usize, usize) {
    let mma = mma.into();
    let (g, t) = (lane >> 2, lane % 4);
    let row = match mma.shape {
        Shape { k: 16, .. } if mma.precision == Precision::F64F64 => t + 4 * i,
        Shape { k: 16, .. } => t * 2 + (i & 1) + if i >= 2 { 8 } else { 0 },
        Shape { m: 16, k: 8, .. } => t + if i >= 1 { 4 } else { 0 },
        Shape { k: 32, .. } => t * 4 + (i & 3) + if i >= 4 { 16 } else { 0 },
        _ => t, // m8n8k4 f64
    };
    (row, g)
}

/// (row, col) of element `i` of lane `lane`'s C/D fragment.
pub fn c_coord(mma: impl Into<Mma>, lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane % 4);
    if mma.into().shape.m == 8 {
        (g, t * 2 + i)
    } else {
        (if i < 2 { g } else { g + 8 }, t * 2 + (i & 1))
    }
}

/// Small integers −3…3 from the input hash (a third of them zero-free ±1…3 mixes).
pub(crate) fn small(array: u64, index: u64) -> i64 {
    (input_bits(array, index) % 7) as i64 - 3
}

/// `A[r][c]` (m × k).
pub fn a_value(mma: impl Into<Mma>, r: usize, c: usize) -> i64 {
    small(0xA, (r * shape(mma).k + c) as u64)
}

/// `B[r][c]` (k × n).
pub fn b_value(mma: impl Into<Mma>, r: usize, c: usize) -> i64 {
    small(0xB, (r * shape(mma).n + c) as u64)
}

/// The starting accumulator C of chain `chain`, element `[r][c]`: −64…63, different per chain.
pub fn c_value(mma: impl Into<Mma>, chain: u64, r: usize, c: usize) -> i64 {
    let s = shape(mma);
    (input_bits(0xC0 + chain, (r * s.n + c) as u64) % 128) as i64 - 64
}

/// The exact product `(A·B)[r][c]`.
pub fn product(mma: impl Into<Mma>, r: usize, c: usize) -> i64 {
    let mma = mma.into();
    (0..mma.shape.k)
        .map(|i| a_value(mma, r, i) * b_value(mma, i, c))
        .sum()
}

/// e4m3 bits of a small integer (|v| ≤ 3; all exact).
fn e4m3_bits(v: i64) -> u64 {
    let magnitude = match v.abs() {
        0 => 0x00,
        1 => 0x38, // 2^0
        2 => 0x40, // 2^1
        3 => 0x44, // 2^1 × 1.5
        _ => panic!("{v} is not a small integer"),
    };
    magnitude | if v < 0 { 0x80 } else { 0 }
}

/// e5m2 bits of a small integer (|v| ≤ 3; all exact).
fn e5m2_bits(v: i64) -> u64 {
    let magnitude = match v.abs() {
        0 => 0x00,
        1 => 0x3C, // 2^0
        2 => 0x40, // 2^1
        3 => 0x42, // 2^1 × 1.5
        _ => panic!("{v} is not a small integer"),
    };
    magnitude | if v < 0 { 0x80 } else { 0 }
}

/// Bits of a small integer as one input element of `precision`.
pub(crate) fn input_element(precision: Precision, v: i64) -> u64 {
    match precision {
        Precision::F16F16 | Precision::F16F32 => arith::f16_bits(v as f64) as u64,
        Precision::Bf16F32 => arith::bf16_bits(v as f64) as u64,
        Precision::Tf32F32 => (v as f32).to_bits() as u64,
        Precision::S8S32 => v as i8 as u8 as u64,
        Precision::E4m3F32 => e4m3_bits(v),
        Precision::E5m2F32 => e5m2_bits(v),
        Precision::F64F64 => (v as f64).to_bits(),
        other => panic!("{other} is not a tensor-core precision"),
    }
}

/// Bits of an integer as one accumulator element.
pub(crate) fn accumulator_element(precision: Precision, v: i64) -> u64 {
    match precision {
        Precision::F16F16 => arith::f16_bits(v as f64) as u64,
        Precision::S8S32 => v as i32 as u32 as u64,
        Precision::F64F64 => (v as f64).to_bits(),
        _ => (v as f32).to_bits() as u64,
    }
}

/// Packs elements (low to high) into one register's bits.
fn pack(elements: impl Iterator<Item = u64>, element_bits: usize) -> u64 {
    elements.enumerate().fold(0u64, |acc, (i, e)| {
        let mask = if element_bits == 64 {
            u64::MAX
        } else {
            (1u64 << element_bits) - 1
        };
        acc | ((e & mask) << (i * element_bits))
    })
}

/// Lays out a fragment: for each lane, `regs` registers of `per_reg` elements each, element i of
/// the lane from `value(lane, i)`.
fn fragment(
    regs: usize,
    per_reg: usize,
    element_bits: usize,
    value: impl Fn(usize, usize) -> u64,
) -> Vec<u64> {
    let mut out = Vec::with_capacity(WARP * regs);
    for lane in 0..WARP {
        for r in 0..regs {
            out.push(pack(
                (0..per_reg).map(|j| value(lane, r * per_reg + j)),
                element_bits,
            ));
        }
    }
    out
}

/// The A fragments of a warp: `WARP × registers().0` registers, lane-major.
pub fn a_fragments(mma: impl Into<Mma>) -> Vec<u64> {
    let mma = mma.into();
    let precision = mma.precision;
    let bits = input_element_bits(precision);
    let per_reg = register_bits(precision) / bits;
    fragment(registers(mma).0, per_reg, bits, |lane, i| {
        let (r, c) = a_coord(mma, lane, i);
        input_element(precision, a_value(mma, r, c))
    })
}

/// The B fragments of a warp (`negated`: of −B).
pub fn b_fragments(mma: impl Into<Mma>, negated: bool) -> Vec<u64> {
    let mma = mma.into();
    let precision = mma.precision;
    let bits = input_element_bits(precision);
    let per_reg = register_bits(precision) / bits;
    let sign = if negated { -1 } else { 1 };
    fragment(registers(mma).1, per_reg, bits, |lane, i| {
        let (r, c) = b_coord(mma, lane, i);
        input_element(precision, sign * b_value(mma, r, c))
    })
}

/// The starting accumulators of all chains: `CHAINS × WARP × registers().2`, chain-major.
pub fn c_fragments(mma: impl Into<Mma>) -> Vec<u64> {
    let mma = mma.into();
    (0..CHAINS)
        .flat_map(|chain| accumulator_fragment(mma, |r, c| c_value(mma, chain, r, c)))
        .collect()
}

/// The expected final accumulators of all chains (C + A·B), laid out like [`c_fragments`].
pub fn d_fragments(mma: impl Into<Mma>) -> Vec<u64> {
    let mma = mma.into();
    (0..CHAINS)
        .flat_map(|chain| {
            accumulator_fragment(mma, |r, c| c_value(mma, chain, r, c) + product(mma, r, c))
        })
        .collect()
}

fn accumulator_fragment(mma: Mma, value: impl Fn(usize, usize) -> i64) -> Vec<u64> {
    let precision = mma.precision;
    let bits = accumulator_bits(precision);
    let per_reg = register_bits(precision) / bits;
    fragment(registers(mma).2, per_reg, bits, |lane, i| {
        let (r, c) = c_coord(mma, lane, i);
        accumulator_element(precision, value(r, c))
    })
}

/// The case for `warps` warps running `iterations` trips each. `elements` counts the warps (each
/// stores its chains' D fragments).
pub fn case(mma: impl Into<Mma>, warps: u64, iterations: u64) -> Case {
    let mma = mma.into();
    let precision = mma.precision;
    let (_, _, c_regs) = registers(mma);
    let d_bytes = CHAINS * (WARP * c_regs * register_bits(precision) / 8) as u64;
    Case {
        family: Family::Tensor,
        kernel: kernel_name(mma),
        precision,
        param: None,
        elements: warps,
        working_set_bytes: warps * d_bytes,
        work: Work {
            bytes_read: 0,
            bytes_written: 0,
            flops: warps * mmas_per_warp(iterations) * flops_per_mma(mma),
        },
    }
}

/// The loop count a case was built with.
pub fn iterations_of(case: &Case) -> Result<u64, String> {
    let per_warp = case.work.flops / case.elements.max(1);
    let per_mma = flops_per_mma(Mma::of_case(case)?);
    let mmas = per_warp / per_mma;
    if case.family != Family::Tensor
        || case.elements == 0
        || per_warp * case.elements != case.work.flops
        || mmas * per_mma != per_warp
        || mmas < CHAINS
        || !(mmas / CHAINS - 1).is_multiple_of(2 * UNROLL)
        || !mmas.is_multiple_of(CHAINS)
    {
        return Err(format!(
            "{} is not a tensor case this build made",
            case.id()
        ));
    }
    Ok((mmas / CHAINS - 1) / (2 * UNROLL))
}

/// Loop trips so that one launch does about `target_flops` operations (at least 1).
pub fn iterations_for(mma: impl Into<Mma>, warps: u64, target_flops: f64) -> u64 {
    let per_trip = (warps * CHAINS * 2 * UNROLL * flops_per_mma(mma)).max(1) as f64;
    (target_flops / per_trip).ceil().max(1.0) as u64
}

/// Checks the D fragments of `warps` warps (`got(i)`: register i, laid out warp-major, then as
/// [`d_fragments`]) against C + A·B.
pub fn check(mma: impl Into<Mma>, warps: usize, got: impl Fn(usize) -> u64) -> Verdict {
    let mma = mma.into();
    let precision = mma.precision;
    let want = d_fragments(mma);
    let per_warp = want.len();
    let show = |bits: u64| -> String {
        let elements = register_bits(precision) / accumulator_bits(precision);
        let values: Vec<String> = (0..elements)
            .map(|j| {
                let e = if accumulator_bits(precision) == 64 {
                    bits
                } else {
                    (bits >> (j * accumulator_bits(precision)))
                        & ((1u64 << accumulator_bits(precision)) - 1)
                };
                match precision {
                    Precision::F16F16 => format!("{}", arith::f16_value(e as u16)),
                    Precision::S8S32 => format!("{}", e as u32 as i32),
                    Precision::F64F64 => format!("{}", f64::from_bits(e)),
                    _ => format!("{}", f32::from_bits(e as u32)),
                }
            })
            .collect();
        values.join(", ")
    };
    let mut failures = Vec::new();
    let mut count = 0;
    for i in 0..warps * per_warp {
        let (g, w) = (got(i), want[i % per_warp]);
        if g != w {
            count += 1;
            if failures.len() < 3 {
                let (warp, rest) = (i / per_warp, i % per_warp);
                let regs = registers(mma).2;
                let chain = rest / (WARP * regs);
                let lane = rest / regs % WARP;
                failures.push(format!(
                    "warp {warp} chain {chain} lane {lane} register {}: is ({}), should be ({})",
                    rest % regs,
                    show(g),
                    show(w)
                ));
            }
        }
    }
    if count == 0 {
        Verdict::valid()
    } else {
        Verdict::invalid(format!(
            "{count} of {} accumulator registers wrong: {}",
            warps * per_warp,
            failures.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_counts_match_the_ptx_isa() {
        use Precision::*;
        assert_eq!(registers(F16F16), (4, 2, 2));
        assert_eq!(registers(F16F32), (4, 2, 4));
        assert_eq!(registers(Bf16F32), (4, 2, 4));
        assert_eq!(registers(Tf32F32), (4, 2, 4));
        assert_eq!(registers(S8S32), (4, 2, 4));
        assert_eq!(registers(E4m3F32), (4, 2, 4));
        assert_eq!(registers(F64F64), (1, 1, 2));
        assert_eq!(entry_name(F16F32), "mma_m16n8k16_f16_f32");
        assert_eq!(kernel_name(F64F64), "mma_m8n8k4");
    }

    /// Every layout covers each matrix element exactly once across the warp.
    #[test]
    fn layouts_are_bijections() {
        for p in forms() {
            let s = shape(p);
            let elems = |bits: usize| register_bits(p.precision) / bits;
            let (ar, br, cr) = registers(p);
            let check = |name: &str,
                         rows,
                         cols,
                         per_lane,
                         coord: &dyn Fn(usize, usize) -> (usize, usize)| {
                let mut seen = vec![0u32; rows * cols];
                for lane in 0..WARP {
                    for i in 0..per_lane {
                        let (r, c) = coord(lane, i);
                        assert!(r < rows && c < cols, "{p:?} {name} lane {lane} i {i}");
                        seen[r * cols + c] += 1;
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "{p:?} {name} not a bijection");
            };
            let (input, acc) = (
                elems(input_element_bits(p.precision)),
                elems(accumulator_bits(p.precision)),
            );
            check("A", s.m, s.k, ar * input, &|l, i| a_coord(p, l, i));
            check("B", s.k, s.n, br * input, &|l, i| b_coord(p, l, i));
            check("C", s.m, s.n, cr * acc, &|l, i| c_coord(p, l, i));
        }
    }

    #[test]
    fn values_are_exact_and_small() {
        for p in forms() {
            let s = shape(p);
            for r in 0..s.m {
                for c in 0..s.n {
                    for chain in 0..CHAINS {
                        let d = c_value(p, chain, r, c) + product(p, r, c);
                        assert!(d.abs() < 2048, "{p:?}: |D| must stay exact in f16");
                    }
                }
            }
            // −B really is the negation, element by element
            let (b, nb) = (b_fragments(p, false), b_fragments(p, true));
            assert_ne!(b, nb);
        }
        assert_eq!(e4m3_bits(-3), 0xC4);
        assert_eq!(e5m2_bits(-3), 0xC2);
        assert_eq!(e5m2_bits(2), 0x40);
        // the fragments of D differ from those of C: the product is not zero
        assert_ne!(
            c_fragments(Precision::F16F32),
            d_fragments(Precision::F16F32)
        );
    }

    #[test]
    fn work_and_iterations_round_trip() {
        let c = case(Precision::F16F32, 100, 33);
        assert_eq!(c.id(), "tensor/mma_m16n8k16/f16.f32");
        assert_eq!(c.work.flops, 100 * 8 * (2 * 4 * 33 + 1) * 4096);
        assert_eq!(iterations_of(&c), Ok(33));
        let mut bad = c.clone();
        bad.work.flops += 4096;
        assert!(iterations_of(&bad).is_err());
        assert_eq!(iterations_for(Precision::F64F64, 1, 1.0), 1);
    }

    #[test]
    fn check_names_warp_chain_lane() {
        let p = Precision::S8S32;
        let want = d_fragments(p);
        let n = want.len();
        assert!(check(p, 2, |i| want[i % n]).valid);
        let v = check(p, 2, |i| if i == n + 5 { want[5] + 1 } else { want[i % n] });
        assert!(!v.valid);
        assert!(
            v.detail.contains("warp 1 chain 0 lane 1 register 1"),
            "{}",
            v.detail
        );
    }
}
