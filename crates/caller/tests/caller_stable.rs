//! identity.md §6.3 (identity), §6.4 (continuations), §6.5 (sub-agent identity), §6.7
//! (degraded notices) and every branch of the walk (§4.3), plus the §4.1 cache.

mod caller_support;

use std::path::{Path, PathBuf};

use caller_support::*;
use serde_json::json;
use transcope_caller::stable::{
    resolve_stable_session_id, root_record, stable_identity, stable_session_id, Degraded, Identity,
    MAX_WALK_VISITS,
};
use transcope_caller::transcript::{start_cwd, start_cwd_and_root};
use transcope_caller::TranscriptError;

fn resolve(dir: &Path, name: &str) -> Identity {
    resolve_stable_session_id(dir, &dir.join(format!("{name}.jsonl"))).unwrap()
}

fn missing(id: &Identity) -> bool {
    matches!(id.degraded, Some(Degraded::ContinuationMissing { .. }))
}

fn runaway(id: &Identity) -> bool {
    matches!(id.degraded, Some(Degraded::ChainRunaway { .. }))
}

// ---- §6.3 ----

/// 38.
#[test]
fn resolves_origin() {
    let (_t, d) = tempdir();
    write(
        &d,
        "t",
        &[
            preamble(),
            root("origin-uuid"),
            record("child", "origin-uuid"),
        ],
    );
    let id = resolve(&d, "t");
    assert_eq!(
        id,
        Identity {
            id: "origin-uuid".into(),
            ..Default::default()
        }
    );
}

/// 39.
#[test]
fn fork_pair_converges() {
    let (_t, d) = tempdir();
    write(
        &d,
        "original",
        &[root("shared-origin"), record("a", "shared-origin")],
    );
    write(
        &d,
        "fork",
        &[
            root("shared-origin"),
            record("a", "shared-origin"),
            record("b", "a"),
        ],
    );
    assert_eq!(resolve(&d, "original").id, "shared-origin");
    assert_eq!(resolve(&d, "fork").id, "shared-origin");
}

/// 40.
#[test]
fn crosses_restart() {
    let (_t, d) = tempdir();
    write(
        &d,
        "the-original",
        &[
            root("true-origin"),
            record("where-it-got-to", "true-origin"),
        ],
    );
    write(
        &d,
        "after-the-restart",
        &[
            boundary("restart-root", "where-it-got-to"),
            record("x", "restart-root"),
        ],
    );
    let id = resolve(&d, "after-the-restart");
    assert_eq!(id.id, "true-origin");
    assert_eq!(id.degraded, None);
}

/// 41.
#[test]
fn crosses_several_restarts() {
    let (_t, d) = tempdir();
    write(
        &d,
        "first",
        &[root("true-origin"), record("end-1", "true-origin")],
    );
    write(
        &d,
        "second",
        &[boundary("root-2", "end-1"), record("end-2", "root-2")],
    );
    write(
        &d,
        "third",
        &[boundary("root-3", "end-2"), record("end-3", "root-3")],
    );
    assert_eq!(resolve(&d, "third").id, "true-origin");
    assert_eq!(resolve(&d, "second").id, "true-origin");
}

/// 42.
#[test]
fn ignores_self_match() {
    let (_t, d) = tempdir();
    write(
        &d,
        "older",
        &[
            root("true-origin"),
            record("the-continuation-point", "true-origin"),
        ],
    );
    write(
        &d,
        "newer",
        &[
            boundary("restart-root", "the-continuation-point"),
            record("the-continuation-point", "true-origin"),
        ],
    );
    let id = resolve(&d, "newer");
    assert_eq!(id.id, "true-origin");
    assert_eq!(id.degraded, None);
}

/// 43.
#[test]
fn self_match_when_it_is_the_only_match() {
    let (_t, d) = tempdir();
    write(
        &d,
        "only",
        &[boundary("restart-root", "target"), record("target", "x")],
    );
    let id = resolve(&d, "only");
    assert_eq!(id.id, "restart-root");
    assert!(missing(&id));
}

