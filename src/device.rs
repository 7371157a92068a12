//! What a device is and the conditions it ran under: the description a backend gives of its
//! device ([`DeviceInfo`]), the run conditions observed around a case ([`Conditions`]), and this
//! machine's host name. Every layer that names a device uses these, so they live at the bottom;
//! a backend fills them, nothing here reads a device.

use serde::{Deserialize, Serialize};

// The names a calibration shares with the rows (the device's kind and identity) live in the
// lean calibration crate, so an estimator that loads a calibration builds none of roofprobe.
pub use roofprobe_calibration::{BackendKind, Identity};

/// One level of a cache hierarchy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// `L1d`, `L2`, `L3`, …
    pub name: String,
    pub size_bytes: u64,
    /// How many instances of this cache the device has (per core, per cluster, one shared).
    pub instances: u32,
}

/// What a device is, as reported by the driver or the operating system.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub backend: BackendKind,
    /// How to select it: `cuda:0`, `host`.
    pub id: String,
    /// The name the driver or CPU reports (`NVIDIA H200`, `AMD EPYC 9B45`).
    pub name: String,
    /// `9.0`; empty for the host.
    pub compute_capability: String,
    /// Streaming multiprocessors, or CPU cores (logical CPUs this process may use).
    pub units: u32,
    /// Maximum SM / core clock the device reports, if it does.
    pub clock_mhz: Option<f64>,
    /// Memory clock the device reports, if it does.
    pub memory_clock_mhz: Option<f64>,
    pub memory_bus_bits: Option<u32>,
    /// The last-level cache: L2 on a GPU, the largest CPU cache on the host.
    pub llc_bytes: u64,
    pub caches: Vec<CacheLevel>,
    pub memory_total_bytes: u64,
    pub memory_free_bytes: u64,
    /// Driver version (`CUDA 12.4, driver 550.54.15`) or the OS kernel for the host.
    pub driver: String,
    /// What tells this device from another of the same name.
    #[serde(default)]
    pub identity: Identity,
    /// Anything else worth listing, in display order.
    pub extra: Vec<(String, String)>,
}

/// Reads the run conditions now, from any thread: what [`crate::run::sampler`] calls while a case's
/// samples run.
pub type ConditionProbe = std::sync::Arc<dyn Fn() -> Conditions + Send + Sync>;

/// Run conditions observed around a case: clocks, power, temperature, throttling.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Conditions {
    pub clock_mhz: Option<f64>,
    pub memory_clock_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub temperature_c: Option<f64>,
    /// Throttle reasons active at any observation (`sw_power_cap`, …), `;`-separated;
    /// empty when none were reported or they cannot be read.
    pub throttle: String,
    /// The host's CPU time counters at an observation (host backend only); two of them, before
    /// and after a case, give [`Conditions::other_cpus_busy`].
    #[serde(skip)]
    pub cpu_times: Option<CpuTimes>,
    /// Between two observations: CPUs' worth of time other processes (and a hypervisor's
    /// steal) used on the host ([`CpuTimes::others_busy_cpus`]).
    pub other_cpus_busy: Option<f64>,
    /// Compute and graphics processes on the GPU other than this one (NVML), the most seen.
    pub other_gpu_processes: Option<u32>,
    /// The board's energy counter at an observation (NVML, Volta and later): readings of it
    /// through a case's samples give their mean power ((the sampler's `summarise`)).
    #[serde(skip)]
    pub energy: Option<EnergyReading>,
}

/// A reading of a GPU's energy counter: millijoules since the driver loaded, and when it was
/// read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnergyReading {
    pub millijoules: u64,
    pub at: std::time::Instant,
}

