//! # transcope-change-detect: folder and branch changes become scope transitions
//!
//! [`ChangeDetect`] is the stateful stage of the pipeline (`observe_transcript` in the
//! reference, scope-log.md §3.2). It is built once per transcript with
//! [`ChangeDetect::begin`], which reads the session's scope log (when first needed)
//! for the instant of the latest transition (`after`) and the (folder, branch) pair it
//! names (`seen`); it is
//! then fed [`Entry`] values in file order with [`ChangeDetect::entry`], and
//! [`ChangeDetect::finish`] reports what was recorded.
//!
//! For each entry, exactly as the reference:
//!
//! 1. an entry without a folder, or whose `timestamp` does not parse, is skipped;
//! 2. an entry strictly earlier than `after` is skipped (an equal instant is kept);
//! 3. the branch is the entry's truthy `gitBranch`; else the branch `seen` names when
//!    `seen`'s folder is this folder; else `""`;
//! 4. an unchanged (folder, branch) is skipped *without* resolving the project;
//! 5. `seen` becomes (folder, branch) *before* the record attempt;
//! 6. the folder's project is resolved (the resolver is injected) and the scope —
//!    identity attributes or just the raw folder, then branch, then swarm/task/lane
//!    from the environment map passed in — is recorded at the entry's own time
//!    string, with no grant. Refusals and I/O errors are counted, never raised.
//!
//! ```
//! use std::borrow::Cow;
//! use transcope_change_detect::{ChangeDetect, Env, NoProjects};
//! use transcope_core::{Entry, TimeValue};
//! use transcope_scopelog::ScopeLog;
//!
//! let home = tempfile::tempdir().unwrap();
//! let log = ScopeLog::open(home.path(), "live");
//! let env = Env::new();
//! let mut resolver = NoProjects;
//! let mut stage = ChangeDetect::begin(&log, &env, &mut resolver);
//! for (t, cwd) in [("2026-10-08T10:00:00Z", "/a"), ("2026-10-08T10:01:00Z", "/a"), ("2026-10-08T10:02:00Z", "/b")] {
//!     let e = Entry { time: TimeValue::Str(Cow::Borrowed(t)), cwd: Some(Cow::Borrowed(cwd)), ..Entry::default() };
//!     stage.entry(&e);
//! }
//! assert_eq!(stage.finish().recorded, 2);
//! ```
#![warn(missing_docs)]

use serde_json::Value;
use transcope_core::{scope::normalise, timestamp, Entry, Instant, Scope, ScopeField};

use transcope_identity::{ProjectIdentity, ResolveError};
use transcope_scopelog::{RecordError, ScopeLog, Transaction, Window};

pub use transcope_identity::{Env, ProjectResolver};

/// A resolver that knows no projects (every folder is recorded raw).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProjects;

impl ProjectResolver for NoProjects {
    fn resolve(&mut self, _: &str, _: &Env) -> Result<Option<ProjectIdentity>, ResolveError> {
        Ok(None)
    }
}

/// The project resolver a composition lends the change-detection stages it builds
/// ([`transcope_core::BuildContext::lent`]): git's (its clones share one cache) or none.
#[derive(Clone, Default)]
pub enum Resolving {
    /// Folders resolved through git (and the registered ids, swarms and aliases).
    Git(transcope_identity::GitResolver),
    /// Every folder recorded raw ([`NoProjects`]).
    #[default]
    None,
    /// Any other resolver (a test's stub), shared by the stages that clone it.
    Shared(std::sync::Arc<std::sync::Mutex<dyn ProjectResolver + Send>>),
}

impl Resolving {
    /// `r`, shared by every clone.
    pub fn shared(r: impl ProjectResolver + Send + 'static) -> Resolving {
        Resolving::Shared(std::sync::Arc::new(std::sync::Mutex::new(r)))
    }
}