/// 44.
#[test]
fn bounds_runaway() {
    let (_t, d) = tempdir();
    let names = ["a", "b", "c", "d", "e"];
    for (i, n) in names.iter().enumerate() {
        let next = names[(i + 1) % names.len()];
        write(
            &d,
            &format!("link-{n}"),
            &[
                boundary(&format!("root-link-{n}"), &format!("point-in-{next}")),
                record(&format!("point-in-{n}"), &format!("root-link-{n}")),
            ],
        );
    }
    let a = resolve(&d, "link-a");
    assert_eq!(a.id, "root-link-e");
    assert!(runaway(&a), "{a:?}");
    assert!(a.degraded.unwrap().to_string().contains("already crossed"));
    let b = resolve(&d, "link-b");
    assert_eq!(b.id, "root-link-a");
    assert!(runaway(&b));
}

/// 45.
#[test]
fn fails_when_transcript_missing() {
    let (_t, d) = tempdir();
    let err = resolve_stable_session_id(&d, &d.join("gone.jsonl")).unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

/// 46.
#[test]
fn fails_when_no_origin_record() {
    let (_t, d) = tempdir();
    write(&d, "t", &[preamble(), record("child", "absent")]);
    let err = resolve_stable_session_id(&d, &d.join("t.jsonl")).unwrap_err();
    assert!(
        matches!(err, TranscriptError::NoOriginRecord { .. }),
        "{err}"
    );
}

/// 47.
#[test]
fn degrades_when_logical_parent_is_nowhere() {
    let (_t, d) = tempdir();
    write(&d, "t", &[boundary("restart-root", "nowhere-to-be-found")]);
    let id = resolve(&d, "t");
    assert_eq!(id.id, "restart-root");
    assert!(missing(&id));
    assert!(id.unreadable_siblings.is_empty());
    assert_eq!(
        stable_session_id(&d, &d.join("t.jsonl")).unwrap(),
        "restart-root"
    );
}

/// 48.
#[test]
fn keeps_independent_conversations_apart() {
    let (_t, d) = tempdir();
    write(&d, "one", &[root("origin-1")]);
    write(&d, "two", &[root("origin-2")]);
    assert_ne!(resolve(&d, "one").id, resolve(&d, "two").id);
}

/// 49.
#[test]
fn skips_unreadable_sibling() {
    let (_t, d) = tempdir();
    std::fs::write(d.join("garbage.jsonl"), b"\x00\x01 this is not json\n{{{\n").unwrap();
    write(
        &d,
        "the-older-one",
        &[root("true-origin"), record("continuation", "true-origin")],
    );
    write(&d, "newer", &[boundary("restart-root", "continuation")]);
    let id = resolve(&d, "newer");
    assert_eq!(id.id, "true-origin");
    assert!(
        id.unreadable_siblings.is_empty(),
        "garbage has no origin: skipped silently"
    );
}

/// 50.
#[test]
fn needs_a_project_dir_only_to_cross_a_restart() {
    let (_t, d) = tempdir();
    let plain = write(&d, "plain", &[root("origin")]);
    assert_eq!(stable_session_id(Path::new(""), &plain).unwrap(), "origin");
    let restarted = write(&d, "restarted", &[boundary("r", "x")]);
    assert!(matches!(
        stable_session_id(Path::new(""), &restarted),
        Err(TranscriptError::NoProjectDir { .. })
    ));
}

/// 51.
#[test]
fn no_path() {
    assert!(matches!(
        stable_session_id(Path::new("/somewhere"), Path::new("")),
        Err(TranscriptError::NoTranscriptPath)
    ));
    assert!(matches!(
        stable_identity(Path::new(""), Path::new("/x")),
        Err(TranscriptError::NoTranscriptPath)
    ));
}

/// 52.
#[test]
fn start_cwd_is_the_first_directory_not_the_last() {
    let (_t, d) = tempdir();
    let path = write(
        &d,
        "t",
        &[
            preamble(),
            with(root("u"), json!({"cwd": "/repo"})),
            with(
                record("v", "u"),
                json!({"cwd": "/repo/.claude/worktrees/agent-1"}),
            ),
        ],
    );
    assert_eq!(start_cwd(&path).unwrap(), "/repo");
}

/// 53.
#[test]
fn start_cwd_no_directory_named_is_empty_not_an_error() {
    let (_t, d) = tempdir();
    let path = write(&d, "t", &[preamble(), root("u")]);
    assert_eq!(start_cwd(&path).unwrap(), "");
}

/// 54.
#[test]
fn start_cwd_unreadable_is_an_error() {
    let (_t, d) = tempdir();
    assert!(start_cwd(&d.join("missing.jsonl"))
        .unwrap_err()
        .is_not_found());
    let big = write_raw(
        &d.join("big.jsonl"),
        &[
            oversized_line(json!({"uuid": "u"})),
            line(&with(root("u"), json!({"cwd": "/x"}))),
        ],
    );
    assert!(start_cwd(&big).is_err());
    // A cwd found before the oversized line is the answer.
    let late = write_raw(
        &d.join("late.jsonl"),
        &[
            line(&with(root("u"), json!({"cwd": "/x"}))),
            oversized_line(json!({"uuid": "v"})),
        ],
    );
    assert_eq!(start_cwd(&late).unwrap(), "/x");
}

/// The caller's one scan of a head for its start folder and its root record answers
/// each exactly as [`start_cwd`] and [`root_record`] do on their own, whichever comes
/// first, and what one found before a failure stands whatever became of the other.
#[test]
fn one_head_scan_answers_the_start_folder_and_the_root_as_their_own_scans_do() {
    let (_t, d) = tempdir();
    let cases = [
        // The root first, its cwd later; the cwd first, the root later.
        write(
            &d,
            "root-first",
            &[
                preamble(),
                root("u"),
                with(record("v", "u"), json!({"cwd": "/a"})),
            ],
        ),
        write(
            &d,
            "cwd-first",
            &[
                with(record("p", "q"), json!({"cwd": "/b"})),
                with(root("u"), json!({"cwd": "/c"})),
            ],
        ),
        // No cwd at all; no root at all.
        write(&d, "no-cwd", &[preamble(), root("u"), record("v", "u")]),
        write(
            &d,
            "no-root",
            &[with(record("v", "u"), json!({"cwd": "/d"}))],
        ),
        // Each found before an oversized line, and neither.
        write_raw(
            &d.join("cwd-then-big.jsonl"),
            &[
                line(&with(record("v", "u"), json!({"cwd": "/e"}))),
                oversized_line(json!({"uuid": "w"})),
                line(&root("u")),
            ],
        ),
        write_raw(
            &d.join("root-then-big.jsonl"),
            &[
                line(&root("u")),
                oversized_line(json!({"uuid": "w"})),
                line(&with(record("v", "u"), json!({"cwd": "/f"}))),
            ],
        ),
        write_raw(
            &d.join("big-first.jsonl"),
            &[
                oversized_line(json!({"uuid": "w"})),
                line(&with(root("u"), json!({"cwd": "/g"}))),
            ],
        ),
        d.join("missing.jsonl"),
    ];
    for path in &cases {
        let (start, root) = start_cwd_and_root(path);
        let name = path.file_name().unwrap().to_string_lossy();
        match (start, start_cwd(path)) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{name}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{name}"),
            (a, b) => panic!("{name}: {a:?} against {b:?}"),
        }
        assert_eq!(
            root.map(|r| r.uuid),
            root_record(path).ok().map(|r| r.uuid),
            "{name}"
        );
    }
    // And the answers are the ones meant.
    let answer = |name: &str| {
        let (start, root) = start_cwd_and_root(&d.join(name));
        (start.ok(), root.map(|r| r.uuid))
    };
    assert_eq!(
        answer("root-first.jsonl"),
        (Some("/a".into()), Some("u".into()))
    );
    assert_eq!(
        answer("cwd-first.jsonl"),
        (Some("/b".into()), Some("u".into()))
    );
    assert_eq!(
        answer("no-cwd.jsonl"),
        (Some(String::new()), Some("u".into()))
    );
    assert_eq!(answer("no-root.jsonl"), (Some("/d".into()), None));
    assert_eq!(answer("cwd-then-big.jsonl"), (Some("/e".into()), None));
    assert_eq!(answer("root-then-big.jsonl"), (None, Some("u".into())));
    assert_eq!(answer("big-first.jsonl"), (None, None));
}

