//! roofprobe: measures what a GPU (or, without one, the host CPU) really delivers.
//!
//! Data flows one way: a [`bench::Case`] is prepared by a [`backend::Backend`], timed and
//! verified by the [`runner`], summarised by [`stats`], turned into a [`record::Record`] (its
//! figure flagged by [`hygiene`] when it is suspect) that is written to CSV at once, fitted into
//! an empirical [`roofline`] held against the [`specs`], and rendered by [`report`]: table, SVG,
//! and the [`Calibration`] JSON other estimators load (its types live in the lean
//! `roofprobe-calibration` crate). Whatever is read back ([`inputs`]) is checked before it is
//! used ([`record::check_row`]), and every file is written whole or not at all ([`files`]).

pub mod backend;
pub mod bench;
pub mod calibration;
pub mod changepoint;
pub mod cli;
pub mod commands;
pub mod duration;
pub mod error;
pub mod estimate;
pub mod exports;
pub mod files;
pub mod fit;
pub mod hygiene;
pub mod inputs;
pub mod interrupt;
pub mod kernels;
pub mod record;
pub mod report;
pub mod roofline;
pub mod runner;
pub mod sampler;
pub mod specs;
pub mod stats;
pub mod text;
pub mod worker;

pub use calibration::{Calibration, FromRecords};
pub use error::{Error, Result};
