//! Files in and out through the real binary: outputs written whole or not at all on a full disk
//! (and the retry succeeds), run ids unique for runs started together, inputs that are endless,
//! concatenated, or whose run id mixes devices.

use crate::common::text;
use roofprobe::results::csv::read_csv;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn roofprobe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_roofprobe"))
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A one-case host run (`stream/copy/f32`, 64 KiB arrays) into `out`.
fn tiny_run(out: &Path) -> Command {
    let mut c = roofprobe();
    c.args([
        "run", "--device", "host", "--quick", "--size", "64KiB", "--filter", "copy/f32", "-o",
    ])
    .arg(out);
    c
}

/// Whether a run finished with every case valid: exit 0, or 4 when some figures are suspect
/// (flagged), which a machine these tests share with each other cannot rule out.
fn finished(status: std::process::ExitStatus) -> bool {
    matches!(status.code(), Some(0 | roofprobe::cli::EXIT_SUSPECT))
}

fn csv_in(dir: &Path) -> Vec<PathBuf> {
    names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".csv"))
        .map(|n| dir.join(n))
        .collect()
}

/// A small tmpfs mounted for one test and unmounted when dropped. Needs root (CI runs as root);
/// elsewhere the test says it skipped.
struct Tmpfs {
    _holder: tempfile::TempDir,
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(size_bytes: u64) -> Result<Tmpfs, String> {
        let holder = tempfile::tempdir().map_err(|e| e.to_string())?;
        let dir = holder.path().join("disk");
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_bytes}"), "tmpfs"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("no mount command: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cannot mount a tmpfs (not root?): {}",
                text(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs {
            _holder: holder,
            dir,
        })
    }

    /// Fills the file system with `filler`, then frees `free_bytes` of it (whole pages).
    fn fill_leaving(&self, free_bytes: u64) -> PathBuf {
        use std::io::Write;
        let filler = self.dir.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        let len = f.metadata().unwrap().len();
        f.set_len((len / 4096 * 4096).saturating_sub(free_bytes))
            .unwrap();
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

fn one_error_line(out: &Output) -> String {
    let err = text(&out.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| {
            !l.starts_with("note:")
                && !l.starts_with("measuring ")
                && !l.starts_with("time: ")
                && !l.starts_with("plan: ")
                && !l.starts_with("  ")
        })
        .collect();
    assert_eq!(lines.len(), 1, "one error line: {err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    lines[0].to_string()
}

/// The bug: with 4 KB free, `run` exited 0 and left a 0-byte JSON, which the never-overwrite
/// rule then kept forever. Now the run fails, the CSV holds its row, no partial or temporary
/// file is left, and `report` writes the JSON and SVG under their own names once there is room.
#[test]
fn a_full_disk_leaves_no_partial_file_and_the_retry_succeeds() {
    let disk = match Tmpfs::mount(256 << 10) {
        Ok(d) => d,
        Err(why) => {
            eprintln!("skipped a_full_disk_leaves_no_partial_file_and_the_retry_succeeds: {why}");
            return;
        }
    };
    let out_dir = &disk.dir;

    // 1. Completely full: not even the first row fits, so there is no CSV at all.
    let filler = disk.fill_leaving(0);
    let out = tiny_run(out_dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let e = one_error_line(&out);
    assert!(e.contains("No space left on device"), "{e}");
    assert_eq!(names(out_dir), ["filler"]);

    // 2. 4 KB free: the CSV row fits, the JSON and SVG do not.
    std::fs::remove_file(&filler).unwrap();
    let filler = disk.fill_leaving(4096);
    let out = tiny_run(out_dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let e = one_error_line(&out);
    assert!(
        e.contains("its roofline was not written") && e.contains("roofprobe report"),
        "{e}"
    );
    let csvs = csv_in(out_dir);
    assert_eq!(csvs.len(), 1, "{:?}", names(out_dir));
    assert_eq!(read_csv(&csvs[0]).unwrap().len(), 1);
    assert_eq!(
        names(out_dir).len(),
        2,
        "filler and the CSV only: {:?}",
        names(out_dir)
    );

    // export to the full disk: an error, no file
    let json = out_dir.join("export.json");
    let out = roofprobe()
        .arg("export")
        .arg(&csvs[0])
        .arg("-o")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(one_error_line(&out).contains("No space left on device"));
    assert_eq!(names(out_dir).len(), 2, "{:?}", names(out_dir));

    // 3. Room again: the retries succeed under the names the failed writes wanted.
    std::fs::remove_file(&filler).unwrap();
    let out = roofprobe().arg("report").arg(&csvs[0]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stem = csvs[0].file_stem().unwrap().to_string_lossy().into_owned();
    let json_path = out_dir.join(format!("{stem}.json"));
    assert!(json_path.exists(), "{:?}", names(out_dir));
    assert!(out_dir.join(format!("{stem}.svg")).exists());
    roofprobe::Calibration::load(&json_path).unwrap();
    let out = roofprobe()
        .arg("export")
        .arg(&csvs[0])
        .arg("-o")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(names(out_dir).iter().all(|n| !n.ends_with(".tmp")));
}

/// Several runs started in the same second on one host: each its own run id and file.
#[test]
fn runs_started_together_get_different_run_ids() {
    let dir = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..3)
        .map(|_| {
            tiny_run(dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(finished(c.wait().unwrap()));
    }
    let files = csv_in(dir.path());
    assert_eq!(files.len(), 3, "{:?}", names(dir.path()));
    let mut ids: Vec<String> = files
        .iter()
        .map(|f| read_csv(f).unwrap()[0].run_id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");
}

/// `cat a.csv b.csv > ab.csv` reads as two runs, as docs/csv.md promises; a run id whose rows
/// name two devices is refused and named.
#[test]
fn concatenated_files_read_and_mixed_devices_are_named() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        assert!(finished(tiny_run(dir.path()).output().unwrap().status));
    }
    let files = csv_in(dir.path());
    let (a, b) = (
        std::fs::read_to_string(&files[0]).unwrap(),
        std::fs::read_to_string(&files[1]).unwrap(),
    );
    let cat = dir.path().join("cat").join("ab.csv");
    std::fs::create_dir(cat.parent().unwrap()).unwrap();
    std::fs::write(&cat, format!("{a}{b}")).unwrap();
    let out = roofprobe().arg("report").arg(&cat).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        names(cat.parent().unwrap())
            .iter()
            .filter(|n| n.ends_with(".json"))
            .count(),
        2
    );

    // the second file's row under the first file's run id, on another device
    let run_a = read_csv(&files[0]).unwrap()[0].run_id.clone();
    let run_b = read_csv(&files[1]).unwrap()[0].run_id.clone();
    let forged = b
        .replace(&run_b, &run_a)
        .replace(",host,host,", ",cuda,cuda:1,");
    let mixed = dir.path().join("mixed.csv");
    std::fs::write(&mixed, format!("{a}{forged}")).unwrap();
    let out = roofprobe().arg("export").arg(&mixed).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = one_error_line(&out);
    assert!(
        e.starts_with(&format!(
            "error: {}:4: run `{run_a}` mixes devices",
            mixed.display()
        )) && e.contains("on line 2"),
        "{e}"
    );
}

/// The bug: `report /dev/zero` grew to 2.2 GB. Now every reader stops at 256 MiB.
#[test]
fn an_endless_input_is_refused() {
    if !Path::new("/dev/zero").exists() {
        eprintln!("skipped an_endless_input_is_refused: no /dev/zero");
        return;
    }
    for command in ["report", "export", "plot", "compare"] {
        let t = std::time::Instant::now();
        let out = roofprobe().args([command, "/dev/zero"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{command}");
        let e = one_error_line(&out);
        assert!(e.contains("/dev/zero:1: larger than 256 MiB"), "{e}");
        assert!(t.elapsed().as_secs() < 30, "{command}: {:?}", t.elapsed());
    }
}

/// A checked-in results CSV (one run), copied into `dir` as `name`.
fn a_run_in(dir: &Path, name: &str) -> PathBuf {
    let csv = dir.join(name);
    std::fs::copy(&crate::common::checked_in("csv")[0], &csv).unwrap();
    csv
}

/// Whether running as root (device nodes can be made then).
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The bug: `export X.csv -o /dev/stdout --force` replaced the device node (or FIFO, or link)
/// with a regular file, and without --force refused it as existing; `plot -o -` made a file
/// named `-`. Now a FIFO or character device is written into, with or without --force, through
/// a symbolic link too; `-` is stdout; a link to a file is followed and its target replaced.
#[test]
fn an_output_that_is_a_stream_is_written_into_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let csv = a_run_in(dir.path(), "a.csv");
    let export = |out: &Path, force: bool| {
        let mut c = roofprobe();
        c.arg("export").arg(&csv).arg("-o").arg(out);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    let is_calibration =
        |bytes: &[u8]| roofprobe::Calibration::from_json(Path::new("x"), &text(bytes)).is_ok();

    // a FIFO, read by a thread: written into, still a FIFO
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo needs no privilege.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for force in [false, true] {
        let path = fifo.clone();
        let reader = std::thread::spawn(move || std::fs::read(path).unwrap());
        let out = export(&fifo, force);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(is_calibration(&reader.join().unwrap()));
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(kind.is_fifo(), "force {force}: {kind:?}");
    }

    // stdout through a link to /proc/self/fd/1, and `-`: the JSON on stdout, the link kept
    let link = dir.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &link).unwrap();
    for (out, force) in [
        (link.as_path(), true),
        (link.as_path(), false),
        (Path::new("-"), false),
    ] {
        let o = export(out, force);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(is_calibration(&o.stdout), "{}", text(&o.stdout));
    }
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let o = roofprobe()
        .arg("plot")
        .arg(&csv)
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).trim_start().starts_with("<svg") || text(&o.stdout).starts_with("<?xml")
    );
    assert!(!dir.path().join("-").exists() && !Path::new("-").exists());

    // a character device: through a link to /dev/null, and (as root) a node made here
    let null = dir.path().join("null");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    let mut devices = vec![null.clone()];
    if is_root() {
        let node = dir.path().join("null-node");
        let c = std::ffi::CString::new(node.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; the node is /dev/null's (1, 3), made in a temporary folder.
        let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        assert_eq!(rc, 0);
        devices.push(node);
    } else {
        eprintln!(
            "an_output_that_is_a_stream…: not root, no device node made; a link to /dev/null only"
        );
    }
    for d in &devices {
        let fleet = roofprobe()
            .arg("fleet")
            .arg(&csv)
            .arg("--json")
            .arg(d)
            .arg("--force")
            .output()
            .unwrap();
        assert!(
            !text(&fleet.stderr).contains("error"),
            "{}",
            text(&fleet.stderr)
        );
        let o = export(d, true);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    }
    assert!(std::fs::symlink_metadata(&null)
        .unwrap()
        .file_type()
        .is_symlink());
    for d in &devices {
        assert!(std::fs::metadata(d).unwrap().file_type().is_char_device());
    }

    // a link to a file: without --force it exists; with it, the target is replaced, the link kept
    let target = dir.path().join("target.json");
    std::fs::write(&target, "old").unwrap();
    let to_file = dir.path().join("to-file.json");
    std::os::unix::fs::symlink(&target, &to_file).unwrap();
    let o = export(&to_file, false);
    assert_eq!(o.status.code(), Some(2));
    assert!(one_error_line(&o).contains("exists"));
    let o = export(&to_file, true);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(std::fs::symlink_metadata(&to_file)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(is_calibration(&std::fs::read(&target).unwrap()));

    // a link that points nowhere: said so, for a file and for run's folder
    let nowhere = dir.path().join("nowhere");
    std::os::unix::fs::symlink(dir.path().join("missing/x"), &nowhere).unwrap();
    let o = export(&nowhere, true);
    assert_eq!(o.status.code(), Some(2));
    assert!(one_error_line(&o).contains("which does not exist"));
    let o = tiny_run(&nowhere).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = one_error_line(&o);
    assert!(
        e.contains("symbolic link") && e.contains("does not exist"),
        "{e}"
    );
}

/// The bug: `export a.csv -o a.csv --force` turned the measured CSV into JSON, and `compare
/// b.csv a.csv --csv b.csv --force` likewise. Now an output that is one of the inputs (the same
/// file, by any name) is refused, exit 2, and the input is left as it was.
#[test]
fn an_output_never_replaces_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let a = a_run_in(dir.path(), "a.csv");
    let b = a_run_in(dir.path(), "b.csv");
    let hard = dir.path().join("hard.csv");
    std::fs::hard_link(&a, &hard).unwrap();
    let soft = dir.path().join("soft.csv");
    std::os::unix::fs::symlink(&a, &soft).unwrap();
    let before = std::fs::read(&a).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (a_, b_) = (s(&a), s(&b));
    let cases: Vec<Vec<String>> = vec![
        vec!["export".into(), a_.clone(), "-o".into(), a_.clone()],
        vec!["export".into(), a_.clone(), "-o".into(), s(&hard)],
        vec!["export".into(), a_.clone(), "-o".into(), s(&soft)],
        vec![
            "compare".into(),
            b_.clone(),
            a_.clone(),
            "--csv".into(),
            a_.clone(),
        ],
        vec![
            "compare".into(),
            b_.clone(),
            a_.clone(),
            "--svg".into(),
            a_.clone(),
        ],
        vec!["plot".into(), a_.clone(), "-o".into(), a_.clone()],
        vec![
            "fleet".into(),
            a_.clone(),
            b_.clone(),
            "--json".into(),
            a_.clone(),
        ],
        vec![
            "fleet".into(),
            a_.clone(),
            b_.clone(),
            "--csv".into(),
            s(&hard),
        ],
    ];
    for args in cases {
        let out = roofprobe().args(&args).arg("--force").output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let e = one_error_line(&out);
        assert!(
            e.contains("is the input") && e.contains("never writes over"),
            "{e}"
        );
        assert_eq!(std::fs::read(&a).unwrap(), before, "{args:?}");
    }
    assert!(std::fs::symlink_metadata(&soft)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// The bug: three `report a.csv` at once: some failed `a.json exists; … pass --force`, as the
/// name each chose free was taken before it wrote. Now each takes the next free name.
#[test]
fn reports_run_together_each_take_a_free_name() {
    let dir = tempfile::tempdir().unwrap();
    let csv = a_run_in(dir.path(), "a.csv");
    for round in 0..3 {
        let children: Vec<_> = (0..6)
            .map(|_| {
                roofprobe()
                    .arg("report")
                    .arg(&csv)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "round {round}: {}",
                text(&out.stderr)
            );
        }
    }
    let jsons = names(dir.path())
        .iter()
        .filter(|n| n.ends_with(".json"))
        .count();
    assert_eq!(jsons, 18, "{:?}", names(dir.path()));
}

/// `/dev/full` opened for writing, for a child's stdout or stderr (`None`, and the test says it
/// skipped, where there is none).
fn dev_full(test: &str) -> Option<std::fs::File> {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    if full.is_err() {
        eprintln!("skipped {test}: no /dev/full");
    }
    full.ok()
}

/// The bug: a message on a stderr that fails (a full disk) panicked, exit 101 (`report
/// missing.csv 2>/dev/full`), and a run with such a stderr died mid-way with no table, JSON or
/// SVG. Now a message that cannot be shown is lost, never the run.
#[test]
fn a_failing_stderr_costs_nothing() {
    let test = "a_failing_stderr_costs_nothing";
    let Some(full) = dev_full(test) else { return };
    let out = roofprobe()
        .args(["report", "/nonexistent/x.csv"])
        .stderr(full.try_clone().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let dir = tempfile::tempdir().unwrap();
    let out = tiny_run(dir.path()).stderr(full).output().unwrap();
    assert!(finished(out.status), "{:?}", out.status);
    assert!(
        text(&out.stdout).contains("results: "),
        "{}",
        text(&out.stdout)
    );
    for ext in ["csv", "json", "svg"] {
        assert_eq!(
            crate::common::files_with_ext(dir.path(), ext).len(),
            1,
            "{ext}"
        );
    }
}

/// The bug: `run … >/dev/full` stopped at the table it could not print and wrote the CSV only.
/// Now the calibration JSON and roofline SVG are written first, then the stdout error reported.
#[test]
fn a_failing_stdout_still_leaves_the_roofline_files() {
    let test = "a_failing_stdout_still_leaves_the_roofline_files";
    let Some(full) = dev_full(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = tiny_run(dir.path()).stdout(full).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let e = one_error_line(&out);
    assert!(e.contains("<stdout>: No space left on device"), "{e}");
    for ext in ["csv", "json", "svg"] {
        assert_eq!(
            crate::common::files_with_ext(dir.path(), ext).len(),
            1,
            "{ext}"
        );
    }
}

/// `cmd` with its files limited to `bytes` (`RLIMIT_FSIZE`, soft; SIGXFSZ ignored, so a write
/// past it fails with EFBIG as on a full disk): a disk that fills at a chosen size, with no
/// privilege. The limit is inherited by what it starts; the hard limit is left, so a child may
/// raise its own.
pub fn files_limited_to(cmd: &mut Command, bytes: u64) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: only signal and setrlimit, async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            limit.rlim_cur = bytes as libc::rlim_t;
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// The bug: a CSV that could not take its next row lost that row without a word, and an output
/// folder that takes no file was found only after the first case was measured. Now the folder
/// is tried before anything is measured, and a row that cannot be written is named with its
/// figure, beside how many rows the CSV keeps.
#[test]
fn a_row_that_cannot_be_written_is_said_with_its_figure() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing fits: refused before the first case is measured (no case line on stderr).
    let out = files_limited_to(&mut tiny_run(dir.path()), 100)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let e = one_error_line(&out);
    assert!(
        e.contains("File too large") && e.contains("ulimit -f"),
        "{e}"
    );
    assert!(
        !text(&out.stderr).contains("copy/f32"),
        "{}",
        text(&out.stderr)
    );
    assert!(csv_in(dir.path()).is_empty(), "{:?}", names(dir.path()));

    // The header and first row fit, the second row does not (their size taken from a run
    // without the limit; the figures' digits vary by a few bytes, a row is hundreds).
    let run = |out: &Path| {
        let mut c = roofprobe();
        c.args(["run", "--device", "host", "--quick", "--size", "64KiB"])
            .args(["--filter", "copy/f32", "--filter", "scale/f32", "-o"])
            .arg(out);
        c
    };
    let free = tempfile::tempdir().unwrap();
    assert!(finished(run(free.path()).output().unwrap().status));
    let whole = std::fs::read(&csv_in(free.path())[0]).unwrap();
    let second_row = whole.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(1);
    let header_and_row = second_row.unwrap().0 as u64 + 1 + 40;
    let out = files_limited_to(&mut run(dir.path()), header_and_row)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let e = one_error_line(&out);
    let csv = csv_in(dir.path());
    assert_eq!(csv.len(), 1, "{e}");
    assert_eq!(read_csv(&csv[0]).unwrap().len(), 1, "{e}");
    assert!(
        e.contains("the row of stream/scale/f32 was not written (it measured ")
            && e.contains(" GB/s")
            && e.contains(&format!("{} keeps the 1 row before it", csv[0].display())),
        "{e}"
    );
}

/// The bug: `path: No space left on device (os error 28)` and nothing more. Now the kind of
/// error says what to do (written through /dev/full, which an output may now be).
#[test]
fn an_io_error_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let csv = a_run_in(dir.path(), "a.csv");
    if Path::new("/dev/full").exists() {
        let out = roofprobe()
            .arg("export")
            .arg(&csv)
            .args(["-o", "/dev/full"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let e = one_error_line(&out);
        assert!(
            e.contains("No space left on device") && e.contains("free some space"),
            "{e}"
        );
    }
    let out = roofprobe()
        .arg("export")
        .arg(&csv)
        .arg("-o")
        .arg(csv.join("x.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = one_error_line(&out);
    assert!(
        e.contains("Not a directory") && e.contains("name a folder"),
        "{e}"
    );
}

/// The bug: a CSV whose last row was cut off inside its quoted `note` (a run killed mid-write)
/// read as whole. Now a last row that ends inside quotes, or has fewer fields than the header,
/// is refused, its line named, as cut off.
#[test]
fn a_csv_cut_off_in_its_last_row_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(crate::common::checked_in("csv")[0].clone()).unwrap();
    assert!(whole.ends_with(b"\"\n"), "the last field is a quoted note");
    let lines = whole.iter().filter(|&&b| b == b'\n').count();
    for (cut, what) in [(20, "ends inside a quoted field"), (200, "fields")] {
        let t = dir.path().join(format!("cut-{cut}.csv"));
        std::fs::write(&t, &whole[..whole.len() - cut]).unwrap();
        let out = roofprobe().arg("export").arg(&t).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{cut}");
        let e = one_error_line(&out);
        assert!(
            e.starts_with(&format!("error: {}:{lines}: the last row ", t.display()))
                && e.contains(what)
                && e.contains("looks cut off"),
            "{e}"
        );
    }
}
