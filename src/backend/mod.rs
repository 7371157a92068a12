//! The one core abstraction: a [`Backend`] is something that can describe its device, prepare a
//! case (allocate, initialise), time it and verify it.
//!
//! Two implementations, chosen once per device: [`cuda::CudaBackend`] (PTX kernels through
//! cudarc, CUDA-event timing) and [`host::HostBackend`] (Rust kernels on every core, monotonic
//! clock). Both are real and both are exercised by the tests; the runner never knows which one
//! it drives.
//!
//! A backend must never print or exit; it returns [`crate::Error`]s whose messages tell the user
//! what to do.

pub mod cuda;
pub mod host;
pub mod watch;

use crate::cases::{Case, Verdict};
use crate::device::{ConditionProbe, Conditions, DeviceInfo};
use crate::Result;
use serde::{Deserialize, Serialize};

/// How large the DRAM cases' arrays should be.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum SizeRequest {
    /// The rule of DESIGN.md: at least 4× the last-level cache and at least 256 MiB per array,
    /// capped by free memory (and then reported).
    Auto,
    /// Exactly this many bytes per array; an error if it does not fit.
    BytesPerArray(u64),
}

/// A case that is ready to run: memory allocated and initialised, outputs poisoned.
pub trait PreparedCase {
    /// Launches the case `reps` times back to back and returns the time all of them took, in
    /// seconds, measured by the device's own clock (CUDA events, or the monotonic clock on the
    /// host) with no launch-queueing overhead outside the launches themselves.
    fn run(&mut self, reps: u32) -> Result<f64>;

    /// Checks the output of the last run against the gold values.
    fn verify(&mut self) -> Result<Verdict>;

    /// Launch geometry or threading used, for the record (`grid 1056x256`, `2 threads`).
    fn launch_note(&self) -> String;

    /// The SM or core clock, in MHz, that this case itself observed while it ran, if it measures
    /// one (a GPU kernel's `%clock64` against `%globaltimer`; the host's dependent-add chain on
    /// the same cores right after the samples). The runner records it in place of the clock
    /// observed around the case. Called after `verify`, and once more where the figure is above
    /// its theory at the first answer: a case whose clock is a reading taken after the samples,
    /// which an interruption can make low (the host's), reads it again then and answers the
    /// higher of its readings; one whose clock is the kernel's own record answers the same.
    fn clock_mhz(&mut self) -> Option<f64> {
        None
    }

    /// The SM clock, in MHz, that the last [`Self::run`] ran at, where the case records one with
    /// every launch and reading it costs the samples nothing (a GPU kernel's block records,
    /// read back between two samples: the clock of the sample's last launch). The runner asks
    /// after every kept sample and pairs each sample's time with its own clock: on a
    /// power-capped part the clock still falls while the samples run, and the last launch's
    /// clock alone is their lowest. `None` where a clock is a measurement of its own (the
    /// host's dependent-add chain, which a sample must not pay for): the runner then asks
    /// [`Self::clock_mhz`] once, after the samples.
    fn sample_clock_mhz(&mut self) -> Option<f64> {
        None
    }

    /// The theoretical peak of this case's arithmetic at `clock_mhz`, in GFLOP/s (units ×
    /// lanes × 2 × clock), where the device's rate for its precision is known. It must be
    /// proportional to `clock_mhz`: the runner asks for it at 1 MHz and scales it by the clock
    /// it records.
    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        let _ = clock_mhz;
        None
    }

    /// Whether a sample is a fixed piece of work rather than launches batched to last the
    /// sample time: a handful of driver or OS calls (a capacity case, whose call's time is not
    /// the figure) or a fixed batch of launches (a launch case, [`Self::one_shot_reps`]). The
    /// runner then takes its fewest samples, with no warm-up (a launch case warms itself when
    /// it is prepared) and no batching of its own.
    fn one_shot(&self) -> bool {
        false
    }

    /// How many launches one one-shot sample runs back to back (a launch case: `run(reps)`
    /// times that many between two events); the runner divides the sample by them and records
    /// them as the row's `reps`. 1 for a case whose sample is one call.
    fn one_shot_reps(&self) -> u32 {
        1
    }

    /// The bytes the case found, for a case whose figure is a size (a capacity case): the
    /// runner records them as the row's `working_set_bytes` and `elements`. Called once,
    /// after `verify`.
    fn measured_bytes(&self) -> Option<u64> {
        None
    }
}

