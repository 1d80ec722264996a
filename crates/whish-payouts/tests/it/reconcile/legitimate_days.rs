#![allow(dead_code, missing_docs)]
//! Legitimate days against the plain sandbox (no proxy, no rewriting) that end-of-day
//! reconciliation reports clean: the flows tried for false alarms.

use time::OffsetDateTime;
use time::macros::format_description;
use whish_money_transfer::ReportRange;
use whish_payouts::reconcile::{self, TransferReport};

use crate::support::*;

fn range(from: OffsetDateTime, to: OffsetDateTime) -> ReportRange {
    let f = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    ReportRange::starting(&from.format(&f).expect("format"))
        .expect("from")
        .until(&to.format(&f).expect("format"))
        .expect("to")
}

async fn reconcile_between(
    j: &Journal,
    c: &TransferClient,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> TransferReport {
    reconcile::transfers(j, c, &range(from, to), from, to)
        .await
        .expect("reconcile")
}

const MIXED_HEADER: &str = "reference,payment_mode,receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds,deduct_fees";

/// USD and LBP at once; cash and mobile wallet (credited at once); fee on top and deducted;
/// TOPUP lines (a balance raised, and LBP funded in the range); half the cash collected, the
/// rest cancelled (refund = total); then a range starting mid-day (after the sends: cancels and
/// collections of transfers sent before it, opening balance mid-book); a range with no activity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_legitimate_day_is_clean() {
    let d = dir("mixed");
    let plenty = Decimal::from(10_000_000_000u64);
    let sb = Sandbox::builder()
        .transfer_balance("USD", Decimal::from(1_000_000u64))
        .limits(
            "USD",
            Decimal::from(10_000_000u64),
            Decimal::from(10_000_000u64),
        )
        .limits("LBP", plenty, plenty)
        .start()
        .await
        .expect("sandbox");
    let from = OffsetDateTime::now_utc() - time::Duration::hours(1);
    sb.set_transfer_balance("LBP", Decimal::from(6_000_000_000u64))
        .expect("lbp funding");
    let c = client(&sb);
    let wallet = sb.wallet_phones().credited.clone();
    let mut csv = format!("{MIXED_HEADER}\n");
    for i in 0..4 {
        csv.push_str(&format!("U{i},CASH_COLLECTION,Rami,Haddad,+96170120{i:03},07-03-1990,10.10,USD,Family Support,Savings,false\n"));
        csv.push_str(&format!("D{i},CASH_COLLECTION,Rami,Haddad,+96170121{i:03},07-03-1990,50.35,USD,Family Support,Savings,true\n"));
        csv.push_str(&format!("L{i},CASH_COLLECTION,Rami,Haddad,+96170122{i:03},07-03-1990,1500000,LBP,Family Support,Savings,false\n"));
        csv.push_str(&format!("M{i},CASH_COLLECTION,Rami,Haddad,+96170123{i:03},07-03-1990,95000000,LBP,Family Support,Savings,true\n"));
    }
    csv.push_str(&format!(
        "W1,MOBILE_WALLET,Rami,Haddad,{wallet},,20.5,USD,Family Support,Savings,false\n"
    ));
    csv.push_str(&format!(
        "W2,MOBILE_WALLET,Rami,Haddad,{wallet},,30,USD,Family Support,Savings,true\n"
    ));
    csv.push_str(&format!(
        "W3,MOBILE_WALLET,Rami,Haddad,{wallet},,2000000,LBP,Family Support,Savings,true\n"
    ));
    let file = d.join("aid.csv");
    write(&file, &csv);
    let batch = Batch::new("mixed", &file, defaults()).expect("batch");
    let j = journal(&d).await;
    let (s, rows) = run(&batch, &j, &c, &RunOptions::new().concurrency(2)).await;
    assert!(s.expect("run").all_accepted(), "{rows:#?}");
    let whole = reconcile_between(
        &j,
        &c,
        from,
        OffsetDateTime::now_utc() + time::Duration::hours(1),
    )
    .await;
    assert!(whole.is_clean(), "after the sends: {:#?}", whole.findings);

    std::thread::sleep(Duration::from_millis(1100));
    let mid = OffsetDateTime::now_utc();
    std::thread::sleep(Duration::from_millis(1100));
    sb.collect_share(0.5).await;
    let far = OffsetDateTime::now_utc() + time::Duration::hours(1);
    batch
        .cancel_uncollected(&j, &c, far, "not collected", 1, &mut |_| Ok(()))
        .await
        .expect("cancel");
    sb.set_transfer_balance("USD", Decimal::from(2_000_000u64))
        .expect("top-up");
    let to = OffsetDateTime::now_utc() + time::Duration::hours(1);

    let whole = reconcile_between(&j, &c, from, to).await;
    assert!(whole.is_clean(), "whole day: {:#?}", whole.findings);
    assert!(!whole.cancellations.is_empty() && whole.currencies["USD"].collected > 0);
    assert!(whole.currencies.contains_key("LBP"));

    let later = reconcile_between(&j, &c, mid, to).await;
    assert!(later.is_clean(), "mid-day start: {:#?}", later.findings);
    assert!(!later.cancellations.is_empty());

    let empty = reconcile_between(
        &j,
        &c,
        to + time::Duration::seconds(1),
        to + time::Duration::hours(1),
    )
    .await;
    assert!(empty.is_clean(), "no activity: {:#?}", empty.findings);
}
