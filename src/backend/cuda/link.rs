//! The link family on a GPU ([`crate::cases::link`]): copy-engine and SM copies between host
//! memory and the device, and copies within the device, timed with CUDA events.
//!
//! Each case allocates its own buffers at its size (pinned host memory with `cuMemHostAlloc`,
//! mapped into the device with `CU_MEMHOSTALLOC_DEVICEMAP` for an SM copy, which reaches it at
//! the address `cuMemHostGetDevicePointer` gives; pageable host memory from the Rust allocator;
//! device memory with `cuMemAlloc`), fills the
//! source with the family's pattern, clears the destination, copies once untimed (first-touch
//! and mapping costs stay out of the samples) and then reads what NVML says of the PCIe link.
//! A sample is `reps` copies between two events on the backend's stream; a bidirectional case
//! runs the opposite copy on a second stream, started by the first stream's start event, and
//! its row is timed by its own direction's events only (nvbandwidth's convention). The runner
//! takes its fewest samples of one copy each ([`PreparedCase::one_shot`]): a copy is its own
//! batch, and the fit across sizes, not repetition at one size, is what separates latency from
//! bandwidth.
//!
//! A peer copy opens the peer's primary context, enables this context's access to the peer's
//! memory (`cuCtxEnablePeerAccess`), allocates its buffers on both GPUs (the peer's in the
//! peer's context, made current only for that and given back), and queues `cuMemcpyPeerAsync`
//! on this device's streams; the row's note ends with the path NVML reports between the two.
//!
//! Verification reads the destination back in sampled windows (the device's with small
//! synchronous copies) and compares them with the pattern; a bidirectional case checks both
//! directions' destinations.

use super::{CudaBackend, ModuleId, PreparedCase, BLOCK};
use crate::cases::link::{self, PcieLink, Transfer};
use crate::cases::{Case, Verdict};
use crate::{Error, Result};
use cudarc::driver::sys::{self, CUevent_flags};
use cudarc::driver::{
    result, CudaContext, CudaEvent, CudaFunction, CudaStream, DriverError, LaunchConfig,
    PushKernelArg,
};
use std::sync::Arc;

/// The kernel of the SM copies: the STREAM copy (`kernels/stream.ptx`), `n` f32 words from its
/// first argument to its second, 16 bytes per load and store.
const SM_COPY_KERNEL: &str = "copy_f32";

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

/// Device memory of one copy's size on a peer GPU, freed on drop in the peer's context (after
/// the case's streams are idle), which leaves the case's own context current again.
struct PeerBuffer {
    ptr: sys::CUdeviceptr,
    ctx: Arc<CudaContext>,
    home: Arc<CudaContext>,
}

impl Drop for PeerBuffer {
    fn drop(&mut self) {
        let _ = super::quietly(|| {
            self.ctx.bind_to_thread()?;
            // SAFETY: allocated in the peer's context by `GpuLink::new`, freed once, after the
            // streams that used it are idle.
            unsafe { result::free_sync(self.ptr) }?;
            self.home.bind_to_thread()
        });
    }
}

/// A peer copy's buffers: pairs of one on this device and one on the peer, the measured copy's
/// first and the opposite copy's (a bidirectional case) second.
struct PeerSide {
    ordinal: u32,
    reads: bool,
    pairs: Vec<(DeviceBuffer, PeerBuffer)>,
    /// The path between the two GPUs as NVML tells it, or why it cannot.
    path: String,
}

impl PeerSide {
    /// Whether pair `i`'s copy goes from the peer into this device: the measured copy (pair 0)
    /// when the case reads, the opposite one (pair 1) when it writes.
    fn into_local(reads: bool, i: usize) -> bool {
        reads == (i == 0)
    }

    /// The pattern seed of pair `i`'s source.
    fn seed(i: usize) -> u64 {
        if i == 0 {
            SEED_TO_DEVICE
        } else {
            SEED_TO_HOST
        }
    }
}

