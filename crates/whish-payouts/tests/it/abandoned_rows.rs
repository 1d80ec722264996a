//! A row a person abandoned (`Journal::abandon`) in a payout
//! batch: run again, pruned, followed up, cancelled, reconciled; and a batch cancel a person
//! abandoned, met by the cancel run. Each test asserts what a careful payment engineer expects
//! against what the sandbox holds. Real SQLite journals in temporary files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{HEADER, defaults, write};
use rust_decimal::Decimal;
use time::OffsetDateTime;
use whish_core::{ClientSettings, Policy, RetryPolicy, SecretString, Timeouts};
use whish_journal::{Abandoned, Clients, Journal, Listing, Operation, Recovery, Service, State};
use whish_money_transfer::{PreparedTransfer, ReportRange, TransferClient};
use whish_payouts::reconcile::{self, FindingKind};
use whish_payouts::{
    Batch, BatchError, Collection, FollowUpRow, RowOutcome, RowResult, RunOptions,
};
use whish_sandbox::{Endpoint, Fault, Sandbox};

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "whish-payouts-abandoned-{test}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

async fn sandbox() -> Sandbox {
    let plenty = Decimal::from(10_000_000u64);
    Sandbox::builder()
        .transfer_balance("USD", plenty)
        .limits("USD", plenty, plenty)
        .start()
        .await
        .expect("sandbox")
}

fn client(sb: &Sandbox, retries: u32) -> TransferClient {
    let c = sb.transfer_credentials();
    TransferClient::builder(ClientSettings::new(sb.transfer_base_url()).policy(Policy {
        retry: RetryPolicy {
            max_retries: retries,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(20),
        },
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            attempt: Duration::from_millis(400),
        },
    }))
    .username(c.username.clone())
    .key(SecretString::from(c.key.clone()))
    .build()
    .expect("client")
}

fn csv_rows(prefix: &str, n: usize, amount: &str) -> String {
    let mut s = format!("{HEADER}\n");
    for i in 0..n {
        s.push_str(&format!(
            "{prefix}-{i:05},Rami,Haddad,+9617012{i:04},07-03-1990,{amount},USD,Family Support,Savings\n"
        ));
    }
    s
}

async fn journal(d: &Path) -> Journal {
    Journal::open(&format!("sqlite:{}", d.join("journal.sqlite").display()))
        .await
        .expect("journal")
}

async fn run(
    batch: &Batch,
    j: &Journal,
    c: &TransferClient,
    options: &RunOptions,
) -> (
    Result<whish_payouts::RunSummary, BatchError>,
    Vec<RowResult>,
) {
    let mut results = Vec::new();
    let summary = batch
        .run(j, c, options, &mut |r| {
            results.push(r.clone());
            Ok(())
        })
        .await;
    results.sort_by_key(|r| r.line);
    (summary, results)
}

fn transfers_with(sb: &Sandbox, id: i64) -> usize {
    sb.transfers().iter().filter(|t| t.request_id == id).count()
}

/// A batch of `rows` rows whose first row's send never reached the service, resumed "days
/// later" (a deadline of zero): that row waits for a person. Returns the batch and that row's
/// result (its Request-id).
async fn a_row_for_a_person(
    sb: &Sandbox,
    j: &Journal,
    d: &Path,
    name: &str,
    rows: usize,
) -> (Batch, RowResult) {
    let file = d.join(format!("{name}.csv"));
    write(&file, &csv_rows(name, rows, "15"));
    let batch = Batch::new(name, &file, defaults()).expect("batch");
    let before = sb.transfers().len();
    sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
    let (first, _) = run(&batch, j, &client(sb, 0), &RunOptions::new().concurrency(1)).await;
    assert_eq!(
        first.expect("first run").count(RowOutcome::Unknown),
        1,
        "setup"
    );
    assert_eq!(sb.transfers().len(), before + rows - 1, "setup");
    // "Days later" (a deadline of zero): a recovery sends it to a person.
    j.recover(
        &Clients::new().transfer(client(sb, 2)),
        &Recovery::new().deadline(Duration::ZERO),
    )
    .await
    .expect("recover");
    let (second, results) = run(&batch, j, &client(sb, 2), &RunOptions::new()).await;
    assert_eq!(
        second.expect("second run").count(RowOutcome::NeedsOperator),
        1,
        "setup: {results:?}"
    );
    let row = results
        .into_iter()
        .find(|r| r.outcome == RowOutcome::NeedsOperator)
        .expect("the row for a person");
    (batch, row)
}

