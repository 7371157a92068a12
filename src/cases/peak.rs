//! Peak arithmetic cases (`peak/fma/<precision>`): register-resident FMA chains, no memory
//! traffic in the timed loop, and the checksum that proves the chains ran.
//!
//! Every chain iterates the map of [`arith::map`], `x ← x·a + b`, from its own start (the
//! precision's `x0` plus the chain index in units in the last place, so no compiler can prove
//! two chains equal and merge them). An output element is one stored register: on the GPU a
//! thread's chains added together (`sum ← fma(chain, 1, sum)` in chain order), on the host one
//! SIMD lane of one chain. Every output is checked bit for bit against [`arith::iterate`].
//!
//! Work per launch: `elements × iterations × fmas_per_iteration × lanes × 2` operations, where
//! `fmas_per_iteration` is FMAs per output element per loop trip (a backend constant) and
//! `lanes` is 2 for the packed formats. The checksum stores after the loop (one register per
//! output) are not counted as bytes: the case has no intensity, it is a compute ceiling.
//!
//! This module must not launch or time anything.

use super::arith::{self, FmaMap};
use super::{Case, Family, Precision, Verdict, Work};

/// The precisions with a peak kernel.
pub const PRECISIONS: [Precision; 5] = [
    Precision::F64,
    Precision::F32,
    Precision::F16x2,
    Precision::Bf16x2,
    Precision::I32,
];

/// The kernel name in ids: `peak/fma/f32`.
pub const KERNEL: &str = "fma";

/// Independent chains per GPU thread in kernels/peak.ptx.
pub const GPU_CHAINS: u64 = 8;
/// FMAs per chain per loop trip in kernels/peak.ptx.
pub const GPU_UNROLL: u64 = 64;
/// FMAs per GPU thread per loop trip.
pub const GPU_FMAS_PER_ITERATION: u64 = GPU_CHAINS * GPU_UNROLL;

/// The first chain's start, as register bits (two different lanes in the packed formats).
pub fn x0(precision: Precision) -> u64 {
    match precision {
        Precision::F64 => 1f64.to_bits(),
        Precision::F32 => 1f32.to_bits() as u64,
        Precision::F16x2 => arith::pack2(arith::f16_bits(1.0), arith::f16_bits(1.5)),
        Precision::Bf16x2 => arith::pack2(arith::bf16_bits(1.0), arith::bf16_bits(1.5)),
        Precision::I32 => 12_345,
        other => panic!("{other} has no peak FMA kernel"),
    }
}

/// The start of chain `chain`: `x0` plus `chain` in the last place of every lane (an integer
/// add on the bits, which is what the kernels do; the f64 kernel adds `chain · 2^-52` in f64,
/// the same value for x0 in [1, 2), because ptxas keeps an f64 built by an integer add in
/// mismatched register pairs and shuffles them on every loop trip).
pub fn chain_start(precision: Precision, chain: u64) -> u64 {
    let x = x0(precision);
    match precision {
        Precision::F64 => x.wrapping_add(chain),
        Precision::F16x2 | Precision::Bf16x2 => {
            (x as u32).wrapping_add((chain as u32).wrapping_mul(0x0001_0001)) as u64
        }
        _ => (x as u32).wrapping_add(chain as u32) as u64,
    }
}

/// The map the peak kernels iterate (the kernels' `a` and `b` parameters).
pub fn map(precision: Precision) -> FmaMap {
    arith::map(precision)
}

/// The value of chain `chain` after `steps` FMAs.
pub fn chain_value(precision: Precision, chain: u64, steps: u64) -> u64 {
    arith::iterate(
        precision,
        chain_start(precision, chain),
        map(precision),
        steps,
    )
}

/// A GPU thread's checksum: its `chains` chains after `steps` FMAs each, added in chain order
/// with `sum ← fma(chain, 1, sum)` (`add.s32` for integers, which is the same thing).
pub fn thread_checksum(precision: Precision, chains: u64, steps: u64) -> u64 {
    let one = arith::one(precision);
    let mut sum = chain_value(precision, 0, steps);
    for c in 1..chains {
        sum = arith::fma(precision, chain_value(precision, c, steps), one, sum);
    }
    sum
}

/// Operations per launch.
pub fn flops(precision: Precision, elements: u64, iterations: u64, fmas_per_iteration: u64) -> u64 {
    elements * iterations * fmas_per_iteration * arith::lanes(precision) * 2
}

