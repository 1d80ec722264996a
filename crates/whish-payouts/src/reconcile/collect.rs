//! The hosted-collect service: the journal's payments and refunds against the status endpoint
//! (the service offers no activity log or statement for it: the status of each payment is what
//! there is to reconcile with).

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use whish_core::{Amount, Currency, ExternalId};
use whish_hosted_collect::{CollectClient, CollectStatus};
use whish_journal::{Entry, Journal, Listing, Operation, Service, State};

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
    /// Totals per currency code (the payments the journal created in the range).
    pub currencies: BTreeMap<String, CollectTotals>,
    /// Every difference. Empty: everything matches.
    pub findings: Vec<CollectFinding>,
    /// Payments created before the range (within the look-back, or refunded through the
    /// journal in the range) whose status was read for refunds; not in the totals.
    pub earlier_checked: u64,
}

impl CollectReport {
    /// True when nothing differs.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

fn amount_and_currency(body: &[u8]) -> Option<(Amount, Currency)> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let amount = Amount::deserialize(v.get("amount")?).ok()?;
    Some((amount, Currency::from_code(v.get("currency")?.as_str()?)))
}

/// How far before the range [`collect`] looks for refunds of earlier payments.
pub const REFUND_LOOK_BACK: time::Duration = time::Duration::days(7);

/// Reconcile the hosted-collect payments the journal created between `from` and `to` (UTC, each
/// to the second: a payment created at 23:59:59.500 is in a range that ends at 23:59:59): the
/// status of each, read from the service, against the journal's refunds; and, for refunds, the
/// payments created in the [`REFUND_LOOK_BACK`] before `from` and those the journal refunded in
/// the range. See [`collect_looking_back`].
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
    collect_looking_back(journal, client, from, to, REFUND_LOOK_BACK).await
}

/// [`collect`], reading the status of the payments created up to `look_back` before `from` for
/// refunds. The service keeps no log of refunds: a refund made outside the journal, of a payment
/// created on an earlier day, shows only in that payment's status, so a day's report finds it
/// when its look-back reaches the payment (and every day's report after, while it does: the
/// status carries no date). Each payment costs one status read.
///
/// # Errors
///
/// A `ReconcileError` when the journal cannot be read (a status that cannot be read is a
/// finding, not an error).
pub async fn collect_looking_back(
    journal: &Journal,
    client: &CollectClient,
    from: OffsetDateTime,
    to: OffsetDateTime,
    look_back: time::Duration,
) -> Result<CollectReport, ReconcileError> {
    journal.flush().await;
    let mut report = CollectReport::default();
    let entries = journal
        .list(&Listing::new().since(from - look_back).limit(u32::MAX))
        .await
        .map_err(ReconcileError::Journal)?;
    // To the second: `to` is the last second of the range, whole.
    let until = |e: &Entry| e.created.unix_timestamp() <= to.unix_timestamp();
    let in_range = |e: &Entry| e.created >= from && until(e);
    let mut payments: BTreeMap<String, (Entry, bool)> = BTreeMap::new();
    for e in entries.iter().rev() {
        if e.service != Service::HostedCollect || !until(e) {
            continue;
        }
        match e.operation {
            Operation::Create => {
                payments.insert(e.key.clone(), (e.clone(), in_range(e)));
            }
            // A refund the journal made in the range, of a payment created before the look-back.
            Operation::Refund if in_range(e) && !payments.contains_key(&e.key) => {
                if let Some(p) = journal
                    .entry(Service::HostedCollect, Operation::Create, &e.key)
                    .await
                    .map_err(ReconcileError::Journal)?
                {
                    payments.insert(e.key.clone(), (p, false));
                }
            }
            _ => {}
        }
    }
    let mut ordered: Vec<(Entry, bool)> = payments.into_values().collect();
    ordered.sort_by_key(|(e, _)| e.id);
    // A status read each, `READS_IN_FLIGHT` at a time; merged in the journal's order, so that
    // the report reads the same however the answers arrive.
    let mut parts: Vec<Option<CollectReport>> = vec![None; ordered.len()];
    let mut tasks: tokio::task::JoinSet<(usize, Result<CollectReport, ReconcileError>)> =
        tokio::task::JoinSet::new();
    let mut next = ordered.into_iter().enumerate();
    loop {
        while tasks.len() < READS_IN_FLIGHT {
            let Some((i, (e, in_range))) = next.next() else {
                break;
            };
            let (journal, client) = (journal.clone(), client.clone());
            tasks.spawn(async move {
                let mut part = CollectReport::default();
                let r = check_payment(&journal, &client, &mut part, &e, in_range).await;
                (i, r.map(|()| part))
            });
        }
        let Some(done) = tasks.join_next().await else {
            break;
        };
        // A task is never aborted: an error is its panic, carried on here.
        let (i, part) = done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        parts[i] = Some(part?);
    }
    for part in parts.into_iter().flatten() {
        report.merge(part);
    }
    Ok(report)
}

/// The status reads in flight at once.
const READS_IN_FLIGHT: usize = 8;

impl CollectReport {
    fn merge(&mut self, part: CollectReport) {
        for (code, t) in part.currencies {
            let into = self.currencies.entry(code).or_default();
            into.created += t.created;
            into.created_amount += t.created_amount;
            into.paid += t.paid;
            into.paid_amount += t.paid_amount;
            into.refunded += t.refunded;
            into.refunded_amount += t.refunded_amount;
            into.pending += t.pending;
            into.failed += t.failed;
        }
        self.findings.extend(part.findings);
        self.earlier_checked += part.earlier_checked;
    }
}

/// One payment: its create and refund in the journal against its status at the service. A
/// payment created before the range is checked for its refund only, and not counted.
async fn check_payment(
    journal: &Journal,
    client: &CollectClient,
    report: &mut CollectReport,
    e: &Entry,
    in_range: bool,
) -> Result<(), ReconcileError> {
    let Some((amount, currency)) = amount_and_currency(&e.request) else {
        return Ok(());
    };
    let code = currency.code().to_owned();
    let created = e.created;
    let finding = |kind, message: String| CollectFinding {
        kind,
        currency: code.clone(),
        external_id: e.key.clone(),
        message: if in_range {
            message
        } else {
            format!("{message} (a payment created on {created}, before the range)")
        },
    };
    if e.state.is_open() {
        if in_range {
            report.findings.push(finding(
                CollectFindingKind::OpenInJournal,
                format!("the create is {} in the journal: run recovery", e.state),
            ));
        }
        return Ok(());
    }
    if e.state != State::Accepted {
        return Ok(());
    }
    if in_range {
        let totals = report.currencies.entry(code.clone()).or_default();
        totals.created += 1;
        totals.created_amount += amount.value();
    } else {
        report.earlier_checked += 1;
    }
    let refund = journal
        .entry(Service::HostedCollect, Operation::Refund, &e.key)
        .await
        .map_err(ReconcileError::Journal)?;
    let Ok(id) = ExternalId::new(e.key.clone()) else {
        return Ok(());
    };
    let status = match client.status(currency.clone(), &id).await {
        Ok(s) => s.collect_status,
        Err(err) => {
            report.findings.push(finding(
                CollectFindingKind::StatusUnknown,
                format!("the status could not be read: {err}"),
            ));
            return Ok(());
        }
    };
    if in_range {
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
        (r, CollectStatus::Refunded) if r.as_ref().is_none_or(|r| r.state != State::Accepted) => {
            report.findings.push(finding(
                CollectFindingKind::RefundedOutsideJournal,
                "the service says refunded; the journal holds no accepted refund".into(),
            ));
        }
        _ => {}
    }
    Ok(())
}
