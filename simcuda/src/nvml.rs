//! A simulated NVML: the entry points roofprobe reaches through `nvml-wrapper` (initialisation,
//! the driver version, devices by index, UUID and PCI bus id, their identity, clocks, power,
//! temperature, clock-event reasons, processes, PCIe link and topology), answering for the
//! simulated driver's devices, where the links name this library `libnvidia-ml.so.1`.
//!
//! It is the same library as the driver, so it sees what the devices do: while work runs on a
//! device (a kernel, a copy, a library routine, on any stream), and for [`BUSY_HOLD`] after, NVML
//! reports it busy, and idle otherwise, as a GPU's counters do:
//!
//! | reading | while work runs | idle |
//! | --- | --- | --- |
//! | SM clock | `clock_mhz` (the last kernel's, where `clock_fall` makes it fall) | half of it, 1 MHz at least (a GPU drops its clock at idle) |
//! | memory clock | 1000 MHz (the driver attribute's and NVML's maximum), or `memory_p2`'s below it (a GeForce board in P2) | the same |
//! | power | `power_w` | a quarter of it |
//! | power reading (`nvmlDeviceGetPowerUsage`) | the power over the last second, as Ampere's and later boards (but the A100) report it (or a fixed `power_reading`) | the same |
//! | energy (`nvmlDeviceGetTotalEnergyConsumption`) | the power integrated since the device was made, as of the counter's last update (`energy_ms`) | the same |
//! | temperature | 70 °C | 35 °C |
//! | clock-event reasons | `throttle` | `gpu_idle` |
//!
//! So a row whose conditions were read around its samples instead of during them shows the idle
//! figures, and a test can tell.
//!
//! Under a scripted job (the `workload` setting, [`crate::workload`]) the readings follow the
//! script instead, from the moment NVML is initialised: busy while the job's busiest engine
//! is (its power in proportion), memory used what the job holds, the job listed as a compute
//! process (`job_pid`) with that memory, NVML's utilisation the script's, and the GPM metrics
//! (`nvmlGpmSampleGet`, `nvmlGpmMetricsGet`: SM activity and occupancy, DRAM bandwidth, the
//! tensor, FP64, FP32 and FP16 pipes, PCIe) the script's levels averaged between two samples.
//! GPM answers on compute capability 9.0 and later unless `gpm` says otherwise (`no`: the device
//! has none; `absent`: NVML is too old for it). Without a script, GPM reports the SMs busy while
//! this process's work runs, and nothing else. `vanish` makes the device fall off the bus:
//! every call on it answers `GPU_IS_LOST` from then on. The settings (`power_w`, `throttle`, `nvml_reasons`, `others`)
//! are the driver's ([`crate::config`]). A device with no NVLink answers `NOT_SUPPORTED` for its
//! links, as a PCIe card does; its PCIe link is Gen5 x16, now and at most, and two devices meet
//! at a host bridge.

use crate::config::{Config, Gpm, NvmlReasons, MEMORY_CLOCK_MHZ};
use crate::driver::try_driver;
use crate::workload::{Levels, Workload};
use std::ffi::{c_char, c_uint, c_ulonglong, c_void, CStr};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// nvmlReturn_t values (nvml.h).
mod ret {
    pub const SUCCESS: u32 = 0;
    pub const UNINITIALIZED: u32 = 1;
    pub const INVALID_ARGUMENT: u32 = 2;
    pub const NOT_SUPPORTED: u32 = 3;
    pub const NOT_FOUND: u32 = 6;
    pub const INSUFFICIENT_SIZE: u32 = 7;
    pub const FUNCTION_NOT_FOUND: u32 = 13;
    pub const GPU_IS_LOST: u32 = 15;
    pub const ARGUMENT_VERSION_MISMATCH: u32 = 25;
    pub const UNKNOWN: u32 = 999;
}

type Ret<T = ()> = Result<T, u32>;

/// The configuration NVML answers from: the driver's once `cuInit` ran, else the environment's,
/// read at `nvmlInit`.
static CONFIG: OnceLock<Config> = OnceLock::new();

/// When NVML was first initialised in this process: the scripted job's clock starts there.
static START: OnceLock<Instant> = OnceLock::new();

/// Seconds on the scripted job's clock at `at`.
fn script_secs(at: Instant) -> f64 {
    at.saturating_duration_since(*START.get_or_init(Instant::now))
        .as_secs_f64()
}

