//! File helpers: [`read_file`] (whole file, read or mmap), [`read_from`]
//! (incremental, from a byte offset) and [`read_regular`] (a regular file as of its
//! size when opened, never blocking).

use std::cell::Cell;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;

use memmap2::Mmap;

use crate::{Error, FinalLine, Framer, LineSink, Summary};

/// [`ReadPolicy::Auto`] maps files of at least this many bytes (4 MiB).
pub const MMAP_THRESHOLD: u64 = 4 * 1024 * 1024;

/// A thread's reused streaming buffer is kept between calls only up to this
/// capacity (or the framer's buffer size, if larger); one grown by a huge
/// line is dropped instead.
const KEEP_BUFFER: usize = 1024 * 1024;

/// How [`read_file`] gets the bytes.
///
/// Memory mapping is opt-in and must never be used for a file that may be
/// growing or be truncated while it is read (another process writing it,
/// e.g. a live agent transcript): a mapping of a file that shrinks faults.
/// A failed map silently falls back to reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPolicy {
    /// Stream the file through the framer's reusable buffer (bounded memory).
    Read,
    /// Memory-map the file; the caller asserts it is not growing.
    Mmap,
    /// Memory-map when `growing` is false and the file has at least
    /// [`MMAP_THRESHOLD`] bytes; otherwise read.
    Auto {
        /// Whether the file may still be written to (or truncated).
        growing: bool,
    },
}

/// Frames a whole file from offset 0, line 1, with the framer's
/// [`FinalLine`] policy.
///
/// I/O errors carry `path`. The streaming buffer is reused per thread.
pub fn read_file<P: AsRef<Path>, S: LineSink>(
    path: P,
    policy: ReadPolicy,
    framer: &Framer,
    sink: S,
) -> Result<Summary, Error<S::Error>> {
    frame_file(path.as_ref(), Start::Whole(policy), framer, sink)
}

/// Frames a file incrementally from byte `offset` (which must be a line
/// boundary, e.g. a previous `offset + bytes_consumed`), numbering lines from
/// `start_line`. Always streams (never maps) and always holds an incomplete
/// final line, whatever the framer's policy, so the returned
/// [`Summary::bytes_consumed`] is a safe resume point.
///
/// Returns [`Error::Truncated`] if `offset` is past the end of the file.
pub fn read_from<P: AsRef<Path>, S: LineSink>(
    path: P,
    offset: u64,
    start_line: u64,
    framer: &Framer,
    sink: S,
) -> Result<Summary, Error<S::Error>> {
    let from = Start::At { offset, start_line };
    frame_file(path.as_ref(), from, framer, sink)
}

/// Where [`frame_file`] starts: the whole file, or a line boundary.
enum Start {
    Whole(ReadPolicy),
    At { offset: u64, start_line: u64 },
}

/// [`read_file`] and [`read_from`]: open `path`, then frame it whole (mapped when the
/// policy says so) or stream it from a line boundary (holding an incomplete last line).
fn frame_file<S: LineSink>(
    path: &Path,
    start: Start,
    framer: &Framer,
    mut sink: S,
) -> Result<Summary, Error<S::Error>> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let (offset, start_line, framer) = match start {
        Start::Whole(policy) => {
            let want_map = match policy {
                ReadPolicy::Read => false,
                ReadPolicy::Mmap => true,
                ReadPolicy::Auto { growing: true } => false,
                ReadPolicy::Auto { growing: false } => {
                    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
                    len >= MMAP_THRESHOLD
                }
            };
            if want_map {
                if let Ok(map) = map_file(&file) {
                    return framer.frame_slice(&map, 0, 1, sink).map_err(Error::Sink);
                }
            }
            (0, 1, std::borrow::Cow::Borrowed(framer))
        }
        Start::At { offset, start_line } => {
            let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
            if offset > len {
                return Err(Error::Truncated {
                    path: path.to_path_buf(),
                    offset,
                    len,
                });
            }
            file.seek(SeekFrom::Start(offset))
                .map_err(|e| Error::io(path, e))?;
            let held = framer.with_final_line(FinalLine::Hold);
            (offset, start_line, std::borrow::Cow::Owned(held))
        }
    };
    with_buffer(framer.buffer_size(), |buf| {
        framer.frame_reader(&file, buf, offset, start_line, &mut sink)
    })
    .map_err(|e| e.with_path(path))
}

/// Frames the regular file at `path` from offset 0, line 1, only as far as its size
/// when opened, with the framer's policies: [`open_regular`](crate::open_regular), so a
/// FIFO or device in its place is an error (kind `InvalidInput`), never a hang, and a
/// file that grows meanwhile is not followed. Streams through the thread's reused
/// buffer (never maps).
///
/// I/O errors carry `path` and keep their kind.
pub fn read_regular<S: LineSink>(
    path: &Path,
    framer: &Framer,
    mut sink: S,
) -> Result<Summary, Error<S::Error>> {
    use std::io::Read;
    let (file, len) = crate::open_regular(path).map_err(|e| Error::io(path, e))?;
    let framer = &framer.clone().sized_for(len);
    with_buffer(framer.buffer_size(), |buf| {
        framer.frame_reader(file.take(len), buf, 0, 1, &mut sink)
    })
    .map_err(|e| e.with_path(path))
}

/// Runs `f` over the whole content of `path` as it is now: memory-mapped when `policy`
/// says so (a failed or refused map falls back), otherwise read into `buf` (reused:
/// cleared first, its capacity kept). At most `limit` bytes are read.
pub fn with_whole_file<T>(
    path: &Path,
    policy: ReadPolicy,
    buf: &mut Vec<u8>,
    limit: u64,
    f: impl FnOnce(&[u8]) -> T,
) -> std::io::Result<T> {
    use std::io::Read;
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let want_map = match policy {
        ReadPolicy::Read | ReadPolicy::Auto { growing: true } => false,
        ReadPolicy::Mmap => true,
        ReadPolicy::Auto { growing: false } => len >= MMAP_THRESHOLD,
    };
    if want_map && len <= limit {
        if let Ok(map) = map_file(&file) {
            return Ok(f(&map));
        }
    }
    buf.clear();
    (&file).take(len.min(limit)).read_to_end(buf)?;
    Ok(f(buf))
}

/// Maps `file` read-only. Empty files are not mapped (an error, so the
/// caller falls back to reading).
#[allow(unsafe_code)]
fn map_file(file: &File) -> std::io::Result<Mmap> {
    if file.metadata()?.len() == 0 {
        return Err(std::io::Error::other("empty file"));
    }
    // SAFETY: the map is only ever read through `&[u8]`. Undefined behaviour
    // (or SIGBUS) would follow if another process truncated or modified the
    // file while mapped; the mmap policy (`ReadPolicy` docs) forbids mapping
    // a file that may be growing or changing, and callers opt in explicitly.
    let map = unsafe { Mmap::map(file)? };
    #[cfg(unix)]
    {
        // Advice is a hint; failure is harmless.
        let _ = map.advise(memmap2::Advice::Sequential);
    }
    Ok(map)
}

thread_local! {
    static BUFFER: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with this thread's reusable buffer (re-entrancy safe: a nested
/// call gets a fresh buffer).
fn with_buffer<T>(buffer_size: usize, f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    let mut buf = BUFFER.with(Cell::take);
    let out = f(&mut buf);
    if buf.capacity() <= KEEP_BUFFER.max(buffer_size) {
        BUFFER.with(|b| b.set(buf));
    }
    out
}
