//! The driver's own machine code for every kernel module (`roofprobe devices --jit-out DIR`).
//!
//! On a GPU our PTX runs as the driver's JIT compiles it, and that compiler is the driver's
//! generation, not the ptxas the offline checks run. The driver hands its code out through its
//! linker: `cuLinkAddData` of one PTX module, then `cuLinkComplete`, gives the CUDA ELF object
//! (a cubin) it made for the context's device (an `sm_90a` module's target named, as the
//! linker's default is the context's plain architecture), and with `CU_JIT_LOG_VERBOSE` the
//! JIT's info log (registers, spills, stack per function, as ptxas's `-v` prints them). Each
//! module's object and log are written as `<module>.cubin` and `<module>.log`;
//! `scripts/jit-sass` reads the folder, and `ROOFPROBE_JIT_SASS` points the offline SASS checks
//! at what it wrote.
//!
//! The linker compiles a module on its own; the module loads of a run (`cuModuleLoadData`)
//! compile the same PTX, with the same default options, whole. Our modules call no function
//! outside themselves, so the two compiles have the same code to work on.

use super::{log_text, one_line_log, quietly, with_jit_log, CudaBackend};
use cudarc::driver::{sys, DriverError};
use std::collections::BTreeMap;
use std::ffi::{c_uint, c_void, CString};
use std::path::Path;

/// What the JIT gives for one module: its object and its info log.
pub struct DriverObject {
    pub cubin: Vec<u8>,
    pub log: String,
}

/// What writing the driver's code for one device came to: `devices` lines and the failures.
pub struct DriverCode {
    pub lines: Vec<(String, String)>,
    /// One line per module the device should take that could not be compiled or written.
    pub errors: Vec<String>,
}

/// `name` as a file name: anything but letters, digits, `.`, `-` and `_` becomes `_`
/// (`intensity.ptx.in#k=64,f32` → `intensity.ptx.in_k_64_f32`).
pub fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Why a device of compute capability `cc` does not take `ptx`, from its `.target` as the driver
/// reads it: an architecture above the device's, or an architecture-specific one (`sm_90a`) on
/// another device. `None` where it does (a module without a `.target` line too).
pub fn not_for_device(ptx: &str, cc: (u32, u32)) -> Option<String> {
    let target = crate::kernels::target(ptx)?;
    let wanted = crate::kernels::target_capability(target)?;
    if target.ends_with(|c: char| c.is_ascii_alphabetic()) && wanted != cc {
        Some(format!(
            "{target} code runs on compute capability {}.{} only",
            wanted.0, wanted.1
        ))
    } else if wanted > cc {
        Some(format!(
            "{target} code needs compute capability {}.{}",
            wanted.0, wanted.1
        ))
    } else {
        None
    }
}

/// The newest PTX ISA version the JIT of a driver of CUDA version `cuda` (as
/// `cuDriverGetVersion` numbers it: `12020` for 12.2) compiles: CUDA 11.x reads up to 7.8, 12.0
/// reads 8.0 and each 12.x release one more to 12.5's 8.5, 12.6 stays at 8.5, 12.7 reads 8.6,
/// 12.8 8.7, 12.9 8.8 and 13.x 9.x (the PTX ISA's release history, in its introduction).
pub fn newest_ptx_isa(cuda: i32) -> (u32, u32) {
    let (major, minor) = (cuda / 1000, (cuda % 1000) / 10);
    match (major, minor) {
        (..=11, _) => (7, 8),
        (12, 0..=5) => (8, minor as u32),
        (12, 6) => (8, 5),
        (12, 7) => (8, 6),
        (12, 8) => (8, 7),
        (12, _) => (8, 8),
        (_, m) => (9, m as u32),
    }
}

