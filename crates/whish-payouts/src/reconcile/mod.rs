//! End-of-day reconciliation: what the journal says was sent, against what the service's activity
//! log and statement say happened, joined by Request-id (the service's own rule for
//! reconciliation), per currency.
//!
//! Each transfer in the range is checked both ways:
//!
//! - in the journal (accepted) but not in the activity log, and not found by a status read:
//!   **missing at the service** (lost?); found by the status read, it was sent after the range
//!   (listed in `sent_after_range`, not a difference);
//! - in the activity log but not in the journal: **not in the journal** (sent by something
//!   else, or by hand); open in the journal: recover the journal; refused in the journal but at
//!   the service: the journal is wrong about a payment;
//! - the amount the journal sent against the activity's (the receiver's amount, or the total when
//!   the fee was deducted), the fee the send's answer gave against the activity's, and the
//!   statement's charge against the activity's total; a transfer without its statement line;
//! - the statement's balance rule (balance = previous + debit - credit), line by line.
//!
//! With the feature `hosted-collect`, `collect` does the same for hosted payments: each
//! payment the journal created, its status read from the service, against the journal's refunds.
//!
//! Cancellations (SENT then CANCELLED in the activity log) are listed, not flagged. Totals per
//! currency: sent, fees, collected, cancelled, the opening and the closing balance.
//!
//! Times: the journal records UTC; the report range is compared with it as UTC. A transfer whose
//! journal time and service time fall on either side of a range edge is matched anyway (every
//! Request-id the service lists is looked up in the journal by key); only "missing at the
//! service" depends on the journal's time, so reconcile whole days with a margin.

#[cfg(feature = "hosted-collect")]
mod collect;

#[cfg(feature = "hosted-collect")]
pub use collect::{CollectFinding, CollectFindingKind, CollectReport, CollectTotals, collect};

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;
use serde::Serialize;
use time::OffsetDateTime;
use whish_core::{Amount, Currency, RequestId};
use whish_journal::{Entry, Journal, Listing, Operation, Service, State};
use whish_money_transfer::reconcile::check_balance_rule;
use whish_money_transfer::{
    ActivityStatus, ReportRange, StatementType, StatusQuery, TransferClient, TransferCode,
};

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
    /// Their amounts.
    pub cancelled_amount: Decimal,
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
    /// they are in the activity log of the day they were sent.
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

/// What the journal's request said: amount, currency, whether the fee was deducted.
struct Sent {
    amount: Amount,
    currency: Currency,
    deduct: bool,
}

fn sent_of(entry: &Entry) -> Option<Sent> {
    let v: serde_json::Value = serde_json::from_slice(&entry.request).ok()?;
    let amount = match v.get("amount")? {
        serde_json::Value::Number(n) => Amount::parse(&n.to_string()).ok()?,
        serde_json::Value::String(s) => Amount::parse(s).ok()?,
        _ => return None,
    };
    let currency = Currency::from_id(v.get("currencyId")?.as_i64()?)?;
    let deduct = v.get("deductFees").and_then(serde_json::Value::as_bool) == Some(true);
    Some(Sent {
        amount,
        currency,
        deduct,
    })
}

fn ms(t: OffsetDateTime) -> i128 {
    t.unix_timestamp_nanos() / 1_000_000
}

