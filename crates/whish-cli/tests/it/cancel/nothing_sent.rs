//! `whish payouts cancel` says "nothing was sent" (exit 2) after its
//! start-up recovery has sent a cancel that the service applied: when the batch's file cannot be
//! read, and when the journal cannot read a row's entry (a follow-up whose journal read fails).
//! Exit 2 is documented as "nothing was sent".

use crate::support::cancel::*;
use crate::support::*;
use whish_sandbox::{Endpoint, Fault};

/// A batch of `rows` rows whose cancel run left row 1's cancel open (it never arrived: the
/// transfer still waits) and cancelled the others.
async fn one_cancel_open(name: &str, rows: usize) -> Sent {
    let s = sent_batch(name, rows).await;
    s.sb.inject(Endpoint::TransferCancel, Fault::DropRequest, 1);
    let cutoff = in_an_hour();
    let (run, rows1) = payouts(&s, Some(&cutoff), "cancel-1.jsonl").await;
    assert_eq!(run.code, 3, "setup: {run:?}");
    assert_eq!(
        rows1.iter().filter(|r| r["cancel"] == "unknown").count(),
        1,
        "setup: {rows1:?}"
    );
    let status = sandbox_status(&s.sb);
    assert_eq!(
        status.iter().filter(|s| *s == "SENT").count(),
        1,
        "setup: one row still waits: {status:?}"
    );
    assert_eq!(open_entries(&s).await.len(), 1, "setup");
    s
}

fn applied_cancels(s: &Sent) -> usize {
    sandbox_status(&s.sb)
        .iter()
        .filter(|t| *t == "CANCELED_FULL")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_run_that_cannot_read_its_file_sends_nothing_or_says_so() {
    let s = one_cancel_open("nofile", 1).await;
    let before = (
        applied_cancels(&s),
        request_ids(&s.sb, Endpoint::TransferCancel).len(),
    );
    let missing = s.dir.join("no-such-file.csv").display().to_string();
    let cutoff = in_an_hour();
    let mut args: Vec<&str> = vec![
        "payouts",
        "cancel",
        &missing,
        "--batch",
        &s.batch,
        "--uncollected-before",
        &cutoff,
    ];
    args.extend(SENDER);
    let run = whish(&args, &s.env).await;
    let after = (
        applied_cancels(&s),
        request_ids(&s.sb, Endpoint::TransferCancel).len(),
    );
    assert!(
        run.code != 2 || after == before,
        "exit 2 ({}) while the run sent cancel(s) and the service applied them: (applied, cancel requests) before {before:?}, after {after:?}",
        run.stderr.trim()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_run_whose_journal_read_fails_sends_nothing_or_says_so() {
    let s = one_cancel_open("badentry", 2).await;
    // Another row's send entry (accepted, final: recovery does not read it) becomes unreadable.
    let sends = journal_lines(&s, &["--state", "accepted"]).await;
    let open = open_entries(&s).await;
    let open_ltn = {
        let shown = whish(
            &["journal", "show", open[0]["key"].as_str().unwrap()],
            &s.env,
        )
        .await;
        shown.json()[0]["request"]["ltnNumber"].clone()
    };
    let mut target = None;
    for e in sends.iter().filter(|e| e["operation"] == "send") {
        let shown = whish(&["journal", "show", e["key"].as_str().unwrap()], &s.env).await;
        if shown.json()[0]["references"]["ltnNumber"] != open_ltn {
            target = Some(e["key"].as_str().unwrap().to_owned());
        }
    }
    let target = target.expect("setup: the other row's send");
    let sql = format!(
        "UPDATE whish_journal_entries SET refs = '{{not json' WHERE operation = 'send' AND idem_key = '{target}';"
    );
    assert_eq!(journal_sql(&s, &sql).await, 1, "setup: one row spoiled");
    let before = (
        applied_cancels(&s),
        request_ids(&s.sb, Endpoint::TransferCancel).len(),
    );
    let cutoff = in_an_hour();
    let (run, rows) = payouts(&s, Some(&cutoff), "cancel-2.jsonl").await;
    let after = (
        applied_cancels(&s),
        request_ids(&s.sb, Endpoint::TransferCancel).len(),
    );
    assert!(
        run.code != 2 || after == before,
        "exit 2 ({}) while the run sent cancel(s) and the service applied them: (applied, cancel requests) before {before:?}, after {after:?}; rows {rows:?}",
        run.stderr.trim()
    );
}
