//! The catalogue of cases: what each one computes, how much work it does, and how its output
//! is checked.
//!
//! A [`Case`] is backend-neutral: the same `stream/triad/f32` case runs as a PTX kernel on a GPU
//! and as a Rust kernel on the host, does the same analytic work ([`Work`]: bytes read, bytes
//! written, arithmetic operations) and is checked against the same gold values. The work table
//! is the one place where time becomes bandwidth (BabelStream's weight table made explicit);
//! nothing else in the crate counts bytes.
//!
//! This module must not launch or time anything: that is the backends' and the runner's job.

pub mod arith;
pub mod cache;
pub mod capacity;
pub mod efficiency;
pub mod gemm;
pub mod intensity;
pub mod latency;
pub mod launch;
pub mod link;
pub mod peak;
pub mod stream;
pub mod suite;
pub mod tensor;
pub mod wgmma;

use serde::{Deserialize, Serialize};

// The names a calibration shares with the rows live in the lean calibration crate, so an
// estimator that loads a calibration builds none of roofprobe.
pub use roofprobe_calibration::{Family, Param, Precision};

/// What one operation of a precision is called: `FLOP`, or `OP` for integer formats.
pub fn ops(precision: Precision) -> &'static str {
    if precision.is_integer() {
        "OP"
    } else {
        "FLOP"
    }
}

/// The analytic work of one launch of a case, counted the STREAM way: every element read or
/// written by the kernel counts once, with no write-allocate traffic, and arithmetic counts 2 per
/// fused multiply-add per lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Work {
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Arithmetic operations (floating point, or integer for integer precisions).
    pub flops: u64,
}

impl Work {
    /// Bytes moved: read + written.
    pub fn bytes(&self) -> u64 {
        self.bytes_read + self.bytes_written
    }

    /// Arithmetic intensity in operations per byte; `None` for a case that moves no bytes.
    pub fn intensity(&self) -> Option<f64> {
        let bytes = self.bytes();
        (bytes > 0).then(|| self.flops as f64 / bytes as f64)
    }
}

/// One measurable case: a kernel in a precision on a problem of a given size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub family: Family,
    /// The kernel's name in the user's words (`triad`, `fma`, `mma_m16n8k16`).
    pub kernel: String,
    pub precision: Precision,
    /// The family's parameter: operations per element in the intensity sweep, KiB of working set
    /// in the cache sweep and the latency chase, the `MxNxK` shape of a GEMM; `None` elsewhere.
    pub param: Option<Param>,
    /// Problem size in elements (of `precision`) per array.
    pub elements: u64,
    /// Bytes of memory the case's arrays occupy (its working set).
    pub working_set_bytes: u64,
    /// The work of one launch.
    pub work: Work,
}

impl Case {
    /// A stable identifier: `family/kernel/precision[/param]`.
    pub fn id(&self) -> String {
        match self.param {
            Some(p) => format!("{}/{}/{}/{}", self.family, self.kernel, self.precision, p),
            None => format!("{}/{}/{}", self.family, self.kernel, self.precision),
        }
    }

    /// The count parameter (the sweep's k, the cache sweep's KiB), if the case has one.
    pub fn count(&self) -> Option<u32> {
        self.param.and_then(Param::count)
    }
}

/// Whether a case's figure is an arithmetic rate held against a theoretical peak (its
/// %theory): the FMA and tensor peaks, the GEMMs (their type's tensor peak), and the intensity
/// sweep's points that do arithmetic (k above 0). The families that move bytes, wait, allocate
/// or copy have none. A new family says here whether it has one.
pub fn has_arithmetic_theory(case: &Case) -> bool {
    match case.family {
        Family::Peak | Family::Tensor | Family::Gemm => true,
        Family::Intensity => case.count().is_some_and(|k| k > 0),
        Family::Stream
        | Family::Efficiency
        | Family::Cache
        | Family::Latency
        | Family::Capacity
        | Family::Launch
        | Family::Link => false,
    }
}

/// The outcome of checking a case's output against its gold values.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub valid: bool,
    /// Empty when valid; otherwise the first failures, BabelStream style (is / should / diff).
    pub detail: String,
}

