//! The message table of a JSONL session log: which message ids are current, and what
//! was last emitted for each.
//!
//! The CLI appends a message again (same `id`) whenever it changes it (tokens, tool
//! calls, a masked result), appends `{"$rewindTo": id}` to drop that message and every
//! later one, and may append `{"$set": {"messages": [...]}}` to replace the whole list
//! (FORMAT.md, "Reading a log"). [`Seen`] mirrors the CLI's own reader: an insertion-
//! ordered map from id to a fingerprint of the message's kind and marker text, so the
//! adapter can tell a first appearance and a changed text (emit) from a re-record that
//! changes nothing a marker scan sees (skip). The table outlives a read: it is part of
//! the adapter's checkpoint ([`Seen::entries`], [`Seen::from_entries`]), so its
//! fingerprints are stable across builds ([`fingerprint`]).
//!
//! ```
//! use transcope_adapter_gemini::log::{Change, Seen};
//! let mut seen = Seen::default();
//! assert_eq!(seen.record("a", 1), Change::New);
//! assert_eq!(seen.record("a", 1), Change::Same);
//! assert_eq!(seen.record("a", 2), Change::Revised);
//! seen.record("b", 3);
//! seen.rewind("a");
//! assert!(seen.is_empty());
//! ```

use indexmap::IndexMap;
use sha2::{Digest, Sha256};
use transcope_core::EntryKind;

/// What a message record is, relative to the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// An id not in the table (never seen, or dropped by a rewind or checkpoint).
    New,
    /// A known id whose kind or marker text differs from the last one recorded.
    Revised,
    /// A known id with the same kind and marker text.
    Same,
}

/// The current messages of one log, in the CLI's order.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    ids: IndexMap<String, u64>,
}

impl Seen {
    /// Record message `id` with `fingerprint` (see [`fingerprint`]); a known id keeps
    /// its place, as the CLI's `Map.set` does.
    pub fn record(&mut self, id: &str, fingerprint: u64) -> Change {
        match self.ids.get_mut(id) {
            Some(f) if *f == fingerprint => Change::Same,
            Some(f) => {
                *f = fingerprint;
                Change::Revised
            }
            None => {
                self.ids.insert(id.to_owned(), fingerprint);
                Change::New
            }
        }
    }

    /// The fingerprint recorded for `id`.
    pub fn get(&self, id: &str) -> Option<u64> {
        self.ids.get(id).copied()
    }

    /// `$rewindTo: id`: drop `id` and every message after it; an unknown id drops all
    /// (the CLI's reader does the same).
    pub fn rewind(&mut self, id: &str) {
        match self.ids.get_index_of(id) {
            Some(i) => self.ids.truncate(i),
            None => self.ids.clear(),
        }
    }

    /// `$set.messages`: the table becomes exactly `messages` (id, fingerprint), in
    /// order; returns each one's [`Change`] against the table before.
    pub fn checkpoint(&mut self, messages: &[(String, u64)]) -> Vec<Change> {
        let before = std::mem::take(&mut self.ids);
        messages
            .iter()
            .map(|(id, f)| {
                let change = match before.get(id) {
                    None => Change::New,
                    Some(old) if old == f => Change::Same,
                    Some(_) => Change::Revised,
                };
                self.ids.insert(id.clone(), *f);
                change
            })
            .collect()
    }

    /// No current message.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The number of current messages.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        self.ids.clear();
    }

    /// The current messages (id, fingerprint), in order: the table as a checkpoint
    /// holds it.
    pub fn entries(&self) -> impl Iterator<Item = (&str, u64)> {
        self.ids.iter().map(|(id, f)| (id.as_str(), *f))
    }

    /// The table holding exactly `entries` (id, fingerprint), in order (a later
    /// duplicate id keeps the first one's place, as [`Seen::record`] does).
    pub fn from_entries(entries: impl IntoIterator<Item = (String, u64)>) -> Seen {
        Seen {
            ids: entries.into_iter().collect(),
        }
    }
}

