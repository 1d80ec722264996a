//! Every object the command prints, as a type. Its field names are the command's output
//! vocabulary (camelCase, as the services name them): renaming one is a change to this file,
//! and the code that fills it must follow. A field the answer has not given prints `null`; no
//! field is left out, so a script reads the same keys on every outcome.
//!
//! The objects are printed through [`crate::output::Out`], which writes identifiers beyond
//! 2^53 as strings and sorts the keys, whatever the order of the fields here.

use std::collections::BTreeMap;

use serde::Serialize;
use whish::core::Dialog;
use whish::{Amount, Currency, ExternalId, RequestId};

/// What a failed call reports, by the kind of failure.
#[derive(Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub enum Failure<'a> {
    /// The service answered a failure code.
    Failed {
        outcome: &'a str,
        code: &'a str,
        dialog: Option<&'a Dialog>,
        extra: Option<&'a serde_json::Value>,
        retrieved: Option<bool>,
        endpoint: &'a str,
        idempotency_key: Option<&'a str>,
    },
    /// The service answered `code` 500: pending, not failed.
    Pending {
        outcome: &'a str,
        code: &'a str,
        dialog: Option<&'a Dialog>,
        retrieved: Option<bool>,
        endpoint: &'a str,
        idempotency_key: Option<&'a str>,
    },
    /// Something other than the service's JSON answered (a proxy's page, an HTTP error).
    Http {
        outcome: &'a str,
        http_status: u16,
        body: &'a str,
        endpoint: &'a str,
        idempotency_key: Option<&'a str>,
        after_possible_delivery: bool,
    },
    /// The connection failed.
    Transport {
        outcome: &'a str,
        error: &'a str,
        message: &'a str,
        may_have_reached: bool,
        endpoint: &'a str,
        idempotency_key: Option<&'a str>,
        attempts: u32,
    },
    /// The journal could not record or read the request.
    Journal {
        outcome: &'a str,
        error: &'a str,
        message: String,
        endpoint: Option<&'a str>,
        idempotency_key: Option<&'a str>,
    },
    /// Refused before sending: the journal holds the same body as a send under another
    /// Request-id (`held_under`) to the same service and account, in `held_state`, that may
    /// have paid already.
    Repeat {
        outcome: &'a str,
        error: &'a str,
        message: String,
        idempotency_key: String,
        held_under: &'a str,
        held_state: &'a str,
    },
    /// The answer could not be read.
    Decode {
        outcome: &'a str,
        error: &'a str,
        message: String,
    },
}

/// A version of the SDK newer than the command gave an outcome the command does not know.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnknownOutcome<'a, Id: Serialize> {
    pub outcome: &'a str,
    #[serde(flatten)]
    pub id: Id,
    pub result: String,
}

/// A Request-id, as the key of an outcome.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ByRequestId {
    pub request_id: RequestId,
}

/// An externalId, as the key of an outcome.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ByExternalId<'a> {
    pub external_id: &'a ExternalId,
}

/// What was asked of a status read that failed (the identifiers given).
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Asked {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ltn_number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// Every transfer send prints this object, whatever its outcome.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SendResult<'a> {
    pub outcome: &'a str,
    pub result: Option<&'a str>,
    pub request_id: Option<RequestId>,
    pub transfer_id: Option<&'a str>,
    pub ltn_number: Option<&'a str>,
    pub status: Option<&'a str>,
    pub charges: Option<&'a Amount>,
    pub collection_amount: Option<&'a Amount>,
    pub balance: Option<&'a Amount>,
    pub transaction_id: Option<i64>,
    pub currency: Option<&'a str>,
    pub receiver_identity: Option<&'a whish::transfer::ReceiverIdentity>,
    pub dialog: Option<&'a Dialog>,
}

/// A statement whose lines break the balance rule.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatementBroken<'a, S: Serialize> {
    pub statement: &'a S,
    pub balance_rule: String,
}

/// `whish collect balance`.
#[derive(Serialize)]
pub struct CollectBalance<'a> {
    pub balance: &'a Amount,
    pub currency: &'a Currency,
}

