//! The host's bf16 GEMM on its matrix unit: `gemm/amx/bf16.f32/MxNxK`, `C = A · Bᵀ` with A
//! (M × K) and B (N × K) in bf16 and C (M × N) in f32, through Intel AMX's `tdpbf16ps`
//! ([`super::tensor`] measures the unit's peak and says when it is there).
//!
//! # Layout
//!
//! Every operand of a tile product is a tile of 16 rows × 64 bytes ([`tensor::ROWS`],
//! [`tensor::ROW_BYTES`]):
//! - an A tile is 16 rows of A × 32 consecutive k;
//! - a B tile holds 16 columns of Bᵀ (rows of B) × 32 k in Intel's "VNNI" layout: its row `r`
//!   holds, for each of the 16 columns in turn, the pair k = 2r, 2r + 1 side by side;
//! - a C tile is 16 × 16 f32.
//!
//! B is the weight. It is packed into those tiles once, when the case is prepared, as a serving
//! library packs its weights when it loads them; each 16-column strip of B is its tiles along K
//! one after another (1 KiB each), so a strip streams from memory. A is the activation: every
//! launch packs it into tiles first (its rows split among the workers), then the product runs.
//! Both are padded with zeros to whole tiles: M to 16 or 32 rows, N to 64 columns, K to 32.
//!
//! # Blocking
//!
//! The micro-kernel keeps four C tiles in `tmm0`…`tmm3` and runs over K in steps of one tile:
//! - for M > [`SMALL_M`], 2 × 2 C tiles (32 × 32), two A tiles and two B tiles per step
//!   (`tmm4`…`tmm7`), four products for four tile loads;
//! - for a decode step (M ≤ [`SMALL_M`], one row of A tiles), 1 × 4 C tiles (16 × 64): one A
//!   tile and four B strips streaming at once, four products for five loads.
//!
//! Around it, the loops of BLIS (as in [`super::gemm`]) with A already packed: a work item
//! is a block of [`MC_TILES`] × 16 rows by [`NC_TILES`] × 16 columns of C (smaller where that
//! gives under [`ITEMS_PER_WORKER`] items per worker), claimed by the workers from a shared
//! counter; within it, for each [`KC_TILES`] × 32 of K, for each 32 (or 64) columns, for each 32
//! (or 16) rows, one micro-kernel call: A's block of one K block (1 MiB) and B's strips (128 KiB)
//! stay in L2. C tiles load and store straight from C where they are whole, and through a tile
//! of the worker's own where they reach past an edge. A decode step runs the whole of K in one
//! block: B is read once, from memory.
//!
//! **What bounds it: the feed of tiles.** A tile product takes 16 cycles; each step of the 2 × 2
//! micro-kernel loads 4 KiB of tiles for four products, 64 bytes a cycle at the unit's peak,
//! which is all an L2 can give. Measured on this project's 2-vCPU VM (Intel Xeon with AMX,
//! 2026-12-03, one core, a C copy of the micro-kernel on tiles of 1.0): 56 % of the peak with
//! A's and B's tiles in L1, 65 % on zeros (the unit's rate depends on the data), 37 % with
//! operands the size of one work item (A 1 MiB, B 2 MiB) streaming from L2 and beyond. (64
//! `tileloadd` into one register took 1.06–1.12 µs, about 70 cycles each, against 0.31–0.36 µs
//! for 64 products: loads into one tile register wait on each other, which the micro-kernel's
//! alternation hides.) With eight tile registers the 2 × 2 micro-kernel's one load per product is
//! the best reuse there is, so a large product runs at a fraction of the unit's peak, and its
//! row says so (`%theory`).
//!
//! The blocks were chosen on that VM, one core, 1024 × 1024 × 4096, in rounds: K blocks of 512
//! with 512 × 1024 items gave 0.76 TFLOP/s, of 2048 with 256 × 512 items 0.92–0.98 (fewer loads
//! and stores of C), of 128 0.32; larger A blocks than L2 fell back (0.68–0.76). Tried again
//! on 2026-12-03 (2 cores, 4 rounds in rotating order, 2048³, 4096³, 256 × 4096 × 4096 and
//! 1024 × 14336 × 4096), against these blocks: K blocks of 512, so that B's strips stay in L1,
//! ran at 0.68× (C's tiles loaded and stored from C four times as often); smaller work items, so
//! that A and B stay in L2, at 0.79–1.00× (128 × 256, 128 × 128 and 256 × 256). Without the
//! per-launch packing of A and without C's stores (both checked invalid, timed only), 2048³ ran
//! 1.2× faster: the micro-kernel's feed is the bound, not the work around it.
//!
//! **Validation** as every GEMM's ([`gemm::check`]): the inputs are small integers, exact in
//! bf16, and every partial sum stays under 2^24, so C must equal the exact product; it is
//! checked against the inputs' own generator, not against the packed tiles, so a packing or a
//! tile layout gone wrong gives an invalid row.
//!
//! **Theory**: the unit's peak ([`tensor::theory_gflops`]) at the clock the cores ran at.
//! There is no reference line: the `gemm` crate has no bf16 kernel, so the row's ratio is blank.
//!
//! This module must not print. `unsafe` here is limited to the AMX instructions (run after
//! [`tensor::available`] said yes) on tiles inside the packed buffers, and to raw pointers
//! into buffers whose parts each worker owns.

