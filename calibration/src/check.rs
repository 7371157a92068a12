//! What a figure read back from a file may be, and the checks a calibration passes before anyone
//! uses it: every ceiling, clock and point finite, positive and within physical bounds
//! ([`MAX_GBPS`], [`MAX_GFLOPS`], [`MIN_CEILING`], [`MIN_SECS`] …), every derived figure
//! (efficiency, ridge, fraction of roof) equal to what it derives from, a point `above_roof` only
//! beyond its roof, the identity's power limit and clocks finite and positive, times UTC as the
//! suite writes them, no control character in any text and no text longer than
//! [`MAX_TEXT_CHARS`].
//!
//! The bounds keep every figure computed from figures within them finite: a ratio of two
//! ceilings lies within 10^-14 ..= 10^14, so no reader downstream meets an infinity.
//!
//! The limits here are the one source of truth for every roofprobe reader (its CSV reader uses
//! them too). A file that breaks one is refused with the line of the offending field; nothing is
//! clipped or guessed.
//!
//! This module must not print or write anything.

use crate::error::{Error, Result};
use crate::Calibration;
use std::io::Read;
use std::path::Path;

/// The largest file a reader takes: far above any real run (a CSV row is under 1 KiB), and a
/// bound on what `/dev/zero` or a runaway file can cost.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Relative tolerance between a figure and the one recomputed from what it derives from (files
/// are written with full precision; this leaves room for a hand-edited four-digit efficiency).
pub const TOLERANCE: f64 = 1e-4;

/// The physical bounds of a figure read back. Each sits far above the fastest device of 2026 and
/// far below where arithmetic on it stops being finite, so a figure past one is damage, never a
/// measurement, and every figure derived from figures within them (a ratio, an efficiency, a
/// ridge point, a time at a rate) stays finite.
///
/// No memory system moves 10^6 GB/s (a PB/s): an H200's HBM is about 4.8 × 10^3 GB/s, the
/// aggregate L1 of a large GPU or a 192-core CPU about 10^5.
pub const MAX_GBPS: f64 = 1e6;

/// No device computes 10^8 GFLOP/s (100 PFLOP/s): an H200's dense FP8 tensor peak is about
/// 2 × 10^6, so this is 50 times that.
pub const MAX_GFLOPS: f64 = 1e8;

/// No ceiling (a bandwidth in GB/s, a compute rate in GFLOP/s, a link) is below 10^-6 (1 kB/s,
/// 1 kFLOP/s): a slower one is damage (a subnormal such as 5e-324 divides into infinities).
pub const MIN_CEILING: f64 = 1e-6;

/// No kernel launch or sample takes less than a picosecond (a subnormal time divides into an
/// infinite rate); none we time takes a day.
pub const MIN_SECS: f64 = 1e-12;
pub const MAX_SECS: f64 = 86_400.0;

/// No device holds a pebibyte (2^50 bytes) of memory.
pub const MAX_MEMORY_BYTES: u64 = 1 << 50;

/// A ratio of two figures (an arithmetic intensity in FLOP per byte, a residual): finite and at
/// most 10^12, whatever the two are.
pub const MAX_RATE: f64 = 1e12;

/// The longest text a field may hold (a run id, a device name, a note, a spec's sources): twice
/// the longest the suite writes itself (the spec sheet's list of sources, about 500
/// characters; a run id is under 100), and a bound on what a field can cost when it is repeated
/// on every row of an output or quoted in an error.
pub const MAX_TEXT_CHARS: usize = 1024;

/// How a UTC time is written (`2026-12-06T13:09:00Z`): every writer of this suite writes it so,
/// every reader takes only this.
pub const UTC_FORMAT: &str = "YYYY-MM-DDTHH:MM:SSZ";

/// No clock runs at 100 GHz.
pub const MAX_MHZ: f64 = 1e5;

/// No device draws a megawatt or runs at 1000 °C.
pub const MAX_WATTS: f64 = 1e6;
pub const MAX_CELSIUS: f64 = 1e3;

/// No machine has a million CPUs: more of other processes' CPU time during one case is damage.
pub const MAX_CPUS: f64 = 1e6;

