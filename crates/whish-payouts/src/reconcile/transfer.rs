//! The money-transfer reconciliation: the journal, the activity log and the statement of a
//! range, joined by Request-id, per currency.

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;
use serde::Deserialize;
use time::OffsetDateTime;
use whish_core::{Amount, Currency, RequestId};
use whish_journal::{Entry, Journal, Listing, Operation, Service, State};
use whish_money_transfer::reconcile::{check_balance_rule, in_time_order};
use whish_money_transfer::{
    ActivityEntry, ActivityStatus, CurrencyStatement, ReportRange, StatementLine, StatusQuery,
    TransferClient, TransferCode,
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
    let amount = Amount::deserialize(v.get("amount")?).ok()?;
    let currency = Currency::from_id(v.get("currencyId")?.as_i64()?)?;
    let deduct = v.get("deductFees").and_then(serde_json::Value::as_bool) == Some(true);
    Some(Sent {
        amount,
        currency,
        deduct,
    })
}

/// How far past the range's edges the activity log and the statement are read, to pair an
/// event in the range with its other half just outside it (a send at 23:59:59 charged at
/// 00:00:00, a cancel and its refund a second apart). Only events in the range are counted and
/// reported.
const PAIRING_MARGIN: time::Duration = time::Duration::minutes(5);

/// How far before the range the activity log is read for the earlier events of a transfer the
/// range only collects or cancels (sent on an earlier day): a transfer collected after it was
/// cancelled, or the bounds of a refund.
const LOOK_BACK: time::Duration = time::Duration::days(30);

/// What the statement booked under one Request-id in one currency.
#[derive(Default)]
struct Booked {
    /// Its lines that lowered the balance (the send's charge).
    charged: Decimal,
    /// Its lines that raised it (a cancellation's refund).
    refunded: Decimal,
    /// Of those, the ones dated in the range.
    charged_in_range: Decimal,
    /// Of those, the ones dated in the range.
    refunded_in_range: Decimal,
}

/// What the statement booked, by currency and Request-id.
type Book = BTreeMap<(String, RequestId), Booked>;

/// Lines or events without a Request-id, each with whether it is dated in the range.
type WithoutId<'a, T> = Vec<(&'a T, bool)>;

/// The activity log's events of one Request-id, the range's and the margin's.
#[derive(Default)]
struct Events<'a> {
    sent: Vec<&'a ActivityEntry>,
    received: Vec<&'a ActivityEntry>,
    cancelled: Vec<&'a ActivityEntry>,
    /// Whether any of them is dated in the range.
    in_range: bool,
}

impl<'a> Events<'a> {
    /// File an event under its status (an unknown status is not counted).
    fn add(&mut self, e: &'a ActivityEntry) {
        match e.status {
            ActivityStatus::Sent => self.sent.push(e),
            ActivityStatus::Received => self.received.push(e),
            ActivityStatus::Cancelled => self.cancelled.push(e),
            _ => {}
        }
    }
}

fn code_of(e: &ActivityEntry) -> String {
    Currency::from_code(&e.currency).code().to_owned()
}

fn plain(d: Decimal) -> String {
    Amount::new(d).to_plain_string()
}

/// What a line took from the account (positive) or gave back (negative): credit - debit, so a
/// negative debit is a charge too.
fn outflow(l: &StatementLine) -> Decimal {
    l.credit.value() - l.debit.value()
}

/// Per currency, the sums of the charges and the activity totals of the sends found to match
/// one by one: each is compared to half a cent, so their sums are compared too.
#[derive(Default)]
struct Sums {
    charged: Decimal,
    total: Decimal,
}

