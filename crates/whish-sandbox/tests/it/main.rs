//! The sandbox: every flow end to end, its control API, strictness, hints and hostile input.
//!
//! One test binary for the crate (`cargo test -p whish-sandbox`): a module per behaviour, the helpers
//! in `support`.

mod support;

mod builders_never_refused;
mod collect_flows;
mod control_api;
mod credentials;
mod foreign_clients;
mod hints;
mod hostile_input;
mod secrets_never_print;
mod strict;
mod topup_flows;
mod transfer_flows;
