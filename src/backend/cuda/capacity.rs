//! The capacity family on a GPU: total memory, free memory right after this process created
//! its context, what was in use then (the context's cost, at most), and the largest single
//! allocation that succeeds now ([`capacity::largest_allocation`]: a bounded binary search
//! with `cuMemAlloc`, each allocation freed at once with `cuMemFree`).
//!
//! The samples time the call that reads the figure, on the host's monotonic clock (there is no
//! kernel for an event pair to bracket): `cuMemGetInfo` for `total`, `free` and `context`, one
//! allocation of the largest size and its free for `largest`. The search runs when the case is
//! prepared, once, before any sample.

use super::{CudaBackend, PreparedCase};
use crate::cases::capacity::{self, Capacity, Figure, Search};
use crate::cases::{Case, Verdict};
use crate::{Error, Result};
use cudarc::driver::{result, sys, DriverError};
use std::time::Instant;

/// Allocates `bytes` on the backend's device and frees it at once: `Ok(false)` where the
/// driver is out of memory.
fn try_alloc(backend: &CudaBackend, bytes: u64) -> Result<bool> {
    let bytes = usize::try_from(bytes)
        .map_err(|_| Error::Internal(format!("{bytes} bytes do not fit a usize")))?;
    backend.call("allocating for the capacity search", || {
        backend.ctx.bind_to_thread()?;
        // SAFETY: a plain device allocation in the bound context, freed right here and never
        // handed to anything else.
        match unsafe { result::malloc_sync(bytes) } {
            Ok(ptr) => unsafe { result::free_sync(ptr) }.map(|()| true),
            Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => Ok(false),
            Err(e) => Err(e),
        }
    })
}

/// A capacity figure of a GPU, its search done.
pub(super) struct GpuCapacity<'b> {
    backend: &'b CudaBackend,
    figure: Figure,
    capacity: Capacity,
    search: Option<Search>,
}

impl<'b> GpuCapacity<'b> {
    pub(super) fn new(backend: &'b CudaBackend, case: &Case) -> Result<GpuCapacity<'b>> {
        let figure = Figure::parse(&case.kernel).ok_or_else(|| {
            Error::Usage(format!("the CUDA backend has no figure for {}", case.id()))
        })?;
        let info = &backend.info;
        let total = info.memory_total_bytes;
        // as the context was created (`describe`), before any module or array
        let free_at_start = info.memory_free_bytes;
        let mut capacity = Capacity {
            total_bytes: total,
            free_bytes: free_at_start,
            context_bytes: Some(total.saturating_sub(free_at_start)),
            largest_allocation_bytes: None,
        };
        let mut search = None;
        if figure == Figure::Largest {
            // Free now: the modules loaded since, and earlier cases' arrays returned; at most the
            // case's size (the free memory at planning, or less where a test caps the search).
            let upper = backend
                .free_bytes()?
                .min(free_at_start)
                .min(case.working_set_bytes);
            let found = capacity::largest_allocation(upper, |bytes| try_alloc(backend, bytes))?;
            capacity.largest_allocation_bytes = Some(found.largest_bytes);
            search = Some(found);
        }
        Ok(GpuCapacity {
            backend,
            figure,
            capacity,
            search,
        })
    }
}

impl PreparedCase for GpuCapacity<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let start = Instant::now();
        for _ in 0..reps {
            match self.search {
                Some(s) if s.largest_bytes > 0 => {
                    if !try_alloc(self.backend, s.largest_bytes)? {
                        return Err(Error::Internal(format!(
                            "{} bytes allocated in the search but not again; another process \
                             took memory meanwhile, rerun",
                            s.largest_bytes
                        )));
                    }
                }
                _ => {
                    self.backend
                        .call("reading device memory", || self.backend.ctx.mem_get_info())?;
                }
            }
        }
        Ok(start.elapsed().as_secs_f64())
    }

    fn verify(&mut self) -> Result<Verdict> {
        Ok(capacity::check(&self.capacity))
    }

    fn launch_note(&self) -> String {
        match (self.figure, self.search) {
            (Figure::Total, _) => "cuMemGetInfo total".to_string(),
            (Figure::Free, _) => "cuMemGetInfo free right after the context was created".into(),
            (Figure::Context, _) => "total - free right after the context was created: the \
                                     context, the driver's reservation and any other process"
                .into(),
            (_, Some(s)) => format!(
                "binary search with cuMemAlloc/cuMemFree: {} allocations, {} resolution",
                s.steps,
                crate::units::bytes(s.step_bytes)
            ),
            (_, None) => String::new(),
        }
    }

    fn one_shot(&self) -> bool {
        true
    }

    fn measured_bytes(&self) -> Option<u64> {
        self.capacity.bytes(self.figure)
    }
}
