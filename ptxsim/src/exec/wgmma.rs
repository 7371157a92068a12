//! Hopper's warpgroup MMA: `wgmma.fence`, `wgmma.mma_async`, `wgmma.commit_group`,
//! `wgmma.wait_group` (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
//! Instructions"), with `fence.proxy.async` for the shared memory they read.
//!
//! A warpgroup is four consecutive warps of the block (warp index / 4). Each warp that reaches
//! a `wgmma.mma_async` waits there ([`LaneState::Wgmma`]); when no thread of the block can run,
//! every warpgroup whose four warps wait at the same instruction performs it: it reads its
//! operands (registers of the four warps, shared memory through the descriptors), computes D,
//! and each warp continues with the result *pending*: the accumulator registers take it only
//! when a `wgmma.wait_group` completes the operation's group. Until then the accumulators (and
//! A registers) are in flight, and any other instruction that touches them is an error, as is
//! everything else the ISA leaves undefined (see the crate docs' list of checks).

use super::*;

/// Bits of a shared-memory writer tag: (thread + 1) << 53 | pc << 29 | fence count.
const TAG_THREAD_SHIFT: u32 = 53;
const TAG_PC_SHIFT: u32 = 29;
const TAG_COUNT_MASK: u64 = (1 << 29) - 1;
const TAG_PC_MASK: u64 = (1 << 24) - 1;

/// One warp's share of a `wgmma.mma_async` whose group has not completed.
pub(super) struct WgPending {
    seq: u32,
    /// The warp's `wgmma.commit_group` count when it issued (the group it belongs to).
    group: u32,
    pc: u32,
    n: u32,
    dtype: Ty,
    /// The accumulators this operation still writes (`None` once a later operation of the
    /// same accumulator chain took the register over).
    d: Vec<Option<Reg>>,
    /// `d.len() * 32` values, register-major.
    values: Vec<u64>,
    a_regs: Vec<Reg>,
}

/// Per warp.
pub(super) struct WarpWgmma {
    committed: u32,
    ops: Vec<WgPending>,
    /// A `wgmma.fence` has been executed.
    fenced: bool,
    /// Per register: pc + 1 of the last access by a non-wgmma instruction since the last
    /// `wgmma.fence` (0: none).
    touched: Vec<u32>,
    /// Per register: seq of the pending operation that writes it as an accumulator (0: none).
    acc: Vec<u32>,
    /// Per register: how many pending operations read it as an A register.
    ain: Vec<u16>,
    /// The `wgmma.mma_async` this warp waits at.
    pub(super) arrived: Option<u32>,
}

impl WarpWgmma {
    pub(super) fn new(n_regs: usize) -> WarpWgmma {
        WarpWgmma {
            committed: 0,
            ops: Vec::new(),
            fenced: false,
            touched: vec![0; n_regs],
            acc: vec![0; n_regs],
            ain: vec![0; n_regs],
            arrived: None,
        }
    }
}

/// The shared-memory reads of one operation, until all four warps completed it.
struct ActiveRead {
    seq: u32,
    pc: u32,
    chunks: Vec<u32>,
    remaining: u32,
}

/// Per block.
pub(super) struct BlockWgmma {
    /// Per shared byte: the tag of its last generic-proxy write (0: none, or fenced since).
    writer: Vec<u64>,
    /// Per 16-byte chunk of shared memory: pending operations that read it.
    readers: Vec<u16>,
    reads: Vec<ActiveRead>,
    next_seq: u32,
}

impl BlockWgmma {
    pub(super) fn new(shared_bytes: usize) -> BlockWgmma {
        BlockWgmma {
            writer: vec![0; shared_bytes],
            readers: vec![0; shared_bytes.div_ceil(16)],
            reads: Vec::new(),
            next_seq: 0,
        }
    }
}

impl BlockWgmma {
    /// Whether a pending operation reads 16-byte chunk `c` of shared memory.
    pub(super) fn chunk_read(&self, c: usize) -> bool {
        self.readers[c] > 0
    }

    /// An async-proxy write (a bulk copy): wgmma may read it with no fence.proxy.async.
    pub(super) fn async_write(&mut self, off: usize, len: usize) {
        self.writer[off..off + len].fill(0);
    }
}

/// The fields of a wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format").
#[derive(Debug, Clone, Copy)]
struct Desc {
    start: u64,
    lbo: u64,
    sbo: u64,
    base_offset: u64,
    swizzle: u64,
}