/// The path from this device to GPU `ordinal`: NVLink (with its active links to that GPU) or
/// PCIe (with the two GPUs' closest common ancestor), as NVML tells it; or why it cannot.
fn peer_path(backend: &CudaBackend, ordinal: u32) -> String {
    let unknown = "path not known: NVML absent, or it does not know these devices".to_string();
    let Some(local) = backend.nvml_device.as_ref() else {
        return unknown;
    };
    let mut bus = [0 as std::ffi::c_char; 32];
    let mut device = 0;
    // SAFETY: plain queries into locals; the id is NUL-terminated within the buffer.
    let known = unsafe {
        sys::cuDeviceGet(&mut device, ordinal as i32)
            .result()
            .is_ok()
            && sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), bus.len() as i32, device)
                .result()
                .is_ok()
    };
    if !known {
        return unknown;
    }
    let bus = super::c_bytes(bus);
    let end = bus.iter().position(|&b| b == 0).unwrap_or(bus.len());
    let bus = String::from_utf8_lossy(&bus[..end]).into_owned();
    // "0000:3B:00.0" (CUDA) and "00000000:3B:00.0" (NVML): compared without the domain
    let short = |id: &str| {
        id.split_once(':')
            .map_or(id, |(_, rest)| rest)
            .to_ascii_uppercase()
    };
    let read = super::quietly(|| {
        let nvml = super::nvml()?;
        let links = (0..NVLINK_MAX_LINKS)
            .filter(|&l| {
                let link = local.link_wrapper_for(l);
                link.is_active().unwrap_or(false)
                    && link
                        .remote_pci_info()
                        .is_ok_and(|p| short(&p.bus_id) == short(&bus))
            })
            .count();
        if links > 0 {
            return Some(format!("NVLink, {links} active links to it (NVML)"));
        }
        let peer = nvml.device_by_pci_bus_id(bus.as_str()).ok()?;
        let level = local.topology_common_ancestor(peer).ok()?;
        Some(format!("PCIe, closest common ancestor {level:?} (NVML)"))
    });
    read.ok().flatten().unwrap_or(unknown)
}

/// NVML's `NVML_NVLINK_MAX_LINKS`.
const NVLINK_MAX_LINKS: u32 = 18;

/// Host memory of one copy's size: pinned (`cuMemHostAlloc`; `mapped`: its device address,
/// when mapped into the device) or pageable.
enum HostBuffer {
    Pinned {
        ptr: *mut u8,
        bytes: usize,
        mapped: Option<sys::CUdeviceptr>,
    },
    Pageable(Vec<u8>),
}

