//! Reading a hook payload in bounded memory, whatever its size.
//!
//! A payload within [`MAX_PAYLOAD`] is parsed whole. A larger one (a huge
//! `last_assistant_message` or tool output) is not dropped: it is streamed once, each
//! JSON string cut at [`MAX_FIELD`] bytes on the way ([`CutStrings`], which keeps the
//! text valid JSON), and only its top-level scalar fields are kept — the ones that name
//! the session and its transcript. A field that was cut, a nested value, and fields past
//! [`MAX_KEPT`] are left out and counted ([`Oversize`]), so the Stop still records its
//! transitions and says what it did not read.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::rc::Rc;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use transcope_caller::HookInput;

/// The most a payload may hold to be parsed whole.
pub const MAX_PAYLOAD: u64 = 16 * 1024 * 1024;
/// The longest string (raw JSON bytes) kept from an oversized payload.
pub const MAX_FIELD: u64 = 64 * 1024;
/// The most top-level fields kept from an oversized payload.
pub const MAX_KEPT: usize = 64;

/// What an oversized payload lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Oversize {
    /// The payload's size in bytes.
    pub bytes: u64,
    /// Top-level fields left out (cut, nested, or past [`MAX_KEPT`]).
    pub left_out: u64,
}

impl Oversize {
    /// The hook summary's `payload` entry.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "bytes": self.bytes,
            "cap": MAX_PAYLOAD,
            "fields_left_out": self.left_out,
        })
    }
}

/// A read payload: the input, why it could not be read (if so), and what an oversized
/// one left out.
pub struct Payload {
    /// The parsed payload (empty when unreadable).
    pub input: HookInput,
    /// Why the payload could not be read or parsed.
    pub error: Option<String>,
    /// Set when the payload was over [`MAX_PAYLOAD`].
    pub oversize: Option<Oversize>,
}

/// Read a payload from `reader` (see the [module](self) documentation).
pub fn read(reader: impl Read) -> Payload {
    let mut buf = Vec::new();
    let mut reader = reader;
    if let Err(e) = (&mut reader).take(MAX_PAYLOAD + 1).read_to_end(&mut buf) {
        return failed(format!("reading the hook payload: {e}"));
    }
    if buf.len() as u64 <= MAX_PAYLOAD {
        let error = match serde_json::from_slice::<Value>(&buf) {
            Ok(Value::Object(_)) => None,
            Ok(_) => Some("hook payload is not a JSON object".to_owned()),
            Err(_) if buf.iter().all(u8::is_ascii_whitespace) => None,
            Err(e) => Some(format!("hook payload is not JSON: {e}")),
        };
        return Payload {
            input: HookInput::parse(&buf),
            error,
            oversize: None,
        };
    }
    oversized(io::Cursor::new(buf).chain(reader))
}

fn failed(error: String) -> Payload {
    Payload {
        input: HookInput::default(),
        error: Some(error),
        oversize: None,
    }
}

fn oversized(source: impl Read) -> Payload {
    let cut = CutStrings::new(BufReader::with_capacity(64 * 1024, source));
    let (cuts, bytes) = (cut.cuts.clone(), cut.bytes.clone());
    let mut de = serde_json::Deserializer::from_reader(cut);
    let kept = de
        .deserialize_map(TopLevel { cuts })
        .and_then(|kept| de.end().map(|()| kept));
    let bytes = bytes.get();
    match kept {
        Ok((fields, left_out)) => {
            let mut text = String::from("{");
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(&Value::String(k.clone()).to_string());
                text.push(':');
                text.push_str(&v.to_string());
            }
            text.push('}');
            Payload {
                input: HookInput::parse(text.as_bytes()),
                error: None,
                oversize: Some(Oversize { bytes, left_out }),
            }
        }
        Err(e) if e.is_io() => failed(format!("reading the hook payload: {e}")),
        Err(e) => Payload {
            oversize: Some(Oversize { bytes, left_out: 0 }),
            ..failed(format!(
                "hook payload is not JSON ({bytes} bytes, over the {MAX_PAYLOAD}-byte cap): {e}"
            ))
        },
    }
}

/// The top-level object: its scalar fields in order (duplicates kept, for the payload
/// parser's own rules), and how many were left out.
struct TopLevel {
    cuts: Rc<Cell<u64>>,
}

impl<'de> Visitor<'de> for TopLevel {
    type Value = (Vec<(String, Value)>, u64);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Vec::new();
        let mut left_out = 0u64;
        loop {
            let before = self.cuts.get();
            let Some(key) = map.next_key::<String>()? else {
                break;
            };
            let value = map.next_value::<Scalar>()?.0;
            match value {
                Some(v) if self.cuts.get() == before && fields.len() < MAX_KEPT => {
                    fields.push((key, v));
                }
                _ => left_out += 1,
            }
        }
        Ok((fields, left_out))
    }
}

/// A scalar value, or `None` for an object or array (read through, never held).
struct Scalar(Option<Value>);

impl<'de> de::Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar(Some(Value::Bool(v))))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar(Some(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar(Some(v.into())))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar(Some(v.into())))
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar(Some(Value::String(v.to_owned()))))
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar(Some(Value::Null)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar(None))
    }
}

/// A reader of JSON text that cuts every string literal after [`MAX_FIELD`] raw bytes
/// (at a character boundary, never inside an escape or a surrogate pair) and closes it,
/// so what it yields is valid JSON whenever its input is; `cuts` counts the strings
/// cut, `bytes` the input read.
struct CutStrings<R> {
    inner: R,
    state: State,
    /// Raw bytes of the current string so far.
    len: u64,
    /// `\uXXXX` hex digits still to come, and the escape's value so far.
    hex: (u8, u32),
    /// A high surrogate escape was the last thing written: its pair must follow.
    pair: bool,
    cuts: Rc<Cell<u64>>,
    bytes: Rc<Cell<u64>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Outside,
    Inside,
    /// Just after a `\` in a string.
    Escape,
}

