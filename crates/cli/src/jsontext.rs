//! Editing JSON text in place, for `hook install`: a scanner that finds where each
//! value of a document stands (byte ranges), and splices that add or remove one member
//! or element and keep every other byte — numbers as written
//! (`123456789012345678901234567890`, `-0`), duplicate keys, key order, compact objects,
//! white space and line endings. A round trip through [`serde_json::Value`] keeps none
//! of these.
//!
//! The text must be JSON (the caller checks it with serde_json first); a key is
//! compared decoded, and where a key stands twice the last one counts, as it does for
//! the agents that read the file (JavaScript's `JSON.parse`) and for serde_json.

use std::ops::Range;

use serde_json::Value;

/// One value of the document and where it stands.
#[derive(Debug)]
pub struct Node {
    /// The value's bytes, from its first to its last character.
    pub span: Range<usize>,
    /// What it is.
    pub kind: Kind,
}

/// What a [`Node`] is.
#[derive(Debug)]
pub enum Kind {
    /// `{…}`: its members in order, repeated keys included.
    Object(Vec<Member>),
    /// `[…]`: its elements in order.
    Array(Vec<Node>),
    /// A string, number, `true`, `false` or `null`.
    Scalar,
}

/// One `"key": value` of an object.
#[derive(Debug)]
pub struct Member {
    /// The key, decoded.
    pub key: String,
    /// Where the key's opening quote stands.
    pub start: usize,
    /// Where the key's closing quote ends.
    pub key_end: usize,
    /// The value.
    pub value: Node,
}

impl Node {
    /// The last member named `key` and its place, when this is an object.
    pub fn member(&self, key: &str) -> Option<(usize, &Member)> {
        match &self.kind {
            Kind::Object(ms) => ms.iter().enumerate().rev().find(|(_, m)| m.key == key),
            _ => None,
        }
    }

    /// How many members or elements this object or array has.
    pub fn len(&self) -> usize {
        match &self.kind {
            Kind::Object(ms) => ms.len(),
            Kind::Array(es) => es.len(),
            Kind::Scalar => 0,
        }
    }

    /// The elements, when this is an array (else none).
    pub fn elements(&self) -> &[Node] {
        match &self.kind {
            Kind::Array(es) => es,
            _ => &[],
        }
    }

    /// The byte ranges of the items inside this object or array: a member from its
    /// key to the end of its value.
    fn items(&self) -> Vec<Range<usize>> {
        match &self.kind {
            Kind::Object(ms) => ms.iter().map(|m| m.start..m.value.span.end).collect(),
            Kind::Array(es) => es.iter().map(|e| e.span.clone()).collect(),
            Kind::Scalar => Vec::new(),
        }
    }
}

/// Scan `text`, a whole JSON document.
pub fn parse(text: &str) -> Result<Node, String> {
    let mut s = Scanner {
        text,
        b: text.as_bytes(),
        i: 0,
    };
    let node = s.value()?;
    s.ws();
    if s.i != s.b.len() {
        return Err(s.unexpected());
    }
    Ok(node)
}

struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self
            .b
            .get(self.i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
    }

    fn unexpected(&self) -> String {
        format!("unexpected JSON text at byte {}", self.i)
    }

    /// Skip `c` (after white space), or fail.
    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    /// Skip a string starting here; where it ends.
    fn string(&mut self) -> Result<usize, String> {
        if self.b.get(self.i) != Some(&b'"') {
            return Err(self.unexpected());
        }
        self.i += 1;
        loop {
            match self.b.get(self.i) {
                None => return Err(self.unexpected()),
                Some(b'\\') => self.i += 2,
                Some(b'"') => {
                    self.i += 1;
                    return Ok(self.i);
                }
                Some(_) => self.i += 1,
            }
        }
    }

    fn value(&mut self) -> Result<Node, String> {
        self.ws();
        let start = self.i;
        let kind = match self.b.get(self.i) {
            None => return Err(self.unexpected()),
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let key_start = self.i;
                        let key_end = self.string()?;
                        let key = serde_json::from_str(&self.text[key_start..key_end])
                            .map_err(|e| e.to_string())?;
                        self.expect(b':')?;
                        let value = self.value()?;
                        members.push(Member {
                            key,
                            start: key_start,
                            key_end,
                            value,
                        });
                        if self.close(b'}')? {
                            break;
                        }
                    }
                }
                Kind::Object(members)
            }
            Some(b'[') => {
                self.i += 1;
                let mut elements = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        elements.push(self.value()?);
                        if self.close(b']')? {
                            break;
                        }
                    }
                }
                Kind::Array(elements)
            }
            Some(b'"') => {
                self.string()?;
                Kind::Scalar
            }
            Some(_) => {
                while self.b.get(self.i).is_some_and(|c| {
                    !matches!(c, b',' | b']' | b'}' | b':' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    self.i += 1;
                }
                if self.i == start {
                    return Err(self.unexpected());
                }
                Kind::Scalar
            }
        };
        Ok(Node {
            span: start..self.i,
            kind,
        })
    }

    /// After an item: `,` (more follow: false) or `close` (the end: true).
    fn close(&mut self, close: u8) -> Result<bool, String> {
        self.ws();
        match self.b.get(self.i) {
            Some(b',') => {
                self.i += 1;
                Ok(false)
            }
            Some(&c) if c == close => {
                self.i += 1;
                Ok(true)
            }
            _ => Err(self.unexpected()),
        }
    }
}

