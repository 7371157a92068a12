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
//! `ROOFPROBE_BENCH_KERNEL_TIMEOUT` (seconds) sets how long a launch may take before it is given
//! up on, where a simulated GPU's interpreter needs longer than the backend's deadline.
//! `ROOFPROBE_BENCH_SIZE` (bytes per array) sets the arrays' size, and the largest matrix a GEMM
//! shape may have: 64 MiB by default under `cargo bench`, 1 MiB where criterion only checks each
//! benchmark once (`cargo test`, which runs this target as a test, or `-- --test`): there the
//! point is that every case prepares, runs and validates, not its speed. A case whose module
//! the driver refuses is skipped with its reason, and the others run. A case that fails to run
//! or to check, or is invalid, ends the bench with one `error:` line and exit code 1, never a
//! number.
//!
//! Only the cases criterion's filter lets run are prepared (`cargo bench -- gemm/`): with every
//! case prepared, `cargo bench -- peak/fma/f32` took 43 s on the host, 3 s without
//! (2026-12-05, 2-vCPU Xeon VM), and on a GPU it means gigabytes of arrays and every module's
//! JIT.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roofprobe::backend::cuda::{device_count, CudaBackend};
use roofprobe::backend::host::HostBackend;
use roofprobe::backend::{Backend, SizeRequest};
use roofprobe::cases::Family;
mod filter;

use filter::{bench_filter, bench_measures, BenchFilter};
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
            Ok(mut b) => {
                if let Some(secs) = kernel_deadline_secs() {
                    b.set_kernel_deadline(std::time::Duration::from_secs(secs));
                }
                return Box::new(b);
            }
            Err(e) => eprintln!("note: cuda:0 unusable ({e}); benchmarking the host CPU"),
        },
        Ok(_) => eprintln!("note: no CUDA device; benchmarking the host CPU"),
        Err(e) => eprintln!("note: no GPU ({e}); benchmarking the host CPU"),
    }
    Box::new(HostBackend::new())
}

/// `ROOFPROBE_BENCH_KERNEL_TIMEOUT`: whole seconds a launch may take before it is given up on
/// (the backend's own deadline where unset, or not a positive whole number): an interpreter
/// standing in for a GPU on a busy machine may need more than a GPU ever does.
fn kernel_deadline_secs() -> Option<u64> {
    std::env::var("ROOFPROBE_BENCH_KERNEL_TIMEOUT")
        .ok()?
        .parse()
        .ok()
        .filter(|&s| s > 0)
}

/// Bytes per array: `ROOFPROBE_BENCH_SIZE`, else 64 MiB where criterion measures and 1 MiB
/// where it only checks each benchmark once.
fn size(measures: bool) -> u64 {
    let Ok(text) = std::env::var("ROOFPROBE_BENCH_SIZE") else {
        return if measures { 64 << 20 } else { 1 << 20 };
    };
    roofprobe::cli::parse_bytes(&text).unwrap_or_else(|e| {
        fail(&format!(
            "ROOFPROBE_BENCH_SIZE: {e} (bytes per array, e.g. 64M)"
        ))
    })
}

/// Ends the bench with one line saying what happened (exit code 1).
fn fail(what: &str) -> ! {
    eprintln!("error: {}", roofprobe::text::one_line(what));
    std::process::exit(1)
}

fn kernels(c: &mut Criterion) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bytes = size(bench_measures(&args));
    let mut backend = backend();
    let device = backend.info().name.clone();
    let planned = backend
        .cases(SizeRequest::BytesPerArray(bytes))
        .unwrap_or_else(|e| {
            fail(&format!(
                "planning the cases at {bytes} bytes per array: {e}; set ROOFPROBE_BENCH_SIZE \
                 smaller"
            ))
        });
    let runs = filter();
    let (mut tried, mut skipped) = (0, 0);
    for p in planned {
        let case = p.case;
        let id = case.id();
        if !runs(&format!("{device}/{id}")) {
            continue;
        }
        // One group a case, named after the device, so that a case with no work to count (a
        // launch; a capacity, whose one reading is no bandwidth) reports no throughput rather
        // than the one before it, or 0 elem/s.
        let mut group = c.benchmark_group(device.clone());
        // Bandwidth cases in bytes; compute ceilings and the sweep's points with arithmetic in
        // operations (the roofline's y axis), as elements.
        let compute = case.family != Family::Stream && case.work.flops > 0;
        let throughput = if case.family == Family::Capacity {
            None
        } else if case.work.bytes() > 0 && !compute {
            Some(Throughput::BytesDecimal(case.work.bytes()))
        } else if case.work.flops > 0 {
            Some(Throughput::Elements(case.work.flops))
        } else {
            None
        };
        if let Some(throughput) = throughput {
            group.throughput(throughput);
        }
        // A case planned with the reason it cannot run (a module the driver refused) says so
        // and the other cases still run.
        tried += 1;
        let mut prepared = match backend.prepare(&case) {
            Ok(prepared) => prepared,
            Err(e) => {
                skipped += 1;
                eprintln!(
                    "skipped {id}: {}",
                    roofprobe::text::one_line(&e.to_string())
                );
                continue;
            }
        };
        // A benchmark filtered out on the command line (`cargo bench -- peak`) never runs, and
        // its poisoned output must not be checked.
        let mut ran = false;
        group.bench_function(&id, |b| {
            ran = true;
            b.iter_custom(|iters| {
                let launches = u32::try_from(iters).unwrap_or(u32::MAX);
                match prepared.run(launches) {
                    Ok(secs) => Duration::from_secs_f64(secs),
                    Err(e) => fail(&format!("{id}: running it: {e}")),
                }
            })
        });
        group.finish();
        if !ran {
            continue;
        }
        match prepared.verify() {
            Ok(verdict) if verdict.valid => {}
            Ok(verdict) => fail(&format!("{id} is invalid: {}", verdict.detail)),
            Err(e) => fail(&format!("{id}: checking its output: {e}")),
        }
    }
    if skipped > 0 {
        eprintln!("skipped {skipped} of {tried} cases (each one's reason above)");
    }
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
