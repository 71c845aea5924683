//! The conformance kit for stores: every question a command asks, put to two
//! [`Store`]s holding the same rows (the local index, and a fleet it was pushed to),
//! with the answers required equal.
//!
//! The questions are made from what the stores know: every project, worktree,
//! branch, task, session and marker type as a filter; windows cut at the first,
//! middle and last recorded times; every session's timeline, rows and the row in
//! force at each of its rows' times and around them; usage by every key and by the
//! pairs people ask for, whole and windowed. A row's `machine` (a fleet names one, one
//! machine's index does not) is left out of the comparison; a cost may differ by
//! rounding (a fleet prices each tier's sum at once, the index each request), up to
//! a billionth of it.

use transcope_store::{
    Held, LedgerFilter, Named, Pricer, SessionFilter, Store, TimelineItem, UsageFilter, UsageGroup,
    UsageKey,
};

/// How many questions were asked, and how many answers were not empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Asked {
    /// Questions put to both stores.
    pub questions: usize,
    /// Of them, answered with something.
    pub answered: usize,
}

fn unwrap<T>(what: &str, side: &str, r: Result<T, transcope_store::StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{what}: the {side} store failed: {e}"))
}

macro_rules! same {
    ($asked:ident, $what:expr, $a:expr, $b:expr) => {{
        let what = $what;
        let a = unwrap(&what, "first", $a);
        let b = unwrap(&what, "second", $b);
        assert_eq!(a, b, "{what}: the stores answer differently");
        $asked.questions += 1;
        a
    }};
}

fn windows(span: Option<(i64, i64)>) -> Vec<(Option<i64>, Option<i64>)> {
    let mut out = vec![(None, None)];
    if let Some((lo, hi)) = span {
        let mid = lo + (hi - lo) / 2;
        out.extend([
            (Some(lo), Some(mid)),
            (Some(mid), None),
            (None, Some(mid)),
            (Some(hi), Some(hi)),
            (Some(hi + 1), None),
        ]);
    }
    out
}

