//! One transcript's entry: its generations, kept, read, checked, restored.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::record::{chain, hex, sha, Record, PRINT, RECORD_LEN};
use crate::{io_error, ArchiveError, FRAME_BYTES, LEVEL};

/// One transcript file's entry.
#[derive(Clone, Debug)]
pub struct Entry {
    dir: PathBuf,
    original: PathBuf,
}

/// A generation's file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generation {
    /// Its number (0 first).
    pub n: u32,
    /// Its file (`g<n>.zst`).
    pub path: PathBuf,
}

/// What one keep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// Original bytes added.
    pub added: u64,
    /// Bytes written to the archive (frames and records).
    pub stored: u64,
    /// Data frames written.
    pub frames: u32,
    /// Whether a new generation was started (the original was cut or rewritten, or
    /// this is its first keep).
    pub new_generation: bool,
    /// A torn end (a killed earlier write) was cut off first.
    pub repaired: bool,
}

/// What an entry holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// The original's path.
    pub original: PathBuf,
    /// Its size as last kept (the newest generation's bytes).
    pub bytes: u64,
    /// Original bytes over all generations.
    pub all_bytes: u64,
    /// The generations' files' sizes.
    pub stored: u64,
    /// How many generations.
    pub generations: u32,
    /// Whether the original is still there.
    pub exists: bool,
    /// When it was last kept (microseconds since the epoch).
    pub last_at_us: u64,
}

/// Something wrong in a generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The generation's file.
    pub path: PathBuf,
    /// Where in it (bytes).
    pub offset: u64,
    /// What.
    pub what: String,
    /// A torn last write (a killed process): everything before it is whole.
    pub torn: bool,
    /// It was cut off (torn ends only, when asked to repair).
    pub repaired: bool,
}

/// What a restore wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Files written.
    pub written: Vec<PathBuf>,
    /// Files left as they were (something is there already).
    pub kept: Vec<PathBuf>,
    /// Bytes written.
    pub bytes: u64,
}

/// A generation read from its start: its frames' records, where they end in the
/// file, and what stopped the read.
struct Scan {
    records: Vec<Record>,
    /// The file's length up to the end of the last whole frame and record.
    good: u64,
    problem: Option<(u64, String, bool)>,
}

/// The original bytes a keep reads: a file, or what the caller read whole.
trait Source {
    fn size(&self) -> u64;
    fn read_into(&self, start: u64, len: usize, buf: &mut Vec<u8>) -> io::Result<()>;
}

impl Source for File {
    fn size(&self) -> u64 {
        self.metadata().map(|m| m.len()).unwrap_or(0)
    }
    fn read_into(&self, start: u64, len: usize, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.resize(len, 0);
        self.read_exact_at(buf, start)
    }
}

impl Source for &[u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn read_into(&self, start: u64, len: usize, buf: &mut Vec<u8>) -> io::Result<()> {
        let s = start as usize;
        let b = self
            .get(s..s + len)
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.clear();
        buf.extend_from_slice(b);
        Ok(())
    }
}

fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Open a file of ours for appending (created `0600`, never through a link).
fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