/// Reconcile the money-transfer service over `range` (the activity log and the statement of
/// that range) against the journal's sends recorded between `from` and `to` (UTC, each to the
/// second: a send recorded at 23:59:59.500 is in a range that ends at 23:59:59).
///
/// Every movement of money in the range is explained both ways: each send of the activity log
/// by the journal (once, in its currency, for its amount and fee, under the transfer id the
/// journal recorded) and by a charge of the statement; each charge and each refund of the
/// statement by a send or a cancellation of the activity log; each cancellation by a refund;
/// each accepted send of the journal by the activity log. Amounts the service reports are
/// compared to its currency's smallest unit (they are doubles), one by one and summed. The two
/// reports are read a few minutes past the range's edges, so that a send at 23:59:59 pairs with
/// its charge at 00:00:00; only what is dated in the range is counted and reported.
///
/// # Examples
///
/// Yesterday's transfers against the journal, each difference printed:
///
/// ```no_run
/// # async fn run(
/// #     journal: whish_journal::Journal,
/// #     client: whish_money_transfer::TransferClient,
/// # ) -> Result<(), Box<dyn std::error::Error>> {
/// use time::macros::datetime;
/// use whish_money_transfer::ReportRange;
/// let range = ReportRange::starting("2026-11-26 00:00:00")?.until("2026-11-26 23:59:59")?;
/// let (from, to) = (datetime!(2026-11-26 00:00:00 UTC), datetime!(2026-11-26 23:59:59 UTC));
/// let report = whish_payouts::reconcile::transfers(&journal, &client, &range, from, to).await?;
/// for f in &report.findings {
///     println!("{:?} {:?}: {}", f.kind, f.request_id, f.message);
/// }
/// println!("{}", if report.is_clean() { "everything matches" } else { "differences" });
/// # Ok(()) }
/// ```
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
    let wide = range.widened(PAIRING_MARGIN);
    let activity = client
        .activity(&wide)
        .await
        .map_err(ReconcileError::Service)?;
    let statements = client
        .statement(&wide)
        .await
        .map_err(ReconcileError::Service)?;
    let mut report = TransferReport::default();
    let (book, charges_without_id) = read_statements(&statements, range, &mut report);
    let (events, sent_without_id) = read_activity(&activity, range, &mut report);
    let sent_before = sent_before(&events);
    let earlier_log = earlier_activity(client, &wide, &sent_before).await?;
    let earlier = earlier_events(&earlier_log, &sent_before);
    let mut sums: BTreeMap<String, Sums> = BTreeMap::new();
    let none = Events::default();
    for (&request_id, ev) in &events {
        if !ev.in_range {
            continue;
        }
        let before = earlier.get(&request_id).unwrap_or(&none);
        let found = check_request(
            journal,
            &mut report,
            &book,
            &mut sums,
            request_id,
            ev,
            before,
        )
        .await?;
        if let Some(first) = ev.sent.iter().find(|e| range.contains(e.date))
            && found.is_empty()
        {
            report.currencies.entry(code_of(first)).or_default().matched += 1;
        }
        report.findings.extend(found);
    }
    compare_sums(&sums, &mut report);
    pair_without_request_id(sent_without_id, charges_without_id, &mut report);
    booked_not_in_activity(&book, &events, &mut report);
    missing_at_service(
        journal,
        client,
        &mut report,
        range,
        &events,
        &book,
        (from, to),
    )
    .await?;
    report.findings.sort_by_key(|f| (f.kind, f.request_id));
    Ok(report)
}

