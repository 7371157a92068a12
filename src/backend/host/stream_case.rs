//! The STREAM kernels as a prepared case on the host: the arrays from the arena (inputs as it
//! holds them, the output poisoned), each worker's aligned chunk run by its SIMD loop
//! ([`super::stream`]) between barriers, the reductions' partials summed in blocks, and the
//! one-pass check (every output element, the inputs' digests).
//!
//! Its tests stay beside it: `.ci/aarch64` runs the host backend's library tests under
//! qemu-user, and these are the STREAM kernels' (NEON there).

use super::arena::{Arena, Array};
use super::compute::Simd;
use super::pool::{chunk, Pool, SharedPtr, SpinBarrier};
use super::stream::{stream_simd, StreamSimd};
use super::{stream_arrays, HostFloat};
use crate::backend::PreparedCase;
use crate::cases::stream::StreamKernel;
use crate::cases::{self, Case, Verdict};
use crate::{Error, Result};
use std::time::Instant;

/// Elements a worker sums in its own precision before it adds the block to an f64 total.
/// Keeps reductions exact on the checker's integer inputs (see `bench::stream`).
const SUM_BLOCK: usize = 4096;

/// One STREAM (or size-sweep) case prepared on the pool: its arrays and the loop that runs it.
pub(super) struct StreamCase<'p, T: HostFloat> {
    pool: &'p Pool,
    kernel: StreamKernel,
    /// The loop of the detected instruction set.
    simd: StreamSimd<T>,
    /// Streaming stores: the working set is larger than the last-level cache and the set has
    /// them.
    streaming: bool,
    /// Inputs first, then the output (as in the PTX parameter order), from the arena.
    arrays: Vec<Array<T>>,
    /// One f64 total per worker, for the reductions.
    partials: Vec<f64>,
    barrier: SpinBarrier,
    /// Set by the testing hook [`FAULT_ENV`](super::cpu::FAULT_ENV): corrupt this result after every run.
    inject_fault: Option<u64>,
}

/// Words a STREAM worker's chunk is aligned to (64 bytes of f32).
const STREAM_ALIGN: usize = 16;

impl<'p, T: HostFloat> StreamCase<'p, T> {
    /// `llc_bytes`: the last-level cache; arrays larger together store streaming where the set
    /// can (see `stream`). The arrays come from `arena`: inputs as it holds them where it does.
    pub(super) fn new(
        pool: &'p Pool,
        arena: &Arena,
        simd: Simd,
        llc_bytes: u64,
        case: &Case,
    ) -> Result<Self> {
        let kernel = StreamKernel::from_name(&case.kernel)
            .ok_or_else(|| Error::Usage(format!("unknown STREAM kernel {}", case.kernel)))?;
        let n = usize::try_from(case.elements).map_err(|_| {
            Error::Usage(format!("{} elements do not fit in memory", case.elements))
        })?;
        let no_room = || {
            Error::Usage(format!(
                "{} arrays of {n} {} elements could not be allocated; pass a smaller --size",
                kernel.inputs() + kernel.outputs(),
                T::PRECISION.as_str()
            ))
        };
        let mut arrays = Vec::new();
        for (array, fill) in stream_arrays(kernel, T::PRECISION).into_iter().enumerate() {
            arrays.push(
                match fill {
                    Some(fill) => arena.input(pool, n, STREAM_ALIGN, fill, |i| {
                        T::from_f64(cases::stream::input(kernel, array as u64, i as u64))
                    }),
                    None => arena.output(pool, n, STREAM_ALIGN, T::poison()),
                }
                .ok_or_else(no_room)?,
            );
        }
        let simd = stream_simd::<T>(simd);
        Ok(StreamCase {
            pool,
            kernel,
            simd,
            streaming: case.working_set_bytes > llc_bytes && simd.streams,
            arrays,
            partials: vec![f64::NAN; pool.threads()],
            barrier: SpinBarrier::new(pool.threads()),
            inject_fault: super::cpu::fault_at(case),
        })
    }

    /// Whether each input needs its digest taken: no guard watches it ([`Array::watched`]).
    fn digested(&self) -> [bool; 2] {
        let inputs = self.kernel.inputs() as usize;
        [0, 1].map(|i| i < inputs && !self.arrays[i].watched())
    }