impl Verdict {
    pub fn valid() -> Self {
        Verdict {
            valid: true,
            detail: String::new(),
        }
    }

    pub fn invalid(detail: impl Into<String>) -> Self {
        Verdict {
            valid: false,
            detail: detail.into(),
        }
    }

    /// This verdict and `other` together: valid where both are, else the failures of each,
    /// this one's first.
    pub fn and(self, other: Verdict) -> Verdict {
        match (self.valid, other.valid) {
            (true, _) => other,
            (false, true) => self,
            (false, false) => Verdict::invalid(format!("{}; {}", self.detail, other.detail)),
        }
    }

    /// Invalid for `problem` where there is one, else valid.
    pub fn unless(problem: Option<String>) -> Verdict {
        problem.map_or_else(Verdict::valid, Verdict::invalid)
    }
}

/// Elements below which [`par_map`] and [`check_elements`] stay on the calling thread: fewer
/// than this cost less than starting threads.
const PARALLEL_FROM: usize = 1 << 16;

/// The cores the host-side preparation and checks use: every core this process may run on (a
/// GPU case's arrays of hundreds of MiB are generated and checked on the host, and on one core
/// that would take longer than the measurement).
pub fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |t| t.get())
}

/// How many threads [`par_map`] and [`check_elements`] use for `n` elements: one below
/// [`PARALLEL_FROM`], else [`host_cores`].
fn host_threads(n: usize) -> usize {
    if n < PARALLEL_FROM {
        1
    } else {
        host_cores()
    }
}

/// `(0..n).map(f)`, computed on every core in contiguous chunks.
pub fn par_map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    par_map_on(host_threads(n), n, f)
}

/// [`par_map`] for items that each cost much (a dot product thousands long): on every core
/// whenever there are two items or more, not only from `PARALLEL_FROM`.
pub fn par_map_heavy<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    par_map_on(host_cores(), n, f)
}

/// `(0..n).map(f)` on `threads` threads, in contiguous chunks.
fn par_map_on<T: Send>(threads: usize, n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    if threads <= 1 || n < 2 {
        return (0..n).map(f).collect();
    }
    let chunk = n.div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                s.spawn(move || (start..(start + chunk).min(n)).map(f).collect::<Vec<T>>())
            })
            .collect();
        let mut out = Vec::with_capacity(n);
        for p in parts {
            out.extend(p.join().expect("a preparation thread panicked"));
        }
        out
    })
}

/// How many failures a verdict lists before it stops.
pub const FAILURES_SHOWN: usize = 3;

/// Checks `n` elements on every core: `wrong(i)` says why element `i` is wrong (`is …, should
/// be …`), or `None`. The verdict counts every wrong element and lists the first
/// [`FAILURES_SHOWN`] by index, BabelStream style: "`count` of `n` `what` wrong: \[i\] …".
pub fn check_elements(
    n: usize,
    what: &str,
    wrong: impl Fn(usize) -> Option<String> + Sync,
) -> Verdict {
    let threads = host_threads(n);
    let chunk = n.div_ceil(threads).max(1);
    let scan = |start: usize| {
        let mut count = 0u64;
        let mut shown = Vec::new();
        for i in start..(start + chunk).min(n) {
            if let Some(why) = wrong(i) {
                count += 1;
                if shown.len() < FAILURES_SHOWN {
                    shown.push(format!("[{i}] {why}"));
                }
            }
        }
        (count, shown)
    };
    let parts: Vec<(u64, Vec<String>)> = if threads == 1 {
        vec![scan(0)]
    } else {
        let scan = &scan;
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .step_by(chunk)
                .map(|start| s.spawn(move || scan(start)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a checking thread panicked"))
                .collect()
        })
    };
    let count: u64 = parts.iter().map(|(c, _)| c).sum();
    if count == 0 {
        return Verdict::valid();
    }
    let shown: Vec<String> = parts
        .into_iter()
        .flat_map(|(_, s)| s)
        .take(FAILURES_SHOWN)
        .collect();
    Verdict::invalid(format!("{count} of {n} {what} wrong: {}", shown.join("; ")))
}

