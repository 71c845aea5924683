//! Stages: what runs over the entries of a transcript, and where their outputs go.
//!
//! A [`Stage`] is an [`EntrySink`] with a lifecycle: the engine calls
//! [`Stage::begin`] once per file (with the file's [`FileContext`]), feeds it the
//! file's entries in order, and calls [`Stage::finish`] when the bytes it was given are
//! read. Only [`EntrySink::entry`] and [`Stage::name`] are required; a per-entry
//! function stage needs nothing else (vector's function transform), a stateful one
//! adds [`Stage::checkpoint`] and [`Stage::restore`] (vector's task transform).
//!
//! **Checkpoints make every byte observed once.** After a read the engine asks each
//! stage for its state ([`Stage::checkpoint`], a JSON value) and stores it in the
//! transcript's cursor beside the byte offset; the next read of the same transcript
//! restores it ([`Stage::restore`]) before feeding the appended entries, so a
//! transcript read in any number of appended pieces gives exactly what one pass over
//! the whole file gives.
//!
//! Outputs are pushed, never returned: a stage is built with a [`Sink`] of its output
//! type, and [`Sink`] has impls for `&mut S`, `Box<S>`, `Option<S>` and `Vec<T>` — like
//! tracing's `Layer` for `Option<L>` and `Vec<L>` — so "some, none or many" keeps one
//! static type. [`EntrySink`] has the same impls, so a list of stages is itself one
//! entry sink (`Vec<Box<dyn Stage>>`), and an optional one costs nothing when absent.
//!
//! ```
//! use transcope_core::adapter::EntrySink;
//! use transcope_core::stage::{Sink, Stage};
//! use transcope_core::Entry;
//!
//! /// Counts entries with a folder; its state survives a checkpoint.
//! #[derive(Default)]
//! struct Folders(u64);
//! impl EntrySink for Folders {
//!     fn entry(&mut self, e: &Entry<'_>) {
//!         self.0 += u64::from(e.cwd.is_some());
//!     }
//! }
//! impl Stage for Folders {
//!     fn name(&self) -> &'static str { "folders" }
//!     fn checkpoint(&self) -> serde_json::Value { self.0.into() }
//!     fn restore(&mut self, v: &serde_json::Value) -> bool {
//!         v.as_u64().map(|n| self.0 = n).is_some()
//!     }
//! }
//!
//! let mut stages: Vec<Box<dyn Stage>> = vec![Box::new(Folders::default())];
//! stages.entry(&Entry { cwd: Some("/a".into()), ..Entry::default() });
//! assert_eq!(stages[0].checkpoint(), serde_json::json!(1));
//!
//! let mut out: Vec<u32> = Vec::new();
//! let mut none: Option<Vec<u32>> = None;
//! out.push_item(7);
//! none.push_item(8); // dropped: no sink
//! assert_eq!(out, [7]);
//! ```
//!
//! ## Listing stages: [`StageFactory`] and [`StageRegistry`]
//!
//! A stage is built fresh for every file (the engine restores its checkpoint into it),
//! so what a composition lists is not stages but their factories: a
//! [`StageFactory`] has a name and [`StageFactory::build`], given a [`BuildContext`]
//! — the transcript, its session key and the [`Env`] the run sees, which every
//! composition knows for every file and nothing more. Anything else a stage needs
//! (where it writes, a shared cache) the factory holds from the moment it was listed,
//! and hands to each stage it builds. A [`StageRegistry`] is the ordered list, built
//! once where the binary composes its pipeline (`crates/cli/src/compose.rs`, one line
//! a stage) and carried by the engine's `Pipeline` beside the adapters; the
//! compositions build every listed stage for each file they read and feed it the
//! same entries, in the same pass, under the same cursor as their own stages.
//!
//! The list holds the stages whose results the compositions never read: a listed
//! stage pushes its outputs to the sinks its factory gave it. The two stages whose
//! results *are* the compositions' product — change detection (the transitions it
//! recorded) and markers (handed to the brain writer) — are built by the compositions
//! themselves, by type, so reading their results needs no downcast. So the list
//! starts empty, and a new stage (a token-usage count, a third party's) is one line
//! in the composition and no edit to the compositions.
//!
//! A stage listed after transcripts already have cursors is restored from `Null` at
//! its first read of each ([`Stage::restore`]): accepting it, the stage sees the bytes
//! appended from then on; refusing it, every stage reads the transcript again from
//! its start.
//!
//! ```
//! use std::sync::mpsc;
//! use transcope_core::adapter::EntrySink;
//! use transcope_core::stage::{BuildContext, FileContext, Stage, StageFactory, StageRegistry};
//! use transcope_core::{Entry, Env};
//!
//! /// Counts a file's entries and reports the count when the file is read.
//! struct Count<'a> {
//!     n: u64,
//!     out: &'a mpsc::Sender<u64>,
//! }
//! impl EntrySink for Count<'_> {
//!     fn entry(&mut self, _: &Entry<'_>) { self.n += 1 }
//! }
//! impl Stage for Count<'_> {
//!     fn name(&self) -> &'static str { "count" }
//!     fn finish(&mut self, _: &FileContext<'_>) { let _ = self.out.send(self.n); }
//! }
//! struct CountFactory(mpsc::Sender<u64>);
//! impl StageFactory for CountFactory {
//!     fn name(&self) -> &'static str { "count" }
//!     fn build<'a>(&'a self, _: &BuildContext<'a>) -> Box<dyn Stage + 'a> {
//!         Box::new(Count { n: 0, out: &self.0 })
//!     }
//! }
//!
//! let (tx, rx) = mpsc::channel();
//! let mut listed = StageRegistry::new();
//! listed.register(Box::new(CountFactory(tx)));
//! let env = Env::new();
//! let path = std::path::Path::new("t.jsonl");
//! let mut stages = listed.build(&BuildContext::new(path, Some("s1"), &env));
//! stages.entry(&Entry::default());
//! let file = FileContext { path, key: Some("s1"), adapter: "toy", usage: Default::default(), resumed: false };
//! stages.iter_mut().for_each(|s| s.finish(&file));
//! assert_eq!(rx.try_recv(), Ok(1));
//! ```

