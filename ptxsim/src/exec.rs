//! Executes a decoded kernel: blocks one after another (the CTAs of a thread-block cluster
//! together, as one unit whose warps are numbered across its CTAs), warps of 32 lanes in
//! lockstep inside a block, and the checks that make a wrong kernel fail loudly instead of
//! producing plausible numbers.
//!
//! Divergence: every lane has its own PC and a warp always executes the instruction with the
//! smallest PC among its runnable lanes, for all lanes at that PC. Lanes that branch ahead wait
//! for the others, so a warp reconverges at the first common instruction after an if/else or
//! a loop exit, without needing post-dominator analysis; `shfl.sync`, `vote.sync`, `ldmatrix`
//! and `mma` then check that every lane they name is really there.
//!
//! Schedules ([`Schedule`]): by default blocks run in index order and a block's warps run in
//! turn until each has exited or waits at a barrier; the barrier then opens. A shuffled
//! schedule draws the block order, which warp runs next and for how many instructions, from a
//! seed, so that a kernel can be run under several orders and its results compared.
//!
//! Barriers: `bar.sync` is `barrier.sync.aligned`, so every thread of the block that takes part
//! must wait at the same instruction, with a guard every thread agrees on; the non-aligned
//! `barrier.sync` lets warps meet at different instructions.
//!
//! Races (`race`): shared and global memory remember, per byte or word, the warp, barrier epoch
//! and instruction of their last write and read, so a conflicting access by another warp in
//! the same epoch, or (global memory) by another block of the launch, is an error naming both
//! lines — whatever order the schedule happened to run them in.
//!
//! Registers and predicates start undefined: each remembers which lanes wrote it, and an
//! instruction that reads one in a lane that never wrote it is an error.
//!
//! `cp.async` copies are deferred: the source is read when the instruction issues, but the
//! shared-memory destination is written only when a `cp.async.wait_group` / `wait_all` covers
//! its group, so a kernel that reads a tile before waiting for it reads poison.

use crate::decode::Kernel;
use crate::error::Error;
use crate::ir::*;
use crate::memory::{
    DevicePtr, Memory, GLOBAL_BASE, LOCAL_WINDOW, PARAM_WINDOW, POISON_BYTE, SHARED_WINDOW,
    WINDOW_BYTES,
};
use crate::mma;
use crate::numeric::{self, Rounding};
use crate::race::{self, Access, Conflict, Context, SharedShadow, Strength};
use crate::types::{Space, Ty};

mod bulk;
mod wgmma;
use bulk::BlockBulk;
use wgmma::{BlockWgmma, WarpWgmma};

/// A kernel argument, checked against the declared parameter type.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Ptr(DevicePtr),
    /// Raw bytes for an array parameter (`.param .align 8 .b8 p[16]`).
    Bytes(Vec<u8>),
}

/// What to do when a `bra.uni` turns out to be divergent (its lanes disagree on the guard).
/// The PTX ISA leaves that undefined: `.uni` is the programmer's promise that they agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniformBranchPolicy {
    /// Fail the launch (the default).
    Deny,
    /// Execute it as an ordinary divergent branch and list its line in
    /// [`LaunchStats::divergent_uniform_branches`].
    Record,
}

/// In which order a launch runs its blocks and warps. A correct kernel computes the same
/// thing under every schedule; tests run kernels under several to show that theirs do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// Blocks in order of their linear index; in a block, each warp in index order runs until
    /// it waits at a barrier or exits. Deterministic, and the fastest.
    #[default]
    InOrder,
    /// A pseudo-random schedule drawn from `seed` (the same seed, the same schedule): blocks in
    /// a shuffled order; in a block, a randomly chosen runnable warp runs a random number of
    /// instructions (from 1 up to [`MAX_SLICE`]) before the next choice, so warps interleave
    /// between barriers and resume from a barrier in random order.
    Shuffled { seed: u64 },
}

/// The longest run of warp instructions a shuffled schedule gives one warp before switching.
pub const MAX_SLICE: u64 = 64;

/// What a launch ended at its [`LaunchConfig::deadline`] says.
pub const WATCHDOG_ENDED: &str = "ran past its deadline: ended by the watchdog";

/// Everything about one launch except the arguments.
#[derive(Debug, Clone)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dynamic_shared_bytes: u32,
    pub uniform_branches: UniformBranchPolicy,
    /// Warp-instruction budget for the whole launch: a kernel that runs past it is reported
    /// as a probable infinite loop.
    pub max_warp_instructions: u64,
    /// When a display's watchdog ends the launch: past it, the launch fails with a runtime
    /// error saying [`WATCHDOG_ENDED`] (checked every 65,536 warp instructions). `None`: never.
    pub deadline: Option<std::time::Instant>,
    /// The SM clock the block's cycle counter runs at, against `%globaltimer` nanoseconds
    /// (`%clock64` advances one cycle per warp instruction of the block).
    pub clock_mhz: u32,
    /// Block and warp order ([`Schedule::InOrder`] unless set).
    pub schedule: Schedule,
    /// Check global memory for data races (on unless turned off). It keeps 16 bytes of shadow
    /// per 4 bytes of global memory a launch touches, for the launch's duration.
    pub check_global_races: bool,
    /// Thread-block clusters of this shape (`cuLaunchKernelEx`'s cluster dimension); `None`:
    /// the entry's `.reqnctapercluster`, or clusters of one CTA.
    pub cluster: Option<(u32, u32, u32)>,
}

impl LaunchConfig {
    pub fn new(grid: (u32, u32, u32), block: (u32, u32, u32), dynamic_shared_bytes: u32) -> Self {
        LaunchConfig {
            grid,
            block,
            dynamic_shared_bytes,
            uniform_branches: UniformBranchPolicy::Deny,
            max_warp_instructions: 200_000_000,
            deadline: None,
            clock_mhz: 1000,
            schedule: Schedule::InOrder,
            check_global_races: true,
            cluster: None,
        }
    }
}

/// SplitMix64: the shuffled schedule's reproducible random numbers, without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the bias of a 64-bit modulus is negligible here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What a launch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchStats {
    /// Instructions issued, counted once per warp.
    pub warp_instructions: u64,
    /// Instructions executed, counted once per thread that executed them (guard true).
    pub thread_instructions: u64,
    pub blocks: u64,
    /// Source lines of `bra.uni` instructions seen diverging (only under
    /// [`UniformBranchPolicy::Record`]).
    pub divergent_uniform_branches: Vec<u32>,
}

/// Shared memory available to one block (sm_90: 227 KiB).
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;
/// The most CTAs in a cluster without the non-portable opt-in (CUDA: 8).
pub const MAX_CLUSTER_CTAS: u32 = 8;
/// A `mapa` result: `(rank + 1) << CLUSTER_RANK_SHIFT | offset`, above any CTA's shared
/// memory, so a shared::cluster address used as a shared::cta one is out of bounds.
const CLUSTER_RANK_SHIFT: u32 = 24;
/// Pattern that every register holds before its first write.
const REGISTER_POISON: u64 = 0xdead_beef_dead_beef;
const FULL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LaneState {
    Running,
    Barrier,
    /// Waiting at a `wgmma.mma_async` for the other warps of its warpgroup.
    Wgmma,
    /// Waiting at `barrier.cluster.wait` for the cluster's other threads to arrive.
    ClusterWait,
    Exited,
}

struct PendingCopy {
    lane: u32,
    group: u32,
    dst: usize,
    len: usize,
    data: [u8; 16],
    pc: u32,
}

struct Warp {
    /// The warp's index in its cluster: CTA rank × the CTA's warps + its warp in the CTA.
    index: u32,
    /// Its CTA's rank in the cluster.
    rank: u32,
    /// Lanes that arrived at `barrier.cluster` in the current phase.
    cluster_arrived: u32,
    regs: Vec<u64>,
    preds: Vec<u32>,
    /// Per register (predicate), the lanes that have written it: reading a register in a lane
    /// that never wrote it is an error, since registers start undefined.
    reg_written: Vec<u32>,
    pred_written: Vec<u32>,
    pc: [u32; 32],
    state: [LaneState; 32],
    barrier_id: [u32; 32],
    barrier_count: [u32; 32],
    /// Lanes waiting at an `.aligned` barrier (whose warp must all wait at the same one).
    barrier_pc_aligned: u32,
    /// Block-wide `.aligned` barriers (no thread count) this warp skipped on a false guard
    /// since the last barrier opened: one that then opens for other warps is an error.
    skipped_barriers: Vec<u32>,
    /// Lanes that are threads of the block (the last warp of an odd-sized block is partial).
    exists: u32,
    running: u32,
    pending: Vec<PendingCopy>,
    committed: [u32; 32],
    /// Per lane, how many `fence.proxy.async` it executed.
    proxy_fences: [u32; 32],
    wg: WarpWgmma,
    /// Lanes whose last mbarrier wait returned false (they yield to the warp's other lanes).
    spin: u32,
    /// Lanes whose wait failed twice with no mbarrier change in between.
    stalled: u32,
    /// Per lane, the mbarrier version of its last failed wait.
    spin_ver: [u64; 32],
    /// The mbarrier version at which every running lane was stalled.
    stuck_ver: u64,
    /// The last failed wait: its instruction and barrier.
    spin_at: (u32, usize),
}

impl Warp {
    /// Spinning lanes whose last failed wait was at mbarrier version `version`.
    fn spin_current(&self, version: u64) -> u32 {
        lanes(self.spin)
            .filter(|&l| self.spin_ver[l] == version)
            .fold(0, |m, l| m | 1 << l)
    }
}

/// The region of [`LaneAccesses`] and `check_region` that is the block's shared memory (any
/// other value is the index of a global allocation).
const SHARED_REGION: usize = usize::MAX;

/// The race detector's region and offset of a location; `None` for the private spaces.
fn region_of(loc: &Loc) -> Option<(usize, usize)> {
    match *loc {
        Loc::Global { alloc, off, .. } => Some((alloc, off)),
        Loc::Shared(off) => Some((SHARED_REGION, off)),
        Loc::Local(_) | Loc::Param(_) => None,
    }
}

/// Where the lanes of one load or store went, summarised while the lanes run: the first
/// lane's region and offset, and whether every later lane continued right after the previous
/// one in the same region (the coalesced case, checked in one go). Otherwise the checks go
/// lane by lane, recomputing the addresses.
struct LaneAccesses {
    first: Option<(usize, usize)>,
    end: usize,
    lanes: usize,
    contiguous: bool,
    /// Some lane touched a private space (local, param): no checks for those.
    private: bool,
}

impl LaneAccesses {
    fn new() -> LaneAccesses {
        LaneAccesses {
            first: None,
            end: 0,
            lanes: 0,
            contiguous: true,
            private: false,
        }
    }

    #[inline]
    fn push(&mut self, loc: &Loc, len: usize) {
        let Some((region, off)) = region_of(loc) else {
            self.private = true;
            return;
        };
        match self.first {
            None => self.first = Some((region, off)),
            Some((r, _)) if r == region && off == self.end => {}
            Some(_) => self.contiguous = false,
        }
        self.end = off + len;
        self.lanes += 1;
    }
}

/// Where a race happened, for its message.
enum RaceSite {
    /// Offset in shared memory of the access.
    Shared(usize),
    Global {
        alloc: usize,
        off: usize,
        addr: u64,
    },
}

/// The threads waiting at one barrier id of one CTA when no thread of the block can run.
struct Arrivals {
    rank: u32,
    id: u32,
    /// The expected thread count (0: every thread of the block that has not exited).
    count: u32,
    threads: u32,
    /// The barrier instruction, and the warp, of the first arrival.
    pc: u32,
    warp: u32,
    /// Some arrival was at an `.aligned` barrier, so all must be at this one instruction.
    aligned: bool,
}

enum Loc {
    /// Allocation index and offset in it, as `Memory::locate` found them.
    Global {
        alloc: usize,
        off: usize,
    },
    Shared(usize),
    Local(usize),
    Param(usize),
}

enum Flow {
    /// Every lane of the issued mask continues at pc + 1.
    Next,
    /// The instruction set the lanes' PCs and states itself.
    Done,
    /// As `Next`, then the warp's time slice ends (its lanes spin on an mbarrier wait).
    Yield,
}

struct Block<'k, 'm> {
    kernel: &'k Kernel,
    config: &'k LaunchConfig,
    mem: &'m mut Memory,
    params: &'k [u8],
    shared: Vec<u8>,
    shared_shadow: &'m mut SharedShadow,
    /// The launch's first epoch: records of global memory older than it are from earlier
    /// launches.
    launch_start: u32,
    /// The blocks run so far, by first epoch, to name the block of an earlier access.
    block_epochs: &'m [(u32, (u32, u32, u32))],
    local: Vec<u8>,
    /// The barrier epoch: a fresh one for each block and each time a barrier opens.
    epoch: u32,
    /// This block's first epoch: anything older was done by a block that already ran.
    block_start: u32,
    stats: &'m mut LaunchStats,
    clock: u64,
    /// Only for [`Schedule::Shuffled`].
    rng: Option<Rng>,
    /// Warpgroup-MMA state, for kernels that use `wgmma.mma_async`.
    wg: Option<BlockWgmma>,
    /// mbarrier and bulk-copy state, for kernels that use them.
    bulk: Option<BlockBulk>,
    /// The cluster this unit runs: its CTAs run together, as one unit of warps, their shared
    /// memories side by side (`cta_stride` bytes apart) in `shared`.
    cluster: Cluster,
    /// Phases of `barrier.cluster` completed.
    cluster_phase: u64,
    /// Per CTA rank, its threads that exited.
    exited: Vec<u32>,
}

/// The cluster a [`Block`] runs.
#[derive(Debug, Clone, Copy)]
struct Cluster {
    shape: (u32, u32, u32),
    /// Its position in the grid of clusters.
    id: (u32, u32, u32),
    ranks: u32,
    /// Shared memory of one CTA, and the distance between two CTAs' (a multiple of 1024, so
    /// the swizzle patterns, which follow the address, line up).
    cta_shared: usize,
    cta_stride: usize,
}

impl Cluster {
    /// Rank `r`'s position in the cluster (x fastest).
    fn cta_of(&self, r: u32) -> (u32, u32, u32) {
        let (cx, cy, _) = self.shape;
        (r % cx, r / cx % cy, r / (cx * cy))
    }

