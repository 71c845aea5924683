//! Reading one transcript into entries: framing, format detection, decoding.
//!
//! The reference's loader (scope-log.md §3.2) reads the whole file; a text starting
//! with `[` is one JSON array of records, anything else is JSON Lines. [`Source`]
//! does the same from a byte offset on, so an incremental read takes only new bytes:
//! [`Source::detect`] opens the file's head and picks the adapter, [`Source::read`]
//! decodes.
//! An adapter whose format is one JSON document per file ([`Framing::Document`]) gets
//! the whole file as one record, and so does the array form (its records one by one).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::value::RawValue;
use serde_json::Value;
use transcope_core::adapter::{Adapter, AdapterFactory, AdapterRegistry, EntrySink, Framing, Skip};
use transcope_core::LinePos;
use transcope_jsonl::{with_whole_file, FinalLine, Framer, Line, LineSink, ReadPolicy};

/// Where to resume reading: a byte offset at a line start and its 1-based line number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resume {
    /// Byte offset of the next unread line.
    pub offset: u64,
    /// Its 1-based line number.
    pub line: u64,
}

impl Resume {
    /// The start of a file.
    pub const START: Resume = Resume { offset: 0, line: 1 };
}

/// What a scan read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// The adapter that decoded the file.
    pub adapter: &'static str,
    /// Bytes read from the file.
    pub bytes: u64,
    /// Lines (records) seen.
    pub lines: u64,
    /// Entries decoded.
    pub entries: u64,
    /// Lines skipped, by reason.
    pub skipped: Vec<(Skip, u64)>,
    /// Lines over the cap, skipped unread.
    pub oversized: u64,
    /// Where the next incremental read starts (after the last complete line).
    pub resume: Resume,
    /// The file is one JSON array or one document: it can only be read whole.
    pub array: bool,
    /// A last line without a newline was complete JSON and decoded: it ends here (the
    /// resume point moves past it, so it is observed once).
    pub tail_end: Option<u64>,
    /// The adapter's [`Adapter::checkpoint`] at `resume`: what a read resumed there
    /// restores (`Null` for a file read whole).
    pub checkpoint: Value,
    /// The read stopped at its time limit ([`Source::until`]), after a whole line and
    /// before the end of the file: `resume` is where it stopped, and a read from there
    /// goes on as if this one had reached the end.
    pub cut: bool,
    /// The first and last record times of the bytes read, found as they were framed
    /// ([`transcope_core::times`]); of a container's records, its first and last
    /// entries' times.
    pub times: transcope_core::times::Times,
    /// The family root of the session read, when its container records it (a
    /// sub-agent session's top parent: `transcope_core::records::RecordRead::parent`).
    pub parent: Option<String>,
}

impl ScanReport {
    pub(crate) fn skip(&mut self, s: Skip) {
        match self.skipped.iter_mut().find(|(k, _)| *k == s) {
            Some((_, n)) => *n += 1,
            None => self.skipped.push((s, 1)),
        }
    }

    /// Total skipped lines.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.iter().map(|(_, n)| n).sum()
    }
}

/// How the last line is treated when it has no newline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// Decode it (a whole-file read, as the reference does).
    Decode,
    /// Decode it only when it is a complete JSON value (an agent may still be writing
    /// an incomplete one, which is left for the next read, and so is a number, which
    /// may still grow); a decoded one is consumed, and the next read takes the rest of
    /// its line up to the newline as the end of it, not as a line of its own.
    DecodeIfComplete,
    /// Leave it for the next read.
    Hold,
}

/// Counts the entries passed on, and forwards [`EntrySink::wants`] so an adapter can
/// skip decoding lines no stage wants.
struct Counting<'s, 't> {
    sink: &'s mut (dyn EntrySink + 't),
    n: u64,
}

impl EntrySink for Counting<'_, '_> {
    fn entry(&mut self, e: &transcope_core::Entry<'_>) {
        self.n += 1;
        self.sink.entry(e);
    }

    fn wants(&self, p: &transcope_core::adapter::Probe<'_>) -> bool {
        self.sink.wants(p)
    }
}

