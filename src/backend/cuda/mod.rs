//! The CUDA backend: hand-written PTX (kernels/) loaded through the driver API with cudarc, timed
//! with CUDA events on one stream.
//!
//! cudarc is built with dynamic loading, so roofprobe builds with no CUDA toolkit and finds
//! `libcuda` at run time. A missing library panics inside cudarc, so [`device_count`] probes
//! for it first, and every entry into the driver from here runs under [`guard`] (or, once a
//! device is open, [`CudaBackend`]'s own `call`), which turns a driver error into an [`Error`]
//! carrying the driver's own message and a cudarc panic (a stub driver lacking a symbol, say)
//! into an error instead of a crash.
//!
//! What a launch passes is not written here: [`describe::launch`] describes each case's arrays,
//! argument list and check as data, and `GpuCase` allocates those arrays and pushes exactly
//! those arguments, in that order and at those widths. [`plan`] chooses the cases and their
//! sizes. Both are pure, and tested against the PTX without a GPU.
//!
//! Two failures end a device's run, not the process. A kernel fault (illegal address,
//! misaligned access, trap, …) leaves the CUDA context in a sticky error state in which every
//! later call fails; and a kernel that does not finish within [`KERNEL_DEADLINE`] is presumed
//! runaway. After either, every later call on the device fails at once with
//! [`Error::DeviceLost`] naming the first error, instead of each case reporting the same driver
//! error as its own, or the run hanging; and after a runaway kernel the device's driver objects
//! are leaked, not freed, because freeing them could wait for that kernel forever (the process
//! exit ends it).
//!
//! Clocks, power, temperature and throttle reasons come from NVML (also loaded at run time) when
//! it is there; without it those columns stay empty. Nothing here changes any device setting.

use self::args::{Entry, ModuleId, BLOCK, MAX_GRID};
use self::plan::DeviceModel;
use super::{Backend, PlannedCase, PreparedCase, SizeRequest};
use crate::cases::{Case, Family};
use crate::device::{BackendKind, CacheLevel, Conditions, DeviceInfo, Identity};
use crate::{Error, Result};
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream, DriverError, LaunchConfig,
};
use cudarc::nvrtc::Ptx;
use std::mem::ManuallyDrop;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

// gemm (branch gemm): the GEMM rows' driver code (dynamic shared memory, cuBLAS) lives in its
// own file, as a child of this module.
pub mod args;
mod capacity;
mod case;
pub mod cublas;
pub mod dcgm;
pub mod describe;
mod driver;
mod gemm;
pub mod jit;
mod launch;
mod link;
pub mod loading;
mod nvml;
pub mod plan;
pub mod watch;
use self::case::GpuCase;
pub use self::driver::{
    cuda_version_text, device_count, driver_cuda_number, driver_library, driver_present, guard,
    init_timeout, is_sticky, loaded_libcuda, Health, INIT_TIMEOUT, INIT_TIMEOUT_VAR,
};
use self::driver::{driver_cuda_version, driver_error, quietly};
pub use self::nvml::format_uuid;
use self::nvml::{nvml, nvml_conditions, nvml_identity};
use crate::cases::launch as launch_rows;

/// The most one batch of launches may take before its kernel is presumed runaway: the deadline
/// of a case's first batch, when nothing is known of its launches yet, and the cap on the later
/// ones ([`batch_deadline`]). No launch of a correct run comes near it (samples last about
/// 10 ms, one peak launch about 2 ms, the largest GEMM a fraction of a second); a kernel that
/// reads its loop count from the wrong bits can run for hours. `run --kernel-timeout` sets it.
pub const KERNEL_DEADLINE: Duration = Duration::from_secs(10);

/// A batch may take this many times what its launches took so far before it is presumed
/// runaway …
pub const DEADLINE_FACTOR: f64 = 20.0;

/// … but never less than this, so another process's kernels on the GPU or a driver hiccup are
/// not taken for a runaway kernel.
pub const DEADLINE_FLOOR: Duration = Duration::from_secs(2);

/// How long a batch of `reps` launches may run: [`DEADLINE_FACTOR`] × what they should take at
/// `per_launch_secs` (the case's last batch), between [`DEADLINE_FLOOR`] and `cap`; `cap` itself
/// before the case has run at all.
pub fn batch_deadline(per_launch_secs: Option<f64>, reps: u32, cap: Duration) -> Duration {
    match per_launch_secs {
        Some(t) if t.is_finite() && t > 0.0 => {
            let expected = DEADLINE_FACTOR * t * f64::from(reps.max(1));
            Duration::from_secs_f64(expected.min(cap.as_secs_f64())).max(DEADLINE_FLOOR.min(cap))
        }
        _ => cap,
    }
}

/// The modules of a device, loaded (and JIT-compiled) when it is opened, so no compilation
/// happens while a case is timed. The sweep's expansions are loaded per case.
struct Modules {
    stream: Arc<CudaModule>,
    /// kernels/peak.ptx, kernels/mma.ptx and kernels/mma_sm89.ptx, or why one is not there;
    /// only that module's cases fail, with the reason.
    peak: Loaded,
    mma: Loaded,
    mma_sm89: Loaded,
    /// kernels/mma_sm90.ptx (Hopper's f64 shape: compute capability 9.0 and later)
    mma_sm90: Loaded,
    /// kernels/wgmma.ptx.in (sm_90a: compute capability 9.0 only)
    wgmma: Loaded,
    cache: Loaded,
    latency: Loaded,
    /// kernels/prep.ptx, loaded by the first case filled on the device
    /// ([`describe::device_prep`]) and kept for the others.
    prep: std::sync::OnceLock<Arc<CudaModule>>,
}

