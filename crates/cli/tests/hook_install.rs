//! `hook install` a user can trust (issue 33, item 4), through the real binary in a
//! throw-away HOME with real files and modes: a backup as private as the file, one
//! backup per change and said where; a byte-faithful edit of JSON (numbers, repeated
//! keys, `-0`, compact objects, layout kept outside transcope's entries) and of TOML;
//! a read-only file or folder refused; and a writer racing install and uninstall that
//! loses no key, whether it takes transcope's lock or not.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod common;

use common::text;

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn claude(&self) -> PathBuf {
        self.dir.path().join(".claude/settings.json")
    }

    fn gemini(&self) -> PathBuf {
        self.dir.path().join(".gemini/settings.json")
    }

    fn codex(&self) -> PathBuf {
        self.dir.path().join(".codex/config.toml")
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_transcope"));
        cmd.args(args).env("HOME", self.dir.path());
        common::clean_env(&mut cmd);
        cmd.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        err
    }
}

fn write(path: &Path, text: &str, mode: u32) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Everything in `path`'s folder but `path`: backups, lock, temporary files.
fn beside(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| *n != path.file_name().unwrap().to_str().unwrap())
        .collect();
    names.sort();
    names
}

fn backups(path: &Path) -> Vec<PathBuf> {
    beside(path)
        .into_iter()
        .filter(|n| n.ends_with(".bak"))
        .map(|n| path.with_file_name(n))
        .collect()
}

/// The backup a run's message names.
fn said_backup(stderr: &str) -> PathBuf {
    let at = stderr.find("(backup: ").expect(stderr) + "(backup: ".len();
    let rest = &stderr[at..];
    PathBuf::from(&rest[..rest.find([',', ')']).unwrap()])
}

// --- modes and backups -----------------------------------------------------------

/// A Claude settings file holding a secret.
const SECRET_SETTINGS: &str =
    "{\n  \"env\": {\n    \"ANTHROPIC_API_KEY\": \"sk-ant-not-for-others\"\n  }\n}\n";

/// Write `text` at `path` with `mode`, install for `agent`: the file keeps its mode
/// and the backup the run names has it too; that backup.
fn install_keeps_mode(h: &Home, path: &Path, agent: &str, text: &str, mode_bits: u32) -> PathBuf {
    write(path, text, mode_bits);
    let err = h.ok(&["hook", "install", "--agent", agent]);
    assert_eq!(mode(path), mode_bits);
    let b = said_backup(&err);
    assert_eq!(mode(&b), mode_bits, "{}", b.display());
    assert_eq!(read(&b), text);
    b
}

#[test]
fn a_0600_settings_file_keeps_0600_and_its_backup_is_0600() {
    let h = Home::new();
    let b = install_keeps_mode(&h, &h.claude(), "claude", SECRET_SETTINGS, 0o600);
    // Said where the backup went; the only one, and nothing else left beside the file
    // but the lock (no temporary file).
    assert_eq!(backups(&h.claude()), std::slice::from_ref(&b));
    let lock = "settings.json.transcope.lock".to_owned();
    assert!(beside(&h.claude()).contains(&lock));
    assert_eq!(beside(&h.claude()).len(), 2, "{:?}", beside(&h.claude()));
    // Codex's config.toml (MCP secrets) likewise.
    let toml = "[mcp_servers.x]\nenv = { TOKEN = \"secret\" }\n";
    install_keeps_mode(&h, &h.codex(), "codex", toml, 0o600);
}

/// The mode is the original's exactly, not narrowed by the umask (022 here) nor widened.
#[test]
fn backup_and_file_keep_a_mode_the_umask_would_change() {
    let h = Home::new();
    install_keeps_mode(&h, &h.gemini(), "gemini", "{}\n", 0o664);
}

#[test]
fn one_backup_per_change_not_per_run() {
    let h = Home::new();
    write(&h.claude(), SECRET_SETTINGS, 0o600);
    h.ok(&["hook", "install", "--agent", "claude"]);
    let wired = read(&h.claude());
    let ino = fs::metadata(h.claude()).unwrap().ino();
    // A run with nothing to change writes nothing and backs nothing up.
    for _ in 0..3 {
        let err = h.ok(&["hook", "install", "--agent", "claude"]);
        assert!(err.contains("nothing to do"), "{err}");
        assert!(!err.contains("backup"), "{err}");
    }
    assert_eq!(
        fs::metadata(h.claude()).unwrap().ino(),
        ino,
        "not rewritten"
    );
    assert_eq!(read(&h.claude()), wired);
    assert_eq!(backups(&h.claude()).len(), 1);
    // Uninstall and install again, many times: a backup for each version the file had
    // (as it was, as wired), each kept once and named when used again.
    for _ in 0..5 {
        h.ok(&["hook", "uninstall", "--agent", "claude"]);
        let err = h.ok(&["hook", "install", "--agent", "claude"]);
        assert!(err.contains("already held the file as it was"), "{err}");
    }
    let b = backups(&h.claude());
    assert_eq!(b.len(), 2, "{b:?}");
    let mut held: Vec<String> = b.iter().map(|p| read(p)).collect();
    held.sort();
    let mut want = vec![SECRET_SETTINGS.to_owned(), wired];
    want.sort();
    assert_eq!(held, want);
}