/// What the statement booked under each Request-id, per currency, and its lines without a
/// Request-id that took money (with whether each is dated in the range); each currency's
/// balances of the range, and the balance rule checked over the range's lines and the one
/// before them.
fn read_statements<'a>(
    statements: &'a [CurrencyStatement],
    range: &ReportRange,
    report: &mut TransferReport,
) -> (Book, WithoutId<'a, StatementLine>) {
    let mut book = Book::new();
    let mut charges_without_id = WithoutId::new();
    for s in statements {
        let ordered = in_time_order(s);
        let in_range: Vec<&StatementLine> = ordered
            .iter()
            .copied()
            .filter(|l| range.contains(l.date))
            .collect();
        // The rule from the line before the range (read in the margin), when there is one, so
        // that the range's first line is checked too.
        let checked: Vec<StatementLine> = match ordered.iter().position(|l| range.contains(l.date))
        {
            Some(i) => ordered[i.saturating_sub(1)..i + in_range.len()]
                .iter()
                .map(|l| (*l).clone())
                .collect(),
            None => Vec::new(),
        };
        for l in &s.transactions {
            let code = l.currency.code().to_owned();
            let out = outflow(l);
            let here = range.contains(l.date);
            match l.request_id {
                Some(r) => {
                    let b = book.entry((code, r)).or_default();
                    let (charge, refund) = (out.max(Decimal::ZERO), (-out).max(Decimal::ZERO));
                    b.charged += charge;
                    b.refunded += refund;
                    if here {
                        b.charged_in_range += charge;
                        b.refunded_in_range += refund;
                    }
                }
                None if out > Decimal::ZERO => charges_without_id.push((l, here)),
                None => {}
            }
        }
        let (Some(first), Some(last)) = (in_range.first().copied(), in_range.last().copied())
        else {
            continue;
        };
        let code = first.currency.code().to_owned();
        let totals = report.currencies.entry(code.clone()).or_default();
        totals.statement_lines = in_range.len() as u64;
        totals.opening_balance =
            Some(first.balance.value() - first.debit.value() + first.credit.value());
        totals.closing_balance = Some(last.balance.value());
        let mut of_range = s.clone();
        of_range.transactions = checked;
        if let Err(b) = check_balance_rule(&of_range) {
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
    (book, charges_without_id)
}

/// The range's totals from the activity log, and every event grouped by Request-id; the sends
/// without a Request-id (with whether each is dated in the range).
fn read_activity<'a>(
    activity: &'a [ActivityEntry],
    range: &ReportRange,
    report: &mut TransferReport,
) -> (
    BTreeMap<RequestId, Events<'a>>,
    WithoutId<'a, ActivityEntry>,
) {
    let mut events: BTreeMap<RequestId, Events<'_>> = BTreeMap::new();
    let mut sent_without_id = WithoutId::new();
    for e in activity {
        let here = range.contains(e.date);
        if here {
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
        }
        let Some(r) = e.request_id else {
            if e.status == ActivityStatus::Sent {
                sent_without_id.push((e, here));
            }
            continue;
        };
        let ev = events.entry(r).or_default();
        ev.in_range |= here;
        ev.add(e);
    }
    (events, sent_without_id)
}

/// The activity log of the days before the range, read only when the range collects or
/// cancels a transfer it did not send (one read).
async fn earlier_activity(
    client: &TransferClient,
    wide: &ReportRange,
    sent_before: &BTreeSet<RequestId>,
) -> Result<Vec<ActivityEntry>, ReconcileError> {
    if sent_before.is_empty() {
        return Ok(Vec::new());
    }
    client
        .activity(&wide.preceding(LOOK_BACK))
        .await
        .map_err(ReconcileError::Service)
}

/// The transfers the range collects or cancels but did not send (sent on an earlier day).
fn sent_before(events: &BTreeMap<RequestId, Events<'_>>) -> BTreeSet<RequestId> {
    events
        .iter()
        .filter(|(_, ev)| ev.in_range && ev.sent.is_empty())
        .map(|(r, _)| *r)
        .collect()
}

/// The earlier events of each transfer in `sent_before`.
fn earlier_events<'a>(
    earlier_log: &'a [ActivityEntry],
    sent_before: &BTreeSet<RequestId>,
) -> BTreeMap<RequestId, Events<'a>> {
    let mut earlier: BTreeMap<RequestId, Events<'a>> = BTreeMap::new();
    for e in earlier_log {
        let Some(r) = e.request_id.filter(|r| sent_before.contains(r)) else {
            continue;
        };
        earlier.entry(r).or_default().add(e);
    }
    earlier
}

/// Per currency, the charges of the sends matched one by one against their activity totals,
/// summed: each pair is within half a cent, and so must their sums be.
fn compare_sums(sums: &BTreeMap<String, Sums>, report: &mut TransferReport) {
    for (code, s) in sums {
        let currency = Currency::from_code(code);
        if !Amount::new(s.charged).is_same_sum(Amount::new(s.total), &currency) {
            report.findings.push(Finding {
                kind: FindingKind::StatementDiffers,
                currency: code.clone(),
                request_id: None,
                transfer_id: None,
                journal: None,
                service: Some(plain(s.charged)),
                message: format!(
                    "the statement charged {} {code} in all for the sends it matched one by one, whose totals in the activity log come to {}",
                    plain(s.charged),
                    plain(s.total)
                ),
            });
        }
    }
}

