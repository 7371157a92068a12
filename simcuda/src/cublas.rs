//! A simulated cuBLAS and cuBLASLt: the entry points roofprobe's GEMM reference rows call
//! (`cublasCreate_v2`, `cublasDestroy_v2`, `cublasSetStream_v2`, `cublasGetProperty`,
//! `cublasGemmEx`, and cuBLASLt's handle, matmul descriptor, matrix layout, preference,
//! heuristic and `cublasLtMatmul`), so that the cuBLAS rows of a simulated run go through the
//! same calls, arguments and stream order as on a GPU, and their output is checked like ours.
//!
//! They live in libsimcuda.so itself (one library, one device memory): a process sees them as
//! cuBLAS only where a test, or `scripts/sim-cuda`, links `libcublas.so.13`/`.12`/`.so` and
//! `libcublasLt.so.13`/`.12`/`.so` to it beside the `libcuda` links.
//!
//! The semantics are cuBLAS's documented ones, held strictly (the cuBLAS Library documentation,
//! "cublasGemmEx" and "cuBLASLt API Reference"):
//! - column-major matrices: `op(A)` is m × k, `op(B)` k × n, C m × n; A is stored m × k when
//!   not transposed (lda ≥ m) and k × m when it is (lda ≥ k), B likewise (ldb ≥ k or n),
//!   ldc ≥ m; a leading dimension too small is `CUBLAS_STATUS_INVALID_VALUE`;
//! - `cublasGemmEx` with `CUBLAS_COMPUTE_32F` takes bf16, f16 or f32 inputs (both the same
//!   type), and with `CUBLAS_COMPUTE_32F_FAST_TF32` f32 inputs, which it rounds to tf32 (here to
//!   nearest, ties away from zero); alpha and beta are host f32 read at the call; C is read
//!   only when beta is not 0;
//! - cuBLASLt's fp8 product needs compute capability 8.9 or newer, `CUBLAS_COMPUTE_32F` with an
//!   f32 scale, e4m3 or e5m2 inputs (not both e5m2), A transposed and B not (the "TN" form),
//!   and leading dimensions of A and B that are multiples of 16 bytes; anything else gets no
//!   algorithm (`CUBLAS_STATUS_NOT_SUPPORTED`, none returned);
//! - an algorithm is only good for the problem its heuristic was asked about, with at least
//!   the workspace it said it needs: `cublasLtMatmul` refuses another
//!   (`CUBLAS_STATUS_INVALID_VALUE`);
//! - every handle, descriptor, layout and preference is checked live at each use: a destroyed
//!   one is refused, as a sanitizer would;
//! - the work runs when the stream reaches it, on the device's memory: an array that is freed
//!   by then, or too small for its leading dimension, faults the context
//!   (`CUDA_ERROR_ILLEGAL_ADDRESS`, sticky) as a kernel would; on a faulted context a call
//!   returns `CUBLAS_STATUS_EXECUTION_FAILED`.
//!
//! What it does not simulate it refuses, saying so on stderr: other data and compute types,
//! outputs other than f32, other matmul attributes (epilogues, scaling factors), device
//! pointer mode. The sums are f32, in order of k: a real cuBLAS sums in another order, so
//! only exact inputs (which roofprobe's are) give the same bits. Its version
//! (`cublasGetProperty`) is simcuda's own, 0.1.0.

use crate::driver::{code, try_driver, HostWork};
use ptxsim::numeric::{f32_to_tf32_bits, half_to_f64, Rounding, E4M3, E5M2};
use ptxsim::{DevicePtr, Memory};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// `cublasStatus_t` (cublas_api.h).
pub mod status {
    pub const SUCCESS: i32 = 0;
    pub const NOT_INITIALIZED: i32 = 1;
    pub const INVALID_VALUE: i32 = 7;
    pub const EXECUTION_FAILED: i32 = 13;
    pub const INTERNAL_ERROR: i32 = 14;
    pub const NOT_SUPPORTED: i32 = 15;
}

/// `cublasOperation_t`: N, T, and C (the conjugate transpose: T for real types).
const OP_N: i32 = 0;
const OP_T: i32 = 1;
const OP_C: i32 = 2;

