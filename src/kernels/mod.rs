//! The PTX sources, embedded in the binary: one registry that the CUDA backend loads from and
//! that the offline checks (ptxas, SASS, the PTX interpreter) iterate, so no kernel can ship
//! unchecked.

pub mod gemm;
pub mod intensity;
pub mod wgmma;

/// STREAM kernels (see kernels/README.md for their conventions).
pub const STREAM: &str = include_str!("../../kernels/stream.ptx");
/// FMA peak kernels, one per precision.
pub const PEAK: &str = include_str!("../../kernels/peak.ptx");
/// Tensor-core (`mma.sync`) peak kernels for sm_80 and later.
pub const MMA: &str = include_str!("../../kernels/mma.ptx");
/// The fp8 tensor-core kernel; `.target sm_89`, loaded only where fp8 `mma.sync` is native.
pub const MMA_SM89: &str = include_str!("../../kernels/mma_sm89.ptx");
/// Hopper's f64 tensor-core peak (`mma_m16n8k16_f64_f64`, `.target sm_90`).
pub const MMA_SM90: &str = include_str!("../../kernels/mma_sm90.ptx");
/// Cache bandwidth kernels (the cache sweep): `l1_i32` (caching loads), `l2_i32` (`.cg`).
pub const CACHE: &str = include_str!("../../kernels/cache.ptx");
/// Latency kernels (pointer chase, one thread): `ca_i32` (L1 and L2), `cg_i32` (`.cg`, L2).
pub const LATENCY: &str = include_str!("../../kernels/latency.ptx");
/// The launch-overhead kernel: `empty_i32` (one counting add by one thread, nothing else).
pub const LAUNCH: &str = include_str!("../../kernels/launch.ptx");
/// The preparation kernels: a DRAM case's arrays filled (`fill_b32`, `fill_b64`; the intensity
/// sweep's inputs `fill_sweep_b32`, `fill_sweep_b64`) and a STREAM map kernel's or a sweep
/// point's output checked (`check_f32`, `check_f64`; `check_sweep_b32`, `check_sweep_b64`) on the
/// device.
pub const PREP: &str = include_str!("../../kernels/prep.ptx");
/// The arithmetic-intensity sweep's template, expanded by [`intensity::expand`].
pub const INTENSITY_TEMPLATE: &str = include_str!("../../kernels/intensity.ptx.in");
/// The tensor-core GEMM's template, expanded per input type by [`gemm::expand`].
pub const GEMM_TEMPLATE: &str = include_str!("../../kernels/gemm.ptx.in");
/// Hopper's `wgmma` tensor-core peaks' template (`.target sm_90a`), expanded by
/// [`wgmma::expand`] into one module.
pub const WGMMA_TEMPLATE: &str = include_str!("../../kernels/wgmma.ptx.in");
/// The Hopper GEMM's template (`wgmma`, `.target sm_90a`), expanded per input type by
/// [`gemm::expand_wgmma`].
pub const GEMM_WGMMA_TEMPLATE: &str = include_str!("../../kernels/gemm_wgmma.ptx.in");
/// Hopper's TMA- and mbarrier-fed GEMM's template (`.target sm_90a`), expanded per input type,
/// alone and in clusters of two CTAs, by [`gemm::expand_tma`].
pub const GEMM_TMA_TEMPLATE: &str = include_str!("../../kernels/gemm_tma.ptx.in");
/// The f32 SIMT GEMM (plain FFMA, no tensor cores): `gemm_f32_f32`.
pub const GEMM_SIMT: &str = include_str!("../../kernels/gemm_simt.ptx");

/// A kernel template with each `@KEY@` replaced by its text, one key after the other in the
/// order given (so a value's own text is searched for the keys after it).
pub fn expand_template<'a>(
    template: &str,
    replacements: impl IntoIterator<Item = (&'a str, String)>,
) -> String {
    replacements
        .into_iter()
        .fold(template.to_string(), |text, (key, value)| {
            text.replace(key, &value)
        })
}

/// One PTX module as it is handed to the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// File name under `kernels/` (a template's expansions add `#k=…` to it).
    pub name: String,
    pub ptx: String,
}

/// Every PTX module roofprobe can load, template expansions included: the sweep's as
/// `intensity.ptx.in#k=<k>,<precision>`, one per point of [`crate::cases::intensity::KS`] and
/// precision.
pub fn all() -> Vec<Source> {
    use crate::cases::intensity::{KS, PRECISIONS};
    let file = |name: &str, ptx: &str| Source {
        name: name.to_string(),
        ptx: ptx.to_string(),
    };
    let mut out = vec![
        file("stream.ptx", STREAM),
        file("peak.ptx", PEAK),
        file("mma.ptx", MMA),
        file("mma_sm89.ptx", MMA_SM89),
        file("mma_sm90.ptx", MMA_SM90),
        file("cache.ptx", CACHE),
        file("latency.ptx", LATENCY),
        file("launch.ptx", LAUNCH),
        file("prep.ptx", PREP),
        file("gemm_simt.ptx", GEMM_SIMT),
        Source {
            name: "wgmma.ptx.in#sm_90a".to_string(),
            ptx: wgmma::expand(),
        },
    ];
    for p in crate::cases::gemm::TENSOR_PRECISIONS {
        out.push(Source {
            name: format!("gemm.ptx.in#{p}"),
            ptx: gemm::expand(p),
        });
    }
    for p in crate::cases::gemm::WGMMA_PRECISIONS {
        out.push(Source {
            name: format!("gemm_wgmma.ptx.in#{p}"),
            ptx: gemm::expand_wgmma(p),
        });
    }
    for p in crate::cases::gemm::TMA_PRECISIONS {
        out.push(Source {
            name: format!("gemm_tma.ptx.in#{p}"),
            ptx: gemm::expand_tma(p, false),
        });
        out.push(Source {
            name: format!("gemm_tma.ptx.in#cluster2,{p}"),
            ptx: gemm::expand_tma(p, true),
        });
    }
    for p in PRECISIONS {
        for k in KS {
            out.push(Source {
                name: format!("intensity.ptx.in#k={k},{p}"),
                ptx: intensity::expand(p, k),
            });
        }
    }
    out
}

