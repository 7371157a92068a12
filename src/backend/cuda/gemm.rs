//! GEMM on a CUDA device: what the GEMM rows need of the driver beyond [`super::GpuCase`].
//!
//! - Our PTX kernels (`kernels/gemm.ptx.in`) run as every other case does, from their launch
//!   description ([`crate::backend::cuda::describe::launch`]); they need 64 KiB of dynamic shared memory,
//!   above the 48 KiB a function gets by default, so [`raise_dynamic_shared`] sets
//!   `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` on the function before its first launch.
//! - cuBLAS rows ([`prepare_cublas`]) run on exactly the arrays the PTX case of the same shape
//!   and precision allocates and fills (A and B padded to rows of a multiple of 8 elements, C
//!   poisoned), through `cublasGemmEx` (bf16 or f16 in with f32 compute; tf32 as f32 in with
//!   `CUBLAS_COMPUTE_32F_FAST_TF32`; f32 in with plain `CUBLAS_COMPUTE_32F`, no tensor-core
//!   shortcut, beside our SIMT kernel; f32 output) on the backend's
//!   stream, timed by the same events, and checked by the same check. Without cuBLAS
//!   ([`crate::backend::cuda::cublas`]) the row says `skipped: <why>`.
//! - The fp8 (e4m3) reference runs on the arrays of Hopper's TMA kernel (rows padded to 16
//!   bytes) through cuBLASLt (`cublasLtMatmul`, which fp8 needs: `cublasGemmEx` has none), TN,
//!   f32 compute and output, no scaling factors, the first algorithm cuBLASLt's heuristic gives
//!   with up to [`LT_WORKSPACE_BYTES`] of workspace; without cuBLASLt or an fp8 algorithm the
//!   row says `skipped: <why>`.
//!
//! - A batch-sweep shape planned with copies of B ([`crate::cases::gemm::rotate_weights`],
//!   [`crate::backend::cuda::args::Rotation`]) reads them in turn, one per launch, in our kernel's
//!   row (its B pointer, or the TMA kernel's tensor map, one encoded per copy) and in cuBLAS's
//!   (its B address): each launch reads its weight from memory, not from the L2. The copies
//!   are made on the device from the first.
//!
//! A child module of `cuda.rs` (it uses the backend's context, stream and health directly), kept
//! in its own file so the GEMM's driver code stays apart from the rest.
//!
//! None of this has run on a GPU yet: it is written against cudarc's and cuBLAS's documented
//! interfaces and checked only by the compiler here.

use super::{CudaBackend, GpuCase};
use crate::backend::cuda::args::{Launch, Role};
use crate::backend::cuda::cublas::{self, CublasHandle, LtFp8Gemm};
use crate::backend::PreparedCase;
use crate::cases::{gemm, Case, Precision, Verdict};
use crate::{Error, Result};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice};
use std::mem::ManuallyDrop;

/// Dynamic shared memory a function may use without raising its limit.
pub const DEFAULT_DYNAMIC_SHARED_BYTES: u32 = 48 << 10;

/// Raises `func`'s dynamic shared memory limit to what `launch` needs, where its static and
/// dynamic shared memory together are above the default (which bounds their sum: a launch past
/// it without the opt-in is refused).
pub(super) fn raise_dynamic_shared(
    backend: &CudaBackend,
    func: &CudaFunction,
    launch: &Launch,
) -> Result<()> {
    let bytes = launch.dynamic_shared_bytes;
    if bytes == 0 {
        return Ok(());
    }
    let name = &launch.entry.name;
    let static_bytes = backend.call(&format!("reading {name}'s static shared memory"), || {
        backend.ctx.bind_to_thread()?;
        func.get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
    })?;
    if !needs_shared_opt_in(u32::try_from(static_bytes).unwrap_or(0), bytes) {
        return Ok(());
    }
    let value = i32::try_from(bytes)
        .map_err(|_| Error::Internal(format!("{bytes} bytes of shared memory")))?;
    backend.call(
        &format!("allowing {name} {bytes} bytes of dynamic shared memory"),
        || {
            backend.ctx.bind_to_thread()?;
            func.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                value,
            )
        },
    )
}

