//! The host's large arrays, kept from one case to the next: a DRAM-sized array is allocated and
//! first-touched once per run rather than once per case, and an input that the next case reads
//! with the same values is not generated again.
//!
//! The STREAM cases, the intensity sweep and the size sweep of a default run on this project's
//! 2-vCPU VM (480 MiB of L3, so arrays of 1.9 GiB under the DRAM rule) spent a third of the run
//! allocating, first-touching, filling and freeing arrays of the same few sizes. Here every array
//! of at least [`FROM_BYTES`] is an [`Array`] lent from the [`Arena`]: when the case is dropped
//! its memory goes back, with a note of what it holds ([`Content`]: which values, how many, and
//! their digest), and the next case that asks for those values gets them as they are.
//!
//! Every array is written by the pool's workers, each its own chunk ([`super::pool::chunk`]), as
//! the pool's first touch does, so on a machine of one NUMA node a block serves any case of its
//! size or smaller. Where the machine has several nodes, a block serves only cases of its own
//! size, whose chunks are the ones that touched it (the STREAM rule: each worker's pages local
//! to it).
//!
//! A kernel that wrote where it should only read must be caught too, or the next case would
//! read what it left. Once an input's values are written its block is made read-only
//! ([`super::guard`]), and a write to it trips the guard, which the case's check reads
//! ([`Array::changed`]). Where no guard can be had (another OS, an array of its case's own that
//! is not whole pages), the arena keeps the input's digest instead, `Σ (2i + 1) · bits(xᵢ)`
//! modulo 2⁶⁴: each weight is odd, so invertible modulo 2⁶⁴, and any one element that differs
//! from what was written changes it. The check then recomputes it in the same pass that checks
//! the output ([`digest`]).
//!
//! This module allocates and fills; it must not time anything.

use super::guard::Guard;
use super::pages::{Pages, GROWS};
use super::pool::{advise_huge_pages, Pool, SharedPtr, HUGE_PAGE};
use crate::cases::Precision;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::marker::PhantomData;
use std::rc::Rc;

/// Arrays at least this large go through the arena: twice a huge page, where the page faults of
/// a fresh array start to cost more than its fill. Smaller arrays are allocated for their case.
pub const FROM_BYTES: usize = super::pool::HUGE_PAGES_FROM;

/// What an input array holds: its element `i` is a pure function of the fill and `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// A STREAM kernel's input `array` (0 = a, 1 = b): the map kernels' values, or the
    /// reductions' integers ([`crate::cases::stream::input`]).
    Stream {
        precision: Precision,
        reduction: bool,
        array: u64,
    },
    /// The intensity sweep's input words ([`crate::cases::intensity::input`]).
    Sweep { precision: Precision },
    /// The intensity sweep's output at `k` as its check found it: element `i` is f^k of the
    /// sweep's input word `i` ([`crate::cases::intensity::Gold::expected`]). Only an output
    /// holds it ([`Array::holds`]), for the next point's output ([`Arena::output_over`]).
    SweepOut { precision: Precision, k: u32 },
    /// A cache case's `words` words ([`crate::cases::cache::input`]), then zeros to the end of
    /// their last cache line.
    Cache { words: u64 },
    /// A GEMM's B in `precision` (an implementation's own layout, `layout`: 0 for row-major
    /// B, else what the implementation's packing depends on), N × K, in as many copies as the
    /// array holds ([`crate::cases::gemm::rotate_weights`]): the batch sweep's points of one
    /// weight, and both f32 implementations, read the same B.
    GemmB {
        precision: Precision,
        n: u64,
        k: u64,
        layout: u64,
    },
}

/// What a block holds: `elements` values of `fill` from the start, and their digest where no
/// guard watches them (`None` where one does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Content {
    pub fill: Fill,
    pub elements: usize,
    pub digest: Option<u64>,
}

/// The element types arrays hold, as the bits the digest weighs.
pub trait Word: Copy + Send + Sync + 'static {
    fn word_bits(self) -> u64;
}

impl Word for f32 {
    fn word_bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}
impl Word for f64 {
    fn word_bits(self) -> u64 {
        self.to_bits()
    }
}
impl Word for i32 {
    fn word_bits(self) -> u64 {
        u64::from(self as u32)
    }
}
impl Word for u16 {
    fn word_bits(self) -> u64 {
        u64::from(self)
    }
}
impl Word for u32 {
    fn word_bits(self) -> u64 {
        u64::from(self)
    }
}

/// The digest of `values`, element `j` of them being element `start + j` of its array.
///
/// The same sum on every machine; where the CPU has AVX-512 (DQ: 64-bit lane multiplies) or
/// AVX2, it is taken eight or four lanes at a time (`wide`). The build targets plain x86-64,
/// whose one 64-bit multiply per element made the digest the slowest part of a check: on this
/// project's 2-vCPU VM (2026-12-06, load average 6, 512 MiB of u32 on one core) 0.32 s plain,
/// 0.15 s with AVX2, 0.10 s with AVX-512, where the memory's own pace starts to set it.
#[inline]
pub fn digest<T: Word>(values: &[T], start: usize) -> u64 {
    super::wide::dispatch!(digest_avx512, digest_avx2, digest_plain, values, start)
}

