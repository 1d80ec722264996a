//! # whish-core
//!
//! The shared runtime of the whish SDK. It knows nothing of any one service; the service crates
//! (`whish-money-transfer`, `whish-locations`, `whish-hosted-collect`, `whish-intl-topup`) build on
//! it. It holds:
//!
//! - [`Envelope`]: the reply envelope every service answers with (`code` 500 is **Pending**,
//!   never a failure);
//! - [`Error`]: the one error type, which keeps a failure code, Pending, transport failures, non-
//!   envelope replies, decode errors, local validation and setup failures apart;
//! - [`ClientSettings`]: the one settings builder every client wraps (base URL, [`Policy`],
//!   User-Agent, proxy, root certificates, pool, reply cap);
//! - [`verdict`]: the one answer to "did the service act on this request?";
//! - [`intercept`], [`credentials`] and [`metrics`]: the extension points;
//! - [`Amount`], [`Currency`], [`RequestId`], [`ExternalId`], [`DateTime`], [`BaseUrl`],
//!   [`UserAgent`]: the typed values of the specs.
//!
//! The request, the transport and the serde helpers the service crates share are in a hidden
//! `runtime` module with no semver promise: applications never need them.
//!
//! Credentials are [`secrecy::SecretString`]; no `Debug`, `Display`, error or tracing field shows
//! one.
//!
//! ```
//! use whish_core::{Amount, Currency, Envelope, Outcome, RequestId};
//!
//! // Pending is never a failure.
//! let reply: Envelope<serde_json::Value> =
//!     Envelope::from_slice(br#"{"status":false,"code":"500","dialog":null}"#).unwrap();
//! assert_eq!(reply.outcome(), Outcome::Pending);
//!
//! // Amounts are exact, and checked before anything is sent.
//! let amount: Amount = "12.34".parse().unwrap();
//! assert!(amount.check_rules(&Currency::Usd, "amount").is_ok());
//!
//! // Idempotency keys exist before the request does: store them first.
//! assert!(RequestId::generate().get() > 0);
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod address;
mod code;
pub mod credentials;
mod dates;
mod de;
mod envelope;
mod error;
mod follow_up;
mod ids;
pub mod intercept;
mod json_path;
#[doc(hidden)]
pub mod lies;
pub mod metrics;
mod money;
mod open_enum;
mod path;
mod request;
mod retry;
mod settings;
mod stack_text;
pub mod tls;
mod transport;
mod user_agent;
mod validation;
pub mod verdict;

pub use address::{BaseUrl, CallbackAddresses, check_public, check_public_url};
pub use code::ErrorCode;
pub use dates::{DateTime, DayMonthYear, EpochMillis};
pub use envelope::{Code, Dialog, Envelope, EnvelopeDecodeError, Outcome};
pub use error::{
    DecodeError, Error, Failure, HttpError, PendingReply, RecordError, SetupError, TransportError,
    TransportErrorKind,
};
pub use follow_up::FollowUp;
pub use ids::{ExternalId, RequestId};
pub use money::{Amount, AmountParseError, Currency};
pub use request::{CallOptions, Policy};
pub use retry::{RetryBudget, RetryPolicy, Timeouts};
pub use rust_decimal::Decimal;
pub use secrecy::{ExposeSecret, SecretString};
pub use settings::{ClientSettings, DEFAULT_MAX_REPLY_BYTES, ServiceHeaders};
pub use user_agent::{UserAgent, UserAgentParts};
pub use validation::{ValidationError, ValidationKind};

/// What the service crates of this workspace build on: the request and the transport, the
/// resend rule, the serde helpers and the limits. **No semver promise**: anything here may
/// change in any release. Applications use the service clients instead.
#[doc(hidden)]
pub mod runtime {
    pub use crate::dates::today_utc;
    pub use crate::de::with_str;
    pub use crate::error::DECODE_MESSAGE_LIMIT;
    pub use crate::money::as_string as amount_as_string;
    pub use crate::path::segment as path_segment;
    pub use crate::request::{Bytes, HeaderName, HeaderValue, Method, Reply, Request};
    pub use crate::retry::Resend;
    pub use crate::transport::Transport;
    pub use serde;
}

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
