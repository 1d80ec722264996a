//! # whish
//!
//! One dependency for the whole whish SDK. Each service is a module behind its cargo feature, all
//! on by default:
//!
//! | module | feature | service |
//! |---|---|---|
//! | [`transfer`] | `money-transfer` | money transfers into Lebanon: fees, send, status, cancel, reports, callback |
//! | [`locations`] | `locations` | governorates, districts and shops where cash is collected |
//! | [`collect`] | `hosted-collect` | the hosted wallet-payment page: balance, create, status, refund |
//! | [`topup`] | `intl-topup` | international top-up: balance, fetch options, pay |
//!
//! The shared runtime ([`core`]) is always there, and its everyday types are re-exported at the top
//! level ([`Amount`], [`Currency`], [`RequestId`], [`ExternalId`], [`SecretString`], ...). For a
//! single service, depend on `whish` with `default-features = false`, that one feature and a TLS
//! stack: the build then holds that service crate and `whish-core`, nothing else of the SDK.
//!
//! ```toml
//! [dependencies]
//! whish = { version = "0.3", default-features = false, features = ["intl-topup", "rustls-ring"] }
//! ```
//!
//! The TLS stack is a feature too ([`core::tls`]): `rustls-ring` (in the defaults; the lightest
//! build), `rustls-aws-lc-rs` or `native-tls`; `http2` offers HTTP/2. Without one, only plain HTTP
//! to loopback works (the sandbox), and an `https://` base URL is refused when the client is
//! built.
//!
//! `use whish::prelude::*;` brings the clients, the request builders and the outcome types of the
//! enabled services into scope.
//!
//! What the SDK keeps right for you, in every service: `code` 500 is **Pending** (never a
//! failure); idempotency keys (the transfer Request-id, the collect and top-up externalId) exist
//! before the request is sent, so you store them first, and every resend carries the same key and
//! bytes; amounts are exact [`Decimal`]s; credentials never print; HTTPS only (plain HTTP to
//! loopback only); callbacks are notifications, so confirm with the status endpoint.
//!
//! Every money-moving call answers the same way: `Ok` only when the service accepted; a refusal,
//! Pending and an unknown outcome are `Err`, told apart by the same predicates in every service:
//!
//! ```no_run
//! # #[cfg(feature = "intl-topup")]
//! # async fn run(client: whish::topup::TopupClient, prepared: whish::topup::PreparedPay) {
//! match client.pay(&prepared).await {
//!     Ok(outcome) => println!("paid: {outcome:?}"),
//!     Err(e) if e.is_pending() => println!("pending, not failed: keep {:?}", e.idempotency_key()),
//!     Err(e) if e.outcome_unknown() => println!("{e}: pay again with the same prepared request"),
//!     Err(e) if e.nothing_sent() => println!("{e}: nothing left; fix and retry"),
//!     Err(e) => println!("{e}: {}", e.hint()), // refused: final
//! }
//! # }
//! ```
//!
//! Off by default: `journal-sqlite`, `journal-postgres` or both as `journal` (the durable record
//! of every money-moving request, [`journal`], for the services whose features are on),
//! `callbacks` (the callback receiver, [`callbacks`]), `payouts` (a resumable, journaled batch of
//! transfers from a file and end-of-day reconciliation, [`payouts`]; with a journal backend) and
//! `testing` (the in-process sandbox for your own tests, [`testing`]).
//!
//! The guides (`docs/` in the repository) walk each service end to end, and `docs/testing.md`
//! shows how to test an integration; `docs/errors.md` lists every documented error code. The
//! repository's `crates/whish/examples/` has one runnable program per service, a remittance
//! service with the journal and the receiver, and a test of an integration's own code.
//!
//! A module whose feature is off is linked to its crate's documentation instead.
#![doc = "<!-- the links of the modules, each by its feature -->"]
#![cfg_attr(feature = "money-transfer", doc = "[`transfer`]: crate::transfer")]
#![cfg_attr(
    not(feature = "money-transfer"),
    doc = "[`transfer`]: https://docs.rs/whish-money-transfer"
)]
#![cfg_attr(feature = "locations", doc = "[`locations`]: crate::locations")]
#![cfg_attr(
    not(feature = "locations"),
    doc = "[`locations`]: https://docs.rs/whish-locations"
)]
#![cfg_attr(feature = "hosted-collect", doc = "[`collect`]: crate::collect")]
#![cfg_attr(
    not(feature = "hosted-collect"),
    doc = "[`collect`]: https://docs.rs/whish-hosted-collect"
)]
#![cfg_attr(feature = "intl-topup", doc = "[`topup`]: crate::topup")]
#![cfg_attr(
    not(feature = "intl-topup"),
    doc = "[`topup`]: https://docs.rs/whish-intl-topup"
)]
#![cfg_attr(
    any(feature = "journal-sqlite", feature = "journal-postgres"),
    doc = "[`journal`]: crate::journal"
)]
#![cfg_attr(
    not(any(feature = "journal-sqlite", feature = "journal-postgres")),
    doc = "[`journal`]: https://docs.rs/whish-journal"
)]
#![cfg_attr(feature = "callbacks", doc = "[`callbacks`]: crate::callbacks")]
#![cfg_attr(
    not(feature = "callbacks"),
    doc = "[`callbacks`]: https://docs.rs/whish-callbacks"
)]
#![cfg_attr(feature = "payouts", doc = "[`payouts`]: crate::payouts")]
#![cfg_attr(
    not(feature = "payouts"),
    doc = "[`payouts`]: https://docs.rs/whish-payouts"
)]
#![cfg_attr(feature = "testing", doc = "[`testing`]: crate::testing")]
#![cfg_attr(
    not(feature = "testing"),
    doc = "[`testing`]: https://docs.rs/whish-sandbox"
)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use whish_core as core;
pub use whish_core::{
    Amount, CallOptions, ClientSettings, Code, Currency, DateTime, DayMonthYear, Decimal, Dialog,
    EpochMillis, ExposeSecret, ExternalId, Outcome, Policy, RequestId, RetryPolicy, SecretString,
    SetupError, Timeouts, UserAgent, UserAgentParts, ValidationError, ValidationKind,
    verdict::DeliveryMark, verdict::Verdict,
};

