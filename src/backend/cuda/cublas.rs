//! cuBLAS, found and loaded at run time: the GPU GEMM's reference line.
//!
//! Why not cudarc's `cublas` feature: cudarc (0.19, `dynamic-loading`) opens the library by
//! name only, on the default search path (`libcublas.so`, `.so.<the CUDA major it was built
//! for>`, `.so.12`, `.so.11` … from `cudarc::get_lib_name_candidates`), takes no path, and panics
//! when none loads. A build for CUDA 12 would not find a driver-13 machine's `libcublas.so.13`,
//! could not honour `ROOFPROBE_CUBLAS`, and would miss the copy a Python wheel installs. So this
//! module searches itself and resolves the five entry points roofprobe calls from the file it
//! found; cudarc still owns the context, the stream and the memory.
//!
//! # Search order
//!
//! 1. `ROOFPROBE_CUBLAS=PATH`: that file and nothing else (an error names it when it does not
//!    load);
//! 2. the loader's default search path (`LD_LIBRARY_PATH`, the ld.so cache): `libcublas.so.13`,
//!    `libcublas.so.12`, `libcublas.so`;
//! 3. the same names in `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64` and `/usr/local/cuda/lib64`;
//! 4. Python environments' wheels: `nvidia/cu13/lib` (CUDA 13's `nvidia-cublas`, which puts
//!    every CUDA 13 library in that one folder), then `nvidia/cublas/lib` (`nvidia-cublas-cu12`),
//!    under `lib/python3*/site-packages` or `dist-packages` of `$VIRTUAL_ENV`, `$CONDA_PREFIX`,
//!    the environment of each `python3` on `PATH` (the folder above its `bin`, and above the
//!    `bin` of each link it goes through: a venv outside any standard place, such as
//!    `/opt/torch/.venv`, is found by its `python3` alone), `~/.local`, `/usr/local` and `/usr`.
//!
//! The first file that loads and has the entry points wins, unless its major version is later
//! than the driver's CUDA (a CUDA 13 cuBLAS beside an R535 driver, whose runtime refuses the
//! driver at the first handle: every cuBLAS row would fail where a `.so.12` further on runs);
//! its cuBLASLt (which cuBLAS needs) is loaded from the same folder first where one is there.
//! Without any, [`find_in`] says what it searched, and the cuBLAS rows of a run say
//! `skipped: <why>`.
//!
//! This module must not print. `unsafe` here is limited to loading the library and calling its
//! documented C entry points with the arguments their documentation gives.

use libloading::Library;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The environment variable that names the cuBLAS library to use.
pub const ENV: &str = "ROOFPROBE_CUBLAS";

/// File names tried in each place, newest first.
pub const NAMES: [&str; 3] = ["libcublas.so.13", "libcublas.so.12", "libcublas.so"];

/// Where to look for cuBLAS, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// A file the user named.
    Path(PathBuf),
    /// A name for the loader's default search path.
    Name(&'static str),
}

impl Candidate {
    fn describe(&self) -> String {
        match self {
            Candidate::Path(p) => p.display().to_string(),
            Candidate::Name(n) => format!("{n} (default search path)"),
        }
    }
}

/// What the search reads from the environment: the variables and the home folder.
#[derive(Clone, Debug, Default)]
pub struct SearchEnv {
    pub override_path: Option<PathBuf>,
    pub cuda_home: Option<PathBuf>,
    pub cuda_path: Option<PathBuf>,
    pub virtual_env: Option<PathBuf>,
    pub conda_prefix: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// `PATH`, for the Python environments of its `python3` programs.
    pub path: Option<std::ffi::OsString>,
    /// The driver's CUDA version as `cuDriverGetVersion` gives it (`12020` for 12.2), where a
    /// driver loads: a cuBLAS of a later major version than the driver's is passed over, since
    /// its runtime refuses that driver (cuBLAS 13 needs a CUDA 13 driver, R580 or newer).
    pub driver_cuda: Option<i32>,
}

impl SearchEnv {
    /// This process's environment.
    pub fn current() -> SearchEnv {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        SearchEnv {
            override_path: var(ENV),
            cuda_home: var("CUDA_HOME"),
            cuda_path: var("CUDA_PATH"),
            virtual_env: var("VIRTUAL_ENV"),
            conda_prefix: var("CONDA_PREFIX"),
            home: var("HOME"),
            path: std::env::var_os("PATH").filter(|v| !v.is_empty()),
            driver_cuda: super::driver_cuda_number(),
        }
    }
}

/// The wheels' folders that hold cuBLAS, in the order tried: CUDA 13's one folder for every
/// library, then CUDA 12's per-library one.
pub const WHEEL_DIRS: [&str; 2] = ["nvidia/cu13/lib", "nvidia/cublas/lib"];

