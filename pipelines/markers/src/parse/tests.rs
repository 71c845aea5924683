//! The linear matcher against the matcher before it ([`oracle`](super::oracle)), the
//! attribute scanner against the reference's regex, and the two inputs of issue 13 that
//! cost the square of their size before.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::{attributes, attributes_counted, blocks, blocks_counted, blocks_settled, oracle};

fn kind() -> impl Strategy<Value = &'static str> {
    // `t1` is a prefix of `t10`; `Lesson` is not closed by `lesson`.
    prop::sample::select(vec!["t0", "t1", "t10", "t2", "lesson", "Lesson", "signal"])
}

fn space() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", " ", "  ", "\n", "\u{3000}"])
}

/// Values with and without quotes, empty, unclosed, ending in `--` before `>`, holding
/// `-->`, `=` or a whole opening tag.
fn value() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "b",
        "\"x y\"",
        "\"\"",
        "",
        "\"x",
        "b--",
        "c\"d",
        "v\"w x\"",
        "\"q -->\"",
        "<!--@t1",
        "-->",
        "b-->",
        "w=",
        "é",
    ])
}

fn attribute() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![" ", "  ", "\n", ""]),
        prop::sample::select(vec!["a", "b", "ts", "x_1"]),
        value(),
    )
        .prop_map(|(s, n, v)| format!("{s}{n}={v}"))
}

fn opening() -> impl Strategy<Value = String> {
    (
        space(),
        kind(),
        prop::collection::vec(attribute(), 0..4),
        space(),
        prop::sample::select(vec!["-->", "-->", "--", "", "->", ">"]),
    )
        .prop_map(|(s, k, a, w, end)| format!("<!--{s}@{k}{}{w}{end}", a.concat()))
}

fn closing() -> impl Strategy<Value = String> {
    (
        space(),
        kind(),
        space(),
        prop::sample::select(vec!["-->", "-->", "-->", "->", ""]),
    )
        .prop_map(|(s, k, w, end)| format!("<!--{s}@/{k}{w}{end}"))
}

fn filler() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            " ", "\n", "\"", "=", ">", "-->", "--", "-", "<!--", "<!-- @", "é", "c"
        ])
        .prop_map(str::to_owned),
        "[a-z =\"]{0,5}",
    ]
}

/// Marker-ish text: many TYPEs, nested and unclosed blocks, attributes of every shape.
fn markerish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![3 => opening(), 3 => closing(), 2 => filler()],
        0..30,
    )
    .prop_map(|p| p.concat())
}

type Found = Vec<(usize, usize, String, String, String)>;

