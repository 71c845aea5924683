//! Setting up, through the real binary in a throw-away HOME: `hook install` and
//! `hook uninstall` on Claude Code's, Codex's and Gemini CLI's real settings files
//! (none, one with other settings and hooks, twice, `--dry-run`), `doctor` before and
//! after, and the completion scripts a shell accepts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

mod common;

use common::text;

/// A throw-away HOME with the agents' folders chosen by the test, and a PATH folder
/// holding `transcope` (a link to the binary under test).
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let h = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(h.bin()).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_transcope"), h.bin().join("transcope"))
            .unwrap();
        h
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn bin(&self) -> PathBuf {
        self.path().join("bin")
    }

    fn claude(&self) -> PathBuf {
        self.path().join(".claude/settings.json")
    }

    fn codex(&self) -> PathBuf {
        self.path().join(".codex/config.toml")
    }

    fn gemini(&self) -> PathBuf {
        self.path().join(".gemini/settings.json")
    }

    /// `transcope ARGS` with HOME here, the agents' variables unset, and PATH the
    /// system's folders plus (when `on_path`) the folder holding `transcope`.
    fn run_with(&self, args: &[&str], on_path: bool) -> Output {
        let mut path = String::from("/usr/local/bin:/usr/bin:/bin");
        if on_path {
            path = format!("{}:{path}", self.bin().display());
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_transcope"));
        cmd.args(args).env("HOME", self.path()).env("PATH", path);
        common::clean_env(&mut cmd);
        cmd.env("AGENTIHOOKS_HOME", self.path().join(".agentihooks"));
        cmd.output().unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, true)
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        out
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap()
}

fn backups(path: &Path) -> Vec<PathBuf> {
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    let mut b: Vec<PathBuf> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            n.starts_with(&format!("{name}.transcope-")) && n.ends_with(".bak")
        })
        .collect();
    b.sort();
    b
}

/// The commands of every hook under `hooks.<event>`, group by group.
fn commands(settings: &Value, event: &str) -> Vec<Vec<String>> {
    settings["hooks"][event]
        .as_array()
        .map(|groups| {
            groups
                .iter()
                .map(|g| {
                    g["hooks"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|h| h["command"].as_str().unwrap().to_owned())
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

// --- Claude Code -----------------------------------------------------------------

#[test]
fn claude_install_on_no_file_makes_one_with_the_three_hooks_and_uninstall_empties_it() {
    let h = Home::new();
    let out = h.ok(&["hook", "install", "--agent", "claude"]);
    let err = text(&out.stderr);
    assert!(
        err.contains("Claude Code: wired SessionStart, Stop, SubagentStop"),
        "{err}"
    );
    let v = json_of(&h.claude());
    assert_eq!(keys(&v["hooks"]), ["SessionStart", "Stop", "SubagentStop"]);
    assert_eq!(
        commands(&v, "SessionStart"),
        [["transcope hook session-start"]]
    );
    assert_eq!(commands(&v, "Stop"), [["transcope hook stop"]]);
    assert_eq!(commands(&v, "SubagentStop"), [["transcope hook stop"]]);
    assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["type"], "command");
    assert!(backups(&h.claude()).is_empty(), "nothing to back up");

    h.ok(&["hook", "uninstall", "--agent", "claude"]);
    assert_eq!(json_of(&h.claude()), json!({}));
}

/// A settings file with other keys, other hooks on the same events and other events.
const CLAUDE_SETTINGS: &str = r#"{
    "model": "opus",
    "permissions": {
        "allow": [
            "Bash(ls:*)"
        ]
    },
    "hooks": {
        "Stop": [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "notify-send done"
                    }
                ]
            }
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": "/opt/guard.sh"
                    }
                ]
            }
        ]
    },
    "statusLine": {
        "type": "command",
        "command": "transcope statusline"
    }
}
"#;

