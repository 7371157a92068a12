//! What ptxsim does not understand or cannot allow is an error that names it and its line:
//! unsupported instructions, modifiers and directives at parse time; faults (out-of-bounds,
//! misalignment, division by zero, runaway loops, bad launches) at run time. Never a silent
//! no-op, never a panic.

mod common;

use ptxsim::{Arg, Error, LaunchConfig, Memory, Module};

fn entry(body: &str) -> String {
    // Header (3 lines) + signature, brace and declarations (6 lines): the body starts on line 10.
    common::header("7.0", "sm_80")
        + ".visible .entry k(.param .u64 out, .param .u32 n)\n{\n"
        + "    .reg .pred %p;\n    .reg .b32 %r<8>;\n    .reg .f32 %f<4>;\n    .reg .b64 %rd<8>;\n"
        + body
        + "\n    ret;\n}\n"
}

fn parse_err(body: &str) -> Error {
    Module::parse(&entry(body)).expect_err("must not parse")
}

#[test]
fn unsupported_instructions_name_themselves_and_their_line() {
    for (body, needle) in [
        ("    sin.approx.f32 %f1, %f2;", "instruction `sin`"),
        ("    tex.1d.v4.f32.s32 {%f0, %f1, %f2, %f3}, [%rd1, {%r1}];", "instruction `tex`"),
        ("    add.cc.u32 %r1, %r2, %r3;", "carry (.cc)"),
        ("    div.approx.f32 %f1, %f2, %f3;", "div.approx"),
        ("    rcp.approx.f32 %f1, %f2;", "rcp.approx"),
        ("    ld.global.v8.f32 {%f0, %f1, %f2, %f3, %f0, %f1, %f2, %f3}, [%rd1];", "`.v8`"),
        ("    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16 {%f0, %f1, %f2, %f3}, {%r0, %r1, %r2, %r3}, {%r4, %r5}, {%r6, %r7};", "mma"),
        ("    mma.sync.aligned.m8n8k4.row.row.f32.f16.f16.f32 {%f0, %f1}, {%r0, %r1}, {%r4, %r5}, {%r6, %r7};", "mma.m8n8k4 with .f16"),
        ("    bar.arrive 0, 64;", "bar.arrive"),
        ("    cp.async.mbarrier.arrive.shared.b64 [%r1];", "cp.async.mbarrier.arrive"),
        ("    ld.global.foo.f32 %f1, [%rd1];", "modifier `.foo`"),
        ("    fma.rz.f64 %rd1, %rd2, %rd3, %rd4;", "directed rounding"),
    ] {
        let err = parse_err(body);
        assert!(matches!(err, Error::Unsupported { line: 10, .. }), "{body}: {err:?}");
        assert!(err.to_string().contains(needle), "{body}: `{err}` lacks `{needle}`");
        assert!(err.to_string().starts_with("line 10:"), "{err}");
    }
}

#[test]
fn malformed_ptx_is_a_parse_error_with_its_line() {
    for (body, needle) in [
        ("    add.u32 %r1, %r99, 1;", "undeclared register `%r99`"),
        ("    bra nowhere;", "undefined label `nowhere`"),
        ("    add.u32 %r1, %r2;", "expected 3 operands"),
        ("    mov.u32 %tid.x, 1;", "read-only"),
        ("    cvt.f32.s32 %f1, %r1;", "needs a rounding modifier"),
        ("    mul.u32 %r1, %r2, %r3;", "needs .lo, .hi or .wide"),
        (
            "    fma.f32 %f1, %f2, %f3, %f1;",
            "needs a rounding modifier",
        ),
    ] {
        let err = parse_err(body);
        assert_eq!(err.line(), Some(10), "{body}: {err}");
        assert!(
            err.to_string().contains(needle),
            "{body}: `{err}` lacks `{needle}`"
        );
    }
}

#[test]
fn unsupported_directives_are_errors() {
    let head = common::header("7.0", "sm_80");
    for (text, needle, line) in [
        (format!("{head}.func f()\n{{\n ret;\n}}\n"), "`.func`", 4),
        (
            format!("{head}.global .align 4 .u32 counter;\n"),
            "module-scope `.global`",
            4,
        ),
        (
            format!("{head}.visible .entry k()\n.maxclusterrank 2\n{{\n ret;\n}}\n"),
            "`.maxclusterrank`",
            5,
        ),
        (
            format!("{head}.visible .entry k()\n{{\n .reg .v4 .f32 %v;\n ret;\n}}\n"),
            "vector registers",
            6,
        ),
        (
            format!("{head}.visible .entry k()\n{{\n .pragma \"unroll\";\n ret;\n}}\n"),
            ".pragma \"unroll\"",
            6,
        ),
    ] {
        let err = Module::parse(&text).expect_err("must not parse");
        assert!(err.to_string().contains(needle), "`{err}` lacks `{needle}`");
        assert_eq!(err.line(), Some(line), "{err}");
    }
    // Directives without semantic effect are accepted.
    let ok = format!(
        "{head}.file 1 \"k.cu\"\n.visible .entry k()\n.maxntid 128, 1, 1\n.minnctapersm 2\n{{\n .pragma \"nounroll\";\n .loc 1 2 3\n ret;\n}}\n"
    );
    Module::parse(&ok).unwrap();
}