/// [`digest`]'s sum as written, for the compiler to widen where it may.
#[inline(always)]
fn digest_plain<T: Word>(values: &[T], start: usize) -> u64 {
    values.iter().enumerate().fold(0u64, |d, (j, v)| {
        d.wrapping_add((2 * (start + j) as u64 + 1).wrapping_mul(v.word_bits()))
    })
}

/// [`digest_plain`] and [`generate_plain`] compiled again for the wider x86-64 vector sets,
/// chosen at run time ([`super::wide`]).
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::{digest_plain, generate_plain, Word};
    use crate::backend::host::wide::widened;

    widened!(digest_avx512, digest_avx2, digest_plain, <T: Word>, (values: &[T], start: usize) -> u64);
    widened!(generate_avx512, generate_avx2, generate_plain, <T: Word, F: Fn(usize) -> T>,
        (base: *mut T, range: std::ops::Range<usize>, value: &F) -> ());
}

/// Elements a check takes at a time: it digests an input's block, then checks the output
/// against the same block while it is still in cache, so the inputs are read from memory once.
pub const CHECK_BLOCK: usize = 16 << 10;

/// `range` in blocks of [`CHECK_BLOCK`].
pub fn blocks(range: std::ops::Range<usize>) -> impl Iterator<Item = std::ops::Range<usize>> {
    let end = range.end;
    range
        .step_by(CHECK_BLOCK)
        .map(move |start| start..(start + CHECK_BLOCK).min(end))
}

/// Whether an input of `bytes` will be watched by a guard rather than digested, as a real
/// arena's block of that size is where guards can be had: for a forecast.
pub fn watches(bytes: u64) -> bool {
    cfg!(any(target_os = "linux", target_os = "android")) && bytes >= FROM_BYTES as u64
}

/// The digest of the whole of `values`, each worker of `pool` its chunk of `align` elements;
/// `None` if a worker panicked.
pub fn digest_on<T: Word>(pool: &Pool, values: &[T], align: usize) -> Option<u64> {
    let parts = pool.chunks(values.len(), align, |r| digest(&values[r.clone()], r.start))?;
    Some(parts.into_iter().fold(0, u64::wrapping_add))
}

/// Memory at 2 MiB alignment from 2 MiB up (a huge page's boundary, BabelStream's alignment),
/// a cache line's below ([`super::pool::array_alignment`]); read-only while a guard watches it.
struct Block {
    pages: Pages,
    guard: Option<Guard>,
}

impl Block {
    /// `bytes` at their alignment, not yet touched, huge pages asked for where they may be.
    fn new(bytes: usize) -> Option<Block> {
        let pages = Pages::new(bytes)?;
        advise_huge_pages(pages.ptr(), pages.bytes());
        Some(Block { pages, guard: None })
    }

    fn ptr(&self) -> *mut u8 {
        self.pages.ptr()
    }

    /// Makes the block `bytes` long, keeping its pages ([`Pages::grow`]), unwatched; whether it
    /// grew.
    fn grow(&mut self, bytes: usize) -> bool {
        self.unwatch();
        let grown = self.pages.grow(bytes);
        if grown {
            advise_huge_pages(self.pages.ptr(), self.pages.bytes());
        }
        grown
    }

    /// Makes the block read-only, watched for writes; whether it now is.
    fn watch(&mut self) -> bool {
        if self.guard.is_none() {
            // SAFETY: the block's own memory, allocated until it is dropped, which drops the
            // guard first; the arena writes it only after `unwatch`.
            self.guard = unsafe { Guard::new(self.pages.ptr(), self.pages.bytes()) };
        }
        self.guard.is_some()
    }

    /// Makes the block writable again, watched no longer.
    fn unwatch(&mut self) {
        self.guard = None;
    }

    /// Whether a guard watches the block.
    fn watched(&self) -> bool {
        self.guard.is_some()
    }

    /// Whether something wrote to the block while a guard watched it.
    fn tripped(&self) -> bool {
        self.guard.as_ref().is_some_and(Guard::tripped)
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        self.unwatch(); // writable again before its pages go
    }
}

/// A block waiting for its next case. A block of a virtual arena ([`Arena::simulated`]) has no
/// memory, only its size.
struct Idle {
    block: Option<Block>,
    bytes: usize,
    content: Option<Content>,
    /// When it was given back, to give up the one unused longest first.
    returned: u64,
}

/// What the arena has written since it was made, in bytes: values generated into inputs,
/// poison into outputs (none into an output taken over values it differs from everywhere,
/// [`Arena::output_over`]), and blocks new to the process (their first touch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub filled_bytes: u64,
    pub poisoned_bytes: u64,
    pub new_bytes: u64,
}

struct Store {
    idle: Vec<Idle>,
    /// Bytes of the blocks lent to cases now.
    lent_bytes: usize,
    /// Most bytes the arena holds, lent and idle together, before it gives up idle blocks.
    cap_bytes: usize,
    clock: u64,
    /// Whether any worker's pages are as near to it as any other's (one NUMA node).
    one_node: bool,
    /// Whether blocks are sizes only (a forecast's arena).
    simulated: bool,
    /// Whether inputs are watched by guards where they can be (else by their digests).
    guards: bool,
    written: Written,
    /// Seconds the pool's workers spent first-touching blocks new to the process.
    touch_secs: f64,
}

