//! The simulated driver's state and semantics: devices with their primary context, memory and
//! sticky error; modules, functions, streams and events behind opaque handles that are never
//! reused (a stale handle is an error, not another object); and a worker thread per stream that
//! runs its work in order, kernels under `ptxsim`.
//!
//! Where the CUDA documentation leaves behaviour open, the simulation takes the strict reading
//! a sanitizer would, so that code which only works by luck on a real GPU fails here:
//! - `cuMemFree` frees at once; a queued kernel that then touches the memory faults;
//! - `cuModuleUnload` unloads at once; a queued launch of one of its functions fails;
//! - a destroyed event is gone for the host at once (its elapsed time can no longer be read);
//! - copies between a device and pinned host memory run when the stream reaches them; copies
//!   with pageable host memory behave as the driver documents (host-to-device staged at the
//!   call, device-to-host returned only once the copy is done);
//! - pinned memory is mapped into the device's address space only when it was allocated with
//!   `CU_MEMHOSTALLOC_DEVICEMAP` (`cuMemHostGetDevicePointer` refuses any other). A kernel sees
//!   it through a mirror in the interpreter's memory: every mapped allocation of the device is
//!   copied in when a kernel starts, and the bytes the kernel changed are written back to the
//!   host when it ends (so a host write elsewhere in the buffer meanwhile is not undone).
//!
//! A launch that its entry's directives forbid (a block other than `.reqntid`'s, above
//! `.maxntid`'s, a grid of no whole `.reqnctapercluster` clusters) fails at `cuLaunchKernel`,
//! as a driver's does, and nothing is queued.
//!
//! A kernel fault (out-of-bounds or misaligned access, trap, anything the interpreter refuses
//! while running) sets the device's sticky error: every later call on that context returns it.
//! A kernel that never ends runs forever, as on a GPU: its stream never completes and the
//! device's memory stays locked by it, so a caller that waits on it hangs, and so does the
//! driver's teardown when the process exits (unless it ends with `_exit`).

use crate::config::{Config, InitBehaviour};
use ptxsim::{Arg, DevicePtr, Memory, Module};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// CUresult values (cuda.h).
pub mod code {
    pub const SUCCESS: u32 = 0;
    pub const INVALID_VALUE: u32 = 1;
    pub const OUT_OF_MEMORY: u32 = 2;
    pub const NOT_INITIALIZED: u32 = 3;
    pub const NO_DEVICE: u32 = 100;
    pub const INVALID_DEVICE: u32 = 101;
    pub const INVALID_IMAGE: u32 = 200;
    pub const INVALID_CONTEXT: u32 = 201;
    pub const INVALID_PTX: u32 = 218;
    pub const JIT_COMPILER_NOT_FOUND: u32 = 221;
    pub const UNSUPPORTED_PTX_VERSION: u32 = 222;
    pub const INVALID_HANDLE: u32 = 400;
    pub const NOT_FOUND: u32 = 500;
    pub const NOT_READY: u32 = 600;
    pub const ILLEGAL_ADDRESS: u32 = 700;
    pub const LAUNCH_TIMEOUT: u32 = 702;
    /// CUDA 12.x's: an error the GPU contained (a later code than the CUDA 12.0 binding knows).
    pub const CONTAINED: u32 = 226;
    pub const PEER_ACCESS_ALREADY_ENABLED: u32 = 704;
    pub const MISALIGNED_ADDRESS: u32 = 716;
    pub const LAUNCH_FAILED: u32 = 719;
    pub const NOT_SUPPORTED: u32 = 801;
    pub const INVALID_CLUSTER_SIZE: u32 = 912;
    pub const UNKNOWN: u32 = 999;

    /// `cuGetErrorName` and `cuGetErrorString` of the codes this driver returns, NUL-terminated.
    pub fn describe(code: u32) -> Option<(&'static [u8], &'static [u8])> {
        Some(match code {
            SUCCESS => (b"CUDA_SUCCESS\0", b"no error\0"),
            INVALID_VALUE => (b"CUDA_ERROR_INVALID_VALUE\0", b"invalid argument\0"),
            OUT_OF_MEMORY => (b"CUDA_ERROR_OUT_OF_MEMORY\0", b"out of memory\0"),
            NOT_INITIALIZED => (b"CUDA_ERROR_NOT_INITIALIZED\0", b"initialization error\0"),
            NO_DEVICE => (
                b"CUDA_ERROR_NO_DEVICE\0",
                b"no CUDA-capable device is detected\0",
            ),
            INVALID_DEVICE => (b"CUDA_ERROR_INVALID_DEVICE\0", b"invalid device ordinal\0"),
            INVALID_IMAGE => (
                b"CUDA_ERROR_INVALID_IMAGE\0",
                b"device kernel image is invalid\0",
            ),
            INVALID_CONTEXT => (b"CUDA_ERROR_INVALID_CONTEXT\0", b"invalid device context\0"),
            INVALID_PTX => (
                b"CUDA_ERROR_INVALID_PTX\0",
                b"a PTX JIT compilation failed\0",
            ),
            JIT_COMPILER_NOT_FOUND => (
                b"CUDA_ERROR_JIT_COMPILER_NOT_FOUND\0",
                b"PTX JIT compiler library not found\0",
            ),
            UNSUPPORTED_PTX_VERSION => (
                b"CUDA_ERROR_UNSUPPORTED_PTX_VERSION\0",
                b"the provided PTX was compiled with an unsupported toolchain.\0",
            ),
            INVALID_HANDLE => (b"CUDA_ERROR_INVALID_HANDLE\0", b"invalid resource handle\0"),
            NOT_FOUND => (b"CUDA_ERROR_NOT_FOUND\0", b"named symbol not found\0"),
            NOT_READY => (b"CUDA_ERROR_NOT_READY\0", b"device not ready\0"),
            ILLEGAL_ADDRESS => (
                b"CUDA_ERROR_ILLEGAL_ADDRESS\0",
                b"an illegal memory access was encountered\0",
            ),
            LAUNCH_TIMEOUT => (
                b"CUDA_ERROR_LAUNCH_TIMEOUT\0",
                b"the launch timed out and was terminated\0",
            ),
            CONTAINED => (
                b"CUDA_ERROR_CONTAINED\0",
                b"a hardware error was contained\0",
            ),
            MISALIGNED_ADDRESS => (b"CUDA_ERROR_MISALIGNED_ADDRESS\0", b"misaligned address\0"),
            PEER_ACCESS_ALREADY_ENABLED => (
                b"CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED\0",
                b"peer access is already enabled\0",
            ),
            LAUNCH_FAILED => (
                b"CUDA_ERROR_LAUNCH_FAILED\0",
                b"unspecified launch failure\0",
            ),
            NOT_SUPPORTED => (b"CUDA_ERROR_NOT_SUPPORTED\0", b"operation not supported\0"),
            INVALID_CLUSTER_SIZE => (
                b"CUDA_ERROR_INVALID_CLUSTER_SIZE\0",
                b"invalid cluster size\0",
            ),
            UNKNOWN => (b"CUDA_ERROR_UNKNOWN\0", b"unknown error\0"),
            _ => return None,
        })
    }
}

/// What a module's PTX passed its checks as: the device, the parsed module, its `.version`.
type Checked = (Arc<Device>, Module, (u32, u32));

/// An API call's outcome: `Err(code)` is returned to the caller as that CUresult.
pub type Res<T = ()> = Result<T, u32>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// First handle value; far from small integers and from any host pointer.
const HANDLE_BASE: u64 = 0x5151_0000_0000;

/// One device with its primary context.
pub struct Device {
    pub ordinal: u32,
    pub ctx: u64,
    retains: AtomicU32,
    /// The sticky error of the context (0: none).
    sticky: AtomicU32,
    mem: Mutex<Memory>,
    /// Live allocations as the host sees them: address → bytes.
    allocs: Mutex<BTreeMap<u64, u64>>,
    /// Bytes the device holds (an asynchronous free gives its bytes back when it runs).
    used: AtomicU64,
    /// Pinned host memory mapped into this device, by host address (not counted in `used`).
    mapped: Mutex<BTreeMap<usize, Mapped>>,
    /// The devices whose memory this context has peer access to (`cuCtxEnablePeerAccess`).
    peers: Mutex<std::collections::BTreeSet<u32>>,
    legacy: OnceLock<Arc<Stream>>,
    /// Work (a kernel, a copy, a library routine) running on the device now, on any stream: what
    /// the simulated NVML reports as a busy device (clocks up, power drawn, no idle reason).
    busy: AtomicU32,
    /// When the device was busy: what the simulated NVML's energy counter and its averaged
    /// power reading integrate.
    busy_log: Mutex<BusyLog>,
    /// Kernel launches queued so far: which step of a falling clock (`clock_fall`) the next
    /// one runs at.
    launches: AtomicU64,
    /// The SM clock of the kernel that ran last (or runs now): NVML's current clock.
    clock_mhz: AtomicU32,
}

