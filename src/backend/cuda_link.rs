//! The link family on a GPU ([`crate::bench::link`]): copy-engine copies between host memory
//! and the device, and within the device, timed with CUDA events.
//!
//! Each case allocates its own buffers at its size (pinned host memory with `cuMemHostAlloc`,
//! pageable host memory from the Rust allocator, device memory with `cuMemAlloc`), fills the
//! source with the family's pattern, clears the destination, copies once untimed (first-touch
//! and mapping costs stay out of the samples) and then reads what NVML says of the PCIe link.
//! A sample is `reps` copies between two events on the backend's stream; a bidirectional case
//! runs the opposite copy on a second stream, started by the first stream's start event, and
//! its row is timed by its own direction's events only (nvbandwidth's convention). The runner
//! takes its fewest samples of one copy each ([`PreparedCase::one_shot`]): a copy is its own
//! batch, and the fit across sizes, not repetition at one size, is what separates latency from
//! bandwidth.
//!
//! Verification reads the destination back in sampled windows (the device's with small
//! synchronous copies) and compares them with the pattern; a bidirectional case checks both
//! directions' destinations.

use super::{CudaBackend, PreparedCase};
use crate::bench::link::{self, PcieLink, Transfer};
use crate::bench::{Case, Verdict};
use crate::{Error, Result};
use cudarc::driver::sys::{self, CUevent_flags};
use cudarc::driver::{result, CudaEvent, CudaStream, DriverError};
use std::sync::Arc;

/// The pattern seeds of the host-to-device and device-to-host sources.
const SEED_TO_DEVICE: u64 = 0x11;
const SEED_TO_HOST: u64 = 0x22;

/// Device memory of one copy's size, freed on drop (after the case's streams are idle).
struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by `malloc_sync` in `GpuLink::new`, freed once; `GpuLink::drop`
        // synchronised every stream that used it first.
        let _ = super::quietly(|| unsafe { result::free_sync(self.ptr) });
    }
}

/// Host memory of one copy's size: pinned (`cuMemHostAlloc`) or pageable.
enum HostBuffer {
    Pinned { ptr: *mut u8, bytes: usize },
    Pageable(Vec<u8>),
}

impl HostBuffer {
    fn as_slice(&self) -> &[u8] {
        match self {
            // SAFETY: `bytes` bytes from `malloc_host`, alive until drop.
            HostBuffer::Pinned { ptr, bytes } => unsafe {
                std::slice::from_raw_parts(*ptr, *bytes)
            },
            HostBuffer::Pageable(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            // SAFETY: as above; `&mut self` makes this the only reference.
            HostBuffer::Pinned { ptr, bytes } => unsafe {
                std::slice::from_raw_parts_mut(*ptr, *bytes)
            },
            HostBuffer::Pageable(v) => v,
        }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if let HostBuffer::Pinned { ptr, .. } = self {
            // SAFETY: from `malloc_host`, freed once, after the streams using it are idle.
            let _ = super::quietly(|| unsafe { result::free_host(*ptr as *mut std::ffi::c_void) });
        }
    }
}

/// One copy, as the driver is asked for it.
#[derive(Clone, Copy)]
enum Copy {
    ToDevice {
        dst: sys::CUdeviceptr,
        src: *const u8,
    },
    ToHost {
        dst: *mut u8,
        src: sys::CUdeviceptr,
    },
    Within {
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
    },
}

impl Copy {
    /// Queues the copy of `bytes` on `stream`.
    ///
    /// # Safety
    /// The pointers must be the case's live buffers of at least `bytes` bytes.
    unsafe fn enqueue(self, bytes: usize, stream: sys::CUstream) -> Result<(), DriverError> {
        match self {
            Copy::ToDevice { dst, src } => {
                unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src as *const _, bytes, stream) }.result()
            }
            Copy::ToHost { dst, src } => {
                unsafe { sys::cuMemcpyDtoHAsync_v2(dst as *mut _, src, bytes, stream) }.result()
            }
            Copy::Within { dst, src } => unsafe {
                result::memcpy_dtod_async(dst, src, bytes, stream)
            },
        }
    }
}

/// What NVML says of the device's PCIe link now and at most, or why it cannot say.
fn pcie_link(backend: &CudaBackend) -> std::result::Result<(PcieLink, Option<PcieLink>), String> {
    let d = backend
        .nvml_device
        .as_ref()
        .ok_or("NVML absent, or it does not know this device")?;
    let read = super::quietly(|| {
        let now = PcieLink {
            generation: d.current_pcie_link_gen().ok()?,
            width: d.current_pcie_link_width().ok()?,
        };
        let max = d
            .max_pcie_link_gen()
            .ok()
            .zip(d.max_pcie_link_width().ok())
            .map(|(generation, width)| PcieLink { generation, width });
        Some((now, max))
    });
    match read {
        Ok(Some(link)) if link.0.generation > 0 && link.0.width > 0 => Ok(link),
        _ => Err("NVML does not report this device's PCIe link".into()),
    }
}

