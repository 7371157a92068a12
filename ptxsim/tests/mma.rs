//! `mma.sync` and `ldmatrix` on their own, against hand-computed matrices with distinct values
//! per element, so that a layout mistake in the interpreter cannot hide a layout mistake in a
//! kernel.
//!
//! The fragment layouts below are transcribed a second time, independently of `ptxsim::mma`,
//! from the PTX ISA sections "Matrix Fragments for mma.m8n8k4 / m16n8k4 / m16n8k8 / m16n8k16 /
//! m16n8k32" (g = laneid >> 2, t = laneid % 4); the expected D is a plain triple loop on the
//! host, and a few elements are checked against numbers worked out by hand. A second,
//! transcription-free check composes `ldmatrix` with `mma` the way GEMM kernels do and
//! compares with plain matrix multiplication.

mod common;

use ptxsim::{Arg, Memory, Module};

/// One mma form under test.
#[derive(Clone, Copy, Debug)]
struct Form {
    shape: &'static str,
    d: &'static str,
    a: &'static str,
    b: &'static str,
    c: &'static str,
}

impl Form {
    fn mnk(&self) -> (usize, usize, usize) {
        match self.shape {
            "m8n8k4" => (8, 8, 4),
            "m16n8k4" => (16, 8, 4),
            "m16n8k8" => (16, 8, 8),
            "m16n8k16" => (16, 8, 16),
            "m16n8k32" => (16, 8, 32),
            other => panic!("shape {other}"),
        }
    }
    fn needs_sm89(&self) -> bool {
        matches!(self.a, "e4m3" | "e5m2")
    }
    /// The .f64 shapes past Ampere's m8n8k4 (PTX ISA 7.8, sm_90).
    fn needs_sm90(&self) -> bool {
        self.a == "f64" && self.shape != "m8n8k4"
    }
}

fn width(ty: &str) -> usize {
    match ty {
        "f16" | "bf16" => 16,
        "tf32" | "f32" | "s32" => 32,
        "f64" => 64,
        _ => 8,
    }
}

/// Elements per register.
fn per_reg(ty: &str) -> usize {
    match width(ty) {
        16 => 2,
        8 => 4,
        _ => 1,
    }
}

/// Register width in bytes (f64 fragments use 64-bit registers).
fn reg_bytes(ty: &str) -> usize {
    if ty == "f64" {
        8
    } else {
        4
    }
}

/// (row, col) of element `i` of lane `l`'s A fragment: the PTX ISA formulas, written out.
fn a_rc(f: &Form, l: usize, i: usize) -> (usize, usize) {
    let (g, t) = (l / 4, l % 4);
    match (f.shape, width(f.a)) {
        ("m8n8k4", _) => (g, t),
        // "row = groupID for a0, groupID + 8 for a1; col = threadID_in_group"
        ("m16n8k4", _) => (if i == 0 { g } else { g + 8 }, t),
        // f16: "row = groupID for a0 and a1, groupID + 8 for a2 and a3;
        //       col = threadID_in_group * 2 + (i & 0x1)"
        ("m16n8k8", 16) => (if i < 2 { g } else { g + 8 }, t * 2 + i % 2),
        // tf32: "row = groupID for a0 and a2, +8 for a1 and a3;
        //        col = threadID_in_group for a0 and a1, +4 for a2 and a3"
        ("m16n8k8", _) => (
            if i == 0 || i == 2 { g } else { g + 8 },
            if i < 2 { t } else { t + 4 },
        ),
        // f16: "row = groupID for ai where 0 <= i < 2 || 4 <= i < 6, else groupID + 8;
        //       col = (threadID_in_group * 2) + (i & 0x1) for i < 4, + 8 for i >= 4"
        ("m16n8k16", 16) => (
            if i < 2 || (4..6).contains(&i) {
                g
            } else {
                g + 8
            },
            t * 2 + i % 2 + if i >= 4 { 8 } else { 0 },
        ),
        // 8-bit: "row = groupID for i < 4, groupID + 8 for i >= 4;
        //         col = (threadID_in_group * 4) + (i & 0x3)"
        ("m16n8k16", 8) => (if i < 4 { g } else { g + 8 }, t * 4 + i % 4),
        // .f64 (sm_90), from CUTLASS's MMA_Traits<SM90_16x8x16_F64F64F64F64_TN>: ALayout
        // ((4,8),(2,4)):((16,1),(8,64)) over the column-major 16 x 16 A, so thread (t, g) and
        // value (v0, v1) sit at row g + 8 v0, col t + 4 v1, with i = v0 + 2 v1
        ("m16n8k16", 64) => (g + 8 * (i % 2), t + 4 * (i / 2)),
        // "row = groupID for 0 <= i < 4 || 8 <= i < 12, else groupID + 8;
        //  col = (threadID_in_group * 4) + (i & 0x3) for i < 8, + 16 for i >= 8"
        ("m16n8k32", _) => (
            if i < 4 || (8..12).contains(&i) {
                g
            } else {
                g + 8
            },
            t * 4 + i % 4 + if i >= 8 { 16 } else { 0 },
        ),
        other => panic!("no A layout for {other:?}"),
    }
}

