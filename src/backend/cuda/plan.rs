//! Which cases a CUDA device runs, and how big: pure functions of what the driver reports about
//! the device ([`DeviceModel`]) and of each kernel's one-wave grid, so that a test can plan for
//! an H200, an A100 or an RTX 3090 on a machine with no GPU.
//!
//! Sizes: the STREAM arrays and the intensity sweep's are DRAM-sized ([`dram_array_bytes`]: the
//! DRAM rule, 4 × L2 and at least 256 MiB per array, and at least [`DRAM_LAUNCH_SECS`] of the
//! spec sheet's bandwidth, capped by free memory). A peak or tensor launch fills every SM to the kernel's
//! occupancy once (one wave) and loops long enough to last about [`TARGET_LAUNCH_SECS`] at the
//! device's theoretical peak at its maximum clock; where no source gives that rate, at the
//! slowest rate known for the device (so a launch is short rather than seconds long), and 1
//! TFLOP where nothing is known about the device.
//!
//! This module must not call the driver: the CUDA backend ([`crate::backend::cuda`]) asks the driver and
//! hands the answers in.

use super::args::{Entry, BLOCK};
use super::describe;
use crate::backend::{dram_rule_bytes, efficiency_cases, plan_arrays, PlannedCase, SizeRequest};
use crate::cases::{
    arith, cache, capacity, gemm, intensity, latency, launch as launch_rows, link, peak, stream,
    tensor, wgmma, Case, Precision,
};
use crate::device::DeviceInfo;
use crate::specs::theory;
use crate::Result;

/// How long one peak or tensor launch should last at the theoretical peak: long enough that
/// launch gaps and the clock reads around the loop are far below 1 % (the runner batches
/// launches into ≥ 10 ms samples on top of this).
pub const TARGET_LAUNCH_SECS: f64 = 2e-3;

/// How long one launch of a STREAM kernel over DRAM-sized arrays lasts at least, at the spec
/// sheet's DRAM bandwidth: each array holds this long's worth of it, so a kernel that moves one
/// array (read, write) lasts this long and the others longer. Issue 57: an H200's 512 MiB arrays
/// (the 4 × L2 and 256 MiB rule alone) made a copy of about 0.2 ms, where the gap between
/// launches and the grid's ramp and tail (a few µs, [`DRAM_LAUNCH_FIXED_SECS`]) cost 1-3 %.
pub const DRAM_LAUNCH_SECS: f64 = 1e-3;

/// What a DRAM launch costs whatever its size, as the plan models it: the gap between two
/// back-to-back launches and the grid's ramp and tail, a few µs on the GPUs roofprobe knows
/// (issue 57 put it at 1-3 % of a 0.12 ms launch: 1.2-3.6 µs), taken at the top. The size sweep
/// measures it (`efficiency`'s constant `a`); the tests hold the planned sizes to the plateau of
/// the curve this constant makes.
pub const DRAM_LAUNCH_FIXED_SECS: f64 = 4e-6;

/// The step a DRAM array is rounded up to: 256 MiB, a multiple of every word and vector.
pub const DRAM_ARRAY_STEP_BYTES: u64 = 256 << 20;