/// A module that is loaded, or why not.
enum Loaded {
    Yes(Arc<CudaModule>),
    /// The device cannot run it (older than 8.0; no native fp8), or the driver's JIT cannot
    /// compile its PTX ISA version ([`jit::not_for_driver`]).
    Unsupported(String),
    /// The driver refused it (a JIT error): the driver's message.
    Failed(String),
}

impl Loaded {
    fn load(ctx: &Arc<CudaContext>, id: ModuleId, unsupported: Option<&'static str>) -> Loaded {
        let unsupported = unsupported
            .map(str::to_string)
            .or_else(|| jit::not_for_driver(&id.ptx(), driver_cuda_number()));
        match unsupported {
            Some(why) => Loaded::Unsupported(why),
            None => match load_module(ctx, id) {
                Ok(m) => Loaded::Yes(m),
                Err(Error::Driver { message, .. }) => Loaded::Failed(message),
                Err(other) => Loaded::Failed(other.to_string()),
            },
        }
    }

    fn get(&self, id: ModuleId) -> Result<Arc<CudaModule>> {
        match self {
            Loaded::Yes(m) => Ok(m.clone()),
            Loaded::Unsupported(why) => Err(Error::Usage(format!("kernels/{}: {why}", id.file()))),
            Loaded::Failed(message) => Err(Error::Driver {
                during: format!("loading kernels/{}", id.file()),
                message: message.clone(),
            }),
        }
    }
}

/// One CUDA device, with its context, stream and loaded kernels.
pub struct CudaBackend {
    info: DeviceInfo,
    compute_capability: (u32, u32),
    // Leaked rather than dropped after a runaway kernel (see the module documentation); in
    // drop order: modules, stream, context.
    modules: ManuallyDrop<Modules>,
    stream: ManuallyDrop<Arc<CudaStream>>,
    ctx: ManuallyDrop<Arc<CudaContext>>,
    health: Arc<Health>,
    deadline: Duration,
    nvml_device: Option<Arc<nvml_wrapper::Device<'static>>>,
    /// The other GPUs this one can reach peer to peer (ordinals).
    peers: Vec<u32>,
    /// Bytes of a STREAM or size-sweep case's arrays from which they are filled and checked on
    /// the device ([`describe::DEVICE_PREP_FROM_BYTES`], or [`DEVICE_PREP_FROM_VAR`]).
    device_prep_from_bytes: u64,
}

/// The environment variable that moves [`describe::DEVICE_PREP_FROM_BYTES`] (a byte count, `0`:
/// every STREAM and size-sweep case): for tests, whose simulated devices' arrays are far below
/// it.
pub const DEVICE_PREP_FROM_VAR: &str = "ROOFPROBE_DEVICE_PREP_FROM";

/// [`describe::DEVICE_PREP_FROM_BYTES`], or what [`DEVICE_PREP_FROM_VAR`] says instead.
fn device_prep_from_bytes() -> u64 {
    std::env::var(DEVICE_PREP_FROM_VAR)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(describe::DEVICE_PREP_FROM_BYTES)
}

/// The ordinals of the other `count` devices that device `ctx` can reach peer to peer
/// (`cuDeviceCanAccessPeer`); a query that fails counts as no.
fn peers_of(ctx: &CudaContext, ordinal: usize, count: usize) -> Vec<u32> {
    use cudarc::driver::sys;
    let reachable = |j: usize| {
        let (mut device, mut can) = (0, 0);
        // SAFETY: plain queries into locals.
        let asked = unsafe {
            sys::cuDeviceGet(&mut device, j as i32).result().is_ok()
                && sys::cuDeviceCanAccessPeer(&mut can, ctx.cu_device(), device)
                    .result()
                    .is_ok()
        };
        asked && can == 1
    };
    (0..count)
        .filter(|&j| j != ordinal && reachable(j))
        .map(|j| j as u32)
        .collect()
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        if self.health.runaway() {
            return;
        }
        // Nothing may still run when a module is unloaded (a case that failed mid-batch can
        // leave launches queued); after a sticky error this returns at once.
        let _ = quietly(|| self.stream.synchronize());
        // SAFETY: each field is dropped once, here, and not used after.
        unsafe {
            ManuallyDrop::drop(&mut self.modules);
            ManuallyDrop::drop(&mut self.stream);
            ManuallyDrop::drop(&mut self.ctx);
        }
    }
}

fn load_module(ctx: &Arc<CudaContext>, id: ModuleId) -> Result<Arc<CudaModule>> {
    let ptx = id.ptx();
    let during = format!("loading kernels/{}", id.file());
    guard(&during, || ctx.load_module(Ptx::from_src(ptx.as_ref())))
        .map_err(|e| with_jit_error_log(ctx, &ptx, e))
}

