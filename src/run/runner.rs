//! The runner: for each case, prepare → size the batch → warm up → sample → verify → one row,
//! written out before the next case starts ("because we would risk losing them if a later
//! benchmark fails", as hyperfine puts it).
//!
//! Timing policy. A sample is `reps` launches back to back, timed as one interval by the
//! backend's own clock, with `reps` chosen so a sample lasts at least the backend's
//! `min_sample_secs` (launch overhead and timer resolution stay out of the figure); the per-launch
//! time of a sample is its interval / `reps`. The first launch (module load, JIT, page faults) is
//! discarded, then warm-up samples run for `warmup_secs`, then between `min_samples` and
//! `samples` samples are kept, as many as fit in `case_budget_secs`. The figures use the median.
//!
//! No row measures more than its theory: a figure above [`THEORY_TOLERANCE`] × the theoretical
//! peak at the clock the row records is invalid (see [`check_against_theory`]), on every backend.
//! Before a figure is judged so, the case is asked for its clock once more: the host reads its
//! cores' clock after the samples, and a reading an interruption made low would otherwise make
//! a sound figure look above its theory; a GPU's clock is the kernel's own record and stays. A
//! row whose clock was read twice says so in its note.
//!
//! `--until-stable` ([`Stop::UntilStable`]) samples instead until the CV of the samples kept
//! falls to a target (at least [`STABLE_MIN_SAMPLES`] of them), or a time limit passes, and the
//! row records which (`stopped_by`). This is nvbench's `stdrel` stopping criterion (relative
//! standard deviation, 0.5 % and 15 s by default there too), on all samples kept rather than a
//! window, so the CV the row reports is the one the criterion saw.
//!
//! Each valid row is judged before it is written ([`crate::analysis::suspect`]): its spread, its share of
//! theory, its place under the roof of the run so far (the STREAM and peak cases that set the
//! roof run before the sweep's points on both backends), and the load others put on the
//! machine while it ran; what is suspect goes in its `flags`.
//!
//! Conditions (clocks, power, temperature, throttling) are read from a thread of their own while
//! a case's samples run, where the backend has a probe ([`crate::run::sampler`]).
//!
//! The runner does not print: it reports progress through a callback, and the caller decides.

use crate::analysis::calibration::{Calibration, FromRecords};
use crate::analysis::roofline::Point;
use crate::analysis::suspect::{self, Thresholds};
use crate::backend::{Backend, PlannedCase, PreparedCase, SizeRequest};
use crate::cases::suite::Selection;
use crate::cases::{Case, Verdict};
use crate::device::Conditions;
use crate::results::record::{Outcome, Record, RunIdentity};
use crate::run::sampler::{self, Sampler};
use crate::specs::DeviceAttributes;
use crate::stats::{RunningCv, Stopped, Summary};
use crate::Result;
use std::time::Instant;

/// How long and how often to measure.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunConfig {
    /// Most samples kept per case.
    pub samples: u32,
    /// Fewest samples kept per case, whatever the budget.
    pub min_samples: u32,
    /// Warm-up time per case, after the discarded first launch.
    pub warmup_secs: f64,
    /// Timed seconds to aim for per case; caps the sample count for slow cases.
    pub case_budget_secs: f64,
    pub size: SizeRequest,
    /// Keep only cases whose id contains one of these (empty: every case).
    pub filter: Vec<String>,
    /// When a valid figure is flagged as suspect.
    pub thresholds: Thresholds,
    /// When a case stops sampling.
    pub stop: Stop,
    /// Which cases: the default suite, named suites, or every case (`--full`).
    pub selection: Selection,
    /// `--quick`: besides the fewest samples, smaller sizes where the figure allows it (never a
    /// DRAM working set; see [`crate::run::forecast::shorten`]).
    pub quick: bool,
}

/// When a case stops sampling.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Stop {
    /// After a count fixed up front: as many samples as fit the case budget, within
    /// `min_samples ..= samples`.
    Count,
    /// When the CV of the samples is at most `target_cv` (after [`STABLE_MIN_SAMPLES`]), or
    /// `limit_secs` of sampling have passed (and at least `min_samples`).
    UntilStable { target_cv: f64, limit_secs: f64 },
}

/// Samples a `--quick` case takes: the fewest whose spread says anything beyond two points.
pub const QUICK_SAMPLES: u32 = 3;

/// Fewest samples whose CV `--until-stable` trusts (nvbench's default minimum too).
pub const STABLE_MIN_SAMPLES: usize = 10;

/// Most samples a compute-peak case takes (see [`RunConfig::for_case`]).
pub const COMPUTE_SAMPLES: u32 = 10;
/// Most seconds of warm-up before a compute-peak case's samples.
pub const COMPUTE_WARMUP_SECS: f64 = 0.05;
/// Most seconds of warm-up before a GEMM case's samples.
pub const GEMM_WARMUP_SECS: f64 = 0.1;

impl RunConfig {
    /// `--full`: every case, each sampled for up to [`Self::case_budget_secs`] of 2 s.
    pub fn full() -> Self {
        RunConfig {
            samples: 30,
            min_samples: 5,
            warmup_secs: 0.2,
            case_budget_secs: 2.0,
            size: SizeRequest::Auto,
            filter: Vec::new(),
            thresholds: Thresholds::default(),
            stop: Stop::Count,
            selection: Selection::full(),
            quick: false,
        }
    }

    /// `roofprobe run`: the default suite ([`crate::cases::suite`]), each case sampled for up to
    /// half a second after a tenth of one of warm-up (the full run's budget would cost a
    /// default run four times its time for a spread that the figures rarely need).
    pub fn default_suite() -> Self {
        RunConfig {
            warmup_secs: 0.1,
            case_budget_secs: 0.5,
            selection: Selection::Default,
            ..Self::full()
        }
    }

    /// `--quick`: the default suite's cases with the fewest samples (three), smaller sizes
    /// where the figure allows it; a smoke test.
    pub fn quick() -> Self {
        RunConfig {
            samples: QUICK_SAMPLES,
            min_samples: QUICK_SAMPLES,
            warmup_secs: 0.05,
            case_budget_secs: 0.0,
            quick: true,
            ..Self::default_suite()
        }
    }

