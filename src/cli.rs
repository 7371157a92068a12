//! The command line (clap derive) and its dispatch to [`crate::commands`].
//!
//! Exit codes (docs/cli.md lists them once, the same): 0 all measurements valid and none
//! suspect; 1 an error (printed as one `error: …` line); 2 a usage error (clap's: an unknown
//! command or option, or a value not of its form; or a value that makes no sense: an unknown
//! device, a filter that matches nothing, an output that exists); 3 the run finished but at
//! least one case was invalid or failed; 4 the run finished, every case valid, but some figures
//! are suspect (flagged, see [`crate::analysis::suspect`]); 130 `run` was stopped by a signal, after the
//! case that ran, and wrote what it measured ([`crate::run::interrupt`]).
//!
//! `-o/--out` means one thing everywhere: a folder where a command writes several files (`run`,
//! `report`), the file itself where it writes one (`export`, `plot`). No command overwrites a
//! file unless given `--force`.

use crate::device::parse_device;
use crate::units::{parse_percent, parse_seconds};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Exit code of a usage error (clap's own, and [`crate::Error::Usage`]).
pub const EXIT_USAGE: i32 = 2;

/// Exit code of a run that completed with at least one invalid or failed case.
pub const EXIT_INVALID: i32 = 3;

/// Exit code of a run that completed with every case valid but some figures suspect (their rows'
/// `flags` say why). An invalid case outranks it: such a run exits [`EXIT_INVALID`].
pub const EXIT_SUSPECT: i32 = 4;

#[derive(Debug, Parser)]
#[command(
    name = "roofprobe",
    version,
    about = "Measures what a GPU (or, without one, the host CPU) really delivers, validated, to CSV",
    after_help = "Exit codes: 0 ok, 1 error, 2 usage, 3 a measurement was invalid or failed, \
                  4 every measurement valid but some figures suspect (see the flags column), \
                  130 run stopped by a signal (what it measured is written)."
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
    Devices(DevicesArgs),
    /// Show the vendor spec table: every entry, one (`specs "RTX 3090"`), or two side by side
    /// (`specs --compare "RTX 3090" "A100 80GB SXM4"`). Needs no GPU.
    Specs(SpecsArgs),
    /// Write the calibration JSON of a run's CSV (measured ceilings, ridge points, efficiencies),
    /// or another estimator's hardware file from it (`--format aiconfigurator`, …).
    Export(ExportArgs),
    /// Will a transformer fit, and is each phase bound by capacity, bandwidth or compute?
    /// Inference or training, on measured ceilings (calibrations) or spec entries, side by side.
    Estimate(EstimateArgs),
    /// Draw the roofline SVG of one run, or several overlaid (results CSVs or calibration JSONs).
    Plot(PlotArgs),
    /// Compare runs side by side: ceilings and every case, with measured and spec ratios.
    Compare(CompareArgs),
    /// Read many runs as a fleet: per device model and driver, each metric's median and MAD,
    /// and every run below a threshold of its peers flagged (exit code 4).
    Fleet(FleetArgs),
    /// Regenerate table, roofline SVG and calibration JSON from results CSVs alone.
    Report(ReportArgs),
    /// Watch a running job on the measured roofline: memory against capacity, DRAM and the
    /// pipes against their ceilings, a verdict per phase (capacity, bandwidth, compute, idle
    /// gaps) with remedies; a timeline CSV written sample by sample (docs/watch.md).
    Watch(WatchArgs),
    /// Print a completion script for a shell: `roofprobe completions bash > roofprobe.bash`.
    Completions(CompletionsArgs),
    /// Internal: measures one GPU for a parent `run` (a job on stdin, one JSON line per event
    /// on stdout; see `roofprobe::run::worker`).
    #[command(name = "__worker", hide = true)]
    Worker,
}

