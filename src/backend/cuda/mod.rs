//! The CUDA backend: hand-written PTX (kernels/) loaded through the driver API with cudarc, timed
//! with CUDA events on one stream.
//!
//! cudarc is built with dynamic loading, so roofprobe builds with no CUDA toolkit and finds
//! `libcuda` at run time. A missing library panics inside cudarc, so [`device_count`] probes
//! for it first, and every entry into the driver from here runs under [`guard`] (or, once a
//! device is open, [`CudaBackend`]'s own `call`), which turns a driver error into an [`Error`]
//! carrying the driver's own message and a cudarc panic (a stub driver lacking a symbol, say)
//! into an error instead of a crash.
//!
//! What a launch passes is not written here: [`args::plan`] describes each case's arrays,
//! argument list and check as data, and `GpuCase` allocates those arrays and pushes exactly
//! those arguments, in that order and at those widths. [`plan`] chooses the cases and their
//! sizes. Both are pure, and tested against the PTX without a GPU.
//!
//! Two failures end a device's run, not the process. A kernel fault (illegal address,
//! misaligned access, trap, …) leaves the CUDA context in a sticky error state in which every
//! later call fails; and a kernel that does not finish within [`KERNEL_DEADLINE`] is presumed
//! runaway. After either, every later call on the device fails at once with
//! [`Error::DeviceLost`] naming the first error, instead of each case reporting the same driver
//! error as its own, or the run hanging; and after a runaway kernel the device's driver objects
//! are leaked, not freed, because freeing them could wait for that kernel forever (the process
//! exit ends it).
//!
//! Clocks, power, temperature and throttle reasons come from NVML (also loaded at run time) when
//! it is there; without it those columns stay empty. Nothing here changes any device setting.

use self::args::{Arg, Entry, Launch, ModuleId, Role, BLOCK, MAX_GRID};
use self::plan::DeviceModel;
use super::{Backend, PlannedCase, PreparedCase, SizeRequest};
use crate::cases::{Case, Family, Verdict};
use crate::device::{BackendKind, CacheLevel, Conditions, DeviceInfo, Identity};
use crate::{Error, Result};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags, CUfunction_attribute, CUresult};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError,
    LaunchArgs, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Once, OnceLock};
use std::time::{Duration, Instant};

// gemm (branch gemm): the GEMM rows' driver code (dynamic shared memory, cuBLAS) lives in its
// own file, as a child of this module.
pub mod args;
mod capacity;
pub mod cublas;
mod gemm;
pub mod jit;
mod launch;
mod link;
pub mod loading;
pub mod plan;
use crate::cases::launch as launch_rows;

/// The most one batch of launches may take before its kernel is presumed runaway: the deadline
/// of a case's first batch, when nothing is known of its launches yet, and the cap on the later
/// ones ([`batch_deadline`]). No launch of a correct run comes near it (samples last about
/// 10 ms, one peak launch about 2 ms, the largest GEMM a fraction of a second); a kernel that
/// reads its loop count from the wrong bits can run for hours. `run --kernel-timeout` sets it.
pub const KERNEL_DEADLINE: Duration = Duration::from_secs(10);

/// A batch may take this many times what its launches took so far before it is presumed
/// runaway …
pub const DEADLINE_FACTOR: f64 = 20.0;

/// … but never less than this, so another process's kernels on the GPU or a driver hiccup are
/// not taken for a runaway kernel.
pub const DEADLINE_FLOOR: Duration = Duration::from_secs(2);

/// How long a batch of `reps` launches may run: [`DEADLINE_FACTOR`] × what they should take at
/// `per_launch_secs` (the case's last batch), between [`DEADLINE_FLOOR`] and `cap`; `cap` itself
/// before the case has run at all.
pub fn batch_deadline(per_launch_secs: Option<f64>, reps: u32, cap: Duration) -> Duration {
    match per_launch_secs {
        Some(t) if t.is_finite() && t > 0.0 => {
            let expected = DEADLINE_FACTOR * t * f64::from(reps.max(1));
            Duration::from_secs_f64(expected.min(cap.as_secs_f64())).max(DEADLINE_FLOOR.min(cap))
        }
        _ => cap,
    }
}

thread_local! {
    /// How many [`quietly`] calls are running on this thread.
    static QUIET: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, catching a panic without printing it. The process's panic hook is wrapped once,
/// and stays silent only on a thread that is inside this function: swapping the hook around
/// every call races between threads (tests open devices on several) and can leave every later
/// panic of the process silent.
fn quietly<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(q.get() + 1));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(q.get() - 1));
    outcome
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "cudarc panicked".to_string())
}

/// Runs a driver call, mapping its error (with the driver's message) and any cudarc panic.
pub fn guard<T>(during: &str, f: impl FnOnce() -> Result<T, DriverError>) -> Result<T> {
    match quietly(f) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(driver_error(during, &e)),
        Err(panic) => Err(Error::Driver {
            during: during.to_string(),
            message: panic_message(panic),
        }),
    }
}

/// The number of a driver error. The binding is CUDA 12.0's (the oldest driver roofprobe
/// takes), whose `CUresult` names no code a later driver added (`CUDA_ERROR_CONTAINED`, 226,
/// say): read as the number it is, never matched as the binding's enum.
fn raw_code(code: CUresult) -> u32 {
    code as u32
}

/// The driver's name for an error code (`CUDA_ERROR_ILLEGAL_ADDRESS`): the driver's own
/// (`cuGetErrorName`, which knows its codes), else its number.
fn error_name(e: &DriverError) -> String {
    // cuGetErrorName is a driver call: without the library it would panic.
    quietly(|| e.error_name().map(|s| s.to_string_lossy().into_owned()))
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or_else(|| unnamed_error(raw_code(e.0)))
}

/// What an error the driver gives no name for is called: `CUDA error 34`.
fn unnamed_error(code: u32) -> String {
    format!("CUDA error {code}")
}

fn driver_error(during: &str, e: &DriverError) -> Error {
    // cuGetErrorString is a driver call too: without the library it would panic.
    let text = quietly(|| e.error_string().map(|s| s.to_string_lossy().into_owned()))
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or_default();
    let name = error_name(e);
    Error::Driver {
        during: during.to_string(),
        message: if text.is_empty() {
            name
        } else {
            format!("{name}: {text}")
        },
    }
}

/// Errors after which the CUDA context is unusable for the rest of the process: the CUDA
/// documentation of each says "any further CUDA work will return the same error. To continue
/// using CUDA, the process must be terminated and relaunched." By number (cuda.h), so that
/// `CUDA_ERROR_CONTAINED` (226, a later CUDA's: an error the GPU contained, whose documentation
/// says the same), which the binding cannot name, counts too.
pub fn is_sticky(code: CUresult) -> bool {
    sticky_code(raw_code(code))
}

/// [`is_sticky`] of an error's number.
fn sticky_code(code: u32) -> bool {
    matches!(
        code,
        700 // CUDA_ERROR_ILLEGAL_ADDRESS
            | 702 // CUDA_ERROR_LAUNCH_TIMEOUT
            | 710 // CUDA_ERROR_ASSERT
            | 714 // CUDA_ERROR_HARDWARE_STACK_ERROR
            | 715 // CUDA_ERROR_ILLEGAL_INSTRUCTION
            | 716 // CUDA_ERROR_MISALIGNED_ADDRESS
            | 717 // CUDA_ERROR_INVALID_ADDRESS_SPACE
            | 718 // CUDA_ERROR_INVALID_PC
            | 719 // CUDA_ERROR_LAUNCH_FAILED
            | 214 // CUDA_ERROR_ECC_UNCORRECTABLE
            | 226 // CUDA_ERROR_CONTAINED
    )
}

/// Whether a device's context still works. Set once, by the first error that makes it unusable.
#[derive(Debug, Default)]
pub struct Health {
    lost: OnceLock<Lost>,
}

#[derive(Debug)]
struct Lost {
    cause: String,
    /// A kernel may still be running: freeing anything could wait for it forever.
    runaway: bool,
}

impl Health {
    /// `Err(DeviceLost)` once the device is unusable.
    pub fn check(&self, device: &str) -> Result<()> {
        match self.lost.get() {
            None => Ok(()),
            Some(lost) => Err(Error::DeviceLost {
                device: device.to_string(),
                cause: lost.cause.clone(),
            }),
        }
    }

    fn lose(&self, cause: String, runaway: bool) {
        let _ = self.lost.set(Lost { cause, runaway });
    }

    /// Why the device became unusable and whether a kernel may still be running on it, or
    /// `None` while it works.
    pub fn lost(&self) -> Option<(String, bool)> {
        self.lost.get().map(|l| (l.cause.clone(), l.runaway))
    }

    /// True after a kernel missed its deadline.
    pub fn runaway(&self) -> bool {
        self.lost.get().is_some_and(|l| l.runaway)
    }

    /// Runs a driver call on a device: refused once the device is lost, and an error that
    /// loses it (see [`is_sticky`]) is remembered.
    pub fn call<T>(
        &self,
        device: &str,
        during: &str,
        f: impl FnOnce() -> Result<T, DriverError>,
    ) -> Result<T> {
        self.check(device)?;
        match quietly(f) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                if is_sticky(e.0) {
                    self.lose(format!("{} during {during}", error_name(&e)), false);
                }
                Err(driver_error(during, &e))
            }
            Err(panic) => Err(Error::Driver {
                during: during.to_string(),
                message: panic_message(panic),
            }),
        }
    }
}

/// Whether the CUDA driver library can be loaded at all. A library that crashes the loader
/// (damaged, truncated) ends the process with one line ([`self::loading::guarded`]).
pub fn driver_present() -> bool {
    static LOADED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if LOADED.load(std::sync::atomic::Ordering::Relaxed) {
        return true;
    }
    let present = self::loading::guarded(
        "the CUDA driver's libcuda",
        "reinstall the NVIDIA driver, or measure the host CPU with --device host",
        // SAFETY: only tries to dlopen libcuda; no driver call is made.
        || quietly(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false),
    );
    LOADED.store(present, std::sync::atomic::Ordering::Relaxed);
    present
}

