//! The CUDA plan (roofprobe::backend::cuda::plan): which cases each modelled device runs, at what sizes, with which notes, and how long their launches last at the device's rated speeds.

use roofprobe::backend::cuda::describe;
use roofprobe::backend::cuda::plan::*;
use roofprobe::backend::{PlannedCase, SizeRequest};
use roofprobe::cases::{cache, gemm, latency, tensor, wgmma, Case, Precision};
use roofprobe::device::BackendKind;
use roofprobe::device::DeviceInfo;

/// On Hopper every mma.sync tensor row carries a note: the legacy path where a wgmma row of
/// its type sets the ceiling, and for f64 (no wgmma) what its kernel is; elsewhere none.
#[test]
fn hopper_notes_each_mma_sync_row_by_what_covers_its_type() {
    assert!(!wgmma::PRECISIONS.contains(&Precision::F64F64));
    for p in tensor::PRECISIONS {
        let note = tensor_note((9, 0), p);
        if p == Precision::F64F64 {
            assert_eq!(note, Some(HOPPER_F64_MMA_NOTE));
        } else {
            assert_eq!(note, Some(LEGACY_MMA_NOTE), "{p}");
        }
        assert_eq!(tensor_note((8, 0), p), None);
        assert_eq!(tensor_note((8, 9), p), None);
    }
    assert_eq!(
        tensor_note((9, 0), tensor::HOPPER_F64),
        Some(HOPPER_F64_SHAPE_NOTE)
    );
    assert_eq!(tensor_note((8, 0), tensor::HOPPER_F64), None);
}

/// Hopper's own f64 shape is a row from compute capability 9.0 on, beside Ampere's m8n8k4,
/// with its note, its module (kernels/mma_sm90.ptx) and the flops of m16n8k16; before 9.0
/// there is no such row.
#[test]
fn hopper_plans_its_f64_shape_beside_amperes() {
    let h200 = h200();
    let planned = plan_cases(&h200_model(&h200), SizeRequest::Auto, &mut |_| Ok(132)).unwrap();
    let row = |id: &str| planned.iter().find(|p| p.case.id() == id);
    let hopper = row("tensor/mma_m16n8k16/f64.f64").expect("Hopper's f64 row");
    let ampere = row("tensor/mma_m8n8k4/f64.f64").expect("Ampere's f64 row");
    assert_eq!(hopper.note, HOPPER_F64_SHAPE_NOTE);
    assert_eq!(ampere.note, HOPPER_F64_MMA_NOTE);
    assert_eq!(
        describe::entry(&hopper.case).unwrap(),
        roofprobe::backend::cuda::args::Entry {
            module: roofprobe::backend::cuda::args::ModuleId::MmaSm90,
            name: "mma_m16n8k16_f64_f64".into()
        }
    );
    assert_eq!(tensor::flops_per_mma(tensor::HOPPER_F64), 4096);
    assert_eq!(tensor::iterations_of(&hopper.case).map(|i| i > 0), Ok(true));
    let a100 = info("NVIDIA A100-SXM4-80GB", 108, Some(1410.0));
    let a100_model = DeviceModel {
        compute_capability: (8, 0),
        ..h200_model(&a100)
    };
    let planned = plan_cases(&a100_model, SizeRequest::Auto, &mut |_| Ok(108)).unwrap();
    assert!(planned
        .iter()
        .all(|p| p.case.kernel != "mma_m16n8k16" || p.case.precision != Precision::F64F64));
}

/// A cache launch reads about a millisecond's worth at 128 bytes per SM per clock: some
/// 32 GiB on an H100, proportionally less on a smaller or slower device.
#[test]
fn cache_launches_scale_with_the_device() {
    let h100 = info("NVIDIA H100 80GB HBM3", 132, Some(1980.0));
    let bytes = cache_bytes_per_launch(&h100);
    assert!((33.0e9..34.0e9).contains(&(bytes as f64)), "{bytes}");
    let small = info("small", 2, Some(100.0));
    assert_eq!(cache_bytes_per_launch(&small), 25_600_000);
}

