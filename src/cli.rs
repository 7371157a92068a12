//! The command line (clap derive) and its dispatch to [`crate::commands`].
//!
//! Exit codes: 0 all measurements valid; 1 an error (printed as one `error: …` line);
//! 2 a usage error (clap's, or a value that makes no sense: an unknown device, a filter that
//! matches nothing, an output that exists); 3 the run finished but at least one case was invalid
//! or failed.
//!
//! `-o/--out` means one thing everywhere: a folder where a command writes several files (`run`,
//! `report`), the file itself where it writes one (`export`, `plot`). No command overwrites a
//! file unless given `--force`.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Exit code of a usage error (clap's own, and [`crate::Error::Usage`]).
pub const EXIT_USAGE: i32 = 2;

/// Exit code of a run that completed with at least one invalid or failed case.
pub const EXIT_INVALID: i32 = 3;

#[derive(Debug, Parser)]
#[command(
    name = "roofprobe",
    version,
    about = "Measures what a GPU (or, without one, the host CPU) really delivers, validated, to CSV",
    after_help = "Exit codes: 0 ok, 1 error, 2 usage, 3 a measurement was invalid or failed."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure this machine: every CUDA GPU found, else the host CPU; write a CSV per device.
    Run(RunArgs),
    /// List the CUDA devices and the host CPU.
    Devices,
    /// Show the vendor spec table: every entry, one (`specs "RTX 3090"`), or two side by side
    /// (`specs --compare "RTX 3090" "A100 80GB SXM4"`). Needs no GPU.
    Specs(SpecsArgs),
    /// Write the calibration JSON of a run's CSV: measured ceilings, ridge points, efficiencies.
    Export(ExportArgs),
    /// Draw the roofline SVG of one run, or several overlaid (results CSVs or calibration JSONs).
    Plot(PlotArgs),
    /// Compare runs side by side: ceilings and every case, with measured and spec ratios.
    Compare(CompareArgs),
    /// Regenerate table, roofline SVG and calibration JSON from results CSVs alone.
    Report(ReportArgs),
}

#[derive(Debug, clap::Args)]
pub struct SpecsArgs {
    /// A device as the driver reports it or as people say it: `NVIDIA A100-SXM4-80GB`,
    /// `A100 80GB SXM4`, `RTX 3090`.
    #[arg(conflicts_with = "compare")]
    pub name: Option<String>,
    /// Two devices side by side, with B/A ratios.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub compare: Option<Vec<String>>,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// A results CSV written by `roofprobe run`.
    pub file: PathBuf,
    /// Which run, when the CSV holds several (its `run_id`).
    #[arg(long)]
    pub run: Option<String>,
    /// Write to this file instead of stdout (never overwritten without --force).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Replace the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// Results CSVs or calibration JSONs; every run in them is overlaid.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The SVG file to write (never overwritten without --force). Default: beside the first
    /// file, under a new name.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Replace the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Results CSVs or calibration JSONs; the first run is A, the base of every ratio.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Also write the overlaid roofline to this new SVG.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Also write the comparison as tidy CSV to this new file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Replace the --svg and --csv files if they exist.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Results CSVs written by `roofprobe run` (from any machine).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Folder for the JSON and SVG (created if missing). Default: beside each CSV.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Replace `<stem>.json` and `<stem>.svg` where they exist, instead of writing `<stem>-2.…`.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Which device: `auto` (every CUDA GPU, else the host), `host`, `cuda:N`, or `all`
    /// (every CUDA GPU and the host).
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// Fewer samples per case (same cases, same sizes).
    #[arg(long)]
    pub quick: bool,
    /// Folder for the results files (created if missing; files are never overwritten: every
    /// run has a new name).
    #[arg(long, short, default_value = "results")]
    pub out: PathBuf,
    /// Bytes per array for the DRAM cases, e.g. `268435456`, `256MiB`, `1GiB`. Default: the
    /// larger of 4× the last-level cache and 256 MiB, reduced (and said so) to fit free memory.
    #[arg(long)]
    pub size: Option<String>,
    /// Most timed samples per case.
    #[arg(long)]
    pub samples: Option<u32>,
    /// Run only cases whose id (`family/kernel/precision`) contains this text; repeatable.
    #[arg(long)]
    pub filter: Vec<String>,
}

/// Parses a byte count with an optional unit: `4096`, `64K`, `256MiB`, `1G`, `2GB`.
/// Binary units (K, M, G, T with or without `iB`) are powers of 1024; `KB`, `MB`, `GB`, `TB`
/// are powers of 1000.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a byte count; write e.g. 268435456, 256MiB or 1GiB"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "k" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "T" | "TiB" => 1 << 40,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{s}`; use B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB)"
            ))
        }
    };
    let bytes = n
        .checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large"))?;
    if bytes == 0 {
        return Err("the size must be at least 1 byte".to_string());
    }
    Ok(bytes)
}

/// Runs the parsed command; returns the process exit code.
pub fn dispatch(cli: Cli) -> crate::Result<i32> {
    match cli.command {
        Command::Run(args) => crate::commands::run::run(&args),
        Command::Devices => crate::commands::devices::devices(),
        Command::Specs(args) => crate::commands::specs::specs(&args),
        Command::Export(args) => crate::commands::export::export(&args),
        Command::Plot(args) => crate::commands::plot::plot(&args),
        Command::Compare(args) => crate::commands::compare::compare(&args),
        Command::Report(args) => crate::commands::report::report(&args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64K"), Ok(65536));
        assert_eq!(parse_bytes("256MiB"), Ok(256 << 20));
        assert_eq!(parse_bytes("1G"), Ok(1 << 30));
        assert_eq!(parse_bytes("2GB"), Ok(2_000_000_000));
        assert!(parse_bytes("lots")
            .unwrap_err()
            .contains("not a byte count"));
        assert!(parse_bytes("3 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("99999999999999T")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
