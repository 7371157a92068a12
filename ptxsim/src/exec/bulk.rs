//! Hopper's asynchronous copies: `mbarrier` objects in shared memory (arrival and transaction
//! counts per phase) and the bulk copies (`cp.async.bulk`, `cp.async.bulk.tensor`) that
//! complete on them through the async proxy.
//!
//! A bulk copy is performed when it issues (its source read, its bytes written to shared
//! memory) and its bytes counted against the barrier's current phase at once; but each byte
//! remembers the copy, and a generic access to it is an error until the accessing thread has
//! seen that phase complete (a `test_wait`/`try_wait` of it that returned true). So a kernel
//! that reads a tile before waiting, or overwrites one a copy is still filling, fails, whatever
//! the schedule; one that waits reads what the copy wrote.

use super::*;
use crate::tensor_map::TensorMap;

/// The tag of the bytes of a live mbarrier (low bits: its index).
const MBAR_TAG: u32 = 1 << 31;
/// The largest magnitude of an mbarrier's arrival and tx counts (PTX ISA: 2^20 - 1).
const COUNT_MAX: i64 = (1 << 20) - 1;
/// The top byte of the state ptxsim's `mbarrier.arrive` returns.
const STATE_MAGIC: u64 = 0xb5;

struct MBar {
    off: usize,
    expected: u32,
    pending: u32,
    tx: i64,
    /// Phases completed since init.
    phase: u64,
    /// Per thread of the block: phases it has seen complete (a wait that returned true).
    observed: Vec<u64>,
    init_warp: u32,
    init_epoch: u32,
    init_pc: u32,
    /// `barrier.cluster` phases completed before the init: another CTA may use the barrier
    /// only after one more (the init made visible to the cluster).
    init_cluster_phase: u64,
    live: bool,
}

struct CopyRec {
    bar: usize,
    /// The phase of `bar` whose completion makes the bytes visible.
    phase: u64,
    pc: u32,
}

/// Per block.
pub(super) struct BlockBulk {
    bars: Vec<MBar>,
    /// Per shared byte: 0, `MBAR_TAG | barrier`, or 1 + the bulk copy that last wrote it.
    tags: Vec<u32>,
    copies: Vec<CopyRec>,
    /// Bumped by every change of an mbarrier: a warp whose waits failed at one version cannot
    /// succeed before the next.
    pub(super) version: u64,
}

impl BlockBulk {
    pub(super) fn new(shared_bytes: usize) -> BlockBulk {
        BlockBulk {
            bars: Vec::new(),
            tags: vec![0; shared_bytes],
            copies: Vec::new(),
            version: 0,
        }
    }
}

impl Block<'_, '_> {
    fn bulk(&mut self) -> &mut BlockBulk {
        self.bulk.as_mut().expect("bulk state")
    }

    /// The shared offset of an mbarrier operand, 8-byte aligned and in bounds.
    fn mbar_offset(
        &self,
        w: &Warp,
        pc: u32,
        l: usize,
        addr: Addr,
        generic: bool,
    ) -> Result<usize, Error> {
        let mut a = self.address(w, addr, l);
        if generic {
            if !(SHARED_WINDOW..SHARED_WINDOW + WINDOW_BYTES).contains(&a) {
                return Err(self.fault(
                    w,
                    pc,
                    l,
                    format!("mbarrier address {a:#x} is not in shared memory"),
                ));
            }
            a -= SHARED_WINDOW;
        }
        if !a.is_multiple_of(8) {
            return Err(self.fault(
                w,
                pc,
                l,
                format!("mbarrier at shared offset {a:#x} is not 8-byte aligned"),
            ));
        }
        match self.resolve(w, pc, l, Space::Shared, a, 8)? {
            Loc::Shared(o) => Ok(o),
            _ => unreachable!("shared resolves to shared"),
        }
    }

