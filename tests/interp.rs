//! Every kernel in `kernels/` runs under the PTX interpreter (`ptxsim`) on edge-case shapes and
//! is compared with an independent host oracle written here; and deliberately broken copies of
//! the kernels must fail. This is how a machine without a GPU knows the kernels compute the
//! right thing, not merely that ptxas accepts them.
//!
//! The rules this file enforces:
//! - every `.ptx` file parses under ptxsim (an instruction it does not implement is a failure
//!   naming the line, never a skip);
//! - every `.entry` has an oracle registered in [`oracle_for`]; an entry without one fails
//!   the suite, by name;
//! - every `.ptx.in` template is expanded (by main's registry, `roofprobe::kernels::all()`,
//!   as modules named `<template>#k=…`) and every expansion runs too; a template with no
//!   expansion fails;
//! - every module of the registry is a kernel file (byte-identical) or a template expansion,
//!   so what the binary loads is what ran here;
//! - the peak, tensor and sweep kernels' block records are checked too: every block's clocks
//!   run forwards and its work count (loop trips; the sweep's words) is the oracle's;
//! - every kernel runs under several schedules ([`SCHEDULES`]: the default order and shuffled
//!   block order, warp order and interleaving between barriers) and must produce the same
//!   output bytes under each, with ptxsim's race detectors on in shared and global memory;
//! - mutants (off-by-one tail, dropped barrier, wrong vector count, swapped mma operands, a
//!   loop one trip short, a sweep that moves vectors twice) must be reported as failures.
//!
//! Inputs are random and non-zero, outputs are poisoned (NaN) before every launch, and every
//! array is allocated to its exact size, so an out-of-bounds access is an interpreter error
//! naming the instruction and address. Reductions use dyadic inputs (small integers times a
//! power of two) so that every partial sum is exact in any order: the comparison is exact.

use std::path::{Path, PathBuf};

use ptxsim::{Arg, Element, LaunchConfig, Memory, Module, Schedule, UniformBranchPolicy};
use roofprobe::cases::{
    arith, cache, gemm, intensity, latency, peak, tensor, wgmma, Precision as P,
};

/// (element count, grid blocks, threads per block): one element, sizes that are not
/// multiples of the vector width, of the block, or of the grid, grids smaller than the data
/// (threads loop many times), grids larger than the data (most threads idle), and empty input.
const STREAM_SHAPES: &[(usize, u32, u32)] = &[
    (0, 1, 32),
    (1, 1, 32),
    (3, 1, 32),
    (4, 1, 32),
    (5, 1, 64),
    (17, 1, 256),
    (17, 2, 32),
    (33, 3, 64),
    (257, 1, 32),
    (1000, 2, 64),
    (4099, 3, 256),
    (10007, 2, 32),
];

fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels")
}

/// `kernels/*.ptx`, sorted: (file name, text).
fn ptx_files() -> Vec<(String, String)> {
    files_ending_in(".ptx")
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("kernel file is readable");
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect()
}

fn files_ending_in(suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(kernels_dir())
        .expect("kernels/ exists")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    out
}

/// The instantiations of a `.ptx.in` template, as main's kernel registry
/// (`roofprobe::kernels::all()`) expands them: modules named `<template>#k=…`, as
/// (label, PTX text); `None` if the registry has none, which fails
/// [`every_template_is_expanded`].
fn expand_template(path: &Path) -> Option<Vec<(String, String)>> {
    let file = path.file_name()?.to_string_lossy().into_owned();
    let stem = file.strip_suffix(".in").unwrap_or(&file).to_string();
    let instances: Vec<(String, String)> = roofprobe::kernels::all()
        .into_iter()
        .filter(|s| {
            s.name.starts_with(&format!("{file}#")) || s.name.starts_with(&format!("{stem}#"))
        })
        .map(|s| (s.name, s.ptx))
        .collect();
    (!instances.is_empty()).then_some(instances)
}