impl HostBuffer {
    fn as_slice(&self) -> &[u8] {
        match self {
            // SAFETY: `bytes` bytes from `malloc_host`, alive until drop.
            HostBuffer::Pinned { ptr, bytes, .. } => unsafe {
                std::slice::from_raw_parts(*ptr, *bytes)
            },
            HostBuffer::Pageable(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            // SAFETY: as above; `&mut self` makes this the only reference.
            HostBuffer::Pinned { ptr, bytes, .. } => unsafe {
                std::slice::from_raw_parts_mut(*ptr, *bytes)
            },
            HostBuffer::Pageable(v) => v,
        }
    }

    /// The device's address of mapped pinned memory.
    fn mapped(&self) -> Option<sys::CUdeviceptr> {
        match self {
            HostBuffer::Pinned { mapped, .. } => *mapped,
            HostBuffer::Pageable(_) => None,
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
    /// By [`SM_COPY_KERNEL`] on the SMs, one side being mapped host memory.
    Kernel {
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
    },
    /// Between this device's memory and a peer's (`cuMemcpyPeerAsync`).
    Peer {
        dst: sys::CUdeviceptr,
        dst_ctx: sys::CUcontext,
        src: sys::CUdeviceptr,
        src_ctx: sys::CUcontext,
    },
}

/// The SM copies' kernel and its launch (one wave of blocks).
struct SmCopy {
    func: CudaFunction,
    cfg: LaunchConfig,
}

impl Copy {
    /// Queues the copy of `bytes` on `stream` (a [`Copy::Kernel`] through `kernel`).
    ///
    /// # Safety
    /// The pointers must be the case's live buffers of at least `bytes` bytes.
    unsafe fn enqueue(
        self,
        bytes: usize,
        kernel: Option<&SmCopy>,
        stream: &CudaStream,
    ) -> Result<(), DriverError> {
        if let Copy::Kernel { dst, src } = self {
            let k = kernel.ok_or(DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE))?;
            // the kernel's third argument counts f32 words (bytes is a multiple of 4 KiB)
            let words = (bytes / 4) as u64;
            let mut launch = stream.launch_builder(&k.func);
            launch.arg(&src);
            launch.arg(&dst);
            launch.arg(&words);
            // SAFETY: copy_f32(a, b, n) reads n words at a and writes n at b, both live
            // buffers of `bytes` bytes (the caller's promise).
            return unsafe { launch.launch(k.cfg) }.map(|_| ());
        }
        let stream = stream.cu_stream();
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
            Copy::Peer {
                dst,
                dst_ctx,
                src,
                src_ctx,
            } => unsafe { result::memcpy_peer_async(dst_ctx, dst, src_ctx, src, bytes, stream) },
            Copy::Kernel { .. } => unreachable!("launched above"),
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
    /// The kernel of an SM copy.
    kernel: Option<SmCopy>,
    events: (CudaEvent, CudaEvent, CudaEvent),
    to_device: Option<(DeviceBuffer, HostBuffer)>,
    to_host: Option<(DeviceBuffer, HostBuffer)>,
    within: Option<(DeviceBuffer, DeviceBuffer)>,
    peer: Option<PeerSide>,
    link: std::result::Result<(PcieLink, Option<PcieLink>), String>,
    /// What one copy took in the last batch: the next batch's deadline follows it.
    per_copy_secs: Option<f64>,
}

impl Drop for GpuLink<'_> {
    fn drop(&mut self) {
        if self.backend.health.runaway() {
            // A copy that never finished may still use every buffer, and freeing one would wait
            // for it: all leaked, as a kernel case's arrays are; the worker exits at once.
            std::mem::forget(self.to_device.take());
            std::mem::forget(self.to_host.take());
            std::mem::forget(self.within.take());
            std::mem::forget(self.peer.take());
            std::mem::forget(self.kernel.take());
            std::mem::forget(self.second.take());
            return;
        }
        // Nothing may still copy from or into a buffer when it is freed.
        let _ = super::quietly(|| self.backend.stream.synchronize());
        if let Some(s) = &self.second {
            let _ = super::quietly(|| s.synchronize());
        }
    }
}

/// Makes and fills the buffers of one link case: `bytes` each, on the case's stream, every
/// driver call under `during`.
struct Allocator<'b> {
    backend: &'b CudaBackend,
    during: String,
    stream: sys::CUstream,
    bytes: usize,
    /// Pinned host buffers are mapped into the device (an SM copy reads or writes them).
    mapped: bool,
}

impl Allocator<'_> {
    /// A device buffer.
    fn device(&self) -> Result<DeviceBuffer> {
        let bytes = self.bytes;
        self.backend.call(&self.during, || {
            self.backend.ctx.bind_to_thread()?;
            // SAFETY: a plain allocation, owned by the returned buffer.
            let ptr = unsafe { result::malloc_sync(bytes) }?;
            Ok(DeviceBuffer { ptr, bytes })
        })
    }

