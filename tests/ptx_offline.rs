//! Offline PTX checks (testing layer 3): every module in `roofprobe::kernels::all()` assembles
//! with ptxas for each architecture it may run on with no spills and no stack, and the SASS of
//! the vector kernels uses the instructions we meant (128-bit global loads and stores).

use crate::tools;
use roofprobe::bench::stream::StreamKernel;
use roofprobe::kernels;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The architectures we check, oldest first.
const ARCHS: [&str; 4] = ["sm_80", "sm_86", "sm_89", "sm_90"];

/// The architectures a module with `.target target` is assembled for: every checked one at or
/// above it; an arch-specific target (`sm_90a`) only itself.
pub fn archs_for(target: &str) -> Vec<String> {
    if target.ends_with('a') {
        return vec![target.to_string()];
    }
    let need = kernels::target_capability(target).expect("a .target of the form sm_XY");
    ARCHS
        .iter()
        .filter(|a| kernels::target_capability(a).is_some_and(|c| c >= need))
        .map(|a| a.to_string())
        .collect()
}

/// Per-function (stack, spill stores, spill loads) from `ptxas -v` output.
pub fn resource_usage(ptxas_log: &str) -> BTreeMap<String, (u64, u64, u64)> {
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in ptxas_log.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            current = Some(rest.trim().to_string());
        } else if line.contains("bytes stack frame") {
            let nums: Vec<u64> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .filter_map(|s| s.parse().ok())
                .collect();
            if let (Some(f), [stack, stores, loads, ..]) = (current.take(), nums.as_slice()) {
                out.insert(f, (*stack, *stores, *loads));
            }
        }
    }
    out
}

/// Function name → SASS instruction lines, from `cuobjdump --dump-sass`.
pub fn sass_by_function(dump: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in dump.lines() {
        if let Some(name) = line.trim().strip_prefix("Function : ") {
            current = Some(name.trim().to_string());
            out.entry(name.trim().to_string()).or_default();
        } else if let Some(f) = &current {
            // instruction lines look like `/*0090*/  LDG.E.128 R8, desc[UR4][R2.64] ;`
            if let Some(pos) = line.find("*/") {
                let text = line[pos + 2..].trim();
                if line.trim_start().starts_with("/*")
                    && !text.is_empty()
                    && !text.starts_with("/*")
                {
                    out.get_mut(f)
                        .expect("inserted above")
                        .push(text.to_string());
                }
            }
        }
    }
    out
}

fn assemble(ptxas: &Path, ptx_file: &Path, arch: &str, cubin: &Path) -> Result<String, String> {
    let out = Command::new(ptxas)
        .args(["-v", &format!("-arch={arch}"), "-o"])
        .arg(cubin)
        .arg(ptx_file)
        .output()
        .map_err(|e| format!("running {}: {e}", ptxas.display()))?;
    let log =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        Ok(log)
    } else {
        Err(log)
    }
}

/// Writes each module to a temp dir and assembles it for its archs: (module, arch) → cubin.
fn assemble_all(ptxas: &Path, dir: &Path) -> (BTreeMap<(String, String), PathBuf>, Vec<String>) {
    let mut cubins = BTreeMap::new();
    let mut failures = Vec::new();
    for source in kernels::all() {
        let target = kernels::target(&source.ptx).expect("every module declares .target");
        let stem = source.name.replace(['#', '=', '/'], "_");
        let ptx_file = dir.join(format!("{stem}.ptx"));
        std::fs::write(&ptx_file, &source.ptx).unwrap();
        for arch in archs_for(target) {
            let cubin = dir.join(format!("{stem}.{arch}.cubin"));
            match assemble(ptxas, &ptx_file, &arch, &cubin) {
                Err(log) => failures.push(format!(
                    "{} for {arch} does not assemble:\n{log}",
                    source.name
                )),
                Ok(log) => {
                    let usage = resource_usage(&log);
                    for entry in kernels::entries(&source.ptx) {
                        match usage.get(&entry) {
                            None => failures.push(format!("{}: no ptxas report for {entry} on {arch}", source.name)),
                            Some(&(0, 0, 0)) => {}
                            Some((stack, st, ld)) => failures.push(format!(
                                "{}: {entry} on {arch}: {stack} bytes stack, {st} bytes spill stores, {ld} bytes spill loads"
                                , source.name
                            )),
                        }
                    }
                    cubins.insert((source.name.clone(), arch), cubin);
                }
            }
        }
    }
    (cubins, failures)
}

#[test]
fn every_kernel_assembles_for_every_arch_without_spills() {
    let Some(ptxas) = tools::or_skip(
        "ptxas",
        "PTXAS",
        "every_kernel_assembles_for_every_arch_without_spills",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (cubins, failures) = assemble_all(&ptxas, dir.path());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // every module was assembled at least once
    for source in kernels::all() {
        assert!(
            cubins.keys().any(|(name, _)| *name == source.name),
            "{} was not assembled for any arch",
            source.name
        );
    }
}

#[test]
fn stream_kernels_use_128_bit_global_accesses() {
    let test = "stream_kernels_use_128_bit_global_accesses";
    let (Some(ptxas), Some(cuobjdump)) = (
        tools::or_skip("ptxas", "PTXAS", test),
        tools::or_skip("cuobjdump", "CUOBJDUMP", test),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ptx = dir.path().join("stream.ptx");
    std::fs::write(&ptx, kernels::STREAM).unwrap();
    let mut problems = Vec::new();
    for arch in ARCHS {
        let cubin = dir.path().join(format!("stream.{arch}.cubin"));
        assemble(&ptxas, &ptx, arch, &cubin).unwrap();
        let out = Command::new(&cuobjdump)
            .arg("--dump-sass")
            .arg(&cubin)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cuobjdump failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sass = sass_by_function(&String::from_utf8_lossy(&out.stdout));
        for entry in kernels::entries(kernels::STREAM) {
            let kernel = StreamKernel::from_name(entry.split('_').next().unwrap()).unwrap();
            let code = sass.get(&entry).cloned().unwrap_or_default();
            let has = |op: &str| code.iter().any(|i| i.split_whitespace().any(|w| w == op));
            if kernel.inputs() > 0 && !has("LDG.E.128") {
                problems.push(format!("{entry} on {arch}: no LDG.E.128"));
            }
            if kernel.outputs() > 0 && !has("STG.E.128") {
                problems.push(format!("{entry} on {arch}: no STG.E.128"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn parsers_read_tool_output() {
    let log = "ptxas info    : Function properties for copy_f32\n    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\nptxas info    : Function properties for add_f32\n    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
    let u = resource_usage(log);
    assert_eq!(u["copy_f32"], (0, 8, 4));
    assert_eq!(u["add_f32"], (16, 0, 0));
    let dump = "\t\tFunction : copy_f32\n        /*0090*/                   LDG.E.128 R8, desc[UR4][R2.64] ;    /* 0x0000000402087981 */\n                                                                       /* 0x000ea2000c1e1d00 */\n";
    let s = sass_by_function(dump);
    assert_eq!(
        s["copy_f32"],
        vec!["LDG.E.128 R8, desc[UR4][R2.64] ;    /* 0x0000000402087981 */"]
    );
    assert_eq!(archs_for("sm_80"), ["sm_80", "sm_86", "sm_89", "sm_90"]);
    assert_eq!(archs_for("sm_89"), ["sm_89", "sm_90"]);
    assert_eq!(archs_for("sm_90a"), ["sm_90a"]);
}