/// `cudaDataType_t` (library_types.h).
pub const R_32F: i32 = 0;
pub const R_16F: i32 = 2;
pub const R_16BF: i32 = 14;
pub const R_8F_E4M3: i32 = 28;
pub const R_8F_E5M2: i32 = 29;

/// `cublasComputeType_t`.
pub const COMPUTE_32F: i32 = 68;
pub const COMPUTE_32F_FAST_TF32: i32 = 77;

/// `cublasLtMatmulDescAttributes_t` this simulation takes.
const DESC_COMPUTE_TYPE: i32 = 0;
const DESC_SCALE_TYPE: i32 = 1;
const DESC_TRANSA: i32 = 3;
const DESC_TRANSB: i32 = 4;
/// `cublasLtMatmulPreferenceAttributes_t` this simulation takes.
const PREF_SEARCH_MODE: i32 = 0;
const PREF_MAX_WORKSPACE_BYTES: i32 = 1;

/// `cublasGetProperty`'s major, minor and patch: simcuda's own version, never a cuBLAS one.
pub const VERSION: [i32; 3] = [0, 1, 0];

/// Workspace the simulated fp8 algorithm asks for (at most the preference's limit), so that the
/// caller's workspace is exercised: its size passed on, its memory live when the product runs.
pub const LT_WORKSPACE: u64 = 4096;

/// The first word of every algorithm this heuristic hands out.
const ALGO_MAGIC: u64 = 0x5349_4d43_424c_4153; // "SIMCBLAS"

/// `cublasLtMatmulAlgo_t`: 8 opaque words.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Algo {
    pub data: [u64; 8],
}

/// `cublasLtMatmulHeuristicResult_t` (96 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicResult {
    pub algo: Algo,
    pub workspace_size: usize,
    pub state: i32,
    pub waves_count: f32,
    pub reserved: [i32; 4],
}

const _: () = assert!(std::mem::size_of::<HeuristicResult>() == 96);

/// A live object behind an opaque handle.
#[derive(Clone, Debug)]
enum Object {
    /// A cuBLAS handle and the stream its work goes on.
    Blas {
        stream: u64,
    },
    Lt,
    Desc(Desc),
    Layout(Layout),
    Preference {
        max_workspace: u64,
    },
}

#[derive(Clone, Copy, Debug)]
struct Desc {
    compute: i32,
    scale: i32,
    trans_a: bool,
    trans_b: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Layout {
    ty: i32,
    rows: u64,
    cols: u64,
    ld: u64,
}

/// Handles are never reused, far from the driver's and from any host pointer.
static NEXT: AtomicU64 = AtomicU64::new(0x6262_0000_0000);
static OBJECTS: Mutex<Option<HashMap<u64, Object>>> = Mutex::new(None);

fn objects() -> MutexGuard<'static, Option<HashMap<u64, Object>>> {
    OBJECTS.lock().unwrap_or_else(|e| e.into_inner())
}

fn create(o: Object) -> u64 {
    let h = NEXT.fetch_add(16, Ordering::Relaxed);
    objects().get_or_insert_with(HashMap::new).insert(h, o);
    h
}

fn get(h: *mut c_void) -> Option<Object> {
    objects().as_ref()?.get(&(h as u64)).cloned()
}

fn destroy(h: *mut c_void, is_kind: fn(&Object) -> bool) -> Result<(), i32> {
    let mut guard = objects();
    let map = guard.get_or_insert_with(HashMap::new);
    match map.get(&(h as u64)) {
        Some(o) if is_kind(o) => {
            map.remove(&(h as u64));
            Ok(())
        }
        _ => Err(status::INVALID_VALUE),
    }
}

/// Runs an entry point: its `Err(status)`, and a panic (as `CUBLAS_STATUS_INTERNAL_ERROR`),
/// become the status.
fn blas(name: &str, f: impl FnOnce() -> Result<(), i32>) -> i32 {
    crate::guarded(name, status::SUCCESS, status::INTERNAL_ERROR, f)
}

/// What this simulation refuses though a real cuBLAS may take it: said on stderr.
fn not_simulated(what: String) -> i32 {
    eprintln!("simcuda's cuBLAS does not simulate {what}");
    status::NOT_SUPPORTED
}

/// Writes `v` through `out`, refusing a null pointer (`CUBLAS_STATUS_INVALID_VALUE`).
unsafe fn put<T>(out: *mut T, v: T) -> Result<(), i32> {
    unsafe { crate::put_or(out, v, status::INVALID_VALUE) }
}

