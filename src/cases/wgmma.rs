//! Hopper's tensor-core peaks through `wgmma.mma_async` (`tensor/wgmma_m64n256k16/bf16.f32`, …):
//! the warpgroup MMA that reaches the dense tensor rate on sm_90, where `mma.sync` issues at
//! about half of it. The kernels are `kernels/wgmma.ptx.in` (`.version 8.0`, `.target sm_90a`),
//! one entry per precision and A source, expanded by [`crate::kernels::wgmma::expand`]; they run only on compute
//! capability 9.0 (sm_90a code runs nowhere else).
//!
//! | precision | instruction | K | A, B in shared memory |
//! | --- | --- | --- | --- |
//! | f16.f16 | `wgmma.mma_async.sync.aligned.m64n256k16.f16.f16.f16` | 16 | 32 bytes of K per row |
//! | f16.f32 | `….m64n256k16.f32.f16.f16` | 16 | |
//! | bf16.f32 | `….m64n256k16.f32.bf16.bf16` | 16 | |
//! | tf32.f32 | `….m64n256k8.f32.tf32.tf32` | 8 | |
//! | e4m3.f32 | `….m64n256k32.f32.e4m3.e4m3` | 32 | |
//! | e5m2.f32 | `….m64n256k32.f32.e5m2.e5m2` | 32 | |
//! | s8.s32 | `….m64n256k32.s32.s8.s8` | 32 | |
//!
//! Every instruction is the widest the ISA has (N = 256) and reads 32 bytes of K per row of A
//! and B, whatever the type. Two forms per precision: A from shared memory through a matrix
//! descriptor (kernel `wgmma_m64n256kK`, the form CUTLASS's GEMMs use) and A from registers
//! (`wgmma_m64n256kK_rs`). B is always in shared memory.
//!
//! **Shared memory** (the PTX ISA's "Shared Memory Matrix Layout" and "Matrix Descriptor
//! Format" for `wgmma`; CUTLASS `cute/atom/mma_traits_sm90_gmma.hpp`), both K-major:
//! - B (N × K, N rows of K contiguous elements) in the **128-byte swizzle** mode: row n's
//!   128-byte line is at (n / 8) · 1024 + (n % 8) · 128 (SBO = 1024: the 8-row atoms are
//!   contiguous) and its 16-byte chunk c is stored at chunk c ^ (n % 8). Bytes 0–31 of each line
//!   hold B's K elements and bytes 32–63 those of −B, so −B is the same descriptor with its start
//!   address 32 bytes further (as CUTLASS walks K inside a swizzle atom); the other 64 bytes are
//!   zero. 32 KiB, 1024-byte aligned.
//! - A (64 × K) of the shared-memory form, **no swizzle** (interleaved core matrices): the core
//!   matrix of rows 8i … 8i + 7 and K bytes 16j … 16j + 15 is 128 contiguous bytes (row r%8 at
//!   16 · (r % 8)) at i · SBO + j · LBO, with LBO = 128 and SBO = 256. 2 KiB.
//!
//! Both images are built here ([`a_image`], [`b_image`]) and copied byte for byte into shared
//! memory by the kernel, so the layout lives in one place on the host; the descriptors the kernel
//! builds must describe it, and a wrong mode, LBO, SBO or start address gives a wrong D.
//!
//! **Registers** (the ISA's "Register Fragments" for `wgmma` .m64nNkK): warp w of the warpgroup
//! holds rows 16w … 16w + 15. A from registers: each warp's 16 × K slice in the `mma.m16n8kK` A
//! fragment of its type (four 32-bit registers). The accumulator: 32-bit register i of lane l is
//! row 16w + l / 4 + 8 · ((i / 2) % 2), column 8 · (i / 4) + 2 · (l % 4) + i % 2 (128 registers
//! for f32/s32, N / 2); with f16 accumulation, register j holds elements 2j (low half) and
//! 2j + 1 of that numbering (64 registers).
//!
//! **The loop** (each warpgroup one accumulator, 128 registers at most): every trip issues
//! [`UNROLL`] pairs `D ← A·B + D; D ← A·(−B) + D` into the accumulator as one commit group and
//! waits until at most one group is pending (`wgmma.wait_group 1`), so the tensor cores always
//! have the next group queued; after the loop one more `D ← A·B + D` and `wait_group 0`. A, B and
//! C are small integers, so every sum is exact in every format and D ends at C + A·B exactly,
//! whatever the trip count. The block record's trip count (counted by the loop) proves the work.
//!
//! This module must not launch or time anything.