    /// A host buffer: pageable, or pinned (and mapped where the copy is an SM's).
    fn host(&self, pageable: bool) -> Result<HostBuffer> {
        let (bytes, sm) = (self.bytes, self.mapped);
        if pageable {
            return Ok(HostBuffer::Pageable(vec![0u8; bytes]));
        }
        self.backend.call(&self.during, || {
            self.backend.ctx.bind_to_thread()?;
            let flags = if sm {
                sys::CU_MEMHOSTALLOC_DEVICEMAP
            } else {
                0
            };
            // SAFETY: `bytes` bytes of pinned memory, owned by the returned buffer.
            let ptr = unsafe { result::malloc_host(bytes, flags) }? as *mut u8;
            let mut buffer = HostBuffer::Pinned {
                ptr,
                bytes,
                mapped: None,
            };
            if sm {
                let mut device = 0;
                // SAFETY: `ptr` is the mapped allocation just made.
                unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, ptr.cast(), 0) }
                    .result()?;
                if let HostBuffer::Pinned { mapped, .. } = &mut buffer {
                    *mapped = Some(device);
                }
            }
            Ok(buffer)
        })
    }

    /// Clears device memory (the destination: every byte a copy misses stays 0).
    fn clear(&self, d: &DeviceBuffer) -> Result<()> {
        let stream = self.stream;
        self.backend.call(&self.during, || {
            self.backend.ctx.bind_to_thread()?;
            // SAFETY: the buffer's own bytes, on the case's stream.
            unsafe { sys::cuMemsetD8Async(d.ptr, 0, d.bytes, stream) }.result()
        })
    }

    /// Fills device memory with the pattern of `seed` through `staging`, which is cleared
    /// after (it is the destination of the copy back).
    fn fill_device(&self, d: &DeviceBuffer, staging: &mut HostBuffer, seed: u64) -> Result<()> {
        let stream = self.stream;
        link::fill(staging.as_mut_slice(), seed);
        self.backend.call(&self.during, || {
            self.backend.ctx.bind_to_thread()?;
            // SAFETY: both are the case's buffers of `bytes` bytes; synchronised before
            // the staging buffer is cleared.
            unsafe { result::memcpy_htod_async(d.ptr, staging.as_slice(), stream) }?;
            self.backend.stream.synchronize()
        })?;
        staging.as_mut_slice().fill(0);
        Ok(())
    }
}

/// The buffers of a link case, by the way it copies: host to device and back, within the
/// device, or with a peer.
struct Sides {
    to_device: Option<(DeviceBuffer, HostBuffer)>,
    to_host: Option<(DeviceBuffer, HostBuffer)>,
    within: Option<(DeviceBuffer, DeviceBuffer)>,
    peer: Option<PeerSide>,
}

