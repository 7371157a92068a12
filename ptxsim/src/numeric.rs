//! Exact floating-point semantics for every format our kernels touch: f64, f32, f16, bf16,
//! tf32, e4m3 and e5m2, with the PTX rounding modes.
//!
//! One routine, [`round_exact`], rounds an exactly represented value (sign, integer
//! mantissa, binary exponent) to any of these formats under any rounding mode; conversions
//! and narrow arithmetic go through it, so there is one place where rounding is right or
//! wrong. Arithmetic on narrow types is done in f64 and then rounded once: f16/bf16/tf32
//! products are exact in f64, and sums are made *round-to-odd* (from the exact error given
//! by TwoSum) before the final rounding, which is what makes the double rounding innocuous
//! (f64 has 53 bits, more than 2p+2 for every target here).

/// Rounding direction, as PTX's `.rn`, `.rna`, `.rz`, `.rm`, `.rp` (and the integer `.rni`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    /// To nearest, ties to even.
    NearestEven,
    /// To nearest, ties away from zero (`.rna`, used by `cvt.rna.tf32.f32`).
    NearestAway,
    TowardZero,
    TowardNegative,
    TowardPositive,
}

/// A binary floating-point format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub exp_bits: u32,
    pub man_bits: u32,
    /// OCP FP8 E4M3 ("fn"): no infinities; the only NaN is S.1111.111, so the largest finite
    /// value is 448 (S.1111.110).
    pub finite_only: bool,
}

pub const F64: Format = Format {
    exp_bits: 11,
    man_bits: 52,
    finite_only: false,
};
pub const F32: Format = Format {
    exp_bits: 8,
    man_bits: 23,
    finite_only: false,
};
pub const F16: Format = Format {
    exp_bits: 5,
    man_bits: 10,
    finite_only: false,
};
pub const BF16: Format = Format {
    exp_bits: 8,
    man_bits: 7,
    finite_only: false,
};
/// tf32 as a value format (sign, 8-bit exponent, 10-bit mantissa); in a register it occupies
/// the top 19 bits of a 32-bit word (see [`f32_to_tf32_bits`]).
pub const TF32: Format = Format {
    exp_bits: 8,
    man_bits: 10,
    finite_only: false,
};
pub const E4M3: Format = Format {
    exp_bits: 4,
    man_bits: 3,
    finite_only: true,
};
pub const E5M2: Format = Format {
    exp_bits: 5,
    man_bits: 2,
    finite_only: false,
};

impl Format {
    fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }

    fn exp_all_ones(self) -> u64 {
        (1u64 << self.exp_bits) - 1
    }

    fn sign_bit(self) -> u64 {
        1u64 << (self.exp_bits + self.man_bits)
    }

    /// The canonical NaN PTX produces: all exponent and mantissa bits set, sign clear
    /// (0x7fffffff for f32, 0x7fff for f16, 0x7f for e4m3).
    pub fn canonical_nan(self) -> u64 {
        self.sign_bit() - 1
    }

    pub fn infinity(self, negative: bool) -> u64 {
        let bits = self.exp_all_ones() << self.man_bits;
        if negative {
            bits | self.sign_bit()
        } else {
            bits
        }
    }

    pub fn max_finite(self, negative: bool) -> u64 {
        let bits = if self.finite_only {
            // S.1111.110 for E4M3.
            (self.exp_all_ones() << self.man_bits) | ((1u64 << self.man_bits) - 2)
        } else {
            ((self.exp_all_ones() - 1) << self.man_bits) | ((1u64 << self.man_bits) - 1)
        };
        if negative {
            bits | self.sign_bit()
        } else {
            bits
        }
    }

    pub fn is_nan(self, bits: u64) -> bool {
        let exp = (bits >> self.man_bits) & self.exp_all_ones();
        let man = bits & ((1u64 << self.man_bits) - 1);
        if self.finite_only {
            exp == self.exp_all_ones() && man == (1u64 << self.man_bits) - 1
        } else {
            exp == self.exp_all_ones() && man != 0
        }
    }

    /// Decodes bits of this format to the (exactly representable) f64 value.
    pub fn to_f64(self, bits: u64) -> f64 {
        let negative = bits & self.sign_bit() != 0;
        let exp = ((bits >> self.man_bits) & self.exp_all_ones()) as i32;
        let man = bits & ((1u64 << self.man_bits) - 1);
        let magnitude = if self.is_nan(bits) {
            return f64::NAN;
        } else if !self.finite_only && exp as u64 == self.exp_all_ones() {
            f64::INFINITY
        } else if exp == 0 {
            man as f64 * pow2(1 - self.bias() - self.man_bits as i32)
        } else {
            ((1u64 << self.man_bits) | man) as f64 * pow2(exp - self.bias() - self.man_bits as i32)
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }
}

