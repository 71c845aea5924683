//! One of N shards of an archive: the sessions whose family's root hashes to it.
//!
//! N backfills of one archive, each with its own [`Shard`] `K/N` (0 ≤ K < N, as a
//! Kubernetes Indexed Job's completion index counts) and its own home, together write
//! what one backfill writes: every scope log is written by exactly one shard, byte for
//! byte the same. A file goes to the shard of its family's root session
//! ([`AdapterRegistry::root_of`]: a sub-agent's parent, a Codex fork's source, else its
//! own key), so a session, its sub-agents and its forks are read by one run.
//!
//! The hash is the first 8 bytes of the SHA-256 of the root key (UTF-8), as a
//! big-endian `u64`, modulo N: the same on every machine, build and Rust version.
//!
//! ```
//! use transcope_backfill::Shard;
//!
//! let shard: Shard = "1/3".parse().unwrap();
//! assert_eq!((shard.index, shard.count), (1, 3));
//! assert_eq!(Shard::of("0f0e0d0c-0000-4000-8000-000000000001", 3), 2);
//! assert!(shard.takes("ef958aa1-0e93-49f0-bb71-150f63befcd1"));
//! assert!("3/3".parse::<Shard>().is_err());
//! ```
//!
//! [`AdapterRegistry::root_of`]: transcope_core::adapter::AdapterRegistry::root_of

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// Shard `index` of `count`: the files whose family's root key hashes to `index`
/// ([`Shard::of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    /// K: which shard, from 0.
    pub index: u32,
    /// N: how many shards, at least 1.
    pub count: u32,
}

impl Shard {
    /// Shard `index` of `count`, when 0 ≤ `index` < `count`.
    pub fn new(index: u32, count: u32) -> Option<Shard> {
        (index < count).then_some(Shard { index, count })
    }

    /// The shard, of `count`, that the family whose root session has the scope-log key
    /// `root` goes to: the first 8 bytes of the key's SHA-256, big-endian, modulo
    /// `count` (0 when `count` is 0).
    pub fn of(root: &str, count: u32) -> u32 {
        let digest = Sha256::digest(root.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first)
            .checked_rem(u64::from(count))
            .map_or(0, |k| k as u32)
    }

    /// Whether this shard takes the family whose root key is `root`.
    pub fn takes(&self, root: &str) -> bool {
        Shard::of(root, self.count) == self.index
    }

    /// Whether it is the whole archive (`0/1`).
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why a text is not a shard `K/N` ([`Shard`]'s `FromStr`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseShardError {
    why: &'static str,
}

impl fmt::Display for ParseShardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (K/N with 0 ≤ K < N: shard K of N, counted from 0)",
            self.why
        )
    }
}

impl std::error::Error for ParseShardError {}

impl FromStr for Shard {
    type Err = ParseShardError;

    /// `K/N`, two decimal numbers (no sign, no spaces) with 0 ≤ K < N.
    fn from_str(s: &str) -> Result<Shard, ParseShardError> {
        let fail = |why| Err(ParseShardError { why });
        let Some((k, n)) = s.split_once('/') else {
            return fail("no '/'");
        };
        let number = |t: &str| {
            t.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| t.parse::<u32>().ok())
                .flatten()
        };
        let (Some(index), Some(count)) = (number(k), number(n)) else {
            return fail("K and N must be whole numbers below 2^32");
        };
        if count == 0 {
            return fail("N must be at least 1");
        }
        Shard::new(index, count).map_or_else(|| fail("K must be less than N"), Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash is a contract between machines: shards of one archive run by different
    /// builds must agree. These values were computed once (SHA-256's first 8 bytes,
    /// big-endian) and must never change.
    #[test]
    fn the_hash_of_fixed_keys_is_fixed() {
        let golden: &[(&str, u64)] = &[
            ("", 0xe3b0_c442_98fc_1c14),
            (
                "0f0e0d0c-0000-4000-8000-000000000001",
                0xcf85_3e03_0654_e17a,
            ),
            (
                "ef958aa1-0e93-49f0-bb71-150f63befcd1",
                0xe600_4ba8_0c01_144a,
            ),
            (
                "1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b",
                0x8f9c_63ab_0a0b_d35e,
            ),
        ];
        for (key, want) in golden {
            for count in [1, 2, 3, 4, 7, 1000] {
                assert_eq!(
                    u64::from(Shard::of(key, count)),
                    want % u64::from(count),
                    "{key:?} of {count}"
                );
            }
        }
        // Spelt out for three shards.
        assert_eq!(Shard::of("0f0e0d0c-0000-4000-8000-000000000001", 3), 2);
        assert_eq!(Shard::of("ef958aa1-0e93-49f0-bb71-150f63befcd1", 3), 1);
        assert_eq!(Shard::of("anything", 0), 0);
    }

    #[test]
    fn k_of_n_parses_with_0_le_k_lt_n() {
        assert_eq!("0/1".parse(), Ok(Shard { index: 0, count: 1 }));
        assert_eq!("3/4".parse(), Ok(Shard { index: 3, count: 4 }));
        assert_eq!(
            "0/4294967295".parse::<Shard>().map(|s| s.count),
            Ok(u32::MAX)
        );
        for (bad, why) in [
            ("4", "no '/'"),
            ("", "no '/'"),
            ("4/4", "K must be less than N"),
            ("5/4", "K must be less than N"),
            ("0/0", "N must be at least 1"),
            ("-1/4", "K and N must be whole numbers below 2^32"),
            ("+1/4", "K and N must be whole numbers below 2^32"),
            (" 1/4", "K and N must be whole numbers below 2^32"),
            ("1/4/5", "K and N must be whole numbers below 2^32"),
            ("1/", "K and N must be whole numbers below 2^32"),
            ("/4", "K and N must be whole numbers below 2^32"),
            ("0/4294967296", "K and N must be whole numbers below 2^32"),
            ("a/b", "K and N must be whole numbers below 2^32"),
        ] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{why} (K/N with 0 ≤ K < N: shard K of N, counted from 0)"),
                "{bad:?}"
            );
        }
        assert_eq!(Shard { index: 2, count: 3 }.to_string(), "2/3");
    }
}
