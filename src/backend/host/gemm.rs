//! The host backend's GEMM cases ([`crate::cases::gemm`]): our own blocked SIMD kernel (`simd`)
//! beside the `gemm` crate (`gemm-crate`, faer's kernel), the reference line, on the same
//! matrices, in f32 and f64.
//!
//! # Our kernel
//!
//! The blocking of BLIS (Van Zee and van de Geijn, "BLIS: A Framework for Rapidly Instantiating
//! BLAS Functionality", ACM TOMS 2015), for `C = A · Bᵀ` with A (M × K) and B (N × K) row-major:
//!
//! ```text
//! for jc in N by NC:                 B panel, KC × NC, packed once, shared (L3)
//!   for pc in K by KC:
//!     pack B[jc.., pc..] into NR-wide slivers, k-major (the workers split the slivers)
//!     for each (ic in M by MC, range of slivers) of this worker:
//!       pack A[ic.., pc..] into MR-tall slivers, k-major (this worker's own buffer)
//!       for each A sliver (L1), for each B sliver of the range (L2):
//!         micro-kernel: an MR × NR tile of C in registers, KC rank-1 updates
//! ```
//!
//! The micro-kernel broadcasts one element of A and multiplies it into NR / lanes vectors of B
//! per row, MR × NR / lanes independent accumulators (more than FMA latency × FMA pipes), and
//! stores (first K block) or adds (later ones) its tile into C; edge tiles go through a local
//! tile and only their valid part is written. Register blocks per instruction set
//! ([`Blocking`]): AVX-512F 12 × 32 f32 / 8 × 16 f64, AVX2+FMA 6 × 16 / 6 × 8, NEON 8 × 8 / 8 × 4,
//! each chosen at run time by [`super::compute::Simd::detect`]; a portable scalar kernel
//! elsewhere. On x86-64 the micro-kernel asks for its tile of C before its K loop and for B's
//! sliver 16 steps ahead, and the packing for the rows it reads next (`pack_sliver`).
//!
//! What that bought, on this project's 2-vCPU AVX-512 VM (Intel Xeon with a 480 MiB L3,
//! 2026-12-02; ratio to the `gemm` crate in the same process, medians of 4 interleaved rounds,
//! two runs each of the old and the new binary, alternating): f32 2048³ 0.67–0.68 → 0.88, 4096³
//! 0.65–0.66 → 0.82–0.87, 128 × 14336 × 4096 0.66–0.67 → 0.77–0.85, f64 2048³ 0.64 → 0.73–0.77;
//! the AVX2 kernels on the same VM (f32 2048³, against the crate's AVX-512 kernel) 0.43–0.44 →
//! 0.58. 256³ stayed at 1.05–1.13 and 32 × 4096 × 4096 went 0.66 → 0.79–0.81 (an earlier build
//! of this change). One at a time, in interleaved rounds against the crate:
//! - the micro-kernel 8 × 32 → 12 × 32 (24 accumulators): 187 against 165 GFLOP/s on one core
//!   with its operands in L1; 14 × 32 was no faster, 8 × 48 and 6 × 64 slower;
//! - A's sliver in L1 and B's streaming from L2 (the loops swapped) with B asked for ahead: 1.14×
//!   (rounds 1.10–1.20); swapped alone, with A asked for ahead instead, 1.07×;
//! - the packing's prefetch: its share of one core's samples 6.9 % → 4.8 % (perf);
//! - work items, about eight per worker: against sixteen, eight gave 0.97–1.05× by shape and
//!   four 0.96–1.08×;
//! - KC 192 or 384 and MC 96 or 384: no change beyond the rounds' spread.
//!
//! For M ≤ [`SMALL_M`] (decode steps: matrix-vector products and small batches) the product is
//! bound by reading B once, and packing B would add a write and a read of it: there, and up to the
//! tile's [`DotTile::max_m`] (64 for the f32 tiles of AVX2 and AVX-512F, 32 for AVX2's f64 one,
//! [`SMALL_M`] for the others), each worker takes a share of B's rows and computes, straight
//! from the matrices, SIMD along K, the dot products of a register tile ([`DotTile`]): `rows_a`
//! of A's rows (padded to a multiple) against `rows_b` of its rows, one vector accumulator each,
//! the shorter side's vectors held while each row of the other is loaded once. AVX2+FMA has 16
//! vector registers: its tile is 2 × 6 (12 accumulators, 15 registers in all); the 4 × 4 tile
//! it had before held 21 and spilled accumulators to the stack in its inner loop. On this
//! project's 2-vCPU VM (AMD EPYC, Zen 4 with AVX2 and no AVX-512 shown; 2026-12-03,
//! f32, 6 interleaved rounds, median and range of the per-round ratio to the 4 × 4 tile) M = 2 ran
//! 1.11× (1.02–1.27) at 4096 × 4096 and 1.13× at 8192 × 8192, M = 8 1.14–1.18×, M = 16 1.29–1.32×,
//! and M = 4 0.97× (0.82–1.14). Tried against the 4 × 4 tile in rounds of their own: the 4 × 3 tile
//! (no spill either) ran M = 4 to 16 at 0.90–1.09× by shape; K blocks of 2 KiB per row, which keep
//! a step of B's rows in L1 while every group of A's rows passes over it, made them slower
//! (0.76–0.95×, with 4 × 3 or 4 × 4), and software prefetch of B's next block slower still
//! (0.65–0.93×). With the 2 × 6 tile the dot-product path also beat the packed one beyond M = 16
//! (4 interleaved rounds, ratio to the packed path by weight shape): M = 32 1.49–2.00×, M = 64
//! 1.13–1.48×, M = 128 0.98–1.20×, M = 256 0.48–0.90×; so AVX2's f32 tile takes M up to 64.
//! In f64 (the same VM, 2026-12-04, 6 interleaved rounds, medians by weight shape of the
//! per-round ratio to the packed path; f64 has no batch sweep in a run, so these shapes were
//! added for the rounds) M = 32 ran 1.10–1.73×, M = 64 0.72–1.04× and M = 128 0.52–0.91×,
//! and M = 16, on the dot-product path in both builds, 0.89–1.04× (the rounds' noise): AVX2's
//! f64 tile takes M up to 32.
//!
//! AVX-512F's f32 tile is 8 × 3 with B's three vectors held (24 accumulators, 28 of the 32
//! registers), to M = 64: at the batch sweep's M = 8 one tile covers A, so B is read once. On
//! this project's 2-vCPU VM (Intel Xeon, AVX-512F, 2026-12-04; GFLOP/s, medians of 4
//! interleaved rounds at 4096 × 4096), against the 4 × 4 tile to M = 16 it had before (the
//! packed path above): 4 × 4 80.6, 8 × 3 99.7 at M = 8; 109, 128 at M = 16; 88.4 (packed), 171
//! at M = 32; 138 (packed), 182 at M = 64. 4 × 6, 6 × 4, 8 × 2, 3 × 8 and 4 × 4 (to M = 64)
//! fell between (M = 32: 130–166). Holding A's eight vectors instead (33 registers, one more
//! than the set has) ran 0.92–1.02× as fast (medians by M); at M = 128 and 256 the packed path
//! won (181 and 232 GFLOP/s against 125 and 83).
//! Against the build before it, in the same interleaved rounds (new/old per round, median and
//! range; 2 rounds for the first three weight shapes, 4 for 8192 × 8192 and 28672 × 8192): M = 8
//! 1.13–1.25× by shape, M = 16 1.11–1.16×, M = 32 1.41–1.97×, M = 64 1.26× at 4096 × 4096 and
//! 14336 × 4096 but 0.66× at 4096 × 14336 (A 3.5 MiB) and 0.87–0.88× at N × 8192 (A 2 MiB),
//! where A outgrows the 2 MiB L2 and every group of A's rows comes from L3. So above
//! [`SMALL_M`] this tile takes M only while A's padded rows and its 3 rows of B fit in a core's
//! L2 ([`DotTile::a_in_l2`]; the host's reported L2, else [`DEFAULT_L2_BYTES`]): M = 32 at
//! 4096 × 14336 (1.9 MiB) still ran 1.41× the packed path. Its f64 tile, and NEON's, stay
//! 4 × 4 to M ≤ 16, not measured against the alternatives.
//!
//! At M = 1 (a matrix-vector product) it takes [`GEMV_ROWS`] rows of B at a time against A's one
//! row instead, one vector accumulator per row, and no work is spent on padding rows: eight
//! sequential streams of B in flight per core. On this project's 2-vCPU VM (AVX2, f32, the five
//! M = 1 shapes, 4 interleaved rounds each, 2026-12-01) one row at a time was no faster than the
//! four-row dot-product path (0.91–1.0× by shape), eight rows 1.10–1.35× faster than it (rounds
//! 0.83–1.80) and 1.08–1.36× faster than sixteen.
//!
//! The workers are the backend's pinned pool, one pass of the pool per product, separated into
//! phases by a spin barrier. Within a phase they claim work from a shared counter (B's rows, 64 at
//! a time, or the most whole tiles of B's rows in 64; (A block, slivers) items) rather than each
//! taking a fixed share, so a core that another process shares does less of it: on this project's
//! shared 2-vCPU machine a fixed split ran 2048³ at 8 % to 55 % of the reference in some rounds.
//! The reference runs on rayon's pool with as many threads.
//!
//! This module must not print. `unsafe` here is limited to SIMD kernels on the instruction set
//! that was detected, the reference crate's raw-pointer interface, and raw pointers into
//! matrices whose parts each worker owns.