impl Desc {
    fn decode(d: u64) -> Desc {
        Desc {
            start: (d & 0x3fff) << 4,
            lbo: ((d >> 16) & 0x3fff) << 4,
            sbo: ((d >> 32) & 0x3fff) << 4,
            base_offset: (d >> 49) & 7,
            swizzle: d >> 62,
        }
    }

    /// Shared address of bytes `16 * chunk .. 16 * chunk + 16` (along K) of row `r` (along M
    /// or N) of a K-major operand.
    fn chunk_addr(&self, r: u64, chunk: u64) -> u64 {
        if self.swizzle == 0 {
            // Core matrices of 8 rows x 16 bytes: rows 16 bytes apart, the next core matrix
            // along K at LBO, the next along M/N at SBO.
            return self.start + (r / 8) * self.sbo + chunk * self.lbo + (r % 8) * 16;
        }
        // 128B / 64B / 32B swizzle: rows of W bytes, 8-row groups SBO apart, and the 16-byte
        // chunk index XORed with address bits 7.. (CUTLASS Swizzle<3,4,3>, <2,4,3>, <1,4,3>
        // on the absolute shared address). LBO is unused for K-major swizzled layouts.
        let (width, mask) = match self.swizzle {
            1 => (128, 7),
            2 => (64, 3),
            _ => (32, 1),
        };
        let logical = self.start + (r / 8) * self.sbo + (r % 8) * width + 16 * chunk;
        logical ^ (((logical >> 7) & mask) << 4)
    }
}

fn swizzle_name(s: u64) -> &'static str {
    match s {
        0 => "no swizzle",
        1 => "128B swizzle",
        2 => "64B swizzle",
        _ => "32B swizzle",
    }
}

impl Block<'_, '_> {
    fn wg_error(&self, pc: u32, group: u32, message: impl Into<String>) -> Error {
        Error::Runtime {
            line: self.kernel.code[pc as usize].line,
            instruction: self.kernel.texts[pc as usize].clone(),
            message: format!(
                "block {:?} warpgroup {group} (warps {}..={}): {}",
                self.cluster.ctaid(4 * group / self.cta_warps()),
                4 * group,
                4 * group + 3,
                message.into()
            ),
        }
    }

    fn reg_name(&self, r: Reg) -> &str {
        &self.kernel.reg_names[r as usize]
    }

    /// `wgmma.fence`, `commit_group`, `wait_group` and the arrival at `mma_async`.
    pub(super) fn wgmma_step(&mut self, w: &mut Warp, pc: u32, exec: u32) -> Result<Flow, Error> {
        let op = &self.kernel.code[pc as usize].op;
        let name = match op {
            Op::WgmmaFence => "wgmma.fence",
            Op::WgmmaCommit => "wgmma.commit_group",
            Op::WgmmaWait { .. } => "wgmma.wait_group",
            _ => "wgmma.mma_async",
        };
        if exec == 0 {
            // A guard false in the whole warp: skipped (its warpgroup must agree, which the
            // rendezvous checks for mma_async).
            return Ok(Flow::Next);
        }
        self.require_full_warp(w, pc, exec, name)?;
        let threads = self.threads();
        let group = w.index / 4;
        let local = self.cta_warp(w) / 4;
        if (local + 1) * 128 > threads {
            return Err(self.warp_fault(w, pc, format!(
                "`{name}` is executed by a whole warpgroup (4 consecutive warps, 128 threads), but the block has {threads} threads, so warp {}'s warpgroup (warps {}..={}) is incomplete",
                w.index,
                4 * group,
                4 * group + 3
            )));
        }
        match op {
            Op::WgmmaFence => {
                w.wg.fenced = true;
                w.wg.touched.fill(0);
            }
            Op::WgmmaCommit => w.wg.committed += 1,
            Op::WgmmaWait { groups } => {
                let limit = w.wg.committed.saturating_sub(*groups);
                self.wgmma_complete(w, limit);
            }
            _ => {
                for l in lanes(w.exists) {
                    w.state[l] = LaneState::Wgmma;
                }
                w.running = 0;
                w.wg.arrived = Some(pc);
                return Ok(Flow::Done);
            }
        }
        Ok(Flow::Next)
    }

