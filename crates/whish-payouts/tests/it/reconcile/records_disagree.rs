#![allow(dead_code, missing_docs)]
//! End-of-day reconciliation (`reconcile::transfers`) says "everything
//! matches" (`is_clean()`, the CLI's exit 0) while the service's own records show money moving
//! in a way the journal does not account for, or flags a break that is no money at all.
//!
//! The sandbox pays the batch; a small rewriting proxy in front of it then alters only the
//! activity log or the statement, the way a real service's records can disagree with the
//! journal (a refund never booked, a charge nobody sent, a transfer recorded in another
//! currency, a Request-id paid twice, a balance computed in Double). Every other call goes to
//! the sandbox untouched.

use crate::support::proxy::*;
use crate::support::*;

// ---------------------------------------------------------------------------------------------

/// A transfer is cancelled: the activity log lists SENT then CANCELLED, and the money (amount
/// plus fee, CANCELED_FULL) should come back to the account as a line of the statement. The
/// statement here never books that refund (the balance rule still holds line by line: the
/// book simply never got the money back). Reconciliation lists the cancellation, counts its
/// amount as "cancelled (and how much came back)", and says everything matches: finance signs
/// off a day on which 10 USD + fee never returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_whose_refund_the_statement_never_booked_is_not_clean() {
    let day = paid_batch("refund-missing", 3, "10").await;
    let far = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let mut rows = Vec::new();
    day.batch
        .cancel_uncollected(&day.j, &day.c, far, "not collected", 1, &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("cancel");
    let cancelled: Vec<i64> = rows
        .iter()
        .filter(|r| r.cancelled_now)
        .filter_map(|r| r.request_id.map(|i| i.get()))
        .collect();
    assert_eq!(cancelled.len(), 3, "setup: all three cancelled: {rows:#?}");
    clean_baseline(&day).await;
    let victim = cancelled[0];

    // The statement never books the refund of `victim` (a line raising the balance under its
    // Request-id); every later balance is what the book then says.
    day.rw.set(move |path, v| {
        if !path.ends_with("/woo/statement") {
            return;
        }
        let usd = statement_of(v, "USD");
        let lines = usd["transactions"].as_array_mut().expect("lines");
        let before = lines.len();
        lines.retain(|l| !(l["requestId"] == victim && dec(&l["debit"]) > Decimal::ZERO));
        assert_eq!(lines.len() + 1, before, "the refund line was there");
        rebalance(usd);
    });
    let report = reconcile_now(&day).await;
    assert!(
        report
            .cancellations
            .iter()
            .any(|c| c.request_id.map(|i| i.get()) == Some(victim)),
        "setup: the activity log still lists the cancellation"
    );
    assert!(
        !report.is_clean() && report.flagged().iter().any(|i| i.get() == victim),
        "LIE: reconciliation claims everything matches (is_clean = {}, exit 0) and counts \
         Request-id {victim} as cancelled with cancelled_amount {} \"come back\"; TRUE: the \
         statement holds no refund line for it: the money never came back to the account. \
         findings: {:#?}",
        report.is_clean(),
        report.currencies["USD"].cancelled_amount,
        report.findings
    );
}

/// The statement charges the account for a TRANSFER under a Request-id that neither the
/// journal nor the activity log knows (a charge nobody sent: money left the account). The
/// balance rule holds. Reconciliation only ever starts from the activity log's SENT events, so
/// it never looks at this charge and says everything matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_charge_nobody_sent_is_not_clean() {
    let day = paid_batch("ghost-charge", 2, "10").await;
    clean_baseline(&day).await;
    const GHOST: i64 = 7_000_000_000_123;
    day.rw.set(|path, v| {
        if !path.ends_with("/woo/statement") {
            return;
        }
        let usd = statement_of(v, "USD");
        let lines = usd["transactions"].as_array_mut().expect("lines");
        let mut ghost = lines.last().expect("a line").clone();
        ghost["id"] = Value::from("TR-GHOST-1");
        ghost["type"] = Value::from("TRANSFER");
        ghost["debit"] = Value::from(0.0);
        ghost["credit"] = Value::from(505.0);
        ghost["requestId"] = Value::from(GHOST);
        lines.push(ghost);
        rebalance(usd);
    });
    let report = reconcile_now(&day).await;
    let usd = &report.currencies["USD"];
    assert!(
        !report.is_clean(),
        "LIE: reconciliation claims everything matches (exit 0; closing balance {:?}); TRUE: the \
         statement charged 505 USD as a TRANSFER under Request-id {GHOST}, which neither the \
         journal nor the activity log holds: money left the account unexplained",
        usd.closing_balance
    );
}