impl Conditions {
    /// Combines the observations before and after a case: clocks and power averaged,
    /// temperature the highest, throttle reasons the union, other processes' CPU time the
    /// difference of the counters, other GPU processes the most seen.
    pub fn merge(before: &Conditions, after: &Conditions) -> Conditions {
        fn mean(a: Option<f64>, b: Option<f64>) -> Option<f64> {
            match (a, b) {
                (Some(a), Some(b)) => Some((a + b) / 2.0),
                (a, b) => a.or(b),
            }
        }
        let mut reasons: Vec<&str> = before
            .throttle
            .split(';')
            .chain(after.throttle.split(';'))
            .filter(|s| !s.is_empty())
            .collect();
        reasons.sort_unstable();
        reasons.dedup();
        Conditions {
            clock_mhz: mean(before.clock_mhz, after.clock_mhz),
            memory_clock_mhz: mean(before.memory_clock_mhz, after.memory_clock_mhz),
            power_w: mean(before.power_w, after.power_w),
            temperature_c: match (before.temperature_c, after.temperature_c) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
            throttle: reasons.join(";"),
            cpu_times: None,
            other_cpus_busy: match (&before.cpu_times, &after.cpu_times) {
                (Some(b), Some(a)) => CpuTimes::others_busy_cpus(b, a),
                _ => None,
            },
            other_gpu_processes: before.other_gpu_processes.max(after.other_gpu_processes),
            energy: None,
        }
    }
}

/// CPU time counters at one moment, in clock ticks (`USER_HZ`): the whole machine's from
/// `/proc/stat`, this process's (all its threads) from `/proc/self/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Busy time of every CPU summed: user, nice, system, irq, softirq and steal (time a
    /// hypervisor gave this VM's CPUs to someone else).
    pub busy_ticks: u64,
    /// Busy plus idle and iowait, every CPU summed.
    pub total_ticks: u64,
    /// CPUs the counters cover.
    pub cpus: u32,
    /// This process's user and system time.
    pub own_ticks: u64,
}

impl CpuTimes {
    /// The counters now; `None` where `/proc` does not have them.
    pub fn now() -> Option<CpuTimes> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        CpuTimes::parse(&stat, &own)
    }

    /// The counters in a `/proc/stat` text and a `/proc/<pid>/stat` text.
    pub fn parse(proc_stat: &str, self_stat: &str) -> Option<CpuTimes> {
        let mut lines = proc_stat.lines();
        let all: Vec<u64> = lines
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        let at = |i: usize| all.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal (guest time is inside user already)
        let busy_ticks = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
        let cpus = lines
            .filter(|l| {
                l.strip_prefix("cpu")
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            })
            .count() as u32;
        // Fields after the command name, which is in parentheses and may hold spaces: state
        // is field 3, utime field 14 and stime field 15.
        let after_name: Vec<&str> = self_stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks = |field: usize| after_name.get(field - 3)?.parse::<u64>().ok();
        Some(CpuTimes {
            busy_ticks,
            total_ticks: busy_ticks + at(3) + at(4),
            cpus: cpus.max(1),
            own_ticks: ticks(14)? + ticks(15)?,
        })
    }

    /// How many CPUs' worth of time other processes (and the hypervisor) were busy between
    /// `before` and `after`: the machine's busy time less this process's, over the time that
    /// passed. `None` when no tick passed. Tick counts are coarse (10 ms), so a case of a few
    /// hundred milliseconds reads others' use to within a few hundredths of a CPU.
    pub fn others_busy_cpus(before: &CpuTimes, after: &CpuTimes) -> Option<f64> {
        let total = after.total_ticks.checked_sub(before.total_ticks)?;
        if total == 0 {
            return None;
        }
        let busy = after.busy_ticks.saturating_sub(before.busy_ticks) as f64;
        let own = after.own_ticks.saturating_sub(before.own_ticks) as f64;
        let per_cpu = total as f64 / f64::from(after.cpus.max(1));
        Some(((busy - own) / per_cpu).max(0.0))
    }
}

/// This machine's host name (`unknown-host` if it cannot be read).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let name = if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        String::new()
    };
    if name.trim().is_empty() {
        "unknown-host".to_string()
    } else {
        name
    }
}

