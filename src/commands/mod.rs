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

/// This machine's host name (`unknown-host` if it cannot be read).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let name = if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        String::new()
    };
    if name.trim().is_empty() {
        "unknown-host".to_string()
    } else {
        name
    }
}

/// Lower-case letters, digits and single dashes: a name fit for a file name.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(
            slug("  AMD EPYC 9B45 96-Core Processor "),
            "amd-epyc-9b45-96-core-processor"
        );
        assert_eq!(slug("A100-SXM4-80GB"), "a100-sxm4-80gb");
        assert_eq!(slug("ünïcode/..//x"), "n-code-x");
        assert!(!hostname().is_empty());
    }
}