    /// The physical offset of an mbarrier named by a shared::cluster address (from `mapa`, or
    /// a shared::cta one: this CTA's), 8-byte aligned and in bounds, and its CTA's rank.
    fn mbar_cluster_offset(
        &self,
        w: &Warp,
        pc: u32,
        l: usize,
        addr: Addr,
    ) -> Result<(usize, u32), Error> {
        let a = self.address(w, addr, l);
        let (rank, off) = if a >> CLUSTER_RANK_SHIFT != 0 {
            (
                (a >> CLUSTER_RANK_SHIFT) as u32 - 1,
                a & ((1 << CLUSTER_RANK_SHIFT) - 1),
            )
        } else {
            (w.rank, a)
        };
        if rank >= self.cluster.ranks {
            return Err(self.fault(
                w,
                pc,
                l,
                format!(
                "shared::cluster address {a:#x} names CTA rank {rank}, but the cluster has {} CTAs",
                self.cluster.ranks
            ),
            ));
        }
        if !off.is_multiple_of(8) || off + 8 > self.cluster.cta_shared as u64 {
            return Err(self.fault(w, pc, l, format!(
                "mbarrier at shared::cluster address {a:#x}: offset {off:#x} is not 8-byte aligned inside the CTA's {} bytes of shared memory",
                self.cluster.cta_shared
            )));
        }
        Ok((self.shared_base(rank) + off as usize, rank))
    }

    /// The index of the live mbarrier whose object starts at shared offset `off`, if any.
    fn mbar_at(&self, off: usize) -> Option<usize> {
        let b = self.bulk.as_ref().expect("bulk state");
        let t = b.tags[off];
        let i = (t & !MBAR_TAG) as usize;
        (t & MBAR_TAG != 0 && b.bars[i].off == off && b.bars[i].live).then_some(i)
    }

    /// The live barrier at physical offset `off` (of CTA rank `rank`), visible to this warp.
    fn mbar_live_in(
        &self,
        w: &Warp,
        pc: u32,
        l: usize,
        off: usize,
        rank: u32,
    ) -> Result<usize, Error> {
        if rank == w.rank {
            return self.mbar_live(w, pc, l, off);
        }
        if self.exited[rank as usize] == self.threads() {
            return Err(self.fault(w, pc, l, format!(
                "the mbarrier at offset {:#x} of CTA rank {rank} (block {:?}) is gone: every thread of that CTA has exited, and its shared memory with them (end the kernel with barrier.cluster.arrive/wait so no CTA exits while others still use its shared memory)",
                off - self.shared_base(rank),
                self.cluster.ctaid(rank)
            )));
        }
        let Some(i) = self.mbar_at(off) else {
            return Err(self.fault(w, pc, l, format!(
                "the mbarrier at offset {:#x} of CTA rank {rank} is used before its mbarrier.init (or after mbarrier.inval)",
                off - self.shared_base(rank)
            )));
        };
        let bar = &self.bulk.as_ref().expect("bulk state").bars[i];
        if bar.init_cluster_phase >= self.cluster_phase {
            return Err(self.fault(w, pc, l, format!(
                "the mbarrier at offset {:#x} of CTA rank {rank} was initialised at line {} with no barrier.cluster phase completed since: another CTA may use it only once its init is visible to the cluster (mbarrier.init; fence.mbarrier_init.release.cluster; barrier.cluster.arrive.release; barrier.cluster.wait.acquire)",
                off - self.shared_base(rank),
                self.kernel.code[bar.init_pc as usize].line
            )));
        }
        Ok(i)
    }

    /// The live barrier at `off`, visible to this warp.
    fn mbar_live(&self, w: &Warp, pc: u32, l: usize, off: usize) -> Result<usize, Error> {
        let Some(i) = self.mbar_at(off) else {
            return Err(self.fault(w, pc, l, format!(
                "mbarrier at shared offset {off:#x} used before mbarrier.init (or after mbarrier.inval)"
            )));
        };
        let bar = &self.bulk.as_ref().expect("bulk state").bars[i];
        if bar.init_warp != w.index && bar.init_epoch == self.epoch {
            return Err(self.fault(w, pc, l, format!(
                "mbarrier at shared offset {off:#x} was initialised by warp {} at line {} with no barrier (bar.sync) since: other threads may use it only once its init is visible (mbarrier.init; fence.mbarrier_init.release.cluster; bar.sync)",
                bar.init_warp, self.kernel.code[bar.init_pc as usize].line
            )));
        }
        Ok(i)
    }

    fn mbar_desc(&self, i: usize) -> String {
        let bar = &self.bulk.as_ref().expect("bulk state").bars[i];
        format!(
            "mbarrier at shared offset {:#x}: phase {} (parity {}), {} of {} arrivals pending, tx-count {}",
            bar.off,
            bar.phase,
            bar.phase & 1,
            bar.pending,
            bar.expected,
            bar.tx
        )
    }

