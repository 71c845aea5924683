//! Parsers of argument values several commands share.

/// A time filter: what `scope at --at` accepts (no offset: UTC).
pub(crate) fn time_arg(s: &str) -> Result<i64, String> {
    transcope_core::timestamp::parse(s)
        .map(|t| t.unix_micros())
        .ok_or_else(|| "not a time (e.g. 2026-10-08 or 2026-10-08T10:00:00+02:00)".to_owned())
}
