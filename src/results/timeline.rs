//! What `roofprobe watch` leaves behind: the timeline, one [`TimelineRow`] per device per
//! sample, the single source of truth for its CSV columns (the header is derived from the
//! struct, as the run's is from `Record`).
//!
//! The same conventions as the run's CSV: tidy (the device's identity and the watch's id on
//! every row, so timelines of many devices and machines concatenate), a schema version on every
//! row ([`SCHEMA`]), units in the column names (`_s`, `_bytes`, `_mhz`, `_w`, `_c`, `_pct` a
//! percentage 0–100, `gbps` 10^9 bytes per second, `gflops` 10^9 operations per second), empty
//! where a figure is not known, never a made-up number. Rows are flushed as they are written
//! ([`TimelineSink`]), so a watch that is stopped, or whose device is lost, keeps every sample
//! it took.
//!
//! A timeline is not a run: `report`, `compare`, `plot`, `export` and `fleet` refuse it by its
//! header ([`is_timeline_header`]) with a line that says so.

use crate::files::AppendFile;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The timeline schema this build writes and reads.
pub const SCHEMA: &str = "roofprobe-timeline/1";

/// One sample of one watched device: its raw counters (each source's own, see docs/watch.md),
/// and what `analysis::watch` made of them against the ceilings.
///
/// Field order is column order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineRow {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// `<host>-watch-<UTC stamp>`: the rows of one watch share it.
    pub watch_id: String,
    /// When the sample was taken, RFC 3339 UTC.
    pub timestamp_utc: String,
    pub host: String,
    /// `cuda:0` or `host`.
    pub device_id: String,
    pub device_name: String,
    pub uuid: String,
    /// Where the activity figures came from: `gpm`, `dcgm`, `nvml-utilisation` or `proc`.
    pub signal: String,
    /// The watched process (its children included); empty when none was named.
    pub pid: Option<u32>,
    /// Seconds since the watch started, and the seconds the activity figures cover.
    pub t_s: f64,
    pub span_s: f64,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    /// The capacity the memory is held against: measured (a run's largest allocation after its
    /// context) or the total (see `capacity_basis`).
    pub memory_usable_bytes: Option<u64>,
    pub capacity_basis: String,
    /// The watched processes' memory on the device (on the host: their resident set).
    pub process_memory_bytes: Option<u64>,
    pub sm_clock_mhz: Option<f64>,
    pub memory_clock_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub temperature_c: Option<f64>,
    /// Clock-event reasons, `;`-separated, as the run's `throttle` column.
    pub throttle: String,
    pub sm_active_pct: Option<f64>,
    pub sm_occupancy_pct: Option<f64>,
    pub dram_active_pct: Option<f64>,
    pub tensor_active_pct: Option<f64>,
    pub tensor_f16_pct: Option<f64>,
    pub tensor_int_pct: Option<f64>,
    pub tensor_f64_pct: Option<f64>,
    pub fp64_active_pct: Option<f64>,
    pub fp32_active_pct: Option<f64>,
    pub fp16_active_pct: Option<f64>,
    pub gpu_util_pct: Option<f64>,
    pub memory_util_pct: Option<f64>,
    pub pcie_tx_bytes_per_s: Option<f64>,
    pub pcie_rx_bytes_per_s: Option<f64>,
    pub cpu_busy_cores: Option<f64>,
    /// Achieved DRAM bandwidth, and the DRAM ceiling it is placed under (measured where a run
    /// measured one, else the spec's; `dram_basis` says which and how the figure was made).
    pub dram_gbps: Option<f64>,
    pub dram_ceiling_gbps: Option<f64>,
    pub dram_basis: String,
    /// The busiest pipe's achieved rate (`compute_pipe`: `tensor bf16.f32`, `f32`, …) and its
    /// ceiling; `compute_basis` as `dram_basis`.
    pub compute_gflops: Option<f64>,
    pub compute_ceiling_gflops: Option<f64>,
    pub compute_pipe: String,
    pub compute_basis: String,
    /// compute_gflops / dram_gbps: where the sample sits on the roofline's x axis.
    pub flop_per_byte: Option<f64>,
    /// This sample's verdict alone: `capacity`, `bandwidth`, `compute`, `idle`, `latency` or
    /// `busy` (docs/watch.md); the phases' verdicts come at the end, in the summary.
    pub verdict: String,
}

/// The timeline header, derived from [`TimelineRow`]'s fields.
pub fn header() -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(TimelineRow::default())
        .expect("serialising a row to memory cannot fail");
    let bytes = w.into_inner().expect("flushing to memory cannot fail");
    let text = String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8");
    text.lines()
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::to_string)
        .collect()
}

/// Whether the columns `found` are a timeline's (of any version: the schema column first, and
/// the columns only a timeline has).
pub fn is_timeline_header(found: &[String]) -> bool {
    found.first().map(String::as_str) == Some("schema")
        && ["watch_id", "t_s", "signal"]
            .iter()
            .all(|c| found.iter().any(|f| f == c))
}

/// The line a reader of runs gives for a timeline.
pub fn not_a_run() -> String {
    format!(
        "this is a `roofprobe watch` timeline ({SCHEMA}), not a run: report, compare, plot, \
         export and fleet read the CSVs `roofprobe run` writes (docs/watch.md describes the \
         timeline)"
    )
}

