//! Measuring: the runner (warm-up, samples, verify, a row per case), the per-GPU worker
//! processes, the sampler of run conditions, the run-time forecast and the signal handling;
//! and `watch`'s sampling loop.

pub mod forecast;
pub mod interrupt;
pub mod orchestrate;
pub mod outputs;
pub mod runner;
pub mod sampler;
pub mod watch;
pub mod worker;
