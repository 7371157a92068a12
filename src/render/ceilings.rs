//! The roofline in words: a calibration in, the text `run` and `report` print after the
//! measurement table: each ceiling against its spec, the ridge points, and every point's
//! bound and distance to the roof.

use crate::analysis::calibration::Calibration;
use crate::analysis::roofline::{batch_turns, Bound, MemoryLevel};
use crate::cases::ops;
use crate::render::svg::{arithmetic, bandwidth};
use crate::render::table::figure;
use crate::units::bytes;
use std::fmt::Write;

fn percent(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{:.1}%", x * 100.0))
}

/// The roofline summary of one calibration: the ceilings against their specs, the notes on
/// them, the points, the batch sweeps' turns and the rows not fitted.
pub fn render(cal: &Calibration) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nRoofline of {}", cal.title());
    let _ = writeln!(out, "spec: {}", cal.spec.describe());
    let _ = writeln!(
        out,
        "{:<16} {:>14}  {:<30} {:>14} {:>10} {:>8} {:>10}",
        "ceiling", "measured", "set by", "spec", "efficiency", "ridge", "spec ridge"
    );
    // Why a ceiling has no spec, each reason once, in order of first appearance.
    let mut reasons: Vec<String> = Vec::new();
    write_memory_ceilings(&mut out, cal, &mut reasons);
    write_compute_ceilings(&mut out, cal, &mut reasons);
    write_ceiling_notes(&mut out, cal, &reasons);
    write_points(&mut out, cal);
    write_batch_turns(&mut out, cal);
    if !cal.excluded.is_empty() {
        let _ = writeln!(out, "not fitted ({}):", cal.excluded.len());
        for e in &cal.excluded {
            let _ = writeln!(out, "  {e}");
        }
    }
    out
}

/// Keeps `basis` among the `reasons` once.
fn note(reasons: &mut Vec<String>, basis: &str) {
    if !reasons.iter().any(|r| r == basis) {
        reasons.push(basis.to_string());
    }
}

/// A ceiling set by a row the run flagged says so (the summary after the table says why).
fn suspect(cal: &Calibration, case: &Option<String>) -> &'static str {
    if case.as_deref().is_some_and(|c| cal.is_suspect(c)) {
        "  SUSPECT"
    } else {
        ""
    }
}

/// A line per memory ceiling, and under a cache ceiling the sweep set, its plateau.
fn write_memory_ceilings(out: &mut String, cal: &Calibration, reasons: &mut Vec<String>) {
    for m in &cal.memory_ceilings {
        let flag = if m.above_spec { "  ABOVE SPEC" } else { "" };
        let flag = format!("{flag}{}", suspect(cal, &m.case));
        if m.spec_gbps.is_none() {
            note(reasons, &m.spec_basis);
        }
        let line = format!(
            "{:<16} {:>14}  {:<30} {:>14} {:>10}{flag}",
            m.level.as_str(),
            m.gbps.map_or("-".into(), bandwidth),
            m.case.as_deref().unwrap_or("no valid row"),
            m.spec_gbps.map_or("-".into(), bandwidth),
            percent(m.efficiency),
        );
        let _ = writeln!(out, "{}", line.trim_end());
        // A cache ceiling the sweep set says which plateau, and what it was matched to.
        if let Some(p) = &m.plateau {
            let reported = p
                .reported_bytes
                .map_or_else(String::new, |b| format!(" (reported {})", bytes(b)));
            let edge = p
                .edge_bytes
                .map_or_else(String::new, |e| format!(", edge at {}", bytes(e)));
            let _ = writeln!(
                out,
                "  {} from the sweep's plateau {} .. {}{edge}, matched to {}{reported}",
                m.level.as_str(),
                bytes(p.from_bytes),
                bytes(p.to_bytes),
                p.matched
            );
        }
    }
}

