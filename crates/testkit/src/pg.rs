//! PostgreSQL databases for tests: a fresh, empty database per test on a real server.
//!
//! The fleet backend is tested against a real PostgreSQL, never a mock. The server is
//! named by `TRANSCOPE_TEST_PG`, a libpq key=value conninfo of a role that may create
//! databases (what `.ci/pg start` prints for its throw-away cluster under
//! `target/pg`; `.ci/run` starts one and exports it). [`database`] makes a database of
//! its own for one test, with a name no other test or process takes, and hands back a
//! [`TestDb`] whose [`TestDb::url`] is the same conninfo naming that database; the
//! database is dropped when the `TestDb` is.
//!
//! Without `TRANSCOPE_TEST_PG` a test that needs PostgreSQL is skipped with one line on
//! stderr saying how to run it, except under CI (`CI` set, and not `false` or `0`),
//! where it panics: there the PostgreSQL tests must fail, not skip.
//!
//! Databases are made and dropped with the real `psql` client (on `PATH`), so this
//! crate links no PostgreSQL driver: only backend crates depend on one.
//!
//! ```
//! // Locally: `export TRANSCOPE_TEST_PG=$(.ci/pg start)` first, or this skips.
//! if let Some(db) = transcope_testkit::pg::database("doc example") {
//!     assert!(db.url().contains(&format!("dbname={}", db.name())));
//! }
//! ```

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming the server: a libpq key=value conninfo.
pub const ENV: &str = "TRANSCOPE_TEST_PG";

/// How to start a server and point the tests at it.
const HOW: &str = "export TRANSCOPE_TEST_PG=$(.ci/pg start)";

/// The longest name PostgreSQL keeps whole (`NAMEDATALEN - 1`).
const NAME_MAX: usize = 63;

/// The server's conninfo (`TRANSCOPE_TEST_PG`), for a test that manages databases
/// itself; `None` when it is not set (a notice on stderr says how to set it). Under CI
/// an unset `TRANSCOPE_TEST_PG` panics instead: the PostgreSQL tests must not skip
/// there.
pub fn admin_url() -> Option<String> {
    let pg = std::env::var(ENV).ok();
    let ci = std::env::var("CI").ok();
    match server(pg, ci.as_deref()) {
        Server::At(url) => Some(url),
        Server::Skip => {
            eprintln!("skipped: this test needs PostgreSQL; run it with `{HOW}` first");
            None
        }
        Server::Missing => panic!(
            "{ENV} is not set under CI: PostgreSQL tests must not skip under CI: run them \
             through .ci/run, which starts a cluster (or `{HOW}`)"
        ),
    }
}

/// A fresh, empty database for one test on the server `TRANSCOPE_TEST_PG` names,
/// called `t_<name_hint>_<pid>_<n>` (lower-cased, every other character than `a-z`,
/// `0-9` and `_` made `_`); `None` when the variable is not set, as [`admin_url`]
/// says (a panic under CI). Panics when the server cannot be reached or refuses.
pub fn database(name_hint: &str) -> Option<TestDb> {
    let admin = admin_url()?;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = db_name(
        name_hint,
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed),
    );
    // A database of this name can only be left by a killed run whose process had this
    // id: no live process shares it.
    psql(
        &admin,
        &[
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            // From template0, which nobody connects to: a test connected to template1
            // would make the copy fail.
            &format!("CREATE DATABASE {name} TEMPLATE template0"),
        ],
    )
    .unwrap_or_else(|e| panic!("creating the test database {name}: {e}"));
    let url = with_dbname(&admin, &name);
    Some(TestDb { admin, name, url })
}

/// A database made by [`database`], dropped (`WITH (FORCE)`, best effort) when this
/// is dropped.
#[derive(Debug)]
pub struct TestDb {
    admin: String,
    name: String,
    url: String,
}

impl TestDb {
    /// A libpq key=value conninfo for this database: the server's, with `dbname=` this
    /// database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let drop = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(e) = psql(&self.admin, &[&drop]) {
            eprintln!("could not drop the test database {}: {e}", self.name);
        }
    }
}

/// What the environment says of the server.
#[derive(Debug, PartialEq)]
enum Server {
    /// `TRANSCOPE_TEST_PG`.
    At(String),
    /// Not set, outside CI: skip.
    Skip,
    /// Not set, under CI: fail.
    Missing,
}

/// `pg`: `TRANSCOPE_TEST_PG`, `ci`: `CI` (a CI run as [`crate::under_ci`] says).
fn server(pg: Option<String>, ci: Option<&str>) -> Server {
    match pg {
        Some(url) if !url.trim().is_empty() => Server::At(url),
        _ if crate::says_ci(ci) => Server::Missing,
        _ => Server::Skip,
    }
}