/// A module load's error with the JIT's log of `ptx` added: cuModuleLoadData says only that
/// the JIT failed, its log says where and why.
fn with_jit_error_log(ctx: &Arc<CudaContext>, ptx: &str, e: Error) -> Error {
    match e {
        Error::Driver { during, message } => Error::Driver {
            message: with_jit_log(message, jit_error_log(ctx, ptx)),
            during,
        },
        other => other,
    }
}

/// The JIT compiler's error log for `ptx`, by loading it again with a log buffer; `None` if
/// there is no log (or it loads this time, and is unloaded again).
fn jit_error_log(ctx: &Arc<CudaContext>, ptx: &str) -> Option<String> {
    use cudarc::driver::sys;
    let source = std::ffi::CString::new(ptx).ok()?;
    let mut log = vec![0u8; 8192];
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    // The driver reads a size option's value from the pointer's bits.
    let mut values = [
        log.as_mut_ptr() as *mut std::ffi::c_void,
        log.len() as *mut std::ffi::c_void,
    ];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    quietly(|| {
        ctx.bind_to_thread().ok()?;
        // SAFETY: `source` is NUL-terminated PTX; the log buffer outlives the call and its size
        // is the one given; a module that does load is unloaded below.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                source.as_ptr() as *const std::ffi::c_void,
                options.len() as std::ffi::c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if r == sys::CUresult::CUDA_SUCCESS && !module.is_null() {
            // SAFETY: the module was just loaded and nothing else holds it.
            unsafe { sys::cuModuleUnload(module) };
        }
        Some(())
    })
    .ok()??;
    one_line_log(&log)
}

/// A JIT log buffer's text, up to its first NUL, trimmed.
fn log_text(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).trim().to_string()
}

/// A JIT error log buffer's text on one line (`a | b`), `None` where it is empty.
fn one_line_log(buffer: &[u8]) -> Option<String> {
    let text = log_text(buffer).replace('\n', " | ");
    (!text.is_empty()).then_some(text)
}

/// A driver error's message with the JIT's error log after it, where there is one.
fn with_jit_log(message: String, log: Option<String>) -> String {
    match log {
        Some(log) => format!("{message}; JIT log: {log}"),
        None => message,
    }
}

