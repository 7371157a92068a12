//! The CUDA backend: hand-written PTX (kernels/) loaded through the driver API with cudarc, timed
//! with CUDA events on one stream.
//!
//! cudarc is built with dynamic loading, so roofprobe builds with no CUDA toolkit and finds
//! `libcuda` at run time. A missing library panics inside cudarc, so [`device_count`] probes
//! for it first, and every entry into the driver from here runs under [`guard`], which turns a
//! driver error into an [`Error`] carrying the driver's own message and a cudarc panic (a stub
//! driver lacking a symbol, say) into an error instead of a crash.
//!
//! Clocks, power, temperature and throttle reasons come from NVML (also loaded at run time) when
//! it is there; without it those columns stay empty. Nothing here changes any device setting.

use super::{
    dram_rule_bytes, plan_arrays, Backend, BackendKind, CacheLevel, Conditions, DeviceInfo,
    PlannedCase, PreparedCase, SizeRequest,
};
use crate::bench::stream::{self, Element, StreamKernel};
use crate::bench::{Case, Family, Precision, Verdict};
use crate::{Error, Result};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, DriverError,
    LaunchConfig, PushKernelArg,
};
use std::sync::{Arc, OnceLock};

/// Threads per block for the memory kernels: a multiple of 32 (the reductions need it) small
/// enough that several blocks fit on every SM. The compute kernels use it too.
pub(super) const BLOCK: u32 = 256;

/// Runs a driver call, mapping its error (with the driver's message) and any cudarc panic.
pub fn guard<T>(during: &str, f: impl FnOnce() -> Result<T, DriverError>) -> Result<T> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(driver_error(during, &e)),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "cudarc panicked".to_string());
            Err(Error::Driver {
                during: during.to_string(),
                message,
            })
        }
    }
}

fn driver_error(during: &str, e: &DriverError) -> Error {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Error::Driver {
        during: during.to_string(),
        message: if text.is_empty() {
            name
        } else {
            format!("{name}: {text}")
        },
    }
}

/// Whether the CUDA driver library can be loaded at all.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen libcuda; no driver call is made.
    std::panic::catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false)
}

/// Number of CUDA devices. `Err(Error::NoDriver)` when there is no driver library, and a driver
/// error when it is present but will not initialise (no device node, stub library, too old).
pub fn device_count() -> Result<usize> {
    if !driver_present() {
        return Err(Error::NoDriver("libcuda could not be loaded".to_string()));
    }
    guard("initialisation", cudarc::driver::result::init)?;
    let n = guard(
        "counting devices",
        cudarc::driver::result::device::get_count,
    )?;
    Ok(n.max(0) as usize)
}

/// The driver's CUDA version, e.g. `12.4`.
fn driver_cuda_version() -> Option<String> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: writes one int.
    let r = guard("reading the driver version", || unsafe {
        cudarc::driver::sys::cuDriverGetVersion(&mut v).result()
    });
    r.ok().map(|_| format!("{}.{}", v / 1000, (v % 1000) / 10))
}

static NVML: OnceLock<Option<nvml_wrapper::Nvml>> = OnceLock::new();

/// NVML, if its library is present and initialises.
fn nvml() -> Option<&'static nvml_wrapper::Nvml> {
    NVML.get_or_init(|| {
        let attempt = || {
            nvml_wrapper::Nvml::builder()
                .lib_path(std::ffi::OsStr::new("libnvidia-ml.so.1"))
                .init()
                .or_else(|_| nvml_wrapper::Nvml::init())
                .ok()
        };
        std::panic::catch_unwind(attempt).ok().flatten()
    })
    .as_ref()
}

/// The NVML form of a device UUID: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn format_uuid(bytes: &[u8; 16]) -> String {
    let h: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// Names of the NVML throttle reasons set in `bits`, leaving out "idle" and "none", which are