impl Sides {
    /// Allocates and fills the sources, and clears the destinations, of `transfer`.
    fn prepare(alloc: &Allocator, case: &Case, transfer: Transfer) -> Result<Sides> {
        let pageable = transfer.pageable();
        let mut sides = Sides {
            to_device: None,
            to_host: None,
            within: None,
            peer: None,
        };
        if transfer.peer() {
            sides.peer = Some(PeerSide::prepare(alloc, case, transfer)?);
        } else if transfer == Transfer::DeviceLocal {
            let (src, dst) = (alloc.device()?, alloc.device()?);
            let mut staging = HostBuffer::Pageable(vec![0u8; alloc.bytes]);
            alloc.fill_device(&src, &mut staging, SEED_TO_DEVICE)?;
            alloc.clear(&dst)?;
            sides.within = Some((dst, src));
        } else {
            if transfer.to_device() || transfer.bidirectional() {
                let (dst, mut src) = (alloc.device()?, alloc.host(pageable)?);
                link::fill(src.as_mut_slice(), SEED_TO_DEVICE);
                alloc.clear(&dst)?;
                sides.to_device = Some((dst, src));
            }
            if !transfer.to_device() || transfer.bidirectional() {
                let (src, mut dst) = (alloc.device()?, alloc.host(pageable)?);
                alloc.fill_device(&src, &mut dst, SEED_TO_HOST)?;
                sides.to_host = Some((src, dst));
            }
        }
        Ok(sides)
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
        let alloc = Allocator {
            backend,
            during: format!("preparing the buffers of {}", case.id()),
            stream: backend.stream.cu_stream(),
            bytes,
            mapped: transfer.sm(),
        };
        let sm = transfer.sm();
        let Sides {
            mut to_device,
            mut to_host,
            within,
            peer,
        } = Sides::prepare(&alloc, case, transfer)?;
        let copy_to_device = to_device.as_mut().map(|(d, h)| match h.mapped() {
            Some(src) => Copy::Kernel { dst: d.ptr, src },
            None => Copy::ToDevice {
                dst: d.ptr,
                src: h.as_slice().as_ptr(),
            },
        });
        let copy_to_host = to_host.as_mut().map(|(d, h)| match h.mapped() {
            Some(dst) => Copy::Kernel { dst, src: d.ptr },
            None => Copy::ToHost {
                dst: h.as_mut_slice().as_mut_ptr(),
                src: d.ptr,
            },
        });
        let kernel = if sm {
            let module = backend.module(ModuleId::Stream)?;
            let func = backend.function(&module, SM_COPY_KERNEL)?;
            let grid = backend.one_wave(&func, SM_COPY_KERNEL)?;
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            Some(SmCopy { func, cfg })
        } else {
            None
        };
        let (measured, other) = match (peer.as_ref(), within.as_ref()) {
            (Some(side), _) => {
                let mut copies = side.copies();
                (Some(copies.remove(0)), copies.pop())
            }
            (None, Some((dst, src))) => (
                Some(Copy::Within {
                    dst: dst.ptr,
                    src: src.ptr,
                }),
                None,
            ),
            (None, None) if transfer.to_device() => (copy_to_device, copy_to_host),
            (None, None) => (copy_to_host, copy_to_device),
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
            kernel,
            events,
            to_device,
            to_host,
            within,
            peer,
            link: Err(String::new()),
            per_copy_secs: None,
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

    /// The bytes of a peer's buffer in `range`, read back once everything queued finished.
    fn read_peer(&self, b: &PeerBuffer, range: std::ops::Range<u64>) -> Result<Vec<u8>> {
        let mut out = vec![0u8; (range.end - range.start) as usize];
        self.sync()?;
        self.backend.call("reading back a peer's destination", || {
            b.ctx.bind_to_thread()?;
            // SAFETY: `range` lies within the buffer (the check's windows lie within `bytes`).
            unsafe { result::memcpy_dtoh_sync(&mut out, b.ptr + range.start) }?;
            self.backend.ctx.bind_to_thread()
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
        let kernel = self.kernel.as_ref();
        self.backend.call(&during, || {
            self.backend.ctx.bind_to_thread()?;
            start.record(stream)?;
            if let (Some(copy), Some(s)) = (other, &second) {
                // the opposite direction starts where the measured one does
                s.wait(start)?;
                for _ in 0..reps {
                    // SAFETY: the case's live buffers of `bytes` bytes.
                    unsafe { copy.enqueue(bytes, kernel, s) }?;
                }
                other_end.record(s)?;
            }
            for _ in 0..reps {
                // SAFETY: as above.
                unsafe { measured.enqueue(bytes, kernel, stream) }?;
            }
            end.record(stream)?;
            Ok(())
        })?;
        // Waited for like a kernel's batch: a copy that never ends loses the device, it does
        // not hang the worker.
        let deadline = super::batch_deadline(self.per_copy_secs, reps, self.backend.deadline);
        let what = format!("a {} copy", self.transfer.as_str());
        self.backend.wait_event(end, &what, &during, deadline)?;
        if second.is_some() {
            self.backend
                .wait_event(other_end, &what, &during, deadline)?;
        }
        let ms = self.backend.call(&during, || start.elapsed_ms(end))?;
        let secs = f64::from(ms) / 1e3;
        self.per_copy_secs = Some(secs / f64::from(reps.max(1)));
        Ok(secs)
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
        if let Some(side) = &self.peer {
            for (i, (local, remote)) in side.pairs.iter().enumerate() {
                let seed = PeerSide::seed(i);
                verdicts.push(if PeerSide::into_local(side.reads, i) {
                    link::check_sampled(len, seed, "this device's destination", |r| {
                        self.read_device(local, r)
                    })?
                } else {
                    link::check_sampled(len, seed, "the peer's destination", |r| {
                        self.read_peer(remote, r)
                    })?
                });
            }
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
            _ if t.peer() => match &self.peer {
                Some(side) => format!(
                    "cuMemcpyPeerAsync {} peer cuda:{} on this device's stream, peer access \
                     enabled{}; counts the copy's bytes once; {}",
                    if side.reads {
                        "from the memory of"
                    } else {
                        "into the memory of"
                    },
                    side.ordinal,
                    if t.bidirectional() {
                        ", the opposite direction at once on a second stream (its bytes not \
                         counted)"
                    } else {
                        ""
                    },
                    side.path
                ),
                None => String::new(),
            },
            _ if t.sm() => {
                let grid = self.kernel.as_ref().map_or(0, |k| k.cfg.grid_dim.0);
                format!(
                    "pinned host memory mapped into the device (cuMemHostAlloc, DEVICEMAP), \
                     copied by the SMs ({SM_COPY_KERNEL}, grid {grid}x{BLOCK}, 16-byte loads \
                     and stores); counts the copy's bytes once"
                )
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

impl PeerSide {
    /// Opens the peer's context, enables this context's access to its memory, and makes the
    /// buffers: the measured copy's source filled with the pattern and its destination cleared;
    /// for a bidirectional case the opposite copy's too, with the other seed.
    #[allow(clippy::too_many_arguments)]
    fn prepare(alloc: &Allocator, case: &Case, transfer: Transfer) -> Result<PeerSide> {
        let (backend, bytes) = (alloc.backend, alloc.bytes);
        let ordinal = link::peer_of(case)
            .ok_or_else(|| Error::Internal(format!("{} names no peer", case.id())))?;
        let opening = format!("opening peer cuda:{ordinal} for {}", case.id());
        let ctx = backend.call(&opening, || CudaContext::new(ordinal as usize))?;
        let home: Arc<CudaContext> = (*backend.ctx).clone();
        backend.call(&format!("enabling peer access to cuda:{ordinal}"), || {
            home.bind_to_thread()?;
            // SAFETY: both contexts are alive; enabling twice is reported and harmless.
            match unsafe { sys::cuCtxEnablePeerAccess(ctx.cu_ctx(), 0) } {
                sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
                r => r.result(),
            }
        })?;
        let during = format!("preparing the buffers of {} on cuda:{ordinal}", case.id());
        let remote = || {
            backend.call(&during, || {
                ctx.bind_to_thread()?;
                // SAFETY: a plain allocation, owned by the returned buffer.
                let ptr = unsafe { result::malloc_sync(bytes) }?;
                home.bind_to_thread()?;
                Ok(PeerBuffer {
                    ptr,
                    ctx: ctx.clone(),
                    home: home.clone(),
                })
            })
        };
        // the peer's buffer with the pattern of `seed` (Some) or cleared (None)
        let set_remote = |b: &PeerBuffer, seed: Option<u64>| {
            let mut data = vec![0u8; bytes];
            if let Some(seed) = seed {
                link::fill(&mut data, seed);
            }
            backend.call(&during, || {
                b.ctx.bind_to_thread()?;
                // SAFETY: `bytes` bytes into the peer's buffer of `bytes` bytes.
                unsafe { result::memcpy_htod_sync(b.ptr, &data) }?;
                // From pageable memory the copy may return once the data is staged, before it
                // lands (the driver API's "API synchronization behavior"), and nothing orders
                // it before the timed copy on this device's stream: wait for it here.
                result::ctx::synchronize()?;
                home.bind_to_thread()
            })
        };
        let reads = transfer.peer_reads();
        let mut staging = HostBuffer::Pageable(vec![0u8; bytes]);
        let mut pairs = Vec::new();
        let directions = if transfer.bidirectional() { 2 } else { 1 };
        for i in 0..directions {
            let seed = PeerSide::seed(i);
            let (local, far) = (alloc.device()?, remote()?);
            if PeerSide::into_local(reads, i) {
                set_remote(&far, Some(seed))?;
                alloc.clear(&local)?;
            } else {
                alloc.fill_device(&local, &mut staging, seed)?;
                set_remote(&far, None)?;
            }
            pairs.push((local, far));
        }
        backend.call(&during, || backend.stream.synchronize())?;
        Ok(PeerSide {
            ordinal,
            reads,
            pairs,
            path: peer_path(backend, ordinal),
        })
    }

    /// The copies: the measured one first, then the opposite one of a bidirectional case.
    fn copies(&self) -> Vec<Copy> {
        self.pairs
            .iter()
            .enumerate()
            .map(|(i, (local, far))| {
                let (here, there) = (local.ptr, far.ptr);
                let (home, peer) = (far.home.cu_ctx(), far.ctx.cu_ctx());
                if PeerSide::into_local(self.reads, i) {
                    Copy::Peer {
                        dst: here,
                        dst_ctx: home,
                        src: there,
                        src_ctx: peer,
                    }
                } else {
                    Copy::Peer {
                        dst: there,
                        dst_ctx: peer,
                        src: here,
                        src_ctx: home,
                    }
                }
            })
            .collect()
    }
}
