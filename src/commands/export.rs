//! `roofprobe export FILE.csv`: the calibration JSON of a run, to stdout or a new file.

use crate::calibration::Calibration;
use crate::cli::ExportArgs;
use crate::commands::emit;
use crate::commands::report::{read_records, split_runs, write_new};
use crate::report::json;
use crate::{Error, Result};

pub fn export(args: &ExportArgs) -> Result<i32> {
    let records = read_records(&args.file)?;
    let mut runs = split_runs(records);
    let rows = match &args.run {
        Some(id) => {
            let ids: Vec<String> = runs.iter().map(|r| r[0].run_id.clone()).collect();
            let i = ids.iter().position(|r| r == id).ok_or_else(|| {
                Error::Usage(format!(
                    "{} has no run `{id}`; it has: {}",
                    args.file.display(),
                    ids.join(", ")
                ))
            })?;
            runs.swap_remove(i)
        }
        None if runs.len() == 1 => runs.swap_remove(0),
        None => {
            let ids: Vec<String> = runs.iter().map(|r| r[0].run_id.clone()).collect();
            return Err(Error::Usage(format!(
                "{} holds {} runs ({}); a calibration describes one: pass --run RUN_ID",
                args.file.display(),
                ids.len(),
                ids.join(", ")
            )));
        }
    };
    let calibration = Calibration::from_records(&rows, None)?;
    let bytes = json::render(&calibration);
    match &args.out {
        Some(path) => {
            write_new(path, &bytes)?;
            eprintln!("calibration: {}", path.display());
        }
        None => emit(&String::from_utf8_lossy(&bytes))?,
    }
    Ok(0)
}