/// 2^e, exactly: built from its bits where f64 holds it (a normal or a subnormal power), else
/// 0 below and infinity above, as the product of two exact powers would round. Every format here
/// asks only for exponents within f64's. (`powi`, which it replaces, was over a quarter of the
/// interpreter's time in `mma` kernels, whose operands it decodes.)
fn pow2(e: i32) -> f64 {
    match e {
        -1022..=1023 => f64::from_bits(((e + 1023) as u64) << 52),
        -1074..=-1023 => f64::from_bits(1u64 << (e + 1074)),
        ..=-1075 => 0.0,
        _ => f64::INFINITY,
    }
}

/// An exact value `(-1)^negative * mantissa * 2^exponent`.
#[derive(Debug, Clone, Copy)]
pub struct Exact {
    pub negative: bool,
    pub mantissa: u128,
    pub exponent: i32,
}

impl Exact {
    /// Decomposes a finite f64 exactly.
    pub fn from_f64(x: f64) -> Exact {
        let bits = x.to_bits();
        let negative = bits >> 63 != 0;
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let man = bits & ((1u64 << 52) - 1);
        if exp == 0 {
            Exact {
                negative,
                mantissa: man as u128,
                exponent: -1074,
            }
        } else {
            Exact {
                negative,
                mantissa: ((1u64 << 52) | man) as u128,
                exponent: exp - 1075,
            }
        }
    }
}

/// Rounds an exact value to `fmt` under `mode`; `satfinite` clamps overflow to the largest
/// finite value (PTX `.satfinite`; required for e4m3, which has no infinity).
pub fn round_exact(x: Exact, fmt: Format, mode: Rounding, satfinite: bool) -> u64 {
    let sign = if x.negative { fmt.sign_bit() } else { 0 };
    if x.mantissa == 0 {
        return sign;
    }
    let p = fmt.man_bits as i32; // fraction bits
    let bias = fmt.bias();
    let emin = 1 - bias; // exponent of the smallest normal
                         // Position of the leading 1: value in [2^e, 2^(e+1)).
    let msb = 127 - x.mantissa.leading_zeros() as i32;
    let e = msb + x.exponent;
    // Quantum (weight of the last kept bit).
    let q = (e.max(emin)) - p;
    let shift = q - x.exponent; // bits to drop from the mantissa
    let (mut kept, round_up) = if shift <= 0 {
        (x.mantissa << (-shift) as u32, false)
    } else if shift >= 128 {
        (0, round_up_when_all_dropped(x.negative, mode))
    } else {
        let kept = x.mantissa >> shift as u32;
        let rem = x.mantissa & ((1u128 << shift as u32) - 1);
        let half = 1u128 << (shift as u32 - 1);
        let up = decide_round_parts(kept, rem, half, x.negative, mode);
        (kept, up)
    };
    if round_up {
        kept += 1;
    }
    // kept * 2^q; normalise into the format.
    let mut q = q;
    if kept >= (1u128 << (p + 1)) {
        kept >>= 1;
        q += 1;
    }
    let overflow = |fmt: Format| -> u64 {
        let to_max = satfinite
            || match mode {
                Rounding::TowardZero => true,
                Rounding::TowardNegative => !x.negative,
                Rounding::TowardPositive => x.negative,
                _ => false,
            };
        if to_max {
            fmt.max_finite(x.negative)
        } else if fmt.finite_only {
            fmt.canonical_nan() | sign
        } else {
            fmt.infinity(x.negative)
        }
    };
    if kept == 0 {
        return sign;
    }
    let biased = if kept >= (1u128 << p) {
        q + p + bias // normal: exponent of the leading bit is q + p
    } else {
        0 // subnormal
    };
    let max_biased = if fmt.finite_only {
        fmt.exp_all_ones() as i32
    } else {
        fmt.exp_all_ones() as i32 - 1
    };
    if biased > max_biased {
        return overflow(fmt);
    }
    let frac = (kept as u64) & ((1u64 << p) - 1);
    let bits = sign | ((biased as u64) << p) | frac;
    if fmt.finite_only && fmt.is_nan(bits) {
        // Rounded onto the NaN encoding: that is an overflow past 448.
        return overflow(fmt);
    }
    bits
}

