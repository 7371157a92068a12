//! Real NVIDIA libraries on a machine with no GPU: the closest CI comes to what a GPU machine
//! has. A driver's (libcuda, NVML) and CUDA 13's cuBLAS, as a Python environment holds it:
//!
//! - every driver, NVML and cuBLAS entry point the simulated ones export, which is every one
//!   roofprobe reaches (a call the simulated library lacks fails the simulated runs), is
//!   exported by the real libraries, so that no test of this suite leans on an entry point the
//!   real ones do not have;
//! - roofprobe loads the real `libcuda` and, with no device behind it, says so in one line,
//!   names the driver it loaded, and measures the host instead where it may;
//! - roofprobe's search finds the real cuBLAS in the environment's wheel folder, loads it with
//!   its cuBLASLt, resolves every entry point it calls, and reads its version (none of which
//!   needs a GPU).
//!
//! The driver's libraries are looked for in `ROOFPROBE_NVIDIA_DRIVER` (a folder holding
//! `libcuda.so.1` and `libnvidia-ml.so.1`), else in `.tools/nvidia-driver`, where `.ci/run`
//! unpacks Debian's packages of them (`libcuda1`, `libnvidia-ml1`: driver 535, CUDA 12.2);
//! cuBLAS in `ROOFPROBE_NVIDIA_CUBLAS` (a Python environment with PyPI's `nvidia-cublas`, CUDA
//! 13's), else `.tools/cublas`, where `.ci/run` installs it. Where they are missing the tests are
//! skipped with a printed reason, unless `ROOFPROBE_REQUIRE_TOOLS=1` (CI), where that fails
//! them. On a machine whose kernel has the NVIDIA module loaded the driver's behaviour test is
//! skipped: there the libraries would talk to it. (A device node says nothing: run as root,
//! libcuda makes `/dev/nvidiactl` itself. The test removes the one it made, leaving the machine
//! as it found it.)

use crate::common::text;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The folder of a real NVIDIA driver's libraries.
const VAR: &str = "ROOFPROBE_NVIDIA_DRIVER";

/// A Python environment holding CUDA 13's cuBLAS wheel.
const CUBLAS_VAR: &str = "ROOFPROBE_NVIDIA_CUBLAS";

/// The folder holding a real driver's `libcuda.so.1` and `libnvidia-ml.so.1`, or `None` after
/// printing why the caller skips (panicking instead in CI).
fn driver_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(VAR).map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/nvidia-driver"),
        PathBuf::from,
    );
    let missing: Vec<&str> = ["libcuda.so.1", "libnvidia-ml.so.1"]
        .into_iter()
        .filter(|name| !dir.join(name).is_file())
        .collect();
    if missing.is_empty() {
        return Some(dir);
    }
    let why = format!(
        "{} has no {} (set {VAR} to a folder holding an NVIDIA driver's libraries, or run \
         .ci/run, which unpacks Debian's)",
        dir.display(),
        missing.join(" or ")
    );
    crate::tools::skip(test, &why);
    None
}

/// The environment holding CUDA 13's cuBLAS wheel and the library's folder in it
/// (`lib/python3.*/site-packages/nvidia/cu13/lib`), or `None` after printing why the caller
/// skips (panicking instead in CI).
fn cublas_env(test: &str) -> Option<(PathBuf, PathBuf)> {
    let env = std::env::var_os(CUBLAS_VAR).map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/cublas"),
        PathBuf::from,
    );
    let lib = std::fs::read_dir(env.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages/nvidia/cu13/lib"))
        .find(|lib| lib.join("libcublas.so.13").is_file());
    match lib {
        Some(lib) => Some((env, lib)),
        None => {
            let why = format!(
                "{} holds no lib/python3.*/site-packages/nvidia/cu13/lib/libcublas.so.13 (set \
                 {CUBLAS_VAR} to a Python environment with PyPI's nvidia-cublas, or run \
                 .ci/run, which installs it)",
                env.display()
            );
            crate::tools::skip(test, &why);
            None
        }
    }
}

