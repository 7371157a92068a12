//! What a row read back must be before it is used: every figure consistent with what it derives
//! from (`gbps` = bytes / median time, `gflops` likewise, `cv`, `intensity`, a GEMM's work from
//! its `MxNxK` shape), times, clocks and sizes finite, positive and within physical bounds, a row
//! valid exactly when its status is `ok`, no field holding a control character; across rows, one
//! device per run id, and a `ratio_to_reference` that is our figure over the reference row's
//! where that row is in the file ([`check_rows`]).

use crate::cases::{gemm, Family, Param};
use crate::results::csv::{header, row_bytes};
use crate::results::record::{Record, ADDED_IN_2, MAX_RATIO, SCHEMA, SCHEMA_1, SKIPPED};
use crate::stats::Stopped;
use roofprobe_calibration::check::{
    agrees, figure, is_positive, is_utc_stamp, shortened, text_problem, MAX_CELSIUS, MAX_CPUS,
    MAX_GBPS, MAX_GFLOPS, MAX_MHZ, MAX_SECS, MAX_WATTS, MIN_SECS, UTC_FORMAT,
};
use std::collections::HashMap;

/// The columns that name the device a row was measured on, identity included: every row of one
/// run id must agree on all of them (add a new identity column here).
pub(crate) fn device_columns(r: &Record) -> [(&'static str, String); 23] {
    let text = |x: Option<f64>| x.map_or_else(String::new, |v| v.to_string());
    [
        ("host", r.host.clone()),
        ("backend", r.backend.to_string()),
        ("device_id", r.device_id.clone()),
        ("device_name", r.device_name.clone()),
        ("compute_capability", r.compute_capability.clone()),
        ("units", r.units.to_string()),
        ("llc_bytes", r.llc_bytes.to_string()),
        (
            "memory_bus_bits",
            r.memory_bus_bits
                .map_or_else(String::new, |b| b.to_string()),
        ),
        ("max_memory_clock_mhz", text(r.max_memory_clock_mhz)),
        ("driver", r.driver.clone()),
        ("vendor", r.vendor.clone()),
        ("cpu_family", r.cpu_family.clone()),
        ("cpu_model", r.cpu_model.clone()),
        ("microarch", r.microarch.clone()),
        ("isa", r.isa.clone()),
        ("uuid", r.uuid.clone()),
        ("pci_bus_id", r.pci_bus_id.clone()),
        ("vbios", r.vbios.clone()),
        ("ecc", r.ecc.clone()),
        ("mig", r.mig.clone()),
        ("power_limit_w", text(r.power_limit_w)),
        ("app_clock_mhz", text(r.app_clock_mhz)),
        ("app_memory_clock_mhz", text(r.app_memory_clock_mhz)),
    ]
}

/// The first row (by index) whose device differs from an earlier row of the same run id:
/// `(earlier index, index, message)`.
pub(crate) fn mixed_device(records: &[Record]) -> Option<(usize, usize, String)> {
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let j = *first.entry(r.run_id.as_str()).or_insert(i);
        if j == i {
            continue;
        }
        let (a, b) = (device_columns(&records[j]), device_columns(r));
        if let Some(((column, was), (_, is))) = a.iter().zip(&b).find(|(x, y)| x.1 != y.1) {
            return Some((
                j,
                i,
                format!(
                    "run `{}` mixes devices: `{column}` is `{is}` here but `{was}`",
                    r.run_id
                ),
            ));
        }
    }
    None
}

/// Checks rows held in memory as a reader checks them: each row ([`check_row`]) and one device
/// per run id. The error names the row (0-based) and what is wrong.
pub fn check_rows(records: &[Record]) -> std::result::Result<(), String> {
    for (i, r) in records.iter().enumerate() {
        check_row(r).map_err(|e| format!("row {i} ({}): {e}", r.case_id()))?;
    }
    if let Some((j, i, message)) = mixed_device(records) {
        return Err(format!("row {i}: {message} on row {j}"));
    }
    if let Some((i, message)) = reference_mismatch(records) {
        return Err(format!("row {i} ({}): {message}", records[i].case_id()));
    }
    Ok(())
}

