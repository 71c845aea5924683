//! The marker grammar: the §5.1 rules, and agreement with an independent regex-based
//! extractor (fancy-regex, a backtracking engine like Python's) on random text.

use proptest::prelude::*;
use serde_json::json;
use transcope_markers::{markers_in, parse};

fn kinds(text: &str) -> Vec<(String, String)> {
    markers_in(text)
        .into_iter()
        .map(|(_, m)| (m.kind, m.content))
        .collect()
}

#[test]
fn spec_example() {
    let m = &markers_in(
        "<!-- @signal severity=warning share=fleet -->Shared warning for every swarm.<!-- @/signal -->",
    )[0]
    .1;
    assert_eq!(
        m.to_python_json(),
        r#"{"type": "signal", "attrs": {"severity": "warning", "share": "fleet"}, "content": "Shared warning for every swarm."}"#
    );
}

#[test]
fn types_trimming_and_dropping() {
    assert_eq!(
        kinds("<!--@lesson-->  a  <!--@/lesson--><!-- @Milestone -->b<!-- @/Milestone -->"),
        [
            ("lesson".into(), "a".into()),
            ("milestone".into(), "b".into())
        ]
    );
    // Unknown types are consumed with what they enclose.
    assert!(kinds("<!-- @note --><!-- @lesson -->x<!-- @/lesson --><!-- @/note -->").is_empty());
    // Empty content is dropped; the closing tag must repeat the type exactly.
    assert!(kinds("<!-- @lesson -->  \n <!-- @/lesson -->").is_empty());
    assert!(kinds("<!-- @lesson -->x<!-- @/Lesson -->").is_empty());
    // Unterminated: skipped, a later block still found.
    assert_eq!(
        kinds("<!-- @lesson -->never closed <!-- @decision -->d<!-- @/decision -->"),
        [("decision".into(), "d".into())]
    );
    // Shortest content.
    assert_eq!(
        kinds("<!-- @lesson -->a<!-- @/lesson -->b<!-- @/lesson -->"),
        [("lesson".into(), "a".into())]
    );
    // Nested same type: the first closing tag ends the outer block.
    assert_eq!(
        kinds("<!-- @lesson -->a<!-- @lesson -->b<!-- @/lesson -->c<!-- @/lesson -->"),
        [("lesson".into(), "a<!-- @lesson -->b".into())]
    );
}

#[test]
fn attribute_quirks() {
    let a = |t: &str| markers_in(t)[0].1.attrs.clone();
    assert_eq!(
        serde_json::Value::Object(a(
            r#"<!-- @lesson a="x y" b=1 a=2 e="" ts=9 -->c<!-- @/lesson -->"#
        )),
        json!({"a": "2", "b": "1", "e": null})
    );
    // An unquoted value ending in `--` before `>` gives the `-->` back.
    assert_eq!(
        serde_json::Value::Object(a("<!-- @lesson a=b-->c<!-- @/lesson -->")),
        json!({"a": "b"})
    );
    // Quoted value that contains `-->`, with the closing tag only reachable by
    // backtracking into the unquoted alternative.
    assert_eq!(
        kinds(r#"<!-- @lesson a="x --><!-- @/lesson -->" -->"#),
        Vec::<(String, String)>::new()
    );
}

/// The grammar as the reference's regular expressions (fancy-regex backtracks like
/// Python's `re`).
fn regex_extract(text: &str) -> Vec<(usize, String, String, serde_json::Value)> {
    let block = fancy_regex::Regex::new(
        r#"(?s)<!--[\s\x1c-\x1f]*@(\w+)((?:[\s\x1c-\x1f]+\w+=(?:"[^"]*"|[^\s\x1c-\x1f>]+))*)[\s\x1c-\x1f]*-->(.*?)<!--[\s\x1c-\x1f]*@/\1[\s\x1c-\x1f]*-->"#,
    )
    .unwrap();
    let attr = fancy_regex::Regex::new(r#"(\w+)=(?:"([^"]*)"|([^\s\x1c-\x1f>]+))"#).unwrap();
    let mut out = Vec::new();
    for c in block.captures_iter(text) {
        let c = c.unwrap();
        let kind = c[1].to_lowercase();
        if !["lesson", "milestone", "signal", "decision"].contains(&kind.as_str()) {
            continue;
        }
        let content = transcope_markers::py_strip(&c[3]).to_owned();
        if content.is_empty() {
            continue;
        }
        let mut attrs = serde_json::Map::new();
        for a in attr.captures_iter(&c[2]) {
            let a = a.unwrap();
            let v = match (a.get(2), a.get(3)) {
                (Some(q), _) if !q.as_str().is_empty() => json!(q.as_str()),
                (_, Some(u)) => json!(u.as_str()),
                _ => serde_json::Value::Null,
            };
            attrs.insert(a[1].to_owned(), v);
        }
        attrs.shift_remove("ts");
        out.push((
            c.get(0).unwrap().start(),
            kind,
            content,
            serde_json::Value::Object(attrs),
        ));
    }
    out
}

fn ours(text: &str) -> Vec<(usize, String, String, serde_json::Value)> {
    markers_in(text)
        .into_iter()
        .map(|(s, m)| (s, m.kind, m.content, serde_json::Value::Object(m.attrs)))
        .collect()
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<!-- @lesson -->".to_owned()),
        Just("<!--@/lesson-->".to_owned()),
        Just("<!-- @/lesson -->".to_owned()),
        Just("<!-- @signal share=fleet a=\"q w\" -->".to_owned()),
        Just("<!-- @/signal -->".to_owned()),
        Just("<!-- @note -->".to_owned()),
        Just("<!-- @/note -->".to_owned()),
        Just("<!-- @Decision x=\"\" ts=1 -->".to_owned()),
        Just("<!-- @/Decision -->".to_owned()),
        Just("<!-- @milestone a=b-->".to_owned()),
        Just("<!-- @/milestone-->".to_owned()),
        Just("<!--".to_owned()),
        Just("-->".to_owned()),
        Just(" ".to_owned()),
        Just("\n".to_owned()),
        Just("\"".to_owned()),
        Just("=".to_owned()),
        Just("é".to_owned()),
        "[a-z ]{0,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    #[test]
    fn agrees_with_a_backtracking_regex(pieces in proptest::collection::vec(piece(), 0..24)) {
        let text: String = pieces.concat();
        prop_assert_eq!(ours(&text), regex_extract(&text), "{:?}", text);
    }

    #[test]
    fn never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
        let _ = parse::blocks(&text);
        let _ = markers_in(&text);
    }
}

#[test]
fn hostile_inputs_stay_fast() {
    // Many attributes that end in failure: exponential for a naive backtracker.
    let mut t = String::from("<!-- @lesson");
    for _ in 0..40 {
        t.push_str(" a=\"1\"");
    }
    t.push_str(" junk");
    let start = std::time::Instant::now();
    assert!(markers_in(&t).is_empty());
    // Many unterminated opening tags.
    let many = "<!-- @lesson -->x ".repeat(20_000);
    assert!(markers_in(&many).is_empty());
    // Deep attribute lists beyond the guard are simply not markers.
    let deep = format!("<!-- @lesson{} -->c<!-- @/lesson -->", " a=b".repeat(5000));
    assert!(markers_in(&deep).is_empty());
    assert!(start.elapsed().as_secs() < 20);
}