    /// Rank `r`'s `%ctaid`.
    fn ctaid(&self, r: u32) -> (u32, u32, u32) {
        let (x, y, z) = self.cta_of(r);
        (
            self.id.0 * self.shape.0 + x,
            self.id.1 * self.shape.1 + y,
            self.id.2 * self.shape.2 + z,
        )
    }
}

/// No barrier can open: the barrier waits (if any) are short of arrivals (`live`: per CTA
/// rank, its threads that have not exited).
fn opened_none(waiting: &[Arrivals], live: &[u32]) -> bool {
    waiting.iter().all(|a| {
        let expected = if a.count == 0 {
            live[a.rank as usize]
        } else {
            a.count
        };
        a.threads < expected
    })
}

fn lanes(mask: u32) -> impl Iterator<Item = usize> {
    let mut m = mask;
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

fn width_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        let s = 64 - bits;
        ((v << s) as i64) >> s
    }
}

pub(crate) fn launch(
    kernel: &Kernel,
    config: &LaunchConfig,
    args: &[Arg],
    mem: &mut Memory,
) -> Result<LaunchStats, Error> {
    let (bx, by, bz) = config.block;
    let (gx, gy, gz) = config.grid;
    let threads = bx as u64 * by as u64 * bz as u64;
    if threads == 0 || gx == 0 || gy == 0 || gz == 0 {
        return Err(Error::Launch(format!(
            "`{}`: empty grid or block",
            kernel.name
        )));
    }
    if threads > 1024 || bz > 64 {
        return Err(Error::Launch(format!(
            "`{}`: block {bx}x{by}x{bz} exceeds 1024 threads (or 64 in z)",
            kernel.name
        )));
    }
    if gy > 65535 || gz > 65535 {
        return Err(Error::Launch(format!(
            "`{}`: grid y/z above 65535",
            kernel.name
        )));
    }
    if let Some(r) = kernel.reqntid {
        if r != config.block {
            return Err(Error::Launch(format!(
                "`{}` declares .reqntid {:?} but was launched with block {:?}",
                kernel.name, r, config.block
            )));
        }
    }
    if let Some((mx, my, mz)) = kernel.maxntid {
        if threads > mx as u64 * my as u64 * mz as u64 {
            return Err(Error::Launch(format!(
                "`{}` declares .maxntid {mx},{my},{mz} but was launched with {threads} threads",
                kernel.name
            )));
        }
    }
    let shared_bytes = if config.dynamic_shared_bytes > 0 {
        kernel.dynamic_shared_offset as u64 + config.dynamic_shared_bytes as u64
    } else {
        kernel.static_shared_bytes as u64
    };
    if shared_bytes > MAX_SHARED_BYTES as u64 {
        return Err(Error::Launch(format!(
            "`{}` needs {shared_bytes} bytes of shared memory, more than {MAX_SHARED_BYTES}",
            kernel.name
        )));
    }
    if kernel.code.len() as u64 > race::MAX_PC as u64 {
        return Err(Error::Launch(format!(
            "`{}` has {} instructions, more than the race detector's {}",
            kernel.name,
            kernel.code.len(),
            race::MAX_PC
        )));
    }
    let params = build_params(kernel, args)?;
    let shape = match (config.cluster, kernel.reqnctapercluster) {
        (Some(c), Some(r)) if c != r => {
            return Err(Error::Launch(format!(
                "`{}` declares .reqnctapercluster {r:?} but was launched with clusters of {c:?}",
                kernel.name
            )))
        }
        (Some(c), _) | (None, Some(c)) => c,
        (None, None) => (1, 1, 1),
    };
    let ranks = shape.0 as u64 * shape.1 as u64 * shape.2 as u64;
    if ranks == 0 || ranks > MAX_CLUSTER_CTAS as u64 {
        return Err(Error::Launch(format!(
            "`{}`: clusters of {shape:?}: 1 to {MAX_CLUSTER_CTAS} CTAs",
            kernel.name
        )));
    }
    if !(gx.is_multiple_of(shape.0) && gy.is_multiple_of(shape.1) && gz.is_multiple_of(shape.2)) {
        return Err(Error::Launch(format!(
            "`{}`: grid {:?} is not a whole number of clusters of {shape:?}",
            kernel.name, config.grid
        )));
    }
    let cta_warps = threads.div_ceil(32);
    if ranks > 1 && cta_warps * ranks > 32 {
        return Err(Error::Launch(format!(
            "`{}`: clusters of {ranks} CTAs of {threads} threads: ptxsim runs a cluster as one unit of at most 32 warps",
            kernel.name
        )));
    }
    if ranks > 1
        && !cta_warps.is_multiple_of(4)
        && kernel.code.iter().any(|i| matches!(i.op, Op::Wgmma(_)))
    {
        return Err(Error::Launch(format!(
            "`{}`: clusters of CTAs of {threads} threads with wgmma: ptxsim needs whole warpgroups per CTA",
            kernel.name
        )));
    }
    // one CTA's shared memory, or a cluster's side by side, each 1024-byte aligned
    let cta_stride = if ranks > 1 {
        (shared_bytes as usize).next_multiple_of(1024)
    } else {
        shared_bytes as usize
    };
    let clusters = (gx / shape.0, gy / shape.1, gz / shape.2);
    let mut stats = LaunchStats::default();
    let blocks = clusters.0 as u64 * clusters.1 as u64 * clusters.2 as u64;
    let mut order: Vec<u64> = (0..blocks).collect();
    let mut rng = match config.schedule {
        Schedule::InOrder => None,
        Schedule::Shuffled { seed } => Some(Rng(seed)),
    };
    if let Some(rng) = rng.as_mut() {
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
    }
    let mut shared_shadow = SharedShadow::new(cta_stride * ranks as usize);
    let mut block_epochs: Vec<(u32, (u32, u32, u32))> = Vec::new();
    let launch_start = mem.launch_epochs();
    let mut epoch = launch_start;
    let result = run_blocks(
        RunBlocks {
            kernel,
            config,
            params: &params,
            shared_bytes: shared_bytes as usize,
            threads: threads as usize,
            launch_start,
            shape,
            clusters,
            cta_stride,
        },
        &order,
        rng,
        &mut shared_shadow,
        &mut block_epochs,
        &mut epoch,
        &mut stats,
        mem,
    );
    // Also after a failed launch: its records must not pass for the next launch's.
    mem.end_launch_epochs(epoch);
    result.map(|()| stats)
}

/// Cycles between the clocks at which consecutive blocks (clusters) of a launch start: a prime,
/// so their `%globaltimer` stamps share no common tick.
const CLOCK_START_STRIDE: u64 = 1009;

/// What every block of one launch shares.
struct RunBlocks<'k> {
    kernel: &'k Kernel,
    config: &'k LaunchConfig,
    params: &'k [u8],
    shared_bytes: usize,
    threads: usize,
    launch_start: u32,
    /// Clusters: their shape in CTAs, the grid of them, and a CTA's shared-memory stride.
    shape: (u32, u32, u32),
    clusters: (u32, u32, u32),
    cta_stride: usize,
}

/// Runs the blocks of a launch in `order`, leaving in `epoch` the last epoch used.
#[allow(clippy::too_many_arguments)]
fn run_blocks(
    run: RunBlocks,
    order: &[u64],
    mut rng: Option<Rng>,
    shared_shadow: &mut SharedShadow,
    block_epochs: &mut Vec<(u32, (u32, u32, u32))>,
    epoch: &mut u32,
    stats: &mut LaunchStats,
    mem: &mut Memory,
) -> Result<(), Error> {
    let RunBlocks {
        kernel,
        config,
        params,
        shared_bytes,
        threads,
        launch_start,
        shape,
        clusters,
        cta_stride,
    } = run;
    let (gx, gy, _) = clusters;
    let ranks = shape.0 * shape.1 * shape.2;
    for &linear in order {
        let cluster = Cluster {
            shape,
            id: (
                (linear % gx as u64) as u32,
                (linear / gx as u64 % gy as u64) as u32,
                (linear / (gx as u64 * gy as u64)) as u32,
            ),
            ranks,
            cta_shared: shared_bytes,
            cta_stride,
        };
        let ctaid = cluster.ctaid(0);
        // A fresh epoch per block: the shadows' entries of the previous blocks are older.
        *epoch = epoch.checked_add(1).ok_or_else(|| {
            Error::Launch(format!(
                "`{}`: more than 2^31 barrier epochs in one launch",
                kernel.name
            ))
        })?;
        block_epochs.push((*epoch, ctaid));
        let block_rng = rng.as_mut().map(|r| Rng(r.next()));
        let mut block = Block {
            kernel,
            config,
            mem: &mut *mem,
            params,
            shared: vec![POISON_BYTE; cluster.cta_stride * ranks as usize],
            shared_shadow: &mut *shared_shadow,
            launch_start,
            block_epochs,
            local: vec![
                POISON_BYTE;
                threads.div_ceil(32)
                    * 32
                    * ranks as usize
                    * kernel.local_bytes_per_thread as usize
            ],
            epoch: *epoch,
            block_start: *epoch,
            stats: &mut *stats,
            // Blocks start at staggered times, as a GPU's do: a counter at zero in every block
            // would stamp every block of a launch alike, which no timer on hardware does.
            clock: CLOCK_START_STRIDE * linear,
            rng: block_rng,
            wg: None,
            bulk: None,
            cluster,
            cluster_phase: 0,
            exited: vec![0; ranks as usize],
        };
        let result = block.run();
        *epoch = block.epoch;
        result?;
        stats.blocks += ranks as u64;
    }
    Ok(())
}

fn build_params(kernel: &Kernel, args: &[Arg]) -> Result<Vec<u8>, Error> {
    if args.len() != kernel.params.len() {
        return Err(Error::Launch(format!(
            "`{}` takes {} parameters ({}), {} arguments given",
            kernel.name,
            kernel.params.len(),
            kernel
                .params
                .iter()
                .map(|p| format!("{}: .{}", p.name, p.ty.name()))
                .collect::<Vec<_>>()
                .join(", "),
            args.len()
        )));
    }
    let mut buf = vec![0u8; kernel.param_bytes as usize];
    for (i, (p, a)) in kernel.params.iter().zip(args).enumerate() {
        let bytes: Vec<u8> = match (a, p.ty, p.array) {
            (Arg::Bytes(b), _, Some(_)) if b.len() == p.bytes as usize => b.clone(),
            (Arg::U32(v), Ty::U32 | Ty::B32 | Ty::S32, None) => v.to_le_bytes().to_vec(),
            (Arg::I32(v), Ty::S32 | Ty::B32 | Ty::U32, None) => v.to_le_bytes().to_vec(),
            (Arg::U64(v), Ty::U64 | Ty::B64 | Ty::S64, None) => v.to_le_bytes().to_vec(),
            (Arg::I64(v), Ty::S64 | Ty::B64 | Ty::U64, None) => v.to_le_bytes().to_vec(),
            (Arg::Ptr(v), Ty::U64 | Ty::B64 | Ty::S64, None) => v.0.to_le_bytes().to_vec(),
            (Arg::F32(v), Ty::F32, None) => v.to_le_bytes().to_vec(),
            (Arg::F64(v), Ty::F64, None) => v.to_le_bytes().to_vec(),
            _ => {
                return Err(Error::Launch(format!(
                    "`{}` parameter {} `{}` is .{}{}, but the argument is {:?}",
                    kernel.name,
                    i,
                    p.name,
                    p.ty.name(),
                    p.array.map_or(String::new(), |n| format!("[{n}]")),
                    a
                )))
            }
        };
        buf[p.offset as usize..p.offset as usize + bytes.len()].copy_from_slice(&bytes);
    }
    Ok(buf)
}

impl Block<'_, '_> {
    /// Threads of one CTA.
    fn threads(&self) -> u32 {
        let (x, y, z) = self.config.block;
        x * y * z
    }

    /// Warps of one CTA.
    fn cta_warps(&self) -> u32 {
        self.threads().div_ceil(32)
    }

    /// Thread slots of the unit: `warp index × 32 + lane` is below it.
    fn thread_slots(&self) -> usize {
        (self.cta_warps() * self.cluster.ranks * 32) as usize
    }

    /// Where CTA rank `rank`'s shared memory starts in `shared`.
    fn shared_base(&self, rank: u32) -> usize {
        rank as usize * self.cluster.cta_stride
    }

    /// The `%ctaid` of warp `w`'s CTA.
    fn ctaid_of(&self, w: &Warp) -> (u32, u32, u32) {
        self.cluster.ctaid(w.rank)
    }

    /// Warp `w`'s index in its CTA.
    fn cta_warp(&self, w: &Warp) -> u32 {
        w.index - w.rank * self.cta_warps()
    }

    /// Lane `lane` of warp `w`: its thread's linear index in its CTA.
    fn cta_thread(&self, w: &Warp, lane: usize) -> u32 {
        self.cta_warp(w) * 32 + lane as u32
    }

    fn thread_coords(&self, linear: u32) -> (u32, u32, u32) {
        let (bx, by, _) = self.config.block;
        (linear % bx, (linear / bx) % by, linear / (bx * by))
    }

