//! The attribute scanner against the reference's regex, and the input of issue 13 that
//! cost it the square of its size.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::{attributes, attributes_counted, blocks};

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
