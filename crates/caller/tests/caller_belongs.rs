//! identity.md §6.2: BelongsToSession and BelongsToTree, and the §5.3 edge table.

mod caller_support;

use std::path::{Path, PathBuf};

use caller_support::*;
use serde_json::json;
use transcope_caller::belongs::{belongs_to_session, belongs_to_tree};
use transcope_caller::claudepath::config_dir;
use transcope_caller::{Env, TranscriptError};

fn ids(dir: &Path, ids: &[&str]) -> PathBuf {
    let lines: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut v = record(&format!("u{i}"), "p");
            if id.is_empty() {
                v.as_object_mut().unwrap().remove("sessionId");
            } else {
                v["sessionId"] = json!(id);
            }
            v
        })
        .collect();
    write(dir, "t", &lines)
}

fn wrong_session(r: Result<(), TranscriptError>) -> String {
    match r {
        Err(e @ TranscriptError::WrongSession { .. }) => e.to_string(),
        other => panic!("expected ErrWrongSession, got {other:?}"),
    }
}

fn wrong_tree(r: Result<(), TranscriptError>) -> String {
    match r {
        Err(e @ TranscriptError::WrongTree { .. }) => e.to_string(),
        other => panic!("expected ErrWrongTree, got {other:?}"),
    }
}

/// 19.
#[test]
fn a_file_naming_another_session_is_refused() {
    let (_t, d) = tempdir();
    let path = ids(&d, &["someone-else"]);
    let msg = wrong_session(belongs_to_session(&path, "guessed"));
    assert!(
        msg.contains("someone-else") && msg.contains("guessed"),
        "{msg}"
    );
}

/// 20.
#[test]
fn a_file_naming_this_session_is_accepted() {
    let (_t, d) = tempdir();
    assert!(belongs_to_session(&ids(&d, &["guessed"]), "guessed").is_ok());
}

/// 21.
#[test]
fn a_preamble_record_carrying_no_uuid_still_decides() {
    let (_t, d) = tempdir();
    let path = write(
        &d,
        "t",
        &[
            json!({"type": "summary", "sessionId": "someone-else"}),
            with(root("u"), json!({"sessionId": "someone-else"})),
        ],
    );
    wrong_session(belongs_to_session(&path, "x"));
}

/// 22.
#[test]
fn a_forked_transcript_carrying_the_old_id_first_is_accepted() {
    let (_t, d) = tempdir();
    let mut lines = vec![json!({"type": "summary", "sessionId": "old-session"})];
    for i in 0..12 {
        lines.push(with(
            record(&format!("o{i}"), "p"),
            json!({"sessionId": "old-session"}),
        ));
    }
    lines.push(with(record("f", "o11"), json!({"sessionId": "forked"})));
    let path = write(&d, "t", &lines);
    assert!(belongs_to_session(&path, "forked").is_ok());
}

/// 23.
#[test]
fn a_file_naming_other_sessions_and_never_this_one_is_refused() {
    let (_t, d) = tempdir();
    let path = ids(&d, &["someone-else", "a-third-party", "someone-else"]);
    wrong_session(belongs_to_session(&path, "x"));
}

/// 24.
#[test]
fn this_session_named_in_the_middle_is_accepted() {
    let (_t, d) = tempdir();
    let path = ids(
        &d,
        &["older-session", "older-session", "middle", "newer-session"],
    );
    assert!(belongs_to_session(&path, "middle").is_ok());
    // …and first, and last.
    assert!(belongs_to_session(&path, "older-session").is_ok());
    assert!(belongs_to_session(&path, "newer-session").is_ok());
}

/// 25.
#[test]
fn a_file_whose_first_record_has_no_id_but_later_ones_are_foreign_is_refused() {
    let (_t, d) = tempdir();
    let path = ids(&d, &["", "someone-else"]);
    wrong_session(belongs_to_session(&path, "x"));
}

/// 26.
#[test]
fn a_file_carrying_no_id_at_all_is_accepted() {
    let (_t, d) = tempdir();
    assert!(belongs_to_session(&ids(&d, &["", ""]), "x").is_ok());
}

