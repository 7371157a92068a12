//! AIConfigurator's system YAML (`systems/<name>.yaml` of aiconfigurator-core): a top-level
//! `data_dir` (the perf data's folder, relative to the systems folder), and sections `gpu`,
//! `node` and `misc`. Units as its own files and code take them: `gpu.mem_bw` in B/s,
//! `gpu.mem_bw_empirical_scaling_factor` a fraction of it and `gpu.mem_empirical_constant_latency`
//! seconds (its memory op takes `bytes / mem_bw` in its SOL mode and `bytes / (mem_bw · factor)
//! + constant` in its EMPIRICAL mode), `gpu.mem_capacity` bytes, the tensor rates in FLOP/s
//! (OP/s for int8), `gpu.power` W, `gpu.sm_version` as `80` for 8.0, the node's bandwidths in B/s
//! per GPU and direction, `node.p2p_latency` seconds, `misc.nccl_mem` bytes per tensor-parallel
//! size and `misc.other_mem` bytes (what is in use besides the model: it subtracts both from
//! `mem_capacity`). Its compiled engine refuses a file without `node.inter_node_bw`,
//! `intra_node_bw`, `pcie_bw` and `p2p_latency`, and its memory accounting one without
//! `misc` (aiconfigurator-core 0.12.0). Every field carries a comment with its unit and source.
//!
//! `mem_bw` is the measured DRAM ceiling, so SOL (which ignores the factor) computes with the
//! measurement; the sheet's figure is named beside it. Its SILICON and HYBRID modes read perf
//! data collected on the GPU, which no roofprobe run writes.
//!
//! It must not print, read files or measure.

use super::{
    comment, default, may, needs, push, rate, sig, Field, Inputs, Key, Kind, Source, Value,
};
use super::{Measure, PER_SECOND, SAME};
use crate::cases::Precision;
use roofprobe_calibration::check::MAX_MEMORY_BYTES;
use std::fmt::Write as _;

/// The keys this format writes or `--set` may give, in the file's order.
pub(super) const KEYS: &[Key] = &[
    needs("data_dir", Kind::Text),
    needs("gpu.mem_bw", Kind::Positive(Measure::Bandwidth, PER_SECOND)),
    may(
        "gpu.mem_bw_empirical_scaling_factor",
        Kind::Fraction { max: 1.0 },
    ),
    may(
        "gpu.mem_empirical_constant_latency",
        Kind::NonNegative(Measure::Latency, SAME),
    ),
    needs(
        "gpu.mem_capacity",
        Kind::Whole {
            max: MAX_MEMORY_BYTES,
        },
    ),
    needs(
        "gpu.bfloat16_tc_flops",
        Kind::Positive(Measure::Compute, PER_SECOND),
    ),
    may(
        "gpu.int8_tc_flops",
        Kind::Positive(Measure::Compute, PER_SECOND),
    ),
    may(
        "gpu.fp8_tc_flops",
        Kind::Positive(Measure::Compute, PER_SECOND),
    ),
    may("gpu.power", Kind::Positive(Measure::Power, SAME)),
    may("gpu.sm_version", Kind::Whole { max: 999 }),
    needs("node.num_gpus_per_node", Kind::Whole { max: 1 << 16 }),
    needs(
        "node.inter_node_bw",
        Kind::Positive(Measure::Bandwidth, PER_SECOND),
    ),
    needs(
        "node.intra_node_bw",
        Kind::Positive(Measure::Bandwidth, PER_SECOND),
    ),
    needs(
        "node.pcie_bw",
        Kind::Positive(Measure::Bandwidth, PER_SECOND),
    ),
    needs(
        "node.p2p_latency",
        Kind::NonNegative(Measure::Latency, SAME),
    ),
    needs("misc.nccl_mem.1", Kind::WholeBytes),
    needs("misc.other_mem", Kind::WholeBytes),
];

/// AIConfigurator's own systems' figure for what CUDA, cuBLAS and the framework hold besides
/// the model (`misc.other_mem` of its `a100_sxm.yaml`: 3.5 GiB), where the run measured none.
const OTHER_MEM_BYTES: u64 = 3_758_096_384;

/// One 200 Gb/s HDR InfiniBand adapter per GPU, in B/s: AIConfigurator's own A100 system's
/// `node.inter_node_bw` ("assume 1:1 CX6 per node").
const INTER_NODE_BYTES_PER_SEC: f64 = 25e9;

/// AIConfigurator's own systems' `node.p2p_latency`, seconds.
const P2P_LATENCY_SECS: f64 = 1e-5;

