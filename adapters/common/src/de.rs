//! The tolerant serde toolkit: borrowing, last-key-wins decoding that never fails a
//! line over a field's JSON type.
//!
//! * [`CowStr`] borrows a string from the input when it holds no escapes.
//! * [`Loose`] accepts every JSON value and keeps it as Python sees it (truthiness,
//!   `str()`), so a `cwd: 5` or `gitBranch: null` never fails the line.
//! * [`FromMap`] decodes a struct one key at a time (plain assignment makes the
//!   **last** duplicate key win, as in Python's `json.loads`; serde's derived structs
//!   would reject the line instead); [`Obj`] is "this value when it is an object".
//! * [`FromShape`] is the one "any JSON value" visitor: a type names the shapes it
//!   models (string, array, object) and every other value is skipped without
//!   allocation. [`Obj`] and the adapters' content decoders are built on it.
//! * [`skip_value`], [`decode_obj`] and [`Checked`] are the small helpers around them.
//!
//! ```
//! use transcope_adapter_common::de::{skip_value, FromMap, Loose, Obj};
//! use serde::de::MapAccess;
//!
//! #[derive(Default)]
//! struct Cwd<'a>(Loose<'a>);
//! impl<'de> FromMap<'de> for Cwd<'de> {
//!     fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
//!         match key {
//!             "cwd" => self.0 = map.next_value()?,
//!             _ => skip_value(map)?,
//!         }
//!         Ok(())
//!     }
//! }
//! let o: Obj<Cwd<'_>> = serde_json::from_str(r#"{"cwd": "/a", "x": [1], "cwd": "/b"}"#).unwrap();
//! assert_eq!(o.0.unwrap().0.as_str(), Some("/b"));
//! let o: Obj<Cwd<'_>> = serde_json::from_str("[1, 2]").unwrap();
//! assert!(o.0.is_none());
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Number, Value};
use transcope_core::py;

/// A JSON string, borrowed from the input when it holds no escapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CowStr<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, decoded as loosely as Python sees it: scalars are kept (strings
/// borrowed where possible), containers are materialised only because they are rare
/// in the fields this type is used for and Python `str()` needs them.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Loose<'a> {
    /// The key is absent.
    #[default]
    Missing,
    /// JSON `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Num(Number),
    /// A string.
    Str(Cow<'a, str>),
    /// An array or an object.
    Complex(Value),
}

impl<'a> Loose<'a> {
    /// The string, when the value is a JSON string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Loose::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The string, when the value is a JSON string (consuming).
    pub fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            Loose::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the key was present at all (even as `null`).
    pub fn is_present(&self) -> bool {
        !matches!(self, Loose::Missing)
    }

    /// Python truthiness (`None`, `False`, `0`, `""`, `[]`, `{}` are false).
    pub fn truthy(&self) -> bool {
        match self {
            Loose::Missing | Loose::Null => false,
            Loose::Bool(b) => *b,
            Loose::Num(n) => py::truthy(&Value::Number(n.clone())),
            Loose::Str(s) => !s.is_empty(),
            Loose::Complex(v) => py::truthy(v),
        }
    }

    /// `str(value)` when the value is truthy, else `None` — the reference's
    /// `str(x or "")` with `""` mapped to `None`.
    pub fn py_str_if_truthy(self) -> Option<Cow<'a, str>> {
        if !self.truthy() {
            return None;
        }
        Some(match self {
            Loose::Str(s) => s,
            Loose::Bool(b) => Cow::Borrowed(if b { "True" } else { "False" }),
            Loose::Num(n) => Cow::Owned(py::str_of(&Value::Number(n))),
            Loose::Complex(v) => Cow::Owned(py::str_of(&v)),
            Loose::Missing | Loose::Null => return None,
        })
    }
}

impl<'de> Deserialize<'de> for Loose<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Loose::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Loose::Num(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Loose::Num(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Number::from_f64(v).map_or(Loose::Null, Loose::Num))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Loose::Null)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Loose::Null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(Loose::Complex)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(Loose::Complex)
            }
        }
        d.deserialize_any(V)
    }
}

/// A key a format does not read but still decodes as a [`Loose`] would, then drops:
/// the value must be decodable (strings valid Unicode, numbers in range) for the line
/// — or the object holding it — to decode, exactly as when the key is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checked;

/// Walked as a [`Loose`] (or a `serde_json::Value`) would be decoded — strings decoded,
/// numbers in range, nesting within the parser's limit — without building anything.
impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Checked;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_unit<E>(self) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_none<E>(self) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
                while seq.next_element::<Checked>()?.is_some() {}
                Ok(Checked)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
                while map.next_key::<Checked>()?.is_some() {
                    map.next_value::<Checked>()?;
                }
                Ok(Checked)
            }
        }
        d.deserialize_any(V)
    }
}

/// A struct decoded from the fields of a JSON object, one key at a time; the caller of
/// [`FromMap::field`] has already read the key and must consume exactly one value.
pub trait FromMap<'de>: Default {
    /// Consume the value of `key` (use `IgnoredAny` for keys the type does not model).
    /// Called again for a repeated key, so plain assignment makes the last one win.
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