/// The scripted job, if there is one, and the seconds on its clock now.
fn scripted() -> Option<(&'static Workload, f64)> {
    let w = config().ok()?.workload.as_ref()?;
    Some((w, script_secs(Instant::now())))
}

fn config() -> Ret<&'static Config> {
    match try_driver() {
        Ok(d) => Ok(&d.config),
        Err(_) => CONFIG.get().ok_or(ret::UNINITIALIZED),
    }
}

fn nvml(name: &str, f: impl FnOnce() -> Ret) -> c_uint {
    crate::guarded(name, ret::SUCCESS, ret::UNKNOWN, f)
}

/// Device handles: far from small integers and from the driver's handles.
const DEVICE_BASE: usize = 0x4e56_4d4c_0000;

fn handle_of(ordinal: u32) -> *mut c_void {
    (DEVICE_BASE + ordinal as usize) as *mut c_void
}

fn ordinal_of(device: *mut c_void) -> Ret<u32> {
    let c = config()?;
    let ordinal = (device as usize)
        .checked_sub(DEVICE_BASE)
        .and_then(|o| u32::try_from(o).ok())
        .filter(|&o| o < c.devices)
        .ok_or(ret::INVALID_ARGUMENT)?;
    // (a device that fell off the bus answers nothing about itself)
    match c.vanish_secs {
        Some(secs) if script_secs(Instant::now()) >= secs => Err(ret::GPU_IS_LOST),
        _ => Ok(ordinal),
    }
}

/// The simulated driver's device of `ordinal`, once `cuInit` has made the driver.
fn device_at(ordinal: u32) -> Ret<std::sync::Arc<crate::driver::Device>> {
    try_driver()
        .map_err(|_| ret::UNINITIALIZED)?
        .devices
        .get(ordinal as usize)
        .cloned()
        .ok_or(ret::INVALID_ARGUMENT)
}

/// How long the readings stay busy after work ends: a real board keeps its clocks and heat for
/// longer (its clocks fall over tens to hundreds of milliseconds); the gap between two batches
/// of launches on a loaded host must not read as an idle board.
pub const BUSY_HOLD: Duration = Duration::from_millis(50);

/// What the device is doing now: `(busy, a process holds its context)`, busy within
/// [`BUSY_HOLD`] of its last work; under a scripted job, busy while its busiest engine is.
fn activity(ordinal: u32) -> (bool, bool) {
    let (busy, in_use) =
        device_at(ordinal).map_or((false, false), |d| (d.busy_within(BUSY_HOLD), d.in_use()));
    match scripted() {
        Some((w, t)) => (w.at(t).load() >= 1.0, in_use),
        None => (busy, in_use),
    }
}

unsafe fn put<T>(out: *mut T, v: T) -> Ret {
    unsafe { crate::put_or(out, v, ret::INVALID_ARGUMENT) }
}

/// Copies `text` and its NUL into `out` of `len` bytes, or `INSUFFICIENT_SIZE`.
unsafe fn put_text(out: *mut c_char, len: c_uint, text: &str) -> Ret {
    if out.is_null() {
        return Err(ret::INVALID_ARGUMENT);
    }
    if text.len() + 1 > len as usize {
        return Err(ret::INSUFFICIENT_SIZE);
    }
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), out as *mut u8, text.len());
        *out.add(text.len()) = 0;
    }
    Ok(())
}

/// The device's UUID as NVML writes it, from the bytes `cuDeviceGetUuid` gives. Written here
/// rather than taken from roofprobe's `format_uuid`, which turns the driver's bytes into the text
/// it asks NVML for: a mistake there must fail the match, not be repeated by the simulation.
fn uuid_text(ordinal: u32) -> String {
    let h: Vec<String> = crate::uuid(ordinal as i32)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// The PCI bus id `cuDeviceGetPCIBusId` gives, without its NUL.
fn bus_id(ordinal: u32) -> String {
    crate::pci_bus_id(ordinal as i32)
}

// ---- initialisation -----------------------------------------------------------------------

fn init() -> Ret {
    START.get_or_init(Instant::now);
    match Config::from_env() {
        Ok(c) => {
            let _ = CONFIG.set(c);
            Ok(())
        }
        Err(e) => {
            eprintln!("simcuda (NVML): {e}");
            Err(ret::UNKNOWN)
        }
    }
}

#[no_mangle]
pub extern "C" fn nvmlInit_v2() -> c_uint {
    nvml("nvmlInit_v2", init)
}

#[no_mangle]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> c_uint {
    nvml("nvmlInitWithFlags", init)
}

