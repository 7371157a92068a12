//! A pool of worker threads, one pinned to each CPU this process may run on.
//!
//! The host backend needs what an OpenMP `parallel for schedule(static)` gives STREAM: the same
//! thread, on the same core, always works on the same slice of every array (so the pages it
//! first-touched are local to it), and launching work costs far less than the work. Rayon does
//! not pin, and spawning threads per launch would charge thread creation to every sample.
//!
//! [`Pool::run`] hands one closure to every worker and returns when all have finished; a
//! [`SpinBarrier`] lets a closure separate back-to-back repetitions the way the implicit barrier
//! at the end of an OpenMP loop does.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

type Job = dyn Fn(usize) + Sync;

struct State {
    generation: u64,
    /// The current job. The pointer is valid while `remaining > 0`: `Pool::run` does not return
    /// (and so does not let the closure go out of scope) before every worker is done with it.
    job: Option<*const Job>,
    remaining: usize,
    panicked: bool,
    shutdown: bool,
}

// SAFETY: the raw job pointer is only dereferenced by workers between the moment `run`
// publishes it and the moment `run` observes `remaining == 0`, during which the closure it
// points to is alive and is `Sync`.
unsafe impl Send for State {}

struct Shared {
    state: Mutex<State>,
    start: Condvar,
    done: Condvar,
}

/// Worker threads pinned one per CPU.
pub struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    cpus: Vec<usize>,
}

/// The CPUs this process may run on (its affinity mask), in ascending order.
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `set` is a plain bitmask owned by this frame; sched_getaffinity writes at most
        // size_of::<cpu_set_t>() bytes into it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
                let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                    .filter(|&c| libc::CPU_ISSET(c, &set))
                    .collect();
                if !cpus.is_empty() {
                    return cpus;
                }
            }
        }
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
}

/// Pins the calling thread to `cpu`. Returns false where pinning is not supported or refused.
fn pin_to(cpu: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: as in `allowed_cpus`; CPU_SET writes inside the set it is given.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        false
    }
}

impl Pool {
    /// One worker per CPU in `cpus`, worker `i` pinned to `cpus[i]`.
    pub fn new(cpus: Vec<usize>) -> Pool {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                generation: 0,
                job: None,
                remaining: 0,
                panicked: false,
                shutdown: false,
            }),
            start: Condvar::new(),
            done: Condvar::new(),
        });
        let workers = cpus
            .iter()
            .enumerate()
            .map(|(index, &cpu)| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("roofprobe-worker-{index}"))
                    .spawn(move || worker(shared, index, cpu))
                    .expect("spawning a worker thread")
            })
            .collect();
        Pool {
            shared,
            workers,
            cpus,
        }
    }

    /// Number of workers.
    pub fn threads(&self) -> usize {
        self.workers.len()
    }

    /// The CPU each worker is pinned to.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// Runs `job(worker_index)` on every worker and waits for all of them. Returns false if any
    /// worker's closure panicked (the pool stays usable).
    pub fn run<F: Fn(usize) + Sync>(&self, job: F) -> bool {
        let job_ref: &(dyn Fn(usize) + Sync + '_) = &job;
        // SAFETY: we erase the lifetime of `job_ref` to store it in the shared state. We wait
        // below until every worker has finished running it, so it outlives every use.
        let job_ptr: *const Job =
            unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync + '_), &'static Job>(job_ref) };
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.job = Some(job_ptr);
        state.remaining = self.workers.len();
        state.panicked = false;
        state.generation += 1;
        self.shared.start.notify_all();
        while state.remaining > 0 {
            state = self
                .shared
                .done
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        state.job = None;
        !state.panicked
    }

    /// `f(range)` on every worker for its chunk of `n` items ([`chunk`] with `align`): a fill, a
    /// check or a digest over arrays the workers first-touched that way. The results in worker
    /// order; `None` if any worker's `f` panicked.
    pub fn chunks<R: Send>(
        &self,
        n: usize,
        align: usize,
        f: impl Fn(std::ops::Range<usize>) -> R + Sync,
    ) -> Option<Vec<R>> {
        let threads = self.threads();
        let results: Vec<Mutex<Option<R>>> = (0..threads).map(|_| Mutex::new(None)).collect();
        let ok = self.run(|t| {
            let r = f(chunk(n, threads, t, align));
            *results[t].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        });
        if !ok {
            return None;
        }
        results
            .into_iter()
            .map(|r| r.into_inner().unwrap_or_else(|e| e.into_inner()))
            .collect()
    }

    /// Times `reps` repetitions of `kernel` on every worker at once, worker `t` on its own slice
    /// `out[t·per_worker .. (t+1)·per_worker]` (a register-resident kernel's results), and returns
    /// the seconds the whole took. A worker's panic is an internal error naming `what`.
    pub fn time_in_slices<T: Send>(
        &self,
        out: &mut [T],
        per_worker: usize,
        reps: u32,
        what: &str,
        kernel: impl Fn(&mut [T]) + Sync,
    ) -> crate::Result<f64> {
        assert!(
            out.len() >= self.threads() * per_worker,
            "one slice per worker"
        );
        let out = SharedPtr(out.as_mut_ptr());
        let start = std::time::Instant::now();
        let ok = self.run(|t| {
            // SAFETY: worker t owns out[t·per_worker .. (t+1)·per_worker], inside `out` (above).
            let mine = unsafe {
                std::slice::from_raw_parts_mut(out.get().add(t * per_worker), per_worker)
            };
            for _ in 0..reps {
                kernel(&mut *mine);
                std::hint::black_box(&mut *mine);
            }
        });
        let secs = start.elapsed().as_secs_f64();
        if !ok {
            return Err(crate::Error::Internal(format!(
                "a host worker panicked in the {what}"
            )));
        }
        Ok(secs)
    }
}

