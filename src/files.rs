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
    note_input(path);
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

/// Whether `path` is `-`, which names stdout where a command writes a single file.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Whether an output path names a stream rather than a file: `-`, or an existing character
/// device or FIFO (`/dev/stdout`, `/dev/null`, a named pipe), symbolic links followed. What a
/// command says about a file it wrote goes to stderr then, not into the stream.
pub fn is_stream(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    is_stdout(path)
        || std::fs::metadata(path)
            .is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_fifo())
}

/// Where an output's bytes go, as the file system has the name now.
enum Target {
    /// A regular file, new or (with `--force`) replaced: a temporary file renamed to this name.
    /// For a symbolic link to a regular file, the link's target: the link stays, and what it
    /// points to is written (as a shell's `>` would).
    File(PathBuf),
    /// An existing character device or FIFO, written into directly: nothing to replace.
    Stream,
}

/// Where writing `path` leads: a file to create or replace, or a stream to write into. A name
/// that is a folder, a link that points nowhere, a block device or a socket is a usage error.
fn target_of(path: &Path) -> Result<Target> {
    use std::os::unix::fs::FileTypeExt;
    let link = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Target::File(path.to_path_buf()))
        }
        Err(e) => return Err(Error::io(path, e)),
        Ok(m) => m,
    };
    let is_link = link.file_type().is_symlink();
    let meta = if is_link {
        match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(dangling_link(path));
            }
            Err(e) => return Err(Error::io(path, e)),
        }
    } else {
        link
    };
    let kind = meta.file_type();
    if kind.is_dir() {
        not_a_folder(path)?;
    }
    if kind.is_char_device() || kind.is_fifo() {
        return Ok(Target::Stream);
    }
    if kind.is_file() {
        if !is_link {
            return Ok(Target::File(path.to_path_buf()));
        }
        return std::fs::canonicalize(path)
            .map(Target::File)
            .map_err(|e| Error::io(path, e));
    }
    let what = if kind.is_block_device() {
        "a block device"
    } else {
        "a socket"
    };
    Err(Error::Usage(format!(
        "{} is {what}; roofprobe writes files, FIFOs and character devices: name a file",
        path.display()
    )))
}

/// The error for a symbolic link whose target does not exist.
fn dangling_link(path: &Path) -> Error {
    let to = std::fs::read_link(path).map_or_else(|_| "?".to_string(), |t| t.display().to_string());
    Error::Usage(format!(
        "{} is a symbolic link to {to}, which does not exist; create {to} first, or name \
         another path",
        path.display()
    ))
}

