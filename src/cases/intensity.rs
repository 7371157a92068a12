//! The arithmetic-intensity sweep (`intensity/fma/<precision>/<k>`): read a word, apply k FMAs,
//! write it; k = 0, 1, 2, 4, …, 1024. Low k is bound by memory bandwidth, high k by the FMA pipes,
//! and the points between trace the roofline's ridge (mixbench's and the Empirical Roofline
//! Toolkit's experiment, validated and per precision).
//!
//! | per word | read | written | operations |
//! | --- | --- | --- | --- |
//! | f32, i32 | 4 B | 4 B | 2k |
//! | f16x2, bf16x2 | 4 B | 4 B | 4k (two lanes) |
//! | f64 | 8 B | 8 B | 2k |
//!
//! so the intensity is k/4, k/2 or k/8 operations per byte.
//!
//! The FMA is the map of [`arith::map`] (`x ← x·a + b`, every step rounding), so the check is
//! exact: each output word must equal the input word iterated k times in the same precision.
//! Inputs come from a small set of distinct values (4096 for f32/f64, 1024 per f16 lane, 128 per
//! bf16 lane), so the gold values are a table computed once per case, and checking n words costs
//! n look-ups, not n·k FMAs. Integer words are arbitrary: the integer map has a closed form.
//!
//! The PTX template `kernels/intensity.ptx.in` is expanded by [`crate::kernels::intensity`],
//! from this module's constants; the CUDA backend loads the expansions and the PTX interpreter's
//! tests run them. This module must not launch or time anything.

use super::arith::{self, FmaMap};
use super::{input_bits, Case, Family, Precision, Verdict, Work};

/// FMAs per word, 0 and the powers of two up to 1024.
pub const KS: [u32; 12] = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/// The precisions of the GPU sweep.
pub const PRECISIONS: [Precision; 5] = [
    Precision::F32,
    Precision::F64,
    Precision::F16x2,
    Precision::Bf16x2,
    Precision::I32,
];

/// The kernel name in ids: `intensity/fma/f32/64`.
pub const KERNEL: &str = "fma";

/// The array the inputs are drawn from, for [`input_bits`].
const INPUT_ARRAY: u64 = 0x1D;

/// The case sweeping `precision` at `k` FMAs per word over `n` words.
pub fn case(precision: Precision, k: u32, n: u64) -> Case {
    let bytes = arith::word_bytes(precision);
    Case {
        family: Family::Intensity,
        kernel: KERNEL.to_string(),
        precision,
        param: Some(super::Param::Count(k)),
        elements: n,
        working_set_bytes: 2 * n * bytes,
        work: Work {
            bytes_read: n * bytes,
            bytes_written: n * bytes,
            flops: 2 * k as u64 * arith::lanes(precision) * n,
        },
    }
}

/// Every sweep case for `precisions`, `n_for(precision)` words each, k ascending.
pub fn cases(precisions: &[Precision], n_for: impl Fn(Precision) -> u64) -> Vec<Case> {
    precisions
        .iter()
        .flat_map(|&p| {
            let n = n_for(p);
            KS.into_iter().map(move |k| case(p, k, n))
        })
        .collect()
}

/// The map every sweep kernel applies (its `a` and `b` parameters).
pub fn map(precision: Precision) -> FmaMap {
    arith::map(precision)
}

/// Distinct values per lane of each float input.
fn distinct(precision: Precision) -> u64 {
    match precision {
        Precision::F16x2 => 1024,
        Precision::Bf16x2 => 128,
        _ => 4096,
    }
}

/// The lane value for table index `m`: 1 + m / distinct, exact in the precision.
fn lane_value(precision: Precision, m: u64) -> u64 {
    let x = 1.0 + m as f64 / distinct(precision) as f64;
    match precision {
        Precision::F64 => x.to_bits(),
        Precision::F32 => (x as f32).to_bits() as u64,
        Precision::F16x2 => arith::f16_bits(x) as u64,
        Precision::Bf16x2 => arith::bf16_bits(x) as u64,
        other => panic!("{other} has no float lanes"),
    }
}

