//! What every CUDA launch passes, as data: for a case, the PTX entry and the module it lives in,
//! the device arrays it needs (with their sizes and starting contents), its argument list
//! ([`Param`]s, in the entry's `.param` order, each with its kind and value), the grid, and how
//! its output and its block records are checked.
//!
//! Why this exists: `cuLaunchKernel` takes an array of untyped pointers. An argument list that
//! does not match the entry's `.param` declarations in count, order or width is not an error on
//! a GPU: the kernel reads garbage (a loop count from a float's bits, an address from a count)
//! and corrupts memory or never ends. So the list is described here once, as a pure function
//! of the case ([`super::describe::launch`]); the CUDA backend pushes exactly these arguments, in this order and at
//! these widths (it has no argument list of its own), and the offline tests compare every
//! description with the `.param` declarations parsed from the PTX and run it, buffers, values
//! and checks included, under the PTX interpreter.
//!
//! This module must not call the driver: it is what can be checked without a GPU.

use crate::cases::stream::{self, StreamKernel};
use crate::cases::{
    arith, cache, gemm, intensity, latency, peak, tensor, wgmma, Precision, Verdict, Work,
};
use std::borrow::Cow;

/// Threads per block of every launch: a multiple of 32 (the reductions and the tensor kernels
/// work in warps), at most 1024, small enough that several blocks fit on every SM.
pub const BLOCK: u32 = 256;

/// The largest `gridDim.x` the driver accepts (2^31 − 1).
pub const MAX_GRID: u32 = i32::MAX as u32;

/// u64 words of one block record, written by thread 0 of every block of a peak, tensor or sweep
/// kernel: `(clock64 start, clock64 end, globaltimer start, globaltimer end, work done, steps)`.
/// The work done is counted by the kernel's own loops (peak and tensor: loop trips; sweep: the
/// words the block moved). The sixth word is the sweep's FMA steps per chain by thread 0
/// ([`RECORD_STEPS_WORD`]); elsewhere it is padding that keeps every record 16-byte aligned,
/// never written.
pub const BLOCK_RECORD_WORDS: usize = 6;

/// Bytes of one block record.
pub const BLOCK_RECORD_BYTES: u64 = 8 * BLOCK_RECORD_WORDS as u64;

/// The word of a block record that holds the work the block did.
pub const RECORD_WORK_WORD: usize = 4;

/// The word of a sweep kernel's block record that holds the FMA steps per chain its thread 0
/// completed ([`intensity::gpu_thread_steps`]).
pub const RECORD_STEPS_WORD: usize = 5;

/// A PTX module the CUDA backend loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleId {
    /// kernels/stream.ptx
    Stream,
    /// kernels/peak.ptx
    Peak,
    /// kernels/mma.ptx
    Mma,
    /// kernels/mma_sm89.ptx (fp8; loaded only where fp8 `mma.sync` is native)
    MmaSm89,
    /// kernels/mma_sm90.ptx (Hopper's f64 m16n8k16; loaded only from compute capability 9.0)
    MmaSm90,
    /// kernels/wgmma.ptx.in, expanded (sm_90a; loaded only on compute capability 9.0)
    Wgmma,
    /// kernels/cache.ptx
    Cache,
    /// kernels/latency.ptx
    Latency,
    /// kernels/launch.ptx
    Launch,
    /// kernels/prep.ptx: a DRAM case's arrays filled and its output checked on the device
    /// ([`DevicePrep`]).
    Prep,
    /// One expansion of kernels/intensity.ptx.in: (precision, k).
    Sweep(Precision, u32),
    /// One expansion of kernels/gemm.ptx.in: its input and accumulator types.
    Gemm(Precision),
    /// kernels/gemm_simt.ptx (the f32 GEMM on the ALUs)
    GemmSimt,
    /// One expansion of kernels/gemm_wgmma.ptx.in (Hopper's GEMM, sm_90a): its input type.
    GemmWgmma(Precision),
    /// One expansion of kernels/gemm_tma.ptx.in (Hopper's TMA-fed GEMM, sm_90a): its input type,
    /// and whether it is the expansion in clusters of two CTAs.
    GemmTma(Precision, bool),
}

impl ModuleId {
    /// The name of the module as `kernels::all()` lists it (`peak.ptx`,
    /// `intensity.ptx.in#k=64,f32`).
    pub fn file(self) -> String {
        match self {
            ModuleId::Stream => "stream.ptx".into(),
            ModuleId::Peak => "peak.ptx".into(),
            ModuleId::Mma => "mma.ptx".into(),
            ModuleId::MmaSm89 => "mma_sm89.ptx".into(),
            ModuleId::MmaSm90 => "mma_sm90.ptx".into(),
            ModuleId::Wgmma => "wgmma.ptx.in#sm_90a".into(),
            ModuleId::Cache => "cache.ptx".into(),
            ModuleId::Latency => "latency.ptx".into(),
            ModuleId::Launch => "launch.ptx".into(),
            ModuleId::Prep => "prep.ptx".into(),
            ModuleId::Sweep(p, k) => format!("intensity.ptx.in#k={k},{p}"),
            ModuleId::Gemm(p) => format!("gemm.ptx.in#{p}"),
            ModuleId::GemmSimt => "gemm_simt.ptx".into(),
            ModuleId::GemmWgmma(p) => format!("gemm_wgmma.ptx.in#{p}"),
            ModuleId::GemmTma(p, false) => format!("gemm_tma.ptx.in#{p}"),
            ModuleId::GemmTma(p, true) => format!("gemm_tma.ptx.in#cluster2,{p}"),
        }
    }

