//! The host's checks in their wide form: how many words of a block differ from their gold
//! values, counted with no branch per word so that the compiler widens the loop, and compiled
//! again for AVX2 and AVX-512 (chosen at run time, as the digest is: [`super::arena::digest`]).
//!
//! Each count equals the word-by-word check it stands in for (the tests below hold them equal on
//! planted errors of every kind). The callers run the word-by-word check only over a block whose
//! count is not 0, to say which words are wrong: a sound array is read once, at the pace of the
//! memory rather than of a lookup per word. On this project's 2-vCPU VM a check pass over the
//! sweep's 2 GiB f32 arrays took about a second word by word.
//!
//! Owns no data and decides no verdict: [`super::compute`] and [`super`] (STREAM) do.

use crate::cases::intensity::{Gold, Lookup, TABLE};
use crate::cases::stream::{Element, StreamKernel, SCALAR};
use std::ops::{Add, Mul};

/// Words counted at a time in a `u32`, so that no count can wrap.
const RUN: usize = 1 << 20;

/// Element types of the sweep, with the wide count of their wrong words.
pub trait SweepWord: Copy {
    /// How many of `outs` are not the gold value of the input word beside them in `ins` (an
    /// input word that is no input of this precision counts as wrong): what
    /// [`Gold::expected_for`] finds word by word.
    fn sweep_wrong(gold: &Gold, ins: &[Self], outs: &[Self]) -> u64;
}

/// The word-by-word count, for the formats with no wide form.
fn sweep_wrong_by_word(gold: &Gold, ins: impl Iterator<Item = u64>, outs: &[u64]) -> u64 {
    ins.zip(outs)
        .filter(|(w, got)| gold.expected_for(*w) != Some(**got))
        .count() as u64
}

#[inline(always)]
fn f32_body(table: &[u32; TABLE], ins: &[f32], outs: &[f32]) -> u64 {
    let mut total = 0u64;
    for (ins, outs) in ins.chunks(RUN).zip(outs.chunks(RUN)) {
        let mut wrong = 0u32;
        for (x, y) in ins.iter().zip(outs) {
            let (w, got) = (x.to_bits(), y.to_bits());
            let input = (w >> 23 == 127) & (w & 0x7FF == 0);
            let want = table[((w >> 11) & 0xFFF) as usize];
            wrong += u32::from(!input | (want != got));
        }
        total += u64::from(wrong);
    }
    total
}

#[inline(always)]
fn f64_body(table: &[u64; TABLE], ins: &[f64], outs: &[f64]) -> u64 {
    let mut wrong = 0u64;
    for (x, y) in ins.iter().zip(outs) {
        let (w, got) = (x.to_bits(), y.to_bits());
        let input = (w >> 52 == 0x3FF) & (w & ((1 << 40) - 1) == 0);
        let want = table[((w >> 40) & 0xFFF) as usize];
        wrong += u64::from(!input | (want != got));
    }
    wrong
}

#[inline(always)]
fn i32_body(mul: u32, add: u32, ins: &[i32], outs: &[i32]) -> u64 {
    let mut total = 0u64;
    for (ins, outs) in ins.chunks(RUN).zip(outs.chunks(RUN)) {
        let mut wrong = 0u32;
        for (x, y) in ins.iter().zip(outs) {
            wrong += u32::from(mul.wrapping_mul(*x as u32).wrapping_add(add) != *y as u32);
        }
        total += u64::from(wrong);
    }
    total
}

