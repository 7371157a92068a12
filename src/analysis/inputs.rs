//! Reading results back, as `report`, `export`, `plot` and `compare` take them: results CSVs
//! (each split into one run per `run_id`) and calibration JSONs, every file read with the size
//! limit and every row and figure checked ([`crate::results::csv::parse_csv`],
//! [`Calibration::from_json`]).
//!
//! This module must not write or print anything.

use crate::analysis::calibration::{Calibration, FromRecords};
use crate::files::read_input;
use crate::results::record::Record;
use crate::{Error, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Whether a file holds a calibration JSON rather than a results CSV: by extension, else by its
/// first character.
pub fn is_json(path: &Path, bytes: &[u8]) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// The rows of a CSV, one group per run, in order of first appearance (linear in the rows).
pub fn split_runs(records: Vec<Record>) -> Vec<Vec<Record>> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut runs: Vec<Vec<Record>> = Vec::new();
    for r in records {
        match index.get(&r.run_id) {
            Some(&i) => runs[i].push(r),
            None => {
                index.insert(r.run_id.clone(), runs.len());
                runs.push(vec![r]);
            }
        }
    }
    runs
}

/// One run to compare: its calibration, and its rows when it came from a CSV.
#[derive(Clone, Debug)]
pub struct Run {
    pub calibration: Calibration,
    /// `None` for a calibration JSON, which has ceilings but no per-case rows.
    pub records: Option<Vec<Record>>,
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
        let bytes = read_input(path)?;
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
        let records = crate::results::csv::parse_csv(path, &bytes)?;
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

/// At most `max` runs, for the commands that lay runs side by side (`plot`, `compare`).
pub fn at_most(inputs: &[Input], max: usize, what: &str) -> Result<()> {
    if inputs.len() > max {
        return Err(Error::Usage(format!(
            "{} runs given; {what} shows at most {max} side by side: pass fewer files (or \
             `roofprobe export FILE --run RUN_ID` to take one run out of a CSV)",
            inputs.len()
        )));
    }
    Ok(())
}

/// Reads one CSV's rows, for `export`.
pub fn read_records(path: &Path) -> Result<Vec<Record>> {
    let bytes = read_input(path)?;
    if is_json(path, &bytes) {
        return Err(Error::parse(
            path,
            1,
            "this is a JSON file; expected a roofprobe results CSV",
        ));
    }
    crate::results::csv::parse_csv(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::synthetic_run;

    #[test]
    fn runs_split_by_id_in_order() {
        let mut rows = synthetic_run();
        rows[1].run_id = "second".into();
        let runs = split_runs(rows);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1].len(), 1);
        assert_eq!(runs[1][0].run_id, "second");
        assert_eq!(runs[0].len(), 11);
    }

    /// 50 000 run ids split in linear time (the old search over the groups took minutes). The
    /// bound catches that quadratic search, not a slow machine: it holds under emulation
    /// (qemu-user, where this takes seconds) on a loaded machine.
    #[test]
    fn many_runs_split_fast() {
        let base = synthetic_run().remove(0);
        let rows: Vec<Record> = (0..50_000)
            .map(|i| {
                let mut r = base.clone();
                r.run_id = format!("run-{i}");
                r
            })
            .collect();
        let t = std::time::Instant::now();
        assert_eq!(split_runs(rows).len(), 50_000);
        assert!(t.elapsed().as_secs_f64() < 30.0, "{:?}", t.elapsed());
    }

    #[test]
    fn long_lists_are_cut() {
        let names: Vec<String> = (0..20).map(|i| format!("r{i}")).collect();
        assert_eq!(crate::text::some_of(&names[..2]), "r0, r1");
        assert!(crate::text::some_of(&names).ends_with("r7 … and 12 more"));
    }
}
