//! A kernel case on the device ([`GpuCase`]): its arrays made and initialised as its launch
//! describes ([`args::Launch`]), the exact argument list pushed, launches timed between CUDA
//! events in batches under a deadline, and the output checked against the launch's gold values.

use super::args::{self, Arg, DevicePrep, Launch, Role, TALLY_START, TALLY_WINDOW};
use super::describe;
use super::{batch_deadline, gemm, launch_rows, plan, quietly, CudaBackend};
use crate::backend::PreparedCase;
use crate::cases::{Case, Family, Verdict};
use crate::{Error, Result};
use cudarc::driver::sys::{CUevent_flags, CUfunction_attribute};
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchArgs,
    LaunchConfig, PushKernelArg,
};
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A device array of 32- or 64-bit words.
pub(super) enum DeviceWords {
    W32(CudaSlice<u32>),
    W64(CudaSlice<u64>),
}

impl DeviceWords {
    pub(super) fn push<'a>(&'a self, launch: &mut LaunchArgs<'a>) {
        match self {
            DeviceWords::W32(s) => launch.arg(s),
            DeviceWords::W64(s) => launch.arg(s),
        };
    }

    /// The array's device address, for a call that takes it raw (cuBLAS, a tensor map).
    pub(super) fn address(&self, stream: &CudaStream) -> u64 {
        use cudarc::driver::DevicePtr;
        match self {
            DeviceWords::W32(s) => s.device_ptr(stream).0,
            DeviceWords::W64(s) => s.device_ptr(stream).0,
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        match self {
            DeviceWords::W32(s) => s.num_bytes() as u64,
            DeviceWords::W64(s) => s.num_bytes() as u64,
        }
    }

    /// A new array of the same words, copied on the device (queued on `stream`).
    pub(super) fn duplicate(
        &self,
        stream: &Arc<CudaStream>,
    ) -> std::result::Result<Self, DriverError> {
        Ok(match self {
            DeviceWords::W32(s) => DeviceWords::W32(stream.clone_dtod(s)?),
            DeviceWords::W64(s) => DeviceWords::W64(stream.clone_dtod(s)?),
        })
    }
}

/// An encoded tensor map as the kernel receives it: `CUtensorMap`'s 128 opaque bytes (the
/// `.param .align 64 .b8 p[128]` it is declared as), 128-byte aligned as CUDA 13's `cuda.h`
/// declares the type (12's and the driver's documentation ask 64).
#[repr(C, align(128))]
#[derive(Clone, Copy)]
pub(super) struct TensorMapBytes([u64; 16]);

// SAFETY: plain bytes with the layout and alignment of `CUtensorMap`, passed by value.
unsafe impl cudarc::driver::DeviceRepr for TensorMapBytes {}

