//! The one error type of every client.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::code::ErrorCode;
use crate::envelope::Dialog;
use crate::validation::ValidationError;
use crate::verdict::{Answer, History, Verdict, decide};

fn history(may_have_arrived: bool) -> History {
    if may_have_arrived {
        History::MayHaveArrived
    } else {
        History::Fresh
    }
}

/// Everything that can go wrong with a call. `C` is the service's error-code enum.
///
/// Read it through the predicates, the same way in every service:
///
/// | predicate | meaning | what to do |
/// |---|---|---|
/// | [`code`](Self::code) is `Some` | the service refused: final, nothing done | a new attempt needs a new key |
/// | [`is_pending`](Self::is_pending) | code 500: outcome unknown, **not failed** | keep the key; follow up with status |
/// | [`outcome_unknown`](Self::outcome_unknown) | the request may have been applied | resend the same prepared request, then status |
/// | [`nothing_sent`](Self::nothing_sent) | nothing reached the service | fix the input or retry freely |
///
/// It keeps apart what the caller must handle differently: a documented failure code, Pending
/// (outcome unknown), a transport failure (and whether the request may have reached the service),
/// an HTTP reply that is not the envelope, a reply whose data did not decode, a request that was
/// refused locally before anything was sent, and a client that could not be set up.
///
/// `Display` is one line: the endpoint, what happened, the code and the service's message. What to
/// do next is [`Error::hint`]; the underlying cause, where there is one, is
/// [`source`](std::error::Error::source).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error<C> {
    /// The service answered `status: false` with a failure code.
    #[error(transparent)]
    Failed(Box<Failure<C>>),
    /// The service answered code 500: the outcome is unknown, it is **not** a failure.
    #[error(transparent)]
    Pending(Box<PendingReply>),
    /// The request did not complete at the transport level.
    #[error(transparent)]
    Transport(TransportError),
    /// The service (or a proxy in front of it) answered something other than the envelope.
    #[error(transparent)]
    Http(HttpError),
    /// A reply arrived but it was not the documented envelope or data.
    #[error(transparent)]
    Decode(DecodeError),
    /// The SDK refused the request before sending anything. The text is this error's own: it
    /// has no `source`.
    #[error("refused before sending: {0}")]
    Validation(ValidationError),
    /// The HTTP client or the request could not be set up; nothing was sent.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The durable record of the request (a journal) could not be written before sending, or
    /// refused the request; nothing was sent.
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// A documented (or new) failure code.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Failure<C> {
    /// The code, typed. Unknown strings are in its `Unknown` arm.
    pub code: C,
    /// The code exactly as the service sent it.
    pub raw: String,
    /// The service's display message. Show it; never branch on it.
    pub dialog: Option<Dialog>,
    /// `extra` of the envelope (the collect service puts a new price here on `purchase.confirm`).
    pub extra: Option<Value>,
    /// True when this failure is the replay of an already-processed request.
    pub retrieved: Option<bool>,
    /// The endpoint that answered, e.g. `transfer.send`.
    pub endpoint: &'static str,
    /// The idempotency key the request carried, if any.
    pub idempotency_key: Option<String>,
    /// How many attempts were made, resends included.
    pub attempts: u32,
    /// True when an attempt before the one that answered may have reached the service: a code
    /// such as `transfer.already.done` then confirms that earlier attempt.
    pub resent_after_possible_delivery: bool,
}

/// A Pending reply (code 500).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{endpoint}: pending (code 500) after {attempts} {}, outcome unknown{}",
    attempts_word(*attempts),
    key_suffix(idempotency_key)
)]
#[non_exhaustive]
pub struct PendingReply {
    /// The service's display message.
    pub dialog: Option<Dialog>,
    /// True when this Pending is the replay of an already-processed request.
    pub retrieved: Option<bool>,
    /// The endpoint that answered.
    pub endpoint: &'static str,
    /// The idempotency key to reconcile with (Request-id or externalId).
    pub idempotency_key: Option<String>,
    /// How many attempts were made, resends included.
    pub attempts: u32,
}

/// What kind of transport failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The connection could not be opened: the request did not reach the service.
    Connect,
    /// The TLS handshake failed.
    Tls,
    /// No complete reply within the per-attempt timeout.
    Timeout,
    /// The connection broke after the request was written, or another I/O error.
    Io,
    /// The reply body was larger than the client's `max_reply_bytes`; reading stopped there.
    ReplyTooLarge,
}

