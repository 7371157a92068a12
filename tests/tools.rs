//! Finding the offline CUDA tools (ptxas, cuobjdump) for the PTX checks.
//!
//! Looked up in this order: the `PTXAS` / `CUOBJDUMP` environment variables, the repository's
//! `.tools/venv` (where `.ci/run` installs the PyPI packages; not the rest of `.tools/`, where
//! it puts ptxas 13.0, which it names with `PTXAS` for a second pass, and the AArch64 root), then
//! `PATH`. Where a tool is missing the check is skipped with a printed reason, unless
//! `ROOFPROBE_REQUIRE_TOOLS=1` (set by `.ci/run`), where a missing tool fails the test.

use std::path::{Path, PathBuf};

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// Searches `.tools/venv` for an executable called `name` (pip puts them under
/// `site-packages/nvidia/*/bin/`).
fn in_tools_dir(name: &str) -> Option<PathBuf> {
    fn walk(dir: &Path, name: &str, depth: u32) -> Option<PathBuf> {
        if depth > 8 {
            return None;
        }
        let mut entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in &entries {
            let p = e.path();
            if p.is_file() && p.file_name().is_some_and(|n| n == name) {
                return Some(p);
            }
        }
        entries
            .iter()
            .filter(|e| e.path().is_dir())
            .find_map(|e| walk(&e.path(), name, depth + 1))
    }
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/venv"),
        name,
        0,
    )
}

/// The path of tool `name` (`ptxas`, `cuobjdump`), or why it is not there.
pub fn find(name: &str, env_var: &str) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(env_var) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{env_var}={} does not exist", p.display()))
        };
    }
    in_tools_dir(name).or_else(|| on_path(name)).ok_or_else(|| {
        format!("{name} not found (set {env_var}, or run .ci/run which installs it from PyPI)")
    })
}

/// True where a missing tool must fail the test (CI).
pub fn required() -> bool {
    std::env::var("ROOFPROBE_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

/// Prints why `test` skips, or panics with it where tools are required (CI).
pub fn skip(test: &str, why: &str) {
    if required() {
        panic!("{test}: {why}, and ROOFPROBE_REQUIRE_TOOLS=1");
    }
    eprintln!("skipped {test}: {why}");
}

/// The tool, or `None` after printing why the caller skips (panicking instead in CI).
pub fn or_skip(name: &str, env_var: &str, test: &str) -> Option<PathBuf> {
    find(name, env_var).map_err(|why| skip(test, &why)).ok()
}
