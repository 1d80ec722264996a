//! The locations client on the wire and its generated codes.
//!
//! One test binary for the crate (`cargo test -p whish-locations`): a module per behaviour, the helpers
//! in `support`.

mod codes;
mod wire;
