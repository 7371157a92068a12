//! Hopper's warpgroup MMA (`wgmma`): every type family against a reference computed here from
//! layout functions written independently of ptxsim (the PTX ISA's register fragments, CUTLASS's
//! canonical K-major shared-memory layouts and swizzles), with A from a descriptor and from
//! registers, every swizzle mode; and every hazard the ISA leaves undefined is an error.

mod common;

use ptxsim::{Arg, Error, LaunchConfig, Memory, Module, Schedule};

#[derive(Clone, Copy, PartialEq, Debug)]
enum T {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
    S8,
    U8,
    F32,
    S32,
}

impl T {
    fn name(self) -> &'static str {
        match self {
            T::F16 => "f16",
            T::Bf16 => "bf16",
            T::Tf32 => "tf32",
            T::E4m3 => "e4m3",
            T::E5m2 => "e5m2",
            T::S8 => "s8",
            T::U8 => "u8",
            T::F32 => "f32",
            T::S32 => "s32",
        }
    }

    fn bytes(self) -> usize {
        match self {
            T::F16 | T::Bf16 => 2,
            T::Tf32 | T::F32 | T::S32 => 4,
            _ => 1,
        }
    }

    /// Bits of a small integer value `v` (exact in every format).
    fn encode(self, v: i64) -> u64 {
        let f = v as f32;
        match self {
            T::F16 => half::f16::from_f32(f).to_bits() as u64,
            T::Bf16 => half::bf16::from_f32(f).to_bits() as u64,
            T::Tf32 | T::F32 => f.to_bits() as u64,
            T::S32 => v as i32 as u32 as u64,
            T::S8 => v as i8 as u8 as u64,
            T::U8 => v as u8 as u64,
            T::E4m3 | T::E5m2 => (0..256u64)
                .find(|&b| self.decode_fp8(b) == v as f64)
                .expect("representable"),
        }
    }

    fn decode_fp8(self, b: u64) -> f64 {
        let (eb, mb, bias) = if self == T::E4m3 {
            (4, 3, 7)
        } else {
            (5, 2, 15)
        };
        let sign = if b >> 7 & 1 == 1 { -1.0 } else { 1.0 };
        let e = (b >> mb) & ((1 << eb) - 1);
        let m = b & ((1 << mb) - 1);
        if e == (1 << eb) - 1 && (self == T::E5m2 || m == 7) {
            return f64::NAN;
        }
        let mant = m as f64 / (1 << mb) as f64;
        sign * if e == 0 {
            mant * 2f64.powi(1 - bias)
        } else {
            (1.0 + mant) * 2f64.powi(e as i32 - bias)
        }
    }

    /// A value of D's type back to f64.
    fn decode_d(self, bits: u64) -> f64 {
        match self {
            T::F32 => f32::from_bits(bits as u32) as f64,
            T::F16 => half::f16::from_bits(bits as u16).to_f64(),
            T::S32 => bits as u32 as i32 as f64,
            _ => unreachable!(),
        }
    }

    /// Range of the small integers used as inputs of this type.
    fn range(self) -> (i64, i64) {
        if self == T::U8 {
            (0, 3)
        } else {
            (-2, 2)
        }
    }
}

/// How an operand sits in shared memory (K-major): swizzle width in bytes (0: none), and
/// for no swizzle the LBO/SBO; `kofs`: bytes into a swizzled row where this wgmma's 32 bytes
/// of K start (the start address is offset by it).
#[derive(Clone, Copy, Debug)]
struct Smem {
    swizzle: usize,
    lbo: usize,
    sbo: usize,
    kofs: usize,
}

impl Smem {
    const fn none(lbo: usize, sbo: usize) -> Smem {
        Smem {
            swizzle: 0,
            lbo,
            sbo,
            kofs: 0,
        }
    }

    const fn sw(width: usize, kofs: usize) -> Smem {
        Smem {
            swizzle: width,
            lbo: 16,
            sbo: 8 * width,
            kofs,
        }
    }

    /// Byte offset, from the tile base, of K byte `kb` (0..32) of row `r`; CUTLASS's canonical
    /// K-major layouts: INTERLEAVE ((8,m),(T,2)):((1T,SBO),(1,LBO)) in 16-byte units, and
    /// SW32/64/128 Swizzle<B,4,3> o ((8,m),(T,2)):((W/16 T,SBO),(1,T)).
    fn place(&self, base: usize, r: usize, kb: usize) -> usize {
        if self.swizzle == 0 {
            return base + (r % 8) * 16 + (r / 8) * self.sbo + (kb / 16) * self.lbo + kb % 16;
        }
        let o = base + (r / 8) * self.sbo + (r % 8) * self.swizzle + self.kofs + kb;
        let bbits = match self.swizzle {
            128 => 3,
            64 => 2,
            _ => 1,
        };
        let yyy = ((1usize << bbits) - 1) << 7;
        o ^ ((o & yyy) >> 3)
    }

    fn desc(&self, base: usize) -> u64 {
        let mode: u64 = match self.swizzle {
            0 => 0,
            128 => 1,
            64 => 2,
            _ => 3,
        };
        let start = (base + self.kofs) as u64;
        (start >> 4) | ((self.lbo as u64 >> 4) << 16) | ((self.sbo as u64 >> 4) << 32) | mode << 62
    }