    /// The schedule `case` runs under: the run's, except for two families of many small
    /// cases whose curve, not any one case's spread, is the figure, and which the cases before
    /// them have warmed: a step of the cache sweep ([`crate::cases::cache::is_sweep_step`])
    /// and a latency chase (one thread's dependent loads: a per-level plateau, not one
    /// working set's spread, is its figure, and its long launches vary little) take the fewest
    /// samples, and a case of the size sweep (`efficiency`)
    /// [`crate::cases::efficiency::SAMPLES`], each after a warm-up of one sample, as a count
    /// whatever the budget or `--until-stable` say. The compute peaks (`peak`, `tensor`: one
    /// wave of fixed work whose block records carry the SM clock it ran at, the clock their
    /// %theory uses) take at most [`COMPUTE_SAMPLES`] samples after at most
    /// [`COMPUTE_WARMUP_SECS`] of warm-up: their spread is the clock's, which the records show,
    /// and Hopper's 14 `wgmma` rows then fit the four-minute default run. A GEMM case warms up
    /// for at most [`GEMM_WARMUP_SECS`] (the run's other settings kept; NVML's sampler records
    /// the clock its samples ran at), so the 160-odd GEMM rows of a default H200 run leave room
    /// for Hopper's fp8 pair. The estimate ([`crate::run::forecast::case_secs`]) follows the same schedule.
    pub fn for_case(&self, case: &Case) -> RunConfig {
        let few = RunConfig {
            warmup_secs: 0.0,
            case_budget_secs: 0.0,
            stop: Stop::Count,
            ..self.clone()
        };
        if crate::cases::cache::is_sweep_step(case) || case.family == crate::cases::Family::Latency
        {
            few
        } else if case.family == crate::cases::Family::Efficiency {
            let samples = crate::cases::efficiency::SAMPLES;
            RunConfig {
                samples,
                min_samples: samples,
                ..few
            }
        } else if case.family == crate::cases::Family::Gemm {
            RunConfig {
                warmup_secs: self.warmup_secs.min(GEMM_WARMUP_SECS),
                ..self.clone()
            }
        } else if matches!(
            case.family,
            crate::cases::Family::Peak | crate::cases::Family::Tensor
        ) {
            RunConfig {
                samples: self.samples.min(COMPUTE_SAMPLES),
                min_samples: self.min_samples.min(COMPUTE_SAMPLES),
                warmup_secs: self.warmup_secs.min(COMPUTE_WARMUP_SECS),
                ..self.clone()
            }
        } else {
            self.clone()
        }
    }

    /// Whether `--filter` keeps `case`: no filter, or one that is part of its id.
    pub fn keeps(&self, case: &Case) -> bool {
        let id = case.id();
        self.filter.is_empty() || self.filter.iter().any(|f| id.contains(f.as_str()))
    }
}

/// What the runner reports while it works.
pub enum Event<'a> {
    /// The cases that will run, in order.
    Planned {
        cases: &'a [PlannedCase],
    },
    Started {
        case: &'a Case,
    },
    Finished {
        record: &'a Record,
        /// Where the case's time went.
        secs: CaseSecs,
    },
}

/// Where one case's wall time went: timing its launches (the discarded one, the warm-up and
/// the samples), preparing its arrays (allocating and filling them, and freeing them after),
/// checking them, and everything else (the conditions around it, the row written).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CaseSecs {
    pub measuring: f64,
    #[serde(default)]
    pub preparing: f64,
    #[serde(default)]
    pub checking: f64,
    pub total: f64,
}

impl CaseSecs {
    /// Seconds outside the timed launches.
    pub fn outside(&self) -> f64 {
        (self.total - self.measuring).max(0.0)
    }

    /// Seconds preparing and checking the arrays.
    pub fn arrays(&self) -> f64 {
        self.preparing + self.checking
    }

    /// Adds another case's seconds.
    pub fn add(&mut self, other: &CaseSecs) {
        self.measuring += other.measuring;
        self.preparing += other.preparing;
        self.checking += other.checking;
        self.total += other.total;
    }
}

/// The most a valid row may measure, as a multiple of its theoretical peak at the clock it
/// records. The clock is measured over the kernel's own run (the GPU's block records, the
/// host's timed chain right after the samples), so a few percent covers a clock that moved
/// between the samples and its reading; more is work the kernel did not do, a wrong clock or a
/// wrong rate table, and never a measurement.
pub const THEORY_TOLERANCE: f64 = 1.05;

/// Whether `gflops` is more than [`THEORY_TOLERANCE`] × `theory_gflops`.
fn above_theory(gflops: f64, theory_gflops: f64) -> bool {
    gflops > THEORY_TOLERANCE * theory_gflops
}

/// The GFLOP/s of `case` at the median time of `summary`; `None` for a case with no arithmetic.
fn case_gflops(case: &Case, summary: &Summary) -> Option<f64> {
    (case.work.flops > 0).then(|| case.work.flops as f64 / summary.median_secs / 1e9)
}

/// A row's figure held against its theory: `gflops` measured, `theory_gflops` the theoretical
/// peak at `clock_mhz`. Above [`THEORY_TOLERANCE`] × the theory it is invalid, saying both
/// figures and the clock.
pub fn check_against_theory(gflops: f64, theory_gflops: f64, clock_mhz: f64) -> Verdict {
    if above_theory(gflops, theory_gflops) {
        Verdict::invalid(format!(
            "measured {gflops:.1} GFLOP/s is {:.3} x the theoretical {theory_gflops:.1} GFLOP/s \
             at the recorded {clock_mhz:.0} MHz, above the {THEORY_TOLERANCE} x allowed: the \
             kernel did less work than the row counts, or the clock or rate is wrong",
            gflops / theory_gflops
        ))
    } else {
        Verdict::valid()
    }
}

/// Our implementation's GFLOP/s over its reference's (`bench::gemm::reference_of`) on the same
/// family, precision and parameter among the rows already measured; `None` where the case has
/// no reference or no valid reference row has a figure.
pub fn ratio_to_reference(record: &Record, earlier: &[Record]) -> Option<f64> {
    if record.family != crate::cases::Family::Gemm {
        return None;
    }
    let reference = crate::cases::gemm::reference_of(&record.kernel)?;
    let ours = record.gflops?;
    earlier
        .iter()
        .rev()
        .find(|r| {
            r.valid
                && r.family == record.family
                && r.kernel == reference
                && r.precision == record.precision
                && r.param == record.param
        })
        .and_then(|r| r.gflops)
        .filter(|g| g.is_finite() && *g > 0.0)
        .map(|g| ours / g)
}

