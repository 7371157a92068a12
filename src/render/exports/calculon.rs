//! Calculon's system JSON (`systems/<name>.json`, read by `calculon.System`): engines `matrix`
//! and `vector`, each per data type (`float16`, `bfloat16`, `float8`, `float32`) a rate
//! `tflops` (TFLOP/s) and `gflops_efficiency` (`[[GFLOP, efficiency], …]`, sizes strictly
//! falling to 0, each efficiency in (0, 1]: an op of F flop runs at `tflops × efficiency` of
//! the first entry whose size F reaches); memory `mem1` with `GiB` (times 1024**3), `GBps`
//! (times 10^9) and `MB_efficiency` (`[[MB, efficiency], …]`, 10^6 bytes, the same lookup);
//! `processing_mode` (`roofline`: max of compute and memory time; `no_overlap`: their sum).
//! A `roofprobe_sources` map beside the sections, which Calculon does not read, says each
//! field's unit and source.
//!
//! It must not print, read files or measure.

use super::{comment, push, rate, sig, Field, Inputs, Source, Value, GIB};
use crate::analysis::calibration::Calibration;
use crate::cases::{Family, Precision};
use roofprobe_calibration::{GemmEfficiency, GemmEfficiencyPoint, SizeEfficiency};

/// The keys this format writes or `--set` may give, in the file's order.
pub(super) const KEYS: &[&str] = &[
    "matrix.float16.tflops",
    "matrix.bfloat16.tflops",
    "matrix.float8.tflops",
    "matrix.float32.tflops",
    "vector.float32.tflops",
    "vector.float16.tflops",
    "mem1.GiB",
    "mem1.GBps",
    "processing_mode",
];

/// Keys the tool does without.
pub(super) const OPTIONAL: &[&str] = &[
    "matrix.float8.tflops",
    "matrix.float32.tflops",
    "vector.float16.tflops",
];

/// One efficiency point: Calculon scales its rated figure by the efficiency of the op's size.
/// roofprobe measures each ceiling at one size, so the curve has one point, from size 0 (which
/// Calculon's lookup needs) up; a measured figure above the rated one keeps the measured figure
/// as the rate and efficiency 1 (Calculon refuses efficiencies above 1).
#[allow(clippy::too_many_arguments)]
fn calculon_rate(
    f: &mut Vec<Field>,
    key: &str,
    measured: Option<(f64, String)>,
    rated: Option<(f64, Source)>,
    scale_to_unit: f64,
    curve_key: &str,
    unit: &'static str,
) {
    let (rate_value, rate_source, eff, eff_source) = match (measured, rated) {
        (Some((m, case)), Some((r, src))) if m <= r => (
            r,
            src.rated(curve_key),
            m / r,
            Source::Measured(format!("{case}: {} of the rated figure", sig(m / r))),
        ),
        (Some((m, case)), _) => (
            m,
            Source::Measured(case.clone()),
            1.0,
            Source::Choice("the rate is the measured figure"),
        ),
        (None, Some((r, src))) => (
            r,
            src,
            1.0,
            Source::Choice("nothing measured: the rated figure at every size"),
        ),
        (None, None) => return,
    };
    f.push(Field {
        key: key.to_string(),
        value: Value::Num(rate_value * scale_to_unit),
        unit,
        source: rate_source,
    });
    f.push(Field {
        key: curve_key.to_string(),
        value: Value::Curve(vec![(0.0, eff)]),
        unit: "[[size, efficiency]]",
        source: eff_source,
    });
}

