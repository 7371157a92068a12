//! The suites (roofprobe::cases::suite) held to their promise: a default run's plan feeds every
//! ceiling of the roofline and every field the calibration, the exports and `estimate` read,
//! the same fields a `--full` run's plan fills, on the host this test runs on and on the
//! modelled GPUs of the spec table (the CUDA plan needs no GPU to be made); and every named
//! suite keeps a part of the full plan, `all` all of it.
//!
//! The rows are synthetic (each case's time is its launch at the rated speeds, doubled), so
//! what is compared is which fields are filled, not their values.

use roofprobe::analysis::calibration::{Calibration, FromRecords};
use roofprobe::backend::{Backend, PlannedCase, SizeRequest};
use roofprobe::cases::suite::{Selection, Suite};
use roofprobe::cases::{Case, Verdict};
use roofprobe::device::{Conditions, DeviceInfo};
use roofprobe::render::exports::{self, Format};
use roofprobe::results::record::{Outcome, Record, RunIdentity};
use roofprobe::run::forecast::{launch_secs, Rates};
use roofprobe::run::runner::{choose, RunConfig};
use roofprobe::stats::{Stopped, Summary};
use std::collections::BTreeSet;

/// A valid row of `case` on `device`, timed at twice its launch at `rates`.
fn row(device: &DeviceInfo, case: &Case, rates: &Rates) -> Record {
    let identity = RunIdentity {
        run_id: "box-suites-20260101T000000Z".into(),
        host: "box".into(),
        device: device.clone(),
        parallel_devices: None,
    };
    let secs = 2.0 * launch_secs(case, rates);
    let summary = Summary::from_secs(&[secs * 0.99, secs, secs * 1.01]).unwrap();
    Record::new(
        &identity,
        "2026-01-01T00:00:00Z".into(),
        case,
        Outcome::Measured {
            summary: &summary,
            reps: 4,
            stopped: Stopped::Count,
            verdict: &Verdict::valid(),
        },
        &Conditions::default(),
        String::new(),
    )
}

