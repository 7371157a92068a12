//! The cores' clock, measured: a chain of dependent integer adds (one cycle each on every current
//! core) timed on the cores the case ran on, read until it settles. The host's %theory is held
//! against this clock, not the one the OS reports (which a VM may not show at all).

use super::pool::Pool;
use std::time::Instant;

/// Runs `trips` × 100 dependent integer adds (one cycle each on every current core), returning
/// false where there is no such chain for this architecture.
fn add_chain(trips: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: register-only arithmetic; no memory, no stack.
        unsafe {
            std::arch::asm!(
                "2:",
                ".rept 100",
                "add {x}, {one}",
                ".endr",
                "dec {n}",
                "jnz 2b",
                x = inout(reg) 0u64 => _,
                one = in(reg) 1u64,
                n = inout(reg) trips.max(1) => _,
                options(nomem, nostack),
            );
        }
        true
    }
    #[cfg(target_arch = "aarch64")]
    {
        // SAFETY: register-only arithmetic; no memory, no stack.
        unsafe {
            std::arch::asm!(
                "2:",
                ".rept 100",
                "add {x}, {x}, {one}",
                ".endr",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                x = inout(reg) 0u64 => _,
                one = in(reg) 1u64,
                n = inout(reg) trips.max(1) => _,
                options(nomem, nostack),
            );
        }
        true
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = trips;
        false
    }
}

/// The clock of the core this thread runs on, in MHz: a chain of dependent adds (the add's
/// latency is one cycle, and the loop's own counter runs beside it on another ALU) timed by the
/// monotonic clock, in runs of about 0.25 ms read by `settled_clock`. A run that the
/// hypervisor or another process interrupted reads low, never high, and on a shared VM whole
/// stretches of several ms are interrupted. `None` on an architecture without the chain.
///
/// The best of 5 runs of 2 ms, as this was before, read 5 % or more below the VM's usual clock
/// in 3.2–3.8 % of readings, and once 22 % below in a run, which made a kernel at 89 % of its
/// peak look 12 % above it (an invalid row). Short runs until two agree near the top did so in
/// 1.2–2.0 %, and their median sat at the usual clock where the old one's sat 0.9 % below it
/// (2000 readings on each core of a 2-vCPU EPYC VM, both cores at once, interleaved, 4 runs,
/// 2026-12-03); they take 5 ms where nothing interrupts them. The runner reads the clock again
/// before it calls a figure above its theory ([`crate::run::runner::run`]).
pub fn measure_core_mhz() -> Option<f64> {
    const ADDS_PER_TRIP: f64 = 100.0;
    let time = |trips: u64| {
        let start = Instant::now();
        add_chain(trips).then(|| start.elapsed().as_secs_f64())
    };
    let first = time(10_000)?;
    let rough_hz = 10_000.0 * ADDS_PER_TRIP / first.max(1e-9);
    let trips = ((rough_hz * CLOCK_RUN_SECS) / ADDS_PER_TRIP).max(100.0) as u64;
    settled_clock(|| time(trips).map(|secs| trips as f64 * ADDS_PER_TRIP / secs.max(1e-9) / 1e6))
}

/// Seconds of one timed add chain in [`measure_core_mhz`].
const CLOCK_RUN_SECS: f64 = 0.25e-3;
/// Readings taken at a time by [`settled_clock`], and the most it takes in all.
const CLOCK_BATCH: usize = 20;
const CLOCK_MAX_READINGS: usize = 200;

/// The clock from repeated readings of it (`reading` gives one, in MHz): batches of
/// [`CLOCK_BATCH`] until the second and third highest agree within 1 %, then the third highest.
/// The highest is set aside, so one reading too high (a timer's step) neither sets the clock
/// nor keeps it from settling. Interrupted readings only read low, so waiting for two that
/// agree near the top outlasts an interruption. After [`CLOCK_MAX_READINGS`] without
/// agreement, the third highest so far (the lowest, of fewer than three); `None` without any.
fn settled_clock(mut reading: impl FnMut() -> Option<f64>) -> Option<f64> {
    let mut readings: Vec<f64> = Vec::new();
    let mut taken = 0;
    while taken < CLOCK_MAX_READINGS {
        for _ in 0..CLOCK_BATCH {
            readings.extend(reading().filter(|mhz| mhz.is_finite() && *mhz > 0.0));
        }
        taken += CLOCK_BATCH;
        readings.sort_by(|a, b| b.total_cmp(a));
        if readings.len() >= 3 && readings[2] >= 0.99 * readings[1] {
            return Some(readings[2]);
        }
    }
    readings.get(2).or(readings.last()).copied()
}

