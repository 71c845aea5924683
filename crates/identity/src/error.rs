//! Errors of project resolution.

use std::path::PathBuf;

use transcope_core::quote::quote;

/// Why a folder's project could not be resolved, or a resolver could not be configured.
///
/// The first three are the cases where the reference raises `ValueError` (scope-log.md §3.3,
/// §8 item 11); callers decide whether to swallow them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// `AGENTIHOOKS_PROJECT_ID` applies (folder outside any git repository) but does not match
    /// `local:[A-Za-z0-9][A-Za-z0-9._-]{0,127}`. The message names the variable and the
    /// value's length, never the value: an environment value is not echoed on stderr.
    #[error(
        "Invalid registered project ID: AGENTIHOOKS_PROJECT_ID ({} bytes) does not match local:[A-Za-z0-9][A-Za-z0-9._-]{{0,127}}",
        id.len()
    )]
    InvalidProjectId {
        /// The rejected value (kept for callers; not part of the message).
        id: String,
    },
    /// The alias map document breaks the strict schema.
    #[error("Invalid project alias map: {reason}")]
    InvalidAliasMap {
        /// What is wrong, for humans.
        reason: String,
    },
    /// Following the alias map from `project_id` comes back to it.
    #[error("Invalid project alias map: cycle through {}", quote(project_id))]
    AliasCycle {
        /// A project id on the cycle.
        project_id: String,
    },
    /// The alias map file exists but could not be read.
    #[error("while reading the project alias map {}: {source}", path.display())]
    ReadAliasMap {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The environment has no usable `HOME`, so `~` cannot be expanded.
    #[error("HOME is not set; cannot locate the user's home directory")]
    NoHome,
}
