//! The journal against the sandbox, on SQLite files and on PostgreSQL when `WHISH_TEST_POSTGRES_URL`
//! names a server: what each fault leaves, and that every answer agrees with the service.
//!
//! One test binary for the crate (`cargo test -p whish-journal`): a module per behaviour, the helpers
//! in `support`.

mod support;

mod abandon;
mod batch_speed;
mod file_deleted;
mod fleet_faults;
mod given_back;
mod holder_liveness;
mod idle_runtime;
mod inbox;
mod insert_failed_orphan;
mod lease_clock;
mod lifecycle;
mod other_service;
mod recover_entries;
mod reopen;
mod repeat_check;
mod reserve;
mod retry_needs_operator;
mod same_file;
mod someone_elses_transfer;
mod truth;
mod unreadable_rows;
