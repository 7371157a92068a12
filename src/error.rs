//! The one error type of the library.
//!
//! Every variant renders as a single line that says what happened and what to do next, because
//! `main` prints it as `error: …` and exits non-zero. Driver errors carry the driver's own
//! message. Nothing here panics or exits: the caller decides.

use std::path::PathBuf;

/// Everything that can go wrong in roofprobe, each with its remedy in the message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No CUDA driver library could be loaded.
    #[error("no CUDA driver found ({0}); install the NVIDIA driver, or measure the host CPU with --device host")]
    NoDriver(String),

    /// The driver loaded but refused to work (stub driver, no device node, driver too old).
    #[error("the CUDA driver is present but failed during {during}: {message}; check `nvidia-smi`, or use --device host")]
    Driver { during: String, message: String },

    /// An earlier error left a device unusable for the rest of this process (a kernel faulted,
    /// and CUDA keeps the context in that error state, or it never finished).
    #[error("not run: {device} is unusable since an earlier error ({cause}); run roofprobe again (a new process) to measure it, and report the error if it repeats")]
    DeviceLost { device: String, cause: String },

    /// A worker process measuring a device failed; its own message, which says what to do.
    #[error("{0}")]
    Worker(String),

    /// A device was asked for that does not exist.
    #[error("no such device `{asked}`: {available}; run `roofprobe devices` to list them")]
    NoSuchDevice { asked: String, available: String },

    /// The data for a case does not fit in the memory that is free.
    #[error(
        "{case} needs {} ({needed_bytes} bytes) but only {} of {device} memory is free ({free_bytes} bytes); pass a smaller --size (for the cases it sizes), or free memory on {device}",
        crate::units::bytes(*needed_bytes),
        crate::units::bytes(*free_bytes)
    )]
    OutOfMemory {
        case: String,
        device: String,
        needed_bytes: u64,
        free_bytes: u64,
    },

    /// A file could not be read or written; what to do, by the kind of error ([`io_remedy`]).
    #[error("{path}: {source}{}", io_remedy(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A results file (CSV or JSON) is malformed, truncated, foreign or of another schema.
    #[error("{path}:{line}: {message}")]
    Parse {
        path: PathBuf,
        line: u64,
        message: String,
    },

    /// The user asked for something that makes no sense (bad argument value, unknown name).
    #[error("{0}")]
    Usage(String),

    /// A case that cannot run here for a reason that is no fault (a reference library that is
    /// not installed): its row says `skipped: <why>`, and the run's exit code does not count it.
    #[error("skipped: {0}")]
    Skipped(String),

    /// A signal stopped `run` before it measured anything: nothing was written.
    #[error("interrupted before {0} measured a case; nothing was written")]
    Interrupted(String),

    /// A figure an output would hold is not finite (NaN, ±inf), derived from inputs at the edge
    /// of their bounds: nothing is written or printed, and the figure is named.
    #[error("{output}: `{figure}` would be {value}, not a finite figure (the inputs' figures or the arguments are at the edge of what they may be); nothing was written")]
    NotFinite {
        output: String,
        figure: String,
        value: f64,
    },

    /// A kernel or tool failed in a way that is not the user's input (internal invariant).
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A parse error at `line` (1-based) of `path`.
    pub fn parse(path: impl Into<PathBuf>, line: u64, message: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }
}

impl From<roofprobe_calibration::Error> for Error {
    fn from(e: roofprobe_calibration::Error) -> Self {
        match e {
            roofprobe_calibration::Error::Io { path, source } => Error::Io { path, source },
            roofprobe_calibration::Error::Parse {
                path,
                line,
                message,
            } => Error::Parse {
                path,
                line,
                message,
            },
        }
    }
}

/// What to do about an I/O error, by its kind, as `; …` to follow the OS's message (empty where
/// the message says it all).
pub fn io_remedy(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => {
            "; free some space there, or write somewhere else (another folder with -o)"
        }
        Some(libc::EROFS) => "; that file system is read-only: choose a writable folder",
        Some(libc::EISDIR) => "; that is a folder: name a file",
        Some(libc::ENOTDIR) => "; part of that path is a file, not a folder: name a folder",
        Some(libc::EACCES | libc::EPERM) => {
            "; choose a folder you may write to (or read from), or change its permissions"
        }
        Some(libc::EFBIG) => {
            "; the file reached the largest size allowed here (`ulimit -f`): raise the limit, or \
             write somewhere else"
        }
        Some(libc::ELOOP) => "; a loop of symbolic links: name the file itself",
        Some(libc::EIO) => "; the device failed: check the disk (`dmesg`), or write elsewhere",
        Some(libc::ENOENT) => "; check the name, and that its folder exists",
        _ => "",
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The bug: `path: No space left on device (os error 28)` and nothing more. Now each kind
    /// says what to do.
    #[test]
    fn io_errors_say_what_to_do() {
        let said = |code: i32| Error::io("/x", std::io::Error::from_raw_os_error(code)).to_string();
        let full = said(libc::ENOSPC);
        assert!(full.starts_with("/x: No space left on device"), "{full}");
        assert!(
            full.contains("free some space") && full.contains("-o"),
            "{full}"
        );
        assert!(said(libc::EROFS).contains("choose a writable folder"));
        assert!(said(libc::EISDIR).contains("name a file"));
        assert!(said(libc::ENOTDIR).contains("name a folder"));
        assert!(said(libc::EACCES).contains("permissions"));
        assert!(said(libc::EFBIG).contains("ulimit -f"));
        let plain = Error::io("/x", std::io::Error::other("odd")).to_string();
        assert_eq!(plain, "/x: odd");
    }
}
