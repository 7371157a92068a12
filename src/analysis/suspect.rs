//! Measurement hygiene: which valid figures are suspect, and why.
//!
//! A row whose kernel output was wrong is invalid and has no figure at all (the runner and
//! [`crate::results::record`] see to that). A valid row can still hold a number not to trust, and it must
//! not look like a good one. Its reasons go in the row's `flags` (`;`-separated), the table's
//! status, the summary after the table, and `run`'s exit code ([`crate::cli::EXIT_SUSPECT`]):
//!
//! | flag | when | why that bound |
//! | --- | --- | --- |
//! | `high_cv(x%)` | the CV of the per-launch times is above `max_cv` (5 %) | a figure that moves by more than a few percent from sample to sample is the machine's noise as much as the kernel's rate |
//! | `below_theory(x%)` | a `peak` row, or a Hopper `wgmma` tensor row, is below `min_of_theory` (80 %) of its theoretical peak at the clock it ran at | register-resident FMA chains reach 95 % or more of units × lanes × 2 × clock where nothing disturbs them, and `wgmma` is the instruction the dense tensor rate is quoted for; far below it, something took the cores (`mma.sync` rows are not held to it: on Hopper it issues at a lower rate no source states) |
//! | `above_roof(x%)` | a roofline point is above its roof by more than its noise ([`crate::analysis::roofline`]) | no kernel beats its roof: one of the two figures is not what the hardware does |
//! | `busy_host(n CPUs)` | on the host, other processes (and a hypervisor's steal) used more than `max_other_load` (10 %) of the CPU time of the CPUs the case ran on | the workers share their cores and the memory with them, and a barrier waits for the slowest |
//! | `busy_gpu(n processes)` | on a GPU, NVML lists another compute or graphics process | it shares the SMs, the memory and the power budget |
//!
//! `tensor` rows are not held to their theory: `mma.sync`, the only tensor instruction the
//! kernels issue, is not expected to reach the peak that newer instructions (`wgmma`) are rated
//! for, so a low figure there describes the instruction, not a disturbance.
//!
//! Pure: rows and thresholds in, flags out. It must not measure, read files or print.

use crate::analysis::roofline::Point;
use crate::cases::Family;
use crate::results::flags::{names, Flag};
use crate::results::record::Record;
use crate::stats::Stopped;
use std::fmt::Write;

/// When a valid figure is suspect. `run` takes each from the command line.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Thresholds {
    /// A row whose CV is above this is `high_cv`.
    pub max_cv: f64,
    /// A `peak` row below this share of its theoretical peak is `below_theory`.
    pub min_of_theory: f64,
    /// A host row during which other processes used more than this share of the CPU time of
    /// the CPUs it ran on is `busy_host`.
    pub max_other_load: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            max_cv: 0.05,
            min_of_theory: 0.80,
            max_other_load: 0.10,
        }
    }
}

/// The flags of one row. `point` is the row's place on the run's roofline so far, if it has
/// one. An invalid row gets none: it is invalid, which says more.
pub fn judge(row: &Record, point: Option<&Point>, t: &Thresholds) -> Vec<Flag> {
    let mut flags = Vec::new();
    if !row.valid {
        return flags;
    }
    // A capacity row's figure is a size, not its call's time: that time's spread says
    // nothing about it.
    if let Some(cv) = row
        .cv
        .filter(|&cv| cv > t.max_cv && row.family != Family::Capacity)
    {
        flags.push(Flag::HighCv(cv));
    }
    if row.family == Family::Peak
        || (row.family == Family::Tensor && crate::analysis::roofline::is_wgmma(&row.kernel))
    {
        let of_theory = row
            .gflops
            .zip(row.theory_gflops.filter(|&t| t > 0.0))
            .map(|(g, t)| g / t);
        if let Some(x) = of_theory.filter(|&x| x < t.min_of_theory) {
            flags.push(Flag::BelowTheory(x));
        }
    }
    if let Some(p) = point.filter(|p| p.above_roof) {
        flags.push(Flag::AboveRoof(p.fraction_of_roof.unwrap_or(f64::NAN)));
    }
    if let Some(cpus) = row
        .other_cpus_busy
        .filter(|&busy| busy > t.max_other_load * f64::from(row.units.max(1)))
    {
        flags.push(Flag::BusyHost(cpus));
    }
    if let Some(n) = row.other_gpu_processes.filter(|&n| n > 0) {
        flags.push(Flag::BusyGpu(n));
    }
    flags
}