/// A figure that must be present exactly when what it derives from is (`expected`), and agree
/// with it.
pub(crate) fn derived(
    column: &str,
    found: Option<f64>,
    expected: Option<f64>,
    how: &str,
) -> std::result::Result<(), String> {
    match (found, expected) {
        (None, None) => Ok(()),
        (Some(f), Some(e)) if agrees(f, e) => Ok(()),
        (Some(f), Some(e)) => Err(format!("`{column}` is {f} but {how} is {e}")),
        (Some(f), None) => Err(format!("`{column}` is {f} but {how} is empty")),
        (None, Some(e)) => Err(format!("`{column}` is empty but {how} is {e}")),
    }
}

/// A time, clock or rate: finite, positive, at most `max`.
pub(crate) fn positive(column: &str, x: Option<f64>, max: f64) -> std::result::Result<(), String> {
    match x {
        Some(v) if !(is_positive(v) && v <= max) => Err(format!(
            "`{column}` is {}; it must be finite, positive and at most {max:e}",
            figure(v)
        )),
        _ => Ok(()),
    }
}

/// A reading that may be zero (power, temperature): finite, in 0..=max.
pub(crate) fn reading(column: &str, x: Option<f64>, max: f64) -> std::result::Result<(), String> {
    match x {
        Some(v) if !(v.is_finite() && (0.0..=max).contains(&v)) => Err(format!(
            "`{column}` is {}; it must be finite and in 0..={max}",
            figure(v)
        )),
        _ => Ok(()),
    }
}

/// The first column [`SCHEMA`] added that a row fills, if any: a [`SCHEMA_1`] row has none.
pub(crate) fn first_added_in_2(r: &Record) -> Option<&'static str> {
    let bare = r.without_added_in_2();
    if bare == *r {
        return None;
    }
    let fields = |x: &Record| -> Vec<String> {
        let bytes = row_bytes(x, false).unwrap_or_default();
        csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(bytes.as_slice())
            .records()
            .next()
            .and_then(|f| f.ok())
            .map(|f| f.iter().map(str::to_string).collect())
            .unwrap_or_default()
    };
    let (a, b) = (fields(r), fields(&bare));
    let differs = header()
        .into_iter()
        .zip(a.iter().zip(&b))
        .find(|(_, (x, y))| x != y)
        .map(|(column, _)| column);
    Some(
        ADDED_IN_2
            .into_iter()
            .find(|c| differs.as_deref() == Some(*c))
            .unwrap_or(ADDED_IN_2[0]),
    )
}

/// What a row must be to be read (the reader's whole trust in it): text free of control
/// characters; valid exactly when the status is `ok` (else `invalid: …` or `error: …`, with no
/// figures and no flags); sizes positive; on a valid row, times finite, positive and ordered,
/// and `gbps`, `gflops`, `cv` and `intensity` equal to what they derive from (within
/// [`roofprobe_calibration::check::TOLERANCE`]); clocks (the identity's application clocks
/// too) finite and positive; power and temperature readings and other processes' CPU time
/// finite and not negative; no rate beyond any device ([`MAX_GBPS`], [`MAX_GFLOPS`]), no time
/// under [`MIN_SECS`]; text fields of at most
/// [`MAX_TEXT_CHARS`](roofprobe_calibration::check::MAX_TEXT_CHARS) characters and
/// `timestamp_utc` as the writer writes it ([`UTC_FORMAT`]); `stopped_by` one of the
/// reasons a run writes (on a valid row of [`SCHEMA`], never empty); `flags` as
/// [`crate::analysis::suspect`] writes them; `param` an `MxNxK` shape exactly on a GEMM row, whose
/// `flops`, `bytes`, `elements` and `working_set_bytes` are the shape's ([`gemm::case`]);
/// `ratio_to_reference` finite and positive, and only on a valid row of an implementation that
/// has a reference ([`gemm::reference_of`]). A [`SCHEMA_1`] row has none of the columns added
/// since, and no shape. (Whether a ratio agrees with its reference row is [`check_rows`]'s.)
pub fn check_row(r: &Record) -> std::result::Result<(), String> {
    check_schema(r)?;
    check_text(r)?;
    check_status(r)?;
    check_param(r)?;
    check_work(r)?;
    check_readings(r)?;
    if !r.valid {
        return check_no_figures(r);
    }
    check_sampling(r)?;
    let (median, mean) = check_times(r)?;
    check_figures(r, median, mean)?;
    check_reference(r)
}