#[no_mangle]
pub extern "C" fn nvmlShutdown() -> c_uint {
    nvml("nvmlShutdown", || config().map(|_| ()))
}

#[no_mangle]
pub extern "C" fn nvmlErrorString(result: c_uint) -> *const c_char {
    let text: &'static CStr = match result {
        ret::SUCCESS => c"Success",
        ret::UNINITIALIZED => c"Uninitialized",
        ret::INVALID_ARGUMENT => c"Invalid Argument",
        ret::NOT_SUPPORTED => c"Not Supported",
        ret::NOT_FOUND => c"Not Found",
        ret::INSUFFICIENT_SIZE => c"Insufficient Size",
        ret::FUNCTION_NOT_FOUND => c"Function Not Found",
        ret::GPU_IS_LOST => c"GPU is lost",
        ret::ARGUMENT_VERSION_MISMATCH => c"Argument version mismatch",
        _ => c"Unknown Error",
    };
    text.as_ptr()
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(version: *mut c_char, len: c_uint) -> c_uint {
    nvml("nvmlSystemGetDriverVersion", || {
        config()?;
        unsafe { put_text(version, len, "simcuda") }
    })
}

// ---- devices --------------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> c_uint {
    nvml("nvmlDeviceGetCount_v2", || unsafe {
        put(count, config()?.devices)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut *mut c_void,
) -> c_uint {
    nvml("nvmlDeviceGetHandleByIndex_v2", || {
        if index >= config()?.devices {
            return Err(ret::INVALID_ARGUMENT);
        }
        unsafe { put(device, handle_of(index)) }
    })
}

/// The device whose text `of` gives `wanted`, or `NOT_FOUND`.
unsafe fn find(wanted: *const c_char, of: fn(u32) -> String, device: *mut *mut c_void) -> Ret {
    if wanted.is_null() {
        return Err(ret::INVALID_ARGUMENT);
    }
    let wanted = unsafe { CStr::from_ptr(wanted) }.to_string_lossy();
    let ordinal = (0..config()?.devices)
        .find(|&o| of(o).eq_ignore_ascii_case(&wanted))
        .ok_or(ret::NOT_FOUND)?;
    unsafe { put(device, handle_of(ordinal)) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByUUID(
    uuid: *const c_char,
    device: *mut *mut c_void,
) -> c_uint {
    nvml("nvmlDeviceGetHandleByUUID", || unsafe {
        find(uuid, uuid_text, device)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    bus: *const c_char,
    device: *mut *mut c_void,
) -> c_uint {
    nvml("nvmlDeviceGetHandleByPciBusId_v2", || unsafe {
        find(bus, bus_id, device)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: *mut c_void,
    uuid: *mut c_char,
    len: c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetUUID", || unsafe {
        put_text(uuid, len, &uuid_text(ordinal_of(device)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: *mut c_void,
    name: *mut c_char,
    len: c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetName", || {
        ordinal_of(device)?;
        unsafe { put_text(name, len, &config()?.name) }
    })
}

/// nvmlPciInfo_t (nvml.h).
#[repr(C)]
pub struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(device: *mut c_void, pci: *mut PciInfo) -> c_uint {
    nvml("nvmlDeviceGetPciInfo_v3", || {
        let ordinal = ordinal_of(device)?;
        if pci.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        let id = bus_id(ordinal);
        let legacy = id.strip_prefix("0000").unwrap_or(&id).to_string();
        let mut info = PciInfo {
            bus_id_legacy: [0; 16],
            domain: 0,
            bus: 0x10 + ordinal,
            device: 0,
            pci_device_id: 0,
            pci_sub_system_id: 0,
            bus_id: [0; 32],
        };
        unsafe {
            put_text(info.bus_id_legacy.as_mut_ptr(), 16, &legacy)?;
            put_text(info.bus_id.as_mut_ptr(), 32, &id)?;
            pci.write(info);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetVbiosVersion(
    device: *mut c_void,
    version: *mut c_char,
    len: c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetVbiosVersion", || {
        ordinal_of(device)?;
        unsafe { put_text(version, len, "simcuda") }
    })
}

/// ECC and MIG are off, as the driver's ECC attribute says.
unsafe fn off_and_off(device: *mut c_void, current: *mut c_uint, pending: *mut c_uint) -> Ret {
    ordinal_of(device)?;
    unsafe {
        put(current, 0)?;
        put(pending, 0)
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetEccMode(
    device: *mut c_void,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetEccMode", || unsafe {
        off_and_off(device, current, pending)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: *mut c_void,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetMigMode", || unsafe {
        off_and_off(device, current, pending)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(
    device: *mut c_void,
    milliwatts: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetEnforcedPowerLimit", || {
        ordinal_of(device)?;
        unsafe { put(milliwatts, config()?.power_w * 2 * 1000) }
    })
}

/// nvmlClockType_t: graphics 0, SM 1, memory 2, video 3. `sm_mhz`: the clock the device's
/// kernels run at now (the last one's, where the clock falls over launches); `memory_mhz` the
/// memory's (the maximum, or a P2 state's below it).
fn clock(kind: c_uint, busy: bool, sm_mhz: u32, memory_mhz: u32) -> Ret<c_uint> {
    let sm = sm_mhz;
    match kind {
        0 | 1 | 3 if busy => Ok(sm),
        0 | 1 | 3 => Ok((sm / 2).max(1)),
        2 => Ok(memory_mhz),
        _ => Err(ret::INVALID_ARGUMENT),
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    device: *mut c_void,
    kind: c_uint,
    mhz: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetClockInfo", || {
        let ordinal = ordinal_of(device)?;
        let (busy, _) = activity(ordinal);
        let sm_mhz = device_at(ordinal).map_or(config()?.clock_mhz, |d| d.clock_mhz());
        let memory_mhz = config()?.memory_p2_mhz.unwrap_or(MEMORY_CLOCK_MHZ);
        unsafe { put(mhz, clock(kind, busy, sm_mhz, memory_mhz)?) }
    })
}

/// The maximum clocks, and the application clocks (set to the maximum, as on a data-centre
/// board left at its defaults).
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxClockInfo(
    device: *mut c_void,
    kind: c_uint,
    mhz: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetMaxClockInfo", || {
        ordinal_of(device)?;
        unsafe {
            put(
                mhz,
                clock(kind, true, config()?.clock_mhz, MEMORY_CLOCK_MHZ)?,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetApplicationsClock(
    device: *mut c_void,
    kind: c_uint,
    mhz: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetApplicationsClock", || {
        ordinal_of(device)?;
        unsafe {
            put(
                mhz,
                clock(kind, true, config()?.clock_mhz, MEMORY_CLOCK_MHZ)?,
            )
        }
    })
}

/// The simulated driver's device behind an NVML handle (its busy time is the driver's).
fn simulated(device: *mut c_void) -> Ret<std::sync::Arc<crate::driver::Device>> {
    device_at(ordinal_of(device)?)
}

/// Watts drawn busy and idle.
fn watts() -> Ret<(f64, f64)> {
    let busy = f64::from(config()?.power_w);
    Ok((busy, busy / 4.0))
}

/// Millijoules the device drew between `from` and `to`: idle power throughout, and the
/// difference while it was busy.
fn millijoules(log: &crate::driver::BusyLog, from: Instant, to: Instant) -> Ret<f64> {
    let (busy, idle) = watts()?;
    let span = to.saturating_duration_since(from).as_secs_f64();
    let busy_secs = log.busy_between(from, to).as_secs_f64();
    Ok(1000.0 * (idle * span + (busy - idle) * busy_secs))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(
    device: *mut c_void,
    milliwatts: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetPowerUsage", || {
        let d = simulated(device)?;
        if let Some(watts) = config()?.power_reading {
            return unsafe { put(milliwatts, watts * 1000) };
        }
        if let Some((w, t)) = scripted() {
            // idle power, and the rest in proportion to the job's busiest engine
            let (busy, idle) = watts()?;
            let mw = 1000.0 * (idle + (busy - idle) * w.at(t).load() / 100.0);
            return unsafe { put(milliwatts, mw.round() as c_uint) };
        }
        let log = d.busy_log();
        // the last second's average (or the device's life, where shorter)
        let now = Instant::now();
        let from = now
            .checked_sub(Duration::from_secs(1))
            .map_or(log.born, |t| t.max(log.born));
        let secs = now.saturating_duration_since(from).as_secs_f64();
        let mw = if secs > 0.0 {
            millijoules(&log, from, now)? / secs
        } else {
            1000.0 * watts()?.1
        };
        unsafe { put(milliwatts, mw.round() as c_uint) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTotalEnergyConsumption(
    device: *mut c_void,
    energy: *mut c_ulonglong,
) -> c_uint {
    nvml("nvmlDeviceGetTotalEnergyConsumption", || {
        let d = simulated(device)?;
        let period = Duration::from_millis(u64::from(config()?.energy_ms));
        let mut log = d.busy_log();
        let now = Instant::now();
        // the counter moves once a period: between updates it shows the last one's value
        let shown = match log.energy_shown {
            Some((at, mj)) if now.saturating_duration_since(at) < period => mj,
            _ => {
                let born = log.born;
                let mj = millijoules(&log, born, now)? as u64;
                log.energy_shown = Some((now, mj));
                mj
            }
        };
        unsafe { put(energy, shown) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: *mut c_void,
    sensor: c_uint,
    celsius: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetTemperature", || {
        let (busy, _) = activity(ordinal_of(device)?);
        // NVML_TEMPERATURE_GPU is the only sensor
        if sensor != 0 {
            return Err(ret::INVALID_ARGUMENT);
        }
        unsafe { put(celsius, if busy { 70 } else { 35 }) }
    })
}

/// The clock-event reasons now, where this call answers under `nvml_reasons`.
unsafe fn reasons(device: *mut c_void, out: *mut c_ulonglong, answers: bool) -> Ret {
    let (busy, _) = activity(ordinal_of(device)?);
    if !answers {
        return Err(ret::FUNCTION_NOT_FOUND);
    }
    unsafe { put(out, if busy { config()?.throttle } else { 0x1 }) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(
    device: *mut c_void,
    out: *mut c_ulonglong,
) -> c_uint {
    nvml("nvmlDeviceGetCurrentClocksEventReasons", || unsafe {
        reasons(
            device,
            out,
            config()?.nvml_reasons != NvmlReasons::ThrottleOnly,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    device: *mut c_void,
    out: *mut c_ulonglong,
) -> c_uint {
    nvml("nvmlDeviceGetCurrentClocksThrottleReasons", || unsafe {
        reasons(
            device,
            out,
            config()?.nvml_reasons != NvmlReasons::EventsOnly,
        )
    })
}

/// nvmlProcessInfo_t as the `_v3` calls fill it (nvml.h's `nvmlProcessInfo_v2_t`).
#[repr(C)]
pub struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// Fills a process list as NVML does: `INSUFFICIENT_SIZE` with the count needed when `count`
/// is too small, else the entries and their count.
unsafe fn processes(pids: &[(u32, u64)], count: *mut c_uint, infos: *mut ProcessInfo) -> Ret {
    if count.is_null() {
        return Err(ret::INVALID_ARGUMENT);
    }
    let room = unsafe { *count } as usize;
    unsafe { *count = pids.len() as c_uint };
    if pids.is_empty() {
        return Ok(());
    }
    if room < pids.len() || infos.is_null() {
        return Err(ret::INSUFFICIENT_SIZE);
    }
    for (i, &(pid, bytes)) in pids.iter().enumerate() {
        unsafe {
            infos.add(i).write(ProcessInfo {
                pid,
                used_gpu_memory: bytes,
                gpu_instance_id: u32::MAX,
                compute_instance_id: u32::MAX,
            })
        };
    }
    Ok(())
}

/// This process, while it holds the device's context, and `others` more.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> c_uint {
    nvml("nvmlDeviceGetComputeRunningProcesses_v3", || {
        let (_, in_use) = activity(ordinal_of(device)?);
        let c = config()?;
        let others = (0..c.others).map(|i| (4_000_000 + i, 1 << 20));
        let mut pids: Vec<(u32, u64)> = in_use
            .then(|| (std::process::id(), 1 << 20))
            .into_iter()
            .chain(others)
            .collect();
        if let Some(bytes) = job_bytes() {
            pids.push((c.job_pid, bytes));
        }
        unsafe { processes(&pids, count, infos) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v3(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> c_uint {
    nvml("nvmlDeviceGetGraphicsRunningProcesses_v3", || {
        ordinal_of(device)?;
        unsafe { processes(&[], count, infos) }
    })
}

// ---- memory, utilisation and GPM (what `roofprobe watch` reads) ---------------------------

/// Bytes the scripted job holds on a device now: `None` where there is no script or the job
/// has ended.
fn job_bytes() -> Option<u64> {
    let (w, t) = scripted()?;
    let c = config().ok()?;
    (t < w.end_secs()).then(|| (w.memory_at(t) * c.memory_bytes as f64) as u64)
}

/// nvmlMemory_v2_t (nvml.h): its version is `sizeof | 2 << 24`.
#[repr(C)]
pub struct MemoryV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// The device's memory: the scripted job's where there is one, else what this process's
/// context and allocations hold.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: *mut c_void,
    memory: *mut MemoryV2,
) -> c_uint {
    nvml("nvmlDeviceGetMemoryInfo_v2", || {
        let ordinal = ordinal_of(device)?;
        if memory.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        if unsafe { (*memory).version } >> 24 != 2 {
            return Err(ret::ARGUMENT_VERSION_MISMATCH);
        }
        let c = config()?;
        let used = match scripted() {
            Some(_) => job_bytes().unwrap_or(0),
            None => device_at(ordinal).map_or(0, |d| {
                if d.in_use() {
                    d.used_bytes() + c.context_bytes
                } else {
                    0
                }
            }),
        }
        .min(c.memory_bytes);
        unsafe {
            (*memory).total = c.memory_bytes;
            (*memory).reserved = 0;
            (*memory).used = used;
            (*memory).free = c.memory_bytes - used;
        }
        Ok(())
    })
}

/// nvmlUtilization_t (nvml.h).
#[repr(C)]
pub struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

/// The time a kernel ran and the memory controller was busy, %: the script's (`util`,
/// `dram`), else 100 and 0 while this process's work runs.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    device: *mut c_void,
    rates: *mut Utilization,
) -> c_uint {
    nvml("nvmlDeviceGetUtilizationRates", || {
        let (busy, _) = activity(ordinal_of(device)?);
        let (gpu, memory) = match scripted() {
            Some((w, t)) => {
                let l = w.at(t);
                (l.util, l.dram)
            }
            None => (if busy { 100.0 } else { 0.0 }, 0.0),
        };
        unsafe {
            put(
                rates,
                Utilization {
                    gpu: gpu.round() as c_uint,
                    memory: memory.round() as c_uint,
                },
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetIndex(device: *mut c_void, index: *mut c_uint) -> c_uint {
    nvml("nvmlDeviceGetIndex", || unsafe {
        put(index, ordinal_of(device)?)
    })
}

/// Whether the GPM calls answer: `Ok` where the device has GPM, `NOT_SUPPORTED` where it has
/// none, `FUNCTION_NOT_FOUND` where NVML is too old.
fn gpm_answers() -> Ret {
    match config()?.gpm() {
        Gpm::Yes => Ok(()),
        Gpm::No => Err(ret::NOT_SUPPORTED),
        Gpm::Absent => Err(ret::FUNCTION_NOT_FOUND),
    }
}

/// nvmlGpmSupport_t (nvml.h).
#[repr(C)]
pub struct GpmSupport {
    version: c_uint,
    is_supported_device: c_uint,
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmQueryDeviceSupport(
    device: *mut c_void,
    support: *mut GpmSupport,
) -> c_uint {
    nvml("nvmlGpmQueryDeviceSupport", || {
        ordinal_of(device)?;
        if config()?.gpm() == Gpm::Absent {
            return Err(ret::FUNCTION_NOT_FOUND);
        }
        if support.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        if unsafe { (*support).version } != 1 {
            return Err(ret::ARGUMENT_VERSION_MISMATCH);
        }
        unsafe { (*support).is_supported_device = u32::from(gpm_answers().is_ok()) };
        Ok(())
    })
}

/// A GPM sample: which device, and when it was taken (`None`: allocated, not yet taken).
pub struct GpmSample {
    taken: Option<(u32, Instant)>,
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmSampleAlloc(sample: *mut *mut GpmSample) -> c_uint {
    nvml("nvmlGpmSampleAlloc", || {
        gpm_answers().or_else(|e| {
            if e == ret::NOT_SUPPORTED {
                Ok(())
            } else {
                Err(e)
            }
        })?;
        unsafe { put(sample, Box::into_raw(Box::new(GpmSample { taken: None }))) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmSampleFree(sample: *mut GpmSample) -> c_uint {
    nvml("nvmlGpmSampleFree", || {
        if sample.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        // SAFETY: allocated by nvmlGpmSampleAlloc, freed once (the caller's contract).
        drop(unsafe { Box::from_raw(sample) });
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmSampleGet(device: *mut c_void, sample: *mut GpmSample) -> c_uint {
    nvml("nvmlGpmSampleGet", || {
        let ordinal = ordinal_of(device)?;
        gpm_answers()?;
        if sample.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        unsafe { (*sample).taken = Some((ordinal, Instant::now())) };
        Ok(())
    })
}

/// nvmlGpmMetric_t (nvml.h).
#[repr(C)]
pub struct GpmMetric {
    metric_id: c_uint,
    nvml_return: c_uint,
    value: f64,
    short_name: *mut c_char,
    long_name: *mut c_char,
    unit: *mut c_char,
}

/// nvmlGpmMetricsGet_t (nvml.h, `NVML_GPM_METRICS_GET_VERSION` 1).
#[repr(C)]
pub struct GpmMetricsGet {
    version: c_uint,
    num_metrics: c_uint,
    sample1: *mut GpmSample,
    sample2: *mut GpmSample,
    metrics: [GpmMetric; 210],
}

/// The levels a device shows between two instants: the script's mean, else its SMs busy while
/// this process's work ran.
fn levels_between(ordinal: u32, from: Instant, to: Instant) -> Levels {
    if let Some((w, _)) = scripted() {
        return w.mean(script_secs(from), script_secs(to));
    }
    let span = to.saturating_duration_since(from).as_secs_f64();
    let busy =
        device_at(ordinal).map_or(0.0, |d| d.busy_log().busy_between(from, to).as_secs_f64());
    let sm = if span > 0.0 { 100.0 * busy / span } else { 0.0 };
    Levels {
        sm,
        util: sm,
        ..Levels::default()
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// A GPM metric's value from the levels (nvml.h's metric ids), or `NOT_SUPPORTED`.
fn metric(id: c_uint, l: &Levels) -> Ret<f64> {
    Ok(match id {
        1 | 2 => l.sm,                                // GRAPHICS_UTIL, SM_UTIL
        3 => l.occupancy,                             // SM_OCCUPANCY
        4 => 0.0,                                     // INTEGER_UTIL
        5 => (l.tensor + l.imma + l.dfma).min(100.0), // ANY_TENSOR_UTIL
        6 => l.dfma,                                  // DFMA_TENSOR_UTIL
        7 => l.tensor,                                // HMMA_TENSOR_UTIL
        9 => l.imma,                                  // IMMA_TENSOR_UTIL
        10 => l.dram,                                 // DRAM_BW_UTIL
        11 => l.fp64,                                 // FP64_UTIL
        12 => l.fp32,                                 // FP32_UTIL
        13 => l.fp16,                                 // FP16_UTIL
        // PCIE_TX_PER_SEC, PCIE_RX_PER_SEC: MiB per second (nvml.h), the script's bytes
        20 => l.pcie_tx / MIB,
        21 => l.pcie_rx / MIB,
        _ => return Err(ret::NOT_SUPPORTED),
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmMetricsGet(request: *mut GpmMetricsGet) -> c_uint {
    nvml("nvmlGpmMetricsGet", || {
        gpm_answers()?;
        if request.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        // SAFETY: the caller passes a request of nvml.h's layout (checked by its version), with
        // room for `num_metrics` metrics at least; only those are touched, through the pointer
        // (a caller built against an older nvml.h has a shorter array than this declaration).
        let (version, count, sample1, sample2) = unsafe {
            (
                (*request).version,
                (*request).num_metrics as usize,
                (*request).sample1,
                (*request).sample2,
            )
        };
        if version != 1 {
            return Err(ret::ARGUMENT_VERSION_MISMATCH);
        }
        if sample1.is_null() || sample2.is_null() || count > 210 {
            return Err(ret::INVALID_ARGUMENT);
        }
        // SAFETY: samples the caller allocated with nvmlGpmSampleAlloc and has not freed.
        let (a, b) = unsafe { ((*sample1).taken, (*sample2).taken) };
        let (Some((da, from)), Some((db, to))) = (a, b) else {
            return Err(ret::INVALID_ARGUMENT);
        };
        if da != db || to < from {
            return Err(ret::INVALID_ARGUMENT);
        }
        let levels = levels_between(da, from, to);
        // SAFETY: as above: `count` metrics, in the caller's request.
        let metrics = unsafe {
            std::slice::from_raw_parts_mut(
                std::ptr::addr_of_mut!((*request).metrics).cast::<GpmMetric>(),
                count,
            )
        };
        for m in metrics {
            match metric(m.metric_id, &levels) {
                Ok(v) => {
                    m.value = v;
                    m.nvml_return = ret::SUCCESS;
                }
                Err(e) => m.nvml_return = e,
            }
            m.short_name = std::ptr::null_mut();
            m.long_name = std::ptr::null_mut();
            m.unit = std::ptr::null_mut();
        }
        Ok(())
    })
}

// ---- links ----------------------------------------------------------------------------------

/// PCIe Gen5 x16, now and at most.
unsafe fn pcie(device: *mut c_void, out: *mut c_uint, value: c_uint) -> Ret {
    ordinal_of(device)?;
    unsafe { put(out, value) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkGeneration(
    device: *mut c_void,
    out: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetCurrPcieLinkGeneration", || unsafe {
        pcie(device, out, 5)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkWidth(
    device: *mut c_void,
    out: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetCurrPcieLinkWidth", || unsafe {
        pcie(device, out, 16)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkGeneration(
    device: *mut c_void,
    out: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetMaxPcieLinkGeneration", || unsafe {
        pcie(device, out, 5)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkWidth(
    device: *mut c_void,
    out: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetMaxPcieLinkWidth", || unsafe {
        pcie(device, out, 16)
    })
}

/// No NVLink: every link answers `NOT_SUPPORTED`, as on a PCIe card.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    device: *mut c_void,
    _link: c_uint,
    _active: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetNvLinkState", || {
        ordinal_of(device)?;
        Err(ret::NOT_SUPPORTED)
    })
}

/// Two devices meet at a host bridge (`NVML_TOPOLOGY_HOSTBRIDGE`); a device is its own
/// (`NVML_TOPOLOGY_INTERNAL`).
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTopologyCommonAncestor(
    first: *mut c_void,
    second: *mut c_void,
    level: *mut c_uint,
) -> c_uint {
    nvml("nvmlDeviceGetTopologyCommonAncestor", || {
        let same = ordinal_of(first)? == ordinal_of(second)?;
        unsafe { put(level, if same { 0 } else { 30 }) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-call protocol `nvml-wrapper` follows: a null list and a zero count ask for the
    /// count (`INSUFFICIENT_SIZE` when there are processes, success and 0 when none), and a
    /// list with room gets the entries.
    #[test]
    fn process_lists_answer_the_count_then_the_entries() {
        let mut count = 0;
        let none = unsafe { processes(&[], &mut count, std::ptr::null_mut()) };
        assert_eq!((none, count), (Ok(()), 0));
        let pids = [(7, 1 << 20), (4_000_000, 1 << 20)];
        let mut count = 0;
        let ask = unsafe { processes(&pids, &mut count, std::ptr::null_mut()) };
        assert_eq!((ask, count), (Err(ret::INSUFFICIENT_SIZE), 2));
        let mut list: Vec<ProcessInfo> = (0..4)
            .map(|_| ProcessInfo {
                pid: 0,
                used_gpu_memory: 0,
                gpu_instance_id: 0,
                compute_instance_id: 0,
            })
            .collect();
        let mut count = 4;
        let got = unsafe { processes(&pids, &mut count, list.as_mut_ptr()) };
        assert_eq!((got, count), (Ok(()), 2));
        assert_eq!((list[0].pid, list[1].pid, list[2].pid), (7, 4_000_000, 0));
    }

    #[test]
    fn text_needs_room_for_its_nul() {
        let mut buf = [1 as c_char; 8];
        assert_eq!(
            unsafe { put_text(buf.as_mut_ptr(), 7, "simcuda") },
            Err(ret::INSUFFICIENT_SIZE)
        );
        assert_eq!(unsafe { put_text(buf.as_mut_ptr(), 8, "simcuda") }, Ok(()));
        assert_eq!(
            unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str(),
            Ok("simcuda")
        );
    }
}