#[derive(Debug, clap::Args)]
pub struct DevicesArgs {
    /// Print JSON instead of text: `{"cuda": …, "devices": […], "unusable": […]}`.
    #[arg(long)]
    pub json: bool,
    /// Also compile every kernel module with each GPU's driver (its JIT, through its linker) and
    /// write the machine code and the JIT's log to `DIR/cuda<N>/<module>.cubin` and `.log`, for
    /// `scripts/jit-sass`; exit code 1 if a module the device takes could not be written.
    /// Files there are never overwritten without --force.
    #[arg(long, value_name = "DIR")]
    pub jit_out: Option<std::path::PathBuf>,
    /// Replace the files --jit-out writes if they exist.
    #[arg(long, requires = "jit_out")]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
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
    /// Print JSON instead of text: figures as numbers, blanks as null.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// A results CSV written by `roofprobe run` (or, for the other estimators' formats, a
    /// calibration JSON).
    pub file: PathBuf,
    /// The file to write: roofprobe's calibration JSON, or another estimator's own hardware
    /// file (docs/exports.md says where each field comes from).
    #[arg(long, value_enum, default_value = "roofprobe")]
    pub format: crate::render::exports::Format,
    /// Give a field no run measures (`node.num_gpus_per_node=8`), or override one; repeatable.
    /// The keys are the format's own (docs/exports.md).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
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
pub struct EstimateArgs {
    /// Results CSVs or calibration JSONs: each run is a device, measured (side by side, the
    /// first the base of the ratios).
    pub files: Vec<PathBuf>,
    /// A device from the spec sheet alone (`"RTX 4090"`); repeatable, after the files.
    #[arg(long = "spec", value_name = "NAME")]
    pub specs: Vec<String>,
    /// Usable device memory in GiB, for the devices whose run measured none (no `capacity`
    /// rows) and whose spec sheet gives none; a note on stderr names each device that took a
    /// measured or sheet figure instead.
    #[arg(long, value_name = "GIB")]
    pub memory_gib: Option<f64>,
    /// A built-in model: llama-2-7b, llama-3.1-8b, llama-3.1-70b, mistral-7b-v0.1, qwen2.5-7b.
    #[arg(long, conflicts_with_all = ["config", "layers"])]
    pub model: Option<String>,
    /// A Hugging Face config.json of a dense decoder.
    #[arg(long, conflicts_with = "layers")]
    pub config: Option<PathBuf>,
    /// The shape by hand: layers (with --hidden, --heads, --ffn, --vocab; --kv-heads).
    #[arg(long, requires_all = ["hidden", "heads", "ffn", "vocab"])]
    pub layers: Option<u64>,
    // The rest of the shape is refused beside --model or --config, which it would not change.
    #[arg(long, conflicts_with_all = ["model", "config"])]
    pub hidden: Option<u64>,
    #[arg(long, conflicts_with_all = ["model", "config"])]
    pub heads: Option<u64>,
    /// KV heads (default: as many as heads).
    #[arg(long, conflicts_with_all = ["model", "config"])]
    pub kv_heads: Option<u64>,
    /// FFN inner size.
    #[arg(long, conflicts_with_all = ["model", "config"])]
    pub ffn: Option<u64>,
    #[arg(long, conflicts_with_all = ["model", "config"])]
    pub vocab: Option<u64>,
    /// A plain two-matrix FFN instead of a gated (SwiGLU) one.
    #[arg(long, conflicts_with_all = ["model", "config"])]
    pub ungated_ffn: bool,
    /// Inference or training.
    #[arg(long, value_enum, default_value = "inference")]
    pub mode: crate::analysis::estimate::Mode,
    // Each mode's own arguments are options without a clap default, so that the other mode
    // can refuse them when given (`commands::estimate::check_workload`) rather than ignore them.
    /// Inference: the weights' dtype [default: bf16].
    #[arg(long, value_enum)]
    pub weights: Option<crate::analysis::estimate::Dtype>,
    /// The arithmetic's dtype: its ceiling is the one used [default: bf16]. Training: bf16 or
    /// f16 (mixed precision), fp32 with --fp32-training.
    #[arg(long, value_enum)]
    pub activations: Option<crate::analysis::estimate::Dtype>,
    /// Inference: the KV cache's dtype [default: bf16].
    #[arg(long, value_enum)]
    pub kv_cache: Option<crate::analysis::estimate::Dtype>,
    /// Sequences at once.
    #[arg(long, default_value_t = 1)]
    pub batch: u64,
    /// Inference: prompt tokens [default: 512].
    #[arg(long)]
    pub prompt: Option<u64>,
    /// Inference: tokens generated [default: 128].
    #[arg(long)]
    pub generate: Option<u64>,
    /// Training: sequence length [default: 2048].
    #[arg(long)]
    pub seq: Option<u64>,
    /// Training: the optimizer [default: adam].
    #[arg(long, value_enum)]
    pub optimizer: Option<crate::analysis::estimate::Optimizer>,
    /// Training: everything in fp32 (default: mixed precision, 16-bit with fp32 master weights).
    #[arg(long)]
    pub fp32_training: bool,
    /// Training: full activation checkpointing.
    #[arg(long)]
    pub checkpointing: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
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
    /// Print JSON instead of the table: the runs, and the comparison's rows as `--csv` has them.
    #[arg(long)]
    pub json: bool,
    /// Replace the --svg and --csv files if they exist.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct FleetArgs {
    /// Results CSVs or calibration JSONs, from any number of machines; the same run given
    /// twice counts once.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Flag a run below this fraction of its peers' median on any metric (above 0, at most 1).
    #[arg(long, value_name = "RATIO", default_value = "0.9", value_parser = parse_threshold)]
    pub threshold: f64,
    /// Also write the report as tidy CSV (a row per run and metric) to this new file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Also write the report as JSON to this new file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Folder for the strip plots, `fleet-<metric>.svg` (created if missing).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Replace the --csv and --json files and the plots where they exist.
    #[arg(long)]
    pub force: bool,
}

/// Parses `--threshold`: a fraction above 0, at most 1.
fn parse_threshold(s: &str) -> std::result::Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a fraction of the peer median above 0 and at most 1 (e.g. 0.9)"
        )),
    }
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
    #[arg(long, default_value = "auto", value_parser = parse_device)]
    pub device: String,
    /// A smoke test: the default suite's cases (or those --suite or --full select) with the
    /// fewest samples, and smaller sizes where the figure allows it (never a DRAM working set).
    #[arg(long)]
    pub quick: bool,
    /// Every case of the plan, each sampled longer (as --suite all): the full characterisation,
    /// some minutes on a GPU, a quarter of an hour on a small host. Without it (and without
    /// --suite) `run` measures the default suite, which answers capacity, bandwidth or compute
    /// in about two minutes.
    #[arg(long, conflicts_with = "suite")]
    pub full: bool,
    /// Plan the run and list its cases, each with its estimated time, and the whole plan's
    /// estimate (seconds on the last line); measure nothing and write nothing. A GPU is opened
    /// and its modules loaded, as planning needs.
    #[arg(long)]
    pub dry_run: bool,
    /// Only these parts of the full plan (repeatable): memory, compute, gemm, llm, cache,
    /// latency, links, or all (docs/measurements.md lists what each holds); --filter narrows
    /// within them.
    #[arg(long, value_name = "NAME", value_parser = crate::cases::suite::parse_suite)]
    pub suite: Vec<crate::cases::suite::Suite>,
    /// Folder for the results files (created if missing; files are never overwritten: every
    /// run has a new name).
    #[arg(long, short, default_value = "results")]
    pub out: PathBuf,
    /// Bytes per array for the DRAM cases, e.g. `268435456`, `256MiB`, `1.5GiB`. Default: the
    /// larger of 4× the last-level cache and 256 MiB, reduced (and said so) to fit free memory.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub size: Option<u64>,
    /// Most timed samples per case (at least 2: a spread needs two points).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..))]
    pub samples: Option<u32>,
    /// Sample each case until the CV of its samples falls to this, in percent (0.5% when given
    /// without a value, as nvbench), or --stable-limit passes; each row's `stopped_by` says
    /// which. Replaces the fixed sample count.
    #[arg(
        long,
        value_name = "PERCENT",
        num_args = 0..=1,
        default_missing_value = "0.5%",
        value_parser = parse_percent,
        conflicts_with = "samples"
    )]
    pub until_stable: Option<f64>,
    /// With --until-stable: the most seconds a case samples before it stops unsettled.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "15",
        value_parser = parse_seconds,
        requires = "until_stable"
    )]
    pub stable_limit: f64,
    /// Run only the cases whose id (`family/kernel/precision[/param]`) contains this text
    /// (repeatable): of the suites --suite names, else of every case.
    #[arg(long)]
    pub filter: Vec<String>,
    /// Flag a figure whose CV (spread of its per-launch times) is above this, in percent.
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = parse_percent)]
    pub max_cv: f64,
    /// Flag a peak below this share of its theoretical peak at the clock it ran at, in percent.
    #[arg(long, value_name = "PERCENT", default_value = "80%", value_parser = parse_percent)]
    pub min_of_theory: f64,
    /// Flag a host figure during which other processes used more than this share of the CPU
    /// time of the CPUs it ran on, in percent.
    #[arg(long, value_name = "PERCENT", default_value = "10%", value_parser = parse_percent)]
    pub max_other_load: f64,
    /// The most seconds one batch of GPU launches may run before its kernel is presumed
    /// runaway: a case's first batch gets this, later ones 20 times what their launches took
    /// (at least 2 s). The case's row says so, and the cases left run in a fresh process.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_seconds)]
    pub kernel_timeout: f64,
    /// With `--device all` or `auto`: measure every GPU at once, each in its own process, instead
    /// of one after another (the default, since GPUs running together share the host's link and
    /// CPUs). Every row says how many ran at once (`parallel_devices`); the host, under `all`,
    /// is measured after the GPUs, alone.
    #[arg(long)]
    pub parallel: bool,
}

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Which device: `auto` (every CUDA GPU, else the host), `cuda:N`, `all` (every CUDA GPU and
    /// the host) or `host`.
    #[arg(long, default_value = "auto", value_parser = parse_device)]
    pub device: String,
    /// The job: this process and its children (their memory; the watch ends when they do).
    #[arg(long, conflicts_with = "command")]
    pub pid: Option<u32>,
    /// The ceilings: a calibration JSON of this device model (`roofprobe export`); repeatable.
    /// Without one (or --run) the spec's figures stand in, and the output says so.
    #[arg(long, value_name = "FILE")]
    pub calibration: Vec<PathBuf>,
    /// The ceilings: a results CSV of a run of this device model (`roofprobe run`); repeatable
    /// (each ceiling the highest any of them measured).
    #[arg(long, value_name = "FILE")]
    pub run: Vec<PathBuf>,
    /// Time between samples, seconds (`0.5s`, `2`); at least 0.05.
    #[arg(long, value_name = "SECONDS", default_value = "0.5s", value_parser = parse_seconds)]
    pub interval: f64,
    /// Stop after this many seconds (default: until Ctrl-C, or until the job ends).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// The timeline CSV, written sample by sample (never overwritten without --force). Default:
    /// `watch-<host>-<UTC stamp>.csv` in the current folder.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Print the summary as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also draw each device's trail over its roofline to this SVG (with several devices, one
    /// file each: `<stem>-<device>.svg`).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Use a calibration of another device model all the same, and replace the output files
    /// where they exist.
    #[arg(long)]
    pub force: bool,
    /// A job to start and watch to its end, after `--`: `roofprobe watch -- python train.py`.
    /// The watch exits with its exit code.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Parses a byte count with an optional unit: `4096`, `64K`, `256MiB`, `1.5GiB`, `1G`, `2GB`.
/// Binary units (K, M, G, T with or without `iB`) are powers of 1024; `KB`, `MB`, `GB`, `TB`
/// are powers of 1000. A fractional count is rounded down to whole bytes.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let not_a_count =
        || format!("`{s}` is not a byte count; write e.g. 268435456, 256MiB or 1.5GiB");
    if digits.is_empty() || digits.starts_with('.') || digits.ends_with('.') {
        return Err(not_a_count());
    }
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
    let bytes = match digits.parse::<u64>() {
        // whole numbers stay exact however large
        Ok(n) => n.checked_mul(mult),
        Err(_) => {
            let n: f64 = digits.parse().map_err(|_| not_a_count())?;
            let bytes = (n * mult as f64).floor();
            (bytes < u64::MAX as f64).then_some(bytes as u64)
        }
    }
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
        Command::Devices(args) => crate::commands::devices::devices(&args),
        Command::Specs(args) => crate::commands::specs::specs(&args),
        Command::Export(args) => crate::commands::export::export(&args),
        Command::Estimate(args) => crate::commands::estimate::estimate(&args),
        Command::Plot(args) => crate::commands::plot::plot(&args),
        Command::Compare(args) => crate::commands::compare::compare(&args),
        Command::Fleet(args) => crate::commands::fleet::fleet(&args),
        Command::Report(args) => crate::commands::report::report(&args),
        Command::Watch(args) => crate::commands::watch::watch(&args),
        Command::Completions(args) => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "roofprobe", &mut script);
            crate::commands::emit(&String::from_utf8_lossy(&script))?;
            Ok(0)
        }
        Command::Worker => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| crate::Error::io("<stdin>", e))?;
            let job: crate::run::worker::Job = serde_json::from_str(&text).map_err(|e| {
                crate::Error::Usage(format!(
                    "`{}` is roofprobe's own: `roofprobe run` starts it with a job ({e})",
                    crate::run::worker::SUBCOMMAND
                ))
            })?;
            Ok(crate::run::worker::serve(job))
        }
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
        // fractions of a unit, rounded down to whole bytes
        assert_eq!(parse_bytes("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("0.5K"), Ok(512));
        assert_eq!(parse_bytes("2.5"), Ok(2));
        assert!(parse_bytes("12XB")
            .unwrap_err()
            .contains("unknown unit `XB`"));
        for bad in ["abc", "", ".5G", "1.G", "1.2.3G", "GiB"] {
            assert!(
                parse_bytes(bad).unwrap_err().contains("not a byte count"),
                "{bad}"
            );
        }
        assert!(parse_bytes("0.1").is_err(), "under a byte");
        assert!(parse_bytes("1e30T").is_err());
    }

    #[test]
    fn devices() {
        for ok in ["auto", "host", "all", "cuda:0", "cuda:12"] {
            assert_eq!(parse_device(ok).as_deref(), Ok(ok));
        }
        for bad in [
            "gpu",
            "cuda:",
            "cuda:x",
            "cuda:-1",
            "cuda:+1",
            "cuda:99999999999999999999999",
            "cuda0",
            "HOST",
        ] {
            assert!(
                parse_device(bad).unwrap_err().contains("unknown device"),
                "{bad}"
            );
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