/// The schema a row says it has, and what it may hold under it.
pub(crate) fn check_schema(r: &Record) -> std::result::Result<(), String> {
    if r.schema == SCHEMA_1 {
        if let Some(column) = first_added_in_2(r) {
            return Err(format!(
                "a row of {SCHEMA_1} holds `{column}`, a column {SCHEMA} added; give the row \
                 schema {SCHEMA}"
            ));
        }
        if let Some(Param::Shape(shape)) = r.param {
            return Err(format!(
                "a row of {SCHEMA_1} has the shape `{shape}` as `param`; {SCHEMA_1} held counts \
                 only (shapes came with {SCHEMA})"
            ));
        }
    } else if r.schema != SCHEMA {
        return Err(format!(
            "schema `{}` is not supported; this roofprobe reads {SCHEMA} and {SCHEMA_1}",
            r.schema
        ));
    }
    Ok(())
}

/// No text field holds a control character.
pub(crate) fn check_text(r: &Record) -> std::result::Result<(), String> {
    for (column, value) in [
        ("run_id", &r.run_id),
        ("timestamp_utc", &r.timestamp_utc),
        ("host", &r.host),
        ("device_id", &r.device_id),
        ("device_name", &r.device_name),
        ("compute_capability", &r.compute_capability),
        ("driver", &r.driver),
        ("vendor", &r.vendor),
        ("cpu_family", &r.cpu_family),
        ("cpu_model", &r.cpu_model),
        ("microarch", &r.microarch),
        ("isa", &r.isa),
        ("uuid", &r.uuid),
        ("pci_bus_id", &r.pci_bus_id),
        ("vbios", &r.vbios),
        ("ecc", &r.ecc),
        ("mig", &r.mig),
        ("kernel", &r.kernel),
        ("stopped_by", &r.stopped_by),
        ("status", &r.status),
        ("flags", &r.flags),
        ("throttle", &r.throttle),
        ("note", &r.note),
    ] {
        if let Some(why) = text_problem(value) {
            return Err(format!("`{column}` {why}"));
        }
    }
    // The writer's stamp, and nothing else: a plot's title and a calibration's times show it.
    if !is_utc_stamp(&r.timestamp_utc) {
        return Err(format!(
            "`timestamp_utc` is `{}`, not a UTC time as roofprobe writes it ({UTC_FORMAT})",
            shortened(&r.timestamp_utc, 40)
        ));
    }
    Ok(())
}

/// `valid` and `status` agree.
pub(crate) fn check_status(r: &Record) -> std::result::Result<(), String> {
    match (r.valid, r.status.as_str()) {
        (true, "ok") => {}
        (true, s) => {
            return Err(format!(
            "`valid` is true but `status` is `{s}`: a row is valid exactly when its status is `ok`"
        ))
        }
        (false, s)
            if s.starts_with("invalid: ") || s.starts_with("error: ") || s.starts_with(SKIPPED) => {
        }
        (false, s) => {
            return Err(format!(
                "`valid` is false but `status` is `{s}`; expected `invalid: …`, `error: …` or \
                 `{SKIPPED}…`"
            ))
        }
    }
    Ok(())
}

