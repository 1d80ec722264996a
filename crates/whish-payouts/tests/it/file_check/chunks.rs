#![allow(dead_code, missing_docs)]
//! The check now looks each chunk (256 rows) up in the journal and
//! compares it as a task of its own while the next chunk is read. Rows changed since an earlier
//! run at every chunk boundary (first and last row of each chunk, the last row of the file), a
//! changed row whose entry is its second attempt (its first refused for a limit), a reference
//! repeated across two chunks and a bad row: each must be reported exactly once, and nothing
//! must be sent while any is in the file; with `skip_bad_rows`, only the others go (none here:
//! they are all paid), and the changed rows are never paid.

use std::collections::BTreeMap;

use whish_payouts::RowOutcome;
use whish_sandbox::{Endpoint, Fault};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_or_changed_row_is_reported_once_across_chunks_and_none_is_sent() {
    let d = dir("check-chunks");
    let sb = sandbox(1_000_000).await;
    let c = client(&sb);
    let file = d.join("aid.csv");
    const N: usize = 600;
    write(&file, &csv_rows(N, "10"));
    let batch = Batch::new("check-chunks", &file, defaults()).expect("batch");
    let j = journal(&d).await;

    // Run 1: the first three rows meet the receiver's daily limit (retryable), the rest is
    // paid; run 2 pays those three under their second Request-id.
    sb.inject(
        Endpoint::TransferSend,
        Fault::Code("transfer.exceeds_customer_daily_limit"),
        3,
    );
    let (s1, _) = run(&batch, &j, &c, &RunOptions::new().concurrency(1)).await;
    eprintln!("run 1: {:?}", s1.expect("run 1").outcomes);
    let (s2, rows2) = run(&batch, &j, &c, &RunOptions::new().concurrency(4)).await;
    eprintln!("run 2: {:?}", s2.expect("run 2").outcomes);
    assert!(rows2.iter().all(|r| r.outcome == RowOutcome::Accepted));
    let paid = sb.transfers().len();
    assert_eq!(paid, N);

    // The file changes: rows (0-based) at the chunks' edges get another amount; row 1 (paid
    // under its second attempt) too; row 300 takes row 10's reference (a repeat across
    // chunks); row 400 gets a date of birth that cannot be read.
    let changed_rows = [0usize, 1, 255, 256, 511, 512, 599];
    let mut lines: Vec<String> = csv_rows(N, "10").lines().map(str::to_owned).collect();
    for i in changed_rows {
        lines[i + 1] = lines[i + 1].replace(",10,USD,", ",11,USD,");
    }
    lines[301] = lines[301].replace("AID-00300", "AID-00010");
    lines[401] = lines[401].replace("07-03-1990", "31-02-1990");
    write(&file, &(lines.join("\n") + "\n"));
    // Expected: each bad line once (a CSV line is the row's index + 2).
    let mut expected: Vec<u64> = changed_rows.iter().map(|i| *i as u64 + 2).collect();
    expected.extend([302, 402]);
    expected.sort_unstable();

    for attempt in 0..5 {
        let report = batch.check(&j, &c).await.expect("check");
        let mut per_line: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for e in &report.errors {
            per_line.entry(e.line).or_default().push(e.message.clone());
        }
        let lines: Vec<u64> = per_line.keys().copied().collect();
        assert_eq!(report.rows, N as u64, "attempt {attempt}");
        assert_eq!(lines, expected, "attempt {attempt}: {per_line:#?}");
        for (line, messages) in &per_line {
            assert_eq!(messages.len(), 1, "line {line} reported {messages:?}");
        }
        for i in changed_rows {
            let m = &per_line[&(i as u64 + 2)][0];
            assert!(m.contains("changed"), "line {}: {m}", i + 2);
        }
    }

    // Nothing is sent while a bad row is in the file.
    let (s3, rows3) = run(&batch, &j, &c, &RunOptions::new().concurrency(4)).await;
    assert!(
        matches!(s3, Err(BatchError::BadRows(_))),
        "{:?}",
        s3.map(|s| s.outcomes)
    );
    assert!(rows3.is_empty());
    assert_eq!(
        sb.transfers().len(),
        paid,
        "a run sent rows with bad rows in the file"
    );

    // With skip_bad_rows: the changed rows are not paid (their earlier payment stands).
    let (s4, rows4) = run(
        &batch,
        &j,
        &c,
        &RunOptions::new().concurrency(4).skip_bad_rows(true),
    )
    .await;
    eprintln!("run 4: {:?}", s4.expect("run 4").outcomes);
    for r in &rows4 {
        if expected.contains(&r.line) {
            assert_eq!(r.outcome, RowOutcome::NotSent, "line {}: {r:?}", r.line);
        }
    }
    j.close().await;
    assert_eq!(sb.transfers().len(), paid, "a changed or bad row was paid");
}
