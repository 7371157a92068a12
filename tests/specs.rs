//! The spec table (specs): the embedded sheet parses, devices are found by the names their
//! drivers report (and near misses are not), and each ceiling says what it rests on.

use roofprobe::cases::{Family, Precision};
use roofprobe::specs::*;
use std::collections::BTreeSet;

fn db() -> &'static [GpuSpec] {
    database().expect("the embedded table parses")
}

fn found(name: &str) -> &'static str {
    match lookup_in(db(), name) {
        Lookup::Found(s) => &s.device,
        other => panic!("`{name}`: {other:?}"),
    }
}

#[test]
fn embedded_table_is_what_the_code_parses() {
    // Parsing and writing back gives the file byte for byte: no column is lost or
    // reformatted, so what `specs` prints is what the vendor table says.
    let written = to_table(db());
    for (i, (w, f)) in written.lines().zip(GPU_SPECS_CSV.lines()).enumerate() {
        assert_eq!(w, f, "line {} differs", i + 1);
    }
    // Line ends too, whichever a checkout gave the file.
    let lf = |s: &str| s.replace("\r\n", "\n");
    assert!(
        lf(&written) == lf(GPU_SPECS_CSV),
        "line ends or the final newline differ"
    );
    assert!(db().len() >= 28, "{} rows", db().len());
    for s in db() {
        assert!(!s.source.trim().is_empty(), "{} has no source", s.device);
        assert!(
            !s.nvidia_smi_name.is_empty(),
            "{} has no driver name",
            s.device
        );
    }
    let header = GPU_SPECS_CSV.lines().next().unwrap();
    let names: Vec<&str> = db()[0].fields().iter().map(|(k, _)| *k).collect();
    assert_eq!(
        header,
        names.join(","),
        "fields() lists every column in order"
    );
}

#[test]
fn embedded_table_equals_the_shared_reference() {
    let reference = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/reference/gpu_specs.csv"
    );
    match std::fs::read_to_string(reference) {
        Ok(text) => assert!(
            text == GPU_SPECS_CSV,
            "data/gpu_specs.csv drifted from {reference}"
        ),
        Err(e) => eprintln!("skipped: no shared reference at {reference} ({e})"),
    }
}

#[test]
fn driver_and_friendly_names_match_the_right_row() {
    assert_eq!(found("NVIDIA A100-SXM4-80GB"), "A100 80GB SXM4");
    assert_eq!(found("A100 80GB SXM4"), "A100 80GB SXM4");
    assert_eq!(found("a100 sxm4 80 GB"), "A100 80GB SXM4");
    assert_eq!(found("A100 SXM 80GB"), "A100 80GB SXM4");
    assert_eq!(found("RTX 3090"), "RTX 3090");
    assert_eq!(found("NVIDIA GeForce RTX 3090"), "RTX 3090");
    assert_eq!(found("rtx 3090 ti"), "RTX 3090 Ti");
    assert_eq!(found("RTX 3080"), "RTX 3080 (10GB)");
    assert_eq!(found("NVIDIA H100 80GB HBM3"), "H100 SXM5 80GB");
    assert_eq!(found("H200"), "H200 SXM 141GB");
    assert_eq!(found("A10"), "A10");
    assert_eq!(found("Tesla T4"), "T4");
    assert_eq!(found("4090"), "RTX 4090");
}

#[test]
fn matching_is_safe() {
    let not_found = |n: &str| matches!(lookup_in(db(), n), Lookup::NotFound(_));
    let ambiguous = |n: &str| matches!(lookup_in(db(), n), Lookup::Ambiguous(_));
    // a word no entry has: another device, never the nearest one
    assert!(not_found("NVIDIA GeForce RTX 4090 Laptop GPU"));
    assert!(not_found("NVIDIA L40"));
    assert!(not_found("NVIDIA A10G"));
    assert!(not_found("NVIDIA A100-SXM4-80GB MIG 1g.10gb"));
    assert!(not_found(""));
    assert!(not_found("---"));
    // several fit: say so
    assert!(ambiguous("H100"));
    assert!(ambiguous("3090"));
    assert!(ambiguous("GH200"));
    assert!(ambiguous("V100 16GB"));
}

#[test]
fn unknown_names_list_close_candidates() {
    let e = find("RTX 3009").unwrap_err().to_string();
    assert!(
        e.starts_with("no spec entry matches `RTX 3009`; closest: "),
        "{e}"
    );
    assert!(e.contains("\"RTX 3090\""), "{e}");
    let e = find("H100").unwrap_err().to_string();
    assert!(
        e.contains("fits 3 spec entries") && e.contains("\"H100 NVL\""),
        "{e}"
    );
}

#[test]
fn figures_keep_their_text() {
    let ti = find("RTX 3090 Ti").unwrap();
    assert_eq!(ti.fp32_tflops.as_ref().unwrap().text, "40.0");
    assert_eq!(ti.figure("fp32_tflops"), Some(40.0));
    let v100 = find("V100 SXM2 16GB").unwrap();
    assert_eq!(v100.memory_data_rate_gbps.as_ref().unwrap().text, "1.755");
    assert_eq!(v100.figure("fp64_tensor_tflops"), None);
    assert_eq!(v100.figure("no_such_column"), None);
}

#[test]
fn bad_tables_are_errors_with_lines() {
    let header = GPU_SPECS_CSV.lines().next().unwrap();
    let row = GPU_SPECS_CSV.lines().nth(1).unwrap();
    let bad = format!(
        "{header}\n{row}\n{}\n",
        row.replacen(",80,1530,", ",eighty,1530,", 1)
    );
    let e = parse_table(&bad).unwrap_err();
    assert!(
        e.starts_with("data/gpu_specs.csv:3:") && e.contains("eighty"),
        "{e}"
    );
    let no_source = format!("{header}\n{}\n", &row[..row.rfind(',').unwrap() + 1]);
    assert!(parse_table(&no_source)
        .unwrap_err()
        .contains("has no source"));
}

