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
//! assert_eq!(names[0], "claude", "the fallback is first");
//! ```
#![warn(missing_docs)]

pub mod compose;
