//! `roofprobe run`: pick the devices, measure each one, write its results beside each other in
//! the output folder, print the table.
//!
//! Each device gets `<out>/<run id>.csv`, the run id being `<host>-<device>-<UTC stamp>-<random
//! suffix>` (so two runs started in the same second on one host never share it), written row by
//! row as cases finish (an interrupted run keeps what it measured; a run that measured nothing
//! leaves no file), then its calibration `.json` and roofline `.svg` beside it under the same
//! stem. An existing file is never overwritten: a clashing name gets a `-2`, `-3`, … suffix.
//! A filter that matches no case on any device is a usage error, before anything is written.

use crate::backend::cuda::{device_count, CudaBackend};
use crate::backend::host::HostBackend;
use crate::backend::{Backend, BackendKind, DeviceInfo, SizeRequest};
use crate::calibration::{Calibration, FromRecords};
use crate::cli::{parse_device, RunArgs, EXIT_INVALID, EXIT_SUSPECT};
use crate::commands::emit;
use crate::commands::report::write_calibration_and_svg;
use crate::commands::{hostname, slug};
use crate::files::{fresh_path, output_folder, random_u64, Overwrite};
use crate::record::{CsvSink, Record, RunIdentity};
use crate::report::{ceilings, table};
use crate::runner::{self, Event, RunConfig};
use crate::specs::DeviceAttributes;
use crate::{Error, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// A device to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Cuda(usize),
    Host,
}

/// Resolves `--device` into targets. `auto` falls back to the host when there is no usable CUDA
/// device, and says why on stderr.
pub fn resolve(device: &str) -> Result<Vec<Target>> {
    let cuda_all = || device_count().map(|n| (0..n).map(Target::Cuda).collect::<Vec<_>>());
    match device {
        "host" => Ok(vec![Target::Host]),
        "auto" => match cuda_all() {
            Ok(t) if !t.is_empty() => Ok(t),
            Ok(_) => {
                eprintln!("note: the CUDA driver reports no device; measuring the host CPU");
                Ok(vec![Target::Host])
            }
            Err(e) => {
                eprintln!(
                    "note: no usable GPU: {}; measuring the host CPU",
                    why_no_gpu(&e)
                );
                Ok(vec![Target::Host])
            }
        },
        "all" => {
            let mut t = cuda_all().unwrap_or_else(|e| {
                eprintln!(
                    "note: no usable GPU: {}; measuring the host CPU only",
                    why_no_gpu(&e)
                );
                Vec::new()
            });
            t.push(Target::Host);
            Ok(t)
        }
        other => {
            // `--device` was parsed by clap; this is for callers of the library
            parse_device(other).map_err(Error::Usage)?;
            let index = other
                .strip_prefix("cuda:")
                .and_then(|i| i.parse::<usize>().ok())
                .ok_or_else(|| Error::Usage(format!("`{other}` is no CUDA device index")))?;
            Ok(vec![Target::Cuda(index)])
        }
    }
}

/// The reason alone, without the remedy the full error message adds (the note says what happens
/// instead).
fn why_no_gpu(e: &Error) -> String {
    match e {
        Error::NoDriver(why) => why.clone(),
        Error::Driver { during, message } => {
            format!("the driver failed during {during}: {message}")
        }
        other => other.to_string(),
    }
}

/// The file-name part naming a device: `cuda0-nvidia-h200`, `host-amd-epyc`.
pub fn device_slug(info: &crate::backend::DeviceInfo) -> String {
    match info.backend {
        BackendKind::Cuda => format!("{}-{}", slug(&info.id), slug(&info.name)),
        BackendKind::Host => format!("host-{}", slug(&info.name)),
    }
}

fn config(args: &RunArgs) -> Result<RunConfig> {
    let mut cfg = if args.quick {
        RunConfig::quick()
    } else {
        RunConfig::full()
    };
    if let Some(bytes) = args.size {
        cfg.size = SizeRequest::BytesPerArray(bytes);
    }
    // clap has checked it is at least 2
    if let Some(samples) = args.samples {
        cfg.samples = samples;
        cfg.min_samples = cfg.min_samples.min(samples);
    }
    cfg.filter = args.filter.clone();
    if let Some(target_cv) = args.until_stable {
        cfg.stop = runner::Stop::UntilStable {
            target_cv,
            limit_secs: args.stable_limit,
        };
    }
    cfg.thresholds = crate::hygiene::Thresholds {
        max_cv: args.max_cv,
        min_of_theory: args.min_of_theory,
        max_other_load: args.max_other_load,
    };
    Ok(cfg)
}

