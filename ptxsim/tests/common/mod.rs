//! Helpers shared by ptxsim's integration tests: parse a PTX snippet (after checking, when
//! ptxas is available, that the real assembler accepts it too), and small data generators.
#![allow(dead_code)]

use std::process::Command;

use ptxsim::Module;

/// Where ptxas is: `$PTXAS`, else `ptxas` on the PATH; `None` if neither works.
fn ptxas() -> Option<String> {
    let candidate = std::env::var("PTXAS").unwrap_or_else(|_| "ptxas".to_string());
    Command::new(&candidate)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| candidate)
}

/// Checks with ptxas (when present) that `ptx` is legal PTX for its `.target`, so a test
/// cannot pass by feeding the interpreter something the real toolchain rejects.
///
/// Without ptxas the check is skipped, unless `PTXSIM_REQUIRE_PTXAS` is set (CI sets it:
/// there a missing tool is a failure, not a skip).
pub fn assert_ptxas_accepts(name: &str, ptx: &str) {
    let Some(ptxas) = ptxas() else {
        let required =
            std::env::var("PTXSIM_REQUIRE_PTXAS").is_ok_and(|v| !v.is_empty() && v != "0");
        assert!(
            !required,
            "PTXSIM_REQUIRE_PTXAS is set but no ptxas was found (set PTXAS or PATH)"
        );
        return;
    };
    let arch = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .map(|t| t.split(',').next().unwrap_or("sm_80").trim().to_string())
        .unwrap_or_else(|| "sm_80".to_string());
    let dir = std::env::temp_dir().join(format!("ptxsim-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(format!("{name}.ptx"));
    std::fs::write(&file, ptx).expect("write temp ptx");
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg(&file)
        .arg("-o")
        .arg("/dev/null")
        .output()
        .expect("run ptxas");
    assert!(
        out.status.success(),
        "ptxas rejects test snippet `{name}`:\n{}\n{ptx}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Parses a test snippet that must be valid, after the ptxas check.
pub fn module(name: &str, ptx: &str) -> Module {
    assert_ptxas_accepts(name, ptx);
    Module::parse(ptx).unwrap_or_else(|e| panic!("{name}: {e}\n{ptx}"))
}

/// A header for snippets: PTX 7.0 / sm_80 unless a newer feature needs more.
pub fn header(version: &str, target: &str) -> String {
    format!(".version {version}\n.target {target}\n.address_size 64\n")
}
