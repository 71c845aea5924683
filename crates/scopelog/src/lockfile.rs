//! Advisory `flock` locks with a bounded wait: the scope log's sidecar, the session
//! index's sidecar and the outbox folder all lock through here.
//!
//! A lock that cannot be taken is an error, never a silent "no lock": a symbolic link,
//! a folder, a FIFO or a device planted at `<log>.lock`, or a file system that refuses
//! `flock`, would otherwise let concurrent writers interleave (duplicate `sequence`
//! values, a transition recorded twice). The caller says so and writes nothing.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::LockWait;

/// A held lock, released on drop.
#[derive(Debug)]
pub struct Locked(File);

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Why [`lock`] holds no lock.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotLocked {
    /// Another process held it for longer than the bound.
    #[error("locked by another process (gave up after {0:?})")]
    TimedOut(Duration),
    /// `flock` itself failed (a file system without locks, for one): no lock can be
    /// taken here, and the caller must not write as if it held one.
    #[error("the lock cannot be taken: {0}")]
    Unavailable(#[source] io::Error),
}

/// Take the exclusive lock on `file`, waiting as `wait` says (polling with a backoff
/// up to 50 ms when bounded). A signal interrupting the wait is not a failure.
pub fn lock(file: File, wait: LockWait) -> Result<Locked, NotLocked> {
    match wait {
        LockWait::Forever => loop {
            match file.lock() {
                Ok(()) => return Ok(Locked(file)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(NotLocked::Unavailable(e)),
            }
        },
        LockWait::AtMost(limit) => {
            let start = Instant::now();
            let mut pause = Duration::from_millis(1);
            loop {
                match file.try_lock() {
                    Ok(()) => return Ok(Locked(file)),
                    Err(TryLockError::WouldBlock) if start.elapsed() < limit => {
                        std::thread::sleep(pause);
                        pause = (pause * 2).min(Duration::from_millis(50));
                    }
                    Err(TryLockError::WouldBlock) => return Err(NotLocked::TimedOut(limit)),
                    Err(TryLockError::Error(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(TryLockError::Error(e)) => return Err(NotLocked::Unavailable(e)),
                }
            }
        }
    }
}

/// `<path>.lock`.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

/// Open (creating it 0600) the lock sidecar of `path`: never through a symbolic link
/// (`ELOOP`), never blocking on a FIFO planted in its place, and only a regular file —
/// a folder, FIFO or device there is an error (`InvalidInput`), not a lock.
pub fn open_sidecar(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(sidecar_path(path))?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the lock file is not a regular file",
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_is_a_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        assert!(open_sidecar(&log).unwrap().metadata().unwrap().is_file());

        let linked = dir.path().join("l.jsonl");
        std::os::unix::fs::symlink(sidecar_path(&log), sidecar_path(&linked)).unwrap();
        let e = open_sidecar(&linked).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}");

        let folder = dir.path().join("d.jsonl");
        std::fs::create_dir(sidecar_path(&folder)).unwrap();
        assert!(open_sidecar(&folder).is_err());
    }
}
