//! Entries that outlive their line: a test and tooling convenience for any adapter.
//!
//! ```
//! use transcope_adapter_common::owned::owned_entry;
//! use transcope_core::Entry;
//! let line = String::from("/w");
//! let e = owned_entry(&Entry { cwd: Some(line.as_str().into()), ..Entry::default() });
//! drop(line);
//! assert_eq!(e.cwd.as_deref(), Some("/w"));
//! ```

use transcope_core::adapter::{Adapter, Skip};
use transcope_core::entry::{Entry, LinePos};

/// Collect the entries of one line as owned values (a test and tooling convenience).
pub fn decode_owned(
    adapter: &mut dyn Adapter,
    line: &[u8],
    pos: LinePos,
) -> Result<Vec<Entry<'static>>, Skip> {
    let mut out = Vec::new();
    adapter.decode(
        line,
        pos,
        &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| out.push(owned_entry(e))),
    )?;
    Ok(out)
}

/// Deep-copy an entry so it outlives its line ([`Entry::to_static`]).
pub fn owned_entry(e: &Entry<'_>) -> Entry<'static> {
    e.to_static()
}
