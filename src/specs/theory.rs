//! Theoretical arithmetic peaks from device attributes: units × FMA lanes per unit per clock ×
//! 2 × clock.
//!
//! This module owns the lanes-per-SM table (per compute capability and precision, CUDA cores and
//! tensor cores) and the host CPU's FMA datapath table, each entry with the source it comes
//! from. The table is where other tools pick up 2× errors (GA102's FP32 "dual issue", GeForce
//! parts' half-rate FP32 accumulation, A100's FP16 at 4× FP32 but BF16 at only 2×, Hopper's
//! tensor figures quoted at a lower clock than its CUDA-core figures), so every entry that a
//! vendor sheet covers is tested against `data/gpu_specs.csv`.
//!
//! It must not measure anything or know about backends: callers pass the compute capability,
//! SM count and the clock they observed, and get GFLOP/s back (or `None` where no source gives
//! the rate, which is better than a guess).
//!
//! Instruction paths: on Hopper (9.0) the whitepaper's dense tensor rates are those of `wgmma`
//! (the warpgroup MMA, sm_90a). No NVIDIA source states the rate of the older `mma.sync` there,
//! so the table has one rate per (capability, precision), the `wgmma` one, and a `mma.sync` row
//! on 9.0 is measured against it and says so in its note (`backend::cuda::plan::LEGACY_MMA_NOTE`); the
//! roofline's tensor ceilings on Hopper come from the `wgmma` rows (`roofline::is_wgmma`).
//!
//! Conventions: a rate is dense FMA per clock per SM, counted per lane (an `fma.rn.f16x2` is two
//! lanes; an `mma.sync` m16n8k16 is 16·8·16 FMAs), and a FMA is 2 operations, as in every vendor
//! sheet. Sparsity is never counted.

use crate::cases::Precision;

/// Market segment, which matters for one thing: GeForce (and TITAN) parts of compute capability
/// 7.5, 8.6, 8.9 and 12.0 run tensor-core MMAs that accumulate in FP32 at half the rate of the
/// professional and data-centre parts built from the same die (RTX 3090 vs RTX A6000).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Data-centre and workstation parts (Tesla, A100, RTX A6000, L40S, …).
    Professional,
    /// GeForce and TITAN parts.
    GeForce,
}

impl Segment {
    /// The segment of a device from the name the driver reports.
    pub fn of(device_name: &str) -> Segment {
        let name = device_name.to_ascii_lowercase();
        if name.contains("geforce") || name.contains("titan") {
            Segment::GeForce
        } else {
            Segment::Professional
        }
    }
}

/// Where the table's numbers come from. Each is checked against the vendor figures in
/// `data/gpu_specs.csv` by this module's tests wherever that file has the figure.
pub mod source {
    pub const CUDA_GUIDE: &str = "CUDA C++ Programming Guide, Arithmetic Instructions: table 'Throughput of Native Arithmetic Instructions (operations per clock cycle per multiprocessor)'";
    pub const VOLTA_WP: &str = "NVIDIA Tesla V100 GPU Architecture whitepaper (2017): 8 tensor cores per SM, 64 FP16 FMA per clock each; V100 datasheet 125 TFLOPS at 1530 MHz";
    pub const TURING_WP: &str = "NVIDIA Turing GPU Architecture whitepaper (2018), Appendix A; T4 datasheet (65 FP16 / 130 INT8 TOPS at 1590 MHz, 40 SMs)";
    pub const AMPERE_WP: &str = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1 and 'A100 peak performance'; A100 datasheet (FP16 non-tensor 78, BF16 non-tensor 39 TFLOPS)";
    pub const GA102_WP: &str = "NVIDIA Ampere GA102 GPU Architecture whitepaper v2 (2021), Appendix A (GeForce RTX 3090) and Appendix C (RTX A6000)";
    pub const ADA_WP: &str = "NVIDIA Ada GPU Architecture whitepaper v2.02 (2023), Appendix A (RTX 4090); L40S and L4 datasheets";
    pub const HOPPER_WP: &str = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 2 (tensor figures at the 1830 MHz SXM5 / 1620 MHz PCIe tensor boost clock); H100 datasheet";
    pub const BLACKWELL_RTX_WP: &str = "NVIDIA RTX Blackwell GPU Architecture whitepaper (2025), Table 3 (GeForce RTX 5090, 170 SMs, 2407 MHz)";
    pub const PROFESSIONAL_FULL_RATE: &str = "inferred: professional parts of this die run FP32-accumulate MMAs at the FP16-accumulate rate, as on GA102 (RTX A6000) and AD102 (L40S); no sheet in data/gpu_specs.csv covers it";
}

