//! Exporters: each a pure function from results to bytes or text, so each is unit-testable.
//! Writing files is the commands' job, not theirs.

#[cfg(test)]
mod browser;
pub mod ceilings;
pub mod compare;
pub mod json;
pub mod labels;
pub mod names;
pub mod picture;
pub mod svg;
pub mod table;