/// (row = k, col = n) of element `i` of lane `l`'s B fragment.
fn b_rc(f: &Form, l: usize, i: usize) -> (usize, usize) {
    let (g, t) = (l / 4, l % 4);
    let row = match (f.shape, width(f.b)) {
        ("m8n8k4", _) | ("m16n8k4", _) => t,
        // f16: "row = (threadID_in_group * 2) + i"
        ("m16n8k8", 16) => t * 2 + i,
        // tf32: "row = threadID_in_group for b0, + 4 for b1"
        ("m16n8k8", _) => t + 4 * i,
        // f16: "row = (threadID_in_group * 2) + (i & 0x1) for i < 2, + 8 for i >= 2"
        ("m16n8k16", 16) => t * 2 + i % 2 + if i >= 2 { 8 } else { 0 },
        // 8-bit: "row = (threadID_in_group * 4) + i"
        ("m16n8k16", 8) => t * 4 + i,
        // .f64: BLayout ((4,8),4):((8,1),32) over the column-major 8 x 16 (n, k) B
        ("m16n8k16", 64) => t + 4 * i,
        // "row = (threadID_in_group * 4) + (i & 0x3) for i < 4, + 16 for i >= 4"
        ("m16n8k32", _) => t * 4 + i % 4 + if i >= 4 { 16 } else { 0 },
        other => panic!("no B layout for {other:?}"),
    };
    (row, g)
}

/// (row, col) of element `i` of lane `l`'s C/D fragment.
fn c_rc(f: &Form, l: usize, i: usize) -> (usize, usize) {
    let (g, t) = (l / 4, l % 4);
    if f.shape == "m8n8k4" {
        // "row = groupID; col = (threadID_in_group * 2) + (i & 0x1)"
        (g, t * 2 + i)
    } else {
        // "row = groupID for c0 and c1, groupID + 8 for c2 and c3;
        //  col = (threadID_in_group * 2) + (i & 0x1)"
        (if i < 2 { g } else { g + 8 }, t * 2 + i % 2)
    }
}

/// Exact value and bit encoding of an input element of type `ty`.
fn encode(ty: &str, v: f64) -> u64 {
    match ty {
        "f16" => half::f16::from_f64(v).to_bits() as u64,
        "bf16" => half::bf16::from_f64(v).to_bits() as u64,
        "tf32" | "f32" => (v as f32).to_bits() as u64,
        "f64" => v.to_bits(),
        "s8" => (v as i8) as u8 as u64,
        "u8" => v as u8 as u64,
        "s32" => (v as i32) as u32 as u64,
        other => panic!("encode {other}"),
    }
}

/// OCP FP8 E4M3 / E5M2 decoding, written out for the test (bias 7 / 15).
fn fp8_value(ty: &str, bits: u8) -> f64 {
    let (man_bits, bias) = if ty == "e4m3" { (3, 7) } else { (2, 15) };
    let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = ((bits & 0x7f) >> man_bits) as i32;
    let man = (bits & ((1 << man_bits) - 1)) as f64;
    let scale = (1u32 << man_bits) as f64;
    if exp == 0 {
        sign * man / scale * 2f64.powi(1 - bias)
    } else {
        sign * (1.0 + man / scale) * 2f64.powi(exp - bias)
    }
}

