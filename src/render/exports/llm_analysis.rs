//! llm-analysis's GPU config JSON (`gpu_configs/<name>.json`, read into its `GPUConfig`
//! dataclass, which refuses a key it does not know): a flat object. Units as its code takes
//! them: `mem_per_GPU_in_GB` in GiB (it multiplies by 1024**3), `hbm_bandwidth_in_GB_per_sec`
//! and `intra_node_bandwidth_in_GB_per_sec` in GB/s (10^9 B/s; intra-node per direction),
//! `intra_node_min_message_latency` seconds, `peak_fp16_TFLOPS` the 16-bit tensor rate in
//! TFLOP/s, `peak_i8_TFLOPS` TOP/s. The file cannot carry sources: `export` says them on stderr.
//!
//! It must not print, read files or measure.

use super::{push, rate, Field, Inputs, Source, Value, GIB};
use crate::cases::{Family, Precision};

/// The keys this format writes or `--set` may give, in the file's order.
pub(super) const KEYS: &[&str] = &[
    "name",
    "mem_per_GPU_in_GB",
    "hbm_bandwidth_in_GB_per_sec",
    "intra_node_bandwidth_in_GB_per_sec",
    "intra_node_min_message_latency",
    "peak_fp16_TFLOPS",
    "peak_i8_TFLOPS",
    "inter_node_bandwidth_in_GB_per_sec",
];

/// Keys the tool does without.
pub(super) const OPTIONAL: &[&str] = &["inter_node_bandwidth_in_GB_per_sec", "peak_i8_TFLOPS"];

pub(super) fn fields(x: &Inputs) -> Vec<Field> {
    let mut f = vec![Field {
        key: "name".into(),
        value: Value::Text(x.name()),
        unit: "",
        source: Source::Device(format!("device name `{}`", x.cal.device.name)),
    }];
    // llm-analysis multiplies mem_per_GPU_in_GB by 1024**3: it is GiB.
    push(
        &mut f,
        "mem_per_GPU_in_GB",
        "GiB",
        rate(x.capacity_bytes(), 1.0 / GIB),
    );
    push(
        &mut f,
        "hbm_bandwidth_in_GB_per_sec",
        "GB/s (10^9 B/s)",
        x.dram()
            .map(|(g, case)| (Value::Num(g), Source::Measured(case)))
            .or_else(|| rate(x.spec("mem_bandwidth_gbs"), 1.0)),
    );
    push(
        &mut f,
        "intra_node_bandwidth_in_GB_per_sec",
        "GB/s per direction",
        rate(x.nvlink_per_direction_gbs(), 1.0),
    );
    push(
        &mut f,
        "peak_fp16_TFLOPS",
        "TFLOP/s",
        rate(
            x.flops(
                Family::Tensor,
                Precision::F16F32,
                "fp16_tensor_fp32acc_tflops",
            ),
            1e-12,
        ),
    );
    push(
        &mut f,
        "peak_i8_TFLOPS",
        "TOP/s",
        rate(
            x.flops(Family::Tensor, Precision::S8S32, "int8_tensor_tops"),
            1e-12,
        ),
    );
    f
}

/// llm-analysis's GPU config: a flat JSON object. The tool builds `GPUConfig(**json)`, which
/// refuses any key it does not know, so the sources cannot go in the file: `export` says them
/// on stderr.
pub(super) fn render(_header: &[String], _x: &Inputs, fields: &[Field]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|f| {
            format!(
                "  {}: {}",
                Value::Text(f.key.clone()).json(),
                f.value.json()
            )
        })
        .collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{a100, close, field};
    use super::super::*;

    #[test]
    fn llm_analysis_gets_gib_gb_per_s_and_tflops_with_spec_fields_marked() {
        let e = a100(Format::LlmAnalysis, &[]);
        // measured
        close(&field(&e, "hbm_bandwidth_in_GB_per_sec").value, 1500.0);
        close(&field(&e, "peak_fp16_TFLOPS").value, 250.0);
        assert!(matches!(
            field(&e, "peak_fp16_TFLOPS").source,
            Source::Measured(_)
        ));
        // from the sheet, marked: llm-analysis multiplies by 1024**3, so 80 GB is 80 here
        close(&field(&e, "mem_per_GPU_in_GB").value, 80.0);
        close(&field(&e, "peak_i8_TFLOPS").value, 624.0);
        close(
            &field(&e, "intra_node_bandwidth_in_GB_per_sec").value,
            300.0,
        );
        let spec: Vec<&str> = e.spec_fields().iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            spec,
            [
                "mem_per_GPU_in_GB",
                "intra_node_bandwidth_in_GB_per_sec",
                "peak_i8_TFLOPS"
            ]
        );
        assert_eq!(e.missing, ["intra_node_min_message_latency"]);
        let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
        assert_eq!(json["hbm_bandwidth_in_GB_per_sec"], 1500.0);
        assert_eq!(json["name"], "nvidia-a100-sxm4-80gb");
    }
}
