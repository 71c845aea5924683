//! JSONL framing shared by every transcope reader: the adapters' (through the engine)
//! and the caller identity's Go-semantics transcript scan (`transcope-caller`), which is
//! this framer under [`Oversized::Stop`] and [`FinalLine::Yield`], not a reader of its own.
//!
//! Framing (finding lines, their offsets and numbers) is kept separate from
//! decoding (parsing each line as JSON, which the adapters do). This crate
//! only splits bytes into lines:
//!
//! ```text
//!  file ──read_file(ReadPolicy::Read)──► Framer::frame_reader ─┐ (reused buffer,
//!       ──read_file(Mmap / Auto)─────► Framer::frame_slice  ──┤  bounded memory)
//!       ──read_from(offset, line)────► Framer::frame_reader ─┤
//!       ──read_regular (size at open)► Framer::frame_reader ─┤
//!  bytes ─────────────────────────────► Framer::frame_slice  ──┤
//!                                                              ▼
//!             LineSink::line(Line { bytes, offset, number, end })   → decoder
//!             LineSink::oversized(offset, number, len)               (skipped, or the end)
//!                                                              │
//!                                                              ▼
//!             Summary { lines, oversized, bytes_consumed, lines_consumed,
//!                       incomplete_tail, stopped }          → resume point
//! ```
//!
//! * [`Framer`] holds the policy: the line cap ([`DEFAULT_MAX_LINE`], 16 MiB;
//!   longer lines are skipped, counted and reported to
//!   [`LineSink::oversized`], never buffered whole — or, under
//!   [`Oversized::Stop`], end the framing there, as Go's `bufio.Scanner` does),
//!   the [`FinalLine`] policy for a last line without `\n` (default
//!   [`FinalLine::Hold`]: an agent may still be writing it), and the streaming
//!   buffer size.
//! * [`LineSink`] receives each [`Line`] (borrowed, no copy); returning
//!   `Ok(false)` stops cleanly. Blank lines are delivered too (the adapter
//!   decides); there is no skip option.
//! * Terminators are `\n` and `\r\n` (the `\r` is stripped); a lone `\r`
//!   elsewhere stays in the line. Line numbers are 1-based and count every
//!   line, blank and oversized ones included.
//! * [`Summary::bytes_consumed`] always stops at the end of the last complete
//!   line, so `start_offset + bytes_consumed` (with line
//!   `start_line + lines_consumed`) is where [`read_from`] resumes.
//! * [`read_file`] frames a whole file, streaming or memory-mapped per
//!   [`ReadPolicy`]; [`read_regular`] frames a regular file as far as its size
//!   when opened, never blocking on a FIFO; I/O errors become [`Error::Io`]
//!   with the path.
//! * Its equivalence tester (every way of framing the same bytes gives the same
//!   lines) is `transcope-testkit`'s `framing` module: test support stays out of the
//!   shipped library.
//!
//! # Example
//!
//! ```
//! use transcope_jsonl::{FinalLine, FnSink, Framer, Line};
//!
//! let data = b"{\"type\":\"user\"}\r\n\n{\"type\":\"assist";
//! let framer = Framer::builder().final_line(FinalLine::Hold).build();
//! let mut seen = Vec::new();
//! let summary = framer.frame_slice(data, 0, 1, FnSink(|line: Line<'_>| {
//!     seen.push((line.number, line.offset, line.bytes.to_vec()));
//!     Ok::<_, std::convert::Infallible>(true)
//! }))?;
//! assert_eq!(seen, vec![(1, 0, b"{\"type\":\"user\"}".to_vec()), (2, 17, Vec::new())]);
//! assert_eq!(summary.bytes_consumed, 18); // resume here once the writer finishes
//! assert_eq!(summary.lines_consumed, 2);
//! assert_eq!(summary.incomplete_tail, 15);
//! # Ok::<(), std::convert::Infallible>(())
//! ```
//!
//! Reading a file incrementally:
//!
//! ```no_run
//! use transcope_jsonl::{read_from, FnSink, Framer, Line};
//!
//! let (mut offset, mut line) = (0u64, 1u64);
//! let framer = Framer::default();
//! let s = read_from("session.jsonl", offset, line, &framer, FnSink(|l: Line<'_>| {
//!     println!("{}: {}", l.number, String::from_utf8_lossy(l.bytes));
//!     Ok::<_, std::io::Error>(true)
//! }))?;
//! offset += s.bytes_consumed;
//! line += s.lines_consumed;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod error;
mod file;
mod frame;
pub mod open;

pub use error::Error;
pub use file::{read_file, read_from, read_regular, with_whole_file, ReadPolicy, MMAP_THRESHOLD};
pub use frame::{
    FinalLine, FnSink, Framer, FramerBuilder, Line, LineSink, Oversized, Summary,
    DEFAULT_BUFFER_SIZE, DEFAULT_MAX_LINE,
};
pub use open::{
    in_private_dir, open_private, open_regular, read_private, sync_filesystem, write_atomic,
};
