//! How long a planned run will take, said before it starts: each case's launch time from the
//! device's rated speeds (a GPU's spec sheet DRAM bandwidth and theoretical peaks; the host's
//! theoretical peaks at the clock measured as the run starts, and a stated bandwidth per core),
//! then the runner's own schedule (a discarded launch, one to size the samples, the warm-up, the
//! samples the budget allows) and the host's share (generating the inputs, copying, checking:
//! for a GPU at a conservative rate, for the host backend what its arena will really write,
//! [`crate::backend::host::prep_work`], at rates measured on this project's VM).
//!
//! It is an estimate, not a measurement. For a GPU, real launches are slower than the rated
//! speeds, so it errs short on the launches and long on the host's share; its purpose is that
//! a run is known to fit the time it is given (a default run on an H100, H200, A100 or RTX 3090
//! in three minutes) before it uses any of it. For the host it aims at the run's time itself:
//! its rates are a quiet machine's (this project's 2-vCPU VM, 2026-12-07), and the whole grows
//! as the share of its CPUs the host is given as the run starts falls ([`Rates::pace`],
//! [`PACE_EXPONENT`]), since the same run took 1.5-2.0 times as long beside other busy
//! processes.
//!
//! Here too the launch cap of the default and `--quick` runs ([`shorten`]): the sweep's points
//! that are compute-bound by the rated speeds take fewer words, so that no launch lasts long.
//!
//! This module only computes; it must not call a driver or measure anything (the host's clock
//! is read once, by [`Rates::for_host`]).

use crate::backend::PlannedCase;

use crate::cases::{Case, Family, Precision};
use crate::device::{BackendKind, DeviceInfo};
use crate::run::runner::{RunConfig, Stop};
use crate::specs::DeviceAttributes;

/// Bytes per second the host generates, copies and checks a case's arrays at: a few GB/s, as
/// a loaded machine does it on all its cores (the estimate's conservative side).
pub const HOST_PREP_BYTES_PER_SEC: f64 = 2e9;

/// Input pairs per second one host core of the GEMM check generates and multiplies
/// ([`crate::cases::gemm::check_terms`]; the check runs on every core), in the exact check and
/// in the sampled one: on this project's 2-vCPU Zen 4 VM (2026-12-04, 8192³, 4 runs each) one
/// core did 280-300 million in the exact bf16 check (0.34 billion pairs, 1.1-1.2 s) and 160-190
/// million in the sampled e4m3 one (2.1 billion, 11.4-13.2 s), and both cores 1.6 times that
/// (0.67-0.73 s and 6.8-7.4 s); each rate below the slowest seen, the conservative side.
pub const HOST_CHECK_TERMS_PER_CORE_SEC: (f64, f64) = (2.5e8, 1.5e8);

/// Seconds every case costs besides its arrays and launches (events, a sweep kernel's JIT, the
/// row written).
pub const CASE_OVERHEAD_SECS: f64 = 0.05;

/// Seconds one dependent load from a GPU's DRAM takes, at most as far as the estimate goes
/// (HBM and GDDR load-to-use latencies are 0.4–0.8 µs): a latency launch whose ring is larger
/// than the L2 lasts its hops times this.
pub const GPU_LOAD_SECS: f64 = 1e-6;

/// The same for a ring within the L2 (L2 hits take 0.1–0.3 µs on the GPUs roofprobe knows).
pub const GPU_L2_LOAD_SECS: f64 = 0.5e-6;

/// The same for a ring within one SM's L1 (`ca` loads; L1 hits take 20–40 ns).
pub const GPU_L1_LOAD_SECS: f64 = 0.1e-6;

/// The largest ring the estimate takes to stay in an SM's L1 (every GPU since Volta has at
/// least this much L1 per SM).
pub const GPU_L1_RING_BYTES: u64 = 64 << 10;

/// Seconds a driver or OS call that reads memory figures takes (`cuMemGetInfo`, a read of
/// `/proc/meminfo`: microseconds), at most as far as the estimate goes.
pub const MEMORY_QUERY_SECS: f64 = 1e-4;

/// Seconds one allocation of up to the whole device and its free take (`cuMemAlloc` and
/// `cuMemFree`: milliseconds even for tens of GiB, since the driver maps pages it does not
/// clear), as far as the estimate goes.
pub const ALLOCATION_SECS: f64 = 0.01;

/// Seconds one empty kernel launch takes back to back on one stream, at most as far as the
/// estimate goes: a generous bound on what a launch costs the host and the device, not a
/// measurement.
pub const EMPTY_LAUNCH_SECS: f64 = 1e-5;

/// Seconds one try of the event timer takes (two event records, a wait for the second, its
/// elapsed time read: a round trip between the host and the device), at most as far as the
/// estimate goes.
pub const EVENT_PAIR_SECS: f64 = 5e-5;

