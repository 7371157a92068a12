//! `roofprobe watch` on a CUDA device: every counter through NVML, without a context of our
//! own (the device is another job's; the watcher takes no memory on it and launches nothing).
//!
//! The device is named as `run` names it (`cuda:N`, the driver's order) and found in NVML by its
//! UUID, since NVML's order is the PCI bus's. Each reading holds memory (the device's, and the
//! watched process tree's as NVML lists it), the SM and memory clocks, power, temperature and
//! the clock-event reasons (the run's own readers, `nvml_conditions` in the parent), and the activity
//! figures of the best signal the device offers, chosen once when it is opened:
//!
//! 1. NVML's GPM metrics, where the device has them (Hopper and later): a sample per reading,
//!    and the metrics between it and the one before.
//! 2. A DCGM host engine's profiling fields, through `dcgmi dmon` ([`super::dcgm`]).
//! 3. NVML's utilisation, coarse: it cannot tell bandwidth from compute.
//!
//! Why each one before was passed over is kept ([`WatchedDevice::signal_why`]), so the output
//! can say which signal it used and why.
//!
//! NVML's process list is read raw (`process_memory`, [`listed_memory`]): the `…RunningProcesses_v3` of some R535
//! drivers writes records longer than the header declares (see `other_processes` in the parent
//! module), so the buffer has room for either record and our process is looked for at both
//! strides.

use super::dcgm::Dmon;
use super::{c_bytes, device_count, format_uuid, gpu_microarch, guard, nvml, quietly};
use crate::backend::watch::{Reading, Signal, Stop, Watched, WatchedDevice};
use crate::device::{BackendKind, CacheLevel, DeviceInfo, Identity};
use crate::{Error, Result};
use cudarc::driver::sys::CUdevice_attribute as A;
use nvml_wrapper::enums::gpm::GpmMetricId as M;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::GpmSample;
use std::time::{Duration, Instant};

/// The GPM metrics a reading asks for, in [`Reading`]'s order.
const GPM_METRICS: [M; 12] = [
    M::SmUtil,
    M::SmOccupancy,
    M::DramBwUtil,
    M::AnyTensorUtil,
    M::HmmaTensorUtil,
    M::ImmaTensorUtil,
    M::DfmaTensorUtil,
    M::Fp64Util,
    M::Fp32Util,
    M::Fp16Util,
    M::PcieTxPerSec,
    M::PcieRxPerSec,
];

/// GPM gives PCIe traffic in MiB per second (nvml.h).
const MIB: f64 = 1024.0 * 1024.0;

