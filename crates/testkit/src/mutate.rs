//! Lines changed a byte at a time: what an adapter's quick path (a walk that answers
//! only when certain) is checked against its full decode with.
//!
//! ```
//! use transcope_testkit::mutate::{edited, one_byte_changes};
//! // Every change of `[1]` to `x` or `]`, the "quick path" answering all but `[x]`.
//! let (answered, tried) = one_byte_changes(b"[1]", b"x]", |v| v != b"[x]");
//! assert_eq!((answered, tried), (5, 6));
//! assert_eq!(edited(b"abc", &[(1, b'x'), (5, b'y')]), b"axy");
//! ```

/// The bytes a change puts in: JSON's structure, string and escape characters, digits
/// and number parts, white space, a control character, a letter, DEL.
pub const BYTES: &[u8] = b"\"\\{}[],:0 u1e.-\x01a\x7f";

/// Put each of `bytes` at each position of `line` in turn and hand `check` the
/// changed line; `check` answers whether the quick path read it (asserting the
/// answer itself). Returns how many changed lines were read, and how many were tried.
pub fn one_byte_changes(
    line: &[u8],
    bytes: &[u8],
    mut check: impl FnMut(&[u8]) -> bool,
) -> (usize, usize) {
    let (mut answered, mut tried) = (0, 0);
    let mut v = line.to_vec();
    for at in 0..line.len() {
        for &byte in bytes {
            v[at] = byte;
            tried += 1;
            answered += usize::from(check(&v));
        }
        v[at] = line[at];
    }
    (answered, tried)
}

/// `line` with each `(at, byte)` of `edits` put in, in order (`at` taken modulo the
/// line's length).
pub fn edited(line: &[u8], edits: &[(usize, u8)]) -> Vec<u8> {
    let mut v = line.to_vec();
    for &(at, byte) in edits {
        let at = at % v.len();
        v[at] = byte;
    }
    v
}