/// A link case of a GPU, its buffers filled and its first copy done.
pub(super) struct GpuLink<'b> {
    backend: &'b CudaBackend,
    transfer: Transfer,
    bytes: usize,
    /// The timed copy, on the backend's stream.
    measured: Copy,
    /// The opposite copy of a bidirectional case, on `second`.
    other: Option<Copy>,
    second: Option<Arc<CudaStream>>,
    events: (CudaEvent, CudaEvent, CudaEvent),
    to_device: Option<(DeviceBuffer, HostBuffer)>,
    to_host: Option<(DeviceBuffer, HostBuffer)>,
    within: Option<(DeviceBuffer, DeviceBuffer)>,
    link: std::result::Result<(PcieLink, Option<PcieLink>), String>,
}

impl Drop for GpuLink<'_> {
    fn drop(&mut self) {
        // Nothing may still copy from or into a buffer when it is freed.
        let _ = super::quietly(|| self.backend.stream.synchronize());
        if let Some(s) = &self.second {
            let _ = super::quietly(|| s.synchronize());
        }
    }
}

impl<'b> GpuLink<'b> {
    pub(super) fn new(backend: &'b CudaBackend, case: &Case) -> Result<GpuLink<'b>> {
        backend.health.check(&backend.info.id)?;
        let transfer = Transfer::parse(&case.kernel).ok_or_else(|| {
            Error::Usage(format!("the CUDA backend has no copy for {}", case.id()))
        })?;
        let bytes = usize::try_from(link::copy_bytes(case))
            .map_err(|_| Error::Internal(format!("{} does not fit a usize", case.id())))?;
        let during = format!("preparing the buffers of {}", case.id());
        let stream = backend.stream.cu_stream();
        let device = || {
            backend.call(&during, || {
                backend.ctx.bind_to_thread()?;
                // SAFETY: a plain allocation, owned by the returned buffer.
                let ptr = unsafe { result::malloc_sync(bytes) }?;
                Ok(DeviceBuffer { ptr, bytes })
            })
        };
        let host = |pageable: bool| -> Result<HostBuffer> {
            if pageable {
                return Ok(HostBuffer::Pageable(vec![0u8; bytes]));
            }
            backend.call(&during, || {
                backend.ctx.bind_to_thread()?;
                // SAFETY: `bytes` bytes of pinned memory, owned by the returned buffer.
                let ptr = unsafe { result::malloc_host(bytes, 0) }? as *mut u8;
                Ok(HostBuffer::Pinned { ptr, bytes })
            })
        };
        // Clears device memory (the destination: every byte a copy misses stays 0).
        let clear = |d: &DeviceBuffer| {
            backend.call(&during, || {
                backend.ctx.bind_to_thread()?;
                // SAFETY: the buffer's own bytes, on the case's stream.
                unsafe { sys::cuMemsetD8Async(d.ptr, 0, d.bytes, stream) }.result()
            })
        };
        // Fills device memory with the pattern of `seed` through `staging`, which is cleared
        // after (it is the destination of the copy back).
        let fill_device = |d: &DeviceBuffer, staging: &mut HostBuffer, seed: u64| {
            link::fill(staging.as_mut_slice(), seed);
            backend.call(&during, || {
                backend.ctx.bind_to_thread()?;
                // SAFETY: both are the case's buffers of `bytes` bytes; synchronised before
                // the staging buffer is cleared.
                unsafe { result::memcpy_htod_async(d.ptr, staging.as_slice(), stream) }?;
                backend.stream.synchronize()
            })?;
            staging.as_mut_slice().fill(0);
            Ok::<(), Error>(())
        };
        let pageable = transfer.pageable();
        let mut to_device = None;
        let mut to_host = None;
        let mut within = None;
        if transfer == Transfer::DeviceLocal {
            let (src, dst) = (device()?, device()?);
            let mut staging = HostBuffer::Pageable(vec![0u8; bytes]);
            fill_device(&src, &mut staging, SEED_TO_DEVICE)?;
            clear(&dst)?;
            within = Some((dst, src));
        } else {
            if transfer.to_device() || transfer.bidirectional() {
                let (dst, mut src) = (device()?, host(pageable)?);
                link::fill(src.as_mut_slice(), SEED_TO_DEVICE);
                clear(&dst)?;
                to_device = Some((dst, src));
            }
            if !transfer.to_device() || transfer.bidirectional() {
                let (src, mut dst) = (device()?, host(pageable)?);
                fill_device(&src, &mut dst, SEED_TO_HOST)?;
                to_host = Some((src, dst));
            }
        }
        let copy_to_device = to_device.as_mut().map(|(d, h)| Copy::ToDevice {
            dst: d.ptr,
            src: h.as_slice().as_ptr(),
        });
        let copy_to_host = to_host.as_mut().map(|(d, h)| Copy::ToHost {
            dst: h.as_mut_slice().as_mut_ptr(),
            src: d.ptr,
        });
        let (measured, other) = match within.as_ref() {
            Some((dst, src)) => (
                Some(Copy::Within {
                    dst: dst.ptr,
                    src: src.ptr,
                }),
                None,
            ),
            None if transfer.to_device() => (copy_to_device, copy_to_host),
            None => (copy_to_host, copy_to_device),
        };
        let measured =
            measured.ok_or_else(|| Error::Internal(format!("{}: no copy to time", case.id())))?;
        let other = other.filter(|_| transfer.bidirectional());
        let second = match other {
            Some(_) => {
                Some(backend.call("creating the second stream", || backend.ctx.new_stream())?)
            }
            None => None,
        };
        let events = backend.call(&format!("creating the events of {}", case.id()), || {
            let e = || backend.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
            let events = (e()?, e()?, e()?);
            backend.stream.synchronize()?;
            Ok(events)
        })?;
        let mut prepared = GpuLink {
            backend,
            transfer,
            bytes,
            measured,
            other,
            second,
            events,
            to_device,
            to_host,
            within,
            link: Err(String::new()),
        };
        // One untimed copy: first-touch and mapping costs stay out of the samples, and the
        // link is up (an idle link may run at a lower generation) when NVML is asked.
        prepared.run(1)?;
        prepared.link = pcie_link(backend);
        Ok(prepared)
    }

    /// The bytes of a device buffer in `range`, read back once everything queued finished.
    fn read_device(&self, d: &DeviceBuffer, range: std::ops::Range<u64>) -> Result<Vec<u8>> {
        let mut out = vec![0u8; (range.end - range.start) as usize];
        self.backend.call("reading back a link destination", || {
            self.backend.ctx.bind_to_thread()?;
            self.backend.stream.synchronize()?;
            if let Some(s) = &self.second {
                s.synchronize()?;
            }
            // SAFETY: `range` lies within the buffer (the check's windows lie within `bytes`).
            unsafe { result::memcpy_dtoh_sync(&mut out, d.ptr + range.start) }
        })?;
        Ok(out)
    }

    fn sync(&self) -> Result<()> {
        self.backend.call("finishing the copies", || {
            self.backend.stream.synchronize()?;
            if let Some(s) = &self.second {
                s.synchronize()?;
            }
            Ok(())
        })
    }
}

impl PreparedCase for GpuLink<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let during = format!("copying ({})", self.transfer.as_str());
        let (start, end, other_end) = &self.events;
        let stream = &*self.backend.stream;
        let (measured, other, bytes) = (self.measured, self.other, self.bytes);
        let second = self.second.clone();
        self.backend.call(&during, || {
            self.backend.ctx.bind_to_thread()?;
            start.record(stream)?;
            if let (Some(copy), Some(s)) = (other, &second) {
                // the opposite direction starts where the measured one does
                s.wait(start)?;
                for _ in 0..reps {
                    // SAFETY: the case's live buffers of `bytes` bytes.
                    unsafe { copy.enqueue(bytes, s.cu_stream()) }?;
                }
                other_end.record(s)?;
            }
            for _ in 0..reps {
                // SAFETY: as above.
                unsafe { measured.enqueue(bytes, stream.cu_stream()) }?;
            }
            end.record(stream)?;
            end.synchronize()?;
            if second.is_some() {
                other_end.synchronize()?;
            }
            Ok(())
        })?;
        let ms = self.backend.call(&during, || start.elapsed_ms(end))?;
        Ok(f64::from(ms) / 1e3)
    }

    fn verify(&mut self) -> Result<Verdict> {
        self.sync()?;
        let len = self.bytes as u64;
        let mut verdicts = Vec::new();
        if let Some((d, _)) = &self.to_device {
            verdicts.push(link::check_sampled(
                len,
                SEED_TO_DEVICE,
                "the device destination",
                |r| self.read_device(d, r),
            )?);
        }
        if let Some((_, h)) = &self.to_host {
            let host = h.as_slice();
            verdicts.push(link::check_sampled::<Error>(
                len,
                SEED_TO_HOST,
                "the host destination",
                |r| Ok(host[r.start as usize..r.end as usize].to_vec()),
            )?);
        }
        if let Some((dst, _)) = &self.within {
            verdicts.push(link::check_sampled(
                len,
                SEED_TO_DEVICE,
                "the device destination",
                |r| self.read_device(dst, r),
            )?);
        }
        Ok(verdicts
            .into_iter()
            .find(|v| !v.valid)
            .unwrap_or_else(Verdict::valid))
    }

    fn launch_note(&self) -> String {
        let t = self.transfer;
        let how = match t {
            Transfer::DeviceLocal => {
                "cuMemcpyDtoDAsync within the device; counts the copy's bytes once".to_string()
            }
            _ => format!(
                "{} host memory, {}{}; counts the copy's bytes once",
                if t.pageable() {
                    "pageable"
                } else {
                    "pinned (cuMemHostAlloc)"
                },
                if t.to_device() {
                    "cuMemcpyHtoDAsync"
                } else {
                    "cuMemcpyDtoHAsync"
                },
                if t.bidirectional() {
                    ", the opposite direction at once on a second stream (its bytes not counted)"
                } else {
                    ""
                }
            ),
        };
        if t.over_link() {
            format!("{how}; {}", link::link_note(self.link.clone()))
        } else {
            how
        }
    }

    fn one_shot(&self) -> bool {
        true
    }
}