/// The names of the functions an ELF shared library exports (its defined dynamic symbols).
fn exports(path: &Path) -> BTreeSet<String> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let file = object::File::parse(&*data)
        .unwrap_or_else(|e| panic!("{} is not an object file: {e}", path.display()));
    file.dynamic_symbols()
        .filter(|s| s.is_definition() && s.kind() == object::SymbolKind::Text)
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect()
}

#[test]
fn a_real_driver_exports_every_entry_point_the_simulated_one_does() {
    let test = "a_real_driver_exports_every_entry_point_the_simulated_one_does";
    let Some(dir) = driver_dir(test) else {
        return;
    };
    let sim = exports(&crate::sim::library());
    let cuda = exports(&dir.join("libcuda.so.1"));
    let nvml = exports(&dir.join("libnvidia-ml.so.1"));
    let driver_calls: Vec<&String> = sim
        .iter()
        .filter(|n| n.starts_with("cu") && !n.starts_with("cublas"))
        .collect();
    let nvml_calls: Vec<&String> = sim.iter().filter(|n| n.starts_with("nvml")).collect();
    // Read at all: the simulated driver has some 80 driver and 30 NVML entry points, a real
    // libcuda hundreds.
    assert!(
        driver_calls.len() >= 50 && nvml_calls.len() >= 20,
        "the simulated driver's exports were not read: {} driver, {} NVML entry points",
        driver_calls.len(),
        nvml_calls.len()
    );
    assert!(
        cuda.len() >= 300 && nvml.len() >= 100,
        "the real libraries' exports were not read: libcuda {}, NVML {}",
        cuda.len(),
        nvml.len()
    );
    let missing: Vec<String> = driver_calls
        .iter()
        .filter(|n| !cuda.contains(n.as_str()))
        .map(|n| format!("{n} (libcuda)"))
        .chain(
            nvml_calls
                .iter()
                .filter(|n| !nvml.contains(n.as_str()))
                .map(|n| format!("{n} (NVML)")),
        )
        .collect();
    assert!(
        missing.is_empty(),
        "the simulated driver exports entry points the real one in {} lacks: {}",
        dir.display(),
        missing.join(", ")
    );
}

/// `roofprobe ARGS…` with the real driver's folder first on the loader's path.
fn with_driver(dir: &Path, args: &[&str]) -> Output {
    crate::common::library_dir_first(&mut Command::new(env!("CARGO_BIN_EXE_roofprobe")), dir)
        .args(args)
        .output()
        .expect("roofprobe runs")
}

/// Removes `/dev/nvidiactl` when dropped if it was not there when made: libcuda, run as root,
/// makes that node itself, even where no NVIDIA kernel module answers on it.
struct NodeLeftAsFound {
    made_here: bool,
}

const NODE: &str = "/dev/nvidiactl";

impl NodeLeftAsFound {
    fn new() -> NodeLeftAsFound {
        NodeLeftAsFound {
            made_here: !Path::new(NODE).exists(),
        }
    }
}

impl Drop for NodeLeftAsFound {
    fn drop(&mut self) {
        if self.made_here && Path::new(NODE).exists() {
            let _ = std::fs::remove_file(NODE);
        }
    }
}

/// A refusal: exit 1 and one line on stderr, starting with `start` and saying `why`.
fn refused(out: &Output, start: &str, why: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(start) && stderr.contains(why),
        "{stderr}"
    );
}

