//! Token usage read by the shape its agent's adapter declares.
//!
//! An adapter declares which field of its usage object holds which count, and which
//! counts include others, as a [`TokenShape`] (`transcope_core::agent`), and names it
//! by a type implementing [`Shape`]. This module reads a usage object by that shape —
//! through serde ([`Counted`], a [`FromMap`]) or, on an adapter's quick path, with the
//! [`Walk`] ([`walk_counts`]) — and [`TokenShape::tokens`] turns the counts into
//! transcope's columns. No agent is named here.
//!
//! A count that is not a non-negative integer counts 0; the record is never refused
//! for it.
//!
//! ```
//! use transcope_adapter_common::de::decode_obj;
//! use transcope_adapter_common::usage::{Counted, Shape};
//! use transcope_core::agent::TokenShape;
//!
//! struct Toy;
//! impl Shape for Toy {
//!     const TOKENS: TokenShape = TokenShape {
//!         cache_read: Some("cached"),
//!         input_includes_cache_read: true,
//!         ..TokenShape::new("in", "out")
//!     };
//! }
//! let raw: &serde_json::value::RawValue =
//!     serde_json::from_str(r#"{"in": 10, "cached": 4, "out": "x", "other": [1]}"#).unwrap();
//! let t = decode_obj::<Counted<Toy>>(raw).unwrap().tokens();
//! assert_eq!((t.input, t.cache_read, t.output), (6, 4, 0));
//! ```

use std::marker::PhantomData;

use serde::de::MapAccess;
use transcope_core::agent::{TokenCounts, TokenRole, TokenShape};
use transcope_core::Tokens;

use crate::de::{skip_value, FromMap, Loose, Obj};
use crate::quick::once;
use crate::walk::Walk;

/// A type naming an agent's [`TokenShape`] (its adapter's declaration), so a usage
/// object can be read by it where a reader is built by [`Default`].
pub trait Shape {
    /// The shape.
    const TOKENS: TokenShape;
}

/// A count: a non-negative integer, else 0.
fn count<'de, A: MapAccess<'de>>(map: &mut A) -> Result<u64, A::Error> {
    Ok(match map.next_value::<Loose<'de>>()? {
        Loose::Num(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .unwrap_or(0),
        _ => 0,
    })
}

/// A usage object's counts, read by the shape `S` names.
pub struct Counted<S> {
    counts: TokenCounts,
    shape: PhantomData<S>,
}

impl<S> std::fmt::Debug for Counted<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Counted").field(&self.counts).finish()
    }
}

impl<S> Default for Counted<S> {
    fn default() -> Self {
        Counted::new(TokenCounts::default())
    }
}

impl<S> Counted<S> {
    /// The usage of these counts (what a reader other than serde found).
    pub fn new(counts: TokenCounts) -> Counted<S> {
        Counted {
            counts,
            shape: PhantomData,
        }
    }
}

impl<S> Counted<S> {
    /// The counts as read, to turn into columns by another shape of the same fields.
    pub fn counts(&self) -> &TokenCounts {
        &self.counts
    }
}

impl<S: Shape> Counted<S> {
    /// transcope's columns of the counts.
    pub fn tokens(&self) -> Tokens {
        S::TOKENS.tokens(&self.counts)
    }
}

/// The object of [`TokenShape::cache_creation_1h`]: the split of the cache writes by
/// lifetime, of which the hour's part is read.
struct Split<S>(u64, PhantomData<S>);

impl<S> Default for Split<S> {
    fn default() -> Self {
        Split(0, PhantomData)
    }
}

impl<'de, S: Shape> FromMap<'de> for Split<S> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if S::TOKENS.is_split_field(key) {
            self.0 = count(map)?;
        } else {
            skip_value(map)?;
        }
        Ok(())
    }
}

impl<'de, S: Shape> FromMap<'de> for Counted<S> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match S::TOKENS.role(key) {
            Some(TokenRole::CacheSplit) => {
                self.counts.cache_creation_1h =
                    map.next_value::<Obj<Split<S>>>()?.0.map_or(0, |s| s.0)
            }
            Some(role) => self.counts.set(role, count(map)?),
            None => skip_value(map)?,
        }
        Ok(())
    }
}