/// The environments of the `python3` programs on `path`, in its order: for each, the folder
/// above its `bin`, then the same for each link it goes through (at most 8), so that both a venv
/// on `PATH` and a `python3` linked to one name the venv. Folders not named `bin` give nothing.
fn python_prefixes(path: &std::ffi::OsStr) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |program: &Path| {
        let dir = program.parent();
        if let Some(prefix) = dir
            .filter(|d| d.file_name().is_some_and(|n| n == "bin"))
            .and_then(Path::parent)
        {
            if !out.iter().any(|p| p == prefix) {
                out.push(prefix.to_path_buf());
            }
        }
    };
    for dir in std::env::split_paths(path) {
        let mut program = dir.join("python3");
        if !program.exists() {
            continue;
        }
        add(&program);
        for _ in 0..8 {
            let Ok(target) = std::fs::read_link(&program) else {
                break;
            };
            let target = match program.parent() {
                Some(parent) if target.is_relative() => parent.join(target),
                _ => target,
            };
            // The target's folder as the file system names it (no `..`, no linked folders);
            // a link into a folder that is not there ends the chain.
            let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
                break;
            };
            let Ok(dir) = std::fs::canonicalize(dir) else {
                break;
            };
            program = dir.join(name);
            add(&program);
        }
    }
    out
}

/// The wheels' cuBLAS folders ([`WHEEL_DIRS`]) under `prefix`'s
/// `lib/python3*/{site,dist}-packages` that exist, the newest Python first.
fn python_cublas_dirs(prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(prefix.join("lib")) else {
        return out;
    };
    let mut pythons: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python3"))
        })
        .collect();
    pythons.sort();
    for python in pythons.into_iter().rev() {
        for packages in ["site-packages", "dist-packages"] {
            for wheel in WHEEL_DIRS {
                let dir = python.join(packages).join(wheel);
                if dir.is_dir() {
                    out.push(dir);
                }
            }
        }
    }
    out
}

/// The places to try, in the documented order.
pub fn candidates(env: &SearchEnv) -> Vec<Candidate> {
    if let Some(p) = &env.override_path {
        return vec![Candidate::Path(p.clone())];
    }
    let mut out: Vec<Candidate> = NAMES.iter().map(|n| Candidate::Name(n)).collect();
    let mut dirs: Vec<PathBuf> = [&env.cuda_home, &env.cuda_path]
        .into_iter()
        .flatten()
        .map(|d| d.join("lib64"))
        .collect();
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    let mut prefixes: Vec<PathBuf> = [env.virtual_env.clone(), env.conda_prefix.clone()]
        .into_iter()
        .flatten()
        .collect();
    if let Some(path) = &env.path {
        prefixes.extend(python_prefixes(path));
    }
    prefixes.extend(env.home.as_ref().map(|h| h.join(".local")));
    prefixes.extend(["/usr/local", "/usr"].map(PathBuf::from));
    for prefix in prefixes {
        dirs.extend(python_cublas_dirs(&prefix));
    }
    let mut seen = Vec::new();
    for dir in dirs {
        if seen.contains(&dir) {
            continue;
        }
        for name in NAMES {
            out.push(Candidate::Path(dir.join(name)));
        }
        seen.push(dir);
    }
    out
}

type RawHandle = *mut c_void;
type Status = i32;

/// `cublasOperation_t`.
pub const OP_N: i32 = 0;
pub const OP_T: i32 = 1;
/// `cudaDataType_t`.
pub const R_32F: i32 = 0;
pub const R_16F: i32 = 2;
pub const R_16BF: i32 = 14;
/// `cudaDataType_t`: fp8 e4m3.
pub const R_8F_E4M3: i32 = 28;
/// `cublasComputeType_t`: f32 accumulation.
pub const COMPUTE_32F: i32 = 68;
/// `cublasComputeType_t`: f32 inputs rounded to tf32 for the tensor cores, f32 accumulation.
pub const COMPUTE_32F_FAST_TF32: i32 = 77;
/// `cublasGemmAlgo_t`: let cuBLAS choose (tensor cores included since cuBLAS 11).
pub const GEMM_DEFAULT: i32 = -1;

/// A `cublasStatus_t` as its name and number (cublas_api.h), for the messages.
pub fn status_name(status: Status) -> String {
    let name = match status {
        0 => "CUBLAS_STATUS_SUCCESS",
        1 => "CUBLAS_STATUS_NOT_INITIALIZED",
        3 => "CUBLAS_STATUS_ALLOC_FAILED",
        7 => "CUBLAS_STATUS_INVALID_VALUE",
        8 => "CUBLAS_STATUS_ARCH_MISMATCH",
        11 => "CUBLAS_STATUS_MAPPING_ERROR",
        13 => "CUBLAS_STATUS_EXECUTION_FAILED",
        14 => "CUBLAS_STATUS_INTERNAL_ERROR",
        15 => "CUBLAS_STATUS_NOT_SUPPORTED",
        16 => "CUBLAS_STATUS_LICENSE_ERROR",
        _ => return format!("status {status}"),
    };
    format!("{name} ({status})")
}