    /// Bytes the tile of `rows` rows spans from its base.
    fn span(&self, rows: usize) -> usize {
        (0..rows)
            .flat_map(|r| (0..32).map(move |kb| (r, kb)))
            .map(|(r, kb)| self.place(0, r, kb) + 1)
            .max()
            .unwrap()
            .max(if self.swizzle > 0 {
                8 * self.swizzle
            } else {
                0
            })
    }
}

#[derive(Clone, Copy, Debug)]
struct Case {
    d: T,
    a: T,
    b: T,
    n: usize,
    a_regs: bool,
    a_smem: Smem,
    b_smem: Smem,
    scale_d: bool,
    neg_a: bool,
    neg_b: bool,
    satfinite: bool,
}

impl Case {
    fn new(d: T, a: T, b: T, n: usize) -> Case {
        Case {
            d,
            a,
            b,
            n,
            a_regs: false,
            a_smem: Smem::sw(128, 0),
            b_smem: Smem::sw(128, 0),
            scale_d: true,
            neg_a: false,
            neg_b: false,
            satfinite: false,
        }
    }

    fn k(&self) -> usize {
        32 / self.a.bytes()
    }

    fn float(&self) -> bool {
        self.d != T::S32
    }

    fn nregs(&self) -> usize {
        if self.d == T::F16 {
            self.n / 4
        } else {
            self.n / 2
        }
    }

    fn b_base(&self) -> usize {
        if self.a_regs {
            0
        } else {
            self.a_smem.span(64).div_ceil(1024) * 1024
        }
    }

    /// One size for every case (so that cases of one type and shape share a kernel).
    fn smem_bytes(&self) -> usize {
        let need = self.b_base() + self.b_smem.span(self.n);
        assert!(need <= SMEM, "{need}");
        SMEM
    }
}

/// The kernel: copy an image of shared memory in, fence.proxy.async, bar.sync, load C and
/// (register A) the A fragment per thread, one wgmma, store D per thread.
fn kernel_text(c: &Case) -> String {
    let k = c.k();
    let nregs = c.nregs();
    let dreg = if c.d == T::F32 { ".f32" } else { ".b32" };
    // Mixed .s8/.u8 needs PTX 8.4 (ptxas: "WGMMA with mixed integer types").
    let version = if c.a != c.b && c.d == T::S32 {
        "8.4"
    } else {
        "8.0"
    };
    let mut s = format!(
        ".version {version}\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 out, .param .u64 img, .param .u64 cin, .param .u64 ain, .param .u64 da, .param .u64 db)\n{{\n    .reg .pred %p<4>;\n    .reg .b32 %r<16>;\n    .reg .b64 %rd<16>;\n    .reg {dreg} %d<{nregs}>;\n    .reg .b32 %a<4>;\n    .shared .align 1024 .b8 smem[{}];\n",
        c.smem_bytes()
    );
    s += &format!(
        "    ld.param.u64 %rd1, [out];\n    ld.param.u64 %rd2, [img];\n    ld.param.u64 %rd3, [cin];\n    ld.param.u64 %rd4, [ain];\n    ld.param.u64 %rd10, [da];\n    ld.param.u64 %rd11, [db];\n    mov.u32 %r1, %tid.x;\n    mov.u32 %r2, %r1;\nCOPY:\n    setp.ge.u32 %p1, %r2, {};\n    @%p1 bra COPIED;\n    mul.wide.u32 %rd5, %r2, 16;\n    add.u64 %rd6, %rd2, %rd5;\n    ld.global.v4.u32 {{%r4, %r5, %r6, %r7}}, [%rd6];\n    mov.u32 %r8, smem;\n    shl.b32 %r9, %r2, 4;\n    add.u32 %r9, %r9, %r8;\n    st.shared.v4.u32 [%r9], {{%r4, %r5, %r6, %r7}};\n    add.u32 %r2, %r2, 128;\n    bra COPY;\nCOPIED:\n    fence.proxy.async.shared::cta;\n    bar.sync 0;\n",
        c.smem_bytes() / 16
    );
    s += &format!(
        "    mul.wide.u32 %rd7, %r1, {};\n    add.u64 %rd8, %rd3, %rd7;\n    add.u64 %rd9, %rd1, %rd7;\n",
        4 * nregs
    );
    if c.scale_d {
        for j in 0..nregs {
            s += &format!("    ld.global{dreg} %d{j}, [%rd8+{}];\n", 4 * j);
        }
    }
    if c.a_regs {
        s += "    mul.wide.u32 %rd12, %r1, 16;\n    add.u64 %rd12, %rd4, %rd12;\n";
        for j in 0..4 {
            s += &format!("    ld.global.b32 %a{j}, [%rd12+{}];\n", 4 * j);
        }
    }
    s += &format!(
        "    mov.u32 %r10, {};\n    setp.ne.u32 %p2, %r10, 0;\n    wgmma.fence.sync.aligned;\n",
        c.scale_d as u32
    );
    let dlist: Vec<String> = (0..nregs).map(|j| format!("%d{j}")).collect();
    let a = if c.a_regs {
        "{%a0, %a1, %a2, %a3}".to_string()
    } else {
        "%rd10".to_string()
    };
    let mut extra = String::new();
    if c.float() {
        let sc = |neg: bool| if neg { "-1" } else { "1" };
        extra += &format!(", {}, {}", sc(c.neg_a), sc(c.neg_b));
        if matches!(c.a, T::F16 | T::Bf16) {
            extra += if c.a_regs { ", 0" } else { ", 0, 0" };
        }
    }
    s += &format!(
        "    wgmma.mma_async.sync.aligned.m64n{}k{k}{}.{}.{}.{} {{{}}}, {a}, %rd11, %p2{extra};\n",
        c.n,
        if c.satfinite { ".satfinite" } else { "" },
        c.d.name(),
        c.a.name(),
        c.b.name(),
        dlist.join(", ")
    );
    s += "    wgmma.commit_group.sync.aligned;\n    wgmma.wait_group.sync.aligned 0;\n";
    for j in 0..nregs {
        s += &format!("    st.global{dreg} [%rd9+{}], %d{j};\n", 4 * j);
    }
    s += "    ret;\n}\n";
    s
}

