//! Shared helpers of the CLI tests: run the real binary in a clean environment.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Run `transcope --home HOME ARGS` with `stdin`, the agentihooks variables of the
/// test process removed and `env` set.
pub fn run(home: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_transcope"));
    cmd.arg("--home").arg(home).args(args);
    clean_env(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Remove from `cmd`'s environment every variable of agentihooks, the brain writer and
/// the agents' folders (each registered agent's declared home variable) that the test
/// process may have: a test sets what it means.
pub fn clean_env(cmd: &mut Command) {
    for (_, hooks) in transcope::compose::adapters().hooks() {
        cmd.env_remove(hooks.home.var);
    }
    for k in [
        "AGENTIHOOKS_HOME",
        "AGENTIHOOKS_PROJECT_ID",
        "AGENTIHOOKS_SWARM",
        "AGENTIHOOKS_SWARM_TASK",
        "AGENTIHOOKS_SWARM_LANE",
        "AGENTIHOOKS_SESSION_SCOPE",
        "BRAIN_WRITER_ENABLED",
        "BRAIN_URL",
        "BRAIN_WRITER_OUTBOX",
        "CLAUDE_PROJECT_DIR",
        "TRANSCOPE",
        "TRANSCOPE_FLEET_URL",
        "TRANSCOPE_MACHINE",
    ] {
        cmd.env_remove(k);
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
