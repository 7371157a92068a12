//! `roofprobe watch` against the simulated driver's NVML (simcuda/), whose scripted job sets
//! the levels a right reading must find: four phases (bandwidth, compute, idle gaps, memory
//! growing to full) get their four verdicts with achieved figures within 5 % of the script;
//! each fallback (no GPM, NVML too old for it, a DCGM host engine, the host's /proc) says which
//! signal it used; and every bad input (an unknown pid, a calibration of another model, a
//! device lost mid-watch, no NVML, Ctrl-C, an output that exists) gets one line, with the
//! timeline written so far kept. A timeline is refused by `report` and `compare`.

use crate::common::{text, Signalled};
use crate::sim::{run_limited, Sim};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// Every watch here is over in seconds; a hang is a failure.
const LIMIT: Duration = Duration::from_secs(120);

/// The four phases, 2 s each: bandwidth (DRAM 80 %), compute (tensor 85 %), idle gaps (SMs 12
/// %), and memory growing from 40 % of the device to all of it (out of memory at the end).
const FOUR_PHASES: &str = "workload=2s sm=95 dram=80 tensor=5 mem=40%; \
     2s sm=98 dram=15 tensor=85 mem=40%; 2s sm=12 dram=3 tensor=2 mem=40%; \
     2s sm=60 dram=30 tensor=30 mem=40%..100%";

/// The simulated device's memory.
const MEMORY: u64 = 64 << 20;

/// Its spec DRAM figure, GB/s: no sheet has it, so bus width × memory clock (simcuda's
/// attributes: 256 bits at 1000 MHz, DDR).
const SPEC_DRAM_GBPS: f64 = 256.0 * 1000.0 * 2.0 / 8.0 / 1000.0;

/// The tensor ceiling the calibration below says was measured, GFLOP/s.
const MEASURED_TENSOR_GFLOPS: f64 = 400.0;

/// A calibration of the simulated device (the figures are this test's, not a measurement):
/// DRAM 60 GB/s and tensor bf16 400 GFLOP/s measured, 60 MiB of its 64 usable.
fn calibration(dir: &Path, name: &str) -> PathBuf {
    let json = format!(
        r#"{{
  "schema": "roofprobe-calibration/1",
  "device": {{ "name": "{name}", "backend": "cuda", "id": "cuda:0" }},
  "run": {{ "run_id": "sim-run", "first_utc": "", "last_utc": "", "cases": 3, "valid_cases": 3 }},
  "spec": {{ "basis": "none", "reason": "test" }},
  "memory_ceilings": [
    {{ "level": "dram", "gbps": 60.0, "case": "stream/triad/f32", "spec_gbps": null,
       "spec_basis": "none", "efficiency": null, "above_spec": false }}
  ],
  "compute_ceilings": [
    {{ "family": "tensor", "precision": "bf16.f32", "gflops": {MEASURED_TENSOR_GFLOPS},
       "case": "tensor/mma/bf16.f32", "spec_gflops": null, "spec_basis": "none",
       "efficiency": null, "above_spec": false }}
  ],
  "capacity": {{ "total_bytes": {MEMORY}, "free_bytes": {free}, "largest_allocation_bytes": {largest} }}
}}"#,
        free = 60u64 << 20,
        largest = 56u64 << 20,
    );
    let path = dir.join(format!("{}.json", name.replace(' ', "-")));
    std::fs::write(&path, json).unwrap();
    path
}

/// `roofprobe watch ARGS` against the simulated driver with `settings`, to its end.
fn watch(sim: &Sim, args: &[&str]) -> Output {
    let mut cmd = sim.roofprobe();
    cmd.arg("watch").args(args);
    run_limited(&mut cmd, LIMIT)
}

fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is no JSON ({e}):\n{}\nstderr:\n{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    })
}

fn no_dcgm(sim: Sim) -> Sim {
    sim.with_env("ROOFPROBE_DCGMI", "/nonexistent/dcgmi")
}

fn within(got: f64, want: f64, what: &str) {
    assert!(
        (got / want - 1.0).abs() <= 0.05,
        "{what}: {got} is not within 5 % of {want}"
    );
}

