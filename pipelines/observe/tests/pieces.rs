//! Every byte observed once (issue: re-observation): observing the same bytes again
//! writes nothing, whatever their times; any split of a transcript into appended pieces
//! — cut anywhere, mid-line included — observed one piece at a time gives exactly the
//! scope log and the markers of one pass over the whole file, marker blocks opened in
//! one piece and closed in a later one included. Claude and Codex transcripts are
//! generated with times that go backwards; Gemini documents grow message by message.

use std::io::Write;
use std::path::Path;

use transcope_change_detect::{Env, NoProjects, Resolving};
use transcope_core::Marker;
use transcope_engine::Buffers;
use transcope_markers::Markers;
use transcope_observe::{observe_deferred, Observe, ObserveReport, Routes};
use transcope_scopelog::ScopeLog;
use transcope_testkit::Rng;

/// One observation of `t` for session `s` under `home`: (transitions written, markers).
fn observe_once(home: &Path, s: &str, t: &Path) -> (u64, Vec<Marker>) {
    let (r, m) = observe_until(home, s, t, None);
    (r.outcome.recorded, m)
}

/// [`observe_once`] stopping at `until`, with the whole report.
fn observe_until(
    home: &Path,
    s: &str,
    t: &Path,
    until: Option<std::time::Instant>,
) -> (ObserveReport, Vec<Marker>) {
    let log = ScopeLog::open(home, s);
    let env = Env::new();
    let (r, mut found, pending) = observe_deferred(
        &transcope_testkit::engine::pipeline(home),
        &Observe::new(&log, t, &env).until(until),
        &Resolving::None,
        &mut Buffers::default(),
        Routes::ALL,
    )
    .unwrap();
    if let Some(p) = pending {
        p.save().unwrap();
    }
    (r, found.take::<Markers>().unwrap_or_default().found)
}

fn log_bytes(home: &Path, s: &str) -> Vec<u8> {
    std::fs::read(home.join("brain/session-scopes").join(format!("{s}.jsonl"))).unwrap_or_default()
}

/// A time `m` minutes into the day, in one of the spellings the reference accepts.
fn time(rng: &mut Rng, m: u64) -> String {
    let (h, mi) = (m / 60 % 24, m % 60);
    match rng.below(3) {
        0 => format!("2026-10-08T{h:02}:{mi:02}:00Z"),
        1 => format!("2026-10-08T{h:02}:{mi:02}:00.000+00:00"),
        _ => format!("2026-10-08 {h:02}:{mi:02}:00"),
    }
}

/// Assistant text that opens, continues and closes marker blocks across records
/// (never a complete marker inside a block still open: see DEVIATIONS.md).
fn text(rng: &mut Rng, open: &mut bool, i: u64) -> String {
    if *open {
        return match rng.below(3) {
            0 => format!("still {i}"),
            _ => {
                *open = false;
                format!("end {i}<!-- @/lesson --> after")
            }
        };
    }
    match rng.below(4) {
        0 => format!("plain {i}"),
        1 => format!("<!-- @decision why=\"{i}\" -->Pick {i}.<!-- @/decision -->"),
        _ => {
            *open = true;
            format!("Start <!-- @lesson topic=t{i} -->lesson {i}")
        }
    }
}

/// A Claude transcript whose folders, branches and times wander (times go back).
fn claude(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let mut open = false;
    let mut m: u64 = 600;
    for i in 0..rng.below(40) + 5 {
        m = if rng.chance(0.25) {
            m.saturating_sub(rng.below(30))
        } else {
            m + rng.below(20)
        };
        let cwd = format!("/w/{}", rng.below(3));
        let branch = ["main", "", "topic"][rng.below(3) as usize];
        let at = time(rng, m);
        let line = if rng.chance(0.5) {
            serde_json::json!({"type": "user", "timestamp": at, "cwd": cwd, "gitBranch": branch,
                "message": {"role": "user", "content": "go"}})
        } else {
            serde_json::json!({"type": "assistant", "timestamp": at, "cwd": cwd, "gitBranch": branch,
                "message": {"role": "assistant", "content": [{"type": "text", "text": text(rng, &mut open, i)}]}})
        };
        writeln!(out, "{line}").unwrap();
    }
    out
}

/// A Codex rollout whose turn contexts wander and whose times go back.
fn codex(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let mut open = false;
    let mut m: u64 = 600;
    let meta = serde_json::json!({"timestamp": time(rng, m), "type": "session_meta",
        "payload": {"id": "0190aaaa-0000-7000-8000-000000000001", "cwd": "/w/0"}});
    writeln!(out, "{meta}").unwrap();
    for i in 0..rng.below(40) + 5 {
        m = if rng.chance(0.25) {
            m.saturating_sub(rng.below(30))
        } else {
            m + rng.below(20)
        };
        let at = time(rng, m);
        let line = if rng.chance(0.4) {
            serde_json::json!({"timestamp": at, "type": "turn_context",
                "payload": {"cwd": format!("/w/{}", rng.below(3)), "model": "m"}})
        } else {
            serde_json::json!({"timestamp": at, "type": "response_item",
                "payload": {"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": text(rng, &mut open, i)}]}})
        };
        writeln!(out, "{line}").unwrap();
    }
    out
}

