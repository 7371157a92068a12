//! What tells one device from another of the same name: the identity a run records on every
//! CSV row and a calibration carries in its `device` section.
//!
//! Plain data with two ways of naming it (a phrase for titles, labelled fields for listings).
//! Where the figures come from (CPUID, `/proc/cpuinfo`, NVML) is roofprobe's backends' business.

use serde::{Deserialize, Serialize};

/// What tells a device from another of the same name, recorded on every row so that neither
/// `compare` nor a script takes two machines for one (two VMs both report "AMD EPYC" on host
/// "vm": a Zen 5 running AVX-512 and a Zen 3 running AVX2). Empty (or `None`) where unknown or
/// not applicable: the CPU fields on a GPU, the GPU fields on the host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// CPU: the CPUID vendor (`AuthenticAMD`, `GenuineIntel`) or the Arm implementer (`Arm`,
    /// `NVIDIA`, `Ampere`); GPU: `NVIDIA`.
    pub vendor: String,
    /// x86: `cpu family` (decimal, as `/proc/cpuinfo` prints it); Arm: the architecture (`8`).
    pub cpu_family: String,
    /// x86: `model` (decimal); Arm: the part number (`0xd4f`).
    pub cpu_model: String,
    /// `Zen 4`, `Sapphire Rapids`, `Neoverse-V2`, `Hopper`; empty where the tables do not know.
    pub microarch: String,
    /// The instruction set the kernels ran: `AVX-512F`, `AVX2+FMA`, `NEON`, `scalar`, or the
    /// GPU's `sm_90`.
    pub isa: String,
    /// GPU: `GPU-xxxxxxxx-…`, as `nvidia-smi -L` prints it.
    pub uuid: String,
    /// GPU: `00000000:41:00.0`.
    pub pci_bus_id: String,
    /// GPU: the VBIOS version.
    pub vbios: String,
    /// GPU: ECC memory `on` or `off` now (NVML).
    pub ecc: String,
    /// GPU: MIG mode `on` or `off` now (NVML).
    pub mig: String,
    /// GPU: the power limit the driver enforces, W.
    pub power_limit_w: Option<f64>,
    /// GPU: the application clocks (what an idle-to-busy GPU targets; set by an administrator).
    pub app_clock_mhz: Option<f64>,
    pub app_memory_clock_mhz: Option<f64>,
}

impl Identity {
    /// The CPU in a few words: its microarchitecture, else `<vendor> family F model M`; empty
    /// where nothing is known (a GPU's identity).
    pub fn cpu_phrase(&self) -> String {
        if self.cpu_family.is_empty() {
            String::new()
        } else if !self.microarch.is_empty() {
            self.microarch.clone()
        } else {
            format!(
                "{} family {} model {}",
                self.vendor, self.cpu_family, self.cpu_model
            )
            .trim()
            .to_string()
        }
    }

    /// The known fields as `(label, value)` for listings, in a fixed order; unknown ones are
    /// left out.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let mhz = |v: Option<f64>| v.map(|v| format!("{v:.0} MHz"));
        let clocks = match (mhz(self.app_clock_mhz), mhz(self.app_memory_clock_mhz)) {
            (Some(sm), Some(mem)) => format!("{sm} SM, {mem} memory"),
            (Some(sm), None) => format!("{sm} SM"),
            (None, Some(mem)) => format!("{mem} memory"),
            (None, None) => String::new(),
        };
        [
            ("vendor", self.vendor.clone()),
            ("family", self.cpu_family.clone()),
            ("model", self.cpu_model.clone()),
            ("microarchitecture", self.microarch.clone()),
            ("ISA used", self.isa.clone()),
            ("UUID", self.uuid.clone()),
            ("PCI bus id", self.pci_bus_id.clone()),
            ("VBIOS", self.vbios.clone()),
            ("ECC", self.ecc.clone()),
            ("MIG", self.mig.clone()),
            (
                "power limit",
                self.power_limit_w
                    .map(|w| format!("{w:.0} W"))
                    .unwrap_or_default(),
            ),
            ("application clocks", clocks),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect()
    }
}
