//! Measuring the devices of a run: which devices (`--device`), each measured in this process
//! (the host) or in worker processes (a GPU, [`crate::run::worker`]), one after another or every
//! GPU at once; each device's CSV written row by row as its cases finish, its progress shown,
//! the plan's estimated time said first and where the time went said last.
//!
//! Each device gets `<out>/<run id>.csv`, the run id being `<host>-<device>-<UTC stamp>-<random
//! suffix>` (so two runs started in the same second on one host never share it), written row by
//! row as cases finish (an interrupted run keeps what it measured; a run that measured nothing
//! leaves no file). An existing file is never overwritten: a clashing name gets a `-2`, `-3`, …
//! suffix. The `run` command chooses the options and prints the tables; it holds none of this.

use crate::backend::cuda::device_count;
use crate::backend::host::HostBackend;
use crate::backend::{Backend, PlannedCase};
use crate::device::{BackendKind, DeviceInfo};
use crate::files::{fresh_path, random_u64};
use crate::results::csv::CsvSink;
use crate::results::record::{Record, RunIdentity};
use crate::run::runner::{self, Event, RunConfig};
use crate::{Error, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// How the devices of a run are measured, beside each device's [`RunConfig`].
#[derive(Clone, Debug)]
pub struct Options {
    /// The folder each device's CSV goes to.
    pub out: PathBuf,
    /// Seconds a GPU kernel may run before it is presumed runaway (`--kernel-timeout`).
    pub kernel_timeout_secs: f64,
    /// Every GPU at once, each in its own worker (`--parallel`); the host after them, alone.
    pub parallel: bool,
}

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
                crate::say!("note: the CUDA driver reports no device; measuring the host CPU");
                Ok(vec![Target::Host])
            }
            // a setting of ours that is wrong is the user's to fix, not a reason to skip the GPU
            Err(e @ Error::Usage(_)) => Err(e),
            Err(e) => {
                crate::say!(
                    "note: no usable GPU: {}; measuring the host CPU",
                    why_no_gpu(&e)
                );
                Ok(vec![Target::Host])
            }
        },
        "all" => {
            let mut t = match cuda_all() {
                Err(e @ Error::Usage(_)) => return Err(e),
                found => found,
            }
            .unwrap_or_else(|e| {
                crate::say!(
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
            crate::device::parse_device(other).map_err(Error::Usage)?;
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

/// One device's run as the user sees it: its CSV, created with its first row; its progress
/// bar or lines; the plan's estimated time said first and where the time went said last.
struct DeviceRun<'a> {
    out: &'a Path,
    host: &'a str,
    stamp: &'a str,
    cfg: &'a RunConfig,
    path: Option<PathBuf>,
    sink: Option<CsvSink>,
    interactive: bool,
    bar: ProgressBar,
    /// With `--parallel`: the bars of every device at once, and the device named on each line
    /// (`cuda:1: …`) so that lines from devices measured together can be told apart.
    together: Option<(MultiProgress, String)>,
    secs: runner::CaseSecs,
    started: std::time::Instant,
    /// The cases of its plan, to say how many a signal left unmeasured.
    planned: usize,
    /// What the plan's estimate said, to set beside the time taken.
    estimate_secs: Option<f64>,
}

impl<'a> DeviceRun<'a> {
    fn new(cfg: &'a RunConfig, out: &'a Path, host: &'a str, stamp: &'a str) -> Self {
        DeviceRun {
            out,
            host,
            stamp,
            cfg,
            path: None,
            sink: None,
            interactive: std::io::stderr().is_terminal(),
            bar: ProgressBar::hidden(),
            together: None,
            secs: runner::CaseSecs::default(),
            started: std::time::Instant::now(),
            planned: 0,
            estimate_secs: None,
        }
    }

    /// One of several devices measured at once: its lines name it, its bar joins `bars`.
    fn together(mut self, bars: &MultiProgress, device: &str) -> Self {
        self.together = Some((bars.clone(), device.to_string()));
        self
    }

    /// A line on stderr, above the progress bars, naming the device when several run at once.
    fn say(&self, line: &str) {
        // The device's name is the driver's: escaped, as every line on stderr is.
        let line = &crate::text::printable(line, true);
        match &self.together {
            Some((bars, device)) => {
                let line = format!("{device}: {}", line.trim_start());
                if self.interactive {
                    let _ = bars.println(&line);
                } else {
                    crate::say!("{line}");
                }
            }
            None => crate::say!("{line}"),
        }
    }

    /// The device and its plan are known: names the CSV, says what will run and for about how
    /// long, and starts the progress bar. Nothing is created before a case has a row.
    fn begin(&mut self, info: &DeviceInfo, planned: &[PlannedCase], min_sample_secs: f64) {
        let run_id = crate::device::run_id(self.host, info, self.stamp);
        let path = fresh_path(self.out, &run_id, "csv");
        let label = match info.backend {
            BackendKind::Cuda => "GPU",
            BackendKind::Host => "host CPU, no GPU used",
        };
        self.say(&format!(
            "measuring {} ({}, {label}) -> {}",
            info.name,
            info.id,
            path.display()
        ));
        let rates = crate::run::forecast::Rates::for_device(info).measure_pace();
        let secs = crate::run::forecast::plan_secs(planned, self.cfg, min_sample_secs, &rates);
        self.estimate_secs = Some(secs);
        self.say(&format!(
            "plan: {} cases ({}), about {} by the device's rated speeds{}",
            planned.len(),
            self.cfg.selection.describe(),
            crate::units::human(secs),
            pace_note(&rates)
        ));
        if self.interactive {
            match &self.together {
                Some((bars, _)) => self.bar = bars.add(ProgressBar::hidden()),
                None => self
                    .bar
                    .set_draw_target(indicatif::ProgressDrawTarget::stderr()),
            }
            self.bar.set_length(planned.len() as u64);
            self.bar.set_style(
                // indicatif's ETA: the cases left at the mean pace of those done
                ProgressStyle::with_template(&format!(
                    "{}{{bar:30}} {{pos}}/{{len}} {{elapsed}}, ETA {{eta}} {{msg}}",
                    self.together
                        .as_ref()
                        .map_or_else(String::new, |(_, d)| format!("{d} "))
                ))
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
        }
        // Created with its first row: a run interrupted before it leaves no empty file.
        self.sink = Some(CsvSink::new(&path));
        self.path = Some(path);
        self.started = std::time::Instant::now();
        self.planned = planned.len();
    }

    /// Writes a row to the CSV. On an error, the error says what the CSV keeps and gives the
    /// figure of the row that was lost, so that nothing measured goes unsaid.
    fn write(&mut self, record: &Record) -> Result<()> {
        let Some(sink) = &mut self.sink else {
            return Err(Error::Internal("a row before the device's plan".into()));
        };
        sink.write(record).map_err(|e| {
            let kept = match sink.rows() {
                0 => "no CSV was written".to_string(),
                n => format!(
                    "{} keeps the {n} row{} before it (`roofprobe report` on it writes their \
                     table, calibration and roofline)",
                    sink.path().display(),
                    if n == 1 { "" } else { "s" }
                ),
            };
            Error::Internal(format!(
                "{e}; the row of {} was not written (it measured {}); {kept}",
                record.case_id(),
                progress_figure(record)
            ))
        })
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Planned { .. } => {}
            Event::Started { case } => self.bar.set_message(case.id()),
            Event::Finished { record, secs } => {
                self.secs.add(&secs);
                if std::env::var_os(CASE_TIMES_ENV).is_some() {
                    self.say(&case_times(record.case_id(), &secs));
                }
                self.bar.inc(1);
                if !self.interactive {
                    let figure = progress_figure(record);
                    self.say(&format!("  {:<28} {figure}", record.case_id()));
                }
            }
        }
    }

    /// The CSV and rows, if any row was written; says where the time went.
    fn finish(self, records: Vec<Record>) -> Option<(PathBuf, Vec<Record>)> {
        self.bar.finish_and_clear();
        if !self.sink.as_ref().is_some_and(CsvSink::written) {
            return None;
        }
        let wall = self.started.elapsed().as_secs_f64().max(self.secs.total);
        let arrays = self.secs.arrays();
        let other = (wall - self.secs.measuring - arrays).max(0.0);
        let share = |secs: f64| 100.0 * secs / wall.max(1e-9);
        // what the OS took to give the run new memory, where the backend tells it apart
        let touched = if self.secs.touching >= 0.05 {
            format!(
                "; {} of it first touches of memory new to the run",
                crate::units::human(self.secs.touching)
            )
        } else {
            String::new()
        };
        let estimate = self
            .estimate_secs
            .map(|e| format!(" (the plan said about {})", crate::units::human(e)))
            .unwrap_or_default();
        self.say(&format!(
            "time: {} in all{estimate}: {} timing launches ({:.0} %), {} preparing and checking \
             arrays ({:.0} %{touched}), {} else ({:.0} %: conditions, clocks, starting processes)",
            crate::units::human(wall),
            crate::units::human(self.secs.measuring),
            share(self.secs.measuring),
            crate::units::human(arrays),
            share(arrays),
            crate::units::human(other),
            share(other)
        ));
        if crate::run::interrupt::requested() && records.len() < self.planned {
            self.say(&format!(
                "interrupted after {} of {} cases: the {} left were not run",
                records.len(),
                self.planned,
                self.planned - records.len()
            ));
        }
        Some((self.path?, records))
    }
}

/// Measures the host in this process; returns its rows (already written to its CSV), or
/// `None` when no case matches the filter.
fn measure_here(
    backend: &mut dyn Backend,
    cfg: &RunConfig,
    out: &Path,
    host: &str,
    stamp: &str,
) -> Result<Option<(DeviceInfo, PathBuf, Vec<Record>)>> {
    let planned = runner::plan(backend, cfg)?;
    let info = backend.info().clone();
    if planned.is_empty() {
        crate::say!(
            "note: no case of {} ({}) matches the filter",
            info.name,
            info.id
        );
        return Ok(None);
    }
    let device_run = std::cell::RefCell::new(DeviceRun::new(cfg, out, host, stamp));
    device_run
        .borrow_mut()
        .begin(&info, &planned, backend.min_sample_secs());
    let identity = RunIdentity {
        run_id: crate::device::run_id(host, &info, stamp),
        host: host.to_string(),
        device: info.clone(),
        parallel_devices: None,
    };
    let records = runner::run(
        backend,
        &identity,
        cfg,
        &planned,
        &mut |r| device_run.borrow_mut().write(r),
        &mut |e| device_run.borrow_mut().event(e),
    );
    let device_run = device_run.into_inner();
    let records = match records {
        Ok(r) => r,
        Err(e) => {
            device_run.bar.finish_and_clear();
            return Err(e);
        }
    };
    Ok(device_run
        .finish(records)
        .map(|(path, records)| (info, path, records)))
}

/// The job of the first worker for GPU `ordinal`: nothing to skip yet, no crash to remember;
/// `parallel_devices` with `--parallel`.
fn worker_job(
    ordinal: usize,
    opts: &Options,
    cfg: &RunConfig,
    host: &str,
    stamp: &str,
    parallel_devices: Option<u32>,
) -> crate::run::worker::Job {
    crate::run::worker::Job {
        ordinal,
        cfg: cfg.clone(),
        host: host.to_string(),
        stamp: stamp.to_string(),
        skip: Default::default(),
        kernel_timeout_secs: opts.kernel_timeout_secs,
        parallel_devices,
        cublas_crashed: None,
    }
}

/// Measures GPU `ordinal` in worker processes ([`crate::run::worker`]): a fault or a runaway kernel
/// costs its case, and the cases left run in a fresh process.
/// With `together`, it is one of that many GPUs measured at once (`--parallel`): its rows say
/// so, and its lines and progress bar name it.
fn measure_in_workers(
    ordinal: usize,
    opts: &Options,
    cfg: &RunConfig,
    host: &str,
    stamp: &str,
    together: Option<(&MultiProgress, u32)>,
) -> Result<Option<(DeviceInfo, PathBuf, Vec<Record>)>> {
    let job = worker_job(ordinal, opts, cfg, host, stamp, together.map(|(_, n)| n));
    let mut device_run = DeviceRun::new(cfg, &opts.out, host, stamp);
    if let Some((bars, _)) = together {
        device_run = device_run.together(bars, &format!("cuda:{ordinal}"));
    }
    let device_run = std::cell::RefCell::new(device_run);
    let device: std::cell::RefCell<Option<DeviceInfo>> = Default::default();
    let outcome = crate::run::worker::run(
        job,
        &mut |info| {
            *device.borrow_mut() = Some(info.clone());
            Ok(())
        },
        &mut |r| device_run.borrow_mut().write(r),
        &mut |e| {
            if let (Event::Planned { cases }, Some(info)) = (&e, device.borrow().as_ref()) {
                if cases.is_empty() {
                    device_run.borrow().say(&format!(
                        "note: no case of {} ({}) matches the filter",
                        info.name, info.id
                    ));
                } else {
                    // a GPU's samples last at least 10 ms (CudaBackend::min_sample_secs)
                    device_run.borrow_mut().begin(info, cases, 0.01);
                }
            }
            device_run.borrow_mut().event(e)
        },
    );
    let device_run = device_run.into_inner();
    let (info, records) = match outcome {
        Ok(r) => r,
        Err(e) => {
            device_run.bar.finish_and_clear();
            return Err(e);
        }
    };
    Ok(device_run
        .finish(records)
        .map(|(path, records)| (info, path, records)))
}

/// One device's plan as a dry run (`run --dry-run`) gives it: the device, and each case with
/// its estimated seconds ([`crate::run::forecast::plan_case_secs`]).
pub struct Planned {
    pub info: DeviceInfo,
    pub cases: Vec<(PlannedCase, f64)>,
    /// What the estimate took of the host's pace ([`pace_note`]).
    pub pace_note: String,
}

/// Plans `target` under `cfg` (whose `dry_run` is set) and measures nothing: the host in this
/// process, a GPU in one worker, which stops after its plan.
pub fn plan_only(target: Target, opts: &Options, cfg: &RunConfig, host: &str) -> Result<Planned> {
    debug_assert!(cfg.dry_run);
    let (info, cases, min_sample_secs) = match target {
        Target::Host => {
            let backend = HostBackend::new();
            let cases = runner::plan(&backend, cfg)?;
            (backend.info().clone(), cases, backend.min_sample_secs())
        }
        Target::Cuda(ordinal) => {
            let job = worker_job(ordinal, opts, cfg, host, "", None);
            let mut cases = Vec::new();
            let (info, _) =
                crate::run::worker::run(job, &mut |_| Ok(()), &mut |_| Ok(()), &mut |e| {
                    if let Event::Planned { cases: c } = e {
                        cases = c.to_vec();
                    }
                })?;
            // a GPU's samples last at least 10 ms (CudaBackend::min_sample_secs)
            (info, cases, 0.01)
        }
    };
    let rates = crate::run::forecast::Rates::for_device(&info).measure_pace();
    let secs = crate::run::forecast::plan_case_secs(&cases, cfg, min_sample_secs, &rates);
    Ok(Planned {
        info,
        cases: cases.into_iter().zip(secs).collect(),
        pace_note: pace_note(&rates),
    })
}

/// Set (to anything) to have `run` say where each case's time went, after its row: the
/// per-case split of the `time:` line, which `run --dry-run`'s estimates can be held against.
pub const CASE_TIMES_ENV: &str = "ROOFPROBE_CASE_TIMES";

/// The line [`CASE_TIMES_ENV`] asks for: `case_id`'s seconds timing, preparing (and of that,
/// first touches), checking and in all.
pub fn case_times(case_id: String, secs: &runner::CaseSecs) -> String {
    format!(
        "  time of {case_id}: {:.2} s timing, {:.2} s preparing ({:.2} s first touches), \
         {:.2} s checking, {:.2} s in all",
        secs.measuring, secs.preparing, secs.touching, secs.checking, secs.total
    )
}

/// What the plan line adds where the host is not given all its CPUs as the run starts (below
/// 90 % of them, [`crate::run::forecast::Rates::measure_pace`]): that share, which the
/// estimate has taken into account. Empty for a GPU or a host given about all of them.
pub fn pace_note(rates: &crate::run::forecast::Rates) -> String {
    if rates.backend == BackendKind::Host && rates.pace < 0.9 {
        format!(
            ", at the {:.0} % of its CPUs that other processes leave it now",
            100.0 * rates.pace
        )
    } else {
        String::new()
    }
}

/// The suffix that makes a run id unique: 8 hex digits, random per invocation.
pub fn run_suffix() -> String {
    format!("{:08x}", random_u64() as u32)
}

/// One device's outcome: its device, CSV and rows, or `None` when no case matched the filter.
pub type Measured = Result<Option<(DeviceInfo, PathBuf, Vec<Record>)>>;

/// Measures `targets` one after another, or with `parallel` every GPU among them at once (each
/// in its own worker, on a thread of this process that writes its CSV) and then the host, alone.
/// The outcomes come back in the order of `targets`.
pub fn measure_all(
    targets: &[Target],
    opts: &Options,
    cfg: &RunConfig,
    host: &str,
    stamp: &str,
) -> Vec<(Target, Measured)> {
    let parallel = opts.parallel;
    let here = |target: Target| -> Measured {
        // after a signal (crate::run::interrupt) no further device is started
        if crate::run::interrupt::requested() {
            return Ok(None);
        }
        match target {
            Target::Cuda(i) => measure_in_workers(i, opts, cfg, host, stamp, None),
            Target::Host => {
                let mut backend = HostBackend::new();
                measure_here(&mut backend, cfg, &opts.out, host, stamp)
            }
        }
    };
    let gpus: Vec<usize> = targets
        .iter()
        .filter_map(|t| match t {
            Target::Cuda(i) => Some(*i),
            Target::Host => None,
        })
        .collect();
    if !parallel || gpus.is_empty() {
        return targets.iter().map(|&t| (t, here(t))).collect();
    }
    let count = gpus.len() as u32;
    crate::say!(
        "measuring {count} GPU{} at once (--parallel): each in its own process, its rows saying \
         so",
        if count == 1 { "" } else { "s" }
    );
    let bars = MultiProgress::new();
    let mut outcomes: Vec<(Target, Measured)> = std::thread::scope(|scope| {
        let workers: Vec<_> = gpus
            .iter()
            .map(|&i| {
                let bars = &bars;
                let thread = scope.spawn(move || {
                    measure_in_workers(i, opts, cfg, host, stamp, Some((bars, count)))
                });
                (i, thread)
            })
            .collect();
        workers
            .into_iter()
            .map(|(i, thread)| {
                let outcome = thread.join().unwrap_or_else(|_| {
                    Err(Error::Internal(format!(
                        "the thread measuring cuda:{i} panicked"
                    )))
                });
                (Target::Cuda(i), outcome)
            })
            .collect()
    });
    // the host after the GPUs, alone: its kernels take every core the GPUs' workers use
    for &t in targets.iter().filter(|t| **t == Target::Host) {
        outcomes.push((t, here(t)));
    }
    outcomes
}

/// A row's figure in the progress lines printed without a terminal: a capacity row's size, a
/// launch row's time, else its bandwidth and operation rate (GOP/s for integer formats), each
/// where it has one (a GEMM's or a sweep point's both, as the table gives them), else its
/// status.
fn progress_figure(record: &Record) -> String {
    let size = (record.family == crate::cases::Family::Capacity && record.valid)
        .then(|| crate::units::bytes(record.working_set_bytes));
    let launch = record
        .valid
        .then(|| crate::render::table::launch_figure(record))
        .flatten();
    let ops = crate::cases::ops(record.precision);
    let rates = [
        record.gbps.map(|g| format!("{g:.2} GB/s")),
        record
            .gflops
            .filter(|&g| g > 0.0)
            .map(|g| format!("{g:.2} G{ops}/s")),
    ];
    let rates = rates.into_iter().flatten().collect::<Vec<_>>().join(", ");
    size.or(launch)
        .or((!rates.is_empty()).then_some(rates))
        .unwrap_or_else(|| record.status.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{peak, stream::StreamKernel, Precision};
    use crate::results::fixtures::measured;

    /// Bandwidth rows print GB/s, float peaks GFLOP/s, integer peaks GOP/s (an i32 multiply-add
    /// is not a floating-point operation), a row with both both (a triad does 2 flops an
    /// element; a copy none), and an invalid row its status, never a figure.
    #[test]
    fn progress_lines_name_the_unit_of_the_figure() {
        let copy = measured(
            &StreamKernel::Copy.case(Precision::F32, 1_000_000),
            1e-3,
            true,
        );
        assert_eq!(progress_figure(&copy), "8.00 GB/s");
        let triad = measured(
            &StreamKernel::Triad.case(Precision::F32, 1_000_000),
            1e-3,
            true,
        );
        assert_eq!(progress_figure(&triad), "12.00 GB/s, 2.00 GFLOP/s");
        let f32_peak = measured(&peak::case(Precision::F32, 1024, 1000, 8), 1e-3, true);
        assert!(progress_figure(&f32_peak).ends_with(" GFLOP/s"));
        let i32_peak = measured(&peak::case(Precision::I32, 1024, 1000, 8), 1e-3, true);
        let figure = progress_figure(&i32_peak);
        assert!(figure.ends_with(" GOP/s"), "{figure}");
        let invalid = measured(&peak::case(Precision::I32, 1024, 1000, 8), 1e-3, false);
        assert_eq!(progress_figure(&invalid), invalid.status);
    }

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
