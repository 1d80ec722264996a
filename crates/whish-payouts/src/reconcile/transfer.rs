//! The money-transfer reconciliation: the journal, the activity log and the statement of a
//! range, joined by Request-id, per currency.

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;
use time::OffsetDateTime;
use whish_core::{Amount, Currency, RequestId};
use whish_journal::{Entry, Journal, Listing, Operation, Service, State};
use whish_money_transfer::reconcile::check_balance_rule;
use whish_money_transfer::{
    ActivityEntry, ActivityStatus, ReportRange, StatementLine, StatusQuery, TransferClient,
    TransferCode,
};

use super::{Cancelled, Finding, FindingKind, ReconcileError, TransferReport};

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

/// What the statement booked under one Request-id in one currency.
#[derive(Default)]
struct Booked {
    /// Its lines that lowered the balance (the send's charge).
    charged: Decimal,
    /// Its lines that raised it (a cancellation's refund).
    refunded: Decimal,
}

/// The activity log's events of one Request-id.
#[derive(Default)]
struct Events<'a> {
    sent: Vec<&'a ActivityEntry>,
    received: Vec<&'a ActivityEntry>,
    cancelled: Vec<&'a ActivityEntry>,
}

fn code_of(e: &ActivityEntry) -> String {
    Currency::from_code(&e.currency).code().to_owned()
}

fn plain(d: Decimal) -> String {
    Amount::new(d).to_plain_string()
}

/// Reconcile the money-transfer service over `range` (the activity log and the statement of
/// that range) against the journal's sends recorded between `from` and `to` (UTC, each to the
/// second: a send recorded at 23:59:59.500 is in a range that ends at 23:59:59).
///
/// Every movement of money is explained both ways: each send of the activity log by the
/// journal (once, in its currency, for its amount and fee) and by a charge of the statement;
/// each charge of the statement by a send of the activity log; each cancellation by a refund
/// of the statement; each accepted send of the journal by the activity log. Amounts the
/// service reports are compared to its currency's smallest unit (they are doubles).
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

    // The statement: per currency, what each Request-id was charged and refunded, the charges
    // without a Request-id, the balances, the rule.
    let mut book: BTreeMap<(String, RequestId), Booked> = BTreeMap::new();
    let mut charges_without_id: Vec<&StatementLine> = Vec::new();
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
            let code = l.currency.code().to_owned();
            match l.request_id {
                Some(r) => {
                    let b = book.entry((code, r)).or_default();
                    b.charged += l.credit.value();
                    b.refunded += l.debit.value();
                }
                None if l.credit.value() > Decimal::ZERO => charges_without_id.push(l),
                None => {}
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

    // The activity log: the totals, and its events grouped by Request-id.
    let mut events: BTreeMap<RequestId, Events<'_>> = BTreeMap::new();
    let mut sent_without_id: Vec<&ActivityEntry> = Vec::new();
    for e in &activity {
        let totals = report.currencies.entry(code_of(e)).or_default();
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
            }
            _ => {}
        }
        match (e.request_id, &e.status) {
            (Some(r), ActivityStatus::Sent) => events.entry(r).or_default().sent.push(e),
            (Some(r), ActivityStatus::Received) => events.entry(r).or_default().received.push(e),
            (Some(r), ActivityStatus::Cancelled) => {
                events.entry(r).or_default().cancelled.push(e);
            }
            (None, ActivityStatus::Sent) => sent_without_id.push(e),
            _ => {}
        }
    }

    for (&request_id, ev) in &events {
        let found = check_request(journal, &mut report, &book, request_id, ev).await?;
        if let Some(first) = ev.sent.first()
            && found.is_empty()
        {
            report.currencies.entry(code_of(first)).or_default().matched += 1;
        }
        report.findings.extend(found);
    }

    // Sends without a Request-id: made by something else; each explains one charge without a
    // Request-id of the same currency and total.
    for e in sent_without_id {
        let code = code_of(e);
        if let Some(i) = charges_without_id
            .iter()
            .position(|l| l.currency.code() == code && l.credit.is_same_sum(e.total, &l.currency))
        {
            charges_without_id.swap_remove(i);
        }
        report.findings.push(Finding {
            kind: FindingKind::NotInJournal,
            currency: code,
            request_id: None,
            transfer_id: Some(e.id.clone()),
            journal: None,
            service: Some(e.total.to_plain_string()),
            message: format!(
                "the service sent {} {} without a Request-id: not sent through the journal",
                e.amount.to_plain_string(),
                e.currency
            ),
        });
    }
    for l in charges_without_id {
        report.findings.push(Finding {
            kind: FindingKind::NotInActivity,
            currency: l.currency.code().to_owned(),
            request_id: None,
            transfer_id: Some(l.id.clone()),
            journal: None,
            service: Some(l.credit.to_plain_string()),
            message: format!(
                "the statement charged {} {} on {} ({} line, no Request-id), and no send of the activity log explains it",
                l.credit.to_plain_string(),
                l.currency.code(),
                l.date,
                l.kind
            ),
        });
    }

    // Charges under a Request-id the activity log does not list as sent in that currency.
    for ((code, request_id), b) in &book {
        let sent_here = events
            .get(request_id)
            .is_some_and(|ev| ev.sent.iter().any(|e| code_of(e) == *code));
        if b.charged > Decimal::ZERO && !sent_here {
            report.findings.push(Finding {
                kind: FindingKind::NotInActivity,
                currency: code.clone(),
                request_id: Some(*request_id),
                transfer_id: None,
                journal: None,
                service: Some(plain(b.charged)),
                message: format!(
                    "the statement charged {} {code} under Request-id {request_id}, which the activity log does not list as sent in {code}",
                    plain(b.charged)
                ),
            });
        }
    }

    missing_at_service(journal, client, &mut report, &events, &book, from, to).await?;
    report.findings.sort_by_key(|f| (f.kind, f.request_id));
    Ok(report)
}

