//! Offline checks of the compute kernels' machine code: ptxas assembles every compute kernel
//! for every architecture its `.target` allows (sm_80, sm_86, sm_89, sm_90) with no spills and no
//! stack, and the timed loop of every peak and tensor kernel is at least 90 % the instruction we
//! meant (FFMA, DFMA, HFMA2, IMAD, HMMA/IMMA/DMMA/QMMA) in cuobjdump's SASS. The sweep's
//! expanded variants keep all k FMAs per word.
//!
//! The tools are found as every offline check finds them (`tests/tools.rs`: `PTXAS` /
//! `CUOBJDUMP`, the repository's `.tools/`, `PATH`); without them the checks print why and pass,
//! except where `ROOFPROBE_REQUIRE_TOOLS=1` (CI), where a missing tool is a failure.

use roofprobe::bench::{intensity, peak, tensor, Precision};
use roofprobe::kernels::{MMA as MMA_PTX, MMA_SM89 as MMA_SM89_PTX, PEAK as PEAK_PTX};
use std::path::{Path, PathBuf};
use std::process::Command;

const ARCHES: [u32; 4] = [80, 86, 89, 90];

struct Tools {
    ptxas: PathBuf,
    cuobjdump: PathBuf,
}

/// The tools (found as every offline check finds them, `tests/tools.rs`), or `None` after
/// saying why the check is skipped (a failure where `ROOFPROBE_REQUIRE_TOOLS=1`, as in CI).
fn tools(check: &str) -> Option<Tools> {
    let ptxas = crate::tools::or_skip("ptxas", "PTXAS", check);
    let cuobjdump = crate::tools::or_skip("cuobjdump", "CUOBJDUMP", check);
    match (ptxas, cuobjdump) {
        (Some(ptxas), Some(cuobjdump)) => Some(Tools { ptxas, cuobjdump }),
        _ => None,
    }
}

/// The architecture a PTX file's `.target` names (`sm_89` → 89).
fn target_arch(ptx: &str) -> u32 {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".target sm_"))
        .and_then(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
                .parse()
                .ok()
        })
        .expect("every kernel file declares its .target")
}

/// One SASS instruction: (address, opcode with modifiers, whole text).
type Instruction = (u64, String, String);
/// A function's name and instructions.
type Function = (String, Vec<Instruction>);

/// What ptxas said and the SASS of every function, for one PTX text on one architecture.
struct Assembled {
    info: String,
    functions: Vec<Function>,
}

fn assemble(tools: &Tools, ptx: &str, arch: u32, dir: &Path, stem: &str) -> Assembled {
    let src = dir.join(format!("{stem}.ptx"));
    let cubin = dir.join(format!("{stem}.sm_{arch}.cubin"));
    std::fs::write(&src, ptx).unwrap();
    let out = Command::new(&tools.ptxas)
        .arg(format!("-arch=sm_{arch}"))
        .arg("-v")
        .arg(&src)
        .arg("-o")
        .arg(&cubin)
        .output()
        .expect("running ptxas");
    let info =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ptxas sm_{arch} {stem}:\n{info}");
    let dump = Command::new(&tools.cuobjdump)
        .arg("--dump-sass")
        .arg(&cubin)
        .output()
        .expect("running cuobjdump");
    assert!(dump.status.success(), "cuobjdump {stem}");
    Assembled {
        info,
        functions: parse_sass(&String::from_utf8_lossy(&dump.stdout)),
    }
}

/// Splits cuobjdump output into functions of (address, opcode, line).
fn parse_sass(text: &str) -> Vec<Function> {
    let mut functions: Vec<Function> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.trim().strip_prefix("Function : ") {
            functions.push((name.trim().to_string(), Vec::new()));
            continue;
        }
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix("/*") else {
            continue;
        };
        let Some((addr, instr)) = rest.split_once("*/") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let instr = instr.split(';').next().unwrap_or("").trim();
        if instr.is_empty() {
            continue;
        }
        // skip a guard predicate (@P0, @!PT)
        let mut words = instr.split_whitespace();
        let mut op = words.next().unwrap_or("");
        if op.starts_with('@') {
            op = words.next().unwrap_or("");
        }
        if let Some((_, body)) = functions.last_mut() {
            body.push((addr, op.to_string(), instr.to_string()));
        }
    }
    functions
}

