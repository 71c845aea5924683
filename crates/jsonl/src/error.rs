//! The error type: I/O failures with path context, or the sink's own error.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Error from a framing call that reads (a stream or a file).
///
/// `E` is the [`LineSink`](crate::LineSink)'s error type, passed through
/// unchanged in [`Error::Sink`]. `Display` gives the context only
/// (`while reading <path>`); the underlying [`io::Error`] is the
/// [`source`](std::error::Error::source).
#[derive(Debug)]
pub enum Error<E> {
    /// Reading, opening, seeking or inspecting the input failed.
    Io {
        /// The file being read, or `None` for a bare stream
        /// ([`Framer::frame_reader`](crate::Framer::frame_reader)).
        path: Option<PathBuf>,
        /// The underlying I/O error.
        source: io::Error,
    },
    /// [`read_from`](crate::read_from) was asked to start past the end of the
    /// file: it was truncated or replaced since the offset was recorded.
    Truncated {
        /// The file being read.
        path: PathBuf,
        /// The requested start offset.
        offset: u64,
        /// The file's current length.
        len: u64,
    },
    /// The sink returned an error.
    Sink(E),
}

impl<E> Error<E> {
    /// Attaches `path` to an [`Error::Io`] that has none.
    pub(crate) fn with_path(self, path: &std::path::Path) -> Self {
        match self {
            Error::Io { path: None, source } => Error::Io {
                path: Some(path.to_path_buf()),
                source,
            },
            other => other,
        }
    }

    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(path: &std::path::Path, source: io::Error) -> Self {
        Error::Io {
            path: Some(path.to_path_buf()),
            source,
        }
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io {
                path: Some(path), ..
            } => write!(f, "while reading {}", path.display()),
            Error::Io { path: None, .. } => f.write_str("while reading input"),
            Error::Truncated { path, offset, len } => write!(
                f,
                "while reading {}: resume offset {offset} is past the end of the file ({len} bytes); \
                 it was truncated or replaced",
                path.display()
            ),
            Error::Sink(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Truncated { .. } => None,
            // Transparent: the sink error's own Display is ours.
            Error::Sink(e) => e.source(),
        }
    }
}
