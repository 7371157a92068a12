//! The scripts under scripts/: the device check fits the time a lent GPU gives one call and
//! fails at once, saying why, when its binaries did not come with it; `scripts/sim-cuda` runs
//! roofprobe against the simulated driver.

use std::path::{Path, PathBuf};
use std::process::Command;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

/// The `step NAME SECONDS …` lines of scripts/device-check, as (name, seconds).
pub fn device_check_steps() -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(script("device-check")).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("step "))
        .map(|rest| {
            let mut words = rest.split_whitespace();
            let name = words.next().expect("a step name").to_string();
            let limit = words
                .next()
                .and_then(|w| w.parse().ok())
                .unwrap_or_else(|| panic!("step {name} has no time limit in seconds"));
            (name, limit)
        })
        .collect()
}

/// The step limits add up to 7 minutes at most (a rerun fits in 15 minutes of device time under
/// a 10-minute cap per command), and the families never run on a GPU come first: devices, then
/// cache, peak and tensor, then STREAM, then the sweep.
#[test]
fn the_device_check_fits_its_budget_and_runs_the_cheap_families_first() {
    let steps = device_check_steps();
    let total: u32 = steps.iter().map(|(_, s)| s).sum();
    assert!(total <= 420, "{total} s: {steps:?}");
    let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
    let at = |n: &str| {
        names
            .iter()
            .position(|s| *s == n)
            .unwrap_or_else(|| panic!("no step {n}: {names:?}"))
    };
    assert!(at("environment") < at("devices"));
    assert!(at("nvidia-smi") < at("devices"));
    assert!(at("devices") < at("run-cache-peak-tensor-latency"));
    assert!(at("run-cache-peak-tensor-latency") < at("run-stream"));
    assert!(at("run-stream") < at("run-sweep"));
    assert!(at("run-sweep") < at("run-gemm"));
}

/// Without the packed binaries the check stops at once with one line saying what to do, and
/// touches no GPU; binaries that lost their run bit get it back; a toolkit's stub libcuda folder
/// is dropped from LD_LIBRARY_PATH, saying so.
#[test]
fn the_device_check_fails_fast_without_its_binaries() {
    let packed = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let run = || {
        Command::new(script("device-check"))
            .env("ROOFPROBE_DEVICE_DIR", packed.path())
            .env("OUT", out.path())
            .output()
            .unwrap()
    };
    let missing = run();
    let said = String::from_utf8_lossy(&missing.stderr).into_owned();
    assert_eq!(missing.status.code(), Some(2), "{said}");
    assert!(
        said.contains("is missing") && said.contains("device-pack"),
        "{said}"
    );
    for dir in ["release", "release/deps"] {
        std::fs::create_dir_all(packed.path().join(dir)).unwrap();
    }
    // binaries that lost their run bit on the way get it back (no step asked for: none runs)
    use std::os::unix::fs::PermissionsExt;
    for bin in ["release/roofprobe", "release/deps/suite"] {
        std::fs::write(packed.path().join(bin), "").unwrap();
    }
    let restored = Command::new(script("device-check"))
        .env("ROOFPROBE_DEVICE_DIR", packed.path())
        .env("OUT", out.path())
        .env("DEVICE_CHECK_STEPS", "none")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&restored.stderr).into_owned();
    assert_eq!(restored.status.code(), Some(0), "{said}");
    for bin in ["release/roofprobe", "release/deps/suite"] {
        let mode = std::fs::metadata(packed.path().join(bin))
            .unwrap()
            .permissions()
            .mode();
        assert!(mode & 0o100 != 0, "{bin}: {mode:o}");
    }
    let steps = std::fs::read_to_string(out.path().join("steps.txt")).unwrap();
    assert!(
        steps.contains("devices: skipped (not in DEVICE_CHECK_STEPS)"),
        "{steps}"
    );
    assert!(!steps.contains("LD_LIBRARY_PATH"), "{steps}");
    let stubs = Command::new(script("device-check"))
        .env("ROOFPROBE_DEVICE_DIR", packed.path())
        .env("OUT", out.path())
        .env("DEVICE_CHECK_STEPS", "none")
        .env("LD_LIBRARY_PATH", "/x/lib64:/usr/local/cuda/lib64/stubs:/y")
        .output()
        .unwrap();
    assert_eq!(stubs.status.code(), Some(0));
    let steps = std::fs::read_to_string(out.path().join("steps.txt")).unwrap();
    let dropped = "dropped the stub libraries' folders: \
                   /x/lib64:/usr/local/cuda/lib64/stubs:/y -> /x/lib64:/y";
    assert!(steps.contains(dropped), "{steps}");
}