// ---- §6.4 ----

/// 55.
#[test]
fn forks_of_a_compaction_converge() {
    let (_t, d) = tempdir();
    let t = |day: u32, h: u32| format!("2026-08-{day:02}T{h:02}:00:00.000Z");
    write(
        &d,
        "c-original",
        &[
            queue_op(),
            origin_at("origin", &t(1, 0)),
            turn_at("before-compact", "origin", &t(1, 1)),
            compact_at("compact-1", "before-compact", &t(2, 0)),
            turn_at("after-compact-1", "compact-1", &t(2, 1)),
        ],
    );
    for n in ["a", "b", "d", "e"] {
        write(
            &d,
            &format!("{n}-fork"),
            &[
                compact_at("compact-1", "before-compact", &t(2, 0)),
                turn_at("before-compact", "origin", &t(1, 1)),
                turn_at(&format!("{n}-turn"), "compact-1", &t(3, 0)),
            ],
        );
    }
    write(
        &d,
        "f-fork-compacted-again",
        &[
            compact_at("compact-1", "before-compact", &t(2, 0)),
            turn_at("before-compact", "origin", &t(1, 1)),
            turn_at("f-1", "compact-1", &t(3, 0)),
            compact_at("compact-2", "f-1", &t(4, 0)),
            turn_at("f-2", "compact-2", &t(4, 1)),
        ],
    );
    for n in ["0", "g"] {
        write(
            &d,
            &format!("{n}-second-fork"),
            &[
                compact_at("compact-2", "f-1", &t(4, 0)),
                turn_at("f-1", "compact-1", &t(3, 0)),
                turn_at(&format!("{n}-turn"), "compact-2", &t(5, 0)),
            ],
        );
    }
    for name in [
        "c-original",
        "a-fork",
        "b-fork",
        "d-fork",
        "e-fork",
        "f-fork-compacted-again",
        "0-second-fork",
        "g-second-fork",
    ] {
        let id = resolve(&d, name);
        assert_eq!(id.id, "origin", "{name}");
        assert_eq!(id.degraded, None, "{name}");
    }
}