    /// The PTX text handed to the driver.
    pub fn ptx(self) -> Cow<'static, str> {
        use crate::kernels;
        match self {
            ModuleId::Stream => Cow::Borrowed(kernels::STREAM),
            ModuleId::Peak => Cow::Borrowed(kernels::PEAK),
            ModuleId::Mma => Cow::Borrowed(kernels::MMA),
            ModuleId::MmaSm89 => Cow::Borrowed(kernels::MMA_SM89),
            ModuleId::MmaSm90 => Cow::Borrowed(kernels::MMA_SM90),
            ModuleId::Wgmma => Cow::Owned(kernels::wgmma::expand()),
            ModuleId::Cache => Cow::Borrowed(kernels::CACHE),
            ModuleId::Latency => Cow::Borrowed(kernels::LATENCY),
            ModuleId::Launch => Cow::Borrowed(kernels::LAUNCH),
            ModuleId::Prep => Cow::Borrowed(kernels::PREP),
            ModuleId::Sweep(p, k) => Cow::Owned(kernels::intensity::expand(p, k)),
            ModuleId::Gemm(p) => Cow::Owned(kernels::gemm::expand(p)),
            ModuleId::GemmSimt => Cow::Borrowed(kernels::GEMM_SIMT),
            ModuleId::GemmWgmma(p) => Cow::Owned(kernels::gemm::expand_wgmma(p)),
            ModuleId::GemmTma(p, cluster) => Cow::Owned(kernels::gemm::expand_tma(p, cluster)),
        }
    }
}

/// A kernel entry: its name and the module that defines it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub module: ModuleId,
    pub name: String,
}

/// The kind of one kernel parameter as the launch passes it, which fixes its width and its PTX
/// declaration ([`ParamKind::ptx_type`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A global-memory address (a device array), declared `.u64`.
    GlobalPtr,
    U64,
    U32,
    F32,
    F64,
    /// 32 raw register bits (a packed f16x2, an f32 or an i32 passed as bits).
    B32,
    /// 64 raw register bits.
    B64,
    /// A tensor map (`CUtensorMap`, 128 opaque bytes), declared `.param .align 64 .b8 p[128]`.
    TensorMap,
}

impl ParamKind {
    /// The `.param` type the entry must declare for an argument of this kind.
    pub fn ptx_type(self) -> &'static str {
        match self {
            ParamKind::GlobalPtr | ParamKind::U64 => "u64",
            ParamKind::U32 => "u32",
            ParamKind::F32 => "f32",
            ParamKind::F64 => "f64",
            ParamKind::B32 => "b32",
            ParamKind::B64 => "b64",
            ParamKind::TensorMap => "b8",
        }
    }

    /// Bytes the driver copies for an argument of this kind.
    pub fn bytes(self) -> u32 {
        match self {
            ParamKind::U32 | ParamKind::F32 | ParamKind::B32 => 4,
            ParamKind::TensorMap => TENSOR_MAP_BYTES,
            _ => 8,
        }
    }

    /// Elements of the `.param` array the entry declares for this kind; `None` for a scalar.
    pub fn array(self) -> Option<u64> {
        (self == ParamKind::TensorMap).then_some(u64::from(TENSOR_MAP_BYTES))
    }
}

/// Which device array a pointer argument is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// The i-th input array (read only).
    Input(u8),
    /// The array the kernel writes (for a reduction, its per-block partial sums).
    Output,
    /// The block records: clocks and work done (peak, tensor and sweep kernels).
    Clocks,
    /// A check on the device's tally: `[wrong elements, the first wrong index]`
    /// ([`DevicePrep::check`]).
    Tally,
    /// A check on the device's table of gold values (the sweep's, [`intensity::Gold`]), uploaded
    /// by the host: a few KiB, not the output's size.
    Gold,
}

/// Bytes of a tensor map (`CUtensorMap`): opaque, 64-byte aligned.
pub const TENSOR_MAP_BYTES: u32 = 128;

/// A rank-2 tiled tensor map over one of the launch's arrays, as `cuTensorMapEncodeTiled` makes
/// it once the array has its device address: 16-bit floating-point or 8-bit elements (fp8 is
/// copied as bytes, `UINT8`), no interleave,
/// element strides 1, out-of-bounds elements read as zero. The kernel's
/// `cp.async.bulk.tensor.2d` copies one box of it to shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMap {
    /// The array it reaches.
    pub role: Role,
    /// The element type: bf16 for [`Precision::Bf16F32`], f16 for [`Precision::F16F32`], bytes
    /// for [`Precision::E4m3F32`].
    pub precision: Precision,
    /// Extent in elements, innermost (contiguous) first.
    pub dims: [u64; 2],
    /// Bytes from one row (dimension 1) to the next.
    pub row_bytes: u64,
    /// The box one copy moves, in elements, innermost first.
    pub box_dims: [u32; 2],
    /// The shared-memory swizzle, in bytes (128: each 128-byte row's 16-byte chunks permuted).
    pub swizzle_bytes: u32,
}

