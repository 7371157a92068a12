//! Reference arithmetic: one fused multiply-add in each precision the compute kernels use,
//! bit-exact, on raw register bits, so a GPU's (or the interpreter's) output can be checked for
//! equality and not within a tolerance.
//!
//! A value travels as the bits of one register: `f32`, `i32`, `f16x2` and `bf16x2` in the low 32
//! bits of a `u64` (two 16-bit lanes, lane 0 low), `f64` in all 64. [`fma`] is `fma.rn` (one
//! rounding to nearest, ties to even, subnormals kept) and `mad.lo.s32` (wrapping), which is what
//! PTX specifies for these instructions.
//!
//! This module must not know about kernels, sizes or devices; it is numbers only.

use super::Precision;
use half::{bf16, f16};

/// Significand fraction bits and exponent range of a narrow float format.
#[derive(Clone, Copy)]
struct Narrow {
    fraction_bits: i32,
    /// Exponent of the smallest normal number.
    emin: i32,
    /// Exponent of the largest finite binade.
    emax: i32,
}

const F16: Narrow = Narrow {
    fraction_bits: 10,
    emin: -14,
    emax: 15,
};
const BF16: Narrow = Narrow {
    fraction_bits: 7,
    emin: -126,
    emax: 127,
};

/// Error-free sum: `s + e == a + b` exactly, `s = fl(a + b)` (Knuth's TwoSum).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// Rounds the exact value `s + e` (with `s = fl64(s + e)`) to `format`, to nearest, ties to
/// even, keeping subnormals and overflowing to infinity. The result is an f64 that `format`
/// represents exactly. (The `half` crate's `from_f64` drops the low 32 bits of the f64 before
/// rounding, so it can round a value just above a tie the wrong way; hence this.)
fn round_narrow(s: f64, e: f64, format: Narrow) -> f64 {
    if !s.is_finite() || s == 0.0 {
        return s;
    }
    let exponent = ((s.abs().to_bits() >> 52) as i32 - 1023).max(format.emin);
    let quantum = 2f64.powi(exponent - format.fraction_bits);
    let scaled = s / quantum; // exact: a power-of-two scaling of a normal f64
    let floor = scaled.floor();
    let frac = scaled - floor;
    let up = if frac > 0.5 {
        true
    } else if frac < 0.5 {
        false
    } else if e != 0.0 {
        // Exactly at a tie in f64 but not in the exact value: the error decides.
        e > 0.0
    } else {
        floor % 2.0 != 0.0
    };
    // `up` means floor + 1, towards +inf, whatever the sign: nearest is symmetric.
    let rounded = if up { floor + 1.0 } else { floor } * quantum;
    let limit = 2f64.powi(format.emax + 1);
    if rounded.abs() >= limit {
        f64::INFINITY.copysign(s)
    } else {
        rounded
    }
}

/// `fma.rn` of one narrow lane: `x·a + b` rounded once.
fn fma_narrow(x: f64, a: f64, b: f64, format: Narrow) -> f64 {
    if !(x.is_finite() && a.is_finite() && b.is_finite()) {
        return x.mul_add(a, b);
    }
    // The product of two ≤ 11-bit significands is exact in f64; TwoSum keeps the addition exact.
    let (s, e) = two_sum(x * a, b);
    round_narrow(s, e, format)
}

/// One lane of f16 bits as an f64.
pub fn f16_value(bits: u16) -> f64 {
    f16::from_bits(bits).to_f64()
}

/// One lane of bf16 bits as an f64.
pub fn bf16_value(bits: u16) -> f64 {
    bf16::from_bits(bits).to_f64()
}

/// f16 bits of `x`, which must be representable (it is exact then).
pub fn f16_bits(x: f64) -> u16 {
    let bits = f16::from_f64(x).to_bits();
    debug_assert!(x.is_nan() || f16_value(bits) == x, "{x} is not an f16");
    bits
}

/// bf16 bits of `x`, which must be representable.
pub fn bf16_bits(x: f64) -> u16 {
    let bits = bf16::from_f64(x).to_bits();
    debug_assert!(x.is_nan() || bf16_value(bits) == x, "{x} is not a bf16");
    bits
}

/// Packs two 16-bit lanes (lane 0 low) into a 32-bit register.
pub fn pack2(lo: u16, hi: u16) -> u64 {
    (lo as u64) | ((hi as u64) << 16)
}

/// The two 16-bit lanes of a packed register.
pub fn lanes2(bits: u64) -> (u16, u16) {
    (bits as u16, (bits >> 16) as u16)
}