    /// Completes the warp's pending operations of groups below `limit`: their accumulators
    /// take their values.
    fn wgmma_complete(&mut self, w: &mut Warp, limit: u32) {
        if w.wg.ops.iter().all(|o| o.group >= limit) {
            return;
        }
        let ops = std::mem::take(&mut w.wg.ops);
        for op in ops {
            if op.group >= limit {
                w.wg.ops.push(op);
                continue;
            }
            for (i, r) in op.d.iter().enumerate() {
                let Some(r) = *r else { continue };
                let r = r as usize;
                w.regs[r * 32..r * 32 + 32].copy_from_slice(&op.values[i * 32..i * 32 + 32]);
                w.reg_written[r] |= w.exists;
                w.wg.acc[r] = 0;
            }
            for &r in &op.a_regs {
                w.wg.ain[r as usize] -= 1;
            }
            let wg = self.wg.as_mut().expect("wgmma state");
            if let Some(i) = wg.reads.iter().position(|a| a.seq == op.seq) {
                wg.reads[i].remaining -= 1;
                if wg.reads[i].remaining == 0 {
                    let a = wg.reads.swap_remove(i);
                    for c in a.chunks {
                        wg.readers[c as usize] -= 1;
                    }
                }
            }
        }
    }

    /// Before an instruction other than `wgmma.mma_async` runs: it must not touch registers
    /// that a pending operation writes or reads; and it marks the registers it touches as
    /// accessed since the last `wgmma.fence`.
    pub(super) fn wgmma_register_checks(
        &self,
        w: &mut Warp,
        pc: u32,
        uses: &Uses,
    ) -> Result<(), Error> {
        if !w.wg.ops.is_empty() {
            let accesses = uses
                .reads
                .iter()
                .map(|&r| (r, "reads"))
                .chain(uses.writes.iter().map(|&r| (r, "writes")));
            for (r, does) in accesses {
                let seq = w.wg.acc[r as usize];
                if seq != 0 {
                    let line =
                        w.wg.ops
                            .iter()
                            .find(|o| o.seq == seq)
                            .map_or(0, |o| self.kernel.code[o.pc as usize].line);
                    return Err(self.warp_fault(w, pc, format!(
                        "{does} `{}` while the wgmma.mma_async at line {line} that writes it (an accumulator) is pending: its result exists only after a wgmma.wait_group that covers its group (PTX ISA: accessing the accumulators before that is undefined)",
                        self.reg_name(r)
                    )));
                }
                if w.wg.ain[r as usize] != 0 {
                    let line =
                        w.wg.ops
                            .iter()
                            .find(|o| o.a_regs.contains(&r))
                            .map_or(0, |o| self.kernel.code[o.pc as usize].line);
                    return Err(self.warp_fault(w, pc, format!(
                        "{does} `{}`, an A-fragment register of the wgmma.mma_async at line {line}, while that operation is pending: wgmma.wait_group first (PTX ISA: accessing the A registers of a pending wgmma.mma_async is undefined)",
                        self.reg_name(r)
                    )));
                }
            }
        }
        for &r in uses.reads.iter().chain(&uses.writes) {
            w.wg.touched[r as usize] = pc + 1;
        }
        Ok(())
    }

    /// A warp exiting must have no operation pending.
    pub(super) fn wgmma_check_exit(&self, w: &Warp, pc: u32) -> Result<(), Error> {
        if let Some(op) = w.wg.ops.last() {
            return Err(self.warp_fault(w, pc, format!(
                "exits with {} wgmma.mma_async operation(s) pending (the last at line {}): every operation must be completed by wgmma.wait_group (after wgmma.commit_group) before the thread exits",
                w.wg.ops.len(),
                self.kernel.code[op.pc as usize].line
            )));
        }
        Ok(())
    }

    /// A generic-proxy write (st, atom, cp.async landing) of `len` shared bytes at `off` by
    /// `lane` of `w`: it must not hit bytes a pending wgmma reads, and is remembered until its
    /// thread executes `fence.proxy.async`.
    pub(super) fn wgmma_generic_write(
        &mut self,
        w: &Warp,
        pc: u32,
        lane: usize,
        off: usize,
        len: usize,
    ) -> Result<(), Error> {
        let wg = self.wg.as_mut().expect("wgmma state");
        let conflict = (off / 16..=(off + len - 1) / 16).find(|&c| wg.readers[c] > 0);
        if let Some(c) = conflict {
            let line = wg
                .reads
                .iter()
                .find(|a| a.chunks.contains(&(c as u32)))
                .map_or(0, |a| self.kernel.code[a.pc as usize].line);
            return Err(self.fault(w, pc, lane, format!(
                "writes shared bytes {off:#x}..{:#x}, which the wgmma.mma_async at line {line} reads, while that operation is pending: wait for it with wgmma.wait_group (in every warp of its warpgroup) first",
                off + len
            )));
        }
        let thread = (w.index * 32 + lane as u32) as u64;
        let tag = ((thread + 1) << TAG_THREAD_SHIFT)
            | ((pc as u64 & TAG_PC_MASK) << TAG_PC_SHIFT)
            | (w.proxy_fences[lane] as u64 & TAG_COUNT_MASK);
        wg.writer[off..off + len].fill(tag);
        Ok(())
    }