/// How long `cuInit` may take before the driver is given up on, unless
/// `ROOFPROBE_CUDA_INIT_TIMEOUT` (seconds) says otherwise: far above the few seconds a node of
/// eight GPUs without persistence mode takes, far below forever.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment variable that sets the `cuInit` time limit, in seconds.
pub const INIT_TIMEOUT_VAR: &str = "ROOFPROBE_CUDA_INIT_TIMEOUT";

/// The `cuInit` time limit: [`INIT_TIMEOUT_VAR`] read as `--kernel-timeout` is
/// ([`crate::units::parse_seconds`]: `90`, `2.5s`, up to a week), else [`INIT_TIMEOUT`]. A value
/// that is set but malformed is a usage error, never a silent 60 s.
pub fn init_timeout() -> Result<Duration> {
    let text = match std::env::var(INIT_TIMEOUT_VAR) {
        Err(std::env::VarError::NotPresent) => return Ok(INIT_TIMEOUT),
        Err(std::env::VarError::NotUnicode(v)) => v.to_string_lossy().into_owned(),
        Ok(v) => v,
    };
    crate::units::parse_seconds(&text)
        .map(Duration::from_secs_f64)
        .map_err(|why| {
            Error::Usage(format!(
                "{INIT_TIMEOUT_VAR}: {why} (the limit on the driver's start, e.g. \
                 {INIT_TIMEOUT_VAR}=120); unset it for {} s",
                INIT_TIMEOUT.as_secs()
            ))
        })
}

/// `cuInit`, given up on after [`INIT_TIMEOUT`]. The outcome is kept: after a timeout the call
/// is still blocked in its thread (nothing can cancel it), and every later call gets the same
/// error at once instead of another blocked thread.
fn init_driver() -> Result<()> {
    static OUTCOME: std::sync::Mutex<Option<std::result::Result<(), (String, String)>>> =
        std::sync::Mutex::new(None);
    let mut outcome = OUTCOME.lock().unwrap_or_else(|e| e.into_inner());
    if outcome.is_none() {
        let limit = init_timeout()?;
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("cuInit".into())
            .spawn(move || {
                let r = guard("initialisation", cudarc::driver::result::init);
                let _ = tx.send(r.map_err(|e| match e {
                    Error::Driver { during, message } => (during, message),
                    other => ("initialisation".to_string(), other.to_string()),
                }));
            });
        *outcome = Some(match spawned {
            Err(e) => Err((
                "initialisation".into(),
                format!("no thread for cuInit: {e}"),
            )),
            Ok(_) => rx.recv_timeout(limit).unwrap_or_else(|_| {
                Err((
                    "initialisation".into(),
                    format!(
                        "cuInit did not return within {} s (a driver or device that does not \
                         answer; {INIT_TIMEOUT_VAR} sets the limit)",
                        limit.as_secs_f64()
                    ),
                ))
            }),
        });
    }
    match outcome.as_ref().expect("set above") {
        Ok(()) => Ok(()),
        Err((during, message)) => Err(Error::Driver {
            during: during.clone(),
            message: with_stub_hint(message.clone(), loaded_libcuda().as_deref()),
        }),
    }
}

/// `CUDA_ERROR_STUB_LIBRARY` (cuda.h).
const STUB_LIBRARY: u32 = 34;

/// `cuInit`'s message, with what to do where the libcuda loaded is a CUDA toolkit's stub
/// (`lib64/stubs/libcuda.so`, for linking only, which answers every call with
/// `CUDA_ERROR_STUB_LIBRARY`): its folder on `LD_LIBRARY_PATH` stands in for the driver.
fn with_stub_hint(message: String, loaded: Option<&str>) -> String {
    // (by number too: a stub may answer cuGetErrorName with its one error as well)
    let number = unnamed_error(STUB_LIBRARY);
    let stub = message.contains("CUDA_ERROR_STUB_LIBRARY")
        || message == number
        || message.starts_with(&format!("{number}:"));
    if !stub {
        return message;
    }
    format!(
        "{message} (the libcuda loaded{} is a CUDA toolkit's stub, not the driver: take its \
         folder, a `stubs` one, out of LD_LIBRARY_PATH)",
        loaded.map_or_else(String::new, |l| format!(", {l},"))
    )
}

/// Number of CUDA devices. `Err(Error::NoDriver)` when there is no driver library, and a driver
/// error when it is present but will not initialise (no device node, stub library, too old, or
/// `cuInit` not returning within [`INIT_TIMEOUT`]).
pub fn device_count() -> Result<usize> {
    if !driver_present() {
        return Err(Error::NoDriver("libcuda could not be loaded".to_string()));
    }
    init_driver()?;
    let n = guard(
        "counting devices",
        cudarc::driver::result::device::get_count,
    )?;
    Ok(n.max(0) as usize)
}

/// The libcuda this process loaded: the path the dynamic loader found it under and, where that
/// is a link, the file it resolves to (`/usr/lib/x86_64-linux-gnu/libcuda.so.1 ->
/// …/libcuda.so.550.54.15`). `None` before it is loaded.
pub fn loaded_libcuda() -> Option<String> {
    if !driver_present() {
        return None;
    }
    // SAFETY: the library is present (checked above); `get` only looks a symbol up, and the
    // address is passed to dladdr, which only reads the loader's tables.
    let found = quietly(|| unsafe {
        let lib = cudarc::driver::sys::culib();
        let symbol = lib
            .get::<unsafe extern "C" fn(std::ffi::c_uint) -> CUresult>(b"cuInit")
            .ok()?;
        let address = *symbol as *const std::ffi::c_void;
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(address, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned(),
        )
    })
    .ok()??;
    let real = std::fs::canonicalize(&found).ok();
    Some(match real {
        Some(r) if r != std::path::Path::new(&found) => format!("{found} -> {}", r.display()),
        _ => found,
    })
}

/// The driver library this process loaded and the CUDA version it reports
/// (`/usr/lib/…/libcuda.so.1 -> …/libcuda.so.535.261.03, CUDA 12.2`): which driver it was,
/// where no device could be used. `None` when no libcuda could be loaded.
pub fn driver_library() -> Option<String> {
    let path = loaded_libcuda()?;
    Some(match driver_cuda_version() {
        Some(v) => format!("{path}, CUDA {v}"),
        None => path,
    })
}

/// The driver's CUDA version, e.g. `12.4` (`cuDriverGetVersion`, which needs no `cuInit`).
fn driver_cuda_version() -> Option<String> {
    driver_cuda_number().map(cuda_version_text)
}

/// A CUDA version as `cuDriverGetVersion` numbers it (`12040`), as people write it (`12.4`).
pub fn cuda_version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The driver's CUDA version as `cuDriverGetVersion` gives it (`12040` for 12.4); `None` where
/// no driver loads.
pub fn driver_cuda_number() -> Option<i32> {
    if !driver_present() {
        return None;
    }
    let mut v: std::ffi::c_int = 0;
    // SAFETY: writes one int.
    let r = guard("reading the driver version", || unsafe {
        cudarc::driver::sys::cuDriverGetVersion(&mut v).result()
    });
    r.ok().map(|_| v)
}

static NVML: OnceLock<Option<nvml_wrapper::Nvml>> = OnceLock::new();

/// NVML, if its library is present and initialises.
fn nvml() -> Option<&'static nvml_wrapper::Nvml> {
    NVML.get_or_init(|| {
        let attempt = || {
            nvml_wrapper::Nvml::builder()
                .lib_path(std::ffi::OsStr::new("libnvidia-ml.so.1"))
                .init()
                .or_else(|_| nvml_wrapper::Nvml::init())
                .ok()
        };
        self::loading::guarded(
            "NVML (libnvidia-ml.so.1)",
            "reinstall the NVIDIA driver, or measure the host CPU with --device host",
            || quietly(attempt).ok().flatten(),
        )
    })
    .as_ref()
}

/// The NVML form of a device UUID: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn format_uuid(bytes: &[u8; 16]) -> String {
    let h: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// Names of the NVML throttle reasons set in `bits`, leaving out "idle" and "none", which are
