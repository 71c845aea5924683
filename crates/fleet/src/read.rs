//! The fleet as a [`Store`]: the same questions as the local index, asked of every
//! machine's rows, with the same rules ([`transcope_store`]) and the same answers for
//! the same rows.

use std::collections::HashMap;

use postgres::types::ToSql;
use serde_json::Value;
use transcope_core::Tokens;
use transcope_store::query::{log_row, matches, within, Transition};
use transcope_store::{
    group, Held, InForce, LedgerFilter, LedgerRow, Named, Part, Pricer, ScopeRow, SessionFilter,
    SessionInfo, State, Store, StoreError, TimelineItem, UsageFilter, UsageGroup, UsageKey, DAY_US,
};

use crate::{Fleet, FleetError};

impl From<FleetError> for StoreError {
    fn from(e: FleetError) -> StoreError {
        StoreError::new(e)
    }
}

type P<'a> = &'a (dyn ToSql + Sync);

/// A part as read: scope, model, day, machine, agent, sums.
type OwnedPart = (
    ScopeRow,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    UsageGroup,
);

/// The ledger's columns, in [`ledger_row`]'s order.
const LEDGER_COLUMNS: &str = "idempotency_key, session, type, content, attrs, at, attribution,
    project_id, worktree, branch, task, state, body, origin, detail, machine";

fn ledger_row(r: &postgres::Row, names: &HashMap<String, String>) -> LedgerRow {
    let json =
        |i: usize| serde_json::from_str::<Value>(&r.get::<_, String>(i)).unwrap_or(Value::Null);
    let machine: String = r.get(15);
    LedgerRow {
        idempotency_key: r.get(0),
        session: r.get(1),
        kind: r.get(2),
        content: r.get(3),
        attrs: json(4),
        at: r.get(5),
        attribution: r.get(6),
        project_id: r.get(7),
        worktree: r.get(8),
        branch: r.get(9),
        task: r.get(10),
        state: State::parse(&r.get::<_, String>(11)).unwrap_or(State::Pending),
        body: json(12),
        origin: r.get(13),
        detail: r.get(14),
        machine: Some(names.get(&machine).cloned().unwrap_or(machine)),
    }
}

