//! A third-party stage whose results transcope **keeps and answers**: every reply the
//! agent wrote, with its length in words, as a [`Fact`].
//!
//! It hands its facts on ([`Stage::hand_on`]) and declares that it does
//! ([`StageFactory::outputs`]); the compositions (a Stop, `observe`, a backfill, a
//! rebuild) put them in the index with the scope in force when each reply was written
//! — the same attribution a marker or a request gets — and `transcope facts --stage
//! replies` reads them back. Nothing in transcope names this stage: listing its
//! factory is the one line.
//!
//! ```
//! use transcope_core::adapter::EntrySink;
//! use transcope_core::{Entry, EntryKind, Facts, Found, Stage};
//! use transcope_example_third_party::replies::Replies;
//!
//! let mut stage = Replies::default();
//! stage.entry(&Entry { kind: Some(EntryKind::User), texts: vec!["fix it".into()], ..Entry::default() });
//! stage.entry(&Entry { kind: Some(EntryKind::Assistant), texts: vec!["I fixed the build.".into()], offset: 10, ..Entry::default() });
//! let mut found = Found::new();
//! stage.hand_on(&mut found);
//! let Facts(facts) = found.take::<Facts>().unwrap();
//! assert_eq!(facts.len(), 1);
//! assert_eq!((facts[0].key.as_str(), &facts[0].value), ("10", &serde_json::json!({"words": 4})));
//! ```

use transcope_core::adapter::{EntrySink, Probe};
use transcope_core::stage::{BuildContext, StageFactory};
use transcope_core::{Entry, EntryKind, Fact, Facts, Found, Stage};

/// The stage's name: its facts' `stage`.
pub const STAGE_NAME: &str = "replies";

/// Finds the replies of one read (stateless: a reply is one entry).
#[derive(Debug, Default)]
pub struct Replies {
    found: Vec<Fact>,
}

impl EntrySink for Replies {
    fn wants(&self, p: &Probe<'_>) -> bool {
        p.kind == Some(EntryKind::Assistant) && p.text
    }

    fn entry(&mut self, e: &Entry<'_>) {
        if e.kind != Some(EntryKind::Assistant) || e.texts.is_empty() {
            return;
        }
        let words: usize = e.texts.iter().map(|t| t.split_whitespace().count()).sum();
        self.found.push(Fact {
            stage: STAGE_NAME,
            // The line's offset: the same reply read again has the same key.
            key: e.offset.to_string(),
            at: e.time.as_str().and_then(transcope_core::timestamp::parse),
            value: serde_json::json!({ "words": words }),
        });
    }
}

impl Stage for Replies {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    fn hand_on(&mut self, found: &mut Found) {
        found.put(Facts(std::mem::take(&mut self.found)));
    }
}

/// Builds a [`Replies`] stage for each file.
#[derive(Clone, Copy, Debug, Default)]
pub struct RepliesFactory;

impl StageFactory for RepliesFactory {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    fn build<'a>(&'a self, _: &BuildContext<'a>) -> Box<dyn Stage + 'a> {
        Box::new(Replies::default())
    }

    fn outputs(&self) -> Vec<std::any::TypeId> {
        vec![std::any::TypeId::of::<Facts>()]
    }
}
