//! `whish payouts cancel` killed with SIGKILL part way and run again
//! with the host's clock moved (faketime), then `follow-up` across midnight; and a cancel left
//! open, run again with the clock stepped forward past the journal's recovery deadline. Every
//! uncollected row must be cancelled exactly once, and every report must be true.
//!
//! Needs `faketime` (/usr/bin/faketime); says so when it is not there (and fails under CI).

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::cancel::*;
use crate::support::*;
use serde_json::Value;
use whish_sandbox::{Endpoint, Fault, Sandbox};

const FAKETIME: &str = "/usr/bin/faketime";

/// `whish args...`, under `faketime -f offset` when one is given.
fn command(args: &[String], env: &[(String, String)], offset: Option<&str>) -> Command {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match offset {
        Some(o) => whish_command(&args, env, Some(&[FAKETIME, "-f", o])),
        None => whish_command(&args, env, None),
    }
}

async fn run_at(args: Vec<String>, env: Vec<(String, String)>, offset: Option<&str>) -> Run {
    let offset = offset.map(str::to_owned);
    tokio::task::spawn_blocking(move || {
        Run::of(
            command(&args, &env, offset.as_deref())
                .output()
                .expect("run whish"),
        )
    })
    .await
    .expect("join")
}

fn cancelled(sb: &Sandbox) -> usize {
    sb.transfers()
        .iter()
        .filter(|t| t.status == "CANCELED_FULL")
        .count()
}

/// The distinct cancel Request-ids the sandbox received, per LTN.
fn cancels_by_ltn(sb: &Sandbox) -> BTreeMap<String, BTreeSet<String>> {
    let mut by: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in sb.requests() {
        if r.endpoint != Endpoint::TransferCancel {
            continue;
        }
        let ltn = serde_json::from_str::<Value>(&r.body).expect("body")["ltnNumber"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let id = request_id_of(&r).unwrap_or_default();
        by.entry(ltn).or_default().insert(id);
    }
    by
}

fn faketime_here() -> bool {
    let ok = std::path::Path::new(FAKETIME).exists();
    if !ok {
        whish_testkit::not_run(
            "cancel::killed_clock_moved",
            "the test",
            "faketime is not installed (Debian package faketime)",
        );
    }
    ok
}

/// 16 rows waiting. The cancel run (8 in flight; each cancel applied at once and
/// answered 2 s later) is killed with SIGKILL once 8 cancels are applied and none answered. The
/// same command is run again with the clock three hours back, then a follow-up with the clock
/// 25 hours ahead (the next day), then the cancel once more at +25 h: every row cancelled, each
/// by one cancel (one Request-id per LTN on the wire), the journal holding nothing open and
/// one accepted cancel a row, every file row `cancelled`, exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_run_killed_and_run_again_with_the_clock_moved_cancels_each_row_once() {
    if !faketime_here() {
        return;
    }
    const ROWS: usize = 16;
    let s = sent_batch("kill-clock", ROWS).await;
    s.sb.inject(
        Endpoint::TransferCancel,
        Fault::Delay(Duration::from_secs(2)),
        ROWS as u32,
    );
    let cutoff = in_an_hour();
    let (a1, _) = payouts_args(&s, Some(&cutoff), "cancel-killed.jsonl");
    let mut child = command(&a1, &s.env, None)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let started = Instant::now();
    while cancelled(&s.sb) < 8 && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let killed_at = cancelled(&s.sb);
    assert!(
        (1..ROWS).contains(&killed_at),
        "setup: killed part way ({killed_at} of {ROWS} cancelled)"
    );
    let open = open_entries(&s).await;
    assert!(!open.is_empty(), "setup: the killed run left cancels open");

    // Again, with the host's clock three hours back.
    let (a2, r2) = payouts_args(&s, Some(&cutoff), "cancel-2.jsonl");
    let again = run_at(a2, s.env.clone(), Some("-3h")).await;
    let rows2 = rows_of(&r2);

    // A follow-up the next day (+25 h, across midnight), and the cancel once more then.
    let (a3, r3) = payouts_args(&s, None, "follow-up.jsonl");
    let follow = run_at(a3, s.env.clone(), Some("+25h")).await;
    let rows3 = rows_of(&r3);
    let (a4, r4) = payouts_args(&s, Some(&cutoff), "cancel-3.jsonl");
    let third = run_at(a4, s.env.clone(), Some("+25h")).await;
    let rows4 = rows_of(&r4);

    let by_ltn = cancels_by_ltn(&s.sb);
    let twice: Vec<_> = by_ltn.iter().filter(|(_, ids)| ids.len() > 1).collect();
    let open = open_entries(&s).await;
    let accepted_cancels = journal_lines(&s, &["--state", "accepted"])
        .await
        .iter()
        .filter(|l| l["operation"] == "cancel")
        .count();
    let claimed: u64 = [&again, &third]
        .iter()
        .map(|r| r.json()["cancelled"].as_u64().unwrap_or(0))
        .sum();
    let report = format!(
        "killed after {killed_at} applied; run 2 (-3h) exit {} {:?}; follow-up (+25h) exit {} {:?}; run 3 (+25h) exit {} {:?}; sandbox cancelled {}; cancel ids per LTN {by_ltn:?}; open {open:?}; accepted cancels in the journal {accepted_cancels}; `cancelled` claimed by the runs {claimed}",
        again.code,
        again.stdout,
        follow.code,
        follow.stdout,
        third.code,
        third.stdout,
        cancelled(&s.sb)
    );
    eprintln!("probe 6: {report}");
    assert_eq!(cancelled(&s.sb), ROWS, "{report}");
    assert!(
        twice.is_empty(),
        "a row cancelled under two Request-ids: {twice:?}; {report}"
    );
    assert!(open.is_empty(), "{report}");
    assert_eq!(accepted_cancels, ROWS, "{report}");
    for (name, run, rows) in [
        ("run 2", &again, &rows2),
        ("follow-up", &follow, &rows3),
        ("run 3", &third, &rows4),
    ] {
        assert_eq!(run.code, 0, "{name}: {report}");
        assert_eq!(rows.len(), ROWS, "{name}: {report}");
        assert!(
            rows.iter().all(|r| r["collection"] == "cancelled"),
            "{name}: {rows:?}; {report}"
        );
    }
}