fn launch(module: &Module, block: u32, n: u32, out_bytes: usize) -> Result<(), Error> {
    let mut mem = Memory::new();
    let out = mem.alloc(out_bytes);
    module
        .launch(
            "k",
            (1, 1, 1),
            (block, 1, 1),
            0,
            &[Arg::Ptr(out), Arg::U32(n)],
            &mut mem,
        )
        .map(|_| ())
}

const STORE_TID: &str = "    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;";

#[test]
fn out_of_bounds_global_store_names_instruction_thread_and_address() {
    let module = common::module("oob", &entry(STORE_TID));
    launch(&module, 8, 0, 32).unwrap();
    let err = launch(&module, 9, 0, 32).unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.line(), Some(14));
    assert!(msg.contains("st.global.u32 [%rd3], %r1"), "{msg}");
    assert!(msg.contains("thread (8, 0, 0)"), "{msg}");
    assert!(
        msg.contains("0 bytes past the end of the 32-byte allocation"),
        "{msg}"
    );
}

#[test]
fn misaligned_vector_access_is_a_fault() {
    let module = common::module(
        "misaligned",
        &entry(
            "    ld.param.u64 %rd1, [out];\n    ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd1+4];",
        ),
    );
    let err = launch(&module, 1, 0, 64).unwrap_err();
    assert!(
        err.to_string().contains("misaligned 16-byte access"),
        "{err}"
    );
}

#[test]
fn shared_out_of_bounds_and_null_pointers_are_faults() {
    let module = common::module(
        "shared_oob",
        &(common::header("7.0", "sm_80")
            + ".visible .entry k(.param .u64 out, .param .u32 n)\n{\n .reg .b32 %r<4>;\n .shared .align 4 .u32 s[4];\n mov.u32 %r1, s;\n ld.param.u32 %r2, [n];\n shl.b32 %r2, %r2, 2;\n add.u32 %r1, %r1, %r2;\n st.shared.u32 [%r1], %r2;\n ret;\n}\n"),
    );
    launch(&module, 1, 3, 4).unwrap();
    let err = launch(&module, 1, 4, 4).unwrap_err();
    assert!(
        err.to_string().contains("out-of-bounds shared access"),
        "{err}"
    );

    let module = common::module(
        "null",
        &entry("    mov.u32 %r1, 0;\n    mov.u64 %rd1, 0;\n    st.global.u32 [%rd1], %r1;"),
    );
    let err = launch(&module, 1, 0, 4).unwrap_err();
    assert!(err.to_string().contains("null pointer"), "{err}");
}

#[test]
fn division_by_zero_and_runaway_loops_are_faults() {
    let module = common::module(
        "div0",
        &entry("    ld.param.u32 %r1, [n];\n    div.u32 %r2, 7, %r1;"),
    );
    let err = launch(&module, 1, 0, 4).unwrap_err();
    assert!(err.to_string().contains("division by zero"), "{err}");

    let module = common::module("forever", &entry("spin:\n    bra spin;"));
    let mut mem = Memory::new();
    let out = mem.alloc(4);
    let mut config = LaunchConfig::new((1, 1, 1), (32, 1, 1), 0);
    config.max_warp_instructions = 10_000;
    let err = module
        .launch_with("k", &config, &[Arg::Ptr(out), Arg::U32(0)], &mut mem)
        .unwrap_err();
    assert!(err.to_string().contains("infinite loop"), "{err}");
}