fn gpu(name: &str, cc: (u32, u32), sms: u32) -> DeviceAttributes {
    DeviceAttributes {
        is_gpu: true,
        name: name.into(),
        compute_capability: Some(cc),
        sms: Some(sms),
        clock_mhz: Some(1410.0),
        memory_clock_mhz: Some(1593.0),
        memory_bus_bits: Some(5120),
    }
}

#[test]
fn basis_sheet_theoretical_or_none() {
    let (b, sheet) = basis_for(&gpu("NVIDIA A100-SXM4-80GB", (8, 0), 108));
    assert!(
        matches!(&b, SpecBasis::Sheet { entry, caveat: None, .. } if entry == "A100 80GB SXM4")
    );
    let f = spec_figure(
        &b,
        sheet,
        &gpu("", (8, 0), 108),
        Family::Stream,
        Precision::F32,
    )
    .unwrap();
    assert_eq!(
        (f.value, f.basis.as_str()),
        (2039.0, "sheet: mem_bandwidth_gbs")
    );
    let f = spec_figure(
        &b,
        sheet,
        &gpu("", (8, 0), 108),
        Family::Tensor,
        Precision::F16F32,
    )
    .unwrap();
    assert_eq!(f.value, 312_000.0);
    let e = spec_figure(
        &b,
        sheet,
        &gpu("", (8, 0), 108),
        Family::Peak,
        Precision::Bf16x2,
    );
    assert!(e.unwrap_err().contains("no non-tensor bf16"));
    let e = spec_figure(
        &b,
        sheet,
        &gpu("", (8, 0), 108),
        Family::Tensor,
        Precision::E4m3F32,
    );
    assert!(e.unwrap_err().contains("leaves fp8_tensor_tflops blank"));

    // a MIG-sized device: still the sheet, with a caveat
    let (b, _) = basis_for(&gpu("NVIDIA A100-SXM4-80GB", (8, 0), 98));
    assert!(
        b.describe().contains("98 SMs, the sheet 108"),
        "{}",
        b.describe()
    );

    // a name that resembles an entry but is another chip: not the sheet
    let (b, sheet) = basis_for(&gpu("NVIDIA A100-SXM4-80GB", (9, 0), 108));
    assert!(sheet.is_none());
    assert!(
        matches!(&b, SpecBasis::Theoretical { reason } if reason.contains("compute capability 9.0"))
    );

    // a GPU with no sheet but a known compute capability: compute from the lanes table
    // (specs::theory), 200 SMs × 128 FP32 lanes × 2 × 1410 MHz
    let known = gpu("NVIDIA RTX PRO 9000", (12, 0), 200);
    let (b, sheet) = basis_for(&known);
    let f = spec_figure(&b, sheet, &known, Family::Peak, Precision::F32).unwrap();
    assert!((f.value - 72_192.0).abs() < 1e-6, "{}", f.value);

    // unknown GPU: theoretical DRAM from the bus, no invented compute peak
    let dev = gpu("NVIDIA Future 9000", (13, 0), 200);
    let (b, sheet) = basis_for(&dev);
    assert!(
        b.describe().starts_with("theoretical peaks"),
        "{}",
        b.describe()
    );
    let f = spec_figure(&b, sheet, &dev, Family::Stream, Precision::F64).unwrap();
    assert!((f.value - 2039.04).abs() < 1e-9, "{}", f.value);
    assert!(f.basis.contains("5120-bit"));
    assert!(spec_figure(&b, sheet, &dev, Family::Peak, Precision::F32).is_err());
    // …and from a CSV alone, which has no bus width
    let csv_dev = DeviceAttributes {
        memory_bus_bits: None,
        ..dev
    };
    let e = spec_figure(&b, sheet, &csv_dev, Family::Stream, Precision::F64).unwrap_err();
    assert!(e.contains("bus width is not recorded"), "{e}");

    // the host: none, never invented
    let host = DeviceAttributes {
        is_gpu: false,
        name: "AMD EPYC".into(),
        ..Default::default()
    };
    let (b, _) = basis_for(&host);
    assert!(b.describe().starts_with("no spec (host CPU"));
    assert!(spec_figure(&b, None, &host, Family::Stream, Precision::F32).is_err());
}

#[test]
fn theoretical_dram() {
    assert_eq!(theoretical_dram_gbps(256, 5001.0), Some(320.064));
    assert_eq!(theoretical_dram_gbps(0, 5001.0), None);
    assert_eq!(theoretical_dram_gbps(384, f64::NAN), None);
}

#[test]
fn every_measured_precision_has_a_column_or_a_reason() {
    for f in [Family::Stream, Family::Peak, Family::Tensor] {
        for p in Precision::ALL {
            match column_for(f, p) {
                Ok(c) => assert!(db()[0].fields().iter().any(|(k, _)| *k == c), "{c}"),
                Err(why) => assert!(!why.is_empty()),
            }
        }
    }
    assert_eq!(
        column_for(Family::Tensor, Precision::S8S32),
        Ok("int8_tensor_tops")
    );
}

#[test]
fn names_are_unique_so_matching_can_be_exact() {
    let mut seen = BTreeSet::new();
    for s in db() {
        assert!(seen.insert(normalised(&s.device)), "{}", s.device);
        assert!(
            seen.insert(normalised(&s.nvidia_smi_name)),
            "{}",
            s.nvidia_smi_name
        );
    }
    // every entry is found by both of its names
    for s in db() {
        assert_eq!(found(&s.device), s.device);
        assert_eq!(found(&s.nvidia_smi_name), s.device);
    }
}