/// The case's size and work: positive counts, some work (a launch row none), a consistent
/// intensity.
pub(crate) fn check_work(r: &Record) -> std::result::Result<(), String> {
    // A launch row's figure is its time: it does no work, and the timer's holds no memory.
    let launch = r.family == Family::Launch;
    for (column, value) in [
        ("units", u64::from(r.units)),
        ("elements", r.elements),
        (
            "working_set_bytes",
            r.working_set_bytes.max(u64::from(launch)),
        ),
    ] {
        if value == 0 {
            return Err(format!("`{column}` is 0; it must be positive"));
        }
    }
    if r.bytes == 0 && r.flops == 0 && !launch {
        return Err("`bytes` and `flops` are both 0: the case did no work".into());
    }
    if launch && (r.bytes > 0 || r.flops > 0) {
        return Err(format!(
            "a launch row does no work, but `bytes` is {} and `flops` {}",
            r.bytes, r.flops
        ));
    }
    if r.memory_bus_bits == Some(0) {
        return Err("`memory_bus_bits` is 0; it must be positive or empty".into());
    }
    if r.parallel_devices == Some(0) {
        return Err(
            "`parallel_devices` is 0; it counts the GPUs measured at once (at least 1) or is \
             empty"
                .into(),
        );
    }
    derived(
        "intensity",
        r.intensity,
        (r.bytes > 0).then(|| r.flops as f64 / r.bytes as f64),
        "flops / bytes",
    )?;
    Ok(())
}

/// The conditions read around the case: within physical bounds, and the stop reason and flags
/// in their vocabularies.
pub(crate) fn check_readings(r: &Record) -> std::result::Result<(), String> {
    positive("clock_mhz", r.clock_mhz, MAX_MHZ)?;
    positive("memory_clock_mhz", r.memory_clock_mhz, MAX_MHZ)?;
    positive("max_memory_clock_mhz", r.max_memory_clock_mhz, MAX_MHZ)?;
    reading("power_w", r.power_w, MAX_WATTS)?;
    reading("temperature_c", r.temperature_c, MAX_CELSIUS)?;
    positive("power_limit_w", r.power_limit_w, MAX_WATTS)?;
    positive("app_clock_mhz", r.app_clock_mhz, MAX_MHZ)?;
    positive("app_memory_clock_mhz", r.app_memory_clock_mhz, MAX_MHZ)?;
    reading("other_cpus_busy", r.other_cpus_busy, MAX_CPUS)?;
    let reasons = Stopped::ALL.map(Stopped::as_str);
    if !r.stopped_by.is_empty() && !reasons.contains(&r.stopped_by.as_str()) {
        return Err(format!(
            "`stopped_by` is `{}`; expected {} or empty",
            r.stopped_by,
            reasons.join(", ")
        ));
    }
    crate::results::flags::check_column(&r.flags)?;
    Ok(())
}

/// An invalid row carries no figure and no flag.
pub(crate) fn check_no_figures(r: &Record) -> std::result::Result<(), String> {
    let figures = [
        ("time_min_s", r.time_min_s),
        ("time_median_s", r.time_median_s),
        ("time_mean_s", r.time_mean_s),
        ("time_max_s", r.time_max_s),
        ("time_stddev_s", r.time_stddev_s),
        ("cv", r.cv),
        ("gbps", r.gbps),
        ("gflops", r.gflops),
        ("theory_gflops", r.theory_gflops),
        ("ratio_to_reference", r.ratio_to_reference),
    ];
    match figures.iter().find(|(_, v)| v.is_some()) {
        Some((column, Some(v))) => Err(format!(
            "the row is not valid (`{}`) but `{column}` is {}; an invalid row has no figures",
            r.status,
            figure(*v)
        )),
        _ if !r.flags.is_empty() => Err(format!(
            "the row is not valid (`{}`) but `flags` is `{}`; an invalid row has no figure \
                 to flag",
            r.status, r.flags
        )),
        _ => Ok(()),
    }
}

