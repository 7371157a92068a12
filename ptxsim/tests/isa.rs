//! `.version` and `.target` are checked: every instruction form of `ptxsim::isa`'s table parses
//! exactly where its row says (at its minimum version and target, not one version or one target
//! below), and ptxas (when present) draws the same lines, so the table cannot drift from the
//! real toolchain. Also the module header itself: `.version`/`.target` present and compatible.

mod common;

use ptxsim::isa::{Feature, Requirement};
use ptxsim::{Error, Module};

/// The PTX ISA versions from 4.0 to 8.8, in order.
const VERSIONS: &[(u32, u32)] = &[
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

/// Plain targets in order, with the version each needs (ptxas: "PTX .version 7.0 does not
/// support .target sm_86").
const TARGETS: &[(u32, (u32, u32))] = &[
    (50, (4, 0)),
    (52, (4, 1)),
    (53, (4, 2)),
    (60, (5, 0)),
    (70, (6, 0)),
    (72, (6, 1)),
    (75, (6, 3)),
    (80, (7, 0)),
    (86, (7, 1)),
    (87, (7, 4)),
    (89, (7, 8)),
    (90, (7, 8)),
    (100, (8, 6)),
    (120, (8, 7)),
];

/// One use of each feature, as instructions of the body of [`snippet`]. Every feature has one
/// (no catch-all arm), so a row cannot be added to the table without a checked example.
fn example(f: Feature) -> &'static str {
    match f {
        Feature::SmemSizeRegisters => "mov.u32 %r3, %dynamic_smem_size;",
        Feature::F16Arith => "fma.rn.sat.f16x2 %r3, %r1, %r2, %r4;",
        Feature::Lop3 => "lop3.b32 %r3, %r1, %r2, %r4, 0x96;",
        Feature::AtomScope => "atom.gpu.global.add.u32 %r3, [%rd1], 1;",
        Feature::AtomAddF64 => "atom.global.add.f64 %fd1, [%rd1], %fd2;",
        Feature::WarpSync => "shfl.sync.bfly.b32 %r3|%p2, %r1, 1, 31, -1;",
        Feature::NegF16 => "neg.f16 %h1, %h2;",
        Feature::MemoryOrder => "ld.acquire.gpu.global.u32 %r3, [%rd1];",
        Feature::Activemask => "activemask.b32 %r3;",
        Feature::Nanosleep => "nanosleep.u32 20;",
        Feature::AbsF16 => "abs.f16 %h1, %h2;",
        Feature::MinMaxF16 => "min.f16x2 %r3, %r1, %r2;",
        Feature::Bf16Arith => "fma.rn.bf16 %h1, %h2, %h3, %h4;",
        Feature::Bf16AddSubMul => "add.rn.bf16x2 %r3, %r1, %r2;",
        Feature::L1Eviction => "ld.global.L1::evict_last.u32 %r3, [%rd1];",
        Feature::PrefetchSize => "ld.global.L2::128B.u32 %r3, [%rd1];",
        Feature::PrefetchSize256 => "ld.global.L2::256B.u32 %r3, [%rd1];",
        Feature::L2CacheHint => "st.global.L2::cache_hint.u32 [%rd1], %r3, %rd2;",
        Feature::ClusterScope => "fence.acq_rel.cluster;",
        Feature::SharedCta => "ld.shared::cta.u32 %r3, [%r1];",
        Feature::ParamEntry => "ld.param::entry.u64 %rd3, [out];",
        Feature::BarrierCta => "barrier.cta.sync 0;",
        Feature::PrefetchEviction => "prefetch.global.L2::evict_last [%rd1];",
        Feature::Createpolicy => "createpolicy.fractional.L2::evict_last.b64 %rd3, 1.0;",
        Feature::CpAsync => {
            "cp.async.ca.shared.global [%r1], [%rd1], 4;\n    cp.async.commit_group;\n    cp.async.wait_group 0;"
        }
        Feature::CpAsyncIgnoreSrc => "cp.async.cg.shared.global [%r1], [%rd1], 16, %p1;",
        Feature::Ldmatrix => "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r3, %r4, %r5, %r6}, [%r1];",
        Feature::MmaM16n8k8F16 => {
            "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r3, %r4}, {%r5}, {%f5, %f6, %f7, %f8};"
        }
        Feature::MmaM8n8k4F64 => {
            "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%fd1, %fd2}, {%fd3}, {%fd4}, {%fd5, %fd6};"
        }
        Feature::MmaTf32 => {
            "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2}, {%r3}, {%f5, %f6, %f7, %f8};"
        }
        Feature::MmaBf16 => {
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f5, %f6, %f7, %f8};"
        }
        Feature::MmaM16n8k16 => {
            "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%r7, %r8}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r9, %r10};"
        }
        Feature::MmaM16n8k32Int => {
            "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.s8.s32 {%r7, %r8, %r9, %r10}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r11, %r12, %r13, %r14};"
        }
        Feature::MmaM16n8k4F64 => {
            "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%fd1, %fd2, %fd3, %fd4}, {%fd5, %fd6}, {%fd7}, {%fd8, %fd9, %fd10, %fd11};"
        }
        Feature::MmaM16n8kF64 => {
            "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%fd1, %fd2, %fd3, %fd4}, {%fd5, %fd6, %fd7, %fd8, %fd9, %fd10, %fd11, %fd12}, {%fd13, %fd14, %fd15, %fd16}, {%fd17, %fd18, %fd19, %fd20};"
        }
        Feature::MmaFp8 => {
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f5, %f6, %f7, %f8};"
        }
        Feature::MmaFp8F16Acc => {
            "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%r7, %r8}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r9, %r10};"
        }
        Feature::MmaFp8M16n8k16 => {
            "mma.sync.aligned.m16n8k16.row.col.f32.e5m2.e4m3.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2}, {%r5}, {%f5, %f6, %f7, %f8};"
        }
        Feature::CvtBf16F32 => "cvt.rz.bf16.f32 %h1, %f1;",
        Feature::CvtF32Bf16 => "cvt.f32.bf16 %f2, %h1;",
        Feature::CvtBf16Other => "cvt.f64.bf16 %fd2, %h1;",
        Feature::CvtTf32Rna => "cvt.rna.tf32.f32 %r3, %f1;",
        Feature::CvtTf32RnRz => "cvt.rn.tf32.f32 %r3, %f1;",
        Feature::CvtTf32RnRzSatfinite => "cvt.rz.satfinite.tf32.f32 %r3, %f1;",
        Feature::CvtPairF32 => "cvt.rn.bf16x2.f32 %r3, %f1, %f2;",
        Feature::CvtRelu => "cvt.rn.relu.f16.f32 %h1, %f1;",
        Feature::CvtSatfinite => "cvt.rn.satfinite.f16.f32 %h1, %f1;",
        Feature::CvtFp8 => "cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;",
        Feature::FenceProxyAsync => "fence.proxy.async.shared::cta;",
        Feature::CvtaParam => "cvta.param.u64 %rd4, %rd1;",
        Feature::Mbarrier => {
            "mbarrier.init.shared.b64 [%r1], 32;\n    mbarrier.arrive.shared.b64 %rd3, [%r1];\n    mbarrier.test_wait.shared.b64 %p1, [%r1], %rd3;\n    mbarrier.inval.shared.b64 [%r1];"
        }
        Feature::MbarrierTestWaitParity => "mbarrier.test_wait.parity.shared.b64 %p1, [%r1], %r3;",
        Feature::MbarrierArriveSink => "mbarrier.arrive.shared.b64 _, [%r1];",
        Feature::MbarrierArriveCount => "mbarrier.arrive.shared.b64 %rd3, [%r1], 2;",
        Feature::MbarrierTryWait => "mbarrier.try_wait.parity.shared.b64 %p1, [%r1], %r3;",
        Feature::MbarrierSemScope => "mbarrier.arrive.release.cta.shared.b64 %rd3, [%r1];",
        Feature::MbarrierExpectTx => {
            "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r1], 64;\n    mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r1], 64;"
        }
        Feature::FenceMbarrierInit => "fence.mbarrier_init.release.cluster;",
        Feature::CpAsyncBulk => {
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r1+16];"
        }
        Feature::CpAsyncBulkTensor => {
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r3, %r4}], [%r1+128];"
        }
        Feature::BulkMulticast => {
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [%rd1, {%r3, %r4}], [%r1+128], %h1;"
        }
        Feature::ClusterRegisters => "mov.u32 %r3, %cluster_ctarank;",
        Feature::BarrierCluster => {
            "barrier.cluster.arrive.aligned;\n    barrier.cluster.wait.aligned;"
        }
        Feature::BarrierClusterSem => {
            "barrier.cluster.arrive.release;\n    barrier.cluster.wait.acquire;"
        }
        Feature::Mapa => "mapa.shared::cluster.u32 %r3, %r1, 1;",
        Feature::MbarrierCluster => {
            "mbarrier.arrive.shared::cluster.b64 _, [%r1];"
        }
        Feature::WgmmaSync => {
            "wgmma.fence.sync.aligned;\n    wgmma.commit_group.sync.aligned;\n    wgmma.wait_group.sync.aligned 0;"
        }
        Feature::WgmmaMmaAsync => {
            "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, %p1, 1, 1, 0, 0;"
        }
        Feature::WgmmaMixedInt => {
            "wgmma.mma_async.sync.aligned.m64n8k32.s32.u8.s8 {%r3, %r4, %r5, %r6}, %rd1, %rd2, %p1;"
        }
    }
}