/// Distinct-as-possible input values for element (r, c) of an operand with `cols` columns.
/// Floats: (r*cols + c + 1)/64 with a sign pattern (exact in every format used); 8-bit
/// integers and fp8 have fewer codes than elements, so they use a scrambled sequence.
fn input(ty: &str, r: usize, c: usize, cols: usize, salt: usize) -> (f64, u64) {
    let idx = r * cols + c;
    match ty {
        "s8" => {
            let v = ((idx * 37 + 11 + salt) % 251) as i64 - 125;
            (v as f64, encode(ty, v as f64))
        }
        "u8" => {
            let v = ((idx * 53 + 7 + salt) % 251) as f64;
            (v, encode(ty, v))
        }
        "e4m3" | "e5m2" => {
            // Finite codes only: e4m3 excludes 0x7f/0xff, e5m2 exponents 31.
            let limit = if ty == "e4m3" { 126 } else { 123 };
            let code = ((idx * 7 + 3 + salt) % limit + 1) as u8
                | if (idx + salt) % 2 == 1 { 0x80 } else { 0 };
            (fp8_value(ty, code), code as u64)
        }
        _ => {
            let sign = if (idx + salt).is_multiple_of(3) {
                -1.0
            } else {
                1.0
            };
            let v = sign * (idx + 1 + salt) as f64 / 64.0;
            (v, encode(ty, v))
        }
    }
}

fn kernel_text(f: &Form) -> String {
    let (m, n, k) = f.mnk();
    let na = m * k / 32 / per_reg(f.a);
    let nb = k * n / 32 / per_reg(f.b);
    let nc = m * n / 32 / per_reg(f.c);
    let nd = m * n / 32 / per_reg(f.d);
    let reg_ty = |ty: &str| match ty {
        "f64" => "f64",
        "f32" => "f32",
        _ => "b32",
    };
    let mut s = if f.needs_sm90() {
        common::header("7.8", "sm_90")
    } else if f.needs_sm89() {
        common::header("8.4", "sm_89")
    } else {
        common::header("7.0", "sm_80")
    };
    s += ".visible .entry mma_test(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)\n{\n";
    s += "    .reg .b32 %lane;\n    .reg .b64 %rd<12>;\n";
    s += &format!("    .reg .{} %a<{na}>;\n", reg_ty(f.a));
    s += &format!("    .reg .{} %b<{nb}>;\n", reg_ty(f.b));
    s += &format!("    .reg .{} %c<{nc}>;\n", reg_ty(f.c));
    s += &format!("    .reg .{} %d<{nd}>;\n", reg_ty(f.d));
    s += "    mov.u32 %lane, %laneid;\n";
    for (i, (p, count, ty)) in [
        ("pa", na, f.a),
        ("pb", nb, f.b),
        ("pc", nc, f.c),
        ("pd", nd, f.d),
    ]
    .iter()
    .enumerate()
    {
        let r = i + 1;
        s += &format!("    ld.param.u64 %rd{r}, [{p}];\n");
        s += &format!(
            "    mul.wide.u32 %rd{}, %lane, {};\n",
            r + 4,
            count * reg_bytes(ty)
        );
        s += &format!("    add.u64 %rd{r}, %rd{r}, %rd{};\n", r + 4);
    }
    let regs = |name: &str, n: usize| (0..n).map(|i| format!("%{name}{i}")).collect::<Vec<_>>();
    for (name, n, ty, base) in [("a", na, f.a, 1), ("b", nb, f.b, 2), ("c", nc, f.c, 3)] {
        for (i, r) in regs(name, n).iter().enumerate() {
            s += &format!(
                "    ld.global.{} {r}, [%rd{base}+{}];\n",
                reg_ty(ty),
                i * reg_bytes(ty)
            );
        }
    }
    s += &format!(
        "    mma.sync.aligned.{}.row.col.{}.{}.{}.{} {{{}}}, {{{}}}, {{{}}}, {{{}}};\n",
        f.shape,
        f.d,
        f.a,
        f.b,
        f.c,
        regs("d", nd).join(", "),
        regs("a", na).join(", "),
        regs("b", nb).join(", "),
        regs("c", nc).join(", ")
    );
    for (i, r) in regs("d", nd).iter().enumerate() {
        s += &format!(
            "    st.global.{} [%rd4+{}], {r};\n",
            reg_ty(f.d),
            i * reg_bytes(f.d)
        );
    }
    s += "    ret;\n}\n";
    s
}

