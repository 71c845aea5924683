//! The environment a run sees, passed explicitly.
//!
//! Nothing below the binary reads the process environment for the variables that
//! change what is recorded (`AGENTIHOOKS_SWARM*`, `AGENTIHOOKS_PROJECT_ID`,
//! `BRAIN_WRITER_*`, …): the caller builds an [`Env`] once and hands it down, so a
//! backfill can run with a bare one and a test with exactly the values it names.
//!
//! ```
//! use transcope_core::env::{var, Env};
//! let mut env = Env::new();
//! env.insert("AGENTIHOOKS_SWARM_TASK".into(), "t-1".into());
//! env.insert("EMPTY".into(), String::new());
//! assert_eq!(var(&env, "AGENTIHOOKS_SWARM_TASK"), Some("t-1"));
//! assert_eq!(var(&env, "EMPTY"), None);
//! ```

use std::collections::BTreeMap;

/// An environment: variable name → value. Only non-empty values count, as in the
/// reference's truthiness tests ([`var`]).
pub type Env = BTreeMap<String, String>;

/// The non-empty value of `name` in `env`.
pub fn var<'e>(env: &'e Env, name: &str) -> Option<&'e str> {
    env.get(name).map(String::as_str).filter(|v| !v.is_empty())
}
