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
        // Distinct TYPEs whose attribute lists run through each other (issue 13).
        Just("<!--@t1 x=".to_owned()),
        Just("<!--@t10 x=".to_owned()),
        Just("<!--@/t1-->".to_owned()),
        Just("<!--@/t10 -->".to_owned()),
        Just(" a=".to_owned()),
        Just("<!-- @lesson a=\"x b=y\"ww".to_owned()),
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

/// Pieces that cut tags anywhere: a split point can fall inside any of them.
fn fine_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        piece(),
        Just("<".to_owned()),
        Just("<!".to_owned()),
        Just("<!-".to_owned()),
        Just("-".to_owned()),
        Just("--".to_owned()),
        Just("@".to_owned()),
        Just("@/".to_owned()),
        Just("lesson".to_owned()),
        Just(" a=".to_owned()),
        Just(" b=\"x".to_owned()),
        Just(">".to_owned()),
        Just("<!-- @lesson".to_owned()),
        Just(" -->".to_owned()),
    ]
}

type Found = (usize, usize, String, String, String);

fn found(blocks: &[parse::Block<'_>], shift: usize) -> Vec<Found> {
    blocks
        .iter()
        .map(|b| {
            (
                b.start + shift,
                b.end + shift,
                b.kind.to_owned(),
                b.attrs.to_owned(),
                b.content.to_owned(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    /// Cut a text anywhere: the blocks settled in the first part, then the blocks from
    /// where it says to resume, are the blocks of the whole text.
    #[test]
    fn settled_blocks_never_change(
        pieces in proptest::collection::vec(fine_piece(), 0..20),
        cut in any::<proptest::sample::Index>(),
    ) {
        let text: String = pieces.concat();
        let cuts: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
        let k = cuts[cut.index(cuts.len())];
        let (done, rest) = parse::blocks_settled(&text[..k]);
        let resume = rest.unwrap_or(k);
        prop_assert!(resume <= k);
        let mut got = found(&done, 0);
        got.extend(found(&parse::blocks(&text[resume..]), resume));
        prop_assert_eq!(got, found(&parse::blocks(&text), 0), "{:?} cut at {}", text, k);
    }
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

/// The matcher's work (backtracking states visited) grows linearly with the text on
/// inputs built to make a backtracking matcher slow, and attribute lists of any depth
/// are matched as Python matches them.
#[test]
fn hostile_inputs_take_linear_work() {
    type Maker = fn(usize) -> String;
    let hostile: [(&str, Maker); 9] = [
        // Many attributes that end in failure: exponential for a naive backtracker.
        ("failing attribute list", |n| {
            format!(
                "<!-- @lesson{} junk <!-- @/lesson -->",
                " a=\"1\"".repeat(n)
            )
        }),
        // Many unterminated opening tags.
        ("unterminated openings", |n| "<!-- @lesson -->x ".repeat(n)),
        // Every opening tag starts an attribute chain running to the end of the text;
        // quadratic when failures are forgotten between openings (it was).
        ("chained openings", |n| {
            format!("{}<!-- @/a -->", "<!--@a x=".repeat(n))
        }),
        ("chained openings, two types", |n| {
            format!("{}<!-- @/a --><!--@/b-->", "<!--@a x=<!--@b y=".repeat(n))
        }),
        // Long unquoted values: every shorter value is an alternative.
        ("long values", |n| {
            format!("<!-- @lesson a={} --x <!-- @/lesson -->", "v".repeat(n))
        }),
        ("unclosed quotes", |n| {
            format!("{}<!-- @/lesson -->", "<!-- @lesson a=\"".repeat(n))
        }),
        // Issue 13: distinct TYPEs, each walk running through all later openings, the
        // closing tags after them all (quadratic while failures were kept per TYPE).
        ("many types closed later", |n| {
            let opens: String = (0..n).map(|i| format!("<!--@t{i} x=")).collect();
            let closes: String = (0..n).map(|i| format!("<!--@/t{i}-->")).collect();
            format!("{opens} {closes}")
        }),
        // The same, each walk reaching a `-->` that only a later closing tag would take.
        ("many types closed before", |n| {
            let closes: String = (0..n).map(|i| format!("<!--@/t{i}-->")).collect();
            let opens: String = (0..n).map(|i| format!("<!--@t{i} x=")).collect();
            format!("{closes}{opens}1 -->c")
        }),
        // Issue 13: a value-less `name=` after a long value (the grammar's side of it;
        // the attribute scanner's is `parse::tests::issue13_attribute_rescan`).
        ("valueless name after a long value", |n| {
            format!(
                "<!-- @lesson a=\"x b=y\"{}= c=d -->c<!-- @/lesson -->",
                "w".repeat(n)
            )
        }),
    ];
    for (name, make) in hostile {
        let small = make(2_000);
        let large = make(8_000);
        let (_, w_small) = parse::blocks_counted(&small);
        let (_, w_large) = parse::blocks_counted(&large);
        assert!(
            w_large <= 4 * w_small + 64,
            "{name}: {w_small} then {w_large} states"
        );
        assert!(
            w_large <= 4 * large.len() + 64,
            "{name}: {w_large} states for {} bytes",
            large.len()
        );
    }
    // Deep attribute lists are markers, as in Python (there is no depth limit).
    let deep = format!(
        "<!-- @lesson{} -->c<!-- @/lesson -->",
        " a=b".repeat(50_000)
    );
    let found = markers_in(&deep);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1.attrs.get("a"), Some(&serde_json::json!("b")));
}

/// Each way a match can still change when text is appended, cut where only that rule
/// keeps the block open.
#[test]
fn open_blocks_wait_for_more_text() {
    for (a, b) in [
        // The closing tag is still to come.
        ("<!-- @lesson -->x", "<!-- @/lesson -->"),
        ("<!-- @/lesson --><!-- @lesson -->x", "<!-- @/lesson -->"),
        // A quoted value may still close, making a longer opening tag.
        (
            "<!-- @lesson b=\"x -->c<!-- @/lesson -->",
            "\" -->d<!-- @/lesson -->",
        ),
        // The text ends inside `-->`, inside the whitespace before it, or inside `<!--`.
        ("<!-- @/lesson --><!-- @lesson -", "->x<!-- @/lesson -->"),
        ("<!-- @/lesson --><!-- @lesson ", "-->x<!-- @/lesson -->"),
        ("<!-- @/lesson --><!", "-- @lesson -->x<!-- @/lesson -->"),
        // An attribute name or `@` may still come.
        ("<!-- @/lesson --><!-- ", "@lesson -->x<!-- @/lesson -->"),
        (
            "<!-- @/lesson --><!-- @lesson a=1",
            " b=2 -->x<!-- @/lesson -->",
        ),
        (
            "<!-- @/lesson --><!-- @lesson a",
            "=1 -->x<!-- @/lesson -->",
        ),
        ("<!-- @/lesson --><!-- @", "lesson -->x<!-- @/lesson -->"),
    ] {
        let whole = format!("{a}{b}");
        let (done, rest) = parse::blocks_settled(a);
        let resume = rest.expect(a);
        let mut got = found(&done, 0);
        got.extend(found(&parse::blocks(&whole[resume..]), resume));
        assert_eq!(got, found(&parse::blocks(&whole), 0), "{a:?} + {b:?}");
        assert!(!parse::blocks(&whole).is_empty());
    }
    // Settled: nothing after the text can change these.
    for a in [
        "<!-- @lesson -->x<!-- @/lesson -->",
        "a <!-- plain comment --> b",
    ] {
        assert_eq!(parse::blocks_settled(a).1, None, "{a:?}");
    }
}
