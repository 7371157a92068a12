//! The CUDA driver itself, before and around any device: finding and loading `libcuda` (a
//! missing library panics inside cudarc, so it is probed first), initialising it within a time
//! limit, turning its errors and cudarc's panics into [`Error`]s with the driver's own message,
//! and telling sticky errors (the context is lost) from the others ([`Health`]).

use crate::{Error, Result};
use cudarc::driver::sys::CUresult;
use cudarc::driver::DriverError;
use std::cell::Cell;
use std::sync::{Once, OnceLock};
use std::time::Duration;

thread_local! {
    /// How many [`quietly`] calls are running on this thread.
    pub(super) static QUIET: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, catching a panic without printing it. The process's panic hook is wrapped once,
/// and stays silent only on a thread that is inside this function: swapping the hook around
/// every call races between threads (tests open devices on several) and can leave every later
/// panic of the process silent.
pub(super) fn quietly<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
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

pub(super) fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
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
pub(super) fn raw_code(code: CUresult) -> u32 {
    code as u32
}

/// The driver's name for an error code (`CUDA_ERROR_ILLEGAL_ADDRESS`): the driver's own
/// (`cuGetErrorName`, which knows its codes), else its number.
pub(super) fn error_name(e: &DriverError) -> String {
    // cuGetErrorName is a driver call: without the library it would panic.
    quietly(|| e.error_name().map(|s| s.to_string_lossy().into_owned()))
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or_else(|| unnamed_error(raw_code(e.0)))
}

/// What an error the driver gives no name for is called: `CUDA error 34`.
pub(super) fn unnamed_error(code: u32) -> String {
    format!("CUDA error {code}")
}

pub(super) fn driver_error(during: &str, e: &DriverError) -> Error {
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
pub(super) fn sticky_code(code: u32) -> bool {
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
    pub(super) lost: OnceLock<Lost>,
}

#[derive(Debug)]
pub(super) struct Lost {
    pub(super) cause: String,
    /// A kernel may still be running: freeing anything could wait for it forever.
    pub(super) runaway: bool,
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

    pub(super) fn lose(&self, cause: String, runaway: bool) {
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
/// (damaged, truncated) ends the process with one line ([`super::loading::guarded`]).
pub fn driver_present() -> bool {
    static LOADED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if LOADED.load(std::sync::atomic::Ordering::Relaxed) {
        return true;
    }
    let present = super::loading::guarded(
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
pub(super) fn init_driver() -> Result<()> {
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
pub(super) const STUB_LIBRARY: u32 = 34;

/// `cuInit`'s message, with what to do where the libcuda loaded is a CUDA toolkit's stub
/// (`lib64/stubs/libcuda.so`, for linking only, which answers every call with
/// `CUDA_ERROR_STUB_LIBRARY`): its folder on `LD_LIBRARY_PATH` stands in for the driver.
pub(super) fn with_stub_hint(message: String, loaded: Option<&str>) -> String {
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
pub(super) fn driver_cuda_version() -> Option<String> {
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
