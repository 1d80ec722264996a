#![allow(dead_code, missing_docs)]
//! `cancel_uncollected` when the cancel's answer is not an
//! acceptance, although the service applied it: answered Pending (`code` 500, which the
//! spec says is not a failure) or lost in a timeout. The status read right after says
//! CANCELED_FULL. The row must not say that this run's cancel "was not applied", nor that this
//! run did not cancel it: an operator reading "not applied" cancels again by hand, or pays the
//! receiver another way; finance reading `cancelled_now = false` looks for who else cancelled.

use std::collections::HashMap;

use time::OffsetDateTime;
use whish_payouts::{Collection, FollowUpRow};
use whish_sandbox::{Endpoint, Fault};

use crate::support::*;

async fn cancel_all(batch: &Batch, j: &Journal, c: &TransferClient) -> Vec<FollowUpRow> {
    let later = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let mut rows: Vec<FollowUpRow> = Vec::new();
    batch
        .cancel_uncollected(j, c, later, "not collected in time", 1, &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("cancel run");
    rows.sort_by_key(|r| r.line);
    rows
}

async fn scenario(name: &str, fault: Fault, cancel: whish_payouts::RowOutcome) {
    let d = dir(name);
    let sb = sandbox(1_000_000).await;
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(&file, &csv_rows(1, "10"));
    let batch = Batch::new(name.to_owned(), &file, defaults()).expect("batch");
    let j = journal(&d).await;
    let (s, _) = run(&batch, &j, &c, &RunOptions::new().concurrency(1)).await;
    assert!(s.expect("run").all_accepted());

    sb.inject(Endpoint::TransferCancel, fault, 1);
    let rows = cancel_all(&batch, &j, &c).await;
    let row = &rows[0];
    let truth: HashMap<i64, String> = sb
        .transfers()
        .into_iter()
        .map(|t| (t.request_id, t.status))
        .collect();
    let id = row.request_id.expect("request id").get();
    assert_eq!(
        truth.get(&id).map(String::as_str),
        Some("CANCELED_FULL"),
        "setup: the service applied this run's cancel"
    );
    let cancels: usize = sb
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/cancel/send/money"))
        .count();
    assert_eq!(cancels, 1, "setup: one cancel went out, from this run");
    let says_not_applied = row
        .message
        .as_deref()
        .is_some_and(|m| m.contains("not applied"));
    assert!(
        row.collection == Collection::Cancelled && row.cancelled_now && !says_not_applied,
        "LIE ({name}): the follow-up row claims collection = {}, cancelled_now = {}, message = \
         {:?}; TRUE: this run's one cancel was applied (the service holds the transfer \
         CANCELED_FULL, and no other cancel was ever sent): cancelled_now must be true and the \
         message must not say the cancel was not applied",
        row.collection,
        row.cancelled_now,
        row.message
    );
    // Its journal entry stays open until a cancel run (or recovery) sends it again: the
    // run says so, and the command exits 3, not 0.
    assert_eq!(row.cancel, Some(cancel), "{name}: the cancel's own outcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_answered_pending_but_applied_is_reported_as_this_runs_cancel() {
    scenario(
        "cancel-pending",
        Fault::Pending,
        whish_payouts::RowOutcome::Pending,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_whose_answer_was_lost_but_applied_is_reported_as_this_runs_cancel() {
    scenario(
        "cancel-drop-reply",
        Fault::DropReply,
        whish_payouts::RowOutcome::Unknown,
    )
    .await;
}