use super::tensor;
use super::{arith, input_bits, Case, Family, Precision, Verdict, Work};

/// The `wgmma` precisions, in display order.
pub const PRECISIONS: [Precision; 7] = [
    Precision::F16F16,
    Precision::F16F32,
    Precision::Bf16F32,
    Precision::Tf32F32,
    Precision::E4m3F32,
    Precision::E5m2F32,
    Precision::S8S32,
];

/// Where the instruction reads A from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ASource {
    /// Shared memory, through a matrix descriptor (kernel `wgmma_m64n256kK`).
    Shared,
    /// Registers (kernel `wgmma_m64n256kK_rs`).
    Registers,
}

/// Both A sources, shared memory first.
pub const SOURCES: [ASource; 2] = [ASource::Shared, ASource::Registers];

/// Rows of A and D per instruction.
pub const M: usize = 64;
/// Columns of B and D per instruction: the widest shape.
pub const N: usize = 256;
/// Threads of a warpgroup.
pub const WARPGROUP: usize = 128;
/// (+B, −B) pairs per loop trip.
pub const UNROLL: u64 = 4;
/// Bytes of K every instruction reads per row of A and B.
pub const K_BYTES: usize = 32;
/// Bytes of the B image (256 lines of 128 bytes).
pub const B_IMAGE_BYTES: usize = N * 128;
/// Bytes of the A image of the shared-memory form.
pub const A_IMAGE_BYTES: usize = M * K_BYTES;
/// LBO and SBO of A's descriptor (no swizzle), and SBO of B's (128-byte swizzle).
pub const A_LBO: usize = 128;
pub const A_SBO: usize = 256;
pub const B_SBO: usize = 1024;

/// Bytes of one input element.
pub fn element_bytes(precision: Precision) -> usize {
    match precision {
        Precision::F16F16 | Precision::F16F32 | Precision::Bf16F32 => 2,
        Precision::Tf32F32 => 4,
        Precision::E4m3F32 | Precision::E5m2F32 | Precision::S8S32 => 1,
        other => panic!("{other} is not a wgmma precision"),
    }
}

/// K of the instruction: 32 bytes of elements.
pub fn k(precision: Precision) -> usize {
    K_BYTES / element_bytes(precision)
}

/// The kernel name in ids: `wgmma_m64n256k16` (A in shared memory), `wgmma_m64n256k16_rs`.
pub fn kernel_name(precision: Precision, a: ASource) -> String {
    let base = format!("wgmma_m{M}n{N}k{}", k(precision));
    match a {
        ASource::Shared => base,
        ASource::Registers => base + "_rs",
    }
}

/// The A source of a `wgmma` kernel name, or `None` for any other kernel of `precision`.
pub fn source_of(precision: Precision, kernel: &str) -> Option<ASource> {
    if !PRECISIONS.contains(&precision) {
        return None;
    }
    SOURCES
        .into_iter()
        .find(|&a| kernel_name(precision, a) == kernel)
}

/// The PTX entry: `wgmma_m64n256k16_bf16_f32`, `wgmma_m64n256k16_rs_bf16_f32`.
pub fn entry_name(precision: Precision, a: ASource) -> String {
    format!(
        "{}_{}",
        kernel_name(precision, a),
        precision.as_str().replace('.', "_")
    )
}