fn decide_round_parts(kept: u128, rem: u128, half: u128, negative: bool, mode: Rounding) -> bool {
    if rem == 0 {
        return false;
    }
    match mode {
        Rounding::NearestEven => rem > half || (rem == half && kept & 1 == 1),
        Rounding::NearestAway => rem >= half,
        Rounding::TowardZero => false,
        Rounding::TowardNegative => negative,
        Rounding::TowardPositive => !negative,
    }
}

/// Every bit was shifted out, so the (non-zero) value is far below half the smallest quantum.
fn round_up_when_all_dropped(negative: bool, mode: Rounding) -> bool {
    match mode {
        Rounding::NearestEven | Rounding::NearestAway | Rounding::TowardZero => false,
        Rounding::TowardNegative => negative,
        Rounding::TowardPositive => !negative,
    }
}

/// Rounds an f64 value to `fmt`. NaN becomes the canonical NaN; infinities stay infinite
/// (or clamp with `satfinite`, or become NaN in a format without infinities).
pub fn round_f64(x: f64, fmt: Format, mode: Rounding, satfinite: bool) -> u64 {
    if x.is_nan() {
        return fmt.canonical_nan();
    }
    if x.is_infinite() {
        return if satfinite {
            fmt.max_finite(x < 0.0)
        } else if fmt.finite_only {
            fmt.canonical_nan()
        } else {
            fmt.infinity(x < 0.0)
        };
    }
    round_exact(Exact::from_f64(x), fmt, mode, satfinite)
}

/// Error-free transformation: `a + b == s + err` exactly (Knuth's TwoSum).
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bp = s - a;
    let ap = s - bp;
    let err = (a - ap) + (b - bp);
    (s, err)
}

/// Makes a round-to-nearest result `s` with exact remainder `err` round-to-odd: if the result
/// is inexact and its last bit is even, step one ulp toward the exact value. Rounding the
/// round-to-odd f64 to any format with at most 25 significant bits is then correct.
pub fn to_odd(s: f64, err: f64) -> f64 {
    if err == 0.0 || !s.is_finite() {
        return s;
    }
    let bits = s.to_bits();
    if bits & 1 == 1 {
        return s;
    }
    // Moving toward err: away from zero if err has the sign of s, else toward zero.
    let away = (err > 0.0) == (s > 0.0);
    f64::from_bits(if away { bits + 1 } else { bits - 1 })
}

/// a + b, exact up to round-to-odd in f64.
pub fn add_odd(a: f64, b: f64) -> f64 {
    let (s, e) = two_sum(a, b);
    to_odd(s, e)
}

/// a * b + c for operands whose product is exact in f64 (f32 and narrower), round-to-odd.
pub fn fma_odd(a: f64, b: f64, c: f64) -> f64 {
    add_odd(a * b, c)
}

/// f16 (or, with `bf16`, bf16) bits to f64, exactly: the fast form of [`Format::to_f64`] for
/// the two 16-bit formats, which the interpreter's half-precision arithmetic runs on.
pub fn half_to_f64(bits: u16, bf16: bool) -> f64 {
    if bf16 {
        f32::from_bits(u32::from(bits) << 16) as f64
    } else {
        f16_to_f32(bits) as f64
    }
}