/// Encodes `map` over the array at `address` through the driver (`cuTensorMapEncodeTiled`).
pub(super) fn encode_tensor_map(
    map: &args::TensorMap,
    address: u64,
) -> std::result::Result<TensorMapBytes, DriverError> {
    use cudarc::driver::sys::{
        self as cu, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
        CUtensorMapL2promotion, CUtensorMapSwizzle,
    };
    // fp8 is copied as bytes (the driver has no fp8 type before CUDA 12.8, and TMA does not
    // convert)
    let data_type = match map.precision {
        crate::cases::Precision::F16F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        crate::cases::Precision::E4m3F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        _ => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    };
    let swizzle = match map.swizzle_bytes {
        0 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        32 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        _ => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let dims = map.dims;
    let strides = [map.row_bytes];
    let box_dims = map.box_dims;
    let element_strides = [1u32; 2];
    // encoded in place at 128-byte alignment (the binding's type is CUDA 12's, aligned to 64)
    #[repr(C, align(128))]
    struct Encoded(std::mem::MaybeUninit<cu::CUtensorMap>);
    let mut encoded = Encoded(std::mem::MaybeUninit::zeroed());
    let out = &mut encoded.0;
    // SAFETY: `out` is a CUtensorMap the driver writes; the arrays hold the rank's entries (the
    // strides one fewer) and live across the call; the address is a live device allocation.
    unsafe {
        cu::cuTensorMapEncodeTiled(
            out.as_mut_ptr(),
            data_type,
            2,
            address as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            box_dims.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        .result()?;
        Ok(TensorMapBytes(out.assume_init().opaque))
    }
}

/// A launch's note with what the driver's JIT gave its kernel: `grid 1056x256, 154 registers a
/// thread`, and its local memory where it has any (spilled registers: our kernels declare none).
pub(super) fn resources_note(launch: &str, registers: i32, local: i32) -> String {
    let local = if local > 0 {
        format!(", {local} B local (spilled)")
    } else {
        String::new()
    };
    format!("{launch}, {registers} registers a thread{local}")
}

/// A kernel's registers per thread and local (spill) bytes, as the driver reports them after the
/// JIT; `None` where it reports neither.
pub(super) fn registers_and_local_bytes(
    backend: &CudaBackend,
    func: &CudaFunction,
) -> Option<(i32, i32)> {
    let read = |attribute| {
        quietly(|| {
            backend.ctx.bind_to_thread().ok()?;
            func.get_attribute(attribute).ok()
        })
        .ok()
        .flatten()
    };
    Some((
        read(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        read(CUfunction_attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
    ))
}

/// Every array a launch describes, made on the device and initialised as described (an array
/// a fill of `prep` writes only allocated: the fill initialises it); fails where a pointer
/// argument would have no array of its size.
pub(super) fn upload_arrays(
    backend: &CudaBackend,
    launch: &Launch,
    entry_name: &str,
    prep: Option<&DevicePrep>,
) -> Result<Vec<(Role, DeviceWords)>> {
    let filled = |role: Role| {
        prep.is_some_and(|p| {
            p.fills
                .iter()
                .any(|f| f.buffers.iter().any(|b| b.role == role))
        })
    };
    let mut arrays = Vec::with_capacity(launch.buffers.len());
    for buffer in &launch.buffers {
        let len = usize::try_from(buffer.words)
            .map_err(|_| Error::Usage(format!("{} words do not fit in memory", buffer.words)))?;
        let words = match (buffer.word_bytes, filled(buffer.role)) {
            (8, false) => DeviceWords::W64(upload(backend, buffer, len, entry_name, |w| w)?),
            (_, false) => DeviceWords::W32(upload(backend, buffer, len, entry_name, |w| w as u32)?),
            (8, true) => DeviceWords::W64(allocate(backend, buffer, len, entry_name)?),
            (_, true) => DeviceWords::W32(allocate(backend, buffer, len, entry_name)?),
        };
        debug_assert_eq!(words.bytes(), buffer.bytes());
        debug_assert_eq!(len as u64, buffer.words);
        arrays.push((buffer.role, words));
    }
    // Every pointer argument has its array, at least as large as described.
    for p in &launch.params {
        if let Arg::Buffer(role) = p.arg {
            let (have, want) = (
                arrays
                    .iter()
                    .find(|(r, _)| *r == role)
                    .map(|(_, a)| a.bytes()),
                launch.buffer(role).map(|b| b.bytes()),
            );
            if have.is_none() || have < want {
                return Err(Error::Internal(format!(
                    "{}: argument {} has no array of its size",
                    entry_name, p.name
                )));
            }
        }
    }
    Ok(arrays)
}

/// The copies of a rotating array, made on the device from the first (a decode step's weight:
/// up to the DRAM rule's hundreds of MiB, which the host would generate again).
pub(super) fn rotation_copies(
    backend: &CudaBackend,
    launch: &Launch,
    arrays: &[(Role, DeviceWords)],
    entry_name: &str,
) -> Result<Vec<DeviceWords>> {
    let stream = &*backend.stream;
    let mut copies = Vec::new();
    if let Some(rotation) = launch.rotation {
        let (_, first) = arrays
            .iter()
            .find(|(r, _)| *r == rotation.role)
            .ok_or_else(|| {
                Error::Internal(format!(
                    "{}: the rotating {:?} has no array",
                    entry_name, rotation.role
                ))
            })?;
        for copy in 1..rotation.copies {
            let during = format!(
                "copying {:?} of {} to its copy {copy} on the device",
                rotation.role, entry_name
            );
            copies.push(backend.call(&during, || first.duplicate(stream))?);
        }
    }
    Ok(copies)
}

/// The tensor maps of a launch's parameters (one list per parameter, empty where it is none),
/// encoded over their arrays' device addresses, once per copy.
pub(super) fn encode_tensor_maps(
    backend: &CudaBackend,
    launch: &Launch,
    arrays: &[(Role, DeviceWords)],
    copies: &[DeviceWords],
    entry_name: &str,
) -> Result<Vec<Vec<TensorMapBytes>>> {
    let stream = &*backend.stream;
    let mut tensor_maps = Vec::with_capacity(launch.params.len());
    for p in &launch.params {
        let mut maps = Vec::new();
        if let Arg::TensorMap(map) = &p.arg {
            for copy in 0..launch.copies_of(map.role) {
                let array = find_copy(arrays, copies, launch, map.role, copy).ok_or_else(|| {
                    Error::Internal(format!(
                        "{}: tensor map {} has no array",
                        entry_name, p.name
                    ))
                })?;
                let address = array.address(stream);
                let during = format!("encoding tensor map {} of {}", p.name, entry_name);
                maps.push(backend.call(&during, || encode_tensor_map(map, address))?);
            }
        }
        tensor_maps.push(maps);
    }
    Ok(tensor_maps)
}

/// Copy `copy` of a case's array of `role`, among its `arrays` and `copies` (copies 1 onwards of
/// the array that rotates, [`Launch::rotation`]): copy 0 is the array itself.
pub(super) fn find_copy<'a>(
    arrays: &'a [(Role, DeviceWords)],
    copies: &'a [DeviceWords],
    launch: &Launch,
    role: Role,
    copy: u64,
) -> Option<&'a DeviceWords> {
    match (launch.rotation, copy) {
        (_, 0) => arrays.iter().find(|(r, _)| *r == role).map(|(_, a)| a),
        (Some(r), c) if r.role == role => copies.get(usize::try_from(c - 1).ok()?),
        _ => None,
    }
}

/// A case on the device: its launch described by [`describe::launch`], its arrays allocated and
/// filled, its events made. The one kind of prepared case for every family.
pub(super) struct GpuCase<'b> {
    pub(super) backend: &'b CudaBackend,
    pub(super) case: Case,
    pub(super) launch: Launch,
    /// The kernel; `None` where only the arrays serve, for a reference library's row
    /// ([`GpuCase::arrays_only`]).
    pub(super) func: Option<CudaFunction>,
    pub(super) cfg: LaunchConfig,
    // Leaked rather than dropped after a runaway kernel.
    pub(super) arrays: ManuallyDrop<Vec<(Role, DeviceWords)>>,
    /// Copies 1 onwards of the array that rotates ([`Launch::rotation`]): copy 0 is its array
    /// in `arrays`. Empty where none rotates.
    pub(super) copies: ManuallyDrop<Vec<DeviceWords>>,
    /// The copy the next launch reads: launches rotate through the copies over the case's life.
    pub(super) next_copy: u64,
    pub(super) events: ManuallyDrop<(CudaEvent, CudaEvent)>,
    /// Kept alive while its function is used (a sweep expansion is loaded per case).
    pub(super) module: ManuallyDrop<Option<Arc<CudaModule>>>,
    /// Seconds one launch took in the last batch: what the next batch's deadline follows.
    pub(super) per_launch_secs: Option<f64>,
    /// Launches issued so far (a launch row's count must equal them).
    pub(super) launches: u64,
    /// A launch row's first batch whose clocks disagree ([`launch_rows::check_batch`]).
    pub(super) clock_fault: Option<Verdict>,
    /// The encoded tensor maps of each [`Arg::TensorMap`] parameter, by parameter index: one
    /// per copy of its array (empty for any other parameter).
    pub(super) tensor_maps: Vec<Vec<TensorMapBytes>>,
    /// What the driver's JIT gave the kernel, where it says: registers a thread, and local
    /// memory bytes a thread (our kernels declare none, so any is spilled registers).
    pub(super) resources: Option<(i32, i32)>,
    /// The arrays' fills and the output's check on the device, where the case takes them
    /// ([`describe::prepared_on_device`]), with the module of their kernels; `None`: on the
    /// host.
    pub(super) prep: Option<(DevicePrep, Arc<CudaModule>)>,
    /// The device check's two tally words ([`Role::Tally`]), where it has one.
    pub(super) tally: ManuallyDrop<Option<CudaSlice<u64>>>,
    /// The device check's own arrays but its tally (the sweep's gold table, [`Role::Gold`]).
    pub(super) check_arrays: ManuallyDrop<Vec<(Role, DeviceWords)>>,
}

impl Drop for GpuCase<'_> {
    fn drop(&mut self) {
        if self.backend.health.runaway() {
            return;
        }
        // A batch that failed part-way can leave launches queued: let them finish before their
        // arrays are freed and a sweep module (held only here) is unloaded (cudarc frees arrays
        // in stream order anyway; the module unload is not ordered). Waited for like a sample,
        // so a runaway kernel is leaked, not waited on; after a sticky error this fails at once.
        let end = &self.events.1;
        let during = format!("finishing {}", self.launch.entry.name);
        let recorded = self
            .backend
            .call(&during, || end.record(&self.backend.stream));
        if recorded.is_ok()
            && self
                .wait(end, &self.launch.entry.name, &during, self.backend.deadline)
                .is_err()
            && self.backend.health.runaway()
        {
            return;
        }
        // SAFETY: each field is dropped once, here, and not used after.
        unsafe {
            ManuallyDrop::drop(&mut self.arrays);
            ManuallyDrop::drop(&mut self.tally);
            ManuallyDrop::drop(&mut self.check_arrays);
            ManuallyDrop::drop(&mut self.copies);
            ManuallyDrop::drop(&mut self.events);
            ManuallyDrop::drop(&mut self.module);
        }
    }
}

