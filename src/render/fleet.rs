//! The fleet report: many runs of the same kind of device read as peers, to find the slow one.
//!
//! Runs are grouped by backend, device model and driver (for the host: CPU model and OS
//! kernel); per metric (each memory level's bandwidth, each compute ceiling) a group's median
//! and MAD (median absolute deviation) are taken over its runs, and a run below `threshold` ×
//! the median is flagged. A median of fewer than [`MIN_PEERS`] runs cannot say which of them is
//! the slow one: such a metric is shown, never flagged. The same run given twice (its run id
//! twice: a CSV and its JSON, a file passed twice) counts once. A flagged run's verdict says
//! when its rows show throttling or other processes on the GPU or CPUs, since that is a
//! different fault from a slow memory system.
//!
//! Pure: runs in; a table, tidy CSV, JSON and SVG strip plots out. It must not read or write
//! files; `commands::fleet` does.

use crate::analysis::calibration::Calibration;
use crate::analysis::inputs::Run;
use crate::render::svg::axis::{linear_label, linear_ticks};
use crate::results::record::Record;
use crate::stats::{mad, median};
use crate::text::field;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write;
use std::path::PathBuf;

/// Below this fraction of its peers' median, a run is flagged (`--threshold`).
pub const DEFAULT_THRESHOLD: f64 = 0.9;

/// The fewest runs with a metric for their median to judge one of them: of two, the median is
/// their mean and cannot say which is slow.
pub const MIN_PEERS: usize = 3;

/// Throttle reasons that are settings, not a limit hit while running.
const NOT_THROTTLING: [&str; 3] = ["applications_clocks", "sync_boost", "display_clock"];

/// A run's figure for one metric, against its group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunMetric {
    /// `DRAM`, `L2`, `f32`, `tensor f16.f32`.
    pub metric: String,
    pub unit: &'static str,
    pub value: f64,
    /// value / the group's median for the metric; `None` with fewer than [`MIN_PEERS`] peers.
    pub ratio: Option<f64>,
    pub flagged: bool,
}

/// One run as the fleet sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FleetRun {
    pub run_id: String,
    pub host: String,
    pub device_id: String,
    /// The files it was read from (more than one: a duplicate, counted once).
    pub files: Vec<PathBuf>,
    pub metrics: Vec<RunMetric>,
    /// What its rows say of the conditions: `throttled (sw_power_cap)`, `other GPU processes
    /// (2)`, `other CPUs busy (1.5 CPUs)`; empty when nothing, or nothing known.
    pub conditions: Vec<String>,
    /// Whether per-row conditions were there to read (a CSV), not a calibration JSON alone.
    pub has_rows: bool,
    pub flagged: bool,
    pub verdict: String,
}

/// A metric's median and spread over a group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricStat {
    pub metric: String,
    pub unit: &'static str,
    pub runs: usize,
    pub median: f64,
    /// Median absolute deviation from the median, in the metric's unit.
    pub mad: f64,
}

/// Runs of one device model and driver.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    pub backend: String,
    pub device_name: String,
    pub driver: String,
    pub metrics: Vec<MetricStat>,
    pub runs: Vec<FleetRun>,
}

/// A run id given more than once.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Duplicate {
    pub run_id: String,
    pub files: Vec<PathBuf>,
    /// Whether the copies' figures differ (then the first copy with rows is the one used).
    pub differ: bool,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fleet {
    pub schema: &'static str,
    pub threshold: f64,
    pub min_peers: usize,
    pub groups: Vec<Group>,
    pub duplicates: Vec<Duplicate>,
}

impl Fleet {
    pub fn flagged(&self) -> impl Iterator<Item = &FleetRun> {
        self.groups
            .iter()
            .flat_map(|g| &g.runs)
            .filter(|r| r.flagged)
    }

    pub fn run_count(&self) -> usize {
        self.groups.iter().map(|g| g.runs.len()).sum()
    }
}

