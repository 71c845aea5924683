//! The built-in adapters and engine, as tests compose them (the binary's own list is
//! in `crates/cli/src/compose.rs`; tests of the crates below it need the same).

use std::path::Path;

use transcope_core::adapter::AdapterRegistry;
use transcope_engine::{CursorPolicy, Pipeline};

/// Claude (the fallback), Codex, then Gemini CLI, as the binary registers them.
pub fn adapters() -> AdapterRegistry {
    let mut r = AdapterRegistry::new();
    r.register(Box::new(transcope_adapter_claude::ClaudeFactory));
    r.register(Box::new(transcope_adapter_codex::CodexFactory));
    r.register(Box::new(transcope_adapter_gemini::GeminiFactory));
    r
}

/// The engine with the cursor store under `home`.
pub fn pipeline(home: &Path) -> Pipeline {
    Pipeline::builder(adapters())
        .cursors(CursorPolicy::store(home))
        .build()
}

/// The engine without cursors: the reference's whole-file read every time.
pub fn pipeline_full() -> Pipeline {
    Pipeline::builder(adapters()).build()
}
