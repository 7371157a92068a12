//! `roofprobe watch`: place a running job on the measured roofline, live. Opens each device for
//! watching (`backend::*::watch`), holds it against its ceilings (a calibration or a run of the
//! same device model, else the spec's: `analysis::watch`), starts the job where one is given
//! after `--`, and takes a sample every interval (`run::watch`): each one placed, written to the
//! timeline at once and shown on stderr. At the end: the phases and verdicts, as text or JSON,
//! and the trail's SVG where asked.
//!
//! Bad input gets one line and writes nothing: an unknown pid, a calibration of another device
//! model (unless `--force`), an output that exists (unless `--force`), a job that cannot start.
//! A device lost mid-watch, or a signal, ends the watch with the timeline written so far kept,
//! and the summary of what was seen.

use crate::analysis::calibration::Calibration;
use crate::analysis::inputs::load_inputs;
use crate::analysis::watch::{check_models, place, summarise, Ceilings, Context, DeviceSummary};
use crate::backend::cuda::device_count;
use crate::backend::cuda::watch::CudaWatch;
use crate::backend::host::watch::{unknown_pid, HostWatch};
use crate::backend::watch::{process_alive, Watched};
use crate::cli::WatchArgs;
use crate::commands::{emit, emit_json};
use crate::device::hostname;
use crate::files::{write_new, Overwrite};
use crate::render::svg::trail;
use crate::render::watch::{live_line, summary_text, to_json, WatchJson, SCHEMA};
use crate::results::timeline::{TimelineRow, TimelineSink};
use crate::run::interrupt::EXIT_INTERRUPTED;
use crate::run::runner::now_utc;
use crate::run::watch::{Ended, Plan};
use crate::units::slug;
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The shortest interval: below it the sources' own sampling (NVML's utilisation period, a
/// GPM sample's cost) is all a sample would show.
pub const MIN_INTERVAL_SECS: f64 = 0.05;

enum Target {
    Cuda(usize),
    Host,
}

/// `--device` as targets: `auto` is every CUDA GPU, else the host (saying why).
fn resolve(device: &str) -> Result<Vec<Target>> {
    let gpus = || device_count().map(|n| (0..n).map(Target::Cuda).collect::<Vec<_>>());
    Ok(match device {
        "host" => vec![Target::Host],
        "auto" | "all" => {
            let mut t = match gpus() {
                Ok(t) => t,
                Err(e @ Error::Usage(_)) => return Err(e),
                Err(e) => {
                    let why = match e {
                        Error::NoDriver(why) => why,
                        Error::Driver { during, message } => {
                            format!("the driver failed during {during}: {message}")
                        }
                        other => other.to_string(),
                    };
                    crate::say!("note: no usable GPU ({why}); watching the host");
                    Vec::new()
                }
            };
            if t.is_empty() || device == "all" {
                t.push(Target::Host);
            }
            t
        }
        other => {
            let index = other
                .strip_prefix("cuda:")
                .and_then(|i| i.parse::<usize>().ok())
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "`{other}` is no device: use auto, all, host or cuda:N"
                    ))
                })?;
            vec![Target::Cuda(index)]
        }
    })
}

