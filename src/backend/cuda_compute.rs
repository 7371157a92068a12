//! The CUDA backend's compute cases: FMA peaks (kernels/peak.ptx), tensor-core peaks
//! (kernels/mma.ptx, and kernels/mma_sm89.ptx for fp8 on compute capability 8.9+) and the
//! arithmetic-intensity sweep (kernels/intensity.ptx.in, expanded per precision and k).
//!
//! Sizes: a peak or tensor launch fills every SM to the kernel's occupancy once (one wave) and
//! loops long enough to last about [`TARGET_LAUNCH_SECS`] at the device's theoretical peak; the
//! sweep's arrays follow the DRAM rule (4 × L2 and at least 256 MiB per array). The SM clock of a
//! peak or tensor case comes from the kernel itself: thread 0 of every block reads `%clock64`
//! and `%globaltimer` at its start and end, and the median over blocks of cycles / nanoseconds
//! is the clock it ran at (NVML's reading around the case may catch the idle clock).
//!
//! Like the rest of the CUDA backend, every driver call runs under [`guard`]; nothing here
//! changes a device setting.

use super::cuda::{guard, CudaBackend, BLOCK};
use super::{dram_rule_bytes, plan_arrays, Backend, PlannedCase, PreparedCase, SizeRequest};
use crate::bench::{arith, intensity, peak, tensor, Case, Family, Precision, Verdict};
use crate::specs::theory;
use crate::{Error, Result};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, LaunchArgs, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::sync::Arc;

use crate::kernels::{MMA as MMA_PTX, MMA_SM89 as MMA_SM89_PTX, PEAK as PEAK_PTX};

/// How long one peak or tensor launch should last at the theoretical peak: long enough that
/// launch gaps and the clock reads around the loop are far below 1 % (the runner batches
/// launches into ≥ 10 ms samples on top of this).
pub const TARGET_LAUNCH_SECS: f64 = 2e-3;

/// The compute modules of one device.
pub struct ComputeModules {
    compute_capability: (u32, u32),
    peak: Arc<CudaModule>,
    mma: Arc<CudaModule>,
    /// kernels/mma_sm89.ptx where fp8 `mma.sync` is native ([`native_fp8_mma`]); `Err` says why
    /// it could not be loaded there (PTX ISA 8.4 needs a CUDA 12.4 driver), and then only the
    /// fp8 case fails, with that reason, not the whole device.
    mma_sm89: Option<std::result::Result<Arc<CudaModule>, String>>,
}

/// Whether `mma.sync` with e4m3 inputs runs on the tensor cores: sm_89 (QMMA) and the
/// GeForce/workstation Blackwell parts (12.x). sm_90 accepts the PTX but ptxas emulates it
/// (e4m3 unpacked to f16 with F2FP, most of the product hoisted out of the loop, accumulation
/// with FADD; pinned by tests/offline.rs), so a figure there would not be a tensor-core fp8 peak:
/// Hopper's fp8 needs `wgmma`. sm_100 is left out until its SASS is checked.
pub fn native_fp8_mma(compute_capability: (u32, u32)) -> bool {
    compute_capability == (8, 9) || compute_capability.0 >= 12
}

impl ComputeModules {
    /// Loads the compute modules; `None` on a device older than 8.0, which cannot run them.
    pub fn load(ctx: &Arc<CudaContext>) -> Result<Option<ComputeModules>> {
        let (major, minor) = guard("reading the compute capability", || {
            ctx.compute_capability()
        })?;
        let cc = (major.max(0) as u32, minor.max(0) as u32);
        if cc < (8, 0) {
            return Ok(None);
        }
        let load = |name: &str, src: &str| {
            guard(&format!("loading kernels/{name}"), || {
                ctx.load_module(Ptx::from_src(src))
            })
        };
        Ok(Some(ComputeModules {
            compute_capability: cc,
            peak: load("peak.ptx", PEAK_PTX)?,
            mma: load("mma.ptx", MMA_PTX)?,
            mma_sm89: native_fp8_mma(cc)
                .then(|| load("mma_sm89.ptx", MMA_SM89_PTX).map_err(|e| e.to_string())),
        }))
    }

    /// The module of a tensor precision: `None` where the device has no such MMA, `Err` where
    /// its module did not load.
    fn tensor_module(
        &self,
        precision: Precision,
    ) -> Option<std::result::Result<&Arc<CudaModule>, String>> {
        if tensor::needs_sm89(precision) {
            self.mma_sm89
                .as_ref()
                .map(|m| m.as_ref().map_err(Clone::clone))
        } else {
            Some(Ok(&self.mma))
        }
    }
}