pub(super) fn fields(x: &Inputs) -> Vec<Field> {
    let mut f = Vec::new();
    push(
        &mut f,
        "data_dir",
        "",
        default(
            Value::Text(format!("data/{}", x.name())),
            "where AIConfigurator looks for this system's perf data, under its systems folder; \
             roofprobe writes none: SOL and EMPIRICAL modes need none (an empty folder)",
        ),
    );
    memory_model(&mut f, x);
    push(
        &mut f,
        "gpu.mem_capacity",
        "bytes",
        x.total_memory_bytes()
            .map(|(b, s)| (Value::Int(b.round() as u64), s)),
    );
    push(
        &mut f,
        "gpu.bfloat16_tc_flops",
        "FLOP/s",
        rate(x.sixteen_bit(Precision::Bf16F32), 1.0),
    );
    push(
        &mut f,
        "gpu.int8_tc_flops",
        "OP/s",
        rate(
            x.flops(
                crate::cases::Family::Tensor,
                Precision::S8S32,
                "int8_tensor_tops",
            ),
            1.0,
        ),
    );
    push(
        &mut f,
        "gpu.fp8_tc_flops",
        "FLOP/s",
        rate(
            x.flops(
                crate::cases::Family::Tensor,
                Precision::E4m3F32,
                "fp8_tensor_tflops",
            ),
            1.0,
        ),
    );
    let power = x
        .cal
        .device
        .identity
        .power_limit_w
        .filter(|w| w.is_finite() && *w > 0.0)
        .map(|w| {
            (
                Value::Num(w),
                Source::Device("the power limit NVML enforced during the run".into()),
            )
        })
        .or_else(|| rate(x.spec("tdp_w"), 1.0));
    push(&mut f, "gpu.power", "W", power);
    push(
        &mut f,
        "gpu.sm_version",
        "",
        x.sm_version().map(|(v, s)| (Value::Int(v), s)),
    );
    node_and_misc(&mut f, x);
    f
}

/// The memory model of SOL and EMPIRICAL modes: `gpu.mem_bw`, and EMPIRICAL's scaling factor
/// and constant latency.
fn memory_model(f: &mut Vec<Field>, x: &Inputs) {
    // mem_bw is what SOL computes with: the measured DRAM ceiling, the sheet's figure beside
    // it; only without a DRAM row the sheet's
    let mem_bw = x.dram_rate();
    if let Some((gbps, src)) = &mem_bw {
        f.push(Field {
            key: "gpu.mem_bw".into(),
            value: Value::Num(gbps * 1e9),
            unit: "B/s",
            source: src.clone(),
        });
    }
    // EMPIRICAL's memory op is bytes / (mem_bw · factor) + constant (aiconfigurator-core
    // `mem_op_latency_ms`): the size sweep's fit is exactly that line, so mem_bw · factor is its
    // asymptotic bandwidth and the constant its `a`. Without a fit within its quality bound,
    // mem_bw is already the measured rate (factor 1) and the constant the run's measured cost
    // of one launch, which every memory op pays.
    let measured_bw = x.dram().is_some();
    match (x.size_fit(), &mem_bw) {
        (Some(fit), Some((gbps, _))) if measured_bw => {
            let factor = fit.asymptotic_gbps / gbps;
            f.push(Field {
                key: "gpu.mem_bw_empirical_scaling_factor".into(),
                value: Value::Num(factor.min(1.0)),
                unit: "fraction",
                source: super::Inputs::size_fit_source(
                    fit,
                    &if factor > 1.0 {
                        format!(
                            "1: the fit's BW is above mem_bw {} GB/s, and the factor a fraction",
                            sig(*gbps)
                        )
                    } else {
                        format!("BW / mem_bw {} GB/s", sig(*gbps))
                    },
                ),
            });
            f.push(Field {
                key: "gpu.mem_empirical_constant_latency".into(),
                value: Value::Num(fit.constant_secs),
                unit: "s",
                source: super::Inputs::size_fit_source(fit, "a"),
            });
        }
        (_, Some(_)) => {
            f.push(Field {
                key: "gpu.mem_bw_empirical_scaling_factor".into(),
                value: Value::Num(1.0),
                unit: "fraction",
                source: Source::Choice(if measured_bw {
                    "mem_bw is already the measured rate"
                } else {
                    "nothing measured the DRAM: the sheet's rate as it stands"
                }),
            });
            push(f, "gpu.mem_empirical_constant_latency", "s", launch_secs(x));
        }
        _ => {}
    }
}

