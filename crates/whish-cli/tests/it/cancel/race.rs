//! Two `whish payouts cancel` runs of the same batch at once (two
//! processes sharing one SQLite journal, every cancel held 1.5 s by the service), and one run
//! killed with SIGKILL while its cancels are in flight, the other started right after. Each row
//! must be cancelled once, the journal must end with no cancel open, and neither run may report
//! a row `refused`, `waiting`, or exit 0 or 1 while one of its rows' cancel is open or was made by
//! the other.

use std::process::Stdio;
use std::time::Duration;

use crate::support::cancel::*;
use crate::support::*;
use serde_json::Value;
use whish_sandbox::{Endpoint, Fault};

fn spawn(args: &[String], env: &[(String, String)]) -> std::process::Child {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    whish_command(&args, env, None)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

fn finish(child: std::process::Child) -> Run {
    Run::of(child.wait_with_output().expect("wait"))
}

fn distinct_cancels(sb: &whish_sandbox::Sandbox) -> usize {
    request_ids(sb, Endpoint::TransferCancel)
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// A run's report is true: exit 0 only with every row cancelled by the batch (no cancel open
/// in the journal for it), never a row `waiting` or `refused` for a transfer the sandbox holds
/// cancelled by the batch.
fn lies(name: &str, run: &Run, rows: &[Value], open: usize) -> Vec<String> {
    let mut out = Vec::new();
    for r in rows {
        if r["collection"] == "waiting" {
            out.push(format!("{name}: row {} says waiting: {r}", r["line"]));
        }
        if r["cancel"] == "refused" {
            out.push(format!(
                "{name}: row {} says its cancel refused: {r}",
                r["line"]
            ));
        }
    }
    if run.code == 0 && (open > 0 || rows.iter().any(|r| r["cancelled_now"] != true)) {
        out.push(format!(
            "{name}: exit 0 with {open} cancel(s) open, rows {rows:?}"
        ));
    }
    if run.code == 1 {
        out.push(format!(
            "{name}: exit 1 (a cancel refused while waiting): {run:?} {rows:?}"
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_cancel_runs_at_once_cancel_each_row_once_and_both_tell_the_truth() {
    let s = sent_batch("race-two", 4).await;
    s.sb.inject(
        Endpoint::TransferCancel,
        Fault::Delay(Duration::from_millis(1500)),
        8,
    );
    let cutoff = in_an_hour();
    let (a_args, a_out) = payouts_args(&s, Some(&cutoff), "cancel-a.jsonl");
    let (b_args, b_out) = payouts_args(&s, Some(&cutoff), "cancel-b.jsonl");
    let env = s.env.clone();
    let (a, b) = tokio::task::spawn_blocking(move || {
        let a = spawn(&a_args, &env);
        std::thread::sleep(Duration::from_millis(300));
        let b = spawn(&b_args, &env);
        (finish(a), finish(b))
    })
    .await
    .expect("join");
    let (ra, rb) = (rows_of(&a_out), rows_of(&b_out));
    let open = open_entries(&s).await.len();
    let status = sandbox_status(&s.sb);
    let report = format!(
        "A exit {} {} rows {ra:?}\nB exit {} {} rows {rb:?}\nopen {open}; sandbox {status:?}; cancels on the wire {:?}",
        a.code,
        a.stdout.trim(),
        b.code,
        b.stdout.trim(),
        request_ids(&s.sb, Endpoint::TransferCancel)
    );
    eprintln!("{report}");
    assert_eq!(status, ["CANCELED_FULL"; 4], "{report}");
    assert_eq!(distinct_cancels(&s.sb), 4, "one cancel a row: {report}");
    let mut l = lies("A", &a, &ra, open);
    l.extend(lies("B", &b, &rb, open));
    assert!(l.is_empty(), "{}\n\n{report}", l.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_run_killed_mid_cancel_then_another_run_settles_every_row_once() {
    let s = sent_batch("race-kill", 4).await;
    s.sb.inject(
        Endpoint::TransferCancel,
        Fault::Delay(Duration::from_millis(3000)),
        4,
    );
    let cutoff = in_an_hour();
    let (a_args, _) = payouts_args(&s, Some(&cutoff), "cancel-a.jsonl");
    let mut a = spawn(&a_args, &s.env);
    // Until the four cancels have reached the service (each held 3 s before its answer).
    let t0 = std::time::Instant::now();
    while request_ids(&s.sb, Endpoint::TransferCancel).len() < 4
        && t0.elapsed() < Duration::from_secs(20)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = a.kill();
    let killed = tokio::task::spawn_blocking(move || finish(a))
        .await
        .expect("join");
    assert_eq!(killed.code, -1, "setup: killed: {killed:?}");
    let (b, rb) = payouts(&s, Some(&cutoff), "cancel-b.jsonl").await;
    let open = open_entries(&s).await.len();
    let status = sandbox_status(&s.sb);
    let report = format!(
        "B exit {} {} rows {rb:?}\nopen {open}; sandbox {status:?}; cancels on the wire {:?}",
        b.code,
        b.stdout.trim(),
        request_ids(&s.sb, Endpoint::TransferCancel)
    );
    eprintln!("{report}");
    assert_eq!(status, ["CANCELED_FULL"; 4], "{report}");
    assert_eq!(distinct_cancels(&s.sb), 4, "one cancel a row: {report}");
    assert_eq!(b.code, 0, "{report}");
    assert_eq!(open, 0, "{report}");
    assert_eq!(b.json()["cancelled"], 4, "{report}");
    let l = lies("B", &b, &rb, open);
    assert!(l.is_empty(), "{}\n\n{report}", l.join("\n"));
}