/// A hosted payment created.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentCreated<'a> {
    pub outcome: &'a str,
    pub external_id: &'a ExternalId,
    pub collect_url: &'a str,
    pub retrieved: bool,
    pub dialog: Option<&'a Dialog>,
}

/// A hosted payment's status.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentStatus<'a> {
    pub collect_status: &'a whish::collect::CollectStatus,
    pub payer_phone_number: Option<&'a str>,
}

/// A refund accepted.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Refunded<'a> {
    pub outcome: &'a str,
    pub external_id: &'a ExternalId,
    pub retrieved: bool,
    pub dialog: Option<&'a Dialog>,
}

/// `whish topup balance`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopupBalance<'a> {
    pub balance: &'a Amount,
    pub void_balance: &'a Amount,
}

/// The options one provider offers for one target.
#[derive(Serialize)]
pub struct TopupOptions<'a> {
    pub provider: &'a str,
    pub target: &'a str,
    pub options: Vec<TopupOption<'a>>,
}

/// One option to pay.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopupOption<'a> {
    pub id: &'a str,
    pub display_name: Option<&'a str>,
    pub amount: Amount,
    pub price: Option<Amount>,
    pub currency: Option<&'a Currency>,
    pub metadata: Option<&'a serde_json::Value>,
}

/// A top-up paid.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopupPaid<'a> {
    pub outcome: &'a str,
    pub external_id: &'a ExternalId,
    pub retrieved: bool,
    pub amount: Amount,
    pub list_of_sold_items: Vec<SoldItem<'a>>,
    pub dialog: Option<&'a Dialog>,
}

/// A top-up the provider answered with a further step.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopupChallenge<'a> {
    pub outcome: &'a str,
    pub code: String,
    pub dialog: Option<&'a Dialog>,
    pub external_id: &'a ExternalId,
}

/// One item a top-up sold; its PINs hidden unless asked for.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SoldItem<'a> {
    pub transaction_id: &'a str,
    pub phone: Option<&'a str>,
    pub amount: Option<&'a str>,
    pub original_amount: Option<&'a str>,
    pub fees: Option<&'a str>,
    pub service: Option<&'a str>,
    pub denomination: Option<&'a str>,
    pub serial: Option<&'a str>,
    pub secret: Option<&'a str>,
    pub formatted_secret: Option<&'a str>,
    pub validity: Option<&'a str>,
    pub help: Option<&'a str>,
    pub expiry: Option<&'a str>,
    pub date: Option<&'a str>,
    pub time: Option<&'a str>,
    pub picture: Option<&'a str>,
    pub picture_url: Option<&'a str>,
    pub voided: bool,
    pub from_void: bool,
    pub print_type: Option<i64>,
    pub view_type: Option<i64>,
}

/// What `transfer check-callback` found a callback would do.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallbackChecked<'a> {
    pub outcome: &'a str,
    pub external_id: String,
    pub transfer_id: &'a str,
    pub status: &'a whish::transfer::TransferStatus,
    pub date: &'a str,
    pub timestamp_age_ms: i64,
    pub signature: &'a str,
    pub signature_bytes: usize,
}

/// A callback a receiver would refuse.
#[derive(Serialize)]
pub struct CallbackRefused<'a> {
    pub outcome: &'a str,
    pub reason: &'a str,
    pub message: String,
}

/// One journal entry in a listing.
#[derive(Serialize)]
pub struct EntryLine<'a> {
    pub key: &'a str,
    pub service: whish::journal::Service,
    pub operation: whish::journal::Operation,
    pub state: whish::journal::State,
    pub created: Option<String>,
}

/// An entry the journal holds but cannot read.
#[derive(Serialize)]
pub struct UnreadableLine<'a> {
    pub key: &'a str,
    pub id: i64,
    pub state: &'a str,
    pub reason: &'a str,
}

/// One listed line: an entry, or one that cannot be read.
#[derive(Serialize)]
#[serde(untagged)]
pub enum ListedLine<'a> {
    /// An entry.
    Entry(EntryLine<'a>),
    /// An entry that cannot be read.
    Unreadable(UnreadableLine<'a>),
}

/// One change waiting in the callback inbox.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxLine<'a> {
    pub key: &'a str,
    pub state: whish::journal::State,
    pub attempts: u32,
    pub last_error: Option<&'a str>,
    pub recorded: Option<String>,
}

