//! The attempt loop every service client uses.
//!
//! It composes URLs as base + path, sends each service's own header set, applies connect and
//! per-attempt timeouts, resends safe requests with the same bytes and the same idempotency key
//! under a bounded, jittered backoff, reads at most `max_reply_bytes` of a reply, decodes the
//! envelope and sorts the outcome into a reply or an [`Error`]. One `tracing` span per call
//! records service, endpoint, idempotency key, attempt, outcome and duration, never a header
//! value. The request and reply types are in [`crate::request`]; the transport is built by
//! [`ClientSettings::build_transport`](crate::ClientSettings::build_transport).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use http::header::{CONTENT_TYPE, HeaderMap};
use serde::de::DeserializeOwned;
use tracing::Instrument;

use crate::request::{Bytes, HeaderName, HeaderValue, Policy, Reply, Request};

use crate::address::{BaseUrl, CallbackAddresses};
use crate::code::ErrorCode;
use crate::envelope::{Envelope, Outcome};
use crate::error::{
    DecodeError, Error, Failure, HttpError, PendingReply, SetupError, TransportError,
    TransportErrorKind,
};
use crate::retry::{AttemptOutcome, Decision, decide};
use crate::settings::ServiceHeaders;

/// A service's HTTP transport. Cheap to clone; clones share the connection pool.
#[derive(Clone)]
pub struct Transport {
    pub(crate) service: &'static str,
    pub(crate) base: BaseUrl,
    pub(crate) headers: HeaderMap,
    pub(crate) policy: Policy,
    pub(crate) client: reqwest::Client,
    pub(crate) callbacks: CallbackAddresses,
    pub(crate) max_reply_bytes: usize,
    /// The resend budget every clone of this transport shares.
    pub(crate) budget: Arc<crate::retry::Bucket>,
    /// Run around every attempt, in order.
    pub(crate) interceptors: Arc<[Arc<dyn crate::intercept::Interceptor>]>,
    /// Secret headers read from their source before every attempt.
    pub(crate) dynamic: Arc<[DynamicHeader]>,
    /// Headers that are not of the account (see [`ServiceHeaders::preference`]).
    pub(crate) preferences: Arc<[HeaderName]>,
    /// The base URL joined with each path called so far; shared by every clone (one base).
    pub(crate) joined: Arc<Joined>,
}

/// The base URL joined with the paths a transport called, at most [`Joined::MAX`] of them: a
/// call to a path called before clones its URL, where joining parses the path again (the `url`
/// crate checks and encodes every character it is given). A service has a few fixed paths.
#[derive(Default)]
pub(crate) struct Joined {
    known: std::sync::RwLock<Vec<(Box<str>, url::Url)>>,
}

impl Joined {
    /// Paths kept; a path beyond them is joined on every call, as before any is kept.
    const MAX: usize = 32;

    /// `base` joined with `path`: kept from an earlier call, or joined now (and kept).
    fn get(&self, base: &BaseUrl, path: &str) -> url::Url {
        if let Ok(known) = self.known.read()
            && let Some((_, url)) = known.iter().find(|(p, _)| **p == *path)
        {
            return url.clone();
        }
        let url = join(base, path);
        if let Ok(mut known) = self.known.write()
            && known.len() < Self::MAX
            && !known.iter().any(|(p, _)| **p == *path)
        {
            known.push((path.into(), url.clone()));
        }
        url
    }
}

/// The base URL with `path` appended (from the base parsed once: a copy with its path set,
/// instead of a whole URL parsed again).
fn join(base: &BaseUrl, path: &str) -> url::Url {
    let mut url = base.url().clone();
    let base_path = url.path().trim_end_matches('/');
    let mut full = String::with_capacity(base_path.len() + path.len() + 1);
    full.push_str(base_path);
    if !path.starts_with('/') {
        full.push('/');
    }
    full.push_str(path);
    url.set_path(&full);
    url
}

