//! A payouts file run against one service, then again with another's settings on the same
//! journal (a staging rehearsal, then production): no row is reported paid on the strength of
//! the other service's entries, nothing is sent, and every row says why.

use whish_payouts::{Batch, RowOutcome, RunOptions};
use whish_sandbox::Endpoint;

use crate::support::{client, csv_rows, defaults, dir, journal, run, sandbox, write};

#[tokio::test]
async fn a_batch_recorded_for_another_service_is_never_reported_paid_here() {
    let d = dir("other-service");
    let staging = sandbox(1_000_000).await;
    let production = sandbox(1_000_000).await;
    let j = journal(&d).await;
    let file = d.join("aid.csv");
    write(&file, &csv_rows(5, "25"));
    let batch = Batch::new("aid-1", &file, defaults()).expect("batch");
    let (summary, _) = run(&batch, &j, &client(&staging), &RunOptions::new()).await;
    assert!(summary.expect("run").all_accepted(), "setup");
    assert_eq!(staging.transfers().len(), 5, "setup");

    let (summary, rows) = run(&batch, &j, &client(&production), &RunOptions::new()).await;
    let summary = summary.expect("run");
    assert!(!summary.all_accepted(), "{summary:?}");
    assert_eq!(rows.len(), 5);
    for r in &rows {
        assert_eq!(r.outcome, RowOutcome::Unknown, "{r:?}");
        assert!(
            r.message
                .as_deref()
                .is_some_and(|m| m.contains("another service")),
            "{r:?}"
        );
    }
    assert!(production.transfers().is_empty(), "nothing paid here");
    assert!(
        production
            .requests()
            .iter()
            .all(|r| r.endpoint != Endpoint::TransferSend),
        "nothing sent here"
    );
    assert_eq!(staging.transfers().len(), 5, "nothing more there");
}

/// The follow-up (with cancels) of a batch paid at one service, run with another's settings:
/// no row is told cancelled or collected (the other service holds none of them), and no cancel
/// is sent at either service.
#[tokio::test]
async fn a_follow_up_with_another_services_settings_reads_and_cancels_nothing() {
    let d = dir("other-service-follow");
    let staging = sandbox(1_000_000).await;
    let production = sandbox(1_000_000).await;
    let j = journal(&d).await;
    let file = d.join("aid.csv");
    write(&file, &csv_rows(3, "25"));
    let batch = Batch::new("aid-2", &file, defaults()).expect("batch");
    let (summary, _) = run(&batch, &j, &client(&staging), &RunOptions::new()).await;
    assert!(summary.expect("run").all_accepted(), "setup");
    let far = time::OffsetDateTime::now_utc() + time::Duration::days(1);
    let mut rows = Vec::new();
    batch
        .cancel_uncollected(
            &j,
            &client(&production),
            far,
            "not collected",
            1,
            &mut |r| {
                rows.push(r.clone());
                Ok(())
            },
        )
        .await
        .expect("follow-up");
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(!r.cancelled_now && r.cancel.is_none(), "{r:?}");
        assert_eq!(r.collection, whish_payouts::Collection::Unknown, "{r:?}");
    }
    assert!(
        production
            .requests()
            .iter()
            .all(|r| r.endpoint != Endpoint::TransferCancel),
        "nothing cancelled there"
    );
    assert_eq!(staging.transfers().len(), 3);
    assert!(
        staging
            .requests()
            .iter()
            .all(|r| r.endpoint != Endpoint::TransferCancel),
        "nor cancelled where it was paid"
    );
}