/// Reads a file of at most [`MAX_FILE_BYTES`], refusing a larger one (or an endless one such as
/// `/dev/zero`) after reading one byte past the limit.
pub fn read_limited(path: &Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::parse(
            path,
            1,
            format!(
                "larger than {} MiB, the most a roofprobe reader takes; split it (one file per \
                 run) or check that it is a results file",
                MAX_FILE_BYTES >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// Whether a character may not appear in any text roofprobe reads: control characters (NUL,
/// ESC, newlines, DEL, C1), bidirectional overrides that reorder what a terminal shows, and the
/// two non-characters XML refuses. Each could forge or hide output, or break an SVG.
pub fn is_forbidden_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FFFE}' | '\u{FFFF}')
}

/// The first forbidden character of `s`, if any.
pub fn first_forbidden(s: &str) -> Option<char> {
    s.chars().find(|c| is_forbidden_char(*c))
}

/// A figure a reader accepts as a rate, time or clock: finite, strictly positive and not
/// subnormal (below `f64::MIN_POSITIVE` a figure has lost its precision, and dividing by it
/// overflows).
pub fn is_positive(x: f64) -> bool {
    x.is_normal() && x > 0.0
}

/// `v` as an error quotes it: as Rust writes it, or in exponent form where that is long
/// (5e-324, not 324 digits).
pub fn figure(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() <= 24 {
        plain
    } else {
        format!("{v:e}")
    }
}

/// Whether `x` is a figure within `min..=max` (finite; a `min` above 0 refuses 0 and subnormals).
pub fn within(x: f64, min: f64, max: f64) -> bool {
    x.is_finite() && x >= min && x <= max && (min <= 0.0 || is_positive(x))
}

/// Whether `s` is a UTC time as the suite writes it ([`UTC_FORMAT`]): a real date (months of
/// their length, leap years counted) and a real time of day.
pub fn is_utc_stamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 20 {
        return false;
    }
    let digits = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let punctuation = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'Z'),
    ];
    if punctuation.iter().any(|&(i, c)| b[i] != c) {
        return false;
    }
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        digits(0, 4),
        digits(5, 7),
        digits(8, 10),
        digits(11, 13),
        digits(14, 16),
        digits(17, 19),
    ) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    year >= 1970 && (1..=days).contains(&day) && hour < 24 && minute < 60 && second < 60
}

/// `s`, cut to at most `max_chars` characters with `…` where it was cut: for a name quoted in an
/// error or a file name.
pub fn shortened(s: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max_chars.saturating_sub(1)) {
        Some((end, _)) if s.chars().count() > max_chars => format!("{}…", &s[..end]).into(),
        _ => s.into(),
    }
}

/// Why a text field may not be used, if it may not: a forbidden character, or more than
/// [`MAX_TEXT_CHARS`] characters.
pub fn text_problem(s: &str) -> Option<String> {
    if let Some(c) = first_forbidden(s) {
        return Some(format!(
            "holds the control character U+{:04X}; text must be printable",
            c as u32
        ));
    }
    let chars = s.chars().count();
    (chars > MAX_TEXT_CHARS).then(|| {
        format!(
            "is {chars} characters long (`{}`); a field holds at most {MAX_TEXT_CHARS}",
            shortened(s, 40)
        )
    })
}

/// Whether `found` equals `expected` within [`TOLERANCE`] (relative).
pub fn agrees(found: f64, expected: f64) -> bool {
    (found - expected).abs() <= TOLERANCE * expected.abs()
}

/// A step in a path to a JSON value: an object key or an array index.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

/// `memory_ceilings[0].gbps`: a path as people read it.
pub(crate) fn display(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// A problem found in a calibration: where, and what.
pub(crate) struct Problem {
    pub path: Vec<Seg>,
    pub message: String,
}

fn problem(path: Vec<Seg>, message: String) -> Problem {
    Problem { path, message }
}

/// Every string in a JSON value, keys included, free of forbidden characters.
pub(crate) fn check_text(value: &serde_json::Value, path: &mut Vec<Seg>) -> Option<Problem> {
    let bad = |s: &str, path: &[Seg]| {
        text_problem(s).map(|why| problem(path.to_vec(), format!("`{}` {why}", display(path))))
    };
    match value {
        serde_json::Value::String(s) => bad(s, path),
        serde_json::Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            path.push(Seg::Index(i));
            let found = check_text(v, path);
            path.pop();
            found
        }),
        serde_json::Value::Object(map) => map.iter().find_map(|(k, v)| {
            path.push(key(k));
            let found = bad(k, path).or_else(|| check_text(v, path));
            path.pop();
            found
        }),
        _ => None,
    }
}

/// A figure that must lie within `min..=max` (finite; above 0 when `min` is).
fn bounded(x: Option<f64>, min: f64, max: f64, path: Vec<Seg>) -> Option<Problem> {
    let v = x?;
    (!within(v, min, max)).then(|| {
        let what = display(&path);
        let range = if min <= f64::MIN_POSITIVE {
            format!("above 0, at most {max:e}")
        } else {
            format!("{min:e} ..= {max:e}")
        };
        problem(
            path,
            format!(
                "`{what}` is {}, not a finite positive figure within physical bounds ({range})",
                figure(v)
            ),
        )
    })
}

