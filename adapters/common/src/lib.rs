//! # transcope-adapter-common: what the transcript adapters share and no format owns
//!
//! Each adapter crate (`transcope-adapter-claude`, `transcope-adapter-codex`, a
//! third party's) owns its format entirely: its record schema, its vocabulary of
//! record types, its first-line detection, its on-disk layout. This crate holds only
//! the machinery they decode with:
//!
//! ```text
//! line ──text::line_text──► &str          (UTF-8 by SIMD, first-line BOM, Python strip())
//!      ──record::parse::<R>──► R           (the adapter's LineRecord: one pass over the
//!                                           line; record::Base holds the shared keys;
//!                                           a lazy second pass when a nested string
//!                                           cannot be decoded)
//!      ──Base::base_entry──► Entry         (time, folder, branch, ids: the reference's
//!                                           format-independent context rule)
//!      ──adapter: kind, texts──► record::emit ──► EntrySink
//!
//! line ──probe::fields──► Fields           (SIMD scan of the top-level type/cwd/
//!                                           gitBranch and payload type/role; the
//!                                           adapter maps them to a Probe and asks
//!                                           EntrySink::wants before decoding)
//! ```
//!
//! * [`de`]: the tolerant serde toolkit — [`de::CowStr`], [`de::Loose`] (Python
//!   truthiness and `str()`), [`de::FromMap`], [`de::Obj`], the one "any JSON value"
//!   visitor [`de::FromShape`], [`de::skip_value`], [`de::decode_obj`], [`de::Checked`].
//! * [`text`]: [`text::py_strip`] (Python `str.strip()`) and [`text::line_text`].
//! * [`record`]: [`record::Base`], [`record::LineRecord`], [`record::parse`],
//!   [`record::time_value`], [`record::emit`].
//! * [`message`]: the Claude-rule marker texts of a `message` (used by the Claude
//!   adapter and by the Codex adapter for legacy files, which the reference reads as
//!   Claude).
//! * [`probe`]: the SIMD probe ([`probe::fields`], [`probe::fields_with`],
//!   [`probe::Isa`], [`probe::escaped_bits`]).
//! * [`walk`]: reading a few values of a line without decoding it, every byte passed
//!   over checked as serde_json's skip checks it ([`walk::Walk`]): a line wanted for its
//!   usage alone is read this way, and decoded in full when the walk is unsure.
//! * [`quick`]: the shared context keys read by the walk ([`quick::Context`]), for an
//!   adapter's quick path.
//! * [`head`]: reading a file's head for a layout's scope key ([`head::find_line`],
//!   [`head::checked_key`]).
//!
//! ```
//! use transcope_adapter_common::record::{self, emit, Base};
//! use transcope_core::{Entry, EntryKind, LinePos};
//!
//! // A toy adapter's whole decode: the shared keys, its own kind rule.
//! let line = br#"{"type":"note","cwd":"/w","timestamp":"2025-01-01T00:00:00Z"}"#;
//! let mut rec: Base<'_> = record::parse(line, LinePos::default()).unwrap();
//! let mut entry = rec.base_entry(LinePos::default(), None);
//! entry.kind = (rec.ty.as_str() == Some("note")).then_some(EntryKind::Other);
//! let mut got = Vec::new();
//! emit(entry, &rec.ty, &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| got.push(e.cwd.as_deref().map(String::from))))
//!     .unwrap();
//! assert_eq!(got, [Some("/w".to_string())]);
//! ```
#![warn(missing_docs)]

pub mod de;
pub mod head;
pub mod message;
pub mod probe;
pub mod quick;
pub mod record;
pub mod text;
pub mod usage;
pub mod walk;