impl std::fmt::Debug for Resolving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resolving::Git(g) => f.debug_tuple("Git").field(g).finish(),
            Resolving::None => f.write_str("None"),
            Resolving::Shared(_) => f.write_str("Shared"),
        }
    }
}

impl ProjectResolver for Resolving {
    fn resolve(
        &mut self,
        folder: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        match self {
            Resolving::Git(g) => g.resolve(folder, env),
            Resolving::None => NoProjects.resolve(folder, env),
            Resolving::Shared(r) => r
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .resolve(folder, env),
        }
    }
}

impl<F> From<transcope_identity::FnResolver<F>> for Resolving
where
    transcope_identity::FnResolver<F>: ProjectResolver + Send + 'static,
{
    fn from(r: transcope_identity::FnResolver<F>) -> Resolving {
        Resolving::shared(r)
    }
}

impl From<transcope_identity::GitResolver> for Resolving {
    fn from(g: transcope_identity::GitResolver) -> Resolving {
        Resolving::Git(g)
    }
}

impl From<NoProjects> for Resolving {
    fn from(_: NoProjects) -> Resolving {
        Resolving::None
    }
}

/// Builds change detection for each file a composition reads: over the [`ScopeLog`]
/// the composition lends ([`transcope_core::BuildContext::lending`]), with the
/// [`Resolving`] it lends (none: folders recorded raw), keeping the log's rows for
/// the attribution of what the other stages find. Hands on its [`Outcome`]. Built
/// where no log is lent, its stage does nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChangeDetectFactory;

impl transcope_core::StageFactory for ChangeDetectFactory {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    fn build<'a>(
        &'a self,
        ctx: &transcope_core::BuildContext<'a>,
    ) -> Box<dyn transcope_core::Stage + 'a> {
        let Some(log) = ctx.lent::<ScopeLog>() else {
            return Box::new(Detached);
        };
        let resolver = ctx.lent::<Resolving>().cloned().unwrap_or_default();
        Box::new(ChangeDetect::begin(log, ctx.env, resolver).keeping_rows())
    }

    fn outputs(&self) -> Vec<std::any::TypeId> {
        vec![std::any::TypeId::of::<Outcome>()]
    }
}

/// Change detection with no log to record into: reads nothing, records nothing.
struct Detached;

impl transcope_core::adapter::EntrySink for Detached {
    fn entry(&mut self, _: &Entry<'_>) {}
    fn wants(&self, _: &transcope_core::adapter::Probe<'_>) -> bool {
        false
    }
}

impl transcope_core::Stage for Detached {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }
}

/// The (folder, branch) pair last seen. Values are kept as JSON values because the
/// pair read from the log compares by strict equality with what was stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The folder (`cwd`).
    pub cwd: Value,
    /// The branch.
    pub branch: Value,
}

/// The result of one run of the stage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Transitions written.
    pub recorded: u64,
    /// Entries looked at.
    pub entries: u64,
    /// Record attempts the rules refused (older, task revision).
    pub refused: u64,
    /// Record attempts that failed to read or write the log.
    pub io_errors: u64,
    /// Folders the resolver could not resolve (e.g. an invalid registered id).
    pub resolve_errors: u64,
    /// The first error message, for a hook's stderr line (never names a project).
    pub first_error: Option<String>,
    /// The log's lock could not be taken at all (its `.lock` sidecar is unusable):
    /// nothing was recorded, and nothing read through the log should be handed on.
    pub lock_unusable: bool,
    /// The (folder, branch) pair in force at the end.
    pub seen: Option<Seen>,
    /// The lines appended, in order (for the index; at most [`MAX_WRITTEN_KEPT`], the
    /// rest are in the log, which an index sync reads).
    pub written: Vec<transcope_scopelog::WrittenRow>,
    /// The log's rows as the run left them, when asked for
    /// ([`ChangeDetect::keeping_rows`]) and every accepted row reached the log: a
    /// [`Window`] through which an event at or after its floor is attributed as through
    /// what [`ScopeLog::transitions`] reads back, without a second read.
    pub rows: Option<Window>,
}

