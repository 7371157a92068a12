//! Warp and block semantics: `shfl.sync` in every mode (checked against CUDA's
//! `__shfl_*_sync(value, lane, width)` definitions, not the PTX pseudo-code the interpreter
//! implements), `vote`, divergence and reconvergence, barriers and the shared-memory race
//! detector, atomics and reductions, `cp.async` groups, dynamic shared and local memory,
//! and multi-dimensional launches.

mod common;

use ptxsim::{Arg, LaunchConfig, Memory, UniformBranchPolicy};

fn head() -> String {
    common::header("7.0", "sm_80")
}

// ---------------------------------------------------------------------------------------
// shfl.sync

fn shfl_kernel(mode: &str) -> String {
    head()
        + &format!(
            r#".visible .entry shfl(.param .u64 out, .param .u32 b, .param .u32 c)
{{
    .reg .pred %p;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [b];
    ld.param.u32 %r2, [c];
    mov.u32 %r3, %laneid;
    mad.lo.u32 %r4, %r3, 10, 7;
    shfl.sync.{mode}.b32 %r5|%p, %r4, %r1, %r2, -1;
    selp.u32 %r6, 1, 0, %p;
    mul.wide.u32 %rd2, %r3, 8;
    add.u64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {{%r5, %r6}};
    ret;
}}
"#
        )
}

/// CUDA's definition of the source lane for `__shfl_*_sync(v, arg, width)`.
fn cuda_source(mode: &str, lane: u32, arg: u32, width: u32) -> u32 {
    let base = lane / width * width;
    match mode {
        "up" => {
            if lane >= base + arg {
                lane - arg
            } else {
                lane
            }
        }
        "down" => {
            if lane + arg < base + width {
                lane + arg
            } else {
                lane
            }
        }
        "bfly" => {
            let j = lane ^ arg;
            if j < base + width {
                j
            } else {
                lane
            }
        }
        _ => base + arg % width,
    }
}