type CreateFn = unsafe extern "C" fn(*mut RawHandle) -> Status;
type DestroyFn = unsafe extern "C" fn(RawHandle) -> Status;
type SetStreamFn = unsafe extern "C" fn(RawHandle, *mut c_void) -> Status;
type GetPropertyFn = unsafe extern "C" fn(i32, *mut i32) -> Status;
type GemmExFn = unsafe extern "C" fn(
    RawHandle,
    i32,
    i32,
    i32,
    i32,
    i32,
    *const c_void,
    *const c_void,
    i32,
    i32,
    *const c_void,
    i32,
    i32,
    *const c_void,
    *mut c_void,
    i32,
    i32,
    i32,
    i32,
) -> Status;

type LtHandle = *mut c_void;
type LtObject = *mut c_void;
type LtCreateFn = unsafe extern "C" fn(*mut LtHandle) -> Status;
type LtDestroyFn = unsafe extern "C" fn(LtObject) -> Status;
type LtDescCreateFn = unsafe extern "C" fn(*mut LtObject, i32, i32) -> Status;
type LtSetAttributeFn = unsafe extern "C" fn(LtObject, i32, *const c_void, usize) -> Status;
type LtLayoutCreateFn = unsafe extern "C" fn(*mut LtObject, i32, u64, u64, i64) -> Status;
type LtPreferenceCreateFn = unsafe extern "C" fn(*mut LtObject) -> Status;
type LtHeuristicFn = unsafe extern "C" fn(
    LtHandle,
    LtObject,
    LtObject,
    LtObject,
    LtObject,
    LtObject,
    LtObject,
    i32,
    *mut LtHeuristic,
    *mut i32,
) -> Status;
type LtMatmulFn = unsafe extern "C" fn(
    LtHandle,
    LtObject,
    *const c_void,
    *const c_void,
    LtObject,
    *const c_void,
    LtObject,
    *const c_void,
    *const c_void,
    LtObject,
    *mut c_void,
    LtObject,
    *const LtAlgo,
    *mut c_void,
    usize,
    *mut c_void,
) -> Status;

/// `cublasLtMatmulAlgo_t`: opaque.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LtAlgo {
    data: [u64; 8],
}

/// `cublasLtMatmulHeuristicResult_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LtHeuristic {
    algo: LtAlgo,
    workspace_size: usize,
    state: Status,
    waves_count: f32,
    reserved: [i32; 4],
}

/// `cublasLtMatmulDescAttributes_t`: `op(A)`, `op(B)`.
const LT_DESC_TRANSA: i32 = 3;
const LT_DESC_TRANSB: i32 = 4;
/// `cublasLtMatmulPreferenceAttributes_t`: the most workspace an algorithm may use.
const LT_PREF_MAX_WORKSPACE_BYTES: i32 = 1;

/// The cuBLASLt entry points of the fp8 reference (`cublasGemmEx` has no fp8).
#[derive(Clone, Copy)]
struct Lt {
    create: LtCreateFn,
    destroy: LtDestroyFn,
    desc_create: LtDescCreateFn,
    desc_destroy: LtDestroyFn,
    desc_set: LtSetAttributeFn,
    layout_create: LtLayoutCreateFn,
    layout_destroy: LtDestroyFn,
    preference_create: LtPreferenceCreateFn,
    preference_destroy: LtDestroyFn,
    preference_set: LtSetAttributeFn,
    heuristic: LtHeuristicFn,
    matmul: LtMatmulFn,
}

/// The entry point `name` of `lib` as a function pointer of type `F`; an error names the library
/// (`what`) and the symbol.
///
/// # Safety
/// `F` is the symbol's C signature; the pointer is used only while `lib` stays loaded.
unsafe fn symbol<F: Copy>(lib: &Library, what: &str, name: &str) -> Result<F, String> {
    lib.get::<F>(name.as_bytes())
        .map(|s| *s)
        .map_err(|e| format!("{what}: no {name}: {e}"))
}

