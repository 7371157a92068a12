//! The host backend: the same cases as the GPU, as Rust kernels on every core of this machine.
//!
//! Measured for real and labelled `host` everywhere, so every part of roofprobe works on a
//! machine without a GPU. The rules follow STREAM's: one worker thread pinned per CPU, each
//! worker first-touches and then always works on the same slice of every array (so its pages
//! are local to it), a barrier after every repetition (OpenMP's implicit one), and the monotonic
//! clock around whole groups of repetitions.
//!
//! This module owns host discovery too (CPU model, caches, memory): it reads Linux's `/proc` and
//! `/sys` (through [`cpu`]), and degrades to what the standard library knows elsewhere.

pub mod amx_gemm;
pub mod arena;
pub mod cache;
pub mod capacity;
pub mod check;
pub mod clock;
pub mod compute;
pub mod cpu;
pub mod gemm;
pub mod gemm_kernels;
pub mod guard;
pub mod latency;
pub mod launch;
pub mod pages;
pub mod pool;
pub mod stream;
pub mod stream_case;
pub mod sweep_case;
pub mod tensor;
pub mod watch;
pub mod wide;

use self::arena::{Arena, Fill};
use self::cache::CacheCase;
use self::capacity::{meminfo_bytes, HostCapacity};
use self::compute::HostCompute;
use self::cpu::{cpuinfo_field, read_text};
use self::latency::LatencyCase;
use self::launch::WakeBarrier;
use self::pool::{allowed_cpus, Pool};
use self::stream_case::StreamCase;
use super::{
    dram_rule_bytes, efficiency_cases, plan_arrays, Backend, PlannedCase, PreparedCase, SizeRequest,
};
use crate::cases::stream::{Element, StreamKernel};
use crate::cases::{self, Case, Family, Precision};
use crate::device::{BackendKind, CacheLevel, Conditions, DeviceInfo, Identity};
use crate::{Error, Result};

/// The host CPU as a device.
pub struct HostBackend {
    info: DeviceInfo,
    pool: Pool,
    /// The SIMD set and FMA datapath the compute cases use.
    compute: HostCompute,
    /// The large arrays, kept from one case to the next.
    arena: Arena,
}

impl HostBackend {
    /// Discovers the host and starts one pinned worker per allowed CPU.
    pub fn new() -> HostBackend {
        Self::with_cpus(allowed_cpus())
    }

    /// A host backend on these CPUs only (tests use this to stay small).
    pub fn with_cpus(cpus: Vec<usize>) -> HostBackend {
        let mut info = host_info();
        info.units = cpus.len() as u32;
        let compute = HostCompute::detect();
        // The kernels run what `Simd::detect` finds, as `host_info` records it.
        debug_assert_eq!(info.identity.isa, compute.simd.name());
        HostBackend {
            arena: Arena::new(usable_bytes(&info)),
            info,
            pool: Pool::new(cpus),
            compute,
        }
    }

    /// Worker threads.
    pub fn threads(&self) -> usize {
        self.pool.threads()
    }
}

/// The memory the host's cases may use: four fifths of what was available when the backend
/// started, a fifth left to everything else on the machine.
fn usable_bytes(info: &DeviceInfo) -> u64 {
    info.memory_free_bytes / 5 * 4
}

