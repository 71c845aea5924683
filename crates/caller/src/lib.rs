//! Who called a hook: which transcript identifies the caller, what identity its state is
//! keyed on, and where that state lives — the port of sloprail's `hookinput`,
//! `sessionpath` and transcript identity walk (`identity.md`).
//!
//! # Principal types and data flow
//!
//! ```text
//!  stdin ──▶ HookInput::parse ──▶ caller(&HookInput, &Env) ──▶ Caller { record, session_record,
//!            (never fails)          │                              state_cwd, stable_id,
//!                                   │                              degraded, scope_key, error }
//!                                   ├─ hookinput::record      the caller's own transcript
//!                                   │    (claudepath: layout, relocation; belongs: the guards
//!                                   │     of a guessed path)
//!                                   ├─ sessionpath::state_cwd where the session's stores are keyed
//!                                   └─ stable::stable_identity the walk to the origin record
//!                                        (transcript: Go-semantics line reading)
//! ```
//!
//! * [`hookinput`]: [`HookInput`] (the payload, parsed tolerantly), [`caller`] → [`Caller`]
//!   (everything a hook needs, resolved once), `record` / `session_record` / `state_cwd`.
//! * [`claudepath`]: Claude Code's on-disk layout (config dir, project-dir encoding,
//!   sub-agent records) and the relocation of a record that moved.
//! * [`belongs`]: `belongs_to_session` and `belongs_to_tree`, the guards of a *guessed*
//!   record (a reported path is believed).
//! * [`stable`]: the walk through continuations to a conversation's origin, [`Identity`]
//!   with its [`Degraded`] reasons.
//! * [`sessionpath`]: where a session's state lives (`data_home`, `state_db`, `checks_db`).
//! * [`transcript`]: one transcript line as sloprail's Go decoder reads it ([`transcript::Entry`]),
//!   the line scanner with Go's `bufio.Scanner` limits (`transcope-jsonl`'s framer under
//!   its stop-at-an-over-long-line policy), and [`TranscriptError`].
//!
//! Environment values (`CLAUDE_CONFIG_DIR`, `HOME`, `XDG_DATA_HOME`) come from the [`Env`]
//! passed in, never from the process.
//!
//! # What this crate is not
//!
//! It does not say which *project* a folder belongs to (that is `transcope-identity`, which
//! this crate builds on for git: a work tree's top level and a repository's root commit), and
//! it does not decode transcripts into entries for the stages (that is the adapters'). It
//! reads a transcript only for the few fields identity needs, with Go's rules rather than
//! the adapters' — the two must not be mixed. It has no line reader or timestamp parser of
//! its own: lines come from `transcope-jsonl` (the framer every reader uses) and RFC 3339
//! timestamps are read by `transcope-core`'s `timestamp::parse_go_rfc3339`.
//!
//! # Example
//!
//! ```
//! use transcope_caller::{caller, Env, HookInput};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("s1.jsonl");
//! std::fs::write(&path, r#"{"uuid":"origin","parentUuid":null,"sessionId":"s1","cwd":"/repo"}"#).unwrap();
//! let body = format!(r#"{{"session_id":"s1","transcript_path":{:?},"cwd":"/repo"}}"#, path.to_str().unwrap());
//! let c = caller(&HookInput::parse(body.as_bytes()), &Env::new());
//! assert_eq!(c.record.as_deref(), Some(path.as_path()));
//! assert_eq!(c.stable_id.as_deref(), Some("origin"));
//! assert_eq!(c.scope_key.as_deref(), Some("s1"));
//! ```
#![warn(missing_docs)]

pub mod belongs;
pub mod claudepath;
mod gopath;
pub mod hookinput;
mod memo;
pub mod sessionpath;
pub mod stable;
pub mod transcript;

pub use hookinput::{caller, Caller, HookInput};
pub use stable::{Degraded, Identity};
pub use transcope_core::env::Env;
pub use transcript::TranscriptError;
