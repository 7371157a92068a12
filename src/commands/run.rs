//! `roofprobe run`: pick the devices, measure each one, write its results beside each other in
//! the output folder, print the table.
//!
//! Each device gets `<out>/<host>-<device>-<UTC stamp>.csv`, written row by row as cases finish
//! (an interrupted run keeps what it measured), then its calibration `.json` and roofline `.svg`
//! beside it under the same stem. An existing file is never overwritten: a clashing name gets a
//! `-2`, `-3`, … suffix.

use crate::backend::cuda::{device_count, CudaBackend};
use crate::backend::host::HostBackend;
use crate::backend::{Backend, BackendKind, DeviceInfo, SizeRequest};
use crate::calibration::Calibration;
use crate::cli::{parse_bytes, RunArgs, EXIT_INVALID};
use crate::commands::emit;
use crate::commands::report::write_calibration_and_svg;
use crate::commands::{hostname, slug};
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
            let index = other
                .strip_prefix("cuda:")
                .and_then(|i| i.parse::<usize>().ok())
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "unknown device `{other}`; use auto, host, all or cuda:N (see `roofprobe devices`)"
                    ))
                })?;
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

/// A path `<dir>/<stem>.<ext>` that does not exist yet (suffixing `-2`, `-3`, … if needed).
pub fn fresh_path(dir: &Path, stem: &str, ext: &str) -> PathBuf {
    let first = dir.join(format!("{stem}.{ext}"));
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|i| dir.join(format!("{stem}-{i}.{ext}")))
        .find(|p| !p.exists())
        .expect("an unused suffix exists")
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
    if let Some(size) = &args.size {
        cfg.size = SizeRequest::BytesPerArray(parse_bytes(size).map_err(Error::Usage)?);
    }
    if let Some(samples) = args.samples {
        if samples < 2 {
            return Err(Error::Usage(
                "--samples must be at least 2 (a spread needs two points)".into(),
            ));
        }
        cfg.samples = samples;
        cfg.min_samples = cfg.min_samples.min(samples);
    }
    cfg.filter = args.filter.clone();
    Ok(cfg)
}

/// Measures one device; returns its rows (already written to its CSV).
fn measure_device(
    backend: &mut dyn Backend,
    cfg: &RunConfig,
    out: &Path,
    host: &str,
    stamp: &str,
) -> Result<(PathBuf, Vec<Record>)> {
    let planned = runner::plan(backend, cfg)?;
    let info = backend.info().clone();
    let run_id = format!("{host}-{}-{stamp}", device_slug(&info));
    let path = fresh_path(out, &run_id, "csv");
    let mut sink = CsvSink::create_new(&path)?;
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
                        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                }
                if cases.is_empty() {
                    eprintln!("note: no case matches the filter");
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
    Ok((path, records))
}

/// Fits the run's roofline and writes its calibration JSON and SVG beside its CSV. The
/// measurements are already safe in the CSV, so a failure here is reported, not fatal: `roofprobe
/// report` can redo it from the CSV.
fn write_roofline(info: &DeviceInfo, csv: &Path, records: &[Record]) {
    if records.is_empty() {
        return;
    }
    // The run knows the device's attributes (bus width, maximum clocks) that a CSV lacks.
    let written = Calibration::from_records(records, Some(DeviceAttributes::from_info(info)))
        .and_then(|cal| {
            emit(&ceilings::render(&cal))?;
            let dir = csv.parent().unwrap_or(Path::new("."));
            let stem = csv
                .file_stem()
                .map_or_else(|| "roofline".into(), |s| s.to_string_lossy().into_owned());
            write_calibration_and_svg(dir, &stem, &cal)
        });
    match written {
        Ok((json, svg)) => {
            let _ = emit(&format!(
                "calibration: {}\nroofline: {}\n",
                json.display(),
                svg.display()
            ));
        }
        Err(e) => eprintln!(
            "note: the roofline of {} was not written ({e}); `roofprobe report {}` retries",
            csv.display(),
            csv.display()
        ),
    }
}

pub fn run(args: &RunArgs) -> Result<i32> {
    let cfg = config(args)?;
    let targets = resolve(&args.device)?;
    std::fs::create_dir_all(&args.out).map_err(|e| Error::io(&args.out, e))?;
    let host = slug(&hostname());
    let stamp = jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string();
    let mut all_valid = true;
    let mut failures = Vec::new();
    for target in &targets {
        let opened: Result<Box<dyn Backend>> = match *target {
            Target::Cuda(i) => CudaBackend::open(i).map(|b| Box::new(b) as Box<dyn Backend>),
            Target::Host => Ok(Box::new(HostBackend::new())),
        };
        let outcome = opened.and_then(|mut backend| {
            let info = backend.info().clone();
            measure_device(backend.as_mut(), &cfg, &args.out, &host, &stamp)
                .map(|(path, records)| (info, path, records))
        });
        match outcome {
            Ok((info, path, records)) => {
                emit(&table::render(&records))?;
                emit(&format!("results: {}\n", path.display()))?;
                all_valid &= records.iter().all(|r| r.valid || r.is_skipped());
                write_roofline(&info, &path, &records);
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
    Ok(if all_valid { 0 } else { EXIT_INVALID })
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

    #[test]
    fn fresh_paths_never_clash() {
        let dir = tempfile::tempdir().unwrap();
        let a = fresh_path(dir.path(), "x", "csv");
        assert_eq!(a, dir.path().join("x.csv"));
        std::fs::write(&a, "").unwrap();
        let b = fresh_path(dir.path(), "x", "csv");
        assert_eq!(b, dir.path().join("x-2.csv"));
        std::fs::write(&b, "").unwrap();
        assert_eq!(
            fresh_path(dir.path(), "x", "csv"),
            dir.path().join("x-3.csv")
        );
    }
}
