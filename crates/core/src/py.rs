//! Python-compatible renderings the reference implementation's on-disk formats depend on.
//!
//! The scope log is written by Python's `json.dumps` with default settings, and scope
//! values are normalised with Python truthiness and `str()`. This module reproduces
//! exactly those three things for JSON values:
//!
//! * [`dumps`] / [`write_value`]: `json.dumps(v)` (separators `", "` and `": "`,
//!   `ensure_ascii`, optional `indent` and `sort_keys`);
//! * [`truthy`]: Python truthiness of the decoded value;
//! * [`str_of`]: Python `str()` of the decoded value (`3` → `"3"`, `true` → `"True"`,
//!   `1e16` → `"1e+16"`, `[1, "a"]` → `"[1, 'a']"`).
//!
//! ```
//! use transcope_core::py;
//! assert_eq!(py::dumps_str("café 😀"), r#""caf\u00e9 \ud83d\ude00""#);
//! let v: serde_json::Value = serde_json::from_str(r#"{"a": [1, 2.5, true, null]}"#).unwrap();
//! assert_eq!(py::dumps(&v), r#"{"a": [1, 2.5, true, null]}"#);
//! assert_eq!(py::str_of(&serde_json::json!(true)), "True");
//! ```

use serde_json::{Map, Number, Value};

/// Formatting options matching `json.dumps` keyword arguments.
#[derive(Clone, Copy, Debug, Default)]
pub struct DumpOptions {
    /// `indent=N`; `None` is the one-line default.
    pub indent: Option<usize>,
    /// `sort_keys=True` (keys sorted by code point).
    pub sort_keys: bool,
}

/// `json.dumps(v)` with default settings.
pub fn dumps(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, DumpOptions::default());
    out
}

/// `json.dumps(s)` for one string.
pub fn dumps_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_str(&mut out, s);
    out
}

/// Append `json.dumps(v, indent=…, sort_keys=…)` to `out`.
pub fn write_value(out: &mut String, v: &Value, opts: DumpOptions) {
    write_at(out, v, opts, 0);
}

fn newline(out: &mut String, indent: usize, level: usize) {
    out.push('\n');
    for _ in 0..indent * level {
        out.push(' ');
    }
}

fn write_at(out: &mut String, v: &Value, opts: DumpOptions, level: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n, true),
        Value::String(s) => write_str(out, s),
        Value::Array(a) => {
            if a.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                item_sep(out, opts, level, i);
                write_at(out, x, opts, level + 1);
            }
            if let Some(ind) = opts.indent {
                newline(out, ind, level);
            }
            out.push(']');
        }
        Value::Object(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            if opts.sort_keys {
                entries.sort_by(|a, b| cmp_code_points(a.0, b.0));
            }
            for (i, (k, x)) in entries.into_iter().enumerate() {
                item_sep(out, opts, level, i);
                write_str(out, k);
                out.push_str(": ");
                write_at(out, x, opts, level + 1);
            }
            if let Some(ind) = opts.indent {
                newline(out, ind, level);
            }
            out.push('}');
        }
    }
}

fn item_sep(out: &mut String, opts: DumpOptions, level: usize, i: usize) {
    match opts.indent {
        Some(ind) => {
            if i > 0 {
                out.push(',');
            }
            newline(out, ind, level + 1);
        }
        None => {
            if i > 0 {
                out.push_str(", ");
            }
        }
    }
}

/// Order strings by Unicode code point, as Python sorts `str` keys.
/// (UTF-8 byte order is code-point order.)
pub fn cmp_code_points(a: &str, b: &str) -> std::cmp::Ordering {
    a.as_bytes().cmp(b.as_bytes())
}