/// not limits on a running kernel.
fn throttle_names(reasons: nvml_wrapper::bitmasks::device::ThrottleReasons) -> String {
    use nvml_wrapper::bitmasks::device::ThrottleReasons as T;
    let named = [
        (T::APPLICATIONS_CLOCKS_SETTING, "applications_clocks"),
        (T::SW_POWER_CAP, "sw_power_cap"),
        (T::HW_SLOWDOWN, "hw_slowdown"),
        (T::SYNC_BOOST, "sync_boost"),
        (T::SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"),
        (T::HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"),
        (T::HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake"),
        (T::DISPLAY_CLOCK_SETTING, "display_clock"),
    ];
    named
        .iter()
        .filter(|(flag, _)| reasons.contains(*flag))
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join(";")
}

/// One CUDA device, with its context, stream and loaded kernels.
pub struct CudaBackend {
    info: DeviceInfo,
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    stream_module: Arc<CudaModule>,
    /// The compute modules (peak, tensor), on devices that can run them.
    compute: Option<super::cuda_compute::ComputeModules>,
    nvml_device: Option<nvml_wrapper::Device<'static>>,
}

impl CudaBackend {
    /// Opens device `ordinal`: context, stream, device description, STREAM module.
    pub fn open(ordinal: usize) -> Result<CudaBackend> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::NoSuchDevice {
                asked: format!("cuda:{ordinal}"),
                available: format!("{count} CUDA device(s) visible"),
            });
        }
        let ctx = guard("creating a context", || CudaContext::new(ordinal))?;
        // One stream, no cross-stream bookkeeping: cudarc's event tracking would add an event
        // record to every launch.
        // SAFETY: all work goes to the one stream created below, so no cross-stream
        // synchronisation is needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = guard("creating a stream", || ctx.new_stream())?;
        let info = describe(&ctx, ordinal)?;
        let nvml_device = uuid_of(&ctx).and_then(|uuid| nvml()?.device_by_uuid(uuid).ok());
        let stream_module = guard("loading kernels/stream.ptx", || {
            ctx.load_module(cudarc::nvrtc::Ptx::from_src(crate::kernels::STREAM))
        })?;
        let compute = super::cuda_compute::ComputeModules::load(&ctx)?;
        Ok(CudaBackend {
            info,
            ctx,
            stream,
            stream_module,
            compute,
            nvml_device,
        })
    }

    /// The device's compute capability as (major, minor).
    pub fn compute_capability(&self) -> Result<(i32, i32)> {
        guard("reading the compute capability", || {
            self.ctx.compute_capability()
        })
    }

    pub(super) fn function(&self, module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
        guard(&format!("loading kernel {name}"), || {
            module.load_function(name)
        })
    }

    pub(super) fn free_bytes(&self) -> Result<u64> {
        let (free, _total) = guard("reading free memory", || self.ctx.mem_get_info())?;
        Ok(free as u64)
    }

    /// Blocks per grid for a kernel: every SM filled to the kernel's occupancy.
    pub(super) fn grid_for(&self, func: &CudaFunction) -> Result<u32> {
        let per_sm = guard("querying occupancy", || {
            func.occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
        })?;
        Ok(self.info.units.max(1) * per_sm.max(1))
    }
}

fn uuid_of(ctx: &Arc<CudaContext>) -> Option<String> {
    let uuid = guard("reading the device UUID", || ctx.uuid()).ok()?;
    let bytes: [u8; 16] = uuid.bytes.map(|b| b as u8);
    Some(format_uuid(&bytes))
}