impl CudaBackend {
    /// Opens device `ordinal`: context, stream, device description, modules.
    pub fn open(ordinal: usize) -> Result<CudaBackend> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::NoSuchDevice {
                asked: format!("cuda:{ordinal}"),
                available: format!("{count} CUDA device(s) visible"),
            });
        }
        let ctx = guard("creating a context", || CudaContext::new(ordinal))?;
        // One stream, no cross-stream bookkeeping: cudarc's event tracking would add event
        // waits and records to every launch and copy. It must be off before the stream and
        // any array exist (an array created while it is on keeps tracking).
        // SAFETY: all work goes to the one stream created below, so no cross-stream
        // synchronisation is needed; arrays are freed on that stream, after the work that uses
        // them.
        unsafe { ctx.disable_event_tracking() };
        let stream = guard("creating a stream", || ctx.new_stream())?;
        let (info, cc) = describe(&ctx, ordinal)?;
        let uuid = info.identity.uuid.clone();
        let nvml_device = (!uuid.is_empty())
            .then(|| quietly(|| nvml()?.device_by_uuid(uuid.as_str()).ok()).ok()?)
            .flatten()
            .map(Arc::new);
        let mut info = info;
        if let Some(d) = &nvml_device {
            nvml_identity(d, &mut info.identity);
        }
        let peers = peers_of(&ctx, ordinal, count);
        if !peers.is_empty() {
            let names: Vec<String> = peers.iter().map(|p| format!("cuda:{p}")).collect();
            info.extra
                .push(("peer to peer".to_string(), names.join(", ")));
        }
        // The device's maximum SM clock, which sizes the compute launches and bounds the
        // clocks the kernels measure: the higher of the driver's CLOCK_RATE attribute and NVML's
        // maximum. GeForce boards boost 5-15 % above the attribute, and the attribute is
        // deprecated in recent CUDA (absent there); NVML's maximum is the clock's real ceiling.
        use nvml_wrapper::enum_wrappers::device::Clock;
        let nvml_max = nvml_device
            .as_ref()
            .and_then(|d| quietly(|| d.max_clock_info(Clock::SM).ok()).ok()?)
            .filter(|&mhz| mhz > 0)
            .map(f64::from);
        info.clock_mhz = higher(info.clock_mhz, nvml_max);
        // The same for the memory clock, which a theoretical DRAM figure needs: NVML's current
        // one is a lower state's where a GeForce board computes in P2 (an RTX 3090's 9501 MHz
        // for 9751, 912 GB/s for 936), and the attribute is as deprecated as the SM clock's.
        let nvml_max_memory = nvml_device
            .as_ref()
            .and_then(|d| quietly(|| d.max_clock_info(Clock::Memory).ok()).ok()?)
            .filter(|&mhz| mhz > 0)
            .map(f64::from);
        info.memory_clock_mhz = higher(info.memory_clock_mhz, nvml_max_memory);
        let old = (!plan::runs_compute_kernels(cc))
            .then_some("the compute kernels need compute capability 8.0 or later");
        let no_fp8 = (!plan::native_fp8_mma(cc))
            .then_some("fp8 mma.sync is native only on compute capability 8.9 and 12.x");
        let not_hopper = (!plan::runs_wgmma(cc))
            .then_some("wgmma is sm_90a code, which runs on compute capability 9.0 only");
        let before_hopper = (!plan::runs_mma_sm90(cc))
            .then_some("mma.sync m16n8k16 f64 needs compute capability 9.0 or later");
        let modules = Modules {
            stream: load_module(&ctx, ModuleId::Stream)?,
            peak: Loaded::load(&ctx, ModuleId::Peak, old),
            mma: Loaded::load(&ctx, ModuleId::Mma, old),
            mma_sm89: Loaded::load(&ctx, ModuleId::MmaSm89, old.or(no_fp8)),
            mma_sm90: Loaded::load(&ctx, ModuleId::MmaSm90, before_hopper),
            wgmma: Loaded::load(&ctx, ModuleId::Wgmma, not_hopper),
            cache: Loaded::load(&ctx, ModuleId::Cache, old),
            latency: Loaded::load(&ctx, ModuleId::Latency, old),
            prep: std::sync::OnceLock::new(),
        };
        Ok(CudaBackend {
            info,
            compute_capability: cc,
            modules: ManuallyDrop::new(modules),
            stream: ManuallyDrop::new(stream),
            ctx: ManuallyDrop::new(ctx),
            health: Arc::default(),
            deadline: KERNEL_DEADLINE,
            nvml_device,
            peers,
            device_prep_from_bytes: device_prep_from_bytes(),
        })
    }

    /// Whether each kernel module JIT-compiles for this device: one line per module (each
    /// precision's sweep expansion at its largest k stands for the template), `JIT ok`, why the
    /// device does not run it, or the driver's error with the JIT log.
    pub fn jit_report(&self) -> Vec<(String, String)> {
        let status = |loaded: &Loaded| match loaded {
            Loaded::Yes(_) => "JIT ok".to_string(),
            Loaded::Unsupported(why) => format!("not loaded: {why}"),
            Loaded::Failed(message) => format!("JIT FAILED: {message}"),
        };
        let mut lines = vec![
            ("kernels/stream.ptx".to_string(), "JIT ok".to_string()),
            ("kernels/peak.ptx".to_string(), status(&self.modules.peak)),
            ("kernels/mma.ptx".to_string(), status(&self.modules.mma)),
            (
                "kernels/mma_sm89.ptx".to_string(),
                status(&self.modules.mma_sm89),
            ),
            (
                "kernels/mma_sm90.ptx".to_string(),
                status(&self.modules.mma_sm90),
            ),
            (
                "kernels/wgmma.ptx.in".to_string(),
                status(&self.modules.wgmma),
            ),
            ("kernels/cache.ptx".to_string(), status(&self.modules.cache)),
            (
                "kernels/latency.ptx".to_string(),
                status(&self.modules.latency),
            ),
        ];
        // the modules loaded per case: the launch-overhead kernels, the f32 SIMT GEMM, one
        // sweep expansion per precision and each tensor-core GEMM's, and on Hopper its two
        // GEMMs (a case loads them when it runs; here their JIT is tried now)
        let mut per_case = vec![ModuleId::Launch, ModuleId::GemmSimt];
        if plan::runs_compute_kernels(self.compute_capability) {
            let k = *crate::cases::intensity::KS
                .last()
                .expect("the sweep has k values");
            for p in crate::cases::intensity::PRECISIONS {
                per_case.push(ModuleId::Sweep(p, k));
            }
            for p in crate::cases::gemm::TENSOR_PRECISIONS {
                per_case.push(ModuleId::Gemm(p));
            }
        }
        if plan::runs_wgmma(self.compute_capability) {
            let p = crate::cases::Precision::Bf16F32;
            per_case.extend([
                ModuleId::GemmWgmma(p),
                ModuleId::GemmTma(p, false),
                ModuleId::GemmTma(p, true),
            ]);
        }
        for id in per_case {
            let outcome = status(&Loaded::load(&self.ctx, id, None));
            lines.push((format!("kernels/{}", id.file()), outcome));
        }
        lines
    }

    /// Whether the device still works, shared: a caller that lends the backend out (to the
    /// runner) can still ask.
    pub fn health(&self) -> Arc<Health> {
        self.health.clone()
    }

    /// The device's compute capability as (major, minor).
    pub fn compute_capability(&self) -> (u32, u32) {
        self.compute_capability
    }

    /// The most one batch of launches may run before it is presumed runaway (default
    /// [`KERNEL_DEADLINE`]; later batches of a case get less, see [`batch_deadline`]).
    pub fn set_kernel_deadline(&mut self, deadline: Duration) {
        self.deadline = deadline;
    }

    /// A driver call on this device (see [`Health::call`]).
    fn call<T>(&self, during: &str, f: impl FnOnce() -> Result<T, DriverError>) -> Result<T> {
        self.health.call(&self.info.id, during, f)
    }

    /// The module an entry lives in; a sweep expansion is loaded (JIT-compiled) now.
    fn module(&self, id: ModuleId) -> Result<Arc<CudaModule>> {
        match id {
            ModuleId::Stream => Ok(self.modules.stream.clone()),
            ModuleId::Peak => self.modules.peak.get(id),
            ModuleId::Mma => self.modules.mma.get(id),
            ModuleId::MmaSm89 => self.modules.mma_sm89.get(id),
            ModuleId::MmaSm90 => self.modules.mma_sm90.get(id),
            ModuleId::Wgmma => self.modules.wgmma.get(id),
            ModuleId::Cache => self.modules.cache.get(id),
            ModuleId::Latency => self.modules.latency.get(id),
            // gemm (branch gemm): a GEMM expansion (and the SIMT GEMM) is loaded per case too.
            // launch (branch launchoh): the launch module is loaded per case too.
            ModuleId::Sweep(..)
            | ModuleId::Gemm(..)
            | ModuleId::GemmSimt
            | ModuleId::GemmWgmma(..)
            | ModuleId::GemmTma(..)
            | ModuleId::Launch
            | ModuleId::Prep => {
                if let (ModuleId::Prep, Some(loaded)) = (id, self.modules.prep.get()) {
                    return Ok(loaded.clone());
                }
                let during = format!("loading kernels/{}", id.file());
                let ptx = id.ptx();
                // what the driver would refuse with CUDA_ERROR_UNSUPPORTED_PTX_VERSION, said
                // as for the modules loaded with the device
                if let Some(why) = jit::not_for_driver(&ptx, driver_cuda_number()) {
                    return Loaded::Unsupported(why).get(id);
                }
                let module = self
                    .call(&during, || {
                        self.ctx.load_module(Ptx::from_src(ptx.as_ref()))
                    })
                    .map_err(|e| with_jit_error_log(&self.ctx, &ptx, e))?;
                if id == ModuleId::Prep {
                    // (one thread prepares cases: no other can have set it meanwhile)
                    let _ = self.modules.prep.set(module.clone());
                }
                Ok(module)
            }
        }
    }

    fn function(&self, module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
        self.call(&format!("loading kernel {name}"), || {
            // cuModuleGetFunction does not bind the context itself.
            self.ctx.bind_to_thread()?;
            module.load_function(name)
        })
    }

    /// Free device memory now. Pending frees are completed first: with stream-ordered
    /// allocation a freed array returns to the memory pool, which gives it back to the device
    /// only at a synchronisation, so without it the previous case's arrays would still count as
    /// used.
    fn free_bytes(&self) -> Result<u64> {
        let (free, _total) = self.call("reading free memory", || {
            self.stream.synchronize()?;
            self.ctx.mem_get_info()
        })?;
        Ok(free as u64)
    }

    /// Blocks per grid for a kernel: every SM filled to the kernel's occupancy at [`BLOCK`]
    /// threads per block and no dynamic shared memory (none of the kernels uses any).
    fn one_wave(&self, func: &CudaFunction, name: &str) -> Result<u32> {
        let per_sm = self.call(&format!("querying the occupancy of {name}"), || {
            // The occupancy query does not bind the context itself.
            self.ctx.bind_to_thread()?;
            func.occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
        })?;
        one_wave_grid(self.info.units, per_sm, name)
    }

    /// Waits for `event` without blocking forever: work (`what`: a kernel, a cuBLAS call, a
    /// copy) that has not finished within `deadline` loses the device (see the module
    /// documentation).
    pub(super) fn wait_event(
        &self,
        event: &CudaEvent,
        what: &str,
        during: &str,
        deadline: Duration,
    ) -> Result<()> {
        let started = Instant::now();
        loop {
            let done = self.call(during, || {
                self.ctx.bind_to_thread()?;
                event.try_is_complete()
            })?;
            if done {
                return Ok(());
            }
            if started.elapsed() > deadline {
                let cause = format!("{what} did not finish within {} s", deadline.as_secs_f64());
                self.health.lose(cause.clone(), true);
                return Err(Error::Driver {
                    during: during.to_string(),
                    message: format!(
                        "{cause}: presumed runaway; the GPU may run it until roofprobe exits"
                    ),
                });
            }
            // The events time the GPU, so how soon the host notices does not matter.
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// The one-wave grid of an entry.
    fn entry_grid(&self, entry: &Entry) -> Result<u32> {
        let module = self.module(entry.module)?;
        let func = self.function(&module, &entry.name)?;
        self.one_wave(&func, &entry.name)
    }

    /// What planning needs to know about this device, with `usable_bytes` free for the cases.
    fn model(&self, usable_bytes: u64) -> DeviceModel<'_> {
        DeviceModel {
            info: &self.info,
            compute_capability: self.compute_capability,
            usable_bytes,
            peers: &self.peers,
        }
    }

    /// Makes the device fault (a store to address 0) and returns the error it reports. Kept for
    /// the GPU test that checks that later cases then fail at once, saying why; a device that
    /// faulted stays unusable for the rest of the process, so the test runs this in a child.
    #[doc(hidden)]
    pub fn fault_for_tests(&self) -> Result<()> {
        let ptx = FAULT_PTX;
        let module = self.call("loading the fault kernel", || {
            self.ctx.load_module(Ptx::from_src(ptx))
        })?;
        let func = self.function(&module, "roofprobe_fault")?;
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        // An array alive across the fault, freed after it, as a case's arrays would be.
        let array = self.call("allocating", || self.stream.alloc_zeros::<u64>(1024))?;
        let outcome = self.call("running the fault kernel", || {
            // SAFETY: the kernel takes no parameters; it faults on purpose.
            unsafe { self.stream.launch_builder(&func).launch(cfg) }?;
            self.stream.synchronize()
        });
        drop(array);
        drop(module);
        outcome
    }
}