/// How many of `out` are not what the map `kernel` makes of `a` and `b` (those it reads):
/// [`crate::cases::stream::map_value`], with the kernel chosen once per block, not per word.
#[inline(always)]
fn stream_body<T>(kernel: StreamKernel, a: &[T], b: &[T], out: &[T]) -> u64
where
    T: Element + Add<Output = T> + Mul<Output = T>,
{
    let s = T::from_f64(SCALAR);
    // each arm its own loop, so each widens on its own
    match kernel {
        StreamKernel::Copy => out.iter().zip(a).map(|(o, x)| u64::from(*o != *x)).sum(),
        StreamKernel::Scale => out
            .iter()
            .zip(a)
            .map(|(o, x)| u64::from(*o != s * *x))
            .sum(),
        StreamKernel::Add => out
            .iter()
            .zip(a.iter().zip(b))
            .map(|(o, (x, y))| u64::from(*o != *x + *y))
            .sum(),
        StreamKernel::Triad => out
            .iter()
            .zip(a.iter().zip(b))
            .map(|(o, (x, y))| u64::from(*o != *x + s * *y))
            .sum(),
        StreamKernel::Write => {
            let fill = T::from_f64(crate::cases::stream::FILL);
            out.iter().map(|o| u64::from(*o != fill)).sum()
        }
        StreamKernel::Dot | StreamKernel::Read => 0,
    }
}

/// The exact sum a reduction's gold total adds up ([`crate::cases::stream`]: integers whose
/// sums stay exact in f64 in any order), over 8 lanes so that the loop widens.
#[inline(always)]
fn sum_body<T: Element>(kernel: StreamKernel, a: &[T], b: &[T]) -> f64 {
    let mut lanes = [0.0f64; 8];
    match kernel {
        StreamKernel::Dot => {
            let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
            let tail: f64 = ac
                .remainder()
                .iter()
                .zip(bc.remainder())
                .map(|(x, y)| x.to_f64() * y.to_f64())
                .sum();
            for (x, y) in ac.zip(bc) {
                for l in 0..8 {
                    lanes[l] += x[l].to_f64() * y[l].to_f64();
                }
            }
            lanes.iter().sum::<f64>() + tail
        }
        _ => {
            let ac = a.chunks_exact(8);
            let tail: f64 = ac.remainder().iter().map(|x| x.to_f64()).sum();
            for x in ac {
                for l in 0..8 {
                    lanes[l] += x[l].to_f64();
                }
            }
            lanes.iter().sum::<f64>() + tail
        }
    }
}

/// The same bodies compiled for the wider x86-64 vector sets.
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;

    use crate::backend::host::wide::widened;

    widened!(f32_avx512, f32_avx2, f32_body, <>, (t: &[u32; TABLE], ins: &[f32], outs: &[f32]) -> u64);
    widened!(f64_avx512, f64_avx2, f64_body, <>, (t: &[u64; TABLE], ins: &[f64], outs: &[f64]) -> u64);
    widened!(i32_avx512, i32_avx2, i32_body, <>, (mul: u32, add: u32, ins: &[i32], outs: &[i32]) -> u64);
    widened!(stream_avx512, stream_avx2, stream_body, <T: StreamWord>, (kernel: StreamKernel, a: &[T], b: &[T], out: &[T]) -> u64);
    widened!(sum_avx512, sum_avx2, sum_body, <T: Element>, (kernel: StreamKernel, a: &[T], b: &[T]) -> f64);
}

use super::wide::dispatch;

impl SweepWord for f32 {
    fn sweep_wrong(gold: &Gold, ins: &[f32], outs: &[f32]) -> u64 {
        match gold.lookup() {
            Lookup::F32(t) => dispatch!(f32_avx512, f32_avx2, f32_body, t, ins, outs),
            _ => {
                let outs: Vec<u64> = outs.iter().map(|y| u64::from(y.to_bits())).collect();
                sweep_wrong_by_word(gold, ins.iter().map(|x| u64::from(x.to_bits())), &outs)
            }
        }
    }
}

impl SweepWord for f64 {
    fn sweep_wrong(gold: &Gold, ins: &[f64], outs: &[f64]) -> u64 {
        match gold.lookup() {
            Lookup::F64(t) => dispatch!(f64_avx512, f64_avx2, f64_body, t, ins, outs),
            _ => {
                let outs: Vec<u64> = outs.iter().map(|y| y.to_bits()).collect();
                sweep_wrong_by_word(gold, ins.iter().map(|x| x.to_bits()), &outs)
            }
        }
    }
}