/// The device's DRAM bandwidth, bytes per second, as its spec sheet gives it (the entry its name
/// matches), else bus width × maximum memory clock; `None` where neither is known.
pub fn spec_dram_bytes_per_sec(info: &DeviceInfo) -> Option<f64> {
    use crate::cases::{Family, Precision};
    use crate::specs::{self, DeviceAttributes};
    let attributes = DeviceAttributes::from_info(info);
    let (basis, sheet) = specs::basis_for(&attributes);
    specs::spec_figure(&basis, sheet, &attributes, Family::Stream, Precision::F32)
        .map(|f| f.value * 1e9)
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// Bytes per array of a GPU's STREAM cases and intensity sweep, and the largest of its size
/// sweep: the DRAM rule
/// (4 × the L2, at least 256 MiB: [`dram_rule_bytes`]), and at least [`DRAM_LAUNCH_SECS`] of
/// the spec sheet's bandwidth, rounded up to [`DRAM_ARRAY_STEP_BYTES`] (an H200's 4.8 TB/s:
/// 4.5 GiB; an RTX 3090's 936 GB/s: 1 GiB). The plan caps it to free memory. Arrays this large
/// are filled and checked on the device ([`describe::device_prep`]): the host would take
/// seconds to generate and read back each.
pub fn dram_array_bytes(info: &DeviceInfo) -> u64 {
    let long = spec_dram_bytes_per_sec(info).map_or(0, |bytes_per_sec| {
        ((bytes_per_sec * DRAM_LAUNCH_SECS) as u64).div_ceil(DRAM_ARRAY_STEP_BYTES)
            * DRAM_ARRAY_STEP_BYTES
    });
    dram_rule_bytes(info.llc_bytes).max(long)
}

/// Operations of one launch where nothing is known about the device's rates.
pub const UNKNOWN_RATE_FLOPS: f64 = 1e12;

/// Bytes per SM per clock the cache sweep's launch length is sized for: the 128 bytes an SM's
/// L1 returns per clock (CUDA C++ Programming Guide, "Compute Capabilities"; Ampere and Hopper
/// tuning guides), so an L1 launch lasts about [`CACHE_LAUNCH_SECS`] and an L2 one a few times
/// longer.
pub const CACHE_BYTES_PER_SM_CLOCK: f64 = 128.0;

/// How long one L1 cache-sweep launch should last at that rate (the runner batches launches
/// into samples either way).
pub const CACHE_LAUNCH_SECS: f64 = 1e-3;

/// Bytes one cache-sweep launch reads: [`CACHE_LAUNCH_SECS`] at [`CACHE_BYTES_PER_SM_CLOCK`] on
/// every SM at the device's maximum clock (about 32 GiB on an H100: 132 SMs at 1.98 GHz), so a
/// launch is as long on a small GPU as on a large one.
pub fn cache_bytes_per_launch(info: &DeviceInfo) -> u64 {
    let mhz = info.clock_mhz.unwrap_or(FALLBACK_CLOCK_MHZ);
    (f64::from(info.units) * mhz * 1e6 * CACHE_BYTES_PER_SM_CLOCK * CACHE_LAUNCH_SECS) as u64
}

/// The unified L1 data cache / shared memory of one SM, in bytes, by compute capability: what an
/// L1-resident working set may fill when a kernel uses no shared memory. CUDA C++ Programming
/// Guide, "Compute Capabilities": 192 KB per SM on 8.0 and 8.7, 128 KB on 8.6 and 8.9, 256 KB on
/// 9.0 and 10.x, 128 KB on 12.x. `None` where the guide gives no figure this table carries.
pub fn l1_bytes_per_sm(compute_capability: (u32, u32)) -> Option<u64> {
    match compute_capability {
        (8, 0) | (8, 7) => Some(192 << 10),
        (8, 6) | (8, 9) | (12, _) => Some(128 << 10),
        (9, 0) | (10, _) => Some(256 << 10),
        _ => None,
    }
}

/// The cache sweep of a device: L1 working sets within the SMs' L1s together (each SM's blocks
/// read their own part of the array again on every pass), and L2 ones within the L2 (read with
/// `ld.global.cg`, which skips L1). Nothing for L1 where [`l1_bytes_per_sm`] has no figure.
pub fn cache_cases(info: &DeviceInfo, cc: (u32, u32)) -> Vec<Case> {
    let l1 = l1_bytes_per_sm(cc).map_or(0, |b| b * u64::from(info.units));
    [("l1", l1), ("l2", info.llc_bytes)]
        .into_iter()
        .flat_map(|(level, capacity)| {
            cache::level_cases(level, 0, capacity, cache_bytes_per_launch(info))
        })
        .collect()
}

/// Threads an SM runs at most (2,048 on every GPU since Volta but Turing's 1,024 and the 12.x
/// parts' 1,536): with a 16-byte vector each, the smallest working set of a GPU's sweep (below
/// it threads idle and the launch, not the cache, sets the time).
pub const SWEEP_MAX_THREADS_PER_SM: u64 = 2048;

/// The cache levels a GPU reports, as the sweep's plateaus are matched to them: `L1` (each SM's
/// unified L1 from [`l1_bytes_per_sm`], times the SMs; left out where the table has no figure)
/// and `L2` (the driver's).
pub fn gpu_cache_levels(info: &DeviceInfo, cc: (u32, u32)) -> Vec<(String, u64)> {
    let l1 = l1_bytes_per_sm(cc).map(|b| ("L1".to_string(), b * u64::from(info.units)));
    l1.into_iter()
        .chain((info.llc_bytes > 0).then(|| ("L2".to_string(), info.llc_bytes)))
        .collect()
}

/// The bandwidth sweep of a device: [`cache::GPU_STEPS_PER_OCTAVE`] steps per octave with
/// `ld.global.cg` loads (the `l2` kernel, past L1), from one vector per thread of a full device
/// ([`SWEEP_MAX_THREADS_PER_SM`]) to 4 × the L2, each noting the level its plateaus are matched
/// to: the L2 alone, since the loads skip L1 ([`gpu_cache_levels`] less L1). Its curve shows the
/// L2 and DRAM on every device, even where the SMs' L1s together outgrow the L2.
pub fn sweep_cases(info: &DeviceInfo, cc: (u32, u32)) -> Vec<PlannedCase> {
    let from = u64::from(info.units) * SWEEP_MAX_THREADS_PER_SM * 16;
    let levels: Vec<(String, u64)> = gpu_cache_levels(info, cc)
        .into_iter()
        .filter(|(name, _)| name != "L1")
        .collect();
    let note = cache::sweep_note(&levels);
    cache::sweep_cases(
        from,
        4 * info.llc_bytes,
        cache::GPU_STEPS_PER_OCTAVE,
        cache_bytes_per_launch(info),
    )
    .into_iter()
    .map(|case| PlannedCase {
        case,
        note: note.clone(),
    })
    .collect()
}

/// Longest one GEMM launch may last at the device's theoretical tensor peak: 16384³ in bf16 on
/// an H200 is about 9 ms there; on a small GPU the largest squares are left out.
pub const GEMM_MAX_LAUNCH_SECS: f64 = 0.5;

/// Square sides the tf32 GEMM runs on: the smallest (the simulated driver's row) and the
/// largest bf16's headline shape; a default run on an H200 must fit in four minutes, so tf32
/// gets two points, not a sweep.
pub const GEMM_TF32_SQUARE: [u64; 2] = [256, 8192];

/// Square sides the f16 GEMM runs on: f16 and bf16 inputs run at one tensor rate on every GPU
/// roofprobe knows, so bf16 carries the sweep and f16 two points beside it (the simulated
/// driver's row, and a large square), which a default H200 run's four minutes have room for
/// beside the memory families.
pub const GEMM_F16_SQUARE: [u64; 2] = [256, 4096];

/// The f32 SIMT GEMM's one square: 4096³ (about 2 ms at an H200's f32 FMA peak), or on a
/// device too small for it the largest square of the sweep that fits (the simulated driver's
/// 256³). One point, not tf32's two: by the estimate a default H200 run has room for one more
/// pair of rows (cuBLAS and ours), not two (`tests/kernel_args.rs`, four minutes).
pub const GEMM_F32_MAX_SQUARE: u64 = 4096;

/// The GEMM cases of a device: for bf16.f32 the square sweep and the batch sweep, for f16.f32
/// the squares of [`GEMM_F16_SQUARE`], for tf32.f32 those of [`GEMM_TF32_SQUARE`] and for f32 (the SIMT kernel)
/// the largest square up to [`GEMM_F32_MAX_SQUARE`]; each shape by cuBLAS (the
/// reference, planned whether or not cuBLAS is there: its row then says `skipped: <why>`) and
/// then by our kernel.
/// Shapes are capped by `usable_bytes` (the PTX launch's padded A and B, and C), by an explicit
/// `--size` (no matrix larger), and by [`GEMM_MAX_LAUNCH_SECS`] at the theoretical peak.
pub fn gemm_cases(device: &DeviceModel, size: SizeRequest) -> Vec<Case> {
    let info = device.info;
    let mut out = Vec::new();
    for p in gemm::GPU_PRECISIONS {
        let limits = gemm::Limits {
            // room for the padding of A's and B's rows (at most 7 elements each)
            usable_bytes: device.usable_bytes / 10 * 9,
            max_matrix_bytes: match size {
                SizeRequest::Auto => None,
                SizeRequest::BytesPerArray(b) => Some(b),
            },
            max_flops: target_flops(info, device.compute_capability, p) / TARGET_LAUNCH_SECS
                * GEMM_MAX_LAUNCH_SECS,
        };
        // f16 and tf32: their listed squares; f32: its one square, the largest that fits up
        // to 4096³
        let sides: Option<Vec<u64>> = match p {
            Precision::F16F32 => Some(GEMM_F16_SQUARE.to_vec()),
            Precision::Tf32F32 => Some(GEMM_TF32_SQUARE.to_vec()),
            gemm::SIMT_PRECISION => gemm::square_shapes(p, &limits)
                .into_iter()
                .map(|s| s.m)
                .filter(|&m| m <= GEMM_F32_MAX_SQUARE)
                .max()
                .map(|m| vec![m])
                .or(Some(Vec::new())),
            _ => None,
        };
        out.extend(
            gemm::cases(
                gemm::GPU_OURS,
                Some(gemm::GPU_REFERENCE),
                p,
                &limits,
                p == Precision::Bf16F32,
            )
            .into_iter()
            .filter(|c| {
                sides.as_ref().is_none_or(|sides| {
                    gemm::shape_of(c)
                        .is_ok_and(|s| s.m == s.n && s.n == s.k && sides.contains(&s.m))
                })
            }),
        );
    }
    // Every weight of the batch sweep smaller than the DRAM rule's working set rotates through
    // copies up to it, one per launch: a model's step reads each weight once from memory, and
    // a GPU's L2 would hold a small one across launches (an H200's 60 MB holds a 4096 × 4096
    // bf16 weight whole). All M, not only decode steps: a larger M changes how much each read
    // weighs, not where the weight comes from. An explicit --size is the working set asked for.
    let dram = match size {
        SizeRequest::Auto => dram_rule_bytes(info.llc_bytes),
        SizeRequest::BytesPerArray(b) => b,
    };
    gemm::rotate_weights(&mut out, u64::MAX, dram, device.usable_bytes / 10 * 9);
    if runs_wgmma(device.compute_capability) {
        // Hopper's two bf16 GEMMs (wgmma fed by cp.async, and by TMA with a producer warpgroup) on
        // the square their judgement names, 8192³ bf16, or on a device too small for it the
        // largest bf16 square planned (the simulated driver's 256³), right after the cuBLAS row
        // of that square (their ratio is to the reference measured before them); the batch
        // sweep stays the mma.sync kernel's until these have run on a GPU (the default run has
        // no room for both: this plan's H200 estimate is held under 4 minutes).
        let square = |c: &Case| {
            c.kernel == gemm::GPU_REFERENCE
                && c.precision == Precision::Bf16F32
                && gemm::shape_of(c).is_ok_and(|s| s.m == s.n && s.n == s.k)
        };
        let side = |c: &Case| gemm::shape_of(c).map_or(0, |s| s.m);
        let at = out
            .iter()
            .position(|c| square(c) && side(c) == WGMMA_GEMM_SIDE)
            .or_else(|| {
                out.iter()
                    .enumerate()
                    .filter(|(_, c)| square(c) && side(c) < WGMMA_GEMM_SIDE)
                    .max_by_key(|(_, c)| side(c))
                    .map(|(i, _)| i)
            });
        // and the fp8 (e4m3) pair on the same square: cuBLASLt, then the TMA kernel
        if let Some(at) = at {
            let shape = gemm::shape_of(&out[at]).expect("a square");
            let fp8 = Precision::E4m3F32;
            let added = HOPPER_GEMMS
                .into_iter()
                .map(|kernel| gemm::case(kernel, Precision::Bf16F32, shape))
                .chain([
                    gemm::case(gemm::GPU_REFERENCE, fp8, shape),
                    gemm::case(gemm::GPU_TMA, fp8, shape),
                    gemm::case(gemm::GPU_TMA_CLUSTER, fp8, shape),
                ]);
            out.splice(at + 1..at + 1, added);
        }
    }
    out
}

/// Hopper's GEMM kernels, in the order they run after cuBLAS.
pub const HOPPER_GEMMS: [&str; 3] = [gemm::GPU_WGMMA, gemm::GPU_TMA, gemm::GPU_TMA_CLUSTER];

/// The side of the square the Hopper GEMM (`gemm/wgmma`) runs on in the default run: 8192³ bf16,
/// the size the Hopper GEMM is held to against cuBLAS.
pub const WGMMA_GEMM_SIDE: u64 = 8192;

/// SM clock assumed for sizing where the device reports none.
pub const FALLBACK_CLOCK_MHZ: f64 = 1500.0;

/// What planning needs to know about a device.
#[derive(Clone, Copy, Debug)]
pub struct DeviceModel<'a> {
    /// Id, name (for the GeForce rates), SM count, maximum SM clock, L2 size.
    pub info: &'a DeviceInfo,
    pub compute_capability: (u32, u32),
    /// Bytes of device memory the cases may use.
    pub usable_bytes: u64,
    /// The ordinals of the other GPUs this one can reach peer to peer (`cuDeviceCanAccessPeer`):
    /// the peer copies' partners.
    pub peers: &'a [u32],
}

