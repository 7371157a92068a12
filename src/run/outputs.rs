//! The files a run leaves beside its CSV: its calibration JSON and its roofline SVG, under the
//! CSV's stem. `run` writes them when a device's cases are done; `report` writes them again from
//! a CSV alone. Making the bytes is `render`'s job; this module names and writes the files.

use crate::analysis::calibration::{Calibration, FromRecords};
use crate::device::DeviceInfo;
use crate::files::{write_named, Overwrite};
use crate::render::{ceilings, json, svg};
use crate::results::record::Record;
use crate::specs::DeviceAttributes;
use crate::{Error, Result};
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