/// A fingerprint of what an entry of a message carries for the stages: its kind and
/// marker text (the first 64 bits of a SHA-256; collisions would only hide a
/// revision). Stable across builds and toolchains, as a checkpoint stored in a cursor
/// needs (`std`'s `DefaultHasher` promises no such thing).
/// Marks a fingerprint whose message's usage was handed on ([`judge`]).
pub const USAGE_BIT: u64 = 0x9e37_79b9_7f4a_7c15;

/// What a record of a message known as `before` gives, and the fingerprint to keep:
/// the same kind and text as before give nothing, unless the record is the first to
/// carry the message's usage (the CLI writes a message before its tokens are known),
/// which gives an entry with the usage alone; anything else a whole entry.
pub fn judge(before: Option<u64>, text_fp: u64, has_usage: bool) -> (Verdict, u64) {
    let full = if has_usage {
        text_fp ^ USAGE_BIT
    } else {
        text_fp
    };
    match before {
        Some(b) if b == text_fp ^ USAGE_BIT => (Verdict::Same, b),
        Some(b) if b == text_fp && has_usage => (Verdict::UsageOnly, full),
        Some(b) if b == text_fp => (Verdict::Same, b),
        _ => (Verdict::Emit, full),
    }
}

/// What [`judge`] says of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing new.
    Same,
    /// Only its usage is new.
    UsageOnly,
    /// New or revised: the whole entry.
    Emit,
}

/// A message's kind and text, hashed.
pub fn fingerprint(kind: EntryKind, text: Option<&str>) -> u64 {
    let mut h = Sha256::new();
    h.update(format!("{kind:?}").as_bytes());
    match text {
        None => h.update([0]),
        Some(t) => {
            h.update([1]);
            h.update(t.as_bytes());
        }
    }
    let d = h.finalize();
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewind_to_unknown_clears() {
        let mut s = Seen::default();
        s.record("a", 1);
        s.record("b", 1);
        s.rewind("b");
        assert_eq!(s.len(), 1);
        s.rewind("zz");
        assert!(s.is_empty());
    }

    #[test]
    fn checkpoint_reports_changes() {
        let mut s = Seen::default();
        s.record("a", 1);
        s.record("b", 2);
        let c = s.checkpoint(&[("a".into(), 1), ("b".into(), 3), ("c".into(), 4)]);
        assert_eq!(c, [Change::Same, Change::Revised, Change::New]);
        assert_eq!(s.len(), 3);
        assert_eq!(s.record("a", 1), Change::Same);
    }

    #[test]
    fn entries_round_trip_in_order() {
        let mut s = Seen::default();
        s.record("b", 2);
        s.record("a", 1);
        let back = Seen::from_entries(s.entries().map(|(id, f)| (id.to_owned(), f)));
        assert_eq!(back.entries().collect::<Vec<_>>(), [("b", 2), ("a", 1)]);
    }

    /// Pinned: a cursor written by one build is read by the next.
    #[test]
    fn fingerprints_are_stable() {
        assert_eq!(
            fingerprint(EntryKind::Assistant, Some("x")),
            fingerprint(EntryKind::Assistant, Some("x"))
        );
        assert_eq!(fingerprint(EntryKind::User, None), FINGERPRINT_USER_NONE);
    }

    /// `printf 'User\x00' | sha256sum`, its first 8 bytes big-endian.
    const FINGERPRINT_USER_NONE: u64 = 0xb240_10bd_b302_a53d;

    #[test]
    fn fingerprints_differ_by_kind_and_text() {
        let a = fingerprint(EntryKind::Assistant, Some("x"));
        assert_eq!(a, fingerprint(EntryKind::Assistant, Some("x")));
        assert_ne!(a, fingerprint(EntryKind::Assistant, Some("y")));
        assert_ne!(a, fingerprint(EntryKind::User, Some("x")));
        assert_ne!(
            fingerprint(EntryKind::Assistant, None),
            fingerprint(EntryKind::Assistant, Some(""))
        );
    }
}