impl Default for HostBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl Backend for HostBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn touch_secs(&self) -> f64 {
        self.arena.touch_secs()
    }

    fn cases(&self, size: SizeRequest) -> Result<Vec<PlannedCase>> {
        let usable = usable_bytes(&self.info);
        let mut planned = plan_arrays(
            size,
            dram_rule_bytes(self.info.llc_bytes),
            3,
            usable,
            "host",
            "stream cases",
            |bytes| cases::stream::cases(|p| (bytes / cases::stream::element_bytes(p)).max(1)),
        )?;
        // Capacity first, so `free` is what the run started with.
        let capacity_cases = cases::capacity::HOST_FIGURES.map(|figure| PlannedCase {
            case: cases::capacity::case(
                figure,
                match figure {
                    cases::capacity::Figure::Total => self.info.memory_total_bytes,
                    _ => self.info.memory_free_bytes,
                },
            ),
            note: String::new(),
        });
        planned.splice(0..0, capacity_cases);
        let threads = self.pool.threads();
        for p in compute::PEAK_PRECISIONS {
            planned.push(PlannedCase {
                case: compute::peak_case(p, threads, self.compute.simd),
                note: String::new(),
            });
        }
        // The matrix unit, where the CPU has one and the OS grants it (`devices` says why not).
        planned.extend(tensor::cases(threads).into_iter().map(|case| PlannedCase {
            case,
            note: String::new(),
        }));
        // The sweep's arrays follow the DRAM rule too, so its low-k points measure the same
        // memory as the STREAM cases: with arrays of only 2 × the reported LLC, a VM whose
        // cores sit on two L3s read them from cache, 27 % above the DRAM roof. At k = 1024 a
        // launch then lasts about 0.3 s here; the runner's case budget keeps the sweep to a
        // couple of seconds per point.
        planned.extend(plan_arrays(
            size,
            dram_rule_bytes(self.info.llc_bytes),
            2,
            usable,
            "host",
            "the intensity sweep",
            |bytes| compute::sweep_cases(|p| (bytes / crate::cases::arith::word_bytes(p)).max(1)),
        )?);
        planned.extend(
            host_cache_cases(&self.info.caches, threads)
                .into_iter()
                .map(|case| PlannedCase {
                    case,
                    note: String::new(),
                }),
        );
        planned.extend(host_sweep_cases(
            &self.info.caches,
            threads,
            self.info.llc_bytes,
            usable,
        ));
        planned.extend(
            host_gemm_cases(&self.compute, threads, self.info.llc_bytes, usable, size)
                .into_iter()
                .map(|case| PlannedCase {
                    case,
                    note: String::new(),
                }),
        );
        planned.extend(host_latency_cases(self.info.llc_bytes, usable));
        planned.extend(efficiency_cases(
            size,
            usable,
            HOST_EFFICIENCY_MAX_ARRAY_BYTES,
        ));
        planned.extend(cases::launch::HOST_ROWS.map(|what| PlannedCase {
            case: cases::launch::case(what),
            note: String::new(),
        }));
        Ok(planned)
    }

    fn prepare(&mut self, case: &Case) -> Result<Box<dyn PreparedCase + '_>> {
        match (case.family, case.precision) {
            // the size sweep is the STREAM kernels at other sizes
            (Family::Stream | Family::Efficiency, Precision::F32) => {
                Ok(Box::new(StreamCase::<f32>::new(
                    &self.pool,
                    &self.arena,
                    self.compute.simd,
                    self.info.llc_bytes,
                    case,
                )?))
            }
            (Family::Stream | Family::Efficiency, Precision::F64) => {
                Ok(Box::new(StreamCase::<f64>::new(
                    &self.pool,
                    &self.arena,
                    self.compute.simd,
                    self.info.llc_bytes,
                    case,
                )?))
            }
            (Family::Peak | Family::Intensity, _) => compute::prepare(
                &self.pool,
                &self.arena,
                self.compute,
                self.info.llc_bytes,
                case,
            ),
            (Family::Gemm, _) if case.kernel == cases::gemm::HOST_AMX => {
                amx_gemm::prepare(&self.pool, &self.arena, case)
            }
            (Family::Gemm, _) => {
                let l2 = self.info.caches.iter().find(|c| c.name == "L2");
                let l2_bytes = l2.map_or(gemm_kernels::DEFAULT_L2_BYTES, |c| c.size_bytes);
                gemm::prepare(&self.pool, &self.arena, self.compute, l2_bytes, case)
            }
            (Family::Tensor, _) => tensor::prepare(&self.pool, case),
            (Family::Latency, _) => Ok(Box::new(LatencyCase::new(&self.pool, case)?)),
            (Family::Capacity, _) => Ok(Box::new(HostCapacity::new(case)?)),
            (Family::Launch, _) => Ok(Box::new(WakeBarrier::new(&self.pool, case)?)),
            // no host-device link to copy over: the host plans no link case
            (Family::Link, _) => Err(Error::Usage(format!(
                "the host backend has no kernel for {}: a link case copies between the host and \
                 a GPU, and the host backend has no GPU; run it with --device cuda:N",
                case.id()
            ))),
            (Family::Cache, _) => Ok(Box::new(CacheCase::new(
                &self.pool,
                &self.arena,
                self.compute.simd,
                case,
            )?)),
            _ => Err(Error::Usage(format!(
                "the host backend has no kernel for {}",
                case.id()
            ))),
        }
    }

    fn conditions(&self) -> Conditions {
        Conditions {
            clock_mhz: current_mhz(self.pool.cpus()),
            cpu_times: crate::device::CpuTimes::now(),
            ..Default::default()
        }
    }

    fn min_sample_secs(&self) -> f64 {
        0.02
    }
}

/// Longest one host GEMM launch may last at the theoretical peak: the runner times at least
/// eight launches of a case, so the largest shapes take a few seconds each.
pub const GEMM_MAX_LAUNCH_SECS: f64 = 0.3;