    /// When no thread can run: performs the `wgmma.mma_async` of every warpgroup whose four
    /// warps wait at it. `Ok(true)` if any did (the block can run again).
    pub(super) fn wgmma_rendezvous(&mut self, warps: &mut [Warp]) -> Result<bool, Error> {
        let mut progressed = false;
        for g in 0..warps.len().div_ceil(4) {
            let range = 4 * g..(4 * g + 4).min(warps.len());
            let arrived: Vec<usize> = range
                .clone()
                .filter(|&i| warps[i].wg.arrived.is_some())
                .collect();
            let Some(&first) = arrived.first() else {
                continue;
            };
            let pc = warps[first].wg.arrived.expect("arrived");
            if let Some(&other) = arrived.iter().find(|&&i| warps[i].wg.arrived != Some(pc)) {
                let opc = warps[other].wg.arrived.expect("arrived");
                return Err(self.wg_error(pc, g as u32, format!(
                    "warp {first} waits at this wgmma.mma_async (line {}) and warp {other} at another one (line {}): it is `.aligned`, so all four warps of the warpgroup must execute the same instruction",
                    self.kernel.code[pc as usize].line,
                    self.kernel.code[opc as usize].line
                )));
            }
            if arrived.len() < 4 {
                let exited = range.clone().find(|&i| {
                    warps[i].wg.arrived.is_none()
                        && lanes(warps[i].exists).all(|l| warps[i].state[l] == LaneState::Exited)
                });
                if let Some(x) = exited {
                    return Err(self.wg_error(pc, g as u32, format!(
                        "warp {x} exited while warp {first} waits at this wgmma.mma_async: all 128 threads of the warpgroup must execute it"
                    )));
                }
                continue;
            }
            let fences: Vec<[u32; 32]> = warps.iter().map(|w| w.proxy_fences).collect();
            self.wgmma_execute(&mut warps[range], &fences, pc)?;
            progressed = true;
        }
        Ok(progressed)
    }

    /// A warpgroup that can never complete its rendezvous: the error, if any warp waits.
    pub(super) fn wgmma_stuck(
        &self,
        warps: &[Warp],
        barriers: Option<&[Arrivals]>,
    ) -> Option<Error> {
        let w = warps.iter().find(|w| w.wg.arrived.is_some())?;
        let pc = w.wg.arrived.expect("arrived");
        let g = w.index / 4;
        let missing: Vec<String> = (4 * g..(4 * g + 4).min(warps.len() as u32))
            .filter(|&i| warps[i as usize].wg.arrived.is_none())
            .map(|i| i.to_string())
            .collect();
        let why = match barriers.and_then(|b| b.first()) {
            Some(a) => format!(
                ", which wait at a barrier (line {}) that cannot open while this warpgroup waits here: deadlock",
                self.kernel.code[a.pc as usize].line
            ),
            None => " (they exited or never reach it)".to_string(),
        };
        Some(self.wg_error(pc, g, format!(
            "warp {} waits at this wgmma.mma_async for warps {} of its warpgroup{why}; all four warps must execute it (`.sync.aligned`)",
            w.index,
            missing.join(", ")
        )))
    }

