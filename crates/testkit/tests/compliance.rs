//! The kits on a third party's adapter and stage: one that checkpoints its state
//! passes, the same one without its checkpoint is caught, and so is one that sniffs
//! or counts skips wrong.

use std::path::Path;

use serde_json::Value;
use transcope_core::adapter::{
    Adapter, AdapterFactory, AdapterRegistry, Confidence, EntrySink, Skip,
};
use transcope_core::{Entry, LinePos, Stage};
use transcope_testkit::compliance::{check_stage, AdapterKit, Check, Fixture, StageHarness};

/// A format of JSON objects `{"say": text}`; each entry's `uuid` is how many objects
/// came before it in the file (state carried across lines).
#[derive(Default)]
struct Numbered {
    seen: u64,
    checkpoints: bool,
}

impl Adapter for Numbered {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        let text = std::str::from_utf8(line).map_err(|_| Skip::InvalidUtf8)?;
        if text.trim().is_empty() {
            return Err(Skip::Blank);
        }
        let v: Value = serde_json::from_str(text).map_err(|_| Skip::InvalidJson)?;
        let say = v.as_object().ok_or(Skip::NotObject)?.get("say");
        let say = say.and_then(Value::as_str).ok_or(Skip::WrongType)?;
        sink.entry(&Entry {
            uuid: Some(self.seen.to_string().into()),
            texts: vec![say.into()],
            offset: pos.offset,
            line: pos.line,
            ..Entry::default()
        });
        self.seen += 1;
        Ok(())
    }

    fn checkpoint(&self) -> Value {
        if self.checkpoints {
            serde_json::json!({ "seen": self.seen })
        } else {
            Value::Null
        }
    }

    fn restore(&mut self, v: &Value) -> bool {
        if v.is_null() {
            return true;
        }
        v["seen"].as_u64().map(|n| self.seen = n).is_some()
    }
}

#[derive(Clone, Copy)]
struct NumberedFactory {
    checkpoints: bool,
    sniffs: bool,
}

impl AdapterFactory for NumberedFactory {
    fn name(&self) -> &'static str {
        "numbered"
    }
    fn sniff(&self, _: &Path, first_line: &[u8]) -> Option<Confidence> {
        (self.sniffs && first_line.starts_with(b"{\"say\"")).then_some(Confidence::Certain)
    }
    fn build(&self) -> Box<dyn Adapter> {
        Box::new(Numbered {
            seen: 0,
            checkpoints: self.checkpoints,
        })
    }
}

fn kit(checkpoints: bool, sniffs: bool) -> AdapterKit<'static> {
    AdapterKit::new("numbered", move || {
        let mut r = AdapterRegistry::new();
        r.register(Box::new(NumberedFactory {
            checkpoints,
            sniffs,
        }));
        r
    })
}

fn fixture(dir: &Path) -> Fixture {
    let path = dir.join("talk.jsonl");
    let lines: String = (0..12)
        .map(|i| format!("{{\"say\":\"line {i} é\"}}\n"))
        .collect();
    std::fs::write(&path, lines).unwrap();
    Fixture::lines(path)
}

#[test]
fn an_adapter_that_checkpoints_its_state_passes() {
    let dir = tempfile::tempdir().unwrap();
    let report = kit(true, true).check(&[fixture(dir.path())]).unwrap();
    assert_eq!(report.entries, 12);
}

#[test]
fn an_adapter_that_loses_its_state_on_a_resumed_read_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let err = kit(false, true).check(&[fixture(dir.path())]).unwrap_err();
    assert_eq!(err.check, Check::LineSplits, "{err}");
    assert!(err.detail.contains("uuid"), "{err}");
}

#[test]
fn an_adapter_that_does_not_claim_its_fixture_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let err = kit(true, false).check(&[fixture(dir.path())]).unwrap_err();
    assert_eq!(err.check, Check::Sniff, "{err}");
}

/// Sums the lengths of the texts it sees; with `checkpoints` off it forgets the sum
/// between reads.
struct Length {
    sum: u64,
    checkpoints: bool,
}

impl EntrySink for Length {
    fn entry(&mut self, e: &Entry<'_>) {
        self.sum += e.texts.iter().map(|t| t.len() as u64).sum::<u64>();
    }
}

impl Stage for Length {
    fn name(&self) -> &'static str {
        "length"
    }
    fn checkpoint(&self) -> Value {
        match self.checkpoints {
            true => serde_json::json!({ "sum": self.sum }),
            false => Value::Null,
        }
    }
    fn restore(&mut self, v: &Value) -> bool {
        if v.is_null() {
            return true;
        }
        v["sum"].as_u64().map(|n| self.sum = n).is_some()
    }
}

/// Its output is the sum at the end of a run.
struct Lengths(bool);

impl StageHarness for Lengths {
    type World = ();
    type Stage<'w> = Length;
    type Output = u64;
    fn world(&mut self) {}
    fn build(&mut self, _: &()) -> Length {
        Length {
            sum: 0,
            checkpoints: self.0,
        }
    }
    fn collect(&mut self, _: &(), stage: Length, out: &mut u64) {
        *out = stage.sum;
    }
}

fn texts() -> Vec<Entry<'static>> {
    (0..5)
        .map(|i| Entry {
            texts: vec![format!("text {i}").into()],
            ..Entry::default()
        })
        .collect()
}

#[test]
fn a_stage_that_checkpoints_its_state_passes() {
    let report = check_stage(&mut Lengths(true), &texts()).unwrap();
    assert_eq!((report.stage, report.boundaries), ("length", 6));
}

#[test]
fn a_stage_that_loses_its_state_between_reads_is_caught() {
    let err = check_stage(&mut Lengths(false), &texts()).unwrap_err();
    assert_eq!(err.check, Check::StagePieces, "{err}");
}