/// The host's GEMM cases: the square sweep in f32 and f64 and the batch sweep in f32, each
/// shape by the reference crate then by our kernel, and where the CPU and OS grant AMX bf16
/// both sweeps in bf16 on it ([`amx_gemm`], its own peak setting the time cap). Shapes
/// are capped by `usable_bytes`, by an explicit `--size` (no matrix larger than it), and by
/// time: at most [`GEMM_MAX_LAUNCH_SECS`] at the theoretical peak of `threads` cores at the
/// clock measured now (16 operations per cycle per core where the core's FMA datapath is not
/// known). The batch sweep's shapes, whatever their M, rotate through copies of B up to the
/// DRAM rule's working set, or the `--size` given ([`cases::gemm::rotate_weights`]), as on a GPU: with
/// one B, a row past the decode steps read its weight from the last-level cache too.
fn host_gemm_cases(
    compute: &HostCompute,
    threads: usize,
    llc_bytes: u64,
    usable_bytes: u64,
    size: SizeRequest,
) -> Vec<Case> {
    let mhz = clock::measure_core_mhz().unwrap_or(3000.0);
    let mut out = Vec::new();
    // the shapes that fit memory, --size and a launch of GEMM_MAX_LAUNCH_SECS at this peak
    let limits = |peak_gflops: f64| cases::gemm::Limits {
        usable_bytes,
        max_matrix_bytes: match size {
            SizeRequest::Auto => None,
            SizeRequest::BytesPerArray(b) => Some(b),
        },
        max_flops: peak_gflops * 1e9 * GEMM_MAX_LAUNCH_SECS,
    };
    for p in gemm::PRECISIONS {
        let peak_gflops = compute
            .peak_gflops(threads, p, mhz)
            .unwrap_or(16.0 * threads as f64 * mhz / 1e3);
        out.extend(cases::gemm::cases(
            cases::gemm::HOST_OURS,
            Some(cases::gemm::HOST_REFERENCE),
            p,
            &limits(peak_gflops),
            p == Precision::F32,
        ));
    }
    // bf16 on the matrix unit, where there is one: both sweeps, no reference line
    if tensor::available(amx_gemm::PRECISION).is_ok() {
        let peak_gflops = tensor::theory_gflops(amx_gemm::PRECISION, threads, mhz);
        out.extend(cases::gemm::cases(
            cases::gemm::HOST_AMX,
            None,
            amx_gemm::PRECISION,
            &limits(peak_gflops),
            true,
        ));
    }
    // An explicit --size is the working set asked for, as for the STREAM arrays.
    let dram = match size {
        SizeRequest::Auto => dram_rule_bytes(llc_bytes),
        SizeRequest::BytesPerArray(b) => b,
    };
    cases::gemm::rotate_weights(&mut out, u64::MAX, dram, usable_bytes);
    out
}

/// The cache sweep's cases for `threads` workers, each on its own core: per level (L1d, L2, L3),
/// working sets within that level's capacity summed over the instances the workers use
/// ([`cases::cache::sizes`]).
fn host_cache_cases(caches: &[CacheLevel], threads: usize) -> Vec<Case> {
    let mut out = Vec::new();
    let mut below = 0;
    for level in caches {
        let kernel = level.name.trim_end_matches('d').to_ascii_lowercase();
        if cases::cache::level(&kernel).is_none() {
            continue;
        }
        let aggregate = level.size_bytes * u64::from(level.instances.min(threads as u32).max(1));
        out.extend(cases::cache::level_cases(
            &kernel,
            below,
            aggregate,
            cache::BYTES_PER_LAUNCH,
        ));
        below = aggregate;
    }
    out
}

/// The cache levels as the sweep's workers see them: each data or unified level's size times
/// the instances the `threads` workers (one per core) use, named as the OS names it (`L1d`).
pub fn shared_cache_levels(caches: &[CacheLevel], threads: usize) -> Vec<(String, u64)> {
    caches
        .iter()
        .map(|level| {
            let instances = u64::from(level.instances.min(threads as u32).max(1));
            (level.name.clone(), level.size_bytes * instances)
        })
        .collect()
}

/// The bandwidth sweep's steps: [`cases::cache::HOST_STEPS_PER_OCTAVE`] per octave from 16 KiB to
/// 4 × the last-level cache (as far as `usable_bytes` allows), each noting the cache levels
/// the OS reports, which the plateaus are matched to.
fn host_sweep_cases(
    caches: &[CacheLevel],
    threads: usize,
    llc_bytes: u64,
    usable_bytes: u64,
) -> Vec<PlannedCase> {
    let note = cases::cache::sweep_note(&shared_cache_levels(caches, threads));
    cases::cache::sweep_cases(
        cases::cache::MIN_BYTES,
        (4 * llc_bytes).min(usable_bytes),
        cases::cache::HOST_STEPS_PER_OCTAVE,
        cache::BYTES_PER_LAUNCH,
    )
    .into_iter()
    .map(|case| PlannedCase {
        case,
        note: note.clone(),
    })
    .collect()
}