/// The usage object at `at` read by `shape` with the walk, and one past it: `None` —
/// decode in full — unless every count is a plain unsigned integer given once (and the
/// split, when the shape has one, an object whose hour's field is given at most once).
pub fn walk_counts(w: &Walk<'_>, at: usize, shape: &TokenShape) -> Option<(TokenCounts, usize)> {
    let mut c = TokenCounts::default();
    let mut seen = 0u32;
    let end = w.object(at, |key, v| {
        let Some(role) = shape.role(key) else {
            return w.skip(v);
        };
        once(&mut seen, role as u32)?;
        if role == TokenRole::CacheSplit {
            let mut inner = 0u32;
            let mut hour = 0u64;
            let e = w.object(v, |k, v| {
                if !shape.is_split_field(k) {
                    return w.skip(v);
                }
                once(&mut inner, 0)?;
                let (n, e) = w.uint(v)?;
                hour = n;
                Some(e)
            })?;
            c.cache_creation_1h = hour;
            return Some(e);
        }
        let (n, e) = w.uint(v)?;
        c.set(role, n);
        Some(e)
    })?;
    Some((c, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::de::decode_obj;

    struct Split1h;
    impl Shape for Split1h {
        const TOKENS: TokenShape = TokenShape {
            cache_creation: Some("cache_creation_input_tokens"),
            cache_creation_1h: Some(("cache_creation", "ephemeral_1h_input_tokens")),
            cache_read: Some("cache_read_input_tokens"),
            ..TokenShape::new("input_tokens", "output_tokens")
        };
    }

    struct Included;
    impl Shape for Included {
        const TOKENS: TokenShape = TokenShape {
            cache_read: Some("cached_input_tokens"),
            reasoning: Some("reasoning_output_tokens"),
            input_includes_cache_read: true,
            ..TokenShape::new("input_tokens", "output_tokens")
        };
    }

    fn both<S: Shape>(json: &str) -> Tokens {
        let raw: &serde_json::value::RawValue = serde_json::from_str(json).unwrap();
        let serde = decode_obj::<Counted<S>>(raw).unwrap().tokens();
        if let Some((c, end)) = walk_counts(&Walk::new(json), 0, &S::TOKENS) {
            assert_eq!(end, json.len());
            assert_eq!(S::TOKENS.tokens(&c), serde, "the walk and serde disagree");
        }
        serde
    }

    #[test]
    fn usage_with_and_without_the_split() {
        let t = both::<Split1h>(
            r#"{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":7,"cache_creation":{"ephemeral_5m_input_tokens":60,"ephemeral_1h_input_tokens":40},"output_tokens":5,"service_tier":"standard"}"#,
        );
        assert_eq!(
            (
                t.input,
                t.output,
                t.cache_creation,
                t.cache_creation_1h,
                t.cache_read
            ),
            (3, 5, 100, 40, 7)
        );
        assert_eq!(t.total(), 115);
        let t = both::<Split1h>(
            r#"{"input_tokens":"x","output_tokens":-1,"cache_read_input_tokens":2.0}"#,
        );
        assert_eq!((t.input, t.output, t.cache_read), (0, 0, 2));
    }

    #[test]
    fn cached_tokens_leave_the_input() {
        let t = both::<Included>(
            r#"{"input_tokens":200,"cached_input_tokens":100,"output_tokens":100,"reasoning_output_tokens":50,"total_tokens":300}"#,
        );
        assert_eq!(
            (
                t.input,
                t.cache_read,
                t.output,
                t.reasoning_output,
                t.total()
            ),
            (100, 100, 100, 50, 300)
        );
    }

    #[test]
    fn the_walk_leaves_a_repeated_count_to_serde() {
        let json = r#"{"input_tokens":1,"input_tokens":2}"#;
        assert!(walk_counts(&Walk::new(json), 0, &Included::TOKENS).is_none());
        assert_eq!(both::<Included>(json).input, 2, "the last wins");
    }
}
