//! Where the agents keep their transcripts: every registered adapter's default
//! folders, from the environment its layout reads.

use std::path::PathBuf;

use transcope_core::adapter::AdapterRegistry;

use crate::user_home;

/// Every registered agent's default folders that exist (each adapter's layout says
/// where its agent writes, from its environment variables).
pub fn default_paths(
    env: &transcope_change_detect::Env,
    registry: &AdapterRegistry,
) -> Vec<PathBuf> {
    default_roots(env, registry)
        .into_iter()
        .filter(|p| p.is_dir())
        .collect()
}

/// Every registered agent's default folders, whether they exist or not.
pub(crate) fn default_roots(
    env: &transcope_change_detect::Env,
    registry: &AdapterRegistry,
) -> Vec<PathBuf> {
    let lookup = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
    let home = user_home();
    registry
        .layouts()
        .flat_map(|(_, l)| l.default_roots(&lookup, &home))
        .collect()
}