    /// Reads K-major `rows` x 32 bytes of a descriptor's matrix: element bits row-major
    /// (`rows` x `k`), noting the 16-byte chunks read.
    #[allow(clippy::too_many_arguments)]
    fn wgmma_load(
        &self,
        pc: u32,
        group: u32,
        what: &str,
        raw: u64,
        rows: usize,
        ty: Ty,
        k: usize,
        chunks: &mut Vec<u32>,
    ) -> Result<Vec<u64>, Error> {
        let d = Desc::decode(raw);
        if d.base_offset != 0 {
            return Err(self.wg_error(pc, group, format!(
                "{what} descriptor {raw:#018x} has base offset {} (bits 49-51): ptxsim supports base offset 0 only, i.e. swizzle patterns that start at their natural alignment (1024/512/256 bytes for 128B/64B/32B), which is how the swizzle is applied here: to the absolute shared address",
                d.base_offset
            )));
        }
        let eb = (ty.bits() / 8) as usize;
        let per_chunk = 16 / eb;
        let mut out = vec![0u64; rows * k];
        // The descriptor's addresses are the warpgroup's CTA's.
        let base = self.shared_base(4 * group / self.cta_warps()) as u64;
        for r in 0..rows {
            for c in 0..2 {
                let rel = d.chunk_addr(r as u64, c as u64);
                let addr = base + rel;
                if rel + 16 > self.cluster.cta_shared as u64 {
                    return Err(self.wg_error(pc, group, format!(
                        "{what} descriptor {raw:#018x} ({}, start {:#x}, LBO {}, SBO {}) makes row {r}, K bytes {}..{} read shared bytes {addr:#x}..{:#x}, outside the block's {} bytes of shared memory",
                        swizzle_name(d.swizzle),
                        d.start,
                        d.lbo,
                        d.sbo,
                        16 * c,
                        16 * c + 16,
                        addr + 16,
                        self.cluster.cta_shared
                    )));
                }
                chunks.push((addr / 16) as u32);
                let bytes = &self.shared[addr as usize..addr as usize + 16];
                for e in 0..per_chunk {
                    let mut v = 0u64;
                    for b in 0..eb {
                        v |= (bytes[e * eb + b] as u64) << (8 * b);
                    }
                    out[r * k + c * per_chunk + e] = v;
                }
            }
        }
        Ok(out)
    }

    /// One value, the same in all 128 threads of the warpgroup.
    fn wg_uniform(
        &self,
        ws: &[Warp],
        pc: u32,
        group: u32,
        what: &str,
        value: impl Fn(&Warp, usize) -> u64,
    ) -> Result<u64, Error> {
        let v0 = value(&ws[0], 0);
        for w in ws {
            for l in 0..32 {
                let v = value(w, l);
                if v != v0 {
                    return Err(self.wg_error(pc, group, format!(
                        "{what} differs between threads of the warpgroup ({v0:#x} in warp {} lane 0, {v:#x} in warp {} lane {l}): it must be the same in all 128 threads",
                        ws[0].index, w.index
                    )));
                }
            }
        }
        Ok(v0)
    }