/// not limits on a running kernel.
fn throttle_names(reasons: nvml_wrapper::bitmasks::device::ThrottleReasons) -> String {
    use nvml_wrapper::bitmasks::device::ThrottleReasons as T;
    let named = [
        (T::APPLICATIONS_CLOCKS_SETTING, "applications_clocks"),
        (T::SW_POWER_CAP, "sw_power_cap"),
        (T::HW_SLOWDOWN, "hw_slowdown"),
        (T::SYNC_BOOST, "sync_boost"),
        (T::SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"),
        (T::HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"),
        (T::HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake"),
        (T::DISPLAY_CLOCK_SETTING, "display_clock"),
    ];
    named
        .iter()
        .filter(|(flag, _)| reasons.contains(*flag))
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join(";")
}

/// How many compute or graphics processes other than this one NVML lists on the device; `None`
/// when NVML cannot list them. Counted, not listed: the count call passes no buffer, where the
/// list's `…RunningProcesses_v3` of some R535 drivers writes a larger record than its header
/// declares (every process id after the first wrong, and past the buffer beyond 15 processes).
fn other_processes(d: &nvml_wrapper::Device<'static>) -> Option<u32> {
    let compute = d.running_compute_processes_count().ok()?;
    let graphics = d.running_graphics_processes_count().unwrap_or(0);
    Some(others_of(compute, graphics))
}

/// The processes in NVML's two lists, `compute` and `graphics` of them, other than this one.
/// This process holds a context on the device whenever a case runs, so it is one of them: under
/// its own id, or in a container under the id the host gave it (NVML lists host ids), which is
/// why it is left out by count, not by id. A process in both lists (a desktop program that also
/// computes, rare on a server) counts twice.
fn others_of(compute: u32, graphics: u32) -> u32 {
    (compute + graphics).saturating_sub(1)
}

/// The modules of a device, loaded (and JIT-compiled) when it is opened, so no compilation
/// happens while a case is timed. The sweep's expansions are loaded per case.
struct Modules {
    stream: Arc<CudaModule>,
    /// kernels/peak.ptx, kernels/mma.ptx and kernels/mma_sm89.ptx, or why one is not there;
    /// only that module's cases fail, with the reason.
    peak: Loaded,
    mma: Loaded,
    mma_sm89: Loaded,
    /// kernels/mma_sm90.ptx (Hopper's f64 shape: compute capability 9.0 and later)
    mma_sm90: Loaded,
    /// kernels/wgmma.ptx.in (sm_90a: compute capability 9.0 only)
    wgmma: Loaded,
    cache: Loaded,
    latency: Loaded,
}

/// A module that is loaded, or why not.
enum Loaded {
    Yes(Arc<CudaModule>),
    /// The device cannot run it (older than 8.0; no native fp8), or the driver's JIT cannot
    /// compile its PTX ISA version ([`jit::not_for_driver`]).
    Unsupported(String),
    /// The driver refused it (a JIT error): the driver's message.
    Failed(String),
}

impl Loaded {
    fn load(ctx: &Arc<CudaContext>, id: ModuleId, unsupported: Option<&'static str>) -> Loaded {
        let unsupported = unsupported
            .map(str::to_string)
            .or_else(|| jit::not_for_driver(&id.ptx(), driver_cuda_number()));
        match unsupported {
            Some(why) => Loaded::Unsupported(why),
            None => match load_module(ctx, id) {
                Ok(m) => Loaded::Yes(m),
                Err(Error::Driver { message, .. }) => Loaded::Failed(message),
                Err(other) => Loaded::Failed(other.to_string()),
            },
        }
    }

    fn get(&self, id: ModuleId) -> Result<Arc<CudaModule>> {
        match self {
            Loaded::Yes(m) => Ok(m.clone()),
            Loaded::Unsupported(why) => Err(Error::Usage(format!("kernels/{}: {why}", id.file()))),
            Loaded::Failed(message) => Err(Error::Driver {
                during: format!("loading kernels/{}", id.file()),
                message: message.clone(),
            }),
        }
    }
}

/// One CUDA device, with its context, stream and loaded kernels.
pub struct CudaBackend {
    info: DeviceInfo,
    compute_capability: (u32, u32),
    // Leaked rather than dropped after a runaway kernel (see the module documentation); in
    // drop order: modules, stream, context.
    modules: ManuallyDrop<Modules>,
    stream: ManuallyDrop<Arc<CudaStream>>,
    ctx: ManuallyDrop<Arc<CudaContext>>,
    health: Arc<Health>,
    deadline: Duration,
    nvml_device: Option<Arc<nvml_wrapper::Device<'static>>>,
    /// The other GPUs this one can reach peer to peer (ordinals).
    peers: Vec<u32>,
}

/// The ordinals of the other `count` devices that device `ctx` can reach peer to peer
/// (`cuDeviceCanAccessPeer`); a query that fails counts as no.
fn peers_of(ctx: &CudaContext, ordinal: usize, count: usize) -> Vec<u32> {
    use cudarc::driver::sys;
    let reachable = |j: usize| {
        let (mut device, mut can) = (0, 0);
        // SAFETY: plain queries into locals.
        let asked = unsafe {
            sys::cuDeviceGet(&mut device, j as i32).result().is_ok()
                && sys::cuDeviceCanAccessPeer(&mut can, ctx.cu_device(), device)
                    .result()
                    .is_ok()
        };
        asked && can == 1
    };
    (0..count)
        .filter(|&j| j != ordinal && reachable(j))
        .map(|j| j as u32)
        .collect()
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        if self.health.runaway() {
            return;
        }
        // Nothing may still run when a module is unloaded (a case that failed mid-batch can
        // leave launches queued); after a sticky error this returns at once.
        let _ = quietly(|| self.stream.synchronize());
        // SAFETY: each field is dropped once, here, and not used after.
        unsafe {
            ManuallyDrop::drop(&mut self.modules);
            ManuallyDrop::drop(&mut self.stream);
            ManuallyDrop::drop(&mut self.ctx);
        }
    }
}

fn load_module(ctx: &Arc<CudaContext>, id: ModuleId) -> Result<Arc<CudaModule>> {
    let ptx = id.ptx();
    let during = format!("loading kernels/{}", id.file());
    guard(&during, || ctx.load_module(Ptx::from_src(ptx.as_ref())))
        .map_err(|e| with_jit_error_log(ctx, &ptx, e))
}

/// A module load's error with the JIT's log of `ptx` added: cuModuleLoadData says only that
/// the JIT failed, its log says where and why.
fn with_jit_error_log(ctx: &Arc<CudaContext>, ptx: &str, e: Error) -> Error {
    match e {
        Error::Driver { during, message } => Error::Driver {
            message: with_jit_log(message, jit_error_log(ctx, ptx)),
            during,
        },
        other => other,
    }
}

/// The JIT compiler's error log for `ptx`, by loading it again with a log buffer; `None` if
/// there is no log (or it loads this time, and is unloaded again).
fn jit_error_log(ctx: &Arc<CudaContext>, ptx: &str) -> Option<String> {
    use cudarc::driver::sys;
    let source = std::ffi::CString::new(ptx).ok()?;
    let mut log = vec![0u8; 8192];
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    // The driver reads a size option's value from the pointer's bits.
    let mut values = [
        log.as_mut_ptr() as *mut std::ffi::c_void,
        log.len() as *mut std::ffi::c_void,
    ];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    quietly(|| {
        ctx.bind_to_thread().ok()?;
        // SAFETY: `source` is NUL-terminated PTX; the log buffer outlives the call and its size
        // is the one given; a module that does load is unloaded below.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                source.as_ptr() as *const std::ffi::c_void,
                options.len() as std::ffi::c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if r == sys::CUresult::CUDA_SUCCESS && !module.is_null() {
            // SAFETY: the module was just loaded and nothing else holds it.
            unsafe { sys::cuModuleUnload(module) };
        }
        Some(())
    })
    .ok()??;
    one_line_log(&log)
}

/// A JIT log buffer's text, up to its first NUL, trimmed.
fn log_text(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).trim().to_string()
}

/// A JIT error log buffer's text on one line (`a | b`), `None` where it is empty.
fn one_line_log(buffer: &[u8]) -> Option<String> {
    let text = log_text(buffer).replace('\n', " | ");
    (!text.is_empty()).then_some(text)
}

/// A driver error's message with the JIT's error log after it, where there is one.
fn with_jit_log(message: String, log: Option<String>) -> String {
    match log {
        Some(log) => format!("{message}; JIT log: {log}"),
        None => message,
    }
}

impl CudaBackend {
    /// Opens device `ordinal`: context, stream, device description, modules.
    pub fn open(ordinal: usize) -> Result<CudaBackend> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::NoSuchDevice {
                asked: format!("cuda:{ordinal}"),
                available: format!("{count} CUDA device(s) visible"),
            });
        }
        let ctx = guard("creating a context", || CudaContext::new(ordinal))?;
        // One stream, no cross-stream bookkeeping: cudarc's event tracking would add event
        // waits and records to every launch and copy. It must be off before the stream and
        // any array exist (an array created while it is on keeps tracking).
        // SAFETY: all work goes to the one stream created below, so no cross-stream
        // synchronisation is needed; arrays are freed on that stream, after the work that uses
        // them.
        unsafe { ctx.disable_event_tracking() };
        let stream = guard("creating a stream", || ctx.new_stream())?;
        let (info, cc) = describe(&ctx, ordinal)?;
        let uuid = info.identity.uuid.clone();
        let nvml_device = (!uuid.is_empty())
            .then(|| quietly(|| nvml()?.device_by_uuid(uuid.as_str()).ok()).ok()?)
            .flatten()
            .map(Arc::new);
        let mut info = info;
        if let Some(d) = &nvml_device {
            nvml_identity(d, &mut info.identity);
        }
        let peers = peers_of(&ctx, ordinal, count);
        if !peers.is_empty() {
            let names: Vec<String> = peers.iter().map(|p| format!("cuda:{p}")).collect();
            info.extra
                .push(("peer to peer".to_string(), names.join(", ")));
        }
        if info.clock_mhz.is_none() {
            // The driver attribute is deprecated in recent CUDA; NVML still reports the
            // maximum SM clock, which sizes the compute launches.
            use nvml_wrapper::enum_wrappers::device::Clock;
            info.clock_mhz = nvml_device
                .as_ref()
                .and_then(|d| quietly(|| d.max_clock_info(Clock::SM).ok()).ok()?)
                .filter(|&mhz| mhz > 0)
                .map(f64::from);
        }
        let old = (!plan::runs_compute_kernels(cc))
            .then_some("the compute kernels need compute capability 8.0 or later");
        let no_fp8 = (!plan::native_fp8_mma(cc))
            .then_some("fp8 mma.sync is native only on compute capability 8.9 and 12.x");
        let not_hopper = (!plan::runs_wgmma(cc))
            .then_some("wgmma is sm_90a code, which runs on compute capability 9.0 only");
        let before_hopper = (!plan::runs_mma_sm90(cc))
            .then_some("mma.sync m16n8k16 f64 needs compute capability 9.0 or later");
        let modules = Modules {
            stream: load_module(&ctx, ModuleId::Stream)?,
            peak: Loaded::load(&ctx, ModuleId::Peak, old),
            mma: Loaded::load(&ctx, ModuleId::Mma, old),
            mma_sm89: Loaded::load(&ctx, ModuleId::MmaSm89, old.or(no_fp8)),
            mma_sm90: Loaded::load(&ctx, ModuleId::MmaSm90, before_hopper),
            wgmma: Loaded::load(&ctx, ModuleId::Wgmma, not_hopper),
            cache: Loaded::load(&ctx, ModuleId::Cache, old),
            latency: Loaded::load(&ctx, ModuleId::Latency, old),
        };
        Ok(CudaBackend {
            info,
            compute_capability: cc,
            modules: ManuallyDrop::new(modules),
            stream: ManuallyDrop::new(stream),
            ctx: ManuallyDrop::new(ctx),
            health: Arc::default(),
            deadline: KERNEL_DEADLINE,
            nvml_device,
            peers,
        })
    }

    /// Whether each kernel module JIT-compiles for this device: one line per module (each
    /// precision's sweep expansion at its largest k stands for the template), `JIT ok`, why the
    /// device does not run it, or the driver's error with the JIT log.
    pub fn jit_report(&self) -> Vec<(String, String)> {
        let status = |loaded: &Loaded| match loaded {
            Loaded::Yes(_) => "JIT ok".to_string(),
            Loaded::Unsupported(why) => format!("not loaded: {why}"),
            Loaded::Failed(message) => format!("JIT FAILED: {message}"),
        };
        let mut lines = vec![
            ("kernels/stream.ptx".to_string(), "JIT ok".to_string()),
            ("kernels/peak.ptx".to_string(), status(&self.modules.peak)),
            ("kernels/mma.ptx".to_string(), status(&self.modules.mma)),
            (
                "kernels/mma_sm89.ptx".to_string(),
                status(&self.modules.mma_sm89),
            ),
            (
                "kernels/mma_sm90.ptx".to_string(),
                status(&self.modules.mma_sm90),
            ),
            (
                "kernels/wgmma.ptx.in".to_string(),
                status(&self.modules.wgmma),
            ),
            ("kernels/cache.ptx".to_string(), status(&self.modules.cache)),
            (
                "kernels/latency.ptx".to_string(),
                status(&self.modules.latency),
            ),
        ];
        // the modules loaded per case: the launch-overhead kernels, the f32 SIMT GEMM, one
        // sweep expansion per precision and each tensor-core GEMM's, and on Hopper its two
        // GEMMs (a case loads them when it runs; here their JIT is tried now)
        let mut per_case = vec![ModuleId::Launch, ModuleId::GemmSimt];
        if plan::runs_compute_kernels(self.compute_capability) {
            let k = *crate::cases::intensity::KS
                .last()
                .expect("the sweep has k values");
            for p in crate::cases::intensity::PRECISIONS {
                per_case.push(ModuleId::Sweep(p, k));
            }
            for p in crate::cases::gemm::TENSOR_PRECISIONS {
                per_case.push(ModuleId::Gemm(p));
            }
        }
        if plan::runs_wgmma(self.compute_capability) {
            let p = crate::cases::Precision::Bf16F32;
            per_case.extend([
                ModuleId::GemmWgmma(p),
                ModuleId::GemmTma(p, false),
                ModuleId::GemmTma(p, true),
            ]);
        }
        for id in per_case {
            let outcome = status(&Loaded::load(&self.ctx, id, None));
            lines.push((format!("kernels/{}", id.file()), outcome));
        }
        lines
    }

    /// Whether the device still works, shared: a caller that lends the backend out (to the
    /// runner) can still ask.
    pub fn health(&self) -> Arc<Health> {
        self.health.clone()
    }

    /// The device's compute capability as (major, minor).
    pub fn compute_capability(&self) -> (u32, u32) {
        self.compute_capability
    }

    /// The most one batch of launches may run before it is presumed runaway (default
    /// [`KERNEL_DEADLINE`]; later batches of a case get less, see [`batch_deadline`]).
    pub fn set_kernel_deadline(&mut self, deadline: Duration) {
        self.deadline = deadline;
    }

    /// A driver call on this device (see [`Health::call`]).
    fn call<T>(&self, during: &str, f: impl FnOnce() -> Result<T, DriverError>) -> Result<T> {
        self.health.call(&self.info.id, during, f)
    }

    /// The module an entry lives in; a sweep expansion is loaded (JIT-compiled) now.
    fn module(&self, id: ModuleId) -> Result<Arc<CudaModule>> {
        match id {
            ModuleId::Stream => Ok(self.modules.stream.clone()),
            ModuleId::Peak => self.modules.peak.get(id),
            ModuleId::Mma => self.modules.mma.get(id),
            ModuleId::MmaSm89 => self.modules.mma_sm89.get(id),
            ModuleId::MmaSm90 => self.modules.mma_sm90.get(id),
            ModuleId::Wgmma => self.modules.wgmma.get(id),
            ModuleId::Cache => self.modules.cache.get(id),
            ModuleId::Latency => self.modules.latency.get(id),
            // gemm (branch gemm): a GEMM expansion (and the SIMT GEMM) is loaded per case too.
            // launch (branch launchoh): the launch module is loaded per case too.
            ModuleId::Sweep(..)
            | ModuleId::Gemm(..)
            | ModuleId::GemmSimt
            | ModuleId::GemmWgmma(..)
            | ModuleId::GemmTma(..)
            | ModuleId::Launch => {
                let during = format!("loading kernels/{}", id.file());
                let ptx = id.ptx();
                // what the driver would refuse with CUDA_ERROR_UNSUPPORTED_PTX_VERSION, said
                // as for the modules loaded with the device
                if let Some(why) = jit::not_for_driver(&ptx, driver_cuda_number()) {
                    return Loaded::Unsupported(why).get(id);
                }
                self.call(&during, || {
                    self.ctx.load_module(Ptx::from_src(ptx.as_ref()))
                })
                .map_err(|e| with_jit_error_log(&self.ctx, &ptx, e))
            }
        }
    }

    fn function(&self, module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
        self.call(&format!("loading kernel {name}"), || {
            // cuModuleGetFunction does not bind the context itself.
            self.ctx.bind_to_thread()?;
            module.load_function(name)
        })
    }

    /// Free device memory now. Pending frees are completed first: with stream-ordered
    /// allocation a freed array returns to the memory pool, which gives it back to the device
    /// only at a synchronisation, so without it the previous case's arrays would still count as
    /// used.
    fn free_bytes(&self) -> Result<u64> {
        let (free, _total) = self.call("reading free memory", || {
            self.stream.synchronize()?;
            self.ctx.mem_get_info()
        })?;
        Ok(free as u64)
    }

    /// Blocks per grid for a kernel: every SM filled to the kernel's occupancy at [`BLOCK`]
    /// threads per block and no dynamic shared memory (none of the kernels uses any).
    fn one_wave(&self, func: &CudaFunction, name: &str) -> Result<u32> {
        let per_sm = self.call(&format!("querying the occupancy of {name}"), || {
            // The occupancy query does not bind the context itself.
            self.ctx.bind_to_thread()?;
            func.occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
        })?;
        one_wave_grid(self.info.units, per_sm, name)
    }

    /// Waits for `event` without blocking forever: work (`what`: a kernel, a cuBLAS call, a
    /// copy) that has not finished within `deadline` loses the device (see the module
    /// documentation).
    pub(super) fn wait_event(
        &self,
        event: &CudaEvent,
        what: &str,
        during: &str,
        deadline: Duration,
    ) -> Result<()> {
        let started = Instant::now();
        loop {
            let done = self.call(during, || {
                self.ctx.bind_to_thread()?;
                event.try_is_complete()
            })?;
            if done {
                return Ok(());
            }
            if started.elapsed() > deadline {
                let cause = format!("{what} did not finish within {} s", deadline.as_secs_f64());
                self.health.lose(cause.clone(), true);
                return Err(Error::Driver {
                    during: during.to_string(),
                    message: format!(
                        "{cause}: presumed runaway; the GPU may run it until roofprobe exits"
                    ),
                });
            }
            // The events time the GPU, so how soon the host notices does not matter.
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// The one-wave grid of an entry.
    fn entry_grid(&self, entry: &Entry) -> Result<u32> {
        let module = self.module(entry.module)?;
        let func = self.function(&module, &entry.name)?;
        self.one_wave(&func, &entry.name)
    }

    /// What planning needs to know about this device, with `usable_bytes` free for the cases.
    fn model(&self, usable_bytes: u64) -> DeviceModel<'_> {
        DeviceModel {
            info: &self.info,
            compute_capability: self.compute_capability,
            usable_bytes,
            peers: &self.peers,
        }
    }

    /// Makes the device fault (a store to address 0) and returns the error it reports. Kept for
    /// the GPU test that checks that later cases then fail at once, saying why; a device that
    /// faulted stays unusable for the rest of the process, so the test runs this in a child.
    #[doc(hidden)]
    pub fn fault_for_tests(&self) -> Result<()> {
        let ptx = FAULT_PTX;
        let module = self.call("loading the fault kernel", || {
            self.ctx.load_module(Ptx::from_src(ptx))
        })?;
        let func = self.function(&module, "roofprobe_fault")?;
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        // An array alive across the fault, freed after it, as a case's arrays would be.
        let array = self.call("allocating", || self.stream.alloc_zeros::<u64>(1024))?;
        let outcome = self.call("running the fault kernel", || {
            // SAFETY: the kernel takes no parameters; it faults on purpose.
            unsafe { self.stream.launch_builder(&func).launch(cfg) }?;
            self.stream.synchronize()
        });
        drop(array);
        drop(module);
        outcome
    }
}

