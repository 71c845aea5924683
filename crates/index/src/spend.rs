//! What was spent, grouped: `transcope usage --by …`.
//!
//! Each model request counts once (the index keeps one row per request key) in the
//! scope that was in force when it was spent. Costs are summed request by request (a
//! price list's tiers apply to one request), by a pricer the caller gives: a request
//! whose model has no price adds nothing to `cost_usd` and is counted in `unpriced`;
//! a group where no request is priced has `cost_usd: null`, never 0.

use rustc_hash::FxHashMap;

use rusqlite::{params, OptionalExtension};
use transcope_core::Tokens;
use transcope_store::spend::{Part, ScopeRow, DAY_US};

pub use transcope_store::spend::{UsageFilter, UsageGroup, UsageKey};

use crate::{Index, IndexError};

impl Index {
    /// The requests `filter` keeps, grouped by `by` (in key order), each priced by
    /// `price(model, tokens)`; with `by` empty, one group of everything.
    ///
    /// `pricing` names the price list `price` applies (a list's fingerprint): with
    /// one, and no time window, the sums by scope, model and day are kept in the index
    /// until the next request is written, and a query asked again reads those
    /// (`usage_parts`), not every request.
    pub fn usage(
        &self,
        by: &[UsageKey],
        filter: &UsageFilter,
        price: &dyn Fn(Option<&str>, &Tokens) -> Option<f64>,
        pricing: Option<&str>,
    ) -> Result<Vec<UsageGroup>, IndexError> {
        let sql = |e| self.sqlite(e);
        let conn = self.conn();
        // A query that reads the whole usage table maps it rather than copying each
        // page into the cache. Only this one: a mapped page a query touches counts in
        // its resident memory, and a timeline or a report of a long session would
        // then hold the transitions it read.
        conn.pragma_update(None, "mmap_size", 1i64 << 30)
            .map_err(sql)?;
        let windowed = filter.since.is_some() || filter.until.is_some();
        let cache = pricing.filter(|_| !windowed);
        // One read transaction: the parts, or the requests they are made of, and the
        // generation they belong to.
        conn.execute_batch("BEGIN").map_err(sql)?;
        let read = (|| {
            let (scopes, models) = self.usage_names()?;
            let generation: i64 = conn
                .query_row("SELECT v FROM usage_meta WHERE k = 'generation'", [], |r| {
                    r.get(0)
                })
                .map_err(sql)?;
            let kept = match cache {
                Some(p) => self.stored_parts(p, generation)?,
                None => None,
            };
            let (parts, fresh) = match kept {
                Some(parts) => (parts, false),
                None => (self.scan_parts(filter, &scopes, &models, price)?, true),
            };
            Ok::<_, IndexError>((scopes, models, generation, parts, fresh))
        })();
        let _ = conn.execute_batch("COMMIT");
        let (scopes, models, generation, parts, fresh) = read?;
        if let (Some(p), true) = (cache, fresh) {
            // Kept for the next query; one that cannot be stored (the database busy,
            // read-only) is only not kept.
            let _ = self.store_parts(p, generation, &parts);
        }
        // In key order, so a group's cost is summed the same way every time.
        let parts = parts.iter().filter_map(|((scope, model, day), sums)| {
            let (scope, agent) = scopes.get(scope)?;
            Some(Part {
                scope,
                model: model.and_then(|m| models.get(&m)).map(String::as_str),
                day: *day,
                machine: None,
                agent: agent.as_deref(),
                sums,
            })
        });
        Ok(transcope_store::group(parts, by, filter))
    }

