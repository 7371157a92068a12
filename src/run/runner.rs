//! The runner: for each case, prepare → size the batch → warm up → sample → verify → one row,
//! written out before the next case starts ("because we would risk losing them if a later
//! benchmark fails", as hyperfine puts it).
//!
//! Timing policy. A sample is `reps` launches back to back, timed as one interval by the
//! backend's own clock, with `reps` chosen so a sample lasts at least the backend's
//! `min_sample_secs` (launch overhead and timer resolution stay out of the figure); the per-launch
//! time of a sample is its interval / `reps`. The first launch (module load, JIT, page faults) is
//! discarded, then warm-up samples run until `warmup_secs` have passed since the launch that
//! sized them (none more where that launch is a whole sample and lasted as long), then between `min_samples` and
//! `samples` samples are kept, as many as fit in `case_budget_secs`. The figures use the median.
//!
//! No row measures more than its theory: a figure above [`THEORY_TOLERANCE`] × the theoretical
//! peak at the clock the row records is invalid (see [`check_against_theory`]), on every backend.
//! Where a case records its clock with every launch (a GPU kernel's block records), each
//! sample's time is paired with the clock it ran at, and the row records the clock paired with
//! the median time ([`clock_paired_with_median`]): a clock still falling through the samples
//! makes the last launch's the lowest, and %theory read high against it. Otherwise (the host)
//! the case measures its clock once after the samples, and before a figure is judged above its
//! theory it is asked once more: a reading an interruption made low would otherwise make a
//! sound figure look above its theory. A row whose clock was read twice says so in its note.
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
    /// `--dry-run`: the plan and its estimate are said, and nothing is measured.
    #[serde(default)]
    pub dry_run: bool,
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
/// Most seconds of warm-up before a compute-peak case's samples, where its clock needs no
/// settling (the host, and `--quick` anywhere).
pub const COMPUTE_WARMUP_SECS: f64 = 0.05;
/// Fewest seconds of warm-up before a compute-peak case's samples on a GPU (but under
/// `--quick`): a power-capped part (H100 PCIe, H200 NVL, an RTX 3090, wgmma on an H100 SXM)
/// can still be lowering its clock for a fraction of a second after a heavy load starts, and
/// samples taken before it settles measure a clock on its way down. The samples' own clocks keep %theory
/// right either way ([`clock_paired_with_median`]); the warm-up makes the figure the settled
/// rate, the one a long job sees.
pub const GPU_COMPUTE_WARMUP_SECS: f64 = 0.5;
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
            dry_run: false,
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
    /// [`crate::cases::efficiency::SAMPLES`], each after a warm-up of one sample (the sizing
    /// launch, where a sample is one launch: see [`measure`]), as a count
    /// whatever the budget or `--until-stable` say. The compute peaks (`peak`, `tensor`: one
    /// wave of fixed work whose block records carry the SM clock it ran at, the clock their
    /// %theory uses) take at most [`COMPUTE_SAMPLES`] samples: their spread is the clock's,
    /// which the records show, and Hopper's 14 `wgmma` rows then fit the default run. On a GPU
    /// (`backend`), but under `--quick`, they warm up for [`GPU_COMPUTE_WARMUP_SECS`], so the
    /// samples see the clock a power-capped part settles at; elsewhere for at most
    /// [`COMPUTE_WARMUP_SECS`]. A GEMM case warms up
    /// for at most [`GEMM_WARMUP_SECS`] (the run's other settings kept; NVML's sampler records
    /// the clock its samples ran at), so the 160-odd GEMM rows of a default H200 run leave room
    /// for Hopper's fp8 pair. The estimate ([`crate::run::forecast::case_secs`]) follows the same schedule.
    pub fn for_case(&self, case: &Case, backend: crate::device::BackendKind) -> RunConfig {
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
            let settles = backend == crate::device::BackendKind::Cuda && !self.quick;
            RunConfig {
                samples: self.samples.min(COMPUTE_SAMPLES),
                min_samples: self.min_samples.min(COMPUTE_SAMPLES),
                warmup_secs: if settles {
                    self.warmup_secs.max(GPU_COMPUTE_WARMUP_SECS)
                } else {
                    self.warmup_secs.min(COMPUTE_WARMUP_SECS)
                },
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
    /// Of `preparing`, the seconds spent first-touching memory new to the process
    /// ([`crate::backend::Backend::touch_secs`]).
    #[serde(default)]
    pub touching: f64,
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
        self.touching += other.touching;
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

/// What [`measure`] found: the summary of the per-launch times, `reps` launches per sample,
/// why sampling stopped, and the clock paired with the median time where every kept sample
/// gave its own ([`PreparedCase::sample_clock_mhz`], see [`clock_paired_with_median`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub summary: Summary,
    pub reps: u32,
    pub stopped: Stopped,
    pub clock_mhz: Option<f64>,
}

/// The clock, in MHz, that pairs with the median of `secs`, each sample's time, given
/// `clocks_mhz`, each sample's own clock: the median over samples of their time in cycles
/// (time × own clock) over the median time. Then the theory at this clock holds the median
/// time to the median over samples of each one's rate over its own theory (exactly, for an odd
/// count; for an even one, to the second order of the two middle samples' difference). Where
/// the clock falls while the samples run, this is the clock the median sample ran at, not the
/// last and lowest; where it holds still, it is that clock; where only the clock moves (a
/// kernel bound by memory), the median clock. It lies between the samples' lowest and highest
/// clocks. `None` unless every sample has a clock that is finite and positive.
pub fn clock_paired_with_median(secs: &[f64], clocks_mhz: &[Option<f64>]) -> Option<f64> {
    if secs.is_empty() || secs.len() != clocks_mhz.len() {
        return None;
    }
    let cycles = secs
        .iter()
        .zip(clocks_mhz)
        .map(|(t, c)| c.filter(|c| c.is_finite() && *c > 0.0).map(|c| t * c))
        .collect::<Option<Vec<f64>>>()?;
    let mhz = crate::stats::median(&cycles)? / crate::stats::median(secs)?;
    (mhz.is_finite() && mhz > 0.0).then_some(mhz)
}

/// Times one prepared case under `cfg`: the summary of its per-launch times, `reps`, why
/// sampling stopped, and the clock its samples ran at where it records one per sample.
pub fn measure(
    prepared: &mut dyn PreparedCase,
    min_sample_secs: f64,
    cfg: &RunConfig,
) -> Result<Measured> {
    // each kept sample's per-launch time and the clock it ran at
    let mut times = Vec::new();
    let mut clocks = Vec::new();
    let mut sample = |prepared: &mut dyn PreparedCase, reps: u32| -> Result<f64> {
        let secs = prepared.run(reps)? / f64::from(reps);
        times.push(secs);
        clocks.push(prepared.sample_clock_mhz());
        Ok(secs)
    };
    let (reps, stopped) = if prepared.one_shot() {
        let reps = prepared.one_shot_reps().max(1);
        for _ in 0..cfg.min_samples.max(2) {
            sample(prepared, reps)?;
        }
        (reps, Stopped::Count)
    } else {
        // First launch: module load, JIT, first page faults. Not a sample.
        prepared.run(1)?;
        // The warm-up counts from the launch that sizes the samples: where a sample is that one
        // launch (reps 1) and it lasted the warm-up, it was the warm-up (a DRAM case's launch of
        // a fifth of a second needs no sixth launch to warm it); otherwise at least one sample
        // more.
        let warm_start = Instant::now();
        let single = prepared.run(1)?;
        let reps = if single > 0.0 {
            (min_sample_secs / single)
                .ceil()
                .clamp(1.0, (1u32 << 20) as f64) as u32
        } else {
            1 << 20
        };
        let warm = |start: Instant| start.elapsed().as_secs_f64() >= cfg.warmup_secs;
        if reps > 1 || !warm(warm_start) {
            loop {
                prepared.run(reps)?;
                if warm(warm_start) {
                    break;
                }
            }
        }
        let stopped = match cfg.stop {
            Stop::Count => {
                let per_sample = (single * reps as f64).max(1e-9);
                let wanted = (cfg.case_budget_secs / per_sample).floor();
                let samples = (wanted as u32).clamp(cfg.min_samples.max(2), cfg.samples.max(2));
                for _ in 0..samples {
                    sample(prepared, reps)?;
                }
                Stopped::Count
            }
            Stop::UntilStable {
                target_cv,
                limit_secs,
            } => {
                let start = Instant::now();
                let mut spread = RunningCv::default();
                let mut kept = 0;
                loop {
                    spread.push(sample(prepared, reps)?);
                    kept += 1;
                    if kept >= STABLE_MIN_SAMPLES && spread.cv().is_some_and(|cv| cv <= target_cv) {
                        break Stopped::Stable;
                    }
                    if kept >= cfg.min_samples.max(2) as usize {
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
        (reps, stopped)
    };
    let summary = Summary::from_secs(&times).map_err(|e| {
        crate::Error::Internal(format!(
            "{e}; the device clock returned an impossible time, rerun or report a bug"
        ))
    })?;
    Ok(Measured {
        clock_mhz: clock_paired_with_median(&times, &clocks),
        summary,
        reps,
        stopped,
    })
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
/// [`run`] with no sink and no progress, its rows returned (for the tests).
#[doc(hidden)]
pub fn rows_of(
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
    let backend_kind = backend.info().backend;
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
        let touched_before = backend.touch_secs();
        let prepare_started = Instant::now();
        let prepared = backend.prepare(case);
        let mut preparing = prepare_started.elapsed().as_secs_f64();
        let mut result = prepared.and_then(|mut prepared| {
            // Conditions while the samples run, where the backend can read them from aside.
            let sampler = probe.clone().map(|p| Sampler::start(p, sampler::PERIOD));
            let timing = Instant::now();
            let measured = measure(
                prepared.as_mut(),
                min_sample_secs,
                &cfg.for_case(case, backend_kind),
            );
            measuring = timing.elapsed().as_secs_f64();
            during = sampler.map(Sampler::finish).unwrap_or_default();
            let Measured {
                summary,
                reps,
                stopped,
                clock_mhz: sampled_clock_mhz,
            } = measured?;
            let check_started = Instant::now();
            let verdict = prepared.verify();
            checking = check_started.elapsed().as_secs_f64();
            let verdict = verdict?;
            // Each sample's time with its own clock where the case records one per sample;
            // else the one clock the case measures after them.
            observed_clock_mhz = sampled_clock_mhz.or_else(|| prepared.clock_mhz());
            // Every theoretical peak is proportional to the clock: take it per MHz now, and
            // scale it by whichever clock is recorded below.
            theory_per_mhz = prepared.theory_gflops(1.0);
            // A clock read low makes a sound figure look above its theory: ask for it once more
            // before judging (a clock read after the samples is read again; the samples' own
            // records stay).
            if let (Some(first), Some(per_mhz), Some(gflops), None) = (
                observed_clock_mhz,
                theory_per_mhz,
                case_gflops(case, &summary),
                sampled_clock_mhz,
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
        let touching = (backend.touch_secs() - touched_before).max(0.0);
        let after = backend.conditions();
        let conditions = conditions_of(&before, &after, &during, observed_clock_mhz);
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
        let mut record = record_of(
            identity,
            timestamp,
            case,
            note,
            &result,
            &conditions,
            &clock_note,
        );
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
                touching,
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

/// The conditions a case ran under: the readings taken while its samples ran, where the
/// backend takes any, with what only the readings `before` and `after` it can tell; else those
/// two merged. A clock the case measured itself, while it ran, beats one read around it.
fn conditions_of(
    before: &Conditions,
    after: &Conditions,
    during: &[Conditions],
    observed_clock_mhz: Option<f64>,
) -> Conditions {
    let around = Conditions::merge(before, after);
    let mut conditions = if during.is_empty() {
        around
    } else {
        // the readings during the samples, and what only a before/after pair can tell
        let mut c = sampler::summarise(during);
        c.other_cpus_busy = around.other_cpus_busy;
        c.other_gpu_processes = c.other_gpu_processes.max(around.other_gpu_processes);
        c
    };
    conditions.clock_mhz = observed_clock_mhz.or(conditions.clock_mhz);
    conditions
}

/// What a measured case gives its row: its summary, repetitions, why the sampling stopped, its
/// verdict, and the backend's note on how it was launched.
type CaseResult = Result<(Summary, u32, Stopped, Verdict, String)>;

/// The row of one case, from what became of it: measured (its notes joined: the launch's, the
/// plan's, the clock's), skipped, or failed.
fn record_of(
    identity: &RunIdentity,
    timestamp: String,
    case: &Case,
    note: &str,
    result: &CaseResult,
    conditions: &Conditions,
    clock_note: &str,
) -> Record {
    let join = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}; {b}"),
    };
    match result {
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
            conditions,
            join(&join(launch, note), clock_note),
        ),
        Err(crate::Error::Skipped(why)) => Record::new(
            identity,
            timestamp,
            case,
            Outcome::Skipped { why },
            conditions,
            note.to_string(),
        ),
        Err(e) => Record::new(
            identity,
            timestamp,
            case,
            Outcome::Failed {
                error: &e.to_string(),
            },
            conditions,
            note.to_string(),
        ),
    }
}
