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
    let mut out = Vec::new();
    // Ceilings.
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

    // Cases, from the runs that have rows; each run's rows indexed by case once (linear in the
    // rows, however many cases there are).
    // (case, family, precision, its figure a bandwidth)
    let mut cases: Vec<(String, Family, Precision, bool)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let by_case: Vec<Option<HashMap<String, Vec<&Record>>>> = runs
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
    for (id, family, precision, bandwidth) in cases {
        let cells = runs
            .iter()
            .zip(&by_case)
            .map(|(run, by_case)| {
                let Some(by_case) = by_case else {
                    return ok(None, None, "no rows");
                };
                let rows: &[&Record] = by_case.get(&id).map_or(&[], Vec::as_slice);
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
                let cal = &run.calibration;
                let spec = match family {
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
                            crate::cases::link::Transfer::parse(&r.kernel)
                                .is_some_and(|t| t.over_link())
                        })
                        .and_then(|r| crate::cases::link::link_in_note(&r.note))
                        .and_then(crate::cases::link::pcie_nominal_gbps),
                    // the others have no spec figure of their own (an intensity point is held
                    // against the roof, a cache level has no sheet figure)
                    _ => None,
                };
                let why_not = match rows.first() {
                    None => "not run",
                    Some(r) if !r.valid => "invalid",
                    Some(_) => "no figure",
                };
                ok(best, spec, why_not)
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

/// The tidy rows of the comparison: a line of it for one run each.
fn rows<'a>(lines: &'a [Line], runs: &'a [Run]) -> impl Iterator<Item = CompareRow<'a>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::calibration::Calibration;
    use crate::analysis::calibration::FromRecords;
    use crate::analysis::roofline::tests::{invalidate, retime, row, synthetic_run};

    /// The synthetic A100 run, and a second device (an RTX 3090 by name) that ran fewer cases,
    /// ran one more, and failed one.
    pub(crate) fn two_runs() -> Vec<Run> {
        let a = synthetic_run();
        let mut b: Vec<Record> = synthetic_run()
            .into_iter()
            .filter(|r| r.family != Family::Intensity && r.family != Family::Tensor)
            .map(|mut r| {
                // half the time: twice the rate
                if let Some(t) = r.time_median_s {
                    retime(&mut r, t / 2.0);
                }
                r
            })
            .collect();
        b.push(row(
            Family::Stream,
            "scale",
            Precision::F32,
            None,
            (8 << 20, 1 << 20),
            1e-2,
            true,
        ));
        // the triad of B failed
        for r in b.iter_mut().filter(|r| r.kernel == "triad") {
            invalidate(r, "[5] is 0, should be 7");
        }
        for r in b.iter_mut() {
            r.host = "box".into();
            r.timestamp_utc = "2026-01-02T00:00:00Z".into();
            r.run_id = "box-cuda0-nvidia-geforce-rtx-3090-20260102T000000Z".into();
            r.device_name = "NVIDIA GeForce RTX 3090".into();
            r.compute_capability = "8.6".into();
            r.isa = "sm_86".into();
            r.units = 82;
        }
        let run = |rows: Vec<Record>| Run {
            calibration: Calibration::from_records(&rows, None).unwrap(),
            records: Some(rows),
        };
        vec![run(a), run(b)]
    }

    #[test]
    fn gaps_are_shown_not_dropped() {
        let runs = two_runs();
        let lines = lines(&runs);
        let find = |k: &str| {
            lines
                .iter()
                .find(|l| l.key == k)
                .unwrap_or_else(|| panic!("{k}"))
        };
        // only A ran the sweep
        let sweep = find("intensity/fma_chain/f32/16");
        assert_eq!(sweep.cells[1].status, "not run");
        assert_eq!(sweep.ratio(1), None);
        // only B ran scale
        assert_eq!(find("stream/scale/f32").cells[0].status, "not run");
        // B's triad failed
        assert_eq!(find("stream/triad/f32").cells[1].status, "invalid");
        // copy: both ran, B twice as fast; spec ratio 936 / 2039
        let copy = find("stream/copy/f32");
        assert!((copy.ratio(1).unwrap() - 2.0).abs() < 1e-9);
        assert!((copy.spec_ratio(1).unwrap() - 936.0 / 2039.0).abs() < 1e-9);
        // ceilings: f32 peak doubles; RTX 3090 sheet 35.6 vs A100 19.5
        let f32 = find("f32");
        assert!((f32.ratio(1).unwrap() - 2.0).abs() < 1e-9);
        assert!((f32.spec_ratio(1).unwrap() - 35.6 / 19.5).abs() < 1e-9);
        // DRAM ceiling of B is its copy (the triad failed), 2 × 1400
        let dram = find("DRAM");
        assert!((dram.cells[1].measured.unwrap() - 2800.0).abs() < 1e-6);
    }

    /// A latency case compares in ns per load, from its fastest sample, and the best of a
    /// run's rows is the fewest.
    #[test]
    fn latency_compares_in_ns_per_load_and_the_fewest_is_best() {
        let mut runs = two_runs();
        let chase = |secs: f64| {
            row(
                Family::Latency,
                "ca",
                Precision::I32,
                Some(crate::cases::Param::Count(4)),
                (8000, 0),
                secs,
                true,
            )
        };
        // A: 1000 loads (of a GPU's 8-byte addresses), fastest samples 0.99 µs and 1.98 µs; B:
        // one at 0.495 µs
        runs[0]
            .records
            .as_mut()
            .unwrap()
            .extend([chase(2e-6), chase(1e-6)]);
        let mut b = chase(0.5e-6);
        let like = &runs[1].records.as_ref().unwrap()[0];
        (b.run_id, b.device_name, b.host) = (
            like.run_id.clone(),
            like.device_name.clone(),
            like.host.clone(),
        );
        runs[1].records.as_mut().unwrap().push(b);
        let lines = lines(&runs);
        let l = lines
            .iter()
            .find(|l| l.key == "latency/ca/i32/4")
            .expect("a latency line");
        assert_eq!(l.unit, "ns/load");
        assert!((l.cells[0].measured.unwrap() - 0.99).abs() < 1e-9, "{l:?}");
        assert!((l.cells[1].measured.unwrap() - 0.495).abs() < 1e-9, "{l:?}");
    }

    /// A launch case compares in µs, from the median per launch (the timer from its least
    /// sample), and the best of a run's rows is the fewest.
    #[test]
    fn launch_compares_in_microseconds_and_the_fewest_is_best() {
        use crate::cases::launch::{self, What};
        let mut runs = two_runs();
        let mut in_run = |what: What, median: f64, run: usize| {
            let mut r = crate::results::record::tests::measured(&launch::case(what), median, true);
            let like = &runs[run].records.as_ref().unwrap()[0];
            (r.run_id, r.device_name, r.host) = (
                like.run_id.clone(),
                like.device_name.clone(),
                like.host.clone(),
            );
            runs[run].records.as_mut().unwrap().push(r);
        };
        in_run(What::Empty, 4e-6, 0);
        in_run(What::Empty, 3e-6, 0);
        in_run(What::Empty, 6e-6, 1);
        in_run(What::Timer, 1e-6, 1);
        let lines = lines(&runs);
        let find = |key: &str| lines.iter().find(|l| l.key == key).expect(key);
        let empty = find("launch/empty/i32");
        assert_eq!(empty.unit, "µs");
        assert!(
            (empty.cells[0].measured.unwrap() - 3.0).abs() < 1e-9,
            "{empty:?}"
        );
        assert!(
            (empty.cells[1].measured.unwrap() - 6.0).abs() < 1e-9,
            "{empty:?}"
        );
        // the timer's figure is its least sample: 0.9 of the median
        let timer = find("launch/timer/i32");
        assert!(
            (timer.cells[1].measured.unwrap() - 0.9).abs() < 1e-9,
            "{timer:?}"
        );
        assert_eq!(timer.cells[0].status, "not run");
    }

    /// A capacity case compares its figure in GiB: the most is the best, except for the
    /// context's cost, where the least is.
    #[test]
    fn capacity_compares_in_gib_and_a_context_is_best_smallest() {
        let mut runs = two_runs();
        let figure = |kernel: &str, gib: u64, run: usize| {
            let mut r = row(
                Family::Capacity,
                kernel,
                Precision::U8,
                None,
                (8, 0),
                1e-5,
                true,
            );
            r.working_set_bytes = gib << 30;
            r.elements = gib << 30;
            let like = &runs[run].records.as_ref().unwrap()[0];
            (r.run_id, r.device_name, r.host) = (
                like.run_id.clone(),
                like.device_name.clone(),
                like.host.clone(),
            );
            r
        };
        let a = [
            figure("largest", 70, 0),
            figure("context", 2, 0),
            figure("context", 1, 0),
        ];
        let b = [figure("largest", 20, 1)];
        runs[0].records.as_mut().unwrap().extend(a);
        runs[1].records.as_mut().unwrap().extend(b);
        let lines = lines(&runs);
        let largest = lines
            .iter()
            .find(|l| l.key == "capacity/largest/u8")
            .expect("a capacity line");
        assert_eq!(largest.unit, "GiB");
        assert_eq!(largest.cells[0].measured, Some(70.0));
        assert_eq!(largest.cells[1].measured, Some(20.0));
        let context = lines
            .iter()
            .find(|l| l.key == "capacity/context/u8")
            .unwrap();
        assert_eq!(context.cells[0].measured, Some(1.0));
    }

    /// A link case compares in GB/s, the copy's bytes over its time, each run's figure held
    /// against the nominal rate of the PCIe link its row's note recorded (none where the note
    /// says the link was not known).
    #[test]
    fn link_compares_in_gb_per_s_against_the_link_each_row_saw() {
        use crate::cases::link::{self, PcieLink, Transfer};
        let mut runs = two_runs();
        let copy = |secs: f64, generation: Option<u32>, run: usize| {
            let mut r = crate::results::record::tests::measured(
                &link::case(Transfer::HostToDevice, 1 << 30),
                secs,
                true,
            );
            r.note = link::link_note(
                generation
                    .map(|g| {
                        (
                            PcieLink {
                                generation: g,
                                width: 16,
                            },
                            None,
                        )
                    })
                    .ok_or_else(|| "NVML absent".to_string()),
            );
            let like = &runs[run].records.as_ref().unwrap()[0];
            (r.run_id, r.device_name, r.host) = (
                like.run_id.clone(),
                like.device_name.clone(),
                like.host.clone(),
            );
            r
        };
        let a = copy(0.02, Some(5), 0);
        let b = copy(0.04, None, 1);
        runs[0].records.as_mut().unwrap().push(a);
        runs[1].records.as_mut().unwrap().push(b);
        let lines = lines(&runs);
        let line = lines
            .iter()
            .find(|l| l.key == "link/host_to_device_memcpy_ce/u8/1048576")
            .expect("a link line");
        assert_eq!(line.unit, "GB/s");
        let gb = (1u64 << 30) as f64 / 1e9;
        assert!((line.cells[0].measured.unwrap() - gb / 0.02).abs() < 1e-9);
        assert!((line.ratio(1).unwrap() - 0.5).abs() < 1e-9);
        assert!((line.cells[0].spec.unwrap() - 63.015).abs() < 0.01);
        assert_eq!(line.cells[1].spec, None);
    }

    #[test]
    fn calibration_only_runs_have_ceilings_but_no_cases() {
        let mut runs = two_runs();
        runs[1].records = None;
        let lines = lines(&runs);
        let copy = lines.iter().find(|l| l.key == "stream/copy/f32").unwrap();
        assert_eq!(copy.cells[1].status, "no rows");
        assert!(lines.iter().find(|l| l.key == "DRAM").unwrap().cells[1]
            .measured
            .is_some());
    }

    #[test]
    fn table_and_csv_snapshots() {
        let runs = two_runs();
        insta::assert_snapshot!("compare_table", table(&runs));
        let csv = String::from_utf8(csv(&runs)).unwrap();
        assert!(csv.starts_with("section,key,unit,run,run_id,device_name,microarch,isa,uuid,host,measured,spec,status,ratio_to_a,spec_ratio_to_a\n"));
        insta::assert_snapshot!("compare_csv", csv);
    }

    /// The header written before the rows is the one serde writes for them.
    #[test]
    fn the_written_header_is_serdes() {
        let runs = two_runs();
        let lines = lines(&runs);
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(rows(&lines, &runs).next().unwrap()).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(text.lines().next().unwrap(), CSV_HEADER.join(","));
    }

    /// Calibrations without a ceiling have nothing to compare: the CSV still has its header
    /// (it was an empty file, which fuzzing found).
    #[test]
    fn nothing_to_compare_still_writes_the_header() {
        let mut runs = two_runs();
        for run in &mut runs {
            run.records = None;
            run.calibration.memory_ceilings.clear();
            run.calibration.compute_ceilings.clear();
        }
        assert!(lines(&runs).is_empty());
        assert!(table(&runs).contains("Nothing to compare"));
        let csv = String::from_utf8(csv(&runs)).unwrap();
        assert_eq!(csv, format!("{}\n", CSV_HEADER.join(",")));
    }

    /// The two VMs: both "AMD EPYC" on host "vm", one a Zen 5 running AVX-512, one a
    /// Zen 3 running AVX2. Their identity tells them apart in the table, the titles and the CSV.
    #[test]
    fn two_machines_of_one_name_are_told_apart() {
        let vm = |stamp: &str, model: &str, microarch: &str, isa: &str| {
            let rows: Vec<Record> = synthetic_run()
                .into_iter()
                .filter(|r| r.family == Family::Stream)
                .map(|mut r| {
                    r.backend = crate::device::BackendKind::Host;
                    r.device_id = "host".into();
                    r.device_name = "AMD EPYC".into();
                    r.compute_capability.clear();
                    r.host = "vm".into();
                    r.run_id = format!("vm-host-amd-epyc-{stamp}");
                    r.vendor = "AuthenticAMD".into();
                    r.cpu_family = if microarch == "Zen 5" { "26" } else { "25" }.into();
                    r.cpu_model = model.into();
                    r.microarch = microarch.into();
                    r.isa = isa.into();
                    r
                })
                .collect();
            Run {
                calibration: Calibration::from_records(&rows, None).unwrap(),
                records: Some(rows),
            }
        };
        let runs = [
            vm("20261130T082122Z", "2", "Zen 5", "AVX-512F"),
            vm("20261201T100000Z", "1", "Zen 3", "AVX2+FMA"),
        ];
        let text = table(&runs);
        assert!(
            text.contains("[A] AMD EPYC (host CPU, Zen 5, AVX-512F) on vm"),
            "{text}"
        );
        assert!(
            text.contains("[B] AMD EPYC (host CPU, Zen 3, AVX2+FMA) on vm"),
            "{text}"
        );
        assert!(text.contains("family 26, model 2, microarchitecture Zen 5"));
        assert!(text.contains("family 25, model 1, microarchitecture Zen 3"));
        let csv = String::from_utf8(csv(&runs)).unwrap();
        assert!(csv.contains(",AMD EPYC,Zen 5,AVX-512F,,vm,"), "{csv}");
        assert!(csv.contains(",AMD EPYC,Zen 3,AVX2+FMA,,vm,"), "{csv}");
    }

    #[test]
    fn json_has_the_runs_and_the_csv_rows() {
        let runs = two_runs();
        let v: serde_json::Value = serde_json::from_str(&json(&runs)).unwrap();
        assert_eq!(v["runs"][1]["run"], "B");
        assert_eq!(v["runs"][1]["device"]["name"], "NVIDIA GeForce RTX 3090");
        assert_eq!(v["runs"][1]["device"]["identity"]["isa"], "sm_86");
        assert_eq!(v["runs"][0]["has_cases"], true);
        let rows = v["rows"].as_array().unwrap();
        let csv_rows = String::from_utf8(csv(&runs)).unwrap().lines().count() - 1;
        assert_eq!(rows.len(), csv_rows);
        let copy_b = rows
            .iter()
            .find(|r| r["key"] == "stream/copy/f32" && r["run"] == "B")
            .unwrap();
        assert_eq!(copy_b["ratio_to_a"], 2.0);
        assert_eq!(copy_b["status"], "ok");
    }

    /// `r` as a row of the run `first` is of (its run, host, time and device).
    fn of_run(mut r: Record, first: &Record) -> Record {
        r.run_id.clone_from(&first.run_id);
        r.host.clone_from(&first.host);
        r.timestamp_utc.clone_from(&first.timestamp_utc);
        r.device_name.clone_from(&first.device_name);
        r.compute_capability.clone_from(&first.compute_capability);
        r.isa.clone_from(&first.isa);
        r.units = first.units;
        r
    }

    /// Cache rows are bandwidths: GB/s in the lines, the table and the CSV, like the memory
    /// ceilings, never GOP/s for their i32 elements; an integer peak stays GOP/s.
    #[test]
    fn cache_rows_are_bandwidths() {
        let mut runs = two_runs();
        for run in &mut runs {
            let rows = run.records.as_mut().unwrap();
            let first = rows[0].clone();
            for (family, kernel, param, work) in [
                (
                    Family::Cache,
                    "l2",
                    Some(crate::cases::Param::Count(4096)),
                    (1u64 << 30, 0),
                ),
                (Family::Peak, "fma", None, (0, 1u64 << 40)),
            ] {
                rows.push(of_run(
                    row(family, kernel, Precision::I32, param, work, 1e-3, true),
                    &first,
                ));
            }
            run.calibration = Calibration::from_records(rows, None).unwrap();
        }
        let lines = lines(&runs);
        let unit = |key: &str| lines.iter().find(|l| l.key == key).unwrap().unit;
        assert_eq!(unit("cache/l2/i32/4096"), "GB/s");
        assert_eq!(unit("L2"), "GB/s");
        assert_eq!(unit("peak/fma/i32"), "GOP/s");
        assert_eq!(unit("i32"), "GOP/s");
        let table = table(&runs);
        let cache_row = table
            .lines()
            .find(|l| l.starts_with("cache/l2/i32/4096"))
            .unwrap();
        assert!(cache_row.contains(" GB/s "), "{cache_row}");
        let csv = String::from_utf8(csv(&runs)).unwrap();
        assert!(csv.contains("case,cache/l2/i32/4096,GB/s,A,"), "{csv}");
        assert!(csv.contains("case,cache/l2/i32/4096,GB/s,B,"), "{csv}");
        assert!(!csv.contains("cache/l2/i32/4096,GOP/s"));
    }

    /// `intensity/fma/*/0` does no arithmetic (k = 0): it compares its GB/s, as it measured
    /// them, where it read `no figure` under a GFLOP/s unit; k = 1 stays GFLOP/s.
    #[test]
    fn an_intensity_row_without_arithmetic_compares_its_bandwidth() {
        let mut runs = two_runs();
        for (i, run) in runs.iter_mut().enumerate() {
            let rows = run.records.as_mut().unwrap();
            let first = rows[0].clone();
            for k in [0u32, 1] {
                let bytes: u64 = 8 << 20;
                let r = row(
                    Family::Intensity,
                    "fma",
                    Precision::F32,
                    Some(crate::cases::Param::Count(k)),
                    (bytes, u64::from(k) * (1 << 20)),
                    bytes as f64 / (100e9 * (i + 1) as f64),
                    true,
                );
                rows.push(of_run(r, &first));
            }
            run.calibration = Calibration::from_records(rows, None).unwrap();
        }
        let lines = lines(&runs);
        let line = |key: &str| lines.iter().find(|l| l.key == key).unwrap();
        let k0 = line("intensity/fma/f32/0");
        assert_eq!(k0.unit, "GB/s");
        let measured: Vec<Option<f64>> = k0.cells.iter().map(|c| c.measured).collect();
        assert!(
            (measured[0].unwrap() - 100.0).abs() < 1e-6
                && (measured[1].unwrap() - 200.0).abs() < 1e-6,
            "{measured:?}"
        );
        assert!(k0.cells.iter().all(|c| c.status == "ok"));
        assert_eq!(k0.ratio(1), Some(2.0));
        assert_eq!(line("intensity/fma/f32/1").unit, "GFLOP/s");
        let table = table(&runs);
        let k0_row = table
            .lines()
            .find(|l| l.starts_with("intensity/fma/f32/0 "))
            .unwrap();
        assert!(
            k0_row.contains(" GB/s ") && !k0_row.contains("no figure"),
            "{k0_row}"
        );
    }

    #[test]
    fn letters() {
        assert_eq!(letter(0), "A");
        assert_eq!(letter(25), "Z");
        assert_eq!(letter(26), "AA");
        assert_eq!(letter(27), "AB");
    }
}