/// Deterministic small integers.
struct Gen(u64);

impl Gen {
    fn next(&mut self, (lo, hi): (i64, i64)) -> i64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + ((self.0 >> 33) % (hi - lo + 1) as u64) as i64
    }
}

/// (row, col) of D element `e` of lane `l` of warp `w` (PTX ISA, wgmma "Register Fragments",
/// matrix D: 32-bit element e; an f16 register j holds elements 2j and 2j+1).
fn d_rc(w: usize, l: usize, e: usize) -> (usize, usize) {
    let (g, t) = (l / 4, l % 4);
    let row = 16 * w + g + if e % 4 >= 2 { 8 } else { 0 };
    let col = (e / 4) * 8 + t * 2 + (e & 1);
    (row, col)
}

/// (row, k) of A element `i` (of the fragment's elements, low to high) of lane `l`, for the
/// `mma.m16n8kK` A layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k32").
fn a_rc(ty: T, l: usize, i: usize) -> (usize, usize) {
    let (g, t) = (l / 4, l % 4);
    match ty.bytes() {
        2 => {
            // a0,a1: (g, 2t+{0,1}); a2,a3: (g+8, ..); a4,a5: (g, 2t+8+..); a6,a7: (g+8, 2t+8+..)
            let reg = i / 2;
            let row = g + if reg % 2 == 1 { 8 } else { 0 };
            let col = 2 * t + (i % 2) + if reg >= 2 { 8 } else { 0 };
            (row, col)
        }
        4 => {
            let row = g + if i % 2 == 1 { 8 } else { 0 };
            let col = t + if i >= 2 { 4 } else { 0 };
            (row, col)
        }
        _ => {
            let reg = i / 4;
            let row = g + if reg % 2 == 1 { 8 } else { 0 };
            let col = 4 * t + (i % 4) + if reg >= 2 { 16 } else { 0 };
            (row, col)
        }
    }
}

struct Inputs {
    img: Vec<u8>,
    c_regs: Vec<u32>,
    a_regs: Vec<u32>,
    da: u64,
    db: u64,
    expect: Vec<f64>,
}

fn inputs(c: &Case, seed: u64) -> Inputs {
    let (n, k) = (c.n, c.k());
    let mut g = Gen(seed);
    let a: Vec<i64> = (0..64 * k).map(|_| g.next(c.a.range())).collect();
    let b: Vec<i64> = (0..k * n).map(|_| g.next(c.b.range())).collect(); // b[kk * n + col]
    let cm: Vec<i64> = (0..64 * n).map(|_| g.next((-4, 4))).collect();
    // Garbage everywhere first, so that a wrong address reads something else.
    let mut img: Vec<u8> = (0..c.smem_bytes())
        .map(|i| (i as u64).wrapping_mul(2654435761) as u8 | 0x41)
        .collect();
    let mut put = |off: usize, bits: u64, bytes: usize| {
        for i in 0..bytes {
            img[off + i] = (bits >> (8 * i)) as u8;
        }
    };
    let (ea, eb) = (c.a.bytes(), c.b.bytes());
    if !c.a_regs {
        for r in 0..64 {
            for kk in 0..k {
                put(c.a_smem.place(0, r, kk * ea), c.a.encode(a[r * k + kk]), ea);
            }
        }
    }
    let bb = c.b_base();
    for col in 0..n {
        for kk in 0..k {
            put(
                c.b_smem.place(bb, col, kk * eb),
                c.b.encode(b[kk * n + col]),
                eb,
            );
        }
    }
    let nregs = c.nregs();
    let per = if c.d == T::F16 { 2 } else { 1 };
    let mut c_regs = vec![0u32; 128 * nregs];
    for t in 0..128 {
        for j in 0..nregs {
            let mut v = 0u64;
            for h in 0..per {
                let (r, col) = d_rc(t / 32, t % 32, j * per + h);
                v |= c.d.encode(cm[r * n + col]) << (16 * h);
            }
            c_regs[t * nregs + j] = v as u32;
        }
    }
    let mut a_regs = vec![0u32; 128 * 4];
    let per_a = 4 / ea;
    for t in 0..128 {
        for i in 0..4 * per_a {
            let (r, col) = a_rc(c.a, t % 32, i);
            let bits = c.a.encode(a[(16 * (t / 32) + r) * k + col]);
            a_regs[t * 4 + i / per_a] |= ((bits as u32) & ((1u64 << (8 * ea)) - 1) as u32)
                .wrapping_shl((8 * ea * (i % per_a)) as u32);
        }
    }
    let sa = if c.neg_a { -1 } else { 1 };
    let sb = if c.neg_b { -1 } else { 1 };
    let mut expect = vec![0f64; 64 * n];
    for r in 0..64 {
        for col in 0..n {
            let mut acc: i64 = if c.scale_d { cm[r * n + col] } else { 0 };
            for kk in 0..k {
                acc += sa * sb * a[r * k + kk] * b[kk * n + col];
            }
            expect[r * n + col] = acc as f64;
        }
    }
    Inputs {
        img,
        c_regs,
        a_regs,
        da: c.a_smem.desc(0),
        db: c.b_smem.desc(bb),
        expect,
    }
}