/// The latency chase's cases: working sets from 4 KiB to 4 × the last-level cache (so the
/// largest measures DRAM), each within `usable_bytes`; a size that does not fit is left out
/// and its note says so on the largest that does.
fn host_latency_cases(llc_bytes: u64, usable_bytes: u64) -> Vec<PlannedCase> {
    let wanted = cases::latency::sizes(4 * llc_bytes);
    let fits: Vec<u64> = wanted
        .iter()
        .copied()
        .filter(|&b| b <= usable_bytes)
        .collect();
    let left_out = wanted.len() - fits.len();
    let last = fits.len().saturating_sub(1);
    fits.into_iter()
        .enumerate()
        .map(|(i, bytes)| PlannedCase {
            case: cases::latency::case(
                cases::latency::HOST_KERNEL,
                latency::LINE_BYTES,
                bytes,
                latency::HOPS_PER_LAUNCH,
            ),
            note: if i == last && left_out > 0 {
                format!("{left_out} larger working sets left out to fit free memory")
            } else {
                String::new()
            },
        })
        .collect()
}

/// The largest array the host's size sweep uses: 512 MiB (a triad's working set of 1.5 GiB,
/// far beyond any host's last-level cache). A time cap: every size's arrays are first-touched and
/// checked, about twice the largest's bytes per kernel in all, which keeps the sweep to some
/// seconds on a small machine; the fit needs the asymptote, not the whole of DRAM.
pub const HOST_EFFICIENCY_MAX_ARRAY_BYTES: u64 = 512 << 20;

/// Arithmetic the host kernels need beyond [`Element`].
pub trait HostFloat:
    Element + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + Default + self::arena::Word
{
}
impl HostFloat for f32 {}
impl HostFloat for f64 {}

/// The testing hook's variable, where the tests have always found it.
pub use self::cpu::FAULT_ENV;

/// The arrays of a STREAM kernel in `precision`, in the kernel's parameter order: each input
/// with the values it holds, then the output (`None`: poisoned before the run).
pub fn stream_arrays(kernel: StreamKernel, precision: Precision) -> Vec<Option<Fill>> {
    (0..kernel.inputs())
        .map(|array| {
            Some(Fill::Stream {
                precision,
                reduction: kernel.is_reduction(),
                array,
            })
        })
        .chain((0..kernel.outputs()).map(|_| None))
        .collect()
}

/// What preparing and checking one case costs the host, in the quantities the run's estimate
/// prices ([`crate::run::forecast`]): what it generates, writes and reads, and how much of that
/// memory is new to the process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PrepWork {
    /// Bytes of pseudo-random inputs generated, every worker its chunk.
    pub generated_bytes: u64,
    /// Bytes written plainly (poison, the copies of a rotating weight), every worker its chunk.
    pub written_bytes: u64,
    /// Bytes of memory new to the process, first touched (and freed after the case where they
    /// are not the arena's).
    pub new_bytes: u64,
    /// Bytes the check reads back, every worker its chunk.
    pub checked_bytes: u64,
    /// Input pairs a GEMM's check multiplies ([`cases::gemm::check_terms`]).
    pub check_terms: u64,
    /// Elements one thread generates alone (the latency ring's order).
    pub serial_elements: u64,
}

