//! # whish-hosted-collect
//!
//! Client of the hosted payment collection service: the merchant creates a payment, sends the
//! payer to the hosted page at `collectUrl`, receives GET callbacks, **confirms with the status
//! endpoint** before fulfilling, and may refund a successful payment.
//!
//! What the service makes easy to get wrong, and how this crate keeps it right:
//!
//! - A created payment (a `collectUrl`) does not mean the payer paid. Only
//!   [`CollectStatus::Success`] from [`CollectClient::status`] does.
//! - Callbacks are unauthenticated GETs that carry nothing but the query you put in the address:
//!   use [`callback`] to put your own reference there and read it back, and treat the callback as
//!   a signal to call status, never as proof.
//! - Code 500 is Pending, never a failure: create and refund resend with the same `externalId`
//!   (the service replays the recorded result with `retrieved: true`); if the outcome is still
//!   unknown, reconcile with status.
//! - The four callback and redirect addresses must be public: the service answers HTTP 403 for
//!   loopback or private ones, and this crate refuses them before sending.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use whish_core::{Amount, ClientSettings, Currency, SecretString, UserAgent};
//! use whish_hosted_collect::{
//!     CollectClient, CollectUrls, FailureCallbackUrl, FailureRedirectUrl, NewPayment,
//!     SuccessCallbackUrl, SuccessRedirectUrl,
//! };
//!
//! let ua: UserAgent = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)".parse()?;
//! let client = CollectClient::builder(ClientSettings::new("https://collect.example.com/api").user_agent(ua))
//!     .channel("my-channel")
//!     .secret(SecretString::from("secret"))
//!     .website_url("shop.example.com")
//!     .build()?;
//! let urls = CollectUrls::new(
//!     SuccessCallbackUrl::new("https://shop.example.com/whish/ok")?.with_reference("order", "A-17"),
//!     FailureCallbackUrl::new("https://shop.example.com/whish/ko")?.with_reference("order", "A-17"),
//!     SuccessRedirectUrl::new("https://shop.example.com/thanks")?,
//!     FailureRedirectUrl::new("https://shop.example.com/retry")?,
//! );
//! let amount: Amount = "25.50".parse()?;
//! let prepared = client.prepare_payment(NewPayment::new(amount, Currency::Usd, urls))?;
//! let external_id = prepared.external_id().clone(); // store it with the order, now
//! let created = client.create_payment(&prepared).await?;
//! println!("send the payer to {}", created.collect_url);
//! # let _ = external_id;
//! # Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod callback;
mod client;
pub mod code;
mod create;
mod model;

pub use client::{CollectClient, CollectClientBuilder, LIVE_BRAND, SPEC_BRAND};
pub use code::CollectCode;
pub use create::{
    CollectUrls, CreatedPayment, FailureCallbackUrl, FailureRedirectUrl, NewPayment,
    PreparedPayment, PreparedRefund, SuccessCallbackUrl, SuccessRedirectUrl,
};
pub use model::{CollectBalance, CollectStatus, PaymentStatus, Refund};

/// The error type of this service's calls.
pub type Error = whish_core::Error<CollectCode>;

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