async fn abandon(sb: &Sandbox, j: &Journal, row: &RowResult) {
    let key = row.request_id.expect("a Request-id").to_string();
    let done = j
        .abandon(
            &Clients::new().transfer(client(sb, 0)),
            Service::MoneyTransfer,
            Operation::Send,
            &key,
            "the receiver was paid in cash at the office",
        )
        .await
        .expect("abandon");
    assert!(
        matches!(done, Abandoned::Recorded { .. }),
        "setup: {done:?}"
    );
}

/// A row a person abandoned ("never pay it") is
/// refused, code `abandoned`, on every run, even told to retry what waits for a person with the
/// longest deadline (held up). Then the journal is pruned on its retention schedule
/// (`Journal::prune`: final entries, and `refused` is final), and the batch file is run again: the
/// abandoned row's entry is gone, its Request-id (derived from the batch and the reference) has no
/// transfer at the service, and the row is paid. The prune keeps the refusals a later attempt needs
/// (`RETRY_UNDER_NEW_KEY`), but not the person's decision.
#[tokio::test]
async fn an_abandoned_row_is_not_paid_after_the_journal_is_pruned() {
    let d = dir("prune");
    let sb = sandbox().await;
    let j = journal(&d).await;
    let (batch, row) = a_row_for_a_person(&sb, &j, &d, "prune", 3).await;
    let id = row.request_id.expect("id").get();
    abandon(&sb, &j, &row).await;
    // A recovery told to retry what waits, with the longest deadline, leaves it closed.
    j.recover(
        &Clients::new().transfer(client(&sb, 2)),
        &Recovery::new()
            .deadline(Duration::MAX)
            .retry_needs_operator(true),
    )
    .await
    .expect("recover");
    let (third, results) = run(&batch, &j, &client(&sb, 2), &RunOptions::new()).await;
    let third = third.expect("third run");
    assert_eq!(third.count(RowOutcome::Refused), 1, "{results:?}");
    assert!(
        results
            .iter()
            .any(|r| r.outcome == RowOutcome::Refused && r.code.as_deref() == Some("abandoned")),
        "{results:?}"
    );
    assert_eq!(transfers_with(&sb, id), 0, "held up: never sent");

    tokio::time::sleep(Duration::from_millis(20)).await;
    let pruned = j.prune(Duration::ZERO).await.expect("prune");
    assert!(pruned >= 1, "setup: pruned {pruned}");
    let (fourth, results) = run(&batch, &j, &client(&sb, 2), &RunOptions::new()).await;
    let _ = fourth.expect("fourth run");
    assert_eq!(
        transfers_with(&sb, id),
        0,
        "the row a person abandoned was paid after the prune: {results:?}"
    );
}

