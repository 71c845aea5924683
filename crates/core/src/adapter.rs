//! The adapter trait: one framed line in, zero or more [`Entry`] values out.
//!
//! Adapters are push-model: [`Adapter::decode`] hands each entry to an [`EntrySink`]
//! instead of returning a collection, so no `Vec` is built per line and entries can
//! borrow from the line. Format detection is separate ([`AdapterFactory::sniff`]), and
//! so are framing ([`Framing`]: lines, one document per file, or the records of a container of sessions) and the agent's
//! on-disk [`Layout`] (its default folders, which files it claims, a file's scope-log
//! key, a sub-agent's parent, a fork's source), so a third-party crate adds a format by
//! implementing these traits and registering its factory in an [`AdapterRegistry`] —
//! no existing crate changes. What the rest of transcope needs to know of the agent
//! (its token usage shape, its hook wiring, its pricing provider) the factory declares
//! too ([`crate::agent`]).
//!
//! ```
//! use transcope_core::adapter::*;
//! use transcope_core::entry::{Entry, EntryKind, LinePos};
//!
//! /// A toy format: each line is `<cwd>`.
//! struct Toy;
//! impl Adapter for Toy {
//!     fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
//!         let cwd = std::str::from_utf8(line).map_err(|_| Skip::InvalidUtf8)?;
//!         let e = Entry { kind: Some(EntryKind::Other), cwd: Some(cwd.into()), offset: pos.offset, line: pos.line, ..Entry::default() };
//!         sink.entry(&e);
//!         Ok(())
//!     }
//! }
//! let mut seen = Vec::new();
//! Toy.decode(b"/work", LinePos::default(), &mut from_fn(|e: &Entry<'_>| seen.push(e.cwd.as_deref().unwrap().to_owned()))).unwrap();
//! assert_eq!(seen, ["/work"]);
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agent::{AgentInfo, Hooks, McpServers};
use crate::entry::{Entry, LinePos};
use crate::head::Head;
use crate::records::{RecordError, RecordSource};

/// Receives decoded entries.
pub trait EntrySink {
    /// One entry; it may borrow from the line being decoded.
    fn entry(&mut self, entry: &Entry<'_>);

    /// Whether an entry that looks like `probe` could matter to this sink. An adapter
    /// that can tell a line's kind, folder and branch cheaply — and is certain of them —
    /// may skip decoding a line no sink wants. The default wants everything.
    fn wants(&self, probe: &Probe<'_>) -> bool {
        let _ = probe;
        true
    }
}

/// What an adapter can tell about a line before decoding it (see
/// [`EntrySink::wants`]): exactly the kind, folder and branch the full decode gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe<'a> {
    /// The entry kind.
    pub kind: Option<crate::entry::EntryKind>,
    /// The folder (`None` when missing or empty).
    pub cwd: Option<&'a str>,
    /// The branch (`None` when missing or falsy).
    pub branch: Option<&'a str>,
    /// The entry may carry marker-eligible text ([`Entry::texts`]).
    pub text: bool,
    /// The entry may carry token usage ([`Entry::usage`]).
    pub usage: bool,
    /// The line itself, for [`Probe::opens_marker`] (asked only by a marker stage).
    pub line: &'a [u8],
    /// [`Probe::opens_marker`]'s answer for `line`, searched at most once however many
    /// probes of the line its sink is asked about (an adapter may ask four times: with
    /// and without its usage, before and after reading its folder). One per line,
    /// held by the adapter while it decodes the line.
    pub searched: &'a std::cell::OnceCell<bool>,
}

impl Probe<'_> {
    /// The entry may carry marker text holding a marker's `<!--` (see
    /// [`may_open_marker`]); `false` only when no decoded string of it can contain one.
    /// Searched on demand: a run without markers never pays for it.
    pub fn opens_marker(&self) -> bool {
        self.text && *self.searched.get_or_init(|| may_open_marker(self.line))
    }
}

