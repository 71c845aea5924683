//! What a query's filters can name, and what to say when one names nothing: the
//! values the index knows (sessions, projects, worktrees, branches, tasks, marker
//! types), a project named by its repository's short name, the nearest values to one
//! that matched none, and the span of times a table holds.
//!
//! Every command that answers empty asks here, so "no such session" and "no project
//! by that id" are decided one way.

/// A value a filter names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    /// A scope-log key (sessions, and the ledger's writers).
    Session,
    /// A `project_id` (scope logs, the ledger's attributions, usage).
    Project,
    /// A worktree of some scope-log row.
    Worktree,
    /// A branch of some scope-log row.
    Branch,
    /// A task of some scope-log row, ledger row or request.
    Task,
    /// A marker type in the ledger.
    MarkerType,
}

impl Named {
    /// The name a person reads (`no <what> …`).
    pub fn what(self) -> &'static str {
        match self {
            Named::Session => "session",
            Named::Project => "project",
            Named::Worktree => "worktree",
            Named::Branch => "branch",
            Named::Task => "task",
            Named::MarkerType => "marker type",
        }
    }
}

/// Which table's times [`crate::Store::time_span`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// The requests' times (`usage`).
    Usage,
    /// The markers' record times (the ledger).
    Markers,
    /// The sessions' lives (transcript and scope-log times).
    Sessions,
}

/// What a `--project` value names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectMatch {
    /// A `project_id` the index knows, as given.
    Id(String),
    /// The one project whose repository's short name (the last part of its id, or the
    /// scope's `project` name) is the value given.
    Short(String),
    /// Several projects have that short name: these.
    Ambiguous(Vec<String>),
    /// None: the nearest the index knows (maybe none).
    Unknown(Vec<String>),
}

/// How many nearest values are offered at most.
pub const NEAREST: usize = 5;

/// The last part of a project id (`github.com/fixture/alpha` → `alpha`).
pub fn short_name(id: &str) -> &str {
    id.trim_end_matches('/').rsplit('/').next().unwrap_or(id)
}

/// What `given` names among the project ids `ids`, each also known by its short name
/// and by the names in `names` (`(id, scope's project name)`).
pub fn match_project(given: &str, ids: &[String], names: &[(String, String)]) -> ProjectMatch {
    if ids.iter().any(|i| i == given) {
        return ProjectMatch::Id(given.to_owned());
    }
    let mut by_short: Vec<String> = ids
        .iter()
        .filter(|i| short_name(i) == given)
        .chain(names.iter().filter(|(_, n)| n == given).map(|(i, _)| i))
        .filter(|i| ids.contains(i))
        .cloned()
        .collect();
    by_short.sort();
    by_short.dedup();
    match by_short.len() {
        0 => ProjectMatch::Unknown(nearest(given, ids.iter().map(String::as_str))),
        1 => ProjectMatch::Short(by_short.remove(0)),
        _ => ProjectMatch::Ambiguous(by_short),
    }
}

/// Up to [`NEAREST`] of `known` that look like `given`: those it is a part of (or
/// that are a part of it), ignoring case, first, then those a few edits away, closest
/// first.
pub fn nearest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let g = given.to_lowercase();
    if g.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(usize, usize, &str)> = known
        .into_iter()
        .filter_map(|k| {
            let kl = k.to_lowercase();
            if kl.contains(&g) || (kl.len() >= 3 && g.contains(&kl)) {
                return Some((0, kl.len().abs_diff(g.len()), k));
            }
            // Edits against the whole value and against its last part, whichever is
            // closer; near only when the edits are few for the length.
            let d = edits(&g, &kl).min(edits(&g, short_name(&kl)));
            (d <= g.chars().count().div_ceil(3)).then_some((1, d, k))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.2 == b.2);
    scored
        .into_iter()
        .take(NEAREST)
        .map(|(_, _, k)| k.to_owned())
        .collect()
}

/// The edits (insert, delete, replace, swap two neighbours) from `a` to `b`, by
/// characters (the optimal string alignment distance).
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two back (for a swap), one back, this one.
    let mut two: Vec<usize> = vec![0; b.len() + 1];
    let mut one: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (one[j] + 1).min(row[j - 1] + 1).min(one[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(two[j - 2] + 1);
            }
            row[j] = d;
        }
        std::mem::swap(&mut two, &mut one);
        std::mem::swap(&mut one, &mut row);
    }
    one[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_short_name_names_its_one_project_and_two_are_ambiguous() {
        let known = ids(&["github.com/fixture/alpha", "github.com/fixture/beta"]);
        assert_eq!(
            match_project("alpha", &known, &[]),
            ProjectMatch::Short("github.com/fixture/alpha".into())
        );
        assert_eq!(
            match_project("github.com/fixture/beta", &known, &[]),
            ProjectMatch::Id("github.com/fixture/beta".into())
        );
        let two = ids(&["github.com/a/alpha", "gitlab.com/b/alpha"]);
        assert_eq!(
            match_project("alpha", &two, &[]),
            ProjectMatch::Ambiguous(two.clone())
        );
        // The scope's own project name counts too.
        assert_eq!(
            match_project(
                "Alpha Svc",
                &known,
                &[(known[0].clone(), "Alpha Svc".into())]
            ),
            ProjectMatch::Short(known[0].clone())
        );
    }

    #[test]
    fn an_unknown_value_offers_the_values_that_look_like_it() {
        let known = ids(&["github.com/fixture/alpha", "github.com/fixture/beta"]);
        assert_eq!(
            match_project("alpah", &known, &[]),
            ProjectMatch::Unknown(ids(&["github.com/fixture/alpha"]))
        );
        assert_eq!(
            match_project("nope", &known, &[]),
            ProjectMatch::Unknown(vec![])
        );
        let keys = ["0f0e0d0c-0000-4000-8000-000000000001", "1b7c2e44-0d1f"];
        assert_eq!(nearest("0f0e0d0c", keys), ids(&[keys[0]]));
        assert_eq!(nearest("nope", keys), Vec::<String>::new());
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("tow", "two"), 1);
        assert_eq!(edits("", "ab"), 2);
    }
}
