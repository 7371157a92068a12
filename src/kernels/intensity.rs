//! The arithmetic-intensity sweep's modules, expanded from `kernels/intensity.ptx.in`: one per
//! precision and k. What each computes and how it is checked is the case catalogue's
//! ([`crate::cases::intensity`]); this module only writes the PTX text.

use crate::cases::intensity::*;
use crate::cases::Precision;

/// The template every sweep kernel is expanded from.
pub const TEMPLATE: &str = super::INTENSITY_TEMPLATE;

/// The PTX instruction of `precision`'s FMA (`fma.rn.f32`, `mad.lo.s32`, …).
pub fn fma_instruction(precision: Precision) -> &'static str {
    match precision {
        Precision::F64 => "fma.rn.f64",
        Precision::F32 => "fma.rn.f32",
        Precision::F16x2 => "fma.rn.f16x2",
        Precision::Bf16x2 => "fma.rn.bf16x2",
        Precision::I32 => "mad.lo.s32",
        other => panic!("{other} has no sweep kernel"),
    }
}

/// FMA steps per chain unrolled in the kernels' code: k up to this is unrolled whole; a larger k
/// runs a loop of `k / UNROLLED_STEPS` trips over a block of this many steps (then the
/// `k % UNROLLED_STEPS` left, unrolled). Fully unrolled, k = 1024 made an f32 main loop of 8192
/// FFMAs, 128 KiB of SASS, which no SM's instruction cache holds; the f32 loop block is 512
/// FFMAs (8 KiB). Beside them ptxas puts only the loop's count, compare and branch: 3 or 4
/// instructions (under 0.8 %). (`a` and `b` pass through a select ptxas cannot fold: read from
/// the parameter bank, f16x2's were unpacked again on every trip on sm_80, 9 instructions.)
pub const UNROLLED_STEPS: u32 = 64;

/// `k` FMAs on each of the registers `%x0 … %x{chains-1}`, interleaved step by step so the
/// chains are independent in flight, and the steps counted in `%r12` (one add per block of
/// steps, not per FMA): unrolled up to [`UNROLLED_STEPS`], else a loop at `label` (see there).
fn fma_steps(precision: Precision, k: u32, chains: usize, label: &str) -> String {
    let looped = if k > UNROLLED_STEPS {
        k / UNROLLED_STEPS * UNROLLED_STEPS
    } else {
        0
    };
    let mut out = String::new();
    if looped > 0 {
        out.push_str(&format!(
            "    add.u32 %r13, %r12, {looped};        // the step count at this loop's end\n\
             {label}:\n    .pragma \"nounroll\";\n"
        ));
        out.push_str(&fma_block(precision, UNROLLED_STEPS, chains));
        out.push_str(&format!(
            "    add.u32 %r12, %r12, {UNROLLED_STEPS};\n    setp.ne.u32 %p0, %r12, %r13;\n    \
             @%p0 bra.uni {label};\n"
        ));
    }
    let rest = k - looped;
    out.push_str(&fma_block(precision, rest, chains));
    if rest > 0 {
        out.push_str(&format!("    add.u32 %r12, %r12, {rest};\n"));
    }
    out
}

/// `k` FMAs on each of the registers `%x0 … %x{chains-1}`, unrolled, interleaved step by step.
fn fma_block(precision: Precision, k: u32, chains: usize) -> String {
    let fma = fma_instruction(precision);
    let mut out = String::with_capacity(k as usize * chains * 32);
    for _ in 0..k {
        for c in 0..chains {
            out.push_str(&format!("    {fma} %x{c}, %x{c}, %xa, %xb;\n"));
        }
    }
    out
}

/// The PTX module of the sweep kernel for (`precision`, `k`): one entry, [`entry_name`], with
/// parameters `(in, out, clocks, n, a, b)` — input and output arrays of n words, the block
/// records (6 u64 per block: clocks, the words the block moved, [`gpu_block_words`], and the
/// FMA steps per chain its thread 0 completed, [`gpu_thread_steps`]), and the map's [`map`] `a`
/// and `b` as register bits (`.b32`, or `.b64` for f64).
///
/// Template placeholders: `@ENTRY@`, `@K@`, `@FMA@` (the instruction), `@W@` (register bits),
/// `@VEC@` (words per 16-byte vector), `@VEC2@` (twice that), `@LOG2_VEC@`, `@LOG2_WORD@` (log2 of bytes per word),
/// `@VTYPE@` / `@STYPE@` (vector and scalar load/store types), `@V0@` / `@V1@` (vector operand
/// lists) and `@MAIN@` / `@REM@` / `@TAIL@` (the k FMA steps of the three loops, unrolled up to
/// [`UNROLLED_STEPS`], a loop of unrolled blocks above it, each counting its steps).
///
/// The interpreter's tests call this to run the very text the GPU runs.
pub fn expand(precision: Precision, k: u32) -> String {
    let wide = precision == Precision::F64;
    let vec = if wide { 2 } else { 4 };
    let operands = |from: usize| {
        let regs: Vec<String> = (from..from + vec).map(|r| format!("%x{r}")).collect();
        format!("{{{}}}", regs.join(", "))
    };
    let entry = entry_name(precision, k);
    let steps = |chains: usize, part: &str| {
        let label = format!("{entry}_{part}_steps");
        fma_steps(precision, k, chains, &label)
            .trim_end()
            .to_string()
    };
    let replacements = [
        ("@ENTRY@", entry.clone()),
        ("@K@", k.to_string()),
        ("@FMA@", fma_instruction(precision).to_string()),
        ("@W@", if wide { "64" } else { "32" }.to_string()),
        ("@VEC@", vec.to_string()),
        ("@VEC2@", (2 * vec).to_string()),
        ("@LOG2_VEC@", if wide { "1" } else { "2" }.to_string()),
        ("@LOG2_WORD@", if wide { "3" } else { "2" }.to_string()),
        (
            "@VTYPE@",
            if wide { "v2.b64" } else { "v4.b32" }.to_string(),
        ),
        ("@STYPE@", if wide { "b64" } else { "b32" }.to_string()),
        ("@V0@", operands(0)),
        ("@V1@", operands(vec)),
        ("@MAIN@", steps(2 * vec, "main")),
        ("@REM@", steps(vec, "remainder")),
        ("@TAIL@", steps(1, "tail")),
    ];
    super::expand_template(TEMPLATE, replacements)
}