// --- read-only -------------------------------------------------------------------

#[test]
fn a_read_only_file_is_refused_with_a_clear_message_and_left_as_it_was() {
    let h = Home::new();
    write(&h.claude(), SECRET_SETTINGS, 0o444);
    let out = h.run(&["hook", "install", "--agent", "claude"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let file = h.claude().display().to_string();
    assert!(
        err.contains(&format!("{file} is read-only (mode 0444)")),
        "{err}"
    );
    assert!(err.contains(&format!("chmod u+w {file}")), "{err}");
    assert_eq!(read(&h.claude()), SECRET_SETTINGS);
    assert_eq!(mode(&h.claude()), 0o444);
    assert!(beside(&h.claude()).is_empty(), "{:?}", beside(&h.claude()));

    // A read-only file that already has the hooks needs no write: fine.
    fs::set_permissions(h.claude(), fs::Permissions::from_mode(0o644)).unwrap();
    h.ok(&["hook", "install", "--agent", "claude"]);
    let wired = read(&h.claude());
    fs::set_permissions(h.claude(), fs::Permissions::from_mode(0o444)).unwrap();
    let err = h.ok(&["hook", "install", "--agent", "claude"]);
    assert!(err.contains("nothing to do"), "{err}");
    // Uninstall is refused the same way.
    let out = h.run(&["hook", "uninstall", "--agent", "claude"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("is read-only"));
    assert_eq!(read(&h.claude()), wired);
}

#[test]
fn a_read_only_folder_is_refused() {
    let h = Home::new();
    write(&h.gemini(), "{}\n", 0o644);
    let dir = h.gemini().parent().unwrap().to_path_buf();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).unwrap();
    let out = h.run(&["hook", "install", "--agent", "gemini"]);
    let err = text(&out.stderr);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("the folder {} is read-only", dir.display())),
        "{err}"
    );
    assert_eq!(read(&h.gemini()), "{}\n");
    assert!(beside(&h.gemini()).is_empty());
}

// --- fidelity --------------------------------------------------------------------

/// What a JSON round trip loses: a number beyond f64, `-0`, a repeated key (the last
/// counts), escapes, compact objects, odd spacing on mixed lines, key order.
const CLAUDE_ODD: &str = r#"{
  "env": {"ANTHROPIC_API_KEY": "sk-ant-x", "N": 123456789012345678901234567890},
  "model":"opus",  "zero": -0, "small": 1.0e-7, "big": 1E400,
  "dup": 1,
  "dup": 2,
  "esc": "caf\u00e9 \ud83d\ude00 \/",
  "permissions": { "allow": [ "Bash(ls:*)" ], "deny": [] },
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done"}]}
    ],
    "PreToolUse": [ ]
  }
}"#;

/// CLAUDE_ODD wired: transcope's groups added, laid out as their neighbours; every
/// other byte as it was (no final newline added either).
const CLAUDE_ODD_WIRED: &str = r#"{
  "env": {"ANTHROPIC_API_KEY": "sk-ant-x", "N": 123456789012345678901234567890},
  "model":"opus",  "zero": -0, "small": 1.0e-7, "big": 1E400,
  "dup": 1,
  "dup": 2,
  "esc": "caf\u00e9 \ud83d\ude00 \/",
  "permissions": { "allow": [ "Bash(ls:*)" ], "deny": [] },
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done"}]},
      {
        "hooks": [
          {
            "type": "command",
            "command": "transcope hook stop"
          }
        ]
      }
    ],
    "PreToolUse": [ ],
    "SessionStart": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "transcope hook session-start"
          }
        ]
      }
    ],
    "SubagentStop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "transcope hook stop"
          }
        ]
      }
    ]
  }
}"#;