/// A module around `body` under `.version v` and `.target sm_<sm>`.
fn snippet(v: (u32, u32), sm: u32, body: &str) -> String {
    snippet_for(v, &format!("sm_{sm}"), body)
}

/// A module around `body` under `.version v` and `.target <target>`.
fn snippet_for(v: (u32, u32), target: &str, body: &str) -> String {
    format!(
        ".version {}.{}\n.target {target}\n.address_size 64\n.visible .entry k(.param .u64 out)\n{{\n    .reg .pred %p<4>;\n    .reg .b16 %h<8>;\n    .reg .b32 %r<32>;\n    .reg .b64 %rd<16>;\n    .reg .f32 %f<16>;\n    .reg .f64 %fd<24>;\n    .shared .align 16 .b8 buf[256];\n    ld.param.u64 %rd1, [out];\n    mov.u32 %r1, buf;\n    {body}\n    ret;\n}}\n",
        v.0, v.1
    )
}

/// The error of a text that must not parse (without printing the whole module if it does).
fn parse_err(text: &str) -> Error {
    match Module::parse(text) {
        Ok(_) => panic!("parses, but must not:\n{text}"),
        Err(e) => e,
    }
}

/// The line of [`snippet`]'s body.
const BODY_LINE: u32 = 15;

fn version_before(v: (u32, u32)) -> Option<(u32, u32)> {
    let i = VERSIONS.iter().position(|&x| x == v)?;
    i.checked_sub(1).map(|i| VERSIONS[i])
}

