//! Instruction semantics one at a time: integer arithmetic in every width, f32/f64 with the
//! PTX rounding modifiers, f16/bf16 (scalar and x2), tf32 and fp8 conversions, predicates.
//! Each case runs a one-thread kernel whose body computes one result from three 64-bit
//! inputs; the expected value comes from the host: Rust's IEEE arithmetic, `f32::mul_add`,
//! the `half` crate, or a number worked out by hand in the comment.

mod common;

use half::{bf16, f16};
use ptxsim::{Arg, Memory};

/// Runs `body` with inputs x, y, z available as %rd1..3 (u64), %r1..3 (low 32 bits),
/// %f1..3 (f32 bit casts), %fd1..3 (f64), %h1..3 (low 16 bits); the body leaves its result
/// in %rd5.
fn run(name: &str, body: &str, x: u64, y: u64, z: u64) -> u64 {
    let ptx = common::header("8.4", "sm_90")
        + &format!(
            r#".visible .entry op(.param .u64 out, .param .u64 x, .param .u64 y, .param .u64 z)
{{
    .reg .pred %p<4>;
    .reg .b16 %h<8>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<8>;
    .reg .f64 %fd<8>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    ld.param.u64 %rd3, [z];
    ld.param.u64 %rd4, [out];
    cvt.u32.u64 %r1, %rd1;
    cvt.u32.u64 %r2, %rd2;
    cvt.u32.u64 %r3, %rd3;
    mov.b32 %f1, %r1;
    mov.b32 %f2, %r2;
    mov.b32 %f3, %r3;
    mov.b64 %fd1, %rd1;
    mov.b64 %fd2, %rd2;
    mov.b64 %fd3, %rd3;
    cvt.u16.u32 %h1, %r1;
    cvt.u16.u32 %h2, %r2;
    cvt.u16.u32 %h3, %r3;
    mov.u64 %rd5, 0;
    {body}
    st.global.u64 [%rd4], %rd5;
    ret;
}}
"#
        );
    let module = common::module(name, &ptx);
    let mut mem = Memory::new();
    let out = mem.alloc(8);
    module
        .launch(
            "op",
            (1, 1, 1),
            (1, 1, 1),
            0,
            &[Arg::Ptr(out), Arg::U64(x), Arg::U64(y), Arg::U64(z)],
            &mut mem,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    mem.read::<u64>(out, 1).unwrap()[0]
}

/// Result conventions for bodies.
const R: &str = "cvt.u64.u32 %rd5, %r4;";
const F: &str = "mov.b32 %r4, %f4;\n    cvt.u64.u32 %rd5, %r4;";
const H: &str = "cvt.u64.u16 %rd5, %h4;";
const P: &str = "selp.u64 %rd5, 1, 0, %p1;";

fn f(x: f32) -> u64 {
    x.to_bits() as u64
}
fn d(x: f64) -> u64 {
    x.to_bits()
}
fn i(x: i64) -> u64 {
    x as u64
}

fn check(name: &str, body: &str, x: u64, y: u64, z: u64, want: u64) {
    let got = run(name, body, x, y, z);
    assert_eq!(got, want, "{name}: got {got:#x}, want {want:#x}");
}

#[test]
fn integer_arithmetic() {
    check(
        "add_wrap",
        &format!("add.u32 %r4, %r1, %r2; {R}"),
        0xffff_ffff,
        2,
        0,
        1,
    );
    check("sub_s64", "sub.s64 %rd5, %rd1, %rd2;", 5, 7, 0, i(-2));
    check(
        "add_sat",
        &format!("add.sat.s32 %r4, %r1, %r2; {R}"),
        0x7fff_fff0,
        0x100,
        0,
        0x7fff_ffff,
    );
    check(
        "mul_lo",
        &format!("mul.lo.u32 %r4, %r1, %r2; {R}"),
        0x1_0001,
        0x1_0001,
        0,
        0x2_0001,
    );
    check(
        "mul_hi_u",
        &format!("mul.hi.u32 %r4, %r1, %r2; {R}"),
        0xffff_ffff,
        0xffff_ffff,
        0,
        0xffff_fffe,
    );
    check(
        "mul_hi_s",
        &format!("mul.hi.s32 %r4, %r1, %r2; {R}"),
        i(-2) & 0xffff_ffff,
        3,
        0,
        0xffff_ffff,
    );
    check(
        "mul_wide_s",
        "mul.wide.s32 %rd5, %r1, %r2;",
        i(-3) & 0xffff_ffff,
        5,
        0,
        i(-15),
    );
    check(
        "mul_wide_u",
        "mul.wide.u32 %rd5, %r1, %r2;",
        0xffff_ffff,
        2,
        0,
        0x1_ffff_fffe,
    );
    check(
        "mad_lo",
        &format!("mad.lo.s32 %r4, %r1, %r2, %r3; {R}"),
        7,
        i(-3) & 0xffff_ffff,
        100,
        79,
    );
    check(
        "mad_wide",
        "mad.wide.u32 %rd5, %r1, %r2, %rd3;",
        0x8000_0000,
        4,
        5,
        0x2_0000_0005,
    );
    check(
        "mad_hi",
        &format!("mad.hi.u32 %r4, %r1, %r2, %r3; {R}"),
        0x8000_0000,
        4,
        5,
        7,
    );
    check(
        "div_s",
        &format!("div.s32 %r4, %r1, %r2; {R}"),
        i(-7) & 0xffff_ffff,
        2,
        0,
        i(-3) & 0xffff_ffff,
    );
    check(
        "rem_s",
        &format!("rem.s32 %r4, %r1, %r2; {R}"),
        i(-7) & 0xffff_ffff,
        2,
        0,
        0xffff_ffff,
    );
    check(
        "div_u64",
        "div.u64 %rd5, %rd1, %rd2;",
        1 << 40,
        3,
        0,
        (1u64 << 40) / 3,
    );
    check(
        "min_s",
        &format!("min.s32 %r4, %r1, %r2; {R}"),
        i(-1) & 0xffff_ffff,
        1,
        0,
        0xffff_ffff,
    );
    check(
        "max_u",
        &format!("max.u32 %r4, %r1, %r2; {R}"),
        0xffff_ffff,
        1,
        0,
        0xffff_ffff,
    );
    check(
        "shl_clamp",
        &format!("shl.b32 %r4, %r1, %r2; {R}"),
        1,
        33,
        0,
        0,
    );
    check(
        "shr_s_clamp",
        &format!("shr.s32 %r4, %r1, %r2; {R}"),
        0x8000_0000,
        40,
        0,
        0xffff_ffff,
    );
    check(
        "shr_u",
        &format!("shr.u32 %r4, %r1, %r2; {R}"),
        0x8000_0000,
        31,
        0,
        1,
    );
    check("shr_s64", "shr.s64 %rd5, %rd1, 4;", i(-256), 0, 0, i(-16));
    check(
        "and_or_xor",
        &format!("and.b32 %r4, %r1, %r2; or.b32 %r4, %r4, %r3; xor.b32 %r4, %r4, 0xff; {R}"),
        0xf0f0,
        0xff00,
        1,
        0xf0fe,
    );
    check(
        "not",
        &format!("not.b32 %r4, %r1; {R}"),
        0x0f0f_0f0f,
        0,
        0,
        0xf0f0_f0f0,
    );
    check("cnot", &format!("cnot.b32 %r4, %r1; {R}"), 0, 0, 0, 1);
    check(
        "neg_abs",
        &format!("neg.s32 %r4, %r1; abs.s32 %r4, %r4; {R}"),
        5,
        0,
        0,
        5,
    );
    check(
        "popc",
        &format!("popc.b64 %r4, %rd1; {R}"),
        0xf000_0000_0000_0003,
        0,
        0,
        6,
    );
    check("clz", &format!("clz.b32 %r4, %r1; {R}"), 0, 0, 0, 32);
    check(
        "clz1",
        &format!("clz.b32 %r4, %r1; {R}"),
        0x0001_0000,
        0,
        0,
        15,
    );
    check(
        "brev",
        &format!("brev.b32 %r4, %r1; {R}"),
        1,
        0,
        0,
        0x8000_0000,
    );
    check(
        "bfe_u",
        &format!("bfe.u32 %r4, %r1, 8, 12; {R}"),
        0xabcd_1234,
        0,
        0,
        0xd12,
    );
    check(
        "bfe_s",
        &format!("bfe.s32 %r4, %r1, 8, 12; {R}"),
        0xabcd_1234 | 0x0008_0000,
        0,
        0,
        0xffff_fd12,
    );
    check(
        "bfi",
        &format!("bfi.b32 %r4, %r1, %r2, 8, 4; {R}"),
        0xf5,
        0xffff_ffff,
        0,
        0xffff_f5ff,
    );
    // prmt selector 0x5140: result bytes (low to high) come from bytes 0, 4, 1, 5 of {b, a}.
    check(
        "prmt",
        &format!("prmt.b32 %r4, %r1, %r2, 0x5140; {R}"),
        0x3322_1100,
        0x7766_5544,
        0,
        0x5511_4400,
    );
    check(
        "lop3_xor3",
        &format!("lop3.b32 %r4, %r1, %r2, %r3, 0x96; {R}"),
        0b1100,
        0b1010,
        0b0110,
        0b0000,
    );
    check(
        "lop3_maj",
        &format!("lop3.b32 %r4, %r1, %r2, %r3, 0xe8; {R}"),
        0b1100,
        0b1010,
        0b0110,
        0b1110,
    );
    check(
        "cvt_sext",
        "cvt.s64.s32 %rd5, %r1;",
        0xffff_fffe,
        0,
        0,
        i(-2),
    );
    check(
        "cvt_trunc",
        &format!("cvt.u8.u32 %r4, %r1; {R}"),
        0x1234,
        0,
        0,
        0x34,
    );
    check(
        "cvt_sat_u8",
        &format!("cvt.sat.u8.s32 %r4, %r1; {R}"),
        i(-5) & 0xffff_ffff,
        0,
        0,
        0,
    );
    check(
        "cvt_sat_s8",
        &format!("cvt.sat.s8.s32 %r4, %r1; {R}"),
        1000,
        0,
        0,
        127,
    );
    check(
        "mov_pack",
        "mov.b64 %rd5, {%r1, %r2};",
        0x1111,
        0x2222,
        0,
        0x2222_0000_1111,
    );
    check(
        "mov_unpack",
        &format!("mov.b32 {{%h4, %h5}}, %r1; {H}"),
        0xaaaa_bbbb,
        0,
        0,
        0xbbbb,
    );
    check(
        "mov_unpack_hi",
        &format!("mov.b32 {{%h5, %h4}}, %r1; {H}"),
        0xaaaa_bbbb,
        0,
        0,
        0xaaaa,
    );
}

#[test]
fn predicates_and_comparisons() {
    check(
        "lt_s",
        &format!("setp.lt.s32 %p1, %r1, %r2; {P}"),
        0xffff_ffff,
        1,
        0,
        1,
    );
    check(
        "lo_u",
        &format!("setp.lo.u32 %p1, %r1, %r2; {P}"),
        0xffff_ffff,
        1,
        0,
        0,
    );
    check(
        "lt_nan",
        &format!("setp.lt.f32 %p1, %f1, %f2; {P}"),
        f(f32::NAN),
        f(1.0),
        0,
        0,
    );
    check(
        "ltu_nan",
        &format!("setp.ltu.f32 %p1, %f1, %f2; {P}"),
        f(f32::NAN),
        f(1.0),
        0,
        1,
    );
    check(
        "nan",
        &format!("setp.nan.f64 %p1, %fd1, %fd2; {P}"),
        d(1.0),
        d(f64::NAN),
        0,
        1,
    );
    check(
        "ne_neg_zero",
        &format!("setp.ne.f32 %p1, %f1, %f2; {P}"),
        f(-0.0),
        f(0.0),
        0,
        0,
    );
    // p = (a < b) and c; q = !(a < b) and c.
    check(
        "and_combine",
        &format!("setp.ne.u32 %p3, %r3, 0; setp.lt.u32.and %p1|%p2, %r1, %r2, %p3; selp.u32 %r4, 2, 0, %p2; selp.u32 %r5, 1, 0, %p1; or.b32 %r4, %r4, %r5; {R}"),
        1,
        2,
        1,
        1,
    );
    check(
        "pred_logic",
        &format!("setp.eq.u32 %p1, %r1, 1; setp.eq.u32 %p2, %r2, 1; xor.pred %p1, %p1, %p2; not.pred %p1, %p1; {P}"),
        1,
        1,
        0,
        1,
    );
    check(
        "selp",
        "setp.ne.u64 %p0, %rd3, 0; selp.b64 %rd5, %rd1, %rd2, %p0;",
        7,
        9,
        0,
        9,
    );
}

#[test]
fn f32_and_f64_rounding_modes() {
    let one_plus = 1.0f64 + 2f64.powi(-30); // not representable in f32
    let x = f(1.0);
    let y = f(2f32.powi(-30));
    check(
        "add_rn",
        &format!("add.rn.f32 %f4, %f1, %f2; {F}"),
        x,
        y,
        0,
        f(1.0),
    );
    check(
        "add_rz",
        &format!("add.rz.f32 %f4, %f1, %f2; {F}"),
        x,
        y,
        0,
        f(1.0),
    );
    check(
        "add_rp",
        &format!("add.rp.f32 %f4, %f1, %f2; {F}"),
        x,
        y,
        0,
        f(1.0 + f32::EPSILON),
    );
    check(
        "add_rm_neg",
        &format!("add.rm.f32 %f4, %f1, %f2; {F}"),
        f(-1.0),
        f(-(2f32.powi(-30))),
        0,
        f(-1.0 - f32::EPSILON),
    );
    assert!(one_plus > 1.0);
    check(
        "sub_default_rn",
        &format!("sub.f32 %f4, %f1, %f2; {F}"),
        f(1.5),
        f(0.25),
        0,
        f(1.25),
    );
    // 0.1f32 * 3 = 0.30000000447...: between 0.29999998 and 0.30000001 (the nearest).
    check(
        "mul_rz",
        &format!("mul.rz.f32 %f4, %f1, %f2; {F}"),
        f(0.1),
        f(3.0),
        0,
        f(0.3f32.next_down()),
    );
    check(
        "mul_rn",
        &format!("mul.rn.f32 %f4, %f1, %f2; {F}"),
        f(0.1),
        f(3.0),
        0,
        f(0.3),
    );
    // fma is fused: (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; unfused it would be 0.
    let a = 1.0 + 2f32.powi(-12);
    check(
        "fma_fused",
        &format!("fma.rn.f32 %f4, %f1, %f2, %f3; {F}"),
        f(a),
        f(a),
        f(-(1.0 + 2f32.powi(-11))),
        f(2f32.powi(-24)),
    );
    check(
        "mad_is_fma",
        &format!("mad.rn.f32 %f4, %f1, %f2, %f3; {F}"),
        f(a),
        f(a),
        f(-(1.0 + 2f32.powi(-11))),
        f(2f32.powi(-24)),
    );
    check(
        "fma_rz",
        &format!("fma.rz.f32 %f4, %f1, %f2, %f3; {F}"),
        f(0.1),
        f(3.0),
        f(0.0),
        f(0.3f32.next_down()),
    );
    check(
        "div_rn",
        &format!("div.rn.f32 %f4, %f1, %f2; {F}"),
        f(1.0),
        f(3.0),
        0,
        f(1.0 / 3.0),
    );
    // 1/3 rounds to nearest upward (0.33333334), so .rp agrees with .rn and .rz is one below.
    check(
        "div_rp",
        &format!("div.rp.f32 %f4, %f1, %f2; {F}"),
        f(1.0),
        f(3.0),
        0,
        f(1.0 / 3.0),
    );
    check(
        "div_rz_1",
        &format!("div.rz.f32 %f4, %f1, %f2; {F}"),
        f(1.0),
        f(3.0),
        0,
        f((1.0f32 / 3.0).next_down()),
    );
    check(
        "div_rz",
        &format!("div.rz.f32 %f4, %f1, %f2; {F}"),
        f(2.0),
        f(3.0),
        0,
        f((2.0f32 / 3.0).next_down()),
    );
    check(
        "sqrt_rn",
        &format!("sqrt.rn.f32 %f4, %f1; {F}"),
        f(2.0),
        0,
        0,
        f(2f32.sqrt()),
    );
    check(
        "sqrt_rp",
        &format!("sqrt.rp.f32 %f4, %f1; {F}"),
        f(2.0),
        0,
        0,
        f(2f32.sqrt().next_up()),
    );
    check(
        "rcp_rn",
        &format!("rcp.rn.f32 %f4, %f1; {F}"),
        f(3.0),
        0,
        0,
        f(1.0 / 3.0),
    );
    check(
        "ftz",
        &format!("add.ftz.f32 %f4, %f1, %f2; {F}"),
        f(f32::MIN_POSITIVE / 4.0),
        f(0.0),
        0,
        f(0.0),
    );
    check(
        "no_ftz",
        &format!("add.f32 %f4, %f1, %f2; {F}"),
        f(f32::MIN_POSITIVE / 4.0),
        f(0.0),
        0,
        f(f32::MIN_POSITIVE / 4.0),
    );
    check(
        "sat",
        &format!("add.sat.f32 %f4, %f1, %f2; {F}"),
        f(0.75),
        f(0.5),
        0,
        f(1.0),
    );
    check(
        "min_nan",
        &format!("min.f32 %f4, %f1, %f2; {F}"),
        f(f32::NAN),
        f(-2.0),
        0,
        f(-2.0),
    );
    check(
        "max",
        &format!("max.f32 %f4, %f1, %f2; {F}"),
        f(-1.0),
        f(-2.0),
        0,
        f(-1.0),
    );
    check(
        "neg_abs",
        &format!("neg.f32 %f4, %f1; abs.f32 %f5, %f4; add.f32 %f4, %f4, %f5; {F}"),
        f(3.0),
        0,
        0,
        f(0.0),
    );
    check("f64_ops", "fma.rn.f64 %fd4, %fd1, %fd2, %fd3; div.rn.f64 %fd4, %fd4, %fd2; sqrt.rn.f64 %fd4, %fd4; mov.b64 %rd5, %fd4;", d(3.0), d(7.0), d(-0.5), d(((3.0f64).mul_add(7.0, -0.5) / 7.0).sqrt()));
    check(
        "f64_min",
        "min.f64 %fd4, %fd1, %fd2; mov.b64 %rd5, %fd4;",
        d(-0.0),
        d(0.0),
        0,
        d(-0.0),
    );
}

fn h2(lo: f16, hi: f16) -> u64 {
    (hi.to_bits() as u64) << 16 | lo.to_bits() as u64
}
fn b2(lo: bf16, hi: bf16) -> u64 {
    (hi.to_bits() as u64) << 16 | lo.to_bits() as u64
}

#[test]
fn half_precision_arithmetic() {
    let hv = |x: f64| f16::from_f64(x);
    let bv = |x: f64| bf16::from_f64(x);
    // fma.rn.f16x2 per half: exact a*b + c, rounded once.
    // (1 + 2^-9)^2 - 1 = 2^-8 + 2^-18 exactly; unfused, the product rounds to 1 + 2^-8 first.
    let (a0, b0, c0) = (hv(1.001953125), hv(1.001953125), hv(-1.0));
    let (a1, b1, c1) = (hv(3.5), hv(-2.25), hv(0.125));
    let want = h2(
        hv(a0.to_f64() * b0.to_f64() + c0.to_f64()),
        hv(a1.to_f64() * b1.to_f64() + c1.to_f64()),
    );
    check(
        "fma_f16x2",
        &format!("fma.rn.f16x2 %r4, %r1, %r2, %r3; {R}"),
        h2(a0, a1),
        h2(b0, b1),
        h2(c0, c1),
        want,
    );
    assert_ne!(
        want & 0xffff,
        hv(2f64.powi(-8)).to_bits() as u64,
        "the 2^-18 term must survive fusion"
    );
    // bf16x2 fma (sm_80) and add/mul (sm_90).
    let (x0, y0, z0) = (bv(1.5), bv(-3.0), bv(0.0078125));
    let (x1, y1, z1) = (bv(100.0), bv(0.01), bv(1.0));
    check(
        "fma_bf16x2",
        &format!("fma.rn.bf16x2 %r4, %r1, %r2, %r3; {R}"),
        b2(x0, x1),
        b2(y0, y1),
        b2(z0, z1),
        b2(
            bv(x0.to_f64() * y0.to_f64() + z0.to_f64()),
            bv(x1.to_f64() * y1.to_f64() + z1.to_f64()),
        ),
    );
    check(
        "add_bf16x2",
        &format!("add.rn.bf16x2 %r4, %r1, %r2; {R}"),
        b2(x0, x1),
        b2(y0, y1),
        0,
        b2(bv(x0.to_f64() + y0.to_f64()), bv(x1.to_f64() + y1.to_f64())),
    );
    check(
        "mul_f16",
        &format!("mul.rn.f16 %h4, %h1, %h2; {H}"),
        hv(1.1).to_bits() as u64,
        hv(3.3).to_bits() as u64,
        0,
        hv(hv(1.1).to_f64() * hv(3.3).to_f64()).to_bits() as u64,
    );
    check(
        "sub_f16x2",
        &format!("sub.f16x2 %r4, %r1, %r2; {R}"),
        h2(hv(1.0), hv(2.0)),
        h2(hv(0.5), hv(4.0)),
        0,
        h2(hv(0.5), hv(-2.0)),
    );
    check(
        "neg_f16x2",
        &format!("neg.f16x2 %r4, %r1; {R}"),
        h2(hv(1.0), hv(-2.0)),
        0,
        0,
        h2(hv(-1.0), hv(2.0)),
    );
    check(
        "abs_bf16x2",
        &format!("abs.bf16x2 %r4, %r1; {R}"),
        b2(bv(-1.0), bv(2.0)),
        0,
        0,
        b2(bv(1.0), bv(2.0)),
    );
    check(
        "min_f16x2",
        &format!("min.f16x2 %r4, %r1, %r2; {R}"),
        h2(hv(1.0), hv(-2.0)),
        h2(hv(0.5), hv(4.0)),
        0,
        h2(hv(0.5), hv(-2.0)),
    );
    check(
        "overflow_f16",
        &format!("mul.rn.f16 %h4, %h1, %h2; {H}"),
        hv(60000.0).to_bits() as u64,
        hv(2.0).to_bits() as u64,
        0,
        f16::INFINITY.to_bits() as u64,
    );
}

#[test]
fn conversions() {
    let hv = |x: f64| f16::from_f64(x);
    // Between float formats.
    check(
        "f32_to_f16",
        &format!("cvt.rn.f16.f32 %h4, %f1; {H}"),
        f(1.0 / 3.0),
        0,
        0,
        f16::from_f32(1.0 / 3.0).to_bits() as u64,
    );
    check(
        "f32_to_f16_rz",
        &format!("cvt.rz.f16.f32 %h4, %f1; {H}"),
        f(65519.0),
        0,
        0,
        hv(65504.0).to_bits() as u64,
    );
    check(
        "f32_to_f16_rn_overflow",
        &format!("cvt.rn.f16.f32 %h4, %f1; {H}"),
        f(65520.0),
        0,
        0,
        f16::INFINITY.to_bits() as u64,
    );
    check(
        "f16_to_f32",
        &format!("cvt.f32.f16 %f4, %h1; {F}"),
        hv(-0.099975586).to_bits() as u64,
        0,
        0,
        f(hv(-0.099975586).to_f32()),
    );
    check(
        "f32_to_bf16",
        &format!("cvt.rn.bf16.f32 %h4, %f1; {H}"),
        f(5.123_4),
        0,
        0,
        bf16::from_f32(5.123_4).to_bits() as u64,
    );
    check(
        "bf16_to_f32",
        &format!("cvt.f32.bf16 %f4, %h1; {F}"),
        bf16::from_f32(-7.5).to_bits() as u64,
        0,
        0,
        f(-7.5),
    );
    check(
        "f64_to_f32",
        &format!("cvt.rn.f32.f64 %f4, %fd1; {F}"),
        d(0.1),
        0,
        0,
        f(0.1f64 as f32),
    );
    check(
        "f32_to_f64",
        "cvt.f64.f32 %fd4, %f1; mov.b64 %rd5, %fd4;",
        f(0.1),
        0,
        0,
        d(0.1f32 as f64),
    );
    // Packed pairs: a goes to the upper half.
    check(
        "f16x2_pack",
        &format!("cvt.rn.f16x2.f32 %r4, %f1, %f2; {R}"),
        f(1.0),
        f(-2.0),
        0,
        h2(hv(-2.0), hv(1.0)),
    );
    check(
        "bf16x2_pack",
        &format!("cvt.rn.bf16x2.f32 %r4, %f1, %f2; {R}"),
        f(1.0),
        f(0.5),
        0,
        b2(bf16::from_f32(0.5), bf16::from_f32(1.0)),
    );
    // tf32: 1 + 2^-11 is a tie between 1 and 1 + 2^-10; .rna rounds away from zero.
    check(
        "tf32_rna_tie",
        &format!("cvt.rna.tf32.f32 %r4, %f1; {R}"),
        f(1.0 + 2f32.powi(-11)),
        0,
        0,
        f(1.0 + 2f32.powi(-10)),
    );
    check(
        "tf32_rna_down",
        &format!("cvt.rna.tf32.f32 %r4, %f1; {R}"),
        f(1.0 + 2f32.powi(-12)),
        0,
        0,
        f(1.0),
    );
    // fp8 (sm_89+): e4m3 1.0 = 0x38, 0.5 = 0x30, saturates at 448 = 0x7e; a to the upper byte.
    check(
        "e4m3x2",
        &format!("cvt.rn.satfinite.e4m3x2.f32 %h4, %f1, %f2; {H}"),
        f(1.0),
        f(0.5),
        0,
        0x3830,
    );
    check(
        "e4m3x2_sat",
        &format!("cvt.rn.satfinite.e4m3x2.f32 %h4, %f1, %f2; {H}"),
        f(1000.0),
        f(-1000.0),
        0,
        0x7efe,
    );
    // 0.3 lies between e4m3 0.28125 (0x29) and 0.3125 (0x2a): nearer 0.3125.
    check(
        "e4m3_round",
        &format!("cvt.rn.satfinite.e4m3x2.f32 %h4, %f1, %f2; {H}"),
        f(0.3),
        f(0.0),
        0,
        0x2a00,
    );
    check(
        "e5m2x2",
        &format!("cvt.rn.satfinite.e5m2x2.f32 %h4, %f1, %f2; {H}"),
        f(-1.0),
        f(57344.0 * 4.0),
        0,
        0xbc7b,
    );
    check(
        "e4m3x2_to_f16x2",
        &format!("cvt.rn.f16x2.e4m3x2 %r4, %h1; {R}"),
        0x38b0,
        0,
        0,
        h2(hv(-0.5), hv(1.0)),
    );
    // Float to integer: rounding, saturation, NaN.
    check(
        "rzi",
        &format!("cvt.rzi.s32.f32 %r4, %f1; {R}"),
        f(-2.7),
        0,
        0,
        i(-2) & 0xffff_ffff,
    );
    check(
        "rni_even",
        &format!("cvt.rni.s32.f32 %r4, %f1; {R}"),
        f(2.5),
        0,
        0,
        2,
    );
    check(
        "rmi",
        &format!("cvt.rmi.s32.f32 %r4, %f1; {R}"),
        f(-2.5),
        0,
        0,
        i(-3) & 0xffff_ffff,
    );
    check(
        "rpi",
        &format!("cvt.rpi.u32.f32 %r4, %f1; {R}"),
        f(2.1),
        0,
        0,
        3,
    );
    check(
        "saturate",
        &format!("cvt.rzi.s32.f32 %r4, %f1; {R}"),
        f(1e10),
        0,
        0,
        0x7fff_ffff,
    );
    check(
        "negative_to_unsigned",
        &format!("cvt.rzi.u32.f32 %r4, %f1; {R}"),
        f(-5.0),
        0,
        0,
        0,
    );
    check(
        "nan_to_int",
        &format!("cvt.rzi.s32.f32 %r4, %f1; {R}"),
        f(f32::NAN),
        0,
        0,
        0,
    );
    check(
        "f64_to_s64",
        "cvt.rzi.s64.f64 %rd5, %fd1;",
        d(-1e15),
        0,
        0,
        i(-1_000_000_000_000_000),
    );
    // Integer to float.
    check(
        "s32_to_f32",
        &format!("cvt.rn.f32.s32 %f4, %r1; {F}"),
        16_777_217,
        0,
        0,
        f(16_777_216.0),
    );
    check(
        "u64_to_f32_rz",
        &format!("cvt.rz.f32.u64 %f4, %rd1; {F}"),
        u64::MAX,
        0,
        0,
        f(f32::from_bits(0x5f7f_ffff)),
    );
    check(
        "s64_to_f64",
        "cvt.rn.f64.s64 %fd4, %rd1; mov.b64 %rd5, %fd4;",
        i(-123_456_789),
        0,
        0,
        d(-123_456_789.0),
    );
    check(
        "u32_to_f16",
        &format!("cvt.rn.f16.u32 %h4, %r1; {H}"),
        2049,
        0,
        0,
        hv(2048.0).to_bits() as u64,
    );
    // Round to an integral value in the same format.
    check(
        "rni_f32",
        &format!("cvt.rni.f32.f32 %f4, %f1; {F}"),
        f(-3.5),
        0,
        0,
        f(-4.0),
    );
    check(
        "sat_f32",
        &format!("cvt.sat.f32.f32 %f4, %f1; {F}"),
        f(1.5),
        0,
        0,
        f(1.0),
    );
}

/// `%clock64` counts one cycle per warp instruction of the block and `%globaltimer` runs at
/// the configured clock, so cycles over nanoseconds read back `clock_mhz` (what roofprobe's
/// clock records compute from them).
#[test]
fn the_timer_runs_at_the_configured_clock() {
    let ptx = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry timed(.param .u64 out)
{
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, %clock64;
    mov.u64 %rd3, %globaltimer;
    add.u64 %rd6, %rd2, 1;
    add.u64 %rd6, %rd6, 1;
    add.u64 %rd6, %rd6, 1;
    add.u64 %rd6, %rd6, 1;
    mov.u64 %rd4, %clock64;
    mov.u64 %rd5, %globaltimer;
    sub.u64 %rd4, %rd4, %rd2;
    sub.u64 %rd5, %rd5, %rd3;
    st.global.v2.u64 [%rd1], {%rd4, %rd5};
    ret;
}
"#;
    let m = common::module("timed", ptx);
    for (mhz, cycles_per_ns) in [(1000u32, 1.0), (250, 0.25), (2000, 2.0)] {
        let mut mem = ptxsim::Memory::new();
        let out = mem.alloc(16);
        // one thread: the store is its alone
        let mut cfg = ptxsim::LaunchConfig::new((1, 1, 1), (1, 1, 1), 0);
        cfg.clock_mhz = mhz;
        m.launch_with("timed", &cfg, &[ptxsim::Arg::Ptr(out)], &mut mem)
            .unwrap();
        let v = mem.read::<u64>(out, 2).unwrap();
        let (cycles, ns) = (v[0] as f64, v[1] as f64);
        assert!(cycles >= 6.0, "{cycles}");
        assert!(
            (cycles / ns - cycles_per_ns).abs() < 0.2 * cycles_per_ns,
            "{mhz} MHz: {cycles} cycles in {ns} ns"
        );
    }
}