impl Lt {
    /// Resolves the entry points from `lib`, or says which is missing.
    ///
    /// # Safety
    /// `lib` is cuBLASLt; the pointers are used only while it stays loaded.
    unsafe fn resolve(lib: &Library) -> Result<Lt, String> {
        let what = "cuBLASLt";
        Ok(Lt {
            create: symbol(lib, what, "cublasLtCreate")?,
            destroy: symbol(lib, what, "cublasLtDestroy")?,
            desc_create: symbol(lib, what, "cublasLtMatmulDescCreate")?,
            desc_destroy: symbol(lib, what, "cublasLtMatmulDescDestroy")?,
            desc_set: symbol(lib, what, "cublasLtMatmulDescSetAttribute")?,
            layout_create: symbol(lib, what, "cublasLtMatrixLayoutCreate")?,
            layout_destroy: symbol(lib, what, "cublasLtMatrixLayoutDestroy")?,
            preference_create: symbol(lib, what, "cublasLtMatmulPreferenceCreate")?,
            preference_destroy: symbol(lib, what, "cublasLtMatmulPreferenceDestroy")?,
            preference_set: symbol(lib, what, "cublasLtMatmulPreferenceSetAttribute")?,
            heuristic: symbol(lib, what, "cublasLtMatmulAlgoGetHeuristic")?,
            matmul: symbol(lib, what, "cublasLtMatmul")?,
        })
    }
}

/// A loaded cuBLAS and the entry points roofprobe calls.
pub struct Cublas {
    /// The file (or name) it was loaded from.
    pub path: String,
    /// `major.minor.patch` as `cublasGetProperty` reports it.
    pub version: String,
    /// Its major version, where `cublasGetProperty` gave it.
    pub major: Option<i32>,
    create: CreateFn,
    destroy: DestroyFn,
    set_stream: SetStreamFn,
    gemm_ex: GemmExFn,
    /// cuBLASLt's entry points, or why there are none.
    lt: Result<Lt, String>,
    // The libraries stay loaded for the process (the function pointers point into them).
    _lib: Library,
    _lt: Option<Library>,
}

impl std::fmt::Debug for Cublas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cuBLAS {} ({})", self.version, self.path)
    }
}

/// Loads `candidate` and resolves the entry points, or says why not.
fn load(candidate: &Candidate) -> Result<Cublas, String> {
    // a file that crashes the loader ends the process with one line
    let what = candidate.describe();
    super::loading::guarded(
        &what,
        "set ROOFPROBE_CUBLAS to another cuBLAS, or reinstall it",
        || load_unguarded(candidate),
    )
}

/// [`load`], the loads themselves.
fn load_unguarded(candidate: &Candidate) -> Result<Cublas, String> {
    // cuBLAS needs cuBLASLt; from a folder that is not on the search path, load the one beside
    // it first so the loader finds it.
    let lt = match candidate {
        Candidate::Path(p) => p.parent().and_then(|dir| {
            let name = p.file_name()?.to_str()?.replace("libcublas", "libcublasLt");
            // SAFETY: loading NVIDIA's library runs its initialisers, which have no
            // preconditions.
            unsafe { Library::new(dir.join(name)) }.ok()
        }),
        Candidate::Name(_) => None,
    };
    // SAFETY: as above.
    let lib = match candidate {
        Candidate::Path(p) => unsafe { Library::new(p) },
        Candidate::Name(n) => unsafe { Library::new(n) },
    }
    .map_err(|e| {
        // (the loader's message names a path it could not open already)
        let e = e.to_string();
        match candidate {
            Candidate::Path(p) if e.contains(&*p.to_string_lossy()) => e,
            _ => format!("{}: {e}", candidate.describe()),
        }
    })?;
    // From the search path, cuBLASLt is the one cuBLAS loaded (its dependency): open it by the
    // matching name to resolve its entry points.
    let lt = lt.or_else(|| match candidate {
        Candidate::Name(n) => {
            // SAFETY: as above.
            unsafe { Library::new(n.replace("libcublas", "libcublasLt")) }.ok()
        }
        Candidate::Path(_) => None,
    });
    // SAFETY: the symbols are cuBLAS's documented C entry points with these signatures
    // (cublas_api.h); the pointers stay valid while `lib` is loaded, which `Cublas` keeps.
    unsafe {
        let what = candidate.describe();
        let create: CreateFn = symbol(&lib, &what, "cublasCreate_v2")?;
        let destroy: DestroyFn = symbol(&lib, &what, "cublasDestroy_v2")?;
        let set_stream: SetStreamFn = symbol(&lib, &what, "cublasSetStream_v2")?;
        let gemm_ex: GemmExFn = symbol(&lib, &what, "cublasGemmEx")?;
        let get_property: GetPropertyFn = symbol(&lib, &what, "cublasGetProperty")?;
        let part = |which: i32| {
            let mut v = 0;
            (get_property(which, &mut v) == 0).then_some(v)
        };
        let version = match (part(0), part(1), part(2)) {
            (Some(a), Some(b), Some(c)) => format!("{a}.{b}.{c}"),
            _ => "of unknown version".to_string(),
        };
        let major = part(0);
        Ok(Cublas {
            path: match candidate {
                Candidate::Path(p) => p.display().to_string(),
                Candidate::Name(n) => n.to_string(),
            },
            version,
            major,
            create,
            destroy,
            set_stream,
            gemm_ex,
            // SAFETY: cuBLASLt's documented entry points (cublasLt.h), kept loaded in `_lt`.
            lt: match &lt {
                Some(l) => Lt::resolve(l),
                None => Err("no cuBLASLt beside cuBLAS".to_string()),
            },
            _lib: lib,
            _lt: lt,
        })
    }
}

