//! Reading a file's head for a layout's scope key: only as far as the line that
//! answers, never past a limit.
//!
//! The key of a transcript is on its first line (or, for a flat Claude sub-agent, on
//! an early one), and reading the whole head of every file was a second pass over
//! most of a corpus; [`find_line`] stops at the first line that answers.
//!
//! ```
//! use transcope_adapter_common::head::find_line;
//!
//! let path = std::env::temp_dir().join(format!("tc-head-doc-{}.jsonl", std::process::id()));
//! std::fs::write(&path, b"a\nbb\nccc\n").unwrap();
//! let long = |l: &[u8]| (l.len() > 1).then(|| l.to_vec());
//! assert_eq!(find_line(&path, 1024, long).as_deref(), Some(&b"bb"[..]));
//! // Nothing past the limit is read: "b" (cut short) is the last line seen.
//! assert_eq!(find_line(&path, 3, long), None);
//! std::fs::remove_file(&path).unwrap();
//! ```

use std::path::Path;

pub use transcope_core::head::Head;

use transcope_core::session::is_valid_session_id;

/// The first `Some` that `f` gives for the lines (without their `\n`; the last may be
/// cut short) of the file's first `limit` bytes, read only as far as the line that
/// answers ([`Head::find_line`] of a head of its own).
pub fn find_line<T>(path: &Path, limit: u64, f: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
    Head::new(path).find_line(limit, f)
}

/// `key` when it is a valid scope-log key
/// ([`transcope_core::session::is_valid_session_id`]), else why not.
pub fn checked_key(key: String) -> Result<String, String> {
    if is_valid_session_id(&key) {
        Ok(key)
    } else {
        Err(format!("{key:?} is not a valid scope-log key"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_against_the_scope_log_grammar() {
        assert_eq!(checked_key("abc-1.x".into()), Ok("abc-1.x".into()));
        assert_eq!(
            checked_key("a/b".into()),
            Err(r#""a/b" is not a valid scope-log key"#.into())
        );
    }
}
