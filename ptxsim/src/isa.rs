//! Which PTX ISA version (`.version`) and which target (`.target sm_NN`) each instruction form
//! ptxsim runs needs: one table, [`Feature`], checked when a kernel is decoded, so that a module
//! which ptxas would refuse for its own header (an e4m3 `mma` under `.version 7.0 .target
//! sm_80`) does not pass here either.
//!
//! The baseline is PTX ISA 4.0 and sm_50, the oldest target ptxas (CUDA 12.9) still assembles
//! for: a `.target` below sm_50 is not supported, and only the forms that need more than that
//! baseline are listed. (ptxsim executes every target with the semantics of sm_70 and later —
//! independent thread scheduling, `*.sync` warp primitives only — which is also what such a
//! module gets when the driver JIT-compiles it for a current GPU.) The numbers are those of the
//! PTX ISA's
//! "PTX ISA Notes" and "Target ISA Notes" of each instruction (section named in each row), as
//! ptxas (CUDA 12.9) enforces them; `ptxsim/tests/isa.rs` assembles an example of every row with
//! ptxas at its minimum, one version below and one target below, and compares the versions
//! and targets in ptxas's own messages with this table.
//!
//! This module must not decide what an instruction means or whether ptxsim implements it:
//! `decode` does that, and asks here only "is this form allowed by this module's header?".

use crate::error::Error;

/// A PTX ISA version, `(major, minor)`.
type Version = (u32, u32);

/// One `.target` architecture and the PTX ISA version it needs ("Target ISA Notes" of
/// `.target`; ptxas: "PTX .version 7.0 does not support .target sm_86"), plain and with an
/// `a` (architecture-specific) or `f` (family) suffix where one exists.
struct TargetRow {
    sm: u32,
    plain: Version,
    arch: Option<Version>,
    family: Option<Version>,
}

const fn target(
    sm: u32,
    plain: Version,
    arch: Option<Version>,
    family: Option<Version>,
) -> TargetRow {
    TargetRow {
        sm,
        plain,
        arch,
        family,
    }
}

/// The `.target` architectures ptxsim accepts.
const TARGETS: &[TargetRow] = &[
    target(50, (4, 0), None, None),
    target(52, (4, 1), None, None),
    target(53, (4, 2), None, None),
    target(60, (5, 0), None, None),
    target(61, (5, 0), None, None),
    target(62, (5, 0), None, None),
    target(70, (6, 0), None, None),
    target(72, (6, 1), None, None),
    target(75, (6, 3), None, None),
    target(80, (7, 0), None, None),
    target(86, (7, 1), None, None),
    target(87, (7, 4), None, None),
    target(89, (7, 8), None, None),
    target(90, (7, 8), Some((8, 0)), None),
    target(100, (8, 6), Some((8, 6)), Some((8, 8))),
    target(101, (8, 6), Some((8, 6)), Some((8, 8))),
    target(103, (8, 8), Some((8, 8)), Some((8, 8))),
    target(120, (8, 7), Some((8, 7)), Some((8, 8))),
    target(121, (8, 8), Some((8, 8)), Some((8, 8))),
];

/// The PTX ISA versions ptxsim knows (ptxas CUDA 12.9 knows up to 8.8).
const VERSIONS: &[Version] = &[
    (4, 0),
    (4, 1),
    (4, 2),
    (4, 3),
    (5, 0),
    (6, 0),
    (6, 1),
    (6, 2),
    (6, 3),
    (6, 4),
    (6, 5),
    (7, 0),
    (7, 1),
    (7, 2),
    (7, 3),
    (7, 4),
    (7, 5),
    (7, 6),
    (7, 7),
    (7, 8),
    (8, 0),
    (8, 1),
    (8, 2),
    (8, 3),
    (8, 4),
    (8, 5),
    (8, 6),
    (8, 7),
    (8, 8),
];

/// A module's header: what its instructions are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// `.version major.minor`.
    pub version: (u32, u32),
    /// The `NN` of `.target sm_NN` (suffix aside).
    pub sm: u32,
    /// The target has the `a` suffix (`sm_90a`): architecture-specific features.
    pub arch: bool,
}