#[test]
fn bad_launches_are_errors_not_panics() {
    let module = common::module("store", &entry(STORE_TID));
    let mut mem = Memory::new();
    let out = mem.alloc(4096);
    // (entry, block, arguments, expected message)
    type Case<'a> = (&'a str, (u32, u32, u32), Vec<Arg>, &'a str);
    let cases: Vec<Case> = vec![
        (
            "nope",
            (32, 1, 1),
            vec![Arg::Ptr(out), Arg::U32(0)],
            "no entry `nope`",
        ),
        ("k", (32, 1, 1), vec![Arg::Ptr(out)], "takes 2 parameters"),
        (
            "k",
            (32, 1, 1),
            vec![Arg::Ptr(out), Arg::U64(0)],
            "parameter 1 `n` is .u32",
        ),
        (
            "k",
            (32, 1, 1),
            vec![Arg::F32(0.0), Arg::U32(0)],
            "parameter 0 `out` is .u64",
        ),
        (
            "k",
            (2048, 1, 1),
            vec![Arg::Ptr(out), Arg::U32(0)],
            "exceeds 1024 threads",
        ),
        (
            "k",
            (0, 1, 1),
            vec![Arg::Ptr(out), Arg::U32(0)],
            "empty grid or block",
        ),
    ];
    for (name, block, args, needle) in cases {
        let err = module
            .launch(name, (1, 1, 1), block, 0, &args, &mut mem)
            .unwrap_err();
        assert!(matches!(err, Error::Launch(_)), "{err:?}");
        assert!(err.to_string().contains(needle), "`{err}` lacks `{needle}`");
    }
    let err = module
        .launch(
            "k",
            (1, 1, 1),
            (32, 1, 1),
            300 * 1024,
            &[Arg::Ptr(out), Arg::U32(0)],
            &mut mem,
        )
        .unwrap_err();
    assert!(err.to_string().contains("shared memory"), "{err}");
    let reqntid =
        common::header("7.0", "sm_80") + ".visible .entry k()\n.reqntid 64, 1, 1\n{\n ret;\n}\n";
    let module = common::module("reqntid", &reqntid);
    module
        .launch("k", (1, 1, 1), (64, 1, 1), 0, &[], &mut mem)
        .unwrap();
    let err = module
        .launch("k", (1, 1, 1), (32, 1, 1), 0, &[], &mut mem)
        .unwrap_err();
    assert!(err.to_string().contains(".reqntid"), "{err}");
}

#[test]
fn host_memory_access_outside_an_allocation_is_an_error() {
    let mut mem = Memory::new();
    let p = mem.alloc(8);
    assert!(mem.read::<u32>(p, 3).is_err());
    assert!(mem.write(p.byte_add(4), &[1u32, 2]).is_err());
    assert!(mem.fill(p, 9, 0).is_err());
}

#[test]
fn truncated_or_garbled_ptx_is_an_error_never_a_panic() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kernels/stream.ptx"
    ))
    .expect("kernels/stream.ptx");
    assert!(Module::parse(&text).is_ok());
    let chars: Vec<char> = text.chars().collect();
    // Every 211th prefix (the parse either fails or succeeds; it must return).
    for cut in (0..chars.len()).step_by(211) {
        let prefix: String = chars[..cut].iter().collect();
        let _ = Module::parse(&prefix);
    }
    // Single-character corruptions at scattered positions.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..400 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let pos = (seed % chars.len() as u64) as usize;
        let replacement = [
            '{', '}', '[', ']', ';', ',', '%', '.', '0', 'x', '@', '!', '-', ' ',
        ][(seed >> 32) as usize % 14];
        let mut garbled = chars.clone();
        garbled[pos] = replacement;
        let garbled: String = garbled.into_iter().collect();
        if let Ok(module) = Module::parse(&garbled) {
            // Still valid PTX: it must also launch without panicking (errors are fine).
            let mut mem = Memory::new();
            let a = mem.alloc(64 * 8);
            let b = mem.alloc(64 * 8);
            let c = mem.alloc(64 * 8);
            for entry in module.entries() {
                let _ = module.launch(
                    entry,
                    (2, 1, 1),
                    (64, 1, 1),
                    0,
                    &[Arg::Ptr(a), Arg::Ptr(b), Arg::Ptr(c), Arg::U64(37)],
                    &mut mem,
                );
                let _ = module.launch(
                    entry,
                    (2, 1, 1),
                    (64, 1, 1),
                    0,
                    &[Arg::Ptr(a), Arg::Ptr(b), Arg::U64(37), Arg::F32(2.0)],
                    &mut mem,
                );
            }
        }
    }
}

