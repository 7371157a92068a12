//! Data-race detection, for shared and for global memory: every access is checked against the
//! last write and the last read(s) of the same bytes, and two conflicting accesses (at least one
//! a write) that nothing orders are an error naming both instructions.
//!
//! What orders two accesses, in the PTX memory model as ptxsim runs it:
//! - the same warp (ptxsim runs a warp's lanes in lockstep; lanes of one warp that store to the
//!   same bytes in one instruction are caught by the executor, not here);
//! - the same block and a barrier in between: every barrier that opens starts a new *epoch*
//!   for the whole block (a named barrier with a thread count orders only the warps that took
//!   it on the hardware; ptxsim lets it order all of them, so it can miss a race there);
//! - nothing else within a launch: different blocks are never ordered by a barrier, and
//!   ptxsim does not model release/acquire synchronisation through fences and flags.
//!
//! Unordered conflicting accesses are still not a data race when both are *morally strong*
//! (PTX ISA, "Memory Consistency Model"): both atomic or `.relaxed`/`.acquire`/`.release`/
//! `.volatile`, with scopes that include both threads (`.cta` only within one block). So atomics
//! never race with atomics, but a plain load or store racing with an atomic is reported.
//!
//! Epochs are numbered across the whole launch (each block starts a fresh one), so an epoch
//! older than the running block's first belongs to a block that already ran: unordered by
//! definition for global memory, irrelevant for shared memory (another block's copy).
//!
//! The shadow keeps one write record and one read record per byte (shared) or per 4-byte word
//! (global; a word touched by a narrower access splits into four byte records). One read record
//! per location means that in rare mixes of strong and weak readers a race can go unreported;
//! a reported race is always real.
//!
//! This module only remembers and judges accesses; it never touches memory contents.

/// How strong an access is in the PTX memory model, and at what scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Strength {
    /// Plain (`.weak`) loads and stores, `ld.global.nc`, `cp.async`.
    Weak = 0,
    /// Strong at `.cta` (or `.cluster`: ptxsim launches clusters of one block) scope.
    Cta = 1,
    /// Strong at `.gpu` or `.sys` scope: atomics by default, `.volatile`.
    Gpu = 2,
}

impl Strength {
    fn from_bits(b: u32) -> Strength {
        match b {
            0 => Strength::Weak,
            1 => Strength::Cta,
            _ => Strength::Gpu,
        }
    }
}

/// Highest pc a record can hold (24 bits); kernels are far smaller.
pub(crate) const MAX_PC: u32 = (1 << 24) - 1;
const WARP_SHIFT: u32 = 24;
const MANY_BIT: u32 = 1 << 29;
const STRENGTH_SHIFT: u32 = 30;
/// `write.epoch` of a global word whose bytes are tracked one by one.
const SPLIT: u32 = u32::MAX;

/// One remembered access: its epoch (0: none) and, packed, the instruction, the warp (or
/// "several warps", for reads), and the weakest strength among them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Record {
    epoch: u32,
    packed: u32,
}

impl Record {
    fn new(a: &Access) -> Record {
        Record {
            epoch: a.epoch,
            packed: a.pc | a.warp << WARP_SHIFT | (a.strength as u32) << STRENGTH_SHIFT,
        }
    }

    pub(crate) fn epoch(self) -> u32 {
        self.epoch
    }

    pub(crate) fn pc(self) -> u32 {
        self.packed & MAX_PC
    }

    /// The warp, or `None` for reads by several warps.
    pub(crate) fn warp(self) -> Option<u32> {
        (self.packed & MANY_BIT == 0).then_some(self.packed >> WARP_SHIFT & 31)
    }

    /// Atomic, or `.relaxed`/`.acquire`/`.release`/`.volatile`.
    pub(crate) fn strong(self) -> bool {
        self.strength() != Strength::Weak
    }

    fn strength(self) -> Strength {
        Strength::from_bits(self.packed >> STRENGTH_SHIFT)
    }

    fn with_strength(self, s: Strength) -> Record {
        Record {
            epoch: self.epoch,
            packed: self.packed & !(3 << STRENGTH_SHIFT) | (s as u32) << STRENGTH_SHIFT,
        }
    }
}

/// The shadow of one location: its last write and the read(s) that a later write must not race.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Entry {
    write: Record,
    read: Record,
}

impl Entry {
    /// Records for an allocation of `bytes` bytes: one per 4-byte word, all empty.
    pub(crate) fn fresh_words(bytes: usize) -> Box<[Entry]> {
        vec![Entry::default(); bytes.div_ceil(4)].into_boxed_slice()
    }
}

/// The access being checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Access {
    pub epoch: u32,
    pub warp: u32,
    pub pc: u32,
    pub write: bool,
    pub strength: Strength,
}