impl CudaBackend {
    /// Prepares `case`, queues `reps` launches of it and drops it at once, without waiting for
    /// them: what a batch that fails part-way leaves behind. Kept for the GPU test that checks
    /// nothing is freed or unloaded under launches still queued.
    #[doc(hidden)]
    pub fn abandon_batch_for_tests(&mut self, case: &Case, reps: u32) -> Result<()> {
        let gpu_case = GpuCase::new(self, case)?;
        let mut launch = gpu_case.arguments(0)?;
        let cfg = gpu_case.cfg;
        self.call("queueing a batch", || {
            for _ in 0..reps {
                // SAFETY: as in `GpuCase::run`: the launch's own described arguments.
                unsafe { launch.launch(cfg) }?;
            }
            Ok(())
        })?;
        drop(launch);
        drop(gpu_case);
        Ok(())
    }
}

/// A kernel that stores to address 0 (what [`CudaBackend::fault_for_tests`] runs).
pub const FAULT_PTX: &str = "\
.version 7.0
.target sm_52
.address_size 64
.visible .entry roofprobe_fault()
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    mov.u64 %rd1, 0;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
";

/// The higher of a clock the driver's attribute gives and NVML's maximum, either where only one
/// answers.
fn higher(attribute: Option<f64>, nvml: Option<f64>) -> Option<f64> {
    match (attribute, nvml) {
        (Some(attribute), Some(nvml)) => Some(attribute.max(nvml)),
        (attribute, nvml) => attribute.or(nvml),
    }
}

