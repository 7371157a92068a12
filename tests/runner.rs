//! The runner (run::runner): sizing the batch, warm-up and sampling, stopping by count or
//! stability, each case's row written as it finishes, failures costing their case, suites
//! chosen from a plan.

use roofprobe::backend::host::pool::allowed_cpus;
use roofprobe::backend::host::HostBackend;
use roofprobe::backend::{Backend, PlannedCase, PreparedCase, SizeRequest};
use roofprobe::cases::suite::Selection;
use roofprobe::cases::{Case, Verdict, Work};
use roofprobe::device::Conditions;
use roofprobe::results::record::{Outcome, Record, RunIdentity};
use roofprobe::run::runner::*;
use roofprobe::stats::Stopped;
use roofprobe::Result;
use std::time::Instant;

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
    info: roofprobe::device::DeviceInfo,
    clock_mhz: Option<f64>,
    theory_per_mhz: Option<f64>,
    /// What its cases' second reading of the clock gives (the first, where `None`).
    reread_mhz: Option<f64>,
    /// What a reading from aside gives while the samples run, if the backend has a probe.
    probe: Option<roofprobe::device::ConditionProbe>,
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
    fn info(&self) -> &roofprobe::device::DeviceInfo {
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
    fn condition_probe(&self) -> Option<roofprobe::device::ConditionProbe> {
        self.probe.clone()
    }
}

