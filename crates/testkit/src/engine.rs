//! The built-in adapters and engine, as tests compose them: the binary's own list
//! (`transcope::compose`, the library of `crates/cli`, built without the binary's
//! dependencies), so the tests of the crates below it read with exactly the adapters
//! the binary has.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use transcope_core::adapter::{AdapterRegistry, EntrySink};
use transcope_core::stage::{BuildContext, FileContext, Stage, StageFactory, StageRegistry};
use transcope_core::Entry;
use transcope_engine::{CursorPolicy, Pipeline};

/// Every adapter, as the binary registers them ([`transcope::compose::adapters`]).
pub fn adapters() -> AdapterRegistry {
    transcope::compose::adapters()
}

/// Every stage, as the binary lists them ([`transcope::compose::stages`]).
pub fn stages() -> StageRegistry {
    transcope::compose::stages()
}

/// The engine with the cursor store under `home`.
pub fn pipeline(home: &Path) -> Pipeline {
    Pipeline::builder(adapters())
        .cursors(CursorPolicy::store(home))
        .stages(stages())
        .build()
}

/// The engine without cursors: the reference's whole-file read every time.
pub fn pipeline_full() -> Pipeline {
    Pipeline::builder(adapters()).stages(stages()).build()
}

/// The engine with the cursor store under `home` and `more` listed after the
/// product's stages.
pub fn pipeline_listing(home: &Path, more: StageRegistry) -> Pipeline {
    let mut listed = stages();
    for f in more.into_factories() {
        listed.register(f);
    }
    Pipeline::builder(adapters())
        .cursors(CursorPolicy::store(home))
        .stages(listed)
        .build()
}

/// What one read of a [`TallyFactory`] stage reported at its finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Told {
    /// The file's session key.
    pub key: Option<String>,
    /// The read resumed from a cursor.
    pub resumed: bool,
    /// Entries of this read.
    pub read: u64,
    /// Entries of the transcript so far (restored from the checkpoint).
    pub total: u64,
}

/// A stage to list in tests: counts entries, keeps the running total as its
/// checkpoint, and reports each read ([`Told`]) to the factory's shared list.
#[derive(Clone, Default)]
pub struct TallyFactory(pub Arc<Mutex<Vec<Told>>>);

impl TallyFactory {
    /// Every read reported so far, in order.
    pub fn told(&self) -> Vec<Told> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A list holding only this factory.
    pub fn listed(&self) -> StageRegistry {
        let mut r = StageRegistry::new();
        r.register(Box::new(self.clone()));
        r
    }
}

struct Tally<'a> {
    read: u64,
    total: u64,
    out: &'a Mutex<Vec<Told>>,
}

impl EntrySink for Tally<'_> {
    fn entry(&mut self, _: &Entry<'_>) {
        self.read += 1;
        self.total += 1;
    }
}

impl Stage for Tally<'_> {
    fn name(&self) -> &'static str {
        "tally"
    }
    fn finish(&mut self, file: &FileContext<'_>) {
        let told = Told {
            key: file.key.map(str::to_owned),
            resumed: file.resumed,
            read: self.read,
            total: self.total,
        };
        self.out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(told);
    }
    fn checkpoint(&self) -> Value {
        self.total.into()
    }
    fn restore(&mut self, v: &Value) -> bool {
        match v {
            Value::Null => true,
            v => v.as_u64().map(|n| self.total = n).is_some(),
        }
    }
}

impl StageFactory for TallyFactory {
    fn name(&self) -> &'static str {
        "tally"
    }
    fn build<'a>(&'a self, _: &BuildContext<'a>) -> Box<dyn Stage + 'a> {
        Box::new(Tally {
            read: 0,
            total: 0,
            out: &self.0,
        })
    }
}
