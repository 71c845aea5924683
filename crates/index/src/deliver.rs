//! Delivering the ledger's pending markers through a brain-writer sink, each marker by
//! one run at a time.
//!
//! A run first **claims** the rows it will send ([`Index::claim`]): in one
//! `BEGIN IMMEDIATE` transaction it takes pending rows no live [`Lease`] holds and
//! writes its own lease on them (`lease_owner`, `lease_until`). It then sends them
//! ([`deliver`]) and, in one synced transaction, records each row's new state and
//! clears its leases; a row the sink failed is pending again at once. So concurrent
//! `deliver` runs and Stops send each marker once. A run killed mid-delivery holds
//! its rows no longer than it lives: its lease names its process (pid, start time,
//! pid namespace), and a claim that finds that process gone takes the rows at once.
//! Where that cannot be told (another pid namespace, no `/proc`), or the process is
//! alive but stuck, the rows wait until the lease runs out ([`LEASE`]). Either way a
//! later run sends them again, which their idempotency keys make harmless.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::{json, Value};
use transcope_brain::{Delivery, Sink};

use crate::query::{ledger_row, LEDGER_COLUMNS};
use crate::{Index, IndexError, LedgerRow, Origin, State};

/// How long a claim holds its rows. Longer than any one run's sending of a claim: a
/// hook ends at its deadline (30 s by default), and `deliver` claims at most
/// [`CLAIM_BATCH`] rows at a time, whose POSTs share one time budget (60 s) and whose
/// outbox files each take a write and a sync.
pub const LEASE: Duration = Duration::from_secs(300);

/// How many rows `deliver` claims (and records) at a time.
pub const CLAIM_BATCH: usize = 256;

/// One delivery run's hold on the rows it claims: an owner unique to the run and a
/// length ([`LEASE`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    owner: String,
    length: Duration,
}

impl Lease {
    /// A lease for a new run of this process: its owner is
    /// `<pid>/<start>/<pid namespace>/<instant>-<counter>` (see [`Lease::owner`]).
    pub fn new() -> Lease {
        Lease::of_process(std::process::id())
    }

    /// A lease naming process `pid` as its holder (tests: a process that is gone).
    pub fn of_process(pid: u32) -> Lease {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let start = process_start(pid).unwrap_or_default();
        let owner = format!(
            "{pid}/{start}/{}/{}-{}",
            pid_namespace().unwrap_or_default(),
            transcope_core::Instant::now().unix_micros(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        );
        Lease {
            owner,
            length: LEASE,
        }
    }

    /// The same owner, holding rows for `length` instead.
    pub fn lasting(mut self, length: Duration) -> Lease {
        self.length = length;
        self
    }

    /// Who holds the rows (stored in `lease_owner`): the process (its pid, its start
    /// time in clock ticks since boot, its pid namespace), then what tells this run
    /// from the process's others.
    pub fn owner(&self) -> &str {
        &self.owner
    }
}

/// Whether the process a lease's `owner` names has ended: `Some(false)` only when it
/// is certainly gone (no such process in this pid namespace, a zombie, or its pid now
/// another process's, started at another time); `None` when it cannot be told.
fn owner_alive(owner: &str) -> Option<bool> {
    let mut parts = owner.split('/');
    let pid: u32 = parts.next()?.parse().ok()?;
    let start: u64 = parts.next()?.parse().ok()?;
    let ns = parts.next()?;
    if start == 0 || ns.is_empty() || pid_namespace()?.as_str() != ns {
        return None;
    }
    match stat_fields(pid) {
        Ok(Some((state, now_start))) => Some(!matches!(state, 'Z' | 'X') && now_start == start),
        Ok(None) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(_) => None,
    }
}

/// This process's pid namespace (`pid:[4026531836]`), when `/proc` says.
fn pid_namespace() -> Option<String> {
    let ns = std::fs::read_link("/proc/self/ns/pid").ok()?;
    ns.to_str().map(str::to_owned)
}

/// When process `pid` started, in clock ticks since boot, when `/proc` says.
fn process_start(pid: u32) -> Option<u64> {
    stat_fields(pid).ok().flatten().map(|(_, start)| start)
}

/// `/proc/<pid>/stat`'s state and start time (fields 3 and 22); `Ok(None)` when it
/// cannot be read as such.
fn stat_fields(pid: u32) -> std::io::Result<Option<(char, u64)>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) is in parentheses and may hold anything.
    let Some((_, rest)) = text.rsplit_once(')') else {
        return Ok(None);
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first().and_then(|s| s.chars().next());
    let start = fields.get(19).and_then(|s| s.parse().ok());
    Ok(state.zip(start))
}