fn transposed(op: i32) -> Result<bool, i32> {
    match op {
        OP_N => Ok(false),
        OP_T | OP_C => Ok(true),
        _ => Err(status::INVALID_VALUE),
    }
}

fn element_bytes(ty: i32) -> Option<u64> {
    match ty {
        R_32F => Some(4),
        R_16F | R_16BF => Some(2),
        R_8F_E4M3 | R_8F_E5M2 => Some(1),
        _ => None,
    }
}

/// The values of `raw` (elements of `ty`, little-endian), each exact in f32.
fn decode(ty: i32, raw: &[u8]) -> Vec<f32> {
    match ty {
        R_32F => raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        R_16F | R_16BF => raw
            .chunks_exact(2)
            .map(|c| half_to_f64(u16::from_le_bytes([c[0], c[1]]), ty == R_16BF) as f32)
            .collect(),
        R_8F_E4M3 => raw.iter().map(|&b| E4M3.to_f64(b.into()) as f32).collect(),
        R_8F_E5M2 => raw.iter().map(|&b| E5M2.to_f64(b.into()) as f32).collect(),
        _ => unreachable!("types are checked when the call is made"),
    }
}

/// An input matrix as the call describes it: `op(X)` is rows × cols.
#[derive(Clone, Copy, Debug)]
struct Operand {
    ptr: u64,
    ty: i32,
    ld: u64,
    trans: bool,
}

impl Operand {
    /// The stored matrix's rows and columns for `op(X)` of rows × cols.
    fn stored(&self, rows: u64, cols: u64) -> (u64, u64) {
        if self.trans {
            (cols, rows)
        } else {
            (rows, cols)
        }
    }

    /// `op(X)` (rows × cols, both non-zero) read from device memory, row-major.
    fn read(&self, mem: &Memory, rows: u64, cols: u64, what: &str) -> Result<Vec<f32>, String> {
        let (sr, sc) = self.stored(rows, cols);
        let extent = (sc - 1) * self.ld + sr;
        let bytes = extent * element_bytes(self.ty).expect("a checked type");
        let raw = mem
            .read::<u8>(DevicePtr(self.ptr), bytes as usize)
            .map_err(|e| format!("{what} ({bytes} bytes at {:#x}): {e}", self.ptr))?;
        let v = decode(self.ty, &raw);
        let (rows, cols, ld) = (rows as usize, cols as usize, self.ld as usize);
        let mut out = Vec::with_capacity(rows * cols);
        for r in 0..rows {
            for c in 0..cols {
                out.push(if self.trans {
                    v[c + r * ld]
                } else {
                    v[r + c * ld]
                });
            }
        }
        Ok(out)
    }
}

/// `D = alpha · op(A) · op(B) + beta · C`, all column-major, C and D f32.
#[derive(Clone, Copy, Debug)]
struct Product {
    m: u64,
    n: u64,
    k: u64,
    a: Operand,
    b: Operand,
    alpha: f32,
    beta: f32,
    c: (u64, u64),
    d: (u64, u64),
    /// Inputs rounded to tf32 first (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    tf32: bool,
    /// Workspace the algorithm uses: (address, bytes), written as it runs.
    workspace: Option<(u64, u64)>,
}

