//! End-of-day reconciliation: what the journal says was sent, against what the service's activity
//! log and statement say happened, joined by Request-id (the service's own rule for
//! reconciliation), per currency.
//!
//! Every movement of money in the range is explained both ways:
//!
//! - each send of the activity log by the journal (held, accepted, once, in its currency, for
//!   its amount and fee) and by a charge of the statement in its currency;
//! - each charge of the statement by a send of the activity log (under its Request-id, in its
//!   currency; a charge without a Request-id by a send without one, of the same total);
//! - each cancellation by a refund of the statement (between its amount and its amount plus
//!   fee), and no transfer both collected and cancelled;
//! - each accepted send of the journal by the activity log: when the log does not list it, its
//!   status read decides between **missing at the service** (lost?) and sent after the range
//!   (`sent_after_range`, not a difference), unless the range's statement charged it;
//! - the statement's balance rule (balance = previous + debit - credit), line by line.
//!
//! Sums the service reports are doubles: they are compared to the currency's smallest unit
//! ([`whish_core::Amount::is_same_sum`]).
//!
//! With the feature `hosted-collect`, `collect` does the same for hosted payments: each
//! payment the journal created, its status read from the service, against the journal's refunds.
//!
//! Cancellations (SENT then CANCELLED in the activity log) are listed with what came back.
//! Totals per currency: sent, fees, collected, cancelled, refunded, the opening and the closing
//! balance.
//!
//! Times: the journal records UTC; the report range is compared with it as UTC, to the second.
//! A transfer whose journal time and service time fall on either side of a range edge is matched
//! anyway (every Request-id the service lists is looked up in the journal by key); only "missing
//! at the service" depends on the journal's time, so reconcile whole days with a margin.

#[cfg(feature = "hosted-collect")]
mod collect;

#[cfg(feature = "hosted-collect")]
pub use collect::{
    CollectFinding, CollectFindingKind, CollectReport, CollectTotals, REFUND_LOOK_BACK, collect,
    collect_looking_back,
};

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;
use serde::Serialize;
use whish_core::RequestId;

/// What kind of difference a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FindingKind {
    /// The journal holds it as accepted; the service's activity log does not have it.
    MissingAtService,
    /// The service has it; the journal has no such request (sent by something else).
    NotInJournal,
    /// The service has it; the journal's entry is still open (run recovery).
    OpenInJournal,
    /// The service has it; the journal holds it as refused (the journal is wrong).
    RefusedInJournal,
    /// The amount differs between the journal's request and the activity log.
    AmountDiffers,
    /// The fee the send's answer gave differs from the activity log's.
    FeeDiffers,
    /// The statement charged another total than the activity log's amount plus fee.
    StatementDiffers,
    /// The activity log has the send; the statement has no line for it.
    NotInStatement,
    /// A statement line breaks balance = previous + debit - credit.
    BalanceRule,
    /// The activity log lists more than one send under one Request-id: paid more than once.
    DuplicateAtService,
    /// The journal sent it in one currency; the activity log records another.
    CurrencyDiffers,
    /// The statement charged money that no send of the activity log explains (a charge under
    /// a Request-id the log does not list as sent in that currency, or a charge without one).
    NotInActivity,
    /// The activity log lists a cancellation; the statement booked no refund for it.
    RefundNotInStatement,
    /// The statement's refund of a cancellation is less than its amount or more than its
    /// amount plus fee.
    RefundDiffers,
    /// The activity log lists the transfer both collected and cancelled: paid out and refunded.
    CollectedAndCancelled,
}