/// 56.
#[test]
fn boundary_mid_file_when_logical_parent_was_never_written() {
    let (_t, d) = tempdir();
    write(
        &d,
        "original",
        &[
            root("origin"),
            record("preserved-head", "origin"),
            boundary("the-boundary", "never-written"),
            record("after", "the-boundary"),
        ],
    );
    write(
        &d,
        "early-refork",
        &[root("origin"), record("r1", "origin")],
    );
    for i in 1..=3 {
        write(
            &d,
            &format!("fork-{i}"),
            &[
                boundary("the-boundary", "never-written"),
                record(&format!("f{i}"), "the-boundary"),
            ],
        );
    }
    for name in ["fork-1", "fork-2", "fork-3", "original", "early-refork"] {
        let id = resolve(&d, name);
        assert_eq!(
            (id.id.as_str(), id.degraded.is_none()),
            ("origin", true),
            "{name}"
        );
    }
}

/// 57.
#[test]
fn predecessor_deleted_degrades_consistently() {
    let (_t, d) = tempdir();
    for n in ["fork-1", "fork-2"] {
        write(
            &d,
            n,
            &[
                boundary("compact", "cleaned-up"),
                record("cleaned-up", "long-gone"),
            ],
        );
    }
    write(&d, "unrelated", &[root("other-origin")]);
    for n in ["fork-1", "fork-2"] {
        let id = resolve(&d, n);
        assert_eq!(id.id, "compact");
        assert!(missing(&id));
    }
}