fn target_before(sm: u32) -> Option<(u32, (u32, u32))> {
    let i = TARGETS.iter().position(|t| t.0 == sm)?;
    i.checked_sub(1).map(|i| TARGETS[i])
}

fn version_for(sm: u32) -> (u32, u32) {
    TARGETS
        .iter()
        .find(|t| t.0 == sm)
        .unwrap_or_else(|| panic!("sm_{sm} is not in this test's target list"))
        .1
}

/// The architecture-specific (`a`) targets and the version each needs.
const ARCH_TARGETS: &[(u32, (u32, u32))] = &[(90, (8, 0)), (100, (8, 6))];

/// The headers that pin one requirement: each alternative at its minimum, one version below it
/// (where the target still allows that version), and one target below it; for an
/// architecture-specific row, its `a` target at its minimum and one version below, the plain
/// target, and the next `a` target.
fn probes(r: &Requirement) -> Vec<((u32, u32), u32, bool)> {
    let mut out = Vec::new();
    if r.arch_specific {
        for &(v, sm) in r.needs {
            let i = ARCH_TARGETS
                .iter()
                .position(|t| t.0 == sm)
                .unwrap_or_else(|| panic!("sm_{sm}a is not in this test's target list"));
            let needs = ARCH_TARGETS[i].1;
            assert!(v >= needs, "{}: sm_{sm}a needs more than {v:?}", r.form);
            out.push((v, sm, true));
            if let Some(pv) = version_before(v).filter(|&pv| pv >= needs) {
                out.push((pv, sm, true));
            }
            out.push((v, sm, false));
            if let Some(&(next, nv)) = ARCH_TARGETS.get(i + 1) {
                out.push((v.max(nv), next, true));
            }
        }
        return out;
    }
    for &(v, sm) in r.needs {
        assert!(
            v >= version_for(sm),
            "{}: sm_{sm} itself needs more than {v:?}",
            r.form
        );
        out.push((v, sm, false));
        if let Some(pv) = version_before(v).filter(|&pv| pv >= version_for(sm)) {
            out.push((pv, sm, false));
        }
        if let Some((psm, pneeds)) = target_before(sm) {
            out.push((v.max(pneeds), psm, false));
        }
    }
    out
}