/// Measures one device; returns its CSV and rows (already written to it), or `None` when no
/// case matches the filter on this device.
fn measure_device(
    backend: &mut dyn Backend,
    cfg: &RunConfig,
    out: &Path,
    host: &str,
    stamp: &str,
) -> Result<Option<(PathBuf, Vec<Record>)>> {
    let planned = runner::plan(backend, cfg)?;
    let info = backend.info().clone();
    if planned.is_empty() {
        eprintln!(
            "note: no case of {} ({}) matches the filter",
            info.name, info.id
        );
        return Ok(None);
    }
    let run_id = format!("{host}-{}-{stamp}", device_slug(&info));
    let path = fresh_path(out, &run_id, "csv");
    // Created with its first row: a run interrupted before it leaves no empty file.
    let mut sink = CsvSink::new(&path);
    let label = match info.backend {
        BackendKind::Cuda => "GPU",
        BackendKind::Host => "host CPU, no GPU used",
    };
    eprintln!(
        "measuring {} ({}, {label}) -> {}",
        info.name,
        info.id,
        path.display()
    );
    let identity = RunIdentity {
        run_id,
        host: host.to_string(),
        device: info,
    };
    let interactive = std::io::stderr().is_terminal();
    let bar = ProgressBar::hidden();
    let records = runner::run(
        backend,
        &identity,
        cfg,
        &planned,
        &mut |r| sink.write(r),
        &mut |event| match event {
            Event::Planned { cases } => {
                if interactive {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    bar.set_length(cases.len() as u64);
                    bar.set_style(
                        // indicatif's ETA: the cases left at the mean pace of those done
                        ProgressStyle::with_template(
                            "{bar:30} {pos}/{len} {elapsed}, ETA {eta} {msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                }
            }
            Event::Started { case } => bar.set_message(case.id()),
            Event::Finished { record } => {
                bar.inc(1);
                if !interactive {
                    let figure = record
                        .gbps
                        .map(|g| format!("{g:.2} GB/s"))
                        .or(record.gflops.map(|g| format!("{g:.2} GFLOP/s")))
                        .unwrap_or_else(|| record.status.clone());
                    eprintln!("  {:<28} {figure}", record.case_id());
                }
            }
        },
    );
    bar.finish_and_clear();
    let records = records?;
    Ok(sink.written().then_some((path, records)))
}

/// Fits the run's roofline and writes its calibration JSON and SVG beside its CSV. The
/// measurements are already safe in the CSV; an error here says how to write the rest from it.
fn write_roofline(info: &DeviceInfo, csv: &Path, records: &[Record]) -> Result<()> {
    // The run knows the device's attributes (bus width, maximum clocks) that a CSV lacks.
    let written = Calibration::from_records(records, Some(DeviceAttributes::from_info(info)))
        .and_then(|cal| {
            emit(&ceilings::render(&cal))?;
            let dir = csv.parent().unwrap_or(Path::new("."));
            let stem = csv
                .file_stem()
                .map_or_else(|| "roofline".into(), |s| s.to_string_lossy().into_owned());
            write_calibration_and_svg(dir, &stem, &cal, Overwrite::Never)
        });
    match written {
        Ok((json, svg)) => {
            emit(&format!(
                "calibration: {}\nroofline: {}\n",
                json.display(),
                svg.display()
            ))?;
            Ok(())
        }
        Err(e) => Err(Error::Internal(format!(
            "the measurements are in {}, but its roofline was not written: {e}; `roofprobe \
             report {}` writes it again",
            csv.display(),
            csv.display()
        ))),
    }
}

/// The suffix that makes a run id unique: 8 hex digits, random per invocation.
pub fn run_suffix() -> String {
    format!("{:08x}", random_u64() as u32)
}

pub fn run(args: &RunArgs) -> Result<i32> {
    let cfg = config(args)?;
    let targets = resolve(&args.device)?;
    output_folder(&args.out)?;
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
    for target in &targets {
        let opened: Result<Box<dyn Backend>> = match *target {
            Target::Cuda(i) => CudaBackend::open(i).map(|b| Box::new(b) as Box<dyn Backend>),
            Target::Host => Ok(Box::new(HostBackend::new())),
        };
        let outcome = opened.and_then(|mut backend| {
            let info = backend.info().clone();
            measure_device(backend.as_mut(), &cfg, &args.out, &host, &stamp)
                .map(|m| m.map(|(path, records)| (info, path, records)))
        });
        match outcome {
            Ok(None) => {}
            Ok(Some((info, path, records))) => {
                measured_any = true;
                emit(&table::render(&records))?;
                emit(&format!("results: {}\n", path.display()))?;
                // a skipped row (a reference library not installed) is no failure
                all_valid &= records.iter().all(|r| r.valid || r.is_skipped());
                suspect |= crate::hygiene::any_suspect(&records);
                if let Err(e) = write_roofline(&info, &path, &records) {
                    failures.push(e);
                }
                if let Some(note) = crate::hygiene::stability(&records) {
                    emit(&note)?;
                }
                if let Some(summary) = crate::hygiene::summary(&records) {
                    emit(&summary)?;
                }
            }
            Err(e) if targets.len() == 1 => return Err(e),
            Err(e) => {
                eprintln!("error: {target:?}: {e}");
                failures.push(e);
            }
        }
    }
    if let Some(first) = failures.into_iter().next() {
        return Err(first);
    }
    if !measured_any && !cfg.filter.is_empty() {
        return Err(Error::Usage(format!(
            "no case matches --filter {}; case ids are family/kernel/precision[/param], e.g. \
             stream/triad/f32 or peak/fma/f64; nothing was measured or written",
            cfg.filter.join(", --filter ")
        )));
    }
    Ok(if !all_valid {
        EXIT_INVALID
    } else if suspect {
        EXIT_SUSPECT
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_resolve() {
        assert_eq!(resolve("host").unwrap(), vec![Target::Host]);
        assert_eq!(resolve("cuda:3").unwrap(), vec![Target::Cuda(3)]);
        let e = resolve("gpu0").unwrap_err().to_string();
        assert!(e.contains("unknown device `gpu0`") && e.contains("roofprobe devices"));
        assert!(resolve("cuda:x").is_err());
        // auto always resolves to something: GPUs, or the host
        assert!(!resolve("auto").unwrap().is_empty());
        assert_eq!(resolve("all").unwrap().last(), Some(&Target::Host));
    }
}