impl CudaBackend {
    /// Prepares `case`, queues `reps` launches of it and drops it at once, without waiting for
    /// them: what a batch that fails part-way leaves behind. Kept for the GPU test that checks
    /// nothing is freed or unloaded under launches still queued.
    #[doc(hidden)]
    pub fn abandon_batch_for_tests(&mut self, case: &Case, reps: u32) -> Result<()> {
        let gpu_case = GpuCase::new(self, case)?;
        let mut launch = gpu_case.arguments(0)?;
        let cfg = gpu_case.cfg;
        self.call("queueing a batch", || {
            for _ in 0..reps {
                // SAFETY: as in `GpuCase::run`: the launch's own described arguments.
                unsafe { launch.launch(cfg) }?;
            }
            Ok(())
        })?;
        drop(launch);
        drop(gpu_case);
        Ok(())
    }
}

/// A kernel that stores to address 0 (what [`CudaBackend::fault_for_tests`] runs).
pub const FAULT_PTX: &str = "\
.version 7.0
.target sm_52
.address_size 64
.visible .entry roofprobe_fault()
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    mov.u64 %rd1, 0;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
";

/// The grid that fills `sms` SMs with `per_sm` blocks each, or why there is none: a kernel that
/// cannot run one block of [`BLOCK`] threads (too many registers, say) has an occupancy of 0,
/// and launching it anyway fails with an error that does not say why.
pub fn one_wave_grid(sms: u32, per_sm: u32, name: &str) -> Result<u32> {
    if per_sm == 0 {
        return Err(Error::Internal(format!(
            "{name} cannot run a block of {BLOCK} threads on this device (occupancy 0)"
        )));
    }
    sms.checked_mul(per_sm)
        .filter(|&g| (1..=MAX_GRID).contains(&g))
        .ok_or_else(|| {
            Error::Internal(format!(
                "{name}: {sms} SMs x {per_sm} blocks is not a grid the driver accepts"
            ))
        })
}

