//! Device comparison: the same measurements across runs, side by side, with measured ratios
//! and spec ratios against the first run. Runs and their rows in; a table or tidy CSV out.
//!
//! Two sections: the fitted ceilings (every input has them, CSV or calibration JSON) and the
//! individual cases (CSV inputs only). Runs whose sets of cases differ keep every case: a gap
//! says why (`not run`, `invalid`, `no rows`), it is never dropped.
//!
//! Pure: it must not read or write files.

use crate::analysis::inputs::Run;
use crate::cases::{Family, Precision};
use crate::render::table::figure;
use crate::results::record::Record;
use crate::text::{letter, spreadsheet_safe};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// The widest the key column gets: a longer case id runs past it instead of widening every line
/// (and a width beyond 65 535 is not even formattable).
pub const MAX_KEY_WIDTH: usize = 40;

/// What one run has for one line of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub measured: Option<f64>,
    pub spec: Option<f64>,
    /// `ok`, or why there is no measured figure.
    pub status: String,
}

/// One line: a ceiling or a case, with a cell per run.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// `ceiling` or `case`.
    pub section: &'static str,
    /// `DRAM`, `f32`, `tensor f16.f32`, or a case id.
    pub key: String,
    /// `GB/s` or `GFLOP/s`.
    pub unit: &'static str,
    pub cells: Vec<Cell>,
}

impl Line {
    /// `measured[i] / measured[0]`.
    pub fn ratio(&self, i: usize) -> Option<f64> {
        Some(self.cells.get(i)?.measured? / self.cells.first()?.measured?)
    }

    /// `spec[i] / spec[0]`.
    pub fn spec_ratio(&self, i: usize) -> Option<f64> {
        Some(self.cells.get(i)?.spec? / self.cells.first()?.spec?)
    }
}

/// Whether a case's figure is its bandwidth: the families that move bytes (STREAM, and the
/// cache sweep, whose `i32` is its element type, not arithmetic), and an intensity case that
/// does no arithmetic (`intensity/fma/f32/0`: k = 0 reads and writes, and has no GFLOP/s).
fn by_bandwidth(r: &Record) -> bool {
    matches!(
        r.family,
        Family::Stream | Family::Efficiency | Family::Cache | Family::Link
    ) || (r.family == Family::Intensity && r.flops == 0)
}

/// The unit of a ceiling's or a case's figure ([`by_bandwidth`] for a case): bandwidth for the
/// families that move bytes, else operations per second.
fn unit_of(family: Family, precision: Precision) -> &'static str {
    match family {
        Family::Stream | Family::Efficiency | Family::Cache | Family::Link => "GB/s",
        Family::Latency => "ns/load",
        Family::Capacity => "GiB",
        Family::Launch => "µs",
        _ if precision.is_integer() => "GOP/s",
        _ => "GFLOP/s",
    }
}

fn ok(measured: Option<f64>, spec: Option<f64>, why_not: &str) -> Cell {
    Cell {
        measured,
        spec,
        status: if measured.is_some() {
            "ok".into()
        } else {
            why_not.into()
        },
    }
}

/// Every line of the comparison: ceilings first (DRAM, then compute in family and precision
/// order), then cases in order of first appearance.
pub fn lines(runs: &[Run]) -> Vec<Line> {
    let mut out = ceiling_lines(runs);
    out.extend(case_lines(runs));
    out
}

/// The fitted ceilings' lines: every memory level any run has, in level order, then every
/// compute ceiling any run has, in family and precision order.
fn ceiling_lines(runs: &[Run]) -> Vec<Line> {
    let mut out = Vec::new();
    let mut memory_levels = Vec::new();
    let mut computes = Vec::new();
    for run in runs {
        for m in &run.calibration.memory_ceilings {
            if !memory_levels.contains(&m.level) {
                memory_levels.push(m.level);
            }
        }
        for c in &run.calibration.compute_ceilings {
            if !computes.contains(&(c.family, c.precision)) {
                computes.push((c.family, c.precision));
            }
        }
    }
    memory_levels.sort();
    computes.sort_by_key(|(f, p)| (*f, Precision::ALL.iter().position(|q| q == p)));
    for level in memory_levels {
        let cells = runs
            .iter()
            .map(|r| {
                match r
                    .calibration
                    .memory_ceilings
                    .iter()
                    .find(|m| m.level == level)
                {
                    Some(m) => ok(m.gbps, m.spec_gbps, "no valid row"),
                    None => ok(None, None, "not run"),
                }
            })
            .collect();
        out.push(Line {
            section: "ceiling",
            key: level.as_str().to_string(),
            unit: "GB/s",
            cells,
        });
    }
    for (family, precision) in computes {
        let mut key = String::new();
        let cells = runs
            .iter()
            .map(|r| match r.calibration.compute(family, precision) {
                Some(c) => {
                    key = c.label();
                    // A compute ceiling exists because the sheet has it or rows tried it.
                    let why = if c.spec_gflops.is_some() {
                        "spec only"
                    } else {
                        "invalid"
                    };
                    ok(c.gflops, c.spec_gflops, why)
                }
                None => ok(None, None, "none"),
            })
            .collect();
        out.push(Line {
            section: "ceiling",
            key,
            unit: unit_of(family, precision),
            cells,
        });
    }
    out
}