#[test]
fn every_feature_parses_exactly_where_its_row_allows_and_ptxas_agrees() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for &f in Feature::ALL {
        let r = f.requirement();
        for (v, sm, arch) in probes(&r) {
            let a = if arch { "a" } else { "" };
            let ptx = snippet_for(v, &format!("sm_{sm}{a}"), example(f));
            let header = ptxsim::isa::Header {
                version: v,
                sm,
                arch,
            };
            let allowed = r.allows(header);
            let at = format!("{f:?} at .version {}.{} .target sm_{sm}{a}", v.0, v.1);
            checked += 1;
            match (Module::parse(&ptx), allowed) {
                (Ok(_), true) => {}
                (Err(e), false) => {
                    // The error names this row's form, or another form of the example that
                    // this header does not allow either (cp.async before its ignore-src).
                    let msg = e.to_string();
                    let named = Feature::ALL
                        .iter()
                        .map(|g| g.requirement())
                        .any(|g| msg.contains(&format!(": {} needs", g.form)) && !g.allows(header));
                    if e.line() != Some(BODY_LINE) || !named {
                        failures.push(format!(
                            "{at}: the error should name line {BODY_LINE} and a form this header lacks: {msg}"
                        ));
                    }
                }
                (Ok(_), false) => failures.push(format!("{at}: parses, but the row forbids it")),
                (Err(e), true) => {
                    failures.push(format!("{at}: refused, but the row allows it: {e}"))
                }
            }
            let name = format!("isa_{f:?}_{}{}_sm{sm}{a}", v.0, v.1);
            match common::ptxas_verdict(&name, &ptx) {
                Some(Ok(())) if !allowed => {
                    failures.push(format!("{at}: ptxas accepts what the row forbids"))
                }
                Some(Err(stderr)) if allowed => failures.push(format!(
                    "{at}: ptxas refuses what the row allows: {}",
                    stderr.lines().next().unwrap_or("")
                )),
                _ => {}
            }
        }
    }
    assert!(checked >= 2 * Feature::ALL.len(), "{checked} probes");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Forms ptxsim runs that need nothing beyond its baseline (PTX ISA 4.0, sm_50): ptxas agrees