/// Runs `c`; D as a 64 x N matrix of values, or the launch's error.
fn run_case(c: &Case, inp: &Inputs, schedule: Schedule) -> Result<Vec<f64>, Error> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static MODULES: Mutex<Option<HashMap<String, Module>>> = Mutex::new(None);
    let text = kernel_text(c);
    let module = {
        let mut cache = MODULES.lock().unwrap_or_else(|e| e.into_inner());
        let map = cache.get_or_insert_with(HashMap::new);
        map.entry(text.clone())
            .or_insert_with(|| {
                common::module(
                    &format!("wgmma_{:?}_{:?}_{:?}_n{}", c.d, c.a, c.b, c.n),
                    &text,
                )
            })
            .clone()
    };
    launch(&module, c, inp, schedule)
}

fn launch(module: &Module, c: &Case, inp: &Inputs, schedule: Schedule) -> Result<Vec<f64>, Error> {
    let nregs = c.nregs();
    let mut mem = Memory::new();
    let out = mem.alloc(128 * nregs * 4);
    let img = mem.alloc_from(&inp.img);
    let cin = mem.alloc_from(&inp.c_regs);
    let ain = mem.alloc_from(&inp.a_regs);
    let mut cfg = LaunchConfig::new((1, 1, 1), (128, 1, 1), 0);
    cfg.schedule = schedule;
    module.launch_with(
        "k",
        &cfg,
        &[
            Arg::Ptr(out),
            Arg::Ptr(img),
            Arg::Ptr(cin),
            Arg::Ptr(ain),
            Arg::U64(inp.da),
            Arg::U64(inp.db),
        ],
        &mut mem,
    )?;
    let raw = mem.read::<u32>(out, 128 * nregs)?;
    let per = if c.d == T::F16 { 2 } else { 1 };
    let mut d = vec![f64::NAN; 64 * c.n];
    for t in 0..128 {
        for j in 0..nregs {
            for h in 0..per {
                let (r, col) = d_rc(t / 32, t % 32, j * per + h);
                let bits = if per == 2 {
                    (raw[t * nregs + j] >> (16 * h)) as u64 & 0xffff
                } else {
                    raw[t * nregs + j] as u64
                };
                d[r * c.n + col] = c.d.decode_d(bits);
            }
        }
    }
    Ok(d)
}

fn check(c: Case) {
    let inp = inputs(&c, 7 + c.n as u64);
    let got = run_case(&c, &inp, Schedule::InOrder).unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert_eq!(got, inp.expect, "{c:?}");
}

const SMEM: usize = 45056;

const NONE: Smem = Smem::none(1216, 144);

#[test]
fn every_type_family_matches_the_reference() {
    let fams = [
        (T::F16, T::F16, T::F16),
        (T::F32, T::F16, T::F16),
        (T::F32, T::Bf16, T::Bf16),
        (T::F32, T::Tf32, T::Tf32),
        (T::F32, T::E4m3, T::E4m3),
        (T::F32, T::E5m2, T::E5m2),
        (T::F16, T::E4m3, T::E5m2),
        (T::S32, T::S8, T::S8),
        (T::S32, T::U8, T::S8),
    ];
    for (d, a, b) in fams {
        for n in [8, 16] {
            for a_regs in [false, true] {
                let mut c = Case::new(d, a, b, n);
                c.a_regs = a_regs;
                check(c);
            }
        }
    }
}

#[test]
fn n256_and_odd_n() {
    check(Case::new(T::F32, T::Bf16, T::Bf16, 256));
    let mut c = Case::new(T::F16, T::F16, T::F16, 256);
    c.a_regs = true;
    check(c);
    check(Case::new(T::F32, T::E4m3, T::E4m3, 24));
    check(Case::new(T::S32, T::S8, T::U8, 48));
}

#[test]
fn every_swizzle_mode_and_k_offsets() {
    let modes = [
        NONE,
        Smem::none(16 * 9, 2048),
        Smem::sw(32, 0),
        Smem::sw(64, 0),
        Smem::sw(64, 32),
        Smem::sw(128, 0),
        Smem::sw(128, 32),
        Smem::sw(128, 64),
        Smem::sw(128, 96),
    ];
    for (d, a) in [(T::F32, T::F16), (T::F32, T::Tf32), (T::S32, T::S8)] {
        for &sa in &modes {
            for &sb in &[NONE, Smem::sw(64, 32), Smem::sw(128, 32)] {
                let mut c = Case::new(d, a, a, 16);
                c.a_smem = sa;
                c.b_smem = sb;
                check(c);
                c.a_smem = sb;
                c.b_smem = sa;
                check(c);
            }
        }
    }
}