/// f16 bits to f32, exactly, from the bits (a NaN stays a NaN, quiet, its payload kept): what
/// `half::f16::to_f32` gives, without `half`'s call behind a CPU-feature check, which was a fifth
/// of an interpreted `fma.rn.f16x2` kernel's time.
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from(h >> 10) & 0x1f;
    let man = u32::from(h & 0x3ff);
    let magnitude = match exp {
        // a subnormal (or zero): man · 2^-24, exact in f32
        0 => (man as f32 * f32::from_bits(0x3380_0000)).to_bits(),
        0x1f if man != 0 => 0x7fc0_0000 | man << 13,
        0x1f => 0x7f80_0000,
        _ => (exp + 112) << 23 | man << 13,
    };
    f32::from_bits(sign | magnitude)
}

/// f32 to f16 bits, rounded to nearest even (overflow to infinity; a NaN to a quiet NaN, its
/// payload kept as far as f16 holds it): what `half::f16::from_f32` gives, from the bits.
fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let abs = bits & 0x7fff_ffff;
    if abs > 0x7f80_0000 {
        return sign | 0x7e00 | ((abs >> 13) & 0x3ff) as u16;
    }
    let exp = (abs >> 23) as i32 - 127 + 15;
    if exp >= 31 {
        return sign | 0x7c00;
    }
    if exp <= 0 {
        // f16's subnormals (and zero): the integer nearest |x| · 2^24, exact to scale, rounded
        // to even; 1024 is the smallest normal's bits
        let scaled = f32::from_bits(abs) * f32::from_bits(0x4b80_0000);
        return sign | scaled.round_ties_even() as u16;
    }
    let man = abs & 0x7f_ffff;
    let mut h = (exp as u32) << 10 | man >> 13;
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        // a carry out of the mantissa steps the exponent, up to infinity: still the right bits
        h += 1;
    }
    sign | h as u16
}

/// Rounds `x`, a round-to-odd f64 result (as from [`fma_odd`]), to f16 (or bf16) bits, to
/// nearest even: the same bits as `round_f64(x, F16 | BF16, NearestEven, false)`, several times
/// faster. It rounds to odd again at f32's 24 bits (at least 2 more than either format keeps,
/// and f32's exponent range covers both formats' subnormals), then to nearest even.
pub fn round_odd_to_half(x: f64, bf16: bool) -> u16 {
    if x.is_nan() {
        return 0x7fff;
    }
    let mut s = x as f32;
    if s == 0.0 {
        // below half of f32's smallest subnormal: far below either format's, so a signed zero
        return if x.is_sign_negative() { 0x8000 } else { 0 };
    }
    if s.is_finite() && (s as f64) != x && s.to_bits() & 1 == 0 {
        let away = (x - s as f64 > 0.0) == (s > 0.0);
        let bits = s.to_bits();
        s = f32::from_bits(if away { bits + 1 } else { bits - 1 });
    }
    if bf16 {
        let bits = s.to_bits();
        ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
    } else {
        f32_to_f16(s)
    }
}

/// f32 bits to tf32 bits (in the 32-bit register layout: low 13 bits zero) with the given
/// rounding (`cvt.rna.tf32.f32` rounds to nearest, ties away from zero).
pub fn f32_to_tf32_bits(x: u32, mode: Rounding, satfinite: bool) -> u32 {
    let v = f32::from_bits(x);
    if v.is_nan() {
        return 0x7fff_ffff;
    }
    let t = round_f64(v as f64, TF32, mode, satfinite) as u32;
    // Re-pack sign/exponent/mantissa into f32 positions.
    let sign = (t >> 18) & 1;
    let exp = (t >> 10) & 0xff;
    let man = t & 0x3ff;
    (sign << 31) | (exp << 23) | (man << 13)
}