    fn make_warp(&self, index: u32) -> Warp {
        let k = self.kernel;
        let threads = self.threads();
        let rank = index / self.cta_warps();
        let local = index % self.cta_warps();
        let first = local * 32;
        let count = (threads - first).min(32);
        let exists = if count == 32 {
            FULL
        } else {
            (1u32 << count) - 1
        };
        let mut regs = vec![REGISTER_POISON; k.n_regs as usize * 32];
        let mut reg_written = vec![0u32; k.n_regs as usize];
        let (bx, by, bz) = self.config.block;
        let (gx, gy, gz) = self.config.grid;
        let nwarps = self.cta_warps();
        let shared_size = self.cluster.cta_shared as u64;
        let ctaid = self.cluster.ctaid(rank);
        let (cx, cy, cz) = self.cluster.shape;
        let in_cluster = self.cluster.cta_of(rank);
        let nclusters = (gx / cx, gy / cy, gz / cz);
        for &(sp, r) in &k.specials {
            for lane in 0..32u32 {
                let (tx, ty, tz) = self.thread_coords(first + lane);
                let dim = |d: u8, v: (u32, u32, u32)| match d {
                    0 => v.0,
                    1 => v.1,
                    _ => v.2,
                };
                let v: u64 = match sp {
                    Special::Tid(d) => dim(d, (tx, ty, tz)) as u64,
                    Special::Ntid(d) => dim(d, (bx, by, bz)) as u64,
                    Special::Ctaid(d) => dim(d, ctaid) as u64,
                    Special::Nctaid(d) => dim(d, (gx, gy, gz)) as u64,
                    Special::LaneId => lane as u64,
                    Special::WarpId => local as u64,
                    Special::NWarpId => nwarps as u64,
                    Special::SmId | Special::GridId => 0,
                    Special::NSmId => 1,
                    Special::LaneMaskEq => 1u64 << lane,
                    Special::LaneMaskLt => (1u64 << lane) - 1,
                    Special::LaneMaskLe => (1u64 << (lane + 1)) - 1,
                    Special::LaneMaskGt => (!((1u64 << (lane + 1)) - 1)) & 0xffff_ffff,
                    Special::LaneMaskGe => (!((1u64 << lane) - 1)) & 0xffff_ffff,
                    Special::DynamicSmemSize => self.config.dynamic_shared_bytes as u64,
                    Special::TotalSmemSize => shared_size,
                    Special::ClusterCtaRank => rank as u64,
                    Special::ClusterNCtaRank => self.cluster.ranks as u64,
                    Special::ClusterId(d) => dim(d, self.cluster.id) as u64,
                    Special::NClusterId(d) => dim(d, nclusters) as u64,
                    Special::ClusterCtaId(d) => dim(d, in_cluster) as u64,
                    Special::ClusterNCtaId(d) => dim(d, (cx, cy, cz)) as u64,
                };
                regs[r as usize * 32 + lane as usize] = v;
            }
            reg_written[r as usize] = FULL;
        }
        let mut state = [LaneState::Exited; 32];
        for (l, s) in state.iter_mut().enumerate() {
            if exists >> l & 1 == 1 {
                *s = LaneState::Running;
            }
        }
        Warp {
            index,
            rank,
            cluster_arrived: 0,
            regs,
            preds: vec![0; k.n_preds as usize],
            reg_written,
            pred_written: vec![0; k.n_preds as usize],
            pc: [0; 32],
            state,
            barrier_id: [0; 32],
            barrier_count: [0; 32],
            barrier_pc_aligned: 0,
            skipped_barriers: Vec::new(),
            exists,
            running: exists,
            pending: Vec::new(),
            committed: [0; 32],
            proxy_fences: [0; 32],
            spin: 0,
            stalled: 0,
            spin_ver: [u64::MAX; 32],
            stuck_ver: u64::MAX,
            spin_at: (0, 0),
            wg: WarpWgmma::new(if self.wg.is_some() {
                k.n_regs as usize
            } else {
                0
            }),
        }
    }

    fn run(&mut self) -> Result<(), Error> {
        if self
            .kernel
            .code
            .iter()
            .any(|i| matches!(i.op, Op::Wgmma(_)))
        {
            self.wg = Some(BlockWgmma::new(self.shared.len()));
        }
        if self.kernel.code.iter().any(|i| i.op.is_bulk()) {
            self.bulk = Some(BlockBulk::new(self.shared.len()));
        }
        let nwarps = self.cta_warps() * self.cluster.ranks;
        let mut warps: Vec<Warp> = (0..nwarps).map(|w| self.make_warp(w)).collect();
        loop {
            match self.rng.take() {
                None => loop {
                    // Each warp until it waits, exits or spins on an mbarrier; again while
                    // any warp can still run (a spinning one, after an mbarrier changed).
                    let mut ran = false;
                    for w in warps.iter_mut() {
                        if self.runnable(w) {
                            self.run_warp(w, u64::MAX)?;
                            ran = true;
                        }
                    }
                    if !ran {
                        break;
                    }
                },
                Some(mut rng) => {
                    let result = self.run_shuffled(&mut warps, &mut rng);
                    self.rng = Some(rng);
                    result?;
                }
            }
            // No lane can run: each has exited or waits at a barrier or a wgmma.mma_async.
            if self.wg.is_some() && self.wgmma_rendezvous(&mut warps)? {
                continue;
            }
            if self.cluster_barrier(&mut warps)? {
                continue;
            }
            for w in &warps {
                let at_aligned: Vec<usize> = lanes(w.exists)
                    .filter(|&l| {
                        w.state[l] == LaneState::Barrier && w.barrier_pc_aligned >> l & 1 == 1
                    })
                    .collect();
                if let Some(&first) = at_aligned.first() {
                    if let Some(&other) = at_aligned.iter().find(|&&l| w.pc[l] != w.pc[first]) {
                        let line = |l: usize| self.kernel.code[w.pc[l] as usize - 1].line;
                        return Err(self.barrier_error(&warps, format!(
                            "`bar.sync` is `.aligned`, but lanes of warp {} wait at different barrier instructions (lines {} and {})",
                            w.index, line(first), line(other)
                        )));
                    }
                }
            }
            let mut waiting: Vec<Arrivals> = Vec::new();
            let mut live = vec![0u32; self.cluster.ranks as usize];
            let mut cluster_waiting = false;
            for w in &warps {
                for l in lanes(w.exists) {
                    match w.state[l] {
                        LaneState::Barrier => {
                            live[w.rank as usize] += 1;
                            let (id, count) = (w.barrier_id[l], w.barrier_count[l]);
                            let pc = w.pc[l] - 1;
                            let aligned = w.barrier_pc_aligned >> l & 1 == 1;
                            match waiting.iter_mut().find(|x| x.id == id && x.rank == w.rank) {
                                Some(x) => {
                                    x.threads += 1;
                                    if x.count != count {
                                        return Err(self.barrier_error(&warps, format!("threads wait at barrier {id} with different thread counts ({} and {count})", x.count)));
                                    }
                                    if (aligned || x.aligned) && pc != x.pc {
                                        return Err(self.barrier_error(&warps, format!(
                                            "warps {} and {} wait at barrier {id} at different barrier instructions (lines {} and {}): `bar.sync` is `barrier.sync.aligned`, which every thread of the block must reach at the same instruction",
                                            x.warp, w.index, self.kernel.code[x.pc as usize].line, self.kernel.code[pc as usize].line
                                        )));
                                    }
                                }
                                None => waiting.push(Arrivals {
                                    rank: w.rank,
                                    id,
                                    count,
                                    threads: 1,
                                    pc,
                                    warp: w.index,
                                    aligned,
                                }),
                            }
                        }
                        LaneState::Running | LaneState::Wgmma => live[w.rank as usize] += 1,
                        LaneState::ClusterWait => {
                            live[w.rank as usize] += 1;
                            cluster_waiting = true;
                        }
                        LaneState::Exited => {}
                    }
                }
            }
            if let Some(e) = self.spin_deadlock(&warps) {
                if opened_none(&waiting, &live) {
                    return Err(e);
                }
            }
            if waiting.is_empty() && cluster_waiting {
                return Err(self.cluster_deadlock(&warps));
            }
            if waiting.is_empty() {
                if let Some(e) = self.wgmma_stuck(&warps, None) {
                    return Err(e);
                }
                return Ok(());
            }
            // Open every barrier whose expected arrivals are all there. Without a count, all
            // threads of the block that have not exited (exited threads are dropped from the
            // expected count, as the hardware does).
            let mut opened = Vec::new();
            for a in &waiting {
                let expected = if a.count == 0 {
                    live[a.rank as usize]
                } else {
                    a.count
                };
                if a.threads == expected {
                    opened.push((a.rank, a.id));
                } else if a.threads > expected {
                    return Err(self.barrier_error(
                        &warps,
                        format!(
                            "{} threads arrived at barrier {}, which expects {expected}",
                            a.threads, a.id
                        ),
                    ));
                }
            }
            if opened.is_empty() {
                if let Some(e) = self.wgmma_stuck(&warps, Some(&waiting)) {
                    return Err(e);
                }
                return Err(self.barrier_error(
                    &warps,
                    "deadlock: threads wait at barriers that can never open".to_string(),
                ));
            }
            // A barrier for the whole block (no thread count) that a warp skipped on a false
            // guard opens without it: the guard was not uniform across the block.
            for a in waiting.iter().filter(|a| a.aligned && a.count == 0) {
                if let Some(v) = warps
                    .iter()
                    .find(|v| v.rank == a.rank && v.skipped_barriers.contains(&a.pc))
                {
                    return Err(Error::Runtime {
                        line: self.kernel.code[a.pc as usize].line,
                        instruction: self.kernel.texts[a.pc as usize].clone(),
                        message: format!(
                            "block {:?}: warp {} skipped this barrier (its guard was false) while warp {} waits at it: an `.aligned` barrier under a guard needs the guard to agree across the block",
                            self.cluster.ctaid(a.rank), v.index, a.warp
                        ),
                    });
                }
            }
            for w in warps.iter_mut() {
                w.skipped_barriers.clear();
            }
            self.next_epoch()?;
            for w in warps.iter_mut() {
                for l in lanes(w.exists) {
                    if w.state[l] == LaneState::Barrier
                        && opened.contains(&(w.rank, w.barrier_id[l]))
                    {
                        w.barrier_pc_aligned &= !(1 << l);
                        w.state[l] = LaneState::Running;
                        w.running |= 1 << l;
                    }
                }
            }
        }
    }

    /// A fresh barrier epoch: a barrier opened, so accesses before it are ordered with those
    /// after.
    fn next_epoch(&mut self) -> Result<(), Error> {
        self.epoch = self.epoch.checked_add(1).ok_or_else(|| {
            Error::Launch(format!(
                "`{}`: more than 2^32 barrier epochs in one launch",
                self.kernel.name
            ))
        })?;
        Ok(())
    }

    /// Completes the phase of `barrier.cluster` when every thread of the cluster that has not
    /// exited arrived, releasing the threads that wait; whether it did.
    fn cluster_barrier(&mut self, warps: &mut [Warp]) -> Result<bool, Error> {
        let waiting = warps
            .iter()
            .any(|w| lanes(w.exists).any(|l| w.state[l] == LaneState::ClusterWait));
        let all_in = warps.iter().all(|w| {
            lanes(w.exists)
                .all(|l| w.state[l] == LaneState::Exited || w.cluster_arrived >> l & 1 == 1)
        });
        if !waiting || !all_in {
            return Ok(false);
        }
        self.cluster_phase += 1;
        self.next_epoch()?;
        for w in warps.iter_mut() {
            w.cluster_arrived = 0;
            for l in lanes(w.exists) {
                if w.state[l] == LaneState::ClusterWait {
                    w.state[l] = LaneState::Running;
                    w.running |= 1 << l;
                }
            }
        }
        Ok(true)
    }

    /// Threads wait at `barrier.cluster.wait` and nothing else can move.
    fn cluster_deadlock(&self, warps: &[Warp]) -> Error {
        let w = warps
            .iter()
            .find(|w| lanes(w.exists).any(|l| w.state[l] == LaneState::ClusterWait))
            .expect("a waiting warp");
        let l = lanes(w.exists)
            .find(|&l| w.state[l] == LaneState::ClusterWait)
            .expect("a waiting lane");
        let missing: Vec<String> = warps
            .iter()
            .filter(|v| {
                lanes(v.exists)
                    .any(|m| v.state[m] != LaneState::Exited && v.cluster_arrived >> m & 1 == 0)
            })
            .map(|v| format!("warp {} of block {:?}", self.cta_warp(v), self.ctaid_of(v)))
            .collect();
        self.fault(w, w.pc[l] - 1, l, format!(
            "deadlock: barrier.cluster.wait waits for threads that cannot arrive ({} wait elsewhere or spin)",
            missing.join(", ")
        ))
    }

    fn barrier_error(&self, warps: &[Warp], message: String) -> Error {
        let mut line = self.kernel.line;
        let mut text = String::from("bar.sync");
        let mut ctaid = self.cluster.ctaid(0);
        for w in warps {
            if let Some(l) = lanes(w.exists).find(|&l| w.state[l] == LaneState::Barrier) {
                let pc = w.pc[l].saturating_sub(1) as usize;
                line = self.kernel.code[pc].line;
                text = self.kernel.texts[pc].clone();
                ctaid = self.ctaid_of(w);
                break;
            }
        }
        Error::Runtime {
            line,
            instruction: text,
            message: format!("block {ctaid:?}: {message}"),
        }
    }

    fn fault(&self, w: &Warp, pc: u32, lane: usize, message: impl Into<String>) -> Error {
        let (tx, ty, tz) = self.thread_coords(self.cta_thread(w, lane));
        Error::Runtime {
            line: self.kernel.code[pc as usize].line,
            instruction: self.kernel.texts[pc as usize].clone(),
            message: format!(
                "block {:?} thread ({tx}, {ty}, {tz}): {}",
                self.ctaid_of(w),
                message.into()
            ),
        }
    }

    fn warp_fault(&self, w: &Warp, pc: u32, message: impl Into<String>) -> Error {
        Error::Runtime {
            line: self.kernel.code[pc as usize].line,
            instruction: self.kernel.texts[pc as usize].clone(),
            message: format!(
                "block {:?} warp {}: {}",
                self.ctaid_of(w),
                self.cta_warp(w),
                message.into()
            ),
        }
    }

    /// Smallest PC among running lanes, and the lanes at it.
    /// Lanes spinning on a failed mbarrier wait come last, so the lanes they wait for run
    /// (independent thread scheduling).
    /// Among them, first the lanes not spinning, then spinning lanes that have not retried
    /// since the last mbarrier change, then lanes not yet stalled.
    fn pick(&self, w: &Warp) -> (u32, u32) {
        let mut best = u32::MAX;
        let mut mask = 0u32;
        let cand = if w.spin & w.running == 0 {
            w.running
        } else {
            let version = self.bulk.as_ref().map_or(0, |b| b.version);
            let current = w.spin_current(version);
            [
                w.running & !w.spin,
                w.running & !current,
                w.running & !w.stalled,
            ]
            .into_iter()
            .find(|&m| m != 0)
            .unwrap_or(w.running)
        };
        for l in lanes(cand) {
            let pc = w.pc[l];
            if pc < best {
                best = pc;
                mask = 1 << l;
            } else if pc == best {
                mask |= 1 << l;
            }
        }
        (best, mask)
    }