/// What abandon says it cannot rule out
/// happens: the send a person abandoned was still travelling and arrives after the check (here: the
/// same request, same Request-id and bytes, reaches the service). The service holds the row's
/// transfer, SENT, waiting to be collected. `follow_up` ("where each row's money is ... status
/// reads by Request-id") reads the journal's `refused` and says `not-paid` without asking the
/// service, so the person believes the receiver cannot collect, and a cancel run would never cancel
/// it.
#[tokio::test]
async fn the_follow_up_of_an_abandoned_row_asks_the_service() {
    let d = dir("follow");
    let sb = sandbox().await;
    let j = journal(&d).await;
    let (batch, row) = a_row_for_a_person(&sb, &j, &d, "follow", 2).await;
    let id = row.request_id.expect("id");
    abandon(&sb, &j, &row).await;
    let entry = j
        .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
        .await
        .expect("read")
        .expect("entry");
    assert_eq!(entry.state, State::Refused, "setup");
    // The request that was still on its way arrives.
    let late = PreparedTransfer::from_stored(id, entry.request.clone()).expect("stored");
    let _ = client(&sb, 0).send(&late).await.expect("arrives late");
    assert_eq!(
        transfers_with(&sb, id.get()),
        1,
        "setup: the service holds it"
    );

    let mut rows: Vec<FollowUpRow> = Vec::new();
    batch
        .follow_up(&j, &client(&sb, 2), 4, &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("follow-up");
    let mine = rows
        .iter()
        .find(|r| r.request_id == Some(id))
        .expect("the row");
    assert_ne!(
        mine.collection,
        Collection::NotPaid,
        "the service holds the row's transfer, SENT: {mine:?}"
    );
}

/// Held up: the batch reports an abandoned row `refused` (never accepted, not in the accepted
/// totals, exit path of a refusal), on a plain run and on one told to retry with a deadline of
/// zero, and sends nothing for it.
#[tokio::test]
async fn an_abandoned_row_is_never_counted_paid() {
    let d = dir("counted");
    let sb = sandbox().await;
    let j = journal(&d).await;
    let (batch, row) = a_row_for_a_person(&sb, &j, &d, "counted", 3).await;
    let id = row.request_id.expect("id").get();
    abandon(&sb, &j, &row).await;
    for retry_first in [false, true] {
        if retry_first {
            j.recover(
                &Clients::new().transfer(client(&sb, 2)),
                &Recovery::new()
                    .deadline(Duration::ZERO)
                    .retry_needs_operator(true),
            )
            .await
            .expect("recover");
        }
        let (summary, results) = run(&batch, &j, &client(&sb, 2), &RunOptions::new()).await;
        let summary = summary.expect("run");
        assert!(!summary.all_accepted());
        assert_eq!(summary.count(RowOutcome::Accepted), 2, "{results:?}");
        assert_eq!(summary.totals.get("USD").map(|t| t.accepted), Some(2));
        let r = results
            .iter()
            .find(|r| r.request_id == row.request_id)
            .expect("the row");
        assert_eq!(r.outcome, RowOutcome::Refused, "{r:?}");
        assert_eq!(r.code.as_deref(), Some("abandoned"));
        assert!(r.ltn_number.is_none() && r.transfer_id.is_none(), "{r:?}");
    }
    assert_eq!(transfers_with(&sb, id), 0);
    assert_eq!(sb.transfers().len(), 2);
}

/// The follow-up of an abandoned
/// row took "not found" from one status
/// read, though abandon itself was made to need a second witness (a status read lying "not
/// found" for an applied transfer). The request a person abandoned arrived late and the receiver
/// collected the cash; the activity log the follow-up already read lists it RECEIVED; the status
/// read answers `sending.transfer.invalid.info` once. Expected: collected (the log says so), or
/// unknown; never `not-paid`.
#[tokio::test]
async fn the_follow_up_of_an_abandoned_row_collected_since_is_never_not_paid() {
    let d = dir("abandoned-collected");
    let sb = sandbox().await;
    let j = journal(&d).await;
    let (batch, row) = a_row_for_a_person(&sb, &j, &d, "collected", 1).await;
    let id = row.request_id.expect("id");
    abandon(&sb, &j, &row).await;
    let entry = j
        .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
        .await
        .expect("read")
        .expect("entry");
    let late = PreparedTransfer::from_stored(id, entry.request.clone()).expect("stored");
    let sent = client(&sb, 0).send(&late).await.expect("arrives late");
    let ltn = sent.ltn_number().expect("an LTN").to_owned();
    sb.collect_cash(&ltn).await.expect("collected");
    sb.inject(
        Endpoint::TransferStatus,
        Fault::Code("sending.transfer.invalid.info"),
        1,
    );
    let mut rows: Vec<FollowUpRow> = Vec::new();
    batch
        .follow_up(&j, &client(&sb, 2), 4, &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("follow-up");
    let mine = rows
        .iter()
        .find(|r| r.request_id == Some(id))
        .expect("the row");
    assert_ne!(
        mine.collection,
        Collection::NotPaid,
        "the receiver collected the row's transfer (the activity log lists it RECEIVED): {mine:?}"
    );
}

fn calls(sb: &Sandbox, endpoint: Endpoint) -> usize {
    sb.requests()
        .iter()
        .filter(|r| r.endpoint == endpoint)
        .count()
}

/// A follow-up (`cancel_before` None) or a cancel run of rows sent before it; its rows.
async fn follow(
    batch: &Batch,
    j: &Journal,
    c: &TransferClient,
    cancel_before: Option<OffsetDateTime>,
) -> Vec<FollowUpRow> {
    let mut rows: Vec<FollowUpRow> = Vec::new();
    let mut sink = |r: &FollowUpRow| {
        rows.push(r.clone());
        Ok(())
    };
    match cancel_before {
        None => batch.follow_up(j, c, 4, &mut sink).await,
        Some(before) => {
            batch
                .cancel_uncollected(j, c, before, "not collected in time", 4, &mut sink)
                .await
        }
    }
    .expect("follow-up");
    rows.sort_by_key(|r| r.line);
    rows
}

fn status_of(sb: &Sandbox, id: i64) -> Vec<String> {
    sb.transfers()
        .into_iter()
        .filter(|t| t.request_id == id)
        .map(|t| t.status)
        .collect()
}

/// The abandoned row's request, still travelling when abandon checked, arrives: the service
/// holds its transfer, SENT. Returns the batch, the row's Request-id, and the late transfer's LTN.
async fn abandoned_then_arrived(
    sb: &Sandbox,
    j: &Journal,
    d: &Path,
    name: &str,
) -> (Batch, whish_core::RequestId, String) {
    let (batch, row) = a_row_for_a_person(sb, j, d, name, 2).await;
    let id = row.request_id.expect("id");
    abandon(sb, j, &row).await;
    let entry = j
        .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
        .await
        .expect("read")
        .expect("entry");
    assert_eq!(entry.state, State::Refused, "setup");
    let late = PreparedTransfer::from_stored(id, entry.request.clone()).expect("stored");
    let sent = client(sb, 0).send(&late).await.expect("arrives late");
    let ltn = sent.ltn_number().expect("an LTN").to_owned();
    assert_eq!(status_of(sb, id.get()), vec!["SENT".to_owned()], "setup");
    (batch, id, ltn)
}

/// Held up: a cancel run (cutoff an hour ahead) over a batch whose abandoned row's late request
/// arrived (its transfer SENT, waiting at a branch). The run cancels that transfer through the
/// journal (its cancel entry accepted), the row reads cancelled by the batch; a second cancel run
/// sends no second cancel and still says cancelled; a plain follow-up agrees.
#[tokio::test]
async fn a_cancel_run_cancels_an_abandoned_rows_late_transfer_once() {
    let d = dir("cancel-late");
    let sb = sandbox().await;
    let j = journal(&d).await;
    let (batch, id, _ltn) = abandoned_then_arrived(&sb, &j, &d, "cancellate").await;
    let before = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let rows = follow(&batch, &j, &client(&sb, 2), Some(before)).await;
    let mine = rows
        .iter()
        .find(|r| r.request_id == Some(id))
        .expect("the row")
        .clone();
    assert_eq!(
        status_of(&sb, id.get()),
        vec!["CANCELED_FULL".to_owned()],
        "the abandoned row's late transfer still waits after a cancel run: {mine:?}"
    );
    assert_eq!(mine.collection, Collection::Cancelled, "{mine:?}");
    assert_eq!(mine.cancel, Some(RowOutcome::Accepted), "{mine:?}");
    assert!(mine.cancelled_now, "{mine:?}");
    let cancels = calls(&sb, Endpoint::TransferCancel);
    let cancel_entries: Vec<_> = j
        .list(&Listing::new())
        .await
        .expect("list")
        .into_iter()
        .filter(|e| e.operation == Operation::Cancel)
        .collect();
    // The abandoned row's cancel and the other (paid, waiting) row's: both accepted.
    assert_eq!(cancel_entries.len(), 2, "{cancel_entries:?}");
    assert!(cancel_entries.iter().all(|e| e.state == State::Accepted));
    for cancel_before in [Some(before), None] {
        let rows = follow(&batch, &j, &client(&sb, 2), cancel_before).await;
        let again = rows
            .iter()
            .find(|r| r.request_id == Some(id))
            .expect("the row");
        assert_eq!(again.collection, Collection::Cancelled, "{again:?}");
        assert_eq!(again.cancel, Some(RowOutcome::Accepted), "{again:?}");
    }
    assert_eq!(
        calls(&sb, Endpoint::TransferCancel),
        cancels,
        "a second cancel"
    );
    // The other row (paid, waiting) was cancelled too, once; nothing was sent again.
    assert_eq!(sb.transfers().len(), 2);
    assert_eq!(transfers_with(&sb, id.get()), 1, "paid once");
}

/// Held up: the reconciliation of the day never matches an abandoned row silently. With the
/// late request arrived, the transfer the journal holds as refused (abandoned) is a
/// `RefusedInJournal` finding; without it, the abandoned row is no finding and the report is clean.
#[tokio::test]
async fn reconcile_reports_an_abandoned_rows_late_transfer() {
    let d = dir("reconcile");
    let sb = sandbox().await;
    let j = journal(&d).await;
    let from = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let (_batch, row) = a_row_for_a_person(&sb, &j, &d, "reconcile", 2).await;
    let id = row.request_id.expect("id");
    abandon(&sb, &j, &row).await;
    let to = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let f = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    let range = ReportRange::starting(&from.format(&f).expect("format"))
        .expect("from")
        .until(&to.format(&f).expect("format"))
        .expect("to");
    let report = reconcile::transfers(&j, &client(&sb, 2), &range, from, to)
        .await
        .expect("reconcile");
    assert!(
        report.is_clean(),
        "nothing went out for the abandoned row: {report:?}"
    );
    let entry = j
        .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
        .await
        .expect("read")
        .expect("entry");
    let late = PreparedTransfer::from_stored(id, entry.request.clone()).expect("stored");
    let _ = client(&sb, 0).send(&late).await.expect("arrives late");
    let report = reconcile::transfers(&j, &client(&sb, 2), &range, from, to)
        .await
        .expect("reconcile");
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.request_id == Some(id) && f.kind == FindingKind::RefusedInJournal),
        "the abandoned row's late transfer is not reported: {report:?}"
    );
    assert!(!report.is_clean());
}