/// 58.
#[test]
fn does_not_walk_into_a_later_continuation() {
    let (_t, d) = tempdir();
    write(
        &d,
        "z-original",
        &[
            origin_at("origin", "2026-08-01T00:00:00Z"),
            record("point", "origin"),
        ],
    );
    write(
        &d,
        "a-later",
        &[
            compact_at("later", "elsewhere", "2026-08-20T00:00:00Z"),
            record("point", "origin"),
        ],
    );
    write(
        &d,
        "m-current",
        &[compact_at("compact", "point", "2026-08-10T00:00:00Z")],
    );
    let id = resolve(&d, "m-current");
    assert_eq!((id.id.as_str(), id.degraded.is_none()), ("origin", true));
}

/// 59.
#[test]
fn backtracks_past_a_dead_end() {
    let (_t, d) = tempdir();
    write(
        &d,
        "a-dead-end",
        &[boundary("dead-end", "deleted"), record("point", "x")],
    );
    write(
        &d,
        "z-true-predecessor",
        &[root("origin"), record("point", "origin")],
    );
    write(&d, "m-current", &[boundary("compact", "point")]);
    let id = resolve(&d, "m-current");
    assert_eq!((id.id.as_str(), id.degraded.is_none()), ("origin", true));
}

/// 60.
#[test]
fn degrades_to_the_first_dead_end_in_name_order() {
    let (_t, d) = tempdir();
    write(
        &d,
        "a-dead-1",
        &[boundary("dead-1", "deleted-1"), record("point", "x")],
    );
    write(
        &d,
        "b-dead-2",
        &[boundary("dead-2", "deleted-2"), record("point", "x")],
    );
    write(&d, "m", &[boundary("compact", "point")]);
    write(&d, "n", &[boundary("compact", "point")]);
    for name in ["m", "n"] {
        let id = resolve(&d, name);
        assert_eq!(id.id, "dead-1", "{name}");
        assert!(missing(&id));
    }
}

/// 61.
#[test]
fn past_the_hop_limit_degrades_like_a_ring() {
    let (_t, d) = tempdir();
    let ts = |i: u32| format!("2026-08-13T{:02}:{:02}:00Z", i / 60, i % 60);
    write(
        &d,
        "hop-000",
        &[
            origin_at("root-0", &ts(0)),
            turn_at("end-0", "root-0", &ts(0)),
        ],
    );
    for i in 1..=65u32 {
        write(
            &d,
            &format!("hop-{i:03}"),
            &[
                compact_at(&format!("root-{i}"), &format!("end-{}", i - 1), &ts(i)),
                turn_at(&format!("end-{i}"), &format!("root-{i}"), &ts(i)),
            ],
        );
    }
    let top = resolve(&d, "hop-065");
    assert_eq!(top.id, "root-1");
    assert!(runaway(&top));
    assert!(top
        .degraded
        .unwrap()
        .to_string()
        .contains("ran past 64 restarts"));
    let below = resolve(&d, "hop-064");
    assert_eq!(
        (below.id.as_str(), below.degraded.is_none()),
        ("root-0", true)
    );
}

/// 62 (latest behaviour, pinned by 79): an unreadable predecessor degrades, it is not an error.
#[test]
fn an_unreadable_predecessor_degrades_and_is_listed() {
    let (_t, d) = tempdir();
    let pred = write_raw(
        &d.join("predecessor.jsonl"),
        &[
            oversized_line(json!({"type": "summary"})),
            line(&root("origin")),
            line(&record("point", "origin")),
        ],
    );
    write(&d, "current", &[boundary("continuation-root", "point")]);
    let id = resolve(&d, "current");
    assert_eq!(id.id, "continuation-root");
    assert!(missing(&id));
    assert_eq!(id.unreadable_siblings, vec![pred.clone()]);
    assert!(id
        .degraded
        .unwrap()
        .to_string()
        .contains("could not be read"));

    // The mode-000 case (only observable when not running as root).
    std::fs::remove_file(&pred).unwrap();
    let locked = write(&d, "locked", &[root("origin"), record("point", "origin")]);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&locked).is_err() {
        let id = resolve(&d, "current");
        assert_eq!(id.id, "continuation-root");
        assert!(missing(&id));
        assert_eq!(id.unreadable_siblings, vec![locked.clone()]);
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o644)).unwrap();
}

