//! # whish-core
//!
//! The shared runtime of the whish SDK. It knows nothing of any one service; the service crates
//! (`whish-money-transfer`, `whish-locations`, `whish-hosted-collect`, `whish-intl-topup`) build on
//! it. It holds:
//!
//! - [`envelope`]: the reply envelope every service answers with (`code` 500 is **Pending**,
//!   never a failure);
//! - [`error`]: the one error type, which keeps a failure code, Pending, transport failures, non-
//!   envelope replies, decode errors, local validation and setup failures apart;
//! - [`settings`]: the one settings builder every client wraps (base URL, policy, User-Agent,
//!   proxy, root certificates, pool, reply cap);
//! - [`request`], [`transport`] and [`retry`]: HTTPS transport with bounded, jittered resends of
//!   safe requests carrying the same idempotency key;
//! - [`open_enum!`]: the one pattern for the services' open string sets;
//! - [`ids`], [`money`], [`dates`], [`address`], [`user_agent`]: the typed values of the specs.
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

pub mod address;
pub mod code;
pub mod credentials;
pub mod dates;
pub mod de;
pub mod envelope;
pub mod error;
pub mod follow_up;
pub mod ids;
pub mod intercept;
pub mod lies;
pub mod metrics;
pub mod money;
mod open_enum;
pub mod path;
pub mod request;
pub mod retry;
pub mod settings;
mod stack_text;
pub mod tls;
pub mod transport;
pub mod user_agent;
pub mod validation;
pub mod verdict;

pub use address::{BaseUrl, CallbackAddresses, check_public, check_public_url};
pub use code::ErrorCode;
pub use dates::{DateTime, DayMonthYear, EpochMillis};
pub use envelope::{Code, Dialog, Envelope, Outcome};
pub use error::{
    DecodeError, Error, Failure, HttpError, PendingReply, RecordError, SetupError, TransportError,
    TransportErrorKind,
};
pub use follow_up::FollowUp;
pub use ids::{ExternalId, RequestId};
pub use money::{Amount, Currency};
pub use request::{CallOptions, Policy, Reply, Request};
pub use retry::{Resend, RetryBudget, RetryPolicy, Timeouts};
pub use rust_decimal::Decimal;
pub use secrecy::{ExposeSecret, SecretString};
pub use settings::{ClientSettings, ServiceHeaders};
pub use transport::Transport;

#[doc(hidden)]
pub mod __private {
    //! What the exported macros expand to; not part of the API.
    pub use serde;
}
pub use user_agent::{UserAgent, UserAgentParts};
pub use validation::{ValidationError, ValidationKind};
pub use verdict::{DeliveryMark, Verdict};

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