    fn tx_check(&self, w: &Warp, pc: u32, l: usize, i: usize) -> Result<(), Error> {
        let bar = &self.bulk.as_ref().expect("bulk state").bars[i];
        if bar.tx.abs() > COUNT_MAX {
            return Err(self.fault(
                w,
                pc,
                l,
                format!(
                    "tx-count out of the range ±(2^20-1) ({})",
                    self.mbar_desc(i)
                ),
            ));
        }
        if bar.pending == 0 && bar.tx < 0 {
            return Err(self.fault(w, pc, l, format!(
                "tx-count underflow: the bulk copies completed {} bytes more than mbarrier.expect_tx announced for this phase, whose arrivals are all in ({})",
                -bar.tx, self.mbar_desc(i)
            )));
        }
        Ok(())
    }

    /// Completes the phase if its arrivals and transactions are all in.
    fn mbar_progress(&mut self, i: usize) {
        let b = self.bulk();
        b.version += 1;
        let bar = &mut b.bars[i];
        if bar.pending == 0 && bar.tx == 0 {
            bar.phase += 1;
            bar.pending = bar.expected;
        }
    }

    fn complete_tx(
        &mut self,
        w: &Warp,
        pc: u32,
        l: usize,
        i: usize,
        bytes: u64,
    ) -> Result<(), Error> {
        self.bulk().bars[i].tx -= bytes as i64;
        self.tx_check(w, pc, l, i)?;
        self.mbar_progress(i);
        Ok(())
    }

    /// A generic read or write of `len` shared bytes at `off` by `lane`: not of a live
    /// mbarrier, and not of bytes of a bulk copy this thread has not seen complete.
    pub(super) fn bulk_generic_access(
        &mut self,
        w: &Warp,
        pc: u32,
        lane: usize,
        off: usize,
        len: usize,
        write: bool,
    ) -> Result<(), Error> {
        let b = self.bulk.as_ref().expect("bulk state");
        if b.tags[off..off + len].iter().all(|&t| t == 0) {
            return Ok(());
        }
        let thread = (w.index * 32 + lane as u32) as usize;
        for byte in off..off + len {
            let t = b.tags[byte];
            if t == 0 {
                continue;
            }
            let what = if write { "write to" } else { "read of" };
            if t & MBAR_TAG != 0 {
                let bar = &b.bars[(t & !MBAR_TAG) as usize];
                return Err(self.fault(w, pc, lane, format!(
                    "generic {what} shared byte {byte:#x} of a live mbarrier object (initialised at line {}): only mbarrier instructions may access it until mbarrier.inval",
                    self.kernel.code[bar.init_pc as usize].line
                )));
            }
            let c = &b.copies[(t - 1) as usize];
            let bar = &b.bars[c.bar];
            if bar.observed[thread] > c.phase {
                continue;
            }
            let (line, text) = (
                self.kernel.code[c.pc as usize].line,
                &self.kernel.texts[c.pc as usize],
            );
            let state = if bar.phase > c.phase {
                "has completed, but this thread has not seen it complete (no mbarrier.try_wait/test_wait of that phase returned true in this thread)"
            } else {
                "has not completed"
            };
            let head = if write {
                "write to shared bytes a bulk copy is in flight to"
            } else {
                "read of shared bytes a bulk copy is still writing"
            };
            return Err(self.fault(w, pc, lane, format!(
                "{head}: byte {byte:#x} comes from the bulk copy at line {line} (`{text}`), which completes phase {} of the mbarrier at shared offset {:#x}; that phase {state}",
                c.phase, bar.off
            )));
        }
        if write {
            self.bulk().tags[off..off + len].fill(0);
        }
        Ok(())
    }

