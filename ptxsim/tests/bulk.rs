//! Hopper's asynchronous copies: mbarrier phases and transaction counts, `cp.async.bulk` and
//! TMA tile loads (`cp.async.bulk.tensor.2d`) through ptxsim's own tensor-map encoding, and
//! their hazards as errors, each next to a clean twin.

mod common;

use ptxsim::{Arg, LaunchConfig, Memory, Module, Schedule, Swizzle, TensorMap};

const HEADER: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

/// A 128-thread pipeline: thread 0 fills 2 stages of 512 bytes with bulk copies (full
/// barriers, expect_tx), every thread waits on the stage's parity, reads its float, arrives on
/// the stage's empty barrier, and writes twice the value; `rounds` rounds.
fn pipeline(consume_wait: &str, producer_extra: &str) -> String {
    format!(
        r#"{HEADER}
.visible .entry pipe(.param .u64 src, .param .u64 dst, .param .u32 rounds)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<4>;
    .shared .align 128 .b8 stage[1024];
    .shared .align 8 .b64 full[2];
    .shared .align 8 .b64 empty[2];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.u32 %r1, [rounds];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, full;
    mov.u32 %r4, empty;
    mov.u32 %r5, stage;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra init_done;
    mbarrier.init.shared::cta.b64 [%r3], 1;
    mbarrier.init.shared::cta.b64 [%r3+8], 1;
    mbarrier.init.shared::cta.b64 [%r4], 128;
    mbarrier.init.shared::cta.b64 [%r4+8], 128;
    fence.mbarrier_init.release.cluster;
init_done:
    bar.sync 0;
    mov.u32 %r6, 0;
loop:
    and.b32 %r7, %r6, 1;
    shr.u32 %r8, %r6, 1;
    and.b32 %r8, %r8, 1;
    shl.b32 %r9, %r7, 3;
    add.u32 %r10, %r3, %r9;
    add.u32 %r11, %r4, %r9;
    shl.b32 %r12, %r7, 9;
    add.u32 %r12, %r5, %r12;
    @%p1 bra consume;
    setp.lt.u32 %p2, %r6, 2;
    @%p2 bra issue;
    xor.b32 %r13, %r8, 1;
wait_empty:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r11], %r13;
    @!%p3 bra wait_empty;
issue:
    mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%r10], 512;
    mul.wide.u32 %rd3, %r6, 512;
    add.u64 %rd4, %rd1, %rd3;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r12], [%rd4], 512, [%r10];
    {producer_extra}
consume:
{consume_wait}
    shl.b32 %r14, %r2, 2;
    add.u32 %r15, %r12, %r14;
    ld.shared.f32 %f1, [%r15];
    mbarrier.arrive.release.cta.shared::cta.b64 _, [%r11];
    add.f32 %f1, %f1, %f1;
    mad.lo.u32 %r16, %r6, 128, %r2;
    mul.wide.u32 %rd5, %r16, 4;
    add.u64 %rd6, %rd2, %rd5;
    st.global.f32 [%rd6], %f1;
    add.u32 %r6, %r6, 1;
    setp.lt.u32 %p2, %r6, %r1;
    @%p2 bra loop;
    ret;
}}
"#
    )
}

const WAIT_FULL: &str = "wait_full:
    mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p3, [%r10], %r8;
    @!%p3 bra wait_full;";

fn run_pipeline(m: &Module, rounds: u32, schedule: Schedule) -> Result<Vec<f32>, ptxsim::Error> {
    let mut mem = Memory::new();
    let n = rounds as usize * 128;
    let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let src = mem.alloc_from(&data);
    let dst = mem.alloc(n * 4);
    let mut cfg = LaunchConfig::new((1, 1, 1), (128, 1, 1), 0);
    cfg.schedule = schedule;
    m.launch_with(
        "pipe",
        &cfg,
        &[Arg::Ptr(src), Arg::Ptr(dst), Arg::U32(rounds)],
        &mut mem,
    )?;
    let out = mem.read::<f32>(dst, n)?;
    for (i, (o, d)) in out.iter().zip(&data).enumerate() {
        assert_eq!(*o, 2.0 * d, "element {i}");
    }
    Ok(out)
}