/// What scripts/device-check did with stand-ins for the packed binaries.
struct CheckRun {
    /// The script's own exit and output.
    done: std::process::Output,
    /// Its steps.txt.
    steps: String,
    /// The stand-ins' arguments, one line per call, in order (`roofprobe run …`, `suite …`).
    calls: String,
    /// How many files it returned.
    returned: usize,
    /// The `ROOFPROBE_CUBLAS` each `run` call saw, a line each.
    cublas_seen: String,
    /// The `CUDA_CACHE_PATH` each call of either binary saw, a line each.
    jit_seen: String,
    /// What logs.tar.gz holds (`tar -t`), a path a line.
    archived: String,
}

/// scripts/device-check run with stand-ins for the packed binaries, `devices` naming a cuBLAS.
fn device_check_with_stubs() -> CheckRun {
    // (no file search through this machine's folders: an empty folder stands for them)
    let nowhere = tempfile::tempdir().unwrap();
    device_check_with(
        "cuBLAS: cuBLAS 13.0.0 (libcublas.so.13)",
        &[("ROOFPROBE_LIB_ROOTS", nowhere.path())],
    )
}

/// The same, with the `devices` stand-in printing `devices_says` and `env` added to the
/// script's environment (`ROOFPROBE_CUBLAS`, `CUDA_CACHE_PATH` and `ROOFPROBE_REQUIRE_GPU`
/// removed from it).
fn device_check_with(devices_says: &str, env: &[(&str, &Path)]) -> CheckRun {
    device_check_estimating(devices_says, env, "12.5", "20.0")
}