/// Where lane 1's table index starts in an input word's generated bits ([`input_bits`]).
const LANE1_INDEX_SHIFT: u32 = 20;

/// Table indices (lane 0, lane 1) of input word `i`.
fn input_index(precision: Precision, i: u64) -> (u64, u64) {
    let bits = input_bits(INPUT_ARRAY, i);
    let d = distinct(precision);
    (bits % d, (bits >> LANE1_INDEX_SHIFT) % d)
}

/// Input word `i` ([`input`]) as bit operations on `z = input_bits(0x1D, i)`, the form the
/// device's fill and check compute it in (kernels/prep.ptx, `fill_sweep_<w>` and
/// `check_sweep_<w>`): lane `l`'s table index is `(z >> 20·l) & index_mask`, and its value
/// `one_bits | index << index_shift` (1 + m / distinct is 1's exponent with m at the top of the
/// significand); a packed format's lane 1 sits in the upper 16 bits. An i32 word is the low 32
/// bits of z (one 0, mask 2^32 − 1, shift 0). [`InputForm::word`] equals [`input`] word for word
/// (tests): this is how the device computes the inputs, `input` what they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputForm {
    /// The key [`input_bits`] adds to the index ([`super::input_key`] of the sweep's array).
    pub key: u64,
    /// A lane's bits at table index 0 (the value 1), or 0 for i32.
    pub one_bits: u64,
    /// A lane's table index from z: the distinct values less one (all powers of two), or
    /// 2^32 − 1 for i32.
    pub index_mask: u64,
    /// Where the index sits in a lane's bits: its significand bits less log2 of the distinct
    /// values.
    pub index_shift: u32,
    /// Lanes per word: 2 for the packed formats, else 1.
    pub lanes: u32,
}

/// The device's form of `precision`'s input words ([`InputForm`]).
pub fn input_form(precision: Precision) -> InputForm {
    let key = super::input_key(INPUT_ARRAY);
    let significand_bits = match precision {
        Precision::F64 => 52,
        Precision::F32 => 23,
        Precision::F16x2 => 10,
        Precision::Bf16x2 => 7,
        _ => {
            return InputForm {
                key,
                one_bits: 0,
                index_mask: u64::from(u32::MAX),
                index_shift: 0,
                lanes: 1,
            }
        }
    };
    let d = distinct(precision);
    InputForm {
        key,
        one_bits: lane_value(precision, 0),
        index_mask: d - 1,
        index_shift: significand_bits - d.trailing_zeros(),
        lanes: arith::lanes(precision) as u32,
    }
}

impl InputForm {
    /// The lane indices `(lane 0, lane 1)` of the word whose generated bits are `z`.
    pub fn indices(&self, z: u64) -> (u64, u64) {
        (
            z & self.index_mask,
            (z >> LANE1_INDEX_SHIFT) & self.index_mask,
        )
    }

    /// Input word `i`: [`InputForm::word`] of its generated bits, the hash with this form's key.
    #[inline]
    pub fn word_at(&self, i: u64) -> u64 {
        self.word(super::input_bits_keyed(self.key, i))
    }

    /// The input word whose generated bits are `z`, as the fill kernel makes it.
    pub fn word(&self, z: u64) -> u64 {
        let (lo, hi) = self.indices(z);
        let lane = |m: u64| self.one_bits | m << self.index_shift;
        match self.lanes {
            2 => lane(lo) | lane(hi) << 16,
            _ => lane(lo),
        }
    }
}

/// Input word `i` as register bits.
pub fn input(precision: Precision, i: u64) -> u64 {
    match precision {
        Precision::I32 => input_bits(INPUT_ARRAY, i) as u32 as u64,
        Precision::F16x2 | Precision::Bf16x2 => {
            let (lo, hi) = input_index(precision, i);
            arith::pack2(
                lane_value(precision, lo) as u16,
                lane_value(precision, hi) as u16,
            )
        }
        _ => lane_value(precision, input_index(precision, i).0),
    }
}