/// The instructions of a function's loop: from the target of its backward branch to the
/// branch, without `NOP`s. (ptxas's `BRA` to itself after `EXIT` is not a loop; the NOPs are
/// issue-slot padding that sm_90 needs after each DMMA, not work competing for a pipe.)
fn timed_loop(body: &[Instruction]) -> Vec<Instruction> {
    let branch = body.iter().find_map(|(addr, op, text)| {
        if !op.starts_with("BRA") {
            return None;
        }
        let target = text
            .split_whitespace()
            .last()
            .and_then(|t| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok())?;
        (target < *addr).then_some((target, *addr))
    });
    let (start, end) = branch.expect("the kernel has a loop");
    body.iter()
        .filter(|(a, op, _)| (start..=end).contains(a) && op != "NOP")
        .cloned()
        .collect()
}

fn assert_no_spills(info: &str, what: &str) {
    for line in info.lines().filter(|l| l.contains("spill")) {
        assert!(
            line.contains("0 bytes spill stores") && line.contains("0 bytes spill loads"),
            "{what}: {line}"
        );
    }
    for line in info.lines().filter(|l| l.contains("stack frame")) {
        assert!(
            line.trim_start().starts_with("0 bytes stack frame"),
            "{what}: {line}"
        );
    }
    assert!(
        info.contains("spill"),
        "{what}: ptxas -v printed no spill line:\n{info}"
    );
}

/// The SASS opcode family a kernel's loop must be made of.
fn expected_family(precision: Precision) -> &'static [&'static str] {
    match precision {
        Precision::F64 => &["DFMA"],
        Precision::F32 => &["FFMA"],
        Precision::F16x2 | Precision::Bf16x2 => &["HFMA2"],
        Precision::I32 => &["IMAD"],
        Precision::S8S32 => &["IMMA"],
        Precision::F64F64 => &["DMMA"],
        // sm_89 runs fp8 as QMMA; later parts may name it HMMA
        Precision::E4m3F32 => &["QMMA", "HMMA"],
        _ => &["HMMA"],
    }
}

fn is_family(op: &str, family: &[&str]) -> bool {
    family
        .iter()
        .any(|f| op == *f || op.starts_with(&format!("{f}.")))
}

