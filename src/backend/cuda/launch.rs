//! The launch family's event-timer row on a GPU (`launch/timer/i32`): the resolution of the
//! CUDA event timer the other rows are timed with. The `empty` row is an ordinary kernel case
//! ([`super::GpuCase`], with its count and clock checks); this one launches nothing.
//!
//! A try records two timing events back to back on the backend's stream, waits for the second
//! and reads the time between them (`cuEventElapsedTime`), with the host's monotonic clock read
//! before the first record and after the wait. The convention ([`launch::check_timer`]): a
//! sample is the smallest non-zero time of [`launch::TIMER_TRIES_PER_SAMPLE`] tries; a try that
//! reads 0 fell within one tick. A sample is invalid where every try read 0, where a time is
//! negative, or where the device says more than the host saw around the pair.

use super::{CudaBackend, PreparedCase};
use crate::cases::launch::{self, What};
use crate::cases::{Case, Verdict};
use crate::{Error, Result};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaEvent;
use std::time::Instant;

/// The event timer of a GPU, its two events made.
pub(super) struct GpuTimer<'b> {
    backend: &'b CudaBackend,
    events: (CudaEvent, CudaEvent),
    /// The first sample that failed its check, if one did.
    fault: Option<Verdict>,
    samples: u32,
}

impl<'b> GpuTimer<'b> {
    pub(super) fn new(backend: &'b CudaBackend, case: &Case) -> Result<GpuTimer<'b>> {
        if What::parse(&case.kernel) != Some(What::Timer) || case.precision != launch::PRECISION {
            return Err(Error::Usage(format!(
                "the CUDA backend has no kernel for {}",
                case.id()
            )));
        }
        backend.health.check(&backend.info.id)?;
        let events = backend.call("creating the timer's events", || {
            // Timing must be on: cudarc's default (`None`) creates events without it.
            let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
            Ok((backend.ctx.new_event(flags)?, backend.ctx.new_event(flags)?))
        })?;
        Ok(GpuTimer {
            backend,
            events,
            fault: None,
            samples: 0,
        })
    }

    /// One try: the device's and the host's seconds between two events recorded back to back.
    fn try_pair(&self) -> Result<(f64, f64)> {
        let (a, b) = &self.events;
        let stream = &*self.backend.stream;
        let host = Instant::now();
        let ms = self.backend.call("timing two events back to back", || {
            a.record(stream)?;
            b.record(stream)?;
            b.synchronize()?;
            a.elapsed_ms(b)
        })?;
        Ok((f64::from(ms) / 1e3, host.elapsed().as_secs_f64()))
    }
}

impl PreparedCase for GpuTimer<'_> {
    /// `reps` samples' worth of tries (the runner asks for one): the smallest non-zero time.
    fn run(&mut self, reps: u32) -> Result<f64> {
        let tries = (0..launch::TIMER_TRIES_PER_SAMPLE * reps.max(1))
            .map(|_| self.try_pair())
            .collect::<Result<Vec<_>>>()?;
        self.samples += 1;
        let (smallest, verdict) = launch::check_timer(&tries);
        if !verdict.valid && self.fault.is_none() {
            self.fault = Some(verdict);
        }
        // no figure: a zero is not a time the runner can summarise
        Ok(smallest.unwrap_or(f64::MIN_POSITIVE))
    }

    fn verify(&mut self) -> Result<Verdict> {
        Ok(match (&self.fault, self.samples) {
            (Some(fault), _) => fault.clone(),
            (None, 0) => Verdict::invalid("the timer was never tried"),
            (None, _) => Verdict::valid(),
        })
    }

    fn launch_note(&self) -> String {
        format!(
            "two events recorded back to back, no launch; the smallest non-zero of {} tries \
             per sample",
            launch::TIMER_TRIES_PER_SAMPLE
        )
    }

    fn one_shot(&self) -> bool {
        true
    }
}