/// The most appended lines an [`Outcome`] keeps.
pub const MAX_WRITTEN_KEPT: usize = 4096;

/// The stateful change-detection stage over one transcript.
pub struct ChangeDetect<'a, R: ProjectResolver> {
    log: &'a ScopeLog,
    /// The batch, opened (reading the log) when first needed; `None` before that and
    /// once finished.
    txn: Option<Transaction<'a>>,
    /// The log has been read (`after` and `seen` are its).
    loaded: bool,
    env: &'a Env,
    resolver: R,
    after: Option<Instant>,
    /// The `at` text `after` was read from (a checkpoint stores it).
    after_raw: Option<String>,
    seen: Option<Seen>,
    out: Outcome,
    /// Hand the log's rows on in the [`Outcome`].
    keep_rows: bool,
}

/// The name of this stage's checkpoint in a cursor.
pub const STAGE_NAME: &str = "change-detect";

fn last_id(last: Option<&transcope_scopelog::Row>) -> Option<&str> {
    last.and_then(|r| r.get("transition_id"))
        .and_then(Value::as_str)
}

impl<'a, R: ProjectResolver> ChangeDetect<'a, R> {
    /// Start a run over `log`: `after` and `seen` are read from it when the run first
    /// needs them (a pipeline that finds nothing new never reads the log). Accepted
    /// transitions go through one [`Transaction`] (one lock, whole rows appended in
    /// order), finished by [`ChangeDetect::finish`].
    pub fn begin(log: &'a ScopeLog, env: &'a Env, resolver: R) -> Self {
        ChangeDetect {
            log,
            txn: None,
            loaded: false,
            env,
            resolver,
            after: None,
            after_raw: None,
            seen: None,
            out: Outcome::default(),
            keep_rows: false,
        }
    }

    /// The run also hands the log's rows on ([`Outcome::rows`]), for a caller that
    /// attributes what other stages found through the log once the run is done.
    pub fn keeping_rows(mut self) -> Self {
        self.keep_rows = true;
        self
    }

    /// Read the log, once: `after` and `seen` from its last row.
    fn load(&mut self) {
        if std::mem::replace(&mut self.loaded, true) {
            return;
        }
        let txn = if self.keep_rows {
            self.log.transaction_keeping_rows()
        } else {
            self.log.transaction()
        };
        if let Some(last) = txn.last_row() {
            self.after_raw = last.get("at").and_then(Value::as_str).map(str::to_owned);
            self.after = self.after_raw.as_deref().and_then(timestamp::parse);
            self.seen = Some(Seen {
                cwd: last.get("cwd").cloned().unwrap_or(Value::Null),
                branch: last.get("branch").cloned().unwrap_or(Value::Null),
            });
        }
        self.txn = Some(txn);
    }