/// Reads the device's description. The SM count sizes every grid, so a device that does not
/// report one is an error, not a grid of zero blocks.
fn describe(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<(DeviceInfo, (u32, u32))> {
    let attr =
        |a: CUdevice_attribute| guard("reading a device attribute", || ctx.attribute(a)).ok();
    let name = guard("reading the device name", || ctx.name())?;
    let (major, minor) = guard("reading the compute capability", || {
        ctx.compute_capability()
    })?;
    let (free, total) = guard("reading device memory", || ctx.mem_get_info())?;
    let sms = guard("reading the SM count", || {
        ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    })?;
    let sms = u32::try_from(sms)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| Error::Driver {
            during: "reading the SM count".into(),
            message: format!("the driver reports {sms} SMs"),
        })?;
    let l2 = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).unwrap_or(0);
    let l2 = u64::try_from(l2).unwrap_or(0);
    let khz = |a| attr(a).filter(|&v| v > 0).map(|v| v as f64 / 1000.0);
    let mut extra = Vec::new();
    if let Some(t) = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) {
        extra.push(("max threads per SM".to_string(), t.to_string()));
    }
    if let Some(s) =
        attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
    {
        extra.push(("shared memory per SM".to_string(), format!("{s} bytes")));
    }
    let uuid = guard("reading the device UUID", || ctx.uuid())
        .map(|uuid| format_uuid(&c_bytes(uuid.bytes)))
        .unwrap_or_default();
    extra.push((
        "libcuda".to_string(),
        loaded_libcuda().unwrap_or_else(|| "(its path is unknown)".to_string()),
    ));
    extra.push((
        "NVML".to_string(),
        if nvml().is_some() {
            "loaded (clocks, power, temperature, throttling)".to_string()
        } else {
            "not found: clock, power and throttle columns stay empty".to_string()
        },
    ));
    let driver_version = nvml().and_then(|n| quietly(|| n.sys_driver_version().ok()).ok()?);
    let driver = match (driver_cuda_version(), driver_version) {
        (Some(cuda), Some(drv)) => format!("CUDA {cuda}, driver {drv}"),
        (Some(cuda), None) => format!("CUDA {cuda}"),
        (None, Some(drv)) => format!("driver {drv}"),
        (None, None) => String::new(),
    };
    let cc = (major.max(0) as u32, minor.max(0) as u32);
    let info = DeviceInfo {
        backend: BackendKind::Cuda,
        id: format!("cuda:{ordinal}"),
        name,
        compute_capability: format!("{major}.{minor}"),
        units: sms,
        clock_mhz: khz(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_mhz: khz(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_bits: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
            .and_then(|b| u32::try_from(b).ok()),
        llc_bytes: l2,
        caches: plan::l1_bytes_per_sm(cc)
            .map(|size_bytes| CacheLevel {
                name: "L1".to_string(),
                size_bytes,
                instances: sms,
            })
            .into_iter()
            .chain([CacheLevel {
                name: "L2".to_string(),
                size_bytes: l2,
                instances: 1,
            }])
            .collect(),
        memory_total_bytes: total as u64,
        memory_free_bytes: free as u64,
        driver,
        // NVML adds the rest when it is there (`nvml_identity`).
        identity: Identity {
            vendor: "NVIDIA".to_string(),
            microarch: gpu_microarch(cc).unwrap_or_default().to_string(),
            isa: format!("sm_{}{}", cc.0, cc.1),
            uuid,
            ..Identity::default()
        },
        extra,
    };
    Ok((info, cc))
}

/// A C `char` array as bytes: `c_char` is `i8` on x86_64 and `u8` on aarch64, where the cast
/// does nothing.
#[allow(clippy::unnecessary_cast)]
fn c_bytes<const N: usize>(chars: [std::ffi::c_char; N]) -> [u8; N] {
    chars.map(|c| c as u8)
}

/// The architecture of a compute capability, as NVIDIA's CUDA C++ Programming Guide
/// ("Compute Capabilities") and its CUDA GPUs list name it; `None` for one it does not list.
pub fn gpu_microarch(cc: (u32, u32)) -> Option<&'static str> {
    Some(match cc {
        (5, _) => "Maxwell",
        (6, _) => "Pascal",
        (7, 0) | (7, 2) => "Volta",
        (7, 5) => "Turing",
        (8, 0) | (8, 6) | (8, 7) => "Ampere",
        (8, 9) => "Ada Lovelace",
        (9, 0) => "Hopper",
        (10, _) | (11, 0) | (12, _) => "Blackwell",
        _ => return None,
    })
}

/// Adds what NVML knows of a device's identity: PCI bus id, VBIOS, ECC and MIG modes, the
/// enforced power limit and the application clocks. Each read that fails (not supported on
/// this board, no permission, an NVML too old) leaves its field empty; none is fatal.
fn nvml_identity(d: &nvml_wrapper::Device<'static>, identity: &mut Identity) {
    use nvml_wrapper::enum_wrappers::device::Clock;
    let on_off = |on: bool| if on { "on" } else { "off" }.to_string();
    // NVML is a driver library too: a panic in its wrapper must not end the run.
    let read = quietly(|| {
        let mut i = identity.clone();
        if i.uuid.is_empty() {
            i.uuid = d.uuid().unwrap_or_default();
        }
        i.pci_bus_id = d.pci_info().map(|p| p.bus_id).unwrap_or_default();
        i.vbios = d.vbios_version().unwrap_or_default();
        i.ecc = d
            .is_ecc_enabled()
            .map(|e| on_off(e.currently_enabled))
            .unwrap_or_default();
        i.mig = d
            .mig_mode()
            .map(|m| on_off(m.current == 1))
            .unwrap_or_default();
        i.power_limit_w = d
            .enforced_power_limit()
            .ok()
            .map(|mw| f64::from(mw) / 1000.0);
        i.app_clock_mhz = d.applications_clock(Clock::SM).ok().map(f64::from);
        i.app_memory_clock_mhz = d.applications_clock(Clock::Memory).ok().map(f64::from);
        i
    });
    if let Ok(read) = read {
        *identity = read;
    }
}

impl Backend for CudaBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn cases(&self, size: SizeRequest) -> Result<Vec<PlannedCase>> {
        // Leave room for the context, the modules and the partial sums.
        let usable = self.free_bytes()? / 100 * 90;
        plan::plan_cases(&self.model(usable), size, &mut |entry| {
            self.entry_grid(entry)
        })
    }

    fn prepare(&mut self, case: &Case) -> Result<Box<dyn PreparedCase + '_>> {
        // gemm (branch gemm): a cuBLAS row runs the PTX row's arrays through cuBLAS.
        if case.family == Family::Gemm && case.kernel == crate::cases::gemm::GPU_REFERENCE {
            return gemm::prepare_cublas(self, case);
        }
        if case.family == Family::Capacity {
            return Ok(Box::new(capacity::GpuCapacity::new(self, case)?));
        }
        if case.family == Family::Link {
            return Ok(Box::new(link::GpuLink::new(self, case)?));
        }
        if case.family == Family::Launch && case.kernel == launch_rows::What::Timer.as_str() {
            return Ok(Box::new(launch::GpuTimer::new(self, case)?));
        }
        let mut prepared = GpuCase::new(self, case)?;
        if case.family == Family::Launch {
            // One launch before the samples: a lazily loaded function is loaded at its first
            // launch, which is not a launch's cost. It counts among the launches checked.
            prepared.run(1)?;
        }
        Ok(Box::new(prepared))
    }

    fn conditions(&self) -> Conditions {
        self.nvml_device
            .as_deref()
            .map(nvml_conditions)
            .unwrap_or_default()
    }

    fn lost(&self) -> Option<String> {
        self.health.lost().map(|(cause, _)| cause)
    }

    fn condition_probe(&self) -> Option<crate::device::ConditionProbe> {
        let device = self.nvml_device.clone()?;
        Some(Arc::new(move || nvml_conditions(&device)))
    }

    fn min_sample_secs(&self) -> f64 {
        0.01
    }
}

/// What NVML says of a device now: SM and memory clocks, power, temperature, throttle reasons.
fn nvml_conditions(d: &nvml_wrapper::Device<'static>) -> Conditions {
    use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
    // NVML is a driver library too: a panic in its wrapper must not end the run.
    quietly(|| Conditions {
        clock_mhz: d.clock_info(Clock::SM).ok().map(f64::from),
        memory_clock_mhz: d.clock_info(Clock::Memory).ok().map(f64::from),
        power_w: d.power_usage().ok().map(|mw| mw as f64 / 1000.0),
        energy: d
            .total_energy_consumption()
            .ok()
            .map(|millijoules| crate::device::EnergyReading {
                millijoules,
                at: std::time::Instant::now(),
            }),
        temperature_c: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
        throttle: clock_event_reasons(d)
            .map(throttle_names)
            .unwrap_or_default(),
        other_gpu_processes: other_processes(d),
        ..Conditions::default()
    })
    .unwrap_or_default()
}

/// NVML's current clock-event reasons: from `nvmlDeviceGetCurrentClocksEventReasons`, the newer
/// name, else from `nvmlDeviceGetCurrentClocksThrottleReasons`, which nvml.h marks deprecated and
/// `nvml-wrapper` calls (the same bits), so that a driver that has only one of them answers.
fn clock_event_reasons(
    d: &nvml_wrapper::Device<'static>,
) -> Option<nvml_wrapper::bitmasks::device::ThrottleReasons> {
    use nvml_wrapper::bitmasks::device::ThrottleReasons;
    let current = nvml().and_then(|n| {
        let call = n
            .lib()
            .nvmlDeviceGetCurrentClocksEventReasons
            .as_ref()
            .ok()?;
        let mut bits = 0;
        // SAFETY: the symbol has this signature (nvml.h); the handle is a live device of this
        // NVML, which outlives it (a static), and `bits` is a local.
        let status = unsafe { call(d.handle(), &mut bits) };
        (status == 0).then_some(bits)
    });
    current
        .map(ThrottleReasons::from_bits_truncate)
        .or_else(|| d.current_throttle_reasons().ok())
}

