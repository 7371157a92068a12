//! Files in and out, for every command: inputs read with a size limit, outputs written whole or
//! not at all.
//!
//! An output is written to a temporary file in its own folder and then given its name in one
//! step, so a full disk, an error or an interrupt never leaves a 0-byte or truncated file under
//! a real name (which the never-overwrite rule would then refuse to replace on the retry). A
//! file that grows row by row ([`AppendFile`], the run's CSV) is created the same way with its
//! first row, and each later row is appended whole or rolled back.
//!
//! This module must not know what the bytes mean: CSV rows, JSON and SVG are the callers'.

use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

pub use roofprobe_calibration::check::MAX_FILE_BYTES;

/// Reads an input file of at most [`MAX_FILE_BYTES`] (an endless one, such as `/dev/zero`, is
/// refused after that many bytes).
pub fn read_input(path: &Path) -> Result<Vec<u8>> {
    Ok(roofprobe_calibration::check::read_limited(path)?)
}

/// Whether an output may replace a file of the same name (`--force`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overwrite {
    /// The name must be new: an existing file is a usage error.
    Never,
    /// An existing file is replaced, in one step.
    Allowed,
}

impl Overwrite {
    pub fn from_force(force: bool) -> Overwrite {
        if force {
            Overwrite::Allowed
        } else {
            Overwrite::Never
        }
    }
}

/// 64 bits that differ between processes and calls: for temporary names and run-id suffixes.
/// (std's hasher keys are random per process; the clock and a counter separate calls.)
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(now);
    h.finish()
}

/// Whether a path is one of this module's temporary files (`.<name>.<hex>.tmp`).
pub fn is_temporary(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.') && n.ends_with(".tmp"))
}

fn temporary_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let dir = path.parent().unwrap_or(Path::new(""));
    dir.join(format!(".{name}.{:016x}.tmp", random_u64()))
}

/// A path `<dir>/<stem>.<ext>` that does not exist yet (suffixing `-2`, `-3`, … if needed).
pub fn fresh_path(dir: &Path, stem: &str, ext: &str) -> PathBuf {
    let first = dir.join(format!("{stem}.{ext}"));
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|i| dir.join(format!("{stem}-{i}.{ext}")))
        .find(|p| !p.exists())
        .expect("an unused suffix exists")
}

fn exists_error(path: &Path) -> Error {
    Error::Usage(format!(
        "{} exists; roofprobe never overwrites a file: choose another name, or pass --force to \
         replace it",
        path.display()
    ))
}

/// Refuses an output path that names a folder (`-o` names the file to write).
fn not_a_folder(path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(Error::Usage(format!(
            "{} is a folder; -o/--out names the file to write here",
            path.display()
        )));
    }
    Ok(())
}

