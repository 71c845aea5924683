//! Telling a Claude line's kind, folder and branch without decoding it.
//!
//! Most of a transcript's bytes are tool output in lines no stage needs: a `user` line
//! in the same folder and branch as the one before changes no scope and holds no
//! marker text. [`probe`] reads the top-level `type`, `cwd` and `gitBranch` of a line
//! with the SIMD scan of [`transcope_adapter_common::probe`] and names the entry by
//! Claude's vocabulary ([`crate::record::kind`]); the adapter asks its sink whether
//! such an entry could matter ([`EntrySink::wants`]) before decoding.
//!
//! It answers only when it is certain of the answer the full decode would give *if
//! the line is valid* (an invalid line is skipped by the full decode, which is what a
//! sink that does not want the entry does too), and `None` — decode normally — for a
//! `turn_context` (its folder is in `payload.cwd`) and for anything the scan is unsure
//! of.
//!
//! ```
//! use transcope_adapter_claude::probe::probe;
//! let searched = Default::default();
//! let p = probe(br#"{"type":"user","cwd":"/w","gitBranch":"main","message":{"content":"x"}}"#, &searched).unwrap();
//! assert_eq!((p.kind, p.cwd, p.branch, p.text), (Some(transcope_core::EntryKind::User), Some("/w"), Some("main"), false));
//! assert!(probe(br#"{"type":"turn_context","payload":{"cwd":"/w"}}"#, &searched).is_none());
//! ```
//!
//! [`EntrySink::wants`]: transcope_core::adapter::EntrySink::wants

use transcope_adapter_common::probe::fields;
use transcope_core::adapter::Probe;

use crate::record;

/// The kind, folder and branch of a Claude line, when certain (see the module doc);
/// `searched` holds the line's marker search ([`Probe::searched`]).
pub fn probe<'a>(line: &'a [u8], searched: &'a std::cell::OnceCell<bool>) -> Option<Probe<'a>> {
    let f = fields(line)?;
    let kind = match f.ty()? {
        // A turn_context record takes its folder from `payload.cwd`: decode it.
        "turn_context" => return None,
        // An unknown type is decoded as `Other` (or nothing, which no sink wants either).
        t => record::kind(t).unwrap_or(transcope_core::EntryKind::Other),
    };
    let (cwd, branch) = f.folder_and_branch()?;
    let text = kind == transcope_core::EntryKind::Assistant;
    Some(Probe {
        kind: Some(kind),
        cwd,
        branch,
        text,
        usage: text,
        line,
        searched,
    })
}
