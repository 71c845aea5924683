//! # transcope-stop: one transcript at a hook's Stop
//!
//! The named composition a hook runs: one read of the session's transcript through
//! [`transcope_observe`] (the engine's pipeline with every stage, under the cursor),
//! then the ledger and the brain writer:
//!
//! * [`stop`]: the whole Stop (change detection, then the brain writer);
//! * [`session_start`]: the launch scope and the session index (`record_session`).
#![warn(missing_docs)]

pub mod session_start;
pub mod stop;