/// Operations of one instruction (2 per multiply-add).
pub fn flops_per_wgmma(precision: Precision) -> u64 {
    2 * (M * N * k(precision)) as u64
}

/// Instructions one warpgroup issues in a launch of `iterations` trips.
pub fn wgmmas_per_warpgroup(iterations: u64) -> u64 {
    2 * UNROLL * iterations + 1
}

fn accumulator_bits(precision: Precision) -> usize {
    if precision == Precision::F16F16 {
        16
    } else {
        32
    }
}

/// 32-bit accumulator registers per thread: 128 (f32, s32) or 64 (f16 pairs).
pub fn accumulator_registers(precision: Precision) -> usize {
    M * N / WARPGROUP * accumulator_bits(precision) / 32
}

/// The `mma.sync` precision whose A fragment layout the register form of A uses.
fn fragment_twin(precision: Precision) -> Precision {
    match element_bytes(precision) {
        2 => Precision::F16F32,
        4 => Precision::Tf32F32,
        _ => Precision::E4m3F32,
    }
}

/// `A[r][c]` (64 × K): small integers −3…3.
pub fn a_value(precision: Precision, r: usize, c: usize) -> i64 {
    tensor::small(0x2A, (r * k(precision) + c) as u64)
}

/// `B[r][c]` (K × 256); the same for every precision (K rows of them are used).
pub fn b_value(_precision: Precision, r: usize, c: usize) -> i64 {
    tensor::small(0x2B, (r * N + c) as u64)
}

/// The starting accumulator `C[r][c]`: −64…63.
pub fn c_value(r: usize, c: usize) -> i64 {
    (input_bits(0x2C, (r * N + c) as u64) % 128) as i64 - 64
}

/// The exact `(A·B)[r][c]`.
pub fn product(precision: Precision, r: usize, c: usize) -> i64 {
    (0..k(precision))
        .map(|i| a_value(precision, r, i) * b_value(precision, i, c))
        .sum()
}

/// Byte offset of B's row `n`, K byte `kb` (0…63: 0–31 B, 32–63 −B) in the 128-byte-swizzled
/// image.
pub fn b_offset(n: usize, kb: usize) -> usize {
    let logical = (n / 8) * B_SBO + (n % 8) * 128 + kb;
    logical ^ (((logical >> 7) & 7) << 4)
}

/// Byte offset of A's row `r`, K byte `kb` in the interleaved (no swizzle) image.
pub fn a_offset(r: usize, kb: usize) -> usize {
    (r / 8) * A_SBO + (kb / 16) * A_LBO + (r % 8) * 16 + kb % 16
}

/// Writes the element bits `bits` of `bytes` bytes at `at`, little-endian.
fn put(image: &mut [u8], at: usize, bytes: usize, bits: u64) {
    image[at..at + bytes].copy_from_slice(&bits.to_le_bytes()[..bytes]);
}

/// Bytes as little-endian 32-bit words (the launch's word size).
fn words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")) as u64)
        .collect()
}

/// The B image (B and −B, 128-byte swizzle), as 32-bit words.
pub fn b_image(precision: Precision) -> Vec<u64> {
    let eb = element_bytes(precision);
    let mut image = vec![0u8; B_IMAGE_BYTES];
    for n in 0..N {
        for kk in 0..k(precision) {
            let v = b_value(precision, kk, n);
            for (half, sign) in [(0, 1), (K_BYTES, -1)] {
                let bits = tensor::input_element(precision, sign * v);
                put(&mut image, b_offset(n, half + kk * eb), eb, bits);
            }
        }
    }
    words(&image)
}

/// The A image of the shared-memory form (no swizzle), as 32-bit words.
pub fn a_image(precision: Precision) -> Vec<u64> {
    let eb = element_bytes(precision);
    let mut image = vec![0u8; A_IMAGE_BYTES];
    for r in 0..M {
        for kk in 0..k(precision) {
            let bits = tensor::input_element(precision, a_value(precision, r, kk));
            put(&mut image, a_offset(r, kk * eb), eb, bits);
        }
    }
    words(&image)
}

