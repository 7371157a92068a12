//! The readers' outputs on the committed runs, byte for byte: `scripts/golden-outputs` runs
//! `report`, `plot`, `compare`, `fleet`, `export` (every format), `estimate` and `specs` on
//! results/ and hashes every file, stdout, stderr and exit code they give; the list must equal
//! tests/golden-outputs.sha256. A refactor keeps every byte; a change meant to alter an output
//! updates the list in the same commit (the script's header says how to see the diff).

use std::path::Path;
use std::process::Command;

#[test]
fn the_readers_outputs_on_the_committed_runs_are_unchanged() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("golden");
    let status = Command::new(top.join("scripts/golden-outputs"))
        .arg(env!("CARGO_BIN_EXE_roofprobe"))
        .arg(&out)
        .status()
        .expect("scripts/golden-outputs runs");
    assert!(status.success(), "scripts/golden-outputs failed: {status}");
    let got = std::fs::read_to_string(dir.path().join("golden.sha256")).unwrap();
    let want = std::fs::read_to_string(top.join("tests/golden-outputs.sha256")).unwrap();
    let lines = |s: &str| {
        s.lines()
            .map(str::to_string)
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (got, want) = (lines(&got), lines(&want));
    let changed: Vec<_> = got.symmetric_difference(&want).collect();
    assert!(
        changed.is_empty(),
        "{} of {} output hashes differ from tests/golden-outputs.sha256 (lines only in the \
         new list, or only in the old):\n{}",
        changed.len(),
        want.len(),
        changed
            .iter()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        want.len() > 200,
        "the golden list is short: {} files",
        want.len()
    );
}