/// On an H200 (60 MiB of L2, so the DRAM rule's 256 MiB) every weight of the batch sweep
/// under 256 MiB rotates through copies up to it, in our kernel's row and cuBLAS's alike,
/// and the launch reads them in turn; the largest weight, the squares and Hopper's GEMMs
/// keep one B. A smaller --size asks for fewer copies.
#[test]
fn batch_sweep_weights_rotate_up_to_the_dram_rule_on_a_gpu() {
    let h200 = h200();
    let model = h200_model(&h200);
    let cases = gemm_cases(&model, SizeRequest::Auto);
    let copies = |id: &str| {
        let case = cases
            .iter()
            .find(|c| c.id() == id)
            .unwrap_or_else(|| panic!("{id} is not planned"));
        gemm::weight_copies(case)
    };
    // B of 4096 × 4096 bf16 is 32 MiB: 8 copies (A and C add a few KiB)
    assert_eq!(copies("gemm/ptx/bf16.f32/1x4096x4096"), 8);
    assert_eq!(copies("gemm/cublas/bf16.f32/1x4096x4096"), 8);
    // 112 MiB: 3 copies; 448 MiB: one
    assert_eq!(copies("gemm/ptx/bf16.f32/16x14336x4096"), 3);
    assert_eq!(copies("gemm/ptx/bf16.f32/1x28672x8192"), 1);
    // M = 2048: A 16 MiB and C 32 MiB beside B, 7 copies reach 256 MiB
    assert_eq!(copies("gemm/ptx/bf16.f32/2048x4096x4096"), 7);
    for id in [
        "gemm/ptx/bf16.f32/4096x4096x4096",
        "gemm/ptx/bf16.f32/256x256x256",
        "gemm/wgmma/bf16.f32/8192x8192x8192",
        "gemm/tma/e4m3.f32/8192x8192x8192",
    ] {
        assert_eq!(copies(id), 1, "{id}");
    }
    let decode = cases
        .iter()
        .find(|c| c.id() == "gemm/ptx/bf16.f32/1x4096x4096")
        .unwrap();
    let launch = roofprobe::backend::cuda::describe::launch(decode, 1).unwrap();
    let rotation = launch.rotation.expect("a rotating B");
    assert_eq!(
        (rotation.role, rotation.copies),
        (roofprobe::backend::cuda::args::Role::Input(1), 8)
    );
    assert!(
        launch.device_bytes() >= 256 << 20,
        "{}",
        launch.device_bytes()
    );
    assert!(launch.note().contains("B in 8 copies"), "{}", launch.note());
    // an explicit size: the working set asked for
    let sized = gemm_cases(&model, SizeRequest::BytesPerArray(64 << 20));
    let decode = sized
        .iter()
        .find(|c| c.id() == "gemm/ptx/bf16.f32/1x4096x4096")
        .unwrap();
    assert_eq!(gemm::weight_copies(decode), 2);
}