/// The grid that fills `sms` SMs with `per_sm` blocks each, or why there is none: a kernel that
/// cannot run one block of [`BLOCK`] threads (too many registers, say) has an occupancy of 0,
/// and launching it anyway fails with an error that does not say why.
pub fn one_wave_grid(sms: u32, per_sm: u32, name: &str) -> Result<u32> {
    if per_sm == 0 {
        return Err(Error::Internal(format!(
            "{name} cannot run a block of {BLOCK} threads on this device (occupancy 0)"
        )));
    }
    sms.checked_mul(per_sm)
        .filter(|&g| (1..=MAX_GRID).contains(&g))
        .ok_or_else(|| {
            Error::Internal(format!(
                "{name}: {sms} SMs x {per_sm} blocks is not a grid the driver accepts"
            ))
        })
}

/// Reads the device's description. The SM count sizes every grid, so a device that does not
/// report one is an error, not a grid of zero blocks.
fn describe(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<(DeviceInfo, (u32, u32))> {
    let attr =
        |a: CUdevice_attribute| guard("reading a device attribute", || ctx.attribute(a)).ok();
    let name = guard("reading the device name", || ctx.name())?;
    let (major, minor) = guard("reading the compute capability", || {
        ctx.compute_capability()
    })?;
    let (free, total) = guard("reading device memory", || ctx.mem_get_info())?;
    let sms = guard("reading the SM count", || {
        ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    })?;
    let sms = u32::try_from(sms)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| Error::Driver {
            during: "reading the SM count".into(),
            message: format!("the driver reports {sms} SMs"),
        })?;
    let l2 = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).unwrap_or(0);
    let l2 = u64::try_from(l2).unwrap_or(0);
    let khz = |a| attr(a).filter(|&v| v > 0).map(|v| v as f64 / 1000.0);
    let mut extra = Vec::new();
    if let Some(t) = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) {
        extra.push(("max threads per SM".to_string(), t.to_string()));
    }
    if let Some(s) =
        attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
    {
        extra.push(("shared memory per SM".to_string(), format!("{s} bytes")));
    }
    if attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT) == Some(1) {
        extra.push((KERNEL_RUN_TIME_LIMIT.to_string(), WATCHDOG_NOTE.to_string()));
    }
    let uuid = guard("reading the device UUID", || ctx.uuid())
        .map(|uuid| format_uuid(&c_bytes(uuid.bytes)))
        .unwrap_or_default();
    extra.push((
        "libcuda".to_string(),
        loaded_libcuda().unwrap_or_else(|| "(its path is unknown)".to_string()),
    ));
    extra.push((
        "NVML".to_string(),
        if nvml().is_some() {
            "loaded (clocks, power, temperature, throttling)".to_string()
        } else {
            "not found: clock, power and throttle columns stay empty".to_string()
        },
    ));
    let driver_version = nvml().and_then(|n| quietly(|| n.sys_driver_version().ok()).ok()?);
    let driver = match (driver_cuda_version(), driver_version) {
        (Some(cuda), Some(drv)) => format!("CUDA {cuda}, driver {drv}"),
        (Some(cuda), None) => format!("CUDA {cuda}"),
        (None, Some(drv)) => format!("driver {drv}"),
        (None, None) => String::new(),
    };
    let cc = (major.max(0) as u32, minor.max(0) as u32);
    let info = DeviceInfo {
        backend: BackendKind::Cuda,
        id: format!("cuda:{ordinal}"),
        name,
        compute_capability: format!("{major}.{minor}"),
        units: sms,
        clock_mhz: khz(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_mhz: khz(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_bits: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
            .and_then(|b| u32::try_from(b).ok()),
        llc_bytes: l2,
        caches: plan::l1_bytes_per_sm(cc)
            .map(|size_bytes| CacheLevel {
                name: "L1".to_string(),
                size_bytes,
                instances: sms,
            })
            .into_iter()
            .chain([CacheLevel {
                name: "L2".to_string(),
                size_bytes: l2,
                instances: 1,
            }])
            .collect(),
        memory_total_bytes: total as u64,
        memory_free_bytes: free as u64,
        driver,
        // NVML adds the rest when it is there (`nvml_identity`).
        identity: Identity {
            vendor: "NVIDIA".to_string(),
            microarch: gpu_microarch(cc).unwrap_or_default().to_string(),
            isa: format!("sm_{}{}", cc.0, cc.1),
            uuid,
            ..Identity::default()
        },
        extra,
    };
    Ok((info, cc))
}

/// The `devices` line of a device whose kernels a display's watchdog limits
/// (`CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT`).
pub const KERNEL_RUN_TIME_LIMIT: &str = "kernel run-time limit";
/// What that line says.
pub const WATCHDOG_NOTE: &str = "yes: a display's watchdog ends a kernel after a few seconds \
    (CUDA_ERROR_LAUNCH_TIMEOUT, which ends the context too); a case whose launches run that long \
    fails, and the run goes on in a fresh process. Run on a GPU without a display for long cases";

/// A C `char` array as bytes: `c_char` is `i8` on x86_64 and `u8` on aarch64, where the cast
/// does nothing.
#[allow(clippy::unnecessary_cast)]
fn c_bytes<const N: usize>(chars: [std::ffi::c_char; N]) -> [u8; N] {
    chars.map(|c| c as u8)
}

/// The architecture of a compute capability, as NVIDIA's CUDA C++ Programming Guide
/// ("Compute Capabilities") and its CUDA GPUs list name it; `None` for one it does not list.
pub fn gpu_microarch(cc: (u32, u32)) -> Option<&'static str> {
    Some(match cc {
        (5, _) => "Maxwell",
        (6, _) => "Pascal",
        (7, 0) | (7, 2) => "Volta",
        (7, 5) => "Turing",
        (8, 0) | (8, 6) | (8, 7) => "Ampere",
        (8, 9) => "Ada Lovelace",
        (9, 0) => "Hopper",
        (10, _) | (11, 0) | (12, _) => "Blackwell",
        _ => return None,
    })
}

