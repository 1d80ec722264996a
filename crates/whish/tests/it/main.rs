//! Properties of the facade: no input makes an amount path or a decoder panic.
//!
//! One test binary for the crate (`cargo test -p whish`): a module per behaviour, the helpers
//! in `support`.

mod amounts_never_panic;
mod decoders_never_panic;