/// What one instruction form needs: it is allowed when the module's `.version` and `.target`
/// both reach one of `needs`' (PTX ISA version, sm) pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirement {
    /// The form, as an error names it.
    pub form: &'static str,
    /// Alternatives, any one of which suffices: ((major, minor), sm).
    pub needs: &'static [((u32, u32), u32)],
    /// The PTX ISA section whose "PTX ISA Notes" / "Target ISA Notes" give the numbers.
    pub section: &'static str,
    /// An architecture-specific feature ("Target ISA Notes: requires sm_90a"): only the
    /// listed sm with the `a` suffix allows it, not a later target, not the plain one.
    pub arch_specific: bool,
}

macro_rules! features {
    (@arch) => { false };
    (@arch $a:ident) => { true };
    ($($(#[$doc:meta])* $name:ident => ($form:expr, [$(($maj:expr, $min:expr, $sm:expr)),+], $section:expr $(, $arch:ident)?),)*) => {
        /// An instruction form that needs more than PTX ISA 4.0 and sm_50 (see the module docs).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Feature {
            $($(#[$doc])* $name,)*
        }

        impl Feature {
            /// Every feature, in table order.
            pub const ALL: &'static [Feature] = &[$(Feature::$name,)*];

            /// This feature's row of the table.
            pub fn requirement(self) -> Requirement {
                match self {
                    $(Feature::$name => Requirement {
                        form: $form,
                        needs: &[$((($maj, $min), $sm)),+],
                        section: $section,
                        arch_specific: features!(@arch $($arch)?),
                    },)*
                }
            }
        }
    };
}

features! {
    SmemSizeRegisters => ("%dynamic_smem_size / %total_smem_size", [(4, 1, 50)],
        "Special Registers: %dynamic_smem_size, %total_smem_size"),
    F16Arith => ("add, sub, mul, fma on .f16 / .f16x2", [(4, 2, 53)],
        "Half Precision Floating-Point Instructions: add, sub, mul, fma"),
    Lop3 => ("lop3", [(4, 3, 50)],
        "Logic and Shift Instructions: lop3"),
    AtomScope => (".cta/.gpu/.sys scope on atom and red", [(5, 0, 60)],
        "Parallel Synchronization and Communication Instructions: atom, red"),
    AtomAddF64 => ("atom/red .add.f64", [(5, 0, 60)],
        "Parallel Synchronization and Communication Instructions: atom, red"),
    WarpSync => ("shfl.sync, vote.sync, bar.warp.sync, barrier", [(6, 0, 50)],
        "Parallel Synchronization and Communication Instructions: shfl.sync, vote.sync, bar.warp.sync, barrier"),
    NegF16 => ("neg.f16 / neg.f16x2", [(6, 0, 53)],
        "Half Precision Floating-Point Instructions: neg"),
    MemoryOrder => (".relaxed/.acquire/.release/.acq_rel/.sc/.weak and fence", [(6, 0, 70)],
        "Memory Consistency Model; ld, st, atom, red, fence"),
    Activemask => ("activemask", [(6, 2, 50)],
        "Parallel Synchronization and Communication Instructions: activemask"),
    // As ptxas enforces it (from 6.2); where the ISA's notes and ptxas differ, ptxas is what
    // the driver's JIT runs, and tests/isa.rs holds this table to it.
    Nanosleep => ("nanosleep", [(6, 2, 70)],
        "Miscellaneous Instructions: nanosleep"),
    AbsF16 => ("abs.f16 / abs.f16x2", [(6, 5, 53)],
        "Half Precision Floating-Point Instructions: abs"),
    MinMaxF16 => ("min/max .f16 / .f16x2", [(7, 0, 80)],
        "Half Precision Floating-Point Instructions: min, max"),
    Bf16Arith => ("fma, min, max, neg, abs on .bf16 / .bf16x2", [(7, 0, 80)],
        "Half Precision Floating-Point Instructions: fma, min, max, neg, abs"),
    Bf16AddSubMul => ("add/sub/mul on .bf16 / .bf16x2", [(7, 8, 90)],
        "Half Precision Floating-Point Instructions: add, sub, mul"),
    L1Eviction => (".L1::evict_* / .L1::no_allocate on ld/st", [(7, 4, 70)],
        "Data Movement and Conversion Instructions: ld, st"),
    PrefetchSize => (".L2::64B / .L2::128B prefetch size", [(7, 4, 75)],
        "Data Movement and Conversion Instructions: ld, cp.async"),
    PrefetchSize256 => (".L2::256B prefetch size", [(7, 4, 80)],
        "Data Movement and Conversion Instructions: ld, cp.async"),
    L2CacheHint => (".L2::cache_hint", [(7, 4, 80)],
        "Data Movement and Conversion Instructions: ld, st, cp.async"),
    ClusterScope => (".cluster scope", [(7, 8, 90)],
        "Memory Consistency Model: Scope; ld, st, atom, red, fence"),
    SharedCta => ("the .shared::cta state space", [(7, 8, 50)],
        "State Spaces: Shared State Space; ld, st, atom, red, ldmatrix"),
    ParamEntry => ("the .param::entry state space", [(8, 3, 50)],
        "Data Movement and Conversion Instructions: ld"),
    BarrierCta => ("bar.cta / barrier.cta", [(7, 8, 50)],
        "Parallel Synchronization and Communication Instructions: bar, barrier"),
    PrefetchEviction => ("prefetch .L2::evict_last / .L2::evict_normal", [(7, 4, 80)],
        "Data Movement and Conversion Instructions: prefetch"),
    Createpolicy => ("createpolicy", [(7, 4, 80)],
        "Data Movement and Conversion Instructions: createpolicy"),
    CpAsync => ("cp.async (and its commit_group / wait_group / wait_all)", [(7, 0, 80)],
        "Data Movement and Conversion Instructions: cp.async"),
    CpAsyncIgnoreSrc => ("cp.async with an ignore-src predicate", [(7, 5, 80)],
        "Data Movement and Conversion Instructions: cp.async"),
    Ldmatrix => ("ldmatrix", [(6, 5, 75)],
        "Warp Level Matrix Multiply-Accumulate Instructions: ldmatrix"),
    MmaM16n8k8F16 => ("mma.m16n8k8 with .f16", [(6, 5, 75)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaM8n8k4F64 => ("mma.m8n8k4 with .f64", [(7, 0, 80)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaTf32 => ("mma.m16n8k4 / m16n8k8 with .tf32", [(7, 0, 80)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaBf16 => ("mma.m16n8k8 / m16n8k16 with .bf16", [(7, 0, 80)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaM16n8k16 => ("mma.m16n8k16 with .f16, .s8 or .u8", [(7, 0, 80)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaM16n8k32Int => ("mma.m16n8k32 with .s8 or .u8", [(7, 0, 80)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaM16n8k4F64 => ("mma.m16n8k4 with .f64", [(7, 8, 90)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaM16n8kF64 => ("mma.m16n8k8 / m16n8k16 with .f64", [(7, 8, 90)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaFp8 => ("mma.m16n8k32 with .e4m3/.e5m2 and .f32 accumulators", [(8, 4, 89)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaFp8F16Acc => ("mma with .e4m3/.e5m2 and .f16 accumulators", [(8, 7, 89)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    MmaFp8M16n8k16 => ("mma.m16n8k16 with .e4m3/.e5m2", [(8, 7, 89)],
        "Warp Level Matrix Multiply-Accumulate Instructions: mma"),
    CvtBf16F32 => ("cvt.bf16.f32", [(7, 0, 80)],
        "Data Movement and Conversion Instructions: cvt"),
    CvtF32Bf16 => ("cvt.f32.bf16", [(7, 1, 80)],
        "Data Movement and Conversion Instructions: cvt"),
    CvtBf16Other => ("cvt between .bf16 and a type other than .f32", [(7, 8, 90)],
        "Data Movement and Conversion Instructions: cvt"),
    CvtTf32Rna => ("cvt.rna.tf32.f32", [(7, 0, 80)],
        "Data Movement and Conversion Instructions: cvt"),
    CvtTf32RnRz => ("cvt.rn/.rz.tf32.f32", [(7, 8, 90)],
        "Data Movement and Conversion Instructions: cvt"),
    CvtTf32RnRzSatfinite => ("cvt.rn/.rz.satfinite.tf32.f32", [(8, 6, 100)],
        "Data Movement and Conversion Instructions: cvt"),
    CvtPairF32 => ("cvt.f16x2.f32 / cvt.bf16x2.f32", [(7, 0, 80)],
        "Data Movement and Conversion Instructions: cvt"),
    CvtRelu => ("cvt .relu", [(7, 0, 80)],
        "Data Movement and Conversion Instructions: cvt"),
    CvtSatfinite => ("cvt .satfinite to .f16, .bf16, .f16x2, .bf16x2 or .tf32", [(8, 1, 70)],
        "Data Movement and Conversion Instructions: cvt"),
    CvtFp8 => ("cvt with .e4m3x2 / .e5m2x2", [(7, 8, 90), (8, 1, 89)],
        "Data Movement and Conversion Instructions: cvt"),
    FenceProxyAsync => ("fence.proxy.async", [(8, 0, 90)],
        "Parallel Synchronization and Communication Instructions: membar / fence"),
    CvtaParam => ("cvta with the .param state space", [(7, 7, 70)],
        "Data Movement and Conversion Instructions: cvta"),
    Mbarrier => ("mbarrier.init / arrive / test_wait / inval", [(7, 0, 80)],
        "Parallel Synchronization and Communication Instructions: mbarrier"),
    MbarrierTestWaitParity => ("mbarrier.test_wait.parity", [(7, 1, 80)],
        "Parallel Synchronization and Communication Instructions: mbarrier.test_wait/mbarrier.try_wait"),
    MbarrierArriveSink => ("mbarrier.arrive with a sink `_` destination", [(7, 1, 80)],
        "Parallel Synchronization and Communication Instructions: mbarrier.arrive"),
    MbarrierArriveCount => ("mbarrier.arrive with a count operand", [(7, 8, 90)],
        "Parallel Synchronization and Communication Instructions: mbarrier.arrive"),
    MbarrierTryWait => ("mbarrier.try_wait", [(7, 8, 90)],
        "Parallel Synchronization and Communication Instructions: mbarrier.test_wait/mbarrier.try_wait"),
    MbarrierSemScope => (".acquire/.release/.relaxed and a scope on mbarrier instructions", [(8, 0, 80)],
        "Parallel Synchronization and Communication Instructions: mbarrier"),
    MbarrierExpectTx => ("mbarrier.expect_tx / mbarrier.arrive.expect_tx", [(8, 0, 90)],
        "Parallel Synchronization and Communication Instructions: mbarrier.expect_tx, mbarrier.arrive"),
    FenceMbarrierInit => ("fence.mbarrier_init", [(8, 0, 90)],
        "Parallel Synchronization and Communication Instructions: membar / fence"),
    CpAsyncBulk => ("cp.async.bulk", [(8, 0, 90)],
        "Data Movement and Conversion Instructions: cp.async.bulk"),
    CpAsyncBulkTensor => ("cp.async.bulk.tensor", [(8, 0, 90)],
        "Data Movement and Conversion Instructions: cp.async.bulk.tensor"),
    BulkMulticast => ("cp.async.bulk.tensor with .multicast::cluster", [(8, 0, 90)],
        "Data Movement and Conversion Instructions: cp.async.bulk.tensor"),
    ClusterRegisters => ("%cluster_ctarank, %clusterid and the other cluster special registers", [(7, 8, 90)],
        "Special Registers: %cluster_ctarank, %cluster_nctarank, %clusterid, %nclusterid, %cluster_ctaid, %cluster_nctaid"),
    BarrierCluster => ("barrier.cluster.arrive / barrier.cluster.wait", [(7, 8, 90)],
        "Parallel Synchronization and Communication Instructions: barrier.cluster"),
    BarrierClusterSem => (".release/.relaxed/.acquire on barrier.cluster", [(8, 0, 90)],
        "Parallel Synchronization and Communication Instructions: barrier.cluster"),
    Mapa => ("mapa", [(7, 8, 90)],
        "Data Movement and Conversion Instructions: mapa"),
    MbarrierCluster => ("mbarrier.arrive on .shared::cluster (another CTA's barrier)", [(8, 0, 90)],
        "Parallel Synchronization and Communication Instructions: mbarrier.arrive"),
    WgmmaSync => ("wgmma.fence / wgmma.commit_group / wgmma.wait_group", [(8, 0, 90)],
        "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions: wgmma.fence, wgmma.commit_group, wgmma.wait_group",
        arch),
    WgmmaMmaAsync => ("wgmma.mma_async", [(8, 0, 90)],
        "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions: wgmma.mma_async",
        arch),
    // ptxas: "Feature 'WGMMA with mixed integer types' requires PTX ISA .version 8.4 or later".
    WgmmaMixedInt => ("wgmma.mma_async with mixed .s8/.u8 types (.u8.s8, .s8.u8)", [(8, 4, 90)],
        "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions: wgmma.mma_async",
        arch),
}

impl Requirement {
    pub fn allows(&self, h: Header) -> bool {
        self.needs.iter().any(|&(v, sm)| {
            h.version >= v
                && if self.arch_specific {
                    h.sm == sm && h.arch
                } else {
                    h.sm >= sm
                }
        })
    }

    /// "PTX ISA 8.4 (.version 8.4) and .target sm_89 or later", alternatives joined by "or".
    pub fn describe_needs(&self) -> String {
        self.needs
            .iter()
            .map(|&((maj, min), sm)| {
                if self.arch_specific {
                    format!(".version {maj}.{min} or later and exactly .target sm_{sm}a (an architecture-specific feature: neither sm_{sm} nor a later target has it)")
                } else {
                    format!(".version {maj}.{min} and .target sm_{sm} or later")
                }
            })
            .collect::<Vec<_>>()
            .join(", or ")
    }
}

impl Feature {
    /// `Ok` if `h` allows this form; else the error for the instruction at `line`.
    pub(crate) fn check(self, h: Header, line: u32, opcode: &str) -> Result<(), Error> {
        let r = self.requirement();
        if r.allows(h) {
            return Ok(());
        }
        Err(Error::parse(
            line,
            format!(
                "`{opcode}`: {} needs {} (PTX ISA, {}); this module declares .version {}.{} and .target sm_{}{}",
                r.form,
                r.describe_needs(),
                r.section,
                h.version.0,
                h.version.1,
                h.sm,
                if h.arch { "a" } else { "" }
            ),
        ))
    }
}

/// Checks a module's `.version` and `.target` and returns its header. Both directives are
/// required (PTX ISA, "PTX Module Directives"); the target must be one ptxsim models and
/// allowed by the version.
pub(crate) fn header(
    version: Option<((u32, u32), u32)>,
    targets: &[String],
    target_line: u32,
) -> Result<Header, Error> {
    let Some((version, vline)) = version else {
        return Err(Error::parse(
            1,
            "no `.version` directive: a PTX module starts with `.version major.minor`",
        ));
    };
    if !VERSIONS.contains(&version) {
        let (lo, hi) = (VERSIONS[0], VERSIONS[VERSIONS.len() - 1]);
        return Err(Error::unsupported(
            vline,
            format!(
                ".version {}.{}: ptxsim knows PTX ISA {}.{} to {}.{}",
                version.0, version.1, lo.0, lo.1, hi.0, hi.1
            ),
        ));
    }
    if targets.is_empty() {
        return Err(Error::parse(
            vline,
            "no `.target` directive: `.version` is followed by `.target sm_NN`",
        ));
    }
    let mut sm_targets = targets.iter().filter(|t| t.starts_with("sm_"));
    let (Some(target), None) = (sm_targets.next(), sm_targets.next()) else {
        return Err(Error::parse(
            target_line,
            format!(
                "`.target {}`: a module names exactly one `sm_NN` target",
                targets.join(", ")
            ),
        ));
    };
    for other in targets.iter().filter(|t| !t.starts_with("sm_")) {
        // Texture modes and debug information change nothing ptxsim runs.
        if !matches!(
            other.as_str(),
            "texmode_unified" | "texmode_independent" | "debug"
        ) {
            return Err(Error::unsupported(
                target_line,
                format!("`.target` option `{other}`"),
            ));
        }
    }
    let digits: String = target[3..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let suffix = &target[3 + digits.len()..];
    let row = digits
        .parse::<u32>()
        .ok()
        .and_then(|sm| TARGETS.iter().find(|r| r.sm == sm));
    let needs = row.and_then(|r| match suffix {
        "" => Some(r.plain),
        "a" => r.arch,
        "f" => r.family,
        _ => None,
    });
    let (Some(row), Some(needs)) = (row, needs) else {
        let below = digits.parse::<u32>().is_ok_and(|sm| sm < TARGETS[0].sm);
        return Err(Error::unsupported(
            target_line,
            if below {
                format!(
                    "`.target {target}`: ptxsim knows sm_50 and later (the oldest target ptxas still assembles for)"
                )
            } else {
                format!("`.target {target}`: not a target ptxsim knows")
            },
        ));
    };
    if version < needs {
        return Err(Error::parse(
            target_line,
            format!(
                "`.target {target}` needs .version {}.{} or later (PTX ISA, \"PTX Module Directives: .target\"); this module declares .version {}.{}",
                needs.0, needs.1, version.0, version.1
            ),
        ));
    }
    Ok(Header {
        version,
        sm: row.sm,
        arch: suffix == "a",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: (u32, u32), t: &str) -> Result<Header, Error> {
        header(Some((v, 1)), &[t.to_string()], 2)
    }

    #[test]
    fn targets_need_their_versions() {
        assert_eq!(
            h((7, 0), "sm_80").unwrap(),
            Header {
                version: (7, 0),
                sm: 80,
                arch: false
            }
        );
        assert!(h((7, 0), "sm_86")
            .unwrap_err()
            .to_string()
            .contains("needs .version 7.1"));
        assert!(h((7, 8), "sm_90a").is_err());
        assert_eq!(h((8, 0), "sm_90a").unwrap().sm, 90);
        assert!(h((8, 7), "sm_100f").is_err());
        assert!(h((8, 8), "sm_100f").is_ok());
        assert!(h((8, 8), "sm_35")
            .unwrap_err()
            .to_string()
            .contains("sm_50 and later"));
        assert_eq!(h((4, 1), "sm_52").unwrap().sm, 52);
        assert!(h((8, 8), "sm_99")
            .unwrap_err()
            .to_string()
            .contains("not a target"));
        assert!(h((7, 9), "sm_80")
            .unwrap_err()
            .to_string()
            .contains(".version 7.9"));
        assert!(header(None, &["sm_80".into()], 2).is_err());
        assert!(header(Some(((7, 0), 1)), &[], 2).is_err());
        assert!(header(Some(((7, 0), 1)), &["sm_80".into(), "debug".into()], 2).is_ok());
        assert!(header(
            Some(((7, 0), 1)),
            &["sm_80".into(), "map_f64_to_f32".into()],
            2
        )
        .is_err());
    }

    #[test]
    fn a_requirement_is_met_by_any_alternative() {
        let fp8 = Feature::CvtFp8.requirement();
        let at = |v, sm| Header {
            version: v,
            sm,
            arch: false,
        };
        assert!(fp8.allows(at((8, 1), 89)));
        assert!(fp8.allows(at((7, 8), 90)));
        assert!(!fp8.allows(at((7, 8), 89)));
        assert!(!fp8.allows(at((8, 8), 86)));
        let e = Feature::MmaFp8
            .check(
                at((7, 0), 80),
                12,
                "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
            )
            .unwrap_err();
        assert_eq!(e.line(), Some(12));
        let msg = e.to_string();
        assert!(
            msg.contains("needs .version 8.4 and .target sm_89 or later"),
            "{msg}"
        );
        assert!(msg.contains(".version 7.0 and .target sm_80"), "{msg}");
    }
}
