//! Delivering the ledger's pending markers through a brain-writer sink.

use serde_json::{json, Value};
use transcope_brain::{Delivery, Sink};

use crate::{Index, IndexError, LedgerRow, State};

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
}

/// Deliver `rows` through `sink`, in order, and record each one's new state in one
/// synced transaction. A row the sink fails stays pending (the next delivery tries it
/// again); a run killed between a delivery and its record delivers that row again,
/// which its idempotency key makes harmless.
pub fn deliver(
    index: &mut Index,
    rows: &[LedgerRow],
    sink: &mut dyn Sink,
) -> Result<DeliverReport, IndexError> {
    let mut report = DeliverReport::default();
    let mut changes = Vec::with_capacity(rows.len());
    for row in rows {
        match sink.deliver(&row.record()) {
            Ok(Delivery::Sent) => {
                report.sent += 1;
                changes.push((row.idempotency_key.clone(), State::Delivered, None));
            }
            Ok(Delivery::Printed) => {
                report.printed += 1;
                changes.push((
                    row.idempotency_key.clone(),
                    State::Delivered,
                    Some("printed".into()),
                ));
            }
            Ok(Delivery::Outboxed(path)) => {
                report.outbox += 1;
                changes.push((
                    row.idempotency_key.clone(),
                    State::Outbox,
                    Some(path.display().to_string()),
                ));
            }
            Ok(Delivery::Rejected(status)) => {
                report.rejected += 1;
                changes.push((
                    row.idempotency_key.clone(),
                    State::Rejected,
                    Some(format!("HTTP {status}")),
                ));
            }
            Err(e) => {
                report.failed += 1;
                report.errors.push(e.to_string());
            }
        }
    }
    index.set_states(&changes)?;
    report.keys = changes.into_iter().map(|(k, s, _)| (k, s)).collect();
    Ok(report)
}
