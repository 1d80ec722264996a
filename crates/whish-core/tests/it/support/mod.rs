//! What the core's tests share: a code set of their own, its error type, and a secret to look for.
#![allow(dead_code)]

pub use whish_testkit::TestCode;

pub type Error = whish_core::Error<TestCode>;

pub const SECRET_KEY: &str = "sk_live_TOPSECRET_0123456789";
