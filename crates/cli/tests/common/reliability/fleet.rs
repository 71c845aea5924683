//! Fleet helpers: pushing a home to a PostgreSQL fleet with the real binary, reading
//! a query's `--json` lines, and asking the fleet's database directly with `psql`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::{cmd_in, stdout_in, text};

/// The `--json` lines of `transcope --home HOME args…`, which must succeed.
pub fn json_lines(home: &Path, user: &Path, args: &[&str]) -> Vec<Value> {
    stdout_in(home, user, args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{args:?}: {e}: {l}")))
        .collect()
}

/// `fleet push --to URL --machine NAME --json` in `home`, as a command.
pub fn push_cmd(home: &Path, user: &Path, url: &str, machine: &str) -> Command {
    cmd_in(home, user, &push_args(url, machine))
}

fn push_args<'a>(url: &'a str, machine: &'a str) -> [&'a str; 7] {
    ["fleet", "push", "--to", url, "--machine", machine, "--json"]
}

/// A push of `home` to `url` as `machine`, which must succeed: its `--json` object.
pub fn push(home: &Path, user: &Path, url: &str, machine: &str) -> Value {
    serde_json::from_str(&stdout_in(home, user, &push_args(url, machine))).unwrap()
}

/// What a push's `--json` says it sent: sessions, scope rows, markers, requests.
pub fn sent(pushed: &Value) -> [u64; 4] {
    ["sessions", "transitions", "markers", "requests"].map(|k| {
        pushed[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {pushed}"))
    })
}

/// `row` without its `machine` field, and that field (a fleet's rows name one).
pub fn without_machine(mut row: Value) -> (Value, Option<String>) {
    let machine = row
        .as_object_mut()
        .and_then(|o| o.remove("machine"))
        .map(|m| m.as_str().expect("machine is a string").to_owned());
    (row, machine)
}

/// The rows `sql` returns from the database `url` names, each a list of its columns
/// as `psql` prints them (unaligned, tab-separated; NULL is empty).
pub fn psql(url: &str, sql: &str) -> Vec<Vec<String>> {
    let out = Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1"])
        .args(["-d", url, "-c", sql])
        .output()
        .expect("running psql (the PostgreSQL client must be on PATH)");
    assert!(out.status.success(), "psql {sql}: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}
