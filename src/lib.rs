//! roofprobe: measures what a GPU (or, without one, the host CPU) really delivers.
//!
//! Data flows one way: a [`bench::Case`] is prepared by a [`backend::Backend`], timed and
//! verified by the [`runner`], summarised by [`stats`], turned into a [`record::Record`] that is
//! written to CSV at once, and rendered by [`report`].

pub mod backend;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod error;
pub mod kernels;
pub mod record;
pub mod report;
pub mod runner;
pub mod stats;

pub use error::{Error, Result};
