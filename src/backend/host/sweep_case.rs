//! The host's intensity-sweep case: the kernels of [`super::compute`] over an input and an
//! output from the arena, each worker its own chunk of both, and the one-pass check.
//!
//! An output is poisoned before its kernel runs so that an element the kernel leaves unwritten
//! fails the check. A point's output is taken over the output of the point before it instead,
//! where that point's check passed and its gold values differ from this point's at every input
//! word ([`crate::cases::intensity::Gold::differs_everywhere`]): an unwritten element then
//! holds the point before's value, which the check rejects as it would the poison. A point
//! must have the point before's length: of a default run's 14 points at DRAM size, the 11
//! after each precision's first are taken over, each without the pass that wrote 1.9 GiB of
//! poison; its compute-bound points, each on fewer words of its own, are poisoned as before.
//!
//! This module must not print; it returns [`crate::Error`]s.

use super::arena::{Arena, Array, Fill, Word};
use super::clock::{higher_clock, measure_pool_mhz};
use super::compute::{run_sweep, HostCompute, HostElement};
use super::pool::{chunk, Pool, SharedPtr, SpinBarrier};
use super::PreparedCase;
use crate::cases::{arith, intensity, Case, Verdict};
use crate::{Error, Result};
use std::time::Instant;

/// A sweep case: input and output arrays from the arena, each worker on its own chunk of both.
pub(super) struct SweepCase<'p, T: HostElement> {
    pool: &'p Pool,
    compute: HostCompute,
    k: u32,
    input: Array<T>,
    output: Array<T>,
    /// Streaming stores: the working set is larger than the last-level cache and the set has
    /// them, as in the STREAM cases (`host::stream`): a plain store to a line not in cache reads
    /// it first, so the DRAM would move 3 bytes for every 2 the row counts.
    streaming: bool,
    barrier: SpinBarrier,
    clock_mhz: Option<f64>,
    /// Set by the testing hook [`super::cpu::FAULT_ENV`]: this output word is corrupted after
    /// every run.
    inject_fault: Option<u64>,
}

/// Words a sweep worker's chunk is aligned to.
const SWEEP_ALIGN: usize = 256;

impl<'p, T: HostElement + Word> SweepCase<'p, T> {
    pub(super) fn new(
        pool: &'p Pool,
        arena: &Arena,
        compute: HostCompute,
        llc_bytes: u64,
        case: &Case,
    ) -> Result<Self> {
        let k = case
            .count()
            .ok_or_else(|| Error::Usage(format!("{} has no k", case.id())))?;
        let n = usize::try_from(case.elements).map_err(|_| {
            Error::Usage(format!("{} elements do not fit in memory", case.elements))
        })?;
        let p = T::PRECISION;
        let no_room = || {
            Error::Usage(format!(
                "two arrays of {n} {} elements could not be allocated; pass a smaller --size",
                p.as_str()
            ))
        };
        // every k of a precision reads the same input words: written once, in the device's bit
        // form of them (a hash and masks, no division per element)
        let form = intensity::input_form(p);
        let input = arena
            .input(pool, n, SWEEP_ALIGN, Fill::Sweep { precision: p }, |i| {
                T::from_bits(form.word_at(i as u64))
            })
            .ok_or_else(no_room)?;
        // over the point before's output where their values differ at every word (it is
        // poisoned where not)
        let output = arena
            .output_over(
                pool,
                n,
                SWEEP_ALIGN,
                T::from_bits(0x7FC0_DEAD_7FC0_DEAD),
                Fill::SweepOut { precision: p, k },
            )
            .ok_or_else(no_room)?;
        Ok(SweepCase {
            pool,
            compute,
            k,
            input,
            output,
            streaming: case.working_set_bytes > llc_bytes && compute.simd.streams(),
            barrier: SpinBarrier::new(pool.threads()),
            clock_mhz: None,
            inject_fault: super::cpu::fault_at(case),
        })
    }
}