/// An output that exists is refused unless `force`, before anything is watched; with `force`
/// the timeline (written row by row, never over a file) is removed first.
fn check_output(path: &Path, force: bool, remove: bool) -> Result<()> {
    if path.symlink_metadata().is_err() || crate::files::is_stream(path) {
        return Ok(());
    }
    if !force {
        return Err(Error::Usage(format!(
            "{} exists; name another file, or pass --force to replace it",
            path.display()
        )));
    }
    if remove {
        std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

/// The SVG of device `id` when several are watched: `<stem>-<device>.svg`.
fn svg_path(base: &Path, id: &str, several: bool) -> PathBuf {
    if !several {
        return base.to_path_buf();
    }
    let stem = base
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    base.with_file_name(format!("{stem}-{}.svg", slug(id)))
}

/// `roofprobe watch`: checks what was asked, opens the devices against their ceilings, starts
/// the job, samples to the end, then prints the summary, writes the trails and says how it
/// ended (the exit code).
pub fn watch(args: &WatchArgs) -> Result<i32> {
    check_request(args)?;
    let cals = load_calibrations(args)?;
    let names = Names::new(args)?;
    let interval = Duration::from_secs_f64(args.interval);
    let (mut watchers, ceilings) = open_devices(args, &cals, interval)?;
    check_output(&names.out, args.force, true)?;

    // From here a signal ends the watch after its sample; the job starts last, so its start
    // is on the timeline.
    crate::run::interrupt::install_for_watch();
    let mut job = start_job(&args.command)?;
    let pid = job.as_ref().map(|c| c.id()).or(args.pid);
    if let Some(p) = job.as_ref().map(|c| c.id()) {
        for w in &mut watchers {
            w.watch_process(p);
        }
    }
    announce(args, &watchers, &names.out, job.is_some());

    let mut sink = TimelineSink::new(&names.out);
    let mut rows: Vec<Vec<TimelineRow>> = vec![Vec::new(); watchers.len()];
    let plan = Plan {
        interval,
        duration: args.duration.map(Duration::from_secs_f64),
        pid: if job.is_some() { None } else { args.pid },
    };
    let devices: Vec<_> = watchers.iter().map(|w| w.device().clone()).collect();
    let ended = crate::run::watch::watch(&mut watchers, &plan, job.as_mut(), |i, reading, t| {
        let ctx = Context {
            device: &devices[i],
            ceilings: &ceilings[i],
            watch_id: &names.watch_id,
            host: &names.host,
            pid,
        };
        let row = place(&ctx, reading, t, now_utc());
        sink.write(&row)?;
        crate::say!("{}", crate::text::one_line(&live_line(&row)));
        rows[i].push(row);
        Ok(())
    })?;
    if job.is_some() && !matches!(ended, Ended::JobEnded(_)) {
        crate::say!(
            "note: the job (pid {}) still runs: the watch ended ({}), the job was left alone",
            pid.unwrap_or_default(),
            ended.describe()
        );
    }

    let summaries: Vec<_> = devices
        .iter()
        .zip(&ceilings)
        .zip(&rows)
        .map(|((d, c), r)| summarise(d, c, r))
        .collect();
    print_summaries(args, &names, &ended, sink.rows(), &summaries, &rows)?;
    write_trails(args, &summaries, &rows)?;
    finish(ended, sink.rows(), &names.out)
}

/// What can be refused before anything is read: an interval too short, a pid that is not there.
fn check_request(args: &WatchArgs) -> Result<()> {
    if args.interval < MIN_INTERVAL_SECS {
        return Err(Error::Usage(format!(
            "--interval {} s is too short: {MIN_INTERVAL_SECS} s at least",
            args.interval
        )));
    }
    if let Some(p) = args.pid {
        if !process_alive(p) {
            return Err(unknown_pid(p));
        }
    }
    Ok(())
}

/// The calibrations of `--calibration` and `--run`, each input's.
fn load_calibrations(args: &WatchArgs) -> Result<Vec<Calibration>> {
    let files: Vec<PathBuf> = args.calibration.iter().chain(&args.run).cloned().collect();
    Ok(if files.is_empty() {
        Vec::new()
    } else {
        load_inputs(&files, true)?
            .into_iter()
            .map(|i| i.run.calibration)
            .collect()
    })
}

/// The watch's names: this host, the watch's id, and its timeline's path.
struct Names {
    host: String,
    watch_id: String,
    out: PathBuf,
}

impl Names {
    /// The names, with the timeline and the SVG checked (not yet removed): stdout would mix the
    /// timeline with the summary, and a file that exists needs `--force`.
    fn new(args: &WatchArgs) -> Result<Names> {
        let host = slug(&hostname());
        let stamp = jiff::Timestamp::now()
            .strftime("%Y%m%dT%H%M%SZ")
            .to_string();
        let watch_id = format!("{host}-watch-{stamp}");
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("watch-{host}-{stamp}.csv")));
        if crate::files::is_stdout(&out) {
            return Err(Error::Usage(
                "-o - would mix the timeline with the summary on stdout: name a file (or a pipe)"
                    .to_string(),
            ));
        }
        check_output(&out, args.force, false)?;
        if let Some(svg) = &args.svg {
            check_output(svg, args.force, false)?;
        }
        Ok(Names {
            host,
            watch_id,
            out,
        })
    }
}

/// The devices being watched, each behind its source of readings.
type Watchers = Vec<Box<dyn Watched>>;

