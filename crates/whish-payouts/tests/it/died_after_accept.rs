#![allow(dead_code, missing_docs)]
//! A stopped batch gives its reserved rows back; the next run sends them and dies right after a
//! row is reported accepted (before the journal writes its outcome, which it does after the call
//! returns); the run after must never report that paid row refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use whish_payouts::{RowOutcome, StopSignal};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_paid_by_a_run_that_died_is_reported_refused_by_the_next_run() {
    let d = dir("given-back-died");
    let sb = sandbox(1_000_000).await;
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(&file, &csv_rows(12, "10"));
    let batch = Batch::new("adv-gb-1", &file, defaults()).expect("batch");

    // Run 1: stopped (Ctrl-C) once the first row is done: the rows reserved ahead are given back.
    let j1 = journal(&d).await;
    let stop = StopSignal::new();
    let options = RunOptions::new().concurrency(1).stop_signal(stop.clone());
    let mut first = Vec::new();
    let s1 = batch
        .run(&j1, &c, &options, &mut |r| {
            first.push(r.clone());
            stop.stop("ctrl-c");
            Ok(())
        })
        .await
        .expect("run 1");
    eprintln!("run 1: {:?}", s1.outcomes);
    let given_back = j1
        .list(&whish_journal::Listing::new().state(whish_journal::State::Refused))
        .await
        .expect("list");
    eprintln!("run 1 gave back {} rows", given_back.len());
    assert!(!given_back.is_empty(), "the test needs rows given back");
    j1.close().await;

    // Run 2, another process: dies (a crash) right after the first row it sends is reported
    // accepted by the batch. Its own runtime, current-thread: nothing else runs once it stops.
    let creds = sb.transfer_credentials();
    let (base, user, key) = (
        sb.transfer_base_url(),
        creds.username.clone(),
        creds.key.clone(),
    );
    let (u, f) = (url(&d), file.clone());
    let died_after: Arc<Mutex<Option<RowResultLite>>> = Arc::default();
    let seen = died_after.clone();
    tokio::task::spawn_blocking(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(async {
                let j = whish_journal::Journal::builder(&u)
                    .lease(LEASE)
                    .open()
                    .await
                    .expect("open");
                let c = client_at(&base, &user, &key);
                let batch = Batch::new("adv-gb-1", &f, defaults()).expect("batch");
                let _ = batch
                    .run(&j, &c, &RunOptions::new().concurrency(1), &mut |r| {
                        if r.outcome == RowOutcome::Accepted && !r.earlier_run {
                            *seen.lock().unwrap() = Some(RowResultLite {
                                line: r.line,
                                request_id: r.request_id.map(|i| i.get()),
                            });
                            panic!("killed right after the row was reported accepted");
                        }
                        Ok(())
                    })
                    .await;
            })
        }));
        assert!(crashed.is_err(), "run 2 was to die");
        drop(rt);
    })
    .await
    .expect("run 2");
    let died = died_after
        .lock()
        .unwrap()
        .clone()
        .expect("run 2 paid a row");
    let id = died.request_id.expect("id");
    eprintln!("run 2 paid line {} (Request-id {id}) and died", died.line);
    let paid: HashMap<i64, usize> = sb.transfers().iter().fold(HashMap::new(), |mut m, t| {
        *m.entry(t.request_id).or_default() += 1;
        m
    });
    assert_eq!(paid.get(&id), Some(&1), "that row's transfer exists");

    // Run 3, after run 2's lease ran out: every row must be reported as what happened.
    tokio::time::sleep(LEASE * 2).await;
    let j3 = journal(&d).await;
    let (s3, rows) = run(&batch, &j3, &c, &RunOptions::new().concurrency(1)).await;
    let s3 = s3.expect("run 3");
    eprintln!("run 3: {:?}", s3.outcomes);
    let row = rows.iter().find(|r| r.line == died.line).expect("the row");
    eprintln!(
        "run 3 says of line {}: {:?} {:?} {:?}",
        row.line, row.outcome, row.code, row.message
    );
    // No transfer twice.
    for t in sb.transfers() {
        assert_eq!(
            sb.transfers()
                .iter()
                .filter(|x| x.request_id == t.request_id)
                .count(),
            1
        );
    }
    assert_eq!(
        row.outcome,
        RowOutcome::Accepted,
        "line {} was paid (Request-id {id} has a transfer), and run 3 reports it {:?}: {:?}",
        row.line,
        row.outcome,
        row.message
    );
    j3.close().await;
}

#[derive(Debug, Clone)]
struct RowResultLite {
    line: u64,
    request_id: Option<i64>,
}