/// k FMAs on one word: the reference result of one sweep element.
pub fn expected_word(precision: Precision, k: u32, x: u64) -> u64 {
    arith::iterate(precision, x, map(precision), k as u64)
}

/// Lane FMA steps the host takes to tabulate [`Gold`] for (precision, k): k per lane of every
/// distinct input (i32: two words' k, its affine map from f^k(0) and f^k(1)).
pub fn gold_steps(precision: Precision, k: u32) -> u64 {
    let values = match precision {
        Precision::I32 => 2,
        p => distinct(p) * arith::lanes(p),
    };
    values * u64::from(k)
}

/// Gold values of a (precision, k) case, tabulated over the distinct inputs.
pub struct Gold {
    precision: Precision,
    k: u32,
    /// f^k of each distinct value: the whole word for f32/f64, lane 0 for the packed formats.
    lane0: Vec<u64>,
    /// Lane 1 of the packed formats.
    lane1: Vec<u64>,
    /// The integer map applied k times, `x ↦ mul·x + add` modulo 2^32 (i32 only).
    affine: (u32, u32),
    /// `lane0` as 32-bit words (f32 only): the table a wide check gathers from.
    lane0_32: Vec<u32>,
}

/// Entries of the f32 and f64 tables: the distinct values those precisions draw.
pub const TABLE: usize = 1 << 12;

