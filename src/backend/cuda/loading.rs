//! Loading NVIDIA's shared libraries (the driver's libcuda, NVML, cuBLAS) with a crash inside
//! the loader turned into one line.
//!
//! A damaged or truncated library on the loader's path does not make `dlopen` fail: the loader
//! maps the file and touches pages past its end, and the process dies of `SIGBUS` (or `SIGSEGV`
//! on a mangled header) before any error can be returned: `roofprobe devices` printed `Bus
//! error (core dumped)` for a `libcuda.so.1` cut to half its size. Nothing can be recovered
//! after such a fault (the loader's lock is held), so [`guarded`] installs, for the duration
//! of one load only, handlers that write one line saying which library it was and what to do,
//! and end the process with exit code 1: what every other error does, where the shell would
//! otherwise say `Bus error`. The driver and NVML are loaded before any case runs (when devices
//! are listed or one is opened). cuBLAS is loaded by `devices`, and in a run when its first row
//! is prepared, in the GPU worker ([`crate::run::worker`]): a worker that ends there costs that row,
//! which says so, and the run goes on in a fresh one with the rows written kept. A worker has
//! the handler also tell its parent, on stdout, what crashed ([`report_crashes`]), so that the
//! row says why, and a cuBLAS that crashed one worker is not loaded by the next.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The line the handler writes: set before the handlers are installed, for one load at a time.
static LINE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static LINE_LEN: AtomicUsize = AtomicUsize::new(0);

/// What the handler also writes on stdout, in a process that reports crashes there (a GPU
/// worker, whose parent reads its stdout: [`report_crashes`]); null elsewhere.
static REPORT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static REPORT_LEN: AtomicUsize = AtomicUsize::new(0);

/// How this process reports a crash on stdout: the crash's [`crash_cause`] to the text written
/// there.
static REPORTER: OnceLock<fn(&str) -> String> = OnceLock::new();

/// One guarded load at a time (the handlers and the line are the process's).
static LOADING: Mutex<()> = Mutex::new(());

/// The signals a load that crashes dies of.
const FAULTS: [libc::c_int; 2] = [libc::SIGBUS, libc::SIGSEGV];

/// Writes the line and ends the process. Only async-signal-safe calls: `write` and `_exit`.
extern "C" fn on_fault(_signal: libc::c_int) {
    let line = LINE.load(Ordering::SeqCst);
    let len = LINE_LEN.load(Ordering::SeqCst);
    // SAFETY: while this handler is installed, `line` and the report point to the bytes of the
    // live `Installed`'s line and report (or are null).
    unsafe {
        if !line.is_null() {
            libc::write(2, line.cast(), len);
        }
        let report = REPORT.load(Ordering::SeqCst);
        if !report.is_null() {
            libc::write(1, report.cast(), REPORT_LEN.load(Ordering::SeqCst));
        }
        libc::_exit(1);
    }
}

/// From now on a crash while loading is also written on stdout, as `report(cause)` says (once
/// per process; a later call changes nothing): a GPU worker's parent then learns why the worker
/// ended, which the crash's row says ([`crate::run::worker`]).
pub fn report_crashes(report: fn(&str) -> String) {
    let _ = REPORTER.set(report);
}

/// What a crash while loading `library` says: what happened and `remedy`.
pub fn crash_cause(library: &str, remedy: &str) -> String {
    format!(
        "loading {library} crashed the loader (a damaged or truncated file on the loader's \
         path?): {remedy}"
    )
}

/// `cause` as the one line an error prints (a crash's: [`crash_cause`]).
fn error_line(cause: &str) -> String {
    format!("error: {cause}\n")
}

/// Runs `load` (a `dlopen` of `library`, and what it runs) with `SIGBUS` and `SIGSEGV` ending
/// the process with one line, `error: ` and [`crash_cause`]`(library, remedy)`, and exit code 1;
/// the handlers before it are put back after it.
pub fn guarded<T>(library: &str, remedy: &str, load: impl FnOnce() -> T) -> T {
    let _one = LOADING.lock().unwrap_or_else(|e| e.into_inner());
    with_handlers(library, remedy, load)
}

/// [`guarded`] once [`LOADING`] is held.
fn with_handlers<T>(library: &str, remedy: &str, load: impl FnOnce() -> T) -> T {
    let cause = crash_cause(library, remedy);
    let report = REPORTER.get().map(|report| report(&cause));
    let _installed = Installed::new(error_line(&cause), report);
    load()
}

/// Our handlers, installed for as long as it lives, and the line they write: dropping it (after
/// the load, or when the load unwinds) puts the handlers before it back, and only then lets go
/// of the line, so a load costs no memory after it (each one leaked its line before).
struct Installed {
    old: [libc::sigaction; 2],
    /// What [`LINE`] points to while the handlers are ours (dropped after `drop` below).
    _line: String,
    /// What [`REPORT`] points to meanwhile, where this process reports crashes.
    _report: Option<String>,
}