/// The metrics a calibration measured: memory levels' bandwidth, then compute ceilings, then
/// the host link's pinned host-to-device and device-to-host bandwidths (their fits' asymptotes).
fn metrics_of(cal: &Calibration) -> Vec<(String, &'static str, f64)> {
    let memory = cal
        .memory_ceilings
        .iter()
        .filter_map(|m| Some((m.level.as_str().to_string(), "GB/s", m.gbps?)));
    let compute = cal.compute_ceilings.iter().filter_map(|c| {
        let unit = if c.precision.is_integer() {
            "GOP/s"
        } else {
            "GFLOP/s"
        };
        Some((c.label(), unit, c.gflops?))
    });
    // the host link's pinned asymptotes, one metric per direction
    let link = cal.link.iter().flat_map(|l| {
        crate::cases::link::Transfer::FITTED
            .into_iter()
            .filter_map(|t| {
                let fit = l.transfer(t.as_str())?;
                Some((format!("link {}", t.as_str()), "GB/s", fit.bandwidth_gbps))
            })
    });
    memory.chain(compute).chain(link).collect()
}

/// What a run's rows (or, for a calibration JSON, its clocks) say of the conditions it ran in.
fn conditions_of(cal: &Calibration, records: Option<&[Record]>) -> Vec<String> {
    let mut out = Vec::new();
    let mut throttle: Vec<String> = cal.clocks_seen.throttle.clone();
    let mut gpu_processes = 0;
    let mut busy_cpus: Option<f64> = None;
    for r in records.unwrap_or_default() {
        throttle.extend(r.throttle.split(';').map(str::to_string));
        gpu_processes = gpu_processes.max(r.other_gpu_processes.unwrap_or(0));
        if r.flags.contains("busy_host") {
            busy_cpus = Some(
                busy_cpus
                    .unwrap_or(0.0)
                    .max(r.other_cpus_busy.unwrap_or(0.0)),
            );
        }
    }
    throttle.retain(|t| !t.is_empty() && !NOT_THROTTLING.contains(&t.as_str()));
    throttle.sort();
    throttle.dedup();
    if !throttle.is_empty() {
        out.push(format!("throttled ({})", throttle.join(";")));
    }
    if gpu_processes > 0 {
        out.push(format!("other GPU processes ({gpu_processes})"));
    }
    if let Some(cpus) = busy_cpus {
        out.push(format!("other CPUs busy ({cpus:.2} CPUs)"));
    }
    out
}

/// The fleet report over `runs` (each with the file it came from), in input order.
pub fn analyse(runs: Vec<(PathBuf, Run)>, threshold: f64) -> Fleet {
    // One copy per run id: the first with rows, else the first.
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut kept: Vec<(Vec<PathBuf>, Run, bool)> = Vec::new();
    for (path, run) in runs {
        let id = run.calibration.run.run_id.clone();
        match index.get(&id) {
            Some(&i) => {
                let (files, first, differ) = &mut kept[i];
                files.push(path);
                *differ |= metrics_of(&first.calibration) != metrics_of(&run.calibration);
                if first.records.is_none() && run.records.is_some() {
                    *first = run;
                }
            }
            None => {
                index.insert(id, kept.len());
                kept.push((vec![path], run, false));
            }
        }
    }
    let duplicates = kept
        .iter()
        .filter(|(files, _, _)| files.len() > 1)
        .map(|(files, run, differ)| Duplicate {
            run_id: run.calibration.run.run_id.clone(),
            files: files.clone(),
            differ: *differ,
        })
        .collect();

    let mut groups: Vec<Group> = Vec::new();
    for (files, run, _) in kept {
        let cal = &run.calibration;
        let (backend, name, driver) = (
            cal.device.backend.to_string(),
            cal.device.name.clone(),
            cal.device.driver.clone(),
        );
        let fleet_run = FleetRun {
            run_id: cal.run.run_id.clone(),
            host: cal.device.host.clone(),
            device_id: cal.device.id.clone(),
            files,
            metrics: metrics_of(cal)
                .into_iter()
                .map(|(metric, unit, value)| RunMetric {
                    metric,
                    unit,
                    value,
                    ratio: None,
                    flagged: false,
                })
                .collect(),
            conditions: conditions_of(cal, run.records.as_deref()),
            has_rows: run.records.is_some(),
            flagged: false,
            verdict: String::new(),
        };
        let group = match groups
            .iter_mut()
            .position(|g| (&g.backend, &g.device_name, &g.driver) == (&backend, &name, &driver))
        {
            Some(i) => &mut groups[i],
            None => {
                groups.push(Group {
                    backend,
                    device_name: name,
                    driver,
                    metrics: Vec::new(),
                    runs: Vec::new(),
                });
                groups.last_mut().expect("just pushed")
            }
        };
        group.runs.push(fleet_run);
    }
    for group in &mut groups {
        judge(group, threshold);
    }
    Fleet {
        schema: "roofprobe-fleet/1",
        threshold,
        min_peers: MIN_PEERS,
        groups,
        duplicates,
    }
}

