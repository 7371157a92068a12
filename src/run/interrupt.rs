//! Ctrl-C (SIGINT), SIGTERM and SIGHUP during `run`: the case that runs finishes, the cases
//! left are not started, and what was measured is reported and written as at the end of a run
//! (the table, the calibration JSON and the roofline SVG beside the CSV), then `run` exits
//! [`EXIT_INTERRUPTED`]. A second signal ends the process at once; the rows written stay, each
//! flushed as it was written. A signal the process was started with ignored (`nohup` ignores
//! SIGHUP, a shell's background job SIGINT) stays ignored. `watch` has its own handler
//! ([`install_for_watch`]): the first signal ends the watch after its sample.
//!
//! A GPU is measured in worker processes ([`crate::run::worker`]). A terminal's Ctrl-C reaches them
//! as well as `run`, but a signal sent to `run` alone (`kill`, `timeout`, a scheduler's SIGTERM)
//! does not: so `run` passes its first one on to the workers alive ([`Worker`]), as SIGUSR1,
//! which a worker always takes. A worker only notes a request, finishes its case and ends; it
//! never ends at once, so the row of the case it runs still reaches `run`.
//!
//! By hand rather than through a crate: the handler must leave ignored signals ignored and
//! reach the workers from inside the handler, where only atomics and async-signal-safe calls
//! (`write`, `kill`, `_exit`) may be used.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Exit code of a run stopped by a signal (128 + SIGINT, as a shell reports it).
pub const EXIT_INTERRUPTED: i32 = 130;

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Whether this process is `run` (a second signal ends it, the first reaches the workers)
/// rather than a worker.
static RUN: AtomicBool = AtomicBool::new(false);

/// Whether this process is `watch`: the first signal ends the watch after the sample it takes
/// (the timeline holds every sample already), a second ends the process at once.
static WATCH: AtomicBool = AtomicBool::new(false);

/// The worker processes alive now (0: a free slot), to pass a request on to. One per GPU
/// measured at once; a worker that finds no slot still gets a terminal's Ctrl-C.
static WORKERS: [AtomicU32; 64] = [const { AtomicU32::new(0) }; 64];

/// Whether a stop was requested: true from the first signal on.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Writes `text` to stderr from a signal handler (no allocation, no lock).
fn say(text: &str) {
    // SAFETY: `write` is async-signal-safe; the buffer lives for the call.
    let _ = unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
}

extern "C" fn on_signal(_: libc::c_int) {
    let again = REQUESTED.swap(true, Ordering::SeqCst);
    if WATCH.load(Ordering::SeqCst) {
        if again {
            say("\ninterrupted again: stopping at once; the timeline written so far is kept\n");
            // SAFETY: ends the process at once, as asked; every sample is already on disk.
            unsafe { libc::_exit(EXIT_INTERRUPTED) };
        }
        return;
    }
    if !RUN.load(Ordering::SeqCst) {
        return;
    }
    if again {
        say("\ninterrupted again: stopping at once; the rows written so far are kept\n");
        // SAFETY: ends the process at once, as asked; a worker's kernel may still run, and
        // waiting for the driver's teardown is what the user just declined.
        unsafe { libc::_exit(EXIT_INTERRUPTED) };
    }
    say(
        "\ninterrupted: finishing the case that runs, then writing what was measured \
         (interrupt again to stop at once)\n",
    );
    for slot in &WORKERS {
        let pid = slot.load(Ordering::SeqCst);
        if pid != 0 {
            // SAFETY: `kill` is async-signal-safe; the pid is a child of ours not yet reaped
            // (its slot is cleared before it is), so it names no other process.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGUSR1) };
        }
    }
}

/// Sets [`on_signal`] for `signal`, unless the process was started with it ignored (`nohup`'s
/// SIGHUP) and `always` is false.
fn handle(signal: libc::c_int, always: bool) {
    // SAFETY: plain sigaction calls on zero-initialised structs; the handler only touches
    // atomics and calls async-signal-safe functions.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
            return;
        }
        if old.sa_sigaction == libc::SIG_IGN && !always {
            return;
        }
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        new.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut new.sa_mask);
        libc::sigaction(signal, &new, std::ptr::null_mut());
    }
}

/// `run`'s handler: the first signal asks every worker to stop after its case and says so on
/// stderr; a second ends the process at once.
pub fn install_for_run() {
    RUN.store(true, Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        handle(signal, false);
    }
}

/// `watch`'s handler: the first signal ends the watch after its current sample (the command
/// says so, and sums up what it saw); a second ends the process at once. A job `watch` started
/// (`watch -- CMD`) shares the terminal's Ctrl-C, and is left to it.
pub fn install_for_watch() {
    WATCH.store(true, Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        handle(signal, false);
    }
}

/// A worker's handler: notes the request and nothing else; the worker ends after its case.
/// SIGUSR1 is `run`'s own request, taken whatever the worker inherited.
pub fn install_for_worker() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        handle(signal, false);
    }
    handle(libc::SIGUSR1, true);
}

/// A worker process registered while it lives, so that a request reaches it; drop it once the
/// process is reaped. Where the request came before it was registered, it is asked at once.
pub struct Worker(Option<&'static AtomicU32>);

impl Worker {
    pub fn new(pid: u32) -> Worker {
        let slot = WORKERS.iter().find(|s| {
            s.compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        if requested() {
            // SAFETY: a plain signal to our own child, not yet reaped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGUSR1) };
        }
        Worker(slot)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(slot) = self.0 {
            slot.store(0, Ordering::SeqCst);
        }
    }
}