/// A ratio (FLOP per byte, a residual): finite, positive, at most [`MAX_RATE`].
fn rate(x: Option<f64>, path: Vec<Seg>) -> Option<Problem> {
    bounded(x, f64::MIN_POSITIVE, MAX_RATE, path)
}

/// A bandwidth ceiling in GB/s: [`MIN_CEILING`] ..= [`MAX_GBPS`].
fn bandwidth(x: Option<f64>, path: Vec<Seg>) -> Option<Problem> {
    bounded(x, MIN_CEILING, MAX_GBPS, path)
}

/// A compute ceiling in GFLOP/s: [`MIN_CEILING`] ..= [`MAX_GFLOPS`].
fn compute(x: Option<f64>, path: Vec<Seg>) -> Option<Problem> {
    bounded(x, MIN_CEILING, MAX_GFLOPS, path)
}

/// A measured compute rate (a point, not a ceiling): positive, at most [`MAX_GFLOPS`].
fn gflops(x: Option<f64>, path: Vec<Seg>) -> Option<Problem> {
    bounded(x, f64::MIN_POSITIVE, MAX_GFLOPS, path)
}

/// A figure derived from others (`expected`, when they are all present) must be present exactly
/// then and agree with it.
fn derived(
    found: Option<f64>,
    expected: Option<f64>,
    path: Vec<Seg>,
    how: &str,
) -> Option<Problem> {
    let what = display(&path);
    match (found, expected) {
        (None, None) => None,
        (Some(f), Some(e)) if agrees(f, e) => None,
        (Some(f), Some(e)) => Some(problem(path, format!("`{what}` is {f} but {how} is {e}"))),
        (Some(f), None) => Some(problem(
            path,
            format!("`{what}` is {f} but what it derives from ({how}) is missing"),
        )),
        (None, Some(e)) => Some(problem(
            path,
            format!("`{what}` is missing but {how} is {e}"),
        )),
    }
}

fn non_negative(x: Option<f64>, max: f64, path: Vec<Seg>) -> Option<Problem> {
    let v = x?;
    (!(v.is_finite() && v >= 0.0 && v <= max)).then(|| {
        let what = display(&path);
        problem(
            path,
            format!(
                "`{what}` is {}, not a finite figure in 0..={max}",
                figure(v)
            ),
        )
    })
}

fn at(parts: &[&str], index: Option<usize>, field: &str) -> Vec<Seg> {
    let mut p: Vec<Seg> = parts.iter().map(|k| key(k)).collect();
    if let Some(i) = index {
        p.push(Seg::Index(i));
    }
    if !field.is_empty() {
        p.push(key(field));
    }
    p
}

/// Every figure of a calibration, checked; the first problem found.
/// A link section's figures must be a fit: every latency finite and at least 0, every bandwidth
/// and the nominal rate finite and positive, at least two sizes per fit, a kernel named.
fn check_link(l: &crate::Link) -> Option<Problem> {
    if let Some(p) = bandwidth(l.nominal_gbps, at(&["link"], None, "nominal_gbps")) {
        return Some(p);
    }
    for (i, t) in l.transfers.iter().enumerate() {
        let field = |name: &str| at(&["link", "transfers"], Some(i), name);
        let wrong = |name: &str, why: String| {
            Some(problem(
                field(name),
                format!("`link.transfers[{i}].{name}` {why}"),
            ))
        };
        if t.kernel.is_empty() {
            return wrong("kernel", "is empty; it names the copy".into());
        }
        if !within(t.latency_s, 0.0, MAX_SECS) {
            return wrong(
                "latency_s",
                format!(
                    "is {}; it must be a time in 0 ..= {MAX_SECS} s",
                    t.latency_s
                ),
            );
        }
        if let Some(p) = bandwidth(Some(t.bandwidth_gbps), field("bandwidth_gbps")) {
            return Some(p);
        }
        if t.sizes < 2 {
            return wrong("sizes", format!("is {}; a fit takes at least 2", t.sizes));
        }
    }
    None
}