/// Searches `env`'s candidates in order; the first that loads, or what was tried.
pub fn find_in(env: &SearchEnv) -> Result<Cublas, String> {
    let tried = candidates(env);
    let mut errors = Vec::new();
    for c in &tried {
        match load(c).and_then(|found| fits_driver(found, env.driver_cuda)) {
            Ok(found) => return Ok(found),
            Err(e) => errors.push(e),
        }
    }
    Err(match &env.override_path {
        Some(p) => format!(
            "{ENV}={} does not load as cuBLAS: {}",
            p.display(),
            errors.join("; ")
        ),
        None => format!(
            "no cuBLAS found (tried {} on the default search path, $CUDA_HOME/lib64, \
             $CUDA_PATH/lib64, /usr/local/cuda/lib64 and Python environments' \
             {}: {} places); install it or name it with {ENV}=PATH",
            NAMES.join(", "),
            WHEEL_DIRS.join(" and "),
            tried.len()
        ),
    })
}

/// `found`, or why the driver cannot run it: a cuBLAS whose major version is later than the
/// driver's CUDA (`driver_cuda`, `cuDriverGetVersion`'s number) fails at its first handle, with
/// CUDA's minor-version compatibility holding only within a major version.
fn fits_driver(found: Cublas, driver_cuda: Option<i32>) -> Result<Cublas, String> {
    match (found.major, driver_cuda) {
        (Some(major), Some(driver)) if driver_too_old(major, driver) => Err(format!(
            "{}: cuBLAS {} needs a CUDA {major} driver or newer, and this one is CUDA {}",
            found.path,
            found.version,
            super::cuda_version_text(driver)
        )),
        _ => Ok(found),
    }
}

/// Whether a driver of CUDA `driver_cuda` (`cuDriverGetVersion`'s number) is too old for a
/// cuBLAS of major version `cublas_major`.
fn driver_too_old(cublas_major: i32, driver_cuda: i32) -> bool {
    cublas_major * 1000 > driver_cuda
}

/// The cuBLAS of this process, or why there is none.
static FOUND: OnceLock<Result<Cublas, String>> = OnceLock::new();

/// cuBLAS for this process: searched once, on first use.
pub fn get() -> &'static Result<Cublas, String> {
    FOUND.get_or_init(|| find_in(&SearchEnv::current()))
}

/// Makes this process use no cuBLAS, for `why`, unless it already searched: a GPU worker whose
/// predecessor in the run crashed loading it ([`crate::run::worker`]) must not load it again.
pub fn refuse(why: String) {
    let _ = FOUND.set(Err(why));
}

/// One line for `devices`: which cuBLAS the GPU GEMM rows would use, or why there is none.
pub fn describe() -> String {
    match get() {
        Ok(c) => format!("cuBLAS {} ({})", c.version, c.path),
        Err(why) => format!("none: {why}"),
    }
}

/// A cuBLAS handle bound to a stream.
pub struct CublasHandle {
    lib: &'static Cublas,
    handle: RawHandle,
}

impl Cublas {
    /// A handle whose work goes on `stream` (a `CUstream`).
    ///
    /// # Safety
    /// `stream` is a live stream of the current context, which is bound to this thread.
    pub unsafe fn handle(&'static self, stream: *mut c_void) -> Result<CublasHandle, String> {
        let mut handle: RawHandle = std::ptr::null_mut();
        let status = (self.create)(&mut handle);
        if status != 0 {
            return Err(format!("cublasCreate failed: {}", status_name(status)));
        }
        let h = CublasHandle { lib: self, handle };
        let status = (self.set_stream)(handle, stream);
        if status != 0 {
            return Err(format!("cublasSetStream failed: {}", status_name(status)));
        }
        Ok(h)
    }
}

