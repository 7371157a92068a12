//! `roofprobe run`: turns the flags into a run's options, has [`crate::run::orchestrate`]
//! measure each device (its CSV written row by row), then prints each device's table, ceilings
//! and notes, and chooses the exit code. Each device's calibration `.json` and roofline `.svg`
//! go beside its CSV under the same stem ([`crate::run::outputs`]). A filter that matches no
//! case on any device is a usage error, before anything is written.

use crate::backend::SizeRequest;
use crate::cli::{RunArgs, EXIT_INVALID, EXIT_SUSPECT};
use crate::commands::emit;
use crate::device::hostname;
use crate::files::{output_folder, probe_folder};
use crate::render::table;
use crate::run::orchestrate::{measure_all, plan_only, resolve, run_suffix, Options, Target};
use crate::run::outputs::write_roofline;
use crate::run::runner::{self, RunConfig};
use crate::units::slug;
use crate::{Error, Result};

fn config(args: &RunArgs) -> Result<RunConfig> {
    use crate::cases::suite::Selection;
    let selection = Selection::chosen(args.full, &args.suite, !args.filter.is_empty());
    // the default suite's sampling (a filter alone too), or the full plan's for --full and
    // named suites; --quick's for any
    let mut cfg = if args.quick {
        RunConfig::quick()
    } else if args.full || !args.suite.is_empty() {
        RunConfig::full()
    } else {
        RunConfig::default_suite()
    };
    cfg.selection = selection;
    if let Some(bytes) = args.size {
        cfg.size = SizeRequest::BytesPerArray(bytes);
    }
    // clap has checked it is at least 2
    if let Some(samples) = args.samples {
        cfg.samples = samples;
        cfg.min_samples = cfg.min_samples.min(samples);
    }
    cfg.filter = args.filter.clone();
    cfg.dry_run = args.dry_run;
    if let Some(target_cv) = args.until_stable {
        cfg.stop = runner::Stop::UntilStable {
            target_cv,
            limit_secs: args.stable_limit,
        };
    }
    cfg.thresholds = crate::analysis::suspect::Thresholds {
        max_cv: args.max_cv,
        min_of_theory: args.min_of_theory,
        max_other_load: args.max_other_load,
    };
    Ok(cfg)
}

/// `run --dry-run`: each device's plan, listed with the estimate; nothing measured or written,
/// and no folder made. A filter that keeps no case on any device is the same usage error as a
/// run's.
fn dry_run(targets: &[Target], args: &RunArgs, cfg: &RunConfig) -> Result<i32> {
    let opts = Options {
        out: args.out.clone(),
        kernel_timeout_secs: args.kernel_timeout,
        parallel: false,
    };
    let host = slug(&hostname());
    let mut planned_any = false;
    for &target in targets {
        let planned = match plan_only(target, &opts, cfg, &host) {
            Ok(p) => p,
            Err(e) if targets.len() == 1 => return Err(e),
            Err(e) => {
                crate::say!("error: {target:?}: {e}");
                continue;
            }
        };
        if planned.cases.is_empty() {
            crate::say!(
                "note: no case of {} ({}) matches the filter",
                planned.info.name,
                planned.info.id
            );
            continue;
        }
        planned_any = true;
        emit(&crate::render::plan::text(
            &planned.info,
            &planned.cases,
            &cfg.selection.describe(),
            &planned.pace_note,
        ))?;
    }
    if !planned_any && !cfg.filter.is_empty() {
        return Err(no_case_matches(cfg));
    }
    Ok(0)
}

/// The usage error of a filter that keeps no case on any device.
fn no_case_matches(cfg: &RunConfig) -> Error {
    Error::Usage(format!(
        "no case matches --filter {} among {}; case ids are \
         family/kernel/precision[/param], e.g. stream/triad/f32 or peak/fma/f64; nothing \
         was measured or written",
        cfg.filter.join(", --filter "),
        cfg.selection.describe()
    ))
}

pub fn run(args: &RunArgs) -> Result<i32> {
    // A run that fails before it writes anything (no case matches the filter, no driver)
    // leaves no folder it made behind: `remove_dir` takes only an empty one.
    let made_folder = !args.out.exists();
    let result = run_into_folder(args);
    if made_folder && result.is_err() {
        let _ = std::fs::remove_dir(&args.out);
    }
    result
}

fn run_into_folder(args: &RunArgs) -> Result<i32> {
    let cfg = config(args)?;
    if args.parallel && !matches!(args.device.as_str(), "all" | "auto") {
        return Err(Error::Usage(format!(
            "--parallel measures every GPU at once; use it with --device all or auto, not `{}`",
            args.device
        )));
    }
    let targets = resolve(&args.device)?;
    if cfg.dry_run {
        return dry_run(&targets, args, &cfg);
    }
    output_folder(&args.out)?;
    // a folder that cannot take a file is found now, not after the first case is measured
    probe_folder(&args.out)?;
    // From here a signal stops the run after the case that runs, and what it measured is
    // reported and written as at its end.
    crate::run::interrupt::install_for_run();
    let host = slug(&hostname());
    let stamp = format!(
        "{}-{}",
        jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ"),
        run_suffix()
    );
    let mut all_valid = true;
    let mut suspect = false;
    let mut measured_any = false;
    let mut failures = Vec::new();
    let mut stdout_failed = None;
    let opts = Options {
        out: args.out.clone(),
        kernel_timeout_secs: args.kernel_timeout,
        parallel: args.parallel,
    };
    for (target, outcome) in measure_all(&targets, &opts, &cfg, &host, &stamp) {
        match outcome {
            Ok(None) => {}
            Ok(Some((info, path, records))) => {
                measured_any = true;
                // a skipped row (a reference library not installed) is no failure
                all_valid &= records.iter().all(|r| r.valid || r.is_skipped());
                suspect |= crate::analysis::suspect::any_suspect(&records);
                // The files first: a stdout that fails (a full disk, a closed terminal) must not
                // cost the calibration and roofline; its error is reported after them.
                let roofline = write_roofline(&info, &path, &records);
                let mut text = table::render(&records);
                text.push_str(&format!("results: {}\n", path.display()));
                match roofline {
                    Ok(lines) => text.push_str(&lines),
                    Err(e) => failures.push(e),
                }
                if let Some(note) = crate::analysis::suspect::stability(&records) {
                    text.push_str(&note);
                }
                if let Some(summary) = crate::analysis::suspect::summary(&records) {
                    text.push_str(&summary);
                }
                if let Err(e) = emit(&text) {
                    stdout_failed.get_or_insert(e);
                }
            }
            Err(e) if targets.len() == 1 => return Err(e),
            Err(e) => {
                crate::say!("error: {target:?}: {e}");
                failures.push(e);
            }
        }
    }
    if let Some(first) = failures.into_iter().chain(stdout_failed).next() {
        return Err(first);
    }
    if crate::run::interrupt::requested() {
        if !measured_any {
            return Err(Error::Interrupted("the run".into()));
        }
        crate::say!(
            "interrupted: the rows measured are written, with their table, calibration and \
             roofline; rerun to measure the rest"
        );
        return Ok(crate::run::interrupt::EXIT_INTERRUPTED);
    }
    if !measured_any && !cfg.filter.is_empty() {
        return Err(no_case_matches(&cfg));
    }
    Ok(if !all_valid {
        EXIT_INVALID
    } else if suspect {
        EXIT_SUSPECT
    } else {
        0
    })
}
