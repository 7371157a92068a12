//! Calculon's system file (render::exports, format calculon): rated figures with measured
//! efficiencies, the measured GEMM curve, memory-bound products making no compute efficiency,
//! what Calculon's system needs for a bf16 run, and a host without 16-bit units running bf16 at
//! its f32 rate. The rate past the rated one stays beside its code (calculon.rs).

use roofprobe::analysis::calibration::Calibration;
use roofprobe::analysis::calibration::FromRecords;
use roofprobe::analysis::fixtures::synthetic_run;
use roofprobe::cases::Precision;
use roofprobe::render::exports::fixtures::a100;
use roofprobe::render::exports::*;

#[test]
fn calculon_gets_rated_figures_and_measured_efficiencies() {
    let e = a100(Format::Calculon, &[]);
    let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
    let f16 = &json["matrix"]["float16"];
    assert_eq!(f16["tflops"], 312.0);
    let eff = f16["gflops_efficiency"][0][1].as_f64().unwrap();
    assert!((eff - 250.0 / 312.0).abs() < 1e-12);
    assert_eq!(json["mem1"]["GBps"], 2039.0);
    assert_eq!(json["mem1"]["GiB"], 80.0);
    let eff = json["mem1"]["MB_efficiency"][0][1].as_f64().unwrap();
    assert!((eff - 1500.0 / 2039.0).abs() < 1e-12);
    let sources = &json["roofprobe_sources"];
    assert!(sources["matrix.bfloat16.tflops"]
        .as_str()
        .unwrap()
        .contains("spec sheet"));
    // measured, so the rated figure names where the measurement is
    let said = sources["mem1.GBps"].as_str().unwrap();
    assert!(
        said.contains("the rated figure") && said.contains("in mem1.MB_efficiency"),
        "{said}"
    );
    assert!(sources["mem1.MB_efficiency"]
        .as_str()
        .unwrap()
        .starts_with("[[size, efficiency]]; measured: stream/"));
}