#[test]
fn claude_install_keeps_every_other_setting_and_hook_and_is_idempotent() {
    let h = Home::new();
    write(&h.claude(), CLAUDE_SETTINGS);
    let before: Value = serde_json::from_str(CLAUDE_SETTINGS).unwrap();

    h.ok(&["hook", "install"]);
    let after = json_of(&h.claude());
    // Other keys, in their order, untouched.
    assert_eq!(keys(&after), keys(&before));
    for k in ["model", "permissions", "statusLine"] {
        assert_eq!(after[k], before[k], "{k}");
    }
    assert_eq!(after["hooks"]["PreToolUse"], before["hooks"]["PreToolUse"]);
    // The user's Stop hook stays first; ours is a group of its own after it.
    assert_eq!(
        commands(&after, "Stop"),
        [vec!["notify-send done"], vec!["transcope hook stop"]]
    );
    assert_eq!(
        commands(&after, "SessionStart"),
        [["transcope hook session-start"]]
    );
    assert_eq!(commands(&after, "SubagentStop"), [["transcope hook stop"]]);
    // The file's own indentation (four spaces) is kept.
    assert!(read(&h.claude()).contains("\n    \"model\": \"opus\","));
    // Backed up first, as it was.
    let b = backups(&h.claude());
    assert_eq!(b.len(), 1);
    assert_eq!(read(&b[0]), CLAUDE_SETTINGS);

    // Twice: nothing changes, nothing more is backed up, and it says so.
    let wired = read(&h.claude());
    let out = h.ok(&["hook", "install"]);
    assert!(
        text(&out.stderr).contains("nothing to do"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(read(&h.claude()), wired);
    assert_eq!(backups(&h.claude()).len(), 1);

    // Uninstall gives back the original JSON value (here, byte for byte).
    h.ok(&["hook", "uninstall"]);
    assert_eq!(json_of(&h.claude()), before);
    assert_eq!(read(&h.claude()), CLAUDE_SETTINGS);
    let out = h.ok(&["hook", "uninstall"]);
    assert!(text(&out.stderr).contains("nothing to remove"));
}

#[test]
fn claude_dry_run_prints_the_result_and_writes_nothing() {
    let h = Home::new();
    // No file: none is made.
    let out = h.ok(&["hook", "install", "--agent", "claude", "--dry-run"]);
    assert!(!h.claude().exists());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(commands(&printed, "Stop"), [["transcope hook stop"]]);
    assert!(text(&out.stderr).contains("nothing written"));

    // A file: left as it was; what is printed is what install then writes.
    write(&h.claude(), CLAUDE_SETTINGS);
    let out = h.ok(&["hook", "install", "--agent", "claude", "--dry-run"]);
    assert_eq!(read(&h.claude()), CLAUDE_SETTINGS);
    assert!(backups(&h.claude()).is_empty());
    h.ok(&["hook", "install", "--agent", "claude"]);
    assert_eq!(text(&out.stdout), read(&h.claude()));

    // Uninstall's dry run too.
    let wired = read(&h.claude());
    let out = h.ok(&["hook", "uninstall", "--agent", "claude", "--dry-run"]);
    assert_eq!(read(&h.claude()), wired);
    assert_eq!(text(&out.stdout), CLAUDE_SETTINGS);
}

#[test]
fn claude_config_dir_and_settings_name_the_file() {
    let h = Home::new();
    let dir = h.path().join("elsewhere");
    let out = Command::new(env!("CARGO_BIN_EXE_transcope"))
        .args(["hook", "install", "--agent", "claude"])
        .env("HOME", h.path())
        .env("CLAUDE_CONFIG_DIR", &dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(dir.join("settings.json").exists());
    assert!(!h.claude().exists());

    let other = h.path().join("project/.claude/settings.local.json");
    let f = other.to_str().unwrap();
    h.ok(&["hook", "install", "--agent", "claude", "--settings", f]);
    assert_eq!(
        commands(&json_of(&other), "Stop"),
        [["transcope hook stop"]]
    );
    // --settings names one file: without --agent it is a usage error.
    let out = h.run(&["hook", "install", "--settings", f]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_settings_file_that_is_not_json_is_left_as_it_was() {
    let h = Home::new();
    write(&h.claude(), "{ // a comment\n}\n");
    let out = h.run(&["hook", "install", "--agent", "claude"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("left as it was"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(read(&h.claude()), "{ // a comment\n}\n");
}

// --- Codex -----------------------------------------------------------------------

const CODEX_CONFIG: &str = r#"# my Codex settings
model = "o3"   # the one I like

[features]
memories = true

[[hooks.Stop]]
[[hooks.Stop.hooks]]
type = "command"
command = "notify-send 'codex done'"

[projects."/work/alpha"]
trust_level = "trusted"
"#;

/// The hash Codex trusts a hook by, computed here from its definition: SHA-256 of the
/// canonical JSON of the normalised hook identity.
fn codex_hash(label: &str, command: &str, timeout: u64) -> String {
    let identity = format!(
        r#"{{"event_name":"{label}","hooks":[{{"async":false,"command":"{command}","timeout":{timeout},"type":"command"}}]}}"#
    );
    let hex: String = Sha256::digest(identity.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

#[test]
fn codex_install_adds_trusted_hooks_keeping_comments_and_uninstall_restores_the_file() {
    let h = Home::new();
    write(&h.codex(), CODEX_CONFIG);
    h.ok(&["hook", "install"]);
    let after = read(&h.codex());
    // The user's text survives, comments included, at the top and in its order.
    assert!(after.starts_with("# my Codex settings\nmodel = \"o3\"   # the one I like\n"));
    assert!(after.contains("command = \"notify-send 'codex done'\""));
    assert!(after.contains("[projects.\"/work/alpha\"]\ntrust_level = \"trusted\""));

    let doc: toml_edit::DocumentMut = after.parse().unwrap();
    let hooks = &doc["hooks"];
    // The user's Stop group first, ours after it; our SessionStart the only one.
    let stop = hooks["Stop"].as_array_of_tables().unwrap();
    assert_eq!(stop.len(), 2);
    let ours = &stop.get(1).unwrap()["hooks"].as_array_of_tables().unwrap();
    let handler = ours.get(0).unwrap();
    assert_eq!(handler["type"].as_str(), Some("command"));
    assert_eq!(handler["command"].as_str(), Some("transcope hook stop"));
    assert_eq!(handler["timeout"].as_integer(), Some(60));
    let start = hooks["SessionStart"].as_array_of_tables().unwrap();
    assert_eq!(start.len(), 1);
    // Each trusted by the hash Codex records, under `<config.toml>:<event>:<group>:0`.
    let config = std::fs::canonicalize(h.codex()).unwrap();
    let state = hooks["state"].as_table().unwrap();
    assert_eq!(state.len(), 2);
    let stop_key = format!("{}:stop:1:0", config.display());
    let start_key = format!("{}:session_start:0:0", config.display());
    assert_eq!(
        state[&stop_key]["trusted_hash"].as_str(),
        Some(codex_hash("stop", "transcope hook stop", 60).as_str())
    );
    assert_eq!(
        state[&start_key]["trusted_hash"].as_str(),
        Some(codex_hash("session_start", "transcope hook session-start", 60).as_str())
    );
    // The feature switch said explicitly, the user's other features kept.
    assert_eq!(doc["features"]["hooks"].as_bool(), Some(true));
    assert_eq!(doc["features"]["memories"].as_bool(), Some(true));
    assert_eq!(backups(&h.codex()).len(), 1);

    // Twice: the same file.
    let out = h.ok(&["hook", "install", "--agent", "codex"]);
    assert!(text(&out.stderr).contains("nothing to do"));
    assert_eq!(read(&h.codex()), after);

    // Uninstall: the original file, byte for byte.
    h.ok(&["hook", "uninstall", "--agent", "codex"]);
    assert_eq!(read(&h.codex()), CODEX_CONFIG);
}

#[test]
fn codex_install_on_no_file_and_its_dry_run() {
    let h = Home::new();
    std::fs::create_dir_all(h.codex().parent().unwrap()).unwrap();
    let out = h.ok(&["hook", "install", "--agent", "codex", "--dry-run"]);
    assert!(!h.codex().exists());
    let printed = text(&out.stdout);
    h.ok(&["hook", "install", "--agent", "codex"]);
    assert_eq!(read(&h.codex()), printed);
    let doc: toml_edit::DocumentMut = printed.parse().unwrap();
    assert_eq!(
        doc["hooks"]["SessionStart"]
            .as_array_of_tables()
            .unwrap()
            .len(),
        1
    );
    h.ok(&["hook", "uninstall", "--agent", "codex"]);
    assert_eq!(read(&h.codex()).trim(), "");
}

#[test]
fn codex_hooks_switched_off_are_reported_not_overridden() {
    let h = Home::new();
    write(&h.codex(), "[features]\nhooks = false\n");
    let out = h.ok(&["hook", "install", "--agent", "codex"]);
    assert!(
        text(&out.stderr).contains("hooks = false"),
        "{}",
        text(&out.stderr)
    );
    let doc: toml_edit::DocumentMut = read(&h.codex()).parse().unwrap();
    assert_eq!(doc["features"]["hooks"].as_bool(), Some(false));
    h.ok(&["hook", "install", "--agent", "claude"]);
    let out = h.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("hooks = false"));
}

// --- Gemini CLI ------------------------------------------------------------------

const GEMINI_SETTINGS: &str = r#"{
  "theme": "GitHub",
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "write_file",
        "hooks": [
          {
            "name": "guard",
            "type": "command",
            "command": "/opt/guard.sh",
            "timeout": 5000
          }
        ]
      }
    ]
  }
}
"#;

#[test]
fn gemini_install_uses_its_own_events_and_milliseconds_and_uninstall_restores() {
    let h = Home::new();
    write(&h.gemini(), GEMINI_SETTINGS);
    h.ok(&["hook", "install"]);
    let v = json_of(&h.gemini());
    assert_eq!(v["theme"], "GitHub");
    assert_eq!(
        keys(&v["hooks"]),
        ["BeforeTool", "SessionStart", "AfterAgent"]
    );
    assert_eq!(
        commands(&v, "SessionStart"),
        [["transcope hook session-start"]]
    );
    assert_eq!(commands(&v, "AfterAgent"), [["transcope hook stop"]]);
    assert_eq!(v["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"], 60000);
    assert_eq!(
        v["hooks"]["AfterAgent"][0]["hooks"][0]["name"],
        "transcope-stop"
    );
    let wired = read(&h.gemini());
    h.ok(&["hook", "install", "--agent", "gemini"]);
    assert_eq!(read(&h.gemini()), wired);
    h.ok(&["hook", "uninstall"]);
    assert_eq!(read(&h.gemini()), GEMINI_SETTINGS);
}

#[test]
fn all_wires_only_the_agents_that_are_here() {
    let h = Home::new();
    h.ok(&["hook", "install"]);
    assert!(h.claude().exists());
    assert!(!h.codex().parent().unwrap().exists(), "no ~/.codex made");
    assert!(!h.gemini().parent().unwrap().exists(), "no ~/.gemini made");
}

// --- doctor ----------------------------------------------------------------------

#[test]
fn doctor_fails_on_a_broken_setup_and_passes_after_install() {
    let h = Home::new();
    // Claude Code and Codex installed, neither wired: nothing would call transcope.
    std::fs::create_dir_all(h.claude().parent().unwrap()).unwrap();
    std::fs::create_dir_all(h.codex().parent().unwrap()).unwrap();
    let out = h.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(
        report.contains("fail  Claude Code hooks: not wired"),
        "{report}"
    );
    assert!(report.contains("fix: transcope hook install"), "{report}");
    assert!(text(&out.stderr).contains("failed"));

    h.ok(&["hook", "install"]);
    let out = h.run(&["doctor"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(!report.contains("fail"), "{report}");
    assert!(
        report.contains("ok    Codex hooks: SessionStart, Stop wired"),
        "{report}"
    );
    let on_path = h.bin().join("transcope");
    assert!(report.contains(&on_path.display().to_string()), "{report}");

    // As JSON: one object per check.
    let out = h.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    for line in text(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["status"], "ok", "{line}");
        assert!(v["check"].is_string() && v["detail"].is_string());
    }

    // The same set-up without transcope on the PATH is broken: the hooks cannot run.
    let out = h.run_with(&["doctor"], false);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(report.contains("fail  transcope on the PATH"), "{report}");
    assert!(report.contains("which is not found"), "{report}");
}

/// A machine with Codex alone (issue 34): Claude Code and Gemini CLI are not
/// installed, so there is nothing to wire for them, alike; doctor fails only while
/// Codex's hooks are not wired, and passes once they are.
#[test]
fn doctor_on_a_machine_with_only_codex_passes_once_codex_is_wired() {
    let h = Home::new();
    write(&h.codex(), "model = \"gpt-5\"\n");
    let out = h.run(&["doctor"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("fail  Codex hooks: not wired"), "{report}");
    assert!(
        text(&out.stderr).contains("1 check failed"),
        "{}",
        text(&out.stderr)
    );

    h.ok(&["hook", "install", "--agent", "codex"]);
    let out = h.run(&["doctor"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    for agent in ["Claude Code", "Gemini CLI"] {
        assert!(
            report.lines().any(|l| l
                .starts_with(&format!("ok    {agent} hooks: not installed here"))
                && l.ends_with("nothing to wire")),
            "{agent}: {report}"
        );
    }
    assert!(
        report.contains("ok    Codex hooks: SessionStart, Stop wired"),
        "{report}"
    );
    assert!(
        !report.contains("fail") && !report.contains("warn"),
        "{report}"
    );
    assert!(!h.claude().parent().unwrap().exists(), "no ~/.claude made");

    // A second agent installed and not wired beside a wired one is a warning only.
    std::fs::create_dir_all(h.gemini().parent().unwrap()).unwrap();
    let out = h.run(&["doctor"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(
        report.contains("warn  Gemini CLI hooks: not wired"),
        "{report}"
    );
}

#[test]
fn doctor_says_an_unwritable_home_is_broken() {
    let h = Home::new();
    h.ok(&["hook", "install"]);
    let file = h.path().join("a-file");
    write(&file, "");
    let home = file.join("home");
    let out = h.run(&["--home", home.to_str().unwrap(), "doctor"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("fail  home writable"),
        "{}",
        text(&out.stdout)
    );
}

// --- completions and the manual page ---------------------------------------------

fn shell_accepts(shell: &str, check: &[&str], script: &Path) -> Option<bool> {
    let out = Command::new(shell).args(check).arg(script).output().ok()?;
    Some(out.status.success())
}

#[test]
fn completion_scripts_are_accepted_by_their_shells() {
    let h = Home::new();
    for (shell, check, mark) in [
        ("bash", &["-n"][..], "complete -F"),
        ("zsh", &["-n"][..], "#compdef transcope"),
        ("fish", &["--no-execute"][..], "complete -c transcope"),
    ] {
        let out = h.ok(&["completions", shell]);
        let script = text(&out.stdout);
        assert!(script.contains(mark), "{shell}: {script:.200}");
        assert!(
            script.contains("install") && script.contains("doctor"),
            "{shell}"
        );
        let file = h.path().join(format!("transcope.{shell}"));
        std::fs::write(&file, &script).unwrap();
        match shell_accepts(shell, check, &file) {
            Some(ok) => assert!(ok, "{shell} rejects its completion script"),
            // bash is always there; zsh and fish only where installed.
            None => assert_ne!(shell, "bash", "bash is needed for this test"),
        }
    }
    let out = h.run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_manual_page_is_roff_for_every_command() {
    let h = Home::new();
    let out = h.ok(&["man"]);
    let page = text(&out.stdout);
    assert!(page.contains(".TH transcope 1"), "{page:.300}");
    for command in ["doctor", "report", "hook install", "scope record", "man"] {
        assert!(
            page.contains(&format!("transcope {command}")),
            "{command} is not in the page"
        );
    }
    let dir = h.path().join("man");
    h.ok(&["man", "--dir", dir.to_str().unwrap()]);
    for page in [
        "transcope.1",
        "transcope-hook-install.1",
        "transcope-doctor.1",
    ] {
        assert!(dir.join(page).exists(), "{page}");
    }
}

/// Issue 34: the page `transcope man` prints names no other page (the per-command pages
/// exist only where `--dir` wrote them), and every page `--dir` writes names only pages
/// it wrote beside it.
#[test]
fn issue34_man_pages_refer_only_to_pages_that_are_installed_with_them() {
    fn refs(page: &str) -> Vec<String> {
        let page = page.replace("\\-", "-");
        let mut found = Vec::new();
        for (at, _) in page.match_indices("(1)") {
            let name: String = page[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if name.starts_with("transcope") {
                found.push(name);
            }
        }
        found
    }
    let h = Home::new();
    let page = text(&h.ok(&["man"]).stdout);
    assert_eq!(refs(&page), Vec::<String>::new(), "{page}");

    let dir = h.path().join("man");
    h.ok(&["man", "--dir", dir.to_str().unwrap()]);
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let page = read(&entry.unwrap().path());
        for name in refs(&page) {
            assert!(dir.join(format!("{name}.1")).exists(), "{name}(1)");
            checked += 1;
        }
    }
    assert!(checked > 10, "the pages --dir writes refer to one another");
}

/// Issue 34: `--help` lists `man`.
#[test]
fn issue34_help_lists_man() {
    let h = Home::new();
    let help = text(&h.ok(&["--help"]).stdout);
    assert!(
        help.lines().any(|l| l.trim_start().starts_with("man ")),
        "{help}"
    );
}

// --- what the wired hooks receive ------------------------------------------------

/// Codex's Stop hook sends `session_id` (the thread id, the UUID in the rollout's name)
/// and `transcript_path` (the rollout), as its StopCommandInput has them: that is a
/// Stop over the rollout, recorded under the same key and rows as `backfill` gives it.
#[test]
fn a_codex_stop_payload_is_a_stop_over_its_rollout_under_the_rollout_uuid() {
    let h = Home::new();
    let uuid = "019b04ae-b1c6-7c72-a134-a4c2de66058c";
    let rollout = common::testdata().join(format!(
        "sample-archive/codex/sessions/2025/12/10/rollout-2025-12-10T04-55-16-{uuid}.jsonl"
    ));
    let payload = json!({
        "session_id": uuid,
        "turn_id": "1",
        "transcript_path": rollout,
        "cwd": h.path(),
        "hook_event_name": "Stop",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "stop_hook_active": false,
        "last_assistant_message": null,
    });
    let hooked = h.path().join("hooked");
    let out = common::run(
        &hooked,
        &["hook", "stop", "--json"],
        &payload.to_string(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() || text(&out.stdout).starts_with('{'));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["scope_key"], uuid, "{summary}");
    assert_eq!(summary["error"], Value::Null, "{summary}");

    let backfilled = h.path().join("backfilled");
    let out = common::run(
        &backfilled,
        &["backfill", "--no-markers", rollout.to_str().unwrap()],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let log = |home: &Path| read(&home.join(format!("brain/session-scopes/{uuid}.jsonl")));
    assert!(!log(&hooked).is_empty());
    assert_eq!(log(&hooked), log(&backfilled));
}

/// Codex's older `notify` program gets `{"type": "agent-turn-complete", "thread-id":
/// …}` as its last argument and no transcript path: `hook codex-notify` finds the
/// rollout by the thread id under `$CODEX_HOME/sessions` and runs a Stop over it.
#[test]
fn a_codex_notify_notification_is_a_stop_over_the_rollout_of_its_thread() {
    let h = Home::new();
    let uuid = "019b04ae-b1c6-7c72-a134-a4c2de66058c";
    let name = format!("rollout-2025-12-10T04-55-16-{uuid}.jsonl");
    let day = h.path().join(".codex/sessions/2025/12/10");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::copy(
        common::testdata()
            .join("sample-archive/codex/sessions/2025/12/10")
            .join(&name),
        day.join(&name),
    )
    .unwrap();
    let notification = json!({
        "type": "agent-turn-complete",
        "thread-id": uuid,
        "turn-id": "7",
        "cwd": h.path(),
        "client": "codex-tui",
        "input-messages": ["go"],
        "last-assistant-message": "done",
    });
    let out = h.ok(&["hook", "codex-notify", "--json", &notification.to_string()]);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["scope_key"], uuid, "{summary}");
    assert_eq!(summary["error"], Value::Null, "{summary}");
    let log = h
        .path()
        .join(format!(".agentihooks/brain/session-scopes/{uuid}.jsonl"));
    let rows = read(&log);
    assert!(!rows.is_empty());

    // The same rows a backfill of that rollout writes.
    let backfilled = h.path().join("backfilled");
    let out = common::run(
        &backfilled,
        &[
            "backfill",
            "--no-markers",
            day.join(&name).to_str().unwrap(),
        ],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        rows,
        read(&backfilled.join(format!("brain/session-scopes/{uuid}.jsonl")))
    );

    // Another notification type, or a thread with no rollout: nothing written, exit 0.
    let other = json!({"type": "approval-requested", "thread-id": uuid}).to_string();
    h.ok(&["hook", "codex-notify", &other]);
    let missing = json!({"type": "agent-turn-complete", "thread-id": "0000"}).to_string();
    let out = h.ok(&["hook", "codex-notify", &missing]);
    assert!(
        text(&out.stderr).contains("no rollout"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(read(&log), rows);
}

#[test]
fn codex_notify_is_wired_on_request_and_uninstalled_with_the_rest() {
    let h = Home::new();
    write(&h.codex(), CODEX_CONFIG);
    h.ok(&["hook", "install", "--agent", "codex", "--codex-notify"]);
    let doc: toml_edit::DocumentMut = read(&h.codex()).parse().unwrap();
    let argv: Vec<&str> = doc["notify"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(argv, ["transcope", "hook", "codex-notify"]);
    h.ok(&["hook", "uninstall", "--agent", "codex"]);
    assert_eq!(read(&h.codex()), CODEX_CONFIG);

    // A notify program of the user's own is left alone.
    let own = format!("notify = [\"notify-send\"]\n{CODEX_CONFIG}");
    write(&h.codex(), &own);
    h.ok(&["hook", "install", "--agent", "codex", "--codex-notify"]);
    let doc: toml_edit::DocumentMut = read(&h.codex()).parse().unwrap();
    assert_eq!(doc["notify"].as_array().unwrap().len(), 1);
    h.ok(&["hook", "uninstall", "--agent", "codex"]);
    assert_eq!(read(&h.codex()), own);
}

/// Issue 36: doctor names Claude Code's clean-up setting and says what the archive
/// lacks of the transcripts the agents still have, and how to fix it.
#[test]
fn doctor_names_claudes_clean_up_and_what_the_archive_lacks() {
    let h = Home::new();
    std::fs::create_dir_all(h.claude().parent().unwrap()).unwrap();
    std::fs::write(h.claude(), "{\"cleanupPeriodDays\": 7}\n").unwrap();
    h.ok(&["hook", "install", "--agent", "claude"]);
    let t = h
        .path()
        .join(".claude/projects/-w/0f0e0d0c-0000-4000-8000-000000000001.jsonl");
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    let sample = common::testdata().join("sample-archive/claude/projects");
    let first = std::fs::read_dir(&sample)
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    std::fs::copy(&first, &t).unwrap();
    let checks = |out: Output| -> Vec<Value> {
        text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let find = |cs: &[Value], name: &str| -> Value {
        cs.iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name} check: {cs:?}"))
            .clone()
    };
    let cs = checks(h.run(&["doctor", "--json"]));
    let clean = find(&cs, "Claude Code clean-up");
    assert_eq!(clean["status"], "ok");
    assert!(
        clean["detail"]
            .as_str()
            .unwrap()
            .contains("cleanupPeriodDays is 7"),
        "{clean}"
    );
    let a = find(&cs, "archive");
    assert_eq!(a["status"], "warn", "{a}");
    assert!(
        a["detail"]
            .as_str()
            .unwrap()
            .contains("1 of 1 transcripts not archived"),
        "{a}"
    );
    assert!(
        a["fix"].as_str().unwrap().contains("transcope archive"),
        "{a}"
    );

    h.ok(&["archive"]);
    let a = find(&checks(h.run(&["doctor", "--json"])), "archive");
    assert_eq!(a["status"], "ok", "{a}");
    // The transcript grows: the archive is behind it until the next keep.
    let mut f = std::fs::OpenOptions::new().append(true).open(&t).unwrap();
    std::io::Write::write_all(&mut f, b"{\"type\":\"user\"}\n").unwrap();
    let a = find(&checks(h.run(&["doctor", "--json"])), "archive");
    assert!(
        a["detail"].as_str().unwrap().contains("1 not up to date"),
        "{a}"
    );

    // Turned off: both say so, and what it costs.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_transcope"));
    cmd.args(["doctor", "--json"]).env("HOME", h.path());
    common::clean_env(&mut cmd);
    cmd.env("AGENTIHOOKS_HOME", h.path().join(".agentihooks"))
        .env("TRANSCOPE_ARCHIVE", "off");
    let cs = checks(cmd.output().unwrap());
    let clean = find(&cs, "Claude Code clean-up");
    assert_eq!(clean["status"], "warn");
    assert!(
        clean["detail"].as_str().unwrap().contains("will be lost"),
        "{clean}"
    );
    assert_eq!(find(&cs, "archive")["status"], "warn");
}