/// Flushes an f32 subnormal to a zero of the same sign (`.ftz`).
pub fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        if x.is_sign_negative() {
            -0.0
        } else {
            0.0
        }
    } else {
        x
    }
}

/// Rounds an f64 holding an exact (or round-to-odd) result to f32 bits.
pub fn to_f32_bits(x: f64, mode: Rounding) -> u32 {
    if mode == Rounding::NearestEven && !x.is_nan() {
        // Hardware f64->f32 conversion is round-to-nearest-even.
        return (x as f32).to_bits();
    }
    round_f64(x, F32, mode, false) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn f16_rounding_matches_half_crate_on_many_values() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let x = f32::from_bits(seed as u32);
            if x.is_nan() {
                continue;
            }
            let ours = round_f64(x as f64, F16, Rounding::NearestEven, false) as u16;
            assert_eq!(ours, f16::from_f32(x).to_bits(), "x = {x:e}");
            let ours = round_f64(x as f64, BF16, Rounding::NearestEven, false) as u16;
            assert_eq!(ours, bf16::from_f32(x).to_bits(), "x = {x:e}");
            assert_eq!(
                round_f64(x as f64, F32, Rounding::NearestEven, false) as u32,
                x.to_bits()
            );
        }
    }

    #[test]
    fn f64_to_f32_directed_modes() {
        let x = 1.0 + f64::EPSILON; // just above 1, not representable in f32
        assert_eq!(
            f32::from_bits(round_f64(x, F32, Rounding::TowardZero, false) as u32),
            1.0
        );
        assert_eq!(
            f32::from_bits(round_f64(x, F32, Rounding::NearestEven, false) as u32),
            1.0
        );
        assert_eq!(
            f32::from_bits(round_f64(x, F32, Rounding::TowardPositive, false) as u32),
            1.0 + f32::EPSILON
        );
        assert_eq!(
            f32::from_bits(round_f64(-x, F32, Rounding::TowardNegative, false) as u32),
            -(1.0 + f32::EPSILON)
        );
        assert_eq!(
            f32::from_bits(round_f64(1e300, F32, Rounding::TowardZero, false) as u32),
            f32::MAX
        );
        assert!(
            f32::from_bits(round_f64(1e300, F32, Rounding::NearestEven, false) as u32)
                .is_infinite()
        );
    }

    #[test]
    fn e4m3_follows_ocp_fp8() {
        // Largest finite is 448 = 1.75 * 2^8, encoded 0x7e; 0x7f is NaN; no infinity.
        assert_eq!(E4M3.to_f64(0x7e), 448.0);
        assert!(E4M3.to_f64(0x7f).is_nan());
        assert_eq!(E4M3.to_f64(0x78), 256.0);
        // Smallest subnormal 2^-9, smallest normal 2^-6.
        assert_eq!(E4M3.to_f64(0x01), 2f64.powi(-9));
        assert_eq!(E4M3.to_f64(0x08), 2f64.powi(-6));
        assert_eq!(E4M3.to_f64(0xb8), -1.0);
        assert_eq!(round_f64(1.0, E4M3, Rounding::NearestEven, true), 0x38);
        assert_eq!(round_f64(1e6, E4M3, Rounding::NearestEven, true), 0x7e);
        assert_eq!(round_f64(-1e6, E4M3, Rounding::NearestEven, true), 0xfe);
        // 464 lies halfway between 448 and (non-existent) 480: saturates to 448.
        assert_eq!(round_f64(464.0, E4M3, Rounding::NearestEven, true), 0x7e);
        // 1.0625 = 1 + 1/16 is a tie between 1.0 and 1.125: ties to even (1.0).
        assert_eq!(round_f64(1.0625, E4M3, Rounding::NearestEven, true), 0x38);
        assert_eq!(round_f64(1.1875, E4M3, Rounding::NearestEven, true), 0x3a);
        // Every encoding round-trips.
        for b in 0u64..256 {
            if !E4M3.is_nan(b) {
                assert_eq!(
                    round_f64(E4M3.to_f64(b), E4M3, Rounding::NearestEven, true),
                    b,
                    "{b:#x}"
                );
            }
            let v = E5M2.to_f64(b);
            if !v.is_nan() {
                assert_eq!(
                    round_f64(v, E5M2, Rounding::NearestEven, false),
                    b,
                    "{b:#x}"
                );
            }
        }
        assert_eq!(E5M2.to_f64(0x7b), 57344.0);
        assert!(E5M2.to_f64(0x7c).is_infinite());
    }

    #[test]
    fn tf32_rounds_to_nearest_ties_away() {
        // 1 + 2^-11 is exactly halfway between two tf32 values (10 fraction bits).
        let x = (1.0f32 + 2f32.powi(-11)).to_bits();
        assert_eq!(
            f32::from_bits(f32_to_tf32_bits(x, Rounding::NearestAway, false)),
            1.0 + 2f32.powi(-10)
        );
        assert_eq!(
            f32::from_bits(f32_to_tf32_bits(x, Rounding::NearestEven, false)),
            1.0
        );
        let y = (-(1.0f32 + 3.0 * 2f32.powi(-11))).to_bits();
        assert_eq!(
            f32::from_bits(f32_to_tf32_bits(y, Rounding::NearestAway, false)),
            -(1.0 + 2.0 * 2f32.powi(-10))
        );
        assert_eq!(
            f32_to_tf32_bits(0x3f80_1fff, Rounding::NearestAway, false) & 0x1fff,
            0
        );
    }

    #[test]
    fn round_to_odd_makes_double_rounding_exact() {
        // a*b + c where the exact result is a hair above a bf16 tie: plain f64 rounding would
        // land on the tie and round to even, the correct answer rounds up.
        // 1 + 2^-8 is a tie between 1 (even) and 1 + 2^-7; 2^-60 more must round up, but
        // f64 cannot hold 1 + 2^-8 + 2^-60 and a plain f64 sum lands on the tie.
        let tie = 1.0 + 2f64.powi(-8);
        let c = 2f64.powi(-60);
        let exact = round_f64(add_odd(tie, c), BF16, Rounding::NearestEven, false);
        let naive = round_f64(tie + c, BF16, Rounding::NearestEven, false);
        assert_eq!(exact, bf16::from_f64(1.0 + 2f64.powi(-7)).to_bits() as u64);
        assert_eq!(naive, bf16::from_f64(1.0).to_bits() as u64);
    }

    /// `pow2` gives the bits of the exact power of two wherever f64 holds one (the product of
    /// two `powi` halves, each exact, as it was computed before), 0 below, infinity above.
    #[test]
    fn pow2_is_the_exact_power_of_two() {
        for e in -1200..=1200 {
            let (lo, hi) = (e / 2, e - e / 2);
            let reference = 2f64.powi(lo) * 2f64.powi(hi);
            assert_eq!(pow2(e).to_bits(), reference.to_bits(), "2^{e}");
        }
        assert_eq!(pow2(-1074), f64::from_bits(1));
        assert_eq!(pow2(-1022), f64::MIN_POSITIVE);
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(1023), 2f64.powi(1023));
        assert_eq!(pow2(i32::MIN), 0.0);
        assert_eq!(pow2(i32::MAX), f64::INFINITY);
    }
}

