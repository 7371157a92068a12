//! What the operating system says about the host's CPUs: the fields of `/proc/cpuinfo`, which
//! CPU this is (vendor, family, model, microarchitecture), its current clock, and how much CPU
//! time the machine and this process have used (to tell other processes' load from ours). Also
//! the testing hook the host kernels share.
//!
//! The lowest module of the host backend: it imports nothing from `host`, `host::compute` or
//! `host::cache`, which all use it, so they need not import each other for a helper. It reads
//! files and the environment; it must not measure or run anything.

use crate::cases::Case;
use crate::specs::theory::{self, HostFma};

/// Reads a whole small file as trimmed text.
pub fn read_text(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// `/proc/cpuinfo`, or nothing where there is none.
pub fn cpuinfo() -> String {
    read_text("/proc/cpuinfo").unwrap_or_default()
}

/// The first value of `key` in a `/proc/cpuinfo` text.
pub fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// A hexadecimal `/proc/cpuinfo` field (`0x41`).
fn cpuinfo_hex(cpuinfo: &str, key: &str) -> Option<u32> {
    let value = cpuinfo_field(cpuinfo, key)?;
    u32::from_str_radix(value.trim_start_matches("0x"), 16).ok()
}

/// The Arm core named by a `/proc/cpuinfo` text's `CPU implementer` and `CPU part`, with its
/// FMA datapath where the table has one.
pub fn arm_core_of(cpuinfo: &str) -> Option<(&'static str, Option<HostFma>)> {
    theory::arm_core(
        cpuinfo_hex(cpuinfo, "CPU implementer")?,
        cpuinfo_hex(cpuinfo, "CPU part")?,
    )
}

/// Mean of the current `cpu MHz` of the given CPUs in a `/proc/cpuinfo` text (what the kernel
/// last saw; in a VM it is often the nominal clock). x86 kernels print it; AArch64 ones do not.
pub fn cpuinfo_mhz(cpuinfo: &str, cpus: &[usize]) -> Option<f64> {
    let mut current = None;
    let mut values = Vec::new();
    for line in cpuinfo.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        match k.trim() {
            "processor" => current = v.trim().parse::<usize>().ok(),
            "cpu MHz" if current.is_some_and(|c| cpus.contains(&c)) => {
                if let Ok(mhz) = v.trim().parse::<f64>() {
                    values.push(mhz);
                }
            }
            _ => {}
        }
    }
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Which CPU this is, as `/proc/cpuinfo` says, in the words of the CSV's identity columns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuId {
    /// x86: the CPUID vendor (`AuthenticAMD`, `GenuineIntel`); Arm: the implementer's name
    /// (`Arm`, `NVIDIA`, `Ampere`, …), else its code (`0x41`).
    pub vendor: String,
    /// x86: `cpu family` in decimal (`25`); Arm: `CPU architecture` (`8`).
    pub family: String,
    /// x86: `model` in decimal (`17`); Arm: `CPU part` (`0xd4f`).
    pub model: String,
    /// x86: `stepping`; Arm: `CPU variant` and `CPU revision` (`r0p1`).
    pub stepping: String,
    /// `Zen 4`, `Sapphire Rapids`, `Neoverse-V2`; empty for a core the tables do not know.
    pub microarch: String,
}

/// Arm implementer codes, as in Linux's `arch/arm64/include/asm/cputype.h` (`ARM_CPU_IMP_*`).
fn arm_implementer(code: u32) -> Option<&'static str> {
    Some(match code {
        0x41 => "Arm",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4E => "NVIDIA",
        0x50 => "APM",
        0x51 => "Qualcomm",
        0x61 => "Apple",
        0x6D => "Microsoft",
        0xC0 => "Ampere",
        _ => return None,
    })
}