/// One run's rows by case id; `None` for a run read without rows (a calibration JSON).
type RowsByCase<'a> = Option<HashMap<String, Vec<&'a Record>>>;

/// The cases' lines, from the runs that have rows, in order of first appearance; each run's
/// rows indexed by case once (linear in the rows, however many cases there are).
fn case_lines(runs: &[Run]) -> Vec<Line> {
    // (case, family, precision, its figure a bandwidth)
    let mut cases: Vec<(String, Family, Precision, bool)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let by_case: Vec<RowsByCase> = runs
        .iter()
        .map(|run| {
            run.records.as_ref().map(|records| {
                let mut m: HashMap<String, Vec<&Record>> = HashMap::new();
                for r in records {
                    m.entry(r.case_id()).or_default().push(r);
                }
                m
            })
        })
        .collect();
    for run in runs {
        for r in run.records.iter().flatten() {
            let id = r.case_id();
            if seen.insert(id.clone()) {
                cases.push((id, r.family, r.precision, by_bandwidth(r)));
            }
        }
    }
    let mut out = Vec::new();
    for (id, family, precision, bandwidth) in cases {
        let cells = runs
            .iter()
            .zip(&by_case)
            .map(|(run, by_case)| {
                let Some(by_case) = by_case else {
                    return ok(None, None, "no rows");
                };
                let rows: &[&Record] = by_case.get(&id).map_or(&[], Vec::as_slice);
                case_cell(run, rows, &id, family, bandwidth)
            })
            .collect();
        out.push(Line {
            section: "case",
            key: id,
            unit: if bandwidth {
                "GB/s"
            } else {
                unit_of(family, precision)
            },
            cells,
        });
    }
    out
}

/// What one run has for case `id`: the best figure of its valid `rows` (the case's rows in that
/// run) and the spec it is held against, or why there is no figure.
fn case_cell(run: &Run, rows: &[&Record], id: &str, family: Family, bandwidth: bool) -> Cell {
    let figure = |r: &Record| match family {
        _ if bandwidth => r.gbps,
        Family::Latency => r
            .time_min_s
            .and_then(|t| crate::cases::latency::ns_per_load(&r.kernel, r.bytes, t)),
        Family::Capacity => Some(r.working_set_bytes as f64 / (1u64 << 30) as f64),
        Family::Launch => r.launch_secs().map(|s| s * 1e6),
        _ => r.gflops,
    };
    // The best is the fastest: the most per second, the fewest ns per load; the
    // most memory, the least a context takes; the fewest µs per launch.
    let better = |a: f64, b: f64| {
        if family == Family::Latency
            || family == Family::Launch
            || (family == Family::Capacity && id.contains("/context/"))
        {
            a.min(b)
        } else {
            a.max(b)
        }
    };
    let best = rows
        .iter()
        .filter(|r| r.valid)
        .filter_map(|r| figure(r).filter(|v| v.is_finite() && *v > 0.0))
        .reduce(better);
    let why_not = match rows.first() {
        None => "not run",
        Some(r) if !r.valid => "invalid",
        Some(_) => "no figure",
    };
    ok(best, case_spec(run, rows, family), why_not)
}

