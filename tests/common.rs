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
    p.case.family == roofprobe::cases::Family::Tensor
        && cc == (9, 0)
        && roofprobe::cases::tensor::Mma::of_case(&p.case).is_ok_and(|m| {
            Some(p.note.as_str()) == roofprobe::backend::cuda::plan::tensor_note(cc, m)
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

/// A child run under a time limit, to be watched or signalled mid-run: in its own process group
/// (so that nothing of it outlives a failed test: past the limit the group is killed), its
/// output drained aside, its rows read from the one CSV it writes ([`Signalled::writing_to`]).
pub struct Signalled {
    child: std::process::Child,
    dir: Option<PathBuf>,
    out: Shared,
    err: Shared,
    drains: Vec<std::thread::JoinHandle<()>>,
    deadline: std::time::Instant,
}

/// What a child wrote to one pipe so far.
type Shared = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

impl Signalled {
    /// Starts `cmd`; everything must be over within `limit`.
    pub fn start(cmd: &mut Command, limit: std::time::Duration) -> Signalled {
        use std::io::Read;
        use std::os::unix::process::CommandExt;
        // SIGINT and SIGTERM as a terminal gives them, whatever this process inherited: a
        // shell's background job (CI's, for one) starts with SIGINT ignored, and a run keeps an
        // ignored signal ignored. (SIGHUP is left as the caller set it.)
        // SAFETY: only `signal`, async-signal-safe, between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("starting the child");
        let drain = |mut pipe: Box<dyn Read + Send>, into: Shared| {
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                    into.lock().unwrap().extend_from_slice(&chunk[..n]);
                }
            })
        };
        let (out, err) = (Shared::default(), Shared::default());
        let drains = vec![
            drain(Box::new(child.stdout.take().expect("piped")), out.clone()),
            drain(Box::new(child.stderr.take().expect("piped")), err.clone()),
        ];
        Signalled {
            child,
            dir: None,
            out,
            err,
            drains,
            deadline: std::time::Instant::now() + limit,
        }
    }

    /// A run that writes its CSV into `dir`, for [`Signalled::rows`].
    pub fn writing_to(mut self, dir: &Path) -> Signalled {
        self.dir = Some(dir.to_path_buf());
        self
    }

    /// The rows its CSV holds now (0 before it exists).
    pub fn rows(&self) -> usize {
        let dir = self.dir.as_ref().expect("a run writing_to a folder");
        files_with_ext(dir, "csv").first().map_or(0, |f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .count()
                .saturating_sub(1)
        })
    }

    /// Waits until its CSV holds at least `n` rows; returns how many it holds then.
    pub fn wait_rows(&mut self, n: usize) -> usize {
        self.until(&format!("{n} rows"), |run| run.rows() >= n);
        self.rows()
    }

    /// Waits until its resident memory reaches `bytes` (`VmRSS`): a run is then inside a case
    /// whose arrays take that much, past the point where a signal would keep it from starting.
    pub fn wait_rss(&mut self, bytes: u64) {
        let rss = |pid: u32| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map_or(0, |kb| kb * 1024)
        };
        self.until(&format!("{bytes} bytes resident"), |run| {
            rss(run.child.id()) >= bytes
        });
    }

    /// Waits until it has written `said` on stderr.
    pub fn wait_stderr(&mut self, said: &str) {
        self.until(&format!("{said:?} on stderr"), |run| {
            text(&run.err.lock().unwrap()).contains(said)
        });
    }

    /// Polls `done` until it holds; fails if the child ends first or the time limit passes.
    fn until(&mut self, waiting_for: &str, done: impl Fn(&Signalled) -> bool) {
        while !done(self) {
            if let Some(status) = self.child.try_wait().expect("waiting") {
                panic!(
                    "ended ({status}) while waiting for {waiting_for}; stderr:\n{}",
                    text(&self.err.lock().unwrap())
                );
            }
            self.check_deadline(&format!("waiting for {waiting_for}"));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Sends `signal` to the child alone (not its process group, as a terminal would).
    pub fn signal(&self, signal: i32) {
        // SAFETY: a plain signal to our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
    }

    /// Waits for it to end: its status, stdout and stderr.
    pub fn wait(mut self) -> std::process::Output {
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("waiting") {
                break s;
            }
            self.check_deadline("waiting for it to end");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        for drain in self.drains.drain(..) {
            let _ = drain.join();
        }
        let take = |shared: &Shared| std::mem::take(&mut *shared.lock().unwrap());
        std::process::Output {
            status,
            stdout: take(&self.out),
            stderr: take(&self.err),
        }
    }

    /// [`Signalled::wait`], as exit code (`None` for a signal) and text; nothing of its process
    /// group may be left then (a run's workers end before it does).
    pub fn finish(self) -> (Option<i32>, String, String) {
        let group = self.child.id() as i32;
        let out = self.wait();
        let err = text(&out.stderr);
        // SAFETY: probes the process group this test created; signal 0 sends nothing.
        let left = unsafe { libc::kill(-group, 0) } == 0;
        assert!(!left, "a process of its group outlived it; stderr:\n{err}");
        (out.status.code(), text(&out.stdout), err)
    }

    fn check_deadline(&mut self, doing: &str) {
        if std::time::Instant::now() > self.deadline {
            // SAFETY: signals the process group this test created.
            unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
            let _ = self.child.wait();
            panic!(
                "past its time limit, {doing}; killed; stderr:\n{}",
                text(&self.err.lock().unwrap())
            );
        }
    }
}