/// A device array of 32- or 64-bit words.
enum DeviceWords {
    W32(CudaSlice<u32>),
    W64(CudaSlice<u64>),
}

impl DeviceWords {
    fn push<'a>(&'a self, launch: &mut LaunchArgs<'a>) {
        match self {
            DeviceWords::W32(s) => launch.arg(s),
            DeviceWords::W64(s) => launch.arg(s),
        };
    }

    /// The array's device address, for a call that takes it raw (cuBLAS, a tensor map).
    fn address(&self, stream: &CudaStream) -> u64 {
        use cudarc::driver::DevicePtr;
        match self {
            DeviceWords::W32(s) => s.device_ptr(stream).0,
            DeviceWords::W64(s) => s.device_ptr(stream).0,
        }
    }

    fn bytes(&self) -> u64 {
        match self {
            DeviceWords::W32(s) => s.num_bytes() as u64,
            DeviceWords::W64(s) => s.num_bytes() as u64,
        }
    }

    /// A new array of the same words, copied on the device (queued on `stream`).
    fn duplicate(&self, stream: &Arc<CudaStream>) -> std::result::Result<Self, DriverError> {
        Ok(match self {
            DeviceWords::W32(s) => DeviceWords::W32(stream.clone_dtod(s)?),
            DeviceWords::W64(s) => DeviceWords::W64(stream.clone_dtod(s)?),
        })
    }
}

/// An encoded tensor map as the kernel receives it: `CUtensorMap`'s 128 opaque bytes (the
/// `.param .align 64 .b8 p[128]` it is declared as), 128-byte aligned as CUDA 13's `cuda.h`
/// declares the type (12's and the driver's documentation ask 64).
#[repr(C, align(128))]
#[derive(Clone, Copy)]
struct TensorMapBytes([u64; 16]);

// SAFETY: plain bytes with the layout and alignment of `CUtensorMap`, passed by value.
unsafe impl cudarc::driver::DeviceRepr for TensorMapBytes {}

/// Encodes `map` over the array at `address` through the driver (`cuTensorMapEncodeTiled`).
fn encode_tensor_map(
    map: &args::TensorMap,
    address: u64,
) -> std::result::Result<TensorMapBytes, DriverError> {
    use cudarc::driver::sys::{
        self as cu, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
        CUtensorMapL2promotion, CUtensorMapSwizzle,
    };
    // fp8 is copied as bytes (the driver has no fp8 type before CUDA 12.8, and TMA does not
    // convert)
    let data_type = match map.precision {
        crate::cases::Precision::F16F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        crate::cases::Precision::E4m3F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        _ => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    };
    let swizzle = match map.swizzle_bytes {
        0 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        32 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        _ => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let dims = map.dims;
    let strides = [map.row_bytes];
    let box_dims = map.box_dims;
    let element_strides = [1u32; 2];
    // encoded in place at 128-byte alignment (the binding's type is CUDA 12's, aligned to 64)
    #[repr(C, align(128))]
    struct Encoded(std::mem::MaybeUninit<cu::CUtensorMap>);
    let mut encoded = Encoded(std::mem::MaybeUninit::zeroed());
    let out = &mut encoded.0;
    // SAFETY: `out` is a CUtensorMap the driver writes; the arrays hold the rank's entries (the
    // strides one fewer) and live across the call; the address is a live device allocation.
    unsafe {
        cu::cuTensorMapEncodeTiled(
            out.as_mut_ptr(),
            data_type,
            2,
            address as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            box_dims.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        .result()?;
        Ok(TensorMapBytes(out.assume_init().opaque))
    }
}

/// A launch's note with what the driver's JIT gave its kernel: `grid 1056x256, 154 registers a
/// thread`, and its local memory where it has any (spilled registers: our kernels declare none).
fn resources_note(launch: &str, registers: i32, local: i32) -> String {
    let local = if local > 0 {
        format!(", {local} B local (spilled)")
    } else {
        String::new()
    };
    format!("{launch}, {registers} registers a thread{local}")
}

/// A kernel's registers per thread and local (spill) bytes, as the driver reports them after the
/// JIT; `None` where it reports neither.
fn registers_and_local_bytes(backend: &CudaBackend, func: &CudaFunction) -> Option<(i32, i32)> {
    let read = |attribute| {
        quietly(|| {
            backend.ctx.bind_to_thread().ok()?;
            func.get_attribute(attribute).ok()
        })
        .ok()
        .flatten()
    };
    Some((
        read(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        read(CUfunction_attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
    ))
}

/// Every array a launch describes, made on the device and initialised as described; fails
/// where a pointer argument would have no array of its size.
fn upload_arrays(
    backend: &CudaBackend,
    launch: &Launch,
    entry_name: &str,
) -> Result<Vec<(Role, DeviceWords)>> {
    let mut arrays = Vec::with_capacity(launch.buffers.len());
    for buffer in &launch.buffers {
        let len = usize::try_from(buffer.words)
            .map_err(|_| Error::Usage(format!("{} words do not fit in memory", buffer.words)))?;
        let words = if buffer.word_bytes == 8 {
            DeviceWords::W64(upload(backend, buffer, len, entry_name, |w| w)?)
        } else {
            DeviceWords::W32(upload(backend, buffer, len, entry_name, |w| w as u32)?)
        };
        debug_assert_eq!(words.bytes(), buffer.bytes());
        debug_assert_eq!(len as u64, buffer.words);
        arrays.push((buffer.role, words));
    }
    // Every pointer argument has its array, at least as large as described.
    for p in &launch.params {
        if let Arg::Buffer(role) = p.arg {
            let (have, want) = (
                arrays
                    .iter()
                    .find(|(r, _)| *r == role)
                    .map(|(_, a)| a.bytes()),
                launch.buffer(role).map(|b| b.bytes()),
            );
            if have.is_none() || have < want {
                return Err(Error::Internal(format!(
                    "{}: argument {} has no array of its size",
                    entry_name, p.name
                )));
            }
        }
    }
    Ok(arrays)
}

/// The copies of a rotating array, made on the device from the first (a decode step's weight:
/// up to the DRAM rule's hundreds of MiB, which the host would generate again).
fn rotation_copies(
    backend: &CudaBackend,
    launch: &Launch,
    arrays: &[(Role, DeviceWords)],
    entry_name: &str,
) -> Result<Vec<DeviceWords>> {
    let stream = &*backend.stream;
    let mut copies = Vec::new();
    if let Some(rotation) = launch.rotation {
        let (_, first) = arrays
            .iter()
            .find(|(r, _)| *r == rotation.role)
            .ok_or_else(|| {
                Error::Internal(format!(
                    "{}: the rotating {:?} has no array",
                    entry_name, rotation.role
                ))
            })?;
        for copy in 1..rotation.copies {
            let during = format!(
                "copying {:?} of {} to its copy {copy} on the device",
                rotation.role, entry_name
            );
            copies.push(backend.call(&during, || first.duplicate(stream))?);
        }
    }
    Ok(copies)
}

/// The tensor maps of a launch's parameters (one list per parameter, empty where it is none),
/// encoded over their arrays' device addresses, once per copy.
fn encode_tensor_maps(
    backend: &CudaBackend,
    launch: &Launch,
    arrays: &[(Role, DeviceWords)],
    copies: &[DeviceWords],
    entry_name: &str,
) -> Result<Vec<Vec<TensorMapBytes>>> {
    let stream = &*backend.stream;
    let mut tensor_maps = Vec::with_capacity(launch.params.len());
    for p in &launch.params {
        let mut maps = Vec::new();
        if let Arg::TensorMap(map) = &p.arg {
            for copy in 0..launch.copies_of(map.role) {
                let array = find_copy(arrays, copies, launch, map.role, copy).ok_or_else(|| {
                    Error::Internal(format!(
                        "{}: tensor map {} has no array",
                        entry_name, p.name
                    ))
                })?;
                let address = array.address(stream);
                let during = format!("encoding tensor map {} of {}", p.name, entry_name);
                maps.push(backend.call(&during, || encode_tensor_map(map, address))?);
            }
        }
        tensor_maps.push(maps);
    }
    Ok(tensor_maps)
}

/// Copy `copy` of a case's array of `role`, among its `arrays` and `copies` (copies 1 onwards of
/// the array that rotates, [`Launch::rotation`]): copy 0 is the array itself.
fn find_copy<'a>(
    arrays: &'a [(Role, DeviceWords)],
    copies: &'a [DeviceWords],
    launch: &Launch,
    role: Role,
    copy: u64,
) -> Option<&'a DeviceWords> {
    match (launch.rotation, copy) {
        (_, 0) => arrays.iter().find(|(r, _)| *r == role).map(|(_, a)| a),
        (Some(r), c) if r.role == role => copies.get(usize::try_from(c - 1).ok()?),
        _ => None,
    }
}

/// A case on the device: its launch described by [`args::plan`], its arrays allocated and
/// filled, its events made. The one kind of prepared case for every family.
struct GpuCase<'b> {
    backend: &'b CudaBackend,
    case: Case,
    launch: Launch,
    /// The kernel; `None` where only the arrays serve, for a reference library's row
    /// ([`GpuCase::arrays_only`]).
    func: Option<CudaFunction>,
    cfg: LaunchConfig,
    // Leaked rather than dropped after a runaway kernel.
    arrays: ManuallyDrop<Vec<(Role, DeviceWords)>>,
    /// Copies 1 onwards of the array that rotates ([`Launch::rotation`]): copy 0 is its array
    /// in `arrays`. Empty where none rotates.
    copies: ManuallyDrop<Vec<DeviceWords>>,
    /// The copy the next launch reads: launches rotate through the copies over the case's life.
    next_copy: u64,
    events: ManuallyDrop<(CudaEvent, CudaEvent)>,
    /// Kept alive while its function is used (a sweep expansion is loaded per case).
    module: ManuallyDrop<Option<Arc<CudaModule>>>,
    /// Seconds one launch took in the last batch: what the next batch's deadline follows.
    per_launch_secs: Option<f64>,
    /// Launches issued so far (a launch row's count must equal them).
    launches: u64,
    /// A launch row's first batch whose clocks disagree ([`launch_rows::check_batch`]).
    clock_fault: Option<Verdict>,
    /// The encoded tensor maps of each [`Arg::TensorMap`] parameter, by parameter index: one
    /// per copy of its array (empty for any other parameter).
    tensor_maps: Vec<Vec<TensorMapBytes>>,
    /// What the driver's JIT gave the kernel, where it says: registers a thread, and local
    /// memory bytes a thread (our kernels declare none, so any is spilled registers).
    resources: Option<(i32, i32)>,
}

impl Drop for GpuCase<'_> {
    fn drop(&mut self) {
        if self.backend.health.runaway() {
            return;
        }
        // A batch that failed part-way can leave launches queued: let them finish before their
        // arrays are freed and a sweep module (held only here) is unloaded (cudarc frees arrays
        // in stream order anyway; the module unload is not ordered). Waited for like a sample,
        // so a runaway kernel is leaked, not waited on; after a sticky error this fails at once.
        let end = &self.events.1;
        let during = format!("finishing {}", self.launch.entry.name);
        let recorded = self
            .backend
            .call(&during, || end.record(&self.backend.stream));
        if recorded.is_ok()
            && self
                .wait(end, &self.launch.entry.name, &during, self.backend.deadline)
                .is_err()
            && self.backend.health.runaway()
        {
            return;
        }
        // SAFETY: each field is dropped once, here, and not used after.
        unsafe {
            ManuallyDrop::drop(&mut self.arrays);
            ManuallyDrop::drop(&mut self.copies);
            ManuallyDrop::drop(&mut self.events);
            ManuallyDrop::drop(&mut self.module);
        }
    }
}