/// Whether any valid row is flagged.
pub fn any_suspect(records: &[Record]) -> bool {
    records.iter().any(|r| r.valid && !r.flags.is_empty())
}

/// The summary printed after a run's table: how many figures are suspect, per flag the cases,
/// and what to do. `None` when nothing is flagged.
pub fn summary(records: &[Record]) -> Option<String> {
    let flagged: Vec<&Record> = records
        .iter()
        .filter(|r| r.valid && !r.flags.is_empty())
        .collect();
    if flagged.is_empty() {
        return None;
    }
    let valid = records.iter().filter(|r| r.valid).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nSUSPECT: {} of {valid} valid figures are flagged; they are kept, with the reasons in \
         the CSV's `flags` column:",
        flagged.len()
    );
    for name in Flag::NAMES {
        let cases: Vec<String> = flagged
            .iter()
            .filter(|r| names(&r.flags).any(|n| n == name))
            .map(|r| r.case_id())
            .collect();
        if cases.is_empty() {
            continue;
        }
        const SHOWN: usize = 4;
        let more = if cases.len() > SHOWN {
            format!(", … {} more", cases.len() - SHOWN)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {name:<13} {:>3}  {}: {}{more}",
            cases.len(),
            Flag::meaning(name),
            cases[..cases.len().min(SHOWN)].join(", ")
        );
    }
    let _ = writeln!(
        out,
        "Rerun on a quiet machine, or with --until-stable, before trusting these figures."
    );
    Some(out)
}