#[test]
fn claude_json_is_edited_byte_for_byte_outside_transcopes_entries() {
    let h = Home::new();
    write(&h.claude(), CLAUDE_ODD, 0o600);
    h.ok(&["hook", "install", "--agent", "claude"]);
    assert_eq!(read(&h.claude()), CLAUDE_ODD_WIRED);
    h.ok(&["hook", "uninstall", "--agent", "claude"]);
    assert_eq!(read(&h.claude()), CLAUDE_ODD);
    // doctor reads what install wrote.
    h.ok(&["hook", "install", "--agent", "claude"]);
    let out = h.run(&["doctor", "--json"]);
    let line = text(&out.stdout)
        .lines()
        .find(|l| l.contains("Claude Code hooks"))
        .unwrap()
        .to_owned();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["status"], "ok", "{line}");
}

/// A compact one-line file with a user's hook inside transcope's own event, tabs in
/// another: compact stays compact.
const GEMINI_COMPACT: &str = "{\"theme\":\"GitHub\",\"n\":-0,\"n\":1e999,\"hooks\":{\"AfterAgent\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"/opt/after.sh\",\"timeout\":123456789012345678901234567890}]}]}}\n";

const GEMINI_COMPACT_WIRED: &str = "{\"theme\":\"GitHub\",\"n\":-0,\"n\":1e999,\"hooks\":{\"AfterAgent\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"/opt/after.sh\",\"timeout\":123456789012345678901234567890}]},{\"hooks\":[{\"name\":\"transcope-stop\",\"type\":\"command\",\"command\":\"transcope hook stop\",\"timeout\":60000}]}],\"SessionStart\":[{\"hooks\":[{\"name\":\"transcope-session-start\",\"type\":\"command\",\"command\":\"transcope hook session-start\",\"timeout\":60000}]}]}}\n";

const GEMINI_TABS: &str =
    "{\r\n\t\"theme\": \"GitHub\",\r\n\t\"compact\": {\"a\":[1,2,{}]}\r\n}\r\n";

const GEMINI_TABS_WIRED: &str = "{\r\n\t\"theme\": \"GitHub\",\r\n\t\"compact\": {\"a\":[1,2,{}]},\r\n\t\"hooks\": {\r\n\t\t\"SessionStart\": [\r\n\t\t\t{\r\n\t\t\t\t\"hooks\": [\r\n\t\t\t\t\t{\r\n\t\t\t\t\t\t\"name\": \"transcope-session-start\",\r\n\t\t\t\t\t\t\"type\": \"command\",\r\n\t\t\t\t\t\t\"command\": \"transcope hook session-start\",\r\n\t\t\t\t\t\t\"timeout\": 60000\r\n\t\t\t\t\t}\r\n\t\t\t\t]\r\n\t\t\t}\r\n\t\t],\r\n\t\t\"AfterAgent\": [\r\n\t\t\t{\r\n\t\t\t\t\"hooks\": [\r\n\t\t\t\t\t{\r\n\t\t\t\t\t\t\"name\": \"transcope-stop\",\r\n\t\t\t\t\t\t\"type\": \"command\",\r\n\t\t\t\t\t\t\"command\": \"transcope hook stop\",\r\n\t\t\t\t\t\t\"timeout\": 60000\r\n\t\t\t\t\t}\r\n\t\t\t\t]\r\n\t\t\t}\r\n\t\t]\r\n\t}\r\n}\r\n";

#[test]
fn gemini_json_is_edited_byte_for_byte_outside_transcopes_entries() {
    for (original, wired) in [
        (GEMINI_COMPACT, GEMINI_COMPACT_WIRED),
        (GEMINI_TABS, GEMINI_TABS_WIRED),
    ] {
        let h = Home::new();
        write(&h.gemini(), original, 0o644);
        h.ok(&["hook", "install", "--agent", "gemini"]);
        assert_eq!(read(&h.gemini()), wired);
        h.ok(&["hook", "uninstall", "--agent", "gemini"]);
        assert_eq!(read(&h.gemini()), original);
    }
}

/// Uninstall takes out only transcope's hook from a group a user shares with it.
#[test]
fn uninstall_leaves_a_users_hook_in_a_shared_group_byte_for_byte() {
    let h = Home::new();
    let shared = "{\"hooks\": {\"Stop\": [{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"a\"}, {\"type\": \"command\", \"command\": \"transcope hook stop\"}, {\"type\": \"command\", \"command\": \"b\"}]}]}, \"x\": -0}";
    write(&h.claude(), shared, 0o600);
    h.ok(&["hook", "uninstall", "--agent", "claude"]);
    assert_eq!(
        read(&h.claude()),
        "{\"hooks\": {\"Stop\": [{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"a\"}, {\"type\": \"command\", \"command\": \"b\"}]}]}, \"x\": -0}"
    );
}

