#![allow(dead_code, missing_docs)]
//! The follow-up reads the activity log once for a window built from the
//! journal's clock (a day either side). When the service's clock disagrees with the journal's
//! by more than that (its events fall outside the window), or events land after the window's
//! end, the follow-up must still tell each row as the service holds it (by status), before and
//! after a cancel of what waits; and the rows it settles from the log must agree too.

use std::collections::HashMap;

use time::OffsetDateTime;
use whish_payouts::{Collection, FollowUpRow, Source};

use crate::support::*;

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

/// Each row against the sandbox's own record of its transfer.
fn check(sb: &Sandbox, rows: &[FollowUpRow], what: &str) -> Vec<String> {
    let truth: HashMap<i64, String> = sb
        .transfers()
        .into_iter()
        .map(|t| (t.request_id, t.status))
        .collect();
    let mut lies = Vec::new();
    let mut sources: HashMap<Source, usize> = HashMap::new();
    for r in rows {
        *sources.entry(r.source).or_default() += 1;
        let id = r.request_id.map(|i| i.get()).unwrap_or_default();
        let status = truth.get(&id).map(String::as_str);
        let agrees = matches!(
            (r.collection, status),
            (Collection::Collected, Some("RECEIVED"))
                | (Collection::Waiting, Some("SENT"))
                | (Collection::Cancelled, Some("CANCELED_FULL"))
                | (Collection::NotPaid, None)
        );
        if !agrees {
            lies.push(format!(
                "{what}: line {} (Request-id {id}) is {:?} by {:?}, the service holds {status:?}",
                r.line, r.collection, r.source
            ));
        }
    }
    eprintln!("{what}: sources {sources:?}");
    lies
}

async fn scenario(sb: Sandbox, advance_after_send: Option<Duration>, name: &str) {
    let d = dir(name);
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(&file, &csv_rows(30, "10"));
    let batch = Batch::new(name.to_owned(), &file, defaults()).expect("batch");
    let j = journal(&d).await;
    let (s, _) = run(&batch, &j, &c, &RunOptions::new().concurrency(4)).await;
    assert!(s.expect("run").all_accepted());
    if let Some(by) = advance_after_send {
        sb.advance_clock(by).expect("advance");
    }
    let collected = sb.collect_share(0.4).await;
    eprintln!("{name}: {} collected", collected.len());
    let mut lies = check(&sb, &follow(&batch, &j, &c, None).await, "follow-up");
    let later = OffsetDateTime::now_utc() + time::Duration::hours(1);
    lies.extend(check(
        &sb,
        &follow(&batch, &j, &c, Some(later)).await,
        "cancel",
    ));
    // A few more collected after the cancels: none can be (all were cancelled or collected).
    let _ = sb.collect_share(1.0).await;
    lies.extend(check(
        &sb,
        &follow(&batch, &j, &c, None).await,
        "after cancel",
    ));
    j.close().await;
    assert!(lies.is_empty(), "{}", lies.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_up_tells_the_truth_when_the_service_clock_is_days_behind() {
    let plenty = Decimal::from(10_000_000u64);
    let sb = Sandbox::builder()
        .transfer_balance("USD", plenty)
        .limits("USD", plenty, plenty)
        .clock(OffsetDateTime::now_utc() - time::Duration::days(3))
        .start()
        .await
        .expect("sandbox");
    scenario(sb, None, "clock-behind").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_up_tells_the_truth_when_collections_are_dated_after_the_window() {
    let sb = sandbox(10_000_000).await;
    scenario(
        sb,
        Some(Duration::from_secs(3 * 86_400)),
        "collections-later",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_up_tells_the_truth_with_the_clocks_agreeing() {
    let sb = sandbox(10_000_000).await;
    scenario(sb, None, "clocks-agree").await;
}
