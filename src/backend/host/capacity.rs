//! The capacity family on the host: what the kernel says of its memory (`MemTotal` and
//! `MemAvailable` from `/proc/meminfo`), nothing allocated.
//!
//! Why no largest-allocation probe here: an untouched allocation proves nothing (Linux hands
//! out address space, `mmap` with or without `MAP_NORESERVE` succeeds far past the RAM), and
//! touching gigabytes to prove it risks the OOM killer on a machine others share. The rows say
//! so in their note. Each sample times one read of `/proc/meminfo`.

use super::cpu::read_text;
use super::PreparedCase;
use crate::cases::capacity::{self, Capacity, Figure};
use crate::cases::{Case, Verdict};
use crate::{Error, Result};
use std::time::Instant;

/// Where the kernel reports its memory.
const MEMINFO: &str = "/proc/meminfo";

/// A `/proc/meminfo` field in bytes (its figures are KiB).
pub fn meminfo_bytes(meminfo: &str, field: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        let kib = rest
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()?;
        Some(kib * 1024)
    })
}

/// The host's capacity from the text of `/proc/meminfo`: `MemTotal` and `MemAvailable`.
pub fn capacity_of(meminfo: &str) -> Capacity {
    Capacity {
        total_bytes: meminfo_bytes(meminfo, "MemTotal").unwrap_or(0),
        free_bytes: meminfo_bytes(meminfo, "MemAvailable").unwrap_or(0),
        context_bytes: None,
        largest_allocation_bytes: None,
    }
}

/// A capacity figure of the host.
pub struct HostCapacity {
    figure: Figure,
    capacity: Capacity,
}

impl HostCapacity {
    pub fn new(case: &Case) -> Result<HostCapacity> {
        let figure = capacity::Figure::parse(&case.kernel)
            .filter(|f| capacity::HOST_FIGURES.contains(f))
            .ok_or_else(|| {
                Error::Usage(format!("the host backend has no figure for {}", case.id()))
            })?;
        let meminfo = read_text(MEMINFO).ok_or_else(|| {
            Error::Usage(format!(
                "{} needs {MEMINFO}, which this system does not have",
                case.id()
            ))
        })?;
        Ok(HostCapacity {
            figure,
            capacity: capacity_of(&meminfo),
        })
    }
}

impl PreparedCase for HostCapacity {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let start = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(read_text(MEMINFO));
        }
        Ok(start.elapsed().as_secs_f64())
    }

    fn verify(&mut self) -> Result<Verdict> {
        Ok(capacity::check(&self.capacity))
    }

    fn launch_note(&self) -> String {
        let field = match self.figure {
            Figure::Total => "MemTotal",
            _ => "MemAvailable",
        };
        format!(
            "{field} from {MEMINFO}, as the kernel reports it; nothing allocated (a host \
             allocation probe would have to touch the memory)"
        )
    }

    fn one_shot(&self) -> bool {
        true
    }

    fn measured_bytes(&self) -> Option<u64> {
        self.capacity.bytes(self.figure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_gives_total_and_available() {
        let c = capacity_of(
            "MemTotal:       24576000 kB\nMemFree: 1 kB\nMemAvailable:   20000000 kB\n",
        );
        assert_eq!(c.total_bytes, 24_576_000 * 1024);
        assert_eq!(c.free_bytes, 20_000_000 * 1024);
        assert!(capacity::check(&c).valid);
        // a kernel without MemAvailable: no figure, so the row is invalid and says why
        assert!(!capacity::check(&capacity_of("MemTotal: 4 kB\n")).valid);
    }

    /// On this machine (Linux), both rows read real, consistent figures.
    #[test]
    fn this_hosts_figures_are_consistent() {
        if read_text(MEMINFO).is_none() {
            eprintln!("skipped: no {MEMINFO}");
            return;
        }
        for figure in capacity::HOST_FIGURES {
            let mut c = HostCapacity::new(&capacity::case(figure, 1)).unwrap();
            assert!(c.one_shot());
            assert!(c.run(1).unwrap() > 0.0);
            assert!(c.verify().unwrap().valid);
            assert!(c.measured_bytes().unwrap() > 0);
        }
        assert!(HostCapacity::new(&capacity::case(Figure::Largest, 1)).is_err());
    }
}