impl TensorMap {
    /// Bytes per element.
    pub fn element_bytes(&self) -> u64 {
        gemm::input_bytes(self.precision)
    }
}

/// One argument's value. Scalars carry their value here, so their width is their kind's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    Buffer(Role),
    U64(u64),
    U32(u32),
    F32(f32),
    F64(f64),
    B32(u32),
    B64(u64),
    /// A tensor map over an array, encoded once the array is on the device.
    TensorMap(TensorMap),
}

impl Arg {
    pub fn kind(&self) -> ParamKind {
        match self {
            Arg::Buffer(_) => ParamKind::GlobalPtr,
            Arg::U64(_) => ParamKind::U64,
            Arg::U32(_) => ParamKind::U32,
            Arg::F32(_) => ParamKind::F32,
            Arg::F64(_) => ParamKind::F64,
            Arg::B32(_) => ParamKind::B32,
            Arg::B64(_) => ParamKind::B64,
            Arg::TensorMap(_) => ParamKind::TensorMap,
        }
    }

    /// Raw register bits `bits` as a `.b32` or `.b64` argument.
    pub(super) fn bits(bits: u64, wide: bool) -> Arg {
        if wide {
            Arg::B64(bits)
        } else {
            Arg::B32(bits as u32)
        }
    }
}

/// One kernel parameter: its name (the `.param` is declared `<entry>_<name>`) and its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Param {
    pub name: &'static str,
    pub arg: Arg,
}

/// What a device array holds before the first launch.
#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    /// Input array `array` of a STREAM kernel (`stream::input`), in the case's precision.
    Stream {
        kernel: StreamKernel,
        array: u64,
        precision: Precision,
    },
    /// The sweep's input words (`intensity::input`).
    Sweep(Precision),
    /// The cache sweep's words (`cache::input`).
    Cache,
    /// The latency ring: `lines` lines of `line_bytes`, the first (64-bit) word of line l the
    /// device address of line `next[l]` ([`latency::successors`]): the array's own address plus
    /// that line's byte offset, so the chase loads its next address with no add between two
    /// loads. Every other word 0.
    Chase {
        next: std::sync::Arc<Vec<u32>>,
        line_bytes: u64,
    },
    /// These words (tensor-core fragments).
    Words(Vec<u64>),
    /// A GEMM input (`matrix` 0: A, 1: B) of `shape`, row stride `ld` elements, two 16-bit
    /// elements or one f32 per word (`gemm::operand_word`).
    GemmOperand {
        precision: Precision,
        shape: gemm::Shape,
        matrix: u64,
        ld: u64,
    },
    /// A NaN with a recognisable payload in every word, so an element the kernel never wrote
    /// fails the check.
    Poison,
    Zero,
}

/// One device array a launch needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    pub role: Role,
    /// Elements (words) in the array.
    pub words: u64,
    /// Bytes per word: 4 or 8.
    pub word_bytes: u64,
    pub init: Init,
}

/// The poison word: an f32 quiet NaN (also NaN in both lanes of an f16x2 or bf16x2), or an f64
/// one.
pub fn poison(word_bytes: u64) -> u64 {
    if word_bytes == 8 {
        0x7FF8_0000_DEAD_BEEF
    } else {
        0x7FC0_DEAD
    }
}

impl Buffer {
    pub fn bytes(&self) -> u64 {
        self.words.saturating_mul(self.word_bytes)
    }

    /// Word `i` of the array's starting contents, as bits in the low `word_bytes` bytes, when
    /// the array lies at device address `base` (only the latency ring's words depend on it:
    /// they are addresses within it).
    pub fn word(&self, i: u64, base: u64) -> u64 {
        match &self.init {
            Init::Stream {
                kernel,
                array,
                precision,
            } => {
                let x = stream::input(*kernel, *array, i);
                if *precision == Precision::F64 {
                    x.to_bits()
                } else {
                    (x as f32).to_bits() as u64
                }
            }
            Init::Sweep(p) => intensity::input(*p, i),
            Init::Cache => cache::input(i) as u64,
            Init::Chase { next, line_bytes } => {
                let words_per_line = line_bytes / self.word_bytes;
                match (i % words_per_line, next.get((i / words_per_line) as usize)) {
                    (0, Some(&n)) => base + u64::from(n) * line_bytes,
                    _ => 0,
                }
            }
            Init::Words(w) => w.get(i as usize).copied().unwrap_or(0),
            Init::GemmOperand {
                precision,
                shape,
                matrix,
                ld,
            } => gemm::operand_word(*precision, *shape, *matrix, *ld, i),
            Init::Poison => poison(self.word_bytes),
            Init::Zero => 0,
        }
    }
}

