//! # transcope-reliability
//!
//! This crate holds only tests (`tests/*.rs`). They drive the real `transcope` binary,
//! located next to the test executable (`target/<profile>/transcope`) and rebuilt with
//! `cargo build -p transcope` once per test binary so a stale build is never tested
//! (`TRANSCOPE_BIN` overrides the path).
//!
//! | file | proves |
//! | --- | --- |
//! | `contention.rs` | concurrent `scope record` and `hook stop` keep the log whole, ordered and free of duplicates |
//! | `crash.rs` | SIGKILL at random points loses nothing already written; torn lines are skipped; backfill re-runs converge |
//! | `hostile.rs` | hostile ids, paths and transcript bytes give a clear error or the documented no-op, bounded memory, nothing outside the home |
//! | `never_block.rs` | hooks give up on a held lock or an endless transcript within the bound, and the next Stop catches up |
//! | `permissions.rs` | 0600 files, 0700 directories, no symlink followed out of the home |
//! | `shards.rs` | N `backfill --shard K/N` runs write what one run writes; pushed to one fleet, they give the rows one run's push gives |
//! | `fleet_push.rs` | two machines pushing at once, killed at random moments and pushed again, leave every row in the fleet once, its answers the two indexes' combined |
//! | `fleet_stop.rs` | a Stop pushes its own rows; an unreachable or silent fleet costs it one line and at most its bound, and the rows wait for the next push |