    /// Runs randomly chosen warps for random numbers of instructions until none can run.
    fn run_shuffled(&mut self, warps: &mut [Warp], rng: &mut Rng) -> Result<(), Error> {
        let mut runnable = Vec::with_capacity(warps.len());
        loop {
            runnable.clear();
            runnable.extend((0..warps.len()).filter(|&i| self.runnable(&warps[i])));
            if runnable.is_empty() {
                return Ok(());
            }
            let i = runnable[rng.below(runnable.len() as u64) as usize];
            let slice = 1 + rng.below(MAX_SLICE);
            self.run_warp(&mut warps[i], slice)?;
        }
    }

    /// Runs `w` until none of its lanes can run (all wait at a barrier or exited), or for
    /// `budget` warp instructions, whichever comes first.
    fn run_warp(&mut self, w: &mut Warp, budget: u64) -> Result<(), Error> {
        let (mut pc, mut mask) = self.pick(w);
        let mut left = budget;
        while mask != 0 {
            if left == 0 {
                return Ok(());
            }
            left -= 1;
            self.stats.warp_instructions += 1;
            if self.stats.warp_instructions > self.config.max_warp_instructions {
                return Err(self.warp_fault(
                    w,
                    pc,
                    format!(
                        "more than {} warp instructions executed: probable infinite loop",
                        self.config.max_warp_instructions
                    ),
                ));
            }
            if self.stats.warp_instructions & 0xFFFF == 0
                && self
                    .config
                    .deadline
                    .is_some_and(|d| std::time::Instant::now() >= d)
            {
                return Err(self.warp_fault(w, pc, WATCHDOG_ENDED.to_string()));
            }
            self.clock += 1;
            let kernel = self.kernel;
            let inst = &kernel.code[pc as usize];
            let exec = match inst.guard {
                None => mask,
                Some(g) => {
                    self.check_written(w, pc, mask, None, Some(g.reg))?;
                    let p = w.preds[g.reg as usize];
                    mask & if g.negated { !p } else { p }
                }
            };
            self.stats.thread_instructions += exec.count_ones() as u64;
            let uses = &kernel.uses[pc as usize];
            for &r in &uses.reads {
                self.check_written(w, pc, exec, Some(r), None)?;
            }
            if self.wg.is_some() && exec != 0 && !matches!(inst.op, Op::Wgmma(_)) {
                self.wgmma_register_checks(w, pc, uses)?;
            }
            for &p in &uses.pred_reads {
                self.check_written(w, pc, exec, None, Some(p))?;
            }
            let flow = self.step(w, pc, mask, exec)?;
            for &r in &uses.writes {
                w.reg_written[r as usize] |= exec;
            }
            for &p in &uses.pred_writes {
                w.pred_written[p as usize] |= exec;
            }
            match flow {
                Flow::Next => {
                    for l in lanes(mask) {
                        w.pc[l] = pc + 1;
                    }
                    if w.running & !mask == 0 {
                        pc += 1;
                        continue;
                    }
                }
                Flow::Done => {}
                Flow::Yield => {
                    for l in lanes(mask) {
                        w.pc[l] = pc + 1;
                    }
                    return Ok(());
                }
            }
            (pc, mask) = self.pick(w);
        }
        Ok(())
    }

    /// Fails if a lane of `lanes` reads register `reg` (or predicate `pred`) that it never
    /// wrote: its value is undefined on the hardware, not the zero or false it may happen to be.
    #[inline]
    fn check_written(
        &self,
        w: &Warp,
        pc: u32,
        lanes: u32,
        reg: Option<Reg>,
        pred: Option<PredReg>,
    ) -> Result<(), Error> {
        let (written, name, what) = match (reg, pred) {
            (Some(r), _) => (
                w.reg_written[r as usize],
                &self.kernel.reg_names[r as usize],
                "register",
            ),
            (None, Some(p)) => (
                w.pred_written[p as usize],
                &self.kernel.pred_names[p as usize],
                "predicate",
            ),
            (None, None) => return Ok(()),
        };
        let unwritten = lanes & !written;
        if unwritten == 0 {
            return Ok(());
        }
        Err(self.fault(
            w,
            pc,
            unwritten.trailing_zeros() as usize,
            format!(
                "reads {what} `{name}` before any write to it (lanes {unwritten:#010x}): registers and predicates start undefined"
            ),
        ))
    }

    #[inline]
    fn get(w: &Warp, s: Src, lane: usize) -> u64 {
        match s {
            Src::Reg(r) => w.regs[r as usize * 32 + lane],
            Src::Imm(v) => v,
        }
    }

    #[inline]
    fn set(w: &mut Warp, r: Reg, lane: usize, v: u64) {
        w.regs[r as usize * 32 + lane] = v;
    }

    fn pred(w: &Warp, p: PredSrc, lane: usize) -> bool {
        (w.preds[p.reg as usize] >> lane & 1 == 1) != p.negated
    }

    fn set_pred(w: &mut Warp, p: PredReg, lane: usize, v: bool) {
        let m = &mut w.preds[p as usize];
        if v {
            *m |= 1 << lane;
        } else {
            *m &= !(1 << lane);
        }
    }

    fn exit_lanes(&mut self, w: &mut Warp, lanes_mask: u32) -> Result<(), Error> {
        w.spin &= !lanes_mask;
        w.stalled &= !lanes_mask;
        for l in lanes(lanes_mask) {
            // The hardware completes a thread's outstanding cp.async copies even if it exits.
            self.complete_copies(w, l, u32::MAX)?;
            w.state[l] = LaneState::Exited;
            self.exited[w.rank as usize] += 1;
        }
        w.running &= !lanes_mask;
        Ok(())
    }

