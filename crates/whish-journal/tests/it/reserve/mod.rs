//! Reserve.

mod repeated_keys;
mod sends;
