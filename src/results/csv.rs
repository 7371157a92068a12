//! Rows to CSV and back. Writing: the header derived from [`Record`]'s fields (never written by
//! hand), and [`CsvSink`], which creates a file with its first row and flushes each row whole.
//! Reading: [`parse_csv`] takes files of this schema and the one before, concatenated ones too
//! (`cat a.csv b.csv`), names the file and line of anything it refuses, says when a file looks
//! cut off, and holds every row to [`crate::results::check`] before it is used.

use crate::cases::{Family, Precision};
use crate::device::BackendKind;
use crate::files::AppendFile;
use crate::results::check::{check_row, mixed_device, reference_mismatch};
use crate::results::record::{Record, ADDED_IN_2, OPTIONAL_IN_2, SCHEMA, SCHEMA_1};
use crate::text;
use crate::{Error, Result};
use roofprobe_calibration::check::text_problem;
use std::path::Path;

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

/// The header of a [`SCHEMA`] file written before the columns of [`OPTIONAL_IN_2`] existed.
pub fn header_2_without_optional() -> Vec<String> {
    header()
        .into_iter()
        .filter(|c| !OPTIONAL_IN_2.contains(&c.as_str()))
        .collect()
}

/// The header of a [`SCHEMA_1`] file: [`header`] less the columns added since.
pub fn header_1() -> Vec<String> {
    header()
        .into_iter()
        .filter(|c| !ADDED_IN_2.contains(&c.as_str()))
        .collect()
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
        max_memory_clock_mhz: None,
        driver: String::new(),
        vendor: String::new(),
        cpu_family: String::new(),
        cpu_model: String::new(),
        microarch: String::new(),
        isa: String::new(),
        uuid: String::new(),
        pci_bus_id: String::new(),
        vbios: String::new(),
        ecc: String::new(),
        mig: String::new(),
        power_limit_w: None,
        app_clock_mhz: None,
        app_memory_clock_mhz: None,
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
        stopped_by: String::new(),
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
        flags: String::new(),
        clock_mhz: None,
        memory_clock_mhz: None,
        power_w: None,
        temperature_c: None,
        throttle: String::new(),
        other_cpus_busy: None,
        other_gpu_processes: None,
        parallel_devices: None,
        note: String::new(),
    }
}

/// Writes rows to a CSV file, each flushed as soon as it is written, so an interrupted run keeps
/// everything it measured. The file is created with its first row, whole (a run that measures
/// nothing leaves no file), and each later row lands whole or not at all (a full disk leaves the
/// rows before it, never half a row). Never overwrites: the file must not exist.
pub struct CsvSink {
    path: std::path::PathBuf,
    file: Option<AppendFile>,
    rows: usize,
}

/// One row as CSV bytes, after the header when `with_header`.
pub(crate) fn row_bytes(record: &Record, with_header: bool) -> Result<Vec<u8>> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(with_header)
        .from_writer(Vec::new());
    w.serialize(record)
        .map_err(|e| Error::Internal(format!("serialising a row: {e}")))?;
    w.into_inner()
        .map_err(|e| Error::Internal(format!("serialising a row: {e}")))
}

impl CsvSink {
    /// A sink for `path`; nothing is created until the first row.
    pub fn new(path: &Path) -> CsvSink {
        CsvSink {
            path: path.to_path_buf(),
            file: None,
            rows: 0,
        }
    }