impl Backend for CudaBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn cases(&self, size: SizeRequest) -> Result<Vec<PlannedCase>> {
        // Leave room for the context, the modules and the partial sums.
        let usable = self.free_bytes()? / 100 * 90;
        plan::plan_cases(&self.model(usable), size, &mut |entry| {
            self.entry_grid(entry)
        })
    }

    fn prepare(&mut self, case: &Case) -> Result<Box<dyn PreparedCase + '_>> {
        // gemm (branch gemm): a cuBLAS row runs the PTX row's arrays through cuBLAS.
        if case.family == Family::Gemm && case.kernel == crate::cases::gemm::GPU_REFERENCE {
            return gemm::prepare_cublas(self, case);
        }
        if case.family == Family::Capacity {
            return Ok(Box::new(capacity::GpuCapacity::new(self, case)?));
        }
        if case.family == Family::Link {
            return Ok(Box::new(link::GpuLink::new(self, case)?));
        }
        if case.family == Family::Launch && case.kernel == launch_rows::What::Timer.as_str() {
            return Ok(Box::new(launch::GpuTimer::new(self, case)?));
        }
        let mut prepared = GpuCase::new(self, case)?;
        if case.family == Family::Launch {
            // One launch before the samples: a lazily loaded function is loaded at its first
            // launch, which is not a launch's cost. It counts among the launches checked.
            prepared.run(1)?;
        }
        Ok(Box::new(prepared))
    }

    fn conditions(&self) -> Conditions {
        self.nvml_device
            .as_deref()
            .map(nvml_conditions)
            .unwrap_or_default()
    }

    fn lost(&self) -> Option<String> {
        self.health.lost().map(|(cause, _)| cause)
    }

    fn condition_probe(&self) -> Option<crate::device::ConditionProbe> {
        let device = self.nvml_device.clone()?;
        Some(Arc::new(move || nvml_conditions(&device)))
    }

    fn min_sample_secs(&self) -> f64 {
        0.01
    }
}

#[cfg(test)]
mod tests {
    use super::case::*;
    use super::driver::*;
    use super::nvml::*;
    use super::*;
    use cudarc::driver::sys::CUresult;
    use std::cell::Cell;

    #[test]
    fn uuid_formats_like_nvml() {
        let bytes: [u8; 16] = core::array::from_fn(|i| (i * 17) as u8);
        assert_eq!(
            format_uuid(&bytes),
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        );
    }

    #[test]
    fn the_note_says_what_the_jit_gave_the_kernel() {
        assert_eq!(
            resources_note("grid 4x256", 154, 0),
            "grid 4x256, 154 registers a thread"
        );
        assert_eq!(
            resources_note("grid 4x256", 255, 96),
            "grid 4x256, 255 registers a thread, 96 B local (spilled)"
        );
    }

    #[test]
    fn other_gpu_processes_leave_this_one_out() {
        // this process and two others computing, one drawing
        assert_eq!(others_of(3, 1), 3);
        assert_eq!(others_of(1, 0), 0);
        assert_eq!(others_of(0, 0), 0);
    }