    /// The scopes (each with its session's agent, read now: a part kept before the
    /// session's agent was known is grouped by it all the same) and models, by number
    /// (a few thousand rows at most).
    #[allow(clippy::type_complexity)]
    fn usage_names(&self) -> Result<(FxHashMap<i64, Scoped>, FxHashMap<i64, String>), IndexError> {
        let sql = |e| self.sqlite(e);
        let conn = self.conn();
        let mut scopes: FxHashMap<i64, Scoped> = FxHashMap::default();
        let mut st = conn
            .prepare_cached(
                "SELECT u.id, u.session, u.root_session, u.project_id, u.worktree, u.branch,
                        u.task, s.agent
                 FROM usage_scopes u LEFT JOIN sessions s ON s.session = u.session",
            )
            .map_err(sql)?;
        let mut q = st.query([]).map_err(sql)?;
        while let Some(r) = q.next().map_err(sql)? {
            let get = |i: usize| r.get::<_, Option<String>>(i).map_err(sql);
            let row = [get(1)?, get(2)?, get(3)?, get(4)?, get(5)?, get(6)?];
            scopes.insert(r.get(0).map_err(sql)?, (row, get(7)?));
        }
        let mut models: FxHashMap<i64, String> = FxHashMap::default();
        let mut st = conn
            .prepare_cached("SELECT id, model FROM usage_models")
            .map_err(sql)?;
        let mut q = st.query([]).map_err(sql)?;
        while let Some(r) = q.next().map_err(sql)? {
            models.insert(r.get(0).map_err(sql)?, r.get(1).map_err(sql)?);
        }
        Ok((scopes, models))
    }

    /// Every request in `filter`'s time window (its other filters apply to the parts)
    /// summed by (scope, model, day), each priced on its own, in key order.
    fn scan_parts(
        &self,
        filter: &UsageFilter,
        scopes: &FxHashMap<i64, Scoped>,
        models: &FxHashMap<i64, String>,
        price: &dyn Fn(Option<&str>, &Tokens) -> Option<f64>,
    ) -> Result<Vec<(PartKey, UsageGroup)>, IndexError> {
        let sql = |e| self.sqlite(e);
        let conn = self.conn();
        let mut parts: FxHashMap<PartKey, UsageGroup> = FxHashMap::default();
        const COLUMNS: &str = "SELECT scope, model, at_us, input_tokens, output_tokens,
            cache_creation_input_tokens, cache_creation_1h_input_tokens,
            cache_read_input_tokens, reasoning_output_tokens FROM usage";
        let windowed = filter.since.is_some() || filter.until.is_some();
        let mut st = if windowed {
            conn.prepare_cached(&format!(
                "{COLUMNS} WHERE (?1 IS NULL OR at_us >= ?1) AND (?2 IS NULL OR at_us <= ?2)"
            ))
        } else {
            conn.prepare_cached(COLUMNS)
        }
        .map_err(sql)?;
        let mut q = if windowed {
            st.query(params![filter.since, filter.until])
        } else {
            st.query([])
        }
        .map_err(sql)?;
        while let Some(r) = q.next().map_err(sql)? {
            let int = |i: usize| -> Result<Option<i64>, IndexError> {
                r.get_ref(i)
                    .and_then(|v| v.as_i64_or_null().map_err(Into::into))
                    .map_err(sql)
            };
            let Some(scope) = int(0)?.filter(|s| scopes.contains_key(s)) else {
                continue;
            };
            let tokens = crate::usage::tokens_at(r, 3).map_err(sql)?;
            let model = int(1)?.filter(|m| models.contains_key(m));
            let cost = price(
                model.and_then(|m| models.get(&m)).map(String::as_str),
                &tokens,
            );
            let day = int(2)?.map(|t| t.div_euclid(DAY_US));
            parts
                .entry((scope, model, day))
                .or_default()
                .add(&tokens, cost);
        }
        let mut parts: Vec<(PartKey, UsageGroup)> = parts.into_iter().collect();
        parts.sort_unstable_by_key(|p| p.0);
        Ok(parts)
    }