impl Tail {
    /// The framer with the matching final-line policy.
    fn framer(self, framer: &Framer) -> Framer {
        framer.with_final_line(match self {
            Tail::Hold => FinalLine::Hold,
            _ => FinalLine::Yield,
        })
    }
}

/// Decodes each framed line with the adapter into the sink; an unterminated last line
/// that is not yet complete JSON is held back when the tail policy says so.
struct Decoder<'x, 't> {
    adapter: &'x mut dyn Adapter,
    sink: &'x mut (dyn EntrySink + 't),
    report: &'x mut ScanReport,
    tail: Tail,
    /// The read resumes at this offset inside a line whose start a read before decoded
    /// (a complete value, then without its newline): the whitespace from here to the
    /// newline ends that line, it is no line of its own.
    rest_of_line: Option<u64>,
    /// That rest was read: the framer counted it as a line, so the lines after it are
    /// numbered one less than the framer says.
    joined: bool,
    /// Stop after the first line decoded at or past this instant.
    until: Option<std::time::Instant>,
    /// Looks for the read's first and last times in the lines decoded.
    times: transcope_core::times::Finder,
}

impl Decoder<'_, '_> {
    fn new<'x, 't>(
        adapter: &'x mut dyn Adapter,
        sink: &'x mut (dyn EntrySink + 't),
        report: &'x mut ScanReport,
        tail: Tail,
        (start, end): (u64, u64),
    ) -> Decoder<'x, 't> {
        Decoder {
            adapter,
            sink,
            report,
            tail,
            rest_of_line: None,
            joined: false,
            until: None,
            times: transcope_core::times::Finder::new(start, end),
        }
    }

    /// The times found, into the report.
    fn finish_times(&mut self) {
        self.report.times = std::mem::take(&mut self.times).finish();
    }
}

/// Whether an unterminated last line is a value that is complete for good: valid JSON,
/// and not a number (`12` may be the start of `1234`; every other JSON value ends with
/// a byte that nothing valid can follow but whitespace).
fn complete(tail: &[u8]) -> bool {
    !tail.last().is_some_and(u8::is_ascii_digit)
        && serde_json::from_slice::<&RawValue>(tail).is_ok()
}

impl LineSink for Decoder<'_, '_> {
    type Error = std::convert::Infallible;

    fn line(&mut self, line: Line<'_>) -> Result<bool, Self::Error> {
        let unterminated = line.end == line.offset + line.bytes.len() as u64;
        if self.rest_of_line.take() == Some(line.offset) && line.bytes.trim_ascii().is_empty() {
            // The end of a line already decoded (an unterminated rest waits for its
            // newline). Anything else after a decoded value is a line of its own.
            self.joined = !unterminated;
            return Ok(true);
        }
        if unterminated && self.tail == Tail::DecodeIfComplete && !complete(line.bytes) {
            return Ok(true);
        }
        // The times are those of the bytes the read covers (its resume point): a last
        // line without a newline only when it is taken as whole (`tail_end`).
        if !(unterminated && self.tail == Tail::Decode) {
            self.times.see(line.bytes, line.offset);
        }
        decode_one(
            line.bytes,
            line.offset,
            line.number - u64::from(self.joined),
            self.adapter,
            self.sink,
            self.report,
        );
        if unterminated && self.tail == Tail::DecodeIfComplete {
            self.report.tail_end = Some(line.end);
        }
        // Out of time: stop here, this line consumed (the framer's contract), so the
        // resume point is the end of a line every stage has seen whole.
        if self.until.is_some_and(|t| std::time::Instant::now() >= t) {
            self.report.cut = true;
            self.times.see_last(line.bytes);
            return Ok(false);
        }
        Ok(true)
    }
}

