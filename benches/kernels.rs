//! `cargo bench`: criterion over the same kernels as `roofprobe run`, on CUDA device 0 when
//! there is one, else on the host (with a one-line note).
//!
//! Each iteration batch is timed by the backend's own clock (`iter_custom`: CUDA events on the
//! GPU, the monotonic clock on the host), so criterion's statistics are over device time, and
//! throughput is reported in decimal bytes (GB/s) from the same work table as the CSV; the
//! compute cases (peaks, tensor cores, the intensity sweep's points with k > 0, and every GEMM
//! shape and implementation, 2·M·N·K each) report their operations as elements (1 elem/s =
//! 1 FLOP/s). After a
//! case is benchmarked its output is checked; an invalid kernel aborts the bench rather than
//! report a number.
//!
//! `ROOFPROBE_BENCH_SIZE` (bytes per array, default 64 MiB) sets the arrays' size, and the
//! largest matrix a GEMM shape may have.
//!
//! Only the cases criterion's filter lets run are prepared (`cargo bench -- gemm/`): with every
//! case prepared, `cargo bench -- peak/fma/f32` took 43 s on the host, 3 s without
//! (2026-12-05, 2-vCPU Xeon VM), and on a GPU it means gigabytes of arrays and every module's
//! JIT.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roofprobe::backend::cuda::{device_count, CudaBackend};
use roofprobe::backend::host::HostBackend;
use roofprobe::backend::{Backend, SizeRequest};
use roofprobe::cli::{bench_filter, BenchFilter};
use std::time::Duration;

/// Whether criterion's filter on this command line lets the benchmark `id` (group/function)
/// run: the filter as criterion reads it ([`bench_filter`]) and matches it.
fn filter() -> impl Fn(&str) -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = bench_filter(&args);
    // (a filter that is no regular expression: criterion stops with its own message)
    let regex = match &filter {
        BenchFilter::Regex(text) => regex::Regex::new(text).ok(),
        _ => None,
    };
    move |id: &str| match &filter {
        BenchFilter::All => true,
        BenchFilter::None => false,
        BenchFilter::Exact(text) => id == text,
        BenchFilter::Regex(_) => regex.as_ref().is_none_or(|r| r.is_match(id)),
    }
}

fn backend() -> Box<dyn Backend> {
    match device_count() {
        Ok(n) if n > 0 => match CudaBackend::open(0) {
            Ok(b) => return Box::new(b),
            Err(e) => eprintln!("note: cuda:0 unusable ({e}); benchmarking the host CPU"),
        },
        Ok(_) => eprintln!("note: no CUDA device; benchmarking the host CPU"),
        Err(e) => eprintln!("note: no GPU ({e}); benchmarking the host CPU"),
    }
    Box::new(HostBackend::new())
}

fn size() -> u64 {
    let Ok(text) = std::env::var("ROOFPROBE_BENCH_SIZE") else {
        return 64 << 20;
    };
    roofprobe::cli::parse_bytes(&text).unwrap_or_else(|e| {
        eprintln!("error: ROOFPROBE_BENCH_SIZE: {e}");
        std::process::exit(2)
    })
}

fn kernels(c: &mut Criterion) {
    let mut backend = backend();
    let device = backend.info().name.clone();
    let planned = backend
        .cases(SizeRequest::BytesPerArray(size()))
        .expect("the bench size fits in memory; set ROOFPROBE_BENCH_SIZE smaller");
    let runs = filter();
    let mut group = c.benchmark_group(device.clone());
    for p in planned {
        let case = p.case;
        if !runs(&format!("{device}/{}", case.id())) {
            continue;
        }
        // Bandwidth cases in bytes; compute ceilings and the sweep's points with arithmetic in
        // operations (the roofline's y axis), as elements.
        let compute = case.family != roofprobe::bench::Family::Stream && case.work.flops > 0;
        let throughput = if case.work.bytes() > 0 && !compute {
            Throughput::BytesDecimal(case.work.bytes())
        } else {
            Throughput::Elements(case.work.flops)
        };
        group.throughput(throughput);
        // A case planned with the reason it cannot run (a module the driver refused) says so
        // and the other cases still run.
        let mut prepared = match backend.prepare(&case) {
            Ok(prepared) => prepared,
            Err(e) => {
                eprintln!("skipped {}: {e}", case.id());
                continue;
            }
        };
        // A benchmark filtered out on the command line (`cargo bench -- peak`) never runs, and
        // its poisoned output must not be checked.
        let mut ran = false;
        group.bench_function(case.id(), |b| {
            ran = true;
            b.iter_custom(|iters| {
                let secs = prepared
                    .run(iters.min(u32::MAX as u64) as u32)
                    .expect("running a case");
                Duration::from_secs_f64(secs)
            })
        });
        if !ran {
            continue;
        }
        let verdict = prepared.verify().expect("checking a case");
        assert!(
            verdict.valid,
            "{} is invalid: {}",
            case.id(),
            verdict.detail
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = kernels
}
criterion_main!(benches);