/// The node (one GPU, its links, the network AIConfigurator's own systems assume) and what
/// besides the model holds memory.
fn node_and_misc(f: &mut Vec<Field>, x: &Inputs) {
    push(
        f,
        "node.num_gpus_per_node",
        "",
        default(Value::Int(1), "one device per node, the one measured"),
    );
    push(
        f,
        "node.inter_node_bw",
        "B/s per direction",
        default(
            Value::Num(INTER_NODE_BYTES_PER_SEC),
            "one 200 Gb/s HDR InfiniBand adapter per GPU, AIConfigurator's own A100 figure; \
             no run measures the network",
        ),
    );
    push(
        f,
        "node.intra_node_bw",
        "B/s per direction",
        rate(x.peer_link_gbs(), 1e9),
    );
    push(
        f,
        "node.pcie_bw",
        "B/s per direction",
        rate(x.host_link_gbs(), 1e9),
    );
    push(
        f,
        "node.p2p_latency",
        "s",
        default(
            Value::Num(P2P_LATENCY_SECS),
            "AIConfigurator's own systems' 10 us; no run measures it",
        ),
    );
    push(
        f,
        "misc.nccl_mem.1",
        "bytes",
        default(
            Value::Int(0),
            "no NCCL communicator at tensor-parallel size 1, AIConfigurator's own figure",
        ),
    );
    let other = x
        .memory_in_use_bytes()
        .map(|(b, s)| (Value::Int(b.round() as u64), s))
        .or_else(|| {
            default(
                Value::Int(OTHER_MEM_BYTES),
                "what CUDA, cuBLAS and the framework hold, AIConfigurator's own systems' 3.5 GiB; \
                 the run measured no capacity",
            )
        });
    push(f, "misc.other_mem", "bytes", other);
}

/// The run's measured cost of one launch, in seconds: a GPU's empty kernel back to back, the
/// host's wake of its workers and one barrier.
fn launch_secs(x: &Inputs) -> Option<(Value, Source)> {
    let l = x.cal.launch?;
    let (secs, what) = match (l.empty_kernel_secs, l.wake_barrier_secs) {
        (Some(s), _) => (s, "launch/empty: an empty kernel launched back to back"),
        (None, Some(s)) => (s, "launch/wake_barrier: waking the workers and one barrier"),
        _ => return None,
    };
    Some((
        Value::Num(secs),
        Source::Measured(format!(
            "{what}, the cost every memory op pays (no size fit within its quality bound)"
        )),
    ))
}