/// The theoretical peak of `precision` on this device at `clock_mhz`.
fn theory_at(backend: &CudaBackend, cc: (u32, u32), precision: Precision, mhz: f64) -> Option<f64> {
    let info = backend.info();
    theory::peak_gflops_for(&info.name, cc, info.units, mhz, precision)
}

/// Operations one launch should do: [`TARGET_LAUNCH_SECS`] at the theoretical peak at the
/// device's maximum clock (1 TFLOP where the rate is unknown).
fn target_flops(backend: &CudaBackend, cc: (u32, u32), precision: Precision) -> f64 {
    let mhz = backend.info().clock_mhz.unwrap_or(1500.0);
    theory_at(backend, cc, precision, mhz).map_or(1e12, |g| g * 1e9) * TARGET_LAUNCH_SECS
}

/// The compute cases of a device, after its STREAM cases.
pub fn cases(
    backend: &CudaBackend,
    modules: &ComputeModules,
    size: SizeRequest,
    usable_bytes: u64,
) -> Result<Vec<PlannedCase>> {
    let cc = modules.compute_capability;
    let mut planned = Vec::new();
    let plain = |case: Case| PlannedCase {
        case,
        note: String::new(),
    };
    for p in peak::PRECISIONS {
        let func = backend.function(&modules.peak, &peak_entry(p))?;
        let threads = backend.grid_for(&func)? as u64 * BLOCK as u64;
        let iterations = peak::iterations_for(
            p,
            threads,
            peak::GPU_FMAS_PER_ITERATION,
            target_flops(backend, cc, p),
        );
        planned.push(plain(peak::case(
            p,
            threads,
            iterations,
            peak::GPU_FMAS_PER_ITERATION,
        )));
    }
    for p in tensor::PRECISIONS {
        let module = match modules.tensor_module(p) {
            None => continue, // no native fp8 mma.sync on this device
            Some(Ok(module)) => module,
            Some(Err(why)) => {
                // planned anyway, so its row says why it could not run
                planned.push(PlannedCase {
                    case: tensor::case(p, 1, 1),
                    note: why,
                });
                continue;
            }
        };
        let func = backend.function(module, &tensor::entry_name(p))?;
        let warps = backend.grid_for(&func)? as u64 * (BLOCK as u64 / tensor::WARP as u64);
        let iterations = tensor::iterations_for(p, warps, target_flops(backend, cc, p));
        planned.push(plain(tensor::case(p, warps, iterations)));
    }
    planned.extend(plan_arrays(
        size,
        dram_rule_bytes(backend.info().llc_bytes),
        2,
        usable_bytes,
        &backend.info().id,
        "the intensity sweep",
        |bytes| {
            intensity::cases(&intensity::PRECISIONS, |p| {
                (bytes / arith::word_bytes(p)).max(1)
            })
        },
    )?);
    Ok(planned)
}

/// The PTX entry of a peak kernel: `fma_f32`.
pub fn peak_entry(precision: Precision) -> String {
    format!("{}_{}", peak::KERNEL, precision.as_str())
}

/// Prepares a peak, tensor or sweep case.
pub fn prepare<'b>(
    backend: &'b CudaBackend,
    modules: &ComputeModules,
    case: &Case,
) -> Result<Box<dyn PreparedCase + 'b>> {
    match case.family {
        Family::Peak => Ok(Box::new(PeakCase::new(backend, modules, case)?)),
        Family::Tensor => Ok(Box::new(TensorCase::new(backend, modules, case)?)),
        Family::Intensity => Ok(Box::new(SweepCase::new(backend, case)?)),
        Family::Stream => Err(Error::Internal(format!(
            "{} is not a compute case",
            case.id()
        ))),
    }
}

/// Device words of 32 or 64 bits (f64 registers are 64-bit).
enum Words {
    W32(CudaSlice<u32>),
    W64(CudaSlice<u64>),
}

impl Words {
    fn upload(backend: &CudaBackend, words: &[u64], wide: bool, what: &str) -> Result<Words> {
        let stream = &backend.stream;
        guard(&format!("copying {what} to the device"), || {
            Ok(if wide {
                Words::W64(stream.clone_htod(words)?)
            } else {
                let narrow: Vec<u32> = words.iter().map(|&w| w as u32).collect();
                Words::W32(stream.clone_htod(&narrow)?)
            })
        })
    }

