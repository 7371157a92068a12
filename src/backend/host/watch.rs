//! `roofprobe watch --device host`: a process (and its children) or, without one, the whole
//! machine, as far as Linux's `/proc` shows it: CPU time (`/proc/<pid>/stat`, or `/proc/stat`
//! for the machine), resident memory (`/proc/<pid>/status`'s `VmRSS`) and the machine's memory
//! in use (`MemTotal` less `MemAvailable`).
//!
//! What `/proc` does not show, [`WatchedDevice::unseen`] says: memory traffic (DRAM bandwidth
//! needs the memory controllers' uncore counters, through `perf`) and which units the cores kept
//! busy, so the host's verdict can be capacity, busy or idle, never bandwidth against compute.

use super::capacity::meminfo_bytes;
use super::host_info;
use crate::backend::watch::{
    process_alive, process_tree, Reading, Signal, Stop, Watched, WatchedDevice,
};
use crate::device::CpuTimes;
use crate::{Error, Result};
use std::time::Instant;

/// The host being watched.
pub struct HostWatch {
    device: WatchedDevice,
    pid: Option<u32>,
    /// CPU ticks at the last reading: the process tree's, or the machine's busy ticks.
    last_ticks: Option<u64>,
    last: Instant,
    ticks_per_sec: f64,
}

/// `VmRSS` of a `/proc/<pid>/status` text, bytes.
pub fn rss_bytes(status: &str) -> Option<u64> {
    meminfo_bytes(status, "VmRSS")
}

impl HostWatch {
    /// Watches process `pid` and its children, or the whole machine without one. An unknown
    /// pid is a usage error.
    pub fn open(pid: Option<u32>) -> Result<HostWatch> {
        if let Some(p) = pid {
            if !process_alive(p) {
                return Err(unknown_pid(p));
            }
        }
        // SAFETY: sysconf reads a constant of the system.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let info = host_info();
        let mut w = HostWatch {
            device: WatchedDevice {
                info,
                signal: Signal::Proc,
                signal_why: vec![signal_why(pid)],
                unseen: vec![
                    "DRAM traffic: /proc has no memory-bandwidth counter (the memory \
                     controllers' uncore events, through perf, would), so the measured DRAM \
                     ceiling cannot be set against it"
                        .to_string(),
                    "which units the cores kept busy: CPU time says a core ran, not whether it \
                     waited on memory or computed, so busy cannot be told as bandwidth or compute"
                        .to_string(),
                ],
                power_limit_w: None,
            },
            pid,
            last_ticks: None,
            last: Instant::now(),
            ticks_per_sec: if hz > 0 { hz as f64 } else { 100.0 },
        };
        w.last_ticks = w.ticks();
        Ok(w)
    }

    /// The CPU ticks to difference: the process tree's user and system time, or every CPU's
    /// busy time.
    fn ticks(&self) -> Option<u64> {
        match self.pid {
            Some(p) => {
                let tree = process_tree(p);
                (!tree.is_empty()).then(|| tree.iter().map(|(_, t)| t).sum())
            }
            None => CpuTimes::now().map(|c| c.busy_ticks),
        }
    }
}

/// Where the host's figures come from, for process `pid` or the whole machine.
fn signal_why(pid: Option<u32>) -> String {
    let whose = match pid {
        Some(p) => format!("process {p} and its children"),
        None => "the whole machine (no --pid)".to_string(),
    };
    format!("/proc: CPU time and resident memory of {whose}; the machine's memory in use")
}

/// The error for a pid that names no process.
pub fn unknown_pid(pid: u32) -> Error {
    Error::Usage(format!(
        "no process {pid}: it has ended, or the pid is wrong (`ps -p {pid}` shows it while it runs)"
    ))
}

impl Watched for HostWatch {
    fn device(&self) -> &WatchedDevice {
        &self.device
    }

    fn watch_process(&mut self, pid: u32) {
        self.pid = Some(pid);
        self.device.signal_why = vec![signal_why(Some(pid))];
        self.last_ticks = self.ticks();
        self.last = Instant::now();
    }

    fn read(&mut self) -> std::result::Result<Reading, Stop> {
        let now = Instant::now();
        let span_secs = now.saturating_duration_since(self.last).as_secs_f64();
        let ticks = self.ticks();
        if self.pid.is_some() && ticks.is_none() {
            return Err(Stop::ProcessEnded);
        }
        let cpu_busy_cores = match (self.last_ticks, ticks) {
            (Some(a), Some(b)) if span_secs > 0.0 => {
                Some(b.saturating_sub(a) as f64 / self.ticks_per_sec / span_secs)
            }
            _ => None,
        };
        self.last_ticks = ticks;
        self.last = now;
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let total = meminfo_bytes(&meminfo, "MemTotal");
        let available = meminfo_bytes(&meminfo, "MemAvailable");
        let process_memory_bytes = self.pid.map(|p| {
            process_tree(p)
                .iter()
                .filter_map(|(q, _)| {
                    std::fs::read_to_string(format!("/proc/{q}/status"))
                        .ok()
                        .as_deref()
                        .and_then(rss_bytes)
                })
                .sum()
        });
        Ok(Reading {
            span_secs,
            memory_used_bytes: total.zip(available).map(|(t, a)| t.saturating_sub(a)),
            memory_total_bytes: total,
            process_memory_bytes,
            cpu_busy_cores,
            ..Reading::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_read_from_a_status_text() {
        let status = "Name:\tpython3\nVmPeak:\t  900 kB\nVmRSS:\t  2048 kB\nThreads:\t4\n";
        assert_eq!(rss_bytes(status), Some(2048 * 1024));
        assert_eq!(rss_bytes("Name:\tx\n"), None);
    }

    /// This process is watched: its memory is what it holds, its CPU time moves as it works,
    /// and a pid that names nothing is refused.
    #[test]
    fn this_process_is_watched_and_an_unknown_pid_refused() {
        let mut w = HostWatch::open(Some(std::process::id())).unwrap();
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed().as_millis() < 80 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let r = w.read().unwrap();
        assert!(r.process_memory_bytes.unwrap() > 1 << 20);
        assert!(r.memory_total_bytes.unwrap() > r.memory_used_bytes.unwrap());
        assert!(r.cpu_busy_cores.is_some());
        let err = HostWatch::open(Some(u32::MAX - 1)).err().unwrap();
        assert!(err.to_string().contains("no process"), "{err}");
    }
}