/// A one-row batch, paid, whose cancel run's cancel never reached the service (its request
/// dropped, no retries) and which a recovery "days later" handed to a person; the person
/// abandons that cancel (the transfer is SENT, not cancelled). Returns the batch, the row's
/// Request-id and the cancel's key.
async fn a_cancel_abandoned(
    sb: &Sandbox,
    j: &Journal,
    d: &Path,
    name: &str,
) -> (Batch, whish_core::RequestId, String) {
    let file = d.join(format!("{name}.csv"));
    write(&file, &csv_rows(name, 1, "15"));
    let batch = Batch::new(name, &file, defaults()).expect("batch");
    let (summary, results) = run(&batch, j, &client(sb, 2), &RunOptions::new()).await;
    assert!(summary.expect("run").all_accepted(), "setup: {results:?}");
    let id = results[0].request_id.expect("id");
    sb.inject(Endpoint::TransferCancel, Fault::DropRequest, 1);
    let before = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let rows = follow(&batch, j, &client(sb, 0), Some(before)).await;
    assert_eq!(rows[0].cancel, Some(RowOutcome::Unknown), "setup: {rows:?}");
    let r = j
        .recover(
            &Clients::new().transfer(client(sb, 0)),
            &Recovery::new().deadline(Duration::ZERO),
        )
        .await
        .expect("recover");
    assert_eq!(r.needs_operator, 1, "setup: {r:?}");
    let key = j
        .list(&Listing::new().state(State::NeedsOperator))
        .await
        .expect("list")
        .into_iter()
        .find(|e| e.operation == Operation::Cancel)
        .expect("the cancel waiting")
        .key;
    let done = j
        .abandon(
            &Clients::new().transfer(client(sb, 0)),
            Service::MoneyTransfer,
            Operation::Cancel,
            &key,
            "the receiver is coming tomorrow",
        )
        .await
        .expect("abandon");
    assert!(
        matches!(done, Abandoned::Recorded { .. }),
        "setup: {done:?}"
    );
    assert_eq!(status_of(sb, id.get()), vec!["SENT".to_owned()], "setup");
    (batch, id, key)
}

