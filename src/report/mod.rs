//! Exporters: each a pure function from results to bytes or text, so each is unit-testable.
//! Writing files is the commands' job, not theirs.

#[cfg(test)]
mod browser;
pub mod ceilings;
pub mod compare;
pub mod fleet;
pub mod json;
pub mod labels;
pub mod names;
pub mod picture;
pub mod svg;
pub mod table;

use crate::bench::Precision;

/// What one operation of a precision is called: `FLOP`, or `OP` for integer formats.
pub fn ops(precision: Precision) -> &'static str {
    if precision.is_integer() {
        "OP"
    } else {
        "FLOP"
    }
}
