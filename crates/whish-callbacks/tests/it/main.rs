//! The callback receiver: against the sandbox, under faults, and under hostile input.
//!
//! One test binary for the crate (`cargo test -p whish-callbacks`): a module per behaviour, the helpers
//! in `support`.

mod against_sandbox;
mod faults;
mod hostile_input;