use super::arena::{Arena, Array, Fill};
use super::pool::SpinBarrier;
use super::pool::{chunk, first_touch, first_touch_aligned, AlignedArray, Pool, SharedPtr};
use super::tensor;
use super::{clock, PreparedCase};
use crate::cases::gemm::{self, Shape};
use crate::cases::{Case, Precision, Verdict};
use crate::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The precision of the host's AMX GEMM: bf16 inputs, f32 accumulation and output.
pub const PRECISION: Precision = Precision::Bf16F32;
/// The largest M run as a decode step (1 × 4 C tiles, K in one block).
pub const SMALL_M: usize = 16;
/// Rows of a tile.
const TILE_ROWS: usize = tensor::ROWS;
/// bf16 elements of K in one A tile row (64 bytes).
const TILE_K: usize = 32;
/// bf16 elements of one tile (1 KiB).
const TILE_ELEMENTS: usize = 512;
/// K tiles of one block (2048 of K): C's tiles are loaded and stored once per block.
pub const KC_TILES: usize = 64;
/// Row tiles of a work item (256 rows): A's block of one K block, 1 MiB, in L2.
pub const MC_TILES: usize = 16;
/// Column tiles of a work item (512 columns).
pub const NC_TILES: usize = 32;
/// Work items per worker the blocking aims for, at the least.
pub const ITEMS_PER_WORKER: usize = 8;

/// bf16 bits of the small integer `v` (exact: |v| ≤ 256, so the truncation rounds nothing).
/// Not [`gemm::input_bits16`]: its rounding conversion took 3.4–3.7 ns an element against
/// 1.5 here (2026-12-03, this project's VM), and a case packs a B of up to 2.3·10^8 of them
/// (28672 × 8192; the copies of a rotating B are copied from the first).
fn bf16(v: i64) -> u16 {
    ((v as f32).to_bits() >> 16) as u16
}

/// f32 words of a worker's scratch: the micro-kernel's four C tiles, where they reach past C.
const SCRATCH_WORDS: usize = 4 * TILE_ROWS * TILE_ROWS;

/// The [`Fill::GemmB`] layout of packed B: AMX tiles (16 rows of 32 bf16 pairs), which depend
/// on N and K only (`Layout::b_at`).
pub const AMX_TILES: u64 = 1;

/// Where everything of one shape lies: tiles of A (`mt` along M), of B (`nt` along N), of K
/// (`kt`), the micro-kernel's C tiles (`mr` × `nr`), and the work items' blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    m: usize,
    n: usize,
    k: usize,
    mt: usize,
    nt: usize,
    kt: usize,
    mr: usize,
    nr: usize,
    /// K tiles of one block.
    kc: usize,
    /// Row and column tiles of one work item.
    mc: usize,
    nc: usize,
}

impl Layout {
    fn new(m: usize, n: usize, k: usize, threads: usize) -> Layout {
        let decode = m <= SMALL_M;
        let (mr, nr) = if decode { (1, 4) } else { (2, 2) };
        let (mt, nt, kt) = (
            m.div_ceil(TILE_ROWS).next_multiple_of(mr),
            n.div_ceil(TILE_ROWS).next_multiple_of(4),
            k.div_ceil(TILE_K).max(1),
        );
        let kc = if decode { kt } else { KC_TILES.min(kt) };
        let (mut mc, mut nc) = if decode {
            (mt, nt)
        } else {
            (MC_TILES.min(mt), NC_TILES.min(nt))
        };
        let items = |mc: usize, nc: usize| mt.div_ceil(mc) * nt.div_ceil(nc);
        let want = ITEMS_PER_WORKER * threads.max(1);
        while items(mc, nc) < want && nc > nr {
            nc = (nc / 2 / nr).max(1) * nr;
        }
        while items(mc, nc) < want && mc > mr {
            mc = (mc / 2 / mr).max(1) * mr;
        }
        Layout {
            m,
            n,
            k,
            mt,
            nt,
            kt,
            mr,
            nr,
            kc,
            mc,
            nc,
        }
    }

    fn items(&self) -> usize {
        self.mt.div_ceil(self.mc) * self.nt.div_ceil(self.nc)
    }

