#![allow(dead_code, missing_docs)]
//! A cancel run whose results cannot be written part way (a full disk): the run ends with the
//! error, and the cancels already in flight finish first, never dropped half way with their
//! journal entries open and leased to a process that is gone.

use time::OffsetDateTime;
use whish_journal::{Listing, Operation};
use whish_payouts::{Collection, RowOutcome, Source};
use whish_sandbox::{Endpoint, Fault};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_results_write_lets_the_cancels_in_flight_finish() {
    let d = dir("cancel-sink");
    let sb = sandbox(1_000_000).await;
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(&file, &csv_rows(24, "10"));
    let batch = Batch::new("cancel-sink", &file, defaults()).expect("batch");
    let j = journal(&d).await;
    let (s, _) = run(&batch, &j, &c, &RunOptions::new().concurrency(4)).await;
    assert!(s.expect("run").all_accepted());

    // Every cancel answers late, so that several are in flight when the third write fails.
    sb.inject(
        Endpoint::TransferCancel,
        Fault::Delay(std::time::Duration::from_millis(150)),
        24,
    );
    let later = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let mut written = 0;
    let ended = batch
        .cancel_uncollected(&j, &c, later, "not collected in time", 8, &mut |_| {
            written += 1;
            if written > 2 {
                return Err(std::io::Error::other("no space left on device"));
            }
            Ok(())
        })
        .await;
    assert!(
        matches!(ended, Err(BatchError::Results(_))),
        "the run ends with the results error: {ended:?}"
    );
    let open: Vec<_> = j
        .list(&Listing::new().open())
        .await
        .expect("list")
        .into_iter()
        .filter(|e| e.operation == Operation::Cancel)
        .collect();
    assert!(
        open.is_empty(),
        "every cancel sent finished and was recorded; open: {:?}",
        open.iter().map(|e| (&e.key, e.state)).collect::<Vec<_>>()
    );
    let cancelled = sb
        .transfers()
        .iter()
        .filter(|t| t.status == "CANCELED_FULL")
        .count();
    assert!(
        cancelled >= 3,
        "the cancels in flight went out: {cancelled}"
    );

    // The next run (room made) reports every row, each cancelled once.
    let mut rows = Vec::new();
    batch
        .cancel_uncollected(&j, &c, later, "not collected in time", 8, &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("second run");
    assert_eq!(rows.len(), 24);
    // Every row is cancelled by the batch: by this run's cancel, or by the first run's, as the
    // journal holds it.
    assert!(
        rows.iter().all(|r| r.collection == Collection::Cancelled
            && r.cancel == Some(RowOutcome::Accepted)
            && r.cancelled_now),
        "every row cancelled by the batch: {:?}",
        rows.iter()
            .map(|r| (r.line, r.collection, r.cancel, r.cancelled_now))
            .collect::<Vec<_>>()
    );
    assert!(
        rows.iter().filter(|r| r.source == Source::Cancel).count() + 2 <= 24,
        "the rows the first run cancelled are not cancelled again"
    );
    let cancels = sb
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/cancel/send/money"))
        .count();
    assert_eq!(cancels, 24, "one cancel a row, never a second");
}