impl FixedBackend {
    /// On the test identity's device, with no second reading of the clock and no probe.
    fn new(clock_mhz: Option<f64>, theory_per_mhz: Option<f64>) -> FixedBackend {
        FixedBackend {
            info: roofprobe::results::fixtures::identity().device,
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
        &roofprobe::results::fixtures::identity(),
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
        roofprobe::cases::stream::StreamKernel::Triad.case(roofprobe::cases::Precision::F32, 1000);
    let busy: roofprobe::device::ConditionProbe = std::sync::Arc::new(|| Conditions {
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
    let case = roofprobe::cases::peak::case(roofprobe::cases::Precision::F32, 1000, 1000, 500);
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
    let case = roofprobe::cases::peak::case(roofprobe::cases::Precision::F32, 1000, 1000, 500);
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
        reread
            .note
            .contains("above its theory at the clock read first, 1600 MHz: read again, 2100 MHz"),
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

/// A power-capped part under a compute load: its clock falls by `fall_mhz` with every launch
/// from `start_mhz` (the runner's discarded launch, its sizing launch, the warm-up's and the
/// samples'), and every launch runs at `share` of its theory at the clock it ran at. Its
/// records give the clock of the last launch, as a GPU kernel's block records do: after each
/// sample where `per_sample` (the CUDA backend's [`PreparedCase::sample_clock_mhz`]), and once
/// after the samples otherwise (the last launch's clock alone, as the runner once paired it).
struct Settling {
    flops: f64,
    theory_per_mhz: f64,
    share: f64,
    start_mhz: f64,
    fall_mhz: f64,
    per_sample: bool,
    launches: u64,
    last_mhz: f64,
}

impl PreparedCase for Settling {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let mut secs = 0.0;
        for _ in 0..reps {
            self.last_mhz = self.start_mhz - self.fall_mhz * self.launches as f64;
            secs += self.flops / (self.share * self.theory_per_mhz * self.last_mhz * 1e9);
            self.launches += 1;
        }
        Ok(secs)
    }
    fn verify(&mut self) -> Result<Verdict> {
        Ok(Verdict::valid())
    }
    fn launch_note(&self) -> String {
        String::new()
    }
    fn clock_mhz(&mut self) -> Option<f64> {
        Some(self.last_mhz)
    }
    fn sample_clock_mhz(&mut self) -> Option<f64> {
        self.per_sample.then_some(self.last_mhz)
    }
    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        Some(self.theory_per_mhz * clock_mhz)
    }
}

/// A backend whose every case is a [`Settling`] part at 97 % of its theory.
struct SettlingBackend {
    info: roofprobe::device::DeviceInfo,
    per_sample: bool,
}

impl Backend for SettlingBackend {
    fn info(&self) -> &roofprobe::device::DeviceInfo {
        &self.info
    }
    fn cases(&self, _: SizeRequest) -> Result<Vec<PlannedCase>> {
        Ok(Vec::new())
    }
    fn prepare(&mut self, case: &Case) -> Result<Box<dyn PreparedCase + '_>> {
        Ok(Box::new(Settling {
            flops: case.work.flops as f64,
            theory_per_mhz: 0.5,
            share: 0.97,
            start_mhz: 1980.0,
            fall_mhz: 40.0,
            per_sample: self.per_sample,
            launches: 0,
            last_mhz: 0.0,
        }))
    }
    fn conditions(&self) -> Conditions {
        idle()
    }
    fn min_sample_secs(&self) -> f64 {
        1e-3
    }
}

/// Issue 57's power-capped part: an FMA peak at 97 % of its theory while its clock is still
/// falling through the samples (1980 MHz at the first launch, 40 MHz less each launch: after
/// the discarded launch and the sizing one, which is the warm-up here, the ten samples run at
/// 1900 down to 1540 MHz). Paired with the last launch's clock (1540 MHz, the lowest) the
/// median time read about 108 % of theory and the row was invalid; each sample's
/// time paired with its own clock reads 97 %, and the row records the clock the median
/// sample ran at. A case whose clock is one reading after the samples (the host's) still
/// pairs the median time with that reading.
#[test]
fn a_peak_at_97_percent_under_a_falling_clock_stays_valid_at_97_percent() {
    let case = roofprobe::cases::peak::case(roofprobe::cases::Precision::F32, 1000, 1000, 500);
    let row = |per_sample: bool| {
        let mut backend = SettlingBackend {
            info: roofprobe::results::fixtures::identity().device,
            per_sample,
        };
        // the default run's schedule for a compute peak (ten samples), with no warm-up, so
        // the samples see the clock fall
        let cfg = RunConfig {
            warmup_secs: 0.0,
            ..RunConfig::default_suite()
        };
        let planned = [PlannedCase {
            case: case.clone(),
            note: String::new(),
        }];
        rows_of(
            &mut backend,
            &roofprobe::results::fixtures::identity(),
            &cfg,
            &planned,
        )
        .remove(0)
    };
    let paired = row(true);
    assert_eq!(paired.samples, 10);
    assert!(paired.valid, "{}", paired.status);
    let (gflops, theory) = (paired.gflops.unwrap(), paired.theory_gflops.unwrap());
    let of_theory = gflops / theory;
    assert!(
        (of_theory - 0.97).abs() < 1e-9,
        "%theory {:.4} %, not 97 %: {gflops} GFLOP/s against {theory} at {:?} MHz",
        100.0 * of_theory,
        paired.clock_mhz
    );
    // the clock of the median time: between the fifth and sixth samples' 1740 and 1700 MHz
    let mhz = paired.clock_mhz.unwrap();
    assert!((1700.0..=1740.0).contains(&mhz), "{mhz} MHz");
    assert!((theory - 0.5 * mhz).abs() < 1e-6 * theory);
    // one clock, read after the samples: the last launch's 1540 MHz against the median time
    let last = row(false);
    assert_eq!(last.clock_mhz, Some(1540.0));
    assert!(!last.valid);
    assert!(
        last.status
            .contains("x the theoretical 770.0 GFLOP/s at the recorded 1540 MHz"),
        "{}",
        last.status
    );
}

/// The clock paired with the median time: each sample's cycles (time × own clock), their
/// median over the median time. A steady clock is itself; a clock that moves while the time
/// holds (a kernel bound by memory) gives its median; a sample without a clock gives none.
#[test]
fn each_sample_time_pairs_with_its_own_clock() {
    // compute-bound: time × clock is the same for every sample, in any order
    let secs = [1.0 / 1900.0, 1.0 / 1500.0, 1.0 / 1700.0];
    let clocks = [Some(1900.0), Some(1500.0), Some(1700.0)];
    let mhz = clock_paired_with_median(&secs, &clocks).unwrap();
    assert!((mhz - 1700.0).abs() < 1e-9, "{mhz}");
    // a steady clock, whatever the times
    let steady = clock_paired_with_median(&[1.0, 3.0, 2.0, 9.0], &[Some(1410.0); 4]).unwrap();
    assert!((steady - 1410.0).abs() < 1e-9, "{steady}");
    // a steady time, a moving clock: the median clock
    let moving = [Some(1800.0), Some(1200.0), Some(1500.0), Some(1600.0)];
    let mhz = clock_paired_with_median(&[2.0; 4], &moving).unwrap();
    assert!((mhz - 1550.0).abs() < 1e-9, "{mhz}");
    // one sample without a clock, or none that is a clock: no pairing
    assert_eq!(
        clock_paired_with_median(&[1.0, 1.0], &[Some(1500.0), None]),
        None
    );
    assert_eq!(
        clock_paired_with_median(&[1.0, 1.0], &[Some(0.0), Some(f64::NAN)]),
        None
    );
    assert_eq!(clock_paired_with_median(&[], &[]), None);
    assert_eq!(clock_paired_with_median(&[1.0], &[]), None);
}

/// Our GEMM row carries its ratio to the reference row of the same shape and precision;
/// a reference row, an invalid reference, another shape or precision give none.
#[test]
fn gemm_rows_carry_their_ratio_to_the_reference() {
    use roofprobe::cases::{gemm, Precision};
    let shape = gemm::Shape::square(256);
    let row = |kernel: &str, p: Precision, s: gemm::Shape, median: f64, valid: bool| {
        roofprobe::results::fixtures::measured(&gemm::case(kernel, p, s), median, valid)
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
    info: roofprobe::device::DeviceInfo,
}

impl Backend for SkippingBackend {
    fn info(&self) -> &roofprobe::device::DeviceInfo {
        &self.info
    }
    fn cases(&self, _: SizeRequest) -> Result<Vec<PlannedCase>> {
        Ok(Vec::new())
    }
    fn prepare(&mut self, _: &Case) -> Result<Box<dyn PreparedCase + '_>> {
        Err(roofprobe::Error::Skipped(
            "no cuBLAS found (tried …)".into(),
        ))
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
    use roofprobe::cases::{gemm, Precision};
    let identity = roofprobe::results::fixtures::identity();
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
    let Measured {
        summary,
        reps,
        stopped,
        ..
    } = measure(&mut calls, 0.01, &cfg).unwrap();
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
    let Measured { summary, reps, .. } = measure(&mut batch, 0.01, &RunConfig::full()).unwrap();
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
    let Measured {
        summary,
        reps,
        stopped,
        ..
    } = measure(&mut f, 0.005, &cfg).unwrap();
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
    let Measured { summary, reps, .. } = measure(&mut f, 0.02, &cfg).unwrap();
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
    let Measured {
        summary: s,
        reps,
        stopped,
        ..
    } = measure(&mut steady, 1e-9, &cfg(0.005, 60.0)).unwrap();
    assert_eq!((reps, stopped), (1, Stopped::Stable));
    assert_eq!(s.samples, STABLE_MIN_SAMPLES);

    // the first samples (after the two launches `measure` discards) are 3 ms, then 1 ms
    // for good: the CV falls below 5 % only once enough quiet samples dilute them
    let mut disturbed = Sequence {
        secs: [vec![3e-3; 5], vec![1e-3; 100_000]].concat(),
        next: 0,
    };
    let Measured {
        summary: s,
        stopped,
        ..
    } = measure(&mut disturbed, 1e-9, &cfg(0.05, 60.0)).unwrap();
    assert_eq!(stopped, Stopped::Stable);
    assert!(s.cv <= 0.05, "{}", s.cv);
    assert!(s.samples > 100, "{} samples", s.samples);

    // alternating 1 and 3 ms never gets below 0.5 %: the limit stops it
    let mut noisy = Sequence {
        secs: vec![1e-3, 3e-3],
        next: 0,
    };
    let start = Instant::now();
    let Measured {
        summary: s,
        stopped,
        ..
    } = measure(&mut noisy, 1e-9, &cfg(0.005, 0.2)).unwrap();
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
    let compute = roofprobe::backend::host::compute::HostCompute::detect();
    if compute.fma.is_some() && compute.simd != roofprobe::backend::host::compute::Simd::Portable {
        let theory = peak.theory_gflops.expect("a known core has a theory");
        // proportional to the recorded clock
        let at_1mhz = roofprobe::backend::host::compute::theory_gflops(
            2.min(allowed_cpus().len()),
            1.0,
            compute.simd,
            roofprobe::cases::Precision::F64,
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
            Err(roofprobe::Error::Internal("disk full".into()))
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
    info: roofprobe::device::DeviceInfo,
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
    fn info(&self) -> &roofprobe::device::DeviceInfo {
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
            cpu_times: Some(roofprobe::device::CpuTimes {
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
    let mut info = roofprobe::backend::host::host_info();
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
    use roofprobe::cases::{intensity, peak, stream::StreamKernel, Precision};
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
    let Measured {
        summary,
        reps,
        stopped,
        ..
    } = measure(&mut f, 0.001, &cfg).unwrap();
    let verdict = f.verify().unwrap();
    let case = Case {
        family: roofprobe::cases::Family::Stream,
        kernel: "copy".into(),
        precision: roofprobe::cases::Precision::F32,
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
        &roofprobe::results::fixtures::identity(),
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
