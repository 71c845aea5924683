//! Finding archived transcripts and the scope-log key of each (cli.md, Batch).
//!
//! Which files are transcripts, and the scope-log key of each, are the adapters'
//! knowledge (their [`Layout`](transcope_core::adapter::Layout)s): the walk keeps the
//! files some registered layout claims, and [`scope_key`] asks the layouts; [`family`]
//! adds the root of the file's family, which a [`Shard`] goes by.
//!
//! A container of many sessions' records (a database: its format framed as
//! [`Framing::Records`]) is one file but many reads: the walk opens it as its factory's
//! record source and yields one [`Job`] per session it holds, each named already
//! ([`Job::session`]: its key and its family's root), so the reads of one database are
//! spread over the workers and a shard keeps a family together like any other. A
//! container that cannot be listed (locked past the wait, damaged) is one `Err`: the
//! run reports it and goes on.

use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};

use transcope_core::adapter::{AdapterFactory, AdapterRegistry, Framing};
use transcope_core::head::Head;
use transcope_core::records::Held;
use transcope_engine::Handoff;

use crate::Shard;

/// One transcript to process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The file.
    pub path: PathBuf,
    /// Its size when discovered.
    pub size: u64,
    /// Its modification time (seconds since the epoch), for the mmap policy.
    pub modified: u64,
    /// Its modification time in nanoseconds and its inode, to tell it unchanged
    /// since a listing ([`Job::stamp`]).
    pub stamp: (i128, u64),
    /// The one session of a container of records this job reads (its key and its
    /// family's root), named when the walk listed the container; `None` for a
    /// transcript file, named from its head.
    pub session: Option<Held>,
}

impl Job {
    /// What tells the file unchanged since it was listed: size, modification time
    /// (nanoseconds) and inode.
    pub fn stamp(&self) -> (u64, i128, u64) {
        (self.size, self.stamp.0, self.stamp.1)
    }
}

/// A file or folder that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The path.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// Every transcript under `paths` that a layout of `registry` claims (a path may also
/// be a single file), sorted. Symbolic links to folders are not followed (no loops);
/// unreadable folders are reported and skipped. [`walk`] collected.
pub fn discover(paths: &[PathBuf], registry: &AdapterRegistry) -> (Vec<Job>, Vec<Problem>) {
    let mut jobs = Vec::new();
    let mut problems = Vec::new();
    for item in walk(paths, registry) {
        match item {
            Ok(j) => jobs.push(j),
            Err(p) => problems.push(p),
        }
    }
    (jobs, problems)
}

/// The transcripts under `paths`, one at a time in path order, each once: a streaming
/// [`discover`]. Memory is the folders being listed (each one's entries, sorted), not
/// the archive: a backfill of any size holds no list of its files.
///
/// A path inside (or equal to) a folder given before it in path order is skipped (its
/// files are that folder's); a path that cannot be read is one `Err`.
pub fn walk<'r>(paths: &[PathBuf], registry: &'r AdapterRegistry) -> Walk<'r> {
    let mut roots = paths.to_vec();
    roots.sort();
    roots.dedup();
    Walk {
        registry,
        roots: roots.into_iter(),
        folders: Vec::new(),
        stack: Vec::new(),
        expanded: VecDeque::new(),
    }
}

/// The iterator of [`walk`].
pub struct Walk<'r> {
    registry: &'r AdapterRegistry,
    roots: std::vec::IntoIter<PathBuf>,
    /// The folders given as roots so far (later roots inside them are skipped).
    folders: Vec<PathBuf>,
    /// The listings being walked, outermost first; each yields in name order.
    stack: Vec<std::vec::IntoIter<Listed>>,
    /// The sessions of the container listed last, yielded before the walk goes on.
    expanded: VecDeque<Result<Job, Problem>>,
}

/// A folder entry worth yielding or entering.
enum Listed {
    Folder(PathBuf),
    Transcript(PathBuf),
}

