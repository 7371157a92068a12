//! The cache sweep: the bandwidth of each cache level, from a read-only sum over a working set
//! sized to stay in that level, read again and again within one launch.
//!
//! A case is `cache/<level>/i32/<KiB>`: level `l1`, `l2` or `l3`, a working set of `<KiB>` KiB
//! of 32-bit words, and `passes` reads of all of it per launch (its work: `passes ×` the working
//! set read, nothing written, counted the STREAM way). Each worker (CPU thread, GPU thread) sums
//! its own share with wrapping 32-bit adds and stores its sum, which must equal `passes ×` the sum
//! of its share exactly, so a skipped, repeated or misplaced word fails the check.
//!
//! The sweep (`cache/sweep/i32/<KiB>`): the same read-only sum over working sets in fine steps
//! ([`sweep_sizes`]: [`HOST_STEPS_PER_OCTAVE`] per octave on the host, from [`MIN_BYTES`] to 4×
//! the last-level cache), read with the caching loads on the host, so its curve shows every
//! level and where it ends ([`crate::stats::changepoint`] finds them); a GPU's reads past L1
//! (`ld.global.cg`), so its curve shows the L2 and DRAM even where the SMs' L1s together
//! outgrow the L2. Its steps take few samples each
//! ([`crate::run::runner::RunConfig::for_case`]): the curve, not one step, is the figure.
//!
//! Sizes: a level's working sets lie above twice the aggregate capacity of the level before it
//! (so the data no longer fits there) and at most half its own aggregate capacity (so it stays
//! in). A GPU reads its L2 cases with `ld.global.cg`, which bypasses L1, so its L2 sizes start
//! low; its L1 cases use the default caching load.

use super::{input_bits, Case, Family, Precision, Verdict, Work};
use roofprobe_calibration::MemoryLevel;

/// The words are 32-bit integers, summed with wrapping adds.
pub const PRECISION: Precision = Precision::I32;

/// Bytes per word.
pub const WORD_BYTES: u64 = 4;

/// The smallest working set a case uses: below it, the fixed cost of a launch or a barrier is
/// not small beside one pass.
pub const MIN_BYTES: u64 = 16 << 10;

/// Most working sets per level (the largest ones that fit the level's range).
pub const SIZES_PER_LEVEL: usize = 4;

/// The kernel (level) names, and the memory level each measures.
pub const LEVELS: [(&str, MemoryLevel); 3] = [
    ("l1", MemoryLevel::L1),
    ("l2", MemoryLevel::L2),
    ("l3", MemoryLevel::L3),
];

/// The sweep's kernel name.
pub const SWEEP: &str = "sweep";

/// Steps per octave of working set in the host's sweep.
pub const HOST_STEPS_PER_OCTAVE: u32 = 8;

/// Whether `kernel` is a cache kernel (a level's, or the sweep).
pub fn is_kernel(kernel: &str) -> bool {
    kernel == SWEEP || level(kernel).is_some()
}

/// Whether `case` is a step of the sweep.
pub fn is_sweep_step(case: &Case) -> bool {
    case.family == Family::Cache && case.kernel == SWEEP
}

/// Steps per octave of working set in a GPU's sweep: coarser than the host's, so a default
/// run on an H200 stays within its four minutes (19 steps there, see `crate::run::forecast`).
pub const GPU_STEPS_PER_OCTAVE: u32 = 3;

/// The sweep's working sets: `from_bytes × 2^(i / steps_per_octave)` rounded to whole KiB (so
/// each names its case), from `from_bytes` (at least [`MIN_BYTES`]) up to `to_bytes`, and
/// `to_bytes` itself (in whole KiB) where the steps stop short of it; each once.
pub fn sweep_sizes(from_bytes: u64, to_bytes: u64, steps_per_octave: u32) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for i in 0.. {
        let exact = from_bytes.max(MIN_BYTES) as f64
            * (f64::from(i) / f64::from(steps_per_octave.max(1))).exp2();
        let bytes = ((exact / 1024.0).round() as u64) << 10;
        if bytes > to_bytes {
            break;
        }
        if out.last() != Some(&bytes) {
            out.push(bytes);
        }
    }
    // The top of the range itself, where the steps stop short of it.
    let top = to_bytes >> 10 << 10;
    if out.last().is_some_and(|&b| b < top) {
        out.push(top);
    }
    out
}

/// The sweep's cases from `from_bytes` up to `to_bytes`, each read enough times per launch to read about
/// `bytes_per_launch` in all.
pub fn sweep_cases(
    from_bytes: u64,
    to_bytes: u64,
    steps_per_octave: u32,
    bytes_per_launch: u64,
) -> Vec<Case> {
    sweep_sizes(from_bytes, to_bytes, steps_per_octave)
        .into_iter()
        .map(|bytes| case(SWEEP, bytes, passes_for(bytes, bytes_per_launch)))
        .collect()
}

