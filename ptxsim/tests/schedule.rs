//! Schedules: the default runs blocks and warps in a fixed order; a seeded shuffled schedule
//! changes the block order, the warp order, where warps interleave between barriers and the
//! order they leave a barrier in — reproducibly for one seed. Atomic tickets make the order
//! visible without a race.

mod common;

use ptxsim::{Arg, LaunchConfig, Memory, Module, Schedule};

fn head() -> String {
    common::header("7.0", "sm_80")
}

/// Thread 0 of every block takes a ticket from `counter` and stores it at `out[ctaid.x]`.
fn block_ticket_kernel() -> String {
    head()
        + r#".visible .entry k(.param .u64 out, .param .u64 counter)
{
    .reg .pred %p;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [counter];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p, %r1, 0;
    @%p bra done;
    atom.global.add.u32 %r2, [%rd2], 1;
    mov.u32 %r3, %ctaid.x;
    mul.wide.u32 %rd3, %r3, 4;
    add.u64 %rd4, %rd1, %rd3;
    st.global.u32 [%rd4], %r2;
done:
    ret;
}
"#
}

fn run_tickets(
    module: &Module,
    schedule: Schedule,
    grid: u32,
    block: u32,
    out_words: usize,
) -> Vec<u32> {
    let mut mem = Memory::new();
    let out = mem.alloc(out_words * 4);
    let counter = mem.alloc_from(&[0u32]);
    let mut config = LaunchConfig::new((grid, 1, 1), (block, 1, 1), 0);
    config.schedule = schedule;
    module
        .launch_with("k", &config, &[Arg::Ptr(out), Arg::Ptr(counter)], &mut mem)
        .unwrap();
    mem.read(out, out_words).unwrap()
}

#[test]
fn blocks_run_in_order_by_default_and_shuffled_reproducibly_under_a_seed() {
    let module = common::module("block_tickets", &block_ticket_kernel());
    let n = 16;
    let in_order: Vec<u32> = (0..n as u32).collect();
    assert_eq!(
        run_tickets(&module, Schedule::InOrder, n as u32, 64, n),
        in_order
    );
    assert_eq!(
        LaunchConfig::new((1, 1, 1), (1, 1, 1), 0).schedule,
        Schedule::InOrder
    );
    let orders: Vec<Vec<u32>> = (1..=8)
        .map(|seed| {
            let got = run_tickets(&module, Schedule::Shuffled { seed }, n as u32, 64, n);
            // Every block ran once: a permutation.
            let mut sorted = got.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, in_order, "seed {seed}");
            // The same seed, the same order.
            assert_eq!(
                run_tickets(&module, Schedule::Shuffled { seed }, n as u32, 64, n),
                got
            );
            got
        })
        .collect();
    assert!(
        orders.iter().all(|o| *o != in_order),
        "a seed left the blocks in order: {orders:?}"
    );
    assert!(
        orders.windows(2).any(|p| p[0] != p[1]),
        "every seed gave one order"
    );
}

/// Lane 0 of each of 4 warps takes a ticket, (optionally) meets the others at a barrier, and
/// takes a second one: `out[2w]`, `out[2w + 1]`.
fn warp_ticket_kernel(barrier: bool) -> String {
    head()
        + &format!(
            r#".visible .entry k(.param .u64 out, .param .u64 counter)
{{
    .reg .pred %p;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [counter];
    mov.u32 %r1, %laneid;
    mov.u32 %r2, %warpid;
    setp.eq.u32 %p, %r1, 0;
    mul.wide.u32 %rd3, %r2, 8;
    add.u64 %rd4, %rd1, %rd3;
    @%p atom.global.add.u32 %r3, [%rd2], 1;
    @%p st.global.u32 [%rd4], %r3;
    add.u32 %r4, %r1, 1;
    mul.lo.u32 %r5, %r4, %r4;
    add.u32 %r6, %r5, %r4;
    {bar}
    @%p atom.global.add.u32 %r7, [%rd2], 1;
    @%p st.global.u32 [%rd4+4], %r7;
    ret;
}}
"#,
            bar = if barrier { "bar.sync 0;" } else { "" }
        )
}