/// [`device_check_with`], its stand-ins estimating each run step at `run_estimate` seconds and
/// the GPU tests' small-size plan at `tests_estimate`.
fn device_check_estimating(
    devices_says: &str,
    env: &[(&str, &Path)],
    run_estimate: &str,
    tests_estimate: &str,
) -> CheckRun {
    use std::os::unix::fs::PermissionsExt;
    let packed = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let calls = packed.path().join("calls");
    let seen = packed.path().join("cublas-seen");
    let jit = packed.path().join("jit-seen");
    for (dir, name) in [("release", "roofprobe"), ("release/deps", "suite")] {
        std::fs::create_dir_all(packed.path().join(dir)).unwrap();
        let stub = packed.path().join(dir).join(name);
        let body = format!(
            "#!/bin/sh\n\
             echo \"{name} $*${{ROOFPROBE_REQUIRE_GPU:+ (ROOFPROBE_REQUIRE_GPU=$ROOFPROBE_REQUIRE_GPU)}}\" >> '{}'\n\
             [ \"$1\" = devices ] && echo '{devices_says}' && mkdir -p \"$CUDA_CACHE_PATH/cc\" \
               && echo sass > \"$CUDA_CACHE_PATH/cc/module\"\n\
             [ \"$1 $2\" = 'devices --jit-out' ] && mkdir -p \"$3/cuda0\" \
               && echo elf > \"$3/cuda0/peak.ptx.cubin\"\n\
             [ \"$1\" = run ] && [ \"${{*%--dry-run}}\" = \"$*\" ] && echo \"${{ROOFPROBE_CUBLAS-}}\" >> '{}'\n\
             case \"$*\" in *--dry-run*) echo \"plan: 2 cases (x), about 12 s by the device's rated speeds: {run_estimate} s\";; esac\n\
             [ \"$1\" = --exact ] && [ -n \"${{ROOFPROBE_ESTIMATE_ONLY-}}\" ] \
               && echo \"estimate: cuda:0: 9 cases at 4096 bytes per array, as a quick run: {tests_estimate} s\"\n\
             [ \"$1\" = --exact ] && echo 'test result: ok. 1 passed; 0 failed'\n\
             echo \"${{CUDA_CACHE_PATH-}}\" >> '{}'\n\
             exit 0\n",
            calls.display(),
            seen.display(),
            jit.display()
        );
        std::fs::write(&stub, body).unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let done = Command::new(script("device-check"))
        .env_remove("ROOFPROBE_CUBLAS")
        .env_remove("CUDA_CACHE_PATH")
        .env_remove("ROOFPROBE_REQUIRE_GPU")
        .env_remove("DEVICE_CHECK_LIMIT_SCALE")
        .env("ROOFPROBE_DEVICE_DIR", packed.path())
        .env("OUT", out.path())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    let steps = std::fs::read_to_string(out.path().join("steps.txt")).unwrap();
    let calls = std::fs::read_to_string(&calls).unwrap_or_default();
    let seen = std::fs::read_to_string(&seen).unwrap_or_default();
    let jit = std::fs::read_to_string(&jit).unwrap_or_default();
    let returned = std::fs::read_dir(out.path()).unwrap().count();
    let archived = Command::new("tar")
        .arg("-tzf")
        .arg(out.path().join("logs.tar.gz"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    CheckRun {
        done,
        steps,
        calls,
        returned,
        cublas_seen: seen,
        jit_seen: jit,
        archived,
    }
}

/// Each step runs under the limit the script gives it, and `steps.txt` says which; a rehearsal
/// on the simulated driver (`scripts/rehearse-device-check`) multiplies every limit by
/// `DEVICE_CHECK_LIMIT_SCALE`, which is 1 unless set.
#[test]
fn every_step_runs_under_its_limit_times_the_rehearsal_scale() {
    let nowhere = tempfile::tempdir().unwrap();
    for scale in [None, Some("3")] {
        let mut env = vec![("ROOFPROBE_LIB_ROOTS", nowhere.path())];
        if let Some(s) = scale {
            env.push(("DEVICE_CHECK_LIMIT_SCALE", Path::new(s)));
        }
        let run = device_check_with("cuBLAS: cuBLAS 13.0.0 (libcublas.so.13)", &env);
        let factor: u32 = scale.map_or(1, |s| s.parse().unwrap());
        for (name, limit) in device_check_steps() {
            let line = run
                .steps
                .lines()
                .find(|l| l.starts_with(&format!("{name}: ")) && !l.contains(": estimate"))
                .unwrap_or_else(|| panic!("no {name} line:\n{}", run.steps));
            assert!(
                line.contains(&format!(" s of {} (log:", limit * factor)),
                "scale {factor}: {line}"
            );
        }
    }
}

/// Where roofprobe's own search finds no cuBLAS but the environment step lists one, the run
/// steps get it as `ROOFPROBE_CUBLAS` (libcublas.so.13 before .so.12, never cuBLASLt), and
/// steps.txt says so; where the search found one, or nothing is listed, the runs get none.
#[test]
fn a_cublas_the_search_missed_is_named_to_the_runs() {
    let image = tempfile::tempdir().unwrap();
    let lib = image.path().join("opt/vendor/lib");
    std::fs::create_dir_all(&lib).unwrap();
    for name in ["libcublasLt.so.13", "libcublas.so.12", "libcublas.so.13"] {
        std::fs::write(lib.join(name), "").unwrap();
    }
    let roots = [("ROOFPROBE_LIB_ROOTS", image.path())];
    let none = "cuBLAS: none: no cuBLAS found (tried …)";
    let CheckRun {
        steps,
        cublas_seen: seen,
        ..
    } = device_check_with(none, &roots);
    let named = lib.join("libcublas.so.13").display().to_string();
    let runs: Vec<&str> = seen.lines().collect();
    assert_eq!(runs.len(), 4, "{seen}");
    assert!(runs.iter().all(|r| *r == named), "{seen}");
    assert!(
        steps.contains(&format!("the runs name {named} with ROOFPROBE_CUBLAS")),
        "{steps}"
    );

    let CheckRun {
        steps,
        cublas_seen: seen,
        ..
    } = device_check_with("cuBLAS: cuBLAS 13.0.0 (x)", &roots);
    assert!(seen.lines().all(str::is_empty), "{seen}");
    assert!(!steps.contains("cuBLAS:"), "{steps}");

    let empty = tempfile::tempdir().unwrap();
    let CheckRun {
        steps,
        cublas_seen: seen,
        ..
    } = device_check_with(none, &[("ROOFPROBE_LIB_ROOTS", empty.path())]);
    assert!(seen.lines().all(str::is_empty), "{seen}");
    assert!(steps.contains("the cuBLAS rows say skipped"), "{steps}");
}

/// Every process the device check starts shares one JIT cache of its own, outside what comes
/// back: the driver compiles each PTX module once, in the first step that loads it, and no later
/// step pays that again because the home folder is read-only or the cache is off.
#[test]
fn every_device_check_step_shares_one_jit_cache() {
    let nowhere = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let CheckRun {
        steps,
        calls,
        jit_seen: jit,
        ..
    } = device_check_with(
        "cuBLAS: x",
        &[
            ("ROOFPROBE_LIB_ROOTS", nowhere.path()),
            ("TMPDIR", tmp.path()),
        ],
    );
    let paths: Vec<&str> = jit.lines().collect();
    // devices, the gpu tests, 4 runs and the driver's code
    assert_eq!(paths.len(), calls.lines().count(), "{jit}\n{calls}");
    assert!(paths.len() >= 6, "{calls}");
    assert!(
        paths
            .iter()
            .all(|p| *p == paths[0] && p.ends_with("roofprobe-jit-cache")),
        "{jit}"
    );
    assert_eq!(
        Path::new(paths[0]),
        tmp.path().join("roofprobe-jit-cache"),
        "{jit}"
    );
    assert!(Path::new(paths[0]).is_dir(), "{} not made", paths[0]);
    // (the stand-in `devices` leaves one compiled module in it)
    assert!(steps.contains("JIT cache: 1 files"), "{steps}");
    let script = std::fs::read_to_string(script("device-check")).unwrap();
    assert!(
        script.contains("CUDA_CACHE_DISABLE=0"),
        "the cache is not forced on"
    );
    assert!(
        script.contains("export CUDA_CACHE_MAXSIZE=1073741824"),
        "the cache's size is left to the driver's default"
    );
}

/// The JIT cache comes back in logs.tar.gz (the SASS the driver made, to read beside the
/// offline checks'), unless the archive would pass its limit with it: then the logs come back
/// without it, and steps.txt says so. The driver-code step's folder comes back either way.
#[test]
fn the_jit_cache_comes_back_with_the_logs_unless_too_big() {
    let nowhere = tempfile::tempdir().unwrap();
    for (limit, kept) in [(None, true), (Some("0"), false)] {
        let mut env = vec![("ROOFPROBE_LIB_ROOTS", nowhere.path())];
        if let Some(l) = limit {
            env.push(("DEVICE_CHECK_ARCHIVE_LIMIT_KIB", Path::new(l)));
        }
        let run = device_check_with("cuBLAS: x", &env);
        let lines: Vec<&str> = run.archived.lines().collect();
        assert!(lines.contains(&"logs/devices.log"), "{}", run.archived);
        // the driver's own code comes back whatever the cache's fate
        assert!(
            lines.contains(&"driver-code/cuda0/peak.ptx.cubin"),
            "{}",
            run.archived
        );
        assert_eq!(
            lines.contains(&"jit-cache/cc/module"),
            kept,
            "limit {limit:?}: {}",
            run.archived
        );
        let said = if kept {
            "JIT cache: in logs.tar.gz (jit-cache/)"
        } else {
            "JIT cache: left out of logs.tar.gz (with it the archive passed 0 KiB)"
        };
        assert!(run.steps.contains(said), "{}", run.steps);
        assert!(run.returned <= 6, "{} files", run.returned);
    }
}

/// The `run` steps of scripts/device-check in order: each one's name, time limit and the
/// arguments it gives `roofprobe` (after `run`), as the script really passes them.
pub fn device_check_runs() -> Vec<(String, u32, Vec<String>)> {
    let calls = device_check_with_stubs().calls;
    // (each run step is estimated first, by a dry run of the same arguments)
    let runs: Vec<Vec<String>> = calls
        .lines()
        .filter(|l| !l.contains("--dry-run"))
        .filter_map(|l| l.strip_prefix("roofprobe run "))
        .map(|args| args.split_whitespace().map(str::to_string).collect())
        .collect();
    let steps: Vec<(String, u32)> = device_check_steps()
        .into_iter()
        .filter(|(name, _)| name.starts_with("run-"))
        .collect();
    assert_eq!(runs.len(), steps.len(), "{steps:?}\n{calls}");
    steps
        .into_iter()
        .zip(runs)
        .map(|((name, limit), args)| (name, limit, args))
        .collect()
}

/// Every step runs what it names, its shell functions included (`timeout` alone runs only
/// programs: a step naming a function once failed with 127 before it started): with stand-ins
/// for the packed binaries that record their arguments, each run step reaches the binary with
/// its filters and exits 0, and at most 6 files come back.
#[test]
fn every_device_check_step_reaches_what_it_runs() {
    let CheckRun {
        done,
        steps,
        calls,
        returned,
        ..
    } = device_check_with_stubs();
    for (name, _) in device_check_steps() {
        let line = steps
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ")) && !l.contains(": estimate"))
            .unwrap_or_else(|| panic!("no line for step {name}: {steps}"));
        // nvidia-smi is the machine's own, absent here; every other step is ours
        if name != "nvidia-smi" {
            assert!(line.contains(": exit 0 "), "{line}\n{steps}");
        }
    }
    assert!(calls.contains("roofprobe devices"), "{calls}");
    // the driver's code, last, into the folder that goes into logs.tar.gz
    let last = calls.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("roofprobe devices --jit-out ") && last.ends_with("/driver-code"),
        "{calls}"
    );
    // on a GPU machine a GPU test that skips is a failure, not a pass; each test is named
    // exactly, the small-size plan first
    let tests: Vec<&str> = calls
        .lines()
        .filter_map(|l| l.strip_prefix("suite --exact --nocapture --test-threads=1 "))
        .collect();
    assert_eq!(
        tests.first(),
        Some(&"gpu::planned_cases_fit_and_validate_at_a_small_size (ROOFPROBE_REQUIRE_GPU=1)"),
        "{calls}"
    );
    assert_eq!(tests.len(), gpu_tests_in_order().len(), "{calls}");
    assert!(
        tests
            .iter()
            .all(|t| t.ends_with(" (ROOFPROBE_REQUIRE_GPU=1)")),
        "{calls}"
    );
    assert!(
        !calls.contains("roofprobe devices (ROOFPROBE_REQUIRE_GPU"),
        "{calls}"
    );
    for filter in [
        "--filter latency/",
        "--filter link/host_to_device_memcpy_ce/",
        "--filter efficiency/",
        "--filter intensity/",
        "--filter gemm/ptx/bf16.f32/8192x8192x8192",
    ] {
        let ran = calls
            .lines()
            .any(|l| l.starts_with("roofprobe run --device cuda:0 --quick") && l.contains(filter));
        assert!(ran, "{filter}: {calls}");
    }
    assert!(returned <= 6, "{returned} files: {done:?}");
}

/// The GPU tests scripts/device-check runs, in its order (`gpu_tests_in_order`).
pub fn gpu_tests_in_order() -> Vec<String> {
    let text = std::fs::read_to_string(script("device-check")).unwrap();
    let start = text
        .find("gpu_tests_in_order=\"")
        .expect("device-check lists its GPU tests")
        + "gpu_tests_in_order=\"".len();
    let end = start + text[start..].find('"').unwrap();
    text[start..end]
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The allowance scripts/device-check's estimate of the GPU tests gives the tests after the
/// first (`other_gpu_tests_secs`).
pub fn other_gpu_tests_secs() -> f64 {
    let text = std::fs::read_to_string(script("device-check")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("other_gpu_tests_secs="))
        .and_then(|v| v.parse().ok())
        .expect("device-check states other_gpu_tests_secs")
}

/// The device check runs every GPU test of tests/gpu.rs by its exact name (a filter such as
/// `gpu::` once matched `compute_gpu::` too), each once, the children (ignored tests, run by
/// their parents) excepted: a GPU test added to tests/gpu.rs and not to the list fails here.
#[test]
fn the_device_check_names_every_gpu_test_exactly() {
    let listed = gpu_tests_in_order();
    let source =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gpu.rs"))
            .unwrap();
    let lines: Vec<&str> = source.lines().collect();
    let mut tests = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim() != "#[test]" {
            continue;
        }
        let mut j = i + 1;
        let mut ignored = false;
        while !lines[j].trim_start().starts_with("fn ") {
            ignored |= lines[j].trim_start().starts_with("#[ignore");
            j += 1;
        }
        let name = lines[j].trim_start()["fn ".len()..]
            .split('(')
            .next()
            .unwrap()
            .to_string();
        if !ignored {
            tests.push(format!("gpu::{name}"));
        }
    }
    assert!(tests.len() >= 9, "{tests:?}");
    let mut sorted_listed = listed.clone();
    sorted_listed.sort();
    sorted_listed.dedup();
    assert_eq!(
        sorted_listed.len(),
        listed.len(),
        "a test listed twice: {listed:?}"
    );
    tests.sort();
    assert_eq!(
        sorted_listed, tests,
        "device-check's list against tests/gpu.rs"
    );
    assert_eq!(
        listed[0], "gpu::planned_cases_fit_and_validate_at_a_small_size",
        "the most informative test first"
    );
}

/// Before a run step or the GPU tests, steps.txt says the step's estimate beside its limit (a
/// dry run of the step's own arguments; the small-size test's plan and the allowance for the
/// others), and says it where it passes half the limit; with DEVICE_CHECK_ESTIMATE_ONLY nothing
/// but the estimates runs. Persistence mode is recorded.
#[test]
fn the_device_check_says_each_steps_estimate_before_it_runs() {
    let nowhere = tempfile::tempdir().unwrap();
    let run = device_check_estimating(
        "cuBLAS: x",
        &[("ROOFPROBE_LIB_ROOTS", nowhere.path())],
        "12.5",
        "20.0",
    );
    assert!(run.steps.contains("persistence mode: "), "{}", run.steps);
    let lines: Vec<&str> = run.steps.lines().collect();
    for (name, limit) in device_check_steps() {
        let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix));
        let ran = at(&format!("{name}: exit "));
        let estimated = at(&format!("{name}: estimate "));
        if name.starts_with("run-") || name == "gpu-tests" {
            let estimated = estimated.unwrap_or_else(|| panic!("{name}: {}", run.steps));
            assert!(estimated < ran.unwrap(), "{}", run.steps);
            let secs = if name == "gpu-tests" {
                20.0 + other_gpu_tests_secs()
            } else {
                12.5
            };
            let line = lines[estimated];
            assert!(
                line.starts_with(&format!(
                    "{name}: estimate {secs:.1} s of its {limit} s ({:.0} %)",
                    100.0 * secs / f64::from(limit)
                )),
                "{line}"
            );
            assert_eq!(
                line.contains("OVER HALF"),
                secs > 0.5 * f64::from(limit),
                "{line}"
            );
        } else {
            assert!(estimated.is_none(), "{name}: {}", run.steps);
        }
    }
    // an estimate over half its limit is said so; estimates alone run nothing else
    let only = tempfile::tempdir().unwrap();
    let run = device_check_estimating(
        "cuBLAS: x",
        &[
            ("ROOFPROBE_LIB_ROOTS", nowhere.path()),
            ("DEVICE_CHECK_ESTIMATE_ONLY", only.path()),
        ],
        "40.0",
        "60.0",
    );
    assert!(
        run.steps
            .contains("run-stream: estimate 40.0 s of its 35 s (114 %): OVER HALF its limit"),
        "{}",
        run.steps
    );
    assert!(
        run.steps
            .contains("gpu-tests: estimated only (DEVICE_CHECK_ESTIMATE_ONLY)"),
        "{}",
        run.steps
    );
    let measured: Vec<&str> = run
        .calls
        .lines()
        .filter(|l| l.starts_with("roofprobe run ") && !l.contains("--dry-run"))
        .collect();
    assert!(measured.is_empty(), "{measured:?}");
    // the GPU tests' estimate is the small-size test's plan alone; no test runs
    let tests: Vec<&str> = run
        .calls
        .lines()
        .filter(|l| l.starts_with("suite "))
        .collect();
    assert_eq!(
        tests,
        [
            "suite --exact --nocapture gpu::planned_cases_fit_and_validate_at_a_small_size \
          (ROOFPROBE_REQUIRE_GPU=1)"
        ],
        "{}",
        run.calls
    );
}