#[test]
fn scale_d_false_and_negated_operands() {
    for (d, a) in [(T::F32, T::F16), (T::F32, T::E5m2), (T::F32, T::Tf32)] {
        let mut c = Case::new(d, a, a, 16);
        c.scale_d = false;
        check(c);
        c.scale_d = true;
        c.neg_a = true;
        check(c);
        c.neg_a = false;
        c.neg_b = true;
        check(c);
        c.neg_a = true;
        c.a_regs = true;
        check(c);
    }
    let mut c = Case::new(T::S32, T::S8, T::S8, 8);
    c.satfinite = true;
    c.scale_d = false;
    check(c);
}

/// A descriptor that names the wrong swizzle mode, the wrong LBO or SBO, or the wrong K block
/// reads other bytes: the result differs (a planted mistake cannot pass).
#[test]
fn wrong_descriptors_give_wrong_results() {
    let base = Case::new(T::F32, T::F16, T::F16, 16);
    let mut c = base;
    c.b_smem = NONE;
    c.a_smem = Smem::sw(128, 32);
    let inp = inputs(&c, 3);
    assert_eq!(run_case(&c, &inp, Schedule::InOrder).unwrap(), inp.expect);
    let bb = c.b_base();
    let wrong_descs = [
        ("A swizzle 64B for 128B", Smem::sw(64, 32).desc(0), inp.db),
        ("A swizzle none", Smem::none(16, 1024).desc(32), inp.db),
        ("A K block +0 for +32", Smem::sw(128, 0).desc(0), inp.db),
        ("A 32B for 128B", Smem::sw(32, 32).desc(0), inp.db),
        ("B wrong LBO", inp.da, Smem::none(1216 + 16, 144).desc(bb)),
        ("B wrong SBO", inp.da, Smem::none(1216, 128).desc(bb)),
        ("B swizzled", inp.da, Smem::sw(128, 0).desc(bb)),
    ];
    let module = common::module("wgmma_wrong", &kernel_text(&c));
    for (what, da, db) in wrong_descs {
        let bad = Inputs {
            img: inp.img.clone(),
            c_regs: inp.c_regs.clone(),
            a_regs: inp.a_regs.clone(),
            da,
            db,
            expect: vec![],
        };
        if let Ok(got) = launch(&module, &c, &bad, Schedule::InOrder) {
            assert_ne!(
                got, inp.expect,
                "{what}: same result as the right descriptor"
            );
        }
    }
}

#[test]
fn shuffled_schedules_give_the_same_results() {
    let mut c = Case::new(T::F32, T::Bf16, T::Bf16, 32);
    c.a_regs = true;
    let inp = inputs(&c, 11);
    for seed in 0..6 {
        let got = run_case(&c, &inp, Schedule::Shuffled { seed }).unwrap();
        assert_eq!(got, inp.expect, "seed {seed}");
    }
}

// ---------------------------------------------------------------------------------------
// Hazards: a small m64n8k16 f16 -> f32 kernel, with a hook where each test plants a mistake.

/// A kernel of `threads` threads: A (64x16 f16) at smem 0 and B (8x16) at 2048, without
/// swizzle (LBO 128, SBO 256), both filled by st.shared; one wgmma with accumulators %f0..%f3 cleared by mov. The
/// markers `@BEFORE_FENCE`, `@AFTER_FENCE`, `@AFTER_MMA`, `@AFTER_COMMIT`, `@AFTER_WAIT` are
/// replaced by test code (empty by default).
const HAZARD: &str = r#".version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<8>;
    .reg .b32 %a<4>;
    .shared .align 1024 .b8 smem[4096];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 4;
    mov.u32 %r3, 0;
    setp.lt.u32 %p2, %r1, 128;
    @%p2 st.shared.v4.u32 [%r2], {%r3, %r3, %r3, %r3};
    @%p2 st.shared.v4.u32 [%r2+2048], {%r3, %r3, %r3, %r3};
    @PROXY_FENCE
    bar.sync 0;
    mov.f32 %f0, 0f00000000;
    mov.f32 %f1, 0f00000000;
    mov.f32 %f2, 0f00000000;
    mov.f32 %f3, 0f00000000;
    mov.b32 %a0, 0;
    mov.b32 %a1, 0;
    mov.b32 %a2, 0;
    mov.b32 %a3, 0;
    mov.u64 %rd2, 0x0000001000080000;
    mov.u64 %rd3, 0x0000001000080080;
    setp.ne.u32 %p1, 1, 0;
    @BEFORE_FENCE
    wgmma.fence.sync.aligned;
    @AFTER_FENCE
    @MMA
    @AFTER_MMA
    wgmma.commit_group.sync.aligned;
    @AFTER_COMMIT
    wgmma.wait_group.sync.aligned 0;
    @AFTER_WAIT
    mul.wide.u32 %rd4, %r1, 16;
    add.u64 %rd5, %rd1, %rd4;
    st.global.v4.f32 [%rd5], {%f0, %f1, %f2, %f3};
    ret;
}
"#;

