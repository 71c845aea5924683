//! Opening and writing transcope's files safely: the one place that knows how.
//!
//! * [`open_regular`]: a transcript, for reading, only if it is a regular file (a FIFO
//!   or device planted in its place is an error, never a hang: `O_NONBLOCK`).
//! * [`read_private`]: one of transcope's own files (a scope log, a cursor, the session
//!   index), never through a symbolic link (`O_NOFOLLOW`), as of its size when opened.
//! * [`write_atomic`]: replace one of transcope's own files whole — temporary file,
//!   optional `fsync`, rename — private to the user (`0600`), so a crash leaves the old
//!   content or the new, never half.
//! * [`exchange`]: swap two files atomically, so a replaced file is kept aside rather
//!   than gone (what `hook install` checks before it lets a user's file go).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Open `path` for reading only if it is a regular file; its size as opened.
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_a_file(path));
    }
    Ok((file, meta.len()))
}

fn not_a_file(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} is not a regular file", path.display()),
    )
}

/// Read one of transcope's own files whole, never through a symbolic link and never
/// blocking.
pub fn read_private(path: &Path) -> io::Result<Vec<u8>> {
    let (f, len) = open_private(path)?;
    let mut buf = Vec::with_capacity(len as usize);
    f.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Open one of transcope's own files for reading as [`read_private`] does (never
/// through a symbolic link, never blocking, only a regular file), for a reader that
/// streams it; its size as opened.
pub fn open_private(path: &Path) -> io::Result<(File, u64)> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(not_a_file(path));
    }
    Ok((f, meta.len()))
}

/// Replace `path` with `bytes` atomically (temporary file `.<name>.<pid>.tmp` in the
/// same folder, then rename), creating the folder (`0700`) only when it is missing.
/// `durable`: `fsync` the file before the rename (a batch that syncs once at its end
/// passes `false`). A failed write leaves no temporary file behind.
pub fn write_atomic(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    // The process id, asked of the kernel once (a backfill writes a file per
    // transcript).
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        PID.get_or_init(std::process::id)
    ));
    let create = || {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&tmp)
    };
    let file = in_private_dir(dir, create);
    let written = file.and_then(|mut f| {
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        Ok(())
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, path)
}

/// Swap the files at `a` and `b` in one step (`renameat2(RENAME_EXCHANGE)`): each name
/// then holds what the other held, nothing is unlinked. Both must exist. Linux only; an
/// `Unsupported` error elsewhere and on a file system without it.
pub fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            std::ffi::CString::new(p.as_os_str().as_bytes())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
        };
        if renameat2_exchange(&c(a)?, &c(b)?) == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINVAL | libc::ENOSYS) => Err(io::ErrorKind::Unsupported.into()),
            _ => Err(e),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (a, b);
        Err(io::ErrorKind::Unsupported.into())
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn renameat2_exchange(a: &std::ffi::CStr, b: &std::ffi::CStr) -> i32 {
    // SAFETY: both are NUL-terminated paths that outlive the call; no memory is shared.
    unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    }
}

/// `create()` a file in `dir`; when `dir` is missing, make it (and its parents,
/// `0700`: created only when missing, never re-moded) and try once more.
pub fn in_private_dir<T>(dir: &Path, create: impl Fn() -> io::Result<T>) -> io::Result<T> {
    match create() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            create()
        }
        opened => opened,
    }
}

/// Flush everything written to the file system holding `dir` (`syncfs`): one call for
/// a batch of [`write_atomic`] calls made with `durable: false`.
pub fn sync_filesystem(dir: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let d = File::open(dir)?;
    if sync_fd(d.as_raw_fd()) == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[allow(unsafe_code)]
fn sync_fd(fd: std::os::fd::RawFd) -> i32 {
    // SAFETY: `fd` is an open descriptor owned by the caller for this call.
    unsafe { libc::syncfs(fd) }
}