/// An H200 plans every square from 256³ to 16384³ in bf16 and f16, the whole batch sweep
/// in bf16, 256³ and 8192³ in tf32, and 4096³ in f32 (the SIMT kernel), cuBLAS before ours
/// on each shape.
#[test]
fn gemm_cases_cover_the_sweeps_on_a_big_gpu() {
    let h200 = h200();
    let model = h200_model(&h200);
    let cases = gemm_cases(&model, SizeRequest::Auto);
    let count = |kernel: &str, p: Precision| {
        cases
            .iter()
            .filter(|c| c.kernel == kernel && c.precision == p)
            .count()
    };
    // the squares, and the batch sweep less its two squares (4096³ and 8192³), once each
    assert_eq!(count("ptx", Precision::Bf16F32), 7 + 5 * 14 - 2);
    assert_eq!(count("cublas", Precision::Bf16F32), 7 + 5 * 14 - 2);
    // Hopper's GEMMs: 8192³ bf16, right after cuBLAS on it (cp.async-fed, then TMA-fed,
    // alone and in clusters of two); on no other device
    let at = cases
        .iter()
        .position(|c| c.kernel == "wgmma")
        .expect("a wgmma GEMM on Hopper");
    assert_eq!(cases[at - 1].id(), "gemm/cublas/bf16.f32/8192x8192x8192");
    assert_eq!(cases[at].id(), "gemm/wgmma/bf16.f32/8192x8192x8192");
    assert_eq!(cases[at + 1].id(), "gemm/tma/bf16.f32/8192x8192x8192");
    assert_eq!(
        cases[at + 2].id(),
        "gemm/tma-cluster/bf16.f32/8192x8192x8192"
    );
    assert_eq!(cases[at + 3].id(), "gemm/cublas/e4m3.f32/8192x8192x8192");
    assert_eq!(cases[at + 4].id(), "gemm/tma/e4m3.f32/8192x8192x8192");
    assert_eq!(
        cases[at + 5].id(),
        "gemm/tma-cluster/e4m3.f32/8192x8192x8192"
    );
    assert_eq!(count("wgmma", Precision::Bf16F32), 1);
    assert_eq!(count("tma", Precision::Bf16F32), 1);
    assert_eq!(count("tma", Precision::E4m3F32), 1);
    assert_eq!(count("tma-cluster", Precision::Bf16F32), 1);
    assert_eq!(count("tma-cluster", Precision::E4m3F32), 1);
    assert_eq!(count("cublas", Precision::E4m3F32), 1);
    let a100 = DeviceModel {
        compute_capability: (8, 0),
        ..model
    };
    assert!(gemm_cases(&a100, SizeRequest::Auto)
        .iter()
        .all(|c| !HOPPER_GEMMS.contains(&c.kernel.as_str()) && c.precision != Precision::E4m3F32));
    // a Hopper too small for 8192³ (the simulated driver's): its largest bf16 square
    let tiny = DeviceModel {
        usable_bytes: 64 << 20,
        ..model
    };
    let hopper: Vec<String> = gemm_cases(&tiny, SizeRequest::Auto)
        .iter()
        .filter(|c| HOPPER_GEMMS.contains(&c.kernel.as_str()) || c.precision == Precision::E4m3F32)
        .map(|c| c.id())
        .collect();
    assert_eq!(
        hopper,
        [
            "gemm/wgmma/bf16.f32/2048x2048x2048",
            "gemm/tma/bf16.f32/2048x2048x2048",
            "gemm/tma-cluster/bf16.f32/2048x2048x2048",
            "gemm/cublas/e4m3.f32/2048x2048x2048",
            "gemm/tma/e4m3.f32/2048x2048x2048",
            "gemm/tma-cluster/e4m3.f32/2048x2048x2048",
        ]
    );
    let mut ids: Vec<String> = cases.iter().map(|c| c.id()).collect();
    ids.sort();
    let all = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), all, "a GEMM case planned twice");
    assert_eq!(count("ptx", Precision::F16F32), 2);
    assert!(cases
        .iter()
        .any(|c| c.id() == "gemm/ptx/f16.f32/4096x4096x4096"));
    assert_eq!(count("ptx", Precision::Tf32F32), 2);
    assert_eq!(count("cublas", Precision::Tf32F32), 2);
    assert!(cases
        .iter()
        .any(|c| c.id() == "gemm/ptx/tf32.f32/8192x8192x8192"));
    let f32_ids: Vec<String> = cases
        .iter()
        .filter(|c| c.precision == Precision::F32)
        .map(|c| c.id())
        .collect();
    assert_eq!(
        f32_ids,
        [
            "gemm/cublas/f32/4096x4096x4096",
            "gemm/ptx/f32/4096x4096x4096",
        ]
    );
    assert_eq!(cases[0].id(), "gemm/cublas/bf16.f32/256x256x256");
    assert_eq!(cases[1].id(), "gemm/ptx/bf16.f32/256x256x256");
    // a --size of 32 MiB: no Llama weight in bf16 above it (4096² is 32 MiB)
    let small = gemm_cases(&model, SizeRequest::BytesPerArray(32 << 20));
    assert!(small.iter().all(|c| {
        let s = gemm::shape_of(c).unwrap();
        s.n * s.k * 2 <= 32 << 20 && s.m * s.n * 4 <= 32 << 20
    }));
}