/// Every check of one Request-id the activity log lists: the journal's entry, the amount,
/// currency and fee, the statement's charge and refund, collected and cancelled both.
async fn check_request(
    journal: &Journal,
    report: &mut TransferReport,
    book: &BTreeMap<(String, RequestId), Booked>,
    request_id: RequestId,
    ev: &Events<'_>,
) -> Result<Vec<Finding>, ReconcileError> {
    let mut found = Vec::new();
    let Some(any) = ev
        .sent
        .first()
        .or(ev.cancelled.first())
        .or(ev.received.first())
    else {
        return Ok(found);
    };
    let code = code_of(any);
    let currency = Currency::from_code(&code);
    let finding =
        |kind, journal: Option<String>, service: Option<String>, message: String| Finding {
            kind,
            currency: code.clone(),
            request_id: Some(request_id),
            transfer_id: Some(any.id.clone()),
            journal,
            service,
            message,
        };
    let booked = book.get(&(code.clone(), request_id));

    if !ev.sent.is_empty() {
        let ids: BTreeSet<&str> = ev.sent.iter().map(|e| e.id.as_str()).collect();
        if ev.sent.len() > 1 {
            found.push(finding(
                FindingKind::DuplicateAtService,
                Some("1".into()),
                Some(ev.sent.len().to_string()),
                format!(
                    "the activity log lists {} sends under Request-id {request_id} (transfers {}): paid more than once",
                    ev.sent.len(),
                    ids.into_iter().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        let e = ev.sent[0];
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
                format!(
                    "the service sent {} {} under Request-id {request_id}, which the journal does not hold: sent by something else",
                    e.amount.to_plain_string(),
                    e.currency
                ),
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
            if sent.currency.code() != code {
                found.push(finding(
                    FindingKind::CurrencyDiffers,
                    Some(sent.currency.code().to_owned()),
                    Some(code.clone()),
                    format!(
                        "the journal sent {} {}, the activity log records it in {code}",
                        sent.amount.to_plain_string(),
                        sent.currency.code()
                    ),
                ));
            } else {
                let service_amount = if sent.deduct { e.total } else { e.amount };
                if !service_amount.is_same_sum(sent.amount, &currency) {
                    found.push(finding(
                        FindingKind::AmountDiffers,
                        Some(sent.amount.to_plain_string()),
                        Some(service_amount.to_plain_string()),
                        format!(
                            "the journal sent {} {code}, the service recorded {}",
                            sent.amount.to_plain_string(),
                            service_amount.to_plain_string()
                        ),
                    ));
                }
            }
            if let Some(fee) = j.references.charges
                && !fee.is_same_sum(e.fee, &currency)
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
        let total: Decimal = ev.sent.iter().map(|e| e.total.value()).sum();
        match booked.map(|b| b.charged).filter(|c| *c > Decimal::ZERO) {
            None => found.push(finding(
                FindingKind::NotInStatement,
                None,
                Some(plain(total)),
                format!("the statement has no charge in {code} for this transfer"),
            )),
            Some(c) if !Amount::new(c).is_same_sum(Amount::new(total), &currency) => {
                found.push(finding(
                    FindingKind::StatementDiffers,
                    None,
                    Some(plain(c)),
                    format!(
                        "the statement charged {}, the activity log's total is {}",
                        plain(c),
                        plain(total)
                    ),
                ));
            }
            Some(_) => {}
        }
    }

    if !ev.received.is_empty() && !ev.cancelled.is_empty() {
        found.push(finding(
            FindingKind::CollectedAndCancelled,
            None,
            Some("RECEIVED, CANCELLED".into()),
            "the activity log lists it both collected and cancelled: paid out to the receiver and refunded to the account".into(),
        ));
    }
    if let Some(c) = ev.cancelled.first() {
        let refunded = booked.map_or(Decimal::ZERO, |b| b.refunded);
        let (least, most) = (c.amount, c.total);
        if refunded <= Decimal::ZERO {
            found.push(finding(
                FindingKind::RefundNotInStatement,
                None,
                Some(c.total.to_plain_string()),
                format!(
                    "cancelled, but the statement booked no refund in {code} for it (its amount {}, with the fee {})",
                    least.to_plain_string(),
                    most.to_plain_string()
                ),
            ));
        } else if (refunded < least.value() && !Amount::new(refunded).is_same_sum(least, &currency))
            || (refunded > most.value() && !Amount::new(refunded).is_same_sum(most, &currency))
        {
            found.push(finding(
                FindingKind::RefundDiffers,
                None,
                Some(plain(refunded)),
                format!(
                    "cancelled, and the statement booked back {}: not between its amount {} and its amount with the fee {}",
                    plain(refunded),
                    least.to_plain_string(),
                    most.to_plain_string()
                ),
            ));
        }
        report.currencies.entry(code.clone()).or_default().refunded += refunded;
        report.cancellations.push(Cancelled {
            currency: code.clone(),
            request_id: Some(request_id),
            transfer_id: c.id.clone(),
            amount: c.amount.value(),
            fee: c.fee.value(),
            refunded,
        });
    }
    Ok(found)
}

/// The journal's accepted sends recorded in the range that the activity log does not list.
async fn missing_at_service(
    journal: &Journal,
    client: &TransferClient,
    report: &mut TransferReport,
    events: &BTreeMap<RequestId, Events<'_>>,
    book: &BTreeMap<(String, RequestId), Booked>,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<(), ReconcileError> {
    let since = Listing::new()
        .state(State::Accepted)
        .since(from)
        .limit(u32::MAX);
    let entries = journal
        .list(&since)
        .await
        .map_err(ReconcileError::Journal)?;
    let charged: BTreeSet<RequestId> = book
        .iter()
        .filter(|(_, b)| b.charged > Decimal::ZERO)
        .map(|((_, r), _)| *r)
        .collect();
    // To the second: `to` is the last second of the range, whole.
    for j in entries.iter().filter(|j| {
        j.service == Service::MoneyTransfer
            && j.operation == Operation::Send
            && j.created.unix_timestamp() <= to.unix_timestamp()
    }) {
        report.journal_sends += 1;
        let Ok(id) = j.key.parse::<RequestId>() else {
            continue;
        };
        if events.get(&id).is_some_and(|ev| !ev.sent.is_empty()) {
            continue;
        }
        if charged.contains(&id) {
            // The statement of the range charged it, so it was sent in the range, and the
            // activity log does not list it: already a `not-in-activity` finding.
            continue;
        }
        // Not in this range's activity log: the status endpoint (authoritative) says whether the
        // service has it at all. A request recorded in the range may have gone out later (a
        // recovery, or a later run, sent it): then it is listed on the day it was sent.
        let sent = sent_of(j);
        let currency = sent
            .as_ref()
            .map(|s| s.currency.code().to_owned())
            .unwrap_or_default();
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
        report.findings.push(Finding {
            kind: FindingKind::MissingAtService,
            currency,
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
    Ok(())
}
