//! criterion's command line, read as criterion (0.8) reads it, so that `benches/kernels.rs`
//! prepares only the cases criterion will run. Its own file so the test suite can check it
//! (tests/bench_filter.rs includes it: a bench target with `harness = false` runs no `#[test]`).

/// The benchmark filter `cargo bench -- ARGS` gives criterion (0.8), read from the same
/// arguments, so that `benches/kernels.rs` prepares only the cases criterion will run: on a
/// GPU, preparing every case (arrays of gigabytes, every module's JIT) for one benchmark would
/// cost minutes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BenchFilter {
    /// No filter: every benchmark runs.
    All,
    /// `--ignored`: none does.
    None,
    /// `FILTER --exact`: the one whose id is the text.
    Exact(String),
    /// `FILTER`: those whose id the text matches as a regular expression.
    Regex(String),
}

/// The [`BenchFilter`] of criterion's command line `args` (the program's name left out): its
/// one positional argument is the filter; the options criterion reads a value for
/// (`--sample-size 10`, `-b base`) carry that value, and `--opt=value` carries its own.
pub fn bench_filter<S: AsRef<str>>(args: &[S]) -> BenchFilter {
    const TAKES_VALUE: &[&str] = &[
        "-c",
        "--color",
        "-s",
        "--save-baseline",
        "-b",
        "--baseline",
        "--baseline-lenient",
        "--format",
        "--profile-time",
        "--load-baseline",
        "--sample-size",
        "--warm-up-time",
        "--measurement-time",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--plotting-backend",
        "--output-format",
    ];
    let (mut filter, mut exact, mut ignored) = (None, false, false);
    let mut args = args.iter().map(AsRef::as_ref);
    while let Some(arg) = args.next() {
        match arg {
            "--exact" => exact = true,
            "--ignored" => ignored = true,
            _ if TAKES_VALUE.contains(&arg) => {
                args.next();
            }
            _ if arg.starts_with('-') => {}
            _ => filter = filter.or(Some(arg.to_string())),
        }
    }
    match (ignored, filter, exact) {
        (true, _, _) => BenchFilter::None,
        (false, None, _) => BenchFilter::All,
        (false, Some(f), true) => BenchFilter::Exact(f),
        (false, Some(f), false) => BenchFilter::Regex(f),
    }
}

/// Whether criterion (0.8) measures on this command line (the program's name left out):
/// `cargo bench` passes `--bench`. Without it (`cargo test`, which runs a bench target once as a
/// test), or with `--test` or `--list`, criterion runs each benchmark once to check it, or lists
/// them, and measures nothing.
pub fn bench_measures<S: AsRef<str>>(args: &[S]) -> bool {
    let has = |flag: &str| args.iter().any(|a| a.as_ref() == flag);
    has("--bench") && !has("--test") && !has("--list")
}
