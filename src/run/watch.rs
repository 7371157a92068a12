//! The watch loop: every interval, one reading of each watched device, handed on as it is
//! taken (the command places it, writes its row and prints its line before the next), until
//! the duration is up, a signal asks to stop ([`crate::run::interrupt::install_for_watch`]),
//! the watched process or the job `watch` started ends, or a device answers no more.
//!
//! Readings keep to a fixed schedule (the k-th at start + k × interval), so a slow reading
//! does not shift the ones after it; between readings the loop looks every few tens of
//! milliseconds for a reason to stop, so Ctrl-C or a job's end is answered at once.

use crate::backend::watch::{process_alive, Reading, Stop, Watched};
use crate::Result;
use std::time::{Duration, Instant};

/// How often the loop looks for a reason to stop between two readings.
const POLL: Duration = Duration::from_millis(25);

/// Why a watch ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    /// The `--duration` is up.
    Duration,
    /// A signal (Ctrl-C) asked it to stop.
    Interrupted,
    /// The job `watch` started ended, with this exit code (`None`: by a signal).
    JobEnded(Option<i32>),
    /// The watched process (and every child of it) ended.
    ProcessEnded(u32),
    /// A device answers no more: which, and its source's words.
    DeviceLost { device: String, cause: String },
}

impl Ended {
    pub fn describe(&self) -> String {
        match self {
            Ended::Duration => "duration".to_string(),
            Ended::Interrupted => "interrupted".to_string(),
            Ended::JobEnded(Some(code)) => format!("job ended (exit {code})"),
            Ended::JobEnded(None) => "job ended (by a signal)".to_string(),
            Ended::ProcessEnded(pid) => format!("process {pid} ended"),
            Ended::DeviceLost { device, cause } => format!("{device} lost: {cause}"),
        }
    }
}

/// What to watch for how long.
pub struct Plan {
    pub interval: Duration,
    pub duration: Option<Duration>,
    /// The process whose end ends the watch (`--pid`), where `watch` did not start it.
    pub pid: Option<u32>,
}

/// Runs the loop over `devices`; `on_reading(device index, reading, seconds since the start)`
/// gets every reading as it is taken, and an error from it ends the watch with that error.
pub fn watch(
    devices: &mut [Box<dyn Watched>],
    plan: &Plan,
    mut job: Option<&mut std::process::Child>,
    mut on_reading: impl FnMut(usize, &Reading, f64) -> Result<()>,
) -> Result<Ended> {
    let start = Instant::now();
    let mut k: u32 = 0;
    loop {
        let t = start.elapsed().as_secs_f64();
        for (i, d) in devices.iter_mut().enumerate() {
            match d.read() {
                Ok(r) => on_reading(i, &r, t)?,
                Err(Stop::DeviceLost(cause)) => {
                    return Ok(Ended::DeviceLost {
                        device: d.device().info.id.clone(),
                        cause,
                    })
                }
                Err(Stop::ProcessEnded) => {
                    return Ok(Ended::ProcessEnded(plan.pid.unwrap_or_default()))
                }
            }
        }
        k = k.saturating_add(1);
        let next = start + plan.interval * k;
        if let Some(d) = plan.duration {
            // the last reading is the one at or before the end
            if next > start + d + Duration::from_millis(1) {
                return Ok(Ended::Duration);
            }
        }
        loop {
            if crate::run::interrupt::requested() {
                return Ok(Ended::Interrupted);
            }
            if let Some(child) = job.as_deref_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Ok(Ended::JobEnded(status.code()));
                }
            } else if let Some(pid) = plan.pid {
                if !process_alive(pid) {
                    return Ok(Ended::ProcessEnded(pid));
                }
            }
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::sleep((next - now).min(POLL));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::watch::{Signal, WatchedDevice};

    /// A device that answers `left` readings, then is lost.
    struct Fake {
        device: WatchedDevice,
        left: u32,
    }

    impl Watched for Fake {
        fn device(&self) -> &WatchedDevice {
            &self.device
        }
        fn read(&mut self) -> std::result::Result<Reading, Stop> {
            if self.left == 0 {
                return Err(Stop::DeviceLost("gone".into()));
            }
            self.left -= 1;
            Ok(Reading::default())
        }
        fn watch_process(&mut self, _: u32) {}
    }

    fn fake(left: u32) -> Box<dyn Watched> {
        Box::new(Fake {
            device: WatchedDevice {
                info: crate::backend::host::host_info(),
                signal: Signal::Proc,
                signal_why: Vec::new(),
                unseen: Vec::new(),
                power_limit_w: None,
            },
            left,
        })
    }

    /// The loop keeps its schedule, stops at its duration, and ends with the device's loss,
    /// every reading before it handed on.
    #[test]
    fn the_loop_keeps_time_and_ends_for_its_reasons() {
        let plan = Plan {
            interval: Duration::from_millis(20),
            duration: Some(Duration::from_millis(100)),
            pid: None,
        };
        let mut times = Vec::new();
        let ended = watch(&mut [fake(100)], &plan, None, |_, _, t| {
            times.push(t);
            Ok(())
        })
        .unwrap();
        assert_eq!(ended, Ended::Duration);
        assert_eq!(times.len(), 6, "{times:?}");
        assert!(times.windows(2).all(|w| w[1] > w[0]));
        let mut n = 0;
        let ended = watch(&mut [fake(3)], &plan, None, |_, _, _| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 3);
        assert!(matches!(ended, Ended::DeviceLost { .. }));
        // a job that ends ends the watch
        let mut job = std::process::Command::new("true").spawn().unwrap();
        let forever = Plan {
            duration: None,
            ..plan
        };
        let ended = watch(
            &mut [fake(1000)],
            &forever,
            Some(&mut job),
            |_, _, _| Ok(()),
        )
        .unwrap();
        assert_eq!(ended, Ended::JobEnded(Some(0)));
    }
}