/// Decoding and encoding of one 16-bit lane format.
type LaneCodec = (fn(u16) -> f64, fn(f64) -> u16);

fn fma_lanes(x: u64, a: u64, b: u64, format: Narrow, f16_format: bool) -> u64 {
    let (value, to_bits): LaneCodec = if f16_format {
        (f16_value, f16_bits)
    } else {
        (bf16_value, bf16_bits)
    };
    let lane = |x: u16, a: u16, b: u16| {
        let r = fma_narrow(value(x), value(a), value(b), format);
        if r.is_nan() {
            0x7FFF // PTX's canonical NaN for f16 and bf16 arithmetic
        } else {
            to_bits(r)
        }
    };
    let ((x0, x1), (a0, a1), (b0, b1)) = (lanes2(x), lanes2(a), lanes2(b));
    pack2(lane(x0, a0, b0), lane(x1, a1, b1))
}

/// One fused multiply-add `x·a + b` in `precision`, on register bits: `fma.rn.f64`,
/// `fma.rn.f32`, `fma.rn.f16x2`, `fma.rn.bf16x2` or `mad.lo.s32`.
///
/// # Panics
/// For a tensor-core precision, which has no scalar FMA.
pub fn fma(precision: Precision, x: u64, a: u64, b: u64) -> u64 {
    match precision {
        Precision::F64 => f64::from_bits(x)
            .mul_add(f64::from_bits(a), f64::from_bits(b))
            .to_bits(),
        Precision::F32 => f32::from_bits(x as u32)
            .mul_add(f32::from_bits(a as u32), f32::from_bits(b as u32))
            .to_bits() as u64,
        Precision::F16x2 => fma_lanes(x, a, b, F16, true),
        Precision::Bf16x2 => fma_lanes(x, a, b, BF16, false),
        Precision::I32 => (x as u32).wrapping_mul(a as u32).wrapping_add(b as u32) as u64,
        other => panic!("{other} has no scalar FMA"),
    }
}

/// The bits of 1 in `precision` (both lanes for the packed formats); the kernels add chains with
/// `fma(x, one, sum)`.
pub fn one(precision: Precision) -> u64 {
    match precision {
        Precision::F64 => 1f64.to_bits(),
        Precision::F32 => 1f32.to_bits() as u64,
        Precision::F16x2 => pack2(f16_bits(1.0), f16_bits(1.0)),
        Precision::Bf16x2 => pack2(bf16_bits(1.0), bf16_bits(1.0)),
        Precision::I32 => 1,
        other => panic!("{other} has no scalar FMA"),
    }
}

/// Bytes of one register of `precision` (8 for f64, else 4).
pub fn word_bytes(precision: Precision) -> u64 {
    if precision == Precision::F64 {
        8
    } else {
        4
    }
}

/// Arithmetic lanes in one register (2 for the packed formats).
pub fn lanes(precision: Precision) -> u64 {
    match precision {
        Precision::F16x2 | Precision::Bf16x2 => 2,
        _ => 1,
    }
}

/// The map the compute kernels iterate, `x ← x·a + b`, chosen per precision so that values stay
/// in range forever (|a| < 1: every chain contracts to the fixed point b / (1 − a) = 4) while
/// every step still rounds, so an FMA computed any other way (unfused, wrong rounding, wrong
/// lane) gives other bits. The integer map is a full-period LCG modulo 2^32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FmaMap {
    pub a: u64,
    pub b: u64,
}

/// The map of `precision`; both lanes of a packed format get their own (a, b).
pub fn map(precision: Precision) -> FmaMap {
    match precision {
        Precision::F64 => FmaMap {
            a: (1.0 - 2f64.powi(-12)).to_bits(),
            b: 2f64.powi(-10).to_bits(),
        },
        Precision::F32 => FmaMap {
            a: (1.0 - 2f32.powi(-12)).to_bits() as u64,
            b: 2f32.powi(-10).to_bits() as u64,
        },
        Precision::F16x2 => FmaMap {
            a: pack2(
                f16_bits(1.0 - 2f64.powi(-10)),
                f16_bits(1.0 - 2f64.powi(-9)),
            ),
            b: pack2(f16_bits(2f64.powi(-8)), f16_bits(2f64.powi(-7))),
        },
        Precision::Bf16x2 => FmaMap {
            a: pack2(
                bf16_bits(1.0 - 2f64.powi(-7)),
                bf16_bits(1.0 - 2f64.powi(-6)),
            ),
            b: pack2(bf16_bits(2f64.powi(-5)), bf16_bits(2f64.powi(-4))),
        },
        Precision::I32 => FmaMap {
            a: 1_664_525,
            b: 1_013_904_223,
        },
        other => panic!("{other} has no scalar FMA"),
    }
}

