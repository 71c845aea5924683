//! A third-party stage: what an agent did in each folder — messages, tool calls and
//! the words it wrote — over a whole transcript, whatever agent wrote it.
//!
//! [`Activity`] keeps the folder in force (a line without a folder happened in the
//! last one named) and the counts per folder; both are its checkpoint, so a
//! transcript read in appended pieces counts exactly what one pass counts. At each
//! read's end it pushes a [`Report`] (the transcript's totals so far) to its
//! [`Sink`]. [`ActivityFactory`] builds one per file, each pushing into the channel
//! the factory was made with: one line in a composition's stage list.
//!
//! ```
//! use transcope_core::adapter::EntrySink;
//! use transcope_core::{Entry, EntryKind, FileContext, Stage};
//! use transcope_example_third_party::activity::{Activity, Report};
//!
//! let mut stage: Activity<Vec<Report>> = Activity::new(Vec::new());
//! stage.entry(&Entry { kind: Some(EntryKind::User), cwd: Some("/a".into()), ..Entry::default() });
//! stage.entry(&Entry { kind: Some(EntryKind::Tool), ..Entry::default() }); // still in /a
//! let saved = stage.checkpoint();
//!
//! let mut resumed: Activity<Vec<Report>> = Activity::new(Vec::new());
//! assert!(resumed.restore(&saved));
//! resumed.entry(&Entry { kind: Some(EntryKind::Assistant), texts: vec!["Two words.".into()], ..Entry::default() });
//! let file = FileContext { path: "t.plog".as_ref(), key: Some("s"), adapter: "plainlog", usage: Default::default(), resumed: true };
//! resumed.finish(&file);
//! let a = &resumed.into_sink()[0].folders["/a"];
//! assert_eq!((a.messages, a.tool_calls, a.words), (2, 1, 2));
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::Sender;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use transcope_core::adapter::EntrySink;
use transcope_core::stage::{BuildContext, StageFactory};
use transcope_core::{Entry, EntryKind, FileContext, Sink, Stage};

/// The stage's name: the key of its checkpoint in a cursor.
pub const STAGE_NAME: &str = "activity";

/// Where entries before any folder are counted.
pub const NO_FOLDER: &str = "(no folder)";

/// What happened in one folder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// User and assistant messages.
    pub messages: u64,
    /// Tool calls and their output.
    pub tool_calls: u64,
    /// Words of the assistant's text.
    pub words: u64,
}

/// A transcript's activity so far, pushed at the end of each read of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The transcript.
    pub path: PathBuf,
    /// The adapter that decoded it.
    pub adapter: &'static str,
    /// Its session key.
    pub key: Option<String>,
    /// The read resumed from the stage's checkpoint.
    pub resumed: bool,
    /// Per folder, over the whole transcript so far.
    pub folders: BTreeMap<String, Counts>,
}

/// The checkpoint: the folder in force and the counts.
#[derive(Default, Serialize, Deserialize)]
struct State {
    folder: Option<String>,
    folders: BTreeMap<String, Counts>,
}

/// The activity stage over one transcript, pushing its [`Report`]s to `S`.
pub struct Activity<S> {
    state: State,
    out: S,
}

impl<S: Sink<Report>> Activity<S> {
    /// A stage with no state yet, reporting to `out`.
    pub fn new(out: S) -> Self {
        Activity {
            state: State::default(),
            out,
        }
    }

    /// The sink, with every report pushed to it.
    pub fn into_sink(self) -> S {
        self.out
    }
}

impl<S> EntrySink for Activity<S> {
    fn entry(&mut self, e: &Entry<'_>) {
        let st = &mut self.state;
        if let Some(f) = e.cwd.as_deref().filter(|f| !f.is_empty()) {
            if st.folder.as_deref() != Some(f) {
                st.folder = Some(f.to_owned());
            }
        }
        let (messages, tool_calls): (u64, u64) = match e.kind {
            Some(EntryKind::User | EntryKind::Assistant) => (1, 0),
            Some(EntryKind::Tool) => (0, 1),
            _ => (0, 0),
        };
        let words: u64 = e
            .texts
            .iter()
            .map(|t| t.split_whitespace().count() as u64)
            .sum();
        if messages + tool_calls + words == 0 {
            return;
        }
        let folder = st.folder.as_deref().unwrap_or(NO_FOLDER);
        // Looked up by `&str` first: a folder's name is allocated once, not per entry.
        let c = match st.folders.get_mut(folder) {
            Some(c) => c,
            None => st.folders.entry(folder.to_owned()).or_default(),
        };
        c.messages += messages;
        c.tool_calls += tool_calls;
        c.words += words;
    }
}

impl<S: Sink<Report> + Send> Stage for Activity<S> {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    fn finish(&mut self, file: &FileContext<'_>) {
        self.out.push_item(Report {
            path: file.path.to_path_buf(),
            adapter: file.adapter,
            key: file.key.map(str::to_owned),
            resumed: file.resumed,
            folders: self.state.folders.clone(),
        });
    }

    fn checkpoint(&self) -> Value {
        serde_json::to_value(&self.state).unwrap_or(Value::Null)
    }

    /// `Null` (a transcript this stage has not read yet) starts afresh; anything but a
    /// checkpoint of this stage is refused, so the transcript is read from its start.
    fn restore(&mut self, checkpoint: &Value) -> bool {
        if checkpoint.is_null() {
            self.state = State::default();
            return true;
        }
        match State::deserialize(checkpoint) {
            Ok(s) => {
                self.state = s;
                true
            }
            Err(_) => false,
        }
    }
}

/// Reports sent down a channel (the example's sink: `Sender::send` needs no lock).
pub struct Channel(pub Sender<Report>);

impl Sink<Report> for Channel {
    fn push_item(&mut self, item: Report) {
        // A receiver that is gone wants no more reports.
        let _ = self.0.send(item);
    }
}

/// Builds an [`Activity`] stage per file, each reporting down the same channel.
pub struct ActivityFactory {
    out: Sender<Report>,
}

impl ActivityFactory {
    /// A factory whose stages send their reports to `out`.
    pub fn new(out: Sender<Report>) -> Self {
        ActivityFactory { out }
    }
}

impl StageFactory for ActivityFactory {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    fn build<'a>(&'a self, _: &BuildContext<'a>) -> Box<dyn Stage + 'a> {
        Box::new(Activity::new(Channel(self.out.clone())))
    }
}