/// `buffer` on the device, `len` words allocated and left as they are: for an array a fill on
/// the device writes whole before anything reads it ([`DevicePrep::fills`]).
fn allocate<T: cudarc::driver::DeviceRepr>(
    backend: &CudaBackend,
    buffer: &args::Buffer,
    len: usize,
    entry: &str,
) -> Result<CudaSlice<T>> {
    let during = format!("allocating {:?} of {entry} on the device", buffer.role);
    // SAFETY: the caller fills every word on the device before a kernel or a read-back sees it.
    backend.call(&during, || unsafe { backend.stream.alloc::<T>(len) })
}

/// `buffer` on the device: `len` words allocated, then its starting words generated on every
/// host core (a DRAM-sized array of a large GPU has tens of millions) for the address the array
/// got (the latency ring's words are addresses within it), and copied.
pub(super) fn upload<T: cudarc::driver::DeviceRepr + Send>(
    backend: &CudaBackend,
    buffer: &args::Buffer,
    len: usize,
    entry: &str,
    bits: impl Fn(u64) -> T + Sync,
) -> Result<CudaSlice<T>> {
    let stream = &backend.stream;
    let during = format!("allocating {:?} of {entry} on the device", buffer.role);
    // SAFETY: every word is written by the copy below before a kernel or a read-back sees it.
    let mut array = backend.call(&during, || unsafe { stream.alloc::<T>(len) })?;
    let base = cudarc::driver::DevicePtr::device_ptr(&array, stream).0;
    let host: Vec<T> = crate::cases::par_map(len, |i| bits(buffer.word(i as u64, base)));
    let during = format!("copying {:?} of {entry} to the device", buffer.role);
    backend.call(&during, || stream.memcpy_htod(&host, &mut array))?;
    Ok(array)
}