/// After an `--until-stable` run: how many cases reached their target spread and which stopped
/// at the time limit (`stopped_by`). `None` for a run that sampled a fixed count.
pub fn stability(records: &[Record]) -> Option<String> {
    let stable = records
        .iter()
        .filter(|r| r.stopped_by == Stopped::Stable.as_str())
        .count();
    // the cases that stopped before they were stable, by why: (stopped_by, said, cases)
    let early: Vec<(&str, &str, Vec<String>)> = [
        (Stopped::TimeLimit.as_str(), "at the time limit"),
        (Stopped::Interrupted.as_str(), "by the interruption"),
    ]
    .into_iter()
    .map(|(why, said)| {
        let cases: Vec<String> = records
            .iter()
            .filter(|r| r.stopped_by == why)
            .map(|r| r.case_id())
            .collect();
        (why, said, cases)
    })
    .filter(|(_, _, cases)| !cases.is_empty())
    .collect();
    if stable == 0 && early.is_empty() {
        return None;
    }
    let mut out = format!("\nuntil stable: {stable} cases reached the target CV");
    for (why, said, cases) in early {
        let _ = write!(
            out,
            "; {} stopped {said} first (stopped_by = {why}): {}",
            cases.len(),
            cases.join(", ")
        );
    }
    out.push('\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::{row, synthetic_run};
    use crate::cases::Precision;
    use crate::results::flags::{check_column, column};

    fn peak(theory_share: f64) -> Record {
        let mut r = row(
            Family::Peak,
            "fma",
            Precision::F32,
            None,
            (0, 1 << 30),
            1e-3,
            true,
        );
        r.theory_gflops = r.gflops.map(|g| g / theory_share);
        r
    }

    #[test]
    fn a_clean_row_has_no_flags() {
        let t = Thresholds::default();
        for r in synthetic_run() {
            assert!(judge(&r, None, &t).is_empty(), "{}", r.case_id());
        }
        assert!(judge(&peak(0.97), None, &t).is_empty());
    }

    #[test]
    fn each_condition_raises_its_flag() {
        let t = Thresholds::default();
        // the loaded machine of the issue: a CV of 101 %
        let mut noisy = peak(0.97);
        noisy.cv = Some(1.01);
        assert_eq!(judge(&noisy, None, &t), [Flag::HighCv(1.01)]);
        // a CV at the bound is not above it
        noisy.cv = Some(0.05);
        assert!(judge(&noisy, None, &t).is_empty());
        // a peak at 48 % of its theory
        let slow = peak(0.48);
        assert!(
            matches!(judge(&slow, None, &t)[..], [Flag::BelowTheory(x)] if (x - 0.48).abs() < 1e-12)
        );
        // a wgmma row is held to its theory, a mma.sync row is not
        let mut wgmma = slow.clone();
        wgmma.family = Family::Tensor;
        wgmma.kernel = "wgmma_m64n256k16".into();
        assert_eq!(judge(&wgmma, None, &t).len(), 1);
        wgmma.kernel = "mma_m16n8k16".into();
        assert!(judge(&wgmma, None, &t).is_empty());
        // an intensity row is not a peak: not held to its theory
        let mut sweep = slow.clone();
        sweep.family = Family::Intensity;
        assert!(judge(&sweep, None, &t).is_empty());
        // a point above its roof
        let point = Point {
            case: "intensity/fma/f32/4".into(),
            family: Family::Intensity,
            precision: Precision::F32,
            param: Some(crate::cases::Param::Count(4)),
            flop_per_byte: 1.0,
            gflops: 139.0,
            bound: crate::analysis::roofline::Bound::Memory,
            roof_gflops: Some(100.0),
            fraction_of_roof: Some(1.39),
            above_roof: true,
            roof_basis: String::new(),
        };
        assert_eq!(judge(&sweep, Some(&point), &t), [Flag::AboveRoof(1.39)]);
        let within = Point {
            above_roof: false,
            ..point.clone()
        };
        assert!(judge(&sweep, Some(&within), &t).is_empty());
        // other processes on the host: 10 % of the 108 "units" of this row is 10.8 CPUs
        let mut busy = peak(0.97);
        busy.other_cpus_busy = Some(12.0);
        assert_eq!(judge(&busy, None, &t), [Flag::BusyHost(12.0)]);
        busy.other_cpus_busy = Some(10.0);
        assert!(judge(&busy, None, &t).is_empty());
        // another process on the GPU
        let mut shared = peak(0.97);
        shared.other_gpu_processes = Some(2);
        assert_eq!(judge(&shared, None, &t), [Flag::BusyGpu(2)]);
        // thresholds are the caller's
        let strict = Thresholds { max_cv: 0.001, ..t };
        assert_eq!(judge(&peak(0.97), None, &strict), [Flag::HighCv(0.01)]);
    }

    #[test]
    fn an_invalid_row_is_not_merely_flagged() {
        let mut bad = peak(0.2);
        bad.cv = Some(2.0);
        bad.valid = false;
        assert!(judge(&bad, None, &Thresholds::default()).is_empty());
    }

    #[test]
    fn column_text_names_and_summary() {
        let flags = [Flag::HighCv(0.123), Flag::BusyHost(1.0), Flag::BusyGpu(1)];
        let text = column(&flags);
        assert_eq!(
            text,
            "high_cv(12.3%);busy_host(1.00 CPUs);busy_gpu(1 process)"
        );
        assert_eq!(
            names(&text).collect::<Vec<_>>(),
            ["high_cv", "busy_host", "busy_gpu"]
        );
        assert_eq!(names("").count(), 0);
        // what a run writes reads back; what none writes does not
        check_column(&text).unwrap();
        check_column("").unwrap();
        check_column(&column(&[Flag::AboveRoof(1.39), Flag::BelowTheory(0.48)])).unwrap();
        for bad in [
            "high_cv",
            "high_cv()",
            "=HYPERLINK(\"x\")",
            "slow(3%)",
            "high_cv(1%);",
            "high_cv(1%)x",
            "busy_gpu((2))",
        ] {
            let e = check_column(bad).unwrap_err();
            assert!(e.starts_with("`flags` holds `"), "{bad}: {e}");
        }

        let mut rows = synthetic_run();
        assert_eq!(summary(&rows), None);
        assert!(!any_suspect(&rows));
        rows[0].flags = text.clone();
        rows[3].flags = "high_cv(8.0%)".into();
        // an invalid row's flags (none are written, and readers refuse a file that has them,
        // but rows built in memory may) do not count
        rows[2].flags = "high_cv(9.0%)".into();
        assert!(any_suspect(&rows));
        let s = summary(&rows).unwrap();
        assert!(s.contains("SUSPECT: 2 of 10 valid figures"), "{s}");
        assert!(
            s.contains("  high_cv         2  the per-launch times varied more than the CV bound: stream/triad/f32, peak/fma/f32"),
            "{s}"
        );
        assert!(s.contains("  busy_host       1"), "{s}");
        assert!(!s.contains("below_theory"), "{s}");
    }

    #[test]
    fn stability_says_which_cases_settled() {
        let mut rows = synthetic_run();
        assert_eq!(stability(&rows), None, "a fixed-count run says nothing");
        for r in &mut rows {
            r.stopped_by = "stable".into();
        }
        rows[3].stopped_by = "time_limit".into();
        let s = stability(&rows).unwrap();
        assert!(s.contains("until stable: 11 cases reached the target CV; 1 stopped at the time limit first (stopped_by = time_limit): peak/fma/f32"), "{s}");
    }
}