/// Whether a launch of `dynamic` bytes of dynamic shared memory, beside the kernel's `static`
/// bytes, must raise the function's limit first: their sum above the default 48 KiB.
pub fn needs_shared_opt_in(static_bytes: u32, dynamic: u32) -> bool {
    u64::from(static_bytes) + u64::from(dynamic) > u64::from(DEFAULT_DYNAMIC_SHARED_BYTES)
}

/// cuBLAS's input and compute types for a GEMM precision: bf16 or f16 in with f32 compute;
/// tf32 as f32 in with `CUBLAS_COMPUTE_32F_FAST_TF32` (the inputs rounded to tf32 for the
/// tensor cores, f32 accumulation), the same work as our tf32 kernel; f32 in with
/// `CUBLAS_COMPUTE_32F` (f32 products and sums, which cuBLAS may not round to tf32: the FFMA
/// work of our SIMT kernel).
fn cublas_types(precision: Precision) -> Option<(i32, i32)> {
    match precision {
        Precision::Bf16F32 => Some((cublas::R_16BF, cublas::COMPUTE_32F)),
        Precision::F16F32 => Some((cublas::R_16F, cublas::COMPUTE_32F)),
        Precision::Tf32F32 => Some((cublas::R_32F, cublas::COMPUTE_32F_FAST_TF32)),
        gemm::SIMT_PRECISION => Some((cublas::R_32F, cublas::COMPUTE_32F)),
        _ => None,
    }
}

/// How a reference row computes: `cublasGemmEx` on a handle, or a cuBLASLt fp8 product and
/// its workspace.
enum Reference {
    GemmEx {
        handle: CublasHandle,
        input_type: i32,
        compute_type: i32,
    },
    Fp8 {
        gemm: Box<LtFp8Gemm>,
        workspace: CudaSlice<u8>,
    },
}

/// Workspace offered to cuBLASLt's fp8 algorithms (a split-K algorithm may use it).
pub const LT_WORKSPACE_BYTES: usize = 32 << 20;

/// A cuBLAS row: the arrays (and events) of our kernel's case of the same shape, and what runs
/// the product.
struct CublasCase<'b> {
    inner: GpuCase<'b>,
    /// Dropped only while the device has no runaway work (below).
    reference: ManuallyDrop<Reference>,
    shape: gemm::Shape,
    lda: u64,
    ldb: u64,
    version: &'static str,
}

/// Our kernel whose arrays a reference row of `precision` uses: the PTX kernel's, or for fp8
/// (which only Hopper's TMA kernel takes) the TMA kernel's.
fn ours_for(precision: Precision) -> &'static str {
    if precision == Precision::E4m3F32 {
        gemm::GPU_TMA
    } else {
        gemm::GPU_OURS
    }
}

/// Prepares a cuBLAS row, or `Error::Skipped` saying why there is no cuBLAS (or, for fp8, no
/// cuBLASLt).
pub(super) fn prepare_cublas<'b>(
    backend: &'b CudaBackend,
    case: &Case,
) -> Result<Box<dyn PreparedCase + 'b>> {
    let found = match cublas::get() {
        Ok(found) => found,
        Err(why) => return Err(Error::Skipped(why.clone())),
    };
    let fp8 = case.precision == Precision::E4m3F32;
    let types = cublas_types(case.precision);
    if !fp8 && types.is_none() {
        return Err(Error::Usage(format!(
            "no cuBLAS GEMM for {}",
            case.precision
        )));
    }
    let shape = gemm::shape_of(case).map_err(Error::Usage)?;
    let lda = gemm::gpu_leading_dimension(case.precision, shape.k);
    let ldb = lda;
    // The same arrays as our kernel's row: its launch description, allocated and filled (our
    // kernel itself is not loaded: a JIT that refuses it leaves this row standing).
    let mut ours = case.clone();
    ours.kernel = ours_for(case.precision).to_string();
    let inner = GpuCase::arrays_only(backend, &ours)?;
    backend.call("binding the context for cuBLAS", || {
        backend.ctx.bind_to_thread()
    })?;
    let reference = match types {
        Some((input_type, compute_type)) => {
            let stream = backend.stream.cu_stream() as *mut std::ffi::c_void;
            // SAFETY: the stream is the backend's live stream; its context is bound above.
            let handle = unsafe { found.handle(stream) }.map_err(|message| Error::Driver {
                during: "creating a cuBLAS handle".into(),
                message,
            })?;
            Reference::GemmEx {
                handle,
                input_type,
                compute_type,
            }
        }
        None => {
            // SAFETY: the context is bound above.
            let gemm = match unsafe {
                found.fp8_gemm(shape.m, shape.n, shape.k, lda, ldb, LT_WORKSPACE_BYTES)
            } {
                Ok(g) => g,
                // no cuBLASLt, or no fp8 algorithm for this device and shape: a reason, no row
                Err(why) => return Err(Error::Skipped(why)),
            };
            let workspace = backend.call("allocating cuBLASLt's workspace", || {
                backend
                    .stream
                    .alloc_zeros::<u8>(gemm.workspace_bytes.max(1))
            })?;
            Reference::Fp8 {
                gemm: Box::new(gemm),
                workspace,
            }
        }
    };
    Ok(Box::new(CublasCase {
        inner,
        reference: ManuallyDrop::new(reference),
        shape,
        lda,
        ldb,
        version: &found.version,
    }))
}