    /// wgmma (the async proxy) reads 16 bytes at `off`: bytes of bulk copies must have been
    /// seen complete by every thread of the warpgroup.
    pub(super) fn bulk_async_read(
        &self,
        ws: &[Warp],
        pc: u32,
        off: usize,
        len: usize,
    ) -> Result<(), Error> {
        let b = self.bulk.as_ref().expect("bulk state");
        for byte in off..off + len {
            let t = b.tags[byte];
            if t == 0 {
                continue;
            }
            if t & MBAR_TAG != 0 {
                return Err(self.warp_fault(
                    &ws[0],
                    pc,
                    format!("wgmma reads shared byte {byte:#x}, part of a live mbarrier object"),
                ));
            }
            let c = &b.copies[(t - 1) as usize];
            let bar = &b.bars[c.bar];
            for w in ws {
                if let Some(l) =
                    lanes(w.exists).find(|&l| bar.observed[(w.index * 32) as usize + l] <= c.phase)
                {
                    return Err(self.fault(w, pc, l, format!(
                        "wgmma reads shared byte {byte:#x}, which the bulk copy at line {} writes; it completes phase {} of the mbarrier at shared offset {:#x}, which this thread has not seen complete (wait on the barrier in every thread of the warpgroup first)",
                        self.kernel.code[c.pc as usize].line, c.phase, bar.off
                    )));
                }
            }
        }
        Ok(())
    }

    /// Writes one bulk copy's bytes at shared `off` (through the async proxy).
    fn bulk_land(
        &mut self,
        w: &Warp,
        pc: u32,
        l: usize,
        off: usize,
        data: &[u8],
        copy: usize,
    ) -> Result<(), Error> {
        let b = self.bulk.as_ref().expect("bulk state");
        for byte in off..off + data.len() {
            let t = b.tags[byte];
            if t == 0 {
                continue;
            }
            if t & MBAR_TAG != 0 {
                return Err(self.fault(
                    w,
                    pc,
                    l,
                    format!(
                        "the bulk copy overwrites shared byte {byte:#x} of a live mbarrier object"
                    ),
                ));
            }
            let c = &b.copies[(t - 1) as usize];
            if b.bars[c.bar].phase <= c.phase {
                return Err(self.fault(w, pc, l, format!(
                    "the bulk copy writes shared byte {byte:#x}, which the bulk copy at line {} is still writing (its mbarrier phase has not completed)",
                    self.kernel.code[c.pc as usize].line
                )));
            }
        }
        if let Some(wg) = &self.wg {
            if let Some(c) = (off / 16..=(off + data.len() - 1) / 16).find(|&c| wg.chunk_read(c)) {
                return Err(self.fault(w, pc, l, format!(
                    "the bulk copy writes shared bytes {:#x}.., which a pending wgmma.mma_async reads (wait for it with wgmma.wait_group first)",
                    c * 16
                )));
            }
        }
        if let Some(wg) = self.wg.as_mut() {
            wg.async_write(off, data.len());
        }
        self.shared[off..off + data.len()].copy_from_slice(data);
        self.bulk().tags[off..off + data.len()].fill(copy as u32 + 1);
        Ok(())
    }