impl CublasHandle {
    /// `C = A · Bᵀ` for row-major A (m × k, row stride lda), B (n × k, row stride ldb) in
    /// `input_type` and C (m × n, f32) in `compute_type` (f32 accumulation): in cuBLAS's column-major terms
    /// `Cᵀ (n × m, ldc = n) = op(B) · A` with B transposed (`T`, its column-major view is k × n)
    /// and A as is (`N`, its column-major view is k × m), the "TN" product.
    ///
    /// # Safety
    /// The pointers are device addresses of arrays of at least those sizes, on the handle's
    /// context.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_tn(
        &self,
        m: i32,
        n: i32,
        k: i32,
        input_type: i32,
        compute_type: i32,
        a: u64,
        lda: i32,
        b: u64,
        ldb: i32,
        c: u64,
    ) -> Result<(), String> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let status = (self.lib.gemm_ex)(
            self.handle,
            OP_T,
            OP_N,
            n,
            m,
            k,
            (&alpha as *const f32).cast(),
            b as *const c_void,
            input_type,
            ldb,
            a as *const c_void,
            input_type,
            lda,
            (&beta as *const f32).cast(),
            c as *mut c_void,
            R_32F,
            n,
            compute_type,
            GEMM_DEFAULT,
        );
        if status == 0 {
            Ok(())
        } else {
            Err(format!("cublasGemmEx failed: {}", status_name(status)))
        }
    }
}

/// A cuBLASLt fp8 product set up once and run many times: `C = A · Bᵀ` for row-major A (m × k,
/// row stride lda) and B (n × k, row stride ldb) in e4m3 and C (m × n) in f32, f32 compute and
/// scale, no scaling factors. In cuBLASLt's column-major terms it is `Cᵀ (n × m) = op(B) · A`
/// with B transposed and A not: the "TN" form fp8 requires.
pub struct LtFp8Gemm {
    lt: Lt,
    handle: LtHandle,
    desc: LtObject,
    /// The layouts of B, A and C (D is C: written in place, beta 0).
    layouts: [LtObject; 3],
    algo: LtAlgo,
    /// Bytes of workspace the chosen algorithm uses (at most the caller's).
    pub workspace_bytes: usize,
}

impl Cublas {
    /// An fp8 product of this shape on cuBLASLt with at most `workspace_bytes` of workspace, its
    /// algorithm chosen by cuBLASLt's heuristic; or why not (no cuBLASLt, no fp8 algorithm).
    ///
    /// # Safety
    /// The current context is bound to this thread.
    pub unsafe fn fp8_gemm(
        &'static self,
        m: u64,
        n: u64,
        k: u64,
        lda: u64,
        ldb: u64,
        workspace_bytes: usize,
    ) -> Result<LtFp8Gemm, String> {
        let lt = *self.lt.as_ref().map_err(Clone::clone)?;
        let check = |what: &str, status: Status| {
            if status == 0 {
                Ok(())
            } else {
                Err(format!("{what} failed: {}", status_name(status)))
            }
        };
        let mut g = LtFp8Gemm {
            lt,
            handle: std::ptr::null_mut(),
            desc: std::ptr::null_mut(),
            layouts: [std::ptr::null_mut(); 3],
            algo: LtAlgo::default(),
            workspace_bytes: 0,
        };
        // (dropping `g` on an error destroys what was made)
        check("cublasLtCreate", (lt.create)(&mut g.handle))?;
        check(
            "cublasLtMatmulDescCreate",
            (lt.desc_create)(&mut g.desc, COMPUTE_32F, R_32F),
        )?;
        for (attr, op) in [(LT_DESC_TRANSA, OP_T), (LT_DESC_TRANSB, OP_N)] {
            check(
                "cublasLtMatmulDescSetAttribute",
                (lt.desc_set)(
                    g.desc,
                    attr,
                    (&op as *const i32).cast(),
                    std::mem::size_of::<i32>(),
                ),
            )?;
        }
        let ld = |v: u64| i64::try_from(v).map_err(|_| format!("{v} does not fit cuBLASLt"));
        for (i, (ty, rows, cols, stride)) in [
            (R_8F_E4M3, k, n, ld(ldb)?),
            (R_8F_E4M3, k, m, ld(lda)?),
            (R_32F, n, m, ld(n)?),
        ]
        .into_iter()
        .enumerate()
        {
            check(
                "cublasLtMatrixLayoutCreate",
                (lt.layout_create)(&mut g.layouts[i], ty, rows, cols, stride),
            )?;
        }
        let mut preference: LtObject = std::ptr::null_mut();
        check(
            "cublasLtMatmulPreferenceCreate",
            (lt.preference_create)(&mut preference),
        )?;
        let bytes = workspace_bytes as u64;
        let mut result = LtHeuristic::default();
        let mut found = 0;
        let status = (lt.preference_set)(
            preference,
            LT_PREF_MAX_WORKSPACE_BYTES,
            (&bytes as *const u64).cast(),
            std::mem::size_of::<u64>(),
        );
        let heuristic = if status == 0 {
            (lt.heuristic)(
                g.handle,
                g.desc,
                g.layouts[0],
                g.layouts[1],
                g.layouts[2],
                g.layouts[2],
                preference,
                1,
                &mut result,
                &mut found,
            )
        } else {
            status
        };
        (lt.preference_destroy)(preference);
        check("cublasLtMatmulAlgoGetHeuristic", heuristic)?;
        if found < 1 || result.state != 0 {
            return Err(format!(
                "cuBLASLt has no fp8 e4m3 algorithm for {m}x{n}x{k} (state {})",
                result.state
            ));
        }
        g.algo = result.algo;
        g.workspace_bytes = result.workspace_size;
        Ok(g)
    }
}