    #[test]
    fn architectures_by_compute_capability() {
        assert_eq!(gpu_microarch((9, 0)), Some("Hopper"));
        assert_eq!(gpu_microarch((8, 6)), Some("Ampere"));
        assert_eq!(gpu_microarch((8, 9)), Some("Ada Lovelace"));
        assert_eq!(gpu_microarch((12, 0)), Some("Blackwell"));
        assert_eq!(gpu_microarch((9, 9)), None);
    }

    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        match device_count() {
            Ok(n) => eprintln!("a CUDA driver is present here with {n} device(s)"),
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("--device host"),
                    "the error tells what to do: {msg}"
                );
            }
        }
    }

    /// A sticky error loses the device: the call that met it reports it, every later call is
    /// refused at once, naming it, and is not attempted.
    #[test]
    fn a_sticky_error_fails_later_calls_without_trying_them() {
        let health = Health::default();
        // the driver's name for each, or without a driver its number
        let oom = error_name(&DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        let illegal = error_name(&DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(["CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA error 700"].contains(&illegal.as_str()));
        let ok = health.call("cuda:0", "reading", || Ok(7));
        assert_eq!(ok.unwrap(), 7);
        // a plain error does not lose the device
        let plain = health.call("cuda:0", "allocating", || -> Result<(), _> {
            Err(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY))
        });
        assert!(plain.unwrap_err().to_string().contains(&oom));
        assert!(health.check("cuda:0").is_ok());
        let fault = health.call("cuda:0", "running triad_f32", || -> Result<(), _> {
            Err(DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS))
        });
        assert!(fault.unwrap_err().to_string().contains(&illegal));
        let mut tried = false;
        let later = health
            .call("cuda:0", "reading free memory", || {
                tried = true;
                Ok(())
            })
            .unwrap_err()
            .to_string();
        assert!(!tried, "a lost device is not called again");
        assert!(
            later.contains("cuda:0 is unusable since an earlier error")
                && later.contains(&format!("{illegal} during running triad_f32")),
            "{later}"
        );
        assert!(!health.runaway());
    }

    #[test]
    fn a_cudarc_panic_is_an_error_and_later_panics_still_print() {
        let r = guard("probing", || -> Result<(), DriverError> {
            panic!("Missing symbol cuFoo")
        });
        assert!(r.unwrap_err().to_string().contains("Missing symbol cuFoo"));
        // the hook is silent only inside `quietly`: outside it is whatever it was
        assert_eq!(QUIET.with(Cell::get), 0);
    }

    #[test]
    fn grids_are_whole_and_within_the_driver_limit() {
        assert_eq!(one_wave_grid(132, 8, "k").unwrap(), 1056);
        let zero = one_wave_grid(132, 0, "fma_f64").unwrap_err().to_string();
        assert!(zero.contains("occupancy 0"), "{zero}");
        assert!(one_wave_grid(u32::MAX, 2, "k").is_err());
        assert!(
            one_wave_grid(1 << 16, 1 << 15, "k").is_err(),
            "2^31 > 2^31 - 1"
        );
    }

    /// What `fault_for_tests` runs really faults: the interpreter, which checks every access,
    /// refuses its store.
    #[test]
    fn the_fault_kernel_faults() {
        let m = ptxsim::Module::parse(FAULT_PTX).unwrap();
        let mut mem = ptxsim::Memory::new();
        let e = m
            .launch("roofprobe_fault", (1, 1, 1), (32, 1, 1), 0, &[], &mut mem)
            .unwrap_err();
        assert!(e.to_string().contains("st.global"), "{e}");
    }

    /// A case's first batch may run for the whole cap; later ones for 20 times what their
    /// launches took, never less than the floor nor more than the cap.
    #[test]
    fn a_batch_deadline_follows_the_case() {
        let cap = Duration::from_secs(10);
        assert_eq!(batch_deadline(None, 100, cap), cap);
        assert_eq!(batch_deadline(Some(f64::NAN), 1, cap), cap);
        // 50 launches of 4 ms: 0.2 s expected, 4 s allowed
        assert_eq!(batch_deadline(Some(4e-3), 50, cap), Duration::from_secs(4));
        // 1 launch of 1 µs: the floor
        assert_eq!(batch_deadline(Some(1e-6), 1, cap), DEADLINE_FLOOR);
        // 10 launches of 1 s: the cap
        assert_eq!(batch_deadline(Some(1.0), 10, cap), cap);
        // a cap below the floor wins (a test that wants a short deadline)
        let short = Duration::from_secs(1);
        assert_eq!(batch_deadline(Some(1e-6), 1, short), short);
    }

    #[test]
    fn sticky_errors_are_the_documented_ones() {
        assert!(
            sticky_code(226),
            "CUDA_ERROR_CONTAINED, unknown to the binding"
        );
        assert!(!sticky_code(225) && !sticky_code(2) && !sticky_code(913));
        assert!(is_sticky(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(is_sticky(CUresult::CUDA_ERROR_LAUNCH_FAILED));
        assert!(!is_sticky(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(!is_sticky(CUresult::CUDA_ERROR_INVALID_VALUE));
        assert!(!is_sticky(CUresult::CUDA_ERROR_NOT_READY));
    }
}