/// Whether `mma.sync` with e4m3 inputs runs on the tensor cores: sm_89 (QMMA) and the
/// GeForce/workstation Blackwell parts (12.x). sm_90 accepts the PTX but ptxas emulates it
/// (e4m3 unpacked to f16 with F2FP, most of the product hoisted out of the loop, accumulation
/// with FADD; pinned by tests/offline.rs), so a figure there would not be a tensor-core fp8 peak:
/// Hopper's fp8 needs `wgmma`. sm_100 is left out until its SASS is checked.
pub fn native_fp8_mma(compute_capability: (u32, u32)) -> bool {
    compute_capability == (8, 9) || compute_capability.0 >= 12
}

/// Whether Hopper's f64 tensor shape (kernels/mma_sm90.ptx, `.target sm_90`: `mma.sync`
/// m16n8k16 f64) runs: compute capability 9.0 and later.
pub fn runs_mma_sm90(compute_capability: (u32, u32)) -> bool {
    compute_capability >= (9, 0)
}

/// Whether the `wgmma` peaks (kernels/wgmma.ptx.in, `.target sm_90a`) run: compute capability
/// 9.0 only (arch-specific sm_90a code runs on no other device, later ones included).
pub fn runs_wgmma(compute_capability: (u32, u32)) -> bool {
    compute_capability == (9, 0)
}