/// A device that can run cases.
pub trait Backend {
    /// What the device is.
    fn info(&self) -> &DeviceInfo;

    /// The cases this backend runs, sized for this device. Notes on how sizes were chosen
    /// (e.g. reduced to fit free memory) are returned beside them, one per case id.
    fn cases(&self, size: SizeRequest) -> Result<Vec<PlannedCase>>;

    /// Allocates and initialises a case.
    fn prepare(&mut self, case: &Case) -> Result<Box<dyn PreparedCase + '_>>;

    /// Observes the run conditions now.
    fn conditions(&self) -> Conditions;

    /// Smallest wall time one timed sample should last, so that timer resolution and
    /// per-sample overhead stay far below the figure.
    fn min_sample_secs(&self) -> f64;

    /// A probe the runner reads from a thread of its own while the samples run (NVML on a
    /// GPU); `None` where reading would disturb the measurement or tells nothing new.
    fn condition_probe(&self) -> Option<ConditionProbe> {
        None
    }

    /// Why the device cannot run anything more in this process (a kernel faulted, or never
    /// finished), or `None` while it can. The runner stops at the first case after which it
    /// is lost: the cases left belong to a fresh process.
    fn lost(&self) -> Option<String> {
        None
    }

    /// Seconds spent so far first-touching memory new to the process, as part of preparing
    /// cases (the host backend's arena, [`host::arena::Arena::touch_secs`]); 0 where the
    /// backend does not tell it apart.
    fn touch_secs(&self) -> f64 {
        0.0
    }
}

/// A case with the note on how its size was chosen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedCase {
    pub case: Case,
    pub note: String,
}

/// Bytes per array wanted under the design's DRAM rule: at least 4 × the last-level cache and
/// at least 256 MiB.
pub fn dram_rule_bytes(llc_bytes: u64) -> u64 {
    (4 * llc_bytes).max(256 << 20)
}

/// `wanted` bytes per array, capped (to a multiple of 4 KiB, which every precision divides) so
/// that `arrays` arrays fit in `usable_bytes`; with a note saying so when it was capped.
pub fn fit_arrays(wanted: u64, arrays: u64, usable_bytes: u64) -> (u64, Option<String>) {
    let cap = (usable_bytes / arrays.max(1)) & !4095;
    if wanted <= cap {
        (wanted, None)
    } else {
        (
            cap,
            Some(format!(
                "array size reduced from {wanted} to {cap} bytes to fit free memory"
            )),
        )
    }
}

/// Plans cases made of `arrays` arrays: `auto_bytes` per array when the size is automatic
/// (capped to fit, and the note says so), else exactly the bytes asked for, or an error naming
/// `what` if that many arrays of them do not fit in `usable_bytes` of `device`.
pub fn plan_arrays(
    size: SizeRequest,
    auto_bytes: u64,
    arrays: u64,
    usable_bytes: u64,
    device: &str,
    what: &str,
    cases: impl FnOnce(u64) -> Vec<Case>,
) -> Result<Vec<PlannedCase>> {
    let (bytes, note) = match size {
        SizeRequest::Auto => fit_arrays(auto_bytes, arrays, usable_bytes),
        SizeRequest::BytesPerArray(bytes) => {
            // saturating: `--size` is the user's number, and a product that wraps would fit
            let needed = arrays.saturating_mul(bytes);
            if needed > usable_bytes {
                return Err(crate::Error::OutOfMemory {
                    case: format!("{what} ({arrays} arrays)"),
                    device: device.to_string(),
                    needed_bytes: needed,
                    free_bytes: usable_bytes,
                });
            }
            (bytes, None)
        }
    };
    Ok(cases(bytes)
        .into_iter()
        .map(|case| PlannedCase {
            case,
            note: note.clone().unwrap_or_default(),
        })
        .collect())
}

