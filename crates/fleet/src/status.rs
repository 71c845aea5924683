//! `transcope fleet status`: the machines, their last push and what they hold.

use crate::{Fleet, FleetError};

/// One machine of the fleet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineStatus {
    /// Its stable id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// When it first pushed (RFC 3339, UTC).
    pub first_push: String,
    /// When it last pushed.
    pub last_push: Option<String>,
    /// How many pushes it made.
    pub pushes: i64,
    /// Rows that name it: sessions, scope rows, markers, requests.
    pub rows: [i64; 4],
}

impl MachineStatus {
    /// The `--json` object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "machine": self.name,
            "machine_id": self.id,
            "first_push": self.first_push,
            "last_push": self.last_push,
            "pushes": self.pushes,
            "sessions": self.rows[0],
            "transitions": self.rows[1],
            "markers": self.rows[2],
            "requests": self.rows[3],
        })
    }
}

impl Fleet {
    /// Every machine, by name then id.
    pub fn machines(&self) -> Result<Vec<MachineStatus>, FleetError> {
        let q = |e| self.query_error(e);
        let mut c = self.client.borrow_mut();
        let counts = |c: &mut postgres::Client,
                      table: &str|
         -> Result<std::collections::HashMap<String, i64>, postgres::Error> {
            Ok(c.query(
                &format!("SELECT machine, count(*) FROM {table} GROUP BY machine"),
                &[],
            )?
            .into_iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
        };
        let tables = ["sessions", "transitions", "markers", "usage"];
        let mut by_table = Vec::new();
        for t in tables {
            by_table.push(counts(&mut c, t).map_err(q)?);
        }
        let rows = c
            .query(
                "SELECT machine_id, name,
                        to_char(first_push AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                        to_char(last_push AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                        pushes
                 FROM machines ORDER BY name, machine_id",
                &[],
            )
            .map_err(q)?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let id: String = r.get(0);
                let n = |i: usize| by_table[i].get(&id).copied().unwrap_or(0);
                MachineStatus {
                    name: r.get(1),
                    first_push: r.get(2),
                    last_push: r.get(3),
                    pushes: r.get(4),
                    rows: [n(0), n(1), n(2), n(3)],
                    id,
                }
            })
            .collect())
    }
}