/// A folder's sub-folders and the files a layout claims, by name (so a depth-first
/// walk yields paths in sorted order), or why it cannot be listed.
fn list(dir: &Path, registry: &AdapterRegistry) -> Result<Vec<Listed>, Problem> {
    let entries = fs::read_dir(dir).map_err(|e| Problem {
        path: dir.to_path_buf(),
        reason: e.to_string(),
    })?;
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() {
            out.push(Listed::Folder(p));
        } else if ft.is_file() && registry.claiming(&p).is_some() {
            out.push(Listed::Transcript(p));
        }
    }
    out.sort_by_cached_key(|l| match l {
        Listed::Folder(p) | Listed::Transcript(p) => p.file_name().map(|n| n.to_owned()),
    });
    Ok(out)
}

impl Iterator for Walk<'_> {
    type Item = Result<Job, Problem>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.expanded.pop_front() {
                return Some(item);
            }
            if let Some(top) = self.stack.last_mut() {
                match top.next() {
                    Some(Listed::Folder(p)) => match list(&p, self.registry) {
                        Ok(entries) => self.stack.push(entries.into_iter()),
                        Err(problem) => return Some(Err(problem)),
                    },
                    Some(Listed::Transcript(p)) => {
                        // Gone or changed since listed: skipped, as a listing race.
                        if let Ok(m) = fs::metadata(&p) {
                            match container(self.registry, &p, false) {
                                Some(f) => self.expanded = sessions(f, job(p, &m)),
                                None => return Some(Ok(job(p, &m))),
                            }
                        }
                    }
                    None => {
                        self.stack.pop();
                    }
                }
                continue;
            }
            let root = self.roots.next()?;
            if self.folders.iter().any(|f| root.starts_with(f)) {
                continue;
            }
            // The type from the metadata, never from opening it: a FIFO's open would
            // wait for a writer.
            match fs::metadata(&root) {
                Ok(m) if m.is_file() => match container(self.registry, &root, true) {
                    Some(f) => self.expanded = sessions(f, job(root, &m)),
                    None => return Some(Ok(job(root, &m))),
                },
                Ok(m) if !m.is_dir() => {
                    return Some(Err(Problem {
                        reason: format!("not a regular file or folder: {}", kind_of(&m)),
                        path: root,
                    }))
                }
                Ok(_) => match list(&root, self.registry) {
                    Ok(entries) => {
                        self.stack.push(entries.into_iter());
                        self.folders.push(root);
                    }
                    Err(problem) => return Some(Err(problem)),
                },
                Err(e) => {
                    return Some(Err(Problem {
                        path: root,
                        reason: e.to_string(),
                    }))
                }
            }
        }
    }
}

/// What a path that is neither a regular file nor a folder is, in a person's words.
fn kind_of(m: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "of another kind"
    }
}

/// The factory whose format is a container of records at `path` ([`Framing::Records`]):
/// the one whose layout claims it, else (`named`: a file given by name, which no layout
/// need claim) the one its head is sniffed as.
fn container<'r>(
    registry: &'r AdapterRegistry,
    path: &Path,
    named: bool,
) -> Option<&'r dyn AdapterFactory> {
    let records = |f: &&dyn AdapterFactory| f.framing(path) == Framing::Records;
    if let Some(f) = registry.claiming(path) {
        return Some(f).filter(records);
    }
    if !named {
        return None;
    }
    let mut head = Vec::with_capacity(512);
    let (file, _) = transcope_jsonl::open_regular(path).ok()?;
    std::io::Read::read_to_end(&mut std::io::Read::take(&file, 512), &mut head).ok()?;
    registry
        .detect(path, transcope_engine::scan::first_line(&head))
        .filter(records)
}

