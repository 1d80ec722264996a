//! One request as the transport sends it, and one successful reply as it comes back.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

pub use bytes::Bytes;
pub use http::Method;
pub use http::header::{HeaderName, HeaderValue};

use crate::envelope::Dialog;
use crate::error::{DecodeError, Error};
use crate::retry::{Resend, RetryPolicy, Timeouts};
use crate::validation::ValidationError;
use crate::verdict::DeliveryMark;

/// Retry and timeout settings of a client; each call may override them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// Resends.
    pub retry: RetryPolicy,
    /// Timeouts.
    pub timeouts: Timeouts,
}

/// Per-call overrides of the client's [`Policy`], given to a client's `with_options`.
///
/// ```
/// use std::time::Duration;
/// use whish_core::{CallOptions, RetryPolicy};
/// let quick = CallOptions::new()
///     .retry(RetryPolicy::NONE)
///     .attempt_timeout(Duration::from_secs(5));
/// assert_eq!(quick.attempt_timeout, Some(Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Resends for this call only.
    pub retry: Option<RetryPolicy>,
    /// Per-attempt timeout for this call only.
    pub attempt_timeout: Option<Duration>,
    /// The most the whole call may take, every attempt and backoff included. When it passes
    /// the call ends with a timeout whose `may_have_reached` says whether an attempt had left;
    /// unlike a `tokio::time::timeout` around the call, the error still carries the key and
    /// the attempt count.
    pub deadline: Option<Duration>,
}

impl CallOptions {
    /// No overrides: the client's policy.
    pub fn new() -> CallOptions {
        CallOptions::default()
    }
    /// Resend under this policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }
    /// Allow each attempt this long.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = Some(timeout);
        self
    }
    /// Allow the whole call (every attempt and backoff) this long.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }
}

/// One request, described once and sent as many times as the policy allows.
#[derive(Debug, Clone)]
pub struct Request {
    /// The endpoint's name for errors and tracing, e.g. `transfer.send`.
    pub endpoint: &'static str,
    /// The HTTP method.
    pub method: Method,
    /// The path appended to the base URL, starting with `/`, already percent-encoded.
    pub path: String,
    /// Query parameters, encoded by the transport.
    pub query: Vec<(&'static str, String)>,
    /// The JSON body, serialized once; every resend carries these same bytes.
    pub body: Option<Bytes>,
    /// Headers of this request only (such as `Request-id`), one of each name: a short list,
    /// not a map (a request has one or two), which a call moves and drops cheaply.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The idempotency key, for errors and tracing (shared, not copied: an [`ExternalId`](crate::ExternalId)
    /// converts without allocating).
    pub idempotency_key: Option<Arc<str>>,
    /// Whether and when the request may be resent.
    pub resend: Resend,
    /// Overrides of the client policy.
    pub options: CallOptions,
    /// The mark of the prepared request this call sends, shared across calls: set before the
    /// first byte leaves (see [`DeliveryMark`]).
    pub delivery: Option<DeliveryMark>,
    /// The HTTP statuses the service documents as its own refusal of this request, answered
    /// without the envelope (the collect service's 403 for a non-public address). Any other
    /// reply without the envelope comes from something in front of the service, which may have
    /// passed the request on before it answered: an unknown outcome, never a refusal.
    pub refused_with: &'static [u16],
}

impl Request {
    /// A request without body, query or extra headers, never resent.
    pub fn new(endpoint: &'static str, method: Method, path: impl Into<String>) -> Request {
        Request {
            endpoint,
            method,
            path: path.into(),
            query: Vec::new(),
            body: None,
            headers: Vec::new(),
            idempotency_key: None,
            resend: Resend::Never,
            options: CallOptions::default(),
            delivery: None,
            refused_with: &[],
        }
    }

    /// Serialize `body` as the JSON body.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn json<B: serde::Serialize>(mut self, body: &B) -> Result<Request, ValidationError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| ValidationError::invalid("body", e.to_string()))?;
        self.body = Some(Bytes::from(bytes));
        Ok(self)
    }

    /// Use `body` (already serialized JSON) as the body, byte for byte.
    pub fn json_bytes(mut self, body: Bytes) -> Request {
        self.body = Some(body);
        self
    }

    /// Add a query parameter.
    pub fn query(mut self, name: &'static str, value: impl Into<String>) -> Request {
        self.query.push((name, value.into()));
        self
    }

    /// Add a header of this request (replacing one of the same name).
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Request {
        match self.headers.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.headers.push((name, value)),
        }
        self
    }

    /// Set the idempotency key shown in errors and spans.
    pub fn idempotency_key(mut self, key: impl Into<Arc<str>>) -> Request {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Set the resend rule.
    pub fn resend(mut self, resend: Resend) -> Request {
        self.resend = resend;
        self
    }

    /// Set per-call overrides.
    pub fn options(mut self, options: CallOptions) -> Request {
        self.options = options;
        self
    }

    /// Carry the prepared request's delivery mark: what earlier calls left, and set before
    /// this call's first byte leaves.
    pub fn delivery(mut self, mark: &DeliveryMark) -> Request {
        self.delivery = Some(mark.clone());
        self
    }

    /// The HTTP statuses the service documents as its own refusal of this request, answered
    /// without the envelope (see [`Request::refused_with`](Request#structfield.refused_with)).
    pub fn refused_with(mut self, statuses: &'static [u16]) -> Request {
        self.refused_with = statuses;
        self
    }
}

/// A successful reply (`status: true`).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply<T> {
    /// The payload, when not null.
    pub data: Option<T>,
    /// The dialog (some successes carry an informational one).
    pub dialog: Option<Dialog>,
    /// Reserved `extra`, as sent.
    pub extra: Option<Value>,
    /// Reserved `actions`, as sent.
    pub actions: Option<Value>,
    /// True when the reply replays an already-processed request.
    pub retrieved: Option<bool>,
    /// How many attempts were made.
    pub attempts: u32,
    /// True when an attempt before the last may have reached the service (in this call, or
    /// an earlier call of the same prepared request).
    pub resent_after_possible_delivery: bool,
    /// The endpoint.
    pub endpoint: &'static str,
    /// The idempotency key, if any.
    pub idempotency_key: Option<String>,
}

impl<T> Reply<T> {
    /// The payload, or a decode error when the service sent no data where the spec promises some.
    ///
    /// # Errors
    ///
    /// An unreadable-reply error when a successful envelope carries no `data`: the outcome is then
    /// unknown.
    pub fn require_data<C>(self) -> Result<T, Error<C>> {
        match self.data {
            Some(d) => Ok(d),
            None => Err(Error::Decode(DecodeError::new(
                "data",
                "missing or null where the specification documents a payload",
                200,
                self.endpoint,
                self.idempotency_key,
            ))),
        }
    }

    /// The same reply with its payload mapped.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Reply<U> {
        Reply {
            data: self.data.map(f),
            dialog: self.dialog,
            extra: self.extra,
            actions: self.actions,
            retrieved: self.retrieved,
            attempts: self.attempts,
            resent_after_possible_delivery: self.resent_after_possible_delivery,
            endpoint: self.endpoint,
            idempotency_key: self.idempotency_key,
        }
    }
}