/// One entry of the lanes table: dense FMA per clock per SM for a compute capability and a
/// precision; `geforce` overrides it on GeForce parts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    pub fma_per_clock_per_sm: u32,
    pub source: &'static str,
}

struct Entry {
    cc: (u32, u32),
    precision: Precision,
    fma_per_clock_per_sm: u32,
    /// The GeForce rate where it differs (FP32 accumulation at half rate).
    geforce: Option<u32>,
    source: &'static str,
}

const fn e(cc: (u32, u32), precision: Precision, fma: u32, source: &'static str) -> Entry {
    Entry {
        cc,
        precision,
        fma_per_clock_per_sm: fma,
        geforce: None,
        source,
    }
}

const fn geforce_half(
    cc: (u32, u32),
    precision: Precision,
    fma: u32,
    source: &'static str,
) -> Entry {
    Entry {
        cc,
        precision,
        fma_per_clock_per_sm: fma,
        geforce: Some(fma / 2),
        source,
    }
}

use source::*;
use Precision::*;

/// The lanes table. A missing (compute capability, precision) pair means no source gives the
/// rate (or the hardware has no such instruction): `None`, never a guess.
///
/// CUDA-core lanes per SM (FMA per clock): the CUDA guide's throughput table, except the
/// non-tensor FP16/BF16 rates of 8.x, which the whitepapers give per product (GA102 and AD102
/// run FP16 at the FP32 rate, 128, where the guide's table has been read as 256; A100 runs BF16
/// at half its FP16 rate).
const TABLE: &[Entry] = &[
    // Volta, 7.0 (V100)
    e((7, 0), F64, 32, CUDA_GUIDE),
    e((7, 0), F32, 64, CUDA_GUIDE),
    e((7, 0), F16x2, 128, CUDA_GUIDE),
    e((7, 0), I32, 64, CUDA_GUIDE),
    e((7, 0), F16F16, 512, VOLTA_WP),
    e((7, 0), F16F32, 512, VOLTA_WP),
    // Turing, 7.5 (T4, RTX 20xx)
    e((7, 5), F64, 2, CUDA_GUIDE),
    e((7, 5), F32, 64, CUDA_GUIDE),
    e((7, 5), F16x2, 128, CUDA_GUIDE),
    e((7, 5), I32, 64, CUDA_GUIDE),
    e((7, 5), F16F16, 512, TURING_WP),
    geforce_half((7, 5), F16F32, 512, TURING_WP),
    e((7, 5), S8S32, 1024, TURING_WP),
    // Ampere GA100, 8.0 (A100, A30)
    e((8, 0), F64, 32, CUDA_GUIDE),
    e((8, 0), F32, 64, CUDA_GUIDE),
    e((8, 0), F16x2, 256, AMPERE_WP),
    e((8, 0), Bf16x2, 128, AMPERE_WP),
    e((8, 0), I32, 64, CUDA_GUIDE),
    e((8, 0), F16F16, 1024, AMPERE_WP),
    e((8, 0), F16F32, 1024, AMPERE_WP),
    e((8, 0), Bf16F32, 1024, AMPERE_WP),
    e((8, 0), Tf32F32, 512, AMPERE_WP),
    e((8, 0), S8S32, 2048, AMPERE_WP),
    e((8, 0), F64F64, 64, AMPERE_WP),
    // Ampere GA10x, 8.6 (RTX 30xx, RTX A6000, A40, A10)
    e((8, 6), F64, 2, CUDA_GUIDE),
    e((8, 6), F32, 128, CUDA_GUIDE),
    e((8, 6), F16x2, 128, GA102_WP),
    e((8, 6), Bf16x2, 128, GA102_WP),
    e((8, 6), I32, 64, CUDA_GUIDE),
    e((8, 6), F16F16, 512, GA102_WP),
    geforce_half((8, 6), F16F32, 512, GA102_WP),
    geforce_half((8, 6), Bf16F32, 512, GA102_WP),
    geforce_half((8, 6), Tf32F32, 256, GA102_WP),
    e((8, 6), S8S32, 1024, GA102_WP),
    // Ada, 8.9 (RTX 40xx, L4, L40S)
    e((8, 9), F64, 2, CUDA_GUIDE),
    e((8, 9), F32, 128, CUDA_GUIDE),
    e((8, 9), F16x2, 128, ADA_WP),
    e((8, 9), Bf16x2, 128, ADA_WP),
    e((8, 9), I32, 64, CUDA_GUIDE),
    e((8, 9), F16F16, 512, ADA_WP),
    geforce_half((8, 9), F16F32, 512, ADA_WP),
    geforce_half((8, 9), Bf16F32, 512, ADA_WP),
    geforce_half((8, 9), Tf32F32, 256, ADA_WP),
    e((8, 9), S8S32, 1024, ADA_WP),
    geforce_half((8, 9), E4m3F32, 1024, ADA_WP),
    // Hopper, 9.0 (H100, H200, GH200)
    e((9, 0), F64, 64, CUDA_GUIDE),
    e((9, 0), F32, 128, CUDA_GUIDE),
    e((9, 0), F16x2, 256, HOPPER_WP),
    e((9, 0), Bf16x2, 256, HOPPER_WP),
    e((9, 0), I32, 64, CUDA_GUIDE),
    e((9, 0), F16F16, 2048, HOPPER_WP),
    e((9, 0), F16F32, 2048, HOPPER_WP),
    e((9, 0), Bf16F32, 2048, HOPPER_WP),
    e((9, 0), Tf32F32, 1024, HOPPER_WP),
    e((9, 0), S8S32, 4096, HOPPER_WP),
    e((9, 0), E4m3F32, 4096, HOPPER_WP),
    e((9, 0), E5m2F32, 4096, HOPPER_WP),
    e((9, 0), F64F64, 128, HOPPER_WP),
    // Blackwell data centre, 10.0 (B200): CUDA cores only; no sheet gives its clock.
    e((10, 0), F64, 64, CUDA_GUIDE),
    e((10, 0), F32, 128, CUDA_GUIDE),
    e((10, 0), I32, 64, CUDA_GUIDE),
    // Blackwell GeForce/workstation, 12.0 (RTX 50xx)
    e((12, 0), F64, 2, CUDA_GUIDE),
    e((12, 0), F32, 128, CUDA_GUIDE),
    e((12, 0), F16x2, 128, BLACKWELL_RTX_WP),
    e((12, 0), I32, 64, CUDA_GUIDE),
    e((12, 0), F16F16, 512, BLACKWELL_RTX_WP),
    geforce_half((12, 0), F16F32, 512, PROFESSIONAL_FULL_RATE),
    geforce_half((12, 0), Bf16F32, 512, PROFESSIONAL_FULL_RATE),
    geforce_half((12, 0), Tf32F32, 256, PROFESSIONAL_FULL_RATE),
    e((12, 0), S8S32, 1024, BLACKWELL_RTX_WP),
    geforce_half((12, 0), E4m3F32, 1024, PROFESSIONAL_FULL_RATE),
];

