//! What every export format shares (render::exports): the PCIe figure from a run's measured
//! pinned copies, a figure from a flagged row saying so, `--set` values checked against each
//! format's schema, and a non-finite or unfillable required field an error naming it. Each
//! format's own fields are tested beside it (src/render/exports/) and in tests/export_calculon.rs;
//! tests/exports.rs runs the command and the estimators' own loaders.

use roofprobe::analysis::calibration::Calibration;
use roofprobe::analysis::calibration::FromRecords;
use roofprobe::analysis::fixtures::synthetic_run;
use roofprobe::cases::Family;
use roofprobe::render::exports::fixtures::*;
use roofprobe::render::exports::*;
use roofprobe_calibration::MemoryLevel;

/// A run that fitted its pinned copies gives `node.pcie_bw` from the slower direction's
/// asymptote, said to be measured; without the section it stays the sheet's.
#[test]
fn pcie_bw_is_the_measured_pinned_link_where_the_run_has_one() {
    let mut cal = Calibration::from_records(&synthetic_run(), None).unwrap();
    let sheet = sheet_of(&cal).unwrap();
    let t = |kernel: &str, gbps: f64| roofprobe_calibration::LinkTransfer {
        kernel: kernel.into(),
        latency_s: 1e-5,
        bandwidth_gbps: gbps,
        sizes: 10,
    };
    cal.link = Some(roofprobe_calibration::Link {
        pcie: "PCIe Gen4 x16".into(),
        nominal_gbps: Some(31.5),
        transfers: vec![
            t("host_to_device_memcpy_ce", 24.5),
            t("device_to_host_memcpy_ce", 26.0),
            t("host_to_device_pageable_memcpy_ce", 9.0),
        ],
    });
    let e = build(&cal, sheet, Format::Aiconfigurator, &[]).unwrap();
    let f = field(&e, "node.pcie_bw");
    close(&f.value, 24.5e9);
    assert!(
        matches!(&f.source, Source::Measured(c) if c.contains("host_to_device_memcpy_ce")),
        "{:?}",
        f.source
    );
}

/// A ceiling every row of which was flagged says so in every format's source, and the
/// export's stderr names it (the command prints each field whose source says
/// [`SUSPECT`]); an unflagged one does not.
#[test]
fn a_figure_from_a_flagged_row_says_so() {
    let mut rows = synthetic_run();
    for r in rows
        .iter_mut()
        .filter(|r| r.family == Family::Stream && r.valid)
    {
        r.flags = "busy_host(30%)".into();
    }
    let cal = Calibration::from_records(&rows, None).unwrap();
    let case = cal.memory_ceilings[0].case.clone().unwrap();
    assert!(cal.memory_ceilings[0].suspect);
    for format in [
        Format::Aiconfigurator,
        Format::LlmAnalysis,
        Format::Calculon,
        Format::LlmViewer,
    ] {
        let e = build(&cal, sheet_of(&cal).unwrap(), format, &[]).unwrap();
        assert!(
            e.fields
                .iter()
                .any(|f| f.source.describe().contains(&format!("{case} ({SUSPECT})"))),
            "{format:?}: {:?}",
            e.fields
        );
    }
    let e = build(&cal, sheet_of(&cal).unwrap(), Format::LlmViewer, &[]).unwrap();
    assert!(!field(&e, "FP16").source.describe().contains(SUSPECT));
}