    /// Appends one row and flushes it to the file (creating it, header first, on the first).
    pub fn write(&mut self, record: &Record) -> Result<()> {
        match &mut self.file {
            Some(file) => file.append(&row_bytes(record, false)?)?,
            None => {
                self.file = Some(AppendFile::create_new(
                    &self.path,
                    &row_bytes(record, true)?,
                )?);
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// How many rows the file holds (each written whole).
    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether any row was written (and so the file exists).
    pub fn written(&self) -> bool {
        self.file.is_some()
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

/// Reads a roofprobe CSV (at most [`crate::files::MAX_FILE_BYTES`]), checking its header and
/// every row ([`parse_csv`]). Errors name the file, the line and what was expected.
pub fn read_csv(path: &Path) -> Result<Vec<Record>> {
    let bytes = crate::files::read_input(path)?;
    parse_csv(path, &bytes)
}

/// As [`read_csv`], from bytes already read (`path` names them in errors). A UTF-8 byte-order
/// mark is skipped. A header line further down (files concatenated, `cat a.csv b.csv`) is
/// skipped, and the rows after it read by it: files of [`SCHEMA`] and [`SCHEMA_1`] concatenate
/// in any order.
pub fn parse_csv(path: &Path, bytes: &[u8]) -> Result<Vec<Record>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(Error::parse(
            path,
            1,
            "empty file; expected a roofprobe CSV with a header line",
        ));
    }
    // Flexible: a header of the other schema in the middle has another number of fields; each
    // row's length is checked against the header in force below.
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let found: Vec<String> = reader
        .headers()
        .map_err(|e| Error::parse(path, 1, format!("unreadable header: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    // Each schema read, by its header.
    let layouts: [(csv::StringRecord, &str); 3] = [
        (csv::StringRecord::from(header()), SCHEMA),
        (csv::StringRecord::from(header_2_without_optional()), SCHEMA),
        (csv::StringRecord::from(header_1()), SCHEMA_1),
    ];
    let Some(mut layout) = layouts.iter().find(|(h, _)| h.iter().eq(found.iter())) else {
        if super::timeline::is_timeline_header(&found) {
            return Err(Error::parse(path, 1, super::timeline::not_a_run()));
        }
        return Err(Error::parse(
            path,
            1,
            text::one_line(&header_mismatch(&found)),
        ));
    };
    // An odd number of quotes: the last row ends inside a quoted field (the `note`), as a file
    // does whose writer was stopped mid-row (the csv reader takes such a field to the end).
    let ends_inside_quotes = bytes.iter().filter(|&&b| b == b'"').count() % 2 == 1;
    let mut out = Vec::new();
    let mut lines = Vec::new();
    let mut raw = csv::StringRecord::new();
    let mut counter = LineCounter::new(bytes);
    loop {
        let next_line = raw.position().map_or(2, |p| counter.line_at(p) + 1);
        match reader.read_record(&mut raw) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                let line = e.position().map_or(next_line, |p| counter.line_at(p));
                let what = match e.kind() {
                    csv::ErrorKind::Utf8 { .. } => "not UTF-8 text".to_string(),
                    other => format!("unreadable row: {other:?}"),
                };
                return Err(Error::parse(path, line, what));
            }
        }
        let line = raw.position().map_or(next_line, |p| counter.line_at(p));
        if let Some(next) = layouts.iter().find(|(h, _)| raw.iter().eq(h.iter())) {
            // `cat a.csv b.csv`: b's header in the middle, of either schema
            layout = next;
            continue;
        }
        let (headers, schema) = layout;
        let rest = usize::try_from(reader.position().byte())
            .map_or(&[][..], |at| bytes.get(at..).unwrap_or_default());
        let last = rest.iter().all(u8::is_ascii_whitespace);
        check_fields(path, line, &raw, headers, last && ends_inside_quotes, last)?;
        let record = parse_row(path, line, &raw, headers, schema)?;
        out.push(record);
        lines.push(line);
    }
    check_file(path, &out, &lines)?;
    Ok(out)
}

/// Why a header is none that this roofprobe reads: not ours at all, short of columns, or
/// columns other than a schema's.
fn header_mismatch(found: &[String]) -> String {
    let expected = header();
    let missing: Vec<String> = expected
        .iter()
        .filter(|c| !found.contains(c))
        .cloned()
        .collect();
    if found.first().map(String::as_str) != Some("schema") {
        format!(
            "not a roofprobe results CSV: expected a header starting `schema,run_id,…` ({SCHEMA})"
        )
    } else if !missing.is_empty() {
        format!(
            "header lacks column(s) {}; this file is not of schema {SCHEMA} (nor of \
             {SCHEMA_1}, which lacks the columns {SCHEMA} added)",
            crate::text::some_of(&missing)
        )
    } else {
        format!(
            "header columns differ from schema {SCHEMA}: expected {}",
            expected.join(",")
        )
    }
}

/// Line numbers counted from the bytes: the csv reader's own count falls one short per CRLF row
/// (a CRLF row's record starts at the `\n` the one before left: skip to its first byte). Counted
/// on from the last position asked, which only moves forward, so the file is scanned once.
struct LineCounter<'a> {
    bytes: &'a [u8],
    /// The byte counted up to, and the line it is on.
    at: usize,
    line: u64,
}

impl<'a> LineCounter<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        LineCounter {
            bytes,
            at: 0,
            line: 1,
        }
    }

