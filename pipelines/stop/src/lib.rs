//! # transcope-stop: one transcript at a hook's Stop
//!
//! The named composition a hook runs over the engine ([`transcope_engine::Pipeline`]:
//! the adapters the binary registered, framing and the cursor store) with the
//! change-detection and marker stages, and every stage the pipeline lists beside them
//! ([`transcope_engine::Pipeline::stages`], run in the same pass under the same cursor):
//!
//! * [`observe`]: `observe_transcript` through the cursor store (every byte observed
//!   once), or the reference's whole-file algorithm with a pipeline built without one;
//! * [`stop`]: the whole Stop (change detection, then the brain writer);
//! * [`session_start`]: the launch scope and the session index (`record_session`).
//!
//! ```
//! use transcope_change_detect::{Env, NoProjects};
//! use transcope_engine::{CursorPolicy, Pipeline};
//! use transcope_scopelog::ScopeLog;
//! use transcope_stop::observe::{observe, Observe};
//!
//! let home = tempfile::tempdir().unwrap();
//! let t = home.path().join("t.jsonl");
//! std::fs::write(&t, concat!(
//!     r#"{"type":"user","timestamp":"2026-10-08T10:00:00Z","cwd":"/a","gitBranch":"main"}"#, "\n",
//!     r#"{"type":"user","timestamp":"2026-10-08T10:05:00Z","cwd":"/b","gitBranch":"main"}"#, "\n",
//! )).unwrap();
//! let mut adapters = transcope_core::adapter::AdapterRegistry::new();
//! adapters.register(Box::new(transcope_adapter_claude::ClaudeFactory));
//! let pipeline = Pipeline::builder(adapters).cursors(CursorPolicy::store(home.path())).build();
//! let log = ScopeLog::open(home.path(), "s1");
//! let env = Env::new();
//! let report = observe(&pipeline, &Observe::new(&log, &t, &env), NoProjects, &mut Default::default()).unwrap();
//! assert_eq!(report.outcome.recorded, 2);
//! // The same bytes again: nothing.
//! let again = observe(&pipeline, &Observe::new(&log, &t, &env), NoProjects, &mut Default::default()).unwrap();
//! assert!(again.up_to_date);
//! ```
#![warn(missing_docs)]

pub mod observe;
pub mod session_start;
pub mod stop;