/// Which of `thresholds` a request's prompt (input, cache writes and reads; its
/// columns prefixed by `prefix`) is above, counted: its price tier.
pub(crate) fn tier_expr(prefix: &str, thresholds: &[u64]) -> String {
    if thresholds.is_empty() {
        return "0".to_owned();
    }
    let p = format!(
        "({prefix}input_tokens + {prefix}cache_creation_input_tokens + {prefix}cache_read_input_tokens)"
    );
    thresholds
        .iter()
        .map(|t| format!("({p} > {t})::int"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The UTC day number of a time column (floored, in integers).
pub(crate) fn day_of(column: &str) -> String {
    format!("(({column} - ((({column} % {DAY_US}) + {DAY_US}) % {DAY_US})) / {DAY_US})")
}

/// `fleet_meta.thresholds` as numbers (comma-separated, ascending).
pub(crate) fn parse_thresholds(v: &str) -> Vec<u64> {
    v.split(',').filter_map(|t| t.trim().parse().ok()).collect()
}

impl Fleet {
    /// The tier thresholds the fleet's parts are kept by (`None`: no push yet).
    fn thresholds(&self) -> Result<Option<Vec<u64>>, FleetError> {
        Ok(self
            .rows("SELECT v FROM fleet_meta WHERE k = 'thresholds'", &[])?
            .first()
            .map(|r| parse_thresholds(&r.get::<_, String>(0))))
    }

    /// Each row of `sql` handed to `each` as the server sends it, until it returns
    /// `false`: a long session's rows are never held whole.
    fn each_row(
        &self,
        sql: &str,
        params: &[P<'_>],
        mut each: impl FnMut(&postgres::Row) -> bool,
    ) -> Result<(), FleetError> {
        use postgres::fallible_iterator::FallibleIterator;
        let mut client = self.client.borrow_mut();
        let mut rows = client
            .query_raw(sql, params.iter().copied())
            .map_err(|e| self.query_error(e))?;
        while let Some(r) = rows.next().map_err(|e| self.query_error(e))? {
            if !each(&r) {
                break;
            }
        }
        Ok(())
    }

    fn rows(&self, sql: &str, params: &[P<'_>]) -> Result<Vec<postgres::Row>, FleetError> {
        self.client
            .borrow_mut()
            .query(sql, params)
            .map_err(|e| self.query_error(e))
    }

    /// Machine names by id.
    fn names(&self) -> Result<HashMap<String, String>, FleetError> {
        Ok(self
            .rows("SELECT machine_id, name FROM machines", &[])?
            .into_iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    fn fleet_sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionInfo>, FleetError> {
        let names = self.names()?;
        let heads = self.rows(
            "SELECT session, parent, agent, transcript, first_at, first_us, last_at, last_us, machine
             FROM sessions",
            &[],
        )?;
        let spans: HashMap<String, (u64, Option<i64>, Option<i64>)> = self
            .rows(
                "SELECT session, count(*), min(at_us), max(at_us) FROM transitions GROUP BY session",
                &[],
            )?
            .into_iter()
            .map(|r| (r.get(0), (r.get::<_, i64>(1) as u64, r.get(2), r.get(3))))
            .collect();
        let markers: HashMap<String, u64> = self
            .rows(
                "SELECT session, count(*) FROM markers WHERE session IS NOT NULL GROUP BY session",
                &[],
            )?
            .into_iter()
            .map(|r| (r.get(0), r.get::<_, i64>(1) as u64))
            .collect();
        let mut projects: HashMap<String, Vec<String>> = HashMap::new();
        for r in self.rows(
            "SELECT session, project_id FROM transitions WHERE project_id <> ''
             GROUP BY session, project_id ORDER BY session, min(seq)",
            &[],
        )? {
            projects.entry(r.get(0)).or_default().push(r.get(1));
        }
        // The log's first row at its earliest time and last at its latest, for a
        // session without a transcript's times.
        let ends = |order: &str| -> Result<HashMap<String, String>, FleetError> {
            Ok(self
                .rows(
                    &format!(
                        "SELECT DISTINCT ON (session) session, at FROM transitions
                         WHERE at_us IS NOT NULL ORDER BY session, {order}"
                    ),
                    &[],
                )?
                .into_iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect())
        };
        let firsts = ends("at_us, seq")?;
        let lasts = ends("at_us DESC, seq DESC")?;
        // A scoped filter reads the rows of the sessions that have a row matching it
        // (a session without one cannot match), each session's in file order.
        let mut logs: HashMap<String, Vec<Transition>> = HashMap::new();
        if filter.scoped() {
            let rows = self.rows(
                "SELECT session, seq, at_us, project_id, worktree, branch, task FROM transitions
                 WHERE session IN (SELECT session FROM transitions
                     WHERE ($1::text IS NULL OR project_id = $1) AND ($2::text IS NULL OR worktree = $2)
                       AND ($3::text IS NULL OR branch = $3) AND ($4::text IS NULL OR task = $4))
                 ORDER BY session, seq",
                &[&filter.project, &filter.worktree, &filter.branch, &filter.task],
            )?;
            for r in rows {
                logs.entry(r.get(0)).or_default().push(Transition {
                    seq: r.get(1),
                    at_us: r.get(2),
                    fields: [r.get(3), r.get(4), r.get(5), r.get(6)],
                });
            }
        }
        let mut out = Vec::new();
        for h in heads {
            let session: String = h.get(0);
            if !filter.keeps_agent(h.get::<_, Option<&str>>(2)) {
                continue;
            }
            let (first_us, last_us): (Option<i64>, Option<i64>) = (h.get(5), h.get(7));
            let (count, log_first, log_last) = spans.get(&session).copied().unwrap_or_default();
            let matched = if filter.scoped() {
                logs.get(&session)
                    .is_some_and(|log| matches(log, filter, first_us, last_us))
            } else {
                within(log_first, log_last, filter, first_us, last_us)
            };
            if !matched {
                continue;
            }
            let first_at = h
                .get::<_, Option<String>>(4)
                .or_else(|| log_first.and_then(|_| firsts.get(&session).cloned()));
            let last_at = h
                .get::<_, Option<String>>(6)
                .or_else(|| log_last.and_then(|_| lasts.get(&session).cloned()));
            let machine: String = h.get(8);
            out.push((
                first_us.or(log_first),
                SessionInfo {
                    markers: markers.get(&session).copied().unwrap_or(0),
                    projects: projects.remove(&session).unwrap_or_default(),
                    parent: h.get(1),
                    agent: h.get(2),
                    transcript: h.get(3),
                    first_at,
                    last_at,
                    transitions: count,
                    machine: Some(names.get(&machine).cloned().unwrap_or(machine)),
                    session,
                },
            ));
        }
        out.sort_by(|a, b| {
            (a.0.is_none(), a.0, &a.1.session).cmp(&(b.0.is_none(), b.0, &b.1.session))
        });
        Ok(out.into_iter().map(|(_, s)| s).collect())
    }

    fn fleet_ledger(&self, f: &LedgerFilter) -> Result<Vec<LedgerRow>, FleetError> {
        let names = self.names()?;
        let limit: Option<i64> = f.limit.map(|l| l.min(i64::MAX as usize) as i64);
        let origin = f.origin.map(|o| o.as_str());
        let rows = self.rows(
            &format!(
                "SELECT {LEDGER_COLUMNS} FROM markers
                 WHERE ($1::text IS NULL OR project_id = $1) AND ($2::text IS NULL OR task = $2)
                   AND ($3::text IS NULL OR session = $3) AND ($4::text IS NULL OR type = $4)
                   AND ($5::bigint IS NULL OR at_us >= $5) AND ($6::bigint IS NULL OR at_us <= $6)
                   AND (NOT $7 OR state = 'pending') AND ($8::text IS NULL OR origin = $8)
                   AND ($10::text IS NULL OR idempotency_key = $10)
                   AND ($11::text IS NULL OR branch = $11)
                 ORDER BY ord LIMIT $9"
            ),
            &[
                &f.project, &f.task, &f.session, &f.kind, &f.since, &f.until, &f.pending, &origin,
                &limit, &f.key, &f.branch,
            ],
        )?;
        Ok(rows.iter().map(|r| ledger_row(r, &names)).collect())
    }

    fn fleet_timeline(
        &self,
        session: &str,
        each: &mut dyn FnMut(TimelineItem) -> bool,
    ) -> Result<(), FleetError> {
        let names = self.names()?;
        type Key = (bool, i64, u8, i64);
        // The markers whole (a session's are few), the transitions read in order.
        let mut markers: Vec<(Key, LedgerRow)> = self
            .rows(
                &format!(
                    "SELECT {LEDGER_COLUMNS}, at_us, ord FROM markers WHERE session = $1
                     ORDER BY at_us IS NULL, at_us, ord"
                ),
                &[&session],
            )?
            .iter()
            .map(|r| {
                let at: Option<i64> = r.get(16);
                (
                    (at.is_none(), at.unwrap_or(0), 1, r.get(17)),
                    ledger_row(r, &names),
                )
            })
            .collect();
        markers.reverse();
        let mut stopped = false;
        self.each_row(
            "SELECT at_us, seq, at, line FROM transitions WHERE session = $1
             ORDER BY at_us IS NULL, at_us, seq",
            &[&session],
            |r| {
                let at: Option<i64> = r.get(0);
                let key: Key = (at.is_none(), at.unwrap_or(0), 0, r.get(1));
                while markers.last().is_some_and(|(k, _)| *k < key) {
                    let (_, m) = markers.pop().expect("a marker");
                    if !each(TimelineItem::Marker(Box::new(m))) {
                        stopped = true;
                        return false;
                    }
                }
                let line: String = r.get(3);
                let scope = transcope_core::Scope::from_json_map(&log_row(&line)).to_json_map();
                stopped = !each(TimelineItem::Transition {
                    at: r.get(2),
                    scope,
                });
                !stopped
            },
        )?;
        if stopped {
            return Ok(());
        }
        while let Some((_, m)) = markers.pop() {
            if !each(TimelineItem::Marker(Box::new(m))) {
                return Ok(());
            }
        }
        Ok(())
    }

    fn fleet_usage(
        &self,
        by: &[UsageKey],
        filter: &UsageFilter,
        prices: &dyn Pricer,
    ) -> Result<Vec<UsageGroup>, FleetError> {
        // Requests summed by the server by scope, model, day, price tier (which
        // thresholds their prompt is above) and, when asked, machine; each sum
        // priced at its tier. Without a time window, and with the fleet's own tier
        // thresholds, from the parts every push keeps (schema docs); else from every
        // request in the window.
        let thresholds = prices.thresholds();
        let windowed = filter.since.is_some() || filter.until.is_some();
        let parts = !windowed && self.thresholds()?.as_deref() == Some(&thresholds[..]);
        // Every column of the table read is `u.`; a session's agent is its row in
        // `sessions`, joined only when asked for.
        let (table, model, day_of, tier, count) = if parts {
            (
                "usage_parts",
                "NULLIF(u.model, '')".to_owned(),
                format!("NULLIF(u.day, {})", i64::MIN),
                "u.tier".to_owned(),
                "sum(u.requests)",
            )
        } else {
            (
                "usage",
                "u.model".to_owned(),
                day_of("u.at_us"),
                tier_expr("u.", &thresholds),
                "count(*)",
            )
        };
        // Only the columns the groups need: the filters are applied by the server.
        let column = |k: &UsageKey| match k {
            UsageKey::Session => "u.session",
            UsageKey::RootSession => "u.root_session",
            UsageKey::Project => "u.project_id",
            UsageKey::Worktree => "u.worktree",
            UsageKey::Branch => "u.branch",
            UsageKey::Task => "u.task",
            UsageKey::Model => "u.model",
            UsageKey::Day => "u.day",
            UsageKey::Machine => "u.machine",
            UsageKey::Agent => "s.agent",
        };
        let wanted = |k: UsageKey| by.contains(&k);
        let pick = |k: UsageKey| {
            if wanted(k) {
                column(&k)
            } else {
                "NULL::text"
            }
        };
        let day = if wanted(UsageKey::Day) {
            day_of
        } else {
            "NULL::bigint".to_owned()
        };
        let from = if wanted(UsageKey::Agent) {
            format!("{table} u LEFT JOIN sessions s ON s.session = u.session")
        } else {
            format!("{table} u")
        };
        let window = if parts {
            "$1::bigint IS NULL AND $2::bigint IS NULL"
        } else {
            "($1::bigint IS NULL OR u.at_us >= $1) AND ($2::bigint IS NULL OR u.at_us <= $2)"
        };
        let rows = self.rows(
            &format!(
                "SELECT {}, {}, {}, {}, {}, {}, {model}, {day}, {}, {}, {tier},
                        sum(u.input_tokens)::bigint, sum(u.output_tokens)::bigint,
                        sum(u.cache_creation_input_tokens)::bigint,
                        sum(u.cache_creation_1h_input_tokens)::bigint,
                        sum(u.cache_read_input_tokens)::bigint,
                        sum(u.reasoning_output_tokens)::bigint,
                        {count}::bigint
                 FROM {from}
                 WHERE {window}
                   AND ($3::text IS NULL OR u.session = $3) AND ($4::text IS NULL OR u.task = $4)
                   AND ($5::text IS NULL OR u.project_id = $5)
                 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
                 HAVING {count} > 0
                 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11",
                pick(UsageKey::Session),
                pick(UsageKey::RootSession),
                pick(UsageKey::Project),
                pick(UsageKey::Worktree),
                pick(UsageKey::Branch),
                pick(UsageKey::Task),
                pick(UsageKey::Machine),
                pick(UsageKey::Agent),
            ),
            &[
                &filter.since,
                &filter.until,
                &filter.session,
                &filter.task,
                &filter.project,
            ],
        )?;
        let by_machine = wanted(UsageKey::Machine);
        let names = if by_machine {
            self.names()?
        } else {
            HashMap::new()
        };
        let mut parts: Vec<OwnedPart> = Vec::with_capacity(rows.len());
        for r in rows {
            let scope: ScopeRow = [r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)];
            let model: Option<String> = r.get(6);
            let day: Option<i64> = r.get(7);
            let machine: Option<String> = r.get(8);
            let agent: Option<String> = r.get(9);
            let tier: i32 = r.get(10);
            let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
            let tokens = Tokens::from_counts([n(11), n(12), n(13), n(14), n(15), n(16)]);
            let count = n(17);
            // A prompt that selects this tier: just above the tier-th threshold.
            let at = match tier {
                0 => 0,
                k => thresholds[(k as usize - 1).min(thresholds.len() - 1)] + 1,
            };
            let cost = prices.cost_in_tier(model.as_deref(), &tokens, at);
            let sums = UsageGroup {
                keys: Vec::new(),
                tokens,
                messages: count,
                cost_usd: cost,
                unpriced: if cost.is_some() { 0 } else { count },
            };
            let machine = machine.map(|m| names.get(&m).cloned().unwrap_or(m));
            parts.push((scope, model, day, machine, agent, sums));
        }
        // The filters were the server's: every part is wanted.
        let all = UsageFilter::default();
        Ok(group(
            parts
                .iter()
                .map(|(scope, model, day, machine, agent, sums)| Part {
                    scope,
                    model: model.as_deref(),
                    day: *day,
                    machine: machine.as_deref(),
                    agent: agent.as_deref(),
                    sums,
                }),
            by,
            &all,
        ))
    }
}

impl Store for Fleet {
    fn sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionInfo>, StoreError> {
        Ok(self.fleet_sessions(filter)?)
    }

    fn timeline_each(
        &self,
        session: &str,
        each: &mut dyn FnMut(TimelineItem) -> bool,
    ) -> Result<(), StoreError> {
        Ok(self.fleet_timeline(session, each)?)
    }

    fn each_transition(
        &self,
        session: &str,
        each: &mut dyn FnMut(Option<i64>, [String; 6]),
    ) -> Result<(), StoreError> {
        Ok(self.each_row(
            "SELECT at_us, project_id, project, worktree, branch, task, cwd
             FROM transitions WHERE session = $1 ORDER BY seq",
            &[&session],
            |r| {
                each(
                    r.get(0),
                    [r.get(1), r.get(2), r.get(3), r.get(4), r.get(5), r.get(6)],
                );
                true
            },
        )?)
    }

    fn ledger(&self, filter: &LedgerFilter) -> Result<Vec<LedgerRow>, StoreError> {
        Ok(self.fleet_ledger(filter)?)
    }

    fn usage(
        &self,
        by: &[UsageKey],
        filter: &UsageFilter,
        prices: &dyn Pricer,
    ) -> Result<Vec<UsageGroup>, StoreError> {
        Ok(self.fleet_usage(by, filter, prices)?)
    }

    fn in_force(&self, session: &str, at_us: i64) -> Result<InForce, StoreError> {
        let rows: i64 = self
            .rows(
                "SELECT count(*) FROM transitions WHERE session = $1",
                &[&session],
            )?
            .first()
            .map_or(0, |r| r.get(0));
        let found = self.rows(
            "SELECT seq, line FROM transitions WHERE session = $1 AND at_us <= $2
             ORDER BY seq DESC LIMIT 1",
            &[&session, &at_us],
        )?;
        let Some(r) = found.first() else {
            return Ok(InForce {
                row: None,
                rows: rows as usize,
                later_but_earlier: 0,
            });
        };
        let seq: i64 = r.get(0);
        let later: i64 = self
            .rows(
                "SELECT count(*) FROM transitions WHERE session = $1 AND seq < $2 AND at_us > $3",
                &[&session, &seq, &at_us],
            )?
            .first()
            .map_or(0, |r| r.get(0));
        let place: i64 = self
            .rows(
                "SELECT count(*) FROM transitions WHERE session = $1 AND seq < $2",
                &[&session, &seq],
            )?
            .first()
            .map_or(0, |r| r.get(0));
        Ok(InForce {
            row: Some((place as usize, log_row(&r.get::<_, String>(1)))),
            rows: rows as usize,
            later_but_earlier: later as usize,
        })
    }

    fn known(&self, what: Named) -> Result<Vec<String>, StoreError> {
        let sql = match what {
            Named::Session => {
                "SELECT session FROM sessions UNION SELECT DISTINCT session FROM transitions"
            }
            Named::Project => {
                "SELECT project_id FROM transitions WHERE project_id <> ''
                 UNION SELECT project_id FROM markers WHERE project_id IS NOT NULL AND project_id <> ''
                 UNION SELECT project_id FROM usage WHERE project_id <> ''"
            }
            Named::Worktree => "SELECT DISTINCT worktree FROM transitions WHERE worktree <> ''",
            Named::Branch => "SELECT DISTINCT branch FROM transitions WHERE branch <> ''",
            Named::Task => {
                "SELECT task FROM transitions WHERE task <> ''
                 UNION SELECT task FROM markers WHERE task IS NOT NULL AND task <> ''
                 UNION SELECT task FROM usage WHERE task <> ''"
            }
            Named::MarkerType => "SELECT DISTINCT type FROM markers",
        };
        let mut all: Vec<String> = self.rows(sql, &[])?.iter().map(|r| r.get(0)).collect();
        all.sort();
        all.dedup();
        Ok(all)
    }

    fn project_names(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .rows(
                "SELECT DISTINCT project_id, project FROM transitions
                 WHERE project <> '' AND project_id <> ''",
                &[],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    fn time_span(&self, held: Held) -> Result<Option<(i64, i64)>, StoreError> {
        let sql = match held {
            Held::Usage => "SELECT min(at_us), max(at_us) FROM usage",
            Held::Markers => "SELECT min(at_us), max(at_us) FROM markers",
            Held::Sessions => {
                "SELECT min(lo), max(hi) FROM (
                     SELECT min(first_us) AS lo, max(last_us) AS hi FROM sessions
                     UNION ALL SELECT min(at_us), max(at_us) FROM transitions) s"
            }
        };
        let rows = self.rows(sql, &[])?;
        Ok(rows.first().and_then(|r| {
            match (r.get::<_, Option<i64>>(0), r.get::<_, Option<i64>>(1)) {
                (Some(lo), Some(hi)) => Some((lo, hi)),
                _ => None,
            }
        }))
    }
}
