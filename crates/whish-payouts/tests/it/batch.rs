//! A batch against the sandbox: the check, the run, a run again, a changed row, an account limit
//! that stops the batch, faults and a dropped run, the follow-up, and the cancel of what was not
//! collected. Real SQLite journals in temporary files.

use std::path::Path;
use std::time::Duration;

use crate::support::{HEADER, client, csv_rows, defaults, dir, run, sandbox, write};
use rust_decimal::Decimal;
use whish_core::{ClientSettings, Policy, RetryPolicy, SecretString, Timeouts};
use whish_journal::Journal;
use whish_money_transfer::TransferClient;
use whish_payouts::{
    Batch, BatchError, Collection, FollowUpRow, ResultFormat, ResultWriter, RowOutcome, RowResult,
    RunOptions, Source, StopSignal,
};
use whish_sandbox::{Endpoint, Fault};

async fn journal(d: &Path) -> Journal {
    Journal::open(&format!("sqlite:{}", d.join("journal.sqlite").display()))
        .await
        .expect("journal")
}

#[tokio::test]
async fn the_whole_file_is_checked_before_anything_is_sent() {
    let d = dir("check");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("bad.csv");
    write(
        &file,
        &format!(
            "{HEADER}\n\
             A1,Rami,Haddad,+96170000001,07-03-1990,10,USD,Family Support,Savings\n\
             A2,Rami,Haddad,+96170000002,31-02-1990,10,USD,Family Support,Savings\n\
             A3,Rami,Haddad,+96170000003,07-03-1990,ten,USD,Family Support,Savings\n\
             A4,Rami,Haddad,+96170000004,07-03-1990,10,EUR,Family Support,Savings\n\
             A5,Rami,Haddad,+96170000005,07-03-1990,10,USD,Fun,Savings\n\
             A1,Rami,Haddad,+96170000006,07-03-1990,10,USD,Family Support,Savings\n\
             A7,Rami,Haddad,+96170000007\n"
        ),
    );
    let batch = Batch::new("check-1", &file, defaults()).expect("batch");
    let report = batch.check(&j, &c).await.expect("check");
    assert_eq!(report.rows, 7);
    let got: Vec<(u64, &str)> = report
        .errors
        .iter()
        .map(|e| (e.line, e.field.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (3, "receiver_date_of_birth"),
            (4, "amount"),
            (5, "currency"),
            (6, "reason"),
            (7, "reference"),
            (8, ""),
        ],
        "{:#?}",
        report.errors
    );
    let (summary, _) = run(&batch, &j, &c, &RunOptions::new()).await;
    assert!(
        matches!(summary, Err(BatchError::BadRows(_))),
        "{summary:?}"
    );
    assert!(
        sb.transfers().is_empty(),
        "nothing may be sent while a row is bad"
    );
    assert!(sb.requests().is_empty(), "not one request");

    // An unknown column is refused on the header's line, before any row.
    let typo = d.join("typo.csv");
    write(&typo, "reference,ammount\nX,1\n");
    let report = Batch::new("typo", &typo, defaults())
        .expect("batch")
        .check(&j, &c)
        .await
        .expect("check");
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.line == 1 && e.field == "ammount"),
        "{:?}",
        report.errors
    );

    // Skipping bad rows on purpose sends the good one only, and reports the others not sent.
    let (summary, results) = run(&batch, &j, &c, &RunOptions::new().skip_bad_rows(true)).await;
    let summary = summary.expect("run");
    assert_eq!(summary.count(RowOutcome::Accepted), 1);
    assert_eq!(summary.count(RowOutcome::NotSent), 6);
    assert_eq!(sb.transfers().len(), 1);
    assert!(
        results
            .iter()
            .filter(|r| r.outcome == RowOutcome::NotSent)
            .all(|r| r.code.as_deref() == Some("bad-row"))
    );
}