impl Default for Lease {
    fn default() -> Lease {
        Lease::new()
    }
}

/// Which pending rows a claim takes, in the order found.
#[derive(Clone, Copy, Debug, Default)]
pub struct Take<'a> {
    /// Of this session only.
    pub session: Option<&'a str>,
    /// Recorded by this origin only.
    pub origin: Option<Origin>,
    /// These idempotency keys only.
    pub keys: Option<&'a [String]>,
    /// Found after the row [`Claimed::next`] gave (a run going through the ledger
    /// once, a batch at a time).
    pub after: i64,
    /// At most this many.
    pub limit: Option<usize>,
}

/// The rows one claim took.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Claimed {
    /// The rows, in the order found, each held by the claim's lease.
    pub rows: Vec<LedgerRow>,
    /// Rows the claim could have taken but for its limit.
    pub left: u64,
    /// Where the next batch starts ([`Take::after`]).
    pub next: i64,
}

/// What one delivery did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliverReport {
    /// Accepted by the brain.
    pub sent: u64,
    /// Written to the outbox.
    pub outbox: u64,
    /// Printed to a stream.
    pub printed: u64,
    /// Refused by the brain (400, 404, 422): never sent again.
    pub rejected: u64,
    /// Not delivered (the sink failed): still pending.
    pub failed: u64,
    /// The keys delivered, each with its new state.
    pub keys: Vec<(String, State)>,
    /// Why deliveries failed.
    pub errors: Vec<String>,
}

impl DeliverReport {
    /// The `--json` summary.
    pub fn to_json(&self) -> Value {
        json!({
            "sent": self.sent,
            "outbox": self.outbox,
            "printed": self.printed,
            "rejected": self.rejected,
            "failed": self.failed,
            "error": self.errors.first(),
        })
    }

    /// Add what another batch of the same run did.
    pub fn add(&mut self, other: DeliverReport) {
        self.sent += other.sent;
        self.outbox += other.outbox;
        self.printed += other.printed;
        self.rejected += other.rejected;
        self.failed += other.failed;
        self.keys.extend(other.keys);
        self.errors.extend(other.errors);
    }
}

/// Deliver the rows `claimed` under `lease` through `sink`, in order, then record
/// each one's new state and clear the lease in one synced transaction. A row the sink
/// fails is pending again (the next delivery tries it); a run killed between a
/// delivery and its record leaves its rows held until the lease runs out, and a
/// later run delivers them again, which their idempotency keys make harmless.
pub fn deliver(
    index: &mut Index,
    claimed: &Claimed,
    lease: &Lease,
    sink: &mut dyn Sink,
) -> Result<DeliverReport, IndexError> {
    let (report, changes) = deliver_rows(&claimed.rows, sink);
    index.settle(lease, &claimed.rows, &changes)?;
    Ok(report)
}

