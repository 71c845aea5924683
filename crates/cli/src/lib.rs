//! The `transcope` command's composition, as a library: [`compose`], the one list of
//! the adapters and stages the binary runs.
//!
//! Whatever needs every adapter transcope has — testkit's engine, the third-party
//! example, the fuzz target — takes it from here, so the list is written once (a new
//! agent is one line of [`compose::adapters`]). Depend on this crate with
//! `default-features = false`: the library needs only what the lists name, and the
//! binary's own dependencies (feature `cli`) are then not built.
//!
//! ```
//! let adapters = transcope::compose::adapters();
//! let names: Vec<&str> = adapters.factories().map(|f| f.name()).collect();
//! assert!(names.contains(&"claude") && names.contains(&"qwen"));
//! // Claude is the fallback: a file no format recognises is read as Claude's.
//! let odd = adapters.detect(std::path::Path::new("x.jsonl"), b"not json").unwrap();
//! assert_eq!(odd.name(), "claude");
//! ```
#![warn(missing_docs)]

pub mod compose;