fn worker(shared: Arc<Shared>, index: usize, cpu: usize) {
    pin_to(cpu);
    let mut seen = 0u64;
    loop {
        let job = {
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            while state.generation == seen && !state.shutdown {
                state = shared.start.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            if state.shutdown {
                return;
            }
            seen = state.generation;
            state.job.expect("a new generation always carries a job")
        };
        // SAFETY: see `State::job`.
        let ok =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (*job)(index) }))
                .is_ok();
        let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if !ok {
            state.panicked = true;
        }
        state.remaining -= 1;
        if state.remaining == 0 {
            shared.done.notify_all();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            state.shutdown = true;
            self.shared.start.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// A sense-reversing spin barrier for the workers of one job: cheap enough to separate
/// repetitions of a memory-bound loop without charging a futex sleep to each one.
pub struct SpinBarrier {
    parties: usize,
    waiting: AtomicUsize,
    sense: AtomicBool,
}

impl SpinBarrier {
    pub fn new(parties: usize) -> Self {
        SpinBarrier {
            parties,
            waiting: AtomicUsize::new(0),
            sense: AtomicBool::new(false),
        }
    }

    /// Blocks until all `parties` threads have called `wait` for this round.
    pub fn wait(&self) {
        let sense = !self.sense.load(Ordering::Acquire);
        if self.waiting.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.waiting.store(0, Ordering::Relaxed);
            self.sense.store(sense, Ordering::Release);
        } else {
            let mut spins = 0u32;
            while self.sense.load(Ordering::Acquire) != sense {
                spins += 1;
                if spins < 1 << 14 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }
}

/// The half-open range of `n` items that worker `t` of `threads` owns, with boundaries rounded to
/// multiples of `align` items so each worker's slice starts on a cache line.
pub fn chunk(n: usize, threads: usize, t: usize, align: usize) -> std::ops::Range<usize> {
    let bound = |t: usize| {
        if t >= threads {
            n
        } else {
            ((n as u128 * t as u128 / threads as u128) as usize / align * align).min(n)
        }
    };
    bound(t)..bound(t + 1)
}

/// A raw pointer the pool's workers share: each one writes only its own range ([`chunk`]) or
/// only reads, and [`Pool::run`] joins them before the owner touches the data again.
pub struct SharedPtr<T>(pub *mut T);
// By hand: a derive would ask `T: Copy`, and a pointer copies whatever it points to.
impl<T> Clone for SharedPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedPtr<T> {}
// SAFETY: see the type's contract above; the pointee types are plain numbers.
unsafe impl<T> Send for SharedPtr<T> {}
unsafe impl<T> Sync for SharedPtr<T> {}

impl<T> SharedPtr<T> {
    /// The pointer. A method, not a field access, so closures capture the whole `Sync` wrapper.
    pub fn get(self) -> *mut T {
        self.0
    }
}

/// Allocates `n` elements and lets each worker of `pool` write (first-touch) its own chunk
/// ([`chunk`] with `align`) with `init`, so its pages are local to the worker that uses them.
pub fn first_touch<T: Copy>(
    pool: &Pool,
    n: usize,
    align: usize,
    init: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    first_touch_repeating(pool, n, align, n, init)
}

/// [`first_touch`] of an array whose elements repeat with `period` (copies of one array back to
/// back, as a GEMM's rotating weights are): `init` makes the first `period` elements, and the
/// rest are copied from them, each worker copying its own chunk. Where `init` costs more than a
/// copy (the AMX GEMM's tile layout of B), this makes a 1.9 GiB set of copies several times
/// faster than calling `init` for each element.
pub fn first_touch_repeating<T: Copy>(
    pool: &Pool,
    n: usize,
    align: usize,
    period: usize,
    init: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    touch(pool, SharedPtr(v.as_mut_ptr()), n, align, period, init);
    // SAFETY: the chunks cover 0..n, so every element was written by `touch`.
    unsafe { v.set_len(n) };
    v
}

/// Writes elements `0..n` at `ptr` (room for `n`), each worker its own chunk, after asking for
/// huge pages on them ([`advise_huge_pages`]). On the 2-vCPU Intel VM of 2026-12-03 (THP mode
/// `madvise`), against 4 KiB pages in 6 rounds of alternating order (ABBA): the STREAM read's
/// median +9-10 % (25.6 -> 27.9 GB/s f32, 25.9 -> 28.4 f64), the dot's +1-7 %, the 128 MiB L3
/// read +19 % (41.4 -> 49.1); the write -3 to -5 % there and +3 % in 8 more rounds (noise), the
/// triad, the L1 and the f32 GEMV at M = 1 unchanged (-4 to +1 %). In 4 more rounds, the f32
/// GEMM +6 % at 2048³ and +11 % at 256 x 4096 x 4096, the AMX GEMM +1-3 %.
///
/// Elements from `period` on repeat the first `period` ones (element `i` is element
/// `i % period`): they are copied once `init` has made the first `period`.
fn touch<T: Copy>(
    pool: &Pool,
    ptr: SharedPtr<T>,
    n: usize,
    align: usize,
    period: usize,
    init: impl Fn(usize) -> T + Sync,
) {
    advise_huge_pages(ptr.get().cast(), n.saturating_mul(std::mem::size_of::<T>()));
    let threads = pool.threads();
    // (a period of 0 repeats nothing)
    let first = if period == 0 { n } else { period.min(n) };
    let ok = pool.run(|t| {
        for i in chunk(first, threads, t, align) {
            // SAFETY: i < first <= n, within the room the caller gives, and chunks are disjoint.
            unsafe { ptr.get().add(i).write(init(i)) };
        }
    });
    assert!(ok, "initialising an array cannot panic");
    if first == n {
        return;
    }
    // The repeats, after the pool joined the workers that made the first period.
    let ok = pool.run(|t| {
        let mine = chunk(n - first, threads, t, align);
        let (mut i, end) = (first + mine.start, first + mine.end);
        while i < end {
            let from = i % first;
            let run = (end - i).min(first - from);
            // SAFETY: from + run <= first <= i, so the source (written above, read only now)
            // and this worker's destination i..i + run <= end <= n do not overlap, and the
            // workers' destinations are disjoint chunks.
            unsafe { std::ptr::copy_nonoverlapping(ptr.get().add(from), ptr.get().add(i), run) };
            i += run;
        }
    });
    assert!(ok, "copying an array cannot panic");
}

/// A transparent huge page on x86-64 and AArch64 with 4 KiB base pages: 2 MiB.
pub const HUGE_PAGE: usize = 2 << 20;

/// The smallest array that asks for huge pages: twice a huge page, so at least one whole page
/// lies inside it wherever it starts.
pub const HUGE_PAGES_FROM: usize = 2 * HUGE_PAGE;

/// Where Linux says which transparent-huge-page mode it runs.
pub const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// The selected mode in the text of [`THP_ENABLED`] (`always [madvise] never` gives `madvise`).
pub fn parse_thp_mode(text: &str) -> Option<&str> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
}

/// This machine's transparent-huge-page mode, read once; `None` where it has none (not Linux,
/// or a kernel built without them).
pub fn thp_mode() -> Option<&'static str> {
    static MODE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    MODE.get_or_init(|| {
        let text = std::fs::read_to_string(THP_ENABLED).ok()?;
        parse_thp_mode(&text).map(str::to_string)
    })
    .as_deref()
}

