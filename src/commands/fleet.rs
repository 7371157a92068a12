//! `roofprobe fleet FILE…`: many runs read as a fleet, the slow ones flagged. The analysis is
//! [`crate::render::fleet`]'s; reading the inputs [`crate::analysis::inputs`]'s (every file checked, as
//! `compare` reads them); this module prints the table and writes the files.

use crate::analysis::inputs::load_inputs;
use crate::cli::{FleetArgs, EXIT_SUSPECT};
use crate::commands::{emit, say_written};
use crate::files::{output_folder, Outputs, Overwrite};
use crate::render::fleet;
use crate::Result;

pub fn fleet(args: &FleetArgs) -> Result<i32> {
    let inputs = load_inputs(&args.files, true)?;
    let report = fleet::analyse(
        inputs.into_iter().map(|i| (i.path, i.run)).collect(),
        args.threshold,
    );
    let overwrite = Overwrite::from_force(args.force);
    // Every file staged first, then all published or none ([`Outputs`]); the table and what
    // was written are printed after, so a refusal prints nothing but its error.
    let mut outputs = Outputs::new();
    if let Some(path) = &args.csv {
        outputs.add(path, &fleet::csv(&report), overwrite)?;
    }
    if let Some(path) = &args.json {
        outputs.add(path, fleet::json(&report).as_bytes(), overwrite)?;
    }
    let mut strips = Vec::new();
    if let Some(dir) = &args.out {
        output_folder(dir)?;
        for (metric, _) in fleet::metric_names(&report) {
            let Some(svg) = fleet::strip_svg(&report, &metric) else {
                continue;
            };
            let stem = fleet::strip_stem(&metric);
            strips.push(outputs.add_named(dir, &stem, "svg", svg.as_bytes(), overwrite)?);
        }
    }
    let paths = outputs.publish()?;
    emit(&fleet::table(&report))?;
    // What was written is said after the table ([`say_written`]).
    let written = |what: &str, path: &std::path::Path| say_written(what, path, false);
    if let Some(path) = &args.csv {
        written("fleet csv", path)?;
    }
    if let Some(path) = &args.json {
        written("fleet json", path)?;
    }
    for i in strips {
        emit(&format!("strip plot: {}\n", paths[i].display()))?;
    }
    Ok(if report.flagged().next().is_some() {
        EXIT_SUSPECT
    } else {
        0
    })
}