/// Sends without a Request-id were made by something else: each explains one charge without a
/// Request-id of the same currency and total. Those of the range are reported, and so are the
/// range's charges no such send explains.
fn pair_without_request_id(
    sent_without_id: WithoutId<'_, ActivityEntry>,
    mut charges_without_id: WithoutId<'_, StatementLine>,
    report: &mut TransferReport,
) {
    for (e, here) in sent_without_id {
        let code = code_of(e);
        if let Some(i) = charges_without_id.iter().position(|(l, _)| {
            l.currency.code() == code && Amount::new(outflow(l)).is_same_sum(e.total, &l.currency)
        }) {
            charges_without_id.swap_remove(i);
        }
        if !here {
            continue;
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
    for (l, _) in charges_without_id.into_iter().filter(|(_, here)| *here) {
        report.findings.push(Finding {
            kind: FindingKind::NotInActivity,
            currency: l.currency.code().to_owned(),
            request_id: None,
            transfer_id: Some(l.id.clone()),
            journal: None,
            service: Some(plain(outflow(l))),
            message: format!(
                "the statement took {} {} on {} ({} line, no Request-id), and no send of the activity log explains it",
                plain(outflow(l)),
                l.currency.code(),
                l.date,
                l.kind
            ),
        });
    }
}

/// Charges and refunds in the range under a Request-id the activity log does not list as sent
/// (or cancelled) in that currency.
fn booked_not_in_activity(
    book: &Book,
    events: &BTreeMap<RequestId, Events<'_>>,
    report: &mut TransferReport,
) {
    for ((code, request_id), b) in book {
        let ev = events.get(request_id);
        let in_code = |of: &[&ActivityEntry]| of.iter().any(|e| code_of(e) == *code);
        let sent = ev.is_some_and(|ev| in_code(&ev.sent));
        let cancelled = ev.is_some_and(|ev| in_code(&ev.cancelled));
        let mut not_in_activity = |amount: Decimal, message: String| {
            report.findings.push(Finding {
                kind: FindingKind::NotInActivity,
                currency: code.clone(),
                request_id: Some(*request_id),
                transfer_id: None,
                journal: None,
                service: Some(plain(amount)),
                message,
            });
        };
        if b.charged_in_range > Decimal::ZERO && !sent {
            not_in_activity(
                b.charged_in_range,
                format!(
                    "the statement charged {} {code} under Request-id {request_id}, which the activity log does not list as sent in {code}",
                    plain(b.charged_in_range)
                ),
            );
        }
        if b.refunded_in_range > Decimal::ZERO && !cancelled {
            not_in_activity(
                b.refunded_in_range,
                format!(
                    "the statement booked {} {code} back under Request-id {request_id}, which the activity log does not list as cancelled",
                    plain(b.refunded_in_range)
                ),
            );
        }
    }
}

/// What one Request-id's findings are about: its currency in the activity log, the id, and the
/// transfer of its first event.
struct Subject {
    code: String,
    currency: Currency,
    request_id: RequestId,
    transfer_id: String,
}

impl Subject {
    fn finding(
        &self,
        kind: FindingKind,
        journal: Option<String>,
        service: Option<String>,
        message: String,
    ) -> Finding {
        Finding {
            kind,
            currency: self.code.clone(),
            request_id: Some(self.request_id),
            transfer_id: Some(self.transfer_id.clone()),
            journal,
            service,
            message,
        }
    }
}

/// What the journal holds of one Request-id: its entry, the request it sent, the fee its
/// answer gave.
struct Journaled {
    entry: Option<Entry>,
    sent: Option<Sent>,
    fee: Option<Amount>,
}

/// Every check of one Request-id with an event in the range: the journal's entry, the amount,
/// currency, fee and transfer id, the statement's charge and refund, collected and cancelled
/// both. Events just outside the range pair with those in it; findings are about the range's.
async fn check_request(
    journal: &Journal,
    report: &mut TransferReport,
    book: &Book,
    sums: &mut BTreeMap<String, Sums>,
    request_id: RequestId,
    ev: &Events<'_>,
    before: &Events<'_>,
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
    let subject = Subject {
        currency: Currency::from_code(&code),
        code,
        request_id,
        transfer_id: any.id.clone(),
    };
    let booked = book.get(&(subject.code.clone(), request_id));
    let entry = journal
        .entry(
            Service::MoneyTransfer,
            Operation::Send,
            &request_id.to_string(),
        )
        .await
        .map_err(ReconcileError::Journal)?;
    let journaled = Journaled {
        sent: entry.as_ref().and_then(sent_of),
        fee: entry.as_ref().and_then(|j| j.references.charges),
        entry,
    };
    if let Some(&e) = ev.sent.first() {
        check_send_in_journal(&subject, ev, e, &journaled, &mut found);
        check_send_amounts(&subject, e, &journaled, &mut found);
        check_charge(&subject, ev, booked, sums, &mut found);
    }
    let received = !ev.received.is_empty() || !before.received.is_empty();
    let cancelled = !ev.cancelled.is_empty() || !before.cancelled.is_empty();
    if received && cancelled {
        found.push(subject.finding(
            FindingKind::CollectedAndCancelled,
            None,
            Some("RECEIVED, CANCELLED".into()),
            "the activity log lists it both collected and cancelled: paid out to the receiver and refunded to the account".into(),
        ));
    }
    if let Some(c) = ev.cancelled.first() {
        let refunded = booked.map_or(Decimal::ZERO, |b| b.refunded);
        check_refund(&subject, ev, before, c, &journaled, refunded, &mut found);
        report
            .currencies
            .entry(subject.code.clone())
            .or_default()
            .refunded += refunded;
        report.cancellations.push(Cancelled {
            currency: subject.code.clone(),
            request_id: Some(request_id),
            transfer_id: c.id.clone(),
            amount: c.amount.value(),
            fee: c.fee.value(),
            refunded,
        });
    }
    Ok(found)
}

/// A send of the activity log against the journal: one send per Request-id, under the
/// transfer id the journal recorded, and an entry the journal holds accepted.
fn check_send_in_journal(
    subject: &Subject,
    ev: &Events<'_>,
    e: &ActivityEntry,
    journaled: &Journaled,
    found: &mut Vec<Finding>,
) {
    let request_id = subject.request_id;
    let entry = journaled.entry.as_ref();
    let ids: BTreeSet<&str> = ev.sent.iter().map(|e| e.id.as_str()).collect();
    if ev.sent.len() > 1 {
        found.push(subject.finding(
            FindingKind::DuplicateAtService,
            Some("1".into()),
            Some(ev.sent.len().to_string()),
            format!(
                "the activity log lists {} sends under Request-id {request_id} (transfers {}): paid more than once",
                ev.sent.len(),
                ids.iter().copied().collect::<Vec<_>>().join(", ")
            ),
        ));
    } else if let Some(t) = entry.and_then(|j| j.references.transfer_id.as_deref())
        && !ids.contains(t)
    {
        found.push(subject.finding(
            FindingKind::DuplicateAtService,
            Some(t.to_owned()),
            Some(e.id.clone()),
            format!(
                "the journal's send under Request-id {request_id} created transfer {t}; the activity log lists transfer {} sent under it: paid more than once",
                e.id
            ),
        ));
    }
    match entry {
        None => found.push(subject.finding(
            FindingKind::NotInJournal,
            None,
            Some(e.total.to_plain_string()),
            format!(
                "the service sent {} {} under Request-id {request_id}, which the journal does not hold: sent by something else",
                e.amount.to_plain_string(),
                e.currency
            ),
        )),
        Some(j) if j.state.is_open() => found.push(subject.finding(
            FindingKind::OpenInJournal,
            Some(j.state.to_string()),
            Some("SENT".into()),
            "the journal still holds it open: run recovery to record its outcome".into(),
        )),
        Some(j) if j.state != State::Accepted => found.push(subject.finding(
            FindingKind::RefusedInJournal,
            Some(j.state.to_string()),
            Some("SENT".into()),
            "the journal holds it as not paid, but the service sent it".into(),
        )),
        Some(_) => {}
    }
}

/// A send of the activity log against the request the journal sent: its currency, its amount
/// (the total when the fee was deducted), and the fee the send's answer gave.
fn check_send_amounts(
    subject: &Subject,
    e: &ActivityEntry,
    journaled: &Journaled,
    found: &mut Vec<Finding>,
) {
    let Some(sent) = &journaled.sent else {
        return;
    };
    let (code, currency) = (subject.code.as_str(), &subject.currency);
    if sent.currency.code() != code {
        found.push(subject.finding(
            FindingKind::CurrencyDiffers,
            Some(sent.currency.code().to_owned()),
            Some(code.to_owned()),
            format!(
                "the journal sent {} {}, the activity log records it in {code}",
                sent.amount.to_plain_string(),
                sent.currency.code()
            ),
        ));
    } else {
        let service_amount = if sent.deduct { e.total } else { e.amount };
        if !service_amount.is_same_sum(sent.amount, currency) {
            found.push(subject.finding(
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
    if let Some(fee) = journaled.fee
        && !fee.is_same_sum(e.fee, currency)
    {
        found.push(subject.finding(
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

/// The sends of one Request-id against the statement's charge under it; a charge that matches
/// is added to its currency's sums.
fn check_charge(
    subject: &Subject,
    ev: &Events<'_>,
    booked: Option<&Booked>,
    sums: &mut BTreeMap<String, Sums>,
    found: &mut Vec<Finding>,
) {
    let code = &subject.code;
    let total: Decimal = ev.sent.iter().map(|e| e.total.value()).sum();
    match booked.map(|b| b.charged).filter(|c| *c > Decimal::ZERO) {
        None => found.push(subject.finding(
            FindingKind::NotInStatement,
            None,
            Some(plain(total)),
            format!("the statement has no charge in {code} for this transfer"),
        )),
        Some(c) if !Amount::new(c).is_same_sum(Amount::new(total), &subject.currency) => {
            found.push(subject.finding(
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
        Some(c) => {
            let s = sums.entry(code.clone()).or_default();
            s.charged += c;
            s.total += total;
        }
    }
}

/// A cancellation against the statement's refund: at least what the receiver was to collect,
/// at most that with the fee; from the send, else the journal's request, else the
/// cancellation's own event.
fn check_refund(
    subject: &Subject,
    ev: &Events<'_>,
    before: &Events<'_>,
    c: &ActivityEntry,
    journaled: &Journaled,
    refunded: Decimal,
    found: &mut Vec<Finding>,
) {
    let (code, currency) = (subject.code.as_str(), &subject.currency);
    let (least, most) = match (ev.sent.first().or(before.sent.first()), &journaled.sent) {
        (Some(s), _) => (s.amount, s.total),
        (None, Some(j)) if j.currency.code() == code => match (j.deduct, journaled.fee) {
            (true, Some(f)) => (Amount::new(j.amount.value() - f.value()), j.amount),
            (true, None) => (c.amount, j.amount),
            (false, Some(f)) => (j.amount, Amount::new(j.amount.value() + f.value())),
            (false, None) => (j.amount, c.total),
        },
        _ => (c.amount, c.total),
    };
    if refunded <= Decimal::ZERO {
        found.push(subject.finding(
            FindingKind::RefundNotInStatement,
            None,
            Some(most.to_plain_string()),
            format!(
                "cancelled, but the statement booked no refund in {code} for it (its amount {}, with the fee {})",
                least.to_plain_string(),
                most.to_plain_string()
            ),
        ));
    } else if (refunded < least.value() && !Amount::new(refunded).is_same_sum(least, currency))
        || (refunded > most.value() && !Amount::new(refunded).is_same_sum(most, currency))
    {
        found.push(subject.finding(
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
}

/// The journal's accepted sends recorded in the range that the activity log does not list.
async fn missing_at_service(
    journal: &Journal,
    client: &TransferClient,
    report: &mut TransferReport,
    range: &ReportRange,
    events: &BTreeMap<RequestId, Events<'_>>,
    book: &Book,
    (from, to): (OffsetDateTime, OffsetDateTime),
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
        .filter(|(_, b)| b.charged_in_range > Decimal::ZERO)
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
        if let Some(ev) = events.get(&id).filter(|ev| !ev.sent.is_empty()) {
            // Listed just past the range's end (the margin read for pairing): sent after it.
            if ev.sent.iter().all(|e| e.date > range.end()) {
                report.sent_after_range.push(id);
            }
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