/// How the document is laid out, learned from its text: what an inserted value copies.
#[derive(Debug, Clone)]
pub struct Style {
    /// One level of indentation (the first indented line's, else two spaces).
    unit: String,
    /// `\r\n` when the file uses it, else `\n`.
    newline: &'static str,
    /// Whether an empty object or array that gets an item is laid out on lines: the
    /// file is on more than one line, or is nothing but that empty value.
    lines: bool,
}

impl Style {
    /// The style of `text`.
    pub fn of(text: &str) -> Style {
        let unit = text
            .lines()
            .skip(1)
            .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
            .find(|w| !w.is_empty())
            .unwrap_or("  ")
            .to_owned();
        let t = text.trim();
        Style {
            unit,
            newline: if text.contains("\r\n") { "\r\n" } else { "\n" },
            lines: t.contains('\n') || t == "{}" || t == "[]",
        }
    }

    /// `value` rendered to stand at `indent` (on lines), or compact.
    fn render(&self, value: &Value, indent: Option<&str>) -> String {
        let Some(indent) = indent else {
            return value.to_string();
        };
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(self.unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        // A Value always serialises.
        let _ = serde::Serialize::serialize(value, &mut ser);
        String::from_utf8_lossy(&out).replace('\n', &format!("{}{indent}", self.newline))
    }
}

/// The white space a line starts with, for the line holding byte `at`.
fn line_indent(text: &str, at: usize) -> &str {
    let line = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let rest = &text[line..];
    &rest[..rest.len() - rest.trim_start_matches([' ', '\t']).len()]
}

/// `text` with `new` (an item's text, rendered by `render` for the indentation it will
/// stand at, `None` for compact) added as the last item of `container`, laid out as
/// the container's other items are (after the separator before its last item), or,
/// when it has none, as the file is.
fn append(
    text: &str,
    container: &Node,
    style: &Style,
    render: impl Fn(Option<&str>) -> String,
) -> String {
    let items = container.items();
    let open = container.span.start;
    let close = container.span.end - 1;
    let mut out = String::with_capacity(text.len() + 256);
    match items.last() {
        Some(last) => {
            let before = match items.len() {
                1 => open + 1,
                n => items[n - 2].end,
            };
            // The white space after the separator (or the bracket) before the last item.
            let between = &text[before..last.start];
            let gap = between.rfind(',').map_or(between, |c| &between[c + 1..]);
            let indent = gap.rfind('\n').map(|n| &gap[n + 1..]);
            out.push_str(&text[..last.end]);
            out.push(',');
            out.push_str(gap);
            out.push_str(&render(indent));
            out.push_str(&text[last.end..]);
        }
        None => {
            out.push_str(&text[..=open]);
            if style.lines {
                let outer = line_indent(text, open);
                let inner = format!("{outer}{}", style.unit);
                out.push_str(style.newline);
                out.push_str(&inner);
                out.push_str(&render(Some(&inner)));
                out.push_str(style.newline);
                out.push_str(outer);
            } else {
                out.push_str(&render(None));
            }
            out.push_str(&text[close..]);
        }
    }
    out
}

/// `text` with the member `key: value` added last in `object`.
pub fn append_member(text: &str, object: &Node, style: &Style, key: &str, value: &Value) -> String {
    // The `:` as the object's first member has it, else `": "` on lines, `":"` compact.
    let colon = match &object.kind {
        Kind::Object(ms) if !ms.is_empty() => {
            text[ms[0].key_end..ms[0].value.span.start].to_owned()
        }
        _ if style.lines => ": ".to_owned(),
        _ => ":".to_owned(),
    };
    let key = Value::from(key).to_string();
    append(text, object, style, |indent| {
        format!("{key}{colon}{}", style.render(value, indent))
    })
}

/// `text` with `value` added last in `array`.
pub fn append_element(text: &str, array: &Node, style: &Style, value: &Value) -> String {
    append(text, array, style, |indent| style.render(value, indent))
}

/// `text` without item `index` of `container` (an object's member or an array's
/// element) and the separator that joined it to its neighbour: the exact reverse of
/// [`append_member`] or [`append_element`].
pub fn remove(text: &str, container: &Node, index: usize) -> String {
    let items = container.items();
    let cut = match (items.len(), index) {
        (1, _) => container.span.start + 1..container.span.end - 1,
        (_, 0) => items[0].start..items[1].start,
        (_, i) => items[i - 1].end..items[i].end,
    };
    format!("{}{}", &text[..cut.start], &text[cut.end..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn top(text: &str) -> Node {
        parse(text).unwrap()
    }

    #[test]
    fn the_scanner_finds_each_value_and_keeps_repeated_keys() {
        let text = r#" {"a": 123456789012345678901234567890, "a":-0, "b" : [1, {"c":"x\"}"}] } "#;
        let n = top(text);
        let Kind::Object(ms) = &n.kind else { panic!() };
        assert_eq!(ms.len(), 3);
        assert_eq!(
            &text[ms[0].value.span.clone()],
            "123456789012345678901234567890"
        );
        assert_eq!(&text[n.member("a").unwrap().1.value.span.clone()], "-0");
        let b = &n.member("b").unwrap().1.value;
        let Kind::Array(es) = &b.kind else { panic!() };
        assert_eq!(&text[es[1].span.clone()], r#"{"c":"x\"}"}"#);
        assert!(parse("{} x").is_err());
        assert!(parse("[1,").is_err());
    }

    #[test]
    fn a_key_is_compared_decoded() {
        let n = top(r#"{"ho\u006fks": 1}"#);
        assert!(n.member("hooks").is_some());
    }

    /// Adding an item and removing it again gives back the text, byte for byte, in
    /// every layout: on lines (spaces, tabs, CRLF), compact, empty containers.
    #[test]
    fn append_then_remove_is_the_identity() {
        let v = json!({"hooks": [{"type": "command", "command": "t hook stop"}]});
        for text in [
            "{\n  \"a\": 1\n}\n",
            "{\n\t\"a\": [1,\n\t\t2]\n}",
            "{\r\n    \"a\": 1,\r\n    \"b\": 2\r\n}\r\n",
            r#"{"a":1,"b":{"c":-0}}"#,
            "{}",
            "{}\n",
        ] {
            let style = Style::of(text);
            let added = append_member(text, &top(text), &style, "new", &v);
            let n = top(&added);
            let new = &n.member("new").unwrap().1.value;
            let new: Value = serde_json::from_str(&added[new.span.clone()]).unwrap();
            assert_eq!(new, v, "{added}");
            let Kind::Object(ms) = &n.kind else { panic!() };
            let back = remove(&added, &n, ms.len() - 1);
            assert_eq!(back, text, "{added}");
        }
        let text = "[\n  1,\n  2\n]";
        let added = append_element(text, &top(text), &Style::of(text), &json!({"k": [1]}));
        assert_eq!(
            added,
            "[\n  1,\n  2,\n  {\n    \"k\": [\n      1\n    ]\n  }\n]"
        );
        assert_eq!(remove(&added, &top(&added), 2), text);
    }

    #[test]
    fn an_item_added_copies_its_neighbours_layout() {
        let text = "{\n    \"a\": {\n        \"x\": 1\n    }\n}\n";
        let n = top(text);
        let a = &n.member("a").unwrap().1.value;
        let added = append_member(text, a, &Style::of(text), "y", &json!([2]));
        assert_eq!(
            added,
            "{\n    \"a\": {\n        \"x\": 1,\n        \"y\": [\n            2\n        ]\n    }\n}\n"
        );
        let text = r#"{"a": {"x": 1}}"#;
        let n = top(text);
        let a = &n.member("a").unwrap().1.value;
        let added = append_member(text, a, &Style::of(text), "y", &json!([2, 3]));
        assert_eq!(added, r#"{"a": {"x": 1,"y": [2,3]}}"#);
        let text = r#"{"a": {"x": 1, "z": 0}}"#;
        let n = top(text);
        let a = &n.member("a").unwrap().1.value;
        let added = append_member(text, a, &Style::of(text), "y", &json!([2, 3]));
        assert_eq!(added, r#"{"a": {"x": 1, "z": 0, "y": [2,3]}}"#);
    }

    #[test]
    fn removing_the_first_item_keeps_what_follows() {
        let text = "[\n  1,\n  2\n]";
        assert_eq!(remove(text, &top(text), 0), "[\n  2\n]");
        assert_eq!(remove("[7]", &top("[7]"), 0), "[]");
    }
}
