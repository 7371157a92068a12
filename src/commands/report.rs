//! `roofprobe report FILE…`: from CSVs alone, on any machine, regenerate what a run printed and
//! wrote: the table, the roofline summary, the calibration JSON and the roofline SVG.
//!
//! Also the input side shared by `plot`, `compare` and `export`: reading CSVs (split into one
//! run per `run_id`) and calibration JSONs, and writing new files without overwriting any.

use crate::calibration::Calibration;
use crate::cli::ReportArgs;
use crate::commands::emit;
use crate::commands::run::fresh_path;
use crate::record::Record;
use crate::report::compare::Run;
use crate::report::{ceilings, json, svg, table};
use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether a file holds a calibration JSON rather than a results CSV: by extension, else by its
/// first character.
fn is_json(path: &Path, bytes: &[u8]) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// The rows of a CSV, one group per run, in order of first appearance.
pub fn split_runs(records: Vec<Record>) -> Vec<Vec<Record>> {
    let mut runs: Vec<Vec<Record>> = Vec::new();
    for r in records {
        match runs.iter_mut().find(|g| g[0].run_id == r.run_id) {
            Some(g) => g.push(r),
            None => runs.push(vec![r]),
        }
    }
    runs
}

/// One input run and the file it came from.
pub struct Input {
    pub path: PathBuf,
    pub run: Run,
}

/// Reads results CSVs (each split into its runs) and, where `allow_json`, calibration JSONs.
pub fn load_inputs(paths: &[PathBuf], allow_json: bool) -> Result<Vec<Input>> {
    let mut out = Vec::new();
    for path in paths {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        if is_json(path, &bytes) {
            if !allow_json {
                return Err(Error::parse(
                    path,
                    1,
                    "this is a JSON file; expected a roofprobe results CSV (calibration JSON is an \
                     output: `plot` and `compare` read it)",
                ));
            }
            let text = String::from_utf8(bytes).map_err(|e| {
                Error::parse(
                    path,
                    1,
                    format!("not UTF-8 text ({e}); expected calibration JSON"),
                )
            })?;
            let calibration = Calibration::from_json(path, &text)?;
            out.push(Input {
                path: path.clone(),
                run: Run {
                    calibration,
                    records: None,
                },
            });
            continue;
        }
        let records = crate::record::parse_csv(path, &bytes)?;
        for rows in split_runs(records) {
            let calibration = Calibration::from_records(&rows, None)?;
            out.push(Input {
                path: path.clone(),
                run: Run {
                    calibration,
                    records: Some(rows),
                },
            });
        }
    }
    if out.is_empty() {
        return Err(Error::Usage("no input files given".into()));
    }
    Ok(out)
}

/// Writes `bytes` to a path that must not exist yet.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::Usage(format!(
                    "{} exists; roofprobe never overwrites a file: choose another name",
                    path.display()
                ))
            } else {
                Error::io(path, e)
            }
        })?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))
}

/// Writes `<stem>.json` and `<stem>.svg` in `dir` (suffixed `-2`, `-3`, … rather than
/// overwriting anything); returns their paths.
pub fn write_calibration_and_svg(
    dir: &Path,
    stem: &str,
    calibration: &Calibration,
) -> Result<(PathBuf, PathBuf)> {
    // The JSON first: if the picture cannot be drawn, the numbers are still written.
    let json_path = fresh_path(dir, stem, "json");
    write_new(&json_path, &json::render(calibration))?;
    let svg_text = svg::render(std::slice::from_ref(calibration))?;
    let svg_path = fresh_path(dir, stem, "svg");
    write_new(&svg_path, svg_text.as_bytes())?;
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
        format!("{stem}-{}", crate::commands::slug(run_id))
    } else {
        stem
    }
}

pub fn report(args: &ReportArgs) -> Result<i32> {
    let inputs = load_inputs(&args.files, false)?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    for input in &inputs {
        let runs_in_file = inputs.iter().filter(|i| i.path == input.path).count();
        let records = input.run.records.as_deref().unwrap_or_default();
        let cal = &input.run.calibration;
        emit(&table::render(records))?;
        emit(&ceilings::render(cal))?;
        if let Some(summary) = crate::hygiene::summary(records) {
            emit(&summary)?;
        }
        let dir = match &args.out {
            Some(d) => d.clone(),
            None => input
                .path
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        };
        let stem = output_stem(&input.path, &cal.run.run_id, runs_in_file);
        let (json_path, svg_path) = write_calibration_and_svg(&dir, &stem, cal)?;
        emit(&format!(
            "calibration: {}\nroofline: {}\n",
            json_path.display(),
            svg_path.display()
        ))?;
    }
    Ok(0)
}

/// Reads one CSV's rows, for `export`.
pub fn read_records(path: &Path) -> Result<Vec<Record>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    if is_json(path, &bytes) {
        return Err(Error::parse(
            path,
            1,
            "this is a JSON file; expected a roofprobe results CSV",
        ));
    }
    crate::record::parse_csv(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roofline::tests::synthetic_run;

    #[test]
    fn runs_split_by_id_in_order() {
        let mut rows = synthetic_run();
        rows[1].run_id = "second".into();
        let runs = split_runs(rows);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1].len(), 1);
        assert_eq!(runs[1][0].run_id, "second");
    }

    #[test]
    fn stems_and_never_overwriting() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(output_stem(Path::new("/r/x.csv"), "id", 1), "x");
        assert_eq!(output_stem(Path::new("/r/x.csv"), "A b", 2), "x-a-b");
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        let (j1, s1) = write_calibration_and_svg(dir.path(), "x", &cal).unwrap();
        let (j2, s2) = write_calibration_and_svg(dir.path(), "x", &cal).unwrap();
        assert_eq!(j1, dir.path().join("x.json"));
        assert_eq!(s2, dir.path().join("x-2.svg"));
        assert_ne!((j1.clone(), s1), (j2, s2.clone()));
        let e = write_new(&j1, b"{}").unwrap_err().to_string();
        assert!(e.contains("never overwrites"), "{e}");
        assert_eq!(Calibration::load(&j1).unwrap(), cal);
    }
}
