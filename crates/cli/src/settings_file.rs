//! Replacing a user's settings file (`hook install`) so the user can trust it: under a
//! lock, only if the file is still what was read, with a backup as private as the file.
//!
//! * **Lock.** An advisory lock (`flock`) on `<file>.transcope.lock` beside the file:
//!   two transcope runs, or any tool that takes the same lock, never interleave their
//!   read-modify-write.
//! * **Compare and rename.** The new text goes to a temporary file in the same folder
//!   (written whole, `fsync`ed, the original's mode and owner), and replaces the file
//!   by `rename` only if the file is still the one read: same bytes, inode, size,
//!   modification and change time. Otherwise the caller reads it again and redoes its
//!   edit, so a change another program made meanwhile is kept. The new file goes in by
//!   an atomic swap (Linux's `RENAME_EXCHANGE`), which keeps the file it replaces
//!   aside: if that is not the version read (a program that takes no lock renamed its
//!   own in after the compare), it is swapped back, so its change is not lost either.
//!   What no lock-free scheme closes: such a program *reading* in the microseconds our
//!   swapped-in version stands before it is swapped back, or overwriting transcope's
//!   change with a version it read before (its own lost update, which transcope cannot
//!   see). Where the swap is not available, a plain rename follows the compare.
//! * **Backup.** `<file>.transcope-<unix time>.bak`, created with the original's mode
//!   (never a moment wider: `open` with that mode, then `fchmod` past the umask) and
//!   owner; made only when the file changes, and not again when a backup beside it
//!   already holds the same bytes with the same mode.
//! * **Edit.** [`replace_edited`] runs an edit through all of the above: worked out on
//!   the file as read, then again under the lock, backed up, replaced if unchanged,
//!   else read and edited once more (for up to ten seconds).
//! * **Read-only** files and folders (no write bit at all) are refused, also for root,
//!   whom the permission bits would not stop.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use transcope_jsonl::open::exchange;

/// How long to go on reading and editing again a file another program keeps changing.
const RETRY_FOR: Duration = Duration::from_secs(10);

/// How long to wait for another holder of the lock.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The file as read: its bytes and identity, or that there was none.
#[derive(Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The bytes, `None` when there is no file.
    pub bytes: Option<Vec<u8>>,
    id: Option<FileId>,
}

/// What tells one version of a file from another besides its bytes.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
    uid: u32,
    gid: u32,
}

impl FileId {
    fn of(m: &fs::Metadata) -> FileId {
        FileId {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            mode: m.mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
        }
    }
}

impl Snapshot {
    /// Read `path` whole (a regular file), or note that it does not exist.
    pub fn read(path: &Path) -> io::Result<Snapshot> {
        let mut f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Snapshot {
                    bytes: None,
                    id: None,
                })
            }
            Err(e) => return Err(e),
        };
        let meta = f.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        f.read_to_end(&mut bytes)?;
        // Stat again after the read: a write during it shows as a change next time.
        let id = FileId::of(&f.metadata()?);
        Ok(Snapshot {
            bytes: Some(bytes),
            id: Some(id),
        })
    }

    /// Whether `other` is the same version of the same file: bytes and identity, all
    /// but the change time (a rename changes it).
    fn same_version(&self, other: &Snapshot) -> bool {
        let id = |s: &Snapshot| {
            s.id.map(|id| FileId {
                ctime: (0, 0),
                ..id
            })
        };
        self.bytes == other.bytes && id(self) == id(other)
    }

    /// The file's permission bits (`0644` for a file not there yet).
    pub fn mode(&self) -> u32 {
        self.id.map_or(0o644, |id| id.mode)
    }
}

/// Why `path` (as `snap` found it) cannot be changed: no write bit on it or on its
/// folder. The bits are read, not tried: root writes through them.
pub fn refusal(path: &Path, snap: &Snapshot) -> Option<String> {
    if snap.bytes.is_some() && snap.mode() & 0o222 == 0 {
        return Some(format!(
            "{} is read-only (mode {:04o}); left as it was: make it writable (`chmod u+w {}`) and run again",
            path.display(),
            snap.mode(),
            path.display()
        ));
    }
    let dir = folder(path);
    match fs::metadata(dir) {
        Ok(m) if m.permissions().mode() & 0o222 == 0 => Some(format!(
            "the folder {} is read-only (mode {:04o}), so {} cannot be replaced; left as it was: make the folder writable (`chmod u+w {}`) and run again",
            dir.display(),
            m.permissions().mode() & 0o7777,
            path.display(),
            dir.display()
        )),
        _ => None,
    }
}

fn folder(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The lock file beside `path`.
pub fn lock_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("settings");
    path.with_file_name(format!("{name}.transcope.lock"))
}

