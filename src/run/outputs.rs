//! The files a run leaves beside its CSV: its calibration JSON and its roofline SVG, under the
//! CSV's stem. `run` writes them when a device's cases are done; `report` writes them again from
//! a CSV alone. Making the bytes is `render`'s job; this module names and writes the files.

use crate::analysis::calibration::{Calibration, FromRecords};
use crate::device::DeviceInfo;
use crate::files::{Outputs, Overwrite};
use crate::render::{ceilings, json, svg};
use crate::results::record::Record;
use crate::specs::DeviceAttributes;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Writes `<stem>.json` and `<stem>.svg` in `dir`, both or neither; returns their paths.
/// Without `overwrite`, a name that exists gets `-2`, `-3`, … instead; with it, the files are
/// replaced.
pub fn write_calibration_and_svg(
    dir: &Path,
    stem: &str,
    calibration: &Calibration,
    overwrite: Overwrite,
) -> Result<(PathBuf, PathBuf)> {
    let mut outputs = Outputs::new();
    let (json, svg) = stage_calibration_and_svg(&mut outputs, dir, stem, calibration, overwrite)?;
    let paths = outputs.publish()?;
    Ok((paths[json].clone(), paths[svg].clone()))
}

/// Stages `<stem>.json` and `<stem>.svg` in `dir` into `outputs`; returns their indices.
pub fn stage_calibration_and_svg(
    outputs: &mut Outputs,
    dir: &Path,
    stem: &str,
    calibration: &Calibration,
    overwrite: Overwrite,
) -> Result<(usize, usize)> {
    let json = outputs.add_named(dir, stem, "json", &json::render(calibration), overwrite)?;
    let svg_text = svg::render(std::slice::from_ref(calibration))?;
    let svg = outputs.add_named(dir, stem, "svg", svg_text.as_bytes(), overwrite)?;
    Ok((json, svg))
}

/// The most characters of a run id a file name takes (its slug, before any hash): a name stays
/// far under the 255 bytes a file system allows.
const MAX_SLUG_CHARS: usize = 64;

/// The file stem outputs of a CSV's run take: the CSV's own stem, plus the run id's slug when
/// the CSV holds several runs (cut to `MAX_SLUG_CHARS`, with a short hash of the id where it
/// was cut).
pub fn output_stem(csv: &Path, run_id: &str, runs_in_file: usize) -> String {
    let stem = csv.file_stem().map_or_else(
        || "roofline".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    if runs_in_file > 1 {
        let slug = crate::units::slug(run_id);
        if slug.chars().count() > MAX_SLUG_CHARS {
            let cut: String = slug.chars().take(MAX_SLUG_CHARS).collect();
            format!("{stem}-{cut}-{}", crate::units::short_hash(run_id))
        } else {
            format!("{stem}-{slug}")
        }
    } else {
        stem
    }
}

/// Makes the stems of several runs' outputs injective: `(dir, stem, identity)` per run, where
/// `identity` tells the runs apart (file and run id). Runs whose stems coincide in one folder
/// (run ids that differ only in what a slug folds, `A/B` and `a-b`, or CSVs of one name from
/// two folders) each get a short hash of their identity, so no run's files take another's name.
pub fn unique_stems(runs: Vec<(PathBuf, String, String)>) -> Vec<(PathBuf, String)> {
    let mut identities: std::collections::HashMap<(&Path, &str), Vec<&str>> =
        std::collections::HashMap::new();
    for (dir, stem, identity) in &runs {
        let seen = identities
            .entry((dir.as_path(), stem.as_str()))
            .or_default();
        if !seen.contains(&identity.as_str()) {
            seen.push(identity);
        }
    }
    let clashes: Vec<bool> = runs
        .iter()
        .map(|(dir, stem, _)| identities[&(dir.as_path(), stem.as_str())].len() > 1)
        .collect();
    runs.iter()
        .zip(clashes)
        .map(|((dir, stem, identity), clash)| {
            let stem = if clash {
                format!("{stem}-{}", crate::units::short_hash(identity))
            } else {
                stem.clone()
            };
            (dir.clone(), stem)
        })
        .collect()
}

/// Fits the run's roofline and writes its calibration JSON and SVG beside its CSV; returns what
/// to print of it (the ceilings, and where the files are). The measurements are already safe in
/// the CSV; an error here says how to write the rest from it.
pub fn write_roofline(info: &DeviceInfo, csv: &Path, records: &[Record]) -> Result<String> {
    // The run knows the device's attributes (bus width, maximum clocks) that a CSV lacks.
    let written = Calibration::from_records(records, Some(DeviceAttributes::from_info(info)))
        .and_then(|cal| {
            let dir = csv.parent().unwrap_or(Path::new("."));
            let stem = csv
                .file_stem()
                .map_or_else(|| "roofline".into(), |s| s.to_string_lossy().into_owned());
            let (json, svg) = write_calibration_and_svg(dir, &stem, &cal, Overwrite::Never)?;
            Ok(format!(
                "{}calibration: {}\nroofline: {}\n",
                ceilings::render(&cal),
                json.display(),
                svg.display()
            ))
        });
    written.map_err(|e| {
        Error::Internal(format!(
            "the measurements are in {}, but its roofline was not written: {e}; `roofprobe \
             report {}` writes it again",
            csv.display(),
            csv.display()
        ))
    })
}
