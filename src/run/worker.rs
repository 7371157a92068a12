//! A GPU measured in processes of its own, so that one fault does not cost the run.
//!
//! A kernel fault leaves a CUDA context unusable until its process ends, and a kernel that
//! never ends keeps the GPU busy until its process ends. So `run` measures each GPU in a worker
//! process (the `roofprobe __worker` subcommand, given a [`Job`] on its stdin) that reports
//! each event as one JSON line ([`Message`]) on its stdout, and the parent writes the rows. When
//! the worker loses its device, it says so and exits at once (after a runaway kernel with
//! `_exit`, without waiting for the driver's teardown); when it dies, the parent writes the row
//! of the case it was running. Either way the parent starts a fresh worker for the cases left,
//! told to skip those already written, until every case has its row or a worker makes no
//! progress.
//!
//! The worker plans with the same configuration each time, so the cases and their order are
//! the same in every worker; every worker computes the same run id.

use crate::backend::cuda::CudaBackend;
use crate::backend::{Backend, PlannedCase};
use crate::device::DeviceInfo;
use crate::results::record::{Outcome, Record, RunIdentity};
use crate::run::runner::{self, CaseSecs, Event, RunConfig};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The hidden subcommand a worker runs as.
pub const SUBCOMMAND: &str = "__worker";

/// Exit code of a worker that lost its device: the parent continues in a fresh one.
pub const EXIT_LOST: i32 = 75;

/// What a worker is asked to measure.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// `cuda:N`'s N.
    pub ordinal: usize,
    pub cfg: RunConfig,
    /// The machine's name and the run's stamp: with the device they make the run id every row
    /// carries ([`crate::device::run_id`]), the same in every worker of a run.
    pub host: String,
    pub stamp: String,
    /// Case ids whose rows are written already.
    pub skip: BTreeSet<String>,
    /// The most one batch of launches may run before it is presumed runaway.
    pub kernel_timeout_secs: f64,
    /// With `run --parallel`: how many GPUs are measured at once, this one included (every row
    /// says so); `None` when it is measured alone.
    #[serde(default)]
    pub parallel_devices: Option<u32>,
    /// Why cuBLAS must not be loaded: an earlier worker of the run crashed loading it (the
    /// loader's line). Its rows are then skipped, saying so, instead of each costing a worker.
    #[serde(default)]
    pub cublas_crashed: Option<String>,
}

/// What a worker reports, one JSON line each, in this order: `Info`, `Planned`, then per case
/// `Started` and `Record`, and `Lost` if its device became unusable, `Crashed` if a library
/// crashed the loader.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Message {
    Info(Box<DeviceInfo>),
    /// Every case of the plan, those to skip included.
    Planned(Vec<PlannedCase>),
    Started(String),
    Record(Box<Record>, CaseSecs),
    /// Why the device became unusable; `runaway` when a kernel may still be running.
    Lost {
        cause: String,
        runaway: bool,
    },
    /// A library crashed the loader ([`crate::backend::cuda::loading`]): what its line said (which
    /// library, what to do). Written by the crash handler itself, just before the worker ends.
    Crashed {
        cause: String,
    },
    /// The worker could not measure at all (no such device, the sizes do not fit): what `run`
    /// would have said, and whether it was the user's mistake (exit 2) or not.
    Failed {
        message: String,
        usage: bool,
    },
}

