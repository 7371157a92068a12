//! The one integration-test binary (ripgrep's layout): each module is one layer of the
//! testing plan (docs/testing.md).

mod bench_filter;
mod changepoint;
mod cli;
mod cli_roofline;
mod common;
mod compare;
mod compute_gpu;
mod cuda_args;
mod cuda_plan;
mod docs;
mod driver;
mod estimate;
mod exports;
mod files;
mod fleet;
mod fragments;
mod fuzz;
mod gemm_cases;
mod golden;
mod gpu;
mod interp;
mod kernel_args;
mod layers;
mod link_cases;
mod offline;
mod roofline;
mod scripts;
mod sim;
mod specs;
mod specs_theory;
mod svg;
mod svg_browser;
mod svg_labels;
mod table;
mod tools;
