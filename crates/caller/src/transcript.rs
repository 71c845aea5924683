//! Reading Claude Code transcripts: one [`Entry`] per JSONL line, the line scanner with its
//! [`MAX_RECORD_BYTES`] cap, [`start_cwd`], and the [`TranscriptError`]s the rest of the
//! identity code reports (identity.md §1.2, §1.3, §5.4).
//!
//! The scanner is not a reader of its own: it is `transcope-jsonl`'s
//! ([`read_regular`], the framer every transcope reader uses) set to Go's `bufio.Scanner`
//! rules — an over-long line ends the scan ([`Oversized::Stop`]) instead of being skipped,
//! and a last line without `\n` is delivered ([`FinalLine::Yield`]) with its `\r` dropped.
//!
//! Lines are decoded the way sloprail's Go decoder decodes them: a line that fails to parse
//! (invalid JSON, not an object, or a type mismatch on a decoded field) is skipped; a top-level
//! `null` is an empty record; keys match case-insensitively (Go's folding); unknown fields are
//! ignored; `message`, `toolUseResult` and `attachment` may hold any JSON.

use std::fmt;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use transcope_core::quote::{quote, quote_path};
use transcope_jsonl::{read_regular, FinalLine, Framer, Line, LineSink, Oversized};

/// The longest line (in bytes, a trailing `\r` included, the `\n` not) the scanner accepts
/// is one byte less than this: Go's `bufio.Scanner` with a 16 MiB buffer, which must hold the
/// line and its newline. A longer line stops the scan with an error.
pub const MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;