/// The file-name part naming a device: `cuda0-nvidia-h200`, `host-amd-epyc`.
pub fn device_slug(info: &DeviceInfo) -> String {
    match info.backend {
        BackendKind::Cuda => format!(
            "{}-{}",
            crate::units::slug(&info.id),
            crate::units::slug(&info.name)
        ),
        BackendKind::Host => format!("host-{}", crate::units::slug(&info.name)),
    }
}

/// The run id of a device's rows: `<host>-<device>-<stamp>` (the stamp carries the run's random
/// suffix). Every worker of a run computes the same one.
pub fn run_id(host: &str, info: &DeviceInfo, stamp: &str) -> String {
    format!("{host}-{}-{stamp}", device_slug(info))
}

/// Parses `--device`: `auto`, `host`, `all` or `cuda:N`. Whether `cuda:N` exists is for the run
/// to find out.
pub fn parse_device(s: &str) -> Result<String, String> {
    let cuda = s
        .strip_prefix("cuda:")
        .is_some_and(|i| i.bytes().all(|b| b.is_ascii_digit()) && i.parse::<usize>().is_ok());
    if cuda || matches!(s, "auto" | "host" | "all") {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown device `{s}`; use auto, host, all or cuda:N (see `roofprobe devices`)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SELF_STAT: &str = "4242 (roof probe) R 1 2 3 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";

    #[test]
    fn cpu_times_from_proc_text() {
        let stat = "cpu  1000 10 200 5000 40 5 15 30 7 0\ncpu0 500 5 100 2500 20 2 7 15 3 0\n\
                    cpu1 500 5 100 2500 20 3 8 15 4 0\nintr 1 2 3\nctxt 99\n";
        let t = CpuTimes::parse(stat, SELF_STAT).unwrap();
        assert_eq!(
            t,
            CpuTimes {
                busy_ticks: 1000 + 10 + 200 + 5 + 15 + 30,
                total_ticks: 1000 + 10 + 200 + 5 + 15 + 30 + 5000 + 40,
                cpus: 2,
                own_ticks: 300,
            }
        );
        assert_eq!(CpuTimes::parse("intr 1\n", SELF_STAT), None);
        assert_eq!(CpuTimes::parse(stat, "4242 (x) R 1"), None);
    }

    #[test]
    fn others_are_the_machine_less_this_process() {
        let before = CpuTimes {
            busy_ticks: 1000,
            total_ticks: 5000,
            cpus: 2,
            own_ticks: 100,
        };
        // 1 s on 2 CPUs (200 ticks): we used 150, the machine 190 → others 40 ticks = 0.4 CPU
        let after = CpuTimes {
            busy_ticks: 1190,
            total_ticks: 5200,
            cpus: 2,
            own_ticks: 250,
        };
        let others = CpuTimes::others_busy_cpus(&before, &after).unwrap();
        assert!((others - 0.4).abs() < 1e-12, "{others}");
        // our own time counted slightly over the machine's (tick rounding) is no one else's
        let rounded = CpuTimes {
            own_ticks: 300,
            ..after
        };
        assert_eq!(CpuTimes::others_busy_cpus(&before, &rounded), Some(0.0));
        assert_eq!(CpuTimes::others_busy_cpus(&before, &before), None);
    }

    /// A process that spins while we watch is someone else's load: what the machine's counters
    /// give as others' use covers the CPU time the spinner itself was given (its own counters,
    /// read from `/proc/<pid>/stat`), whatever else the machine did.
    ///
    /// The watcher is an idle `sleep` process: others' use is read as it would read it, the
    /// machine's time less the sleeper's own. Watched from this process, the other tests'
    /// threads are our own time, and the kernel's per-process time (scaled to the exact run
    /// time) and its machine-wide ticks (sampled) disagree by a few ticks when many threads come
    /// and go: on a loaded 2-vCPU machine that read others at 0.52 CPUs beside a spinner given
    /// 0.65. (Held to a fixed half CPU before that, it failed once with the spinner at 0.49.) A
    /// child of this test binary would do as well, but not under qemu-user (the AArch64 check),
    /// where the binary cannot start itself.
    #[test]
    fn a_spinning_process_is_seen_as_another_s_load() {
        let Some(_) = CpuTimes::now() else {
            eprintln!("skipped: no /proc/stat on this system");
            return;
        };
        let spawn = |script: &str| {
            std::process::Command::new("sh")
                .args(["-c", script])
                .spawn()
                .expect("sh runs")
        };
        let mut watcher = spawn("exec sleep 60");
        let watcher_stat = format!("/proc/{}/stat", watcher.id());
        let mut tries = Vec::new();
        // a spinner starved below a fifth of a CPU proves little: up to three tries
        for _ in 0..3 {
            let mut child = spawn("while :; do :; done");
            let child_stat = format!("/proc/{}/stat", child.id());
            let read = || {
                let stat = std::fs::read_to_string("/proc/stat").unwrap();
                let own = std::fs::read_to_string(&watcher_stat).unwrap();
                let spinner = std::fs::read_to_string(&child_stat).unwrap();
                (
                    CpuTimes::parse(&stat, &own).unwrap(),
                    CpuTimes::parse(&stat, &spinner).unwrap(),
                )
            };
            let (before, spinner_before) = read();
            std::thread::sleep(std::time::Duration::from_millis(600));
            let (after, spinner_after) = read();
            child.kill().unwrap();
            child.wait().unwrap();
            let others = CpuTimes::others_busy_cpus(&before, &after).unwrap();
            let per_cpu =
                (after.total_ticks - before.total_ticks) as f64 / f64::from(after.cpus.max(1));
            let spinner = (spinner_after.own_ticks - spinner_before.own_ticks) as f64 / per_cpu;
            let own = (after.own_ticks - before.own_ticks) as f64 / per_cpu;
            tries.push(format!(
                "others busy {others:.2} CPUs, the spinner {spinner:.2}, the watcher {own:.2}"
            ));
            if spinner >= 0.2 {
                watcher.kill().unwrap();
                watcher.wait().unwrap();
                // ticks are 10 ms: a few of them either way
                assert!(others >= spinner - 0.1, "{tries:?}");
                return;
            }
        }
        watcher.kill().unwrap();
        watcher.wait().unwrap();
        panic!("the spinner never had a fifth of a CPU: {tries:?}");
    }

    #[test]
    fn conditions_merge() {
        let a = Conditions {
            clock_mhz: Some(1000.0),
            temperature_c: Some(50.0),
            throttle: "sw_power_cap".into(),
            ..Default::default()
        };
        let b = Conditions {
            clock_mhz: Some(2000.0),
            temperature_c: Some(60.0),
            power_w: Some(300.0),
            throttle: "hw_slowdown;sw_power_cap".into(),
            ..Default::default()
        };
        let m = Conditions::merge(&a, &b);
        assert_eq!(m.clock_mhz, Some(1500.0));
        assert_eq!(m.temperature_c, Some(60.0));
        assert_eq!(m.power_w, Some(300.0));
        assert_eq!(m.throttle, "hw_slowdown;sw_power_cap");
        assert_eq!((m.other_cpus_busy, m.other_gpu_processes), (None, None));
        // CPU counters before and after: others used 40 of 200 ticks on 2 CPUs
        let ticks = |busy, total, own| CpuTimes {
            busy_ticks: busy,
            total_ticks: total,
            cpus: 2,
            own_ticks: own,
        };
        let a = Conditions {
            cpu_times: Some(ticks(1000, 5000, 100)),
            other_gpu_processes: Some(1),
            ..a
        };
        let b = Conditions {
            cpu_times: Some(ticks(1190, 5200, 250)),
            other_gpu_processes: Some(0),
            ..b
        };
        let m = Conditions::merge(&a, &b);
        assert!((m.other_cpus_busy.unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(m.other_gpu_processes, Some(1));
    }

    #[test]
    fn a_host_name_is_never_empty() {
        assert!(!hostname().is_empty());
    }
}
