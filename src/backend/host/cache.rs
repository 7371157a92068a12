//! The host backend's cache sweep: each pinned worker sums its own slice of the working set
//! `passes` times per launch, with the widest SIMD loads this CPU runs (AVX-512F, AVX2 or NEON,
//! detected at run time; a portable loop elsewhere), and stores its sum. The working set comes
//! from the arena ([`super::arena`]): from 4 MiB up, a block a DRAM case held before, not memory
//! new to the process, each worker writing the words it will read.
//!
//! `unsafe` here is limited to calling SIMD code on the instruction set that was detected, and to
//! raw pointers into slices each worker owns.

use super::arena::{Arena, Array, Fill};
use super::compute::Simd;
use super::pool::{chunk, Pool, SharedPtr, SpinBarrier};
use super::PreparedCase;
use crate::cases::{cache, Case, Verdict};
use crate::{Error, Result};
use std::time::Instant;

/// Words a worker's share is aligned to: 64 bytes, one cache line.
const ALIGN: usize = 16;

/// Bytes one launch reads on the host: a few milliseconds at L3 speeds, a quarter of one at L1's.
pub const BYTES_PER_LAUNCH: u64 = 256 << 20;

/// A prepared cache case.
pub struct CacheCase<'p> {
    pool: &'p Pool,
    simd: Simd,
    /// The words, `n` of them, in whole lines (the last one padded with zeros), from a line's
    /// boundary at least (every arena array starts on one), so no 64-byte load straddles two
    /// lines (which would halve what L1 delivers).
    words: Array<u32>,
    n: usize,
    passes: u64,
    /// One sum per worker, as the check reads it.
    sums: Vec<u64>,
    barrier: SpinBarrier,
    /// Set by the testing hook [`super::cpu::FAULT_ENV`].
    inject_fault: bool,
}

impl<'p> CacheCase<'p> {
    pub fn new(pool: &'p Pool, arena: &Arena, simd: Simd, case: &Case) -> Result<Self> {
        if !cache::is_kernel(&case.kernel) || case.precision != cache::PRECISION {
            return Err(Error::Usage(format!(
                "the host backend has no kernel for {}",
                case.id()
            )));
        }
        let n = usize::try_from(case.elements).map_err(|_| {
            Error::Usage(format!("{} elements do not fit in memory", case.elements))
        })?;
        let threads = pool.threads();
        // Each worker writes the lines it will read (the words of the last line past n are
        // zeros).
        let fill = Fill::Cache { words: n as u64 };
        let padded = n.div_ceil(ALIGN) * ALIGN;
        let words = arena
            .input(pool, padded, ALIGN, fill, |i| {
                if i < n {
                    cache::input(i as u64)
                } else {
                    0
                }
            })
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{} bytes of words for {} could not be allocated",
                    padded * 4,
                    case.id()
                ))
            })?;
        Ok(CacheCase {
            pool,
            simd,
            words,
            n,
            passes: cache::passes(case),
            sums: vec![u64::MAX; threads],
            barrier: SpinBarrier::new(threads),
            inject_fault: super::cpu::fault_injected(case),
        })
    }
}

impl PreparedCase for CacheCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let (n, threads, passes, simd) = (self.n, self.pool.threads(), self.passes, self.simd);
        let words = SharedPtr(self.words.as_mut_ptr());
        let sums = SharedPtr(self.sums.as_mut_ptr());
        let barrier = &self.barrier;
        let start = Instant::now();
        let ok = self.pool.run(|t| {
            let r = chunk(n, threads, t, ALIGN);
            // SAFETY: the words are only read while the pool runs (read-only pages, where a
            // guard watches them).
            let mine = unsafe { std::slice::from_raw_parts(words.get().add(r.start), r.len()) };
            for _ in 0..reps {
                let total = sum(simd, mine, passes);
                // SAFETY: slot t belongs to worker t.
                unsafe { sums.get().add(t).write(total as u64) };
                barrier.wait();
            }
        });
        let secs = start.elapsed().as_secs_f64();
        if self.inject_fault {
            self.sums[0] ^= 1;
        }
        if !ok {
            return Err(Error::Internal(
                "a host worker panicked in the cache sweep".into(),
            ));
        }
        Ok(secs)
    }

    fn verify(&mut self) -> Result<Verdict> {
        let (n, threads) = (self.n, self.pool.threads());
        let verdict = cache::check_sums(self.passes, &self.sums, |t| {
            let r = chunk(n, threads, t, ALIGN);
            cache::range_sum(r.start as u64..r.end as u64)
        });
        // the words, which a later case of this size reads too, as they were written
        let changed = self.words.changed_on(self.pool, ALIGN)?;
        Ok(verdict.and(Verdict::unless(
            changed.map(|why| format!("the words {why}")),
        )))
    }

    fn launch_note(&self) -> String {
        format!(
            "{} pinned threads, {} loads, {} passes{}",
            self.pool.threads(),
            self.simd.name(),
            self.passes,
            super::pool::huge_pages_note(self.words.len() * 4)
        )
    }
}