impl FindingKind {
    /// The kind's name, as the report writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::MissingAtService => "missing-at-service",
            FindingKind::NotInJournal => "not-in-journal",
            FindingKind::OpenInJournal => "open-in-journal",
            FindingKind::RefusedInJournal => "refused-in-journal",
            FindingKind::AmountDiffers => "amount-differs",
            FindingKind::FeeDiffers => "fee-differs",
            FindingKind::StatementDiffers => "statement-differs",
            FindingKind::NotInStatement => "not-in-statement",
            FindingKind::BalanceRule => "balance-rule",
            FindingKind::DuplicateAtService => "duplicate-at-service",
            FindingKind::CurrencyDiffers => "currency-differs",
            FindingKind::NotInActivity => "not-in-activity",
            FindingKind::RefundNotInStatement => "refund-not-in-statement",
            FindingKind::RefundDiffers => "refund-differs",
            FindingKind::CollectedAndCancelled => "collected-and-cancelled",
        }
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// What kind.
    pub kind: FindingKind,
    /// The currency code.
    pub currency: String,
    /// The transfer's Request-id, when the finding is about one.
    pub request_id: Option<RequestId>,
    /// The transfer id, when known.
    pub transfer_id: Option<String>,
    /// What the journal says (an amount, a fee, a state).
    pub journal: Option<String>,
    /// What the service says.
    pub service: Option<String>,
    /// In a sentence.
    pub message: String,
}

/// A transfer cancelled in the range (SENT, then CANCELLED in the activity log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Cancelled {
    /// The currency code.
    pub currency: String,
    /// The Request-id.
    pub request_id: Option<RequestId>,
    /// The transfer id.
    pub transfer_id: String,
    /// Its amount.
    pub amount: Decimal,
    /// Its fee.
    pub fee: Decimal,
    /// What the statement of the range booked back for it (its lines under the Request-id that
    /// raised the balance); zero when none.
    pub refunded: Decimal,
}

/// The totals of one currency over the range.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CurrencyTotals {
    /// Transfers sent (SENT events).
    pub sent: u64,
    /// Their amounts.
    pub sent_amount: Decimal,
    /// Their fees.
    pub fees: Decimal,
    /// Transfers collected (RECEIVED events).
    pub collected: u64,
    /// Transfers cancelled (CANCELLED events).
    pub cancelled: u64,
    /// Their amounts (what the receivers were to collect; the fees are in `fees`).
    pub cancelled_amount: Decimal,
    /// What the statement booked back for them: the money that came back to the account.
    pub refunded: Decimal,
    /// Transfers the journal and the service agree on, both ways.
    pub matched: u64,
    /// The balance before the statement's first line in the range.
    pub opening_balance: Option<Decimal>,
    /// The balance after its last line in the range.
    pub closing_balance: Option<Decimal>,
    /// The statement's lines in the range.
    pub statement_lines: u64,
}

/// The reconciliation of the money-transfer service over a range.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TransferReport {
    /// Totals per currency code.
    pub currencies: BTreeMap<String, CurrencyTotals>,
    /// Every difference found. Empty: everything matches.
    pub findings: Vec<Finding>,
    /// The cancellations in the range.
    pub cancellations: Vec<Cancelled>,
    /// The journal's accepted sends in the range.
    pub journal_sends: u64,
    /// Accepted sends the journal recorded in the range that the activity log of the range does
    /// not list but the service holds (its status read by Request-id found them): sent after
    /// the range (a recovery or a later run sent a request recorded earlier). Not a difference:
    /// they are in the activity log of the day they were sent. One the range's statement
    /// charged is not here but a `NotInActivity` finding: it went out in the range.
    pub sent_after_range: Vec<RequestId>,
}

impl TransferReport {
    /// True when nothing differs.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// The Request-ids the findings name, each once.
    pub fn flagged(&self) -> BTreeSet<RequestId> {
        self.findings.iter().filter_map(|f| f.request_id).collect()
    }
}

/// Why a reconciliation could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// The journal could not be read.
    #[error("the journal: {0}")]
    Journal(#[source] whish_journal::JournalError),
    /// The service's activity log or statement could not be read.
    #[error("the transfer service: {0}")]
    Service(#[source] whish_money_transfer::Error),
}

mod transfer;

pub use transfer::transfers;
