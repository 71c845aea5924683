//! The only place that lists transcope's adapters and stages: each command composes
//! its pipeline from these, and a new agent or stage is one line here.
//!
//! Every stage is listed, change detection, markers and usage included: a Stop,
//! `observe`, a backfill and a rebuild build each listed stage for every file they
//! read, feed it the same entries in the same pass, keep its checkpoint in the same
//! cursor, and route what it hands on by type (the transitions recorded, the markers
//! for the ledger and the brain writer, the requests' usage, [`transcope_core::Facts`]
//! for the index) — none of them names a stage (ARCHITECTURE.md, "Adding a stage").

use std::path::Path;

use transcope_core::adapter::AdapterRegistry;
use transcope_core::stage::StageRegistry;
use transcope_engine::{CursorPolicy, Pipeline};

/// Every adapter, in detection order (on a tie the earliest wins: Claude is the
/// reference's fallback for any file that is not Codex; Qwen Code, whose records
/// Claude's type rule would also take, answers only for its own files, so it is asked
/// first).
pub fn adapters() -> AdapterRegistry {
    let mut r = AdapterRegistry::new();
    r.register(Box::new(transcope_adapter_qwen::QwenFactory));
    r.register(Box::new(transcope_adapter_copilot::CopilotFactory));
    r.register(Box::new(transcope_adapter_opencode::OpenCodeFactory));
    r.register(Box::new(transcope_adapter_claude::ClaudeFactory));
    r.register(Box::new(transcope_adapter_codex::CodexFactory));
    r.register(Box::new(transcope_adapter_gemini::GeminiFactory));
    r
}

/// The stages whose results are the product, in the order each entry reaches them
/// (change detection first: the others are attributed through the rows it records).
fn product_stages() -> StageRegistry {
    let mut r = StageRegistry::new();
    r.register(Box::new(transcope_change_detect::ChangeDetectFactory));
    r.register(Box::new(transcope_markers::MarkersFactory));
    r.register(Box::new(transcope_usage::UsageFactory));
    r
}

/// Every stage, in the order each entry reaches them: the product's, then any other
/// (a new one is `r.register(Box::new(TheFactory))`).
pub fn stages() -> StageRegistry {
    product_stages()
}

/// The engine with the cursor store under `home` (every byte observed once) and the
/// listed stages. `durable`: sync each cursor as saved (a hook, `observe`); a batch
/// syncs once.
pub fn pipeline(home: &Path, durable: bool) -> Pipeline {
    let cursors = if durable {
        CursorPolicy::store(home)
    } else {
        CursorPolicy::batched(home)
    };
    Pipeline::builder(adapters())
        .cursors(cursors)
        .stages(stages())
        .build()
}

/// The engine without cursors: every read is the reference's whole-file read, with
/// only the product's stages (a stage keeping its own results elsewhere would see the
/// same bytes at every run).
pub fn pipeline_full() -> Pipeline {
    Pipeline::builder(adapters())
        .stages(product_stages())
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Change detection comes first (the others are attributed through its rows), and
    /// the full pipeline runs only the product's stages.
    #[test]
    fn change_detection_leads_and_the_full_read_lists_the_products_stages() {
        let names: Vec<_> = stages().names().collect();
        assert_eq!(names[0], transcope_change_detect::STAGE_NAME);
        assert!(names.contains(&transcope_markers::STAGE_NAME));
        assert!(names.contains(&transcope_usage::STAGE_NAME));
        let full: Vec<_> = pipeline_full().stages().names().collect();
        assert_eq!(full, product_stages().names().collect::<Vec<_>>());
    }
}