/// Dense FMA lanes per clock per SM for `precision` on a device of compute capability `cc` in
/// `segment`, with the source of the figure; `None` where no source gives it.
pub fn rate(cc: (u32, u32), precision: Precision, segment: Segment) -> Option<Rate> {
    let entry = TABLE
        .iter()
        .find(|e| e.cc == cc && e.precision == precision)?;
    let fma = match (segment, entry.geforce) {
        (Segment::GeForce, Some(half)) => half,
        _ => entry.fma_per_clock_per_sm,
    };
    Some(Rate {
        fma_per_clock_per_sm: fma,
        source: if segment == Segment::GeForce && entry.geforce.is_some() {
            // The GeForce halving is what the GeForce sheets print, whatever the full rate's
            // source.
            match cc {
                (7, 5) => TURING_WP,
                (8, 6) => GA102_WP,
                (8, 9) => ADA_WP,
                _ => BLACKWELL_RTX_WP,
            }
        } else {
            entry.source
        },
    })
}

/// GFLOP/s (or GOP/s for integers) from a rate: SMs × FMA lanes × 2 × clock.
fn gflops(sms: u32, fma_per_clock_per_sm: u32, clock_mhz: f64) -> f64 {
    sms as f64 * fma_per_clock_per_sm as f64 * 2.0 * clock_mhz / 1e3
}

