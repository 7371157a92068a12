//! The capacity family: how much memory a device really offers, in bytes.
//!
//! A case is `capacity/<figure>/u8`, one row per figure ([`Figure`]): `total` (what the driver
//! or the OS reports), `free` (free now: on a GPU right after this process created its context,
//! on the host the kernel's `MemAvailable`), `context` (a GPU's memory in use right after the
//! context was created: total − free then, an upper bound on the context's own cost, since it
//! also holds the driver's reservation and any other process's memory, which the row's
//! `other_gpu_processes` counts) and `largest` (a GPU's largest single allocation that
//! succeeds, found by [`largest_allocation`]: a bounded binary search, each allocation freed at
//! once).
//!
//! The figure is the row's `working_set_bytes` (and `elements`: a capacity row counts bytes,
//! precision `u8`). No column was added: the figure fills the column that says how much memory
//! a case occupies, and the note says how it was found. The timed operation is the driver or OS
//! call that reads the figure (`largest`: one allocation of that size and its free), and its
//! work is the 8 bytes of the figure it returns, so a row's `gbps` is that small rate, never a
//! bandwidth ([`crate::analysis::roofline`] and [`crate::analysis::calibration`] take no capacity row as one).
//!
//! The host has no `largest` row: finding it means touching gigabytes (an untouched `mmap`
//! always succeeds, with or without `MAP_NORESERVE`, and proves nothing) and risks the OOM
//! killer on a machine others share. Its rows report what the kernel says, and say so.
//!
//! Validation ([`check`]): the figures must be consistent, `largest ≤ free ≤ total`,
//! `context ≤ total`, every figure positive. This module must not allocate or time anything.

use super::{Case, Family, Precision, Verdict, Work};

/// A capacity row counts bytes.
pub const PRECISION: Precision = Precision::U8;

/// Bytes one reading returns (one 64-bit figure): the work of a capacity row.
pub const FIGURE_BYTES: u64 = 8;

/// The finest resolution of the largest-allocation search on a large device: 64 MiB.
pub const STEP_BYTES: u64 = 64 << 20;

/// The most allocations the search tries: on a device so large that 64 MiB steps would need
/// more, the step grows instead (2^15 steps of the free memory).
pub const MAX_STEPS: u32 = 16;

/// One figure of a device's capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    Total,
    Free,
    Context,
    Largest,
}

impl Figure {
    pub fn as_str(self) -> &'static str {
        match self {
            Figure::Total => "total",
            Figure::Free => "free",
            Figure::Context => "context",
            Figure::Largest => "largest",
        }
    }

    pub fn parse(kernel: &str) -> Option<Figure> {
        GPU_FIGURES.into_iter().find(|f| f.as_str() == kernel)
    }
}

/// The figures a GPU reports, in run order.
pub const GPU_FIGURES: [Figure; 4] = [
    Figure::Total,
    Figure::Free,
    Figure::Context,
    Figure::Largest,
];

/// The figures the host reports: what the kernel says, nothing probed (see the module doc).
pub const HOST_FIGURES: [Figure; 2] = [Figure::Total, Figure::Free];

/// The case for `figure`, planned at `bytes` (the figure as known when planning; the run
/// records the figure it reads).
pub fn case(figure: Figure, bytes: u64) -> Case {
    let bytes = bytes.max(1);
    Case {
        family: Family::Capacity,
        kernel: figure.as_str().to_string(),
        precision: PRECISION,
        param: None,
        elements: bytes,
        working_set_bytes: bytes,
        work: Work {
            bytes_read: FIGURE_BYTES,
            bytes_written: 0,
            flops: 0,
        },
    }
}

/// A device's capacity, in bytes; `None` where the device has no such figure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capacity {
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub context_bytes: Option<u64>,
    pub largest_allocation_bytes: Option<u64>,
}

impl Capacity {
    /// The bytes of one figure.
    pub fn bytes(&self, figure: Figure) -> Option<u64> {
        match figure {
            Figure::Total => Some(self.total_bytes),
            Figure::Free => Some(self.free_bytes),
            Figure::Context => self.context_bytes,
            Figure::Largest => self.largest_allocation_bytes,
        }
    }
}

/// Checks that the figures are consistent: every one positive, `largest ≤ free ≤ total` and
/// `context ≤ total`.
pub fn check(c: &Capacity) -> Verdict {
    let mut wrong = Vec::new();
    if c.total_bytes == 0 {
        wrong.push("total is 0".to_string());
    }
    if c.free_bytes == 0 {
        wrong.push("free is 0".to_string());
    }
    if c.free_bytes > c.total_bytes {
        wrong.push(format!("free {} > total {}", c.free_bytes, c.total_bytes));
    }
    if let Some(context) = c.context_bytes {
        if context == 0 || context > c.total_bytes {
            wrong.push(format!(
                "context {context} is not within 1..=total {}",
                c.total_bytes
            ));
        }
    }
    if let Some(largest) = c.largest_allocation_bytes {
        if largest == 0 {
            wrong.push("no allocation succeeded (largest is 0)".to_string());
        }
        if largest > c.free_bytes {
            wrong.push(format!("largest {largest} > free {}", c.free_bytes));
        }
    }
    if wrong.is_empty() {
        Verdict::valid()
    } else {
        Verdict::invalid(format!("inconsistent capacity: {}", wrong.join("; ")))
    }
}

/// What the largest-allocation search found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Search {
    /// The largest size that succeeded (0 if none did).
    pub largest_bytes: u64,
    /// The resolution: the true largest lies below `largest_bytes + step_bytes`.
    pub step_bytes: u64,
    /// Allocations tried.
    pub steps: u32,
}

