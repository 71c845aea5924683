//! Requests, merged by key before they are written.
//!
//! Every copy of a request (a streamed message's lines, a resumed session's replay)
//! shares its key. A [`UsageBatch`] keeps the copies it is given in the order given
//! and, when written, sorts them by key (a key's copies stay in that order) and
//! merges each key's copies by the index's own rule, so a batch writes each request
//! once, in key order: a backfill gathers many files' requests and writes them in
//! one pass over the key index's pages, which on a fresh index is an append. (An
//! append and one sort cost less than a hash map's insert of each copy: the map of a
//! large batch does not fit the CPU's caches, and every insert missed them.)

use std::sync::Arc;

use transcope_core::entry::merge_copy;
use transcope_core::Tokens;

use crate::{Ids, Observed, Spending};

/// Requests of many reads, merged by key as the index merges them.
#[derive(Default)]
pub struct UsageBatch {
    /// `(session, root session)` of each read added.
    owners: Vec<(String, String)>,
    /// Each read's scopes: `(owner, scope)`.
    scopes: Vec<(u32, Arc<[String; 5]>)>,
    /// The models named.
    models: Vec<String>,
    model_slots: rustc_hash::FxHashMap<String, u32>,
    /// Each copy with its key, in the order added.
    requests: Vec<(u128, Request)>,
    /// The copies in key order while they are written (its room kept for the next
    /// write).
    sorted: Vec<(u128, Request)>,
    /// The place of its run's first read, after every place an earlier run gave:
    /// taken from the index at the batch's first write and kept for the next
    /// ([`UsageBatch::add`]).
    base: Option<i64>,
    /// One past the largest `order` added.
    orders: u32,
}

#[derive(Clone, Copy, Default)]
struct Request {
    /// Index into [`UsageBatch::scopes`].
    scope: u32,
    is_root: bool,
    at_us: Option<i64>,
    /// Index into [`UsageBatch::models`] ([`NO_MODEL`]: none; an `Option` would
    /// make each copy a word longer, and a backfill sorts millions).
    model: u32,
    tokens: Tokens,
    /// The read's place in its run's stream ([`UsageBatch::add`]).
    order: u32,
}

/// [`Request::model`] of a copy that names none.
const NO_MODEL: u32 = u32::MAX;

// A copy with its key is 96 bytes: the sort moves millions of them.
const _: () = assert!(std::mem::size_of::<(u128, Request)>() == 96);

impl UsageBatch {
    /// Add `usage`, spent by `item`'s session, read `order`-th in its run's stream.
    ///
    /// Two copies of a request that tie by time and by being a root session's (a
    /// resumed Claude Code session replays its parent's lines, times and all) are
    /// told apart by where they were read: the copy of the read earlier in the run's
    /// stream is kept, and a copy kept by an earlier run (or batch written alone) is
    /// never taken by a later one — whichever worker read a file and whenever its
    /// requests were written. A batch is one run: its reads' places follow every
    /// place an earlier batch gave, in `order`.
    pub fn add(&mut self, item: &Observed, order: u32, usage: impl IntoIterator<Item = Spending>) {
        let mut usage = usage.into_iter().peekable();
        if usage.peek().is_none() {
            return;
        }
        let root = item.parent.as_deref().unwrap_or(&item.session);
        let owner = self.owners.len() as u32;
        self.owners.push((item.session.clone(), root.to_owned()));
        let is_root = item.parent.is_none();
        let first_scope = self.scopes.len();
        // A read's requests share their model's `Arc` while the model stays the same,
        // and their scope's while the log row in force stays the same.
        let mut last_model: Option<(Arc<str>, u32)> = None;
        let mut last_scope: Option<(Arc<[String; 5]>, u32)> = None;
        for u in usage {
            // A read's requests share a few scopes (the same `Arc` for one log row; two
            // rows may name the same scope).
            let scope = match &last_scope {
                Some((s, slot)) if Arc::ptr_eq(s, &u.scope) => *slot,
                _ => {
                    let slot = match self.scopes[first_scope..]
                        .iter()
                        .position(|(_, s)| Arc::ptr_eq(s, &u.scope) || *s == u.scope)
                    {
                        Some(i) => (first_scope + i) as u32,
                        None => {
                            self.scopes.push((owner, u.scope.clone()));
                            (self.scopes.len() - 1) as u32
                        }
                    };
                    last_scope = Some((u.scope, slot));
                    slot
                }
            };
            let model = u.model.map_or(NO_MODEL, |m| match &last_model {
                Some((l, slot)) if Arc::ptr_eq(l, &m) => *slot,
                _ => {
                    let slot = match self.model_slots.get(&*m) {
                        Some(slot) => *slot,
                        None => {
                            let slot = self.models.len() as u32;
                            self.models.push(m.to_string());
                            self.model_slots.insert(m.to_string(), slot);
                            slot
                        }
                    };
                    last_model = Some((m, slot));
                    slot
                }
            });
            let new = Request {
                scope,
                is_root,
                at_us: u.at_us,
                model,
                tokens: u.tokens,
                order,
            };
            self.orders = self.orders.max(order.saturating_add(1));
            self.requests.push((u.key, new));
        }
    }