/// Why a transcript could not answer. The variants are the sentinels of identity.md §5.4
/// (match on them, not on the text), plus the I/O failures that keep their
/// [`io::ErrorKind`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// `ErrNoTranscriptPath`: no path was given.
    #[error("no transcript path given")]
    NoTranscriptPath,
    /// `ErrNoOriginRecord`: every entry of the file has a parent (or none has a uuid).
    #[error("{}: transcript has no origin record: every entry in it has a parent", path.display())]
    NoOriginRecord {
        /// The transcript.
        path: PathBuf,
    },
    /// `ErrNoProjectDir`: the file continues another, and no project directory was given to
    /// look for it in.
    #[error(
        "resolving what {} continues: the harness's project directory is unknown",
        path.display()
    )]
    NoProjectDir {
        /// The transcript.
        path: PathBuf,
    },
    /// `ErrNotAnAgentID`: empty, or holding `/` or `\`, or `.` or `..`.
    #[error("the reported agent id is not an agent id: {}", describe_agent_id(id))]
    NotAnAgentId {
        /// The refused id.
        id: String,
    },
    /// `hookinput.ErrNotASessionID`: the payload's session id holds a path separator.
    #[error(
        "transcope: the reported session id is not a session id: {}",
        quote(id)
    )]
    NotASessionId {
        /// The refused id.
        id: String,
    },
    /// `ErrWrongSession`: a guessed record names other sessions and never this one.
    #[error(
        "the transcript at that path belongs to another session: {} says it belongs to {}, not {}",
        quote_path(path),
        quote(found),
        quote(wanted)
    )]
    WrongSession {
        /// The guessed record.
        path: PathBuf,
        /// The first disagreeing `sessionId` in it.
        found: String,
        /// The session id asked about.
        wanted: String,
    },
    /// `ErrWrongTree`: a guessed record was written only in other trees.
    #[error(
        "the transcript at that path was written in another tree: {} was written in {}, which is not {}",
        quote_path(path), quote(recorded), quote(cwd)
    )]
    WrongTree {
        /// The guessed record.
        path: PathBuf,
        /// The first non-empty `cwd` recorded in it, as written.
        recorded: String,
        /// The directory asked about, as given.
        cwd: String,
    },
    /// The transcript could not be opened or read to the end (including a line longer than
    /// the scanner accepts, kind [`io::ErrorKind::InvalidData`]).
    #[error("read {}: {source}", path.display())]
    Read {
        /// The transcript.
        path: PathBuf,
        /// The underlying error; its kind tells a missing file from a denied one.
        #[source]
        source: io::Error,
    },
    /// The project directory a continuation's predecessor is looked for in could not be listed.
    #[error("resolving what {} continues: read {}: {source}", path.display(), dir.display())]
    ListProjectDir {
        /// The continuation.
        path: PathBuf,
        /// The project directory.
        dir: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

fn describe_agent_id(id: &str) -> String {
    if id.is_empty() {
        "it is empty".to_owned()
    } else {
        quote(id).to_string()
    }
}

impl TranscriptError {
    /// Whether this is a read failure because the file does not exist (Go's
    /// `errors.Is(err, fs.ErrNotExist)`).
    pub fn is_not_found(&self) -> bool {
        matches!(self, TranscriptError::Read { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    pub(crate) fn read(path: &Path, source: io::Error) -> Self {
        TranscriptError::Read {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A line longer than the scanner accepts.
#[derive(Debug)]
struct LineTooLong;

impl fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a line is longer than {MAX_RECORD_BYTES} bytes (bufio.Scanner: token too long)"
        )
    }
}

impl std::error::Error for LineTooLong {}

/// Whether `err` is the scanner's "line too long".
pub fn is_line_too_long(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|e| e.is::<LineTooLong>())
}

/// One transcript line, reduced to the fields identity resolution reads (identity.md §1.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry {
    /// `uuid`; `""` when absent.
    pub uuid: String,
    /// `parentUuid`: `None` when absent or `null`; any string, `""` included, is a parent.
    pub parent_uuid: Option<String>,
    /// `logicalParentUuid`; absent, `null` and `""` all read as `""`.
    pub logical_parent_uuid: String,
    /// `timestamp`, as written.
    pub timestamp: String,
    /// `sessionId`.
    pub session_id: String,
    /// `cwd`.
    pub cwd: String,
    /// `type`.
    pub kind: String,
    /// `subtype`.
    pub subtype: String,
    /// `isSidechain`.
    pub is_sidechain: bool,
    /// `agentId`.
    pub agent_id: String,
}

impl Entry {
    /// Decodes one line; `None` when Go's decoder would fail on it (identity.md §1.2).
    ///
    /// ```
    /// use transcope_caller::transcript::Entry;
    ///
    /// let e = Entry::parse(br#"{"UUID":"u","parentUuid":null,"sessionId":"s","message":[1]}"#).unwrap();
    /// assert_eq!((e.uuid.as_str(), e.parent_uuid, e.session_id.as_str()), ("u", None, "s"));
    /// assert!(Entry::parse(br#"{"uuid":"u","cwd":5}"#).is_none());
    /// assert_eq!(Entry::parse(b"null"), Some(Entry::default()));
    /// ```
    pub fn parse(line: &[u8]) -> Option<Entry> {
        parse_go_json::<Entry>(line)
    }

    /// A record that can be a root: it has a uuid and no parent.
    pub fn is_origin(&self) -> bool {
        !self.uuid.is_empty() && self.parent_uuid.is_none()
    }
}

/// Decodes `line` as Go's `json.Unmarshal` would: invalid UTF-8 is replaced, and a lone
/// surrogate escape becomes U+FFFD instead of failing the line.
pub(crate) fn parse_go_json<T: for<'de> Deserialize<'de>>(line: &[u8]) -> Option<T> {
    let text: std::borrow::Cow<'_, [u8]> = match std::str::from_utf8(line) {
        Ok(_) => std::borrow::Cow::Borrowed(line),
        Err(_) => std::borrow::Cow::Owned(String::from_utf8_lossy(line).into_owned().into_bytes()),
    };
    match serde_json::from_slice::<T>(&text) {
        Ok(value) => Some(value),
        Err(_) => {
            let repaired = repair_lone_surrogates(&text)?;
            serde_json::from_slice::<T>(&repaired).ok()
        }
    }
}

/// Rewrites every `\uD8xx`–`\uDFxx` escape that is not half of a valid pair to `\uFFFD`;
/// `None` when there is none (so a retry cannot help).
fn repair_lone_surrogates(text: &[u8]) -> Option<Vec<u8>> {
    fn hex4(b: &[u8]) -> Option<u16> {
        if b.len() < 4 {
            return None;
        }
        let s = std::str::from_utf8(&b[..4]).ok()?;
        u16::from_str_radix(s, 16).ok()
    }
    let mut out = Vec::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'\\' || i + 1 >= text.len() {
            out.push(text[i]);
            i += 1;
            continue;
        }
        if text[i + 1] != b'u' {
            out.extend_from_slice(&text[i..i + 2]);
            i += 2;
            continue;
        }
        match hex4(&text[i + 2..]) {
            Some(0xD800..=0xDBFF) => {
                let pair = text.get(i + 6..i + 8) == Some(b"\\u")
                    && matches!(hex4(&text[i + 8..]), Some(0xDC00..=0xDFFF));
                if pair {
                    out.extend_from_slice(&text[i..i + 12]);
                    i += 12;
                } else {
                    out.extend_from_slice(b"\\uFFFD");
                    changed = true;
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.extend_from_slice(b"\\uFFFD");
                changed = true;
                i += 6;
            }
            _ => {
                out.extend_from_slice(&text[i..i + 2]);
                i += 2;
            }
        }
    }
    changed.then_some(out)
}

/// The field a JSON object key names, as Go's `encoding/json` matches it: the exact name
/// first, else the first whose name equals the key under Go's case folding.
pub(crate) fn go_field<T: Copy>(fields: &[(&str, T)], key: &str) -> Option<T> {
    fields
        .iter()
        .find(|(name, _)| *name == key)
        .or_else(|| fields.iter().find(|(name, _)| go_fold_eq(key, name)))
        .map(|(_, field)| *field)
}

/// Go's case folding of a field name: ASCII upper-cased, other characters through
/// `ToUpper(ToLower(r))` (single-character mappings only).
fn go_fold_eq(key: &str, name: &str) -> bool {
    if key.is_ascii() {
        return key.eq_ignore_ascii_case(name);
    }
    fn single(mut it: impl Iterator<Item = char>, fallback: char) -> char {
        match (it.next(), it.next()) {
            (Some(x), None) => x,
            _ => fallback,
        }
    }
    fn fold(c: char) -> char {
        let lower = single(c.to_lowercase(), c);
        single(lower.to_uppercase(), lower)
    }
    key.chars().map(fold).eq(name.chars().map(fold))
}

#[derive(Clone, Copy)]
enum Field {
    Uuid,
    ParentUuid,
    LogicalParentUuid,
    Timestamp,
    SessionId,
    Cwd,
    Type,
    Subtype,
    IsSidechain,
    AgentId,
    HookErrors,
    Other,
}

const FIELDS: [(&str, Field); 11] = [
    ("uuid", Field::Uuid),
    ("parentUuid", Field::ParentUuid),
    ("logicalParentUuid", Field::LogicalParentUuid),
    ("timestamp", Field::Timestamp),
    ("sessionId", Field::SessionId),
    ("cwd", Field::Cwd),
    ("type", Field::Type),
    ("subtype", Field::Subtype),
    ("isSidechain", Field::IsSidechain),
    ("agentId", Field::AgentId),
    ("hookErrors", Field::HookErrors),
];

/// A map key classified without allocating.
struct Key(Field);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(Key(go_field(&FIELDS, key).unwrap_or(Field::Other)))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entry;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a transcript record")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Entry, E> {
                Ok(Entry::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
                let mut e = Entry::default();
                // Go leaves a string field as it was on `null`.
                fn set(slot: &mut String, value: Option<String>) {
                    if let Some(v) = value {
                        *slot = v;
                    }
                }
                while let Some(Key(field)) = map.next_key::<Key>()? {
                    match field {
                        Field::Uuid => set(&mut e.uuid, map.next_value()?),
                        Field::ParentUuid => e.parent_uuid = map.next_value()?,
                        Field::LogicalParentUuid => {
                            set(&mut e.logical_parent_uuid, map.next_value()?)
                        }
                        Field::Timestamp => set(&mut e.timestamp, map.next_value()?),
                        Field::SessionId => set(&mut e.session_id, map.next_value()?),
                        Field::Cwd => set(&mut e.cwd, map.next_value()?),
                        Field::Type => set(&mut e.kind, map.next_value()?),
                        Field::Subtype => set(&mut e.subtype, map.next_value()?),
                        Field::AgentId => set(&mut e.agent_id, map.next_value()?),
                        Field::IsSidechain => {
                            if let Some(b) = map.next_value::<Option<bool>>()? {
                                e.is_sidechain = b;
                            }
                        }
                        Field::HookErrors => {
                            map.next_value::<Option<Vec<IgnoredAny>>>()?;
                        }
                        Field::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_any(V)
    }
}

/// Go's `bufio.Scanner` (`ScanLines`, a [`MAX_RECORD_BYTES`] buffer) as a sink of the
/// shared framer. The framer is set so that it delivers every line Go accepts and stops at
/// every line Go refuses but one: a line ending `\r\n` whose content is one byte short of
/// the cap, which Go's buffer cannot hold with its `\r` and `\n` (checked here).
struct GoLines<F>(F);

/// [`GoLines`]' framer: content (without `\r\n`) up to `MAX_RECORD_BYTES - 1` bytes, stop
/// at a longer line, deliver an unterminated last line, read 64 KiB at a time (Go's first
/// buffer).
fn go_framer() -> Framer {
    Framer::builder()
        .max_line(MAX_RECORD_BYTES - 1)
        .oversized(Oversized::Stop)
        .final_line(FinalLine::Yield)
        .buffer_size(64 * 1024)
        .build()
}

impl<F: FnMut(&[u8]) -> ControlFlow<()>> LineSink for GoLines<F> {
    type Error = LineTooLong;

    fn line(&mut self, line: Line<'_>) -> Result<bool, LineTooLong> {
        let raw = line.end - line.offset;
        let content = if raw == line.bytes.len() as u64 {
            // The last line, without `\n`, delivered verbatim: Go drops one `\r` here too.
            line.bytes.strip_suffix(b"\r").unwrap_or(line.bytes)
        } else if raw > MAX_RECORD_BYTES as u64 {
            return Err(LineTooLong);
        } else {
            line.bytes
        };
        Ok((self.0)(content).is_continue())
    }

    fn oversized(&mut self, _offset: u64, _number: u64, _len: u64) -> Result<bool, LineTooLong> {
        Err(LineTooLong)
    }
}

/// Reads `path` line by line with Go's `bufio.Scanner` rules (identity.md §1.3) and hands each
/// line (without `\n` and one trailing `\r`) to `f`, which may stop the scan.
///
/// Only a regular file is read, and only as far as its size when opened: a FIFO, a device
/// or a file that grows without end never blocks a hook (the open does not wait for a
/// FIFO's writer). Nothing past [`MAX_RECORD_BYTES`] bytes of an over-long line is read.
///
/// # Errors
/// Opening or reading fails (the [`io::Error`] keeps its kind), the path is not a regular
/// file ([`io::ErrorKind::InvalidInput`]), or a line is too long ([`is_line_too_long`]).
/// Lines handed over before the failure have been seen.
pub fn scan_lines(path: &Path, f: impl FnMut(&[u8]) -> ControlFlow<()>) -> io::Result<()> {
    match read_regular(path, &go_framer(), GoLines(f)) {
        Ok(_) => Ok(()),
        Err(transcope_jsonl::Error::Io { source, .. }) => Err(source),
        Err(transcope_jsonl::Error::Sink(too_long)) => {
            Err(io::Error::new(io::ErrorKind::InvalidData, too_long))
        }
        Err(other) => Err(io::Error::other(other.to_string())),
    }
}

/// Like [`scan_lines`], decoding each line into an [`Entry`] (lines that do not decode are
/// skipped), but only lines that could hold one of `needles` as a string value: lines
/// containing none of them literally and no `\` (which an escaped spelling would need)
/// are skipped unread. Empty needles are ignored; with none left nothing is decoded.
fn scan_entries_holding(
    path: &Path,
    needles: &[&str],
    mut f: impl FnMut(Entry) -> ControlFlow<()>,
) -> io::Result<()> {
    let needles: Vec<&str> = needles.iter().copied().filter(|n| !n.is_empty()).collect();
    // A needle holding U+FFFD may come from invalid bytes: decode everything then.
    let exact = !needles.iter().any(|n| n.contains('\u{FFFD}'));
    let finders: Vec<memchr::memmem::Finder<'_>> = needles
        .iter()
        .map(|n| memchr::memmem::Finder::new(n.as_bytes()))
        .collect();
    scan_lines(path, |line| {
        if exact
            && memchr::memchr(b'\\', line).is_none()
            && !finders.iter().any(|fd| fd.find(line).is_some())
        {
            return ControlFlow::Continue(());
        }
        match Entry::parse(line) {
            Some(entry) => f(entry),
            None => ControlFlow::Continue(()),
        }
    })
}

/// Whether a line of `path` that [`scan_entries_holding`] decodes for `needles` is an entry
/// `accept` accepts; the scan stops at the first.
///
/// # Errors
/// As [`scan_lines`], when the scan fails before such an entry.
pub(crate) fn any_entry_holding(
    path: &Path,
    needles: &[&str],
    mut accept: impl FnMut(&Entry) -> bool,
) -> io::Result<bool> {
    let mut hit = false;
    let scanned = scan_entries_holding(path, needles, |entry| {
        if accept(&entry) {
            hit = true;
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    if hit {
        Ok(true)
    } else {
        scanned.map(|()| false)
    }
}

/// Whether `line` holds `cwd` in any case (ASCII: no other character folds to these
/// letters). Found from each `w`, the rarest of them, by `memchr`: a byte-by-byte
/// window over the lines before a transcript's first `cwd` was a tenth of a Stop.
fn names_cwd(line: &[u8]) -> bool {
    memchr::memchr2_iter(b'w', b'W', line).any(|i| {
        i > 0
            && line[i - 1].eq_ignore_ascii_case(&b'c')
            && line
                .get(i + 1)
                .is_some_and(|d| d.eq_ignore_ascii_case(&b'd'))
    })
}

/// `transcript.StartCwd`: the `cwd` of the first record naming one; `""` when none does.
///
/// # Errors
/// [`TranscriptError::Read`] when the file cannot be opened or read before such a record.
pub fn start_cwd(path: &Path) -> Result<String, TranscriptError> {
    let (found, _, scanned) = scan_head(path, true, false);
    start_cwd_of(path, found, scanned)
}

/// [`start_cwd`] and the transcript's root record (`rootRecord`: its first record with a
/// uuid and no parent), found in one scan of the head that stops once it has both: the
/// identity of a hook's caller needs the two, and reads the head once for them. The root
/// is `None` when the scan ended without one, for whatever reason (a caller wanting the
/// reason reads it with [`crate::stable::root_record`]).
///
/// # Errors
/// As [`start_cwd`], for the `cwd`.
pub fn start_cwd_and_root(path: &Path) -> (Result<String, TranscriptError>, Option<Entry>) {
    let (found, root, scanned) = scan_head(path, true, true);
    (start_cwd_of(path, found, scanned), root)
}

/// [`start_cwd`]'s answer from a scan's outcome: a `cwd` found before a failure stands.
fn start_cwd_of(
    path: &Path,
    found: Option<String>,
    scanned: io::Result<()>,
) -> Result<String, TranscriptError> {
    match (found, scanned) {
        (Some(cwd), _) => Ok(cwd),
        (None, Ok(())) => Ok(String::new()),
        (None, Err(e)) => Err(TranscriptError::read(path, e)),
    }
}

/// One scan of `path` from its start for the first record naming a `cwd` (when `cwd`)
/// and the first origin record (when `root`), stopping once it has what it was asked for.
/// What was found before a failure is returned with the failure.
pub(crate) fn scan_head(
    path: &Path,
    cwd: bool,
    root: bool,
) -> (Option<String>, Option<Entry>, io::Result<()>) {
    let mut found_cwd: Option<String> = None;
    let mut found_root: Option<Entry> = None;
    let scanned = scan_lines(path, |line| {
        let want_cwd = cwd && found_cwd.is_none();
        let want_root = root && found_root.is_none();
        // Cheap filter while only a `cwd` is sought: a line naming one holds the
        // letters of the key (or an escape that could spell them).
        let skip = !want_root
            && !names_cwd(line)
            && memchr::memchr(b'\\', line).is_none()
            && line.is_ascii();
        if !skip {
            if let Some(e) = Entry::parse(line) {
                if want_cwd && !e.cwd.is_empty() {
                    found_cwd = Some(e.cwd.clone());
                }
                if want_root && e.is_origin() {
                    found_root = Some(e);
                }
            }
        }
        if (cwd && found_cwd.is_none()) || (root && found_root.is_none()) {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    });
    (found_cwd, found_root, scanned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cwd_finds_the_key_in_any_case_and_nothing_else() {
        let cases: [(&[u8], bool); 15] = [
            (b"cwd", true),
            (b"{\"CWD\":1}", true),
            (b"xcWd", true),
            (b"wcwd", true),
            (b"cwdw", true),
            (b"CwD", true),
            (b"", false),
            (b"w", false),
            (b"cw", false),
            (b"wd", false),
            (b"c w d", false),
            (b"cwx", false),
            (b"xwd", false),
            (b"cdw", false),
            (b"dwc", false),
        ];
        for (line, want) in cases {
            assert_eq!(names_cwd(line), want, "{}", String::from_utf8_lossy(line));
        }
        // The same answer as a window over every three bytes, on every short line of
        // these letters.
        let letters = b"cwdCWDx";
        let mut line = Vec::new();
        for n in 0..5u32 {
            for mut k in 0..(letters.len() as u32).pow(n) {
                line.clear();
                for _ in 0..n {
                    line.push(letters[(k % letters.len() as u32) as usize]);
                    k /= letters.len() as u32;
                }
                let window = line.windows(3).any(|w| w.eq_ignore_ascii_case(b"cwd"));
                assert_eq!(
                    names_cwd(&line),
                    window,
                    "{}",
                    String::from_utf8_lossy(&line)
                );
            }
        }
    }

    #[test]
    fn go_decoding_rules() {
        let p = |s: &str| Entry::parse(s.as_bytes());
        assert!(p("").is_none());
        assert!(p("[1]").is_none());
        assert!(p("\"x\"").is_none());
        assert!(p("5").is_none());
        assert!(p("{").is_none());
        assert!(p(r#"{"uuid":"a"} x"#).is_none());
        assert_eq!(p("null"), Some(Entry::default()));
        assert!(p(r#"{"uuid":"a","parentUuid":123}"#).is_none());
        assert!(p(r#"{"uuid":"a","isSidechain":"true"}"#).is_none());
        assert!(p(r#"{"uuid":"a","hookErrors":"x"}"#).is_none());
        let e = p(r#"{"uuid":"a","hookErrors":["x"],"message":"m","toolUseResult":5,"attachment":null,"other":{"x":[1]}}"#).unwrap();
        assert_eq!(e.uuid, "a");
        let e = p(r#"{"uuid":"a","parentUuid":""}"#).unwrap();
        assert_eq!(e.parent_uuid.as_deref(), Some(""));
        assert!(!e.is_origin());
        let e = p(r#"{"uuid":"a","parentUuid":"x","parentUuid":null}"#).unwrap();
        assert!(e.is_origin());
        let e = p(r#"{"uuid":"a","uuid":null}"#).unwrap();
        assert_eq!(e.uuid, "a", "null leaves a string as it was");
        // Case-insensitive keys, Go's folding (ſ folds to S, K to K).
        let e =
            p(r#"{"SESSIONID":"s","\u017fubtype":"compact_boundary","CWD":"/x","Type":"system"}"#)
                .unwrap();
        assert_eq!(
            (
                e.session_id.as_str(),
                e.subtype.as_str(),
                e.cwd.as_str(),
                e.kind.as_str()
            ),
            ("s", "compact_boundary", "/x", "system")
        );
        // Lone surrogates become U+FFFD instead of failing the line.
        let e = p(r#"{"uuid":"a\ud800b","cwd":"\udc00"}"#).unwrap();
        assert_eq!(e.uuid, "a\u{FFFD}b");
        assert_eq!(e.cwd, "\u{FFFD}");
        let e = p(r#"{"uuid":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(e.uuid, "😀");
        // Invalid UTF-8 is replaced.
        let mut line = br#"{"uuid":"a"#.to_vec();
        line.push(0xff);
        line.extend_from_slice(br#""}"#);
        assert_eq!(Entry::parse(&line).unwrap().uuid, "a\u{FFFD}");
    }

    #[test]
    fn scanner_limits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut body = vec![b'x'; MAX_RECORD_BYTES - 1];
        body.push(b'\n');
        body.extend_from_slice(b"last\r");
        std::fs::write(&path, &body).unwrap();
        let mut seen = Vec::new();
        scan_lines(&path, |l| {
            seen.push(l.len());
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(seen, [MAX_RECORD_BYTES - 1, 4]);
        std::fs::write(&path, vec![b'x'; MAX_RECORD_BYTES]).unwrap();
        let err = scan_lines(&path, |_| ControlFlow::Continue(())).unwrap_err();
        assert!(is_line_too_long(&err));
        std::fs::write(&path, b"a\n\nb\n").unwrap();
        let mut lines = Vec::new();
        scan_lines(&path, |l| {
            lines.push(l.to_vec());
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(lines, [b"a".to_vec(), b"".to_vec(), b"b".to_vec()]);
    }

    /// Go's buffer holds a line with its `\r` and `\n`: content one byte short of the cap
    /// fits bare, not with `\r\n`; the lines before a refused one are seen, and a scan the
    /// callback stops before it succeeds.
    #[test]
    fn scanner_counts_the_cr_of_a_crlf_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let lens = |path: &Path| {
            let mut seen = Vec::new();
            let r = scan_lines(path, |l| {
                seen.push(l.len());
                ControlFlow::Continue(())
            });
            (seen, r)
        };
        let mut body = b"a\r\n".to_vec();
        body.extend(vec![b'x'; MAX_RECORD_BYTES - 2]);
        body.extend_from_slice(b"\r\nb");
        std::fs::write(&path, &body).unwrap();
        let (seen, r) = lens(&path);
        assert_eq!(seen, [1, MAX_RECORD_BYTES - 2, 1]);
        assert!(r.is_ok());

        let mut body = b"a\r\n".to_vec();
        body.extend(vec![b'x'; MAX_RECORD_BYTES - 1]);
        body.extend_from_slice(b"\r\nb\n");
        std::fs::write(&path, &body).unwrap();
        let (seen, r) = lens(&path);
        assert_eq!(seen, [1]);
        assert!(is_line_too_long(&r.unwrap_err()));
        let stopped = scan_lines(&path, |_| ControlFlow::Break(()));
        assert!(stopped.is_ok());

        std::fs::write(&path, b"\r").unwrap();
        assert_eq!(lens(&path).0, [0]);
        let (_, r) = lens(dir.path());
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let (_, r) = lens(&dir.path().join("nope"));
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
