//! The launch family: what starting work costs, apart from the work.
//!
//! A case is `launch/<what>/i32`, one row per [`What`]:
//! - `empty` (a GPU): an empty kernel, one block of one thread, launched back to back on one
//!   stream, [`LAUNCHES_PER_SAMPLE`] launches between two timing events; the sample is their
//!   time over the launches, so the time columns carry the time per launch. The kernel is empty
//!   but for one `red.global.add.u32` of 1 to a counter, so the check can prove that the stream
//!   ran every launch (an atomic add by one thread is a few nanoseconds of a launch's
//!   microseconds).
//! - `timer` (a GPU): the event timer's resolution. A try records two events back to back on
//!   the stream and reads the time between them; the convention: a sample is the smallest
//!   non-zero time of [`TIMER_TRIES_PER_SAMPLE`] tries (a zero is a pair that fell in one tick),
//!   and the row's figure the least of its samples (`time_min_s`).
//! - `wake_barrier` (the host): one round wakes every worker thread of the pool (a condition
//!   variable) and they meet once at the spin barrier, then the caller waits for all; the
//!   sample is [`WAKE_ROUNDS_PER_SAMPLE`] rounds over the rounds.
//!
//! The precision is `i32`: the 32-bit count each launch or round adds, which the check reads.
//! A row's work is nothing (no bytes, no operations), so it has no GB/s or GFLOP/s: its figure
//! is its time. Its `elements` are the launches, tries or rounds of one sample; the runner's
//! `reps` the launches or rounds one sample's time is divided by (1 for `timer`).
//!
//! Validation ([`check_count`], [`check_batch`], [`check_timer`], [`check_wake`]): every launch or round ran
//! (the count read back equals what was issued), the device timer said a non-zero time for the
//! batch (a zero is below its resolution: no figure), and never more than the host's monotonic
//! clock saw from before the first launch to after the stream finished (both events lie inside
//! that window, so a longer device time is a broken timer); on the host, no worker left the
//! barrier before every worker had reached it. This module must not launch or time anything.

use super::{Case, Family, Precision, Verdict, Work};

/// A launch row counts in 32-bit adds.
pub const PRECISION: Precision = Precision::I32;

/// Empty launches between the two events of one sample: thousands of microseconds, so the
/// events' own resolution (about half a microsecond) is a thousandth of the sample.
pub const LAUNCHES_PER_SAMPLE: u32 = 1000;

/// Event pairs one timer sample tries.
pub const TIMER_TRIES_PER_SAMPLE: u32 = 200;

/// Rounds (wake every worker, one barrier) in one host sample.
pub const WAKE_ROUNDS_PER_SAMPLE: u32 = 200;

/// How far a device time may exceed the host's clock over the same window before it is called
/// wrong: the two clocks' rates may differ by parts per million, never by a percent.
pub const CLOCK_TOLERANCE: f64 = 1.01;

/// What a launch row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    Empty,
    Timer,
    WakeBarrier,
}

impl What {
    pub fn as_str(self) -> &'static str {
        match self {
            What::Empty => "empty",
            What::Timer => "timer",
            What::WakeBarrier => "wake_barrier",
        }
    }

    pub fn parse(kernel: &str) -> Option<What> {
        [What::Empty, What::Timer, What::WakeBarrier]
            .into_iter()
            .find(|w| w.as_str() == kernel)
    }

    /// Launches, tries or rounds in one sample.
    pub fn per_sample(self) -> u32 {
        match self {
            What::Empty => LAUNCHES_PER_SAMPLE,
            What::Timer => TIMER_TRIES_PER_SAMPLE,
            What::WakeBarrier => WAKE_ROUNDS_PER_SAMPLE,
        }
    }
}

/// The rows a GPU measures, in run order.
pub const GPU_ROWS: [What; 2] = [What::Empty, What::Timer];

/// The rows the host measures.
pub const HOST_ROWS: [What; 1] = [What::WakeBarrier];

/// The case for `what`: its sample's launches, tries or rounds as elements, the 4-byte counter
/// as its working set (none for the timer), no work.
pub fn case(what: What) -> Case {
    Case {
        family: Family::Launch,
        kernel: what.as_str().to_string(),
        precision: PRECISION,
        param: None,
        elements: u64::from(what.per_sample()),
        working_set_bytes: if what == What::Timer { 0 } else { 4 },
        work: Work::default(),
    }
}

/// Checks the count read back after every launch or round: `counted` adds of the `issued`.
pub fn check_count(counted: u64, issued: u64) -> Verdict {
    if counted == issued {
        Verdict::valid()
    } else {
        Verdict::invalid(format!(
            "the count is {counted} after {issued} launches: they did not all run"
        ))
    }
}

/// Checks the clocks of one batch of `launches`: the device's `device_secs` for the batch must
/// be non-zero (a zero is below the timer's resolution) and no more than the host clock's
/// `host_secs` around it (the events lie inside that window).
pub fn check_batch(device_secs: f64, host_secs: f64, launches: u32) -> Verdict {
    if !(device_secs > 0.0 && device_secs.is_finite()) {
        return Verdict::invalid(format!(
            "the timer says {device_secs} s for {launches} launches: less than its resolution, \
             no figure"
        ));
    }
    if device_secs > CLOCK_TOLERANCE * host_secs {
        return Verdict::invalid(format!(
            "the device timer says {device_secs:.3e} s for {launches} launches but the host saw \
             only {host_secs:.3e} s around them: the timer is wrong"
        ));
    }
    Verdict::valid()
}

