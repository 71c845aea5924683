//! Every agent side by side (issue 38): a generated archive of all six agents
//! (`transcope-corpus` with Gemini CLI, Qwen Code, Copilot CLI and OpenCode shares), backfilled
//! from the agents' default folders by the real binary, then asked every question a
//! person asks of several agents at once:
//!
//! * `sessions` (table and `--json`) lists sessions of every agent, each named by its
//!   agent; Qwen's and Copilot's have the folder and branch changes the generator
//!   wrote (transitions), the brain markers it placed (the ledger holds exactly the
//!   manifest's count of each) and usage;
//! * `timeline` of a session of each agent shows its transitions;
//! * `usage --by agent` (table and `--json`) has a row for every agent, its requests
//!   the sum of its sessions';
//! * the HTML report's model names every lane's agent and has usage by agent.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::reliability::count::usage_by;
use common::reliability::*;
use serde_json::Value;
use transcope_corpus::{CorpusSpec, FileKind, Manifest};

const AGENTS: [&str; 6] = ["claude", "codex", "copilot", "gemini", "opencode", "qwen"];

fn agent_of_kind(kind: FileKind) -> &'static str {
    use FileKind::*;
    match kind {
        ClaudeSession
        | ClaudeSubagent
        | ClaudeAgentFlat
        | ClaudeAgentMeta
        | ClaudeWorkflowJournal => "claude",
        CodexRollout | CodexLegacy => "codex",
        GeminiSession | GeminiSubagent => "gemini",
        QwenSession | QwenSubagent | QwenAgentMeta => "qwen",
        CopilotSession => "copilot",
    }
}

