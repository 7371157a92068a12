//! The results row: one [`Record`] per measurement, the single source of truth for the CSV
//! columns (the header is derived from this struct, never written by hand).
//!
//! Rows are tidy: device identity and run conditions repeat on every row, so files from many
//! machines concatenate and `compare` can read any mix of them. Every row carries the schema
//! version; a reader refuses rows of another schema with the file and line.
//!
//! An invalid or failed case keeps its row (`valid = false`, the reason in `status`) but has
//! no figures: time, GB/s and GFLOP/s are empty, never a number.

use crate::backend::{BackendKind, Conditions, DeviceInfo};
use crate::bench::{Case, Family, Param, Precision, Verdict, Work};
use crate::stats::Summary;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The CSV schema this build writes and reads.
pub const SCHEMA: &str = "roofprobe-csv/2";

/// How a skipped row's status starts.
pub const SKIPPED: &str = "skipped: ";

/// The schema before it: no `ratio_to_reference` column, every `param` a number. This build
/// still reads it (its rows get an empty ratio).
pub const SCHEMA_V1: &str = "roofprobe-csv/1";

/// The column schema 2 added.
const RATIO_COLUMN: &str = "ratio_to_reference";

/// One measurement: a case on a device, its statistics, figures, validity and conditions.
///
/// Field order is column order. Units are in the names: `_s` seconds, `_bytes` bytes,
/// `gbps` 10^9 bytes per second, `gflops` 10^9 operations per second, `_mhz`, `_w`, `_c`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// `<host>-<device>-<UTC stamp>`: the rows of one run of one device share it.
    pub run_id: String,
    /// When this row was measured, RFC 3339 UTC.
    pub timestamp_utc: String,
    pub host: String,
    pub backend: BackendKind,
    /// `cuda:0` or `host`.
    pub device_id: String,
    pub device_name: String,
    /// `9.0`; empty on the host.
    pub compute_capability: String,
    /// SMs, or CPU threads used.
    pub units: u32,
    /// The last-level cache (L2 on a GPU), bytes: DRAM figures need working sets ≥ 4× this.
    pub llc_bytes: u64,
    /// Memory bus width the device reports, for a theoretical DRAM figure; empty on the host.
    pub memory_bus_bits: Option<u32>,
    pub driver: String,
    pub family: Family,
    pub kernel: String,
    pub precision: Precision,
    /// The family's parameter: operations per element in the intensity sweep, KiB of working
    /// set in the cache sweep, `MxNxK` of a GEMM; else empty.
    pub param: Option<Param>,
    /// Elements per array.
    pub elements: u64,
    pub working_set_bytes: u64,
    /// Bytes read + bytes written by one launch (STREAM counting: each element once, no
    /// write-allocate).
    pub bytes: u64,
    /// Arithmetic operations of one launch (2 per FMA per lane).
    pub flops: u64,
    /// Launches timed back to back per sample.
    pub reps: u32,
    pub samples: u32,
    pub time_min_s: Option<f64>,
    pub time_median_s: Option<f64>,
    pub time_mean_s: Option<f64>,
    pub time_max_s: Option<f64>,
    pub time_stddev_s: Option<f64>,
    /// Coefficient of variation of the per-launch time.
    pub cv: Option<f64>,
    /// bytes / median time / 10^9.
    pub gbps: Option<f64>,
    /// flops / median time / 10^9.
    pub gflops: Option<f64>,
    /// The theoretical peak of the case's arithmetic at `clock_mhz` (units × FMA lanes × 2 ×
    /// clock; `specs::theory`), GFLOP/s; empty where the device's rate is not known, for cases
    /// without arithmetic, and for invalid rows.
    pub theory_gflops: Option<f64>,
    /// Our implementation's GFLOP/s over the reference implementation's on the same shape and
    /// precision, measured just before it in the same run (`gemm`: `simd` over `gemm-crate` on
    /// the host, `ptx` over `cublas` on a GPU); empty where no valid reference ran, and on
    /// reference rows themselves.
    #[serde(default)]
    pub ratio_to_reference: Option<f64>,
    /// flops / bytes; empty when the case moves no bytes.
    pub intensity: Option<f64>,
    pub valid: bool,
    /// `ok`, `invalid: …` or `error: …`.
    pub status: String,
    /// SM / core clock: the one the case measured while it ran where it measures one (GPU peak,
    /// tensor and sweep kernels: `%clock64` against `%globaltimer` in their block records; host
    /// compute cases: a dependent-add chain on the same cores right after the samples), else
    /// observed around the case (mean of before and after).
    pub clock_mhz: Option<f64>,
    pub memory_clock_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub temperature_c: Option<f64>,
    /// Throttle reasons seen, `;`-separated.
    pub throttle: String,
    /// Launch geometry or threads, and how the size was chosen.
    pub note: String,
}

