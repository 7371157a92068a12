//! Hopper's `wgmma` tensor-core peaks, expanded from `kernels/wgmma.ptx.in` into one module
//! (`.target sm_90a`). The shapes, operands and check are the case catalogue's
//! ([`crate::cases::wgmma`]); this module only writes the PTX text.

use crate::cases::wgmma::*;
use crate::cases::Precision;

/// The template of `kernels/wgmma.ptx.in`: the header, then one entry with `@…@` holes.
pub const TEMPLATE: &str = super::WGMMA_TEMPLATE;

/// The `wgmma` module (`wgmma.ptx.in#sm_90a` in `kernels::all()`): the template's header and one
/// entry per precision and A source.
pub fn expand() -> String {
    let (header, entry) = TEMPLATE
        .split_once("// @ENTRY@\n")
        .expect("kernels/wgmma.ptx.in has its // @ENTRY@ line");
    let mut out = header.to_string();
    for p in PRECISIONS {
        for a in SOURCES {
            out.push_str(&expand_entry(entry, p, a));
        }
    }
    out
}

/// The instruction's type suffix: `.f32.bf16.bf16`.
fn types(precision: Precision) -> String {
    let (d, ab) = match precision {
        Precision::F16F16 => ("f16", "f16"),
        Precision::F16F32 => ("f32", "f16"),
        Precision::Bf16F32 => ("f32", "bf16"),
        Precision::Tf32F32 => ("f32", "tf32"),
        Precision::E4m3F32 => ("f32", "e4m3"),
        Precision::E5m2F32 => ("f32", "e5m2"),
        Precision::S8S32 => ("s32", "s8"),
        other => panic!("{other} is not a wgmma precision"),
    };
    format!(".{d}.{ab}.{ab}")
}

fn expand_entry(template: &str, precision: Precision, a: ASource) -> String {
    let name = entry_name(precision, a);
    let regs = accumulator_registers(precision);
    let list = |prefix: &str, n: usize| -> String {
        (0..n)
            .map(|i| format!("{prefix}{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let d_list = format!("{{{}}}", list("%d", regs));
    let a_operand = match a {
        ASource::Shared => "%rd16".to_string(),
        ASource::Registers => format!("{{{}}}", list("%a", 4)),
    };
    // scale-d (always accumulate); then imm-scale-a, imm-scale-b (floating types), then
    // imm-trans-a (descriptor A) and imm-trans-b (f16/bf16 only): 0, K-major
    let scales = match precision {
        Precision::S8S32 => "",
        _ => ", 1, 1",
    };
    let trans = match (element_bytes(precision), a) {
        (2, ASource::Shared) => ", 0, 0",
        (2, ASource::Registers) => ", 0",
        _ => "",
    };
    let instr = |b_desc: &str| {
        format!(
            "    wgmma.mma_async.sync.aligned.m{M}n{N}k{}{} {d_list}, {a_operand}, {b_desc}, %p2{scales}{trans};\n",
            k(precision),
            types(precision)
        )
    };
    let pair: String = (0..UNROLL)
        .map(|_| instr("%rd17") + &instr("%rd18"))
        .collect();
    let reg_type = match precision {
        Precision::F16F16 | Precision::S8S32 => "b32",
        _ => "f32",
    };
    // C in, D out: `regs` words per thread at [thread * regs], 16 bytes at a time
    let vectors = |op: &str, base: &str| -> String {
        (0..regs / 4)
            .map(|v| {
                let r = format!(
                    "%d{}, %d{}, %d{}, %d{}",
                    4 * v,
                    4 * v + 1,
                    4 * v + 2,
                    4 * v + 3
                );
                match op {
                    "ld" => format!(
                        "    ld.global.v4.{reg_type} {{{r}}}, [{base}+{}];\n",
                        16 * v
                    ),
                    _ => format!(
                        "    st.global.v4.{reg_type} [{base}+{}], {{{r}}};\n",
                        16 * v
                    ),
                }
            })
            .collect()
    };
    let (a_shared, a_fill) = match a {
        ASource::Shared => (
            format!("    .shared .align 128 .b8 {name}_as[{A_IMAGE_BYTES}];\n"),
            format!(
                "    // A's image: 2 KiB, one 16-byte chunk per thread of the first warpgroup\n\
                 \x20   setp.ge.u32 %p1, %r4, {chunks};\n\
                 \x20   @%p1 bra {name}_a_filled;\n\
                 \x20   mul.wide.u32 %rd10, %r4, 16;\n\
                 \x20   add.u64 %rd11, %rd1, %rd10;\n\
                 \x20   ld.global.v4.b32 {{%r8, %r9, %r10, %r11}}, [%rd11];\n\
                 \x20   mov.u32 %r12, {name}_as;\n\
                 \x20   shl.b32 %r13, %r4, 4;\n\
                 \x20   add.u32 %r12, %r12, %r13;\n\
                 \x20   st.shared.v4.b32 [%r12], {{%r8, %r9, %r10, %r11}};\n\
                 {name}_a_filled:\n\
                 \x20   mov.u32 %r12, {name}_as;\n\
                 \x20   cvt.u64.u32 %rd16, %r12;\n\
                 \x20   and.b64 %rd16, %rd16, 262143;\n\
                 \x20   shr.u64 %rd16, %rd16, 4;\n\
                 \x20   or.b64 %rd16, %rd16, {a_desc};              // LBO {A_LBO}, SBO {A_SBO}, no swizzle\n",
                chunks = A_IMAGE_BYTES / 16,
                a_desc = ((A_LBO as u64 >> 4) << 16) | ((A_SBO as u64 >> 4) << 32),
            ),
        ),
        ASource::Registers => (
            String::new(),
            "    // A's fragment: 4 registers of this thread at [(tid % 128) * 16]\n\
             \x20   and.b32 %r12, %r4, 127;\n\
             \x20   mul.wide.u32 %rd10, %r12, 16;\n\
             \x20   add.u64 %rd11, %rd1, %rd10;\n\
             \x20   ld.global.v4.b32 {%a0, %a1, %a2, %a3}, [%rd11];\n"
                .to_string(),
        ),
    };
    // B's descriptor: 128-byte swizzle (1 in bits 62-63), SBO 1024, LBO unused (1, as CUTLASS)
    let b_desc = (1u64 << 62) | ((B_SBO as u64 >> 4) << 32) | (1u64 << 16);
    super::expand_template(
        template,
        [
            ("@NAME@", name.clone()),
            ("@REGS@", regs.to_string()),
            ("@REGTYPE@", reg_type.to_string()),
            ("@ASHARED@", a_shared),
            ("@AFILL@", a_fill),
            ("@BDESC@", b_desc.to_string()),
            ("@BBYTES@", B_IMAGE_BYTES.to_string()),
            ("@BCHUNKS@", (B_IMAGE_BYTES / 16).to_string()),
            ("@LOADC@", vectors("ld", "%rd13")),
            ("@STORED@", vectors("st", "%rd14")),
            ("@PAIRS@", pair),
            ("@LAST@", instr("%rd17")),
        ],
    )
}
