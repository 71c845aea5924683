//! # transcope-fleet: many machines, one PostgreSQL
//!
//! Each machine keeps its own index (`transcope-index`, SQLite); a **push**
//! ([`push::push`]) sends what changed in it since the machine's last push to a
//! shared PostgreSQL, the **fleet**, and every query can read the fleet instead of
//! the local index: [`Fleet`] implements the same [`transcope_store::Store`] trait,
//! with the same answers for the same rows (the conformance kit checks it).
//!
//! * **Every row names its machine**: the machine that first pushed it ([`Machine`]: a
//!   stable id kept under the home, and a name).
//! * **Keys, not machines, make a row one row**: a session is its scope-log key, a
//!   scope row its session and place, a marker its idempotency key, a request its
//!   key. A session recorded on two machines (a shared home, two shards of one
//!   archive) is one session, each row once; a request copied into two sessions keeps
//!   the earliest copy (a root session's on a tie, then the one read first, then the
//!   smaller session key), as the local index does: N shards of one archive keep the
//!   copy one run keeps.
//! * **A push is one transaction**: the rows and the machine's new mark (how far into
//!   its index it has sent) commit together, so a push killed at any moment leaves
//!   the fleet as it was and the next push sends the same rows again; every write is
//!   an upsert, so sending a row twice changes nothing. Concurrent pushes of one
//!   machine take turns on its row (`FOR UPDATE`); pushes of different machines run
//!   together, writing in key order, and retry a deadlock.
//! * **Bulk rows by `COPY`** into temporary tables, then one `INSERT … ON CONFLICT`
//!   per table.
//! * **A versioned schema** ([`schema`]), migrated in one transaction under an
//!   advisory lock; a fleet whose schema is newer than this build is refused.
//!
//! No home-made server, queue or coordinator: PostgreSQL is the only thing shared.
#![warn(missing_docs)]

mod conn;
mod machine;
pub mod push;
mod read;
pub mod schema;
pub mod status;

pub use conn::{redact, Fleet, FleetError, URL_ENV};
pub use machine::{id_file as machine_id_file, Machine, MACHINE_ENV};