/// The host backend's arrays (see the module doc). Cloning it shares it.
#[derive(Clone)]
pub struct Arena(Rc<RefCell<Store>>);

/// A block taken for an array: its memory (none in a simulated arena), its size, and the
/// content it holds still where it was taken for those values.
struct Taken {
    block: Option<Block>,
    bytes: usize,
    content: Option<Content>,
    /// Bytes from its start that the process has touched before: none of a new block, the old
    /// size of a grown one ([`Pages::grow`]), all of an idle one.
    touched: usize,
}

/// An array a case holds: from the arena, to which it goes back when dropped, or allocated for
/// it alone. Derefs to its elements.
pub struct Array<T> {
    block: Option<Block>,
    bytes: usize,
    len: usize,
    /// What it holds while its values are the fill's (an input untouched by the case).
    content: Option<Content>,
    home: Option<Arena>,
    _values: PhantomData<T>,
}

impl<T> std::ops::Deref for Array<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.block {
            // SAFETY: the block holds `len` initialised `T`s (written by `input` or `output`),
            // at an alignment that every element type divides.
            Some(b) => unsafe { std::slice::from_raw_parts(b.ptr().cast::<T>(), self.len) },
            None => &[],
        }
    }
}

impl<T> std::ops::DerefMut for Array<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.block {
            // SAFETY: as `deref`; `&mut self` is unique.
            Some(b) => unsafe { std::slice::from_raw_parts_mut(b.ptr().cast::<T>(), self.len) },
            None => &mut [],
        }
    }
}

impl<T> Array<T> {
    /// What the array holds as its fill wrote it, if it is an input.
    pub fn content(&self) -> Option<Content> {
        self.content
    }

    /// Says that the values may no longer be the fill's (a check found them changed): the block
    /// goes back to the arena holding nothing, and is writable again.
    pub fn taint(&mut self) {
        self.content = None;
        if let Some(b) = &mut self.block {
            b.unwatch();
        }
    }

    /// Says what an output holds: `Some(fill)` once its check found every element to be
    /// `fill`'s value, `None` once a kernel may have written it since. Its block goes back with
    /// it, for the next output that asks to be taken over it ([`Arena::output_over`]).
    pub fn holds(&mut self, fill: Option<Fill>) {
        debug_assert!(!self.read_only(), "an output is never guarded");
        self.content = fill.map(|fill| Content {
            fill,
            elements: self.len,
            digest: None,
        });
    }

    /// Whether the array's pages are read-only now, under a guard (an input's, or one left on
    /// a block that should have been lifted): for the tests.
    #[doc(hidden)]
    pub fn read_only(&self) -> bool {
        self.block.as_ref().is_some_and(Block::watched)
    }

    /// Whether a guard watches the input's pages for writes ([`super::guard`]): where one does,
    /// a check need not take its digest.
    pub fn watched(&self) -> bool {
        self.content.is_some() && self.block.as_ref().is_some_and(Block::watched)
    }

    /// Whether an input's values may have changed since they were written: its guard tripped,
    /// or (where no guard watches it) `digest`, taken of it now, differs from the one it was
    /// written with. If so, says how, and taints it ([`Array::taint`]). An output, or an input
    /// already tainted, has not changed.
    pub fn changed(&mut self, digest: Option<u64>) -> Option<&'static str> {
        let content = self.content?;
        let why = if self.watched() {
            self.block.as_ref().is_some_and(Block::tripped).then_some(
                "was written during the run (a guard on its pages, read-only while the case \
                 ran, caught the write)",
            )
        } else {
            match (content.digest, digest) {
                (Some(was), Some(now)) if was != now => Some(
                    "changed during the run (its digest differs from the one it was written \
                     with)",
                ),
                _ => None,
            }
        };
        if why.is_some() {
            self.taint();
        }
        why
    }
}

impl<T: Word> Array<T> {
    /// [`Array::changed`] for an input whose check reads nothing else of it: its digest is
    /// taken here, each worker of `pool` its chunk of `align` elements, only where no guard
    /// watches it. An error if a worker panicked.
    pub fn changed_on(&mut self, pool: &Pool, align: usize) -> crate::Result<Option<&'static str>> {
        let digest =
            match self.watched() {
                true => None,
                false => Some(digest_on(pool, self, align).ok_or_else(|| {
                    crate::Error::Internal("a host worker panicked checking".into())
                })?),
            };
        Ok(self.changed(digest))
    }
}

impl<T> Drop for Array<T> {
    fn drop(&mut self) {
        if self.block.as_ref().is_some_and(Block::tripped) {
            self.taint(); // written where no check looked: it holds the fill no longer
        }
        if let Some(home) = &self.home {
            home.give_back(self.block.take(), self.bytes, self.content);
        }
    }
}

/// Whether this machine has one NUMA node (or says nothing of nodes).
fn one_numa_node() -> bool {
    match std::fs::read_to_string("/sys/devices/system/node/online") {
        Ok(list) => super::count_cpu_list(&list) <= 1,
        Err(_) => true,
    }
}

