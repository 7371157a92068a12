//! simcuda: a simulated CUDA driver. It exports the driver-API entry points roofprobe reaches
//! through cudarc (device queries, the primary context, memory, mapped pinned memory, copies
//! within a device and between devices, peer access, streams, modules, the linker, launches,
//! events, error strings, TMA tensor maps) and runs every kernel with `ptxsim`, so that `cargo test`
//! drives roofprobe's CUDA backend end to end on a machine without a GPU.
//!
//! It exports the names roofprobe's binding (CUDA 12.0's) calls, and none a later driver added
//! (CUDA 12.8's `cuEventElapsedTime_v2`, say): a call by such a name fails here as it would on
//! an older driver. `tests/driver.rs` checks every one against a real driver's libraries
//! (Debian's, driver 535, CUDA 12.2).
//!
//! It is a test double, never a measurement: its "device" is an interpreter, its times are the
//! interpreter's, and its name says it is simulated.
//!
//! It must never shadow a real driver: the library is `libsimcuda.so`, and a process sees it as
//! libcuda only through a directory that links `libcuda.so.1` and `libcuda.so` to it, put on
//! `LD_LIBRARY_PATH` by the test or by `scripts/sim-cuda` that opts in.
//!
//! The same library is also a simulated cuBLAS and cuBLASLt ([`cublas`]): the GEMM reference
//! rows' entry points, computed on the host in stream order, where the links name it so; and a
//! simulated NVML ([`nvml`]), whose clocks, power and reasons follow what the devices run, or
//! a scripted job ([`workload`]) with GPM metrics, for `roofprobe watch`.
//!
//! What it is and how it behaves (asynchronous streams, timing events, sticky faults, the JIT's
//! checks) is in [`driver`]; what device it simulates, in [`config`].

#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod config;
pub mod cublas;
pub mod driver;
pub mod nvml;
pub mod tensor_map;
pub mod workload;

use driver::{code, try_driver, Res};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

/// Runs an entry point: `Ok` becomes `success`, `Err(code)` that code, and a panic `panicked`
/// (with its name on stderr); nothing unwinds into the caller.
fn guarded<C>(name: &str, success: C, panicked: C, f: impl FnOnce() -> Result<(), C>) -> C {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => success,
        Ok(Err(c)) => c,
        Err(_) => {
            eprintln!("simcuda: {name} panicked");
            panicked
        }
    }
}

/// Runs a driver API call: its `Err(code)` and any panic (as `CUDA_ERROR_UNKNOWN`) become the
/// CUresult.
fn api(name: &str, f: impl FnOnce() -> Res) -> c_uint {
    guarded(name, code::SUCCESS, code::UNKNOWN, f)
}

/// Writes `v` through `out`, or `Err(null)` for a null pointer (the driver's and cuBLAS's
/// invalid-value codes).
unsafe fn put_or<T, E>(out: *mut T, v: T, null: E) -> Result<(), E> {
    if out.is_null() {
        return Err(null);
    }
    unsafe { out.write(v) };
    Ok(())
}

/// Writes `v` through `out`, refusing a null pointer as the driver does.
unsafe fn put<T>(out: *mut T, v: T) -> Res {
    unsafe { put_or(out, v, code::INVALID_VALUE) }
}

fn handle<T>(p: *mut T) -> u64 {
    p as u64
}

fn ptr<T>(h: u64) -> *mut T {
    h as *mut T
}

// ---- initialisation and devices ---------------------------------------------------------

#[no_mangle]
pub extern "C" fn cuInit(_flags: c_uint) -> c_uint {
    api("cuInit", driver::init)
}

