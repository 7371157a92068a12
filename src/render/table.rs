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