fn err_of(r: Result<impl std::fmt::Debug, ptxsim::Error>) -> String {
    match r {
        Ok(v) => panic!("ran, but must fail: {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_two_stage_mbarrier_pipeline_copies_a_buffer_under_every_schedule() {
    let m = common::module("bulk_pipe", &pipeline(WAIT_FULL, ""));
    let first = run_pipeline(&m, 7, Schedule::InOrder).unwrap();
    for seed in 1..6 {
        let again = run_pipeline(&m, 7, Schedule::Shuffled { seed }).unwrap();
        assert_eq!(first, again, "seed {seed}");
    }
}

#[test]
fn reading_a_stage_before_waiting_for_it_is_an_error() {
    let m = common::module("bulk_pipe_nowait", &pipeline("", ""));
    let e = err_of(run_pipeline(&m, 4, Schedule::InOrder));
    assert!(
        e.contains("read of shared bytes a bulk copy is still writing"),
        "{e}"
    );
}

#[test]
fn writing_bytes_a_bulk_copy_is_filling_is_an_error() {
    let m = common::module(
        "bulk_pipe_write",
        &pipeline(WAIT_FULL, "st.shared.u32 [%r12], %r2;"),
    );
    let e = err_of(run_pipeline(&m, 2, Schedule::InOrder));
    assert!(
        e.contains("write to shared bytes a bulk copy is in flight to"),
        "{e}"
    );
}

#[test]
fn a_phase_that_never_completes_is_a_deadlock_not_a_hang() {
    // expect_tx announces 16 bytes more than the copy brings.
    let text = pipeline(WAIT_FULL, "").replace(
        "expect_tx.release.cta.shared::cta.b64 _, [%r10], 512;",
        "expect_tx.release.cta.shared::cta.b64 _, [%r10], 528;",
    );
    let m = common::module("bulk_pipe_deadlock", &text);
    for schedule in [Schedule::InOrder, Schedule::Shuffled { seed: 3 }] {
        let e = err_of(run_pipeline(&m, 2, schedule));
        assert!(e.contains("deadlock"), "{e}");
        assert!(e.contains("tx-count 16"), "{e}");
    }
}

/// One-barrier kernels of 64 threads: thread 0 runs `t0`, then every thread runs `all`.
fn small(t0: &str, all: &str) -> String {
    format!(
        r#"{HEADER}
.visible .entry small(.param .u64 src, .param .u64 dst)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .shared .align 128 .b8 buf[512];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    mov.u32 %r1, bar;
    mov.u32 %r2, buf;
    mov.u32 %r3, %tid.x;
    setp.ne.u32 %p1, %r3, 0;
    @%p1 bra rest;
    {t0}
rest:
    {all}
    ret;
}}
"#
    )
}

fn run_small(text: &str, name: &str) -> Result<(), ptxsim::Error> {
    let m = common::module(name, text);
    let mut mem = Memory::new();
    let src = mem.alloc_from(&(0..128u32).collect::<Vec<_>>());
    let dst = mem.alloc(512);
    m.launch(
        "small",
        (1, 1, 1),
        (64, 1, 1),
        0,
        &[Arg::Ptr(src), Arg::Ptr(dst)],
        &mut mem,
    )
    .map(|_| ())
}

const INIT: &str = "mbarrier.init.shared::cta.b64 [%r1], 1;";
const WAIT0: &str = "bar.sync 0;
wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;
    @!%p2 bra wait;
    ld.shared.u32 %r4, [%r2];";

