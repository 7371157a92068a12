//! What `roofprobe watch` reads from a device every interval, whatever the device: one
//! [`Reading`] of counters, the [`Signal`] its activity figures came from, and the [`Watched`]
//! interface the two backends implement (`cuda::watch` through NVML, its GPM metrics or a DCGM
//! host engine; `host::watch` through `/proc`). Also the one helper both need: the processes of
//! a tree ([`process_tree`]), since the job a user names is often a launcher whose children
//! hold the device.
//!
//! Raw counters only, in the units the sources give them (percent of time or of a peak, bytes,
//! MHz, watts): turning them into the roofline's units, against measured ceilings, is
//! `analysis::watch`'s business. A watcher must not print; it says what it cannot see in its
//! [`WatchedDevice::unseen`].

use crate::device::DeviceInfo;
use serde::Serialize;

/// Where a reading's activity figures come from, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    /// NVML's GPM metrics (Hopper and later): SM activity and occupancy, DRAM bandwidth
    /// utilisation, each tensor and FP pipe's activity, between two samples.
    Gpm,
    /// A DCGM host engine's profiling fields (`dcgmi dmon`: 1002 SM active, 1003 SM occupancy,
    /// 1004 tensor active, 1005 DRAM active, 1006–1008 FP64/FP32/FP16 active, 1009/1010 PCIe).
    Dcgm,
    /// NVML's utilisation alone: the time some kernel ran and the time the memory controller
    /// was busy. Coarse: it cannot tell bandwidth from compute.
    #[serde(rename = "nvml-utilisation")]
    Utilisation,
    /// Linux's `/proc`: a process's CPU time and resident memory, the machine's memory. No
    /// memory-traffic or pipe counters at all.
    Proc,
}

impl Signal {
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Gpm => "gpm",
            Signal::Dcgm => "dcgm",
            Signal::Utilisation => "nvml-utilisation",
            Signal::Proc => "proc",
        }
    }

    /// Whether its figures can tell DRAM traffic from pipe activity.
    pub fn sees_the_roofline(self) -> bool {
        matches!(self, Signal::Gpm | Signal::Dcgm)
    }
}

/// One reading of a watched device. `None` where the source gives no such figure. Percentages
/// are 0–100: of time (activity, utilisation) or of the peak (DRAM bandwidth utilisation), as
/// the source defines them (docs/watch.md gives each one's meaning).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Reading {
    /// The seconds the activity figures cover: since the reading before (GPM's two samples,
    /// DCGM's and NVML's own sampling periods are their own).
    pub span_secs: f64,
    /// Memory in use on the whole device (every process, and the driver's share), and its total.
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    /// Memory the watched process and its children hold: on a GPU as NVML lists it, on the host
    /// their resident set.
    pub process_memory_bytes: Option<u64>,
    pub sm_clock_mhz: Option<f64>,
    pub memory_clock_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub temperature_c: Option<f64>,
    /// Clock-event (throttle) reasons active now, `;`-separated, as the run's rows name them.
    pub throttle: String,
    pub sm_active_pct: Option<f64>,
    pub sm_occupancy_pct: Option<f64>,
    /// DRAM bandwidth used, % of the device's peak (GPM, DCGM's "DRAM active").
    pub dram_active_pct: Option<f64>,
    /// Any tensor pipe busy, % of time.
    pub tensor_active_pct: Option<f64>,
    /// The half-precision (HMMA: f16, bf16, tf32, fp8), integer (IMMA) and f64 (DMMA) tensor
    /// pipes, % of time (GPM only).
    pub tensor_f16_pct: Option<f64>,
    pub tensor_int_pct: Option<f64>,
    pub tensor_f64_pct: Option<f64>,
    /// The FP64, FP32 and FP16 (non-tensor) pipes, % of time.
    pub fp64_active_pct: Option<f64>,
    pub fp32_active_pct: Option<f64>,
    pub fp16_active_pct: Option<f64>,
    /// NVML's coarse utilisation: time some kernel ran, time the memory controller was busy.
    pub gpu_util_pct: Option<f64>,
    pub memory_util_pct: Option<f64>,
    pub pcie_tx_bytes_per_s: Option<f64>,
    pub pcie_rx_bytes_per_s: Option<f64>,
    /// The host: CPUs' worth of time the watched processes (or, without a pid, everything) ran.
    pub cpu_busy_cores: Option<f64>,
}

