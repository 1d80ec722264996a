#![allow(dead_code, missing_docs)]
//! A row refused for an account limit (retryable) is sent by the next run under its next
//! Request-id (attempt 1). The refused entry of attempt 0 is older than the paid entry of attempt
//! 1; a prune on a retention schedule that falls between the two keeps such refusals
//! (`whish_journal::RETRY_UNDER_NEW_KEY`), so the row is never paid again under attempt 0's
//! Request-id.

use whish_payouts::{Collection, FollowUpRow, RowOutcome};
use whish_sandbox::{Endpoint, Fault};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_between_a_retryable_refusal_and_its_retry_never_pays_the_row_twice() {
    let d = dir("prune-retry");
    let sb = sandbox(1_000_000).await;
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(&file, &csv_rows(1, "10"));
    let batch = Batch::new("prune-retry", &file, defaults()).expect("batch");
    let j = journal(&d).await;

    // Run 1: the receiver's daily limit refuses the row (retryable: nothing was created).
    sb.inject(
        Endpoint::TransferSend,
        Fault::Code("transfer.exceeds_customer_daily_limit"),
        1,
    );
    let (s1, rows1) = run(&batch, &j, &c, &RunOptions::new().concurrency(1)).await;
    eprintln!("run 1: {:?}", s1.expect("run 1").outcomes);
    assert_eq!(rows1[0].outcome, RowOutcome::Refused);
    assert!(sb.transfers().is_empty());

    tokio::time::sleep(Duration::from_millis(3_000)).await;

    // Run 2 (the next day): attempt 1 is paid.
    let (s2, rows2) = run(&batch, &j, &c, &RunOptions::new().concurrency(1)).await;
    eprintln!("run 2: {:?}", s2.expect("run 2").outcomes);
    assert_eq!(rows2[0].outcome, RowOutcome::Accepted);
    let paid_id = rows2[0].request_id.expect("id").get();
    assert_eq!(sb.transfers().len(), 1);

    // Retention: entries last changed more than 1.5 s ago go (attempt 0's refusal), the paid
    // entry of attempt 1 (just now) stays.
    let removed = j.prune(Duration::from_millis(1_500)).await.expect("prune");
    eprintln!("pruned {removed}");
    let kept = j
        .entry(
            whish_journal::Service::MoneyTransfer,
            whish_journal::Operation::Send,
            &paid_id.to_string(),
        )
        .await
        .expect("read");
    assert!(
        kept.is_some_and(|e| e.state == whish_journal::State::Accepted),
        "the paid entry is still in the journal"
    );

    // The follow-up: the row is paid (waiting for collection).
    let mut follow: Vec<FollowUpRow> = Vec::new();
    batch
        .follow_up(&j, &c, 4, &mut |r| {
            follow.push(r.clone());
            Ok(())
        })
        .await
        .expect("follow-up");
    eprintln!(
        "follow-up: {:?} {:?} {:?}",
        follow[0].collection, follow[0].request_id, follow[0].message
    );

    // Run 3: a resumable batch run again must pay nothing more.
    let (s3, rows3) = run(&batch, &j, &c, &RunOptions::new().concurrency(1)).await;
    eprintln!(
        "run 3: {:?} {:?} {:?}",
        s3.expect("run 3").outcomes,
        rows3[0].request_id,
        rows3[0].earlier_run
    );
    let transfers = sb.transfers();
    j.close().await;
    let mut lies = Vec::new();
    if transfers.len() != 1 {
        lies.push(format!(
            "one row, paid {} times (Request-ids {:?}): run 3 reported it {:?} under {:?}",
            transfers.len(),
            transfers.iter().map(|t| t.request_id).collect::<Vec<_>>(),
            rows3[0].outcome,
            rows3[0].request_id
        ));
    }
    if follow[0].collection != Collection::Waiting {
        lies.push(format!(
            "the row is paid under Request-id {paid_id} (its entry is in the journal), the follow-up says {:?}: {:?}",
            follow[0].collection, follow[0].message
        ));
    }
    assert!(lies.is_empty(), "{}", lies.join("\n"));
}