/// An inbox change handed on again.
#[derive(Serialize)]
pub struct HandedOn<'a> {
    pub key: &'a str,
    pub state: &'a str,
}

/// What a person's abandon did.
#[derive(Serialize)]
pub struct AbandonDone<'a> {
    pub key: &'a str,
    pub service: whish::journal::Service,
    pub operation: whish::journal::Operation,
    pub outcome: &'a str,
    pub message: &'a str,
}

/// What a recovery run did, and the entries it left open.
#[derive(Serialize)]
pub struct Recovered<'a> {
    pub report: &'a whish::journal::RecoveryReport,
    pub open: Vec<EntryLine<'a>>,
}

/// One column of the payouts batch file.
#[derive(Serialize)]
pub struct BatchColumn<'a> {
    pub column: &'a str,
    pub required: bool,
    pub about: &'a str,
}

/// A payouts batch checked.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchChecked<'a> {
    pub batch: &'a str,
    pub rows: u64,
    pub bad_rows: &'a [whish::payouts::RowError],
}

/// The totals of one currency in a payouts run.
#[derive(Serialize)]
pub struct RunTotal {
    pub accepted: u64,
    pub amount: String,
    pub fees: String,
}

/// A payouts run: a count for every row outcome (zeros included) and the totals by currency.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport<'a> {
    pub batch: &'a str,
    pub rows: u64,
    pub outcomes: BTreeMap<&'a str, u64>,
    pub totals: BTreeMap<&'a str, RunTotal>,
    pub stopped: Option<&'a str>,
    pub recovered: u64,
    pub held_elsewhere: u64,
    pub results: String,
}

/// A payouts follow-up: rows by collection state, and, when cancels were asked for, how many
/// were cancelled now and the cancels by outcome (only the outcomes that occurred).
#[derive(Serialize)]
pub struct FollowedUp<'a> {
    pub batch: &'a str,
    pub rows: &'a BTreeMap<&'static str, u64>,
    pub cancelled: Option<u64>,
    pub cancels: Option<BTreeMap<&'a str, u64>>,
    pub results: String,
}

/// The totals of one currency in a hosted-payment reconciliation.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CollectTotal {
    pub created: u64,
    pub created_amount: String,
    pub paid: u64,
    pub paid_amount: String,
    pub refunded: u64,
    pub refunded_amount: String,
    pub pending: u64,
    pub failed: u64,
}

/// One difference a hosted-payment reconciliation found.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CollectFinding<'a> {
    pub kind: &'a str,
    pub currency: &'a str,
    pub external_id: &'a str,
    pub message: &'a str,
}

/// A hosted-payment reconciliation.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CollectReconciled<'a> {
    pub matches: bool,
    pub currencies: BTreeMap<&'a str, CollectTotal>,
    pub findings: Vec<CollectFinding<'a>>,
    pub earlier_checked: u64,
}

/// The totals of one currency in a transfer reconciliation.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransferTotal {
    pub sent: u64,
    pub sent_amount: String,
    pub fees: String,
    pub collected: u64,
    pub cancelled: u64,
    pub cancelled_amount: String,
    pub refunded: String,
    pub matched: u64,
    pub opening_balance: Option<String>,
    pub closing_balance: Option<String>,
    pub statement_lines: u64,
}

/// One difference a transfer reconciliation found.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransferFinding<'a> {
    pub kind: &'a str,
    pub currency: &'a str,
    pub request_id: Option<i64>,
    pub transfer_id: Option<&'a str>,
    pub journal: Option<&'a str>,
    pub service: Option<&'a str>,
    pub message: &'a str,
}

/// A transfer reconciliation.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransferReconciled<'a> {
    pub matches: bool,
    pub journal_sends: u64,
    pub currencies: BTreeMap<&'a str, TransferTotal>,
    pub findings: Vec<TransferFinding<'a>>,
    pub cancellations: usize,
    pub sent_after_range: Vec<i64>,
}
