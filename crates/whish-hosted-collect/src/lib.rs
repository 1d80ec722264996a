//! # whish-hosted-collect
//!
//! Client of the hosted payment collection (spec 001) service, on top of `whish-core`.
//!
//! **Status:** the error codes of the service are here ([`CollectCode`], generated from
//! `codes/` by `cargo xtask codegen`); the client itself lands with issue 4.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod code;

pub use code::CollectCode;
pub use whish_core::Error as CoreError;

/// The error type of this service's calls.
pub type Error = whish_core::Error<CollectCode>;