/// The note of a `mma.sync` tensor row on a device where `wgmma` is the dense tensor path
/// (Hopper): its theory is the `wgmma` rate, since no source gives `mma.sync`'s.
pub const LEGACY_MMA_NOTE: &str = "legacy mma.sync path: %theory is against the wgmma dense rate (no source states mma.sync's rate on sm_90; the tensor ceiling comes from the wgmma rows)";

/// The note of the f64 tensor row on Hopper, which no `wgmma` covers (the warpgroup MMA has no
/// f64): its kernel is Ampere's `mma.sync.m8n8k4` (ptxas emits `DMMA.8x8x4` for sm_90), beside
/// the m16n8k16 row PTX ISA 7.8 gave sm_90 ([`HOPPER_F64_SHAPE_NOTE`]); the row's theory is the
/// whitepaper's FP64 tensor rate, and the better of the two f64 rows sets the f64 ceiling.
pub const HOPPER_F64_MMA_NOTE: &str = "mma.sync m8n8k4 f64, Ampere's shape (DMMA.8x8x4 on sm_90; Hopper's m16n8k16 is the mma_m16n8k16 f64 row): %theory is against the FP64 tensor rate, which no wgmma covers";

/// The note of the f64 tensor row at Hopper's shape.
pub const HOPPER_F64_SHAPE_NOTE: &str = "mma.sync m16n8k16 f64, Hopper's shape (DMMA.16x8x16 on sm_90, 8x the work of m8n8k4's DMMA.8x8x4): %theory is against the FP64 tensor rate, which no wgmma covers";