/// The peak case with `elements` outputs, each the result of `iterations × fmas_per_iteration`
/// FMAs per lane.
pub fn case(precision: Precision, elements: u64, iterations: u64, fmas_per_iteration: u64) -> Case {
    Case {
        family: Family::Peak,
        kernel: KERNEL.to_string(),
        precision,
        param: None,
        elements,
        working_set_bytes: elements * arith::word_bytes(precision),
        work: Work {
            bytes_read: 0,
            bytes_written: 0,
            flops: flops(precision, elements, iterations, fmas_per_iteration),
        },
    }
}

/// The loop count a case was built with (its work divided by the work of one trip), or why the
/// case is not one this backend built.
pub fn iterations_of(case: &Case, fmas_per_iteration: u64) -> Result<u64, String> {
    let per_trip = flops(case.precision, case.elements, 1, fmas_per_iteration);
    if case.family != Family::Peak || per_trip == 0 || !case.work.flops.is_multiple_of(per_trip) {
        return Err(format!(
            "{} is not a peak case of {fmas_per_iteration} FMAs per element per trip",
            case.id()
        ));
    }
    Ok(case.work.flops / per_trip)
}

/// Loop trips so that one launch does about `target_flops` operations (at least 1).
pub fn iterations_for(
    precision: Precision,
    elements: u64,
    fmas_per_iteration: u64,
    target_flops: f64,
) -> u64 {
    let per_trip = flops(precision, elements, 1, fmas_per_iteration).max(1) as f64;
    (target_flops / per_trip).ceil().max(1.0) as u64
}

/// Checks GPU checksums: every thread's must equal [`thread_checksum`].
pub fn check_threads(
    precision: Precision,
    chains: u64,
    steps: u64,
    n: usize,
    got: impl Fn(usize) -> u64 + Sync,
) -> Verdict {
    let want = thread_checksum(precision, chains, steps);
    arith::check_words(precision, n, got, |_| want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_start_apart_and_end_apart() {
        for p in PRECISIONS {
            let starts: Vec<u64> = (0..8).map(|c| chain_start(p, c)).collect();
            let mut dedup = starts.clone();
            dedup.sort();
            dedup.dedup();
            assert_eq!(dedup.len(), 8, "{p}: chains must differ");
            // some steps in, chains still differ (no chain is a copy of another); narrow formats
            // settle on the same fixed point soon after, which no compiler can know
            assert_ne!(chain_value(p, 0, 4), chain_value(p, 1, 4), "{p}");
        }
        // the packed formats bump both lanes
        assert_eq!(
            chain_start(Precision::F16x2, 3) - x0(Precision::F16x2),
            0x0003_0003
        );
    }

    /// The f64 kernel's `add.rn.f64 x, x0, c·2^-52` is the integer bump this module models.
    #[test]
    fn f64_start_by_add_equals_the_ulp_bump() {
        let x0 = f64::from_bits(x0(Precision::F64));
        assert!((1.0..2.0).contains(&x0));
        for c in 0..GPU_CHAINS {
            let by_add = x0 + c as f64 * 2f64.powi(-52);
            assert_eq!(by_add.to_bits(), chain_start(Precision::F64, c));
        }
    }

    #[test]
    fn work_and_iterations_round_trip() {
        let c = case(Precision::F16x2, 1000, 77, GPU_FMAS_PER_ITERATION);
        assert_eq!(c.id(), "peak/fma/f16x2");
        assert_eq!(c.work.flops, 1000 * 77 * 512 * 2 * 2);
        assert_eq!(c.work.bytes(), 0);
        assert_eq!(c.work.intensity(), None);
        assert_eq!(iterations_of(&c, GPU_FMAS_PER_ITERATION), Ok(77));
        assert!(iterations_of(&c, 3).is_err());
        assert_eq!(
            iterations_for(Precision::F32, 10, 100, 1e6),
            500, // 1e6 / (10 × 100 × 2)
        );
        assert_eq!(iterations_for(Precision::F32, 10, 100, 1.0), 1);
    }

    #[test]
    fn checksum_check_catches_a_wrong_thread() {
        let p = Precision::F32;
        let good = thread_checksum(p, 8, 64);
        assert!(check_threads(p, 8, 64, 100, |_| good).valid);
        let v = check_threads(p, 8, 64, 100, |i| if i == 42 { good ^ 1 } else { good });
        assert!(!v.valid);
        assert!(
            v.detail.starts_with("1 of 100 values wrong: [42]"),
            "{}",
            v.detail
        );
        // one step fewer is another checksum
        assert_ne!(thread_checksum(p, 8, 63), good);
    }
}