/// Everything about the run that is the same for every row of one device.
#[derive(Clone, Debug)]
pub struct RunIdentity {
    pub run_id: String,
    pub host: String,
    pub device: DeviceInfo,
}

/// How a case ended.
pub enum Outcome<'a> {
    /// Timed and checked.
    Measured {
        summary: &'a Summary,
        reps: u32,
        verdict: &'a Verdict,
    },
    /// Could not be prepared, run or checked.
    Failed { error: &'a str },
    /// Not run, for a reason that is no fault (a reference library that is not installed).
    Skipped { why: &'a str },
}

impl Record {
    /// Builds a row. Figures are filled only for a measured case whose verdict is valid.
    pub fn new(
        identity: &RunIdentity,
        timestamp_utc: String,
        case: &Case,
        outcome: Outcome<'_>,
        conditions: &Conditions,
        note: String,
    ) -> Record {
        let d = &identity.device;
        let Work { flops, .. } = case.work;
        let bytes = case.work.bytes();
        let mut r = Record {
            schema: SCHEMA.to_string(),
            run_id: identity.run_id.clone(),
            timestamp_utc,
            host: identity.host.clone(),
            backend: d.backend,
            device_id: d.id.clone(),
            device_name: d.name.clone(),
            compute_capability: d.compute_capability.clone(),
            units: d.units,
            llc_bytes: d.llc_bytes,
            memory_bus_bits: d.memory_bus_bits,
            driver: d.driver.clone(),
            family: case.family,
            kernel: case.kernel.clone(),
            precision: case.precision,
            param: case.param,
            elements: case.elements,
            working_set_bytes: case.working_set_bytes,
            bytes,
            flops,
            reps: 0,
            samples: 0,
            time_min_s: None,
            time_median_s: None,
            time_mean_s: None,
            time_max_s: None,
            time_stddev_s: None,
            cv: None,
            gbps: None,
            gflops: None,
            theory_gflops: None,
            ratio_to_reference: None,
            intensity: case.work.intensity(),
            valid: false,
            status: String::new(),
            clock_mhz: conditions.clock_mhz,
            memory_clock_mhz: conditions.memory_clock_mhz,
            power_w: conditions.power_w,
            temperature_c: conditions.temperature_c,
            throttle: conditions.throttle.clone(),
            note,
        };
        match outcome {
            Outcome::Measured {
                summary,
                reps,
                verdict,
            } => {
                r.reps = reps;
                r.samples = summary.samples as u32;
                if verdict.valid {
                    let t = summary.median_secs;
                    r.valid = true;
                    r.status = "ok".to_string();
                    r.time_min_s = Some(summary.min_secs);
                    r.time_median_s = Some(t);
                    r.time_mean_s = Some(summary.mean_secs);
                    r.time_max_s = Some(summary.max_secs);
                    r.time_stddev_s = Some(summary.stddev_secs);
                    r.cv = Some(summary.cv);
                    r.gbps = (bytes > 0).then(|| bytes as f64 / t / 1e9);
                    r.gflops = (flops > 0).then(|| flops as f64 / t / 1e9);
                } else {
                    r.status = format!("invalid: {}", verdict.detail);
                }
            }
            Outcome::Failed { error } => {
                r.status = format!("error: {error}");
            }
            Outcome::Skipped { why } => {
                r.status = format!("{SKIPPED}{why}");
            }
        }
        r
    }

    /// Whether the case was skipped (not run, no fault: `skipped: <why>`), not failed.
    pub fn is_skipped(&self) -> bool {
        !self.valid && self.status.starts_with(SKIPPED)
    }

    /// `family/kernel/precision[/param]`, as [`Case::id`].
    pub fn case_id(&self) -> String {
        match self.param {
            Some(p) => format!("{}/{}/{}/{}", self.family, self.kernel, self.precision, p),
            None => format!("{}/{}/{}", self.family, self.kernel, self.precision),
        }
    }
}

/// The CSV header, derived from [`Record`]'s fields.
pub fn header() -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(sample_record())
        .expect("serialising a record to memory cannot fail");
    let bytes = w.into_inner().expect("flushing to memory cannot fail");
    let text = String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8");
    let line = text.lines().next().unwrap_or_default();
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line.as_bytes())
        .records()
        .next()
        .and_then(|r| r.ok())
        .map(|r| r.iter().map(str::to_string).collect())
        .unwrap_or_default()
}

