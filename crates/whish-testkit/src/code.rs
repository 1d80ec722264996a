//! A small error-code set for testing the generic machinery of whish-core without a service.

use std::fmt;
use std::str::FromStr;

/// A code set with one known code (`transfer.already.done`) and every other string unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestCode {
    /// `transfer.already.done`.
    AlreadyDone,
    /// Any other code, kept as sent.
    Unknown(String),
}

impl FromStr for TestCode {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "transfer.already.done" => TestCode::AlreadyDone,
            o => TestCode::Unknown(o.to_owned()),
        })
    }
}

impl fmt::Display for TestCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(whish_core::ErrorCode::as_str(self))
    }
}

impl whish_core::ErrorCode for TestCode {
    const SERVICE: &'static str = "test";
    fn as_str(&self) -> &str {
        match self {
            TestCode::AlreadyDone => "transfer.already.done",
            TestCode::Unknown(s) => s,
        }
    }
    fn is_final(&self) -> bool {
        true
    }
    fn handling(&self) -> &'static str {
        "read the outcome with status"
    }
    fn is_unknown(&self) -> bool {
        matches!(self, TestCode::Unknown(_))
    }
}