/// Calculon's `MB_efficiency` from the size sweep (`size_efficiency`): each measured size, in MB
/// (10^6 bytes) moved per launch, largest first, at its bandwidth over the written `mem1.GBps`
/// (Calculon's `Memory.efficiency(op_bytes)` takes the first entry whose size the op reaches
/// and scales `GBps` by it), capped at 1 (Calculon refuses more; a size a cache served ran
/// above the DRAM rate), and the smallest size's efficiency carried down to size 0 (Calculon's
/// lookup needs it; below 1 MiB arrays nothing was measured).
fn size_curve(f: &mut [Field], fit: &SizeEfficiency) {
    let Some(rate_gbps) = f
        .iter()
        .find(|g| g.key == "mem1.GBps")
        .and_then(|g| match g.value {
            Value::Num(v) if v > 0.0 => Some(v),
            _ => None,
        })
    else {
        return;
    };
    let mut points: Vec<(f64, f64)> = fit
        .points
        .iter()
        .rev()
        .map(|p| (p.bytes as f64 / 1e6, (p.gbps / rate_gbps).min(1.0)))
        .filter(|(_, e)| e.is_finite() && *e > 0.0)
        .collect();
    let Some(&(_, smallest)) = points.last() else {
        return;
    };
    points.push((0.0, smallest));
    let source = Inputs::size_fit_source(
        fit,
        &format!(
            "each size's GB/s / mem1.GBps {} (capped at 1), the smallest carried to 0",
            sig(rate_gbps)
        ),
    );
    if let Some(curve) = f.iter_mut().find(|g| g.key == "mem1.MB_efficiency") {
        curve.value = Value::Curve(points);
        curve.source = source;
    }
}

/// The GEMM efficiency curve of `precision` that reaches the most (of the implementations the
/// run measured: cuBLAS, PTX, the host's), with at least one point.
pub fn best_gemm_curve(cal: &Calibration, precision: Precision) -> Option<&GemmEfficiency> {
    let top = |g: &GemmEfficiency| g.points.iter().map(|p| p.gflops).fold(0.0, f64::max);
    cal.gemm_efficiency
        .iter()
        .filter(|g| g.precision == precision && !g.points.is_empty())
        .max_by(|a, b| top(a).total_cmp(&top(b)))
}

/// Calculon's `gflops_efficiency` from a measured GEMM curve: each measured size (GFLOP of the
/// product, largest first) at its achieved rate over the written rate, and the smallest size's
/// efficiency carried down to size 0 (which Calculon's lookup needs; not measured). Calculon
/// takes one efficiency a size; where several shapes have the same size (256³ and 1 × 4096 ×
/// 4096 are both 0.0336 GFLOP), the lowest measured there, as an estimator should not be
/// promised more than the run measured at that size ([`one_point_per_size`]). The rate is
/// raised to the fastest GEMM where that beat it, since Calculon refuses efficiencies above 1.
/// Where no rate was written (a host has no tensor figure), the curve's own ceiling is the rate.
fn gemm_curve(f: &mut Vec<Field>, x: &Inputs, dtype: &str, curve: &GemmEfficiency) {
    let rate_key = format!("matrix.{dtype}.tflops");
    let curve_key = format!("matrix.{dtype}.gflops_efficiency");
    let family = roofprobe_calibration::gemm_ceiling_family(curve.precision);
    let written = f
        .iter()
        .find(|g| g.key == rate_key)
        .and_then(|g| match g.value {
            Value::Num(t) => Some((t * 1e3, g.source.clone())),
            _ => None,
        });
    let (mut rate_gflops, mut source) = match written {
        Some(w) => w,
        None => match x.compute(family, curve.precision) {
            Some((g, case)) => (g, Source::Measured(case)),
            None => match curve.spec_gflops {
                Some(g) => (
                    g,
                    Source::Spec {
                        entry: x.entry(),
                        column: curve.ceiling.clone(),
                    },
                ),
                None => return,
            },
        },
    };
    let fastest = curve
        .points
        .iter()
        .max_by(|a, b| a.gflops.total_cmp(&b.gflops))
        .expect("a curve with points");
    if fastest.gflops > rate_gflops {
        rate_gflops = fastest.gflops;
        source = Source::Measured(format!(
            "gemm/{}/{}/{} (the fastest GEMM, above the ceiling)",
            curve.kernel, curve.precision, fastest.shape
        ));
    }
    let per_size = one_point_per_size(&curve.points);
    // Calculon needs sizes strictly falling
    let mut points: Vec<(f64, f64)> = per_size
        .iter()
        .rev()
        .map(|p| (p.gflop, (p.gflops / rate_gflops).min(1.0)))
        .collect();
    if let Some(&(size, eff)) = points.last() {
        if size > 0.0 {
            points.push((0.0, eff));
        }
    }
    let (smallest, largest) = (per_size[0], per_size[per_size.len() - 1]);
    f.retain(|g| g.key != rate_key && g.key != curve_key);
    f.push(Field {
        key: rate_key,
        value: Value::Num(rate_gflops / 1e3),
        unit: "TFLOP/s",
        source,
    });
    f.push(Field {
        key: curve_key,
        value: Value::Curve(points),
        unit: "[[GFLOP, efficiency]]",
        source: Source::Measured(format!(
            "gemm/{}/{}: {} sizes from {} GEMMs (where shapes share a size, the lowest \
             efficiency), {} to {}; below {} its efficiency carried down (not measured)",
            curve.kernel,
            curve.precision,
            per_size.len(),
            curve.points.len(),
            smallest.shape,
            largest.shape,
            smallest.shape
        )),
    });
}

