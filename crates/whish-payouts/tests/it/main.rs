//! Payout batches, their follow-up, cancels and reconciliation, against the sandbox on SQLite files.
//!
//! One test binary for the crate (`cargo test -p whish-payouts`): a module per behaviour, the helpers
//! in `support`.

mod support;

mod abandoned_rows;
mod batch;
mod cancel;
mod checked_rows;
mod died_after_accept;
mod file_check;
mod follow_up_clock;
mod journal_fails;
mod other_service;
mod prune;
mod reconcile;
mod resumed_created_time;
mod two_runs;