/// The group's medians and spreads, each run's ratios, flags and verdict.
fn judge(group: &mut Group, threshold: f64) {
    let mut names: Vec<(String, &'static str)> = Vec::new();
    for run in &group.runs {
        for m in &run.metrics {
            if !names.iter().any(|(n, _)| *n == m.metric) {
                names.push((m.metric.clone(), m.unit));
            }
        }
    }
    // bandwidths first, then arithmetic, each in order of first appearance
    names.sort_by_key(|(_, unit)| *unit != "GB/s");
    for (metric, unit) in names {
        let values: Vec<f64> = group
            .runs
            .iter()
            .flat_map(|r| r.metrics.iter().filter(|m| m.metric == metric))
            .map(|m| m.value)
            .collect();
        let (Some(med), Some(spread)) = (median(&values), mad(&values)) else {
            continue;
        };
        if values.len() >= MIN_PEERS && med > 0.0 {
            for m in group
                .runs
                .iter_mut()
                .flat_map(|r| r.metrics.iter_mut().filter(|m| m.metric == metric))
            {
                let ratio = m.value / med;
                m.ratio = Some(ratio);
                m.flagged = ratio < threshold;
            }
        }
        group.metrics.push(MetricStat {
            metric,
            unit,
            runs: values.len(),
            median: med,
            mad: spread,
        });
    }
    for run in &mut group.runs {
        let slow: Vec<String> = run
            .metrics
            .iter()
            .filter(|m| m.flagged)
            .map(|m| format!("{} {:.2}", m.metric, m.ratio.unwrap_or(0.0)))
            .collect();
        run.flagged = !slow.is_empty();
        run.verdict = if run.flagged {
            let mut v = format!("SLOW: {} of the peer median", slow.join(", "));
            if !run.conditions.is_empty() {
                let _ = write!(
                    v,
                    "; its rows show {}: a fault of the conditions, not only of the device",
                    run.conditions.join(", ")
                );
            } else if !run.has_rows {
                v.push_str("; a calibration JSON: no rows to tell throttling or load from");
            }
            v
        } else if run.metrics.iter().all(|m| m.ratio.is_none()) {
            if run.metrics.is_empty() {
                "no measured ceiling to compare".into()
            } else {
                format!(
                    "not judged: fewer than {MIN_PEERS} runs of this device and driver measured \
                     the same metrics"
                )
            }
        } else {
            "ok".into()
        };
    }
}

/// A figure for the table: 3 significant digits or so.
fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The report as text: per group, the metrics' medians and spreads, then each run's lowest
/// ratio and verdict.
pub fn table(fleet: &Fleet) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fleet: {} run(s) in {} group(s); flagged below {:.2} of the peer median (judged with at \
         least {MIN_PEERS} runs)",
        fleet.run_count(),
        fleet.groups.len(),
        fleet.threshold
    );
    for d in &fleet.duplicates {
        let _ = writeln!(
            s,
            "duplicate: run {} given {} times ({}), counted once{}",
            d.run_id,
            d.files.len(),
            d.files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if d.differ {
                "; the copies' figures DIFFER, the first with rows is used"
            } else {
                ""
            }
        );
    }
    for g in &fleet.groups {
        let _ = writeln!(
            s,
            "\n{} ({}, driver {}): {} run(s)",
            g.device_name,
            g.backend,
            if g.driver.is_empty() { "?" } else { &g.driver },
            g.runs.len()
        );
        let _ = writeln!(
            s,
            "  {:<18} {:>8} {:>5} {:>10} {:>9} {:>7}",
            "metric", "unit", "runs", "median", "MAD", "lowest"
        );
        for m in &g.metrics {
            let lowest = g
                .runs
                .iter()
                .flat_map(|r| r.metrics.iter().filter(|x| x.metric == m.metric))
                .filter_map(|x| x.ratio)
                .min_by(f64::total_cmp)
                .map_or_else(|| "-".into(), |r| format!("{r:.2}"));
            let _ = writeln!(
                s,
                "  {:<18} {:>8} {:>5} {:>10} {:>9} {:>7}",
                m.metric,
                m.unit,
                m.runs,
                num(m.median),
                num(m.mad),
                lowest
            );
        }
        let width = g.runs.iter().map(|r| r.run_id.len()).max().unwrap_or(0);
        let width = width.clamp(6, crate::render::compare::MAX_KEY_WIDTH + 20);
        let _ = writeln!(s, "  {:<width$} {:<8} verdict", "run", "device");
        for r in &g.runs {
            let _ = writeln!(s, "  {:<width$} {:<8} {}", r.run_id, r.device_id, r.verdict);
        }
    }
    let flagged = fleet.flagged().count();
    let _ = writeln!(
        s,
        "\n{}",
        if flagged == 0 {
            "no run flagged".to_string()
        } else {
            format!("{flagged} run(s) flagged")
        }
    );
    s
}