/// A cancel run over a row whose batch cancel a
/// person abandoned (the transfer still SENT). Nothing goes to the service and the transfer still
/// waits (held up), but the row says `cancel: refused`, `source: cancel`, message "the service
/// refused the cancel: journal: ... was refused (abandoned by a person ...) and is final ...;
/// nothing was sent": the service never received it. `follow_up.rs` `cancel()` sends an entry the
/// journal holds as final (refused/abandoned) and words the journal's `already_refused` as the
/// service's refusal.
#[tokio::test]
async fn a_cancel_run_over_an_abandoned_cancel_sends_nothing_and_blames_no_one() {
    let d = dir("cancel-abandoned");
    let sb = sandbox().await;
    let j = journal(&d).await;
    let (batch, id, _key) = a_cancel_abandoned(&sb, &j, &d, "cancelabandoned").await;
    let cancels = calls(&sb, Endpoint::TransferCancel);
    let before = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let rows = follow(&batch, &j, &client(&sb, 2), Some(before)).await;
    let mine = &rows[0];
    assert_eq!(calls(&sb, Endpoint::TransferCancel), cancels, "{mine:?}");
    assert_eq!(status_of(&sb, id.get()), vec!["SENT".to_owned()]);
    assert_eq!(mine.collection, Collection::Waiting, "{mine:?}");
    assert!(!mine.cancelled_now, "{mine:?}");
    assert!(
        !mine
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("the service refused"),
        "the service never received this cancel; a person abandoned it: {mine:?}"
    );
}

