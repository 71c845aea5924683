//! Line splitting: [`Line`], [`LineSink`], [`Framer`], [`Summary`].

use std::io::{self, Read};

use memchr::memchr;

use crate::Error;

/// Default cap on the length of one line: 16 MiB. Longer lines are skipped.
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

/// Default size of the streaming buffer used by [`Framer::frame_reader`]: 256 KiB.
pub const DEFAULT_BUFFER_SIZE: usize = 256 * 1024;

/// One complete line, borrowed from the framer's buffer (never copied).
///
/// `bytes` excludes the terminator: `\n`, or `\r\n` whose `\r` is stripped.
/// A `\r` anywhere else (including the last byte of an unterminated final
/// line delivered under [`FinalLine::Yield`]) stays in the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// The line's content without its terminator.
    pub bytes: &'a [u8],
    /// Byte offset of the line's first byte in the file or stream.
    pub offset: u64,
    /// 1-based line number; every line counts, including blank and oversized ones.
    pub number: u64,
    /// Offset just past the line's terminator (for an unterminated final line:
    /// just past its last byte).
    pub end: u64,
}

/// Receives lines from a [`Framer`] (push model, like ripgrep's `Sink`).
///
/// Returning `Ok(false)` from either method stops framing cleanly; the line
/// just reported counts as consumed. Returning `Err` aborts with that error.
/// Blank lines (empty `bytes`) are delivered like any other line; the sink
/// decides what to do with them.
pub trait LineSink {
    /// The sink's own error type, passed through unchanged.
    type Error;

    /// Called for every line whose content is at most the framer's cap.
    fn line(&mut self, line: Line<'_>) -> Result<bool, Self::Error>;

    /// Called for a line longer than the cap, which is skipped. `len` is the
    /// length of its content (without terminator); under [`Oversized::Stop`] it is the
    /// cap plus one (framing stops before looking for the line's end). The default
    /// ignores it.
    fn oversized(&mut self, offset: u64, number: u64, len: u64) -> Result<bool, Self::Error> {
        let _ = (offset, number, len);
        Ok(true)
    }
}

impl<S: LineSink + ?Sized> LineSink for &mut S {
    type Error = S::Error;

    #[inline]
    fn line(&mut self, line: Line<'_>) -> Result<bool, Self::Error> {
        (**self).line(line)
    }

    #[inline]
    fn oversized(&mut self, offset: u64, number: u64, len: u64) -> Result<bool, Self::Error> {
        (**self).oversized(offset, number, len)
    }
}

/// Adapts a closure `FnMut(Line<'_>) -> Result<bool, E>` into a [`LineSink`]
/// that ignores oversized lines.
#[derive(Debug, Clone, Copy)]
pub struct FnSink<F>(pub F);

impl<F, E> LineSink for FnSink<F>
where
    F: FnMut(Line<'_>) -> Result<bool, E>,
{
    type Error = E;

    #[inline]
    fn line(&mut self, line: Line<'_>) -> Result<bool, E> {
        (self.0)(line)
    }
}

/// What to do with a final line that has no terminating `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FinalLine {
    /// Do not deliver it: an agent may still be writing it. (Default.)
    #[default]
    Hold,
    /// Deliver it verbatim (no `\r` stripping) as the last line. For readers of
    /// files known to be complete. It is still *not* counted in
    /// [`Summary::bytes_consumed`].
    Yield,
}

/// What to do with a line longer than the framer's cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Oversized {
    /// Skip it: stream past its bytes without holding them, report it to
    /// [`LineSink::oversized`] once its end is found, and go on with the next line.
    /// (Default.)
    #[default]
    Skip,
    /// Stop at it, as Go's `bufio.Scanner` stops at a token longer than its buffer:
    /// report it to [`LineSink::oversized`] as soon as it is certain to be longer than the
    /// cap (its end is found, or more than cap + 1 bytes of it are seen: a `\r` could
    /// still end it), with `len` = cap + 1, and frame nothing after it. The line is not
    /// consumed: [`Summary::bytes_consumed`] ends before it and [`Summary::stopped`] is
    /// set. Nothing past cap + 2 bytes of it is read.
    Stop,
}

