//! `roofprobe compare FILE…`: the same measurements across runs side by side, with measured and
//! spec ratios; optionally the overlaid roofline SVG and the comparison as tidy CSV.

use crate::analysis::inputs::Run;
use crate::analysis::inputs::{at_most, load_inputs};
use crate::cli::CompareArgs;
use crate::commands::{emit, emit_json, say_written};
use crate::files::{write_new, Overwrite};
use crate::render::compare;
use crate::render::svg;
use crate::Result;

/// The most runs one comparison lays side by side (the table grows a column per run).
pub const MAX_RUNS: usize = 26;

pub fn compare(args: &CompareArgs) -> Result<i32> {
    let inputs = load_inputs(&args.files, true)?;
    at_most(&inputs, MAX_RUNS, "compare")?;
    let runs: Vec<Run> = inputs.into_iter().map(|i| i.run).collect();
    let overwrite = Overwrite::from_force(args.force);
    // With --json, stdout holds the JSON alone: what was written is said on stderr then.
    let written = |what: &str, path: &std::path::Path| say_written(what, path, args.json);
    if args.json {
        emit_json(&compare::json(&runs))?;
    } else {
        emit(&compare::table(&runs))?;
    }
    if let Some(path) = &args.svg {
        let calibrations: Vec<_> = runs.iter().map(|r| r.calibration.clone()).collect();
        write_new(path, svg::render(&calibrations)?.as_bytes(), overwrite)?;
        written("roofline", path)?;
    }
    if let Some(path) = &args.csv {
        write_new(path, &compare::csv(&runs), overwrite)?;
        written("comparison", path)?;
    }
    Ok(0)
}