/// A capacity section's figures must be consistent: each positive, `largest ≤ free ≤ total`,
/// `context ≤ total`.
fn check_capacity(c: &crate::Capacity) -> Option<Problem> {
    let field = |name: &str| at(&["capacity"], None, name);
    let wrong =
        |name: &str, why: String| Some(problem(field(name), format!("`capacity.{name}` {why}")));
    for (name, value) in [
        ("total_bytes", Some(c.total_bytes)),
        ("free_bytes", Some(c.free_bytes)),
        ("context_bytes", c.context_bytes),
        ("largest_allocation_bytes", c.largest_allocation_bytes),
    ] {
        if value == Some(0) {
            return wrong(name, "is 0; it must be positive".into());
        }
        if let Some(v) = value.filter(|v| *v > MAX_MEMORY_BYTES) {
            return wrong(
                name,
                format!("is {v}, above {MAX_MEMORY_BYTES} (a PiB): no device holds that much"),
            );
        }
    }
    if c.free_bytes > c.total_bytes {
        return wrong(
            "free_bytes",
            format!("{} is above `total_bytes` {}", c.free_bytes, c.total_bytes),
        );
    }
    if let Some(context) = c.context_bytes.filter(|b| *b > c.total_bytes) {
        return wrong(
            "context_bytes",
            format!("{context} is above `total_bytes` {}", c.total_bytes),
        );
    }
    if let Some(largest) = c.largest_allocation_bytes.filter(|b| *b > c.free_bytes) {
        return wrong(
            "largest_allocation_bytes",
            format!("{largest} is above `free_bytes` {}", c.free_bytes),
        );
    }
    None
}

/// The `size_efficiency` section: the fit's figures finite (a constant of 0 or more, a positive
/// bandwidth), every point's figures positive, its `gbps` its bytes over its seconds and its
/// efficiency that over the asymptote, points ascending in size.
fn check_size_efficiency(cal: &Calibration) -> Vec<Problem> {
    let mut out = Vec::new();
    for (i, curve) in cal.size_efficiency.iter().enumerate() {
        let f = |name: &str| at(&["size_efficiency"], Some(i), name);
        out.extend(non_negative(
            Some(curve.constant_secs),
            MAX_SECS,
            f("constant_secs"),
        ));
        out.extend(bandwidth(Some(curve.asymptotic_gbps), f("asymptotic_gbps")));
        out.extend(non_negative(
            Some(curve.rms_relative_residual),
            MAX_RATE,
            f("rms_relative_residual"),
        ));
        let mut last = 0;
        for (j, pt) in curve.points.iter().enumerate() {
            let p = |name: &str| {
                let mut path = f("points");
                path.push(Seg::Index(j));
                path.push(key(name));
                path
            };
            if pt.bytes <= last {
                out.push(problem(
                    p("bytes"),
                    format!(
                        "`{}` is {}, not above the size before it ({last}): points ascend",
                        display(&p("bytes")),
                        pt.bytes
                    ),
                ));
            }
            last = pt.bytes;
            out.extend(bounded(Some(pt.secs), MIN_SECS, MAX_SECS, p("secs")));
            out.extend(derived(
                Some(pt.gbps),
                (pt.secs > 0.0).then(|| pt.bytes as f64 / pt.secs / 1e9),
                p("gbps"),
                "bytes / secs / 1e9",
            ));
            out.extend(derived(
                Some(pt.efficiency),
                (curve.asymptotic_gbps > 0.0).then(|| pt.gbps / curve.asymptotic_gbps),
                p("efficiency"),
                "gbps / asymptotic_gbps",
            ));
        }
    }
    out
}

/// A launch section's figures: each present one a positive, finite time below a second (an
/// empty launch, a timer tick or a wake-up that takes longer measured something else).
fn check_launch(l: &crate::LaunchOverhead) -> Option<Problem> {
    [
        ("empty_kernel_secs", l.empty_kernel_secs),
        ("timer_resolution_secs", l.timer_resolution_secs),
        ("wake_barrier_secs", l.wake_barrier_secs),
    ]
    .into_iter()
    .find_map(|(name, secs)| {
        let secs = secs?;
        (!(secs.is_finite() && secs > 0.0 && secs < 1.0)).then(|| {
            problem(
                at(&["launch"], None, name),
                format!("`launch.{name}` is {secs}; it must be a time above 0 and below 1 s"),
            )
        })
    })
}

/// A ceiling is `suspect` exactly when it says why, and the reason names the case that set it
/// (`case: flags`).
fn suspect_agrees(
    suspect: bool,
    reason: &Option<String>,
    case: &Option<String>,
    path: Vec<Seg>,
) -> Option<Problem> {
    let named = match (reason, case) {
        (Some(r), Some(c)) => r
            .split_once(": ")
            .is_some_and(|(rc, flags)| rc == c && !flags.is_empty()),
        _ => false,
    };
    match (suspect, reason) {
        (false, None) => None,
        (true, Some(_)) if named => None,
        (true, Some(r)) => Some(problem(
            path,
            format!(
                "`suspect_reason` `{r}` does not name the ceiling's case {case:?} and its flags \
                 (`case: flags`)"
            ),
        )),
        (true, None) => Some(problem(
            path,
            "`suspect` is true but the ceiling has no `suspect_reason`".to_string(),
        )),
        (false, Some(r)) => Some(problem(
            path,
            format!("`suspect` is false but the ceiling has a `suspect_reason` (`{r}`)"),
        )),
    }
}