/// Why a driver of CUDA version `cuda` (`None`: unknown) cannot compile `ptx`: its PTX ISA
/// `.version` is newer than the driver's JIT reads, which it would refuse with
/// `CUDA_ERROR_UNSUPPORTED_PTX_VERSION` (kernels/mma_sm89.ptx, PTX ISA 8.4, needs CUDA 12.4: an
/// R535 driver, CUDA 12.2, refuses it). `None` where it can, or either version is unknown.
pub fn not_for_driver(ptx: &str, cuda: Option<i32>) -> Option<String> {
    let cuda = cuda?;
    let version = crate::kernels::ptx_version(ptx)?;
    let newest = newest_ptx_isa(cuda);
    (version > newest).then(|| {
        format!(
            "its PTX ISA {}.{} is newer than the {}.{} this driver (CUDA {}) compiles: update \
             the NVIDIA driver",
            version.0,
            version.1,
            newest.0,
            newest.1,
            super::cuda_version_text(cuda)
        )
    })
}

/// Per-function (stack, spill stores, spill loads) bytes from a JIT info log, which reads as
/// `ptxas -v` output does (`Function properties for f`, then `N bytes stack frame, N bytes
/// spill stores, N bytes spill loads`).
pub fn resource_usage(log: &str) -> BTreeMap<String, (u64, u64, u64)> {
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            current = Some(rest.trim().to_string());
        } else if line.contains("bytes stack frame") {
            let nums: Vec<u64> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|s| s.parse().ok())
                .collect();
            if let (Some(f), [stack, stores, loads, ..]) = (current.take(), nums.as_slice()) {
                out.insert(f, (*stack, *stores, *loads));
            }
        }
    }
    out
}

/// The spill stores and loads of every function of a JIT info log, in bytes.
pub fn spill_bytes(log: &str) -> u64 {
    resource_usage(log)
        .values()
        .map(|(_, stores, loads)| stores + loads)
        .sum()
}

/// `CU_COMPUTE_ACCELERATED_TARGET_BASE` (cuda.h): a `CUjit_target` of architecture-specific
/// code (`sm_90a`) is this plus the plain one's number (`CU_TARGET_COMPUTE_90A` is 65626).
pub const ACCELERATED_TARGET_BASE: c_uint = 0x10000;

/// The `CU_JIT_TARGET` a JIT compilation of `ptx` names for a device of compute capability `cc`: the
/// architecture-specific target where the module asks for one (`.target sm_90a`), since the
/// linker's default is the context's plain one; `None` for any other module.
pub fn jit_target(ptx: &str, cc: (u32, u32)) -> Option<c_uint> {
    let target = crate::kernels::target(ptx)?;
    target
        .ends_with('a')
        .then(|| ACCELERATED_TARGET_BASE + cc.0 * 10 + cc.1)
}

impl CudaBackend {
    /// Compiles `ptx` with the driver's JIT through its linker, for this device: for an
    /// architecture-specific module with its target named ([`jit_target`]), and if the linker
    /// refuses that, once more leaving the target to it.
    pub fn driver_object(&self, ptx: &str, name: &str) -> Result<DriverObject, String> {
        match jit_target(ptx, self.compute_capability) {
            Some(target) => self.jit_compile(ptx, name, Some(target)).or_else(|named| {
                self.jit_compile(ptx, name, None)
                    .map_err(|left| format!("{named}; with the target left to the linker: {left}"))
            }),
            None => self.jit_compile(ptx, name, None),
        }
    }