fn tuples(b: &[super::Block<'_>]) -> Found {
    b.iter()
        .map(|b| {
            let s = |x: &str| x.to_owned();
            (b.start, b.end, s(b.kind), s(b.attrs), s(b.content))
        })
        .collect()
}

/// The reference's attribute regex, applied as the reference applies it.
fn regex_attributes(text: &str) -> Value {
    static ATTR: std::sync::LazyLock<fancy_regex::Regex> = std::sync::LazyLock::new(|| {
        fancy_regex::Regex::new(r#"(\w+)=(?:"([^"]*)"|([^\s\x1c-\x1f>]+))"#).unwrap()
    });
    let mut map = serde_json::Map::new();
    for c in ATTR.captures_iter(text).map(Result::unwrap) {
        let q = c.get(2).map(|m| m.as_str()).filter(|q| !q.is_empty());
        let v = q.or(c.get(3).map(|m| m.as_str()));
        map.insert(c[1].to_owned(), v.map_or(Value::Null, |v| json!(v)));
    }
    Value::Object(map)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Same blocks as the old matcher, and the same settled blocks and resume offset
    /// for the whole text and for a cut of it (so the marker stage behaves the same).
    #[test]
    fn agrees_with_the_old_matcher(text in markerish(), cut in any::<prop::sample::Index>()) {
        let (new, new_frames) = blocks_counted(&text);
        let (old, old_frames) = oracle::blocks_counted(&text);
        prop_assert_eq!(tuples(&new), tuples(&old), "{:?}", text);
        prop_assert!(new_frames <= old_frames, "{} > {} frames: {:?}", new_frames, old_frames, text);
        let cuts: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
        for part in [&text[..], &text[..cuts[cut.index(cuts.len())]]] {
            let (n, nr) = blocks_settled(part);
            let (o, or) = oracle::blocks_settled(part);
            prop_assert_eq!((tuples(&n), nr), (tuples(&o), or), "settled {:?}", part);
        }
        for b in &new {
            prop_assert_eq!(Value::Object(attributes(b.attrs)), regex_attributes(b.attrs));
        }
    }

    /// The attribute scanner finds what the reference's regex finds on any text made of
    /// names, `=`, quotes and values.
    #[test]
    fn attributes_agree_with_the_regex(
        parts in prop::collection::vec(
            prop::sample::select(vec![
                " ", "a=", "b=", "=", "\"", "x", "ww", "\"x y\"", ">", "é", "\n", "_", "c=d",
            ]),
            0..24,
        ),
    ) {
        let text = parts.concat();
        prop_assert_eq!(Value::Object(attributes(&text)), regex_attributes(&text), "{:?}", text);
    }
}

/// Issue 13 item 1: `n` opening tags of distinct TYPEs, each one's attribute list
/// running through all the later ones, closed only after the last.
fn many_types(n: usize) -> String {
    let opens: String = (0..n).map(|i| format!("<!--@t{i} x=")).collect();
    let closes: String = (0..n).map(|i| format!("<!--@/t{i}-->")).collect();
    format!("{opens} {closes}")
}

/// Issue 13 item 1: linear work first at a size the old matcher still finishes (it
/// walked about n²/2 positions there), then at the issue's size (442 KB, 16,000 TYPEs:
/// 80 s and 11.3 GB before). No block matches: each list ends in `x=` with no value
/// and no `-->`.
#[test]
fn issue13_many_types_closed_later() {
    for n in [300, 16_000] {
        let text = many_types(n);
        let (found, frames) = blocks_counted(&text);
        assert!(found.is_empty());
        assert!(frames <= 2 * n + 8, "{n} types: {frames} positions walked");
        assert_eq!(blocks_settled(&text), (Vec::new(), None));
    }
    // The old matcher agrees where it still finishes quickly.
    let small = many_types(300);
    assert_eq!(
        tuples(&blocks(&small)),
        tuples(&oracle::blocks_counted(&small).0)
    );
    // A block after them is still found, whole.
    let text = many_types(16_000);
    assert_eq!(text.len(), 441_781);
    let text = format!("{text}<!-- @lesson t0=1 -->kept<!-- @/lesson -->");
    let (found, frames) = blocks_counted(&text);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].start, found[0].kind), (441_781, "lesson"));
    assert_eq!((found[0].attrs, found[0].content), (" t0=1", "kept"));
    assert!(frames <= 2 * 16_000 + 8, "{frames} positions walked");
}

/// The same shape where every opening tag does reach a `-->`, but only its own TYPE's
/// closing tag (written before it) could accept it: each walk's least end is recorded
/// once and every later TYPE passes it by.
#[test]
fn issue13_many_types_closed_before() {
    for n in [300, 16_000] {
        let closes: String = (0..n).map(|i| format!("<!--@/t{i}-->")).collect();
        let opens: String = (0..n).map(|i| format!("<!--@t{i} x=")).collect();
        let text = format!("{closes}{opens}1 -->c");
        let (found, frames) = blocks_counted(&text);
        assert!(found.is_empty());
        assert!(frames <= 2 * n + 8, "{n} types: {frames} positions walked");
    }
    let small: String = format!(
        "{}{}1 -->c<!--@/t7-->",
        (0..40)
            .map(|i| format!("<!--@/t{i}-->"))
            .collect::<String>(),
        (0..40).map(|i| format!("<!--@t{i} x=")).collect::<String>(),
    );
    let (new, old) = (blocks(&small), oracle::blocks_counted(&small).0);
    assert_eq!(tuples(&new), tuples(&old));
    // `t7` is the one TYPE closed after the `-->`: its block holds the later openings.
    assert_eq!(new.len(), 1);
    assert_eq!((new[0].kind, new[0].content), ("t7", "c"));
}

/// Issue 13 item 2: a `name=` with no value was retried one character at a time
/// (160 KB took 15.6 s); now each `=` is tried once: first at a size the old scanner
/// still finishes, then at the issue's size.
#[test]
fn issue13_attribute_rescan() {
    for w in [2_000, 400_000] {
        let text = format!(
            "<!-- @lesson a=\"x b=y\"{}= c=d -->c<!-- @/lesson -->",
            "w".repeat(w)
        );
        let found = blocks(&text);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].content, "c");
        let (attrs, tried) = attributes_counted(found[0].attrs);
        assert_eq!(Value::Object(attrs), json!({"a": "x b=y", "c": "d"}));
        assert!(tried <= 3, "{w}: {tried} starts tried");
        let m = crate::markers_in(&text);
        assert_eq!(
            m[0].1.to_python_json(),
            r#"{"type": "lesson", "attrs": {"a": "x b=y", "c": "d"}, "content": "c"}"#
        );
    }
    // The reference's regex agrees at a size it can take.
    let small = format!(" a=\"x b=y\"{}= c=d", "w".repeat(300));
    assert_eq!(Value::Object(attributes(&small)), regex_attributes(&small));
}
