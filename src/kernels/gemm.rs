//! The GEMM kernels' modules, expanded from their templates: the tensor-core GEMM
//! (`kernels/gemm.ptx.in`, per input type), Hopper's `wgmma` GEMM (`kernels/gemm_wgmma.ptx.in`)
//! and its TMA- and mbarrier-fed twin (`kernels/gemm_tma.ptx.in`, alone and in clusters). The
//! tiles and shapes they are written for are the case catalogue's ([`crate::cases::gemm`]);
//! this module only writes the PTX text.

use crate::cases::gemm::*;
use crate::cases::Precision;

/// The template of the tensor-core GEMM kernels.
pub const TEMPLATE: &str = super::GEMM_TEMPLATE;

/// The module of `precision`'s tensor-core GEMM kernel, expanded from [`TEMPLATE`]: the mma
/// shape, the element size and K tile (the shared-memory layout, 64-byte tile rows, is the same
/// for all), and for tf32 the rounding of every fragment register (`cvt.rna.tf32.f32`) before
/// the mma. The SIMT kernel is a file of its own, no expansion.
pub fn expand(precision: Precision) -> String {
    assert!(
        TENSOR_PRECISIONS.contains(&precision),
        "{precision} is no tensor-core GEMM"
    );
    let bytes = input_bytes(precision);
    let tile_k = gpu_tile_k(precision);
    let (mma, kstep, cvt) = if precision == Precision::Tf32F32 {
        let regs = (0..16)
            .map(|i| format!("%fa{i}"))
            .chain((0..8).map(|i| format!("%fb{i}")));
        let cvt: String = regs
            .map(|r| format!("    cvt.rna.tf32.f32 {r}, {r};\n"))
            .collect();
        ("m16n8k8", "k8", cvt)
    } else {
        ("m16n8k16", "k16", String::new())
    };
    let log2 = |v: u64| v.trailing_zeros().to_string();
    super::expand_template(
        TEMPLATE,
        [
            ("@CVT@", cvt),
            ("@MMA@", mma.to_string()),
            ("@KSTEP@", kstep.to_string()),
            ("@KMASK@", (tile_k - 1).to_string()),
            ("@KSHIFT@", log2(tile_k)),
            ("@KTILE@", tile_k.to_string()),
            ("@CHUNK@", (16 / bytes).to_string()),
            ("@CSHIFT@", log2(16 / bytes)),
            ("@ESHIFT@", log2(bytes)),
            ("@EBYTES@", bytes.to_string()),
            ("@ROWS64@", (64 * bytes).to_string()),
            ("@IN@", input_type(precision).to_string()),
            ("@NAME@", input_type(precision).to_string()),
        ],
    )
}

/// The template of the Hopper GEMM (`kernels/gemm_wgmma.ptx.in`).
pub const WGMMA_TEMPLATE: &str = super::GEMM_WGMMA_TEMPLATE;

