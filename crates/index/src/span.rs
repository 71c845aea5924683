//! A read's first and last recorded times, as the index keeps them.
//!
//! They are found in the bytes the engine reads as it frames them
//! (`transcope_core::times`, handed back in the read's `ScanReport::times`): no
//! transcript byte is read again for them, unless no line of a read's last 16 KiB
//! names a time (then its last 256 KiB are).

use crate::Stamp;

/// The first and last times of a read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// The first time found.
    pub first: Option<Stamp>,
    /// The last time found.
    pub last: Option<Stamp>,
}

impl Span {
    /// The span of the times a read found.
    pub fn of(times: &transcope_core::times::Times) -> Span {
        let stamp = |t: &Option<String>| t.as_deref().and_then(Stamp::parse);
        Span {
            first: stamp(&times.first),
            last: stamp(&times.last),
        }
    }
}