/// A file saved by a spreadsheet on Windows (a byte-order mark, `\r\n` line endings), or with
/// the old `\r` alone, names each bad row by its own line, as one with `\n` does.
#[tokio::test]
async fn bad_rows_are_named_by_their_line_whatever_the_line_endings() {
    let d = dir("line-endings");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let rows = [
        "L1,Rami,Haddad,+96170000001,07-03-1990,10,USD,Family Support,Savings",
        "L2,Rami,Haddad,+96170000002,07-03-1990,10,USD,family support,Savings",
        "L3,Rami,Haddad,+96170000003,07-03-1990,10,USD,Family Support,Savings",
        "L4,Rami,Haddad,+96170000004,07-03-1990,ten,USD,Family Support,Savings",
    ];
    for (name, start, end) in [
        ("lf", "", "\n"),
        ("crlf", "\u{feff}", "\r\n"),
        ("cr", "", "\r"),
    ] {
        let file = d.join(format!("{name}.csv"));
        let mut text = format!("{start}{HEADER}{end}");
        for r in rows {
            text.push_str(r);
            text.push_str(end);
        }
        write(&file, &text);
        let report = Batch::new(format!("endings-{name}"), &file, defaults())
            .expect("batch")
            .check(&j, &c)
            .await
            .expect("check");
        assert_eq!(report.rows, 4, "{name}");
        assert_eq!(
            report
                .errors
                .iter()
                .map(|e| (e.line, e.field.as_str()))
                .collect::<Vec<_>>(),
            vec![(3, "reason"), (5, "amount")],
            "{name}: {:#?}",
            report.errors
        );
    }
    assert!(sb.requests().is_empty(), "a check sends nothing");
}