/// that they assemble there, so leaving them out of the table is right.
#[test]
fn baseline_forms_need_only_ptx_4_0_and_sm_50() {
    for body in [
        "ld.global.nc.v4.u32 {%r3, %r4, %r5, %r6}, [%rd1];\n    ldu.global.u32 %r7, [%rd1];",
        "ld.volatile.global.u32 %r3, [%rd1];\n    st.volatile.global.u32 [%rd1], %r3;",
        "ld.global.cs.u32 %r3, [%rd1];\n    st.global.wt.u32 [%rd1], %r3;\n    ld.u32 %r4, [%rd1];",
        "bar.sync 0;\n    bar.sync 1, 64;\n    membar.gl;\n    membar.sys;",
        "prefetch.global.L2 [%rd1];\n    prefetch.local.L1 [%rd1];",
        "atom.global.add.f32 %f2, [%rd1], %f1;\n    atom.shared.cas.b64 %rd3, [%r1], %rd2, %rd4;",
        "atom.global.min.s64 %rd3, [%rd1], %rd2;\n    red.global.add.u32 [%rd1], 1;\n    atom.inc.u32 %r3, [%rd1], 5;",
        "cvt.rn.f16.f32 %h1, %f1;\n    cvt.f32.f16 %f2, %h1;\n    cvt.rzi.sat.s32.f32 %r3, %f1;",
        "cvt.rni.f16.f16 %h1, %h2;\n    cvt.ftz.sat.f32.f32 %f2, %f1;\n    cvt.rn.f32.s64 %f3, %rd1;",
        "div.rn.f32 %f2, %f1, %f1;\n    sqrt.rn.f64 %fd2, %fd1;\n    rcp.rn.f32 %f3, %f1;",
        "fma.rm.sat.f32 %f2, %f1, %f1, %f1;\n    add.rz.ftz.f32 %f3, %f1, %f1;\n    min.f64 %fd2, %fd1, %fd1;",
        "prmt.b32 %r5, %r1, %r2, 0x3210;\n    bfe.u32 %r6, %r1, 2, 3;\n    bfi.b64 %rd3, %rd1, %rd2, 2, 3;",
        "popc.b32 %r3, %r1;\n    clz.b64 %r4, %rd1;\n    brev.b32 %r5, %r1;",
        "mad.wide.u16 %r3, %h1, %h2, %r4;\n    mul.hi.s64 %rd3, %rd1, %rd2;\n    add.sat.s32 %r5, %r1, %r2;",
        "mov.u64 %rd3, %globaltimer;\n    mov.u32 %r4, %lanemask_lt;\n    mov.u64 %rd4, %clock64;",
        "cvta.shared.u64 %rd3, %rd2;\n    cvta.to.global.u64 %rd4, %rd2;",
    ] {
        let ptx = snippet((4, 0), 50, body);
        common::assert_ptxas_accepts("isa_baseline", &ptx);
        Module::parse(&ptx).unwrap_or_else(|e| panic!("{body}: {e}"));
    }
}

/// The issue that started this table: an e4m3 `mma` under `.version 7.0 .target sm_80` must
/// not parse; kernels/mma_sm89.ptx declares what it needs (8.4, sm_89) and does parse.
#[test]
fn an_fp8_mma_needs_ptx_8_4_and_sm_89() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kernels/mma_sm89.ptx"
    ))
    .expect("kernels/mma_sm89.ptx");
    assert!(text.contains(".version 8.4\n.target sm_89\n"));
    Module::parse(&text).unwrap();
    let downgraded = text.replace(
        ".version 8.4\n.target sm_89\n",
        ".version 7.0\n.target sm_80\n",
    );
    let err = parse_err(&downgraded);
    let msg = err.to_string();
    assert!(matches!(err, Error::Parse { .. }), "{err:?}");
    assert!(
        msg.contains("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
        "{msg}"
    );
    assert!(
        msg.contains("needs .version 8.4 and .target sm_89 or later"),
        "{msg}"
    );
    let line = 1 + text
        .lines()
        .position(|l| l.trim_start().starts_with("mma.sync"))
        .expect("an mma") as u32;
    assert_eq!(err.line(), Some(line), "{msg}");
}