#[test]
fn mbarrier_hazards_are_errors_and_their_twins_run() {
    let copy = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], 256, [%r1];";
    let clean =
        format!("{INIT}\n    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 256;\n    {copy}");
    run_small(&small(&clean, WAIT0), "bulk_small_clean").unwrap();
    // The copy issued before the arrival that announces it is allowed too.
    let early =
        format!("{INIT}\n    {copy}\n    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 256;");
    run_small(&small(&early, WAIT0), "bulk_small_early").unwrap();
    // A state from arrive, waited on with test_wait.
    let state = format!(
        "{INIT}\n    mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r1], 256;\n    {copy}\n    mbarrier.arrive.shared::cta.b64 %rd3, [%r1];\n    mbarrier.test_wait.shared::cta.b64 %p3, [%r1], %rd3;\n    @!%p3 trap;"
    );
    run_small(&small(&state, WAIT0), "bulk_small_state").unwrap();

    let cases: &[(&str, String, &str, &str)] = &[
        (
            "use before init",
            format!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 256;\n    {copy}"),
            WAIT0,
            "used before mbarrier.init",
        ),
        (
            "over-arrival",
            format!("{INIT}\n    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 256;\n    mbarrier.arrive.shared::cta.b64 _, [%r1];\n    {copy}"),
            WAIT0,
            "over-arrival",
        ),
        (
            "tx underflow",
            format!("{INIT}\n    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 128;\n    {copy}"),
            WAIT0,
            "tx-count underflow",
        ),
        (
            "init in use",
            format!("{INIT}\n    {INIT}"),
            "",
            "mbarrier.init of a barrier in use",
        ),
        (
            "init not visible",
            INIT.to_string(),
            "mbarrier.arrive.shared::cta.b64 _, [%r1];",
            "no barrier (bar.sync) since",
        ),
        (
            "generic access to a barrier",
            INIT.to_string(),
            "bar.sync 0;\n    ld.shared.u64 %rd5, [%r1];",
            "live mbarrier object",
        ),
        (
            "spin forever",
            "mbarrier.init.shared::cta.b64 [%r1], 2;\n    mbarrier.arrive.shared::cta.b64 _, [%r1];".to_string(),
            "bar.sync 0;\nwait:\n    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;\n    @!%p2 bra wait;",
            "deadlock",
        ),
    ];
    for (what, t0, all, want) in cases {
        let e = err_of(run_small(&small(t0, all), "bulk_small_hazard"));
        assert!(e.contains(want), "{what}: {e}");
    }
    // The twins of the last two: inval first, and a second arrival.
    run_small(
        &small(
            &format!("{INIT}\n    mbarrier.inval.shared::cta.b64 [%r1];\n    {INIT}"),
            "",
        ),
        "bulk_small_reinit",
    )
    .unwrap();
    run_small(
        &small(
            "mbarrier.init.shared::cta.b64 [%r1], 2;\n    mbarrier.arrive.shared::cta.b64 _, [%r1];\n    mbarrier.arrive.shared::cta.b64 _, [%r1], 1;",
            "bar.sync 0;\nwait:\n    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;\n    @!%p2 bra wait;",
        ),
        "bulk_small_two_arrivals",
    )
    .unwrap();
}

/// Thread 0 loads one box through the tensor map; all 32 threads wait and dump the box's
/// shared bytes (as u32 words) to `out`.
fn tma_kernel() -> String {
    format!(
        r#"{HEADER}
.visible .entry tma(.param .u64 out, .param .align 64 .b8 tmap[128], .param .u32 c0, .param .u32 c1, .param .u32 bytes)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .shared .align 1024 .b8 buf[8192];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, tmap;
    cvta.param.u64 %rd3, %rd2;
    ld.param.u32 %r1, [c0];
    ld.param.u32 %r2, [c1];
    ld.param.u32 %r3, [bytes];
    mov.u32 %r4, bar;
    mov.u32 %r5, buf;
    mov.u32 %r6, %tid.x;
    setp.ne.u32 %p1, %r6, 0;
    @%p1 bra waiting;
    mbarrier.init.shared::cta.b64 [%r4], 1;
    fence.mbarrier_init.release.cluster;
waiting:
    bar.sync 0;
    @%p1 bra wait;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], %r3;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r5], [%rd3, {{%r1, %r2}}], [%r4];
wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], 0;
    @!%p2 bra wait;
    shl.b32 %r7, %r6, 2;
dump:
    setp.ge.u32 %p3, %r7, %r3;
    @%p3 bra done;
    add.u32 %r8, %r5, %r7;
    ld.shared.u32 %r9, [%r8];
    cvt.u64.u32 %rd4, %r7;
    add.u64 %rd5, %rd1, %rd4;
    st.global.u32 [%rd5], %r9;
    add.u32 %r7, %r7, 128;
    bra dump;
done:
    ret;
}}
"#
    )
}

const DIMS: [u64; 2] = [40, 20];

fn tensor_value(x: u64, y: u64) -> u32 {
    (y * 1000 + x) as u32 + 1
}