/// Every defect `scripts/plant-defects` plants still finds its text in the driver-side code, so
/// the script (run by hand: a rebuild per defect) plants what it says; edited the code, it says
/// which defect to update.
#[test]
fn every_planted_defect_still_finds_its_code() {
    let out = std::process::Command::new("python3")
        .arg("scripts/plant-defects")
        .arg("--check")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("python3 runs scripts/plant-defects");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `scripts/stream-peers` end to end with stand-in peers (what CI can build without fetching
/// McCalpin's STREAM or BabelStream): two small C and C++ programs that print in the peers'
/// formats at a rate the test chooses. The script builds them as it builds the real ones, runs
/// roofprobe's host STREAM cases for real between them in interleaved rounds, reads all three,
/// and its verdict follows the figures: peers at 1 MB/s leave roofprobe ahead (exit 0, "met"),
/// peers at 10^12 MB/s leave it behind (exit 1, "NOT met"). It also refuses a work folder inside
/// the repository.
#[test]
fn the_stream_peers_script_reads_both_peers_and_judges_by_their_figures() {
    for tool in ["gcc", "g++", "python3"] {
        if Command::new(tool).arg("--version").output().is_err() {
            println!("SKIPPED: no {tool} on this machine; scripts/stream-peers needs it");
            return;
        }
    }
    let root = tempfile::tempdir().unwrap();
    // `flags` go to --peer-flags: the stand-in BabelStream prints PEER_RATE where defined
    let run = |rate_mb: &str, flags: &str| {
        let st = root.path().join(format!("st-{rate_mb}{}", flags.len()));
        let bs = root.path().join(format!("bs-{rate_mb}{}", flags.len()));
        std::fs::create_dir_all(&st).unwrap();
        std::fs::create_dir_all(bs.join("src/omp")).unwrap();
        std::fs::write(
            st.join("stream.c"),
            format!(
                "#include <stdio.h>\nint main(void) {{\n\
                 const char *k[] = {{\"Copy:\", \"Scale:\", \"Add:\", \"Triad:\"}};\n\
                 for (int i = 0; i < 4; i++)\n\
                 printf(\"%s %s 0.5 0.4 0.6\\n\", k[i], \"{rate_mb}\");\n\
                 printf(\"Solution Validates: avg error less than 1e-13\\n\");\n\
                 return 0;\n}}\n"
            ),
        )
        .unwrap();
        std::fs::write(
            bs.join("src/main.cpp"),
            format!(
                "#include <cstdio>\n#ifndef PEER_RATE\n#define PEER_RATE {rate_mb}\n#endif\n\
                 int main() {{\n\
                 std::printf(\"function,num_times,n_elements,sizeof,max_MB_per_sec,min_runtime,max_runtime,avg_runtime\\n\");\n\
                 const char *k[] = {{\"Copy\", \"Mul\", \"Add\", \"Triad\", \"Dot\"}};\n\
                 for (int i = 0; i < 5; i++)\n\
                 std::printf(\"%s,3,131072,8,%f,0.5,0.6,0.55\\n\", k[i], (double)PEER_RATE);\n\
                 return 0;\n}}\n"
            ),
        )
        .unwrap();
        std::fs::write(bs.join("src/omp/OMPStream.cpp"), "").unwrap();
        let out = Command::new(script("stream-peers"))
            .args(["--rounds", "2", "--mib", "1", "--reps", "3", "--work"])
            .arg(root.path().join(format!("work-{rate_mb}")))
            .arg("--stream-src")
            .arg(&st)
            .arg("--babelstream-src")
            .arg(&bs)
            .arg("--roofprobe")
            .arg(env!("CARGO_BIN_EXE_roofprobe"))
            .arg("--peer-flags")
            .arg(flags)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let (code, text) = run("1.0", "");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("2 interleaved rounds"), "{text}");
    assert!(text.contains("(best): met"), "{text}");
    for k in ["copy", "scale", "add", "triad", "dot"] {
        assert!(
            text.lines().any(|l| l.starts_with(k)),
            "no {k} line:\n{text}"
        );
    }
    let (code, text) = run("1000000000000.0", "");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("(best): NOT met"), "{text}");
    // --peer-flags reaches the peers' compiler: the stand-in's rate now comes from it
    let (code, text) = run("1.0", "-DPEER_RATE=1e12 -O2");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("(best): NOT met"), "{text}");
    assert!(
        text.contains("peers built with the extra flags: -DPEER_RATE=1e12 -O2"),
        "{text}"
    );
    // the peers' code stays out of the repository
    let inside = Command::new(script("stream-peers"))
        .args(["--work", env!("CARGO_MANIFEST_DIR")])
        .output()
        .unwrap();
    assert_eq!(inside.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&inside.stderr).contains("inside the repository"));
}

