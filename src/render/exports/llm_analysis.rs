//! llm-analysis's GPU config JSON (`gpu_configs/<name>.json`, read into its `GPUConfig`
//! dataclass, which refuses a key it does not know and needs every key without a default):
//! a flat object. Units as its code takes them: `mem_per_GPU_in_GB` in GiB (it multiplies by
//! 1024**3), `hbm_bandwidth_in_GB_per_sec` and `intra_node_bandwidth_in_GB_per_sec` in GB/s
//! (10^9 B/s; intra-node per direction), `intra_node_min_message_latency` seconds,
//! `peak_fp16_TFLOPS` the 16-bit tensor rate in TFLOP/s (it times every 16-bit product with
//! it), `peak_i8_TFLOPS` TOP/s (twice the 16-bit rate where absent),
//! `inter_node_bandwidth_in_GB_per_sec` GB/s (200 where absent). The file cannot carry sources:
//! `export` says them on stderr.
//!
//! It must not print, read files or measure.

use super::{default, may, needs, push, rate, Field, Inputs, Key, Kind, Source, Value, GIB};
use super::{Measure, SAME, TERA};
use crate::cases::{Family, Precision};

/// The keys this format writes or `--set` may give, in the file's order.
pub(super) const KEYS: &[Key] = &[
    needs("name", Kind::Text),
    needs("mem_per_GPU_in_GB", Kind::Positive(Measure::Memory, GIB)),
    needs(
        "hbm_bandwidth_in_GB_per_sec",
        Kind::Positive(Measure::Bandwidth, SAME),
    ),
    needs(
        "intra_node_bandwidth_in_GB_per_sec",
        Kind::Positive(Measure::Bandwidth, SAME),
    ),
    needs(
        "intra_node_min_message_latency",
        Kind::NonNegative(Measure::Latency, SAME),
    ),
    needs("peak_fp16_TFLOPS", Kind::Positive(Measure::Compute, TERA)),
    may("peak_i8_TFLOPS", Kind::Positive(Measure::Compute, TERA)),
    may(
        "inter_node_bandwidth_in_GB_per_sec",
        Kind::Positive(Measure::Bandwidth, SAME),
    ),
];

/// llm-analysis's own `intra_node_min_message_latency`, seconds: every GPU config it ships
/// (0.2.2) says 8e-06.
const MIN_MESSAGE_LATENCY_SECS: f64 = 8e-6;

pub(super) fn fields(x: &Inputs) -> Vec<Field> {
    let mut f = vec![Field {
        key: "name".into(),
        value: Value::Text(x.name()),
        unit: "",
        source: Source::Device(format!("device name `{}`", x.cal.device.name)),
    }];
    // llm-analysis multiplies mem_per_GPU_in_GB by 1024**3 and holds every weight, cache and
    // activation against it: it is GiB, and what a model may use (measured free).
    push(
        &mut f,
        "mem_per_GPU_in_GB",
        "GiB",
        rate(x.usable_memory_bytes(), 1.0 / GIB),
    );
    push(
        &mut f,
        "hbm_bandwidth_in_GB_per_sec",
        "GB/s (10^9 B/s)",
        rate(x.dram_rate(), 1.0),
    );
    push(
        &mut f,
        "intra_node_bandwidth_in_GB_per_sec",
        "GB/s per direction",
        rate(x.peer_link_gbs(), 1.0),
    );
    push(
        &mut f,
        "intra_node_min_message_latency",
        "s",
        default(
            Value::Num(MIN_MESSAGE_LATENCY_SECS),
            "llm-analysis's own figure for every GPU it ships; no run measures it",
        ),
    );
    push(
        &mut f,
        "peak_fp16_TFLOPS",
        "TFLOP/s",
        rate(x.sixteen_bit(Precision::F16F32), 1e-12),
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
    use super::super::fixtures::{a100, close, field, with_capacity};
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
        // what GPUConfig needs and no run measures: llm-analysis's own figure, said to be one
        let latency = field(&e, "intra_node_min_message_latency");
        close(&latency.value, 8e-6);
        assert!(latency.source.is_default());
        assert_eq!(e.defaulted, ["inter_node_bandwidth_in_GB_per_sec"]);
        let json: serde_json::Value = serde_json::from_str(&e.text).unwrap();
        assert_eq!(json["hbm_bandwidth_in_GB_per_sec"], 1500.0);
        assert_eq!(json["intra_node_min_message_latency"], 8e-6);
        assert_eq!(json["name"], "nvidia-a100-sxm4-80gb");
    }

    /// What a model may use is what the run measured free (78.7 GB of an 80 GiB A100), in the
    /// GiB llm-analysis multiplies by 1024**3; not the sheet's 80.
    #[test]
    fn memory_is_the_measured_free() {
        let cal = with_capacity(80 << 30, 78_700_000_000);
        let e = build(&cal, sheet_of(&cal).unwrap(), Format::LlmAnalysis, &[]).unwrap();
        close(
            &field(&e, "mem_per_GPU_in_GB").value,
            78_700_000_000.0 / GIB,
        );
        assert!(!field(&e, "mem_per_GPU_in_GB").source.is_spec());
    }

    /// A host with AMX measured its bf16 tensor rate: that is llm-analysis's 16-bit peak; one
    /// without any 16-bit rate gets its f32 peak, said to be that.
    #[test]
    fn the_16_bit_peak_is_a_measured_bf16_rate_or_the_f32_peak() {
        use crate::analysis::calibration::FromRecords;
        use crate::analysis::fixtures::row;
        let mut rows: Vec<_> = crate::analysis::fixtures::synthetic_run()
            .into_iter()
            .filter(|r| r.family != crate::cases::Family::Tensor)
            .collect();
        for r in rows.iter_mut() {
            r.device_name = "roofprobe test device".into();
        }
        // (no sheet and no capacity or link rows: those two given)
        let sets = parse_sets(
            Format::LlmAnalysis,
            &[
                "mem_per_GPU_in_GB=16".into(),
                "intra_node_bandwidth_in_GB_per_sec=25".into(),
            ],
        )
        .unwrap();
        let cal = Calibration::from_records(&rows, None).unwrap();
        let e = build(&cal, None, Format::LlmAnalysis, &sets).unwrap();
        close(&field(&e, "peak_fp16_TFLOPS").value, 15.0);
        assert!(field(&e, "peak_fp16_TFLOPS")
            .source
            .describe()
            .contains("no 16-bit rate measured or on a sheet"));
        let mut amx = row(
            crate::cases::Family::Tensor,
            "amx",
            crate::cases::Precision::Bf16F32,
            None,
            (0, 6_800_000_000_000),
            1.0,
            true,
        );
        amx.device_name = "roofprobe test device".into();
        rows.push(amx);
        let cal = Calibration::from_records(&rows, None).unwrap();
        let e = build(&cal, None, Format::LlmAnalysis, &sets).unwrap();
        close(&field(&e, "peak_fp16_TFLOPS").value, 6.8);
        assert!(field(&e, "peak_fp16_TFLOPS")
            .source
            .describe()
            .starts_with("measured: tensor/amx/bf16.f32 (no tensor f16.f32 rate measured"));
    }
}