/// The Hopper GEMM's module for `precision` (bf16 or f16), expanded from [`WGMMA_TEMPLATE`]:
/// the zeroing of the 128 accumulators, the copies of one K tile (4 rows of A's tile and 8 of
/// B's a thread), the 4 `wgmma` of a K tile and the guarded stores of C are written out here.
pub fn expand_wgmma(precision: Precision) -> String {
    assert!(
        WGMMA_PRECISIONS.contains(&precision),
        "{precision} has no wgmma GEMM"
    );
    let ty = input_type(precision);
    let zero = wgmma_zero();
    // one K tile (index %r30) into stage %r30 % 4: A rows t/8 + 32j (j < 4), B rows (j < 8)
    let mut copy = String::from(
        "    shl.b32 %r40, %r30, 6;\n\
         \x20   add.u32 %r40, %r40, %r22;       // K column of this thread's chunk\n\
         \x20   sub.s32 %r41, %r8, %r40;\n\
         \x20   max.s32 %r41, %r41, 0;\n\
         \x20   min.s32 %r41, %r41, 8;\n\
         \x20   shl.b32 %r41, %r41, 1;          // bytes of the chunk inside K\n\
         \x20   mul.wide.u32 %rd9, %r30, 128;   // the tile's byte offset along K\n\
         \x20   and.b32 %r42, %r30, 3;\n\
         \x20   mul.lo.u32 %r42, %r42, 49152;\n\
         \x20   add.u32 %r42, %r42, %r16;\n\
         \x20   add.u32 %r42, %r42, %r20;       // this thread's chunk in the stage, row j = 0\n",
    );
    for (matrix, rows, left, ptr, stride, base, shared) in [
        ("A", 4, "%r24", "%rd4", "%rd5", "%rd1", 0),
        ("B", 8, "%r26", "%rd6", "%rd7", "%rd2", 16384),
    ] {
        copy.push_str(&format!("    add.u64 %rd10, {ptr}, %rd9;\n"));
        for j in 0..rows {
            if j > 0 {
                copy.push_str(&format!("    add.u64 %rd10, %rd10, {stride};\n"));
            }
            copy.push_str(&format!(
                "    // {matrix} row t/8 + {}\n\
                 \x20   setp.gt.s32 %p3, {left}, {};\n\
                 \x20   selp.b32 %r43, %r41, 0, %p3;\n\
                 \x20   setp.ne.u32 %p4, %r43, 0;\n\
                 \x20   selp.b64 %rd11, %rd10, {base}, %p4;\n\
                 \x20   add.u32 %r44, %r42, {};\n\
                 \x20   cp.async.cg.shared.global [%r44], [%rd11], 16, %r43;\n",
                32 * j,
                32 * j,
                shared + 4096 * j
            ));
        }
    }
    let mmas = wgmma_mmas(precision);
    let store = wgmma_store();
    super::expand_template(
        WGMMA_TEMPLATE,
        [
            ("@ZERO@", zero),
            ("@COPY@", copy),
            ("@MMAS@", mmas),
            ("@STORE@", store),
            ("@DESC@", WGMMA_DESC_BITS.to_string()),
            ("@IN@", ty.to_string()),
            ("@NAME@", ty.to_string()),
        ],
    )
}

/// The zeroing of the 128 accumulators of a Hopper GEMM's warpgroup.
fn wgmma_zero() -> String {
    (0..128)
        .map(|i| format!("    mov.f32 %acc{i}, 0f00000000;\n"))
        .collect()
}