    /// A batch with room for `n` copies (a run that gathers many does not grow its
    /// room step by step).
    pub fn with_capacity(n: usize) -> UsageBatch {
        UsageBatch {
            requests: Vec::with_capacity(n),
            ..UsageBatch::default()
        }
    }

    /// How many copies of requests the batch holds (a request's copies that follow
    /// one another in a file come as one, [`Spending`]).
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

/// A copy in a batch, merged by [`merge_copy`] ([`UPSERT_USAGE`] in memory): its place
/// is its read's `order` (a batch's reads share its run's first place,
/// [`UsageBatch::add`]); its scope goes with its time.
impl transcope_core::entry::RequestCopy for Request {
    type Time = i64;
    type Place = u32;
    fn at(&self) -> Option<i64> {
        self.at_us
    }
    fn is_root(&self) -> bool {
        self.is_root
    }
    fn place(&self) -> u32 {
        self.order
    }
    fn has_model(&self) -> bool {
        self.model != NO_MODEL
    }
    fn tokens(&self) -> &Tokens {
        &self.tokens
    }
    fn tokens_mut(&mut self) -> &mut Tokens {
        &mut self.tokens
    }
    fn take_lead(&mut self, new: &Request) {
        self.scope = new.scope;
        self.is_root = new.is_root;
        self.at_us = new.at_us;
        self.order = new.order;
    }
    fn take_model(&mut self, new: &Request) {
        self.model = new.model;
    }
}

/// The six token counts as stored (in the columns' order: input, output, cache
/// writes, 1-hour cache writes, cache reads, reasoning), each at most `i64::MAX`.
pub(crate) fn counts(t: &Tokens) -> [i64; 6] {
    t.counts().map(|v| v.min(i64::MAX as u64) as i64)
}

/// The [`counts`] read back from six columns from `first` on (a negative one as 0).
pub(crate) fn tokens_at(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Tokens> {
    let mut c = [0u64; 6];
    for (i, n) in c.iter_mut().enumerate() {
        *n = r.get_ref(first + i)?.as_i64_or_null()?.unwrap_or(0).max(0) as u64;
    }
    Ok(Tokens::from_counts(c))
}

/// Write `batch` in `tx` (and empty it): each request merged into its row, in key
/// order.
pub(crate) fn write(
    tx: &rusqlite::Transaction<'_>,
    known: &Ids,
    fresh: &mut Ids,
    batch: &mut UsageBatch,
) -> rusqlite::Result<()> {
    if batch.requests.is_empty() {
        return Ok(());
    }
    // The sums kept by queries are of the requests before these.
    tx.execute("UPDATE usage_meta SET v = v + 1 WHERE k = 'generation'", [])?;
    let changed = crate::next_change(tx)?;
    // The place of the batch's first read: after every place given before it (its
    // first write takes it), and its reads' places kept from the next run's.
    let base = match batch.base {
        Some(base) => base,
        None => {
            let base: i64 =
                tx.query_row("SELECT v FROM usage_meta WHERE k = 'places'", [], |r| {
                    r.get(0)
                })?;
            batch.base = Some(base);
            base
        }
    };
    tx.execute(
        "UPDATE usage_meta SET v = max(v, ?1) WHERE k = 'places'",
        [base + i64::from(batch.orders)],
    )?;
    // The copies in key order, a key's in the order added (which decides a tie).
    let sorted = in_key_order(&batch.requests, &mut batch.sorted);
    // Each scope and model by number, looked up once (and once a connection).
    let mut scope_ids: Vec<Option<i64>> = vec![None; batch.scopes.len()];
    let mut model_ids: Vec<Option<i64>> = vec![None; batch.models.len()];
    let mut row = |key: u128, r: &Request| -> rusqlite::Result<Row> {
        let scope = match scope_ids[r.scope as usize] {
            Some(id) => id,
            None => {
                let (owner, scope) = &batch.scopes[r.scope as usize];
                let (session, root) = &batch.owners[*owner as usize];
                let id = scope_id(tx, known, fresh, session, root, scope)?;
                scope_ids[r.scope as usize] = Some(id);
                id
            }
        };
        let model = match r.model {
            NO_MODEL => None,
            m => Some(match model_ids[m as usize] {
                Some(id) => id,
                None => {
                    let id = model_id(tx, known, fresh, &batch.models[m as usize])?;
                    model_ids[m as usize] = Some(id);
                    id
                }
            }),
        };
        Ok(Row {
            key: key.to_be_bytes(),
            scope,
            is_root: r.is_root,
            at_us: r.at_us,
            model,
            counts: counts(&r.tokens),
            place: base + i64::from(r.order),
            changed,
        })
    };
    // Each key's copies (a run of `sorted`) merged into its row, and the rows written
    // CHUNK at a time as they are made (not gathered first: that was a vector of
    // every row, written once and read once). Most requests are new: plain inserts,
    // CHUNK rows a statement; a chunk that meets a copy kept already merges each of
    // its rows (a row it just inserted merges with itself, which changes nothing).
    let mut written = || -> rusqlite::Result<()> {
        // Each statement prepared when first used: a Stop's batch of one request
        // never parses the CHUNK-row insert (sqlite3 parses its ~900 parameters
        // each time a connection first prepares it) or the merge.
        let (mut insert, mut insert_chunk, mut upsert) = (None, None, None);
        let mut runs = sorted.chunk_by(|a, b| a.0 == b.0).peekable();
        let mut chunk: Vec<Row> = Vec::with_capacity(CHUNK);
        while runs.peek().is_some() {
            chunk.clear();
            for run in runs.by_ref().take(CHUNK) {
                let mut kept = run[0].1;
                for (_, copy) in &run[1..] {
                    merge_copy(&mut kept, copy);
                }
                chunk.push(row(run[0].0, &kept)?);
            }
            let inserted = if chunk.len() == CHUNK {
                let st = crate::prepared(tx, &mut insert_chunk, &INSERT_CHUNK_SQL)?;
                for (i, row) in chunk.iter().enumerate() {
                    row.bind(st, i * COLUMNS)?;
                }
                st.raw_execute()?
            } else {
                let st = crate::prepared(tx, &mut insert, &INSERT_USAGE_SQL)?;
                let mut n = 0;
                for row in &chunk {
                    row.bind(st, 0)?;
                    n += st.raw_execute()?;
                }
                n
            };
            if inserted < chunk.len() {
                let st = crate::prepared(tx, &mut upsert, &UPSERT_USAGE_SQL)?;
                for row in &chunk {
                    row.bind(st, 0)?;
                    st.raw_execute()?;
                }
            }
        }
        Ok(())
    };
    let written = written();
    // Taken, written or not (a batch that failed is not written again with the next:
    // its transaction is not committed).
    batch.requests.clear();
    written?;
    // Emptied, its map's room kept for the next requests.
    batch.owners.clear();
    batch.scopes.clear();
    batch.models.clear();
    batch.model_slots.clear();
    Ok(())
}

/// `requests` in key order, a key's copies in the order given, in `room`.
///
/// Grouped first by the key's first byte (a counting sort, which keeps their order),
/// then each group sorted where it lies: a group is a few hundred copies, which the
/// CPU's caches hold. Sorting the keys and places alone and then fetching each copy
/// from its place in a batch of megabytes missed the caches at nearly every copy
/// (four fifths of the write's own time, benches/README.md, session 17).
fn in_key_order<'r>(
    requests: &[(u128, Request)],
    room: &'r mut Vec<(u128, Request)>,
) -> &'r [(u128, Request)] {
    let group = |key: u128| (key >> 120) as usize;
    let mut starts = [0usize; 257];
    for (key, _) in requests {
        starts[group(*key) + 1] += 1;
    }
    for g in 1..starts.len() {
        starts[g] += starts[g - 1];
    }
    room.clear();
    room.resize(requests.len(), (0, Request::default()));
    let mut next = starts;
    for r in requests {
        let g = group(r.0);
        room[next[g]] = *r;
        next[g] += 1;
    }
    for w in starts.windows(2) {
        // Stable: a key's copies stay in the order given.
        room[w[0]..w[1]].sort_by_key(|r| r.0);
    }
    room
}

