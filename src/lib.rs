//! roofprobe: measures what a GPU (or, without one, the host CPU) really delivers.
//!
//! Data flows one way: a [`cases::Case`] is prepared by a [`backend::Backend`], timed and
//! verified by the [`run::runner`], summarised by [`stats`], turned into a
//! [`results::record::Record`] that is written to CSV at once ([`results::csv`]), flagged where
//! it is suspect ([`analysis::suspect`]), fitted into an empirical [`analysis::roofline`] held
//! against the [`specs`], and rendered by [`render`]: table, SVG, the [`Calibration`] JSON other
//! estimators load (its types live in the lean `roofprobe-calibration` crate) and their own
//! hardware files. Whatever is read back ([`analysis::inputs`]) is checked before it is used
//! ([`results::check`]), and every file is written whole or not at all ([`files`]).
//!
//! The folders are layers, lowest first: the foundation files ([`error`], [`text`], [`units`],
//! [`device`], [`files`]), [`stats`], [`cases`], [`kernels`], [`specs`], [`backend`],
//! [`results`], [`analysis`], [`render`], [`run`], and the command line ([`cli`],
//! [`commands`]). A module uses only its own layer and those below (tests/layers.rs checks it;
//! docs/architecture.md says why each room is where it is).

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