/// Write `bytes` in pieces cut at random places (mid-line too), observing after each;
/// returns (log, markers, transitions of a repeat observation at the end).
fn in_pieces(rng: &mut Rng, bytes: &[u8]) -> (Vec<u8>, Vec<Marker>, u64) {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    let mut f = std::fs::File::create(&t).unwrap();
    let mut cuts: Vec<usize> = (0..rng.below(8))
        .map(|_| rng.below(bytes.len() as u64) as usize)
        .collect();
    cuts.sort_unstable();
    cuts.push(bytes.len());
    let (mut prev, mut markers) = (0, Vec::new());
    for c in cuts {
        f.write_all(&bytes[prev..c]).unwrap();
        f.flush().unwrap();
        prev = c;
        markers.extend(observe_once(home.path(), "s", &t).1);
    }
    let again = observe_once(home.path(), "s", &t);
    assert!(again.1.is_empty(), "markers observed twice: {:?}", again.1);
    (log_bytes(home.path(), "s"), markers, again.0)
}

fn one_pass(bytes: &[u8]) -> (Vec<u8>, Vec<Marker>) {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    std::fs::write(&t, bytes).unwrap();
    let (_, markers) = observe_once(home.path(), "s", &t);
    (log_bytes(home.path(), "s"), markers)
}

fn check(name: &str, make: fn(&mut Rng) -> Vec<u8>, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut with_markers = 0;
    for case in 0..60 {
        let bytes = make(&mut rng);
        let (log, markers) = one_pass(&bytes);
        with_markers += usize::from(!markers.is_empty());
        for split in 0..4 {
            let (plog, pmarkers, again) = in_pieces(&mut rng, &bytes);
            assert_eq!(
                again, 0,
                "{name} case {case}.{split}: observing again wrote rows"
            );
            assert_eq!(
                String::from_utf8_lossy(&plog),
                String::from_utf8_lossy(&log),
                "{name} case {case}.{split}: the log differs from one pass"
            );
            assert_eq!(
                pmarkers, markers,
                "{name} case {case}.{split}: the markers differ from one pass"
            );
        }
    }
    assert!(
        with_markers > 20,
        "{name}: the generator made too few markers"
    );
}

#[test]
fn claude_pieces_equal_one_pass_and_twice_writes_nothing() {
    check("claude", claude, 0x5eed_0012);
}

#[test]
fn codex_pieces_equal_one_pass_and_twice_writes_nothing() {
    check("codex", codex, 0x5eed_0013);
}

/// The reference re-reads the whole file, so observing a transcript whose times go
/// backwards a second time adds rows; through the cursor store it adds none.
#[test]
fn observing_the_same_bytes_again_writes_nothing_whatever_their_times() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    let line = |at: &str, cwd: &str| {
        format!(r#"{{"type":"user","timestamp":"{at}","cwd":"{cwd}","gitBranch":"main"}}"#) + "\n"
    };
    // One pass records a@10, b@30; the entry at 20 is refused (older) but moves the
    // pair in force to a, so a@40 is "unchanged". A whole re-read starts after 30 with
    // b in force and records a@40: the reference's second pass adds a row.
    let body = [
        line("2026-10-08T10:10:00Z", "/a"),
        line("2026-10-08T10:30:00Z", "/b"),
        line("2026-10-08T10:20:00Z", "/a"),
        line("2026-10-08T10:40:00Z", "/a"),
    ]
    .concat();
    std::fs::write(&t, &body).unwrap();
    assert_eq!(observe_once(home.path(), "s", &t).0, 2);
    assert_eq!(observe_once(home.path(), "s", &t).0, 0);
    // The reference's algorithm (`observe --full`) does add the row.
    let log = ScopeLog::open(home.path(), "s");
    let env = Env::new();
    let full = transcope_observe::observe(
        &transcope_testkit::engine::pipeline_full(),
        &Observe::new(&log, &t, &env),
        NoProjects,
        &mut Buffers::default(),
    )
    .unwrap();
    assert_eq!(full.outcome.recorded, 1);
}