/// One line of `--csv`: a run's figure for a metric against its group (its fields are the
/// columns of [`CSV_HEADER`], in order).
#[derive(Serialize)]
pub struct CsvRow<'a> {
    pub device_name: String,
    pub backend: &'a str,
    pub driver: String,
    pub run_id: String,
    pub host: String,
    pub device_id: String,
    pub metric: String,
    pub unit: &'a str,
    pub value: f64,
    pub peer_median: Option<f64>,
    pub peer_mad: Option<f64>,
    pub peers: usize,
    pub ratio: Option<f64>,
    pub flagged: bool,
    pub run_flagged: bool,
    pub conditions: String,
    pub verdict: String,
}

/// The columns of `--csv`, in `CsvRow`'s order: written first even when no run has a
/// measured metric, so the file is never empty.
pub const CSV_HEADER: [&str; 17] = [
    "device_name",
    "backend",
    "driver",
    "run_id",
    "host",
    "device_id",
    "metric",
    "unit",
    "value",
    "peer_median",
    "peer_mad",
    "peers",
    "ratio",
    "flagged",
    "run_flagged",
    "conditions",
    "verdict",
];

/// The report as tidy CSV: a row per run and metric; text fields spreadsheet-safe.
pub fn csv(fleet: &Fleet) -> Vec<u8> {
    let mut w = super::csv_with_header(&CSV_HEADER);
    for g in &fleet.groups {
        for r in &g.runs {
            for m in &r.metrics {
                let stat = g.metrics.iter().find(|s| s.metric == m.metric);
                w.serialize(CsvRow {
                    device_name: field(&g.device_name),
                    backend: &g.backend,
                    driver: field(&g.driver),
                    run_id: field(&r.run_id),
                    host: field(&r.host),
                    device_id: field(&r.device_id),
                    metric: field(&m.metric),
                    unit: m.unit,
                    value: m.value,
                    peer_median: stat.map(|s| s.median),
                    peer_mad: stat.map(|s| s.mad),
                    peers: stat.map_or(0, |s| s.runs),
                    ratio: m.ratio,
                    flagged: m.flagged,
                    run_flagged: r.flagged,
                    conditions: field(&r.conditions.join("; ")),
                    verdict: field(&r.verdict),
                })
                .expect("serialising to memory cannot fail");
            }
        }
    }
    w.into_inner().expect("flushing to memory cannot fail")
}

