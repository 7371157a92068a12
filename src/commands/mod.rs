//! What each subcommand does, given its parsed arguments. These functions print their output
//! (tables to stdout, progress and notes to stderr) and return the exit code; errors go back to
//! `main`, which prints them once.

pub mod compare;
pub mod devices;
pub mod estimate;
pub mod export;
pub mod fleet;
pub mod plot;
pub mod report;
pub mod run;
pub mod specs;
pub mod watch;

/// Prints to stdout, control characters written out (`\u{1b}`) so no field can move the cursor
/// or forge a line. A closed pipe (`roofprobe compare … | head`) ends the output quietly
/// instead of panicking as `print!` would; the command still finishes its files.
pub fn emit(text: &str) -> crate::Result<()> {
    emit_raw(&crate::text::printable(text, true))
}

/// Writes text already made printable to stdout; a closed pipe ends the output quietly.
fn emit_raw(text: &str) -> crate::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(crate::Error::io("<stdout>", e))
        }
        _ => Ok(()),
    }
}

/// Says which file was written (`what: path`): on stdout, unless stdout must hold something
/// else alone (`to_stderr`: a JSON document) or the file is itself a stream (`--json
/// /dev/stdout`), which must hold its bytes alone; then on stderr.
pub fn say_written(what: &str, path: &std::path::Path, to_stderr: bool) -> crate::Result<()> {
    let line = format!("{what}: {}\n", path.display());
    if to_stderr || crate::files::is_stream(path) {
        crate::say_inline!("{}", crate::text::printable(&line, true));
        Ok(())
    } else {
        emit(&line)
    }
}

/// Prints a JSON document to stdout, as [`emit`] does but with characters a terminal must not
/// see escaped the JSON way ([`crate::text::printable_json`]), so it still parses.
pub fn emit_json(json: &str) -> crate::Result<()> {
    emit_raw(&crate::text::printable_json(json))
}

/// The roofline SVG of `runs` (each with the file it was read from); an error in drawing names
/// the file whose figures caused it (each run drawn alone finds it), since the figures' own
/// message cannot know where they came from.
pub fn svg_naming_input(
    runs: &[(&std::path::Path, &crate::analysis::calibration::Calibration)],
) -> crate::Result<String> {
    let all: Vec<_> = runs.iter().map(|(_, c)| (*c).clone()).collect();
    crate::render::svg::render(&all).map_err(|e| {
        let culprit = runs
            .iter()
            .find(|(_, c)| crate::render::svg::render(std::slice::from_ref(*c)).is_err())
            .map(|(p, _)| *p);
        let files = match culprit {
            Some(p) => p.display().to_string(),
            None => runs
                .iter()
                .map(|(p, _)| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        };
        match e {
            crate::Error::Usage(m) => crate::Error::Usage(format!("{files}: {m}")),
            other => other,
        }
    })
}
