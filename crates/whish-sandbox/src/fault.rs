//! Faults injected per endpoint, consumed one per request in the order they were injected.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// What goes wrong with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Close the connection before the request is applied: nothing happened.
    DropRequest,
    /// Apply the request, then close the connection without a reply: it happened, and the caller
    /// cannot know.
    DropReply,
    /// Apply the request and answer after this delay (a client timeout leaves it applied).
    Delay(Duration),
    /// Apply the request, then answer Pending (`code` 500) instead of its real reply. A resend
    /// with the same idempotency key finds the recorded outcome.
    Pending,
}

impl Fault {
    /// The name used by the control API (`drop-request`, `drop-reply`, `delay`, `pending`).
    pub fn name(&self) -> &'static str {
        match self {
            Fault::DropRequest => "drop-request",
            Fault::DropReply => "drop-reply",
            Fault::Delay(_) => "delay",
            Fault::Pending => "pending",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Delay(d) => write!(f, "delay {} ms", d.as_millis()),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Fault {
    type Err = String;
    /// `drop-request`, `drop-reply`, `pending`, or `delay:<milliseconds>`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "drop-request" => Ok(Fault::DropRequest),
            "drop-reply" => Ok(Fault::DropReply),
            "pending" => Ok(Fault::Pending),
            other => other
                .strip_prefix("delay:")
                .and_then(|ms| ms.parse::<u64>().ok())
                .map(|ms| Fault::Delay(Duration::from_millis(ms)))
                .ok_or_else(|| {
                    format!("unknown fault `{s}`: drop-request, drop-reply, pending or delay:<ms>")
                }),
        }
    }
}