/// AIConfigurator's YAML: `data_dir`, then the sections, nested by the keys' dots; every field
/// with a comment saying its unit and source (YAML comments are what that format allows).
pub(super) fn render(header: &[String], _x: &Inputs, fields: &[Field]) -> String {
    let mut out = String::new();
    for h in header {
        let _ = writeln!(out, "# {h}");
    }
    let mut open: Vec<&str> = Vec::new();
    for f in fields {
        let parts: Vec<&str> = f.key.split('.').collect();
        let (path, leaf) = parts.split_at(parts.len() - 1);
        let same = open.iter().zip(path).take_while(|(a, b)| a == b).count();
        open.truncate(same);
        for p in &path[same..] {
            let _ = writeln!(out, "{}{p}:", "  ".repeat(open.len()));
            open.push(p);
        }
        let _ = writeln!(
            out,
            "{}{}: {} # {}",
            "  ".repeat(open.len()),
            leaf[0],
            f.value.json(),
            comment(f)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{a100, close, field, with_capacity};
    use super::super::*;

    /// The synthetic A100 (1500 GB/s measured against the sheet's 2039): `mem_bw` is the
    /// measured rate, which SOL computes with (it ignores the factor: halving the measurement
    /// changed SOL's decode by ×1.000 when mem_bw was the sheet's), the sheet's figure named
    /// beside it; the factor 1.
    #[test]
    fn mem_bw_is_the_measured_rate_with_the_sheets_beside_it() {
        let e = a100(Format::Aiconfigurator, &[]);
        let bw = field(&e, "gpu.mem_bw");
        close(&bw.value, 1500e9);
        assert!(!bw.source.is_spec());
        let said = bw.source.describe();
        assert!(
            said.starts_with("measured: stream/triad/f32")
                && said.contains("the sheet's figure is 2039"),
            "{said}"
        );
        close(&field(&e, "gpu.mem_bw_empirical_scaling_factor").value, 1.0);
    }

    #[test]
    fn aiconfigurator_gets_bytes_per_second_and_a_file_its_engine_loads() {
        let sets = [("node.num_gpus_per_node".to_string(), Value::Int(8))];
        let e = a100(Format::Aiconfigurator, &sets);
        close(&field(&e, "gpu.mem_capacity").value, 80.0 * GIB);
        // no 16-bit bf16 tensor row measured: f16.f32's, which runs at the same rate
        close(&field(&e, "gpu.bfloat16_tc_flops").value, 250e12);
        assert!(field(&e, "gpu.bfloat16_tc_flops")
            .source
            .describe()
            .contains("no tensor bf16.f32 rate measured; f16.f32 runs at the same rate"));
        close(&field(&e, "gpu.sm_version").value, 80.0);
        close(&field(&e, "node.pcie_bw").value, 32e9);
        close(&field(&e, "node.intra_node_bw").value, 300e9);
        assert_eq!(field(&e, "node.num_gpus_per_node").source, Source::Given);
        // what its compiled engine and memory accounting refuse a file without, filled
        for key in [
            "data_dir",
            "node.inter_node_bw",
            "node.p2p_latency",
            "misc.nccl_mem.1",
            "misc.other_mem",
        ] {
            assert!(
                field(&e, key).source.is_default(),
                "{key}: {:?}",
                field(&e, key).source
            );
        }
        // the YAML says each field's source beside it, the sections nested by the dots
        let line = |key: &str| {
            e.text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{key}:")))
                .unwrap_or_else(|| panic!("no {key} in\n{}", e.text))
                .to_string()
        };
        assert!(
            line("intra_node_bw").contains("# B/s per direction; spec sheet \"A100 80GB SXM4\""),
            "{}",
            e.text
        );
        assert!(line("num_gpus_per_node").ends_with("given with --set"));
        assert!(
            e.text.contains("\ngpu:\n")
                && e.text.contains("\nnode:\n")
                && e.text
                    .contains("\nmisc:\n  nccl_mem:\n    1: 0 # bytes; default"),
            "{}",
            e.text
        );
        // no FP8 on an A100: neither measured nor on the sheet, and the tool does without;
        // nor a launch or size-sweep row for a memory op's constant
        assert_eq!(
            e.defaulted,
            ["gpu.mem_empirical_constant_latency", "gpu.fp8_tc_flops"]
        );
    }

    /// The run's measured capacity, not the sheet's 80 GiB: `mem_capacity` is the total the
    /// driver reported and `misc.other_mem` what was in use before any model, so the tool
    /// holds a model against what was free.
    #[test]
    fn capacity_is_the_measured_total_and_what_was_in_use() {
        let cal = with_capacity(80 << 30, 78_700_000_000);
        let e = build(&cal, sheet_of(&cal).unwrap(), Format::Aiconfigurator, &[]).unwrap();
        close(&field(&e, "gpu.mem_capacity").value, (80u64 << 30) as f64);
        close(
            &field(&e, "misc.other_mem").value,
            ((80u64 << 30) - 78_700_000_000) as f64,
        );
        assert!(field(&e, "gpu.mem_capacity")
            .source
            .describe()
            .starts_with("measured: capacity/total"));
    }

    /// A size fit within its quality bound gives the factor and the constant; one beyond it
    /// (the committed host runs' fits, rms 0.5 to 1.4, a constant clamped to 0) gives neither,
    /// and the export says why.
    #[test]
    fn a_size_fit_below_its_quality_bound_is_left_out_with_a_note() {
        use roofprobe_calibration::{SizeEfficiency, SizeEfficiencyPoint};
        let mut cal = with_capacity(80 << 30, 79 << 30);
        let fit = |rms: f64| SizeEfficiency {
            kernel: "triad".into(),
            precision: crate::cases::Precision::F32,
            constant_secs: 4e-6,
            asymptotic_gbps: 1200.0,
            rms_relative_residual: rms,
            constant_clamped: false,
            points: [1u64 << 20, 1 << 26]
                .iter()
                .map(|&bytes| SizeEfficiencyPoint {
                    case: format!("efficiency/triad/f32/{bytes}"),
                    bytes,
                    secs: 1.0,
                    gbps: 1000.0,
                    efficiency: 0.8,
                })
                .collect(),
        };
        cal.size_efficiency = vec![fit(0.05)];
        let good = build(&cal, sheet_of(&cal).unwrap(), Format::Aiconfigurator, &[]).unwrap();
        close(
            &field(&good, "gpu.mem_bw_empirical_scaling_factor").value,
            1200.0 / 1500.0,
        );
        close(
            &field(&good, "gpu.mem_empirical_constant_latency").value,
            4e-6,
        );
        assert!(good.notes.is_empty());
        cal.size_efficiency = vec![fit(0.935)];
        let bad = build(&cal, sheet_of(&cal).unwrap(), Format::Aiconfigurator, &[]).unwrap();
        close(
            &field(&bad, "gpu.mem_bw_empirical_scaling_factor").value,
            1.0,
        );
        assert!(!bad
            .fields
            .iter()
            .any(|f| f.source.describe().contains("efficiency/triad")));
        assert_eq!(bad.notes.len(), 1);
        assert!(
            bad.notes[0].contains("efficiency/triad/f32 is left out: its rms relative residual 0.935 is above the bound 0.1"),
            "{:?}",
            bad.notes
        );
    }
}
