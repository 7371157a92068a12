//! `roofprobe export FILE`: the calibration JSON of a run (from its CSV), or another estimator's
//! hardware file (`--format`, from a CSV or a calibration JSON), to stdout or a new file.
//!
//! The fields and their sources are [`crate::render::exports`]'; this command reads, chooses the run,
//! writes whole-or-nothing, and says on stderr which fields came from the spec sheet or are
//! defaults, which ceilings a flagged row set, and which measurement was left out and why. A
//! run with no valid row is an error: there is nothing to export.

use crate::analysis::calibration::{self, Calibration, FromRecords};
use crate::analysis::inputs::{load_inputs, read_records, split_runs};
use crate::cli::ExportArgs;
use crate::commands::emit;
use crate::files::{write_new, Overwrite};
use crate::render::exports::{self, Format};
use crate::render::json;
use crate::text::some_of;
use crate::{Error, Result};

/// One run out of a list of them: the one `--run` names, or the only one.
fn choose<T>(args: &ExportArgs, mut runs: Vec<T>, id_of: impl Fn(&T) -> String) -> Result<T> {
    let ids: Vec<String> = runs.iter().map(&id_of).collect();
    match &args.run {
        Some(id) => {
            let i = ids.iter().position(|r| r == id).ok_or_else(|| {
                Error::Usage(format!(
                    "{} has no run `{id}`; it has: {}",
                    args.file.display(),
                    some_of(&ids)
                ))
            })?;
            Ok(runs.swap_remove(i))
        }
        None if runs.len() == 1 => Ok(runs.swap_remove(0)),
        None => Err(Error::Usage(format!(
            "{} holds {} runs ({}); a calibration describes one: pass --run RUN_ID",
            args.file.display(),
            runs.len(),
            some_of(&ids)
        ))),
    }
}

fn write(args: &ExportArgs, bytes: &[u8], what: &str) -> Result<()> {
    match &args.out {
        Some(path) if !crate::files::is_stdout(path) => {
            write_new(path, bytes, Overwrite::from_force(args.force))?;
            crate::say!("{what}: {}", path.display());
            Ok(())
        }
        _ => emit(&String::from_utf8_lossy(bytes)),
    }
}

pub fn export(args: &ExportArgs) -> Result<i32> {
    if args.format == Format::Roofprobe {
        // The calibration JSON is built from the CSV rows only, so `export` on any machine
        // gives what the run itself wrote.
        if !args.set.is_empty() {
            exports::parse_sets(args.format, &args.set)?;
        }
        let rows = choose(args, split_runs(read_records(&args.file)?), |r| {
            r[0].run_id.clone()
        })?;
        let calibration = Calibration::from_records(&rows, None)?;
        calibration::require_valid(&calibration, &args.file)?;
        write(args, &json::render(&calibration), "calibration")?;
        return Ok(0);
    }
    let sets = exports::parse_sets(args.format, &args.set)?;
    let inputs = load_inputs(std::slice::from_ref(&args.file), true)?;
    let input = choose(args, inputs, |i| i.run.calibration.run.run_id.clone())?;
    let cal = &input.run.calibration;
    calibration::require_valid(cal, &args.file)?;
    let sheet = exports::sheet_of(cal)?;
    let export = exports::build(cal, sheet, args.format, &sets)?;
    // Say it before writing, so a reader of stderr knows what the file holds.
    let format = args.format.as_str();
    for f in export.spec_fields() {
        crate::say!(
            "{format}: `{}` is the spec sheet's figure, not a measurement ({})",
            f.key,
            f.source.describe()
        );
    }
    for f in export.default_fields() {
        crate::say!(
            "{format}: `{}` is a {}; give yours with --set where it matters",
            f.key,
            f.source.describe()
        );
    }
    if !export.defaulted.is_empty() {
        crate::say!(
            "{format}: left out (nothing measured them and the sheet has none), where the tool has \
             a default of its own: {}; give them with --set KEY=VALUE to set them",
            export.defaulted.join(", ")
        );
    }
    for note in &export.notes {
        crate::say!("{format}: {note}");
    }
    for f in export.fields.iter() {
        let source = f.source.describe();
        if source.contains(exports::SUSPECT) {
            crate::say!("warning: {format}: `{}` is {source}", f.key);
        }
    }
    write(args, export.text.as_bytes(), format)?;
    Ok(0)
}