    pub(super) fn bulk_step(&mut self, w: &mut Warp, pc: u32, exec: u32) -> Result<Flow, Error> {
        let kernel = self.kernel;
        let op = &kernel.code[pc as usize].op;
        let threads = self.thread_slots();
        let cluster_phase = self.cluster_phase;
        match op {
            Op::MbarInit {
                addr,
                generic,
                count,
            } => {
                for l in lanes(exec) {
                    let off = self.mbar_offset(w, pc, l, *addr, *generic)?;
                    let n = Self::get(w, *count, l) & 0xffff_ffff;
                    if n == 0 || n as i64 > COUNT_MAX {
                        return Err(self.fault(
                            w,
                            pc,
                            l,
                            format!("mbarrier.init count {n}: 1..=2^20-1"),
                        ));
                    }
                    let b = self.bulk.as_ref().expect("bulk state");
                    for byte in off..off + 8 {
                        let t = b.tags[byte];
                        if t & MBAR_TAG != 0 {
                            let bar = &b.bars[(t & !MBAR_TAG) as usize];
                            return Err(self.fault(w, pc, l, format!(
                                "mbarrier.init of a barrier in use: shared offset {off:#x} holds the mbarrier initialised at line {} (mbarrier.inval it first, once nothing uses it)",
                                self.kernel.code[bar.init_pc as usize].line
                            )));
                        }
                    }
                    self.bulk_generic_access(w, pc, l, off, 8, true)?;
                    let epoch = self.epoch;
                    let b = self.bulk();
                    let i = b.bars.len();
                    b.bars.push(MBar {
                        off,
                        expected: n as u32,
                        pending: n as u32,
                        tx: 0,
                        phase: 0,
                        observed: vec![0; threads],
                        init_warp: w.index,
                        init_epoch: epoch,
                        init_pc: pc,
                        init_cluster_phase: cluster_phase,
                        live: true,
                    });
                    b.tags[off..off + 8].fill(MBAR_TAG | i as u32);
                    b.version += 1;
                }
            }
            Op::MbarArrive {
                d,
                addr,
                generic,
                remote,
                count,
                expect_tx,
            } => {
                for l in lanes(exec) {
                    let i = if *remote {
                        let (off, rank) = self.mbar_cluster_offset(w, pc, l, *addr)?;
                        self.mbar_live_in(w, pc, l, off, rank)?
                    } else {
                        let off = self.mbar_offset(w, pc, l, *addr, *generic)?;
                        self.mbar_live(w, pc, l, off)?
                    };
                    let off = self.bulk.as_ref().expect("bulk state").bars[i].off;
                    let n = count.map_or(1, |c| Self::get(w, c, l) & 0xffff_ffff);
                    if n == 0 || n as i64 > COUNT_MAX {
                        return Err(self.fault(
                            w,
                            pc,
                            l,
                            format!("mbarrier.arrive count {n}: 1..=2^20-1"),
                        ));
                    }
                    if let Some(t) = expect_tx {
                        let t = Self::get(w, *t, l) & 0xffff_ffff;
                        self.bulk().bars[i].tx += t as i64;
                    }
                    let bar = &self.bulk.as_ref().expect("bulk state").bars[i];
                    if (bar.pending as u64) < n {
                        return Err(self.fault(w, pc, l, format!(
                            "over-arrival: {n} arrival(s) on a barrier with {} pending for this phase ({}): the phase waits only for its transactions, and an arrival more is undefined",
                            bar.pending, self.mbar_desc(i)
                        )));
                    }
                    let state = (STATE_MAGIC << 56)
                        | ((off as u64 & 0xff_ffff) << 32)
                        | (bar.phase & 0xffff_ffff);
                    self.bulk().bars[i].pending -= n as u32;
                    self.tx_check(w, pc, l, i)?;
                    self.mbar_progress(i);
                    if let Some(d) = d {
                        Self::set(w, *d, l, state);
                    }
                }
            }
            Op::MbarExpectTx { addr, generic, tx } => {
                for l in lanes(exec) {
                    let off = self.mbar_offset(w, pc, l, *addr, *generic)?;
                    let i = self.mbar_live(w, pc, l, off)?;
                    let t = Self::get(w, *tx, l) & 0xffff_ffff;
                    self.bulk().bars[i].tx += t as i64;
                    self.tx_check(w, pc, l, i)?;
                    self.mbar_progress(i);
                }
            }
            Op::MbarWait {
                p,
                addr,
                generic,
                parity,
                operand,
                ..
            } => {
                let version = self.bulk.as_ref().expect("bulk state").version;
                for l in lanes(exec) {
                    let off = self.mbar_offset(w, pc, l, *addr, *generic)?;
                    let i = self.mbar_live(w, pc, l, off)?;
                    let v = Self::get(w, *operand, l);
                    let bar = &self.bulk.as_ref().expect("bulk state").bars[i];
                    let seen = if *parity {
                        ((bar.phase & 1) != (v & 1)).then_some(bar.phase)
                    } else {
                        if v >> 56 != STATE_MAGIC || (v >> 32) & 0xff_ffff != off as u64 & 0xff_ffff
                        {
                            return Err(self.fault(w, pc, l, format!(
                                "state {v:#x} is not one that mbarrier.arrive on the mbarrier at shared offset {off:#x} returned"
                            )));
                        }
                        let behind = (bar.phase as u32).wrapping_sub(v as u32) as u64;
                        (behind != 0).then(|| bar.phase - behind + 1)
                    };
                    let thread = (w.index * 32) as usize + l;
                    let bit = 1u32 << l;
                    match seen {
                        Some(s) => {
                            let o = &mut self.bulk().bars[i].observed[thread];
                            *o = (*o).max(s);
                            w.spin &= !bit;
                            w.stalled &= !bit;
                        }
                        None => {
                            if w.spin & bit != 0 && w.spin_ver[l] == version {
                                w.stalled |= bit;
                            } else {
                                w.stalled &= !bit;
                            }
                            w.spin |= bit;
                            w.spin_ver[l] = version;
                            w.spin_at = (pc, i);
                        }
                    }
                    Self::set_pred(w, *p, l, seen.is_some());
                }
                if w.running & !w.stalled == 0 {
                    w.stuck_ver = version;
                }
                if w.running & !w.spin_current(version) == 0 {
                    return Ok(Flow::Yield);
                }
            }
            Op::MbarInval { addr, generic } => {
                for l in lanes(exec) {
                    let off = self.mbar_offset(w, pc, l, *addr, *generic)?;
                    let i = self.mbar_live(w, pc, l, off)?;
                    if self.bulk().bars[i].tx != 0 {
                        return Err(self.fault(
                            w,
                            pc,
                            l,
                            format!(
                                "mbarrier.inval of a barrier with transactions outstanding ({})",
                                self.mbar_desc(i)
                            ),
                        ));
                    }
                    let b = self.bulk();
                    b.bars[i].live = false;
                    b.tags[off..off + 8].fill(0);
                    b.version += 1;
                }
            }
            Op::BulkCopy {
                dst,
                src,
                size,
                mbar,
            } => {
                for l in lanes(exec) {
                    let n = Self::get(w, *size, l) & 0xffff_ffff;
                    let d = self.address(w, *dst, l);
                    let s = self.address(w, *src, l);
                    if n == 0
                        || !n.is_multiple_of(16)
                        || !d.is_multiple_of(16)
                        || !s.is_multiple_of(16)
                    {
                        return Err(self.fault(w, pc, l, format!(
                            "cp.async.bulk of {n} bytes from {s:#x} to shared offset {d:#x}: the size must be a non-zero multiple of 16 and both addresses 16-byte aligned"
                        )));
                    }
                    let Loc::Shared(doff) = self.resolve(w, pc, l, Space::Shared, d, n as usize)?
                    else {
                        unreachable!("shared resolves to shared")
                    };
                    let sloc = self.resolve(w, pc, l, Space::Global, s, n as usize)?;
                    let moff = self.mbar_offset(w, pc, l, *mbar, false)?;
                    let i = self.mbar_live(w, pc, l, moff)?;
                    self.check_race(w, pc, l, &sloc, n as usize, false, Strength::Weak)?;
                    let mut data = vec![0u8; n as usize];
                    self.copy_out(&sloc, &mut data);
                    self.bulk_issue(w, pc, l, i, &[(doff, data)], n)?;
                }
            }
            Op::BulkTensor {
                dst,
                tmap,
                coords,
                mbar,
                multicast,
            } => {
                for l in lanes(exec) {
                    let a = self.address(w, *tmap, l);
                    if !a.is_multiple_of(64) {
                        return Err(self.fault(
                            w,
                            pc,
                            l,
                            format!("tensor map address {a:#x} is not 64-byte aligned"),
                        ));
                    }
                    let loc = self.resolve(w, pc, l, Space::Generic, a, 128)?;
                    if !matches!(loc, Loc::Param(_) | Loc::Global { .. }) {
                        return Err(self.fault(
                            w,
                            pc,
                            l,
                            format!(
                                "tensor map address {a:#x} is not in the .param or .global space"
                            ),
                        ));
                    }
                    let mut raw = [0u8; 128];
                    self.copy_out(&loc, &mut raw);
                    let map = TensorMap::decode(&raw)
                        .map_err(|e| self.fault(w, pc, l, format!("bad tensor map: {e}")))?;
                    let d = self.address(w, *dst, l);
                    if !d.is_multiple_of(map.dst_align()) {
                        return Err(self.fault(w, pc, l, format!(
                            "cp.async.bulk.tensor to shared offset {d:#x}: with swizzle {:?} the destination must be {}-byte aligned",
                            map.swizzle, map.dst_align()
                        )));
                    }
                    let total = map.box_bytes();
                    let Loc::Shared(doff) =
                        self.resolve(w, pc, l, Space::Shared, d, total as usize)?
                    else {
                        unreachable!("shared resolves to shared")
                    };
                    let moff = self.mbar_offset(w, pc, l, *mbar, false)?;
                    self.mbar_live(w, pc, l, moff)?;
                    // The CTAs the box lands in: this one, or those of the multicast mask.
                    let own = self.shared_base(w.rank);
                    let targets: Vec<u32> = match multicast {
                        None => vec![w.rank],
                        Some(m) => {
                            let mask = Self::get(w, *m, l) as u16 as u32;
                            if mask == 0 || mask >> self.cluster.ranks != 0 {
                                return Err(self.fault(w, pc, l, format!(
                                    "multicast ctaMask {mask:#06x} names no CTA or CTAs beyond the cluster's {}",
                                    self.cluster.ranks
                                )));
                            }
                            (0..self.cluster.ranks)
                                .filter(|r| mask >> r & 1 == 1)
                                .collect()
                        }
                    };
                    let c0 = Self::get(w, coords[0], l) as u32 as i32 as i64;
                    let c1 = Self::get(w, coords[1], l) as u32 as i32 as i64;
                    let eb = map.elem_bytes as usize;
                    let (bx, by) = (map.box_dims[0] as i64, map.box_dims[1] as i64);
                    let row_bytes = bx as usize * eb;
                    let mut linear = vec![0u8; total as usize];
                    for r in 0..by {
                        let y = c1 + r;
                        if y < 0 || y as u64 >= map.dims[1] {
                            continue;
                        }
                        let x_lo = c0.max(0);
                        let x_hi = (c0 + bx).min(map.dims[0] as i64);
                        if x_lo >= x_hi {
                            continue;
                        }
                        let g =
                            map.base + y as u64 * map.strides_bytes[0] + x_lo as u64 * eb as u64;
                        let len = (x_hi - x_lo) as usize * eb;
                        let Some((alloc, goff)) = self.mem.locate(g, len as u64) else {
                            return Err(self.fault(w, pc, l, format!(
                                "the tensor map's row {y} ({len} bytes at {g:#x}) is outside global memory: {}",
                                self.mem.describe(g, len as u64)
                            )));
                        };
                        let gloc = Loc::Global { alloc, off: goff };
                        self.check_race(w, pc, l, &gloc, len, false, Strength::Weak)?;
                        let at = r as usize * row_bytes + (x_lo - c0) as usize * eb;
                        self.copy_out(&gloc, &mut linear[at..at + len]);
                    }
                    for r in targets {
                        // The same offsets in CTA `r`: its box and its barrier.
                        let base = self.shared_base(r);
                        let i = self.mbar_live_in(w, pc, l, base + moff - own, r)?;
                        // 16-byte chunks to their swizzled shared addresses.
                        let chunks: Vec<(usize, Vec<u8>)> = (0..total as usize / 16)
                            .map(|c| {
                                let at = (base + doff - own + 16 * c) as u64;
                                (
                                    map.swizzle.apply(at) as usize,
                                    linear[16 * c..16 * c + 16].to_vec(),
                                )
                            })
                            .collect();
                        self.bulk_issue(w, pc, l, i, &chunks, total)?;
                    }
                }
            }
            _ => unreachable!("bulk_step on another instruction"),
        }
        Ok(Flow::Next)
    }

