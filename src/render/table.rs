//! The summary table printed after a run (and by `report`): one line per measurement.

use crate::analysis::roofline;
use crate::cases::{cache, latency, Family};
use crate::results::record::Record;
use crate::units::bytes;
use std::fmt::Write;

/// Formats a figure with three significant digits or so, `-` when absent.
pub fn figure(x: Option<f64>) -> String {
    match x {
        None => "-".to_string(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// A duration in s, ms, µs or ns, `-` when absent.
pub fn duration(secs: Option<f64>) -> String {
    match secs {
        None => "-".to_string(),
        Some(s) if s >= 1.0 => format!("{s:.3} s"),
        Some(s) if s >= 1e-3 => format!("{:.3} ms", s * 1e3),
        Some(s) if s >= 1e-6 => format!("{:.2} µs", s * 1e6),
        Some(s) => format!("{:.1} ns", s * 1e9),
    }
}

/// The table of a run's rows. Rows of several devices are grouped under a line per device; a
/// device's latency rows are listed again after its table, as ns and cycles per load with the
/// plateaus they form ([`latency_block`]), and its capacity rows as one line of figures
/// ([`capacity_block`]), its launch rows likewise ([`launch_block`]). A capacity row's figure is its working set; its GB/s (the 8 bytes
/// of the figure over the call's time) is not shown.
pub fn render(records: &[Record]) -> String {
    let mut out = String::new();
    let mut current_run = None;
    let mut group: Vec<&Record> = Vec::new();
    // GEMM ids (`gemm/gemm-crate/f32/8192x28672x8192`) are longer than the others; an id from a
    // damaged file may be any length, and runs past the column rather than widening every row.
    let width = records
        .iter()
        .map(|r| r.case_id().chars().count())
        .max()
        .unwrap_or(0)
        .clamp(28, 40);
    for r in records {
        if current_run != Some(&r.run_id) {
            out.push_str(&latency_block(&group));
            out.push_str(&sweep_block(&group));
            out.push_str(&capacity_block(&group));
            out.push_str(&launch_block(&group));
            out.push_str(&link_block(&group));
            out.push_str(&peer_block(&group));
            group.clear();
            current_run = Some(&r.run_id);
            let cc = if r.compute_capability.is_empty() {
                String::new()
            } else {
                format!(", sm_{}", r.compute_capability.replace('.', ""))
            };
            let units = match r.backend {
                crate::device::BackendKind::Host => "threads",
                crate::device::BackendKind::Cuda => "SMs",
            };
            let _ = writeln!(
                out,
                "\n{} ({}{cc}, {} {units}) on {}; bytes = read + written, each element once",
                r.device_name, r.device_id, r.units, r.host
            );
            let _ = writeln!(
                out,
                "{:<width$} {:>11} {:>9} {:>9} {:>7} {:>11} {:>6}  status",
                "case", "working set", "GB/s", "GFLOP/s", "%theory", "median", "CV"
            );
        }
        // The sweep's steps are a curve, summarised by its plateaus after the table
        // ([`sweep_block`]); a step that failed is listed here with why.
        if r.family == Family::Cache && r.kernel == cache::SWEEP && r.valid {
            group.push(r);
            continue;
        }
        let cv =
            r.cv.map_or_else(|| "-".to_string(), |c| format!("{:.1}%", c * 100.0));
        // A suspect figure never reads `ok`: its flags stand in the status. Our GEMM's ratio to
        // the reference measured on the same shape follows either.
        let ratio = r.ratio_to_reference.map_or_else(String::new, |ratio| {
            format!(
                " ({ratio:.2} x {})",
                crate::cases::gemm::reference_of(&r.kernel).unwrap_or("reference")
            )
        });
        let status = match (r.valid, r.flags.is_empty()) {
            (true, true) => format!("ok{ratio}"),
            (true, false) => format!("suspect: {}{ratio}", r.flags.replace(';', ", ")),
            (false, _) => r.status.clone(),
        };
        // GFLOP/s as a share of the theoretical peak at the clock the case ran at.
        let of_theory = match (r.gflops, r.theory_gflops) {
            (Some(g), Some(t)) if t > 0.0 => format!("{:.1}%", 100.0 * g / t),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            out,
            "{:<width$} {:>11} {:>9} {:>9} {:>7} {:>11} {:>6}  {}",
            r.case_id(),
            bytes(r.working_set_bytes),
            figure(r.gbps.filter(|_| r.family != Family::Capacity)),
            figure(r.gflops),
            of_theory,
            duration(r.time_median_s),
            cv,
            status
        );
        group.push(r);
    }
    out.push_str(&latency_block(&group));
    out.push_str(&sweep_block(&group));
    out.push_str(&capacity_block(&group));
    out.push_str(&efficiency_block(&group));
    out.push_str(&launch_block(&group));
    out.push_str(&link_block(&group));
    out.push_str(&peer_block(&group));
    out
}

/// One device's peer-to-peer copies (the link family's `device_to_device_*` rows): its row of
/// nvbandwidth's matrices, a line per valid row, the copy, this device and the peer (an arrow
/// from the source to the destination), the figure, and the path the row's note recorded.
/// Empty when there are none.
pub fn peer_block(rows: &[&Record]) -> String {
    use crate::cases::link::Transfer;
    let lines: Vec<String> = rows
        .iter()
        .filter(|r| r.family == Family::Link && r.valid)
        .filter_map(|r| {
            let t = Transfer::parse(&r.kernel).filter(|t| t.peer())?;
            let peer = r.param.and_then(|p| p.count())?;
            let (from, to) = if t.peer_reads() {
                (format!("cuda:{peer}"), r.device_id.clone())
            } else {
                (r.device_id.clone(), format!("cuda:{peer}"))
            };
            let path = r.note.rsplit("; ").next().unwrap_or_default();
            Some(format!(
                "  {:<48} {from} -> {to}  {:>9.2} GB/s  {}",
                t.as_str(),
                r.gbps?,
                path
            ))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\npeer to peer (one copy's bytes over its time):\n{}\n",
        lines.join("\n")
    )
}

/// One device's size sweep (family `efficiency`), one line per kernel: the fit
/// `t = a + bytes / BW` over its valid sizes ([`crate::analysis::calibration::size_efficiency_of`]), its
/// residual, and the smallest and largest size's efficiency (bandwidth over the asymptotic).
/// Empty when there is no fit.
pub fn efficiency_block(rows: &[&Record]) -> String {
    let owned: Vec<Record> = rows
        .iter()
        .filter(|r| r.family == Family::Efficiency)
        .map(|r| (*r).clone())
        .collect();
    let mut out = String::new();
    for fit in crate::analysis::calibration::size_efficiency_of(&owned) {
        let (Some(first), Some(last)) = (fit.points.first(), fit.points.last()) else {
            continue;
        };
        let _ = writeln!(
            out,
            "{}size efficiency/{}/{}: t = a + bytes/BW, a = {} us{}, BW = {} GB/s, rms residual \
             {:.1}% over {} sizes; efficiency {:.2} at {} to {:.2} at {} moved",
            if out.is_empty() { "\n" } else { "" },
            fit.kernel,
            fit.precision,
            figure(Some(fit.constant_secs * 1e6)),
            if fit.constant_clamped {
                " (clamped)"
            } else {
                ""
            },
            figure(Some(fit.asymptotic_gbps)),
            100.0 * fit.rms_relative_residual,
            fit.points.len(),
            first.efficiency,
            bytes(first.bytes),
            last.efficiency,
            bytes(last.bytes),
        );
    }
    out
}

/// One device's bandwidth sweep (`cache/sweep` rows) in a few lines: how many steps were valid
/// over which working sets, then each plateau the curve forms ([`roofline::sweep_levels`])
/// with its median step's GB/s, where it ends, and what became of it: the reported cache level
/// whose ceiling it set, or why it set none. `rows` are all the device's rows (a plateau is
/// held against the ceilings of the levels behind it). Empty when there are no sweep rows.
pub fn sweep_block(rows: &[&Record]) -> String {
    use crate::analysis::roofline::PlateauRole;
    use crate::stats::changepoint::Unmatched;
    let steps: Vec<&Record> = rows
        .iter()
        .copied()
        .filter(|r| r.family == Family::Cache && r.kernel == cache::SWEEP)
        .collect();
    let (Some(first), Some(last)) = (
        steps.iter().map(|r| r.working_set_bytes).min(),
        steps.iter().map(|r| r.working_set_bytes).max(),
    ) else {
        return String::new();
    };
    let valid = steps.iter().filter(|r| r.valid).count();
    let mut out = format!(
        "
cache/sweep: read-only sum, {valid} of {} steps valid, {} .. {}; plateaus by change \
         points, matched to the caches reported (summed over the cores or SMs used)\n",
        steps.len(),
        bytes(first),
        bytes(last)
    );
    let owned: Vec<Record> = rows.iter().map(|r| (*r).clone()).collect();
    let plateaus = roofline::sweep_levels(&owned);
    if plateaus.is_empty() {
        out.push_str("  no plateau found\n");
    }
    let span =
        |p: &roofline::SweepPlateau| format!("{} .. {}", bytes(p.from_bytes), bytes(p.to_bytes));
    for s in &plateaus {
        let p = &s.plateau;
        let edge = p
            .edge_bytes
            .map_or_else(String::new, |e| format!(", edge at {}", bytes(e)));
        let level = match p.reported_bytes {
            Some(b) => format!("{} (reported {})", p.matched, bytes(b)),
            None => p.matched.clone(),
        };
        let matched = match &s.role {
            PlateauRole::Ceiling(_) | PlateauRole::NoCeiling | PlateauRole::Dram => level,
            PlateauRole::BelowOuter {
                level: l,
                outer,
                outer_gbps,
                fixed_rows,
            } => format!(
                "{level}, but below {}'s {} GB/s, so not its ceiling: {}",
                outer.as_str(),
                figure(Some(*outer_gbps)),
                if *fixed_rows {
                    format!("{} from its fixed-size rows", l.as_str())
                } else {
                    format!("no fixed-size row measured {}", l.as_str())
                }
            ),
            PlateauRole::Unmatched(Unmatched::NothingReported) => {
                "unmatched: no cache size reported".to_string()
            }
            PlateauRole::Unmatched(Unmatched::NoneNear) => {
                "unmatched: no reported cache within 2x of its edge".to_string()
            }
            PlateauRole::Unmatched(Unmatched::Last) => {
                "unmatched: the last plateau, not past the largest cache reported (not DRAM)"
                    .to_string()
            }
            PlateauRole::Unmatched(Unmatched::Taken { name, by }) => {
                let taker = &plateaus[*by].plateau;
                format!(
                    "unmatched: {name} went to the plateau {} ({} steps to its {})",
                    span(taker),
                    taker.steps,
                    p.steps
                )
            }
        };
        let _ = writeln!(
            out,
            "  plateau {}: {} GB/s median of {} steps{edge}  -> {matched}",
            span(p),
            figure(Some(p.median_gbps)),
            p.steps
        );
    }
    out
}

/// One device's launch rows (family `launch`) on one line: each valid row's figure
/// ([`Record::launch_secs`]) in run order, said as what it is. Empty when there are none.
pub fn launch_block(rows: &[&Record]) -> String {
    let figures: Vec<String> = rows
        .iter()
        .filter(|r| r.family == Family::Launch && r.valid)
        .filter_map(|r| launch_figure(r))
        .collect();
    if figures.is_empty() {
        return String::new();
    }
    format!("\nlaunch: {}\n", figures.join(", "))
}

/// A valid launch row's figure in words (`empty kernel 2.50 µs per launch`); `None` for
/// another row.
pub fn launch_figure(r: &Record) -> Option<String> {
    use crate::cases::launch::What;
    let secs = duration(Some(r.launch_secs()?));
    Some(match What::parse(&r.kernel) {
        Some(What::Empty) => format!("empty kernel {secs} per launch"),
        Some(What::Timer) => format!("event timer resolution {secs}"),
        Some(What::WakeBarrier) => format!("waking the workers and one barrier {secs}"),
        None => format!("{} {secs}", r.kernel),
    })
}

/// One device's host-link copies (family `link`), one line per copy with valid rows at two or
/// more sizes: the fit `time = latency + bytes / bandwidth` ([`crate::stats::fit`]) over their median
/// times, and the asymptote against the nominal rate of the PCIe link the rows' notes recorded
/// (or that none was known). A copy whose times fit no such line says why. Empty when there are
/// no link rows.
pub fn link_block(rows: &[&Record]) -> String {
    use crate::cases::link::{self, Transfer};
    let mut lines = Vec::new();
    for t in Transfer::ALL.into_iter().filter(|t| t.over_link()) {
        let mine: Vec<&&Record> = rows
            .iter()
            .filter(|r| r.family == Family::Link && r.valid && r.kernel == t.as_str())
            .collect();
        if mine.len() < 2 {
            continue;
        }
        let points: Vec<(f64, f64)> = mine
            .iter()
            .filter_map(|r| Some((r.bytes as f64, r.time_median_s?)))
            .collect();
        let nominal = mine
            .iter()
            .find_map(|r| link::link_in_note(&r.note))
            .and_then(|l| Some((l, link::pcie_nominal_gbps(l)?)));
        let figure = match crate::stats::fit::latency_bandwidth(&points) {
            Ok(fit) => {
                let gbps = fit.bytes_per_sec / 1e9;
                let against = match nominal {
                    Some((l, n)) => format!(
                        "{:.0}% of PCIe Gen{} x{} nominal {n:.1} GB/s",
                        gbps / n * 100.0,
                        l.generation,
                        l.width
                    ),
                    None => "link not known".to_string(),
                };
                format!(
                    "{} + bytes / {gbps:.2} GB/s ({} sizes; {against})",
                    duration(Some(fit.latency_secs)).trim(),
                    fit.points
                )
            }
            Err(why) => format!("no fit: {why}"),
        };
        lines.push(format!("  {:<40} {figure}", t.as_str()));
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nlink (time = latency + bytes / bandwidth):\n{}\n",
        lines.join("\n")
    )
}

/// One device's capacity rows (family `capacity`) on one line: each valid figure in binary units, in
/// run order (`total`, `free`, `context`, `largest`). Empty when there are none.
pub fn capacity_block(rows: &[&Record]) -> String {
    let figures: Vec<String> = rows
        .iter()
        .filter(|r| r.family == Family::Capacity && r.valid)
        .map(|r| format!("{} {}", r.kernel, bytes(r.working_set_bytes)))
        .collect();
    if figures.is_empty() {
        return String::new();
    }
    format!("\ncapacity: {}\n", figures.join(", "))
}

/// One device's latency rows (family `latency`), per kernel: each valid row's ns per load and,
/// where the row records a clock, cycles per load; then the plateaus the curve forms
/// ([`latency::plateaus`]), each with its working sets and median latency. Empty when there
/// are none.
pub fn latency_block(rows: &[&Record]) -> String {
    let mut out = String::new();
    let mut kernels: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.family == Family::Latency) {
        if !kernels.contains(&r.kernel.as_str()) {
            kernels.push(&r.kernel);
        }
    }
    for kernel in kernels {
        let _ = writeln!(
            out,
            "\nlatency/{kernel}: one dependent load per hop, one thread\n{:<28} {:>11} {:>9} {:>9}  status",
            "case", "working set", "ns/load", "cycles"
        );
        let mut points = Vec::new();
        let mut clocks = Vec::new();
        for r in rows
            .iter()
            .filter(|r| r.family == Family::Latency && r.kernel == kernel)
        {
            let ns = r
                .time_min_s
                .filter(|_| r.valid)
                .and_then(|t| latency::ns_per_load(&r.kernel, r.bytes, t));
            let cycles = ns
                .zip(r.clock_mhz)
                .map(|(n, mhz)| latency::cycles_per_load(n, mhz));
            if let Some(n) = ns {
                points.push((r.working_set_bytes, n));
                clocks.extend(r.clock_mhz);
            }
            let status = if r.valid { "ok" } else { r.status.as_str() };
            let _ = writeln!(
                out,
                "{:<28} {:>11} {:>9} {:>9}  {status}",
                r.case_id(),
                bytes(r.working_set_bytes),
                figure(ns),
                figure(cycles),
            );
        }
        clocks.sort_by(f64::total_cmp);
        let clock = clocks.get(clocks.len() / 2).copied();
        for p in latency::plateaus(&points) {
            let cycles = clock.map_or_else(String::new, |mhz| {
                format!(
                    ", {} cycles",
                    figure(Some(latency::cycles_per_load(p.ns, mhz)))
                )
            });
            let _ = writeln!(
                out,
                "  plateau {} .. {}: {} ns{cycles} ({} points)",
                bytes(p.from_bytes),
                bytes(p.to_bytes),
                figure(Some(p.ns)),
                p.points
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::stream::StreamKernel;
    use crate::cases::Precision;
    use crate::results::fixtures::measured;

    #[test]
    fn formats() {
        assert_eq!(figure(None), "-");
        assert_eq!(figure(Some(1234.5)), "1234");
        assert_eq!(figure(Some(12.345)), "12.3");
        assert_eq!(figure(Some(1.2345)), "1.23");
        assert_eq!(duration(Some(2.0)), "2.000 s");
        assert_eq!(duration(Some(0.0021)), "2.100 ms");
        assert_eq!(duration(Some(3.5e-6)), "3.50 µs");
        assert_eq!(duration(Some(4e-9)), "4.0 ns");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(256 << 20), "256.0 MiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn table_shows_figures_for_valid_rows_and_reasons_for_invalid_ones() {
        let ok = measured(
            &StreamKernel::Triad.case(Precision::F32, 1 << 20),
            1e-3,
            true,
        );
        let bad = measured(
            &StreamKernel::Copy.case(Precision::F64, 1 << 20),
            1e-3,
            false,
        );
        let t = render(&[ok, bad]);
        let lines: Vec<&str> = t.lines().filter(|l| !l.is_empty()).collect();
        assert!(lines[0].contains("(host, 2 threads)") || lines[0].contains("(host,"));
        assert!(lines[1].starts_with("case"));
        assert!(lines[2].starts_with("stream/triad/f32"));
        assert!(lines[2].contains("12.6"), "{}", lines[2]); // 12 MiB*... / 1 ms
        assert!(lines[3].starts_with("stream/copy/f64"));
        assert!(lines[3].contains("invalid: [3] is 1"));
        assert!(!lines[3].contains("16.8"), "no figure for an invalid row");
    }

    /// Capacity rows show their figure as the working set, no GB/s, and again on one line
    /// in binary units after the table; an invalid row has no figure there.
    #[test]
    fn capacity_rows_show_their_figures_in_gib() {
        use crate::cases::capacity::{self, Figure};
        let row = |figure, bytes, valid| measured(&capacity::case(figure, bytes), 1e-5, valid);
        let rows = [
            row(Figure::Total, 24 << 30, true),
            row(Figure::Free, 3 << 29, true),
            row(Figure::Largest, 1 << 30, false),
        ];
        let t = render(&rows);
        let total = t
            .lines()
            .find(|l| l.starts_with("capacity/total/u8"))
            .unwrap();
        assert!(
            total.contains("24.0 GiB") && !total.contains("0.80"),
            "{total}"
        );
        assert!(
            t.contains("\ncapacity: total 24.0 GiB, free 1.5 GiB\n"),
            "{t}"
        );
        assert_eq!(capacity_block(&[]), "");
    }

    /// Launch rows show their time in the median column and again on one line, said as what
    /// each is; an invalid one has no figure there; no launch rows, no line.
    #[test]
    fn launch_rows_show_their_time_per_launch_on_one_line() {
        use crate::cases::launch::{self, What};
        let rows = [
            measured(&launch::case(What::Empty), 4e-6, true),
            measured(&launch::case(What::Timer), 1e-6, true),
            measured(&launch::case(What::WakeBarrier), 2e-5, false),
        ];
        let t = render(&rows);
        let empty = t
            .lines()
            .find(|l| l.starts_with("launch/empty/i32"))
            .unwrap();
        assert!(
            empty.contains("4.00 µs") && empty.ends_with(" ok"),
            "{empty}"
        );
        assert!(
            t.contains(
                "\nlaunch: empty kernel 4.00 µs per launch, event timer resolution 900.0 ns\n"
            ),
            "{t}"
        );
        assert_eq!(launch_block(&[]), "");
        let stream = measured(
            &StreamKernel::Triad.case(Precision::F32, 1 << 20),
            1e-3,
            true,
        );
        assert!(!render(&[stream]).contains("\nlaunch:"));
    }

    /// Link rows of a copy at several sizes are fitted on one line, latency and asymptote,
    /// against the nominal rate of the link their notes recorded; an invalid row is left out;
    /// a copy at one size has no line.
    #[test]
    fn link_rows_show_their_fit_against_the_link() {
        use crate::cases::link::{self, PcieLink, Transfer};
        let note = link::link_note(Ok((
            PcieLink {
                generation: 4,
                width: 16,
            },
            None,
        )));
        let row = |t, bytes: u64, secs: f64, valid| {
            let mut r = measured(&link::case(t, bytes), secs, valid);
            r.note = note.clone();
            r
        };
        let mut rows: Vec<Record> = [4u64 << 10, 1 << 20, 64 << 20]
            .iter()
            .map(|&b| row(Transfer::HostToDevice, b, 8e-6 + b as f64 / 25e9, true))
            .collect();
        rows.push(row(Transfer::HostToDevice, 16 << 20, 1.0, false));
        rows.push(row(Transfer::DeviceToHost, 4 << 10, 1e-5, true));
        let t = render(&rows);
        let line = t
            .lines()
            .find(|l| l.trim_start().starts_with("host_to_device_memcpy_ce "))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(
            line.contains("+ bytes / 25.00 GB/s (3 sizes; 79% of PCIe Gen4 x16 nominal 31.5 GB/s)"),
            "{line}"
        );
        assert!(!t.contains("  device_to_host_memcpy_ce "), "{t}");
        assert_eq!(link_block(&[]), "");
    }

    /// Peer rows are listed with their direction, figure and path; an invalid one is left out.
    #[test]
    fn peer_rows_show_direction_figure_and_path() {
        use crate::cases::link::{self, Transfer};
        let row = |t, peer, valid| {
            let mut r = measured(&link::peer_case(t, 1 << 20, peer), 1e-4, valid);
            r.device_id = "cuda:0".to_string();
            r.note = "cuMemcpyPeerAsync …; counts the copy's bytes once; NVLink, 18 active \
                      links to it (NVML)"
                .to_string();
            r
        };
        let rows = [
            row(Transfer::PeerRead, 1, true),
            row(Transfer::PeerWrite, 1, true),
            row(Transfer::PeerWriteBidirectional, 2, false),
        ];
        let t = render(&rows);
        let lines: Vec<&str> = t
            .lines()
            .skip_while(|l| !l.starts_with("peer to peer"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 2, "{t}");
        assert!(lines[0].contains("device_to_device_memcpy_read_ce"), "{t}");
        assert!(lines[0].contains("cuda:1 -> cuda:0"), "{t}");
        assert!(lines[1].contains("cuda:0 -> cuda:1"), "{t}");
        // 1 MiB in 0.1 ms
        assert!(
            lines[1].contains("10.49 GB/s  NVLink, 18 active links"),
            "{t}"
        );
        assert_eq!(peer_block(&[]), "");
    }

    /// Latency rows are listed again as ns and cycles per load, from the fastest sample, with
    /// the plateaus they form; an invalid row has no figure.
    #[test]
    fn latency_rows_show_ns_cycles_and_plateaus() {
        let row = |kib: u64, median: f64, valid: bool| {
            let case = latency::case(latency::HOST_KERNEL, 64, kib << 10, 1000);
            let mut r = measured(&case, median, valid);
            r.clock_mhz = Some(4000.0);
            r
        };
        // fastest samples (0.9 × median) of 1000 loads: 1 ns, then 5 ns
        let m = 1e-6 / 0.9;
        let rows = [
            row(4, m, true),
            row(8, m, true),
            row(16, 5.0 * m, true),
            row(32, 5.0 * m, true),
            row(64, m, false),
        ];
        let t = render(&rows);
        let block: Vec<&str> = t
            .lines()
            .skip_while(|l| !l.starts_with("latency/chase:"))
            .collect();
        assert!(block.len() > 7, "{t}");
        assert!(block[2].starts_with("latency/chase/i32/4 "), "{}", block[2]);
        assert!(
            block[2].contains(" 1.00 ") && block[2].contains(" 4.00 "),
            "{}",
            block[2]
        );
        assert!(
            block[4].contains(" 5.00 ") && block[4].contains(" 20.0 "),
            "{}",
            block[4]
        );
        assert!(block[6].contains("invalid:") && !block[6].contains("1.00"));
        assert_eq!(
            &block[7..],
            [
                "  plateau 4.0 KiB .. 8.0 KiB: 1.00 ns, 4.00 cycles (2 points)",
                "  plateau 16.0 KiB .. 32.0 KiB: 5.00 ns, 20.0 cycles (2 points)",
            ]
        );
        // no latency rows, no block
        let stream = measured(
            &StreamKernel::Triad.case(Precision::F32, 1 << 20),
            1e-3,
            true,
        );
        assert!(!render(&[stream]).contains("ns/load"));
    }

    #[test]
    fn a_suspect_figure_does_not_read_ok() {
        let mut r = measured(
            &StreamKernel::Triad.case(Precision::F32, 1 << 20),
            1e-3,
            true,
        );
        r.flags = "high_cv(12.0%);busy_host(1.00 CPUs)".into();
        let t = render(&[r]);
        let line = t.lines().find(|l| l.starts_with("stream/triad")).unwrap();
        assert!(
            line.ends_with("  suspect: high_cv(12.0%), busy_host(1.00 CPUs)"),
            "{line}"
        );
        assert!(!line.ends_with(" ok"), "{line}");
    }

    #[test]
    fn share_of_theory_is_shown_where_known() {
        let case = crate::cases::peak::case(Precision::F32, 100, 1000, 128);
        let mut r = measured(&case, 1e-3, true);
        r.theory_gflops = Some(r.gflops.unwrap() * 2.0);
        let t = render(std::slice::from_ref(&r));
        let line = t.lines().find(|l| l.starts_with("peak/fma/f32")).unwrap();
        assert!(line.contains("50.0%"), "{line}");
        let gemm = crate::cases::gemm::case(
            "simd",
            Precision::F32,
            crate::cases::gemm::Shape::new(8192, 28672, 8192),
        );
        let mut g = measured(&gemm, 1.0, true);
        g.ratio_to_reference = Some(0.934);
        let t = render(&[g, r.clone()]);
        let line = t.lines().find(|l| l.starts_with("gemm/simd")).unwrap();
        assert!(line.ends_with("ok (0.93 x gemm-crate)"), "{line}");
        // columns stay aligned under the longest id: the working set ends at the same place
        let peak = t.lines().find(|l| l.starts_with("peak/fma/f32")).unwrap();
        let end = |l: &str| l.find('B').unwrap();
        assert_eq!(end(line), end(peak), "{line}\n{peak}");
        let stream = measured(&StreamKernel::Copy.case(Precision::F32, 10), 1e-3, true);
        let t = render(&[stream]);
        assert!(t
            .lines()
            .any(|l| l.starts_with("stream/copy/f32") && l.contains(" - ")));
    }
}