/// What preparing and checking `case` will cost on the host, with `arena` (a simulated one,
/// [`Arena::simulated`], given every case of the plan in order) saying which inputs are still
/// held from the cases before. The same arrays [`HostBackend::prepare`] asks for.
pub fn prep_work(case: &Case, arena: &Arena) -> PrepWork {
    use self::arena::Need;
    let elements = usize::try_from(case.elements).unwrap_or(usize::MAX);
    // the arrays `fills` (an output's `None`), each output's check leaving `holds`
    let from_arena = |fills: Vec<Option<Fill>>, word_bytes: u64, holds: Option<Fill>| {
        let bytes = elements.saturating_mul(word_bytes as usize);
        let needs: Vec<Need> = fills
            .into_iter()
            .map(|fill| Need {
                bytes,
                elements,
                fill,
                holds: holds.filter(|_| fill.is_none()),
            })
            .collect();
        let w = arena.simulate(&needs);
        PrepWork {
            generated_bytes: w.filled_bytes,
            written_bytes: w.poisoned_bytes,
            new_bytes: w.new_bytes,
            checked_bytes: needs.len() as u64 * bytes as u64,
            ..PrepWork::default()
        }
    };
    match case.family {
        Family::Stream | Family::Efficiency => match StreamKernel::from_name(&case.kernel) {
            Some(kernel) => {
                let mut work = from_arena(
                    stream_arrays(kernel, case.precision),
                    cases::stream::element_bytes(case.precision),
                    None,
                );
                if kernel.is_reduction() {
                    // the check reads the inputs, not the (absent) output
                    work.checked_bytes = case.working_set_bytes;
                }
                work
            }
            None => PrepWork::default(),
        },
        Family::Intensity => from_arena(
            vec![
                Some(Fill::Sweep {
                    precision: case.precision,
                }),
                None,
            ],
            cases::arith::word_bytes(case.precision),
            // each point's output taken over the point's before it (SweepCase)
            case.count().map(|k| Fill::SweepOut {
                precision: case.precision,
                k,
            }),
        ),
        Family::Gemm => match cases::gemm::shape_of(case) {
            Ok(s) => {
                let (input, output) = (
                    cases::gemm::input_bytes(case.precision),
                    cases::gemm::output_bytes(case.precision),
                );
                let weight = cases::gemm::weight_bytes(case.precision, s);
                let copies = cases::gemm::weight_copies(case).max(1);
                // B in its copies from the arena (as GemmCase and AmxGemmCase ask for it), A
                // and C of their own
                let b_bytes = weight * copies;
                let b = arena.simulate(&[Need {
                    holds: None,
                    bytes: usize::try_from(b_bytes).unwrap_or(usize::MAX),
                    elements: usize::try_from(b_bytes / input).unwrap_or(usize::MAX),
                    fill: Some(Fill::GemmB {
                        precision: case.precision,
                        n: s.n,
                        k: s.k,
                        layout: if case.kernel == cases::gemm::HOST_AMX {
                            amx_gemm::AMX_TILES
                        } else {
                            0
                        },
                    }),
                }]);
                let (a_bytes, c_bytes) = (s.m * s.k * input, s.m * s.n * output);
                // B's first copy is generated, the others copied from it
                // ([`Arena::input_repeating`])
                let b_generated = b.filled_bytes.min(weight);
                PrepWork {
                    generated_bytes: a_bytes + b_generated,
                    written_bytes: c_bytes + (b.filled_bytes - b_generated),
                    new_bytes: a_bytes + c_bytes + b.new_bytes,
                    // and B's copies digested, where no guard watches them (arena.rs)
                    checked_bytes: cases::gemm::matrix_bytes(case.precision, s)
                        + if self::arena::watches(b_bytes) {
                            0
                        } else {
                            b_bytes
                        },
                    check_terms: cases::gemm::check_terms(case.precision, s),
                    ..PrepWork::default()
                }
            }
            Err(_) => PrepWork::default(),
        },
        // the words from the arena (CacheCase); the check reads the workers' sums alone, and
        // the words only to digest them where no guard watches them
        Family::Cache => {
            let mut work = from_arena(
                vec![Some(Fill::Cache {
                    words: case.elements,
                })],
                4,
                None,
            );
            if self::arena::watches(work.checked_bytes) {
                work.checked_bytes = 0;
            }
            work
        }
        Family::Latency => PrepWork {
            new_bytes: case.working_set_bytes,
            serial_elements: case.elements,
            ..PrepWork::default()
        },
        Family::Peak | Family::Tensor | Family::Capacity | Family::Launch | Family::Link => {
            PrepWork::default()
        }
    }
}

/// Parses sizes like `32K`, `2048K`, `32M` (sysfs cache sizes) into bytes.
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.trim().parse::<u64>().ok().map(|d| d * mult)
}

/// Counts CPUs in a sysfs CPU list such as `0-3,8,10-11`.
pub fn count_cpu_list(s: &str) -> u32 {
    s.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|part| match part.split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => u32::from(part.parse::<u32>().is_ok()),
        })
        .sum()
}

