//! ptxsim: a PTX interpreter for the instructions roofprobe's kernels use, so that `cargo test`
//! proves on a machine without a GPU that every kernel computes the right thing.
//!
//! Used by tests only; never a measurement backend (it says nothing about speed).
//!
//! ```
//! use ptxsim::{Arg, Memory, Module};
//!
//! let ptx = r#"
//! .version 7.0
//! .target sm_80
//! .address_size 64
//! .visible .entry twice(.param .u64 out, .param .u32 n)
//! {
//!     .reg .pred %p;
//!     .reg .b32 %r<4>;
//!     .reg .b64 %rd<4>;
//!     ld.param.u64 %rd1, [out];
//!     ld.param.u32 %r1, [n];
//!     mov.u32 %r2, %tid.x;
//!     setp.ge.u32 %p, %r2, %r1;
//!     @%p bra done;
//!     mul.wide.u32 %rd2, %r2, 4;
//!     add.u64 %rd3, %rd1, %rd2;
//!     shl.b32 %r3, %r2, 1;
//!     st.global.u32 [%rd3], %r3;
//! done:
//!     ret;
//! }
//! "#;
//! let module = Module::parse(ptx)?;
//! let mut mem = Memory::new();
//! let out = mem.alloc(5 * 4);
//! module.launch("twice", (1, 1, 1), (32, 1, 1), 0, &[Arg::Ptr(out), Arg::U32(5)], &mut mem)?;
//! assert_eq!(mem.read::<u32>(out, 5)?, vec![0, 2, 4, 6, 8]);
//! # Ok::<(), ptxsim::Error>(())
//! ```
//!
//! Layers: `parse` (text to syntax tree) → `decode` (to a compact IR, once; everything not
//! implemented, or not allowed by the module's `.version`/`.target` ([`isa`]), is rejected
//! here with its line) → `exec` (warps of 32 lanes in lockstep, schedules, barriers, bounds
//! checks) with `race` (shared- and global-memory race detection). `numeric` holds the exact
//! rounding of every float format; `mma` the tensor-core fragment layouts.
//!
//! # What is implemented
//!
//! Anything not listed is an [`Error::Unsupported`] naming it and its line, at parse time.
//!
//! - **Directives**: `.version`, `.target`, `.address_size 64`, `.visible`/`.weak .entry` with
//!   `.param` scalars and byte arrays, `.reqntid`/`.maxntid` (checked at launch),
//!   `.minnctapersm`/`.maxnreg` (hints), `.reg` (incl. `%r<N>`), `.shared` (static, at entry
//!   or module scope; `.extern .shared` dynamic), `.local`, nested `{ }` scopes, `.pragma
//!   "nounroll"`, `.loc`/`.file`. Not: `.func`/`call`, module-scope `.global`/`.const`,
//!   initializers, vector registers.
//! - **Integer**: `add sub` (`.sat.s32`), `mul mad` (`.lo .hi .wide`), `div rem min max abs neg
//!   and or xor not cnot shl shr popc clz brev bfe bfi prmt` (default mode) `lop3`, in 16, 32
//!   and 64 bits.
//! - **f32/f64**: `add sub mul fma mad div sqrt rcp min max abs neg` with `.rn .rz .rm .rp`
//!   (f32; f64 `.rn` only), `.ftz`, `.sat`; `fma`/`mad` fused. Not: `.approx` forms,
//!   transcendental functions.
//! - **f16/bf16** (scalar and x2): `add sub mul fma min max neg abs` (`.rn`, `.sat`), exact then
//!   rounded once.
//! - **Conversions**: `cvt` between all integer and float types (f16, bf16, f32, f64) with
//!   `.rn .rz .rm .rp .rni .rzi .rmi .rpi .sat .satfinite .ftz .relu`; `cvt.rna/.rn/.rz.tf32.f32`;
//!   `cvt.rn(.satfinite).{f16x2,bf16x2,e4m3x2,e5m2x2}.f32`, `.e4m3x2/.e5m2x2.f16x2`,
//!   `.f16x2.{e4m3x2,e5m2x2}`; `cvta(.to).{global,shared,local}`; `mov` incl. `{lo, hi}` pack and
//!   unpack, variable addresses, special registers, `%clock(64)`.
//! - **Predicates**: `setp` (all comparisons, `.and/.or/.xor` combine, `p|q`), `selp`,
//!   `and/or/xor/not.pred`, `@p`/`@!p` guards on any instruction.
//! - **Memory**: `ld`/`st` (`.global .shared .local .param`, generic), `.v2 .v4`, every
//!   cache operator and `.L1::`/`.L2::` eviction and prefetch hint, `.L2::cache_hint` (with
//!   `createpolicy`), `.nc`, `.volatile`, `.relaxed/.acquire/.release` + scope; `ldu`;
//!   `prefetch`; `fence`, `membar`. Accesses must be in bounds and naturally aligned.
//! - **Atomics**: `atom`/`red` `.global/.shared`/generic: `add` (u32 s32 u64 f32 f64), `min max`
//!   (u32 s32 u64 s64), `inc dec` (u32), `and or xor exch cas` (b32 b64).
//! - **Control and warp**: `bra` (`.uni` checked for divergence), `ret`, `exit`, `trap`,
//!   `bar.sync`/`barrier.sync` (id, thread count), `bar.warp.sync`, `shfl.sync` (up, down, bfly,
//!   idx, with segment/clamp operand and predicate output), `vote.sync` (all, any, uni,
//!   ballot), `activemask`, `nanosleep`.
//! - **Async copies**: `cp.async.{ca,cg}.shared.global` (4/8/16 bytes, src-size zero fill,
//!   ignore-src, prefetch size, cache hint), `cp.async.commit_group`, `.wait_group N`,
//!   `.wait_all`.
//! - **Tensor cores**: `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}(.trans).b16`; `mma.sync.aligned`
//!   `.row.col`: m8n8k4 f64; m16n8k4 tf32/f64; m16n8k8 f16 (→f16/f32), bf16, tf32, f64;
//!   m16n8k16 f16 (→f16/f32), bf16, s8/u8 (→s32), e4m3/e5m2, f64; m16n8k32 s8/u8 (→s32,
//!   `.satfinite`), e4m3/e5m2 (→f32/f16). Layouts as in the PTX ISA (see [`mma`] for numerics);
//!   the f64 shapes past m8n8k4 (sm_90) as CUTLASS's `SM90_16x8x{4,8,16}_F64F64F64F64_TN` traits.
//! - **Warpgroup MMA** (Hopper, `.version 8.0` and exactly `.target sm_90a`): `wgmma.fence`,
//!   `wgmma.commit_group`, `wgmma.wait_group N` (`.sync.aligned`), and
//!   `wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype d, a, b-desc, scale-d, ...` with
//!   every operand of the ISA's syntax: `.f16` (→f16/f32, k16), `.bf16` (→f32, k16), `.tf32`
//!   (→f32, k8), `.e4m3`/`.e5m2` in any mix (→f16/f32, k32), N a multiple of 8 up to 256;
//!   `.s8`/`.u8` (→s32, k32, `.satfinite`; mixed signedness from PTX 8.4), N 8, 16, 24 or a
//!   multiple of 16 up to 256. A from a descriptor or from four registers (the `mma.m16n8kK` A
//!   fragment, warp w holding rows 16w..16w+15); B from a descriptor; scale-d a predicate (or
//!   `!p`, or an immediate 0/1); imm-scale-a/b ±1; imm-trans-a/b 0 only (K-major; MN-major is
//!   refused as not implemented). Descriptors: start, LBO, SBO, base offset 0 (others refused
//!   at run time), swizzle none (8x16-byte core matrices, LBO along K, SBO along M/N) and
//!   32B/64B/128B (rows of W bytes, 8-row groups SBO apart, the 16-byte chunk index XORed with
//!   address bits 7.., on the absolute shared address, as CUTLASS's Swizzle<1|2|3,4,3>; a start
//!   address +32/+64/+96 bytes into a swizzled row selects the next K block). Results become
//!   visible at `wgmma.wait_group`. `fence.proxy.async{.shared::cta,.shared::cluster,.global}`.
//! - **mbarrier and bulk copies** (Hopper async proxy): `mbarrier.init`, `.arrive` (state or
//!   `_`, optional count), `.arrive.expect_tx`, `.expect_tx`, `.test_wait`/`.try_wait`
//!   (`.parity` or a state; suspend-time hint ignored), `.inval`, each with optional
//!   `.acquire/.release/.relaxed` + `.cta/.cluster`, `.shared`/`.shared::cta` or generic, `.b64`;
//!   `fence.mbarrier_init.release.cluster`; `cp.async.bulk.shared::cluster.global.
//!   mbarrier::complete_tx::bytes [dst], [src], size, [mbar]` and
//!   `cp.async.bulk.tensor.2d.shared::cluster.global{.tile}.mbarrier::complete_tx::bytes
//!   [dst], [tmap, {c0, c1}], [mbar]` (optional `.L2::cache_hint`), the tensor map a generic
//!   address (`mov.u64 %rd, param; cvta.param.u64 %rd, %rd;`, or global memory) of 128 bytes
//!   in ptxsim's own encoding ([`TensorMap`]): the box row-major, zero outside the tensor,
//!   16-byte chunks swizzled as wgmma's descriptors expect. A phase completes when its
//!   pending arrivals and tx-count reach 0. A copy is performed at issue and its bytes
//!   counted then; its bytes become readable by a thread once that thread's wait saw the
//!   phase complete; wgmma reads them with no `fence.proxy.async`. `cvta(.to).param`.
//!   A false wait ends the warp's time slice; its lanes run after the warp's other lanes.
//! - **Thread-block clusters** (sm_90): `.reqnctapercluster` (or [`LaunchConfig::cluster`]);
//!   `%cluster_ctarank`, `%cluster_nctarank`, `%clusterid`, `%nclusterid`, `%cluster_ctaid`,
//!   `%cluster_nctaid`; `barrier.cluster.arrive{.release,.relaxed}{.aligned}` and
//!   `.wait{.acquire}{.aligned}` (a phase completes when every thread of the cluster that has
//!   not exited arrived); `mapa.shared::cluster.u32` (another CTA's shared address);
//!   `mbarrier.arrive{.release.cluster}.shared::cluster.b64 _, [addr]` on another CTA's
//!   barrier; `cp.async.bulk.tensor…multicast::cluster [dst], [tmap, {c0, c1}], [mbar], mask`
//!   (the box lands at `dst`'s offset in every CTA of the mask, completing on the barrier at
//!   `mbar`'s offset in each). A cluster's CTAs run as one unit of at most 32 warps, their
//!   shared memories side by side; another CTA's barrier may be used only after a
//!   `barrier.cluster` phase completed since its init, and not once that CTA has exited.
//!   Reading or writing another CTA's shared memory with `ld`/`st.shared::cluster` is not
//!   implemented. Race checks between the warps of one CTA are coarser in a cluster: any
//!   barrier of the cluster (either CTA's `bar.sync`, `barrier.cluster`) starts a new epoch
//!   for all of them.
//!
//! # What is checked at parse time
//!
//! Besides what is not implemented: a module without `.version` and `.target`, a target the
//! version does not allow, and an instruction form that the module's `.version` or `.target`
//! does not allow ([`isa::Feature`], the same lines ptxas draws); forms the PTX ISA does not
//! have at all (an `mma` layout other than `.row.col`, a modifier an instruction does not take).
//!
//! # What is checked while running
//!
//! Out-of-bounds and misaligned accesses in every space; data races in shared memory (between
//! warps with no barrier in between) and in global memory (also between blocks of a launch;
//! off with [`LaunchConfig::check_global_races`]), where only atomics and strong accesses may
//! meet, and two lanes of one store writing the same bytes; reading a register or predicate in
//! a lane that never wrote it; `bra.uni` that diverges ([`UniformBranchPolicy`]); `shfl`/`vote`
//! whose membermask names lanes not executing it, or reading an inactive lane; `ldmatrix`/`mma`
//! not executed by all 32 lanes; `.aligned` barriers (`bar.sync`) reached at different
//! instructions, under a divergent guard, or skipped by a warp while others wait; barrier
//! deadlocks; integer division by zero; runaway loops ([`LaunchConfig::max_warp_instructions`]).
//! For `wgmma` (each an error naming the instruction and its line): a warpgroup (4 consecutive
//! warps) not complete in the block; a wgmma instruction not executed by all 32 lanes of a warp;
//! warps of a warpgroup at different `wgmma.mma_async` instructions, or one exiting (or stuck at
//! a barrier) while the others wait at one; no `wgmma.fence` before a warp's first
//! `mma_async`; an accumulator or A register accessed by another instruction after the last
//! `wgmma.fence` and then used by `mma_async`; any access to the accumulators or A registers of
//! a pending `mma_async` before a `wgmma.wait_group` completes its group (a later `mma_async` of
//! the same shape may chain the accumulators); descriptors or scale-d that differ between the
//! threads of the warpgroup; descriptor reads outside the block's shared memory; shared bytes
//! read through a descriptor whose last write was a generic-proxy write (st, atom, cp.async)
//! not followed by a `fence.proxy.async` of its writing thread; such reads racing other warps'
//! writes (the race detector, as reads by all four warps); a generic write to shared bytes a
//! pending `mma_async` reads; scale-d true with never-written accumulators; a thread exiting
//! with `mma_async` operations pending (committed or not).
//! For mbarriers and bulk copies: use before `mbarrier.init` (or after `.inval`), use by
//! another warp before a `bar.sync` follows the init, init of a live barrier, over-arrival
//! (more arrivals than pending in the phase), tx-count underflow (more bytes completed than
//! expected once all arrivals are in) or beyond ±(2^20-1), `inval` with bytes outstanding, a
//! state from another barrier, generic loads/stores of a live mbarrier, a generic read of (or
//! write to) shared bytes of a bulk copy whose phase this thread has not seen complete, a
//! bulk copy over bytes another copy is still filling or a pending wgmma reads, a wgmma
//! reading copied bytes before every thread of its warpgroup waited, misaligned or badly
//! sized copies, a tensor map not made by [`TensorMap::encode`] or breaking its rules, and a
//! deadlock when every remaining thread spins on a wait that cannot succeed (a wait that
//! failed twice with no mbarrier change in between). The race detector knows only `bar.sync`:
//! generic data passed between warps through an mbarrier alone is reported as a race.
//! Fresh global allocations and shared memory start poisoned, never zero. Kernels can be run
//! under shuffled block and warp orders ([`Schedule`]) to show their results do not depend on
//! the order.