fn sample_record() -> Record {
    Record {
        schema: SCHEMA.into(),
        run_id: String::new(),
        timestamp_utc: String::new(),
        host: String::new(),
        backend: BackendKind::Host,
        device_id: String::new(),
        device_name: String::new(),
        compute_capability: String::new(),
        units: 0,
        llc_bytes: 0,
        memory_bus_bits: None,
        driver: String::new(),
        family: Family::Stream,
        kernel: String::new(),
        precision: Precision::F32,
        param: None,
        elements: 0,
        working_set_bytes: 0,
        bytes: 0,
        flops: 0,
        reps: 0,
        samples: 0,
        time_min_s: None,
        time_median_s: None,
        time_mean_s: None,
        time_max_s: None,
        time_stddev_s: None,
        cv: None,
        gbps: None,
        gflops: None,
        theory_gflops: None,
        ratio_to_reference: None,
        intensity: None,
        valid: false,
        status: String::new(),
        clock_mhz: None,
        memory_clock_mhz: None,
        power_w: None,
        temperature_c: None,
        throttle: String::new(),
        note: String::new(),
    }
}

/// Writes rows to a CSV file, each flushed as soon as it is written, so an interrupted run keeps
/// everything it measured. Never overwrites: the file must not exist.
pub struct CsvSink {
    path: std::path::PathBuf,
    writer: csv::Writer<std::fs::File>,
}

impl CsvSink {
    /// Creates `path`, failing if it exists.
    pub fn create_new(path: &Path) -> Result<CsvSink> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(CsvSink {
            path: path.to_path_buf(),
            writer: csv::Writer::from_writer(file),
        })
    }

    /// Appends one row and flushes it to the file.
    pub fn write(&mut self, record: &Record) -> Result<()> {
        let io = |e: std::io::Error| Error::io(&self.path, e);
        self.writer
            .serialize(record)
            .map_err(|e| match e.into_kind() {
                csv::ErrorKind::Io(e) => io(e),
                other => Error::Internal(format!("serialising a row: {other:?}")),
            })?;
        self.writer.flush().map_err(io)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Serialises rows to CSV bytes (header included), as files are written.
pub fn to_csv_bytes(records: &[Record]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in records {
        w.serialize(r)
            .expect("serialising a record to memory cannot fail");
    }
    if records.is_empty() {
        w.write_record(header())
            .expect("writing to memory cannot fail");
    }
    w.into_inner().expect("flushing to memory cannot fail")
}

/// Reads a roofprobe CSV, checking its header and the schema of every row. Errors name the
/// file, the line and what was expected.
pub fn read_csv(path: &Path) -> Result<Vec<Record>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_csv(path, &bytes)
}

