//! The latency family: load-to-use latency from a pointer chase, one thread, dependent loads.
//!
//! A case is `latency/<kernel>/i32/<KiB>`: a ring of `elements` cache lines (`<KiB>` KiB in
//! all) linked in one random cycle that visits every line once, and `hops` dependent loads per
//! launch, each from a line of its own, of where the next line is: the host's chase loads the
//! next line's 32-bit byte offset (which x86's and Arm's addressing add to the ring's base in
//! the load itself), a GPU's the next line's 64-bit address, so that no add stands between two
//! loads (a 64-bit add is two dependent integer instructions on an SM, 4 cycles each on Volta
//! by Jia et al.'s 2018 microbenchmarks). Nothing else runs between two loads, so a launch lasts
//! `hops` load latencies. The chase carries on from where the last launch stopped, so over the
//! samples it walks the whole ring, however large.
//!
//! Work is counted as the bytes the loads return (`hops ×` [`load_bytes`]: 4 on the host, 8 on a
//! GPU): a row's `gbps` is then that small, latency-bound rate, and the figures a user wants
//! follow from the row alone: [`ns_per_load`] = the fastest sample's time per launch / hops, and
//! [`cycles_per_load`] = that × the clock the row records. The fastest, not the median (as
//! lmbench's `lat_mem_rd` takes the best of its runs): a latency is a floor, and a sample that a
//! preemption or another process's cache traffic slowed says nothing about the memory. The order
//! is random (SplitMix64, the same every run) so no prefetcher can guess the next line, and one
//! cycle (so no load ever finds a line it visited a moment ago).
//!
//! Validation: after `h` hops from line 0 the chase must stand on line [`order`]`[h mod lines]`;
//! a skipped, repeated or reordered hop ends elsewhere. This module must not time anything.

use super::{input_bits, Case, Family, Precision, Verdict, Work};

/// The case name's type: the host's ring holds 32-bit offsets (a GPU's, 64-bit addresses, is
/// named the same, so rows compare across devices).
pub const PRECISION: Precision = Precision::I32;

/// Bytes one load of the host's chase returns: the next line's 32-bit byte offset.
pub const HOST_INDEX_BYTES: u64 = 4;

/// Bytes one load of a GPU's chase returns: the next line's 64-bit device address.
pub const GPU_POINTER_BYTES: u64 = 8;

/// Bytes one load of `kernel`'s chase returns: [`GPU_POINTER_BYTES`] for a GPU's kernels
/// ([`GPU_KERNELS`]), [`HOST_INDEX_BYTES`] for the host's.
pub fn load_bytes(kernel: &str) -> u64 {
    if GPU_KERNELS.contains(&kernel) {
        GPU_POINTER_BYTES
    } else {
        HOST_INDEX_BYTES
    }
}

/// The smallest working set: 4 KiB, one page, which any L1 holds.
pub const MIN_BYTES: u64 = 4 << 10;

/// The host's kernel: a chase over 64-byte lines.
pub const HOST_KERNEL: &str = "chase";

/// A GPU's kernels: `ca` loads through L1 and L2, `cg` through L2 only (`ld.global.cg`).
pub const GPU_KERNELS: [&str; 2] = ["ca", "cg"];

/// Bytes per line of a GPU's ring: one L1 line (four 32-byte L2 sectors).
pub const GPU_LINE_BYTES: u64 = 128;

/// The most lines a ring may have: the indices are 32-bit.
pub const MAX_LINES: u64 = u32::MAX as u64;

/// The case chasing `hops` times per launch through `bytes` of `line_bytes`-byte lines.
pub fn case(kernel: &str, line_bytes: u64, bytes: u64, hops: u64) -> Case {
    Case {
        family: Family::Latency,
        kernel: kernel.to_string(),
        precision: PRECISION,
        param: Some(super::Param::Count(
            u32::try_from(bytes >> 10).unwrap_or(u32::MAX),
        )),
        elements: (bytes / line_bytes.max(1)).clamp(1, MAX_LINES),
        working_set_bytes: bytes,
        work: Work {
            bytes_read: hops * load_bytes(kernel),
            bytes_written: 0,
            flops: 0,
        },
    }
}

/// Dependent loads per launch.
pub fn hops(case: &Case) -> u64 {
    case.work.bytes_read / load_bytes(&case.kernel)
}