/// Reconcile the money-transfer service over `range` (the activity log and the statement of
/// that range) against the journal's sends recorded between `from` and `to` (UTC).
///
/// # Errors
///
/// A `ReconcileError` when the journal or the service cannot be read.
pub async fn transfers(
    journal: &Journal,
    client: &TransferClient,
    range: &ReportRange,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<TransferReport, ReconcileError> {
    // This process's own acceptances still being written count too.
    journal.flush().await;
    let activity = client
        .activity(range)
        .await
        .map_err(ReconcileError::Service)?;
    let statements = client
        .statement(range)
        .await
        .map_err(ReconcileError::Service)?;
    let mut report = TransferReport::default();

    // The statement: per currency, the charge of each Request-id, the balances, the rule.
    let mut charged: BTreeMap<RequestId, Decimal> = BTreeMap::new();
    for s in &statements {
        let Some(first) = s.transactions.first() else {
            continue;
        };
        let code = first.currency.code().to_owned();
        let totals = report.currencies.entry(code.clone()).or_default();
        totals.statement_lines = s.transactions.len() as u64;
        totals.opening_balance =
            Some(first.balance.value() - first.debit.value() + first.credit.value());
        totals.closing_balance = s.transactions.last().map(|l| l.balance.value());
        for l in &s.transactions {
            if let (Some(r), StatementType::Transfer) = (l.request_id, &l.kind)
                && l.credit.value() > Decimal::ZERO
            {
                *charged.entry(r).or_default() += l.credit.value();
            }
        }
        if let Err(b) = check_balance_rule(s) {
            report.findings.push(Finding {
                kind: FindingKind::BalanceRule,
                currency: code,
                request_id: b.line.request_id,
                transfer_id: Some(b.line.id.clone()),
                journal: None,
                service: Some(b.actual.to_plain_string()),
                message: b.to_string(),
            });
        }
    }

    // The activity log: one SENT event per transfer; RECEIVED and CANCELLED after it.
    let mut at_service: BTreeSet<RequestId> = BTreeSet::new();
    for e in &activity {
        let code = Currency::from_code(&e.currency).code().to_owned();
        let totals = report.currencies.entry(code.clone()).or_default();
        match e.status {
            ActivityStatus::Sent => {
                totals.sent += 1;
                totals.sent_amount += e.amount.value();
                totals.fees += e.fee.value();
            }
            ActivityStatus::Received => totals.collected += 1,
            ActivityStatus::Cancelled => {
                totals.cancelled += 1;
                totals.cancelled_amount += e.amount.value();
                report.cancellations.push(Cancelled {
                    currency: code.clone(),
                    request_id: e.request_id,
                    transfer_id: e.id.clone(),
                    amount: e.amount.value(),
                    fee: e.fee.value(),
                });
            }
            _ => {}
        }
        if e.status != ActivityStatus::Sent {
            continue;
        }
        let Some(request_id) = e.request_id else {
            continue;
        };
        at_service.insert(request_id);
        let finding =
            |kind, journal: Option<String>, service: Option<String>, message: String| Finding {
                kind,
                currency: code.clone(),
                request_id: Some(request_id),
                transfer_id: Some(e.id.clone()),
                journal,
                service,
                message,
            };
        let mut found = Vec::new();
        let entry = journal
            .entry(
                Service::MoneyTransfer,
                Operation::Send,
                &request_id.to_string(),
            )
            .await
            .map_err(ReconcileError::Journal)?;
        match &entry {
            None => found.push(finding(
                FindingKind::NotInJournal,
                None,
                Some(e.total.to_plain_string()),
                format!("the service sent {} {} under Request-id {request_id}, which the journal does not hold: sent by something else", e.amount.to_plain_string(), e.currency),
            )),
            Some(j) if j.state.is_open() => found.push(finding(
                FindingKind::OpenInJournal,
                Some(j.state.to_string()),
                Some("SENT".into()),
                "the journal still holds it open: run recovery to record its outcome".into(),
            )),
            Some(j) if j.state != State::Accepted => found.push(finding(
                FindingKind::RefusedInJournal,
                Some(j.state.to_string()),
                Some("SENT".into()),
                "the journal holds it as not paid, but the service sent it".into(),
            )),
            Some(_) => {}
        }
        if let Some(j) = &entry
            && let Some(sent) = sent_of(j)
        {
            let service_amount = if sent.deduct { e.total } else { e.amount };
            if service_amount.value() != sent.amount.value() {
                found.push(finding(
                    FindingKind::AmountDiffers,
                    Some(sent.amount.to_plain_string()),
                    Some(service_amount.to_plain_string()),
                    format!(
                        "the journal sent {} {}, the service recorded {}",
                        sent.amount.to_plain_string(),
                        sent.currency.code(),
                        service_amount.to_plain_string()
                    ),
                ));
            }
            if let Some(fee) = j.references.charges
                && fee.value() != e.fee.value()
            {
                found.push(finding(
                    FindingKind::FeeDiffers,
                    Some(fee.to_plain_string()),
                    Some(e.fee.to_plain_string()),
                    format!(
                        "the send's answer gave a fee of {}, the activity log says {}",
                        fee.to_plain_string(),
                        e.fee.to_plain_string()
                    ),
                ));
            }
        }
        match charged.get(&request_id) {
            None => found.push(finding(
                FindingKind::NotInStatement,
                None,
                Some(e.total.to_plain_string()),
                "the statement has no charge for this transfer".into(),
            )),
            Some(c) if *c != e.total.value() => found.push(finding(
                FindingKind::StatementDiffers,
                None,
                Some(c.to_string()),
                format!(
                    "the statement charged {c}, the activity log's total is {}",
                    e.total.to_plain_string()
                ),
            )),
            Some(_) => {}
        }
        if found.is_empty() {
            report.currencies.entry(code).or_default().matched += 1;
        }
        report.findings.extend(found);
    }

    // The journal's accepted sends in the range that the service does not list.
    let since = Listing::new()
        .state(State::Accepted)
        .since(from)
        .limit(u32::MAX);
    let entries = journal
        .list(&since)
        .await
        .map_err(ReconcileError::Journal)?;
    for j in entries.iter().filter(|j| {
        j.service == Service::MoneyTransfer
            && j.operation == Operation::Send
            && ms(j.created) <= ms(to)
    }) {
        report.journal_sends += 1;
        let Ok(id) = j.key.parse::<RequestId>() else {
            continue;
        };
        if at_service.contains(&id) {
            continue;
        }
        // Not in this range's activity log: the status endpoint (authoritative) says whether the
        // service has it at all. A request recorded in the range may have gone out later (a
        // recovery, or a later run, sent it): then it is listed on the day it was sent.
        let why = match client.status(&StatusQuery::RequestId(id)).await {
            Ok(_) => {
                report.sent_after_range.push(id);
                continue;
            }
            Err(e) if e.code() == Some(&TransferCode::SendingTransferInvalidInfo) => {
                "its status read says the service never received it".to_owned()
            }
            Err(e) => format!("its status could not be read ({e})"),
        };
        let sent = sent_of(j);
        report.findings.push(Finding {
            kind: FindingKind::MissingAtService,
            currency: sent
                .as_ref()
                .map(|s| s.currency.code().to_owned())
                .unwrap_or_default(),
            request_id: Some(id),
            transfer_id: j.references.transfer_id.clone(),
            journal: sent.map(|s| s.amount.to_plain_string()),
            service: None,
            message: format!(
                "the journal holds Request-id {id} as accepted on {}, but the activity log does not list it and {why}: lost?",
                j.created
            ),
        });
    }
    report.findings.sort_by_key(|f| (f.kind, f.request_id));
    Ok(report)
}
