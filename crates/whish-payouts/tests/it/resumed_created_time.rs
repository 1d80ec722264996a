#![allow(dead_code, missing_docs)]
//! A stopped batch records the rows it leaves as never sent; a reopened entry is recorded as
//! created when it is taken again to be sent, so everything that reads `created` as "when the row
//! was sent" agrees with the service: `cancel_uncollected(before)` never cancels transfers created
//! after `before`, the follow-up's `sent_at` never predates the transfer, and a reconciliation of
//! a window ending before the second run finds nothing lost.

use std::collections::HashSet;

use time::OffsetDateTime;
use time::macros::format_description;
use whish_money_transfer::ReportRange;
use whish_payouts::reconcile::{self, FindingKind};
use whish_payouts::{Collection, FollowUpRow, RowOutcome, StopSignal};

use crate::support::*;

/// Run 1 is stopped (Ctrl-C) after its first row: the rest of the file is recorded as never
/// sent at that moment. Some time later (`before` falls in between), run 2 sends the rest.
/// Returns the Request-ids paid by run 1 and by run 2, and `before`.
async fn stopped_then_resumed(
    d: &Path,
    sb: &Sandbox,
    batch: &Batch,
    j: &Journal,
) -> (HashSet<i64>, HashSet<i64>, OffsetDateTime) {
    let c = client(sb);
    let stop = StopSignal::new();
    let options = RunOptions::new().concurrency(1).stop_signal(stop.clone());
    let mut first: Vec<RowResult> = Vec::new();
    let s1 = batch
        .run(j, &c, &options, &mut |r| {
            first.push(r.clone());
            stop.stop("ctrl-c");
            Ok(())
        })
        .await
        .expect("run 1");
    eprintln!("run 1: {:?}", s1.outcomes);
    let run1: HashSet<i64> = first
        .iter()
        .filter(|r| r.outcome == RowOutcome::Accepted)
        .filter_map(|r| r.request_id.map(|i| i.get()))
        .collect();
    let unsent = first
        .iter()
        .filter(|r| r.outcome == RowOutcome::NotSent)
        .count();
    assert!(
        !run1.is_empty() && unsent > 20,
        "the test needs a stopped run"
    );
    // The entries recorded by record_unsent (not given back reservations): their message is
    // the stop's.
    let recorded = j
        .list(&whish_journal::Listing::new().state(whish_journal::State::Refused))
        .await
        .expect("list")
        .into_iter()
        .filter(|e| {
            e.outcome
                .as_ref()
                .and_then(|o| o.message.as_deref())
                .is_some_and(|m| m.contains("ctrl-c"))
        })
        .count();
    eprintln!("run 1 recorded {recorded} rows unsent with the stop's message");
    assert!(recorded > 0, "record_unsent recorded rows");

    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let before = OffsetDateTime::now_utc();
    tokio::time::sleep(Duration::from_millis(2_500)).await;

    let paid_before: HashSet<i64> = sb.transfers().iter().map(|t| t.request_id).collect();
    let (s2, rows) = run(batch, j, &c, &RunOptions::new().concurrency(4)).await;
    eprintln!("run 2: {:?}", s2.expect("run 2").outcomes);
    let run2: HashSet<i64> = rows
        .iter()
        .filter(|r| r.outcome == RowOutcome::Accepted && !r.earlier_run)
        .filter_map(|r| r.request_id.map(|i| i.get()))
        .collect();
    // Truth: every transfer run 2 made was created at the service after `before`.
    for id in &run2 {
        assert!(!paid_before.contains(id), "run 2 paid {id} itself");
    }
    assert_eq!(run1.len() + run2.len(), 40);
    let _ = d;
    (run1, run2, before)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_uncollected_never_cancels_rows_sent_after_the_cutoff() {
    let d = dir("created-cancel");
    let sb = sandbox(1_000_000).await;
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(&file, &csv_rows(40, "10"));
    let batch = Batch::new("created-cancel", &file, defaults()).expect("batch");
    let j = journal(&d).await;
    let (run1, run2, before) = stopped_then_resumed(&d, &sb, &batch, &j).await;

    // Cancel what was sent before `before` and is still waiting: run 1's rows only.
    let mut rows: Vec<FollowUpRow> = Vec::new();
    batch
        .cancel_uncollected(&j, &c, before, "not collected in time", 4, &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("cancel");
    rows.sort_by_key(|r| r.line);
    let mut lies = Vec::new();
    for r in &rows {
        let Some(id) = r.request_id.map(|i| i.get()) else {
            continue;
        };
        if run2.contains(&id) {
            if r.cancelled_now {
                lies.push(format!(
                    "line {}: Request-id {id} was created at the service after the cutoff {before} (run 2), yet cancel_uncollected cancelled it (sent_at {:?})",
                    r.line, r.sent_at
                ));
            }
            if r.sent_at.is_some_and(|s| s < before) {
                lies.push(format!(
                    "line {}: follow-up says Request-id {id} was sent at {:?}, before the cutoff; the service created it after {before}",
                    r.line, r.sent_at
                ));
            }
        }
    }
    let cancelled_at_service: HashSet<i64> = sb
        .transfers()
        .iter()
        .filter(|t| t.status == "CANCELED_FULL")
        .map(|t| t.request_id)
        .collect();
    let wrongly = cancelled_at_service.intersection(&run2).count();
    eprintln!(
        "run 1 paid {}, run 2 paid {}; cancelled at the service: {} ({wrongly} of run 2's)",
        run1.len(),
        run2.len(),
        cancelled_at_service.len()
    );
    j.close().await;
    assert!(
        lies.is_empty(),
        "{} lies:\n{}",
        lies.len(),
        lies.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
    assert_eq!(wrongly, 0, "rows sent after the cutoff were cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_of_a_window_before_the_resume_finds_nothing_lost() {
    let d = dir("created-reconcile");
    let sb = sandbox(1_000_000).await;
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(&file, &csv_rows(40, "10"));
    let batch = Batch::new("created-reconcile", &file, defaults()).expect("batch");
    let j = journal(&d).await;
    let from = OffsetDateTime::now_utc() - time::Duration::minutes(5);
    let (run1, run2, before) = stopped_then_resumed(&d, &sb, &batch, &j).await;

    // Yesterday's reconciliation, run today: the window ends before run 2 sent anything.
    let f = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    let range = ReportRange::starting(&from.format(&f).expect("format"))
        .expect("from")
        .until(&before.format(&f).expect("format"))
        .expect("to");
    let report = reconcile::transfers(&j, &c, &range, from, before)
        .await
        .expect("reconcile");
    let missing: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::MissingAtService)
        .collect();
    eprintln!(
        "run 1 paid {}, run 2 paid {}; journal_sends in window {}, MissingAtService {}",
        run1.len(),
        run2.len(),
        report.journal_sends,
        missing.len()
    );
    j.close().await;
    // Truth: in this window the service created exactly run 1's transfers, and lost none.
    assert!(
        missing.is_empty(),
        "{} false MissingAtService findings (transfers the service made after the window), e.g. {:?}",
        missing.len(),
        missing.first().map(|f| &f.message)
    );
    assert_eq!(
        report.journal_sends,
        run1.len() as u64,
        "the journal's sends in the window"
    );
    let _ = Collection::Waiting;
}