// ---- §6.5 ----

/// 63, 64, 65.
#[test]
fn subagent_identities() {
    let (_t, d) = tempdir();
    write(&d, "the-parent", &[root("parent-origin")]);
    let sub = |name: &str, origin: &str| {
        write_lines(
            &d.join(format!("the-parent/subagents/agent-{name}.jsonl")),
            &[with(
                root(origin),
                json!({"isSidechain": true, "agentId": name, "sessionId": "the-parent"}),
            )],
        )
    };
    let a = sub("a6e302233716d506d", "subagent-origin");
    assert_eq!(
        stable_session_id(&d, &d.join("the-parent.jsonl")).unwrap(),
        "parent-origin"
    );
    assert_eq!(stable_session_id(&d, &a).unwrap(), "subagent-origin");
    // 64: two files sharing one sidechain root.
    let fork = sub("a0000000000000001", "subagent-origin");
    assert_eq!(
        stable_session_id(&d, &fork).unwrap(),
        stable_session_id(&d, &a).unwrap()
    );
    // 65.
    let other = sub("a0000000000000002", "other-subagent-origin");
    assert_ne!(
        stable_session_id(&d, &other).unwrap(),
        stable_session_id(&d, &a).unwrap()
    );
    // Through stable_identity the project dir is climbed out of subagents/.
    assert_eq!(
        stable_identity(&a, Path::new("/ignored")).unwrap().id,
        "subagent-origin"
    );
}

// ---- §6.7 notices ----

/// 79.
#[test]
fn degraded_by_an_unreadable_sibling_is_reported_not_as_gone() {
    let (_t, cfg) = tempdir();
    let p = cfg.join("projects/-p");
    write_raw(
        &p.join("predecessor.jsonl"),
        &[
            oversized_line(json!({"type": "summary"})),
            line(&root("origin")),
        ],
    );
    let session = write_lines(
        &p.join("session.jsonl"),
        &[boundary("continuation-root", "origin")],
    );
    let id = stable_identity(&session, Path::new("/p")).unwrap();
    assert_eq!(id.id, "continuation-root");
    assert!(id.degraded.is_some());
    assert!(!id.unreadable_siblings.is_empty());
    let notice = id.notice().unwrap();
    assert!(notice.contains("could not be reached"), "{notice}");
    assert!(!notice.contains("is gone"), "{notice}");
}

/// 80 (the notice; printing it once per session is the hook's job).
#[test]
fn degraded_identity_notice_says_gone_and_names_the_id() {
    let (_t, d) = tempdir();
    write(&d, "orphan", &[boundary("continuation-root", "deleted")]);
    let id = resolve(&d, "orphan");
    let notice = id.notice().unwrap();
    assert!(notice.starts_with("transcope: identity:"), "{notice}");
    assert!(notice.contains("earlier transcript is gone") && notice.contains("continuation-root"));
}

/// 81.
#[test]
fn degraded_by_a_ring_does_not_say_gone() {
    let (_t, d) = tempdir();
    write(
        &d,
        "one",
        &[
            boundary("root-one", "point-two"),
            record("point-one", "root-one"),
        ],
    );
    write(
        &d,
        "two",
        &[
            boundary("root-two", "point-one"),
            record("point-two", "root-two"),
        ],
    );
    let id = resolve(&d, "one");
    assert!(runaway(&id));
    let notice = id.notice().unwrap();
    assert!(
        notice.contains("loops") && !notice.contains("gone"),
        "{notice}"
    );
}