/// The device's busy time: the intervals of the last [`BusyLog::KEPT`] (older ones summed),
/// and the one open now.
pub struct BusyLog {
    /// Since when the device exists (the energy counter's zero).
    pub born: Instant,
    /// The start of the busy interval open now.
    open: Option<Instant>,
    /// Closed busy intervals, oldest first.
    closed: std::collections::VecDeque<(Instant, Instant)>,
    /// Busy time of the intervals dropped from `closed`.
    before: Duration,
    /// The simulated NVML's energy counter as last updated: when, and its millijoules.
    pub energy_shown: Option<(Instant, u64)>,
}

impl BusyLog {
    /// How far back closed intervals are kept one by one (NVML's averaged power looks one
    /// second back).
    pub const KEPT: Duration = Duration::from_secs(2);

    fn new() -> BusyLog {
        BusyLog {
            born: Instant::now(),
            open: None,
            closed: std::collections::VecDeque::new(),
            before: Duration::ZERO,
            energy_shown: None,
        }
    }

    fn start(&mut self, now: Instant) {
        self.open.get_or_insert(now);
    }

    fn stop(&mut self, now: Instant) {
        if let Some(start) = self.open.take() {
            self.closed.push_back((start, now));
        }
        while let Some(&(a, b)) = self.closed.front() {
            if now.saturating_duration_since(b) <= Self::KEPT {
                break;
            }
            self.before += b - a;
            self.closed.pop_front();
        }
    }

    /// Busy time between `from` (no earlier than [`BusyLog::KEPT`] before `to`, or the
    /// device's birth) and `to`.
    pub fn busy_between(&self, from: Instant, to: Instant) -> Duration {
        let overlap = |a: Instant, b: Instant| {
            let (a, b) = (a.max(from), b.min(to));
            b.saturating_duration_since(a)
        };
        let closed: Duration = self.closed.iter().map(|&(a, b)| overlap(a, b)).sum();
        let open = self.open.map_or(Duration::ZERO, |a| overlap(a, to));
        let dropped = if from <= self.born {
            self.before
        } else {
            Duration::ZERO
        };
        closed + open + dropped
    }
}

impl Device {
    pub fn sticky(&self) -> Res {
        match self.sticky.load(Ordering::SeqCst) {
            0 => Ok(()),
            code => Err(code),
        }
    }

    /// The SM clock of the kernel that ran last, or runs now (`clock_mhz` before any).
    pub fn clock_mhz(&self) -> u32 {
        self.clock_mhz.load(Ordering::SeqCst)
    }

    /// Whether work runs on the device now (a stream's worker is inside an operation).
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst) > 0
    }

    /// Whether the device is busy, or was within `hold` ago (its last busy interval ended then).
    pub fn busy_within(&self, hold: Duration) -> bool {
        self.busy()
            || lock(&self.busy_log)
                .closed
                .back()
                .is_some_and(|&(_, end)| end.elapsed() <= hold)
    }

    /// When the device was busy.
    pub fn busy_log(&self) -> std::sync::MutexGuard<'_, BusyLog> {
        lock(&self.busy_log)
    }

    /// One more operation running on the device (the first opens a busy interval).
    fn begin_work(&self) {
        let mut log = lock(&self.busy_log);
        if self.busy.fetch_add(1, Ordering::SeqCst) == 0 {
            log.start(Instant::now());
        }
    }

    /// One operation fewer (the last closes the busy interval).
    fn end_work(&self) {
        let mut log = lock(&self.busy_log);
        if self.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            log.stop(Instant::now());
        }
    }

    /// Bytes the device's allocations hold now (the context's own not counted).
    pub fn used_bytes(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }

    /// Whether a process holds the device's primary context (NVML lists it as a compute
    /// process then).
    pub fn in_use(&self) -> bool {
        self.retains.load(Ordering::SeqCst) > 0
    }

    /// Makes `code` the device's sticky error, after noting the fault on stderr. The note comes
    /// first, and as one write: once the error is set, the process that reads it may print its
    /// own last line at once, and `eprintln!` writes its pieces one by one (this library's
    /// stderr lock is not the process's), so a note written after, or in pieces, could split or
    /// follow that line.
    fn fault(&self, code: u32, what: &str) {
        let note = format!("simcuda: device {} faulted: {what}\n", self.ordinal);
        let _ = std::io::stderr().write_all(note.as_bytes());
        let _ = self
            .sticky
            .compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst);
        driver().trace(&format!("fault {code} {what}"));
    }
}

pub struct ModuleObj {
    device: Arc<Device>,
    module: Module,
    version: (u32, u32),
    unloaded: AtomicBool,
}

pub struct Function {
    module: Arc<ModuleObj>,
    name: String,
    /// Dynamic shared memory a launch may ask for (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    max_dynamic_shared: AtomicU32,
    /// `CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`, -1 when never set.
    carveout: AtomicI32,
}

/// Host memory from `cuMemHostAlloc`/`cuMemAllocHost`, which async copies read and write when
/// the stream reaches them.
struct Pinned {
    layout: std::alloc::Layout,
    /// Mapped (`CU_MEMHOSTALLOC_DEVICEMAP`): the device it was mapped into (whose `mapped`
    /// holds its mirror).
    mapped: Option<Arc<Device>>,
}

/// `CU_MEMHOSTALLOC_DEVICEMAP` (cuda.h).
pub const MEMHOSTALLOC_DEVICEMAP: u32 = 0x02;

/// Pinned host memory mapped into a device: `bytes` at host address `host`, mirrored at the
/// interpreter address `mirror`.
#[derive(Clone, Copy)]
struct Mapped {
    host: usize,
    bytes: usize,
    mirror: u64,
}

#[derive(Default)]
struct Objects {
    modules: HashMap<u64, Arc<ModuleObj>>,
    functions: HashMap<u64, Arc<Function>>,
    streams: HashMap<u64, Arc<Stream>>,
    events: HashMap<u64, Arc<Event>>,
    pinned: BTreeMap<usize, Pinned>,
}

pub struct Driver {
    pub config: Config,
    pub devices: Vec<Arc<Device>>,
    objects: Mutex<Objects>,
    next_handle: AtomicU64,
    trace: Option<Mutex<std::fs::File>>,
}

static DRIVER: OnceLock<Result<Driver, u32>> = OnceLock::new();

/// `cuInit`: reads the configuration once; every later call sees the same outcome.
pub fn init() -> Res {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("simcuda: {e}");
            return Err(code::INVALID_VALUE);
        }
    };
    match config.init {
        InitBehaviour::Hang => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        InitBehaviour::Fail(c) => return Err(c),
        InitBehaviour::Succeed => {}
    }
    DRIVER
        .get_or_init(|| {
            extern "C" {
                fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
            }
            // SAFETY: registers a plain function, once.
            unsafe { atexit(teardown) };
            Ok(Driver::new(config))
        })
        .as_ref()
        .map(|_| ())
        .map_err(|&c| c)
}