/// The outcome of one framing call. Byte and line counts are relative to the
/// `start_offset` / `start_line` the call was given.
///
/// To resume later (tail reading), continue at
/// `start_offset + bytes_consumed` with line number `start_line + lines_consumed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    /// Lines handed to [`LineSink::line`] (including a final line delivered
    /// under [`FinalLine::Yield`]).
    pub lines: u64,
    /// Lines skipped because they exceeded the cap (reported to
    /// [`LineSink::oversized`]), including a yielded final one.
    pub oversized: u64,
    /// End of the last complete (`\n`-terminated) line handled, relative to
    /// the start: the resume offset. Never includes an unterminated tail.
    pub bytes_consumed: u64,
    /// Number of complete lines (delivered or oversized) within `bytes_consumed`.
    pub lines_consumed: u64,
    /// Length of a trailing line without `\n` (0 if none, or if framing
    /// stopped before the end).
    pub incomplete_tail: u64,
    /// The sink returned `Ok(false)`, or framing stopped at an over-long line under
    /// [`Oversized::Stop`].
    pub stopped: bool,
}

/// Splits bytes into lines and pushes them to a [`LineSink`].
///
/// Build with [`Framer::builder`] or use [`Framer::default`]
/// (cap [`DEFAULT_MAX_LINE`], [`FinalLine::Hold`], [`Oversized::Skip`], buffer
/// [`DEFAULT_BUFFER_SIZE`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framer {
    max_line: usize,
    final_line: FinalLine,
    oversized: Oversized,
    buffer_size: usize,
}

impl Default for Framer {
    fn default() -> Self {
        Framer {
            max_line: DEFAULT_MAX_LINE,
            final_line: FinalLine::Hold,
            oversized: Oversized::Skip,
            buffer_size: DEFAULT_BUFFER_SIZE,
        }
    }
}

/// Builder for [`Framer`].
#[derive(Debug, Clone, Default)]
pub struct FramerBuilder {
    framer: Framer,
}

impl FramerBuilder {
    /// Longest accepted line content in bytes; longer lines are skipped.
    pub fn max_line(mut self, max_line: usize) -> Self {
        self.framer.max_line = max_line;
        self
    }

    /// Policy for a final line without `\n`.
    pub fn final_line(mut self, final_line: FinalLine) -> Self {
        self.framer.final_line = final_line;
        self
    }

    /// Policy for a line longer than the cap.
    pub fn oversized(mut self, oversized: Oversized) -> Self {
        self.framer.oversized = oversized;
        self
    }

    /// Initial size of the streaming buffer (at least 1), and the most one read asks
    /// for. The buffer grows beyond it only to hold an accepted line, i.e. to at most
    /// `max_line + 2`.
    pub fn buffer_size(mut self, buffer_size: usize) -> Self {
        self.framer.buffer_size = buffer_size.max(1);
        self
    }

    /// Finishes the builder.
    pub fn build(self) -> Framer {
        self.framer
    }
}

/// Strips the `\r` of a `\r\n` terminator (`raw` excludes the `\n`).
#[inline]
fn strip_cr(raw: &[u8]) -> &[u8] {
    match raw {
        [rest @ .., b'\r'] => rest,
        _ => raw,
    }
}

/// Mutable framing position shared by the slice and streaming paths.
struct Cursor {
    /// Absolute offset of the next unframed byte.
    offset: u64,
    /// Number of the next line.
    number: u64,
    summary: Summary,
}

impl Cursor {
    fn new(offset: u64, number: u64) -> Self {
        Cursor {
            offset,
            number,
            summary: Summary::default(),
        }
    }

    /// Reports one complete line whose content (CR already stripped) has
    /// length `len` and whose raw size including terminator is `total`.
    /// Returns whether to continue.
    #[inline]
    fn complete<S: LineSink>(
        &mut self,
        framer: &Framer,
        content: Option<&[u8]>,
        len: u64,
        total: u64,
        sink: &mut S,
    ) -> Result<bool, S::Error> {
        let end = self.offset + total;
        let Some(go) = self.report(framer, content, len, end, sink)? else {
            return Ok(false);
        };
        self.offset = end;
        self.number += 1;
        self.summary.bytes_consumed += total;
        self.summary.lines_consumed += 1;
        if !go {
            self.summary.stopped = true;
        }
        Ok(go)
    }

    /// Hands the line at the cursor (ending at `end`) to the sink: delivered when within
    /// the cap, else skipped; `Some(whether to continue)`, or `None` when framing ends at
    /// it under [`Oversized::Stop`].
    #[inline]
    fn report<S: LineSink>(
        &mut self,
        framer: &Framer,
        content: Option<&[u8]>,
        len: u64,
        end: u64,
        sink: &mut S,
    ) -> Result<Option<bool>, S::Error> {
        let (offset, number) = (self.offset, self.number);
        match content {
            Some(bytes) if bytes.len() <= framer.max_line => {
                self.summary.lines += 1;
                sink.line(Line {
                    bytes,
                    offset,
                    number,
                    end,
                })
                .map(Some)
            }
            _ if framer.oversized == Oversized::Stop => {
                self.stop_at(framer, sink)?;
                Ok(None)
            }
            _ => {
                self.summary.oversized += 1;
                sink.oversized(offset, number, len).map(Some)
            }
        }
    }

