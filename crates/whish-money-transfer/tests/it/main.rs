//! The money-transfer client: the wire, resends, refusals before sending, callbacks, reconciliation.
//!
//! One test binary for the crate (`cargo test -p whish-money-transfer`): a module per behaviour, the helpers
//! in `support`.

mod support;

mod callback;
mod codes;
mod reconcile;
mod refused_before_sending;
mod resend;
mod wire;