/// The PTX ISA `.version` a module declares (`8.4` as `(8, 4)`), if any.
pub fn ptx_version(ptx: &str) -> Option<(u32, u32)> {
    let line = ptx
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(".version"))?;
    let (major, minor) = line.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.trim().parse().ok()?))
}

/// The `.target` a module declares (`sm_80`, `sm_89`, `sm_90a`), if any.
pub fn target(ptx: &str) -> Option<&str> {
    ptx.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(".target"))
        .and_then(|rest| rest.split([',', ' ', '\t']).find(|s| !s.is_empty()))
}

/// The `.entry` names a module defines, in order.
pub fn entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix(".visible")?.trim_start();
            let rest = rest.strip_prefix(".entry")?.trim_start();
            let end = rest.find(|c: char| c == '(' || c.is_whitespace())?;
            Some(rest[..end].to_string())
        })
        .collect()
}

/// Compute capability a `.target` needs, as (major, minor): `sm_89` → (8, 9).
pub fn target_capability(target: &str) -> Option<(u32, u32)> {
    let digits = target
        .strip_prefix("sm_")?
        .trim_end_matches(|c: char| c.is_alphabetic());
    let n: u32 = digits.parse().ok()?;
    Some((n / 10, n % 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_describes_the_stream_module() {
        let all = all();
        assert_eq!(all[0].name, "stream.ptx");
        assert_eq!(target(&all[0].ptx), Some("sm_80"));
        let names = entries(&all[0].ptx);
        assert_eq!(names.len(), 14);
        // the compute files (stream, peak, mma, mma_sm89, mma_sm90), the cache file, the GEMM
        // modules (three expansions and the SIMT file), the latency file, the launch file, the
        // preparation file, the wgmma module, the Hopper GEMM expansions (the cp.async-fed
        // kernel's two, the TMA kernel's three alone and three in clusters), and one sweep
        // module per (precision, k)
        assert_eq!(all.len(), 6 + 4 + 1 + 1 + 1 + 1 + 2 + 2 * 3 + 5 * 12);
        assert_eq!(entries(GEMM_SIMT), ["gemm_f32_f32"]);
        assert_eq!(
            entries(PREP),
            [
                "fill_b32",
                "fill_b64",
                "check_f32",
                "check_f64",
                "fill_sweep_b32",
                "fill_sweep_b64",
                "check_sweep_b32",
                "check_sweep_b64"
            ]
        );
        assert_eq!(entries(CACHE), ["l1_i32", "l2_i32"]);
        assert_eq!(entries(LATENCY), ["ca_i32", "cg_i32"]);
        assert_eq!(entries(LAUNCH), ["empty_i32"]);
        assert_eq!(target(MMA_SM89), Some("sm_89"));
        assert_eq!(target(MMA_SM90), Some("sm_90"));
        assert!(all
            .iter()
            .any(|s| s.name == "intensity.ptx.in#k=64,bf16x2"
                && entries(&s.ptx) == ["fma_bf16x2_k64"]));
        assert!(names.contains(&"triad_f64".to_string()));
        assert_eq!(target_capability("sm_89"), Some((8, 9)));
        assert_eq!(target_capability("sm_90a"), Some((9, 0)));
        assert_eq!(target_capability("compute_80"), None);
    }

    /// A wgmma matrix descriptor holds a shared address as `(x & 0x3FFFF) >> 4` (PTX ISA,
    /// "Matrix Descriptor Format"): in a cluster the hardware's shared address carries the
    /// CTA's rank above those 18 bits, which unmasked would land in the descriptor's next field.
    /// Every descriptor a module builds from an address (`shr.u64 d, d, 4` then `or.b64` of the
    /// fields) masks it first.
    #[test]
    fn wgmma_descriptors_keep_the_address_to_its_field() {
        let mut built = 0;
        for source in all() {
            let lines: Vec<&str> = source.ptx.lines().map(str::trim).collect();
            for (i, w) in lines.windows(3).enumerate() {
                let Some(reg) = w[1]
                    .strip_prefix("shr.u64 ")
                    .and_then(|rest| rest.split(',').next())
                else {
                    continue;
                };
                if !w[1].starts_with(&format!("shr.u64 {reg}, {reg}, 4;"))
                    || !w[2].starts_with(&format!("or.b64 {reg}, {reg}, "))
                {
                    continue;
                }
                built += 1;
                assert!(
                    w[0].starts_with(&format!("and.b64 {reg}, {reg}, 262143;")),
                    "{} line {}: a descriptor from an unmasked address: {:?}",
                    source.name,
                    i + 2,
                    w
                );
            }
        }
        // wgmma.ptx.in's B, and A and B of the cp.async-fed and TMA-fed GEMMs in each expansion
        assert!(built >= 1 + 2 * 2 + 2 * 6, "{built} descriptors found");
    }
}
