//! Theoretical peaks from device attributes (specs::theory), held against the vendor sheet the
//! spec table embeds.

use roofprobe::cases::Precision;
use roofprobe::specs::theory::*;
use std::collections::HashMap;
use Precision::*;

/// The vendor sheet the spec database embeds.
const SPECS_CSV: &str = roofprobe::specs::GPU_SPECS_CSV;

/// Parses the reference CSV (with its quoted fields) into maps of column → value.
fn rows() -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_reader(SPECS_CSV.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// The clock NVIDIA used for a device's tensor-core figures, where it is not the boost
/// clock: Hopper's sheets quote tensor peaks at the tensor boost clock (gpu_specs.csv notes:
/// "tensor peaks computed by NVIDIA at the lower tensor boost clock (1830 MHz SXM5 / 1620 MHz
/// PCIe)"). `None` means the CSV does not say which clock, so tensor figures are not tested.
fn tensor_clock_mhz(row: &HashMap<String, String>, boost: f64) -> Option<f64> {
    let name = &row["device"];
    if row["compute_capability"] != "9.0" {
        return Some(boost);
    }
    if name.contains("NVL") {
        None
    } else if name.contains("PCIe") {
        Some(1620.0)
    } else {
        Some(1830.0)
    }
}

/// Every vendor figure that the table covers, for every device with an SM count and a boost
/// clock, comes out within 2 %.
#[test]
fn lanes_table_reproduces_the_vendor_sheet() {
    let columns: [(&str, Precision, bool); 10] = [
        ("fp64_tflops", F64, false),
        ("fp32_tflops", F32, false),
        ("fp16_nontensor_tflops", F16x2, false),
        ("fp64_tensor_tflops", F64F64, true),
        ("tf32_tensor_tflops", Tf32F32, true),
        ("bf16_tensor_tflops", Bf16F32, true),
        ("fp16_tensor_fp32acc_tflops", F16F32, true),
        ("fp16_tensor_fp16acc_tflops", F16F16, true),
        ("int8_tensor_tops", S8S32, true),
        ("fp8_tensor_tflops", E4m3F32, true),
    ];
    let mut checked = 0;
    let mut failures = Vec::new();
    for row in rows() {
        let (Ok(sms), Ok(boost), Some(cc)) = (
            row["sm_count"].parse::<u32>(),
            row["boost_clock_mhz"].parse::<f64>(),
            parse_compute_capability(&row["compute_capability"]),
        ) else {
            continue;
        };
        for (column, precision, tensor) in columns {
            let Ok(vendor_tflops) = row[column].parse::<f64>() else {
                continue;
            };
            // Hopper's FP64 tensor figure is quoted at the boost clock, like its FP64.
            let clock = if tensor && precision != F64F64 {
                match tensor_clock_mhz(&row, boost) {
                    Some(c) => c,
                    None => continue,
                }
            } else {
                boost
            };
            let ours = peak_gflops_for(&row["nvidia_smi_name"], cc, sms, clock, precision);
            let Some(ours) = ours else {
                failures.push(format!("{} {column}: no table entry", row["device"]));
                continue;
            };
            let ratio = ours / 1e3 / vendor_tflops;
            if (ratio - 1.0).abs() > 0.02 {
                failures.push(format!(
                    "{} {column}: ours {:.1} vs vendor {vendor_tflops} TFLOPS",
                    row["device"],
                    ours / 1e3
                ));
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{checked} vendor figures reproduced within 2 %");
    assert!(checked >= 120, "only {checked} figures checked");
}

/// The three devices the issue names, spelled out.
#[test]
fn a100_rtx3090_h100_at_boost_clock() {
    let tf = |name: &str, cc, sms, mhz, p| peak_gflops_for(name, cc, sms, mhz, p).unwrap() / 1e3;
    let a100 = "NVIDIA A100-SXM4-80GB";
    assert!((tf(a100, (8, 0), 108, 1410.0, F32) - 19.5).abs() < 0.1);
    assert!((tf(a100, (8, 0), 108, 1410.0, F64) - 9.7).abs() < 0.1);
    assert!((tf(a100, (8, 0), 108, 1410.0, F16F32) - 312.0).abs() < 1.0);
    let rtx = "NVIDIA GeForce RTX 3090";
    assert!((tf(rtx, (8, 6), 82, 1695.0, F32) - 35.6).abs() < 0.1);
    // GeForce: FP32 accumulation at half the FP16-accumulate rate, shown, not hidden.
    assert!((tf(rtx, (8, 6), 82, 1695.0, F16F16) - 142.0).abs() < 0.5);
    assert!((tf(rtx, (8, 6), 82, 1695.0, F16F32) - 71.0).abs() < 0.5);
    // The same die as a workstation part runs it at full rate.
    let a6000 = peak_gflops_for("NVIDIA RTX A6000", (8, 6), 84, 1800.0, F16F32).unwrap();
    assert!((a6000 / 1e3 - 154.8).abs() < 0.5);
    let h100 = "NVIDIA H100 80GB HBM3";
    assert!((tf(h100, (9, 0), 132, 1980.0, F32) - 66.9).abs() < 0.1);
    assert!((tf(h100, (9, 0), 132, 1830.0, Bf16F32) - 989.4).abs() < 1.0);
}

#[test]
fn unknown_pairs_are_none_not_guesses() {
    assert_eq!(peak_gflops((8, 0), 108, 1410.0, E4m3F32), None);
    assert_eq!(peak_gflops((7, 0), 80, 1530.0, Bf16x2), None);
    assert_eq!(peak_gflops((3, 5), 15, 900.0, F32), None);
    assert_eq!(peak_gflops((8, 6), 82, 1695.0, F64F64), None);
    assert!(peak_gflops((8, 6), 82, 1695.0, F32).is_some());
}

#[test]
fn host_peak_counts_pipes_and_real_width() {
    let zen5 = host_fma_x86("AuthenticAMD", 0x1A, 0x02, "", "").unwrap();
    assert_eq!((zen5.pipes, zen5.datapath_bits), (2, 512));
    // 2 cores at 4 GHz, 2 × 16 f32 lanes × 2 flops = 64 flops/clock/core.
    assert_eq!(host_peak_gflops(2, 4000.0, zen5, 512, 32), 512.0);
    assert_eq!(host_peak_gflops(2, 4000.0, zen5, 512, 64), 256.0);
    // AVX2 code on the same core uses half the datapath.
    assert_eq!(host_peak_gflops(2, 4000.0, zen5, 256, 32), 256.0);
    // Zen 4 double-pumps 512-bit instructions: no more flops than AVX2.
    let zen4 = host_fma_x86("AuthenticAMD", 0x19, 0x61, "", "").unwrap();
    assert_eq!(host_peak_gflops(1, 1000.0, zen4, 512, 32), 32.0);
    assert_eq!(
        host_fma_x86("AuthenticAMD", 0x1A, 0x24, "", "")
            .unwrap()
            .datapath_bits,
        256
    );
    assert_eq!(host_fma_x86("HygonGenuine", 0x18, 0, "", ""), None);
    // Intel: two 256-bit-wide pipes for 512-bit code (p5 not assumed) …
    let client = host_fma_x86("GenuineIntel", 6, 167, "", "fpu avx2 fma avx512f").unwrap();
    assert_eq!(host_peak_gflops(1, 1000.0, client, 512, 32), 32.0);
    // … except where AMX marks a server P-core (Sapphire Rapids on), whatever the model
    // number a hypervisor reports: two full 512-bit pipes, 64 f32 flops a clock; its AVX2
    // code still gets two 256-bit FMAs a clock.
    let server = host_fma_x86(
        "GenuineIntel",
        6,
        167,
        "",
        "avx512f amx_bf16 amx_tile amx_int8",
    )
    .unwrap();
    assert_eq!(host_peak_gflops(1, 1000.0, server, 512, 32), 64.0);
    assert_eq!(host_peak_gflops(1, 1000.0, server, 256, 32), 32.0);
    assert!(server.source.contains("amx_tile"), "{}", server.source);
    // (a flag is a whole word: `amx_tile_x` is not AMX)
    assert_eq!(
        host_fma_x86("GenuineIntel", 6, 167, "", "amx_tile_x").unwrap(),
        client
    );
    // AVX-512 on a Xeon Scalable model (Skylake-SP to Ice Lake-SP), or under a hypervisor
    // whatever model it reports: two 512-bit pipes, the ceiling of the two-unit parts,
    // unless the brand names a one-unit SKU.
    for (model, brand, flags, f32_flops) in [
        (0x55, "", "fma avx512f", 64.0),
        (0x6A, "", "fma avx512f", 64.0),
        (0x6C, "", "fma avx512f", 64.0),
        (
            167,
            "Intel(R) Xeon(R) Processor",
            "fma avx512f hypervisor",
            64.0,
        ),
        (0x3F, "", "hypervisor avx512f fma", 64.0),
        (
            0x55,
            "Intel(R) Xeon(R) Platinum 8280 CPU @ 2.70GHz",
            "avx512f",
            64.0,
        ),
        (
            0x55,
            "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz",
            "avx512f",
            64.0,
        ),
        (
            0x55,
            "Intel(R) Xeon(R) Gold 5122 CPU @ 3.60GHz",
            "avx512f",
            64.0,
        ),
        (
            0x55,
            "Intel(R) Xeon(R) Gold 5222 CPU @ 3.80GHz",
            "avx512f",
            64.0,
        ),
        (
            0x55,
            "Intel(R) Xeon(R) Gold 5318H CPU @ 2.50GHz",
            "avx512f",
            64.0,
        ),
        (
            0x6A,
            "Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz",
            "avx512f",
            64.0,
        ),
        (
            0x55,
            "Intel(R) Xeon(R) Gold 5218 CPU @ 2.30GHz",
            "avx512f",
            32.0,
        ),
        (
            0x55,
            "Intel(R) Xeon(R) Gold 5120 CPU @ 2.20GHz",
            "avx512f",
            32.0,
        ),
        (
            0x55,
            "Intel(R) Xeon(R) Silver 4214R CPU @ 2.40GHz",
            "avx512f",
            32.0,
        ),
        (
            0x55,
            "Intel(R) Xeon(R) Bronze 3204 CPU @ 1.90GHz",
            "avx512f",
            32.0,
        ),
        (
            167,
            "Intel(R) Xeon(R) Silver 4110 CPU",
            "avx512f hypervisor",
            32.0,
        ),
    ] {
        let xeon = host_fma_x86("GenuineIntel", 6, model, brand, flags).unwrap();
        assert_eq!(
            host_peak_gflops(1, 1000.0, xeon, 512, 32),
            f32_flops,
            "model {model:#x}, {brand}, {flags}"
        );
        assert!(xeon.source.contains("FMA Units"), "{}", xeon.source);
    }
    // … but not without AVX-512 (a Haswell-EP guest: two 256-bit pipes), nor on a client
    // part seen bare (a Rocket Lake or Tiger Lake has one 512-bit unit: p0+p1 fused).
    for (model, flags) in [
        (0x3F, "fma avx2 hypervisor"),
        (167, "fma avx512f"),
        (0x8C, "fma avx512f"),
    ] {
        assert_eq!(
            host_fma_x86("GenuineIntel", 6, model, "", flags).unwrap(),
            client,
            "model {model:#x}, {flags}"
        );
    }
}

#[test]
fn arm_cores_by_implementer_and_part() {
    // Grace (Neoverse V2): 4 × 128-bit FMA pipes, 16 f32 FMA lanes per clock per core.
    let (name, fma) = arm_core(0x41, 0xD4F).unwrap();
    assert_eq!(name, "Arm Neoverse-V2");
    let v2 = fma.unwrap();
    assert_eq!((v2.pipes, v2.datapath_bits), (4, 128));
    assert_eq!(host_peak_gflops(1, 1000.0, v2, 128, 32), 32.0);
    assert_eq!(host_peak_gflops(1, 1000.0, v2, 128, 64), 16.0);
    // Graviton2 (Neoverse N1): two pipes.
    let n1 = arm_core(0x41, 0xD0C).unwrap().1.unwrap();
    assert_eq!(host_peak_gflops(1, 1000.0, n1, 128, 32), 16.0);
    // A core with a name but no documented datapath claims no peak.
    assert_eq!(arm_core(0x41, 0xD08), Some(("Arm Cortex-A72", None)));
    // Another implementer's part number is not Arm's.
    assert_eq!(arm_core(0x61, 0xD4F), None);
}
