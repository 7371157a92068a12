//! Run conditions observed while a case's samples run: a thread of its own reads the device's
//! probe (NVML on a GPU) every [`PERIOD`] from just before the first timed launch to just after
//! the last, and the row gets their summary ([`summarise`]): the median SM and memory clock and
//! power, the highest temperature, every throttle reason seen.
//!
//! Reading conditions only before and after a case would describe an idle device: the clocks
//! of a GPU drop within milliseconds of its last kernel, and a power cap that throttles the
//! samples is gone by the time they end.
//!
//! The sampler must not disturb what it observes: it sleeps between readings, and a backend
//! without a probe (the host, whose cores all run the case) gets none.

use crate::backend::{ConditionProbe, Conditions};
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

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// One row's conditions from its readings: median SM clock, memory clock and power, the highest
/// temperature, and the union of the throttle reasons, in a stable order.
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
        power_w: median(each(|c| c.power_w)),
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
