//! Suites: which of the catalogue's cases a run measures. The one place that says which cases
//! belong to the default run and to each named suite; the backends plan every case they can run
//! and never decide this.
//!
//! - **The default suite** (`roofprobe run`) answers the question the tool exists for: is a
//!   workload on this device bound by its capacity, its bandwidth or its compute? It measures the
//!   DRAM bandwidth (copy, triad and read, per precision), the peak arithmetic of every precision
//!   and the tensor or matrix units, the intensity sweep at seven points ([`DEFAULT_KS`]), the
//!   cache levels at their fixed sizes (not the bandwidth sweep), the launch overhead, the usable
//!   capacity and the host link, one square GEMM per implementation and precision, the LLM batch
//!   sweep at one weight and five batch sizes ([`DEFAULT_BATCH_M`]), and the size sweep at every
//!   fourth power of two. Every ceiling of the roofline and every field the exports and
//!   `estimate` read comes from these cases (tests/suites.rs holds it to that).
//! - **Named suites** (`--suite NAME`, [`Suite`]) select whole families of the full plan;
//!   `--full` is `--suite all`, every case. `--filter` narrows the suites named; with none
//!   named it picks from every case ([`Selection::chosen`]).
//!
//! What a suite selects is said per case ([`Suite::holds`]) or, where the choice depends on what
//! the device planned (the largest square it has, the largest size of a sweep), per plan
//! ([`Selection::select`]). This module must not launch, time or size anything.

use super::gemm;
use super::stream::StreamKernel;
use super::{Case, Family};
use serde::{Deserialize, Serialize};

/// A named part of the full plan, selected with `--suite`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Suite {
    /// DRAM bandwidth (STREAM), the size sweep, and the usable capacity.
    Memory,
    /// Peak arithmetic, the tensor or matrix units, and the intensity sweep.
    Compute,
    /// Square matrix products, every implementation and precision.
    Gemm,
    /// The LLM batch sweep: matrix products at Llama projection weights, M from 1 up.
    Llm,
    /// Cache bandwidth: each level at fixed sizes, and the bandwidth sweep.
    Cache,
    /// Load-to-use latency (the pointer chase) and launch overhead.
    Latency,
    /// Copies over the host link and between GPUs.
    Links,
    /// Every case (`--full`).
    All,
}

impl Suite {
    pub const ALL: [Suite; 8] = [
        Suite::Memory,
        Suite::Compute,
        Suite::Gemm,
        Suite::Llm,
        Suite::Cache,
        Suite::Latency,
        Suite::Links,
        Suite::All,
    ];

    /// The name `--suite` takes.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Memory => "memory",
            Suite::Compute => "compute",
            Suite::Gemm => "gemm",
            Suite::Llm => "llm",
            Suite::Cache => "cache",
            Suite::Latency => "latency",
            Suite::Links => "links",
            Suite::All => "all",
        }
    }

    pub fn parse(name: &str) -> Option<Suite> {
        Suite::ALL.into_iter().find(|s| s.name() == name)
    }

    /// What the suite measures, in the words of `--help` and docs/measurements.md.
    pub fn what(self) -> &'static str {
        match self {
            Suite::Memory => "DRAM bandwidth (stream), the size sweep (efficiency), capacity",
            Suite::Compute => {
                "peak arithmetic (peak), tensor/matrix units (tensor), intensity sweep"
            }
            Suite::Gemm => "square matrix products (gemm), every implementation",
            Suite::Llm => "the LLM batch sweep (gemm at Llama weights, M = 1 … 8192)",
            Suite::Cache => "cache levels at fixed sizes and the bandwidth sweep (cache)",
            Suite::Latency => "pointer-chase latency (latency) and launch overhead (launch)",
            Suite::Links => "host-link and peer copies (link; a GPU's)",
            Suite::All => "every case (the same as --full)",
        }
    }

    /// Whether `case` belongs to this suite. Every case belongs to at least one suite besides
    /// `all`; a square GEMM whose side is a batch-sweep weight's (4096³, 8192³) to both `gemm`
    /// and `llm`.
    pub fn holds(self, case: &Case) -> bool {
        match self {
            Suite::All => true,
            Suite::Memory => matches!(
                case.family,
                Family::Stream | Family::Efficiency | Family::Capacity
            ),
            Suite::Compute => matches!(
                case.family,
                Family::Peak | Family::Tensor | Family::Intensity
            ),
            Suite::Gemm => {
                case.family == Family::Gemm
                    && gemm::shape_of(case)
                        .map_or(true, |s| s.is_square() || gemm::weight_of(s).is_none())
            }
            Suite::Llm => {
                case.family == Family::Gemm
                    && gemm::shape_of(case).is_ok_and(|s| gemm::weight_of(s).is_some())
            }
            Suite::Cache => case.family == Family::Cache,
            Suite::Latency => matches!(case.family, Family::Latency | Family::Launch),
            Suite::Links => case.family == Family::Link,
        }
    }
}

