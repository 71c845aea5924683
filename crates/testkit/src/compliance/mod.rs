//! # Compliance kits: the contract every adapter and every stage meets
//!
//! The engine reads a transcript in appended pieces: each read resumes from the
//! transcript's cursor, with the adapter and the stages restored from the checkpoints
//! the read before left there. An adapter or a stage — built in or a third party's —
//! that loses state across that boundary makes a transcript read in pieces give other
//! output than one pass. These kits check the contract with the real parts: the
//! framing of `transcope-jsonl`, the engine's `Pipeline::observe`, its cursor store in
//! a temporary folder, and real files.
//!
//! * [`AdapterKit`] checks an adapter over its fixture files ([`Fixture`]): its factory
//!   sniffs them and frames them as declared; the engine's one pass gives what the
//!   framing alone gives; every split of a line-framed file into appended pieces (at
//!   every line boundary, at bytes before a newline, inside a UTF-8 character,
//!   anywhere in a line, in many pieces) gives the one-pass entries, and reading the
//!   same bytes again gives none; a document rewritten as it grows (and caught cut
//!   short once) gives the one-pass entries of its last version; garbage records
//!   inserted give the same entries and exactly one skip each, of the reason the
//!   [`Skip`](transcope_core::adapter::Skip) contract names; the adapter's own
//!   checkpoint round-trips and garbage is refused.
//! * [`RecordsKit`] checks an adapter whose format is a container of many sessions'
//!   records (a database), over a [`Container`] its test writes: the factory alone
//!   takes it; every session written one record a transaction and read after each
//!   gives the one pass; a record being written is not passed and is read once
//!   complete; every one-byte change of a record's JSON is a counted skip at most,
//!   never a panic, the records before it untouched.
//! * [`check_stage`] checks a stage over a sequence of entries, through a
//!   [`StageHarness`] that says how to build it and what its output is: for every entry
//!   boundary `k`, a read of the first `k` entries, a checkpoint, a fresh stage
//!   restored from it and a read of the rest give the output and the final checkpoint
//!   of one pass; `restore(Null)` of a fresh stage is `true`, garbage is refused
//!   (`false`, no panic: [`garbage_checkpoints`]), and a finished read's effects are
//!   recovered as made.
//!
//! Each returns the first [`Violation`]: which [`Check`], on what, and the first
//! difference, so a test reads `kit.check(&fixtures).unwrap()`.
//!
//! ```
//! use transcope_core::adapter::EntrySink;
//! use transcope_core::{Entry, Stage};
//! use transcope_testkit::compliance::{check_stage, StageHarness};
//!
//! /// Counts entries with a folder.
//! #[derive(Default)]
//! struct Folders(u64);
//! impl EntrySink for Folders {
//!     fn entry(&mut self, e: &Entry<'_>) { self.0 += u64::from(e.cwd.is_some()) }
//! }
//! impl Stage for Folders {
//!     fn name(&self) -> &'static str { "folders" }
//!     fn checkpoint(&self) -> serde_json::Value { serde_json::json!({"folders": self.0}) }
//!     fn restore(&mut self, v: &serde_json::Value) -> bool {
//!         if v.is_null() { return true }
//!         v["folders"].as_u64().map(|n| self.0 = n).is_some()
//!     }
//! }
//! struct Harness;
//! impl StageHarness for Harness {
//!     type World = ();
//!     type Stage<'w> = Folders;
//!     type Output = u64;
//!     fn world(&mut self) {}
//!     fn build(&mut self, _: &()) -> Folders { Folders::default() }
//!     // The output of a run is the count at its end.
//!     fn collect(&mut self, _: &(), s: Folders, out: &mut u64) { *out = s.0 }
//! }
//! let entries = vec![Entry { cwd: Some("/a".into()), ..Entry::default() }, Entry::default()];
//! let report = check_stage(&mut Harness, &entries).unwrap();
//! assert_eq!(report.boundaries, 3);
//! ```

mod adapter;
mod others;
mod records;
mod stage;

use std::fmt::Debug;

pub use adapter::{AdapterKit, AdapterReport, Fixture};
pub use others::{no_other_agents_line_is, others_untouched};
pub use records::{Container, RecordsKit, RecordsReport};
pub use stage::{check_stage, fixture_entries, StageHarness, StageReport};

/// Which part of the contract a [`Violation`] breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Check {
    /// The kit could not set a case up (a temporary folder, a copy, a read).
    Setup,
    /// The fixture does not serve (unreadable, or no entries to compare).
    Fixture,
    /// The factory does not claim its own fixture, or the registry picks another.
    Sniff,
    /// The factory frames the fixture otherwise than declared, or the engine reads it
    /// otherwise than the factory says.
    Framing,
    /// The engine's one pass differs from a decode through the framing alone.
    OnePass,
    /// Appending the file line by line.
    LineSplits,
    /// Appending it in two pieces cut at a byte.
    ByteSplits,
    /// Appending it in many pieces.
    Chunks,
    /// A document rewritten whole as it grows.
    Growth,
    /// Reading the same bytes again gave entries.
    Twice,
    /// Garbage records: one skip each, entries unchanged.
    Skips,
    /// The adapter's own checkpoint does not round-trip, or garbage is accepted.
    AdapterState,
    /// A stage's output read in pieces differs from one pass.
    StagePieces,
    /// A stage's final checkpoint read in pieces differs from one pass.
    StageCheckpoint,
    /// A stage refuses its own checkpoint or `Null`, accepts garbage, or panics.
    StageRestore,
    /// A stage's `recover` says a finished read's effects were not made.
    StageRecover,
}

/// A break of the contract: the check, what it was checked on (a fixture, a split), and
/// the first difference found.
#[derive(Debug, thiserror::Error)]
#[error("{check:?}: {subject}: {detail}")]
pub struct Violation {
    /// The check that failed.
    pub check: Check,
    /// The fixture and the case (a cut, a boundary).
    pub subject: String,
    /// What differs.
    pub detail: String,
}

/// Values no adapter or stage should take for its checkpoint, which `restore` must
/// refuse: a string, a number, a boolean, an array, and an object of none of its keys
/// (the default of [`StageHarness::garbage`] and [`AdapterKit::garbage`]; one whose
/// checkpoint is a bare number, say, leaves that out).
pub fn garbage_checkpoints() -> Vec<serde_json::Value> {
    vec![
        serde_json::Value::String("garbage".into()),
        serde_json::Value::from(42),
        serde_json::Value::Bool(true),
        serde_json::json!([1, 2, 3]),
        serde_json::json!({"\u{1}not a key anyone writes": [null]}),
    ]
}

/// Where `got` first differs from `want` (`None`: equal).
fn first_difference<T: PartialEq + Debug>(want: &[T], got: &[T]) -> Option<String> {
    if let Some(i) = (0..want.len().min(got.len())).find(|&i| want[i] != got[i]) {
        return Some(format!(
            "item {i} differs:\n  one pass: {:?}\n  in parts: {:?}",
            want[i], got[i]
        ));
    }
    match want.len().cmp(&got.len()) {
        std::cmp::Ordering::Equal => None,
        std::cmp::Ordering::Less => Some(format!(
            "{} items more than one pass's {}; the first extra: {:?}",
            got.len() - want.len(),
            want.len(),
            got[want.len()]
        )),
        std::cmp::Ordering::Greater => Some(format!(
            "{} items fewer than one pass's {}; the first missing: {:?}",
            want.len() - got.len(),
            want.len(),
            want[got.len()]
        )),
    }
}