/// Packs per-lane fragments (register-major within a lane) into little-endian bytes.
fn pack_fragments(
    ty: &str,
    elements_per_lane: usize,
    mut value_at: impl FnMut(usize, usize) -> u64,
) -> Vec<u8> {
    let per = per_reg(ty);
    let w = width(ty);
    let nregs = elements_per_lane / per;
    let mut out = Vec::new();
    for l in 0..32 {
        for r in 0..nregs {
            let mut reg = 0u64;
            for j in 0..per {
                let bits = value_at(l, r * per + j);
                reg |= if w == 64 {
                    bits
                } else {
                    (bits & ((1u64 << w) - 1)) << (j * w)
                };
            }
            out.extend_from_slice(&reg.to_le_bytes()[..reg_bytes(ty)]);
        }
    }
    out
}

struct MmaRun {
    /// D as a dense M x N matrix of f64 (integers exactly).
    got: Vec<f64>,
    expected: Vec<f64>,
    /// Raw D registers per lane, for hand checks.
    raw: Vec<u64>,
}

fn run_form(f: &Form, module: &Module) -> Result<MmaRun, ptxsim::Error> {
    let (m, n, k) = f.mnk();
    let (ea, eb, ec) = (m * k / 32, k * n / 32, m * n / 32);
    let mut av = vec![0f64; m * k];
    let mut bv = vec![0f64; k * n];
    let mut cv = vec![0f64; m * n];
    let a_bytes = pack_fragments(f.a, ea, |l, i| {
        let (r, c) = a_rc(f, l, i);
        let (v, bits) = input(f.a, r, c, k, 0);
        av[r * k + c] = v;
        bits
    });
    let b_bytes = pack_fragments(f.b, eb, |l, i| {
        let (r, c) = b_rc(f, l, i);
        let (v, bits) = input(f.b, r, c, n, 5);
        bv[r * n + c] = v;
        bits
    });
    let c_bytes = pack_fragments(f.c, ec, |l, i| {
        let (r, c) = c_rc(f, l, i);
        let v = match f.c {
            "s32" => (r * n + c) as f64 * 3.0 - 100.0,
            _ => (r * n + c) as f64 / 8.0 - 3.0,
        };
        cv[r * n + c] = v;
        encode(f.c, v)
    });
    let mut mem = Memory::new();
    let pa = mem.alloc_from(&a_bytes);
    let pb = mem.alloc_from(&b_bytes);
    let pc = mem.alloc_from(&c_bytes);
    let d_regs = ec / per_reg(f.d);
    let pd = mem.alloc(32 * d_regs * reg_bytes(f.d));
    module.launch(
        "mma_test",
        (1, 1, 1),
        (32, 1, 1),
        0,
        &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(pc), Arg::Ptr(pd)],
        &mut mem,
    )?;
    let raw: Vec<u64> = if reg_bytes(f.d) == 8 {
        mem.read::<u64>(pd, 32 * d_regs)?
    } else {
        mem.read::<u32>(pd, 32 * d_regs)?
            .into_iter()
            .map(u64::from)
            .collect()
    };
    let mut got = vec![f64::NAN; m * n];
    for l in 0..32 {
        for i in 0..ec {
            let per = per_reg(f.d);
            let reg = raw[l * d_regs + i / per];
            let w = width(f.d);
            let bits = if w == 64 {
                reg
            } else {
                (reg >> ((i % per) * w)) & ((1u64 << w) - 1)
            };
            let v = match f.d {
                "f32" => f32::from_bits(bits as u32) as f64,
                "f16" => half::f16::from_bits(bits as u16).to_f64(),
                "f64" => f64::from_bits(bits),
                "s32" => bits as u32 as i32 as f64,
                other => panic!("d type {other}"),
            };
            let (r, c) = c_rc(f, l, i);
            got[r * n + c] = v;
        }
    }
    let mut expected = vec![0f64; m * n];
    for r in 0..m {
        for c in 0..n {
            let mut acc = cv[r * n + c];
            for kk in 0..k {
                acc += av[r * k + kk] * bv[kk * n + c];
            }
            expected[r * n + c] = match f.d {
                "f32" => acc as f32 as f64,
                "f16" => half::f16::from_f64(acc).to_f64(),
                "s32" => acc as i64 as i32 as f64,
                _ => acc,
            };
        }
    }
    Ok(MmaRun { got, expected, raw })
}

