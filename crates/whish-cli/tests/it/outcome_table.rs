//! The outcome table of docs/architecture.md walked through the command and the journal: for
//! each of the five money-moving operations, every row (what went wrong on the wire) gives the
//! verdict's exit code, the journal state the verdict maps to, and the two agree.

use std::time::Duration;

use crate::support::ops::{OPS, Op, command};
use crate::support::*;
use whish_sandbox::{Fault, Sandbox};

/// One row: the faults queued on the operation's endpoint, the command's extra flags, and the
/// expected verdict (`outcome` in the JSON), exit code and journal state.
struct Row {
    name: &'static str,
    faults: Vec<(Fault, u32)>,
    flags: &'static [&'static str],
    verdict: &'static str,
    exit: i32,
    state: &'static str,
}

fn rows() -> Vec<Row> {
    let no_retry: &'static [&'static str] = &["--retries", "0"];
    vec![
        Row {
            name: "accepted",
            faults: vec![],
            flags: no_retry,
            verdict: "accepted",
            exit: 0,
            state: "accepted",
        },
        Row {
            name: "a failure code",
            faults: vec![(Fault::Code("test.refused"), 1)],
            flags: no_retry,
            verdict: "refused",
            exit: 1,
            state: "refused",
        },
        Row {
            name: "a code documented as retryable with the same key",
            faults: vec![(Fault::Code("fatal"), 1)],
            flags: no_retry,
            verdict: "unknown",
            exit: 4,
            state: "may-have-arrived",
        },
        Row {
            name: "Pending",
            faults: vec![(Fault::Pending, 1)],
            flags: no_retry,
            verdict: "pending",
            exit: 3,
            state: "pending",
        },
        // Something in front of the service answered, and may have passed the request on
        // first (a WAF that blocks the reply): unknown. The collect create's 403 is the service's
        // own refusal of a non-public address, and a page with that status cannot be told from
        // it (see `own_403`).
        Row {
            name: "a 403 page on a first attempt",
            faults: vec![(Fault::Page(403), 1)],
            flags: no_retry,
            verdict: "unknown",
            exit: 4,
            state: "may-have-arrived",
        },
        Row {
            name: "a 429 page on a first attempt",
            faults: vec![(Fault::Page(429), 1)],
            flags: no_retry,
            verdict: "unknown",
            exit: 4,
            state: "may-have-arrived",
        },
        Row {
            name: "a 502 page on a first attempt",
            faults: vec![(Fault::Page(502), 1)],
            flags: no_retry,
            verdict: "unknown",
            exit: 4,
            state: "may-have-arrived",
        },
        Row {
            name: "a timeout, then a 403 page",
            faults: vec![
                (Fault::Delay(Duration::from_millis(2500)), 1),
                (Fault::Page(403), 1),
            ],
            flags: &["--retries", "1", "--timeout", "0.6"],
            verdict: "unknown",
            exit: 4,
            state: "may-have-arrived",
        },
        Row {
            name: "a timeout, then a 429 page",
            faults: vec![
                (Fault::Delay(Duration::from_millis(2500)), 1),
                (Fault::Page(429), 1),
            ],
            flags: &["--retries", "1", "--timeout", "0.6"],
            verdict: "unknown",
            exit: 4,
            state: "may-have-arrived",
        },
        Row {
            name: "a dropped reply",
            faults: vec![(Fault::DropReply, 1)],
            flags: no_retry,
            verdict: "unknown",
            exit: 4,
            state: "may-have-arrived",
        },
    ]
}

/// The exit code the table gives a journal state: the two columns must agree.
fn exit_of_state(state: &str) -> i32 {
    match state {
        "accepted" => 0,
        "refused" => 1,
        "pending" => 3,
        "may-have-arrived" => 4,
        other => panic!("no exit code for {other}"),
    }
}

/// The journal state of the one entry a run recorded (a cancel's key is its own Request-id,
/// printed on stderr by no one: read the newest cancel entry instead).
async fn journal_state(env: &[(String, String)], op: &Op, key: &str) -> String {
    let list = whish(&["journal", "list"], env).await;
    assert_eq!(list.code, 0, "{list:?}");
    let entries: Vec<serde_json::Value> = list
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let operation = match op.service_flag {
        "send" => "send",
        "cancel" => "cancel",
        "create" => "create",
        "refund" => "refund",
        _ => "pay",
    };
    // Newest first: the first match is the run's own.
    let entry = entries
        .iter()
        .find(|e| e["operation"] == operation && (key.is_empty() || e["key"] == key))
        .unwrap_or_else(|| panic!("no {operation} entry {key} in {entries:?}"));
    entry["state"].as_str().expect("state").to_owned()
}