/// `buffer` on the device: `len` words allocated, then its starting words generated on every
/// host core (a DRAM-sized array of a large GPU has tens of millions) for the address the array
/// got (the latency ring's words are addresses within it), and copied.
fn upload<T: cudarc::driver::DeviceRepr + Send>(
    backend: &CudaBackend,
    buffer: &args::Buffer,
    len: usize,
    entry: &str,
    bits: impl Fn(u64) -> T + Sync,
) -> Result<CudaSlice<T>> {
    let stream = &backend.stream;
    let during = format!("allocating {:?} of {entry} on the device", buffer.role);
    // SAFETY: every word is written by the copy below before a kernel or a read-back sees it.
    let mut array = backend.call(&during, || unsafe { stream.alloc::<T>(len) })?;
    let base = cudarc::driver::DevicePtr::device_ptr(&array, stream).0;
    let host: Vec<T> = crate::cases::par_map(len, |i| bits(buffer.word(i as u64, base)));
    let during = format!("copying {:?} of {entry} to the device", buffer.role);
    backend.call(&during, || stream.memcpy_htod(&host, &mut array))?;
    Ok(array)
}

impl<'b> GpuCase<'b> {
    /// The case's kernel loaded (its module JIT-compiled where it is loaded per case) and set
    /// up, its arrays made.
    fn new(backend: &'b CudaBackend, case: &Case) -> Result<Self> {
        Self::prepare(backend, case, true)
    }

    /// The arrays (and events) of `case`'s launch, without its kernel: what a reference
    /// library's row of the same shape runs on. Our kernel's module is not loaded, so a
    /// kernel the JIT refuses does not cost the reference row too.
    fn arrays_only(backend: &'b CudaBackend, case: &Case) -> Result<Self> {
        Self::prepare(backend, case, false)
    }

    fn prepare(backend: &'b CudaBackend, case: &Case, with_kernel: bool) -> Result<Self> {
        backend.health.check(&backend.info.id)?;
        let entry = args::entry(case).map_err(Error::Usage)?;
        let (module, func) = if with_kernel {
            let module = backend.module(entry.module)?;
            let func = backend.function(&module, &entry.name)?;
            (Some(module), Some(func))
        } else {
            (None, None)
        };
        if let (Some(percent), Some(func)) = (args::shared_carveout_percent(&entry), &func) {
            backend.call(
                &format!("setting the shared-memory carveout of {}", entry.name),
                || {
                    backend.ctx.bind_to_thread()?;
                    func.set_attribute(
                        CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                        percent,
                    )
                },
            )?;
        }
        let grid = match (args::grid_is_one_wave(case.family), &func) {
            (false, _) => 1, // unused: the launch's grid is the case's own
            (true, Some(func)) => backend.one_wave(func, &entry.name)?,
            (true, None) => {
                return Err(Error::Internal(format!(
                    "{}: a one-wave grid needs its kernel",
                    entry.name
                )))
            }
        };
        let launch = args::plan(case, grid).map_err(Error::Usage)?;
        // gemm (branch gemm): more than 48 KiB of shared memory is raised per function.
        if let Some(func) = &func {
            gemm::raise_dynamic_shared(backend, func, &launch)?;
        }
        let resources = func
            .as_ref()
            .and_then(|func| registers_and_local_bytes(backend, func));
        let free = backend.free_bytes()?;
        let needed = launch.device_bytes();
        if needed > free / 100 * 95 {
            return Err(Error::OutOfMemory {
                case: case.id(),
                device: backend.info.id.clone(),
                needed_bytes: needed,
                free_bytes: free,
            });
        }
        let stream = &*backend.stream;
        let arrays = upload_arrays(backend, &launch, &entry.name)?;
        let copies = rotation_copies(backend, &launch, &arrays, &entry.name)?;
        let tensor_maps = encode_tensor_maps(backend, &launch, &arrays, &copies, &entry.name)?;
        let events = backend.call(&format!("creating the events of {}", entry.name), || {
            // Timing must be on: cudarc's default (`None`) creates events without it.
            let start = backend
                .ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            let end = backend
                .ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            // The copies above are queued on the stream before the first start event, so they
            // never count in a sample; finishing them here also reports a failed copy now,
            // as this case's error, instead of in the first timed run.
            stream.synchronize()?;
            Ok((start, end))
        })?;
        let cfg = LaunchConfig {
            grid_dim: (launch.grid, 1, 1),
            block_dim: (launch.block, 1, 1),
            shared_mem_bytes: launch.dynamic_shared_bytes,
        };
        Ok(GpuCase {
            backend,
            case: case.clone(),
            launch,
            func,
            cfg,
            arrays: ManuallyDrop::new(arrays),
            copies: ManuallyDrop::new(copies),
            next_copy: 0,
            events: ManuallyDrop::new(events),
            module: ManuallyDrop::new(module),
            per_launch_secs: None,
            launches: 0,
            clock_fault: None,
            tensor_maps,
            resources,
        })
    }

    fn array(&self, role: Role) -> Result<&DeviceWords> {
        self.copy(role, 0)
    }

    /// Copy `copy` of the array of `role`: 0 is the array itself, and only a rotating array
    /// has others ([`Launch::rotation`]).
    fn copy(&self, role: Role, copy: u64) -> Result<&DeviceWords> {
        find_copy(&self.arrays, &self.copies, &self.launch, role, copy).ok_or_else(|| {
            Error::Internal(format!(
                "{} has no copy {copy} of its {role:?} array",
                self.launch.entry.name
            ))
        })
    }

    /// The argument builder of every copy of the rotating array, in order: launch `i` takes
    /// builder `i mod copies` (one builder where nothing rotates).
    fn argument_sets(&self) -> Result<Vec<LaunchArgs<'_>>> {
        (0..self.launch.copies())
            .map(|copy| self.arguments(copy))
            .collect()
    }

    /// Takes the copies the next `reps` launches read, in turn from [`GpuCase::next_copy`]:
    /// the first one's index, for [`GpuCase::argument_sets`].
    fn take_copies(&mut self, reps: u32) -> u64 {
        let first = self.next_copy;
        self.next_copy = (first + u64::from(reps)) % self.launch.copies();
        first
    }

    /// The kernel's arguments for a launch that reads copy `copy` of the rotating array (0
    /// where none rotates), pushed from the launch's description and nothing else: in its
    /// order, each at its kind's width. Every pushed pointer points into `self` (an array's
    /// device address, a scalar in `self.launch.params`), which the builder borrows, so none
    /// can move or be freed while the builder can launch.
    fn arguments(&self, copy: u64) -> Result<LaunchArgs<'_>> {
        let func = self.func.as_ref().ok_or_else(|| {
            Error::Internal(format!(
                "{} was prepared for its arrays only, not to be launched",
                self.launch.entry.name
            ))
        })?;
        let mut launch = self.backend.stream.launch_builder(func);
        let copy_of = |role: Role| {
            if self.launch.copies_of(role) > 1 {
                copy
            } else {
                0
            }
        };
        for (i, p) in self.launch.params.iter().enumerate() {
            match &p.arg {
                Arg::Buffer(role) => self.copy(*role, copy_of(*role))?.push(&mut launch),
                Arg::TensorMap(map) => {
                    let map = self
                        .tensor_maps
                        .get(i)
                        .and_then(|maps| maps.get(copy_of(map.role) as usize))
                        .ok_or_else(|| {
                            Error::Internal(format!(
                                "{}: tensor map {} was not encoded",
                                self.launch.entry.name, p.name
                            ))
                        })?;
                    launch.arg(map);
                }
                Arg::U64(v) | Arg::B64(v) => {
                    launch.arg(v);
                }
                Arg::U32(v) | Arg::B32(v) => {
                    launch.arg(v);
                }
                Arg::F32(v) => {
                    launch.arg(v);
                }
                Arg::F64(v) => {
                    launch.arg(v);
                }
            }
        }
        Ok(launch)
    }

    /// Words of an array, read back once all queued work has finished.
    fn read(&self, role: Role) -> Result<Vec<u64>> {
        let array = self.array(role)?;
        let stream = &*self.backend.stream;
        self.backend.call(
            &format!("reading back {:?} of {}", role, self.launch.entry.name),
            || {
                let words = match array {
                    DeviceWords::W32(s) => {
                        stream.clone_dtoh(s)?.into_iter().map(u64::from).collect()
                    }
                    DeviceWords::W64(s) => stream.clone_dtoh(s)?,
                };
                // A copy to pageable memory returns when it is done, but say so explicitly.
                stream.synchronize()?;
                Ok(words)
            },
        )
    }

    /// Waits for `event` without blocking forever ([`CudaBackend::wait_event`]).
    fn wait(&self, event: &CudaEvent, what: &str, during: &str, deadline: Duration) -> Result<()> {
        self.backend.wait_event(event, what, during, deadline)
    }
}

