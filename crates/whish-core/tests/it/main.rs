//! The core: transport, errors, settings, spans, secrets, ids and the fixtures of every service.
//!
//! One test binary for the crate (`cargo test -p whish-core`): a module per behaviour, the helpers
//! in `support`.

mod support;

mod credentials;
mod error_messages;
mod fixtures_decode;
mod http_settings;
mod interceptors;
mod properties;
mod public_addresses;
mod request_ids_unique;
mod retry_after;
mod secrets_never_print;
mod spans;
mod transport;