/// What [`input_bits`] adds to an index of array `array` before it mixes the sum: the key a
/// device-side fill of the array takes (kernels/prep.ptx).
pub fn input_key(array: u64) -> u64 {
    array
        .wrapping_mul(0xD1B5_4A32_D192_ED03)
        .wrapping_add(0x9E37_79B9_7F4A_7C15)
}

/// Deterministic pseudo-random bits for input element `index` of array `array`.
///
/// SplitMix64 of the pair, so any element can be regenerated on its own: the host produces a
/// GPU case's inputs, and the checker regenerates them instead of keeping a copy.
pub fn input_bits(array: u64, index: u64) -> u64 {
    input_bits_keyed(input_key(array), index)
}

/// [`input_bits`] of the array whose [`input_key`] is `key`.
#[inline]
pub fn input_bits_keyed(key: u64, index: u64) -> u64 {
    let mut z = index.wrapping_add(key);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Split over the cores, the map keeps its order and the check counts every wrong element
    /// and lists the first ones by index, whichever chunk they fall in.
    #[test]
    fn parallel_preparation_and_checks_match_the_serial_ones() {
        let n = 5 * PARALLEL_FROM + 7;
        let squares = par_map(n, |i| (i as u64) * (i as u64));
        assert_eq!(squares.len(), n);
        assert!(squares
            .iter()
            .enumerate()
            .all(|(i, &v)| v == (i * i) as u64));
        // few heavy items: split too, in order, on more than one thread where there are cores
        for few in [0, 1, 2, 7, 65] {
            let threads = std::sync::Mutex::new(std::collections::HashSet::new());
            let got = par_map_heavy(few, |i| {
                threads.lock().unwrap().insert(std::thread::current().id());
                i * 3
            });
            assert_eq!(got, (0..few).map(|i| i * 3).collect::<Vec<_>>());
            let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
            if few >= 2 && cores >= 2 {
                assert!(
                    threads.lock().unwrap().len() >= 2,
                    "{few} items on one thread"
                );
            }
        }
        let wrong = [3 * PARALLEL_FROM + 1, 11, n - 1, PARALLEL_FROM];
        let v = check_elements(n, "elements", |i| {
            wrong.contains(&i).then(|| format!("#{i}"))
        });
        assert!(!v.valid);
        assert_eq!(
            v.detail,
            format!(
                "4 of {n} elements wrong: [11] #11; [{p}] #{p}; [{q}] #{q}",
                p = PARALLEL_FROM,
                q = 3 * PARALLEL_FROM + 1
            )
        );
        assert!(check_elements(n, "elements", |_| None).valid);
        assert!(check_elements(0, "elements", |_| Some("x".into())).valid);
    }

    #[test]
    fn work_intensity() {
        let w = Work {
            bytes_read: 8,
            bytes_written: 4,
            flops: 6,
        };
        assert_eq!(w.bytes(), 12);
        assert_eq!(w.intensity(), Some(0.5));
        assert_eq!(Work::default().intensity(), None);
    }

    #[test]
    fn input_bits_differ_by_array_and_index() {
        let a: Vec<u64> = (0..1000).map(|i| input_bits(0, i)).collect();
        let b: Vec<u64> = (0..1000).map(|i| input_bits(1, i)).collect();
        assert_ne!(a, b);
        let mut sorted = a.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 1000, "no repeats in a small range");
        assert_eq!(input_bits(3, 77), input_bits(3, 77));
    }

    /// Two verdicts together are valid only where both are, and keep every failure in order.
    #[test]
    fn verdicts_join_their_failures() {
        let (ok, a, b) = (
            Verdict::valid(),
            Verdict::invalid("a"),
            Verdict::invalid("b"),
        );
        assert_eq!(ok.clone().and(ok.clone()), ok);
        assert_eq!(ok.clone().and(b.clone()), b);
        assert_eq!(a.clone().and(ok.clone()), a);
        assert_eq!(a.and(b), Verdict::invalid("a; b"));
        assert_eq!(Verdict::unless(None), ok);
        assert_eq!(Verdict::unless(Some("c".into())), Verdict::invalid("c"));
    }
}
