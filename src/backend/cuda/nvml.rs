//! What NVML says of a device: its identity (UUID, PCI bus, VBIOS, ECC, MIG) and the run
//! conditions read around each case (clocks, power, temperature, throttle reasons, other
//! processes). NVML is loaded at run time; without it those columns stay empty. Nothing here
//! changes a device setting.

use super::{quietly, Conditions, Identity, OnceLock};

pub(super) static NVML: OnceLock<Option<nvml_wrapper::Nvml>> = OnceLock::new();

/// NVML, if its library is present and initialises.
pub(super) fn nvml() -> Option<&'static nvml_wrapper::Nvml> {
    NVML.get_or_init(|| {
        let attempt = || {
            nvml_wrapper::Nvml::builder()
                .lib_path(std::ffi::OsStr::new("libnvidia-ml.so.1"))
                .init()
                .or_else(|_| nvml_wrapper::Nvml::init())
                .ok()
        };
        super::loading::guarded(
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
pub(super) fn throttle_names(reasons: nvml_wrapper::bitmasks::device::ThrottleReasons) -> String {
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
pub(super) fn other_processes(d: &nvml_wrapper::Device<'static>) -> Option<u32> {
    let compute = d.running_compute_processes_count().ok()?;
    let graphics = d.running_graphics_processes_count().unwrap_or(0);
    Some(others_of(compute, graphics))
}

/// The processes in NVML's two lists, `compute` and `graphics` of them, other than this one.
/// This process holds a context on the device whenever a case runs, so it is one of them: under
/// its own id, or in a container under the id the host gave it (NVML lists host ids), which is
/// why it is left out by count, not by id. A process in both lists (a desktop program that also
/// computes, rare on a server) counts twice.
pub(super) fn others_of(compute: u32, graphics: u32) -> u32 {
    (compute + graphics).saturating_sub(1)
}

/// Adds what NVML knows of a device's identity: PCI bus id, VBIOS, ECC and MIG modes, the
/// enforced power limit and the application clocks. Each read that fails (not supported on
/// this board, no permission, an NVML too old) leaves its field empty; none is fatal.
pub(super) fn nvml_identity(d: &nvml_wrapper::Device<'static>, identity: &mut Identity) {
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

/// What NVML says of a device now: SM and memory clocks, power, temperature, throttle reasons.
pub(super) fn nvml_conditions(d: &nvml_wrapper::Device<'static>) -> Conditions {
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
pub(super) fn clock_event_reasons(
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