/// A secret header whose value comes from a [`SecretSource`](crate::credentials::SecretSource).
#[derive(Clone)]
pub(crate) struct DynamicHeader {
    pub(crate) name: HeaderName,
    pub(crate) setting: String,
    pub(crate) source: Arc<dyn crate::credentials::SecretSource>,
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

/// How far a call got, shared with [`Transport::call`] so that a call cut off by its deadline
/// still says how many attempts it made and whether one may have left.
#[derive(Default)]
struct Progress {
    attempts: AtomicU32,
    may_have_left: AtomicBool,
}

/// What one attempt produced.
enum Attempt {
    Body {
        status: u16,
        body: Bytes,
        /// The `Retry-After` of a 429 or 503 answer.
        retry_after: Option<Duration>,
    },
    Failed {
        kind: TransportErrorKind,
        may_have_reached: bool,
        message: String,
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    Setup(SetupError),
}

impl Transport {
    /// Which callback addresses the client accepts (checked against the base URL).
    pub fn callbacks(&self) -> CallbackAddresses {
        self.callbacks
    }

    /// The base URL.
    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    /// The service and account this transport sends to, as a journal records it beside each
    /// request: the base URL and a fingerprint of the account's plain settings (a transfer
    /// username, a collect channel), never of a secret, nor of the User-Agent. A request recorded
    /// under one target must never be sent (resent, recovered) through a transport of another:
    /// a sandbox's request would become a real payment, one account's a second transfer in
    /// another.
    pub fn target(&self) -> String {
        let mut plain: Vec<(&str, &[u8])> = self
            .headers
            .iter()
            .filter(|(name, value)| {
                !value.is_sensitive()
                    && *name != http::header::USER_AGENT
                    && *name != http::header::ACCEPT
                    && !self.preferences.contains(name)
            })
            .map(|(name, value)| (name.as_str(), value.as_bytes()))
            .collect();
        plain.sort_unstable();
        // FNV-1a, 64 bits: stable across Rust versions and platforms, as a recorded value must be.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for (name, value) in plain {
            for byte in name
                .bytes()
                .chain([0])
                .chain(value.iter().copied())
                .chain([0])
            {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        format!("{} account={hash:016x}", self.base.as_str())
    }

    /// The client policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The service name.
    pub fn service(&self) -> &'static str {
        self.service
    }

    /// The URL of a request without its query (which may carry a phone number or another
    /// personal value): what the spans record.
    fn url_without_query(&self, request: &Request) -> url::Url {
        let mut url = self.url_for(request);
        url.set_query(None);
        url
    }

    /// The full URL of a request, with its query.
    pub fn url_of(&self, request: &Request) -> String {
        self.url_for(request).into()
    }

    /// The base URL with the request's path appended ([`Joined`]), and its query.
    fn url_for(&self, request: &Request) -> url::Url {
        let mut url = self.joined.get(&self.base, &request.path);
        if !request.query.is_empty() {
            let mut q = url.query_pairs_mut();
            for (k, v) in &request.query {
                q.append_pair(k, v);
            }
        }
        url
    }