impl PreparedCase for GpuCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let during = format!("running {}", self.launch.entry.name);
        let first = self.take_copies(reps);
        let mut launches = self.argument_sets()?;
        let (start, end) = &*self.events;
        let stream = &*self.backend.stream;
        let cfg = self.cfg;
        // The host's clock around the batch: both events lie inside it.
        let host_start = Instant::now();
        self.backend.call(&during, || {
            start.record(stream)?;
            for r in 0..u64::from(reps) {
                let launch = &mut launches[((first + r) % self.launch.copies()) as usize];
                // SAFETY: the arguments are the launch's description, which the offline tests
                // check against the entry's `.param` list (count, order, kind, width) and run
                // under the PTX interpreter with arrays of exactly the described sizes; every
                // array here (each copy of a rotating one too) is at least that size (checked
                // in `new`); the kernels write only their output and clock arrays.
                unsafe { launch.launch(cfg) }?;
            }
            end.record(stream)
        })?;
        let deadline = batch_deadline(self.per_launch_secs, reps, self.backend.deadline);
        self.wait(end, &self.launch.entry.name, &during, deadline)?;
        let ms = self.backend.call(&during, || start.elapsed_ms(end))?;
        let host_secs = host_start.elapsed().as_secs_f64();
        let secs = ms as f64 / 1e3;
        self.per_launch_secs = Some(secs / f64::from(reps.max(1)));
        self.launches += u64::from(reps);
        if self.case.family == Family::Launch && self.clock_fault.is_none() {
            let v = launch_rows::check_batch(secs, host_secs, reps);
            if !v.valid {
                self.clock_fault = Some(v);
                // no figure: a zero is not a time the runner can summarise
                return Ok(secs.max(f64::MIN_POSITIVE));
            }
        }
        Ok(secs)
    }

    fn verify(&mut self) -> Result<Verdict> {
        let words = self.read(Role::Output)?;
        if self.case.family == Family::Launch {
            if let Some(fault) = self.clock_fault.clone() {
                return Ok(fault);
            }
            let counted = words.first().copied().unwrap_or(0);
            let count = launch_rows::check_count(counted, self.launches);
            if !count.valid {
                return Ok(count);
            }
        }
        // The block records: the work every block counted (args::Launch::verify_records).
        let records = match self.launch.buffer(Role::Clocks) {
            Some(_) => self.read(Role::Clocks)?,
            None => Vec::new(),
        };
        Ok(self.launch.verify(&words, &records))
    }

    fn launch_note(&self) -> String {
        let launch = self.launch.note();
        match self.resources {
            Some((registers, local)) => resources_note(&launch, registers, local),
            None => launch,
        }
    }

    fn one_shot(&self) -> bool {
        self.case.family == Family::Launch
    }

    fn one_shot_reps(&self) -> u32 {
        match self.case.family {
            Family::Launch => launch_rows::LAUNCHES_PER_SAMPLE,
            _ => 1,
        }
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        self.launch.buffer(Role::Clocks)?;
        args::clock_from_records(&self.read(Role::Clocks).ok()?)
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        let arithmetic = match self.case.family {
            Family::Stream
            | Family::Efficiency
            | Family::Cache
            | Family::Latency
            | Family::Capacity
            | Family::Launch
            | Family::Link => false,
            Family::Peak | Family::Tensor => true,
            Family::Intensity => self.case.count().is_some_and(|k| k > 0),
            // gemm (branch gemm): a GEMM row's theory is its type's tensor peak.
            Family::Gemm => true,
        };
        arithmetic
            .then(|| {
                plan::theory_gflops(
                    &self.backend.info,
                    self.backend.compute_capability,
                    self.case.precision,
                    clock_mhz,
                )
            })
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_formats_like_nvml() {
        let bytes: [u8; 16] = core::array::from_fn(|i| (i * 17) as u8);
        assert_eq!(
            format_uuid(&bytes),
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        );
    }

    #[test]
    fn the_note_says_what_the_jit_gave_the_kernel() {
        assert_eq!(
            resources_note("grid 4x256", 154, 0),
            "grid 4x256, 154 registers a thread"
        );
        assert_eq!(
            resources_note("grid 4x256", 255, 96),
            "grid 4x256, 255 registers a thread, 96 B local (spilled)"
        );
    }

    #[test]
    fn other_gpu_processes_leave_this_one_out() {
        // this process and two others computing, one drawing
        assert_eq!(others_of(3, 1), 3);
        assert_eq!(others_of(1, 0), 0);
        assert_eq!(others_of(0, 0), 0);
    }

    #[test]
    fn architectures_by_compute_capability() {
        assert_eq!(gpu_microarch((9, 0)), Some("Hopper"));
        assert_eq!(gpu_microarch((8, 6)), Some("Ampere"));
        assert_eq!(gpu_microarch((8, 9)), Some("Ada Lovelace"));
        assert_eq!(gpu_microarch((12, 0)), Some("Blackwell"));
        assert_eq!(gpu_microarch((9, 9)), None);
    }

    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        match device_count() {
            Ok(n) => eprintln!("a CUDA driver is present here with {n} device(s)"),
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("--device host"),
                    "the error tells what to do: {msg}"
                );
            }
        }
    }

    /// A sticky error loses the device: the call that met it reports it, every later call is
    /// refused at once, naming it, and is not attempted.
    #[test]
    fn a_sticky_error_fails_later_calls_without_trying_them() {
        let health = Health::default();
        // the driver's name for each, or without a driver its number
        let oom = error_name(&DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        let illegal = error_name(&DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(["CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA error 700"].contains(&illegal.as_str()));
        let ok = health.call("cuda:0", "reading", || Ok(7));
        assert_eq!(ok.unwrap(), 7);
        // a plain error does not lose the device
        let plain = health.call("cuda:0", "allocating", || -> Result<(), _> {
            Err(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY))
        });
        assert!(plain.unwrap_err().to_string().contains(&oom));
        assert!(health.check("cuda:0").is_ok());
        let fault = health.call("cuda:0", "running triad_f32", || -> Result<(), _> {
            Err(DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS))
        });
        assert!(fault.unwrap_err().to_string().contains(&illegal));
        let mut tried = false;
        let later = health
            .call("cuda:0", "reading free memory", || {
                tried = true;
                Ok(())
            })
            .unwrap_err()
            .to_string();
        assert!(!tried, "a lost device is not called again");
        assert!(
            later.contains("cuda:0 is unusable since an earlier error")
                && later.contains(&format!("{illegal} during running triad_f32")),
            "{later}"
        );
        assert!(!health.runaway());
    }

    #[test]
    fn a_cudarc_panic_is_an_error_and_later_panics_still_print() {
        let r = guard("probing", || -> Result<(), DriverError> {
            panic!("Missing symbol cuFoo")
        });
        assert!(r.unwrap_err().to_string().contains("Missing symbol cuFoo"));
        // the hook is silent only inside `quietly`: outside it is whatever it was
        assert_eq!(QUIET.with(Cell::get), 0);
    }

    #[test]
    fn grids_are_whole_and_within_the_driver_limit() {
        assert_eq!(one_wave_grid(132, 8, "k").unwrap(), 1056);
        let zero = one_wave_grid(132, 0, "fma_f64").unwrap_err().to_string();
        assert!(zero.contains("occupancy 0"), "{zero}");
        assert!(one_wave_grid(u32::MAX, 2, "k").is_err());
        assert!(
            one_wave_grid(1 << 16, 1 << 15, "k").is_err(),
            "2^31 > 2^31 - 1"
        );
    }

    /// What `fault_for_tests` runs really faults: the interpreter, which checks every access,
    /// refuses its store.
    #[test]
    fn the_fault_kernel_faults() {
        let m = ptxsim::Module::parse(FAULT_PTX).unwrap();
        let mut mem = ptxsim::Memory::new();
        let e = m
            .launch("roofprobe_fault", (1, 1, 1), (32, 1, 1), 0, &[], &mut mem)
            .unwrap_err();
        assert!(e.to_string().contains("st.global"), "{e}");
    }

    /// A case's first batch may run for the whole cap; later ones for 20 times what their
    /// launches took, never less than the floor nor more than the cap.
    #[test]
    fn a_batch_deadline_follows_the_case() {
        let cap = Duration::from_secs(10);
        assert_eq!(batch_deadline(None, 100, cap), cap);
        assert_eq!(batch_deadline(Some(f64::NAN), 1, cap), cap);
        // 50 launches of 4 ms: 0.2 s expected, 4 s allowed
        assert_eq!(batch_deadline(Some(4e-3), 50, cap), Duration::from_secs(4));
        // 1 launch of 1 µs: the floor
        assert_eq!(batch_deadline(Some(1e-6), 1, cap), DEADLINE_FLOOR);
        // 10 launches of 1 s: the cap
        assert_eq!(batch_deadline(Some(1.0), 10, cap), cap);
        // a cap below the floor wins (a test that wants a short deadline)
        let short = Duration::from_secs(1);
        assert_eq!(batch_deadline(Some(1e-6), 1, short), short);
    }

    #[test]
    fn sticky_errors_are_the_documented_ones() {
        assert!(
            sticky_code(226),
            "CUDA_ERROR_CONTAINED, unknown to the binding"
        );
        assert!(!sticky_code(225) && !sticky_code(2) && !sticky_code(913));
        assert!(is_sticky(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(is_sticky(CUresult::CUDA_ERROR_LAUNCH_FAILED));
        assert!(!is_sticky(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(!is_sticky(CUresult::CUDA_ERROR_INVALID_VALUE));
        assert!(!is_sticky(CUresult::CUDA_ERROR_NOT_READY));
    }
}
