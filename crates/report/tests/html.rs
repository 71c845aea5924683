//! The page is self-contained, its policy admits exactly its own scripts, and the
//! embedded model survives any text the archive holds.

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use transcope_brain::MarkerRecord;
use transcope_index::{Found, Index, Observed, Origin, Span, Stamp};
use transcope_report::{collect, embed_json, render, Window};

/// Every string a page must not let out of its JSON string.
const HOSTILE: &str =
    "a</script><script>alert(1)</script> <!-- x --> </SCRIPT \u{2028}\u{2029} & <b> ]]> \" \\ '";

fn row(
    session: &str,
    seq: u64,
    at: &str,
    project: &str,
    task: &str,
) -> transcope_scopelog::WrittenRow {
    let line = json!({
        "session_id": session, "sequence": seq, "at": at,
        "transition_id": format!("t{seq}"), "project_id": project,
        "worktree": "/w/one", "branch": "main", "task": task, "cwd": "/w/one",
    })
    .to_string();
    transcope_scopelog::WrittenRow::from_line(&line).unwrap()
}

fn marker(session: &str, key: &str, at: &str, content: &str) -> Found {
    Found {
        record: MarkerRecord {
            body: json!({
                "type": "lesson",
                "content": content,
                "attrs": {"attribution": "scoped", "project_id": "p</script>", "task": HOSTILE},
            }),
            content: content.to_owned(),
            idempotency_key: key.to_owned(),
            session: Some(session.to_owned()),
        },
        at: Some(Value::String(at.to_owned())),
    }
}

/// A home whose index holds a root session with two transitions and two markers (one
/// hostile) and a sub-agent.
fn hostile_index() -> (tempfile::TempDir, Index) {
    let home = tempfile::tempdir().unwrap();
    let mut index = Index::open(home.path()).unwrap();
    let root = Observed {
        agent: Some("claude".into()),
        span: Span {
            first: Stamp::parse("2026-10-08T10:00:00Z"),
            last: Stamp::parse("2026-10-08T11:00:00Z"),
        },
        rows: vec![
            row("s1", 0, "2026-10-08T10:00:00Z", HOSTILE, "t-1"),
            row("s1", 1, "2026-10-08T10:30:00Z", "p2", HOSTILE),
        ],
        markers: vec![
            marker("s1", "k1", "2026-10-08T10:10:00Z", HOSTILE),
            marker("s1", "k2", "2026-10-08T10:40:00Z", "plain"),
        ],
        ..Observed::new("s1")
    };
    let sub = Observed {
        parent: Some("s1".into()),
        span: Span {
            first: Stamp::parse("2026-10-08T10:05:00Z"),
            last: Stamp::parse("2026-10-08T10:20:00Z"),
        },
        rows: vec![row("s1.a", 0, "2026-10-08T10:05:00Z", "p2", "")],
        ..Observed::new("s1.a")
    };
    index.record(&[root, sub], Origin::Backfill, false).unwrap();
    (home, index)
}

/// The text between `open` and the next `</script>`, for each occurrence.
fn scripts(page: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(i) = rest.find("<script") {
        let tag_end = i + rest[i..].find('>').unwrap() + 1;
        let tag = rest[i..tag_end].to_owned();
        let end = tag_end + rest[tag_end..].find("</script>").unwrap();
        out.push((tag, rest[tag_end..end].to_owned()));
        rest = &rest[end + "</script>".len()..];
    }
    out
}

fn model_of(page: &str) -> Value {
    let (_, data) = scripts(page)
        .into_iter()
        .find(|(tag, _)| tag.contains("application/json"))
        .expect("a JSON data block");
    serde_json::from_str(&data).unwrap()
}

#[test]
fn embedded_json_survives_hostile_strings() {
    let v = json!({"s": HOSTILE, "list": [HOSTILE, "<!--", "-->", "\u{2028}"], HOSTILE: 1});
    let text = embed_json(&v);
    for bad in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
        assert!(!text.contains(bad), "{bad:?} left raw in {text}");
    }
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
}