/// Whether a raw JSON line may decode to text containing `<!--`: it has `<!--`
/// literally, or a `\u` escape of `<`, `!` or `-` (JSON may escape any of them). A cheap
/// over-approximation (one or two substring searches), exact in the direction that
/// matters: `false` means no string in the line contains `<!--`.
pub fn may_open_marker(line: &[u8]) -> bool {
    use std::sync::LazyLock;
    // Built once: a searcher per call cost as much as the search on short lines.
    static OPEN: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"<!--"));
    static ESCAPE: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\\u00"));
    if OPEN.find(line).is_some() {
        return true;
    }
    ESCAPE.find_iter(line).any(|i| {
        matches!(
            line.get(i + 4..i + 6),
            Some(b"3c" | b"3C" | b"21" | b"2d" | b"2D")
        )
    })
}

/// A closure as an [`EntrySink`] that wants everything ([`from_fn`]).
#[derive(Clone, Copy, Debug)]
pub struct FromFn<F>(pub F);

/// Wrap a closure as an [`EntrySink`].
pub fn from_fn<F: FnMut(&Entry<'_>)>(f: F) -> FromFn<F> {
    FromFn(f)
}

impl<F: FnMut(&Entry<'_>)> EntrySink for FromFn<F> {
    fn entry(&mut self, entry: &Entry<'_>) {
        (self.0)(entry)
    }
}

/// Why a line produced no entry. Skips are counted, never fatal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Skip {
    /// An empty or whitespace-only line.
    Blank,
    /// Not UTF-8.
    InvalidUtf8,
    /// Not valid JSON.
    InvalidJson,
    /// Valid JSON, but not an object.
    NotObject,
    /// A known record whose fields have the wrong types.
    WrongType,
    /// A record this adapter does not model (state markers and the like).
    Ignored,
}

impl Skip {
    /// A short name for counters.
    pub const fn as_str(self) -> &'static str {
        match self {
            Skip::Blank => "blank",
            Skip::InvalidUtf8 => "invalid_utf8",
            Skip::InvalidJson => "invalid_json",
            Skip::NotObject => "not_object",
            Skip::WrongType => "wrong_type",
            Skip::Ignored => "ignored",
        }
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Decodes the records of one transcript format. An adapter may keep state across the
/// records of one file (e.g. a legacy header's time); [`Adapter::open`] starts a file.
///
/// **Resumed reads.** The engine reads a line-framed file in appended pieces: a later
/// read builds a fresh adapter, calls [`Adapter::open`], shows it the file's first
/// record again (its entries dropped), then [`Adapter::restore`]s the
/// [`Adapter::checkpoint`] the earlier read left in the cursor, and goes on from the
/// cursor. An adapter whose state is all in the first record needs no checkpoint; one
/// that learns from later records (a Gemini log's message table) must checkpoint it,
/// or a read in pieces gives other entries than one pass.
pub trait Adapter: Send {
    /// Decode one record and push its entries to `sink`: a line without its terminator
    /// ([`Framing::Lines`]), or the whole file ([`Framing::Document`]).
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip>;

    /// A file is about to be decoded (before any record of it): forget the last
    /// file's state, and look beside `path` if the format keeps facts there (a
    /// project-root record, say). The default forgets nothing.
    fn open(&mut self, path: &Path) {
        let _ = path;
    }

    /// Forget per-file state.
    fn reset(&mut self) {}

    /// The per-file state a later read of the same file resumes from, stored in the
    /// transcript's cursor beside the stages' checkpoints (see the trait docs). `Null`,
    /// the default, is "no state".
    fn checkpoint(&self) -> Value {
        Value::Null
    }