    /// Feed one entry, in file order.
    pub fn entry(&mut self, e: &Entry<'_>) {
        self.load();
        self.out.entries += 1;
        let Some(folder) = e.cwd.as_deref().filter(|f| !f.is_empty()) else {
            return;
        };
        let Some(at) = e.time.as_str() else { return };
        let own = e.branch.as_deref().filter(|b| !b.is_empty());
        // A falsy branch in the folder already in force inherits its branch.
        let in_seen_folder = self
            .seen
            .as_ref()
            .filter(|seen| seen.cwd.as_str() == Some(folder));
        // The pair already in force: nothing to record, whatever the time says. Checked
        // first, without allocating or parsing the time: it is the answer for nearly
        // every entry.
        if in_seen_folder.is_some_and(|seen| own.is_none_or(|b| seen.branch.as_str() == Some(b))) {
            return;
        }
        let branch = match (own, in_seen_folder) {
            (Some(b), _) => Value::String(b.to_owned()),
            (None, Some(seen)) => seen.branch.clone(),
            (None, None) => Value::String(String::new()),
        };
        let Some(instant) = timestamp::parse(at) else {
            return;
        };
        if self.after.is_some_and(|after| instant < after) {
            return;
        }
        let pair = Seen {
            cwd: Value::String(folder.to_owned()),
            branch,
        };
        let branch = normalise(&pair.branch);
        self.seen = Some(pair);
        let identity = match self.resolver.resolve(folder, self.env) {
            Ok(identity) => identity,
            Err(err) => {
                // The reference lets this escape Stop (§8 item 11); a hook must not.
                self.out.resolve_errors += 1;
                self.out.first_error.get_or_insert_with(|| err.to_string());
                return;
            }
        };
        let scope = scope_of(identity.as_ref(), folder, &branch, self.env);
        let Some(txn) = self.txn.as_mut() else { return };
        match txn.record(&scope, at, None) {
            Ok(Some(w)) => {
                self.out.recorded += 1;
                if self.out.written.len() < MAX_WRITTEN_KEPT {
                    self.out.written.push(w);
                }
            }
            Ok(None) => {}
            Err(RecordError::Refused(_)) => self.out.refused += 1,
            Err(err) => {
                self.out.lock_unusable |= matches!(err, RecordError::LockUnusable(_));
                self.out.io_errors += 1;
                self.out.first_error.get_or_insert_with(|| err.to_string());
            }
        }
    }

    /// End the run: append the accepted transitions still waiting and release the lock.
    pub fn finish(mut self) -> Outcome {
        self.commit();
        self.out
    }

    /// The outcome, consuming the stage (after a pipeline finished it).
    pub fn into_outcome(self) -> Outcome {
        self.out
    }

    fn commit(&mut self) {
        self.load();
        self.out.seen = self.seen.clone();
        if let Some(mut txn) = self.txn.take() {
            if let Err(err) = txn.flush() {
                // Only the rows that reached the log whole count (a full disk can take
                // part of a write; a torn line may follow them); the next run takes the
                // log as it stands.
                self.out.io_errors += 1;
                self.out.recorded = txn.durable();
                self.out.first_error.get_or_insert_with(|| err.to_string());
                // The lock goes first: refused before its first byte, the log is removed
                // under the lock, so no empty log is left behind.
                drop(txn);
                let _ = self.log.remove_if_empty();
            } else {
                // Still under the lock: what the next run need not read again.
                txn.save_state();
                self.out.rows = txn.into_window();
            }
        }
    }
}