use super::arena::{Arena, Array, Fill, Word};
use super::clock;
use super::compute::HostCompute;
use super::gemm_kernels::*;
use super::pool::{chunk, first_touch, Pool, SharedPtr, SpinBarrier};
use super::PreparedCase;
use crate::cases::gemm::{self, Shape};
use crate::cases::{Case, Precision, Verdict};
use crate::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Largest M of a decode step: up to here the product is bound by reading B once from DRAM, so
/// its B rotates through copies (`super::host`), and every set's dot-product path takes it
/// (reading A's few rows from cache, where packing B would add a write and a read of all of
/// it); [`DotTile::max_m`] may go further.
pub const SMALL_M: usize = 16;
/// Rows of B one claim takes: the matrix-vector path's, and the dot-product path's rounded down
/// to a multiple of its tile's rows of B.
pub const DOT_ROWS: usize = 64;
/// Rows of B the matrix-vector kernel reads at once (a divisor of [`DOT_ROWS`]).
pub const GEMV_ROWS: usize = 8;
/// Depth of one K block: an MR-tall sliver of A (MR × KC) stays in L1, a range of B's slivers
/// (KC × NR each) in L2.
pub const KC: usize = 256;
/// Rows of one packed A block (MC × KC), rounded down to a multiple of MR.
pub const MC: usize = 192;
/// Columns of one packed B panel (KC × NC, in the shared L3).
pub const NC: usize = 2048;