/// Queues one launch of a case's preparation on the device ([`DevicePrep`]): a fill or the
/// check, its arguments pushed from its description as a case's are, its arrays the case's own
/// (and the check's: `own`, its gold table where it has one, and `tally`).
fn launch_prep(
    backend: &CudaBackend,
    module: &Arc<CudaModule>,
    prep: &Launch,
    arrays: &[(Role, DeviceWords)],
    own: &[(Role, DeviceWords)],
    tally: Option<&CudaSlice<u64>>,
) -> Result<()> {
    let func = backend.function(module, &prep.entry.name)?;
    let mut builder = backend.stream.launch_builder(&func);
    for p in &prep.params {
        match &p.arg {
            Arg::Buffer(Role::Tally) => {
                let tally = tally.ok_or_else(|| {
                    Error::Internal(format!("{}: no tally to pass", prep.entry.name))
                })?;
                builder.arg(tally);
            }
            Arg::Buffer(role) => {
                let (_, array) = arrays
                    .iter()
                    .chain(own)
                    .find(|(r, _)| r == role)
                    .ok_or_else(|| {
                        Error::Internal(format!(
                            "{}: argument {} has no array",
                            prep.entry.name, p.name
                        ))
                    })?;
                array.push(&mut builder);
            }
            Arg::U64(v) | Arg::B64(v) => {
                builder.arg(v);
            }
            Arg::U32(v) | Arg::B32(v) => {
                builder.arg(v);
            }
            Arg::F32(v) => {
                builder.arg(v);
            }
            Arg::F64(v) => {
                builder.arg(v);
            }
            Arg::TensorMap(_) => {
                return Err(Error::Internal(format!(
                    "{}: a preparation takes no tensor map",
                    prep.entry.name
                )))
            }
        }
    }
    let cfg = LaunchConfig {
        grid_dim: (prep.grid, 1, 1),
        block_dim: (prep.block, 1, 1),
        shared_mem_bytes: 0,
    };
    let during = format!("running {} on the device", prep.entry.name);
    // SAFETY: the arguments are the preparation's description, which the offline tests check
    // against the entry's `.param` list and run under the PTX interpreter; each array pushed is
    // the case's array of that role, of the described size (checked when the case's arrays
    // were made), the check's gold table as described, or the tally of two words; the kernels
    // write only the array they fill, or the tally.
    backend.call(&during, || unsafe { builder.launch(cfg) }.map(|_| ()))
}