/// The microarchitecture of an x86 core from its CPUID vendor, family and model (both decimal
/// in `/proc/cpuinfo`). AMD model ranges as LLVM's `getAMDProcessorTypeAndSubtype`
/// (`llvm/lib/TargetParser/Host.cpp`); Intel models as Linux's
/// `arch/x86/include/asm/intel-family.h`. `None` for a core these tables do not list: the
/// family and model numbers still tell it apart.
pub fn x86_microarch(vendor: &str, family: u32, model: u32) -> Option<&'static str> {
    Some(match (vendor, family) {
        ("AuthenticAMD", 0x17) => match model {
            0x00..=0x2F => "Zen / Zen+",
            _ => "Zen 2",
        },
        ("AuthenticAMD", 0x19) => match model {
            0x00..=0x0F | 0x20..=0x5F => "Zen 3",
            0x10..=0x1F | 0x60..=0x7F | 0xA0..=0xAF => "Zen 4",
            _ => return None,
        },
        ("AuthenticAMD", 0x1A) => match model {
            0x00..=0x4F | 0x60..=0x7F => "Zen 5",
            _ => return None,
        },
        ("GenuineIntel", 6) => match model {
            0x3C | 0x3F | 0x45 | 0x46 => "Haswell",
            0x3D | 0x47 | 0x4F | 0x56 => "Broadwell",
            0x4E | 0x5E | 0x8E | 0x9E | 0xA5 | 0xA6 => "Skylake (client)",
            0x55 => "Skylake / Cascade Lake (server)",
            0x66 => "Cannon Lake",
            0x6A | 0x6C => "Ice Lake (server)",
            0x7D | 0x7E => "Ice Lake (client)",
            0x8C | 0x8D => "Tiger Lake",
            0xA7 => "Rocket Lake",
            0x97 | 0x9A | 0xBE => "Alder Lake",
            0xB7 | 0xBA | 0xBF => "Raptor Lake",
            0xAA | 0xAC => "Meteor Lake",
            0xBD => "Lunar Lake",
            0xC5 | 0xC6 => "Arrow Lake",
            0x8F => "Sapphire Rapids",
            0xCF => "Emerald Rapids",
            0xAD | 0xAE => "Granite Rapids",
            0xAF => "Sierra Forest",
            _ => return None,
        },
        _ => return None,
    })
}

/// The Intel models whose cores have AMX (Sapphire Rapids, Emerald Rapids, Granite Rapids).
const INTEL_AMX_MODELS: [u32; 4] = [0x8F, 0xCF, 0xAD, 0xAE];

/// Which CPU a `/proc/cpuinfo` text describes: x86 by `vendor_id`, family and model; Arm by
/// implementer, architecture and part. Fields the text lacks stay empty. An Intel core with
/// AMX (`amx_tile`) under a model number of a core without it is named by its AMX: a hypervisor
/// may show any model number (a VM seen here shows 167, a client Rocket Lake, on a server host).
pub fn cpu_id(cpuinfo: &str) -> CpuId {
    let field = |key: &str| cpuinfo_field(cpuinfo, key).unwrap_or_default();
    if let Some(vendor) = cpuinfo_field(cpuinfo, "vendor_id") {
        let (family, model) = (field("cpu family"), field("model"));
        let numbers = family.parse::<u32>().ok().zip(model.parse::<u32>().ok());
        let amx = crate::specs::theory::has_flag(&field("flags"), "amx_tile");
        let microarch = match numbers {
            Some((6, m)) if vendor == "GenuineIntel" && amx && !INTEL_AMX_MODELS.contains(&m) => {
                format!("Sapphire Rapids or later (amx_tile; model {m} is not one)")
            }
            _ => numbers
                .and_then(|(f, m)| x86_microarch(&vendor, f, m))
                .unwrap_or_default()
                .to_string(),
        };
        return CpuId {
            vendor,
            family,
            model,
            stepping: field("stepping"),
            microarch,
        };
    }
    let Some(implementer) = cpuinfo_hex(cpuinfo, "CPU implementer") else {
        return CpuId::default();
    };
    let stepping = match (
        cpuinfo_hex(cpuinfo, "CPU variant"),
        cpuinfo_field(cpuinfo, "CPU revision"),
    ) {
        (Some(v), Some(r)) => format!("r{v}p{r}"),
        _ => String::new(),
    };
    let vendor = arm_implementer(implementer)
        .map_or_else(|| format!("{implementer:#x}"), |name| name.to_string());
    // The core's name without its implementer: `Arm Neoverse-V2` is Arm's `Neoverse-V2`.
    let microarch = arm_core_of(cpuinfo)
        .map(|(name, _)| name.strip_prefix("Arm ").unwrap_or(name).to_string())
        .unwrap_or_default();
    CpuId {
        vendor,
        family: field("CPU architecture"),
        model: field("CPU part"),
        stepping,
        microarch,
    }
}