impl TransportErrorKind {
    /// What happened, as the error's text says it.
    fn what(self) -> &'static str {
        match self {
            TransportErrorKind::Connect => "could not connect",
            TransportErrorKind::Tls => "tls handshake failed",
            TransportErrorKind::Timeout => "timed out",
            TransportErrorKind::Io => "connection failed",
            TransportErrorKind::ReplyTooLarge => "reply too large",
        }
    }

    /// The name the spans and metrics use: `connect`, `tls`, `timeout`, `io`,
    /// `reply_too_large`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportErrorKind::Connect => "connect",
            TransportErrorKind::Tls => "tls",
            TransportErrorKind::Timeout => "timeout",
            TransportErrorKind::Io => "io",
            TransportErrorKind::ReplyTooLarge => "reply_too_large",
        }
    }
}

/// A request that did not complete.
#[derive(Clone, thiserror::Error)]
#[error(
    "{endpoint}: {} after {attempts} {}{}",
    kind.what(),
    attempts_word(*attempts),
    if *may_have_reached { ", the request may have been applied" } else { "" }
)]
#[non_exhaustive]
pub struct TransportError {
    /// What failed.
    pub kind: TransportErrorKind,
    /// True when the request may have reached the service and been applied.
    pub may_have_reached: bool,
    /// The underlying error chain, as text (never carries a header value).
    pub message: String,
    /// The endpoint that was called.
    pub endpoint: &'static str,
    /// The idempotency key the request carried, if any.
    pub idempotency_key: Option<String>,
    /// How many attempts were made, resends included.
    pub attempts: u32,
    /// The underlying error, returned by `source()`.
    pub(crate) source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl TransportError {
    /// A transport error without an underlying cause (for tests and for other transports).
    #[doc(hidden)]
    pub fn new(
        kind: TransportErrorKind,
        may_have_reached: bool,
        message: impl Into<String>,
        endpoint: &'static str,
    ) -> TransportError {
        TransportError {
            kind,
            may_have_reached,
            message: message.into(),
            endpoint,
            idempotency_key: None,
            attempts: 1,
            source: None,
        }
    }
}

impl fmt::Debug for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportError")
            .field("kind", &self.kind)
            .field("may_have_reached", &self.may_have_reached)
            .field("message", &self.message)
            .field("endpoint", &self.endpoint)
            .field("idempotency_key", &self.idempotency_key)
            .field("attempts", &self.attempts)
            .finish()
    }
}

impl PartialEq for TransportError {
    fn eq(&self, o: &Self) -> bool {
        self.kind == o.kind
            && self.may_have_reached == o.may_have_reached
            && self.message == o.message
            && self.endpoint == o.endpoint
            && self.idempotency_key == o.idempotency_key
            && self.attempts == o.attempts
    }
}

/// An HTTP reply that is not the envelope, such as the collect service's 403 for non-public
/// callback addresses or a proxy's HTML 502.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{endpoint}: http {status} without the service envelope{}",
    if *after_possible_delivery { " after an attempt that may have arrived, outcome unknown" } else { "" }
)]
#[non_exhaustive]
pub struct HttpError {
    /// The HTTP status.
    pub status: u16,
    /// At most the first 512 bytes of the body, lossily decoded.
    pub body_prefix: String,
    /// The endpoint that was called.
    pub endpoint: &'static str,
    /// The idempotency key the request carried, if any.
    pub idempotency_key: Option<String>,
    /// True when an attempt before this answer may have reached the service (in this call, or
    /// an earlier one of the same prepared request): the page then proves nothing about it.
    pub after_possible_delivery: bool,
    /// True when the service documents this status as its own refusal of this request (the
    /// collect service's 403 for a non-public address). Any other page comes from something in
    /// front of the service (a WAF, a proxy, a load balancer), which may have passed the
    /// request on before it answered.
    pub from_service: bool,
}

/// The most of a non-envelope body an [`HttpError`] keeps.
pub const BODY_PREFIX_LIMIT: usize = 512;

impl HttpError {
    /// Keep at most [`BODY_PREFIX_LIMIT`] bytes of `body`, cut on a character boundary.
    #[doc(hidden)]
    pub fn prefix_of(body: &[u8]) -> String {
        let cut = &body[..body.len().min(BODY_PREFIX_LIMIT)];
        // A cut through a multi-byte character ends in U+FFFD; that is fine, and still bounded.
        String::from_utf8_lossy(cut).into_owned()
    }