    fn read(&self, backend: &CudaBackend, what: &str) -> Result<Vec<u64>> {
        let stream = &backend.stream;
        guard(&format!("reading back {what}"), || {
            Ok(match self {
                Words::W32(s) => stream.clone_dtoh(s)?.into_iter().map(u64::from).collect(),
                Words::W64(s) => stream.clone_dtoh(s)?,
            })
        })
    }

    fn push<'a>(&'a self, launch: &mut LaunchArgs<'a>) {
        match self {
            Words::W32(s) => {
                launch.arg(s);
            }
            Words::W64(s) => {
                launch.arg(s);
            }
        }
    }
}

/// A scalar kernel parameter as raw register bits: `.b32` or `.b64`.
#[derive(Clone, Copy)]
enum Scalar {
    B32(u32),
    B64(u64),
}

impl Scalar {
    fn of(bits: u64, wide: bool) -> Scalar {
        if wide {
            Scalar::B64(bits)
        } else {
            Scalar::B32(bits as u32)
        }
    }
}

fn push_scalar<'a>(launch: &mut LaunchArgs<'a>, s: &'a Scalar) {
    match s {
        Scalar::B32(v) => {
            launch.arg(v);
        }
        Scalar::B64(v) => {
            launch.arg(v);
        }
    }
}

/// Times `reps` launches of `launch_once` between two events on the backend's stream.
fn time_launches(
    backend: &CudaBackend,
    during: &str,
    reps: u32,
    mut launch_once: impl FnMut() -> Result<(), cudarc::driver::DriverError>,
) -> Result<f64> {
    let (ctx, stream) = (&backend.ctx, &backend.stream);
    guard(during, || {
        let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        start.record(stream)?;
        for _ in 0..reps {
            launch_once()?;
        }
        end.record(stream)?;
        Ok(start.elapsed_ms(&end)? as f64 / 1e3)
    })
}

/// The SM clock from the clock records of the last launch: the median over blocks of cycles per
/// nanosecond. `None` when no block recorded a usable interval.
pub fn clock_from_records(records: &[u64]) -> Option<f64> {
    let mut mhz: Vec<f64> = records
        .chunks_exact(4)
        .filter_map(|r| {
            let (cycles, ns) = (r[1].wrapping_sub(r[0]), r[3].wrapping_sub(r[2]));
            (ns > 0 && cycles > 0 && r[1] > r[0] && r[3] > r[2])
                .then(|| cycles as f64 / ns as f64 * 1e3)
        })
        .collect();
    if mhz.is_empty() {
        return None;
    }
    mhz.sort_by(f64::total_cmp);
    Some(mhz[mhz.len() / 2])
}

fn one_wave(backend: &CudaBackend, func: &CudaFunction) -> Result<LaunchConfig> {
    Ok(LaunchConfig {
        grid_dim: (backend.grid_for(func)?, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    })
}

fn clocks_buffer(backend: &CudaBackend, cfg: &LaunchConfig, what: &str) -> Result<CudaSlice<u64>> {
    let blocks = cfg.grid_dim.0 as usize;
    guard(&format!("allocating the clock records of {what}"), || {
        backend.stream.alloc_zeros::<u64>(4 * blocks)
    })
}

/// A peak case on the device.
struct PeakCase<'b> {
    backend: &'b CudaBackend,
    precision: Precision,
    cc: (u32, u32),
    name: String,
    func: CudaFunction,
    cfg: LaunchConfig,
    iterations: u32,
    threads: u64,
    out: Words,
    clocks: CudaSlice<u64>,
    scalars: [Scalar; 3],
}

