//! The run-time forecast (run::forecast): what each kind of case costs (a capacity case its
//! calls, a size-sweep case three samples and its arrays, a launch case its batches, a link case
//! its buffers and copies, a latency launch its hops at its level), and an estimate that follows
//! the runner's schedule.

use roofprobe::backend::PlannedCase;
use roofprobe::cases::stream::StreamKernel;
use roofprobe::cases::{Family, Precision};
use roofprobe::device::BackendKind;
use roofprobe::run::forecast::*;
use roofprobe::run::runner::RunConfig;

fn rates() -> Rates {
    Rates {
        backend: BackendKind::Cuda,
        dram_bytes_per_sec: 1e12,
        cache_bytes_per_sec: 1e13,
        ops_per_sec: vec![(Precision::F32, 1e13)],
        llc_bytes: 50 << 20,
        host_cores: 2,
        pace: 1.0,
    }
}

/// A capacity case is a handful of calls, not sampled launches: it is charged no warm-up
/// and no case budget of samples (which would make each cost seconds: 30 samples of a
/// 10 ms sample minimum and a 0.2 s warm-up), only its calls, and for `largest` one
/// allocation per search step, 64 MiB steps of an H200's 141 GB taking 12.
#[test]
fn a_capacity_case_costs_its_calls_not_a_case_budget() {
    use roofprobe::cases::capacity::{self, Figure};
    let cfg = RunConfig::full();
    let free = capacity::case(Figure::Free, 140 << 30);
    let secs = case_secs(&free, &cfg, 0.01, &rates());
    assert!(secs < CASE_OVERHEAD_SECS + 0.01, "{secs}");
    let largest = capacity::case(Figure::Largest, 140 << 30);
    let secs = case_secs(&largest, &cfg, 0.01, &rates());
    let want = CASE_OVERHEAD_SECS + (12.0 + 5.0) * ALLOCATION_SECS;
    assert!((secs - want).abs() < 1e-9, "{secs} vs {want}");
    // a launch-like case of the same work would cost the warm-up and samples
    let mut as_launches = free.clone();
    as_launches.family = Family::Stream;
    assert!(case_secs(&as_launches, &cfg, 0.01, &rates()) > 0.2);
}

/// A case of the size sweep is charged the runner's schedule for it
/// ([`RunConfig::for_case`]): 3 samples after a warm-up of one sample, not the 2 s case
/// budget and 0.2 s warm-up of a STREAM case, plus its arrays' preparation: on the host
/// below 16 MiB of arrays, on the device from there (twice the working set at the DRAM's
/// rate).
#[test]
fn a_size_sweep_case_costs_three_samples_and_its_arrays() {
    let cfg = RunConfig::full();
    for array_bytes in [1u64 << 20, 256 << 20] {
        let case = roofprobe::cases::efficiency::case(StreamKernel::Triad, array_bytes);
        let launch = launch_secs(&case, &rates());
        let sample = (0.01 / launch).ceil() * launch;
        let prep = if device_prepared(&case) {
            2.0 * case.working_set_bytes as f64 / rates().dram_bytes_per_sec
        } else {
            case.working_set_bytes as f64 * 2.0 / HOST_PREP_BYTES_PER_SEC
        };
        assert_eq!(device_prepared(&case), array_bytes > 1 << 20);
        let want = CASE_OVERHEAD_SECS + prep + 2.0 * launch + sample + 3.0 * sample;
        let secs = case_secs(&case, &cfg, 0.01, &rates());
        assert!((secs - want).abs() < 1e-9, "{secs} vs {want}");
        let mut as_stream = case.clone();
        as_stream.family = Family::Stream;
        assert!(case_secs(&as_stream, &cfg, 0.01, &rates()) > secs + 0.4);
    }
}