/// One request's row, as bound.
struct Row {
    key: [u8; 16],
    scope: i64,
    is_root: bool,
    at_us: Option<i64>,
    model: Option<i64>,
    counts: [i64; 6],
    /// Where the copy was read: its run's first place and its read's `order`.
    place: i64,
    /// The writing transaction's change number (schema version 8).
    changed: i64,
}

/// The columns of a row (and the parameters of one row's insert).
const COLUMNS: usize = 13;

/// Rows inserted by one statement.
const CHUNK: usize = 64;

impl Row {
    /// Bind the row to `st`'s parameters from `first` + 1 on.
    fn bind(&self, st: &mut rusqlite::CachedStatement<'_>, first: usize) -> rusqlite::Result<()> {
        st.raw_bind_parameter(first + 1, &self.key[..])?;
        st.raw_bind_parameter(first + 2, self.scope)?;
        st.raw_bind_parameter(first + 3, self.is_root)?;
        st.raw_bind_parameter(first + 4, self.at_us)?;
        st.raw_bind_parameter(first + 5, self.model)?;
        for (i, c) in self.counts.iter().enumerate() {
            st.raw_bind_parameter(first + 6 + i, c)?;
        }
        st.raw_bind_parameter(first + 12, self.place)?;
        st.raw_bind_parameter(first + 13, self.changed)?;
        Ok(())
    }
}

