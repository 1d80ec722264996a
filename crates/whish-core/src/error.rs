//! The one error type of every client.
//!
//! It keeps apart what the caller must handle differently: a documented failure code, Pending
//! (outcome unknown), a transport failure (and whether the request may have reached the service),
//! an HTTP reply that is not the envelope, a reply whose data did not decode, and a request that
//! was refused locally before anything was sent.

use std::fmt;

use serde_json::Value;

use crate::code::ErrorCode;
use crate::envelope::Dialog;
use crate::validation::ValidationError;

/// Everything that can go wrong with a call. `C` is the service's error-code enum.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error<C> {
    /// The service answered `status: false` with a failure code.
    Failed(Box<Failure<C>>),
    /// The service answered code 500: the outcome is unknown, it is **not** a failure.
    Pending(Box<PendingReply>),
    /// The request did not complete at the transport level.
    Transport(TransportError),
    /// The service (or a proxy in front of it) answered something other than the envelope.
    Http(HttpError),
    /// The envelope arrived but its data did not have the documented shape.
    Decode(DecodeError),
    /// The SDK refused the request before sending anything.
    Validation(ValidationError),
}

/// A documented (or new) failure code.
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
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
    /// The HTTP client could not be built or the request could not be formed.
    Setup,
}

/// A request that did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportError {
    /// What failed.
    pub kind: TransportErrorKind,
    /// True when the request may have reached the service and been applied.
    pub may_have_reached: bool,
    /// The underlying error, as text (never carries a header value).
    pub message: String,
    /// The endpoint that was called.
    pub endpoint: &'static str,
    /// The idempotency key the request carried, if any.
    pub idempotency_key: Option<String>,
    /// How many attempts were made, resends included.
    pub attempts: u32,
}

/// An HTTP reply that is not the envelope, such as the collect service's 403 for non-public
/// callback addresses or a proxy's HTML 502.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// The HTTP status.
    pub status: u16,
    /// At most the first 512 bytes of the body, lossily decoded.
    pub body_prefix: String,
    /// The endpoint that was called.
    pub endpoint: &'static str,
    /// The idempotency key the request carried, if any.
    pub idempotency_key: Option<String>,
}

/// The most of a non-envelope body an [`HttpError`] keeps.
pub const BODY_PREFIX_LIMIT: usize = 512;

impl HttpError {
    /// Keep at most [`BODY_PREFIX_LIMIT`] bytes of `body`, cut on a character boundary.
    pub fn prefix_of(body: &[u8]) -> String {
        let cut = &body[..body.len().min(BODY_PREFIX_LIMIT)];
        let text = String::from_utf8_lossy(cut).into_owned();
        // A cut through a multi-byte character ends in U+FFFD; that is fine, and still bounded.
        text
    }

    /// True for 5xx and 429: the reply came from something that was overloaded or broken.
    pub fn is_server_side(&self) -> bool {
        self.status >= 500 || self.status == 429
    }
}

/// An envelope whose data does not match the documented shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The JSON path that failed, e.g. `data.list[3].amount`.
    pub path: String,
    /// What was wrong there.
    pub message: String,
    /// The HTTP status of the reply.
    pub http_status: u16,
    /// The endpoint that answered.
    pub endpoint: &'static str,
    /// The idempotency key the request carried, if any.
    pub idempotency_key: Option<String>,
}

impl<C: ErrorCode> Error<C> {
    /// True for Pending: reconcile (status endpoint, or resend with the same key); never mark
    /// the operation failed.
    pub fn is_pending(&self) -> bool {
        matches!(self, Error::Pending(_))
    }

    /// True when nothing was sent (validation refused the request).
    pub fn nothing_sent(&self) -> bool {
        matches!(self, Error::Validation(_))
            || matches!(self, Error::Transport(t) if !t.may_have_reached)
    }

    /// True when the outcome is unknown: Pending, or a transport failure after which the request
    /// may have been applied, or an unreadable reply. Reconcile before acting.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            Error::Pending(_) => true,
            Error::Transport(t) => t.may_have_reached,
            Error::Http(h) => h.is_server_side(),
            Error::Decode(_) => true,
            Error::Failed(_) | Error::Validation(_) => false,
        }
    }

    /// The failure code, when the service answered one.
    pub fn code(&self) -> Option<&C> {
        match self {
            Error::Failed(f) => Some(&f.code),
            _ => None,
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
            Error::Validation(_) => None,
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
}

impl<C> From<ValidationError> for Error<C> {
    fn from(e: ValidationError) -> Self {
        Error::Validation(e)
    }
}

fn key_note(key: &Option<String>) -> String {
    key.as_ref()
        .map(|k| format!(" (idempotency key {k})"))
        .unwrap_or_default()
}

impl<C: ErrorCode> fmt::Display for Error<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Failed(x) => {
                write!(f, "{} answered failure code `{}`", x.endpoint, x.raw)?;
                if let Some(d) = x
                    .dialog
                    .as_ref()
                    .filter(|d| d.title.is_some() || d.message.is_some())
                {
                    write!(f, " ({d})")?;
                }
                if x.retrieved == Some(true) {
                    f.write_str(", replayed from an earlier identical request")?;
                }
                write!(f, "{}. ", key_note(&x.idempotency_key))?;
                if x.code.is_unknown() {
                    f.write_str(
                        "This code is not documented; treat it as a failure and check the dialog",
                    )
                } else {
                    write!(f, "Next: {}", x.code.handling())
                }
            }
            Error::Pending(p) => write!(
                f,
                "{} answered Pending (code 500) after {} attempt(s){}: the outcome is unknown, not failed. \
                 Do not mark it failed and do not create a new one; reconcile with the same idempotency key",
                p.endpoint,
                p.attempts,
                key_note(&p.idempotency_key)
            ),
            Error::Transport(t) => {
                let what = match t.kind {
                    TransportErrorKind::Connect => "could not connect",
                    TransportErrorKind::Tls => "TLS handshake failed",
                    TransportErrorKind::Timeout => "timed out",
                    TransportErrorKind::Io => "connection failed",
                    TransportErrorKind::Setup => "could not prepare the request",
                };
                write!(
                    f,
                    "{} {what} after {} attempt(s){}: {}. ",
                    t.endpoint,
                    t.attempts,
                    key_note(&t.idempotency_key),
                    t.message
                )?;
                if t.may_have_reached {
                    f.write_str(
                        "The request may have been applied: resend it with the same idempotency key, \
                         or confirm with the status endpoint, before doing anything else",
                    )
                } else {
                    f.write_str("Nothing reached the service; it is safe to try again")
                }
            }
            Error::Http(h) => write!(
                f,
                "{} answered HTTP {} without the service envelope{}: {:?}. {}",
                h.endpoint,
                h.status,
                key_note(&h.idempotency_key),
                h.body_prefix,
                if h.status == 403 {
                    "The collect service answers 403 for loopback or non-public callback and redirect \
                     addresses: use public addresses"
                } else if h.is_server_side() {
                    "A proxy or the service is failing; the request may have been applied, reconcile \
                     with the same idempotency key before retrying"
                } else {
                    "Check the base URL and credentials"
                }
            ),
            Error::Decode(d) => write!(
                f,
                "{} answered HTTP {} with data that does not match the documented shape at `{}`: {}{}. \
                 The call may have succeeded: confirm with the status endpoint, and report this reply",
                d.endpoint,
                d.http_status,
                d.path,
                d.message,
                key_note(&d.idempotency_key)
            ),
            Error::Validation(v) => write!(f, "request refused before sending: {v}"),
        }
    }
}

impl<C: ErrorCode> std::error::Error for Error<C> {}