/// The claim of `take` under `lease` at `now_us`, each row claimed delivered through
/// `sink`, and the rows settled, all inside `tx` (which holds the write lock: taken at
/// `BEGIN IMMEDIATE`): [`Index::claim`], [`deliver`] and [`Index::settle`] in one
/// transaction. Also the changes made, for the states journal once `tx` commits.
pub(crate) fn deliver_in_tx(
    tx: &rusqlite::Transaction<'_>,
    take: &Take<'_>,
    lease: &Lease,
    sink: &mut dyn Sink,
    now_us: i64,
) -> rusqlite::Result<(Claimed, DeliverReport, Vec<Change>)> {
    let claimed = claim_in(tx, take, lease, now_us)?;
    let (report, changes) = deliver_rows(&claimed.rows, sink);
    change_states_in(
        tx,
        &changes,
        SETTLE_FROM,
        Some((lease, &claimed.rows)),
        now_us,
    )?;
    Ok((claimed, report, changes))
}

/// The states a delivery's settle changes a row from: a row another run has
/// meanwhile moved on keeps its state.
const SETTLE_FROM: &[State] = &[State::Pending];

/// Each of `rows` through `sink`, in order: what it did (with each key delivered and
/// its new state), and the state change of each row it took (a row it failed has
/// none: it stays pending).
fn deliver_rows(rows: &[LedgerRow], sink: &mut dyn Sink) -> (DeliverReport, Vec<Change>) {
    let mut report = DeliverReport::default();
    let mut changes = Vec::with_capacity(rows.len());
    for row in rows {
        let key = row.idempotency_key.clone();
        match sink.deliver(&row.record()) {
            Ok(Delivery::Sent) => {
                report.sent += 1;
                changes.push((key, State::Delivered, None));
            }
            Ok(Delivery::Printed) => {
                report.printed += 1;
                changes.push((key, State::Delivered, Some("printed".into())));
            }
            Ok(Delivery::Outboxed(path)) => {
                report.outbox += 1;
                changes.push((key, State::Outbox, Some(path.display().to_string())));
            }
            Ok(Delivery::Rejected(status)) => {
                report.rejected += 1;
                changes.push((key, State::Rejected, Some(format!("HTTP {status}"))));
            }
            Err(e) => {
                report.failed += 1;
                report.errors.push(e.to_string());
            }
        }
    }
    report.keys = changes.iter().map(|(k, s, _)| (k.clone(), *s)).collect();
    (report, changes)
}

/// A row's state change: key, new state, detail.
pub type Change = (String, State, Option<String>);

impl Index {
    /// Take the pending rows `take` names that no live lease holds, and hold them with
    /// `lease` from now: one `BEGIN IMMEDIATE` transaction, so two runs never take
    /// the same row.
    pub fn claim(&mut self, take: &Take<'_>, lease: &Lease) -> Result<Claimed, IndexError> {
        let now = transcope_core::Instant::now().unix_micros();
        self.claim_at(take, lease, now)
    }

    /// [`Index::claim`] at the instant `now_us` (microseconds since the epoch): a
    /// lease ending at or before it is over.
    pub fn claim_at(
        &mut self,
        take: &Take<'_>,
        lease: &Lease,
        now_us: i64,
    ) -> Result<Claimed, IndexError> {
        let run = |conn: &mut Connection| -> rusqlite::Result<Claimed> {
            // A claim lost to a crash only leaves rows pending: no sync needed.
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let claimed = claim_in(&tx, take, lease, now_us)?;
            tx.commit()?;
            Ok(claimed)
        };
        run(&mut self.conn).map_err(|e| self.sqlite(e))
    }

    /// Record what a delivery under `lease` did with the rows it `claimed`, in one
    /// synced transaction: each of `changes` on a row still pending (a row another
    /// run recorded first keeps that run's state), and every lease of `lease`'s owner
    /// on those rows cleared (so a row the sink failed is pending again at once).
    pub fn settle(
        &mut self,
        lease: &Lease,
        claimed: &[LedgerRow],
        changes: &[Change],
    ) -> Result<(), IndexError> {
        self.change_states(changes, SETTLE_FROM, Some((lease, claimed)))
    }