/// What TOML keeps that a reformat would not: comments, spacing, hexadecimal and
/// underscored integers, `-0.0`, `inf`, literal and multi-line strings, inline tables,
/// a trailing comma.
const CODEX_ODD: &str = r#"# secrets below
model    = "o3"	# tab before me
mask = 0xDEAD_BEEF
big = 9_223_372_036_854_775_807
neg_zero = -0.0
inf = -inf
path = 'C:\no\escapes'
text = """
two
lines"""

[mcp_servers.docs]
command = "npx"
args = [
  "-y",   "docs-server",
]
env = { TOKEN = "secret" , OTHER="x" }
"#;

#[test]
fn codex_toml_keeps_every_byte_of_the_users_text() {
    let h = Home::new();
    write(&h.codex(), CODEX_ODD, 0o600);
    h.ok(&["hook", "install", "--agent", "codex"]);
    let wired = read(&h.codex());
    // The user's text, whole, then only what install added (each part marked).
    assert!(wired.starts_with(CODEX_ODD), "{wired}");
    let added = &wired[CODEX_ODD.len()..];
    assert!(
        added.contains("# added by transcope hook install"),
        "{added}"
    );
    assert!(!added.contains("secret"), "{added}");
    h.ok(&["hook", "uninstall", "--agent", "codex"]);
    assert_eq!(read(&h.codex()), CODEX_ODD);
}

// --- racing writers ----------------------------------------------------------------

/// Another program's read-modify-write of the settings file, as a real one does it:
/// read, parse, add one key under `"writer"`, write a temporary file, rename it over.
/// `cooperating`: it takes transcope's lock (`<file>.transcope.lock`) around that.
fn writer_adds(path: &Path, key: usize, cooperating: bool) {
    let lock = cooperating.then(|| {
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.with_file_name("settings.json.transcope.lock"))
            .unwrap();
        f.lock().unwrap();
        f
    });
    let mut v: Value = serde_json::from_str(&read(path)).unwrap();
    v["writer"][format!("k{key}")] = Value::from(key);
    let tmp = path.with_file_name(format!(".writer-{key}.tmp"));
    let mut f = fs::File::create(&tmp).unwrap();
    f.write_all(serde_json::to_string_pretty(&v).unwrap().as_bytes())
        .unwrap();
    drop(f);
    fs::rename(&tmp, path).unwrap();
    drop(lock);
}

/// `runs` installs and uninstalls in turn while the writer adds keys (at least
/// `keys`); the keys lost (none is the claim) and how many the writer wrote.
fn race(
    runs: usize,
    keys: usize,
    cooperating: bool,
    pause: std::time::Duration,
) -> (Vec<usize>, usize) {
    let h = Home::new();
    write(&h.claude(), "{\n  \"writer\": {}\n}\n", 0o600);
    let path = h.claude();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (path, done) = (path.clone(), done.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while n < keys || !done.load(std::sync::atomic::Ordering::Relaxed) {
                writer_adds(&path, n, cooperating);
                n += 1;
                std::thread::sleep(pause);
            }
            n
        })
    };
    let mut again = 0;
    for i in 0..runs {
        let sub = if i % 2 == 0 { "install" } else { "uninstall" };
        let out = h.run(&["hook", sub, "--agent", "claude"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        if let Some(at) = err.find("read and edited again (") {
            let n = &err[at + "read and edited again (".len()..];
            again += n[..n.find(' ').unwrap()].parse::<usize>().unwrap();
        }
    }
    eprintln!("{runs} runs against a writer (lock: {cooperating}): {again} reads again");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.join().unwrap();
    let v: Value = serde_json::from_str(&read(&path)).unwrap();
    let lost = (0..written)
        .filter(|k| v["writer"].get(format!("k{k}")).is_none())
        .collect();
    if cooperating {
        // transcope's own edits survive too (the last run was an uninstall).
        assert!(v["hooks"].is_null(), "{v}");
    }
    (lost, written)
}

/// A writer that takes transcope's lock: no key lost over 1,000 runs, by construction.
#[test]
fn a_cooperating_writer_loses_no_key_over_1000_runs() {
    let (lost, written) = race(1000, 1000, true, std::time::Duration::from_millis(3));
    assert!(written >= 1000);
    assert!(
        lost.is_empty(),
        "{} of {written} keys lost: {lost:?}",
        lost.len()
    );
}

/// A writer that takes no lock, renaming its own file in at any moment: transcope's
/// compare before the rename sees its change and edits again.
#[test]
fn a_writer_that_takes_no_lock_loses_no_key_over_1000_runs() {
    let (lost, written) = race(1000, 1000, false, std::time::Duration::from_millis(15));
    assert!(written >= 1000);
    assert!(
        lost.is_empty(),
        "{} of {written} keys lost: {lost:?}",
        lost.len()
    );
}