    /// The parts kept for `pricing` at `generation`, in key order; `None` when there
    /// are none (or they belong to another generation).
    fn stored_parts(
        &self,
        pricing: &str,
        generation: i64,
    ) -> Result<Option<Vec<(PartKey, UsageGroup)>>, IndexError> {
        let sql = |e| self.sqlite(e);
        let conn = self.conn();
        let kept: Option<i64> = conn
            .query_row(
                "SELECT generation FROM usage_parts_of WHERE pricing = ?1",
                [pricing],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?;
        if kept != Some(generation) {
            return Ok(None);
        }
        let mut st = conn
            .prepare_cached(
                "SELECT scope, model, day, input_tokens, output_tokens,
                        cache_creation_input_tokens, cache_creation_1h_input_tokens,
                        cache_read_input_tokens, reasoning_output_tokens, messages, cost_usd,
                        unpriced
                 FROM usage_parts WHERE pricing = ?1 ORDER BY scope, model, day",
            )
            .map_err(sql)?;
        let mut q = st.query([pricing]).map_err(sql)?;
        let mut parts = Vec::new();
        while let Some(r) = q.next().map_err(sql)? {
            let n = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64).map_err(sql);
            let key: PartKey = (
                r.get(0).map_err(sql)?,
                r.get(1).map_err(sql)?,
                r.get(2).map_err(sql)?,
            );
            let part = UsageGroup {
                keys: Vec::new(),
                tokens: crate::usage::tokens_at(r, 3).map_err(sql)?,
                messages: n(9)?,
                cost_usd: r.get(10).map_err(sql)?,
                unpriced: n(11)?,
            };
            parts.push((key, part));
        }
        Ok(Some(parts))
    }

    /// Keep `parts` for `pricing` at `generation` (replacing what was kept).
    fn store_parts(
        &self,
        pricing: &str,
        generation: i64,
        parts: &[(PartKey, UsageGroup)],
    ) -> rusqlite::Result<()> {
        let conn = self.conn();
        // Kept only if the write lock is free now: a query (a status line) never
        // waits on a backfill's transaction to store what it can recompute.
        conn.busy_timeout(std::time::Duration::ZERO)?;
        let began = conn.execute_batch("BEGIN IMMEDIATE");
        conn.busy_timeout(transcope_sqlite::BUSY_TIMEOUT)?;
        began?;
        let store = || -> rusqlite::Result<()> {
            // Written only if no request came since the parts were read.
            let now: i64 =
                conn.query_row("SELECT v FROM usage_meta WHERE k = 'generation'", [], |r| {
                    r.get(0)
                })?;
            if now != generation {
                return Ok(());
            }
            conn.execute("DELETE FROM usage_parts WHERE pricing = ?1", [pricing])?;
            let mut put = conn.prepare_cached(
                "INSERT INTO usage_parts (pricing, scope, model, day, input_tokens, output_tokens,
                     cache_creation_input_tokens, cache_creation_1h_input_tokens,
                     cache_read_input_tokens, reasoning_output_tokens, messages, cost_usd,
                     unpriced)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?;
            let n = |v: u64| v.min(i64::MAX as u64) as i64;
            for ((scope, model, day), g) in parts {
                let [a, b, c, d, e, f] = crate::usage::counts(&g.tokens);
                put.execute(params![
                    pricing,
                    scope,
                    model,
                    day,
                    a,
                    b,
                    c,
                    d,
                    e,
                    f,
                    n(g.messages),
                    g.cost_usd,
                    n(g.unpriced),
                ])?;
            }
            conn.execute(
                "INSERT INTO usage_parts_of (pricing, generation) VALUES (?1, ?2)
                 ON CONFLICT (pricing) DO UPDATE SET generation = excluded.generation",
                params![pricing, generation],
            )?;
            Ok(())
        };
        match store() {
            Ok(()) => conn.execute_batch("COMMIT"),
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

/// A request scope and its session's agent.
type Scoped = (ScopeRow, Option<String>);

/// A part's (scope, model, day): the ids of the scope and model, the day number.
type PartKey = (i64, Option<i64>, Option<i64>);