    /// Record what an outbox drain did: each of `changes` (the keys the brain
    /// accepted, `delivered`; the ones it refused, `rejected`) on a row that is
    /// `outbox` or still `pending`, in one synced transaction. Keys the ledger does
    /// not hold (another writer's outbox files) change nothing.
    pub fn settle_drained(&mut self, changes: &[Change]) -> Result<(), IndexError> {
        self.change_states(changes, &[State::Outbox, State::Pending], None)
    }

    /// In one synced transaction: each of `changes` on its row when the row's state
    /// is one of `from` (any, when empty), clearing the row's lease; then, with
    /// `free`, every lease its owner holds on the rows it claimed.
    pub(crate) fn change_states(
        &mut self,
        changes: &[Change],
        from: &[State],
        free: Option<(&Lease, &[LedgerRow])>,
    ) -> Result<(), IndexError> {
        let claimed = free.map_or(&[][..], |(_, rows)| rows);
        if changes.is_empty() && claimed.is_empty() {
            return Ok(());
        }
        let now = transcope_core::Instant::now().unix_micros();
        let run = |conn: &mut Connection| -> rusqlite::Result<()> {
            conn.pragma_update(None, "synchronous", "FULL")?;
            let tx = conn.transaction()?;
            change_states_in(&tx, changes, from, free, now)?;
            tx.commit()
        };
        run(&mut self.conn).map_err(|e| self.sqlite(e))?;
        // What a rebuild of a damaged index carries over (best effort: the ledger is
        // the record).
        let _ = crate::recover::journal_states(&self.path, changes);
        Ok(())
    }
}

/// Pending, matching `take`, and held by no lease that is still running at `now`.
const ELIGIBLE: &str = "state = 'pending' AND (lease_until IS NULL OR lease_until <= ?1)
    AND (?2 IS NULL OR session = ?2) AND (?3 IS NULL OR origin = ?3) AND rowid > ?4";

/// [`Index::change_states`]' writes, inside `tx`.
fn change_states_in(
    tx: &rusqlite::Transaction<'_>,
    changes: &[Change],
    from: &[State],
    free: Option<(&Lease, &[LedgerRow])>,
    now: i64,
) -> rusqlite::Result<()> {
    let only = match from {
        [] => String::new(),
        states => {
            let names: Vec<String> = states.iter().map(|s| format!("'{}'", s.as_str())).collect();
            format!(" AND state IN ({})", names.join(", "))
        }
    };
    crate::next_change(tx)?;
    let mut set = tx.prepare_cached(&format!(
        "UPDATE markers SET state = ?2, detail = ?3, changed_us = ?4, changed = (SELECT v FROM usage_meta WHERE k = 'changes'),
             lease_owner = NULL, lease_until = NULL
         WHERE idempotency_key = ?1{only}"
    ))?;
    for (key, state, detail) in changes {
        set.execute(params![key, state.as_str(), detail, now])?;
    }
    let mut release = tx.prepare_cached(
        "UPDATE markers SET lease_owner = NULL, lease_until = NULL
         WHERE idempotency_key = ?1 AND lease_owner = ?2",
    )?;
    if let Some((lease, rows)) = free {
        for row in rows {
            release.execute(params![row.idempotency_key, lease.owner()])?;
        }
    }
    Ok(())
}