/// Every copy of a request is one row, merged into it by the usage merge rule, whose
/// one home is [`transcope_core::entry::merge_copy`]: this is that rule in SQL, for a
/// copy meeting the row already stored (`place`, by run, then by the file's place in
/// the run's stream, is [`RequestCopy::place`](transcope_core::entry::RequestCopy)),
/// held to it by `the_sql_upsert_merges_as_merge_copy` below.
const UPSERT_USAGE: &str = "
INSERT INTO usage (message_key, scope, is_root, at_us, model, input_tokens, output_tokens,
    cache_creation_input_tokens, cache_creation_1h_input_tokens, cache_read_input_tokens,
    reasoning_output_tokens, place, changed)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
ON CONFLICT(message_key) DO UPDATE SET
    changed = excluded.changed,
    scope = CASE WHEN e THEN excluded.scope ELSE scope END,
    is_root = CASE WHEN e THEN excluded.is_root ELSE is_root END,
    at_us = CASE WHEN e THEN excluded.at_us ELSE at_us END,
    place = CASE WHEN e THEN excluded.place ELSE place END,
    model = coalesce(CASE WHEN e THEN excluded.model ELSE model END, model, excluded.model),
    input_tokens = max(input_tokens, excluded.input_tokens),
    output_tokens = max(output_tokens, excluded.output_tokens),
    cache_creation_input_tokens = max(cache_creation_input_tokens, excluded.cache_creation_input_tokens),
    cache_creation_1h_input_tokens = max(cache_creation_1h_input_tokens, excluded.cache_creation_1h_input_tokens),
    cache_read_input_tokens = max(cache_read_input_tokens, excluded.cache_read_input_tokens),
    reasoning_output_tokens = max(reasoning_output_tokens, excluded.reasoning_output_tokens)";

