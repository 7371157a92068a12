//! Calculon's system JSON (`systems/<name>.json`, read by `calculon.System`): engines `matrix`
//! and `vector`, each per data type (`float16`, `bfloat16`, `float8`, `float32`) a rate
//! `tflops` (TFLOP/s) and `gflops_efficiency` (`[[GFLOP, efficiency], …]`, sizes strictly
//! falling to 0, each efficiency in (0, 1]: an op of F flop runs at `tflops × efficiency` of
//! the first entry whose size F reaches; an execution in a type needs it in both engines);
//! memories `mem1` (the model's) and `mem2` (where it offloads) with `GiB` (times 1024**3),
//! `GBps` (times 10^9) and `MB_efficiency` (`[[MB, efficiency], …]`, 10^6 bytes, the same
//! lookup); `processing_mode` (`roofline`: max of compute and memory time; `no_overlap`: their
//! sum); `networks`, tiers of exactly `bandwidth` (GB/s), `efficiency`, `size` (devices),
//! `latency` (s), `ops`, `must_be_filled` and `processor_usage` (calculon/network.py). `System()`
//! refuses a file without any of them. A `roofprobe_sources` map beside the sections, which
//! Calculon does not read, says each field's unit and source.
//!
//! Its `roofline` mode divides by zero in its statistics on any memory-bound run
//! (`Llm.get_act_offload_bw_req`: a block's time less its memory time is 0), which a decode
//! step is: the export writes `no_overlap`, its own systems' mode.
//!
//! It must not print, read files or measure.

use super::{
    comment, default, may, needs, push, rate, sig, Field, Inputs, Key, Kind, Source, Value, GIB,
};
use super::{Measure, SAME, TERA};
use crate::analysis::calibration::Calibration;
use crate::cases::{Family, Precision};
use roofprobe_calibration::{GemmEfficiency, GemmEfficiencyPoint, SizeEfficiency};

/// The keys this format writes or `--set` may give, in the file's order. (Each rate's
/// efficiency curve is written beside it; `networks` is a structure `--set` cannot give.)
pub(super) const KEYS: &[Key] = &[
    needs(
        "matrix.float16.tflops",
        Kind::Positive(Measure::Compute, TERA),
    ),
    needs(
        "matrix.bfloat16.tflops",
        Kind::Positive(Measure::Compute, TERA),
    ),
    may(
        "matrix.float8.tflops",
        Kind::Positive(Measure::Compute, TERA),
    ),
    may(
        "matrix.float32.tflops",
        Kind::Positive(Measure::Compute, TERA),
    ),
    needs(
        "vector.float32.tflops",
        Kind::Positive(Measure::Compute, TERA),
    ),
    needs(
        "vector.float16.tflops",
        Kind::Positive(Measure::Compute, TERA),
    ),
    needs(
        "vector.bfloat16.tflops",
        Kind::Positive(Measure::Compute, TERA),
    ),
    needs("mem1.GiB", Kind::Positive(Measure::Memory, GIB)),
    needs("mem1.GBps", Kind::Positive(Measure::Bandwidth, SAME)),
    needs("mem2.GiB", Kind::NonNegative(Measure::Memory, GIB)),
    needs("mem2.GBps", Kind::Positive(Measure::Bandwidth, SAME)),
    needs("processing_mode", Kind::OneOf(&["roofline", "no_overlap"])),
    needs("networks", Kind::Structure),
];

/// Calculon's own A100 system's tier-0 network latency, seconds, which no run measures.
const NETWORK_LATENCY_SECS: f64 = 1e-5;

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
        .and_then(|g| g.value.as_f64())
        .filter(|v| *v > 0.0)
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
    // A memory-bound product (a matrix-vector one, M = 1) is slow for its bytes, not its
    // arithmetic: its rate is no compute efficiency, and Calculon, which times a product's
    // bytes apart, would count its bandwidth twice (the Xeon run b3b7c787's 1×4096×4096 GEMV
    // gave 256³ 0.016 for its 0.43). Only the compute-bound sizes make the curve.
    let bound = compute_bound_points(x, curve);
    if bound.is_empty() {
        return;
    }
    let per_size = one_point_per_size(&bound);
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
            "gemm/{}/{}: {} sizes from {} compute-bound GEMMs (where shapes share a size, \
             the lowest efficiency; {} memory-bound left out), {} to {}; below {} its \
             efficiency carried down (not measured)",
            curve.kernel,
            curve.precision,
            per_size.len(),
            bound.len(),
            curve.points.len() - bound.len(),
            smallest.shape,
            largest.shape,
            smallest.shape
        )),
    });
}

/// The points of a GEMM curve right of the ridge: a product's intensity (its flops over the
/// bytes of A, B and C, each moved once) times the DRAM rate reaches the curve's compute
/// ceiling (each measured, else the sheet's). Every point where either is unknown.
fn compute_bound_points<'a>(x: &Inputs, curve: &'a GemmEfficiency) -> Vec<&'a GemmEfficiencyPoint> {
    let ceiling = curve.ceiling_gflops.or(curve.spec_gflops);
    let dram = x
        .dram()
        .map(|d| d.0)
        .or_else(|| x.spec("mem_bandwidth_gbs").map(|s| s.0));
    curve
        .points
        .iter()
        .filter(|p| match (ceiling, dram) {
            (Some(c), Some(b)) => {
                let bytes = crate::cases::gemm::matrix_bytes(curve.precision, p.shape) as f64;
                bytes > 0.0 && p.shape.flops() as f64 / bytes * b >= c
            }
            _ => true,
        })
        .collect()
}