/// Take the advisory lock for `path` (held until the file returned is dropped),
/// waiting up to [`LOCK_WAIT`] for another holder.
pub fn lock(path: &Path) -> Result<File> {
    let lock = lock_path(path);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock)
        .with_context(|| format!("opening the lock file {}", lock.display()))?;
    let start = Instant::now();
    loop {
        match f.try_lock() {
            Ok(()) => return Ok(f),
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_WAIT => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(fs::TryLockError::WouldBlock) => bail!(
                "another program has held the lock {} for {} s; left as it was: run again when it is done",
                lock.display(),
                LOCK_WAIT.as_secs()
            ),
            Err(fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", lock.display()))
            }
        }
    }
}

/// A new file `name` in `path`'s folder holding `bytes`, with `snap`'s mode and owner,
/// written whole and synced. `None` when the name is taken.
fn create_like(target: &Path, snap: &Snapshot, bytes: &[u8]) -> io::Result<Option<File>> {
    let mode = snap.mode();
    let mut f = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(target)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(None),
        Err(e) => return Err(e),
    };
    let done = (|| {
        // The umask may have narrowed the mode; never widened it.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        if let Some(id) = snap.id {
            // Root editing a user's file leaves it the user's; a user cannot chown,
            // and needs not (the file is already theirs).
            let _ = std::os::unix::fs::fchown(&f, Some(id.uid), Some(id.gid));
        }
        f.write_all(bytes)?;
        f.sync_all()
    })();
    match done {
        Ok(()) => Ok(Some(f)),
        Err(e) => {
            let _ = fs::remove_file(target);
            Err(e)
        }
    }
}

/// A backup of the file as `snap` read it: an existing backup beside it holding the
/// same bytes and mode, else a new `<file>.transcope-<unix time>[-n].bak`. Whether it
/// is new (to be taken back if the replace does not happen), and its path.
pub fn backup(path: &Path, snap: &Snapshot) -> Result<(bool, PathBuf)> {
    let bytes = snap.bytes.as_deref().unwrap_or_default();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("settings");
    let prefix = format!("{name}.transcope-");
    if let Ok(entries) = fs::read_dir(folder(path)) {
        for e in entries.flatten() {
            let n = e.file_name();
            let Some(n) = n.to_str() else { continue };
            if !(n.starts_with(&prefix) && n.ends_with(".bak")) {
                continue;
            }
            let same = fs::symlink_metadata(e.path()).is_ok_and(|m| {
                m.is_file()
                    && m.len() == bytes.len() as u64
                    && m.permissions().mode() & 0o7777 == snap.mode()
            }) && fs::read(e.path()).is_ok_and(|b| b == bytes);
            if same {
                return Ok((false, e.path()));
            }
        }
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for n in 0u32.. {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let b = path.with_file_name(format!("{prefix}{secs}{suffix}.bak"));
        if create_like(&b, snap, bytes)
            .with_context(|| format!("writing the backup {}", b.display()))?
            .is_some()
        {
            return Ok((true, b));
        }
    }
    unreachable!("some backup name is free")
}

/// How [`replace`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Replaced {
    /// The file now holds the new bytes.
    Done,
    /// The file changed since `snap` was read: nothing was written.
    Changed,
}

/// Replace `path` with `bytes` if it is still as `snap` read it: temporary file beside
/// it (mode and owner of the original), synced, compared, swapped in, folder synced.
///
/// Where the file system can swap two names in one step ([`exchange`]), the file
/// replaced is kept aside and compared once more after the swap: when another program
/// renamed its own version in between the compare and the swap, its version is put
/// back (and the caller edits that one), so it is never lost. Elsewhere a plain rename
/// follows the compare.
pub fn replace(path: &Path, snap: &Snapshot, bytes: &[u8]) -> Result<Replaced> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("settings");
    let mut made = None;
    for n in 0u32..1000 {
        let t = path.with_file_name(format!(".{name}.transcope-{}-{n}.tmp", std::process::id()));
        if let Some(f) =
            create_like(&t, snap, bytes).with_context(|| format!("writing {}", t.display()))?
        {
            made = Some((t, f.metadata()?.ino()));
            break;
        }
    }
    let (tmp, ours) = made.context("no free name for a temporary file")?;
    let current = Snapshot::read(path).with_context(|| format!("reading {}", path.display()));
    if !matches!(&current, Ok(c) if c == snap) {
        let _ = fs::remove_file(&tmp);
        return current.map(|_| Replaced::Changed);
    }
    let swapped = if snap.bytes.is_some() {
        exchange(&tmp, path)
    } else {
        Err(io::ErrorKind::Unsupported.into())
    };
    let outcome = match swapped {
        Ok(()) => kept_aside(path, &tmp, snap, ours),
        Err(e) if e.kind() == io::ErrorKind::Unsupported => fs::rename(&tmp, path)
            .map(|()| Replaced::Done)
            .map_err(anyhow::Error::from),
        Err(e) => Err(e.into()),
    };
    match outcome {
        Ok(r) => {
            File::open(folder(path))
                .and_then(|d| d.sync_all())
                .with_context(|| format!("syncing the folder of {}", path.display()))?;
            Ok(r)
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e).with_context(|| format!("replacing {}", path.display()))
        }
    }
}