impl Product {
    fn run(self, mem: &mut Memory) -> Result<(), String> {
        if let Some((ptr, bytes)) = self.workspace {
            mem.fill(DevicePtr(ptr), bytes as usize, 0x5a)
                .map_err(|e| format!("the workspace ({bytes} bytes at {ptr:#x}): {e}"))?;
        }
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        if m == 0 || n == 0 {
            return Ok(());
        }
        let tf32 = |v: Vec<f32>| -> Vec<f32> {
            if !self.tf32 {
                return v;
            }
            v.into_iter()
                .map(|x| {
                    f32::from_bits(f32_to_tf32_bits(x.to_bits(), Rounding::NearestAway, false))
                })
                .collect()
        };
        let (a, bt) = if k == 0 {
            (Vec::new(), Vec::new())
        } else {
            let a = tf32(self.a.read(mem, self.m, self.k, "A")?);
            // op(B) as n × k, each column of op(B) contiguous
            let b = tf32(self.b.read(mem, self.k, self.n, "B")?);
            let mut bt = vec![0f32; n * k];
            for l in 0..k {
                for j in 0..n {
                    bt[j * k + l] = b[l * n + j];
                }
            }
            (a, bt)
        };
        let column = |ptr: u64, ld: u64, j: usize| DevicePtr(ptr + j as u64 * ld * 4);
        for j in 0..n {
            let old = if self.beta != 0.0 {
                mem.read::<f32>(column(self.c.0, self.c.1, j), m)
                    .map_err(|e| format!("C's column {j}: {e}"))?
            } else {
                Vec::new()
            };
            let mut out = Vec::with_capacity(m);
            for i in 0..m {
                let row = &a[i * k..(i + 1) * k];
                let col = &bt[j * k..(j + 1) * k];
                let mut acc = 0f32;
                for (x, y) in row.iter().zip(col) {
                    acc = x.mul_add(*y, acc);
                }
                let mut v = self.alpha * acc;
                if self.beta != 0.0 {
                    v = self.beta.mul_add(old[i], v);
                }
                out.push(v);
            }
            mem.write(column(self.d.0, self.d.1, j), &out)
                .map_err(|e| format!("D's column {j}: {e}"))?;
        }
        Ok(())
    }
}

/// Queues `p` on `stream` of the current context.
fn enqueue(name: &str, stream: u64, p: Product) -> Result<(), i32> {
    let d = try_driver().map_err(|_| status::NOT_INITIALIZED)?;
    let work: HostWork = Box::new(move |mem| p.run(mem));
    let what = format!(
        "{name} {}x{}x{} a {:#x} b {:#x} c {:#x}",
        p.m, p.n, p.k, p.a.ptr, p.b.ptr, p.c.0
    );
    d.enqueue_host(stream, what, work).map_err(|c| {
        if c != code::ILLEGAL_ADDRESS {
            eprintln!("simcuda: {name} could not be queued (CUresult {c})");
        }
        status::EXECUTION_FAILED
    })
}

/// Reads a host f32 scalar (alpha or beta, host pointer mode).
unsafe fn scalar(p: *const c_void) -> Result<f32, i32> {
    if p.is_null() {
        return Err(status::INVALID_VALUE);
    }
    Ok(unsafe { (p as *const f32).read_unaligned() })
}

// ---- cuBLAS -----------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cublasCreate_v2(handle: *mut *mut c_void) -> i32 {
    blas("cublasCreate_v2", || {
        let d = try_driver().map_err(|_| status::NOT_INITIALIZED)?;
        if d.current().is_err() {
            eprintln!("simcuda's cuBLAS: cublasCreate with no current context");
            return Err(status::NOT_INITIALIZED);
        }
        let h = create(Object::Blas { stream: 0 });
        unsafe { put(handle, h as *mut c_void) }
    })
}

/// What cublasDestroy does before it releases a handle ("will implicitly call
/// cudaDeviceSynchronize()", the cuBLAS documentation of cublasDestroy), and cublasLtDestroy
/// here too (held to the stricter reading): wait for every stream of the current context, a
/// kernel that never ends included. The outcome is not theirs to report.
fn synchronize_device() {
    if let Ok(d) = try_driver() {
        let _ = d.synchronize_context();
    }
}

