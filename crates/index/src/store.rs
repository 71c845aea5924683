//! The index as a [`Store`]: the embedded SQLite backend of the storage seam.

use transcope_core::Tokens;
use transcope_store::{
    Held, InForce, LedgerFilter, LedgerRow, Named, Pricer, SessionFilter, SessionInfo, Store,
    StoreError, TimelineItem, UsageFilter, UsageGroup, UsageKey,
};

use crate::{Index, IndexError};

impl From<IndexError> for StoreError {
    fn from(e: IndexError) -> StoreError {
        if e.is_damage() {
            StoreError::damaged(e)
        } else {
            StoreError::new(e)
        }
    }
}

impl Store for Index {
    fn sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionInfo>, StoreError> {
        Ok(Index::sessions(self, filter)?)
    }

    fn timeline_each(
        &self,
        session: &str,
        each: &mut dyn FnMut(TimelineItem) -> bool,
    ) -> Result<(), StoreError> {
        Ok(Index::timeline_each(self, session, each)?)
    }

    fn each_transition(
        &self,
        session: &str,
        each: &mut dyn FnMut(Option<i64>, [String; 6]),
    ) -> Result<(), StoreError> {
        Ok(Index::each_transition(self, session, each)?)
    }

    fn ledger(&self, filter: &LedgerFilter) -> Result<Vec<LedgerRow>, StoreError> {
        Ok(Index::ledger(self, filter)?)
    }

    fn usage(
        &self,
        by: &[UsageKey],
        filter: &UsageFilter,
        prices: &dyn Pricer,
    ) -> Result<Vec<UsageGroup>, StoreError> {
        let price = |model: Option<&str>, t: &Tokens| prices.cost(model, t);
        Ok(Index::usage(
            self,
            by,
            filter,
            &price,
            prices.fingerprint(),
        )?)
    }

    /// Read from the scope log itself (the source of truth the index mirrors), in
    /// pieces: a row held at a time however long the log. The log is the one beside
    /// the index (`<home>/transcope/index.sqlite` → `<home>`'s logs); none there is no
    /// rows.
    fn in_force(&self, session: &str, at_us: i64) -> Result<InForce, StoreError> {
        let Some(home) = self.path().parent().and_then(|p| p.parent()) else {
            return Ok(InForce::default());
        };
        let log = transcope_scopelog::ScopeLog::open(home, session);
        let Some(path) = log.path() else {
            return Ok(InForce::default());
        };
        let found =
            transcope_scopelog::in_force_in(path, transcope_core::Instant::from_unix_micros(at_us));
        Ok(InForce {
            row: found.row,
            rows: found.rows,
            later_but_earlier: found.later_but_earlier,
        })
    }

    fn known(&self, what: Named) -> Result<Vec<String>, StoreError> {
        Ok(Index::known(self, what)?)
    }

    fn project_names(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(Index::project_names(self)?)
    }

    fn time_span(&self, held: Held) -> Result<Option<(i64, i64)>, StoreError> {
        Ok(Index::time_span(self, held)?)
    }
}