impl SweepWord for i32 {
    fn sweep_wrong(gold: &Gold, ins: &[i32], outs: &[i32]) -> u64 {
        match gold.lookup() {
            Lookup::I32 { mul, add } => {
                dispatch!(i32_avx512, i32_avx2, i32_body, mul, add, ins, outs)
            }
            _ => {
                let outs: Vec<u64> = outs.iter().map(|y| u64::from(*y as u32)).collect();
                sweep_wrong_by_word(gold, ins.iter().map(|x| u64::from(*x as u32)), &outs)
            }
        }
    }
}

/// Element types of the STREAM map kernels' check.
pub trait StreamWord: Element + Add<Output = Self> + Mul<Output = Self> {}
impl<T: Element + Add<Output = T> + Mul<Output = T>> StreamWord for T {}

/// How many words of `out` the map `kernel` got wrong, from its inputs `a` and `b` as read
/// back (those it reads; the others may be empty); 0 for a reduction.
pub fn stream_wrong<T: StreamWord>(kernel: StreamKernel, a: &[T], b: &[T], out: &[T]) -> u64 {
    let reads = |x: &[T]| x.len() == out.len();
    let whole = match kernel {
        StreamKernel::Copy | StreamKernel::Scale => reads(a),
        StreamKernel::Add | StreamKernel::Triad => reads(a) && reads(b),
        _ => true,
    };
    if !whole {
        // an input shorter than the output would end the count early: never call that sound
        return u64::MAX;
    }
    dispatch!(stream_avx512, stream_avx2, stream_body, kernel, a, b, out)
}

