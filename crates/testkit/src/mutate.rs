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

/// Every one-byte change (of `bytes`) of every line of `lines`: where `quick` answers,
/// its answer is `full`'s, and `also` holds of the line; and it answers more than one
/// changed line in `one_in` (most changes fall inside strings a walk skips).
pub fn quick_agrees_on_one_byte_changes<T: PartialEq + std::fmt::Debug>(
    lines: &[&str],
    bytes: &[u8],
    one_in: usize,
    quick: impl Fn(&[u8]) -> Option<T>,
    full: impl Fn(&[u8]) -> Option<T>,
    also: impl Fn(&[u8]),
) {
    for l in lines {
        let (answered, tried) = one_byte_changes(l.as_bytes(), bytes, |v| {
            let q = quick(v);
            let read = q.is_some();
            if read {
                assert_eq!(q, full(v), "{}", String::from_utf8_lossy(v));
                also(v);
            }
            read
        });
        assert!(
            answered * one_in > tried,
            "{answered} of {tried} answered: {l}"
        );
    }
}

/// `line` with `edits` put in: where `quick` answers, its answer is `full`'s (the
/// property a proptest of a quick path states; the error says the line and both).
pub fn quick_agrees_when_edited<T: PartialEq + std::fmt::Debug>(
    line: &str,
    edits: &[(usize, u8)],
    quick: impl Fn(&[u8]) -> Option<T>,
    full: impl Fn(&[u8]) -> Option<T>,
) -> Result<(), String> {
    let v = edited(line.as_bytes(), edits);
    match quick(&v) {
        Some(q) if Some(&q) != full(&v).as_ref() => Err(format!(
            "{}: quick {q:?}, full {:?}",
            String::from_utf8_lossy(&v),
            full(&v)
        )),
        _ => Ok(()),
    }
}

/// Where a quick path's test lines are said to be (not the first line: a file's first
/// line is read in full).
pub const POS: transcope_core::LinePos = transcope_core::LinePos {
    offset: 100,
    line: 3,
};

/// A quick path's tests against its full decode, in the calling test module (which
/// depends on `proptest`): `common_shapes_read_as_the_full_decode_reads_them` (each
/// line read, as the full decode reads it), `every_one_byte_change`
/// ([`quick_agrees_on_one_byte_changes`], more than one answer in `one_in`) and the
/// property `an_answer_is_the_full_decodes` (one to three random edits, of `bytes`).
/// `quick` and `full` read a line at [`POS`]; `also` is asserted of each line `quick`
/// reads.
#[macro_export]
macro_rules! quick_path_tests {
    (lines: $lines:expr, bytes: $bytes:expr, one_in: $one_in:expr,
     quick: $quick:expr, full: $full:expr, also: $also:expr $(,)?) => {
        /// Every line as it is: the walk answers, and its answer is the full decode's.
        #[test]
        fn common_shapes_read_as_the_full_decode_reads_them() {
            for l in $lines {
                let q = $quick(l.as_bytes(), $crate::mutate::POS);
                assert!(q.is_some(), "{l}");
                assert_eq!(q, $full(l.as_bytes(), $crate::mutate::POS), "{l}");
            }
        }

        /// Every one-byte change of every line: each answer is the full decode's, and
        /// most changes (inside strings the walk skips) still get one.
        #[test]
        fn every_one_byte_change() {
            $crate::mutate::quick_agrees_on_one_byte_changes(
                &$lines,
                $bytes,
                $one_in,
                |v: &[u8]| $quick(v, $crate::mutate::POS),
                |v: &[u8]| $full(v, $crate::mutate::POS),
                $also,
            );
        }

        proptest::proptest! {
            /// Any answer the walk gives is the full decode's, whatever a line's bytes.
            #[test]
            fn an_answer_is_the_full_decodes(
                which in 0..$lines.len(),
                edits in proptest::collection::vec(
                    (0usize..1000, proptest::sample::select($bytes.to_vec())),
                    1..4,
                ),
            ) {
                $crate::mutate::quick_agrees_when_edited(
                    $lines[which],
                    &edits,
                    |v: &[u8]| $quick(v, $crate::mutate::POS),
                    |v: &[u8]| $full(v, $crate::mutate::POS),
                )
                .map_err(proptest::test_runner::TestCaseError::fail)?;
            }
        }
    };
}