/// `steps` applications of `x ← fma(x, a, b)` starting from `x`.
///
/// Cheap for any step count: the integer map composes in closed form (square and multiply), and
/// a float chain is followed until it repeats with period 1 or 2 (contracting chains settle on
/// their fixed point within about 10^5 steps), after which the rest is known.
pub fn iterate(precision: Precision, x: u64, map: FmaMap, steps: u64) -> u64 {
    if precision == Precision::I32 {
        return iterate_i32(x as u32, map.a as u32, map.b as u32, steps) as u64;
    }
    let f = |v| fma(precision, v, map.a, map.b);
    let (mut prev2, mut prev, mut cur) = (None, None, x);
    let mut done = 0u64;
    while done < steps {
        if prev == Some(cur) {
            return cur; // fixed point
        }
        if prev2 == Some(cur) {
            // period 2: the remaining steps alternate between cur and prev
            let remaining = steps - done;
            return if remaining.is_multiple_of(2) {
                cur
            } else {
                prev.unwrap_or(cur)
            };
        }
        prev2 = prev;
        prev = Some(cur);
        cur = f(cur);
        done += 1;
    }
    cur
}

/// `x ← x·a + b (mod 2^32)` applied `steps` times, by composing the affine map with itself.
fn iterate_i32(x: u32, a: u32, b: u32, mut steps: u64) -> u32 {
    // (mul, add) of the accumulated map and of the current power of the base map.
    let (mut acc_mul, mut acc_add) = (1u32, 0u32);
    let (mut pow_mul, mut pow_add) = (a, b);
    while steps > 0 {
        if steps & 1 == 1 {
            // acc ∘ pow: x -> acc_mul·(pow_mul·x + pow_add) + acc_add, either order commutes
            // for powers of one map.
            acc_add = pow_mul.wrapping_mul(acc_add).wrapping_add(pow_add);
            acc_mul = acc_mul.wrapping_mul(pow_mul);
        }
        pow_add = pow_mul.wrapping_mul(pow_add).wrapping_add(pow_add);
        pow_mul = pow_mul.wrapping_mul(pow_mul);
        steps >>= 1;
    }
    acc_mul.wrapping_mul(x).wrapping_add(acc_add)
}

/// A register's bits as the user would read them: `1.5`, `(1.5, 4)` for packed lanes, `-7`.
pub fn show(precision: Precision, bits: u64) -> String {
    match precision {
        Precision::F64 => format!("{:?}", f64::from_bits(bits)),
        Precision::F32 => format!("{:?}", f32::from_bits(bits as u32)),
        Precision::F16x2 => {
            let (lo, hi) = lanes2(bits);
            format!("({:?}, {:?})", f16::from_bits(lo), f16::from_bits(hi))
        }
        Precision::Bf16x2 => {
            let (lo, hi) = lanes2(bits);
            format!("({:?}, {:?})", bf16::from_bits(lo), bf16::from_bits(hi))
        }
        _ => format!("{}", bits as u32 as i32),
    }
}

/// Compares `n` registers bit for bit, BabelStream style: the first failures as is / should.
pub fn check_words(
    precision: Precision,
    n: usize,
    got: impl Fn(usize) -> u64 + Sync,
    want: impl Fn(usize) -> u64 + Sync,
) -> crate::cases::Verdict {
    crate::cases::check_elements(n, "values", |i| wrong_word(precision, got(i), want(i)))
}

