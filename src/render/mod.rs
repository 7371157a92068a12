//! Exporters: each a pure function from results to bytes or text, so each is unit-testable.
//! Writing files is the commands' job, not theirs.

pub mod ceilings;
pub mod compare;
pub mod estimate;
pub mod exports;
pub mod fleet;
pub mod json;
pub mod plan;
pub mod svg;
pub mod table;
pub mod watch;

/// A tidy CSV writer into memory with `header` already written, so the file has its header even
/// when no row follows (serde's writer writes it with the first row only). The rows are then
/// serialised without headers, in the header's order.
pub fn csv_with_header(header: &[&str]) -> csv::Writer<Vec<u8>> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.write_record(header)
        .expect("serialising to memory cannot fail");
    w
}