    /// Send `request` (resending it as allowed) and sort the reply.
    ///
    /// A request that carries a [`DeliveryMark`](crate::verdict::DeliveryMark) has it set before the
    /// first byte of any attempt leaves, so dropping this future mid-call leaves the mark set;
    /// once the call completes, the mark keeps what the call proved (see
    /// [`crate::verdict`]).
    ///
    /// # Errors
    ///
    /// Every outcome but a successful envelope, as [`Error`]: a failure code,
    /// Pending, a page without the envelope, a transport failure, an unreadable reply.
    pub async fn call<T: DeserializeOwned, C: ErrorCode>(
        &self,
        request: Request,
    ) -> Result<Reply<T>, Error<C>> {
        // One span per call, its fields named by the OpenTelemetry conventions for an HTTP
        // client call (what collectors and dashboards key on) and ours under `whish.`; a child
        // span per attempt (below). The values are computed only when a subscriber wants the
        // span, and no span is made while no tracing dispatcher was ever set: with tracing's
        // `log` feature on (another dependency may turn it on), a disabled span still computes
        // every field for the `log` crate, on every call. The URL is recorded without its
        // query; no header value is ever recorded.
        let span = if !tracing::dispatcher::has_been_set() {
            tracing::Span::none()
        } else {
            tracing::info_span!(
                "whish.call",
                otel.name = request.endpoint,
                otel.kind = "client",
                otel.status_code = tracing::field::Empty,
                rpc.system = "whish",
                rpc.service = self.service,
                rpc.method = request.endpoint,
                http.request.method = request.method.as_str(),
                server.address = self.base.url().host_str().unwrap_or(""),
                server.port = self.base.url().port_or_known_default().unwrap_or(0),
                url.full = self.url_without_query(&request).as_str(),
                http.response.status_code = tracing::field::Empty,
                error.type = tracing::field::Empty,
                whish.service = self.service,
                whish.operation = request.endpoint,
                whish.idempotency_key = request.idempotency_key.as_deref().unwrap_or(""),
                whish.attempts = tracing::field::Empty,
                whish.outcome = tracing::field::Empty,
                whish.duration_ms = tracing::field::Empty,
            )
        };
        let progress = Progress::default();
        // The attempt loop's state (reqwest's futures, the reply) is about 1 KB. Boxed once
        // here, the caller's futures stay small: every enclosing future (the service method,
        // the caller's task) would otherwise copy it each time it moves. It is kept under
        // 1 KB (nothing an attempt no longer needs is held across an await): glibc serves
        // blocks that small from its per-thread cache, where a larger one goes to the shared
        // heap and sorts its free blocks first, every call.
        let inner = Box::pin(self.call_inner(&request, &progress));
        let deadline = request.options.deadline;
        #[cfg(feature = "metrics")]
        let inner = {
            let started = Instant::now();
            let (service, operation) = (self.service, request.endpoint);
            Box::pin(async move {
                let result = inner.await;
                let verdict = match &result {
                    Ok(_) => crate::verdict::Verdict::Accepted,
                    Err(e) => e.verdict(),
                };
                crate::metrics::call(service, operation, verdict.as_str(), started.elapsed());
                result
            })
        };
        if span.is_disabled() {
            // No subscriber wants the span: skip the clock, the outcome text and the records.
            return match deadline {
                None => inner.await,
                Some(d) => match tokio::time::timeout(d, inner).await {
                    Ok(result) => result,
                    Err(_) => Err(self.deadline_passed(&request, &progress, d)),
                },
            };
        }
        let started = Instant::now();
        let result = match deadline {
            None => inner.instrument(span.clone()).await,
            Some(d) => match tokio::time::timeout(d, inner.instrument(span.clone())).await {
                Ok(result) => result,
                Err(_) => Err(self.deadline_passed(&request, &progress, d)),
            },
        };
        let verdict = match &result {
            Ok(_) => crate::verdict::Verdict::Accepted,
            Err(e) => e.verdict(),
        };
        span.record("whish.outcome", verdict.as_str());
        span.record("whish.attempts", progress.attempts.load(Ordering::SeqCst));
        span.record("whish.duration_ms", started.elapsed().as_millis() as u64);
        if let Err(e) = &result {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", error_type(e).as_ref());
        }
        if let Some(status) = status_of(&result) {
            span.record("http.response.status_code", status);
        }
        // One line per call at INFO (the command's `-v`): the operation, its outcome, the
        // attempts and the time.
        span.in_scope(|| {
            tracing::info!(
                "{} {} after {} attempt(s) in {} ms",
                request.endpoint,
                verdict.as_str(),
                progress.attempts.load(Ordering::SeqCst).max(1),
                started.elapsed().as_millis()
            );
        });
        result
    }