/// How a launch's output is checked, with everything the check needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// A STREAM map kernel's output array.
    StreamArray {
        kernel: StreamKernel,
        precision: Precision,
    },
    /// A STREAM reduction's partial sums (one per block).
    StreamSum {
        kernel: StreamKernel,
        precision: Precision,
        n: u64,
        /// Most elements one block adds in the kernel's precision.
        largest_block_terms: u64,
    },
    /// Every thread's checksum of its FMA chains after `steps` FMAs each.
    Peak { precision: Precision, steps: u64 },
    /// Every warp's D fragments equal C + A·B.
    Tensor { mma: tensor::Mma, warps: u64 },
    /// Every warpgroup's `wgmma` accumulator equals C + A·B.
    Wgmma {
        precision: Precision,
        warpgroups: u64,
    },
    /// Every output word is its input after k FMAs.
    Sweep { precision: Precision, k: u32 },
    /// Every thread's sum is `passes ×` the sum of its grid-stride share of the n words.
    Cache { n: u64, passes: u64 },
    /// The chase's state (`[byte offset, hops since line 0]`) stands where that many hops from
    /// line 0 through a ring of `lines` lines of `line_bytes` end, after whole launches of `hops`.
    Latency {
        lines: u64,
        line_bytes: u64,
        hops: u64,
    },
    /// C (f32 words, row-major) is the exact product of the GEMM's inputs (`gemm::check`).
    Gemm {
        precision: Precision,
        shape: gemm::Shape,
    },
    /// The empty kernel's count (one u32 word): one add per launch, so after n launches from 0
    /// it is n (`launch::check_count`, which the backend calls with the launches it issued,
    /// and `launch::check_batch` on the clocks of each batch; [`Launch::verify_output`] checks the word's presence).
    Launches,
    /// A fill on the device ([`DevicePrep::fills`]): nothing to check of its own (the case's
    /// check reads what it wrote, or what the case's kernel made of it).
    Filled,
    /// A check on the device of `n` output elements of a STREAM map kernel or a sweep point
    /// ([`DevicePrep::check`]): the tally's two words, `[wrong, first wrong index]`, must read
    /// `[0, 2^64 - 1]`.
    Tally {
        of: Tallied,
        precision: Precision,
        n: u64,
    },
}

/// Whose output a check on the device tallies ([`Check::Tally`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tallied {
    /// A STREAM map kernel's array.
    Stream(StreamKernel),
    /// A sweep point's words after `k` FMAs each.
    Sweep { k: u32 },
}

/// The tally a check on the device starts from: no element wrong, the first wrong one none.
pub const TALLY_START: [u64; 2] = [0, u64::MAX];

/// How many elements after the first wrong one a device check's verdict reads back, to show the
/// first few wrong ones as the host's check shows them (`is …, should be …`).
pub const TALLY_WINDOW: u64 = 4096;

/// What the fill kernels write (`fill_<w>`'s `kind`, kernels/prep.ptx).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillKind {
    /// A STREAM map kernel's input ([`stream::input`] of a map kernel).
    MapInput = 0,
    /// A STREAM reduction's input ([`stream::input`] of `dot` or `read`).
    SumInput = 1,
    /// One word everywhere (the key): an output's poison.
    Constant = 2,
}

/// A DRAM case's preparation and check on the device instead of the host: its arrays filled by
/// kernels (kernels/prep.ptx) from the same generator [`Buffer::word`] uses, and, for a STREAM
/// map kernel or a sweep point, its output checked by a kernel that compares every element with
/// its gold value and leaves 16 bytes to read back. Each is a [`Launch`], so the offline tests
/// check its arguments against the PTX and run it under the interpreter like any other. Its
/// arrays are the case's: a fill's one buffer, and the check's output, have the case launch's
/// roles and sizes; the check's own are its tally and (the sweep's) its table of gold values
/// ([`Role::Gold`]). A sweep's block records stay the host's to make and to check: a few words
/// per block.
#[derive(Clone, Debug, PartialEq)]
pub struct DevicePrep {
    /// One launch per array the device fills (every input, and the output's poison), run
    /// once before the case's first launch.
    pub fills: Vec<Launch>,
    /// The check of a map kernel's or a sweep point's output (its [`Role::Tally`] of two u64
    /// words set to [`TALLY_START`] first); `None` for a reduction, whose partial sums (one per
    /// block) the host reads back and adds as before.
    pub check: Option<Launch>,
}

/// What every block's record must show it did, and how a block's count turns into work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Owed {
    /// Every block ran `trips` trips of the peak loop, each of its threads
    /// [`peak::GPU_FMAS_PER_ITERATION`] FMAs per trip.
    PeakTrips { precision: Precision, trips: u64 },
    /// Every block ran `trips` trips of the tensor loop, each of its warps
    /// [`tensor::mmas_per_warp`]`(trips)` MMAs.
    TensorTrips { mma: tensor::Mma, trips: u64 },
    /// Every block ran `trips` trips of the `wgmma` loop, each of its warpgroups
    /// [`wgmma::wgmmas_per_warpgroup`]`(trips)` instructions.
    WgmmaTrips { precision: Precision, trips: u64 },
    /// Block b moved its threads' grid-stride shares of the `n` words
    /// ([`intensity::gpu_block_words`]): each read once, k FMAs on it, written once.
    SweepWords {
        precision: Precision,
        k: u32,
        n: u64,
    },
    /// The one block's thread took `hops` dependent loads, each returning
    /// [`latency::GPU_POINTER_BYTES`].
    ChaseHops { hops: u64 },
}

