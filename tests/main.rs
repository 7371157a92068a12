//! The one integration-test binary.

mod compute_gpu;
mod sass;