/// A reduction's gold total over `a` (and `b` for dot) as read back.
pub fn stream_sum<T: Element>(kernel: StreamKernel, a: &[T], b: &[T]) -> f64 {
    dispatch!(sum_avx512, sum_avx2, sum_body, kernel, a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::intensity::{self, Gold};
    use crate::cases::stream::{self, map_value};
    use crate::cases::Precision;

    /// A count of wrong words, one of the bodies the dispatch chooses among.
    type Count<T> = fn(&Gold, &[T], &[T]) -> u64;

    /// The word-by-word count the wide one stands in for.
    fn by_word(gold: &Gold, ins: &[u64], outs: &[u64]) -> u64 {
        sweep_wrong_by_word(gold, ins.iter().copied(), outs)
    }

    /// Sound arrays count 0; each planted error (a wrong output bit, an input word no input of
    /// the precision is, a NaN) counts as the word-by-word check counts it, widened or not.
    fn sweep_case<T: SweepWord + Copy>(
        p: Precision,
        to: impl Fn(u64) -> T,
        bits: impl Fn(T) -> u64,
        wide: &[Count<T>],
    ) {
        let n = 5003u64;
        for k in [0, 1, 4, 64] {
            let gold = Gold::new(p, k);
            let mut ins: Vec<T> = (0..n).map(|i| to(intensity::input(p, i))).collect();
            let mut outs: Vec<T> = (0..n).map(|i| to(gold.expected(i))).collect();
            let count = |ins: &[T], outs: &[T]| {
                let (wi, wo): (Vec<u64>, Vec<u64>) = (
                    ins.iter().map(|x| bits(*x)).collect(),
                    outs.iter().map(|x| bits(*x)).collect(),
                );
                let want = by_word(&gold, &wi, &wo);
                assert_eq!(T::sweep_wrong(&gold, ins, outs), want, "{p} k={k}");
                for f in wide {
                    assert_eq!(f(&gold, ins, outs), want, "{p} k={k}, a narrower body");
                }
                want
            };
            assert_eq!(count(&ins, &outs), 0, "{p} k={k}: sound arrays");
            for at in [0, n as usize / 2, n as usize - 1] {
                outs[at] = to(bits(outs[at]) ^ 1);
                assert_eq!(count(&ins, &outs), 1, "{p} k={k}: output [{at}]");
                outs[at] = to(gold.expected(at as u64));
            }
            if p != Precision::I32 {
                // a low bit, the exponent, a NaN: no input of the precision
                for flip in [1u64, 1 << 30, u64::MAX] {
                    let at = 777;
                    let saved = ins[at];
                    ins[at] = to(if flip == u64::MAX {
                        bits(to(u64::MAX))
                    } else {
                        bits(saved) ^ flip
                    });
                    assert_eq!(count(&ins, &outs), 1, "{p} k={k}: input {flip:#x}");
                    ins[at] = saved;
                }
            }
        }
    }

    #[test]
    fn the_wide_sweep_count_is_the_word_by_word_one() {
        sweep_case::<f32>(
            Precision::F32,
            |w| f32::from_bits(w as u32),
            |x| u64::from(x.to_bits()),
            &[|g, i, o| match g.lookup() {
                Lookup::F32(t) => f32_body(t, i, o),
                _ => panic!("f32 has a table"),
            }],
        );
        sweep_case::<f64>(
            Precision::F64,
            f64::from_bits,
            f64::to_bits,
            &[|g, i, o| match g.lookup() {
                Lookup::F64(t) => f64_body(t, i, o),
                _ => panic!("f64 has a table"),
            }],
        );
        sweep_case::<i32>(
            Precision::I32,
            |w| w as u32 as i32,
            |x| u64::from(x as u32),
            &[|g, i, o| match g.lookup() {
                Lookup::I32 { mul, add } => i32_body(mul, add, i, o),
                _ => panic!("i32 is affine"),
            }],
        );
    }

    fn stream_case<T: StreamWord>() {
        let n = 1037u64;
        let maps = [
            StreamKernel::Copy,
            StreamKernel::Scale,
            StreamKernel::Add,
            StreamKernel::Triad,
            StreamKernel::Write,
        ];
        for kernel in maps {
            let input = |array| -> Vec<T> {
                (0..n)
                    .map(|i| T::from_f64(stream::input(kernel, array, i)))
                    .collect()
            };
            let (a, b) = (input(0), input(1));
            let mut out: Vec<T> = a
                .iter()
                .zip(&b)
                .map(|(x, y)| map_value(kernel, *x, *y))
                .collect();
            let plain = |out: &[T]| stream_body(kernel, &a, &b, out);
            assert_eq!(stream_wrong(kernel, &a, &b, &out), 0, "{kernel:?}");
            for at in [0, n as usize / 2, n as usize - 1] {
                let saved = out[at];
                for bad in [T::from_f64(saved.to_f64() + 0.5), T::from_f64(f64::NAN)] {
                    out[at] = bad;
                    assert_eq!(stream_wrong(kernel, &a, &b, &out), 1, "{kernel:?} [{at}]");
                    assert_eq!(plain(&out), 1, "{kernel:?} [{at}], the plain body");
                }
                out[at] = saved;
            }
            if matches!(kernel, StreamKernel::Add | StreamKernel::Triad) {
                assert_eq!(
                    stream_wrong(kernel, &a, &b[..10], &out),
                    u64::MAX,
                    "{kernel:?}"
                );
            }
        }
        for kernel in [StreamKernel::Dot, StreamKernel::Read] {
            let input = |array| -> Vec<T> {
                (0..n)
                    .map(|i| T::from_f64(stream::input(kernel, array, i)))
                    .collect()
            };
            let (a, b) = (input(0), input(1));
            let want: f64 = if kernel == StreamKernel::Dot {
                a.iter().zip(&b).map(|(x, y)| x.to_f64() * y.to_f64()).sum()
            } else {
                a.iter().map(|x| x.to_f64()).sum()
            };
            assert_eq!(stream_sum(kernel, &a, &b), want, "{kernel:?}");
            assert_eq!(sum_body(kernel, &a, &b), want, "{kernel:?}, the plain body");
        }
    }

    #[test]
    fn the_wide_stream_count_and_sum_are_the_word_by_word_ones() {
        stream_case::<f32>();
        stream_case::<f64>();
    }
}