impl<T: HostElement + Word + super::check::SweepWord> PreparedCase for SweepCase<'_, T> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let simd = self.compute.simd;
        let threads = self.pool.threads();
        let n = self.input.len();
        let map = intensity::map(T::PRECISION);
        let (a, b) = (T::from_bits(map.a), T::from_bits(map.b));
        let (input, output) = (
            SharedPtr(self.input.as_mut_ptr()),
            SharedPtr(self.output.as_mut_ptr()),
        );
        let (k, barrier, streaming) = (self.k, &self.barrier, self.streaming);
        self.output.holds(None);
        let start = Instant::now();
        let ok = self.pool.run(|t| {
            let r = chunk(n, threads, t, SWEEP_ALIGN);
            // SAFETY: worker t reads and writes only its own chunk of both arrays.
            let (ins, outs) = unsafe {
                (
                    std::slice::from_raw_parts(input.get().add(r.start), r.len()),
                    std::slice::from_raw_parts_mut(output.get().add(r.start), r.len()),
                )
            };
            for _ in 0..reps {
                run_sweep(simd, k, a, b, ins, outs, streaming);
                barrier.wait();
            }
        });
        let secs = start.elapsed().as_secs_f64();
        if let Some(at) = self.inject_fault {
            let at = (at as usize).min(n.saturating_sub(1));
            if let Some(x) = self.output.get_mut(at) {
                *x = T::from_bits(x.to_bits() ^ 1);
            }
        }
        if !ok {
            return Err(Error::Internal(
                "a host worker panicked in the sweep kernel".into(),
            ));
        }
        Ok(secs)
    }

    /// One pass, each worker its own chunk: every output word against the gold value of its
    /// input word as read back ([`intensity::Gold::expected_for`], counted wide by
    /// [`super::check::SweepWord`]), and the input's guard (or its digest against the one it
    /// was written with), so the words read back are the generated ones. Where it passes, the
    /// output goes back saying it holds this point's values, for the next point's output to be
    /// taken over ([`super::arena::Arena::output_over`]).
    fn verify(&mut self) -> Result<Verdict> {
        let gold = intensity::Gold::new(T::PRECISION, self.k);
        let (input, output) = (&self.input[..], &self.output[..]);
        let p = T::PRECISION;
        // where a guard watches the input, its pages show a write; else its digest does
        let digested = !self.input.watched();
        let per_worker = self
            .pool
            .chunks(input.len(), SWEEP_ALIGN, |chunk| {
                let (mut digest, mut wrong, mut shown) = (0u64, 0u64, Vec::new());
                for r in super::arena::blocks(chunk) {
                    if digested {
                        digest =
                            digest.wrapping_add(super::arena::digest(&input[r.clone()], r.start));
                    }
                    // the wide count first; word by word only where it found some, to name them
                    if T::sweep_wrong(&gold, &input[r.clone()], &output[r.clone()]) == 0 {
                        continue;
                    }
                    for i in r {
                        let (got, word) = (output[i].to_bits(), input[i].to_bits());
                        let want = gold.expected_for(word);
                        if want != Some(got) {
                            wrong += 1;
                            if shown.len() < crate::cases::FAILURES_SHOWN {
                                shown.push(match want {
                                    Some(w) => format!(
                                        "[{i}] is {} ({got:#x}), should be {} ({w:#x})",
                                        arith::show(p, got),
                                        arith::show(p, w)
                                    ),
                                    None => format!("[{i}] input {word:#x} is no input word"),
                                });
                            }
                        }
                    }
                }
                (digest, wrong, shown)
            })
            .ok_or_else(|| Error::Internal("a host worker panicked checking".into()))?;
        let (mut digest, mut wrong, mut shown) = (0u64, 0u64, Vec::new());
        for (d, w, s) in per_worker {
            digest = digest.wrapping_add(d);
            wrong += w;
            shown.extend(s);
        }
        shown.truncate(crate::cases::FAILURES_SHOWN);
        let mut problems = Vec::new();
        if wrong > 0 {
            problems.push(format!(
                "{wrong} of {} values wrong: {}",
                input.len(),
                shown.join("; ")
            ));
        }
        if let Some(why) = self.input.changed(digested.then_some(digest)) {
            problems.push(format!("the input array {why}"));
        }
        let valid = problems.is_empty();
        let holds = Fill::SweepOut {
            precision: p,
            k: self.k,
        };
        self.output.holds(valid.then_some(holds));
        Ok(if valid {
            Verdict::valid()
        } else {
            Verdict::invalid(problems.join("; "))
        })
    }

    fn launch_note(&self) -> String {
        let stores = if self.streaming {
            " with streaming stores"
        } else {
            ""
        };
        format!(
            "{} pinned threads, {}{stores}, {}{}",
            self.pool.threads(),
            self.compute.simd.name(),
            self.compute.theory_note(),
            super::pool::huge_pages_note(self.input.len() * std::mem::size_of::<T>())
        )
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        self.clock_mhz = higher_clock(self.clock_mhz, measure_pool_mhz(self.pool));
        self.clock_mhz
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        if self.k == 0 {
            return None; // a copy: no arithmetic
        }
        self.compute
            .peak_gflops(self.pool.threads(), T::PRECISION, clock_mhz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::pool::allowed_cpus;
    use crate::cases::Precision;

    /// The sweep's one-pass check catches one wrong output word wherever it lies, and one
    /// changed input word by the input's guard (or, where the arena digests its inputs, by
    /// the digest), in every precision; the arrays come from the arena at a size it keeps
    /// (4 MiB).
    #[test]
    fn the_sweep_check_catches_one_wrong_word_anywhere() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let compute = HostCompute::detect();
        let n = (4u64 << 20) / 4;
        for (arena, how) in [
            (Arena::new(1 << 30), crate::backend::host::guard::CAUGHT_BY),
            (Arena::unguarded(1 << 30), "digest"),
        ] {
            for p in super::super::compute::SWEEP_PRECISIONS {
                let n = n * 4 / crate::cases::arith::word_bytes(p);
                let case = intensity::case(p, 4, n);
                let flip = |w: &mut dyn FnMut(usize)| {
                    for at in [0, n as usize / 2, n as usize - 1] {
                        w(at);
                    }
                };
                match p {
                    Precision::F32 => {
                        let mut c =
                            SweepCase::<f32>::new(&pool, &arena, compute, 1 << 20, &case).unwrap();
                        c.run(1).unwrap();
                        assert!(c.verify().unwrap().valid);
                        flip(&mut |at| {
                            c.output[at] = f32::from_bits(c.output[at].to_bits() ^ 1);
                            let v = c.verify().unwrap();
                            assert!(
                                !v.valid && v.detail.contains(&format!("[{at}]")),
                                "{p} {at}"
                            );
                            c.output[at] = f32::from_bits(c.output[at].to_bits() ^ 1);
                        });
                        assert!(c.verify().unwrap().valid);
                        c.input[5] = f32::from_bits(c.input[5].to_bits() ^ (1 << 11));
                        let v = c.verify().unwrap();
                        crate::backend::host::guard::assert_caught(&v, how, p.as_str());
                    }
                    Precision::F64 => {
                        let mut c =
                            SweepCase::<f64>::new(&pool, &arena, compute, 1 << 20, &case).unwrap();
                        c.run(1).unwrap();
                        assert!(c.verify().unwrap().valid);
                        flip(&mut |at| {
                            c.output[at] = f64::from_bits(c.output[at].to_bits() ^ 1);
                            let v = c.verify().unwrap();
                            assert!(
                                !v.valid && v.detail.contains(&format!("[{at}]")),
                                "{p} {at}"
                            );
                            c.output[at] = f64::from_bits(c.output[at].to_bits() ^ 1);
                        });
                        c.input[5] = f64::from_bits(c.input[5].to_bits() ^ (1 << 40));
                        let v = c.verify().unwrap();
                        crate::backend::host::guard::assert_caught(&v, how, p.as_str());
                    }
                    _ => {
                        let mut c =
                            SweepCase::<i32>::new(&pool, &arena, compute, 1 << 20, &case).unwrap();
                        c.run(1).unwrap();
                        assert!(c.verify().unwrap().valid);
                        flip(&mut |at| {
                            c.output[at] ^= 1;
                            let v = c.verify().unwrap();
                            assert!(
                                !v.valid && v.detail.contains(&format!("[{at}]")),
                                "{p} {at}"
                            );
                            c.output[at] ^= 1;
                        });
                        c.input[5] ^= 1;
                        let v = c.verify().unwrap();
                        crate::backend::host::guard::assert_caught(&v, how, p.as_str());
                    }
                }
            }
        }
    }

    /// A point's output is taken over the output of the point before it, which passed its
    /// check: no poison is written, and an element the kernel leaves unwritten (the point
    /// before's value put back after the run) fails the check, at either end or the middle.
    /// Over an output whose check failed, or one the kernel ran on after its check, the next
    /// point's output is poisoned.
    #[test]
    fn an_unwritten_element_is_caught_over_the_point_before() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let compute = HostCompute::detect();
        let arena = Arena::new(1 << 30);
        let n = (4u64 << 20) / 4;
        let case = |k| intensity::case(Precision::F32, k, n);
        let poisoned = || arena.written().poisoned_bytes;
        let mut first = SweepCase::<f32>::new(&pool, &arena, compute, 1 << 20, &case(1)).unwrap();
        first.run(1).unwrap();
        assert!(first.verify().unwrap().valid);
        let before: Vec<u32> = first.output.iter().map(|x| x.to_bits()).collect();
        drop(first);
        let was = poisoned();
        let mut c = SweepCase::<f32>::new(&pool, &arena, compute, 1 << 20, &case(4)).unwrap();
        assert_eq!(poisoned(), was, "taken over the point before, not poisoned");
        assert!(c
            .output
            .iter()
            .map(|x| x.to_bits())
            .eq(before.iter().copied()));
        c.run(1).unwrap();
        for at in [0, n as usize / 2, n as usize - 1] {
            let kept = c.output[at];
            c.output[at] = f32::from_bits(before[at]);
            let v = c.verify().unwrap();
            assert!(
                !v.valid && v.detail.contains(&format!("[{at}]")),
                "{at}: {}",
                v.detail
            );
            c.output[at] = kept;
        }
        assert!(c.verify().unwrap().valid);
        c.output[5] = 0.0;
        assert!(!c.verify().unwrap().valid);
        drop(c);
        let was = poisoned();
        let mut c = SweepCase::<f32>::new(&pool, &arena, compute, 1 << 20, &case(16)).unwrap();
        assert_eq!(poisoned(), was + (4 << 20), "over a failed check: poisoned");
        c.run(1).unwrap();
        assert!(c.verify().unwrap().valid);
        c.run(1).unwrap();
        drop(c);
        let was = poisoned();
        let c = SweepCase::<f32>::new(&pool, &arena, compute, 1 << 20, &case(64)).unwrap();
        assert_eq!(
            poisoned(),
            was + (4 << 20),
            "run again after its check: poisoned"
        );
        assert!(c.output.iter().all(|x| x.is_nan()));
    }
}
