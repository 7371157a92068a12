//! The text of `run --dry-run`: one device's plan, a line per case with its estimated seconds
//! and its note, then the whole plan's estimate (seconds last, for scripts). Pure: the command
//! prints it.

use crate::backend::PlannedCase;
use crate::device::DeviceInfo;

/// The plan of device `info` as a dry run lists it, each case with its estimated seconds;
/// `selection` says which cases were chosen (`the default suite`, `every case (--full)`, …).
pub fn text(
    info: &DeviceInfo,
    cases: &[(PlannedCase, f64)],
    selection: &str,
    pace_note: &str,
) -> String {
    let width = cases
        .iter()
        .map(|(p, _)| p.case.id().chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "dry run on {} ({}): nothing is measured or written\n{:<width$}  {:>9}  note\n",
        info.name, info.id, "case", "estimate"
    );
    let mut total = 0.0;
    for (p, secs) in cases {
        total += secs;
        out.push_str(format!("{:<width$}  {:>7.2} s  {}", p.case.id(), secs, p.note).trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "plan: {} cases ({selection}), about {} by the device's rated speeds{pace_note}: \
         {total:.1} s\n",
        cases.len(),
        crate::units::human(total)
    ));
    out
}