/// The f32 SIMT GEMM's one square is the largest that fits up to 4096³: a device with 2 MiB
/// to spare (the simulated driver's) plans 256³ (768 KiB of f32; 512³ is 3 MiB), a --size of
/// 32 MiB 2048³ (16 MiB a matrix; 4096³'s A is 64 MiB), an H200 4096³ and nothing larger.
#[test]
fn f32_gemm_squares_fit_the_device() {
    let small = info("simulated", 2, Some(1000.0));
    let model = DeviceModel {
        info: &small,
        compute_capability: (8, 0),
        usable_bytes: 2 << 20,
        peers: &[],
    };
    let ids: Vec<String> = gemm_cases(&model, SizeRequest::Auto)
        .iter()
        .filter(|c| c.precision == gemm::SIMT_PRECISION)
        .map(|c| c.id())
        .collect();
    assert_eq!(
        ids,
        ["gemm/cublas/f32/256x256x256", "gemm/ptx/f32/256x256x256"]
    );
    let h200 = h200();
    let model = h200_model(&h200);
    let f32_ids = |size| -> Vec<String> {
        gemm_cases(&model, size)
            .iter()
            .filter(|c| c.precision == gemm::SIMT_PRECISION)
            .map(|c| c.id())
            .collect()
    };
    assert_eq!(
        f32_ids(SizeRequest::BytesPerArray(32 << 20)),
        [
            "gemm/cublas/f32/2048x2048x2048",
            "gemm/ptx/f32/2048x2048x2048"
        ]
    );
    assert_eq!(
        f32_ids(SizeRequest::Auto),
        [
            "gemm/cublas/f32/4096x4096x4096",
            "gemm/ptx/f32/4096x4096x4096"
        ]
    );
    // a device with room for no square plans no f32 GEMM
    let none = DeviceModel {
        usable_bytes: 64 << 10,
        peers: &[],
        ..model
    };
    assert!(
        f32_ids(SizeRequest::Auto).len() == 2 && {
            gemm_cases(&none, SizeRequest::Auto)
                .iter()
                .all(|c| c.precision != gemm::SIMT_PRECISION)
        }
    );
}

#[test]
fn fp8_only_where_native() {
    assert!(native_fp8_mma((8, 9)));
    assert!(native_fp8_mma((12, 0)));
    assert!(!native_fp8_mma((9, 0)));
    assert!(!native_fp8_mma((8, 6)));
    assert!(!native_fp8_mma((8, 0)));
    assert!(!native_fp8_mma((10, 0)));
}

/// An H200 (132 SMs × 256 KiB of L1, 60 MiB of L2 as reported) gets L1 and L2 working
/// sets inside each; a device the L1 table does not know gets L2 cases only.
#[test]
fn cache_cases_fit_their_level() {
    let h200 = h200();
    let cases = cache_cases(&h200, (9, 0));
    let ids: Vec<String> = cases.iter().map(Case::id).collect();
    assert_eq!(
        ids,
        [
            "cache/l1/i32/2048",
            "cache/l1/i32/4096",
            "cache/l1/i32/8192",
            "cache/l1/i32/16384",
            "cache/l2/i32/2048",
            "cache/l2/i32/4096",
            "cache/l2/i32/8192",
            "cache/l2/i32/16384",
        ]
    );
    for c in &cases {
        let passes = cache::passes(c);
        assert!(passes >= 1 && passes <= u64::from(u32::MAX), "{}", c.id());
        assert_eq!(c.work.bytes_read, passes * c.working_set_bytes);
    }
    assert!(cache_cases(&h200, (7, 5)).iter().all(|c| c.kernel == "l2"));
    assert_eq!(l1_bytes_per_sm((8, 6)), Some(128 << 10));
    assert_eq!(l1_bytes_per_sm((7, 0)), None);
}