/// The spec a case's figure is held against in one run (its first row says which), if any.
fn case_spec(run: &Run, rows: &[&Record], family: Family) -> Option<f64> {
    let cal = &run.calibration;
    match family {
        // a size of the sweep is held against the DRAM's rated bandwidth too
        Family::Stream | Family::Efficiency => {
            cal.memory_ceilings.first().and_then(|m| m.spec_gbps)
        }
        Family::Peak | Family::Tensor => rows
            .first()
            .and_then(|r| cal.compute(family, r.precision))
            .and_then(|c| c.spec_gflops),
        // a host-link copy against the nominal rate of the link its row saw
        Family::Link => rows
            .first()
            .filter(|r| {
                crate::cases::link::Transfer::parse(&r.kernel).is_some_and(|t| t.over_link())
            })
            .and_then(|r| crate::cases::link::link_in_note(&r.note))
            .and_then(crate::cases::link::pcie_nominal_gbps),
        // the others have no spec figure of their own (an intensity point is held
        // against the roof, a cache level has no sheet figure)
        _ => None,
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("{r:.2}x"))
}

/// The comparison as a table for the terminal.
pub fn table(runs: &[Run]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Comparing {} runs; ratios are against [A] (measured ratio, then spec ratio)",
        runs.len()
    );
    for (i, run) in runs.iter().enumerate() {
        let cal = &run.calibration;
        let _ = writeln!(
            out,
            "  [{}] {} — {}; run {}{}",
            letter(i),
            cal.title(),
            cal.spec.describe(),
            cal.run.run_id,
            if run.records.is_none() {
                " (calibration file: ceilings only)"
            } else {
                ""
            }
        );
        let identity: Vec<String> = cal
            .device
            .identity
            .fields()
            .into_iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if !identity.is_empty() {
            let _ = writeln!(out, "      {}", identity.join(", "));
        }
    }
    let lines = lines(runs);
    if lines.is_empty() {
        let _ = writeln!(
            out,
            "\nNothing to compare: no run has a ceiling or a case (a calibration file without \
             ceilings). Compare the runs' CSVs, or export the calibration again from them."
        );
    }
    let key_width = lines
        .iter()
        .map(|l| l.key.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(8, MAX_KEY_WIDTH);
    for section in ["ceiling", "case"] {
        let section_lines: Vec<&Line> = lines.iter().filter(|l| l.section == section).collect();
        if section_lines.is_empty() {
            continue;
        }
        let _ = writeln!(out);
        let mut head = format!(
            "{:<key_width$} {:<8}",
            if section == "ceiling" {
                "ceiling"
            } else {
                "case"
            },
            "unit"
        );
        for i in 0..runs.len() {
            let _ = write!(head, " {:>10}", format!("[{}]", letter(i)));
        }
        for i in 1..runs.len() {
            let l = letter(i);
            let _ = write!(
                head,
                " {:>8} {:>9}",
                format!("{l}/A"),
                format!("spec {l}/A")
            );
        }
        let _ = writeln!(out, "{}", head.trim_end());
        for line in section_lines {
            let mut row = format!("{:<key_width$} {:<8}", line.key, line.unit);
            for cell in &line.cells {
                let text = match cell.measured {
                    Some(v) => figure(Some(v)),
                    None => cell.status.clone(),
                };
                let _ = write!(row, " {text:>10}");
            }
            for i in 1..runs.len() {
                let _ = write!(
                    row,
                    " {:>8} {:>9}",
                    ratio_text(line.ratio(i)),
                    ratio_text(line.spec_ratio(i))
                );
            }
            let _ = writeln!(out, "{}", row.trim_end());
        }
    }
    out
}

/// One row of the comparison CSV (and of `compare --json`'s `rows`): a line of the comparison
/// for one run (tidy, so it concatenates and pivots). In the CSV, text fields are
/// spreadsheet-safe ([`CompareRow::spreadsheet_safe`]); the JSON keeps them as they are.
#[derive(Clone, Debug, Serialize)]
pub struct CompareRow<'a> {
    /// `ceiling` or `case`.
    pub section: &'a str,
    pub key: Cow<'a, str>,
    pub unit: &'a str,
    /// `A`, `B`, … as in the table.
    pub run: String,
    pub run_id: Cow<'a, str>,
    pub device_name: Cow<'a, str>,
    /// What tells the device from another of its name (the CSV's identity columns).
    pub microarch: Cow<'a, str>,
    pub isa: Cow<'a, str>,
    pub uuid: Cow<'a, str>,
    pub host: Cow<'a, str>,
    pub measured: Option<f64>,
    pub spec: Option<f64>,
    pub status: Cow<'a, str>,
    /// measured / the first run's measured.
    pub ratio_to_a: Option<f64>,
    /// spec / the first run's spec.
    pub spec_ratio_to_a: Option<f64>,
}