fn describe(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<DeviceInfo> {
    let attr =
        |a: CUdevice_attribute| guard("reading a device attribute", || ctx.attribute(a)).ok();
    let name = guard("reading the device name", || ctx.name())?;
    let (major, minor) = guard("reading the compute capability", || {
        ctx.compute_capability()
    })?;
    let (free, total) = guard("reading device memory", || ctx.mem_get_info())?;
    let sms = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).unwrap_or(0);
    let l2 = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).unwrap_or(0) as u64;
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
    if let Some(uuid) = uuid_of(ctx) {
        extra.push(("uuid".to_string(), uuid));
    }
    let driver = match (
        driver_cuda_version(),
        nvml().and_then(|n| n.sys_driver_version().ok()),
    ) {
        (Some(cuda), Some(drv)) => format!("CUDA {cuda}, driver {drv}"),
        (Some(cuda), None) => format!("CUDA {cuda}"),
        (None, Some(drv)) => format!("driver {drv}"),
        (None, None) => String::new(),
    };
    Ok(DeviceInfo {
        backend: BackendKind::Cuda,
        id: format!("cuda:{ordinal}"),
        name,
        compute_capability: format!("{major}.{minor}"),
        units: sms.max(0) as u32,
        clock_mhz: khz(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_mhz: khz(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_bits: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
            .map(|b| b.max(0) as u32),
        llc_bytes: l2,
        caches: vec![CacheLevel {
            name: "L2".to_string(),
            size_bytes: l2,
            instances: 1,
        }],
        memory_total_bytes: total as u64,
        memory_free_bytes: free as u64,
        driver,
        extra,
    })
}

impl Backend for CudaBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn cases(&self, size: SizeRequest) -> Result<Vec<PlannedCase>> {
        // Leave room for the context, the module and the partial sums.
        let usable = self.free_bytes()? / 100 * 90;
        let mut planned = plan_arrays(
            size,
            dram_rule_bytes(self.info.llc_bytes),
            3,
            usable,
            &self.info.id,
            "stream cases",
            |bytes| stream::cases(|p| (bytes / stream::element_bytes(p)).max(1)),
        )?;
        if let Some(compute) = &self.compute {
            planned.extend(super::cuda_compute::cases(self, compute, size, usable)?);
        }
        Ok(planned)
    }

    fn prepare(&mut self, case: &Case) -> Result<Box<dyn PreparedCase + '_>> {
        match (case.family, case.precision) {
            (Family::Stream, Precision::F32) => Ok(Box::new(StreamCase::<f32>::new(self, case)?)),
            (Family::Stream, Precision::F64) => Ok(Box::new(StreamCase::<f64>::new(self, case)?)),
            (Family::Peak | Family::Tensor | Family::Intensity, _) => match &self.compute {
                Some(compute) => super::cuda_compute::prepare(self, compute, case),
                None => Err(Error::Usage(format!(
                    "{} needs compute capability 8.0 or later",
                    case.id()
                ))),
            },
            _ => Err(Error::Usage(format!(
                "the CUDA backend has no kernel for {}",
                case.id()
            ))),
        }
    }

    fn conditions(&self) -> Conditions {
        use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
        let Some(d) = &self.nvml_device else {
            return Conditions::default();
        };
        Conditions {
            clock_mhz: d.clock_info(Clock::SM).ok().map(f64::from),
            memory_clock_mhz: d.clock_info(Clock::Memory).ok().map(f64::from),
            power_w: d.power_usage().ok().map(|mw| mw as f64 / 1000.0),
            temperature_c: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
            throttle: d
                .current_throttle_reasons()
                .map(throttle_names)
                .unwrap_or_default(),
        }
    }

    fn min_sample_secs(&self) -> f64 {
        0.01
    }
}

/// A STREAM case on the device: arrays allocated, inputs copied in, outputs poisoned.
struct StreamCase<'b, T: Element + DeviceRepr> {
    backend: &'b CudaBackend,
    kernel: StreamKernel,
    name: String,
    func: CudaFunction,
    cfg: LaunchConfig,
    n: u64,
    scalar: T,
    inputs: Vec<CudaSlice<T>>,
    /// The output array, or the per-block partial sums of a reduction.
    output: CudaSlice<T>,
}

