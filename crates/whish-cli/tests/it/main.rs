//! The `whish` command, run as a binary: against httpmock, against the sandbox, and under faults.
//!
//! One test binary for the crate (`cargo test -p whish-cli`): a module per behaviour, the helpers
//! in `support`.

mod support;

mod abandon;
mod cancel;
mod disk_full;
mod documented_body;
mod end_to_end;
mod first_attempt_page;
mod identifiers;
mod inbox;
mod intent_not_recorded;
mod mocked;
mod operators;
mod outcome_table;
mod output_fields;
mod payouts;
mod printed_objects;
mod recover_after_kill;
mod recover_keys;
mod recover_other_service;
mod replays;
mod retry_needs_operator;
mod same_body_again;
mod sharp_edges;
mod spec_reach;