/// The report as JSON (the [`Fleet`] itself).
pub fn json(fleet: &Fleet) -> String {
    let mut text = serde_json::to_string_pretty(fleet).expect("serialising to memory cannot fail");
    text.push('\n');
    text
}

/// Every metric any group has, in order of first appearance.
pub fn metric_names(fleet: &Fleet) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = Vec::new();
    for g in &fleet.groups {
        for m in &g.metrics {
            if !out.iter().any(|(n, _)| *n == m.metric) {
                out.push((m.metric.clone(), m.unit));
            }
        }
    }
    out
}

const STRIP_WIDTH: i32 = 1000;
const LEFT: i32 = 300;
const RIGHT: i32 = 40;
const ROW: i32 = 70;
const TOP: i32 = 70;
const OK_COLOR: &str = "#1f77b4";
/// The colour of a flagged run in a strip plot: its dot, its cross and its name in the list.
pub const FLAG_COLOR: &str = "#d62728";
/// Pixels per line of the list of flagged runs under a strip plot.
const LIST_LINE: i32 = 16;
/// The most flagged runs a strip plot names; the rest are counted.
const MAX_LISTED: usize = 20;

/// The strip plot of one metric: a strip per group, each run a dot at its value over its
/// group's median (so groups of different devices share the axis), the median at 1 and the
/// threshold dashed; flagged runs red and crossed, and named in a list under the axis (beside
/// their dots, names of runs that lie close together would cover each other and the dots).
/// Runs of a group too small to judge are drawn hollow. `None` when no group measured the
/// metric.
pub fn strip_svg(fleet: &Fleet, metric: &str) -> Option<String> {
    let groups: Vec<(&Group, &MetricStat)> = fleet
        .groups
        .iter()
        .filter_map(|g| Some((g, g.metrics.iter().find(|m| m.metric == metric)?)))
        .collect();
    let unit = groups.first()?.1.unit;
    let scale = StripScale::of(fleet, &groups, metric);
    let flagged = flagged_lines(&groups, metric, unit);
    let listed = flagged.len().min(MAX_LISTED);
    // the list's title and lines, and a margin under the last
    let list_px = if flagged.is_empty() {
        0
    } else {
        LIST_LINE * (2 + listed as i32 + i32::from(flagged.len() > MAX_LISTED))
    };
    let height = TOP + ROW * groups.len() as i32 + 60 + list_px;
    let bottom = TOP + ROW * groups.len() as i32;
    let mut s = String::new();
    write_strip_title(&mut s, fleet, metric, unit, height);
    write_strip_axis(&mut s, &scale, bottom);
    write_strips(&mut s, &groups, metric, unit, &scale);
    write_median_and_threshold(&mut s, fleet, &scale, bottom);
    write_flagged_list(&mut s, &flagged, bottom);
    s.push_str("</svg>\n");
    Some(s)
}

/// The strip plots' horizontal scale: from `lo` to `hi` (run / peer median) across the plot.
struct StripScale {
    lo: f64,
    hi: f64,
    plot_w: i32,
}

impl StripScale {
    /// Every run's ratio of `metric` to its group's median, the threshold and 1, with a margin.
    fn of(fleet: &Fleet, groups: &[(&Group, &MetricStat)], metric: &str) -> StripScale {
        let ratios = groups.iter().flat_map(|(g, stat)| {
            g.runs
                .iter()
                .flat_map(|r| r.metrics.iter().filter(|m| m.metric == metric))
                .map(move |m| m.value / stat.median)
        });
        let (mut lo, mut hi) = (fleet.threshold.min(1.0), 1.0f64);
        for r in ratios.filter(|r| r.is_finite()) {
            lo = lo.min(r);
            hi = hi.max(r);
        }
        let pad = ((hi - lo) * 0.08).max(0.02);
        StripScale {
            lo: lo - pad,
            hi: hi + pad,
            plot_w: STRIP_WIDTH - LEFT - RIGHT,
        }
    }

    /// The x, px, of a ratio.
    fn x(&self, r: f64) -> f64 {
        LEFT as f64 + (r - self.lo) / (self.hi - self.lo) * self.plot_w as f64
    }
}