/// Money transfers into Lebanon (re-export of `whish-money-transfer`).
#[cfg(feature = "money-transfer")]
#[cfg_attr(docsrs, doc(cfg(feature = "money-transfer")))]
pub use whish_money_transfer as transfer;

/// Cash-collection locations (re-export of `whish-locations`).
#[cfg(feature = "locations")]
#[cfg_attr(docsrs, doc(cfg(feature = "locations")))]
pub use whish_locations as locations;

/// Hosted wallet-payment collection (re-export of `whish-hosted-collect`).
#[cfg(feature = "hosted-collect")]
#[cfg_attr(docsrs, doc(cfg(feature = "hosted-collect")))]
pub use whish_hosted_collect as collect;

/// International top-up (re-export of `whish-intl-topup`).
#[cfg(feature = "intl-topup")]
#[cfg_attr(docsrs, doc(cfg(feature = "intl-topup")))]
pub use whish_intl_topup as topup;

/// The durable journal of every money-moving request, and recovery after a crash (re-export of
/// `whish-journal`; features `journal-sqlite`, `journal-postgres` or both as `journal`, off by
/// default). It journals the services whose features are on.
#[cfg(any(feature = "journal-sqlite", feature = "journal-postgres"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "journal-sqlite", feature = "journal-postgres")))
)]
pub use whish_journal as journal;

/// Payouts at scale: a resumable, journaled batch of transfers from a CSV or JSON-lines file, its
/// follow-up, and end-of-day reconciliation (re-export of `whish-payouts`; feature `payouts` with a
/// journal backend, off by default).
#[cfg(feature = "payouts")]
#[cfg_attr(docsrs, doc(cfg(feature = "payouts")))]
pub use whish_payouts as payouts;

/// Receiving the services' callbacks: axum routes, the poller, redirect confirmation (re-export
/// of `whish-callbacks`; feature `callbacks`, off by default).
#[cfg(feature = "callbacks")]
#[cfg_attr(docsrs, doc(cfg(feature = "callbacks")))]
pub use whish_callbacks as callbacks;

/// The in-process sandbox of all three services, for testing your own integration (re-export
/// of `whish-sandbox`; feature `testing`, off by default: enable it in `[dev-dependencies]`).
/// Start it, point the clients at its URLs, inject faults, move its clock, collect a transfer,
/// pay a hosted page and receive its signed callbacks; the guide is `docs/testing.md`.
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use whish_sandbox as testing;

pub mod prelude;

/// The README's examples, compiled and run as doctests (all features on).
#[cfg(all(
    doctest,
    feature = "money-transfer",
    feature = "locations",
    feature = "hosted-collect",
    feature = "intl-topup"
))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// The examples of this crate's own README, compiled as doctests.
#[cfg(all(doctest, feature = "money-transfer"))]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;

/// The guides (`docs/*.md` in the repository), written in this crate's paths and compiled as
/// doctests here, each with the features it needs (all of them: `cargo test --all-features`).
#[cfg(doctest)]
pub mod guides {
    /// docs/money-transfer.md
    #[cfg(all(feature = "money-transfer", feature = "locations"))]
    #[doc = include_str!("../../../docs/money-transfer.md")]
    pub struct MoneyTransfer;

    /// docs/locations.md
    #[cfg(feature = "locations")]
    #[doc = include_str!("../../../docs/locations.md")]
    pub struct Locations;

    /// docs/hosted-collect.md
    #[cfg(feature = "hosted-collect")]
    #[doc = include_str!("../../../docs/hosted-collect.md")]
    pub struct HostedCollect;

    /// docs/intl-topup.md
    #[cfg(feature = "intl-topup")]
    #[doc = include_str!("../../../docs/intl-topup.md")]
    pub struct IntlTopup;

    /// docs/journal.md
    #[cfg(all(feature = "journal", feature = "money-transfer"))]
    #[doc = include_str!("../../../docs/journal.md")]
    pub struct Journal;

    /// docs/payouts.md
    #[cfg(all(feature = "payouts", feature = "journal-sqlite"))]
    #[doc = include_str!("../../../docs/payouts.md")]
    pub struct Payouts;

    /// docs/callbacks.md
    #[cfg(all(feature = "callbacks", feature = "journal", feature = "hosted-collect"))]
    #[doc = include_str!("../../../docs/callbacks.md")]
    pub struct Callbacks;

    /// docs/sandbox.md
    #[cfg(feature = "testing")]
    #[doc = include_str!("../../../docs/sandbox.md")]
    pub struct Sandbox;

    /// docs/observability.md
    #[cfg(feature = "money-transfer")]
    #[doc = include_str!("../../../docs/observability.md")]
    pub struct Observability;

    /// docs/testing.md
    #[cfg(all(
        feature = "testing",
        feature = "journal",
        feature = "callbacks",
        feature = "money-transfer",
        feature = "intl-topup"
    ))]
    #[doc = include_str!("../../../docs/testing.md")]
    pub struct Testing;
}