/// An array a case asks for, as the forecast simulates it: its bytes, and the values it must
/// hold (an input) or none (an output, poisoned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    pub bytes: usize,
    pub elements: usize,
    pub fill: Option<Fill>,
    /// For an output: what its check leaves in it where it passes ([`Arena::output_over`]).
    pub holds: Option<Fill>,
}

impl Arena {
    /// An empty arena that holds at most `cap_bytes`, lent and idle together.
    pub fn new(cap_bytes: u64) -> Arena {
        Self::made(cap_bytes, one_numa_node(), false)
    }

    /// An arena of sizes only, for a forecast: it chooses blocks as [`Arena::new`]'s does and
    /// counts what it would write ([`Arena::simulate`]), allocating nothing.
    pub fn simulated(cap_bytes: u64, one_node: bool) -> Arena {
        Self::made(cap_bytes, one_node, true)
    }

    /// [`Arena::new`] whose inputs are never guarded, only digested: the way every input is
    /// checked where guards cannot be had, for the tests of that way.
    pub fn unguarded(cap_bytes: u64) -> Arena {
        let arena = Self::made(cap_bytes, one_numa_node(), false);
        arena.0.borrow_mut().guards = false;
        arena
    }

    fn made(cap_bytes: u64, one_node: bool, simulated: bool) -> Arena {
        Arena(Rc::new(RefCell::new(Store {
            idle: Vec::new(),
            lent_bytes: 0,
            cap_bytes: usize::try_from(cap_bytes).unwrap_or(usize::MAX),
            clock: 0,
            one_node,
            simulated,
            guards: true,
            written: Written::default(),
            touch_secs: 0.0,
        })))
    }

    /// What the arena has written since it was made.
    pub fn written(&self) -> Written {
        self.0.borrow().written
    }

    /// Seconds spent so far first-touching memory new to the process ([`Arena::input`] and
    /// [`Arena::output`] touch a new block's pages before they write its values): on a VM whose
    /// guest memory is backed only as it is first touched, most of what preparing a DRAM-sized
    /// array costs.
    pub fn touch_secs(&self) -> f64 {
        self.0.borrow().touch_secs
    }

    /// Bytes the arena holds now, lent and idle.
    pub fn held_bytes(&self) -> usize {
        let s = self.0.borrow();
        s.lent_bytes + held_idle(&s)
    }

    /// What one case that holds the arrays `needs` at once costs in a simulated arena: the
    /// arrays taken in order, then given back (inputs holding their values). Returns what was
    /// written for it.
    pub fn simulate(&self, needs: &[Need]) -> Written {
        let before = self.written();
        let taken: Vec<(Taken, Option<Content>)> = needs
            .iter()
            .filter_map(|need| {
                let want = match (need.fill, need.holds) {
                    (Some(fill), _) => Want::Input(fill, need.elements),
                    (None, Some(fill)) => Want::Over(fill, need.elements),
                    (None, None) => Want::Output,
                };
                let t = self.take(need.bytes, want)?;
                // (a passing check's: an input's values, or what the output's check leaves)
                let content = need.fill.or(need.holds).map(|fill| Content {
                    fill,
                    elements: need.elements,
                    digest: None,
                });
                let mut s = self.0.borrow_mut();
                match (need.fill, t.content) {
                    (Some(_), None) => s.written.filled_bytes += need.bytes as u64,
                    (None, None) => s.written.poisoned_bytes += need.bytes as u64,
                    _ => {}
                }
                Some((t, content))
            })
            .collect();
        // (as `Array`'s drop: a block below FROM_BYTES was its case's own, and is freed)
        for (t, content) in taken.into_iter().filter(|(t, _)| t.bytes >= FROM_BYTES) {
            self.give_back(t.block, t.bytes, content);
        }
        let after = self.written();
        Written {
            filled_bytes: after.filled_bytes - before.filled_bytes,
            poisoned_bytes: after.poisoned_bytes - before.poisoned_bytes,
            new_bytes: after.new_bytes - before.new_bytes,
        }
    }

    /// An array of `n` elements holding `fill`'s values, `value(i)` for element `i`, written by
    /// the pool's workers (each its chunk of `align` elements) unless an idle block holds them
    /// already. `None` when the memory cannot be had.
    pub fn input<T: Word>(
        &self,
        pool: &Pool,
        n: usize,
        align: usize,
        fill: Fill,
        value: impl Fn(usize) -> T + Sync,
    ) -> Option<Array<T>> {
        self.input_repeating(pool, n, align, n, fill, value)
    }

