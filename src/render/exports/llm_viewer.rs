//! LLM-Viewer's hardware parameters (`hardwares/hardware_params.py`: a Python dict of devices,
//! each `bandwidth` in B/s, `FP16` and `INT8` in OP/s, `onchip_buffer` in bytes, read by its
//! `model_analyzer.get_hardware_info`), as Python source with a comment per field saying its
//! unit and source, to merge into that file.
//!
//! It must not print, read files or measure.

use super::{comment, push, rate, Field, Inputs, Source, Value};
use crate::cases::{Family, Precision};
use std::fmt::Write as _;

/// The keys this format writes or `--set` may give, in the file's order.
pub(super) const KEYS: &[&str] = &["bandwidth", "FP16", "INT8", "onchip_buffer"];

/// Keys the tool does without.
pub(super) const OPTIONAL: &[&str] = &[];

pub(super) fn fields(x: &Inputs) -> Vec<Field> {
    let mut f = Vec::new();
    push(
        &mut f,
        "bandwidth",
        "B/s",
        x.dram()
            .map(|(g, case)| (Value::Num(g * 1e9), Source::Measured(case)))
            .or_else(|| rate(x.spec("mem_bandwidth_gbs"), 1e9)),
    );
    push(
        &mut f,
        "FP16",
        "FLOP/s",
        rate(
            x.flops(
                Family::Tensor,
                Precision::F16F32,
                "fp16_tensor_fp32acc_tflops",
            ),
            1.0,
        ),
    );
    push(
        &mut f,
        "INT8",
        "OP/s",
        rate(
            x.flops(Family::Tensor, Precision::S8S32, "int8_tensor_tops"),
            1.0,
        ),
    );
    f
}

/// LLM-Viewer's `hardware_params` dict, as Python source with a comment per field.
pub(super) fn render(header: &[String], x: &Inputs, fields: &[Field]) -> String {
    let mut out = String::new();
    for h in header {
        let _ = writeln!(out, "# {h}");
    }
    let _ = writeln!(
        out,
        "# merge into LLM-Viewer's hardwares/hardware_params.py (onchip_buffer: register file + \
         shared memory in bytes, which no run measures: give it with --set)"
    );
    let _ = writeln!(out, "hardware_params = {{");
    let _ = writeln!(out, "    {}: {{", Value::Text(x.name()).json());
    for f in fields {
        let _ = writeln!(
            out,
            "        {}: {},  # {}",
            Value::Text(f.key.clone()).json(),
            f.value.json(),
            comment(f)
        );
    }
    let _ = writeln!(out, "    }},");
    let _ = writeln!(out, "}}");
    out
}
