#![allow(dead_code, missing_docs)]
//! A prune on a retention schedule deletes the paid entry at the end of a row's chain of attempts
//! (and the paid entry of a row paid at its first attempt), so the journal may no longer know that
//! a row was paid. The follow-up then reads the status of a row the journal holds nothing for, and
//! a batch row answered `transfer.already.done` is reported unknown, saying the service holds it:
//! a paid row is never reported unpaid or refused.

use whish_payouts::{Collection, FollowUpRow, RowOutcome};
use whish_sandbox::{Endpoint, Fault};

use crate::support::*;

async fn follow(batch: &Batch, j: &Journal, c: &TransferClient) -> Vec<FollowUpRow> {
    let mut rows: Vec<FollowUpRow> = Vec::new();
    batch
        .follow_up(j, c, 4, &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("follow-up");
    rows.sort_by_key(|r| r.line);
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_paid_before_a_retention_prune_are_never_reported_unpaid_or_refused() {
    let d = dir("prune-paid");
    let sb = sandbox(1_000_000).await;
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(&file, &csv_rows(2, "10"));
    let batch = Batch::new("prune-paid", &file, defaults()).expect("batch");
    let j = journal(&d).await;

    // Run 1: the first row meets the receiver's daily limit (retryable), the second is paid.
    sb.inject(
        Endpoint::TransferSend,
        Fault::Code("transfer.exceeds_customer_daily_limit"),
        1,
    );
    let (s1, rows1) = run(&batch, &j, &c, &RunOptions::new().concurrency(1)).await;
    eprintln!("run 1: {:?}", s1.expect("run 1").outcomes);
    let outcomes1: Vec<_> = rows1.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes1, [RowOutcome::Refused, RowOutcome::Accepted]);

    // Run 2: the first row is paid under its second Request-id.
    let (s2, rows2) = run(&batch, &j, &c, &RunOptions::new().concurrency(1)).await;
    eprintln!("run 2: {:?}", s2.expect("run 2").outcomes);
    assert!(rows2.iter().all(|r| r.outcome == RowOutcome::Accepted));
    assert_eq!(sb.transfers().len(), 2);

    // Retention: every final entry last changed more than a second ago goes (the refusal of
    // the first row's first attempt is kept, as aff7ee3 has it).
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let removed = j.prune(Duration::from_millis(1_000)).await.expect("prune");
    eprintln!("pruned {removed}");

    let mut lies = Vec::new();
    // Truth: one transfer per row, each SENT (waiting for collection).
    let truth = sb.transfers();
    assert_eq!(truth.len(), 2);
    assert!(truth.iter().all(|t| t.status == "SENT"), "{truth:?}");

    // The follow-up after the prune.
    for r in follow(&batch, &j, &c).await {
        if r.collection != Collection::Waiting {
            lies.push(format!(
                "follow-up: line {} is paid (SENT at the service), the follow-up says {:?} under {:?}: {:?}",
                r.line, r.collection, r.request_id, r.message
            ));
        }
    }

    // The run the follow-up asks for (or a run by mistake): nothing more is paid, and each row
    // is reported paid.
    let (s3, rows3) = run(&batch, &j, &c, &RunOptions::new().concurrency(1)).await;
    eprintln!("run 3: {:?}", s3.as_ref().map(|s| &s.outcomes));
    // The journal held nothing for them: the run cannot confirm them as its own, but it must
    // never say refused or not sent; unknown, saying the service holds them, is the truth.
    for r in &rows3 {
        let told_held = r.outcome == RowOutcome::Unknown
            && r.message
                .as_deref()
                .is_some_and(|m| m.contains("already holds a transfer"));
        if r.outcome != RowOutcome::Accepted && !told_held {
            lies.push(format!(
                "run 3: line {} is paid once (SENT at the service), the run reports {:?} ({:?}: {:?}) under {:?}",
                r.line, r.outcome, r.code, r.message, r.request_id
            ));
        }
    }
    j.flush().await;
    // The journal against the service: no Request-id the service paid is held as refused.
    for t in sb.transfers() {
        let e = j
            .entry(
                whish_journal::Service::MoneyTransfer,
                whish_journal::Operation::Send,
                &t.request_id.to_string(),
            )
            .await
            .expect("read");
        // Refused with `transfer.already.done` (the service holds it) is how the journal
        // records the resend of a pruned row: every reader of the batch treats it as held by the
        // service, never as unpaid. Any other refusal of a paid Request-id is a lie.
        if let Some(e) = e
            && e.state == whish_journal::State::Refused
            && e.outcome.as_ref().and_then(|o| o.code.as_deref()) != Some("transfer.already.done")
        {
            lies.push(format!(
                "journal: Request-id {} is paid at the service ({}), the journal holds it refused ({:?})",
                t.request_id, t.status, e.outcome
            ));
        }
    }
    let paid = sb.transfers().len();
    j.close().await;
    assert_eq!(paid, 2, "a row was paid twice");
    assert!(lies.is_empty(), "{} lies:\n{}", lies.len(), lies.join("\n"));
}