/// The wrapping sum of `passes` reads of `words` with `simd`'s loads. Each pass starts from a
/// pointer the compiler cannot see through ([`std::hint::black_box`]), so every pass is a real
/// read of memory, not a sum computed once and reused.
pub fn sum(simd: Simd, words: &[u32], passes: u64) -> u32 {
    match simd {
        // SAFETY: `simd` was detected on this CPU (Simd::detect) before it was chosen.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { x86::sum_avx512(words, passes) },
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => unsafe { x86::sum_avx2(words, passes) },
        #[cfg(target_arch = "aarch64")]
        Simd::Neon => unsafe { arm::sum_neon(words, passes) },
        _ => portable_sum(words, passes),
    }
}

/// Sixteen wrapping lanes, for CPUs without a SIMD set here.
fn portable_sum(words: &[u32], passes: u64) -> u32 {
    let mut acc = [0u32; 16];
    let mut tail = 0u32;
    for _ in 0..passes {
        let mut chunks = std::hint::black_box(words).chunks_exact(16);
        for c in &mut chunks {
            for (a, &w) in acc.iter_mut().zip(c) {
                *a = a.wrapping_add(w);
            }
        }
        tail = chunks
            .remainder()
            .iter()
            .fold(tail, |s, &w| s.wrapping_add(w));
    }
    acc.iter().fold(tail, |s, &a| s.wrapping_add(a))
}

/// The SIMD loops: `ACC` accumulators of one register each, `STEP` words per step, every pass
/// from a fresh opaque pointer; the words after the last whole step go to [`portable_sum`].
macro_rules! simd_sum {
    ($name:ident, $feature:literal, $zero:expr, $add:expr, $load:expr, $lanes:expr, $reduce:expr) => {
        /// # Safety
        /// The CPU must support the target feature.
        #[target_feature(enable = $feature)]
        pub unsafe fn $name(words: &[u32], passes: u64) -> u32 {
            const ACC: usize = 8;
            const STEP: usize = ACC * $lanes;
            let steps = words.len() / STEP;
            let mut acc = [$zero; ACC];
            for _ in 0..passes {
                let p = std::hint::black_box(words.as_ptr());
                for s in 0..steps {
                    for (j, a) in acc.iter_mut().enumerate() {
                        *a = $add(*a, $load(p.add(s * STEP + j * $lanes)));
                    }
                }
            }
            let v = acc.iter().fold($zero, |x, &a| $add(x, a));
            super::portable_sum(&words[steps * STEP..], passes).wrapping_add($reduce(v))
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load512(p: *const u32) -> __m512i {
        _mm512_loadu_si512(p.cast())
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn reduce512(v: __m512i) -> u32 {
        _mm512_reduce_add_epi32(v) as u32
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load256(p: *const u32) -> __m256i {
        _mm256_loadu_si256(p.cast())
    }
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn reduce256(v: __m256i) -> u32 {
        let mut lanes = [0u32; 8];
        _mm256_storeu_si256(lanes.as_mut_ptr().cast(), v);
        lanes.iter().fold(0u32, |s, &l| s.wrapping_add(l))
    }

    simd_sum!(
        sum_avx512,
        "avx512f",
        _mm512_setzero_si512(),
        _mm512_add_epi32,
        load512,
        16,
        reduce512
    );
    simd_sum!(
        sum_avx2,
        "avx2",
        _mm256_setzero_si256(),
        _mm256_add_epi32,
        load256,
        8,
        reduce256
    );
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;

    simd_sum!(
        sum_neon,
        "neon",
        vdupq_n_u32(0),
        vaddq_u32,
        vld1q_u32,
        4,
        vaddvq_u32
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::pool::allowed_cpus;

    /// Every instruction set this CPU has, and the portable loop, sum odd lengths exactly.
    #[test]
    fn every_available_sum_is_exact() {
        #[cfg(target_arch = "x86_64")]
        let avx2 = is_x86_feature_detected!("avx2").then_some(Simd::Avx2);
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = None;
        for simd in [Simd::Portable, Simd::detect()].into_iter().chain(avx2) {
            for n in [0usize, 1, 15, 16, 127, 128, 129, 1000, 4099] {
                let words: Vec<u32> = (0..n as u64).map(cache::input).collect();
                for passes in [0u64, 1, 3] {
                    assert_eq!(
                        sum(simd, &words, passes),
                        cache::range_sum(0..n as u64).wrapping_mul(passes as u32),
                        "{} n={n} passes={passes}",
                        simd.name()
                    );
                }
            }
        }
    }

    /// A case through the real pool validates; an unrun one does not.
    #[test]
    fn cases_validate_through_the_pool() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let arena = Arena::new(1 << 30);
        for (bytes, passes) in [(16u64 << 10, 3u64), ((1 << 20) + 64, 2)] {
            let case = cache::case("l2", bytes, passes);
            let mut prepared = CacheCase::new(&pool, &arena, Simd::detect(), &case).unwrap();
            assert_eq!(prepared.words.as_ptr() as usize % 64, 0, "starts on a line");
            assert!(!prepared.verify().unwrap().valid, "nothing run yet");
            prepared.run(2).unwrap();
            let v = prepared.verify().unwrap();
            assert!(v.valid, "{}: {}", case.id(), v.detail);
        }
        let step = cache::case(cache::SWEEP, 24 << 10, 2);
        let mut prepared = CacheCase::new(&pool, &arena, Simd::detect(), &step).unwrap();
        prepared.run(1).unwrap();
        assert!(prepared.verify().unwrap().valid, "a sweep step validates");
        let stream_like = cache::case("dram", 16 << 10, 1);
        assert!(CacheCase::new(&pool, &arena, Simd::detect(), &stream_like).is_err());
    }
}