    /// Each input's guard, or its digest as it is now against what the arena wrote; an input
    /// that changed is tainted (written again before another case reads it) and named.
    fn inputs_changed(&mut self, digests: [Option<u64>; 2]) -> Option<String> {
        let inputs = self.kernel.inputs() as usize;
        let changed: Vec<String> = self.arrays[..inputs]
            .iter_mut()
            .zip(digests)
            .enumerate()
            .filter_map(|(array, (a, now))| {
                let why = a.changed(now)?;
                Some(format!("input array {} {why}", ["a", "b"][array.min(1)]))
            })
            .collect();
        (!changed.is_empty()).then(|| changed.join("; "))
    }
}

impl<T: HostFloat> PreparedCase for StreamCase<'_, T> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let threads = self.pool.threads();
        let n = self.arrays[0].len();
        let kernel = self.kernel;
        let scalar = T::from_f64(cases::stream::SCALAR);
        let fill = T::from_f64(cases::stream::FILL);
        let ptrs: Vec<SharedPtr<T>> = self
            .arrays
            .iter_mut()
            .map(|a| SharedPtr(a.as_mut_ptr()))
            .collect();
        let partials = SharedPtr(self.partials.as_mut_ptr());
        let barrier = &self.barrier;
        let (simd, streaming) = (self.simd, self.streaming);
        let start = Instant::now();
        let ok = self.pool.run(|t| {
            let r = chunk(n, threads, t, STREAM_ALIGN);
            let len = r.len();
            // This worker's chunk of each array, inputs first and the output last (write has
            // only an output). SAFETY: r lies inside every array.
            let at = |k: usize| unsafe { ptrs[k.min(ptrs.len() - 1)].get().add(r.start) };
            let (a, b, c) = (at(0) as *const T, at(1) as *const T, at(ptrs.len() - 1));
            let s = if kernel == StreamKernel::Write {
                fill
            } else {
                scalar
            };
            for _ in 0..reps {
                // SAFETY: a, b and c are this worker's chunk (len elements) of distinct arrays,
                // written by this worker alone (a kernel of one array reads or writes only
                // that one); `simd` is the set this CPU was found to run.
                let sum = unsafe { simd.run(kernel, len, s, a, b, c, SUM_BLOCK, streaming) };
                if kernel.is_reduction() {
                    // SAFETY: slot t belongs to worker t.
                    unsafe { partials.get().add(t).write(std::hint::black_box(sum)) };
                }
                barrier.wait();
            }
        });
        let secs = start.elapsed().as_secs_f64();
        if let Some(at) = self.inject_fault {
            if self.kernel.is_reduction() {
                self.partials[0] += 1.0;
            } else if let Some(out) = self.arrays.last_mut() {
                let at = (at as usize).min(out.len().saturating_sub(1));
                if let Some(x) = out.get_mut(at) {
                    *x = T::from_f64(x.to_f64() + 1.0);
                }
            }
        }
        if !ok {
            return Err(Error::Internal(format!(
                "a host worker panicked running {}",
                self.kernel.name()
            )));
        }
        Ok(secs)
    }

    /// One pass over the arrays, each worker its own chunk: a map kernel's every output element
    /// against the kernel's arithmetic on its inputs as read back, a reduction's gold total as
    /// the exact sum of its inputs as read back, and in the same pass the digests of inputs no
    /// guard watches against those they were written with, so the inputs are the generated
    /// ones.
    fn verify(&mut self) -> Result<Verdict> {
        let kernel = self.kernel;
        let n = self.arrays[0].len();
        let digested = self.digested();
        let arrays: Vec<&[T]> = self.arrays.iter().map(|a| &a[..]).collect();
        let (a, b) = (
            arrays.first().copied().unwrap_or(&[]),
            arrays.get(1).copied().unwrap_or(&[]),
        );
        let out: &[T] = if kernel.is_reduction() {
            &[]
        } else {
            arrays[arrays.len() - 1]
        };
        let per_worker = self
            .pool
            .chunks(n, STREAM_ALIGN, |chunk| {
                let mut digests = [0u64; 2];
                let (mut sum, mut wrong, mut shown) = (0.0f64, 0u64, Vec::new());
                for r in super::arena::blocks(chunk) {
                    let start = r.start;
                    if digested[0] {
                        digests[0] =
                            digests[0].wrapping_add(super::arena::digest(&a[r.clone()], start));
                    }
                    if digested[1] {
                        digests[1] =
                            digests[1].wrapping_add(super::arena::digest(&b[r.clone()], start));
                    }
                    if kernel.is_reduction() {
                        let b = if kernel == StreamKernel::Dot {
                            &b[r.clone()]
                        } else {
                            &[]
                        };
                        sum += super::check::stream_sum(kernel, &a[r.clone()], b);
                    } else {
                        // the wide count first; word by word only where it found some
                        // (write reads no array, copy and scale no `b`)
                        let b_part = if b.is_empty() { b } else { &b[r.clone()] };
                        if super::check::stream_wrong(
                            kernel,
                            &a[r.clone()],
                            b_part,
                            &out[r.clone()],
                        ) == 0
                        {
                            continue;
                        }
                        let zero = T::default();
                        for i in r {
                            let want = cases::stream::map_value(
                                kernel,
                                a.get(i).copied().unwrap_or(zero),
                                b.get(i).copied().unwrap_or(zero),
                            );
                            if out[i] != want {
                                wrong += 1;
                                if shown.len() < cases::FAILURES_SHOWN {
                                    shown.push(format!(
                                        "[{i}] is {:?}, should be {:?}, diff {:e}",
                                        out[i],
                                        want,
                                        out[i].to_f64() - want.to_f64()
                                    ));
                                }
                            }
                        }
                    }
                }
                (digests, sum, wrong, shown)
            })
            .ok_or_else(|| Error::Internal("a host worker panicked checking".into()))?;
        let mut digests = [0u64; 2];
        let (mut sum, mut wrong, mut shown) = (0.0, 0u64, Vec::new());
        for (d, s, w, sh) in per_worker {
            digests[0] = digests[0].wrapping_add(d[0]);
            digests[1] = digests[1].wrapping_add(d[1]);
            sum += s;
            wrong += w;
            shown.extend(sh);
        }
        shown.truncate(cases::FAILURES_SHOWN);
        let changed = self.inputs_changed([0, 1].map(|i| digested[i].then_some(digests[i])));
        let verdict = if kernel.is_reduction() {
            cases::stream::check_sum_against::<T>(
                kernel,
                sum,
                self.partials.iter().sum(),
                SUM_BLOCK as u64,
            )
        } else if wrong > 0 {
            Verdict::invalid(format!(
                "{wrong} of {n} elements wrong: {}",
                shown.join("; ")
            ))
        } else {
            Verdict::valid()
        };
        Ok(verdict.and(Verdict::unless(changed)))
    }

    fn launch_note(&self) -> String {
        let stores = match (self.kernel.is_reduction(), self.streaming) {
            (true, _) => "",
            (false, true) => " and streaming stores",
            (false, false) => " and plain stores",
        };
        let bytes = self.arrays[0].len() * std::mem::size_of::<T>();
        format!(
            "{} pinned threads, {} loads{stores}{}",
            self.pool.threads(),
            self.simd.name,
            super::pool::huge_pages_note(bytes)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::pool::allowed_cpus;
    use crate::backend::host::HostBackend;
    use crate::backend::Backend;
    use crate::cases::Precision;

    /// Every STREAM kernel on odd sizes, through the real pool, validates.
    #[test]
    fn stream_kernels_validate_on_odd_sizes() {
        let mut host = HostBackend::with_cpus(allowed_cpus().into_iter().take(2).collect());
        for n in [1u64, 17, 4099, 100_001] {
            for case in cases::stream::cases(|_| n) {
                let mut prepared = host.prepare(&case).unwrap();
                let secs = prepared.run(2).unwrap();
                assert!(secs > 0.0);
                let verdict = prepared.verify().unwrap();
                assert!(verdict.valid, "{} n={n}: {}", case.id(), verdict.detail);
            }
        }
    }

    /// The one-pass check catches one wrong element wherever it lies: each map kernel's output
    /// changed at its first, middle or last element, a reduction's input changed at one
    /// element, and a map kernel's input changed at one element after the run (the output,
    /// right for the input as it was, does not show it): an input by its guard, or by its
    /// digest where the arena digests its inputs. The arrays come from the arena at a size it
    /// keeps (4 MiB), as a DRAM case's do.
    #[test]
    fn the_check_catches_one_wrong_element_anywhere() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let simd = Simd::detect();
        let n = (4usize << 20) / 4;
        for (arena, how) in [
            (Arena::new(1 << 30), crate::backend::host::guard::CAUGHT_BY),
            (Arena::unguarded(1 << 30), "digest"),
        ] {
            let prepare = |case: &Case| -> StreamCase<'_, f32> {
                StreamCase::<f32>::new(&pool, &arena, simd, 1 << 20, case).unwrap()
            };
            for kernel in StreamKernel::ALL {
                let case = kernel.case(Precision::F32, n as u64);
                let mut prepared = prepare(&case);
                prepared.run(1).unwrap();
                let v = prepared.verify().unwrap();
                assert!(v.valid, "{}: {}", case.id(), v.detail);
                // (a reduction has no output array: its inputs alone, below)
                let outputs = if kernel.is_reduction() {
                    vec![]
                } else {
                    vec![0, n / 2, n - 1]
                };
                for at in outputs {
                    let out = prepared.arrays.last_mut().unwrap();
                    let was = out[at];
                    out[at] = was + 1.0;
                    let v = prepared.verify().unwrap();
                    assert!(!v.valid, "{} [{at}]: {}", case.id(), v.detail);
                    assert!(v.detail.contains(&format!("[{at}]")), "{}", v.detail);
                    prepared.arrays.last_mut().unwrap()[at] = was;
                    assert!(prepared.verify().unwrap().valid, "{} restored", case.id());
                }
                if kernel.inputs() > 0 {
                    prepared.arrays[0][n - 7] += 1.0;
                    let v = prepared.verify().unwrap();
                    crate::backend::host::guard::assert_caught(&v, how, &case.id());
                }
            }
        }
    }

    /// Arrays larger than the last-level cache store streaming where the set has streaming
    /// stores (x86), still validate, and the note says which stores ran; smaller ones store
    /// plainly. The note says too when the arrays asked for huge pages (the large ones, where
    /// the OS has them).
    #[test]
    fn dram_cases_store_streaming_and_say_so() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let simd = Simd::detect();
        let arena = Arena::new(1 << 30);
        for (n, llc) in [(3usize << 20, 1u64 << 20), (1000, 1 << 30)] {
            for case in cases::stream::cases(|_| n as u64) {
                let mut prepared: Box<dyn PreparedCase> = match case.precision {
                    Precision::F32 => {
                        Box::new(StreamCase::<f32>::new(&pool, &arena, simd, llc, &case).unwrap())
                    }
                    _ => Box::new(StreamCase::<f64>::new(&pool, &arena, simd, llc, &case).unwrap()),
                };
                prepared.run(2).unwrap();
                let verdict = prepared.verify().unwrap();
                assert!(verdict.valid, "{} n={n}: {}", case.id(), verdict.detail);
                let streams = case.working_set_bytes > llc && stream_simd::<f32>(simd).streams;
                let note = prepared.launch_note();
                let stores = match (case.kernel.as_str(), streams) {
                    ("dot" | "read", _) => "loads",
                    (_, true) => "loads and streaming stores",
                    (_, false) => "loads and plain stores",
                };
                let bytes = n * if case.precision == Precision::F32 {
                    4
                } else {
                    8
                };
                let huge = crate::backend::host::pool::huge_pages_asked(bytes);
                let thp =
                    crate::backend::host::pool::thp_asks(crate::backend::host::pool::thp_mode());
                assert_eq!(huge, n > 1000 && thp);
                let want = format!(
                    "{stores}{}",
                    if huge { ", huge pages asked for" } else { "" }
                );
                assert!(note.ends_with(&want), "{}: {note}", case.id());
            }
        }
    }

    /// An output that was never written stays poisoned, and the check says so.
    #[test]
    fn unrun_case_is_invalid() {
        let mut host = HostBackend::with_cpus(vec![allowed_cpus()[0]]);
        let case = StreamKernel::Triad.case(Precision::F32, 1000);
        let mut prepared = host.prepare(&case).unwrap();
        let verdict = prepared.verify().unwrap();
        assert!(!verdict.valid);
        assert!(verdict.detail.starts_with("1000 of 1000 elements wrong"));
        drop(prepared);
        let case = StreamKernel::Dot.case(Precision::F64, 1000);
        let mut prepared = host.prepare(&case).unwrap();
        assert!(
            !prepared.verify().unwrap().valid,
            "NaN partials are invalid"
        );
    }
}
