//! The session-id grammar: `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`, the whole id.
//!
//! A valid id is also a safe file-name component: no `/`, no `\`, no NUL, never `.` or
//! `..` (it starts with an alphanumeric), at most 128 bytes.
//!
//! ```
//! use transcope_core::session::is_valid_session_id;
//! assert!(is_valid_session_id("a.b_c-1"));
//! assert!(!is_valid_session_id("-lead"));
//! assert!(!is_valid_session_id("../escape"));
//! ```

/// Whether `id` matches the session-id grammar.
pub fn is_valid_session_id(id: &str) -> bool {
    let b = id.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && b[0].is_ascii_alphanumeric()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar_edges() {
        assert!(is_valid_session_id("a"));
        assert!(is_valid_session_id(&"a".repeat(128)));
        assert!(!is_valid_session_id(&"a".repeat(129)));
        assert!(!is_valid_session_id(""));
        assert!(!is_valid_session_id(".a"));
        assert!(!is_valid_session_id("a/b"));
        assert!(!is_valid_session_id("a\\b"));
        assert!(!is_valid_session_id("a\0"));
        assert!(!is_valid_session_id("é"));
        assert!(!is_valid_session_id("a b"));
    }
}