#[test]
fn a_real_driver_with_no_gpu_behind_it_is_named_and_the_host_measured() {
    let test = "a_real_driver_with_no_gpu_behind_it_is_named_and_the_host_measured";
    let Some(dir) = driver_dir(test) else {
        return;
    };
    if Path::new("/proc/driver/nvidia").exists() {
        eprintln!(
            "skipped {test}: this machine's kernel has the NVIDIA module loaded \
             (/proc/driver/nvidia), which the driver's libraries in {} would talk to",
            dir.display()
        );
        return;
    }
    let _node = NodeLeftAsFound::new();
    let failed = "the CUDA driver is present but failed during initialisation: \
                  CUDA_ERROR_NO_DEVICE";

    // The listing: no GPU, why, and which driver said so.
    let out = with_driver(&dir, &["devices"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let mut lines = stdout.lines();
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("CUDA: none ({failed}")),
        "{stdout}"
    );
    let driver = lines.next().unwrap_or_default();
    let prefix = format!("  libcuda {}/libcuda.so", dir.display());
    assert!(
        driver.starts_with(&prefix),
        "{driver:?} should start {prefix:?}"
    );
    let version = driver
        .rsplit_once(", CUDA ")
        .map(|(_, v)| v)
        .unwrap_or_default();
    let numbers: Vec<u32> = version.split('.').filter_map(|p| p.parse().ok()).collect();
    assert!(
        numbers.len() == 2 && numbers[0] >= 12,
        "{driver:?} should end with the driver's CUDA version (12.0 or newer)"
    );
    assert!(stdout.contains("\nhost — "), "the host is listed: {stdout}");

    let out = with_driver(&dir, &["devices", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert!(
        json["cuda"].as_str().unwrap_or_default().contains(failed),
        "{json}"
    );
    assert_eq!(
        json["driver"].as_str(),
        Some(&driver["  libcuda ".len()..]),
        "{json}"
    );

    // CUDA 13's cuBLAS beside this driver: a cuBLAS of a later major version than the driver's
    // CUDA is passed over, saying why (its runtime would refuse the driver at the first handle).
    if let Some((_, lib)) = cublas_env(test) {
        let file = lib.join("libcublas.so.13");
        let out = crate::common::library_dir_first(
            &mut Command::new(env!("CARGO_BIN_EXE_roofprobe")),
            &dir,
        )
        .env("ROOFPROBE_CUBLAS", &file)
        .arg("devices")
        .output()
        .expect("roofprobe runs");
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("cuBLAS: "))
            .unwrap_or_else(|| panic!("no cuBLAS line: {stdout}"));
        if numbers[0] < 13 {
            let why = format!(
                "none: ROOFPROBE_CUBLAS={} does not load as cuBLAS: {}: cuBLAS 13.",
                file.display(),
                file.display()
            );
            assert!(
                line.starts_with(&why)
                    && line.ends_with(&format!(
                        " needs a CUDA 13 driver or newer, and this one is CUDA {version}"
                    )),
                "{line:?} should start {why:?}"
            );
        } else {
            assert!(line.starts_with("cuBLAS 13."), "{line:?}");
        }
    }

    // Asked for the driver's code, or for cuda:0 by name: one line, exit 1, nothing written.
    let tmp = tempfile::tempdir().unwrap();
    let jit = tmp.path().join("jit");
    let out = with_driver(&dir, &["devices", "--jit-out", jit.to_str().unwrap()]);
    refused(&out, "error: --jit-out ", failed);

    let results = tmp.path().join("cuda0");
    let out = with_driver(
        &dir,
        &[
            "run",
            "--device",
            "cuda:0",
            "--quick",
            "-o",
            results.to_str().unwrap(),
        ],
    );
    refused(&out, "error: ", failed);
    assert!(
        std::fs::read_dir(&results).map_or(true, |d| d.count() == 0),
        "nothing is written for a device that is not there"
    );

    // Left to choose, the run measures the host and says why.
    let results = tmp.path().join("auto");
    let out = with_driver(
        &dir,
        &[
            "run",
            "--quick",
            "--filter",
            "launch",
            "-o",
            results.to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 4)), "{stderr}");
    assert!(
        stderr.contains(
            "no usable GPU: the driver failed during initialisation: CUDA_ERROR_NO_DEVICE"
        ),
        "{stderr}"
    );
    let csv = crate::common::files_with_ext(&results, "csv");
    assert_eq!(csv.len(), 1, "one CSV in {}", results.display());
    let mut reader = csv::Reader::from_path(&csv[0]).unwrap();
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (backend, valid) = (column("backend"), column("valid"));
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert!(!rows.is_empty(), "rows in {}", csv[0].display());
    for row in &rows {
        assert_eq!((&row[backend], &row[valid]), ("host", "true"), "{row:?}");
    }
}