/// Whether transparent huge pages can be asked for under `mode` ([`thp_mode`]): `always` or
/// `madvise`.
pub fn thp_asks(mode: Option<&str>) -> bool {
    matches!(mode, Some("always" | "madvise"))
}

/// Whether an array of `bytes` asks for transparent huge pages: from [`HUGE_PAGES_FROM`], where
/// [`thp_asks`] holds. Every array the pool first-touches does, so a large working set measures
/// the memory rather than a page walk every 4 KiB.
pub fn huge_pages_asked(bytes: usize) -> bool {
    bytes >= HUGE_PAGES_FROM && thp_asks(thp_mode())
}

/// `", huge pages asked for"` where [`huge_pages_asked`] holds for `bytes`, for launch notes.
pub fn huge_pages_note(bytes: usize) -> &'static str {
    if huge_pages_asked(bytes) {
        ", huge pages asked for"
    } else {
        ""
    }
}

/// Asks Linux for transparent huge pages on the whole 2 MiB pages inside `[ptr, ptr + bytes)`,
/// memory not yet touched, where [`huge_pages_asked`] holds; whether it asked.
pub fn advise_huge_pages(ptr: *mut u8, bytes: usize) -> bool {
    if !huge_pages_asked(bytes) {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
        let end = (ptr as usize + bytes) & !(HUGE_PAGE - 1);
        if end <= start {
            return false;
        }
        // SAFETY: [start, end) lies inside the caller's allocation; MADV_HUGEPAGE only changes
        // how its pages are backed, never their contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = ptr;
        false
    }
}