/// The note a tensor row of form `mma` gets on a device of `compute_capability`, where the
/// plan means one: on Hopper, every `mma.sync` row's.
pub fn tensor_note(
    compute_capability: (u32, u32),
    mma: impl Into<tensor::Mma>,
) -> Option<&'static str> {
    let mma = mma.into();
    if !runs_wgmma(compute_capability) {
        None
    } else if wgmma::PRECISIONS.contains(&mma.precision) {
        Some(LEGACY_MMA_NOTE)
    } else if mma == tensor::HOPPER_F64 {
        Some(HOPPER_F64_SHAPE_NOTE)
    } else {
        Some(HOPPER_F64_MMA_NOTE)
    }
}

/// Whether the compute kernels (peak, tensor, sweep: `.target sm_80`) can run at all.
pub fn runs_compute_kernels(compute_capability: (u32, u32)) -> bool {
    compute_capability >= (8, 0)
}

/// The theoretical peak of `precision` on this device at `mhz`, in GFLOP/s.
pub fn theory_gflops(
    info: &DeviceInfo,
    cc: (u32, u32),
    precision: Precision,
    mhz: f64,
) -> Option<f64> {
    theory::peak_gflops_for(&info.name, cc, info.units, mhz, precision)
}

/// Operations one launch should do: [`TARGET_LAUNCH_SECS`] at the theoretical peak at the
/// device's maximum clock. Where the table has no rate for `precision` on this device, the
/// slowest rate it has for the device stands in (a launch then lasts at most the target: an
/// unknown tensor-core rate is not slower than the device's slowest CUDA-core one, and the
/// runner batches short launches anyway); [`UNKNOWN_RATE_FLOPS`] where it has none.
pub fn target_flops(info: &DeviceInfo, cc: (u32, u32), precision: Precision) -> f64 {
    let mhz = info.clock_mhz.unwrap_or(FALLBACK_CLOCK_MHZ);
    theory_gflops(info, cc, precision, mhz)
        .or_else(|| {
            Precision::ALL
                .into_iter()
                .filter_map(|q| theory_gflops(info, cc, q, mhz))
                .min_by(f64::total_cmp)
        })
        .map_or(UNKNOWN_RATE_FLOPS, |g| g * 1e9 * TARGET_LAUNCH_SECS)
}