const MMA_DESC: &str = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd2, %rd3, %p1, 1, 1, 0, 0;";
const MMA_REGS: &str = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, {%a0, %a1, %a2, %a3}, %rd3, %p1, 1, 1, 0;";

fn hazard(edits: &[(&str, &str)]) -> String {
    let mut t = HAZARD.to_string();
    for (k, v) in edits {
        t = t.replace(k, v);
    }
    for k in [
        "@PROXY_FENCE",
        "@BEFORE_FENCE",
        "@AFTER_FENCE",
        "@AFTER_MMA",
        "@AFTER_COMMIT",
        "@AFTER_WAIT",
    ] {
        let v = if k == "@PROXY_FENCE" {
            "fence.proxy.async.shared::cta;"
        } else {
            ""
        };
        t = t.replace(k, v);
    }
    t.replace("@MMA", MMA_DESC)
}

fn run_hazard(text: &str, threads: u32, schedule: Schedule) -> Result<(), Error> {
    let module = Module::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut mem = Memory::new();
    let out = mem.alloc(threads as usize * 16);
    let mut cfg = LaunchConfig::new((1, 1, 1), (threads, 1, 1), 0);
    cfg.schedule = schedule;
    module
        .launch_with("k", &cfg, &[Arg::Ptr(out)], &mut mem)
        .map(|_| ())
}

fn expect_err(text: &str, threads: u32, needles: &[&str]) -> Error {
    let err = match run_hazard(text, threads, Schedule::InOrder) {
        Ok(()) => panic!("runs, but must fail with {needles:?}:\n{text}"),
        Err(e) => e,
    };
    let msg = err.to_string();
    for n in needles {
        assert!(msg.contains(n), "`{msg}` lacks `{n}`");
    }
    assert!(matches!(err, Error::Runtime { .. }), "{err:?}");
    err
}

#[test]
fn the_hazard_kernel_itself_runs() {
    for threads in [128, 256] {
        run_hazard(&hazard(&[]), threads, Schedule::InOrder).unwrap();
        for seed in 0..4 {
            run_hazard(&hazard(&[]), threads, Schedule::Shuffled { seed }).unwrap();
        }
    }
    run_hazard(&hazard(&[("@MMA", MMA_REGS)]), 128, Schedule::InOrder).unwrap();
    // A chain of two operations on the same accumulators needs no wait in between.
    let chain = format!("{MMA_DESC}\n    {MMA_DESC}");
    run_hazard(&hazard(&[("@MMA", &chain)]), 128, Schedule::InOrder).unwrap();
    // Groups: wait_group 1 leaves the newest group pending, wait_group 0 completes it.
    let two = format!(
        "{MMA_DESC}\n    wgmma.commit_group.sync.aligned;\n    wgmma.wait_group.sync.aligned 1;\n    {MMA_DESC}"
    );
    run_hazard(&hazard(&[("@MMA", &two)]), 128, Schedule::InOrder).unwrap();
}

#[test]
fn a_chain_accumulates_and_waits_see_results() {
    // Two chained operations: D = A*B + (A*B + C) with A = B = all ones: 16 + 16 + C.
    let text = HAZARD
        .replace("@PROXY_FENCE", "fence.proxy.async.shared::cta;")
        .replace("mov.u32 %r3, 0;", "mov.u32 %r3, 0x3c003c00;")
        .replace("mov.f32 %f0, 0f00000000;", "mov.f32 %f0, 0f3F800000;")
        .replace("@MMA", &format!("{MMA_DESC}\n    {MMA_DESC}"));
    let text = [
        "@BEFORE_FENCE",
        "@AFTER_FENCE",
        "@AFTER_MMA",
        "@AFTER_COMMIT",
        "@AFTER_WAIT",
    ]
    .iter()
    .fold(text, |t, k| t.replace(k, ""));
    let module = Module::parse(&text).unwrap();
    let mut mem = Memory::new();
    let out = mem.alloc(128 * 16);
    module
        .launch("k", (1, 1, 1), (128, 1, 1), 0, &[Arg::Ptr(out)], &mut mem)
        .unwrap();
    let d = mem.read::<f32>(out, 128 * 4).unwrap();
    for (i, v) in d.iter().enumerate() {
        let want = if i % 4 == 0 { 33.0 } else { 32.0 };
        assert_eq!(*v, want, "element {i}");
    }
}

#[test]
fn mma_async_before_any_wgmma_fence() {
    let t = hazard(&[("wgmma.fence.sync.aligned;", "")]);
    expect_err(
        &t,
        128,
        &["wgmma.fence", "first wgmma.mma_async", "line 35"],
    );
}

#[test]
fn accumulator_written_after_the_fence() {
    let t = hazard(&[("@AFTER_FENCE", "mov.f32 %f2, 0f00000000;")]);
    expect_err(
        &t,
        128,
        &["`%f2`", "after its last wgmma.fence", "at line 34"],
    );
    // The same write before the fence is fine.
    let ok = hazard(&[("@BEFORE_FENCE", "mov.f32 %f2, 0f00000000;")]);
    run_hazard(&ok, 128, Schedule::InOrder).unwrap();
    // A register of a register-A wgmma, likewise.
    let t = hazard(&[("@AFTER_FENCE", "mov.b32 %a1, 0;"), ("@MMA", MMA_REGS)]);
    expect_err(
        &t,
        128,
        &["`%a1`", "A register", "after its last wgmma.fence"],
    );
}