/// The claim of `take` under `lease` at `now`: its reads and writes, inside `tx`
/// (which holds the write lock: taken at `BEGIN IMMEDIATE`).
pub(crate) fn claim_in(
    tx: &rusqlite::Transaction<'_>,
    take: &Take<'_>,
    lease: &Lease,
    now: i64,
) -> rusqlite::Result<Claimed> {
    let (owner, until) = (
        lease.owner(),
        now.saturating_add(lease.length.as_micros().min(i64::MAX as u128) as i64),
    );
    let origin = take.origin.map(Origin::as_str);
    let limit = take.limit.unwrap_or(usize::MAX);
    // Leases of runs that have ended (killed, cut at a hook's deadline) hold nothing.
    let owners: Vec<String> = tx
        .prepare_cached(
            "SELECT DISTINCT lease_owner FROM markers
             WHERE state = 'pending' AND lease_until > ?1 AND lease_owner IS NOT NULL",
        )?
        .query_map([now], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for gone in owners.iter().filter(|o| owner_alive(o) == Some(false)) {
        tx.prepare_cached(
            "UPDATE markers SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?1",
        )?
        .execute([gone])?;
    }
    // The eligible rows' rowids, in the order found: at most `limit` of them (and how
    // many more there were).
    let mut ids: Vec<i64> = Vec::new();
    let mut left = 0u64;
    match take.keys {
        Some(keys) => {
            let mut one = tx.prepare_cached(&format!(
                "SELECT rowid FROM markers WHERE idempotency_key = ?5 AND {ELIGIBLE}"
            ))?;
            for k in keys {
                let id: Option<i64> = one
                    .query_row(params![now, take.session, origin, take.after, k], |r| {
                        r.get(0)
                    })
                    .optional()?;
                ids.extend(id);
            }
            ids.sort_unstable();
            ids.dedup();
            if ids.len() > limit {
                left = (ids.len() - limit) as u64;
                ids.truncate(limit);
            }
        }
        None => {
            // The limit written into the statement: SQLite plans a `LIMIT ?` by the
            // value bound, so it compiled the statement a second time at its first
            // step (2 % of a one-turn Stop's instructions). A run has one limit.
            let cap = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut st = tx.prepare_cached(&format!(
                "SELECT rowid FROM markers WHERE {ELIGIBLE} ORDER BY rowid LIMIT {cap}"
            ))?;
            ids = st
                .query_map(params![now, take.session, origin, take.after], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            if let (true, Some(&last)) = (ids.len() == limit, ids.last()) {
                left = tx
                    .prepare_cached(&format!("SELECT count(*) FROM markers WHERE {ELIGIBLE}"))?
                    .query_row(params![now, take.session, origin, last], |r| {
                        r.get::<_, i64>(0)
                    })? as u64;
            }
        }
    }
    let mut hold = tx
        .prepare_cached("UPDATE markers SET lease_owner = ?2, lease_until = ?3 WHERE rowid = ?1")?;
    let mut read = tx.prepare_cached(&format!(
        "SELECT {LEDGER_COLUMNS} FROM markers WHERE rowid = ?1"
    ))?;
    let mut rows = Vec::with_capacity(ids.len());
    for &id in &ids {
        hold.execute(params![id, owner, until])?;
        rows.push(read.query_row([id], ledger_row)?);
    }
    Ok(Claimed {
        rows,
        left,
        next: ids.last().copied().unwrap_or(take.after),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reaped_one_is_gone() {
        let me = Lease::new();
        if pid_namespace().is_none() {
            // No `/proc`: nothing can be told, and every lease waits to run out.
            assert_eq!(owner_alive(me.owner()), None);
            return;
        }
        assert_eq!(owner_alive(me.owner()), Some(true));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let lease = Lease::of_process(child.id());
        assert_eq!(owner_alive(lease.owner()), Some(true));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(owner_alive(lease.owner()), Some(false));
        // The same pid started at another time is another process.
        let reused = me.owner().replacen('/', "/1", 1);
        assert_eq!(owner_alive(&reused), Some(false));
        // Another pid namespace, or an owner not of this form: cannot be told.
        let elsewhere: String = {
            let p: Vec<&str> = me.owner().split('/').collect();
            format!("{}/{}/pid:[1]/{}", p[0], p[1], p[3])
        };
        assert_eq!(owner_alive(&elsewhere), None);
        assert_eq!(owner_alive("4242-17-0"), None);
    }
}