/// Bytes per line of the ring.
pub fn line_bytes(case: &Case) -> u64 {
    case.working_set_bytes / case.elements.max(1)
}

/// The working sets: powers of two from [`MIN_BYTES`] up to the first at least `to_bytes`
/// (4 × the last-level cache, so the largest measures DRAM).
pub fn sizes(to_bytes: u64) -> Vec<u64> {
    let mut out = vec![MIN_BYTES];
    while *out.last().unwrap_or(&MIN_BYTES) < to_bytes {
        out.push(out.last().unwrap_or(&MIN_BYTES) * 2);
    }
    out
}

/// The order the chase visits the `lines` lines in: line 0 first, the rest shuffled
/// (Fisher–Yates on SplitMix64 bits), so `order[k]` is where the chase stands after `k` hops.
pub fn order(lines: u64) -> Vec<u32> {
    let n = lines.clamp(1, MAX_LINES) as usize;
    let mut order: Vec<u32> = (0..n as u32).collect();
    for k in (2..n).rev() {
        // a position in 1..=k: line 0 stays first
        let j = 1 + (input_bits(13, k as u64) % k as u64) as usize;
        order.swap(k, j);
    }
    order
}

/// `next[line]`: the line after `line` in [`order`], the last leading back to line 0.
pub fn successors(order: &[u32]) -> Vec<u32> {
    let mut next = vec![0u32; order.len()];
    for (k, &line) in order.iter().enumerate() {
        next[line as usize] = order[(k + 1) % order.len()];
    }
    next
}

/// Checks that a chase of `total_hops` hops from line 0 through a ring of `order` stands on
/// the line it must.
pub fn check_end(order: &[u32], total_hops: u64, got: u64) -> Verdict {
    let want = order[(total_hops % order.len().max(1) as u64) as usize];
    if got == u64::from(want) {
        Verdict::valid()
    } else {
        Verdict::invalid(format!(
            "the chase ended on line {got} after {total_hops} hops; it should be on line {want}"
        ))
    }
}

/// Nanoseconds per dependent load of a row of this family (kernel `kernel`): its fastest
/// sample's time per launch (`time_min_s`) over its hops (`bytes /` [`load_bytes`]).
pub fn ns_per_load(kernel: &str, bytes: u64, min_secs: f64) -> Option<f64> {
    let hops = bytes / load_bytes(kernel);
    (hops > 0 && min_secs.is_finite() && min_secs > 0.0).then(|| min_secs * 1e9 / hops as f64)
}

/// Core (or SM) cycles per load at `clock_mhz`.
pub fn cycles_per_load(ns: f64, clock_mhz: f64) -> f64 {
    ns * clock_mhz / 1e3
}

/// A run of working sets with the same latency: one level of the hierarchy as the chase sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Plateau {
    pub from_bytes: u64,
    pub to_bytes: u64,
    /// The median of its points' ns per load.
    pub ns: f64,
    pub points: usize,
}

/// How far (as a ratio) a point may lie from the median of the plateau it joins.
pub const PLATEAU_TOLERANCE: f64 = 1.5;