impl LtFp8Gemm {
    /// Queues the product on `stream` (a `CUstream` of the current context).
    ///
    /// # Safety
    /// a, b and c are device arrays of at least m × lda, n × ldb bytes and m × n f32 on that
    /// context; `workspace` is a device array of at least [`LtFp8Gemm::workspace_bytes`].
    pub unsafe fn run(
        &self,
        a: u64,
        b: u64,
        c: u64,
        workspace: u64,
        stream: *mut c_void,
    ) -> Result<(), String> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let status = (self.lt.matmul)(
            self.handle,
            self.desc,
            (&alpha as *const f32).cast(),
            b as *const c_void,
            self.layouts[0],
            a as *const c_void,
            self.layouts[1],
            (&beta as *const f32).cast(),
            c as *const c_void,
            self.layouts[2],
            c as *mut c_void,
            self.layouts[2],
            &self.algo,
            workspace as *mut c_void,
            self.workspace_bytes,
            stream,
        );
        if status == 0 {
            Ok(())
        } else {
            Err(format!("cublasLtMatmul failed: {}", status_name(status)))
        }
    }
}

impl Drop for LtFp8Gemm {
    fn drop(&mut self) {
        // SAFETY: each object was made by this cuBLASLt (null where it was not) and is
        // destroyed once.
        unsafe {
            for layout in self.layouts {
                if !layout.is_null() {
                    (self.lt.layout_destroy)(layout);
                }
            }
            if !self.desc.is_null() {
                (self.lt.desc_destroy)(self.desc);
            }
            if !self.handle.is_null() {
                (self.lt.destroy)(self.handle);
            }
        }
    }
}