/// The journal sent 10 USD (currencyId 2). The activity log records that Request-id's send as
/// 10 LBP. Reconciliation compares the number (10 = 10) but never the currency, files the
/// transfer under LBP as matched, and says everything matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_the_service_recorded_in_another_currency_is_not_clean() {
    let day = paid_batch_in_order("currency", 2, "10").await;
    let rows = day.rows.clone();
    clean_baseline(&day).await;
    let victim = request_ids(&rows)[0];
    day.rw.set(move |path, v| {
        if !path.ends_with("/woo/activity") {
            return;
        }
        for e in list(v).iter_mut() {
            if e["requestId"] == victim {
                e["currency"] = Value::from("LBP");
            }
        }
    });
    let report = reconcile_now(&day).await;
    assert!(
        report.flagged().iter().any(|i| i.get() == victim),
        "LIE: reconciliation claims Request-id {victim} matches (is_clean = {}, LBP totals {:?}); \
         TRUE: the journal sent 10 USD, the activity log recorded 10 LBP. findings: {:#?}",
        report.is_clean(),
        report.currencies.get("LBP"),
        report.findings
    );
}

/// The activity log lists two SENT transfers (two transfer ids) under one Request-id: the
/// service paid the row twice, the very thing the journal's Request-ids exist to prevent. The
/// statement (so far) charged once. Reconciliation counts two transfers sent, two matched with
/// the journal (which holds one send), and says everything matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_the_activity_log_shows_paid_twice_is_not_clean() {
    let day = paid_batch("paid-twice", 2, "10").await;
    clean_baseline(&day).await;
    day.rw.set(|path, v| {
        if !path.ends_with("/woo/activity") {
            return;
        }
        let l = list(v);
        let mut twice = l
            .iter()
            .find(|e| e["status"] == "SENT")
            .expect("a SENT event")
            .clone();
        twice["id"] = Value::from(format!("{}-2", twice["id"].as_str().unwrap_or("T")));
        l.push(twice);
    });
    let report = reconcile_now(&day).await;
    let usd = &report.currencies["USD"];
    assert!(
        !report.is_clean(),
        "LIE: reconciliation claims everything matches (sent {}, matched {} against {} journal \
         sends); TRUE: the activity log lists one Request-id sent twice under two transfer ids: \
         a double payment",
        usd.sent,
        usd.matched,
        report.journal_sends
    );
}

/// A transfer both RECEIVED (the receiver collected the cash) and CANCELLED (the account was
/// refunded) in the activity log, and the statement books the refund: the money went out
/// twice. Reconciliation counts it once as collected and once as cancelled, lists the
/// cancellation, and says everything matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_collected_and_refunded_is_not_clean() {
    let day = paid_batch("collected-and-refunded", 2, "10").await;
    let far = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let mut rows = Vec::new();
    day.batch
        .cancel_uncollected(&day.j, &day.c, far, "not collected", 1, &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("cancel");
    let victim = rows
        .iter()
        .find(|r| r.cancelled_now)
        .and_then(|r| r.request_id)
        .expect("a cancelled row")
        .get();
    clean_baseline(&day).await;
    day.rw.set(move |path, v| {
        if !path.ends_with("/woo/activity") {
            return;
        }
        let l = list(v);
        let i = l
            .iter()
            .position(|e| e["requestId"] == victim && e["status"] == "CANCELLED")
            .expect("the CANCELLED event");
        let mut received = l[i].clone();
        received["status"] = Value::from("RECEIVED");
        l.insert(i, received);
    });
    let report = reconcile_now(&day).await;
    let usd = &report.currencies["USD"];
    assert!(
        !report.is_clean(),
        "LIE: reconciliation claims everything matches (sent {}, collected {}, cancelled {}); \
         TRUE: Request-id {victim} was collected by the receiver AND refunded to the account: \
         paid out twice",
        usd.sent,
        usd.collected,
        usd.cancelled
    );
}