    fn step(&mut self, w: &mut Warp, pc: u32, mask: u32, exec: u32) -> Result<Flow, Error> {
        let kernel = self.kernel;
        let inst = &kernel.code[pc as usize];
        match &inst.op {
            Op::Mov { d, a, bits } => {
                let m = width_mask(*bits);
                for l in lanes(exec) {
                    let v = Self::get(w, *a, l) & m;
                    Self::set(w, *d, l, v);
                }
            }
            Op::MovPred { d, a } => {
                for l in lanes(exec) {
                    let v = Self::pred(w, *a, l);
                    Self::set_pred(w, *d, l, v);
                }
            }
            Op::Pack {
                d,
                parts,
                part_bits,
            } => {
                let m = width_mask(*part_bits);
                for l in lanes(exec) {
                    let mut v = 0u64;
                    for (i, p) in parts.iter().enumerate() {
                        v |= (Self::get(w, *p, l) & m) << (i as u32 * part_bits);
                    }
                    Self::set(w, *d, l, v);
                }
            }
            Op::Unpack { ds, a, part_bits } => {
                let m = width_mask(*part_bits);
                for l in lanes(exec) {
                    let v = Self::get(w, *a, l);
                    for (i, d) in ds.iter().enumerate() {
                        if let Some(d) = d {
                            Self::set(w, *d, l, (v >> (i as u32 * part_bits)) & m);
                        }
                    }
                }
            }
            Op::ReadClock { d, bits, timer } => {
                // One cycle per warp instruction of the block; the timer runs at the
                // configured clock, so `%clock64` against `%globaltimer` reads `clock_mhz`.
                let v = if *timer {
                    self.clock * 1000 / u64::from(self.config.clock_mhz.max(1))
                } else {
                    self.clock
                };
                let v = v & width_mask(*bits);
                for l in lanes(exec) {
                    Self::set(w, *d, l, v);
                }
            }
            Op::Int {
                op,
                bits,
                signed,
                d,
                a,
                b,
            } => {
                let (bits, signed) = (*bits, *signed);
                let m = width_mask(bits);
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l) & m;
                    let y = Self::get(w, *b, l) & m;
                    let v = match op {
                        IntOp::Add => x.wrapping_add(y) & m,
                        IntOp::Sub => x.wrapping_sub(y) & m,
                        IntOp::MulLo => x.wrapping_mul(y) & m,
                        IntOp::MulHi => {
                            if signed {
                                ((sext(x, bits) as i128 * sext(y, bits) as i128) >> bits) as u64 & m
                            } else {
                                ((x as u128 * y as u128) >> bits) as u64 & m
                            }
                        }
                        IntOp::MulWide => {
                            if signed {
                                (sext(x, bits).wrapping_mul(sext(y, bits))) as u64
                                    & width_mask(2 * bits)
                            } else {
                                x.wrapping_mul(y) & width_mask(2 * bits)
                            }
                        }
                        IntOp::Div | IntOp::Rem => {
                            if y == 0 {
                                return Err(self.fault(w, pc, l, "integer division by zero"));
                            }
                            let is_div = *op == IntOp::Div;
                            if signed {
                                let (p, q) = (sext(x, bits), sext(y, bits));
                                (if is_div {
                                    p.wrapping_div(q)
                                } else {
                                    p.wrapping_rem(q)
                                }) as u64
                                    & m
                            } else if is_div {
                                x / y
                            } else {
                                x % y
                            }
                        }
                        IntOp::Min | IntOp::Max => {
                            let less = if signed {
                                sext(x, bits) < sext(y, bits)
                            } else {
                                x < y
                            };
                            if (*op == IntOp::Min) == less {
                                x
                            } else {
                                y
                            }
                        }
                        IntOp::And => x & y,
                        IntOp::Or => x | y,
                        IntOp::Xor => x ^ y,
                        IntOp::Shl => {
                            let s = Self::get(w, *b, l) as u32;
                            if s >= bits {
                                0
                            } else {
                                (x << s) & m
                            }
                        }
                        IntOp::Shr => {
                            let s = (Self::get(w, *b, l) as u32).min(bits);
                            if signed {
                                ((sext(x, bits) >> s.min(63)) as u64) & m
                            } else if s >= bits {
                                0
                            } else {
                                x >> s
                            }
                        }
                        IntOp::AddSat | IntOp::SubSat => {
                            let (p, q) = (sext(x, bits), sext(y, bits));
                            let r = if *op == IntOp::AddSat { p + q } else { p - q };
                            (r.clamp(i32::MIN as i64, i32::MAX as i64) as i32 as u32) as u64
                        }
                    };
                    Self::set(w, *d, l, v);
                }
            }
            Op::IntUn {
                op,
                bits,
                signed: _,
                d,
                a,
            } => {
                let bits = *bits;
                let m = width_mask(bits);
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l) & m;
                    let v = match op {
                        IntUnOp::Not => !x & m,
                        IntUnOp::Cnot => (x == 0) as u64,
                        IntUnOp::Neg => x.wrapping_neg() & m,
                        IntUnOp::Abs => (sext(x, bits).wrapping_abs() as u64) & m,
                        IntUnOp::Popc => x.count_ones() as u64,
                        IntUnOp::Clz => (x.leading_zeros() - (64 - bits)) as u64,
                        IntUnOp::Brev => x.reverse_bits() >> (64 - bits),
                    };
                    Self::set(w, *d, l, v);
                }
            }
            Op::Mad {
                mode,
                bits,
                signed,
                d,
                a,
                b,
                c,
            } => {
                let (bits, signed) = (*bits, *signed);
                let m = width_mask(bits);
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l) & m;
                    let y = Self::get(w, *b, l) & m;
                    let v = match mode {
                        MadMode::Lo => x.wrapping_mul(y).wrapping_add(Self::get(w, *c, l)) & m,
                        MadMode::Hi => {
                            let hi = if signed {
                                ((sext(x, bits) as i128 * sext(y, bits) as i128) >> bits) as u64
                            } else {
                                ((x as u128 * y as u128) >> bits) as u64
                            };
                            hi.wrapping_add(Self::get(w, *c, l)) & m
                        }
                        MadMode::Wide => {
                            let wm = width_mask(2 * bits);
                            let p = if signed {
                                sext(x, bits).wrapping_mul(sext(y, bits)) as u64
                            } else {
                                x.wrapping_mul(y)
                            };
                            p.wrapping_add(Self::get(w, *c, l)) & wm
                        }
                    };
                    Self::set(w, *d, l, v);
                }
            }
            Op::Bfe {
                bits,
                signed,
                d,
                a,
                pos,
                len,
            } => {
                let bits = *bits;
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l) & width_mask(bits);
                    let p = (Self::get(w, *pos, l) & 0xff) as u32;
                    let n = (Self::get(w, *len, l) & 0xff) as u32;
                    let v = if n == 0 {
                        0
                    } else {
                        let sbit = if *signed {
                            let idx = (p + n - 1).min(bits - 1);
                            x >> idx & 1 == 1
                        } else {
                            false
                        };
                        let mut r = 0u64;
                        for i in 0..bits {
                            let bit = if i < n && p + i < bits {
                                x >> (p + i) & 1 == 1
                            } else {
                                sbit
                            };
                            if bit {
                                r |= 1 << i;
                            }
                        }
                        r
                    };
                    Self::set(w, *d, l, v);
                }
            }
            Op::Bfi {
                bits,
                d,
                a,
                b,
                pos,
                len,
            } => {
                let bits = *bits;
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l);
                    let mut r = Self::get(w, *b, l) & width_mask(bits);
                    let p = (Self::get(w, *pos, l) & 0xff) as u32;
                    let n = (Self::get(w, *len, l) & 0xff) as u32;
                    for i in 0..n {
                        if p + i >= bits {
                            break;
                        }
                        r = (r & !(1 << (p + i))) | ((x >> i & 1) << (p + i));
                    }
                    Self::set(w, *d, l, r);
                }
            }
            Op::Prmt { d, a, b, c } => {
                for l in lanes(exec) {
                    let bytes = (Self::get(w, *b, l) as u32 as u64) << 32
                        | (Self::get(w, *a, l) as u32 as u64);
                    let sel = Self::get(w, *c, l) as u32;
                    let mut r = 0u32;
                    for i in 0..4 {
                        let s = (sel >> (4 * i)) & 0xf;
                        let byte = (bytes >> ((s & 7) * 8)) as u8;
                        let byte = if s & 8 != 0 {
                            if byte & 0x80 != 0 {
                                0xff
                            } else {
                                0
                            }
                        } else {
                            byte
                        };
                        r |= (byte as u32) << (8 * i);
                    }
                    Self::set(w, *d, l, r as u64);
                }
            }
            Op::Lop3 { d, a, b, c, lut } => {
                for l in lanes(exec) {
                    let (x, y, z) = (
                        Self::get(w, *a, l) as u32,
                        Self::get(w, *b, l) as u32,
                        Self::get(w, *c, l) as u32,
                    );
                    let mut r = 0u32;
                    for i in 0..8u32 {
                        if lut >> i & 1 == 1 {
                            let tx = if i & 4 != 0 { x } else { !x };
                            let ty = if i & 2 != 0 { y } else { !y };
                            let tz = if i & 1 != 0 { z } else { !z };
                            r |= tx & ty & tz;
                        }
                    }
                    Self::set(w, *d, l, r as u64);
                }
            }
            Op::Float {
                op,
                prec,
                rnd,
                ftz,
                sat,
                d,
                a,
                b,
            } => {
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l);
                    let y = Self::get(w, *b, l);
                    let v = match prec {
                        Prec::F32 => float_op_f32(*op, x as u32, y as u32, *rnd, *ftz, *sat) as u64,
                        Prec::F64 => {
                            float_op_f64(*op, f64::from_bits(x), f64::from_bits(y)).to_bits()
                        }
                    };
                    Self::set(w, *d, l, v);
                }
            }
            Op::FloatUn {
                op,
                prec,
                rnd,
                ftz,
                d,
                a,
            } => {
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l);
                    let v = match prec {
                        Prec::F32 => float_un_f32(*op, x as u32, *rnd, *ftz) as u64,
                        Prec::F64 => {
                            let f = f64::from_bits(x);
                            match op {
                                FloatUnOp::Neg => (-f).to_bits(),
                                FloatUnOp::Abs => f.abs().to_bits(),
                                FloatUnOp::Sqrt => f.sqrt().to_bits(),
                                FloatUnOp::Rcp => (1.0 / f).to_bits(),
                            }
                        }
                    };
                    Self::set(w, *d, l, v);
                }
            }
            Op::Fma {
                prec,
                rnd,
                ftz,
                sat,
                d,
                a,
                b,
                c,
            } => {
                for l in lanes(exec) {
                    let (x, y, z) = (
                        Self::get(w, *a, l),
                        Self::get(w, *b, l),
                        Self::get(w, *c, l),
                    );
                    let v = match prec {
                        Prec::F32 => fma_f32(x as u32, y as u32, z as u32, *rnd, *ftz, *sat) as u64,
                        Prec::F64 => f64::from_bits(x)
                            .mul_add(f64::from_bits(y), f64::from_bits(z))
                            .to_bits(),
                    };
                    Self::set(w, *d, l, v);
                }
            }
            Op::Half {
                op,
                fmt,
                packed,
                sat,
                d,
                a,
                b,
                c,
            } => {
                let n = if *packed { 2 } else { 1 };
                for l in lanes(exec) {
                    let (x, y, z) = (
                        Self::get(w, *a, l),
                        Self::get(w, *b, l),
                        Self::get(w, *c, l),
                    );
                    let mut r = 0u64;
                    for h in 0..n {
                        let s = 16 * h;
                        let v = half_op(
                            *op,
                            *fmt,
                            *sat,
                            (x >> s) as u16,
                            (y >> s) as u16,
                            (z >> s) as u16,
                        );
                        r |= (v as u64) << s;
                    }
                    Self::set(w, *d, l, r);
                }
            }
            Op::Setp {
                cmp,
                ty,
                ftz,
                p,
                q,
                a,
                b,
                combine,
            } => {
                for l in lanes(exec) {
                    let t = compare(*cmp, *ty, *ftz, Self::get(w, *a, l), Self::get(w, *b, l));
                    let (tp, tq) = match combine {
                        None => (t, !t),
                        Some((op, c)) => {
                            let cv = Self::pred(w, *c, l);
                            (bool_op(*op, t, cv), bool_op(*op, !t, cv))
                        }
                    };
                    if let Some(p) = p {
                        Self::set_pred(w, *p, l, tp);
                    }
                    if let Some(q) = q {
                        Self::set_pred(w, *q, l, tq);
                    }
                }
            }
            Op::Selp { bits, d, a, b, p } => {
                let m = width_mask(*bits);
                for l in lanes(exec) {
                    let v = if Self::pred(w, *p, l) {
                        Self::get(w, *a, l)
                    } else {
                        Self::get(w, *b, l)
                    };
                    Self::set(w, *d, l, v & m);
                }
            }
            Op::PredLogic { op, d, a, b } => {
                for l in lanes(exec) {
                    let v = bool_op(*op, Self::pred(w, *a, l), Self::pred(w, *b, l));
                    Self::set_pred(w, *d, l, v);
                }
            }
            Op::PredNot { d, a } => {
                for l in lanes(exec) {
                    let v = !Self::pred(w, *a, l);
                    Self::set_pred(w, *d, l, v);
                }
            }
            Op::Cvt {
                d,
                a,
                to,
                from,
                rnd,
                sat,
                satfinite,
                ftz,
                relu,
                dst_bits,
            } => {
                for l in lanes(exec) {
                    let v = convert(
                        Self::get(w, *a, l),
                        *from,
                        *to,
                        *rnd,
                        *sat,
                        *satfinite,
                        *ftz,
                        *relu,
                    );
                    let v = if to.is_signed_int() && *dst_bits > to.bits() {
                        sext(v, to.bits()) as u64 & width_mask(*dst_bits)
                    } else {
                        v
                    };
                    Self::set(w, *d, l, v);
                }
            }
            Op::CvtPair {
                d,
                a,
                b,
                to,
                rnd,
                satfinite,
                relu,
            } => {
                for l in lanes(exec) {
                    let (x, y) = (Self::get(w, *a, l) as u32, Self::get(w, *b, l) as u32);
                    let (hi, lo, shift) = match to {
                        Ty::F16x2 => (
                            f32_to_narrow(x, numeric::F16, *rnd, *satfinite, *relu),
                            f32_to_narrow(y, numeric::F16, *rnd, *satfinite, *relu),
                            16,
                        ),
                        Ty::Bf16x2 => (
                            f32_to_narrow(x, numeric::BF16, *rnd, *satfinite, *relu),
                            f32_to_narrow(y, numeric::BF16, *rnd, *satfinite, *relu),
                            16,
                        ),
                        Ty::E4m3x2 => (
                            f32_to_narrow(x, numeric::E4M3, *rnd, true, *relu),
                            f32_to_narrow(y, numeric::E4M3, *rnd, true, *relu),
                            8,
                        ),
                        _ => (
                            f32_to_narrow(x, numeric::E5M2, *rnd, true, *relu),
                            f32_to_narrow(y, numeric::E5M2, *rnd, true, *relu),
                            8,
                        ),
                    };
                    Self::set(w, *d, l, hi << shift | lo);
                }
            }
            Op::CvtF16x2ToF8x2 { d, a, to, relu } => {
                let fmt = if *to == Ty::E4m3x2 {
                    numeric::E4M3
                } else {
                    numeric::E5M2
                };
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l);
                    let mut r = 0u64;
                    for h in 0..2 {
                        let v = numeric::F16.to_f64((x >> (16 * h)) & 0xffff);
                        let v = if *relu && v < 0.0 { 0.0 } else { v };
                        r |= numeric::round_f64(v, fmt, Rounding::NearestEven, true) << (8 * h);
                    }
                    Self::set(w, *d, l, r);
                }
            }
            Op::CvtF8x2ToF16x2 { d, a, from, relu } => {
                let fmt = if *from == Ty::E4m3x2 {
                    numeric::E4M3
                } else {
                    numeric::E5M2
                };
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l);
                    let mut r = 0u64;
                    for h in 0..2 {
                        let v = fmt.to_f64((x >> (8 * h)) & 0xff);
                        let v = if *relu && v < 0.0 { 0.0 } else { v };
                        r |= numeric::round_f64(v, numeric::F16, Rounding::NearestEven, false)
                            << (16 * h);
                    }
                    Self::set(w, *d, l, r);
                }
            }
            Op::Cvta {
                d,
                a,
                space,
                to_space,
                bits,
            } => {
                for l in lanes(exec) {
                    let x = Self::get(w, *a, l);
                    let window = match space {
                        Space::Shared => SHARED_WINDOW,
                        Space::Local => LOCAL_WINDOW,
                        Space::Param => PARAM_WINDOW,
                        Space::Global => 0,
                        other => {
                            return Err(self.fault(
                                w,
                                pc,
                                l,
                                format!("cvta with .{}", other.name()),
                            ))
                        }
                    };
                    let v = if *to_space {
                        if window != 0 && !(window..window + WINDOW_BYTES).contains(&x) {
                            return Err(self.fault(
                                w,
                                pc,
                                l,
                                format!(
                                    "generic address {x:#x} is not in the .{} window",
                                    space.name()
                                ),
                            ));
                        }
                        x - window
                    } else {
                        x + window
                    };
                    Self::set(w, *d, l, v & width_mask(*bits));
                }
            }
            Op::Ld {
                space,
                ty,
                ds,
                dst_bits,
                addr,
                strength,
            } => {
                let elem = ty.bytes() as usize;
                let total = elem * ds.len();
                let mut accesses = LaneAccesses::new();
                for l in lanes(exec) {
                    let a = self.address(w, *addr, l);
                    let loc = self.resolve(w, pc, l, *space, a, total)?;
                    if let (Some(_), Loc::Shared(o)) = (&self.bulk, &loc) {
                        self.bulk_generic_access(w, pc, l, *o, total, false)?;
                    }
                    let mut buf = [0u8; 32];
                    self.copy_out(&loc, &mut buf[..total]);
                    accesses.push(&loc, total);
                    for (i, dr) in ds.iter().enumerate() {
                        let Some(dr) = dr else { continue };
                        let mut raw = [0u8; 8];
                        copy_bytes(&mut raw[..elem], &buf[i * elem..(i + 1) * elem]);
                        let mut v = u64::from_le_bytes(raw);
                        if ty.is_signed_int() && dst_bits[i] > ty.bits() {
                            v = sext(v, ty.bits()) as u64 & width_mask(dst_bits[i]);
                        }
                        Self::set(w, *dr, l, v);
                    }
                }
                self.check_races(
                    w,
                    pc,
                    exec,
                    (*space, *addr),
                    &accesses,
                    total,
                    false,
                    *strength,
                )?;
            }
            Op::St {
                space,
                ty,
                srcs,
                addr,
                strength,
            } => {
                let elem = ty.bytes() as usize;
                let total = elem * srcs.len();
                let mut accesses = LaneAccesses::new();
                for l in lanes(exec) {
                    let a = self.address(w, *addr, l);
                    let loc = self.resolve(w, pc, l, *space, a, total)?;
                    self.check_writable(w, pc, l, &loc, total)?;
                    let mut buf = [0u8; 32];
                    for (i, s) in srcs.iter().enumerate() {
                        let v = Self::get(w, *s, l);
                        copy_bytes(&mut buf[i * elem..(i + 1) * elem], &v.to_le_bytes()[..elem]);
                    }
                    self.copy_in(&loc, &buf[..total]);
                    if let (Some(_), Loc::Shared(o)) = (&self.wg, &loc) {
                        self.wgmma_generic_write(w, pc, l, *o, total)?;
                    }
                    accesses.push(&loc, total);
                }
                let at = (*space, *addr);
                if !accesses.contiguous {
                    self.check_lanes_store_apart(w, pc, exec, at, total)?;
                }
                self.check_races(w, pc, exec, at, &accesses, total, true, *strength)?;
            }
            Op::Atom {
                space,
                op,
                ty,
                strength,
                d,
                addr,
                b,
                c,
            } => {
                let n = ty.bytes() as usize;
                for l in lanes(exec) {
                    let a = self.address(w, *addr, l);
                    let loc = self.resolve(w, pc, l, *space, a, n)?;
                    self.check_writable(w, pc, l, &loc, n)?;
                    // An atomic read-modify-write is one strong write for the race detector.
                    self.check_race(w, pc, l, &loc, n, true, *strength)?;
                    let mut buf = [0u8; 8];
                    self.copy_out(&loc, &mut buf[..n]);
                    let old = u64::from_le_bytes(buf);
                    let bv = Self::get(w, *b, l) & width_mask(ty.bits());
                    let cv = c.map(|c| Self::get(w, c, l) & width_mask(ty.bits()));
                    let new = atomic_result(*op, *ty, old, bv, cv);
                    self.copy_in(&loc, &new.to_le_bytes()[..n]);
                    if let (Some(_), Loc::Shared(o)) = (&self.wg, &loc) {
                        self.wgmma_generic_write(w, pc, l, *o, n)?;
                    }
                    if let Some(d) = d {
                        Self::set(w, *d, l, old);
                    }
                }
            }
            Op::Bra { target, uni } => {
                if *uni && exec != 0 && exec != mask {
                    match self.config.uniform_branches {
                        UniformBranchPolicy::Deny => {
                            return Err(self.warp_fault(w, pc, format!(
                                "divergent `bra.uni`: lanes {exec:#010x} branch, lanes {:#010x} do not (`.uni` promises all active threads agree; the PTX ISA leaves this undefined — use plain `bra`)",
                                mask & !exec
                            )))
                        }
                        UniformBranchPolicy::Record => {
                            if !self.stats.divergent_uniform_branches.contains(&inst.line) {
                                self.stats.divergent_uniform_branches.push(inst.line);
                            }
                        }
                    }
                }
                for l in lanes(mask) {
                    w.pc[l] = if exec >> l & 1 == 1 { *target } else { pc + 1 };
                }
                return Ok(Flow::Done);
            }
            Op::Exit => {
                if exec != 0 && self.wg.is_some() {
                    self.wgmma_check_exit(w, pc)?;
                }
                for l in lanes(mask & !exec) {
                    w.pc[l] = pc + 1;
                }
                self.exit_lanes(w, exec)?;
                return Ok(Flow::Done);
            }
            Op::Trap => {
                if exec != 0 {
                    return Err(self.fault(w, pc, exec.trailing_zeros() as usize, "trap"));
                }
            }
            Op::Bar { id, count, aligned } => {
                if *aligned {
                    if exec != 0 && exec != mask {
                        return Err(self.warp_fault(w, pc, format!(
                            "`.aligned` barrier under a lane-divergent guard: lanes {exec:#010x} wait, lanes {:#010x} skip it (the PTX ISA requires the guard of an aligned barrier to agree in all threads; use barrier.sync without .aligned, or branch around it uniformly)",
                            mask & !exec
                        )));
                    }
                    if exec == 0 && count.is_none() {
                        w.skipped_barriers.push(pc);
                    }
                    w.barrier_pc_aligned |= exec;
                }
                for l in lanes(mask) {
                    w.pc[l] = pc + 1;
                }
                for l in lanes(exec) {
                    let bid = Self::get(w, *id, l) as u32;
                    if bid > 15 {
                        return Err(self.fault(
                            w,
                            pc,
                            l,
                            format!("barrier id {bid} out of range 0..16"),
                        ));
                    }
                    let cnt = count.map_or(0, |c| Self::get(w, c, l) as u32);
                    if count.is_some() && (cnt == 0 || cnt % 32 != 0) {
                        return Err(self.fault(
                            w,
                            pc,
                            l,
                            format!("barrier thread count {cnt} is not a positive multiple of 32"),
                        ));
                    }
                    w.barrier_id[l] = bid;
                    w.barrier_count[l] = cnt;
                    w.state[l] = LaneState::Barrier;
                }
                w.running &= !exec;
                return Ok(Flow::Done);
            }
            Op::BarWarp { mask: m } => {
                for l in lanes(exec) {
                    let mm = Self::get(w, *m, l) as u32;
                    self.check_members(w, pc, exec, mm, "bar.warp.sync")?;
                }
            }
            Op::Nop => {}
            Op::Mapa { d, a, rank } => {
                for l in lanes(exec) {
                    let r = Self::get(w, *rank, l) as u32;
                    let addr = Self::get(w, *a, l) as u32 as u64 & ((1 << CLUSTER_RANK_SHIFT) - 1);
                    if r >= self.cluster.ranks {
                        return Err(self.fault(
                            w,
                            pc,
                            l,
                            format!(
                                "mapa to CTA rank {r}, but the cluster has {} CTAs ({:?})",
                                self.cluster.ranks, self.cluster.shape
                            ),
                        ));
                    }
                    if addr >= self.cluster.cta_shared as u64 {
                        return Err(self.fault(w, pc, l, format!(
                            "mapa of shared offset {addr:#x}, outside the CTA's {} bytes of shared memory",
                            self.cluster.cta_shared
                        )));
                    }
                    Self::set(w, *d, l, (r as u64 + 1) << CLUSTER_RANK_SHIFT | addr);
                }
            }
            Op::ClusterArrive { aligned } | Op::ClusterWait { aligned } => {
                let wait = matches!(inst.op, Op::ClusterWait { .. });
                if *aligned && exec != w.running {
                    return Err(self.warp_fault(w, pc, format!(
                        "`.aligned` barrier.cluster executed by lanes {exec:#010x} while lanes {:#010x} of the warp are elsewhere or skip it: every thread of the warp must execute it together",
                        w.running & !exec
                    )));
                }
                for l in lanes(exec) {
                    let arrived = w.cluster_arrived >> l & 1 == 1;
                    if wait && !arrived {
                        return Err(self.fault(w, pc, l, "barrier.cluster.wait without a barrier.cluster.arrive of this phase in this thread"));
                    }
                    if !wait && arrived {
                        return Err(self.fault(w, pc, l, "barrier.cluster.arrive twice in one phase (barrier.cluster.wait between them)"));
                    }
                    if !wait {
                        w.cluster_arrived |= 1 << l;
                    }
                }
                if wait {
                    for l in lanes(mask) {
                        w.pc[l] = pc + 1;
                    }
                    for l in lanes(exec) {
                        w.state[l] = LaneState::ClusterWait;
                    }
                    w.running &= !exec;
                    return Ok(Flow::Done);
                }
            }
            Op::Shfl {
                mode,
                d,
                p,
                a,
                b,
                c,
                mask: mm,
            } => {
                if exec != 0 {
                    let member = Self::get(w, *mm, exec.trailing_zeros() as usize) as u32;
                    self.check_members(w, pc, exec, member, "shfl.sync")?;
                    let mut vals = [0u64; 32];
                    for l in lanes(exec) {
                        vals[l] = Self::get(w, *a, l) & 0xffff_ffff;
                    }
                    for l in lanes(exec) {
                        let bval = Self::get(w, *b, l) as u32;
                        let cval = Self::get(w, *c, l) as u32;
                        let lane = l as u32;
                        let seg = (cval >> 8) & 0x1f;
                        let clamp = cval & 0x1f;
                        let max_lane = (lane & seg) | (clamp & !seg);
                        let min_lane = lane & seg;
                        let (j, ok) = match mode {
                            ShflMode::Up => {
                                let j = lane as i32 - (bval & 0x1f) as i32;
                                (j, j >= max_lane as i32)
                            }
                            ShflMode::Down => {
                                let j = lane + (bval & 0x1f);
                                (j as i32, j <= max_lane)
                            }
                            ShflMode::Bfly => {
                                let j = lane ^ (bval & 0x1f);
                                (j as i32, j <= max_lane)
                            }
                            ShflMode::Idx => {
                                let j = min_lane | ((bval & 0x1f) & !seg);
                                (j as i32, j <= max_lane)
                            }
                        };
                        let src = if ok { j as usize } else { l };
                        if exec >> src & 1 == 0 {
                            return Err(self.fault(w, pc, l, format!("reads lane {src}, which is not executing this shfl.sync (its value is undefined)")));
                        }
                        Self::set(w, *d, l, vals[src]);
                        if let Some(p) = p {
                            Self::set_pred(w, *p, l, ok);
                        }
                    }
                }
            }
            Op::Vote {
                mode,
                d,
                dp,
                a,
                mask: mm,
            } => {
                if exec != 0 {
                    let member = Self::get(w, *mm, exec.trailing_zeros() as usize) as u32;
                    self.check_members(w, pc, exec, member, "vote.sync")?;
                    let mut ballot = 0u32;
                    for l in lanes(exec) {
                        if Self::pred(w, *a, l) {
                            ballot |= 1 << l;
                        }
                    }
                    for l in lanes(exec) {
                        match mode {
                            VoteMode::Ballot => Self::set(w, *d, l, ballot as u64),
                            VoteMode::All => Self::set_pred(
                                w,
                                dp.expect("decoded with a predicate"),
                                l,
                                ballot == exec,
                            ),
                            VoteMode::Any => Self::set_pred(
                                w,
                                dp.expect("decoded with a predicate"),
                                l,
                                ballot != 0,
                            ),
                            VoteMode::Uni => Self::set_pred(
                                w,
                                dp.expect("decoded with a predicate"),
                                l,
                                ballot == 0 || ballot == exec,
                            ),
                        }
                    }
                }
            }
            Op::Activemask { d } => {
                for l in lanes(exec) {
                    Self::set(w, *d, l, exec as u64);
                }
            }
            Op::CpAsync {
                dst,
                src,
                cp_bytes,
                src_bytes,
                ignore_src,
            } => {
                let n = *cp_bytes as usize;
                for l in lanes(exec) {
                    let da = self.address(w, *dst, l);
                    let sa = self.address(w, *src, l);
                    let Loc::Shared(doff) = self.resolve(w, pc, l, Space::Shared, da, n)? else {
                        unreachable!("resolve(Shared) yields shared")
                    };
                    let valid = match (src_bytes, ignore_src) {
                        (Some(s), _) => {
                            let s = Self::get(w, *s, l) as usize;
                            if s > n {
                                return Err(self.fault(
                                    w,
                                    pc,
                                    l,
                                    format!("src-size {s} exceeds cp-size {n}"),
                                ));
                            }
                            s
                        }
                        (None, Some(p)) if Self::pred(w, *p, l) => 0,
                        _ => n,
                    };
                    let mut data = [0u8; 16];
                    if valid > 0 {
                        // Alignment is that of the full copy, even when fewer bytes are read.
                        if !sa.is_multiple_of(n as u64) {
                            return Err(self.fault(
                                w,
                                pc,
                                l,
                                format!("misaligned global source {sa:#x} for a {n}-byte cp.async"),
                            ));
                        }
                        let loc = self.resolve(w, pc, l, Space::Global, sa, valid)?;
                        self.read(w, pc, l, &loc, &mut data[..valid], Strength::Weak)?;
                    }
                    w.pending.push(PendingCopy {
                        lane: l as u32,
                        group: w.committed[l],
                        dst: doff,
                        len: n,
                        data,
                        pc,
                    });
                }
            }
            Op::CpAsyncCommit => {
                for l in lanes(exec) {
                    w.committed[l] += 1;
                }
            }
            Op::CpAsyncWait {
                groups,
                commit_first,
            } => {
                for l in lanes(exec) {
                    if *commit_first {
                        w.committed[l] += 1;
                    }
                    let limit = w.committed[l].saturating_sub(*groups);
                    self.complete_copies(w, l, limit)?;
                }
            }
            Op::Ldmatrix {
                space,
                num,
                trans,
                ds,
                addr,
            } => {
                self.require_full_warp(w, pc, exec, "ldmatrix")?;
                let mut rows = vec![[0u16; 8]; 8 * *num as usize];
                for (r, row) in rows.iter_mut().enumerate() {
                    let a = self.address(w, *addr, r);
                    let a = if *space == Space::Generic {
                        if !(SHARED_WINDOW..SHARED_WINDOW + WINDOW_BYTES).contains(&a) {
                            return Err(self.fault(
                                w,
                                pc,
                                r,
                                format!("generic address {a:#x} is not shared memory"),
                            ));
                        }
                        a - SHARED_WINDOW
                    } else {
                        a
                    };
                    let loc = self.resolve(w, pc, r, Space::Shared, a, 16)?;
                    let mut buf = [0u8; 16];
                    self.read(w, pc, r, &loc, &mut buf, Strength::Weak)?;
                    for (c, v) in row.iter_mut().enumerate() {
                        *v = u16::from_le_bytes([buf[2 * c], buf[2 * c + 1]]);
                    }
                }
                for l in 0..32 {
                    for (m, dr) in ds.iter().enumerate() {
                        let mut v = 0u64;
                        for h in 0..2 {
                            let (r, c) = mma::ldmatrix_source(l, h, *trans);
                            v |= (rows[8 * m + r][c] as u64) << (16 * h);
                        }
                        Self::set(w, *dr, l, v);
                    }
                }
            }
            Op::FenceProxyAsync => {
                for l in lanes(exec) {
                    w.proxy_fences[l] = w.proxy_fences[l].wrapping_add(1);
                }
            }
            Op::WgmmaFence | Op::WgmmaCommit | Op::WgmmaWait { .. } | Op::Wgmma(_) => {
                return self.wgmma_step(w, pc, exec);
            }
            // listed, not `op if op.is_bulk()`: this match is exhaustive on purpose
            Op::MbarInit { .. }
            | Op::MbarArrive { .. }
            | Op::MbarExpectTx { .. }
            | Op::MbarWait { .. }
            | Op::MbarInval { .. }
            | Op::BulkCopy { .. }
            | Op::BulkTensor { .. } => {
                return self.bulk_step(w, pc, exec);
            }
            Op::Mma(m) => {
                self.require_full_warp(w, pc, exec, "mma.sync")?;
                let layout = mma::Layout::new(m.shape, m.atype, m.btype, m.ctype, m.dtype)
                    .expect("decode accepted only supported layouts");
                let gather = |ops: &[Src]| -> mma::Fragment {
                    assert!(
                        ops.len() <= mma::MAX_FRAGMENT_REGISTERS,
                        "decode's layouts fit"
                    );
                    let mut fragment = [[0u64; mma::MAX_FRAGMENT_REGISTERS]; 32];
                    for (l, regs) in fragment.iter_mut().enumerate() {
                        for (r, s) in regs.iter_mut().zip(ops) {
                            *r = Self::get(w, *s, l);
                        }
                    }
                    fragment
                };
                let (a, b, c) = (gather(&m.a), gather(&m.b), gather(&m.c));
                let out = mma::execute(&layout, m.satfinite, &a, &b, &c);
                for (l, regs) in out.iter().enumerate() {
                    for (i, dr) in m.d.iter().enumerate() {
                        Self::set(w, *dr, l, regs[i]);
                    }
                }
            }
        }
        Ok(Flow::Next)
    }

    fn require_full_warp(&self, w: &Warp, pc: u32, exec: u32, what: &str) -> Result<(), Error> {
        if exec != FULL {
            return Err(self.warp_fault(w, pc, format!(
                "`{what}` is `.aligned`: all 32 lanes must execute it together, but only lanes {exec:#010x} do (diverged, predicated off, exited, or a partial warp)"
            )));
        }
        Ok(())
    }

    fn check_members(
        &self,
        w: &Warp,
        pc: u32,
        exec: u32,
        member: u32,
        what: &str,
    ) -> Result<(), Error> {
        if exec & !member != 0 {
            return Err(self.warp_fault(
                w,
                pc,
                format!(
                    "lanes {:#010x} execute `{what}` but are not in its membermask {member:#010x}",
                    exec & !member
                ),
            ));
        }
        if member & !exec != 0 {
            return Err(self.warp_fault(w, pc, format!(
                "membermask {member:#010x} names lanes {:#010x} that are not executing this `{what}` (diverged, predicated off, exited, or not in the block)",
                member & !exec
            )));
        }
        Ok(())
    }

    fn address(&self, w: &Warp, a: Addr, lane: usize) -> u64 {
        let base = a.base.map_or(0, |r| w.regs[r as usize * 32 + lane]);
        base.wrapping_add(a.offset as u64)
    }

    /// Turns an address in `space` into a location, checking bounds and natural alignment.
    fn resolve(
        &self,
        w: &Warp,
        pc: u32,
        lane: usize,
        space: Space,
        addr: u64,
        len: usize,
    ) -> Result<Loc, Error> {
        if !addr.is_multiple_of(len.min(16) as u64) && len.is_power_of_two() {
            return Err(self.fault(
                w,
                pc,
                lane,
                format!(
                    "misaligned {len}-byte access at .{} address {addr:#x}",
                    space.name()
                ),
            ));
        }
        let space = if space == Space::Generic {
            if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_BYTES).contains(&addr) {
                return self.resolve(w, pc, lane, Space::Shared, addr - SHARED_WINDOW, len);
            } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_BYTES).contains(&addr) {
                return self.resolve(w, pc, lane, Space::Local, addr - LOCAL_WINDOW, len);
            } else if (PARAM_WINDOW..PARAM_WINDOW + WINDOW_BYTES).contains(&addr) {
                return self.resolve(w, pc, lane, Space::Param, addr - PARAM_WINDOW, len);
            }
            Space::Global
        } else {
            space
        };
        match space {
            Space::Global => {
                let Some((alloc, off)) = self.mem.locate(addr, len as u64) else {
                    let hint = if addr < GLOBAL_BASE {
                        " (a shared/local address used as global, or a null pointer?)"
                    } else {
                        ""
                    };
                    return Err(self.fault(
                        w,
                        pc,
                        lane,
                        format!(
                            "out-of-bounds global access of {len} bytes at {addr:#x}: {}{hint}",
                            self.mem.describe(addr, len as u64)
                        ),
                    ));
                };
                Ok(Loc::Global { alloc, off })
            }
            Space::Shared => {
                let size = self.cluster.cta_shared as u64;
                if addr.checked_add(len as u64).is_none_or(|e| e > size) {
                    let hint = if addr >> CLUSTER_RANK_SHIFT != 0 {
                        " (a shared::cluster address from mapa, used where a shared::cta one is needed?)"
                    } else {
                        ""
                    };
                    return Err(self.fault(w, pc, lane, format!("out-of-bounds shared access of {len} bytes at offset {addr:#x} (the block has {size} bytes of shared memory){hint}")));
                }
                Ok(Loc::Shared(self.shared_base(w.rank) + addr as usize))
            }
            Space::Local => {
                let per = self.kernel.local_bytes_per_thread as u64;
                if addr.checked_add(len as u64).is_none_or(|e| e > per) {
                    return Err(self.fault(w, pc, lane, format!("out-of-bounds local access of {len} bytes at offset {addr:#x} ({per} bytes per thread)")));
                }
                let thread = (w.index * 32 + lane as u32) as u64;
                Ok(Loc::Local((thread * per + addr) as usize))
            }
            Space::Param => {
                if addr
                    .checked_add(len as u64)
                    .is_none_or(|e| e > self.params.len() as u64)
                {
                    return Err(self.fault(w, pc, lane, format!("parameter access of {len} bytes at offset {addr} beyond the {}-byte parameter block", self.params.len())));
                }
                Ok(Loc::Param(addr as usize))
            }
            Space::Const => {
                Err(self.fault(w, pc, lane, "the .const space has no variables in ptxsim"))
            }
            Space::Generic => unreachable!("generic resolved above"),
        }
    }

    /// A generic store or atomic to `loc`: not to kernel parameters (reachable through a
    /// `cvta.param` address), nor to shared bytes of an mbarrier or an unfinished bulk copy.
    #[inline]
    fn check_writable(
        &mut self,
        w: &Warp,
        pc: u32,
        lane: usize,
        loc: &Loc,
        len: usize,
    ) -> Result<(), Error> {
        match loc {
            Loc::Param(_) => {
                Err(self.fault(w, pc, lane, "store to kernel parameter memory (read-only)"))
            }
            Loc::Shared(o) if self.bulk.is_some() => {
                self.bulk_generic_access(w, pc, lane, *o, len, true)
            }
            _ => Ok(()),
        }
    }

    fn read(
        &mut self,
        w: &Warp,
        pc: u32,
        lane: usize,
        loc: &Loc,
        out: &mut [u8],
        strength: Strength,
    ) -> Result<(), Error> {
        self.check_race(w, pc, lane, loc, out.len(), false, strength)?;
        if let (Some(_), Loc::Shared(o)) = (&self.bulk, loc) {
            self.bulk_generic_access(w, pc, lane, *o, out.len(), false)?;
        }
        self.copy_out(loc, out);
        Ok(())
    }

    fn write(
        &mut self,
        w: &Warp,
        pc: u32,
        lane: usize,
        loc: &Loc,
        data: &[u8],
        strength: Strength,
    ) -> Result<(), Error> {
        if let Loc::Param(_) = loc {
            unreachable!("st to .param rejected by decode");
        }
        self.check_race(w, pc, lane, loc, data.len(), true, strength)?;
        if let (Some(_), Loc::Shared(o)) = (&self.bulk, loc) {
            self.bulk_generic_access(w, pc, lane, *o, data.len(), true)?;
        }
        self.copy_in(loc, data);
        if let (Some(_), Loc::Shared(o)) = (&self.wg, loc) {
            self.wgmma_generic_write(w, pc, lane, *o, data.len())?;
        }
        Ok(())
    }

    #[inline(always)]
    fn copy_out(&self, loc: &Loc, out: &mut [u8]) {
        let n = out.len();
        copy_bytes(
            out,
            match *loc {
                Loc::Global { alloc, off } => &self.mem.allocation(alloc)[off..off + n],
                Loc::Shared(o) => &self.shared[o..o + n],
                Loc::Local(o) => &self.local[o..o + n],
                Loc::Param(o) => &self.params[o..o + n],
            },
        );
    }

    #[inline(always)]
    fn copy_in(&mut self, loc: &Loc, data: &[u8]) {
        let n = data.len();
        let dst = match *loc {
            Loc::Global { alloc, off } => &mut self.mem.allocation_mut(alloc)[off..off + n],
            Loc::Shared(o) => &mut self.shared[o..o + n],
            Loc::Local(o) => &mut self.local[o..o + n],
            Loc::Param(_) => unreachable!("parameters are read-only"),
        };
        copy_bytes(dst, data);
    }

    /// Checks an access of `len` bytes at `loc` by lane `lane` of `w` against the race
    /// detector of its space (shared memory; global memory unless turned off) and records it.
    #[allow(clippy::too_many_arguments)]
    fn check_race(
        &mut self,
        w: &Warp,
        pc: u32,
        lane: usize,
        loc: &Loc,
        len: usize,
        write: bool,
        strength: Strength,
    ) -> Result<(), Error> {
        let Some((region, off)) = region_of(loc) else {
            return Ok(());
        };
        let access = Access {
            epoch: self.epoch,
            warp: w.index,
            pc,
            write,
            strength,
        };
        self.check_region(w, region, off, len, &access, |_| lane)
    }

    /// Checks `access` to `len` bytes at `off` of `region` ([`SHARED_REGION`] or a global
    /// allocation's index); `lane_of` names the lane that touched a given byte of the span.
    #[inline]
    fn check_region(
        &mut self,
        w: &Warp,
        region: usize,
        off: usize,
        len: usize,
        access: &Access,
        lane_of: impl Fn(usize) -> usize,
    ) -> Result<(), Error> {
        let mut ctx = Context {
            launch_start: self.launch_start,
            block_start: self.block_start,
            cross_block: false,
        };
        let (conflict, site) = if region == SHARED_REGION {
            match self.shared_shadow.access(off, len, access, &ctx) {
                Ok(()) => return Ok(()),
                Err(c) => (c, RaceSite::Shared(off)),
            }
        } else {
            if !self.config.check_global_races {
                return Ok(());
            }
            ctx.cross_block = true;
            let (words, split) = self.mem.race_shadow(region);
            match race::access_global(words, split, off, len, access, &ctx) {
                Ok(()) => return Ok(()),
                Err(c) => {
                    let addr = self.mem.allocation_base(region) + off as u64;
                    (
                        c,
                        RaceSite::Global {
                            alloc: region,
                            off,
                            addr,
                        },
                    )
                }
            }
        };
        let lane = lane_of(conflict.byte);
        Err(self.race_error(w, access.pc, lane, access, conflict, site))
    }

    /// The block that ran `epoch`.
    fn block_of(&self, epoch: u32) -> (u32, u32, u32) {
        let i = self
            .block_epochs
            .partition_point(|&(start, _)| start <= epoch);
        i.checked_sub(1)
            .map_or(self.cluster.ctaid(0), |i| self.block_epochs[i].1)
    }

    fn race_error(
        &self,
        w: &Warp,
        pc: u32,
        lane: usize,
        access: &Access,
        c: Conflict,
        site: RaceSite,
    ) -> Error {
        let other_pc = c.other.pc() as usize;
        let other_block = self.block_of(c.other.epoch());
        let same_block = c.other.epoch() >= self.block_start;
        let who = match (c.other.warp(), same_block) {
            (Some(v), true) => format!("warp {v}"),
            (None, true) => "several warps".to_string(),
            (Some(v), false) => format!("warp {v} of block {other_block:?}"),
            (None, false) => format!("several warps of block {other_block:?}"),
        };
        let (did, does) = (
            if c.other_wrote { "wrote" } else { "read" },
            if access.write { "writes" } else { "reads" },
        );
        let why = if !same_block {
            "different blocks of one launch are ordered by nothing ptxsim models; only atomics and strong (.relaxed/.acquire/.release at .gpu scope) accesses may meet there"
        } else if access.strength != Strength::Weak || c.other.strong() {
            "no barrier in between, and a plain access meeting an atomic or strong one is still a data race (make both strong, e.g. ld.relaxed.gpu, or put a bar.sync between them)"
        } else {
            "no barrier in between (missing bar.sync?)"
        };
        let message = match site {
            RaceSite::Shared(off) => format!(
                "shared-memory race: warp {} {does} shared byte {:#x}, which {who} {did} at line {} (`{}`): {why}",
                w.index,
                off + c.byte,
                self.kernel.code[other_pc].line,
                self.kernel.texts[other_pc]
            ),
            RaceSite::Global { alloc, off, addr } => format!(
                "global-memory race: warp {} {does} the byte at {:#x} (offset {} of the {}-byte allocation at {:#x}), which {who} {did} at line {} (`{}`): {why}",
                w.index,
                addr + c.byte as u64,
                off + c.byte,
                self.mem.allocation(alloc).len(),
                self.mem.allocation_base(alloc),
                self.kernel.code[other_pc].line,
                self.kernel.texts[other_pc]
            ),
        };
        self.fault(w, pc, lane, message)
    }

    /// Where lane `l` of an instruction accessing `len` bytes at `at` went (it already ran,
    /// so the address resolves).
    fn lane_region(
        &self,
        w: &Warp,
        pc: u32,
        l: usize,
        at: (Space, Addr),
        len: usize,
    ) -> Option<(usize, usize)> {
        let a = self.address(w, at.1, l);
        let loc = self.resolve(w, pc, l, at.0, a, len).ok()?;
        region_of(&loc)
    }

    /// Two lanes of one store that write overlapping bytes race (which one lands is
    /// undefined). Only called when the lanes were not one ascending contiguous span.
    fn check_lanes_store_apart(
        &self,
        w: &Warp,
        pc: u32,
        exec: u32,
        at: (Space, Addr),
        len: usize,
    ) -> Result<(), Error> {
        let mut sorted: Vec<(usize, usize, usize)> = lanes(exec)
            .filter_map(|l| {
                self.lane_region(w, pc, l, at, len)
                    .map(|(region, off)| (region, off, l))
            })
            .collect();
        sorted.sort_unstable();
        if let Some(p) = sorted
            .windows(2)
            .find(|p| p[0].0 == p[1].0 && p[0].1 + len > p[1].1)
        {
            let (a, b) = (p[0].2, p[1].2);
            return Err(self.fault(
                w,
                pc,
                b,
                format!(
                    "lanes {a} and {b} of warp {} store to overlapping bytes in one instruction: which value lands is undefined",
                    w.index
                ),
            ));
        }
        Ok(())
    }

    /// The race checks of one warp instruction's accesses of `len` bytes per lane: one check
    /// over the whole span when the lanes' accesses are contiguous in one region (the usual
    /// coalesced access), else one per lane.
    #[allow(clippy::too_many_arguments)]
    fn check_races(
        &mut self,
        w: &Warp,
        pc: u32,
        exec: u32,
        at: (Space, Addr),
        accesses: &LaneAccesses,
        len: usize,
        write: bool,
        strength: Strength,
    ) -> Result<(), Error> {
        let Some((region, off)) = accesses.first else {
            return Ok(());
        };
        let access = Access {
            epoch: self.epoch,
            warp: w.index,
            pc,
            write,
            strength,
        };
        if accesses.contiguous && !accesses.private {
            return self.check_region(w, region, off, accesses.lanes * len, &access, |byte| {
                lanes(exec).nth(byte / len).unwrap_or(0)
            });
        }
        for l in lanes(exec) {
            if let Some((region, off)) = self.lane_region(w, pc, l, at, len) {
                self.check_region(w, region, off, len, &access, |_| l)?;
            }
        }
        Ok(())
    }

    /// Lands the pending cp.async copies of `lane` whose group is below `limit`.
    fn complete_copies(&mut self, w: &mut Warp, lane: usize, limit: u32) -> Result<(), Error> {
        if w.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut w.pending);
        let mut keep = Vec::with_capacity(pending.len());
        let mut result = Ok(());
        for c in pending {
            if c.lane as usize == lane && c.group < limit && result.is_ok() {
                let dst = Loc::Shared(c.dst);
                result = self.write(w, c.pc, lane, &dst, &c.data[..c.len], Strength::Weak);
            } else {
                keep.push(c);
            }
        }
        w.pending = keep;
        result
    }
}