    /// Resume from a [`Adapter::checkpoint`] (after [`Adapter::open`] and the first
    /// record shown again, before the records after the cursor); `false` when the value
    /// is not one this adapter wrote (the engine then reads the file from its start).
    fn restore(&mut self, checkpoint: &Value) -> bool {
        checkpoint.is_null()
    }
}

impl<A: Adapter + ?Sized> Adapter for Box<A> {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        (**self).decode(line, pos, sink)
    }
    fn open(&mut self, path: &Path) {
        (**self).open(path)
    }
    fn reset(&mut self) {
        (**self).reset()
    }
    fn checkpoint(&self) -> Value {
        (**self).checkpoint()
    }
    fn restore(&mut self, checkpoint: &Value) -> bool {
        (**self).restore(checkpoint)
    }
}

/// How a format's files are cut into records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Framing {
    /// JSON Lines: one record a line, appended; read incrementally from a byte offset.
    #[default]
    Lines,
    /// One JSON document per file, rewritten as the session grows: decoded whole, and
    /// a later read skips the entries an earlier read already gave.
    Document,
    /// A container of many sessions' records (a database, a tree of documents), read
    /// through the [`RecordSource`](crate::records::RecordSource) the factory opens
    /// ([`AdapterFactory::records`]): one session at a time, each record's JSON
    /// decoded like a line, resumed from an ordinal, "nothing new" told by a change
    /// marker ([`crate::records`]).
    Records,
}

/// Where an agent keeps its transcripts, and how a file maps to a session: the
/// knowledge a batch needs to find and name transcripts, owned by the adapter.
pub trait Layout: Send + Sync {
    /// The folders this agent writes transcripts under, from its environment
    /// (`lookup` reads a variable; `home` is the user's home folder).
    fn default_roots(&self, lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> Vec<PathBuf>;

    /// Whether `path`, found in a folder walk, is one of this agent's transcripts
    /// (by its name and place alone: no read).
    fn claims(&self, path: &Path) -> bool;

    /// Whether `path` sits where this agent keeps transcripts but is none (an index
    /// or ledger the agent writes beside them): no layout claims it, however broad
    /// its rule (by name and place alone: no read). The default disowns nothing.
    fn disowns(&self, path: &Path) -> bool {
        let _ = path;
        false
    }

    /// The scope-log key of the session that wrote the file `head` is of (reading as
    /// little of it as needed, through `head`, which every layout asked about the file
    /// shares), or why there is none — with how sure this layout is that the file is
    /// its own; `None` when it is not. The most confident layout names the file, the
    /// earliest registered on a tie ([`AdapterRegistry::scope_key`]).
    fn key_of(&self, head: &Head<'_>) -> Option<(Confidence, Result<String, String>)>;

    /// [`Layout::key_of`] the file at `path`, asked of this layout alone.
    fn scope_key(&self, path: &Path) -> Option<(Confidence, Result<String, String>)> {
        self.key_of(&Head::new(path))
    }

    /// The transcript of session `id` under `root` (one of
    /// [`Layout::default_roots`]), for a hook whose payload names the session but not
    /// its file ([`HookPayload::SessionId`](crate::agent::HookPayload::SessionId)):
    /// `Ok(Some)` only for a file whose own records name that session, `Ok(None)` when
    /// there is none (or it names no session yet), `Err` saying why a file found there
    /// is refused (it names another session). A guess is checked, never trusted. The
    /// default finds nothing.
    fn session_file(&self, root: &Path, id: &str) -> Result<Option<PathBuf>, String> {
        let _ = (root, id);
        Ok(None)
    }

    /// The root session's key of a sub-agent's `key`, else `None`.
    fn parent(&self, key: &str) -> Option<String> {
        let _ = key;
        None
    }

    /// The key of the session the file's session was made from when its head says so
    /// and its key does not (a Codex fork's source, a Codex sub-agent's parent thread),
    /// read through `head` as far as naming the file read it; else `None`, the default.
    /// One step only: the source's own source is in the source's file.
    fn origin(&self, head: &Head<'_>) -> Option<String> {
        let _ = head;
        None
    }
}

/// How sure a factory is that a file is its format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confidence {
    /// The default when nothing more specific claims the file.
    Fallback,
    /// The first line is this format's.
    Certain,
}

/// Builds adapters and recognises their format.
pub trait AdapterFactory: Send + Sync {
    /// A short stable name (`claude`, `codex`, …).
    fn name(&self) -> &'static str;
    /// Whether the file at `path` whose first non-empty line is `first_line` is this
    /// format (a pretty-printed document's first line is just `{`: sniff the path too).
    fn sniff(&self, path: &Path, first_line: &[u8]) -> Option<Confidence>;
    /// How the file at `path` is cut into records.
    fn framing(&self, path: &Path) -> Framing {
        let _ = path;
        Framing::Lines
    }
    /// The container at `path` opened as a record source, for a format framed as
    /// [`Framing::Records`] there; the default has none.
    fn records(&self, path: &Path) -> Result<Box<dyn RecordSource>, RecordError> {
        Err(RecordError::new(format!(
            "{}: the {} format keeps no records there",
            path.display(),
            self.name()
        )))
    }
    /// Where this agent keeps its files and how they name sessions, when it has a
    /// layout a batch can walk.
    fn layout(&self) -> Option<&dyn Layout> {
        None
    }
    /// A fresh adapter for one file (or one thread, reset per file).
    fn build(&self) -> Box<dyn Adapter>;
    /// What the rest of transcope needs to know of this agent beyond its format: its
    /// token usage shape, its hook wiring, its pricing provider ([`crate::agent`]).
    /// The default declares nothing (requests keyed by message id, no hooks, no
    /// provider).
    fn agent(&self) -> AgentInfo {
        AgentInfo::default()
    }
}

/// An ordered set of adapter factories; detection picks the most confident, the
/// earliest registered on a tie.
#[derive(Default)]
pub struct AdapterRegistry {
    factories: Vec<Box<dyn AdapterFactory>>,
}

impl AdapterRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a factory.
    pub fn register(&mut self, f: Box<dyn AdapterFactory>) -> &mut Self {
        self.factories.push(f);
        self
    }