/// Every case of a CUDA device, sized: STREAM, then (compute capability 8.0 and later) the FMA
/// peaks, the tensor-core peaks (fp8 only where it is native), the intensity sweep and the cache
/// sweep.
///
/// `one_wave(entry)` is the grid that fills the device once with `entry` (every SM at the
/// kernel's occupancy), or why that is unknown (its module did not load, say); a peak or tensor
/// case whose grid is unknown is planned anyway, with the reason as its note, so its row says
/// why it did not run.
pub fn plan_cases(
    device: &DeviceModel,
    size: SizeRequest,
    one_wave: &mut dyn FnMut(&Entry) -> Result<u32>,
) -> Result<Vec<PlannedCase>> {
    let info = device.info;
    let cc = device.compute_capability;
    let mut planned = plan_arrays(
        size,
        dram_array_bytes(info),
        3,
        device.usable_bytes,
        &info.id,
        "stream cases",
        |bytes| stream::cases(|p| (bytes / stream::element_bytes(p)).max(1)),
    )?;
    // Capacity first: `largest` searches the memory the run starts with.
    planned.splice(0..0, capacity_cases(info));
    // The size sweep runs the STREAM kernels, so wherever they run.
    planned.extend(efficiency_cases(
        size,
        device.usable_bytes,
        efficiency_max_array_bytes(info),
    ));
    planned.extend(link_cases(info.memory_free_bytes, device.peers));
    if !runs_compute_kernels(cc) {
        return Ok(planned);
    }
    let mut planned_or_why = |case: Case, sized: &mut dyn FnMut(u64) -> Case| {
        let sized_case = describe::entry(&case)
            .map_err(crate::Error::Internal)
            .and_then(|entry| one_wave(&entry));
        match sized_case {
            Ok(grid) => PlannedCase {
                case: sized(grid as u64 * BLOCK as u64),
                note: String::new(),
            },
            // planned anyway, so its row says why it could not run
            Err(why) => PlannedCase {
                case,
                note: why.to_string(),
            },
        }
    };
    for p in peak::PRECISIONS {
        let placeholder = peak::case(p, BLOCK as u64, 1, peak::GPU_FMAS_PER_ITERATION);
        planned.push(planned_or_why(placeholder, &mut |threads| {
            let iterations = peak::iterations_for(
                p,
                threads,
                peak::GPU_FMAS_PER_ITERATION,
                target_flops(info, cc, p),
            );
            peak::case(p, threads, iterations, peak::GPU_FMAS_PER_ITERATION)
        }));
    }
    for mma in tensor::forms() {
        if tensor::needs_sm89(mma.precision) && !native_fp8_mma(cc) {
            continue; // no native fp8 mma.sync on this device
        }
        if mma.needs_sm90() && !runs_mma_sm90(cc) {
            continue; // Hopper's own f64 shape (beside Ampere's m8n8k4): sm_90 and later
        }
        let placeholder = tensor::case(mma, BLOCK as u64 / tensor::WARP as u64, 1);
        let mut planned_case = planned_or_why(placeholder, &mut |threads| {
            let warps = threads / tensor::WARP as u64;
            let target = target_flops(info, cc, mma.precision);
            tensor::case(mma, warps, tensor::iterations_for(mma, warps, target))
        });
        if let Some(note) = tensor_note(cc, mma).filter(|_| planned_case.note.is_empty()) {
            planned_case.note = note.to_string();
        }
        planned.push(planned_case);
    }
    if runs_wgmma(cc) {
        for p in wgmma::PRECISIONS {
            for a in wgmma::SOURCES {
                let groups = BLOCK as u64 / wgmma::WARPGROUP as u64;
                let placeholder = wgmma::case(p, a, groups, 1);
                planned.push(planned_or_why(placeholder, &mut |threads| {
                    let groups = threads / wgmma::WARPGROUP as u64;
                    let iterations = wgmma::iterations_for(p, groups, target_flops(info, cc, p));
                    wgmma::case(p, a, groups, iterations)
                }));
            }
        }
    }
    // DRAM-sized like STREAM's: the sweep's k = 0 point is a copy, which on an H200 the DRAM
    // rule's 512 MiB would make a 0.1 ms launch (issue 57)
    planned.extend(plan_arrays(
        size,
        dram_array_bytes(info),
        2,
        device.usable_bytes,
        &info.id,
        "the intensity sweep",
        |bytes| {
            intensity::cases(&intensity::PRECISIONS, |p| {
                (bytes / arith::word_bytes(p)).max(1)
            })
        },
    )?);
    planned.extend(cache_cases(info, cc).into_iter().map(|case| PlannedCase {
        case,
        note: String::new(),
    }));
    planned.extend(sweep_cases(info, cc));
    planned.extend(
        gemm_cases(device, size)
            .into_iter()
            .map(|case| PlannedCase {
                case,
                note: String::new(),
            }),
    );
    planned.extend(
        latency_cases(info, device.usable_bytes)
            .into_iter()
            .map(|case| PlannedCase {
                note: latency_note(&case, info),
                case,
            }),
    );
    // The launch overhead: the empty kernel (kernels/launch.ptx, sm_80 like the rest) and the
    // event timer, sized by nothing.
    planned.extend(launch_rows::GPU_ROWS.map(|what| PlannedCase {
        case: launch_rows::case(what),
        note: String::new(),
    }));
    Ok(planned)
}