    /// Elements of packed A and of one packed copy of B.
    fn a_len(&self) -> usize {
        self.mt * self.kt * TILE_ELEMENTS
    }
    fn b_len(&self) -> usize {
        self.nt * self.kt * TILE_ELEMENTS
    }

    /// Where A's element (row `i`, `k`) lies in packed A: tile (i / 16, k / 32), row i % 16,
    /// element k % 32.
    fn a_index(&self, i: usize, k: usize) -> usize {
        ((i / TILE_ROWS) * self.kt + k / TILE_K) * TILE_ELEMENTS
            + (i % TILE_ROWS) * TILE_K
            + k % TILE_K
    }

    #[cfg(test)]
    /// Where B's element (row `j`, `k`) lies in a packed copy of B: tile (j / 16, k / 32), its
    /// row (k % 32) / 2, word j % 16, element k % 2.
    fn b_index(&self, j: usize, k: usize) -> usize {
        ((j / TILE_ROWS) * self.kt + k / TILE_K) * TILE_ELEMENTS
            + (k % TILE_K / 2) * TILE_K
            + (j % TILE_ROWS) * 2
            + k % 2
    }

    /// The (row of B, k) element `i` of a packed copy of B holds: the inverse of
    /// [`Layout::b_index`] (past N or K for padding).
    fn b_at(&self, i: usize) -> (usize, usize) {
        let (tile, within) = (i / TILE_ELEMENTS, i % TILE_ELEMENTS);
        let (jt, kb) = (tile / self.kt, tile % self.kt);
        let (r, word, e) = (within / TILE_K, within % TILE_K / 2, within % 2);
        (jt * TILE_ROWS + word, kb * TILE_K + 2 * r + e)
    }
}

// ---------------------------------------------------------------------------------------------
// The AMX instructions

#[cfg(target_arch = "x86_64")]
mod amx {
    use super::TILE_ELEMENTS;
    use std::arch::asm;

    /// Configures eight tiles of 16 rows × 64 bytes on this thread.
    ///
    /// # Safety
    /// [`super::tensor::available`] returned `Ok` in this process.
    pub unsafe fn configure() {
        let cfg = super::tensor::tile_config();
        asm!("ldtilecfg [{cfg}]", cfg = in(reg) cfg.as_ptr(), options(nostack, readonly));
    }

    /// Releases this thread's tiles.
    ///
    /// # Safety
    /// As [`configure`].
    pub unsafe fn release() {
        asm!("tilerelease", options(nostack, nomem));
    }

    /// Zeroes C tile `t` (0…3).
    ///
    /// # Safety
    /// The tiles are configured.
    pub unsafe fn zero(t: usize) {
        match t {
            0 => asm!("tilezero tmm0", options(nostack, nomem)),
            1 => asm!("tilezero tmm1", options(nostack, nomem)),
            2 => asm!("tilezero tmm2", options(nostack, nomem)),
            _ => asm!("tilezero tmm3", options(nostack, nomem)),
        }
    }

    /// Loads C tile `t` from 16 rows of 16 f32 at `p`, `stride` bytes apart.
    ///
    /// # Safety
    /// The tiles are configured; the 16 rows lie in one allocation.
    pub unsafe fn load(t: usize, p: *const f32, stride: usize) {
        macro_rules! ld {
            ($r:literal) => {
                asm!(concat!("tileloadd ", $r, ", [{p} + {s}*1]"), p = in(reg) p, s = in(reg) stride,
                    options(nostack, readonly))
            };
        }
        match t {
            0 => ld!("tmm0"),
            1 => ld!("tmm1"),
            2 => ld!("tmm2"),
            _ => ld!("tmm3"),
        }
    }

    /// Stores C tile `t` to 16 rows of 16 f32 at `p`, `stride` bytes apart.
    ///
    /// # Safety
    /// As [`load`], and the rows are the caller's to write.
    pub unsafe fn store(t: usize, p: *mut f32, stride: usize) {
        macro_rules! st {
            ($r:literal) => {
                asm!(concat!("tilestored [{p} + {s}*1], ", $r), p = in(reg) p, s = in(reg) stride,
                    options(nostack))
            };
        }
        match t {
            0 => st!("tmm0"),
            1 => st!("tmm1"),
            2 => st!("tmm2"),
            _ => st!("tmm3"),
        }
    }

