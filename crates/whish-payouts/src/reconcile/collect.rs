//! The hosted-collect service: the journal's payments and refunds against the status endpoint
//! (the service offers no activity log or statement for it: the status of each payment is what
//! there is to reconcile with).

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde::Serialize;
use time::OffsetDateTime;
use whish_core::{Amount, Currency, ExternalId};
use whish_hosted_collect::{CollectClient, CollectStatus};
use whish_journal::{Journal, Listing, Operation, Service, State};

use super::ReconcileError;

/// What kind of difference a hosted-collect finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CollectFindingKind {
    /// The journal holds a refund as accepted; the service does not say `refunded`.
    RefundNotAtService,
    /// The service says `refunded`; the journal holds no accepted refund (made by something
    /// else).
    RefundedOutsideJournal,
    /// The journal still holds the create or the refund open: run recovery.
    OpenInJournal,
    /// The service answered `unknown`, or its status could not be read.
    StatusUnknown,
}

impl CollectFindingKind {
    /// The kind's name, as the report writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            CollectFindingKind::RefundNotAtService => "refund-not-at-service",
            CollectFindingKind::RefundedOutsideJournal => "refunded-outside-journal",
            CollectFindingKind::OpenInJournal => "open-in-journal",
            CollectFindingKind::StatusUnknown => "status-unknown",
        }
    }
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CollectFinding {
    /// What kind.
    pub kind: CollectFindingKind,
    /// The currency code.
    pub currency: String,
    /// The payment's externalId.
    pub external_id: String,
    /// In a sentence.
    pub message: String,
}

/// The totals of one currency.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CollectTotals {
    /// Payment links the journal created.
    pub created: u64,
    /// Their amounts.
    pub created_amount: Decimal,
    /// Paid (`success`).
    pub paid: u64,
    /// Their amounts.
    pub paid_amount: Decimal,
    /// Refunded (`refunded`).
    pub refunded: u64,
    /// Their amounts.
    pub refunded_amount: Decimal,
    /// Still payable (`pending`).
    pub pending: u64,
    /// Expired unpaid (`failed`).
    pub failed: u64,
}

/// The reconciliation of the hosted-collect service.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CollectReport {
    /// Totals per currency code.
    pub currencies: BTreeMap<String, CollectTotals>,
    /// Every difference. Empty: everything matches.
    pub findings: Vec<CollectFinding>,
}

impl CollectReport {
    /// True when nothing differs.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

fn amount_and_currency(body: &[u8]) -> Option<(Amount, Currency)> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let amount = match v.get("amount")? {
        serde_json::Value::String(s) => Amount::parse(s).ok()?,
        serde_json::Value::Number(n) => Amount::parse(&n.to_string()).ok()?,
        _ => return None,
    };
    Some((amount, Currency::from_code(v.get("currency")?.as_str()?)))
}

/// Reconcile the hosted-collect payments the journal created between `from` and `to` (UTC):
/// the status of each, read from the service, against the journal's refunds.
///
/// # Errors
///
/// A `ReconcileError` when the journal cannot be read (a status that cannot be read is a
/// finding, not an error).
pub async fn collect(
    journal: &Journal,
    client: &CollectClient,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<CollectReport, ReconcileError> {
    journal.flush().await;
    let mut report = CollectReport::default();
    let to_ms = to.unix_timestamp_nanos();
    let entries = journal
        .list(&Listing::new().since(from).limit(u32::MAX))
        .await
        .map_err(ReconcileError::Journal)?;
    for e in entries.iter().rev().filter(|e| {
        e.service == Service::HostedCollect
            && e.operation == Operation::Create
            && e.created.unix_timestamp_nanos() <= to_ms
    }) {
        let Some((amount, currency)) = amount_and_currency(&e.request) else {
            continue;
        };
        let code = currency.code().to_owned();
        let finding = |kind, message: String| CollectFinding {
            kind,
            currency: code.clone(),
            external_id: e.key.clone(),
            message,
        };
        if e.state.is_open() {
            report.findings.push(finding(
                CollectFindingKind::OpenInJournal,
                format!("the create is {} in the journal: run recovery", e.state),
            ));
            continue;
        }
        if e.state != State::Accepted {
            continue;
        }
        let totals = report.currencies.entry(code.clone()).or_default();
        totals.created += 1;
        totals.created_amount += amount.value();
        let refund = journal
            .entry(Service::HostedCollect, Operation::Refund, &e.key)
            .await
            .map_err(ReconcileError::Journal)?;
        let Ok(id) = ExternalId::new(e.key.clone()) else {
            continue;
        };
        let status = match client.status(currency.clone(), &id).await {
            Ok(s) => s.collect_status,
            Err(err) => {
                report.findings.push(finding(
                    CollectFindingKind::StatusUnknown,
                    format!("the status could not be read: {err}"),
                ));
                continue;
            }
        };
        let totals = report.currencies.entry(code.clone()).or_default();
        match status {
            CollectStatus::Success => {
                totals.paid += 1;
                totals.paid_amount += amount.value();
            }
            CollectStatus::Refunded => {
                totals.refunded += 1;
                totals.refunded_amount += amount.value();
            }
            CollectStatus::Pending => totals.pending += 1,
            CollectStatus::Failed => totals.failed += 1,
            ref other => report.findings.push(finding(
                CollectFindingKind::StatusUnknown,
                format!("the service says `{other}`"),
            )),
        }
        match (&refund, &status) {
            (Some(r), _) if r.state.is_open() => report.findings.push(finding(
                CollectFindingKind::OpenInJournal,
                format!("the refund is {} in the journal: run recovery", r.state),
            )),
            (Some(r), s) if r.state == State::Accepted && *s != CollectStatus::Refunded => {
                report.findings.push(finding(
                    CollectFindingKind::RefundNotAtService,
                    format!("the journal holds the refund as accepted; the service says `{s}`"),
                ));
            }
            (r, CollectStatus::Refunded)
                if r.as_ref().is_none_or(|r| r.state != State::Accepted) =>
            {
                report.findings.push(finding(
                    CollectFindingKind::RefundedOutsideJournal,
                    "the service says refunded; the journal holds no accepted refund".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(report)
}