/// A GEMM curve's points, one per size (GFLOP of the product), ascending: at a size several
/// shapes share, the one that ran slowest (the lowest efficiency; the first in the curve's
/// order among equal rates).
fn one_point_per_size<'a>(points: &[&'a GemmEfficiencyPoint]) -> Vec<&'a GemmEfficiencyPoint> {
    let mut sorted: Vec<&GemmEfficiencyPoint> = points.to_vec();
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
        ("bfloat16", Precision::Bf16x2, "fp16_nontensor_tflops"),
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
    // No tensor f32 and no GEMM measured (a host run without the GEMM family): matrices are
    // multiplied on the vector units, at the f32 peak.
    if !f.iter().any(|g| g.key == "matrix.float32.tflops") {
        calculon_rate(
            &mut f,
            "matrix.float32.tflops",
            flops(Family::Peak, Precision::F32),
            spec_t("fp32_tflops"),
            1e-12,
            "matrix.float32.gflops_efficiency",
            "TFLOP/s",
        );
    }
    // A 16-bit type nothing measured and no sheet gives (a CPU without 16-bit units) runs at
    // its float32 rate: Calculon refuses an execution in a type its engine lacks.
    for engine in ["matrix", "vector"] {
        for dtype in ["float16", "bfloat16"] {
            like_float32(&mut f, engine, dtype);
        }
    }
    // Calculon: `GiB` times 1024**3, `GBps` times 1e9 (calculon/memory.py); mem1 holds the
    // model, so its capacity is what a model may use (measured free)
    push(
        &mut f,
        "mem1.GiB",
        "GiB",
        rate(x.usable_memory_bytes(), 1.0 / GIB),
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
    // mem2, the tier Calculon offloads to: no run measures a second tier's capacity, so 0 GiB
    // (Calculon then refuses an execution that offloads, rather than assume host memory); its
    // rate the link to host memory
    push(
        &mut f,
        "mem2.GiB",
        "GiB",
        default(
            Value::Num(0.0),
            "no run measures the memory a device offloads to: 0, so Calculon refuses to \
             offload rather than assume one",
        ),
    );
    push(&mut f, "mem2.GBps", "GB/s", rate(x.host_link_gbs(), 1.0));
    if f.iter().any(|g| g.key == "mem2.GBps") {
        f.push(Field {
            key: "mem2.MB_efficiency".into(),
            value: Value::Curve(vec![(0.0, 1.0)]),
            unit: "[[MB, efficiency]]",
            source: Source::Choice("the link's asymptotic rate at every size"),
        });
    }
    f.push(Field {
        key: "processing_mode".into(),
        value: Value::Text("no_overlap".into()),
        unit: "",
        source: Source::Choice(
            "time = compute + memory, Calculon's own systems' mode; its `roofline` mode \
             divides by zero in its statistics on any memory-bound run \
             (Llm.get_act_offload_bw_req)",
        ),
    });
    if let Some(network) = network(x) {
        f.push(network);
    }
    f
}

/// The float32 engine's rate and curve as a 16-bit type's, where nothing gave that type one.
fn like_float32(f: &mut Vec<Field>, engine: &str, dtype: &str) {
    let rate_key = format!("{engine}.{dtype}.tflops");
    if f.iter().any(|g| g.key == rate_key) {
        return;
    }
    let from = format!("{engine}.float32.");
    let copies: Vec<Field> = f
        .iter()
        .filter(|g| g.key.starts_with(&from))
        .map(|g| Field {
            key: g.key.replacen(&from, &format!("{engine}.{dtype}."), 1),
            value: g.value.clone(),
            unit: g.unit,
            source: Source::Measured(format!(
                "{engine}.float32's, {} (no {dtype} rate measured or on a sheet: a device \
                 without 16-bit units computes 16-bit values at its f32 rate)",
                g.source.describe()
            )),
        })
        .collect();
    f.extend(copies);
}

/// Calculon's one network tier (it needs at least one): this device alone (`size` 1: nothing
/// measured a second device, and Calculon then refuses any parallel execution rather than
/// assume one), at the peer link's rate (NVLink per direction on the sheet, else the link to
/// host memory), Calculon's own A100 file's latency and collective scaling, the rate taken at
/// face value (efficiency 1) and no processor time spent on it.
fn network(x: &Inputs) -> Option<Field> {
    let (gbps, source) = x.peer_link_gbs()?;
    let tier = serde_json::json!([{
        "bandwidth": gbps,
        "efficiency": 1.0,
        "size": 1,
        "latency": NETWORK_LATENCY_SECS,
        "ops": {
            "p2p": [1.0, null],
            "reduce_scatter": [1.5, -1],
            "all_gather": [1.5, -1],
            "all_reduce": [2.0, -1]
        },
        "must_be_filled": false,
        "processor_usage": 0.0
    }]);
    Some(Field {
        key: "networks".into(),
        value: Value::Json(tier),
        unit: "[{bandwidth GB/s, latency s, size devices, ...}]",
        source: Source::Default(format!(
            "one tier of size 1, this device alone; its bandwidth {} GB/s is {}; its latency \
             and collective scaling Calculon's own A100 file's",
            sig(gbps),
            source.describe()
        )),
    })
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
    // the format's other tests, through its export, are in tests/export_calculon.rs
    use super::super::fixtures::close;
    use super::super::*;
    use super::*;

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