/// The PTX ISA ("Matrix Fragments for mma.m16n8k*", "mma.m8n8k4 with .f64") allows only
/// `.row.col` (A row-major, B column-major) for every mma form ptxsim runs: `.col.row`,
/// `.row.row` and `.col.col` must not parse, whatever the shape or the types — and ptxas
/// refuses them too. The first layout modifier is A's and the second B's, so the order
/// matters even though ptxas lets the other modifiers come in any order.
#[test]
fn mma_layouts_the_isa_does_not_allow_do_not_parse() {
    let forms = [
        (
            "m16n8k16",
            "f32.f16.f16.f32",
            "{%f0, %f1, %f2, %f3}, {%r0, %r1, %r2, %r3}, {%r4, %r5}, {%f0, %f1, %f2, %f3}",
        ),
        (
            "m16n8k8",
            "f32.tf32.tf32.f32",
            "{%f0, %f1, %f2, %f3}, {%r0, %r1, %r2, %r3}, {%r4, %r5}, {%f0, %f1, %f2, %f3}",
        ),
        (
            "m16n8k32",
            "s32.s8.s8.s32",
            "{%r0, %r1, %r2, %r3}, {%r4, %r5, %r6, %r7}, {%r4, %r5}, {%r0, %r1, %r2, %r3}",
        ),
        (
            "m8n8k4",
            "f64.f64.f64.f64",
            "{%fd0, %fd1}, {%fd2}, {%fd3}, {%fd0, %fd1}",
        ),
    ];
    let snippet = |shape: &str, layout: &str, types: &str, operands: &str| {
        common::header("7.0", "sm_80")
            + ".visible .entry k()\n{\n    .reg .b32 %r<8>;\n    .reg .f32 %f<4>;\n    .reg .f64 %fd<4>;\n"
            + &format!("    mma.sync.aligned.{shape}.{layout}.{types} {operands};\n")
            + "    ret;\n}\n"
    };
    for (shape, types, operands) in forms {
        // The legal form parses, also with the types written before the layouts.
        Module::parse(&snippet(shape, "row.col", types, operands)).unwrap();
        let (d, rest) = types.split_once('.').unwrap();
        Module::parse(&snippet(shape, &format!("{d}.row.col"), rest, operands)).unwrap();
        for layout in ["col.row", "row.row", "col.col"] {
            let ptx = snippet(shape, layout, types, operands);
            let name = format!("mma_{shape}_{}", layout.replace('.', "_"));
            let ptxas_says = common::assert_ptxas_rejects(&name, &ptx);
            let err = Module::parse(&ptx).expect_err(&format!("{shape}.{layout} must not parse"));
            assert!(
                matches!(err, Error::Parse { line: 9, .. }),
                "{shape}.{layout}: {err:?}"
            );
            assert!(
                err.to_string().contains("only `.row.col`"),
                "{shape}.{layout}: `{err}` ({ptxas_says})"
            );
        }
    }
}

/// Registers and predicates start undefined on the hardware, not zero or false: reading one
/// in a lane that never wrote it is an error naming it, its line and the lanes. Guards count
/// as reads; a register written under complementary guards is written in every lane.
#[test]
fn reading_a_register_or_predicate_before_any_write_is_an_error() {
    // (body, the unwritten name, the line that reads it, the first lane)
    for (body, name, line, lane) in [
        (
            "    mov.u32 %r2, %tid.x;\n    add.u32 %r3, %r1, %r2;",
            "`%r1`",
            11,
            0,
        ),
        // The guard of a branch.
        ("    @%p bra skip;\nskip:", "`%p`", 10, 0),
        // Written only in lanes 0..15, read by all.
        (
            "    mov.u32 %r1, %tid.x;\n    setp.lt.u32 %p, %r1, 16;\n    @%p mov.u32 %r2, 5;\n    add.u32 %r3, %r2, 1;",
            "`%r2`",
            13,
            16,
        ),
        ("    selp.u32 %r1, 1, 2, %p;", "`%p`", 10, 0),
        ("    mov.pred %p, 1;\n    and.pred %p, %p, %p;\n    not.pred %p, %p;\n    setp.eq.and.u32 %p, %r4, 0, %p;", "`%r4`", 13, 0),
        ("    ld.global.u32 %r1, [%rd5];", "`%rd5`", 10, 0),
    ] {
        let module = common::module("uninitialised", &entry(body));
        let err = launch(&module, 32, 0, 4).expect_err(body);
        let msg = err.to_string();
        assert_eq!(err.line(), Some(line), "{body}: {msg}");
        assert!(msg.contains("reads ") && msg.contains(name), "{body}: {msg}");
        assert!(msg.contains("before any write"), "{body}: {msg}");
        assert!(msg.contains(&format!("thread ({lane}, 0, 0)")), "{body}: {msg}");
    }
    // Written under complementary guards, then read: every lane wrote it.
    let ok = entry(
        "    ld.param.u64 %rd1, [out];\n    mov.u32 %r1, %tid.x;\n    setp.lt.u32 %p, %r1, 16;\n    @%p mov.u32 %r2, 5;\n    @!%p mov.u32 %r2, 7;\n    mul.wide.u32 %rd2, %r1, 4;\n    add.u64 %rd3, %rd1, %rd2;\n    st.global.u32 [%rd3], %r2;",
    );
    launch(&common::module("both_guards", &ok), 32, 0, 32 * 4).unwrap();
}
