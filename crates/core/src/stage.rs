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

use std::path::Path;

use serde_json::Value;

use crate::adapter::{EntrySink, Probe};
use crate::entry::Entry;

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