/// [`Gold::expected_for`] in the shape a vectorised check reads: the same map, with no `Option`
/// and no branch per word (an input word that is no input this precision draws has no gold
/// value, and so counts as wrong).
pub enum Lookup<'a> {
    /// An f32 input word is an input where its exponent is 127 and its low 11 bits are clear; its
    /// table index is the 12 bits above those.
    F32(&'a [u32; TABLE]),
    /// An f64 input word is an input where its exponent is 1023 and its low 40 bits are clear;
    /// its table index is the 12 bits above those.
    F64(&'a [u64; TABLE]),
    /// i32: `mul · word + add` modulo 2^32, for every word.
    I32 { mul: u32, add: u32 },
    /// The packed formats: word by word, through [`Gold::expected_for`].
    Word,
}

impl Gold {
    pub fn new(precision: Precision, k: u32) -> Gold {
        let (mut lane0, mut lane1) = (Vec::new(), Vec::new());
        if precision != Precision::I32 {
            for m in 0..distinct(precision) {
                let v = lane_value(precision, m);
                match precision {
                    Precision::F16x2 | Precision::Bf16x2 => {
                        let w = expected_word(precision, k, arith::pack2(v as u16, v as u16));
                        let (lo, hi) = arith::lanes2(w);
                        lane0.push(lo as u64);
                        lane1.push(hi as u64);
                    }
                    _ => lane0.push(expected_word(precision, k, v)),
                }
            }
        }
        // f^k is affine modulo 2^32: add = f^k(0), mul = f^k(1) - f^k(0)
        let affine = if precision == Precision::I32 {
            let add = expected_word(precision, k, 0) as u32;
            let mul = (expected_word(precision, k, 1) as u32).wrapping_sub(add);
            (mul, add)
        } else {
            (1, 0)
        };
        let lane0_32 = if precision == Precision::F32 {
            lane0.iter().map(|&w| w as u32).collect()
        } else {
            Vec::new()
        };
        Gold {
            precision,
            k,
            lane0,
            lane1,
            affine,
            lane0_32,
        }
    }

    /// This gold map as a vectorised check reads it ([`Lookup`]); it equals
    /// [`Gold::expected_for`] word for word.
    pub fn lookup(&self) -> Lookup<'_> {
        match self.precision {
            Precision::F32 => self.lane0_32[..]
                .try_into()
                .map_or(Lookup::Word, Lookup::F32),
            Precision::F64 => self.lane0[..].try_into().map_or(Lookup::Word, Lookup::F64),
            Precision::I32 => Lookup::I32 {
                mul: self.affine.0,
                add: self.affine.1,
            },
            _ => Lookup::Word,
        }
    }

    /// The gold value of an output word whose input word was `word` (as read back from the
    /// input array), or `None` where `word` is no input this precision draws: a check that
    /// reads the inputs it was given, not one that generates them again.
    pub fn expected_for(&self, word: u64) -> Option<u64> {
        let d = distinct(self.precision);
        // the table index of a lane value, where it is one (1 + m / d, exact)
        let index = |lane: u64| {
            // f32 and f64 by their bits (the check's hot loop): 1 + m / 4096 has the exponent
            // of 1 and m in the top 12 bits of the significand, nothing below them
            match self.precision {
                Precision::F32 if d == 1 << 12 => {
                    return (lane >> 23 == 127 && lane & 0x7FF == 0)
                        .then_some((lane >> 11) & 0xFFF);
                }
                Precision::F64 if d == 1 << 12 => {
                    return (lane >> 52 == 0x3FF && lane & ((1 << 40) - 1) == 0)
                        .then_some((lane >> 40) & 0xFFF);
                }
                _ => {}
            }
            let v = match self.precision {
                Precision::F64 => f64::from_bits(lane),
                Precision::F32 => f64::from(f32::from_bits(lane as u32)),
                Precision::F16x2 => arith::f16_value(lane as u16),
                Precision::Bf16x2 => arith::bf16_value(lane as u16),
                _ => return None,
            };
            let m = (v - 1.0) * d as f64;
            (m >= 0.0 && m < d as f64 && m == m.trunc())
                .then_some(m as u64)
                .filter(|&m| lane_value(self.precision, m) == lane)
        };
        match self.precision {
            Precision::I32 => {
                let (mul, add) = self.affine;
                Some(u64::from(mul.wrapping_mul(word as u32).wrapping_add(add)))
            }
            Precision::F16x2 | Precision::Bf16x2 => {
                let (lo, hi) = arith::lanes2(word);
                let (lo, hi) = (index(u64::from(lo))?, index(u64::from(hi))?);
                Some(arith::pack2(self.lane(lo, 0), self.lane(hi, 1)))
            }
            _ => Some(self.lane0[index(word)? as usize]),
        }
    }

    /// The gold value of output word `i`.
    pub fn expected(&self, i: u64) -> u64 {
        match self.precision {
            Precision::I32 => expected_word(self.precision, self.k, input(self.precision, i)),
            Precision::F16x2 | Precision::Bf16x2 => {
                let (lo, hi) = input_index(self.precision, i);
                arith::pack2(self.lane(lo, 0), self.lane(hi, 1))
            }
            _ => self.lane0[input_index(self.precision, i).0 as usize],
        }
    }

    /// The table the device's check gathers from (kernels/prep.ptx, `check_sweep_<w>`), one word
    /// per distinct input: f^k of it (f32, f64), or both lanes' f^k of it packed as a word is
    /// (f16x2, bf16x2: the check takes lane 0 of one entry and lane 1 of another). i32 has no
    /// table (its gold map is [`Gold::affine`]): one word, which the check never reads, so that
    /// the argument still points at an array.
    pub fn device_table(&self) -> Vec<u64> {
        match self.precision {
            Precision::F16x2 | Precision::Bf16x2 => self
                .lane0
                .iter()
                .zip(&self.lane1)
                .map(|(&lo, &hi)| arith::pack2(lo as u16, hi as u16))
                .collect(),
            Precision::I32 => vec![0],
            _ => self.lane0.clone(),
        }
    }

    /// The i32 gold map f^k as `(mul, add)`: `x ↦ mul·x + add` modulo 2^32 (`(1, 0)`, the
    /// identity, for the float precisions).
    pub fn affine(&self) -> (u32, u32) {
        self.affine
    }

    /// Why output word `i` is wrong (`is …, should be …`, as [`check`] says it), or `None`.
    pub fn wrong_word(&self, i: u64, got: u64) -> Option<String> {
        arith::wrong_word(self.precision, got, self.expected(i))
    }

    /// Entry `m` of the table of lane `lane`.
    fn lane(&self, m: u64, lane: u32) -> u16 {
        let table = if lane == 0 { &self.lane0 } else { &self.lane1 };
        table[m as usize] as u16
    }

    /// Whether this gold map and `other` (of the same precision) differ at every input word the
    /// precision draws: then an output holding `other`'s values, where a kernel of this map
    /// left an element unwritten, fails this map's check at that element, with no poison
    /// written before the kernel ran.
    ///
    /// - f32 and f64: every one of the table's distinct inputs.
    /// - The packed formats: a word's lanes are drawn apart, so the maps agree on some word
    ///   where they agree on some lane-0 value and on some lane-1 value.
    /// - i32: every 32-bit word is an input, and `mul·x + add ≡ mul'·x + add'` (mod 2³²) has a
    ///   solution x exactly where 2^t, t the trailing zeros of `mul − mul'`, divides
    ///   `add' − add` (for `mul = mul'`: where `add = add'`).
    pub fn differs_everywhere(&self, other: &Gold) -> bool {
        if self.precision != other.precision {
            return false;
        }
        let apart =
            |a: &[u64], b: &[u64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x != y);
        let meet = |a: &[u64], b: &[u64]| a.iter().zip(b).any(|(x, y)| x == y);
        match self.precision {
            Precision::I32 => {
                let ((mul, add), (mul2, add2)) = (self.affine, other.affine);
                let (d, c) = (mul.wrapping_sub(mul2), add2.wrapping_sub(add));
                // d·x ≡ c (mod 2^32) is solvable iff c is a multiple of 2^tz(d); d = 0 asks c = 0
                c != 0 && (d == 0 || c.trailing_zeros() < d.trailing_zeros())
            }
            Precision::F16x2 | Precision::Bf16x2 => {
                let agree_on_a_word =
                    meet(&self.lane0, &other.lane0) && meet(&self.lane1, &other.lane1);
                !self.lane0.is_empty() && !agree_on_a_word
            }
            _ => !self.lane0.is_empty() && apart(&self.lane0, &other.lane0),
        }
    }
}