impl<'b, T: Element + DeviceRepr> StreamCase<'b, T> {
    fn new(backend: &'b CudaBackend, case: &Case) -> Result<Self> {
        let kernel = StreamKernel::from_name(&case.kernel)
            .ok_or_else(|| Error::Usage(format!("unknown STREAM kernel {}", case.kernel)))?;
        let name = format!("{}_{}", kernel.name(), case.precision);
        let func = backend.function(&backend.stream_module, &name)?;
        let grid = backend.grid_for(&func)?;
        let n = case.elements;
        let free = backend.free_bytes()?;
        let needed = case.working_set_bytes + grid as u64 * 8;
        if needed > free / 100 * 95 {
            return Err(Error::OutOfMemory {
                case: case.id(),
                device: backend.info.id.clone(),
                needed_bytes: needed,
                free_bytes: free,
            });
        }
        let len = usize::try_from(n)
            .map_err(|_| Error::Usage(format!("{n} elements do not fit in memory")))?;
        let stream = &backend.stream;
        let mut inputs = Vec::new();
        for array in 0..kernel.inputs() {
            let host: Vec<T> = (0..n)
                .map(|i| T::from_f64(stream::input(kernel, array, i)))
                .collect();
            inputs.push(guard(&format!("copying inputs of {name}"), || {
                stream.clone_htod(&host)
            })?);
        }
        let out_len = if kernel.is_reduction() {
            grid as usize
        } else {
            len
        };
        let poison = vec![T::poison(); out_len];
        let output = guard(&format!("allocating the output of {name}"), || {
            stream.clone_htod(&poison)
        })?;
        let scalar = T::from_f64(if kernel == StreamKernel::Write {
            stream::FILL
        } else {
            stream::SCALAR
        });
        Ok(StreamCase {
            backend,
            kernel,
            name,
            func,
            cfg: LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            },
            n,
            scalar,
            inputs,
            output,
        })
    }

    /// Most elements one block adds in the kernel's precision: its threads' grid-stride
    /// share of whole vectors, plus the scalar tail (which block 0 takes).
    fn largest_block_terms(&self) -> u64 {
        let width = 16 / std::mem::size_of::<T>() as u64;
        let threads = self.cfg.grid_dim.0 as u64 * BLOCK as u64;
        let vectors = self.n / width;
        vectors.div_ceil(threads) * width * BLOCK as u64 + width
    }
}

impl<T: Element + DeviceRepr> PreparedCase for StreamCase<'_, T> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let stream = &self.backend.stream;
        let ctx = &self.backend.ctx;
        let during = format!("running {}", self.name);
        guard(&during, || {
            let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            let mut launch = stream.launch_builder(&self.func);
            for input in &self.inputs {
                launch.arg(input);
            }
            launch.arg(&self.output);
            launch.arg(&self.n);
            if self.kernel.has_scalar() {
                launch.arg(&self.scalar);
            }
            start.record(stream)?;
            for _ in 0..reps {
                // SAFETY: the arguments match the kernel's parameters in number, order and
                // type (kernels/README.md: inputs, outputs, n as u64, scalar), every array
                // holds n elements (partials: one per block of this grid), and the kernel only
                // writes its output.
                unsafe { launch.launch(self.cfg) }?;
            }
            end.record(stream)?;
            let ms = start.elapsed_ms(&end)?;
            Ok(ms as f64 / 1e3)
        })
    }

    fn verify(&mut self) -> Result<Verdict> {
        let out: Vec<T> = guard(&format!("reading back {}", self.name), || {
            self.backend.stream.clone_dtoh(&self.output)
        })?;
        Ok(if self.kernel.is_reduction() {
            let total: f64 = out.iter().map(|v| v.to_f64()).sum();
            stream::check_sum::<T>(self.kernel, self.n, total, self.largest_block_terms())
        } else {
            stream::check_array(self.kernel, &out)
        })
    }

    fn launch_note(&self) -> String {
        format!("grid {}x{}", self.cfg.grid_dim.0, self.cfg.block_dim.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_formats_like_nvml() {
        let bytes: [u8; 16] = core::array::from_fn(|i| (i * 17) as u8);
        assert_eq!(
            format_uuid(&bytes),
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        );
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

    #[test]
    fn every_stream_case_has_its_entry() {
        let entries = crate::kernels::entries(crate::kernels::STREAM);
        for p in stream::PRECISIONS {
            for k in StreamKernel::ALL {
                let entry = format!("{}_{}", k.name(), p);
                assert!(entries.contains(&entry), "missing {entry}");
            }
        }
    }
}