/// A line per compute ceiling, with its ridge points against DRAM, the roof the points are
/// held against.
fn write_compute_ceilings(out: &mut String, cal: &Calibration, reasons: &mut Vec<String>) {
    for c in &cal.compute_ceilings {
        let flag = if c.above_spec { "  ABOVE SPEC" } else { "" };
        let flag = format!("{flag}{}", suspect(cal, &c.case));
        if c.spec_gflops.is_none() {
            note(reasons, &c.spec_basis);
        }
        let ridge = cal.ridge_points.iter().find(|r| {
            r.memory == MemoryLevel::Dram && r.family == c.family && r.precision == c.precision
        });
        let line = format!(
            "{:<16} {:>14}  {:<30} {:>14} {:>10} {:>8} {:>10}{flag}",
            c.label(),
            c.gflops.map_or("-".into(), |v| arithmetic(v, c.precision)),
            c.case.as_deref().unwrap_or("not measured"),
            c.spec_gflops
                .map_or("-".into(), |v| arithmetic(v, c.precision)),
            percent(c.efficiency),
            figure(ridge.and_then(|r| r.flop_per_byte)),
            figure(ridge.and_then(|r| r.spec_flop_per_byte)),
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// The notes under the ceilings: what a ridge is, why a ceiling has no spec, what ABOVE SPEC
/// means where one is.
fn write_ceiling_notes(out: &mut String, cal: &Calibration, reasons: &[String]) {
    if !cal.compute_ceilings.is_empty() {
        // integer types count operations, not floating-point ones
        let unit = if cal
            .compute_ceilings
            .iter()
            .any(|c| c.precision.is_integer())
        {
            "FLOP/byte (OP/byte for integer types)"
        } else {
            "FLOP/byte"
        };
        let _ = writeln!(
            out,
            "  (ridge: {unit} where the DRAM roof meets the ceiling, measured and spec)"
        );
    }
    for r in reasons {
        let _ = writeln!(out, "  ({r})");
    }
    if cal.memory_ceilings.iter().any(|m| m.above_spec)
        || cal.compute_ceilings.iter().any(|c| c.above_spec)
    {
        let _ = writeln!(
            out,
            "  ABOVE SPEC: a measurement exceeds the sheet (clocks above the rated boost, or a counting error); it is kept, not clipped"
        );
    }
}

/// Every point's bound and distance to its roof, after a count of each bound.
fn write_points(out: &mut String, cal: &Calibration) {
    if cal.points.is_empty() {
        return;
    }
    let memory = cal
        .points
        .iter()
        .filter(|p| p.bound == Bound::Memory)
        .count();
    let compute = cal
        .points
        .iter()
        .filter(|p| p.bound == Bound::Compute)
        .count();
    let _ = writeln!(
        out,
        "points: {memory} memory-bound, {compute} compute-bound"
    );
    for p in &cal.points {
        let line = format!(
            "  {:<30} {:>8} {:<6} {:>14}  {:<13} {:>6} of roof{}",
            p.case,
            figure(Some(p.flop_per_byte)),
            format!("{}/B", ops(p.precision)),
            arithmetic(p.gflops, p.precision),
            p.bound.as_str(),
            percent(p.fraction_of_roof),
            if p.above_roof {
                "  ABOVE ROOF (beyond the noise)"
            } else {
                ""
            },
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// Each GEMM batch sweep's turn beside its ridge.
fn write_batch_turns(out: &mut String, cal: &Calibration) {
    let turns = batch_turns(&cal.points, &cal.ridge_points);
    if turns.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "batch sweeps: turn = best rate / GB/s at the smallest M (where a bandwidth line meets \
         a flat top), beside the ridge"
    );
    for t in &turns {
        let name = format!(
            "gemm/{}/{}/Mx{}x{}",
            t.kernel, t.precision, t.weight.0, t.weight.1
        );
        let ratio = t.ridge.map_or_else(
            || "no ridge".to_string(),
            |r| format!("{:.2}x the ridge", t.flop_per_byte / r),
        );
        let line = format!(
            "  {:<34} {:>2} points  turn {:>8} {:<6}  ridge {:>8}  {ratio}",
            name,
            t.points,
            figure(Some(t.flop_per_byte)),
            format!("{}/B", ops(t.precision)),
            figure(t.ridge),
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::calibration::FromRecords;
    use crate::analysis::fixtures::synthetic_run;

    /// Each batch sweep gets a line with its turn, its ridge and their ratio.
    #[test]
    fn batch_sweeps_say_where_they_turn() {
        let rows = crate::analysis::fixtures::synthetic_run_with_batch_sweeps();
        let cal = Calibration::from_records(&rows, None).unwrap();
        let text = render(&cal);
        let line = |start: &str| {
            text.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no {start:?} in\n{text}"))
                .to_string()
        };
        assert!(line("batch sweeps: turn = ").contains("beside the ridge"));
        let simd = line("  gemm/simd/f32/Mx4096x4096 ");
        assert!(
            simd.contains(" 4 points  turn     10.0 FLOP/B  ridge     10.0  1.00x the ridge"),
            "{simd}"
        );
        let crate_line = line("  gemm/gemm/f32/Mx4096x4096 ");
        assert!(crate_line.ends_with("2.00x the ridge"), "{crate_line}");
        // a single point turns nowhere
        assert!(!text.contains("Mx14336x4096"), "{text}");
    }

    /// Integer types count operations: an integer point's intensity is OP/B (its rate GOP/s),
    /// and the ridge note says so where an integer ceiling is listed; a float point stays
    /// FLOP/B.
    #[test]
    fn integer_points_and_ridges_say_op_per_byte() {
        use crate::cases::{Family, Param, Precision};
        let mut rows = synthetic_run();
        let bytes: u64 = 8 << 20;
        for (family, precision, param, (b, flops)) in [
            (
                Family::Intensity,
                Precision::I32,
                Some(Param::Count(4)),
                (bytes, 4 << 20),
            ),
            (Family::Peak, Precision::I32, None, (0, 1 << 40)),
        ] {
            rows.push(crate::analysis::fixtures::row(
                family,
                "fma",
                precision,
                param,
                (b, flops),
                1e-3,
                true,
            ));
        }
        let text = render(&Calibration::from_records(&rows, None).unwrap());
        let point = |case: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("  {case} ")))
                .unwrap_or_else(|| panic!("no {case} in\n{text}"))
                .to_string()
        };
        let int = point("intensity/fma/i32/4");
        assert!(
            int.contains(" 0.50 OP/B  ") && int.contains("GOP/s"),
            "{int}"
        );
        assert!(!int.contains("FLOP"), "{int}");
        assert!(
            point("intensity/fma_chain/f32/4").contains(" FLOP/B "),
            "{text}"
        );
        assert!(
            text.contains("(ridge: FLOP/byte (OP/byte for integer types) where the DRAM roof"),
            "{text}"
        );
    }

    #[test]
    fn ceilings_table_snapshot() {
        let mut rows = synthetic_run();
        // the tensor row at 400 TFLOP/s, above the sheet's 312
        let tensor = rows
            .iter_mut()
            .find(|r| r.kernel == "mma_m16n8k16")
            .unwrap();
        let flops = tensor.flops as f64;
        crate::analysis::fixtures::retime(tensor, flops / 400_000e9);
        // the f32 peak row flagged, a sweep point far above its roof (three times its rate)
        rows.iter_mut()
            .find(|r| r.case_id() == "peak/fma/f32")
            .unwrap()
            .flags = "high_cv(9.0%)".into();
        let point = rows
            .iter_mut()
            .find(|r| r.case_id() == "intensity/fma_chain/f32/1")
            .unwrap();
        let secs = point.time_median_s.unwrap() / 3.0;
        crate::analysis::fixtures::retime(point, secs);
        let cal = Calibration::from_records(&rows, None).unwrap();
        let line = |start: &str| {
            render(&cal)
                .lines()
                .find(|l| l.starts_with(start))
                .unwrap()
                .to_string()
        };
        assert!(line("f32 ").ends_with("  SUSPECT"), "{}", line("f32 "));
        assert!(!line("DRAM").contains("SUSPECT"), "{}", line("DRAM"));
        assert!(
            line("  intensity/fma_chain/f32/1 ").ends_with("ABOVE ROOF (beyond the noise)"),
            "{}",
            line("  intensity/fma_chain/f32/1 ")
        );
        let text = render(&cal);
        let line = text
            .lines()
            .find(|l| l.starts_with("tensor f16.f32"))
            .unwrap();
        assert!(
            line.contains(" 128.2% ") && line.ends_with("ABOVE SPEC"),
            "{line}"
        );
        assert!(text.contains("spec: spec sheet \"A100 80GB SXM4\""));
        insta::assert_snapshot!("ceilings_table", text);
    }
}