use std::any::{Any, TypeId};
use std::path::Path;

use serde_json::Value;

use crate::adapter::{EntrySink, Probe};
use crate::entry::Entry;
use crate::env::Env;

/// Receives a stage's outputs, one at a time.
pub trait Sink<T> {
    /// One output.
    fn push_item(&mut self, item: T);
}

impl<T> Sink<T> for Vec<T> {
    fn push_item(&mut self, item: T) {
        self.push(item);
    }
}

impl<T, S: Sink<T> + ?Sized> Sink<T> for &mut S {
    fn push_item(&mut self, item: T) {
        (**self).push_item(item);
    }
}

impl<T, S: Sink<T> + ?Sized> Sink<T> for Box<S> {
    fn push_item(&mut self, item: T) {
        (**self).push_item(item);
    }
}

impl<T, S: Sink<T>> Sink<T> for Option<S> {
    fn push_item(&mut self, item: T) {
        if let Some(s) = self {
            s.push_item(item);
        }
    }
}

/// What a stage is told about the file it is about to read.
#[derive(Clone, Copy, Debug)]
pub struct FileContext<'a> {
    /// The transcript.
    pub path: &'a Path,
    /// The scope-log key of the session that wrote it (`None`: no session could be
    /// established; a stage records nothing that needs one).
    pub key: Option<&'a str>,
    /// The adapter that decodes it (`claude`, `codex`, `gemini`, …).
    pub adapter: &'static str,
    /// How that adapter's agent carries token usage, as its factory declares it
    /// ([`AdapterFactory::agent`](crate::adapter::AdapterFactory::agent)).
    pub usage: crate::agent::UsageShape,
    /// The read resumes from a cursor (the stage's state was restored).
    pub resumed: bool,
}