/// Data and unified caches of CPU 0 from sysfs, with how many instances of each exist on the
/// machine (CPUs / CPUs sharing one instance).
fn host_caches(total_cpus: u32) -> Vec<CacheLevel> {
    let mut levels = Vec::new();
    for index in 0..8 {
        let base = format!("/sys/devices/system/cpu/cpu0/cache/index{index}");
        let (Some(level), Some(kind), Some(size)) = (
            read_text(&format!("{base}/level")),
            read_text(&format!("{base}/type")),
            read_text(&format!("{base}/size")),
        ) else {
            continue;
        };
        if kind == "Instruction" {
            continue;
        }
        let Some(size_bytes) = parse_cache_size(&size) else {
            continue;
        };
        let sharing = read_text(&format!("{base}/shared_cpu_list"))
            .map(|l| count_cpu_list(&l))
            .filter(|&c| c > 0)
            .unwrap_or(1);
        let suffix = if kind == "Data" { "d" } else { "" };
        levels.push(CacheLevel {
            name: format!("L{level}{suffix}"),
            size_bytes,
            instances: total_cpus.div_ceil(sharing).max(1),
        });
    }
    levels
}

/// Mean of the current `cpu MHz` of the given CPUs (what the kernel last saw; in a VM it is often
/// the nominal clock).
fn current_mhz(cpus: &[usize]) -> Option<f64> {
    cpu::cpuinfo_mhz(&cpu::cpuinfo(), cpus)
}

/// The CPU's name from `/proc/cpuinfo`: its `model name` (x86, and some Arm kernels), else the
/// Arm core its implementer and part numbers name (what lscpu shows), else the board's `Model`,
/// else the architecture.
fn host_cpu_name(cpuinfo: &str) -> String {
    cpuinfo_field(cpuinfo, "model name")
        .or_else(|| cpu::arm_core_of(cpuinfo).map(|(name, _)| name.to_string()))
        .or_else(|| cpuinfo_field(cpuinfo, "Model"))
        .unwrap_or_else(|| format!("{} CPU", std::env::consts::ARCH))
}