/// The first non-empty line of `buf` (for format detection).
pub fn first_line(buf: &[u8]) -> &[u8] {
    for line in buf.split(|b| *b == b'\n') {
        let t = trim(line);
        if !t.is_empty() {
            return t;
        }
    }
    b""
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// The read buffer, kept per thread so large files do not fault in a fresh `Vec`.
#[derive(Default)]
pub struct Buffers {
    data: Vec<u8>,
}

/// Decode `buf` (the bytes of a file from `from` on) with `adapter`, pushing entries
/// to `sink`.
pub fn scan_slice(
    buf: &[u8],
    from: Resume,
    adapter: &mut dyn Adapter,
    framer: &Framer,
    tail: Tail,
    sink: &mut dyn EntrySink,
    report: &mut ScanReport,
) {
    let end = from.offset + buf.len() as u64;
    let mut decoder = Decoder::new(adapter, sink, report, tail, (from.offset, end));
    scan_slice_with(buf, from, framer, &mut decoder);
    decoder.finish_times();
}

/// [`scan_slice`] through a prepared decoder (which may carry a time limit).
fn scan_slice_with(buf: &[u8], from: Resume, framer: &Framer, d: &mut Decoder<'_, '_>) {
    d.report.bytes += buf.len() as u64;
    if from.offset == 0 && trim(buf).first() == Some(&b'[') {
        d.report.array = true;
        d.times.see(buf, 0);
        d.times.widen_in(buf, 0);
        scan_array(buf, &mut *d.adapter, &mut *d.sink, &mut *d.report);
        d.report.resume = from;
        return;
    }
    let tail = d.tail;
    let Ok(summary) = tail
        .framer(framer)
        .frame_slice(buf, from.offset, from.line, &mut *d);
    d.report.oversized += summary.oversized;
    d.report.resume = resume_after(
        from,
        summary.bytes_consumed,
        summary.lines_consumed,
        d.report,
    );
    // A read cut short keeps the time of the last line it read, if any.
    if !d.report.cut {
        d.times.widen_in(buf, from.offset);
    }
}

/// Where the next read starts: after the last complete line, or after a complete last
/// line without a newline that was decoded.
fn resume_after(from: Resume, bytes: u64, lines: u64, report: &ScanReport) -> Resume {
    match report.tail_end {
        Some(end) => Resume {
            offset: end,
            line: from.line + lines + 1,
        },
        None => Resume {
            offset: from.offset + bytes,
            line: from.line + lines,
        },
    }
}

pub(crate) fn decode_one(
    bytes: &[u8],
    offset: u64,
    number: u64,
    adapter: &mut dyn Adapter,
    sink: &mut dyn EntrySink,
    report: &mut ScanReport,
) {
    report.lines += 1;
    let mut counting = Counting { sink, n: 0 };
    if let Err(s) = adapter.decode(
        bytes,
        LinePos {
            offset,
            line: number,
        },
        &mut counting,
    ) {
        report.skip(s);
    }
    report.entries += counting.n;
}

fn scan_array(
    buf: &[u8],
    adapter: &mut dyn Adapter,
    sink: &mut dyn EntrySink,
    report: &mut ScanReport,
) {
    let Ok(items) = serde_json::from_slice::<Vec<&RawValue>>(buf) else {
        report.skip(Skip::InvalidJson);
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let text = item.get();
        let offset = text.as_ptr() as usize - buf.as_ptr() as usize;
        decode_one(
            text.as_bytes(),
            offset as u64,
            i as u64 + 1,
            adapter,
            sink,
            report,
        );
    }
}

/// Errors reading a transcript.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The file could not be opened or read.
    #[error("while reading {path}: {source}")]
    Io {
        /// The transcript.
        path: String,
        /// The cause.
        source: io::Error,
    },
    /// Not a regular file (a directory, FIFO, device…).
    #[error("{0} is not a regular file")]
    NotAFile(String),
    /// A container of records could not be read (locked past the wait, damaged, not
    /// the format), or was asked for no session.
    #[error("while reading {path}: {reason}")]
    Records {
        /// The container.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Open `path` for reading only if it is a regular file (never blocks on a FIFO), with
/// its size as opened.
pub fn open_regular(path: &Path) -> Result<(File, u64), ScanError> {
    transcope_jsonl::open_regular(path).map_err(|source| {
        if source.kind() == io::ErrorKind::InvalidInput {
            ScanError::NotAFile(path.display().to_string())
        } else {
            ScanError::Io {
                path: path.display().to_string(),
                source,
            }
        }
    })
}

/// A transcript opened and its format detected: everything a read must know before
/// it reads (the adapter, and whether the file can only be read whole), from one open
/// and one read of the head.
pub struct Source<'a> {
    path: &'a Path,
    file: File,
    size: u64,
    head: Vec<u8>,
    factory: &'a dyn AdapterFactory,
    document: bool,
    array: bool,
    /// An adapter made ready to read on from a point, its state restored
    /// ([`Source::resume_adapter`]).
    primed: Option<(Resume, Box<dyn Adapter>)>,
    /// The line read stops after the first line decoded at or past this instant.
    until: Option<std::time::Instant>,
}

impl<'a> Source<'a> {
    /// Detect the format of `file` (opened from `path`, `size` bytes): the adapter
    /// named `adapter` when the registry has it, else the one `registry` picks from
    /// the first non-empty line. `None` when no adapter claims the file.
    pub fn detect(
        path: &'a Path,
        (file, size): (File, u64),
        registry: &'a AdapterRegistry,
        adapter: Option<&str>,
        framer: &Framer,
    ) -> Result<Option<Source<'a>>, ScanError> {
        Source::detect_from(path, (file, size, Vec::new()), registry, adapter, framer)
    }

    /// [`Source::detect`] of a file whose first bytes, `known`, are read already (the
    /// head is read on from them, never again).
    pub fn detect_from(
        path: &'a Path,
        (file, size, known): (File, u64, Vec<u8>),
        registry: &'a AdapterRegistry,
        adapter: Option<&str>,
        framer: &Framer,
    ) -> Result<Option<Source<'a>>, ScanError> {
        // The first non-empty line decides the format (and the JSON-array form).
        let head = read_head(&file, size, framer.max_line(), known).map_err(io_error(path))?;
        let factory = match adapter.and_then(|n| registry.by_name(n)) {
            Some(f) => Some(f),
            None => registry.detect(path, first_line(&head)),
        };
        Ok(factory.map(|factory| Source {
            path,
            document: factory.framing(path) == Framing::Document,
            array: trim(&head).first() == Some(&b'['),
            file,
            size,
            head,
            factory,
            primed: None,
            until: None,
        }))
    }

    /// The bytes of the file's start read to sniff it (at least its first 8 KiB, or the
    /// whole of a smaller file, unless it could not be read).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Make the adapter ready to read on from `from` in the state `checkpoint` (an
    /// earlier read's [`Adapter::checkpoint`] there): built, opened, shown the file's
    /// first record again when `from` is past it, then restored. `false` when the
    /// adapter cannot read `checkpoint`: the file must be read from its start. A
    /// [`Source::read`] from `from` goes on with this adapter.
    pub fn resume_adapter(&mut self, from: Resume, checkpoint: &Value) -> bool {
        let mut adapter = self.start_adapter(from);
        let restored = adapter.restore(checkpoint);
        self.primed = restored.then_some((from, adapter));
        restored
    }

    /// A fresh adapter for a read from `from`: opened, and, when a line read resumes
    /// past the first record, shown it (a legacy Codex header decides how the rest is
    /// read).
    fn start_adapter(&self, from: Resume) -> Box<dyn Adapter> {
        let mut adapter = self.factory.build();
        adapter.open(self.path);
        if !self.document && from.offset > 0 {
            let _ = adapter.decode(
                first_line(&self.head),
                LinePos { offset: 0, line: 1 },
                &mut transcope_core::adapter::from_fn(|_: &transcope_core::Entry<'_>| {}),
            );
        }
        adapter
    }

    /// Stop a line read (JSON Lines, streamed or mapped) after the first line decoded
    /// at or past `until`, with [`ScanReport::cut`] set and `resume` just after that
    /// line. A file read whole (one document, the JSON-array form) is one record and
    /// is never cut. `None`: read to the end.
    pub fn until(mut self, until: Option<std::time::Instant>) -> Self {
        self.until = until;
        self
    }

    /// The factory, when its format is a container of records at this path
    /// ([`Framing::Records`]): the file is read through its record source, not framed.
    pub fn records(&self) -> Option<&'a dyn AdapterFactory> {
        (self.factory.framing(self.path) == Framing::Records).then_some(self.factory)
    }

    /// The adapter's name.
    pub fn adapter(&self) -> &'static str {
        self.factory.name()
    }

    /// How the adapter's agent carries token usage, as its factory declares it.
    pub fn usage(&self) -> transcope_core::agent::UsageShape {
        self.factory.agent().usage
    }

    /// The file's modification time (nanoseconds since the epoch).
    pub fn modified_ns(&self) -> i128 {
        crate::mtime_ns(&self.file)
    }

    /// The file can only be read whole: one document, or the JSON-array form.
    pub fn whole(&self) -> bool {
        self.document || self.array
    }

    /// Read the file from `from.offset` to its end (as it is now) and decode it into
    /// `sink`. `policy` applies to whole-file reads (`from` at the start); an
    /// incremental read always reads.
    ///
    /// Lines are streamed through the reusable buffer in `buffers` (memory stays
    /// bounded by the buffer and the longest line) unless `policy` maps the file. A
    /// file read whole (one document, or the reference's JSON-array form) is held to
    /// the framer's line cap like any one record: a larger one is skipped and counted
    /// as oversized, so a hostile file cannot take memory without bound.
    pub fn read(
        mut self,
        from: Resume,
        framer: &Framer,
        tail: Tail,
        policy: ReadPolicy,
        buffers: &mut Buffers,
        sink: &mut dyn EntrySink,
    ) -> Result<ScanReport, ScanError> {
        let mut adapter = match self.primed.take() {
            Some((at, adapter)) if at == from => adapter,
            _ => self.start_adapter(from),
        };
        let Source {
            path,
            mut file,
            size,
            head,
            factory,
            document,
            array,
            until,
            ..
        } = self;
        let io = io_error(path);
        let mut report = ScanReport {
            adapter: factory.name(),
            resume: from,
            ..ScanReport::default()
        };
        let array = !document && from.offset == 0 && array;
        if document || array {
            report.array = true;
            if size > framer.max_line() as u64 {
                report.oversized += 1;
                return Ok(report);
            }
        }
        // The bytes this read is to cover (where its times are looked for).
        let read = (from.offset, size);
        let mapped = match policy {
            ReadPolicy::Read | ReadPolicy::Auto { growing: true } => false,
            ReadPolicy::Mmap => true,
            ReadPolicy::Auto { growing: false } => size >= transcope_jsonl::MMAP_THRESHOLD,
        };
        let data = &mut buffers.data;
        if document || array || (from.offset == 0 && mapped) {
            let policy = if document || array {
                ReadPolicy::Read
            } else {
                policy
            };
            drop(file);
            with_whole_file(path, policy, data, size, |bytes| {
                if document {
                    report.bytes += bytes.len() as u64;
                    report.times = transcope_core::times::of(bytes);
                    decode_one(bytes, 0, 1, adapter.as_mut(), sink, &mut report);
                } else {
                    let mut decoder = Decoder::new(adapter.as_mut(), sink, &mut report, tail, read);
                    decoder.until = until;
                    scan_slice_with(bytes, from, framer, &mut decoder);
                    decoder.finish_times();
                }
            })
            .map_err(&io)?;
        } else {
            let inside_line = from.offset > 0 && {
                use std::os::unix::fs::FileExt;
                let mut before = [0u8];
                file.read_exact_at(&mut before, from.offset - 1).is_ok() && before[0] != b'\n'
            };
            // A read from the start goes on from the head in hand (the same bytes,
            // not read again).
            let known = if from.offset == 0 {
                &head[..head.len().min(size as usize)]
            } else {
                &[][..]
            };
            file.seek(SeekFrom::Start(from.offset + known.len() as u64))
                .map_err(&io)?;
            let len = size.saturating_sub(from.offset);
            report.bytes += len;
            let mut decoder = Decoder::new(adapter.as_mut(), sink, &mut report, tail, read);
            decoder.rest_of_line = inside_line.then_some(from.offset);
            decoder.until = until;
            let summary = tail
                .framer(framer)
                .sized_for(len)
                .frame_reader(
                    known.chain((&mut file).take(len - known.len() as u64)),
                    data,
                    from.offset,
                    from.line,
                    &mut decoder,
                )
                .map_err(|e| match e {
                    transcope_jsonl::Error::Io { source, .. } => io(source),
                    other => io(std::io::Error::other(other.to_string())),
                })?;
            let joined = u64::from(decoder.joined);
            // The rare read again: no line of the read's last bytes named a time (a
            // read cut short keeps the time of the last line it read, if any).
            if let (Some(r), false) = (decoder.times.wider(), decoder.report.cut) {
                use std::os::unix::fs::FileExt;
                let mut again = vec![0u8; usize::try_from(r.end - r.start).unwrap_or(0)];
                if file.read_exact_at(&mut again, r.start).is_ok() {
                    decoder.times.see_wider(&again);
                }
            }
            decoder.finish_times();
            report.oversized += summary.oversized;
            report.resume = resume_after(
                from,
                summary.bytes_consumed,
                summary.lines_consumed - joined,
                &report,
            );
        }
        // Stopped at the limit on the very last line: nothing was left, no cut.
        if report.cut && report.resume.offset >= size {
            report.cut = false;
        }
        if data.capacity() > 64 * 1024 * 1024 {
            *data = Vec::new();
        }
        if !(document || array) {
            report.checkpoint = adapter.checkpoint();
        }
        Ok(report)
    }
}