    /// Performs the `wgmma.mma_async` at `pc` for the four warps `ws` of one warpgroup.
    fn wgmma_execute(
        &mut self,
        ws: &mut [Warp],
        fences: &[[u32; 32]],
        pc: u32,
    ) -> Result<(), Error> {
        let kernel = self.kernel;
        let Op::Wgmma(m) = &kernel.code[pc as usize].op else {
            unreachable!("a warpgroup waits at a wgmma.mma_async");
        };
        let group = ws[0].index / 4;
        let a_regs = m.a_regs();
        let (n, k) = (m.n as usize, m.k as usize);
        // The rules of wgmma.fence, and the warpgroup agreeing on its groups.
        for w in ws.iter() {
            if !w.wg.fenced {
                return Err(self.wg_error(pc, group, format!(
                    "warp {} has not executed wgmma.fence before its first wgmma.mma_async (PTX ISA, wgmma.fence: required before the first wgmma.mma_async of a warpgroup)",
                    w.index
                )));
            }
            for (&r, role) in
                m.d.iter()
                    .map(|r| (r, "accumulator"))
                    .chain(a_regs.iter().map(|r| (r, "A register")))
            {
                let t = w.wg.touched[r as usize];
                if t != 0 {
                    let tpc = (t - 1) as usize;
                    return Err(self.wg_error(pc, group, format!(
                        "warp {} accessed `{}` (an {role} of this wgmma.mma_async) at line {} (`{}`) after its last wgmma.fence: the PTX ISA requires a wgmma.fence between other instructions' accesses to a register and a wgmma.mma_async that uses it",
                        w.index,
                        self.reg_name(r),
                        kernel.code[tpc].line,
                        kernel.texts[tpc]
                    )));
                }
            }
            if w.wg.committed != ws[0].wg.committed {
                return Err(self.wg_error(pc, group, format!(
                    "warps {} and {} have executed different numbers of wgmma.commit_group ({} and {}): the warpgroup's wgmma instructions are `.aligned`",
                    ws[0].index, w.index, ws[0].wg.committed, w.wg.committed
                )));
            }
            for &r in &a_regs {
                if w.wg.acc[r as usize] != 0 {
                    return Err(self.wg_error(pc, group, format!(
                        "A register `{}` is an accumulator of a pending wgmma.mma_async in warp {}: wgmma.wait_group first",
                        self.reg_name(r),
                        w.index
                    )));
                }
            }
            for &r in &m.d {
                if w.wg.ain[r as usize] != 0 {
                    return Err(self.wg_error(pc, group, format!(
                        "accumulator `{}` is an A register of a pending wgmma.mma_async in warp {}: wgmma.wait_group first",
                        self.reg_name(r),
                        w.index
                    )));
                }
                let seq = w.wg.acc[r as usize];
                if seq != 0 {
                    let prev = w.wg.ops.iter().find(|o| o.seq == seq).expect("pending op");
                    if (prev.n, prev.dtype) != (m.n, m.dtype) {
                        return Err(self.wg_error(pc, group, format!(
                            "accumulator `{}` is pending from the wgmma.mma_async at line {}, of another shape or type: only operations of the same shape may chain accumulators without wgmma.wait_group",
                            self.reg_name(r),
                            kernel.code[prev.pc as usize].line
                        )));
                    }
                }
            }
        }
        let scale_d = match m.scale_d {
            ScaleD::Imm(b) => b,
            ScaleD::Pred(p) => {
                self.wg_uniform(ws, pc, group, "scale-d", |w, l| Self::pred(w, p, l) as u64)? != 0
            }
        };
        let b_raw = self.wg_uniform(ws, pc, group, "b-desc", |w, l| Self::get(w, m.b_desc, l))?;
        let mut chunks = Vec::new();
        let a = match &m.a {
            WgmmaA::Desc(s) => {
                let raw = self.wg_uniform(ws, pc, group, "a-desc", |w, l| Self::get(w, *s, l))?;
                self.wgmma_load(
                    pc,
                    group,
                    "a-desc (A, 64 x K)",
                    raw,
                    64,
                    m.atype,
                    k,
                    &mut chunks,
                )?
            }
            WgmmaA::Regs(srcs) => {
                let layout = mma::wgmma_a_layout(m.atype);
                let (na, _, _) = layout.elements();
                let mut a = vec![0u64; 64 * k];
                for (wi, w) in ws.iter().enumerate() {
                    for l in 0..32 {
                        let regs: Vec<u64> = srcs.iter().map(|s| Self::get(w, *s, l)).collect();
                        for i in 0..na {
                            let (r, c) = layout.a_coord(l, i);
                            a[(16 * wi + r) * k + c] = mma::element_bits(&regs, m.atype, i);
                        }
                    }
                }
                a
            }
        };
        let b = self.wgmma_load(
            pc,
            group,
            "b-desc (B, N x K)",
            b_raw,
            n,
            m.btype,
            k,
            &mut chunks,
        )?;
        let per_reg = if m.dtype == Ty::F16 { 2 } else { 1 };
        let c = if scale_d {
            let mut c = vec![0u64; 64 * n];
            for (wi, w) in ws.iter().enumerate() {
                for (j, &r) in m.d.iter().enumerate() {
                    let seq = w.wg.acc[r as usize];
                    let pending = (seq != 0).then(|| {
                        let op = w.wg.ops.iter().find(|o| o.seq == seq).expect("pending op");
                        let i = op.d.iter().position(|&x| x == Some(r)).expect("owned");
                        &op.values[i * 32..i * 32 + 32]
                    });
                    if pending.is_none() && w.reg_written[r as usize] != FULL {
                        let lane = (!w.reg_written[r as usize]).trailing_zeros();
                        return Err(self.wg_error(pc, group, format!(
                            "scale-d is true, so D is read, but accumulator `{}` was never written in warp {} lane {lane}: registers start undefined",
                            self.reg_name(r),
                            w.index
                        )));
                    }
                    for l in 0..32 {
                        let v = pending.map_or(w.regs[r as usize * 32 + l], |p| p[l]);
                        for h in 0..per_reg {
                            let e = j * per_reg + h;
                            let bits = if per_reg == 2 {
                                (v >> (16 * h)) & 0xffff
                            } else {
                                v & 0xffff_ffff
                            };
                            let (row, col) = mma::wgmma_d_coord(wi, l, e);
                            c[row * n + col] = bits;
                        }
                    }
                }
            }
            Some(c)
        } else {
            None
        };
        let out = mma::wgmma_execute(&mma::WgmmaOperands {
            n,
            k,
            atype: m.atype,
            btype: m.btype,
            dtype: m.dtype,
            satfinite: m.satfinite,
            neg_a: m.neg_a,
            neg_b: m.neg_b,
            a: &a,
            b: &b,
            c: c.as_deref(),
        });
        // Shared memory: written by the generic proxy without fence.proxy.async, or racing.
        chunks.sort_unstable();
        chunks.dedup();
        for &ch in &chunks {
            let off = ch as usize * 16;
            if self.bulk.is_some() {
                self.bulk_async_read(ws, pc, off, 16)?;
            }
            for byte in off..off + 16 {
                let tag = self.wg.as_ref().expect("wgmma state").writer[byte];
                if tag == 0 {
                    continue;
                }
                let thread = ((tag >> TAG_THREAD_SHIFT) - 1) as usize;
                let wpc = ((tag >> TAG_PC_SHIFT) & TAG_PC_MASK) as usize;
                let count = tag & TAG_COUNT_MASK;
                if fences[thread / 32][thread % 32] as u64 & TAG_COUNT_MASK == count {
                    let (tx, ty, tz) = self.thread_coords(thread as u32);
                    return Err(self.wg_error(pc, group, format!(
                        "reads shared byte {byte:#x} through a matrix descriptor, but its last write, by thread ({tx}, {ty}, {tz}) (warp {}) at line {} (`{}`), is a generic-proxy write that no fence.proxy.async of that thread followed: wgmma reads through the async proxy, which needs fence.proxy.async after the write (and then a barrier) to see it",
                        thread / 32,
                        kernel.code[wpc].line,
                        kernel.texts[wpc]
                    )));
                }
                self.wg.as_mut().expect("wgmma state").writer[byte] = 0;
            }
            for w in ws.iter() {
                let access = Access {
                    epoch: self.epoch,
                    warp: w.index,
                    pc,
                    write: false,
                    strength: Strength::Weak,
                };
                let ctx = Context {
                    launch_start: self.launch_start,
                    block_start: self.block_start,
                    cross_block: false,
                };
                if let Err(conflict) = self.shared_shadow.access(off, 16, &access, &ctx) {
                    return Err(self.race_error(
                        w,
                        pc,
                        0,
                        &access,
                        conflict,
                        RaceSite::Shared(off),
                    ));
                }
            }
        }
        // Issue: the results are pending until wgmma.wait_group.
        let wg = self.wg.as_mut().expect("wgmma state");
        wg.next_seq += 1;
        let seq = wg.next_seq;
        for &ch in &chunks {
            wg.readers[ch as usize] += 1;
        }
        wg.reads.push(ActiveRead {
            seq,
            pc,
            chunks,
            remaining: ws.len() as u32,
        });
        for (wi, w) in ws.iter_mut().enumerate() {
            let mut values = vec![0u64; m.d.len() * 32];
            for j in 0..m.d.len() {
                for l in 0..32 {
                    let mut v = 0u64;
                    for h in 0..per_reg {
                        let (row, col) = mma::wgmma_d_coord(wi, l, j * per_reg + h);
                        v |= out[row * n + col] << (16 * h);
                    }
                    values[j * 32 + l] = v;
                }
            }
            for &r in &m.d {
                let prev = w.wg.acc[r as usize];
                if prev != 0 {
                    if let Some(op) = w.wg.ops.iter_mut().find(|o| o.seq == prev) {
                        for x in op.d.iter_mut().filter(|x| **x == Some(r)) {
                            *x = None;
                        }
                    }
                }
                w.wg.acc[r as usize] = seq;
            }
            for &r in &a_regs {
                w.wg.ain[r as usize] += 1;
            }
            w.wg.ops.push(WgPending {
                seq,
                group: w.wg.committed,
                pc,
                n: m.n,
                dtype: m.dtype,
                d: m.d.iter().map(|&r| Some(r)).collect(),
                values,
                a_regs: a_regs.clone(),
            });
            for l in lanes(w.exists) {
                w.state[l] = LaneState::Running;
                w.pc[l] = pc + 1;
            }
            w.running = w.exists;
            w.wg.arrived = None;
        }
        Ok(())
    }
}