impl Drop for CublasCase<'_> {
    fn drop(&mut self) {
        // cublasDestroy synchronizes the whole device (the cuBLAS documentation of it), and
        // cublasLtDestroy may: after a runaway batch that would wait for the runaway kernel
        // forever, and the worker would never reach its exit. Leaked then, like the arrays of
        // every case (`GpuCase`'s drop); the worker's process ends at once anyway.
        if !self.inner.backend.health.runaway() {
            // SAFETY: dropped once, here, and not used after.
            unsafe { ManuallyDrop::drop(&mut self.reference) }
        }
    }
}

impl CublasCase<'_> {
    /// The device address of the array of `role`.
    fn address(&self, role: Role) -> Result<u64> {
        let stream = &*self.inner.backend.stream;
        Ok(self.inner.array(role)?.address(stream))
    }

    /// The device address of each copy of B, in turn ([`crate::backend::cuda::args::Rotation`]):
    /// a decode step's weight rotates as in our kernel's row, one copy per launch.
    fn b_addresses(&self) -> Result<Vec<u64>> {
        let stream = &*self.inner.backend.stream;
        (0..self.inner.launch.copies_of(Role::Input(1)))
            .map(|copy| Ok(self.inner.copy(Role::Input(1), copy)?.address(stream)))
            .collect()
    }

    /// What runs the product, for the messages.
    fn call_name(&self) -> &'static str {
        match *self.reference {
            Reference::GemmEx { .. } => "cublasGemmEx",
            Reference::Fp8 { .. } => "cublasLtMatmul",
        }
    }
}

