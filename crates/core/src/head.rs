//! A file's head, read once for every layout that asks about it.
//!
//! Naming a transcript's session asks each registered [`Layout`](crate::adapter::Layout)
//! in turn, and several read the file's first line to answer (Codex's `session_meta`,
//! Gemini CLI's metadata line). Each reading the head itself cost a backfill one
//! open and read per layout per file; a [`Head`] reads as far as the furthest question
//! needs, once, and answers every layout from the same bytes.
//!
//! ```
//! use transcope_core::head::Head;
//!
//! let path = std::env::temp_dir().join(format!("tc-core-head-{}.jsonl", std::process::id()));
//! std::fs::write(&path, b"a\nbb\nccc\n").unwrap();
//! let head = Head::new(&path);
//! let long = |l: &[u8]| (l.len() > 1).then(|| l.to_vec());
//! assert_eq!(head.find_line(1024, long).as_deref(), Some(&b"bb"[..]));
//! // Nothing past the limit is considered: "b" (cut short) is the last line seen.
//! assert_eq!(head.find_line(3, long), None);
//! std::fs::remove_file(&path).unwrap();
//! ```

use std::cell::RefCell;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// How much is read at a time.
const CHUNK: usize = 16 * 1024;

/// The head of the file at a path, read lazily and at most once (see the module docs).
pub struct Head<'a> {
    path: &'a Path,
    state: RefCell<State>,
}

struct State {
    /// `None`: not opened yet; `Some(None)`: could not be opened.
    file: Option<Option<File>>,
    /// The end of the file was reached (or it could not be read further).
    ended: bool,
    /// The bytes read so far, from offset 0.
    bytes: Vec<u8>,
}