/// `t_<hint>_<pid>_<seq>`, in `[a-z0-9_]`, the hint cut so the whole fits PostgreSQL's
/// 63 bytes.
fn db_name(hint: &str, pid: u32, seq: u64) -> String {
    let tail = format!("_{pid}_{seq}");
    let hint: String = hint
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_') => c,
            _ => '_',
        })
        .take(NAME_MAX - 2 - tail.len())
        .collect();
    format!("t_{hint}{tail}")
}

/// The conninfo `admin` with `dbname=` set to `name` (an earlier `dbname` left out).
fn with_dbname(admin: &str, name: &str) -> String {
    let mut kept: Vec<&str> = pairs(admin)
        .into_iter()
        .filter(|(key, _)| *key != "dbname")
        .map(|(_, pair)| pair)
        .collect();
    let db = format!("dbname={name}");
    kept.push(&db);
    kept.join(" ")
}

/// The `keyword = value` pairs of a key=value conninfo, each with its text as written
/// (a value may be quoted, `'a b'`, and escape with `\`), as libpq reads them.
fn pairs(conninfo: &str) -> Vec<(&str, &str)> {
    let b = conninfo.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_space = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    loop {
        i = skip_space(i);
        if i >= b.len() {
            return out;
        }
        let start = i;
        while b
            .get(i)
            .is_some_and(|&c| c != b'=' && !c.is_ascii_whitespace())
        {
            i += 1;
        }
        let key = &conninfo[start..i];
        i = skip_space(i);
        if b.get(i) != Some(&b'=') {
            panic!("{ENV} is not a key=value conninfo (like `host=/path user=postgres dbname=postgres`): {conninfo:?}");
        }
        i = skip_space(i + 1);
        let quoted = b.get(i) == Some(&b'\'');
        if quoted {
            i += 1;
        }
        while let Some(&c) = b.get(i) {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if (quoted && c == b'\'') || (!quoted && c.is_ascii_whitespace()) {
                break;
            }
            i += 1;
        }
        if quoted {
            i += 1;
        }
        i = i.min(b.len());
        out.push((key, &conninfo[start..i]));
    }
}

/// Run each of `commands` with `psql` on `conninfo`, one transaction each; the error
/// says what `psql` said, and how to start a server when it could not connect.
fn psql(conninfo: &str, commands: &[&str]) -> Result<(), String> {
    let mut cmd = Command::new("psql");
    cmd.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", conninfo]);
    for c in commands {
        cmd.args(["-c", c]);
    }
    let Output { status, stderr, .. } = cmd.output().map_err(|e| {
        format!(
            "running psql: {e} (the PostgreSQL client must be on PATH: .ci/pg installs \
             Debian's postgresql)"
        )
    })?;
    if status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&stderr);
    let hint = if said.contains("connection to server") {
        format!(" (is the server {ENV} names running? `{HOW}` starts one)")
    } else {
        String::new()
    };
    Err(format!(
        "psql -d {conninfo:?} failed ({status}): {}{hint}",
        said.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_skips_outside_ci_and_fails_under_it() {
        let url = || Some("host=/s user=postgres dbname=postgres".to_owned());
        assert_eq!(server(url(), Some("true")), Server::At(url().unwrap()));
        assert_eq!(server(None, None), Server::Skip);
        assert_eq!(server(Some(" ".into()), Some("")), Server::Skip);
        assert_eq!(server(None, Some("false")), Server::Skip);
        assert_eq!(server(None, Some("0")), Server::Skip);
        assert_eq!(server(None, Some("true")), Server::Missing);
        assert_eq!(server(Some(String::new()), Some("1")), Server::Missing);
    }

    #[test]
    fn names_are_plain_identifiers_within_63_bytes() {
        assert_eq!(
            db_name("Fleet::push-once", 12, 3),
            "t_fleet__push_once_12_3"
        );
        let long = db_name(&"é".repeat(100), u32::MAX, u64::MAX);
        assert_eq!(long.len(), NAME_MAX);
        assert!(long
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'));
    }

    #[test]
    fn the_database_replaces_the_servers_dbname() {
        assert_eq!(
            with_dbname("host=/a/sock user=postgres dbname=postgres", "t_x_1_0"),
            "host=/a/sock user=postgres dbname=t_x_1_0"
        );
        assert_eq!(
            with_dbname(
                "  host = '/a b/it\\'s'  dbname ='x y' options='-c a\\ b'",
                "d"
            ),
            "host = '/a b/it\\'s' options='-c a\\ b' dbname=d"
        );
        assert_eq!(with_dbname("", "d"), "dbname=d");
    }

    #[test]
    #[should_panic(expected = "not a key=value conninfo")]
    fn a_uri_is_refused_clearly() {
        with_dbname("postgresql://postgres@/postgres", "d");
    }

    #[test]
    fn an_unreachable_server_says_how_to_start_one() {
        let e = psql("host=/nonexistent/transcope user=postgres", &["SELECT 1"])
            .expect_err("no server listens there");
        assert!(
            e.contains("running psql") || e.contains(".ci/pg start"),
            "{e}"
        );
    }
}