/// The note a sweep step carries: the cache levels the device or OS reports, as `(name, bytes
/// the sweep's workers share)`, in a form [`reported_levels`] reads back from the row. The CSV
/// has no column for them; the note is where a row says how its size was chosen.
pub fn sweep_note(levels: &[(String, u64)]) -> String {
    let listed: Vec<String> = levels.iter().map(|(n, b)| format!("{n}={b}")).collect();
    format!("{REPORTED_PREFIX} {}", listed.join(" "))
}

const REPORTED_PREFIX: &str = "caches reported (bytes the workers share):";

/// The cache levels a sweep row's note reports ([`sweep_note`]); empty where it has none.
pub fn reported_levels(note: &str) -> Vec<(String, u64)> {
    let Some((_, rest)) = note.split_once(REPORTED_PREFIX) else {
        return Vec::new();
    };
    rest.split([' ', ';'])
        .map_while(|t| {
            if t.is_empty() {
                return Some(None);
            }
            let (name, bytes) = t.split_once('=')?;
            Some(Some((name.to_string(), bytes.parse().ok()?)))
        })
        .flatten()
        .collect()
}

/// The memory level a cache case's kernel name measures.
pub fn level(kernel: &str) -> Option<MemoryLevel> {
    LEVELS.iter().find(|(k, _)| *k == kernel).map(|(_, l)| *l)
}

/// Word `i` of the array: random bits, never all zero.
pub fn input(i: u64) -> u32 {
    (input_bits(11, i) as u32) | 1
}

/// The case reading `bytes` (a multiple of 16) `passes` times per launch, for `level` (`l1`…).
pub fn case(level: &str, bytes: u64, passes: u64) -> Case {
    Case {
        family: Family::Cache,
        kernel: level.to_string(),
        precision: PRECISION,
        param: Some(super::Param::Count(
            u32::try_from(bytes >> 10).unwrap_or(u32::MAX),
        )),
        elements: bytes / WORD_BYTES,
        working_set_bytes: bytes,
        work: Work {
            bytes_read: passes * bytes,
            bytes_written: 0,
            flops: 0,
        },
    }
}

/// Reads of the whole working set per launch.
pub fn passes(case: &Case) -> u64 {
    case.work.bytes_read / (case.elements * WORD_BYTES).max(1)
}

/// The working sets for one level: powers of two above `2 × below` (the aggregate capacity of
/// the level before, 0 for the first) and at most `capacity / 2`, the largest
/// [`SIZES_PER_LEVEL`] of them, each at least [`MIN_BYTES`]. Empty where the range is empty.
pub fn sizes(below: u64, capacity: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut bytes = (capacity / 2).max(1);
    bytes = 1 << (63 - bytes.leading_zeros()); // round down to a power of two
    while bytes > 2 * below && bytes >= MIN_BYTES && out.len() < SIZES_PER_LEVEL {
        out.push(bytes);
        bytes /= 2;
    }
    out.reverse();
    out
}

/// One level's cases: its working sets ([`sizes`] above `2 × below`, within `capacity`), each
/// read enough times per launch to read about `bytes_per_launch` in all.
pub fn level_cases(level: &str, below: u64, capacity: u64, bytes_per_launch: u64) -> Vec<Case> {
    sizes(below, capacity)
        .into_iter()
        .map(|bytes| case(level, bytes, passes_for(bytes, bytes_per_launch)))
        .collect()
}

/// Passes per launch so that one launch reads about `bytes_per_launch`.
pub fn passes_for(bytes: u64, bytes_per_launch: u64) -> u64 {
    (bytes_per_launch / bytes.max(1)).max(1)
}

/// Sum of words `range` of the array, wrapping.
pub fn range_sum(range: std::ops::Range<u64>) -> u32 {
    range.fold(0u32, |s, i| s.wrapping_add(input(i)))
}

/// The largest vector index or thread count the GPU cache kernels take: their indices are
/// 32-bit, and an index plus the thread count must not wrap.
pub const GPU_MAX_INDEX: u64 = (1 << 31) - 1;

/// What GPU thread `t` of `threads` sums in one pass over `n` words (a multiple of 4: the GPU
/// kernels read whole 16-byte vectors): vectors `t`, `t + threads`, … below `n / 4`.
pub fn gpu_thread_sum(n: u64, threads: u64, t: u64) -> u32 {
    let vectors = n / 4;
    let mut sum = 0u32;
    let mut v = t;
    while v < vectors {
        sum = sum.wrapping_add(range_sum(4 * v..4 * v + 4));
        v += threads;
    }
    sum
}

