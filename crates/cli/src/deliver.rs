//! Delivering the ledger's pending markers, for `deliver` and `backfill --deliver`
//! alike.

use std::path::Path;

use anyhow::Result;
use transcope_brain::{BrainClient, BrainConfig, HttpSink, OutboxSink, DEFAULT_TIMEOUT};
use transcope_change_detect::Env;
use transcope_index::Index;

/// Deliver every pending marker (HTTP when `BRAIN_URL` is set, else the outbox), a
/// claimed batch at a time: a marker another run (`deliver`, a Stop) holds is left to
/// it, so concurrent runs send each marker once.
pub fn deliver_all(home: &Path, env: &Env) -> Result<transcope_index::DeliverReport> {
    let mut index = Index::open(home)?;
    let brain = BrainConfig::from_env(home, env);
    let outbox = OutboxSink::new(&brain.outbox, &brain.agent_name, &brain.project);
    let (mut http, mut plain) = (None, None);
    let sink: &mut dyn transcope_brain::Sink = match &brain.url {
        Some(url) => {
            let client = BrainClient::new(url, DEFAULT_TIMEOUT)
                .within(brain.budget.max(DEFAULT_TIMEOUT * 20));
            http.insert(HttpSink::new(client, outbox).rejecting(true))
        }
        None => plain.insert(outbox),
    };
    let lease = transcope_index::Lease::new();
    let mut report = transcope_index::DeliverReport::default();
    let mut sessions = std::collections::BTreeSet::new();
    let mut take = transcope_index::Take {
        limit: Some(transcope_index::CLAIM_BATCH),
        ..Default::default()
    };
    loop {
        let claimed = index.claim(&take, &lease)?;
        if claimed.rows.is_empty() {
            break;
        }
        take.after = claimed.next;
        sessions.extend(claimed.rows.iter().filter_map(|r| r.session.clone()));
        report.add(transcope_index::deliver(
            &mut index, &claimed, &lease, sink,
        )?);
    }
    if let Some(f) = http.and_then(|h| h.last_failure) {
        say!("{f}; the rest went to the outbox");
    }
    // The hooks' flags follow the ledger.
    for k in &sessions {
        let left = index.pending_count(Some(k), Some(transcope_index::Origin::Hook))?;
        transcope_index::set_pending_flag(home, k, left > 0);
    }
    report.errors.dedup();
    Ok(report)
}

/// The outbox folder delivery writes to (`BRAIN_WRITER_OUTBOX`, else the home's), as
/// a person reads it.
pub(crate) fn outbox_shown(home: &Path, env: &Env) -> String {
    transcope_core::quote::escape_unsafe(
        &BrainConfig::from_env(home, env)
            .outbox
            .display()
            .to_string(),
    )
    .into_owned()
}