impl std::fmt::Display for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a `--suite` value: one of [`Suite::ALL`]'s names.
pub fn parse_suite(s: &str) -> Result<Suite, String> {
    Suite::parse(s.trim()).ok_or_else(|| {
        format!(
            "unknown suite `{s}`; the suites are {}",
            Suite::ALL.map(Suite::name).join(", ")
        )
    })
}

/// Which cases a run measures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selection {
    /// The default suite (see the module doc).
    Default,
    /// The cases of any of these suites (`--suite`, repeatable); `[All]` is `--full`.
    Suites(Vec<Suite>),
}

/// The STREAM kernels of the default suite, in both precisions: a copy (one read, one write:
/// usually the DRAM roof), the triad (two reads, one write: most memory-bound operators' mix)
/// and a read (the stream a decode step's matrix-vector product is).
pub const DEFAULT_STREAM: [StreamKernel; 3] =
    [StreamKernel::Copy, StreamKernel::Triad, StreamKernel::Read];

/// The intensity sweep's points in the default suite: from a copy (k = 0) through the DRAM-bound
/// points to the compute-bound ones, every fourth power of two.
pub const DEFAULT_KS: [u32; 7] = [0, 1, 4, 16, 64, 256, 1024];

/// The batch sizes of the default suite's batch sweep: a decode step (1), small and large
/// batches, and a prefill (4096, the weight's own square, where it is at most the
/// implementation's [`default_square_side`]: a GPU's, not the host's, whose 4096³ launch takes
/// a second or more).
pub const DEFAULT_BATCH_M: [u64; 5] = [1, 8, 64, 512, 4096];

/// The weight of the default suite's batch sweep: the first of [`gemm::WEIGHTS`] (4096 × 4096,
/// Llama 3 8B's attention projection), the one every device plans.
pub const DEFAULT_WEIGHT: gemm::Weight = gemm::WEIGHTS[0];

/// The side of a GPU's default square GEMM (or the largest it planned below it): 8192³, the
/// square the Hopper kernels run on and cuBLAS is held against.
pub const GPU_DEFAULT_SQUARE: u64 = 8192;

/// The side of the host's default square GEMM (or the largest planned below it): 2048³, a
/// tenth of a second or less per launch on a few cores, where 4096³ in f64 takes about a second
/// on this project's 2-vCPU VM.
pub const HOST_DEFAULT_SQUARE: u64 = 2048;

/// Whether `kernel` is one of the host's GEMM implementations.
fn host_gemm(kernel: &str) -> bool {
    [gemm::HOST_OURS, gemm::HOST_AMX, gemm::HOST_REFERENCE].contains(&kernel)
}

/// The square side the default suite takes for a GEMM `kernel` (the largest planned at most this).
pub fn default_square_side(kernel: &str) -> u64 {
    if host_gemm(kernel) {
        HOST_DEFAULT_SQUARE
    } else {
        GPU_DEFAULT_SQUARE
    }
}

/// Whether an `efficiency` case's array size is one the default suite keeps by itself: 1 MiB
/// times a power of 4 (1, 4, 16, 64, 256 MiB …; the largest of the plan is kept too).
fn every_fourth_size(case: &Case) -> bool {
    let mib = case.count().map_or(0, |kib| kib >> 10);
    mib.is_power_of_two() && mib.trailing_zeros().is_multiple_of(2)
}

/// Whether `case` is in the default suite by itself, before the choices per plan (the GEMM
/// squares, the size sweep's largest size).
fn in_default(case: &Case) -> bool {
    match case.family {
        Family::Capacity | Family::Launch | Family::Link | Family::Peak | Family::Tensor => true,
        Family::Stream => DEFAULT_STREAM.iter().any(|k| k.name() == case.kernel),
        Family::Efficiency => every_fourth_size(case),
        Family::Intensity => case.count().is_some_and(|k| DEFAULT_KS.contains(&k)),
        Family::Cache => !super::cache::is_sweep_step(case),
        Family::Latency => false,
        Family::Gemm => gemm::shape_of(case).is_ok_and(|s| {
            !s.is_square()
                && (s.n, s.k) == (DEFAULT_WEIGHT.n, DEFAULT_WEIGHT.k)
                && DEFAULT_BATCH_M.contains(&s.m)
        }),
    }
}

