//! The decoded form of a kernel: each PTX instruction turned once, at parse time, into an
//! [`Op`] with resolved register indices, resolved branch targets and interpreted modifiers,
//! so the executor never looks at text again.
//!
//! Registers of every non-predicate type live in one file of 64-bit slots (`Reg`); a value
//! narrower than 64 bits is kept zero-extended and every read masks to the instruction's type.
//! Predicates live in a separate file of 32-lane masks (`PredReg`).

use crate::numeric::Rounding;
pub(crate) use crate::race::Strength;
use crate::types::{Space, Ty};

pub type Reg = u32;
pub type PredReg = u32;

/// A source operand: a register or an immediate (already converted to the instruction type's
/// bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Src {
    Reg(Reg),
    Imm(u64),
}

/// A predicate operand, possibly negated (`!%p`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PredSrc {
    pub reg: PredReg,
    pub negated: bool,
}

/// `[base + offset]`. Variable and parameter names are already turned into their offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addr {
    pub base: Option<Reg>,
    pub offset: i64,
}

/// Values a thread reads from special registers, kept in hidden registers initialised when a
/// warp is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    SmId,
    NSmId,
    GridId,
    LaneMaskEq,
    LaneMaskLt,
    LaneMaskLe,
    LaneMaskGt,
    LaneMaskGe,
    DynamicSmemSize,
    TotalSmemSize,
    /// `%cluster_ctarank`: the CTA's linear rank in its cluster (x fastest).
    ClusterCtaRank,
    /// `%cluster_nctarank`: the CTAs in a cluster.
    ClusterNCtaRank,
    /// `%clusterid.{x,y,z}`: the cluster's position in the grid of clusters.
    ClusterId(u8),
    /// `%nclusterid.{x,y,z}`: the grid of clusters.
    NClusterId(u8),
    /// `%cluster_ctaid.{x,y,z}`: the CTA's position in its cluster.
    ClusterCtaId(u8),
    /// `%cluster_nctaid.{x,y,z}`: the cluster's shape in CTAs.
    ClusterNCtaId(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOp {
    Add,
    Sub,
    MulLo,
    MulHi,
    MulWide,
    Div,
    Rem,
    Min,
    Max,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    AddSat,
    SubSat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntUnOp {
    Not,
    Cnot,
    Neg,
    Abs,
    Popc,
    Clz,
    Brev,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MadMode {
    Lo,
    Hi,
    Wide,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatOp {
    Add,
    Sub,
    Mul,
    Div,
    Min,
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatUnOp {
    Neg,
    Abs,
    Sqrt,
    Rcp,
}

/// f32 or f64 arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prec {
    F32,
    F64,
}

/// Half-width float arithmetic: which format, and whether packed (x2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfFmt {
    F16,
    Bf16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfOp {
    Add,
    Sub,
    Mul,
    Fma,
    Min,
    Max,
    Neg,
    Abs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    And,
    Or,
    Xor,
    Exch,
    Cas,
}

/// Rounding of a `cvt`: to a float (`.rn` ...), to an integral value (`.rni` ...), or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CvtRound {
    None,
    Float(Rounding),
    Integer(Rounding),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmaShape {
    M8n8k4,
    M16n8k4,
    M16n8k8,
    M16n8k16,
    M16n8k32,
}

impl MmaShape {
    pub fn name(self) -> &'static str {
        match self {
            MmaShape::M8n8k4 => "m8n8k4",
            MmaShape::M16n8k4 => "m16n8k4",
            MmaShape::M16n8k8 => "m16n8k8",
            MmaShape::M16n8k16 => "m16n8k16",
            MmaShape::M16n8k32 => "m16n8k32",
        }
    }

    pub fn mnk(self) -> (usize, usize, usize) {
        match self {
            MmaShape::M8n8k4 => (8, 8, 4),
            MmaShape::M16n8k4 => (16, 8, 4),
            MmaShape::M16n8k8 => (16, 8, 8),
            MmaShape::M16n8k16 => (16, 8, 16),
            MmaShape::M16n8k32 => (16, 8, 32),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MmaInst {
    pub shape: MmaShape,
    pub dtype: Ty,
    pub atype: Ty,
    pub btype: Ty,
    pub ctype: Ty,
    pub satfinite: bool,
    pub d: Vec<Reg>,
    pub a: Vec<Src>,
    pub b: Vec<Src>,
    pub c: Vec<Src>,
}

/// Where `wgmma.mma_async` takes A from.
#[derive(Debug, Clone, PartialEq)]
pub enum WgmmaA {
    /// A 64-bit matrix descriptor (A in shared memory).
    Desc(Src),
    /// Four 32-bit registers per thread (the `mma.m16n8kK` A fragment of each warp's rows).
    Regs(Vec<Src>),
}

/// `scale-d`: a predicate (D = A*B + D when true, D = A*B when false) or an immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleD {
    Pred(PredSrc),
    Imm(bool),
}

/// `wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype`.
#[derive(Debug, Clone, PartialEq)]
pub struct WgmmaInst {
    pub n: u32,
    pub k: u32,
    pub dtype: Ty,
    pub atype: Ty,
    pub btype: Ty,
    pub satfinite: bool,
    /// The accumulator registers (N/2 of them for 32-bit D, N/4 for f16 D).
    pub d: Vec<Reg>,
    pub a: WgmmaA,
    pub b_desc: Src,
    pub scale_d: ScaleD,
    /// `imm-scale-a` / `imm-scale-b` = -1.
    pub neg_a: bool,
    pub neg_b: bool,
}

impl WgmmaInst {
    /// The registers of A when A comes from registers.
    pub fn a_regs(&self) -> Vec<Reg> {
        match &self.a {
            WgmmaA::Regs(v) => v
                .iter()
                .filter_map(|s| match s {
                    Src::Reg(r) => Some(*r),
                    Src::Imm(_) => None,
                })
                .collect(),
            WgmmaA::Desc(_) => Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `mov` of `bits` bits.
    Mov {
        d: Reg,
        a: Src,
        bits: u32,
    },
    MovPred {
        d: PredReg,
        a: PredSrc,
    },
    /// `mov.bN d, {a, b, ...}`: parts from least significant up.
    Pack {
        d: Reg,
        parts: Vec<Src>,
        part_bits: u32,
    },
    /// `mov.bN {a, b, ...}, s`; `None` for a sink `_`.
    Unpack {
        ds: Vec<Option<Reg>>,
        a: Src,
        part_bits: u32,
    },
    /// `%clock`/`%clock64` (cycles), or `%globaltimer` (nanoseconds) when `timer`.
    ReadClock {
        d: Reg,
        bits: u32,
        timer: bool,
    },
    Int {
        op: IntOp,
        bits: u32,
        signed: bool,
        d: Reg,
        a: Src,
        b: Src,
    },
    IntUn {
        op: IntUnOp,
        bits: u32,
        signed: bool,
        d: Reg,
        a: Src,
    },
    Mad {
        mode: MadMode,
        bits: u32,
        signed: bool,
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    Bfe {
        bits: u32,
        signed: bool,
        d: Reg,
        a: Src,
        pos: Src,
        len: Src,
    },
    Bfi {
        bits: u32,
        d: Reg,
        a: Src,
        b: Src,
        pos: Src,
        len: Src,
    },
    Prmt {
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    Lop3 {
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
        lut: u8,
    },
    Float {
        op: FloatOp,
        prec: Prec,
        rnd: Rounding,
        ftz: bool,
        sat: bool,
        d: Reg,
        a: Src,
        b: Src,
    },
    FloatUn {
        op: FloatUnOp,
        prec: Prec,
        rnd: Rounding,
        ftz: bool,
        d: Reg,
        a: Src,
    },
    Fma {
        prec: Prec,
        rnd: Rounding,
        ftz: bool,
        sat: bool,
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    Half {
        op: HalfOp,
        fmt: HalfFmt,
        packed: bool,
        sat: bool,
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        ftz: bool,
        p: Option<PredReg>,
        q: Option<PredReg>,
        a: Src,
        b: Src,
        combine: Option<(BoolOp, PredSrc)>,
    },
    Selp {
        bits: u32,
        d: Reg,
        a: Src,
        b: Src,
        p: PredSrc,
    },
    PredLogic {
        op: BoolOp,
        d: PredReg,
        a: PredSrc,
        b: PredSrc,
    },
    PredNot {
        d: PredReg,
        a: PredSrc,
    },
    Cvt {
        d: Reg,
        a: Src,
        to: Ty,
        from: Ty,
        rnd: CvtRound,
        sat: bool,
        satfinite: bool,
        ftz: bool,
        relu: bool,
        dst_bits: u32,
    },
    /// `cvt.rn.f16x2.f32 d, a, b` and friends: a goes to the upper half.
    CvtPair {
        d: Reg,
        a: Src,
        b: Src,
        to: Ty,
        rnd: Rounding,
        satfinite: bool,
        relu: bool,
    },
    /// `cvt.rn.satfinite.e4m3x2.f16x2 d, a`.
    CvtF16x2ToF8x2 {
        d: Reg,
        a: Src,
        to: Ty,
        relu: bool,
    },
    /// `cvt.rn.f16x2.e4m3x2 d, a`.
    CvtF8x2ToF16x2 {
        d: Reg,
        a: Src,
        from: Ty,
        relu: bool,
    },
    Cvta {
        d: Reg,
        a: Src,
        space: Space,
        to_space: bool,
        bits: u32,
    },
    Ld {
        space: Space,
        ty: Ty,
        ds: Vec<Option<Reg>>,
        dst_bits: Vec<u32>,
        addr: Addr,
        /// Weak, or `.relaxed`/`.acquire`/`.volatile` at a scope (for the race detector).
        strength: Strength,
    },
    St {
        space: Space,
        ty: Ty,
        srcs: Vec<Src>,
        addr: Addr,
        strength: Strength,
    },
    Atom {
        space: Space,
        op: AtomOp,
        ty: Ty,
        /// `.gpu` unless the instruction names `.cta` (atomics are always strong).
        strength: Strength,
        d: Option<Reg>,
        addr: Addr,
        b: Src,
        c: Option<Src>,
    },
    Bra {
        target: u32,
        uni: bool,
    },
    Exit,
    /// `bar.sync` / `barrier.sync`; `aligned` (`bar.sync` means `barrier.sync.aligned`)
    /// requires all lanes of a warp to wait at the same instruction.
    Bar {
        id: Src,
        count: Option<Src>,
        aligned: bool,
    },
    BarWarp {
        mask: Src,
    },
    /// Fences, `membar`, `prefetch`, `nanosleep`: nothing to do in a sequential interpreter.
    Nop,
    Trap,
    Shfl {
        mode: ShflMode,
        d: Reg,
        p: Option<PredReg>,
        a: Src,
        b: Src,
        c: Src,
        mask: Src,
    },
    Vote {
        mode: VoteMode,
        d: Reg,
        dp: Option<PredReg>,
        a: PredSrc,
        mask: Src,
    },
    Activemask {
        d: Reg,
    },
    CpAsync {
        dst: Addr,
        src: Addr,
        cp_bytes: u32,
        src_bytes: Option<Src>,
        ignore_src: Option<PredSrc>,
    },
    CpAsyncCommit,
    /// `cp.async.wait_group N`; `cp.async.wait_all` is a commit followed by a wait for 0.
    CpAsyncWait {
        groups: u32,
        commit_first: bool,
    },
    Ldmatrix {
        space: Space,
        num: u32,
        trans: bool,
        ds: Vec<Reg>,
        addr: Addr,
    },
    Mma(Box<MmaInst>),
    /// `fence.proxy.async`: orders this thread's earlier generic-proxy shared-memory writes
    /// before later async-proxy (wgmma) reads.
    FenceProxyAsync,
    WgmmaFence,
    WgmmaCommit,
    WgmmaWait {
        groups: u32,
    },
    Wgmma(Box<WgmmaInst>),
    /// `mbarrier.init [addr], count` (addresses of the mbarrier ops: shared offsets, or
    /// generic when `generic`).
    MbarInit {
        addr: Addr,
        generic: bool,
        count: Src,
    },
    /// `mbarrier.arrive{.expect_tx}` (state into `d` unless `_`), optional count. `remote`:
    /// `.shared::cluster`, the address (from `mapa`) may name another CTA's barrier.
    MbarArrive {
        d: Option<Reg>,
        addr: Addr,
        generic: bool,
        remote: bool,
        count: Option<Src>,
        expect_tx: Option<Src>,
    },
    /// `mbarrier.expect_tx [addr], tx`.
    MbarExpectTx {
        addr: Addr,
        generic: bool,
        tx: Src,
    },
    /// `mbarrier.test_wait` / `try_wait` (`.parity`: `operand` is the phase parity, else an
    /// arrive's state).
    MbarWait {
        p: PredReg,
        addr: Addr,
        generic: bool,
        parity: bool,
        operand: Src,
        hint: Option<Src>,
    },
    MbarInval {
        addr: Addr,
        generic: bool,
    },
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size,
    /// [mbar]`.
    BulkCopy {
        dst: Addr,
        src: Addr,
        size: Src,
        mbar: Addr,
    },
    /// `cp.async.bulk.tensor.2d...tile.mbarrier::complete_tx::bytes [dst], [tmap, {c0, c1}],
    /// [mbar]` (tmap a generic address); with `.multicast::cluster`, `{, ctaMask}`: the box
    /// lands at the same offsets in every CTA of the cluster whose bit is set, completing on
    /// the mbarrier at `mbar`'s offset in each.
    BulkTensor {
        dst: Addr,
        tmap: Addr,
        coords: Vec<Src>,
        mbar: Addr,
        multicast: Option<Src>,
    },
    /// `mapa.shared::cluster.u32 d, a, rank`: the shared::cluster address of the variable at
    /// this CTA's shared address `a` in the CTA of rank `rank` of the cluster.
    Mapa {
        d: Reg,
        a: Src,
        rank: Src,
    },
    /// `barrier.cluster.arrive{.release,.relaxed}{.aligned}`.
    ClusterArrive {
        aligned: bool,
    },
    /// `barrier.cluster.wait{.acquire}{.aligned}`: waits until every non-exited thread of the
    /// cluster arrived in the current phase.
    ClusterWait {
        aligned: bool,
    },
}

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq)]
pub struct Inst {
    pub op: Op,
    pub guard: Option<PredSrc>,
    pub line: u32,
}

/// The registers one instruction reads and writes (its guard aside), so that the executor can
/// check, once per warp instruction, that nothing is read before it was written: registers and
/// predicates start undefined, as on the hardware, and reading one is an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uses {
    pub reads: Vec<Reg>,
    pub writes: Vec<Reg>,
    pub pred_reads: Vec<PredReg>,
    pub pred_writes: Vec<PredReg>,
}

impl Uses {
    fn read(&mut self, s: Src) {
        if let Src::Reg(r) = s {
            self.reads.push(r);
        }
    }

    fn read_all(&mut self, srcs: &[Src]) {
        for &s in srcs {
            self.read(s);
        }
    }

    fn addr(&mut self, a: Addr) {
        if let Some(r) = a.base {
            self.reads.push(r);
        }
    }

    fn pred(&mut self, p: PredSrc) {
        self.pred_reads.push(p.reg);
    }
}

impl Op {
    /// The mbarrier and bulk-copy operations (`exec/bulk.rs` runs them).
    pub fn is_bulk(&self) -> bool {
        matches!(
            self,
            Op::MbarInit { .. }
                | Op::MbarArrive { .. }
                | Op::MbarExpectTx { .. }
                | Op::MbarWait { .. }
                | Op::MbarInval { .. }
                | Op::BulkCopy { .. }
                | Op::BulkTensor { .. }
        )
    }

    /// What this instruction reads and writes, for every lane that executes it. Every variant
    /// is listed (no catch-all), so a new instruction cannot skip the check.
    pub fn uses(&self) -> Uses {
        let mut u = Uses::default();
        match self {
            Op::Mov { d, a, .. } => {
                u.read(*a);
                u.writes.push(*d);
            }
            Op::MovPred { d, a } | Op::PredNot { d, a } => {
                u.pred(*a);
                u.pred_writes.push(*d);
            }
            Op::Pack { d, parts, .. } => {
                u.read_all(parts);
                u.writes.push(*d);
            }
            Op::Unpack { ds, a, .. } => {
                u.read(*a);
                u.writes.extend(ds.iter().flatten());
            }
            Op::ReadClock { d, .. } | Op::Activemask { d } => u.writes.push(*d),
            Op::Int { d, a, b, .. } | Op::Float { d, a, b, .. } => {
                u.read_all(&[*a, *b]);
                u.writes.push(*d);
            }
            Op::IntUn { d, a, .. }
            | Op::FloatUn { d, a, .. }
            | Op::Cvt { d, a, .. }
            | Op::CvtF16x2ToF8x2 { d, a, .. }
            | Op::CvtF8x2ToF16x2 { d, a, .. }
            | Op::Cvta { d, a, .. } => {
                u.read(*a);
                u.writes.push(*d);
            }
            Op::Mad { d, a, b, c, .. }
            | Op::Prmt { d, a, b, c }
            | Op::Lop3 { d, a, b, c, .. }
            | Op::Fma { d, a, b, c, .. }
            | Op::Half { d, a, b, c, .. } => {
                u.read_all(&[*a, *b, *c]);
                u.writes.push(*d);
            }
            Op::Bfe { d, a, pos, len, .. } => {
                u.read_all(&[*a, *pos, *len]);
                u.writes.push(*d);
            }
            Op::Bfi {
                d, a, b, pos, len, ..
            } => {
                u.read_all(&[*a, *b, *pos, *len]);
                u.writes.push(*d);
            }
            Op::Setp {
                p,
                q,
                a,
                b,
                combine,
                ..
            } => {
                u.read_all(&[*a, *b]);
                if let Some((_, c)) = combine {
                    u.pred(*c);
                }
                u.pred_writes.extend(p.iter().chain(q));
            }
            Op::Selp { d, a, b, p, .. } => {
                u.read_all(&[*a, *b]);
                u.pred(*p);
                u.writes.push(*d);
            }
            Op::PredLogic { d, a, b, .. } => {
                u.pred(*a);
                u.pred(*b);
                u.pred_writes.push(*d);
            }
            Op::CvtPair { d, a, b, .. } => {
                u.read_all(&[*a, *b]);
                u.writes.push(*d);
            }
            Op::Ld { ds, addr, .. } => {
                u.addr(*addr);
                u.writes.extend(ds.iter().flatten());
            }
            Op::St { srcs, addr, .. } => {
                u.addr(*addr);
                u.read_all(srcs);
            }
            Op::Atom { d, addr, b, c, .. } => {
                u.addr(*addr);
                u.read(*b);
                if let Some(c) = c {
                    u.read(*c);
                }
                u.writes.extend(d);
            }
            Op::Bra { .. } | Op::Exit | Op::Nop | Op::Trap | Op::CpAsyncCommit => {}
            Op::CpAsyncWait { .. } => {}
            Op::Bar { id, count, .. } => {
                u.read(*id);
                if let Some(c) = count {
                    u.read(*c);
                }
            }
            Op::BarWarp { mask } => u.read(*mask),
            Op::Shfl {
                d,
                p,
                a,
                b,
                c,
                mask,
                ..
            } => {
                u.read_all(&[*a, *b, *c, *mask]);
                u.writes.push(*d);
                u.pred_writes.extend(p);
            }
            Op::Vote { d, dp, a, mask, .. } => {
                u.pred(*a);
                u.read(*mask);
                u.writes.push(*d);
                u.pred_writes.extend(dp);
            }
            Op::CpAsync {
                dst,
                src,
                src_bytes,
                ignore_src,
                ..
            } => {
                u.addr(*dst);
                u.addr(*src);
                if let Some(s) = src_bytes {
                    u.read(*s);
                }
                if let Some(p) = ignore_src {
                    u.pred(*p);
                }
            }
            Op::Ldmatrix { ds, addr, .. } => {
                u.addr(*addr);
                u.writes.extend(ds);
            }
            Op::MbarInit { addr, count, .. } => {
                u.addr(*addr);
                u.read(*count);
            }
            Op::MbarArrive {
                d,
                addr,
                count,
                expect_tx,
                ..
            } => {
                u.addr(*addr);
                if let Some(c) = count {
                    u.read(*c);
                }
                if let Some(t) = expect_tx {
                    u.read(*t);
                }
                u.writes.extend(d);
            }
            Op::MbarExpectTx { addr, tx, .. } => {
                u.addr(*addr);
                u.read(*tx);
            }
            Op::MbarWait {
                p,
                addr,
                operand,
                hint,
                ..
            } => {
                u.addr(*addr);
                u.read(*operand);
                if let Some(h) = hint {
                    u.read(*h);
                }
                u.pred_writes.push(*p);
            }
            Op::MbarInval { addr, .. } => u.addr(*addr),
            Op::BulkCopy {
                dst,
                src,
                size,
                mbar,
            } => {
                u.addr(*dst);
                u.addr(*src);
                u.read(*size);
                u.addr(*mbar);
            }
            Op::BulkTensor {
                dst,
                tmap,
                coords,
                mbar,
                multicast,
            } => {
                u.addr(*dst);
                u.addr(*tmap);
                u.read_all(coords);
                u.addr(*mbar);
                if let Some(m) = multicast {
                    u.read(*m);
                }
            }
            Op::Mapa { d, a, rank } => {
                u.read(*a);
                u.read(*rank);
                u.writes.push(*d);
            }
            Op::ClusterArrive { .. } | Op::ClusterWait { .. } => {}
            Op::FenceProxyAsync | Op::WgmmaFence | Op::WgmmaCommit | Op::WgmmaWait { .. } => {}
            // The accumulators are read (when scale-d is true) and written by the executor
            // itself, when the warpgroup's operation runs and when its group completes.
            Op::Wgmma(m) => {
                match &m.a {
                    WgmmaA::Desc(s) => u.read(*s),
                    WgmmaA::Regs(v) => u.read_all(v),
                }
                u.read(m.b_desc);
                if let ScaleD::Pred(p) = m.scale_d {
                    u.pred(p);
                }
            }
            Op::Mma(m) => {
                u.read_all(&m.a);
                u.read_all(&m.b);
                u.read_all(&m.c);
                u.writes.extend(&m.d);
            }
        }
        u
    }
}