#[allow(unsafe_code)]
fn flock_exclusive(f: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: a valid descriptor for the call's length; no memory is shared.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

impl Entry {
    pub(crate) fn new(root: &Path, original: &Path) -> Entry {
        let h = hex(&sha(original.as_os_str().as_bytes()));
        Entry {
            dir: root.join(&h[..2]).join(&h),
            original: original.to_path_buf(),
        }
    }

    /// The entry in `dir`, when it names its original.
    pub(crate) fn open(dir: PathBuf) -> Result<Option<Entry>, ArchiveError> {
        let p = dir.join("path");
        match transcope_jsonl::read_private(&p) {
            Ok(bytes) if !bytes.is_empty() => Ok(Some(Entry {
                original: PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)),
                dir,
            })),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&p)(e)),
        }
    }

    /// The original transcript's path.
    pub fn original(&self) -> &Path {
        &self.original
    }

    /// The entry's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The scope-log key the transcript feeds, when one was named.
    pub fn session(&self) -> Option<String> {
        transcope_jsonl::read_private(&self.dir.join("session"))
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .filter(|s| !s.is_empty())
    }

    /// Name the scope-log key the transcript feeds (written once; again only when it
    /// changes).
    pub(crate) fn set_session(&self, key: &str) -> Result<(), ArchiveError> {
        if self.session().as_deref() == Some(key) {
            return Ok(());
        }
        let p = self.dir.join("session");
        transcope_jsonl::write_atomic(&p, key.as_bytes(), false).map_err(io_error(&p))
    }

    /// Whether anything was kept.
    pub fn exists(&self) -> bool {
        self.dir.join("path").is_file()
    }

    /// Its generations, oldest first.
    pub fn generations(&self) -> Result<Vec<Generation>, ArchiveError> {
        let mut out = Vec::new();
        let read = match std::fs::read_dir(&self.dir) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io_error(&self.dir)(e)),
        };
        for e in read.filter_map(Result::ok) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if let Some(n) = name
                .strip_prefix('g')
                .and_then(|r| r.strip_suffix(".zst"))
                .and_then(|n| n.parse::<u32>().ok())
            {
                out.push(Generation { n, path: e.path() });
            }
        }
        out.sort_by_key(|g| g.n);
        Ok(out)
    }

    /// Take the entry's lock (its folder made, `0700`, and its `path` written, when
    /// missing).
    fn lock(&self) -> Result<File, ArchiveError> {
        let lock = self.dir.join("lock");
        let f = transcope_jsonl::in_private_dir(&self.dir, || open_append(&lock))
            .map_err(io_error(&lock))?;
        flock_exclusive(&f).map_err(io_error(&lock))?;
        let p = self.dir.join("path");
        if !p.is_file() {
            transcope_jsonl::write_atomic(&p, self.original.as_os_str().as_bytes(), false)
                .map_err(io_error(&p))?;
        }
        Ok(f)
    }

    /// Keep the file at `original` as it is now.
    pub(crate) fn keep_file(&self, original: &Path) -> Result<Kept, ArchiveError> {
        let (f, _) = transcope_jsonl::open_regular(original).map_err(io_error(original))?;
        self.keep_from(&f)
    }

    /// Keep `bytes`, the original's content as the caller read it.
    pub(crate) fn keep_bytes(&self, _original: &Path, bytes: &[u8]) -> Result<Kept, ArchiveError> {
        self.keep_from(&bytes)
    }

    fn keep_from(&self, src: &dyn Source) -> Result<Kept, ArchiveError> {
        let _lock = self.lock()?;
        let mut kept = Kept::default();
        let gens = self.generations()?;
        let size = src.size();
        let mut buf = Vec::new();
        let print = |start: u64, end: u64, buf: &mut Vec<u8>| -> Result<[u8; 32], ArchiveError> {
            src.read_into(start, (end - start) as usize, buf)
                .map_err(io_error(&self.original))?;
            Ok(sha(buf))
        };
        // Where the newest generation stands, its torn end cut off.
        let (mut n, last) = match gens.last() {
            None => (0, None),
            Some(g) => {
                let (last, repaired) = last_record(&g.path)?;
                kept.repaired = repaired;
                (g.n, last.map(|r| (r, g.n)))
            }
        };
        // The bytes just before where the keep goes on (at most PRINT: what a frame's
        // tail print may need beyond the frame) and the head's print once the head is
        // whole: each original byte is read once in a keep, the checks' bytes included.
        // Until the head is whole, `before` is all of the original before the keep.
        let mut before: Vec<u8> = Vec::new();
        let mut head_print: Option<[u8; 32]> = None;
        let go_on = match last {
            None => Some((0, [0u8; 32])),
            Some((r, _)) => {
                let end = r.end();
                let same = size >= end && {
                    let head_len = end.min(PRINT);
                    let tail_from = end - head_len;
                    // A short head and tail overlap or touch: read them as one range.
                    let (head, tail) = if tail_from <= head_len {
                        src.read_into(0, end as usize, &mut buf)
                            .map_err(io_error(&self.original))?;
                        (
                            sha(&buf[..head_len as usize]),
                            sha(&buf[tail_from as usize..]),
                        )
                    } else {
                        let head = print(0, head_len, &mut buf)?;
                        (head, print(tail_from, end, &mut buf)?)
                    };
                    let same = head == r.head && tail == r.tail;
                    if same {
                        before.extend_from_slice(&buf[buf.len() - head_len as usize..]);
                        head_print = (end >= PRINT).then_some(head);
                    }
                    same
                };
                same.then_some((end, r.chain))
            }
        };
        let (mut pos, mut chain_so_far) = match go_on {
            Some(at) => at,
            None => {
                // Cut or rewritten: a new generation; the old one stays as it is.
                n += 1;
                (0, [0u8; 32])
            }
        };
        kept.new_generation = gens.is_empty() || go_on.is_none();
        if pos == size && !(kept.new_generation && gens.is_empty()) {
            return Ok(kept);
        }
        let path = self.dir.join(format!("g{n}.zst"));
        let mut out = open_append(&path).map_err(io_error(&path))?;
        let mut compressor = zstd::bulk::Compressor::new(LEVEL).map_err(io_error(&path))?;
        compressor.include_checksum(true).map_err(io_error(&path))?;
        let print_len = PRINT as usize;
        while pos < size {
            let len = ((size - pos) as usize).min(FRAME_BYTES);
            src.read_into(pos, len, &mut buf)
                .map_err(io_error(&self.original))?;
            let frame_sha = sha(&buf);
            let mut frame = compressor.compress(&buf).map_err(io_error(&path))?;
            let end = pos + len as u64;
            chain_so_far = chain(&chain_so_far, &frame_sha);
            // The first min(end, PRINT) bytes: known once whole, else all before the
            // frame and its start.
            let head = match head_print {
                Some(h) => h,
                None => {
                    let take = len.min(print_len - before.len());
                    let h = sha(&[&before[..], &buf[..take]].concat());
                    if before.len() + take == print_len {
                        head_print = Some(h);
                    }
                    h
                }
            };
            // The last min(end, PRINT) bytes: the frame's own, after those before it.
            if len >= print_len {
                before.clear();
                before.extend_from_slice(&buf[len - print_len..]);
            } else {
                before.extend_from_slice(&buf);
                let extra = before.len().saturating_sub(print_len);
                before.drain(..extra);
            }
            let tail = sha(&before);
            let record = Record {
                start: pos,
                len: len as u64,
                stored: frame.len() as u64,
                at_us: now_us(),
                sha: frame_sha,
                chain: chain_so_far,
                head,
                tail,
            };
            frame.extend_from_slice(&record.encode());
            // The frame and its record in one write: a kill leaves at most a torn
            // last pair, never a frame without its record in the middle.
            out.write_all(&frame).map_err(io_error(&path))?;
            kept.added += len as u64;
            kept.stored += frame.len() as u64;
            kept.frames += 1;
            pos = end;
        }
        Ok(kept)
    }

    /// The newest generation holding a frame (a generation started and killed before
    /// its first frame was whole holds none: the one before it is the newest kept),
    /// else the newest (an empty transcript's).
    pub fn newest(&self) -> Result<Option<Generation>, ArchiveError> {
        let gens = self.generations()?;
        for g in gens.iter().rev() {
            if peek_last(&g.path)?.0.is_some() {
                return Ok(Some(g.clone()));
            }
        }
        Ok(gens.last().cloned())
    }

    /// The newest generation's bytes (every frame checked).
    pub fn read_newest(&self) -> Result<Option<Vec<u8>>, ArchiveError> {
        match self.newest()? {
            Some(g) => read_generation(&g.path).map(Some),
            None => Ok(None),
        }
    }

    /// Generation `g`'s bytes (every frame checked; a torn end left out).
    pub fn read(&self, g: &Generation) -> Result<Vec<u8>, ArchiveError> {
        read_generation(&g.path)
    }

    /// What the entry holds.
    pub fn info(&self) -> Result<EntryInfo, ArchiveError> {
        let gens = self.generations()?;
        let newest = self.newest()?;
        let mut info = EntryInfo {
            original: self.original.clone(),
            bytes: 0,
            all_bytes: 0,
            stored: 0,
            generations: gens.len() as u32,
            exists: self.original.exists(),
            last_at_us: 0,
        };
        for g in &gens {
            info.stored += std::fs::metadata(&g.path).map(|m| m.len()).unwrap_or(0);
            let (last, _) = peek_last(&g.path)?;
            if let Some(r) = last {
                info.all_bytes += r.end();
                info.last_at_us = info.last_at_us.max(r.at_us);
                if newest.as_ref() == Some(g) {
                    info.bytes = r.end();
                }
            }
        }
        Ok(info)
    }

    /// Check every frame of every generation; with `repair`, cut off a torn end (and
    /// only that: damage elsewhere is named, never rewritten).
    pub fn verify(&self, repair: bool) -> Result<Vec<Problem>, ArchiveError> {
        let _lock = if repair { Some(self.lock()?) } else { None };
        let mut out = Vec::new();
        for g in self.generations()? {
            let bytes = std::fs::read(&g.path).map_err(io_error(&g.path))?;
            let scan = scan(&bytes, &mut |_| {});
            if let Some((offset, what, torn)) = scan.problem {
                let repaired = repair && torn && cut(&g.path, scan.good)?;
                out.push(Problem {
                    path: g.path.clone(),
                    offset,
                    what,
                    torn,
                    repaired,
                });
            }
        }
        Ok(out)
    }

    /// Write the newest generation to `to` (and, with `all`, each older one beside it
    /// as `<name>.gen<n>`), never over a file that is there.
    pub fn restore_to(&self, to: &Path, all: bool) -> Result<Restored, ArchiveError> {
        let gens = self.generations()?;
        let newest_kept = self.newest()?;
        let mut out = Restored::default();
        for g in &gens {
            let newest = newest_kept.as_ref() == Some(g);
            if !newest && !all {
                continue;
            }
            let target = if newest {
                to.to_path_buf()
            } else {
                let mut name = to.file_name().unwrap_or_default().to_os_string();
                name.push(format!(".gen{}", g.n));
                to.with_file_name(name)
            };
            let bytes = read_generation(&g.path)?;
            if write_new(&target, &bytes)? {
                out.bytes += bytes.len() as u64;
                out.written.push(target);
            } else {
                out.kept.push(target);
            }
        }
        Ok(out)
    }

    /// Delete the entry; the bytes it held.
    pub fn remove(self) -> Result<u64, ArchiveError> {
        let stored = self.info().map(|i| i.stored).unwrap_or(0);
        std::fs::remove_dir_all(&self.dir).map_err(io_error(&self.dir))?;
        Ok(stored)
    }
}

