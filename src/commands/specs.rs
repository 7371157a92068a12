//! `roofprobe specs [NAME] [--compare A B]`: the embedded vendor spec table — every entry, one
//! entry with its notes and sources, or two side by side with ratios. Needs no GPU.
//!
//! Figures are printed as the table gives them (`40.0` stays `40.0`), under the table's own
//! column names, whose suffixes are the units.

use crate::cli::SpecsArgs;
use crate::commands::{emit, emit_json};
use crate::specs::{self, GpuSpec};
use crate::Result;
use std::fmt::Write;

/// Columns that are text, not figures: shown without a ratio, and long ones after the table.
const LONG_TEXT: [&str; 3] = ["sparsity_note", "notes", "source"];

fn dash(v: Option<&str>) -> &str {
    v.unwrap_or("-")
}

/// The whole table, one line per entry.
pub fn list(db: &[GpuSpec]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<20} {:<28} {:>4} {:>4} {:<7} {:>6} {:>6} {:>6} {:>6} {:>10} {:>10}",
        "device",
        "driver reports",
        "cc",
        "SMs",
        "memory",
        "GB",
        "GB/s",
        "fp64",
        "fp32",
        "fp16 TC/32",
        "fp16 TC/16"
    );
    for s in db {
        let f = |v: &Option<specs::Figure>| v.as_ref().map_or("-", |f| f.text.as_str()).to_string();
        let _ = writeln!(
            out,
            "{:<20} {:<28} {:>4} {:>4} {:<7} {:>6} {:>6} {:>6} {:>6} {:>10} {:>10}",
            s.device,
            s.nvidia_smi_name,
            s.compute_capability,
            f(&s.sm_count),
            s.memory_type,
            f(&s.memory_gb),
            f(&s.mem_bandwidth_gbs),
            f(&s.fp64_tflops),
            f(&s.fp32_tflops),
            f(&s.fp16_tensor_fp32acc_tflops),
            f(&s.fp16_tensor_fp16acc_tflops),
        );
    }
    let _ = writeln!(
        out,
        "\n{} entries. Dense peaks in TFLOP/s (fp16 TC/32: tensor f16 with f32 accumulate, half rate \
         on GeForce; /16: f16 accumulate). `roofprobe specs NAME` shows one entry with notes and sources.",
        db.len()
    );
    out
}

/// One entry: every column, then its notes and sources.
pub fn show(s: &GpuSpec) -> String {
    let mut out = String::new();
    for (k, v) in s.fields() {
        if LONG_TEXT.contains(&k) {
            continue;
        }
        let _ = writeln!(out, "{k:<28} {}", dash(v));
    }
    for (k, v) in s.fields() {
        if LONG_TEXT.contains(&k) {
            let _ = writeln!(out, "\n{k}: {}", dash(v));
        }
    }
    out
}