impl<R: BufRead> CutStrings<R> {
    fn new(inner: R) -> Self {
        CutStrings {
            inner,
            state: State::Outside,
            len: 0,
            hex: (0, 0),
            pair: false,
            cuts: Rc::new(Cell::new(0)),
            bytes: Rc::new(Cell::new(0)),
        }
    }

    /// Read past the rest of a cut string, up to and including its closing quote.
    fn skip_string(&mut self) -> io::Result<()> {
        let mut escaped = false;
        loop {
            let chunk = self.inner.fill_buf()?;
            if chunk.is_empty() {
                return Ok(());
            }
            let mut used = 0;
            let mut closed = false;
            for &b in chunk {
                used += 1;
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    closed = true;
                    break;
                }
            }
            self.inner.consume(used);
            self.bytes.set(self.bytes.get() + used as u64);
            if closed {
                return Ok(());
            }
        }
    }

    /// The next byte to yield, or `None` at the end.
    fn next_byte(&mut self) -> io::Result<Option<u8>> {
        let Some(&b) = self.inner.fill_buf()?.first() else {
            return Ok(None);
        };
        match self.state {
            State::Outside => {
                if b == b'"' {
                    self.state = State::Inside;
                    self.len = 0;
                    self.pair = false;
                }
            }
            State::Escape => {
                self.state = State::Inside;
                if b == b'u' {
                    self.hex = (4, 0);
                }
            }
            State::Inside if self.hex.0 > 0 => {
                let digit = char::from(b).to_digit(16).unwrap_or(0);
                self.hex = (self.hex.0 - 1, self.hex.1 * 16 + digit);
                if self.hex.0 == 0 {
                    self.pair = (0xD800..0xDC00).contains(&self.hex.1);
                }
            }
            State::Inside => {
                let boundary = !self.pair && !(0x80..0xC0).contains(&b);
                if b == b'"' {
                    self.state = State::Outside;
                } else if boundary && self.len >= MAX_FIELD {
                    // Cut here: close the string and read past the rest of it.
                    self.cuts.set(self.cuts.get() + 1);
                    self.state = State::Outside;
                    self.skip_string()?;
                    return Ok(Some(b'"'));
                } else if b == b'\\' {
                    self.state = State::Escape;
                    self.pair = false;
                } else if !(0x80..0xC0).contains(&b) {
                    self.pair = false;
                }
            }
        }
        if matches!(self.state, State::Inside | State::Escape) {
            self.len += 1;
        }
        self.inner.consume(1);
        self.bytes.set(self.bytes.get() + 1);
        Ok(Some(b))
    }
}

impl<R: BufRead> Read for CutStrings<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < out.len() {
            match self.next_byte()? {
                Some(b) => {
                    out[n] = b;
                    n += 1;
                }
                None => break,
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> (String, u64) {
        let mut c = CutStrings::new(text.as_bytes());
        let cuts = c.cuts.clone();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        (out, cuts.get())
    }

    #[test]
    fn short_strings_pass_unchanged() {
        let t = r#"{"a":"x\"y\\","b":[1,"\ud83d\ude00"],"c":null}"#;
        assert_eq!(cut(t), (t.to_owned(), 0));
    }

    /// Long strings are cut to valid JSON whatever sits at the cut: escapes, a
    /// surrogate pair, multi-byte characters.
    #[test]
    fn long_strings_are_cut_to_valid_json() {
        let n = MAX_FIELD as usize;
        for fill in ["a", "\\\"", "\\ud83d\\ude00", "é", "😀", "\\u00e9"] {
            for shift in 0..7 {
                let s = format!("{}{}", "b".repeat(shift), fill.repeat(n));
                let text = format!(r#"{{"k":"{s}","after":"ok"}}"#);
                let (out, cuts) = cut(&text);
                assert_eq!(cuts, 1, "{fill} {shift}");
                let v: Value =
                    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{fill} {shift}: {e}"));
                assert_eq!(v["after"], "ok");
                assert!(out.len() < n + 64);
            }
        }
    }

    #[test]
    fn an_oversized_payload_keeps_its_identity_fields() {
        let body = serde_json::json!({
            "session_id": "s1",
            "last_assistant_message": "x".repeat(MAX_PAYLOAD as usize),
            "transcript_path": "/t.jsonl",
            "tool_input": {"a": ["y"]},
            "stop_hook_active": true,
        })
        .to_string();
        let p = read(body.as_bytes());
        assert!(p.error.is_none(), "{:?}", p.error);
        assert_eq!(p.input.session_id, "s1");
        assert_eq!(p.input.transcript_path, "/t.jsonl");
        assert!(p.input.stop_hook_active);
        assert!(p.input.last_assistant_message.is_empty());
        assert_eq!(
            p.oversize,
            Some(Oversize {
                bytes: body.len() as u64,
                left_out: 2
            })
        );
    }

    #[test]
    fn an_oversized_payload_that_is_not_json_is_an_error() {
        let body = format!(
            "{{\"session_id\":\"s1\",\"x\":\"{}",
            "x".repeat(MAX_PAYLOAD as usize)
        );
        let p = read(body.as_bytes());
        assert!(p.error.unwrap().contains("not JSON"));
        assert!(p.input.session_id.is_empty());
    }
}