/// Append `s` as a JSON string with Python's `ensure_ascii` escaping.
pub fn write_str(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(ch),
            _ => {
                let mut buf = [0u16; 2];
                for unit in ch.encode_utf16(&mut buf) {
                    out.push_str("\\u");
                    for shift in [12, 8, 4, 0] {
                        out.push(HEX[((*unit >> shift) & 0xf) as usize] as char);
                    }
                }
            }
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, n: &Number, json: bool) {
    if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(u) = n.as_u64() {
        out.push_str(&u.to_string());
    } else if let Some(f) = n.as_f64() {
        out.push_str(&float_repr(f, json));
    }
}

/// Python `repr(float)` (`json` spells the non-finite values `NaN`/`Infinity`).
pub fn float_repr(f: f64, json: bool) -> String {
    if f.is_nan() {
        return if json { "NaN".into() } else { "nan".into() };
    }
    if f.is_infinite() {
        let s = if json { "Infinity" } else { "inf" };
        return if f < 0.0 { format!("-{s}") } else { s.into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Shortest round-trip digits from Rust's `{:e}` ("d.ddde±x"), laid out as Python does.
    let sci = format!("{:e}", f.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let decpt = exp + 1; // position of the decimal point relative to the digits
    let mut s = String::new();
    if f < 0.0 {
        s.push('-');
    }
    if (-4 < decpt) && (decpt <= 16) {
        if decpt <= 0 {
            s.push_str("0.");
            for _ in 0..(-decpt) {
                s.push('0');
            }
            s.push_str(&digits);
        } else {
            let d = decpt as usize;
            if digits.len() <= d {
                s.push_str(&digits);
                for _ in digits.len()..d {
                    s.push('0');
                }
                s.push_str(".0");
            } else {
                s.push_str(&digits[..d]);
                s.push('.');
                s.push_str(&digits[d..]);
            }
        }
    } else {
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        s.push('e');
        s.push(if e < 0 { '-' } else { '+' });
        s.push_str(&format!("{:02}", e.abs()));
    }
    s
}

/// Python truthiness of a decoded JSON value.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i != 0
            } else if let Some(u) = n.as_u64() {
                u != 0
            } else {
                n.as_f64().is_some_and(|f| f != 0.0)
            }
        }
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

/// Python `str()` of a decoded JSON value.
pub fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => repr(other),
    }
}

/// Python `repr()` of a decoded JSON value.
pub fn repr(v: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, v);
    out
}

fn write_repr(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => write_number(out, n, false),
        Value::String(s) => write_str_repr(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => write_dict_repr(out, m),
    }
}

fn write_dict_repr(out: &mut String, m: &Map<String, Value>) {
    out.push('{');
    for (i, (k, x)) in m.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_str_repr(out, k);
        out.push_str(": ");
        write_repr(out, x);
    }
    out.push('}');
}

/// Python `repr(str)`: single quotes unless the text holds `'` and no `"`; ASCII
/// controls as `\xNN`. Non-ASCII characters are kept as they are (Python escapes the
/// non-printable ones; this port keeps them, a documented difference).
fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_repr_matches_python_layout() {
        for (f, want) in [
            (1.0, "1.0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (123456789.125, "123456789.125"),
            (-2.5e100, "-2.5e+100"),
            (-0.0, "-0.0"),
        ] {
            assert_eq!(float_repr(f, false), want, "{f}");
        }
    }

    #[test]
    fn str_of_matches_python_str() {
        assert_eq!(str_of(&json!(3)), "3");
        assert_eq!(str_of(&json!(-3)), "-3");
        assert_eq!(str_of(&json!(true)), "True");
        assert_eq!(str_of(&json!("x")), "x");
        assert_eq!(str_of(&json!([1, "a", null])), "[1, 'a', None]");
        assert_eq!(str_of(&json!({"k": "it's"})), "{'k': \"it's\"}");
    }

    #[test]
    fn dumps_indent_matches_python() {
        let v = json!({"a": [1, {}], "b": {"c": []}});
        let mut s = String::new();
        write_value(
            &mut s,
            &v,
            DumpOptions {
                indent: Some(2),
                sort_keys: false,
            },
        );
        assert_eq!(
            s,
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": {\n    \"c\": []\n  }\n}"
        );
    }
}