/// Write `bytes` to `target` only if nothing is there (made whole beside it, then
/// linked into place); whether it was written.
fn write_new(target: &Path, bytes: &[u8]) -> Result<bool, ArchiveError> {
    if std::fs::symlink_metadata(target).is_ok() {
        return Ok(false);
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.restore",
        target.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let create = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
    };
    let written = transcope_jsonl::in_private_dir(dir, create).and_then(|mut f| f.write_all(bytes));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(target)(e));
    }
    let linked = std::fs::hard_link(&tmp, target);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io_error(target)(e)),
    }
}

/// Cut `path` to `len` (a torn end); whether it was cut.
fn cut(path: &Path, len: u64) -> Result<bool, ArchiveError> {
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(io_error(path))?;
    f.set_len(len).map_err(io_error(path))?;
    Ok(true)
}

/// The last record of a generation, read from its end; `None` when it has none.
/// Whether the end is whole is not checked (see [`last_record`]).
fn peek_last(path: &Path) -> Result<(Option<Record>, u64), ArchiveError> {
    let (f, len) = transcope_jsonl::open_private(path).map_err(io_error(path))?;
    if len < RECORD_LEN as u64 {
        return Ok((None, len));
    }
    let mut tail = [0u8; RECORD_LEN];
    f.read_exact_at(&mut tail, len - RECORD_LEN as u64)
        .map_err(io_error(path))?;
    Ok((
        Record::decode(&tail).filter(|r| r.stored + RECORD_LEN as u64 <= len),
        len,
    ))
}