    /// The same registry without the factory named `name` (what the others decide
    /// without it), the rest in their order.
    pub fn without(mut self, name: &str) -> Self {
        self.factories.retain(|f| f.name() != name);
        self
    }

    /// The factory for the file at `path` whose first non-empty line is `first_line`.
    pub fn detect(&self, path: &Path, first_line: &[u8]) -> Option<&dyn AdapterFactory> {
        let mut best: Option<(Confidence, &dyn AdapterFactory)> = None;
        for f in &self.factories {
            if let Some(c) = f.sniff(path, first_line) {
                // Nothing outranks a certain answer, and the earliest wins a tie: the
                // factories after it need not be asked.
                if c == Confidence::Certain {
                    return Some(f.as_ref());
                }
                if best.as_ref().is_none_or(|(b, _)| c > *b) {
                    best = Some((c, f.as_ref()));
                }
            }
        }
        best.map(|(_, f)| f)
    }

    /// The registered factories, in order.
    pub fn factories(&self) -> impl Iterator<Item = &dyn AdapterFactory> {
        self.factories.iter().map(|f| f.as_ref())
    }

    /// The layouts of the registered factories that have one, in order.
    pub fn layouts(&self) -> impl Iterator<Item = (&'static str, &dyn Layout)> {
        self.factories
            .iter()
            .filter_map(|f| Some((f.name(), f.layout()?)))
    }

    /// The factory whose layout claims `path` (the first registered on a tie); `None`
    /// when a layout disowns it ([`Layout::disowns`]).
    pub fn claiming(&self, path: &Path) -> Option<&dyn AdapterFactory> {
        if self.layouts().any(|(_, l)| l.disowns(path)) {
            return None;
        }
        self.factories()
            .find(|f| f.layout().is_some_and(|l| l.claims(path)))
    }