/// Every format's `--set` refuses what its tool would refuse: 0 for a rate or a capacity,
/// an efficiency factor above 1, a mode the tool does not have, a fraction of a count; and
/// takes what it would take.
#[test]
fn set_values_are_checked_against_each_formats_schema() {
    let refused = |format: Format, set: &str, why: &str| {
        let e = parse_sets(format, &[set.to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--set: ") && e.contains(why), "{set}: {e}");
    };
    refused(Format::Aiconfigurator, "gpu.mem_bw=0", "must be above 0");
    // issue 60: physical bounds, in each key's own unit
    refused(
        Format::Aiconfigurator,
        "gpu.mem_bw=5e-324",
        "must be above 0",
    );
    refused(Format::Aiconfigurator, "gpu.mem_bw=2e15", "at most 1e15");
    refused(
        Format::Aiconfigurator,
        "gpu.bfloat16_tc_flops=1e18",
        "at most 1e17",
    );
    refused(
        Format::LlmAnalysis,
        "hbm_bandwidth_in_GB_per_sec=1e7",
        "at most 1e6",
    );
    refused(Format::LlmAnalysis, "peak_fp16_TFLOPS=1e6", "at most 1e5");
    refused(Format::Calculon, "mem1.GiB=1e7", "at most");
    refused(Format::LlmViewer, "onchip_buffer=1e300", "at most");
    refused(Format::Aiconfigurator, "node.p2p_latency=5", "at most 1e0");
    refused(Format::Aiconfigurator, "gpu.power=1e9", "at most 1e6");
    refused(
        Format::Aiconfigurator,
        "misc.other_mem=18446744073709551615",
        "at most",
    );
    assert!(parse_sets(Format::Aiconfigurator, &["gpu.mem_bw=1e15".into()]).is_ok());
    assert!(parse_sets(Format::LlmAnalysis, &["peak_fp16_TFLOPS=1e5".into()]).is_ok());
    refused(Format::Aiconfigurator, "gpu.mem_capacity=0", "at least 1");
    refused(
        Format::Aiconfigurator,
        "gpu.mem_bw_empirical_scaling_factor=5",
        "a fraction",
    );
    refused(
        Format::Aiconfigurator,
        "node.num_gpus_per_node=1.5",
        "a whole number",
    );
    refused(
        Format::LlmAnalysis,
        "hbm_bandwidth_in_GB_per_sec=0",
        "above 0",
    );
    refused(Format::LlmAnalysis, "mem_per_GPU_in_GB=-1", "above 0");
    refused(
        Format::LlmAnalysis,
        "intra_node_min_message_latency=-1e-6",
        "0 or more",
    );
    refused(
        Format::Calculon,
        "processing_mode=foo",
        "roofline, no_overlap",
    );
    refused(Format::Calculon, "mem1.GBps=0", "above 0");
    refused(Format::LlmViewer, "onchip_buffer=0", "above 0");
    refused(Format::LlmViewer, "bandwidth=nan", "needs a number");
    for (format, set) in [
        (
            Format::Aiconfigurator,
            "gpu.mem_bw_empirical_scaling_factor=0.8",
        ),
        (Format::Aiconfigurator, "node.num_gpus_per_node=8"),
        (Format::Aiconfigurator, "node.p2p_latency=0"),
        (Format::LlmAnalysis, "intra_node_min_message_latency=8e-6"),
        (Format::Calculon, "processing_mode=roofline"),
        (Format::Calculon, "mem2.GiB=512"),
        (Format::LlmViewer, "onchip_buffer=27648000"),
    ] {
        parse_sets(format, &[set.to_string()]).unwrap_or_else(|e| panic!("{format:?} {set}: {e}"));
    }
}

/// A field whose figure is not finite is an error naming the key, and no text is made: a
/// DRAM ceiling of f64::MAX GB/s in memory (which no reader would take) is infinite in the
/// B/s of AIConfigurator and LLM-Viewer; and in any format a field, or a point of a curve,
/// that is NaN or infinite.
#[test]
fn a_non_finite_field_is_an_error_naming_it() {
    let mut cal = Calibration::from_records(&synthetic_run(), None).unwrap();
    let sheet = sheet_of(&cal).unwrap();
    let dram = cal
        .memory_ceilings
        .iter_mut()
        .find(|m| m.level == MemoryLevel::Dram)
        .unwrap();
    dram.gbps = Some(f64::MAX);
    let says = |format: Format, key: &str, value: &str| {
        format!(
            "--format {}: `{key}` would be {value}, not a finite figure",
            format.as_str()
        )
    };
    for (format, key) in [
        (Format::Aiconfigurator, "gpu.mem_bw"),
        (Format::LlmViewer, "bandwidth"),
    ] {
        let e = build(&cal, sheet, format, &[]).unwrap_err().to_string();
        assert!(e.starts_with(&says(format, key, "inf")), "{e}");
    }
    for format in [
        Format::Aiconfigurator,
        Format::LlmAnalysis,
        Format::Calculon,
        Format::LlmViewer,
    ] {
        let field = |key: &str, value: Value| Field {
            key: key.into(),
            value,
            unit: "",
            source: Source::Given,
        };
        let fine = [
            field("a", Value::Num(f64::MAX)),
            field("b", Value::Curve(vec![(1e6, 0.5), (0.0, 0.1)])),
        ];
        finite(format, &fine).unwrap();
        for (bad, value) in [
            (field("x.y", Value::Num(f64::NAN)), "NaN"),
            (
                field("x.y", Value::Curve(vec![(1e6, 0.5), (f64::INFINITY, 0.1)])),
                "inf",
            ),
        ] {
            let e = finite(format, &[fine[0].clone(), bad])
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&says(format, "x.y", value)), "{e}");
        }
    }
}

/// A key the tool needs that nothing fills is an error naming it, not a file the tool
/// refuses; `--set` fills it.
#[test]
fn a_required_field_nothing_fills_is_an_error_naming_it() {
    let rows: Vec<_> = synthetic_run()
        .into_iter()
        .filter(|r| r.family != Family::Stream)
        .map(|mut r| {
            // no sheet entry either
            r.device_name = "roofprobe test GPU".into();
            r
        })
        .collect();
    let cal = Calibration::from_records(&rows, None).unwrap();
    assert!(sheet_of(&cal).unwrap().is_none());
    let e = build(&cal, None, Format::LlmViewer, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--format llm-viewer needs bandwidth, which this run did not measure")
            && e.ends_with("give it with --set KEY=VALUE"),
        "{e}"
    );
    let sets = parse_sets(Format::LlmViewer, &["bandwidth=1e12".into()]).unwrap();
    let e = build(&cal, None, Format::LlmViewer, &sets).unwrap();
    assert_eq!(field(&e, "bandwidth").source, Source::Given);
}