impl Owed {
    /// What block `index` of a grid of `grid` blocks of `block` threads must record.
    pub fn per_block(&self, grid: u32, block: u32, index: u64) -> u64 {
        match *self {
            Owed::PeakTrips { trips, .. }
            | Owed::TensorTrips { trips, .. }
            | Owed::WgmmaTrips { trips, .. } => trips,
            Owed::ChaseHops { hops } => hops,
            Owed::SweepWords { precision, n, .. } => intensity::gpu_block_words(
                precision,
                n,
                grid as u64 * block as u64,
                block as u64,
                index,
            ),
        }
    }

    /// What thread 0 of block `index` must record as its FMA steps per chain, where the kernel
    /// records them (the sweep, whose k steps run as a loop for large k).
    pub fn thread0_steps(&self, grid: u32, block: u32, index: u64) -> Option<u64> {
        match *self {
            Owed::SweepWords { precision, k, n } => Some(intensity::gpu_thread_steps(
                precision,
                k,
                n,
                grid as u64 * block as u64,
                index * block as u64,
            )),
            _ => None,
        }
    }

    /// The work a block of `block` threads did, by its recorded count.
    pub fn work(&self, block: u32, count: u64) -> Work {
        let block = block as u64;
        match *self {
            Owed::PeakTrips { precision, .. } => Work {
                flops: peak::flops(precision, block, count, peak::GPU_FMAS_PER_ITERATION),
                ..Work::default()
            },
            Owed::TensorTrips { mma, .. } => Work {
                flops: block / tensor::WARP as u64
                    * tensor::mmas_per_warp(count)
                    * tensor::flops_per_mma(mma),
                ..Work::default()
            },
            Owed::WgmmaTrips { precision, .. } => Work {
                flops: block / wgmma::WARPGROUP as u64
                    * wgmma::wgmmas_per_warpgroup(count)
                    * wgmma::flops_per_wgmma(precision),
                ..Work::default()
            },
            Owed::SweepWords { precision, k, .. } => Work {
                bytes_read: count * arith::word_bytes(precision),
                bytes_written: count * arith::word_bytes(precision),
                flops: 2 * k as u64 * arith::lanes(precision) * count,
            },
            Owed::ChaseHops { .. } => Work {
                bytes_read: count * latency::GPU_POINTER_BYTES,
                ..Work::default()
            },
        }
    }

    /// What the count is, in words: `loop trips`, `words`.
    fn unit(&self) -> &'static str {
        match self {
            Owed::PeakTrips { .. } | Owed::TensorTrips { .. } | Owed::WgmmaTrips { .. } => {
                "loop trips"
            }
            Owed::SweepWords { .. } => "words",
            Owed::ChaseHops { .. } => "hops",
        }
    }
}

/// Everything one launch of a case needs, in data.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub entry: Entry,
    /// Blocks (`gridDim.x`); `gridDim.y = gridDim.z = 1`.
    pub grid: u32,
    /// Threads per block (`blockDim.x`).
    pub block: u32,
    /// Dynamic shared memory per block: the GEMM kernels' (`.extern .shared`), else none.
    pub dynamic_shared_bytes: u32,
    /// The device arrays, each role once.
    pub buffers: Vec<Buffer>,
    /// The arguments, in the entry's `.param` order.
    pub params: Vec<Param>,
    pub check: Check,
    /// Loop trips of a peak or tensor kernel, passes of a cache kernel (recorded in the launch
    /// note).
    pub iterations: Option<u32>,
    /// What every block's record must show, for a kernel that writes block records.
    pub owed: Option<Owed>,
    /// The work the case's row counts (`case.work`): the records must add up to it.
    pub work: Work,
    /// Copies of one input array that successive launches read in turn: a GEMM decode step's
    /// weight, kept out of the cache by copies up to the DRAM rule ([`gemm::rotate_weights`]).
    /// `None` for one array that every launch reads.
    pub rotation: Option<Rotation>,
}

/// Copies of one of a launch's arrays: launch `i` (counted over the case's whole life) reads
/// copy `i mod copies`, each a separate device array of the same contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// The array copied: its argument (a pointer or a tensor map) points into the copy of the
    /// launch.
    pub role: Role,
    /// Copies in all, the planned array included: at least 2.
    pub copies: u64,
}

impl Rotation {
    /// What a row's note says of it.
    pub fn note(&self) -> String {
        format!(
            "B in {} copies, one per launch in turn, so that each launch reads its weight from \
             memory, not the L2",
            self.copies
        )
    }
}

impl Launch {
    /// The argument kinds, in order.
    pub fn kinds(&self) -> Vec<ParamKind> {
        self.params.iter().map(|p| p.arg.kind()).collect()
    }

