//! The requests the sandbox received, as the control API lists them.

use std::collections::VecDeque;

use serde::Serialize;

use crate::endpoint::Endpoint;

/// The most requests the journal keeps; older ones are dropped first.
pub const JOURNAL_MAX_REQUESTS: usize = 1000;

/// The most of a body the journal keeps, in bytes (a cut body ends in `…[cut]`).
pub const JOURNAL_MAX_BODY_BYTES: usize = 16 * 1024;

/// The received requests, bounded in count and in body size: unauthenticated clients cannot make
/// it grow without end.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    entries: VecDeque<ReceivedRequest>,
    next_seq: u64,
}

impl Journal {
    /// Record a request; its sequence number is set here, and the body is cut to the limit.
    pub(crate) fn push(&mut self, mut request: ReceivedRequest) {
        self.next_seq += 1;
        request.seq = self.next_seq;
        if request.body.len() > JOURNAL_MAX_BODY_BYTES {
            let mut cut = JOURNAL_MAX_BODY_BYTES;
            while !request.body.is_char_boundary(cut) {
                cut -= 1;
            }
            request.body.truncate(cut);
            request.body.push_str("…[cut]");
        }
        if self.entries.len() == JOURNAL_MAX_REQUESTS {
            self.entries.pop_front();
        }
        self.entries.push_back(request);
    }

    /// The kept requests, oldest first.
    pub(crate) fn list(&self) -> Vec<ReceivedRequest> {
        self.entries.iter().cloned().collect()
    }

    /// Forget everything.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.next_seq = 0;
    }
}

/// One request received on a service endpoint. Secret headers (`key`, `secret`, `token`,
/// `sessionId`) are recorded as `<redacted>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReceivedRequest {
    /// Order of arrival, from 1.
    pub seq: u64,
    /// The endpoint.
    #[serde(serialize_with = "endpoint_name")]
    pub endpoint: Endpoint,
    /// HTTP method.
    pub method: String,
    /// Path and query as received.
    pub path: String,
    /// Headers as `name: value`, secrets redacted.
    pub headers: Vec<String>,
    /// The body as text.
    pub body: String,
    /// The fault applied to this request, if any.
    pub fault: Option<String>,
}

fn endpoint_name<S: serde::Serializer>(e: &Endpoint, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(e.as_str())
}

/// Header names whose values are never recorded.
pub(crate) const SECRET_HEADERS: [&str; 4] = ["key", "secret", "token", "sessionid"];