impl<'b> PeakCase<'b> {
    fn new(backend: &'b CudaBackend, modules: &ComputeModules, case: &Case) -> Result<Self> {
        let p = case.precision;
        let name = peak_entry(p);
        let func = backend.function(&modules.peak, &name)?;
        let cfg = one_wave(backend, &func)?;
        let threads = cfg.grid_dim.0 as u64 * BLOCK as u64;
        if threads != case.elements {
            return Err(Error::Usage(format!(
                "{} was planned for {} threads, this device runs {threads}",
                case.id(),
                case.elements
            )));
        }
        let iterations = peak::iterations_of(case, peak::GPU_FMAS_PER_ITERATION)
            .map_err(Error::Usage)
            .and_then(|i| {
                u32::try_from(i).map_err(|_| Error::Usage(format!("{i} loop trips is too many")))
            })?;
        let wide = p == Precision::F64;
        let poison = vec![0x7FC0_DEAD_7FC0_DEAD_u64; threads as usize];
        let out = Words::upload(backend, &poison, wide, &format!("the output of {name}"))?;
        let clocks = clocks_buffer(backend, &cfg, &name)?;
        let map = peak::map(p);
        Ok(PeakCase {
            backend,
            precision: p,
            cc: modules.compute_capability,
            name,
            func,
            cfg,
            iterations,
            threads,
            out,
            clocks,
            scalars: [
                Scalar::of(peak::x0(p), wide),
                Scalar::of(map.a, wide),
                Scalar::of(map.b, wide),
            ],
        })
    }
}

impl PreparedCase for PeakCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let stream = &self.backend.stream;
        let mut launch = stream.launch_builder(&self.func);
        self.out.push(&mut launch);
        launch.arg(&self.clocks);
        launch.arg(&self.threads);
        launch.arg(&self.iterations);
        for s in &self.scalars {
            push_scalar(&mut launch, s);
        }
        let cfg = self.cfg;
        time_launches(
            self.backend,
            &format!("running {}", self.name),
            reps,
            || {
                // SAFETY: the arguments match kernels/peak.ptx's parameters in number, order and
                // type (out, clocks, n as u64, iterations as u32, x0/a/b as .b32 or .b64); out has
                // n = threads words and clocks 4 per block of this grid.
                unsafe { launch.launch(cfg) }.map(|_| ())
            },
        )
    }

    fn verify(&mut self) -> Result<Verdict> {
        let got = self.out.read(self.backend, &self.name)?;
        let steps = self.iterations as u64 * peak::GPU_UNROLL;
        Ok(peak::check_threads(
            self.precision,
            peak::GPU_CHAINS,
            steps,
            got.len(),
            |i| got[i],
        ))
    }

    fn launch_note(&self) -> String {
        format!(
            "grid {}x{}, {} trips of {} FMAs",
            self.cfg.grid_dim.0,
            self.cfg.block_dim.0,
            self.iterations,
            peak::GPU_FMAS_PER_ITERATION
        )
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        let records = guard("reading the clock records", || {
            self.backend.stream.clone_dtoh(&self.clocks)
        })
        .ok()?;
        clock_from_records(&records)
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        theory_at(self.backend, self.cc, self.precision, clock_mhz)
    }
}

/// A tensor-core case on the device.
struct TensorCase<'b> {
    backend: &'b CudaBackend,
    precision: Precision,
    cc: (u32, u32),
    name: String,
    func: CudaFunction,
    cfg: LaunchConfig,
    iterations: u32,
    warps: u64,
    /// A, B, −B, C.
    inputs: [Words; 4],
    d: Words,
    clocks: CudaSlice<u64>,
}

impl<'b> TensorCase<'b> {
    fn new(backend: &'b CudaBackend, modules: &ComputeModules, case: &Case) -> Result<Self> {
        let p = case.precision;
        let module = modules
            .tensor_module(p)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{} needs native fp8 mma.sync (compute capability 8.9 or 12.x)",
                    case.id()
                ))
            })?
            .map_err(Error::Internal)?;
        let name = tensor::entry_name(p);
        let func = backend.function(module, &name)?;
        let cfg = one_wave(backend, &func)?;
        let warps = cfg.grid_dim.0 as u64 * (BLOCK as u64 / tensor::WARP as u64);
        if warps != case.elements {
            return Err(Error::Usage(format!(
                "{} was planned for {} warps, this device runs {warps}",
                case.id(),
                case.elements
            )));
        }
        let iterations = tensor::iterations_of(case)
            .map_err(Error::Usage)
            .and_then(|i| {
                u32::try_from(i).map_err(|_| Error::Usage(format!("{i} loop trips is too many")))
            })?;
        let wide = tensor::register_bits(p) == 64;
        let up = |words: &[u64], what: &str| Words::upload(backend, words, wide, what);
        let inputs = [
            up(&tensor::a_fragments(p), "A")?,
            up(&tensor::b_fragments(p, false), "B")?,
            up(&tensor::b_fragments(p, true), "-B")?,
            up(&tensor::c_fragments(p), "C")?,
        ];
        let d_len = warps as usize * tensor::d_fragments(p).len();
        let d = up(&vec![0x7FC0_DEAD_7FC0_DEAD_u64; d_len], "the D poison")?;
        let clocks = clocks_buffer(backend, &cfg, &name)?;
        Ok(TensorCase {
            backend,
            precision: p,
            cc: modules.compute_capability,
            name,
            func,
            cfg,
            iterations,
            warps,
            inputs,
            d,
            clocks,
        })
    }
}