    /// Lands one bulk copy's pieces and counts its bytes against barrier `i`'s phase.
    fn bulk_issue(
        &mut self,
        w: &Warp,
        pc: u32,
        l: usize,
        i: usize,
        pieces: &[(usize, Vec<u8>)],
        bytes: u64,
    ) -> Result<(), Error> {
        let b = self.bulk();
        let copy = b.copies.len();
        let phase = b.bars[i].phase;
        b.copies.push(CopyRec { bar: i, phase, pc });
        for (off, data) in pieces {
            self.bulk_land(w, pc, l, *off, data, copy)?;
        }
        self.complete_tx(w, pc, l, i, bytes)
    }

    /// Whether the scheduler may run `w`: it has running lanes that are not all stalled on
    /// mbarrier waits that failed twice with no mbarrier change since.
    pub(super) fn runnable(&self, w: &Warp) -> bool {
        w.running != 0
            && !(w.running & !w.stalled == 0
                && self.bulk.as_ref().is_some_and(|b| b.version == w.stuck_ver))
    }

    /// When no warp can run: a warp spinning on an mbarrier wait is a deadlock.
    pub(super) fn spin_deadlock(&self, warps: &[Warp]) -> Option<Error> {
        let w = warps.iter().find(|w| w.running != 0)?;
        let (pc, i) = w.spin_at;
        Some(self.warp_fault(w, pc, format!(
            "deadlock: lanes {:#010x} spin on an mbarrier wait that can never succeed, and no other thread can run ({})",
            w.running,
            self.mbar_desc(i)
        )))
    }
}