impl<'b> GpuCase<'b> {
    /// The case's kernel loaded (its module JIT-compiled where it is loaded per case) and set
    /// up, its arrays made.
    pub(super) fn new(backend: &'b CudaBackend, case: &Case) -> Result<Self> {
        Self::prepare(backend, case, true)
    }

    /// The arrays (and events) of `case`'s launch, without its kernel: what a reference
    /// library's row of the same shape runs on. Our kernel's module is not loaded, so a
    /// kernel the JIT refuses does not cost the reference row too.
    pub(super) fn arrays_only(backend: &'b CudaBackend, case: &Case) -> Result<Self> {
        Self::prepare(backend, case, false)
    }

    pub(super) fn prepare(
        backend: &'b CudaBackend,
        case: &Case,
        with_kernel: bool,
    ) -> Result<Self> {
        backend.health.check(&backend.info.id)?;
        let entry = describe::entry(case).map_err(Error::Usage)?;
        let (module, func) = if with_kernel {
            let module = backend.module(entry.module)?;
            let func = backend.function(&module, &entry.name)?;
            (Some(module), Some(func))
        } else {
            (None, None)
        };
        if let (Some(percent), Some(func)) = (describe::shared_carveout_percent(&entry), &func) {
            backend.call(
                &format!("setting the shared-memory carveout of {}", entry.name),
                || {
                    backend.ctx.bind_to_thread()?;
                    func.set_attribute(
                        CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                        percent,
                    )
                },
            )?;
        }
        let grid = match (describe::grid_is_one_wave(case.family), &func) {
            (false, _) => 1, // unused: the launch's grid is the case's own
            (true, Some(func)) => backend.one_wave(func, &entry.name)?,
            (true, None) => {
                return Err(Error::Internal(format!(
                    "{}: a one-wave grid needs its kernel",
                    entry.name
                )))
            }
        };
        let launch = describe::launch(case, grid).map_err(Error::Usage)?;
        // gemm (branch gemm): more than 48 KiB of shared memory is raised per function.
        if let Some(func) = &func {
            gemm::raise_dynamic_shared(backend, func, &launch)?;
        }
        let resources = func
            .as_ref()
            .and_then(|func| registers_and_local_bytes(backend, func));
        let free = backend.free_bytes()?;
        let needed = launch.device_bytes();
        if needed > free / 100 * 95 {
            return Err(Error::OutOfMemory {
                case: case.id(),
                device: backend.info.id.clone(),
                needed_bytes: needed,
                free_bytes: free,
            });
        }
        let stream = &*backend.stream;
        let prep = match with_kernel
            && describe::prepared_on_device(case, backend.device_prep_from_bytes)
        {
            true => describe::device_prep(&launch)
                .map(|prep| Ok::<_, Error>((prep, backend.module(args::ModuleId::Prep)?)))
                .transpose()?,
            false => None,
        };
        let arrays = upload_arrays(backend, &launch, &entry.name, prep.as_ref().map(|p| &p.0))?;
        let mut tally = None;
        let mut check_arrays = Vec::new();
        if let Some((prep, module)) = &prep {
            for fill in &prep.fills {
                launch_prep(backend, module, fill, &arrays, &[], None)?;
            }
            if let Some(check) = &prep.check {
                let during = format!("allocating the device check's tally of {}", entry.name);
                tally = Some(backend.call(&during, || stream.clone_htod(&TALLY_START[..]))?);
                // its gold table: the host's, a few KiB
                for b in &check.buffers {
                    if b.role == Role::Tally || launch.buffer(b.role).is_some() {
                        continue;
                    }
                    let len = b.words as usize;
                    let words = match b.word_bytes {
                        8 => DeviceWords::W64(upload(backend, b, len, &entry.name, |w| w)?),
                        _ => DeviceWords::W32(upload(backend, b, len, &entry.name, |w| w as u32)?),
                    };
                    check_arrays.push((b.role, words));
                }
            }
        }
        let copies = rotation_copies(backend, &launch, &arrays, &entry.name)?;
        let tensor_maps = encode_tensor_maps(backend, &launch, &arrays, &copies, &entry.name)?;
        let events = backend.call(&format!("creating the events of {}", entry.name), || {
            // Timing must be on: cudarc's default (`None`) creates events without it.
            let start = backend
                .ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            let end = backend
                .ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            // The copies above are queued on the stream before the first start event, so they
            // never count in a sample; finishing them here also reports a failed copy now,
            // as this case's error, instead of in the first timed run.
            stream.synchronize()?;
            Ok((start, end))
        })?;
        let cfg = LaunchConfig {
            grid_dim: (launch.grid, 1, 1),
            block_dim: (launch.block, 1, 1),
            shared_mem_bytes: launch.dynamic_shared_bytes,
        };
        Ok(GpuCase {
            backend,
            case: case.clone(),
            launch,
            func,
            cfg,
            arrays: ManuallyDrop::new(arrays),
            copies: ManuallyDrop::new(copies),
            next_copy: 0,
            events: ManuallyDrop::new(events),
            module: ManuallyDrop::new(module),
            per_launch_secs: None,
            launches: 0,
            clock_fault: None,
            tensor_maps,
            resources,
            prep,
            tally: ManuallyDrop::new(tally),
            check_arrays: ManuallyDrop::new(check_arrays),
        })
    }

