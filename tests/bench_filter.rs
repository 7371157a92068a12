//! The filter `cargo bench -- ARGS` gives criterion, as benches/kernels.rs reads it: the bench
//! target's own file, included here because a bench with `harness = false` runs no tests.

#[path = "../benches/filter.rs"]
mod filter;

use filter::{bench_filter, bench_measures, BenchFilter};

/// criterion measures under `cargo bench` alone; `cargo test` runs each benchmark once.
#[test]
fn a_bench_measures_only_under_cargo_bench() {
    assert!(bench_measures(&["--bench"]));
    assert!(bench_measures(&["--bench", "gemm/", "--sample-size", "10"]));
    // `cargo test` runs the bench target with no arguments, or with a filter
    assert!(!bench_measures::<&str>(&[]));
    assert!(!bench_measures(&["gemm/"]));
    assert!(!bench_measures(&["--bench", "--test"]));
    assert!(!bench_measures(&["--bench", "--list"]));
}

/// The filter is criterion's positional argument, past the options and their values.
#[test]
fn the_bench_filter_is_read_as_criterion_reads_it() {
    assert_eq!(bench_filter::<&str>(&[]), BenchFilter::All);
    assert_eq!(bench_filter(&["--bench"]), BenchFilter::All);
    assert_eq!(
        bench_filter(&["--bench", "peak/fma"]),
        BenchFilter::Regex("peak/fma".into())
    );
    // an option's value is no filter, in either form
    assert_eq!(
        bench_filter(&["--sample-size", "10", "-b", "base", "gemm/"]),
        BenchFilter::Regex("gemm/".into())
    );
    assert_eq!(
        bench_filter(&["--sample-size=10", "--noplot", "stream/"]),
        BenchFilter::Regex("stream/".into())
    );
    assert_eq!(bench_filter(&["--save-baseline", "main"]), BenchFilter::All);
    assert_eq!(
        bench_filter(&["--exact", "dev/peak/fma/f32"]),
        BenchFilter::Exact("dev/peak/fma/f32".into())
    );
    assert_eq!(bench_filter(&["--ignored", "peak"]), BenchFilter::None);
}