    /// `tiles` steps of the 2 × 2 micro-kernel: C tile 2i + j += A tile i · B tile j, the A and
    /// B tiles of each step 1 KiB after the last.
    ///
    /// # Safety
    /// The tiles are configured; each pointer starts `tiles` packed tiles.
    pub unsafe fn steps_2x2(
        a0: *const u16,
        a1: *const u16,
        b0: *const u16,
        b1: *const u16,
        tiles: usize,
    ) {
        if tiles == 0 {
            return;
        }
        asm!(
            "2:",
            "tileloadd tmm4, [{a0} + {s}*1]",
            "tileloadd tmm6, [{b0} + {s}*1]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tileloadd tmm7, [{b1} + {s}*1]",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tileloadd tmm5, [{a1} + {s}*1]",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            "add {a0}, {step}",
            "add {a1}, {step}",
            "add {b0}, {step}",
            "add {b1}, {step}",
            "dec {n}",
            "jnz 2b",
            a0 = inout(reg) a0 => _,
            a1 = inout(reg) a1 => _,
            b0 = inout(reg) b0 => _,
            b1 = inout(reg) b1 => _,
            n = inout(reg) tiles => _,
            s = in(reg) 64usize,
            step = const TILE_ELEMENTS * 2,
            options(nostack, readonly),
        );
    }