#[test]
fn calculon_takes_the_measured_gemm_curve() {
    use roofprobe::analysis::fixtures::gemm_row;
    use roofprobe::cases::gemm::Shape;
    let mut rows = synthetic_run();
    rows.extend([
        gemm_row(
            "ptx",
            Precision::F16F32,
            Shape::square(1024),
            100_000.0,
            true,
        ),
        gemm_row(
            "ptx",
            Precision::F16F32,
            Shape::square(8192),
            200_000.0,
            true,
        ),
        gemm_row("simd", Precision::F32, Shape::square(4096), 12_000.0, true),
    ]);
    let cal = Calibration::from_records(&rows, None).unwrap();
    let e = build(&cal, sheet_of(&cal).unwrap(), Format::Calculon, &[]).unwrap();
    let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
    let f16 = &json["matrix"]["float16"];
    // the rate stays the sheet's 312 TFLOP/s; each size at its own GEMM over it, largest
    // (2·8192³ = 1099.5 GFLOP) first, the smallest (2·1024³) carried down to 0
    assert_eq!(f16["tflops"], 312.0);
    let curve: Vec<(f64, f64)> = f16["gflops_efficiency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect();
    let big = 2.0 * 8192f64.powi(3) / 1e9;
    let small = 2.0 * 1024f64.powi(3) / 1e9;
    assert_eq!(curve.len(), 3, "{curve:?}");
    assert!((curve[0].0 - big).abs() < 1e-9 && (curve[0].1 - 200.0 / 312.0).abs() < 1e-12);
    assert!((curve[1].0 - small).abs() < 1e-9 && (curve[1].1 - 100.0 / 312.0).abs() < 1e-12);
    assert_eq!(curve[2], (0.0, curve[1].1));
    let source = json["roofprobe_sources"]["matrix.float16.gflops_efficiency"]
        .as_str()
        .unwrap();
    assert!(
        source.contains("measured: gemm/ptx/f16.f32: 2 sizes from 2 compute-bound GEMMs"),
        "{source}"
    );
    assert!(source.contains("carried down (not measured)"), "{source}");
    // an A100 has a TF32 figure on its sheet: float32 is the tensor rate, its efficiency
    // from the f32 GEMM against it
    assert_eq!(json["matrix"]["float32"]["tflops"], 156.0);
}

/// Compute-bound shapes of one size (2·256³ = 2·64·1024·256 flops) give Calculon one
/// point, the lowest efficiency measured there, whichever order the shapes sort in. A
/// matrix-vector product of that size too (1×4096×4096) is memory-bound, slow for its bytes:
/// it is no compute efficiency and is left out. The Xeon run b3b7c787 gave 256³ the GEMV's
/// 0.016 for its own 0.43, and Calculon's decode then ignored bandwidth.
#[test]
fn memory_bound_products_make_no_compute_efficiency() {
    use roofprobe::analysis::fixtures::gemm_row;
    use roofprobe::cases::gemm::Shape;
    let gemv = Shape::new(1, 4096, 4096);
    let flat = Shape::new(64, 1024, 256);
    assert_eq!(gemv.flops(), Shape::square(256).flops());
    assert_eq!(flat.flops(), Shape::square(256).flops());
    for (square, other) in [(5_000.0, 4_000.0), (4_000.0, 5_000.0)] {
        let mut rows = synthetic_run();
        rows.extend([
            gemm_row("simd", Precision::F32, Shape::square(256), square, true),
            gemm_row("simd", Precision::F32, flat, other, true),
            gemm_row("simd", Precision::F32, gemv, 240.0, true),
            gemm_row("simd", Precision::F32, Shape::square(1024), 9_000.0, true),
        ]);
        let cal = Calibration::from_records(&rows, None).unwrap();
        let e = build(&cal, sheet_of(&cal).unwrap(), Format::Calculon, &[]).unwrap();
        let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
        let rate = json["matrix"]["float32"]["tflops"].as_f64().unwrap() * 1e3;
        let curve: Vec<(f64, f64)> = json["matrix"]["float32"]["gflops_efficiency"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        let small = gemv.flops() as f64 / 1e9;
        assert_eq!(curve.len(), 3, "{curve:?}");
        assert!((curve[1].0 - small).abs() < 1e-12, "{curve:?}");
        assert!((curve[1].1 - 4_000.0 / rate).abs() < 1e-12, "{curve:?}");
        assert_eq!(curve[2], (0.0, curve[1].1));
        let slowest = if square < other {
            "256x256x256"
        } else {
            "64x1024x256"
        };
        let source = json["roofprobe_sources"]["matrix.float32.gflops_efficiency"]
            .as_str()
            .unwrap();
        assert!(
            source.contains(&format!(
                "measured: gemm/simd/f32: 2 sizes from 3 compute-bound GEMMs (where shapes \
                 share a size, the lowest efficiency; 1 memory-bound left out), \
                 {slowest} to 1024x1024x1024; below {slowest}"
            )),
            "{source}"
        );
    }
}

/// Every engine has bfloat16 (Calculon refuses a bf16 run without `vector.bfloat16`:
/// "Unsupported type: bfloat16"); `mem2` and `networks`, which `System()` needs, are
/// written; the mode is `no_overlap`, since Calculon's statistics divide by zero in
/// `roofline` mode on any memory-bound run.
#[test]
fn the_file_has_what_calculons_system_needs_for_a_bf16_run() {
    let e = a100(Format::Calculon, &[]);
    let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
    for engine in ["matrix", "vector"] {
        for dtype in ["float16", "bfloat16", "float32"] {
            let p = &json[engine][dtype];
            assert!(p["tflops"].as_f64().unwrap() > 0.0, "{engine}.{dtype}");
            assert_eq!(
                p["gflops_efficiency"].as_array().unwrap().last().unwrap()[0],
                0.0
            );
        }
    }
    // the A100's sheet has no bf16 vector figure: its f16 one (the same rate on Ampere)
    assert_eq!(json["vector"]["bfloat16"]["tflops"], 78.0);
    assert_eq!(json["processing_mode"], "no_overlap");
    assert_eq!(json["mem2"]["GiB"], 0.0);
    assert_eq!(json["mem2"]["GBps"], 32.0);
    let net = &json["networks"][0];
    assert_eq!(net["size"], 1);
    assert_eq!(net["bandwidth"], 300.0);
    let keys: Vec<&String> = net.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "bandwidth",
            "efficiency",
            "latency",
            "must_be_filled",
            "ops",
            "processor_usage",
            "size"
        ]
    );
}

/// A host without 16-bit units (the AMD EPYC runs): float16 and bfloat16 are float32's
/// rate and curve, said to be so, in both engines.
#[test]
fn a_host_without_16_bit_units_runs_bf16_at_its_f32_rate() {
    let rows: Vec<_> = synthetic_run()
        .into_iter()
        .filter(|r| r.family != roofprobe::cases::Family::Tensor)
        .map(|mut r| {
            r.device_name = "roofprobe test device".into();
            r
        })
        .collect();
    let cal = Calibration::from_records(&rows, None).unwrap();
    let sets = parse_sets(Format::Calculon, &["mem1.GiB=16".into()]).unwrap();
    let e = build(&cal, None, Format::Calculon, &sets);
    // a GPU without a sheet or a link has no network to write: an error naming it
    let e = e.unwrap_err().to_string();
    assert!(e.contains("needs mem2.GBps, networks"), "{e}");
    let mut cal = cal;
    cal.device.backend = roofprobe_calibration::BackendKind::Host;
    let e = build(&cal, None, Format::Calculon, &sets).unwrap();
    let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
    for engine in ["matrix", "vector"] {
        assert_eq!(
            json[engine]["bfloat16"], json[engine]["float32"],
            "{engine}"
        );
        assert_eq!(json[engine]["float16"], json[engine]["float32"], "{engine}");
        assert!(
            json["roofprobe_sources"][format!("{engine}.bfloat16.tflops")]
                .as_str()
                .unwrap()
                .contains("no bfloat16 rate measured or on a sheet")
        );
    }
}