/// 27.
#[test]
fn a_missing_file_is_accepted() {
    let (_t, d) = tempdir();
    assert!(belongs_to_session(&d.join("missing.jsonl"), "x").is_ok());
}

/// 28.
#[test]
fn no_session_id_to_check_against_is_accepted() {
    let (_t, d) = tempdir();
    assert!(belongs_to_session(&ids(&d, &["someone-else"]), "").is_ok());
}

/// 29: every real transcript is accepted under its own filename stem (skipped when there are
/// none; reads the real config directory of the process running the tests).
#[test]
fn against_every_real_transcript() {
    let env: Env = std::env::vars().collect();
    let Some(cfg) = config_dir(&env) else { return };
    let Ok(projects) = std::fs::read_dir(cfg.join("projects")) else {
        return;
    };
    let mut checked = 0;
    for project in projects.filter_map(Result::ok) {
        let Ok(files) = std::fs::read_dir(project.path()) else {
            continue;
        };
        for file in files.filter_map(Result::ok) {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "jsonl") && path.is_file() {
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                assert!(
                    belongs_to_session(&path, &stem).is_ok(),
                    "{}",
                    path.display()
                );
                checked += 1;
            }
        }
    }
    eprintln!("checked {checked} real transcripts");
}

/// 30.
#[test]
fn belongs_to_tree_accepts_its_own_tree() {
    let (_t, d) = tempdir();
    let path = write(&d, "t", &[with(root("u"), json!({"cwd": d}))]);
    assert!(belongs_to_tree(&path, &d).is_ok());
}

/// 31.
#[test]
fn belongs_to_tree_refuses_a_colliding_sibling_tree() {
    let (_t, base) = tempdir();
    let sub = base.join("proj/pkg");
    let sibling = base.join("proj-pkg");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir_all(&sibling).unwrap();
    let path = write(
        &base,
        "s-1",
        &[with(root("u"), json!({"cwd": sibling, "sessionId": "s-1"}))],
    );
    assert!(belongs_to_session(&path, "s-1").is_ok());
    let msg = wrong_tree(belongs_to_tree(&path, &sub));
    assert!(msg.contains(sibling.to_str().unwrap()) && msg.contains(sub.to_str().unwrap()));
}

/// 32.
#[test]
fn belongs_to_tree_accepts_when_any_record_matches() {
    let (_t, base) = tempdir();
    std::fs::create_dir_all(base.join("src")).unwrap();
    let path = write(
        &base,
        "t",
        &[
            with(root("u"), json!({"cwd": base.join("src")})),
            with(record("v", "u"), json!({"cwd": base})),
        ],
    );
    assert!(belongs_to_tree(&path, &base).is_ok());
}

/// 33.
#[test]
fn belongs_to_tree_accepts_a_tree_beneath_the_one_asked() {
    let (_t, base) = tempdir();
    let path = write(
        &base,
        "t",
        &[with(root("u"), json!({"cwd": base.join("pkg")}))],
    );
    assert!(belongs_to_tree(&path, &base).is_ok());
    let beside = format!("{}c", base.display());
    let path = write(&base, "t2", &[with(root("u"), json!({"cwd": beside}))]);
    wrong_tree(belongs_to_tree(&path, &base));
}

/// 34.
#[test]
fn belongs_to_tree_allows_what_it_cannot_judge() {
    let (_t, d) = tempdir();
    let path = write(
        &d,
        "t",
        &[
            json!({"type": "file-history-snapshot", "isSnapshotUpdate": false, "messageId": "m", "snapshot": {}}),
            root("u"),
        ],
    );
    assert!(belongs_to_tree(&path, Path::new("/whatever")).is_ok());
    let other = write(&d, "o", &[with(root("u"), json!({"cwd": "/elsewhere"}))]);
    assert!(belongs_to_tree(&other, Path::new("")).is_ok());
    assert!(belongs_to_tree(&d.join("missing.jsonl"), Path::new("/whatever")).is_ok());
}

