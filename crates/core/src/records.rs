//! Record containers: transcripts that are not files of lines but rows of a database
//! (OpenCode's `opencode.db`) or a tree of small documents, read through the third
//! framing, [`Framing::Records`](crate::adapter::Framing::Records).
//!
//! A **container** (one path) holds the records of one or many sessions. Its factory
//! opens it as a [`RecordSource`] ([`AdapterFactory::records`]), which
//!
//! * lists the sessions it holds ([`RecordSource::sessions`]): each one's scope-log
//!   key and the key of its family's root (a sub-agent session's top parent), so a
//!   backfill walk expands the container into one read per session and a shard keeps
//!   a family together;
//! * says, cheaply, whether a session changed since a read ([`RecordSource::marker`]:
//!   an opaque change marker; the same marker means nothing to read);
//! * pushes one session's records in a stable order from an ordinal on
//!   ([`RecordSource::read`]), each as JSON bytes the adapter's ordinary
//!   [`Adapter::decode`](crate::adapter::Adapter::decode) takes, stopping before a record
//!   still being written (the container's "torn last line", read when it is complete).
//!
//! A read resumes at a [`RecordPos`]: the ordinal of the next record and the id of the
//! record before it (its *anchor*). A source checks the anchor
//! ([`RecordSource::holds`]): records deleted or rewritten before the ordinal (an
//! agent's undo) make the position void, and the session is read again from its start,
//! as a file whose head changed is.
//!
//! ```
//! use transcope_core::records::{RecordPos, RecordRead, RecordSink, RecordSource, Held, RecordError};
//!
//! /// Two fixed sessions in memory.
//! struct Mem(Vec<(&'static str, Vec<&'static str>)>);
//! impl RecordSource for Mem {
//!     fn sessions(&mut self) -> Result<Vec<Held>, RecordError> {
//!         Ok(self.0.iter().map(|(k, _)| Held::new(*k)).collect())
//!     }
//!     fn marker(&mut self, key: &str) -> Result<Option<String>, RecordError> {
//!         Ok(self.0.iter().find(|(k, _)| *k == key).map(|(_, r)| r.len().to_string()))
//!     }
//!     fn read(&mut self, key: &str, from: &RecordPos, sink: &mut dyn RecordSink) -> Result<RecordRead, RecordError> {
//!         let rows = &self.0.iter().find(|(k, _)| *k == key).unwrap().1;
//!         let mut end = from.clone();
//!         for (i, r) in rows.iter().enumerate().skip(from.ordinal as usize) {
//!             if !sink.record(i as u64, r.as_bytes()) { break }
//!             end = RecordPos { ordinal: i as u64 + 1, anchor: r.to_string() };
//!         }
//!         Ok(RecordRead { end, ..RecordRead::default() })
//!     }
//! }
//! let mut m = Mem(vec![("s1", vec!["{}", "{}"])]);
//! let mut n = 0;
//! let r = m.read("s1", &RecordPos::START, &mut |_: u64, _: &[u8]| { n += 1; true }).unwrap();
//! assert_eq!((n, r.end.ordinal), (2, 2));
//! ```

use std::fmt;

/// Where a read of one session's records resumes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordPos {
    /// The ordinal (0-based, in the source's stable order) of the next record.
    pub ordinal: u64,
    /// The id of the record before it (empty at the start): what [`RecordSource::holds`]
    /// checks.
    pub anchor: String,
}

impl RecordPos {
    /// The start of a session.
    pub const START: RecordPos = RecordPos {
        ordinal: 0,
        anchor: String::new(),
    };
}

/// One session a container holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Its scope-log key.
    pub key: String,
    /// The key of its family's root session (its top parent; itself for a root).
    pub root: String,
}

impl Held {
    /// A root session.
    pub fn new(key: impl Into<String>) -> Held {
        let key = key.into();
        Held {
            root: key.clone(),
            key,
        }
    }
}

/// What a read of one session gave besides its records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordRead {
    /// Where the next read resumes: after the last record pushed.
    pub end: RecordPos,
    /// A record still being written was left for the next read (not pushed).
    pub held: bool,
    /// The key of the session's family root when it is a sub-agent's (`None` for a
    /// root session).
    pub parent: Option<String>,
    /// The bytes the records pushed take (their JSON).
    pub bytes: u64,
}

/// Receives a session's records, in order.
pub trait RecordSink {
    /// One record: its ordinal and its JSON. `false` stops the read after it (a time
    /// limit): the read's end is then just after this record.
    fn record(&mut self, ordinal: u64, json: &[u8]) -> bool;
}

impl<F: FnMut(u64, &[u8]) -> bool> RecordSink for F {
    fn record(&mut self, ordinal: u64, json: &[u8]) -> bool {
        self(ordinal, json)
    }
}

/// Why a container could not be read (locked past the wait, damaged, not the format,
/// gone). Reported against the container's path and counted; never fatal to a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// What went wrong, in words (the cause included).
    pub reason: String,
}

impl RecordError {
    /// An error with `reason`.
    pub fn new(reason: impl Into<String>) -> RecordError {
        RecordError {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for RecordError {}

/// An open container of session records (see the module docs). Built per read: it
/// may hold a connection.
pub trait RecordSource: Send {
    /// The sessions it holds, in a stable order.
    fn sessions(&mut self) -> Result<Vec<Held>, RecordError>;

    /// The change marker of `key`'s records (cheap: an index lookup, a listing), or
    /// `None` when the container does not hold the session. Equal markers mean no
    /// record was added or changed.
    fn marker(&mut self, key: &str) -> Result<Option<String>, RecordError>;

    /// Whether `at` is still a place in `key`'s records: the record before its ordinal
    /// is still its anchor. The default trusts it.
    fn holds(&mut self, key: &str, at: &RecordPos) -> Result<bool, RecordError> {
        let _ = (key, at);
        Ok(true)
    }

    /// Push `key`'s records from `from.ordinal` on, in the stable order, each with its
    /// ordinal, stopping before a record still being written (its later records wait
    /// with it) or when `sink` says stop.
    fn read(
        &mut self,
        key: &str,
        from: &RecordPos,
        sink: &mut dyn RecordSink,
    ) -> Result<RecordRead, RecordError>;
}

impl<S: RecordSource + ?Sized> RecordSource for Box<S> {
    fn sessions(&mut self) -> Result<Vec<Held>, RecordError> {
        (**self).sessions()
    }
    fn marker(&mut self, key: &str) -> Result<Option<String>, RecordError> {
        (**self).marker(key)
    }
    fn holds(&mut self, key: &str, at: &RecordPos) -> Result<bool, RecordError> {
        (**self).holds(key, at)
    }
    fn read(
        &mut self,
        key: &str,
        from: &RecordPos,
        sink: &mut dyn RecordSink,
    ) -> Result<RecordRead, RecordError> {
        (**self).read(key, from, sink)
    }
}