    pub(super) fn array(&self, role: Role) -> Result<&DeviceWords> {
        self.copy(role, 0)
    }

    /// Copy `copy` of the array of `role`: 0 is the array itself, and only a rotating array
    /// has others ([`Launch::rotation`]).
    pub(super) fn copy(&self, role: Role, copy: u64) -> Result<&DeviceWords> {
        find_copy(&self.arrays, &self.copies, &self.launch, role, copy).ok_or_else(|| {
            Error::Internal(format!(
                "{} has no copy {copy} of its {role:?} array",
                self.launch.entry.name
            ))
        })
    }

    /// The argument builder of every copy of the rotating array, in order: launch `i` takes
    /// builder `i mod copies` (one builder where nothing rotates).
    pub(super) fn argument_sets(&self) -> Result<Vec<LaunchArgs<'_>>> {
        (0..self.launch.copies())
            .map(|copy| self.arguments(copy))
            .collect()
    }

    /// Takes the copies the next `reps` launches read, in turn from [`GpuCase::next_copy`]:
    /// the first one's index, for [`GpuCase::argument_sets`].
    pub(super) fn take_copies(&mut self, reps: u32) -> u64 {
        let first = self.next_copy;
        self.next_copy = (first + u64::from(reps)) % self.launch.copies();
        first
    }

    /// The kernel's arguments for a launch that reads copy `copy` of the rotating array (0
    /// where none rotates), pushed from the launch's description and nothing else: in its
    /// order, each at its kind's width. Every pushed pointer points into `self` (an array's
    /// device address, a scalar in `self.launch.params`), which the builder borrows, so none
    /// can move or be freed while the builder can launch.
    pub(super) fn arguments(&self, copy: u64) -> Result<LaunchArgs<'_>> {
        let func = self.func.as_ref().ok_or_else(|| {
            Error::Internal(format!(
                "{} was prepared for its arrays only, not to be launched",
                self.launch.entry.name
            ))
        })?;
        let mut launch = self.backend.stream.launch_builder(func);
        let copy_of = |role: Role| {
            if self.launch.copies_of(role) > 1 {
                copy
            } else {
                0
            }
        };
        for (i, p) in self.launch.params.iter().enumerate() {
            match &p.arg {
                Arg::Buffer(role) => self.copy(*role, copy_of(*role))?.push(&mut launch),
                Arg::TensorMap(map) => {
                    let map = self
                        .tensor_maps
                        .get(i)
                        .and_then(|maps| maps.get(copy_of(map.role) as usize))
                        .ok_or_else(|| {
                            Error::Internal(format!(
                                "{}: tensor map {} was not encoded",
                                self.launch.entry.name, p.name
                            ))
                        })?;
                    launch.arg(map);
                }
                Arg::U64(v) | Arg::B64(v) => {
                    launch.arg(v);
                }
                Arg::U32(v) | Arg::B32(v) => {
                    launch.arg(v);
                }
                Arg::F32(v) => {
                    launch.arg(v);
                }
                Arg::F64(v) => {
                    launch.arg(v);
                }
            }
        }
        Ok(launch)
    }

    /// Words of an array, read back once all queued work has finished.
    pub(super) fn read(&self, role: Role) -> Result<Vec<u64>> {
        let array = self.array(role)?;
        let stream = &*self.backend.stream;
        self.backend.call(
            &format!("reading back {:?} of {}", role, self.launch.entry.name),
            || {
                let words = match array {
                    DeviceWords::W32(s) => {
                        stream.clone_dtoh(s)?.into_iter().map(u64::from).collect()
                    }
                    DeviceWords::W64(s) => stream.clone_dtoh(s)?,
                };
                // A copy to pageable memory returns when it is done, but say so explicitly.
                stream.synchronize()?;
                Ok(words)
            },
        )
    }

    /// The verdict of the check on the device, where the case has one ([`DevicePrep::check`]):
    /// the tally reset, the check queued after the case's launches, its 16 bytes read back
    /// (and, where an element is wrong, the output from the first wrong one on, to show it).
    /// `None` where the host checks the case.
    fn verify_on_device(&mut self) -> Result<Option<Verdict>> {
        let GpuCase {
            backend,
            launch,
            arrays,
            prep,
            tally,
            check_arrays,
            ..
        } = self;
        let (Some((prep, module)), Some(tally)) = (prep.as_ref(), tally.as_mut()) else {
            return Ok(None);
        };
        let Some(check) = &prep.check else {
            return Ok(None);
        };
        let stream = &*backend.stream;
        let name = &launch.entry.name;
        backend.call(
            &format!("resetting the device check's tally of {name}"),
            || stream.memcpy_htod(&TALLY_START[..], tally),
        )?;
        launch_prep(backend, module, check, arrays, check_arrays, Some(tally))?;
        let read = backend.call(
            &format!("reading back the device check's tally of {name}"),
            || {
                let words = stream.clone_dtoh(tally)?;
                stream.synchronize()?;
                Ok(words)
            },
        )?;
        let output = arrays
            .iter()
            .find(|(r, _)| *r == Role::Output)
            .map(|(_, a)| a)
            .ok_or_else(|| Error::Internal(format!("{name} has no output array")))?;
        let n = check.buffer(Role::Output).map_or(0, |b| b.words);
        let first = read.get(1).copied().unwrap_or(u64::MAX);
        let mut from_first = Vec::new();
        if read.first().is_some_and(|&w| w > 0) && first < n {
            let (start, end) = (first as usize, (first + TALLY_WINDOW).min(n) as usize);
            from_first = backend.call(
                &format!("reading back the first wrong elements of {name}"),
                || {
                    let words: Vec<u64> = match output {
                        DeviceWords::W32(s) => stream
                            .clone_dtoh(&s.slice(start..end))?
                            .into_iter()
                            .map(u64::from)
                            .collect(),
                        DeviceWords::W64(s) => stream.clone_dtoh(&s.slice(start..end))?,
                    };
                    stream.synchronize()?;
                    Ok(words)
                },
            )?;
        }
        Ok(Some(check.verify_tally(&read, &from_first)))
    }

    /// Waits for `event` without blocking forever ([`CudaBackend::wait_event`]).
    pub(super) fn wait(
        &self,
        event: &CudaEvent,
        what: &str,
        during: &str,
        deadline: Duration,
    ) -> Result<()> {
        self.backend.wait_event(event, what, during, deadline)
    }
}