/// Where the launch stands: its first epoch and the first epoch of the running block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    /// Records older than this are from an earlier launch, which the launch boundary orders:
    /// they count as nothing.
    pub launch_start: u32,
    pub block_start: u32,
    /// Global memory: accesses by blocks that already ran are unordered with this block's.
    /// Shared memory: they were to another block's copy, and do not count.
    pub cross_block: bool,
}

/// A detected race: the earlier access, and whether it wrote.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conflict {
    pub other: Record,
    pub other_wrote: bool,
    /// Offset of the conflicting byte within the access.
    pub byte: usize,
}

#[inline]
fn unordered(old: Record, a: &Access, ctx: &Context) -> bool {
    if old.epoch < ctx.block_start {
        return ctx.cross_block;
    }
    old.epoch == a.epoch && old.warp() != Some(a.warp)
}

#[inline]
fn morally_strong(old: Record, a: &Access, ctx: &Context) -> bool {
    let (s, t) = (old.strength(), a.strength);
    let same_block = old.epoch >= ctx.block_start;
    s != Strength::Weak
        && t != Strength::Weak
        && (same_block || (s == Strength::Gpu && t == Strength::Gpu))
}

/// Checks `a` against one location and records it; `Err` carries the earlier access it races.
#[inline(always)]
fn check(e: &mut Entry, a: &Access, ctx: &Context) -> Result<(), (Record, bool)> {
    let live = |r: Record| r.epoch >= ctx.launch_start;
    let w = if live(e.write) {
        e.write
    } else {
        Record::default()
    };
    if w.epoch != 0 && unordered(w, a, ctx) && !morally_strong(w, a, ctx) {
        return Err((w, true));
    }
    let r = if live(e.read) {
        e.read
    } else {
        Record::default()
    };
    if a.write && r.epoch != 0 && unordered(r, a, ctx) && !morally_strong(r, a, ctx) {
        return Err((r, false));
    }
    if a.write {
        // A warp's earlier write in this same epoch is as unordered with other warps as this
        // one: the record keeps the weaker of the two (a plain store then an atomic is weak).
        let same = w.epoch == a.epoch && w.warp() == Some(a.warp);
        let s = if same {
            w.strength().min(a.strength)
        } else {
            a.strength
        };
        e.write = Record::new(a).with_strength(s);
        return Ok(());
    }
    e.read = if r.epoch == 0 || (r.epoch >= ctx.block_start && r.epoch < a.epoch) {
        // Nothing yet, or only reads this block has ordered before now.
        Record::new(a)
    } else if r.epoch < ctx.block_start {
        if !ctx.cross_block || a.strength < r.strength() {
            Record::new(a)
        } else {
            // A read by an earlier block races any later write here as much as this one
            // would: keep it.
            r
        }
    } else if r.warp() == Some(a.warp) {
        r.with_strength(r.strength().min(a.strength))
    } else {
        Record {
            epoch: a.epoch,
            packed: (Record::new(a).packed | MANY_BIT) & !(31 << WARP_SHIFT),
        }
        .with_strength(r.strength().min(a.strength))
    };
    Ok(())
}

/// Shared memory of the running block: one entry per byte.
pub(crate) struct SharedShadow {
    bytes: Vec<Entry>,
}

impl SharedShadow {
    pub(crate) fn new(len: usize) -> SharedShadow {
        SharedShadow {
            bytes: vec![Entry::default(); len],
        }
    }

    pub(crate) fn access(
        &mut self,
        off: usize,
        len: usize,
        a: &Access,
        ctx: &Context,
    ) -> Result<(), Conflict> {
        for (i, e) in self.bytes[off..off + len].iter_mut().enumerate() {
            check(e, a, ctx).map_err(|(other, other_wrote)| Conflict {
                other,
                other_wrote,
                byte: i,
            })?;
        }
        Ok(())
    }
}