/// `dst.copy_from_slice(src)` for the access sizes of loads and stores, as fixed-size moves
/// rather than a call to `memmove` (which the interpreter's hottest loop would otherwise make
/// for every lane).
#[inline(always)]
fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    match dst.len() {
        1 => dst[0] = src[0],
        2 => dst[..2].copy_from_slice(&src[..2]),
        4 => dst[..4].copy_from_slice(&src[..4]),
        8 => dst[..8].copy_from_slice(&src[..8]),
        16 => dst[..16].copy_from_slice(&src[..16]),
        _ => dst.copy_from_slice(src),
    }
}

fn bool_op(op: BoolOp, a: bool, b: bool) -> bool {
    match op {
        BoolOp::And => a && b,
        BoolOp::Or => a || b,
        BoolOp::Xor => a ^ b,
    }
}

fn canonical_f32(x: f32) -> u32 {
    if x.is_nan() {
        0x7fff_ffff
    } else {
        x.to_bits()
    }
}

fn sat01(x: f32) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

fn float_op_f32(op: FloatOp, a: u32, b: u32, rnd: Rounding, ftz: bool, sat: bool) -> u32 {
    let mut x = f32::from_bits(a);
    let mut y = f32::from_bits(b);
    if ftz {
        x = numeric::ftz32(x);
        y = numeric::ftz32(y);
    }
    let r = match op {
        FloatOp::Min | FloatOp::Max => {
            let v = min_max_f32(op == FloatOp::Min, x, y);
            return canonical_f32(if ftz { numeric::ftz32(v) } else { v });
        }
        _ if rnd == Rounding::NearestEven => match op {
            FloatOp::Add => x + y,
            FloatOp::Sub => x - y,
            FloatOp::Mul => x * y,
            // f32 division correctly rounded: Rust's f32 `/` is IEEE.
            _ => x / y,
        },
        _ => {
            let (xd, yd) = (x as f64, y as f64);
            let odd = match op {
                FloatOp::Add => numeric::add_odd(xd, yd),
                FloatOp::Sub => numeric::add_odd(xd, -yd),
                FloatOp::Mul => xd * yd, // exact
                _ => {
                    let q = xd / yd;
                    let r = (-q).mul_add(yd, xd);
                    numeric::to_odd(
                        q,
                        if (r > 0.0) == (yd > 0.0) {
                            r.abs()
                        } else {
                            -r.abs()
                        },
                    )
                }
            };
            f32::from_bits(numeric::to_f32_bits(odd, rnd))
        }
    };
    let r = if ftz { numeric::ftz32(r) } else { r };
    canonical_f32(if sat { sat01(r) } else { r })
}