    /// One compilation of `ptx` through the driver's linker (`cuLinkCreate`, `cuLinkAddData`,
    /// `cuLinkComplete`), with `CU_JIT_TARGET` set to `target` where given. (Named for the JIT:
    /// "link" in this crate is the host-link family's.)
    fn jit_compile(
        &self,
        ptx: &str,
        name: &str,
        target: Option<c_uint>,
    ) -> Result<DriverObject, String> {
        let source = CString::new(ptx).map_err(|_| "the PTX holds a NUL byte".to_string())?;
        let name = CString::new(name).map_err(|_| "the name holds a NUL byte".to_string())?;
        let mut info = vec![0u8; 1 << 16];
        let mut error = vec![0u8; 1 << 14];
        let outcome = quietly(|| -> Result<DriverObject, (String, DriverError)> {
            let step = |what: &str, r: sys::CUresult| match r {
                sys::CUresult::CUDA_SUCCESS => Ok(()),
                other => Err((what.to_string(), DriverError(other))),
            };
            self.ctx
                .bind_to_thread()
                .map_err(|e| ("binding the context".to_string(), e))?;
            let mut options = vec![
                sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
                sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                sys::CUjit_option::CU_JIT_LOG_VERBOSE,
            ];
            // The driver reads a size's, a flag's or a target's value from the pointer's bits.
            let mut values = vec![
                info.as_mut_ptr() as *mut c_void,
                info.len() as *mut c_void,
                error.as_mut_ptr() as *mut c_void,
                error.len() as *mut c_void,
                std::ptr::without_provenance_mut(1),
            ];
            if let Some(target) = target {
                options.push(sys::CUjit_option::CU_JIT_TARGET);
                values.push(std::ptr::without_provenance_mut(target as usize));
            }
            let mut state: sys::CUlinkState = std::ptr::null_mut();
            // SAFETY: the options and values are as many as said, the log buffers outlive the
            // link state (destroyed below, on every path) and their sizes are the ones given.
            step("cuLinkCreate", unsafe {
                sys::cuLinkCreate_v2(
                    options.len() as c_uint,
                    options.as_mut_ptr(),
                    values.as_mut_ptr(),
                    &mut state,
                )
            })?;
            let linked = (|| {
                // SAFETY: `source` is the NUL-terminated PTX, its size counts the NUL as the
                // driver asks for text; `name` is NUL-terminated; no per-input options.
                step("cuLinkAddData", unsafe {
                    sys::cuLinkAddData_v2(
                        state,
                        sys::CUjitInputType::CU_JIT_INPUT_PTX,
                        source.as_ptr() as *mut c_void,
                        source.as_bytes_with_nul().len(),
                        name.as_ptr(),
                        0,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    )
                })?;
                let mut cubin: *mut c_void = std::ptr::null_mut();
                let mut size = 0usize;
                // SAFETY: the out-pointers are valid; the object the driver returns belongs to
                // the link state and is copied before the state is destroyed.
                step("cuLinkComplete", unsafe {
                    sys::cuLinkComplete(state, &mut cubin, &mut size)
                })?;
                if cubin.is_null() || size == 0 {
                    return Err((
                        "cuLinkComplete".to_string(),
                        DriverError(sys::CUresult::CUDA_ERROR_UNKNOWN),
                    ));
                }
                // SAFETY: the driver says `size` bytes lie at `cubin`, alive until the destroy.
                Ok(unsafe { std::slice::from_raw_parts(cubin as *const u8, size) }.to_vec())
            })();
            // SAFETY: the state was created above and is destroyed once, here.
            unsafe { sys::cuLinkDestroy(state) };
            Ok(DriverObject {
                cubin: linked?,
                log: String::new(),
            })
        });
        match outcome {
            Ok(Ok(mut object)) => {
                object.log = log_text(&info);
                Ok(object)
            }
            Ok(Err((during, e))) => {
                let message = match super::driver_error(&during, &e) {
                    crate::Error::Driver { during, message } => format!("{during}: {message}"),
                    other => other.to_string(),
                };
                Err(with_jit_log(message, one_line_log(&error)))
            }
            Err(panic) => Err(super::driver::panic_message(panic)),
        }
    }