#[test]
fn a_real_cublas_exports_every_entry_point_the_simulated_one_does() {
    let test = "a_real_cublas_exports_every_entry_point_the_simulated_one_does";
    let Some((_, lib)) = cublas_env(test) else {
        return;
    };
    let sim = exports(&crate::sim::library());
    let mut real = exports(&lib.join("libcublas.so.13"));
    real.extend(exports(&lib.join("libcublasLt.so.13")));
    let calls: Vec<&String> = sim.iter().filter(|n| n.starts_with("cublas")).collect();
    // Read at all: cublasGemmEx and the cuBLASLt matmul's dozen, against the real libraries'
    // hundreds.
    assert!(
        calls.len() >= 10 && real.len() >= 300,
        "exports not read: simulated {}, real {}",
        calls.len(),
        real.len()
    );
    let missing: Vec<&str> = calls
        .iter()
        .filter(|n| !real.contains(n.as_str()))
        .map(|n| n.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "the simulated cuBLAS exports entry points the real one in {} lacks: {}",
        lib.display(),
        missing.join(", ")
    );
}

#[test]
fn a_real_cublas_in_a_python_environment_is_found_loaded_and_its_version_read() {
    let test = "a_real_cublas_in_a_python_environment_is_found_loaded_and_its_version_read";
    let Some((env, lib)) = cublas_env(test) else {
        return;
    };
    let file = lib.join("libcublas.so.13");
    // Nothing else of the search's places leads anywhere but to this environment (PATH stays:
    // the listing needs no python3, and one there would only be searched after it).
    let devices = |venv: Option<&Path>, named: Option<&Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_roofprobe"));
        command.arg("devices");
        for var in [
            "VIRTUAL_ENV",
            "CONDA_PREFIX",
            "CUDA_HOME",
            "CUDA_PATH",
            "ROOFPROBE_CUBLAS",
        ] {
            command.env_remove(var);
        }
        if let Some(venv) = venv {
            command.env("VIRTUAL_ENV", venv);
        }
        if let Some(named) = named {
            command.env("ROOFPROBE_CUBLAS", named);
        }
        let out = command.output().expect("roofprobe runs");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("cuBLAS: ").map(str::to_string))
            .unwrap_or_else(|| panic!("no cuBLAS line: {stdout}"))
    };
    let expected = |line: &str| {
        let version = line
            .strip_prefix("cuBLAS ")
            .and_then(|rest| rest.split_once(' '))
            .map(|(v, _)| v)
            .unwrap_or_default();
        assert!(
            version.starts_with("13.") && version.split('.').count() == 3,
            "{line:?} should give cuBLAS 13's version"
        );
        assert!(
            line.ends_with(&format!("({})", file.display())),
            "{line:?} should name {}",
            file.display()
        );
    };
    // Named outright.
    expected(&devices(None, Some(&file)));
    // Found by the search, in the environment's wheel folder, where nothing on this machine comes
    // before it (elsewhere that part says why it is left out).
    let elsewhere = devices(None, None);
    if elsewhere.starts_with("none: ") {
        expected(&devices(Some(&env), None));
    } else {
        eprintln!(
            "{test}: the search part left out: this machine has a cuBLAS the search finds \
             before any Python environment's ({elsewhere})"
        );
    }
}