/// The 4 `wgmma.m64n256k16` of one 64-element K tile, from descriptors `%rd16` (A) and `%rd17`
/// (B), 32 bytes further for each step, accumulating under `%p6`.
fn wgmma_mmas(precision: Precision) -> String {
    let ty = input_type(precision);
    // every instruction reads 32 bytes of K: k16 of a 16-bit type, k32 of fp8 (which takes no
    // transpose operands: K-major only)
    let (k, tail) = if input_bytes(precision) == 1 {
        (32, "")
    } else {
        (16, ", 0, 0")
    };
    let acc = (0..128)
        .map(|i| format!("%acc{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut mmas = String::new();
    for s in 0..4 {
        let (a, b) = if s == 0 {
            ("%rd16", "%rd17")
        } else {
            mmas.push_str(&format!(
                "    add.u64 %rd21, %rd16, {0};\n    add.u64 %rd22, %rd17, {0};\n",
                2 * s
            ));
            ("%rd21", "%rd22")
        };
        mmas.push_str(&format!(
            "    wgmma.mma_async.sync.aligned.m64n256k{k}.f32.{ty}.{ty} {{{acc}}}, {a}, {b}, %p6, 1, 1{tail};\n"
        ));
    }
    mmas
}

/// The guarded stores of a warpgroup's 64 × 256 accumulator to C: rows `%r37`, `%r38` (in M
/// while `%p1`, `%p2`), columns from `%r39` (block 0), at `%rd18` and `%rd20`.
fn wgmma_store() -> String {
    let mut store = String::new();
    for b in 0..32 {
        let at = 32 * b;
        store.push_str(&format!(
            "    add.u32 %r45, %r39, {};\n\
             \x20   setp.lt.u32 %p3, %r45, %r7;\n\
             \x20   add.u32 %r46, %r45, 1;\n\
             \x20   setp.lt.u32 %p4, %r46, %r7;\n\
             \x20   and.pred %p5, %p1, %p3;\n\
             \x20   @%p5 st.global.f32 [%rd18+{at}], %acc{};\n\
             \x20   and.pred %p5, %p1, %p4;\n\
             \x20   @%p5 st.global.f32 [%rd18+{}], %acc{};\n\
             \x20   and.pred %p5, %p2, %p3;\n\
             \x20   @%p5 st.global.f32 [%rd20+{at}], %acc{};\n\
             \x20   and.pred %p5, %p2, %p4;\n\
             \x20   @%p5 st.global.f32 [%rd20+{}], %acc{};\n",
            8 * b,
            4 * b,
            at + 4,
            4 * b + 1,
            4 * b + 2,
            at + 4,
            4 * b + 3,
        ));
    }
    store
}

/// The template of Hopper's TMA- and mbarrier-fed GEMM (`kernels/gemm_tma.ptx.in`).
pub const TMA_TEMPLATE: &str = super::GEMM_TMA_TEMPLATE;

/// log2 of [`tma_tile_k`]: the kernel's shift from a K tile's index to its first element.
fn tma_k_shift(precision: Precision) -> u32 {
    tma_tile_k(precision).trailing_zeros()
}

/// The TMA GEMM's module for `precision` (bf16, f16 or e4m3), expanded from [`TMA_TEMPLATE`]:
/// the plain kernel, or (`cluster`) the one in clusters of two CTAs that share B's tile.
pub fn expand_tma(precision: Precision, cluster: bool) -> String {
    assert!(
        TMA_PRECISIONS.contains(&precision),
        "{precision} has no TMA GEMM"
    );
    let ty = input_type(precision);
    // the empty barriers: every consumer thread, or lane 0 of each consumer warp of both CTAs
    let releases = if cluster { 8 * TMA_CLUSTER } else { 256 };
    let init: String = (0..4)
        .map(|s| {
            format!(
                "    mbarrier.init.shared::cta.b64 [%r18+{}], 1;\n    mbarrier.init.shared::cta.b64 [%r18+{}], {releases};\n",
                8 * s,
                32 + 8 * s
            )
        })
        .collect();
    let part = |plain: &str, clustered: &str| if cluster { clustered } else { plain }.to_string();
    super::expand_template(
        TMA_TEMPLATE,
        [
            (
                "@CLUSTER_DIMS@",
                part("", &format!(".reqnctapercluster {TMA_CLUSTER}, 1, 1\n")),
            ),
            ("@TILE@", part(TMA_TILE, TMA_CLUSTER_TILE)),
            ("@SYNC@", part("    bar.sync 0;\n", TMA_CLUSTER_SYNC)),
            ("@LOAD_B@", part(TMA_LOAD_B, TMA_CLUSTER_LOAD_B)),
            ("@CONSUMER@", part("", TMA_CLUSTER_CONSUMER)),
            ("@RELEASE@", part(TMA_RELEASE, TMA_CLUSTER_RELEASE)),
            (
                "@MAPA@",
                part("", "    mapa.shared::cluster.u32 %r42, %r34, %r41;\n"),
            ),
            ("@END@", part("", TMA_CLUSTER_END)),
            (
                "@VARIANT@",
                part("", &format!(", in clusters of {TMA_CLUSTER} CTAs")),
            ),
            ("@INIT@", init),
            ("@ZERO@", wgmma_zero()),
            ("@MMAS@", wgmma_mmas(precision)),
            ("@KSHIFT@", tma_k_shift(precision).to_string()),
            (
                "@KROUND@",
                ((1u32 << tma_k_shift(precision)) - 1).to_string(),
            ),
            ("@STORE@", wgmma_store()),
            ("@DESC@", WGMMA_DESC_BITS.to_string()),
            ("@IN@", ty.to_string()),
            ("@NAME@", tma_name(precision, cluster)),
        ],
    )
}

/// The TMA GEMM's tile: row tile `%r12` and column tile `%r13` from the block index.
const TMA_TILE: &str = "    add.u32 %r11, %r7, 255;
    shr.u32 %r11, %r11, 8;          // tiles along N
    div.u32 %r12, %r5, %r11;        // tile row
    mul.lo.u32 %r13, %r12, %r11;
    sub.u32 %r13, %r5, %r13;        // tile column
";

/// The cluster kernel's: a cluster is a pair of row tiles of one column tile, rank r (`%r43`)
/// the pair's row tile r. First, a launch not in clusters of two stops (`trap`: a device fault
/// the run reports) rather than arrive on, and multicast to, a CTA that is not there: the
/// kernel's `.reqnctapercluster` is what makes a plain launch one of clusters.
const TMA_CLUSTER_TILE: &str = "    mov.u32 %r47, %cluster_nctarank;
    setp.ne.u32 %p0, %r47, 2;
    @%p0 trap;                      // not in clusters of two
    mov.u32 %r43, %cluster_ctarank;
    mov.u32 %r44, %clusterid.x;
    add.u32 %r11, %r6, 255;
    shr.u32 %r11, %r11, 8;          // pairs of row tiles
    div.u32 %r13, %r44, %r11;       // tile column
    mul.lo.u32 %r12, %r13, %r11;
    sub.u32 %r12, %r44, %r12;       // the pair
    shl.b32 %r12, %r12, 1;
    add.u32 %r12, %r12, %r43;       // tile row
    mov.b16 %rs1, 3;                // the multicast: both CTAs
";

/// The barriers made, visible to the whole cluster before any copy completes on them.
const TMA_CLUSTER_SYNC: &str = "    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
";

/// B's tile, into this CTA's stage.
const TMA_LOAD_B: &str = "    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r37], [%rd2, {%r38, %r15}], [%r33];
";

/// This CTA's half of B's tile (128 rows), into both CTAs' stage.
const TMA_CLUSTER_LOAD_B: &str = "    shl.b32 %r44, %r43, 14;
    add.u32 %r44, %r37, %r44;       // the half's place in the stage
    shl.b32 %r45, %r43, 7;
    add.u32 %r45, %r15, %r45;       // its first row of B
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r44], [%rd2, {%r38, %r45}], [%r33], %rs1;
";

/// The consumer's lane 0 (`%p8`) and the other CTA's rank (`%r41`).
const TMA_CLUSTER_CONSUMER: &str = "    and.b32 %r41, %r0, 31;
    setp.eq.u32 %p8, %r41, 0;       // lane 0 releases stages for its warp
    xor.b32 %r41, %r43, 1;          // the other CTA
";

/// The previous stage released (after the first trip): every consumer thread arrives.
const TMA_RELEASE: &str = "    @%p3 mbarrier.arrive.shared::cta.b64 _, [%r40];
";

/// In the cluster kernel lane 0 of each warp arrives on the stage's empty barrier in both CTAs
/// (`%r42`: the other CTA's, from mapa).
const TMA_CLUSTER_RELEASE: &str = "    and.pred %p9, %p3, %p8;
    @%p9 mbarrier.arrive.shared::cta.b64 _, [%r40];
    @%p9 mbarrier.arrive.shared::cluster.b64 _, [%r42];
";

/// No CTA exits while the other may still arrive on its barriers.
const TMA_CLUSTER_END: &str = "    barrier.cluster.arrive.release;
    barrier.cluster.wait.acquire;
";