/// The last whole record of a generation, a torn end cut off first (then `true`).
fn last_record(path: &Path) -> Result<(Option<Record>, bool), ArchiveError> {
    let (last, len) = peek_last(path)?;
    if last.is_some() || len == 0 {
        return Ok((last, false));
    }
    // The end is not a record: a killed write. Read from the start to the last whole
    // pair, and cut there if what follows it is only a torn end.
    let bytes = std::fs::read(path).map_err(io_error(path))?;
    let s = scan(&bytes, &mut |_| {});
    match s.problem {
        Some((_, _, true)) => {
            cut(path, s.good)?;
            Ok((s.records.last().copied(), true))
        }
        Some((offset, what, false)) => Err(ArchiveError::Damaged {
            path: path.to_path_buf(),
            what: format!("at byte {offset}: {what}"),
        }),
        None => Ok((s.records.last().copied(), false)),
    }
}

/// Generation `path`'s bytes, every frame checked; a torn end is left out, damage is
/// an error.
fn read_generation(path: &Path) -> Result<Vec<u8>, ArchiveError> {
    let (mut f, _) = transcope_jsonl::open_private(path).map_err(io_error(path))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(io_error(path))?;
    let mut out = Vec::new();
    let s = scan(&bytes, &mut |data| out.extend_from_slice(data));
    match s.problem {
        Some((offset, what, false)) => Err(ArchiveError::Damaged {
            path: path.to_path_buf(),
            what: format!("at byte {offset}: {what}"),
        }),
        _ => Ok(out),
    }
}