/// Theoretical peak in GFLOP/s of `precision` on `sms` SMs of compute capability
/// `compute_capability` at `clock_mhz`, for a data-centre or professional part (FP32-accumulate
/// MMAs at full rate). For a device whose name is known, use [`peak_gflops_for`], which applies
/// the GeForce half rate.
pub fn peak_gflops(
    compute_capability: (u32, u32),
    sms: u32,
    clock_mhz: f64,
    precision: Precision,
) -> Option<f64> {
    rate(compute_capability, precision, Segment::Professional)
        .map(|r| gflops(sms, r.fma_per_clock_per_sm, clock_mhz))
}

/// As [`peak_gflops`], for the device the driver names `device_name` (GeForce parts get their
/// half-rate FP32 accumulation).
pub fn peak_gflops_for(
    device_name: &str,
    compute_capability: (u32, u32),
    sms: u32,
    clock_mhz: f64,
    precision: Precision,
) -> Option<f64> {
    rate(compute_capability, precision, Segment::of(device_name))
        .map(|r| gflops(sms, r.fma_per_clock_per_sm, clock_mhz))
}

/// Parses a compute capability written `8.6` into `(8, 6)`.
pub fn parse_compute_capability(s: &str) -> Option<(u32, u32)> {
    let (major, minor) = s.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// A host CPU core's FMA datapath: how many FMA pipes, how wide each one really is (a 512-bit
/// instruction on a 256-bit datapath takes two passes), and where that comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostFma {
    pub pipes: u32,
    pub datapath_bits: u32,
    pub source: &'static str,
}

/// The FMA datapath of an x86 core from its CPUID vendor, family and model, its brand string
/// (`/proc/cpuinfo`'s `model name`) and its feature flags (`flags`, space-separated); `None` for
/// a core this table does not know (then no theoretical peak is claimed).
pub fn host_fma_x86(
    vendor: &str,
    family: u32,
    model: u32,
    brand: &str,
    flags: &str,
) -> Option<HostFma> {
    const ZEN5_SOG: &str = "AMD Software Optimization Guide for the AMD Zen5 Microarchitecture (pub. 58455), Floating-Point Unit: FP0/FP1 execute FMA, 512-bit datapath on server and desktop parts (mobile Strix/Krackan Point: 256-bit); corroborated by A. Yee, 'Zen5's AVX512 Teardown' (numberworld.org, 2024) and by this crate's own measurement";
    const ZEN4_SOG: &str = "AMD Software Optimization Guide for AMD Family 19h Processors (pub. 56665): two 256-bit FMA pipes (FP0/FP1); 512-bit instructions take two passes";
    const ZEN2_SOG: &str = "AMD Software Optimization Guide for AMD Family 17h Models 30h and Greater (pub. 56305): two 256-bit FMA pipes";
    const INTEL_SOG: &str = "Intel 64 and IA-32 Architectures Optimization Reference Manual: two FMA ports (p0, p1) on Haswell and later cores; 512-bit FMA on p0+p1 fused, p5 on two-FMA Xeon parts not assumed";
    const INTEL_AMX: &str = "AMX (the amx_tile flag) is on Intel's server P-cores only, from Sapphire Rapids (4th-generation Xeon Scalable) on, which execute 512-bit FMA on two ports (p0+p1 fused, and p5): Intel 64 and IA-32 Architectures Optimization Reference Manual; 2 x 512-bit FMA measured on a Xeon Platinum 8480 by Chips and Cheese, 'Sapphire Rapids: Golden Cove Hits the Server' (2023). The flag decides, not the model number, which a hypervisor may replace (a VM seen here reports model 167, a client Rocket Lake, with AMX)";
    const INTEL_XEON_SP: &str = "Intel ARK's '# of AVX-512 FMA Units': 2 on every 3rd-generation Xeon Scalable (Ice Lake-SP, model 6Ah/6Ch) and on Skylake-SP, Cascade Lake and Cooper Lake (model 55h) Platinum and Gold 6xxx parts, 1 on their Silver and Bronze parts and most Gold 5xxx (Intel 64 and IA-32 Architectures Optimization Reference Manual, 'Servers with a Single FMA Unit'). Where AVX-512 runs on one of those models, or under a hypervisor (whose model number may be any and whose hosts are Xeon Scalable parts), two 512-bit pipes are claimed: a ceiling must not sit below what a core can run, and on a one-unit part the row's %theory reads half";
    const INTEL_ONE_UNIT: &str = "Intel ARK's '# of AVX-512 FMA Units': 1 on Skylake-SP and Cascade Lake Bronze 31xx/32xx, Silver 41xx/42xx and Gold 51xx/52xx parts (but 5122 and 5222), named by the brand string; their 512-bit FMA runs on p0+p1 fused, as 2 x 256 bits (Intel 64 and IA-32 Architectures Optimization Reference Manual, 'Servers with a Single FMA Unit')";
    let has = |flag: &str| has_flag(flags, flag);
    const XEON_SP_MODELS: [u32; 3] = [0x55, 0x6A, 0x6C];
    match (vendor, family) {
        ("GenuineIntel", 6) if has("amx_tile") => Some(HostFma {
            pipes: 2,
            datapath_bits: 512,
            source: INTEL_AMX,
        }),
        ("GenuineIntel", 6)
            if has("avx512f") && (has("hypervisor") || XEON_SP_MODELS.contains(&model)) =>
        {
            Some(if one_fma_unit_xeon(brand) {
                HostFma {
                    pipes: 2,
                    datapath_bits: 256,
                    source: INTEL_ONE_UNIT,
                }
            } else {
                HostFma {
                    pipes: 2,
                    datapath_bits: 512,
                    source: INTEL_XEON_SP,
                }
            })
        }
        ("AuthenticAMD", 0x1A) => {
            // Zen 5: Strix Point (20h-2Fh) and Krackan Point (60h-6Fh) have a 256-bit datapath.
            let mobile = (0x20..=0x2F).contains(&model) || (0x60..=0x6F).contains(&model);
            Some(HostFma {
                pipes: 2,
                datapath_bits: if mobile { 256 } else { 512 },
                source: ZEN5_SOG,
            })
        }
        ("AuthenticAMD", 0x19) => Some(HostFma {
            pipes: 2,
            datapath_bits: 256,
            source: ZEN4_SOG,
        }),
        ("AuthenticAMD", 0x17) if model >= 0x30 => Some(HostFma {
            pipes: 2,
            datapath_bits: 256,
            source: ZEN2_SOG,
        }),
        // Family 6 cores since Haswell (model 0x3C) have two 256-bit FMA ports; whether a Xeon
        // has a second 512-bit unit varies by SKU, so 512-bit code is credited with 256 × 2.
        ("GenuineIntel", 6) if model >= 0x3C => Some(HostFma {
            pipes: 2,
            datapath_bits: 256,
            source: INTEL_SOG,
        }),
        _ => None,
    }
}

