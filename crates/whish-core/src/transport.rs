//! The HTTP transport every service client uses.
//!
//! It composes URLs as base + path, sends each service's own header set, applies connect and
//! per-attempt timeouts, resends safe requests with the same bytes and the same idempotency key
//! under a bounded, jittered backoff, decodes the envelope and sorts the outcome into a reply or
//! an [`Error`]. One `tracing` span per call records service, endpoint, idempotency key, attempt,
//! outcome and duration, never a header value.

use std::fmt;
use std::time::{Duration, Instant};

use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::Instrument;

pub use bytes::Bytes;
pub use http::Method;

use crate::address::BaseUrl;
use crate::code::ErrorCode;
use crate::envelope::{Dialog, Envelope, Outcome};
use crate::error::{
    DecodeError, Error, Failure, HttpError, PendingReply, TransportError, TransportErrorKind,
};
use crate::retry::{AttemptOutcome, Decision, Resend, RetryPolicy, Timeouts, decide};
use crate::user_agent::UserAgent;
use crate::validation::ValidationError;

/// Retry and timeout settings of a client; each call may override them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// Resends.
    pub retry: RetryPolicy,
    /// Timeouts.
    pub timeouts: Timeouts,
}

/// Per-call overrides of the client's [`Policy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallOptions {
    /// Resends for this call only.
    pub retry: Option<RetryPolicy>,
    /// Per-attempt timeout for this call only.
    pub attempt_timeout: Option<Duration>,
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
    /// Headers of this request only (such as `Request-id`).
    pub headers: HeaderMap,
    /// The idempotency key, for errors and tracing.
    pub idempotency_key: Option<String>,
    /// Whether and when the request may be resent.
    pub resend: Resend,
    /// Overrides of the client policy.
    pub options: CallOptions,
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
            headers: HeaderMap::new(),
            idempotency_key: None,
            resend: Resend::Never,
            options: CallOptions::default(),
        }
    }

    /// Serialize `body` as the JSON body.
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

    /// Add a header of this request.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Request {
        self.headers.insert(name, value);
        self
    }

    /// Carry the transfer service's `Request-id` header, and use it as the idempotency key.
    pub fn request_id(mut self, id: crate::ids::RequestId) -> Request {
        self.headers.insert(
            HeaderName::from_static("request-id"),
            HeaderValue::from(id.get()),
        );
        self.idempotency_key = Some(id.to_string());
        self
    }

    /// Set the idempotency key shown in errors and spans.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Request {
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
    /// True when an attempt before the last may have reached the service.
    pub resent_after_possible_delivery: bool,
    /// The endpoint.
    pub endpoint: &'static str,
    /// The idempotency key, if any.
    pub idempotency_key: Option<String>,
}