/// [`Gold::differs_everywhere`] for the sweep's points `k` and `was` of `precision`.
pub fn differs_everywhere(precision: Precision, k: u32, was: u32) -> bool {
    Gold::new(precision, k).differs_everywhere(&Gold::new(precision, was))
}

/// Words in one 16-byte vector of the GPU kernel: 4, or 2 in f64.
pub fn words_per_vector(precision: Precision) -> u64 {
    16 / arith::word_bytes(precision)
}

/// How many of `first`, `first + stride`, … are below `limit` (a thread's grid-stride share).
fn strided_count(first: u64, stride: u64, limit: u64) -> u64 {
    if first < limit {
        (limit - first - 1) / stride.max(1) + 1
    } else {
        0
    }
}

/// The whole vectors and the tail words below n that the sweep kernel's grid-stride loops give
/// GPU thread `t` of `threads`: `(vectors, tail words)`.
fn gpu_thread_share(precision: Precision, n: u64, threads: u64, t: u64) -> (u64, u64) {
    let width = words_per_vector(precision);
    let vectors = n / width;
    (
        strided_count(t, threads, vectors),
        strided_count(t, threads, n - vectors * width),
    )
}

/// The words GPU thread `t` of `threads` moves over `n` words (kernels/intensity.ptx.in): the
/// whole vectors `t`, `t + threads`, … (two per main-loop trip, then one at a time), and the tail
/// words `vectors · width + t`, `+ threads`, … below n.
pub fn gpu_thread_words(precision: Precision, n: u64, threads: u64, t: u64) -> u64 {
    let (vectors, tail) = gpu_thread_share(precision, n, threads, t);
    vectors * words_per_vector(precision) + tail
}

/// The trips thread `t` of `threads` makes through the sweep kernel's three loops over `n` words
/// (two vectors per main-loop trip, then one vector, then one tail word per trip): each trip
/// runs k FMA steps per chain.
pub fn gpu_thread_trips(precision: Precision, n: u64, threads: u64, t: u64) -> u64 {
    let threads = threads.max(1);
    let (vectors, tail) = gpu_thread_share(precision, n, threads, t);
    // main-loop trips: one per second vector t + threads, t + 3·threads, … below n's vectors
    let pairs = strided_count(t + threads, 2 * threads, n / words_per_vector(precision));
    vectors - pairs + tail
}

