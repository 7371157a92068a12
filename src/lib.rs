//! roofprobe: measures what a GPU (or, without one, the host CPU) really delivers.
//!
//! Data flows one way: a [`bench::Case`] is prepared by a [`backend::Backend`], timed and
//! verified by the [`runner`], summarised by [`stats`], turned into a [`record::Record`] (its
//! figure flagged by [`hygiene`] when it is suspect) that is written to CSV at once, fitted into
//! an empirical [`roofline`] held against the [`specs`], and rendered by [`report`]: table, SVG,
//! and the [`Calibration`] JSON other estimators load (its types live in the lean
//! `roofprobe-calibration` crate). Whatever is read back ([`inputs`]) is checked before it is
//! used ([`record::check_row`]), and every file is written whole or not at all ([`files`]).

pub mod analysis;
pub mod backend;
pub mod cases;
pub mod cli;
pub mod commands;
pub mod device;
pub mod error;
pub mod files;
pub mod kernels;
pub mod render;
pub mod results;
pub mod run;
pub mod specs;
pub mod stats;
pub mod text;
pub mod units;

pub use analysis::calibration::{Calibration, FromRecords};
pub use error::{Error, Result};
