//! AIConfigurator's system YAML (`systems/<name>.yaml` of aiconfigurator-core): sections `gpu`
//! and `node`, and a top-level `data_dir` (the perf data's folder, relative to the systems
//! folder). Units as its own files and code take them: `gpu.mem_bw` in B/s (the rated figure;
//! `gpu.mem_bw_empirical_scaling_factor` the observed fraction of it, and
//! `gpu.mem_empirical_constant_latency` seconds: its memory op is
//! `bytes / (mem_bw · factor) + constant` in its EMPIRICAL mode, `bytes / mem_bw` in SOL),
//! `gpu.mem_capacity` bytes, the tensor rates in FLOP/s (OP/s for int8), `gpu.power` W,
//! `gpu.sm_version` as `80` for 8.0, the node's bandwidths in B/s per GPU and direction,
//! `node.p2p_latency` seconds. Every field carries a comment with its unit and source.
//!
//! It must not print, read files or measure.

use super::{comment, push, rate, sig, Field, Inputs, Source, Value};
use crate::cases::{Family, Precision};
use std::fmt::Write as _;

/// The keys this format writes or `--set` may give, in the file's order.
pub(super) const KEYS: &[&str] = &[
    "data_dir",
    "gpu.mem_bw",
    "gpu.mem_bw_empirical_scaling_factor",
    "gpu.mem_empirical_constant_latency",
    "gpu.mem_capacity",
    "gpu.bfloat16_tc_flops",
    "gpu.int8_tc_flops",
    "gpu.fp8_tc_flops",
    "gpu.power",
    "gpu.sm_version",
    "node.num_gpus_per_node",
    "node.inter_node_bw",
    "node.intra_node_bw",
    "node.pcie_bw",
    "node.p2p_latency",
];

/// Keys the tool does without.
pub(super) const OPTIONAL: &[&str] = &[
    "gpu.mem_empirical_constant_latency",
    "gpu.mem_bw_empirical_scaling_factor",
];

pub(super) fn fields(x: &Inputs) -> Vec<Field> {
    let mut f = Vec::new();
    // mem_bw is the tool's rated figure and the scaling factor its observed fraction of it
    // (AIConfigurator's own files say so): with a sheet entry, the sheet's rate and measured /
    // rated; without one, the measured rate itself and a factor of 1.
    let dram = x.dram();
    let spec_bw = x.spec("mem_bandwidth_gbs");
    // mem_bw is the rated figure: the sheet's, else the measured DRAM ceiling
    let rated: Option<(f64, Source)> = match (&dram, spec_bw) {
        (Some(_), Some((spec, src))) => {
            Some((spec, src.rated("gpu.mem_bw_empirical_scaling_factor")))
        }
        (None, Some((spec, src))) => Some((spec, src)),
        (Some((gbps, case)), None) => Some((*gbps, Source::Measured(case.clone()))),
        (None, None) => None,
    };
    if let Some((rated_gbps, src)) = &rated {
        f.push(Field {
            key: "gpu.mem_bw".into(),
            value: Value::Num(rated_gbps * 1e9),
            unit: "B/s",
            source: src.clone(),
        });
    }
    // AIConfigurator's memory op: bytes / (mem_bw · scaling_factor) + constant_latency
    // (aiconfigurator-core `mem_op_latency_ms`): the size sweep's fit is exactly that line, so
    // mem_bw · factor is its asymptotic bandwidth and the constant its `a`.
    match (x.size_fit(), &rated, &dram) {
        (Some(fit), Some((rated_gbps, _)), _) => {
            f.push(Field {
                key: "gpu.mem_bw_empirical_scaling_factor".into(),
                value: Value::Num(fit.asymptotic_gbps / rated_gbps),
                unit: "fraction",
                source: Inputs::size_fit_source(
                    fit,
                    &format!("BW / mem_bw {} GB/s", sig(*rated_gbps)),
                ),
            });
            f.push(Field {
                key: "gpu.mem_empirical_constant_latency".into(),
                value: Value::Num(fit.constant_secs),
                unit: "s",
                source: Inputs::size_fit_source(fit, "a"),
            });
        }
        (None, Some((spec, _)), Some((gbps, case))) if x.sheet.is_some() => {
            f.push(Field {
                key: "gpu.mem_bw_empirical_scaling_factor".into(),
                value: Value::Num(gbps / spec),
                unit: "fraction",
                source: Source::Measured(format!("{case} {} GB/s / sheet {spec} GB/s", sig(*gbps))),
            });
        }
        (None, Some(_), Some(_)) => {
            f.push(Field {
                key: "gpu.mem_bw_empirical_scaling_factor".into(),
                value: Value::Num(1.0),
                unit: "fraction",
                source: Source::Choice("mem_bw is already the measured rate"),
            });
        }
        _ => {}
    }
    push(
        &mut f,
        "gpu.mem_capacity",
        "bytes",
        x.capacity_bytes()
            .map(|(b, s)| (Value::Int(b.round() as u64), s)),
    );
    push(
        &mut f,
        "gpu.bfloat16_tc_flops",
        "FLOP/s",
        rate(
            x.flops(Family::Tensor, Precision::Bf16F32, "bf16_tensor_tflops"),
            1.0,
        ),
    );
    push(
        &mut f,
        "gpu.int8_tc_flops",
        "OP/s",
        rate(
            x.flops(Family::Tensor, Precision::S8S32, "int8_tensor_tops"),
            1.0,
        ),
    );
    push(
        &mut f,
        "gpu.fp8_tc_flops",
        "FLOP/s",
        rate(
            x.flops(Family::Tensor, Precision::E4m3F32, "fp8_tensor_tflops"),
            1.0,
        ),
    );
    push(&mut f, "gpu.power", "W", rate(x.spec("tdp_w"), 1.0));
    push(
        &mut f,
        "gpu.sm_version",
        "",
        x.sm_version().map(|(v, s)| (Value::Int(v), s)),
    );
    push(
        &mut f,
        "node.intra_node_bw",
        "B/s per direction",
        rate(x.nvlink_per_direction_gbs(), 1e9),
    );
    push(
        &mut f,
        "node.pcie_bw",
        "B/s per direction",
        rate(x.pcie_per_direction_gbs(), 1e9),
    );
    f
}