/// The A registers of the register form: 4 per thread, thread-major (128 × 4 words).
pub fn a_registers(precision: Precision) -> Vec<u64> {
    let twin = fragment_twin(precision);
    let bits = 8 * element_bytes(precision);
    let per_reg = 32 / bits;
    let mut out = Vec::with_capacity(WARPGROUP * 4);
    for t in 0..WARPGROUP {
        let (warp, lane) = (t / 32, t % 32);
        for reg in 0..4 {
            let word = (0..per_reg).fold(0u64, |acc, j| {
                let (r, c) = tensor::a_coord(twin, lane, reg * per_reg + j);
                let v = tensor::input_element(precision, a_value(precision, 16 * warp + r, c));
                acc | (v & ((1u64 << bits) - 1)) << (j * bits)
            });
            out.push(word);
        }
    }
    out
}

/// The words of the kernel's `a` argument for A source `a`: A's shared-memory image, or the
/// register fragments.
pub fn a_words(precision: Precision, a: ASource) -> Vec<u64> {
    match a {
        ASource::Shared => a_image(precision),
        ASource::Registers => a_registers(precision),
    }
}

/// (row, column) of 32-bit accumulator element `i` of thread `t` (0…127).
pub fn d_coord(t: usize, i: usize) -> (usize, usize) {
    let (warp, lane) = (t / 32, t % 32);
    (
        16 * warp + lane / 4 + 8 * ((i / 2) % 2),
        8 * (i / 4) + 2 * (lane % 4) + i % 2,
    )
}

/// One warpgroup's accumulator registers, thread-major, element values from `value(row, col)`.
fn accumulator(precision: Precision, value: impl Fn(usize, usize) -> i64) -> Vec<u64> {
    let regs = accumulator_registers(precision);
    let per_reg = 32 / accumulator_bits(precision);
    let mut out = Vec::with_capacity(WARPGROUP * regs);
    for t in 0..WARPGROUP {
        for reg in 0..regs {
            let word = (0..per_reg).fold(0u64, |acc, j| {
                let (r, c) = d_coord(t, reg * per_reg + j);
                let bits = tensor::accumulator_element(precision, value(r, c));
                let mask = (1u64 << accumulator_bits(precision)) - 1;
                acc | (bits & mask) << (j * accumulator_bits(precision))
            });
            out.push(word);
        }
    }
    out
}

/// The starting accumulator C of one warpgroup (every warpgroup starts from it).
pub fn c_registers(precision: Precision) -> Vec<u64> {
    accumulator(precision, c_value)
}

/// The expected D of one warpgroup: C + A·B.
pub fn d_registers(precision: Precision) -> Vec<u64> {
    accumulator(precision, |r, c| c_value(r, c) + product(precision, r, c))
}

/// The case for `warpgroups` warpgroups running `iterations` trips each; `elements` counts the
/// warpgroups (each stores its D).
pub fn case(precision: Precision, a: ASource, warpgroups: u64, iterations: u64) -> Case {
    let d_bytes = (WARPGROUP * accumulator_registers(precision) * 4) as u64;
    Case {
        family: Family::Tensor,
        kernel: kernel_name(precision, a),
        precision,
        param: None,
        elements: warpgroups,
        working_set_bytes: warpgroups * d_bytes,
        work: Work {
            bytes_read: 0,
            bytes_written: 0,
            flops: warpgroups * wgmmas_per_warpgroup(iterations) * flops_per_wgmma(precision),
        },
    }
}

/// The loop count a `wgmma` case was built with.
pub fn iterations_of(case: &Case) -> Result<u64, String> {
    let not_ours = || format!("{} is not a wgmma case this build made", case.id());
    if case.family != Family::Tensor || source_of(case.precision, &case.kernel).is_none() {
        return Err(not_ours());
    }
    let per = flops_per_wgmma(case.precision);
    let per_group = case.work.flops / case.elements.max(1);
    let count = per_group / per;
    if case.elements == 0
        || per_group * case.elements != case.work.flops
        || count * per != per_group
        || count == 0
        || !(count - 1).is_multiple_of(2 * UNROLL)
    {
        return Err(not_ours());
    }
    Ok((count - 1) / (2 * UNROLL))
}