fn row_bytes(row: &TimelineRow, with_header: bool) -> Result<Vec<u8>> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(with_header)
        .from_writer(Vec::new());
    w.serialize(row)
        .map_err(|e| Error::Internal(format!("serialising a timeline row: {e}")))?;
    w.into_inner()
        .map_err(|e| Error::Internal(format!("serialising a timeline row: {e}")))
}

/// Writes timeline rows, each flushed as it is written; the file is created (header first) with
/// the first row, whole, and each later row lands whole or not at all. Never overwrites: the
/// file must not exist (the command removes it first under `--force`). A stream (`/dev/null`,
/// a named pipe, `-`) is written into as it is.
pub struct TimelineSink {
    path: std::path::PathBuf,
    file: Option<Sink>,
    rows: usize,
}

/// Where rows go: a file of their own, or a stream (`-o /dev/null`, a named pipe, `-` for
/// stdout) written into as it is.
enum Sink {
    File(AppendFile),
    Stream(Box<dyn std::io::Write>),
}

impl Sink {
    fn open(path: &Path, first: &[u8]) -> Result<Sink> {
        if !crate::files::is_stream(path) {
            return Ok(Sink::File(AppendFile::create_new(path, first)?));
        }
        let mut out: Box<dyn std::io::Write> = if crate::files::is_stdout(path) {
            Box::new(std::io::stdout())
        } else {
            Box::new(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| Error::io(path, e))?,
            )
        };
        out.write_all(first)
            .and_then(|()| out.flush())
            .map_err(|e| Error::io(path, e))?;
        Ok(Sink::Stream(out))
    }

    fn append(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        match self {
            Sink::File(f) => f.append(bytes),
            Sink::Stream(out) => out
                .write_all(bytes)
                .and_then(|()| out.flush())
                .map_err(|e| Error::io(path, e)),
        }
    }
}

impl TimelineSink {
    pub fn new(path: &Path) -> TimelineSink {
        TimelineSink {
            path: path.to_path_buf(),
            file: None,
            rows: 0,
        }
    }

    pub fn write(&mut self, row: &TimelineRow) -> Result<()> {
        // fields from outside (device names) never carry a control character into the file
        let mut row = row.clone();
        for text in [&mut row.device_name, &mut row.host, &mut row.throttle] {
            *text = crate::text::one_line(text).into_owned();
        }
        match &mut self.file {
            Some(file) => file.append(&self.path, &row_bytes(&row, false)?)?,
            None => self.file = Some(Sink::open(&self.path, &row_bytes(&row, true)?)?),
        }
        self.rows += 1;
        Ok(())
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads a timeline's rows back (tests, and tools that read it as data); a file of another
/// schema is refused with its line.
pub fn parse_timeline(path: &Path, bytes: &[u8]) -> Result<Vec<TimelineRow>> {
    let mut reader = csv::Reader::from_reader(bytes);
    let found: Vec<String> = reader
        .headers()
        .map_err(|e| Error::parse(path, 1, format!("unreadable header: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    if found != header() {
        return Err(Error::parse(
            path,
            1,
            format!(
                "not a timeline of {SCHEMA}: expected the header {}",
                header().join(",")
            ),
        ));
    }
    let mut out = Vec::new();
    for (i, row) in reader.deserialize::<TimelineRow>().enumerate() {
        let line = i as u64 + 2;
        let row = row.map_err(|e| Error::parse(path, line, e.to_string()))?;
        if row.schema != SCHEMA {
            return Err(Error::parse(
                path,
                line,
                format!(
                    "schema `{}` is not supported; this roofprobe reads {SCHEMA}",
                    row.schema
                ),
            ));
        }
        out.push(row);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: f64) -> TimelineRow {
        TimelineRow {
            schema: SCHEMA.into(),
            watch_id: "box-watch-20260101T000000Z".into(),
            device_id: "cuda:0".into(),
            device_name: "NVIDIA H100 80GB HBM3".into(),
            signal: "gpm".into(),
            t_s: t,
            dram_active_pct: Some(80.0),
            verdict: "bandwidth".into(),
            ..TimelineRow::default()
        }
    }

    /// Rows are flushed one by one (the file holds every row written so far, header first),
    /// read back as written, and the file is never overwritten.
    #[test]
    fn rows_land_one_by_one_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut sink = TimelineSink::new(&path);
        assert!(!path.exists(), "nothing before the first row");
        sink.write(&row(0.5)).unwrap();
        let one = std::fs::read(&path).unwrap();
        assert_eq!(parse_timeline(&path, &one).unwrap().len(), 1);
        sink.write(&row(1.0)).unwrap();
        let rows = parse_timeline(&path, &std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(rows, vec![row(0.5), row(1.0)]);
        assert!(TimelineSink::new(&path).write(&row(2.0)).is_err());
        assert!(is_timeline_header(&header()));
        assert!(!is_timeline_header(&crate::results::csv::header()));
        let other = String::from_utf8(one)
            .unwrap()
            .replace(SCHEMA, "roofprobe-timeline/9");
        let err = parse_timeline(&path, other.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("not supported"), "{err}");
    }
}