    /// True for 5xx, 408 and 429: the reply came from something that was overloaded, slow or
    /// broken, and the request may have been passed on before it answered.
    pub fn is_server_side(&self) -> bool {
        self.status >= 500 || self.status == 429 || self.status == 408
    }
}

/// A reply that arrived but is not the documented envelope or data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{endpoint}: unreadable reply at `{path}`: {message}")]
#[non_exhaustive]
pub struct DecodeError {
    /// The JSON path that failed, e.g. `data.list[3].amount`.
    pub path: String,
    /// What was wrong there (a short excerpt, never a whole value).
    pub message: String,
    /// The HTTP status of the reply.
    pub http_status: u16,
    /// The endpoint that answered.
    pub endpoint: &'static str,
    /// The idempotency key the request carried, if any.
    pub idempotency_key: Option<String>,
}

/// The longest decode message kept, in characters: enough to say what was wrong, never a whole
/// value (which could be huge, or hold a PIN).
pub const DECODE_MESSAGE_LIMIT: usize = 160;

impl DecodeError {
    /// A decode error; `message` is cut to [`DECODE_MESSAGE_LIMIT`] characters.
    #[doc(hidden)]
    pub fn new(
        path: impl Into<String>,
        message: impl Into<String>,
        http_status: u16,
        endpoint: &'static str,
        idempotency_key: Option<String>,
    ) -> DecodeError {
        DecodeError {
            path: path.into(),
            message: excerpt(&message.into(), DECODE_MESSAGE_LIMIT),
            http_status,
            endpoint,
            idempotency_key,
        }
    }
}

/// A client or a request that could not be set up: a missing or invalid setting, or an HTTP
/// client the TLS stack could not build. Nothing was sent.
#[derive(Clone, thiserror::Error)]
#[error("setting `{setting}` {reason}")]
#[non_exhaustive]
pub struct SetupError {
    /// The setting, as the builder names it (`base_url`, `username`, `proxy`).
    pub setting: String,
    /// What was wrong.
    pub reason: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl SetupError {
    /// A setting that is required and missing.
    pub fn missing(setting: impl Into<String>) -> SetupError {
        SetupError::invalid(setting, "is required")
    }

    /// A setting with a bad value.
    pub fn invalid(setting: impl Into<String>, reason: impl Into<String>) -> SetupError {
        SetupError {
            setting: setting.into(),
            reason: reason.into(),
            source: None,
        }
    }

    /// With the underlying error.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }
}

impl From<ValidationError> for SetupError {
    fn from(v: ValidationError) -> Self {
        SetupError {
            setting: v.field.clone(),
            reason: v.kind.to_string(),
            source: None,
        }
    }
}

impl fmt::Debug for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetupError")
            .field("setting", &self.setting)
            .field("reason", &self.reason)
            .finish()
    }
}

impl PartialEq for SetupError {
    fn eq(&self, o: &Self) -> bool {
        self.setting == o.setting && self.reason == o.reason
    }
}

