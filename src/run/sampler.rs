//! Run conditions observed while a case's samples run: a thread of its own reads the device's
//! probe (NVML on a GPU) every [`PERIOD`] from just before the first timed launch to just after
//! the last, and the row gets their summary ([`summarise`]): the median SM and memory clock,
//! the mean power, the highest temperature, every throttle reason seen.
//!
//! The power is the energy counter's (`nvmlDeviceGetTotalEnergyConsumption`, Volta and later)
//! where it moved often enough during the samples ([`energy_power`]), else the median of NVML's
//! power readings. A power reading is no reading of the case on most boards: on Ampere and
//! later (but the A100) `nvmlDeviceGetPowerUsage` is the average of the last second, which for
//! a case of a second or two mixes in the idle time before it and the case before.
//!
//! Reading conditions only before and after a case would describe an idle device: the clocks
//! of a GPU drop within milliseconds of its last kernel, and a power cap that throttles the
//! samples is gone by the time they end.
//!
//! The sampler must not disturb what it observes: it sleeps between readings, and a backend
//! without a probe (the host, whose cores all run the case) gets none.

use crate::device::{ConditionProbe, Conditions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Time between readings: within the 10–50 ms that catches a throttling episode (NVML's own
/// throttle and clock counters are sampled at a similar period) at a negligible cost.
pub const PERIOD: Duration = Duration::from_millis(20);

/// A running sampler; [`Sampler::finish`] stops it and returns its readings.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Conditions>>>,
}

impl Sampler {
    /// Starts reading `probe` every `period`, the first reading at once.
    pub fn start(probe: ConditionProbe, period: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("conditions".into())
            .spawn(move || {
                let mut readings = Vec::new();
                loop {
                    readings.push(probe());
                    if flag.load(Ordering::Acquire) {
                        return readings;
                    }
                    std::thread::park_timeout(period);
                    if flag.load(Ordering::Acquire) {
                        // one last reading at the end of the samples
                        readings.push(probe());
                        return readings;
                    }
                }
            })
            .ok();
        Sampler { stop, thread }
    }

    /// Stops the sampler and returns its readings (none if its thread could not start).
    pub fn finish(mut self) -> Vec<Conditions> {
        self.stop.store(true, Ordering::Release);
        match self.thread.take() {
            Some(t) => {
                t.thread().unpark();
                t.join().unwrap_or_default()
            }
            None => Vec::new(),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// The median of the finite values (the one median, [`crate::stats::median`]); `None` when
/// there is none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    crate::stats::median(&values)
}

/// The least time between the energy counter's first and last change seen during a case's
/// samples that gives its power: five of the sampler's periods. Each change is seen up to a
/// period late, both ends alike on average, so the span is off by at most one period: at this
/// span the figure by a fifth at worst, over half a second by 4 % at worst, and on average by
/// far less.
pub const MIN_ENERGY_SECS: f64 = 0.1;

/// The mean power over `readings` from the energy counter: the energy between the first and the
/// last reading at which the counter had moved, over the time between them. The counter moves
/// at the board's own pace (tens of milliseconds), and a reading is the first to see each move,
/// up to a sampler's period after it; measured from move to move, both ends are late alike.
/// `None` where the counter moved fewer than twice, over less than [`MIN_ENERGY_SECS`], or
/// went back (a driver reload restarts it).
pub fn energy_power(readings: &[Conditions]) -> Option<f64> {
    let seen: Vec<crate::device::EnergyReading> =
        readings.iter().filter_map(|c| c.energy).collect();
    let moves: Vec<&crate::device::EnergyReading> = seen
        .windows(2)
        .filter(|w| w[1].millijoules != w[0].millijoules)
        .map(|w| &w[1])
        .collect();
    let (first, last) = (moves.first()?, moves.last()?);
    let secs = last.at.saturating_duration_since(first.at).as_secs_f64();
    let millijoules = last.millijoules.checked_sub(first.millijoules)?;
    if secs < MIN_ENERGY_SECS
        || moves
            .iter()
            .zip(&moves[1..])
            .any(|(a, b)| b.millijoules < a.millijoules)
    {
        return None;
    }
    Some(millijoules as f64 / 1000.0 / secs)
}

/// One row's conditions from its readings: median SM clock and memory clock, the mean power
/// ([`energy_power`], else the median power reading), the highest temperature, and the union
/// of the throttle reasons, in a stable order.
pub fn summarise(readings: &[Conditions]) -> Conditions {
    let each = |f: fn(&Conditions) -> Option<f64>| readings.iter().filter_map(f).collect();
    let mut reasons: Vec<&str> = readings
        .iter()
        .flat_map(|c| c.throttle.split(';'))
        .filter(|s| !s.is_empty())
        .collect();
    reasons.sort_unstable();
    reasons.dedup();
    Conditions {
        clock_mhz: median(each(|c| c.clock_mhz)),
        memory_clock_mhz: median(each(|c| c.memory_clock_mhz)),
        power_w: energy_power(readings).or_else(|| median(each(|c| c.power_w))),
        temperature_c: readings
            .iter()
            .filter_map(|c| c.temperature_c)
            .filter(|t| t.is_finite())
            .max_by(f64::total_cmp),
        throttle: reasons.join(";"),
        other_gpu_processes: readings.iter().filter_map(|c| c.other_gpu_processes).max(),
        ..Conditions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::time::Instant;

    fn reading(mhz: f64, watts: f64, temp: f64, throttle: &str) -> Conditions {
        Conditions {
            clock_mhz: Some(mhz),
            memory_clock_mhz: Some(2619.0),
            power_w: Some(watts),
            temperature_c: Some(temp),
            throttle: throttle.to_string(),
            ..Conditions::default()
        }
    }

    /// Readings every 20 ms over `secs` of a board drawing `watts` from `busy_from` on (idle,
    /// a quarter of it, before), whose power reading is the last second's average and whose
    /// energy counter moves every `update_ms` (`None`: no counter).
    fn board(secs: f64, busy_from: f64, watts: f64, update_ms: Option<u64>) -> Vec<Conditions> {
        let start = Instant::now();
        // energy drawn by time t (joules), the board's life starting 5 s before the readings
        let joules = |t: f64| {
            let t = t + 5.0;
            let busy = (t - (busy_from + 5.0)).max(0.0);
            watts / 4.0 * t + (watts - watts / 4.0) * busy
        };
        (0..=(secs / 0.02).round() as u64)
            .map(|i| {
                let t = i as f64 * 0.02;
                Conditions {
                    power_w: Some(joules(t) - joules(t - 1.0)),
                    energy: update_ms.map(|ms| {
                        let tick = ms as f64 / 1000.0;
                        let shown = ((t + 5.0) / tick).floor() * tick - 5.0;
                        crate::device::EnergyReading {
                            millijoules: (joules(shown) * 1000.0) as u64,
                            at: start + Duration::from_secs_f64(t),
                        }
                    }),
                    ..Conditions::default()
                }
            })
            .collect()
    }

    /// The power of a case is the energy counter's mean over its samples, not the median of
    /// NVML's one-second averages, which the idle time before the case drags down; the median
    /// only where there is no counter, or it moved over too short a time.
    #[test]
    fn the_power_is_the_energy_counters_mean_over_the_samples() {
        // a 1.5 s case on a 700 W board, busy from its first reading: the averaged readings'
        // median is well below, the counter's mean within a few percent whatever its pace
        for update_ms in [20, 50, 100] {
            let readings = board(1.5, 0.0, 700.0, Some(update_ms));
            let mean = summarise(&readings).power_w.unwrap();
            assert!(
                (mean - 700.0).abs() < 700.0 * 0.03,
                "{update_ms} ms: {mean}"
            );
            assert_eq!(energy_power(&readings), Some(mean));
        }
        let averaged = summarise(&board(1.5, 0.0, 700.0, None)).power_w.unwrap();
        assert!(averaged < 700.0 * 0.9, "{averaged}");
        // too short a time between the counter's moves: the readings' median
        let short = board(0.15, 0.0, 700.0, Some(100));
        assert_eq!(energy_power(&short), None);
        assert!(summarise(&short).power_w.unwrap() < 700.0 * 0.5);
        // a counter that went back (the driver reloaded): the median
        let mut back = board(1.5, 0.0, 700.0, Some(20));
        for r in &mut back[40..] {
            let e = r.energy.as_mut().unwrap();
            e.millijoules -= 400_000;
        }
        assert_eq!(energy_power(&back), None);
    }

    #[test]
    fn a_summary_is_the_median_clock_the_hottest_reading_and_every_reason() {
        let readings = [
            reading(1980.0, 700.0, 61.0, ""),
            reading(1755.0, 702.0, 66.0, "sw_power_cap"),
            reading(1980.0, 650.0, 64.0, ""),
            reading(1830.0, 699.0, 65.0, "sw_thermal_slowdown;sw_power_cap"),
            reading(1980.0, 705.0, 63.0, ""),
        ];
        let s = summarise(&readings);
        assert_eq!(s.clock_mhz, Some(1980.0));
        assert_eq!(s.power_w, Some(700.0));
        assert_eq!(s.temperature_c, Some(66.0));
        assert_eq!(s.memory_clock_mhz, Some(2619.0));
        assert_eq!(s.throttle, "sw_power_cap;sw_thermal_slowdown");
        assert_eq!(summarise(&[]), Conditions::default());
        let even = [reading(1000.0, 1.0, 1.0, ""), reading(2000.0, 3.0, 2.0, "")];
        assert_eq!(summarise(&even).clock_mhz, Some(1500.0));
    }

    /// The sampler reads every period while it runs, at least once before and once after, and
    /// stops when asked.
    #[test]
    fn the_sampler_reads_while_it_runs_and_stops() {
        let count = Arc::new(AtomicU32::new(0));
        let seen = count.clone();
        let probe: ConditionProbe = Arc::new(move || {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            reading(1000.0 + n as f64, 1.0, 1.0, "")
        });
        let started = Instant::now();
        let sampler = Sampler::start(probe, Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(120));
        let readings = sampler.finish();
        assert!(started.elapsed() < Duration::from_secs(2));
        // about 12 readings; a loaded machine may give fewer, never fewer than the two ends
        assert!(
            (2..=20).contains(&readings.len()),
            "{} readings",
            readings.len()
        );
        let after = count.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(count.load(Ordering::SeqCst), after, "stopped");
    }
}