#[cfg(test)]
mod half_fast_path {
    use super::*;

    /// A xorshift generator: the same cases on every run.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// Interesting 16-bit patterns: zeros, subnormals, the largest finite values, infinities,
    /// NaNs, and values near one, plus random ones.
    fn operand(state: &mut u64) -> u16 {
        const SPECIAL: [u16; 12] = [
            0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0x7f7f, 0x3c00,
            0x3bff,
        ];
        let r = next(state);
        if r.is_multiple_of(5) {
            SPECIAL[(r >> 8) as usize % SPECIAL.len()]
        } else {
            (r >> 16) as u16
        }
    }

    /// The bit conversions between f16 and f32 give `half`'s bits: from every f16, and to f16
    /// from every f32 whose upper 20 bits (sign, exponent, the mantissa's top 11) take any
    /// value and whose lower 12 are each of a set that holds every rounding case (exact, just
    /// below, at and above a tie, and the sticky bit alone), in the normal and subnormal ranges.
    #[test]
    fn f16_bit_conversions_match_half() {
        for h in 0..=u16::MAX {
            let (ours, theirs) = (f16_to_f32(h), half::f16::from_bits(h).to_f32());
            assert_eq!(ours.is_nan(), theirs.is_nan(), "{h:#06x}");
            if !ours.is_nan() {
                assert_eq!(ours.to_bits(), theirs.to_bits(), "{h:#06x}");
            }
        }
        let lows = [0u32, 1, 0x7ff, 0x800, 0x801, 0xfff, 0x5a5];
        for high in 0..1u32 << 20 {
            for low in lows {
                let x = f32::from_bits(high << 12 | low);
                let (ours, theirs) = (f32_to_f16(x), half::f16::from_f32(x).to_bits());
                if x.is_nan() {
                    assert!(ours & 0x7c00 == 0x7c00 && ours & 0x3ff != 0, "{x:e}");
                } else {
                    assert_eq!(ours, theirs, "{:#010x}", x.to_bits());
                }
            }
        }
    }

