//! Lowercase hex digests: the one rendering of a SHA-256 the formats and files use
//! (`transition_id`, cursor fingerprints, Gemini CLI's project hash).
//!
//! ```
//! use transcope_core::digest::{hex, sha256_hex};
//! assert_eq!(hex(&[0x0f, 0xa0]), "0fa0");
//! assert_eq!(&sha256_hex(b"")[..8], "e3b0c442");
//! ```

use sha2::{Digest, Sha256};

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// The bytes of a hex string ([`hex`]'s inverse; either case); `None` when it is not
/// one.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    let t = text.as_bytes();
    if !t.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    t.chunks_exact(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// A model request's key as an index stores it: the first 16 bytes of the SHA-256 of
/// its text key — the concatenation of `pieces`, such as `claude`, `:`, the message
/// id, `:`, the request id — read as one big-endian number. Hashed piece by piece: the
/// text is never built.
///
/// ```
/// use transcope_core::digest::request_key;
/// assert_eq!(request_key(&["claude", ":", "m1", ":", "r1"]), request_key(&["claude:m1:r1"]));
/// ```
pub fn request_key(pieces: &[&str]) -> u128 {
    let mut h = Sha256::new();
    for p in pieces {
        h.update(p.as_bytes());
    }
    let d = h.finalize();
    let mut k = [0u8; 16];
    k.copy_from_slice(&d[..16]);
    u128::from_be_bytes(k)
}
