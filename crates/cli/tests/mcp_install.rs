//! `hook install --mcp` registers `transcope mcp` with each agent that starts MCP
//! servers, in the file and dialect its adapter declares, through the real binary in a
//! throw-away HOME with real files: Claude Code's `~/.claude.json` (or
//! `$CLAUDE_CONFIG_DIR/.claude.json`), Codex's `config.toml`, Gemini CLI's and Qwen
//! Code's `settings.json`, Copilot CLI's `mcp-config.json`. Idempotent, every other byte
//! kept, uninstall removing exactly the entry, another server of that name left alone;
//! `doctor` reads the registration back.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

mod common;

use common::text;

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    /// A HOME where every agent is installed (its folder exists).
    fn new() -> Home {
        let h = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        for d in [".claude", ".codex", ".gemini", ".qwen", ".copilot"] {
            fs::create_dir_all(h.path(d)).unwrap();
        }
        h
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn run(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_transcope"));
        cmd.args(args).env("HOME", self.dir.path());
        common::clean_env(&mut cmd);
        cmd.env("AGENTIHOOKS_HOME", self.path("agentihooks"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args, &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        err
    }
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Each agent's registration, in its own file and dialect, beside what was there; a
/// second run changes nothing; uninstall gives back every file byte for byte.
#[test]
fn each_agent_gets_its_own_registration_and_uninstall_gives_every_byte_back() {
    let h = Home::new();
    let claude = h.path(".claude.json");
    let claude_text = "{\n  \"numStartups\": 12,\n  \"mcpServers\": {\n    \"other\": {\"type\": \"stdio\", \"command\": \"x\", \"args\": []}\n  }\n}\n";
    write(&claude, claude_text);
    let codex = h.path(".codex/config.toml");
    let codex_text = "# my settings\nmodel = \"o3\"  # keep\n";
    write(&codex, codex_text);
    let gemini = h.path(".gemini/settings.json");
    let gemini_text = "{\"theme\":\"dark\"}";
    write(&gemini, gemini_text);
    let qwen = h.path(".qwen/settings.json");
    let copilot = h.path(".copilot/mcp-config.json");
    let before: Vec<(PathBuf, Option<String>)> = [&claude, &codex, &gemini, &qwen, &copilot]
        .iter()
        .map(|p| ((*p).clone(), fs::read_to_string(p).ok()))
        .collect();

    let said = h.ok(&["hook", "install", "--mcp"]);
    for title in [
        "Claude Code",
        "Codex",
        "Gemini CLI",
        "Qwen Code",
        "Copilot CLI",
    ] {
        assert!(
            said.contains(&format!(
                "{title} MCP: registered the MCP server `transcope`"
            )),
            "{title}: {said}"
        );
    }
    let c = json_of(&claude);
    assert_eq!(
        c["mcpServers"]["transcope"],
        json!({"type": "stdio", "command": "transcope", "args": ["mcp"]})
    );
    assert_eq!(c["mcpServers"]["other"]["command"], "x");
    assert_eq!(c["numStartups"], 12);
    let doc: toml_edit::DocumentMut = fs::read_to_string(&codex).unwrap().parse().unwrap();
    assert_eq!(
        doc["mcp_servers"]["transcope"]["command"].as_str(),
        Some("transcope")
    );
    assert_eq!(
        doc["mcp_servers"]["transcope"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>(),
        ["mcp"]
    );
    assert!(fs::read_to_string(&codex).unwrap().starts_with(codex_text));
    for p in [&gemini, &qwen] {
        assert_eq!(
            json_of(p)["mcpServers"]["transcope"],
            json!({"command": "transcope", "args": ["mcp"]}),
            "{}",
            p.display()
        );
    }
    assert_eq!(json_of(&gemini)["theme"], "dark");
    assert_eq!(
        json_of(&copilot)["mcpServers"]["transcope"],
        json!({"type": "local", "command": "transcope", "args": ["mcp"], "tools": ["*"]})
    );
    // The hooks were wired as well, as a plain install wires them.
    assert!(json_of(&h.path(".claude/settings.json"))["hooks"]["Stop"].is_array());

    // Idempotent.
    let snapshot: Vec<String> = [&claude, &codex, &gemini, &qwen, &copilot]
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect();
    let again = h.ok(&["hook", "install", "--mcp"]);
    assert!(
        again.contains("Claude Code MCP: already registered in"),
        "{again}"
    );
    let after: Vec<String> = [&claude, &codex, &gemini, &qwen, &copilot]
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(snapshot, after);

    // Uninstall: each file as it was (a file install made holds nothing of the user's).
    h.ok(&["hook", "uninstall", "--mcp"]);
    for (p, was) in &before {
        let now = fs::read_to_string(p).ok();
        match was {
            Some(w) if p == &codex => {
                assert_eq!(now.as_deref().map(str::trim_end), Some(w.trim_end()))
            }
            Some(w) => assert_eq!(now.as_ref(), Some(w), "{}", p.display()),
            None => {
                let v: Value = serde_json::from_str(now.as_deref().unwrap_or("{}")).unwrap();
                assert!(v.get("mcpServers").is_none(), "{}: {v}", p.display());
            }
        }
    }
}

/// `--agent` picks one agent; `$CLAUDE_CONFIG_DIR` moves Claude Code's file; `--program`
/// is the command registered; `--dry-run` writes nothing; `--settings` with `--mcp` is a
/// usage error.
#[test]
fn one_agent_its_moved_home_and_a_dry_run() {
    let h = Home::new();
    let moved = h.path("cfg");
    fs::create_dir_all(&moved).unwrap();
    let out = h.run(
        &[
            "hook",
            "install",
            "--mcp",
            "--agent",
            "claude",
            "--program",
            "/opt/bin/transcope",
        ],
        &[("CLAUDE_CONFIG_DIR", &moved)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        json_of(&moved.join(".claude.json"))["mcpServers"]["transcope"]["command"],
        "/opt/bin/transcope"
    );
    assert!(!h.path(".claude.json").exists());
    assert!(!h.path(".gemini/settings.json").exists());

    let out = h.run(
        &["hook", "install", "--mcp", "--agent", "gemini", "--dry-run"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("\"mcpServers\""),
        "{}",
        text(&out.stdout)
    );
    assert!(!h.path(".gemini/settings.json").exists());

    let out = h.run(
        &[
            "hook",
            "install",
            "--mcp",
            "--agent",
            "gemini",
            "--settings",
            "/tmp/x.json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--mcp"), "{}", text(&out.stderr));
}

/// Another server registered as `transcope` is neither replaced nor removed: install
/// says so and fails for that agent only; doctor reports it.
#[test]
fn another_server_of_that_name_is_left_alone() {
    let h = Home::new();
    let gemini = h.path(".gemini/settings.json");
    let theirs =
        "{\"mcpServers\": {\"transcope\": {\"command\": \"node\", \"args\": [\"mine.js\"]}}}\n";
    write(&gemini, theirs);
    let out = h.run(&["hook", "install", "--mcp"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("Gemini CLI MCP:") && err.contains("another server's"),
        "{err}"
    );
    assert!(err.contains("Qwen Code MCP: registered"), "{err}");
    // Its entry as it was (the hooks were wired beside it).
    let entry = |p: &Path| json_of(p)["mcpServers"].clone();
    assert_eq!(
        entry(&gemini),
        json!({"transcope": {"command": "node", "args": ["mine.js"]}})
    );
    h.ok(&["hook", "uninstall", "--mcp", "--agent", "gemini"]);
    assert_eq!(fs::read_to_string(&gemini).unwrap(), theirs);

    let out = h.run(&["doctor", "--json"], &[]);
    let checks: Vec<Value> = common::parse_json_lines(&text(&out.stdout));
    let gem = checks
        .iter()
        .find(|c| c["check"] == "Gemini CLI MCP server")
        .expect("a Gemini MCP check");
    assert_eq!(gem["status"], "fail", "{gem}");
}

/// `doctor` checks each registration: registered and its program found, registered
/// with a program that is not there, not registered (optional, said how).
#[test]
fn doctor_reads_each_registration_back() {
    let h = Home::new();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_transcope"));
    let doctor = |h: &Home| -> Vec<Value> {
        let out = h.run(&["doctor", "--json"], &[]);
        common::parse_json_lines(&text(&out.stdout))
    };
    let find = |checks: &[Value], name: &str| -> Value {
        checks
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {checks:?}"))
            .clone()
    };
    let before = doctor(&h);
    let c = find(&before, "Codex MCP server");
    assert_eq!(c["status"], "ok");
    assert!(
        c["detail"].as_str().unwrap().contains("not registered")
            && c["detail"]
                .as_str()
                .unwrap()
                .contains("hook install --mcp --agent codex"),
        "{c}"
    );
    // Copilot CLI has hooks too now, so the advice names it like the others.
    let copilot = find(&before, "Copilot CLI MCP server");
    assert!(
        copilot["detail"]
            .as_str()
            .unwrap()
            .contains("`transcope hook install --mcp --agent copilot`"),
        "{copilot}"
    );

    h.ok(&[
        "hook",
        "install",
        "--mcp",
        "--agent",
        "codex",
        "--program",
        bin.to_str().unwrap(),
    ]);
    h.ok(&[
        "hook",
        "install",
        "--mcp",
        "--agent",
        "claude",
        "--program",
        "/nowhere/transcope",
    ]);
    let after = doctor(&h);
    let c = find(&after, "Codex MCP server");
    assert_eq!(c["status"], "ok", "{c}");
    assert!(
        c["detail"].as_str().unwrap().contains("registered in"),
        "{c}"
    );
    let c = find(&after, "Claude Code MCP server");
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        c["detail"].as_str().unwrap().contains("/nowhere/transcope"),
        "{c}"
    );

    // An agent not installed and not registered is not reported.
    fs::remove_dir_all(h.path(".qwen")).unwrap();
    assert!(doctor(&h)
        .iter()
        .all(|c| c["check"] != "Qwen Code MCP server"));
}
