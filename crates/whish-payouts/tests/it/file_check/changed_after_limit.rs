#![allow(dead_code, missing_docs)]
//! "a row changed since an earlier run recorded it is refused: a changed
//! row is a new payment and needs a new reference" (docs/payouts.md, "1. Check"). A row the
//! service refused for an account-level limit (retryable: nothing created) is recorded in the
//! journal under attempt 0. The file is then edited: the same reference now pays another
//! receiver ten times the amount. `resolve` skips the retryable attempt-0 entry and looks at
//! attempt 1 only, which is empty, so neither the check (`check_against_journal`) nor the
//! run (`plan_row`) compares the row with what the journal recorded: the changed row is sent.

use rust_decimal::Decimal as Dec;
use whish_payouts::RowOutcome;
use whish_sandbox::{Endpoint, Fault};

use crate::support::*;

#[tokio::test]
async fn a_row_changed_after_a_limit_refusal_is_sent_not_refused() {
    let d = dir("limit-changed");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.csv");
    write(
        &file,
        &format!(
            "{HEADER}\nBEN-00017,Rami,Haddad,+96170123456,07-03-1990,150,USD,Family Support,Savings\n"
        ),
    );
    let batch = Batch::new("limit-changed", &file, defaults()).expect("batch");
    sb.inject(
        Endpoint::TransferSend,
        Fault::Code("transfer.exceeds_account_daily_limit"),
        1,
    );
    let (s1, r1) = run(&batch, &j, &c, &RunOptions::new()).await;
    let s1 = s1.expect("run 1");
    assert_eq!(s1.count(RowOutcome::Refused), 1, "{r1:#?}");
    assert_eq!(sb.transfers().len(), 0);

    // Edited: the same reference, another receiver, ten times the amount.
    write(
        &file,
        &format!(
            "{HEADER}\nBEN-00017,Maya,Khoury,+96171999999,21-11-1985,1500,USD,Family Support,Savings\n"
        ),
    );
    let check = batch.check(&j, &c).await.expect("check");
    let (s2, _) = run(&batch, &j, &c, &RunOptions::new()).await;
    let paid: Vec<Dec> = sb.transfers().iter().map(|t| t.total).collect();
    assert!(
        !check.errors.is_empty() && paid.is_empty(),
        "BEN-00017 was recorded by run 1 (150 USD to Rami Haddad, refused for the account's daily \
         limit); the file now says 1500 USD to Maya Khoury under the same reference. Promised: the \
         check refuses a row changed since an earlier run recorded it, and nothing is sent. True: \
         check errors {:?}, run {:?}, paid {paid:?}",
        check.errors,
        s2.map(|s| s.outcomes)
    );
}