pub(crate) fn check_figures(cal: &Calibration) -> Option<Problem> {
    let mut problems: Vec<Option<Problem>> = Vec::new();
    // A unit word the file explains otherwise than this reader: its figures would be misread.
    // (A word this reader does not know is a later addition, and harmless.)
    for (word, meaning) in &cal.units {
        if let Some((_, ours)) = crate::UNITS.iter().find(|(w, _)| w == word) {
            if meaning != ours {
                problems.push(Some(problem(
                    at(&["units"], None, word),
                    format!(
                        "`units.{word}` says \"{meaning}\", but this reader takes `{word}` as \
                         \"{ours}\": its figures would be misread"
                    ),
                )));
            }
        }
    }
    let run = &cal.run;
    // A calibration built from no rows has no times; any time there is one as the suite writes
    // it, and the first is not after the last.
    for (stamp, field) in [(&run.first_utc, "first_utc"), (&run.last_utc, "last_utc")] {
        if !stamp.is_empty() && !is_utc_stamp(stamp) {
            problems.push(Some(problem(
                at(&["run"], None, field),
                format!(
                    "`run.{field}` is `{}`, not a UTC time as roofprobe writes it ({UTC_FORMAT})",
                    shortened(stamp, 40)
                ),
            )));
        }
    }
    if is_utc_stamp(&run.first_utc) && is_utc_stamp(&run.last_utc) && run.first_utc > run.last_utc {
        problems.push(Some(problem(
            at(&["run"], None, "first_utc"),
            format!(
                "`run.first_utc` {} is after `run.last_utc` {}",
                run.first_utc, run.last_utc
            ),
        )));
    }
    if run.valid_cases > run.cases {
        problems.push(Some(problem(
            at(&["run"], None, "valid_cases"),
            format!(
                "`run.valid_cases` is {} but the run has {} cases",
                run.valid_cases, run.cases
            ),
        )));
    }
    let c = &cal.clocks_seen;
    for (value, field) in [
        (c.clock_mhz_min, "clock_mhz_min"),
        (c.clock_mhz_max, "clock_mhz_max"),
        (c.memory_mhz_min, "memory_mhz_min"),
        (c.memory_mhz_max, "memory_mhz_max"),
    ] {
        if let Some(v) = value {
            if !(is_positive(v) && v <= MAX_MHZ) {
                problems.push(Some(problem(
                    at(&["clocks_seen"], None, field),
                    format!("`clocks_seen.{field}` is {}, not a clock (finite, positive, at most {MAX_MHZ} MHz)", figure(v)),
                )));
            }
        }
    }
    for (lo, hi, what) in [
        (c.clock_mhz_min, c.clock_mhz_max, "clock_mhz"),
        (c.memory_mhz_min, c.memory_mhz_max, "memory_mhz"),
    ] {
        if let (Some(lo), Some(hi)) = (lo, hi) {
            if lo > hi {
                problems.push(Some(problem(
                    at(&["clocks_seen"], None, &format!("{what}_min")),
                    format!("`clocks_seen.{what}_min` {lo} is above `{what}_max` {hi}"),
                )));
            }
        }
    }
    problems.push(non_negative(
        c.power_w_max,
        MAX_WATTS,
        at(&["clocks_seen"], None, "power_w_max"),
    ));
    problems.push(non_negative(
        c.temperature_c_max,
        MAX_CELSIUS,
        at(&["clocks_seen"], None, "temperature_c_max"),
    ));

    let identity = &cal.device.identity;
    for (value, field, max) in [
        (identity.power_limit_w, "power_limit_w", MAX_WATTS),
        (identity.app_clock_mhz, "app_clock_mhz", MAX_MHZ),
        (
            identity.app_memory_clock_mhz,
            "app_memory_clock_mhz",
            MAX_MHZ,
        ),
    ] {
        if let Some(v) = value {
            if !(is_positive(v) && v <= max) {
                problems.push(Some(problem(
                    at(&["device", "identity"], None, field),
                    format!(
                        "`device.identity.{field}` is {}, not a finite positive figure (at most {max})"
                    , figure(v)),
                )));
            }
        }
    }

    for (i, m) in cal.memory_ceilings.iter().enumerate() {
        let p = |field: &str| at(&["memory_ceilings"], Some(i), field);
        if cal.memory_ceilings[..i].iter().any(|o| o.level == m.level) {
            problems.push(Some(problem(
                p("level"),
                format!("a second {} memory ceiling", m.level.as_str()),
            )));
        }
        problems.push(bandwidth(m.gbps, p("gbps")));
        problems.push(bandwidth(m.spec_gbps, p("spec_gbps")));
        let ratio = m.gbps.zip(m.spec_gbps).map(|(g, s)| g / s);
        problems.push(derived(
            m.efficiency,
            ratio,
            p("efficiency"),
            "gbps / spec_gbps",
        ));
        if m.above_spec != ratio.is_some_and(|r| r > 1.0) {
            problems.push(Some(problem(
                p("above_spec"),
                format!(
                    "`above_spec` is {} but gbps {:?} against spec_gbps {:?} says otherwise",
                    m.above_spec, m.gbps, m.spec_gbps
                ),
            )));
        }
        problems.push(suspect_agrees(
            m.suspect,
            &m.suspect_reason,
            &m.case,
            p("suspect"),
        ));
    }
    for (i, c) in cal.compute_ceilings.iter().enumerate() {
        let p = |field: &str| at(&["compute_ceilings"], Some(i), field);
        if cal.compute_ceilings[..i]
            .iter()
            .any(|o| (o.family, o.precision) == (c.family, c.precision))
        {
            problems.push(Some(problem(
                p("precision"),
                format!("a second {} compute ceiling", c.label()),
            )));
        }
        problems.push(compute(c.gflops, p("gflops")));
        problems.push(compute(c.spec_gflops, p("spec_gflops")));
        let ratio = c.gflops.zip(c.spec_gflops).map(|(g, s)| g / s);
        problems.push(derived(
            c.efficiency,
            ratio,
            p("efficiency"),
            "gflops / spec_gflops",
        ));
        if c.above_spec != ratio.is_some_and(|r| r > 1.0) {
            problems.push(Some(problem(
                p("above_spec"),
                format!(
                    "`above_spec` is {} but gflops {:?} against spec_gflops {:?} says otherwise",
                    c.above_spec, c.gflops, c.spec_gflops
                ),
            )));
        }
        problems.push(suspect_agrees(
            c.suspect,
            &c.suspect_reason,
            &c.case,
            p("suspect"),
        ));
    }
    for (i, r) in cal.ridge_points.iter().enumerate() {
        let p = |field: &str| at(&["ridge_points"], Some(i), field);
        let memory = cal.memory_ceilings.iter().find(|m| m.level == r.memory);
        let compute = cal.compute(r.family, r.precision);
        let (Some(memory), Some(compute)) = (memory, compute) else {
            problems.push(Some(problem(
                p("memory"),
                format!(
                    "a ridge point of {} and {} {} without both ceilings",
                    r.memory.as_str(),
                    r.family,
                    r.precision
                ),
            )));
            continue;
        };
        let ratio = |c: Option<f64>, m: Option<f64>| c.zip(m).map(|(c, m)| c / m);
        problems.push(derived(
            r.flop_per_byte,
            ratio(compute.gflops, memory.gbps),
            p("flop_per_byte"),
            "the compute ceiling / the memory ceiling",
        ));
        problems.push(derived(
            r.spec_flop_per_byte,
            ratio(compute.spec_gflops, memory.spec_gbps),
            p("spec_flop_per_byte"),
            "the spec compute / the spec bandwidth",
        ));
    }
    for (i, pt) in cal.points.iter().enumerate() {
        let p = |field: &str| at(&["points"], Some(i), field);
        problems.push(rate(Some(pt.flop_per_byte), p("flop_per_byte")));
        problems.push(gflops(Some(pt.gflops), p("gflops")));
        problems.push(compute(pt.roof_gflops, p("roof_gflops")));
        let fraction = pt.roof_gflops.map(|roof| pt.gflops / roof);
        problems.push(derived(
            pt.fraction_of_roof,
            fraction,
            p("fraction_of_roof"),
            "gflops / roof_gflops",
        ));
        if pt.above_roof && !pt.fraction_of_roof.is_some_and(|f| f > 1.0) {
            problems.push(Some(problem(
                p("above_roof"),
                format!(
                    "`{}` is true but `fraction_of_roof` is {:?}; a point is above its roof \
                     only beyond 1",
                    display(&p("above_roof")),
                    pt.fraction_of_roof
                ),
            )));
        }
    }
    problems.extend(check_gemm_efficiency(cal).into_iter().map(Some));
    if let Some(c) = &cal.capacity {
        problems.push(check_capacity(c));
    }
    problems.extend(check_size_efficiency(cal).into_iter().map(Some));
    if let Some(l) = &cal.launch {
        problems.push(check_launch(l));
    }
    if let Some(l) = &cal.link {
        problems.push(check_link(l));
    }
    problems.into_iter().flatten().next()
}