    /// The array of `role`, if the launch has one.
    pub fn buffer(&self, role: Role) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.role == role)
    }

    /// Bytes of device memory the arrays take, every copy of a rotated one included.
    pub fn device_bytes(&self) -> u64 {
        self.buffers.iter().fold(0u64, |sum, b| {
            sum.saturating_add(b.bytes().saturating_mul(self.copies_of(b.role)))
        })
    }

    /// Copies of the array of `role` on the device: 1 unless it rotates.
    pub fn copies_of(&self, role: Role) -> u64 {
        match self.rotation {
            Some(r) if r.role == role => r.copies,
            _ => 1,
        }
    }

    /// Copies of the rotated array, 1 where none rotates: launch `i` reads copy `i mod` this.
    pub fn copies(&self) -> u64 {
        self.rotation.map_or(1, |r| r.copies)
    }

    /// Threads in the grid.
    pub fn threads(&self) -> u64 {
        self.grid as u64 * self.block as u64
    }

    /// Launch geometry for the record: `grid 1056x256`, plus the loop of a compute kernel.
    pub fn note(&self) -> String {
        let grid = format!("grid {}x{}", self.grid, self.block);
        match (&self.check, self.iterations) {
            (Check::Peak { .. }, Some(trips)) => format!(
                "{grid}, {trips} trips of {} FMAs",
                peak::GPU_FMAS_PER_ITERATION
            ),
            (Check::Tensor { .. }, Some(trips)) => {
                format!("{grid}, {} chains x {trips} trips", tensor::CHAINS)
            }
            (Check::Wgmma { .. }, Some(trips)) => format!(
                "{grid}, one accumulator a warpgroup x {trips} trips of {} wgmma",
                2 * wgmma::UNROLL
            ),
            (Check::Cache { .. }, Some(passes)) => format!("{grid}, {passes} passes"),
            (Check::Launches, _) => format!(
                "{grid}, empty but one counting add, {} launches between two events",
                crate::cases::launch::LAUNCHES_PER_SAMPLE
            ),
            (Check::Latency { line_bytes, .. }, Some(hops)) => {
                format!("{grid}, one thread, {hops} dependent loads per launch, {line_bytes}-byte lines")
            }
            (Check::Gemm { .. }, _) => match self.rotation {
                Some(r) => format!("{grid}, {}", r.note()),
                None => grid,
            },
            _ => grid,
        }
    }

    /// Checks a launch as the CUDA backend reads it back: the output array (`output`: its words,
    /// low bits) against the gold values, then the block records (`records`: the words of the
    /// [`Role::Clocks`] array; empty for a launch without one) against the work the row counts
    /// ([`Launch::verify_records`]). Both must pass; a read-back of the wrong length is a failed
    /// check, not a panic.
    pub fn verify(&self, output: &[u64], records: &[u64]) -> Verdict {
        self.verify_with(self.verify_output(output), records)
    }

    /// [`Launch::verify`] with the output's verdict already given (a check on the device's,
    /// [`Launch::verify_tally`]): the block records checked too, both verdicts joined.
    pub fn verify_with(&self, output: Verdict, records: &[u64]) -> Verdict {
        output.and(self.verify_records(records))
    }

    /// The verdict of a check on the device ([`Check::Tally`]) from its `tally` as read back
    /// (`[wrong elements, first wrong index]`) and `from_first`, the output's words from the
    /// first wrong index on (up to [`TALLY_WINDOW`]; none needed where nothing is wrong): the
    /// host check's verdict, `count of n elements wrong: [i] is …, should be …` (a sweep's:
    /// `values`), with the wrong ones it lists taken from that window.
    pub fn verify_tally(&self, tally: &[u64], from_first: &[u64]) -> Verdict {
        let Check::Tally { of, precision, n } = self.check else {
            return Verdict::invalid("not a check on the device: no tally to read");
        };
        let &[wrong, first] = tally else {
            return Verdict::invalid(format!("read back {} tally words, expected 2", tally.len()));
        };
        match (wrong, first) {
            (0, u64::MAX) => return Verdict::valid(),
            (0, _) | (_, u64::MAX) => {
                return Verdict::invalid(format!(
                    "the device check's tally is inconsistent: {wrong} wrong, the first at {first}"
                ))
            }
            _ if wrong > n || first >= n => {
                return Verdict::invalid(format!(
                    "the device check's tally is out of range: {wrong} of {n} wrong, the first at \
                     {first}"
                ))
            }
            _ => {}
        }
        // the words the host's check says, from the window read back
        let gold = match of {
            Tallied::Sweep { k } => Some(intensity::Gold::new(precision, k)),
            Tallied::Stream(_) => None,
        };
        let wrong_at = |i: u64, word: u64| match of {
            Tallied::Sweep { .. } => gold.as_ref()?.wrong_word(i, word),
            Tallied::Stream(kernel) if precision == Precision::F64 => {
                stream::wrong_element(kernel, i, f64::from_bits(word))
            }
            Tallied::Stream(kernel) => {
                stream::wrong_element(kernel, i, f32::from_bits(word as u32))
            }
        };
        let shown: Vec<String> = from_first
            .iter()
            .enumerate()
            .filter_map(|(j, &word)| {
                let i = first + j as u64;
                Some(format!("[{i}] {}", wrong_at(i, word)?))
            })
            .take(crate::cases::FAILURES_SHOWN)
            .collect();
        let shown = if shown.is_empty() {
            format!("the first at [{first}]")
        } else {
            shown.join("; ")
        };
        // as the host's checks count them: a STREAM array's elements, a sweep's values
        let what = match of {
            Tallied::Stream(_) => "elements",
            Tallied::Sweep { .. } => "values",
        };
        Verdict::invalid(format!("{wrong} of {n} {what} wrong: {shown}"))
    }

    /// Checks the block records: every block's work count (counted by the kernel's own loops) is
    /// what the launch owes ([`Owed::per_block`]), and the counts add up to the work the case's
    /// row counts, so the row's operations and bytes are work that was done. A converged chain
    /// (the peak kernels' f16x2 and bf16x2 after a few thousand steps) or a tensor D that is
    /// the same after any number of trips cannot show a short loop; this does.
    pub fn verify_records(&self, records: &[u64]) -> Verdict {
        let expected = self
            .buffer(Role::Clocks)
            .map_or(0, |b| b.words * b.word_bytes / 8);
        if records.len() as u64 != expected {
            return Verdict::invalid(format!(
                "read back {} record words, expected {expected}",
                records.len()
            ));
        }
        let Some(owed) = self.owed else {
            return Verdict::valid();
        };
        let mut wrong = Vec::new();
        let mut count = 0;
        let (mut wrong_steps, mut short_steps) = (Vec::new(), 0);
        let mut done = Work::default();
        let blocks = records.len() / BLOCK_RECORD_WORDS;
        for (b, record) in records.chunks_exact(BLOCK_RECORD_WORDS).enumerate() {
            let (is, should) = (
                record[RECORD_WORK_WORD],
                owed.per_block(self.grid, self.block, b as u64),
            );
            if is != should {
                count += 1;
                if wrong.len() < 3 {
                    wrong.push(format!("block {b}: is {is}, should be {should}"));
                }
            }
            if let Some(steps) = owed.thread0_steps(self.grid, self.block, b as u64) {
                let is = record[RECORD_STEPS_WORD];
                if is != steps {
                    short_steps += 1;
                    if wrong_steps.len() < 3 {
                        wrong_steps.push(format!("block {b}: is {is}, should be {steps}"));
                    }
                }
            }
            let w = owed.work(self.block, is);
            done.bytes_read = done.bytes_read.saturating_add(w.bytes_read);
            done.bytes_written = done.bytes_written.saturating_add(w.bytes_written);
            done.flops = done.flops.saturating_add(w.flops);
        }
        if count > 0 {
            return Verdict::invalid(format!(
                "{count} of {blocks} blocks recorded other {} than the row counts: {}",
                owed.unit(),
                wrong.join("; ")
            ));
        }
        if short_steps > 0 {
            return Verdict::invalid(format!(
                "{short_steps} of {blocks} blocks' thread 0 recorded other FMA steps per chain \
                 than the row counts: {}",
                wrong_steps.join("; ")
            ));
        }
        if done != self.work {
            return Verdict::invalid(format!(
                "the blocks' records add up to {} bytes and {} operations, the row counts {} \
                 bytes and {} operations",
                done.bytes(),
                done.flops,
                self.work.bytes(),
                self.work.flops
            ));
        }
        Verdict::valid()
    }

    /// Checks the output array (`words`: its words, low bits, as read back) against the gold
    /// values. A read-back of the wrong length is a failed check, not a panic.
    pub fn verify_output(&self, words: &[u64]) -> Verdict {
        let expected = self.buffer(Role::Output).map_or(0, |b| b.words);
        if words.len() as u64 != expected {
            return Verdict::invalid(format!(
                "read back {} output words, expected {expected}",
                words.len()
            ));
        }
        match self.check {
            Check::StreamArray { kernel, precision } => {
                if precision == Precision::F64 {
                    let v: Vec<f64> = words.iter().map(|&w| f64::from_bits(w)).collect();
                    stream::check_array(kernel, &v)
                } else {
                    let v: Vec<f32> = words.iter().map(|&w| f32::from_bits(w as u32)).collect();
                    stream::check_array(kernel, &v)
                }
            }
            Check::StreamSum {
                kernel,
                precision,
                n,
                largest_block_terms,
            } => {
                if precision == Precision::F64 {
                    let total = words.iter().map(|&w| f64::from_bits(w)).sum();
                    stream::check_sum::<f64>(kernel, n, total, largest_block_terms)
                } else {
                    let total = words.iter().map(|&w| f32::from_bits(w as u32) as f64).sum();
                    stream::check_sum::<f32>(kernel, n, total, largest_block_terms)
                }
            }
            Check::Peak { precision, steps } => {
                peak::check_threads(precision, peak::GPU_CHAINS, steps, words.len(), |i| {
                    words[i]
                })
            }
            Check::Tensor { mma, warps } => tensor::check(mma, warps as usize, |i| words[i]),
            Check::Wgmma {
                precision,
                warpgroups,
            } => wgmma::check(precision, warpgroups as usize, |i| words[i]),
            Check::Sweep { precision, k } => {
                intensity::check(precision, k, words.len(), |i| words[i])
            }
            // The count against the launches issued is the backend's check (it alone knows
            // them); here, that some launch ran at all.
            Check::Launches => match words[0] {
                0 => Verdict::invalid("the count is 0: no launch ran"),
                _ => Verdict::valid(),
            },
            Check::Filled => Verdict::valid(),
            // its verdict is its tally's, which the output words are not
            Check::Tally { .. } => Verdict::invalid(
                "a check on the device is read from its tally (Launch::verify_tally), not its \
                 output",
            ),
            Check::Gemm { precision, shape } => gemm::check(
                precision,
                shape,
                |i, k| gemm::a_value(shape, i, k),
                |j, k| gemm::b_value(shape, j, k),
                |i, j| f32::from_bits(words[(i * shape.n + j) as usize] as u32) as f64,
            ),
            Check::Cache { n, passes } => {
                let threads = words.len() as u64;
                cache::check_sums(passes, words, |t| {
                    cache::gpu_thread_sum(n, threads, t as u64)
                })
            }
            Check::Latency {
                lines,
                line_bytes,
                hops,
            } => {
                let (offset, total) = (words[0], words[1]);
                if total == 0 || total % hops.max(1) != 0 {
                    Verdict::invalid(format!(
                        "the chase took {total} hops in all; it should be a positive multiple \
                         of {hops} (hops per launch)"
                    ))
                } else if offset % line_bytes != 0 || offset / line_bytes >= lines {
                    Verdict::invalid(format!(
                        "the chase stands at byte {offset}, not the start of one of {lines} lines"
                    ))
                } else {
                    latency::check_end(&latency::order(lines), total, offset / line_bytes)
                }
            }
        }
    }
}