/// A GEMM curve's points, one per size (GFLOP of the product), ascending: at a size several
/// shapes share, the one that ran slowest (the lowest efficiency; the first in the curve's
/// order among equal rates).
fn one_point_per_size(points: &[GemmEfficiencyPoint]) -> Vec<&GemmEfficiencyPoint> {
    let mut sorted: Vec<&GemmEfficiencyPoint> = points.iter().collect();
    sorted.sort_by(|a, b| a.gflop.total_cmp(&b.gflop));
    let mut out: Vec<&GemmEfficiencyPoint> = Vec::new();
    for p in sorted {
        match out.last_mut() {
            Some(kept) if kept.gflop == p.gflop => {
                if p.gflops < kept.gflops {
                    *kept = p;
                }
            }
            _ => out.push(p),
        }
    }
    out
}

pub(super) fn fields(x: &Inputs) -> Vec<Field> {
    let mut f = Vec::new();
    let flops = |family, precision| x.compute(family, precision).map(|(g, c)| (g * 1e9, c));
    let spec_t = |column: &str| x.spec(column).map(|(t, s)| (t * 1e12, s));
    for (dtype, precision, column, gemm) in [
        (
            "float16",
            Precision::F16F32,
            "fp16_tensor_fp32acc_tflops",
            &[Precision::F16F32][..],
        ),
        (
            "bfloat16",
            Precision::Bf16F32,
            "bf16_tensor_tflops",
            &[Precision::Bf16F32][..],
        ),
        (
            "float8",
            Precision::E4m3F32,
            "fp8_tensor_tflops",
            &[Precision::E4m3F32][..],
        ),
        (
            "float32",
            Precision::Tf32F32,
            "tf32_tensor_tflops",
            &[Precision::Tf32F32, Precision::F32][..],
        ),
    ] {
        calculon_rate(
            &mut f,
            &format!("matrix.{dtype}.tflops"),
            flops(Family::Tensor, precision),
            spec_t(column),
            1e-12,
            &format!("matrix.{dtype}.gflops_efficiency"),
            "TFLOP/s",
        );
        if let Some(curve) = gemm.iter().find_map(|p| best_gemm_curve(x.cal, *p)) {
            gemm_curve(&mut f, x, dtype, curve);
        }
    }
    for (dtype, precision, column) in [
        ("float32", Precision::F32, "fp32_tflops"),
        ("float16", Precision::F16x2, "fp16_nontensor_tflops"),
    ] {
        calculon_rate(
            &mut f,
            &format!("vector.{dtype}.tflops"),
            flops(Family::Peak, precision),
            spec_t(column),
            1e-12,
            &format!("vector.{dtype}.gflops_efficiency"),
            "TFLOP/s",
        );
    }
    // Calculon: `GiB` times 1024**3, `GBps` times 1e9 (calculon/memory.py).
    push(
        &mut f,
        "mem1.GiB",
        "GiB",
        rate(x.capacity_bytes(), 1.0 / GIB),
    );
    calculon_rate(
        &mut f,
        "mem1.GBps",
        x.dram(),
        x.spec("mem_bandwidth_gbs"),
        1.0,
        "mem1.MB_efficiency",
        "GB/s",
    );
    if let Some(fit) = x.size_fit() {
        size_curve(&mut f, fit);
    }
    f.push(Field {
        key: "processing_mode".into(),
        value: Value::Text("roofline".into()),
        unit: "",
        source: Source::Choice("time = max(compute, memory), the roofline roofprobe measured"),
    });
    f
}