/// Loop trips so that one launch does about `target_flops` operations (at least 1).
pub fn iterations_for(precision: Precision, warpgroups: u64, target_flops: f64) -> u64 {
    let per_trip = (warpgroups * 2 * UNROLL * flops_per_wgmma(precision)).max(1) as f64;
    (target_flops / per_trip).ceil().max(1.0) as u64
}

fn show(precision: Precision, word: u64) -> String {
    match precision {
        Precision::F16F16 => format!(
            "{}, {}",
            arith::f16_value(word as u16),
            arith::f16_value((word >> 16) as u16)
        ),
        Precision::S8S32 => format!("{}", word as u32 as i32),
        _ => format!("{}", f32::from_bits(word as u32)),
    }
}

/// Checks the D registers of `warpgroups` warpgroups (`got(i)`: 32-bit word i, warpgroup-major,
/// then as [`d_registers`]) against C + A·B.
pub fn check(precision: Precision, warpgroups: usize, got: impl Fn(usize) -> u64) -> Verdict {
    let want = d_registers(precision);
    let per_group = want.len();
    let regs = accumulator_registers(precision);
    let mut failures = Vec::new();
    let mut count = 0;
    for i in 0..warpgroups * per_group {
        let (g, w) = (got(i) & 0xFFFF_FFFF, want[i % per_group]);
        if g != w {
            count += 1;
            if failures.len() < 3 {
                let rest = i % per_group;
                let (t, reg) = (rest / regs, rest % regs);
                let first = reg * 32 / accumulator_bits(precision);
                let (r, c) = d_coord(t, first);
                failures.push(format!(
                    "warpgroup {} thread {t} register {reg} (D[{r}][{c}]): is ({}), should be ({})",
                    i / per_group,
                    show(precision, g),
                    show(precision, w)
                ));
            }
        }
    }
    if count == 0 {
        Verdict::valid()
    } else {
        Verdict::invalid(format!(
            "{count} of {} accumulator registers wrong: {}",
            warpgroups * per_group,
            failures.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::wgmma::expand;

    #[test]
    fn names_and_shapes() {
        assert_eq!(
            entry_name(Precision::Bf16F32, ASource::Shared),
            "wgmma_m64n256k16_bf16_f32"
        );
        assert_eq!(
            entry_name(Precision::E5m2F32, ASource::Registers),
            "wgmma_m64n256k32_rs_e5m2_f32"
        );
        assert_eq!(
            kernel_name(Precision::Tf32F32, ASource::Shared),
            "wgmma_m64n256k8"
        );
        assert_eq!(
            source_of(Precision::S8S32, "wgmma_m64n256k32_rs"),
            Some(ASource::Registers)
        );
        assert_eq!(source_of(Precision::S8S32, "wgmma_m64n256k16"), None);
        assert_eq!(source_of(Precision::F64F64, "wgmma_m64n256k16"), None);
        assert_eq!(accumulator_registers(Precision::F16F16), 64);
        assert_eq!(accumulator_registers(Precision::Bf16F32), 128);
        assert_eq!(flops_per_wgmma(Precision::Bf16F32), 2 * 64 * 256 * 16);
    }

    /// Every layout covers each element exactly once.
    #[test]
    fn layouts_are_bijections() {
        // B: 256 rows × 64 K bytes onto distinct bytes of the first half of each line
        let mut seen = vec![false; B_IMAGE_BYTES];
        for n in 0..N {
            for kb in 0..64 {
                let at = b_offset(n, kb);
                assert!(!seen[at], "B ({n}, {kb}) twice");
                seen[at] = true;
                // the swizzle keeps a row inside its own 128-byte line
                assert_eq!(at / 128, (n / 8) * 8 + n % 8);
            }
        }
        let mut seen = vec![false; A_IMAGE_BYTES];
        for r in 0..M {
            for kb in 0..K_BYTES {
                assert!(!std::mem::replace(&mut seen[a_offset(r, kb)], true));
            }
        }
        assert!(seen.iter().all(|&s| s));
        let mut seen = vec![0u32; M * N];
        for t in 0..WARPGROUP {
            for i in 0..M * N / WARPGROUP {
                let (r, c) = d_coord(t, i);
                seen[r * N + c] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn the_swizzle_moves_chunks_by_row() {
        // row 0's chunks stay; row 1's chunk 0 goes to chunk 1; row 9 (atom 1, row 1) likewise
        assert_eq!(b_offset(0, 16), 16);
        assert_eq!(b_offset(1, 0), 128 + 16);
        assert_eq!(b_offset(1, 16), 128);
        assert_eq!(b_offset(9, 0), 1024 + 128 + 16);
        assert_eq!(b_offset(7, 32), 7 * 128 + (2 ^ 7) * 16);
        assert_eq!(a_offset(9, 17), 256 + 128 + 16 + 1);
    }

    #[test]
    fn values_are_exact_and_small() {
        for p in PRECISIONS {
            for r in 0..M {
                for c in 0..N {
                    assert!((c_value(r, c) + product(p, r, c)).abs() < 2048, "{p}");
                }
            }
            assert_ne!(c_registers(p), d_registers(p), "{p}: A·B is not zero");
            assert_eq!(b_image(p).len() * 4, B_IMAGE_BYTES);
            assert_eq!(a_image(p).len() * 4, A_IMAGE_BYTES);
            assert_eq!(a_registers(p).len(), 4 * WARPGROUP);
        }
    }

    #[test]
    fn work_and_iterations_round_trip() {
        let c = case(Precision::Bf16F32, ASource::Registers, 264, 37);
        assert_eq!(c.id(), "tensor/wgmma_m64n256k16_rs/bf16.f32");
        assert_eq!(c.work.flops, 264 * (8 * 37 + 1) * 2 * 64 * 256 * 16);
        assert_eq!(iterations_of(&c), Ok(37));
        let mut bad = c.clone();
        bad.work.flops += flops_per_wgmma(Precision::Bf16F32);
        assert!(iterations_of(&bad).is_err());
        let mut other = c.clone();
        other.kernel = "mma_m16n8k16".into();
        assert!(iterations_of(&other).is_err());
        assert_eq!(iterations_for(Precision::S8S32, 1, 1.0), 1);
    }

    #[test]
    fn check_names_the_element() {
        let p = Precision::F16F16;
        let want = d_registers(p);
        let n = want.len();
        assert!(check(p, 2, |i| want[i % n]).valid);
        let v = check(p, 2, |i| {
            if i == n + 65 {
                want[65] ^ 1
            } else {
                want[i % n]
            }
        });
        assert!(!v.valid);
        assert!(
            v.detail.starts_with(
                "1 of 16384 accumulator registers wrong: warpgroup 1 thread 1 register 1 (D[8][2])"
            ),
            "{}",
            v.detail
        );
    }

    #[test]
    fn the_module_has_every_entry_once() {
        let ptx = expand();
        let entries = crate::kernels::entries(&ptx);
        assert_eq!(entries.len(), 2 * PRECISIONS.len());
        for p in PRECISIONS {
            for a in SOURCES {
                assert!(entries.contains(&entry_name(p, a)));
            }
        }
        assert_eq!(crate::kernels::target(&ptx), Some("sm_90a"));
        // a hole is `@` + capitals + `@` (a predicate guard is `@%p1`)
        let hole = ptx.match_indices('@').find(|&(i, _)| {
            let word: String = ptx[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            !word.is_empty() && ptx[i + 1 + word.len()..].starts_with('@')
        });
        assert_eq!(hole, None, "a hole left in the template");
    }
}