const FORMS: &[Form] = &[
    Form {
        shape: "m8n8k4",
        d: "f64",
        a: "f64",
        b: "f64",
        c: "f64",
    },
    Form {
        shape: "m16n8k4",
        d: "f32",
        a: "tf32",
        b: "tf32",
        c: "f32",
    },
    Form {
        shape: "m16n8k8",
        d: "f32",
        a: "f16",
        b: "f16",
        c: "f32",
    },
    Form {
        shape: "m16n8k8",
        d: "f16",
        a: "f16",
        b: "f16",
        c: "f16",
    },
    Form {
        shape: "m16n8k8",
        d: "f32",
        a: "bf16",
        b: "bf16",
        c: "f32",
    },
    Form {
        shape: "m16n8k8",
        d: "f32",
        a: "tf32",
        b: "tf32",
        c: "f32",
    },
    Form {
        shape: "m16n8k16",
        d: "f32",
        a: "f16",
        b: "f16",
        c: "f32",
    },
    Form {
        shape: "m16n8k16",
        d: "f16",
        a: "f16",
        b: "f16",
        c: "f16",
    },
    Form {
        shape: "m16n8k16",
        d: "f32",
        a: "bf16",
        b: "bf16",
        c: "f32",
    },
    Form {
        shape: "m16n8k16",
        d: "s32",
        a: "s8",
        b: "s8",
        c: "s32",
    },
    Form {
        shape: "m16n8k16",
        d: "s32",
        a: "u8",
        b: "s8",
        c: "s32",
    },
    Form {
        shape: "m16n8k32",
        d: "s32",
        a: "s8",
        b: "s8",
        c: "s32",
    },
    Form {
        shape: "m16n8k32",
        d: "s32",
        a: "s8",
        b: "u8",
        c: "s32",
    },
    Form {
        shape: "m16n8k32",
        d: "f32",
        a: "e4m3",
        b: "e4m3",
        c: "f32",
    },
    Form {
        shape: "m16n8k32",
        d: "f32",
        a: "e5m2",
        b: "e4m3",
        c: "f32",
    }, // the .f64 shapes Hopper added (sm_90)
    Form {
        shape: "m16n8k4",
        d: "f64",
        a: "f64",
        b: "f64",
        c: "f64",
    },
    Form {
        shape: "m16n8k8",
        d: "f64",
        a: "f64",
        b: "f64",
        c: "f64",
    },
    Form {
        shape: "m16n8k16",
        d: "f64",
        a: "f64",
        b: "f64",
        c: "f64",
    },
];

#[test]
fn every_mma_form_matches_the_transcribed_layouts() {
    for f in FORMS {
        let text = kernel_text(f);
        let name = format!("mma_{}_{}_{}_{}_{}", f.shape, f.d, f.a, f.b, f.c);
        let module = common::module(&name, &text);
        let run = run_form(f, &module).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (i, (g, e)) in run.got.iter().zip(&run.expected).enumerate() {
            assert_eq!(g, e, "{name}: D element ({}, {})", i / 8, i % 8);
        }
    }
}