/// A cancel that did not arrive (the connection closed before the sandbox applied it)
/// is left open by the first cancel run (exit 3, `unknown`). The host clock then steps 25 hours
/// forward (an NTP step, a VM restored) and the cancel is run again: the journal's recovery
/// finds the entry past its 24 h deadline and hands it to an operator, "nothing was sent". What
/// the run then reports, and what the journal then says, must be what the sandbox holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_left_open_then_run_with_the_clock_a_day_ahead_reports_the_truth() {
    if !faketime_here() {
        return;
    }
    let s = sent_batch("clock-deadline", 1).await;
    s.sb.inject(Endpoint::TransferCancel, Fault::DropRequest, 1);
    let cutoff = in_an_hour();
    let (a1, r1) = payouts_args(&s, Some(&cutoff), "cancel-1.jsonl");
    let first = run_at(a1, s.env.clone(), None).await;
    let rows1 = rows_of(&r1);
    assert_eq!(first.code, 3, "setup: {first:?}");
    assert_eq!(rows1[0]["cancel"], "unknown", "setup: {rows1:?}");
    assert_eq!(cancelled(&s.sb), 0, "setup: the cancel did not arrive");

    let (a2, r2) = payouts_args(&s, Some(&cutoff), "cancel-2.jsonl");
    let again = run_at(a2, s.env.clone(), Some("+25h")).await;
    let rows2 = rows_of(&r2);
    let entries = journal_lines(&s, &[]).await;
    let cancel_entry = entries
        .iter()
        .find(|l| l["operation"] == "cancel")
        .cloned()
        .unwrap_or_default();
    let status = s.sb.transfers()[0].status.clone();
    let wire = cancels_by_ltn(&s.sb);
    let report = format!(
        "run 2 (+25h) exit {} {:?} rows {rows2:?}; journal's cancel entry {cancel_entry}; sandbox {status}; cancels on the wire {wire:?}; stderr {}",
        again.code, again.stdout, again.stderr
    );
    eprintln!("probe 7: {report}");
    // The truth: if the transfer is cancelled now, the journal holds the batch's cancel accepted
    // and the row says cancelled; if not, the row says so and the run is not exit 0.
    if status == "CANCELED_FULL" {
        assert!(
            cancel_entry["state"] == "accepted",
            "the cancel applied; the journal says otherwise: {report}"
        );
        assert_eq!(rows2[0]["collection"], "cancelled", "{report}");
    } else {
        assert_ne!(again.code, 0, "{report}");
        assert_ne!(rows2[0]["collection"], "cancelled", "{report}");
    }
}
