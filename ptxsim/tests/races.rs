//! The race detectors, in global and shared memory: conflicting accesses (a write and another
//! access to the same bytes) by different warps or blocks with nothing ordering them are errors
//! naming both instructions; a barrier orders a block's warps; atomics and strong operations
//! do not race each other; what our kernels do legitimately (each block writing its own
//! partial sums) passes.

mod common;

use ptxsim::{Arg, Error, LaunchConfig, Memory, Module};

fn head() -> String {
    common::header("7.0", "sm_80")
}

/// A kernel `k(out, n)` around `body`, with registers declared and `%tid.x`, `%ctaid.x`,
/// `%ntid.x` and the global index in `%r1`..`%r4`, `out` in `%rd1`. The body starts on line 21.
fn kernel(body: &str) -> String {
    head()
        + ".visible .entry k(.param .u64 out, .param .u32 n)\n{\n"
        + "    .reg .pred %p<4>;\n    .reg .b16 %h<4>;\n    .reg .b32 %r<16>;\n    .reg .b64 %rd<16>;\n    .reg .f32 %f<4>;\n"
        + "    .shared .align 4 .u32 s[64];\n"
        + "    ld.param.u64 %rd1, [out];\n    ld.param.u32 %r5, [n];\n"
        + "    mov.u32 %r1, %tid.x;\n    mov.u32 %r2, %ctaid.x;\n    mov.u32 %r3, %ntid.x;\n"
        + "    mad.lo.u32 %r4, %r2, %r3, %r1;\n"
        + "    mov.u32 %r6, s;\n"
        + "    mul.wide.u32 %rd2, %r4, 4;\n    add.u64 %rd3, %rd1, %rd2;\n"
        + body
        + "\n    ret;\n}\n"
}

const BODY: u32 = 21;

fn run(name: &str, body: &str, grid: u32, block: u32, out_words: usize) -> Result<Vec<u32>, Error> {
    let module = common::module(name, &kernel(body));
    let mut mem = Memory::new();
    let out = mem.alloc_from(&vec![0u32; out_words]);
    module.launch(
        "k",
        (grid, 1, 1),
        (block, 1, 1),
        0,
        &[Arg::Ptr(out), Arg::U32(0)],
        &mut mem,
    )?;
    Ok(mem.read(out, out_words).unwrap())
}

