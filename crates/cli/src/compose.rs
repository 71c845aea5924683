//! The only place that lists transcope's adapters and stages: each command composes
//! its pipeline from these, and a new agent or stage is one line here.
//!
//! Change detection and markers are the compositions' own stages (`transcope-stop`,
//! `transcope-backfill`): they read those two stages' results (the transitions
//! recorded, the markers for the brain writer) and build them by type. Every other
//! stage is listed in [`stages`] and runs wherever change detection runs — a Stop,
//! `observe`, a backfill — fed the same entries in the same pass, its checkpoint kept
//! in the same cursor (ARCHITECTURE.md, "Adding a stage").

use std::path::Path;

use transcope_core::adapter::AdapterRegistry;
use transcope_core::stage::StageRegistry;
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

/// Every stage beyond change detection and markers, in the order each entry reaches
/// them (none yet: a new one is `r.register(Box::new(TheFactory))`).
pub fn stages() -> StageRegistry {
    StageRegistry::new()
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
/// only the reference's stages (a listed stage would see the same bytes at every run).
pub fn pipeline_full() -> Pipeline {
    Pipeline::builder(adapters()).build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listed stage named like one of the compositions' own would share its
    /// checkpoint in every cursor.
    #[test]
    fn listed_stages_do_not_take_the_compositions_names() {
        let own = [
            transcope_change_detect::STAGE_NAME,
            transcope_markers::STAGE_NAME,
        ];
        assert!(stages().names().all(|n| !own.contains(&n)));
    }
}
