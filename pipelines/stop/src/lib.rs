//! # transcope-stop: one transcript at a hook's Stop
//!
//! The named composition a hook runs: framing ([`transcope_jsonl`]) → the detected
//! adapter (Claude or Codex, from an [`AdapterRegistry`]) → the stages → the scope log.
//!
//! * [`scan`]: read a transcript (whole, or from a byte offset) into entries;
//! * [`observe`]: `observe_transcript`, whole ([`ReadMode::Whole`], the reference's
//!   behaviour) or incremental from a [`cursor`] ([`ReadMode::Incremental`]);
//! * [`session_start`]: the launch scope and the session index (`record_session`).
//!
//! ```
//! use transcope_change_detect::{Env, NoProjects};
//! use transcope_scopelog::ScopeLog;
//! use transcope_stop::{default_registry, observe::{observe, ReadMode}, scan::Buffers};
//!
//! let home = tempfile::tempdir().unwrap();
//! let t = home.path().join("t.jsonl");
//! std::fs::write(&t, concat!(
//!     r#"{"type":"user","timestamp":"2026-10-08T10:00:00Z","cwd":"/a","gitBranch":"main"}"#, "\n",
//!     r#"{"type":"user","timestamp":"2026-10-08T10:05:00Z","cwd":"/b","gitBranch":"main"}"#, "\n",
//! )).unwrap();
//! let log = ScopeLog::open(home.path(), "s1");
//! let report = observe(home.path(), &log, &t, &Env::new(), NoProjects, &default_registry(),
//!     &Default::default(), ReadMode::Incremental, &mut Buffers::default(), None).unwrap();
//! assert_eq!(report.outcome.recorded, 2);
//! ```
#![warn(missing_docs)]

pub mod cursor;
pub mod observe;
pub mod scan;
pub mod session_start;
pub mod stop;

pub use observe::ReadMode;

use transcope_core::adapter::AdapterRegistry;

/// The registry of the built-in adapters: Claude Code (the fallback) and Codex.
pub fn default_registry() -> AdapterRegistry {
    let mut r = AdapterRegistry::new();
    r.register(Box::new(transcope_adapter_claude::ClaudeFactory));
    r.register(Box::new(transcope_adapter_codex::CodexFactory));
    r
}