/// The box as the hardware lays it out: row-major, zero outside the tensor, each 16-byte
/// chunk moved by the swizzle (address bits 4.. XOR bits 7..).
fn reference(map: &TensorMap, c0: i64, c1: i64) -> Vec<u32> {
    let (bx, by) = (map.box_dims[0] as i64, map.box_dims[1] as i64);
    let mut linear = Vec::new();
    for r in 0..by {
        for e in 0..bx {
            let (x, y) = (c0 + e, c1 + r);
            let inside = x >= 0 && y >= 0 && (x as u64) < DIMS[0] && (y as u64) < DIMS[1];
            linear.push(if inside {
                tensor_value(x as u64, y as u64)
            } else {
                0
            });
        }
    }
    let bits = match map.swizzle {
        Swizzle::None => 0,
        Swizzle::B32 => 1,
        Swizzle::B64 => 2,
        Swizzle::B128 => 3,
    };
    let mut out = vec![0u32; linear.len()];
    for (i, v) in linear.iter().enumerate() {
        let byte = i * 4;
        let row_bits = (byte >> 7) & ((1 << bits) - 1);
        let phys = byte ^ (row_bits << 4);
        out[phys / 4] = *v;
    }
    out
}

fn run_tma(map: &TensorMap, c0: i32, c1: i32, mem: &mut Memory) -> Result<Vec<u32>, ptxsim::Error> {
    let m = common::module("bulk_tma", &tma_kernel());
    let bytes = map.box_bytes() as usize;
    let out = mem.alloc(bytes);
    m.launch(
        "tma",
        (1, 1, 1),
        (32, 1, 1),
        0,
        &[
            Arg::Ptr(out),
            Arg::Bytes(map.encode().to_vec()),
            Arg::U32(c0 as u32),
            Arg::U32(c1 as u32),
            Arg::U32(bytes as u32),
        ],
        mem,
    )?;
    mem.read::<u32>(out, bytes / 4)
}

#[test]
fn tma_tile_loads_match_the_reference_in_every_swizzle_mode_with_zero_fill() {
    let mut mem = Memory::new();
    let data: Vec<u32> = (0..DIMS[1])
        .flat_map(|y| (0..DIMS[0]).map(move |x| tensor_value(x, y)))
        .collect();
    let base = mem.alloc_from(&data);
    for (swizzle, bx) in [
        (Swizzle::None, 8),
        (Swizzle::B32, 8),
        (Swizzle::B64, 16),
        (Swizzle::B128, 32),
    ] {
        let map = TensorMap {
            base: base.addr(),
            elem_bytes: 4,
            dims: DIMS,
            strides_bytes: [DIMS[0] * 4],
            box_dims: [bx, 16],
            swizzle,
            oob_fill: ptxsim::OobFill::Zero,
        };
        for (c0, c1) in [(0, 0), (4, 2), (20, 12), (-4, -3), (36, 18)] {
            let got = run_tma(&map, c0, c1, &mut mem).unwrap();
            assert_eq!(
                got,
                reference(&map, c0 as i64, c1 as i64),
                "{swizzle:?} at ({c0}, {c1})"
            );
        }
    }
    // Refusals: a map not made by the encoder, a swizzle whose width is not the box's row.
    let good = TensorMap {
        base: base.addr(),
        elem_bytes: 4,
        dims: DIMS,
        strides_bytes: [DIMS[0] * 4],
        box_dims: [32, 8],
        swizzle: Swizzle::B128,
        oob_fill: ptxsim::OobFill::Zero,
    };
    let m = common::module("bulk_tma", &tma_kernel());
    let out = mem.alloc(1024);
    let mut raw = good.encode().to_vec();
    raw[0] ^= 1;
    let e = err_of(m.launch(
        "tma",
        (1, 1, 1),
        (32, 1, 1),
        0,
        &[
            Arg::Ptr(out),
            Arg::Bytes(raw),
            Arg::U32(0),
            Arg::U32(0),
            Arg::U32(1024),
        ],
        &mut mem,
    ));
    assert!(e.contains("not a tensor map made by ptxsim"), "{e}");
    let narrow = TensorMap {
        box_dims: [16, 8],
        ..good
    };
    let e = err_of(run_tma(&narrow, 0, 0, &mut mem));
    assert!(
        e.contains("128-byte swizzle needs rows of exactly 128 bytes"),
        "{e}"
    );
}

#[test]
fn bulk_forms_need_ptx_8_0_and_sm_90() {
    for (v, t) in [("7.8", "sm_90"), ("8.0", "sm_89")] {
        for text in [pipeline(WAIT_FULL, ""), tma_kernel()] {
            let old = text.replace(HEADER, &common::header(v, t));
            let e = Module::parse(&old).expect_err("must not parse").to_string();
            assert!(
                e.contains("needs .version 8.0 and .target sm_90"),
                "{v} {t}: {e}"
            );
            common::assert_ptxas_rejects("bulk_old", &old);
        }
    }
}