/// The header itself: both directives present, a version ptxsim knows, a target it models,
/// and a version the target allows — each refused with its line, as ptxas refuses them.
#[test]
fn module_headers_are_checked() {
    let body = "    ret;\n}\n";
    let entry = ".visible .entry k()\n{\n";
    // (text, what the error says, its line, whether ptxas refuses it too: ptxas 12.9 refuses
    // sm_35 as well, but an older one would not)
    for (text, needle, line, ptxas_refuses) in [
        (
            format!(".target sm_80\n.address_size 64\n{entry}{body}"),
            "no `.version`",
            1,
            true,
        ),
        (
            format!(".version 7.0\n.address_size 64\n{entry}{body}"),
            "no `.target`",
            1,
            true,
        ),
        (
            format!(".version 7.0\n.target sm_86\n.address_size 64\n{entry}{body}"),
            "needs .version 7.1",
            2,
            true,
        ),
        (
            format!(".version 8.0\n.target sm_35\n.address_size 64\n{entry}{body}"),
            "sm_50 and later",
            2,
            false,
        ),
        (
            format!(".version 7.9\n.target sm_80\n.address_size 64\n{entry}{body}"),
            ".version 7.9",
            1,
            true,
        ),
    ] {
        let err = parse_err(&text);
        assert!(err.to_string().contains(needle), "`{err}` lacks `{needle}`");
        assert_eq!(err.line(), Some(line), "{err}");
        if ptxas_refuses {
            common::assert_ptxas_rejects("isa_header", &text);
        }
    }
    for &(sm, v) in TARGETS {
        Module::parse(&snippet(v, sm, "")).unwrap_or_else(|e| panic!("sm_{sm}: {e}"));
        common::assert_ptxas_accepts(&format!("isa_target_{sm}"), &snippet(v, sm, ""));
        if let Some(pv) = version_before(v) {
            let early = snippet(pv, sm, "");
            assert!(Module::parse(&early).is_err(), "sm_{sm} under {pv:?}");
            common::assert_ptxas_rejects(&format!("isa_target_early_{sm}"), &early);
        }
    }
}

/// Near misses: forms that ptxas refuses whatever the header (a modifier an instruction does
/// not take, a combination the ISA leaves out). ptxsim must refuse each as well, rather than
/// run it with the modifier quietly ignored.
#[test]
fn forms_the_isa_does_not_allow_do_not_parse() {
    for body in [
        // L2 eviction priorities are for 256-bit (.v8.b32 / .v4.b64) accesses only.
        "ld.global.L2::evict_last.u32 %r3, [%rd1];",
        "st.global.L2::evict_first.u32 [%rd1], %r3;",
        // cvt: roundings, .ftz, .sat, .relu and .satfinite where the ISA has none.
        "cvt.rm.tf32.f32 %r3, %f1;",
        "cvt.rna.ftz.tf32.f32 %r3, %f1;",
        "cvt.rna.satfinite.relu.tf32.f32 %r3, %f1;",
        "cvt.rn.relu.f16.f64 %h1, %fd1;",
        "cvt.rn.relu.s32.f32 %r3, %f1;",
        "cvt.rn.relu.sat.f16.f32 %h1, %f1;",
        "cvt.rn.satfinite.f32.f64 %f2, %fd1;",
        "cvt.rn.sat.bf16.f32 %h1, %f1;",
        "cvt.rn.sat.f16x2.f32 %r3, %f1, %f2;",
        "cvt.rn.ftz.f16x2.f32 %r3, %f1, %f2;",
        "cvt.rm.f16x2.f32 %r3, %f1, %f2;",
        "cvt.rn.satfinite.f16x2.e4m3x2 %r3, %h1;",
        "cvt.rn.relu.e4m3x2.f32 %h1, %f1, %f2;",
        "cvt.rz.satfinite.e4m3x2.f32 %h1, %f1, %f2;",
        // .sat on half-precision forms that have none.
        "fma.rn.sat.bf16 %h1, %h2, %h3, %h4;",
        "add.rn.sat.bf16 %h1, %h2, %h3;",
        "min.sat.f16 %h1, %h2, %h3;",
        // mma: .satfinite is for integer accumulators only.
        "mma.sync.aligned.m16n8k32.row.col.satfinite.f32.e4m3.e4m3.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f5, %f6, %f7, %f8};",
    ] {
        let ptx = snippet((8, 8), 90, body);
        common::assert_ptxas_rejects("isa_near_miss", &ptx);
        let err = match Module::parse(&ptx) {
            Ok(_) => panic!("`{body}` parses, but ptxas refuses it"),
            Err(e) => e,
        };
        assert_eq!(err.line(), Some(BODY_LINE), "{body}: {err}");
    }
}