#[test]
fn hostile_archive_text_stays_inside_the_data_block() {
    let (_home, index) = hostile_index();
    let report = collect(&index, &Window::default(), &transcope_store::Unpriced).unwrap();
    let page = render(&report);
    // Exactly the three scripts the page is made of: the data, d3, the page's own.
    let s = scripts(&page);
    assert_eq!(
        s.len(),
        3,
        "{:?}",
        s.iter().map(|x| &x.0).collect::<Vec<_>>()
    );
    assert!(!page.contains("alert(1)</script>"));
    let model = model_of(&page);
    assert_eq!(&model, report.model());
    assert_eq!(model["markers"][0][3], HOSTILE);
    assert!(model["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s[1] == HOSTILE));
    assert_eq!(model["keys"][0]["label"].as_str().map(|_| ()), Some(()));
}

#[test]
fn the_page_is_self_contained_and_its_policy_forbids_the_network() {
    let (_home, index) = hostile_index();
    let page = render(&collect(&index, &Window::default(), &transcope_store::Unpriced).unwrap());
    let lower = page.to_ascii_lowercase();
    for bad in [
        "src=\"http",
        "src='http",
        "href=\"http",
        "href='http",
        "src=\"//",
        "href=\"//",
        "url(http",
        "url(//",
        "@import",
        "<link",
        "<iframe",
        "<img",
    ] {
        assert!(!lower.contains(bad), "the page holds {bad:?}");
    }
    let head = &page[..page.find("<style>").unwrap()];
    let csp_at = head
        .find("<meta http-equiv=\"Content-Security-Policy\" content=\"")
        .expect("a CSP meta in the head, before the style");
    let csp = &head[csp_at..];
    let csp = &csp[csp.find("content=\"").unwrap() + 9..];
    let csp = &csp[..csp.find('"').unwrap()];
    for part in [
        "default-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(
        !csp.contains("unsafe-eval") && !csp.contains("http"),
        "{csp}"
    );
    // script-src names each inline script by its hash, and nothing else.
    let script_src = csp
        .split(';')
        .map(str::trim)
        .find_map(|d| d.strip_prefix("script-src "))
        .expect("a script-src");
    let mut allowed: Vec<&str> = script_src.split_whitespace().collect();
    let mut hashes: Vec<String> = scripts(&page)
        .into_iter()
        .filter(|(tag, _)| !tag.contains("application/json"))
        .map(|(_, body)| {
            let d = Sha256::digest(body.as_bytes());
            format!(
                "'sha256-{}'",
                base64::engine::general_purpose::STANDARD.encode(d)
            )
        })
        .collect();
    allowed.sort_unstable();
    hashes.sort_unstable();
    assert_eq!(allowed, hashes);
}

#[test]
fn lanes_segments_and_markers_are_what_the_index_holds() {
    let (_home, index) = hostile_index();
    let report = collect(&index, &Window::default(), &transcope_store::Unpriced).unwrap();
    let c = report.counts();
    assert_eq!((c.lanes, c.segments, c.markers, c.hidden), (2, 3, 2, 0));
    let m = report.model();
    // The sub-agent right after its root, one level in.
    assert_eq!(m["lanes"][0]["key"], "s1");
    assert_eq!(m["lanes"][1]["key"], "s1.a");
    assert_eq!(m["lanes"][1]["depth"], 1);
    // Segments run from row to row, the last to the session's end.
    let segs = &m["lanes"][0]["segs"];
    let t = |s: &str| Stamp::parse(s).unwrap().micros / 1000;
    assert_eq!(segs[0][0], t("2026-10-08T10:00:00Z"));
    assert_eq!(segs[0][1], t("2026-10-08T10:30:00Z"));
    assert_eq!(segs[1][1], t("2026-10-08T11:00:00Z"));
}

#[test]
fn a_window_clips_segments_and_keeps_markers_inside_it() {
    let (_home, index) = hostile_index();
    let w = Window {
        since: Stamp::parse("2026-10-08T10:35:00Z").map(|s| s.micros),
        until: Stamp::parse("2026-10-08T10:50:00Z").map(|s| s.micros),
        projects: Vec::new(),
    };
    let report = collect(&index, &w, &transcope_store::Unpriced).unwrap();
    let c = report.counts();
    assert_eq!((c.lanes, c.segments, c.markers), (1, 1, 1));
    let seg = &report.model()["lanes"][0]["segs"][0];
    assert_eq!(seg[0], w.since.unwrap() / 1000);
    assert_eq!(seg[1], w.until.unwrap() / 1000);
    // --project keeps the sessions in force in it.
    let p = Window {
        projects: vec!["p2".into()],
        ..Window::default()
    };
    let report = collect(&index, &p, &transcope_store::Unpriced).unwrap();
    assert_eq!(report.counts().lanes, 2);
    let none = Window {
        projects: vec!["nowhere".into()],
        ..Window::default()
    };
    assert_eq!(
        collect(&index, &none, &transcope_store::Unpriced)
            .unwrap()
            .counts()
            .lanes,
        0
    );
}

#[test]
fn an_empty_index_gives_a_page_that_says_so() {
    let home = tempfile::tempdir().unwrap();
    let index = Index::open(home.path()).unwrap();
    let report = collect(&index, &Window::default(), &transcope_store::Unpriced).unwrap();
    let page = render(&report);
    let model = model_of(&page);
    assert_eq!(model["lanes"], json!([]));
    assert_eq!(model["usage"]["projects"], json!([]));
    assert_eq!(model["extent"], Value::Null);
}