/// The id of a request's scope: known to the connection, found, or added.
fn scope_id(
    tx: &rusqlite::Transaction<'_>,
    known: &Ids,
    fresh: &mut Ids,
    session: &str,
    root: &str,
    scope: &[String; 5],
) -> rusqlite::Result<i64> {
    let key = [
        session.to_owned(),
        root.to_owned(),
        scope[0].clone(),
        scope[1].clone(),
        scope[2].clone(),
        scope[3].clone(),
        scope[4].clone(),
    ];
    if let Some(id) = known.scopes.get(&key).or_else(|| fresh.scopes.get(&key)) {
        return Ok(*id);
    }
    // A scope not seen yet is added by one statement (a backfill's are most often new);
    // one the index holds already is then looked up.
    let added = tx
        .prepare_cached(
            "INSERT INTO usage_scopes (session, root_session, project_id, worktree, branch,
             task, lane) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
        )?
        .execute(rusqlite::params_from_iter(&key))?;
    let id = if added == 1 {
        tx.last_insert_rowid()
    } else {
        tx.prepare_cached(
            "SELECT id FROM usage_scopes WHERE session = ?1 AND root_session = ?2
             AND project_id = ?3 AND worktree = ?4 AND branch = ?5 AND task = ?6 AND lane = ?7",
        )?
        .query_row(rusqlite::params_from_iter(&key), |r| r.get(0))?
    };
    fresh.scopes.insert(key, id);
    Ok(id)
}

/// The id of a model's name: known to the connection, found, or added.
fn model_id(
    tx: &rusqlite::Transaction<'_>,
    known: &Ids,
    fresh: &mut Ids,
    model: &str,
) -> rusqlite::Result<i64> {
    if let Some(id) = known.models.get(model).or_else(|| fresh.models.get(model)) {
        return Ok(*id);
    }
    tx.prepare_cached(
        "INSERT INTO usage_models (model) VALUES (?1) ON CONFLICT (model) DO NOTHING",
    )?
    .execute([model])?;
    let id = tx
        .prepare_cached("SELECT id FROM usage_models WHERE model = ?1")?
        .query_row([model], |r| r.get(0))?;
    fresh.models.insert(model.to_owned(), id);
    Ok(id)
}

/// The copy being inserted is the earlier one (a root session's on a tie, then the
/// one read first).
const EARLIER: &str =
    "((excluded.at_us IS NOT NULL AND (usage.at_us IS NULL OR excluded.at_us < usage.at_us))
    OR (excluded.at_us IS usage.at_us AND (excluded.is_root > usage.is_root
        OR (excluded.is_root = usage.is_root AND excluded.place < usage.place))))";

/// A request not seen before: [`UPSERT_USAGE`] without its conflict clause.
static INSERT_USAGE_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let head = &UPSERT_USAGE[..UPSERT_USAGE
        .find("ON CONFLICT")
        .unwrap_or(UPSERT_USAGE.len())];
    head.replacen("INSERT INTO", "INSERT OR IGNORE INTO", 1)
});

/// [`INSERT_USAGE_SQL`] of [`CHUNK`] rows.
static INSERT_CHUNK_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let head = &INSERT_USAGE_SQL[..INSERT_USAGE_SQL.find("VALUES").unwrap_or(0)];
    let tuples: Vec<String> = (0..CHUNK)
        .map(|r| {
            let p: Vec<String> = (1..=COLUMNS)
                .map(|c| format!("?{}", r * COLUMNS + c))
                .collect();
            format!("({})", p.join(", "))
        })
        .collect();
    format!("{head}VALUES {}", tuples.join(", "))
});