impl PreparedCase for TensorCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let stream = &self.backend.stream;
        let mut launch = stream.launch_builder(&self.func);
        for input in &self.inputs {
            input.push(&mut launch);
        }
        self.d.push(&mut launch);
        launch.arg(&self.clocks);
        launch.arg(&self.warps);
        launch.arg(&self.iterations);
        let cfg = self.cfg;
        time_launches(
            self.backend,
            &format!("running {}", self.name),
            reps,
            || {
                // SAFETY: the arguments match kernels/mma*.ptx's parameters (a, b, bneg, c, d,
                // clocks, n as u64, iterations as u32); the fragments hold 32 lanes' registers, c
                // CHAINS of them, d CHAINS per warp of this grid, clocks 4 per block.
                unsafe { launch.launch(cfg) }.map(|_| ())
            },
        )
    }

    fn verify(&mut self) -> Result<Verdict> {
        let got = self.d.read(self.backend, &self.name)?;
        Ok(tensor::check(self.precision, self.warps as usize, |i| {
            got[i]
        }))
    }

    fn launch_note(&self) -> String {
        format!(
            "grid {}x{}, {} chains x {} trips",
            self.cfg.grid_dim.0,
            self.cfg.block_dim.0,
            tensor::CHAINS,
            self.iterations
        )
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        let records = guard("reading the clock records", || {
            self.backend.stream.clone_dtoh(&self.clocks)
        })
        .ok()?;
        clock_from_records(&records)
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        theory_at(self.backend, self.cc, self.precision, clock_mhz)
    }
}

/// A sweep case on the device: its kernel expanded from the template and JIT-compiled here.
struct SweepCase<'b> {
    backend: &'b CudaBackend,
    precision: Precision,
    k: u32,
    cc: Option<(u32, u32)>,
    name: String,
    /// Kept alive while its function is used.
    _module: Arc<CudaModule>,
    func: CudaFunction,
    cfg: LaunchConfig,
    n: u64,
    input: Words,
    output: Words,
    scalars: [Scalar; 2],
}

impl<'b> SweepCase<'b> {
    fn new(backend: &'b CudaBackend, case: &Case) -> Result<Self> {
        let p = case.precision;
        let k = case
            .param
            .ok_or_else(|| Error::Usage(format!("{} has no k", case.id())))?;
        let name = intensity::entry_name(p, k);
        let module = guard(&format!("loading the sweep kernel {name}"), || {
            backend
                .ctx
                .load_module(Ptx::from_src(intensity::expand(p, k)))
        })?;
        let func = backend.function(&module, &name)?;
        let cfg = one_wave(backend, &func)?;
        let n = case.elements;
        let free = backend.free_bytes()?;
        if case.working_set_bytes > free / 100 * 95 {
            return Err(Error::OutOfMemory {
                case: case.id(),
                device: backend.info().id.clone(),
                needed_bytes: case.working_set_bytes,
                free_bytes: free,
            });
        }
        let wide = p == Precision::F64;
        let words: Vec<u64> = (0..n).map(|i| intensity::input(p, i)).collect();
        let input = Words::upload(backend, &words, wide, &format!("the input of {name}"))?;
        let poison = vec![0x7FC0_DEAD_7FC0_DEAD_u64; n as usize];
        let output = Words::upload(backend, &poison, wide, &format!("the output of {name}"))?;
        let map = intensity::map(p);
        let cc = theory::parse_compute_capability(&backend.info().compute_capability);
        Ok(SweepCase {
            backend,
            precision: p,
            k,
            cc,
            name,
            _module: module,
            func,
            cfg,
            n,
            input,
            output,
            scalars: [Scalar::of(map.a, wide), Scalar::of(map.b, wide)],
        })
    }
}