/// What the host is: CPU model and identity, logical CPUs, clock, caches, memory, OS.
pub fn host_info() -> DeviceInfo {
    let cpus = allowed_cpus();
    let cpuinfo = cpu::cpuinfo();
    let name = host_cpu_name(&cpuinfo);
    let online = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let caches = host_caches(online);
    let llc_bytes = caches
        .iter()
        .map(|c| c.size_bytes)
        .max()
        .unwrap_or(32 << 20);
    let meminfo = read_text("/proc/meminfo").unwrap_or_default();
    let memory_total_bytes = meminfo_bytes(&meminfo, "MemTotal").unwrap_or(0);
    let memory_free_bytes = meminfo_bytes(&meminfo, "MemAvailable").unwrap_or(memory_total_bytes);
    let max_khz = read_text("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .and_then(|s| s.parse::<f64>().ok());
    let os = read_text("/proc/sys/kernel/osrelease")
        .map(|r| format!("{} {r}", std::env::consts::OS))
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let id = cpu::cpu_id(&cpuinfo);
    let mut extra = vec![(
        "CPUs".to_string(),
        format!("{} usable of {} online", cpus.len(), online),
    )];
    if let Some(mhz) = cpu::cpuinfo_mhz(&cpuinfo, &cpus) {
        extra.push((
            "clock now".to_string(),
            format!("{mhz:.0} MHz (/proc/cpuinfo)"),
        ));
    }
    if !id.stepping.is_empty() {
        extra.push(("stepping".to_string(), id.stepping));
    }
    // x86 lists `flags`, AArch64 `Features`.
    let listed = [
        ("flags", &["avx512f", "avx2", "fma", "sse4_2"][..]),
        ("Features", &["asimd", "sve", "sve2"][..]),
    ];
    for (key, wanted) in listed {
        if let Some(flags) = cpuinfo_field(&cpuinfo, key) {
            let simd: Vec<&str> = wanted
                .iter()
                .copied()
                .filter(|f| crate::specs::theory::has_flag(&flags, f))
                .collect();
            extra.push(("SIMD the CPU has".to_string(), simd.join(" ")));
            break;
        }
    }
    // The matrix unit the tensor cases use, or why there are none.
    let (amx, why): (Vec<_>, Vec<_>) = self::tensor::PRECISIONS
        .into_iter()
        .map(|p| (p, self::tensor::available(p)))
        .partition(|(_, r)| r.is_ok());
    extra.push((
        "matrix unit".to_string(),
        match (amx.is_empty(), why.first()) {
            (false, _) => format!(
                "AMX ({})",
                amx.iter()
                    .map(|(p, _)| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            (true, Some((_, Err(e)))) => format!("none: {e}"),
            _ => "none".to_string(),
        },
    ));
    extra.push((
        "huge pages".to_string(),
        huge_pages_line(self::pool::thp_mode()),
    ));
    DeviceInfo {
        backend: BackendKind::Host,
        id: "host".to_string(),
        name,
        compute_capability: String::new(),
        units: cpus.len() as u32,
        clock_mhz: max_khz.map(|k| k / 1000.0),
        memory_clock_mhz: None,
        memory_bus_bits: None,
        llc_bytes,
        caches,
        memory_total_bytes,
        memory_free_bytes,
        driver: os,
        identity: Identity {
            vendor: id.vendor,
            cpu_family: id.family,
            cpu_model: id.model,
            microarch: id.microarch,
            isa: compute::Simd::detect().name().to_string(),
            ..Identity::default()
        },
        extra,
    }
}

/// `devices`' line on huge pages, from the transparent-huge-page mode (`None`: no such file).
fn huge_pages_line(mode: Option<&str>) -> String {
    let file = self::pool::THP_ENABLED;
    let from = self::pool::HUGE_PAGES_FROM >> 20;
    match mode {
        Some(m) if self::pool::thp_asks(mode) => {
            format!("transparent, mode {m} ({file}); asked for on arrays of {from} MiB and more")
        }
        Some(m) => format!(
            "none: transparent huge pages are off (mode {m} in {file}), so large working sets pay \
             a page walk every 4 KiB"
        ),
        None => format!("none: no {file} (not Linux, or a kernel without them)"),
    }
}

#[cfg(test)]
mod tests {
    use super::compute::Simd;
    use super::*;

    /// A short run through the runner, as `run --device host --quick --samples 3 --size 1MiB`
    /// makes it with these filters: the three FMA peaks, a sweep point in each precision and one
    /// L1 size, seven rows, every one valid and run with the SIMD this build detects. On aarch64
    /// that is NEON, which `.ci/aarch64` runs this for under qemu-user.
    #[test]
    fn a_short_run_gives_valid_rows_with_the_detected_simd() {
        use crate::run::runner::RunConfig;
        let mut backend = HostBackend::new();
        let cfg = RunConfig {
            samples: 3,
            size: SizeRequest::BytesPerArray(1 << 20),
            filter: [
                "peak/",
                "intensity/fma/f32/4",
                "intensity/fma/f64/4",
                "intensity/fma/i32/4",
                "cache/l1/i32/16",
            ]
            .map(String::from)
            .to_vec(),
            ..RunConfig::quick()
        };
        let planned = crate::run::runner::plan(&backend, &cfg).unwrap();
        let identity = crate::results::fixtures::identity();
        let rows = crate::run::runner::rows_of(&mut backend, &identity, &cfg, &planned);
        let ids: Vec<String> = rows.iter().map(|r| r.case_id()).collect();
        assert_eq!(rows.len(), 7, "{ids:?}");
        let simd = Simd::detect().name();
        #[cfg(target_arch = "aarch64")]
        assert_eq!(simd, "NEON");
        for r in &rows {
            assert!(r.valid && r.status == "ok", "{}: {}", r.case_id(), r.status);
            assert!(r.note.contains(simd), "{}: {}", r.case_id(), r.note);
        }
    }

    /// Every batch-sweep shape whose matrices are under the DRAM rule rotates through copies
    /// of B, whatever its M (as on a GPU): with one B, the 32 MiB bf16 weight of
    /// `32x4096x4096` stayed in the 480 MiB L3 of this project's AMX VM and its row read
    /// 49.5-50.0 GB/s, 21.4-26.6 with copies (2026-12-05); the squares keep one B.
    #[test]
    fn every_batch_sweep_shape_under_the_dram_rule_rotates_its_weight() {
        let compute = HostCompute::detect();
        let llc = 8u64 << 20; // a DRAM rule of 256 MiB (4 x the LLC, at least 256 MiB)
        let cases = host_gemm_cases(&compute, 2, llc, 8 << 30, SizeRequest::Auto);
        let dram = dram_rule_bytes(llc);
        let (mut rotated, mut large_m) = (0, 0);
        for case in &cases {
            let s = cases::gemm::shape_of(case).unwrap();
            let matrices = cases::gemm::matrix_bytes(case.precision, s);
            let copies = cases::gemm::weight_copies(case);
            if s.m == s.n && s.n == s.k || matrices >= dram {
                assert_eq!(copies, 1, "{}", case.id());
                continue;
            }
            // as many copies as reach the rule, and no more
            assert!(case.working_set_bytes >= dram, "{}", case.id());
            let weight = cases::gemm::weight_bytes(case.precision, s);
            assert!(case.working_set_bytes - weight < dram, "{}", case.id());
            rotated += 1;
            large_m += usize::from(s.m > gemm::SMALL_M as u64);
        }
        assert!(
            rotated > 0 && large_m > 0,
            "{rotated} rotated, {large_m} past M = 16"
        );
        let id = |s: &str| cases.iter().find(|c| c.id() == s);
        if let Some(case) = id("gemm/simd/f32/32x4096x4096") {
            // 64 MiB of B, 512 KiB of A and C: 4 copies reach 256 MiB
            assert_eq!(cases::gemm::weight_copies(case), 4);
        }
    }

    #[test]
    fn parses_sysfs_formats() {
        assert_eq!(parse_cache_size("32K"), Some(32 << 10));
        assert_eq!(parse_cache_size("2048K"), Some(2 << 20));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("lots"), None);
        assert_eq!(count_cpu_list("0-3,8,10-11"), 7);
        assert_eq!(count_cpu_list("0"), 1);
        assert_eq!(count_cpu_list(""), 0);
        let mi = "MemTotal:       24576000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(meminfo_bytes(mi, "MemTotal"), Some(24576000 * 1024));
        assert_eq!(meminfo_bytes(mi, "MemAvailable"), Some(20000000 * 1024));
        assert_eq!(meminfo_bytes(mi, "Mem"), None);
    }

    #[test]
    fn cpu_name_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B45\n";
        assert_eq!(host_cpu_name(x86), "AMD EPYC 9B45");
        // AArch64 kernels print no model name: the implementer and part name the core.
        let grace = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n";
        assert_eq!(host_cpu_name(grace), "Arm Neoverse-V2");
        let board =
            "processor\t: 0\nCPU implementer\t: 0x51\nCPU part\t: 0x001\nModel\t: Some Board\n";
        assert_eq!(host_cpu_name(board), "Some Board");
        assert_eq!(host_cpu_name(""), format!("{} CPU", std::env::consts::ARCH));
    }

    /// Zen 5 with 2 workers: L1d 2 × 48 KiB, L2 2 × 1 MiB, L3 32 MiB shared.
    #[test]
    fn cache_cases_stay_inside_each_level() {
        let level = |name: &str, size_bytes: u64, instances: u32| CacheLevel {
            name: name.into(),
            size_bytes,
            instances,
        };
        let caches = [
            level("L1d", 48 << 10, 2),
            level("L2", 1 << 20, 2),
            level("L3", 32 << 20, 1),
        ];
        let ids: Vec<String> = host_cache_cases(&caches, 2).iter().map(Case::id).collect();
        assert_eq!(
            ids,
            [
                "cache/l1/i32/16",
                "cache/l1/i32/32",
                "cache/l2/i32/256",
                "cache/l2/i32/512",
                "cache/l2/i32/1024",
                "cache/l3/i32/8192",
                "cache/l3/i32/16384",
            ]
        );
        // One worker uses one core's L1 and L2.
        let one = host_cache_cases(&caches, 1);
        assert_eq!(one[0].id(), "cache/l1/i32/16");
        assert!(one.iter().all(|c| c.working_set_bytes >= 16 << 10));
        assert!(host_cache_cases(&[], 2).is_empty());
    }

    #[test]
    fn host_info_is_plausible() {
        let info = host_info();
        assert_eq!(info.backend, BackendKind::Host);
        assert!(info.units >= 1);
        assert!(info.llc_bytes > 0);
        assert!(!info.name.is_empty());
        // the ISA recorded is the one the kernels run
        assert_eq!(info.identity.isa, HostCompute::detect().simd.name());
        // where /proc/cpuinfo names the CPU (x86's vendor, Arm's implementer), so does the row
        let text = cpu::cpuinfo();
        if ["vendor_id", "CPU implementer"]
            .iter()
            .any(|k| cpuinfo_field(&text, k).is_some())
        {
            assert!(!info.identity.vendor.is_empty(), "{:?}", info.identity);
            assert!(!info.identity.cpu_family.is_empty(), "{:?}", info.identity);
            assert!(!info.identity.cpu_model.is_empty(), "{:?}", info.identity);
        }
    }

    /// `devices` says whether huge pages are asked for, and why not.
    #[test]
    fn huge_pages_line_names_the_mode() {
        let line = huge_pages_line(Some("madvise"));
        assert!(line.starts_with("transparent, mode madvise ("), "{line}");
        assert!(
            line.ends_with("asked for on arrays of 4 MiB and more"),
            "{line}"
        );
        assert!(huge_pages_line(Some("always")).starts_with("transparent, mode always"));
        let off = huge_pages_line(Some("never"));
        assert!(!off.contains("  "), "{off}");
        assert!(
            off.starts_with("none: transparent huge pages are off (mode never"),
            "{off}"
        );
        assert!(huge_pages_line(None).starts_with("none: no /sys/kernel/mm/"));
    }
}
