//! Write guards on the arena's inputs: an input array is made read-only once its values are
//! written, so a kernel that writes where it should only read is caught by the page fault it
//! takes, not by a pass over the array after every case.
//!
//! A case's check used to take the digest of each of its inputs ([`super::arena::digest`]):
//! one more read of every input, every case, to show that the kernel left them as they were
//! written. On this project's 2-vCPU VM (2026-12-07) those digests were 3.7 s of a 58 s
//! default run: the 1.9 GiB of a batch-sweep GEMM's copies of B at each of its points (about
//! 0.26 s a point for the AMX GEMM's bf16 words), the sweep's and the STREAM cases' inputs.
//!
//! A [`Guard`] makes its pages read-only (`mprotect`) and names their range in a table that the
//! process's SIGSEGV handler reads. A write to them faults; the handler marks the guard
//! [`tripped`](Guard::tripped), makes the pages writable again and returns, so the write goes
//! through as it would have, and the case's check says the input changed. A fault anywhere else
//! goes on to the handler that was there before (the standard library's, which reports a stack
//! overflow), or to the default action. A guard watches more than a digest did: a write of the
//! value already there trips it too.
//!
//! Guards exist on Linux, for whole pages: where one cannot be had (another OS, an array that
//! is not page-aligned, no slot free, `mprotect` refused), the arena takes the digest as before.

/// The word a case's check uses for a changed input where the arena guards its inputs on this
/// OS ("guard"), or digests them ("digest"): for the tests of the checks.
#[cfg(test)]
pub(crate) const CAUGHT_BY: &str = if cfg!(any(target_os = "linux", target_os = "android")) {
    "guard"
} else {
    "digest"
};

/// Asserts that a check's `verdict` on `case` found an input changed, by `how` (for the tests of
/// the checks: [`CAUGHT_BY`], or "digest").
#[cfg(test)]
pub(crate) fn assert_caught(verdict: &crate::cases::Verdict, how: &str, case: &str) {
    assert!(
        !verdict.valid && verdict.detail.contains(how),
        "{case}: {}",
        verdict.detail
    );
}

/// A range of pages made read-only, watched for writes until it is dropped (which makes the
/// pages writable again).
pub struct Guard {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    slot: usize,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    start: usize,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    len: usize,
}