/// SM clocks a block's record may give, in MHz: anything else is a record too short for the
/// timer's granularity (`%globaltimer` ticks every 32 ns to 1 µs, depending on the GPU), not a
/// clock.
pub const PLAUSIBLE_CLOCK_MHZ: std::ops::Range<f64> = 50.0..10_000.0;

/// The fewest timer ticks a block's interval must span for its clock to count, where the
/// launch shows its timer's tick ([`timer_tick_ns`]): one tick is then at most 5 % of it.
pub const MIN_RECORD_TICKS: u64 = 20;

/// Blocks with an interval a launch needs before [`timer_tick_ns`] reads a tick from it: with
/// fewer (a latency chase is one block), every interval counts as before.
pub const TICK_SAMPLE_BLOCKS: usize = 16;

/// The tick of the timer that stamped `intervals` (`(start, end)` nanoseconds), where there are
/// [`TICK_SAMPLE_BLOCKS`] or more: the greatest common divisor of every stamp's distance from
/// the first. A timer that ticks every `T` ns gives stamps a multiple of `T` apart, so this is
/// `T` (or a multiple of it, with few stamps: stricter, never looser); an exact nanosecond timer
/// gives 1 or a few. `None` with too few blocks.
pub fn timer_tick_ns(intervals: &[(u64, u64)]) -> Option<u64> {
    if intervals.len() < TICK_SAMPLE_BLOCKS {
        return None;
    }
    let first = intervals[0].0;
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let tick = intervals
        .iter()
        .flat_map(|&(start, end)| [start, end])
        .fold(0, |g, stamp| gcd(g, stamp.abs_diff(first)));
    (tick > 0).then_some(tick)
}