/// At most `limit` characters of `text`, control characters escaped, `…` when cut.
pub(crate) fn excerpt(text: &str, limit: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == limit {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

impl<C: ErrorCode> Error<C> {
    /// What happened to the request, decided once for every layer: see [`crate::verdict`].
    /// The predicates below read it.
    ///
    /// ```
    /// use whish_core::{Error, HttpError, verdict::Verdict};
    /// # use whish_core::ErrorCode;
    /// # fn page<C: ErrorCode>(e: &Error<C>) {
    /// match e.verdict() {
    ///     Verdict::Refused => println!("final, nothing done: a new attempt needs a new key"),
    ///     Verdict::Pending | Verdict::Unknown => println!("keep the key; resend or ask status"),
    ///     Verdict::NothingSent => println!("nothing reached the service: fix and try again"),
    ///     _ => {}
    /// }
    /// # }
    /// ```
    pub fn verdict(&self) -> Verdict {
        let (history, answer) = match self {
            // `retrieved: true`: the service looked this key up and replays the result it
            // recorded for it. A replayed failure is that request's own final answer, whatever
            // its code says of retrying.
            Error::Failed(f) if f.retrieved == Some(true) => (
                History::Fresh,
                Answer::Refusal {
                    confirms_earlier: false,
                    says_nothing_earlier: false,
                    is_final: true,
                },
            ),
            Error::Failed(f) => (
                history(f.resent_after_possible_delivery),
                Answer::Refusal {
                    confirms_earlier: f.code.confirms_earlier_delivery(),
                    says_nothing_earlier: f.code.checked_first() || f.code.is_unknown(),
                    is_final: f.code.is_final(),
                },
            ),
            Error::Pending(_) => (History::Fresh, Answer::Pending),
            Error::Transport(t) => (
                History::Fresh,
                Answer::Transport {
                    may_have_reached: t.may_have_reached,
                },
            ),
            Error::Http(h) => (
                history(h.after_possible_delivery),
                Answer::NoEnvelope {
                    status: h.status,
                    from_service: h.from_service,
                },
            ),
            Error::Decode(_) => (History::Fresh, Answer::Unreadable),
            // The journal's own record of the service's refusal: final, not sent again.
            Error::Record(r) if r.already_refused => (
                History::Fresh,
                Answer::Refusal {
                    confirms_earlier: false,
                    says_nothing_earlier: false,
                    is_final: true,
                },
            ),
            // The journal cannot tell whether it was (or will be) sent.
            Error::Record(r) if r.outcome_unknown => (History::MayHaveArrived, Answer::NotSent),
            Error::Validation(_) | Error::Setup(_) | Error::Record(_) => {
                (History::Fresh, Answer::NotSent)
            }
        };
        decide(history, answer)
    }

    /// True for Pending: reconcile (status endpoint, or resend with the same key); never mark
    /// the operation failed.
    pub fn is_pending(&self) -> bool {
        self.verdict() == Verdict::Pending
    }

    /// True when the service refused the request (a failure code, or an HTTP status it documents
    /// as its refusal): final; a new attempt needs a new key.
    pub fn is_refused(&self) -> bool {
        self.verdict() == Verdict::Refused
    }

    /// True when nothing was sent: refused locally, a client that could not be set up, a
    /// journal that could not record, or a connection that never opened (with no earlier
    /// attempt that may have arrived). Safe to fix and try again.
    pub fn nothing_sent(&self) -> bool {
        self.verdict() == Verdict::NothingSent
    }

    /// True when the outcome is unknown: Pending, a transport failure after which the request
    /// may have been applied, a reply that could not be read, an HTTP page without the envelope
    /// after an attempt that may have arrived, or a confirmation that could not be read. Keep
    /// the idempotency key, resend the same prepared request (or ask the status endpoint)
    /// before doing anything else.
    ///
    /// # Examples
    ///
    /// ```
    /// use whish_core::{Error, ErrorCode};
    ///
    /// /// What a caller does with an error of any service.
    /// fn next_step<C: ErrorCode>(e: &Error<C>) -> &'static str {
    ///     if e.outcome_unknown() {
    ///         "keep the key; resend the same prepared request, then confirm with status"
    ///     } else if e.nothing_sent() {
    ///         "nothing reached the service: fix the input and try again"
    ///     } else {
    ///         "refused: final; a new attempt needs a new key"
    ///     }
    /// }
    /// ```
    pub fn outcome_unknown(&self) -> bool {
        self.verdict().is_open()
    }

    /// The failure code, when the service answered one.
    pub fn code(&self) -> Option<&C> {
        match self {
            Error::Failed(f) => Some(&f.code),
            _ => None,
        }
    }

    /// The endpoint the error is about (`transfer.send`); `None` for setup and validation.
    pub fn endpoint(&self) -> Option<&'static str> {
        match self {
            Error::Failed(f) => Some(f.endpoint),
            Error::Pending(p) => Some(p.endpoint),
            Error::Transport(t) => Some(t.endpoint),
            Error::Http(h) => Some(h.endpoint),
            Error::Decode(d) => Some(d.endpoint),
            Error::Validation(_) | Error::Setup(_) | Error::Record(_) => None,
        }
    }

    /// The idempotency key of the request (Request-id or externalId), when it carried one.
    pub fn idempotency_key(&self) -> Option<&str> {
        match self {
            Error::Failed(f) => f.idempotency_key.as_deref(),
            Error::Pending(p) => p.idempotency_key.as_deref(),
            Error::Transport(t) => t.idempotency_key.as_deref(),
            Error::Http(h) => h.idempotency_key.as_deref(),
            Error::Decode(d) => d.idempotency_key.as_deref(),
            Error::Record(r) => r.idempotency_key.as_deref(),
            Error::Validation(_) | Error::Setup(_) => None,
        }
    }

    /// The `retrieved` flag of the reply, when one arrived.
    pub fn retrieved(&self) -> Option<bool> {
        match self {
            Error::Failed(f) => f.retrieved,
            Error::Pending(p) => p.retrieved,
            _ => None,
        }
    }

    /// The dialog of the reply, when one arrived.
    pub fn dialog(&self) -> Option<&Dialog> {
        match self {
            Error::Failed(f) => f.dialog.as_ref(),
            Error::Pending(p) => p.dialog.as_ref(),
            _ => None,
        }
    }

    /// What to do next, in one sentence, in this service's terms: the documented handling of a
    /// failure code, how this service settles an unknown outcome or Pending (the status endpoint
    /// by its key, or a resend of the same prepared request), or what to correct before calling
    /// again.
    pub fn hint(&self) -> Cow<'static, str> {
        let confirm = C::confirm_hint();
        match self {
            Error::Failed(f)
                if f.resent_after_possible_delivery
                    && (f.code.checked_first() || f.code.is_unknown()) =>
            {
                format!(
                    "an earlier attempt may have been applied, and this answer (checked before \
                     the request is looked at, or undocumented) does not settle it: the outcome \
                     is unknown; {confirm}"
                )
                .into()
            }
            Error::Failed(f)
                if f.code.confirms_earlier_delivery() && f.resent_after_possible_delivery =>
            {
                format!(
                    "an earlier attempt may have been applied and its confirmation could not be \
                     read: the outcome is unknown; {confirm}"
                )
                .into()
            }
            Error::Failed(f) if f.code.is_unknown() => {
                "an undocumented code: treat it as a final failure and show the dialog".into()
            }
            Error::Failed(f) => f.code.handling().into(),
            Error::Pending(_) => C::pending_hint().into(),
            Error::Transport(t) if t.may_have_reached => {
                format!("the request may have been applied: {confirm}").into()
            }
            Error::Transport(_) => "nothing reached the service; it is safe to try again".into(),
            Error::Http(h) if h.after_possible_delivery => format!(
                "an earlier attempt may have arrived, and this page without the service's \
                 envelope (a proxy, a firewall, a gateway) proves nothing about it: {confirm}"
            )
            .into(),
            Error::Http(h) => match C::http_status_hint(h.status, h.endpoint) {
                Some(hint) => hint.into(),
                None if h.is_server_side() => format!(
                    "a proxy or the service is failing, and the request may have been applied: \
                     {confirm}"
                )
                .into(),
                None if h.from_service => {
                    "the service refused the request with this HTTP status: nothing was done; \
                     correct it, and use a new key"
                        .into()
                }
                None => format!(
                    "a page without the service's envelope (a proxy, a gateway or a firewall in \
                     between, or a wrong base URL): whatever answered may have passed the \
                     request on first, so it may have been applied: {confirm}; check the base \
                     URL (its path included) and any proxy"
                )
                .into(),
            },
            Error::Decode(_) => format!(
                "the reply could not be read, so the call may have succeeded: {confirm}; and \
                 report this reply"
            )
            .into(),
            Error::Validation(v)
                if matches!(v.kind, crate::ValidationKind::NotPublicUrl { .. }) =>
            {
                "nothing was sent: the service cannot call a loopback or private address; use a \
                 public one (against a local sandbox, build the client with \
                 `ClientSettings::allow_local_callbacks()`)"
                    .into()
            }
            Error::Validation(_) => "nothing was sent: correct the value and call again".into(),
            Error::Setup(_) => "nothing was sent: correct the client settings".into(),
            Error::Record(r) if r.already_refused => {
                "the journal holds this request as refused by the service: it is final and was \
                 not sent again; a new request needs a new key"
                    .into()
            }
            Error::Record(r) if r.outcome_unknown => {
                "the journal cannot tell whether this request was or will be sent: keep the key \
                 and run recovery (`whish journal recover`); never send it again with a new key"
                    .into()
            }
            Error::Record(_) => {
                "nothing was sent: the journal could not record the request; fix the journal \
                 (disk, database, a reused key) and call again with the same prepared request"
                    .into()
            }
        }
    }
}