/// [`UPSERT_USAGE`] with its condition spelled out.
static UPSERT_USAGE_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    UPSERT_USAGE.replace("WHEN e THEN", &format!("WHEN {EARLIER} THEN"))
});

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies in the order given: `scope` numbers them, so the order of a key's copies
    /// can be read back.
    fn copies(keys: &[u128]) -> Vec<(u128, Request)> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| {
                let r = Request {
                    scope: i as u32,
                    ..Request::default()
                };
                (*k, r)
            })
            .collect()
    }

    fn order(v: &[(u128, Request)]) -> Vec<(u128, u32)> {
        v.iter().map(|(k, r)| (*k, r.scope)).collect()
    }

    proptest::proptest! {
        /// Key order, a key's copies in the order given: a stable sort by key, whatever
        /// the keys (many sharing a first byte, many repeated, none at all).
        #[test]
        fn in_key_order_is_a_stable_sort_by_key(
            picks in proptest::collection::vec((0u8..4, 0u8..3, proptest::num::u128::ANY), 0..600),
        ) {
            // Few first bytes and few keys, so groups are large and keys repeat; the
            // rest of the key any value.
            let pool: Vec<u128> = picks.iter().take(8).map(|p| p.2).collect();
            let keys: Vec<u128> = picks
                .iter()
                .enumerate()
                .map(|(i, (top, which, any))| {
                    let base = match (*which, pool.len()) {
                        (0, n) if n > 0 => pool[i % n],
                        _ => *any,
                    };
                    (u128::from(*top) << 126) | (base >> 2)
                })
                .collect();
            let given = copies(&keys);
            let mut want = given.clone();
            want.sort_by_key(|c| c.0);
            let mut room = vec![(7, Request::default()); 3];
            let got = in_key_order(&given, &mut room);
            proptest::prop_assert_eq!(order(got), order(&want));
        }
    }
    /// A copy as the test draws it: time (few values, so ties are common), root, the
    /// read's order, model, counts.
    type Drawn = (Option<i64>, bool, u32, Option<u32>, [u64; 6]);

    fn drawn() -> impl proptest::strategy::Strategy<Value = Drawn> {
        use proptest::prelude::*;
        (
            proptest::option::of(0i64..3),
            any::<bool>(),
            0u32..3,
            proptest::option::of(0u32..2),
            [0u64..4, 0u64..4, 0u64..4, 0u64..4, 0u64..4, 0u64..4],
        )
    }

    proptest::proptest! {
        /// The SQL upsert (a copy meeting the row stored) merges exactly as the one rule,
        /// `merge_copy`, merges in memory: the copies of a request, one at a time in the
        /// order drawn, through both; the row is the copy kept (its scope names which
        /// copy led).
        #[test]
        fn the_sql_upsert_merges_as_merge_copy(copies in proptest::collection::vec(drawn(), 1..8)) {
            let home = tempfile::tempdir().unwrap();
            let ix = crate::Index::open(home.path()).unwrap();
            let conn = ix.conn();
            // Scopes and models by number only: no rows for them here.
            conn.pragma_update(None, "foreign_keys", false).unwrap();
            let mut upsert = conn.prepare_cached(&UPSERT_USAGE_SQL).unwrap();
            let key = 7u128.to_be_bytes();
            let mut kept: Option<Request> = None;
            for (i, (at_us, is_root, order, model, c)) in copies.iter().enumerate() {
                let copy = Request {
                    scope: i as u32,
                    is_root: *is_root,
                    at_us: *at_us,
                    model: model.unwrap_or(NO_MODEL),
                    tokens: Tokens::from_counts(*c),
                    order: *order,
                };
                match &mut kept {
                    Some(k) => merge_copy(k, &copy),
                    None => kept = Some(copy),
                }
                let row = Row {
                    key,
                    scope: i64::from(copy.scope),
                    is_root: copy.is_root,
                    at_us: copy.at_us,
                    model: model.map(i64::from),
                    counts: counts(&copy.tokens),
                    place: i64::from(copy.order),
                    changed: 1,
                };
                row.bind(&mut upsert, 0).unwrap();
                upsert.raw_execute().unwrap();
            }
            let kept = kept.unwrap();
            let stored = conn
                .query_row(
                    "SELECT scope, is_root, at_us, model, input_tokens, output_tokens,
                        cache_creation_input_tokens, cache_creation_1h_input_tokens,
                        cache_read_input_tokens, reasoning_output_tokens, place
                     FROM usage WHERE message_key = ?1",
                    [&key[..]],
                    |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, bool>(1)?,
                            r.get::<_, Option<i64>>(2)?,
                            r.get::<_, Option<i64>>(3)?,
                            tokens_at(r, 4)?,
                            r.get::<_, i64>(10)?,
                        ))
                    },
                )
                .unwrap();
            let model = (kept.model != NO_MODEL).then(|| i64::from(kept.model));
            proptest::prop_assert_eq!(
                stored,
                (
                    i64::from(kept.scope),
                    kept.is_root,
                    kept.at_us,
                    model,
                    kept.tokens,
                    i64::from(kept.order),
                )
            );
        }
    }
}