impl Drop for CublasHandle {
    fn drop(&mut self) {
        // SAFETY: the handle was created by this library and is destroyed once.
        unsafe {
            (self.lib.destroy)(self.handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CUDA's minor-version compatibility holds within a major version only: cuBLAS 13 on a
    /// CUDA 12 driver is refused, cuBLAS 12 runs on any CUDA 12 or 13 driver.
    #[test]
    fn a_cublas_newer_than_the_drivers_major_version_is_passed_over() {
        assert!(driver_too_old(13, 12020));
        assert!(driver_too_old(13, 12090));
        assert!(!driver_too_old(13, 13000));
        assert!(!driver_too_old(12, 12000));
        assert!(!driver_too_old(12, 13000));
        assert!(driver_too_old(12, 11080));
    }

    /// The documented order: the override alone; else the names on the search path, then
    /// CUDA_HOME, CUDA_PATH, /usr/local/cuda, then Python environments' wheels.
    #[test]
    fn candidates_follow_the_documented_order() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir
            .path()
            .join("venv/lib/python3.11/site-packages/nvidia/cublas/lib");
        std::fs::create_dir_all(&wheel).unwrap();
        let env = SearchEnv {
            cuda_home: Some("/opt/cuda-13".into()),
            cuda_path: Some("/opt/cuda-12".into()),
            virtual_env: Some(dir.path().join("venv")),
            ..SearchEnv::default()
        };
        let c = candidates(&env);
        assert_eq!(c[0], Candidate::Name("libcublas.so.13"));
        assert_eq!(c[2], Candidate::Name("libcublas.so"));
        assert_eq!(
            c[3],
            Candidate::Path("/opt/cuda-13/lib64/libcublas.so.13".into())
        );
        assert_eq!(
            c[6],
            Candidate::Path("/opt/cuda-12/lib64/libcublas.so.13".into())
        );
        assert_eq!(
            c[9],
            Candidate::Path("/usr/local/cuda/lib64/libcublas.so.13".into())
        );
        assert_eq!(c[12], Candidate::Path(wheel.join("libcublas.so.13")));
        let only = SearchEnv {
            override_path: Some("/x/libcublas.so.13".into()),
            ..env
        };
        assert_eq!(
            candidates(&only),
            [Candidate::Path("/x/libcublas.so.13".into())]
        );
    }

    /// A venv outside every standard place (the image of a GPU machine keeps PyTorch's in
    /// `/opt/torch/.venv`) is found through the `python3` on `PATH`, directly or through a
    /// link to it, and CUDA 13's wheel folder (`nvidia/cu13/lib`, where `nvidia-cublas` 13 puts
    /// `libcublas.so.13`) is tried before CUDA 12's (`nvidia/cublas/lib`).
    #[test]
    fn a_venv_known_by_its_python3_on_path_is_searched_in_both_wheel_layouts() {
        let tmp = tempfile::tempdir().unwrap();
        // (as the file system names it: links are followed to their folders)
        let root = tmp.path().canonicalize().unwrap();
        let venv = root.join("opt/torch/.venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("bin/python3"), b"").unwrap();
        let site = venv.join("lib/python3.12/site-packages");
        for wheel in WHEEL_DIRS {
            std::fs::create_dir_all(site.join(wheel)).unwrap();
        }
        // A python3 elsewhere on PATH that is a relative link to the venv's, and a folder with
        // a python3 that is not a `bin` (it names no environment).
        let linked = root.as_path().join("usr/local/bin");
        std::fs::create_dir_all(&linked).unwrap();
        std::os::unix::fs::symlink(
            "../../../opt/torch/.venv/bin/python3",
            linked.join("python3"),
        )
        .unwrap();
        let stray = root.as_path().join("tools");
        std::fs::create_dir_all(&stray).unwrap();
        std::fs::write(stray.join("python3"), b"").unwrap();
        let wheels = |path: &[&Path]| -> Vec<PathBuf> {
            let env = SearchEnv {
                path: Some(std::env::join_paths(path).unwrap()),
                ..SearchEnv::default()
            };
            candidates(&env)
                .into_iter()
                .filter_map(|c| match c {
                    Candidate::Path(p) if p.starts_with(root.as_path()) => Some(p),
                    _ => None,
                })
                .collect()
        };
        let expected: Vec<PathBuf> = WHEEL_DIRS
            .iter()
            .flat_map(|w| NAMES.map(|n| site.join(w).join(n)))
            .collect();
        assert_eq!(expected[0], site.join("nvidia/cu13/lib/libcublas.so.13"));
        assert_eq!(wheels(&[&venv.join("bin")]), expected);
        assert_eq!(wheels(&[&stray, &linked]), expected, "through the link");
        assert_eq!(wheels(&[&stray, root.as_path()]), Vec::<PathBuf>::new());
        // Without PATH the venv is unknown: only its python3 names it.
        assert!(!candidates(&SearchEnv::default())
            .iter()
            .any(|c| matches!(c, Candidate::Path(p) if p.starts_with(root.as_path()))));
    }

    /// The cuBLASLt structures passed by pointer have cublasLt.h's layout: the algorithm 8
    /// 64-bit words, the heuristic result the algorithm, a size_t, a status, a float and 4 ints
    /// (96 bytes).
    #[test]
    fn lt_structures_have_the_headers_layout() {
        assert_eq!(std::mem::size_of::<LtAlgo>(), 64);
        assert_eq!(std::mem::size_of::<LtHeuristic>(), 96);
        assert_eq!(std::mem::offset_of!(LtHeuristic, workspace_size), 64);
        assert_eq!(std::mem::offset_of!(LtHeuristic, state), 72);
        assert_eq!(std::mem::offset_of!(LtHeuristic, waves_count), 76);
        assert_eq!(std::mem::offset_of!(LtHeuristic, reserved), 80);
    }

    #[test]
    fn statuses_are_named() {
        assert_eq!(status_name(15), "CUBLAS_STATUS_NOT_SUPPORTED (15)");
        assert_eq!(status_name(7), "CUBLAS_STATUS_INVALID_VALUE (7)");
        assert_eq!(status_name(42), "status 42");
    }

    /// Without cuBLAS (this machine, CI) the search says what it tried and how to name one; an
    /// override that is not a library says so, naming it.
    #[test]
    fn absent_cublas_is_a_reason_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("libcublas.so.13");
        std::fs::write(&fake, b"not a library").unwrap();
        let env = SearchEnv {
            override_path: Some(fake.clone()),
            ..SearchEnv::default()
        };
        let why = find_in(&env).unwrap_err();
        assert!(
            why.starts_with(&format!("{ENV}={} does not load as cuBLAS", fake.display())),
            "{why}"
        );
        if find_in(&SearchEnv::default()).is_ok() {
            eprintln!("cuBLAS is installed here: the absent path is checked by the override only");
            return;
        }
        let why = find_in(&SearchEnv {
            home: Some(dir.path().into()),
            ..SearchEnv::default()
        })
        .unwrap_err();
        assert!(
            why.starts_with("no cuBLAS found (tried libcublas.so.13"),
            "{why}"
        );
        assert!(why.contains("ROOFPROBE_CUBLAS=PATH"), "{why}");
    }
}