#[test]
fn warps_interleave_and_leave_barriers_in_a_seeded_order() {
    let free = common::module("warp_tickets", &warp_ticket_kernel(false));
    let fenced = common::module("warp_tickets_bar", &warp_ticket_kernel(true));
    // In order, each warp runs until it exits (or reaches the barrier) before the next starts.
    assert_eq!(
        run_tickets(&free, Schedule::InOrder, 1, 128, 8),
        vec![0, 1, 2, 3, 4, 5, 6, 7]
    );
    assert_eq!(
        run_tickets(&fenced, Schedule::InOrder, 1, 128, 8),
        vec![0, 4, 1, 5, 2, 6, 3, 7]
    );
    let mut interleaved = false;
    let mut first_not_warp_0 = false;
    let mut resumed_out_of_order = false;
    for seed in 1..=16 {
        let t = run_tickets(&free, Schedule::Shuffled { seed }, 1, 128, 8);
        // Another warp took a ticket between a warp's two.
        interleaved |= (0..4).any(|w| t[2 * w + 1] != t[2 * w] + 1);
        first_not_warp_0 |= t[0] != 0;
        let f = run_tickets(&fenced, Schedule::Shuffled { seed }, 1, 128, 8);
        // The barrier still separates the two rounds...
        assert!(
            (0..4).all(|w| f[2 * w] < 4 && f[2 * w + 1] >= 4),
            "seed {seed}: {f:?}"
        );
        // ... but warps leave it in another order than they reached it.
        let before: Vec<u32> = (0..4).map(|w| f[2 * w]).collect();
        let after: Vec<u32> = (0..4).map(|w| f[2 * w + 1] - 4).collect();
        resumed_out_of_order |= before != after;
    }
    assert!(interleaved && first_not_warp_0 && resumed_out_of_order);
}

/// Order-dependent but race-free results (float atomics) differ between schedules: what the
/// kernel suite's comparison across schedules is there to catch.
#[test]
fn an_order_dependent_result_changes_with_the_schedule() {
    let ptx = head()
        + r#".visible .entry k(.param .u64 out, .param .u64 sum)
{
    .reg .pred %p;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [sum];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p, %r1, 0;
    @%p bra done;
    // Odd blocks add 1; blocks 0 mod 4 add 2^24, blocks 2 mod 4 subtract it. 2^24 + 1 is not
    // an f32, so a 1 counts only if no 2^24 is in the sum when it is added: the total depends
    // on the order.
    mov.u32 %r2, %ctaid.x;
    and.b32 %r3, %r2, 3;
    setp.eq.u32 %p, %r3, 2;
    selp.f32 %f1, 0fCB800000, 0f4B800000, %p;
    and.b32 %r3, %r2, 1;
    setp.eq.u32 %p, %r3, 1;
    selp.f32 %f1, 0f3F800000, %f1, %p;
    red.global.add.f32 [%rd1], %f1;
done:
    ret;
}
"#;
    let module = common::module("float_atomics", &ptx);
    let sum = |schedule| {
        let mut mem = Memory::new();
        let out = mem.alloc(4);
        let s = mem.alloc_from(&[0f32]);
        let mut config = LaunchConfig::new((8, 1, 1), (32, 1, 1), 0);
        config.schedule = schedule;
        module
            .launch_with("k", &config, &[Arg::Ptr(out), Arg::Ptr(s)], &mut mem)
            .unwrap();
        mem.read::<f32>(s, 1).unwrap()[0]
    };
    let sums: Vec<f32> = (0..16)
        .map(|seed| sum(Schedule::Shuffled { seed }))
        .collect();
    assert!(sums.iter().any(|&s| s != sums[0]), "{sums:?}");
    assert_eq!(
        sum(Schedule::Shuffled { seed: 3 }),
        sum(Schedule::Shuffled { seed: 3 })
    );
}
