//! GPU tests (testing layer 4): every kernel on every CUDA device found, with validation, on
//! sizes that hit the edges. Where there is no device they print why they skipped.

use roofprobe::backend::cuda::{device_count, CudaBackend};
use roofprobe::backend::{Backend, SizeRequest};
use roofprobe::bench::stream::{self, StreamKernel};

/// Devices to test, or `None` after printing why there are none.
fn devices(test: &str) -> Option<usize> {
    match device_count() {
        Ok(0) => {
            eprintln!("skipped {test}: the CUDA driver reports no device");
            None
        }
        Ok(n) => Some(n),
        Err(e) => {
            eprintln!("skipped {test}: no GPU here ({e})");
            None
        }
    }
}

#[test]
fn every_stream_kernel_validates_on_every_device() {
    let Some(n) = devices("every_stream_kernel_validates_on_every_device") else {
        return;
    };
    for ordinal in 0..n {
        let mut gpu = CudaBackend::open(ordinal).expect("opening the device");
        // 1 element, a vector plus a tail, a block and a bit, and a size past one grid sweep.
        for elements in [1u64, 5, 4099, 3_000_017] {
            for p in stream::PRECISIONS {
                for k in StreamKernel::ALL {
                    let case = k.case(p, elements);
                    let mut prepared = gpu.prepare(&case).expect("prepare");
                    let secs = prepared.run(3).expect("run");
                    assert!(secs > 0.0, "{} timed at {secs}", case.id());
                    let verdict = prepared.verify().expect("verify");
                    assert!(
                        verdict.valid,
                        "cuda:{ordinal} {} n={elements}: {}",
                        case.id(),
                        verdict.detail
                    );
                }
            }
        }
    }
}

#[test]
fn planned_cases_fit_and_validate_at_a_small_size() {
    let Some(n) = devices("planned_cases_fit_and_validate_at_a_small_size") else {
        return;
    };
    for ordinal in 0..n {
        let mut gpu = CudaBackend::open(ordinal).expect("opening the device");
        for planned in gpu.cases(SizeRequest::BytesPerArray(8 << 20)).unwrap() {
            let mut prepared = gpu.prepare(&planned.case).expect("prepare");
            prepared.run(2).expect("run");
            let verdict = prepared.verify().expect("verify");
            assert!(verdict.valid, "{}: {}", planned.case.id(), verdict.detail);
        }
    }
}

#[test]
fn an_impossible_size_is_a_clear_error() {
    let Some(_) = devices("an_impossible_size_is_a_clear_error") else {
        return;
    };
    let gpu = CudaBackend::open(0).expect("opening the device");
    let err = gpu
        .cases(SizeRequest::BytesPerArray(1 << 50))
        .unwrap_err()
        .to_string();
    assert!(err.contains("pass a smaller --size"), "{err}");
}