/// The `gemm_efficiency` section: one curve per implementation and precision, held against the
/// ceiling [`crate::gemm_ceiling_family`] names, its ceiling figures those of the calibration's
/// compute ceiling, every point's `gflop` the shape's 2·M·N·K / 10^9, its `gflops` a rate (and
/// the figure of the same case in `points` where that is there), its efficiencies gflops over
/// the ceilings, points ascending in size. Efficiencies are not capped at 1 (the ceilings'
/// `efficiency` is not either): a library's GEMM may use instructions the ceiling's kernel does
/// not (wgmma above the `mma.sync` tensor peak), and a figure above is kept, never clipped.
fn check_gemm_efficiency(cal: &Calibration) -> Vec<Problem> {
    let mut problems: Vec<Option<Problem>> = Vec::new();
    for (i, e) in cal.gemm_efficiency.iter().enumerate() {
        let p = |field: &str| at(&["gemm_efficiency"], Some(i), field);
        if cal.gemm_efficiency[..i]
            .iter()
            .any(|o| (o.kernel.as_str(), o.precision) == (e.kernel.as_str(), e.precision))
        {
            problems.push(Some(problem(
                p("kernel"),
                format!("a second GEMM curve of {} {}", e.kernel, e.precision),
            )));
        }
        let name = crate::GemmEfficiency::ceiling_name(e.precision);
        if e.ceiling != name {
            problems.push(Some(problem(
                p("ceiling"),
                format!(
                    "`{}` is `{}`; a GEMM of {} is held against `{name}`",
                    display(&p("ceiling")),
                    e.ceiling,
                    e.precision
                ),
            )));
        }
        problems.push(compute(e.ceiling_gflops, p("ceiling_gflops")));
        problems.push(compute(e.spec_gflops, p("spec_gflops")));
        let ceiling = cal.compute(crate::gemm_ceiling_family(e.precision), e.precision);
        problems.push(derived(
            e.ceiling_gflops,
            ceiling.and_then(|c| c.gflops),
            p("ceiling_gflops"),
            &format!("the {name} compute ceiling's `gflops`"),
        ));
        problems.push(derived(
            e.spec_gflops,
            ceiling.and_then(|c| c.spec_gflops),
            p("spec_gflops"),
            &format!("the {name} compute ceiling's `spec_gflops`"),
        ));
        if e.points.is_empty() {
            problems.push(Some(problem(
                p("points"),
                format!("`{}` is empty; a curve has a point", display(&p("points"))),
            )));
        }
        for (j, pt) in e.points.iter().enumerate() {
            let q = |field: &str| {
                let mut path = p("points");
                path.push(Seg::Index(j));
                path.push(key(field));
                path
            };
            problems.push(gflops(Some(pt.gflops), q("gflops")));
            problems.push(derived(
                Some(pt.gflop),
                Some(pt.shape.flops() as f64 / 1e9),
                q("gflop"),
                &format!("2·M·N·K / 1e9 of {}", pt.shape),
            ));
            problems.push(derived(
                pt.efficiency,
                e.ceiling_gflops.map(|c| pt.gflops / c),
                q("efficiency"),
                "gflops / ceiling_gflops",
            ));
            problems.push(derived(
                pt.spec_efficiency,
                e.spec_gflops.map(|c| pt.gflops / c),
                q("spec_efficiency"),
                "gflops / spec_gflops",
            ));
            if j > 0 && pt.gflop < e.points[j - 1].gflop {
                problems.push(Some(problem(
                    q("gflop"),
                    format!(
                        "`{}` is {} but the point before is {}; points ascend in size",
                        display(&q("gflop")),
                        pt.gflop,
                        e.points[j - 1].gflop
                    ),
                )));
            }
            let case = format!("gemm/{}/{}/{}", e.kernel, e.precision, pt.shape);
            if let Some(point) = cal.points.iter().find(|x| x.case == case) {
                problems.push(derived(
                    Some(pt.gflops),
                    Some(point.gflops),
                    q("gflops"),
                    &format!("the `gflops` of point {case}"),
                ));
            }
        }
    }
    problems.into_iter().flatten().collect()
}