/// A launch case is charged its fixed batches, not a case budget: the empty kernel's
/// samples of 1000 launches plus one, the timer's samples of 200 tries, well under a second
/// for both on a GPU.
#[test]
fn a_launch_case_costs_its_batches_not_a_case_budget() {
    use roofprobe::cases::launch::{self, What};
    let cfg = RunConfig::full();
    let samples = f64::from(cfg.min_samples);
    let empty = case_secs(&launch::case(What::Empty), &cfg, 0.01, &rates());
    let want = CASE_OVERHEAD_SECS + (1.0 + samples * 1000.0) * EMPTY_LAUNCH_SECS;
    assert!((empty - want).abs() < 1e-9, "{empty} vs {want}");
    let timer = case_secs(&launch::case(What::Timer), &cfg, 0.01, &rates());
    let want = CASE_OVERHEAD_SECS + samples * 200.0 * EVENT_PAIR_SECS;
    assert!((timer - want).abs() < 1e-9, "{timer} vs {want}");
    assert!(empty + timer < 1.0, "{empty} + {timer}");
}

/// A link case costs its buffers and its few copies, not a case budget of samples: a
/// 1 GiB pinned copy's buffer (two passes at the host's rate) and its six copies at the
/// pinned rate; a pageable copy runs at the pageable rate; the bidirectional case has two
/// host buffers; and the family's sum on an H200-sized device stays within 6 s.
#[test]
fn a_link_case_costs_its_buffers_and_copies() {
    use roofprobe::cases::link::{self, Transfer};
    let cfg = RunConfig::full();
    let gib = link::case(Transfer::HostToDevice, 1 << 30);
    let b = (1u64 << 30) as f64;
    let want = CASE_OVERHEAD_SECS
        + b * 2.0 / HOST_PREP_BYTES_PER_SEC
        + 6.0 * (LINK_COPY_SECS + b / LINK_PINNED_BYTES_PER_SEC);
    let secs = case_secs(&gib, &cfg, 0.01, &rates());
    assert!((secs - want).abs() < 1e-9, "{secs} vs {want}");
    let small = |t| case_secs(&link::case(t, 16 << 20), &cfg, 0.01, &rates());
    assert!(small(Transfer::HostToDevicePageable) > small(Transfer::HostToDevice));
    assert!(small(Transfer::HostToDeviceBidirectional) > small(Transfer::HostToDevice));
    // the whole family on a device with 140 GiB free, alone and with a peer
    let family = |peers: &[u32]| -> f64 {
        roofprobe::backend::cuda::plan::link_cases(140 << 30, peers)
            .iter()
            .map(|p| case_secs(&p.case, &cfg, 0.01, &rates()))
            .sum()
    };
    assert!(family(&[]) < 7.0, "{}", family(&[]));
    let per_peer = family(&[1]) - family(&[]);
    assert!((0.5..3.0).contains(&per_peer), "{per_peer}");
}

/// A latency launch lasts its hops at the load time of the level its ring sits in: L1 for
/// a small `ca` ring, L2 for one within the L2 (a `cg` ring of any size skips L1), DRAM
/// beyond.
#[test]
fn a_latency_launch_lasts_its_hops_at_its_level() {
    use roofprobe::cases::latency;
    let hops = 1 << 17;
    let at = |kernel: &str, bytes: u64| {
        let case = latency::case(kernel, latency::GPU_LINE_BYTES, bytes, hops);
        launch_secs(&case, &rates()) / hops as f64
    };
    assert_eq!(at("ca", 16 << 10), GPU_L1_LOAD_SECS);
    assert_eq!(at("cg", 16 << 10), GPU_L2_LOAD_SECS);
    assert_eq!(at("ca", 4 << 20), GPU_L2_LOAD_SECS);
    assert_eq!(at("cg", 256 << 20), GPU_LOAD_SECS);
    // an unknown L2 (0 bytes) counts every ring beyond L1 as DRAM's
    let unknown = Rates {
        llc_bytes: 0,
        ..rates()
    };
    let case = latency::case("cg", latency::GPU_LINE_BYTES, 4 << 20, hops);
    assert_eq!(launch_secs(&case, &unknown) / hops as f64, GPU_LOAD_SECS);
}