/// The size sweep's cases ([`crate::cases::efficiency`]): arrays from 1 MiB doubling up to
/// `max_array_bytes`, to the three arrays of a triad within `usable_bytes`, and to `--size`
/// where one was given (none below 1 MiB). Where memory, not the cap, stopped it, the largest
/// case's note says so.
pub fn efficiency_cases(
    size: SizeRequest,
    usable_bytes: u64,
    max_array_bytes: u64,
) -> Vec<PlannedCase> {
    use crate::cases::efficiency;
    let fits = usable_bytes / 3;
    let asked = match size {
        SizeRequest::Auto => max_array_bytes,
        SizeRequest::BytesPerArray(b) => b.min(max_array_bytes),
    };
    let largest = asked.min(fits);
    let cases = efficiency::cases(largest);
    let capped_by_memory = fits < asked
        && efficiency::array_sizes(asked).len() > efficiency::array_sizes(largest).len();
    let per_kernel = efficiency::array_sizes(largest).len();
    cases
        .into_iter()
        .enumerate()
        .map(|(i, case)| PlannedCase {
            note: if capped_by_memory && per_kernel > 0 && i % per_kernel == per_kernel - 1 {
                format!(
                    "larger sizes left out: three arrays must fit {} MiB of free memory",
                    usable_bytes >> 20
                )
            } else {
                String::new()
            },
            case,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dram_size_rule() {
        // small LLC: the 256 MiB floor wins; big LLC: 4x wins
        assert_eq!(dram_rule_bytes(32 << 20), 256 << 20);
        assert_eq!(dram_rule_bytes(128 << 20), 512 << 20);
        assert_eq!(fit_arrays(256 << 20, 3, 100 << 30), (256 << 20, None));
        // not enough memory: capped, with a note
        let (bytes, note) = fit_arrays(256 << 20, 3, 300 << 20);
        assert_eq!(bytes, 100 << 20);
        assert!(note.unwrap().contains("reduced"));
    }

    #[test]
    fn planned_arrays_follow_the_size_request() {
        let one = |bytes: u64| {
            vec![crate::cases::stream::StreamKernel::Copy
                .case(crate::cases::Precision::F32, bytes / 4)]
        };
        let auto = plan_arrays(SizeRequest::Auto, 1 << 20, 2, 1 << 30, "host", "x", one).unwrap();
        assert_eq!(
            (auto[0].case.elements, auto[0].note.as_str()),
            (1 << 18, "")
        );
        let capped = plan_arrays(SizeRequest::Auto, 1 << 30, 2, 1 << 20, "host", "x", one).unwrap();
        assert_eq!(capped[0].case.elements, 1 << 17);
        assert!(capped[0].note.contains("reduced"));
        let exact = plan_arrays(
            SizeRequest::BytesPerArray(4096),
            1 << 30,
            2,
            1 << 20,
            "host",
            "x",
            one,
        )
        .unwrap();
        assert_eq!(exact[0].case.elements, 1024);
        let err = plan_arrays(
            SizeRequest::BytesPerArray(1 << 20),
            0,
            3,
            1 << 20,
            "cuda:0",
            "stream cases",
            one,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with(
                "stream cases (3 arrays) needs 3.0 MiB (3145728 bytes) but only 1.0 MiB"
            ),
            "{err}"
        );
        assert!(err.contains("cuda:0"));
        // a --size whose product with the array count wraps a u64 is refused, not accepted
        // (or, unoptimised, a panic)
        let wraps = plan_arrays(
            SizeRequest::BytesPerArray(u64::MAX / 2),
            0,
            3,
            1 << 40,
            "cuda:0",
            "stream cases",
            one,
        );
        assert!(wraps.is_err());
    }
}
