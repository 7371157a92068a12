//! LLM-Viewer's hardware parameters (`hardwares/hardware_params.py`: a Python dict of devices,
//! each `bandwidth` in B/s, `FP16` and `INT8` in OP/s, `onchip_buffer` in bytes, read by its
//! `model_analyzer.get_hardware_info`; `INT8` only for 8-bit activations), as Python source with
//! a comment per field saying its unit and source, to merge into that file.
//!
//! It must not print, read files or measure.

use super::{comment, may, needs, push, rate, Field, Inputs, Key, Kind, Value};
use super::{Measure, PER_SECOND, SAME};
use crate::cases::{Family, Precision};
use std::fmt::Write as _;

/// The keys this format writes or `--set` may give, in the file's order.
pub(super) const KEYS: &[Key] = &[
    needs("bandwidth", Kind::Positive(Measure::Bandwidth, PER_SECOND)),
    needs("FP16", Kind::Positive(Measure::Compute, PER_SECOND)),
    may("INT8", Kind::Positive(Measure::Compute, PER_SECOND)),
    needs("onchip_buffer", Kind::Positive(Measure::Memory, SAME)),
];

pub(super) fn fields(x: &Inputs) -> Vec<Field> {
    let mut f = Vec::new();
    push(&mut f, "bandwidth", "B/s", rate(x.dram_rate(), 1e9));
    push(
        &mut f,
        "FP16",
        "FLOP/s",
        rate(x.sixteen_bit(Precision::F16F32), 1.0),
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
    // (a float, as LLM-Viewer's own entries write it: 27648e3)
    push(
        &mut f,
        "onchip_buffer",
        "bytes",
        rate(x.onchip_bytes(), 1.0),
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
        "# merge into LLM-Viewer's hardwares/hardware_params.py"
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::{a100, close, field};
    use super::super::*;

    /// `onchip_buffer`, which `get_hardware_info` reads and no run measures, comes from the
    /// device's report as LLM-Viewer's own entries count it: a GPU's SMs × the 256 KiB register
    /// file (108 for the A100), the host's last-level cache.
    #[test]
    fn the_onchip_buffer_is_the_register_files_or_the_last_level_cache() {
        let e = a100(Format::LlmViewer, &[]);
        let b = field(&e, "onchip_buffer");
        close(&b.value, 108.0 * 262_144.0);
        assert_eq!(
            b.source,
            Source::Device("108 SMs × their 256 KiB register file".into())
        );
        use crate::analysis::calibration::FromRecords;
        let mut cal =
            Calibration::from_records(&crate::analysis::fixtures::synthetic_run(), None).unwrap();
        cal.device.backend = roofprobe_calibration::BackendKind::Host;
        cal.device.last_level_cache_bytes = 36 << 20;
        let e = build(&cal, None, Format::LlmViewer, &[]).unwrap();
        close(&field(&e, "onchip_buffer").value, (36u64 << 20) as f64);
        assert!(e
            .text
            .contains("\"onchip_buffer\": 37748736.0,  # bytes; device report"));
    }
}
