//! Reconciliation over the activity and statement fixtures.

use serde::Deserialize;
use whish_core::Envelope;
use whish_money_transfer::reconcile::{check_balance_rule, latest_states, match_by_request_id};
use whish_money_transfer::{ActivityEntry, CurrencyStatement, TransferStatus};
use whish_testkit::fixture;

#[derive(Deserialize)]
struct List<T> {
    list: Vec<T>,
}

fn activity() -> Vec<ActivityEntry> {
    let e: Envelope<List<ActivityEntry>> =
        Envelope::from_slice(fixture("money-transfer/activity.success.json").as_bytes())
            .expect("decodes");
    e.data.expect("data").list
}

fn statement() -> Vec<CurrencyStatement> {
    let e: Envelope<List<CurrencyStatement>> =
        Envelope::from_slice(fixture("money-transfer/statement.success.json").as_bytes())
            .expect("decodes");
    e.data.expect("data").list
}

#[test]
fn the_event_log_folds_into_the_latest_state() {
    let states = latest_states(&activity());
    assert_eq!(states.len(), 3);
    let cancelled = &states["TR-20260821-000123"];
    assert_eq!(
        cancelled.status,
        TransferStatus::CanceledFull,
        "CANCELLED is CANCELED_FULL"
    );
    assert_eq!(cancelled.events, 2, "a cancel shows twice");
    assert_eq!(
        states["TR-20260821-000127"].status,
        TransferStatus::Received
    );
    assert_eq!(states["TR-20260821-000126"].status, TransferStatus::Sent);
}

#[test]
fn the_statement_keeps_the_balance_rule() {
    for s in statement() {
        check_balance_rule(&s).expect("the fixture keeps the rule");
    }
}

#[test]
fn the_first_broken_line_is_reported() {
    let mut s = statement().remove(0);
    s.transactions[3].balance = "4986.57".parse().expect("amount");
    let b = check_balance_rule(&s).expect_err("broken");
    assert_eq!(b.index, 3);
    assert_eq!(
        b.expected.map(|e| e.to_string()).as_deref(),
        Some("4986.56")
    );
    assert_eq!(b.actual.to_string(), "4986.57");
    assert!(b.to_string().contains("line 3"));
}

/// The service's amounts are doubles: a book kept in doubles states 4986.56 as
/// 4986.560000000001. Less than half a cent is not money; a cent is.
#[test]
fn a_doubles_artefact_is_not_a_break_and_a_cent_is() {
    let mut s = statement().remove(0);
    s.transactions[3].balance = "4986.560000000001".parse().expect("amount");
    check_balance_rule(&s).expect("a doubles artefact is not a break");
    s.transactions[3].balance = "4986.564999".parse().expect("amount");
    check_balance_rule(&s).expect("under half a cent");
    s.transactions[3].balance = "4986.555".parse().expect("amount");
    assert_eq!(check_balance_rule(&s).expect_err("half a cent").index, 3);
    s.transactions[3].balance = "4986.55".parse().expect("amount");
    assert_eq!(check_balance_rule(&s).expect_err("a cent").index, 3);
}

/// Differences under half a cent do not add up unseen: a book 0.004 short on every line is a
/// cent short by the third.
#[test]
fn differences_under_half_a_cent_do_not_add_up_unseen() {
    let mut s = statement().remove(0);
    let n = s.transactions.len();
    assert!(n >= 4, "the fixture has {n} lines");
    let short = whish_core::Decimal::new(4, 3);
    for (i, l) in s.transactions.iter_mut().enumerate().skip(1) {
        l.balance =
            whish_core::Amount::new(l.balance.value() - short * whish_core::Decimal::from(i));
    }
    let b = check_balance_rule(&s).expect_err("drift");
    assert_eq!(
        b.index, 2,
        "0.004 short passes, 0.008 short is a break: {b}"
    );
}

/// The spec gives no order for a statement's lines: newest first is the same book.
#[test]
fn a_statement_listed_newest_first_is_the_same_book() {
    let mut s = statement().remove(0);
    s.transactions.reverse();
    check_balance_rule(&s).expect("the same book, listed newest first");
    let ordered = whish_money_transfer::reconcile::in_time_order(&s);
    assert!(ordered.windows(2).all(|w| w[0].date <= w[1].date));
}

#[test]
fn the_current_balance_is_the_balance_now_not_at_the_end_of_the_range() {
    // The spec: currentBalance is the balance now. A range that ends before now, with later
    // transactions, ends on another balance: that is not a break.
    let mut s = statement().remove(0);
    s.current_balance.as_mut().expect("current").balance = "1".parse().expect("amount");
    check_balance_rule(&s).expect("not a break");
}

#[test]
fn a_balance_too_large_to_add_is_a_break_not_a_panic() {
    let mut s = statement().remove(0);
    let max = whish_core::Amount::new(whish_core::Decimal::MAX);
    s.transactions[0].balance = max;
    s.transactions[1].debit = max;
    let b = check_balance_rule(&s).expect_err("overflow");
    assert_eq!((b.index, b.expected), (1, None));
    assert!(b.to_string().contains("too large"), "{b}");
}

#[test]
fn activity_and_statement_match_by_request_id() {
    let m = match_by_request_id(&activity(), &statement());
    let id = whish_core::RequestId::new(1_755_770_400_000_001).expect("id");
    assert_eq!(m[&id].activity.len(), 2);
    assert_eq!(m[&id].statement.len(), 2);
    assert!(m.values().all(|x| !x.is_one_sided()));
    assert_eq!(m.len(), 3, "TOPUP lines have no requestId and are left out");
}

#[test]
fn a_null_statement_line_id_reads_as_empty() {
    // "may be empty for account funding": null is tolerated too.
    let text = fixture("money-transfer/statement.success.json").replacen(
        r#""id": """#,
        r#""id": null"#,
        1,
    );
    assert_ne!(
        text,
        fixture("money-transfer/statement.success.json"),
        "the fixture has an empty id"
    );
    let e: Envelope<List<CurrencyStatement>> =
        Envelope::from_slice(text.as_bytes()).expect("decodes");
    let list = e.data.expect("data").list;
    assert!(list[0].transactions.iter().any(|l| l.id.is_empty()));
}