/// AIConfigurator's YAML: sections `gpu` and `node`, top-level `data_dir`; every field with a
/// comment saying its unit and source (YAML comments are what that format allows).
pub(super) fn render(header: &[String], _x: &Inputs, fields: &[Field]) -> String {
    let mut out = String::new();
    for h in header {
        let _ = writeln!(out, "# {h}");
    }
    let _ = writeln!(
        out,
        "# data_dir, node.num_gpus_per_node, node.inter_node_bw and node.p2p_latency describe \
         the perf data and the node, which no run measures: give them with --set"
    );
    let mut section = "";
    for f in fields {
        let (sec, key) = f.key.split_once('.').unwrap_or(("", f.key.as_str()));
        if sec != section {
            if !sec.is_empty() {
                let _ = writeln!(out, "{sec}:");
            }
            section = sec;
        }
        let indent = if sec.is_empty() { "" } else { "  " };
        let _ = writeln!(out, "{indent}{key}: {} # {}", f.value.json(), comment(f));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{a100, close, field};
    use super::super::*;

    #[test]
    fn aiconfigurator_gets_bytes_per_second_and_the_measured_fraction() {
        let sets = [("node.num_gpus_per_node".to_string(), Value::Int(8))];
        let e = a100(Format::Aiconfigurator, &sets);
        close(&field(&e, "gpu.mem_bw").value, 2039e9);
        // the rated figure the format asks for, and where the measurement went: not "not
        // measured", which the run's DRAM row contradicts
        let said = field(&e, "gpu.mem_bw").source.describe();
        assert!(field(&e, "gpu.mem_bw").source.is_spec());
        assert!(
            said.contains("the rated figure")
                && said.contains("in gpu.mem_bw_empirical_scaling_factor")
                && !said.contains("not measured"),
            "{said}"
        );
        close(
            &field(&e, "gpu.mem_bw_empirical_scaling_factor").value,
            1500.0 / 2039.0,
        );
        close(&field(&e, "gpu.mem_capacity").value, 80.0 * GIB);
        close(&field(&e, "gpu.bfloat16_tc_flops").value, 312e12);
        close(&field(&e, "gpu.sm_version").value, 80.0);
        close(&field(&e, "node.pcie_bw").value, 32e9);
        close(&field(&e, "node.intra_node_bw").value, 300e9);
        assert_eq!(field(&e, "node.num_gpus_per_node").source, Source::Given);
        // the YAML says each field's source beside it
        let line = |key: &str| {
            e.text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{key}:")))
                .unwrap_or_else(|| panic!("no {key} in\n{}", e.text))
                .to_string()
        };
        assert!(
            line("bfloat16_tc_flops").contains("# FLOP/s; spec sheet \"A100 80GB SXM4\""),
            "{}",
            e.text
        );
        assert!(line("mem_bw_empirical_scaling_factor").contains("measured: stream/"));
        assert!(line("num_gpus_per_node").ends_with("given with --set"));
        assert!(e.text.contains("\ngpu:\n") && e.text.contains("\nnode:\n"));
        // no FP8 on an A100: neither measured nor on the sheet, so left out
        assert_eq!(
            e.missing,
            [
                "data_dir",
                "gpu.fp8_tc_flops",
                "node.inter_node_bw",
                "node.p2p_latency"
            ]
        );
    }
}