/// The largest array a GPU's size sweep uses: the STREAM cases' own ([`dram_array_bytes`]), so
/// that the sweep shows where they stand on its curve, and not the whole memory (its sizes
/// double, each costing its samples: the largest costs as much as all the others).
pub fn efficiency_max_array_bytes(info: &DeviceInfo) -> u64 {
    dram_array_bytes(info)
}

/// The capacity figures of a GPU, planned at what the driver reported as the context was
/// created (the run records what it reads; `largest` is found by a search up to `free`).
pub fn capacity_cases(info: &DeviceInfo) -> Vec<PlannedCase> {
    let (total, free) = (info.memory_total_bytes, info.memory_free_bytes);
    capacity::GPU_FIGURES
        .map(|figure| PlannedCase {
            case: capacity::case(
                figure,
                match figure {
                    capacity::Figure::Total => total,
                    capacity::Figure::Context => total.saturating_sub(free),
                    _ => free,
                },
            ),
            note: String::new(),
        })
        .to_vec()
}

/// The link family's copies ([`link::sizes`]), each capped so its device buffers take at most
/// half of `free_bytes`, the device's free memory; the peer copies once per peer in `peers`
/// (a peer holds as many buffers as this device, and is assumed to have as much free memory).
pub fn link_cases(free_bytes: u64, peers: &[u32]) -> Vec<PlannedCase> {
    link::Transfer::ALL
        .into_iter()
        .flat_map(|t| {
            let cap = free_bytes / 2 / t.device_buffers();
            let partners: Vec<Option<u32>> = if t.peer() {
                peers.iter().copied().map(Some).collect()
            } else {
                vec![None]
            };
            link::sizes(t, cap).into_iter().flat_map(move |bytes| {
                partners.clone().into_iter().map(move |peer| PlannedCase {
                    case: match peer {
                        Some(p) => link::peer_case(t, bytes, p),
                        None => link::case(t, bytes),
                    },
                    note: String::new(),
                })
            })
        })
        .collect()
}