/// The flagged runs of `metric`, slowest first: each its ratio and its line under the axis.
fn flagged_lines(groups: &[(&Group, &MetricStat)], metric: &str, unit: &str) -> Vec<(f64, String)> {
    let mut flagged: Vec<(f64, String)> = Vec::new();
    for (g, stat) in groups {
        let group = if groups.len() > 1 {
            format!("{}: ", shorten(&g.device_name, 28))
        } else {
            String::new()
        };
        for r in &g.runs {
            for m in r.metrics.iter().filter(|m| m.metric == metric && m.flagged) {
                let ratio = m.value / stat.median;
                let line = format!(
                    "{group}{} ({}): {} {unit}, {ratio:.3} of the median",
                    shorten(&r.run_id, 48),
                    shorten(&r.host, 20),
                    num(m.value),
                );
                flagged.push((ratio, line));
            }
        }
    }
    flagged.sort_by(|a, b| a.0.total_cmp(&b.0));
    flagged
}

/// The SVG's opening, its background and the title and key over the strips.
fn write_strip_title(s: &mut String, fleet: &Fleet, metric: &str, unit: &str, height: i32) {
    let esc = crate::render::svg::picture::xml_escape;
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{STRIP_WIDTH}" height="{height}" viewBox="0 0 {STRIP_WIDTH} {height}" font-family="{}">"#,
        crate::render::svg::picture::FONT
    );
    let _ = writeln!(
        s,
        r##"<rect width="{STRIP_WIDTH}" height="{height}" fill="white"/>
<text x="{}" y="28" font-size="18" text-anchor="middle">{} ({}): each run over its peers' median</text>
<text x="{}" y="50" font-size="13" text-anchor="middle" fill="#555">red, crossed: below {:.2} of the median (flagged); hollow: fewer than {MIN_PEERS} peers, not judged</text>"##,
        STRIP_WIDTH / 2,
        esc(metric),
        esc(unit),
        STRIP_WIDTH / 2,
        fleet.threshold
    );
}

/// The axis under the strips at `bottom`, px: its line, ticks (some 10 to 15 of them whatever
/// the range: an outlier can be far off) and title.
fn write_strip_axis(s: &mut String, scale: &StripScale, bottom: i32) {
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="#333"/>"##,
        STRIP_WIDTH - RIGHT
    );
    for t in linear_ticks(scale.lo, scale.hi) {
        let label = linear_label(t);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{bottom}" x2="{x:.1}" y2="{}" stroke="#333"/><text x="{x:.1}" y="{}" font-size="11" text-anchor="middle" fill="#555">{label}</text>"##,
            bottom + 5,
            bottom + 34,
            x = scale.x(t)
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" font-size="13" text-anchor="middle">run / peer median</text>"##,
        LEFT + scale.plot_w / 2,
        bottom + 52
    );
}

/// A strip per group: its band and names on the left, and a dot per run of `metric`.
fn write_strips(
    s: &mut String,
    groups: &[(&Group, &MetricStat)],
    metric: &str,
    unit: &str,
    scale: &StripScale,
) {
    let esc = crate::render::svg::picture::xml_escape;
    let plot_w = scale.plot_w;
    for (row, (g, stat)) in groups.iter().enumerate() {
        let y0 = TOP + ROW * row as i32;
        let mid = y0 + ROW / 2;
        let fill = if row % 2 == 0 { "#f4f4f4" } else { "#ffffff" };
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{ROW}" fill="{fill}"/>
<text x="{}" y="{}" font-size="13" text-anchor="end">{}</text>
<text x="{}" y="{}" font-size="11" text-anchor="end" fill="#555">{} · {} run(s)</text>
<text x="{}" y="{}" font-size="11" text-anchor="end" fill="#555">median {} {} · MAD {}</text>"##,
            LEFT - 8,
            mid - 12,
            esc(&shorten(&g.device_name, 36)),
            LEFT - 8,
            mid + 4,
            esc(&shorten(&g.driver, 28)),
            stat.runs,
            LEFT - 8,
            mid + 19,
            num(stat.median),
            esc(unit),
            num(stat.mad)
        );
        let mut k = 0;
        for r in &g.runs {
            for m in r.metrics.iter().filter(|m| m.metric == metric) {
                // spread the dots of a strip over five heights so that equal ones stay visible
                let y = y0 + 14 + (k % 5) * (ROW - 28) / 4;
                k += 1;
                write_dot(s, r, m, unit, scale.x(m.value / stat.median), y);
            }
        }
    }
}