/// One job per session the container `whole` lists, in its order (the container's
/// size shared out among them, for the run's estimate of what is left), or the
/// container's problem.
fn sessions(factory: &dyn AdapterFactory, whole: Job) -> VecDeque<Result<Job, Problem>> {
    let listed = factory
        .records(&whole.path)
        .and_then(|mut source| source.sessions());
    match listed {
        Ok(held) => {
            let n = held.len().max(1) as u64;
            held.into_iter()
                .map(|h| {
                    Ok(Job {
                        size: whole.size / n,
                        session: Some(h),
                        ..whole.clone()
                    })
                })
                .collect()
        }
        Err(e) => VecDeque::from([Err(Problem {
            reason: format!("its sessions could not be listed: {e}"),
            path: whole.path,
        })]),
    }
}

fn job(path: PathBuf, m: &fs::Metadata) -> Job {
    use std::os::unix::fs::MetadataExt;
    let since = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    Job {
        path,
        size: m.len(),
        modified: since.map_or(0, |d| d.as_secs()),
        stamp: (since.map_or(0, |d| d.as_nanos() as i128), m.ino()),
        session: None,
    }
}

/// The scope-log key of `path`, by the most confident of the registered adapters'
/// layouts (each agent's own rules: see its crate), or why there is none.
pub fn scope_key(registry: &AdapterRegistry, path: &Path) -> Result<String, String> {
    named(registry.scope_key(path))
}

/// The scope-log key of `path` and the key of its family's root session
/// ([`AdapterRegistry::root_of`]: a sub-agent's parent, a Codex fork's source, else the
/// key itself), or why it has no key: what a [`Shard`] is chosen by.
pub fn family(registry: &AdapterRegistry, path: &Path) -> Result<(String, String), String> {
    let head = Head::new(path);
    let (name, key) = registry.scope_key_of(&head).ok_or_else(no_adapter)?;
    let key = key?;
    let root = registry.root_of(name, &key, &head);
    Ok((key, root))
}

/// What naming a file for a run found ([`name_opened`]).
pub(crate) enum Named {
    /// Its scope-log key, and the file opened to name it with the bytes read from its
    /// head, for its read to go on from ([`Handoff`]; `None` when it could not be
    /// opened as a regular file, which its read then reports).
    Key(String, Option<Handoff>),
    /// Its family is another shard's: nothing past the head that named it was read.
    OtherShard,
    /// Why it has no key.
    Keyless(String),
}

/// The scope-log key of `job`'s file ([`scope_key`]) when its family is `shard`'s
/// (every file's without a shard). A file without a key goes to shard 0 (its problem is
/// reported once, whatever the number of shards). A container's session is named
/// already ([`Job::session`]), and is not opened here.
pub(crate) fn name_opened(registry: &AdapterRegistry, job: &Job, shard: Option<Shard>) -> Named {
    if let Some(held) = &job.session {
        if shard.is_some_and(|s| !s.is_whole() && !s.takes(&held.root)) {
            return Named::OtherShard;
        }
        return Named::Key(held.key.clone(), None);
    }
    let path = job.path.as_path();
    let (head, size) = match transcope_jsonl::open_regular(path) {
        Ok((file, size)) => (Head::with_file(path, file), size),
        Err(_) => (Head::unopened(path), 0),
    };
    let (name, key) = match registry.scope_key_of(&head) {
        Some((name, Ok(key))) => (name, key),
        _ if shard.is_some_and(|s| s.index != 0) => return Named::OtherShard,
        Some((_, Err(why))) => return Named::Keyless(why),
        None => return Named::Keyless(no_adapter()),
    };
    if let Some(shard) = shard.filter(|s| !s.is_whole()) {
        if !shard.takes(&registry.root_of(name, &key, &head)) {
            return Named::OtherShard;
        }
    }
    let (file, bytes) = head.into_parts();
    Named::Key(key, file.map(|f| Handoff::new((f, size), bytes)))
}

fn named(found: Option<(&'static str, Result<String, String>)>) -> Result<String, String> {
    found.ok_or_else(no_adapter)?.1
}

fn no_adapter() -> String {
    "no registered adapter knows this file".into()
}
