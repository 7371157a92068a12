//! What a run leaves behind: the [`record::Record`] (one CSV row), and its CSV reading and
//! writing.

pub mod check;
pub mod csv;
#[doc(hidden)]
pub mod fixtures;
pub mod flags;
pub mod record;