/// An amount is the file's digits: never read through a double (a JSON number with more digits
/// than a double holds was rounded to another amount, and that amount paid), never in exponent notation
/// (a spreadsheet's `1.5E+06` may be a rounded cell), and a JSON key given twice is refused
/// rather than the last one silently winning.
#[tokio::test]
async fn an_amount_is_the_files_digits() {
    let d = dir("digits");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let row = |reference: &str, amount: &str, currency: &str| {
        format!(
            "{{\"reference\":\"{reference}\",\"receiver_first_name\":\"Maya\",\"receiver_last_name\":\"Khoury\",\"receiver_phone\":\"+96170100000\",\"receiver_date_of_birth\":\"01-01-1985\",\"amount\":{amount},\"currency\":\"{currency}\",\"reason\":\"Family Support\",\"source_of_funds\":\"Salary\"}}\n"
        )
    };
    let file = d.join("digits.jsonl");
    let mut text = String::new();
    // Through a double this reads 100, a valid amount that is not the file's.
    text.push_str(&row("D1", "100.000000000000001", "USD"));
    text.push_str(&row("D2", "1e2", "USD"));
    text.push_str(&row("D3", "\"1.5E+06\"", "LBP"));
    text.push_str(&row("D4", "10, \"amount\": 1000", "USD"));
    text.push_str(&row("D5", "12.50", "USD"));
    text.push_str(&row("D6", "\"12.50\"", "USD"));
    write(&file, &text);
    let batch = Batch::new("digits-1", &file, defaults()).expect("batch");
    let report = batch.check(&j, &c).await.expect("check");
    let got: Vec<(u64, &str)> = report
        .errors
        .iter()
        .map(|e| (e.line, e.field.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![(1, "amount"), (2, "amount"), (3, "amount"), (4, "amount")],
        "{:#?}",
        report.errors
    );
    assert!(
        report.errors[1].message.contains("exponent"),
        "{}",
        report.errors[1].message
    );
    assert!(
        report.errors[3].message.contains("twice"),
        "{}",
        report.errors[3].message
    );

    // The same in a CSV file: an exponent is refused, plain digits are the amount.
    let csv = d.join("digits.csv");
    write(
        &csv,
        &format!(
            "{HEADER}\n\
             E1,Rami,Haddad,+96170000001,07-03-1990,1E2,USD,Family Support,Savings\n\
             E2,Rami,Haddad,+96170000002,07-03-1990,100.50,USD,Family Support,Savings\n"
        ),
    );
    let csv_batch = Batch::new("digits-2", &csv, defaults()).expect("batch");
    let report = csv_batch.check(&j, &c).await.expect("check");
    assert_eq!(
        report
            .errors
            .iter()
            .map(|e| (e.line, e.field.as_str()))
            .collect::<Vec<_>>(),
        vec![(2, "amount")],
        "{:#?}",
        report.errors
    );
    assert!(sb.requests().is_empty(), "a check sends nothing");

    // With the bad rows skipped, the good ones are paid their exact amounts.
    let (summary, results) = run(&batch, &j, &c, &RunOptions::new().skip_bad_rows(true)).await;
    let summary = summary.expect("run");
    assert_eq!(summary.count(RowOutcome::Accepted), 2, "{results:#?}");
    assert_eq!(sb.transfers().len(), 2);
    let amounts: Vec<serde_json::Value> = sb
        .requests()
        .iter()
        .filter(|r| r.endpoint == Endpoint::TransferSend)
        .map(|r| {
            serde_json::from_str::<serde_json::Value>(&r.body).expect("body")["amount"].clone()
        })
        .collect();
    assert_eq!(
        amounts,
        vec![serde_json::json!(12.5), serde_json::json!(12.5)]
    );
}

#[tokio::test]
async fn a_batch_run_again_pays_no_row_twice_and_a_changed_row_is_refused() {
    let d = dir("again");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.csv");
    write(&file, &csv_rows(40, "25"));
    let batch = Batch::new("aid-1", &file, defaults()).expect("batch");
    let (summary, results) = run(&batch, &j, &c, &RunOptions::new().concurrency(8)).await;
    let summary = summary.expect("run");
    assert!(summary.all_accepted(), "{summary:?}");
    assert_eq!(results.len(), 40);
    assert!(
        results
            .iter()
            .all(|r| r.ltn_number.is_some() && r.fee.is_some() && !r.earlier_run)
    );
    assert_eq!(summary.totals["USD"].amount, Decimal::from(1000));
    assert_eq!(sb.transfers().len(), 40);
    let sends = sb.requests().len();

    // The same file again: every row from the journal, not one call.
    let (summary, again) = run(&batch, &j, &c, &RunOptions::new()).await;
    assert!(summary.expect("run").all_accepted());
    assert!(again.iter().all(|r| r.earlier_run));
    assert_eq!(
        again
            .iter()
            .map(|r| (&r.request_id, &r.ltn_number))
            .collect::<Vec<_>>(),
        results
            .iter()
            .map(|r| (&r.request_id, &r.ltn_number))
            .collect::<Vec<_>>()
    );
    assert_eq!(sb.requests().len(), sends, "a run again sends nothing");

    // One row changed (its amount): refused before anything is sent.
    let changed = csv_rows(40, "25").replace(
        "AID-00007,Rami,Haddad,+96170120007,07-03-1990,25",
        "AID-00007,Rami,Haddad,+96170120007,07-03-1990,30",
    );
    write(&file, &changed);
    let (summary, _) = run(&batch, &j, &c, &RunOptions::new()).await;
    match summary {
        Err(BatchError::BadRows(report)) => {
            assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
            assert_eq!(report.errors[0].line, 9);
            assert!(report.errors[0].message.contains("changed"));
        }
        other => panic!("a changed row must be refused: {other:?}"),
    }
    assert_eq!(sb.transfers().len(), 40);

    // The results file, as CSV: a header and a line per row.
    let out = d.join("results.csv");
    let mut w = ResultWriter::new(
        std::fs::File::create(&out).expect("file"),
        ResultFormat::Csv,
    )
    .expect("writer");
    for r in &again {
        w.write(r).expect("write");
    }
    drop(w);
    let text = std::fs::read_to_string(&out).expect("read");
    assert_eq!(text.lines().count(), 41);
    assert!(text.starts_with("line,reference,request_id,outcome,"));
}

#[tokio::test]
async fn an_account_refusal_stops_the_batch_and_the_next_run_sends_the_rest() {
    let d = dir("limit");
    // Room for about ten transfers of 100 (plus fees).
    let sb = sandbox(1_050).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("payroll.csv");
    write(&file, &csv_rows(30, "100"));
    let batch = Batch::new("payroll-1", &file, defaults()).expect("batch");
    let (summary, results) = run(&batch, &j, &c, &RunOptions::new().concurrency(1)).await;
    let summary = summary.expect("run");
    let stopped = summary.stopped.clone().expect("the batch says it stopped");
    assert!(
        stopped.contains("transfer.account_reach_balance_limit"),
        "{stopped}"
    );
    let accepted = summary.count(RowOutcome::Accepted);
    assert!((5..=11).contains(&accepted), "{summary:?}");
    assert_eq!(summary.count(RowOutcome::Refused), 1);
    assert_eq!(summary.count(RowOutcome::NotSent), 30 - accepted - 1);
    assert_eq!(results.len(), 30, "every row is in the results");
    assert_eq!(sb.transfers().len() as u64, accepted);

    // Funded again: the refused row goes out under its next Request-id, the rest under theirs.
    sb.set_transfer_balance("USD", Decimal::from(1_000_000))
        .expect("balance");
    let (summary, results) = run(&batch, &j, &c, &RunOptions::new().concurrency(4)).await;
    let summary = summary.expect("run");
    assert!(summary.all_accepted(), "{summary:?}");
    let transfers = sb.transfers();
    assert_eq!(transfers.len(), 30, "every row paid once");
    let mut ids: Vec<i64> = transfers.iter().map(|t| t.request_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 30);
    let refused_line = results
        .iter()
        .find(|r| {
            !r.earlier_run
                && r.request_id.map(|i| i.get())
                    != Some(
                        whish_payouts::key::request_id(
                            "payroll-1",
                            &format!("ref:AID-{:05}", r.line - 2),
                            0,
                        )
                        .get(),
                    )
        })
        .expect("the refused row went out under its second Request-id");
    assert_eq!(
        refused_line.request_id.map(|i| i.get()),
        Some(
            whish_payouts::key::request_id(
                "payroll-1",
                &format!("ref:AID-{:05}", refused_line.line - 2),
                1
            )
            .get()
        )
    );
}

#[tokio::test]
async fn faults_and_a_dropped_run_pay_every_row_exactly_once() {
    let d = dir("faults");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.jsonl");
    let mut text = String::new();
    for i in 0..60 {
        text.push_str(&format!(
            "{{\"reference\":\"J{i}\",\"receiver_first_name\":\"Maya\",\"receiver_last_name\":\"Khoury\",\"receiver_phone\":\"+961701{i:05}\",\"receiver_date_of_birth\":\"01-01-1985\",\"amount\":12.5,\"currency\":\"USD\",\"reason\":\"Family Support\",\"source_of_funds\":\"Salary\"}}\n"
        ));
    }
    write(&file, &text);
    for (i, fault) in [
        Fault::DropReply,
        Fault::DropRequest,
        Fault::Delay(Duration::from_millis(600)),
        Fault::Pending,
        Fault::DropReply,
        Fault::Pending,
    ]
    .into_iter()
    .enumerate()
    {
        sb.inject(Endpoint::TransferSend, fault, 1 + (i as u32 % 2));
    }
    let batch = Batch::new("faults-1", &file, defaults()).expect("batch");
    // The first run is dropped part way (a crash of the caller's task).
    let stop = StopSignal::new();
    let options = RunOptions::new().concurrency(6).stop_signal(stop.clone());
    let first =
        tokio::time::timeout(Duration::from_millis(150), run(&batch, &j, &c, &options)).await;
    drop(first);
    // Run again until nothing is open.
    let mut last = None;
    for _ in 0..6 {
        let (summary, results) = run(&batch, &j, &c, &RunOptions::new().concurrency(6)).await;
        let summary = summary.expect("run");
        assert_eq!(results.len(), 60);
        let done = summary.all_accepted();
        last = Some(summary);
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let summary = last.expect("ran");
    assert!(summary.all_accepted(), "{summary:?}");
    let transfers = sb.transfers();
    assert_eq!(transfers.len(), 60, "every row paid exactly once");
    let mut ids: Vec<i64> = transfers.iter().map(|t| t.request_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 60);
}

#[tokio::test]
async fn follow_up_finds_collections_and_cancels_what_waits() {
    let d = dir("follow");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.csv");
    write(&file, &csv_rows(40, "20"));
    let batch = Batch::new("aid-follow", &file, defaults()).expect("batch");
    assert!(
        run(&batch, &j, &c, &RunOptions::new())
            .await
            .0
            .expect("run")
            .all_accepted()
    );
    let collected = sb.collect_share(0.5).await;
    assert!((8..=32).contains(&collected.len()), "{}", collected.len());

    let follow = |cancel: Option<time::OffsetDateTime>| {
        let (batch, j, c) = (batch.clone(), j.clone(), c.clone());
        async move {
            let mut rows: Vec<FollowUpRow> = Vec::new();
            let mut sink = |r: &FollowUpRow| {
                rows.push(r.clone());
                Ok(())
            };
            match cancel {
                None => batch.follow_up(&j, &c, 8, &mut sink).await,
                Some(before) => {
                    batch
                        .cancel_uncollected(&j, &c, before, "not collected in time", 8, &mut sink)
                        .await
                }
            }
            .expect("follow-up");
            rows.sort_by_key(|r| r.line);
            rows
        }
    };
    let reads_since = |seq: u64, path: &str| {
        sb.requests()
            .iter()
            .filter(|r| r.seq > seq && r.path.ends_with(path))
            .count()
    };
    let before = sb.requests().last().map_or(0, |r| r.seq);
    let rows = follow(None).await;
    assert_eq!(rows.len(), 40);
    let count =
        |rows: &[FollowUpRow], c: Collection| rows.iter().filter(|r| r.collection == c).count();
    assert_eq!(count(&rows, Collection::Collected), collected.len());
    assert_eq!(count(&rows, Collection::Waiting), 40 - collected.len());
    // The collected rows come from one read of the activity log; only the waiting ones are read
    // one by one, and each row agrees with the sandbox.
    assert_eq!(reads_since(before, "/activity"), 1);
    assert_eq!(
        reads_since(before, "/send/money/status"),
        40 - collected.len()
    );
    for r in &rows {
        let t = sb
            .transfers()
            .into_iter()
            .find(|t| Some(t.request_id) == r.request_id.map(|i| i.get()))
            .expect("paid");
        match r.collection {
            Collection::Collected => {
                assert_eq!(
                    (t.status.as_str(), r.source),
                    ("RECEIVED", Source::ActivityLog)
                );
            }
            Collection::Waiting => {
                assert_eq!((t.status.as_str(), r.source), ("SENT", Source::Status))
            }
            other => panic!("line {}: {other}", r.line),
        }
    }

    // Cancel what still waits: a date before every send cancels nothing; after, every waiting one.
    let past = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    assert_eq!(count(&follow(Some(past)).await, Collection::Cancelled), 0);
    let later = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let rows = follow(Some(later)).await;
    assert_eq!(count(&rows, Collection::Cancelled), 40 - collected.len());
    assert_eq!(count(&rows, Collection::Collected), collected.len());
    assert!(
        rows.iter()
            .filter(|r| r.collection == Collection::Cancelled)
            .all(|r| r.cancelled_now && r.source == Source::Cancel)
    );
    let cancelled = sb
        .transfers()
        .iter()
        .filter(|t| t.status == "CANCELED_FULL")
        .count();
    assert_eq!(cancelled, 40 - collected.len());
    // Again: nothing more is cancelled, every cancel is the journal's.
    let before = sb.requests().last().map_or(0, |r| r.seq);
    let rows = follow(Some(later)).await;
    assert_eq!(count(&rows, Collection::Cancelled), 40 - collected.len());
    let cancels_sent = sb
        .requests()
        .iter()
        .filter(|r| r.seq > before && r.path.contains("cancel"))
        .count();
    assert_eq!(cancels_sent, 0, "a cancel run again is not sent again");
    // A follow-up now reads every row from the activity log: collected or cancelled, both final.
    let before = sb.requests().last().map_or(0, |r| r.seq);
    let rows = follow(None).await;
    assert_eq!(count(&rows, Collection::Cancelled), 40 - collected.len());
    assert!(
        rows.iter().all(|r| r.source == Source::ActivityLog),
        "{rows:?}"
    );
    assert_eq!(reads_since(before, "/send/money/status"), 0);
}

#[tokio::test]
async fn a_stop_signal_leaves_the_rest_unsent_and_a_run_again_sends_it() {
    let d = dir("stop");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.csv");
    write(&file, &csv_rows(50, "10"));
    let batch = Batch::new("stop-1", &file, defaults()).expect("batch");
    let stop = StopSignal::new();
    let options = RunOptions::new().concurrency(2).stop_signal(stop.clone());
    // Stop once ten rows are done, as Ctrl-C would.
    let out = d.join("results.jsonl");
    let mut w = ResultWriter::new(
        std::fs::File::create(&out).expect("file"),
        ResultFormat::JsonLines,
    )
    .expect("writer");
    let mut done = 0;
    let summary = batch
        .run(&j, &c, &options, &mut |r| {
            done += 1;
            if done == 10 {
                stop.stop("stopped by the test");
            }
            w.write(r)
        })
        .await
        .expect("run");
    assert_eq!(summary.stopped.as_deref(), Some("stopped by the test"));
    let accepted = summary.count(RowOutcome::Accepted);
    assert!((10..=12).contains(&accepted), "{summary:?}");
    assert_eq!(summary.count(RowOutcome::NotSent), 50 - accepted);
    assert_eq!(sb.transfers().len() as u64, accepted);
    // The results, as JSON lines: one object a line, every row.
    let text = std::fs::read_to_string(&out).expect("results");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object"))
        .collect();
    assert_eq!(lines.len(), 50);
    assert!(lines.iter().any(|l| {
        l["outcome"] == "not-sent"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.contains("stopped by the test"))
    }));
    assert!(
        lines
            .iter()
            .filter(|l| l["outcome"] == "accepted")
            .all(|l| l["ltn_number"].is_string() && l["amount"] == "10")
    );
    // The rows reserved in the journal ahead of their sends and not sent were given back:
    // nothing is left open, and a recovery (this process's or another's) sends none of them.
    let open = j
        .list(&whish_journal::Listing::new().open())
        .await
        .expect("list");
    assert!(open.is_empty(), "{open:?}");
    let given_back = j
        .list(&whish_journal::Listing::new().state(whish_journal::State::Refused))
        .await
        .expect("list");
    assert!(
        given_back
            .iter()
            .all(|e| e.outcome.as_ref().is_some_and(|o| o.result == "not-sent")),
        "{given_back:?}"
    );
    let report = j
        .recover(
            &whish_journal::Clients::new().transfer(c.clone()),
            &whish_journal::Recovery::new(),
        )
        .await
        .expect("recover");
    assert!(report.changes.is_empty(), "{report:?}");
    assert_eq!(sb.transfers().len() as u64, accepted);
    // Run again: the rest is sent, nothing twice.
    let (summary, _) = run(&batch, &j, &c, &RunOptions::new()).await;
    assert!(summary.expect("run").all_accepted());
    assert_eq!(sb.transfers().len(), 50);
}

/// A batch resumed long after a row was left open: a recovery sends the row to a person past
/// its deadline (nothing sent), a plain run leaves it there, and after a retrying recovery
/// (read by status first, sent once with its own Request-id) the batch reports every row
/// accepted, each paid once.
#[tokio::test]
async fn a_row_left_for_a_person_is_paid_once_after_a_retrying_recovery() {
    let d = dir("resume-operator");
    let sb = sandbox(1_000_000).await;
    let j = journal(&d).await;
    let c = client(&sb);
    let once = {
        let cr = sb.transfer_credentials();
        TransferClient::builder(ClientSettings::new(sb.transfer_base_url()).policy(Policy {
            retry: RetryPolicy {
                max_retries: 0,
                initial_backoff: Duration::from_millis(5),
                max_backoff: Duration::from_millis(20),
            },
            timeouts: Timeouts {
                connect: Duration::from_secs(2),
                attempt: Duration::from_millis(400),
            },
        }))
        .username(cr.username.clone())
        .key(SecretString::from(cr.key.clone()))
        .build()
        .expect("client")
    };
    let file = d.join("aid.csv");
    write(&file, &csv_rows(3, "15"));
    let batch = Batch::new("resume-1", &file, defaults()).expect("batch");
    // One send never reaches the service; without retries its row is left unknown.
    sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
    let (first, results) = run(&batch, &j, &once, &RunOptions::new().concurrency(1)).await;
    let first = first.expect("first run");
    assert_eq!(first.count(RowOutcome::Accepted), 2, "{results:?}");
    assert_eq!(first.count(RowOutcome::Unknown), 1, "{results:?}");
    assert_eq!(sb.transfers().len(), 2);

    // "Days later" (a deadline of zero): a recovery sends it to a person, unsent.
    let report = j
        .recover(
            &whish_journal::Clients::new().transfer(c.clone()),
            &whish_journal::Recovery::new().deadline(Duration::ZERO),
        )
        .await
        .expect("recover");
    assert_eq!(report.needs_operator, 1, "{report:?}");
    // A plain run leaves it with the person.
    let (third, results) = run(&batch, &j, &c, &RunOptions::new()).await;
    assert_eq!(
        third.expect("third run").count(RowOutcome::NeedsOperator),
        1,
        "{results:?}"
    );
    assert_eq!(sb.transfers().len(), 2, "nothing sent while it waits");

    // A person's word: a retrying recovery reads it by status (never received) and sends it
    // once under its own Request-id; the batch run again reports it accepted.
    let report = j
        .recover(
            &whish_journal::Clients::new().transfer(c.clone()),
            &whish_journal::Recovery::new().retry_needs_operator(true),
        )
        .await
        .expect("recover");
    assert_eq!(report.changes.len(), 1, "{report:?}");
    let (fourth, results) = run(&batch, &j, &c, &RunOptions::new()).await;
    let fourth = fourth.expect("fourth run");
    assert!(fourth.all_accepted(), "{results:?}");
    let transfers = sb.transfers();
    assert_eq!(transfers.len(), 3, "every row paid exactly once");
    let mut ids: Vec<i64> = transfers.iter().map(|t| t.request_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    let wanted: Vec<i64> = results
        .iter()
        .map(|r| r.request_id.expect("a Request-id").get())
        .collect();
    for id in wanted {
        assert!(
            ids.contains(&id),
            "{id} paid under the row's own Request-id"
        );
    }
}

/// The journal's file deleted under a running batch (its disk gone, a cleanup script): every
/// row after it would fail to be recorded too, so the batch stops at the first failure, says
/// why, and sends nothing it could not record. The rows after the stop (those whose lookup
/// failed too) are reported as left by the stop, not each as a failure of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_that_cannot_be_written_stops_the_batch() {
    let d = dir("journal-gone");
    let sb = sandbox(10_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.csv");
    write(&file, &csv_rows(1_200, "10"));
    let batch = Batch::new("aid-gone", &file, defaults()).expect("batch");
    let mut results: Vec<RowResult> = Vec::new();
    let journal_file = d.join("journal.sqlite");
    let summary = batch
        .run(&j, &c, &RunOptions::new().concurrency(4), &mut |r| {
            results.push(r.clone());
            if results.len() == 10 {
                for tail in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{tail}", journal_file.display()));
                }
            }
            Ok(())
        })
        .await
        .expect("run");
    assert_eq!(results.len(), 1_200, "every row is in the results");
    let stopped = summary.stopped.clone().expect("the batch says it stopped");
    assert!(stopped.contains("the journal failed on line"), "{stopped}");
    let unwritable = results
        .iter()
        .filter(|r| r.code.as_deref() == Some(whish_payouts::JOURNAL_FAILED))
        .count();
    assert!(unwritable >= 1, "{results:?}");
    // The rows that were in flight when the first failed, not every row after it.
    assert!(
        unwritable <= 8,
        "{unwritable} rows met the journal's failure"
    );
    // Nothing reported accepted that the service does not hold, nothing paid reported unpaid.
    let paid: std::collections::HashSet<i64> =
        sb.transfers().iter().map(|t| t.request_id).collect();
    for r in &results {
        let id = r.request_id.map(|i| i.get());
        match r.outcome {
            RowOutcome::Accepted => assert!(id.is_some_and(|i| paid.contains(&i)), "{r:?}"),
            RowOutcome::NotSent | RowOutcome::Refused => {
                assert!(!id.is_some_and(|i| paid.contains(&i)), "{r:?}");
            }
            _ => {}
        }
    }
    assert!(
        summary.count(RowOutcome::Accepted) < 1_200,
        "the batch went on: {summary:?}"
    );
}
