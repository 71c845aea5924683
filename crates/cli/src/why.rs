//! Why a query answered nothing, said on stderr (the answer itself, an empty table or
//! no JSON line, is unchanged; the exit status stays 0), and `--project` read as a
//! project id or a repository's short name. What the index knows and what is near a
//! value are [`transcope_index::names`]'s; this module only words them.

use anyhow::Result;
use transcope_core::quote::quote;
use transcope_store::{Held, Named, Store};

use crate::exit;
use crate::table::{count, local_time};

/// `--project` as the filter takes it: the id given, or the one project whose short
/// name it is. Several projects of that short name is a usage error (`Err`, after
/// saying which); one the index does not know is kept as given (the answer is empty,
/// and [`say_empty`] says why).
pub(crate) fn project(
    index: &dyn Store,
    given: Option<String>,
) -> Result<Result<Option<String>, u8>> {
    match transcope_query::project(index, given) {
        Ok(p) => Ok(Ok(p)),
        Err(transcope_query::QueryError::AmbiguousProject { given, ids }) => {
            say!(
                "--project {}: {} projects have that name ({}); give the whole id",
                quote(&given),
                ids.len(),
                ids.join(", ")
            );
            Ok(Err(exit::USAGE))
        }
        Err(e) => Err(e.into()),
    }
}

/// [`project`] for each of `given` (the report's repeatable `--project`).
pub(crate) fn projects(index: &dyn Store, given: Vec<String>) -> Result<Result<Vec<String>, u8>> {
    let mut out = Vec::with_capacity(given.len());
    for g in given {
        match project(index, Some(g))? {
            Ok(p) => out.extend(p),
            Err(code) => return Ok(Err(code)),
        }
    }
    Ok(Ok(out))
}

/// What a query asked, for [`say_empty`].
pub(crate) struct Asked<'a> {
    /// What it lists, plural (`sessions`, `markers`, `usage`).
    pub(crate) things: &'static str,
    /// Whose times bound the window.
    pub(crate) held: Held,
    /// Each value a filter named.
    pub(crate) named: Vec<(Named, &'a str)>,
    /// The window.
    pub(crate) since: Option<i64>,
    pub(crate) until: Option<i64>,
    /// `--pending`.
    pub(crate) pending: bool,
}

impl<'a> Asked<'a> {
    pub(crate) fn new(things: &'static str, held: Held) -> Asked<'a> {
        Asked {
            things,
            held,
            named: Vec::new(),
            since: None,
            until: None,
            pending: false,
        }
    }

    /// With `value` named for `what`, when given.
    pub(crate) fn named(mut self, what: Named, value: Option<&'a str>) -> Asked<'a> {
        self.named.extend(value.map(|v| (what, v)));
        self
    }

    pub(crate) fn window(mut self, since: Option<i64>, until: Option<i64>) -> Asked<'a> {
        self.since = since;
        self.until = until;
        self
    }
}

/// A time for a person (local, as the tables show it).
fn shown(us: i64) -> String {
    local_time(&transcope_core::Instant::from_unix_micros(us).to_python_isoformat())
}

/// "no session nope" and the values near it, or `None` when the index knows it.
fn unknown(index: &dyn Store, what: Named, value: &str) -> Result<Option<String>> {
    let known = index.known(what)?;
    if known.binary_search_by(|k| k.as_str().cmp(value)).is_ok() {
        return Ok(None);
    }
    let near = transcope_index::names::nearest(value, known.iter().map(String::as_str));
    let mut line = match what {
        Named::Session => format!("no such session: {}", quote(value)),
        Named::Project => format!("no project by that id: {}", quote(value)),
        _ => format!("no {} {} in the index", what.what(), quote(value)),
    };
    if near.is_empty() {
        let listed = match what {
            _ if known.is_empty() => String::new(),
            Named::Session => ": `transcope sessions` lists them".to_owned(),
            _ if known.len() <= transcope_index::names::NEAREST => {
                format!(": {}", known.join(", "))
            }
            _ => String::new(),
        };
        line.push_str(&format!(
            " (the index knows {}{listed})",
            count(known.len() as u64, what.what())
        ));
    } else {
        line.push_str(&format!("; nearest: {}", near.join(", ")));
    }
    Ok(Some(line))
}

/// Say on stderr why `asked` found nothing: the first of a value named that the
/// index does not know, a window outside what it holds, nothing pending, or the
/// filters together.
pub(crate) fn say_empty(index: &dyn Store, asked: &Asked<'_>) -> Result<()> {
    say!("{}", why_empty(index, asked)?);
    Ok(())
}

fn why_empty(index: &dyn Store, asked: &Asked<'_>) -> Result<String> {
    let span = index.time_span(asked.held)?;
    let what = match asked.held {
        Held::Usage => "usage",
        Held::Markers => "markers",
        Held::Sessions => "sessions",
    };
    if span.is_none() && !index_has_any(index, asked.held)? {
        return Ok(format!(
            "the index holds no {what} yet (a hook's Stop, `transcope backfill` or a query's sync records them)"
        ));
    }
    for &(named, value) in &asked.named {
        if let Some(line) = unknown(index, named, value)? {
            return Ok(line);
        }
    }
    if asked.since.is_some() || asked.until.is_some() {
        let window = format!(
            "{} to {}",
            asked.since.map_or("the start".to_owned(), shown),
            asked.until.map_or("now".to_owned(), shown)
        );
        let outside = span.is_none_or(|(lo, hi)| {
            asked.since.is_some_and(|s| s > hi) || asked.until.is_some_and(|u| u < lo)
        });
        if outside || asked.named.is_empty() && !asked.pending {
            let held = span.map_or(String::new(), |(lo, hi)| {
                format!(
                    "; the index holds {what} from {} to {}",
                    shown(lo),
                    shown(hi)
                )
            });
            return Ok(format!("nothing in the window ({window}){held}"));
        }
    }
    if asked.pending && asked.named.is_empty() && asked.since.is_none() && asked.until.is_none() {
        return Ok("no marker is pending: every one found has been delivered".to_owned());
    }
    Ok(format!("no {} match these filters together", asked.things))
}

/// Whether `held`'s table has any row (a row without a time included).
fn index_has_any(index: &dyn Store, held: Held) -> Result<bool> {
    Ok(match held {
        Held::Sessions => !index.known(Named::Session)?.is_empty(),
        Held::Markers => !index.known(Named::MarkerType)?.is_empty(),
        Held::Usage => false,
    })
}