    /// [`Arena::input`] of an array whose elements repeat with `period` (copies of one array
    /// back to back: a GEMM's rotating weights): `value` makes the first `period` elements, and
    /// the rest are copied from them, each worker the part of its own chunk past the first
    /// period. Where `value` costs more than a copy (a hash per element, the AMX GEMM's tile
    /// layout of B), a 1.9 GiB set of copies is made several times faster.
    pub fn input_repeating<T: Word>(
        &self,
        pool: &Pool,
        n: usize,
        align: usize,
        period: usize,
        fill: Fill,
        value: impl Fn(usize) -> T + Sync,
    ) -> Option<Array<T>> {
        let bytes = n.checked_mul(std::mem::size_of::<T>())?;
        let taken = self.take(bytes, Want::Input(fill, n))?;
        let (reused, touched) = (taken.content, taken.touched);
        let mut array = self.array(taken, n);
        self.first_touch(pool, &mut array, align, touched);
        if reused.is_none() {
            let watch = self.0.borrow().guards
                && array
                    .block
                    .as_ref()
                    .is_some_and(|b| super::guard::may_watch(b.ptr(), b.pages.bytes()));
            let written = write(pool, &mut array, align, period, value, !watch);
            let watched = watch && array.block.as_mut().is_some_and(Block::watch);
            let digest = match (watched, written) {
                (true, _) => None,
                (false, Some(d)) => Some(d),
                // the guard was refused after all: the digest, in a pass of its own
                (false, None) => Some(digest_on(pool, &array, align)?),
            };
            array.content = Some(Content {
                fill,
                elements: n,
                digest,
            });
            self.0.borrow_mut().written.filled_bytes += bytes as u64;
        }
        Some(array)
    }

    /// An array of `n` elements, every one `poison`, written by the pool's workers (each its
    /// chunk of `align` elements). `None` when the memory cannot be had.
    pub fn output<T: Word>(
        &self,
        pool: &Pool,
        n: usize,
        align: usize,
        poison: T,
    ) -> Option<Array<T>> {
        self.output_taking(pool, n, align, poison, Want::Output)
    }

    /// [`Arena::output`] for an output whose check, where it passes, leaves `holds`'s values in
    /// it ([`Array::holds`]). Where an idle block holds values that differ from those at every
    /// element ([`overwritable`]), the output is taken over them and not poisoned: an element
    /// its kernel leaves unwritten keeps a value its check rejects, as poison would be. The
    /// intensity sweep's points, each over the one before it, write no poison but the first's.
    pub fn output_over<T: Word>(
        &self,
        pool: &Pool,
        n: usize,
        align: usize,
        poison: T,
        holds: Fill,
    ) -> Option<Array<T>> {
        self.output_taking(pool, n, align, poison, Want::Over(holds, n))
    }

    fn output_taking<T: Word>(
        &self,
        pool: &Pool,
        n: usize,
        align: usize,
        poison: T,
        want: Want,
    ) -> Option<Array<T>> {
        let bytes = n.checked_mul(std::mem::size_of::<T>())?;
        let mut taken = self.take(bytes, want)?;
        // values every element differs from, where it was taken over them; the output holds
        // nothing known until its check passes
        let over = taken.content.take().is_some();
        let touched = taken.touched;
        let mut array: Array<T> = self.array(taken, n);
        self.first_touch(pool, &mut array, align, touched);
        if over {
            return Some(array);
        }
        let ptr = SharedPtr(array.as_mut_ptr());
        let ok = pool
            .chunks(n, align, |r| {
                // SAFETY: worker t writes only its chunk, inside the array's n elements.
                fill_streaming(
                    unsafe { std::slice::from_raw_parts_mut(ptr.get().add(r.start), r.len()) },
                    poison,
                );
            })
            .is_some();
        assert!(ok, "poisoning an array cannot panic");
        self.0.borrow_mut().written.poisoned_bytes += bytes as u64;
        Some(array)
    }

    /// Touches every page of `array` past its block's first `touched` bytes (one byte written in
    /// each 4 KiB), each worker of `pool` the pages of its own chunk of `align` elements, as its
    /// values will be written: the first touch that places each page, timed apart from the
    /// values ([`Arena::touch_secs`]). Nothing where the array lies within what was touched.
    fn first_touch<T>(&self, pool: &Pool, array: &mut Array<T>, align: usize, touched: usize) {
        const PAGE: usize = 4096;
        let size = std::mem::size_of::<T>();
        if array.block.is_none() || array.len * size <= touched {
            return;
        }
        let base = SharedPtr(array.as_mut_ptr().cast::<u8>());
        let started = std::time::Instant::now();
        let ok = pool
            .chunks(array.len, align, |r| {
                let (from, to) = ((r.start * size).max(touched), r.end * size);
                let mut at = from;
                while at < to {
                    // SAFETY: `at` lies within this worker's chunk of the array's bytes, which
                    // no one reads before the values are written over it.
                    unsafe { base.get().add(at).write_volatile(0) };
                    at = (at / PAGE + 1) * PAGE;
                }
            })
            .is_some();
        assert!(ok, "touching an array cannot panic");
        self.0.borrow_mut().touch_secs += started.elapsed().as_secs_f64();
    }

    fn array<T>(&self, taken: Taken, n: usize) -> Array<T> {
        Array {
            home: (taken.bytes >= FROM_BYTES).then(|| self.clone()),
            block: taken.block,
            bytes: taken.bytes,
            len: n,
            content: taken.content,
            _values: PhantomData,
        }
    }