/// What a driver's teardown at process exit does: waits for the work still queued on every
/// stream. After a kernel that never ends, that is forever; a process that gave up on such a
/// kernel must end with `_exit`, which skips it, as it must with a real driver.
extern "C" fn teardown() {
    if let Ok(d) = try_driver() {
        let streams: Vec<Arc<Stream>> = {
            let objects = lock(&d.objects);
            objects
                .streams
                .values()
                .cloned()
                .chain(d.devices.iter().filter_map(|dev| dev.legacy.get().cloned()))
                .collect()
        };
        for s in streams {
            let ticket = lock(&s.state).submitted;
            let mut st = lock(&s.state);
            while st.completed < ticket {
                st = s.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

/// The initialised driver; `NOT_INITIALIZED` before `cuInit`.
pub fn try_driver() -> Res<&'static Driver> {
    match DRIVER.get() {
        Some(Ok(d)) => Ok(d),
        Some(Err(c)) => Err(*c),
        None => Err(code::NOT_INITIALIZED),
    }
}

/// The driver, for code that only runs once it exists (workers, faults).
fn driver() -> &'static Driver {
    try_driver().expect("simcuda: used before cuInit")
}

thread_local! {
    static CURRENT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl Driver {
    fn new(config: Config) -> Driver {
        let devices = (0..config.devices)
            .map(|ordinal| {
                Arc::new(Device {
                    ordinal,
                    ctx: HANDLE_BASE - 0x1000 + u64::from(ordinal) * 16,
                    retains: AtomicU32::new(0),
                    sticky: AtomicU32::new(0),
                    mem: Mutex::new(Memory::new()),
                    allocs: Mutex::new(BTreeMap::new()),
                    used: AtomicU64::new(0),
                    mapped: Mutex::new(BTreeMap::new()),
                    peers: Mutex::new(std::collections::BTreeSet::new()),
                    legacy: OnceLock::new(),
                    busy: AtomicU32::new(0),
                    busy_log: Mutex::new(BusyLog::new()),
                    launches: AtomicU64::new(0),
                    clock_mhz: AtomicU32::new(config.clock_mhz),
                })
            })
            .collect();
        let trace = config.trace.as_ref().and_then(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map(Mutex::new)
                .ok()
        });
        Driver {
            config,
            devices,
            objects: Mutex::new(Objects::default()),
            next_handle: AtomicU64::new(HANDLE_BASE),
            trace,
        }
    }

    /// Appends a line to the trace file, if one is configured.
    pub fn trace(&self, line: &str) {
        if let Some(f) = &self.trace {
            let _ = writeln!(lock(f), "{line}");
        }
    }

    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(16, Ordering::Relaxed)
    }

    pub fn device(&self, ordinal: i32) -> Res<&Arc<Device>> {
        usize::try_from(ordinal)
            .ok()
            .and_then(|i| self.devices.get(i))
            .ok_or(code::INVALID_DEVICE)
    }

    fn device_of_ctx(&self, ctx: u64) -> Res<&Arc<Device>> {
        self.devices
            .iter()
            .find(|d| d.ctx == ctx)
            .ok_or(code::INVALID_CONTEXT)
    }

    /// The device of the calling thread's current context.
    pub fn current(&self) -> Res<&Arc<Device>> {
        let ctx = CURRENT.with(|c| c.get());
        if ctx == 0 {
            return Err(code::INVALID_CONTEXT);
        }
        let d = self.device_of_ctx(ctx)?;
        if d.retains.load(Ordering::SeqCst) == 0 {
            return Err(code::INVALID_CONTEXT);
        }
        Ok(d)
    }

    /// The current context's device, refused once its context has a sticky error.
    pub fn working(&self) -> Res<&Arc<Device>> {
        let d = self.current()?;
        d.sticky()?;
        Ok(d)
    }

    pub fn retain(&self, ordinal: i32) -> Res<u64> {
        let d = self.device(ordinal)?;
        d.retains.fetch_add(1, Ordering::SeqCst);
        Ok(d.ctx)
    }

    pub fn release(&self, ordinal: i32) -> Res {
        let d = self.device(ordinal)?;
        d.retains
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .map(|_| ())
            .map_err(|_| code::INVALID_CONTEXT)
    }

    pub fn set_current(&self, ctx: u64) -> Res {
        if ctx != 0 {
            self.device_of_ctx(ctx)?;
        }
        CURRENT.with(|c| c.set(ctx));
        Ok(())
    }

    pub fn get_current(&self) -> u64 {
        CURRENT.with(|c| c.get())
    }

    // ---- memory -----------------------------------------------------------------------------

    pub fn mem_info(&self) -> Res<(u64, u64)> {
        let d = self.working()?;
        let total = self.config.memory_bytes;
        let used = d.used.load(Ordering::SeqCst) + self.config.context_bytes;
        Ok((total.saturating_sub(used), total))
    }

    pub fn alloc(&self, bytes: usize) -> Res<u64> {
        let d = self.working()?;
        if bytes == 0 {
            return Err(code::INVALID_VALUE);
        }
        let (free, _) = self.mem_info()?;
        if bytes as u64 > free {
            return Err(code::OUT_OF_MEMORY);
        }
        d.used.fetch_add(bytes as u64, Ordering::SeqCst);
        let ptr = lock(&d.mem).alloc(bytes).addr();
        lock(&d.allocs).insert(ptr, bytes as u64);
        Ok(ptr)
    }

    /// Takes `ptr` out of the host's view of live allocations (the start of one, or an error).
    fn forget(&self, d: &Device, ptr: u64) -> Res<u64> {
        lock(&d.allocs).remove(&ptr).ok_or(code::INVALID_VALUE)
    }

    /// `cuMemFree`: at once, whatever is still queued (see the module documentation).
    pub fn free_now(&self, ptr: u64) -> Res {
        let d = self.working()?;
        let bytes = self.forget(d, ptr)?;
        release_memory(d, ptr, bytes);
        Ok(())
    }

    pub fn free_async(&self, ptr: u64, stream: u64) -> Res {
        let d = self.working()?;
        let s = self.stream(stream, d)?;
        let bytes = self.forget(d, ptr)?;
        s.push(Op::Free { ptr, bytes });
        Ok(())
    }

    /// Checks that `[ptr, ptr + bytes)` lies in one live allocation of `d`.
    fn check_range(&self, d: &Device, ptr: u64, bytes: usize) -> Res {
        let allocs = lock(&d.allocs);
        let inside = allocs
            .range(..=ptr)
            .next_back()
            .is_some_and(|(&base, &len)| ptr + bytes as u64 <= base + len);
        if inside {
            Ok(())
        } else {
            Err(code::INVALID_VALUE)
        }
    }

    fn is_pinned(&self, host: usize, bytes: usize) -> bool {
        let objects = lock(&self.objects);
        objects
            .pinned
            .range(..=host)
            .next_back()
            .is_some_and(|(&base, p)| host + bytes <= base + p.layout.size())
    }

    /// Host-to-device on `stream` (`None`: the synchronous form, on the legacy stream).
    ///
    /// # Safety
    /// `src` must be readable for `bytes` bytes (until the copy runs, if pinned).
    pub unsafe fn copy_htod(
        &self,
        dst: u64,
        src: *const u8,
        bytes: usize,
        stream: Option<u64>,
    ) -> Res {
        let d = self.working()?;
        self.check_range(d, dst, bytes)?;
        let s = self.stream(stream.unwrap_or(0), d)?;
        let data = if stream.is_some() && self.is_pinned(src as usize, bytes) {
            HostBytes::Pinned(src as usize)
        } else {
            // SAFETY: the caller's promise; pageable memory is staged now, as the driver does.
            HostBytes::Staged(unsafe { std::slice::from_raw_parts(src, bytes) }.to_vec())
        };
        let ticket = s.push(Op::HtoD { dst, data, bytes });
        if stream.is_none() {
            s.wait_for(ticket)?;
        }
        Ok(())
    }

    /// Device-to-host on `stream` (`None`: synchronous). Into pageable memory it returns once
    /// the copy is done, as the driver documents; into pinned memory when the stream reaches it.
    ///
    /// # Safety
    /// `dst` must be writable for `bytes` bytes until the copy has run.
    pub unsafe fn copy_dtoh(
        &self,
        dst: *mut u8,
        src: u64,
        bytes: usize,
        stream: Option<u64>,
    ) -> Res {
        let d = self.working()?;
        self.check_range(d, src, bytes)?;
        let s = self.stream(stream.unwrap_or(0), d)?;
        let pinned = stream.is_some() && self.is_pinned(dst as usize, bytes);
        let ticket = s.push(Op::DtoH {
            dst: dst as usize,
            src,
            bytes,
        });
        if !pinned {
            s.wait_for(ticket)?;
        }
        Ok(())
    }

    pub fn copy_dtod(&self, dst: u64, src: u64, bytes: usize, stream: Option<u64>) -> Res {
        let d = self.working()?;
        self.check_range(d, src, bytes)?;
        self.check_range(d, dst, bytes)?;
        let s = self.stream(stream.unwrap_or(0), d)?;
        let ticket = s.push(Op::DtoD { dst, src, bytes });
        if stream.is_none() {
            s.wait_for(ticket)?;
        }
        Ok(())
    }

    /// `cuDeviceCanAccessPeer`: every simulated device reaches every other.
    pub fn can_access_peer(&self, dev: i32, peer: i32) -> Res<i32> {
        self.device(dev)?;
        self.device(peer)?;
        Ok(i32::from(dev != peer))
    }

    /// `cuCtxEnablePeerAccess` from the current context to `peer_ctx`'s memory.
    pub fn enable_peer_access(&self, peer_ctx: u64, flags: u32) -> Res {
        let d = self.working()?;
        let peer = self.device_of_ctx(peer_ctx)?;
        if flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        if Arc::ptr_eq(d, peer) {
            return Err(code::INVALID_DEVICE);
        }
        if !lock(&d.peers).insert(peer.ordinal) {
            return Err(code::PEER_ACCESS_ALREADY_ENABLED);
        }
        Ok(())
    }

    /// `cuMemcpyPeer(Async)`: `bytes` from `src` in `src_ctx`'s memory to `dst` in `dst_ctx`'s,
    /// on a stream of the current context (`None`: synchronous). The driver stages the copy
    /// when peer access is off, so it is not required.
    pub fn copy_peer(
        &self,
        dst: u64,
        dst_ctx: u64,
        src: u64,
        src_ctx: u64,
        bytes: usize,
        stream: Option<u64>,
    ) -> Res {
        let d = self.working()?;
        let (to, from) = (self.device_of_ctx(dst_ctx)?, self.device_of_ctx(src_ctx)?);
        to.sticky()?;
        from.sticky()?;
        self.check_range(to, dst, bytes)?;
        self.check_range(from, src, bytes)?;
        let s = self.stream(stream.unwrap_or(0), d)?;
        let ticket = s.push(Op::Peer {
            dst,
            to: to.clone(),
            src,
            from: from.clone(),
            bytes,
        });
        if stream.is_none() {
            s.wait_for(ticket)?;
        }
        Ok(())
    }

    pub fn memset(
        &self,
        dst: u64,
        value: u32,
        width: usize,
        count: usize,
        stream: Option<u64>,
    ) -> Res {
        let d = self.working()?;
        self.check_range(d, dst, width * count)?;
        let s = self.stream(stream.unwrap_or(0), d)?;
        let ticket = s.push(Op::Memset {
            dst,
            value,
            width,
            count,
        });
        if stream.is_none() {
            s.wait_for(ticket)?;
        }
        Ok(())
    }

    /// `cuMemHostAlloc` with `flags`: mapped into the current device when they hold
    /// [`MEMHOSTALLOC_DEVICEMAP`].
    pub fn host_alloc(&self, bytes: usize, flags: u32) -> Res<*mut u8> {
        let d = self.working()?;
        let layout = std::alloc::Layout::from_size_align(bytes.max(1), 4096)
            .map_err(|_| code::INVALID_VALUE)?;
        // SAFETY: a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(code::OUT_OF_MEMORY);
        }
        let mapped = (flags & MEMHOSTALLOC_DEVICEMAP != 0).then(|| {
            let mirror = lock(&d.mem).alloc(layout.size()).addr();
            let m = Mapped {
                host: p as usize,
                bytes: layout.size(),
                mirror,
            };
            lock(&d.mapped).insert(p as usize, m);
            d.clone()
        });
        lock(&self.objects)
            .pinned
            .insert(p as usize, Pinned { layout, mapped });
        Ok(p)
    }

    /// `cuMemHostGetDevicePointer`: the device address of `p`, which must lie in pinned
    /// memory mapped into the current device.
    pub fn host_device_pointer(&self, p: usize, flags: u32) -> Res<u64> {
        let d = self.working()?;
        if flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        lock(&d.mapped)
            .range(..=p)
            .next_back()
            .map(|(_, m)| *m)
            .filter(|m| p < m.host + m.bytes)
            .map(|m| m.mirror + (p - m.host) as u64)
            .ok_or(code::INVALID_VALUE)
    }

    /// # Safety
    /// `p` must come from [`Driver::host_alloc`] and not be used after.
    pub unsafe fn host_free(&self, p: *mut u8) -> Res {
        let pinned = lock(&self.objects)
            .pinned
            .remove(&(p as usize))
            .ok_or(code::INVALID_VALUE)?;
        if let Some(d) = &pinned.mapped {
            if let Some(m) = lock(&d.mapped).remove(&(p as usize)) {
                let _ = lock(&d.mem).free(DevicePtr(m.mirror));
            }
        }
        // SAFETY: allocated by `host_alloc` with this layout, removed from the table once.
        unsafe { std::alloc::dealloc(p, pinned.layout) };
        Ok(())
    }

    // ---- modules and functions ---------------------------------------------------------------

    /// The checks a module load makes (the JIT's): the PTX parses, its `.version` is one this
    /// driver takes, and its `.target` runs on the current device. `Err((code, log))` carries
    /// the JIT log.
    fn check_ptx(&self, ptx: &str) -> Result<Checked, (u32, String)> {
        let d = self.working().map_err(|c| (c, String::new()))?;
        if let Some(text) = &self.config.reject {
            if ptx.contains(text.as_str()) {
                return Err((
                    code::INVALID_PTX,
                    format!(
                        "ptxas fatal   : this simulated driver rejects PTX containing `{text}`"
                    ),
                ));
            }
        }
        let module = Module::parse_with(ptx, self.config.dynamic_shared_base).map_err(|e| {
            (
                code::INVALID_PTX,
                format!("ptxas application ptx input, {e}"),
            )
        })?;
        let version = module.version.unwrap_or((0, 0));
        let max = self.config.max_ptx_version();
        if version > max {
            return Err((
                code::UNSUPPORTED_PTX_VERSION,
                format!(
                    "ptxas fatal   : Unsupported .version {}.{}; current version is '{}.{}'",
                    version.0, version.1, max.0, max.1
                ),
            ));
        }
        for target in &module.targets {
            if let Some(why) = target_refused(target, self.config.cc) {
                return Err((code::INVALID_PTX, format!("ptxas fatal   : {why}")));
            }
        }
        Ok((d.clone(), module, version))
    }

    /// Loads PTX text: the JIT's checks (`Driver::check_ptx`), then the module is kept for
    /// launches. `Err((code, log))` carries the JIT log.
    pub fn load_module(&self, ptx: &str) -> Result<u64, (u32, String)> {
        let (d, module, version) = self.check_ptx(ptx)?;
        let handle = self.handle();
        let entries = module.entries().join(" ");
        lock(&self.objects).modules.insert(
            handle,
            Arc::new(ModuleObj {
                device: d.clone(),
                module,
                version,
                unloaded: AtomicBool::new(false),
            }),
        );
        self.trace(&format!("load {handle:#x} {entries}"));
        Ok(handle)
    }

    /// What the linker makes of one PTX module (`cuLinkAddData` then `cuLinkComplete`): the
    /// module load's checks, then the configured ptxas's object for the link's target and its
    /// log, as a driver's JIT gives them: the registers and spills of each function (ptxas's
    /// `-v`) only when `verbose` (`CU_JIT_LOG_VERBOSE`). The target is `CU_JIT_TARGET`'s where
    /// the link names one, else the context's, the plain architecture of the device (the
    /// documented default): an architecture-specific module (`.target sm_90a`) links only with
    /// its target named, as ptxas refuses it for `sm_90`.
    pub fn link_compile(
        &self,
        ptx: &str,
        verbose: bool,
        target: Option<u32>,
    ) -> Result<(Vec<u8>, String), (u32, String)> {
        self.check_ptx(ptx)?;
        let Some(ptxas) = &self.config.ptxas else {
            return Err((
                code::JIT_COMPILER_NOT_FOUND,
                "this simulated driver has no JIT compiler: give it one with SIMCUDA=ptxas=PATH"
                    .to_string(),
            ));
        };
        let (major, minor) = self.config.cc;
        let arch = match target {
            Some(t) => format!(
                "sm_{}{}",
                t & 0xffff,
                if t & 0x10000 != 0 { "a" } else { "" }
            ),
            None => format!("sm_{major}{minor}"),
        };
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let stem = std::env::temp_dir().join(format!(
            "simcuda-link-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let (input, output) = (stem.with_extension("ptx"), stem.with_extension("cubin"));
        let failed = |what: String| (code::INVALID_PTX, what);
        std::fs::write(&input, ptx)
            .map_err(|e| failed(format!("writing {}: {e}", input.display())))?;
        let run = std::process::Command::new(ptxas)
            .arg(format!("-arch={arch}"))
            .args(verbose.then_some("-v"))
            .arg("-o")
            .arg(&output)
            .arg(&input)
            .output();
        let _ = std::fs::remove_file(&input);
        let run = run.map_err(|e| {
            (
                code::JIT_COMPILER_NOT_FOUND,
                format!("running {}: {e}", ptxas.display()),
            )
        })?;
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
        let object = std::fs::read(&output);
        let _ = std::fs::remove_file(&output);
        if !run.status.success() {
            return Err(failed(log));
        }
        let object = object.map_err(|e| failed(format!("reading {}: {e}", output.display())))?;
        self.trace(&format!("link {arch} {} bytes", object.len()));
        Ok((object, log))
    }

    pub fn unload_module(&self, handle: u64) -> Res {
        self.working()?;
        let m = lock(&self.objects)
            .modules
            .remove(&handle)
            .ok_or(code::INVALID_HANDLE)?;
        m.unloaded.store(true, Ordering::SeqCst);
        self.trace(&format!("unload {handle:#x}"));
        Ok(())
    }

    pub fn get_function(&self, module: u64, name: &str) -> Res<u64> {
        let m = lock(&self.objects)
            .modules
            .get(&module)
            .cloned()
            .ok_or(code::INVALID_HANDLE)?;
        m.device.sticky()?;
        let kernel = m.module.kernel(name).ok_or(code::NOT_FOUND)?;
        let default_dynamic = (48u32 << 10).saturating_sub(kernel.static_shared_bytes);
        let handle = self.handle();
        lock(&self.objects).functions.insert(
            handle,
            Arc::new(Function {
                module: m.clone(),
                name: name.to_string(),
                max_dynamic_shared: AtomicU32::new(default_dynamic),
                carveout: AtomicI32::new(-1),
            }),
        );
        Ok(handle)
    }

    fn function(&self, handle: u64) -> Res<Arc<Function>> {
        let f = lock(&self.objects)
            .functions
            .get(&handle)
            .cloned()
            .ok_or(code::INVALID_HANDLE)?;
        if f.module.unloaded.load(Ordering::SeqCst) {
            return Err(code::INVALID_HANDLE);
        }
        f.module.device.sticky()?;
        Ok(f)
    }

    pub fn function_attribute(&self, handle: u64, attribute: i32) -> Res<i32> {
        let f = self.function(handle)?;
        let k = f
            .module
            .module
            .kernel(&f.name)
            .ok_or(code::INVALID_HANDLE)?;
        let cc = self.config.cc;
        Ok(match attribute {
            0 => k.maxntid.map_or(1024, |(x, y, z)| (x * y * z).min(1024)) as i32,
            1 => k.static_shared_bytes as i32,
            2 => 0,
            3 => k.local_bytes_per_thread as i32,
            4 => 32,
            5 => (f.module.version.0 * 10 + f.module.version.1) as i32,
            6 => (cc.0 * 10 + cc.1) as i32,
            7 => 0,
            8 => f.max_dynamic_shared.load(Ordering::SeqCst) as i32,
            9 => f.carveout.load(Ordering::SeqCst),
            _ => return Err(code::INVALID_VALUE),
        })
    }

    pub fn set_function_attribute(&self, handle: u64, attribute: i32, value: i32) -> Res {
        let f = self.function(handle)?;
        let k = f
            .module
            .module
            .kernel(&f.name)
            .ok_or(code::INVALID_HANDLE)?;
        match attribute {
            8 => {
                let optin = self.config.shared_bytes().1;
                let v = u32::try_from(value).map_err(|_| code::INVALID_VALUE)?;
                if v + k.static_shared_bytes > optin {
                    return Err(code::INVALID_VALUE);
                }
                f.max_dynamic_shared.store(v, Ordering::SeqCst);
            }
            9 => {
                if !(-1..=100).contains(&value) {
                    return Err(code::INVALID_VALUE);
                }
                f.carveout.store(value, Ordering::SeqCst);
            }
            _ => return Err(code::INVALID_VALUE),
        }
        self.trace(&format!("attribute {} {attribute} {value}", f.name));
        Ok(())
    }

    /// Blocks of `block_threads` threads with `dynamic_shared` bytes one SM holds at once.
    pub fn occupancy(&self, handle: u64, block_threads: i32, dynamic_shared: usize) -> Res<i32> {
        let f = self.function(handle)?;
        let k = f
            .module
            .module
            .kernel(&f.name)
            .ok_or(code::INVALID_HANDLE)?;
        let threads = u32::try_from(block_threads).map_err(|_| code::INVALID_VALUE)?;
        let limit = k.maxntid.map_or(1024, |(x, y, z)| x * y * z).min(1024);
        // a block that `.reqntid` forbids could not be launched: none of it fits (held strictly;
        // whatever a real driver answers here, a caller must not plan on it)
        let required = k.reqntid.is_some_and(|(x, y, z)| x * y * z != threads);
        if threads == 0 || threads > limit || required {
            return Ok(0);
        }
        let by_threads = self.config.max_threads_per_sm() / threads;
        let shared = u64::from(k.static_shared_bytes) + dynamic_shared as u64;
        let by_shared = u64::from(self.config.shared_bytes().0)
            .checked_div(shared)
            .map_or(u32::MAX, |n| n as u32);
        Ok(by_threads.min(by_shared).min(self.config.blocks_per_sm) as i32)
    }

    /// `cuLaunchKernel`: checks the launch now, copies the arguments (as the driver does), and
    /// queues the kernel.
    ///
    /// # Safety
    /// `params` must hold one pointer per kernel parameter, each to a value of its size.
    pub unsafe fn launch(
        &self,
        handle: u64,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        dynamic_shared: u32,
        stream: u64,
        params: *const *const u8,
    ) -> Res {
        let d = self.working()?;
        let f = self.function(handle)?;
        let k = f
            .module
            .module
            .kernel(&f.name)
            .ok_or(code::INVALID_HANDLE)?;
        let threads = u64::from(block.0) * u64::from(block.1) * u64::from(block.2);
        let grid_ok = (1..=i32::MAX as u32).contains(&grid.0)
            && (1..=65535).contains(&grid.1)
            && (1..=65535).contains(&grid.2);
        if !grid_ok || threads == 0 || threads > 1024 || block.2 > 64 {
            return Err(code::INVALID_VALUE);
        }
        if dynamic_shared > f.max_dynamic_shared.load(Ordering::SeqCst) {
            return Err(code::INVALID_VALUE);
        }
        refused_by_entry(k, grid, block)?;
        if !k.params.is_empty() && params.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let mut args = Vec::with_capacity(k.params.len());
        for (i, p) in k.params.iter().enumerate() {
            // SAFETY: the caller's promise: one pointer per parameter, to `p.bytes` bytes.
            let value = unsafe { *params.add(i) };
            if value.is_null() {
                return Err(code::INVALID_VALUE);
            }
            let raw = unsafe { std::slice::from_raw_parts(value, p.bytes as usize) };
            args.push(param_arg(p, raw).ok_or(code::INVALID_VALUE)?);
        }
        let s = self.stream(stream, d)?;
        self.trace(&format!(
            "launch {} grid {}x{}x{} block {}x{}x{} shared {} carveout {}",
            f.name,
            grid.0,
            grid.1,
            grid.2,
            block.0,
            block.1,
            block.2,
            dynamic_shared,
            f.carveout.load(Ordering::SeqCst)
        ));
        if self.trace.is_some() {
            self.trace(&format!("args {} {}", f.name, trace_args(&args)));
        }
        // The clock it will run at: the next step of a falling clock, in the order queued.
        let clock_mhz = self
            .config
            .launch_clock_mhz(d.launches.fetch_add(1, Ordering::SeqCst));
        if self.config.clock_fall.is_some() {
            self.trace(&format!("clock {} {clock_mhz}", f.name));
        }
        s.push(Op::Kernel {
            function: f,
            grid,
            block,
            dynamic_shared,
            args,
            clock_mhz,
        });
        Ok(())
    }

    // ---- streams -----------------------------------------------------------------------------

    pub fn create_stream(&self, flags: u32) -> Res<u64> {
        let d = self.working()?;
        let handle = self.handle();
        let s = Stream::start(handle, d.clone(), flags & 1 == 0, false);
        lock(&self.objects).streams.insert(handle, s);
        Ok(handle)
    }

    /// The stream behind a handle; 0 (and the legacy/per-thread handles 1, 2) is `d`'s legacy
    /// stream.
    fn stream(&self, handle: u64, d: &Arc<Device>) -> Res<Arc<Stream>> {
        if handle <= 2 {
            return Ok(d
                .legacy
                .get_or_init(|| Stream::start(handle, d.clone(), false, true))
                .clone());
        }
        let s = lock(&self.objects)
            .streams
            .get(&handle)
            .cloned()
            .ok_or(code::INVALID_HANDLE)?;
        if !Arc::ptr_eq(&s.device, d) {
            return Err(code::INVALID_CONTEXT);
        }
        Ok(s)
    }

    /// Queues a library routine's `work` on `stream` of the current context (the context must
    /// be working: no sticky error).
    pub fn enqueue_host(&self, stream: u64, what: String, work: HostWork) -> Res {
        let d = self.working()?;
        let s = self.stream(stream, d)?;
        self.trace(&format!("library {what}"));
        s.push(Op::Host { what, work });
        Ok(())
    }

    pub fn stream_of_current(&self, handle: u64) -> Res<Arc<Stream>> {
        let d = self.current()?;
        self.stream(handle, d)
    }

    pub fn destroy_stream(&self, handle: u64) -> Res {
        self.current()?;
        let s = lock(&self.objects)
            .streams
            .remove(&handle)
            .ok_or(code::INVALID_HANDLE)?;
        s.close();
        Ok(())
    }

    /// Every stream of `d`, for `cuCtxSynchronize` and the legacy stream's implicit waits.
    fn streams_of(&self, d: &Arc<Device>) -> Vec<Arc<Stream>> {
        lock(&self.objects)
            .streams
            .values()
            .filter(|s| Arc::ptr_eq(&s.device, d))
            .cloned()
            .chain(d.legacy.get().cloned())
            .collect()
    }

    pub fn synchronize_context(&self) -> Res {
        let d = self.current()?;
        for s in self.streams_of(d) {
            s.synchronize()?;
        }
        d.sticky()
    }

    // ---- events ------------------------------------------------------------------------------

    pub fn create_event(&self, flags: u32) -> Res<u64> {
        self.working()?;
        let handle = self.handle();
        lock(&self.objects).events.insert(
            handle,
            Arc::new(Event {
                // CU_EVENT_DISABLE_TIMING = 2
                timing: flags & 2 == 0,
                state: Mutex::new(EventState::default()),
                cv: Condvar::new(),
            }),
        );
        Ok(handle)
    }

    pub fn event(&self, handle: u64) -> Res<Arc<Event>> {
        lock(&self.objects)
            .events
            .get(&handle)
            .cloned()
            .ok_or(code::INVALID_HANDLE)
    }

    pub fn destroy_event(&self, handle: u64) -> Res {
        lock(&self.objects)
            .events
            .remove(&handle)
            .map(|_| ())
            .ok_or(code::INVALID_HANDLE)
    }

    pub fn record(&self, event: u64, stream: u64) -> Res {
        let d = self.working()?;
        let e = self.event(event)?;
        let s = self.stream(stream, d)?;
        let generation = {
            let mut st = lock(&e.state);
            st.recorded += 1;
            st.recorded
        };
        s.push(Op::Record {
            event: e,
            generation,
        });
        Ok(())
    }

    pub fn query(&self, event: u64) -> Res {
        let d = self.current()?;
        d.sticky()?;
        let e = self.event(event)?;
        let st = lock(&e.state);
        if st.done == st.recorded {
            Ok(())
        } else {
            Err(code::NOT_READY)
        }
    }

    pub fn event_synchronize(&self, event: u64) -> Res {
        let d = self.current()?.clone();
        let e = self.event(event)?;
        let mut st = lock(&e.state);
        let wanted = st.recorded;
        while st.done < wanted {
            d.sticky()?;
            st =
                e.cv.wait_timeout(st, Duration::from_millis(5))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
        }
        d.sticky()
    }

    pub fn elapsed_ms(&self, start: u64, end: u64) -> Res<f32> {
        let d = self.current()?;
        d.sticky()?;
        let (a, b) = (self.event(start)?, self.event(end)?);
        if !a.timing || !b.timing {
            return Err(code::INVALID_HANDLE);
        }
        let (sa, sb) = (lock(&a.state), lock(&b.state));
        if sa.recorded == 0 || sb.recorded == 0 {
            return Err(code::INVALID_HANDLE);
        }
        if sa.done < sa.recorded || sb.done < sb.recorded {
            return Err(code::NOT_READY);
        }
        match (sa.at, sb.at) {
            (Some(t0), Some(t1)) => {
                let ms = if t1 >= t0 {
                    (t1 - t0).as_secs_f64() * 1e3
                } else {
                    -((t0 - t1).as_secs_f64() * 1e3)
                };
                Ok(ms as f32)
            }
            _ => Err(code::INVALID_HANDLE),
        }
    }

    /// For `cuStreamWaitEvent`: the event and the generation its last record will complete.
    pub fn wait_event(&self, stream: u64, event: u64) -> Res {
        let d = self.working()?;
        let e = self.event(event)?;
        let generation = lock(&e.state).recorded;
        let s = self.stream(stream, d)?;
        s.push(Op::WaitEvent {
            event: e,
            generation,
        });
        Ok(())
    }
}

/// A kernel argument from the bytes the caller's pointer points at, by the parameter's type.
/// A launch's arguments as the trace writes them, space-separated: 64-bit values (addresses)
/// in hex, 32-bit ones in decimal, floats as numbers, a tensor map as `map@` its global
/// address.
fn trace_args(args: &[Arg]) -> String {
    args.iter()
        .map(|a| match a {
            Arg::U64(v) => format!("{v:#x}"),
            Arg::U32(v) => v.to_string(),
            Arg::F32(v) => v.to_string(),
            Arg::F64(v) => v.to_string(),
            Arg::Bytes(b) => <&[u8; 128]>::try_from(b.as_slice())
                .ok()
                .and_then(|b| ptxsim::TensorMap::decode(b).ok())
                .map_or_else(
                    || format!("bytes{}", b.len()),
                    |m| format!("map@{:#x}", m.base),
                ),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a driver refuses at `cuLaunchKernel` for the entry's own directives, where the
/// interpreter would refuse it only when the kernel runs (a sticky fault, which a real driver
/// does not give for these): a block other than `.reqntid`'s or above `.maxntid`'s threads
/// (`CUDA_ERROR_INVALID_VALUE`), and a grid that is not a whole number of `.reqnctapercluster`'s
/// clusters, or a cluster above 8 CTAs (`CUDA_ERROR_INVALID_CLUSTER_SIZE`).
fn refused_by_entry(k: &ptxsim::Kernel, grid: (u32, u32, u32), block: (u32, u32, u32)) -> Res {
    let threads = u64::from(block.0) * u64::from(block.1) * u64::from(block.2);
    if k.reqntid.is_some_and(|r| r != block)
        || k.maxntid
            .is_some_and(|(x, y, z)| threads > u64::from(x) * u64::from(y) * u64::from(z))
    {
        return Err(code::INVALID_VALUE);
    }
    if let Some((x, y, z)) = k.reqnctapercluster {
        let ctas = u64::from(x) * u64::from(y) * u64::from(z);
        let whole = x > 0
            && y > 0
            && z > 0
            && grid.0.is_multiple_of(x)
            && grid.1.is_multiple_of(y)
            && grid.2.is_multiple_of(z);
        if !whole || ctas > 8 {
            return Err(code::INVALID_CLUSTER_SIZE);
        }
    }
    Ok(())
}

fn param_arg(p: &ptxsim::KernelParam, raw: &[u8]) -> Option<Arg> {
    use ptxsim::Ty;
    if p.array.is_some() {
        return Some(Arg::Bytes(raw.to_vec()));
    }
    Some(match (p.ty, raw.len()) {
        (Ty::F32, 4) => Arg::F32(f32::from_le_bytes(raw.try_into().ok()?)),
        (Ty::F64, 8) => Arg::F64(f64::from_le_bytes(raw.try_into().ok()?)),
        (_, 4) => Arg::U32(u32::from_le_bytes(raw.try_into().ok()?)),
        (_, 8) => Arg::U64(u64::from_le_bytes(raw.try_into().ok()?)),
        _ => return None,
    })
}

/// Why the JIT would refuse a module's `.target` on a device of compute capability `cc`.
fn target_refused(target: &str, cc: (u32, u32)) -> Option<String> {
    let digits: String = target
        .strip_prefix("sm_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let n: u32 = digits.parse().ok()?;
    let wanted = (n / 10, n % 10);
    let suffix = &target["sm_".len() + digits.len()..];
    if !suffix.is_empty() && wanted != cc {
        // sm_90a and its kind run on that exact architecture only
        return Some(format!(
            "{target} code runs only on compute capability {}.{}, this device is {}.{}",
            wanted.0, wanted.1, cc.0, cc.1
        ));
    }
    (wanted > cc).then(|| {
        format!(
            "SM version specified by .target ({target}) is higher than this device's ({}.{})",
            cc.0, cc.1
        )
    })
}

fn release_memory(d: &Device, ptr: u64, bytes: u64) {
    if lock(&d.mem).free(DevicePtr(ptr)).is_ok() {
        d.used.fetch_sub(bytes, Ordering::SeqCst);
    }
}

// ---- streams and their work -------------------------------------------------------------

enum HostBytes {
    Staged(Vec<u8>),
    /// A pinned host address, read when the copy runs.
    Pinned(usize),
}

enum Op {
    Kernel {
        function: Arc<Function>,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        dynamic_shared: u32,
        args: Vec<Arg>,
        /// The SM clock it runs at (`Config::launch_clock_mhz`).
        clock_mhz: u32,
    },
    HtoD {
        dst: u64,
        data: HostBytes,
        bytes: usize,
    },
    DtoH {
        dst: usize,
        src: u64,
        bytes: usize,
    },
    DtoD {
        dst: u64,
        src: u64,
        bytes: usize,
    },
    /// From one device's memory to another's.
    Peer {
        dst: u64,
        to: Arc<Device>,
        src: u64,
        from: Arc<Device>,
        bytes: usize,
    },
    Memset {
        dst: u64,
        value: u32,
        width: usize,
        count: usize,
    },
    Free {
        ptr: u64,
        bytes: u64,
    },
    Record {
        event: Arc<Event>,
        generation: u64,
    },
    WaitEvent {
        event: Arc<Event>,
        generation: u64,
    },
    /// The legacy stream waits for the work queued on blocking streams before it.
    AwaitStreams(Vec<(Arc<Stream>, u64)>),
    /// Work a simulated library (cuBLAS, see [`crate::cublas`]) queued: run on the device's
    /// memory when the stream reaches it; an error is a fault of the device.
    Host {
        what: String,
        work: HostWork,
    },
}

/// A library routine's work on device memory, run in stream order: `Err` says what it touched
/// that it may not (a fault, `CUDA_ERROR_ILLEGAL_ADDRESS`, as from a kernel).
pub type HostWork = Box<dyn FnOnce(&mut Memory) -> Result<(), String> + Send>;

#[derive(Default)]
struct StreamState {
    ops: VecDeque<Op>,
    submitted: u64,
    completed: u64,
    closed: bool,
}

pub struct Stream {
    device: Arc<Device>,
    blocking: bool,
    legacy: bool,
    state: Mutex<StreamState>,
    cv: Condvar,
}

#[derive(Default)]
struct EventState {
    recorded: u64,
    done: u64,
    at: Option<Instant>,
}

pub struct Event {
    timing: bool,
    state: Mutex<EventState>,
    cv: Condvar,
}

impl Stream {
    fn start(handle: u64, device: Arc<Device>, blocking: bool, legacy: bool) -> Arc<Stream> {
        let s = Arc::new(Stream {
            device,
            blocking,
            legacy,
            state: Mutex::new(StreamState::default()),
            cv: Condvar::new(),
        });
        let worker = s.clone();
        std::thread::Builder::new()
            .name(format!("simcuda-stream-{handle:#x}"))
            .spawn(move || worker.work())
            .expect("simcuda: starting a stream worker");
        s
    }

    /// Queues `op`; returns its ticket (the completed count at which it has run).
    fn push(&self, op: Op) -> u64 {
        if self.legacy {
            let before: Vec<(Arc<Stream>, u64)> = driver()
                .streams_of(&self.device)
                .into_iter()
                .filter(|s| s.blocking && !s.legacy)
                .map(|s| {
                    let submitted = lock(&s.state).submitted;
                    (s, submitted)
                })
                .collect();
            if !before.is_empty() {
                self.enqueue(Op::AwaitStreams(before));
            }
        }
        self.enqueue(op)
    }

    fn enqueue(&self, op: Op) -> u64 {
        let mut st = lock(&self.state);
        st.ops.push_back(op);
        st.submitted += 1;
        self.cv.notify_all();
        st.submitted
    }

    fn close(&self) {
        lock(&self.state).closed = true;
        self.cv.notify_all();
    }

    /// Waits until the op with `ticket` has run, or the context has a sticky error.
    fn wait_for(&self, ticket: u64) -> Res {
        let mut st = lock(&self.state);
        while st.completed < ticket {
            self.device.sticky()?;
            st = self
                .cv
                .wait_timeout(st, Duration::from_millis(5))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        self.device.sticky()
    }

    pub fn synchronize(&self) -> Res {
        let ticket = lock(&self.state).submitted;
        self.wait_for(ticket)
    }

    pub fn query(&self) -> Res {
        self.device.sticky()?;
        let st = lock(&self.state);
        if st.completed == st.submitted {
            Ok(())
        } else {
            Err(code::NOT_READY)
        }
    }

    fn work(self: Arc<Self>) {
        loop {
            let op = {
                let mut st = lock(&self.state);
                loop {
                    if let Some(op) = st.ops.pop_front() {
                        break op;
                    }
                    if st.closed {
                        return;
                    }
                    st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            // After a fault the context runs nothing more; the work is dropped.
            if self.device.sticky().is_ok() {
                let waits = matches!(op, Op::AwaitStreams(_));
                if !waits {
                    self.device.begin_work();
                }
                self.run(op);
                if !waits {
                    self.device.end_work();
                }
            }
            let mut st = lock(&self.state);
            st.completed += 1;
            self.cv.notify_all();
        }
    }

    fn run(&self, op: Op) {
        let d = &self.device;
        match op {
            Op::Kernel {
                function,
                grid,
                block,
                dynamic_shared,
                args,
                clock_mhz,
            } => {
                d.clock_mhz.store(clock_mhz, Ordering::SeqCst);
                if function.module.unloaded.load(Ordering::SeqCst) {
                    d.fault(
                        code::LAUNCH_FAILED,
                        &format!("{} ran after its module was unloaded", function.name),
                    );
                    return;
                }
                let settings = &driver().config;
                if settings.fault.as_deref() == Some(function.name.as_str()) {
                    d.fault(
                        settings.fault_code,
                        &format!("{}: a fault injected by SIMCUDA fault=", function.name),
                    );
                    return;
                }
                if settings.hang.as_deref() == Some(function.name.as_str()) {
                    if let Some(secs) = settings.watchdog_secs {
                        // a display's watchdog ends it, and the context with it
                        std::thread::sleep(Duration::from_secs_f64(secs));
                        d.fault(
                            code::LAUNCH_TIMEOUT,
                            &format!("{}: ended by the watchdog after {secs} s", function.name),
                        );
                        return;
                    }
                    // a kernel that never ends (SIMCUDA hang=): its stream waits forever
                    loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    }
                }
                let mut config = ptxsim::LaunchConfig::new(grid, block, dynamic_shared);
                // A kernel that never ends runs forever, as on a GPU.
                config.max_warp_instructions = u64::MAX;
                config.clock_mhz = clock_mhz;
                config.deadline = settings
                    .watchdog_secs
                    .map(|secs| std::time::Instant::now() + Duration::from_secs_f64(secs));
                // The kernels' races are the interpreter tests' business; here the shadow
                // memory would only slow every launch down.
                config.check_global_races = false;
                // A kernel made to leave a wrong word (SIMCUDA wrong=): the allocations its
                // parameters start, which its launch may change.
                let watched: Vec<(u64, usize)> = if settings.wrong.contains(&function.name) {
                    let allocs = lock(&d.allocs);
                    args.iter()
                        .filter_map(|a| match a {
                            Arg::U64(ptr) => Some((*ptr, *allocs.get(ptr)? as usize)),
                            _ => None,
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let mut mem = lock(&d.mem);
                let before: Vec<Vec<u8>> = watched
                    .iter()
                    .map(|&(ptr, bytes)| mem.read::<u8>(DevicePtr(ptr), bytes).unwrap_or_default())
                    .collect();
                // Mapped host memory as the kernel starts: copied into its mirrors.
                let mapped: Vec<(Mapped, Vec<u8>)> = lock(&d.mapped)
                    .values()
                    .map(|m| {
                        // SAFETY: mapped pinned memory stays allocated until `cuMemFreeHost`,
                        // which the caller must not call while a kernel may use it.
                        let now =
                            unsafe { std::slice::from_raw_parts(m.host as *const u8, m.bytes) };
                        (*m, now.to_vec())
                    })
                    .collect();
                for (m, bytes) in &mapped {
                    let _ = mem.write(DevicePtr(m.mirror), bytes);
                }
                let outcome =
                    function
                        .module
                        .module
                        .launch_with(&function.name, &config, &args, &mut mem);
                // ... and the bytes the kernel changed, back to the host.
                for (m, before) in &mapped {
                    let Ok(after) = mem.read::<u8>(DevicePtr(m.mirror), m.bytes) else {
                        continue;
                    };
                    for (i, (a, b)) in after.iter().zip(before).enumerate() {
                        if a != b {
                            // SAFETY: as above; `i` < the allocation's bytes.
                            unsafe { *(m.host as *mut u8).add(i) = *a };
                        }
                    }
                }
                if outcome.is_ok() && !watched.is_empty() {
                    if let Some(at) = spoil_output(&mut mem, &watched, &before) {
                        driver().trace(&format!("wrong {} {at:#x}", function.name));
                    }
                }
                drop(mem);
                if let Err(e) = outcome {
                    d.fault(classify(&e), &format!("{}: {e}", function.name));
                }
            }
            Op::HtoD { dst, data, bytes } => {
                let bytes_in: Vec<u8> = match data {
                    HostBytes::Staged(v) => v,
                    // SAFETY: pinned memory stays allocated until `cuMemFreeHost`, which the
                    // caller must not call before the copy has run (as with a real driver).
                    HostBytes::Pinned(p) => {
                        unsafe { std::slice::from_raw_parts(p as *const u8, bytes) }.to_vec()
                    }
                };
                if lock(&d.mem).write(DevicePtr(dst), &bytes_in).is_err() {
                    d.fault(code::ILLEGAL_ADDRESS, "a copy to freed device memory");
                }
            }
            Op::DtoH { dst, src, bytes } => match lock(&d.mem).read::<u8>(DevicePtr(src), bytes) {
                // SAFETY: the caller keeps `dst` writable until the copy has run.
                Ok(v) => unsafe {
                    std::ptr::copy_nonoverlapping(v.as_ptr(), dst as *mut u8, bytes)
                },
                Err(_) => d.fault(code::ILLEGAL_ADDRESS, "a copy from freed device memory"),
            },
            Op::DtoD { dst, src, bytes } => {
                let mut mem = lock(&d.mem);
                let ok = mem
                    .read::<u8>(DevicePtr(src), bytes)
                    .and_then(|v| mem.write(DevicePtr(dst), &v));
                drop(mem);
                if ok.is_err() {
                    d.fault(code::ILLEGAL_ADDRESS, "a device copy touching freed memory");
                }
            }
            Op::Peer {
                dst,
                to,
                src,
                from,
                bytes,
            } => {
                // one device's memory locked at a time
                let data = lock(&from.mem).read::<u8>(DevicePtr(src), bytes);
                let ok = data.and_then(|v| lock(&to.mem).write(DevicePtr(dst), &v));
                if ok.is_err() {
                    d.fault(code::ILLEGAL_ADDRESS, "a peer copy touching freed memory");
                }
            }
            Op::Memset {
                dst,
                value,
                width,
                count,
            } => {
                let pattern = &value.to_le_bytes()[..width];
                let data: Vec<u8> = pattern
                    .iter()
                    .copied()
                    .cycle()
                    .take(width * count)
                    .collect();
                if lock(&d.mem).write(DevicePtr(dst), &data).is_err() {
                    d.fault(code::ILLEGAL_ADDRESS, "a memset of freed device memory");
                }
            }
            Op::Free { ptr, bytes } => release_memory(d, ptr, bytes),
            Op::Record { event, generation } => {
                let mut st = lock(&event.state);
                st.done = st.done.max(generation);
                st.at = Some(Instant::now());
                event.cv.notify_all();
            }
            Op::WaitEvent { event, generation } => {
                let mut st = lock(&event.state);
                while st.done < generation && d.sticky().is_ok() {
                    st = event
                        .cv
                        .wait_timeout(st, Duration::from_millis(5))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
            Op::AwaitStreams(before) => {
                for (s, ticket) in before {
                    let _ = s.wait_for(ticket);
                }
            }
            Op::Host { what, work } => {
                let routine = what.split_whitespace().next().unwrap_or_default();
                if driver().config.hang.as_deref() == Some(routine) {
                    // a library routine that never ends (SIMCUDA hang=cublasGemmEx, say)
                    loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    }
                }
                let outcome = work(&mut lock(&d.mem));
                if let Err(e) = outcome {
                    d.fault(code::ILLEGAL_ADDRESS, &format!("{what}: {e}"));
                }
            }
        }
    }
}

/// The CUresult a GPU would report for what the interpreter refused while running a kernel.
/// Leaves one word of a launch's output wrong (SIMCUDA `wrong=`, the config module's table has
/// the rule): the first of the `watched` allocations (start, bytes) whose bytes are no longer
/// `before`'s gets bit 22 flipped in the low 4 bytes of its 8-byte word at byte
/// 8·⌊bytes/16⌋. Returns the word's address; `None` where the launch changed no allocation, or
/// the one it changed holds under 4 bytes.
fn spoil_output(mem: &mut Memory, watched: &[(u64, usize)], before: &[Vec<u8>]) -> Option<u64> {
    let (ptr, bytes) = watched
        .iter()
        .zip(before)
        .find_map(|(&(ptr, bytes), was)| {
            let now = mem.read::<u8>(DevicePtr(ptr), bytes).ok()?;
            (now != *was).then_some((ptr, bytes))
        })?;
    if bytes < 4 {
        return None;
    }
    let at = ptr + 8 * (bytes as u64 / 16);
    let word = mem.read::<u32>(DevicePtr(at), 1).ok()?[0];
    mem.write(DevicePtr(at), &[word ^ (1 << 22)]).ok()?;
    Some(at)
}

fn classify(e: &ptxsim::Error) -> u32 {
    let text = e.to_string();
    if text.contains(ptxsim::WATCHDOG_ENDED) {
        code::LAUNCH_TIMEOUT
    } else if text.contains("misaligned") {
        code::MISALIGNED_ADDRESS
    } else if text.contains("out-of-bounds")
        || text.contains("is not shared memory")
        || matches!(e, ptxsim::Error::Memory(_))
    {
        code::ILLEGAL_ADDRESS
    } else {
        code::LAUNCH_FAILED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_the_jit_refuses() {
        assert!(target_refused("sm_80", (8, 9)).is_none());
        assert!(target_refused("sm_89", (8, 9)).is_none());
        assert!(target_refused("sm_89", (8, 0)).unwrap().contains("higher"));
        assert!(target_refused("sm_90a", (9, 0)).is_none());
        assert!(target_refused("sm_90a", (10, 0)).unwrap().contains("only"));
        assert!(target_refused("sm_52", (8, 0)).is_none());
    }

    /// `wrong=`'s rule: the first watched allocation the launch changed gets bit 22 of the word
    /// at byte 8·⌊bytes/16⌋ flipped (f32 element 2·⌊n/4⌋, the low half of f64 element ⌊n/2⌋);
    /// an input it only read, listed first, is passed over; a launch that changed nothing is
    /// left alone.
    #[test]
    fn a_wrong_kernel_spoils_the_middle_word_of_the_first_array_it_changed() {
        let mut mem = Memory::new();
        let input = mem.alloc_from(&[1.0f32; 10]);
        let out = mem.alloc_from(&[0.0f32; 10]);
        let wide = mem.alloc_from(&[0.0f64; 5]);
        let watched = [(input.0, 40), (out.0, 40), (wide.0, 40)];
        let snapshot = |mem: &Memory| -> Vec<Vec<u8>> {
            watched
                .iter()
                .map(|&(p, b)| mem.read::<u8>(DevicePtr(p), b).unwrap())
                .collect()
        };
        let before = snapshot(&mem);
        assert_eq!(spoil_output(&mut mem, &watched, &before), None);
        // the "launch": both outputs written
        mem.write(out, &[2.0f32; 10]).unwrap();
        mem.write(wide, &[2.0f64; 5]).unwrap();
        let at = spoil_output(&mut mem, &watched, &before).unwrap();
        assert_eq!(at, out.0 + 16);
        let got = mem.read::<f32>(out, 10).unwrap();
        let wrong: Vec<usize> = (0..10).filter(|&i| got[i] != 2.0).collect();
        assert_eq!(wrong, [4], "element 2·⌊10/4⌋: {got:?}");
        assert_eq!(got[4], 3.0, "2.0's top mantissa bit set");
        assert_eq!(mem.read::<f32>(input, 10).unwrap(), [1.0; 10]);
        assert_eq!(
            mem.read::<f64>(wide, 5).unwrap(),
            [2.0; 5],
            "only the first changed"
        );
        // f64: element ⌊5/2⌋, a small but exact difference
        let watched = [(wide.0, 40)];
        let before = vec![vec![0; 40]];
        assert_eq!(spoil_output(&mut mem, &watched, &before), Some(wide.0 + 16));
        let got = mem.read::<f64>(wide, 5).unwrap();
        assert_eq!(got[2], 2.0 + 2f64.powi(-29), "{got:?}");
    }

    /// A launch that an entry's `.reqntid`, `.maxntid` or `.reqnctapercluster` forbids fails at
    /// the call, with the code a driver gives, and leaves the context working: the same entries
    /// launched as they declare then run. (The interpreter alone would refuse such a launch
    /// only when the kernel runs, as a sticky fault.) The one test here that makes the
    /// process's driver.
    #[test]
    fn a_launch_its_entry_forbids_is_refused_at_the_call() {
        let config = Config {
            cc: (9, 0),
            ..Config::default()
        };
        let d = DRIVER
            .get_or_init(|| Ok(Driver::new(config)))
            .as_ref()
            .unwrap();
        let ctx = d.retain(0).unwrap();
        d.set_current(ctx).unwrap();
        let ptx = "\
.version 7.8
.target sm_90
.address_size 64
.visible .entry req() .reqntid 64 { ret; }
.visible .entry most() .maxntid 64, 1, 1 { ret; }
.visible .entry pair() .reqnctapercluster 2, 1, 1 { ret; }
";
        let module = d.load_module(ptx).unwrap();
        let f = |name: &str| d.get_function(module, name).unwrap();
        let launch = |name: &str, grid: u32, block: (u32, u32, u32)| {
            // SAFETY: the entries take no parameters.
            unsafe { d.launch(f(name), (grid, 1, 1), block, 0, 0, std::ptr::null()) }
        };
        assert_eq!(launch("req", 1, (32, 1, 1)), Err(code::INVALID_VALUE));
        assert_eq!(
            launch("req", 1, (32, 2, 1)),
            Err(code::INVALID_VALUE),
            "64 threads, not 64 x 1"
        );
        assert_eq!(launch("most", 1, (65, 1, 1)), Err(code::INVALID_VALUE));
        assert_eq!(
            launch("pair", 3, (32, 1, 1)),
            Err(code::INVALID_CLUSTER_SIZE)
        );
        assert_eq!(
            d.synchronize_context(),
            Ok(()),
            "no launch was queued but valid ones"
        );
        assert_eq!(launch("req", 1, (64, 1, 1)), Ok(()));
        assert_eq!(launch("most", 2, (64, 1, 1)), Ok(()));
        assert_eq!(launch("pair", 4, (32, 1, 1)), Ok(()));
        assert_eq!(d.synchronize_context(), Ok(()));
        assert!(code::describe(code::INVALID_CLUSTER_SIZE).is_some());
    }
}