fn io_error(path: &Path) -> impl Fn(io::Error) -> ScanError + '_ {
    move |source| ScanError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The whole file at `path`, decoded by the adapter `registry` detects, as the
/// reference reads it (the last line decoded whether or not it ends with a newline).
/// An empty report when no adapter claims the file.
pub fn scan_path(
    path: &Path,
    registry: &AdapterRegistry,
    buffers: &mut Buffers,
    sink: &mut dyn EntrySink,
) -> Result<ScanReport, ScanError> {
    let framer = Framer::default();
    match Source::detect(path, open_regular(path)?, registry, None, &framer)? {
        Some(source) => source.read(
            Resume::START,
            &framer,
            Tail::Decode,
            ReadPolicy::Read,
            buffers,
            sink,
        ),
        None => Ok(ScanReport::default()),
    }
}

/// The file's first bytes, up to and including its first non-empty line (bounded).
/// Linear in the bytes read: each byte is looked at once, however long the line.
fn read_head(file: &File, size: u64, max_line: usize, known: Vec<u8>) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let limit = size.min(max_line as u64 + 2);
    // The bytes already read count as read (never past the limit).
    let mut head = known;
    head.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    // A first line is usually a few KiB: start small and double, so the head of every
    // file in a backfill is not read (and zeroed) 64 KiB at a time before the file
    // itself is read.
    let mut chunk = 8 * 1024;
    // Every line before `line_start` is blank; `\n` is sought from `searched_from` on
    // (the bytes in hand first, then each chunk as it is read).
    let mut line_start = 0usize;
    let mut searched_from = 0usize;
    loop {
        let mut searched = searched_from;
        // A complete non-empty line is in hand once a newline follows it.
        while let Some(i) = head[searched..].iter().position(|b| *b == b'\n') {
            let end = searched + i;
            if !trim(&head[line_start..end]).is_empty() {
                return Ok(head);
            }
            line_start = end + 1;
            searched = line_start;
        }
        if head.len() as u64 >= limit {
            return Ok(head);
        }
        let want = chunk.min((limit - head.len() as u64) as usize);
        searched_from = head.len();
        head.resize(searched_from + want, 0);
        let n = file.read_at(&mut head[searched_from..], searched_from as u64)?;
        head.truncate(searched_from + n);
        if n == 0 {
            return Ok(head);
        }
        chunk = (chunk * 2).min(1024 * 1024);
    }
}
