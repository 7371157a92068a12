//! `roofprobe report FILE…`: from CSVs alone, on any machine, regenerate what a run printed and
//! wrote: the table, the roofline summary, the calibration JSON and the roofline SVG.
//!
//! Reading the inputs is [`crate::analysis::inputs`]'s job, writing files [`crate::files`]'s.

use crate::analysis::inputs::load_inputs;
use crate::cli::ReportArgs;
use crate::commands::emit;
use crate::files::{output_folder, Outputs, Overwrite};
use crate::render::{ceilings, table};
use crate::run::outputs::{output_stem, stage_calibration_and_svg, unique_stems};
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
    let stems = unique_stems(
        inputs
            .iter()
            .map(|input| {
                let cal = &input.run.calibration;
                let dir = match &args.out {
                    Some(d) => d.clone(),
                    None => input
                        .path
                        .parent()
                        .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
                };
                let runs = runs_per_file[input.path.as_path()];
                let stem = output_stem(&input.path, &cal.run.run_id, runs);
                (
                    dir,
                    stem,
                    format!("{}\0{}", input.path.display(), cal.run.run_id),
                )
            })
            .collect(),
    );
    // Every run's files staged first, then all published or none ([`Outputs`]): a full disk
    // at the last run leaves no file of the first behind, and the retry writes no `-2`.
    let mut outputs = Outputs::new();
    let mut texts = Vec::new();
    for (input, (dir, stem)) in inputs.iter().zip(&stems) {
        let records = input.run.records.as_deref().unwrap_or_default();
        let cal = &input.run.calibration;
        let mut text = table::render(records);
        text.push_str(&ceilings::render(cal));
        if let Some(summary) = crate::analysis::suspect::summary(records) {
            text.push_str(&summary);
        }
        let (json, svg) = stage_calibration_and_svg(&mut outputs, dir, stem, cal, overwrite)
            .map_err(|e| match e {
                crate::Error::Usage(m) => {
                    crate::Error::Usage(format!("{}: {m}", input.path.display()))
                }
                other => other,
            })?;
        texts.push((text, json, svg));
    }
    let paths = outputs.publish()?;
    for (text, json, svg) in texts {
        emit(&text)?;
        emit(&format!(
            "calibration: {}\nroofline: {}\n",
            paths[json].display(),
            paths[svg].display()
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
    use crate::run::outputs::write_calibration_and_svg;

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
