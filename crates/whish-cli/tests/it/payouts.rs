//! `whish payouts` and `whish reconcile` against the sandbox, as an operator runs them: a batch of
//! a few hundred rows killed with SIGKILL part way and run again (every row paid once, the results
//! file complete), its follow-up after receivers collect, and the reconciliation (exit 0, then 6
//! after a transfer made outside the journal).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;
use whish_sandbox::{Endpoint, Fault, Sandbox};

const ROWS: usize = 300;

fn lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_killed_part_way_and_run_again_pays_every_row_once_and_reconciles() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let dir = temp_file("journal-here", "")
        .parent()
        .expect("dir")
        .to_owned();
    env.push(journal_at(&dir.join("payouts.sqlite")));
    let file = cash_payouts_file("aid-2026-11-24.csv", "P", "+9617033", 4, ROWS);
    let results = dir.join("results.csv");
    let file_arg = file.display().to_string();
    let results_arg = results.display().to_string();
    let mut send = payouts_cmd("send", &file_arg, "aid-cli", &results_arg);
    send.extend(["--concurrency", "4"]);

    // Slow sends, so that the kill lands in the middle of the batch.
    sb.inject(
        Endpoint::TransferSend,
        Fault::Delay(Duration::from_millis(25)),
        ROWS as u32,
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_whish"))
        .args(&send)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn whish");
    let started = Instant::now();
    while lines(&results) < 60 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL"); // SIGKILL on Unix
    let _ = child.wait();
    let paid_at_kill = sb.transfers().len();
    assert!(
        paid_at_kill > 0 && paid_at_kill < ROWS,
        "the kill must land part way: {paid_at_kill} of {ROWS} paid"
    );

    // Run again: every row, each paid once; the results file complete.
    let again = whish(&send, &env).await;
    assert_eq!(again.code, 0, "{again:?}");
    let summary = again.json();
    assert_eq!(summary["outcomes"]["accepted"], ROWS);
    let text = std::fs::read_to_string(&results).expect("results");
    assert_eq!(
        text.lines().count(),
        ROWS + 1,
        "a header and one line per row"
    );
    assert_eq!(
        text.lines()
            .skip(1)
            .filter(|l| l.contains(",accepted,"))
            .count(),
        ROWS
    );
    let transfers = sb.transfers();
    assert_eq!(transfers.len(), ROWS, "every row paid exactly once");
    let mut ids: Vec<i64> = transfers.iter().map(|t| t.request_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), ROWS);

    // A third run sends nothing and says so.
    let before = sb.requests().last().map_or(0, |r| r.seq);
    let third = whish(&send, &env).await;
    assert_eq!(third.code, 0, "{third:?}");
    assert!(
        !sb.requests().iter().any(|r| r.seq > before),
        "a finished batch run again sends nothing"
    );

    // Receivers collect a third; the follow-up finds them.
    let collected = sb.collect_share(0.3).await.len();
    let follow_file = dir.join("follow.csv").display().to_string();
    let follow = payouts_cmd("follow-up", &file_arg, "aid-cli", &follow_file);
    let followed = whish(&follow, &env).await;
    // Rows still waiting for collection are not settled: exit 3, said on stderr.
    assert_eq!(followed.code, 3, "{followed:?}");
    assert!(
        followed.stderr.contains("still wait for collection"),
        "{followed:?}"
    );
    let rows = followed.json()["rows"].clone();
    assert_eq!(rows["collected"], collected);
    assert_eq!(rows["waiting"], ROWS - collected);
    // Once every row is collected, the follow-up says every row settled: exit 0.
    sb.collect_share(1.0).await;
    let settled = whish(&follow, &env).await;
    assert_eq!(settled.code, 0, "{settled:?}");
    assert_eq!(settled.json()["rows"]["collected"], ROWS);

    // The reconciliation of the day matches; a transfer made outside the journal does not.
    let day = |d: time::OffsetDateTime| {
        d.format(time::macros::format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second]"
        ))
        .expect("format")
    };
    let now = time::OffsetDateTime::now_utc();
    let (from, to) = (
        day(now - time::Duration::hours(2)),
        day(now + time::Duration::hours(2)),
    );
    let reconcile = ["reconcile", "transfer", "--from", &from, "--to", &to];
    let clean = whish(&reconcile, &env).await;
    assert_eq!(clean.code, 0, "{clean:?}");
    assert_eq!(clean.json()["matches"], true);
    assert_eq!(clean.json()["currencies"]["USD"]["matched"], ROWS);
    // One sum, one spelling: the run's total and the reconciliation's, at the cent.
    let (paid, reconciled) = (
        summary["totals"]["USD"]["amount"].clone(),
        clean.json()["currencies"]["USD"]["sentAmount"].clone(),
    );
    assert_eq!(paid, reconciled, "{summary} / {}", clean.stdout);
    assert!(
        paid.as_str()
            .is_some_and(|a| a.split_once('.').is_some_and(|(_, c)| c.len() == 2)),
        "{paid}"
    );

    let body = temp_file("outside.json", &cash_body("33"))
        .display()
        .to_string();
    let mut outside_env = env.clone();
    outside_env.retain(|(k, _)| k != "WHISH_JOURNAL");
    outside_env.push(journal_at(&dir.join("another.sqlite")));
    let sent = whish(&["transfer", "send", "--body", &body], &outside_env).await;
    assert_eq!(sent.code, 0, "{sent:?}");
    let csv = dir.join("reconcile.csv").display().to_string();
    let mut with_csv = reconcile.to_vec();
    with_csv.extend(["--csv", &csv]);
    let differs = whish(&with_csv, &env).await;
    assert_eq!(differs.code, 6, "{differs:?}");
    let findings = differs.json()["findings"].clone();
    assert_eq!(findings.as_array().map(Vec::len), Some(1), "{findings}");
    assert_eq!(findings[0]["kind"], "not-in-journal");
    let table = std::fs::read_to_string(&csv).expect("csv");
    assert!(table.starts_with("record,currency,kind,"));
    assert_eq!(
        table.lines().filter(|l| l.starts_with("finding,")).count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_a_bad_row_sends_nothing_and_names_the_line() {
    let sb = Sandbox::start().await.expect("sandbox");
    let env = sb.env_vars();
    let file = temp_file(
        "bad.csv",
        "reference,receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds\n\
         A,Hiba,Mansour,+96170330001,05-06-1991,20,USD,Family Support,Savings\n\
         B,Hiba,Mansour,+96170330002,05-06-1991,-5,USD,Family Support,Savings\n",
    );
    let f = file.display().to_string();
    let mut args: Vec<&str> = vec!["payouts", "send", &f, "--batch", "bad-cli"];
    args.extend(SENDER);
    let run = whish(&args, &env).await;
    assert_eq!(run.code, 2, "{run:?}");
    let bad = run.json()["badRows"].clone();
    assert_eq!(bad[0]["line"], 3, "{bad}");
    assert_eq!(bad[0]["field"], "amount");
    assert!(sb.transfers().is_empty());
    assert!(run.stderr.contains("nothing was sent"), "{}", run.stderr);

    let columns = whish(&["payouts", "columns"], &env).await;
    assert_eq!(columns.code, 0);
    assert!(columns.json().as_array().is_some_and(|c| c.len() > 10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_named_as_the_batch_file_are_refused_before_anything_is_sent() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let file = cash_payouts_file("results-over-batch.csv", "R", "+9617044", 4, 3);
    env.push(journal_at(&file.with_extension("sqlite")));
    let before = std::fs::read_to_string(&file).expect("batch file");
    let f = file.display().to_string();
    for sub in ["send", "follow-up"] {
        let run = whish(&payouts_cmd(sub, &f, "results-over", &f), &env).await;
        assert_eq!(run.code, 2, "{sub}: {run:?}");
        assert!(
            run.stderr.contains("is the batch file"),
            "{sub}: {}",
            run.stderr
        );
    }
    assert!(sb.transfers().is_empty(), "nothing sent");
    assert_eq!(
        std::fs::read_to_string(&file).expect("batch file"),
        before,
        "left whole"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_batch_cleanly_with_exit_5_and_every_row_in_the_results() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let dir = temp_file("ctrl-c-here", "")
        .parent()
        .expect("dir")
        .to_owned();
    env.push(journal_at(&dir.join("payouts.sqlite")));
    let file = cash_payouts_file("aid-2026-11-24.csv", "P", "+9617033", 4, ROWS);
    let results = dir.join("results.csv");
    let (file_arg, results_arg) = (file.display().to_string(), results.display().to_string());
    let mut send = payouts_cmd("send", &file_arg, "aid-cli-stopped", &results_arg);
    send.extend(["--concurrency", "2"]);
    sb.inject(
        Endpoint::TransferSend,
        Fault::Delay(Duration::from_millis(20)),
        ROWS as u32,
    );
    let child = Command::new(env!("CARGO_BIN_EXE_whish"))
        .args(&send)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn whish");
    let started = Instant::now();
    while lines(&results) < 20 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(interrupted.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("join")
        .expect("wait");
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Ctrl-C"));
    // The last progress line counts the rows left unsent apart: rows reported are not rows sent.
    let last = String::from_utf8_lossy(&out.stderr)
        .lines()
        .rfind(|l| l.contains("rows reported"))
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(
        last.contains(" not sent") && !last.contains(" 0 not sent"),
        "{last}"
    );
    let text = std::fs::read_to_string(&results).expect("results");
    assert_eq!(
        text.lines().count(),
        ROWS + 1,
        "every row is in the results"
    );
    let paid = sb.transfers().len();
    assert!(paid < ROWS, "stopped part way: {paid}");
    assert_eq!(
        text.lines().filter(|l| l.contains(",accepted,")).count(),
        paid,
        "the results say exactly what was paid"
    );
    // Run again: the rest, nothing twice.
    let again = whish(&send, &env).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(sb.transfers().len(), ROWS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_answered_pending_exits_3_and_the_next_run_settles_it() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let mut text = String::from(
        "reference,receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds\n",
    );
    for i in 0..5 {
        text.push_str(&format!(
            "C{i},Hiba,Mansour,+961703300{i},05-06-1991,20,USD,Family Support,Savings\n"
        ));
    }
    let file = temp_file("cancel-pending.csv", &text);
    let dir = file.parent().expect("dir").to_owned();
    env.push(journal_at(&dir.join("payouts.sqlite")));
    let file_arg = file.display().to_string();
    let mut send: Vec<&str> = vec!["payouts", "send", &file_arg, "--batch", "cancel-pending"];
    send.extend(SENDER);
    let sent = whish(&send, &env).await;
    assert_eq!(sent.code, 0, "{sent:?}");

    let later = (time::OffsetDateTime::now_utc() + time::Duration::hours(1))
        .format(time::macros::format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second]"
        ))
        .expect("format");
    let results = dir.join("cancel.csv").display().to_string();
    let mut cancel: Vec<&str> = vec![
        "payouts",
        "cancel",
        &file_arg,
        "--batch",
        "cancel-pending",
        "--uncollected-before",
        &later,
        "--results",
        &results,
    ];
    cancel.extend(SENDER);
    // One cancel answered Pending (`code` 500): not failed, not known either.
    sb.inject(Endpoint::TransferCancel, Fault::Pending, 1);
    let first = whish(&cancel, &env).await;
    assert_eq!(first.code, 3, "a cancel still open is exit 3: {first:?}");
    assert_eq!(first.json()["cancels"]["pending"], 1, "{first:?}");
    assert_eq!(first.json()["cancels"]["accepted"], 4, "{first:?}");
    let table = std::fs::read_to_string(&results).expect("cancel results");
    assert!(
        table.starts_with(
            "line,reference,request_id,collection,status,ltn_number,transfer_id,sent_at,cancelled_now,cancel,source,message"
        ),
        "{table}"
    );
    assert_eq!(table.lines().filter(|l| l.contains(",pending,")).count(), 1);

    let open = whish(&["journal", "list", "--open"], &env).await;
    assert_eq!(
        open.stdout.lines().count(),
        1,
        "the Pending cancel is open: {open:?}"
    );

    // Run again: the Pending cancel is settled first (its status reads CANCELED_FULL); every
    // row is cancelled, once, and the journal holds nothing open.
    let again = whish(&cancel, &env).await;
    assert_eq!(again.code, 0, "{again:?}");
    let open = whish(&["journal", "list", "--open"], &env).await;
    assert!(open.stdout.trim().is_empty(), "nothing left open: {open:?}");
    assert_eq!(again.json()["rows"]["cancelled"], 5, "{again:?}");
    assert_eq!(
        sb.transfers()
            .iter()
            .filter(|t| t.status == "CANCELED_FULL")
            .count(),
        5
    );
}

/// A batch of three rows that left one row for a person: its send never reached the service,
/// a recovery past a zero deadline sent it to the operator, unsent, and a run of the batch
/// reports it so. Returns
/// the sandbox, the settings, and the arguments of `payouts send` for this batch.
async fn a_row_left_for_a_person(name: &str) -> (Sandbox, Vec<(String, String)>, Vec<String>) {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let dir = temp_file("journal-resume", "")
        .parent()
        .expect("dir")
        .to_owned();
    env.push(journal_at(&dir.join(format!("{name}.sqlite"))));
    let file = cash_payouts_file(&format!("{name}.csv"), "R", "+9617044", 2, 3);
    let results = dir.join(format!("{name}-results.csv"));
    let (file_arg, results_arg) = (file.display().to_string(), results.display().to_string());
    let mut send: Vec<String> = payouts_cmd("send", &file_arg, name, &results_arg)
        .into_iter()
        .map(str::to_owned)
        .collect();
    send.extend(["--concurrency".to_owned(), "1".to_owned()]);
    let with = |extra: &[&str]| {
        let mut a = send.clone();
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        a
    };
    // One send never reaches the service; without retries its row is left unknown (exit 3).
    sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
    let first = whish(&strs(&with(&["--retries", "0"])), &env).await;
    assert_eq!(first.code, 3, "setup: {first:?}");
    assert_eq!(sb.transfers().len(), 2, "setup");
    // Past its deadline (zero): to a person, unsent; the batch run again says so, and stderr
    // names the way out.
    let recovered = whish(&["journal", "recover", "--deadline-hours", "0"], &env).await;
    assert_eq!(recovered.code, 3, "{recovered:?}");
    let late = whish(&strs(&with(&[])), &env).await;
    assert_eq!(late.code, 3, "{late:?}");
    assert_eq!(late.json()["outcomes"]["needs-operator"], 1, "{late:?}");
    assert!(
        late.stderr
            .contains("journal recover --retry-needs-operator --deadline-hours H"),
        "{late:?}"
    );
    assert_eq!(sb.transfers().len(), 2, "nothing sent while it waits");
    (sb, env, send)
}

/// An operator resuming a batch long after a row was left for a person (exit 3, nothing sent,
/// the stderr says how to settle it): `journal recover --retry-needs-operator` settles it (read
/// by status first, paid once), and the batch run again reports every row accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_batch_reports_the_row_a_retrying_recovery_settled() {
    let (sb, env, send) = a_row_left_for_a_person("resume-cli").await;
    // A negative deadline is refused before anything is read or sent.
    let bad = whish(
        &[
            "journal",
            "recover",
            "--retry-needs-operator",
            "--deadline-hours",
            "-1",
        ],
        &env,
    )
    .await;
    assert_eq!(bad.code, 2, "{bad:?}");
    assert_eq!(sb.transfers().len(), 2, "nothing sent");
    let settled = whish(&["journal", "recover", "--retry-needs-operator"], &env).await;
    assert_eq!(settled.code, 0, "{settled:?}");
    let again = whish(&strs(&send), &env).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.json()["outcomes"]["accepted"], 3, "{again:?}");
    let transfers = sb.transfers();
    assert_eq!(transfers.len(), 3, "every row paid exactly once");
    let mut ids: Vec<i64> = transfers.iter().map(|t| t.request_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    sb.shutdown().await;
}

/// A person decides not to pay the row left for them: `journal abandon` checks the service
/// never received it and closes it (exit 0); the batch then reports the row refused with code
/// `abandoned` and never sends it, even after a recovery told to retry what waits for the
/// operator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_a_person_abandons_is_never_sent() {
    let (sb, env, send) = a_row_left_for_a_person("abandon-cli").await;
    let open = whish(&["journal", "list", "--open"], &env).await;
    assert_eq!(open.code, 0, "{open:?}");
    // JSON lines: one entry, the row's.
    let key = open.json()["key"].as_str().expect("a key").to_owned();

    let no_reason = whish(&["journal", "abandon", &key, "--reason", " "], &env).await;
    assert_eq!(no_reason.code, 2, "{no_reason:?}");
    let done = whish(
        &[
            "journal",
            "abandon",
            &key,
            "--reason",
            "paid in cash at the office",
        ],
        &env,
    )
    .await;
    assert_eq!(done.code, 0, "{done:?}");
    assert_eq!(done.json()["outcome"], "abandoned", "{done:?}");
    let again = whish(&["journal", "abandon", &key, "--reason", "twice"], &env).await;
    assert_eq!(again.code, 2, "{again:?}");
    let open = whish(&["journal", "list", "--open"], &env).await;
    assert_eq!(open.stdout.trim(), "", "nothing open: {open:?}");

    // A retrying recovery leaves it closed; the batch reports it refused and never sends it.
    let retried = whish(&["journal", "recover", "--retry-needs-operator"], &env).await;
    assert_eq!(retried.code, 0, "{retried:?}");
    let run = whish(&strs(&send), &env).await;
    assert_eq!(run.code, 1, "a row refused: {run:?}");
    assert_eq!(run.json()["outcomes"]["accepted"], 2, "{run:?}");
    assert_eq!(run.json()["outcomes"]["refused"], 1, "{run:?}");
    let results = std::fs::read_to_string(
        send.iter()
            .skip_while(|a| *a != "--results")
            .nth(1)
            .expect("results"),
    )
    .expect("results file");
    assert!(
        results
            .lines()
            .any(|l| l.contains(",refused,") && l.contains("abandoned")),
        "{results}"
    );
    assert_eq!(sb.transfers().len(), 2, "the abandoned row was never sent");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batchs_defaults_are_stored_on_its_first_send_and_never_retyped_differently() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let journal = temp_file("defaults.sqlite", "");
    let _ = std::fs::remove_file(&journal);
    env.push(journal_at(&journal));
    let file = cash_payouts_file("defaults.csv", "DEF-", "+9617033", 2, 3);
    let f = file.display().to_string();
    let stored = file.with_file_name("defaults.defaults.json");

    // A run without the defaults has bad rows: it sends nothing and stores nothing.
    let bare = whish(&["payouts", "send", &f, "--batch", "def-cli"], &env).await;
    assert_eq!(bare.code, 2, "{bare:?}");
    assert!(!stored.exists(), "a refused run stores no defaults");

    let mut first: Vec<&str> = vec!["payouts", "send", &f, "--batch", "def-cli"];
    first.extend(SENDER);
    let sent = whish(&first, &env).await;
    assert_eq!(sent.code, 0, "{sent:?}");
    assert_eq!(sb.transfers().len(), 3);
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&stored).expect("stored")).expect("json");
    assert_eq!(
        kept["batches"]["def-cli"]["senderPhone"], "+9611000000",
        "{kept}"
    );

    // Follow-up and a second send need no defaults, and pay nothing again.
    let follow = whish(&["payouts", "follow-up", &f, "--batch", "def-cli"], &env).await;
    assert!(matches!(follow.code, 0 | 3), "{follow:?}");
    let again = whish(&["payouts", "send", &f, "--batch", "def-cli"], &env).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(sb.transfers().len(), 3, "no row paid twice");

    // A default typed differently is refused, naming the stored one.
    let other = whish(
        &[
            "payouts",
            "send",
            &f,
            "--batch",
            "def-cli",
            "--from-country",
            "2",
        ],
        &env,
    )
    .await;
    assert_eq!(other.code, 2, "{other:?}");
    assert!(other.stderr.contains("--from-country 1"), "{other:?}");
    assert_eq!(sb.transfers().len(), 3);
}
