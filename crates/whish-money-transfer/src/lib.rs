//! # whish-money-transfer
//!
//! Client of the money-transfer into Lebanon (spec 000) service, on top of `whish-core`.
//!
//! **Status:** the error codes of the service are here ([`TransferCode`], generated from
//! `codes/` by `cargo xtask codegen`); the client itself lands with issue 3.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod code;

pub use code::TransferCode;
pub use whish_core::Error as CoreError;

/// The error type of this service's calls.
pub type Error = whish_core::Error<TransferCode>;