#[test]
fn mma_hand_computed_elements() {
    // m8n8k4 f64: A[r][k] = (4r + k + 1)/64, B[k][n] = (8k + n + 1)/64 times the sign pattern
    // of `input`; worked by hand for C = 0 would need the signs, so use D - C directly:
    // D[0][0] = C[0][0] + sum_k A[0][k] B[k][0].
    // A[0][k] = (k+1)/64 * s(k), s(i) = -1 if i % 3 == 0; B[k][0] = (8k+1+5)/64 * s(8k+5).
    //   k=0: A=-1/64, B=6/64 (s(5)=+1)   -> -6
    //   k=1: A= 2/64, B=14/64 (s(13)=+1) -> 28
    //   k=2: A= 3/64, B=-22/64 (s(21)=-1)-> -66
    //   k=3: A=-4/64, B=30/64 (s(29)=+1) -> -120
    //   sum = -164/4096; C[0][0] = -3.
    let f = FORMS[0];
    let module = common::module("mma_hand_f64", &kernel_text(&f));
    let run = run_form(&f, &module).unwrap();
    // Lane 0 holds D[0][0] in its first register.
    assert_eq!(f64::from_bits(run.raw[0]), -3.0 - 164.0 / 4096.0);
    // D[7][7]: row 7 -> groupID 7, col 7 -> threadID 3, element 1: lane 31, register 1.
    // A[7][k] = (29+k)/64 * s(28+k): k=0 s(28)=+, 1 s(29)=+, 2 s(30)=-, 3 s(31)=+
    // B[k][7] = (8k+13)/64 * s(8k+12): k=0 s(12)=-, 1 s(20)=+, 2 s(28)=+, 3 s(36)=-
    //   29*-13 + 30*21 + -31*29 + 32*-37 = -377 + 630 - 899 - 1184 = -1830
    // C[7][7] = 63/8 - 3 = 4.875.
    assert_eq!(f64::from_bits(run.raw[31 * 2 + 1]), 4.875 - 1830.0 / 4096.0);
}

#[test]
fn swapping_two_a_registers_is_caught() {
    // The mutation the kernel harness applies to real kernels, on a fixture: it must change D.
    for f in [
        FORMS[6],
        FORMS[5],
        FORMS[12],
        FORMS[14],
        FORMS[FORMS.len() - 1],
    ] {
        let text = kernel_text(&f);
        let mutant = text.replacen("{%a0, %a1,", "{%a1, %a0,", 1);
        assert_ne!(mutant, text);
        let module = common::module("mma_mutant", &mutant);
        let run = run_form(&f, &module).unwrap();
        assert_ne!(
            run.got, run.expected,
            "{f:?}: swapped A registers went unnoticed"
        );
    }
}

#[test]
fn mma_needs_the_whole_warp() {
    let f = FORMS[6];
    let module = common::module("mma_partial", &kernel_text(&f));
    let mut mem = Memory::new();
    let bufs: Vec<_> = (0..4).map(|_| mem.alloc(32 * 8 * 4)).collect();
    let args: Vec<Arg> = bufs.iter().map(|p| Arg::Ptr(*p)).collect();
    let err = module
        .launch("mma_test", (1, 1, 1), (16, 1, 1), 0, &args, &mut mem)
        .unwrap_err();
    assert!(err.to_string().contains("all 32 lanes"), "{err}");
}

// ---------------------------------------------------------------------------------------
// ldmatrix.

/// Shared tile of 4 matrices x 8 rows, each row 8 b16 values, rows `PITCH` elements apart
/// (padding, so a kernel that assumes contiguous rows reads the wrong data). Element value:
/// matrix*64 + row*8 + col + 1.
const PITCH: usize = 24;