impl Selection {
    /// What `run` measures given `--full`, the `--suite`s named and whether any `--filter` was:
    /// every case with `--full`; the named suites' cases; else, where a filter names the cases
    /// it wants, every case (the filter picks from the whole plan: `--filter stream/` is every
    /// STREAM kernel); else the default suite.
    pub fn chosen(full: bool, suites: &[Suite], filtered: bool) -> Selection {
        if full || (suites.is_empty() && filtered) {
            Selection::full()
        } else if suites.is_empty() {
            Selection::Default
        } else {
            let mut suites = suites.to_vec();
            suites.sort();
            suites.dedup();
            Selection::Suites(suites)
        }
    }

    /// `--full`: every case.
    pub fn full() -> Selection {
        Selection::Suites(vec![Suite::All])
    }

    /// Whether this is the default suite.
    pub fn is_default(&self) -> bool {
        *self == Selection::Default
    }

    /// How the run names what it measures: `the default suite`, `every case (--full)`, `suites
    /// memory, gemm`.
    pub fn describe(&self) -> String {
        match self {
            Selection::Default => "the default suite".to_string(),
            Selection::Suites(s) if s.contains(&Suite::All) => "every case (--full)".to_string(),
            Selection::Suites(s) => format!(
                "suite{} {}",
                if s.len() == 1 { "" } else { "s" },
                s.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// The items of `planned` (in its order) whose case this selection keeps; `case_of` gives an
    /// item's case. The default suite keeps, besides its cases by themselves, per GEMM
    /// implementation and precision the largest square planned at most [`default_square_side`]
    /// (the smallest planned where none is), the default batch sweep's square (M = N = K = 4096)
    /// where it was planned, and per size-sweep kernel the largest size planned.
    pub fn select<T>(&self, planned: Vec<T>, case_of: impl Fn(&T) -> &Case) -> Vec<T> {
        let cases: Vec<&Case> = planned.iter().map(&case_of).collect();
        let keep: Vec<bool> = match self {
            Selection::Suites(suites) => cases
                .iter()
                .map(|c| suites.iter().any(|s| s.holds(c)))
                .collect(),
            Selection::Default => default_keeps(&cases),
        };
        drop(cases);
        planned
            .into_iter()
            .zip(keep)
            .filter_map(|(p, keep)| keep.then_some(p))
            .collect()
    }
}

/// Which of a plan's `cases` the default suite keeps ([`Selection::select`]).
fn default_keeps(cases: &[&Case]) -> Vec<bool> {
    // per (implementation, precision): the square side the default takes
    let mut squares: Vec<(&str, super::Precision, u64)> = Vec::new();
    for c in cases {
        let Ok(s) = gemm::shape_of(c) else { continue };
        if !s.is_square() {
            continue;
        }
        let limit = default_square_side(&c.kernel);
        match squares
            .iter_mut()
            .find(|(k, p, _)| *k == c.kernel && *p == c.precision)
        {
            Some((_, _, side)) => {
                // the largest at most the limit; else the smallest
                let better = match (*side <= limit, s.m <= limit) {
                    (true, true) => s.m > *side,
                    (false, true) => true,
                    (true, false) => false,
                    (false, false) => s.m < *side,
                };
                if better {
                    *side = s.m;
                }
            }
            None => squares.push((c.kernel.as_str(), c.precision, s.m)),
        }
    }
    // the batch sweep's own square (M = N = K = the weight's side), where the implementation
    // runs the default batch sweep
    let batch_square = |c: &Case| {
        gemm::shape_of(c).is_ok_and(|s| {
            s.is_square()
                && (s.m, s.n, s.k) == (DEFAULT_WEIGHT.n, DEFAULT_WEIGHT.n, DEFAULT_WEIGHT.k)
                && DEFAULT_BATCH_M.contains(&s.m)
                && s.m <= default_square_side(&c.kernel)
                && cases.iter().any(|o| {
                    o.kernel == c.kernel
                        && o.precision == c.precision
                        && gemm::shape_of(o).is_ok_and(|t| !t.is_square())
                        && in_default(o)
                })
        })
    };
    // per size-sweep kernel: its largest size
    let largest = |c: &Case| {
        c.family == Family::Efficiency
            && !cases.iter().any(|o| {
                o.family == Family::Efficiency
                    && o.kernel == c.kernel
                    && o.precision == c.precision
                    && o.working_set_bytes > c.working_set_bytes
            })
    };
    let default_square = |c: &Case| {
        gemm::shape_of(c).is_ok_and(|s| {
            s.is_square()
                && squares
                    .iter()
                    .any(|(k, p, side)| *k == c.kernel && *p == c.precision && *side == s.m)
        })
    };
    cases
        .iter()
        .map(|c| in_default(c) || largest(c) || batch_square(c) || default_square(c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{efficiency, gemm::Shape, intensity, stream, Precision};

    #[test]
    fn every_family_belongs_to_a_named_suite() {
        use crate::cases::{cache, capacity, latency, launch, link, peak};
        let cases = [
            stream::StreamKernel::Copy.case(Precision::F32, 16),
            efficiency::case(stream::StreamKernel::Triad, 1 << 20),
            capacity::case(capacity::Figure::Free, 1 << 30),
            peak::case(Precision::F32, 256, 1, 8),
            intensity::case(Precision::F32, 4, 16),
            gemm::case("ptx", Precision::Bf16F32, Shape::square(256)),
            gemm::case("ptx", Precision::Bf16F32, Shape::new(8, 4096, 4096)),
            cache::case("l1", 16 << 10, 4),
            latency::case("cg", 64, 4 << 10, 16),
            launch::case(launch::What::Empty),
            link::case(link::Transfer::HostToDevice, 4 << 10),
        ];
        for c in &cases {
            let named: Vec<Suite> = Suite::ALL
                .into_iter()
                .filter(|s| *s != Suite::All && s.holds(c))
                .collect();
            assert!(!named.is_empty(), "{} is in no suite", c.id());
            assert!(Suite::All.holds(c));
        }
        // the batch sweep's square is in both GEMM suites
        let square = gemm::case("ptx", Precision::Bf16F32, Shape::square(4096));
        assert!(Suite::Gemm.holds(&square) && Suite::Llm.holds(&square));
        for s in Suite::ALL {
            assert_eq!(Suite::parse(s.name()), Some(s));
        }
        assert!(parse_suite("bogus")
            .unwrap_err()
            .contains("memory, compute"));
        // --full, a filter alone, named suites (sorted, once each), nothing
        assert_eq!(Selection::chosen(true, &[], false), Selection::full());
        assert_eq!(Selection::chosen(false, &[], true), Selection::full());
        assert_eq!(
            Selection::chosen(false, &[Suite::Gemm, Suite::Memory, Suite::Gemm], true),
            Selection::Suites(vec![Suite::Memory, Suite::Gemm])
        );
        assert_eq!(Selection::chosen(false, &[], false), Selection::Default);
    }

    /// Per implementation and precision the default takes the largest square at most its side,
    /// or the smallest where none is; the batch sweep at its weight and five M, with the
    /// weight's own square; the size sweep at every fourth size and its largest.
    #[test]
    fn the_default_takes_one_square_per_implementation_and_the_largest_size() {
        let mut planned = Vec::new();
        for side in [256, 1024, 2048, 4096] {
            planned.push(gemm::case("simd", Precision::F32, Shape::square(side)));
        }
        planned.push(gemm::case("simd", Precision::F64, Shape::square(4096)));
        planned.push(gemm::case("simd", Precision::F64, Shape::square(8192)));
        for side in [4096, 8192, 16384] {
            planned.push(gemm::case("ptx", Precision::Bf16F32, Shape::square(side)));
        }
        for m in gemm::BATCH {
            for side in [4096, 8192] {
                if m != side {
                    planned.push(gemm::case(
                        "ptx",
                        Precision::Bf16F32,
                        Shape::new(m, side, side),
                    ));
                }
            }
        }
        for mib in [1u64, 2, 4, 8, 16, 32] {
            planned.push(efficiency::case(stream::StreamKernel::Copy, mib << 20));
        }
        let ids: Vec<String> = Selection::Default
            .select(planned.clone(), |c| c)
            .iter()
            .map(Case::id)
            .collect();
        assert_eq!(
            ids,
            [
                "gemm/simd/f32/2048x2048x2048",
                "gemm/simd/f64/4096x4096x4096",
                "gemm/ptx/bf16.f32/4096x4096x4096",
                "gemm/ptx/bf16.f32/8192x8192x8192",
                "gemm/ptx/bf16.f32/1x4096x4096",
                "gemm/ptx/bf16.f32/8x4096x4096",
                "gemm/ptx/bf16.f32/64x4096x4096",
                "gemm/ptx/bf16.f32/512x4096x4096",
                "efficiency/copy/f32/1024",
                "efficiency/copy/f32/4096",
                "efficiency/copy/f32/16384",
                "efficiency/copy/f32/32768",
            ]
        );
        assert_eq!(Selection::full().select(planned.clone(), |c| c), planned);
        // the two weights' sweeps with their squares (the sweep's M = N point), and the other
        // implementations' squares of a weight's side (simd f32 4096³, f64 4096³ and 8192³)
        let llm = Selection::Suites(vec![Suite::Llm]).select(planned, |c| c);
        assert_eq!(llm.len(), 2 * 14 + 3);
    }
}