/// The fewest and the most dependent loads one latency launch takes (see [`latency_hops`]).
pub const LATENCY_HOPS: std::ops::RangeInclusive<u64> = 4096..=(1 << 17);

/// Loads per latency launch: enough that the first launches of a case (the discarded one, the
/// one that sizes the samples, the warm-up) touch twice the L2 in fresh lines, so a DRAM ring's
/// lines that the upload left in L2 are gone before the samples; within [`LATENCY_HOPS`], so a
/// launch from HBM lasts about a tenth of a second at most.
pub fn latency_hops(info: &DeviceInfo) -> u64 {
    (2 * info.llc_bytes / latency::GPU_LINE_BYTES / 6)
        .clamp(*LATENCY_HOPS.start(), *LATENCY_HOPS.end())
}

/// What a latency row's figure holds beyond the load, said in its note: the DRAM chase's
/// random lines over 4 × the L2 and more (256 MiB on an H100 or H200) lie beyond what the
/// GPU's TLBs cover, so most of its loads also miss in the TLB and its latency is DRAM's with
/// the page walk's share; a chase within the L2 is not. (The host's rings ask for huge pages.)
pub const DRAM_LATENCY_NOTE: &str =
    "DRAM latency with TLB misses: random lines over 4x the L2, beyond the TLBs' reach";

/// The note of a planned latency case: [`DRAM_LATENCY_NOTE`] for the chase beyond the L2, none
/// for the others.
pub fn latency_note(case: &Case, info: &DeviceInfo) -> String {
    if case.working_set_bytes > info.llc_bytes {
        DRAM_LATENCY_NOTE.to_string()
    } else {
        String::new()
    }
}

/// The latency chase of a device, one working set per level: `ca` at 16 KiB (in any L1), `cg`
/// at the largest of 4 KiB × 4^i within a quarter of the L2 (in L2, past L1), and `cg` at the
/// first power of two at least 4 × the L2 (DRAM), each within `usable_bytes`. Three points, not
/// a sweep: every case costs the runner's case budget (about 2 s), and a default run on an H200
/// must stay within its four-minute estimate.
pub fn latency_cases(info: &DeviceInfo, usable_bytes: u64) -> Vec<Case> {
    let hops = latency_hops(info);
    let mut l2 = latency::MIN_BYTES;
    while l2 * 4 <= info.llc_bytes / 4 {
        l2 *= 4;
    }
    let dram = latency::sizes(4 * info.llc_bytes)
        .last()
        .copied()
        .unwrap_or(latency::MIN_BYTES);
    [("ca", 16 << 10), ("cg", l2), ("cg", dram)]
        .into_iter()
        .filter(|&(_, b)| b <= usable_bytes)
        .map(|(k, b)| latency::case(k, latency::GPU_LINE_BYTES, b, hops))
        .collect()
}