/// A launch is as long as its bytes at the bandwidth or its operations at the peak; a case
/// adds the runner's schedule to it; the plan adds its cases.
#[test]
fn an_estimate_follows_the_runners_schedule() {
    use roofprobe::cases::gemm::Shape;
    // 2 GB copied at 1 TB/s: 2 ms
    let copy = StreamKernel::Copy.case(Precision::F32, 250_000_000);
    assert!((launch_secs(&copy, &rates()) - 2e-3).abs() < 1e-9);
    // 10^12 FMAs' worth at 10^13/s: 0.2 s, above its bytes
    let peak = roofprobe::cases::peak::case(Precision::F32, 1 << 20, 1 << 14, 32);
    let expected = peak.work.flops as f64 / 1e13;
    assert!((launch_secs(&peak, &rates()) - expected).abs() < 1e-12);
    // an unknown precision runs at the slowest known rate
    let f64_peak = roofprobe::cases::peak::case(Precision::F64, 1 << 20, 1 << 14, 32);
    assert!((launch_secs(&f64_peak, &rates()) - f64_peak.work.flops as f64 / 1e13).abs() < 1e-12);
    let cfg = RunConfig::full();
    // 2 ms launches: reps 5 make a 10 ms sample, 30 samples in the 2 s budget, after the
    // 0.2 s warm-up counted from the sizing launch
    let secs = case_secs(&copy, &cfg, 0.01, &rates());
    // its 2 GB of arrays filled and checked on the device: 4 ms at 1 TB/s
    let prep = 2.0 * copy.working_set_bytes as f64 / 1e12;
    let want = CASE_OVERHEAD_SECS + prep + 4e-3 + (0.2 - 2e-3) + 30.0 * 0.01;
    assert!((secs - want).abs() < 1e-6, "{secs} vs {want}");
    let planned: Vec<PlannedCase> = [copy.clone(), copy]
        .into_iter()
        .map(|case| PlannedCase {
            case,
            note: String::new(),
        })
        .collect();
    assert!((plan_secs(&planned, &cfg, 0.01, &rates()) - 2.0 * want).abs() < 1e-6);
    // a one-launch sample as long as the warm-up is the warm-up: 0.3 s launches (300 GB at
    // 1 TB/s) cost the discarded and sizing launches and the samples, nothing more
    let long = StreamKernel::Copy.case(Precision::F32, 37_500_000_000);
    let launch = launch_secs(&long, &rates());
    assert!((launch - 0.3).abs() < 1e-9);
    let prep = 2.0 * long.working_set_bytes as f64 / 1e12;
    let want = CASE_OVERHEAD_SECS + prep + 2.0 * launch + 6.0 * launch;
    let secs = case_secs(&long, &cfg, 0.01, &rates());
    assert!((secs - want).abs() < 1e-6, "{secs} vs {want}");
    // a GEMM case warms up for at most the runner's GEMM warm-up, not the run's 0.2 s
    let gemm = roofprobe::cases::gemm::case("ptx", Precision::Bf16F32, Shape::square(4096));
    assert_eq!(
        cfg.for_case(&gemm, BackendKind::Cuda).warmup_secs,
        roofprobe::run::runner::GEMM_WARMUP_SECS
    );
    assert_eq!(cfg.for_case(&gemm, BackendKind::Cuda).samples, cfg.samples);
    // a compute peak warms up until a GPU's clock settles, and is priced so; on the host,
    // and under --quick, it keeps its short warm-up
    let peak = roofprobe::cases::peak::case(Precision::F32, 1000, 1000, 500);
    let warmup = |cfg: &RunConfig, kind| cfg.for_case(&peak, kind).warmup_secs;
    use roofprobe::run::runner::{COMPUTE_WARMUP_SECS, GPU_COMPUTE_WARMUP_SECS};
    assert_eq!(warmup(&cfg, BackendKind::Cuda), GPU_COMPUTE_WARMUP_SECS);
    assert_eq!(warmup(&cfg, BackendKind::Host), COMPUTE_WARMUP_SECS);
    assert_eq!(
        warmup(&RunConfig::quick(), BackendKind::Cuda),
        COMPUTE_WARMUP_SECS
    );
    let settled = case_secs(&peak, &cfg, 0.01, &rates());
    let quick = case_secs(&peak, &RunConfig::quick(), 0.01, &rates());
    assert!(settled >= quick + GPU_COMPUTE_WARMUP_SECS - COMPUTE_WARMUP_SECS - 1e-9);
    let launch = launch_secs(&gemm, &rates());
    let reps = (0.01 / launch).ceil();
    // its matrices, and its check's 2 (M + N) K + M N input pairs (bf16: exact) on the
    // rates' 2 cores
    let terms = 2.0 * 8192.0 * 4096.0 + 4096.0 * 4096.0;
    let check = terms / (2.0 * HOST_CHECK_TERMS_PER_CORE_SEC.0);
    assert!((host_check_secs(&gemm, 2) - check).abs() < 1e-12);
    assert!((host_check_secs(&gemm, 1) - 2.0 * check).abs() < 1e-12);
    let host = gemm.working_set_bytes as f64 * 2.0 / HOST_PREP_BYTES_PER_SEC + check;
    let want = CASE_OVERHEAD_SECS
        + host
        + 2.0 * launch
        + (roofprobe::run::runner::GEMM_WARMUP_SECS - launch).max(reps * launch)
        + 30.0 * reps * launch;
    let secs = case_secs(&gemm, &cfg, 0.01, &rates());
    assert!((secs - want).abs() < 1e-6, "{secs} vs {want}");
    // the copies of a rotating weight are made on the device: the host prepares the
    // matrices once
    let shape = Shape::new(1, 4096, 4096);
    let mut decode = [roofprobe::cases::gemm::case(
        "ptx",
        Precision::Bf16F32,
        shape,
    )];
    let alone = case_secs(&decode[0], &cfg, 0.01, &rates());
    roofprobe::cases::gemm::rotate_weights(&mut decode, 16, 256 << 20, u64::MAX);
    assert_eq!(roofprobe::cases::gemm::weight_copies(&decode[0]), 8);
    assert_eq!(
        host_prep_bytes(&decode[0]),
        roofprobe::cases::gemm::matrix_bytes(Precision::Bf16F32, shape)
    );
    assert_eq!(case_secs(&decode[0], &cfg, 0.01, &rates()), alone);
}

