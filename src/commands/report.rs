//! `roofprobe report FILE…`: from CSVs alone, on any machine, regenerate what a run printed and
//! wrote: the table, the roofline summary, the calibration JSON and the roofline SVG.
//!
//! Reading the inputs is [`crate::analysis::inputs`]'s job, writing files [`crate::files`]'s.

use crate::analysis::calibration::Calibration;
use crate::analysis::inputs::load_inputs;
use crate::cli::ReportArgs;
use crate::commands::emit;
use crate::files::{output_folder, write_named, Overwrite};
use crate::render::{ceilings, json, svg, table};
use crate::Result;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Writes `<stem>.json` and `<stem>.svg` in `dir`; returns their paths. Without `overwrite`,
/// a name that exists gets `-2`, `-3`, … instead; with it, the files are replaced.
pub fn write_calibration_and_svg(
    dir: &Path,
    stem: &str,
    calibration: &Calibration,
    overwrite: Overwrite,
) -> Result<(PathBuf, PathBuf)> {
    let write = |ext: &str, bytes: &[u8]| write_named(dir, stem, ext, bytes, overwrite);
    // The JSON first: if the picture cannot be drawn, the numbers are still written.
    let json_path = write("json", &json::render(calibration))?;
    let svg_text = svg::render(std::slice::from_ref(calibration))?;
    let svg_path = write("svg", svg_text.as_bytes())?;
    Ok((json_path, svg_path))
}

/// The file stem outputs of a CSV's run take: the CSV's own stem, plus the run id when the CSV
/// holds several runs.
pub fn output_stem(csv: &Path, run_id: &str, runs_in_file: usize) -> String {
    let stem = csv.file_stem().map_or_else(
        || "roofline".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    if runs_in_file > 1 {
        format!("{stem}-{}", crate::units::slug(run_id))
    } else {
        stem
    }
}

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
    use crate::analysis::calibration::FromRecords;
    use crate::analysis::roofline::tests::synthetic_run;
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
