//! A run of a check (`Batch::run_checked`) sends the rows the check read, when the check kept
//! them (a small file, checked by the same batch with the same options): the file is not read
//! again, so what was shown checked is what is sent. A report of another batch's check is
//! never taken for this one's rows: they are read from the file again.

use crate::support::{client, csv_rows, defaults, dir, journal, sandbox, write};
use rust_decimal::Decimal;
use whish_payouts::{Batch, RowOutcome, RunOptions};

async fn run_checked(
    batch: &Batch,
    report: whish_payouts::CheckReport,
    j: &whish_journal::Journal,
    c: &whish_money_transfer::TransferClient,
) -> whish_payouts::RunSummary {
    batch
        .run_checked(j, c, report, &RunOptions::new(), &mut |_| Ok(()))
        .await
        .expect("run")
}

#[tokio::test]
async fn a_run_of_a_check_sends_the_rows_the_check_read_not_the_file_changed_since() {
    let d = dir("checked-rows-kept");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("rows.csv");
    write(&file, &csv_rows(3, "10"));
    let batch = Batch::new("kept-1", &file, defaults()).expect("batch");
    let report = batch.check(&j, &c).await.expect("check");
    assert!(report.errors.is_empty(), "{report:?}");
    // The file changes after the check was shown: the run sends what was checked.
    write(&file, &csv_rows(3, "99"));
    let summary = run_checked(&batch, report, &j, &c).await;
    assert_eq!(summary.count(RowOutcome::Accepted), 3);
    let totals: Vec<Decimal> = sb.transfers().iter().map(|t| t.total).collect();
    assert_eq!(totals.len(), 3);
    assert!(
        totals.iter().all(|t| *t < Decimal::from(50)),
        "each transfer is the checked row's 10 plus its fee: {totals:?}"
    );
}

#[tokio::test]
async fn a_check_of_another_batch_is_never_taken_for_this_ones_rows() {
    let d = dir("checked-rows-other");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("rows.csv");
    write(&file, &csv_rows(2, "10"));
    let checked = Batch::new("other-1", &file, defaults()).expect("batch");
    let report = checked.check(&j, &c).await.expect("check");
    write(&file, &csv_rows(2, "99"));
    // Built again, with the same name and file: a configuration of its own.
    let other = Batch::new("other-1", &file, defaults()).expect("batch");
    let summary = run_checked(&other, report, &j, &c).await;
    assert_eq!(summary.count(RowOutcome::Accepted), 2);
    let totals: Vec<Decimal> = sb.transfers().iter().map(|t| t.total).collect();
    assert!(
        totals.iter().all(|t| *t >= Decimal::from(99)),
        "the rows were read from the file again: {totals:?}"
    );
}

#[tokio::test]
async fn a_run_whose_client_refuses_local_callbacks_prepares_the_checked_rows_again() {
    let d = dir("checked-rows-callbacks");
    let sb = sandbox(1_000_000).await;
    let j = journal(&d).await;
    let creds = sb.transfer_credentials();
    // The check's client accepts a loopback callback address (the sandbox is loopback).
    let local = whish_money_transfer::TransferClient::builder(
        whish_core::ClientSettings::new(sb.transfer_base_url()).allow_local_callbacks(),
    )
    .username(creds.username.clone())
    .key(whish_core::SecretString::from(creds.key.clone()))
    .build()
    .expect("client");
    let public_only = client(&sb);
    let file = d.join("rows.csv");
    write(&file, &csv_rows(2, "10"));
    let batch = Batch::new(
        "callbacks-1",
        &file,
        defaults().callback_url("http://127.0.0.1:9/collected"),
    )
    .expect("batch");
    let report = batch.check(&j, &local).await.expect("check");
    assert!(report.errors.is_empty(), "{report:?}");
    let mut rows = Vec::new();
    let summary = batch
        .run_checked(&j, &public_only, report, &RunOptions::new(), &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("run");
    assert_eq!(summary.count(RowOutcome::Accepted), 0, "{rows:?}");
    assert!(sb.transfers().is_empty(), "nothing was sent");
    assert!(
        rows.iter()
            .all(|r| r.message.as_deref().is_some_and(|m| m.contains("callback"))),
        "each row is refused for its callback address: {rows:?}"
    );
    // The check's own client sends them.
    let report = batch.check(&j, &local).await.expect("check");
    let summary = run_checked(&batch, report, &j, &local).await;
    assert_eq!(summary.count(RowOutcome::Accepted), 2);
}

#[tokio::test]
async fn rows_another_process_paid_after_the_check_are_told_from_the_journal_not_paid_again() {
    let d = dir("checked-rows-taken");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("rows.csv");
    write(&file, &csv_rows(3, "10"));
    let batch = Batch::new("taken-1", &file, defaults()).expect("batch");
    let report = batch.check(&j, &c).await.expect("check");
    assert!(report.errors.is_empty(), "{report:?}");
    // Another process runs the same batch after this check, and pays every row.
    let elsewhere = journal(&d).await;
    let other = Batch::new("taken-1", &file, defaults()).expect("batch");
    let first = other
        .run(&elsewhere, &c, &RunOptions::new(), &mut |_| Ok(()))
        .await
        .expect("the other run");
    assert_eq!(first.count(RowOutcome::Accepted), 3);
    elsewhere.close().await;
    // This check found the rows under no entry; its run finds them taken, and sends nothing.
    let mut rows = Vec::new();
    let summary = batch
        .run_checked(&j, &c, report, &RunOptions::new(), &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("run");
    assert_eq!(sb.transfers().len(), 3, "each row paid once: {rows:?}");
    assert_eq!(summary.count(RowOutcome::Accepted), 3, "{rows:?}");
    // Something was recorded since the check: each row is looked up again, and told from
    // the journal's record, with no call.
    assert!(rows.iter().all(|r| r.earlier_run), "{rows:?}");
}