/// 82.
#[test]
fn resolved_identity_is_not_reported() {
    let (_t, d) = tempdir();
    write(&d, "t", &[root("origin")]);
    assert_eq!(resolve(&d, "t").notice(), None);
    let empty = Identity {
        degraded: Some(Degraded::ContinuationMissing { detail: "x".into() }),
        ..Default::default()
    };
    assert_eq!(empty.notice(), None, "no id, nothing to say");
}

// ---- the remaining branches of the walk ----

/// More than 512 candidate visits give ChainRunaway with the current root.
#[test]
fn the_visit_bound_gives_up_after_512_transcripts() {
    let (_t, d) = tempdir();
    // Layers of three continuations: every file of layer i holds `point-{i}`, the record every
    // file of layer i-1 continues, so the paths multiply (3^6 > 512) while the depth stays 7.
    let layers = 6;
    for layer in 1..=layers {
        for k in 0..3 {
            let lp = if layer == layers {
                "deleted".to_owned()
            } else {
                format!("point-{}", layer + 1)
            };
            write(
                &d,
                &format!("l{layer}-{k}"),
                &[
                    boundary(&format!("root-{layer}-{k}"), &lp),
                    record(&format!("point-{layer}"), "x"),
                ],
            );
        }
    }
    write(&d, "current", &[boundary("current-root", "point-1")]);
    let id = resolve(&d, "current");
    assert_eq!(id.id, "current-root");
    assert!(runaway(&id), "{id:?}");
    assert!(id.degraded.unwrap().to_string().contains(&format!(
        "gave up after opening {MAX_WALK_VISITS} transcripts"
    )));
}

/// Timestamps: an unparsable one never excludes, an equal one does not, a later one does.
#[test]
fn started_after_needs_two_parsable_times() {
    let (_t, d) = tempdir();
    write(
        &d,
        "garbage-time",
        &[
            with(root("origin-g"), json!({"timestamp": "not a time"})),
            record("point", "origin-g"),
        ],
    );
    write(
        &d,
        "current",
        &[compact_at("c", "point", "2026-08-10T00:00:00Z")],
    );
    assert_eq!(resolve(&d, "current").id, "origin-g");

    let (_t2, d) = tempdir();
    write(
        &d,
        "same-time",
        &[
            origin_at("origin-s", "2026-08-10T02:00:00+02:00"),
            record("point", "origin-s"),
        ],
    );
    write(
        &d,
        "current",
        &[compact_at("c", "point", "2026-08-10T00:00:00Z")],
    );
    assert_eq!(
        resolve(&d, "current").id,
        "origin-s",
        "equal instants do not exclude"
    );

    let (_t3, d) = tempdir();
    write(
        &d,
        "later",
        &[
            origin_at("origin-l", "2026-08-10T00:00:00.001Z"),
            record("point", "origin-l"),
        ],
    );
    write(
        &d,
        "current",
        &[compact_at("c", "point", "2026-08-10T00:00:00Z")],
    );
    let id = resolve(&d, "current");
    assert_eq!(id.id, "c");
    assert!(missing(&id));
}

/// A hit before a read error counts; a read error with no hit lists the file.
#[test]
fn predecessor_scans_keep_a_hit_before_an_error() {
    let (_t, d) = tempdir();
    let after = write_raw(
        &d.join("b-hit-then-too-long.jsonl"),
        &[
            line(&root("origin")),
            line(&record("point", "origin")),
            oversized_line(json!({})),
        ],
    );
    let noisy = write_raw(
        &d.join("a-no-hit-then-too-long.jsonl"),
        &[
            line(&root("other")),
            oversized_line(json!({})),
            line(&record("point", "other")),
        ],
    );
    write(&d, "current", &[boundary("c", "point")]);
    let id = resolve(&d, "current");
    assert_eq!((id.id.as_str(), id.degraded.is_none()), ("origin", true));
    assert_eq!(id.unreadable_siblings, vec![noisy]);
    let _ = after;
}