/// False alarm. The service's amounts are Doubles (spec: balance, debit, credit: Double). A
/// service that keeps its book in Double states 10000.1 - 45.3 as 9954.800000000001. That is
/// no money (a 1e-12 USD artefact of the binary format, below the currency's cent); the
/// reconciliation's balance rule compares the text exactly and reports a broken book (exit 6).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_rounding_artefact_is_not_a_broken_balance() {
    let day = paid_batch("double", 1, "40.3").await;
    clean_baseline(&day).await;
    day.rw.set(|path, v| {
        if !path.ends_with("/woo/statement") {
            return;
        }
        let usd = statement_of(v, "USD");
        let lines = usd["transactions"].as_array_mut().expect("lines");
        // The book as a Double service states it: an opening 10000.1, then the transfer.
        let t = lines.last_mut().expect("the transfer's line");
        let credit = dec(&t["credit"]);
        assert_eq!(credit, Decimal::new(453, 1), "setup: 40.3 + 5 fee");
        let opening = lines.first_mut().expect("the top-up");
        opening["debit"] = Value::from(10000.1);
        opening["balance"] = Value::from(10000.1);
        let t = lines.last_mut().expect("the transfer's line");
        t["balance"] = Value::from(10000.1_f64 - 45.3_f64);
    });
    let report = reconcile_now(&day).await;
    let breaks: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::BalanceRule)
        .collect();
    assert!(
        breaks.is_empty(),
        "FALSE ALARM: reconciliation claims the statement breaks its balance rule ({:#?}); \
         TRUE: 10000.1 - 45.3 = 9954.8, stated by a Double service as {}: no money differs",
        breaks,
        10000.1_f64 - 45.3_f64
    );
}

/// The activity log of the day omits one transfer's SENT event (a log that lost or paged away
/// a line). The journal recorded and accepted the send inside the range (its `created` and its
/// `updated` are both in it), and the statement of the same range charges it, dated in the
/// range. Reconciliation reads the status, finds the transfer, and files it under
/// `sent_after_range` ("sent after the range ... in the activity log of the day they went out",
/// not a difference): clean. It was not sent after the range, and no day's activity log will
/// ever list it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_the_activity_log_omits_is_not_called_sent_after_the_range() {
    let day = paid_batch_in_order("omitted", 2, "10").await;
    let rows = day.rows.clone();
    clean_baseline(&day).await;
    let victim = request_ids(&rows)[0];
    let entry = day
        .j
        .find(&victim.to_string())
        .await
        .expect("find")
        .pop()
        .expect("entry");
    day.rw.set(move |path, v| {
        if path.ends_with("/woo/activity") {
            list(v).retain(|e| e["requestId"] != victim);
        }
    });
    let to = OffsetDateTime::now_utc() + time::Duration::hours(1);
    assert!(
        entry.created >= day.from && entry.updated <= to,
        "setup: sent in the range"
    );
    let report = reconcile::transfers(&day.j, &day.c, &range(day.from, to), day.from, to)
        .await
        .expect("reconcile");
    assert!(
        report.flagged().iter().any(|i| i.get() == victim),
        "LIE: reconciliation is clean = {} and lists Request-id {victim} as sent after the range \
         (sent_after_range = {:?}); TRUE: the journal recorded it at {} and recorded its \
         acceptance at {}, both inside the range, and the range's statement charged it: it was \
         sent in the range, and the range's activity log omits it",
        report.is_clean(),
        report.sent_after_range,
        entry.created,
        entry.updated
    );
}

/// The activity log lists a SENT transfer of 500 USD without a requestId (made by something
/// else: a portal, an agent), and the statement charges its 505 USD (no requestId either, the
/// balance rule holds). Reconciliation skips a SENT event without requestId before any check:
/// not `not-in-journal`, nothing; it says everything matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_without_request_id_is_not_silently_matched() {
    let day = paid_batch("no-request-id", 1, "10").await;
    clean_baseline(&day).await;
    day.rw.set(|path, v| {
        if path.ends_with("/woo/activity") {
            let l = list(v);
            let mut e = l.last().expect("an event").clone();
            e["id"] = Value::from("TR-PORTAL-1");
            e["status"] = Value::from("SENT");
            e["amount"] = Value::from(500.0);
            e["fee"] = Value::from(5.0);
            e["total"] = Value::from(505.0);
            e["requestId"] = Value::Null;
            l.push(e);
        } else {
            let usd = statement_of(v, "USD");
            let lines = usd["transactions"].as_array_mut().expect("lines");
            let mut line = lines.last().expect("a line").clone();
            line["id"] = Value::from("TR-PORTAL-1");
            line["type"] = Value::from("TRANSFER");
            line["debit"] = Value::from(0.0);
            line["credit"] = Value::from(505.0);
            line["requestId"] = Value::Null;
            lines.push(line);
            rebalance(usd);
        }
    });
    let report = reconcile_now(&day).await;
    let usd = &report.currencies["USD"];
    assert!(
        !report.is_clean(),
        "LIE: reconciliation claims everything matches (USD sent {}, sent amount {}, matched {}, \
         journal sends {}); TRUE: the service sent 500 USD (transfer TR-PORTAL-1) that the \
         journal does not hold, and the statement charged 505 USD for it",
        usd.sent,
        usd.sent_amount,
        usd.matched,
        report.journal_sends
    );
}

