//! `roofprobe plot FILE…`: the roofline SVG of one run, or several overlaid, from results CSVs
//! or calibration JSONs.

use crate::analysis::inputs::{at_most, load_inputs};
use crate::cli::PlotArgs;
use crate::commands::{emit, say_written, svg_naming_input};
use crate::files::{is_stdout, write_fresh, write_new, Overwrite};
use crate::Result;
use std::path::{Path, PathBuf};

/// The most runs one plot overlays: beyond this no colour or label can be told apart.
pub const MAX_RUNS: usize = 26;

/// Where the plot goes when `--out` is not given: beside the first input, `<stem>.svg` for one
/// run, `<stem>-overlay.svg` for several (suffixed rather than overwriting): the folder and stem.
fn default_name(first: &Path, runs: usize) -> (PathBuf, String) {
    let dir = first.parent().unwrap_or(Path::new("."));
    let stem = first.file_stem().map_or_else(
        || "roofline".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let stem = if runs > 1 {
        format!("{stem}-overlay")
    } else {
        stem
    };
    (dir.to_path_buf(), stem)
}

pub fn plot(args: &PlotArgs) -> Result<i32> {
    let inputs = load_inputs(&args.files, true)?;
    at_most(&inputs, MAX_RUNS, "plot")?;
    let runs: Vec<_> = inputs
        .iter()
        .map(|i| (i.path.as_path(), &i.run.calibration))
        .collect();
    let text = svg_naming_input(&runs)?;
    let out = match &args.out {
        // `-o -`: the SVG is stdout's alone
        Some(p) if is_stdout(p) => return emit(&text).map(|()| 0),
        Some(p) => {
            write_new(p, text.as_bytes(), Overwrite::from_force(args.force))?;
            p.clone()
        }
        None => {
            let (dir, stem) = default_name(&inputs[0].path, inputs.len());
            write_fresh(&dir, &stem, "svg", text.as_bytes())?
        }
    };
    say_written("roofline", &out, false)?;
    Ok(0)
}