    /// `round_odd_to_half` rounds any f64, not only an operation's round-to-odd result, as
    /// `round_f64` does (the `mma` kernels' f16 D is an f64 sum): random bit patterns, and
    /// values a few f64 ulps either side of each format's ties, in both formats.
    #[test]
    fn any_f64_rounds_to_half_as_round_f64_does() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for bf16 in [false, true] {
            let fmt = if bf16 { BF16 } else { F16 };
            for _ in 0..200_000 {
                let r = next();
                // a random f64 near the formats' range, and one beside a tie
                let x = f64::from_bits(r & 0x80ff_ffff_ffff_ffff | 0x3e00_0000_0000_0000);
                let h = (r >> 3) as u16 & 0x7bff;
                let (lo, hi) = (fmt.to_f64(h as u64), fmt.to_f64(h as u64 + 1));
                let tie = (lo + hi) / 2.0;
                let step = (r >> 40) as i64 % 5 - 2;
                let near = f64::from_bits((tie.to_bits() as i64 + step) as u64);
                for v in [x, -x, near, -near] {
                    assert_eq!(
                        round_odd_to_half(v, bf16) as u64,
                        round_f64(v, fmt, Rounding::NearestEven, false),
                        "bf16={bf16} {v:e}"
                    );
                }
            }
        }
    }

    /// The fast conversions give exactly the generic exact path's bits, for fma, add and mul in
    /// both formats, on a million operand triples.
    #[test]
    fn fast_half_rounding_matches_the_exact_path() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for bf16 in [false, true] {
            let fmt = if bf16 { BF16 } else { F16 };
            for _ in 0..1_000_000 {
                let (a, b, c) = (
                    operand(&mut state),
                    operand(&mut state),
                    operand(&mut state),
                );
                let (x, y, z) = (
                    fmt.to_f64(a as u64),
                    fmt.to_f64(b as u64),
                    fmt.to_f64(c as u64),
                );
                for (i, v) in [x, y, z].into_iter().enumerate() {
                    let bits = [a, b, c][i];
                    let fast = half_to_f64(bits, bf16);
                    assert!(
                        fast.to_bits() == v.to_bits() || (fast.is_nan() && v.is_nan()),
                        "{bits:#06x}"
                    );
                }
                for exact in [fma_odd(x, y, z), add_odd(x, y), x * y] {
                    let slow = if exact.is_nan() {
                        fmt.canonical_nan()
                    } else {
                        round_f64(exact, fmt, Rounding::NearestEven, false)
                    };
                    assert_eq!(
                        round_odd_to_half(exact, bf16) as u64,
                        slow,
                        "bf16={bf16} {a:#06x} {b:#06x} {c:#06x}: {exact:e}"
                    );
                }
            }
        }
    }
}