/// The FMA steps per chain thread `t` counts (`%r12` of kernels/intensity.ptx.in, which thread 0
/// of each block records): k per trip of its loops ([`gpu_thread_trips`]), modulo 2^32 (the
/// count is a 32-bit register).
pub fn gpu_thread_steps(precision: Precision, k: u32, n: u64, threads: u64, t: u64) -> u64 {
    (u64::from(k) * gpu_thread_trips(precision, n, threads, t)) & u64::from(u32::MAX)
}

/// The words block `block_index` (of `block` threads, in a grid of `threads`) moves: what its
/// threads' records must add up to.
pub fn gpu_block_words(
    precision: Precision,
    n: u64,
    threads: u64,
    block: u64,
    block_index: u64,
) -> u64 {
    (block_index * block..(block_index + 1) * block)
        .map(|t| gpu_thread_words(precision, n, threads, t))
        .sum()
}

/// Checks `n` output words (`got(i)`: the bits of word i) against the gold values.
pub fn check(precision: Precision, k: u32, n: usize, got: impl Fn(usize) -> u64 + Sync) -> Verdict {
    let gold = Gold::new(precision, k);
    arith::check_words(precision, n, got, |i| gold.expected(i as u64))
}

/// The PTX entry name of a sweep kernel: `fma_f32_k64`.
pub fn entry_name(precision: Precision, k: u32) -> String {
    format!("{KERNEL}_{}_k{k}", precision.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The device's form of the inputs is the inputs: every lane value of every table index,
    /// and the first words of every precision, bit for bit.
    #[test]
    fn the_device_form_of_the_inputs_is_the_inputs() {
        for p in PRECISIONS {
            let form = input_form(p);
            assert_eq!(form.key, crate::cases::input_key(INPUT_ARRAY));
            if p != Precision::I32 {
                let d = distinct(p);
                assert!(d.is_power_of_two(), "{p}");
                for m in 0..d {
                    let lane = form.one_bits | m << form.index_shift;
                    assert_eq!(lane, lane_value(p, m), "{p} m = {m}");
                }
            }
            for i in 0..20_000 {
                assert_eq!(form.word_at(i), input(p, i), "{p} {i}");
            }
        }
    }

    /// The device's table gives every word's gold value as the check gathers it: lane 0 from the
    /// entry of lane 0's index, lane 1 from lane 1's; i32's through its affine map.
    #[test]
    fn the_device_table_gives_the_gold_values() {
        for p in PRECISIONS {
            for k in [0, 3, 64] {
                let gold = Gold::new(p, k);
                let (table, (mul, add)) = (gold.device_table(), gold.affine());
                let form = input_form(p);
                for i in 0..5_000 {
                    let z = input_bits(INPUT_ARRAY, i);
                    let (lo, hi) = form.indices(z);
                    let want = match (p, form.lanes) {
                        (Precision::I32, _) => {
                            u64::from(mul.wrapping_mul(z as u32).wrapping_add(add))
                        }
                        (_, 2) => table[lo as usize] & 0xFFFF | table[hi as usize] & 0xFFFF_0000,
                        _ => table[lo as usize],
                    };
                    assert_eq!(want, gold.expected(i), "{p} k = {k}, word {i}");
                }
            }
        }
    }

    /// Two points' gold maps differ at every input word where `differs_everywhere` says so (no
    /// word of the first 20,000 has one gold value at both), and where it says not, a word they
    /// agree on exists: built from the tables for the float formats, from the congruence's
    /// solution for i32. The host's precisions differ at every pair of neighbouring points.
    #[test]
    fn two_points_differ_at_every_word_where_it_is_said() {
        let host = [Precision::F32, Precision::F64, Precision::I32];
        for p in PRECISIONS {
            assert!(!differs_everywhere(p, 4, 4), "{p}: a point against itself");
            for pair in KS
                .windows(2)
                .chain(crate::cases::suite::DEFAULT_KS.windows(2))
            {
                let (was, k) = (Gold::new(p, pair[0]), Gold::new(p, pair[1]));
                if k.differs_everywhere(&was) {
                    assert!(
                        (0..20_000).all(|i| k.expected(i) != was.expected(i)),
                        "{p} {pair:?}"
                    );
                } else if p != Precision::I32 {
                    let word = agreeing_word(p, &k, &was).expect("a word both maps agree on");
                    assert_eq!(k.expected_for(word), was.expected_for(word), "{p} {pair:?}");
                }
                assert!(
                    !host.contains(&p) || k.differs_everywhere(&was),
                    "{p} {pair:?}"
                );
            }
        }
        assert!(!Gold::new(Precision::F32, 1).differs_everywhere(&Gold::new(Precision::F64, 0)));
        // i32's map: c = -b·d/(a - 1) with b odd and a - 1 = 4·416131, so c has two trailing
        // zeros fewer than d and the congruence has no solution for any two points
        for was in 0..40 {
            for k in was + 1..40 {
                let (g, h) = (Gold::new(Precision::I32, k), Gold::new(Precision::I32, was));
                assert!(g.differs_everywhere(&h), "i32 {k} {was}");
            }
        }
        // other affine maps: where the congruence is solvable, its solution is a word both
        // maps agree on; where not, no word of a sample is
        let affine = |mul: u32, add: u32| Gold {
            precision: Precision::I32,
            k: 0,
            lane0: Vec::new(),
            lane1: Vec::new(),
            affine: (mul, add),
            lane0_32: Vec::new(),
        };
        let mut seed = 12345u32;
        let mut next = || {
            seed = seed.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
            seed >> 8 << (seed % 6) // few trailing zeros and many
        };
        let (mut solvable, mut not) = (0, 0);
        for _ in 0..400 {
            let (g, h) = (affine(next(), next()), affine(next(), next()));
            let ((mul, add), (mul2, add2)) = (g.affine(), h.affine());
            let (d, c) = (mul.wrapping_sub(mul2), add2.wrapping_sub(add));
            if g.differs_everywhere(&h) {
                not += 1;
                assert!((0..5_000u64).all(|x| g.expected_for(x) != h.expected_for(x)));
                continue;
            }
            solvable += 1;
            let t = d.trailing_zeros().min(31);
            let odd = (d >> t) | 1;
            let mut inv = odd; // Newton's iteration for odd⁻¹ modulo 2^32
            for _ in 0..5 {
                inv = inv.wrapping_mul(2u32.wrapping_sub(odd.wrapping_mul(inv)));
            }
            let x = if d == 0 {
                7
            } else {
                (c >> t).wrapping_mul(inv)
            };
            let x = u64::from(x);
            assert_eq!(
                g.expected_for(x),
                h.expected_for(x),
                "{:?} {:?}",
                g.affine(),
                h.affine()
            );
        }
        assert!(
            solvable > 0 && not > 0,
            "{solvable} solvable, {not} not: both must be tried"
        );
    }

    /// A float input word of `p` whose gold value is the same under `g` and `h`, lane by lane.
    fn agreeing_word(p: Precision, g: &Gold, h: &Gold) -> Option<u64> {
        let d = distinct(p);
        let lane = |w: Option<u64>, l: u32| w.map(|w| if l == 0 { w & 0xFFFF } else { w >> 16 });
        if arith::lanes(p) == 1 {
            return (0..d)
                .map(|m| lane_value(p, m))
                .find(|&w| g.expected_for(w) == h.expected_for(w));
        }
        let word =
            |lo: u64, hi: u64| arith::pack2(lane_value(p, lo) as u16, lane_value(p, hi) as u16);
        let lo = (0..d).find(|&m| {
            lane(g.expected_for(word(m, 0)), 0) == lane(h.expected_for(word(m, 0)), 0)
        })?;
        let hi = (0..d).find(|&m| {
            lane(g.expected_for(word(0, m)), 1) == lane(h.expected_for(word(0, m)), 1)
        })?;
        Some(word(lo, hi))
    }
}
