//! # transcope-core: the neutral model
//!
//! Everything the other crates share and nothing format- or storage-specific:
//!
//! * [`scope`]: the 11-field [`Scope`](scope::Scope), its `transition_id`, the
//!   [`Grant`](scope::Grant), and [`Attribution`](scope::Attribution) results;
//! * [`timestamp`]: ISO 8601 exactly as Python 3.11 `datetime.fromisoformat` reads it,
//!   and the [`Instant`](timestamp::Instant) it compares; RFC 3339 exactly as Go's
//!   `time.Parse` reads it (the caller identity walk's);
//! * [`py`]: the Python `json.dumps` / `str()` renderings the on-disk formats need;
//! * [`entry`] and [`adapter`]: the neutral [`Entry`](entry::Entry) every adapter emits,
//!   the push-model [`Adapter`](adapter::Adapter) trait, framing and the agent's
//!   [`Layout`](adapter::Layout);
//! * [`records`]: containers of session records (a database, a tree of documents) read
//!   through the third framing, `Framing::Records`, by an ordinal and a change marker;
//! * [`agent`]: what an adapter declares of its agent beyond the format — its token
//!   usage shape, its hook wiring and home folder, its pricing provider;
//! * [`stage`]: the [`Stage`](stage::Stage) trait (entries in, outputs pushed to a
//!   [`Sink`](stage::Sink), a checkpoint the cursor stores), and the
//!   [`StageFactory`](stage::StageFactory) a composition lists to build one per file;
//! * [`marker`] and [`env`]: the brain [`Marker`](marker::Marker) and the explicit
//!   [`Env`](env::Env) that stages and sinks share;
//! * [`session`]: the session-id grammar;
//! * [`quote`]: the one way an untrusted value goes into a message (escaped, bounded),
//!   and text for a person made safe to show (no controls, no bidirectional controls).
//!
//! Data flows one way: hook payload → caller → identity → adapter → stages → scope log and sinks.
//! This crate sits at the bottom and depends on none of the others.
//!
//! ```
//! use transcope_core::{scope::{Scope, ScopeField}, timestamp};
//! let s = Scope::default().with(ScopeField::Cwd, "/work/alpha/one");
//! assert_eq!(s.get(ScopeField::Cwd), "/work/alpha/one");
//! assert!(timestamp::parse("2026-10-08T10:00:00Z") < timestamp::parse("2026-10-08T10:00:01Z"));
//! ```
#![warn(missing_docs)]

pub mod adapter;
pub mod agent;
pub mod digest;
pub mod entry;
pub mod env;
pub mod head;
pub mod marker;
pub mod py;
pub mod quote;
pub mod records;
pub mod scope;
pub mod session;
pub mod stage;
pub mod times;
pub mod timestamp;

pub use entry::{Entry, EntryKind, LinePos, TimeValue, Tokens, Usage};
pub use env::Env;
pub use marker::Marker;
pub use scope::{Attribution, Grant, Label, Scope, ScopeField};
pub use stage::{
    BuildContext, Fact, Facts, FileContext, Found, Sink, Stage, StageFactory, StageRegistry,
};
pub use timestamp::Instant;