/// Where the activity figures come from.
enum Source {
    Gpm(GpmSample<'static>),
    Dcgm(Dmon),
    Utilisation,
}

/// A CUDA device being watched.
pub struct CudaWatch {
    device: WatchedDevice,
    nvml_device: nvml_wrapper::Device<'static>,
    pid: Option<u32>,
    source: Source,
    last: Instant,
}

/// What the driver says of device `ordinal` without a context: identity, size, clocks.
fn describe(ordinal: usize) -> Result<(DeviceInfo, (u32, u32))> {
    use cudarc::driver::result::device;
    let count = device_count()?;
    if ordinal >= count {
        return Err(Error::NoSuchDevice {
            asked: format!("cuda:{ordinal}"),
            available: format!("{count} CUDA device(s) visible"),
        });
    }
    let dev = guard("finding the device", || device::get(ordinal as i32))?;
    let name = guard("reading the device name", || device::get_name(dev))?;
    // SAFETY: plain queries of a device the driver just gave.
    let attr = |a: A| unsafe { device::get_attribute(dev, a) }.ok();
    let total = guard("reading the memory size", || unsafe {
        device::total_mem(dev)
    })?;
    let uuid = guard("reading the device UUID", || device::get_uuid(dev))
        .map(|u| format_uuid(&c_bytes(u.bytes)))
        .unwrap_or_default();
    let cc = (
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
            .unwrap_or(0)
            .max(0) as u32,
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
            .unwrap_or(0)
            .max(0) as u32,
    );
    let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .unwrap_or(0)
        .max(0) as u32;
    let l2 = attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        .unwrap_or(0)
        .max(0) as u64;
    let khz = |a| attr(a).filter(|&v| v > 0).map(|v| f64::from(v) / 1000.0);
    let info = DeviceInfo {
        backend: BackendKind::Cuda,
        id: format!("cuda:{ordinal}"),
        name,
        compute_capability: format!("{}.{}", cc.0, cc.1),
        units: sms,
        clock_mhz: khz(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_mhz: khz(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
            .and_then(|b| u32::try_from(b).ok()),
        llc_bytes: l2,
        caches: vec![CacheLevel {
            name: "L2".to_string(),
            size_bytes: l2,
            instances: 1,
        }],
        memory_total_bytes: total as u64,
        memory_free_bytes: 0,
        driver: String::new(),
        identity: Identity {
            vendor: "NVIDIA".to_string(),
            microarch: gpu_microarch(cc).unwrap_or_default().to_string(),
            isa: format!("sm_{}{}", cc.0, cc.1),
            uuid,
            ..Identity::default()
        },
        extra: Vec::new(),
    };
    Ok((info, cc))
}

/// Whether an NVML error means the device is gone.
fn is_lost(e: &NvmlError) -> bool {
    matches!(e, NvmlError::GpuLost | NvmlError::Uninitialized)
}

impl CudaWatch {
    /// Opens `cuda:<ordinal>` for watching, `pid` (and its children) as the job whose memory
    /// is read, readings every `period`.
    pub fn open(ordinal: usize, pid: Option<u32>, period: Duration) -> Result<CudaWatch> {
        let (info, cc) = describe(ordinal)?;
        let nvml = nvml().ok_or_else(|| Error::Driver {
            during: "loading NVML (libnvidia-ml.so.1)".to_string(),
            message: "it is missing or does not start, and `watch` reads every GPU counter \
                      through it (install or repair the NVIDIA driver's NVML)"
                .to_string(),
        })?;
        let nvml_device = quietly(|| nvml.device_by_uuid(info.identity.uuid.as_str()))
            .map_err(|_| Error::Internal("NVML's wrapper panicked".into()))?
            .map_err(|e| Error::Driver {
                during: format!("finding {} ({}) in NVML", info.id, info.identity.uuid),
                message: e.to_string(),
            })?;
        let power_limit_w = nvml_device
            .enforced_power_limit()
            .ok()
            .map(|mw| f64::from(mw) / 1000.0);
        let mut why = Vec::new();
        let cc_text = format!("compute capability {}.{}", cc.0, cc.1);
        let gpm = match quietly(|| nvml_device.gpm_support()) {
            Ok(Ok(true)) => match nvml_device.gpm_sample() {
                Ok(sample) => Some(sample),
                Err(e) => {
                    why.push(format!("GPM: the device has it, but a sample failed: {e}"));
                    None
                }
            },
            Ok(Ok(false)) => {
                why.push(format!(
                    "GPM: not on this device ({cc_text}; NVML's GPM metrics are Hopper's and later)"
                ));
                None
            }
            Ok(Err(NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound)) => {
                why.push(
                    "GPM: this NVML is too old for it (no nvmlGpm… entry points; drivers from \
                     R520 on have them)"
                        .to_string(),
                );
                None
            }
            Ok(Err(e)) => {
                why.push(format!("GPM: NVML says {e}"));
                None
            }
            Err(_) => {
                why.push("GPM: NVML's wrapper panicked".to_string());
                None
            }
        };
        let source = match gpm {
            Some(sample) => {
                why.push(format!("GPM: yes ({cc_text})"));
                Source::Gpm(sample)
            }
            None => {
                let index = nvml_device.index().unwrap_or(ordinal as u32);
                match Dmon::start(index, period) {
                    Ok(dmon) => {
                        why.push(format!("DCGM: yes (host engine, GPU {index})"));
                        Source::Dcgm(dmon)
                    }
                    Err(e) => {
                        why.push(format!("DCGM: {e}"));
                        why.push(
                            "NVML utilisation: yes (coarse: the time some kernel ran, and the \
                             time the memory controller was busy)"
                                .to_string(),
                        );
                        Source::Utilisation
                    }
                }
            }
        };
        let (signal, unseen) = match &source {
            Source::Gpm(_) => (Signal::Gpm, Vec::new()),
            Source::Dcgm(_) => (
                Signal::Dcgm,
                vec![
                    "which precision the tensor pipes ran: DCGM's tensor field counts every \
                     kind (its rate is taken at the bf16 tensor peak)"
                        .to_string(),
                ],
            ),
            Source::Utilisation => (
                Signal::Utilisation,
                vec![
                    "DRAM traffic and the pipes' activity: NVML's utilisation says only that some \
                     kernel ran, so bandwidth cannot be told from compute and no achieved \
                     figure is given"
                        .to_string(),
                ],
            ),
        };
        Ok(CudaWatch {
            device: WatchedDevice {
                info,
                signal,
                signal_why: why,
                unseen,
                power_limit_w,
            },
            nvml_device,
            pid,
            source,
            last: Instant::now(),
        })
    }

    /// The memory the watched process tree holds on the device, as NVML lists it (see the
    /// module documentation for why by hand).
    fn process_memory(&self) -> Option<u64> {
        let pid = self.pid?;
        let tree: Vec<u32> = crate::backend::watch::process_tree(pid)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        process_memory(&self.nvml_device, &tree)
    }
}

/// The bytes NVML lists for the processes in `pids` on `d`; `None` where NVML cannot list them
/// or lists none of them.
fn process_memory(d: &nvml_wrapper::Device<'static>, pids: &[u32]) -> Option<u64> {
    let call = *nvml()?
        .lib()
        .nvmlDeviceGetComputeRunningProcesses_v3
        .as_ref()
        .ok()?;
    // The widest record a driver writes (nvmlProcessInfo_v2_t and its R535 form with one more
    // u64) is 32 bytes; the room is counted in records.
    const WIDEST: usize = 32;
    let room: u32 = 64;
    let mut buffer = vec![0u64; room as usize * WIDEST / 8];
    let mut count = room;
    // SAFETY: the symbol has this signature (nvml.h); the handle is a live device of the static
    // NVML; the buffer holds `room` records of the widest layout a driver writes.
    let status = unsafe { call(d.handle(), &mut count, buffer.as_mut_ptr().cast()) };
    if status != 0 {
        return None;
    }
    let bytes: Vec<u8> = buffer.iter().flat_map(|w| w.to_ne_bytes()).collect();
    Some(listed_memory(&bytes, count.min(room) as usize, pids)).filter(|&b| b > 0)
}

/// Sums the memory of `pids` in `count` process records of `bytes`: each record is its pid
/// (u32) and, 8 bytes in, its memory (u64); the stride is 24 bytes (nvml.h) or 32 (some R535
/// drivers), told apart by which one finds our processes. `NVML_VALUE_NOT_AVAILABLE` counts as
/// nothing.
pub fn listed_memory(bytes: &[u8], count: usize, pids: &[u32]) -> u64 {
    let at = |stride: usize| -> Vec<(u32, u64)> {
        (0..count)
            .filter_map(|i| {
                let r = bytes.get(i * stride..i * stride + 16)?;
                let pid = u32::from_ne_bytes(r[0..4].try_into().ok()?);
                let mem = u64::from_ne_bytes(r[8..16].try_into().ok()?);
                Some((pid, mem))
            })
            .collect()
    };
    let sum = |records: &[(u32, u64)]| -> (usize, u64) {
        records
            .iter()
            .filter(|(p, m)| pids.contains(p) && *m != u64::MAX)
            .fold((0, 0), |(n, s), (_, m)| (n + 1, s + m))
    };
    let (n24, s24) = sum(&at(24));
    let (n32, s32) = sum(&at(32));
    if n32 > n24 {
        s32
    } else {
        s24
    }
}

/// A percentage from NVML's result, `None` where the metric failed or is not finite.
fn pct(
    r: Option<&std::result::Result<nvml_wrapper::struct_wrappers::gpm::GpmMetricResult, NvmlError>>,
) -> Option<f64> {
    r?.as_ref()
        .ok()
        .map(|m| m.value)
        .filter(|v| v.is_finite() && *v >= 0.0)
}

impl Watched for CudaWatch {
    fn device(&self) -> &WatchedDevice {
        &self.device
    }

    fn watch_process(&mut self, pid: u32) {
        self.pid = Some(pid);
    }

    fn read(&mut self) -> std::result::Result<Reading, Stop> {
        let d = &self.nvml_device;
        let lost = |e: NvmlError| Stop::DeviceLost(format!("NVML: {e}"));
        let memory = match quietly(|| d.memory_info()) {
            Ok(Ok(m)) => Some(m),
            Ok(Err(e)) if is_lost(&e) => return Err(lost(e)),
            _ => None,
        };
        let now = Instant::now();
        let span_secs = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        let conditions = super::nvml_conditions(d);
        let mut r = Reading {
            span_secs,
            memory_used_bytes: memory.as_ref().map(|m| m.used),
            memory_total_bytes: memory.as_ref().map(|m| m.total),
            process_memory_bytes: self.process_memory(),
            sm_clock_mhz: conditions.clock_mhz,
            memory_clock_mhz: conditions.memory_clock_mhz,
            power_w: conditions.power_w,
            temperature_c: conditions.temperature_c,
            throttle: conditions.throttle,
            ..Reading::default()
        };
        if let Ok(Ok(u)) = quietly(|| d.utilization_rates()) {
            r.gpu_util_pct = Some(f64::from(u.gpu));
            r.memory_util_pct = Some(f64::from(u.memory));
        }
        match &mut self.source {
            Source::Gpm(previous) => {
                let sample = match quietly(|| d.gpm_sample()) {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) if is_lost(&e) => return Err(lost(e)),
                    // a failed sample leaves this reading without activity figures
                    _ => return Ok(r),
                };
                let nvml = nvml().expect("NVML is loaded: the device came from it");
                let metrics = quietly(|| {
                    nvml_wrapper::gpm::gpm_metrics_get(nvml, previous, &sample, &GPM_METRICS)
                });
                *previous = sample;
                if let Ok(Ok(m)) = metrics {
                    let at = |i: usize| pct(m.get(i));
                    r.sm_active_pct = at(0);
                    r.sm_occupancy_pct = at(1);
                    r.dram_active_pct = at(2);
                    r.tensor_active_pct = at(3);
                    r.tensor_f16_pct = at(4);
                    r.tensor_int_pct = at(5);
                    r.tensor_f64_pct = at(6);
                    r.fp64_active_pct = at(7);
                    r.fp32_active_pct = at(8);
                    r.fp16_active_pct = at(9);
                    r.pcie_tx_bytes_per_s = at(10).map(|v| v * MIB);
                    r.pcie_rx_bytes_per_s = at(11).map(|v| v * MIB);
                }
            }
            Source::Dcgm(dmon) => {
                if let Ok(v) = dmon.latest() {
                    let frac = |i: usize| v[i].map(|x| 100.0 * x);
                    r.sm_active_pct = frac(0);
                    r.sm_occupancy_pct = frac(1);
                    r.tensor_active_pct = frac(2);
                    r.dram_active_pct = frac(3);
                    r.fp64_active_pct = frac(4);
                    r.fp32_active_pct = frac(5);
                    r.fp16_active_pct = frac(6);
                    r.pcie_tx_bytes_per_s = v[7];
                    r.pcie_rx_bytes_per_s = v[8];
                }
            }
            Source::Utilisation => {}
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(stride: usize, list: &[(u32, u64)]) -> Vec<u8> {
        let mut out = vec![0u8; stride * list.len()];
        for (i, (pid, mem)) in list.iter().enumerate() {
            out[i * stride..i * stride + 4].copy_from_slice(&pid.to_ne_bytes());
            out[i * stride + 8..i * stride + 16].copy_from_slice(&mem.to_ne_bytes());
        }
        out
    }

    /// The watched processes' memory is found whichever record length the driver wrote, and a
    /// process NVML cannot measure counts as nothing.
    #[test]
    fn process_memory_is_read_at_either_stride() {
        let list = [(7, 100), (4242, 1 << 30), (4243, 2 << 30), (9, u64::MAX)];
        for stride in [24, 32] {
            let bytes = records(stride, &list);
            assert_eq!(listed_memory(&bytes, 4, &[4242, 4243]), 3 << 30, "{stride}");
            assert_eq!(listed_memory(&bytes, 4, &[9]), 0, "{stride}");
            assert_eq!(listed_memory(&bytes, 4, &[1]), 0, "{stride}");
        }
    }
}
