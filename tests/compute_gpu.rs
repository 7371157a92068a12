//! Every compute kernel on every CUDA device that exists: peaks, tensor-core MMAs and the sweep,
//! each run once and checked bit for bit against the host's reference. Without a device (or a
//! driver) the test says why and passes; it runs wherever a GPU is.

use roofprobe::backend::cuda::CudaBackend;
use roofprobe::backend::{Backend, SizeRequest};
use roofprobe::cases::{gemm, Family};
use roofprobe::specs::theory::parse_compute_capability;
use std::io::Write;

#[test]
fn every_compute_kernel_validates_on_every_gpu() {
    let Some(devices) = crate::gpu::devices("every_compute_kernel_validates_on_every_gpu") else {
        return;
    };
    let _gpu = crate::gpu::gpu_lock();
    for ordinal in 0..devices {
        let mut backend = CudaBackend::open(ordinal).unwrap();
        // Not a runaway test: under the simulated driver's interpreter one launch of an mma
        // kernel took over the default 10 s on a loaded 2-core machine (a clean-checkout CI,
        // 2026-12-03, beside a build).
        backend.set_kernel_deadline(std::time::Duration::from_secs(120));
        let max_mhz = backend.info().clock_mhz;
        let name = backend.info().name.clone();
        // Small sweep arrays: this checks the kernels, it does not measure DRAM.
        let bytes = crate::gpu::small_array_bytes(&backend);
        let planned = backend.cases(SizeRequest::BytesPerArray(bytes)).unwrap();
        let compute: Vec<_> = planned
            .into_iter()
            .map(|p| crate::gpu::short_launch(p.case))
            .filter(|c| c.family != Family::Stream)
            .filter(|c| {
                c.count()
                    .is_none_or(|k| [0, 1, 7, 64, 1024].contains(&k) || k == 16)
            })
            .collect();
        let cc = parse_compute_capability(&backend.info().compute_capability);
        if cc.is_none_or(|cc| cc < (8, 0)) {
            let _ = writeln!(
                std::io::stderr(),
                "GPU compute kernels: {name} skipped, the kernels need compute capability 8.0+"
            );
            continue;
        }
        assert!(
            compute.iter().any(|c| c.family == Family::Tensor),
            "{name}: no tensor cases"
        );
        let mut failures = Vec::new();
        for case in &compute {
            // a reference row without its library (no cuBLAS found, or no cuBLASLt fp8
            // algorithm for the shape) is a skipped row in a run, not a broken kernel
            let mut prepared = match backend.prepare(case) {
                Ok(prepared) => prepared,
                Err(roofprobe::Error::Skipped(why)) if case.kernel == gemm::GPU_REFERENCE => {
                    let _ = writeln!(std::io::stderr(), "{name}: {} SKIPPED: {why}", case.id());
                    continue;
                }
                Err(e) => panic!("{name} {}: {e}", case.id()),
            };
            prepared.run(1).unwrap();
            let verdict = prepared.verify().unwrap();
            let clock = prepared.clock_mhz();
            let _ = writeln!(
                std::io::stderr(),
                "{name}: {} {} (clock {clock:?} MHz)",
                case.id(),
                if verdict.valid { "ok" } else { "INVALID" }
            );
            if !verdict.valid {
                failures.push(format!("{}: {}", case.id(), verdict.detail));
            }
            // The sweep's blocks record their clock too; on these small arrays a block may
            // last less than one tick of a coarse %globaltimer, and then none is derived.
            let clock = match case.family {
                Family::Peak | Family::Tensor => {
                    Some(clock.expect("peak and tensor kernels record their clock"))
                }
                _ => clock,
            };
            if let Some(mhz) = clock {
                // a plausible SM clock: between a twentieth of the device's maximum (idle
                // clocks) and 5 GHz; 100 MHz to 5 GHz where the device reports no maximum
                let floor = max_mhz.map_or(100.0, |max| max / 20.0);
                assert!(
                    (floor..5000.0).contains(&mhz),
                    "{name} {}: {mhz} MHz",
                    case.id()
                );
                // %clock64 cycles over %globaltimer nanoseconds: at most the device's maximum
                // clock (a little over, for the timer's granularity on a 1-trip launch), the
                // higher of the driver's attribute and NVML's maximum, which a GeForce board's
                // boost reaches 5-15 % above the attribute
                if let Some(max) = max_mhz {
                    assert!(
                        mhz <= max * 1.1,
                        "{name} {}: {mhz} MHz above the maximum {max} MHz",
                        case.id()
                    );
                }
            }
        }
        assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
    }
}