    /// `tiles` steps of the 1 × 4 micro-kernel: C tile j += A tile · B tile j.
    ///
    /// # Safety
    /// As [`steps_2x2`].
    pub unsafe fn steps_1x4(a: *const u16, b: [*const u16; 4], tiles: usize) {
        if tiles == 0 {
            return;
        }
        asm!(
            "2:",
            "tileloadd tmm4, [{a} + {s}*1]",
            "tileloadd tmm5, [{b0} + {s}*1]",
            "tdpbf16ps tmm0, tmm4, tmm5",
            "tileloadd tmm6, [{b1} + {s}*1]",
            "tdpbf16ps tmm1, tmm4, tmm6",
            "tileloadd tmm7, [{b2} + {s}*1]",
            "tdpbf16ps tmm2, tmm4, tmm7",
            "tileloadd tmm5, [{b3} + {s}*1]",
            "tdpbf16ps tmm3, tmm4, tmm5",
            "add {a}, {step}",
            "add {b0}, {step}",
            "add {b1}, {step}",
            "add {b2}, {step}",
            "add {b3}, {step}",
            "dec {n}",
            "jnz 2b",
            a = inout(reg) a => _,
            b0 = inout(reg) b[0] => _,
            b1 = inout(reg) b[1] => _,
            b2 = inout(reg) b[2] => _,
            b3 = inout(reg) b[3] => _,
            n = inout(reg) tiles => _,
            s = in(reg) 64usize,
            step = const TILE_ELEMENTS * 2,
            options(nostack, readonly),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod amx {
    //! No AMX: the plan has no AMX case off x86-64, and these are never reached.
    pub unsafe fn configure() {
        unreachable!("AMX cases are planned on x86-64 only")
    }
    pub unsafe fn release() {}
    pub unsafe fn zero(_: usize) {}
    pub unsafe fn load(_: usize, _: *const f32, _: usize) {}
    pub unsafe fn store(_: usize, _: *mut f32, _: usize) {}
    pub unsafe fn steps_2x2(_: *const u16, _: *const u16, _: *const u16, _: *const u16, _: usize) {}
    pub unsafe fn steps_1x4(_: *const u16, _: [*const u16; 4], _: usize) {}
}

// ---------------------------------------------------------------------------------------------
// The product

/// Packs rows `rows` of A (row-major, K contiguous) into packed A's tiles (their padding, zero,
/// is never written).
///
/// # Safety
/// `packed` holds [`Layout::a_len`] elements, and no one else writes these rows' tiles.
unsafe fn pack_a(l: &Layout, a: &[u16], rows: std::ops::Range<usize>, packed: *mut u16) {
    for i in rows {
        let row = &a[i * l.k..(i + 1) * l.k];
        for (kb, part) in row.chunks(TILE_K).enumerate() {
            let at = l.a_index(i, kb * TILE_K);
            std::ptr::copy_nonoverlapping(part.as_ptr(), packed.add(at), part.len());
        }
    }
}

/// One micro-kernel call: the C tiles from row tile `mb` and column tile `jb` on, over K tiles
/// `pc .. pc + kn`, starting from zero where `pc` is 0 and from C where it is not.
///
/// # Safety
/// The tiles are configured; `a` is packed A, `b` one packed copy of B, `c` C (M × N), and
/// `scratch` [`SCRATCH_WORDS`] of this worker's own; these C tiles are this worker's to
/// write.
unsafe fn block(
    l: &Layout,
    a: *const u16,
    b: *const u16,
    c: *mut f32,
    scratch: *mut f32,
    (mb, jb): (usize, usize),
    (pc, kn): (usize, usize),
) {
    const TILE_F32: usize = TILE_ROWS * TILE_ROWS;
    // per C tile: its row and column in C, the rows and columns of it inside C, and whether it
    // goes through the scratch tile
    let tile = |t: usize| {
        let (row, col) = ((mb + t / l.nr) * TILE_ROWS, (jb + t % l.nr) * TILE_ROWS);
        let rows = l.m.saturating_sub(row).min(TILE_ROWS);
        let cols = l.n.saturating_sub(col).min(TILE_ROWS);
        (row, col, rows, cols, rows < TILE_ROWS || cols < TILE_ROWS)
    };
    let place = |t: usize| {
        let (row, col, _, _, partial) = tile(t);
        if partial {
            (scratch.add(t * TILE_F32), TILE_ROWS * 4)
        } else {
            (c.add(row * l.n + col), l.n * 4)
        }
    };
    for t in 0..4 {
        if pc == 0 {
            amx::zero(t);
            continue;
        }
        let (row, col, rows, cols, partial) = tile(t);
        let (p, stride) = place(t);
        if partial {
            // what the earlier K blocks left in C's part, zeros past it
            std::ptr::write_bytes(p, 0, TILE_F32);
            for r in 0..rows {
                std::ptr::copy_nonoverlapping(
                    c.add((row + r) * l.n + col),
                    p.add(r * TILE_ROWS),
                    cols,
                );
            }
        }
        amx::load(t, p, stride);
    }
    let a0 = a.add((mb * l.kt + pc) * TILE_ELEMENTS);
    let strip = |j: usize| b.add(((jb + j) * l.kt + pc) * TILE_ELEMENTS);
    if l.mr == 2 {
        amx::steps_2x2(a0, a0.add(l.kt * TILE_ELEMENTS), strip(0), strip(1), kn);
    } else {
        amx::steps_1x4(a0, [strip(0), strip(1), strip(2), strip(3)], kn);
    }
    for t in 0..4 {
        let (row, col, rows, cols, partial) = tile(t);
        let (p, stride) = place(t);
        amx::store(t, p, stride);
        if partial {
            for r in 0..rows {
                std::ptr::copy_nonoverlapping(
                    p.add(r * TILE_ROWS),
                    c.add((row + r) * l.n + col),
                    cols,
                );
            }
        }
    }
}

/// `reps` products into `c`, launch `r` reading copy `(first + r) % copies` of packed B: every
/// worker packs its share of A's rows, then claims work items ([`Layout`]) until none is left.
/// Returns false if a worker panicked.
#[allow(clippy::too_many_arguments)]
fn product(
    pool: &Pool,
    barrier: &SpinBarrier,
    l: &Layout,
    a: &[u16],
    packed_a: &mut [u16],
    packed_b: &[u16],
    first: usize,
    c: &mut [f32],
    scratch: &mut [f32],
    reps: u32,
) -> bool {
    let threads = pool.threads();
    let copies = (packed_b.len() / l.b_len()).max(1);
    let (pa, pb) = (
        SharedPtr(packed_a.as_mut_ptr()),
        SharedPtr(packed_b.as_ptr() as *mut u16),
    );
    let (cp, sp) = (SharedPtr(c.as_mut_ptr()), SharedPtr(scratch.as_mut_ptr()));
    // Claimed as in host::gemm: product q claims from counters[q % 2], and worker 0 clears the
    // other one while every worker is between the barriers that end q − 1 and start q + 1.
    let counters = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let (jn, items) = (l.nt.div_ceil(l.nc), l.items());
    pool.run(|t| {
        // SAFETY: the plan has AMX cases only where `available` said yes.
        unsafe { amx::configure() };
        for rep in 0..reps as usize {
            // SAFETY: worker t packs its own rows' tiles (whole tiles: rows in 16s).
            unsafe { pack_a(l, a, chunk(l.m, threads, t, TILE_ROWS), pa.get()) };
            let counter = &counters[rep % 2];
            if t == 0 {
                counters[(rep + 1) % 2].store(0, Ordering::Relaxed);
            }
            barrier.wait();
            // SAFETY: packed B holds `copies` copies.
            let b = unsafe { pb.get().add((first + rep) % copies * l.b_len()) };
            loop {
                let item = counter.fetch_add(1, Ordering::Relaxed);
                if item >= items {
                    break;
                }
                let (ic, jc) = (item / jn * l.mc, item % jn * l.nc);
                let (m_end, n_end) = ((ic + l.mc).min(l.mt), (jc + l.nc).min(l.nt));
                for pc in (0..l.kt).step_by(l.kc) {
                    let kn = l.kc.min(l.kt - pc);
                    for jb in (jc..n_end).step_by(l.nr) {
                        for mb in (ic..m_end).step_by(l.mr) {
                            // SAFETY: this item's C tiles are this worker's; scratch t is.
                            unsafe {
                                block(
                                    l,
                                    pa.get(),
                                    b,
                                    cp.get(),
                                    sp.get().add(t * SCRATCH_WORDS),
                                    (mb, jb),
                                    (pc, kn),
                                )
                            };
                        }
                    }
                }
            }
            // the next launch packs A again: every worker must be done reading it
            barrier.wait();
        }
        // SAFETY: configured above.
        unsafe { amx::release() };
    })
}

// ---------------------------------------------------------------------------------------------
// The case

/// A host AMX GEMM case: A (row-major) and its packed tiles, B packed once per copy, C.
pub struct AmxGemmCase<'p> {
    pool: &'p Pool,
    shape: Shape,
    layout: Layout,
    a: Vec<u16>,
    packed_a: AlignedArray<u16>,
    /// Packed B in its copies, from the arena: the cases of one shape share it.
    packed_b: Array<u16>,
    c: Vec<f32>,
    scratch: AlignedArray<f32>,
    barrier: SpinBarrier,
    copies: usize,
    next_copy: usize,
    clock_mhz: Option<f64>,
}

/// Prepares a host AMX GEMM case.
pub fn prepare<'p>(
    pool: &'p Pool,
    arena: &Arena,
    case: &Case,
) -> Result<Box<dyn PreparedCase + 'p>> {
    Ok(Box::new(AmxGemmCase::new(pool, arena, case)?))
}