/// The same for the host backend, whose cases have no events or JIT: its 74 default cases
/// spent 0.4 s in all outside their launches and arrays on this project's VM (2026-12-07).
pub const HOST_CASE_OVERHEAD_SECS: f64 = 0.01;

/// Seconds one host round (wake every worker, one barrier) takes, at most as far as the
/// estimate goes on a loaded machine.
pub const WAKE_ROUND_SECS: f64 = 1e-4;

/// Bytes per second a pinned copy moves over the host link, per direction, as far as the
/// estimate goes: what PCIe Gen5 x16 (63 GB/s nominal) delivers at best. The estimate does not
/// know the link (NVML is read as the cases run), so an older link's copies take longer than it
/// says; the copies are a small part of a link case's time (its buffers are the most).
pub const LINK_PINNED_BYTES_PER_SEC: f64 = 50e9;

/// The same for pageable host memory, which the driver stages through pinned buffers of its
/// own: a fraction of the pinned rate.
pub const LINK_PAGEABLE_BYTES_PER_SEC: f64 = 10e9;

/// Seconds a copy takes besides its bytes (the copy engine's start, the events): microseconds.
pub const LINK_COPY_SECS: f64 = 20e-6;

/// How a host run's time grows as it is given less of its CPUs: as the share to the power
/// minus this. Not all of it grows as 1 / share: where two workers take turns with other
/// processes, each moves more bytes while it runs, and the hypervisor's first touches do not
/// wait on the guest's scheduler. On this project's 2-vCPU VM (2026-12-07), beside two
/// spinning shells (a share of 0.47-0.50), the default and `--quick` runs took 1.6-2.0 times
/// their quiet time, where 1 / share says 2.0-2.1; this exponent gives 1.7-1.8.
pub const PACE_EXPONENT: f64 = 0.75;

/// What a device does at most, as far as the estimate knows.
#[derive(Clone, Debug, PartialEq)]
pub struct Rates {
    /// Whose rates: a GPU's (its host generates and copies its arrays), or the host backend's
    /// (which prepares them in its arena).
    pub backend: BackendKind,
    /// DRAM bytes per second.
    pub dram_bytes_per_sec: f64,
    /// Bytes per second the cache sweep's levels deliver (all SMs' L1s at 128 B per clock).
    pub cache_bytes_per_sec: f64,
    /// Operations per second, per precision, where a theoretical peak is known.
    pub ops_per_sec: Vec<(Precision, f64)>,
    /// The last-level cache's bytes (0 where unknown: every ring then counts as DRAM's).
    pub llc_bytes: u64,
    /// The host cores that generate and check the cases' arrays (this process's).
    pub host_cores: usize,
    /// The share of its CPUs the host backend is given as the run starts (1 where nothing else
    /// runs; [`Rates::measure_pace`]): the host backend's seconds, launches and arrays alike,
    /// are its rated ones times [`Rates::slowdown`], this share to the power
    /// −[`PACE_EXPONENT`]. 1 for a GPU.
    pub pace: f64,
}

/// The host's DRAM bandwidth per worker as the estimate takes it (nothing rates a host's memory
/// before it is measured): this project's 2-vCPU VM copies at 42-47 GB/s on two workers
/// (results/README.md), a many-core server at less per core.
pub const HOST_DRAM_BYTES_PER_SEC_PER_CORE: f64 = 20e9;

/// The most DRAM bandwidth the estimate gives a host, whatever its cores.
pub const HOST_DRAM_MAX_BYTES_PER_SEC: f64 = 200e9;

/// Bytes per clock per worker the host's cache cases read, as the estimate takes them: between
/// what L1 and L3 deliver (this project's VM: 516 GB/s from L1, 58 from L3 on two workers at
/// 4 GHz).
pub const HOST_CACHE_BYTES_PER_CLOCK: f64 = 32.0;

/// The core clock the estimate takes where the host's cannot be measured.
pub const HOST_FALLBACK_MHZ: f64 = 3000.0;

/// The host's i32 multiply-add rate as a share of its f32 FMA theory: x86 has no 32-bit integer
/// FMA (a multiply, at half rate or less, and an add). Measured on this project's VMs: AVX-512
/// 155 GOP/s against 524 GFLOP/s of f32 theory (0.30), AVX2 (Zen 4) 126 against 180 (0.70).
pub fn host_i32_share(simd: crate::backend::host::compute::Simd) -> f64 {
    use crate::backend::host::compute::Simd;
    match simd {
        Simd::Avx512 => 0.3,
        Simd::Avx2 => 0.7,
        _ => 0.5,
    }
}

/// DRAM bandwidth assumed where neither the spec sheet nor the device's attributes give one.
pub const UNKNOWN_DRAM_BYTES_PER_SEC: f64 = 500e9;

/// Set to a number of cores to have a GPU's estimate take the host share (generating and
/// checking arrays) at that many cores instead of this process's: the estimate of a run on
/// another machine, as scripts/rehearse-device-check makes for the 16-core machines a lent GPU
/// sits in. Nothing measured depends on it.
pub const HOST_CORES_ENV: &str = "ROOFPROBE_FORECAST_HOST_CORES";