/// One run's dot at (`cx`, `y`), with its figure as a tooltip: red and crossed when flagged,
/// hollow when its group is too small to judge it.
fn write_dot(s: &mut String, r: &FleetRun, m: &RunMetric, unit: &str, cx: f64, y: i32) {
    let esc = crate::render::svg::picture::xml_escape;
    let tip = format!(
        "{} ({}): {} {}{}",
        r.run_id,
        r.host,
        num(m.value),
        unit,
        m.ratio
            .map_or_else(String::new, |q| format!(", {q:.3} of the median"))
    );
    if m.flagged {
        let _ = writeln!(
            s,
            r#"<g><title>{}</title><circle class="point" cx="{cx:.1}" cy="{y}" r="6" fill="{FLAG_COLOR}"/><path d="M{:.1} {} l12 12 m0 -12 l-12 12" stroke="{FLAG_COLOR}" stroke-width="2"/></g>"#,
            esc(&tip),
            cx - 6.0,
            y - 6,
        );
    } else {
        let fill = if m.ratio.is_some() { OK_COLOR } else { "none" };
        let _ = writeln!(
            s,
            r#"<g><title>{}</title><circle class="point" cx="{cx:.1}" cy="{y}" r="5" fill="{fill}" fill-opacity="0.8" stroke="{OK_COLOR}" stroke-width="1.5"/></g>"#,
            esc(&tip)
        );
    }
}

/// The median (at 1) and the threshold (dashed), over the strips down to `bottom`, px.
fn write_median_and_threshold(s: &mut String, fleet: &Fleet, scale: &StripScale, bottom: i32) {
    let esc = crate::render::svg::picture::xml_escape;
    for (r, dash, label) in [
        (1.0, "", "median".to_string()),
        (
            fleet.threshold,
            r#" stroke-dasharray="6,4""#,
            format!("{:.2}", fleet.threshold),
        ),
    ] {
        let color = if dash.is_empty() { "#333" } else { FLAG_COLOR };
        let _ = writeln!(
            s,
            r#"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}" stroke="{color}"{dash}/>
<text x="{x:.1}" y="{}" font-size="12" text-anchor="middle" fill="{color}">{}</text>"#,
            TOP - 6,
            esc(&label),
            x = scale.x(r)
        );
    }
}

/// The flagged runs by name (the first [`MAX_LISTED`], the rest counted), under the axis's
/// title below `bottom`, px.
fn write_flagged_list(s: &mut String, flagged: &[(f64, String)], bottom: i32) {
    let esc = crate::render::svg::picture::xml_escape;
    let mut y = bottom + 52 + LIST_LINE + 8;
    if flagged.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{y}" font-size="12" fill="{FLAG_COLOR}">flagged, slowest first:</text>"#
    );
    for (_, line) in flagged.iter().take(MAX_LISTED) {
        y += LIST_LINE;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{y}" font-size="11" fill="{FLAG_COLOR}">{}</text>"#,
            LEFT + 12,
            esc(line)
        );
    }
    if flagged.len() > MAX_LISTED {
        y += LIST_LINE;
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{y}" font-size="11" fill="#555">… and {} more (see the table or --csv)</text>"##,
            LEFT + 12,
            flagged.len() - MAX_LISTED
        );
    }
}

/// At most `max` characters, `…` at the cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max - 1).collect();
        out.push('…');
        out
    }
}

/// The file name of a metric's strip plot: `fleet-dram.svg`, `fleet-tensor-f16-f32.svg`.
pub fn strip_stem(metric: &str) -> String {
    format!("fleet-{}", crate::units::slug(metric))
}