/// An H200's sweep: 3 steps per octave from 4 MiB (132 SMs × 2,048 threads × 16 bytes) to
/// 4 × its L2, with `ld.global.cg` loads (the `l2` kernel, past L1), noting its L2 alone.
#[test]
fn the_sweep_spans_the_l2_to_beyond_it() {
    let h200 = h200();
    let planned = sweep_cases(&h200, (9, 0));
    let sizes: Vec<u64> = planned.iter().map(|p| p.case.working_set_bytes).collect();
    assert_eq!(sizes[0], 132 * 2048 * 16);
    assert_eq!(*sizes.last().unwrap(), 240 << 20);
    assert_eq!(sizes.len(), 19);
    assert!(planned.iter().all(|p| cache::is_sweep_step(&p.case)));
    assert_eq!(
        cache::reported_levels(&planned[0].note),
        [("L2".to_string(), 60 << 20)]
    );
    for p in &planned {
        assert_eq!(describe::launch(&p.case, 1).unwrap().entry.name, "l2_i32");
    }
    let passes = cache::passes(&planned[0].case);
    assert!(passes > 1 && passes <= u64::from(u32::MAX));
}

/// The GPU sweep's L2 plateau is labelled L2 on every device shape, even where the SMs' L1s
/// together outgrow the L2: an RTX 3090 (82 SMs × 128 KiB = 10.25 MiB of L1 against 6 MiB of
/// L2) and an H200 (132 × 256 KiB = 33 MiB against 60 MiB). A model of the caches gives each
/// planned step the bandwidth of the level its kernel's loads reach (each SM re-reads its own
/// slice, so a caching load hits L1 while the working set fits the L1s together, then L2 while
/// it fits the L2, then DRAM; a `.cg` load skips L1), and the fit finds the L2 plateau at L2's
/// figure. Planted: the sweep with caching loads, as it was, gives the 3090 no L2 plateau, and
/// the label L2 goes to its L1s' figure.
#[test]
fn the_gpu_sweep_labels_an_l2_plateau_on_every_device_shape() {
    use roofprobe::analysis::fixtures::sweep_step;
    use roofprobe::analysis::roofline::sweep_levels;
    let (l1_gbps, l2_gbps, dram_gbps) = (30_000.0, 7_000.0, 900.0);
    for (name, sms, cc, l2) in [
        ("NVIDIA GeForce RTX 3090", 82, (8, 6), 6u64 << 20),
        ("NVIDIA H200", 132, (9, 0), 60 << 20),
    ] {
        let info = DeviceInfo {
            llc_bytes: l2,
            ..info(name, sms, Some(1700.0))
        };
        let l1s = l1_bytes_per_sm(cc).unwrap() * u64::from(sms);
        let planned = sweep_cases(&info, cc);
        let curve = |caching: &dyn Fn(&Case) -> bool| {
            let rows: Vec<_> = planned
                .iter()
                .map(|p| {
                    let bytes = p.case.working_set_bytes;
                    let gbps = if caching(&p.case) && bytes <= l1s {
                        l1_gbps
                    } else if bytes <= l2 {
                        l2_gbps
                    } else {
                        dram_gbps
                    };
                    sweep_step(bytes, gbps, &p.note)
                })
                .collect();
            sweep_levels(&rows)
                .into_iter()
                .find(|l| l.plateau.matched == "L2")
                .map(|l| l.plateau.median_gbps)
        };
        // the kernel the backend launches for each step
        let as_launched = |c: &Case| describe::launch(c, 1).unwrap().entry.name == "l1_i32";
        assert_eq!(curve(&as_launched), Some(l2_gbps), "{name}");
        if l1s > l2 {
            let before = curve(&|_| true);
            assert_ne!(
                before,
                Some(l2_gbps),
                "{name}: the caching sweep found the L2"
            );
            eprintln!("{name} with caching loads: the plateau labelled L2 reads {before:?} GB/s");
        }
    }
}