impl CompareRow<'_> {
    /// The row with every text field from a file made spreadsheet-safe: one that starts like a
    /// formula gets a leading `'`.
    pub fn spreadsheet_safe(self) -> Self {
        fn safe(t: Cow<'_, str>) -> Cow<'_, str> {
            let escaped = match spreadsheet_safe(&t) {
                Cow::Owned(s) => Some(s),
                Cow::Borrowed(_) => None,
            };
            escaped.map_or(t, Cow::Owned)
        }
        CompareRow {
            key: safe(self.key),
            run_id: safe(self.run_id),
            device_name: safe(self.device_name),
            microarch: safe(self.microarch),
            isa: safe(self.isa),
            uuid: safe(self.uuid),
            host: safe(self.host),
            status: safe(self.status),
            ..self
        }
    }
}

/// The columns of the comparison CSV, in [`CompareRow`]'s order: written first even when the
/// runs have nothing to compare (a calibration without ceilings), so the file is never empty.
pub const CSV_HEADER: [&str; 15] = [
    "section",
    "key",
    "unit",
    "run",
    "run_id",
    "device_name",
    "microarch",
    "isa",
    "uuid",
    "host",
    "measured",
    "spec",
    "status",
    "ratio_to_a",
    "spec_ratio_to_a",
];

/// The comparison as tidy CSV bytes, header included.
pub fn csv(runs: &[Run]) -> Vec<u8> {
    let lines = lines(runs);
    let mut w = super::csv_with_header(&CSV_HEADER);
    for row in rows(&lines, runs) {
        w.serialize(row.spreadsheet_safe())
            .expect("serialising to memory cannot fail");
    }
    w.into_inner().expect("flushing to memory cannot fail")
}

/// One run as `compare --json` describes it.
#[derive(Clone, Debug, Serialize)]
pub struct RunEntry<'a> {
    /// `A`, `B`, … as in the table.
    pub run: String,
    pub title: String,
    pub run_id: &'a str,
    pub device: &'a crate::analysis::calibration::Device,
    pub spec: &'a crate::specs::SpecBasis,
    /// `false` for a calibration JSON, which has ceilings but no cases.
    pub has_cases: bool,
}

/// The comparison as JSON: the runs, and the same rows as [`csv()`].
pub fn json(runs: &[Run]) -> String {
    let entries: Vec<RunEntry> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| RunEntry {
            run: letter(i),
            title: run.calibration.title(),
            run_id: &run.calibration.run.run_id,
            device: &run.calibration.device,
            spec: &run.calibration.spec,
            has_cases: run.records.is_some(),
        })
        .collect();
    let lines = lines(runs);
    let rows: Vec<CompareRow> = rows(&lines, runs).collect();
    let mut text = serde_json::to_string_pretty(&serde_json::json!({
        "runs": entries,
        "rows": rows,
    }))
    .expect("serialising to memory cannot fail");
    text.push('\n');
    text
}

/// The tidy rows of the comparison, which the CSV and the JSON write: a line of it for one run
/// each.
pub fn rows<'a>(lines: &'a [Line], runs: &'a [Run]) -> impl Iterator<Item = CompareRow<'a>> {
    lines.iter().flat_map(move |line| {
        line.cells
            .iter()
            .zip(runs)
            .enumerate()
            .map(move |(i, (cell, run))| {
                let cal = &run.calibration;
                CompareRow {
                    section: line.section,
                    key: Cow::Borrowed(&line.key),
                    unit: line.unit,
                    run: letter(i),
                    run_id: Cow::Borrowed(&cal.run.run_id),
                    device_name: Cow::Borrowed(&cal.device.name),
                    microarch: Cow::Borrowed(&cal.device.identity.microarch),
                    isa: Cow::Borrowed(&cal.device.identity.isa),
                    uuid: Cow::Borrowed(&cal.device.identity.uuid),
                    host: Cow::Borrowed(&cal.device.host),
                    measured: cell.measured,
                    spec: cell.spec,
                    status: Cow::Borrowed(&cell.status),
                    ratio_to_a: line.ratio(i),
                    spec_ratio_to_a: line.spec_ratio(i),
                }
            })
    })
}