/// The 1-based line where the value at `path` starts in `text` (valid JSON), if it is there.
pub(crate) fn line_of(text: &str, path: &[Seg]) -> Option<u64> {
    let mut scan = Scan {
        b: text.as_bytes(),
        i: 0,
        line: 1,
    };
    scan.find(path)
}

/// A scanner over JSON text already known to be valid: just enough to follow a path.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    line: u64,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                _ => break,
            }
            self.i += 1;
        }
    }

    /// A string starting at `"`; returns it decoded.
    fn string(&mut self) -> Option<String> {
        let start = self.i;
        self.i += 1;
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'\\' => self.i += 1,
                b'"' => break,
                _ => {}
            }
        }
        let raw = std::str::from_utf8(self.b.get(start..self.i)?).ok()?;
        serde_json::from_str(raw).ok()
    }

    /// Skips one value (string, number, literal, object or array).
    fn skip(&mut self) {
        self.ws();
        match self.peek() {
            Some(b'"') => {
                self.string();
            }
            Some(b'{') | Some(b'[') => {
                let mut depth = 0usize;
                while let Some(c) = self.peek() {
                    match c {
                        b'"' => {
                            self.string();
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return;
                            }
                        }
                        b'\n' => self.line += 1,
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace() {
                        break;
                    }
                    self.i += 1;
                }
            }
        }
    }

    fn find(&mut self, path: &[Seg]) -> Option<u64> {
        self.ws();
        let Some((first, rest)) = path.split_first() else {
            return Some(self.line);
        };
        match (self.peek()?, first) {
            (b'{', Seg::Key(wanted)) => {
                self.i += 1;
                loop {
                    self.ws();
                    if self.peek()? == b'}' {
                        return None;
                    }
                    let k = self.string()?;
                    self.ws();
                    self.i += 1; // ':'
                    if &k == wanted {
                        return self.find(rest);
                    }
                    self.skip();
                    self.ws();
                    if self.peek()? == b',' {
                        self.i += 1;
                    }
                }
            }
            (b'[', Seg::Index(wanted)) => {
                self.i += 1;
                let mut index = 0;
                loop {
                    self.ws();
                    if self.peek()? == b']' {
                        return None;
                    }
                    if index == *wanted {
                        return self.find(rest);
                    }
                    self.skip();
                    self.ws();
                    if self.peek()? == b',' {
                        self.i += 1;
                    }
                    index += 1;
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_paths() {
        let text = "{\n  \"a\": 1,\n  \"b\": [\n    {\"x\": \"s,]}\"},\n    {\n      \"x\": 2\n    }\n  ],\n  \"c\\\"d\": {\"e\": null}\n}";
        let path = |p: &[Seg]| line_of(text, p);
        assert_eq!(path(&[]), Some(1));
        assert_eq!(path(&[key("a")]), Some(2));
        assert_eq!(path(&[key("b"), Seg::Index(0), key("x")]), Some(4));
        assert_eq!(path(&[key("b"), Seg::Index(1), key("x")]), Some(6));
        assert_eq!(path(&[key("c\"d"), key("e")]), Some(9));
        assert_eq!(path(&[key("b"), Seg::Index(2)]), None);
        assert_eq!(path(&[key("zz")]), None);
        assert_eq!(display(&[key("b"), Seg::Index(1), key("x")]), "b[1].x");
    }

    #[test]
    fn forbidden_characters() {
        for bad in [
            "a\0b",
            "\x1b[31m",
            "x\ny",
            "\r",
            "\u{7f}",
            "\u{202E}evil",
            "\u{9b}",
            "\u{FFFF}",
        ] {
            assert!(first_forbidden(bad).is_some(), "{bad:?}");
        }
        for good in ["NVIDIA H200", "µs ×4 °C", "", "a\u{00A0}b"] {
            assert_eq!(first_forbidden(good), None, "{good:?}");
        }
    }

    #[test]
    fn figures() {
        assert!(is_positive(1e-300) && !is_positive(0.0) && !is_positive(-1.0));
        assert!(!is_positive(f64::NAN) && !is_positive(f64::INFINITY));
        assert!(agrees(1.00001, 1.0) && !agrees(1.001, 1.0) && agrees(0.0, 0.0));
    }

    #[test]
    fn reads_are_limited() {
        // /dev/zero never ends: the reader stops one byte past the limit
        let zero = Path::new("/dev/zero");
        if zero.exists() {
            let e = read_limited(zero).unwrap_err().to_string();
            assert!(e.starts_with("/dev/zero:1: larger than 256 MiB"), "{e}");
        }
        assert!(matches!(
            read_limited(Path::new("/no/such/file")),
            Err(Error::Io { .. })
        ));
    }
}
