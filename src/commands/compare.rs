//! `roofprobe compare FILE…`: the same measurements across runs side by side, with measured and
//! spec ratios; optionally the overlaid roofline SVG and the comparison as tidy CSV.

use crate::cli::CompareArgs;
use crate::commands::emit;
use crate::commands::report::{load_inputs, write_new};
use crate::report::compare::{self, Run};
use crate::report::svg;
use crate::Result;

pub fn compare(args: &CompareArgs) -> Result<i32> {
    let runs: Vec<Run> = load_inputs(&args.files, true)?
        .into_iter()
        .map(|i| i.run)
        .collect();
    // With --json, stdout holds the JSON alone: what was written is said on stderr.
    let written = |what: &str, path: &std::path::Path| {
        let line = format!("{what}: {}\n", path.display());
        if args.json {
            eprint!("{line}");
            Ok(())
        } else {
            emit(&line)
        }
    };
    emit(&if args.json {
        compare::json(&runs)
    } else {
        compare::table(&runs)
    })?;
    if let Some(path) = &args.svg {
        let calibrations: Vec<_> = runs.iter().map(|r| r.calibration.clone()).collect();
        write_new(path, svg::render(&calibrations)?.as_bytes())?;
        written("roofline", path)?;
    }
    if let Some(path) = &args.csv {
        write_new(path, &compare::csv(&runs))?;
        written("comparison", path)?;
    }
    Ok(0)
}