/// What a timer sample found: the smallest non-zero time of its tries, or why it has none.
/// `tries` are pairs `(device_secs, host_secs)`: the device time between two events recorded
/// back to back, and the host clock's time from before the first record to after the second
/// completed.
pub fn check_timer(tries: &[(f64, f64)]) -> (Option<f64>, Verdict) {
    if tries.is_empty() {
        return (None, Verdict::invalid("no event pair was timed"));
    }
    for (i, &(device, host)) in tries.iter().enumerate() {
        if !(device >= 0.0 && device.is_finite()) {
            return (
                None,
                Verdict::invalid(format!(
                    "try {i}: the timer says {device} s between two events"
                )),
            );
        }
        if device > CLOCK_TOLERANCE * host {
            return (
                None,
                Verdict::invalid(format!(
                    "try {i}: the device timer says {device:.3e} s between two events but the \
                     host saw only {host:.3e} s around them: the timer is wrong"
                )),
            );
        }
    }
    let smallest = tries
        .iter()
        .map(|&(device, _)| device)
        .filter(|d| *d > 0.0)
        .min_by(f64::total_cmp);
    match smallest {
        Some(s) => (Some(s), Verdict::valid()),
        None => (
            None,
            Verdict::invalid(format!(
                "all {} event pairs read 0 s: the timer never ticked",
                tries.len()
            )),
        ),
    }
}

/// Checks a host sample: each worker's count of rounds run against the `rounds` issued, and how
/// many times a worker found, on leaving the barrier, fewer arrivals than every worker's.
pub fn check_wake(rounds_per_worker: &[u64], rounds: u64, early_leaves: u64) -> Verdict {
    if let Some((w, &ran)) = rounds_per_worker
        .iter()
        .enumerate()
        .find(|(_, &ran)| ran != rounds)
    {
        return Verdict::invalid(format!(
            "worker {w} ran {ran} of {rounds} rounds: the pool did not wake it every time"
        ));
    }
    if rounds_per_worker.is_empty() {
        return Verdict::invalid("no worker ran");
    }
    if early_leaves > 0 {
        return Verdict::invalid(format!(
            "{early_leaves} times a worker left the barrier before every worker reached it"
        ));
    }
    Verdict::valid()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_names_what_it_measures_and_does_no_work() {
        let c = case(What::Empty);
        assert_eq!(c.id(), "launch/empty/i32");
        assert_eq!(c.elements, u64::from(LAUNCHES_PER_SAMPLE));
        assert_eq!((c.work.bytes(), c.work.flops), (0, 0));
        assert_eq!(case(What::Timer).id(), "launch/timer/i32");
        assert_eq!(case(What::WakeBarrier).id(), "launch/wake_barrier/i32");
        assert_eq!(What::parse("timer"), Some(What::Timer));
        assert_eq!(What::parse("triad"), None);
    }

    #[test]
    fn a_batch_is_valid_only_if_all_ran_and_the_clocks_agree() {
        assert!(check_count(1000, 1000).valid);
        assert!(check_batch(2e-3, 3e-3, 1000).valid);
        for (v, why) in [
            (check_count(999, 1000), "count is 999 after 1000"),
            (check_batch(0.0, 3e-3, 1000), "less than its resolution"),
            (
                check_batch(f64::NAN, 3e-3, 1000),
                "less than its resolution",
            ),
            (check_batch(4e-3, 3e-3, 1000), "the timer is wrong"),
        ] {
            assert!(!v.valid && v.detail.contains(why), "{why}: {}", v.detail);
        }
    }

    #[test]
    fn the_timer_resolution_is_the_smallest_non_zero_try() {
        let (r, v) = check_timer(&[(0.0, 1e-5), (1.024e-6, 1e-5), (5.12e-7, 1e-5)]);
        assert!(v.valid, "{}", v.detail);
        assert_eq!(r, Some(5.12e-7));
        for (tries, why) in [
            (vec![(0.0, 1e-5), (0.0, 1e-5)], "never ticked"),
            (vec![(-1e-6, 1e-5)], "the timer says -0.000001"),
            (vec![(1e-3, 1e-5)], "the timer is wrong"),
            (vec![], "no event pair"),
        ] {
            let (r, v) = check_timer(&tries);
            assert!(
                r.is_none() && !v.valid && v.detail.contains(why),
                "{why}: {}",
                v.detail
            );
        }
    }

    #[test]
    fn a_wake_sample_is_valid_only_if_every_worker_ran_every_round() {
        assert!(check_wake(&[200, 200], 200, 0).valid);
        for (v, why) in [
            (check_wake(&[200, 199], 200, 0), "worker 1 ran 199 of 200"),
            (
                check_wake(&[200, 200], 200, 3),
                "3 times a worker left the barrier",
            ),
            (check_wake(&[], 200, 0), "no worker ran"),
        ] {
            assert!(!v.valid && v.detail.contains(why), "{why}: {}", v.detail);
        }
    }
}