    /// A block for an array of `bytes`: for an input, an idle block that holds its values (its
    /// content comes with it); for an output over values ([`Want::Over`]), an idle block whose
    /// values it may be written over (their content comes with it, for the caller to know);
    /// else an idle one that fits (one holding nothing first, else the one unused longest),
    /// else an idle one grown to fit ([`Pages::grow`]; one holding nothing first, else the
    /// largest: only the part past its old end is new memory), else a new one; giving up idle
    /// blocks unused longest first where the arena would pass its cap. Blocks grow only on one
    /// NUMA node, as they serve any case there. Below [`FROM_BYTES`], a block of its own that
    /// no other case gets.
    fn take(&self, bytes: usize, want: Want) -> Option<Taken> {
        let mut s = self.0.borrow_mut();
        let one_node = s.one_node;
        let new = |s: &mut Store, bytes: usize| -> Option<Taken> {
            let block = if s.simulated {
                None
            } else {
                Some(Block::new(bytes)?)
            };
            s.written.new_bytes += bytes as u64;
            Some(Taken {
                touched: 0,
                block,
                bytes,
                content: None,
            })
        };
        if bytes < FROM_BYTES {
            return new(&mut s, bytes);
        }
        let holding = s.idle.iter().position(|i| {
            fits(one_node, i.bytes, bytes)
                && i.content.is_some_and(|c| match want {
                    Want::Input(fill, n) => c.fill == fill && c.elements == n,
                    Want::Over(holds, n) => c.elements == n && overwritable(c.fill, holds),
                    Want::Output => false,
                })
        });
        let chosen = holding.or_else(|| {
            s.idle
                .iter()
                .enumerate()
                .filter(|(_, i)| fits(one_node, i.bytes, bytes))
                .min_by_key(|(_, i)| (i.content.is_some(), i.returned, i.bytes))
                .map(|(at, _)| at)
        });
        let taken = match chosen {
            Some(at) => {
                let mut idle = s.idle.swap_remove(at);
                if holding.is_none() || !matches!(want, Want::Input(..)) {
                    // to be written: writable again
                    if let Some(b) = &mut idle.block {
                        b.unwatch();
                    }
                }
                Taken {
                    block: idle.block,
                    bytes: idle.bytes,
                    content: if holding.is_some() {
                        idle.content
                    } else {
                        None
                    },
                    touched: idle.bytes,
                }
            }
            None => {
                let rounded = bytes.next_multiple_of(HUGE_PAGE);
                // (one holding nothing first, else the largest; where it could not grow, it is
                // freed, as the cap might have wanted)
                let grow = s
                    .idle
                    .iter()
                    .enumerate()
                    .filter(|_| one_node && GROWS)
                    .max_by_key(|(_, i)| (i.content.is_none(), i.bytes, Reverse(i.returned)))
                    .map(|(at, _)| at);
                let grown = grow.map(|at| s.idle.swap_remove(at)).and_then(|mut idle| {
                    let grew = idle.block.as_mut().is_none_or(|b| b.grow(rounded));
                    grew.then_some(idle)
                });
                // give up the idle blocks unused longest until the new (or grown) one fits the cap
                s.idle.sort_by_key(|i| Reverse(i.returned));
                while !s.idle.is_empty() && s.lent_bytes + held_idle(&s) + rounded > s.cap_bytes {
                    s.idle.pop();
                }
                match grown {
                    // (its `bytes` still the old size, all of it touched before)
                    Some(idle) => {
                        s.written.new_bytes += (rounded - idle.bytes) as u64;
                        Taken {
                            block: idle.block,
                            bytes: rounded,
                            content: None,
                            touched: idle.bytes,
                        }
                    }
                    None => new(&mut s, rounded)?,
                }
            }
        };
        s.lent_bytes += taken.bytes;
        Some(taken)
    }

    /// A block back from its case, holding `content` (or nothing).
    fn give_back(&self, block: Option<Block>, bytes: usize, content: Option<Content>) {
        let mut s = self.0.borrow_mut();
        s.lent_bytes -= bytes;
        s.clock += 1;
        let returned = s.clock;
        s.idle.push(Idle {
            block,
            bytes,
            content,
            returned,
        });
    }
}

/// What [`Arena::take`] is asked for: an input's values (the fill, and how many), an output
/// to be poisoned, or an output whose check leaves the fill's values ([`Arena::output_over`]).
#[derive(Clone, Copy, Debug)]
enum Want {
    Input(Fill, usize),
    Output,
    Over(Fill, usize),
}

/// Whether an output whose check leaves `holds`'s values may be written over a block holding
/// `was`'s without poison: every element of `was` differs from `holds`'s, so an element its
/// kernel leaves unwritten fails its check. For two points of one precision of the intensity
/// sweep, where their gold maps differ at every input word
/// ([`crate::cases::intensity::Gold::differs_everywhere`]); never for anything else.
pub fn overwritable(was: Fill, holds: Fill) -> bool {
    match (was, holds) {
        (
            Fill::SweepOut { precision, k: was },
            Fill::SweepOut {
                precision: p,
                k: holds,
            },
        ) => p == precision && crate::cases::intensity::differs_everywhere(p, holds, was),
        _ => false,
    }
}

fn held_idle(s: &Store) -> usize {
    s.idle.iter().map(|i| i.bytes).sum()
}

/// Whether a block of `block_bytes` serves an array of `bytes`: any larger block on one NUMA
/// node, else one of the array's own size (rounded to huge pages), whose chunks touched it.
fn fits(one_node: bool, block_bytes: usize, bytes: usize) -> bool {
    if one_node {
        block_bytes >= bytes
    } else {
        block_bytes == bytes.next_multiple_of(HUGE_PAGE)
    }
}

