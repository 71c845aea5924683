//! `transcope_testkit::pg` against the real server `TRANSCOPE_TEST_PG` names: a test
//! database is made empty, is the one its conninfo connects to, and is gone once
//! dropped. Skipped (with a notice) without the variable, a failure under CI.

use std::process::Command;

use transcope_testkit::pg;

/// `sql`'s rows, unaligned, through `psql` on `conninfo`.
fn query(conninfo: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([
            "-X",
            "-At",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            conninfo,
            "-c",
            sql,
        ])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn a_test_database_is_fresh_private_and_dropped() {
    let Some(db) = pg::database("testkit pg::roundtrip") else {
        return;
    };
    let other = pg::database("testkit pg::roundtrip").expect("the server is set");
    assert_ne!(db.name(), other.name());
    assert!(
        db.name().starts_with("t_testkit_pg__roundtrip_"),
        "{}",
        db.name()
    );

    assert_eq!(query(db.url(), "SELECT current_database()"), db.name());
    assert_eq!(
        query(
            db.url(),
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        "0"
    );
    query(db.url(), "CREATE TABLE t (a int); INSERT INTO t VALUES (7)");
    assert_eq!(query(db.url(), "SELECT a FROM t"), "7");
    // Another database sees nothing of it.
    assert_eq!(
        query(
            other.url(),
            "SELECT count(*) FROM pg_tables WHERE tablename = 't'"
        ),
        "0"
    );

    let admin = pg::admin_url().expect("the server is set");
    let exists = |name: &str| {
        query(
            &admin,
            &format!("SELECT count(*) FROM pg_database WHERE datname = '{name}'"),
        )
    };
    let name = db.name().to_owned();
    assert_eq!(exists(&name), "1");
    drop(db);
    assert_eq!(exists(&name), "0");
    assert_eq!(exists(other.name()), "1");
}