fn ldmatrix_kernel(num: usize, trans: bool) -> String {
    let regs: Vec<String> = (0..num).map(|i| format!("%d{i}")).collect();
    let mut s = common::header("7.0", "sm_80");
    s += &format!(
        r#".visible .entry ldm(.param .u64 src, .param .u64 out)
{{
    .reg .pred %p;
    .reg .b16 %h;
    .reg .b32 %r<8>;
    .reg .b32 %d<4>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b16 tile[{total}];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, tile;
    // Copy the tile to shared memory, one b16 per thread per step.
    mov.u32 %r3, %r1;
copy:
    setp.ge.u32 %p, %r3, {total};
    @%p bra copied;
    mul.wide.u32 %rd3, %r3, 2;
    add.u64 %rd4, %rd1, %rd3;
    ld.global.b16 %h, [%rd4];
    shl.b32 %r4, %r3, 1;
    add.u32 %r4, %r2, %r4;
    st.shared.b16 [%r4], %h;
    add.u32 %r3, %r3, 32;
    bra copy;
copied:
    bar.sync 0;
    // Thread l gives the address of row l % 8 of matrix l / 8.
    mul.lo.u32 %r5, %r1, {pitch_bytes};
    add.u32 %r5, %r2, %r5;
    ldmatrix.sync.aligned.m8n8.x{num}{trans}.shared.b16 {{{regs}}}, [%r5];
    mul.wide.u32 %rd5, %r1, {out_bytes};
    add.u64 %rd6, %rd2, %rd5;
{stores}    ret;
}}
"#,
        total = 4 * 8 * PITCH,
        pitch_bytes = PITCH * 2,
        num = num,
        trans = if trans { ".trans" } else { "" },
        regs = regs.join(", "),
        out_bytes = num * 4,
        stores = regs
            .iter()
            .enumerate()
            .map(|(i, r)| format!("    st.global.b32 [%rd6+{}], {r};\n", 4 * i))
            .collect::<String>(),
    );
    s
}

fn tile_value(matrix: usize, row: usize, col: usize) -> u16 {
    (matrix * 64 + row * 8 + col + 1) as u16
}