/// The host's estimate follows the share of its CPUs it is given as the run starts: at half
/// its CPUs every case takes 2^0.75 times as long (launches and arrays alike), at a quarter
/// 4^0.75; a GPU's estimate does not depend on it, and a pace that is no share is taken as 1.
#[test]
fn the_hosts_estimate_scales_with_the_cpus_it_is_given() {
    let cfg = RunConfig::full();
    let host = Rates {
        backend: BackendKind::Host,
        ..rates()
    };
    let planned: Vec<PlannedCase> = [
        StreamKernel::Copy.case(Precision::F32, 1 << 24),
        StreamKernel::Triad.case(Precision::F32, 1 << 24),
    ]
    .into_iter()
    .map(|case| PlannedCase {
        case,
        note: String::new(),
    })
    .collect();
    let at = |pace: f64, rates: &Rates| {
        plan_secs(
            &planned,
            &cfg,
            0.01,
            &Rates {
                pace,
                ..rates.clone()
            },
        )
    };
    let quiet = at(1.0, &host);
    assert!(quiet > 0.0);
    let slower = |share: f64| (1.0 / share).powf(PACE_EXPONENT);
    assert!((at(0.5, &host) - slower(0.5) * quiet).abs() < 1e-9 * quiet);
    assert!((at(0.25, &host) - slower(0.25) * quiet).abs() < 1e-9 * quiet);
    assert!(at(0.5, &host) > 1.5 * quiet && at(0.5, &host) < 2.0 * quiet);
    for nonsense in [0.0, -1.0, 2.0, f64::NAN] {
        assert_eq!(at(nonsense, &host), quiet, "pace {nonsense}");
    }
    let gpu = rates();
    assert_eq!(at(0.5, &gpu), at(1.0, &gpu));
    assert_eq!(Rates::slowdown(&Rates { pace: 0.5, ..gpu }), 1.0);
}