impl<'p> AmxGemmCase<'p> {
    pub fn new(pool: &'p Pool, arena: &Arena, case: &Case) -> Result<Self> {
        if case.kernel != gemm::HOST_AMX || case.precision != PRECISION {
            return Err(Error::Usage(format!(
                "{} is not an AMX GEMM case (gemm/{}/{PRECISION}/MxNxK)",
                case.id(),
                gemm::HOST_AMX
            )));
        }
        tensor::available(PRECISION).map_err(|e| Error::Usage(format!("{}: {e}", case.id())))?;
        let shape = gemm::shape_of(case).map_err(Error::Usage)?;
        let too_big = || Error::Usage(format!("{} does not fit in memory", case.id()));
        let dim = |x: u64| usize::try_from(x).map_err(|_| too_big());
        let (m, n, k) = (dim(shape.m)?, dim(shape.n)?, dim(shape.k)?);
        let l = Layout::new(m, n, k, pool.threads());
        let copies = usize::try_from(gemm::weight_copies(case))
            .unwrap_or(1)
            .max(1);
        let (mk, mn) = (
            m.checked_mul(k).ok_or_else(too_big)?,
            m.checked_mul(n).ok_or_else(too_big)?,
        );
        let b_total = l.b_len().checked_mul(copies).ok_or_else(too_big)?;
        let a = first_touch(pool, mk, 64, |i| bf16(gemm::input(0, i as u64)));
        let packed_a = first_touch_aligned(pool, l.a_len(), TILE_ELEMENTS, 64, |_| 0u16)
            .ok_or_else(too_big)?;
        let b_len = l.b_len();
        // the tiles of B depend on N and K alone (not on M, which sets only the blocking of
        // the work), so every point of a weight's batch sweep reads the same packed copies
        let fill = Fill::GemmB {
            precision: PRECISION,
            n: shape.n,
            k: shape.k,
            layout: AMX_TILES,
        };
        let packed_b = arena
            .input_repeating(pool, b_total, TILE_ELEMENTS, b_len, fill, |i| {
                let (j, kk) = l.b_at(i);
                if j < n && kk < k {
                    bf16(gemm::b_value(shape, j as u64, kk as u64))
                } else {
                    0
                }
            })
            .ok_or_else(too_big)?;
        let c = first_touch(pool, mn, 64, |_| f32::NAN);
        let scratch = first_touch_aligned(
            pool,
            pool.threads() * SCRATCH_WORDS,
            SCRATCH_WORDS,
            64,
            |_| 0f32,
        )
        .ok_or_else(too_big)?;
        Ok(AmxGemmCase {
            pool,
            shape,
            layout: l,
            a,
            packed_a,
            packed_b,
            c,
            scratch,
            barrier: SpinBarrier::new(pool.threads()),
            copies,
            next_copy: 0,
            clock_mhz: None,
        })
    }
}