impl PreparedCase for GpuCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let during = format!("running {}", self.launch.entry.name);
        let first = self.take_copies(reps);
        let mut launches = self.argument_sets()?;
        let (start, end) = &*self.events;
        let stream = &*self.backend.stream;
        let cfg = self.cfg;
        // The host's clock around the batch: both events lie inside it.
        let host_start = Instant::now();
        self.backend.call(&during, || {
            start.record(stream)?;
            for r in 0..u64::from(reps) {
                let launch = &mut launches[((first + r) % self.launch.copies()) as usize];
                // SAFETY: the arguments are the launch's description, which the offline tests
                // check against the entry's `.param` list (count, order, kind, width) and run
                // under the PTX interpreter with arrays of exactly the described sizes; every
                // array here (each copy of a rotating one too) is at least that size (checked
                // in `new`); the kernels write only their output and clock arrays.
                unsafe { launch.launch(cfg) }?;
            }
            end.record(stream)
        })?;
        let deadline = batch_deadline(self.per_launch_secs, reps, self.backend.deadline);
        self.wait(end, &self.launch.entry.name, &during, deadline)?;
        let ms = self.backend.call(&during, || start.elapsed_ms(end))?;
        let host_secs = host_start.elapsed().as_secs_f64();
        let secs = ms as f64 / 1e3;
        self.per_launch_secs = Some(secs / f64::from(reps.max(1)));
        self.launches += u64::from(reps);
        if self.case.family == Family::Launch && self.clock_fault.is_none() {
            let v = launch_rows::check_batch(secs, host_secs, reps);
            if !v.valid {
                self.clock_fault = Some(v);
                // no figure: a zero is not a time the runner can summarise
                return Ok(secs.max(f64::MIN_POSITIVE));
            }
        }
        Ok(secs)
    }

    fn verify(&mut self) -> Result<Verdict> {
        if let Some(verdict) = self.verify_on_device()? {
            // a sweep's block records are still read and checked here: a few words per block
            let records = match self.launch.buffer(Role::Clocks) {
                Some(_) => self.read(Role::Clocks)?,
                None => Vec::new(),
            };
            return Ok(self.launch.verify_with(verdict, &records));
        }
        let words = self.read(Role::Output)?;
        if self.case.family == Family::Launch {
            if let Some(fault) = self.clock_fault.clone() {
                return Ok(fault);
            }
            let counted = words.first().copied().unwrap_or(0);
            let count = launch_rows::check_count(counted, self.launches);
            if !count.valid {
                return Ok(count);
            }
        }
        // The block records: the work every block counted (args::Launch::verify_records).
        let records = match self.launch.buffer(Role::Clocks) {
            Some(_) => self.read(Role::Clocks)?,
            None => Vec::new(),
        };
        Ok(self.launch.verify(&words, &records))
    }

    fn launch_note(&self) -> String {
        let launch = self.launch.note();
        match self.resources {
            Some((registers, local)) => resources_note(&launch, registers, local),
            None => launch,
        }
    }

    fn one_shot(&self) -> bool {
        self.case.family == Family::Launch
    }

    fn one_shot_reps(&self) -> u32 {
        match self.case.family {
            Family::Launch => launch_rows::LAUNCHES_PER_SAMPLE,
            _ => 1,
        }
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        self.launch.buffer(Role::Clocks)?;
        args::clock_from_records(&self.read(Role::Clocks).ok()?)
    }

    /// The records as the sample's last launch left them: a read-back of a few words per
    /// block between two samples, outside both samples' events.
    fn sample_clock_mhz(&mut self) -> Option<f64> {
        self.clock_mhz()
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        crate::cases::has_arithmetic_theory(&self.case)
            .then(|| {
                plan::theory_gflops(
                    &self.backend.info,
                    self.backend.compute_capability,
                    self.case.precision,
                    clock_mhz,
                )
            })
            .flatten()
    }
}