/// Read a generation from its start, handing each frame's checked bytes to `each`.
fn scan(bytes: &[u8], each: &mut dyn FnMut(&[u8])) -> Scan {
    let mut s = Scan {
        records: Vec::new(),
        good: 0,
        problem: None,
    };
    let mut pos = 0usize;
    let mut chain_so_far = [0u8; 32];
    let mut start = 0u64;
    // A problem is a torn end when no whole record follows it.
    let torn_from = |at: usize| -> bool {
        let rest = &bytes[at..];
        !(0..rest.len().saturating_sub(RECORD_LEN - 1))
            .any(|i| Record::decode(&rest[i..i + RECORD_LEN]).is_some())
    };
    while pos < bytes.len() {
        let fail = |what: String| Some((pos as u64, what, torn_from(pos)));
        let n = match zstd::zstd_safe::find_frame_compressed_size(&bytes[pos..]) {
            Ok(n) if pos + n + RECORD_LEN <= bytes.len() => n,
            Ok(_) => {
                s.problem = Some((pos as u64, "a frame without its record".into(), true));
                break;
            }
            Err(_) => {
                s.problem = fail("not a zstd frame".into());
                break;
            }
        };
        let Some(r) = Record::decode(&bytes[pos + n..pos + n + RECORD_LEN]) else {
            s.problem = fail("a frame not followed by its record".into());
            break;
        };
        if r.stored != n as u64 || r.start != start {
            s.problem = fail(format!(
                "a record for {} stored bytes of the original from {}, where {} and {} were expected",
                r.stored, r.start, n, start
            ));
            break;
        }
        let data = match zstd::bulk::decompress(&bytes[pos..pos + n], r.len as usize) {
            Ok(d) if d.len() as u64 == r.len => d,
            _ => {
                s.problem = fail("a frame that does not decode to its length".into());
                break;
            }
        };
        let h = sha(&data);
        chain_so_far = chain(&chain_so_far, &h);
        if h != r.sha || chain_so_far != r.chain {
            s.problem = fail(format!(
                "original bytes {}..{}: SHA-256 {} where {} was recorded",
                r.start,
                r.end(),
                hex(&h),
                hex(&r.sha)
            ));
            break;
        }
        each(&data);
        pos += n + RECORD_LEN;
        start = r.end();
        s.good = pos as u64;
        s.records.push(r);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Archive;

    fn setup() -> (tempfile::TempDir, Archive, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let archive = Archive::at(dir.path().join("archive"));
        let original = dir.path().join("projects/-w/s1.jsonl");
        std::fs::create_dir_all(original.parent().unwrap()).unwrap();
        (dir, archive, original)
    }

    fn append(path: &Path, text: &str) {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn a_growing_file_is_kept_frame_by_frame_and_reads_back_whole() {
        let (_d, archive, original) = setup();
        let mut whole = String::new();
        for i in 0..50 {
            let line = format!("{{\"turn\":{i},\"text\":\"{}\"}}\n", "x".repeat(i * 97));
            append(&original, &line);
            whole.push_str(&line);
            let k = archive.keep(&original, None).unwrap();
            assert_eq!(k.added, line.len() as u64);
            assert_eq!(k.new_generation, i == 0);
        }
        let e = archive.entry(&original);
        assert_eq!(e.generations().unwrap().len(), 1);
        assert_eq!(e.read_newest().unwrap().unwrap(), whole.as_bytes());
        assert_eq!(archive.keep(&original, None).unwrap(), Kept::default());
        assert!(e.verify(false).unwrap().is_empty());
        let info = e.info().unwrap();
        assert_eq!(
            (info.bytes, info.generations, info.exists),
            (whole.len() as u64, 1, true)
        );
    }

    /// Each record's head and tail prints are those of the original's bytes, however
    /// the appends fall about the print's 4 KiB (shorter, straddling it, the head and
    /// tail overlapping, past a whole frame), though a keep reads each byte once.
    #[test]
    fn every_records_prints_are_the_originals_bytes_at_its_end() {
        let (_d, archive, original) = setup();
        let p = PRINT as usize;
        let sizes = [
            1,
            10,
            p - 12,
            5,
            30,
            p,
            1,
            p + 3,
            2 * p - 1,
            7,
            FRAME_BYTES + p + 5,
            3,
            p / 2,
        ];
        let mut whole: Vec<u8> = Vec::new();
        for (i, n) in sizes.into_iter().enumerate() {
            let chunk: Vec<u8> = (0..n)
                .map(|j| b'a' + ((i * 7 + j * 13) % 26) as u8)
                .collect();
            let mut f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&original)
                .unwrap();
            f.write_all(&chunk).unwrap();
            whole.extend_from_slice(&chunk);
            archive.keep(&original, None).unwrap();
        }
        let e = archive.entry(&original);
        let gens = e.generations().unwrap();
        assert_eq!(gens.len(), 1);
        let bytes = std::fs::read(&gens[0].path).unwrap();
        let s = scan(&bytes, &mut |_| {});
        assert!(s.problem.is_none());
        assert_eq!(
            s.records.len(),
            sizes.len() + 1,
            "the big append is two frames"
        );
        for r in &s.records {
            let end = r.end() as usize;
            let span = end.min(p);
            assert_eq!(r.head, sha(&whole[..span]), "head at {end}");
            assert_eq!(r.tail, sha(&whole[end - span..end]), "tail at {end}");
            assert_eq!(r.sha, sha(&whole[r.start as usize..end]), "frame at {end}");
        }
        assert_eq!(e.read_newest().unwrap().unwrap(), whole);
    }

    #[test]
    fn a_cut_or_rewritten_file_starts_a_generation_and_keeps_the_old() {
        let (_d, archive, original) = setup();
        std::fs::write(&original, "one\ntwo\nthree\n").unwrap();
        archive.keep(&original, None).unwrap();
        std::fs::write(&original, "one\n").unwrap();
        assert!(archive.keep(&original, None).unwrap().new_generation);
        std::fs::write(&original, "ONE\nand more than before\n").unwrap();
        assert!(archive.keep(&original, None).unwrap().new_generation);
        let e = archive.entry(&original);
        let gens = e.generations().unwrap();
        let texts: Vec<Vec<u8>> = gens.iter().map(|g| e.read(g).unwrap()).collect();
        assert_eq!(
            texts,
            [
                &b"one\ntwo\nthree\n"[..],
                b"one\n",
                b"ONE\nand more than before\n"
            ]
        );
    }

    #[test]
    fn a_torn_end_is_cut_and_nothing_before_it_is_lost() {
        let (_d, archive, original) = setup();
        std::fs::write(&original, "first\n").unwrap();
        archive.keep(&original, None).unwrap();
        let g = archive.entry(&original).generations().unwrap()[0]
            .path
            .clone();
        let before = std::fs::read(&g).unwrap();
        // A killed write: half a frame at the end.
        let mut torn = zstd::bulk::compress(b"second\n", 3).unwrap();
        torn.truncate(torn.len() / 2);
        OpenOptions::new()
            .append(true)
            .open(&g)
            .unwrap()
            .write_all(&torn)
            .unwrap();
        let problems = archive.entry(&original).verify(false).unwrap();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].torn && !problems[0].repaired);
        append(&original, "second\n");
        let k = archive.keep(&original, None).unwrap();
        assert!(k.repaired);
        assert_eq!(&std::fs::read(&g).unwrap()[..before.len()], &before[..]);
        assert_eq!(
            archive.entry(&original).read_newest().unwrap().unwrap(),
            b"first\nsecond\n"
        );
    }

    #[test]
    fn damage_inside_is_named_and_never_cut() {
        let (_d, archive, original) = setup();
        std::fs::write(&original, "a\n").unwrap();
        archive.keep(&original, None).unwrap();
        append(&original, "b\n");
        archive.keep(&original, None).unwrap();
        let g = archive.entry(&original).generations().unwrap()[0]
            .path
            .clone();
        let mut bytes = std::fs::read(&g).unwrap();
        bytes[RECORD_LEN + 20] ^= 0xff; // inside the first record's payload hashes
        std::fs::write(&g, &bytes).unwrap();
        let problems = archive.entry(&original).verify(true).unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(!problems[0].torn && !problems[0].repaired);
        assert_eq!(std::fs::read(&g).unwrap(), bytes);
        assert!(archive.entry(&original).read_newest().is_err());
    }

    #[test]
    fn a_restore_never_writes_over_a_file() {
        let (d, archive, original) = setup();
        std::fs::write(&original, "kept\n").unwrap();
        archive.keep(&original, None).unwrap();
        let e = archive.entry(&original);
        let to = d.path().join("restored/s1.jsonl");
        let r = e.restore_to(&to, false).unwrap();
        assert_eq!((r.written.len(), r.bytes), (1, 5));
        assert_eq!(std::fs::read(&to).unwrap(), b"kept\n");
        std::fs::write(&to, "other\n").unwrap();
        let r = e.restore_to(&to, false).unwrap();
        assert_eq!(r.kept, std::slice::from_ref(&to));
        assert_eq!(std::fs::read(&to).unwrap(), b"other\n");
    }
}