impl<T> Reply<T> {
    /// The payload, or a decode error when the service sent no data where the spec promises some.
    pub fn require_data<C>(self) -> Result<T, Error<C>> {
        match self.data {
            Some(d) => Ok(d),
            None => Err(Error::Decode(DecodeError {
                path: "data".into(),
                message: "missing or null where the specification documents a payload".into(),
                http_status: 200,
                endpoint: self.endpoint,
                idempotency_key: self.idempotency_key,
            })),
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

/// A header whose value is a secret: marked sensitive so it never shows in `Debug`.
pub fn secret_header(value: &SecretString, name: &str) -> Result<HeaderValue, ValidationError> {
    let mut v = HeaderValue::from_str(value.expose_secret())
        .map_err(|_| ValidationError::invalid(name, "holds characters not allowed in a header"))?;
    v.set_sensitive(true);
    Ok(v)
}

/// Builds a [`Transport`].
pub struct TransportBuilder {
    service: &'static str,
    base: BaseUrl,
    headers: HeaderMap,
    policy: Policy,
    error: Option<ValidationError>,
}

impl TransportBuilder {
    /// A plain header sent on every request.
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        match HeaderValue::from_str(value) {
            Ok(v) => {
                self.headers.insert(HeaderName::from_static(name), v);
            }
            Err(_) => {
                self.error.get_or_insert(ValidationError::invalid(
                    name,
                    "holds characters not allowed in a header",
                ));
            }
        }
        self
    }

    /// A secret header sent on every request; it never shows in `Debug` or tracing.
    pub fn secret_header(mut self, name: &'static str, value: &SecretString) -> Self {
        if secrecy::ExposeSecret::expose_secret(value)
            .trim()
            .is_empty()
        {
            self.error.get_or_insert(ValidationError::new(
                name,
                crate::validation::ValidationKind::Missing,
            ));
            return self;
        }
        match secret_header(value, name) {
            Ok(v) => {
                self.headers.insert(HeaderName::from_static(name), v);
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// The `User-Agent` header.
    pub fn user_agent(mut self, ua: &UserAgent) -> Self {
        match HeaderValue::from_str(&ua.to_string()) {
            Ok(v) => {
                self.headers.insert(USER_AGENT, v);
            }
            Err(_) => {
                self.error.get_or_insert(ValidationError::invalid(
                    "User-Agent",
                    "holds characters not allowed in a header",
                ));
            }
        }
        self
    }

    /// Retry and timeout settings.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Build the transport and its HTTP client (rustls, no redirects, HTTPS-only unless the base
    /// is loopback).
    pub fn build(self) -> Result<Transport, ValidationError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(self.policy.timeouts.connect)
            .redirect(reqwest::redirect::Policy::none())
            .https_only(!self.base.is_loopback())
            .build()
            .map_err(|e| ValidationError::invalid("http client", e.to_string()))?;
        Ok(Transport {
            service: self.service,
            base: self.base,
            headers: self.headers,
            policy: self.policy,
            client,
        })
    }
}

/// A service's HTTP transport. Cheap to clone; clones share the connection pool.
#[derive(Clone)]
pub struct Transport {
    service: &'static str,
    base: BaseUrl,
    headers: HeaderMap,
    policy: Policy,
    client: reqwest::Client,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("Transport")
            .field("service", &self.service)
            .field("base", &self.base)
            .field("header_names", &names)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// What one attempt produced.
enum Attempt {
    Body {
        status: u16,
        body: Bytes,
    },
    Failed {
        kind: TransportErrorKind,
        may_have_reached: bool,
        message: String,
    },
}

impl Transport {
    /// Start building a transport for `service` (a short name such as `transfer`).
    pub fn builder(service: &'static str, base: BaseUrl) -> TransportBuilder {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        TransportBuilder {
            service,
            base,
            headers,
            policy: Policy::default(),
            error: None,
        }
    }

    /// The base URL.
    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    /// The client policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The service name.
    pub fn service(&self) -> &'static str {
        self.service
    }

    /// The full URL of a request, with its query.
    pub fn url_of(&self, request: &Request) -> String {
        let mut url = self.base.join(&request.path);
        if !request.query.is_empty() {
            let mut q = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in &request.query {
                q.append_pair(k, v);
            }
            url.push('?');
            url.push_str(&q.finish());
        }
        url
    }

    /// Send `request` (resending it as allowed) and sort the reply.
    pub async fn call<T: DeserializeOwned, C: ErrorCode>(
        &self,
        request: Request,
    ) -> Result<Reply<T>, Error<C>> {
        let span = tracing::info_span!(
            "whish.call",
            service = self.service,
            endpoint = request.endpoint,
            idempotency_key = request.idempotency_key.as_deref().unwrap_or(""),
            attempt = tracing::field::Empty,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        let started = Instant::now();
        let result = self.call_inner(&request).instrument(span.clone()).await;
        let outcome = match &result {
            Ok(_) => "success".to_owned(),
            Err(Error::Failed(f)) => format!("failed:{}", f.raw),
            Err(Error::Pending(_)) => "pending".to_owned(),
            Err(Error::Transport(t)) => format!("transport:{:?}", t.kind),
            Err(Error::Http(h)) => format!("http:{}", h.status),
            Err(Error::Decode(_)) => "decode".to_owned(),
            Err(Error::Validation(_)) => "validation".to_owned(),
        };
        span.record("outcome", outcome.as_str());
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        span.in_scope(|| tracing::debug!(outcome = outcome.as_str(), "call finished"));
        result
    }

    async fn call_inner<T: DeserializeOwned, C: ErrorCode>(
        &self,
        request: &Request,
    ) -> Result<Reply<T>, Error<C>> {
        let policy = request.options.retry.unwrap_or(self.policy.retry);
        let timeout = request
            .options
            .attempt_timeout
            .unwrap_or(self.policy.timeouts.attempt);
        let url = self.url_of(request);
        let mut headers = self.headers.clone();
        for (k, v) in &request.headers {
            headers.insert(k.clone(), v.clone());
        }
        if request.body.is_some() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let key = request.idempotency_key.clone();
        let mut attempts = 0u32;
        let mut earlier_may_have_reached = false;
        loop {
            attempts += 1;
            tracing::Span::current().record("attempt", attempts);
            let attempt = self.attempt(request, &url, &headers, timeout).await;
            let (outcome, result) =
                self.sort::<T, C>(attempt, request, attempts, earlier_may_have_reached);
            match decide(&policy, request.resend, attempts, outcome, fastrand::f64()) {
                Decision::Stop => return result,
                Decision::RetryAfter(wait) => {
                    tracing::warn!(
                        attempt = attempts,
                        ?outcome,
                        wait_ms = wait.as_millis() as u64,
                        idempotency_key = key.as_deref().unwrap_or(""),
                        "resending the same request with the same idempotency key"
                    );
                    if matches!(
                        outcome,
                        AttemptOutcome::TimedOut
                            | AttemptOutcome::ConnectionBroken
                            | AttemptOutcome::Pending
                            | AttemptOutcome::NoEnvelope { .. }
                    ) {
                        earlier_may_have_reached = true;
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn attempt(
        &self,
        request: &Request,
        url: &str,
        headers: &HeaderMap,
        timeout: Duration,
    ) -> Attempt {
        let mut builder = self
            .client
            .request(request.method.clone(), url)
            .headers(headers.clone())
            .timeout(timeout);
        if let Some(body) = &request.body {
            builder = builder.body(body.clone());
        }
        let response = match builder.send().await {
            Ok(r) => r,
            Err(e) => return classify(&e),
        };
        let status = response.status().as_u16();
        match response.bytes().await {
            Ok(body) => Attempt::Body { status, body },
            Err(e) => match classify(&e) {
                Attempt::Failed { kind, message, .. } => Attempt::Failed {
                    kind: if kind == TransportErrorKind::Timeout {
                        kind
                    } else {
                        TransportErrorKind::Io
                    },
                    may_have_reached: true,
                    message,
                },
                other => other,
            },
        }
    }

    fn sort<T: DeserializeOwned, C: ErrorCode>(
        &self,
        attempt: Attempt,
        request: &Request,
        attempts: u32,
        earlier_may_have_reached: bool,
    ) -> (AttemptOutcome, Result<Reply<T>, Error<C>>) {
        let endpoint = request.endpoint;
        let key = request.idempotency_key.clone();
        let (status, body) = match attempt {
            Attempt::Body { status, body } => (status, body),
            Attempt::Failed {
                kind,
                may_have_reached,
                message,
            } => {
                let outcome = match kind {
                    TransportErrorKind::Connect => AttemptOutcome::ConnectFailed,
                    TransportErrorKind::Tls => AttemptOutcome::TlsFailed,
                    TransportErrorKind::Timeout => AttemptOutcome::TimedOut,
                    TransportErrorKind::Io => AttemptOutcome::ConnectionBroken,
                    TransportErrorKind::Setup => AttemptOutcome::TlsFailed,
                };
                return (
                    outcome,
                    Err(Error::Transport(TransportError {
                        kind,
                        may_have_reached: may_have_reached || earlier_may_have_reached,
                        message,
                        endpoint,
                        idempotency_key: key,
                        attempts,
                    })),
                );
            }
        };
        let envelope = match Envelope::<T>::from_slice(&body) {
            Ok(e) => e,
            Err(e) if e.not_an_envelope => {
                return (
                    AttemptOutcome::NoEnvelope { status },
                    Err(Error::Http(HttpError {
                        status,
                        body_prefix: HttpError::prefix_of(&body),
                        endpoint,
                        idempotency_key: key,
                    })),
                );
            }
            Err(e) => {
                return (
                    AttemptOutcome::Answered,
                    Err(Error::Decode(DecodeError {
                        path: e.path,
                        message: e.message,
                        http_status: status,
                        endpoint,
                        idempotency_key: key,
                    })),
                );
            }
        };
        match envelope.outcome() {
            Outcome::Success => (
                AttemptOutcome::Answered,
                Ok(Reply {
                    data: envelope.data,
                    dialog: envelope.dialog,
                    extra: envelope.extra,
                    actions: envelope.actions,
                    retrieved: envelope.retrieved,
                    attempts,
                    resent_after_possible_delivery: earlier_may_have_reached,
                    endpoint,
                    idempotency_key: key,
                }),
            ),
            Outcome::Pending => (
                AttemptOutcome::Pending,
                Err(Error::Pending(Box::new(PendingReply {
                    dialog: envelope.dialog,
                    retrieved: envelope.retrieved,
                    endpoint,
                    idempotency_key: key,
                    attempts,
                }))),
            ),
            Outcome::Failed => {
                let raw = envelope.code.as_str().unwrap_or("").to_owned();
                (
                    AttemptOutcome::Answered,
                    Err(Error::Failed(Box::new(Failure {
                        code: C::parse(&raw),
                        raw,
                        dialog: envelope.dialog,
                        extra: envelope.extra,
                        retrieved: envelope.retrieved,
                        endpoint,
                        idempotency_key: key,
                        attempts,
                        resent_after_possible_delivery: earlier_may_have_reached,
                    }))),
                )
            }
        }
    }
}

/// Sort a reqwest error into a transport failure kind and whether the request may have arrived.
fn classify(e: &reqwest::Error) -> Attempt {
    let message = error_chain(e);
    let lower = message.to_ascii_lowercase();
    let tls = lower.contains("certificate")
        || lower.contains("tls")
        || lower.contains("handshake")
        || lower.contains("invalid peer");
    let (kind, may_have_reached) = if e.is_connect() {
        if tls {
            (TransportErrorKind::Tls, false)
        } else {
            (TransportErrorKind::Connect, false)
        }
    } else if e.is_timeout() {
        (TransportErrorKind::Timeout, true)
    } else if e.is_builder() {
        (TransportErrorKind::Setup, false)
    } else {
        (TransportErrorKind::Io, true)
    };
    Attempt::Failed {
        kind,
        may_have_reached,
        message,
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = inner.source();
    }
    s
}