    /// Under [`Oversized::Stop`]: reports the line at the cursor as over-long and ends
    /// framing without consuming it (the sink's answer cannot make it go on).
    #[cold]
    fn stop_at<S: LineSink>(&mut self, framer: &Framer, sink: &mut S) -> Result<(), S::Error> {
        self.summary.oversized += 1;
        self.summary.incomplete_tail = 0;
        self.summary.stopped = true;
        sink.oversized(self.offset, self.number, framer.past_cap())?;
        Ok(())
    }

    /// Frames every complete line in `buf`; returns the index just past the
    /// last one handled and whether to continue.
    #[inline]
    fn lines<S: LineSink>(
        &mut self,
        framer: &Framer,
        buf: &[u8],
        sink: &mut S,
    ) -> Result<(usize, bool), S::Error> {
        let mut pos = 0;
        while let Some(i) = memchr(b'\n', &buf[pos..]) {
            let content = strip_cr(&buf[pos..pos + i]);
            let go = self.complete(
                framer,
                Some(content),
                content.len() as u64,
                i as u64 + 1,
                sink,
            )?;
            pos += i + 1;
            if !go {
                return Ok((pos, false));
            }
        }
        Ok((pos, true))
    }

    /// Handles an unterminated tail of `len` bytes (`content` is `None` if it
    /// was discarded as oversized).
    fn tail<S: LineSink>(
        mut self,
        framer: &Framer,
        content: Option<&[u8]>,
        len: u64,
        sink: &mut S,
    ) -> Result<Summary, S::Error> {
        self.summary.incomplete_tail = len;
        // More than cap + 1 bytes: over the cap whatever ends it (as a stream sees it).
        if framer.oversized == Oversized::Stop && len > framer.past_cap() {
            self.stop_at(framer, sink)?;
            return Ok(self.summary);
        }
        if len == 0 || framer.final_line == FinalLine::Hold {
            return Ok(self.summary);
        }
        let end = self.offset + len;
        if let Some(go) = self.report(framer, content, len, end, sink)? {
            self.summary.stopped = !go;
        }
        Ok(self.summary)
    }
}

/// An over-long line being discarded by the streaming reader.
struct Discard {
    /// Raw bytes seen so far (no `\n` yet).
    len: u64,
    /// Whether the last byte seen was `\r`.
    last_cr: bool,
}

impl Framer {
    /// A builder starting from the defaults.
    pub fn builder() -> FramerBuilder {
        FramerBuilder::default()
    }

    /// The line-length cap.
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    /// The final-line policy.
    pub fn final_line(&self) -> FinalLine {
        self.final_line
    }

    /// The over-long-line policy.
    pub fn oversized(&self) -> Oversized {
        self.oversized
    }

    /// The shortest over-long line: the cap plus one.
    fn past_cap(&self) -> u64 {
        (self.max_line as u64).saturating_add(1)
    }

    /// The initial streaming buffer size.
    pub fn buffer_size(&self) -> usize {
        self.buffer_size
    }

    /// This framer for a stream known to hold at most `len` bytes: its buffer no
    /// larger than they need (a page at least). A Stop's read of one new turn, a few
    /// KiB, then zeroes and faults in a few pages, not [`DEFAULT_BUFFER_SIZE`].
    ///
    /// ```
    /// use transcope_jsonl::{Framer, DEFAULT_BUFFER_SIZE};
    /// assert_eq!(Framer::default().sized_for(5_000).buffer_size(), 8192);
    /// assert_eq!(Framer::default().sized_for(1 << 40).buffer_size(), DEFAULT_BUFFER_SIZE);
    /// ```
    pub fn sized_for(mut self, len: u64) -> Framer {
        const PAGE: u64 = 4096;
        // One byte past `len`: the first read takes every byte, the second sees the end.
        let need = len.saturating_add(1).div_ceil(PAGE).saturating_mul(PAGE);
        if need < self.buffer_size as u64 {
            self.buffer_size = need as usize;
        }
        self
    }

    /// A copy of this framer with a different final-line policy.
    pub fn with_final_line(&self, final_line: FinalLine) -> Framer {
        Framer {
            final_line,
            ..self.clone()
        }
    }