fn min_max_f32(min: bool, x: f32, y: f32) -> f32 {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => f32::NAN,
        (true, false) => y,
        (false, true) => x,
        _ => {
            // -0.0 is smaller than +0.0.
            let less = x < y || (x == y && x.is_sign_negative() && !y.is_sign_negative());
            if less == min {
                x
            } else {
                y
            }
        }
    }
}

fn float_op_f64(op: FloatOp, x: f64, y: f64) -> f64 {
    match op {
        FloatOp::Add => x + y,
        FloatOp::Sub => x - y,
        FloatOp::Mul => x * y,
        FloatOp::Div => x / y,
        FloatOp::Min | FloatOp::Max => match (x.is_nan(), y.is_nan()) {
            (true, true) => f64::NAN,
            (true, false) => y,
            (false, true) => x,
            _ => {
                let less = x < y || (x == y && x.is_sign_negative() && !y.is_sign_negative());
                if less == (op == FloatOp::Min) {
                    x
                } else {
                    y
                }
            }
        },
    }
}

fn float_un_f32(op: FloatUnOp, a: u32, rnd: Rounding, ftz: bool) -> u32 {
    let mut x = f32::from_bits(a);
    if ftz {
        x = numeric::ftz32(x);
    }
    let r = match op {
        FloatUnOp::Neg => return (-x).to_bits(),
        FloatUnOp::Abs => return x.abs().to_bits(),
        FloatUnOp::Sqrt => {
            let xd = x as f64;
            let s = xd.sqrt();
            let rem = (-s).mul_add(s, xd);
            f32::from_bits(numeric::to_f32_bits(numeric::to_odd(s, rem), rnd))
        }
        FloatUnOp::Rcp => {
            let yd = x as f64;
            let q = 1.0 / yd;
            let r = (-q).mul_add(yd, 1.0);
            f32::from_bits(numeric::to_f32_bits(
                numeric::to_odd(
                    q,
                    if (r > 0.0) == (yd > 0.0) {
                        r.abs()
                    } else {
                        -r.abs()
                    },
                ),
                rnd,
            ))
        }
    };
    canonical_f32(if ftz { numeric::ftz32(r) } else { r })
}