/// `scripts/jit-sass` finds the CUDA objects in a JIT cache however the driver wraps them
/// (here: bytes before and after, a false ELF magic, an index file with none, a folder down),
/// and a relocatable object as a driver's linker may make (`ptxas -c`: its shared-memory
/// section, type 0x7000000a, has a size but no bytes in the file), writes each one whole, byte
/// for byte what ptxas made, with its SASS beside it, names its architecture and kernels, and
/// fails with one line on a cache that holds none.
#[test]
fn jit_sass_reads_the_objects_out_of_a_jit_cache() {
    let test = "jit_sass_reads_the_objects_out_of_a_jit_cache";
    let Some(ptxas) = crate::tools::or_skip("ptxas", "PTXAS", test) else {
        return;
    };
    let Some(cuobjdump) = crate::tools::or_skip("cuobjdump", "CUOBJDUMP", test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut cubins = Vec::new();
    for (ptx, arch) in [("peak.ptx", "sm_90"), ("stream.ptx", "sm_80")] {
        let cubin = dir.path().join(format!("{ptx}.{arch}.cubin"));
        crate::offline::assemble(&ptxas, &kernels.join(ptx), arch, &cubin)
            .unwrap_or_else(|log| panic!("{ptx} for {arch}: {log}"));
        cubins.push(std::fs::read(&cubin).unwrap());
    }
    let cache = dir.path().join("jit-cache");
    std::fs::create_dir_all(cache.join("a/b")).unwrap();
    let mut wrapped = b"head\x7fELF not an object".to_vec();
    wrapped.extend_from_slice(&cubins[0]);
    wrapped.extend_from_slice(b"tail");
    std::fs::write(cache.join("a/b/entry"), wrapped).unwrap();
    std::fs::write(cache.join("a/index"), b"an index, no object").unwrap();
    let mut second = vec![0u8; 13];
    second.extend_from_slice(&cubins[1]);
    std::fs::write(cache.join("a/z"), second).unwrap();
    let relocatable = cache.join("a/rel");
    let made = Command::new(&ptxas)
        .args(["-c", "-arch=sm_90", "-o"])
        .arg(&relocatable)
        .arg(kernels.join("gemm_simt.ptx"))
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let out = dir.path().join("sass");
    let done = Command::new(script("jit-sass"))
        .arg(&cache)
        .arg(&out)
        .env("CUOBJDUMP", &cuobjdump)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&done.stdout);
    assert!(done.status.success(), "{done:?}");
    // (os.walk: a folder's files before its subfolders')
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 3, "{said}");
    assert!(
        lines[0].starts_with("a/rel @0: 1.sass, sm_90, 1 kernels: gemm_f32_f32"),
        "{said}"
    );
    assert!(lines[1].starts_with("a/z @13: 2.sass, sm_80, "), "{said}");
    assert!(lines[1].contains(" copy_f32"), "{said}");
    assert!(lines[2].starts_with("a/b/entry @"), "{said}");
    assert!(
        lines[2].contains("sm_90, 5 kernels: ") && lines[2].contains("fma_f16x2"),
        "{said}"
    );
    assert_eq!(
        std::fs::read(out.join("1.cubin")).unwrap(),
        std::fs::read(&relocatable).unwrap()
    );
    assert_eq!(std::fs::read(out.join("2.cubin")).unwrap(), cubins[1]);
    assert_eq!(std::fs::read(out.join("3.cubin")).unwrap(), cubins[0]);
    let sass = std::fs::read_to_string(out.join("3.sass")).unwrap();
    assert!(sass.contains("HFMA2"), "{sass}");
    // a cache of nothing but an index: one line, exit 1
    std::fs::remove_dir_all(cache.join("a/b")).unwrap();
    std::fs::remove_file(cache.join("a/z")).unwrap();
    std::fs::remove_file(&relocatable).unwrap();
    let none = Command::new(script("jit-sass"))
        .arg(&cache)
        .arg(dir.path().join("none"))
        .env("CUOBJDUMP", &cuobjdump)
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1), "{none:?}");
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(
        err.trim()
            .starts_with("error: no CUDA object in the 1 files of"),
        "{err}"
    );
}