/// An H200 as its driver reports it: 132 SMs, 1980 MHz at most, 60 MiB of L2.
fn h200() -> DeviceInfo {
    DeviceInfo {
        llc_bytes: 60 << 20,
        ..info("NVIDIA H200", 132, Some(1980.0))
    }
}

/// What planning knows of `h200`: compute capability 9.0, 120 GiB to use, no peers.
fn h200_model(h200: &DeviceInfo) -> DeviceModel<'_> {
    DeviceModel {
        info: h200,
        compute_capability: (9, 0),
        usable_bytes: 120 << 30,
        peers: &[],
    }
}

fn info(name: &str, sms: u32, mhz: Option<f64>) -> DeviceInfo {
    DeviceInfo {
        backend: BackendKind::Cuda,
        id: "cuda:0".into(),
        name: name.into(),
        compute_capability: String::new(),
        units: sms,
        clock_mhz: mhz,
        memory_clock_mhz: None,
        memory_bus_bits: None,
        llc_bytes: 40 << 20,
        caches: Vec::new(),
        memory_total_bytes: 0,
        memory_free_bytes: 0,
        driver: String::new(),
        identity: Default::default(),
        extra: Vec::new(),
    }
}

/// An H200 (60 MiB of L2) chases at 16 KiB through L1, at 4 MiB through L2 only, and at
/// 256 MiB (the first size at least 4 × its L2, noted as holding TLB misses), 131072 hops a
/// launch; a small device takes
/// the fewest hops; a size beyond the memory the cases may use is left out.
#[test]
fn latency_cases_cover_l1_l2_and_dram() {
    let h200 = h200();
    let ids: Vec<String> = latency_cases(&h200, 100 << 30)
        .iter()
        .map(Case::id)
        .collect();
    assert_eq!(
        ids,
        [
            "latency/ca/i32/16",
            "latency/cg/i32/4096",
            "latency/cg/i32/262144"
        ]
    );
    assert!(latency_cases(&h200, 100 << 30)
        .iter()
        .all(|c| latency::hops(c) == 1 << 17 && latency::line_bytes(c) == latency::GPU_LINE_BYTES));
    // the DRAM chase's note says it holds TLB misses; the others carry none
    let notes: Vec<String> = latency_cases(&h200, 100 << 30)
        .iter()
        .map(|c| latency_note(c, &h200))
        .collect();
    assert_eq!(notes, ["", "", DRAM_LATENCY_NOTE]);
    let mut small = info("small", 2, Some(100.0));
    small.llc_bytes = 32 << 10;
    let few = latency_cases(&small, 1 << 30);
    assert!(few.iter().all(|c| latency::hops(c) == 4096));
    assert_eq!(
        few.iter().filter_map(Case::count).collect::<Vec<_>>(),
        [16, 4, 128]
    );
    assert_eq!(latency_cases(&h200, 100 << 20).len(), 2, "256 MiB left out");
}

/// An RTX 3090 has no table rate for its f64 tensor-core MMA: the launch is sized at its
/// slowest known rate (f64 on the CUDA cores), not at a 1 TFLOP guess that would make one
/// launch last about two seconds.
#[test]
fn an_unknown_rate_sizes_at_the_slowest_known_one() {
    let rtx3090 = info("NVIDIA GeForce RTX 3090", 82, Some(1695.0));
    let f64_cores = theory_gflops(&rtx3090, (8, 6), Precision::F64, 1695.0).unwrap();
    assert!(theory_gflops(&rtx3090, (8, 6), Precision::F64F64, 1695.0).is_none());
    assert_eq!(
        target_flops(&rtx3090, (8, 6), Precision::F64F64),
        f64_cores * 1e9 * TARGET_LAUNCH_SECS
    );
    let future = info("NVIDIA Future", 200, None);
    assert_eq!(
        target_flops(&future, (15, 0), Precision::F32),
        UNKNOWN_RATE_FLOPS
    );
}