/// The current time as RFC 3339 UTC with second precision.
pub fn now_utc() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Times one prepared case under `cfg`. Returns the summary of per-launch times, `reps` and
/// why sampling stopped.
pub fn measure(
    prepared: &mut dyn PreparedCase,
    min_sample_secs: f64,
    cfg: &RunConfig,
) -> Result<(Summary, u32, Stopped)> {
    if prepared.one_shot() {
        let samples = cfg.min_samples.max(2);
        let reps = prepared.one_shot_reps().max(1);
        let times = (0..samples)
            .map(|_| prepared.run(reps).map(|secs| secs / f64::from(reps)))
            .collect::<Result<Vec<f64>>>()?;
        let summary = Summary::from_secs(&times).map_err(|e| {
            crate::Error::Internal(format!(
                "{e}; the clock returned an impossible time, rerun or report a bug"
            ))
        })?;
        return Ok((summary, reps, Stopped::Count));
    }
    // First launch: module load, JIT, first page faults. Not a sample.
    prepared.run(1)?;
    let single = prepared.run(1)?;
    let reps = if single > 0.0 {
        (min_sample_secs / single)
            .ceil()
            .clamp(1.0, (1u32 << 20) as f64) as u32
    } else {
        1 << 20
    };
    let warm_start = Instant::now();
    loop {
        prepared.run(reps)?;
        if warm_start.elapsed().as_secs_f64() >= cfg.warmup_secs {
            break;
        }
    }
    let mut times = Vec::new();
    let stopped = match cfg.stop {
        Stop::Count => {
            let per_sample = (single * reps as f64).max(1e-9);
            let wanted = (cfg.case_budget_secs / per_sample).floor();
            let samples = (wanted as u32).clamp(cfg.min_samples.max(2), cfg.samples.max(2));
            for _ in 0..samples {
                times.push(prepared.run(reps)? / reps as f64);
            }
            Stopped::Count
        }
        Stop::UntilStable {
            target_cv,
            limit_secs,
        } => {
            let start = Instant::now();
            let mut spread = RunningCv::default();
            loop {
                let secs = prepared.run(reps)? / reps as f64;
                times.push(secs);
                spread.push(secs);
                if times.len() >= STABLE_MIN_SAMPLES
                    && spread.cv().is_some_and(|cv| cv <= target_cv)
                {
                    break Stopped::Stable;
                }
                if times.len() >= cfg.min_samples.max(2) as usize {
                    if start.elapsed().as_secs_f64() >= limit_secs {
                        break Stopped::TimeLimit;
                    }
                    // a signal: the user waits for this case only as long as its minimum
                    if crate::run::interrupt::requested() {
                        break Stopped::Interrupted;
                    }
                }
            }
        }
    };
    let summary = Summary::from_secs(&times).map_err(|e| {
        crate::Error::Internal(format!(
            "{e}; the device clock returned an impossible time, rerun or report a bug"
        ))
    })?;
    Ok((summary, reps, stopped))
}

/// The cases a run of `backend` under `cfg` will measure: the backend's whole plan, the cases
/// of the suites selected ([`crate::cases::suite`]), shortened where the default and `--quick`
/// allow ([`crate::run::forecast::shorten`]), and filtered. Fails before anything is measured or
/// written when the sizes asked for cannot fit.
pub fn plan(backend: &dyn Backend, cfg: &RunConfig) -> Result<Vec<PlannedCase>> {
    let rates = crate::run::forecast::Rates::for_device(backend.info());
    Ok(choose(backend.cases(cfg.size)?, cfg, &rates))
}

/// Of a backend's whole plan `all`, the cases a run under `cfg` measures (see [`plan`]), with
/// `rates` the device's as the estimate takes them (they say which sweep points are
/// compute-bound). Tests call it on the plans of modelled devices.
pub fn choose(
    all: Vec<PlannedCase>,
    cfg: &RunConfig,
    rates: &crate::run::forecast::Rates,
) -> Vec<PlannedCase> {
    let planned = cfg.selection.select(all, |p| &p.case);
    let planned = match crate::run::forecast::sweep_launch_cap_secs(cfg) {
        Some(cap) => crate::run::forecast::shorten(planned, cap, rates),
        None => planned,
    };
    planned.into_iter().filter(|p| cfg.keeps(&p.case)).collect()
}

/// [`run`] with no sink and no progress shown: its rows (tests).
#[cfg(test)]
pub(crate) fn rows_of(
    backend: &mut dyn Backend,
    identity: &RunIdentity,
    cfg: &RunConfig,
    planned: &[PlannedCase],
) -> Vec<Record> {
    run(
        backend,
        identity,
        cfg,
        planned,
        &mut |_| Ok(()),
        &mut |_| {},
    )
    .unwrap()
}

/// A row's place on the roofline of the run so far (its earlier rows and itself), if it is a
/// point: the roof it is judged against is the one the run had measured when it ran.
fn roof_point(earlier: &[Record], row: &Record, attributes: &DeviceAttributes) -> Option<Point> {
    let rows: Vec<Record> = earlier.iter().chain([row]).cloned().collect();
    let calibration = Calibration::from_records(&rows, Some(attributes.clone())).ok()?;
    let id = row.case_id();
    calibration.points.into_iter().find(|p| p.case == id)
}