    /// The driver's code for every module of `kernels::all()` this device takes, written to
    /// `dir` (made if missing) as `<module>.cubin` and `<module>.log`, and summed up. Each file is
    /// written whole or not at all ([`crate::files::write_new`]); an existing one is replaced
    /// only with `overwrite` (`--force`).
    pub fn write_driver_code(&self, dir: &Path, overwrite: crate::files::Overwrite) -> DriverCode {
        let mut code = DriverCode {
            lines: Vec::new(),
            errors: Vec::new(),
        };
        // a folder that cannot be made costs every module the device takes, each counted
        let no_folder = crate::files::output_folder(dir)
            .err()
            .map(|e| format!("cannot make the folder: {e}"));
        let (mut written, mut skipped, mut spilled) = (0, Vec::new(), Vec::new());
        let mut too_new = Vec::new();
        let driver = super::driver_cuda_number();
        for source in crate::kernels::all() {
            if let Some(why) = not_for_device(&source.ptx, self.compute_capability) {
                skipped.push(format!("{} ({why})", source.name));
                continue;
            }
            if let Some(why) = not_for_driver(&source.ptx, driver) {
                too_new.push(format!("{} ({why})", source.name));
                continue;
            }
            if let Some(why) = &no_folder {
                code.errors.push(format!("kernels/{}: {why}", source.name));
                continue;
            }
            let object = match self.driver_object(&source.ptx, &source.name) {
                Ok(object) => object,
                Err(e) => {
                    code.errors.push(format!("kernels/{}: {e}", source.name));
                    continue;
                }
            };
            let stem = file_stem(&source.name);
            let cubin = dir.join(format!("{stem}.cubin"));
            let log = dir.join(format!("{stem}.log"));
            let wrote = crate::files::write_new(&cubin, &object.cubin, overwrite).and_then(|()| {
                crate::files::write_new(&log, format!("{}\n", object.log).as_bytes(), overwrite)
            });
            if let Err(e) = wrote {
                code.errors.push(format!("kernels/{}: {e}", source.name));
                continue;
            }
            written += 1;
            let spills = spill_bytes(&object.log);
            if spills > 0 {
                spilled.push(format!("{} ({spills} bytes)", source.name));
            }
        }
        code.lines.push((
            "driver's code".to_string(),
            format!(
                "{written} modules compiled by the driver's JIT, in {}",
                dir.display()
            ),
        ));
        code.lines.push((
            "driver's spills".to_string(),
            if spilled.is_empty() {
                "none".to_string()
            } else {
                spilled.join(", ")
            },
        ));
        if !skipped.is_empty() {
            code.lines
                .push(("not for this device".to_string(), skipped.join(", ")));
        }
        if !too_new.is_empty() {
            code.lines
                .push(("not for this driver".to_string(), too_new.join(", ")));
        }
        for e in &code.errors {
            code.lines
                .push(("driver's code FAILED".to_string(), e.clone()));
        }
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each CUDA release's JIT reads its own PTX ISA and older ones: every module compiles on a
    /// CUDA 12.4 driver; on 12.2 (R535) all but the fp8 mma.sync module (PTX ISA 8.4); on 11.8
    /// not Hopper's sm_90a modules (8.0) either.
    #[test]
    fn a_module_newer_than_the_drivers_ptx_isa_is_not_for_it() {
        let cases = [
            (11080, (7, 8)),
            (12000, (8, 0)),
            (12020, (8, 2)),
            (12040, (8, 4)),
            (12060, (8, 5)),
            (12080, (8, 7)),
            (12090, (8, 8)),
            (13000, (9, 0)),
        ];
        for (cuda, isa) in cases {
            assert_eq!(newest_ptx_isa(cuda), isa, "CUDA {cuda}");
        }
        for source in crate::kernels::all() {
            let version = crate::kernels::ptx_version(&source.ptx)
                .unwrap_or_else(|| panic!("{}: no .version", source.name));
            assert_eq!(
                not_for_driver(&source.ptx, Some(12040)),
                None,
                "{}",
                source.name
            );
            for (cuda, isa) in cases {
                assert_eq!(
                    not_for_driver(&source.ptx, Some(cuda)).is_some(),
                    version > isa,
                    "{} on CUDA {cuda}",
                    source.name
                );
            }
            assert_eq!(not_for_driver(&source.ptx, None), None);
        }
        let fp8 = crate::kernels::all()
            .into_iter()
            .find(|s| s.name == "mma_sm89.ptx")
            .expect("the fp8 mma.sync module");
        assert_eq!(
            not_for_driver(&fp8.ptx, Some(12020)).as_deref(),
            Some(
                "its PTX ISA 8.4 is newer than the 8.2 this driver (CUDA 12.2) compiles: update \
                 the NVIDIA driver"
            )
        );
        assert_eq!(
            crate::kernels::ptx_version(".version 8.4\n.target sm_89"),
            Some((8, 4))
        );
        assert_eq!(crate::kernels::ptx_version(".target sm_89"), None);
    }

    #[test]
    fn file_stems_keep_only_plain_characters() {
        assert_eq!(
            file_stem("intensity.ptx.in#k=64,f32"),
            "intensity.ptx.in_k_64_f32"
        );
        assert_eq!(
            file_stem("gemm_tma.ptx.in#cluster2,bf16→f32"),
            "gemm_tma.ptx.in_cluster2_bf16_f32"
        );
        assert_eq!(file_stem("peak.ptx"), "peak.ptx");
    }

    #[test]
    fn a_target_is_taken_by_the_devices_it_runs_on() {
        let ptx = |t: &str| format!(".version 8.0\n.target {t}\n.address_size 64\n");
        assert_eq!(not_for_device(&ptx("sm_80"), (9, 0)), None);
        assert_eq!(not_for_device(&ptx("sm_80"), (8, 0)), None);
        assert_eq!(not_for_device(&ptx("sm_90a"), (9, 0)), None);
        assert_eq!(
            not_for_device(&ptx("sm_89"), (8, 6)).as_deref(),
            Some("sm_89 code needs compute capability 8.9")
        );
        assert_eq!(
            not_for_device(&ptx("sm_90a"), (10, 0)).as_deref(),
            Some("sm_90a code runs on compute capability 9.0 only")
        );
        assert_eq!(
            not_for_device(&ptx("sm_90a"), (8, 9)).as_deref(),
            Some("sm_90a code runs on compute capability 9.0 only")
        );
        assert_eq!(not_for_device(".version 8.0\n", (8, 0)), None);
        // every module names its target: the real ones read as the driver reads them
        for source in crate::kernels::all() {
            let wanted = source.ptx.contains(".target sm_90a");
            assert_eq!(
                not_for_device(&source.ptx, (8, 0)).is_some(),
                wanted
                    || source.ptx.contains(".target sm_89")
                    || source.ptx.contains(".target sm_90"),
                "{}",
                source.name
            );
            assert_eq!(not_for_device(&source.ptx, (9, 0)), None, "{}", source.name);
        }
    }

    /// Architecture-specific modules name their target to the linker (`CU_TARGET_COMPUTE_90A`
    /// is 65626 in cuda.h), the others leave it to the context.
    #[test]
    fn only_architecture_specific_modules_name_their_jit_target() {
        let module = |target: &str| format!(".version 8.0\n.target {target}\n.address_size 64\n");
        assert_eq!(jit_target(&module("sm_90a"), (9, 0)), Some(65626));
        assert_eq!(
            jit_target(&module("sm_90a"), (9, 0)),
            Some(cudarc::driver::sys::CUjit_target::CU_TARGET_COMPUTE_90A as c_uint)
        );
        assert_eq!(jit_target(&module("sm_90"), (9, 0)), None);
        assert_eq!(jit_target(&module("sm_80"), (9, 0)), None);
        for source in crate::kernels::all() {
            let specific = crate::kernels::target(&source.ptx).is_some_and(|t| t.ends_with('a'));
            assert_eq!(
                jit_target(&source.ptx, (9, 0)).is_some(),
                specific,
                "{}",
                source.name
            );
        }
    }

    #[test]
    fn spills_are_summed_from_the_log() {
        let log = "ptxas info    : Compiling entry function 'a' for 'sm_90'\n\
                   ptxas info    : Function properties for a\n    \
                   0 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n\
                   ptxas info    : Used 40 registers\n\
                   ptxas info    : Function properties for b\n    \
                   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
        assert_eq!(spill_bytes(log), 20);
        assert_eq!(spill_bytes("ptxas info    : Used 40 registers"), 0);
    }
}
