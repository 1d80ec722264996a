//! The callback receiver: against the sandbox, losing nothing under faults, serving under
//! floods, and under hostile input.
//!
//! One test binary for the crate (`cargo test -p whish-callbacks`): a module per behaviour, the
//! helpers in `support`.

mod against_sandbox;
mod hostile_input;
mod losing_nothing;
mod serving;
mod support;