/// Calculon's system JSON (nested), with a `roofprobe_sources` map beside the sections, which
/// Calculon's `System` does not read.
pub(super) fn render(header: &[String], _x: &Inputs, fields: &[Field]) -> String {
    let mut root = serde_json::Map::new();
    let mut sources = serde_json::Map::new();
    for f in fields {
        let value: serde_json::Value =
            serde_json::from_str(&f.value.json()).unwrap_or(serde_json::Value::Null);
        let parts: Vec<&str> = f.key.split('.').collect();
        let mut node = &mut root;
        for p in &parts[..parts.len() - 1] {
            node = node
                .entry(p.to_string())
                .or_insert_with(|| serde_json::Value::Object(Default::default()))
                .as_object_mut()
                .expect("sections are objects");
        }
        node.insert(parts[parts.len() - 1].to_string(), value);
        sources.insert(f.key.clone(), comment(f).into());
    }
    sources.insert("_about".into(), header.join("; ").into());
    root.insert(
        "roofprobe_sources".into(),
        serde_json::Value::Object(sources),
    );
    let mut s = serde_json::to_string_pretty(&serde_json::Value::Object(root))
        .unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::super::tests::{a100, close};
    use super::super::*;
    use super::*;
    use crate::analysis::calibration::FromRecords;
    use crate::analysis::roofline::tests::synthetic_run;

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
        use crate::analysis::roofline::tests::gemm_row;
        use crate::cases::gemm::Shape;
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
            source.contains("measured: gemm/ptx/f16.f32: 2 sizes from 2 GEMMs"),
            "{source}"
        );
        assert!(source.contains("carried down (not measured)"), "{source}");
        // an A100 has a TF32 figure on its sheet: float32 is the tensor rate, its efficiency
        // from the f32 GEMM against it
        assert_eq!(json["matrix"]["float32"]["tflops"], 156.0);
    }

    /// Shapes of one size (2·256³ = 2·1·4096·4096 flops) give Calculon one point, the lowest
    /// efficiency measured there, whichever order the shapes sort in; the source counts the
    /// sizes written and the GEMMs they came from. The Xeon run b3b7c787 kept 256³ (0.4266) over
    /// the GEMV beside it (0.0161), carried that down to 0, and said 59 sizes for 24.
    #[test]
    fn calculon_takes_the_lowest_efficiency_where_shapes_share_a_size() {
        use crate::analysis::roofline::tests::gemm_row;
        use crate::cases::gemm::Shape;
        let gemv = Shape::new(1, 4096, 4096);
        assert_eq!(gemv.flops(), Shape::square(256).flops());
        for (square, vector) in [(5_000.0, 200.0), (200.0, 5_000.0)] {
            let mut rows = synthetic_run();
            rows.extend([
                gemm_row("simd", Precision::F32, Shape::square(256), square, true),
                gemm_row("simd", Precision::F32, gemv, vector, true),
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
            assert!((curve[1].1 - 200.0 / rate).abs() < 1e-12, "{curve:?}");
            assert_eq!(curve[2], (0.0, curve[1].1));
            let slowest = if square < vector {
                "256x256x256"
            } else {
                "1x4096x4096"
            };
            let source = json["roofprobe_sources"]["matrix.float32.gflops_efficiency"]
                .as_str()
                .unwrap();
            assert!(
                source.contains(&format!(
                    "measured: gemm/simd/f32: 2 sizes from 3 GEMMs (where shapes share a size, \
                     the lowest efficiency), {slowest} to 1024x1024x1024; below {slowest}"
                )),
                "{source}"
            );
        }
    }

    #[test]
    fn a_measured_figure_above_the_rated_one_is_the_rate_at_efficiency_one() {
        let mut f = Vec::new();
        let rated = Some((
            1000.0,
            Source::Spec {
                entry: "X".into(),
                column: "c".into(),
            },
        ));
        calculon_rate(
            &mut f,
            "m",
            Some((1200.0, "case".into())),
            rated,
            1.0,
            "e",
            "",
        );
        close(&f[0].value, 1200.0);
        assert_eq!(f[1].value, Value::Curve(vec![(0.0, 1.0)]));
    }
}