/// `values` filled with `value`. On x86-64 the 16-byte-aligned body is written with
/// non-temporal stores: a poisoned output is read by nothing before its kernel writes it, so its
/// lines need neither be read for ownership nor kept in cache. On this project's 2-vCPU VM
/// (2026-12-06, load average about 5) a 2 GiB output poisoned in 0.37 s with plain stores.
pub fn fill_streaming<T: Word>(values: &mut [T], value: T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        let size = std::mem::size_of::<T>();
        if size > 0 && 16 % size == 0 && std::mem::size_of_val(values) >= 1 << 16 {
            let head = values.as_ptr().align_offset(16).min(values.len());
            let (front, rest) = values.split_at_mut(head);
            front.fill(value);
            let vectors = std::mem::size_of_val(rest) / 16;
            let (body, tail) = rest.split_at_mut(vectors * 16 / size);
            tail.fill(value);
            let pattern = [value; 16];
            // SAFETY: `pattern` holds at least 16 bytes of `value` repeated (a Word is plain
            // bits); `body` starts 16-byte aligned and holds exactly `vectors` × 16 bytes, all
            // of this slice's, written and then fenced before any of it is read.
            unsafe {
                let v = _mm_loadu_si128(pattern.as_ptr().cast::<__m128i>());
                let out = body.as_mut_ptr().cast::<__m128i>();
                for i in 0..vectors {
                    _mm_stream_si128(out.add(i), v);
                }
                _mm_sfence();
            }
            return;
        }
    }
    values.fill(value);
}

/// Writes `value(i)` to element `i` of `base` for every `i` in `range`, compiled again for the
/// wider x86-64 vector sets (as [`digest`]): the generators are integer hashes and bit
/// operations, which the plain x86-64 build takes one element at a time.
///
/// # Safety
/// `base + range` lies within one allocation that only this caller writes; the memory may be
/// untouched, so it is written through a raw pointer before any read.
#[inline]
unsafe fn generate<T: Word, F: Fn(usize) -> T>(
    base: *mut T,
    range: std::ops::Range<usize>,
    value: &F,
) {
    // (the caller's safety is what the plain loop and its wide copies ask)
    super::wide::dispatch!(
        generate_avx512,
        generate_avx2,
        generate_plain,
        base,
        range,
        value
    )
}

/// [`generate`]'s loop as written.
///
/// # Safety
/// As [`generate`]'s.
#[inline(always)]
unsafe fn generate_plain<T: Word, F: Fn(usize) -> T>(
    base: *mut T,
    range: std::ops::Range<usize>,
    value: &F,
) {
    for i in range {
        // SAFETY: the caller's.
        unsafe { base.add(i).write(value(i)) };
    }
}

