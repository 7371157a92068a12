//! The launch family on the host: what it costs to wake the pool's worker threads and pass one
//! barrier among them ([`crate::cases::launch`]'s `wake_barrier` row).
//!
//! One round is one [`Pool::run`] (a condition variable wakes every worker, each waits on the
//! others at the [`SpinBarrier`], the caller sleeps until the last one is done): what every host
//! kernel launch costs besides its work. A sample is [`launch::WAKE_ROUNDS_PER_SAMPLE`] rounds
//! on the monotonic clock; the runner divides it by them. Each worker counts the rounds it ran
//! and, leaving the barrier, whether every worker of the round had arrived: the check reads
//! both.

use super::pool::{Pool, SpinBarrier};
use super::PreparedCase;
use crate::cases::launch::{self, What};
use crate::cases::{Case, Verdict};
use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A prepared `launch/wake_barrier` case.
pub struct WakeBarrier<'p> {
    pool: &'p Pool,
    barrier: SpinBarrier,
    /// Rounds each worker ran.
    ran: Vec<AtomicU64>,
    /// Arrivals at the barrier, over every round so far.
    arrivals: AtomicU64,
    /// Times a worker left the barrier before every worker of its round had arrived.
    early_leaves: AtomicU64,
    /// Rounds issued so far.
    rounds: u64,
    /// Set by the testing hook [`super::cpu::FAULT_ENV`]: worker 0 skips its count once.
    inject_fault: bool,
}

impl<'p> WakeBarrier<'p> {
    pub fn new(pool: &'p Pool, case: &Case) -> Result<Self> {
        if What::parse(&case.kernel) != Some(What::WakeBarrier)
            || case.precision != launch::PRECISION
        {
            return Err(Error::Usage(format!(
                "the host backend has no kernel for {}",
                case.id()
            )));
        }
        let threads = pool.threads();
        Ok(WakeBarrier {
            pool,
            barrier: SpinBarrier::new(threads),
            ran: (0..threads).map(|_| AtomicU64::new(0)).collect(),
            arrivals: AtomicU64::new(0),
            early_leaves: AtomicU64::new(0),
            rounds: 0,
            inject_fault: super::cpu::fault_injected(case),
        })
    }
}

impl PreparedCase for WakeBarrier<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let threads = self.ran.len() as u64;
        let start = Instant::now();
        for _ in 0..reps {
            let round = self.rounds;
            let skip = self.inject_fault && round == 0;
            let ok = self.pool.run(|t| {
                self.arrivals.fetch_add(1, Ordering::AcqRel);
                self.barrier.wait();
                if self.arrivals.load(Ordering::Acquire) < threads * (round + 1) {
                    self.early_leaves.fetch_add(1, Ordering::Relaxed);
                }
                if !(skip && t == 0) {
                    self.ran[t].fetch_add(1, Ordering::Relaxed);
                }
            });
            if !ok {
                return Err(Error::Internal(
                    "a worker thread panicked in the wake-up round; report a bug".into(),
                ));
            }
            self.rounds += 1;
        }
        Ok(start.elapsed().as_secs_f64())
    }

    fn verify(&mut self) -> Result<Verdict> {
        let ran: Vec<u64> = self.ran.iter().map(|r| r.load(Ordering::Relaxed)).collect();
        Ok(launch::check_wake(
            &ran,
            self.rounds,
            self.early_leaves.load(Ordering::Relaxed),
        ))
    }

    fn launch_note(&self) -> String {
        format!(
            "{} threads woken, one spin barrier, per round; {} rounds per sample",
            self.ran.len(),
            launch::WAKE_ROUNDS_PER_SAMPLE
        )
    }

    fn one_shot(&self) -> bool {
        true
    }

    fn one_shot_reps(&self) -> u32 {
        launch::WAKE_ROUNDS_PER_SAMPLE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On this machine's cores, rounds take a positive time, every worker runs each one and the
    /// row is valid; a worker that skips a round (the fault hook's mutation) makes it invalid.
    #[test]
    fn every_worker_runs_every_round() {
        let pool = Pool::new(super::super::pool::allowed_cpus());
        let case = launch::case(What::WakeBarrier);
        let mut c = WakeBarrier::new(&pool, &case).unwrap();
        assert!(c.one_shot() && c.one_shot_reps() == launch::WAKE_ROUNDS_PER_SAMPLE);
        assert!(c.run(50).unwrap() > 0.0);
        assert!(c.run(7).unwrap() > 0.0);
        assert_eq!(c.rounds, 57);
        let v = c.verify().unwrap();
        assert!(v.valid, "{}", v.detail);
        c.inject_fault = true;
        c.rounds = 0;
        for r in &c.ran {
            r.store(0, Ordering::Relaxed);
        }
        c.arrivals.store(0, Ordering::Relaxed);
        c.run(3).unwrap();
        let v = c.verify().unwrap();
        assert!(
            !v.valid && v.detail.contains("worker 0 ran 2 of 3"),
            "{}",
            v.detail
        );
        assert!(WakeBarrier::new(&pool, &launch::case(What::Empty)).is_err());
    }
}
