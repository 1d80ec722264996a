#![allow(dead_code, missing_docs)]
//! Two processes run the same batch file at once; one is stopped (Ctrl-C) early.
//! The stopped one reports rows "not-sent" ("Nothing was sent for this row") whose transfer
//! already exists at the moment it reports them (the other process sent them).

use std::sync::Arc;

use whish_payouts::{RowOutcome, StopSignal};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_run_reports_not_sent_a_row_another_process_already_paid() {
    let sb = Arc::new(sandbox(100_000_000).await);
    let mut lies = Vec::new();
    for round in 0..10 {
        let d = dir(&format!("race-{round}"));
        let file = d.join("aid.csv");
        write(&file, &csv_rows(300, "10"));
        let batch = Batch::new(format!("adv-race-{round}"), &file, defaults()).expect("batch");
        let (ja, jb) = (journal(&d).await, journal(&d).await);
        let c = client(&sb);
        let stop = StopSignal::new();
        let a = {
            let (batch, c, stop, sb) = (batch.clone(), c.clone(), stop.clone(), sb.clone());
            async move {
                let mut found = Vec::new();
                let mut n = 0;
                let options = RunOptions::new().concurrency(4).stop_signal(stop.clone());
                let _ = batch
                    .run(&ja, &c, &options, &mut |r| {
                        n += 1;
                        if n == 20 {
                            stop.stop("ctrl-c");
                        }
                        if r.outcome == RowOutcome::NotSent
                            && let Some(id) = r.request_id
                        {
                            let paid = sb
                                .transfers()
                                .iter()
                                .filter(|t| t.request_id == id.get())
                                .count();
                            if paid > 0 {
                                found.push((r.line, id, r.message.clone(), paid));
                            }
                        }
                        Ok(())
                    })
                    .await;
                // A row this run gave back (recorded never sent) may be taken and sent by the
                // other process after that: the journal then counts a second attempt. A row
                // reported not sent whose entry has one attempt only, yet paid, is a lie.
                let mut lies = Vec::new();
                for (line, id, message, paid) in found {
                    let entry = ja
                        .entry(
                            whish_journal::Service::MoneyTransfer,
                            whish_journal::Operation::Send,
                            &id.to_string(),
                        )
                        .await
                        .expect("read")
                        .expect("recorded");
                    if entry.attempts < 2 {
                        lies.push(format!(
                            "line {line}: reported not-sent ({message:?}) while Request-id {id} has {paid} transfer(s)"
                        ));
                    }
                }
                ja.close().await;
                lies
            }
        };
        let b = async {
            let _ = run(&batch, &jb, &c, &RunOptions::new().concurrency(4)).await;
            jb.close().await;
        };
        let (found, ()) = tokio::join!(a, b);
        eprintln!("round {round}: {} lies", found.len());
        lies.extend(found);
        if !lies.is_empty() {
            break;
        }
    }
    assert!(lies.is_empty(), "{}", lies.join("\n"));
}