/// Every module the suite runs, as (label, file under kernels/ it comes from, PTX): each
/// `kernels/*.ptx` file as it is on disk, plus every module of the registry that is not a
/// plain file (template expansions), so nothing the binary can load escapes the interpreter.
fn modules() -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = ptx_files()
        .into_iter()
        .map(|(name, text)| (name.clone(), name, text))
        .collect();
    for source in roofprobe::kernels::all() {
        if let Some((file, _)) = source.name.split_once('#') {
            out.push((source.name.clone(), file.to_string(), source.ptx));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Oracles.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamOp {
    Copy,
    Scale,
    Add,
    Triad,
    Dot,
    Read,
    Write,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Precision {
    F32,
    F64,
}

#[derive(Debug, Clone, Copy)]
enum Oracle {
    Stream(StreamOp, Precision),
    /// kernels/peak.ptx: `fma_<precision>`.
    Peak(P),
    /// kernels/mma.ptx, mma_sm89.ptx and mma_sm90.ptx: `mma_<shape>_<in>_<acc>`.
    Mma(tensor::Mma),
    /// The intensity.ptx.in expansions: `fma_<precision>_k<k>`.
    Sweep(P, u32),
    /// kernels/cache.ptx: `l1_i32`, `l2_i32`.
    Cache,
    /// kernels/latency.ptx: `ca_i32`, `cg_i32`.
    Latency,
    /// kernels/launch.ptx: `empty_i32`.
    Launch,
    /// The gemm.ptx.in expansions: `gemm_<in>_f32`; gemm_simt.ptx: `gemm_f32_f32`.
    Gemm(P),
    /// The wgmma.ptx.in module (sm_90a): `wgmma_m64n256k<K>[_rs]_<in>_<acc>`.
    Wgmma(P, wgmma::ASource),
    /// The gemm_wgmma.ptx.in expansions (Hopper's GEMM): `gemm_wgmma_<in>_f32`.
    GemmWgmma(P),
    /// The gemm_tma.ptx.in expansions (Hopper's TMA-fed GEMM): `gemm_tma_<in>_f32`, and in
    /// clusters of two CTAs, `gemm_tma_cluster2_<in>_f32` (true).
    GemmTma(P, bool),
    /// kernels/prep.ptx: `fill_b32`, `fill_b64` (words of that many bits).
    Fill(Precision),
    /// kernels/prep.ptx: `check_f32`, `check_f64`.
    Check(Precision),
    /// kernels/prep.ptx: `fill_sweep_b32`, `fill_sweep_b64` (64: the sweep's f64 inputs; 32:
    /// its other precisions').
    SweepFill(u32),
    /// kernels/prep.ptx: `check_sweep_b32`, `check_sweep_b64`.
    SweepCheck(u32),
}

/// The host oracle for an entry, by the naming convention of kernels/README.md; `None` means
/// nobody has written one yet, which fails [`every_entry_has_an_oracle`].
fn oracle_for(file: &str, entry: &str) -> Option<Oracle> {
    match file {
        "peak.ptx" => {
            let p = entry.strip_prefix("fma_")?.parse::<P>().ok()?;
            return peak::PRECISIONS.contains(&p).then_some(Oracle::Peak(p));
        }
        "mma.ptx" | "mma_sm89.ptx" | "mma_sm90.ptx" => {
            return tensor::forms()
                .into_iter()
                .find(|&m| tensor::entry_name(m) == entry)
                .map(Oracle::Mma);
        }
        "intensity.ptx.in" => {
            let (p, k) = entry.strip_prefix("fma_")?.rsplit_once("_k")?;
            return Some(Oracle::Sweep(p.parse().ok()?, k.parse().ok()?));
        }
        "cache.ptx" => {
            return matches!(entry, "l1_i32" | "l2_i32").then_some(Oracle::Cache);
        }
        "latency.ptx" => {
            return matches!(entry, "ca_i32" | "cg_i32").then_some(Oracle::Latency);
        }
        "launch.ptx" => {
            return (entry == "empty_i32").then_some(Oracle::Launch);
        }
        "prep.ptx" => {
            return match entry {
                "fill_b32" => Some(Oracle::Fill(Precision::F32)),
                "fill_b64" => Some(Oracle::Fill(Precision::F64)),
                "check_f32" => Some(Oracle::Check(Precision::F32)),
                "check_f64" => Some(Oracle::Check(Precision::F64)),
                "fill_sweep_b32" => Some(Oracle::SweepFill(32)),
                "fill_sweep_b64" => Some(Oracle::SweepFill(64)),
                "check_sweep_b32" => Some(Oracle::SweepCheck(32)),
                "check_sweep_b64" => Some(Oracle::SweepCheck(64)),
                _ => None,
            };
        }
        "gemm.ptx.in" => {
            return gemm::TENSOR_PRECISIONS
                .into_iter()
                .find(|&p| gemm::entry_name(p) == entry)
                .map(Oracle::Gemm);
        }
        "wgmma.ptx.in" => {
            return wgmma::PRECISIONS.into_iter().find_map(|p| {
                wgmma::SOURCES
                    .into_iter()
                    .find(|&a| wgmma::entry_name(p, a) == entry)
                    .map(|a| Oracle::Wgmma(p, a))
            });
        }
        "gemm_wgmma.ptx.in" => {
            return gemm::WGMMA_PRECISIONS
                .into_iter()
                .find(|&p| gemm::wgmma_entry_name(p) == entry)
                .map(Oracle::GemmWgmma);
        }
        "gemm_tma.ptx.in" => {
            return gemm::TMA_PRECISIONS
                .into_iter()
                .flat_map(|p| [(p, false), (p, true)])
                .find(|&(p, cluster)| gemm::tma_entry_name(p, cluster) == entry)
                .map(|(p, cluster)| Oracle::GemmTma(p, cluster));
        }
        "gemm_simt.ptx" => {
            let p = gemm::SIMT_PRECISION;
            return (gemm::entry_name(p) == entry).then_some(Oracle::Gemm(p));
        }
        _ => {}
    }
    let (kernel, precision) = entry.rsplit_once('_')?;
    let precision = match precision {
        "f32" => Precision::F32,
        "f64" => Precision::F64,
        _ => return None,
    };
    let op = match kernel {
        "copy" => StreamOp::Copy,
        "scale" => StreamOp::Scale,
        "add" => StreamOp::Add,
        "triad" => StreamOp::Triad,
        "dot" => StreamOp::Dot,
        "read" => StreamOp::Read,
        "write" => StreamOp::Write,
        _ => return None,
    };
    Some(Oracle::Stream(op, precision))
}

/// Runs `entry` of `module` on every shape its oracle defines; `Err` describes the first
/// failure (an interpreter error or a wrong value). On success returns the lines of divergent
/// `bra.uni` seen (empty unless `policy` is `Record`).
fn check_entry(
    module: &Module,
    file: &str,
    entry: &str,
    policy: UniformBranchPolicy,
) -> Result<Vec<u32>, String> {
    let oracle = oracle_for(file, entry).ok_or_else(|| format!("no oracle for `{entry}`"))?;
    let mut divergent = Vec::new();
    let mut note = |lines: Vec<u32>| {
        for l in lines {
            if !divergent.contains(&l) {
                divergent.push(l);
            }
        }
    };
    match oracle {
        Oracle::Peak(p) => {
            // (grid, block, threads that store, loop trips): idle storers, no trips, two trips
            for &(grid, block, n, trips) in
                &[(1u32, 32u32, 32u64, 1u32), (2, 64, 100, 2), (1, 32, 7, 0)]
            {
                note(
                    across_schedules(policy, |run| {
                        run_peak(module, entry, p, grid, block, n, trips, run)
                    })
                    .map_err(|e| {
                        format!(
                            "{file}: `{entry}` grid={grid} block={block} n={n} trips={trips}: {e}"
                        )
                    })?,
                );
            }
        }
        Oracle::Mma(p) => {
            // (grid, block, warps that store, loop trips)
            for &(grid, block, n, trips) in
                &[(1u32, 64u32, 2u64, 1u32), (2, 32, 1, 2), (1, 32, 1, 0)]
            {
                note(
                    across_schedules(policy, |run| {
                        run_mma(module, entry, p, grid, block, n, trips, run)
                    })
                    .map_err(|e| {
                        format!(
                            "{file}: `{entry}` grid={grid} block={block} n={n} trips={trips}: {e}"
                        )
                    })?,
                );
            }
        }
        Oracle::Wgmma(p, a) => {
            // (grid, block, warpgroups that store, loop trips): one warpgroup; two blocks of
            // two warpgroups sharing their block's shared memory, one idle storer; no trips
            for &(grid, block, n, trips) in
                &[(1u32, 128u32, 1u64, 1u32), (2, 256, 3, 2), (1, 128, 1, 0)]
            {
                note(
                    across_schedules(policy, |run| {
                        run_wgmma(module, entry, (p, a), (grid, block), n, trips, run)
                    })
                    .map_err(|e| {
                        format!(
                            "{file}: `{entry}` grid={grid} block={block} n={n} trips={trips}: {e}"
                        )
                    })?,
                );
            }
        }
        Oracle::Sweep(p, k) => {
            for &(n, grid, block) in SWEEP_SHAPES {
                note(
                    across_schedules(policy, |run| {
                        run_sweep(module, entry, p, k, n, grid, block, run)
                    })
                    .map_err(|e| {
                        format!("{file}: `{entry}` n={n} grid={grid} block={block}: {e}")
                    })?,
                );
            }
        }
        Oracle::Cache => {
            // (words, grid, block, passes): one vector for 32 threads, a grid that is not a
            // multiple of anything, shares of 2 and 3 vectors with 3 passes (the loads owed run
            // through the unrolled loop and the one after it), no passes at all
            for &(n, grid, block, passes) in &[
                (4usize, 1u32, 32u32, 1u32),
                (4100, 3, 64, 2),
                (4096, 2, 32, 3),
                (280, 1, 32, 3),
                (36, 1, 32, 0),
            ] {
                note(
                    across_schedules(policy, |run| {
                        launch_cache(module, entry, n, grid, block, passes, run)
                            .map(|(stats, got)| Outcome::new(stats, bytes_of(&got)))
                    })
                    .map_err(|e| {
                        format!("{file}: `{entry}` n={n} grid={grid} block={block} passes={passes}: {e}")
                    })?,
                );
            }
        }
        Oracle::Latency => {
            // (lines, hops, launches, grid, block): a ring of one line, round a ring many times
            // over two launches, no hops at all, and a grid of many threads of which one chases
            for &(lines, hops, launches, grid, block) in &[
                (1u64, 5u32, 1u32, 1u32, 1u32),
                (32, 1000, 2, 1, 1),
                (100, 0, 1, 1, 1),
                (33, 50, 3, 2, 64),
            ] {
                note(
                    across_schedules(policy, |run| {
                        run_latency(module, entry, lines, hops, launches, (grid, block), run)
                    })
                    .map_err(|e| {
                        format!(
                            "{file}: `{entry}` lines={lines} hops={hops} launches={launches} \
                             grid={grid} block={block}: {e}"
                        )
                    })?,
                );
            }
        }
        Oracle::Launch => {
            // (launches, grid, block): one launch; many on one count; a grid of many threads
            // of which one counts
            for &(launches, grid, block) in &[(1u32, 1u32, 1u32), (7, 1, 1), (3, 2, 64)] {
                note(
                    across_schedules(policy, |run| {
                        run_empty(module, entry, launches, (grid, block), run)
                    })
                    .map_err(|e| {
                        format!(
                            "{file}: `{entry}` launches={launches} grid={grid} block={block}: {e}"
                        )
                    })?,
                );
            }
        }
        Oracle::Gemm(p) => {
            // one element; a tile edge in every dimension; several tiles along M
            for &(m, n, k) in &[
                (1u64, 1u64, 1u64),
                (17, 129, 17),
                (129, 17, 129),
                (257, 3, 40),
            ] {
                note(
                    across_schedules(policy, |run| {
                        run_gemm(module, entry, p, gemm::Shape::new(m, n, k), run)
                    })
                    .map_err(|e| format!("{file}: `{entry}` {m}x{n}x{k}: {e}"))?,
                );
            }
        }
        Oracle::GemmWgmma(p) => {
            // one element; edges of the 128 x 256 x 64 tile in every dimension; two tiles along
            // N and M, and K tiles past the pipeline's depth (5 tiles of 64)
            for &(m, n, k) in &[
                (1u64, 1u64, 1u64),
                (17, 129, 17),
                (129, 257, 65),
                (130, 3, 300),
            ] {
                note(
                    across_schedules(policy, |run| {
                        run_gemm(module, entry, p, gemm::Shape::new(m, n, k), run)
                    })
                    .map_err(|e| format!("{file}: `{entry}` {m}x{n}x{k}: {e}"))?,
                );
            }
        }
        Oracle::GemmTma(p, cluster) => {
            // as the cp.async-fed kernel: tile edges in every dimension, several tiles, K tiles
            // past the 4 stages (each stage filled and released twice); in clusters, an odd
            // count of row tiles too (a CTA past M)
            let odd: &[(u64, u64, u64)] = if cluster { &[(257, 5, 33)] } else { &[] };
            for &(m, n, k) in [
                (1u64, 1u64, 1u64),
                (17, 129, 17),
                (129, 257, 65),
                (130, 3, 520),
            ]
            .iter()
            .chain(odd)
            {
                note(
                    across_schedules(policy, |run| {
                        run_gemm(module, entry, p, gemm::Shape::new(m, n, k), run)
                    })
                    .map_err(|e| format!("{file}: `{entry}` {m}x{n}x{k}: {e}"))?,
                );
            }
        }
        Oracle::Fill(precision) => {
            for &(n, grid, block) in STREAM_SHAPES {
                for kind in 0..3 {
                    note(
                        across_schedules(policy, |run| {
                            run_fill(module, entry, precision, kind, (n, grid, block), run)
                        })
                        .map_err(|e| {
                            format!("{file}: `{entry}` kind={kind} n={n} grid={grid} block={block}: {e}")
                        })?,
                    );
                }
            }
        }
        Oracle::Check(precision) => {
            for &(n, grid, block) in STREAM_SHAPES {
                note(
                    across_schedules(policy, |run| {
                        run_check(module, entry, precision, (n, grid, block), run)
                    })
                    .map_err(|e| {
                        format!("{file}: `{entry}` n={n} grid={grid} block={block}: {e}")
                    })?,
                );
            }
        }
        Oracle::SweepFill(bits) | Oracle::SweepCheck(bits) => {
            let fill = matches!(oracle, Oracle::SweepFill(_));
            for p in intensity::PRECISIONS {
                if (arith::word_bytes(p) * 8) as u32 != bits {
                    continue;
                }
                for &(n, grid, block) in STREAM_SHAPES {
                    note(
                        across_schedules(policy, |run| match fill {
                            true => run_sweep_fill(module, entry, p, (n, grid, block), run),
                            false => run_sweep_check(module, entry, p, (n, grid, block), run),
                        })
                        .map_err(|e| {
                            format!("{file}: `{entry}` {p} n={n} grid={grid} block={block}: {e}")
                        })?,
                    );
                }
            }
        }
        Oracle::Stream(op, precision) => {
            for &(n, grid, block) in STREAM_SHAPES {
                let lines = across_schedules(policy, |run| match precision {
                    Precision::F32 => run_stream::<f32>(module, entry, op, n, grid, block, run),
                    Precision::F64 => run_stream::<f64>(module, entry, op, n, grid, block, run),
                })
                .map_err(|e| format!("{file}: `{entry}` n={n} grid={grid} block={block}: {e}"))?;
                note(lines);
            }
        }
    }
    Ok(divergent)
}

/// The schedules every kernel runs under: the default order and three shuffled ones (block
/// order, warp order, interleaving between barriers). A correct kernel computes the same bytes
/// under each; one that depends on the order (a race the detectors cannot see, an atomic
/// accumulation whose rounding depends on the order) does not.
const SCHEDULES: [Schedule; 4] = [
    Schedule::InOrder,
    Schedule::Shuffled { seed: 1 },
    Schedule::Shuffled { seed: 2 },
    Schedule::Shuffled { seed: 3 },
];

/// How one run of a kernel is launched.
#[derive(Debug, Clone, Copy)]
struct Run {
    policy: UniformBranchPolicy,
    schedule: Schedule,
}

/// What one run produced: the divergent `bra.uni` lines seen, and the bytes of its checked
/// outputs (clock records aside: they differ from run to run on a GPU too).
struct Outcome {
    divergent: Vec<u32>,
    output: Vec<u8>,
}

impl Outcome {
    fn new(stats: ptxsim::LaunchStats, output: Vec<u8>) -> Outcome {
        Outcome {
            divergent: stats.divergent_uniform_branches,
            output,
        }
    }
}

fn bytes_of(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Runs `one` under every schedule of [`SCHEDULES`]: each run must pass its oracle, and all
/// must produce the same output bytes. Returns the divergent `bra.uni` lines of the runs.
fn across_schedules(
    policy: UniformBranchPolicy,
    one: impl Fn(Run) -> Result<Outcome, String>,
) -> Result<Vec<u32>, String> {
    let mut first: Option<Outcome> = None;
    let mut lines = Vec::new();
    for schedule in SCHEDULES {
        let outcome = one(Run { policy, schedule }).map_err(|e| format!("{schedule:?}: {e}"))?;
        for &l in &outcome.divergent {
            if !lines.contains(&l) {
                lines.push(l);
            }
        }
        match &first {
            None => first = Some(outcome),
            Some(f) => {
                if let Some(i) =
                    (0..f.output.len()).find(|&i| f.output.get(i) != outcome.output.get(i))
                {
                    return Err(format!(
                        "{schedule:?}: output byte {i} differs from the in-order run ({:?} instead of {:?}): the result depends on the schedule",
                        outcome.output.get(i),
                        f.output.get(i)
                    ));
                }
            }
        }
    }
    Ok(lines)
}

/// f32 or f64, for one generic stream oracle.
trait Real: Element + PartialEq + std::fmt::Debug {
    const BYTES: usize;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn mul_add(self, m: Self, a: Self) -> Self;
    fn arg(self) -> Arg;
    fn bits(self) -> u64;
}

impl Real for f32 {
    const BYTES: usize = 4;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn mul_add(self, m: Self, a: Self) -> Self {
        f32::mul_add(self, m, a)
    }
    fn arg(self) -> Arg {
        Arg::F32(self)
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Real for f64 {
    const BYTES: usize = 8;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn mul_add(self, m: Self, a: Self) -> Self {
        f64::mul_add(self, m, a)
    }
    fn arg(self) -> Arg {
        Arg::F64(self)
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// xorshift64*: reproducible inputs without a dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Non-zero, either sign, magnitude in [0.5, 2), all mantissa bits random.
    fn real(&mut self) -> f64 {
        let r = self.next();
        let m = 0.5 + 1.5 * ((r >> 11) as f64 / (1u64 << 53) as f64);
        if r & 1 == 1 {
            -m
        } else {
            m
        }
    }
    /// Non-zero dyadic value k/16, k in 1..=16, either sign: sums of such values and of
    /// their products are exact in f32 for the sizes used here, in any order.
    fn dyadic(&mut self) -> f64 {
        let r = self.next();
        let k = (r >> 8) % 16 + 1;
        let v = k as f64 / 16.0;
        if r & 1 == 1 {
            -v
        } else {
            v
        }
    }
}

fn seed_of(entry: &str, n: usize) -> u64 {
    entry
        .bytes()
        .fold(n as u64 ^ 0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
}

#[allow(clippy::too_many_arguments)]
fn run_stream<T: Real>(
    module: &Module,
    entry: &str,
    op: StreamOp,
    n: usize,
    grid: u32,
    block: u32,
    run: Run,
) -> Result<Outcome, String> {
    let mut rng = Rng::new(seed_of(entry, n));
    let reduction = matches!(op, StreamOp::Dot | StreamOp::Read);
    let gen = |rng: &mut Rng| T::from_f64(if reduction { rng.dyadic() } else { rng.real() });
    let a: Vec<T> = (0..n).map(|_| gen(&mut rng)).collect();
    let b: Vec<T> = (0..n).map(|_| gen(&mut rng)).collect();
    let scalar = T::from_f64(rng.real());

    let mut mem = Memory::new();
    let pa = mem.alloc_from(&a);
    let pb = mem.alloc_from(&b);
    let out_len = if reduction { grid as usize } else { n };
    // Fresh allocations are poisoned (all bits set: NaN) by ptxsim.
    let pout = mem.alloc(out_len * <T as Real>::BYTES);
    let nn = Arg::U64(n as u64);
    let args = match op {
        StreamOp::Copy => vec![Arg::Ptr(pa), Arg::Ptr(pout), nn],
        StreamOp::Scale => vec![Arg::Ptr(pa), Arg::Ptr(pout), nn, scalar.arg()],
        StreamOp::Add => vec![Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(pout), nn],
        StreamOp::Triad => vec![Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(pout), nn, scalar.arg()],
        StreamOp::Dot => vec![Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(pout), nn],
        StreamOp::Read => vec![Arg::Ptr(pa), Arg::Ptr(pout), nn],
        StreamOp::Write => vec![Arg::Ptr(pout), nn, scalar.arg()],
    };
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;

    let got: Vec<T> = mem.read(pout, out_len).map_err(|e| e.to_string())?;
    let output = mem
        .read::<u8>(pout, out_len * <T as Real>::BYTES)
        .map_err(|e| e.to_string())?;
    // Inputs are never written (kernels/README.md: idempotent launches).
    if mem.read::<T>(pa, n).map_err(|e| e.to_string())? != a
        || mem.read::<T>(pb, n).map_err(|e| e.to_string())? != b
    {
        return Err("an input array was modified".into());
    }
    let expected: Vec<T> = match op {
        StreamOp::Copy => a.clone(),
        StreamOp::Scale => a.iter().map(|&x| scalar.mul(x)).collect(),
        StreamOp::Add => a.iter().zip(&b).map(|(&x, &y)| x.add(y)).collect(),
        StreamOp::Triad => a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| scalar.mul_add(y, x))
            .collect(),
        StreamOp::Write => vec![scalar; n],
        StreamOp::Dot | StreamOp::Read => {
            // Which block owns element e (kernels/README.md): vector v = e / W goes to
            // thread v mod T (grid-stride loop); tail element nvec*W + t goes to thread t.
            let w = 16 / <T as Real>::BYTES;
            let threads = (grid * block) as usize;
            let nvec = n / w;
            let mut partials = vec![0f64; grid as usize];
            for e in 0..n {
                let thread = if e < nvec * w {
                    (e / w) % threads
                } else {
                    e - nvec * w
                };
                let term = match op {
                    StreamOp::Dot => a[e].to_f64() * b[e].to_f64(),
                    _ => a[e].to_f64(),
                };
                partials[thread / block as usize] += term;
            }
            partials.into_iter().map(T::from_f64).collect()
        }
    };
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        if g.bits() != e.bits() {
            return Err(format!(
                "element {i}: got {g:?}, expected {e:?} (first mismatch of {})",
                got.iter()
                    .zip(&expected)
                    .filter(|(g, e)| g.bits() != e.bits())
                    .count()
            ));
        }
    }
    Ok(Outcome::new(stats, output))
}

// ---------------------------------------------------------------------------------------
// Compute kernels (peak.ptx, mma*.ptx, intensity.ptx.in): the oracles are roofprobe's own
// reference arithmetic (`bench::arith`, exact-rounding tested on its own) and exact integer
// matrix products, so the interpreter's fma/mma and the kernels' fragment layouts are checked
// against an implementation written apart from ptxsim's.

/// (words, grid blocks, threads per block) for the sweep: the three loops (two vectors, one
/// vector, scalar tail) each with and without work, grids smaller and larger than the data.
const SWEEP_SHAPES: &[(usize, u32, u32)] = &[
    (0, 1, 32),
    (1, 1, 32),
    (5, 1, 32),
    (17, 2, 32),
    (33, 1, 64),
    (257, 3, 32),
    // the main loop runs in every precision: 75 vectors of f32 for 32 threads
    (300, 1, 32),
];

/// The register bits of a `.b32`/`.b64` scalar parameter.
fn bits_arg(p: P, bits: u64) -> Arg {
    if arith::word_bytes(p) == 8 {
        Arg::U64(bits)
    } else {
        Arg::U32(bits as u32)
    }
}

/// Allocates `words` registers' worth of bits (u32 or u64 each).
fn alloc_words(mem: &mut Memory, p_wide: bool, words: &[u64]) -> ptxsim::DevicePtr {
    if p_wide {
        mem.alloc_from(words)
    } else {
        let narrow: Vec<u32> = words.iter().map(|&w| w as u32).collect();
        mem.alloc_from(&narrow)
    }
}

fn read_words(
    mem: &Memory,
    ptr: ptxsim::DevicePtr,
    wide: bool,
    n: usize,
) -> Result<Vec<u64>, String> {
    Ok(if wide {
        mem.read::<u64>(ptr, n).map_err(|e| e.to_string())?
    } else {
        mem.read::<u32>(ptr, n)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(u64::from)
            .collect()
    })
}

/// u64 words of a block record: (clock start, clock end, ns start, ns end, work, padding or, in
/// the sweep, thread 0's FMA steps per chain).
const RECORD_WORDS: usize = 6;

/// Allocates the block records of a launch of `grid` blocks.
fn alloc_records(mem: &mut Memory, grid: u32) -> ptxsim::DevicePtr {
    mem.alloc(8 * RECORD_WORDS * grid as usize)
}

/// The block records of a launch: every block's end is at or after its start, and block b
/// recorded `work(b)` (loop trips, or the sweep's words).
fn check_block_records(
    mem: &Memory,
    records: ptxsim::DevicePtr,
    grid: u32,
    work: impl Fn(usize) -> u64,
) -> Result<(), String> {
    let r = mem
        .read::<u64>(records, RECORD_WORDS * grid as usize)
        .map_err(|e| e.to_string())?;
    for (b, rec) in r.chunks_exact(RECORD_WORDS).enumerate() {
        if rec[1] < rec[0] || rec[3] < rec[2] {
            return Err(format!("block {b}: clock record {rec:?} runs backwards"));
        }
        if rec[4] != work(b) {
            return Err(format!(
                "block {b}: recorded work {}, expected {}",
                rec[4],
                work(b)
            ));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_peak(
    module: &Module,
    entry: &str,
    p: P,
    grid: u32,
    block: u32,
    n: u64,
    trips: u32,
    run: Run,
) -> Result<Outcome, String> {
    let threads = (grid * block) as usize;
    let wide = arith::word_bytes(p) == 8;
    let mut mem = Memory::new();
    let out = mem.alloc(threads * arith::word_bytes(p) as usize);
    let clocks = alloc_records(&mut mem, grid);
    let map = peak::map(p);
    let args = vec![
        Arg::Ptr(out),
        Arg::Ptr(clocks),
        Arg::U64(n),
        Arg::U32(trips),
        bits_arg(p, peak::x0(p)),
        bits_arg(p, map.a),
        bits_arg(p, map.b),
    ];
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    let got = read_words(&mem, out, wide, threads)?;
    let output = bytes_of(&got);
    let want = peak::thread_checksum(p, peak::GPU_CHAINS, trips as u64 * peak::GPU_UNROLL);
    let poison = if wide { u64::MAX } else { u32::MAX as u64 };
    for (t, &g) in got.iter().enumerate() {
        let w = if (t as u64) < n { want } else { poison };
        if g != w {
            return Err(format!("thread {t}: got {g:#x}, expected {w:#x}"));
        }
    }
    check_block_records(&mem, clocks, grid, |_| u64::from(trips))?;
    Ok(Outcome::new(stats, output))
}

#[allow(clippy::too_many_arguments)]
fn run_mma(
    module: &Module,
    entry: &str,
    p: tensor::Mma,
    grid: u32,
    block: u32,
    n: u64,
    trips: u32,
    run: Run,
) -> Result<Outcome, String> {
    let warps = (grid * block / 32) as usize;
    let wide = tensor::register_bits(p.precision) == 64;
    let mut mem = Memory::new();
    let a = alloc_words(&mut mem, wide, &tensor::a_fragments(p));
    let b = alloc_words(&mut mem, wide, &tensor::b_fragments(p, false));
    let nb = alloc_words(&mut mem, wide, &tensor::b_fragments(p, true));
    let c = alloc_words(&mut mem, wide, &tensor::c_fragments(p));
    let per_warp = tensor::d_fragments(p).len();
    let d = mem.alloc(warps * per_warp * tensor::register_bits(p.precision) / 8);
    let clocks = alloc_records(&mut mem, grid);
    let args = vec![
        Arg::Ptr(a),
        Arg::Ptr(b),
        Arg::Ptr(nb),
        Arg::Ptr(c),
        Arg::Ptr(d),
        Arg::Ptr(clocks),
        Arg::U64(n),
        Arg::U32(trips),
    ];
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    let got = read_words(&mem, d, wide, warps * per_warp)?;
    let output = bytes_of(&got);
    let verdict = tensor::check(p, n as usize, |i| got[i]);
    if !verdict.valid {
        return Err(verdict.detail);
    }
    let poison = if wide { u64::MAX } else { u32::MAX as u64 };
    if got[n as usize * per_warp..].iter().any(|&w| w != poison) {
        return Err(format!("a warp at or past n = {n} stored its D"));
    }
    check_block_records(&mem, clocks, grid, |_| u64::from(trips))?;
    Ok(Outcome::new(stats, output))
}

/// A `wgmma` peak kernel: every storing warpgroup's D is C + A·B (`wgmma::check`), the others
/// store nothing, and every block recorded its trips.
fn run_wgmma(
    module: &Module,
    entry: &str,
    (p, a): (P, wgmma::ASource),
    (grid, block): (u32, u32),
    n: u64,
    trips: u32,
    run: Run,
) -> Result<Outcome, String> {
    let groups = (grid * block) as usize / wgmma::WARPGROUP;
    let mut mem = Memory::new();
    let a_ptr = alloc_words(&mut mem, false, &wgmma::a_words(p, a));
    let b = alloc_words(&mut mem, false, &wgmma::b_image(p));
    let c = alloc_words(&mut mem, false, &wgmma::c_registers(p));
    let per_group = wgmma::d_registers(p).len();
    let d = mem.alloc(groups * per_group * 4);
    let clocks = alloc_records(&mut mem, grid);
    let args = vec![
        Arg::Ptr(a_ptr),
        Arg::Ptr(b),
        Arg::Ptr(c),
        Arg::Ptr(d),
        Arg::Ptr(clocks),
        Arg::U64(n),
        Arg::U32(trips),
    ];
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    let got = read_words(&mem, d, false, groups * per_group)?;
    let output = bytes_of(&got);
    let verdict = wgmma::check(p, n as usize, |i| got[i]);
    if !verdict.valid {
        return Err(verdict.detail);
    }
    if got[n as usize * per_group..]
        .iter()
        .any(|&w| w != u32::MAX as u64)
    {
        return Err(format!("a warpgroup at or past n = {n} stored its D"));
    }
    check_block_records(&mem, clocks, grid, |_| u64::from(trips))?;
    Ok(Outcome::new(stats, output))
}

/// A cache kernel: every thread's sum is `passes ×` the sum of its grid-stride share. Returns
/// the launch's statistics and every thread's sum.
fn launch_cache(
    module: &Module,
    entry: &str,
    n: usize,
    grid: u32,
    block: u32,
    passes: u32,
    run: Run,
) -> Result<(ptxsim::LaunchStats, Vec<u64>), String> {
    let input: Vec<u64> = (0..n as u64).map(|i| u64::from(cache::input(i))).collect();
    let threads = grid as usize * block as usize;
    let mut mem = Memory::new();
    let pin = alloc_words(&mut mem, false, &input);
    let pout = mem.alloc(threads * 4);
    let args = vec![
        Arg::Ptr(pin),
        Arg::Ptr(pout),
        Arg::U64(n as u64),
        Arg::U32(passes),
    ];
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    if read_words(&mem, pin, false, n)? != input {
        return Err("the input array was modified".into());
    }
    let got = read_words(&mem, pout, false, threads)?;
    let verdict = cache::check_sums(u64::from(passes), &got, |t| {
        cache::gpu_thread_sum(n as u64, threads as u64, t as u64)
    });
    if !verdict.valid {
        return Err(verdict.detail);
    }
    Ok((stats, got))
}

/// `launches` launches of a chase of `hops` hops each through a ring of `lines` 128-byte lines:
/// the state must stand where `launches × hops` hops from line 0 end, the ring must be as it
/// was, and the block record must count the last launch's hops.
fn run_latency(
    module: &Module,
    entry: &str,
    lines: u64,
    hops: u32,
    launches: u32,
    (grid, block): (u32, u32),
    run: Run,
) -> Result<Outcome, String> {
    let line = latency::GPU_LINE_BYTES;
    let order = latency::order(lines);
    let next = latency::successors(&order);
    // each line's first 64-bit word: the address of the next line
    let words_per_line = line / latency::GPU_POINTER_BYTES;
    let mut mem = Memory::new();
    let pring = mem.alloc((lines * line) as usize);
    let ring: Vec<u64> = (0..lines * words_per_line)
        .map(|i| {
            if i % words_per_line == 0 {
                pring.addr() + u64::from(next[(i / words_per_line) as usize]) * line
            } else {
                0
            }
        })
        .collect();
    mem.write(pring, &ring).map_err(|e| e.to_string())?;
    let pstate = mem.alloc_from(&[0u64, 0u64]);
    let records = alloc_records(&mut mem, 1);
    let args = vec![
        Arg::Ptr(pring),
        Arg::Ptr(pstate),
        Arg::Ptr(records),
        Arg::U32(hops),
    ];
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let mut divergent = Vec::new();
    for _ in 0..launches {
        let stats = module
            .launch_with(entry, &config, &args, &mut mem)
            .map_err(|e| e.to_string())?;
        divergent.extend(stats.divergent_uniform_branches);
    }
    if mem
        .read::<u64>(pring, ring.len())
        .map_err(|e| e.to_string())?
        != ring
    {
        return Err("the ring was modified".into());
    }
    let state = mem.read::<u64>(pstate, 2).map_err(|e| e.to_string())?;
    let total = u64::from(launches) * u64::from(hops);
    if state[1] != total || state[0] % line != 0 {
        return Err(format!(
            "state {state:?}, expected {total} hops at a line's start"
        ));
    }
    let verdict = latency::check_end(&order, total, state[0] / line);
    if !verdict.valid {
        return Err(verdict.detail);
    }
    check_block_records(&mem, records, 1, |_| u64::from(hops))?;
    Ok(Outcome {
        divergent,
        output: bytes_of(&state),
    })
}

/// The empty kernel launched `launches` times on one count from 0: the count must be the
/// launches (`bench::launch::check_count`), whatever the grid.
fn run_empty(
    module: &Module,
    entry: &str,
    launches: u32,
    (grid, block): (u32, u32),
    run: Run,
) -> Result<Outcome, String> {
    let mut mem = Memory::new();
    let pcount = mem.alloc_from(&[0u32]);
    let args = vec![Arg::Ptr(pcount)];
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let mut divergent = Vec::new();
    for _ in 0..launches {
        let stats = module
            .launch_with(entry, &config, &args, &mut mem)
            .map_err(|e| e.to_string())?;
        divergent.extend(stats.divergent_uniform_branches);
    }
    let count = mem.read::<u32>(pcount, 1).map_err(|e| e.to_string())?[0];
    let verdict = roofprobe::cases::launch::check_count(u64::from(count), u64::from(launches));
    if !verdict.valid {
        return Err(verdict.detail);
    }
    Ok(Outcome {
        divergent,
        output: bytes_of(&[u64::from(count)]),
    })
}

/// A fill of `n` words of `precision` (kernels/prep.ptx) of `kind` (0: a map kernel's input
/// array 1, 1: a reduction's input array 0, 2: a constant) over words that held garbage: each
/// must be the word the host generates (`stream::input`), and nothing past them written.
fn run_fill(
    module: &Module,
    entry: &str,
    precision: Precision,
    kind: u32,
    (n, grid, block): (usize, u32, u32),
    run: Run,
) -> Result<Outcome, String> {
    use roofprobe::cases::stream::{input, StreamKernel};
    let wide = precision == Precision::F64;
    let (key, want): (u64, Box<dyn Fn(u64) -> u64>) = match kind {
        2 => (0x7FF8_0000_DEAD_BEEF, Box::new(|_| 0x7FF8_0000_DEAD_BEEF)),
        _ => {
            let (kernel, array) = match kind {
                0 => (StreamKernel::Triad, 1),
                _ => (StreamKernel::Dot, 0),
            };
            let bits = move |i: u64| {
                let x = input(kernel, array, i);
                if wide {
                    x.to_bits()
                } else {
                    u64::from((x as f32).to_bits())
                }
            };
            (roofprobe::cases::input_key(array), Box::new(bits))
        }
    };
    let want = |i: u64| if wide { want(i) } else { want(i) & 0xFFFF_FFFF };
    let mut mem = Memory::new();
    // one word past the array, which must keep its garbage
    let pa = alloc_words(&mut mem, wide, &vec![0xA5A5_A5A5_A5A5_A5A5; n + 1]);
    let args = vec![
        Arg::Ptr(pa),
        Arg::U64(n as u64),
        Arg::U64(key),
        Arg::U32(kind),
    ];
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    let got = read_words(&mem, pa, wide, n + 1)?;
    for (i, &g) in got[..n].iter().enumerate() {
        if g != want(i as u64) {
            return Err(format!(
                "word {i} is {g:#x}, should be {:#x}",
                want(i as u64)
            ));
        }
    }
    untouched_past_end(&got, n, wide, 0xA5A5_A5A5_A5A5_A5A5)?;
    Ok(Outcome::new(stats, bytes_of(&got)))
}

/// The word after a fill's `n` words (`got[n]`) must still hold the `garbage` it started with
/// (its low 32 bits where the words are 32-bit).
fn untouched_past_end(got: &[u64], n: usize, wide: bool, garbage: u64) -> Result<(), String> {
    let garbage = if wide { garbage } else { garbage & 0xFFFF_FFFF };
    if got[n] != garbage {
        return Err(format!(
            "the word past the array was written: {:#x}",
            got[n]
        ));
    }
    Ok(())
}

/// A check kernel's two-word tally (`[wrong, first wrong index]`) after its launch: the count
/// of `planted` and the first of them, or `[0, u64::MAX]` (as it started) where none was.
fn tallied(
    stats: ptxsim::LaunchStats,
    mem: &Memory,
    ptally: ptxsim::DevicePtr,
    planted: &[usize],
) -> Result<Outcome, String> {
    let tally = mem.read::<u64>(ptally, 2).map_err(|e| e.to_string())?;
    let want = match planted.first() {
        Some(&first) => vec![planted.len() as u64, first as u64],
        None => vec![0, u64::MAX],
    };
    if tally != want {
        return Err(format!("the tally is {tally:?}, should be {want:?}"));
    }
    Ok(Outcome::new(stats, bytes_of(&tally)))
}

/// A check of `n` triad outputs of `precision` on the device (kernels/prep.ptx): right but for
/// elements planted wrong (the third, and the last, where they exist), the tally must count
/// them and name the first; with none planted, it must stay as it started.
fn run_check(
    module: &Module,
    entry: &str,
    precision: Precision,
    (n, grid, block): (usize, u32, u32),
    run: Run,
) -> Result<Outcome, String> {
    use roofprobe::cases::stream::{expected, gold_form, StreamKernel};
    let wide = precision == Precision::F64;
    let kernel = StreamKernel::Triad;
    let (ka, kb, k0) = gold_form(kernel).expect("a map kernel");
    let mut words: Vec<u64> = (0..n as u64)
        .map(|i| {
            let x = expected(kernel, i);
            if wide {
                x.to_bits()
            } else {
                u64::from((x as f32).to_bits())
            }
        })
        .collect();
    let planted: Vec<usize> = [2, n.saturating_sub(1)]
        .into_iter()
        .filter(|&i| i < n && n > 3)
        .collect();
    for &i in &planted {
        words[i] ^= 1;
    }
    let mut mem = Memory::new();
    let pout = alloc_words(&mut mem, wide, &words);
    let ptally = mem.alloc_from(&[0u64, u64::MAX]);
    let args = vec![
        Arg::Ptr(pout),
        Arg::U64(n as u64),
        Arg::U64(roofprobe::cases::input_key(0)),
        Arg::U64(roofprobe::cases::input_key(1)),
        Arg::F64(ka),
        Arg::F64(kb),
        Arg::F64(k0),
        Arg::Ptr(ptally),
    ];
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    tallied(stats, &mem, ptally, &planted)
}

/// A fill of `n` of the intensity sweep's input words of `precision` (kernels/prep.ptx) over
/// words that held garbage: each must be `intensity::input`, and nothing past them written.
fn run_sweep_fill(
    module: &Module,
    entry: &str,
    precision: P,
    (n, grid, block): (usize, u32, u32),
    run: Run,
) -> Result<Outcome, String> {
    let wide = precision == P::F64;
    let form = intensity::input_form(precision);
    let mut mem = Memory::new();
    let garbage = 0xA5A5_A5A5_A5A5_A5A5u64;
    let pa = alloc_words(&mut mem, wide, &vec![garbage; n + 1]);
    let bits = |v: u64| {
        if wide {
            Arg::U64(v)
        } else {
            Arg::U32(v as u32)
        }
    };
    let mut args = vec![
        Arg::Ptr(pa),
        Arg::U64(n as u64),
        Arg::U64(form.key),
        bits(form.one_bits),
        bits(form.index_mask),
        Arg::U32(form.index_shift),
    ];
    if !wide {
        args.push(Arg::U32(form.lanes));
    }
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    let got = read_words(&mem, pa, wide, n + 1)?;
    for (i, &g) in got[..n].iter().enumerate() {
        let want = intensity::input(precision, i as u64);
        if g != want {
            return Err(format!("word {i} is {g:#x}, should be {want:#x}"));
        }
    }
    untouched_past_end(&got, n, wide, garbage)?;
    Ok(Outcome::new(stats, bytes_of(&got)))
}

/// A check of `n` sweep outputs of `precision` after 3 FMAs on the device (kernels/prep.ptx)
/// against the gold table (i32: its affine map): right but for words planted wrong (the third,
/// in lane 0, and the last, in lane 1 of a packed format, where they exist), the tally must
/// count them and name the first; with none planted, it must stay as it started.
fn run_sweep_check(
    module: &Module,
    entry: &str,
    precision: P,
    (n, grid, block): (usize, u32, u32),
    run: Run,
) -> Result<Outcome, String> {
    let wide = precision == P::F64;
    let k = 3;
    let form = intensity::input_form(precision);
    let gold = intensity::Gold::new(precision, k);
    let mut words: Vec<u64> = (0..n as u64)
        .map(|i| intensity::expected_word(precision, k, intensity::input(precision, i)))
        .collect();
    let last_flip = if arith::lanes(precision) == 2 {
        1 << 16
    } else {
        1
    };
    let planted: Vec<(usize, u64)> = [(2, 1), (n.saturating_sub(1), last_flip)]
        .into_iter()
        .filter(|&(i, _)| i < n && n > 3)
        .collect();
    for &(i, flip) in &planted {
        words[i] ^= flip;
    }
    let mut mem = Memory::new();
    let pout = alloc_words(&mut mem, wide, &words);
    let pgold = alloc_words(&mut mem, wide, &gold.device_table());
    let ptally = mem.alloc_from(&[0u64, u64::MAX]);
    let args = if wide {
        vec![
            Arg::Ptr(pout),
            Arg::U64(n as u64),
            Arg::U64(form.key),
            Arg::U64(form.index_mask),
            Arg::Ptr(pgold),
            Arg::Ptr(ptally),
        ]
    } else {
        let (mul, add) = gold.affine();
        let lanes = if precision == P::I32 { 0 } else { form.lanes };
        vec![
            Arg::Ptr(pout),
            Arg::U64(n as u64),
            Arg::U64(form.key),
            Arg::U32(form.index_mask as u32),
            Arg::U32(lanes),
            Arg::Ptr(pgold),
            Arg::U32(mul),
            Arg::U32(add),
            Arg::Ptr(ptally),
        ]
    };
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    let first: Vec<usize> = planted.iter().map(|&(i, _)| i).collect();
    tallied(stats, &mem, ptally, &first)
}

/// A PTX GEMM on `shape`: A and B rows padded to a multiple of 8 elements, C poisoned, one
/// block per 128 × 128 tile; C must be, bit for bit, the exact product computed here by a
/// plain triple loop over the same integers.
fn run_gemm(
    module: &Module,
    entry: &str,
    p: P,
    shape: gemm::Shape,
    run: Run,
) -> Result<Outcome, String> {
    let ld = gemm::gpu_leading_dimension(p, shape.k);
    let words = |matrix: u64, rows: u64| -> Vec<u64> {
        (0..gemm::operand_words(p, rows, ld))
            .map(|i| gemm::operand_word(p, shape, matrix, ld, i))
            .collect()
    };
    let mut mem = Memory::new();
    let pa = alloc_words(&mut mem, false, &words(0, shape.m));
    let pb = alloc_words(&mut mem, false, &words(1, shape.n));
    let elements = (shape.m * shape.n) as usize;
    let pc = mem.alloc(elements * 4);
    let args = vec![
        Arg::Ptr(pa),
        Arg::Ptr(pb),
        Arg::Ptr(pc),
        Arg::U32(shape.m as u32),
        Arg::U32(shape.n as u32),
        Arg::U32(shape.k as u32),
        Arg::U32(ld as u32),
        Arg::U32(ld as u32),
    ];
    // the Hopper GEMM (gemm_wgmma_*) has its own tile, block and shared memory
    // the TMA-fed kernel reads A and B through tensor maps (ptxsim's encoding, as the
    // simulated driver's cuTensorMapEncodeTiled writes it): dims (K, rows), rows ld apart,
    // boxes of a K tile (128 bytes) by 128 (A) and 256 (B) rows, 128-byte swizzle, zero fill
    let tma = entry.starts_with("gemm_tma_");
    let cluster = entry.starts_with("gemm_tma_cluster");
    let args = if tma {
        let map = |base: ptxsim::DevicePtr, rows: u64, box_rows: u32| {
            let bytes = gemm::input_bytes(p);
            let m = ptxsim::TensorMap {
                base: base.addr(),
                elem_bytes: bytes as u32,
                dims: [shape.k, rows],
                strides_bytes: [ld * bytes],
                box_dims: [gemm::tma_tile_k(p) as u32, box_rows],
                swizzle: ptxsim::Swizzle::B128,
                oob_fill: ptxsim::OobFill::Zero,
            };
            Arg::Bytes(m.encode().to_vec())
        };
        vec![
            map(pa, shape.m, gemm::tma_box(p, 0, cluster)[1]),
            map(pb, shape.n, gemm::tma_box(p, 1, cluster)[1]),
            Arg::Ptr(pc),
            Arg::U32(shape.m as u32),
            Arg::U32(shape.n as u32),
            Arg::U32(shape.k as u32),
        ]
    } else {
        args
    };
    let mut config = if tma {
        LaunchConfig::new(
            (gemm::tma_blocks(shape, cluster) as u32, 1, 1),
            (gemm::TMA_BLOCK, 1, 1),
            gemm::TMA_SHARED_BYTES + gemm::HOPPER_SHARED_SLACK,
        )
    } else if entry.starts_with("gemm_wgmma_") {
        LaunchConfig::new(
            (gemm::wgmma_blocks(shape) as u32, 1, 1),
            (gemm::WGMMA_BLOCK, 1, 1),
            gemm::WGMMA_SHARED_BYTES + gemm::HOPPER_SHARED_SLACK,
        )
    } else {
        LaunchConfig::new(
            (gemm::gpu_blocks(shape) as u32, 1, 1),
            (gemm::GPU_BLOCK, 1, 1),
            gemm::gpu_dynamic_shared_bytes(p),
        )
    };
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    let got = read_words(&mem, pc, false, elements)?;
    let output = bytes_of(&got);
    for i in 0..shape.m {
        for j in 0..shape.n {
            let want: i64 = (0..shape.k)
                .map(|k| gemm::a_value(shape, i, k) * gemm::b_value(shape, j, k))
                .sum();
            let is = got[(i * shape.n + j) as usize];
            if is != u64::from((want as f32).to_bits()) {
                return Err(format!(
                    "C[{i}][{j}] is {}, should be {want}",
                    f32::from_bits(is as u32)
                ));
            }
        }
    }
    Ok(Outcome::new(stats, output))
}

#[allow(clippy::too_many_arguments)]
fn run_sweep(
    module: &Module,
    entry: &str,
    p: P,
    k: u32,
    n: usize,
    grid: u32,
    block: u32,
    run: Run,
) -> Result<Outcome, String> {
    let wide = arith::word_bytes(p) == 8;
    let input: Vec<u64> = (0..n as u64).map(|i| intensity::input(p, i)).collect();
    let mut mem = Memory::new();
    let pin = alloc_words(&mut mem, wide, &input);
    let pout = mem.alloc(n * arith::word_bytes(p) as usize);
    let records = alloc_records(&mut mem, grid);
    let map = intensity::map(p);
    let args = vec![
        Arg::Ptr(pin),
        Arg::Ptr(pout),
        Arg::Ptr(records),
        Arg::U64(n as u64),
        bits_arg(p, map.a),
        bits_arg(p, map.b),
    ];
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.uniform_branches = run.policy;
    config.schedule = run.schedule;
    let stats = module
        .launch_with(entry, &config, &args, &mut mem)
        .map_err(|e| e.to_string())?;
    let got = read_words(&mem, pout, wide, n)?;
    let output = bytes_of(&got);
    if read_words(&mem, pin, wide, n)? != input {
        return Err("the input array was modified".into());
    }
    for (i, (&g, &x)) in got.iter().zip(&input).enumerate() {
        let w = intensity::expected_word(p, k, x);
        if g != w {
            return Err(format!(
                "word {i}: got {} ({g:#x}), expected {} ({w:#x})",
                arith::show(p, g),
                arith::show(p, w)
            ));
        }
    }
    // Which block moves word i (kernels/intensity.ptx.in): vector v = i / W goes to thread
    // v mod T (grid-stride loop); tail word nvec*W + t goes to thread t.
    let width = 16 / arith::word_bytes(p) as usize;
    let threads = (grid * block) as usize;
    let nvec = n / width;
    let mut words = vec![0u64; grid as usize];
    for i in 0..n {
        let thread = if i < nvec * width {
            (i / width) % threads
        } else {
            i - nvec * width
        };
        words[thread / block as usize] += 1;
    }
    check_block_records(&mem, records, grid, |b| words[b])?;
    // Thread 0 of each block records its FMA steps per chain: k for every trip of its loops
    // (`gpu_thread_steps`, itself checked against the loops followed trip by trip)
    let r = mem
        .read::<u64>(records, RECORD_WORDS * grid as usize)
        .map_err(|e| e.to_string())?;
    for (b, rec) in r.chunks_exact(RECORD_WORDS).enumerate() {
        let t = (b * block as usize) as u64;
        let steps = intensity::gpu_thread_steps(p, k, n as u64, threads as u64, t);
        if rec[5] != steps {
            return Err(format!(
                "block {b}: thread 0 recorded {} FMA steps per chain, expected {steps}",
                rec[5]
            ));
        }
    }
    Ok(Outcome::new(stats, output))
}

// ---------------------------------------------------------------------------------------
// The suite.

#[test]
fn every_ptx_file_parses() {
    assert!(
        !ptx_files().is_empty(),
        "no .ptx files found in {:?}",
        kernels_dir()
    );
    let failures: Vec<String> = modules()
        .iter()
        .filter_map(|(label, _, text)| Module::parse(text).err().map(|e| format!("{label}: {e}")))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_entry_has_an_oracle() {
    let mut missing = Vec::new();
    for (label, file, text) in modules() {
        let Ok(module) = Module::parse(&text) else {
            continue; // reported by every_ptx_file_parses
        };
        for entry in module.entries() {
            if oracle_for(&file, entry).is_none() {
                missing.push(format!("{label}: `{entry}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "kernel entries with no host oracle in tests/interp.rs (register one in oracle_for):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_kernel_matches_its_host_oracle() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for (label, file, text) in modules() {
        let Ok(module) = Module::parse(&text) else {
            continue; // reported by every_ptx_file_parses
        };
        for entry in module.entries() {
            if oracle_for(&file, entry).is_none() {
                continue; // reported by every_entry_has_an_oracle
            }
            ran += 1;
            if let Err(e) = check_entry(&module, &file, entry, UniformBranchPolicy::Deny) {
                failures.push(format!("[{label}] {e}"));
            }
        }
    }
    assert!(ran > 0, "no kernel ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Each template must have expansions; they run (as part of modules()) in
/// every_kernel_matches_its_host_oracle and the mutation tests.
#[test]
fn every_template_is_expanded() {
    let missing: Vec<String> = files_ending_in(".ptx.in")
        .iter()
        .filter(|p| expand_template(p).is_none())
        .map(|p| {
            format!(
                "{}: roofprobe::kernels::all() has no expansion of this template (modules named `<template>#k=…`)",
                p.display()
            )
        })
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// What the binary loads must be what the interpreter ran: a plain registry module is
/// byte-identical to its file, and an expansion names a template that exists.
#[test]
fn every_registry_module_is_a_kernel_file_or_a_template_expansion() {
    let files = ptx_files();
    for source in roofprobe::kernels::all() {
        if let Some((file, _)) = source.name.split_once('#') {
            assert!(
                kernels_dir().join(file).exists()
                    || kernels_dir().join(format!("{file}.in")).exists(),
                "registry module `{}` names no template in kernels/",
                source.name
            );
            continue;
        }
        assert!(
            files
                .iter()
                .any(|(n, t)| *n == source.name && *t == source.ptx),
            "registry module `{}` is not byte-identical to a file in kernels/",
            source.name
        );
    }
}

/// The comparison across schedules bites: a kernel whose output differs under one schedule
/// (here a stand-in run that flips a byte under seed 2) is reported, naming the schedule.
#[test]
fn an_output_that_depends_on_the_schedule_is_caught() {
    let err = across_schedules(UniformBranchPolicy::Deny, |run| {
        let flip = run.schedule == Schedule::Shuffled { seed: 2 };
        Ok(Outcome {
            divergent: Vec::new(),
            output: vec![1, 2, if flip { 4 } else { 3 }],
        })
    })
    .unwrap_err();
    assert!(err.contains("Shuffled { seed: 2 }"), "{err}");
    assert!(err.contains("output byte 2 differs"), "{err}");
    assert!(err.contains("depends on the schedule"), "{err}");
}

/// Every kernel runs under the strict policy (a divergent `bra.uni`, which the PTX ISA leaves
/// undefined, is an error); this pins that the policy bites: turning the guarded plain `bra`s
/// of a STREAM kernel into `bra.uni` must fail it.
#[test]
fn divergent_bra_uni_is_caught() {
    let text = std::fs::read_to_string(kernels_dir().join("stream.ptx")).unwrap();
    let mutated: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with('@') {
                l.replacen(" bra ", " bra.uni ", 1)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(mutated, text, "stream.ptx has guarded branches to mutate");
    let module = Module::parse(&mutated).expect("the mutated text parses");
    let err = check_entry(&module, "stream.ptx", "copy_f32", UniformBranchPolicy::Deny)
        .expect_err("a divergent bra.uni must be reported");
    assert!(err.contains("bra.uni"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Mutation tests: a broken kernel must fail.

/// The text of `.entry name` from its `.entry` keyword to its closing brace: (start, end).
fn entry_span(text: &str, name: &str) -> (usize, usize) {
    let key = format!(".entry {name}(");
    let start = text
        .find(&key)
        .unwrap_or_else(|| panic!("no `{key}` in the text"));
    let open = start + text[start..].find('{').expect("entry has a body");
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return (start, open + i + 1);
                }
            }
            _ => {}
        }
    }
    panic!("entry `{name}` is not closed")
}

/// Applies `mutate` to the body of `entry` only; panics if it changed nothing (a mutation
/// that no longer applies must be noticed, not silently pass).
fn mutate_entry(text: &str, entry: &str, mutate: impl Fn(&str) -> String) -> String {
    let (s, e) = entry_span(text, entry);
    let body = &text[s..e];
    let mutated = mutate(body);
    assert_ne!(mutated, body, "mutation did not apply to `{entry}`");
    format!("{}{}{}", &text[..s], mutated, &text[e..])
}

/// Every (file, entry) with an oracle whose body contains `needle`.
fn entries_containing(needle: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (_, file, text) in modules() {
        let Ok(module) = Module::parse(&text) else {
            continue;
        };
        for entry in module.entries() {
            let (s, e) = entry_span(&text, entry);
            if text[s..e].contains(needle) && oracle_for(&file, entry).is_some() {
                out.push((file.clone(), text.clone(), entry.to_string()));
            }
        }
    }
    out
}

/// Asserts that the mutant of every listed entry is caught; returns how many were run.
fn assert_mutants_caught(
    what: &str,
    targets: &[(String, String, String)],
    mutate: impl Fn(&str) -> String,
) -> usize {
    let mut survivors = Vec::new();
    for (file, text, entry) in targets {
        let mutant = mutate_entry(text, entry, &mutate);
        let outcome = Module::parse(&mutant)
            .map_err(|e| e.to_string())
            .and_then(|m| check_entry(&m, file, entry, UniformBranchPolicy::Deny));
        match outcome {
            Ok(_) => survivors.push(format!("{file}: `{entry}`")),
            Err(e) => eprintln!("{what}: caught in `{entry}`: {}", first_line(&e)),
        }
    }
    assert!(
        survivors.is_empty(),
        "{what}: these mutants passed the harness:\n{}",
        survivors.join("\n")
    );
    targets.len()
}

/// The cluster TMA GEMM launched without its clusters (its `.reqnctapercluster` dropped, as a
/// driver that ignored it would run it) stops at its own check (`trap`) instead of arriving on,
/// and multicasting to, a CTA that is not there.
#[test]
fn the_cluster_gemm_launched_without_clusters_traps() {
    let targets = entries_containing("%cluster_nctarank");
    assert!(
        !targets.is_empty()
            && targets
                .iter()
                .all(|(_, _, e)| e.starts_with("gemm_tma_cluster")),
        "{targets:?}"
    );
    for (file, text, entry) in &targets {
        let mutant = mutate_entry(text, entry, |body| {
            body.replace(".reqnctapercluster 2, 1, 1\n", "")
        });
        let outcome = Module::parse(&mutant)
            .map_err(|e| e.to_string())
            .and_then(|m| check_entry(&m, file, entry, UniformBranchPolicy::Deny));
        match outcome {
            Ok(_) => panic!("`{entry}` ran without its clusters"),
            Err(e) => assert!(e.contains("trap"), "`{entry}`: {e}"),
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[test]
fn tail_bound_off_by_one_is_caught() {
    // The scalar tail's guard `element index >= n` becomes `> n`: one thread too many runs
    // the tail and touches element n.
    let targets = entries_containing("setp.ge.u64 %p2, %rd30, %rd10;");
    assert!(
        !targets.is_empty(),
        "no kernel has the tail guard this mutant targets"
    );
    let n = assert_mutants_caught("tail off-by-one", &targets, |body| {
        body.replace(
            "setp.ge.u64 %p2, %rd30, %rd10;",
            "setp.gt.u64 %p2, %rd30, %rd10;",
        )
    });
    assert_eq!(n, 14, "every stream kernel has a scalar tail");
}

#[test]
fn too_many_whole_vectors_is_caught() {
    // `n / W` whole vectors becomes `n / W + 1` (rounding up): the last vector runs past n.
    let mut targets = entries_containing("shr.u64 %rd14, %rd10, 2;");
    targets.extend(entries_containing("shr.u64 %rd14, %rd10, 1;"));
    assert!(!targets.is_empty());
    assert_mutants_caught("whole-vector count rounded up", &targets, |body| {
        let shift = if body.contains("shr.u64 %rd14, %rd10, 2;") {
            2
        } else {
            1
        };
        let w = 1u32 << shift;
        body.replace(
            &format!("shr.u64 %rd14, %rd10, {shift};"),
            &format!(
                "add.u64 %rd14, %rd10, {};\n    shr.u64 %rd14, %rd14, {shift};",
                w - 1
            ),
        )
    });
}

#[test]
fn wrong_operand_in_one_vector_lane_is_caught() {
    // A value bug with no out-of-bounds access: in the 4-vectors-in-flight main loop of
    // triad_f32, lane 3 of the first vector adds the wrong element of a. Only the output
    // comparison can catch this, and only on a shape large enough to reach that loop.
    let targets: Vec<_> = entries_containing("fma.rn.f32 %f3, %f0, %f19, %f3;")
        .into_iter()
        .filter(|(_, _, e)| e == "triad_f32")
        .collect();
    assert_eq!(
        targets.len(),
        1,
        "triad_f32 has the fma this mutant targets"
    );
    assert_mutants_caught("wrong fma operand", &targets, |body| {
        body.replacen(
            "fma.rn.f32 %f3, %f0, %f19, %f3;",
            "fma.rn.f32 %f3, %f0, %f19, %f4;",
            1,
        )
    });
}

/// A peak or tensor loop that exits one trip early: the tensor kernels' D is the same after any
/// number of trips, so only the block records (trips counted by the loop) can show it.
#[test]
fn loop_one_trip_short_is_caught() {
    let targets = entries_containing("setp.ne.u32 %p1, %r1, 0;");
    let n = assert_mutants_caught("loop one trip short", &targets, |body| {
        body.replace("setp.ne.u32 %p1, %r1, 0;", "setp.gt.u32 %p1, %r1, 1;")
    });
    assert_eq!(n, peak::PRECISIONS.len() + tensor::forms().len());
}

/// The trip counter is the loop's: one that misses a trip (incremented only on trips after the
/// first) is caught, though every FMA and MMA still runs.
#[test]
fn a_trip_counter_that_misses_a_trip_is_caught() {
    let mut targets = entries_containing("add.u32 %r5, %r5, 1;\n    sub.u32 %r1, %r1, 1;");
    targets.extend(entries_containing(
        "add.u32 %r7, %r7, 1;\n    sub.u32 %r1, %r1, 1;",
    ));
    let n = assert_mutants_caught("trip counter starts at -1", &targets, |body| {
        body.replace("mov.u32 %r5, 0; ", "mov.u32 %r5, -1;")
            .replace("mov.u32 %r7, 0; ", "mov.u32 %r7, -1;")
    });
    assert_eq!(n, peak::PRECISIONS.len() + tensor::forms().len());
}

/// [`entries_containing`] among the intensity sweep's expansions only.
fn sweep_entries_containing(text: &str) -> Vec<(String, String, String)> {
    entries_containing(text)
        .into_iter()
        .filter(|(file, _, _)| file == "intensity.ptx.in")
        .collect()
}

/// A sweep whose main loop advances by one grid instead of two moves most vectors twice: its
/// output is still right, and only its block records (the words each block moved) show it.
#[test]
fn sweep_moving_vectors_twice_is_caught() {
    let targets = sweep_entries_containing("add.u64 %rd9, %rd9, %rd8;");
    let n = assert_mutants_caught("sweep main loop stride halved", &targets, |body| {
        body.replace("add.u64 %rd9, %rd9, %rd8;", "add.u64 %rd9, %rd9, %rd5;")
    });
    assert_eq!(n, intensity::PRECISIONS.len() * intensity::KS.len());
}

/// A sweep whose step loop (k above 64) runs one trip short: the f16x2 and bf16x2 chains have
/// converged by then, so their output is the same, and only thread 0's recorded steps show it.
#[test]
fn sweep_step_loop_one_trip_short_is_caught() {
    let targets = sweep_entries_containing("_main_steps:");
    let looped = intensity::KS
        .iter()
        .filter(|&&k| k > roofprobe::kernels::intensity::UNROLLED_STEPS)
        .count();
    assert!(looped > 0);
    let short = |body: &str| {
        // each loop's end moves one block of steps closer: `add.u32 %r13, %r12, K;`
        let mut out = String::new();
        for line in body.lines() {
            match line.trim_start().strip_prefix("add.u32 %r13, %r12, ") {
                Some(rest) => {
                    let (k, comment) = rest.split_once(';').unwrap();
                    let k: u32 = k.parse().unwrap();
                    let k = k - roofprobe::kernels::intensity::UNROLLED_STEPS;
                    out.push_str(&format!("    add.u32 %r13, %r12, {k};{comment}\n"));
                }
                None => out.push_str(&format!("{line}\n")),
            }
        }
        out
    };
    let n = assert_mutants_caught("sweep step loop one trip short", &targets, short);
    assert_eq!(n, intensity::PRECISIONS.len() * looped);
    // bf16x2 at k = 1024: the output alone passes; the steps recorded fail it
    let entry = intensity::entry_name(P::Bf16x2, 1024);
    let (_, text, _) = targets.iter().find(|(_, _, e)| *e == entry).unwrap();
    let module = Module::parse(&mutate_entry(text, &entry, short)).unwrap();
    let run = Run {
        policy: UniformBranchPolicy::Deny,
        schedule: SCHEDULES[0],
    };
    let Err(e) = run_sweep(&module, &entry, P::Bf16x2, 1024, 300, 1, 32, run) else {
        panic!("{entry} one step-loop trip short passed");
    };
    assert!(e.contains("FMA steps per chain"), "{e}");
}

/// A k that is not a multiple of the unrolled block (never planned, but the expansion takes any
/// k) runs the loop and then the steps left over.
#[test]
fn sweep_with_steps_left_over_runs_in_the_interpreter() {
    for (p, k) in [(P::F32, 130), (P::I32, 65), (P::F64, 191)] {
        let module = Module::parse(&roofprobe::kernels::intensity::expand(p, k)).unwrap();
        let entry = intensity::entry_name(p, k);
        for &(n, grid, block) in SWEEP_SHAPES {
            let run = Run {
                policy: UniformBranchPolicy::Deny,
                schedule: SCHEDULES[0],
            };
            run_sweep(&module, &entry, p, k, n, grid, block, run)
                .unwrap_or_else(|e| panic!("{p} k={k} n={n}: {e}"));
        }
    }
}

#[test]
fn dropped_barrier_is_caught() {
    let targets = entries_containing("bar.sync 0;");
    assert!(!targets.is_empty(), "no kernel with a barrier to drop");
    assert_mutants_caught("bar.sync dropped", &targets, |body| {
        body.replacen("bar.sync 0;", "// bar.sync dropped by the mutation test", 1)
    });
}

#[test]
fn swapped_mma_operands_are_caught() {
    // In the first mma of each kernel, the first two registers of the A fragment trade places.
    let targets = entries_containing("mma.sync");
    let n = assert_mutants_caught("mma A operands swapped", &targets, swap_first_mma_a_pair);
    if n == 0 {
        eprintln!("note: no kernel in kernels/ uses mma.sync yet; ptxsim's own tests run this mutation on a fixture");
    }
}

/// `mma... {d..}, {a0, a1, ...}, {b..}, {c..}` -> `{a1, a0, ...}` in the first mma (or A and
/// B swapped when A is a single register).
fn swap_first_mma_a_pair(body: &str) -> String {
    let start = body.find("mma.sync").expect("an mma");
    let end = start + body[start..].find(';').expect("mma ends with ;");
    let inst = &body[start..end];
    let mut braces = inst.match_indices('{').map(|(i, _)| i);
    braces.next(); // D
    let a_open = braces.next().expect("A fragment");
    let a_close = a_open + inst[a_open..].find('}').expect("A closes");
    let regs: Vec<&str> = inst[a_open + 1..a_close]
        .split(',')
        .map(str::trim)
        .collect();
    let new_inst = if regs.len() >= 2 {
        let mut swapped = regs.clone();
        swapped.swap(0, 1);
        format!(
            "{}{{{}}}{}",
            &inst[..a_open],
            swapped.join(", "),
            &inst[a_close + 1..]
        )
    } else {
        // A single-register A fragment (m8n8k4 f64): swap the A and B operands instead.
        let b_open = a_close + inst[a_close..].find('{').expect("B fragment");
        let b_close = b_open + inst[b_open..].find('}').expect("B closes");
        format!(
            "{}{}{}{}{}",
            &inst[..a_open],
            &inst[b_open..=b_close],
            &inst[a_close + 1..b_open],
            &inst[a_open..=a_close],
            &inst[b_close + 1..]
        )
    };
    format!("{}{}{}", &body[..start], new_inst, &body[end..])
}

#[test]
fn blocks_storing_their_partials_to_one_slot_race() {
    // Every block of a reduction stores its partial sum to partials[0] instead of
    // partials[blockIdx.x]: with two blocks or more, a global-memory race between blocks, which
    // the interpreter reports as such (not only as a wrong value).
    let mut targets = entries_containing("mul.wide.u32 %rd32, %r1, 4;");
    targets.extend(entries_containing("mul.wide.u32 %rd32, %r1, 8;"));
    assert_eq!(targets.len(), 4, "dot and read, f32 and f64");
    for (file, text, entry) in &targets {
        let mutant = mutate_entry(text, entry, |body| {
            body.replace("mul.wide.u32 %rd32, %r1, 4;", "mul.wide.u32 %rd32, %r1, 0;")
                .replace("mul.wide.u32 %rd32, %r1, 8;", "mul.wide.u32 %rd32, %r1, 0;")
        });
        let module = Module::parse(&mutant).expect("the mutant parses");
        let err = check_entry(&module, file, entry, UniformBranchPolicy::Deny)
            .expect_err("the mutant must fail");
        assert!(err.contains("global-memory race"), "`{entry}`: {err}");
        assert!(
            err.contains("of block (0, 0, 0) wrote at line"),
            "`{entry}`: {err}"
        );
    }
}

/// The empty kernel's count is what its row is checked by: a kernel that drops its add, adds
/// twice, or lets every thread add (the guard's test inverted) must fail its oracle.
#[test]
fn the_empty_kernels_count_mutants_are_caught() {
    let targets = entries_containing("red.global.add.u32 [%rd2], 1;");
    assert_eq!(targets.len(), 1, "the empty kernel has one counting add");
    assert_mutants_caught("count dropped", &targets, |body| {
        body.replace("red.global.add.u32 [%rd2], 1;", "")
    });
    assert_mutants_caught("count doubled", &targets, |body| {
        body.replace(
            "red.global.add.u32 [%rd2], 1;",
            "red.global.add.u32 [%rd2], 2;",
        )
    });
    assert_mutants_caught("every thread counts", &targets, |body| {
        body.replace(
            "setp.ne.u32 %p1, %r3, 0;",
            "setp.eq.u32 %p1, %r3, 0xFFFFFFFF;",
        )
    });
}

/// The cache kernels' cost per load is the same at any share: one loop over a thread's
/// `passes ×` share, 4 loads a trip, instead of a loop per pass, which spent some 25 instructions
/// of a pass's overhead on the one vector an H200 thread holds of an L1 working set (2 MiB over
/// 270,336 threads: half a vector each). Counted here in PTX instructions executed per 16-byte
/// load, for shares of half a vector to 64 vectors; on a GPU the loop must issue well inside the
/// 16 instructions an SM issues while its L1 returns a warp's 512 bytes (about 8.5 per load in
/// sm_90 SASS, `tests/offline.rs`).
#[test]
fn cache_kernels_spend_few_instructions_per_load_at_any_share() {
    let text = std::fs::read_to_string(kernels_dir().join("cache.ptx")).unwrap();
    let module = Module::parse(&text).unwrap();
    let (grid, block, passes) = (2u32, 64u32, 64u32);
    let threads = u64::from(grid * block);
    let mut seen = Vec::new();
    for entry in ["l1_i32", "l2_i32"] {
        // words: half a vector per thread, one, two, five and 64
        for vectors in [threads / 2, threads, 2 * threads, 5 * threads, 64 * threads] {
            let n = 4 * vectors as usize;
            let run = Run {
                policy: UniformBranchPolicy::Deny,
                schedule: SCHEDULES[0],
            };
            let (stats, _) = launch_cache(&module, entry, n, grid, block, passes, run)
                .unwrap_or_else(|e| panic!("{entry} n={n}: {e}"));
            let per_load = stats.thread_instructions as f64 / (vectors * u64::from(passes)) as f64;
            seen.push(format!("{entry} {vectors} vectors: {per_load:.2}"));
            assert!(
                per_load < 13.0,
                "{entry}: {per_load:.2} PTX instructions per 16-byte load with {vectors} vectors \
                 for {threads} threads (want < 13); so far {seen:?}"
            );
        }
    }
    eprintln!("instructions per load: {seen:?}");
}

/// A share that wraps back to the wrong vector (vector 0 instead of the thread's first) reads
/// other threads' words from the second pass on: every cache kernel's sums catch it.
#[test]
fn a_cache_share_that_wraps_to_the_wrong_vector_is_caught() {
    let targets = entries_containing("selp.b32 %i0, %r6, %i0, %p3;");
    let n = assert_mutants_caught("cache share wraps to vector 0", &targets, |body| {
        body.replace("selp.b32 %i0, %r6, %i0, %p3;", "selp.b32 %i0, 0, %i0, %p3;")
    });
    assert_eq!(n, 2, "l1_i32 and l2_i32 wrap their shares");
}

/// Loads owed counted one vector short per pass (`share` without its `+ 1`): the sums catch it.
#[test]
fn a_cache_share_one_vector_short_is_caught() {
    let targets = entries_containing("div.u32 %r9, %r9, %r7;\n    add.u32 %r9, %r9, 1;");
    let n = assert_mutants_caught("cache share one short", &targets, |body| {
        body.replace(
            "div.u32 %r9, %r9, %r7;\n    add.u32 %r9, %r9, 1;",
            "div.u32 %r9, %r9, %r7;",
        )
    });
    assert_eq!(n, 2);
}