/// Whether a CPU feature list (`/proc/cpuinfo`'s `flags` or `Features`, space-separated) holds
/// `flag` as a whole word (`amx_tile_x` is not `amx_tile`).
pub fn has_flag(flags: &str, flag: &str) -> bool {
    flags.split_whitespace().any(|f| f == flag)
}

/// Whether a Xeon brand string (`Intel(R) Xeon(R) Gold 5218 CPU @ 2.30GHz`) names a Skylake-SP
/// or Cascade Lake SKU with one AVX-512 FMA unit: Bronze 31xx and 32xx, Silver 41xx and 42xx,
/// Gold 51xx and 52xx but 5122 and 5222 (Intel ARK). Later tiers' numbers (Ice Lake's Silver
/// 43xx, Cooper Lake's Gold 53xxH) have two units, as does a brand that names no tier (a
/// hypervisor's `Intel(R) Xeon(R) Processor`).
fn one_fma_unit_xeon(brand: &str) -> bool {
    let words: Vec<&str> = brand.split_whitespace().collect();
    words.windows(2).any(|w| {
        let digits: String = w[1].chars().take_while(char::is_ascii_digit).collect();
        let Ok(n) = digits.parse::<u32>() else {
            return false;
        };
        digits.len() == 4
            && match w[0] {
                "Bronze" => (3100..3300).contains(&n),
                "Silver" => (4100..4300).contains(&n),
                "Gold" => (5100..5300).contains(&n) && n != 5122 && n != 5222,
                _ => false,
            }
    })
}