/// The plateaus of a latency curve (`(working set bytes, ns per load)`, any order): runs of
/// consecutive working sets whose latency stays within [`PLATEAU_TOLERANCE`] of the run's
/// median, at least two points long. A point between two levels (a working set that spills
/// part of the way) joins neither and is dropped; a change point is where a run ends.
pub fn plateaus(points: &[(u64, f64)]) -> Vec<Plateau> {
    let mut sorted: Vec<(u64, f64)> = points
        .iter()
        .copied()
        .filter(|(_, ns)| ns.is_finite() && *ns > 0.0)
        .collect();
    sorted.sort_by_key(|p| p.0);
    // the one median (a run here is never empty)
    let median = |run: &[(u64, f64)]| {
        let v: Vec<f64> = run.iter().map(|p| p.1).collect();
        crate::stats::median(&v).unwrap_or(f64::NAN)
    };
    let mut out = Vec::new();
    let mut start = 0;
    while start < sorted.len() {
        let mut end = start + 1;
        while end < sorted.len() {
            let m = median(&sorted[start..end]);
            let ratio = sorted[end].1 / m;
            if !(1.0 / PLATEAU_TOLERANCE..=PLATEAU_TOLERANCE).contains(&ratio) {
                break;
            }
            end += 1;
        }
        if end - start >= 2 {
            out.push(Plateau {
                from_bytes: sorted[start].0,
                to_bytes: sorted[end - 1].0,
                ns: median(&sorted[start..end]),
                points: end - start,
            });
        }
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_one_cycle_through_every_line() {
        for lines in [1u64, 2, 3, 64, 1000, 4099] {
            let order = order(lines);
            assert_eq!(order[0], 0);
            let mut seen = order.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..lines as u32).collect::<Vec<_>>(), "a permutation");
            // Following the successors from line 0 visits the lines in `order` and comes back.
            let next = successors(&order);
            let mut at = 0u32;
            for (k, &want) in order.iter().enumerate() {
                assert_eq!(at, want, "lines={lines} hop {k}");
                at = next[at as usize];
            }
            assert_eq!(at, 0, "one cycle of length {lines}");
        }
        // Shuffled: far from the identity, so the next line is not the next address.
        let o = order(4096);
        let in_place = o
            .iter()
            .enumerate()
            .filter(|(i, &l)| *i == l as usize)
            .count();
        assert!(in_place < 16, "{in_place} lines left in place");
    }

    #[test]
    fn the_end_of_the_chase_is_checked() {
        let order = order(100);
        let next = successors(&order);
        let mut at = 0u32;
        for _ in 0..1234 {
            at = next[at as usize];
        }
        assert!(check_end(&order, 1234, u64::from(at)).valid);
        let v = check_end(&order, 1233, u64::from(at));
        assert!(!v.valid);
        assert!(v.detail.contains("after 1233 hops"), "{}", v.detail);
    }

    #[test]
    fn cases_sizes_and_figures() {
        let c = case(HOST_KERNEL, 64, 32 << 10, 1 << 18);
        assert_eq!(c.id(), "latency/chase/i32/32");
        assert_eq!((c.elements, hops(&c), line_bytes(&c)), (512, 1 << 18, 64));
        assert_eq!(c.work.bytes(), 4 << 18);
        let s = sizes(128 << 20);
        assert_eq!(s.first(), Some(&(4 << 10)));
        assert_eq!(s.last(), Some(&(128 << 20)));
        assert_eq!(s.len(), 16);
        assert_eq!(sizes(5 << 10), vec![4 << 10, 8 << 10]);
        let ns = ns_per_load(HOST_KERNEL, 4 << 18, 1e-3).unwrap();
        assert!((ns - 1e6 / 262_144.0).abs() < 1e-9);
        assert_eq!(ns_per_load(HOST_KERNEL, 0, 1.0), None);
        // a GPU's hop returns a 64-bit address: 8 bytes a hop, the same hops
        for kernel in GPU_KERNELS {
            let g = case(kernel, GPU_LINE_BYTES, 32 << 10, 1 << 18);
            assert_eq!((hops(&g), g.work.bytes()), (1 << 18, 8 << 18));
            let ns_gpu = ns_per_load(kernel, g.work.bytes(), 1e-3).unwrap();
            assert!((ns_gpu - ns).abs() < 1e-12);
        }
        assert!((cycles_per_load(1.25, 4000.0) - 5.0).abs() < 1e-12);
    }

    #[test]
    fn plateaus_are_runs_of_equal_latency() {
        let kib = |k: u64| k << 10;
        let curve = [
            (kib(4), 1.0),
            (kib(8), 1.02),
            (kib(16), 0.98),
            (kib(32), 1.0),
            (kib(64), 1.8), // between L1 and L2: on neither plateau
            (kib(128), 3.0),
            (kib(256), 3.1),
            (kib(512), 3.2),
            (kib(1024), 9.0),
            (kib(2048), 10.0),
            (kib(4096), 10.5),
            (kib(8192), 60.0),
        ];
        let p = plateaus(&curve);
        assert_eq!(p.len(), 3, "{p:?}");
        assert_eq!((p[0].from_bytes, p[0].to_bytes), (kib(4), kib(32)));
        assert!((p[0].ns - 1.0).abs() < 1e-12);
        assert_eq!(
            (p[1].from_bytes, p[1].to_bytes, p[1].points),
            (kib(128), kib(512), 3)
        );
        assert_eq!((p[2].from_bytes, p[2].to_bytes), (kib(1024), kib(4096)));
        // A single point is no plateau; order does not matter.
        let mut shuffled = curve.to_vec();
        shuffled.reverse();
        assert_eq!(plateaus(&shuffled), p);
        assert!(plateaus(&curve[..1]).is_empty());
    }
}
