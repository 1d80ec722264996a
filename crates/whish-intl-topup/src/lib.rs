//! # whish-intl-topup
//!
//! Client of the international top-up (spec 002) service, on top of `whish-core`.
//!
//! **Status:** the error codes of the service are here ([`TopupCode`], generated from
//! `codes/` by `cargo xtask codegen`); the client itself lands with issue 5.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod code;

pub use code::TopupCode;
pub use whish_core::Error as CoreError;

/// The error type of this service's calls.
pub type Error = whish_core::Error<TopupCode>;