    /// The error of a call whose total deadline passed: a timeout, after which the request may
    /// have arrived if an attempt had started to leave.
    fn deadline_passed<C>(&self, request: &Request, progress: &Progress, d: Duration) -> Error<C> {
        let prior = request
            .delivery
            .as_ref()
            .is_some_and(crate::verdict::DeliveryMark::may_have_arrived);
        Error::Transport(TransportError {
            kind: TransportErrorKind::Timeout,
            may_have_reached: prior || progress.may_have_left.load(Ordering::SeqCst),
            message: format!("the call's deadline of {} ms passed", d.as_millis()),
            endpoint: request.endpoint,
            idempotency_key: request.idempotency_key.as_deref().map(str::to_owned),
            attempts: progress.attempts.load(Ordering::SeqCst).max(1),
            source: None,
        })
    }

    async fn call_inner<T: DeserializeOwned, C: ErrorCode>(
        &self,
        request: &Request,
        progress: &Progress,
    ) -> Result<Reply<T>, Error<C>> {
        let policy = request.options.retry.as_ref().unwrap_or(&self.policy.retry);
        let timeout = request
            .options
            .attempt_timeout
            .unwrap_or(self.policy.timeouts.attempt);
        let key = request.idempotency_key.as_deref();
        let mark = request.delivery.as_ref();
        // In flight from before the first byte leaves: a future dropped from here on leaves the
        // mark set, and other calls of the same request read their answers as after a
        // possible delivery.
        let in_flight = mark.map(crate::verdict::DeliveryMark::enter);
        let mut earlier_may_have_reached = false;
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            progress.attempts.store(attempts, Ordering::SeqCst);
            progress.may_have_left.store(true, Ordering::SeqCst);
            // Everything of one attempt lives in this block: only the wait is kept across the
            // backoff's await, not the attempt's answer (a call's future holds one of the two).
            let wait = {
                let span = if !tracing::dispatcher::has_been_set() {
                    tracing::Span::none()
                } else {
                    tracing::info_span!(
                        "whish.attempt",
                        otel.name = request.endpoint,
                        otel.kind = "client",
                        http.request.method = request.method.as_str(),
                        http.request.resend_count = attempts - 1,
                        http.response.status_code = tracing::field::Empty,
                        error.type = tracing::field::Empty,
                        whish.attempt = attempts,
                    )
                };
                #[cfg(feature = "metrics")]
                let attempt_started = Instant::now();
                // Instrumented only when a subscriber wants the span: entering and leaving a
                // disabled span on every poll is work no one asked for.
                let attempt = if span.is_disabled() {
                    self.attempt(request, timeout, attempts).await
                } else {
                    self.attempt(request, timeout, attempts)
                        .instrument(span.clone())
                        .await
                };
                #[cfg(feature = "metrics")]
                {
                    let result = match &attempt {
                        Attempt::Body { status, .. } => status.to_string(),
                        Attempt::Failed { kind, .. } => kind.as_str().to_owned(),
                        Attempt::Setup(_) => "setup".to_owned(),
                    };
                    crate::metrics::attempt(
                        self.service,
                        request.endpoint,
                        &result,
                        attempts > 1,
                        attempt_started.elapsed(),
                    );
                }
                if !span.is_disabled() {
                    match &attempt {
                        Attempt::Body { status, .. } => {
                            span.record("http.response.status_code", *status);
                        }
                        Attempt::Failed { kind, .. } => {
                            span.record("error.type", kind.as_str());
                        }
                        Attempt::Setup(_) => {
                            span.record("error.type", "setup");
                        }
                    }
                }
                // What other calls of the same prepared request may have delivered (an earlier
                // call, a dropped one, one in flight beside this one), read when this answer is.
                let others =
                    mark.is_some_and(crate::verdict::DeliveryMark::others_may_have_arrived);
                let reached = match &attempt {
                    Attempt::Body { .. } => true,
                    Attempt::Failed {
                        may_have_reached, ..
                    } => *may_have_reached,
                    Attempt::Setup(_) => false,
                };
                progress
                    .may_have_left
                    .store(earlier_may_have_reached || reached, Ordering::SeqCst);
                let retry_after = match &attempt {
                    Attempt::Body { retry_after, .. } => *retry_after,
                    _ => None,
                };
                let (outcome, result) = self.sort::<T, C>(
                    attempt,
                    request,
                    attempts,
                    earlier_may_have_reached || others,
                );
                let mut decision = decide(
                    policy,
                    request.resend,
                    attempts,
                    outcome,
                    crate::ids::unit_random(),
                );
                if let Decision::RetryAfter(wait) = decision {
                    decision = self.listen(policy, outcome, wait, retry_after);
                }
                if result.is_ok() {
                    self.budget.refill();
                }
                match decision {
                    Decision::Stop => {
                        if let Some(guard) = in_flight {
                            // The mark keeps what the call proved: applied or maybe applied sets
                            // it; a refusal or nothing sent leaves it as it is.
                            let verdict = match &result {
                                Ok(_) => crate::verdict::Verdict::Accepted,
                                Err(e) => e.verdict(),
                            };
                            guard.finish(verdict.may_have_acted());
                        }
                        return result;
                    }
                    Decision::RetryAfter(wait) => {
                        // DEBUG: the call's own line (INFO) says how many attempts it took.
                        tracing::debug!(
                            attempt = attempts,
                            ?outcome,
                            wait_ms = wait.as_millis() as u64,
                            idempotency_key = key.unwrap_or(""),
                            "resending the same request with the same idempotency key"
                        );
                        earlier_may_have_reached |= reached;
                        wait
                    }
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// A resend the policy allows, checked with the server and the budget: a `Retry-After` on
    /// a 429 or 503 is waited for (when it is within the policy's `max_backoff`; a longer one
    /// ends the call with the answer it has), and the resend is paid from the client's
    /// [`RetryBudget`](crate::retry::RetryBudget) or not made.
    fn listen(
        &self,
        policy: &crate::retry::RetryPolicy,
        outcome: AttemptOutcome,
        wait: Duration,
        retry_after: Option<Duration>,
    ) -> Decision {
        let asked = match (outcome, retry_after) {
            (AttemptOutcome::NoEnvelope { status: 429 | 503 }, Some(asked)) => Some(asked),
            _ => None,
        };
        if let Some(asked) = asked
            && asked > policy.max_backoff
        {
            tracing::debug!(
                retry_after_ms = asked.as_millis() as u64,
                "the server asks for a longer wait than the policy's max_backoff: not resent"
            );
            return Decision::Stop;
        }
        if !self.budget.try_take(outcome == AttemptOutcome::TimedOut) {
            tracing::debug!("the client's retry budget is spent: not resent");
            return Decision::Stop;
        }
        Decision::RetryAfter(asked.map_or(wait, |a| a.max(wait)))
    }

    /// The same transport for another account: `headers` replace the headers of the same names
    /// (the credentials), and everything else is shared with this one (the connection pool, the retry budget, the
    /// interceptors, the base URL and the policy). The service clients' `with_credentials` call
    /// it.
    ///
    /// # Errors
    ///
    /// A `SetupError` naming the setting, as the builders' `build`.
    pub fn with_headers(&self, headers: ServiceHeaders) -> Result<Transport, SetupError> {
        if let Some(e) = headers.error {
            return Err(e);
        }
        // The new account's headers replace the same names; the rest (Accept, User-Agent, a
        // service's optional headers) stay.
        let mut all = self.headers.clone();
        for (name, value) in headers.headers {
            if let Some(name) = name {
                all.insert(name, value);
            }
        }
        for d in &headers.dynamic {
            all.remove(&d.name);
        }
        Ok(Transport {
            headers: all,
            dynamic: headers.dynamic.into(),
            preferences: self
                .preferences
                .iter()
                .chain(&headers.preferences)
                .cloned()
                .collect(),
            ..self.clone()
        })
    }

    /// The tokens left in this client's retry budget.
    pub fn retry_budget_left(&self) -> u32 {
        self.budget.tokens()
    }

    async fn attempt(&self, request: &Request, timeout: Duration, number: u32) -> Attempt {
        let http = match self.http_request(request, timeout) {
            Ok(http) => http,
            Err(setup) => return setup,
        };
        if self.interceptors.is_empty() {
            // Handed over within the statement: a named request would keep its 264 bytes in
            // this future across the await.
            return self.exchange(http).await;
        }
        // Boxed: its state (the protected headers, the interceptors' views) is no part of a
        // call without interceptors.
        Box::pin(self.intercepted(request, number, http)).await
    }

    /// The request of one attempt. The URL is built for each attempt and handed over whole:
    /// nothing of it is kept alongside. (Under many concurrent calls, every allocation a call
    /// holds across its awaits costs throughput: see docs/performance.md.) Then the service's
    /// headers (one copy of the map, moved in whole), the request's own, which replace a
    /// service header of the same name, and the content type.
    fn http_request(
        &self,
        request: &Request,
        timeout: Duration,
    ) -> Result<reqwest::Request, Attempt> {
        let mut http = reqwest::Request::new(request.method.clone(), self.url_for(request));
        *http.headers_mut() = self.headers.clone();
        for d in self.dynamic.iter() {
            let value = d
                .source
                .current()
                .and_then(|v| crate::credentials::header_value(&v).map_err(str::to_owned));
            match value {
                Ok(v) => {
                    http.headers_mut().insert(d.name.clone(), v);
                }
                Err(why) => {
                    return Err(Attempt::Setup(SetupError::invalid(
                        &d.setting,
                        format!("its source gave no usable value: {why}"),
                    )));
                }
            }
        }
        for (k, v) in &request.headers {
            http.headers_mut().insert(k.clone(), v.clone());
        }
        if let Some(body) = &request.body {
            http.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            *http.body_mut() = Some(body.clone().into());
        }
        *http.timeout_mut() = Some(timeout);
        Ok(http)
    }

    /// An attempt run through the interceptors: each sees the request before it leaves and
    /// the outcome after.
    async fn intercepted(
        &self,
        request: &Request,
        number: u32,
        mut http: reqwest::Request,
    ) -> Attempt {
        // What an interceptor may not replace: the service's headers and the request's own.
        let mut protected = self.headers.clone();
        for (k, v) in &request.headers {
            protected.insert(k.clone(), v.clone());
        }
        // The credentials read from a source are the SDK's too.
        for d in self.dynamic.iter() {
            protected.insert(d.name.clone(), HeaderValue::from_static(""));
        }
        let (method, url) = (http.method().clone(), http.url().clone());
        for i in self.interceptors.iter() {
            i.before_attempt(&mut crate::intercept::BeforeAttempt {
                service: self.service,
                operation: request.endpoint,
                attempt: number,
                idempotency_key: request.idempotency_key.as_deref(),
                method: &method,
                url: &url,
                headers: http.headers_mut(),
                protected: &protected,
            });
        }
        let started = Instant::now();
        let result = self.exchange(http).await;
        let (status, failure) = match &result {
            Attempt::Body { status, .. } => (Some(*status), None),
            Attempt::Failed { kind, .. } => (None, Some(*kind)),
            Attempt::Setup(_) => (None, None),
        };
        let after = crate::intercept::AfterAttempt {
            service: self.service,
            operation: request.endpoint,
            attempt: number,
            idempotency_key: request.idempotency_key.as_deref(),
            status,
            failure,
            elapsed: started.elapsed(),
        };
        for i in self.interceptors.iter() {
            i.after_attempt(&after);
        }
        result
    }

    /// Send one attempt and read its answer, within the client's limits.
    fn exchange(&self, http: reqwest::Request) -> impl Future<Output = Attempt> + '_ {
        // Handed to reqwest here, outside the future: an async fn keeps its arguments for its
        // whole life, and the request (264 bytes) is no use once it is on its way.
        self.answer(self.client.execute(http))
    }

    /// The answer to an attempt reqwest is sending, read within the client's limits.
    async fn answer(
        &self,
        sending: impl Future<Output = reqwest::Result<reqwest::Response>>,
    ) -> Attempt {
        let response = match sending.await {
            Ok(r) => r,
            Err(e) => return classify(e),
        };
        let status = response.status().as_u16();
        let retry_after = match status {
            429 | 503 => response
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| crate::retry::parse_retry_after(v, std::time::SystemTime::now())),
            _ => None,
        };
        let limit = self.max_reply_bytes;
        match response.content_length() {
            Some(n) if n > limit as u64 => return too_large(limit),
            // A declared length within the cap: hyper reads exactly that many bytes, so the
            // body can be taken whole, without copying it chunk by chunk.
            Some(_) => {
                return match response.bytes().await {
                    Ok(body) => Attempt::Body {
                        status,
                        body,
                        retry_after,
                    },
                    Err(e) => broken_body(e),
                };
            }
            None => {}
        }
        // Boxed: a reply without a declared length is rare, and its reader's state is no part
        // of the usual call.
        match Box::pin(read_chunked(response, limit)).await {
            Ok(body) => Attempt::Body {
                status,
                body,
                retry_after,
            },
            Err(failed) => failed,
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
        let key = request.idempotency_key.as_deref().map(str::to_owned);
        let (status, body) = match attempt {
            Attempt::Body { status, body, .. } => (status, body),
            Attempt::Setup(e) => return (AttemptOutcome::SetupFailed, Err(Error::Setup(e))),
            Attempt::Failed {
                kind,
                may_have_reached,
                message,
                source,
            } => {
                let outcome = match kind {
                    TransportErrorKind::Connect => AttemptOutcome::ConnectFailed,
                    TransportErrorKind::Tls => AttemptOutcome::TlsFailed,
                    TransportErrorKind::Timeout => AttemptOutcome::TimedOut,
                    TransportErrorKind::Io => AttemptOutcome::ConnectionBroken,
                    TransportErrorKind::ReplyTooLarge => AttemptOutcome::ReplyTooLarge,
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
                        source,
                    })),
                );
            }
        };
        let envelope = match Envelope::<T>::from_slice(&body) {
            Ok(e) => e,
            // A 2xx reply that is not the envelope (truncated JSON, `{}`, a proxy's HTML page)
            // may still follow a request the service applied: the outcome is unknown, exactly
            // as for an envelope whose data cannot be read.
            Err(e) if e.not_an_envelope && !(200..300).contains(&status) => {
                return (
                    AttemptOutcome::NoEnvelope { status },
                    Err(Error::Http(HttpError {
                        status,
                        body_prefix: HttpError::prefix_of(&body),
                        endpoint,
                        idempotency_key: key,
                        after_possible_delivery: earlier_may_have_reached,
                        from_service: request.refused_with.contains(&status),
                    })),
                );
            }
            Err(e) => {
                return (
                    AttemptOutcome::Answered,
                    Err(Error::Decode(DecodeError::new(
                        e.path, e.message, status, endpoint, key,
                    ))),
                );
            }
        };
        match envelope.outcome() {
            Outcome::Success => (
                AttemptOutcome::Answered,
                Ok(Reply {
                    data: envelope.data,
                    dialog: envelope.dialog.map(|d| *d),
                    extra: envelope.extra.map(|v| *v),
                    actions: envelope.actions.map(|v| *v),
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
                    dialog: envelope.dialog.map(|d| *d),
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
                        dialog: envelope.dialog.map(|d| *d),
                        extra: envelope.extra.map(|v| *v),
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

/// The `error.type` of a failed call: low in cardinality, as the conventions ask: the
/// service's code (a documented, finite set), `pending`, the transport failure's kind, the HTTP
/// status of a page without the envelope, or the class of a local failure.
fn error_type<C: ErrorCode>(e: &Error<C>) -> std::borrow::Cow<'static, str> {
    match e {
        Error::Failed(f) if f.code.is_unknown() => "undocumented_code".into(),
        Error::Failed(f) => f.code.as_str().to_owned().into(),
        Error::Pending(_) => "pending".into(),
        Error::Transport(t) => t.kind.as_str().into(),
        Error::Http(h) => h.status.to_string().into(),
        Error::Decode(_) => "unreadable_reply".into(),
        Error::Validation(_) => "validation".into(),
        Error::Setup(_) => "setup".into(),
        Error::Record(_) => "journal".into(),
    }
}

/// The HTTP status of the last answer, when one came.
fn status_of<T, C>(result: &Result<Reply<T>, Error<C>>) -> Option<u16> {
    match result {
        Ok(_) => Some(200),
        Err(Error::Http(h)) => Some(h.status),
        Err(Error::Decode(d)) => Some(d.http_status),
        Err(Error::Failed(_) | Error::Pending(_)) => Some(200),
        Err(_) => None,
    }
}

/// The reply broke off while its body was read: the request arrived.
fn broken_body(e: reqwest::Error) -> Attempt {
    match classify(e) {
        Attempt::Failed {
            kind,
            message,
            source,
            ..
        } => Attempt::Failed {
            kind: if kind == TransportErrorKind::Timeout {
                kind
            } else {
                TransportErrorKind::Io
            },
            may_have_reached: true,
            message,
            source,
        },
        other => other,
    }
}

fn too_large(limit: usize) -> Attempt {
    Attempt::Failed {
        kind: TransportErrorKind::ReplyTooLarge,
        may_have_reached: true,
        message: format!("the reply is larger than max_reply_bytes ({limit} bytes)"),
        source: None,
    }
}

/// The body of a reply without a declared length, read chunk by chunk up to `limit` bytes.
async fn read_chunked(mut response: reqwest::Response, limit: usize) -> Result<Bytes, Attempt> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(too_large(limit));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(Bytes::from(body)),
            Err(e) => return Err(broken_body(e)),
        }
    }
}

/// Sort a reqwest error into a transport failure kind and whether the request may have arrived.
fn classify(e: reqwest::Error) -> Attempt {
    let message = error_chain(&e);
    if e.is_builder() {
        return Attempt::Setup(
            SetupError::invalid("request", "could not be formed").with_source(e),
        );
    }
    let tls = is_tls_failure(&e);
    let (kind, may_have_reached) = if e.is_connect() {
        if tls {
            (TransportErrorKind::Tls, false)
        } else {
            (TransportErrorKind::Connect, false)
        }
    } else if e.is_timeout() {
        (TransportErrorKind::Timeout, true)
    } else {
        (TransportErrorKind::Io, true)
    };
    Attempt::Failed {
        kind,
        may_have_reached,
        message,
        source: Some(Arc::new(e)),
    }
}

/// True when the error's chain holds the TLS stack's own error type: a handshake that failed
/// (a certificate refused, a protocol mismatch), told apart from a connection or name lookup
/// that failed by the types in the chain, never by the message's text (a host name with "tls"
/// in it once turned a DNS failure into a TLS one). An I/O error is looked into, since the TLS
/// streams wrap their errors in one.
fn is_tls_failure(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(e);
    while let Some(err) = current {
        if is_tls_error_type(err) {
            return true;
        }
        // An I/O error's `source` skips the error it wraps: look at that one itself.
        current = match err.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    false
}

fn is_tls_error_type(e: &(dyn std::error::Error + 'static)) -> bool {
    #[cfg(any(feature = "rustls-ring", feature = "rustls-aws-lc-rs"))]
    if e.is::<rustls::Error>() {
        return true;
    }
    #[cfg(feature = "native-tls")]
    if e.is::<native_tls::Error>() {
        return true;
    }
    let _ = e;
    false
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