/// A valid row says why its sampling stopped, and how many reps and samples it took.
pub(crate) fn check_sampling(r: &Record) -> std::result::Result<(), String> {
    if r.schema == SCHEMA && r.stopped_by.is_empty() {
        return Err(format!(
            "a valid row of {SCHEMA} with an empty `stopped_by`; a measured case says why its \
             sampling stopped"
        ));
    }
    if r.reps == 0 || r.samples == 0 {
        return Err(format!(
            "a valid row with {} reps and {} samples; both must be positive",
            r.reps, r.samples
        ));
    }
    Ok(())
}

/// A valid row's times: each present, positive and under a day, and in order (min <= median,
/// mean <= max); returns the median and the mean, which the figures derive from.
pub(crate) fn check_times(r: &Record) -> std::result::Result<(f64, f64), String> {
    // A time of a day or more per launch is not a kernel's, nor one under a picosecond.
    let time = |column: &str, x: Option<f64>| -> std::result::Result<f64, String> {
        let v = x.ok_or_else(|| format!("a valid row needs `{column}`; it is empty"))?;
        positive(column, Some(v), MAX_SECS)?;
        if v < MIN_SECS {
            return Err(format!(
                "`{column}` is {}, under {MIN_SECS:e} s: no launch is that short",
                figure(v)
            ));
        }
        Ok(v)
    };
    let min = time("time_min_s", r.time_min_s)?;
    let median = time("time_median_s", r.time_median_s)?;
    let mean = time("time_mean_s", r.time_mean_s)?;
    let max = time("time_max_s", r.time_max_s)?;
    let within = |v: f64| v >= min * (1.0 - 1e-9) && v <= max * (1.0 + 1e-9);
    if !(min <= max && within(median) && within(mean)) {
        return Err(format!(
            "times out of order: min {min}, median {median}, mean {mean}, max {max}; expected \
             min <= median, mean <= max"
        ));
    }
    Ok((median, mean))
}

/// A valid row's figures derive from its times and its work: the CV, GB/s and GFLOP/s.
pub(crate) fn check_figures(r: &Record, median: f64, mean: f64) -> std::result::Result<(), String> {
    let stddev = r
        .time_stddev_s
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| {
            format!(
                "`time_stddev_s` is {:?}; a valid row needs a finite spread of 0 or more",
                r.time_stddev_s
            )
        })?;
    // cv is stddev over the unclamped mean, which the clamped `time_mean_s` may differ from by
    // rounding only.
    derived(
        "cv",
        r.cv,
        Some(stddev / mean),
        "time_stddev_s / time_mean_s",
    )?;
    derived(
        "gbps",
        r.gbps,
        (r.bytes > 0).then(|| r.bytes as f64 / median / 1e9),
        "bytes / time_median_s / 1e9",
    )?;
    derived(
        "gflops",
        r.gflops,
        (r.flops > 0).then(|| r.flops as f64 / median / 1e9),
        "flops / time_median_s / 1e9",
    )?;
    positive("gbps", r.gbps, MAX_GBPS)?;
    positive("gflops", r.gflops, MAX_GFLOPS)?;
    positive("theory_gflops", r.theory_gflops, MAX_GFLOPS)?;
    Ok(())
}

/// A `ratio_to_reference` only on a GEMM row of an implementation that has a reference, and
/// only beside its GFLOP/s.
pub(crate) fn check_reference(r: &Record) -> std::result::Result<(), String> {
    if let Some(ratio) = r.ratio_to_reference {
        positive("ratio_to_reference", Some(ratio), MAX_RATIO)?;
        let reference = (r.family == Family::Gemm)
            .then(|| gemm::reference_of(&r.kernel))
            .flatten();
        if reference.is_none() {
            return Err(format!(
                "`ratio_to_reference` is {ratio} on {}, which has no reference implementation \
                 (only GEMM rows of {} have one)",
                r.case_id(),
                [
                    gemm::HOST_OURS,
                    gemm::GPU_OURS,
                    gemm::GPU_WGMMA,
                    gemm::GPU_TMA,
                    gemm::GPU_TMA_CLUSTER
                ]
                .join(", ")
            ));
        }
        if r.gflops.is_none() {
            return Err(format!(
                "`ratio_to_reference` is {ratio} but `gflops` is empty; the ratio is of two \
                 GFLOP/s figures"
            ));
        }
    }
    Ok(())
}