fn race(name: &str, body: &str, grid: u32, block: u32, out_words: usize) -> String {
    match run(name, body, grid, block, out_words) {
        Ok(_) => panic!("{name}: the race was not reported"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn blocks_writing_the_same_global_bytes_race() {
    // Every block writes out[tid]: blocks 0 and 1 both write out[0..32].
    let msg = race(
        "race_blocks",
        "    mul.wide.u32 %rd4, %r1, 4;\n    add.u64 %rd5, %rd1, %rd4;\n    st.global.u32 [%rd5], %r4;",
        2,
        32,
        32,
    );
    assert!(msg.contains("global-memory race"), "{msg}");
    assert!(
        msg.contains("line 23: `st.global.u32 [%rd5], %r4`"),
        "{msg}"
    );
    assert!(msg.contains("of block (0, 0, 0) wrote at line 23"), "{msg}");
    assert!(msg.contains("block (1, 0, 0) thread (0, 0, 0)"), "{msg}");
    // Each block its own slot (the reductions' partial sums): no race.
    let got = run(
        "partials",
        "    setp.ne.u32 %p1, %r1, 0;\n    @%p1 bra done;\n    mul.wide.u32 %rd4, %r2, 4;\n    add.u64 %rd5, %rd1, %rd4;\n    st.global.u32 [%rd5], %r2;\ndone:",
        4,
        64,
        4,
    )
    .unwrap();
    assert_eq!(got, vec![0, 1, 2, 3]);
}

#[test]
fn a_block_reading_what_another_block_writes_races() {
    // Block b reads out[(gid + 32) % 64], which the other block writes (out[gid]).
    let body = "    st.global.u32 [%rd3], %r4;\n    add.u32 %r7, %r4, 32;\n    rem.u32 %r7, %r7, 64;\n    mul.wide.u32 %rd4, %r7, 4;\n    add.u64 %rd5, %rd1, %rd4;\n    ld.global.u32 %r8, [%rd5];";
    let msg = race("race_read_other_block", body, 2, 32, 64);
    // Block 0 runs first and reads words block 1 then writes: the write is reported.
    assert!(msg.contains("global-memory race"), "{msg}");
    assert!(
        msg.starts_with("line 21:") && msg.contains("read at line 26"),
        "{msg}"
    );
}

#[test]
fn warps_of_a_block_need_a_barrier_between_conflicting_global_accesses() {
    // Warp w writes out[gid], then reads the word warp w+1 wrote.
    let body = |bar: &str| {
        format!(
            "    st.global.u32 [%rd3], %r4;\n    {bar}\n    add.u32 %r7, %r4, 32;\n    rem.u32 %r7, %r7, 64;\n    mul.wide.u32 %rd4, %r7, 4;\n    add.u64 %rd5, %rd1, %rd4;\n    ld.global.u32 %r8, [%rd5];\n    add.u32 %r8, %r8, 1;\n    st.global.u32 [%rd3+256], %r8;"
        )
    };
    let msg = race("race_warps_global", &body("// no barrier"), 1, 64, 128);
    assert!(msg.contains("global-memory race"), "{msg}");
    assert!(msg.contains("missing bar.sync"), "{msg}");
    let got = run("warps_global_bar", &body("bar.sync 0;"), 1, 64, 128).unwrap();
    for t in 0..64u32 {
        assert_eq!(got[64 + t as usize], (t + 32) % 64 + 1);
    }
}

#[test]
fn two_lanes_storing_to_the_same_bytes_in_one_instruction_race() {
    // Every lane stores its id to out[0] (a forgotten `if (tid == 0)`).
    let msg = race("race_lanes", "    st.global.u32 [%rd1], %r1;", 1, 32, 1);
    assert!(
        msg.contains("lanes 0 and 1 of warp 0 store to overlapping bytes"),
        "{msg}"
    );
    assert!(msg.starts_with(&format!("line {BODY}:")), "{msg}");
    // The same in shared memory.
    let msg = race(
        "race_lanes_shared",
        "    st.shared.u32 [%r6], %r1;",
        1,
        32,
        1,
    );
    assert!(msg.contains("overlapping bytes"), "{msg}");
}

#[test]
fn narrow_stores_to_neighbouring_bytes_do_not_race() {
    // Threads write one byte (u8) and one half word (u16) each, neighbours sharing words.
    let body = "    cvt.u16.u32 %h1, %r4;\n    cvt.u64.u32 %rd4, %r4;\n    add.u64 %rd5, %rd1, %rd4;\n    st.global.u8 [%rd5], %h1;\n    mul.wide.u32 %rd6, %r4, 2;\n    add.u64 %rd7, %rd1, %rd6;\n    st.global.u16 [%rd7+64], %h1;";
    let got = run("narrow_stores", body, 2, 16, 32).unwrap();
    let bytes: Vec<u8> = got.iter().flat_map(|w| w.to_le_bytes()).collect();
    for i in 0..32usize {
        assert_eq!(bytes[i], i as u8);
        assert_eq!(
            u16::from_le_bytes([bytes[64 + 2 * i], bytes[65 + 2 * i]]),
            i as u16
        );
    }
    // But a word load of a byte another block wrote races.
    let racy = format!("{body}\n    ld.global.u32 %r8, [%rd1+4];");
    let msg = race("narrow_then_word", &racy, 2, 16, 32);
    assert!(msg.contains("global-memory race"), "{msg}");
}

#[test]
fn atomics_do_not_race_each_other_but_a_plain_access_meeting_one_does() {
    // Every thread of four blocks increments out[0] atomically.
    let got = run(
        "atomics_only",
        "    atom.global.add.u32 %r7, [%rd1], 1;\n    red.global.add.u32 [%rd1+4], 2;",
        4,
        64,
        2,
    )
    .unwrap();
    assert_eq!(got, vec![256, 512]);
    // A plain load of the counter by another block races the atomics.
    let msg = race(
        "atomic_vs_plain",
        "    atom.global.add.u32 %r7, [%rd1], 1;\n    ld.global.u32 %r8, [%rd1];",
        2,
        32,
        1,
    );
    assert!(msg.contains("global-memory race"), "{msg}");
    // A strong (.relaxed.gpu) load does not.
    run(
        "atomic_vs_relaxed",
        "    atom.global.add.u32 %r7, [%rd1], 1;\n    ld.relaxed.gpu.global.u32 %r8, [%rd1];",
        2,
        32,
        1,
    )
    .unwrap();
    // .cta-scoped atomics of different blocks are not morally strong: they race.
    let msg = race(
        "cta_atomics_across_blocks",
        "    atom.cta.global.add.u32 %r7, [%rd1], 1;",
        2,
        32,
        1,
    );
    assert!(msg.contains("different blocks"), "{msg}");
}

#[test]
fn shared_memory_atomics_race_plain_accesses_without_a_barrier() {
    // Warp 0's lane 0 zeroes s[0] while every warp adds to it: a race.
    let body = |bar: &str| {
        format!(
            "    setp.eq.u32 %p1, %r1, 0;\n    @%p1 st.shared.u32 [%r6], 0;\n    {bar}\n    atom.shared.add.u32 %r7, [%r6], 1;\n    bar.sync 0;\n    ld.shared.u32 %r8, [%r6];\n    st.global.u32 [%rd3], %r8;"
        )
    };
    let msg = race("shared_atomic_race", &body("// no barrier"), 1, 64, 64);
    assert!(msg.contains("shared-memory race"), "{msg}");
    let got = run("shared_atomic_bar", &body("bar.sync 0;"), 1, 64, 64).unwrap();
    assert!(got.iter().all(|&v| v == 64), "{got:?}");
}

#[test]
fn global_race_checking_can_be_turned_off() {
    let module = common::module(
        "race_off",
        &kernel("    mul.wide.u32 %rd4, %r1, 4;\n    add.u64 %rd5, %rd1, %rd4;\n    st.global.u32 [%rd5], %r4;"),
    );
    let mut mem = Memory::new();
    let out = mem.alloc(32 * 4);
    let mut config = LaunchConfig::new((2, 1, 1), (32, 1, 1), 0);
    config.check_global_races = false;
    module
        .launch_with("k", &config, &[Arg::Ptr(out), Arg::U32(0)], &mut mem)
        .unwrap();
    // The last block to run (block 1, in order) wins.
    assert_eq!(
        mem.read::<u32>(out, 32).unwrap(),
        (32..64).collect::<Vec<u32>>()
    );
    let _ = Module::parse(&kernel("")).unwrap();
}
