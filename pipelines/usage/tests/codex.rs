//! The usage stage over Codex rollouts: running totals counted by their growth, and a
//! fork's copy of its source's history counted nothing.

use transcope_core::adapter::AdapterRegistry;
use transcope_engine::{Buffers, Pipeline, Request};
use transcope_usage::{Spent, UsageStage};

fn spent(text: &str) -> Vec<Spent> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir
        .path()
        .join("rollout-2026-01-01T00-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl");
    std::fs::write(&p, text).unwrap();
    let mut r = AdapterRegistry::new();
    r.register(Box::new(transcope_adapter_codex::CodexFactory));
    let pipeline = Pipeline::builder(r).build();
    let mut stage = UsageStage::default();
    pipeline
        .observe(
            &Request::new(&p, None),
            &mut [&mut stage],
            &mut Buffers::default(),
        )
        .unwrap();
    stage.take()
}

fn total(t: &str, input: u64, cached: u64, output: u64) -> String {
    serde_json::json!({"timestamp": t, "type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output,
            "reasoning_output_tokens": 0, "total_tokens": input + output}}}})
    .to_string()
}

fn meta(t: &str, forked: bool) -> String {
    let mut p = serde_json::json!({"id": "0199aaaa-0000-7000-8000-000000000001", "cwd": "/w"});
    if forked {
        p["forked_from_id"] = "0199bbbb-0000-7000-8000-000000000002".into();
    }
    serde_json::json!({"timestamp": t, "type": "session_meta", "payload": p}).to_string()
}

fn turn(t: &str, model: &str) -> String {
    serde_json::json!({"timestamp": t, "type": "turn_context", "payload": {"cwd": "/w", "model": model}}).to_string()
}

#[test]
fn running_totals_count_their_growth_with_the_turns_model() {
    let text = [
        meta("2026-01-01T00:00:00Z", false),
        turn("2026-01-01T00:00:01Z", "gpt-5-codex"),
        total("2026-01-01T00:00:02Z", 100, 40, 10),
        // Repeated: nothing new.
        total("2026-01-01T00:00:03Z", 100, 40, 10),
        total("2026-01-01T00:00:04Z", 250, 100, 30),
    ]
    .join("\n")
        + "\n";
    let s = spent(&text);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(
        (
            s[0].tokens.input,
            s[0].tokens.cache_read,
            s[0].tokens.output
        ),
        (60, 40, 10)
    );
    assert_eq!(
        (
            s[1].tokens.input,
            s[1].tokens.cache_read,
            s[1].tokens.output
        ),
        (90, 60, 20)
    );
    assert!(s.iter().all(|x| x.model.as_deref() == Some("gpt-5-codex")));
}

#[test]
fn a_fork_counts_only_what_it_spent_itself() {
    let text = [
        meta("2026-01-02T00:00:00Z", true),
        // The source's history, copied with its own times and running totals.
        turn("2026-01-01T00:00:01Z", "gpt-5-codex"),
        total("2026-01-01T00:00:02Z", 1000, 400, 100),
        total("2026-01-01T00:10:00Z", 3000, 1000, 300),
        // The fork's own turn.
        turn("2026-01-02T00:00:01Z", "gpt-5-codex"),
        total("2026-01-02T00:00:05Z", 3500, 1200, 350),
    ]
    .join("\n")
        + "\n";
    let s = spent(&text);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(
        (
            s[0].tokens.input,
            s[0].tokens.cache_read,
            s[0].tokens.output
        ),
        (300, 200, 50)
    );
}