/// The SM clock, in MHz, from the block records of a launch: the median over blocks of cycles
/// per nanosecond. Where the launch shows its timer's tick, only blocks that spanned at least
/// [`MIN_RECORD_TICKS`] of them count: a block of a few microseconds timed by a timer that ticks
/// every microsecond reads its clock a third too high or low (the PTX ISA promises nanoseconds,
/// not their resolution). `None` when no block recorded a usable interval (or the records are
/// not whole records, as a short read-back would be).
pub fn clock_from_records(records: &[u64]) -> Option<f64> {
    if !records.len().is_multiple_of(BLOCK_RECORD_WORDS) {
        return None;
    }
    let blocks: Vec<(u64, (u64, u64))> = records
        .chunks_exact(BLOCK_RECORD_WORDS)
        .filter(|r| r[1] > r[0] && r[3] > r[2])
        .map(|r| (r[1] - r[0], (r[2], r[3])))
        .collect();
    let intervals: Vec<(u64, u64)> = blocks.iter().map(|&(_, i)| i).collect();
    let shortest = timer_tick_ns(&intervals).map_or(1, |tick| tick * MIN_RECORD_TICKS);
    let mut mhz: Vec<f64> = blocks
        .iter()
        .filter(|&&(_, (start, end))| end - start >= shortest)
        .map(|&(cycles, (start, end))| cycles as f64 / (end - start) as f64 * 1e3)
        .filter(|m| PLAUSIBLE_CLOCK_MHZ.contains(m))
        .collect();
    if mhz.is_empty() {
        return None;
    }
    mhz.sort_by(f64::total_cmp);
    Some(mhz[mhz.len() / 2])
}