/// The step of a search up to `upper_bytes`: [`STEP_BYTES`], finer on a device with less than
/// 64 steps of it (1/64 of the memory, at least 4 KiB), coarser where [`MAX_STEPS`] would not
/// reach.
pub fn step_bytes(upper_bytes: u64) -> u64 {
    let fine = STEP_BYTES.min(upper_bytes / 64).max(4096);
    fine.max(upper_bytes >> (MAX_STEPS - 1))
}

/// The largest multiple of [`step_bytes`] up to `upper_bytes` that `try_alloc` can allocate,
/// by binary search: the whole of it first (a device that gives it all needs one step), then
/// halving the interval between the largest size that succeeded and the smallest that failed.
/// `try_alloc(bytes)` allocates and at once frees, returning whether the allocation succeeded
/// (`Ok(false)` for out of memory); any other error ends the search. At most [`MAX_STEPS`]
/// allocations.
pub fn largest_allocation<E>(
    upper_bytes: u64,
    mut try_alloc: impl FnMut(u64) -> Result<bool, E>,
) -> Result<Search, E> {
    let step = step_bytes(upper_bytes);
    // in steps: `good` succeeded (0: nothing yet), `bad` failed (one past the top: untried)
    let mut good = 0u64;
    let mut bad = upper_bytes / step + 1;
    let mut steps = 0u32;
    while bad - good > 1 && steps < MAX_STEPS {
        // the top first, then the middle
        let k = if steps == 0 {
            bad - 1
        } else {
            good + (bad - good) / 2
        };
        steps += 1;
        if try_alloc(k * step)? {
            good = k;
        } else {
            bad = k;
        }
    }
    Ok(Search {
        largest_bytes: good * step,
        step_bytes: step,
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a fake allocator with a known limit, the search finds the largest multiple of
    /// its step within the limit, in few steps, and never asks for more than the upper bound.
    #[test]
    fn the_search_finds_a_fake_allocators_limit() {
        for (upper, limit) in [
            (141u64 << 30, 139u64 << 30),
            (141 << 30, (100 << 30) + 12345),
            (80 << 30, 80 << 30),
            (24 << 30, 1 << 20),
            (2 << 20, (1 << 20) + 5000),
            (1 << 20, 0),
        ] {
            let mut asked = Vec::new();
            let found = largest_allocation::<()>(upper, |bytes| {
                asked.push(bytes);
                Ok(bytes <= limit)
            })
            .unwrap();
            let step = found.step_bytes;
            assert!(found.largest_bytes <= limit.min(upper), "{upper} {limit}");
            assert!(
                found.largest_bytes + step > limit.min(upper),
                "{upper} {limit}: {found:?} stops a step short"
            );
            assert_eq!(found.largest_bytes % step, 0);
            assert!(found.steps <= MAX_STEPS && found.steps as usize == asked.len());
            assert!(asked.iter().all(|&b| b <= upper && b > 0));
            if upper >= 64 * STEP_BYTES {
                assert_eq!(step, STEP_BYTES, "64 MiB resolution on a large device");
            }
        }
        // all of it at once: one step
        let all = largest_allocation::<()>(8 << 30, |_| Ok(true)).unwrap();
        assert_eq!((all.largest_bytes, all.steps), (8 << 30, 1));
        // a huge device: the step grows so the steps stay bounded
        let huge = largest_allocation::<()>(1 << 50, |b| Ok(b <= 1 << 49)).unwrap();
        assert!(huge.steps <= MAX_STEPS && huge.largest_bytes == 1 << 49);
        // another error ends the search
        assert_eq!(
            largest_allocation(1 << 30, |_| Err("lost")).unwrap_err(),
            "lost"
        );
    }

    #[test]
    fn consistent_figures_are_valid_and_others_say_why() {
        let good = Capacity {
            total_bytes: 100,
            free_bytes: 80,
            context_bytes: Some(20),
            largest_allocation_bytes: Some(64),
        };
        assert!(check(&good).valid);
        assert!(
            check(&Capacity {
                context_bytes: None,
                largest_allocation_bytes: None,
                ..good
            })
            .valid
        );
        for (bad, why) in [
            (
                Capacity {
                    largest_allocation_bytes: Some(81),
                    ..good
                },
                "largest 81 > free 80",
            ),
            (
                Capacity {
                    free_bytes: 101,
                    ..good
                },
                "free 101 > total 100",
            ),
            (
                Capacity {
                    largest_allocation_bytes: Some(0),
                    ..good
                },
                "no allocation succeeded",
            ),
            (
                Capacity {
                    context_bytes: Some(101),
                    ..good
                },
                "context 101",
            ),
            (
                Capacity {
                    total_bytes: 0,
                    free_bytes: 0,
                    context_bytes: None,
                    largest_allocation_bytes: None,
                },
                "total is 0",
            ),
        ] {
            let v = check(&bad);
            assert!(!v.valid && v.detail.contains(why), "{why}: {}", v.detail);
        }
    }

    #[test]
    fn a_case_carries_its_figure_in_bytes() {
        let c = case(Figure::Largest, 5 << 30);
        assert_eq!(c.id(), "capacity/largest/u8");
        assert_eq!((c.elements, c.working_set_bytes), (5 << 30, 5 << 30));
        assert_eq!(c.work.bytes(), FIGURE_BYTES);
        assert_eq!(Figure::parse("context"), Some(Figure::Context));
        assert_eq!(Figure::parse("triad"), None);
    }
}