/// Runs the planned cases on one backend, handing each row to `sink` as soon as it exists.
///
/// A case that fails to prepare, run or check gets a row saying why and the run goes on, unless
/// it left the device unusable ([`Backend::lost`]): then the run stops after its row. An error
/// from `sink` (the results file cannot be written) stops the run. Returns the rows.
pub fn run(
    backend: &mut dyn Backend,
    identity: &RunIdentity,
    cfg: &RunConfig,
    planned: &[PlannedCase],
    sink: &mut dyn FnMut(&Record) -> Result<()>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Vec<Record>> {
    on_event(Event::Planned { cases: planned });
    let min_sample_secs = backend.min_sample_secs();
    let probe = backend.condition_probe();
    let attributes = DeviceAttributes::from_info(backend.info());
    let mut records = Vec::with_capacity(planned.len());
    for PlannedCase { case, note } in planned {
        // a signal (crate::run::interrupt): the case that ran is done; the rest are not started
        if crate::run::interrupt::requested() {
            break;
        }
        on_event(Event::Started { case });
        let case_started = Instant::now();
        let (mut measuring, mut checking) = (0.0, 0.0);
        let before = backend.conditions();
        let timestamp = now_utc();
        let mut observed_clock_mhz = None;
        let mut theory_per_mhz = None;
        let mut measured_bytes = None;
        let mut clock_note = String::new();
        let mut during = Vec::new();
        let prepare_started = Instant::now();
        let prepared = backend.prepare(case);
        let mut preparing = prepare_started.elapsed().as_secs_f64();
        let mut result = prepared.and_then(|mut prepared| {
            // Conditions while the samples run, where the backend can read them from aside.
            let sampler = probe.clone().map(|p| Sampler::start(p, sampler::PERIOD));
            let timing = Instant::now();
            let measured = measure(prepared.as_mut(), min_sample_secs, &cfg.for_case(case));
            measuring = timing.elapsed().as_secs_f64();
            during = sampler.map(Sampler::finish).unwrap_or_default();
            let (summary, reps, stopped) = measured?;
            let check_started = Instant::now();
            let verdict = prepared.verify();
            checking = check_started.elapsed().as_secs_f64();
            let verdict = verdict?;
            observed_clock_mhz = prepared.clock_mhz();
            // Every theoretical peak is proportional to the clock: take it per MHz now, and
            // scale it by whichever clock is recorded below.
            theory_per_mhz = prepared.theory_gflops(1.0);
            // A clock read low makes a sound figure look above its theory: ask for it once more
            // before judging (a clock read after the samples is read again; a record stays).
            if let (Some(first), Some(per_mhz), Some(gflops)) = (
                observed_clock_mhz,
                theory_per_mhz,
                case_gflops(case, &summary),
            ) {
                if verdict.valid && above_theory(gflops, per_mhz * first) {
                    observed_clock_mhz = prepared.clock_mhz();
                    if let Some(again) = observed_clock_mhz.filter(|m| *m != first) {
                        clock_note = format!(
                            "above its theory at the clock read first, {first:.0} MHz: read \
                             again, {again:.0} MHz"
                        );
                    }
                }
            }
            measured_bytes = prepared.measured_bytes().filter(|b| *b > 0);
            let launch_note = prepared.launch_note();
            // freeing the arrays (or giving them back) is part of preparing them
            let freed = Instant::now();
            drop(prepared);
            preparing += freed.elapsed().as_secs_f64();
            Ok((summary, reps, stopped, verdict, launch_note))
        });
        let after = backend.conditions();
        let around = Conditions::merge(&before, &after);
        let mut conditions = if during.is_empty() {
            around
        } else {
            // the readings during the samples, and what only a before/after pair can tell
            let mut c = sampler::summarise(&during);
            c.other_cpus_busy = around.other_cpus_busy;
            c.other_gpu_processes = c.other_gpu_processes.max(around.other_gpu_processes);
            c
        };
        // A clock the case measured itself, while it ran, beats one read around it.
        conditions.clock_mhz = observed_clock_mhz.or(conditions.clock_mhz);
        // From the clock the row will keep (a reading that is no clock is dropped there), so a
        // theory is never 0 or NaN.
        let theory_gflops = theory_per_mhz
            .zip(crate::results::record::kept_clock(conditions.clock_mhz))
            .map(|(per_mhz, mhz)| per_mhz * mhz)
            .filter(|t| t.is_finite() && *t > 0.0);
        if let (Ok((summary, _, _, verdict, _)), Some(theory), Some(mhz)) = (
            &mut result,
            theory_gflops,
            crate::results::record::kept_clock(conditions.clock_mhz),
        ) {
            if let Some(gflops) = case_gflops(case, summary).filter(|_| verdict.valid) {
                *verdict = check_against_theory(gflops, theory, mhz);
            }
        }
        let join = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
            (true, _) => b.to_string(),
            (_, true) => a.to_string(),
            _ => format!("{a}; {b}"),
        };
        let record = match &result {
            Ok((summary, reps, stopped, verdict, launch)) => Record::new(
                identity,
                timestamp,
                case,
                Outcome::Measured {
                    summary,
                    reps: *reps,
                    stopped: *stopped,
                    verdict,
                },
                &conditions,
                join(&join(launch, note), &clock_note),
            ),
            Err(crate::Error::Skipped(why)) => Record::new(
                identity,
                timestamp,
                case,
                Outcome::Skipped { why },
                &conditions,
                note.clone(),
            ),
            Err(e) => Record::new(
                identity,
                timestamp,
                case,
                Outcome::Failed {
                    error: &e.to_string(),
                },
                &conditions,
                note.clone(),
            ),
        };
        let mut record = record;
        if let Some(bytes) = measured_bytes {
            record.working_set_bytes = bytes;
            record.elements = bytes;
        }
        if record.valid {
            record.theory_gflops = theory_gflops;
            record.ratio_to_reference = ratio_to_reference(&record, &records);
            let point = roof_point(&records, &record, &attributes);
            record.flags = crate::results::flags::column(&suspect::judge(
                &record,
                point.as_ref(),
                &cfg.thresholds,
            ));
        }
        sink(&record)?;
        on_event(Event::Finished {
            record: &record,
            secs: CaseSecs {
                measuring,
                preparing,
                checking,
                total: case_started.elapsed().as_secs_f64(),
            },
        });
        records.push(record);
        if backend.lost().is_some() {
            // Nothing more runs on this device in this process (see `crate::run::worker`).
            break;
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::pool::allowed_cpus;
    use crate::backend::host::HostBackend;
    use crate::cases::{Verdict, Work};

    /// A fake prepared case whose launches "take" a fixed time.
    struct Fixed {
        per_launch: f64,
        launches: u64,
        valid: bool,
        /// The clock it "measured" and its theory per MHz, if it has them.
        clock_mhz: Option<f64>,
        theory_per_mhz: Option<f64>,
        /// What every reading of the clock after the first gives (the first, where `None`).
        reread_mhz: Option<f64>,
    }

    impl PreparedCase for Fixed {
        fn run(&mut self, reps: u32) -> Result<f64> {
            self.launches += reps as u64;
            Ok(self.per_launch * reps as f64)
        }
        fn verify(&mut self) -> Result<Verdict> {
            Ok(if self.valid {
                Verdict::valid()
            } else {
                Verdict::invalid("wrong")
            })
        }
        fn launch_note(&self) -> String {
            String::new()
        }
        fn clock_mhz(&mut self) -> Option<f64> {
            let now = self.clock_mhz;
            self.clock_mhz = self.reread_mhz.or(now);
            now
        }
        fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
            self.theory_per_mhz.map(|g| g * clock_mhz)
        }
    }

    impl Fixed {
        fn new(per_launch: f64, valid: bool) -> Fixed {
            Fixed {
                per_launch,
                launches: 0,
                valid,
                clock_mhz: None,
                theory_per_mhz: None,
                reread_mhz: None,
            }
        }
    }

    /// A backend whose every case is a [`Fixed`] of 1 ms per launch, with this clock and theory.
    struct FixedBackend {
        info: crate::device::DeviceInfo,
        clock_mhz: Option<f64>,
        theory_per_mhz: Option<f64>,
        /// What its cases' second reading of the clock gives (the first, where `None`).
        reread_mhz: Option<f64>,
        /// What a reading from aside gives while the samples run, if the backend has a probe.
        probe: Option<crate::device::ConditionProbe>,
    }

    /// What `FixedBackend` reads before and after a case: an idle device.
    fn idle() -> Conditions {
        Conditions {
            clock_mhz: Some(345.0),
            memory_clock_mhz: Some(1593.0),
            power_w: Some(90.0),
            temperature_c: Some(30.0),
            throttle: "sw_power_cap".into(),
            ..Conditions::default()
        }
    }

    impl Backend for FixedBackend {
        fn info(&self) -> &crate::device::DeviceInfo {
            &self.info
        }
        fn cases(&self, _: SizeRequest) -> Result<Vec<PlannedCase>> {
            Ok(Vec::new())
        }
        fn prepare(&mut self, _: &Case) -> Result<Box<dyn PreparedCase + '_>> {
            Ok(Box::new(Fixed {
                clock_mhz: self.clock_mhz,
                theory_per_mhz: self.theory_per_mhz,
                reread_mhz: self.reread_mhz,
                ..Fixed::new(1e-3, true)
            }))
        }
        fn conditions(&self) -> Conditions {
            idle()
        }
        fn min_sample_secs(&self) -> f64 {
            1e-3
        }
        fn condition_probe(&self) -> Option<crate::device::ConditionProbe> {
            self.probe.clone()
        }
    }

    impl FixedBackend {
        /// On the test identity's device, with no second reading of the clock and no probe.
        fn new(clock_mhz: Option<f64>, theory_per_mhz: Option<f64>) -> FixedBackend {
            FixedBackend {
                info: crate::results::fixtures::identity().device,
                clock_mhz,
                theory_per_mhz,
                reread_mhz: None,
                probe: None,
            }
        }
    }

    /// The one row `case` gives on `backend`, after `warmup_secs` of warm-up, with a quick
    /// run's samples.
    fn row_of(case: &Case, warmup_secs: f64, backend: &mut FixedBackend) -> Record {
        let cfg = RunConfig {
            warmup_secs,
            ..RunConfig::quick()
        };
        let planned = [PlannedCase {
            case: case.clone(),
            note: String::new(),
        }];
        rows_of(
            backend,
            &crate::results::fixtures::identity(),
            &cfg,
            &planned,
        )
        .remove(0)
    }

    /// With a probe, a row's conditions are those read while its samples ran (the median of
    /// the readings, every throttle reason seen during them), not the idle device before and
    /// after; without one, they are the readings around the case.
    #[test]
    fn rows_record_the_conditions_during_their_samples() {
        let case =
            crate::cases::stream::StreamKernel::Triad.case(crate::cases::Precision::F32, 1000);
        let busy: crate::device::ConditionProbe = std::sync::Arc::new(|| Conditions {
            clock_mhz: Some(1980.0),
            memory_clock_mhz: Some(2619.0),
            power_w: Some(650.0),
            temperature_c: Some(61.0),
            throttle: "hw_thermal_slowdown".into(),
            ..Conditions::default()
        });
        let row = |probe| {
            let mut backend = FixedBackend {
                probe,
                ..FixedBackend::new(None, None)
            };
            row_of(&case, 0.05, &mut backend)
        };
        let during = row(Some(busy));
        assert_eq!(
            (during.clock_mhz, during.memory_clock_mhz, during.power_w),
            (Some(1980.0), Some(2619.0), Some(650.0))
        );
        assert_eq!(during.temperature_c, Some(61.0));
        assert_eq!(during.throttle, "hw_thermal_slowdown");
        let around = row(None);
        assert_eq!(
            (around.clock_mhz, around.power_w, around.throttle.as_str()),
            (Some(345.0), Some(90.0), "sw_power_cap")
        );
    }

    /// A row measuring more than 1.05 x its theory at its measured clock is invalid, with no
    /// figures, and says measured, theory and clock; at or below it the row keeps its figures
    /// and its theory.
    #[test]
    fn a_row_above_its_theory_is_invalid() {
        // 10^9 operations in 1 ms: 1000 GFLOP/s, against 0.5 GFLOP/s per MHz
        let case = crate::cases::peak::case(crate::cases::Precision::F32, 1000, 1000, 500);
        assert_eq!(case.work.flops, 1_000_000_000);
        let row = |clock_mhz| {
            row_of(
                &case,
                0.0,
                &mut FixedBackend::new(Some(clock_mhz), Some(0.5)),
            )
        };
        // theory 950 GFLOP/s at 1900 MHz: 1000 is 1.053 x
        let above = row(1900.0);
        assert!(!above.valid);
        assert_eq!((above.gflops, above.theory_gflops), (None, None));
        assert_eq!(above.clock_mhz, Some(1900.0));
        assert!(
            above.status.starts_with("invalid: measured 1000.0 GFLOP/s is 1.053 x the theoretical 950.0 GFLOP/s at the recorded 1900 MHz"),
            "{}",
            above.status
        );
        // theory 952.5 GFLOP/s at 1905 MHz: 1000 is 1.0499 x, still a measurement
        let within = row(1905.0);
        assert!(within.valid, "{}", within.status);
        assert!((within.gflops.unwrap() - 1000.0).abs() < 1e-6);
        assert_eq!(within.theory_gflops, Some(952.5));
        // no theory, no comparison
        let unknown = row_of(&case, 0.0, &mut FixedBackend::new(Some(1000.0), None));
        assert!(unknown.valid);
    }

    /// A figure above its theory at the clock read first has its clock read once more before
    /// it is judged: a higher second reading (the first was interrupted) makes it a measurement
    /// at that clock, and the note gives both readings; a second reading that is no higher (a
    /// clock the kernel recorded) leaves it invalid; a figure within its theory is never read
    /// twice.
    #[test]
    fn a_clock_that_reads_low_is_read_again_before_a_row_is_judged_above_its_theory() {
        // 10^9 operations in 1 ms: 1000 GFLOP/s, against 0.5 GFLOP/s per MHz
        let case = crate::cases::peak::case(crate::cases::Precision::F32, 1000, 1000, 500);
        let row = |first: f64, reread_mhz: Option<f64>| {
            let mut backend = FixedBackend {
                reread_mhz,
                ..FixedBackend::new(Some(first), Some(0.5))
            };
            row_of(&case, 0.0, &mut backend)
        };
        // read 1600 MHz (theory 800: 1.25 x), then 2100 (theory 1050: 0.952 x)
        let reread = row(1600.0, Some(2100.0));
        assert!(reread.valid, "{}", reread.status);
        assert_eq!(reread.clock_mhz, Some(2100.0));
        assert_eq!(reread.theory_gflops, Some(1050.0));
        assert!(
            reread.note.contains(
                "above its theory at the clock read first, 1600 MHz: read again, 2100 MHz"
            ),
            "{}",
            reread.note
        );
        // a record: the same clock again, still 1.25 x
        let recorded = row(1600.0, None);
        assert!(!recorded.valid);
        assert!(
            recorded.status.contains("at the recorded 1600 MHz"),
            "{}",
            recorded.status
        );
        assert!(!recorded.note.contains("read again"), "{}", recorded.note);
        // within its theory at the first reading: the second reading (lower) is never taken
        let within = row(2100.0, Some(1600.0));
        assert!(within.valid, "{}", within.status);
        assert_eq!(within.clock_mhz, Some(2100.0));
        assert!(!within.note.contains("read again"), "{}", within.note);
    }

    /// Our GEMM row carries its ratio to the reference row of the same shape and precision;
    /// a reference row, an invalid reference, another shape or precision give none.
    #[test]
    fn gemm_rows_carry_their_ratio_to_the_reference() {
        use crate::cases::{gemm, Precision};
        let shape = gemm::Shape::square(256);
        let row = |kernel: &str, p: Precision, s: gemm::Shape, median: f64, valid: bool| {
            crate::results::fixtures::measured(&gemm::case(kernel, p, s), median, valid)
        };
        let reference = row(gemm::HOST_REFERENCE, Precision::F32, shape, 2e-3, true);
        let ours = row(gemm::HOST_OURS, Precision::F32, shape, 2.5e-3, true);
        let r = ratio_to_reference(&ours, std::slice::from_ref(&reference)).unwrap();
        assert!((r - 0.8).abs() < 1e-12, "{r}");
        assert_eq!(
            ratio_to_reference(&reference, std::slice::from_ref(&ours)),
            None
        );
        let invalid = row(gemm::HOST_REFERENCE, Precision::F32, shape, 2e-3, false);
        assert_eq!(ratio_to_reference(&ours, &[invalid]), None);
        let other_shape = row(
            gemm::HOST_REFERENCE,
            Precision::F32,
            gemm::Shape::square(512),
            2e-3,
            true,
        );
        let other_type = row(gemm::HOST_REFERENCE, Precision::F64, shape, 2e-3, true);
        assert_eq!(ratio_to_reference(&ours, &[other_shape, other_type]), None);
    }

    /// A backend that skips every case, as the CUDA backend skips cuBLAS rows without cuBLAS.
    struct SkippingBackend {
        info: crate::device::DeviceInfo,
    }

    impl Backend for SkippingBackend {
        fn info(&self) -> &crate::device::DeviceInfo {
            &self.info
        }
        fn cases(&self, _: SizeRequest) -> Result<Vec<PlannedCase>> {
            Ok(Vec::new())
        }
        fn prepare(&mut self, _: &Case) -> Result<Box<dyn PreparedCase + '_>> {
            Err(crate::Error::Skipped("no cuBLAS found (tried …)".into()))
        }
        fn conditions(&self) -> Conditions {
            Conditions::default()
        }
        fn min_sample_secs(&self) -> f64 {
            1e-3
        }
    }

    /// A skipped case keeps its row, says `skipped: <why>`, has no figures and is told apart
    /// from a failure (the run's exit code does not count it).
    #[test]
    fn a_skipped_case_says_why_and_is_not_a_failure() {
        use crate::cases::{gemm, Precision};
        let identity = crate::results::fixtures::identity();
        let mut backend = SkippingBackend {
            info: identity.device.clone(),
        };
        let case = gemm::case(
            gemm::GPU_REFERENCE,
            Precision::Bf16F32,
            gemm::Shape::square(256),
        );
        let planned = [PlannedCase {
            case,
            note: String::new(),
        }];
        let rows = rows_of(&mut backend, &identity, &RunConfig::quick(), &planned);
        assert_eq!(rows[0].status, "skipped: no cuBLAS found (tried …)");
        assert!(rows[0].is_skipped() && !rows[0].valid && rows[0].gflops.is_none());
        let mut failed = rows[0].clone();
        failed.status = "error: out of memory".into();
        assert!(!failed.is_skipped());
    }

    /// A one-shot case (a capacity figure: calls, not launches) gets its fewest samples of one
    /// call each: no discarded launch, no batching, no warm-up.
    #[test]
    fn one_shot_cases_take_their_fewest_samples_of_one_call() {
        struct Calls(Vec<u32>);
        impl PreparedCase for Calls {
            fn run(&mut self, reps: u32) -> Result<f64> {
                self.0.push(reps);
                Ok(1e-6)
            }
            fn verify(&mut self) -> Result<Verdict> {
                Ok(Verdict::valid())
            }
            fn launch_note(&self) -> String {
                String::new()
            }
            fn one_shot(&self) -> bool {
                true
            }
        }
        let mut calls = Calls(Vec::new());
        let cfg = RunConfig::full();
        let (summary, reps, stopped) = measure(&mut calls, 0.01, &cfg).unwrap();
        assert_eq!((reps, stopped, summary.samples), (1, Stopped::Count, 5));
        assert_eq!(calls.0, [1; 5]);
    }

    /// A one-shot case of a fixed batch (a launch case) runs its batch per sample, and the
    /// runner divides each sample by it and records it as `reps`: the time columns are per
    /// launch.
    #[test]
    fn one_shot_batches_are_divided_into_per_launch_times() {
        struct Batch(Vec<u32>);
        impl PreparedCase for Batch {
            fn run(&mut self, reps: u32) -> Result<f64> {
                self.0.push(reps);
                Ok(f64::from(reps) * 2e-6)
            }
            fn verify(&mut self) -> Result<Verdict> {
                Ok(Verdict::valid())
            }
            fn launch_note(&self) -> String {
                String::new()
            }
            fn one_shot(&self) -> bool {
                true
            }
            fn one_shot_reps(&self) -> u32 {
                1000
            }
        }
        let mut batch = Batch(Vec::new());
        let (summary, reps, _) = measure(&mut batch, 0.01, &RunConfig::full()).unwrap();
        assert_eq!((reps, summary.samples), (1000, 5));
        assert_eq!(batch.0, [1000; 5]);
        assert!(
            (summary.median_secs - 2e-6).abs() < 1e-15,
            "{}",
            summary.median_secs
        );
    }

    #[test]
    fn short_launches_are_batched_into_long_samples() {
        let mut f = Fixed::new(1e-6, true);
        let cfg = RunConfig {
            warmup_secs: 0.0,
            ..RunConfig::quick()
        };
        let (summary, reps, stopped) = measure(&mut f, 0.005, &cfg).unwrap();
        assert_eq!((reps, stopped), (5000, Stopped::Count));
        assert!((summary.median_secs - 1e-6).abs() < 1e-12);
        assert!(summary.samples >= cfg.min_samples as usize);
        assert!(summary.samples <= cfg.samples as usize);
    }

    #[test]
    fn slow_cases_keep_the_minimum_sample_count() {
        let mut f = Fixed::new(10.0, true);
        let cfg = RunConfig {
            warmup_secs: 0.0,
            ..RunConfig::full()
        };
        let (summary, reps, _) = measure(&mut f, 0.02, &cfg).unwrap();
        assert_eq!(reps, 1);
        assert_eq!(summary.samples, cfg.min_samples as usize);
    }

    /// A prepared case whose launches take the times given, in turn, again and again.
    struct Sequence {
        secs: Vec<f64>,
        next: usize,
    }

    impl PreparedCase for Sequence {
        fn run(&mut self, reps: u32) -> Result<f64> {
            let t = self.secs[self.next % self.secs.len()];
            self.next += 1;
            Ok(t * reps as f64)
        }
        fn verify(&mut self) -> Result<Verdict> {
            Ok(Verdict::valid())
        }
        fn launch_note(&self) -> String {
            String::new()
        }
    }

    /// `--until-stable`: a steady case stops as soon as it has the minimum samples; one whose
    /// early samples are disturbed samples on until the disturbance is diluted below the
    /// target; one that never settles stops at the time limit; and each says which.
    #[test]
    fn until_stable_samples_until_the_spread_falls_or_time_runs_out() {
        let cfg = |target_cv: f64, limit_secs: f64| RunConfig {
            warmup_secs: 0.0,
            stop: Stop::UntilStable {
                target_cv,
                limit_secs,
            },
            ..RunConfig::quick()
        };
        // min_sample_secs tiny: one launch per sample
        let mut steady = Sequence {
            secs: vec![1e-3],
            next: 0,
        };
        let (s, reps, stopped) = measure(&mut steady, 1e-9, &cfg(0.005, 60.0)).unwrap();
        assert_eq!((reps, stopped), (1, Stopped::Stable));
        assert_eq!(s.samples, STABLE_MIN_SAMPLES);

        // the first samples (after the two launches `measure` discards) are 3 ms, then 1 ms
        // for good: the CV falls below 5 % only once enough quiet samples dilute them
        let mut disturbed = Sequence {
            secs: [vec![3e-3; 5], vec![1e-3; 100_000]].concat(),
            next: 0,
        };
        let (s, _, stopped) = measure(&mut disturbed, 1e-9, &cfg(0.05, 60.0)).unwrap();
        assert_eq!(stopped, Stopped::Stable);
        assert!(s.cv <= 0.05, "{}", s.cv);
        assert!(s.samples > 100, "{} samples", s.samples);

        // alternating 1 and 3 ms never gets below 0.5 %: the limit stops it
        let mut noisy = Sequence {
            secs: vec![1e-3, 3e-3],
            next: 0,
        };
        let start = Instant::now();
        let (s, _, stopped) = measure(&mut noisy, 1e-9, &cfg(0.005, 0.2)).unwrap();
        assert_eq!(stopped, Stopped::TimeLimit);
        assert!(s.cv > 0.3, "{}", s.cv);
        assert!(start.elapsed().as_secs_f64() >= 0.2);
    }

    /// A host backend on `cpus` and the identity its rows carry.
    fn host_on(cpus: Vec<usize>) -> (HostBackend, RunIdentity) {
        let host = HostBackend::with_cpus(cpus);
        let identity = RunIdentity {
            run_id: "t".into(),
            host: "t".into(),
            device: host.info().clone(),
            parallel_devices: None,
        };
        (host, identity)
    }

    #[test]
    fn host_run_writes_one_valid_row_per_case_as_it_goes() {
        let (mut host, identity) = host_on(allowed_cpus().into_iter().take(2).collect());
        let cfg = RunConfig {
            size: SizeRequest::BytesPerArray(1 << 20),
            // `stream/triad`: a bare `triad` would take the size sweep's too
            filter: vec!["stream/triad".into(), "dot/f64".into()],
            warmup_secs: 0.0,
            case_budget_secs: 0.05,
            // the dot is no default case: every case, filtered
            selection: Selection::full(),
            ..RunConfig::quick()
        };
        let mut written = Vec::new();
        let mut events = Vec::new();
        let planned = plan(&host, &cfg).unwrap();
        let records = run(
            &mut host,
            &identity,
            &cfg,
            &planned,
            &mut |r| {
                written.push(r.case_id());
                Ok(())
            },
            &mut |e| {
                events.push(match e {
                    Event::Planned { cases } => format!("planned {}", cases.len()),
                    Event::Started { case } => format!("start {}", case.id()),
                    Event::Finished { record, .. } => format!("done {}", record.case_id()),
                })
            },
        )
        .unwrap();
        let ids: Vec<String> = records.iter().map(Record::case_id).collect();
        assert_eq!(
            ids,
            ["stream/triad/f32", "stream/triad/f64", "stream/dot/f64"]
        );
        assert_eq!(written, ids);
        assert_eq!(events[0], "planned 3");
        assert_eq!(events[1], "start stream/triad/f32");
        assert_eq!(events[2], "done stream/triad/f32");
        for r in &records {
            assert!(r.valid, "{}: {}", r.case_id(), r.status);
            assert!(r.gbps.unwrap() > 0.0);
            assert_eq!(
                r.elements,
                if r.precision.as_str() == "f32" {
                    1 << 18
                } else {
                    1 << 17
                }
            );
        }
    }

    /// A compute case's row carries the clock the case measured on its own cores and the
    /// theoretical peak at that clock.
    #[test]
    fn compute_rows_record_their_own_clock_and_theory() {
        let (mut host, identity) = host_on(allowed_cpus().into_iter().take(2).collect());
        let cfg = RunConfig {
            size: SizeRequest::BytesPerArray(1 << 16),
            filter: vec!["peak/fma/f64".into(), "intensity/fma/f32/0".into()],
            warmup_secs: 0.0,
            case_budget_secs: 0.05,
            ..RunConfig::quick()
        };
        let planned = plan(&host, &cfg).unwrap();
        let records = rows_of(&mut host, &identity, &cfg, &planned);
        assert_eq!(records.len(), 2);
        let peak = &records[0];
        assert!(peak.valid, "{}", peak.status);
        let mhz = peak.clock_mhz.expect("the host measures its clock");
        assert!((100.0..10_000.0).contains(&mhz), "{mhz}");
        let compute = crate::backend::host::compute::HostCompute::detect();
        if compute.fma.is_some() && compute.simd != crate::backend::host::compute::Simd::Portable {
            let theory = peak.theory_gflops.expect("a known core has a theory");
            // proportional to the recorded clock
            let at_1mhz = crate::backend::host::compute::theory_gflops(
                2.min(allowed_cpus().len()),
                1.0,
                compute.simd,
                crate::cases::Precision::F64,
                compute.fma,
            )
            .unwrap();
            assert!((theory - at_1mhz * mhz).abs() < 1e-6 * theory);
        }
        // a copy has no arithmetic and no theory
        assert_eq!(records[1].theory_gflops, None);
    }

    #[test]
    fn a_failing_sink_stops_the_run() {
        let (mut host, identity) = host_on(vec![allowed_cpus()[0]]);
        let cfg = RunConfig {
            size: SizeRequest::BytesPerArray(4096),
            warmup_secs: 0.0,
            case_budget_secs: 0.01,
            ..RunConfig::quick()
        };
        let mut calls = 0;
        let planned = plan(&host, &cfg).unwrap();
        let err = run(
            &mut host,
            &identity,
            &cfg,
            &planned,
            &mut |_| {
                calls += 1;
                Err(crate::Error::Internal("disk full".into()))
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(calls, 1);
        assert_eq!(err.to_string(), "disk full");
    }

    /// A backend whose cases "take" scripted times (cycling, per case id), whose compute cases
    /// report a clock and a theory, and whose CPU counters say other processes kept one of the
    /// machine's two CPUs busy when `others_busy` is set.
    struct Scripted {
        info: crate::device::DeviceInfo,
        cases: Vec<Case>,
        times: Vec<(String, Vec<f64>)>,
        /// Theoretical GFLOP/s per MHz of every compute case.
        theory_per_mhz: Option<f64>,
        others_busy: bool,
        observations: std::cell::Cell<u64>,
    }

    struct Cycling {
        times: Vec<f64>,
        next: usize,
        theory_per_mhz: Option<f64>,
    }

    impl PreparedCase for Cycling {
        fn run(&mut self, reps: u32) -> Result<f64> {
            let t = self.times[self.next % self.times.len()];
            self.next += 1;
            Ok(t * reps as f64)
        }
        fn verify(&mut self) -> Result<Verdict> {
            Ok(Verdict::valid())
        }
        fn launch_note(&self) -> String {
            String::new()
        }
        fn clock_mhz(&mut self) -> Option<f64> {
            Some(1000.0)
        }
        fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
            self.theory_per_mhz.map(|t| t * clock_mhz)
        }
    }

    impl Backend for Scripted {
        fn info(&self) -> &crate::device::DeviceInfo {
            &self.info
        }
        fn cases(&self, _: SizeRequest) -> Result<Vec<PlannedCase>> {
            Ok(self
                .cases
                .iter()
                .map(|case| PlannedCase {
                    case: case.clone(),
                    note: String::new(),
                })
                .collect())
        }
        fn prepare(&mut self, case: &Case) -> Result<Box<dyn PreparedCase + '_>> {
            let times = self
                .times
                .iter()
                .find(|(id, _)| *id == case.id())
                .map(|(_, t)| t.clone())
                .unwrap_or_else(|| vec![1e-3]);
            Ok(Box::new(Cycling {
                times,
                next: 0,
                theory_per_mhz: self.theory_per_mhz,
            }))
        }
        fn conditions(&self) -> Conditions {
            // each observation 1 s later on 2 CPUs: 200 ticks, 50 of them ours, and others
            // busy on one CPU (100) or idle
            let n = self.observations.get() + 1;
            self.observations.set(n);
            let others = if self.others_busy { 100 } else { 0 };
            Conditions {
                cpu_times: Some(crate::device::CpuTimes {
                    busy_ticks: n * (50 + others),
                    total_ticks: n * 200,
                    cpus: 2,
                    own_ticks: n * 50,
                }),
                ..Conditions::default()
            }
        }
        fn min_sample_secs(&self) -> f64 {
            1e-9
        }
    }

    fn scripted(cases: Vec<Case>, times: &[(&str, &[f64])]) -> Scripted {
        let mut info = crate::backend::host::host_info();
        info.units = 2;
        info.llc_bytes = 0; // every working set counts as DRAM
        Scripted {
            info,
            cases,
            times: times
                .iter()
                .map(|(id, t)| (id.to_string(), t.to_vec()))
                .collect(),
            theory_per_mhz: None,
            others_busy: false,
            observations: std::cell::Cell::new(0),
        }
    }

    fn run_scripted(backend: &mut Scripted) -> Vec<Record> {
        let identity = RunIdentity {
            run_id: "t".into(),
            host: "t".into(),
            device: backend.info().clone(),
            parallel_devices: None,
        };
        let cfg = RunConfig {
            warmup_secs: 0.0,
            ..RunConfig::quick()
        };
        let planned = plan(backend, &cfg).unwrap();
        let mut written = Vec::new();
        let records = run(
            backend,
            &identity,
            &cfg,
            &planned,
            &mut |r| {
                written.push(r.flags.clone());
                Ok(())
            },
            &mut |_| {},
        )
        .unwrap();
        // the flags are in the row as it is written, not added afterwards
        assert_eq!(
            written,
            records.iter().map(|r| r.flags.clone()).collect::<Vec<_>>()
        );
        records
    }

    /// Each suspect condition, made by a scripted backend, lands in the row's flags; a steady,
    /// undisturbed run gets none.
    #[test]
    fn suspect_rows_are_flagged_as_they_are_written() {
        use crate::cases::{intensity, peak, stream::StreamKernel, Precision};
        let triad = StreamKernel::Triad.case(Precision::F32, 1 << 20);
        let sweep = intensity::case(Precision::F32, 1, 1 << 20);
        let fma = peak::case(Precision::F32, 1024, 1000, 2);
        // the sweep point reads at 1.39 × the triad's GB/s: 8 bytes per word against 12
        let triad_secs = 1e-3;
        let sweep_secs = triad_secs * 8.0 / (1.39 * 12.0);
        let steady = [
            ("stream/triad/f32", &[triad_secs][..]),
            ("intensity/fma/f32/1", &[triad_secs * 8.0 / 12.0 / 0.9][..]),
        ];
        let clean = run_scripted(&mut scripted(vec![triad.clone(), sweep.clone()], &steady));
        assert!(
            clean.iter().all(|r| r.valid && r.flags.is_empty()),
            "{clean:?}"
        );
        assert!(clean.iter().all(|r| r.other_cpus_busy == Some(0.0)));

        // noise: samples alternate between 1 and 3 ms, a CV near 50 %
        let noisy = run_scripted(&mut scripted(
            vec![triad.clone()],
            &[("stream/triad/f32", &[1e-3, 3e-3])],
        ));
        assert!(noisy[0].flags.starts_with("high_cv("), "{}", noisy[0].flags);

        // a point above its roof, the roof from the run's own triad
        let above = run_scripted(&mut scripted(
            vec![triad.clone(), sweep.clone()],
            &[
                ("stream/triad/f32", &[triad_secs]),
                ("intensity/fma/f32/1", &[sweep_secs]),
            ],
        ));
        assert_eq!(above[0].flags, "");
        assert_eq!(above[1].flags, "above_roof(139.0%)");

        // a peak at 48 % of its theory at the clock it ran at
        let mut slow = scripted(vec![fma.clone()], &[]);
        let gflops = fma.work.flops as f64 / 1e-3 / 1e9;
        slow.theory_per_mhz = Some(gflops / 0.48 / 1000.0);
        let slow = run_scripted(&mut slow);
        assert_eq!(slow[0].flags, "below_theory(48.0%)");

        // other processes kept one of the two CPUs busy
        let mut busy = scripted(vec![triad], &[]);
        busy.others_busy = true;
        let busy = run_scripted(&mut busy);
        assert_eq!(busy[0].other_cpus_busy, Some(1.0));
        assert_eq!(busy[0].flags, "busy_host(1.00 CPUs)");
    }

    #[test]
    fn invalid_verdict_becomes_an_invalid_row() {
        let mut f = Fixed::new(1e-3, false);
        let cfg = RunConfig {
            warmup_secs: 0.0,
            ..RunConfig::quick()
        };
        let (summary, reps, stopped) = measure(&mut f, 0.001, &cfg).unwrap();
        let verdict = f.verify().unwrap();
        let case = Case {
            family: crate::cases::Family::Stream,
            kernel: "copy".into(),
            precision: crate::cases::Precision::F32,
            param: None,
            elements: 10,
            working_set_bytes: 80,
            work: Work {
                bytes_read: 40,
                bytes_written: 40,
                flops: 0,
            },
        };
        let r = Record::new(
            &crate::results::fixtures::identity(),
            now_utc(),
            &case,
            Outcome::Measured {
                summary: &summary,
                reps,
                stopped,
                verdict: &verdict,
            },
            &Conditions::default(),
            String::new(),
        );
        assert!(!r.valid);
        assert_eq!(r.gbps, None);
        assert_eq!(r.status, "invalid: wrong");
    }
}