#[cfg(any(target_os = "linux", target_os = "android"))]
pub use imp::may_watch;

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use super::Guard;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::OnceLock;

    /// Ranges watched at once, across the process (a run holds a few inputs; tests hold more,
    /// and past this many an input falls back to its digest).
    const SLOTS: usize = 64;

    /// One watched range. A slot is claimed by its `len` (0 = free) and active once its `start`
    /// is set; the handler reads only active slots.
    struct Slot {
        start: AtomicUsize,
        len: AtomicUsize,
        tripped: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)] // each array element its own atomics
    const FREE: Slot = Slot {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        tripped: AtomicBool::new(false),
    };
    static TABLE: [Slot; SLOTS] = [FREE; SLOTS];

    /// The SIGSEGV action in place before ours, to which faults outside every guard go.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
    /// Whether our handler is in place.
    static INSTALLED: OnceLock<bool> = OnceLock::new();

    fn page() -> usize {
        // SAFETY: sysconf has no preconditions.
        match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            p if p > 0 => p as usize,
            _ => 4096,
        }
    }

    /// Puts the handler in place, once; whether it is.
    fn install() -> bool {
        *INSTALLED.get_or_init(|| {
            // SAFETY: sigaction with a zeroed struct as the place to read the old action into,
            // then with one that names `on_fault` (SA_SIGINFO, so it takes three arguments)
            // and an empty mask.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut old) != 0 {
                    return false;
                }
                let _ = PREVIOUS.set(old);
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_fault as *const () as usize;
                // on the thread's alternate stack where it has one (the standard library's
                // threads do), so a stack overflow still reaches its report
                new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(libc::SIGSEGV, &new, std::ptr::null_mut()) == 0
            }
        })
    }

    /// The SIGSEGV handler: a fault in a guarded range trips its guard and lifts it (the write
    /// is then made again, and succeeds); any other goes to the action before ours.
    extern "C" fn on_fault(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        ctx: *mut libc::c_void,
    ) {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
        let at = unsafe { (*info).si_addr() } as usize;
        for slot in &TABLE {
            let start = slot.start.load(Ordering::Acquire);
            let len = slot.len.load(Ordering::Acquire);
            if start != 0 && at.wrapping_sub(start) < len {
                slot.tripped.store(true, Ordering::Release);
                // SAFETY: the range is the guard's own pages, mapped while it is active;
                // mprotect is a plain system call, safe in a signal handler.
                unsafe {
                    libc::mprotect(
                        start as *mut libc::c_void,
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                    )
                };
                return;
            }
        }
        let previous = PREVIOUS.get().map(|p| (p.sa_sigaction, p.sa_flags));
        match previous {
            Some((action, flags)) if action != libc::SIG_DFL && action != libc::SIG_IGN => {
                // SAFETY: `action` is the handler that was in place, of the shape its flags
                // say; it is called as the kernel would have called it.
                unsafe {
                    if flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                            std::mem::transmute(action);
                        f(signal, info, ctx);
                    } else {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(action);
                        f(signal);
                    }
                }
            }
            _ => {
                // The default action: put it back, and the fault, taken again on return, ends
                // the process as it would have without us.
                // SAFETY: sigaction with a zeroed struct naming SIG_DFL.
                unsafe {
                    let mut default: libc::sigaction = std::mem::zeroed();
                    default.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(libc::SIGSEGV, &default, std::ptr::null_mut());
                }
            }
        }
    }

    /// Whether the `len` bytes from `start` are whole pages that a guard may watch, with the
    /// handler in place (a slot or `mprotect` may still be refused).
    pub fn may_watch(start: *mut u8, len: usize) -> bool {
        let (start, page) = (start as usize, page());
        start != 0
            && len != 0
            && start.is_multiple_of(page)
            && len.is_multiple_of(page)
            && install()
    }

    impl Guard {
        /// Makes the `len` bytes from `start` read-only and watches them; `None` where they are
        /// not whole pages, or the handler, a slot or `mprotect` cannot be had.
        ///
        /// # Safety
        /// The range is memory of the caller's own, mapped until the guard is dropped, which no
        /// one else writes while it is watched (a write trips the guard, as it is meant to).
        pub unsafe fn new(start: *mut u8, len: usize) -> Option<Guard> {
            if !may_watch(start, len) {
                return None;
            }
            let start = start as usize;
            let slot = TABLE.iter().position(|s| {
                s.len
                    .compare_exchange(0, len, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            })?;
            TABLE[slot].tripped.store(false, Ordering::Release);
            TABLE[slot].start.store(start, Ordering::Release);
            let guard = Guard { slot, start, len };
            // SAFETY: the caller's range, whole pages.
            let protected =
                unsafe { libc::mprotect(start as *mut libc::c_void, len, libc::PROT_READ) } == 0;
            // (dropping a guard that could not protect frees its slot, and mprotects nothing
            // that was not already writable)
            protected.then_some(guard)
        }

        /// Whether anything wrote to the range since it was guarded.
        pub fn tripped(&self) -> bool {
            TABLE[self.slot].tripped.load(Ordering::Acquire)
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: the guard's own pages, still mapped (its owner drops it first).
            let lifted = unsafe {
                libc::mprotect(
                    self.start as *mut libc::c_void,
                    self.len,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            } == 0;
            if !lifted {
                // Left active: the next write to the range, whoever makes it, faults into the
                // handler, which lifts it then.
                return;
            }
            let slot = &TABLE[self.slot];
            slot.start.store(0, Ordering::Release);
            slot.len.store(0, Ordering::Release);
        }
    }
}

/// No guards on this OS.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn may_watch(_start: *mut u8, _len: usize) -> bool {
    false
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
impl Guard {
    /// No guards on this OS: the arena takes digests instead.
    ///
    /// # Safety
    /// None needed; it does nothing.
    pub unsafe fn new(_start: *mut u8, _len: usize) -> Option<Guard> {
        None
    }

    pub fn tripped(&self) -> bool {
        false
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::*;
    use std::alloc::{alloc, dealloc, Layout};

    /// Whole pages of our own, freed on drop.
    struct Pages(*mut u8, Layout);
    impl Pages {
        fn new(bytes: usize) -> Pages {
            let layout = Layout::from_size_align(bytes, 1 << 21).unwrap();
            // SAFETY: a non-zero size.
            let ptr = unsafe { alloc(layout) };
            assert!(!ptr.is_null());
            // SAFETY: ours, `bytes` long.
            unsafe { ptr.write_bytes(7, bytes) };
            Pages(ptr, layout)
        }
    }
    impl Drop for Pages {
        fn drop(&mut self) {
            // SAFETY: allocated with this layout.
            unsafe { dealloc(self.0, self.1) };
        }
    }

    /// A guard stays quiet while its pages are only read; one write anywhere in them (the first
    /// byte, the last, one in the middle, from another thread) trips it and goes through; a
    /// dropped guard leaves the pages writable; a range that is not whole pages gets no guard.
    #[test]
    fn a_write_trips_the_guard_and_goes_through() {
        let bytes = 4 << 20;
        let pages = Pages::new(bytes);
        for at in [0, bytes / 2 + 12_345, bytes - 1] {
            // SAFETY: our pages, which nothing else writes.
            let guard = unsafe { Guard::new(pages.0, bytes) }.expect("a guard on whole pages");
            // SAFETY: within the pages (read-only now: reads are allowed).
            let sum: u64 = (0..bytes)
                .step_by(4096)
                .map(|i| u64::from(unsafe { pages.0.add(i).read_volatile() }))
                .sum();
            assert_eq!(sum, 7 * (bytes as u64 / 4096));
            assert!(!guard.tripped(), "reads do not trip it");
            let p = pages.0 as usize;
            std::thread::spawn(move || {
                // SAFETY: within the pages; the guard lets the write through.
                unsafe { (p as *mut u8).add(at).write_volatile(9) }
            })
            .join()
            .unwrap();
            assert!(guard.tripped(), "a write at {at} trips it");
            // SAFETY: within the pages.
            assert_eq!(
                unsafe { pages.0.add(at).read_volatile() },
                9,
                "and went through"
            );
            drop(guard);
            // SAFETY: within the pages, writable again.
            unsafe { pages.0.add(at).write_volatile(7) };
        }
        // SAFETY: within the pages, writable again since the last guard was dropped.
        unsafe { pages.0.write_volatile(1) };
        // SAFETY: (misaligned ranges: never protected)
        assert!(unsafe { Guard::new(pages.0.add(1), 4096) }.is_none());
        assert!(unsafe { Guard::new(pages.0, 100) }.is_none());
    }

    /// What the guards' handler must pass on: run in a child process of this test binary
    /// (`ROOFPROBE_GUARD_CHILD` names the case), each must end that process as it would have
    /// ended without guards: a write to a read-only page of no guard with SIGSEGV, a stack
    /// overflow with the standard library's report.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn faults_outside_every_guard_end_the_process_as_before() {
        use std::os::unix::process::ExitStatusExt;
        if let Ok(case) = std::env::var("ROOFPROBE_GUARD_CHILD") {
            child(&case);
        }
        for (case, signal, said) in [
            ("write", libc::SIGSEGV, ""),
            ("overflow", libc::SIGABRT, "has overflowed its stack"),
        ] {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "backend::host::guard::tests::faults_outside_every_guard_end_the_process_as_before",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("ROOFPROBE_GUARD_CHILD", case)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.signal(), Some(signal), "{case}: {stderr}");
            assert!(stderr.contains(said), "{case}: {stderr}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn child(case: &str) -> ! {
        // a guard first, so our handler is in place, on pages the faults below are not in
        let bytes = 2 << 20;
        let pages = Pages::new(bytes);
        // SAFETY: our pages.
        let _guard = unsafe { Guard::new(pages.0, bytes) }.unwrap();
        match case {
            "write" => {
                let other = Pages::new(bytes);
                // SAFETY: our pages, made read-only with no guard watching them, and written:
                // the fault this test wants.
                unsafe {
                    libc::mprotect(other.0.cast(), bytes, libc::PROT_READ);
                    other.0.add(5).write_volatile(1);
                }
            }
            _ => {
                fn deep(n: u64) -> u64 {
                    if n == u64::MAX {
                        return 0; // never: a stack runs out long before
                    }
                    let pad = std::hint::black_box([n; 512]);
                    deep(n + 1) + pad[(n % 512) as usize]
                }
                std::thread::spawn(|| deep(0)).join().ok();
            }
        }
        std::process::exit(0)
    }
}