#[test]
fn accumulator_read_or_written_while_pending() {
    let t = hazard(&[("@AFTER_COMMIT", "add.f32 %f5, %f1, %f1;")]);
    let e = expect_err(&t, 128, &["reads `%f1`", "pending", "wgmma.wait_group"]);
    assert_eq!(e.line(), Some(38));
    let t = hazard(&[("@AFTER_MMA", "mov.f32 %f3, 0f00000000;")]);
    expect_err(&t, 128, &["writes `%f3`", "pending"]);
    // After the wait, the same read is fine.
    let ok = hazard(&[("@AFTER_WAIT", "add.f32 %f5, %f1, %f1;")]);
    run_hazard(&ok, 128, Schedule::InOrder).unwrap();
}

#[test]
fn a_registers_written_while_pending() {
    let t = hazard(&[("@MMA", MMA_REGS), ("@AFTER_COMMIT", "mov.b32 %a2, 7;")]);
    expect_err(&t, 128, &["writes `%a2`", "A-fragment register", "pending"]);
}

#[test]
fn generic_writes_need_fence_proxy_async() {
    let t = hazard(&[("@PROXY_FENCE", "")]);
    expect_err(&t, 128, &["fence.proxy.async", "generic-proxy", "line 35"]);
    // A fence before the write does not count.
    let t = HAZARD
        .replace("mov.u32 %r3, 0;", "mov.u32 %r3, 0;\n    fence.proxy.async;")
        .replace("@PROXY_FENCE", "");
    expect_err(&hazard_fill(&t), 128, &["fence.proxy.async"]);
}

fn hazard_fill(t: &str) -> String {
    let mut t = t.to_string();
    for k in [
        "@BEFORE_FENCE",
        "@AFTER_FENCE",
        "@AFTER_MMA",
        "@AFTER_COMMIT",
        "@AFTER_WAIT",
    ] {
        t = t.replace(k, "");
    }
    t.replace("@MMA", MMA_DESC)
}

#[test]
fn a_barrier_is_needed_between_another_warps_write_and_the_wgmma() {
    // Warp 4 (of a second warpgroup) writes B after the barrier: a race with the wgmma.
    let t = hazard(&[(
        "@BEFORE_FENCE",
        "setp.eq.u32 %p3, %r1, 128;\n    @%p3 st.shared.u32 [2048], %r3;\n    @%p3 fence.proxy.async;",
    )]);
    expect_err(&t, 256, &["race", "2048"]);
}

#[test]
fn shared_memory_written_while_a_wgmma_reads_it() {
    let t = hazard(&[("@AFTER_COMMIT", "st.shared.u32 [2048], %r3;")]);
    expect_err(
        &t,
        128,
        &["which the wgmma.mma_async at line 35 reads", "pending"],
    );
}

#[test]
fn exiting_with_groups_pending() {
    const STORE: &str = "st.global.v4.f32 [%rd5], {%f0, %f1, %f2, %f3};";
    let t = hazard(&[("wgmma.wait_group.sync.aligned 0;", ""), (STORE, "")]);
    expect_err(&t, 128, &["exits with 1 wgmma.mma_async", "line 35"]);
    // Never committed either.
    let t = hazard(&[
        ("wgmma.wait_group.sync.aligned 0;", ""),
        ("wgmma.commit_group.sync.aligned;", ""),
        (STORE, ""),
    ]);
    expect_err(&t, 128, &["exits with 1 wgmma.mma_async"]);
    // wait_group 1 leaves the only group pending.
    let t = hazard(&[
        (
            "wgmma.wait_group.sync.aligned 0;",
            "wgmma.wait_group.sync.aligned 1;",
        ),
        (STORE, ""),
    ]);
    expect_err(&t, 128, &["exits with"]);
}

#[test]
fn the_warpgroup_must_execute_it_together() {
    // Lane-divergent guard.
    let t = hazard(&[
        (
            "@BEFORE_FENCE",
            "and.b32 %r6, %r1, 1;\n    setp.eq.u32 %p3, %r6, 0;",
        ),
        ("@MMA", &format!("@%p3 {MMA_DESC}")),
    ]);
    expect_err(&t, 128, &["wgmma.mma_async", "all 32 lanes"]);
    // Warps 1 and 3 skip it.
    let t = hazard(&[
        (
            "@BEFORE_FENCE",
            "and.b32 %r6, %r1, 32;\n    setp.eq.u32 %p3, %r6, 0;",
        ),
        ("@MMA", &format!("@%p3 {MMA_DESC}")),
    ]);
    expect_err(&t, 128, &["exited while warp 0 waits"]);
    // Warps 2 and 3 execute another wgmma.mma_async instruction.
    let t = hazard(&[
        ("@BEFORE_FENCE", "setp.ge.u32 %p3, %r1, 64;"),
        (
            "@MMA",
            &format!(
                "@%p3 bra OTHER;\n    {MMA_DESC}\n    bra JOIN;\nOTHER:\n    {MMA_DESC}\nJOIN:"
            ),
        ),
    ]);
    expect_err(&t, 128, &["another one"]);
    // A block of 96 threads has no complete warpgroup.
    expect_err(&hazard(&[]), 96, &["incomplete", "96 threads"]);
}

