//! # whish-money-transfer
//!
//! Client of the money-transfer service: send money into Lebanon by cash collection (the
//! receiver collects cash with an LTN number) or mobile wallet (credited at once), quote fees,
//! read status, cancel, list sending countries and payment modes, and reconcile with the activity
//! log and the statement. The collection callback is in [`callback`].
//!
//! The integration flow, and what the SDK does at each step:
//!
//! 1. **Quote** with [`TransferClient::fees`]; send later with the same amount and currency.
//! 2. **Prepare** the send ([`CashCollectionSend`] or [`MobileWalletSend`]): it is checked
//!    (English names, a real `dd-MM-yyyy` date of birth not in the future, the amount rules per
//!    currency, a public callback address) and its Request-id fixed. **Store the Request-id**.
//! 3. **Send** with [`TransferClient::send`]. Timeouts and dropped replies are resent with the
//!    same bytes and the same Request-id; `transfer.already.done` after a resend is a
//!    confirmation, read through status. Pending (`code` 500) is returned at once, never resent
//!    and never a failure (`is_pending()`): follow it up with a status read by Request-id.
//! 4. **Callback** (cash collection, when collected): a notification, not proof.
//! 5. **Confirm** with [`TransferClient::status`]: the status read is what to believe, over an
//!    answer that was lost or a callback.
//! 6. **Cancel** with [`TransferClient::cancel`] while a cash-collection transfer is still
//!    uncollected.
//! 7. **Reconcile** with [`reconcile`].
//!
//! See `docs/money-transfer.md` for the whole guide with examples.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod callback;
mod client;
pub mod code;
mod model;
mod proof;
pub mod reconcile;
mod reference;
mod send;

pub use client::{
    FeeRequest, ReportRange, ReportStart, StatusQuery, TransferClient, TransferClientBuilder,
};
pub use code::TransferCode;
pub use model::{
    ActivityEntry, ActivityStatus, Cancellation, CurrencyStatement, CurrentBalance, FeeQuote,
    PaymentMode, ReceiverIdentity, SendingCountry, StatementLine, StatementType, StatusResult,
    TransferStatus,
};
pub use proof::Held;
pub use reference::{Reason, SourceOfFunds};
pub use send::{
    CashCollectionSend, CashReceiver, CashSent, CountryId, Customer, DateOfBirth, FirstName,
    Identity, LEBANON, LastName, MobileWalletSend, PreparedCancel, PreparedTransfer, SendOutcome,
    SendRequest, Sender, WalletCredited, WalletReceiver, is_english_name,
};

/// The error type of this service's calls.
pub type Error = whish_core::Error<TransferCode>;

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