/// 35.
#[test]
fn belongs_to_tree_stated_limits() {
    let (_t, base) = tempdir();
    let sibling = base.join("sibling");
    let victim = base.join("victim");
    let path = write(
        &base,
        "t",
        &[
            with(root("u"), json!({"cwd": sibling})),
            with(record("v", "u"), json!({"cwd": victim})),
        ],
    );
    assert!(belongs_to_tree(&path, &victim).is_ok());
    let path = write_raw(
        &base.join("big.jsonl"),
        &[
            oversized_line(json!({"uuid": "u", "cwd": sibling})),
            line(&with(record("v", "u"), json!({"cwd": sibling}))),
        ],
    );
    assert!(belongs_to_tree(&path, &victim).is_ok());
    // The same file for the session check: a mismatch behind an oversized first line.
    let path = write_raw(
        &base.join("big2.jsonl"),
        &[
            oversized_line(json!({"uuid": "u", "sessionId": "someone-else"})),
            line(&with(
                record("v", "u"),
                json!({"sessionId": "someone-else"}),
            )),
        ],
    );
    assert!(belongs_to_session(&path, "x").is_ok());
}

/// 36.
#[test]
fn belongs_to_session_keeps_looking_past_a_disagreeing_record() {
    let (_t, d) = tempdir();
    assert!(belongs_to_session(&ids(&d, &["older", "older", "x"]), "x").is_ok());
}

/// 37.
#[test]
fn belongs_to_session_refuses_when_no_record_agrees() {
    let (_t, d) = tempdir();
    let msg = wrong_session(belongs_to_session(
        &ids(&d, &["someone-else", "a-third-party"]),
        "x",
    ));
    assert!(
        msg.contains("someone-else") && !msg.contains("a-third-party"),
        "{msg}"
    );
}

/// §5.3: leading records without the field, then a disagreeing cwd; and the refusal names the
/// first recorded cwd as written, the asked cwd as given.
#[test]
fn belongs_to_tree_names_the_first_recorded_cwd() {
    let (_t, base) = tempdir();
    let path = write(
        &base,
        "t",
        &[
            root("u"),
            with(record("a", "u"), json!({"cwd": "/first/recorded"})),
            with(record("b", "a"), json!({"cwd": "/second/recorded"})),
        ],
    );
    match belongs_to_tree(&path, Path::new("/asked/./here")) {
        Err(TranscriptError::WrongTree { recorded, cwd, .. }) => {
            assert_eq!(recorded, "/first/recorded");
            assert_eq!(cwd, "/asked/./here");
        }
        other => panic!("{other:?}"),
    }
    // A tree of `/` matches only `/`.
    let root_path = write(&base, "r", &[with(root("u"), json!({"cwd": "/usr"}))]);
    wrong_tree(belongs_to_tree(&root_path, Path::new("/")));
    let slash = write(&base, "s", &[with(root("u"), json!({"cwd": "/"}))]);
    assert!(belongs_to_tree(&slash, Path::new("/")).is_ok());
}

/// Recorded cwds and the asked cwd are compared with symlinks resolved.
#[test]
fn belongs_to_tree_compares_resolved_paths() {
    let (_t, base) = tempdir();
    let real = base.join("real");
    std::fs::create_dir_all(real.join("pkg")).unwrap();
    std::os::unix::fs::symlink(&real, base.join("link")).unwrap();
    let path = write(
        &base,
        "t",
        &[with(root("u"), json!({"cwd": base.join("link/pkg")}))],
    );
    assert!(belongs_to_tree(&path, &real).is_ok());
    let path = write(&base, "t2", &[with(root("u"), json!({"cwd": real}))]);
    assert!(belongs_to_tree(&path, &base.join("link")).is_ok());
}

/// An escaped spelling of the session id still agrees (the quick filter must not skip it).
#[test]
fn belongs_to_session_reads_escaped_ids() {
    let (_t, d) = tempdir();
    let path = write_raw(
        &d.join("t.jsonl"),
        &[
            r#"{"uuid":"a","sessionId":"older"}"#.to_owned(),
            r#"{"uuid":"b","sessionId":"\u0078"}"#.to_owned(),
        ],
    );
    assert!(belongs_to_session(&path, "x").is_ok());
}