/// The precisions of the host GEMM.
pub const PRECISIONS: [Precision; 2] = [Precision::F32, Precision::F64];

/// Per-worker scratch of our kernel: its packed A block and an edge tile.
struct Scratch<T> {
    a: Vec<T>,
    tile: Vec<T>,
}

/// Our blocked GEMM on `pool`: `c = a · bᵀ`, with a (m × k), b (n × k), c (m × n) row-major.
/// `b` holds one or more copies of B, back to back; launch `r` of `reps` uses copy
/// `(first + r) mod copies`.
/// `packed_b` holds one packed B panel (KC × NC rounded up to whole slivers); `scratch` one
/// entry per worker. `dot_path`: M > 1 takes the dot-product path ([`DotTile::takes`]).
///
/// Long because it is the timed region (past the house's 150 lines on purpose). Its three paths
/// (a decode step's GEMV, the dot-product tiles, the packed panels) share one pool dispatch per
/// sample, each worker's scratch lock, and the phase counter that every worker advances in
/// step (the claim counters alternate by phase, and worker 0 clears the idle one); split into
/// functions, that state would cross a call boundary on every rep inside the samples.
#[allow(clippy::too_many_arguments)]
fn ours<T: GemmElement>(
    pool: &Pool,
    barrier: &SpinBarrier,
    kernels: Blocking<T>,
    dot_path: bool,
    shape: Shape,
    a: &[T],
    b: &[T],
    first: usize,
    c: &mut [T],
    packed_b: &mut [T],
    scratch: &[std::sync::Mutex<Scratch<T>>],
    reps: u32,
) -> bool {
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    let copies = (b.len() / (n * k)).max(1);
    let threads = pool.threads();
    let Blocking {
        mr,
        nr,
        micro,
        dot,
        gemv,
        ..
    } = kernels;
    let (a_ptr, b_base) = (
        SharedPtr(a.as_ptr() as *mut T),
        SharedPtr(b.as_ptr() as *mut T),
    );
    let c_ptr = SharedPtr(c.as_mut_ptr());
    let pb = SharedPtr(packed_b.as_mut_ptr());
    let mc = (MC / mr).max(1) * mr;
    // Work is claimed, not assigned: a worker whose core is shared with another process does
    // less of it, as in rayon's work stealing. Phase q (one per product on the dot path, one per
    // (jc, pc) panel on the packed path, counted alike by every worker) claims from
    // counters[q % 2]; worker 0 clears the other counter during phase q, after every claim of
    // phase q − 1 (a barrier ended it) and before any of phase q + 1 (a barrier starts it).
    let counters = [AtomicUsize::new(0), AtomicUsize::new(0)];
    pool.run(|t| {
        // Worker t alone locks scratch[t].
        let mut guard = scratch[t].lock().unwrap_or_else(|e| e.into_inner());
        let mine = &mut *guard;
        let mut phase = 0usize;
        let mut next_phase = || {
            let q = phase;
            phase += 1;
            if t == 0 {
                counters[(q + 1) % 2].store(0, Ordering::Relaxed);
            }
            &counters[q % 2]
        };
        for rep in 0..reps as usize {
            // SAFETY: b holds `copies` copies of n × k elements.
            let b_ptr = SharedPtr(unsafe { b_base.get().add((first + rep) % copies * n * k) });
            if m == 1 {
                // A decode step: each worker claims B's rows, DOT_ROWS at a time, and takes
                // their dot products with A's one row (in L1 or L2) GEMV_ROWS rows at a time,
                // so B streams from DRAM once, in as many sequential streams per core.
                let counter = next_phase();
                loop {
                    let start = counter.fetch_add(DOT_ROWS, Ordering::Relaxed);
                    if start >= n {
                        break;
                    }
                    let rows = DOT_ROWS.min(n - start);
                    // SAFETY: A holds k elements, B rows start..start+rows of k; C's elements
                    // start..start+rows are this worker's claim.
                    unsafe {
                        gemv(
                            k,
                            a_ptr.get(),
                            b_ptr.get().add(start * k),
                            k,
                            rows,
                            c_ptr.get().add(start),
                        )
                    };
                }
                barrier.wait();
                continue;
            }
            if dot_path {
                // A's rows padded to a multiple of the tile's (the last repeated; those
                // results are dropped), so the kernel always reads whole tiles at one stride.
                let (ra, rb) = (dot.rows_a, dot.rows_b);
                let padded = dot.padded_rows(m);
                let groups = padded / ra;
                for ii in 0..padded {
                    let row = ii.min(m - 1);
                    // SAFETY: row < m, and a holds m × k elements.
                    let src = unsafe { std::slice::from_raw_parts(a_ptr.get().add(row * k), k) };
                    mine.a[ii * k..(ii + 1) * k].copy_from_slice(src);
                }
                // Each worker claims B's rows, `claim` at a time, and takes them rb at a time
                // against every group.
                let claim = rb * (DOT_ROWS / rb).max(1);
                let counter = next_phase();
                let mut out = [T::default(); DOT_OUT];
                let mut rows = 0..0;
                let mut j = 0;
                loop {
                    if j >= rows.end {
                        let start = counter.fetch_add(claim, Ordering::Relaxed);
                        if start >= n {
                            break;
                        }
                        rows = start..(start + claim).min(n);
                        j = start;
                    }
                    let valid_j = (rows.end - j).min(rb);
                    let b_rows = if valid_j == rb {
                        // SAFETY: rows j .. j+rb are inside B.
                        unsafe { b_ptr.get().add(j * k) as *const T }
                    } else {
                        // B's last rows padded the same way, through the worker's tile.
                        for jj in 0..rb {
                            let row = j + jj.min(valid_j - 1);
                            let src =
                                unsafe { std::slice::from_raw_parts(b_ptr.get().add(row * k), k) };
                            mine.tile[jj * k..(jj + 1) * k].copy_from_slice(src);
                        }
                        mine.tile.as_ptr()
                    };
                    for g in 0..groups {
                        // SAFETY: the operands are ra rows and rb rows of k elements at stride
                        // k; the elements of C written are rows ra·g .. of columns j..j+valid_j,
                        // this worker's share.
                        unsafe {
                            (dot.f)(k, mine.a.as_ptr().add(ra * g * k), k, b_rows, k, &mut out);
                            for ii in 0..ra.min(m - ra * g) {
                                for jj in 0..valid_j {
                                    *c_ptr.get().add((ra * g + ii) * n + j + jj) =
                                        out[ii * rb + jj];
                                }
                            }
                        }
                    }
                    j += rb;
                }
                barrier.wait();
                continue;
            }
            let mut jc = 0;
            while jc < n {
                let nc = NC.min(n - jc);
                let slivers = nc.div_ceil(nr);
                let mut pc = 0;
                while pc < k {
                    let kc = KC.min(k - pc);
                    let counter = next_phase();
                    // Pack B[jc.., pc..]: sliver s holds kc rows of nr columns (zero past N).
                    for s in (t..slivers).step_by(threads) {
                        // SAFETY: sliver s of the panel belongs to this worker in this phase.
                        let dst = unsafe {
                            std::slice::from_raw_parts_mut(pb.get().add(s * kc * nr), kc * nr)
                        };
                        let col = jc + s * nr;
                        // SAFETY: rows col.. of B (n of them in all) hold k elements from pc.
                        unsafe {
                            pack_sliver(b_ptr.get().add(col * k + pc), k, n - col, nr, kc, dst)
                        };
                    }
                    barrier.wait();
                    // Work items: (A block, range of slivers), contiguous per worker.
                    let blocks = m.div_ceil(mc);
                    let parts = (8 * threads).div_ceil(blocks).clamp(1, slivers);
                    let items = blocks * parts;
                    let mut packed_block = usize::MAX;
                    while let Some(item) =
                        Some(counter.fetch_add(1, Ordering::Relaxed)).filter(|&i| i < items)
                    {
                        let (block, part) = (item / parts, item % parts);
                        let ic = block * mc;
                        let mcur = mc.min(m - ic);
                        let a_slivers = mcur.div_ceil(mr);
                        if packed_block != block {
                            // Pack A[ic.., pc..]: sliver r holds kc columns of mr rows.
                            for r in 0..a_slivers {
                                let dst = &mut mine.a[r * kc * mr..(r + 1) * kc * mr];
                                let row = ic + r * mr;
                                // SAFETY: rows row.. of A (m of them in all) hold k elements
                                // from pc.
                                unsafe {
                                    pack_sliver(
                                        a_ptr.get().add(row * k + pc),
                                        k,
                                        m - row,
                                        mr,
                                        kc,
                                        dst,
                                    )
                                };
                            }
                            packed_block = block;
                        }
                        let range = chunk(slivers, parts, part, 1);
                        // Each A sliver (L1) against every B sliver of the range (L2).
                        for r in 0..a_slivers {
                            let row0 = ic + r * mr;
                            let mrows = mr.min(m - row0);
                            let as_ = mine.a[r * kc * mr..].as_ptr();
                            for s in range.clone() {
                                let col0 = jc + s * nr;
                                let ncur = nr.min(n - col0);
                                let bs = unsafe { pb.get().add(s * kc * nr) as *const T };
                                // SAFETY: the tile at (row0, col0) is this worker's: its item
                                // owns these rows of C for these slivers; edge tiles go
                                // through the local tile.
                                unsafe {
                                    if mrows == mr && ncur == nr {
                                        micro(
                                            kc,
                                            as_,
                                            bs,
                                            c_ptr.get().add(row0 * n + col0),
                                            n,
                                            pc > 0,
                                        );
                                    } else {
                                        micro(kc, as_, bs, mine.tile.as_mut_ptr(), nr, false);
                                        for ii in 0..mrows {
                                            for jj in 0..ncur {
                                                let p =
                                                    c_ptr.get().add((row0 + ii) * n + col0 + jj);
                                                let v = mine.tile[ii * nr + jj];
                                                *p = if pc > 0 { *p + v } else { v };
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    barrier.wait();
                    pc += kc;
                }
                jc += nc;
            }
        }
    })
}

/// The reference line: the `gemm` crate, on rayon's pool with `threads` threads.
fn reference<T: GemmElement>(threads: usize, shape: Shape, a: &[T], b: &[T], c: &mut [T]) {
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    // SAFETY: the strides describe a (m × k, row-major), bᵀ (k × n: element (kk, j) is
    // b[j·k + kk]) and c (m × n, row-major) within their slices; `read_dst` false, so c's
    // poisoned contents are never read.
    unsafe {
        ::gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            k as isize,
            1,
            T::default(),
            T::from_i64(1),
            false,
            false,
            false,
            ::gemm::Parallelism::Rayon(threads),
        )
    }
}

/// Which implementation a case runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Implementation {
    Ours,
    Reference,
}

/// A host GEMM case: A, B and C first-touched by the pool, and the implementation's state.
pub struct GemmCase<'p, T: GemmElement + Word> {
    pool: &'p Pool,
    compute: HostCompute,
    implementation: Implementation,
    shape: Shape,
    kernels: Blocking<T>,
    /// Whether our M > 1 product takes the dot-product path ([`DotTile::takes`]).
    dot_path: bool,
    a: Vec<T>,
    /// B in its copies, from the arena: the cases of one weight share it.
    b: Array<T>,
    c: Vec<T>,
    packed_b: Vec<T>,
    scratch: Vec<std::sync::Mutex<Scratch<T>>>,
    barrier: SpinBarrier,
    clock_mhz: Option<f64>,
    /// Copies of B in `b`, and the one the next launch reads ([`gemm::rotate_weights`]).
    copies: usize,
    next_copy: usize,
}

/// Prepares a host GEMM case of either implementation, on cores of `l2_bytes` of L2 each.
pub fn prepare<'p>(
    pool: &'p Pool,
    arena: &Arena,
    compute: HostCompute,
    l2_bytes: u64,
    case: &Case,
) -> Result<Box<dyn PreparedCase + 'p>> {
    match case.precision {
        Precision::F32 => Ok(Box::new(GemmCase::<f32>::new(
            pool, arena, compute, l2_bytes, case,
        )?)),
        Precision::F64 => Ok(Box::new(GemmCase::<f64>::new(
            pool, arena, compute, l2_bytes, case,
        )?)),
        _ => Err(Error::Usage(format!(
            "the host backend has no GEMM in {}",
            case.precision
        ))),
    }
}

impl<'p, T: GemmElement + Word> GemmCase<'p, T> {
    pub fn new(
        pool: &'p Pool,
        arena: &Arena,
        compute: HostCompute,
        l2_bytes: u64,
        case: &Case,
    ) -> Result<Self> {
        let implementation = match case.kernel.as_str() {
            gemm::HOST_OURS => Implementation::Ours,
            gemm::HOST_REFERENCE => Implementation::Reference,
            other => {
                return Err(Error::Usage(format!(
                    "the host backend has no GEMM implementation `{other}`"
                )))
            }
        };
        let shape = gemm::shape_of(case).map_err(Error::Usage)?;
        let fits = |x: u64| {
            usize::try_from(x)
                .map_err(|_| Error::Usage(format!("{} does not fit in memory", case.id())))
        };
        let (m, n, k) = (fits(shape.m)?, fits(shape.n)?, fits(shape.k)?);
        let elements = |rows: usize, cols: usize| {
            rows.checked_mul(cols)
                .ok_or_else(|| Error::Usage(format!("{} does not fit in memory", case.id())))
        };
        let (ak, bk, mn) = (elements(m, k)?, elements(n, k)?, elements(m, n)?);
        let kernels = blocking::<T>(compute.simd);
        let dot_path = implementation == Implementation::Ours
            && m > 1
            && kernels.dot.takes(m, k, std::mem::size_of::<T>(), l2_bytes);
        let a = first_touch(pool, ak, 64, |i| T::from_i64(gemm::input(0, i as u64)));
        // Every copy of B holds the same values; the product is checked against the first.
        let copies = usize::try_from(gemm::weight_copies(case))
            .unwrap_or(1)
            .max(1);
        let fill = Fill::GemmB {
            precision: T::PRECISION,
            n: shape.n,
            k: shape.k,
            layout: 0,
        };
        let b = arena
            .input_repeating(pool, elements(copies, bk)?, 64, bk, fill, |i| {
                T::from_i64(gemm::input(1, i as u64))
            })
            .ok_or_else(|| Error::Usage(format!("{}: B does not fit in memory", case.id())))?;
        let c = first_touch(pool, mn, 64, |_| T::nan());
        let (packed_b, scratch) = if implementation == Implementation::Ours && m > 1 && !dot_path {
            let panel = KC * NC.min(n).div_ceil(kernels.nr) * kernels.nr;
            let mc = (MC / kernels.mr).max(1) * kernels.mr;
            let scratch = (0..pool.threads())
                .map(|_| {
                    std::sync::Mutex::new(Scratch {
                        a: vec![T::default(); KC * mc],
                        tile: vec![T::default(); kernels.mr * kernels.nr],
                    })
                })
                .collect();
            (vec![T::default(); panel], scratch)
        } else {
            // The dot-product path pads A's rows, and B's last rows, to whole tiles; the
            // matrix-vector path (M = 1) and the reference need nothing.
            let (rows_a, rb) = (kernels.dot.padded_rows(m), kernels.dot.rows_b);
            let scratch = (0..pool.threads())
                .map(|_| {
                    std::sync::Mutex::new(Scratch {
                        a: vec![T::default(); if dot_path { rows_a * k } else { 0 }],
                        tile: vec![T::default(); if dot_path { rb * k } else { 0 }],
                    })
                })
                .collect();
            (Vec::new(), scratch)
        };
        Ok(GemmCase {
            pool,
            compute,
            implementation,
            shape,
            kernels,
            dot_path,
            a,
            b,
            c,
            packed_b,
            scratch,
            barrier: SpinBarrier::new(pool.threads()),
            clock_mhz: None,
            copies,
            next_copy: 0,
        })
    }
}

impl<T: GemmElement + Word> PreparedCase for GemmCase<'_, T> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let start = Instant::now();
        let first = self.next_copy;
        let ok = match self.implementation {
            Implementation::Ours => ours(
                self.pool,
                &self.barrier,
                self.kernels,
                self.dot_path,
                self.shape,
                &self.a,
                &self.b,
                first,
                &mut self.c,
                &mut self.packed_b,
                &self.scratch,
                reps,
            ),
            Implementation::Reference => {
                let bk = self.b.len() / self.copies;
                for r in 0..reps as usize {
                    let copy = (first + r) % self.copies;
                    reference(
                        self.pool.threads(),
                        self.shape,
                        &self.a,
                        &self.b[copy * bk..(copy + 1) * bk],
                        &mut self.c,
                    );
                }
                true
            }
        };
        self.next_copy = (first + reps as usize) % self.copies;
        let secs = start.elapsed().as_secs_f64();
        if !ok {
            return Err(Error::Internal("a host worker panicked in the GEMM".into()));
        }
        Ok(secs)
    }

    fn verify(&mut self) -> Result<Verdict> {
        let (k, n) = (self.shape.k, self.shape.n);
        // B, which the next cases of its weight read too, as it was written (see arena.rs)
        if let Some(why) = self.b.changed_on(self.pool, 64)? {
            return Ok(Verdict::invalid(format!("B {why}")));
        }
        let (a, b, c) = (&self.a, &self.b[..], &self.c);
        let int = |v: T| v.to_f64() as i64;
        Ok(gemm::check(
            T::PRECISION,
            self.shape,
            |i, kk| int(a[(i * k + kk) as usize]),
            |j, kk| int(b[(j * k + kk) as usize]),
            |i, j| c[(i * n + j) as usize].to_f64(),
        ))
    }

    fn launch_note(&self) -> String {
        let threads = self.pool.threads();
        let rotation = if self.copies > 1 {
            format!(
                ", B in {} copies, one per launch in turn (their {:.0} MiB at least the DRAM rule's 4 x the last-level cache)",
                self.copies,
                (self.b.len() * std::mem::size_of::<T>()) as f64 / (1u64 << 20) as f64
            )
        } else {
            String::new()
        };
        let note = match self.implementation {
            Implementation::Ours => format!(
                "{threads} pinned threads, {}, {}, {}",
                if self.shape.m == 1 {
                    format!(
                        "matrix-vector products, {GEMV_ROWS} rows of B at a time ({} lanes)",
                        self.kernels.name
                    )
                } else if self.dot_path {
                    format!(
                        "dot products, {} rows of A against {} of B at a time",
                        self.kernels.dot.rows_a, self.kernels.dot.rows_b
                    )
                } else {
                    format!(
                        "{} micro-kernel, KC {KC} MC {MC} NC {NC}",
                        self.kernels.name
                    )
                },
                self.compute.simd.name(),
                self.compute.theory_note()
            ),
            Implementation::Reference => format!(
                "gemm crate 0.19 on {threads} rayon threads, {}",
                self.compute.theory_note()
            ),
        };
        let largest = self.a.len().max(self.b.len()).max(self.c.len());
        note + &rotation + super::pool::huge_pages_note(largest * std::mem::size_of::<T>())
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        self.clock_mhz = clock::higher_clock(self.clock_mhz, clock::measure_pool_mhz(self.pool));
        self.clock_mhz
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        self.compute
            .peak_gflops(self.pool.threads(), T::PRECISION, clock_mhz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::compute::Simd;
    use crate::backend::host::pool::allowed_cpus;

    /// Every instruction set this CPU has, and the portable kernel, and the reference, compute
    /// the exact product on edge shapes: M, N and K of 1, 17 and 129, the small-M path and its
    /// boundary, and shapes that are not multiples of MR, NR, KC, MC or NC.
    #[test]
    fn every_kernel_computes_the_exact_product_on_edge_shapes() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let mut sets = vec![Simd::Portable];
        let detected = Simd::detect();
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            sets.push(Simd::Avx2);
        }
        if !sets.contains(&detected) {
            sets.push(detected);
        }
        let mut shapes = gemm::edge_shapes();
        shapes.extend([
            Shape::new(4, 9, 33),
            Shape::new(16, 9, 33),
            Shape::new(13, 7, 5),
            Shape::new(5, 33, 300),
            Shape::new(200, 70, 600),
            Shape::new(9, 2100, 20),
            Shape::new(1, 130, 515),
            // the dot-product tiles: one row past whole tiles of A (2 × 6 and 4 × 4), B's last
            // rows padded
            Shape::new(2, 13, 1030),
            Shape::new(3, 7, 529),
            Shape::new(6, 11, 2100),
            Shape::new(8, 5, 17),
            Shape::new(15, 19, 700),
            // AVX-512's f32 tile (8 × 3, B held): one row past a whole tile, N past whole
            // tiles of B
            Shape::new(9, 14, 530),
            Shape::new(24, 10, 47),
            // AVX2's dot-product path goes to M = 32 in f64 and 64 in f32, AVX-512's to 64 in
            // f32
            Shape::new(32, 11, 40),
            Shape::new(33, 13, 70),
            Shape::new(64, 7, 9),
            Shape::new(65, 9, 33),
        ]);
        for simd in sets {
            let compute = HostCompute { simd, fma: None };
            for p in PRECISIONS {
                for kernel in [gemm::HOST_OURS, gemm::HOST_REFERENCE] {
                    if kernel == gemm::HOST_REFERENCE && simd != detected {
                        continue;
                    }
                    // an L2 that holds any A, and one that holds none (AVX-512's f32 tile then
                    // leaves M > 16 to the packed path)
                    for (&shape, l2_bytes) in shapes.iter().flat_map(|s| [(s, u64::MAX), (s, 0)]) {
                        let case = gemm::case(kernel, p, shape);
                        let mut prepared =
                            prepare(&pool, &Arena::new(1 << 30), compute, l2_bytes, &case).unwrap();
                        prepared.run(2).unwrap();
                        let v = prepared.verify().unwrap();
                        assert!(
                            v.valid,
                            "{} {} (L2 {l2_bytes}): {}",
                            simd.name(),
                            case.id(),
                            v.detail
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn dot_tiles_fit_the_vector_registers() {
        // A tile holds rows_a × rows_b accumulators, the vectors of its shorter side and one of
        // the other: more than the set has spills accumulators in the inner loop (AVX2's old
        // 4 × 4 did)
        #[cfg(target_arch = "x86_64")]
        let sets = [(Simd::Avx512, 32), (Simd::Avx2, 16)];
        #[cfg(target_arch = "aarch64")]
        let sets = [(Simd::Neon, 32)];
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let sets: [(Simd, usize); 0] = [];
        for (simd, registers) in sets {
            let f32_tile = blocking::<f32>(simd).dot;
            let f64_tile = blocking::<f64>(simd).dot;
            assert!(f32_tile.max_m >= SMALL_M && f64_tile.max_m >= SMALL_M);
            for (rows, precision) in [
                ((f32_tile.rows_a, f32_tile.rows_b), "f32"),
                ((f64_tile.rows_a, f64_tile.rows_b), "f64"),
            ] {
                let held = rows.0 * rows.1 + rows.0.min(rows.1) + 1;
                assert!(
                    held <= registers,
                    "{} {precision}: {held} registers",
                    simd.name()
                );
                assert!(rows.0 * rows.1 <= DOT_OUT);
                assert!(rows.1 <= DOT_ROWS);
            }
        }
    }

    /// The dot-product path takes M to SMALL_M always, then to its tile's max_m, and where the
    /// tile asks for it only while A's padded rows and a tile's rows of B fit in L2.
    #[test]
    fn the_dot_path_keeps_a_in_l2_where_its_tile_asks() {
        let tile = DotTile::<f32> {
            rows_a: 8,
            rows_b: 3,
            max_m: 64,
            a_in_l2: true,
            f: portable_dot::<f32, 8, 3>,
        };
        assert!(tile.takes(SMALL_M, 1 << 20, 4, 0));
        // A's 64 rows of 4096 f32 and B's 3: 1072 KiB; 33 rows of A are padded to 40
        let row = 4096 * 4;
        assert!(tile.takes(64, 4096, 4, 67 * row));
        assert!(!tile.takes(64, 4096, 4, 67 * row - 1));
        assert!(tile.takes(33, 4096, 4, 43 * row));
        assert!(!tile.takes(33, 4096, 4, 43 * row - 1));
        assert!(!tile.takes(65, 1, 4, u64::MAX));
        let any_a = DotTile {
            a_in_l2: false,
            ..tile
        };
        assert!(any_a.takes(64, 1 << 20, 4, 0));
        assert!(!any_a.takes(65, 1, 4, u64::MAX));
    }

    /// `case` in f32, prepared with an arena of its own and the default L2.
    fn f32_case<'p>(pool: &'p Pool, compute: HostCompute, case: &Case) -> GemmCase<'p, f32> {
        GemmCase::<f32>::new(pool, &Arena::new(1 << 30), compute, DEFAULT_L2_BYTES, case).unwrap()
    }

    /// A decode-step case planned with copies of B reads them in turn, one per launch, in both
    /// implementations and on each of our paths (matrix-vector, dot products, packed): a wrong
    /// element planted in the second copy shows only after the launches that read it last.
    #[test]
    fn launches_rotate_through_the_copies_of_b() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let compute = HostCompute::detect();
        for kernel in [gemm::HOST_OURS, gemm::HOST_REFERENCE] {
            for shape in [
                Shape::new(1, 37, 70),
                Shape::new(5, 37, 70),
                Shape::new(40, 37, 70),
            ] {
                let weight = gemm::weight_bytes(Precision::F32, shape);
                let mut cases = [gemm::case(kernel, Precision::F32, shape)];
                let dram = gemm::matrix_bytes(Precision::F32, shape) + 2 * weight;
                gemm::rotate_weights(&mut cases, 64, dram, u64::MAX);
                assert_eq!(gemm::weight_copies(&cases[0]), 3, "{}", cases[0].id());
                let mut prepared = f32_case(&pool, compute, &cases[0]);
                assert!(prepared.launch_note().contains("B in 3 copies"));
                let bk = 37 * 70;
                prepared.b[bk + 3 * 70 + 9] += 1.0; // copy 1, B[3][9]
                                                    // (said to hold other values, so that the product shows which copy a launch
                                                    // read, not the digest that B changed)
                prepared.b.taint();
                let mut after = |reps: u32| {
                    prepared.run(reps).unwrap();
                    prepared.verify().unwrap()
                };
                let id = cases[0].id();
                assert!(after(1).valid, "{id}: copy 0");
                let v = after(1);
                assert!(
                    !v.valid && v.detail.contains("][3]"),
                    "{id}: copy 1: {}",
                    v.detail
                );
                assert!(after(1).valid, "{id}: copy 2");
                assert!(!after(2).valid, "{id}: copies 0 and 1");
                assert!(after(4).valid, "{id}: copies 2, 0, 1, 2");
            }
        }
        // one element of B changed and the array still said to hold its fill: whichever copy
        // the launches read, the digest of a B of the case's own sees it, and the guard on a
        // B from the arena (4 MiB, where guards can be had)
        for (shape, how) in [
            (Shape::new(5, 37, 70), "digest"),
            (
                Shape::new(5, 1024, 1024),
                crate::backend::host::guard::CAUGHT_BY,
            ),
        ] {
            let case = gemm::case(gemm::HOST_OURS, Precision::F32, shape);
            let mut prepared = f32_case(&pool, compute, &case);
            prepared.run(1).unwrap();
            assert!(prepared.verify().unwrap().valid, "{}", case.id());
            let last = prepared.b.len() - 1;
            prepared.b[last] += 1.0;
            prepared.run(1).unwrap();
            let v = prepared.verify().unwrap();
            crate::backend::host::guard::assert_caught(&v, how, &case.id());
        }
    }

    /// An unrun case is poison, and a planted error in the packed path is caught.
    #[test]
    fn an_unrun_or_wrong_product_is_invalid() {
        let pool = Pool::new(vec![allowed_cpus()[0]]);
        let compute = HostCompute::detect();
        let case = gemm::case(gemm::HOST_OURS, Precision::F32, Shape::new(40, 33, 70));
        let mut prepared = f32_case(&pool, compute, &case);
        assert!(!prepared.verify().unwrap().valid);
        prepared.run(1).unwrap();
        assert!(prepared.verify().unwrap().valid);
        prepared.c[33 * 7 + 5] += 1.0;
        let v = prepared.verify().unwrap();
        assert!(!v.valid && v.detail.contains("C[7][5]"), "{}", v.detail);
        let other = gemm::case("blas", Precision::F32, Shape::square(8));
        assert!(prepare(
            &pool,
            &Arena::new(1 << 30),
            compute,
            DEFAULT_L2_BYTES,
            &other
        )
        .is_err());
    }

    /// NEON is part of every AArch64 target: an aarch64 build runs the NEON GEMM kernels (this
    /// test runs under qemu in .ci/aarch64).
    #[test]
    #[cfg(target_arch = "aarch64")]
    fn aarch64_gemm_runs_neon() {
        assert_eq!(blocking::<f32>(Simd::Neon).name, "NEON 8x8");
        assert_eq!(blocking::<f64>(Simd::Neon).name, "NEON 8x4");
    }
}