/// An array at a chosen byte alignment: what the STREAM arrays are, as BabelStream allocates
/// its own (2 MiB aligned), so a vector never straddles two cache lines and every worker's
/// chunk starts on a line of its own. Derefs to a slice.
pub struct AlignedArray<T> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
    layout: std::alloc::Layout,
}

// SAFETY: it owns its elements as a `Vec` does.
unsafe impl<T: Send> Send for AlignedArray<T> {}
unsafe impl<T: Sync> Sync for AlignedArray<T> {}

impl<T> std::ops::Deref for AlignedArray<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: ptr holds len initialised elements (dangling and 0 for an empty array).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> std::ops::DerefMut for AlignedArray<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, and `&mut self` is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for AlignedArray<T> {
    fn drop(&mut self) {
        if self.layout.size() > 0 {
            // SAFETY: allocated with this layout in `first_touch_aligned`; the elements are
            // plain numbers (`Copy`), with nothing to drop.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), self.layout) };
        }
    }
}

/// Asks for the cache lines of `bytes` bytes from `p` (x86-64; elsewhere nothing).
#[inline(always)]
pub fn prefetch<T>(p: *const T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..bytes).step_by(64) {
        // SAFETY: a prefetch never faults, whatever the address.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (p as *const i8).wrapping_add(off),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes);
}

/// Where a host array of `bytes` starts: BabelStream's 2 MiB for arrays of at least that (a
/// huge page's boundary, [`HUGE_PAGE`]), a cache line below.
pub fn array_alignment(bytes: usize) -> usize {
    if bytes >= HUGE_PAGE {
        HUGE_PAGE
    } else {
        64
    }
}

/// [`first_touch`] into an [`AlignedArray`] whose first element sits at a multiple of
/// `byte_align` (a power of two). Returns `None` when the memory cannot be had.
pub fn first_touch_aligned<T: Copy>(
    pool: &Pool,
    n: usize,
    align: usize,
    byte_align: usize,
    init: impl Fn(usize) -> T + Sync,
) -> Option<AlignedArray<T>> {
    first_touch_aligned_repeating(pool, n, align, byte_align, n, init)
}