/// The stage's checkpoint: the pair in force and the instant the run started after,
/// as of the log's last row then. A later read resumes with exactly this state while
/// the log still ends with that row (nothing else has written since), which makes a
/// transcript read in pieces record what one pass records, whatever its times do.
impl<R: ProjectResolver + Send> transcope_core::Stage for ChangeDetect<'_, R> {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    fn prepare(&mut self) -> Value {
        if self.out.io_errors > 0 {
            // Some entry could not be recorded (the lock, a full disk): these bytes
            // must be read again, whatever else a stopped read got to.
            return Value::Bool(false);
        }
        self.txn
            .as_ref()
            .and_then(|t| t.last_written_id())
            .map_or(Value::Null, |id| Value::String(id.to_owned()))
    }

    fn begin(&mut self, _: &transcope_core::FileContext<'_>) {
        self.load();
    }

    fn recover(&mut self, token: &Value) -> bool {
        let Some(id) = token.as_str() else {
            return false;
        };
        self.load();
        self.txn.as_ref().is_some_and(|t| t.contains_transition(id))
    }

    fn finish(&mut self, _: &transcope_core::FileContext<'_>) {
        self.commit();
    }

    fn failed(&self) -> bool {
        self.out.io_errors > 0
    }

    /// The run's [`Outcome`].
    fn hand_on(&mut self, found: &mut transcope_core::Found) {
        found.put(std::mem::take(&mut self.out));
    }

    fn checkpoint(&self) -> Value {
        let last = self.txn.as_ref().and_then(|t| t.last_row());
        serde_json::json!({
            "seen": self.seen.as_ref().map(|s| [s.cwd.clone(), s.branch.clone()]),
            "after": self.after_raw,
            "log_last": last_id(last),
        })
    }

    fn restore(&mut self, v: &Value) -> bool {
        if v.is_null() {
            return true;
        }
        // Only what `checkpoint` writes: all three keys, each null or of its type.
        let Some(o) = v.as_object() else {
            return false;
        };
        let pair = |s: &Value| s.is_null() || s.as_array().is_some_and(|p| p.len() == 2);
        let text = |s: &Value| s.is_null() || s.is_string();
        let shaped = o.len() == 3
            && o.get("seen").is_some_and(pair)
            && o.get("after").is_some_and(text)
            && o.get("log_last").is_some_and(text);
        if !shaped {
            return false;
        }
        self.load();
        let last = self.txn.as_ref().and_then(|t| t.last_row());
        // A log that has moved on since (session start recorded a launch scope, another
        // writer) is the truth: keep the state read from it.
        if o.get("log_last").and_then(Value::as_str) != last_id(last) {
            return true;
        }
        self.seen = match o.get("seen") {
            Some(Value::Array(p)) if p.len() == 2 => Some(Seen {
                cwd: p[0].clone(),
                branch: p[1].clone(),
            }),
            _ => None,
        };
        self.after_raw = o.get("after").and_then(Value::as_str).map(str::to_owned);
        self.after = self.after_raw.as_deref().and_then(timestamp::parse);
        true
    }
}

impl<R: ProjectResolver> transcope_core::adapter::EntrySink for ChangeDetect<'_, R> {
    fn entry(&mut self, e: &Entry<'_>) {
        ChangeDetect::entry(self, e);
    }

    /// An entry without a folder, or in the folder and branch already in force (a
    /// branchless entry in the same folder keeps its branch), records nothing whatever
    /// its time.
    fn wants(&self, p: &transcope_core::adapter::Probe<'_>) -> bool {
        let Some(folder) = p.cwd.filter(|f| !f.is_empty()) else {
            return false;
        };
        match &self.seen {
            Some(seen) if seen.cwd.as_str() == Some(folder) => match p.branch {
                Some(b) => seen.branch.as_str() != Some(b),
                None => false,
            },
            _ => true,
        }
    }
}

/// The scope a live source records (scope-log.md §3.1, §3.2): the identity's six
/// attributes — or, without an identity, only `cwd` = `raw_cwd` — then `branch`, then
/// `swarm`, `task` and `lane` from `env`. `task_revision` is never set by live code.
pub fn scope_of(
    identity: Option<&ProjectIdentity>,
    raw_cwd: &str,
    branch: &str,
    env: &Env,
) -> Scope {
    let mut scope = Scope::default();
    match identity {
        Some(id) => {
            for (key, value) in id.attributes() {
                if let Some(f) = ScopeField::from_key(key) {
                    scope.set(f, value);
                }
            }
        }
        None => scope.set(ScopeField::Cwd, raw_cwd),
    }
    scope.set(ScopeField::Branch, branch);
    for (f, var) in [
        (ScopeField::Swarm, "AGENTIHOOKS_SWARM"),
        (ScopeField::Task, "AGENTIHOOKS_SWARM_TASK"),
        (ScopeField::Lane, "AGENTIHOOKS_SWARM_LANE"),
    ] {
        let v = env.get(var).map_or("", String::as_str);
        scope.set(f, normalise(&Value::String(v.to_owned())));
    }
    scope
}

/// Whether the event-time scope path is enabled in `env`: anything but exactly `"0"`
/// (scope-log.md §6).
pub fn scope_enabled(env: &Env) -> bool {
    env.get("AGENTIHOOKS_SESSION_SCOPE").map(String::as_str) != Some("0")
}
