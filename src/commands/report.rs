//! `roofprobe report FILE…`: from CSVs alone, on any machine, regenerate what a run printed and
//! wrote: the table, the roofline summary, the calibration JSON and the roofline SVG.
//!
//! Reading the inputs is [`crate::analysis::inputs`]'s job, writing files [`crate::files`]'s.

use crate::analysis::inputs::load_inputs;
use crate::cli::ReportArgs;
use crate::commands::emit;
use crate::files::{output_folder, Overwrite};
use crate::render::{ceilings, table};
use crate::run::outputs::{output_stem, write_calibration_and_svg};
use crate::Result;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub fn report(args: &ReportArgs) -> Result<i32> {
    let inputs = load_inputs(&args.files, false)?;
    if let Some(dir) = &args.out {
        output_folder(dir)?;
    }
    let overwrite = Overwrite::from_force(args.force);
    let mut runs_per_file: HashMap<&Path, usize> = HashMap::new();
    for input in &inputs {
        *runs_per_file.entry(input.path.as_path()).or_default() += 1;
    }
    for input in &inputs {
        let records = input.run.records.as_deref().unwrap_or_default();
        let cal = &input.run.calibration;
        emit(&table::render(records))?;
        emit(&ceilings::render(cal))?;
        if let Some(summary) = crate::analysis::suspect::summary(records) {
            emit(&summary)?;
        }
        let dir = match &args.out {
            Some(d) => d.clone(),
            None => input
                .path
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        };
        let stem = output_stem(
            &input.path,
            &cal.run.run_id,
            runs_per_file[input.path.as_path()],
        );
        let (json_path, svg_path) = write_calibration_and_svg(&dir, &stem, cal, overwrite)?;
        emit(&format!(
            "calibration: {}\nroofline: {}\n",
            json_path.display(),
            svg_path.display()
        ))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::calibration::{Calibration, FromRecords};
    use crate::analysis::fixtures::synthetic_run;
    use crate::files::write_new;

    #[test]
    fn stems_and_never_overwriting() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(output_stem(Path::new("/r/x.csv"), "id", 1), "x");
        assert_eq!(output_stem(Path::new("/r/x.csv"), "A b", 2), "x-a-b");
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        let never = Overwrite::Never;
        let (j1, s1) = write_calibration_and_svg(dir.path(), "x", &cal, never).unwrap();
        let (j2, s2) = write_calibration_and_svg(dir.path(), "x", &cal, never).unwrap();
        assert_eq!(j1, dir.path().join("x.json"));
        assert_eq!(s2, dir.path().join("x-2.svg"));
        assert_ne!((j1.clone(), s1.clone()), (j2, s2.clone()));
        let e = write_new(&j1, b"{}", never).unwrap_err().to_string();
        assert!(e.contains("never overwrites"), "{e}");
        assert_eq!(Calibration::load(&j1).unwrap(), cal);
        // --force: the same names, replaced
        let (j3, s3) =
            write_calibration_and_svg(dir.path(), "x", &cal, Overwrite::Allowed).unwrap();
        assert_eq!((j3, s3), (j1, s1));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }
}