/// [`first_touch_aligned`] of an array whose elements repeat with `period`
/// ([`first_touch_repeating`]).
pub fn first_touch_aligned_repeating<T: Copy>(
    pool: &Pool,
    n: usize,
    align: usize,
    byte_align: usize,
    period: usize,
    init: impl Fn(usize) -> T + Sync,
) -> Option<AlignedArray<T>> {
    let size = n.checked_mul(std::mem::size_of::<T>())?;
    let layout =
        std::alloc::Layout::from_size_align(size, byte_align.max(std::mem::align_of::<T>()))
            .ok()?;
    let ptr = if size == 0 {
        // dangling, at the alignment asked for
        std::ptr::NonNull::new(std::ptr::without_provenance_mut(layout.align()))?
    } else {
        // SAFETY: the layout's size is not zero.
        std::ptr::NonNull::new(unsafe { std::alloc::alloc(layout) }.cast::<T>())?
    };
    let mut array = AlignedArray {
        ptr,
        len: 0,
        layout,
    };
    touch(pool, SharedPtr(array.ptr.as_ptr()), n, align, period, init);
    array.len = n;
    Some(array)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An aligned array starts where asked, holds what `init` wrote, and an empty one is empty.
    #[test]
    fn aligned_arrays_start_at_their_alignment() {
        let pool = Pool::new(vec![allowed_cpus()[0]]);
        for (n, byte_align) in [(0usize, 64usize), (1, 64), (1000, 4096), (1 << 19, 2 << 20)] {
            let a = first_touch_aligned(&pool, n, 16, byte_align, |i| i as u64 * 3).unwrap();
            assert_eq!(a.len(), n);
            assert_eq!(a.as_ptr() as usize % byte_align, 0, "n={n}");
            assert!(a.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
        }
        assert!(first_touch_aligned(&pool, usize::MAX, 16, 64, |_| 0u64).is_none());
    }

    /// A repeating array holds its first period again and again, whatever the workers' chunks,
    /// with `init` called for the first period only; a period of 0, or past the end, repeats
    /// nothing.
    #[test]
    fn repeating_arrays_copy_their_first_period() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let cpus = allowed_cpus();
        let two = Pool::new(vec![cpus[0], cpus[cpus.len() - 1]]);
        let one = Pool::new(vec![cpus[0]]);
        for pool in [&one, &two] {
            for (n, period) in [(0usize, 5usize), (1, 1), (10, 3), (1000, 7), (4096, 1024)] {
                let calls = AtomicUsize::new(0);
                let v = first_touch_repeating(pool, n, 16, period, |i| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    i as u32 * 2 + 1
                });
                assert_eq!(v.len(), n);
                let want: Vec<u32> = (0..n).map(|i| (i % period) as u32 * 2 + 1).collect();
                assert_eq!(v, want, "n={n} period={period}");
                assert_eq!(calls.into_inner(), period.min(n), "n={n} period={period}");
                let a =
                    first_touch_aligned_repeating(pool, n, 16, 4096, period, |i| i as u64).unwrap();
                assert!(a.iter().enumerate().all(|(i, &x)| x == (i % period) as u64));
            }
            for period in [0, 100] {
                let v = first_touch_repeating(pool, 50, 16, period, |i| i);
                assert_eq!(v, (0..50).collect::<Vec<_>>(), "period={period}");
            }
        }
    }

    /// The mode is the bracketed word, wherever it stands; text without one has none.
    #[test]
    fn thp_mode_is_the_bracketed_word() {
        assert_eq!(parse_thp_mode("always [madvise] never\n"), Some("madvise"));
        assert_eq!(parse_thp_mode("[always] madvise never"), Some("always"));
        assert_eq!(parse_thp_mode("always madvise [never]"), Some("never"));
        assert_eq!(parse_thp_mode("always madvise never"), None);
        assert_eq!(parse_thp_mode(""), None);
        assert!(thp_asks(Some("always")) && thp_asks(Some("madvise")));
        assert!(!thp_asks(Some("never")) && !thp_asks(None));
    }

    /// Where the OS runs transparent huge pages, a first-touched array of 16 MiB is asked for
    /// them and gets them (its mapping in /proc/self/smaps holds huge pages); one a byte under
    /// [`HUGE_PAGES_FROM`] asks for none. Skips, saying why, where the OS has none.
    #[test]
    fn large_arrays_get_huge_pages() {
        assert!(!huge_pages_asked(HUGE_PAGES_FROM - 1));
        let mode = thp_mode();
        if !thp_asks(mode) {
            eprintln!("skipped: transparent huge pages are not on here (mode {mode:?})");
            return;
        }
        assert!(huge_pages_asked(HUGE_PAGES_FROM));
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        let a = first_touch(&pool, 4 << 20, 16, |i| i as u32);
        let at = (a.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let (mut rss_kib, mut huge_kib, mut flags) = (None, None, None);
        let mut inside = false;
        for line in smaps.lines() {
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or("");
            let kib = words.next().and_then(|k| k.parse::<u64>().ok());
            if let Some((lo, hi)) = first.split_once('-').filter(|_| !first.ends_with(':')) {
                let (lo, hi) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16));
                inside = matches!((lo, hi), (Ok(lo), Ok(hi)) if lo <= at && at < hi);
            } else if inside && first == "Rss:" {
                rss_kib = kib;
            } else if inside && first == "AnonHugePages:" {
                huge_kib = kib;
            } else if inside && first == "VmFlags:" {
                flags = Some(
                    line.split_whitespace()
                        .skip(1)
                        .map(String::from)
                        .collect::<Vec<_>>(),
                );
            }
        }
        let rss_kib = rss_kib.expect("the array's mapping in /proc/self/smaps");
        if rss_kib == 0 {
            // qemu-user (.ci/aarch64) writes an smaps of its own, every figure 0, and takes
            // madvise as a hint it may ignore
            eprintln!("skipped: /proc/self/smaps shows none of the 16 MiB just written resident");
            return;
        }
        let flags = flags.expect("VmFlags in the array's mapping");
        assert!(
            flags.iter().any(|f| f == "hg"),
            "the array's mapping was not advised for huge pages (VmFlags {flags:?})"
        );
        let huge_kib = huge_kib.expect("AnonHugePages in the array's mapping");
        eprintln!("the kernel granted {huge_kib} KiB of huge pages under the 16 MiB array");
        assert!(a.iter().enumerate().all(|(i, &x)| x == i as u32));
    }

    #[test]
    fn chunks_partition_the_range() {
        for n in [0usize, 1, 15, 16, 17, 1000, 1 << 20] {
            for threads in 1..6 {
                let mut next = 0;
                for t in 0..threads {
                    let r = chunk(n, threads, t, 16);
                    assert_eq!(r.start, next, "n={n} threads={threads} t={t}");
                    assert!(r.start.is_multiple_of(16) || r.start == n);
                    next = r.end;
                }
                assert_eq!(next, n);
            }
        }
    }

    #[test]
    fn pool_runs_every_worker_each_time() {
        let pool = Pool::new(allowed_cpus().into_iter().take(3).collect());
        let threads = pool.threads();
        let hits = AtomicUsize::new(0);
        for round in 1..=50 {
            assert!(pool.run(|i| {
                assert!(i < threads);
                hits.fetch_add(1, Ordering::Relaxed);
            }));
            assert_eq!(hits.load(Ordering::Relaxed), round * threads);
        }
    }

    #[test]
    fn pool_survives_a_panicking_job() {
        let pool = Pool::new(vec![allowed_cpus()[0]; 2]);
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let ok = pool.run(|i| {
            if i == 1 {
                panic!("boom");
            }
        });
        std::panic::set_hook(prev);
        assert!(!ok);
        assert!(pool.run(|_| {}));
    }

    #[test]
    fn barrier_orders_rounds() {
        let pool = Pool::new(vec![allowed_cpus()[0]; 3]);
        let barrier = SpinBarrier::new(3);
        let counter = AtomicUsize::new(0);
        assert!(pool.run(|_| {
            for round in 0..100 {
                counter.fetch_add(1, Ordering::AcqRel);
                barrier.wait();
                // every worker has incremented for this round before anyone goes on
                assert!(counter.load(Ordering::Acquire) >= (round + 1) * 3);
                barrier.wait();
            }
        }));
        assert_eq!(counter.load(Ordering::Relaxed), 300);
    }
}