impl Installed {
    fn new(line: String, report: Option<String>) -> Self {
        LINE_LEN.store(line.len(), Ordering::SeqCst);
        LINE.store(line.as_ptr().cast_mut(), Ordering::SeqCst);
        if let Some(r) = &report {
            REPORT_LEN.store(r.len(), Ordering::SeqCst);
            REPORT.store(r.as_ptr().cast_mut(), Ordering::SeqCst);
        }
        // SAFETY: `sigaction` with a zeroed action but for the handler, flags and an empty
        // mask; the old actions are kept and restored in `drop`.
        let mut old: [libc::sigaction; 2] = unsafe { std::mem::zeroed() };
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fault as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // on the alternate stack Rust gives its threads, where there is one
            action.sa_flags = libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            for (signal, old) in FAULTS.iter().zip(old.iter_mut()) {
                libc::sigaction(*signal, &action, old);
            }
        }
        Installed {
            old,
            _line: line,
            _report: report,
        }
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        // SAFETY: puts back the actions saved in `new`.
        unsafe {
            for (signal, old) in FAULTS.iter().zip(self.old.iter()) {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
        // No handler of ours can start now: the line may go.
        LINE.store(std::ptr::null_mut(), Ordering::SeqCst);
        LINE_LEN.store(0, Ordering::SeqCst);
        REPORT.store(std::ptr::null_mut(), Ordering::SeqCst);
        REPORT_LEN.store(0, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line is `error: ` and the cause, which names the library and the remedy, on one line
    /// ending in a newline.
    #[test]
    fn the_crash_line_is_one_line() {
        let cause = crash_cause("libcuda", "reinstall the NVIDIA driver");
        let line = error_line(&cause);
        assert_eq!(line, format!("error: {cause}\n"));
        assert!(line.starts_with("error: loading libcuda crashed the loader"));
        assert!(line.ends_with(": reinstall the NVIDIA driver\n"));
        assert_eq!(line.matches('\n').count(), 1);
    }

    /// A load that does not crash returns its value, the handlers are ours while it runs, and
    /// those before are put back (read with the lock held: other tests load libraries too).
    #[test]
    fn a_load_returns_and_the_handlers_are_put_back() {
        let _one = LOADING.lock().unwrap_or_else(|e| e.into_inner());
        let before = FAULTS.map(handler);
        let ours = on_fault as extern "C" fn(libc::c_int) as libc::sighandler_t;
        let during = with_handlers("nothing", "nothing", || FAULTS.map(handler));
        assert_eq!(during, [ours; 2]);
        assert_eq!(FAULTS.map(handler), before);
        assert!(before.iter().all(|h| *h != ours));
    }

    /// The line lives only while the handlers are ours: none is kept after a load, and a load
    /// that unwinds puts the handlers back too.
    #[test]
    fn the_line_and_the_handlers_go_with_the_load() {
        let _one = LOADING.lock().unwrap_or_else(|e| e.into_inner());
        let before = FAULTS.map(handler);
        let during = with_handlers("nothing", "nothing", || LINE_LEN.load(Ordering::SeqCst));
        assert_eq!(during, error_line(&crash_cause("nothing", "nothing")).len());
        assert!(LINE.load(Ordering::SeqCst).is_null());
        assert_eq!(LINE_LEN.load(Ordering::SeqCst), 0);
        let unwound = std::panic::catch_unwind(|| {
            with_handlers("nothing", "nothing", || panic!("the load failed"))
        });
        assert!(unwound.is_err());
        assert_eq!(FAULTS.map(handler), before);
        assert!(LINE.load(Ordering::SeqCst).is_null());
    }

    /// Where a process reports crashes (a GPU worker), the report is ready while a load runs,
    /// with the library and the line, and let go after it.
    #[test]
    fn a_report_is_ready_while_a_load_runs() {
        let _one = LOADING.lock().unwrap_or_else(|e| e.into_inner());
        report_crashes(|cause| format!("crashed | {cause}\n"));
        let during = with_handlers("libx", "fix it", || {
            let (at, len) = (
                REPORT.load(Ordering::SeqCst),
                REPORT_LEN.load(Ordering::SeqCst),
            );
            // SAFETY: the live `Installed`'s report, `len` bytes.
            String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(at, len) }).into_owned()
        });
        assert_eq!(
            during,
            format!("crashed | {}\n", crash_cause("libx", "fix it"))
        );
        assert!(REPORT.load(Ordering::SeqCst).is_null());
        assert_eq!(REPORT_LEN.load(Ordering::SeqCst), 0);
    }

    fn handler(signal: libc::c_int) -> libc::sighandler_t {
        // SAFETY: reads the current action only.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            old.sa_sigaction
        }
    }
}