/// Makes `dir` the folder outputs go to: created if missing; a file there is a usage error,
/// and so is a symbolic link that points nowhere.
pub fn output_folder(dir: &Path) -> Result<()> {
    if dir
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
        && !dir.exists()
    {
        return Err(dangling_link(dir));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{} is a file; -o/--out names a folder here (created if missing)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// Checks that `dir` takes a new file, before anything is measured into it: writes a temporary
/// file of about a CSV header's size there and removes it. A read-only, full or foreign folder is an
/// error now rather than after the first case.
pub fn probe_folder(dir: &Path) -> Result<()> {
    let probe = dir.join("probe");
    let (tmp, file) = write_temporary(&probe, &[b'x'; 512]).map_err(|e| match e {
        Error::Io { source, .. } => Error::io(dir, source),
        other => other,
    })?;
    drop(file);
    let _ = std::fs::remove_file(tmp);
    Ok(())
}

/// The name was taken when [`publish`] gave it, without `--force`.
struct Taken;

/// Gives the complete temporary file `tmp` the name `path`, in one step: without replacing an
/// existing file (a hard link, which fails if the name exists) unless `overwrite` allows it.
fn publish(tmp: &Path, path: &Path, overwrite: Overwrite) -> Result<Result<(), Taken>> {
    match overwrite {
        Overwrite::Allowed => std::fs::rename(tmp, path)
            .map(Ok)
            .map_err(|e| Error::io(path, e)),
        Overwrite::Never => match std::fs::hard_link(tmp, path) {
            Ok(()) => {
                let _ = std::fs::remove_file(tmp);
                Ok(Ok(()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Err(Taken)),
            // A file system without hard links: check, then rename (a narrow race, never a
            // partial file).
            Err(_) if path.exists() => Ok(Err(Taken)),
            Err(_) => std::fs::rename(tmp, path)
                .map(Ok)
                .map_err(|e| Error::io(path, e)),
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

/// [`publish`], and the temporary file removed where it was not published: nothing is left
/// behind.
fn publish_or_remove(tmp: &Path, path: &Path, overwrite: Overwrite) -> Result<Result<(), Taken>> {
    let published = publish(tmp, path, overwrite);
    if !matches!(published, Ok(Ok(()))) {
        let _ = std::fs::remove_file(tmp);
    }
    published
}

/// Writes `bytes` into an existing character device or FIFO.
fn write_stream(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut stream = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    stream
        .write_all(bytes)
        .and_then(|()| stream.flush())
        .map_err(|e| Error::io(path, e))
}

/// [`write_new`], telling a name taken (without `--force`) apart from other errors.
fn write_or_taken(path: &Path, bytes: &[u8], overwrite: Overwrite) -> Result<Result<(), Taken>> {
    if is_stdout(path) {
        return Err(Error::Usage(
            "`-` (stdout) names an output only where a command writes one file (export -o, \
             plot -o); name a file here"
                .into(),
        ));
    }
    let file = match target_of(path)? {
        Target::Stream => return write_stream(path, bytes).map(Ok),
        Target::File(file) => file,
    };
    not_an_input(path, &file)?;
    if overwrite == Overwrite::Never && file.exists() {
        return Ok(Err(Taken));
    }
    let (tmp, handle) = write_temporary(&file, bytes)?;
    drop(handle);
    publish_or_remove(&tmp, &file, overwrite)
}

/// Writes `bytes` to `path` whole or not at all: a temporary file in the same folder, renamed
/// into place. With [`Overwrite::Never`] an existing `path` is a usage error and is left as it
/// was. On any error nothing is left behind. An existing character device or FIFO
/// (`/dev/stdout`, a named pipe) is written into as it is, with or without `--force`; a symbolic
/// link to a file is followed, and its target replaced.
pub fn write_new(path: &Path, bytes: &[u8], overwrite: Overwrite) -> Result<()> {
    write_or_taken(path, bytes, overwrite)?.map_err(|Taken| exists_error(path))
}

/// Writes `bytes` to a new file `<dir>/<stem>.<ext>`, suffixed `-2`, `-3`, … past names that
/// exist, and returns its path. A name another process takes between the choice and the write
/// (several `report`s at once) moves this one on to the next suffix.
pub fn write_fresh(dir: &Path, stem: &str, ext: &str, bytes: &[u8]) -> Result<PathBuf> {
    for _ in 0..1000 {
        let path = fresh_path(dir, stem, ext);
        if write_or_taken(&path, bytes, Overwrite::Never)?.is_ok() {
            return Ok(path);
        }
    }
    Err(Error::Internal(format!(
        "no free name for {stem}.{ext} in {} after 1000 tries",
        dir.display()
    )))
}

/// Writes `bytes` to `<dir>/<stem>.<ext>` and returns the path: replacing that file with
/// `--force` ([`Overwrite::Allowed`]), else to a fresh name beside any that exist
/// ([`write_fresh`]).
pub fn write_named(
    dir: &Path,
    stem: &str,
    ext: &str,
    bytes: &[u8],
    overwrite: Overwrite,
) -> Result<PathBuf> {
    match overwrite {
        Overwrite::Never => write_fresh(dir, stem, ext, bytes),
        Overwrite::Allowed => {
            let path = dir.join(format!("{stem}.{ext}"));
            write_new(&path, bytes, overwrite).map(|()| path)
        }
    }
}

/// Where one staged output goes.
enum Name {
    /// A name given (`--csv x`): `asked` as the user wrote it, `file` the regular file it leads
    /// to (links followed).
    Given { asked: PathBuf, file: PathBuf },
    /// `<dir>/<stem>.<ext>`, or the first free `-2`, `-3`, … beside it (without `--force`).
    Fresh {
        dir: PathBuf,
        stem: String,
        ext: String,
    },
    /// An existing character device or FIFO: written into at publish, after every file.
    Stream { asked: PathBuf, bytes: Vec<u8> },
}

struct Staged {
    name: Name,
    /// The complete bytes, in a temporary file beside the name (none for a stream).
    tmp: Option<PathBuf>,
    overwrite: Overwrite,
}

/// The files one command writes, as a set: each is written whole to a temporary file beside its
/// name first ([`add`](Self::add), [`add_named`](Self::add_named)), and only when every one is
/// complete are they given their names ([`publish`](Self::publish)), all or none. A full disk
/// or a refusal after the first file leaves nothing behind, so the retry finds every name free
/// (`compare --svg --csv`, `fleet`, `report` over many runs). Two outputs of one command that
/// name one file are refused before anything is written. Dropped unpublished, the set removes
/// its temporary files.
#[derive(Default)]
pub struct Outputs {
    staged: Vec<Staged>,
}

impl Outputs {
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// Stages `bytes` for `path`, as [`write_new`] would write them: an existing file without
    /// `--force`, an input, a folder or a path another output of this set names is refused now.
    pub fn add(&mut self, path: &Path, bytes: &[u8], overwrite: Overwrite) -> Result<()> {
        if is_stdout(path) {
            return write_or_taken(path, bytes, overwrite).map(|_| ());
        }
        let file = match target_of(path)? {
            Target::Stream => {
                self.staged.push(Staged {
                    name: Name::Stream {
                        asked: path.to_path_buf(),
                        bytes: bytes.to_vec(),
                    },
                    tmp: None,
                    overwrite,
                });
                return Ok(());
            }
            Target::File(file) => file,
        };
        not_an_input(path, &file)?;
        if overwrite == Overwrite::Never && file.exists() {
            return Err(exists_error(path));
        }
        let same = same_file_key(&file);
        if let Some(other) = self.staged.iter().find_map(|s| match &s.name {
            Name::Given { asked, file: f } if same_file_key(f) == same => Some(asked),
            _ => None,
        }) {
            return Err(Error::Usage(format!(
                "{} and {} name the same file; give each output of the command its own name                  (nothing was written)",
                other.display(),
                path.display()
            )));
        }
        let (tmp, handle) = write_temporary(&file, bytes)?;
        drop(handle);
        self.staged.push(Staged {
            name: Name::Given {
                asked: path.to_path_buf(),
                file,
            },
            tmp: Some(tmp),
            overwrite,
        });
        Ok(())
    }

    /// Stages `bytes` for `<dir>/<stem>.<ext>` as [`write_named`] would write them (replaced
    /// with `--force`, else a fresh `-2`, `-3`, … name chosen at publish); returns the output's
    /// index in what [`publish`](Self::publish) returns. With `--force`, a name another output
    /// of this set takes is refused now.
    pub fn add_named(
        &mut self,
        dir: &Path,
        stem: &str,
        ext: &str,
        bytes: &[u8],
        overwrite: Overwrite,
    ) -> Result<usize> {
        let path = dir.join(format!("{stem}.{ext}"));
        if overwrite == Overwrite::Allowed {
            self.add(&path, bytes, overwrite)?;
            return Ok(self.staged.len() - 1);
        }
        not_a_folder(&path)?;
        let (tmp, handle) = write_temporary(&path, bytes)?;
        drop(handle);
        self.staged.push(Staged {
            name: Name::Fresh {
                dir: dir.to_path_buf(),
                stem: stem.to_string(),
                ext: ext.to_string(),
            },
            tmp: Some(tmp),
            overwrite,
        });
        Ok(self.staged.len() - 1)
    }

    /// Gives every staged file its name, in the order staged, streams last; returns the paths,
    /// by index. If one cannot be given (a name taken meanwhile, an error), every name already
    /// given is taken back (a replaced file restored) and every temporary file removed: the
    /// command's outputs are all there or none is.
    pub fn publish(mut self) -> Result<Vec<PathBuf>> {
        let mut done: Vec<Published> = Vec::new();
        let mut paths = vec![PathBuf::new(); self.staged.len()];
        let order: Vec<usize> = (0..self.staged.len())
            .filter(|&i| !matches!(self.staged[i].name, Name::Stream { .. }))
            .chain(
                (0..self.staged.len())
                    .filter(|&i| matches!(self.staged[i].name, Name::Stream { .. })),
            )
            .collect();
        for i in order {
            match self.publish_one(i) {
                Ok((path, published)) => {
                    paths[i] = path;
                    done.extend(published);
                }
                Err(e) => {
                    for p in done.into_iter().rev() {
                        p.take_back();
                    }
                    return Err(e);
                }
            }
        }
        for p in done {
            p.keep();
        }
        Ok(paths)
    }

    fn publish_one(&mut self, i: usize) -> Result<(PathBuf, Option<Published>)> {
        let staged = &mut self.staged[i];
        let overwrite = staged.overwrite;
        match &staged.name {
            Name::Stream { asked, bytes } => {
                write_stream(asked, bytes)?;
                Ok((asked.clone(), None))
            }
            Name::Given { asked, file } => {
                let tmp = staged.tmp.take().expect("a staged file has its temporary");
                let backup = match overwrite {
                    Overwrite::Allowed if file.exists() => {
                        let backup = temporary_beside(file);
                        std::fs::hard_link(file, &backup).ok().map(|()| backup)
                    }
                    _ => None,
                };
                let published = publish_or_remove(&tmp, file, overwrite);
                if let (Err(_), Some(b)) = (&published, &backup) {
                    let _ = std::fs::remove_file(b);
                }
                match published? {
                    Ok(()) => Ok((
                        asked.clone(),
                        Some(Published {
                            file: file.clone(),
                            backup,
                        }),
                    )),
                    Err(Taken) => {
                        if let Some(b) = backup {
                            let _ = std::fs::remove_file(b);
                        }
                        Err(exists_error(asked))
                    }
                }
            }
            Name::Fresh { dir, stem, ext } => {
                let tmp = staged.tmp.take().expect("a staged file has its temporary");
                for _ in 0..1000 {
                    let path = fresh_path(dir, stem, ext);
                    if publish(&tmp, &path, Overwrite::Never)?.is_ok() {
                        return Ok((
                            path.clone(),
                            Some(Published {
                                file: path,
                                backup: None,
                            }),
                        ));
                    }
                }
                let _ = std::fs::remove_file(&tmp);
                Err(Error::Internal(format!(
                    "no free name for {stem}.{ext} in {} after 1000 tries",
                    dir.display()
                )))
            }
        }
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        for tmp in self.staged.iter_mut().filter_map(|s| s.tmp.take()) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A file [`Outputs::publish`] gave its name, and what it replaced (kept under a temporary
/// name until the whole set is published).
struct Published {
    file: PathBuf,
    backup: Option<PathBuf>,
}

impl Published {
    /// The set failed: the file goes, and what it replaced comes back.
    fn take_back(self) {
        match self.backup {
            Some(b) => {
                let _ = std::fs::rename(b, &self.file);
            }
            None => {
                let _ = std::fs::remove_file(&self.file);
            }
        }
    }

    /// The set is published: what it replaced is let go.
    fn keep(self) {
        if let Some(b) = self.backup {
            let _ = std::fs::remove_file(b);
        }
    }
}

/// What tells two names of one file apart from two files: device and inode where the file
/// exists, else its folder resolved and its name.
fn same_file_key(file: &Path) -> (u64, u64, PathBuf) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(m) = std::fs::metadata(file) {
        return (m.dev(), m.ino(), PathBuf::new());
    }
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir
        .map_or_else(|| std::fs::canonicalize("."), std::fs::canonicalize)
        .unwrap_or_else(|_| dir.map_or_else(PathBuf::new, Path::to_path_buf));
    (0, 0, dir.join(file.file_name().unwrap_or_default()))
}

/// The files this process read as inputs ([`read_input`]), by device and inode: an output must
/// never replace one.
static INPUTS: std::sync::Mutex<Vec<(u64, u64, PathBuf)>> = std::sync::Mutex::new(Vec::new());

/// Remembers a regular file read as an input.
fn note_input(path: &Path) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(m) = std::fs::metadata(path) {
        if m.is_file() {
            if let Ok(mut inputs) = INPUTS.lock() {
                inputs.push((m.dev(), m.ino(), path.to_path_buf()));
            }
        }
    }
}

/// Refuses to write `file` (the output `asked`, links followed) when it is a file this process
/// read as an input: `export a.csv -o a.csv --force` would turn the measurements into JSON.
fn not_an_input(asked: &Path, file: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::metadata(file) else {
        return Ok(());
    };
    let inputs = INPUTS
        .lock()
        .map_or_else(|p| p.into_inner().clone(), |i| i.clone());
    match inputs
        .iter()
        .find(|(dev, ino, _)| (*dev, *ino) == (m.dev(), m.ino()))
    {
        Some((_, _, input)) => Err(Error::Usage(format!(
            "{} is the input {}; roofprobe never writes over what it reads: name another output",
            asked.display(),
            input.display()
        ))),
        None => Ok(()),
    }
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
        if path.symlink_metadata().is_ok() {
            return Err(exists_error(path));
        }
        let (tmp, file) = write_temporary(path, first)?;
        publish_or_remove(&tmp, path, Overwrite::Never)?.map_err(|Taken| exists_error(path))?;
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
