//! The extension point run before and after every attempt: add a header a gateway needs, sign a
//! request for an egress proxy, observe and time each attempt, without replacing the HTTP
//! client.
//!
//! An interceptor cannot switch off the SDK's rules: it sees the method and the URL but cannot
//! change them (HTTPS only, no redirects), it cannot replace or remove a header the SDK sets (the
//! credentials, the Request-id, the content type), and it never sees a credential unless it asks
//! for the request's headers with [`BeforeAttempt::headers`], which marks every value sensitive
//! first (a `Debug` of it prints `Sensitive`).
//!
//! ```
//! use std::sync::Arc;
//! use whish_core::intercept::{AfterAttempt, BeforeAttempt, Interceptor};
//!
//! struct Gateway;
//!
//! impl Interceptor for Gateway {
//!     fn before_attempt(&self, attempt: &mut BeforeAttempt<'_>) {
//!         attempt
//!             .insert_header("x-gateway-route", "payments")
//!             .expect("not a header the SDK sets");
//!     }
//!     fn after_attempt(&self, attempt: &AfterAttempt<'_>) {
//!         println!("{} attempt {}: {:?} in {:?}", attempt.operation, attempt.attempt,
//!             attempt.status, attempt.elapsed);
//!     }
//! }
//!
//! let settings = whish_core::ClientSettings::new("https://transfer.example.com/api")
//!     .interceptor(Arc::new(Gateway));
//! # let _ = settings;
//! ```

use std::fmt;
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::error::TransportErrorKind;

/// Run before and after every attempt of every call of a client (resends included). Both
/// methods do nothing by default. They run on the call's task: keep them quick.
pub trait Interceptor: Send + Sync + 'static {
    /// Before the attempt's first byte: add headers, look at the request.
    fn before_attempt(&self, attempt: &mut BeforeAttempt<'_>) {
        let _ = attempt;
    }

    /// After the attempt: its answer's status, or the failure that ended it, and its time.
    fn after_attempt(&self, attempt: &AfterAttempt<'_>) {
        let _ = attempt;
    }
}

/// The request of one attempt, as an interceptor may see and extend it.
pub struct BeforeAttempt<'a> {
    /// The service (`money-transfer`, ...).
    pub service: &'static str,
    /// The operation (`transfer.send`, ...).
    pub operation: &'static str,
    /// The attempt's number, from 1.
    pub attempt: u32,
    /// The idempotency key the request carries, if any.
    pub idempotency_key: Option<&'a str>,
    pub(crate) method: &'a http::Method,
    pub(crate) url: &'a url::Url,
    pub(crate) headers: &'a mut HeaderMap,
    pub(crate) protected: &'a HeaderMap,
}

impl BeforeAttempt<'_> {
    /// The method.
    pub fn method(&self) -> &http::Method {
        self.method
    }

    /// The URL (read only: it keeps the SDK's scheme and host).
    pub fn url(&self) -> &url::Url {
        self.url
    }

    /// Add a header to this attempt.
    ///
    /// # Errors
    ///
    /// An [`InterceptError`] when the name or the value is not a valid header, or the name is
    /// one the SDK sets (a credential, the `Request-id`, `content-type`, `host`,
    /// `content-length`, `transfer-encoding`): those are never replaced or added.
    pub fn insert_header(&mut self, name: &str, value: &str) -> Result<(), InterceptError> {
        let name = HeaderName::try_from(name)
            .map_err(|_| InterceptError(format!("`{name}` is not a header name")))?;
        let reserved = [
            // The transfer service's idempotency header: never an interceptor's, even on a
            // request that does not carry one.
            HeaderName::from_static("request-id"),
            http::header::CONTENT_TYPE,
            http::header::CONTENT_LENGTH,
            http::header::HOST,
            http::header::TRANSFER_ENCODING,
        ];
        if self.protected.contains_key(&name) || reserved.contains(&name) {
            return Err(InterceptError(format!(
                "`{name}` is set by the SDK and cannot be replaced"
            )));
        }
        let value = HeaderValue::try_from(value)
            .map_err(|_| InterceptError(format!("the value of `{name}` is not a header value")))?;
        self.headers.insert(name, value);
        Ok(())
    }

    /// Every header of the attempt, the credentials included, each value marked sensitive
    /// first (its `Debug` prints `Sensitive`; an HTTP/2 encoder never indexes it). Ask only when
    /// you must sign the request.
    pub fn headers(&mut self) -> &HeaderMap {
        for value in self.headers.values_mut() {
            value.set_sensitive(true);
        }
        self.headers
    }
}

impl fmt::Debug for BeforeAttempt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("BeforeAttempt")
            .field("service", &self.service)
            .field("operation", &self.operation)
            .field("attempt", &self.attempt)
            .field("method", self.method)
            .field("url", &self.url.as_str())
            .field("header_names", &names)
            .finish()
    }
}

/// What one attempt came to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AfterAttempt<'a> {
    /// The service.
    pub service: &'static str,
    /// The operation.
    pub operation: &'static str,
    /// The attempt's number, from 1.
    pub attempt: u32,
    /// The idempotency key the request carries, if any.
    pub idempotency_key: Option<&'a str>,
    /// The HTTP status of the answer, when one came (the outcome is read from its body).
    pub status: Option<u16>,
    /// The failure that ended the attempt without an answer.
    pub failure: Option<TransportErrorKind>,
    /// From before the first byte to the end of the answer (or the failure).
    pub elapsed: Duration,
}

/// A header an interceptor may not add.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("interceptor: {0}")]
pub struct InterceptError(String);