/// The judged case: a scripted job of four phases gets the four right verdicts in order, each
/// with its achieved figure within 5 % of the scripted level (DRAM activity × the spec peak it
/// is a share of; tensor activity × the measured tensor peak), from GPM on a Hopper-like device;
/// the timeline holds a row per sample and the trail's SVG is well-formed.
#[test]
fn a_scripted_job_of_four_phases_gets_its_four_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let cal = calibration(dir.path(), "roofprobe simulated GPU");
    let sim = no_dcgm(Sim::without_cublas(&format!(
        "cc=9.0,memory=64M,{FOUR_PHASES}"
    )));
    let timeline = dir.path().join("t.csv");
    let svg = dir.path().join("t.svg");
    let out = watch(
        &sim,
        &[
            "--device",
            "cuda:0",
            "--interval",
            "0.1",
            "--duration",
            "7.7",
            "--json",
            "--calibration",
            cal.to_str().unwrap(),
            "-o",
            timeline.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let doc = json_of(&out);
    let device = &doc["devices"][0];
    assert_eq!(device["signal"], "gpm", "{err}");
    let phases = device["phases"].as_array().unwrap();
    let verdicts: Vec<&str> = phases
        .iter()
        .map(|p| p["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        ["bandwidth", "compute", "idle", "capacity"],
        "{doc:#}\n{err}"
    );
    within(
        phases[0]["dram_gbps"].as_f64().unwrap(),
        0.80 * SPEC_DRAM_GBPS,
        "bandwidth phase's DRAM",
    );
    within(
        phases[0]["levels"]["dram_pct"].as_f64().unwrap(),
        80.0,
        "its DRAM activity",
    );
    within(
        phases[1]["compute_gflops"].as_f64().unwrap(),
        0.85 * MEASURED_TENSOR_GFLOPS,
        "compute phase's tensor rate",
    );
    assert_eq!(phases[1]["compute_pipe"], "tensor bf16.f32");
    within(
        phases[2]["levels"]["sm_pct"].as_f64().unwrap(),
        12.0,
        "idle phase's SM activity",
    );
    // the capacity phase ran into the measured usable capacity (60 MiB of 64)
    let peak = phases[3]["memory_peak_bytes"].as_f64().unwrap();
    assert!(peak >= 0.95 * (60u64 << 20) as f64, "{peak}");
    assert!(
        phases[3]["figure"].as_str().unwrap().contains("usable"),
        "{doc:#}"
    );
    assert!(phases[3]["remedies"][0]
        .as_str()
        .unwrap()
        .contains("checkpointing"));
    assert_eq!(device["verdict"], "capacity");
    // the figures name their basis: DRAM under the measured ceiling
    assert!(
        phases[0]["figure"]
            .as_str()
            .unwrap()
            .contains("of the measured 60 GB/s"),
        "{}",
        phases[0]["figure"]
    );
    // a row per sample, flushed as taken, of the timeline's schema
    let csv = std::fs::read_to_string(&timeline).unwrap();
    let rows = roofprobe::results::timeline::parse_timeline(&timeline, csv.as_bytes()).unwrap();
    assert!(rows.len() >= 60, "{} rows", rows.len());
    assert!(rows
        .iter()
        .all(|r| r.signal == "gpm" && r.device_id == "cuda:0"));
    assert_eq!(doc["timeline"], timeline.to_str().unwrap());
    roxmltree::Document::parse(&std::fs::read_to_string(&svg).unwrap()).expect("a well-formed SVG");
    // the live view named every sample's verdict on stderr
    assert!(err.matches("→ bandwidth").count() >= 10, "{err}");
}

/// A timeline is no run: `report` and `compare` refuse it in one line that says what it is.
#[test]
fn report_and_compare_refuse_a_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let sim = no_dcgm(Sim::without_cublas("cc=9.0,workload=1s sm=50"));
    let timeline = dir.path().join("t.csv");
    let out = watch(
        &sim,
        &[
            "--duration",
            "0.3",
            "--interval",
            "0.1",
            "-o",
            timeline.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    for command in ["report", "compare"] {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("roofprobe"))
            .arg(command)
            .arg(&timeline)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command}: {err}");
        assert_eq!(err.lines().count(), 1, "{command}: {err}");
        assert!(
            err.contains("`roofprobe watch` timeline"),
            "{command}: {err}"
        );
    }
}

/// Without GPM (a device before Hopper, or an NVML too old for it) and without DCGM, the watch
/// falls back on NVML's utilisation and says so, and why; its verdicts are the coarse ones.
#[test]
fn without_gpm_or_dcgm_the_watch_says_it_falls_back_on_utilisation() {
    for (settings, why) in [
        ("cc=8.0", "GPM: not on this device (compute capability 8.0"),
        ("cc=9.0,gpm=absent", "GPM: this NVML is too old for it"),
    ] {
        let sim = no_dcgm(Sim::without_cublas(&format!(
            "{settings},workload=1s sm=95 dram=80; 1s sm=98 dram=10 tensor=90"
        )));
        let out = watch(
            &sim,
            &[
                "--duration",
                "1.9",
                "--interval",
                "0.1",
                "--json",
                "-o",
                "/dev/null",
            ],
        );
        let err = text(&out.stderr);
        assert!(out.status.success(), "{settings}: {err}");
        let doc = json_of(&out);
        let device = &doc["devices"][0];
        assert_eq!(device["signal"], "nvml-utilisation", "{settings}: {err}");
        let said = device["signal_why"].to_string();
        assert!(said.contains(why), "{settings}: {said}");
        assert!(
            said.contains("DCGM: no `/nonexistent/dcgmi` found"),
            "{settings}: {said}"
        );
        assert!(
            err.contains("signal nvml-utilisation (coarse)"),
            "{settings}: {err}"
        );
        assert!(device["unseen"]
            .to_string()
            .contains("cannot be told from compute"));
        let verdicts: Vec<&str> = device["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["verdict"].as_str().unwrap())
            .collect();
        assert_eq!(verdicts, ["bandwidth", "busy"], "{settings}: {doc:#}");
    }
}

/// A DCGM host engine, where there is no GPM: its profiling fields are read through `dcgmi
/// dmon` (here a stand-in printing the client's rows), and the signal says DCGM.
#[test]
fn a_dcgm_host_engine_is_read_where_there_is_no_gpm() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let dcgmi = dir.path().join("dcgmi");
    // the client's header, its unit line and a row for GPU 0, then it waits (as itself, so
    // stopping it stops everything it started)
    std::fs::write(
        &dcgmi,
        "#!/bin/sh\n\
         [ \"$1 $2 $3\" = 'dmon -i 0' ] || { echo \"Error: unexpected $*\" >&2; exit 1; }\n\
         echo '#Entity   SMACT  SMOCC  TENSO  DRAMA  FP64A  FP32A  FP16A  PCITX  PCIRX'\n\
         echo 'ID'\n\
         echo 'GPU 0     0.950  0.400  0.050  0.800  0.000  0.100  N/A    1000   2000'\n\
         exec sleep 60\n",
    )
    .unwrap();
    std::fs::set_permissions(&dcgmi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sim = Sim::without_cublas("cc=8.0").with_env("ROOFPROBE_DCGMI", &dcgmi);
    let out = watch(
        &sim,
        &[
            "--duration",
            "0.5",
            "--interval",
            "0.1",
            "--json",
            "-o",
            "/dev/null",
        ],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let device = &json_of(&out)["devices"][0];
    assert_eq!(device["signal"], "dcgm", "{err}");
    assert!(device["signal_why"].to_string().contains("DCGM: yes"));
    let phase = &device["phases"][0];
    assert_eq!(phase["verdict"], "bandwidth");
    within(
        phase["levels"]["dram_pct"].as_f64().unwrap(),
        80.0,
        "DCGM's DRAM active",
    );
    within(
        phase["dram_gbps"].as_f64().unwrap(),
        0.8 * SPEC_DRAM_GBPS,
        "DRAM from DCGM",
    );
    assert!(device["unseen"].to_string().contains("DCGM's tensor field"));
}

/// The host, from /proc: a process's CPU time and resident memory, said to be all it sees (no
/// DRAM traffic); the watch ends with the process.
#[test]
fn the_host_is_watched_from_proc_and_says_what_it_cannot_see() {
    let mut busy = std::process::Command::new("sh")
        .args(["-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"])
        .spawn()
        .unwrap();
    let pid = busy.id().to_string();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("roofprobe"));
    cmd.args([
        "watch",
        "--device",
        "host",
        "--pid",
        &pid,
        "--interval",
        "0.1",
        "--duration",
        "1",
    ])
    .args(["--json", "-o", "/dev/null"]);
    let out = run_limited(&mut cmd, LIMIT);
    let _ = busy.kill();
    let _ = busy.wait();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let device = &json_of(&out)["devices"][0];
    assert_eq!(device["signal"], "proc");
    assert!(
        device["unseen"].to_string().contains("DRAM traffic"),
        "{device}"
    );
    assert!(device["signal_why"]
        .to_string()
        .contains(&format!("process {pid}")));
    assert!(
        err.contains("job "),
        "the process's memory on the live line: {err}"
    );
}

/// A job started after `--` is watched to its end, and its exit code is the watch's.
#[test]
fn a_job_is_watched_to_its_end_and_its_exit_code_kept() {
    let sim = no_dcgm(Sim::without_cublas("cc=9.0,workload=5s sm=90 dram=70"));
    let out = watch(
        &sim,
        &[
            "--interval",
            "0.1",
            "-o",
            "/dev/null",
            "--",
            "sh",
            "-c",
            "sleep 0.6; exit 3",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        text(&out.stdout).contains("ended: job ended (exit 3)"),
        "{}",
        text(&out.stdout)
    );
    assert!(err.contains("the watch ends with the job"), "{err}");
}

/// Bad input, one line each, nothing watched: an unknown pid, a calibration of another device
/// model (used only with --force), an output that exists, too short an interval.
#[test]
fn bad_input_gets_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let sim = no_dcgm(Sim::without_cublas("cc=9.0"));
    let one_line = |out: &Output, code: i32, says: &str| {
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: ") && err.contains(says), "{err}");
    };
    let unknown = (u32::MAX - 7).to_string();
    one_line(
        &watch(&sim, &["--pid", &unknown, "--duration", "0.2"]),
        2,
        "no process",
    );
    let other = calibration(dir.path(), "NVIDIA A100-SXM4-80GB");
    let t = dir.path().join("t.csv");
    let args = [
        "--calibration",
        other.to_str().unwrap(),
        "--duration",
        "0.2",
        "-o",
        t.to_str().unwrap(),
    ];
    one_line(&watch(&sim, &args), 2, "its ceilings are not this device's");
    assert!(!t.exists(), "nothing written");
    let forced = watch(&sim, &[&args[..], &["--force"]].concat());
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    assert!(text(&forced.stderr).contains("used all the same (--force)"));
    one_line(
        &watch(&sim, &["-o", t.to_str().unwrap(), "--duration", "0.2"]),
        2,
        "exists",
    );
    one_line(&watch(&sim, &["--interval", "0.01"]), 2, "too short");
}

/// A device that falls off the bus mid-watch: one line saying so, exit 1, and the timeline of
/// every sample before it kept.
#[test]
fn a_device_lost_mid_watch_ends_it_with_the_timeline_kept() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.csv");
    let sim = no_dcgm(Sim::without_cublas(
        "cc=9.0,vanish=1.0,workload=5s sm=90 dram=70",
    ));
    let out = watch(&sim, &["--interval", "0.1", "-o", t.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap();
    assert!(last.starts_with("error: "), "{err}");
    for says in [
        "the watch of cuda:0",
        "answers no more",
        "fell off the bus",
        "is kept in",
    ] {
        assert!(last.contains(says), "{says}: {last}");
    }
    let rows = std::fs::read_to_string(&t).unwrap().lines().count() - 1;
    assert!(rows >= 3, "{rows} rows kept");
    // what was seen is summed up all the same
    assert!(
        text(&out.stdout).contains("phase 1"),
        "{}",
        text(&out.stdout)
    );
}

/// Without NVML there is nothing to read a GPU's counters through: one line saying so.
#[test]
fn without_nvml_a_gpu_watch_says_so() {
    let sim = no_dcgm(Sim::driver_alone("cc=9.0"));
    let out = watch(&sim, &["--device", "cuda:0", "--duration", "0.2"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("NVML (libnvidia-ml.so.1)"), "{err}");
}

/// Ctrl-C ends the watch after its sample: one line, exit 130, the summary of what was seen,
/// and the timeline kept.
#[test]
fn ctrl_c_ends_the_watch_with_the_timeline_kept() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.csv");
    let sim = no_dcgm(Sim::without_cublas("cc=9.0,workload=60s sm=90 dram=70"));
    let mut cmd = sim.roofprobe();
    cmd.args(["watch", "--interval", "0.1", "-o", t.to_str().unwrap()]);
    let mut run = Signalled::start(&mut cmd, LIMIT);
    run.wait_stderr("→ bandwidth");
    run.signal(libc::SIGINT);
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    assert!(
        err.contains("interrupted: the watch ended; the timeline"),
        "{err}"
    );
    assert!(out.contains("ended: interrupted"), "{out}");
    let rows = std::fs::read_to_string(&t).unwrap().lines().count() - 1;
    assert!(rows >= 1, "{rows} rows kept");
}

/// The job's own memory: NVML's process list read for the watched pid and its children (the
/// scripted job listed under the pid of a real process here), its memory the script's.
#[test]
fn the_jobs_own_memory_is_read_from_the_process_list() {
    let mut job = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = job.id();
    let sim = no_dcgm(Sim::without_cublas(&format!(
        "cc=9.0,memory=64M,job_pid={pid},workload=5s sm=90 dram=70 mem=25%"
    )));
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.csv");
    let pid_text = pid.to_string();
    let out = watch(
        &sim,
        &[
            "--pid",
            &pid_text,
            "--interval",
            "0.1",
            "--duration",
            "0.5",
            "-o",
            t.to_str().unwrap(),
        ],
    );
    let _ = job.kill();
    let _ = job.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = std::fs::read_to_string(&t).unwrap();
    let rows = roofprobe::results::timeline::parse_timeline(&t, csv.as_bytes()).unwrap();
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r.pid, Some(pid));
        assert_eq!(r.process_memory_bytes, Some(16 << 20), "{r:?}");
    }
}
