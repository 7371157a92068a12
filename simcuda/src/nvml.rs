//! A simulated NVML: the entry points roofprobe reaches through `nvml-wrapper` (initialisation,
//! the driver version, devices by index, UUID and PCI bus id, their identity, clocks, power,
//! temperature, clock-event reasons, processes, PCIe link and topology), answering for the
//! simulated driver's devices, where the links name this library `libnvidia-ml.so.1`.
//!
//! It is the same library as the driver, so it sees what the devices do: while work runs on a
//! device (a kernel, a copy, a library routine, on any stream) NVML reports it busy, and idle
//! otherwise, as a GPU's counters do:
//!
//! | reading | while work runs | idle |
//! | --- | --- | --- |
//! | SM clock | `clock_mhz` | half of it, 1 MHz at least (a GPU drops its clock at idle) |
//! | memory clock | 1000 MHz (the driver attribute's) | the same |
//! | power | `power_w` | a quarter of it |
//! | power reading (`nvmlDeviceGetPowerUsage`) | the power over the last second, as Ampere's and later boards (but the A100) report it (or a fixed `power_reading`) | the same |
//! | energy (`nvmlDeviceGetTotalEnergyConsumption`) | the power integrated since the device was made, as of the counter's last update (`energy_ms`) | the same |
//! | temperature | 70 °C | 35 °C |
//! | clock-event reasons | `throttle` | `gpu_idle` |
//!
//! So a row whose conditions were read around its samples instead of during them shows the idle
//! figures, and a test can tell. The settings (`power_w`, `throttle`, `nvml_reasons`, `others`)
//! are the driver's ([`crate::config`]). A device with no NVLink answers `NOT_SUPPORTED` for its
//! links, as a PCIe card does; its PCIe link is Gen5 x16, now and at most, and two devices meet
//! at a host bridge.

use crate::config::{Config, NvmlReasons};
use crate::driver::try_driver;
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
    pub const UNKNOWN: u32 = 999;
}

type Ret<T = ()> = Result<T, u32>;

/// The configuration NVML answers from: the driver's once `cuInit` ran, else the environment's,
/// read at `nvmlInit`.
static CONFIG: OnceLock<Config> = OnceLock::new();

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
    (device as usize)
        .checked_sub(DEVICE_BASE)
        .and_then(|o| u32::try_from(o).ok())
        .filter(|&o| o < c.devices)
        .ok_or(ret::INVALID_ARGUMENT)
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

/// What the device is doing now: `(busy, a process holds its context)`.
fn activity(ordinal: u32) -> (bool, bool) {
    device_at(ordinal).map_or((false, false), |d| (d.busy(), d.in_use()))
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

/// nvmlClockType_t: graphics 0, SM 1, memory 2, video 3.
fn clock(kind: c_uint, busy: bool) -> Ret<c_uint> {
    let sm = config()?.clock_mhz;
    match kind {
        0 | 1 | 3 if busy => Ok(sm),
        0 | 1 | 3 => Ok((sm / 2).max(1)),
        2 => Ok(1000),
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
        let (busy, _) = activity(ordinal_of(device)?);
        unsafe { put(mhz, clock(kind, busy)?) }
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
        unsafe { put(mhz, clock(kind, true)?) }
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
        unsafe { put(mhz, clock(kind, true)?) }
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
unsafe fn processes(pids: &[u32], count: *mut c_uint, infos: *mut ProcessInfo) -> Ret {
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
    for (i, &pid) in pids.iter().enumerate() {
        unsafe {
            infos.add(i).write(ProcessInfo {
                pid,
                used_gpu_memory: 1 << 20,
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
        let others = (0..config()?.others).map(|i| 4_000_000 + i);
        let pids: Vec<u32> = in_use
            .then(std::process::id)
            .into_iter()
            .chain(others)
            .collect();
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
        let pids = [7, 4_000_000];
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