/// Writes `value(i)` to every element of `array` below `period` (all of them where `period` is
/// 0 or at least its length), each worker of `pool` its chunk of `align` elements, and copies
/// of those to the rest, each worker the part of its own chunk past them; returns the digest of
/// what it wrote where `digested`. Each block is digested right after it is written, while it
/// is in cache.
fn write<T: Word>(
    pool: &Pool,
    array: &mut Array<T>,
    align: usize,
    period: usize,
    value: impl Fn(usize) -> T + Sync,
    digested: bool,
) -> Option<u64> {
    let n = array.len;
    let first = if period == 0 { n } else { period.min(n) };
    let ptr = SharedPtr(array.as_mut_ptr());
    // SAFETY (both): a worker reads back only the block it has just written, within its chunk.
    let written = |r: std::ops::Range<usize>| unsafe {
        std::slice::from_raw_parts(ptr.get().add(r.start), r.len())
    };
    let made = pool.chunks(first, align, |r| {
        let mut d = 0u64;
        for b in blocks(r) {
            // SAFETY: this worker writes only its chunk, inside the array's n elements.
            unsafe { generate(ptr.get(), b.clone(), &value) };
            if digested {
                d = d.wrapping_add(digest(written(b.clone()), b.start));
            }
        }
        d
    });
    let mut total = made
        .expect("filling an array cannot panic")
        .into_iter()
        .fold(0, u64::wrapping_add);
    if first == n {
        return digested.then_some(total);
    }
    // The repeats, after the pool joined the workers that made the first period.
    let copied = pool.chunks(n, align, |r| {
        let mut d = 0u64;
        for b in blocks(r.start.max(first)..r.end.max(first)) {
            let mut i = b.start;
            while i < b.end {
                let from = i % first;
                let run = (b.end - i).min(first - from);
                // SAFETY: from + run <= first <= i, so the source (written above, only read
                // now) and this worker's destination i..i + run <= n do not overlap, and the
                // workers' destinations are disjoint chunks.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr.get().add(from), ptr.get().add(i), run)
                };
                i += run;
            }
            if digested {
                d = d.wrapping_add(digest(written(b.clone()), b.start));
            }
        }
        d
    });
    total = copied
        .expect("copying an array cannot panic")
        .into_iter()
        .fold(total, u64::wrapping_add);
    digested.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::pool::allowed_cpus;

    fn pool() -> Pool {
        let cpus = allowed_cpus();
        Pool::new(vec![cpus[0], cpus[cpus.len() - 1]])
    }

    /// A simulated arena prices what a real one writes: an array below [`FROM_BYTES`] is its
    /// case's own every time, a large input is written once and then held (a run of its plan
    /// once panicked here, giving back a small array it had never lent).
    #[test]
    fn a_simulated_arena_writes_what_a_real_one_does() {
        let arena = Arena::simulated(u64::MAX, true);
        let small = Need {
            bytes: 1000,
            elements: 250,
            fill: None,
            holds: None,
        };
        for _ in 0..2 {
            assert_eq!(arena.simulate(&[small]).new_bytes, 1000);
        }
        let big = Need {
            bytes: 8 << 20,
            elements: 2 << 20,
            fill: Some(Fill::Sweep {
                precision: Precision::F32,
            }),
            holds: None,
        };
        let first = arena.simulate(&[big, small]);
        assert_eq!(
            (first.filled_bytes, first.new_bytes),
            (8 << 20, (8 << 20) + 1000)
        );
        let again = arena.simulate(&[big]);
        assert_eq!((again.filled_bytes, again.new_bytes), (0, 0));
        assert_eq!(arena.held_bytes(), 8 << 20);
    }

    /// The widened digest is the plain sum, for every word type, length and start (the vector
    /// loops' tails included); so a planted single-element error is caught as before.
    #[test]
    fn the_wide_digest_is_the_plain_one() {
        fn same<T: Word>(values: &[T]) {
            for start in [0, 1, 7, 1 << 20, usize::MAX / 4] {
                for len in [0, 1, 3, 8, 17, 64, 1000, values.len()] {
                    let v = &values[..len.min(values.len())];
                    assert_eq!(
                        digest(v, start),
                        digest_plain(v, start),
                        "{len} from {start}"
                    );
                }
            }
        }
        let n = 4099;
        let bits = |i: usize| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7;
        same(
            &(0..n)
                .map(|i| f32::from_bits(bits(i) as u32))
                .collect::<Vec<_>>(),
        );
        same(&(0..n).map(|i| f64::from_bits(bits(i))).collect::<Vec<_>>());
        same(&(0..n).map(|i| bits(i) as i32).collect::<Vec<_>>());
        same(&(0..n).map(|i| bits(i) as u16).collect::<Vec<_>>());
        same(&(0..n).map(|i| bits(i) as u32).collect::<Vec<_>>());
    }

    /// A repeating input holds its first period's values in every copy, in one pass of
    /// `value` per element of the period, and its digest is the whole array's: one element
    /// changed in any copy (the first, a middle one, the last, a partial last copy) shows.
    #[test]
    fn a_repeating_input_is_its_period_over_and_over() {
        let pool = pool();
        let arena = Arena::unguarded(1 << 30);
        let period = 70_001;
        let n = (16 << 20) / 4 + 123; // 59 copies and part of one more, past FROM_BYTES
        let fill = Fill::GemmB {
            precision: Precision::F32,
            n: 1,
            k: period as u64,
            layout: 0,
        };
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let value = |i: usize| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            (i % 977) as f32 - 400.0
        };
        let a = arena
            .input_repeating(&pool, n, 64, period, fill, value)
            .unwrap();
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), period);
        assert!(a
            .iter()
            .enumerate()
            .all(|(i, &v)| v == ((i % period) % 977) as f32 - 400.0));
        let kept = a.content().unwrap().digest.unwrap();
        assert_eq!(kept, digest(&a, 0));
        assert_eq!(digest_on(&pool, &a, 64), Some(kept));
        let mut copy: Vec<f32> = a.to_vec();
        for at in [0, period - 1, period, 30 * period + 5, n - 1] {
            let was = copy[at];
            copy[at] = was + 1.0;
            assert_ne!(digest(&copy, 0), kept, "element {at}");
            copy[at] = was;
        }
    }

    /// Past its cap the arena gives up idle blocks, unused longest first, before it allocates
    /// or grows one.
    #[test]
    fn the_cap_gives_up_idle_blocks() {
        let pool = pool();
        let arena = Arena::new(20 << 20);
        let a = arena.output(&pool, (8 << 20) / 4, 16, 0.0f32).unwrap();
        let b = arena.output(&pool, (8 << 20) / 4, 16, 0.0f32).unwrap();
        drop(a);
        drop(b);
        assert_eq!(arena.held_bytes(), 16 << 20);
        // a larger one: neither idle block fits; on Linux the one unused longest grows, and the
        // other is kept (20 MiB in all); elsewhere a new block is made and the one unused
        // longest goes to make room
        let c = arena.output(&pool, (12 << 20) / 4, 16, 0.0f32).unwrap();
        assert_eq!(arena.held_bytes(), 20 << 20);
        let new = if GROWS { 4 << 20 } else { 12 << 20 };
        assert_eq!(arena.written().new_bytes, (16 << 20) + new);
        // past the cap with both: the idle block goes
        let d = arena.output(&pool, (14 << 20) / 4, 16, 0.0f32).unwrap();
        assert_eq!(arena.held_bytes(), 26 << 20);
        drop((c, d));
    }
}