/// The devices of `--device`, opened for watching, each with its ceilings: the calibrations of
/// its kind (a host run says nothing of a GPU), else the spec's.
fn open_devices(
    args: &WatchArgs,
    cals: &[Calibration],
    interval: Duration,
) -> Result<(Watchers, Vec<Ceilings>)> {
    let mut watchers: Watchers = Vec::new();
    for target in resolve(&args.device)? {
        watchers.push(match target {
            Target::Cuda(i) => Box::new(CudaWatch::open(i, args.pid, interval)?),
            Target::Host => Box::new(HostWatch::open(args.pid)?),
        });
    }
    let mut ceilings = Vec::new();
    for w in &watchers {
        let d = w.device();
        let mine: Vec<_> = cals
            .iter()
            .filter(|c| c.device.backend == d.info.backend)
            .cloned()
            .collect();
        for note in check_models(&d.info, &mine, args.force)? {
            crate::say!("note: {note}");
        }
        if !cals.is_empty() && mine.is_empty() {
            crate::say!(
                "note: no calibration given is of a {} device; {}'s ceilings are the spec's",
                d.info.backend,
                d.info.id
            );
        }
        ceilings.push(Ceilings::new(&d.info, &mine));
    }
    Ok((watchers, ceilings))
}

/// The job after `--`, started; none where none was given.
fn start_job(command: &[String]) -> Result<Option<std::process::Child>> {
    Ok(match command.split_first() {
        Some((program, rest)) => Some(
            std::process::Command::new(program)
                .args(rest)
                .spawn()
                .map_err(|e| Error::Usage(format!("cannot start `{program}`: {e}")))?,
        ),
        None => None,
    })
}

/// On stderr: each device, its signal and why, and where the timeline goes.
fn announce(args: &WatchArgs, watchers: &[Box<dyn Watched>], out: &Path, job: bool) {
    for w in watchers {
        let d = w.device();
        crate::say!(
            "watching {} ({}) every {} s: signal {}{}",
            d.info.id,
            d.info.name,
            args.interval,
            d.signal.as_str(),
            if d.signal.sees_the_roofline() {
                ""
            } else {
                " (coarse)"
            }
        );
        for why in &d.signal_why {
            crate::say!("  {why}");
        }
    }
    crate::say!(
        "timeline: {} (a row per sample){}",
        out.display(),
        if job {
            "; the watch ends with the job"
        } else {
            "; Ctrl-C ends it"
        }
    );
}

/// The phases and verdicts of each device on stdout, as JSON or text.
fn print_summaries(
    args: &WatchArgs,
    names: &Names,
    ended: &Ended,
    timeline_rows: usize,
    summaries: &[DeviceSummary],
    rows: &[Vec<TimelineRow>],
) -> Result<()> {
    if args.json {
        let notes: Vec<String> = Vec::new();
        emit_json(&to_json(&WatchJson {
            schema: SCHEMA,
            watch_id: &names.watch_id,
            timeline: (timeline_rows > 0).then(|| names.out.display().to_string()),
            ended: ended.describe(),
            notes: &notes,
            devices: summaries,
        }))
    } else {
        let mut text = format!("watch {}: ended: {}\n", names.watch_id, ended.describe());
        for (s, r) in summaries.iter().zip(rows) {
            text.push_str(&summary_text(s, &r.iter().collect::<Vec<_>>()));
        }
        emit(&text)
    }
}

/// Each device's trail, where `--svg` asks for it.
fn write_trails(
    args: &WatchArgs,
    summaries: &[DeviceSummary],
    rows: &[Vec<TimelineRow>],
) -> Result<()> {
    if let Some(base) = &args.svg {
        for (s, r) in summaries.iter().zip(rows) {
            let path = svg_path(base, &s.device_id, summaries.len() > 1);
            let svg = trail::render(s, &r.iter().collect::<Vec<_>>())?;
            write_new(&path, svg.as_bytes(), Overwrite::from_force(args.force))?;
            crate::say!("trail: {}", path.display());
        }
    }
    Ok(())
}

/// How the watch ended, said once, with what became of the timeline: the exit code (the job's
/// own where the watch ran one), or the lost device's error.
fn finish(ended: Ended, timeline_rows: usize, out: &Path) -> Result<i32> {
    let kept = if crate::files::is_stream(out) {
        format!("{timeline_rows} rows went to {}", out.display())
    } else if timeline_rows > 0 {
        format!(
            "the timeline ({timeline_rows} rows) is kept in {}",
            out.display()
        )
    } else {
        "no sample was taken, so no timeline was written".to_string()
    };
    match ended {
        Ended::Interrupted => {
            crate::say!("interrupted: the watch ended; {kept}");
            Ok(EXIT_INTERRUPTED)
        }
        Ended::DeviceLost { device, cause } => Err(Error::Driver {
            during: format!("the watch of {device}"),
            message: format!("it answers no more ({cause}); {kept}"),
        }),
        Ended::JobEnded(code) => {
            crate::say!("{kept}");
            Ok(code.unwrap_or(1))
        }
        Ended::Duration | Ended::ProcessEnded(_) => {
            crate::say!("{kept}");
            Ok(0)
        }
    }
}