/// Why a register of `got` bits is wrong where `want` is right (`is …, should be …`), or `None`.
pub fn wrong_word(precision: Precision, got: u64, want: u64) -> Option<String> {
    (got != want).then(|| {
        format!(
            "is {} ({got:#x}), should be {} ({want:#x})",
            show(precision, got),
            show(precision, want)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The narrow FMA agrees with a direct, obviously correct rounding on every tie case.
    #[test]
    fn narrow_rounding_is_correct_at_ties() {
        // 1 + 2^-11 is the midpoint between 1 and the next f16: ties go to even (1.0).
        assert_eq!(round_narrow(1.0 + 2f64.powi(-11), 0.0, F16), 1.0);
        // ... but a hair above it rounds up, even when the hair is below f64 precision.
        assert_eq!(
            round_narrow(1.0 + 2f64.powi(-11), 1e-30, F16),
            1.0 + 2f64.powi(-10)
        );
        assert_eq!(round_narrow(1.0 + 2f64.powi(-11), -1e-30, F16), 1.0);
        // 1 + 3·2^-11: tie between odd and even: goes to even (1 + 2^-9).
        assert_eq!(
            round_narrow(1.0 + 3.0 * 2f64.powi(-11), 0.0, F16),
            1.0 + 2f64.powi(-9)
        );
        // negative values mirror
        assert_eq!(
            round_narrow(-(1.0 + 2f64.powi(-11)), -1e-30, F16),
            -(1.0 + 2f64.powi(-10))
        );
        assert_eq!(round_narrow(-(1.0 + 2f64.powi(-11)), 1e-30, F16), -1.0);
        // overflow and subnormals
        assert_eq!(round_narrow(65520.0, 0.0, F16), f64::INFINITY);
        assert_eq!(round_narrow(65519.0, 0.0, F16), 65504.0);
        assert_eq!(round_narrow(2f64.powi(-25), 1e-40, F16), 2f64.powi(-24));
        assert_eq!(round_narrow(2f64.powi(-25), 0.0, F16), 0.0);
        // bf16: 1 + 2^-8 is a tie
        assert_eq!(round_narrow(1.0 + 2f64.powi(-8), 0.0, BF16), 1.0);
        assert_eq!(
            round_narrow(1.0 + 2f64.powi(-8), 1e-20, BF16),
            1.0 + 2f64.powi(-7)
        );
    }

    /// Exhaustive over a grid of f16 operands: the narrow FMA equals the exact value rounded by
    /// an independent method (exact rational arithmetic in i128 units of 2^-48).
    #[test]
    fn f16_fma_matches_exact_rounding() {
        let values: Vec<u16> = (0x3000u16..0x4400).step_by(37).collect();
        for &x in &values {
            for &a in values.iter().step_by(7) {
                for &b in values.iter().step_by(11) {
                    let got = fma(Precision::F16x2, pack2(x, x), pack2(a, a), pack2(b, b));
                    let (lo, hi) = lanes2(got);
                    assert_eq!(lo, hi);
                    // exact in units of 2^-48 (all operands are ≥ 2^-4 with 10 fraction bits)
                    let unit = |v: u16| (f16_value(v) * 2f64.powi(24)) as i128;
                    let exact = unit(x) * unit(a) + unit(b) * (1i128 << 24);
                    let want = {
                        // round exact·2^-48 to f16 by brute force over neighbours
                        let approx = f16::from_f64(exact as f64 * 2f64.powi(-48)).to_bits();
                        let mut best = approx;
                        let mut best_err = i128::MAX;
                        for cand in approx.saturating_sub(2)..=approx.saturating_add(2) {
                            let c = (f16_value(cand) * 2f64.powi(48)) as i128;
                            let err = (c - exact).abs();
                            if err < best_err || (err == best_err && cand % 2 == 0) {
                                best = cand;
                                best_err = err;
                            }
                        }
                        best
                    };
                    assert_eq!(lo, want, "fma({x:#x}, {a:#x}, {b:#x})");
                }
            }
        }
    }

    #[test]
    fn maps_contract_and_iterate_agrees_with_stepping() {
        for p in [
            Precision::F64,
            Precision::F32,
            Precision::F16x2,
            Precision::Bf16x2,
            Precision::I32,
        ] {
            let m = map(p);
            let x0 = match p {
                Precision::F64 => 1f64.to_bits(),
                Precision::F32 => 1f32.to_bits() as u64,
                Precision::F16x2 => pack2(f16_bits(1.0), f16_bits(1.5)),
                Precision::Bf16x2 => pack2(bf16_bits(1.0), bf16_bits(1.5)),
                _ => 12345,
            };
            let mut x = x0;
            for steps in 0..3000u64 {
                assert_eq!(iterate(p, x0, m, steps), x, "{p} after {steps} steps");
                x = fma(p, x, m.a, m.b);
            }
            // every step of the first few changes the value (the chain really computes)
            assert_ne!(iterate(p, x0, m, 1), x0);
            assert_ne!(iterate(p, x0, m, 100), iterate(p, x0, m, 101));
        }
        // float chains settle at 4 (or next to it) and stay finite for any length
        let m = map(Precision::F32);
        let end = f32::from_bits(iterate(Precision::F32, 1f32.to_bits() as u64, m, 1 << 40) as u32);
        assert!((end - 4.0).abs() < 1e-3, "{end}");
    }

    #[test]
    fn integer_iteration_is_closed_form() {
        let (a, b) = (1_664_525u32, 1_013_904_223u32);
        let mut x = 7u32;
        for steps in 0..1000 {
            assert_eq!(iterate_i32(7, a, b, steps), x);
            x = x.wrapping_mul(a).wrapping_add(b);
        }
    }
}