/// A value decoded from whichever JSON shapes it models — a string, an array, an
/// object — and [`Default`] for every other value, which is skipped without
/// allocating. The one "any JSON value" visitor of the adapters: implement the shapes
/// you model and deserialize with [`deserialize_shape`].
pub trait FromShape<'de>: Default {
    /// Whether a string value is decoded ([`FromShape::from_str`]); when `false` a
    /// string is skipped without being copied.
    const STR: bool = false;

    /// A string value (only called when [`FromShape::STR`]).
    fn from_str(s: Cow<'de, str>) -> Self {
        let _ = s;
        Self::default()
    }

    /// An array value. The default skips it.
    fn from_seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| Self::default())
    }

    /// An object value. The default skips it.
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        IgnoredAny.visit_map(map).map(|_| Self::default())
    }
}

/// Deserialize any JSON value as a [`FromShape`] type.
pub fn deserialize_shape<'de, D: Deserializer<'de>, T: FromShape<'de>>(
    d: D,
) -> Result<T, D::Error> {
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: FromShape<'de>> Visitor<'de> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_unit<E>(self) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_none<E>(self) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<T, E> {
            Ok(if T::STR {
                T::from_str(Cow::Borrowed(v))
            } else {
                T::default()
            })
        }
        fn visit_str<E>(self, v: &str) -> Result<T, E> {
            Ok(if T::STR {
                T::from_str(Cow::Owned(v.to_owned()))
            } else {
                T::default()
            })
        }
        fn visit_string<E>(self, v: String) -> Result<T, E> {
            Ok(if T::STR {
                T::from_str(Cow::Owned(v))
            } else {
                T::default()
            })
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
            T::from_seq(seq)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::from_map(map)
        }
    }
    d.deserialize_any(V(std::marker::PhantomData))
}

/// `Some(T)` when the JSON value is an object, `None` for any other value (which is
/// skipped without allocating).
#[derive(Debug, Default)]
pub struct Obj<T>(pub Option<T>);

impl<'de, T: FromMap<'de>> FromShape<'de> for Obj<T> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut t = T::default();
        while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
            t.field(&key, &mut map)?;
        }
        Ok(Obj(Some(t)))
    }
}

impl<'de, T: FromMap<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_shape(d)
    }
}

/// Consume and drop the current value.
pub fn skip_value<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(|_| ())
}

/// `json` decoded as a derived `T` when it is an object: `None` for any other value
/// (a derived struct would also take an array, as a tuple) or when it does not decode.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct T { a: u8 }
/// use transcope_adapter_common::de::from_object;
/// assert_eq!(from_object::<T>(r#" {"a": 1}"#).map(|t| t.a), Some(1));
/// assert!(from_object::<T>("[1]").is_none());
/// ```
pub fn from_object<'a, T: Deserialize<'a>>(json: &'a str) -> Option<T> {
    if !json.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str(json).ok()
}

/// Decode `raw` as an object of type `T`: `None` when it is not an object or does not
/// decode (a lone surrogate in a string, say), so a broken nested value never costs
/// the line its top-level fields.
pub fn decode_obj<'a, T: FromMap<'a>>(raw: &'a RawValue) -> Option<T> {
    serde_json::from_str::<Obj<T>>(raw.get())
        .ok()
        .and_then(|o| o.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq)]
    enum Shape {
        #[default]
        Other,
        Str(String),
        Seq(usize),
    }

    impl<'de> FromShape<'de> for Shape {
        const STR: bool = true;
        fn from_str(s: Cow<'de, str>) -> Self {
            Shape::Str(s.into_owned())
        }
        fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
            let mut n = 0;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                n += 1;
            }
            Ok(Shape::Seq(n))
        }
    }

    fn shape(json: &str) -> Result<Shape, serde_json::Error> {
        let mut d = serde_json::Deserializer::from_str(json);
        deserialize_shape(&mut d)
    }

    #[test]
    fn shapes_decode_what_they_model_and_default_the_rest() {
        assert_eq!(shape(r#""a\u00e9""#).unwrap(), Shape::Str("aé".into()));
        assert_eq!(shape("[1, [2], {}]").unwrap(), Shape::Seq(3));
        for other in ["5", "-1", "1.5", "true", "null", r#"{"a": [1]}"#] {
            assert_eq!(shape(other).unwrap(), Shape::Other, "{other}");
        }
        // A string that cannot be decoded fails, as any decoded string does.
        assert!(shape(r#""\ud800""#).is_err());
    }

    #[test]
    fn checked_fails_where_loose_fails() {
        for (json, ok) in [
            ("5", true),
            (r#""s""#, true),
            (r#""\ud800""#, false),
            ("1e400", false),
            (r#"[{"a": "\udc00"}]"#, false),
        ] {
            assert_eq!(serde_json::from_str::<Checked>(json).is_ok(), ok, "{json}");
            assert_eq!(
                serde_json::from_str::<Loose<'_>>(json).is_ok(),
                ok,
                "{json}"
            );
        }
    }
}