impl PreparedCase for AmxGemmCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let first = self.next_copy;
        let start = Instant::now();
        let ok = product(
            self.pool,
            &self.barrier,
            &self.layout,
            &self.a,
            &mut self.packed_a,
            &self.packed_b,
            first,
            &mut self.c,
            &mut self.scratch,
            reps,
        );
        let secs = start.elapsed().as_secs_f64();
        self.next_copy = (first + reps as usize) % self.copies;
        if !ok {
            return Err(Error::Internal(
                "a host worker panicked in the AMX GEMM".into(),
            ));
        }
        Ok(secs)
    }

    fn verify(&mut self) -> Result<Verdict> {
        let (shape, c) = (self.shape, &self.c);
        let verdict = gemm::check(
            PRECISION,
            shape,
            |i, kk| gemm::a_value(shape, i, kk),
            |j, kk| gemm::b_value(shape, j, kk),
            |i, j| f64::from(c[(i * shape.n + j) as usize]),
        );
        // packed B, which the next cases of its shape read too, as it was written (arena.rs)
        let changed = self.packed_b.changed_on(self.pool, TILE_ELEMENTS)?;
        Ok(verdict.and(Verdict::unless(
            changed.map(|why| format!("packed B {why}")),
        )))
    }

    fn launch_note(&self) -> String {
        let l = &self.layout;
        let kernel = if l.mr == 1 {
            "1 x 4 C tiles per step (a decode step: K in one block, four strips of B streaming)"
                .to_string()
        } else {
            format!(
                "2 x 2 C tiles per step, K in blocks of {}, items of {} x {} rows and columns",
                l.kc * TILE_K,
                l.mc * TILE_ROWS,
                l.nc * TILE_ROWS
            )
        };
        let rotation = if self.copies > 1 {
            format!(
                ", B in {} copies, one per launch in turn (their {:.0} MiB at least the DRAM \
                 rule's 4 x the last-level cache)",
                self.copies,
                (self.packed_b.len() * 2) as f64 / (1u64 << 20) as f64
            )
        } else {
            String::new()
        };
        format!(
            "{} pinned threads, AMX tdpbf16ps, {kernel}; B (the weight) packed into AMX tiles \
             once when prepared, A into tiles every launch (counted in the time){rotation}{}",
            self.pool.threads(),
            // the largest array: bf16 A or packed B, or f32 C
            super::pool::huge_pages_note(
                (2 * self.a.len().max(self.packed_b.len())).max(4 * self.c.len())
            )
        )
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        self.clock_mhz = clock::higher_clock(self.clock_mhz, clock::measure_pool_mhz(self.pool));
        self.clock_mhz
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        Some(tensor::theory_gflops(
            PRECISION,
            self.pool.threads(),
            clock_mhz,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::pool::allowed_cpus;

    #[test]
    fn packed_b_holds_each_element_once_in_the_vnni_layout() {
        for (m, n, k) in [(1, 17, 33), (40, 64, 1100), (16, 4096, 32)] {
            let l = Layout::new(m, n, k, 2);
            let mut seen = vec![false; l.b_len()];
            for j in 0..l.nt * TILE_ROWS {
                for kk in 0..l.kt * TILE_K {
                    let i = l.b_index(j, kk);
                    assert!(!seen[i], "({j}, {kk}) shares element {i}");
                    seen[i] = true;
                    assert_eq!(l.b_at(i), (j, kk));
                }
            }
            assert!(
                seen.iter().all(|&s| s),
                "{m}x{n}x{k}: every element holds one (j, k)"
            );
            // Intel's layout, written out: row r of a tile holds k = 2r and 2r + 1 of each of
            // its 16 columns in turn, 64 bytes a row, 1 KiB a tile, a strip's tiles along K.
            assert_eq!(l.b_index(0, 1), 1);
            assert_eq!(l.b_index(1, 0), 2);
            assert_eq!(l.b_index(0, 2), 32);
            assert_eq!(l.b_index(0, 32), 512);
            assert_eq!(l.b_index(16, 0), l.kt * 512);
            assert_eq!(l.a_index(0, 1), 1);
            assert_eq!(l.a_index(1, 0), 32);
            assert_eq!(l.a_index(0, 32), 512);
            assert_eq!(l.a_index(16, 0), l.kt * 512);
        }
    }

    /// Packed B is the same for every M of a weight (the arena's [`AMX_TILES`] fill names N
    /// and K only, so a batch sweep's points share one set of packed copies): its length and
    /// where each element lies do not move with M, decode blocking or not.
    #[test]
    fn packed_b_does_not_depend_on_m() {
        let (n, k) = (4096, 4096);
        let one = Layout::new(1, n, k, 2);
        for m in [8, 64, 512, 4096] {
            for threads in [1, 2, 16] {
                let l = Layout::new(m, n, k, threads);
                assert_eq!(l.b_len(), one.b_len(), "M = {m}");
                for i in (0..l.b_len()).step_by(4099) {
                    assert_eq!(l.b_at(i), one.b_at(i), "M = {m}, element {i}");
                }
            }
        }
    }

    #[test]
    fn the_blocking_pads_to_its_micro_kernel_and_shares_the_work() {
        let decode = Layout::new(1, 4096, 4096, 2);
        assert_eq!((decode.mr, decode.nr, decode.mt, decode.kc), (1, 4, 1, 128));
        assert!(decode.items() >= 16, "{decode:?}");
        let big = Layout::new(4096, 4096, 4096, 2);
        assert_eq!((big.mr, big.nr, big.kc, big.mc, big.nc), (2, 2, 64, 16, 32));
        assert_eq!(big.items(), 128);
        let small = Layout::new(17, 17, 17, 2);
        assert_eq!((small.mt, small.nt, small.kt), (2, 4, 1));
        let square = Layout::new(256, 256, 256, 2);
        assert!(square.items() >= 16, "{square:?}");
        assert_eq!(square.mc % 2 + square.nc % 2, 0, "whole micro-kernel steps");
    }

    /// Runs `case` `reps` launches at a time, `rounds` times, and checks C after each.
    fn run_and_check(pool: &Pool, shape: Shape, copies: u64, rounds: usize) -> Option<()> {
        if let Err(why) = tensor::available(PRECISION) {
            eprintln!("skipped: {why}");
            return None;
        }
        let mut case = gemm::case(gemm::HOST_AMX, PRECISION, shape);
        case.working_set_bytes += (copies - 1) * gemm::weight_bytes(PRECISION, shape);
        let mut prepared = AmxGemmCase::new(pool, &Arena::new(1 << 30), &case).expect("prepared");
        assert_eq!(prepared.copies as u64, copies);
        for round in 0..rounds {
            prepared.c.fill(f32::NAN);
            prepared.run(1 + round as u32).expect("ran");
            let v = prepared.verify().expect("verified");
            assert!(v.valid, "{shape}, round {round}: {}", v.detail);
        }
        Some(())
    }

    /// The product is exact on edge shapes: M, N and K of 1, 17 and 129, both micro-kernels
    /// and their boundary (M = 16, 17), K over several blocks, C's partial tiles on every side.
    #[test]
    fn every_shape_gives_the_exact_product() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let mut shapes = gemm::edge_shapes();
        shapes.extend([
            Shape::new(16, 64, 64),
            Shape::new(32, 32, 32),
            Shape::new(33, 100, 1100),
            Shape::new(5, 300, 1057),
            Shape::new(600, 1100, 530),
            // K over two blocks of KC_TILES (2048), partial tiles on both sides
            Shape::new(40, 70, 2100),
        ]);
        assert!(
            Layout::new(40, 70, 2100, 2).kt > KC_TILES,
            "a shape spans more than one K block"
        );
        for s in shapes {
            if run_and_check(&pool, s, 1, 2).is_none() {
                return;
            }
        }
    }

    #[test]
    fn launches_read_the_copies_of_b_in_turn_and_stay_exact() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        for s in [Shape::new(1, 256, 512), Shape::new(48, 96, 600)] {
            if run_and_check(&pool, s, 3, 3).is_none() {
                return;
            }
        }
        // and a copy that differs is seen: zero one element of copy 1, run the launch that
        // reads it
        if tensor::available(PRECISION).is_err() {
            return;
        }
        let shape = Shape::new(1, 64, 64);
        let mut case = gemm::case(gemm::HOST_AMX, PRECISION, shape);
        case.working_set_bytes += gemm::weight_bytes(PRECISION, shape);
        let mut prepared = AmxGemmCase::new(&pool, &Arena::new(1 << 30), &case).expect("prepared");
        let i = prepared.layout.b_len() + prepared.layout.b_index(3, 5);
        prepared.packed_b[i] = 0;
        // (said to hold other values, so that the product shows which copy a launch read, not
        // the digest that B changed)
        prepared.packed_b.taint();
        prepared.run(1).expect("ran");
        assert!(prepared.verify().unwrap().valid, "copy 0 is untouched");
        prepared.run(1).expect("ran");
        let v = prepared.verify().unwrap();
        assert!(!v.valid, "copy 1 was read: {}", v.detail);
        // one element of a copy no launch read, changed: B's digest sees it
        let mut prepared = AmxGemmCase::new(&pool, &Arena::new(1 << 30), &case).expect("prepared");
        let i = prepared.layout.b_len() + prepared.layout.b_index(7, 1);
        prepared.packed_b[i] ^= 1;
        prepared.run(1).expect("ran");
        let v = prepared.verify().unwrap();
        assert!(!v.valid && v.detail.contains("digest"), "{}", v.detail);
        // and a packed B from the arena (4 MiB), where guards can be had: its guard
        let case = gemm::case(gemm::HOST_AMX, PRECISION, Shape::new(1, 1024, 2048));
        let mut prepared = AmxGemmCase::new(&pool, &Arena::new(1 << 30), &case).expect("prepared");
        prepared.run(1).expect("ran");
        assert!(prepared.verify().unwrap().valid);
        let last = prepared.packed_b.len() - 1;
        prepared.packed_b[last] ^= 1;
        let v = prepared.verify().unwrap();
        let how = crate::backend::host::guard::CAUGHT_BY;
        crate::backend::host::guard::assert_caught(&v, how, &case.id());
    }
}