#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> c_uint {
    api("cuDriverGetVersion", || {
        let v = try_driver().map_or(
            config::Config::from_env().map_or(12040, |c| c.driver_version),
            |d| d.config.driver_version,
        );
        unsafe { put(version, v) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> c_uint {
    api("cuDeviceGetCount", || {
        let d = try_driver()?;
        unsafe { put(count, d.devices.len() as c_int) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> c_uint {
    api("cuDeviceGet", || {
        let d = try_driver()?;
        if d.devices.is_empty() {
            return Err(code::NO_DEVICE);
        }
        d.device(ordinal)?;
        unsafe { put(device, ordinal) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: c_int) -> c_uint {
    api("cuDeviceGetName", || {
        let d = try_driver()?;
        d.device(dev)?;
        let len = usize::try_from(len).map_err(|_| code::INVALID_VALUE)?;
        if name.is_null() || len == 0 {
            return Err(code::INVALID_VALUE);
        }
        let text = d.config.name.as_bytes();
        let n = text.len().min(len - 1);
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), name as *mut u8, n);
            *name.add(n) = 0;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: c_int) -> c_uint {
    api("cuDeviceTotalMem_v2", || {
        let d = try_driver()?;
        d.device(dev)?;
        unsafe { put(bytes, d.config.memory_bytes as usize) }
    })
}

fn uuid(ordinal: c_int) -> [u8; 16] {
    let mut b = *b"simcuda-device-0";
    b[15] = b'0' + (ordinal.clamp(0, 9) as u8);
    b
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid(out: *mut [u8; 16], dev: c_int) -> c_uint {
    api("cuDeviceGetUuid", || {
        try_driver()?.device(dev)?;
        unsafe { put(out, uuid(dev)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(out: *mut [u8; 16], dev: c_int) -> c_uint {
    unsafe { cuDeviceGetUuid(out, dev) }
}

/// The PCI bus id of a device, as both the driver and NVML write it.
fn pci_bus_id(ordinal: c_int) -> String {
    format!("00000000:{:02X}:00.0", 0x10 + ordinal)
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(out: *mut c_char, len: c_int, dev: c_int) -> c_uint {
    api("cuDeviceGetPCIBusId", || {
        try_driver()?.device(dev)?;
        let text = format!("{}\0", pci_bus_id(dev));
        let len = usize::try_from(len).map_err(|_| code::INVALID_VALUE)?;
        if out.is_null() || len < text.len() {
            return Err(code::INVALID_VALUE);
        }
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), out as *mut u8, text.len()) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    dev: c_int,
) -> c_uint {
    api("cuDeviceGetAttribute", || {
        let d = try_driver()?;
        d.device(dev)?;
        let c = &d.config;
        let (smem_per_sm, smem_optin) = c.shared_bytes();
        let clock_khz = i64::from(c.clock_attribute_khz.unwrap_or(c.clock_mhz * 1000));
        let v: i64 = match attribute {
            1 => 1024,                                               // MAX_THREADS_PER_BLOCK
            2 | 3 => 1024,                                           // MAX_BLOCK_DIM_X, _Y
            4 => 64,                                                 // MAX_BLOCK_DIM_Z
            5 => i32::MAX as i64,                                    // MAX_GRID_DIM_X
            6 | 7 => 65535,                                          // MAX_GRID_DIM_Y, _Z
            8 => 48 << 10,                                           // MAX_SHARED_MEMORY_PER_BLOCK
            9 => 64 << 10,                                           // TOTAL_CONSTANT_MEMORY
            10 => 32,                                                // WARP_SIZE
            12 | 82 => 65536,       // MAX_REGISTERS_PER_BLOCK, _PER_MULTIPROCESSOR
            13 => clock_khz,        // CLOCK_RATE, kHz
            16 => i64::from(c.sms), // MULTIPROCESSOR_COUNT
            17 => i64::from(c.watchdog_secs.is_some()), // KERNEL_EXEC_TIMEOUT
            32 => 0,                // ECC_ENABLED
            33 => 0x10 + i64::from(dev), // PCI_BUS_ID
            34 | 50 => 0,           // PCI_DEVICE_ID, PCI_DOMAIN_ID
            36 => i64::from(crate::config::MEMORY_CLOCK_MHZ) * 1000, // MEMORY_CLOCK_RATE, kHz
            37 => 256,              // GLOBAL_MEMORY_BUS_WIDTH
            38 => c.l2_bytes as i64, // L2_CACHE_SIZE
            39 => i64::from(c.max_threads_per_sm()), // MAX_THREADS_PER_MULTIPROCESSOR
            41 => 1,                // UNIFIED_ADDRESSING
            75 => i64::from(c.cc.0), // COMPUTE_CAPABILITY_MAJOR
            76 => i64::from(c.cc.1), // COMPUTE_CAPABILITY_MINOR
            81 => i64::from(smem_per_sm), // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
            97 => i64::from(smem_optin), // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
            106 => 32,              // MAX_BLOCKS_PER_MULTIPROCESSOR
            115 => 1,               // MEMORY_POOLS_SUPPORTED
            0..=140 => 0,
            _ => return Err(code::INVALID_VALUE),
        };
        unsafe { put(value, v as c_int) }
    })
}

// ---- contexts ---------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut *mut c_void, dev: c_int) -> c_uint {
    api("cuDevicePrimaryCtxRetain", || {
        let h = try_driver()?.retain(dev)?;
        unsafe { put(ctx, ptr(h)) }
    })
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: c_int) -> c_uint {
    api("cuDevicePrimaryCtxRelease_v2", || {
        try_driver()?.release(dev)
    })
}

#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(ctx: *mut c_void) -> c_uint {
    api("cuCtxSetCurrent", || try_driver()?.set_current(handle(ctx)))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut *mut c_void) -> c_uint {
    api("cuCtxGetCurrent", || {
        let h = try_driver()?.get_current();
        unsafe { put(ctx, ptr(h)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(can: *mut c_int, dev: c_int, peer: c_int) -> c_uint {
    api("cuDeviceCanAccessPeer", || {
        let v = try_driver()?.can_access_peer(dev, peer)?;
        unsafe { put(can, v) }
    })
}

#[no_mangle]
pub extern "C" fn cuCtxEnablePeerAccess(peer: *mut c_void, flags: c_uint) -> c_uint {
    api("cuCtxEnablePeerAccess", || {
        try_driver()?.enable_peer_access(handle(peer), flags)
    })
}

#[no_mangle]
pub extern "C" fn cuCtxSynchronize() -> c_uint {
    api("cuCtxSynchronize", || try_driver()?.synchronize_context())
}

// ---- memory -----------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> c_uint {
    api("cuMemGetInfo_v2", || {
        let (f, t) = try_driver()?.mem_info()?;
        unsafe {
            put(free, f as usize)?;
            put(total, t as usize)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut u64, bytes: usize) -> c_uint {
    api("cuMemAlloc_v2", || {
        let p = try_driver()?.alloc(bytes)?;
        unsafe { put(dptr, p) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut u64,
    bytes: usize,
    stream: *mut c_void,
) -> c_uint {
    api("cuMemAllocAsync", || {
        let d = try_driver()?;
        d.stream_of_current(handle(stream))?;
        let p = d.alloc(bytes)?;
        unsafe { put(dptr, p) }
    })
}

#[no_mangle]
pub extern "C" fn cuMemFree_v2(dptr: u64) -> c_uint {
    api("cuMemFree_v2", || try_driver()?.free_now(dptr))
}

#[no_mangle]
pub extern "C" fn cuMemFreeAsync(dptr: u64, stream: *mut c_void) -> c_uint {
    api("cuMemFreeAsync", || {
        try_driver()?.free_async(dptr, handle(stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(dst: u64, src: *const c_void, bytes: usize) -> c_uint {
    api("cuMemcpyHtoD_v2", || unsafe {
        try_driver()?.copy_htod(dst, src as *const u8, bytes, None)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: u64,
    src: *const c_void,
    bytes: usize,
    stream: *mut c_void,
) -> c_uint {
    api("cuMemcpyHtoDAsync_v2", || unsafe {
        try_driver()?.copy_htod(dst, src as *const u8, bytes, Some(handle(stream)))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, bytes: usize) -> c_uint {
    api("cuMemcpyDtoH_v2", || unsafe {
        try_driver()?.copy_dtoh(dst as *mut u8, src, bytes, None)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: u64,
    bytes: usize,
    stream: *mut c_void,
) -> c_uint {
    api("cuMemcpyDtoHAsync_v2", || unsafe {
        try_driver()?.copy_dtoh(dst as *mut u8, src, bytes, Some(handle(stream)))
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoD_v2(dst: u64, src: u64, bytes: usize) -> c_uint {
    api("cuMemcpyDtoD_v2", || {
        try_driver()?.copy_dtod(dst, src, bytes, None)
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: u64,
    src: u64,
    bytes: usize,
    stream: *mut c_void,
) -> c_uint {
    api("cuMemcpyDtoDAsync_v2", || {
        try_driver()?.copy_dtod(dst, src, bytes, Some(handle(stream)))
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyPeer(
    dst: u64,
    dst_ctx: *mut c_void,
    src: u64,
    src_ctx: *mut c_void,
    bytes: usize,
) -> c_uint {
    api("cuMemcpyPeer", || {
        try_driver()?.copy_peer(dst, handle(dst_ctx), src, handle(src_ctx), bytes, None)
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyPeerAsync(
    dst: u64,
    dst_ctx: *mut c_void,
    src: u64,
    src_ctx: *mut c_void,
    bytes: usize,
    stream: *mut c_void,
) -> c_uint {
    api("cuMemcpyPeerAsync", || {
        let s = Some(handle(stream));
        try_driver()?.copy_peer(dst, handle(dst_ctx), src, handle(src_ctx), bytes, s)
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD8_v2(dst: u64, value: u8, count: usize) -> c_uint {
    api("cuMemsetD8_v2", || {
        try_driver()?.memset(dst, u32::from(value), 1, count, None)
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD8Async(
    dst: u64,
    value: u8,
    count: usize,
    stream: *mut c_void,
) -> c_uint {
    api("cuMemsetD8Async", || {
        try_driver()?.memset(dst, u32::from(value), 1, count, Some(handle(stream)))
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD32_v2(dst: u64, value: c_uint, count: usize) -> c_uint {
    api("cuMemsetD32_v2", || {
        try_driver()?.memset(dst, value, 4, count, None)
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD32Async(
    dst: u64,
    value: c_uint,
    count: usize,
    stream: *mut c_void,
) -> c_uint {
    api("cuMemsetD32Async", || {
        try_driver()?.memset(dst, value, 4, count, Some(handle(stream)))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    bytes: usize,
    flags: c_uint,
) -> c_uint {
    api("cuMemHostAlloc", || {
        let p = try_driver()?.host_alloc(bytes, flags)?;
        unsafe { put(pp, p as *mut c_void) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    dptr: *mut u64,
    p: *mut c_void,
    flags: c_uint,
) -> c_uint {
    api("cuMemHostGetDevicePointer", || {
        let d = try_driver()?.host_device_pointer(p as usize, flags)?;
        unsafe { put(dptr, d) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytes: usize) -> c_uint {
    unsafe { cuMemHostAlloc(pp, bytes, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> c_uint {
    // SAFETY: the caller's pointer came from cuMemHostAlloc, as the driver API requires.
    api("cuMemFreeHost", || unsafe {
        try_driver()?.host_free(p as *mut u8)
    })
}

// ---- streams ----------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, flags: c_uint) -> c_uint {
    api("cuStreamCreate", || {
        let h = try_driver()?.create_stream(flags)?;
        unsafe { put(stream, ptr(h)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    stream: *mut *mut c_void,
    flags: c_uint,
    _priority: c_int,
) -> c_uint {
    unsafe { cuStreamCreate(stream, flags) }
}

#[no_mangle]
pub extern "C" fn cuStreamSynchronize(stream: *mut c_void) -> c_uint {
    api("cuStreamSynchronize", || {
        try_driver()?
            .stream_of_current(handle(stream))?
            .synchronize()
    })
}

#[no_mangle]
pub extern "C" fn cuStreamQuery(stream: *mut c_void) -> c_uint {
    api("cuStreamQuery", || {
        try_driver()?.stream_of_current(handle(stream))?.query()
    })
}

#[no_mangle]
pub extern "C" fn cuStreamWaitEvent(
    stream: *mut c_void,
    event: *mut c_void,
    _flags: c_uint,
) -> c_uint {
    api("cuStreamWaitEvent", || {
        try_driver()?.wait_event(handle(stream), handle(event))
    })
}

#[no_mangle]
pub extern "C" fn cuStreamDestroy_v2(stream: *mut c_void) -> c_uint {
    api("cuStreamDestroy_v2", || {
        try_driver()?.destroy_stream(handle(stream))
    })
}

// ---- modules and functions --------------------------------------------------------------

/// The JIT options a module load or a link takes from its caller: the info and error log
/// buffers (pointer, size), `CU_JIT_LOG_VERBOSE` and `CU_JIT_TARGET` (a `CUjit_target`: the
/// compute capability's number, plus `0x10000` for architecture-specific code); the others are
/// accepted and left alone.
struct JitOptions {
    info: (*mut u8, usize),
    error: (*mut u8, usize),
    verbose: bool,
    target: Option<u32>,
}

impl JitOptions {
    /// Reads `num_options` options and their values (a size's or a flag's by value, in the
    /// pointer's bits, as the driver API passes them).
    ///
    /// # Safety
    /// `options` and `values` hold `num_options` entries each, or are null with none.
    unsafe fn read(
        num_options: c_uint,
        options: *const c_int,
        values: *const *mut c_void,
    ) -> Res<JitOptions> {
        if num_options > 0 && (options.is_null() || values.is_null()) {
            return Err(code::INVALID_VALUE);
        }
        let mut jit = JitOptions {
            info: (std::ptr::null_mut(), 0),
            error: (std::ptr::null_mut(), 0),
            verbose: false,
            target: None,
        };
        for i in 0..num_options as usize {
            // SAFETY: the caller passes `num_options` options and values.
            let (option, value) = unsafe { (*options.add(i), *values.add(i)) };
            match option {
                3 => jit.info.0 = value as *mut u8,  // CU_JIT_INFO_LOG_BUFFER
                4 => jit.info.1 = value as usize,    // …_SIZE_BYTES
                5 => jit.error.0 = value as *mut u8, // CU_JIT_ERROR_LOG_BUFFER
                6 => jit.error.1 = value as usize,   // …_SIZE_BYTES
                9 => jit.target = Some(value as usize as u32), // CU_JIT_TARGET
                12 => jit.verbose = !value.is_null(), // CU_JIT_LOG_VERBOSE
                _ => {}
            }
        }
        Ok(jit)
    }
}

/// Loads NUL-terminated PTX; the JIT log goes to `log` (`CU_JIT_ERROR_LOG_BUFFER`) if given.
unsafe fn load(
    module: *mut *mut c_void,
    image: *const c_void,
    log: Option<(*mut u8, usize)>,
) -> Res {
    let d = try_driver()?;
    if image.is_null() || module.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let text = unsafe { CStr::from_ptr(image as *const c_char) };
    let Ok(ptx) = text.to_str() else {
        return Err(code::INVALID_IMAGE);
    };
    match d.load_module(ptx) {
        Ok(h) => unsafe { put(module, ptr(h)) },
        Err((c, message)) => {
            d.trace(&format!("load-failed {c} {message}"));
            if let Some(log) = log {
                unsafe { write_log(log, &message) };
            }
            Err(c)
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(
    module: *mut *mut c_void,
    image: *const c_void,
) -> c_uint {
    api("cuModuleLoadData", || unsafe { load(module, image, None) })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut *mut c_void,
    image: *const c_void,
    num_options: c_uint,
    options: *const c_int,
    values: *const *mut c_void,
) -> c_uint {
    api("cuModuleLoadDataEx", || {
        let jit = unsafe { JitOptions::read(num_options, options, values) }?;
        unsafe { load(module, image, Some(jit.error)) }
    })
}

#[no_mangle]
pub extern "C" fn cuModuleUnload(module: *mut c_void) -> c_uint {
    api("cuModuleUnload", || {
        try_driver()?.unload_module(handle(module))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    function: *mut *mut c_void,
    module: *mut c_void,
    name: *const c_char,
) -> c_uint {
    api("cuModuleGetFunction", || {
        if name.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let name = unsafe { CStr::from_ptr(name) }
            .to_str()
            .map_err(|_| code::NOT_FOUND)?;
        let h = try_driver()?.get_function(handle(module), name)?;
        unsafe { put(function, ptr(h)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    function: *mut c_void,
) -> c_uint {
    api("cuFuncGetAttribute", || {
        let v = try_driver()?.function_attribute(handle(function), attribute)?;
        unsafe { put(value, v) }
    })
}

#[no_mangle]
pub extern "C" fn cuFuncSetAttribute(
    function: *mut c_void,
    attribute: c_int,
    value: c_int,
) -> c_uint {
    api("cuFuncSetAttribute", || {
        try_driver()?.set_function_attribute(handle(function), attribute, value)
    })
}

#[no_mangle]
pub extern "C" fn cuFuncSetCacheConfig(function: *mut c_void, _config: c_int) -> c_uint {
    api("cuFuncSetCacheConfig", || {
        try_driver()?
            .function_attribute(handle(function), 0)
            .map(|_| ())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    blocks: *mut c_int,
    function: *mut c_void,
    block_size: c_int,
    dynamic_shared: usize,
) -> c_uint {
    api("cuOccupancyMaxActiveBlocksPerMultiprocessor", || {
        let n = try_driver()?.occupancy(handle(function), block_size, dynamic_shared)?;
        unsafe { put(blocks, n) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    blocks: *mut c_int,
    function: *mut c_void,
    block_size: c_int,
    dynamic_shared: usize,
    _flags: c_uint,
) -> c_uint {
    unsafe {
        cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, function, block_size, dynamic_shared)
    }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuLaunchKernel(
    function: *mut c_void,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_bytes: c_uint,
    stream: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> c_uint {
    api("cuLaunchKernel", || {
        if !extra.is_null() {
            return Err(code::NOT_SUPPORTED);
        }
        unsafe {
            try_driver()?.launch(
                handle(function),
                (grid_x, grid_y, grid_z),
                (block_x, block_y, block_z),
                shared_bytes,
                handle(stream),
                params as *const *const u8,
            )
        }
    })
}

// ---- the linker ---------------------------------------------------------------------------

/// One `cuLinkCreate`'s state: its options (log buffers, verbosity) and the one module's
/// object.
struct LinkState {
    jit: JitOptions,
    object: Option<Vec<u8>>,
}

/// Copies `text` into a caller's log buffer, cut to fit, NUL-terminated.
unsafe fn write_log((buf, size): (*mut u8, usize), text: &str) {
    if !buf.is_null() && size > 0 {
        let n = text.len().min(size - 1);
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf, n);
            *buf.add(n) = 0;
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkCreate_v2(
    num_options: c_uint,
    options: *const c_int,
    values: *const *mut c_void,
    state_out: *mut *mut c_void,
) -> c_uint {
    api("cuLinkCreate_v2", || {
        try_driver()?.working()?;
        let state = LinkState {
            jit: unsafe { JitOptions::read(num_options, options, values) }?,
            object: None,
        };
        unsafe { put(state_out, Box::into_raw(Box::new(state)) as *mut c_void) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkAddData_v2(
    state: *mut c_void,
    kind: c_int,
    data: *const c_void,
    size: usize,
    _name: *const c_char,
    _num_options: c_uint,
    _options: *const c_int,
    _values: *const *mut c_void,
) -> c_uint {
    api("cuLinkAddData_v2", || {
        let d = try_driver()?;
        if state.is_null() || data.is_null() || size == 0 {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a state from cuLinkCreate_v2, not yet destroyed (the caller's promise).
        let state = unsafe { &mut *(state as *mut LinkState) };
        // CU_JIT_INPUT_PTX only, and one module: what roofprobe gives the linker
        if kind != 1 || state.object.is_some() {
            return Err(code::NOT_SUPPORTED);
        }
        // SAFETY: `size` bytes of PTX text at `data`, its NUL counted or not.
        let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, size) };
        let bytes = bytes.strip_suffix(&[0]).unwrap_or(bytes);
        let ptx = std::str::from_utf8(bytes).map_err(|_| code::INVALID_PTX)?;
        match d.link_compile(ptx, state.jit.verbose, state.jit.target) {
            Ok((object, log)) => {
                unsafe { write_log(state.jit.info, &log) };
                state.object = Some(object);
                Ok(())
            }
            Err((c, message)) => {
                d.trace(&format!("link-failed {c} {message}"));
                unsafe { write_log(state.jit.error, &message) };
                Err(c)
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkComplete(
    state: *mut c_void,
    cubin: *mut *mut c_void,
    size: *mut usize,
) -> c_uint {
    api("cuLinkComplete", || {
        try_driver()?.working()?;
        if state.is_null() || cubin.is_null() || size.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: as in cuLinkAddData_v2; the object stays in the state until its destroy.
        let state = unsafe { &mut *(state as *mut LinkState) };
        let object = state.object.as_mut().ok_or(code::INVALID_VALUE)?;
        unsafe {
            put(size, object.len())?;
            put(cubin, object.as_mut_ptr() as *mut c_void)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkDestroy(state: *mut c_void) -> c_uint {
    api("cuLinkDestroy", || {
        if state.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a state from cuLinkCreate_v2, destroyed once.
        drop(unsafe { Box::from_raw(state as *mut LinkState) });
        Ok(())
    })
}

// ---- tensor maps ------------------------------------------------------------------------

/// `cuTensorMapEncodeTiled`: checks the arguments as the driver documents (see
/// [`tensor_map`]) and writes ptxsim's 128-byte encoding into the caller's `CUtensorMap`
/// (64-byte aligned), which a kernel then takes as a `.param .align 64 .b8 [128]` argument. It
/// needs `cuInit`, not a context; a refused call leaves the map untouched.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuTensorMapEncodeTiled(
    tensor_map: *mut c_void,
    data_type: c_uint,
    rank: c_uint,
    global_address: *mut c_void,
    global_dim: *const u64,
    global_strides: *const u64,
    box_dim: *const c_uint,
    element_strides: *const c_uint,
    interleave: c_uint,
    swizzle: c_uint,
    l2_promotion: c_uint,
    oob_fill: c_uint,
) -> c_uint {
    api("cuTensorMapEncodeTiled", || {
        try_driver()?;
        if tensor_map.is_null() || !(tensor_map as usize).is_multiple_of(64) {
            return Err(code::INVALID_VALUE);
        }
        tensor_map::check_rank(rank)?;
        if global_dim.is_null()
            || global_strides.is_null()
            || box_dim.is_null()
            || element_strides.is_null()
        {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: the caller passes `rank` dims, box dims and element strides and `rank - 1`
        // strides, as the driver API requires (rank is 2 here).
        let tiled = unsafe {
            tensor_map::Tiled {
                data_type,
                rank,
                address: global_address as u64,
                dims: [*global_dim, *global_dim.add(1)],
                strides: [*global_strides],
                box_dims: [*box_dim, *box_dim.add(1)],
                element_strides: [*element_strides, *element_strides.add(1)],
                interleave,
                swizzle,
                l2_promotion,
                oob_fill,
            }
        };
        let bytes = tiled.encode()?.encode();
        // SAFETY: a CUtensorMap is 128 bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), tensor_map as *mut u8, 128) };
        Ok(())
    })
}

// ---- events -----------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(event: *mut *mut c_void, flags: c_uint) -> c_uint {
    api("cuEventCreate", || {
        let h = try_driver()?.create_event(flags)?;
        unsafe { put(event, ptr(h)) }
    })
}

#[no_mangle]
pub extern "C" fn cuEventRecord(event: *mut c_void, stream: *mut c_void) -> c_uint {
    api("cuEventRecord", || {
        try_driver()?.record(handle(event), handle(stream))
    })
}

#[no_mangle]
pub extern "C" fn cuEventQuery(event: *mut c_void) -> c_uint {
    api("cuEventQuery", || try_driver()?.query(handle(event)))
}

#[no_mangle]
pub extern "C" fn cuEventSynchronize(event: *mut c_void) -> c_uint {
    api("cuEventSynchronize", || {
        try_driver()?.event_synchronize(handle(event))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(
    ms: *mut f32,
    start: *mut c_void,
    end: *mut c_void,
) -> c_uint {
    api("cuEventElapsedTime", || {
        let v = try_driver()?.elapsed_ms(handle(start), handle(end))?;
        unsafe { put(ms, v) }
    })
}

#[no_mangle]
pub extern "C" fn cuEventDestroy_v2(event: *mut c_void) -> c_uint {
    api("cuEventDestroy_v2", || {
        try_driver()?.destroy_event(handle(event))
    })
}

// ---- errors -----------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(error: c_uint, out: *mut *const c_char) -> c_uint {
    api("cuGetErrorName", || {
        let (name, _) = code::describe(error).ok_or(code::INVALID_VALUE)?;
        unsafe { put(out, name.as_ptr() as *const c_char) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(error: c_uint, out: *mut *const c_char) -> c_uint {
    api("cuGetErrorString", || {
        let (_, text) = code::describe(error).ok_or(code::INVALID_VALUE)?;
        unsafe { put(out, text.as_ptr() as *const c_char) }
    })
}