impl PreparedCase for SweepCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let stream = &self.backend.stream;
        let mut launch = stream.launch_builder(&self.func);
        self.input.push(&mut launch);
        self.output.push(&mut launch);
        launch.arg(&self.n);
        for s in &self.scalars {
            push_scalar(&mut launch, s);
        }
        let cfg = self.cfg;
        time_launches(
            self.backend,
            &format!("running {}", self.name),
            reps,
            || {
                // SAFETY: the arguments match the expanded template's parameters (in, out, n as
                // u64, a and b as .b32 or .b64); both arrays hold n words; the kernel only writes
                // out.
                unsafe { launch.launch(cfg) }.map(|_| ())
            },
        )
    }

    fn verify(&mut self) -> Result<Verdict> {
        let got = self.output.read(self.backend, &self.name)?;
        Ok(intensity::check(self.precision, self.k, got.len(), |i| {
            got[i]
        }))
    }

    fn launch_note(&self) -> String {
        format!("grid {}x{}", self.cfg.grid_dim.0, self.cfg.block_dim.0)
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        if self.k == 0 {
            return None; // a copy: no arithmetic
        }
        theory_at(self.backend, self.cc?, self.precision, clock_mhz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_only_where_native() {
        assert!(native_fp8_mma((8, 9)));
        assert!(native_fp8_mma((12, 0)));
        assert!(!native_fp8_mma((9, 0)));
        assert!(!native_fp8_mma((8, 6)));
        assert!(!native_fp8_mma((8, 0)));
    }

    #[test]
    fn clock_records_give_the_median_block() {
        // blocks at 1000, 1500 and 2000 MHz over 1 ms; one empty record
        let records = [
            0, 1_000_000, 5, 1_000_005, //
            10, 1_500_010, 0, 1_000_000, //
            0, 2_000_000, 0, 1_000_000, //
            0, 0, 0, 0,
        ];
        assert_eq!(clock_from_records(&records), Some(1500.0));
        assert_eq!(clock_from_records(&[0; 8]), None);
    }

    #[test]
    fn every_compute_entry_is_in_its_ptx() {
        for p in peak::PRECISIONS {
            let entry = format!(".visible .entry {}(", peak_entry(p));
            assert!(PEAK_PTX.contains(&entry), "missing {entry}");
        }
        for p in tensor::PRECISIONS {
            let entry = format!(".visible .entry {}(", tensor::entry_name(p));
            let file = if tensor::needs_sm89(p) {
                MMA_SM89_PTX
            } else {
                MMA_PTX
            };
            assert!(file.contains(&entry), "missing {entry}");
        }
        assert!(MMA_SM89_PTX.contains(".target sm_89"));
        assert!(MMA_PTX.contains(".target sm_80"));
        assert!(PEAK_PTX.contains(".target sm_80"));
    }

    /// The kernels' loop constants are the ones the work tables count.
    #[test]
    fn ptx_loops_match_the_work_tables() {
        for p in peak::PRECISIONS {
            let entry = format!(".visible .entry {}(", peak_entry(p));
            let body = PEAK_PTX.split(&entry).nth(1).unwrap();
            let body = body.split(".visible .entry").next().unwrap();
            let loop_body = body
                .split(&format!("{}_loop:", peak_entry(p)))
                .nth(1)
                .unwrap()
                .split("sub.u32")
                .next()
                .unwrap();
            let fmas = loop_body
                .lines()
                .filter(|l| l.trim_start().starts_with(intensity::fma_instruction(p)))
                .count() as u64;
            assert_eq!(fmas, peak::GPU_FMAS_PER_ITERATION, "{p}");
        }
        for p in tensor::PRECISIONS {
            let file = if tensor::needs_sm89(p) {
                MMA_SM89_PTX
            } else {
                MMA_PTX
            };
            let name = tensor::entry_name(p);
            let body = file
                .split(&format!(".visible .entry {name}("))
                .nth(1)
                .unwrap();
            let loop_body = body
                .split(&format!("{name}_loop:"))
                .nth(1)
                .unwrap()
                .split("sub.u32")
                .next()
                .unwrap();
            let mmas = loop_body.matches("mma.sync").count() as u64;
            assert_eq!(mmas, tensor::CHAINS * 2 * tensor::UNROLL, "{p}");
            let after = body
                .split(&format!("{name}_loop_done:"))
                .nth(1)
                .unwrap()
                .split("ret;")
                .next()
                .unwrap();
            assert_eq!(
                after.matches("mma.sync").count() as u64,
                tensor::CHAINS,
                "{p}"
            );
        }
    }
}
