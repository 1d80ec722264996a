//! One file run twice at the same moment under two batch names (a typo, two schedulers): each
//! row is paid once. Each run reads, before it reserves a chunk of rows, the sends the other
//! recorded since its check, under the journal's repeat check; a row the other run holds is
//! reported not sent (`same-body-elsewhere`), never paid a second time.

use std::collections::HashMap;

use whish_payouts::RowOutcome;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_file_run_under_two_batch_names_at_once_pays_each_row_once() {
    let sb = sandbox(100_000_000).await;
    let d = dir("two-names");
    let file = d.join("aid.csv");
    let rows = 120;
    write(&file, &csv_rows(rows, "10"));
    let first = Batch::new("nov-28", &file, defaults()).expect("batch");
    let second = Batch::new("nov28", &file, defaults()).expect("batch");
    // Two processes: journals of their own on one file.
    let (ja, jb) = (journal(&d).await, journal(&d).await);
    let c = client(&sb);
    // Both checked before either sends: the check alone cannot see the other run.
    run_both_at_once(&sb, [(&first, &ja), (&second, &jb)], &c, rows).await;
}

/// Both batches checked before either sends, then run at once: every line is paid by one run,
/// and reported not sent by the other (`same-body-elsewhere`); one transfer a row.
async fn run_both_at_once(
    sb: &Sandbox,
    [(first, ja), (second, jb)]: [(&Batch, &Journal); 2],
    c: &TransferClient,
    rows: usize,
) {
    let (check_a, check_b) = tokio::join!(first.check(ja, c), second.check(jb, c));
    let (check_a, check_b) = (check_a.expect("check"), check_b.expect("check"));
    assert!(check_a.errors.is_empty() && check_b.errors.is_empty());
    let options = RunOptions::new().concurrency(4);
    let mut results_a = Vec::new();
    let mut results_b = Vec::new();
    let mut sink_a = |r: &RowResult| {
        results_a.push(r.clone());
        Ok(())
    };
    let mut sink_b = |r: &RowResult| {
        results_b.push(r.clone());
        Ok(())
    };
    let (a, b) = tokio::join!(
        first.run_checked(ja, c, check_a, &options, &mut sink_a),
        second.run_checked(jb, c, check_b, &options, &mut sink_b),
    );
    a.expect("run");
    b.expect("run");
    let mut accepted: HashMap<u64, u32> = HashMap::new();
    for r in results_a.iter().chain(&results_b) {
        match r.outcome {
            RowOutcome::Accepted => *accepted.entry(r.line).or_default() += 1,
            RowOutcome::NotSent => {
                assert_eq!(r.code.as_deref(), Some("same-body-elsewhere"), "{r:?}")
            }
            _ => panic!("every row is paid or held by the other run: {r:?}"),
        }
    }
    assert!(
        accepted.values().all(|n| *n == 1),
        "no row paid twice: {accepted:?}"
    );
    assert_eq!(accepted.len(), rows, "every row paid");
    assert_eq!(sb.transfers().len(), rows, "one transfer a row");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_a_stopped_run_left_unsent_are_checked_again_before_they_go() {
    use whish_payouts::{BatchError, StopSignal};
    let sb = sandbox(100_000_000).await;
    let d = dir("two-names-stopped");
    let file = d.join("aid.csv");
    let rows = 20;
    write(&file, &csv_rows(rows, "10"));
    let mistyped = Batch::new("nov28", &file, defaults()).expect("batch");
    let right = Batch::new("nov-28", &file, defaults()).expect("batch");
    let j = journal(&d).await;
    let c = client(&sb);
    // The mistyped run is stopped before its first send: its rows are recorded never sent.
    let stop = StopSignal::new();
    stop.stop("ctrl-c");
    let (stopped, results) = run(&mistyped, &j, &c, &RunOptions::new().stop_signal(stop)).await;
    stopped.expect("stopped run");
    assert!(results.iter().all(|r| r.outcome == RowOutcome::NotSent));
    assert!(sb.transfers().is_empty());
    // The run under the right name pays every row.
    let (paid, _) = run(&right, &j, &c, &RunOptions::new()).await;
    assert!(paid.expect("run").all_accepted());
    assert_eq!(sb.transfers().len(), rows);
    // The mistyped name run again: its rows, recorded never sent, would go as first sends.
    let (again, results) = run(&mistyped, &j, &c, &RunOptions::new()).await;
    match again {
        Err(BatchError::BadRows(report)) => assert_eq!(report.errors.len(), rows, "{report:?}"),
        other => panic!("every row is a repeat of the paid one: {other:?} {results:?}"),
    }
    assert_eq!(sb.transfers().len(), rows, "no row paid twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_names_whose_rows_were_left_unsent_pay_each_row_once_when_run_at_once() {
    use whish_payouts::StopSignal;
    let sb = sandbox(100_000_000).await;
    let d = dir("two-names-both-stopped");
    let file = d.join("aid.csv");
    let rows = 60;
    write(&file, &csv_rows(rows, "10"));
    let first = Batch::new("nov-28", &file, defaults()).expect("batch");
    let second = Batch::new("nov28", &file, defaults()).expect("batch");
    let (ja, jb) = (journal(&d).await, journal(&d).await);
    let c = client(&sb);
    // Both names stopped before their first send: every row recorded never sent, twice.
    for (batch, j) in [(&first, &ja), (&second, &jb)] {
        let stop = StopSignal::new();
        stop.stop("ctrl-c");
        let (stopped, results) = run(batch, j, &c, &RunOptions::new().stop_signal(stop)).await;
        stopped.expect("stopped run");
        assert!(results.iter().all(|r| r.outcome == RowOutcome::NotSent));
    }
    assert!(sb.transfers().is_empty());
    // Both run again at once, each checked before either sends: every row of each goes as a
    // first send of an entry recorded never sent.
    run_both_at_once(&sb, [(&first, &ja), (&second, &jb)], &c, rows).await;
}