#[test]
fn a_grid_that_is_unknown_plans_the_case_with_the_reason() {
    let a100 = info("NVIDIA A100-SXM4-80GB", 108, Some(1410.0));
    let device = DeviceModel {
        info: &a100,
        compute_capability: (8, 0),
        usable_bytes: 8 << 30,
        peers: &[],
    };
    let planned = plan_cases(&device, SizeRequest::Auto, &mut |entry| {
        if entry.module == roofprobe::backend::cuda::args::ModuleId::Mma {
            Err(roofprobe::Error::Internal("mma.ptx did not load".into()))
        } else {
            Ok(108 * 4)
        }
    })
    .unwrap();
    let tensor: Vec<_> = planned
        .iter()
        .filter(|p| p.case.family == roofprobe::cases::Family::Tensor)
        .collect();
    assert_eq!(tensor.len(), 6, "no fp8 on 8.0");
    assert!(tensor.iter().all(|p| p.note == "mma.ptx did not load"));
    let peak = planned
        .iter()
        .find(|p| p.case.id() == "peak/fma/f32")
        .unwrap();
    assert_eq!(
        (peak.case.elements, peak.note.as_str()),
        (108 * 4 * 256, "")
    );
    // an older device plans the capacity figures (driver calls, no kernel), the STREAM
    // cases and the size sweep (STREAM kernels: copy and triad, 1 MiB to 2 GiB per array: the
    // STREAM arrays hold 1 ms of the A100's 2,039 GB/s, 2 GiB, above the DRAM rule's 4 × 40 MiB
    // L2 and 256 MiB) only
    let old = DeviceModel {
        compute_capability: (7, 5),
        ..device
    };
    let planned = plan_cases(&old, SizeRequest::Auto, &mut |_| unreachable!()).unwrap();
    assert_eq!(planned.len(), 4 + 14 + 2 * 12);
    let sweep: Vec<String> = planned
        .iter()
        .filter(|p| p.case.family == roofprobe::cases::Family::Efficiency)
        .map(|p| p.case.id())
        .collect();
    assert_eq!(sweep.first().unwrap(), "efficiency/copy/f32/1024");
    assert_eq!(sweep.last().unwrap(), "efficiency/triad/f32/2097152");
    // a device with less free memory: three arrays must fit, and the largest size says so
    let small = DeviceModel {
        usable_bytes: 100 << 20,
        peers: &[],
        ..old
    };
    let planned = plan_cases(
        &small,
        SizeRequest::BytesPerArray(16 << 20),
        &mut |_| unreachable!(),
    )
    .unwrap();
    let sweep: Vec<&PlannedCase> = planned
        .iter()
        .filter(|p| p.case.family == roofprobe::cases::Family::Efficiency)
        .collect();
    assert_eq!(sweep.len(), 2 * 5, "1 to 16 MiB");
    assert!(sweep.iter().all(|p| p.note.is_empty()));
    let planned = plan_cases(&small, SizeRequest::Auto, &mut |_| unreachable!());
    // the STREAM cases are reduced to fit; the sweep stops at 32 MiB (3 × 32 MiB ≤ 100 MiB)
    let planned = planned.unwrap();
    let sweep: Vec<&PlannedCase> = planned
        .iter()
        .filter(|p| p.case.family == roofprobe::cases::Family::Efficiency)
        .collect();
    assert_eq!(sweep.len(), 2 * 6, "1 to 32 MiB");
    assert!(
        sweep[5].note.contains("larger sizes left out"),
        "{}",
        sweep[5].note
    );
    assert!(sweep[4].note.is_empty());
    assert!(planned[..4]
        .iter()
        .all(|p| p.case.family == roofprobe::cases::Family::Capacity));
}