/// Checks and records an access of `len` bytes at offset `off` of a global allocation whose
/// records are `words` (one per 4-byte word; see [`Entry::fresh_words`]). A word that a 1- or
/// 2-byte access touches is split: its bytes get records of their own in `split`.
#[inline]
pub(crate) fn access_global(
    words: &mut [Entry],
    split: &mut Vec<[Entry; 4]>,
    off: usize,
    len: usize,
    a: &Access,
    ctx: &Context,
) -> Result<(), Conflict> {
    let conflict = |i: usize| {
        move |(other, other_wrote)| Conflict {
            other,
            other_wrote,
            byte: i,
        }
    };
    if off.is_multiple_of(4) && len.is_multiple_of(4) {
        // A word no access of this launch has touched yet (the usual first touch) only needs
        // this access written down.
        let first = if a.write {
            Entry {
                write: Record::new(a),
                read: Record::default(),
            }
        } else {
            Entry {
                write: Record::default(),
                read: Record::new(a),
            }
        };
        for (k, e) in words[off / 4..(off + len) / 4].iter_mut().enumerate() {
            if e.write.epoch < ctx.launch_start && e.read.epoch < ctx.launch_start {
                *e = first;
            } else if e.write.epoch == SPLIT {
                let bytes = &mut split[e.read.packed as usize];
                for (j, b) in bytes.iter_mut().enumerate() {
                    check(b, a, ctx).map_err(conflict(4 * k + j))?;
                }
            } else {
                check(e, a, ctx).map_err(conflict(4 * k))?;
            }
        }
        return Ok(());
    }
    for i in 0..len {
        let byte = off + i;
        let e = &mut words[byte / 4];
        if e.write.epoch != SPLIT {
            split.push([*e; 4]);
            *e = Entry {
                write: Record {
                    epoch: SPLIT,
                    packed: 0,
                },
                read: Record {
                    epoch: 0,
                    packed: (split.len() - 1) as u32,
                },
            };
        }
        check(&mut split[e.read.packed as usize][byte % 4], a, ctx).map_err(conflict(i))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(epoch: u32, warp: u32, write: bool, strength: Strength) -> Access {
        Access {
            epoch,
            warp,
            pc: 7,
            write,
            strength,
        }
    }

    const BLOCK: Context = Context {
        launch_start: 1,
        block_start: 10,
        cross_block: true,
    };

    #[test]
    fn the_rules() {
        use Strength::*;
        let mut e = Entry::default();
        // Two warps read in one epoch; a third warp writes: races "several warps".
        check(&mut e, &acc(10, 0, false, Weak), &BLOCK).unwrap();
        check(&mut e, &acc(10, 1, false, Weak), &BLOCK).unwrap();
        let (r, wrote) = check(&mut e, &acc(10, 0, true, Weak), &BLOCK).unwrap_err();
        assert!(!wrote && r.warp().is_none());
        // After a barrier (epoch 11) the same write is ordered.
        check(&mut e, &acc(11, 0, true, Weak), &BLOCK).unwrap();
        // A same-warp read then is fine, another warp's is not.
        check(&mut e, &acc(11, 0, false, Weak), &BLOCK).unwrap();
        assert!(check(&mut e, &acc(11, 2, false, Weak), &BLOCK).is_err());

        // Across blocks: an earlier block's write (epoch 5) races any access now...
        let mut e = Entry::default();
        check(&mut e, &acc(5, 0, true, Weak), &BLOCK).unwrap();
        assert!(check(&mut e, &acc(12, 0, false, Weak), &BLOCK).is_err());
        // ... but not for shared memory, which was another block's copy.
        let shared = Context {
            launch_start: 1,
            block_start: 10,
            cross_block: false,
        };
        check(&mut e, &acc(12, 0, false, Weak), &shared).unwrap();

        // Atomics (strong, .gpu) from different blocks do not race; .cta ones do.
        let mut e = Entry::default();
        check(&mut e, &acc(5, 0, true, Gpu), &BLOCK).unwrap();
        check(&mut e, &acc(12, 3, true, Gpu), &BLOCK).unwrap();
        let later = Context {
            launch_start: 1,
            block_start: 20,
            cross_block: true,
        };
        // A record of an earlier launch counts as nothing.
        let next_launch = Context {
            launch_start: 30,
            block_start: 30,
            cross_block: true,
        };
        let mut old = e;
        check(&mut old, &acc(31, 0, false, Weak), &next_launch).unwrap();
        assert!(check(&mut e, &acc(21, 0, true, Cta), &later).is_err());
        // A plain load racing an atomic is a race.
        assert!(check(&mut e, &acc(21, 0, false, Weak), &later).is_err());
    }

    #[test]
    fn narrow_accesses_split_a_word_and_keep_bytes_apart() {
        let mut words = Entry::fresh_words(8);
        let mut split = Vec::new();
        let mut go =
            |off, len, a: Access| access_global(&mut words, &mut split, off, len, &a, &BLOCK);
        // Warps 0 and 1 of one block write adjacent bytes of one word: no race.
        go(0, 1, acc(10, 0, true, Strength::Weak)).unwrap();
        go(1, 1, acc(10, 1, true, Strength::Weak)).unwrap();
        // A word access by warp 2 then races byte 0 (warp 0's write).
        let c = go(0, 4, acc(10, 2, false, Strength::Weak)).unwrap_err();
        assert_eq!((c.byte, c.other.warp(), c.other_wrote), (0, Some(0), true));
        // The untouched word is unaffected.
        go(4, 4, acc(10, 2, true, Strength::Weak)).unwrap();
    }
}