/// Two entries side by side: each column's figures verbatim, and B / A where both are figures.
pub fn compare(a: &GpuSpec, b: &GpuSpec) -> String {
    let mut out = String::new();
    let (fa, fb) = (a.fields(), b.fields());
    let short = |f: &[(&str, Option<&str>)]| -> usize {
        f.iter()
            .filter(|(k, _)| !LONG_TEXT.contains(k))
            .map(|(_, v)| dash(*v).chars().count())
            .max()
            .unwrap_or(1)
    };
    let (wa, wb) = (short(&fa).max(3), short(&fb).max(3));
    let _ = writeln!(
        out,
        "{:<28} {:<wa$}  {:<wb$}  {:>7}",
        "column", "A", "B", "B/A"
    );
    for ((k, va), (_, vb)) in fa.iter().zip(&fb) {
        if LONG_TEXT.contains(k) {
            continue;
        }
        let ratio = match (a.figure(k), b.figure(k)) {
            (Some(x), Some(y)) if x > 0.0 => format!("{:.2}x", y / x),
            _ => String::new(),
        };
        let line = format!("{k:<28} {:<wa$}  {:<wb$}  {ratio:>7}", dash(*va), dash(*vb));
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for ((k, va), (_, vb)) in fa.iter().zip(&fb) {
        if LONG_TEXT.contains(k) {
            let _ = writeln!(out, "\n{k}:\n  A: {}\n  B: {}", dash(*va), dash(*vb));
        }
    }
    out
}

/// One entry as a JSON object: every column by its name, figures as numbers (the sheet's
/// value), text as strings, blanks as null.
pub fn entry_json(s: &GpuSpec) -> serde_json::Value {
    let object = s
        .fields()
        .into_iter()
        .map(|(k, v)| {
            let value = match (s.figure(k), v) {
                (Some(x), _) => serde_json::json!(x),
                (None, Some(text)) => serde_json::json!(text),
                (None, None) => serde_json::Value::Null,
            };
            (k.to_string(), value)
        })
        .collect();
    serde_json::Value::Object(object)
}

/// Two entries and, for every column both give a figure, B / A.
pub fn compare_json(a: &GpuSpec, b: &GpuSpec) -> serde_json::Value {
    let ratios: serde_json::Map<String, serde_json::Value> = a
        .fields()
        .into_iter()
        .filter_map(|(k, _)| match (a.figure(k), b.figure(k)) {
            (Some(x), Some(y)) if x > 0.0 => Some((k.to_string(), serde_json::json!(y / x))),
            _ => None,
        })
        .collect();
    serde_json::json!({ "a": entry_json(a), "b": entry_json(b), "b_over_a": ratios })
}

pub fn specs(args: &SpecsArgs) -> Result<i32> {
    let json = |v: serde_json::Value| {
        serde_json::to_string_pretty(&v)
            .map(|t| t + "\n")
            .map_err(|e| crate::Error::Internal(format!("serialising the spec table: {e}")))
    };
    if let Some(pair) = &args.compare {
        let (a, b) = (specs::find(&pair[0])?, specs::find(&pair[1])?);
        if args.json {
            emit_json(&json(compare_json(a, b))?)?;
        } else {
            emit(&compare(a, b))?;
        }
    } else if let Some(name) = &args.name {
        let entry = specs::find(name)?;
        if args.json {
            emit_json(&json(entry_json(entry))?)?;
        } else {
            emit(&show(entry))?;
        }
    } else {
        let db = specs::database()?;
        if args.json {
            emit_json(&json(serde_json::Value::Array(
                db.iter().map(entry_json).collect(),
            ))?)?;
        } else {
            emit(&list(db))?;
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_prints_the_vendor_figures_verbatim() {
        let a = specs::find("RTX 3090").unwrap();
        let b = specs::find("A100 80GB SXM4").unwrap();
        let text = compare(a, b);
        for (k, v) in a.fields().iter().zip(b.fields()) {
            let (column, va) = k;
            let (_, vb) = v;
            if LONG_TEXT.contains(column) {
                let block = format!("{column}:\n  A: {}\n  B: {}", dash(*va), dash(vb));
                assert!(text.contains(&block), "{column}");
                continue;
            }
            let line = text
                .lines()
                .find(|l| l.split_whitespace().next() == Some(column))
                .unwrap_or_else(|| panic!("no line for {column}"));
            assert!(
                line.contains(dash(*va)) && line.contains(dash(vb)),
                "{line}"
            );
        }
        let line = |c: &str| text.lines().find(|l| l.starts_with(c)).unwrap().to_string();
        assert!(
            line("mem_bandwidth_gbs").ends_with("2.18x"),
            "{}",
            line("mem_bandwidth_gbs")
        );
        assert!(line("fp16_tensor_fp32acc_tflops").contains(" 71 "));
        assert!(
            line("fp64_tflops").trim_end().ends_with("9.7"),
            "blank A: no ratio"
        );
        insta::assert_snapshot!("specs_compare_3090_a100", text);
    }

    #[test]
    fn json_has_numbers_text_and_nulls() {
        let t4 = entry_json(specs::find("T4").unwrap());
        assert_eq!(t4["mem_bandwidth_gbs"], serde_json::json!(320.0));
        assert_eq!(t4["fp64_tflops"], serde_json::Value::Null);
        assert_eq!(t4["device"], serde_json::json!("T4"));
        assert_eq!(
            t4.as_object().unwrap().len(),
            specs::find("T4").unwrap().fields().len()
        );
        let pair = compare_json(
            specs::find("RTX 3090").unwrap(),
            specs::find("A100 80GB SXM4").unwrap(),
        );
        let ratio = pair["b_over_a"]["mem_bandwidth_gbs"].as_f64().unwrap();
        assert!((ratio - 2039.0 / 936.0).abs() < 1e-12, "{ratio}");
        assert_eq!(pair["b"]["device"], serde_json::json!("A100 80GB SXM4"));
    }

    #[test]
    fn list_and_show() {
        let db = specs::database().unwrap();
        let l = list(db);
        assert_eq!(l.lines().count(), db.len() + 3);
        assert!(l.contains("RTX 3090 Ti"));
        let s = show(specs::find("T4").unwrap());
        assert!(s.contains("mem_bandwidth_gbs            320\n"));
        assert!(s.contains("fp64_tflops                  -\n"));
        assert!(s.contains("\nsource: https://www.nvidia.com/content/dam/"));
    }
}