mod decode;
mod error;
mod exec;
mod ir;
pub mod isa;
mod memory;
pub mod mma;
pub mod numeric;
mod parse;
mod race;
mod tensor_map;
mod types;

pub use decode::{Kernel, KernelParam};
pub use error::Error;
pub use exec::{
    Arg, LaunchConfig, LaunchStats, Schedule, UniformBranchPolicy, MAX_SHARED_BYTES, MAX_SLICE,
    WATCHDOG_ENDED,
};
pub use ir::MmaShape;
pub use memory::{DevicePtr, Element, Memory, POISON_BYTE};
pub use tensor_map::{OobFill, Swizzle, TensorMap};
pub use types::Ty;

/// Where an entry's dynamic shared memory (its `.extern .shared` array) starts.
///
/// The PTX ISA lets `.extern .shared` declare an alignment, but the toolchains do not promise
/// it for the dynamic region: only 16 bytes are (NVIDIA/cccl#5122). A kernel that needs more
/// (a 128-byte swizzle's 1024-byte atoms) must round its base up itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DynamicSharedBase {
    /// After the static variables, at the alignment the declaration asks for.
    #[default]
    AsDeclared,
    /// After the static variables, 16-byte aligned and never 1024-byte aligned: what a real
    /// toolchain may give, so a kernel that assumes the declared alignment fails.
    Misaligned,
}