#[test]
fn ldmatrix_x1_x2_x4_and_trans_deliver_the_documented_fragments() {
    let mut tile = vec![0u16; 4 * 8 * PITCH];
    for m in 0..4 {
        for r in 0..8 {
            for c in 0..8 {
                tile[(m * 8 + r) * PITCH + c] = tile_value(m, r, c);
            }
        }
    }
    for num in [1usize, 2, 4] {
        for trans in [false, true] {
            let name = format!("ldmatrix_x{num}_{trans}");
            let module = common::module(&name, &ldmatrix_kernel(num, trans));
            let mut mem = Memory::new();
            let src = mem.alloc_from(&tile);
            let out = mem.alloc(32 * num * 4);
            module
                .launch(
                    "ldm",
                    (1, 1, 1),
                    (32, 1, 1),
                    0,
                    &[Arg::Ptr(src), Arg::Ptr(out)],
                    &mut mem,
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let got: Vec<u32> = mem.read(out, 32 * num).unwrap();
            for l in 0..32 {
                for m in 0..num {
                    // PTX ISA figure "ldmatrix fragment layout for one 8x8 matrix": thread l
                    // holds row l/4, columns 2*(l%4) and 2*(l%4)+1 (low half first); with
                    // .trans, the matrix is read column-major: row and column trade places.
                    let (r, c0) = (l / 4, 2 * (l % 4));
                    let (lo, hi) = if trans {
                        (tile_value(m, c0, r), tile_value(m, c0 + 1, r))
                    } else {
                        (tile_value(m, r, c0), tile_value(m, r, c0 + 1))
                    };
                    let want = (hi as u32) << 16 | lo as u32;
                    assert_eq!(got[l * num + m], want, "{name}: lane {l} register {m}");
                }
            }
        }
    }
}

#[test]
fn ldmatrix_and_mma_compose_into_a_matrix_product() {
    // The canonical GEMM inner step: A (16x16, row-major) through ldmatrix.x4, B (16x8,
    // row-major K x N) through ldmatrix.x2.trans, then mma m16n8k16: D must be A*B + C,
    // whatever the individual layouts are. Transcription-free.
    let ptx = common::header("7.0", "sm_80")
        + r#".visible .entry gemm_tile(.param .u64 pa, .param .u64 pb, .param .u64 pd)
{
    .reg .b32 %r<16>;
    .reg .b32 %a<4>;
    .reg .b32 %b<2>;
    .reg .f32 %acc<4>;
    .reg .b64 %rd<16>;
    .reg .pred %p;
    .shared .align 16 .b16 sa[256];
    .shared .align 16 .b16 sb[128];
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pd];
    mov.u32 %r1, %laneid;
    // Stage A (512 bytes) and B (256 bytes) in shared memory, 16 bytes per thread per copy.
    mov.u32 %r2, sa;
    mov.u32 %r3, sb;
    shl.b32 %r4, %r1, 4;
    cvt.u64.u32 %rd4, %r4;
    add.u64 %rd5, %rd1, %rd4;
    add.u32 %r5, %r2, %r4;
    cp.async.cg.shared.global [%r5], [%rd5], 16;
    add.u64 %rd5, %rd2, %rd4;
    add.u32 %r5, %r3, %r4;
    setp.lt.u32 %p, %r1, 16;
    @%p cp.async.cg.shared.global [%r5], [%rd5], 16;
    cp.async.commit_group;
    cp.async.wait_group 0;
    bar.sync 0;
    // A: lane l points at row l % 16, column block (l / 16) * 8.
    and.b32 %r6, %r1, 15;
    shr.u32 %r7, %r1, 4;
    shl.b32 %r8, %r6, 5;
    shl.b32 %r9, %r7, 4;
    add.u32 %r8, %r8, %r9;
    add.u32 %r8, %r2, %r8;
    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%a0, %a1, %a2, %a3}, [%r8];
    // B: lane l (< 16) points at row k = l.
    shl.b32 %r10, %r6, 4;
    add.u32 %r10, %r3, %r10;
    ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%b0, %b1}, [%r10];
    mov.f32 %acc0, 0f00000000;
    mov.f32 %acc1, 0f3F800000;
    mov.f32 %acc2, 0fBF800000;
    mov.f32 %acc3, 0f40000000;
    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%acc0, %acc1, %acc2, %acc3}, {%a0, %a1, %a2, %a3}, {%b0, %b1}, {%acc0, %acc1, %acc2, %acc3};
    // D layout: row g (+8 for c2, c3), columns 2t, 2t+1.
    shr.u32 %r11, %r1, 2;
    and.b32 %r12, %r1, 3;
    shl.b32 %r13, %r11, 3;
    shl.b32 %r14, %r12, 1;
    add.u32 %r13, %r13, %r14;
    mul.wide.u32 %rd6, %r13, 4;
    add.u64 %rd7, %rd3, %rd6;
    st.global.v2.f32 [%rd7], {%acc0, %acc1};
    st.global.v2.f32 [%rd7+256], {%acc2, %acc3};
    ret;
}
"#;
    let module = common::module("gemm_tile", &ptx);
    let a: Vec<f64> = (0..256)
        .map(|i| ((i * 7) % 61) as f64 / 16.0 - 1.5)
        .collect();
    let b: Vec<f64> = (0..128)
        .map(|i| ((i * 5) % 37) as f64 / 8.0 - 2.0)
        .collect();
    let to_f16 = |v: &Vec<f64>| {
        v.iter()
            .map(|&x| half::f16::from_f64(x))
            .collect::<Vec<_>>()
    };
    let mut mem = Memory::new();
    let pa = mem.alloc_from(&to_f16(&a));
    let pb = mem.alloc_from(&to_f16(&b));
    let pd = mem.alloc(16 * 8 * 4);
    module
        .launch(
            "gemm_tile",
            (1, 1, 1),
            (32, 1, 1),
            0,
            &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(pd)],
            &mut mem,
        )
        .unwrap();
    let d: Vec<f32> = mem.read(pd, 128).unwrap();
    for r in 0..16 {
        for c in 0..8 {
            // C as the kernel set it: per lane (c0, c1, c2, c3) = (0, 1, -1, 2).
            let cinit = match (r >= 8, c % 2) {
                (false, 0) => 0.0,
                (false, _) => 1.0,
                (true, 0) => -1.0,
                (true, _) => 2.0,
            };
            let want: f64 = cinit + (0..16).map(|k| a[r * 16 + k] * b[k * 8 + c]).sum::<f64>();
            assert_eq!(d[r * 8 + c] as f64, want, "D[{r}][{c}]");
        }
    }
}