/// The host cores a GPU's estimate takes: [`HOST_CORES_ENV`] where it is a positive number, else
/// this process's ([`crate::cases::host_cores`]).
pub fn gpu_host_cores() -> usize {
    std::env::var(HOST_CORES_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(crate::cases::host_cores)
}

impl Rates {
    /// A GPU's rated speeds from what its driver reports: the spec sheet's DRAM bandwidth where
    /// its name matches an entry, else bus width × memory clock, else
    /// [`UNKNOWN_DRAM_BYTES_PER_SEC`]; L1 at 128 bytes per SM per clock; theoretical peaks per
    /// precision at the maximum clock. `None` for the host, whose rates nothing rates.
    pub fn for_gpu(info: &DeviceInfo) -> Option<Rates> {
        if info.backend != BackendKind::Cuda {
            return None;
        }
        let attributes = DeviceAttributes::from_info(info);
        let dram_bytes_per_sec = crate::backend::cuda::plan::spec_dram_bytes_per_sec(info);
        let mhz = info
            .clock_mhz
            .unwrap_or(crate::backend::cuda::plan::FALLBACK_CLOCK_MHZ);
        let ops_per_sec = Precision::ALL
            .into_iter()
            .filter_map(|p| {
                let cc = attributes.compute_capability?;
                crate::specs::theory::peak_gflops_for(&info.name, cc, info.units, mhz, p)
                    .filter(|g| g.is_finite() && *g > 0.0)
                    .map(|g| (p, g * 1e9))
            })
            .collect();
        Some(Rates {
            backend: BackendKind::Cuda,
            dram_bytes_per_sec: dram_bytes_per_sec.unwrap_or(UNKNOWN_DRAM_BYTES_PER_SEC),
            cache_bytes_per_sec: f64::from(info.units)
                * mhz
                * 1e6
                * crate::backend::cuda::plan::CACHE_BYTES_PER_SM_CLOCK,
            ops_per_sec,
            llc_bytes: info.llc_bytes,
            host_cores: gpu_host_cores(),
            pace: 1.0,
        })
    }

    /// The rates of the device `info` describes: a GPU's ([`Rates::for_gpu`]) or the host's
    /// ([`Rates::for_host`]).
    pub fn for_device(info: &DeviceInfo) -> Rates {
        Self::for_gpu(info).unwrap_or_else(|| Self::for_host(info))
    }

    /// The host's rates: the theoretical FMA peaks of its SIMD set (f32, f64) and matrix unit
    /// (AMX, where granted) on its `units` workers at the clock measured now, i32 at
    /// [`host_i32_share`] of f32's, and [`HOST_DRAM_BYTES_PER_SEC_PER_CORE`] per worker (at most
    /// [`HOST_DRAM_MAX_BYTES_PER_SEC`]); nothing rates a host's memory before it is measured.
    pub fn for_host(info: &DeviceInfo) -> Rates {
        use crate::backend::host::{clock, compute, tensor};
        let threads = (info.units as usize).max(1);
        let mhz = clock::measure_core_mhz()
            .or(info.clock_mhz)
            .unwrap_or(HOST_FALLBACK_MHZ);
        let detected = compute::HostCompute::detect();
        let mut ops_per_sec: Vec<(Precision, f64)> = [Precision::F32, Precision::F64]
            .into_iter()
            .filter_map(|p| {
                compute::theory_gflops(threads, mhz, detected.simd, p, detected.fma)
                    .map(|g| (p, g * 1e9))
            })
            .collect();
        if let Some(&(_, f32_rate)) = ops_per_sec.iter().find(|(p, _)| *p == Precision::F32) {
            ops_per_sec.push((Precision::I32, f32_rate * host_i32_share(detected.simd)));
        }
        for p in tensor::PRECISIONS {
            if tensor::available(p).is_ok() {
                ops_per_sec.push((p, tensor::theory_gflops(p, threads, mhz) * 1e9));
            }
        }
        let dram =
            (HOST_DRAM_BYTES_PER_SEC_PER_CORE * threads as f64).min(HOST_DRAM_MAX_BYTES_PER_SEC);
        Rates {
            backend: BackendKind::Host,
            dram_bytes_per_sec: dram,
            cache_bytes_per_sec: HOST_CACHE_BYTES_PER_CLOCK * mhz * 1e6 * threads as f64,
            ops_per_sec,
            llc_bytes: info.llc_bytes,
            host_cores: threads,
            pace: 1.0,
        }
    }

    /// These rates at the pace the host is given now: for the host backend, the share of its
    /// CPUs that as many spinning threads as it has workers get over a quarter of a second
    /// ([`crate::backend::host::clock::cpu_share`]); a GPU's unchanged. On this project's
    /// 2-vCPU VM a run beside other busy processes took 1.5-2.0 times its quiet time
    /// ([`PACE_EXPONENT`]).
    pub fn measure_pace(mut self) -> Rates {
        if self.backend == BackendKind::Host {
            self.pace = crate::backend::host::clock::cpu_share(self.host_cores).unwrap_or(1.0);
        }
        self
    }

    /// The factor the host backend's seconds are multiplied by: [`Rates::pace`] to the power
    /// −[`PACE_EXPONENT`]; 1 for a GPU or a pace that is not a share.
    pub fn slowdown(&self) -> f64 {
        if self.backend == BackendKind::Host && self.pace > 0.0 && self.pace <= 1.0 {
            self.pace.powf(-PACE_EXPONENT)
        } else {
            1.0
        }
    }

    /// Operations per second of `precision`; the slowest known rate where it has none (so an
    /// unknown rate never makes a launch look shorter), 1 TOP/s where nothing is known.
    fn ops(&self, precision: Precision) -> f64 {
        self.ops_per_sec
            .iter()
            .find(|(p, _)| *p == precision)
            .map(|(_, r)| *r)
            .or_else(|| {
                self.ops_per_sec
                    .iter()
                    .map(|(_, r)| *r)
                    .min_by(f64::total_cmp)
            })
            .unwrap_or(1e12)
    }
}

/// Seconds one launch of `case` takes at the rated speeds: its bytes at its memory level's
/// bandwidth or its operations at its precision's peak, whichever is longer.
pub fn launch_secs(case: &Case, rates: &Rates) -> f64 {
    if case.family == Family::Latency {
        // one dependent load after another: its latency, not a bandwidth, sets the time
        let ring = case.working_set_bytes;
        let load = if case.kernel == "ca" && ring <= GPU_L1_RING_BYTES {
            GPU_L1_LOAD_SECS
        } else if ring <= rates.llc_bytes {
            GPU_L2_LOAD_SECS
        } else {
            GPU_LOAD_SECS
        };
        return crate::cases::latency::hops(case) as f64 * load;
    }
    // A sweep step larger than the last-level cache reads DRAM.
    let from_dram = crate::cases::cache::is_sweep_step(case)
        && rates.llc_bytes > 0
        && case.working_set_bytes > rates.llc_bytes;
    let in_cache = case.family == Family::Cache && !from_dram;
    let bandwidth = if in_cache {
        rates.cache_bytes_per_sec
    } else {
        rates.dram_bytes_per_sec
    };
    let host = rates.backend == BackendKind::Host;
    let delivered = match (host, in_cache) {
        (false, _) => 1.0,
        (true, false) => HOST_DRAM_SHARE,
        (true, true) => HOST_CACHE_SHARE,
    };
    let memory = case.work.bytes() as f64 / (bandwidth * delivered);
    let share = match (host, case.family) {
        (false, _) => 1.0,
        (true, Family::Gemm) => host_gemm_share(&case.kernel),
        (true, _) => HOST_COMPUTE_SHARE,
    };
    let compute = case.work.flops as f64 / (rates.ops(case.precision) * share);
    memory.max(compute).max(1e-6)
}

// The shares of their rated speeds (the bandwidth per worker below, the theoretical peaks at
// the clock measured as the run starts) host launches deliver as the estimate takes them, on a
// host given all its CPUs: on a busier one the estimate is scaled by the share it is given
// ([`Rates::pace`]). GEMM's shares are [`host_gemm_share`]'s. Measured on this project's 2-vCPU
// VM (2026-12-07, nothing else running, each case's own split of its time): the STREAM and the
// sweep's DRAM launches moved 38-41 GB/s of the 40 rated, the sweep's compute-bound f32 and f64
// points ran at 73 % of their peak, and the cache sweep's launches took 0.6 of the time that 32
// bytes per clock per worker give. The plan's choices ([`shorten`]) keep the rated speeds: only
// the time is scaled.

/// The share of the rated DRAM bandwidth a host launch delivers, as the estimate takes it.
pub const HOST_DRAM_SHARE: f64 = 0.95;

/// The same for a cache level's bandwidth ([`HOST_CACHE_BYTES_PER_CLOCK`]).
pub const HOST_CACHE_SHARE: f64 = 0.57;

/// The share of its precision's theoretical peak a host launch other than a GEMM computes at.
pub const HOST_COMPUTE_SHARE: f64 = 0.75;

/// The share of its precision's theoretical peak a host GEMM runs at, as the estimate takes it
/// (this project's 2-vCPU VM, results/README.md: our f32 kernel and the `gemm` crate at 64-70 %
/// on the large squares, AMX's bf16 at 17-26 %, held by the feed of its tiles); a GPU's GEMM at
/// its rated peak.
pub fn host_gemm_share(kernel: &str) -> f64 {
    use crate::cases::gemm;
    match kernel {
        gemm::HOST_AMX => 0.2,
        gemm::HOST_OURS | gemm::HOST_REFERENCE => 0.65,
        _ => 1.0,
    }
}

/// Seconds the runner spends on `case` under `cfg` (see [`crate::run::runner::measure`]): the
/// host's share, a discarded launch and one that sizes the samples, the warm-up (at least one
/// sample), then the samples.
pub fn case_secs(case: &Case, cfg: &RunConfig, min_sample_secs: f64, rates: &Rates) -> f64 {
    // the runner's schedule for this case (the cache and size sweeps take fewer samples)
    let cfg = &cfg.for_case(case, rates.backend);
    if case.family == Family::Capacity {
        return capacity_secs(case, cfg);
    }
    if case.family == Family::Launch {
        return launch_rows_secs(case, cfg);
    }
    if case.family == Family::Link {
        return link_secs(case, cfg, rates);
    }
    let launch = launch_secs(case, rates);
    let reps = (min_sample_secs / launch)
        .ceil()
        .clamp(1.0, f64::from(1u32 << 20));
    let sample = reps * launch;
    // the warm-up counts from the launch that sizes the samples, which a one-launch sample
    // lasting the warm-up is by itself ([`crate::run::runner::measure`])
    let warmup = if reps == 1.0 && launch >= cfg.warmup_secs {
        0.0
    } else {
        (cfg.warmup_secs - launch).max(sample)
    };
    let sampling = match cfg.stop {
        Stop::Count => {
            let wanted = (cfg.case_budget_secs / sample).floor();
            wanted.clamp(
                f64::from(cfg.min_samples.max(2)),
                f64::from(cfg.samples.max(2)),
            ) * sample
        }
        // at most the limit, and never fewer than the samples the CV needs
        Stop::UntilStable { limit_secs, .. } => limit_secs
            .max(crate::run::runner::STABLE_MIN_SAMPLES as f64 * sample)
            .max(f64::from(cfg.min_samples.max(2)) * sample),
    };
    // a GPU's arrays, generated and checked on its host; the host backend's are priced over
    // the plan ([`plan_secs`]), since its arena keeps them from one case to the next
    let host = match rates.backend {
        BackendKind::Cuda if device_prepared(case) => device_prep_secs(case, rates),
        BackendKind::Cuda => {
            host_prep_bytes(case) as f64 * 2.0 / HOST_PREP_BYTES_PER_SEC
                + host_check_secs(case, rates.host_cores)
        }
        BackendKind::Host => 0.0,
    };
    let overhead = match rates.backend {
        BackendKind::Cuda => CASE_OVERHEAD_SECS,
        BackendKind::Host => HOST_CASE_OVERHEAD_SECS,
    };
    overhead + host + 2.0 * launch + warmup + sampling
}

/// Whether a GPU fills `case`'s arrays and checks its output itself
/// ([`crate::backend::cuda::describe::prepared_on_device`], at the backend's threshold).
pub fn device_prepared(case: &Case) -> bool {
    use crate::backend::cuda::describe;
    describe::prepared_on_device(case, describe::DEVICE_PREP_FROM_BYTES)
}

/// Terms per second one host core adds to a reduction's gold total
/// ([`crate::cases::stream::expected_sum`]: a SplitMix64 of the index and an add, or two and a
/// product for `dot`), taken low: a core of this project's VM generates inputs at about 10⁹
/// words per second.
pub const HOST_SUM_TERMS_PER_CORE_SEC: f64 = 1e8;

/// Lane FMA steps per second one host core takes tabulating an intensity-sweep point's gold
/// values ([`crate::cases::intensity::gold_steps`]), taken at the slowest precision's: f16x2's
/// rounded steps, about 3.4 × 10⁷ a second on this project's VM (k = 1024, 61 ms, measured
/// 2026-12-06), f32's and f64's some six times faster.
pub const HOST_GOLD_STEPS_PER_SEC: f64 = 3e7;

/// Seconds a case filled and checked on the GPU ([`device_prepared`]) spends outside its
/// samples: the fills write every array and the check reads the output and regenerates the
/// inputs (a sweep point's gathering its gold values from a table of a few KiB), each at most
/// about once more over the working set at the DRAM's rate (twice it, the estimate's
/// conservative side). The host's share: a reduction's gold total, on every core; a sweep
/// point's gold table, on one.
pub fn device_prep_secs(case: &Case, rates: &Rates) -> f64 {
    let device = 2.0 * case.working_set_bytes as f64 / rates.dram_bytes_per_sec;
    let reduction = crate::cases::stream::StreamKernel::from_name(&case.kernel)
        .is_some_and(|k| k.is_reduction());
    let host = if case.family == Family::Intensity {
        let k = case.count().unwrap_or(0);
        crate::cases::intensity::gold_steps(case.precision, k) as f64 / HOST_GOLD_STEPS_PER_SEC
    } else if reduction {
        case.elements as f64 / (HOST_SUM_TERMS_PER_CORE_SEC * rates.host_cores.max(1) as f64)
    } else {
        0.0
    };
    device + host
}

/// Seconds the host's check of a GEMM takes on `cores` cores beyond reading its matrices:
/// generating and multiplying its inputs again (at [`HOST_CHECK_TERMS_PER_CORE_SEC`] each, the
/// exact check's rate or the sampled one's); nothing for other cases.
pub fn host_check_secs(case: &Case, cores: usize) -> f64 {
    use crate::cases::gemm;
    gemm::shape_of(case).map_or(0.0, |shape| {
        let (exact, sampled) = HOST_CHECK_TERMS_PER_CORE_SEC;
        let rate = if gemm::exact_accumulation(case.precision, shape.k) {
            exact
        } else {
            sampled
        };
        gemm::check_terms(case.precision, shape) as f64 / (rate * cores.max(1) as f64)
    })
}

/// Bytes the host generates and checks for `case`: its working set, but for a GEMM only its
/// matrices, once: the copies of a rotating weight are made on the device
/// ([`crate::backend::cuda::args::Rotation`]).
pub fn host_prep_bytes(case: &Case) -> u64 {
    match crate::cases::gemm::shape_of(case) {
        Ok(shape) => crate::cases::gemm::matrix_bytes(case.precision, shape),
        Err(_) => case.working_set_bytes,
    }
}

/// Seconds a capacity case takes: a handful of calls, not launches. The runner takes its
/// fewest samples of one call each, with no warm-up ([`crate::backend::PreparedCase::one_shot`]);
/// `largest` first searches, one allocation per step, and each of its samples allocates.
pub fn capacity_secs(case: &Case, cfg: &RunConfig) -> f64 {
    use crate::cases::capacity::{self, Figure};
    let samples = f64::from(cfg.min_samples.max(2));
    let calls = match Figure::parse(&case.kernel) {
        Some(Figure::Largest) => {
            // the planned figure is the free memory the search starts from
            let upper = case.working_set_bytes;
            let intervals = upper / capacity::step_bytes(upper) + 1;
            let steps = (u64::BITS - intervals.leading_zeros()).min(capacity::MAX_STEPS);
            (f64::from(steps) + samples) * ALLOCATION_SECS
        }
        _ => samples * MEMORY_QUERY_SECS,
    };
    CASE_OVERHEAD_SECS + calls
}

/// Seconds a launch case takes: like a capacity case its fewest samples, no warm-up
/// ([`crate::backend::PreparedCase::one_shot`]), each sample a fixed batch (`empty`: its
/// launches, after one warm launch; `timer`: its tries; `wake_barrier`: its rounds).
pub fn launch_rows_secs(case: &Case, cfg: &RunConfig) -> f64 {
    use crate::cases::launch::What;
    let samples = f64::from(cfg.min_samples.max(2));
    let calls = match What::parse(&case.kernel) {
        Some(What::Empty) => (1.0 + samples * case.elements as f64) * EMPTY_LAUNCH_SECS,
        Some(What::Timer) => samples * case.elements as f64 * EVENT_PAIR_SECS,
        Some(What::WakeBarrier) | None => samples * case.elements as f64 * WAKE_ROUND_SECS,
    };
    CASE_OVERHEAD_SECS + calls
}

/// Seconds a link case takes ([`crate::cases::link`]): its host buffers allocated (pinned
/// memory is pinned page by page) and filled or cleared, two passes over each at
/// [`HOST_PREP_BYTES_PER_SEC`], a device-to-host case's source filled through its host buffer
/// (one copy more); then one untimed copy and the runner's fewest samples of one copy each
/// ([`crate::backend::PreparedCase::one_shot`]), each at its rate (a bidirectional case's
/// opposite copy runs at the same time, on the other direction of the link); the check's
/// windows are kilobytes.
pub fn link_secs(case: &Case, cfg: &RunConfig, rates: &Rates) -> f64 {
    use crate::cases::link::{self, Transfer};
    let Some(t) = Transfer::parse(&case.kernel) else {
        return CASE_OVERHEAD_SECS;
    };
    let bytes = link::copy_bytes(case) as f64;
    let local = t == Transfer::DeviceLocal || t.peer();
    let host_buffers = match t {
        // the staging buffers of the sources' patterns
        _ if local => t.device_buffers() as f64,
        _ if t.bidirectional() => 2.0,
        _ => 1.0,
    };
    let host = host_buffers * bytes * 2.0 / HOST_PREP_BYTES_PER_SEC;
    let rate = match t {
        // read and written by the copy engines (a peer link is no faster than that)
        _ if local => rates.dram_bytes_per_sec / 2.0,
        _ if t.pageable() => LINK_PAGEABLE_BYTES_PER_SEC,
        _ => LINK_PINNED_BYTES_PER_SEC,
    };
    let fills = if t.to_device() { 0.0 } else { 1.0 };
    let fill_rate = if local {
        LINK_PAGEABLE_BYTES_PER_SEC
    } else {
        rate
    };
    let copy = LINK_COPY_SECS + bytes / rate;
    let copies = (1.0 + f64::from(cfg.min_samples.max(2))) * copy;
    let staging = if local || fills > 0.0 {
        bytes / fill_rate
    } else {
        0.0
    };
    CASE_OVERHEAD_SECS + host + staging + copies
}

/// Seconds the whole plan takes: its cases' ([`case_secs`]), and on the host backend what
/// preparing and checking each case's arrays costs, its arena simulated over the plan in order
/// ([`host_prep_secs`]).
pub fn plan_secs(
    planned: &[PlannedCase],
    cfg: &RunConfig,
    min_sample_secs: f64,
    rates: &Rates,
) -> f64 {
    plan_case_secs(planned, cfg, min_sample_secs, rates)
        .iter()
        .sum()
}

/// Seconds each case of the plan takes, in the plan's order (their sum is [`plan_secs`]): what
/// `run --dry-run` lists.
pub fn plan_case_secs(
    planned: &[PlannedCase],
    cfg: &RunConfig,
    min_sample_secs: f64,
    rates: &Rates,
) -> Vec<f64> {
    let arena = (rates.backend == BackendKind::Host)
        .then(|| crate::backend::host::arena::Arena::simulated(u64::MAX, true));
    planned
        .iter()
        .map(|p| {
            let prep = arena.as_ref().map_or(0.0, |arena| {
                host_prep_secs(
                    &crate::backend::host::prep_work(&p.case, arena),
                    rates.host_cores,
                )
            });
            (case_secs(&p.case, cfg, min_sample_secs, rates) + prep) * rates.slowdown()
        })
        .collect()
}

// The host's preparation rates, per worker, as the estimate takes them on a host given all its
// CPUs ([`Rates::pace`] scales them on a busier one): on this project's 2-vCPU VM (2026-12-07,
// nothing else running; DRAM-rule arrays of 1.9 GiB), from `run` and `run --quick` per case
// (the runner's own split of a case's time). The figures quoted under each rate from
// 2026-12-06 were taken beside other builds (load averages 4-9).

/// Bytes per second one host worker generates pseudo-random inputs at (a SplitMix64 of the index
/// per element, converted and stored, compiled for the CPU's widest vectors; digested too only
/// where no guard can watch the input: [`crate::backend::host::arena`]): on the quiet VM
/// (2026-12-07, inputs guarded) a STREAM reduction's 2 GB input in 0.12-0.15 s on two workers,
/// a sweep's 2 GB input and its output's poison in 0.23-0.33 s (5-8 GB/s per worker for the
/// input alone; f32 lowest, its elements twice as many). Digested as they were written, the
/// same took 0.16-0.21 s and 0.27-0.35 s; one element at a time, 0.54 s and 0.53-1.38 s.
pub const HOST_GENERATE_BYTES_PER_CORE_SEC: f64 = 6.0e9;

/// Bytes per second one host worker writes (poison, copies of a rotating weight). Poison goes
/// out in non-temporal stores ([`crate::backend::host::arena::fill_streaming`]): a 2 GiB output
/// took 0.24-0.43 s on two workers at load 5-8, against 0.56-0.94 s with plain stores in the
/// same interleaved rounds (2026-12-06); plain stores had taken 0.24-0.7 s at load 4-9.
pub const HOST_WRITE_BYTES_PER_CORE_SEC: f64 = 12e9;

/// Bytes per second one host worker first-touches new memory at (a page fault and the kernel's
/// zeroing per page, and the free after the case). On the VM a huge page new to the guest costs
/// far more than its zeroing (its memory is backed as it is first touched): the STREAM copy's
/// two new 1.9 GiB arrays took 10 s on two workers at load 4 (11-32 s at 6-9), the triad's
/// third 5-6 s (5-16 s), where 4 KiB pages take about 1 s per 2 GiB (a C probe, the same
/// hour). Huge pages freed a moment before cost less (a `--quick` run right after a default
/// one: 7 s for all three). On the quiet VM (2026-12-07) the copy's two took 6.2-6.3 s and the
/// triad's third 3.1-3.3 s where the memory was new to the guest (the first run after a pause:
/// 0.32-0.38 GB/s per worker), and all three 0.9-1.7 s where a run had freed it a moment before
/// (2-3.5 GB/s; 7-8 GB/s in the VM's faster memory mode later that morning). Which of the two a
/// run meets is not known before it starts, and on this VM the difference, 7-9 s, is a quarter
/// of a `--quick` run: its warm runs took 25-30 s and its cold ones 33-38 s, so an estimate
/// within ±30 % of both must lie between 27 and 32 s (the default's: 47-54 s and 55-67 s,
/// between 47 and 61 s). At 1.5 GB/s per worker the estimates are 30 s and 52 s. With the
/// cold rate alone a `--quick` run right after another came in 27-36 % under its estimate.
pub const HOST_TOUCH_BYTES_PER_CORE_SEC: f64 = 1.5e9;

/// Bytes per second one host worker's check reads back (each element against its gold value,
/// and into its array's digest where no guard watches an input). The checks count wrong words
/// wide ([`crate::backend::host::check`]): in a default run at load 5.5 (2026-12-06) the
/// sweep's checks took 9.0 s against 19.7 s word by word, STREAM's 3.1 s against 8.7 s; a
/// sweep's two 2 GiB arrays in 0.44-0.68 s on two workers. On the quiet VM (2026-12-07) with the
/// inputs guarded, a sweep point's two in 0.15-0.21 s, a STREAM copy's in 0.14-0.16 s and a
/// triad's three in 0.22-0.26 s; with the inputs digested, 0.22-0.27 s, 0.20-0.22 s and
/// 0.32-0.34 s. Word by word, the default run's 115 GB or so of checks had taken 22 s at
/// load 3.5.
pub const HOST_CHECK_BYTES_PER_CORE_SEC: f64 = 12e9;

/// Elements per second one thread puts in the latency ring's random order.
pub const HOST_SERIAL_ELEMENTS_PER_SEC: f64 = 20e6;

/// Seconds the host backend spends preparing and checking a case that does `work`, on `cores`
/// workers, at the rates above.
pub fn host_prep_secs(work: &crate::backend::host::PrepWork, cores: usize) -> f64 {
    let cores = cores.max(1) as f64;
    let per_core = |bytes: u64, rate: f64| bytes as f64 / (rate * cores);
    per_core(work.generated_bytes, HOST_GENERATE_BYTES_PER_CORE_SEC)
        + per_core(work.written_bytes, HOST_WRITE_BYTES_PER_CORE_SEC)
        + per_core(work.new_bytes, HOST_TOUCH_BYTES_PER_CORE_SEC)
        + per_core(work.checked_bytes, HOST_CHECK_BYTES_PER_CORE_SEC)
        + per_core(work.check_terms, HOST_CHECK_TERMS_PER_CORE_SEC.0)
        + work.serial_elements as f64 / HOST_SERIAL_ELEMENTS_PER_SEC
}

/// The longest a launch of the intensity sweep may last at the rated peak in a default run,
/// where its point is compute-bound by the rated speeds ([`shorten`]).
pub const DEFAULT_SWEEP_LAUNCH_SECS: f64 = 0.05;

/// The same for `--quick`.
pub const QUICK_SWEEP_LAUNCH_SECS: f64 = 0.02;

/// How many times its memory time a sweep launch's arithmetic must take at the rated speeds for
/// its point to count as compute-bound, so that fewer words leave its figure the arithmetic's.
pub const COMPUTE_BOUND_MARGIN: f64 = 2.0;

/// The sweep's launch cap under `cfg`: `--quick`'s, the default suite's, or none (`--full`,
/// `--suite`: every case at the size the backend planned).
pub fn sweep_launch_cap_secs(cfg: &RunConfig) -> Option<f64> {
    if cfg.quick {
        Some(QUICK_SWEEP_LAUNCH_SECS)
    } else if cfg.selection.is_default() {
        Some(DEFAULT_SWEEP_LAUNCH_SECS)
    } else {
        None
    }
}

/// Words a shortened sweep case keeps a multiple of (and at least).
const SHORT_SWEEP_WORDS: u64 = 4096;

/// `planned` with each intensity-sweep point whose launch would take more than `cap_secs` at the
/// rated peak, and whose arithmetic takes at least [`COMPUTE_BOUND_MARGIN`] times its memory
/// time there, on fewer words: as many as a launch of `cap_secs` does. Its figure, the
/// arithmetic's rate, does not depend on its size; a point the rated speeds call memory-bound
/// keeps its DRAM working set whatever its launch takes. Its note says so.
pub fn shorten(planned: Vec<PlannedCase>, cap_secs: f64, rates: &Rates) -> Vec<PlannedCase> {
    planned
        .into_iter()
        .map(|p| {
            let case = &p.case;
            let Some(k) = case.count().filter(|_| case.family == Family::Intensity) else {
                return p;
            };
            let compute = case.work.flops as f64 / rates.ops(case.precision);
            let memory = case.work.bytes() as f64 / rates.dram_bytes_per_sec;
            if compute <= cap_secs || compute < COMPUTE_BOUND_MARGIN * memory {
                return p;
            }
            let words = ((case.elements as f64 * cap_secs / compute) as u64) / SHORT_SWEEP_WORDS
                * SHORT_SWEEP_WORDS;
            let words = words.max(SHORT_SWEEP_WORDS);
            if words >= case.elements {
                return p;
            }
            let note = format!(
                "{} of the planned {} words: compute-bound by the rated speeds, a launch lasts \
                 about {} at the theoretical peak",
                words,
                case.elements,
                crate::units::human(cap_secs)
            );
            PlannedCase {
                case: crate::cases::intensity::case(case.precision, k, words),
                note: if p.note.is_empty() {
                    note
                } else {
                    format!("{}; {note}", p.note)
                },
            }
        })
        .collect()
}