/// The one status a service documents as its own answer without the envelope: the collect
/// service's 403 for create (a non-public address), a refusal on a first attempt.
fn own_403(op: &Op, row: Row) -> Row {
    if op.service_flag == "create" && row.name == "a 403 page on a first attempt" {
        return Row {
            verdict: "refused",
            exit: 1,
            state: "refused",
            ..row
        };
    }
    row
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_the_outcome_table_agrees_in_the_command_and_the_journal() {
    let (sb, env) = lenient_sandbox_with_journal("table-journal.sqlite").await;
    let mut n = 0;
    for op in &OPS {
        for row in rows() {
            // A cancel is never resent within a call (the service defines no safe resend for
            // it), so a second fault in one call cannot happen: its rows with one fault cover it.
            if op.service_flag == "cancel" && row.faults.len() > 1 {
                continue;
            }
            // `fatal` is the collect service's ("retry with the same externalId").
            if row.name.contains("retryable") && !matches!(op.service_flag, "create" | "refund") {
                continue;
            }
            n += 1;
            let row = own_403(op, row);
            let (mut args, key) = command(&sb, &env, op, n).await;
            for (fault, count) in &row.faults {
                sb.inject(op.endpoint, *fault, *count);
            }
            args.extend(row.flags.iter().map(|f| (*f).to_owned()));
            let run = whish(&strs(&args), &env).await;
            let what = format!("{} / {}: {run:?}", op.name, row.name);
            assert_eq!(run.code, row.exit, "{what}");
            if run.code != 0 {
                assert_eq!(run.json()["outcome"], row.verdict, "{what}");
            }
            let state = journal_state(&env, op, &key).await;
            assert_eq!(state, row.state, "{what}");
            assert_eq!(
                exit_of_state(&state),
                run.code,
                "exit and journal agree: {what}"
            );
            assert_eq!(
                sb.queued_faults(op.endpoint),
                0,
                "every fault was met: {what}"
            );
            // The next step is said in the service's own terms.
            if op.service_flag == "pay" && run.code != 0 {
                assert!(!run.stderr.contains("status"), "top-up has none: {what}");
            }
            if op.service_flag == "send" && row.verdict == "pending" {
                assert!(
                    run.stderr.contains("status endpoint by the Request-id"),
                    "{what}"
                );
            }
        }
    }
    // And a connection that never opens: nothing sent, exit 2, recorded `refused` (not-sent).
    let mut nowhere = env.clone();
    for (k, v) in &mut nowhere {
        if k == "WHISH_TRANSFER_BASE_URL" {
            *v = "http://127.0.0.1:9/api".to_owned();
        }
    }
    let body = temp_file("send.json", &cash_body("100"));
    let run = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body.display().to_string(),
            "--request-id",
            "970000001",
            "--retries",
            "0",
        ],
        &nowhere,
    )
    .await;
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.json()["outcome"], "not-sent", "{run:?}");
    assert_eq!(journal_state(&env, &OPS[0], "970000001").await, "refused");
}

/// The same command run twice after `transfer.already.done` on its first attempt (the
/// Request-id belongs to another transfer): the second run is not sent and does not turn the
/// refusal into a confirmation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_send_run_again_stays_refused() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let env = sb.env_vars();
    let first = temp_file("a.json", &cash_body("100"));
    let other = temp_file("b.json", &cash_body("120"));
    let a = whish(
        &[
            "transfer",
            "send",
            "--body",
            &first.display().to_string(),
            "--request-id",
            "961000001",
        ],
        &env,
    )
    .await;
    assert_eq!(a.code, 0, "{a:?}");
    let args = [
        "transfer",
        "send",
        "--body",
        &other.display().to_string(),
        "--request-id",
        "961000001",
    ];
    // Another body under the same Request-id, in a journal that has not seen it: a fresh
    // journal for this half, so the journal's own "different request" check is not what
    // answers.
    let mut fresh = env.clone();
    let j = temp_file("j.sqlite", "").with_file_name("refused-again.sqlite");
    fresh.push(journal_at(&j));
    let b = whish(&args, &fresh).await;
    assert_eq!(b.code, 1, "{b:?}");
    assert_eq!(b.json()["code"], "transfer.already.done");
    let sends = sb.requests().len();
    let again = whish(&args, &fresh).await;
    assert_eq!(again.code, 1, "still refused, not confirmed: {again:?}");
    assert!(again.stderr.contains("was refused"), "{again:?}");
    assert!(!again.stdout.contains("confirmed"), "{again:?}");
    assert_eq!(sb.requests().len(), sends, "nothing was sent");
}