/// Checks every worker's sum (`got[w]`, low 32 bits) against `passes × expected(w)`.
pub fn check_sums(passes: u64, got: &[u64], expected: impl Fn(usize) -> u32) -> Verdict {
    let mut wrong = Vec::new();
    let mut count = 0;
    for (w, &g) in got.iter().enumerate() {
        let want = expected(w).wrapping_mul(passes as u32);
        if g as u32 != want {
            count += 1;
            if wrong.len() < 3 {
                wrong.push(format!(
                    "worker {w}: is {:#010x}, should be {want:#010x}",
                    g as u32
                ));
            }
        }
    }
    if count == 0 {
        Verdict::valid()
    } else {
        Verdict::invalid(format!(
            "{count} of {} sums wrong; {}",
            got.len(),
            wrong.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_stay_inside_their_level() {
        // Zen 5, 2 cores: L1d 2 × 48 KiB, L2 2 × 1 MiB, L3 32 MiB.
        assert_eq!(sizes(0, 96 << 10), vec![16 << 10, 32 << 10]);
        assert_eq!(
            sizes(96 << 10, 2 << 20),
            vec![256 << 10, 512 << 10, 1 << 20]
        );
        assert_eq!(sizes(2 << 20, 32 << 20), vec![8 << 20, 16 << 20]);
        // An empty range (a level no bigger than twice the one before) has no sizes.
        assert!(sizes(1 << 20, 2 << 20).is_empty());
        assert!(sizes(0, 16 << 10).is_empty());
        for (below, cap) in [(0, 1 << 30), (3 << 20, 50 << 20), (0, 33 << 20)] {
            let s = sizes(below, cap);
            assert!(s.len() <= SIZES_PER_LEVEL && !s.is_empty());
            assert!(s
                .iter()
                .all(|&b| b > 2 * below && b <= cap / 2 && b >= MIN_BYTES));
            assert!(s.windows(2).all(|w| w[1] == 2 * w[0]));
        }
    }

    #[test]
    fn sweep_steps_are_fine_and_distinct() {
        let s = sweep_sizes(MIN_BYTES, 128 << 20, HOST_STEPS_PER_OCTAVE);
        assert_eq!(s[0], MIN_BYTES);
        assert_eq!(*s.last().unwrap(), 128 << 20);
        // 13 octaves at 8 each, and the first point
        assert_eq!(s.len(), 13 * 8 + 1);
        assert!(s.windows(2).all(|w| w[1] > w[0] && w[1] % 1024 == 0));
        assert!(s
            .windows(2)
            .all(|w| (w[1] as f64 / w[0] as f64) < 1.12 && (w[1] as f64 / w[0] as f64) > 1.05));
        let coarse = sweep_sizes(0, 60 << 20, 2);
        assert_eq!(coarse[..3], [16 << 10, 23 << 10, 32 << 10]);
        assert_eq!(
            sweep_sizes(4 << 20, 240 << 20, 3)[..2],
            [4 << 20, 5161 << 10]
        );
        assert!(sweep_sizes(MIN_BYTES, 8 << 10, 8).is_empty());
        let c = &sweep_cases(MIN_BYTES, 1 << 20, 8, 64 << 20)[8];
        assert_eq!(c.id(), "cache/sweep/i32/32");
        assert!(is_sweep_step(c) && is_kernel("sweep") && is_kernel("l3") && !is_kernel("dram"));
        assert_eq!(passes(c), 2048);
    }

    #[test]
    fn the_reported_levels_come_back_from_the_note() {
        let levels = vec![("L1d".to_string(), 65536), ("L2".to_string(), 2 << 20)];
        let note = format!("2 pinned threads; {}", sweep_note(&levels));
        assert_eq!(reported_levels(&note), levels);
        assert!(reported_levels("2 pinned threads").is_empty());
        let damaged = note.replace("65536", "lots");
        assert!(reported_levels(&damaged).is_empty());
    }

    #[test]
    fn cases_name_their_level_and_count_passes() {
        let c = case("l2", 256 << 10, 1024);
        assert_eq!(c.id(), "cache/l2/i32/256");
        assert_eq!(c.elements, 64 << 10);
        assert_eq!(passes(&c), 1024);
        assert_eq!(c.work.bytes(), 1024 * (256 << 10));
        assert_eq!(c.work.intensity(), Some(0.0));
        assert_eq!(level("l2"), Some(MemoryLevel::L2));
        assert_eq!(level("dram"), None);
        assert_eq!(passes_for(1 << 20, 256 << 20), 256);
        assert_eq!(passes_for(1 << 30, 1 << 20), 1);
    }

    #[test]
    fn thread_sums_cover_every_word_once() {
        for (n, threads) in [(4u64, 4u64), (8, 4), (64, 3), (1000, 8), (4096, 256)] {
            let total =
                (0..threads).fold(0u32, |s, t| s.wrapping_add(gpu_thread_sum(n, threads, t)));
            assert_eq!(total, range_sum(0..n), "n={n} threads={threads}");
        }
        // One worker's slip is caught, and said.
        let sums: Vec<u64> = (0..4)
            .map(|t| gpu_thread_sum(100, 4, t).wrapping_mul(3) as u64)
            .collect();
        assert!(check_sums(3, &sums, |t| gpu_thread_sum(100, 4, t as u64)).valid);
        let mut bad = sums.clone();
        bad[2] ^= 1;
        let v = check_sums(3, &bad, |t| gpu_thread_sum(100, 4, t as u64));
        assert!(!v.valid);
        assert!(
            v.detail.starts_with("1 of 4 sums wrong; worker 2"),
            "{}",
            v.detail
        );
        // The wrong number of passes is caught.
        assert!(!check_sums(2, &sums, |t| gpu_thread_sum(100, 4, t as u64)).valid);
    }
}