/// A Gemini session document is rewritten whole as it grows: each rewrite is observed
/// for its new messages only, and the markers equal one read of the last version.
#[test]
fn gemini_documents_grow_and_each_message_is_observed_once() {
    let mut rng = Rng::new(0x5eed_0014);
    for case in 0..30 {
        let mut open = false;
        let n = rng.below(12) + 2;
        let msgs: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                let ts = format!("2026-10-08T10:{:02}:00Z", i % 60);
                if i % 2 == 0 {
                    serde_json::json!({"id": format!("u{i}"), "timestamp": ts, "type": "user", "content": "go"})
                } else {
                    serde_json::json!({"id": format!("g{i}"), "timestamp": ts, "type": "gemini",
                        "content": text(&mut rng, &mut open, i)})
                }
            })
            .collect();
        let doc = |k: usize| {
            serde_json::to_vec_pretty(&serde_json::json!({
                "sessionId": "5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f00aaaa",
                "projectHash": "00", "startTime": "2026-10-08T10:00:00Z",
                "lastUpdated": format!("2026-10-08T11:{k:02}:00Z"), "messages": msgs[..k],
            }))
            .unwrap()
        };
        let home = tempfile::tempdir().unwrap();
        let chats = home.path().join("tmp/p/chats");
        std::fs::create_dir_all(&chats).unwrap();
        let t = chats.join("session-2026-10-08T10-00-5f1c9a2e.json");
        let mut got = Vec::new();
        let mut k = 0;
        while k < msgs.len() {
            k = (k + 1 + rng.below(3) as usize).min(msgs.len());
            std::fs::write(&t, doc(k)).unwrap();
            got.extend(observe_once(home.path(), "g", &t).1);
        }
        assert!(
            observe_once(home.path(), "g", &t).1.is_empty(),
            "case {case}: twice"
        );
        let whole = tempfile::tempdir().unwrap();
        let chats = whole.path().join("tmp/p/chats");
        std::fs::create_dir_all(&chats).unwrap();
        let w = chats.join("session-2026-10-08T10-00-5f1c9a2e.json");
        std::fs::write(&w, doc(msgs.len())).unwrap();
        assert_eq!(got, observe_once(whole.path(), "g", &w).1, "case {case}");
    }
}

// ------------------------------------------------ a read with a time limit

// Issue 13, item 8: a first read that cannot finish in time stops at a line boundary
// and hands back a cursor for the lines it read, so the next read goes on from there
// instead of starting over. Read in as many cut reads as it takes, a transcript gives
// exactly the scope log and the markers of one pass.

/// 60 Claude records: folder changes every 7 records, and marker blocks that open in
/// one record and close two records later.
fn cut_transcript(dir: &Path) -> std::path::PathBuf {
    let mut lines = Vec::new();
    for i in 0..60u64 {
        let at = format!("2026-10-08T10:{:02}:{:02}Z", i / 60, i % 60);
        let cwd = format!("/work/p{}", i / 7);
        lines.push(if i % 3 == 0 {
            serde_json::json!({"type": "user", "timestamp": at, "cwd": cwd, "gitBranch": "main",
                   "message": {"role": "user", "content": "hi"}})
        } else {
            let text = if i % 3 == 1 {
                format!("<!-- @lesson -->begin {i}")
            } else {
                format!("end {i}<!-- @/lesson -->")
            };
            serde_json::json!({"type": "assistant", "timestamp": at, "cwd": cwd, "gitBranch": "main",
                   "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
        });
    }
    let t = dir.join("t.jsonl");
    let body: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&t, body).unwrap();
    t
}

#[test]
fn issue13_item8_a_read_out_of_time_resumes_where_it_stopped() {
    let one = tempfile::tempdir().unwrap();
    let t = cut_transcript(one.path());
    let (whole, expected_markers) = observe_until(one.path(), "s", &t, None);
    assert!(!whole.scan.cut);
    assert_eq!(whole.scan.lines, 60);
    assert!(whole.outcome.recorded > 5);
    assert_eq!(expected_markers.len(), 20);

    // A limit already past: every read stops after its first line, and saves where.
    let cut = tempfile::tempdir().unwrap();
    let mut markers = Vec::new();
    let mut reads = 0;
    loop {
        let (r, m) = observe_until(cut.path(), "s", &t, Some(std::time::Instant::now()));
        markers.extend(m);
        if r.up_to_date {
            break;
        }
        reads += 1;
        assert_eq!(r.scan.lines, 1, "read {reads}: one line, then out of time");
        assert_eq!(r.scan.cut, reads < 60, "read {reads}");
        assert_eq!(r.resumed, reads > 1, "read {reads} goes on from the last");
        assert!(reads <= 60, "never starts over");
    }
    assert_eq!(reads, 60);
    assert_eq!(log_bytes(cut.path(), "s"), log_bytes(one.path(), "s"));
    let contents = |m: &[Marker]| m.iter().map(|m| m.content.clone()).collect::<Vec<_>>();
    assert_eq!(contents(&markers), contents(&expected_markers));
}