    /// The scope-log key of `path` by the most confident layout (the earliest
    /// registered on a tie), with that layout's factory name; `None` when no layout
    /// knows the file.
    pub fn scope_key(&self, path: &Path) -> Option<(&'static str, Result<String, String>)> {
        // One read of the file's head, whichever layouts look at it.
        self.scope_key_of(&Head::new(path))
    }

    /// [`AdapterRegistry::scope_key`] of the file whose head is `head` (read as far as
    /// the layouts ask, once: a reader can go on from it, [`Head::into_parts`]).
    pub fn scope_key_of(&self, head: &Head<'_>) -> Option<(&'static str, Result<String, String>)> {
        let mut best: Option<(Confidence, &'static str, Result<String, String>)> = None;
        for (name, layout) in self.layouts() {
            if let Some((c, key)) = layout.key_of(head) {
                // As in `detect`: the first certain answer is the answer.
                if c == Confidence::Certain {
                    return Some((name, key));
                }
                if best.as_ref().is_none_or(|(b, _, _)| c > *b) {
                    best = Some((c, name, key));
                }
            }
        }
        best.map(|(_, name, key)| (name, key))
    }

    /// The key of the root session of the family that `key`, named from `head` by the
    /// layout of the factory called `name`, belongs to: its parent
    /// ([`Layout::parent`]), else the session it was made from ([`Layout::origin`]),
    /// else `key` itself. A batch split into shards keeps a family together by it.
    pub fn root_of(&self, name: &str, key: &str, head: &Head<'_>) -> String {
        let layout = self.by_name(name).and_then(AdapterFactory::layout);
        layout
            .and_then(|l| l.parent(key).or_else(|| l.origin(head)))
            .unwrap_or_else(|| key.to_owned())
    }

    /// The registered agents whose hooks can be wired, in order, with their wiring.
    pub fn hooks(&self) -> impl Iterator<Item = (&'static str, Hooks)> + '_ {
        self.factories()
            .filter_map(|f| Some((f.name(), f.agent().hooks?)))
    }

    /// The registered agents that start MCP servers, in order, with how they do.
    pub fn mcp_servers(&self) -> impl Iterator<Item = (&'static str, McpServers)> + '_ {
        self.factories()
            .filter_map(|f| Some((f.name(), f.agent().mcp?)))
    }

    /// The pricing providers the registered agents declare, in order, each once.
    pub fn pricing_providers(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for p in self.factories().filter_map(|f| f.agent().pricing) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// The factory registered under `name`.
    pub fn by_name(&self, name: &str) -> Option<&dyn AdapterFactory> {
        self.factories
            .iter()
            .find(|f| f.name() == name)
            .map(|f| f.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::EntryKind;
    use std::cell::OnceCell;

    /// The marker search of a line is made on demand, once, and every probe of the
    /// line answers from it (an adapter asks with and without its usage, before and
    /// after reading its folder).
    #[test]
    fn a_lines_marker_search_is_made_once_for_all_its_probes() {
        let line =
            br#"{"type":"assistant","message":{"content":"a <!-- @lesson -->x<!-- @/lesson -->"}}"#;
        let searched = OnceCell::new();
        let p = Probe {
            kind: Some(EntryKind::Assistant),
            cwd: None,
            branch: None,
            text: true,
            usage: true,
            line,
            searched: &searched,
        };
        assert_eq!(searched.get(), None, "not searched before it is asked");
        assert!(p.opens_marker());
        assert_eq!(searched.get(), Some(&true));
        let again = Probe { usage: false, ..p };
        assert!(again.opens_marker());
        // The answer is the search's, whatever the line: a search that found nothing
        // answers for every probe of its line.
        let nothing = OnceCell::from(false);
        assert!(!Probe {
            searched: &nothing,
            ..p
        }
        .opens_marker());
        // A probe of a line without marker text never searches.
        let unsearched = OnceCell::new();
        let user = Probe {
            text: false,
            searched: &unsearched,
            ..p
        };
        assert!(!user.opens_marker());
        assert_eq!(unsearched.get(), None);
    }
}
