//! `roofprobe fleet FILE…`: many runs read as a fleet, the slow ones flagged. The analysis is
//! [`crate::report::fleet`]'s; reading the inputs [`crate::inputs`]'s (every file checked, as
//! `compare` reads them); this module prints the table and writes the files.

use crate::cli::{FleetArgs, EXIT_SUSPECT};
use crate::commands::emit;
use crate::files::{is_stream, output_folder, write_fresh, write_new, Overwrite};
use crate::inputs::load_inputs;
use crate::report::fleet;
use crate::Result;

pub fn fleet(args: &FleetArgs) -> Result<i32> {
    let inputs = load_inputs(&args.files, true)?;
    let report = fleet::analyse(
        inputs.into_iter().map(|i| (i.path, i.run)).collect(),
        args.threshold,
    );
    let overwrite = Overwrite::from_force(args.force);
    emit(&fleet::table(&report))?;
    // What was written is said on stdout, after the table; on stderr where the file is a
    // stream (`--json /dev/stdout`), which must hold its bytes alone.
    let written = |what: &str, path: &std::path::Path| {
        let line = format!("{what}: {}\n", path.display());
        if is_stream(path) {
            crate::say_inline!("{}", crate::text::printable(&line, true));
            Ok(())
        } else {
            emit(&line)
        }
    };
    // The numbers first: if a plot cannot be written, the CSV and JSON already are.
    if let Some(path) = &args.csv {
        write_new(path, &fleet::csv(&report), overwrite)?;
        written("fleet csv", path)?;
    }
    if let Some(path) = &args.json {
        write_new(path, fleet::json(&report).as_bytes(), overwrite)?;
        written("fleet json", path)?;
    }
    if let Some(dir) = &args.out {
        output_folder(dir)?;
        for (metric, _) in fleet::metric_names(&report) {
            let Some(svg) = fleet::strip_svg(&report, &metric) else {
                continue;
            };
            let stem = fleet::strip_stem(&metric);
            let path = match overwrite {
                Overwrite::Never => write_fresh(dir, &stem, "svg", svg.as_bytes())?,
                Overwrite::Allowed => {
                    let path = dir.join(format!("{stem}.svg"));
                    write_new(&path, svg.as_bytes(), overwrite)?;
                    path
                }
            };
            emit(&format!("strip plot: {}\n", path.display()))?;
        }
    }
    Ok(if report.flagged().next().is_some() {
        EXIT_SUSPECT
    } else {
        0
    })
}