/// Only `*.jsonl` files directly in the project directory are candidates; sub-agent records
/// and other files are not.
#[test]
fn the_listing_takes_only_top_level_jsonl_files() {
    let (_t, d) = tempdir();
    write_lines(
        &d.join("sess/subagents/agent-a.jsonl"),
        &[root("sub"), record("point", "sub")],
    );
    write_lines(&d.join("notes.txt"), &[root("txt"), record("point", "txt")]);
    std::fs::create_dir_all(d.join("dir.jsonl")).unwrap();
    // A dangling link is a missing file: skipped silently, not listed as unreadable.
    std::os::unix::fs::symlink(d.join("nowhere.jsonl"), d.join("dangling.jsonl")).unwrap();
    write(&d, "current", &[boundary("c", "point")]);
    let id = resolve(&d, "current");
    assert_eq!(id.id, "c");
    assert!(missing(&id));
    assert!(id.unreadable_siblings.is_empty());
}

/// The starting file: a root before an oversized line is fine; an oversized line before the
/// root is a hard error; an unlistable project directory is a hard error.
#[test]
fn the_starting_file_and_directory_can_fail_hard() {
    let (_t, d) = tempdir();
    let ok = write_raw(
        &d.join("ok.jsonl"),
        &[line(&root("o")), oversized_line(json!({}))],
    );
    assert_eq!(root_record(&ok).unwrap().uuid, "o");
    let bad = write_raw(
        &d.join("bad.jsonl"),
        &[oversized_line(json!({})), line(&root("o"))],
    );
    let err = resolve_stable_session_id(&d, &bad).unwrap_err();
    assert!(
        matches!(err, TranscriptError::Read { .. }) && !err.is_not_found(),
        "{err}"
    );
    let cont = write(&d, "cont", &[boundary("c", "x")]);
    let err = resolve_stable_session_id(&d.join("no-such-dir"), &cont).unwrap_err();
    assert!(
        matches!(err, TranscriptError::ListProjectDir { .. }),
        "{err}"
    );
    // A record with a parent of "" is not a root; uuid-less records are not roots.
    let p = write_raw(
        &d.join("p.jsonl"),
        &[
            r#"{"type":"summary","parentUuid":null}"#.to_owned(),
            r#"{"uuid":"a","parentUuid":""}"#.to_owned(),
            r#"{"uuid":"b"}"#.to_owned(),
        ],
    );
    assert_eq!(root_record(&p).unwrap().uuid, "b");
}

// ---- §4.1 the cache ----

#[test]
fn stable_identity_is_cached_by_path_size_and_mtime() {
    let (_t, d) = tempdir();
    let pred = write(&d, "pred", &[root("origin"), record("point", "origin")]);
    let cur = write(&d, "cur", &[boundary("c", "point")]);
    let first = stable_identity(&cur, Path::new("")).unwrap();
    assert_eq!(first.id, "origin");
    // The predecessor disappears; the record is unchanged, so the cached answer stands.
    std::fs::remove_file(&pred).unwrap();
    assert_eq!(stable_identity(&cur, Path::new("")).unwrap().id, "origin");
    assert_eq!(resolve(&d, "cur").id, "c", "uncached, it would now degrade");
    // The record grows: resolved again, and the degraded answer is cached too.
    write(&d, "cur", &[boundary("c", "point"), record("more", "c")]);
    let again = stable_identity(&cur, Path::new("")).unwrap();
    assert_eq!(again.id, "c");
    assert!(again.degraded.is_some());
    write(&d, "pred", &[root("origin"), record("point", "origin")]);
    assert_eq!(stable_identity(&cur, Path::new("")).unwrap(), again);
    // Errors are not cached: a missing file, then written.
    let late: PathBuf = d.join("late.jsonl");
    assert!(stable_identity(&late, Path::new("")).is_err());
    write(&d, "late", &[root("late-origin")]);
    assert_eq!(
        stable_identity(&late, Path::new("")).unwrap().id,
        "late-origin"
    );
}
