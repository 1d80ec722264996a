//! The requests the sandbox received, as the control API lists them.

use serde::Serialize;

use crate::endpoint::Endpoint;

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