/// A stage of the pipeline: an [`EntrySink`] with a name, a lifecycle and a checkpoint.
///
/// Required: [`EntrySink::entry`] (and, to skip decoding what it cannot use,
/// [`EntrySink::wants`]) and [`Stage::name`]. Everything else has a default that suits
/// a stateless stage.
pub trait Stage: EntrySink + Send {
    /// A short stable name: the key of this stage's checkpoint in a cursor.
    fn name(&self) -> &'static str;

    /// A file is about to be read (after [`Stage::restore`] when resuming).
    fn begin(&mut self, file: &FileContext<'_>) {
        let _ = file;
    }

    /// The bytes given are read: make the effects durable (a log's batch, outputs
    /// pushed to the sink). A stage that failed says so in its own report; the engine
    /// then keeps the old cursor (see [`Stage::failed`]).
    fn finish(&mut self, file: &FileContext<'_>) {
        let _ = file;
    }

    /// Whether the last [`Stage::finish`] failed to make its effects durable; the
    /// engine then keeps the old cursor, so the same bytes are read again next time.
    fn failed(&self) -> bool {
        false
    }

    /// About to [`Stage::finish`]: a token of the effects finish will make durable
    /// (the last row it appends, the outputs it hands on), stored in the cursor's
    /// intent so that a read killed before its cursor was saved can tell, next time,
    /// whether they were made ([`Stage::recover`]). `Null`, the default: none.
    fn prepare(&mut self) -> Value {
        Value::Null
    }

    /// A read before this one stored `token` ([`Stage::prepare`]) and was stopped
    /// before its cursor was saved: whether its effects were made (a check, with no
    /// effect of its own). The default: made.
    fn recover(&mut self, token: &Value) -> bool {
        let _ = token;
        true
    }

    /// Every stage found the stopped read's effects made ([`Stage::recover`]), but its
    /// outputs may not have been handed on: push them again (outputs carry
    /// idempotency keys, so a repeat is harmless). The default pushes nothing.
    fn replay(&mut self, token: &Value) {
        let _ = token;
    }

    /// The read is over (after [`Stage::finish`], and only when every stage's effects
    /// were made): put what the composition routes into `found` — a value of the
    /// stage's own output type (the transitions recorded, the markers, the requests'
    /// usage), or [`Facts`] for the index to keep and answer. The default hands on
    /// nothing (a stage whose effects are its own: a log, a sink).
    fn hand_on(&mut self, found: &mut Found) {
        let _ = found;
    }

    /// The state that a later read of the same transcript resumes from (stored in the
    /// cursor). `Null`, the default, is "no state".
    fn checkpoint(&self) -> Value {
        Value::Null
    }

    /// Resume from a [`Stage::checkpoint`]; `false` when the value is not one this
    /// stage wrote (the engine then reads the file from its start).
    fn restore(&mut self, checkpoint: &Value) -> bool {
        checkpoint.is_null()
    }
}

/// A stage (and an entry sink) behind `&mut` or `Box` is one too: every method goes
/// through to the pointee.
macro_rules! through_pointer {
    ($($ptr:ty),*) => {$(
        impl<S: EntrySink + ?Sized> EntrySink for $ptr {
            fn entry(&mut self, e: &Entry<'_>) {
                (**self).entry(e)
            }
            fn wants(&self, p: &Probe<'_>) -> bool {
                (**self).wants(p)
            }
        }

        impl<S: Stage + ?Sized> Stage for $ptr {
            fn name(&self) -> &'static str {
                (**self).name()
            }
            fn begin(&mut self, file: &FileContext<'_>) {
                (**self).begin(file)
            }
            fn finish(&mut self, file: &FileContext<'_>) {
                (**self).finish(file)
            }
            fn failed(&self) -> bool {
                (**self).failed()
            }
            fn prepare(&mut self) -> Value {
                (**self).prepare()
            }
            fn recover(&mut self, token: &Value) -> bool {
                (**self).recover(token)
            }
            fn replay(&mut self, token: &Value) {
                (**self).replay(token)
            }
            fn hand_on(&mut self, found: &mut Found) {
                (**self).hand_on(found)
            }
            fn checkpoint(&self) -> Value {
                (**self).checkpoint()
            }
            fn restore(&mut self, checkpoint: &Value) -> bool {
                (**self).restore(checkpoint)
            }
        }
    )*};
}