/// The fields of `value` that hold something, as paths: an array's items are named by their
/// identifying fields (a ceiling's level, family and precision; a GEMM curve's kernel), so a
/// ceiling missing from one of two calibrations is a path missing, not only a shorter list.
fn filled(value: &serde_json::Value, at: &str, out: &mut BTreeSet<String>) {
    use serde_json::Value;
    match value {
        Value::Null => {}
        Value::Object(map) => {
            for (k, v) in map {
                filled(v, &format!("{at}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for item in items {
                let name: Vec<String> = ["level", "memory", "family", "kernel", "precision"]
                    .iter()
                    .filter_map(|k| item.get(k))
                    .map(|v| v.to_string().trim_matches('"').to_string())
                    .collect();
                filled(item, &format!("{at}[{}]", name.join(",")), out);
            }
        }
        _ => {
            out.insert(at.to_string());
        }
    }
}

/// Calibration fields that say which cases ran, or flags on them, not what the run measured.
const NOT_FIGURES: &[&str] = &[".run.", ".excluded", ".suspect", ".points["];

/// The filled fields of the calibration of `records`.
fn calibration_fields(records: &[Record]) -> BTreeSet<String> {
    let cal = Calibration::from_records(records, None).unwrap();
    let mut out = BTreeSet::new();
    filled(&serde_json::to_value(&cal).unwrap(), "", &mut out);
    out.retain(|p| !NOT_FIGURES.iter().any(|n| p.starts_with(n)));
    // the roofline's points, by family and precision
    for p in &cal.points {
        out.insert(format!("points[{:?},{}]", p.family, p.precision));
    }
    out
}

/// The keys (and whether measured) of every export format of the calibration of `records`.
fn export_fields(records: &[Record]) -> BTreeSet<String> {
    let cal = Calibration::from_records(records, None).unwrap();
    let sheet = exports::sheet_of(&cal).unwrap();
    let mut out = BTreeSet::new();
    for format in [
        Format::Aiconfigurator,
        Format::LlmAnalysis,
        Format::Calculon,
        Format::LlmViewer,
    ] {
        // a format that needs a figure this device has nowhere (a T4's bf16 tensor rate, which
        // neither a run nor its sheet has) is the same error from either plan
        let export = match exports::build(&cal, sheet, format, &[]) {
            Ok(export) => export,
            Err(e) => {
                out.insert(format!("{}: error: {e}", format.as_str()));
                continue;
            }
        };
        for f in &export.fields {
            out.insert(format!(
                "{}:{} ({})",
                format.as_str(),
                f.key,
                if f.source.is_spec() {
                    "spec"
                } else {
                    "measured"
                }
            ));
        }
    }
    out
}

/// Holds the default's plan of a device to the full plan's: fewer cases, the same calibration
/// fields and export keys filled. Returns (default cases, full cases).
fn default_feeds_what_full_feeds(
    device: &DeviceInfo,
    all: Vec<PlannedCase>,
    rates: &Rates,
) -> (usize, usize) {
    let default = choose(all.clone(), &RunConfig::default_suite(), rates);
    let quick = choose(all.clone(), &RunConfig::quick(), rates);
    let full = choose(all, &RunConfig::full(), rates);
    let rows = |planned: &[PlannedCase]| -> Vec<Record> {
        let mut out: Vec<Record> = Vec::new();
        for p in planned {
            let mut r = row(device, &p.case, rates);
            // as the runner writes it: our GEMM's figure over the reference's before it
            r.ratio_to_reference = roofprobe::run::runner::ratio_to_reference(&r, &out);
            out.push(r);
        }
        out
    };
    let (full_rows, default_rows, quick_rows) = (rows(&full), rows(&default), rows(&quick));
    let want = calibration_fields(&full_rows);
    for (what, rows) in [("default", &default_rows), ("--quick", &quick_rows)] {
        let got = calibration_fields(rows);
        let missing: Vec<&String> = want.difference(&got).collect();
        assert!(
            missing.is_empty(),
            "{}: a {what} run leaves calibration fields a --full run fills: {missing:#?}",
            device.name
        );
        let (want_x, got_x) = (export_fields(&full_rows), export_fields(rows));
        let missing: Vec<&String> = want_x.difference(&got_x).collect();
        assert!(
            missing.is_empty(),
            "{}: a {what} run leaves export fields a --full run fills: {missing:#?}",
            device.name
        );
    }
    assert!(default.len() < full.len() && quick.len() == default.len());
    (default.len(), full.len())
}

/// On this host: the default plan fills every calibration field and export key a full plan
/// fills, and `--quick` the same.
#[test]
fn a_default_host_run_feeds_every_field_a_full_run_does() {
    let host = roofprobe::backend::host::HostBackend::new();
    let rates = Rates::for_host(host.info());
    let all = host.cases(SizeRequest::Auto).unwrap();
    let (default, full) = default_feeds_what_full_feeds(host.info(), all, &rates);
    eprintln!("host: {default} default cases of {full}");
}

/// On every modelled GPU (H200, H100, A100, RTX 3090 and the rest of the test devices): the
/// same, on the CUDA plan made from the device's model.
#[test]
fn a_default_gpu_run_feeds_every_field_a_full_run_does() {
    for d in crate::kernel_args::DEVICES {
        let info = crate::kernel_args::info(d);
        let (all, _) = crate::kernel_args::planned(d, 4);
        let rates = crate::kernel_args::machine_rates(d);
        let (default, full) = default_feeds_what_full_feeds(&info, all, &rates);
        eprintln!("{}: {default} default cases of {full}", d.name);
    }
}

/// Every named suite keeps some of a GPU's and the host's full plan, `all` every case, and
/// together the named suites keep every case (so `--suite` can reach any case `--full` runs).
#[test]
fn the_named_suites_cover_the_full_plan() {
    let host = roofprobe::backend::host::HostBackend::new();
    let d = &crate::kernel_args::DEVICES[0];
    let plans = [
        host.cases(SizeRequest::Auto).unwrap(),
        crate::kernel_args::planned(d, 4).0,
    ];
    for (which, all) in ["host", d.name].into_iter().zip(plans) {
        let ids = |planned: Vec<PlannedCase>| -> BTreeSet<String> {
            planned.iter().map(|p| p.case.id()).collect()
        };
        let every = ids(all.clone());
        assert_eq!(
            ids(Selection::full().select(all.clone(), |p| &p.case)),
            every
        );
        let mut union = BTreeSet::new();
        for s in Suite::ALL.into_iter().filter(|s| *s != Suite::All) {
            let kept = ids(Selection::Suites(vec![s]).select(all.clone(), |p| &p.case));
            // the host has no links (and a GPU model here no peers: its host link only)
            if which == "host" && s == Suite::Links {
                assert!(kept.is_empty());
                continue;
            }
            assert!(!kept.is_empty(), "{which}: suite {s} keeps nothing");
            union.extend(kept);
        }
        assert_eq!(union, every, "{which}: a case no named suite holds");
    }
}