#[test]
fn shfl_matches_cuda_semantics_in_every_mode_and_width() {
    for mode in ["up", "down", "bfly", "idx"] {
        let module = common::module(&format!("shfl_{mode}"), &shfl_kernel(mode));
        for width in [32u32, 16, 8, 4] {
            for arg in [0u32, 1, 3, 5, 7] {
                if mode == "bfly" && arg >= width {
                    continue;
                }
                // The PTX c operand CUDA uses: segment mask in bits 8..12, clamp in 0..4
                // (clamp is 0 for .up, 31 otherwise).
                let c = ((32 - width) << 8) | if mode == "up" { 0 } else { 0x1f };
                let mut mem = Memory::new();
                let out = mem.alloc(32 * 8);
                module
                    .launch(
                        "shfl",
                        (1, 1, 1),
                        (32, 1, 1),
                        0,
                        &[Arg::Ptr(out), Arg::U32(arg), Arg::U32(c)],
                        &mut mem,
                    )
                    .unwrap();
                let got: Vec<u32> = mem.read(out, 64).unwrap();
                for lane in 0..32u32 {
                    let src = cuda_source(mode, lane, arg, width);
                    assert_eq!(
                        got[2 * lane as usize],
                        src * 10 + 7,
                        "{mode} width {width} arg {arg} lane {lane}"
                    );
                    if mode != "idx" {
                        // The predicate says whether the source lane was in range.
                        let in_range = src != lane || arg == 0;
                        assert_eq!(
                            got[2 * lane as usize + 1] == 1,
                            in_range,
                            "{mode} p, lane {lane}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn shfl_in_diverged_code_with_a_full_mask_is_an_error() {
    let ptx = head()
        + r#".visible .entry k(.param .u64 out)
{
    .reg .pred %p;
    .reg .b32 %r<4>;
    mov.u32 %r1, %laneid;
    setp.lt.u32 %p, %r1, 16;
    @!%p bra skip;
    shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
skip:
    ret;
}
"#;
    let module = common::module("shfl_diverged", &ptx);
    let mut mem = Memory::new();
    let out = mem.alloc(4);
    let err = module
        .launch("k", (1, 1, 1), (32, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap_err();
    assert!(err.to_string().contains("membermask"), "{err}");
    assert_eq!(err.line(), Some(11));
    // With the matching partial mask it is legal.
    let fixed = module_text_replace(&ptx, "31, -1;", "31, 0xffff;");
    let module = common::module("shfl_partial_mask", &fixed);
    module
        .launch("k", (1, 1, 1), (32, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
}

fn module_text_replace(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from));
    text.replace(from, to)
}

#[test]
fn vote_and_ballot() {
    let ptx = head()
        + r#".visible .entry k(.param .u64 out)
{
    .reg .pred %p<6>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %laneid;
    rem.u32 %r2, %r1, 3;
    setp.eq.u32 %p1, %r2, 0;
    vote.sync.ballot.b32 %r3, %p1, -1;
    vote.sync.any.pred %p2, %p1, -1;
    vote.sync.all.pred %p3, %p1, -1;
    vote.sync.uni.pred %p4, %p1, -1;
    setp.lt.u32 %p5, %r1, 100;
    vote.sync.all.pred %p5, %p5, -1;
    selp.u32 %r4, 1, 0, %p2;
    selp.u32 %r5, 2, 0, %p3;
    selp.u32 %r6, 4, 0, %p4;
    selp.u32 %r7, 8, 0, %p5;
    or.b32 %r4, %r4, %r5;
    or.b32 %r4, %r4, %r6;
    or.b32 %r4, %r4, %r7;
    mul.wide.u32 %rd2, %r1, 8;
    add.u64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r3, %r4};
    ret;
}
"#;
    let module = common::module("vote", &ptx);
    let mut mem = Memory::new();
    let out = mem.alloc(32 * 8);
    module
        .launch("k", (1, 1, 1), (32, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
    let got: Vec<u32> = mem.read(out, 64).unwrap();
    let ballot: u32 = (0..32).filter(|l| l % 3 == 0).map(|l| 1u32 << l).sum();
    for lane in 0..32 {
        assert_eq!(got[2 * lane], ballot);
        assert_eq!(
            got[2 * lane + 1],
            1 | 8,
            "any, not all, not uniform, all(true)"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Divergence.

#[test]
fn warps_reconverge_after_if_else_and_uneven_loops() {
    // Odd and even lanes take different paths, then every lane loops `lane` times; a shfl
    // with a full mask afterwards needs all 32 lanes back together.
    let ptx = head()
        + r#".visible .entry k(.param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %laneid;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 1;
    @%p1 bra odd;
    mul.lo.u32 %r3, %r1, 3;
    bra joined;
odd:
    mul.lo.u32 %r3, %r1, 2;
joined:
    mov.u32 %r4, 0;
    mov.u32 %r5, 0;
loop:
    setp.ge.u32 %p2, %r4, %r1;
    @%p2 bra done;
    add.u32 %r5, %r5, %r4;
    add.u32 %r4, %r4, 1;
    bra loop;
done:
    add.u32 %r6, %r3, %r5;
    shfl.sync.bfly.b32 %r7, %r6, 1, 31, -1;
    mul.wide.u32 %rd2, %r1, 8;
    add.u64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r6, %r7};
    ret;
}
"#;
    let module = common::module("reconverge", &ptx);
    let mut mem = Memory::new();
    let out = mem.alloc(32 * 8);
    module
        .launch("k", (1, 1, 1), (32, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
    let got: Vec<u32> = mem.read(out, 64).unwrap();
    let value = |l: u32| if l % 2 == 1 { 2 * l } else { 3 * l } + l * l.saturating_sub(1) / 2;
    for l in 0..32u32 {
        assert_eq!(got[2 * l as usize], value(l), "lane {l}");
        assert_eq!(got[2 * l as usize + 1], value(l ^ 1), "lane {l} partner");
    }
}

#[test]
fn divergent_bra_uni_is_denied_or_recorded() {
    let ptx = head()
        + r#".visible .entry k(.param .u64 out)
{
    .reg .pred %p;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %laneid;
    setp.lt.u32 %p, %r1, 5;
    @%p bra.uni skip;
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
skip:
    ret;
}
"#;
    let module = common::module("bra_uni", &ptx);
    let mut mem = Memory::new();
    let out = mem.alloc(32 * 4);
    let err = module
        .launch("k", (1, 1, 1), (32, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap_err();
    assert!(err.to_string().contains("divergent `bra.uni`"), "{err}");
    assert_eq!(err.line(), Some(12));
    let mut config = LaunchConfig::new((1, 1, 1), (32, 1, 1), 0);
    config.uniform_branches = UniformBranchPolicy::Record;
    let stats = module
        .launch_with("k", &config, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
    assert_eq!(stats.divergent_uniform_branches, vec![12]);
    let got: Vec<u32> = mem.read(out, 32).unwrap();
    for l in 0..32u32 {
        assert_eq!(got[l as usize], if l < 5 { u32::MAX } else { l });
    }
}

// ---------------------------------------------------------------------------------------
// Barriers and the race detector.

fn exchange_kernel(with_barrier: bool) -> String {
    head()
        + &format!(
            r#".visible .entry k(.param .u64 out)
{{
    .reg .b32 %r<10>;
    .reg .b64 %rd<4>;
    .shared .align 4 .u32 buf[128];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    mul.lo.u32 %r5, %r1, 2;
    st.shared.u32 [%r4], %r5;
    {bar}
    add.u32 %r6, %r1, 37;
    and.b32 %r6, %r6, 127;
    shl.b32 %r7, %r6, 2;
    add.u32 %r7, %r2, %r7;
    ld.shared.u32 %r8, [%r7];
    mov.u32 %r9, %ctaid.x;
    mad.lo.u32 %r9, %r9, 128, %r1;
    mul.wide.u32 %rd2, %r9, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r8;
    ret;
}}
"#,
            bar = if with_barrier { "bar.sync 0;" } else { "" }
        )
}

#[test]
fn barrier_orders_shared_memory_between_warps() {
    let module = common::module("exchange", &exchange_kernel(true));
    let mut mem = Memory::new();
    let out = mem.alloc(2 * 128 * 4);
    module
        .launch("k", (2, 1, 1), (128, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
    let got: Vec<u32> = mem.read(out, 256).unwrap();
    for t in 0..256u32 {
        assert_eq!(got[t as usize], ((t % 128 + 37) % 128) * 2);
    }
}

#[test]
fn missing_barrier_is_a_race_naming_both_lines() {
    let module = common::module("exchange_race", &exchange_kernel(false));
    let mut mem = Memory::new();
    let out = mem.alloc(128 * 4);
    let err = module
        .launch("k", (1, 1, 1), (128, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("shared-memory race"), "{msg}");
    assert!(msg.contains("line 21") || msg.contains("line 15"), "{msg}");
}

#[test]
fn threads_that_exit_early_do_not_block_a_barrier_but_a_short_named_barrier_deadlocks() {
    let ptx = head()
        + r#".visible .entry k(.param .u64 out, .param .u32 count)
{
    .reg .pred %p;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r3, [count];
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p, %r1, 64;
    @%p bra done;
    bar.sync 1, %r3;
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
done:
    ret;
}
"#;
    let module = common::module("early_exit", &ptx);
    let mut mem = Memory::new();
    let out = mem.alloc(128 * 4);
    module
        .launch(
            "k",
            (1, 1, 1),
            (128, 1, 1),
            0,
            &[Arg::Ptr(out), Arg::U32(64)],
            &mut mem,
        )
        .unwrap();
    let err = module
        .launch(
            "k",
            (1, 1, 1),
            (128, 1, 1),
            0,
            &[Arg::Ptr(out), Arg::U32(96)],
            &mut mem,
        )
        .unwrap_err();
    assert!(err.to_string().contains("deadlock"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Atomics.

#[test]
fn atomics_and_reductions_on_global_and_shared_memory() {
    let ptx = head()
        + r#".visible .entry k(.param .u64 g)
{
    .reg .pred %p<3>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<4>;
    .shared .align 4 .u32 count;
    ld.param.u64 %rd1, [g];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, count;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 st.shared.u32 [%r2], 0;
    bar.sync 0;
    // g: [0] u32 counter, [8] u64 counter, [16] f32 sum, [20] f32 red sum, [24] s32 max,
    //    [28] u32 inc wrap, [32] u32 cas counter, [36] b32 or, [40] u32 exch.
    atom.global.add.u32 %r3, [%rd1], 1;
    cvt.u64.u32 %rd2, %r1;
    atom.global.add.u64 %rd3, [%rd1+8], %rd2;
    mov.f32 %f1, 0f3F800000;
    atom.global.add.f32 %f2, [%rd1+16], %f1;
    red.global.add.f32 [%rd1+20], %f1;
    sub.u32 %r4, %r1, 100;
    atom.global.max.s32 %r5, [%rd1+24], %r4;
    atom.global.inc.u32 %r6, [%rd1+28], 9;
    // Lock-free increment with a CAS loop: lanes retry until their exchange succeeds.
cas_loop:
    // A strong load: a plain one racing the other threads' atomics is a data race.
    ld.relaxed.gpu.global.u32 %r7, [%rd1+32];
    add.u32 %r8, %r7, 1;
    atom.global.cas.b32 %r9, [%rd1+32], %r7, %r8;
    setp.ne.u32 %p2, %r9, %r7;
    @%p2 bra cas_loop;
    and.b32 %r10, %r1, 31;
    mov.u32 %r11, 1;
    shl.b32 %r11, %r11, %r10;
    atom.global.or.b32 %r12, [%rd1+36], %r11;
    atom.global.exch.b32 %r13, [%rd1+40], %r1;
    atom.shared.add.u32 %r14, [%r2], 2;
    bar.sync 0;
    @!%p1 bra done;
    ld.shared.u32 %r15, [%r2];
    st.global.u32 [%rd1+44], %r15;
done:
    ret;
}
"#;
    let module = common::module("atomics", &ptx);
    let mut mem = Memory::new();
    let mut init = vec![0u32; 12];
    init[6] = (-1000i32) as u32;
    let g = mem.alloc_from(&init);
    module
        .launch("k", (1, 1, 1), (96, 1, 1), 0, &[Arg::Ptr(g)], &mut mem)
        .unwrap();
    let w: Vec<u32> = mem.read(g, 12).unwrap();
    assert_eq!(w[0], 96);
    assert_eq!(w[2] as u64 | (w[3] as u64) << 32, (0..96u64).sum::<u64>());
    assert_eq!(f32::from_bits(w[4]), 96.0);
    assert_eq!(f32::from_bits(w[5]), 96.0);
    assert_eq!(w[6] as i32, 95 - 100);
    assert_eq!(w[7], 96 % 10, "inc wraps to 0 after 9");
    assert_eq!(w[8], 96, "every CAS-loop increment landed");
    assert_eq!(w[9], u32::MAX);
    assert!(w[10] < 96);
    assert_eq!(w[11], 192);
}

// ---------------------------------------------------------------------------------------
// cp.async

#[test]
fn cp_async_lands_only_when_its_group_is_waited_for() {
    // ignore-src needs PTX 7.5.
    let ptx = common::header("7.5", "sm_80")
        + r#".visible .entry k(.param .u64 src, .param .u64 out, .param .u32 srcsize)
{
    .reg .pred %p;
    .reg .b32 %r<20>;
    .reg .b64 %rd<4>;
    .shared .align 16 .b8 buf[64];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [srcsize];
    mov.u32 %r2, buf;
    // Group 0: 16 bytes to buf[0..16) and 8 bytes (.ca) to buf[16..24).
    cp.async.cg.shared.global [%r2], [%rd1], 16;
    cp.async.ca.shared.global [%r2+16], [%rd1+16], 8;
    cp.async.commit_group;
    // Group 1: 16 bytes to buf[32..48), only srcsize of them read, the rest zero-filled.
    cp.async.cg.shared.global [%r2+32], [%rd1+32], 16, %r1;
    cp.async.commit_group;
    // Group 2 (uncommitted until wait_all): 4 bytes to buf[48..52) with ignore-src set.
    setp.eq.u32 %p, %r1, %r1;
    cp.async.ca.shared.global [%r2+48], [%rd1+48], 4, %p;
    cp.async.wait_group 1;
    ld.shared.v4.u32 {%r3, %r4, %r5, %r6}, [%r2];
    ld.shared.v2.u32 {%r7, %r8}, [%r2+16];
    ld.shared.v4.u32 {%r9, %r10, %r11, %r12}, [%r2+32];
    st.global.v4.u32 [%rd2], {%r3, %r4, %r5, %r6};
    st.global.v2.u32 [%rd2+16], {%r7, %r8};
    st.global.v4.u32 [%rd2+32], {%r9, %r10, %r11, %r12};
    cp.async.wait_all;
    ld.shared.v4.u32 {%r9, %r10, %r11, %r12}, [%r2+32];
    ld.shared.u32 %r13, [%r2+48];
    st.global.v4.u32 [%rd2+48], {%r9, %r10, %r11, %r12};
    st.global.u32 [%rd2+64], %r13;
    ret;
}
"#;
    let module = common::module("cp_async", &ptx);
    let mut mem = Memory::new();
    let data: Vec<u32> = (1..=16).collect();
    let src = mem.alloc_from(&data);
    let out = mem.alloc(68);
    module
        .launch(
            "k",
            (1, 1, 1),
            (1, 1, 1),
            0,
            &[Arg::Ptr(src), Arg::Ptr(out), Arg::U32(4)],
            &mut mem,
        )
        .unwrap();
    let got: Vec<u32> = mem.read(out, 17).unwrap();
    let p = u32::MAX; // shared-memory poison
    assert_eq!(
        &got[0..6],
        &[1, 2, 3, 4, 5, 6],
        "group 0 landed at wait_group 1"
    );
    assert_eq!(
        &got[8..12],
        &[p, p, p, p],
        "group 1 still in flight at wait_group 1"
    );
    assert_eq!(
        &got[12..16],
        &[9, 0, 0, 0],
        "src-size 4: one word copied, the rest zero-filled"
    );
    assert_eq!(got[16], 0, "ignore-src: zero-filled");
}

#[test]
fn cp_async_source_must_be_in_bounds_and_aligned() {
    let ptx = head()
        + r#".visible .entry k(.param .u64 src)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .shared .align 16 .b8 buf[32];
    ld.param.u64 %rd1, [src];
    mov.u32 %r1, buf;
    cp.async.cg.shared.global [%r1], [%rd1], 16;
    cp.async.wait_all;
    ret;
}
"#;
    let module = common::module("cp_async_oob", &ptx);
    let mut mem = Memory::new();
    let small = mem.alloc(12);
    let err = module
        .launch("k", (1, 1, 1), (1, 1, 1), 0, &[Arg::Ptr(small)], &mut mem)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("out-of-bounds global access of 16 bytes"),
        "{err}"
    );
    let big = mem.alloc(64);
    let err = module
        .launch(
            "k",
            (1, 1, 1),
            (1, 1, 1),
            0,
            &[Arg::Ptr(big.byte_add(8))],
            &mut mem,
        )
        .unwrap_err();
    assert!(err.to_string().contains("misaligned"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Memory spaces and launch geometry.

#[test]
fn dynamic_shared_memory_follows_static_and_is_bounds_checked() {
    let ptx = head()
        + r#".extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .shared .align 4 .u32 fixed[3];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, dyn;
    mov.u32 %r7, fixed;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    st.shared.u32 [%r4], %r1;
    bar.sync 0;
    // Read the neighbour's slot through a generic address.
    xor.b32 %r5, %r3, 4;
    add.u32 %r5, %r2, %r5;
    cvt.u64.u32 %rd2, %r5;
    cvta.shared.u64 %rd3, %rd2;
    ld.u32 %r6, [%rd3];
    mul.wide.u32 %rd4, %r1, 8;
    add.u64 %rd5, %rd1, %rd4;
    st.global.v2.u32 [%rd5], {%r6, %r2};
    ret;
}
"#;
    let module = common::module("dynamic_shared", &ptx);
    let mut mem = Memory::new();
    let out = mem.alloc(64 * 8);
    module
        .launch("k", (1, 1, 1), (64, 1, 1), 256, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
    let got: Vec<u32> = mem.read(out, 128).unwrap();
    for t in 0..64u32 {
        assert_eq!(got[2 * t as usize], t ^ 1);
        assert_eq!(
            got[2 * t as usize + 1],
            16,
            "dynamic region starts after the 12 static bytes, 16-aligned"
        );
    }
    let err = module
        .launch("k", (1, 1, 1), (64, 1, 1), 128, &[Arg::Ptr(out)], &mut mem)
        .unwrap_err();
    assert!(
        err.to_string().contains("out-of-bounds shared access"),
        "{err}"
    );
}

#[test]
fn local_memory_is_private_per_thread() {
    let ptx = head()
        + r#".visible .entry k(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .local .align 8 .b8 scratch[16];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u64 %rd2, scratch;
    st.local.u32 [%rd2+4], %r1;
    mul.lo.u32 %r2, %r1, 3;
    st.local.u32 [scratch+8], %r2;
    bar.sync 0;
    cvta.local.u64 %rd3, %rd2;
    ld.u32 %r3, [%rd3+4];
    ld.local.u32 %r4, [%rd2+8];
    add.u32 %r5, %r3, %r4;
    mul.wide.u32 %rd4, %r1, 4;
    add.u64 %rd5, %rd1, %rd4;
    st.global.u32 [%rd5], %r5;
    ret;
}
"#;
    let module = common::module("local", &ptx);
    let mut mem = Memory::new();
    let out = mem.alloc(64 * 4);
    module
        .launch("k", (1, 1, 1), (64, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
    let got: Vec<u32> = mem.read(out, 64).unwrap();
    for t in 0..64u32 {
        assert_eq!(got[t as usize], 4 * t);
    }
}

#[test]
fn three_dimensional_grids_and_blocks_see_the_right_special_registers() {
    let ptx = head()
        + r#".visible .entry k(.param .u64 out)
{
    .reg .b32 %r<24>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    mov.u32 %r3, %tid.z;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %ntid.y;
    mov.u32 %r6, %ctaid.x;
    mov.u32 %r7, %ctaid.y;
    mov.u32 %r8, %nctaid.x;
    mov.u32 %r9, %laneid;
    mov.u32 %r10, %warpid;
    // linear thread in block, linear block, global index
    mad.lo.u32 %r11, %r3, %r5, %r2;
    mad.lo.u32 %r11, %r11, %r4, %r1;
    mad.lo.u32 %r12, %r7, %r8, %r6;
    mul.lo.u32 %r13, %r4, %r5;
    mov.u32 %r14, %ntid.z;
    mul.lo.u32 %r13, %r13, %r14;
    mad.lo.u32 %r15, %r12, %r13, %r11;
    // packed: tid.x | tid.y<<4 | tid.z<<8 | ctaid.x<<12 | ctaid.y<<16 | lane<<20 | warp<<26
    shl.b32 %r2, %r2, 4;
    shl.b32 %r3, %r3, 8;
    shl.b32 %r6, %r6, 12;
    shl.b32 %r7, %r7, 16;
    shl.b32 %r9, %r9, 20;
    shl.b32 %r10, %r10, 26;
    or.b32 %r16, %r1, %r2;
    or.b32 %r16, %r16, %r3;
    or.b32 %r16, %r16, %r6;
    or.b32 %r16, %r16, %r7;
    or.b32 %r16, %r16, %r9;
    or.b32 %r16, %r16, %r10;
    mul.wide.u32 %rd2, %r15, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r16;
    ret;
}
"#;
    let module = common::module("dims", &ptx);
    let mut mem = Memory::new();
    let (bx, by, bz) = (5u32, 3u32, 4u32);
    let (gx, gy) = (2u32, 3u32);
    let total = (bx * by * bz * gx * gy) as usize;
    let out = mem.alloc(total * 4);
    module
        .launch(
            "k",
            (gx, gy, 1),
            (bx, by, bz),
            0,
            &[Arg::Ptr(out)],
            &mut mem,
        )
        .unwrap();
    let got: Vec<u32> = mem.read(out, total).unwrap();
    for cy in 0..gy {
        for cx in 0..gx {
            for z in 0..bz {
                for y in 0..by {
                    for x in 0..bx {
                        let lin = (z * by + y) * bx + x;
                        let block = cy * gx + cx;
                        let g = block * bx * by * bz + lin;
                        let want = x
                            | y << 4
                            | z << 8
                            | cx << 12
                            | cy << 16
                            | (lin % 32) << 20
                            | (lin / 32) << 26;
                        assert_eq!(
                            got[g as usize], want,
                            "block ({cx},{cy}) thread ({x},{y},{z})"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn aligned_barrier_in_a_diverged_warp_is_an_error_unaligned_is_not() {
    let kernel = |bar: &str| {
        head()
            + &format!(
                r#".visible .entry k(.param .u64 out)
{{
    .reg .pred %p;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p, %r2, 1;
    @%p bra odd;
    {bar}
    bra joined;
odd:
    {bar}
joined:
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}}
"#
            )
    };
    let mut mem = Memory::new();
    let out = mem.alloc(64 * 4);
    let aligned = common::module("bar_aligned_diverged", &kernel("bar.sync 0;"));
    let err = aligned
        .launch("k", (1, 1, 1), (64, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap_err();
    assert!(err.to_string().contains("`.aligned`"), "{err}");
    let unaligned = common::module("barrier_unaligned_diverged", &kernel("barrier.sync 0;"));
    unaligned
        .launch("k", (1, 1, 1), (64, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
    assert_eq!(
        mem.read::<u32>(out, 64).unwrap(),
        (0..64).collect::<Vec<u32>>()
    );
}

#[test]
fn cache_hints_and_memory_order_qualifiers_behave_as_plain_accesses() {
    let ptx = common::header("7.8", "sm_80")
        + r#".visible .entry k(.param .u64 src, .param .u64 dst)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    createpolicy.fractional.L2::evict_last.b64 %rd9, 1.0;
    prefetch.global.L2 [%rd1];
    ld.global.L2::cache_hint.v4.u32 {%r0, %r1, %r2, %r3}, [%rd1], %rd9;
    ld.global.nc.L1::no_allocate.v4.u32 {%r4, %r5, %r6, %r7}, [%rd1+16];
    ld.global.cg.L2::256B.v2.u32 {%r8, %r9}, [%rd1+32];
    ld.global.cs.u32 %r10, [%rd1+40];
    ld.global.lu.u32 %r11, [%rd1+44];
    ld.relaxed.gpu.global.u32 %r12, [%rd1+48];
    ld.acquire.gpu.global.u32 %r13, [%rd1+52];
    ld.volatile.global.u32 %r14, [%rd1+56];
    ld.global.L1::evict_last.u32 %r15, [%rd1+60];
    st.global.cs.v4.u32 [%rd2], {%r0, %r1, %r2, %r3};
    st.global.wt.v4.u32 [%rd2+16], {%r4, %r5, %r6, %r7};
    st.global.L2::cache_hint.v2.u32 [%rd2+32], {%r8, %r9}, %rd9;
    st.global.cg.u32 [%rd2+40], %r10;
    st.global.wb.u32 [%rd2+44], %r11;
    st.relaxed.gpu.global.u32 [%rd2+48], %r12;
    st.release.gpu.global.u32 [%rd2+52], %r13;
    st.volatile.global.u32 [%rd2+56], %r14;
    st.global.L1::no_allocate.u32 [%rd2+60], %r15;
    fence.acq_rel.gpu;
    membar.gl;
    ret;
}
"#;
    let module = common::module("cache_hints", &ptx);
    let mut mem = Memory::new();
    let data: Vec<u32> = (100..116).collect();
    let src = mem.alloc_from(&data);
    let dst = mem.alloc(64);
    module
        .launch(
            "k",
            (1, 1, 1),
            (1, 1, 1),
            0,
            &[Arg::Ptr(src), Arg::Ptr(dst)],
            &mut mem,
        )
        .unwrap();
    assert_eq!(mem.read::<u32>(dst, 16).unwrap(), data);
}

/// `bar.sync` is `barrier.sync.aligned`: every thread of the block that takes part must wait
/// at the same barrier instruction, and under a guard the guard must agree (PTX ISA,
/// "barrier": "all threads in CTA will execute the same barrier instruction. In conditionally
/// executed code, an aligned barrier instruction should only be used if it is known that all
/// threads in CTA evaluate the condition identically"). The non-aligned `barrier.sync` lets
/// warps meet at different instructions.
fn two_barriers_kernel(bar: &str) -> String {
    head()
        + &format!(
            r#".visible .entry k(.param .u64 out)
{{
    .reg .pred %p;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p, %r1, 32;
    @%p bra first_warp;
    {bar}
    bra joined;
first_warp:
    {bar}
joined:
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}}
"#
        )
}

#[test]
fn warps_at_different_aligned_barrier_instructions_are_an_error() {
    let mut mem = Memory::new();
    let out = mem.alloc(64 * 4);
    let aligned = common::module("bar_two_sites", &two_barriers_kernel("bar.sync 0;"));
    let err = aligned
        .launch("k", (1, 1, 1), (64, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("different barrier instructions"), "{msg}");
    assert!(
        msg.contains("lines 16 and 13") || msg.contains("lines 13 and 16"),
        "{msg}"
    );
    // barrier.sync (not .aligned) allows it.
    let unaligned = common::module("barrier_two_sites", &two_barriers_kernel("barrier.sync 0;"));
    unaligned
        .launch("k", (1, 1, 1), (64, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
    assert_eq!(
        mem.read::<u32>(out, 64).unwrap(),
        (0..64).collect::<Vec<u32>>()
    );
}

fn guarded_barrier_kernel(guard: &str, bar: &str) -> String {
    head()
        + &format!(
            r#".visible .entry k(.param .u64 out)
{{
    .reg .pred %p;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    {guard}
    @%p {bar}
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}}
"#
        )
}

#[test]
fn an_aligned_barrier_under_a_divergent_guard_is_an_error() {
    let mut mem = Memory::new();
    let out = mem.alloc(64 * 4);
    // The guard's lines start at line 11; the barrier follows them.
    let bar_line = |guard: &str| 12 + guard.matches('\n').count() as u32;
    let run = |name: &str, guard: &str, bar: &str, mem: &mut Memory| {
        common::module(name, &guarded_barrier_kernel(guard, bar)).launch(
            "k",
            (1, 1, 1),
            (64, 1, 1),
            0,
            &[Arg::Ptr(out)],
            mem,
        )
    };
    // Lanes of one warp disagree.
    let lanes = "mov.u32 %r2, %laneid;\n    setp.lt.u32 %p, %r2, 16;";
    let err = run("bar_lane_guard", lanes, "bar.sync 0;", &mut mem).unwrap_err();
    assert!(err.to_string().contains("lane-divergent guard"), "{err}");
    assert_eq!(err.line(), Some(bar_line(lanes)), "{err}");
    // Whole warps disagree: warp 0 waits for every thread, warp 1 skips the barrier and exits.
    let warps = "setp.lt.u32 %p, %r1, 32;";
    let err = run("bar_warp_guard", warps, "bar.sync 0;", &mut mem).unwrap_err();
    assert!(err.to_string().contains("skipped"), "{err}");
    assert_eq!(err.line(), Some(bar_line(warps)), "{err}");
    // A guard every thread agrees on is fine, whichever way it goes.
    let all_false = "mov.u32 %r2, %ntid.x;\n    setp.lt.u32 %p, %r2, 16;";
    let all_true = "mov.u32 %r2, %nctaid.x;\n    setp.lt.u32 %p, %r2, 16;";
    run("bar_uniform_false", all_false, "bar.sync 0;", &mut mem).unwrap();
    run("bar_uniform_true", all_true, "bar.sync 0;", &mut mem).unwrap();
    // A named barrier with a thread count is for the warps that take it: warp 0 alone.
    run("bar_named_subset", warps, "bar.sync 1, 32;", &mut mem).unwrap();
    assert_eq!(
        mem.read::<u32>(out, 64).unwrap(),
        (0..64).collect::<Vec<u32>>()
    );
}