fn fma_f32(a: u32, b: u32, c: u32, rnd: Rounding, ftz: bool, sat: bool) -> u32 {
    let (mut x, mut y, mut z) = (f32::from_bits(a), f32::from_bits(b), f32::from_bits(c));
    if ftz {
        x = numeric::ftz32(x);
        y = numeric::ftz32(y);
        z = numeric::ftz32(z);
    }
    let r = if rnd == Rounding::NearestEven {
        x.mul_add(y, z)
    } else {
        f32::from_bits(numeric::to_f32_bits(
            numeric::fma_odd(x as f64, y as f64, z as f64),
            rnd,
        ))
    };
    let r = if ftz { numeric::ftz32(r) } else { r };
    canonical_f32(if sat { sat01(r) } else { r })
}

fn half_op(op: HalfOp, fmt: HalfFmt, sat: bool, a: u16, b: u16, c: u16) -> u16 {
    let f = match fmt {
        HalfFmt::F16 => numeric::F16,
        HalfFmt::Bf16 => numeric::BF16,
    };
    match op {
        HalfOp::Neg => return a ^ 0x8000,
        HalfOp::Abs => return a & 0x7fff,
        _ => {}
    }
    let bf16 = fmt == HalfFmt::Bf16;
    let (x, y, z) = (
        numeric::half_to_f64(a, bf16),
        numeric::half_to_f64(b, bf16),
        numeric::half_to_f64(c, bf16),
    );
    let exact = match op {
        HalfOp::Add => numeric::add_odd(x, y),
        HalfOp::Sub => numeric::add_odd(x, -y),
        HalfOp::Mul => x * y, // exact: at most 2 x 11 significant bits
        HalfOp::Fma => numeric::fma_odd(x, y, z),
        HalfOp::Min | HalfOp::Max => {
            let v = min_max_f32(op == HalfOp::Min, x as f32, y as f32) as f64;
            if v.is_nan() {
                return f.canonical_nan() as u16;
            }
            return numeric::round_f64(v, f, Rounding::NearestEven, false) as u16;
        }
        HalfOp::Neg | HalfOp::Abs => unreachable!("handled above"),
    };
    let exact = if sat && !exact.is_nan() {
        exact.clamp(0.0, 1.0)
    } else if sat {
        0.0
    } else {
        exact
    };
    numeric::round_odd_to_half(exact, bf16)
}

fn float_value(ty: Ty, bits: u64, ftz: bool) -> f64 {
    match ty {
        Ty::F32 => {
            let x = f32::from_bits(bits as u32);
            (if ftz { numeric::ftz32(x) } else { x }) as f64
        }
        Ty::F64 => f64::from_bits(bits),
        Ty::F16 => numeric::F16.to_f64(bits & 0xffff),
        Ty::Bf16 => numeric::BF16.to_f64(bits & 0xffff),
        _ => unreachable!("float_value on an integer type"),
    }
}

fn compare(cmp: Cmp, ty: Ty, ftz: bool, a: u64, b: u64) -> bool {
    if matches!(ty, Ty::F32 | Ty::F64) {
        let (x, y) = (float_value(ty, a, ftz), float_value(ty, b, ftz));
        let unordered = x.is_nan() || y.is_nan();
        return match cmp {
            Cmp::Eq => !unordered && x == y,
            Cmp::Ne => !unordered && x != y,
            Cmp::Lt => !unordered && x < y,
            Cmp::Le => !unordered && x <= y,
            Cmp::Gt => !unordered && x > y,
            Cmp::Ge => !unordered && x >= y,
            Cmp::Equ => unordered || x == y,
            Cmp::Neu => unordered || x != y,
            Cmp::Ltu => unordered || x < y,
            Cmp::Leu => unordered || x <= y,
            Cmp::Gtu => unordered || x > y,
            Cmp::Geu => unordered || x >= y,
            Cmp::Num => !unordered,
            Cmp::Nan => unordered,
            Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs => unreachable!("rejected by decode"),
        };
    }
    let bits = ty.bits();
    let m = width_mask(bits);
    let (ua, ub) = (a & m, b & m);
    let (sa, sb) = (sext(ua, bits), sext(ub, bits));
    let signed = ty.is_signed_int();
    let lt = if signed { sa < sb } else { ua < ub };
    let gt = if signed { sa > sb } else { ua > ub };
    match cmp {
        Cmp::Eq => ua == ub,
        Cmp::Ne => ua != ub,
        Cmp::Lt => lt,
        Cmp::Le => !gt,
        Cmp::Gt => gt,
        Cmp::Ge => !lt,
        Cmp::Lo => ua < ub,
        Cmp::Ls => ua <= ub,
        Cmp::Hi => ua > ub,
        Cmp::Hs => ua >= ub,
        _ => unreachable!("float comparison on integers rejected by decode"),
    }
}

fn f32_to_narrow(x: u32, fmt: numeric::Format, rnd: Rounding, satfinite: bool, relu: bool) -> u64 {
    let v = f32::from_bits(x) as f64;
    if v.is_nan() {
        return fmt.canonical_nan();
    }
    let v = if relu && v < 0.0 { 0.0 } else { v };
    numeric::round_f64(v, fmt, rnd, satfinite)
}

fn round_integral(x: f64, r: Rounding) -> f64 {
    match r {
        Rounding::NearestEven => x.round_ties_even(),
        Rounding::NearestAway => x.round(),
        Rounding::TowardZero => x.trunc(),
        Rounding::TowardNegative => x.floor(),
        Rounding::TowardPositive => x.ceil(),
    }
}

fn format_of(ty: Ty) -> numeric::Format {
    match ty {
        Ty::F16 => numeric::F16,
        Ty::Bf16 => numeric::BF16,
        Ty::F32 => numeric::F32,
        _ => numeric::F64,
    }
}

#[allow(clippy::too_many_arguments)]
fn convert(
    a: u64,
    from: Ty,
    to: Ty,
    rnd: CvtRound,
    sat: bool,
    satfinite: bool,
    ftz: bool,
    relu: bool,
) -> u64 {
    let is_float = |t: Ty| matches!(t, Ty::F16 | Ty::Bf16 | Ty::F32 | Ty::F64);
    if to == Ty::Tf32 {
        let r = match rnd {
            CvtRound::Float(r) => r,
            _ => Rounding::NearestAway,
        };
        let x = if ftz {
            numeric::ftz32(f32::from_bits(a as u32)).to_bits()
        } else {
            a as u32
        };
        return numeric::f32_to_tf32_bits(x, r, satfinite) as u64;
    }
    if from.is_int() {
        let v: i128 = if from.is_signed_int() {
            sext(a, from.bits()) as i128
        } else {
            (a & width_mask(from.bits())) as i128
        };
        if to.is_int() {
            let v = if sat {
                let (lo, hi) = int_range(to);
                v.clamp(lo, hi)
            } else {
                v
            };
            return (v as u64) & width_mask(to.bits());
        }
        let r = match rnd {
            CvtRound::Float(r) => r,
            _ => Rounding::NearestEven,
        };
        let exact = numeric::Exact {
            negative: v < 0,
            mantissa: v.unsigned_abs(),
            exponent: 0,
        };
        let bits = if to == Ty::F64 && v.unsigned_abs() < (1u128 << 53) {
            (v as f64).to_bits()
        } else {
            numeric::round_exact(exact, format_of(to), r, false)
        };
        return if sat { float_sat(bits, to) } else { bits };
    }
    // From a float.
    let x = float_value(from, a, ftz);
    if to.is_int() {
        if x.is_nan() {
            return 0;
        }
        let r = match rnd {
            CvtRound::Integer(r) => r,
            _ => Rounding::TowardZero,
        };
        let i = round_integral(x, r);
        let (lo, hi) = int_range(to);
        let v = if i <= lo as f64 {
            lo
        } else if i >= hi as f64 {
            hi
        } else {
            i as i128
        };
        return (v as u64) & width_mask(to.bits());
    }
    debug_assert!(is_float(to));
    let x = match rnd {
        CvtRound::Integer(r) => round_integral(x, r),
        _ => x,
    };
    let x = if relu && x < 0.0 { 0.0 } else { x };
    let fmt = format_of(to);
    let bits = if x.is_nan() {
        fmt.canonical_nan()
    } else {
        match rnd {
            CvtRound::Float(r) => numeric::round_f64(x, fmt, r, satfinite),
            _ => numeric::round_f64(x, fmt, Rounding::NearestEven, satfinite),
        }
    };
    let bits = if to == Ty::F32 && ftz {
        numeric::ftz32(f32::from_bits(bits as u32)).to_bits() as u64
    } else {
        bits
    };
    if sat {
        float_sat(bits, to)
    } else {
        bits
    }
}

/// `.sat` on a float destination: clamp to [0, 1], NaN to 0.
fn float_sat(bits: u64, ty: Ty) -> u64 {
    let fmt = format_of(ty);
    let v = fmt.to_f64(bits);
    if v.is_nan() || v <= 0.0 {
        0
    } else if v >= 1.0 {
        numeric::round_f64(1.0, fmt, Rounding::NearestEven, false)
    } else {
        bits
    }
}

fn int_range(ty: Ty) -> (i128, i128) {
    let bits = ty.bits();
    if ty.is_signed_int() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

fn atomic_result(op: AtomOp, ty: Ty, old: u64, b: u64, c: Option<u64>) -> u64 {
    let bits = ty.bits();
    let m = width_mask(bits);
    match op {
        AtomOp::Add => match ty {
            // atom.add.f32 flushes subnormal inputs and results to zero (PTX ISA).
            Ty::F32 => {
                let r = numeric::ftz32(
                    numeric::ftz32(f32::from_bits(old as u32))
                        + numeric::ftz32(f32::from_bits(b as u32)),
                );
                r.to_bits() as u64
            }
            Ty::F64 => (f64::from_bits(old) + f64::from_bits(b)).to_bits(),
            _ => old.wrapping_add(b) & m,
        },
        AtomOp::Min | AtomOp::Max => {
            let less = if ty.is_signed_int() {
                sext(old, bits) < sext(b, bits)
            } else {
                old < b
            };
            if less == (op == AtomOp::Min) {
                old
            } else {
                b
            }
        }
        AtomOp::Inc => {
            if old >= b {
                0
            } else {
                old + 1
            }
        }
        AtomOp::Dec => {
            if old == 0 || old > b {
                b
            } else {
                old - 1
            }
        }
        AtomOp::And => old & b,
        AtomOp::Or => old | b,
        AtomOp::Xor => old ^ b,
        AtomOp::Exch => b,
        AtomOp::Cas => {
            if old == b {
                c.expect("cas has a third operand")
            } else {
                old
            }
        }
    }
}
