//! Advisory `flock` locks with a bounded wait: the scope log's sidecar, the session
//! index's sidecar and the outbox folder all lock through here.

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
#[derive(Debug)]
pub enum NotLocked {
    /// Another process held it for longer than the bound.
    TimedOut(Duration),
    /// Locking is not possible here (best effort: the caller goes on without it).
    Unavailable,
}

/// Take the exclusive lock on `file`, waiting as `wait` says (polling with a backoff
/// up to 50 ms when bounded).
pub fn lock(file: File, wait: LockWait) -> Result<Locked, NotLocked> {
    match wait {
        LockWait::Forever => match file.lock() {
            Ok(()) => Ok(Locked(file)),
            Err(_) => Err(NotLocked::Unavailable),
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
                    Err(TryLockError::Error(_)) => return Err(NotLocked::Unavailable),
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

/// Open (creating it 0600) the lock sidecar of `path`: never through a symbolic link,
/// never blocking on a FIFO planted in its place.
pub fn open_sidecar(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(sidecar_path(path))
}