/// Makes `dir` the folder outputs go to: created if missing; a file there is a usage error.
pub fn output_folder(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{} is a file; -o/--out names a folder here (created if missing)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// Gives the complete temporary file `tmp` the name `path`, in one step: without replacing an
/// existing file (a hard link, which fails if the name exists) unless `overwrite` allows it.
fn publish(tmp: &Path, path: &Path, overwrite: Overwrite) -> Result<()> {
    match overwrite {
        Overwrite::Allowed => std::fs::rename(tmp, path).map_err(|e| Error::io(path, e)),
        Overwrite::Never => match std::fs::hard_link(tmp, path) {
            Ok(()) => {
                let _ = std::fs::remove_file(tmp);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(exists_error(path)),
            // A file system without hard links: check, then rename (a narrow race, never a
            // partial file).
            Err(_) if path.exists() => Err(exists_error(path)),
            Err(_) => std::fs::rename(tmp, path).map_err(|e| Error::io(path, e)),
        },
    }
}

/// Creates the temporary file beside `path` and writes `bytes` to it; returns it open. On any
/// error the temporary file is gone. (Not fsynced: a full disk or an error is caught here, at
/// the write; durability across a power cut is the file system's, as for any other tool, and
/// a sync per file made `report` over thousands of runs wait on the disk for minutes.)
fn write_temporary(path: &Path, bytes: &[u8]) -> Result<(PathBuf, std::fs::File)> {
    let tmp = temporary_beside(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Error::io(path, e))?;
    let written = file.write_all(bytes).and_then(|()| file.flush());
    if let Err(e) = written {
        drop(file);
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    Ok((tmp, file))
}

/// Writes `bytes` to `path` whole or not at all: a temporary file in the same folder, renamed
/// into place. With [`Overwrite::Never`] an existing `path` is a usage error and is left as it
/// was. On any error nothing is left behind.
pub fn write_new(path: &Path, bytes: &[u8], overwrite: Overwrite) -> Result<()> {
    not_a_folder(path)?;
    if overwrite == Overwrite::Never && path.exists() {
        return Err(exists_error(path));
    }
    let (tmp, file) = write_temporary(path, bytes)?;
    drop(file);
    let published = publish(&tmp, path, overwrite);
    if published.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    published
}

/// A file that is created with its first bytes and then grows: each [`append`](Self::append)
/// lands whole or is rolled back, so the file always holds complete writes only.
pub struct AppendFile {
    path: PathBuf,
    file: std::fs::File,
    len: u64,
}

impl AppendFile {
    /// Creates `path` (which must not exist) holding `first`, in one step, as [`write_new`].
    pub fn create_new(path: &Path, first: &[u8]) -> Result<AppendFile> {
        not_a_folder(path)?;
        if path.exists() {
            return Err(exists_error(path));
        }
        let (tmp, file) = write_temporary(path, first)?;
        if let Err(e) = publish(&tmp, path, Overwrite::Never) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(AppendFile {
            path: path.to_path_buf(),
            file,
            len: first.len() as u64,
        })
    }

    /// Appends `bytes` and flushes them to the file; on error the file is cut back to what it
    /// held before, and the error returned.
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        use std::io::{Seek, SeekFrom};
        let written = self
            .file
            .seek(SeekFrom::Start(self.len))
            .and_then(|_| self.file.write_all(bytes))
            .and_then(|()| self.file.flush());
        match written {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(self.len);
                Err(Error::io(&self.path, e))
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn fresh_paths_never_clash() {
        let dir = tempfile::tempdir().unwrap();
        let a = fresh_path(dir.path(), "x", "csv");
        assert_eq!(a, dir.path().join("x.csv"));
        std::fs::write(&a, "").unwrap();
        let b = fresh_path(dir.path(), "x", "csv");
        assert_eq!(b, dir.path().join("x-2.csv"));
        std::fs::write(&b, "").unwrap();
        assert_eq!(
            fresh_path(dir.path(), "x", "csv"),
            dir.path().join("x-3.csv")
        );
    }

    #[test]
    fn write_new_never_overwrites_unless_allowed_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_new(&p, b"one", Overwrite::Never).unwrap();
        let e = write_new(&p, b"two", Overwrite::Never).unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e}");
        assert!(e.to_string().contains("never overwrites") && e.to_string().contains("--force"));
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        write_new(&p, b"three", Overwrite::Allowed).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"three");
        assert_eq!(names(dir.path()), ["a.json"]);
        // a folder is not a file name, a file is not a folder
        let e = write_new(dir.path(), b"x", Overwrite::Allowed).unwrap_err();
        assert!(e.to_string().contains("is a folder"), "{e}");
        let e = output_folder(&p).unwrap_err();
        assert!(e.to_string().contains("is a file"), "{e}");
        // a folder that does not exist: an I/O error naming the file, nothing left
        let missing = dir.path().join("no/such/x.svg");
        let e = write_new(&missing, b"x", Overwrite::Never).unwrap_err();
        assert!(
            e.to_string().starts_with(&missing.display().to_string()),
            "{e}"
        );
        assert_eq!(names(dir.path()), ["a.json"]);
    }

    #[test]
    fn appends_land_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        let mut f = AppendFile::create_new(&p, b"head\n").unwrap();
        f.append(b"row1\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"head\nrow1\n");
        assert!(AppendFile::create_new(&p, b"x").is_err());
        assert_eq!(names(dir.path()), ["r.csv"]);
        assert!(is_temporary(Path::new("/d/.r.csv.0123456789abcdef.tmp")));
        assert!(!is_temporary(Path::new("/d/r.csv")));
        assert_ne!(random_u64(), random_u64());
    }
}