#[no_mangle]
pub unsafe extern "C" fn cublasDestroy_v2(handle: *mut c_void) -> i32 {
    blas("cublasDestroy_v2", || {
        synchronize_device();
        destroy(handle, |o| matches!(o, Object::Blas { .. })).map_err(|_| status::NOT_INITIALIZED)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasSetStream_v2(handle: *mut c_void, stream: *mut c_void) -> i32 {
    blas("cublasSetStream_v2", || {
        let mut guard = objects();
        match guard.as_mut().and_then(|m| m.get_mut(&(handle as u64))) {
            Some(Object::Blas { stream: s }) => {
                *s = stream as u64;
                Ok(())
            }
            _ => Err(status::NOT_INITIALIZED),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasGetProperty(kind: i32, value: *mut i32) -> i32 {
    blas("cublasGetProperty", || {
        let v = *VERSION
            .get(usize::try_from(kind).map_err(|_| status::INVALID_VALUE)?)
            .ok_or(status::INVALID_VALUE)?;
        unsafe { put(value, v) }
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cublasGemmEx(
    handle: *mut c_void,
    transa: i32,
    transb: i32,
    m: i32,
    n: i32,
    k: i32,
    alpha: *const c_void,
    a: *const c_void,
    a_type: i32,
    lda: i32,
    b: *const c_void,
    b_type: i32,
    ldb: i32,
    beta: *const c_void,
    c: *mut c_void,
    c_type: i32,
    ldc: i32,
    compute: i32,
    algo: i32,
) -> i32 {
    blas("cublasGemmEx", || {
        let Some(Object::Blas { stream }) = get(handle) else {
            return Err(status::NOT_INITIALIZED);
        };
        let (ta, tb) = (transposed(transa)?, transposed(transb)?);
        let dims = [m, n, k, lda, ldb, ldc].map(i64::from);
        if dims.iter().any(|&v| v < 0) {
            return Err(status::INVALID_VALUE);
        }
        let [m, n, k, lda, ldb, ldc] = dims.map(|v| v as u64);
        let need_a = if ta { k } else { m };
        let need_b = if tb { n } else { k };
        if lda < need_a.max(1) || ldb < need_b.max(1) || ldc < m.max(1) {
            return Err(status::INVALID_VALUE);
        }
        // cublasGemmAlgo_t: the default, the numbered algorithms and their tensor-op forms
        if !(algo == -1 || (0..=23).contains(&algo) || (99..=115).contains(&algo)) {
            return Err(status::INVALID_VALUE);
        }
        let supported = match compute {
            COMPUTE_32F => a_type == b_type && matches!(a_type, R_16BF | R_16F | R_32F),
            COMPUTE_32F_FAST_TF32 => a_type == R_32F && b_type == R_32F,
            _ => false,
        };
        if !supported {
            return Err(not_simulated(format!(
                "cublasGemmEx with compute type {compute} and input types {a_type}, {b_type}"
            )));
        }
        if c_type != R_32F {
            return Err(not_simulated(format!(
                "cublasGemmEx with output type {c_type}"
            )));
        }
        let (alpha, beta) = unsafe { (scalar(alpha)?, scalar(beta)?) };
        let p = Product {
            m,
            n,
            k,
            a: Operand {
                ptr: a as u64,
                ty: a_type,
                ld: lda,
                trans: ta,
            },
            b: Operand {
                ptr: b as u64,
                ty: b_type,
                ld: ldb,
                trans: tb,
            },
            alpha,
            beta,
            c: (c as u64, ldc),
            d: (c as u64, ldc),
            tf32: compute == COMPUTE_32F_FAST_TF32,
            workspace: None,
        };
        enqueue("cublasGemmEx", stream, p)
    })
}

// ---- cuBLASLt ---------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cublasLtCreate(handle: *mut *mut c_void) -> i32 {
    blas("cublasLtCreate", || {
        try_driver().map_err(|_| status::NOT_INITIALIZED)?;
        unsafe { put(handle, create(Object::Lt) as *mut c_void) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasLtDestroy(handle: *mut c_void) -> i32 {
    blas("cublasLtDestroy", || {
        synchronize_device();
        destroy(handle, |o| matches!(o, Object::Lt)).map_err(|_| status::NOT_INITIALIZED)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulDescCreate(
    desc: *mut *mut c_void,
    compute: i32,
    scale: i32,
) -> i32 {
    blas("cublasLtMatmulDescCreate", || {
        let h = create(Object::Desc(Desc {
            compute,
            scale,
            trans_a: false,
            trans_b: false,
        }));
        unsafe { put(desc, h as *mut c_void) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulDescDestroy(desc: *mut c_void) -> i32 {
    blas("cublasLtMatmulDescDestroy", || {
        destroy(desc, |o| matches!(o, Object::Desc(_)))
    })
}

/// An attribute's value: an `int32_t` (or `uint64_t` where `wide`) of exactly its size.
unsafe fn attribute(buf: *const c_void, size: usize, wide: bool) -> Result<i64, i32> {
    if buf.is_null() {
        return Err(status::INVALID_VALUE);
    }
    match (wide, size) {
        (false, 4) => Ok(i64::from(unsafe { (buf as *const i32).read_unaligned() })),
        (true, 8) => Ok(unsafe { (buf as *const u64).read_unaligned() } as i64),
        _ => Err(status::INVALID_VALUE),
    }
}

#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulDescSetAttribute(
    desc: *mut c_void,
    attr: i32,
    buf: *const c_void,
    size: usize,
) -> i32 {
    blas("cublasLtMatmulDescSetAttribute", || {
        let mut guard = objects();
        let Some(Object::Desc(d)) = guard.as_mut().and_then(|m| m.get_mut(&(desc as u64))) else {
            return Err(status::INVALID_VALUE);
        };
        match attr {
            DESC_COMPUTE_TYPE => d.compute = unsafe { attribute(buf, size, false)? } as i32,
            DESC_SCALE_TYPE => d.scale = unsafe { attribute(buf, size, false)? } as i32,
            DESC_TRANSA => d.trans_a = transposed(unsafe { attribute(buf, size, false)? } as i32)?,
            DESC_TRANSB => d.trans_b = transposed(unsafe { attribute(buf, size, false)? } as i32)?,
            _ => return Err(not_simulated(format!("matmul descriptor attribute {attr}"))),
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasLtMatrixLayoutCreate(
    layout: *mut *mut c_void,
    ty: i32,
    rows: u64,
    cols: u64,
    ld: i64,
) -> i32 {
    blas("cublasLtMatrixLayoutCreate", || {
        if element_bytes(ty).is_none() {
            return Err(not_simulated(format!("matrices of data type {ty}")));
        }
        // column-major (the default order): ld ≥ rows
        let ld = u64::try_from(ld).map_err(|_| status::INVALID_VALUE)?;
        if ld < rows.max(1) {
            return Err(status::INVALID_VALUE);
        }
        let h = create(Object::Layout(Layout { ty, rows, cols, ld }));
        unsafe { put(layout, h as *mut c_void) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasLtMatrixLayoutDestroy(layout: *mut c_void) -> i32 {
    blas("cublasLtMatrixLayoutDestroy", || {
        destroy(layout, |o| matches!(o, Object::Layout(_)))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulPreferenceCreate(pref: *mut *mut c_void) -> i32 {
    blas("cublasLtMatmulPreferenceCreate", || {
        let h = create(Object::Preference { max_workspace: 0 });
        unsafe { put(pref, h as *mut c_void) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulPreferenceDestroy(pref: *mut c_void) -> i32 {
    blas("cublasLtMatmulPreferenceDestroy", || {
        destroy(pref, |o| matches!(o, Object::Preference { .. }))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulPreferenceSetAttribute(
    pref: *mut c_void,
    attr: i32,
    buf: *const c_void,
    size: usize,
) -> i32 {
    blas("cublasLtMatmulPreferenceSetAttribute", || {
        let mut guard = objects();
        let Some(Object::Preference { max_workspace }) =
            guard.as_mut().and_then(|m| m.get_mut(&(pref as u64)))
        else {
            return Err(status::INVALID_VALUE);
        };
        match attr {
            PREF_MAX_WORKSPACE_BYTES => {
                *max_workspace = unsafe { attribute(buf, size, true)? } as u64
            }
            PREF_SEARCH_MODE => {
                unsafe { attribute(buf, size, false)? };
            }
            _ => return Err(not_simulated(format!("preference attribute {attr}"))),
        }
        Ok(())
    })
}

/// The problem a descriptor and four layouts describe, checked as cuBLASLt does: m, n, k, the
/// operands and the output, or the status that refuses it.
fn problem(
    desc: *mut c_void,
    layouts: [*mut c_void; 4],
) -> Result<(Desc, u64, u64, u64, [Layout; 4]), i32> {
    let Some(Object::Desc(desc)) = get(desc) else {
        return Err(status::INVALID_VALUE);
    };
    let mut l = [Layout {
        ty: 0,
        rows: 0,
        cols: 0,
        ld: 0,
    }; 4];
    for (out, h) in l.iter_mut().zip(layouts) {
        let Some(Object::Layout(layout)) = get(h) else {
            return Err(status::INVALID_VALUE);
        };
        *out = layout;
    }
    let [a, b, c, d] = l;
    let (m, k) = if desc.trans_a {
        (a.cols, a.rows)
    } else {
        (a.rows, a.cols)
    };
    let (k2, n) = if desc.trans_b {
        (b.cols, b.rows)
    } else {
        (b.rows, b.cols)
    };
    if k != k2 || (c.rows, c.cols) != (m, n) || (d.rows, d.cols) != (m, n) {
        return Err(status::INVALID_VALUE);
    }
    Ok((desc, m, n, k, l))
}

/// Why the simulated cuBLASLt has no algorithm for this problem, if it has none.
fn no_algorithm(desc: &Desc, l: &[Layout; 4]) -> Option<String> {
    let [a, b, c, d] = l;
    let fp8 = |t: i32| matches!(t, R_8F_E4M3 | R_8F_E5M2);
    if desc.compute != COMPUTE_32F || desc.scale != R_32F {
        return Some(format!(
            "compute type {} with scale type {} (only CUBLAS_COMPUTE_32F with f32 scaling is simulated)",
            desc.compute, desc.scale
        ));
    }
    if c.ty != R_32F || d.ty != R_32F {
        return Some("outputs other than f32".into());
    }
    if fp8(a.ty) || fp8(b.ty) {
        let cc = try_driver().map(|d| d.config.cc).unwrap_or((0, 0));
        if cc < (8, 9) {
            return Some(format!("fp8 on compute capability {}.{}", cc.0, cc.1));
        }
        if !(fp8(a.ty) && fp8(b.ty)) || (a.ty == R_8F_E5M2 && b.ty == R_8F_E5M2) {
            return Some(format!("fp8 inputs of types {} and {}", a.ty, b.ty));
        }
        if !desc.trans_a || desc.trans_b {
            return Some("fp8 other than A transposed and B not (TN)".into());
        }
        if a.ld % 16 != 0 || b.ld % 16 != 0 {
            return Some(format!(
                "fp8 with leading dimensions {} and {} (multiples of 16 bytes needed)",
                a.ld, b.ld
            ));
        }
        return None;
    }
    if a.ty != b.ty || !matches!(a.ty, R_16BF | R_16F | R_32F) {
        return Some(format!("inputs of types {} and {}", a.ty, b.ty));
    }
    None
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cublasLtMatmulAlgoGetHeuristic(
    handle: *mut c_void,
    desc: *mut c_void,
    a: *mut c_void,
    b: *mut c_void,
    c: *mut c_void,
    d: *mut c_void,
    pref: *mut c_void,
    requested: i32,
    results: *mut HeuristicResult,
    returned: *mut i32,
) -> i32 {
    blas("cublasLtMatmulAlgoGetHeuristic", || {
        if !matches!(get(handle), Some(Object::Lt)) {
            return Err(status::NOT_INITIALIZED);
        }
        let Some(Object::Preference { max_workspace }) = get(pref) else {
            return Err(status::INVALID_VALUE);
        };
        if requested < 1 || results.is_null() || returned.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let (desc, m, n, k, layouts) = problem(desc, [a, b, c, d])?;
        if let Some(why) = no_algorithm(&desc, &layouts) {
            eprintln!("simcuda's cuBLASLt has no algorithm for {why}");
            unsafe { put(returned, 0)? };
            return Err(status::NOT_SUPPORTED);
        }
        let workspace = LT_WORKSPACE.min(max_workspace);
        let result = HeuristicResult {
            algo: Algo {
                data: [ALGO_MAGIC, m, n, k, workspace, 0, 0, 0],
            },
            workspace_size: workspace as usize,
            state: status::SUCCESS,
            waves_count: 1.0,
            reserved: [0; 4],
        };
        unsafe {
            put(results, result)?;
            put(returned, 1)
        }
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cublasLtMatmul(
    handle: *mut c_void,
    desc: *mut c_void,
    alpha: *const c_void,
    a: *const c_void,
    a_desc: *mut c_void,
    b: *const c_void,
    b_desc: *mut c_void,
    beta: *const c_void,
    c: *const c_void,
    c_desc: *mut c_void,
    d: *mut c_void,
    d_desc: *mut c_void,
    algo: *const Algo,
    workspace: *mut c_void,
    workspace_bytes: usize,
    stream: *mut c_void,
) -> i32 {
    blas("cublasLtMatmul", || {
        if !matches!(get(handle), Some(Object::Lt)) {
            return Err(status::NOT_INITIALIZED);
        }
        let (desc, m, n, k, l) = problem(desc, [a_desc, b_desc, c_desc, d_desc])?;
        if let Some(why) = no_algorithm(&desc, &l) {
            return Err(not_simulated(format!("cublasLtMatmul for {why}")));
        }
        if algo.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let algo = unsafe { algo.read_unaligned() };
        if algo.data[..4] != [ALGO_MAGIC, m, n, k] {
            eprintln!(
                "simcuda's cuBLASLt: an algorithm not from its heuristic for this {m}x{n}x{k} problem"
            );
            return Err(status::INVALID_VALUE);
        }
        let need = algo.data[4];
        if (workspace_bytes as u64) < need || (need > 0 && workspace.is_null()) {
            return Err(status::INVALID_VALUE);
        }
        let (alpha, beta) = unsafe { (scalar(alpha)?, scalar(beta)?) };
        let p = Product {
            m,
            n,
            k,
            a: Operand {
                ptr: a as u64,
                ty: l[0].ty,
                ld: l[0].ld,
                trans: desc.trans_a,
            },
            b: Operand {
                ptr: b as u64,
                ty: l[1].ty,
                ld: l[1].ld,
                trans: desc.trans_b,
            },
            alpha,
            beta,
            c: (c as u64, l[2].ld),
            d: (d as u64, l[3].ld),
            tf32: false,
            workspace: (need > 0).then_some((workspace as u64, need)),
        };
        enqueue("cublasLtMatmul", stream as u64, p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A column-major product through `Product::run` on the interpreter's memory: C (2 × 3) =
    /// op(A) · op(B) with A stored transposed (k × m, lda 4 > k) and B not (k × n, ldb 3),
    /// against the sums written out; the padding rows of A are never read into the result.
    #[test]
    fn a_product_follows_the_column_major_conventions() {
        let (m, n, k) = (2u64, 3u64, 3u64);
        // op(A)(i, l) = i + 10 l, stored as A[l + i * 4]; padding 99
        let mut a = vec![99f32; 4 * 2];
        for i in 0..2 {
            for l in 0..3 {
                a[l + i * 4] = (i + 10 * l) as f32;
            }
        }
        // op(B)(l, j) = l − j, stored as B[l + j * 3]
        let mut b = vec![0f32; 3 * 3];
        for l in 0..3 {
            for j in 0..3 {
                b[l + j * 3] = l as f32 - j as f32;
            }
        }
        let mut mem = Memory::new();
        let pa = mem.alloc_from(&a).addr();
        let pb = mem.alloc_from(&b).addr();
        let pc = mem.alloc_from(&[0f32; 6]).addr();
        let p = Product {
            m,
            n,
            k,
            a: Operand {
                ptr: pa,
                ty: R_32F,
                ld: 4,
                trans: true,
            },
            b: Operand {
                ptr: pb,
                ty: R_32F,
                ld: 3,
                trans: false,
            },
            alpha: 1.0,
            beta: 0.0,
            c: (pc, 2),
            d: (pc, 2),
            tf32: false,
            workspace: None,
        };
        p.run(&mut mem).unwrap();
        let c = mem.read::<f32>(DevicePtr(pc), 6).unwrap();
        for i in 0..2 {
            for j in 0..3 {
                let want: f32 = (0..3)
                    .map(|l| (i + 10 * l) as f32 * (l as f32 - j as f32))
                    .sum();
                assert_eq!(c[i + j * 2], want, "C({i}, {j})");
            }
        }
        // an A one element too short for its leading dimension ((m − 1) · lda + k = 7
        // elements) faults instead of reading on
        let short = mem.alloc_from(&a[..6]).addr();
        let mut bad = p;
        bad.a.ptr = short;
        assert!(bad.run(&mut mem).unwrap_err().contains("A"));
    }

    #[test]
    fn fp8_and_half_inputs_decode_exactly() {
        assert_eq!(decode(R_8F_E4M3, &[0x38, 0xb8, 0x7e]), [1.0, -1.0, 448.0]);
        assert_eq!(decode(R_8F_E5M2, &[0x3c]), [1.0]);
        assert_eq!(decode(R_16BF, &0x3fc0u16.to_le_bytes()), [1.5]);
        assert_eq!(decode(R_16F, &0x3e00u16.to_le_bytes()), [1.5]);
    }
}