/// After the swap: `tmp` holds what `path` held. The version `snap` read: it goes, and
/// the replace is done. Another program's: swap it back and say the file changed
/// (when yet another version came in meanwhile, it is the newest: it stays, and the
/// one it replaced goes).
fn kept_aside(path: &Path, tmp: &Path, snap: &Snapshot, ours: u64) -> Result<Replaced> {
    let aside = Snapshot::read(tmp)?;
    if aside.same_version(snap) {
        fs::remove_file(tmp)?;
        return Ok(Replaced::Done);
    }
    let theirs = aside.id.map(|id| id.ino);
    exchange(tmp, path)?;
    let now_aside = fs::symlink_metadata(tmp)?.ino();
    if now_aside != ours {
        // A newer version replaced ours between the two swaps: `path` holds the older
        // one we put back. Bring the newer one back in its place.
        exchange(tmp, path)?;
        if Some(fs::symlink_metadata(tmp)?.ino()) != theirs {
            bail!(
                "another program kept replacing {} while transcope edited it; a version it wrote is kept at {}",
                path.display(),
                tmp.display()
            );
        }
    }
    fs::remove_file(tmp)?;
    Ok(Replaced::Changed)
}

/// How [`replace_edited`] words what it did: `<done> <what> in <file>`, and `no
/// transcope <things> in <file>` when there is nothing to remove.
pub(crate) struct Words {
    /// What the edit adds or removes (`SessionStart, Stop`).
    pub(crate) what: String,
    /// `wired`, `registered`, `removed`.
    pub(crate) done: &'static str,
    /// `hooks`, `MCP server`.
    pub(crate) things: &'static str,
}

/// Edit the user's file at `path` by `edit` (the text as read, "" when there is no
/// file, and the path; `None`: nothing to change); what was done, for a person, and
/// the text written (none on a dry run or when nothing changed).
///
/// The edit is worked out on the file as read. When it changes something, the file is
/// locked, read and edited again, backed up, and replaced only if it is still as read
/// (else read and edited once more), so a change another program made meanwhile is
/// kept (see the module docs).
pub(crate) fn replace_edited(
    path: &Path,
    install: bool,
    dry_run: bool,
    words: &Words,
    edit: &dyn Fn(&str, &Path) -> Result<Option<String>>,
) -> Result<(String, Option<String>)> {
    // Write through a symbolic link (a dotfiles manager's), not over it.
    let path = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut held = None;
    let mut tries = 0;
    let started = Instant::now();
    let (new_text, kept) = loop {
        let snap = Snapshot::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let text = match &snap.bytes {
            Some(b) => Some(std::str::from_utf8(b).with_context(|| {
                format!("{} is not UTF-8 text; left as it was", path.display())
            })?),
            None if install => None,
            None => {
                return Ok((
                    format!("{} does not exist; nothing to remove", path.display()),
                    None,
                ))
            }
        };
        let edited = edit(text.unwrap_or(""), &path)
            .with_context(|| format!("{} left as it was", path.display()))?;
        let Some(new_text) = edited else {
            return Ok((
                if install {
                    format!(
                        "already {} in {}; nothing to do",
                        words.done,
                        path.display()
                    )
                } else {
                    format!(
                        "no transcope {} in {}; nothing to remove",
                        words.things,
                        path.display()
                    )
                },
                None,
            ));
        };
        if dry_run {
            print!("{new_text}");
            return Ok((
                format!(
                    "{} {} in {} (dry run: the file as it would be written is on stdout; nothing written)",
                    words.done,
                    words.what,
                    path.display()
                ),
                None,
            ));
        }
        if let Some(why) = refusal(&path, &snap) {
            bail!(why);
        }
        if held.is_none() {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            held = Some(lock(&path)?);
            // Read again, now that no cooperating writer is between the read and the
            // replace.
            continue;
        }
        let copy = match snap.bytes {
            Some(_) => Some(backup(&path, &snap)?),
            None => None,
        };
        match replace(&path, &snap, new_text.as_bytes())? {
            Replaced::Done => break (new_text, copy),
            Replaced::Changed => {
                if let Some((true, b)) = copy {
                    let _ = fs::remove_file(b);
                }
                tries += 1;
                if started.elapsed() > RETRY_FOR {
                    bail!(
                        "{} kept changing while transcope edited it ({tries} tries in {} s); left as it was: run again",
                        path.display(),
                        RETRY_FOR.as_secs()
                    );
                }
                std::thread::sleep(Duration::from_millis(tries.min(20)));
            }
        }
    };
    drop(held);
    let mut msg = format!("{} {} in {}", words.done, words.what, path.display());
    match kept {
        Some((true, b)) => msg.push_str(&format!(" (backup: {})", b.display())),
        Some((false, b)) => msg.push_str(&format!(
            " (backup: {}, which already held the file as it was)",
            b.display()
        )),
        None => {}
    }
    if tries > 0 {
        msg.push_str(&format!(
            "; another program changed the file meanwhile, so it was read and edited again ({tries} times)"
        ));
    }
    Ok((msg, Some(new_text)))
}