impl<C> From<ValidationError> for Error<C> {
    fn from(e: ValidationError) -> Self {
        Error::Validation(e)
    }
}

/// A durable record of a request (the journal) that could not be written before sending, or
/// that refused the request (its key already names a different request). Nothing was sent.
#[derive(Clone, thiserror::Error)]
#[error(
    "journal: {message}{}; {}",
    key_suffix(idempotency_key),
    if *outcome_unknown { "the outcome is unknown" } else { "nothing was sent" }
)]
#[non_exhaustive]
pub struct RecordError {
    /// What went wrong, in one line; never carries a credential or a request body.
    pub message: String,
    /// The idempotency key of the request.
    pub idempotency_key: Option<String>,
    /// True when the journal already holds this request as refused by the service: final, so
    /// it is not sent again, and its verdict is [`Verdict::Refused`].
    pub already_refused: bool,
    /// True when the journal cannot tell whether the request was (or will be) sent: its own
    /// write's outcome is unknown, or another process took the request over while this one was
    /// sending it. The verdict is then [`Verdict::Unknown`]: keep the key and recover it; never
    /// send it again with a new one.
    pub outcome_unknown: bool,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl RecordError {
    /// The journal holds this request as refused by the service: it is not sent again.
    #[doc(hidden)]
    pub fn already_refused(
        message: impl Into<String>,
        idempotency_key: Option<String>,
    ) -> RecordError {
        RecordError {
            message: message.into(),
            idempotency_key,
            already_refused: true,
            outcome_unknown: false,
            source: None,
        }
    }

    /// The journal cannot tell whether the request was, or will be, sent.
    #[doc(hidden)]
    pub fn outcome_unknown(
        message: impl Into<String>,
        idempotency_key: Option<String>,
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    ) -> RecordError {
        RecordError {
            message: message.into(),
            idempotency_key,
            already_refused: false,
            outcome_unknown: true,
            source,
        }
    }

    /// A record error for the request with this key, with its cause.
    #[doc(hidden)]
    pub fn new(
        message: impl Into<String>,
        idempotency_key: Option<String>,
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    ) -> RecordError {
        RecordError {
            message: message.into(),
            idempotency_key,
            already_refused: false,
            outcome_unknown: false,
            source,
        }
    }
}

impl fmt::Debug for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordError")
            .field("message", &self.message)
            .field("idempotency_key", &self.idempotency_key)
            .field("already_refused", &self.already_refused)
            .field("outcome_unknown", &self.outcome_unknown)
            .finish()
    }
}