/// Held up: a plain follow-up of a row whose batch cancel a person abandoned, after the receiver
/// collected: collected (the service's word), the cancel refused (closed), nothing sent.
#[tokio::test]
async fn the_follow_up_of_a_collected_row_with_an_abandoned_cancel() {
    let d = dir("cancel-collected");
    let sb = sandbox().await;
    let j = journal(&d).await;
    let (batch, id, _key) = a_cancel_abandoned(&sb, &j, &d, "cancelcollected").await;
    let ltn = sb
        .transfers()
        .into_iter()
        .find(|t| t.request_id == id.get())
        .expect("transfer")
        .ltn_number;
    sb.collect_cash(&ltn).await.expect("collected");
    let cancels = calls(&sb, Endpoint::TransferCancel);
    for cancel_before in [
        None,
        Some(OffsetDateTime::now_utc() + time::Duration::hours(1)),
    ] {
        let rows = follow(&batch, &j, &client(&sb, 2), cancel_before).await;
        let mine = &rows[0];
        assert_eq!(mine.collection, Collection::Collected, "{mine:?}");
        assert!(!mine.cancelled_now, "{mine:?}");
        assert_eq!(mine.cancel, Some(RowOutcome::Refused), "{mine:?}");
    }
    assert_eq!(calls(&sb, Endpoint::TransferCancel), cancels);
    assert_eq!(status_of(&sb, id.get()), vec!["RECEIVED".to_owned()]);
}
