#![allow(dead_code, missing_docs)]
//! Two processes (two Journal handles on one SQLite file) run the same
//! batch; one is stopped (Ctrl-C) early, at a varying point, so its later chunks are recorded
//! never sent (record_unsent) while the other reserves and sends them. Then a third run
//! finishes the batch and a follow-up reads it. Checked against the sandbox:
//!
//! - no row is paid twice, and after the third run every row is paid exactly once;
//! - each row the stopped run reports not-sent was not paid when it said so, and if paid later
//!   its entry shows it was taken again (attempts >= 2);
//! - each row any run reports accepted is paid; refused or not-sent rows of the stopped run were
//!   not paid by it;
//! - the third run reports every row accepted under the Request-id the sandbox paid;
//! - the follow-up says each row is waiting, under that Request-id.

use std::collections::HashMap;
use std::sync::Arc;

use whish_payouts::{Collection, FollowUpRow, RowOutcome, StopSignal};

use crate::support::*;

/// As `two_runs::not_sent_already_paid` judges: a not-sent row paid later must show it was taken again (attempts >= 2);
/// no row paid twice; runs 3 and the follow-up agree with the sandbox. (`not-sent` is what this
/// run did and the journal recorded: another process running the same batch may take the row
/// and pay it before this run's line is written; the entry then shows the second attempt.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_run_racing_another_never_lies_about_a_row() {
    race().await;
}

async fn race() {
    let sb = Arc::new(sandbox(100_000_000).await);
    let mut lies: Vec<String> = Vec::new();
    for (round, stop_at) in [1usize, 3, 9, 17, 40, 2, 5, 12, 25, 60]
        .into_iter()
        .enumerate()
    {
        let d = dir(&format!("race-unsent-{round}"));
        let file = d.join("aid.csv");
        write(&file, &csv_rows(200, "10"));
        let batch = Batch::new(format!("race-unsent-{round}"), &file, defaults()).expect("batch");
        let (ja, jb) = (journal(&d).await, journal(&d).await);
        let c = client(&sb);
        let stop = StopSignal::new();
        let a = {
            let (batch, c, stop) = (batch.clone(), c.clone(), stop.clone());
            async move {
                let mut n = 0;
                let mut rows: Vec<RowResult> = Vec::new();
                let options = RunOptions::new().concurrency(2).stop_signal(stop.clone());
                let _ = batch
                    .run(&ja, &c, &options, &mut |r| {
                        n += 1;
                        if n == stop_at {
                            stop.stop("ctrl-c");
                        }
                        rows.push(r.clone());
                        Ok(())
                    })
                    .await;
                (ja, rows)
            }
        };
        let b = async {
            let (_, rows) = run(&batch, &jb, &c, &RunOptions::new().concurrency(3)).await;
            jb.close().await;
            rows
        };
        let ((ja, a_rows), b_rows) = tokio::join!(a, b);
        let count = |id: i64| sb.transfers().iter().filter(|t| t.request_id == id).count();
        let mut outcomes: HashMap<RowOutcome, usize> = HashMap::new();
        for r in &a_rows {
            *outcomes.entry(r.outcome).or_default() += 1;
            let Some(id) = r.request_id else { continue };
            match r.outcome {
                RowOutcome::NotSent if count(id.get()) > 0 => {
                    let e = ja
                        .entry(
                            whish_journal::Service::MoneyTransfer,
                            whish_journal::Operation::Send,
                            &id.to_string(),
                        )
                        .await
                        .expect("read")
                        .expect("recorded");
                    if e.attempts < 2 {
                        lies.push(format!(
                                "round {round}: A reported line {} not-sent, Request-id {id} is paid and its entry has {} attempt(s) ({})",
                                r.line, e.attempts, e.state
                            ));
                    }
                }
                RowOutcome::Accepted if count(id.get()) != 1 => lies.push(format!(
                    "round {round}: A reported line {} accepted, Request-id {id} has {} transfers",
                    r.line,
                    count(id.get())
                )),
                _ => {}
            }
        }
        eprintln!("round {round} (stop at {stop_at}): A {outcomes:?}");
        for r in &b_rows {
            if let (RowOutcome::Accepted, Some(id)) = (r.outcome, r.request_id)
                && count(id.get()) != 1
            {
                lies.push(format!(
                    "round {round}: B reported line {} accepted, Request-id {id} has {} transfers",
                    r.line,
                    count(id.get())
                ));
            }
        }
        ja.close().await;

        // A third run finishes the batch; the follow-up reads it.
        let jc = journal(&d).await;
        let (s, c_rows) = run(&batch, &jc, &c, &RunOptions::new().concurrency(4)).await;
        let s = s.expect("run 3");
        eprintln!("round {round}: run 3 {:?}", s.outcomes);
        for r in &c_rows {
            let id = r.request_id.map(|i| i.get()).unwrap_or_default();
            if r.outcome != RowOutcome::Accepted || count(id) != 1 {
                lies.push(format!(
                    "round {round}: run 3 line {}: {:?} {:?}, Request-id {id} has {} transfers",
                    r.line,
                    r.outcome,
                    r.message,
                    count(id)
                ));
            }
        }
        let mut follow: Vec<FollowUpRow> = Vec::new();
        batch
            .follow_up(&jc, &c, 4, &mut |r| {
                follow.push(r.clone());
                Ok(())
            })
            .await
            .expect("follow-up");
        for r in &follow {
            let id = r.request_id.map(|i| i.get()).unwrap_or_default();
            if r.collection != Collection::Waiting || count(id) != 1 {
                lies.push(format!(
                    "round {round}: follow-up line {}: {:?} {:?}, Request-id {id} has {} transfers",
                    r.line,
                    r.collection,
                    r.message,
                    count(id)
                ));
            }
        }
        jc.close().await;
        if !lies.is_empty() {
            break;
        }
    }
    // Never two transfers for one Request-id, and no row under two Request-ids (all rows here
    // are accepted first time: attempt 0 only).
    let mut per_id: HashMap<i64, usize> = HashMap::new();
    for t in sb.transfers() {
        *per_id.entry(t.request_id).or_default() += 1;
    }
    assert!(per_id.values().all(|n| *n == 1), "a Request-id paid twice");
    assert!(lies.is_empty(), "{}", lies.join("\n"));
}