impl PartialEq for RecordError {
    fn eq(&self, o: &Self) -> bool {
        self.message == o.message
            && self.idempotency_key == o.idempotency_key
            && self.already_refused == o.already_refused
            && self.outcome_unknown == o.outcome_unknown
    }
}

fn attempts_word(n: u32) -> &'static str {
    if n == 1 { "attempt" } else { "attempts" }
}

/// `, idempotency key K` when there is a key, nothing otherwise.
fn key_suffix(key: &Option<String>) -> impl fmt::Display + '_ {
    fmt::from_fn(move |f| match key {
        Some(k) => write!(f, ", idempotency key {k}"),
        None => Ok(()),
    })
}

impl<C: ErrorCode> fmt::Display for Failure<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proves_nothing = (self.code.confirms_earlier_delivery()
            || self.code.checked_first()
            || self.code.is_unknown())
            && self.retrieved != Some(true);
        if proves_nothing && self.resent_after_possible_delivery {
            write!(
                f,
                "{}: answered {} after an attempt that may have arrived, which it does not settle; outcome unknown",
                self.endpoint,
                excerpt(&self.raw, 80)
            )?;
        } else if !self.code.is_final() && self.retrieved != Some(true) {
            write!(
                f,
                "{}: answered {}, to be retried with the same key; outcome unknown",
                self.endpoint,
                excerpt(&self.raw, 80)
            )?;
        } else {
            write!(
                f,
                "{}: refused with {}",
                self.endpoint,
                excerpt(&self.raw, 80)
            )?;
        }
        if let Some(text) = self.dialog.as_ref().and_then(Dialog::text) {
            write!(f, ": {:?}", excerpt(text, 200))?;
        }
        if self.retrieved == Some(true) {
            f.write_str(" (replayed)")?;
        }
        Ok(())
    }
}

impl<C: ErrorCode> std::error::Error for Failure<C> {}
