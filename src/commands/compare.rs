//! `roofprobe compare FILE…`: the same measurements across runs side by side, with measured and
//! spec ratios; optionally the overlaid roofline SVG and the comparison as tidy CSV.

use crate::analysis::inputs::Run;
use crate::analysis::inputs::{at_most, load_inputs};
use crate::cli::CompareArgs;
use crate::commands::{emit, emit_json, say_written, svg_naming_input};
use crate::files::{Outputs, Overwrite};
use crate::render::compare;
use crate::Result;

/// The most runs one comparison lays side by side (the table grows a column per run).
pub const MAX_RUNS: usize = 26;

pub fn compare(args: &CompareArgs) -> Result<i32> {
    let inputs = load_inputs(&args.files, true)?;
    at_most(&inputs, MAX_RUNS, "compare")?;
    let paths: Vec<std::path::PathBuf> = inputs.iter().map(|i| i.path.clone()).collect();
    let runs: Vec<Run> = inputs.into_iter().map(|i| i.run).collect();
    let overwrite = Overwrite::from_force(args.force);
    // Every file made and staged before anything is printed or named: a refused name (it
    // exists, or both flags name one file) or a full disk leaves no file and no table behind.
    let mut outputs = Outputs::new();
    if let Some(path) = &args.svg {
        let named: Vec<_> = paths
            .iter()
            .zip(&runs)
            .map(|(p, r)| (p.as_path(), &r.calibration))
            .collect();
        outputs.add(path, svg_naming_input(&named)?.as_bytes(), overwrite)?;
    }
    if let Some(path) = &args.csv {
        outputs.add(path, &compare::csv(&runs)?, overwrite)?;
    }
    let (table, json) = if args.json {
        (None, Some(compare::json(&runs)))
    } else {
        (Some(compare::table(&runs)), None)
    };
    outputs.publish()?;
    // With --json, stdout holds the JSON alone: what was written is said on stderr then.
    let written = |what: &str, path: &std::path::Path| say_written(what, path, args.json);
    match (&table, &json) {
        (_, Some(json)) => emit_json(json)?,
        (Some(table), _) => emit(table)?,
        _ => {}
    }
    if let Some(path) = &args.svg {
        written("roofline", path)?;
    }
    if let Some(path) = &args.csv {
        written("comparison", path)?;
    }
    Ok(0)
}