/// Totals: "cancelled (and how much came back)". Three 10 USD transfers (fee 5 each) are
/// cancelled; the service's statement books three refunds of 15 USD (CANCELED_FULL: amount and
/// fee). Nothing is rewritten here. The report's cancelled amount said 30 came back; the
/// statement says 45: the report now gives both, the cancelled amounts and what was refunded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cancelled_amount_is_what_came_back() {
    let day = paid_batch("came-back", 3, "10").await;
    let far = OffsetDateTime::now_utc() + time::Duration::hours(1);
    day.batch
        .cancel_uncollected(&day.j, &day.c, far, "not collected", 1, &mut |_| Ok(()))
        .await
        .expect("cancel");
    let report = reconcile_now(&day).await;
    assert!(report.is_clean(), "{:#?}", report.findings);
    let statements = day
        .c
        .statement(&range(
            day.from,
            OffsetDateTime::now_utc() + time::Duration::hours(1),
        ))
        .await
        .expect("statement");
    let refunded: Decimal = statements
        .iter()
        .flat_map(|s| s.transactions.iter())
        .filter(|l| l.request_id.is_some() && l.debit.value() > Decimal::ZERO)
        .map(|l| l.debit.value())
        .sum();
    let usd = &report.currencies["USD"];
    assert_eq!(usd.cancelled, 3);
    // The cancelled amount is the receivers' amounts; what came back is `refunded`.
    assert_eq!(usd.cancelled_amount, Decimal::from(30));
    assert_eq!(
        usd.refunded, refunded,
        "LIE (totals): the report says {} USD came back for {} cancellations; TRUE: the \
         statement booked {refunded} USD of refunds for them (amount plus fee)",
        usd.refunded, usd.cancelled
    );
    assert!(
        report
            .cancellations
            .iter()
            .all(|c| c.refunded == Decimal::from(15)),
        "{:#?}",
        report.cancellations
    );
}

/// The journal and the activity log say 10 USD (total 15 USD). The statement books the charge
/// of that Request-id in the LBP account (15 LBP off the LBP balance) and nothing in USD (the
/// USD book's balance rule holds: the line is simply not there). The statement's charges are
/// looked up by Request-id across currencies, so the charge "matches" and reconciliation says
/// everything matches, with a USD closing balance 15 USD higher than the day really left it
/// and an LBP balance 15 lower.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usd_transfer_charged_in_the_lbp_statement_is_not_clean() {
    let day = paid_batch_in_order("statement-currency", 2, "10").await;
    let rows = day.rows.clone();
    clean_baseline(&day).await;
    let victim = request_ids(&rows)[0];
    day.rw.set(move |path, v| {
        if !path.ends_with("/woo/statement") {
            return;
        }
        let usd = statement_of(v, "USD");
        let lines = usd["transactions"].as_array_mut().expect("lines");
        let i = lines
            .iter()
            .position(|l| l["requestId"] == victim)
            .expect("the charge");
        let mut moved = lines.remove(i);
        rebalance(usd);
        let lbp = statement_of(v, "LBP");
        let lines = lbp["transactions"].as_array_mut().expect("lines");
        moved["currency"] = Value::from("LBP");
        if lines.is_empty() {
            moved["balance"] = num(-dec(&moved["credit"]));
        }
        lines.push(moved);
        rebalance(lbp);
    });
    let report = reconcile_now(&day).await;
    assert!(
        report.flagged().iter().any(|i| i.get() == victim),
        "LIE: reconciliation claims Request-id {victim} matches (is_clean = {}; USD closing {:?}, \
         LBP closing {:?}); TRUE: the journal and the activity log sent it in USD, the statement \
         charged it to the LBP account and charged nothing in USD. findings: {:#?}",
        report.is_clean(),
        report.currencies.get("USD").and_then(|t| t.closing_balance),
        report.currencies.get("LBP").and_then(|t| t.closing_balance),
        report.findings
    );
}