fn send(message: &Message) {
    let mut out = std::io::stdout().lock();
    let line = serde_json::to_string(message).expect("messages are plain data");
    // A parent that went away cannot be told anything; the worker ends with its cases.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// The worker's side: measures `job` and reports on stdout; returns the exit code (0, or
/// [`EXIT_LOST`]). After a runaway kernel it does not return: it exits at once.
pub fn serve(job: Job) -> i32 {
    let failed = |e: Error| {
        send(&Message::Failed {
            usage: matches!(e, Error::Usage(_)),
            message: e.to_string(),
        });
        1
    };
    // a signal lets the case that runs finish and its row reach `run` (crate::run::interrupt)
    crate::run::interrupt::install_for_worker();
    // a library that crashes the loader is named to the parent, for the row it costs
    crate::backend::cuda::loading::report_crashes(|cause| {
        let m = Message::Crashed {
            cause: cause.to_string(),
        };
        serde_json::to_string(&m).expect("messages are plain data") + "\n"
    });
    if let Some(why) = &job.cublas_crashed {
        crate::backend::cuda::cublas::refuse(format!(
            "{why} (in an earlier process of this run, whose row says so)"
        ));
    }
    let mut backend = match CudaBackend::open(job.ordinal) {
        Ok(b) => b,
        Err(e) => return failed(e),
    };
    if job.kernel_timeout_secs.is_finite() && job.kernel_timeout_secs > 0.0 {
        backend.set_kernel_deadline(Duration::from_secs_f64(job.kernel_timeout_secs));
    }
    let health = backend.health();
    let info = backend.info().clone();
    send(&Message::Info(Box::new(info.clone())));
    let planned = match runner::plan(&backend, &job.cfg) {
        Ok(p) => p,
        Err(e) => return failed(e),
    };
    send(&Message::Planned(planned.clone()));
    // a dry run (`run --dry-run`) wanted the plan alone
    if job.cfg.dry_run {
        return 0;
    }
    let left: Vec<PlannedCase> = planned
        .into_iter()
        .filter(|p| !job.skip.contains(&p.case.id()))
        .collect();
    let identity = RunIdentity {
        run_id: crate::device::run_id(&job.host, &info, &job.stamp),
        host: job.host.clone(),
        device: info,
        parallel_devices: job.parallel_devices,
    };
    let outcome = runner::run(
        &mut backend,
        &identity,
        &job.cfg,
        &left,
        // The rows go to the parent with their timing, as each case finishes; the runner
        // stops after a case that lost the device, and the parent goes on in a fresh process.
        &mut |_| Ok(()),
        &mut |event| match event {
            Event::Started { case } => send(&Message::Started(case.id())),
            Event::Finished { record, secs } => {
                send(&Message::Record(Box::new(record.clone()), secs))
            }
            Event::Planned { .. } => {}
        },
    );
    match (outcome, health.lost()) {
        (_, Some((cause, runaway))) => {
            send(&Message::Lost { cause, runaway });
            if runaway {
                // The kernel may run until this process ends; the driver's teardown could wait
                // for it. Nothing of ours is left unwritten (stdout is flushed per message).
                // SAFETY: ends the process at once; no Rust state is used after.
                unsafe { libc::_exit(EXIT_LOST) };
            }
            EXIT_LOST
        }
        (Ok(_), None) => 0,
        (Err(e), None) => failed(e),
    }
}

/// Why a worker ended without a row for the case it was running: the library that crashed it,
/// the device it lost, or how it ended.
fn death(status: std::process::ExitStatus, crashed: Option<&str>, lost: Option<&str>) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(cause) = crashed {
        return format!("the measuring process ended: {cause}");
    }
    match (lost, status.signal(), status.code()) {
        (Some(cause), _, _) => format!("the device became unusable: {cause}"),
        (None, Some(signal), _) => {
            format!("the measuring process died (signal {signal}) while it ran this case")
        }
        (None, None, Some(code)) => {
            format!("the measuring process exited ({code}) while it ran this case")
        }
        _ => "the measuring process ended while it ran this case".to_string(),
    }
}

/// A worker process that is killed and reaped when dropped before it ended: whatever makes the
/// parent stop reading it early (an error writing a row, a panic), none is left running.
struct Reaped(std::process::Child);