#[test]
fn warpgroup_waits_while_a_warp_is_at_a_barrier() {
    let t = hazard(&[(
        "@BEFORE_FENCE",
        "setp.ge.u32 %p3, %r1, 96;\n    @%p3 bar.sync 1, 64;",
    )]);
    expect_err(&t, 128, &["waits at this wgmma.mma_async", "deadlock"]);
}

#[test]
fn descriptors_out_of_bounds_or_with_a_base_offset() {
    let t = hazard(&[("0x0000001000080080", "0x0000001000080300")]);
    expect_err(&t, 128, &["outside the block's 4096 bytes"]);
    let t = hazard(&[("0x0000001000080080", "0x0002001000080080")]);
    expect_err(&t, 128, &["base offset 1"]);
}

#[test]
fn scale_d_true_reads_never_written_accumulators() {
    let t = hazard(&[("mov.f32 %f1, 0f00000000;", "")]);
    expect_err(&t, 128, &["`%f1`", "never written"]);
    // scale-d false: D is not read.
    let t = hazard(&[
        ("mov.f32 %f1, 0f00000000;", ""),
        ("setp.ne.u32 %p1, 1, 0;", "setp.ne.u32 %p1, 0, 0;"),
    ]);
    run_hazard(&t, 128, Schedule::InOrder).unwrap();
}

// ---------------------------------------------------------------------------------------
// Headers and forms.

#[test]
fn wgmma_needs_sm_90a_and_ptx_8_0() {
    let ok = hazard(&[]);
    Module::parse(&ok).unwrap();
    for (from, to, needle) in [
        (".target sm_90a", ".target sm_90", "sm_90a"),
        (
            ".version 8.0\n.target sm_90a",
            ".version 7.8\n.target sm_90",
            "needs .version 8.0",
        ),
        (
            ".version 8.0\n.target sm_90a",
            ".version 8.6\n.target sm_100a",
            "sm_90a",
        ),
    ] {
        let t = ok.replace(from, to);
        let err = Module::parse(&t)
            .err()
            .unwrap_or_else(|| panic!("{to} parses"));
        assert!(err.to_string().contains(needle), "{to}: {err}");
        assert!(matches!(err, Error::Parse { .. }), "{err:?}");
    }
    // sm_90a itself needs PTX 8.0.
    let err = Module::parse(&ok.replace(".version 8.0", ".version 7.8")).unwrap_err();
    assert!(err.to_string().contains("needs .version 8.0"), "{err}");
}

#[test]
fn forms_the_isa_does_not_have_are_refused() {
    for (mma, needle) in [
        // Trans-a with A from registers, .bf16 to .f16, tf32 with k16, a missing imm-trans.
        ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, {%a0, %a1, %a2, %a3}, %rd3, %p1, 1, 1, 0, 0;", "7 operands"),
        ("wgmma.mma_async.sync.aligned.m64n8k16.f16.bf16.bf16 {%a0, %a1}, %rd2, %rd3, %p1, 1, 1, 0, 0;", "no form"),
        ("wgmma.mma_async.sync.aligned.m64n8k16.f32.tf32.tf32 {%f0, %f1, %f2, %f3}, %rd2, %rd3, %p1, 1, 1;", "K must be 8"),
        ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd2, %rd3, %p1, 1, 1;", "8 operands"),
        ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd2, %rd3, %p1, 2, 1, 0, 0;", "imm-scale-a"),
        ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1}, %rd2, %rd3, %p1, 1, 1, 0, 0;", "2 registers"),
        ("wgmma.mma_async.sync.aligned.m64n12k16.f32.f16.f16 {%f0, %f1, %f2, %f3, %f4, %f5}, %rd2, %rd3, %p1, 1, 1, 0, 0;", "multiple of 8"),
        ("wgmma.mma_async.sync.aligned.m64n40k32.s32.s8.s8 {%f0, %f1}, %rd2, %rd3, %p1;", "multiple of 16"),
        ("wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8 {%a0, %a1, %a2, %a3}, %rd2, %rd3, %p1, 1, 1;", "4 operands"),
        ("wgmma.mma_async.sync.aligned.m64n8k32.satfinite.f32.e4m3.e4m3 {%f0, %f1, %f2, %f3}, %rd2, %rd3, %p1, 1, 1;", "satfinite"),
        ("wgmma.mma_async.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd2, %rd3, %p1, 1, 1, 0, 0;", ".sync.aligned"),
    ] {
        let t = hazard(&[("@MMA", mma)]);
        let err = Module::parse(&t).err().unwrap_or_else(|| panic!("{mma} parses"));
        assert!(err.to_string().contains(needle), "{mma}: {err}");
        assert_eq!(err.line(), Some(35), "{err}");
    }
    // MN-major (transposed) operands are not implemented: refused, never run as K-major.
    let t = hazard(&[("@MMA", "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd2, %rd3, %p1, 1, 1, 0, 1;")]);
    let err = Module::parse(&t).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("imm-trans-b = 1"), "{err}");
}