    /// Frames an in-memory buffer (a whole file, an mmap, or a chunk that
    /// starts at a line boundary). `start_offset` is the absolute offset of
    /// `buf[0]` and `start_line` the number of its first line.
    pub fn frame_slice<S: LineSink>(
        &self,
        buf: &[u8],
        start_offset: u64,
        start_line: u64,
        mut sink: S,
    ) -> Result<Summary, S::Error> {
        let mut cur = Cursor::new(start_offset, start_line);
        let (pos, go) = cur.lines(self, buf, &mut sink)?;
        if !go {
            return Ok(cur.summary);
        }
        let tail = &buf[pos..];
        cur.tail(self, Some(tail), tail.len() as u64, &mut sink)
    }

    /// Frames a stream with a reusable buffer (its contents on entry and exit
    /// are unspecified; reuse it per thread to avoid allocations).
    ///
    /// Memory stays bounded: the buffer is at most
    /// `max(buffer_size, max_line + 2)` bytes long (or its length on entry,
    /// if larger), and the bytes of an over-long line are discarded as they
    /// arrive (under [`Oversized::Stop`], reading ends there instead). Reads
    /// until EOF (`Ok(0)`); `Interrupted` reads are retried.
    /// Errors are [`Error::Io`] with `path: None`, or [`Error::Sink`].
    pub fn frame_reader<R: Read, S: LineSink>(
        &self,
        mut reader: R,
        buf: &mut Vec<u8>,
        start_offset: u64,
        start_line: u64,
        mut sink: S,
    ) -> Result<Summary, Error<S::Error>> {
        // A pending line of this many raw bytes without `\n` is certainly oversized.
        let hard_limit = self.max_line.saturating_add(2);
        // One read asks for at most `buffer_size` bytes, even after the buffer grew for a
        // long line: the bytes just copied are framed and probed while still in cache
        // (reading up to a grown buffer's end measured 10-15% slower at 2 threads).
        let read_size = self.buffer_size;
        if buf.len() < self.buffer_size {
            buf.reserve_exact(self.buffer_size - buf.len());
            buf.resize(self.buffer_size, 0);
        }
        let mut cur = Cursor::new(start_offset, start_line);
        let mut discard: Option<Discard> = None;
        // Valid, unframed data is buf[pos..end].
        let mut pos = 0usize;
        let mut end = 0usize;
        loop {
            let n = loop {
                let upto = buf.len().min(end + read_size);
                match reader.read(&mut buf[end..upto]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(source) => return Err(Error::Io { path: None, source }),
                }
            };
            if n == 0 {
                break;
            }
            end += n;

            if let Some(d) = &mut discard {
                match memchr(b'\n', &buf[pos..end]) {
                    Some(i) => {
                        let last_cr = if i > 0 {
                            buf[pos + i - 1] == b'\r'
                        } else {
                            d.last_cr
                        };
                        let raw = d.len + i as u64;
                        let len = raw - u64::from(last_cr);
                        discard = None;
                        pos += i + 1;
                        if !cur
                            .complete(self, None, len, raw + 1, &mut sink)
                            .map_err(Error::Sink)?
                        {
                            return Ok(cur.summary);
                        }
                    }
                    None => {
                        d.len += (end - pos) as u64;
                        d.last_cr = buf[end - 1] == b'\r';
                        pos = 0;
                        end = 0;
                        continue;
                    }
                }
            }

            let (used, go) = cur
                .lines(self, &buf[pos..end], &mut sink)
                .map_err(Error::Sink)?;
            if !go {
                return Ok(cur.summary);
            }
            pos += used;

            let pending = end - pos;
            if pending >= hard_limit && self.oversized == Oversized::Stop {
                cur.stop_at(self, &mut sink).map_err(Error::Sink)?;
                return Ok(cur.summary);
            }
            if pending >= hard_limit {
                discard = Some(Discard {
                    len: pending as u64,
                    last_cr: buf[end - 1] == b'\r',
                });
                pos = 0;
                end = 0;
                continue;
            }
            // Keep the partial line at the front of the buffer.
            if pos > 0 {
                buf.copy_within(pos..end, 0);
                end = pending;
                pos = 0;
            }
            if end == buf.len() {
                // A partial line (< hard_limit bytes) fills the buffer: grow,
                // but never past what an accepted line can need.
                let new_len = buf.len().saturating_mul(2).min(hard_limit);
                buf.reserve_exact(new_len - buf.len());
                buf.resize(new_len, 0);
            }
        }

        match discard {
            Some(d) => cur.tail(self, None, d.len, &mut sink),
            None => cur.tail(self, Some(&buf[pos..end]), (end - pos) as u64, &mut sink),
        }
        .map_err(Error::Sink)
    }
}
