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

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}
