//! ptxsim: a PTX interpreter for the instructions roofprobe's kernels use.
//!
//! Used by tests only; never a measurement backend.
