//! ptxsim: a PTX interpreter for the instructions roofprobe's kernels use, so that `cargo test`
//! proves on a machine without a GPU that every kernel computes the right thing.
//!
//! Used by tests only; never a measurement backend (it says nothing about speed).
//!
//! ```
//! use ptxsim::{Arg, Memory, Module};
//!
//! let ptx = r#"
//! .version 7.0
//! .target sm_80
//! .address_size 64
//! .visible .entry twice(.param .u64 out, .param .u32 n)
//! {
//!     .reg .pred %p;
//!     .reg .b32 %r<4>;
//!     .reg .b64 %rd<4>;
//!     ld.param.u64 %rd1, [out];
//!     ld.param.u32 %r1, [n];
//!     mov.u32 %r2, %tid.x;
//!     setp.ge.u32 %p, %r2, %r1;
//!     @%p bra done;
//!     mul.wide.u32 %rd2, %r2, 4;
//!     add.u64 %rd3, %rd1, %rd2;
//!     shl.b32 %r3, %r2, 1;
//!     st.global.u32 [%rd3], %r3;
//! done:
//!     ret;
//! }
//! "#;
//! let module = Module::parse(ptx)?;
//! let mut mem = Memory::new();
//! let out = mem.alloc(5 * 4);
//! module.launch("twice", (1, 1, 1), (32, 1, 1), 0, &[Arg::Ptr(out), Arg::U32(5)], &mut mem)?;
//! assert_eq!(mem.read::<u32>(out, 5)?, vec![0, 2, 4, 6, 8]);
//! # Ok::<(), ptxsim::Error>(())
//! ```
//!
//! Layers: `parse` (text to syntax tree) → `decode` (to a compact IR, once; everything not
//! implemented is rejected here with its line) → `exec` (warps of 32 lanes in lockstep,
//! barriers, shared-memory race detection, bounds checks). `numeric` holds the exact rounding
//! of every float format; `mma` the tensor-core fragment layouts.

mod decode;
mod error;
mod exec;
mod ir;
mod memory;
pub mod mma;
pub mod numeric;
mod parse;
mod types;

pub use decode::{Kernel, KernelParam};
pub use error::Error;
pub use exec::{Arg, LaunchConfig, LaunchStats, UniformBranchPolicy, MAX_SHARED_BYTES};
pub use memory::{DevicePtr, Element, Memory, POISON_BYTE};
pub use types::Ty;

/// A parsed and decoded PTX module: its entries, ready to launch.
#[derive(Debug, Clone)]
pub struct Module {
    /// `.version major.minor`, if declared.
    pub version: Option<(u32, u32)>,
    /// `.target` names (`sm_80`, ...).
    pub targets: Vec<String>,
    kernels: Vec<Kernel>,
}

impl Module {
    /// Parses and decodes PTX text. Any instruction, modifier, type or directive ptxsim does
    /// not implement is an error naming it and its line.
    pub fn parse(ptx: &str) -> Result<Module, Error> {
        let ast = parse::parse_module(ptx)?;
        let kernels = decode::build_kernels(&ast)?;
        Ok(Module {
            version: ast.version,
            targets: ast.targets,
            kernels,
        })
    }

    /// Names of the `.entry` functions, in file order.
    pub fn entries(&self) -> Vec<&str> {
        self.kernels.iter().map(|k| k.name.as_str()).collect()
    }

    /// The decoded entry called `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// Launches `name` on a `grid` of blocks of `block` threads, with `dynamic_shared_bytes`
    /// of dynamic shared memory, and runs it to completion.
    pub fn launch(
        &self,
        name: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        dynamic_shared_bytes: u32,
        args: &[Arg],
        mem: &mut Memory,
    ) -> Result<LaunchStats, Error> {
        self.launch_with(
            name,
            &LaunchConfig::new(grid, block, dynamic_shared_bytes),
            args,
            mem,
        )
    }

    /// [`Module::launch`] with every option spelled out.
    pub fn launch_with(
        &self,
        name: &str,
        config: &LaunchConfig,
        args: &[Arg],
        mem: &mut Memory,
    ) -> Result<LaunchStats, Error> {
        let kernel = self.kernel(name).ok_or_else(|| {
            Error::Launch(format!(
                "no entry `{name}` in this module (entries: {})",
                self.entries().join(", ")
            ))
        })?;
        exec::launch(kernel, config, args, mem)
    }
}