/// Testing hook: `ROOFPROBE_INJECT_FAULT=<case id>` makes that host case compute one wrong
/// value, so the path that reports an invalid case (row, table, exit code) is tested end to end;
/// `<case id>@<index>` makes an array case's wrong value its element `index` (the last where the
/// array is shorter), to show that a check catches one wrong element wherever it lies.
pub const FAULT_ENV: &str = "ROOFPROBE_INJECT_FAULT";

/// Whether [`FAULT_ENV`] names `case` (with or without an element).
pub fn fault_injected(case: &Case) -> bool {
    fault_at(case).is_some()
}

/// The element [`FAULT_ENV`] corrupts in `case`'s output, where it names `case`: the one after
/// `@`, else 0.
pub fn fault_at(case: &Case) -> Option<u64> {
    let value = std::env::var(FAULT_ENV).ok()?;
    let (id, at) = match value.split_once('@') {
        Some((id, at)) => (id.to_string(), at.trim().parse().ok()?),
        None => (value, 0),
    };
    (id == case.id()).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This development machine's first CPU (a VM on AMD EPYC, Zen 4).
    const GENOA: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n\
                         model\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\ncpu MHz\t\t: 2596.138\n\
                         processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu MHz\t\t: 2400.000\n";
    const GRACE: &str = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve2\n\
                         CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n\
                         CPU part\t: 0xd4f\nCPU revision\t: 0\n";

    #[test]
    fn x86_identity_names_vendor_family_model_and_core() {
        let id = cpu_id(GENOA);
        assert_eq!(
            id,
            CpuId {
                vendor: "AuthenticAMD".into(),
                family: "25".into(),
                model: "17".into(),
                stepping: "1".into(),
                microarch: "Zen 4".into(),
            }
        );
        // The two machines of the issue: both "AMD EPYC", told apart by family and model.
        let zen5 = GENOA.replace(": 25\n", ": 26\n").replace(": 17\n", ": 2\n");
        assert_eq!(cpu_id(&zen5).microarch, "Zen 5");
        let zen3 = GENOA.replace(": 17\n", ": 1\n");
        assert_eq!(cpu_id(&zen3).microarch, "Zen 3");
        assert_eq!(
            x86_microarch("GenuineIntel", 6, 0x8F),
            Some("Sapphire Rapids")
        );
        assert_eq!(x86_microarch("GenuineIntel", 6, 0x01), None);
        assert_eq!(x86_microarch("HygonGenuine", 0x18, 0), None);
        // AMX under a client model number (a VM's): named by its AMX, not as a Rocket Lake
        let intel = |model: u32, flags: &str| {
            format!(
                "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\
                 model\t\t: {model}\nflags\t\t: fpu avx512f {flags}\n"
            )
        };
        assert_eq!(
            cpu_id(&intel(167, "amx_bf16 amx_tile hypervisor")).microarch,
            "Sapphire Rapids or later (amx_tile; model 167 is not one)"
        );
        assert_eq!(cpu_id(&intel(167, "hypervisor")).microarch, "Rocket Lake");
        assert_eq!(
            cpu_id(&intel(0x8F, "amx_tile")).microarch,
            "Sapphire Rapids"
        );
        assert_eq!(cpu_id(&intel(0xCF, "amx_tile")).microarch, "Emerald Rapids");
    }

    #[test]
    fn arm_identity_names_implementer_architecture_and_part() {
        let id = cpu_id(GRACE);
        assert_eq!(
            id,
            CpuId {
                vendor: "Arm".into(),
                family: "8".into(),
                model: "0xd4f".into(),
                stepping: "r0p0".into(),
                microarch: "Neoverse-V2".into(),
            }
        );
        assert_eq!(arm_core_of(GRACE).unwrap().0, "Arm Neoverse-V2");
        let unknown = GRACE.replace("0x41", "0x99").replace("0xd4f", "0x001");
        let id = cpu_id(&unknown);
        assert_eq!((id.vendor.as_str(), id.microarch.as_str()), ("0x99", ""));
        assert_eq!(cpu_id("processor\t: 0\n"), CpuId::default());
    }

    #[test]
    fn clock_of_the_cpus_asked_for() {
        assert_eq!(cpuinfo_mhz(GENOA, &[0]), Some(2596.138));
        assert_eq!(cpuinfo_mhz(GENOA, &[0, 1]), Some((2596.138 + 2400.0) / 2.0));
        assert_eq!(cpuinfo_mhz(GENOA, &[7]), None);
        assert_eq!(cpuinfo_mhz(GRACE, &[0]), None);
    }
}
