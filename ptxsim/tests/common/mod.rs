//! Helpers shared by ptxsim's integration tests: parse a PTX snippet (after checking, when
//! ptxas is available, that the real assembler accepts it too), and small data generators.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use ptxsim::Module;

/// Where ptxas is, found as roofprobe's own tests find it: `$PTXAS`, else the workspace's
/// `.tools/venv` (where `.ci/run` installs it from PyPI), else `ptxas` on the PATH.
fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(PathBuf::from(p));
    }
    fn walk(dir: &Path, depth: u32) -> Option<PathBuf> {
        if depth > 8 {
            return None;
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        if let Some(p) = entries
            .iter()
            .find(|p| p.is_file() && p.file_name().is_some_and(|n| n == "ptxas"))
        {
            return Some(p.clone());
        }
        entries
            .iter()
            .filter(|p| p.is_dir())
            .find_map(|p| walk(p, depth + 1))
    }
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/venv");
    walk(&tools, 0).or_else(|| {
        Command::new("ptxas")
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| PathBuf::from("ptxas"))
    })
}

/// Checks with ptxas (when present) that `ptx` is legal PTX for its `.target`, so a test
/// cannot pass by feeding the interpreter something the real toolchain rejects.
///
/// Without ptxas the check is skipped, unless `ROOFPROBE_REQUIRE_TOOLS=1` (set by `.ci/run`:
/// there a missing tool is a failure, not a skip).
pub fn assert_ptxas_accepts(name: &str, ptx: &str) {
    if let Some(Err(stderr)) = ptxas_verdict(name, ptx) {
        panic!("ptxas rejects test snippet `{name}`:\n{stderr}\n{ptx}");
    }
}

/// Checks with ptxas (when present) that `ptx` is *not* legal PTX for its `.target`, and
/// returns ptxas's complaint (empty without ptxas): a snippet a test expects ptxsim to refuse
/// must be one the real toolchain refuses too.
pub fn assert_ptxas_rejects(name: &str, ptx: &str) -> String {
    match ptxas_verdict(name, ptx) {
        Some(Ok(())) => {
            panic!("ptxas accepts test snippet `{name}`, which must be invalid:\n{ptx}")
        }
        Some(Err(stderr)) => stderr,
        None => String::new(),
    }
}

/// ptxas's verdict on `ptx` for its `.target` (`Err` holds its messages); `None` without
/// ptxas (a failure instead under `ROOFPROBE_REQUIRE_TOOLS=1`, as `.ci/run` sets it).
pub fn ptxas_verdict(name: &str, ptx: &str) -> Option<Result<(), String>> {
    let Some(ptxas) = ptxas() else {
        let required = std::env::var("ROOFPROBE_REQUIRE_TOOLS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "ROOFPROBE_REQUIRE_TOOLS=1 but no ptxas was found (set PTXAS)"
        );
        return None;
    };
    let arch = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .map(|t| t.split(',').next().unwrap_or("sm_80").trim().to_string())
        .unwrap_or_else(|| "sm_80".to_string());
    let dir = std::env::temp_dir().join(format!("ptxsim-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // one file per call: tests run in parallel threads and may check the same snippet
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("{name}-{call}.ptx"));
    std::fs::write(&file, ptx).expect("write temp ptx");
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg(&file)
        .arg("-o")
        .arg("/dev/null")
        .output()
        .expect("run ptxas");
    let _ = std::fs::remove_file(&file);
    Some(if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    })
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