/// `param` as the family has it: an `MxNxK` shape exactly on a GEMM row, and then the row's work
/// and sizes those of the shape (the work table's [`gemm::case`]).
pub(crate) fn check_param(r: &Record) -> std::result::Result<(), String> {
    match (r.family, r.param) {
        (Family::Gemm, Some(Param::Shape(shape))) => {
            let case = gemm::case(&r.kernel, r.precision, shape);
            for (column, found, expected) in [
                ("flops", r.flops, case.work.flops),
                ("bytes", r.bytes, case.work.bytes()),
                ("elements", r.elements, case.elements),
            ] {
                if found != expected {
                    return Err(format!(
                        "`{column}` is {found} but a {} GEMM of {shape} has {expected}",
                        r.precision
                    ));
                }
            }
            // A, B and C, and any further copies of B the launches took in turn
            // (gemm::rotate_weights).
            let (found, least) = (r.working_set_bytes, case.working_set_bytes);
            let weight = gemm::weight_bytes(r.precision, shape).max(1);
            if found < least || (found - least) % weight != 0 {
                return Err(format!(
                    "`working_set_bytes` is {found} but a {} GEMM of {shape} has {least}, plus \
                     whole copies of B ({weight} bytes each) where its launches rotate through them",
                    r.precision
                ));
            }
            Ok(())
        }
        (Family::Gemm, other) => Err(format!(
            "a GEMM row needs its shape as `param` (MxNxK); it is `{}`",
            other.map_or_else(String::new, |p| p.to_string())
        )),
        (family, Some(Param::Shape(shape))) => Err(format!(
            "`param` is the shape `{shape}` on a {family} row; only GEMM rows have a shape"
        )),
        _ => Ok(()),
    }
}

/// The first GEMM row (by index) whose `ratio_to_reference` disagrees with its reference row in
/// `records`: the last row before it of the same run, precision and shape whose kernel is its
/// reference (as the runner finds it). Where such rows are there, the ratio must be present
/// exactly when one of them is valid, and equal our GFLOP/s over that one's; where none is (a
/// file cut down by hand), it cannot be checked. `(index, message)`.
pub(crate) fn reference_mismatch(records: &[Record]) -> Option<(usize, String)> {
    for (i, r) in records.iter().enumerate() {
        if r.family != Family::Gemm || !r.valid {
            continue;
        }
        let Some(reference) = gemm::reference_of(&r.kernel) else {
            continue;
        };
        let mut references = records[..i].iter().filter(|x| {
            x.run_id == r.run_id
                && x.family == r.family
                && x.kernel == reference
                && x.precision == r.precision
                && x.param == r.param
        });
        let Some(first) = references.next() else {
            continue;
        };
        let valid = std::iter::once(first).chain(references).rfind(|x| x.valid);
        let expected = valid.and_then(|x| Some((x.case_id(), r.gflops? / x.gflops?)));
        let problem = match (r.ratio_to_reference, expected) {
            (None, None) => None,
            (Some(f), Some((_, e))) if agrees(f, e) => None,
            (Some(f), Some((case, e))) => Some(format!(
                "`ratio_to_reference` is {f} but `gflops` over that of {case} (the reference \
                 row before it) is {e}"
            )),
            (Some(f), None) => Some(format!(
                "`ratio_to_reference` is {f} but no {reference} row of this shape before it is \
                 valid; a ratio needs a valid reference"
            )),
            (None, Some((case, e))) => Some(format!(
                "`ratio_to_reference` is empty but `gflops` over that of {case} (the reference \
                 row before it) is {e}"
            )),
        };
        if let Some(message) = problem {
            return Some((i, message));
        }
    }
    None
}