/// Ask `a` and `b` everything (module docs), pricing by `prices`; panics at the first
/// answer that differs, naming the question.
pub fn conform(a: &dyn Store, b: &dyn Store, prices: &dyn Pricer) -> Asked {
    let mut asked = Asked::default();
    let named = [
        Named::Session,
        Named::Project,
        Named::Worktree,
        Named::Branch,
        Named::Task,
        Named::MarkerType,
    ];
    let mut known = Vec::new();
    for n in named {
        let k = same!(asked, format!("known {n:?}"), a.known(n), b.known(n));
        asked.answered += usize::from(!k.is_empty());
        known.push(k);
    }
    let [sessions, projects, worktrees, branches, tasks, kinds] =
        <[Vec<String>; 6]>::try_from(known).expect("six lists");
    let sorted = |mut v: Vec<(String, String)>| {
        v.sort();
        v
    };
    same!(
        asked,
        "project names",
        a.project_names().map(sorted),
        b.project_names().map(sorted)
    );
    for p in projects.iter().take(20) {
        let short = transcope_store::short_name(p).to_owned();
        same!(
            asked,
            format!("match project {short:?}"),
            a.match_project(&short),
            b.match_project(&short)
        );
        let typo = format!("{short}x");
        same!(
            asked,
            format!("match project {typo:?}"),
            a.match_project(&typo),
            b.match_project(&typo)
        );
    }
    let mut spans = Vec::new();
    for h in [Held::Sessions, Held::Markers, Held::Usage] {
        spans.push(same!(
            asked,
            format!("time span {h:?}"),
            a.time_span(h),
            b.time_span(h)
        ));
    }

    // Sessions, by every filter alone, each in every window.
    let strip_s = |mut v: Vec<transcope_store::SessionInfo>| {
        v.iter_mut().for_each(|s| s.machine = None);
        v
    };
    let mut filters = vec![SessionFilter::default()];
    let pick = |v: &[String]| v.iter().take(12).cloned().collect::<Vec<_>>();
    for p in pick(&projects) {
        filters.push(SessionFilter {
            project: Some(p),
            ..Default::default()
        });
    }
    for w in pick(&worktrees) {
        filters.push(SessionFilter {
            worktree: Some(w),
            ..Default::default()
        });
    }
    for br in pick(&branches) {
        filters.push(SessionFilter {
            branch: Some(br),
            ..Default::default()
        });
    }
    for t in pick(&tasks) {
        filters.push(SessionFilter {
            task: Some(t),
            ..Default::default()
        });
    }
    // Each agent's sessions (a failed read is asked again below, and fails there).
    let agents: std::collections::BTreeSet<Option<String>> = a
        .sessions(&SessionFilter::default())
        .unwrap_or_default()
        .into_iter()
        .map(|s| s.agent)
        .collect();
    for agent in agents.into_iter().flatten() {
        filters.push(SessionFilter {
            agent: Some(agent),
            ..Default::default()
        });
    }
    if let (Some(p), Some(br)) = (projects.first(), branches.first()) {
        filters.push(SessionFilter {
            project: Some(p.clone()),
            branch: Some(br.clone()),
            ..Default::default()
        });
    }
    for f in &filters {
        for (since, until) in windows(spans[0]) {
            let f = SessionFilter {
                since,
                until,
                ..f.clone()
            };
            let got = same!(
                asked,
                format!("sessions {f:?}"),
                a.sessions(&f).map(strip_s),
                b.sessions(&f).map(strip_s)
            );
            asked.answered += usize::from(!got.is_empty());
        }
    }

    // Every session's timeline, rows in file order, and the row in force around them.
    let strip_t = |mut v: Vec<TimelineItem>| {
        for i in &mut v {
            if let TimelineItem::Marker(m) = i {
                m.machine = None;
            }
        }
        v
    };
    for s in &sessions {
        let t = same!(
            asked,
            format!("timeline of {s}"),
            a.timeline(s).map(strip_t),
            b.timeline(s).map(strip_t)
        );
        asked.answered += usize::from(!t.is_empty());
        let rows = |st: &dyn Store| {
            let mut out = Vec::new();
            st.each_transition(s, &mut |at, f| out.push((at, f)))
                .map(|()| out)
        };
        let rows = same!(asked, format!("rows of {s}"), rows(a), rows(b));
        let mut instants: Vec<i64> = vec![0, i64::MAX / 2];
        for (at, _) in &rows {
            if let Some(t) = at {
                instants.extend([*t - 1, *t, *t + 1]);
            }
        }
        instants.sort_unstable();
        instants.dedup();
        for t in instants.into_iter().take(60) {
            same!(
                asked,
                format!("in force in {s} at {t}"),
                a.in_force(s, t),
                b.in_force(s, t)
            );
        }
    }
    same!(
        asked,
        "timeline of no session",
        a.timeline("no-such-session"),
        b.timeline("no-such-session")
    );

    // The ledger.
    let strip_l = |mut v: Vec<transcope_store::LedgerRow>| {
        v.iter_mut().for_each(|r| r.machine = None);
        v
    };
    let mut lf = vec![
        LedgerFilter::default(),
        LedgerFilter {
            pending: true,
            ..Default::default()
        },
        LedgerFilter {
            limit: Some(3),
            ..Default::default()
        },
    ];
    for p in pick(&projects) {
        lf.push(LedgerFilter {
            project: Some(p),
            ..Default::default()
        });
    }
    for t in pick(&tasks) {
        lf.push(LedgerFilter {
            task: Some(t),
            ..Default::default()
        });
    }
    for br in pick(&branches) {
        lf.push(LedgerFilter {
            branch: Some(br),
            ..Default::default()
        });
    }
    for k in pick(&kinds) {
        lf.push(LedgerFilter {
            kind: Some(k),
            ..Default::default()
        });
    }
    for s in sessions.iter().take(20) {
        lf.push(LedgerFilter {
            session: Some(s.clone()),
            ..Default::default()
        });
    }
    for f in &lf {
        for (since, until) in windows(spans[1]) {
            let f = LedgerFilter {
                since,
                until,
                ..f.clone()
            };
            let got = same!(
                asked,
                format!("ledger {f:?}"),
                a.ledger(&f).map(strip_l),
                b.ledger(&f).map(strip_l)
            );
            asked.answered += usize::from(!got.is_empty());
        }
    }

    // Usage.
    use UsageKey as K;
    let bys: Vec<Vec<UsageKey>> = vec![
        vec![],
        vec![K::Project],
        vec![K::Worktree],
        vec![K::Branch],
        vec![K::Task],
        vec![K::Session],
        vec![K::RootSession],
        vec![K::Model],
        vec![K::Day],
        vec![K::Project, K::Task],
        vec![K::Project, K::Branch, K::Model],
        vec![K::Session, K::Model, K::Day],
        vec![K::Agent],
        vec![K::Agent, K::Model],
        vec![K::Project, K::Agent, K::Day],
    ];
    let mut uf = vec![UsageFilter::default()];
    for p in projects.iter().take(4) {
        uf.push(UsageFilter {
            project: Some(p.clone()),
            ..Default::default()
        });
    }
    for t in tasks.iter().take(3) {
        uf.push(UsageFilter {
            task: Some(t.clone()),
            ..Default::default()
        });
    }
    for s in sessions.iter().take(3) {
        uf.push(UsageFilter {
            session: Some(s.clone()),
            ..Default::default()
        });
    }
    for by in &bys {
        for f in &uf {
            for (since, until) in windows(spans[2]) {
                let f = UsageFilter {
                    since,
                    until,
                    ..f.clone()
                };
                let what = format!("usage by {by:?} {f:?}");
                let x = unwrap(&what, "first", a.usage(by, &f, prices));
                let y = unwrap(&what, "second", b.usage(by, &f, prices));
                same_usage(&what, &x, &y);
                asked.questions += 1;
                asked.answered += usize::from(!x.is_empty());
            }
        }
    }
    asked
}

/// Equal groups: keys, counts exactly; costs up to a billionth (rounding).
fn same_usage(what: &str, x: &[UsageGroup], y: &[UsageGroup]) {
    assert_eq!(
        x.len(),
        y.len(),
        "{what}: {} groups against {}:\n{x:?}\n{y:?}",
        x.len(),
        y.len()
    );
    for (g, h) in x.iter().zip(y) {
        assert_eq!(
            (&g.keys, &g.tokens, g.messages, g.unpriced),
            (&h.keys, &h.tokens, h.messages, h.unpriced),
            "{what}: the stores answer differently"
        );
        match (g.cost_usd, h.cost_usd) {
            (Some(c), Some(d)) => assert!(
                (c - d).abs() <= 1e-9 * c.abs().max(d.abs()).max(1.0),
                "{what}: cost {c} against {d} for {:?}",
                g.keys
            ),
            (c, d) => assert_eq!(c, d, "{what}: cost for {:?}", g.keys),
        }
    }
}