impl PreparedCase for CublasCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let during = format!("running {} on {}", self.call_name(), self.shape);
        let (a, bs, c) = (
            self.address(Role::Input(0))?,
            self.b_addresses()?,
            self.address(Role::Output)?,
        );
        let first = self.inner.take_copies(reps);
        let (m, n, k) = (self.shape.m, self.shape.n, self.shape.k);
        let int = |v: u64| {
            i32::try_from(v).map_err(|_| Error::Usage(format!("{v} does not fit cuBLAS's int")))
        };
        let (m, n, k, lda, ldb) = (int(m)?, int(n)?, int(k)?, int(self.lda)?, int(self.ldb)?);
        let backend = self.inner.backend;
        let (start, end) = &*self.inner.events;
        let stream = &*backend.stream;
        let workspace = match &*self.reference {
            Reference::Fp8 { workspace, .. } => {
                use cudarc::driver::DevicePtr;
                workspace.device_ptr(stream).0
            }
            Reference::GemmEx { .. } => 0,
        };
        backend.call(&during, || start.record(stream))?;
        for r in 0..u64::from(reps) {
            let b = bs[((first + r) % bs.len() as u64) as usize];
            // SAFETY: a, b and c are the device arrays of this case's launch description, of
            // m × lda, n × ldb and m × n elements (b any copy of B, each as large); the
            // handle's stream is the backend's; the workspace is at least what the fp8
            // algorithm asked for.
            let result = unsafe {
                match &*self.reference {
                    Reference::GemmEx {
                        handle,
                        input_type,
                        compute_type,
                    } => handle.gemm_tn(m, n, k, *input_type, *compute_type, a, lda, b, ldb, c),
                    Reference::Fp8 { gemm, .. } => gemm.run(
                        a,
                        b,
                        c,
                        workspace,
                        stream.cu_stream() as *mut std::ffi::c_void,
                    ),
                }
            };
            result.map_err(|message| Error::Driver {
                during: during.clone(),
                message,
            })?;
        }
        backend.call(&during, || end.record(stream))?;
        // The batch's runaway deadline follows the case, as for every kernel (cuda.rs).
        let deadline = super::batch_deadline(self.inner.per_launch_secs, reps, backend.deadline);
        self.inner.wait(end, self.call_name(), &during, deadline)?;
        let ms = backend.call(&during, || start.elapsed_ms(end))?;
        let secs = ms as f64 / 1e3;
        self.inner.per_launch_secs = Some(secs / f64::from(reps.max(1)));
        Ok(secs)
    }

    fn verify(&mut self) -> Result<Verdict> {
        self.inner.verify()
    }

    fn launch_note(&self) -> String {
        let rotation = self
            .inner
            .launch
            .rotation
            .map(|r| format!(", {}", r.note()))
            .unwrap_or_default();
        let note = match &*self.reference {
            Reference::GemmEx { compute_type, .. } => format!(
                "cublasGemmEx TN, {} compute, cuBLAS {}, lda = ldb = {}",
                if *compute_type == cublas::COMPUTE_32F_FAST_TF32 {
                    "f32 (fast tf32)"
                } else {
                    "f32"
                },
                self.version,
                self.lda
            ),
            Reference::Fp8 { gemm, .. } => format!(
                "cublasLtMatmul TN, e4m3 in, f32 compute and out, no scaling, heuristic's \
                 first algorithm ({} bytes of workspace), cuBLAS {}, lda = ldb = {}",
                gemm.workspace_bytes, self.version, self.lda
            ),
        };
        note + &rotation
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        self.inner.theory_gflops(clock_mhz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each PTX GEMM's cuBLAS row does the same work: bf16/f16 in with f32 compute, tf32 with the
    /// fast-tf32 compute type, the SIMT kernel's f32 with plain f32 compute (no tf32 shortcut).
    #[test]
    fn cublas_types_match_our_kernels_work() {
        assert_eq!(
            cublas_types(gemm::SIMT_PRECISION),
            Some((cublas::R_32F, cublas::COMPUTE_32F))
        );
        assert_eq!(
            cublas_types(Precision::Tf32F32),
            Some((cublas::R_32F, cublas::COMPUTE_32F_FAST_TF32))
        );
        for p in gemm::GPU_PRECISIONS {
            assert!(cublas_types(p).is_some(), "{p} has no cuBLAS reference");
        }
        assert_eq!(cublas_types(Precision::F64), None);
        // fp8 has no cublasGemmEx: cuBLASLt, on the arrays of the TMA kernel (the only one
        // that takes e4m3)
        assert_eq!(cublas_types(Precision::E4m3F32), None);
        assert_eq!(ours_for(Precision::E4m3F32), gemm::GPU_TMA);
        assert_eq!(ours_for(Precision::Bf16F32), gemm::GPU_OURS);
    }

    /// The 48 KiB default bounds static and dynamic shared memory together: a kernel with
    /// static shared memory must opt in for less dynamic memory than one without.
    #[test]
    fn the_shared_memory_opt_in_counts_static_bytes_too() {
        let limit = DEFAULT_DYNAMIC_SHARED_BYTES;
        assert!(!needs_shared_opt_in(0, limit));
        assert!(needs_shared_opt_in(0, limit + 1));
        assert!(!needs_shared_opt_in(16 << 10, limit - (16 << 10)));
        assert!(needs_shared_opt_in(16 << 10, limit - (16 << 10) + 1));
        assert!(needs_shared_opt_in(16 << 10, 40 << 10));
        assert!(!needs_shared_opt_in(limit, 0));
    }
}
