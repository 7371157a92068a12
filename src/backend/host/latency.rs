//! The host backend's latency chase: one pinned worker follows the ring of
//! [`crate::cases::latency`] through 64-byte lines, one dependent load per hop, while the other
//! workers wait; the chase goes on from where the last launch stopped.
//!
//! On Linux the ring asks for transparent huge pages ([`super::pool::advise_huge_pages`]), so
//! the large working sets measure the memory rather than the page walks of a TLB miss per hop;
//! where the kernel gives none the walks stay in the figure. The launch note says which was
//! asked.
//!
//! `unsafe` here is limited to the unchecked loads of the chase (every index is a line of the
//! ring by construction).

use super::pool::Pool;
use super::PreparedCase;
use crate::cases::{latency, Case, Verdict};
use crate::{Error, Result};
use std::time::Instant;

/// Bytes per line: one x86 or Arm cache line; each hop loads word 0 of its own line.
pub const LINE_BYTES: u64 = 64;

/// Hops per launch: a quarter of a millisecond from L1, tens of milliseconds from DRAM.
pub const HOPS_PER_LAUNCH: u64 = 1 << 18;

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u32; 16]);

/// A prepared latency case.
pub struct LatencyCase<'p> {
    pool: &'p Pool,
    ring: Vec<Line>,
    hops: u64,
    /// The line the chase stands on, and the hops taken since line 0.
    at: u64,
    total_hops: u64,
    huge_pages: bool,
    /// The clock of the chasing core, measured once after the samples.
    clock_mhz: Option<f64>,
    /// Set by the testing hook [`super::cpu::FAULT_ENV`].
    inject_fault: bool,
}

impl<'p> LatencyCase<'p> {
    pub fn new(pool: &'p Pool, case: &Case) -> Result<Self> {
        if case.kernel != latency::HOST_KERNEL
            || case.precision != latency::PRECISION
            || latency::line_bytes(case) != LINE_BYTES
        {
            return Err(Error::Usage(format!(
                "the host backend has no kernel for {}",
                case.id()
            )));
        }
        let lines = usize::try_from(case.elements)
            .map_err(|_| Error::Usage(format!("{} lines do not fit in memory", case.elements)))?;
        if case.elements.saturating_mul(LINE_BYTES) > u64::from(u32::MAX) {
            return Err(Error::Usage(format!(
                "{}: the host chase holds 32-bit byte offsets, so its ring must be under 4 GiB",
                case.id()
            )));
        }
        let next = latency::successors(&latency::order(case.elements));
        let mut ring: Vec<Line> = Vec::with_capacity(lines);
        let huge_pages = super::pool::advise_huge_pages(
            ring.as_mut_ptr().cast(),
            ring.capacity() * std::mem::size_of::<Line>(),
        );
        ring.extend(next.iter().map(|&n| {
            let mut l = Line([0; 16]);
            l.0[0] = n * LINE_BYTES as u32;
            l
        }));
        Ok(LatencyCase {
            pool,
            ring,
            hops: latency::hops(case),
            at: 0,
            total_hops: 0,
            huge_pages,
            clock_mhz: None,
            inject_fault: super::cpu::fault_injected(case),
        })
    }
}

/// `hops` dependent loads through `ring` from the line at byte offset `at`; the offset it ends
/// on. Each line holds the byte offset of the next, so a hop is one load at base + offset (no
/// shift, no multiply between two loads: the loop measures the load-to-use latency alone).
fn chase(ring: &[Line], mut at: u32, hops: u64) -> u32 {
    let base = ring.as_ptr().cast::<u8>();
    for _ in 0..hops {
        // SAFETY: `at` is the offset of a line of the ring: it starts as one and every line
        // holds one.
        at = unsafe { base.add(at as usize).cast::<u32>().read() };
    }
    at
}

impl PreparedCase for LatencyCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let (ring, hops, from) = (&self.ring, self.hops, (self.at * LINE_BYTES) as u32);
        let end = std::sync::atomic::AtomicU64::new(u64::MAX);
        let secs = std::sync::atomic::AtomicU64::new(0);
        let ok = self.pool.run(|t| {
            if t != 0 {
                return;
            }
            let start = Instant::now();
            let mut at = from;
            for _ in 0..reps {
                at = chase(std::hint::black_box(ring), at, hops);
            }
            let elapsed = start.elapsed().as_secs_f64();
            end.store(u64::from(at), std::sync::atomic::Ordering::Relaxed);
            secs.store(elapsed.to_bits(), std::sync::atomic::Ordering::Relaxed);
        });
        if !ok {
            return Err(Error::Internal(
                "a host worker panicked in the latency chase".into(),
            ));
        }
        self.at = end.into_inner() / LINE_BYTES;
        self.total_hops += u64::from(reps) * hops;
        if self.inject_fault {
            self.at = (self.at + 1) % self.ring.len() as u64;
        }
        Ok(f64::from_bits(secs.into_inner()))
    }

    fn verify(&mut self) -> Result<Verdict> {
        let order = latency::order(self.ring.len() as u64);
        Ok(latency::check_end(&order, self.total_hops, self.at))
    }

    fn launch_note(&self) -> String {
        format!(
            "1 pinned thread, {} dependent loads per launch, {}-byte lines{}",
            self.hops,
            LINE_BYTES,
            if self.huge_pages {
                ", huge pages asked for"
            } else {
                ""
            }
        )
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        // The chasing core's clock, right after the samples: cycles per load follow from it.
        if self.clock_mhz.is_none() {
            self.clock_mhz = super::clock::measure_pool_mhz(self.pool);
        }
        self.clock_mhz
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::pool::allowed_cpus;

    /// A chase through the real pool ends where it must, launch after launch; a wrong kernel
    /// or line size is refused.
    #[test]
    fn chases_validate_through_the_pool() {
        let pool = Pool::new(allowed_cpus().into_iter().take(2).collect());
        for bytes in [4u64 << 10, 40 << 10, 8 << 20] {
            let case = latency::case(latency::HOST_KERNEL, LINE_BYTES, bytes, 1000);
            let mut prepared = LatencyCase::new(&pool, &case).unwrap();
            assert_eq!(prepared.ring.as_ptr() as usize % 64, 0, "starts on a line");
            prepared.run(3).unwrap();
            prepared.run(1).unwrap();
            assert_eq!(prepared.total_hops, 4000);
            let v = prepared.verify().unwrap();
            assert!(v.valid, "{}: {}", case.id(), v.detail);
            // one hop more than the chase took ends elsewhere
            prepared.total_hops += 1;
            assert!(!prepared.verify().unwrap().valid);
        }
        let wide = latency::case(latency::HOST_KERNEL, 128, 16 << 10, 10);
        assert!(LatencyCase::new(&pool, &wide).is_err());
        let gpu = latency::case("ca", 64, 16 << 10, 10);
        assert!(LatencyCase::new(&pool, &gpu).is_err());
    }
}
