//! `roofprobe export FILE.csv`: the calibration JSON of a run, to stdout or a new file.

use crate::calibration::{Calibration, FromRecords};
use crate::cli::ExportArgs;
use crate::commands::emit;
use crate::files::{write_new, Overwrite};
use crate::inputs::{read_records, some_of, split_runs};
use crate::report::json;
use crate::{Error, Result};

pub fn export(args: &ExportArgs) -> Result<i32> {
    let records = read_records(&args.file)?;
    let mut runs = split_runs(records);
    let ids = |runs: &[Vec<crate::record::Record>]| -> Vec<String> {
        runs.iter().map(|r| r[0].run_id.clone()).collect()
    };
    let rows = match &args.run {
        Some(id) => {
            let i = runs
                .iter()
                .position(|r| &r[0].run_id == id)
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "{} has no run `{id}`; it has: {}",
                        args.file.display(),
                        some_of(&ids(&runs))
                    ))
                })?;
            runs.swap_remove(i)
        }
        None if runs.len() == 1 => runs.swap_remove(0),
        None => {
            return Err(Error::Usage(format!(
                "{} holds {} runs ({}); a calibration describes one: pass --run RUN_ID",
                args.file.display(),
                runs.len(),
                some_of(&ids(&runs))
            )));
        }
    };
    let calibration = Calibration::from_records(&rows, None)?;
    let bytes = json::render(&calibration);
    match &args.out {
        Some(path) => {
            write_new(path, &bytes, Overwrite::from_force(args.force))?;
            eprintln!("calibration: {}", path.display());
        }
        None => emit(&String::from_utf8_lossy(&bytes))?,
    }
    Ok(0)
}
