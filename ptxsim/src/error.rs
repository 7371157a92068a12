//! The one error type of ptxsim: every failure names what went wrong and, wherever a source
//! line is involved, that line, so that a kernel that is half-understood or misbehaves can be
//! found from the message alone.

use std::fmt;

/// What went wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The PTX text is malformed (bad token, missing operand, unknown register name, ...).
    Parse { line: u32, message: String },
    /// The PTX is well formed but uses an instruction, modifier, type or directive that ptxsim
    /// does not implement. A kernel must never pass by being half-understood, so this is an
    /// error, never a silent no-op.
    Unsupported { line: u32, what: String },
    /// The launch itself is wrong: unknown entry, wrong argument count or types, bad
    /// dimensions, too much shared memory.
    Launch(String),
    /// A thread did something a GPU would fault on or leave undefined: an out-of-bounds or
    /// misaligned access, a shared-memory race, a warp-collective instruction executed by a
    /// partial warp, an infinite loop.
    Runtime {
        line: u32,
        instruction: String,
        message: String,
    },
    /// A host-side memory operation (read/write/fill) touched memory outside an allocation.
    Memory(String),
}

impl Error {
    pub(crate) fn parse(line: u32, message: impl Into<String>) -> Self {
        Error::Parse {
            line,
            message: message.into(),
        }
    }

    pub(crate) fn unsupported(line: u32, what: impl Into<String>) -> Self {
        Error::Unsupported {
            line,
            what: what.into(),
        }
    }

    /// The source line this error points at, if any.
    pub fn line(&self) -> Option<u32> {
        match self {
            Error::Parse { line, .. }
            | Error::Unsupported { line, .. }
            | Error::Runtime { line, .. } => Some(*line),
            Error::Launch(_) | Error::Memory(_) => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Parse { line, message } => write!(f, "line {line}: parse error: {message}"),
            Error::Unsupported { line, what } => {
                write!(f, "line {line}: not implemented by ptxsim: {what}")
            }
            Error::Launch(message) => write!(f, "launch error: {message}"),
            Error::Runtime {
                line,
                instruction,
                message,
            } => write!(f, "line {line}: `{instruction}`: {message}"),
            Error::Memory(message) => write!(f, "memory error: {message}"),
        }
    }
}

impl std::error::Error for Error {}
