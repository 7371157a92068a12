//! What several test modules share: the files of one kind in a folder, the checked-in results,
//! the binary run with its exit code and output, a child's output as text, and a child given
//! libraries of its own ahead of the loader's path.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The files in `dir` whose extension is `ext`, sorted (run files sort oldest first).
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// The checked-in runs' files of one kind (`csv`, `json`), oldest first.
pub fn checked_in(ext: &str) -> Vec<PathBuf> {
    files_with_ext(&Path::new(env!("CARGO_MANIFEST_DIR")).join("results"), ext)
}

/// `roofprobe ARGS…`: its exit code (-1 for a signal), stdout and stderr.
pub fn roofprobe_output(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_roofprobe"))
        .args(args)
        .output()
        .expect("roofprobe runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The DRAM ceiling (GB/s) of the calibration JSON at `path`.
pub fn dram_gbps(path: &Path) -> f64 {
    let cal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    cal["memory_ceilings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["level"] == "dram")
        .unwrap()["gbps"]
        .as_f64()
        .unwrap()
}

/// Whether a planned case's note is the one a Hopper (compute capability 9.0) gives its
/// `mma.sync` tensor rows (their %theory is the wgmma rate, or for f64, which no wgmma covers,
/// the FP64 tensor rate): a note the plan means, not a module that failed to load. The GPU tests
/// and the H200 plan checks take it from here alike.
pub fn is_legacy_mma_note(p: &roofprobe::backend::PlannedCase, cc: (u32, u32)) -> bool {
    p.case.family == roofprobe::bench::Family::Tensor
        && cc == (9, 0)
        && roofprobe::bench::tensor::Mma::of_case(&p.case).is_ok_and(|m| {
            Some(p.note.as_str()) == roofprobe::backend::cuda_plan::tensor_note(cc, m)
        })
}

/// A child's output as text (invalid UTF-8 replaced).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `cmd` with `dir` first on the loader's path (`LD_LIBRARY_PATH`), before what this process
/// has there: the libraries in `dir` are the ones the child loads.
pub fn library_dir_first<'a>(cmd: &'a mut Command, dir: &Path) -> &'a mut Command {
    let mut paths = vec![dir.to_path_buf()];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    cmd.env(
        "LD_LIBRARY_PATH",
        std::env::join_paths(paths).expect("a path list"),
    )
}