/// The mean of [`measure_core_mhz`] over every worker of `pool`, each on its own pinned core.
pub fn measure_pool_mhz(pool: &Pool) -> Option<f64> {
    let slots: Vec<std::sync::Mutex<Option<f64>>> = (0..pool.threads())
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    let ok = pool.run(|t| {
        let mhz = measure_core_mhz();
        if let Ok(mut slot) = slots[t].lock() {
            *slot = mhz;
        }
    });
    if !ok {
        return None;
    }
    let values: Vec<f64> = slots
        .into_iter()
        .filter_map(|s| s.into_inner().ok().flatten())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Seconds [`cpu_share`] spins each of its threads for.
pub const SHARE_WINDOW_SECS: f64 = 0.25;

/// The share of the wall time that `threads` threads spinning at once are given the CPU, from
/// each thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`) over [`SHARE_WINDOW_SECS`]: about 1
/// where nothing else runs on the cores the run will use, about one half where as many other
/// busy processes as cores share them. The mean over the threads, at least 0.05; `None` where
/// the OS has no per-thread CPU clock. The run's estimate scales the host's seconds by it
/// ([`crate::run::forecast::Rates::pace`]); nothing measured depends on it.
pub fn cpu_share(threads: usize) -> Option<f64> {
    let window = std::time::Duration::from_secs_f64(SHARE_WINDOW_SECS);
    let shares: Vec<Option<f64>> = std::thread::scope(|scope| {
        let spinners: Vec<_> = (0..threads.max(1))
            .map(|_| {
                scope.spawn(move || {
                    let (cpu0, wall0) = (thread_cpu_secs()?, Instant::now());
                    while wall0.elapsed() < window {
                        add_chain(1000);
                    }
                    let (cpu1, wall) = (thread_cpu_secs()?, wall0.elapsed().as_secs_f64());
                    Some(share_of(cpu1 - cpu0, wall))
                })
            })
            .collect();
        spinners
            .into_iter()
            .map(|s| s.join().ok().flatten())
            .collect()
    });
    let shares: Vec<f64> = shares.into_iter().collect::<Option<_>>()?;
    Some(shares.iter().sum::<f64>() / shares.len() as f64)
}

/// `cpu_secs` of CPU time in `wall_secs` of wall time, as a share in 0.05..=1.
fn share_of(cpu_secs: f64, wall_secs: f64) -> f64 {
    if !(cpu_secs.is_finite() && wall_secs.is_finite()) || wall_secs <= 0.0 {
        return 1.0;
    }
    (cpu_secs / wall_secs).clamp(0.05, 1.0)
}

/// This thread's CPU time in seconds.
fn thread_cpu_secs() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid timespec to write to.
        let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
        ok.then_some(t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The higher of an earlier clock reading and a new one, either of which may be missing: a
/// reading taken after the samples can only read low (see [`measure_core_mhz`]).
pub fn higher_clock(earlier: Option<f64>, new: Option<f64>) -> Option<f64> {
    match (earlier, new) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readings from a script: low ones (interruptions) never set the clock, one reading too
    /// high neither sets it nor stops it settling, batches go on until the second and third
    /// highest agree within 1 %, and a clock that never settles stops at the limit.
    #[test]
    fn the_clock_is_the_third_highest_reading_once_two_agree_near_the_top() {
        let scripted = |values: Vec<Option<f64>>| {
            let mut it = values.into_iter();
            let mut taken = 0;
            let mhz = settled_clock(|| {
                taken += 1;
                it.next().flatten()
            });
            (mhz, taken)
        };
        // an interrupted first batch: only two readings near the clock, one of them above it
        let mut first = vec![Some(1500.0); CLOCK_BATCH - 2];
        first.extend([Some(2900.0), Some(2850.0)]);
        let mut second = first.clone();
        second.extend(vec![Some(2840.0); CLOCK_BATCH]);
        assert_eq!(scripted(second), (Some(2840.0), 2 * CLOCK_BATCH));
        // readings that agree at once: one batch
        assert_eq!(
            scripted(vec![Some(2871.0); CLOCK_BATCH]),
            (Some(2871.0), CLOCK_BATCH)
        );
        // a spread that never settles, failed readings, and none at all
        let step = |i: usize| 1000.0 + i.pow(3) as f64; // the highest ones more than 1 % apart
        let spread: Vec<_> = (0..CLOCK_MAX_READINGS).map(|i| Some(step(i))).collect();
        let third = step(CLOCK_MAX_READINGS - 3);
        assert_eq!(scripted(spread), (Some(third), CLOCK_MAX_READINGS));
        assert_eq!(
            scripted(vec![Some(2000.0), None, Some(f64::NAN)]),
            (Some(2000.0), CLOCK_MAX_READINGS)
        );
        assert_eq!(scripted(vec![]), (None, CLOCK_MAX_READINGS));
    }

    /// The share is CPU time over wall time, kept within 0.05..=1 (a thread's CPU clock can
    /// read a little past the wall's), and 1 where the readings make no sense.
    #[test]
    fn the_cpu_share_is_cpu_time_over_wall_time() {
        assert_eq!(share_of(0.125, 0.25), 0.5);
        assert_eq!(share_of(0.26, 0.25), 1.0);
        assert_eq!(share_of(0.0, 0.25), 0.05);
        assert_eq!(share_of(0.1, 0.0), 1.0);
        assert_eq!(share_of(f64::NAN, 0.25), 1.0);
        // a thread that sleeps half its window is given about half of it
        let (cpu0, wall0) = (thread_cpu_secs().unwrap(), Instant::now());
        while wall0.elapsed().as_secs_f64() < 0.02 {}
        std::thread::sleep(std::time::Duration::from_millis(20));
        let share = share_of(
            thread_cpu_secs().unwrap() - cpu0,
            wall0.elapsed().as_secs_f64(),
        );
        assert!(share < 0.75, "{share}");
        let whole = cpu_share(1).unwrap();
        assert!((0.05..=1.0).contains(&whole), "{whole}");
    }

    #[test]
    fn core_clock_is_plausible() {
        if let Some(mhz) = measure_core_mhz() {
            assert!((200.0..10_000.0).contains(&mhz), "{mhz} MHz");
        }
    }
}