impl<'a> Head<'a> {
    /// The head of `path` (nothing is read until asked).
    pub fn new(path: &'a Path) -> Head<'a> {
        Head {
            path,
            state: RefCell::new(State {
                file: None,
                ended: false,
                bytes: Vec::new(),
            }),
        }
    }

    /// The head of `path` read from `file`, already open on it at offset 0 (opened by
    /// the caller's rules: never blocking, a regular file only).
    pub fn with_file(path: &'a Path, file: File) -> Head<'a> {
        let head = Head::new(path);
        head.state.borrow_mut().file = Some(Some(file));
        head
    }

    /// The head of `path` known not to open (no lines): the caller tried.
    pub fn unopened(path: &'a Path) -> Head<'a> {
        let head = Head::new(path);
        head.state.borrow_mut().file = Some(None);
        head
    }

    /// The open file (`None` when it was never opened or could not be) and the bytes
    /// read from its start: a reader of the whole file goes on from here instead of
    /// opening and reading its head again. The file's position is past those bytes.
    pub fn into_parts(self) -> (Option<File>, Vec<u8>) {
        let st = self.state.into_inner();
        (st.file.flatten(), st.bytes)
    }

    /// The file.
    pub fn path(&self) -> &'a Path {
        self.path
    }

    /// The first `Some` that `f` gives for the lines (without their `\n`; the last may
    /// be cut short) of the file's first `limit` bytes. The file is read only as far as
    /// the line that answers (bytes read for an earlier question are not read again);
    /// a file that cannot be opened has no lines.
    pub fn find_line<T>(&self, limit: u64, mut f: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut start = 0;
        loop {
            let mut st = self.state.borrow_mut();
            let end = st.bytes.len().min(limit);
            if let Some(nl) = memchr::memchr(b'\n', &st.bytes[start..end]) {
                let line = &st.bytes[start..start + nl];
                if let Some(found) = f(line) {
                    return Some(found);
                }
                start += nl + 1;
                continue;
            }
            if end >= limit || !st.fill(self.path, limit) {
                // The limit or the end of the file: what is left is a last line.
                let end = st.bytes.len().min(limit);
                return (start < end).then(|| f(&st.bytes[start..end])).flatten();
            }
        }
    }
}

impl Head<'_> {
    /// `f` of the file's first `limit` bytes, read as far as that once (bytes read for
    /// an earlier question are not read again), and whether they are the whole file
    /// (it ended before `limit`). A file that cannot be opened is no bytes, not whole.
    pub fn prefix<T>(&self, limit: u64, f: impl FnOnce(&[u8], bool) -> T) -> T {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut st = self.state.borrow_mut();
        while st.bytes.len() < limit && st.fill(self.path, limit) {}
        let end = st.bytes.len().min(limit);
        let whole = st.ended && end == st.bytes.len();
        f(&st.bytes[..end], whole)
    }
}

impl State {
    /// Read one more chunk (never past `limit`); `false` at the end of the file or when
    /// it cannot be read.
    fn fill(&mut self, path: &Path, limit: usize) -> bool {
        if self.ended {
            return false;
        }
        let file = self.file.get_or_insert_with(|| File::open(path).ok());
        let Some(file) = file else {
            return false;
        };
        let want = CHUNK.min(limit.saturating_sub(self.bytes.len()));
        let at = self.bytes.len();
        self.bytes.resize(at + want, 0);
        let n = loop {
            match file.read(&mut self.bytes[at..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(n) => break n,
                Err(_) => break 0,
            }
        };
        self.bytes.truncate(at + n);
        self.ended = n == 0;
        n > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("h.jsonl");
        std::fs::write(&p, bytes).unwrap();
        (d, p)
    }

    #[test]
    fn lines_across_chunks_and_questions_are_read_once() {
        let long = "x".repeat(CHUNK * 2 + 5);
        let (_d, p) = file(format!("a\n{long}\nlast").as_bytes());
        let head = Head::new(&p);
        let want = |n: usize| move |l: &[u8]| (l.len() == n).then(|| l.to_vec());
        assert_eq!(
            head.find_line(1 << 20, want(long.len())).unwrap().len(),
            long.len()
        );
        let read = head.state.borrow().bytes.len();
        // A second question over lines already read reads nothing more.
        assert_eq!(head.find_line(1 << 20, want(1)).as_deref(), Some(&b"a"[..]));
        assert_eq!(head.state.borrow().bytes.len(), read);
        // The unterminated last line, then nothing.
        assert_eq!(
            head.find_line(1 << 20, want(4)).as_deref(),
            Some(&b"last"[..])
        );
        assert_eq!(head.find_line(1 << 20, |_| None::<()>), None);
    }

    #[test]
    fn a_prefix_is_read_once_and_says_whether_it_is_the_whole_file() {
        let long = "y".repeat(CHUNK * 3);
        let (_d, p) = file(long.as_bytes());
        let head = Head::new(&p);
        assert_eq!(head.prefix(10, |b, whole| (b.len(), whole)), (10, false));
        // Lines asked for next come from the same bytes, read on as far as needed.
        let line = head.find_line(1 << 20, |l| Some(l.len()));
        assert_eq!(line, Some(long.len()));
        let read = head.state.borrow().bytes.len();
        assert_eq!(
            head.prefix(1 << 20, |b, whole| (b.len(), whole)),
            (long.len(), true)
        );
        assert_eq!(head.state.borrow().bytes.len(), read);
        let missing = Head::new(std::path::Path::new("/nonexistent/transcope/h"));
        assert_eq!(missing.prefix(10, |b, whole| (b.len(), whole)), (0, false));
    }

    #[test]
    fn a_limit_cuts_the_last_line_short_and_a_missing_file_has_none() {
        let (_d, p) = file(b"abcdef\n");
        let head = Head::new(&p);
        assert_eq!(
            head.find_line(3, |l| Some(l.to_vec())).as_deref(),
            Some(&b"abc"[..])
        );
        assert_eq!(
            head.find_line(100, |l| Some(l.to_vec())).as_deref(),
            Some(&b"abcdef"[..])
        );
        let gone = Head::new(Path::new("/nonexistent/transcope/head"));
        assert_eq!(gone.find_line(100, |l| Some(l.to_vec())), None);
        assert!(gone.into_parts().0.is_none());
    }

    #[test]
    fn the_open_file_and_its_bytes_are_handed_on() {
        use std::io::Read;
        let long = "y".repeat(CHUNK + 10);
        let (_d, p) = file(format!("first\n{long}\nthird\n").as_bytes());
        let head = Head::with_file(&p, File::open(&p).unwrap());
        assert_eq!(
            head.find_line(1 << 20, |l| (l == b"first").then_some(())),
            Some(())
        );
        let (file, bytes) = head.into_parts();
        let mut rest = Vec::new();
        file.unwrap().read_to_end(&mut rest).unwrap();
        // What was read and what is left are the file, once.
        assert_eq!([bytes, rest].concat(), std::fs::read(&p).unwrap());
        // Read to its end, the file is still handed on.
        let head = Head::with_file(&p, File::open(&p).unwrap());
        assert_eq!(head.find_line(1 << 20, |_| None::<()>), None);
        let (file, bytes) = head.into_parts();
        assert!(file.is_some());
        assert_eq!(bytes, std::fs::read(&p).unwrap());
    }
}