/// Every peak and tensor kernel: no spills on any architecture it targets, and ≥ 90 % of its
/// timed loop is the instruction it measures.
#[test]
fn compute_kernels_assemble_and_their_loops_are_the_instruction_measured() {
    let Some(tools) = tools("SASS instruction mix") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let files: [(&str, &str); 3] = [
        ("peak", PEAK_PTX),
        ("mma", MMA_PTX),
        ("mma_sm89", MMA_SM89_PTX),
    ];
    let mut kernels: Vec<(String, Precision)> = peak::PRECISIONS
        .iter()
        .map(|&p| (format!("{}_{}", peak::KERNEL, p.as_str()), p))
        .collect();
    kernels.extend(
        tensor::PRECISIONS
            .iter()
            .map(|&p| (tensor::entry_name(p), p)),
    );
    let mut report = Vec::new();
    for (stem, ptx) in files {
        let min_arch = target_arch(ptx);
        for arch in ARCHES.into_iter().filter(|&a| a >= min_arch) {
            let asm = assemble(&tools, ptx, arch, dir.path(), stem);
            assert_no_spills(&asm.info, &format!("{stem} sm_{arch}"));
            for (name, body) in &asm.functions {
                if stem == "mma_sm89" && arch == 90 {
                    // sm_90 has no fp8 mma.sync: ptxas unpacks e4m3 to f16, hoists A·B out of
                    // the loop and accumulates with FADD. The CUDA backend therefore runs this
                    // kernel only where it is native (cuda_compute::native_fp8_mma); pin that.
                    let lp = timed_loop(body);
                    let mma = lp
                        .iter()
                        .filter(|(_, op, _)| is_family(op, &["QMMA", "HMMA"]))
                        .count();
                    assert!(
                        (mma as f64) < 0.5 * lp.len() as f64,
                        "sm_90 fp8 mma.sync looks native now ({mma} of {}): revisit \
                         native_fp8_mma",
                        lp.len()
                    );
                    continue;
                }
                let (_, precision) = kernels
                    .iter()
                    .find(|(k, _)| k == name)
                    .unwrap_or_else(|| panic!("unknown kernel {name} in {stem}"));
                let family = expected_family(*precision);
                let lp = timed_loop(body);
                let hits = lp.iter().filter(|(_, op, _)| is_family(op, family)).count();
                let share = hits as f64 / lp.len() as f64;
                report.push(format!(
                    "sm_{arch} {name}: {hits}/{} {} ({:.1}%)",
                    lp.len(),
                    family[0],
                    100.0 * share
                ));
                assert!(
                    share >= 0.9,
                    "sm_{arch} {name}: only {hits} of {} loop instructions are {family:?}:\n{}",
                    lp.len(),
                    lp.iter()
                        .map(|(_, _, t)| t.as_str())
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    // every kernel was seen on every architecture it targets (fp8: sm_89 only, see above)
    assert_eq!(report.len(), 4 * 5 + 4 * 6 + 1);
}

/// The sweep's variants assemble without spills, and the SASS keeps all k FMAs per word (none
/// folded away: the results are stored).
#[test]
fn sweep_variants_keep_k_fmas_per_word() {
    let Some(tools) = tools("sweep SASS") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for p in intensity::PRECISIONS {
        for k in [0u32, 1, 64, 1024] {
            let ptx = intensity::expand(p, k);
            let arch = if k == 1024 { 90 } else { 80 };
            let stem = intensity::entry_name(p, k);
            let asm = assemble(&tools, &ptx, arch, dir.path(), &stem);
            assert_no_spills(&asm.info, &stem);
            let (_, body) = &asm.functions[0];
            let family = expected_family(p);
            let fmas = body
                .iter()
                .filter(|(_, op, _)| is_family(op, family))
                .count();
            let vec = if p == Precision::F64 { 2 } else { 4 };
            // main loop (2 vectors), remainder (1 vector), tail (1 word); ptxas also uses IMAD
            // for address arithmetic and HFMA2.MMA for moves, so there may be a few more
            let want = k as usize * (3 * vec + 1);
            assert!(
                fmas >= want && fmas <= want + 64,
                "{stem} sm_{arch}: {fmas} {family:?}, expected {want}"
            );
        }
    }
}

#[test]
fn sass_parser_finds_the_loop() {
    let text = "\t\tFunction : fma_f32\n\
        /*0000*/   MOV R1, c[0x0][0x28] ;\n\
        /*0010*/   FFMA R2, R2, R3, R4 ;\n\
        /*0020*/   FFMA R5, R5, R3, R4 ;\n\
        /*0030*/   IADD3 R0, R0, -0x1, RZ ;\n\
        /*0038*/   NOP ;\n\
        /*0040*/ @P0 BRA 0x10 ;\n\
        /*0050*/   EXIT ;\n\
        /*0060*/   BRA 0x60;\n";
    let f = parse_sass(text);
    assert_eq!(f[0].0, "fma_f32");
    let lp = timed_loop(&f[0].1);
    assert_eq!(lp.len(), 4);
    assert_eq!(lp.iter().filter(|(_, op, _)| op == "FFMA").count(), 2);
    assert!(is_family("HFMA2.MMA", &["HFMA2"]));
    assert!(is_family("HFMA2.BF16_V2", &["HFMA2"]));
    assert!(!is_family("FFMA2", &["FFMA"]));
    assert_eq!(target_arch(MMA_SM89_PTX), 89);
    assert_eq!(target_arch(PEAK_PTX), 80);
}
