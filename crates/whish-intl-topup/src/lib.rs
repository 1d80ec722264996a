//! # whish-intl-topup
//!
//! Client of the international top-up service: fetch the options a provider offers for a customer
//! target, pay for one of them, and read the account balance.
//!
//! The flow the service defines, and how this crate keeps it:
//!
//! 1. [`TopupClient::fetch_options`] returns [`FetchedOptions`]. Show each option's
//!    [`display_name`](TopupOption::display_name) to the customer; never parse it.
//! 2. [`TopupClient::prepare_pay`] takes one fetched [`TopupOption`] itself, so the amount cannot be
//!    typed by hand or rounded: it goes back exactly as it arrived (`3.3333333333333335` stays
//!    that). The returned [`PreparedPay`] already holds the `externalId`: **store it before
//!    sending**.
//! 3. [`TopupClient::pay`] sends it. After a timeout or a Pending answer the client resends the same
//!    bytes with the same externalId (the service's only way to reconcile; it replays the original
//!    result with `retrieved: true` and never charges twice). If the policy runs out, call `pay`
//!    again later with the same [`PreparedPay`].
//! 4. Store each sold item's [`transaction_id`](SoldItem::transaction_id).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use whish_intl_topup::{PayOutcome, TopupClient};
//! use whish_core::{ClientSettings, SecretString, UserAgent};
//!
//! let ua: UserAgent = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)".parse()?;
//! let client = TopupClient::builder(ClientSettings::new("https://topup.example.com/api").user_agent(ua))
//!     .session_id(SecretString::from("session-id"))
//!     .token(SecretString::from("token"))
//!     .build()?;
//! let offer = client.fetch_options(whish_intl_topup::ProviderId::new("example-provider"), "971501234567").await?;
//! let option = &offer.options()[0];
//! let prepared = client.prepare_pay(option)?;
//! let external_id = prepared.external_id().clone(); // store it now
//! # let _ = external_id;
//! match client.pay(&prepared).await? {
//!     PayOutcome::Paid(payment) => {
//!         for item in payment.sold_items() {
//!             println!("sold {} as {}", item.denomination().unwrap_or(""), item.transaction_id());
//!         }
//!     }
//!     PayOutcome::Challenge(challenge) => println!("next step needed: {}", challenge.code),
//!     _ => {}
//! }
//! # Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod client;
pub mod code;
mod model;
mod pay;

pub use client::{TopupClient, TopupClientBuilder};
pub use code::TopupCode;
pub use model::{Balance, FetchedOptions, Pin, ProviderId, SoldItem, TopupOption};
pub use pay::{Challenge, PayOutcome, PayRequest, Payment, PreparedPay};

/// The error type of this service's calls.
pub type Error = whish_core::Error<TopupCode>;

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
