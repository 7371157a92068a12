//! The launch descriptions' types (roofprobe::backend::cuda::args) and the launches described from them: carveouts, poisons, the owed work of the block records, rotation, and the clocks read from the records.

use roofprobe::backend::cuda::args::*;
use roofprobe::backend::cuda::describe::{self, shared_carveout_percent};
use roofprobe::cases::stream::StreamKernel;
use roofprobe::cases::Case;
use roofprobe::cases::{intensity, peak, tensor};
use std::borrow::Cow;

#[test]
fn only_the_l1_kernel_asks_for_the_largest_l1() {
    let entry = |module, name: &str| Entry {
        module,
        name: name.to_string(),
    };
    assert_eq!(
        shared_carveout_percent(&entry(ModuleId::Cache, "l1_i32")),
        Some(0)
    );
    assert_eq!(
        shared_carveout_percent(&entry(ModuleId::Cache, "l2_i32")),
        None
    );
    assert_eq!(
        shared_carveout_percent(&entry(ModuleId::Stream, "copy_f32")),
        None
    );
}

#[test]
fn clock_records_give_the_median_block() {
    // blocks at 1000, 1500 and 2000 MHz over 1 ms; one empty record
    let records = [
        0, 1_000_000, 5, 1_000_005, 7, 0, //
        10, 1_500_010, 0, 1_000_000, 7, 0, //
        0, 2_000_000, 0, 1_000_000, 7, 0, //
        0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(clock_from_records(&records), Some(1500.0));
    assert_eq!(clock_from_records(&[0; 12]), None);
    assert_eq!(clock_from_records(&records[..3]), None);
    // not whole records: a short read-back
    assert_eq!(clock_from_records(&records[..16]), None);
    // 1000 cycles in one 1 µs timer tick read as 32 ns: not a clock
    assert_eq!(clock_from_records(&[0, 1000, 0, 32, 1, 0]), None);
}

/// Blocks of 1.5 µs at 2000 MHz (3000 cycles) timed by a timer that ticks every 1000 ns read
/// 1 or 2 ticks: alone they would give 3000 or 1500 MHz. With the launch showing its tick,
/// only blocks of 20 ticks or more count, so such a launch gives no clock, or the long
/// blocks' clock; a fine timer's short blocks still count, and so does a launch of too few
/// blocks to show a tick.
#[test]
fn a_coarse_timer_s_short_blocks_give_no_clock() {
    // `blocks` blocks of `cycles` each, stamped by a 1000 ns timer: starts a tick or two
    // apart, intervals of `ticks` or one more, as a block straddles a tick or not
    let coarse = |blocks: u64, cycles: u64, ticks: u64, spread: bool| -> Vec<u64> {
        (0..blocks)
            .flat_map(|b| {
                let start = 5_000_000 + b % 3 * 1000;
                let end = start + (ticks + u64::from(spread) * (b % 2)) * 1000;
                [0, cycles, start, end, 1, 0]
            })
            .collect()
    };
    let short = coarse(32, 3000, 1, true);
    assert_eq!(timer_tick_ns(&[(5_000_000, 5_001_000); 32]), Some(1000));
    assert_eq!(clock_from_records(&short), None);
    // the same launch with 8 blocks of 40 µs beside them: their clock, not the short ones'
    let mixed = [short, coarse(8, 80_000, 40, false)].concat();
    assert_eq!(clock_from_records(&mixed), Some(2000.0));
    // a timer of whole nanoseconds: 1.5 µs blocks are 1500 ticks
    let fine: Vec<u64> = (0..32)
        .flat_map(|b| [0, 3000, 1_000 + b * 7, 2_500 + b * 7, 1, 0])
        .collect();
    assert_eq!(clock_from_records(&fine), Some(2000.0));
    // too few blocks to show a tick: every interval counts (a one-block latency chase)
    assert_eq!(clock_from_records(&coarse(1, 3000, 1, true)), Some(3000.0));
}

/// Records of `launch` whose blocks did `count(b)` and ran at 1 GHz, with the FMA steps the
/// plan owes where the kernel records them.
fn records_of(launch: &Launch, count: impl Fn(u64) -> u64) -> Vec<u64> {
    let steps = |b| {
        launch
            .owed
            .and_then(|o| o.thread0_steps(launch.grid, launch.block, b))
    };
    (0..launch.grid as u64)
        .flat_map(|b| [0, 1_000_000, 0, 1_000_000, count(b), steps(b).unwrap_or(0)])
        .collect()
}

/// Every block's count must be what the row counts: a block one trip short, a block with an
/// extra sweep word, a plan whose owed trips disagree with the row, and records of the wrong
/// length are all invalid, naming is and should.
#[test]
fn block_records_must_show_the_work_the_row_counts() {
    use roofprobe::cases::Precision as P;
    let case = peak::case(
        P::Bf16x2,
        3 * BLOCK as u64,
        40,
        peak::GPU_FMAS_PER_ITERATION,
    );
    let launch = describe::launch(&case, 3).unwrap();
    assert_eq!(
        launch.owed,
        Some(Owed::PeakTrips {
            precision: P::Bf16x2,
            trips: 40
        })
    );
    assert!(launch.verify_records(&records_of(&launch, |_| 40)).valid);
    let short = launch.verify_records(&records_of(&launch, |b| 40 - (b == 2) as u64));
    assert!(!short.valid);
    assert!(
        short.detail.contains("1 of 3 blocks")
            && short.detail.contains("block 2: is 39, should be 40"),
        "{}",
        short.detail
    );
    // the plan owes what the row counts: a launch whose owed trips drifted from the row's
    // work is caught by the sum, even when every block matches the plan
    let mut drifted = launch.clone();
    drifted.owed = Some(Owed::PeakTrips {
        precision: P::Bf16x2,
        trips: 39,
    });
    let v = drifted.verify_records(&records_of(&drifted, |_| 39));
    assert!(
        !v.valid && v.detail.contains("the row counts"),
        "{}",
        v.detail
    );
    // a short read-back
    assert!(
        !launch
            .verify_records(&records_of(&launch, |_| 40)[1..])
            .valid
    );

    let tensor_launch =
        describe::launch(&tensor::case(P::F16F32, 2 * BLOCK as u64 / 32, 7), 2).unwrap();
    assert!(
        tensor_launch
            .verify_records(&records_of(&tensor_launch, |_| 7))
            .valid
    );
    assert!(
        !tensor_launch
            .verify_records(&records_of(&tensor_launch, |_| 8))
            .valid
    );

    let sweep = describe::launch(&intensity::case(P::F64, 16, 4099), 2).unwrap();
    let share = |b| intensity::gpu_block_words(P::F64, 4099, 2 * BLOCK as u64, BLOCK as u64, b);
    assert!(sweep.verify_records(&records_of(&sweep, share)).valid);
    let extra = sweep.verify_records(&records_of(&sweep, |b| share(b) + (b == 0) as u64));
    assert!(
        !extra.valid && extra.detail.contains("words"),
        "{}",
        extra.detail
    );
    // thread 0's FMA steps: k per trip of its loops (block 1's thread 0, thread 256 of 512,
    // has vectors 256 and 768, then 1280 and 1792, of 2049: two main-loop trips, no tail
    // word); one block of steps short is invalid
    assert_eq!(sweep.owed.unwrap().thread0_steps(2, BLOCK, 1), Some(16 * 2));
    let mut records = records_of(&sweep, share);
    records[BLOCK_RECORD_WORDS + RECORD_STEPS_WORD] -= 16;
    let short = sweep.verify_records(&records);
    assert!(
        !short.valid && short.detail.contains("block 1: is 16, should be 32"),
        "{}",
        short.detail
    );

    // a launch without records takes none
    let copy = describe::launch(&StreamKernel::Copy.case(P::F32, 100), 1).unwrap();
    assert!(copy.verify_records(&[]).valid);
    assert!(!copy.verify_records(&[0; 6]).valid);
}

/// The kernels' loop constants are the ones the work tables count: the peak loop runs
/// `GPU_FMAS_PER_ITERATION` FMAs per trip, the tensor loop `CHAINS` × 2 × `UNROLL` MMAs per
/// trip and `CHAINS` more after it.
#[test]
fn ptx_loops_match_the_work_tables() {
    let body_of = |ptx: &'static str, name: &str| -> &'static str {
        let body = ptx
            .split(&format!(".visible .entry {name}("))
            .nth(1)
            .unwrap();
        body.split(".visible .entry").next().unwrap()
    };
    let between = |text: &'static str, from: &str, to: &str| -> &'static str {
        text.split(from).nth(1).unwrap().split(to).next().unwrap()
    };
    for p in peak::PRECISIONS {
        let name = format!("{}_{p}", peak::KERNEL);
        let case = peak::case(p, BLOCK as u64, 1, peak::GPU_FMAS_PER_ITERATION);
        let ptx = roofprobe::backend::cuda::describe::entry(&case)
            .unwrap()
            .module
            .ptx();
        let Cow::Borrowed(ptx) = ptx else {
            panic!("peak.ptx is a file")
        };
        let loop_body = between(body_of(ptx, &name), &format!("{name}_loop:"), "sub.u32");
        let fmas = loop_body
            .lines()
            .filter(|l| {
                l.trim_start()
                    .starts_with(roofprobe::kernels::intensity::fma_instruction(p))
            })
            .count() as u64;
        assert_eq!(fmas, peak::GPU_FMAS_PER_ITERATION, "{p}");
    }
    for p in tensor::PRECISIONS {
        let name = tensor::entry_name(p);
        let Cow::Borrowed(ptx) = roofprobe::backend::cuda::describe::entry(&tensor::case(p, 8, 1))
            .unwrap()
            .module
            .ptx()
        else {
            panic!("mma*.ptx are files")
        };
        let body = body_of(ptx, &name);
        let loop_body = between(body, &format!("{name}_loop:"), "sub.u32");
        let mmas = loop_body.matches("mma.sync").count() as u64;
        assert_eq!(mmas, tensor::CHAINS * 2 * tensor::UNROLL, "{p}");
        let after = between(body, &format!("{name}_loop_done:"), "ret;");
        assert_eq!(
            after.matches("mma.sync").count() as u64,
            tensor::CHAINS,
            "{p}"
        );
    }
}

#[test]
fn plans_refuse_what_this_build_did_not_plan() {
    use roofprobe::cases::Precision as P;
    // a tensor precision asked of the peak kernel, an unknown k, an unknown STREAM kernel
    let mut bad = peak::case(P::F32, BLOCK as u64, 1, peak::GPU_FMAS_PER_ITERATION);
    bad.precision = P::F16F32;
    assert!(describe::launch(&bad, 1).unwrap_err().contains("no kernel"));
    assert!(
        roofprobe::backend::cuda::describe::entry(&intensity::case(P::F32, 3, 10))
            .unwrap_err()
            .contains("no kernel")
    );
    let mut nonsense = StreamKernel::Copy.case(P::F32, 10);
    nonsense.kernel = "gemv".into();
    assert!(roofprobe::backend::cuda::describe::entry(&nonsense).is_err());
    nonsense = StreamKernel::Copy.case(P::I32, 10);
    assert!(roofprobe::backend::cuda::describe::entry(&nonsense).is_err());
    // a loop count past .u32
    let huge = peak::case(P::F32, BLOCK as u64, 1 << 33, peak::GPU_FMAS_PER_ITERATION);
    assert!(describe::launch(&huge, 1)
        .unwrap_err()
        .contains("do not fit in .u32"));
    // the cache kernels' whole 32-bit-indexed vectors: a working set of 4 KiB plans, one
    // word more does not, nor 2^31 vectors, nor 2^31 threads
    let cache_case = |bytes| roofprobe::cases::cache::case("l1", bytes, 1);
    assert!(describe::launch(&cache_case(4096), 1).is_ok());
    let odd = Case {
        elements: 1025,
        ..cache_case(4096)
    };
    assert!(describe::launch(&odd, 1)
        .unwrap_err()
        .contains("whole 16-byte vectors"));
    assert!(describe::launch(&cache_case(16 << 30), 1).is_ok());
    assert!(describe::launch(&cache_case(32 << 30), 1).is_err());
    assert!(describe::launch(&cache_case(4096), (1 << 31) / BLOCK).is_err());
    assert!(describe::launch(&cache_case(4096), (1 << 31) / BLOCK - 1).is_ok());
}

#[test]
fn reductions_get_one_partial_per_block_and_notes_say_the_loop() {
    let dot = describe::launch(
        &StreamKernel::Dot.case(roofprobe::cases::Precision::F64, 1000),
        7,
    )
    .unwrap();
    assert_eq!(dot.buffer(Role::Output).unwrap().words, 7);
    assert_eq!(dot.kinds().last(), Some(&ParamKind::U64));
    let t = describe::launch(&tensor::case(roofprobe::cases::Precision::S8S32, 16, 5), 2).unwrap();
    assert_eq!(t.note(), "grid 2x256, 8 chains x 5 trips");
    assert_eq!(
        t.buffer(Role::Clocks).unwrap().bytes(),
        2 * BLOCK_RECORD_BYTES
    );
    // a short read-back is an invalid check, not a panic
    assert!(!t.verify(&[1, 2, 3], &records_of(&t, |_| 5)).valid);
}