/// A parsed and decoded PTX module: its entries, ready to launch.
#[derive(Debug, Clone)]
pub struct Module {
    /// `.version major.minor`, if declared.
    pub version: Option<(u32, u32)>,
    /// `.target` names (`sm_80`, ...).
    pub targets: Vec<String>,
    kernels: Vec<Kernel>,
}

impl Module {
    /// Parses and decodes PTX text. Any instruction, modifier, type or directive ptxsim does
    /// not implement is an error naming it and its line.
    pub fn parse(ptx: &str) -> Result<Module, Error> {
        Module::parse_with(ptx, DynamicSharedBase::AsDeclared)
    }

    /// [`Module::parse`], with the dynamic shared memory of every entry placed as `dynamic_base`
    /// says.
    pub fn parse_with(ptx: &str, dynamic_base: DynamicSharedBase) -> Result<Module, Error> {
        let ast = parse::parse_module(ptx)?;
        let kernels = decode::build_kernels(&ast, dynamic_base)?;
        Ok(Module {
            version: ast.version,
            targets: ast.targets,
            kernels,
        })
    }

    /// Names of the `.entry` functions, in file order.
    pub fn entries(&self) -> Vec<&str> {
        self.kernels.iter().map(|k| k.name.as_str()).collect()
    }

    /// The decoded entry called `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// Launches `name` on a `grid` of blocks of `block` threads, with `dynamic_shared_bytes`
    /// of dynamic shared memory, and runs it to completion.
    pub fn launch(
        &self,
        name: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        dynamic_shared_bytes: u32,
        args: &[Arg],
        mem: &mut Memory,
    ) -> Result<LaunchStats, Error> {
        self.launch_with(
            name,
            &LaunchConfig::new(grid, block, dynamic_shared_bytes),
            args,
            mem,
        )
    }

    /// [`Module::launch`] with every option spelled out.
    pub fn launch_with(
        &self,
        name: &str,
        config: &LaunchConfig,
        args: &[Arg],
        mem: &mut Memory,
    ) -> Result<LaunchStats, Error> {
        let kernel = self.kernel(name).ok_or_else(|| {
            Error::Launch(format!(
                "no entry `{name}` in this module (entries: {})",
                self.entries().join(", ")
            ))
        })?;
        exec::launch(kernel, config, args, mem)
    }
}