impl std::ops::Deref for Reaped {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The device and its rows so far, after a signal; an error if the worker had not yet
/// described the device.
fn interrupted(
    info: Option<DeviceInfo>,
    records: Vec<Record>,
    ordinal: usize,
) -> Result<(DeviceInfo, Vec<Record>)> {
    match info {
        Some(device) => Ok((device, records)),
        None => Err(Error::Interrupted(format!("cuda:{ordinal}"))),
    }
}

/// The parent's side: measures `job`'s device in as many workers as it takes, handing each row
/// to `sink` as it arrives and each event to `on_event`, as [`runner::run`] does. `on_info` is
/// called once, with the device, before anything else. Returns the device and its rows.
pub fn run(
    mut job: Job,
    on_info: &mut dyn FnMut(&DeviceInfo) -> Result<()>,
    sink: &mut dyn FnMut(&Record) -> Result<()>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<(DeviceInfo, Vec<Record>)> {
    let exe = std::env::current_exe().map_err(|e| Error::io("<this program>", e))?;
    let mut seen = Seen::default();
    loop {
        // stopped by a signal (crate::run::interrupt): no fresh worker; what was measured stands
        if crate::run::interrupt::requested() {
            return interrupted(seen.info, seen.records, job.ordinal);
        }
        // killed and reaped on every early return below (a row that cannot be written): a
        // worker must never measure on alone, reparented, after its run has stopped
        let mut child = spawn(&exe, &job)?;
        // asked to stop after its case by a signal to `run` alone, until it is reaped below
        let _registered = crate::run::interrupt::Worker::new(child.id());
        let stdout = child.stdout.take().expect("piped");
        let before = seen.records.len();
        let end = seen.listen(stdout, &mut job, on_info, sink, on_event)?;
        let status = child.wait().map_err(|e| Error::io("<worker>", e))?;
        if let Some(e) = end.failed {
            return Err(e);
        }
        // a worker stopped by the signal before it could take it (or before its case) has no
        // row to give
        if crate::run::interrupt::requested() && end.running.is_none() {
            return interrupted(seen.info, seen.records, job.ordinal);
        }
        let Some(device) = seen.info.clone() else {
            return Err(Error::Worker(format!(
                "the measuring process for cuda:{} ended ({status}) before it described the device",
                job.ordinal
            )));
        };
        // The case it was running when it died has no row yet: it gets one saying so.
        if let Some(id) = &end.running {
            let why = death(status, end.crashed.as_deref(), end.lost.as_deref());
            seen.died_in(id, &why, &end, &device, &mut job, sink, on_event)?;
        }
        let left = seen
            .planned
            .iter()
            .filter(|p| !job.skip.contains(&p.case.id()))
            .count();
        if left == 0 || (status.success() && end.lost.is_none()) {
            return Ok((device, seen.records));
        }
        if seen.records.len() == before {
            return Err(Error::Worker(format!(
                "the measuring process for cuda:{} ended ({status}) without measuring anything; \
                 {left} cases are left unmeasured",
                job.ordinal
            )));
        }
        crate::say!(
            "note: cuda:{} {}; continuing the {left} cases left in a fresh process",
            job.ordinal,
            match (&end.crashed, &end.lost) {
                (Some(c), _) => format!("lost its process ({c})"),
                (None, Some(c)) => format!("became unusable ({c})"),
                (None, None) => format!("its process ended ({status})"),
            }
        );
    }
}

/// A worker process for `job`, its job written to its stdin, its stdout piped back.
fn spawn(exe: &std::path::Path, job: &Job) -> Result<Reaped> {
    let mut child = Reaped(
        Command::new(exe)
            .arg(SUBCOMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Error::io(exe, e))?,
    );
    let mut stdin = child.stdin.take().expect("piped");
    let text = serde_json::to_string(job).expect("a job is plain data");
    stdin
        .write_all(text.as_bytes())
        .map_err(|e| Error::io("<worker stdin>", e))?;
    Ok(child)
}

/// What the workers of one device have said so far: the device, its plan, every row.
#[derive(Default)]
struct Seen {
    info: Option<DeviceInfo>,
    planned: Vec<PlannedCase>,
    records: Vec<Record>,
}

/// How one worker's messages ended: the case it was running (if it died in one), why it was
/// lost or crashed, and a failure it reported.
#[derive(Default)]
struct End {
    running: Option<String>,
    lost: Option<String>,
    crashed: Option<String>,
    failed: Option<Error>,
}

impl Seen {
    /// Reads one worker's messages to their end: each row written and passed on as it comes.
    fn listen(
        &mut self,
        stdout: std::process::ChildStdout,
        job: &mut Job,
        on_info: &mut dyn FnMut(&DeviceInfo) -> Result<()>,
        sink: &mut dyn FnMut(&Record) -> Result<()>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<End> {
        let mut end = End::default();
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let message: Message = match serde_json::from_str(&line) {
                Ok(m) => m,
                // not ours (a library printing to stdout): shown, not parsed
                Err(_) => {
                    crate::say!("{line}");
                    continue;
                }
            };
            match message {
                Message::Info(i) => {
                    if self.info.is_none() {
                        on_info(&i)?;
                        self.info = Some(*i);
                    }
                }
                Message::Planned(p) => {
                    if self.planned.is_empty() {
                        on_event(Event::Planned { cases: &p });
                        self.planned = p;
                    }
                }
                Message::Started(id) => {
                    if let Some(p) = self.planned.iter().find(|p| p.case.id() == id) {
                        on_event(Event::Started { case: &p.case });
                    }
                    end.running = Some(id);
                }
                Message::Record(mut r, secs) => {
                    // The ratio to the reference row from every row written, those of earlier
                    // workers too (a fresh worker knows only its own).
                    if r.valid {
                        r.ratio_to_reference = runner::ratio_to_reference(&r, &self.records);
                    }
                    sink(&r)?;
                    on_event(Event::Finished { record: &r, secs });
                    job.skip.insert(r.case_id());
                    end.running = None;
                    self.records.push(*r);
                }
                Message::Lost { cause, .. } => end.lost = Some(cause),
                Message::Crashed { cause } => end.crashed = Some(cause),
                Message::Failed { message, usage } => {
                    end.failed = Some(if usage {
                        Error::Usage(message)
                    } else {
                        Error::Worker(message)
                    })
                }
            }
        }
        Ok(end)
    }

    /// The row of case `id`, which its worker died running (`why`), written and passed on.
    #[allow(clippy::too_many_arguments)]
    fn died_in(
        &mut self,
        id: &str,
        why: &str,
        end: &End,
        device: &DeviceInfo,
        job: &mut Job,
        sink: &mut dyn FnMut(&Record) -> Result<()>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<()> {
        let Some(p) = self.planned.iter().find(|p| p.case.id() == id) else {
            return Ok(());
        };
        let identity = RunIdentity {
            run_id: crate::device::run_id(&job.host, device, &job.stamp),
            host: job.host.clone(),
            device: device.clone(),
            parallel_devices: job.parallel_devices,
        };
        // a cuBLAS that crashed this worker would crash the next: its rows are skipped
        if end.crashed.is_some() && p.case.kernel == crate::cases::gemm::GPU_REFERENCE {
            job.cublas_crashed = end.crashed.clone();
        }
        let record = Record::new(
            &identity,
            runner::now_utc(),
            &p.case,
            Outcome::Failed { error: why },
            &Default::default(),
            p.note.clone(),
        );
        sink(&record)?;
        on_event(Event::Finished {
            record: &record,
            secs: CaseSecs::default(),
        });
        job.skip.insert(id.to_string());
        self.records.push(record);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_one_line_each() {
        let m = Message::Lost {
            cause: "CUDA_ERROR_ILLEGAL_ADDRESS during running scale_f32".into(),
            runaway: false,
        };
        let line = serde_json::to_string(&m).unwrap();
        assert!(!line.contains('\n'));
        match serde_json::from_str::<Message>(&line).unwrap() {
            Message::Lost { cause, runaway } => {
                assert!(cause.contains("ILLEGAL_ADDRESS") && !runaway)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_dead_worker_says_how_it_died() {
        use std::os::unix::process::ExitStatusExt;
        let killed = std::process::ExitStatus::from_raw(9);
        assert!(death(killed, None, None).contains("signal 9"));
        let lost = std::process::ExitStatus::from_raw(EXIT_LOST << 8);
        assert!(death(lost, None, Some("x did not finish")).contains("unusable: x did not finish"));
        let crashed = "loading y crashed the loader (…): reinstall it";
        assert_eq!(
            death(lost, Some(crashed), None),
            format!("the measuring process ended: {crashed}")
        );
    }
}