/// Why a watcher stopped reading.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// The device answers no more (fell off the bus, the driver went away): the source's words.
    DeviceLost(String),
    /// The watched process (and every child of it) has ended.
    ProcessEnded,
}

/// A watched device: what it is, which signal its readings carry and why, and what it cannot
/// see.
#[derive(Clone, Debug)]
pub struct WatchedDevice {
    /// Its identity as `roofprobe devices` gives it (without a context: no free memory after
    /// one).
    pub info: DeviceInfo,
    pub signal: Signal,
    /// Why this signal: what was tried before it and what answered (one line each).
    pub signal_why: Vec<String>,
    /// What this watcher cannot see, each in a sentence.
    pub unseen: Vec<String>,
    /// The board's enforced power limit, watts.
    pub power_limit_w: Option<f64>,
}

/// A device being watched: one reading per call, the first at once.
pub trait Watched {
    fn device(&self) -> &WatchedDevice;

    /// Reads the counters now; `Err` once the device answers no more or the watched process
    /// has ended.
    fn read(&mut self) -> Result<Reading, Stop>;

    /// From now on, the job is process `pid` and its children (a job `watch` started after
    /// opening its devices).
    fn watch_process(&mut self, pid: u32);
}

/// `/proc/<pid>/stat`'s parent id and its user + system time in clock ticks.
pub fn proc_stat(stat: &str) -> Option<(u32, u64)> {
    // the command name is in parentheses and may hold spaces: fields count from after it
    let after: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |n: usize| after.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some((u32::try_from(field(4)?).ok()?, field(14)? + field(15)?))
}

/// Whether process `pid` exists (and is no zombie: one that has ended but is not yet reaped).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// `pid` and every process below it, from `/proc/*/stat`'s parent ids, with each one's CPU
/// ticks; empty when `pid` is gone.
pub fn process_tree(pid: u32) -> Vec<(u32, u64)> {
    let mut all: Vec<(u32, u32, u64)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some((parent, ticks)) = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .as_deref()
                .and_then(proc_stat)
            {
                all.push((p, parent, ticks));
            }
        }
    }
    tree_of(pid, &all)
}

/// The processes of `(pid, parent, ticks)` at or below `root`, each with its ticks.
pub fn tree_of(root: u32, all: &[(u32, u32, u64)]) -> Vec<(u32, u64)> {
    let mut out: Vec<(u32, u64)> = all
        .iter()
        .filter(|(p, _, _)| *p == root)
        .map(|(p, _, t)| (*p, *t))
        .collect();
    let mut i = 0;
    while i < out.len() {
        let parent = out[i].0;
        for (p, _, t) in all.iter().filter(|(_, pp, _)| *pp == parent) {
            if !out.iter().any(|(q, _)| q == p) {
                out.push((*p, *t));
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_the_parent_and_the_cpu_time() {
        let stat = "4242 (python3 train.py) S 17 4242 17 0 -1 4194304 100 0 0 0 250 30 0 0 20 0 \
                    4 0 12345 1000000 500 18446744073709551615";
        assert_eq!(proc_stat(stat), Some((17, 280)));
        assert_eq!(proc_stat("garbage"), None);
    }

    #[test]
    fn a_tree_holds_the_root_and_everything_below_it() {
        let all = [
            (1, 0, 5),
            (10, 1, 1),
            (11, 10, 2),
            (12, 11, 3),
            (20, 1, 7),
            (13, 10, 4),
        ];
        let mut tree: Vec<u32> = tree_of(10, &all).into_iter().map(|(p, _)| p).collect();
        tree.sort_unstable();
        assert_eq!(tree, [10, 11, 12, 13]);
        assert!(tree_of(99, &all).is_empty());
        // this process is alive, a pid beyond the kernel's limit is not
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(u32::MAX - 1));
        assert!(process_tree(std::process::id())
            .iter()
            .any(|(p, _)| *p == std::process::id()));
    }
}