/// An Arm core's name and FMA datapath from `/proc/cpuinfo`'s `CPU implementer` and `CPU part`.
/// Part numbers as in LLVM's `getHostCPUNameForARM` and Linux's `asm/cputype.h`. Cores whose
/// FMA pipes are not documented here get a name but no datapath (`None`), so no theoretical peak
/// is claimed for them.
pub fn arm_core(implementer: u32, part: u32) -> Option<(&'static str, Option<HostFma>)> {
    const N1_SOG: &str = "Arm Neoverse N1 Software Optimization Guide, FP/ASIMD pipelines V0/V1: ASIMD FP multiply-accumulate issues to V0 and V1 (two 128-bit FMA pipes); LLVM AArch64SchedNeoverseN1.td: FML[AS]v on N1UnitV = V0/V1";
    const N2_SOG: &str = "Arm Neoverse N2 Software Optimization Guide, FP/ASIMD/SVE pipelines V0/V1: FMLA issues to V0 and V1 (two 128-bit FMA pipes); LLVM AArch64SchedNeoverseN2.td: FMLAv/FMLSv on N2UnitV = V0/V1";
    const V1_SOG: &str = "Arm Neoverse V1 Software Optimization Guide: four FP/ASIMD pipelines V0-V3 each executing ASIMD FMLA (or two 256-bit SVE FMA pipes); LLVM AArch64SchedNeoverseV1.td: FML[AS]v on V1UnitV = V0-V3 (SVE FMLA on V0/V1 only)";
    const V2_SOG: &str = "Arm Neoverse V2 Software Optimization Guide (PJDOC-466751330-593177): four FP/ASIMD pipelines V0-V3, ASIMD FP multiply accumulate on all four (four 128-bit FMA pipes); LLVM AArch64SchedNeoverseV2.td: FMLAv/FMLSv on V2UnitV = V0-V3";
    let fma = |pipes, source| {
        Some(HostFma {
            pipes,
            datapath_bits: 128,
            source,
        })
    };
    match (implementer, part) {
        (0x41, 0xD0C) => Some(("Arm Neoverse-N1", fma(2, N1_SOG))),
        (0x41, 0xD49) => Some(("Arm Neoverse-N2", fma(2, N2_SOG))),
        (0x41, 0xD40) => Some(("Arm Neoverse-V1", fma(4, V1_SOG))),
        (0x41, 0xD4F) => Some(("Arm Neoverse-V2", fma(4, V2_SOG))),
        (0x41, 0xD8E) => Some(("Arm Neoverse-N3", None)),
        (0x41, 0xD84) => Some(("Arm Neoverse-V3", None)),
        (0x41, 0xD08) => Some(("Arm Cortex-A72", None)),
        (0x41, 0xD0B) => Some(("Arm Cortex-A76", None)),
        (0x41, 0xD41) => Some(("Arm Cortex-A78", None)),
        (0x41, 0xD44) => Some(("Arm Cortex-X1", None)),
        (0x41, 0xD47) => Some(("Arm Cortex-A710", None)),
        _ => None,
    }
}

/// Theoretical host peak in GFLOP/s: cores × clock × FMA pipes × lanes × 2, where the lanes of an
/// instruction are `min(instruction, datapath) bits / element bits`.
pub fn host_peak_gflops(
    cores: u32,
    clock_mhz: f64,
    fma: HostFma,
    instruction_bits: u32,
    element_bits: u32,
) -> f64 {
    let lanes = instruction_bits.min(fma.datapath_bits) / element_bits;
    cores as f64 * clock_mhz / 1e3 * fma.pipes as f64 * lanes as f64 * 2.0
}

#[cfg(test)]
mod tests {
    //! The private rate table's own check; the rest of the theoretical peaks' tests are the
    //! suite's (tests/specs_theory.rs).
    use super::*;

    #[test]
    fn every_entry_is_unique_and_sourced() {
        for (i, a) in TABLE.iter().enumerate() {
            assert!(!a.source.is_empty());
            assert!(a.fma_per_clock_per_sm > 0);
            for b in &TABLE[i + 1..] {
                assert!(
                    !(a.cc == b.cc && a.precision == b.precision),
                    "duplicate {:?} {}",
                    a.cc,
                    a.precision
                );
            }
        }
        assert_eq!(Segment::of("NVIDIA GeForce RTX 4090"), Segment::GeForce);
        assert_eq!(Segment::of("NVIDIA TITAN RTX"), Segment::GeForce);
        assert_eq!(Segment::of("Tesla T4"), Segment::Professional);
        assert_eq!(parse_compute_capability("12.0"), Some((12, 0)));
        assert_eq!(parse_compute_capability(""), None);
    }
}