through_pointer!(&mut S, Box<S>);

/// `None` wants nothing, so an absent stage never causes a decode.
impl<S: EntrySink> EntrySink for Option<S> {
    fn entry(&mut self, e: &Entry<'_>) {
        if let Some(s) = self {
            s.entry(e)
        }
    }
    fn wants(&self, p: &Probe<'_>) -> bool {
        self.as_ref().is_some_and(|s| s.wants(p))
    }
}

/// A line is decoded when any element wants it, and every element gets the entry
/// ([`EntrySink::wants`] is a filter on decoding, not on delivery).
impl<S: EntrySink> EntrySink for Vec<S> {
    fn entry(&mut self, e: &Entry<'_>) {
        for s in self {
            s.entry(e);
        }
    }
    fn wants(&self, p: &Probe<'_>) -> bool {
        self.iter().any(|s| s.wants(p))
    }
}

/// What a [`StageFactory`] is told when it builds a stage for one file: what every
/// composition knows about every file it reads (more may be added, hence
/// `non_exhaustive`; build one with [`BuildContext::new`]).
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct BuildContext<'a> {
    /// The transcript about to be read.
    pub path: &'a Path,
    /// The scope-log key of the session that wrote it (`None`: none could be
    /// established, and the read keeps no cursor).
    pub key: Option<&'a str>,
    /// The environment the run sees (a backfill's is bare: no swarm variables).
    pub env: &'a Env,
    /// What the composition lends the stages of this read, by type
    /// ([`BuildContext::lent`]): the session's scope log, the project resolver.
    lent: &'a [&'a (dyn Any + Sync)],
}

impl<'a> BuildContext<'a> {
    /// The context of `path`, for `key`, seeing `env`, lending nothing.
    pub fn new(path: &'a Path, key: Option<&'a str>, env: &'a Env) -> BuildContext<'a> {
        BuildContext {
            path,
            key,
            env,
            lent: &[],
        }
    }

    /// The same, lending `lent` to every stage built: each value is found by its type
    /// ([`BuildContext::lent`]), so a composition lends what its stages need without
    /// knowing which stage takes what.
    pub fn lending(mut self, lent: &'a [&'a (dyn Any + Sync)]) -> BuildContext<'a> {
        self.lent = lent;
        self
    }

    /// The lent value of type `T`, if the composition lends one (the first, if more).
    pub fn lent<T: Any>(&self) -> Option<&'a T> {
        self.lent
            .iter()
            .find_map(|v| (*v as &dyn Any).downcast_ref::<T>())
    }
}

impl std::fmt::Debug for BuildContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildContext")
            .field("path", &self.path)
            .field("key", &self.key)
            .field("lent", &self.lent.len())
            .finish_non_exhaustive()
    }
}

/// What the stages of one read hand on ([`Stage::hand_on`]), by type: a composition
/// takes the types it routes (the store's rows, the brain writer's markers) and never
/// names the stage that made them. Values are kept in the order put.
#[derive(Default)]
pub struct Found {
    items: Vec<Box<dyn Any + Send>>,
}

impl Found {
    /// Nothing yet.
    pub fn new() -> Found {
        Found::default()
    }

    /// Hand `value` on.
    pub fn put<T: Any + Send>(&mut self, value: T) {
        self.items.push(Box::new(value));
    }

    /// The first value of type `T` handed on, taken out.
    pub fn take<T: Any>(&mut self) -> Option<T> {
        let i = self.items.iter().position(|v| v.is::<T>())?;
        self.items.remove(i).downcast::<T>().ok().map(|b| *b)
    }