    /// The line a record at `p` starts on.
    fn line_at(&mut self, p: &csv::Position) -> u64 {
        let bytes = self.bytes;
        let mut at = usize::try_from(p.byte()).map_or(bytes.len(), |b| b.min(bytes.len()));
        while bytes.get(at).is_some_and(|b| matches!(b, b'\r' | b'\n')) {
            at += 1;
        }
        if at < self.at {
            (self.at, self.line) = (0, 1);
        }
        self.line += bytes[self.at..at].iter().filter(|&&b| b == b'\n').count() as u64;
        self.at = at;
        self.line
    }
}

/// A row has as many fields as the header in force; the file's last row, short of them or
/// ending inside quotes, is a file cut off, and says so.
fn check_fields(
    path: &Path,
    line: u64,
    raw: &csv::StringRecord,
    headers: &csv::StringRecord,
    inside_quotes: bool,
    last: bool,
) -> Result<()> {
    let cut_off = |what: &str| {
        Error::parse(
            path,
            line,
            format!(
                "the last row {what}: the file looks cut off (a run stopped while writing it, \
                 or a copy that did not finish); delete that line (the rows above it are whole) \
                 or copy the file again"
            ),
        )
    };
    if inside_quotes {
        return Err(cut_off("ends inside a quoted field"));
    }
    if last && raw.len() < headers.len() {
        return Err(cut_off(&format!(
            "has {} of the header's {} fields",
            raw.len(),
            headers.len()
        )));
    }
    if raw.len() != headers.len() {
        return Err(Error::parse(
            path,
            line,
            format!(
                "row has {} fields, expected {} (truncated or damaged file?)",
                raw.len(),
                headers.len()
            ),
        ));
    }
    Ok(())
}

/// One row as a [`Record`] of the header's `schema`, every field printable and the row
/// consistent ([`check_row`]).
fn parse_row(
    path: &Path,
    line: u64,
    raw: &csv::StringRecord,
    headers: &csv::StringRecord,
    schema: &str,
) -> Result<Record> {
    let column = |i: usize| headers.get(i).unwrap_or("?");
    // Every field, before any is parsed or quoted: printable, and of at most MAX_TEXT_CHARS
    // (a 5 MB run id made a 5 MB error line, and `compare --csv` repeats it on every row).
    if let Some((i, why)) = raw
        .iter()
        .enumerate()
        .find_map(|(i, f)| text_problem(f).map(|why| (i, why)))
    {
        return Err(Error::parse(
            path,
            line,
            format!(
                "column `{}` {why} (damaged or not written by roofprobe?)",
                column(i)
            ),
        ));
    }
    let record: Record = raw.deserialize(Some(headers)).map_err(|e| {
        let what = match e.kind() {
            csv::ErrorKind::Deserialize { err, .. } => match err.field() {
                Some(f) => format!("column `{}`: {}", column(f as usize), err.kind()),
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
                "schema `{}` is not supported here; this roofprobe reads {SCHEMA} (and \
                 {SCHEMA_1}, whose header lacks the columns {SCHEMA} added), and the header \
                 above this row is of {schema}",
                record.schema
            ),
        ));
    }
    check_row(&record).map_err(|e| {
        Error::parse(
            path,
            line,
            format!(
                "{}: {e}; the file is damaged or hand-edited",
                record.case_id()
            ),
        )
    })?;
    Ok(record)
}

/// What holds across a file's rows (`lines` their line numbers): some row, one device per run
/// id, and every ratio to a reference the rows' own.
fn check_file(path: &Path, out: &[Record], lines: &[u64]) -> Result<()> {
    if out.is_empty() {
        return Err(Error::parse(
            path,
            2,
            "the file has a header but no measurements",
        ));
    }
    if let Some((j, i, message)) = mixed_device(out) {
        return Err(Error::parse(
            path,
            lines[i],
            format!(
                "{message} on line {}; a run id names one device's run (give each device's \
                 rows their own run id)",
                lines[j]
            ),
        ));
    }
    if let Some((i, message)) = reference_mismatch(out) {
        return Err(Error::parse(
            path,
            lines[i],
            format!(
                "{}: {message}; the file is damaged or hand-edited",
                out[i].case_id()
            ),
        ));
    }
    Ok(())
}
