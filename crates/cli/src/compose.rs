//! The only place that lists transcope's adapters and stages: each command composes
//! its pipeline from these, and a new agent or stage is one line here.

use std::path::Path;

use transcope_core::adapter::AdapterRegistry;
use transcope_engine::{CursorPolicy, Pipeline};

/// Every adapter, in detection order (on a tie the earliest wins: Claude is the
/// reference's fallback for any file that is not Codex).
pub fn adapters() -> AdapterRegistry {
    let mut r = AdapterRegistry::new();
    r.register(Box::new(transcope_adapter_claude::ClaudeFactory));
    r.register(Box::new(transcope_adapter_codex::CodexFactory));
    r.register(Box::new(transcope_adapter_gemini::GeminiFactory));
    r
}

/// The engine with the cursor store under `home` (every byte observed once).
/// `durable`: sync each cursor as saved (a hook, `observe`); a batch syncs once.
pub fn pipeline(home: &Path, durable: bool) -> Pipeline {
    let cursors = if durable {
        CursorPolicy::store(home)
    } else {
        CursorPolicy::batched(home)
    };
    Pipeline::builder(adapters()).cursors(cursors).build()
}

/// The engine without cursors: every read is the reference's whole-file read.
pub fn pipeline_full() -> Pipeline {
    Pipeline::builder(adapters()).build()
}
