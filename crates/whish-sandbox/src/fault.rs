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
    /// Apply the request, then never answer: the connection stays open until the client gives
    /// up (a caller's timeout, a dropped future). At most ten minutes.
    Stall,
    /// Do not apply the request; answer this HTTP status with an HTML page and no envelope, the
    /// way a proxy, a firewall or a load balancer in front of the service does (403, 429, 502).
    Page(u16),
    /// Apply the request, then answer this HTTP status with an HTML page and no envelope instead
    /// of its reply: something in front of the service that passed the request on (a WAF that
    /// blocks the reply, a proxy whose upstream timed out). It happened, and the page says
    /// nothing of it.
    AppliedPage(u16),
    /// Do not apply the request; answer the envelope with this failure code instead (for
    /// example a status read that answers `transfer.not_exists` right after a resend met
    /// `transfer.already.done`).
    Code(&'static str),
}

/// The longest a [`Fault::Stall`] holds a connection.
pub const STALL: Duration = Duration::from_secs(600);

/// The longest code a [`Fault::Code`] takes from the control API.
const CODE_MAX: usize = 80;

/// A code from the control API, kept for the life of the process: each distinct code is kept
/// once, so repeated injections hold no more memory.
fn intern(code: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static CODES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut set = CODES
        .get_or_init(|| Mutex::new(HashSet::new()))
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(c) = set.get(code) {
        return c;
    }
    let leaked: &'static str = Box::leak(code.to_owned().into_boxed_str());
    set.insert(leaked);
    leaked
}

impl Fault {
    /// The name used by the control API (`drop-request`, `drop-reply`, `delay`, `pending`).
    pub fn name(&self) -> &'static str {
        match self {
            Fault::DropRequest => "drop-request",
            Fault::DropReply => "drop-reply",
            Fault::Delay(_) => "delay",
            Fault::Pending => "pending",
            Fault::Stall => "stall",
            Fault::Page(_) => "page",
            Fault::AppliedPage(_) => "applied-page",
            Fault::Code(_) => "code",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Delay(d) => write!(f, "delay {} ms", d.as_millis()),
            Fault::Page(s) => write!(f, "page {s}"),
            Fault::AppliedPage(s) => write!(f, "applied page {s}"),
            Fault::Code(c) => write!(f, "code {c}"),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Fault {
    type Err = String;
    /// `drop-request`, `drop-reply`, `pending`, `stall`, `delay:<milliseconds>`,
    /// `page:<http status>`, `applied-page:<http status>` or `code:<failure code>`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || {
            format!(
                "unknown fault `{}`: drop-request, drop-reply, pending, stall, delay:<ms>, page:<status 100-599>, applied-page:<status 100-599> or code:<failure code>",
                s.escape_debug()
            )
        };
        match s {
            "drop-request" => Ok(Fault::DropRequest),
            "drop-reply" => Ok(Fault::DropReply),
            "pending" => Ok(Fault::Pending),
            "stall" => Ok(Fault::Stall),
            other => {
                if let Some(ms) = other.strip_prefix("delay:") {
                    ms.parse::<u64>()
                        .map(|ms| Fault::Delay(Duration::from_millis(ms)))
                        .map_err(|_| unknown())
                } else if let Some(status) = other.strip_prefix("page:") {
                    match status.parse::<u16>() {
                        Ok(n) if (100..=599).contains(&n) => Ok(Fault::Page(n)),
                        _ => Err(unknown()),
                    }
                } else if let Some(status) = other.strip_prefix("applied-page:") {
                    match status.parse::<u16>() {
                        Ok(n) if (100..=599).contains(&n) => Ok(Fault::AppliedPage(n)),
                        _ => Err(unknown()),
                    }
                } else if let Some(code) = other.strip_prefix("code:") {
                    if code.is_empty()
                        || code.len() > CODE_MAX
                        || !code.chars().all(|c| c.is_ascii_graphic())
                    {
                        return Err(unknown());
                    }
                    Ok(Fault::Code(intern(code)))
                } else {
                    Err(unknown())
                }
            }
        }
    }
}
