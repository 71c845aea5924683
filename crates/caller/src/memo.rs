//! The per-process memos sloprail keeps (relocations, workspace anchors, stable identities):
//! a map shared by every thread, which a panic elsewhere never makes unusable.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// A map remembered for the life of the process; usable as a `static`.
pub(crate) struct Memo<K, V>(OnceLock<Mutex<HashMap<K, V>>>);

impl<K: Eq + Hash, V: Clone> Memo<K, V> {
    /// An empty memo.
    pub(crate) const fn new() -> Self {
        Memo(OnceLock::new())
    }

    fn map(&self) -> MutexGuard<'_, HashMap<K, V>> {
        self.0
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The remembered value of `key`, if any.
    pub(crate) fn get<Q: Eq + Hash + ?Sized>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.map().get(key).cloned()
    }

    /// Remembers `value` for `key`.
    pub(crate) fn insert(&self, key: K, value: V) {
        self.map().insert(key, value);
    }
}