/// As [`read_csv`], from bytes already read (`path` names them in errors).
pub fn parse_csv(path: &Path, bytes: &[u8]) -> Result<Vec<Record>> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(Error::parse(
            path,
            1,
            "empty file; expected a roofprobe CSV with a header line",
        ));
    }
    let mut reader = csv::ReaderBuilder::new().from_reader(bytes);
    let current = header();
    let v1: Vec<String> = current
        .iter()
        .filter(|c| c.as_str() != RATIO_COLUMN)
        .cloned()
        .collect();
    let found: Vec<String> = reader
        .headers()
        .map_err(|e| Error::parse(path, 1, format!("unreadable header: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    let (expected, schema) = if found == v1 {
        (v1, SCHEMA_V1)
    } else {
        (current, SCHEMA)
    };
    if found != expected {
        let missing: Vec<&str> = expected
            .iter()
            .filter(|c| !found.contains(c))
            .map(String::as_str)
            .collect();
        let message = if found.first().map(String::as_str) != Some("schema") {
            format!(
                "not a roofprobe results CSV: expected a header starting `schema,run_id,…` ({SCHEMA})"
            )
        } else if !missing.is_empty() {
            format!(
                "header lacks column(s) {}; this file is not of schema {SCHEMA}",
                missing.join(", ")
            )
        } else {
            format!(
                "header columns differ from schema {SCHEMA}: expected {}",
                expected.join(",")
            )
        };
        return Err(Error::parse(path, 1, message));
    }
    let mut out = Vec::new();
    for (i, row) in reader.deserialize::<Record>().enumerate() {
        let line = i as u64 + 2;
        let record = row.map_err(|e| {
            let line = e.position().map_or(line, |p| p.line());
            let what = match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => format!(
                    "row has {len} fields, expected {expected_len} (truncated or damaged file?)"
                ),
                csv::ErrorKind::Deserialize { err, .. } => match err.field() {
                    Some(f) => format!(
                        "column `{}`: {}",
                        expected.get(f as usize).map_or("?", String::as_str),
                        err.kind()
                    ),
                    None => err.kind().to_string(),
                },
                other => format!("{other:?}"),
            };
            Error::parse(path, line, what)
        })?;
        if record.schema != schema {
            return Err(Error::parse(
                path,
                line,
                format!(
                    "schema `{}` is not supported with this header; this roofprobe reads \
                     {SCHEMA} (and {SCHEMA_V1})",
                    record.schema
                ),
            ));
        }
        out.push(record);
    }
    if out.is_empty() {
        return Err(Error::parse(
            path,
            2,
            "the file has a header but no measurements",
        ));
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::stream::StreamKernel;

    pub(crate) fn identity() -> RunIdentity {
        RunIdentity {
            run_id: "box-host-20260101T000000Z".into(),
            host: "box".into(),
            device: crate::backend::host::host_info(),
        }
    }

    pub(crate) fn measured(case: &Case, median: f64, valid: bool) -> Record {
        let summary = Summary::from_secs(&[median * 0.9, median, median * 1.1]).unwrap();
        let verdict = if valid {
            Verdict::valid()
        } else {
            Verdict::invalid("[3] is 1, should be 2, diff -1")
        };
        Record::new(
            &identity(),
            "2026-01-01T00:00:00Z".into(),
            case,
            Outcome::Measured {
                summary: &summary,
                reps: 4,
                verdict: &verdict,
            },
            &Conditions::default(),
            String::new(),
        )
    }

    #[test]
    fn figures_come_from_the_median_and_the_work_table() {
        let case = StreamKernel::Triad.case(Precision::F32, 1_000_000);
        let r = measured(&case, 1e-3, true);
        assert_eq!(r.bytes, 12_000_000);
        assert_eq!(r.flops, 2_000_000);
        assert!((r.gbps.unwrap() - 12.0).abs() < 1e-9);
        assert!((r.gflops.unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(r.status, "ok");
        assert_eq!(r.case_id(), case.id());
    }

    #[test]
    fn invalid_rows_carry_no_numbers() {
        let case = StreamKernel::Copy.case(Precision::F64, 1000);
        let r = measured(&case, 1e-3, false);
        assert!(!r.valid);
        assert!(r.status.starts_with("invalid: [3] is 1"));
        assert_eq!(
            (r.gbps, r.gflops, r.time_median_s, r.cv),
            (None, None, None, None)
        );
        let failed = Record::new(
            &identity(),
            "t".into(),
            &case,
            Outcome::Failed {
                error: "out of memory",
            },
            &Conditions::default(),
            String::new(),
        );
        assert_eq!(failed.status, "error: out of memory");
        assert_eq!(failed.gbps, None);
    }

    #[test]
    fn header_is_derived_and_starts_with_schema() {
        let h = header();
        assert_eq!(h[0], "schema");
        assert!(h.contains(&"gbps".to_string()));
        assert_eq!(h.len(), 41);
    }

    #[test]
    fn csv_round_trips() {
        let records: Vec<Record> = crate::bench::stream::cases(|_| 1000)
            .iter()
            .enumerate()
            .map(|(i, c)| measured(c, 1e-4 * (i + 1) as f64, i % 5 != 0))
            .collect();
        let bytes = to_csv_bytes(&records);
        let back = parse_csv(Path::new("x.csv"), &bytes).unwrap();
        assert_eq!(back, records);
    }

    /// Schema 1 files (no ratio column, numeric parameters) still read, as the runs in
    /// `results/` were written; a GEMM row's shape and ratio round-trip through schema 2.
    #[test]
    fn schema_1_files_still_read_and_shapes_round_trip() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "csv") {
                let rows = read_csv(&path).unwrap_or_else(|e| panic!("{e}"));
                if rows[0].schema == SCHEMA_V1 {
                    read += 1;
                    assert!(rows.iter().all(|r| r.ratio_to_reference.is_none()));
                    assert!(
                        rows.iter()
                            .any(|r| r.param == Some(Param::Count(64))
                                && r.case_id().ends_with("/64"))
                    );
                }
            }
        }
        assert!(read >= 1, "results/ keeps schema-1 runs");
        let shape = crate::bench::gemm::Shape::new(1, 28672, 8192);
        let case = crate::bench::gemm::case("simd", Precision::F32, shape);
        let mut r = measured(&case, 1e-3, true);
        r.ratio_to_reference = Some(0.93);
        let back = parse_csv(Path::new("g.csv"), &to_csv_bytes(&[r.clone()])).unwrap();
        assert_eq!(back, [r]);
        assert_eq!(back[0].case_id(), "gemm/simd/f32/1x28672x8192");
        let text = String::from_utf8(to_csv_bytes(&back)).unwrap();
        assert!(text.contains(",1x28672x8192,"), "{text}");
    }

    #[test]
    fn csv_sink_flushes_each_row_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        let mut sink = CsvSink::create_new(&path).unwrap();
        let case = StreamKernel::Copy.case(Precision::F32, 10);
        sink.write(&measured(&case, 1e-3, true)).unwrap();
        // readable before the sink is dropped
        assert_eq!(read_csv(&path).unwrap().len(), 1);
        assert!(matches!(CsvSink::create_new(&path), Err(Error::Io { .. })));
    }

    #[test]
    fn bad_files_name_file_line_and_expectation() {
        let p = Path::new("bad.csv");
        let err = |b: &[u8]| parse_csv(p, b).unwrap_err().to_string();
        assert_eq!(
            err(b""),
            "bad.csv:1: empty file; expected a roofprobe CSV with a header line"
        );
        assert!(err(b"a,b\n1,2\n").starts_with("bad.csv:1: not a roofprobe results CSV"));
        let case = StreamKernel::Copy.case(Precision::F32, 10);
        let good = to_csv_bytes(&[measured(&case, 1e-3, true), measured(&case, 1e-3, true)]);
        let text = String::from_utf8(good).unwrap();
        // truncated last row
        let cut = &text[..text.len() - 30];
        assert!(
            err(cut.as_bytes()).starts_with("bad.csv:3: row has"),
            "{}",
            err(cut.as_bytes())
        );
        // a number that is not one
        let broken = text.replacen(",10,80,80,", ",lots,80,80,", 1);
        let e = err(broken.as_bytes());
        assert!(e.starts_with("bad.csv:2: column `elements`"), "{e}");
        // another schema
        let other = text.replace(SCHEMA, "roofprobe-csv/9");
        assert!(err(other.as_bytes()).contains("schema `roofprobe-csv/9` is not supported"));
        // a schema-1 row under a schema-2 header
        let mixed = text.replace(SCHEMA, SCHEMA_V1);
        assert!(err(mixed.as_bytes()).contains("schema `roofprobe-csv/1` is not supported"));
        // a header without rows
        let head_only = text.lines().next().unwrap().to_string() + "\n";
        assert!(err(head_only.as_bytes()).contains("no measurements"));
        // a column missing
        let fewer = text.replacen("schema,run_id", "schema,runid", 1);
        assert!(err(fewer.as_bytes()).contains("lacks column(s) run_id"));
    }
}