/// A generated archive of every agent, backfilled from the default folders.
fn backfilled(corpus: &Path) -> (Sandbox, Manifest) {
    let mut spec = CorpusSpec::new(3803, 6_000_000);
    (spec.gemini_share, spec.qwen_share, spec.copilot_share) = (0.15, 0.25, 0.3);
    spec.opencode_share = 0.2;
    let m = transcope_corpus::generate(&spec, corpus).unwrap();
    let root = Path::new(&m.root);
    let sb = Sandbox::new();
    let out = run(sb.corpus_cmd(root, &["backfill", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["errors"], 0, "{said}");
    (sb, m)
}

#[test]
fn sessions_timeline_usage_and_the_report_show_every_agent() {
    let corpus = tempfile::tempdir().unwrap();
    let (sb, m) = backfilled(corpus.path());

    // sessions --json: every agent, with transitions, markers and usage.
    let sessions = common::parse_json_lines(&stdout_of(&sb, &["sessions", "--json", "--no-sync"]));
    let agent_of: BTreeMap<String, String> = sessions
        .iter()
        .map(|s| {
            (
                s["session"].as_str().unwrap().to_owned(),
                s["agent"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let per_agent = |field: &str| {
        let mut sums: BTreeMap<&str, u64> = BTreeMap::new();
        for s in &sessions {
            *sums.entry(s["agent"].as_str().unwrap()).or_default() += s[field].as_u64().unwrap();
        }
        sums
    };
    let transitions = per_agent("transitions");
    assert_eq!(transitions.keys().copied().collect::<Vec<_>>(), AGENTS);
    assert!(transitions.values().all(|n| *n > 0), "{transitions:?}");
    // The generator moved Qwen's and Copilot's sessions between folders and branches:
    // more transitions than sessions.
    for agent in ["qwen", "copilot"] {
        let n = sessions.iter().filter(|s| s["agent"] == agent).count() as u64;
        assert!(
            transitions[agent] > n,
            "{agent}: {} in {n}",
            transitions[agent]
        );
    }

    // The ledger holds each agent's markers: for Qwen and Copilot, exactly those the
    // generator placed in replies.
    let ledger = common::parse_json_lines(&stdout_of(&sb, &["ledger", "--json", "--no-sync"]));
    let mut found: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &ledger {
        let agent = agent_of[r["session"].as_str().unwrap()].as_str();
        *found.entry(agent).or_default() += 1;
    }
    let mut placed: BTreeMap<&str, u64> = BTreeMap::new();
    for e in &m.entries {
        *placed.entry(agent_of_kind(e.kind)).or_default() += e.markers;
    }
    for agent in ["qwen", "copilot"] {
        assert!(placed[agent] > 0, "{agent}: no markers generated");
        assert_eq!(found.get(agent), placed.get(agent), "{agent}");
    }

    // The sessions table names every agent.
    let table = stdout_of(&sb, &["sessions", "--no-sync"]);
    for agent in AGENTS {
        assert!(
            table.contains(&format!(" {agent} ")),
            "{agent} not in\n{table}"
        );
    }

    // timeline of a session of each agent: its transitions.
    for agent in AGENTS {
        let s = sessions
            .iter()
            .find(|s| s["agent"] == agent && s["transitions"].as_u64() > Some(0))
            .unwrap();
        let key = s["session"].as_str().unwrap();
        let items = common::parse_json_lines(&stdout_of(
            &sb,
            &["timeline", "--session", key, "--json", "--no-sync"],
        ));
        let shown = items.iter().filter(|i| i["kind"] == "transition").count() as u64;
        assert_eq!(Some(shown), s["transitions"].as_u64(), "{agent} {key}");
        let table = stdout_of(&sb, &["timeline", "--session", key, "--no-sync"]);
        assert!(table.contains("transition"), "{agent}: {table}");
    }

    // usage --by agent: every agent, each the sum of its sessions' requests.
    let by_agent = usage_by(&sb, "agent", "agent");
    assert_eq!(
        by_agent.keys().map(String::as_str).collect::<Vec<_>>(),
        AGENTS
    );
    let mut requests: BTreeMap<String, u64> = BTreeMap::new();
    for (session, c) in usage_by(&sb, "session", "session") {
        *requests.entry(agent_of[&session].clone()).or_default() += c[4];
    }
    for (agent, c) in &by_agent {
        assert!(c[4] > 0, "{agent}");
        assert_eq!(Some(&c[4]), requests.get(agent), "{agent}");
    }
    let table = stdout_of(&sb, &["usage", "--by", "agent", "--no-sync"]);
    for agent in AGENTS {
        assert!(
            table.contains(&format!(" {agent} ")),
            "{agent} not in\n{table}"
        );
    }

    // The report: every lane's agent, usage by agent.
    let page = sb.home.join("report.html");
    stdout_of(
        &sb,
        &["report", "--no-sync", "--html", page.to_str().unwrap()],
    );
    let page = std::fs::read_to_string(page).unwrap();
    let start = page.find("application/json").unwrap();
    let start = start + page[start..].find('>').unwrap() + 1;
    let end = start + page[start..].find("</script>").unwrap();
    let model: Value = serde_json::from_str(&page[start..end]).unwrap();
    let lanes = model["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), sessions.len());
    for l in lanes {
        let key = l["key"].as_str().unwrap();
        assert_eq!(
            l["agent"].as_str(),
            agent_of.get(key).map(String::as_str),
            "{key}"
        );
    }
    let shown: BTreeSet<&str> = model["usage"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["agent"].as_str().unwrap())
        .collect();
    assert_eq!(shown, BTreeSet::from(AGENTS));
}

/// `sessions --agent NAME`: exactly that agent's sessions, for every agent; a name no
/// adapter has is a usage error that lists the agents.
#[test]
fn sessions_of_one_agent() {
    let corpus = tempfile::tempdir().unwrap();
    let (sb, _) = backfilled(corpus.path());
    let all = common::parse_json_lines(&stdout_of(&sb, &["sessions", "--json", "--no-sync"]));
    for agent in AGENTS {
        let want: Vec<&Value> = all.iter().filter(|s| s["agent"] == agent).collect();
        assert!(!want.is_empty(), "{agent}");
        let got = common::parse_json_lines(&stdout_of(
            &sb,
            &["sessions", "--agent", agent, "--json", "--no-sync"],
        ));
        assert_eq!(got.iter().collect::<Vec<_>>(), want, "{agent}");
    }
    let out = run(sb.cmd(&["sessions", "--agent", "vim", "--no-sync"]), b"");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(AGENTS.iter().all(|a| err.contains(a)), "{err}");
}