    /// Every value of type `T` handed on, taken out, in the order put.
    pub fn take_all<T: Any>(&mut self) -> Vec<T> {
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.items)
            .into_iter()
            .partition(|v| v.is::<T>());
        self.items = rest;
        mine.into_iter()
            .filter_map(|v| v.downcast::<T>().ok().map(|b| *b))
            .collect()
    }

    /// Whether nothing (left) was handed on.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Found")
            .field("items", &self.items.len())
            .finish()
    }
}

/// A result a stage wants kept and asked for: the index stores it under the stage's
/// name, with the scope in force at its time (the row of the session's log a marker
/// or a request would be attributed to), once per `(session, stage, key)`. A stage
/// hands its facts on as [`Facts`]; nothing else is needed for `transcope facts` to
/// answer them.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    /// The stage's name ([`Stage::name`]).
    pub stage: &'static str,
    /// Unique for the stage within the session: a second read of the same bytes (a
    /// crash before the cursor was saved) gives the same key, and the fact is kept once.
    pub key: String,
    /// When it happened (`None`: no time; then no scope is in force).
    pub at: Option<crate::Instant>,
    /// The fact itself.
    pub value: Value,
}

/// The [`Fact`]s one stage found in one read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts(pub Vec<Fact>);

/// Builds one kind of [`Stage`], fresh for each file (see the module docs): what a
/// composition lists in a [`StageRegistry`].
pub trait StageFactory: Send + Sync {
    /// The [`Stage::name`] of the stages it builds (the key of their checkpoint in a
    /// cursor; unique in a registry). `change-detect` and `markers` are the
    /// compositions' own.
    fn name(&self) -> &'static str;

    /// A stage for the file `ctx` names, before its checkpoint (if any) is restored.
    /// It may borrow from the factory (a sink the factory owns) and from `ctx`.
    fn build<'a>(&'a self, ctx: &BuildContext<'a>) -> Box<dyn Stage + 'a>;

    /// The types its stages hand on ([`Stage::hand_on`]): a composition that does not
    /// route a type (a rebuild records no transitions; a backfill without markers)
    /// leaves out the stages that make it. The default: none (always built).
    fn outputs(&self) -> Vec<TypeId> {
        Vec::new()
    }
}

/// An ordered list of [`StageFactory`]s: the stages a composition runs beside its own,
/// each file's entries fed to them in this order.
#[derive(Default)]
pub struct StageRegistry {
    factories: Vec<Box<dyn StageFactory>>,
}

impl StageRegistry {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a factory at the end.
    ///
    /// # Panics
    ///
    /// When a factory of the same name is listed already: two stages would share one
    /// checkpoint (a mistake in the composition, found by any run of it).
    pub fn register(&mut self, f: Box<dyn StageFactory>) -> &mut Self {
        assert!(
            self.names().all(|n| n != f.name()),
            "stage {:?} is listed twice",
            f.name()
        );
        self.factories.push(f);
        self
    }

    /// The listed factories, taken out in order (to list them in another registry).
    pub fn into_factories(self) -> Vec<Box<dyn StageFactory>> {
        self.factories
    }

    /// The listed factories, in order.
    pub fn factories(&self) -> impl Iterator<Item = &dyn StageFactory> {
        self.factories.iter().map(|f| f.as_ref())
    }

    /// The listed stages' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.factories.iter().map(|f| f.name())
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.factories.is_empty()
    }

    /// One fresh stage of each listed factory for the file `ctx` names, in order.
    pub fn build<'a>(&'a self, ctx: &BuildContext<'a>) -> Vec<Box<dyn Stage + 'a>> {
        self.build_where(ctx, |_| true)
    }

    /// One fresh stage of each listed factory that `keep` keeps, in order.
    pub fn build_where<'a>(
        &'a self,
        ctx: &BuildContext<'a>,
        keep: impl Fn(&dyn StageFactory) -> bool,
    ) -> Vec<Box<dyn Stage + 'a>> {
        self.factories
            .iter()
            .filter(|f| keep(f.as_ref()))
            .map(|f| f.build(ctx))
            .collect()
    }
}

impl std::fmt::Debug for StageRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
