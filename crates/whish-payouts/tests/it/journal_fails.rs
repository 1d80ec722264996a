//! The journal fails under a running batch, and a paid row must
//! never be reported unpaid (`not-sent`).
//!
//! 1. A transient journal error: SQLITE_BUSY from another process holding the SQLite write
//!    lock for longer than the journal's busy wait (30 s), met by a batch row whose entry an
//!    earlier run left open (its send may have arrived: here it did). Needs the `sqlite3`
//!    command; says so when it is missing (and fails under CI).
//! 2. The journal's database goes away for a while in the middle of a batch run again (a
//!    PostgreSQL restart or failover: its connections cut, new ones refused), the rows of this
//!    run all paid and accepted by an earlier run: a failed read of a chunk's entries must not
//!    turn a paid row into `not-sent`, and it stops the batch. Needs `WHISH_TEST_POSTGRES_URL`
//!    (`scripts/postgres-throwaway.sh start`) and `psql`; says so without them (and fails under CI).
//! 3. A batch run again in the same process with the same `Journal`, whose failed insert must
//!    never take an earlier entry of that journal for its orphan (below).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{HEADER, defaults, write};
use rust_decimal::Decimal;
use whish_core::{ClientSettings, Policy, RetryPolicy, SecretString, Timeouts};
use whish_journal::Journal;
use whish_money_transfer::TransferClient;
use whish_payouts::{Batch, BatchError, RowOutcome, RowResult, RunOptions};
use whish_sandbox::{Endpoint, Fault, Sandbox};

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "whish-payouts-journal-fails-{test}-{}-{}",
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

/// No resends of its own: a dropped reply stays unknown.
fn client(sb: &Sandbox) -> TransferClient {
    let c = sb.transfer_credentials();
    TransferClient::builder(ClientSettings::new(sb.transfer_base_url()).policy(Policy {
        retry: RetryPolicy {
            max_retries: 0,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(20),
        },
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            attempt: Duration::from_secs(2),
        },
    }))
    .username(c.username.clone())
    .key(SecretString::from(c.key.clone()))
    .build()
    .expect("client")
}

fn row(reference: &str, phone: &str) -> String {
    format!("{reference},Rami,Haddad,{phone},07-03-1990,25,USD,Family Support,Savings\n")
}

async fn run(
    batch: &Batch,
    j: &Journal,
    c: &TransferClient,
    options: &RunOptions,
    mut on_row: impl FnMut(&RowResult) + Send,
) -> (
    Result<whish_payouts::RunSummary, BatchError>,
    Vec<RowResult>,
) {
    let mut results = Vec::new();
    let summary = batch
        .run(j, c, options, &mut |r| {
            on_row(r);
            results.push(r.clone());
            Ok(())
        })
        .await;
    results.sort_by_key(|r| r.line);
    (summary, results)
}

/// A row whose send an earlier run made (the service holds it, its reply was lost: the
/// journal's entry is open) meets a journal another process keeps busy for 40 s when this run
/// sends it again. The journal's insert waits out its 30 s and fails; the write after it (the
/// "record it as never sent" of a lost insert) finds the key recorded before and changes
/// nothing. The row must not then be reported `not-sent`: the service holds its transfer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_open_from_an_earlier_run_is_never_reported_not_sent_when_the_journal_is_busy() {
    if !whish_testkit::has_command("sqlite3") {
        whish_testkit::not_run(
            "journal_fails",
            "the test",
            "no sqlite3 command (Debian package sqlite3)",
        );
        return;
    }
    let d = dir("busy-open-row");
    let db = d.join("journal.sqlite");
    let sb = sandbox().await;
    let j = Journal::open(&format!("sqlite:{}", db.display()))
        .await
        .expect("journal");
    let c = client(&sb);
    let file = d.join("aid.csv");
    let name = "busy";

    // Run 1: row A paid and accepted.
    write(&file, &format!("{HEADER}\n{}", row("A-1", "+96170111001")));
    let batch = Batch::new(name, &file, defaults()).expect("batch");
    let (s, r) = run(&batch, &j, &c, &RunOptions::new().concurrency(1), |_| {}).await;
    s.expect("run 1");
    assert_eq!(r[0].outcome, RowOutcome::Accepted, "setup: {r:?}");

    // Run 2: row B added; its reply is lost after the service applied it: unknown, open.
    write(
        &file,
        &format!(
            "{HEADER}\n{}{}",
            row("A-1", "+96170111001"),
            row("B-2", "+96170111002")
        ),
    );
    sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    let (s, r) = run(&batch, &j, &c, &RunOptions::new().concurrency(1), |_| {}).await;
    s.expect("run 2");
    let b_id = r[1].request_id.expect("B's Request-id").get();
    assert_eq!(r[1].outcome, RowOutcome::Unknown, "setup: {r:?}");
    assert!(
        sb.transfers().iter().any(|t| t.request_id == b_id),
        "setup: the service holds B's transfer"
    );

    // Run 3: the start-up recovery's resend of B does not reach the service (B stays open),
    // then, as row A is reported, another process takes the journal's write lock for 40 s.
    sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
    let mut locker = None;
    let mut lock_failed = false;
    let db2 = db.clone();
    let started = std::time::Instant::now();
    let (s, r) = run(
        &batch,
        &j,
        &c,
        &RunOptions::new().concurrency(1),
        |r: &RowResult| {
            if r.line == 2 && locker.is_none() && !lock_failed {
                match whish_testkit::hold_write_lock(&db2, Duration::from_secs(40)) {
                    Some(h) => locker = Some(h),
                    None => lock_failed = true,
                }
            }
        },
    )
    .await;
    eprintln!("run 3 took {:?}: {s:?}", started.elapsed());
    for x in &r {
        eprintln!("  {x:?}");
    }
    assert!(!lock_failed, "could not take the write lock");
    if let Some(h) = locker {
        let _ = tokio::task::spawn_blocking(move || h.join()).await;
    }
    let paid: std::collections::HashSet<i64> =
        sb.transfers().iter().map(|t| t.request_id).collect();
    assert_eq!(sb.transfers().len(), paid.len(), "a row paid twice");
    let b = r.iter().find(|x| x.line == 3).expect("B's result");
    assert!(paid.contains(&b_id));
    assert!(
        !matches!(b.outcome, RowOutcome::NotSent | RowOutcome::Refused),
        "LIE: row B is paid at the service (Request-id {b_id}) but this run reports it {:?}: {b:?}",
        b.outcome
    );
    // And the journal's entry for it is still open (a recovery will confirm it): the report
    // must not disagree with the journal.
    let entry = j
        .entry(
            whish_journal::Service::MoneyTransfer,
            whish_journal::Operation::Send,
            &b_id.to_string(),
        )
        .await
        .expect("read")
        .expect("B's entry");
    eprintln!("B's entry now: {:?} {:?}", entry.state, entry.outcome);
}

fn psql(admin: &str, sql: &str) -> bool {
    Command::new("psql")
        .arg(admin)
        .args(["-v", "ON_ERROR_STOP=1", "-q", "-c", sql])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn rows(n: usize) -> String {
    let mut s = format!("{HEADER}\n");
    for i in 0..n {
        s.push_str(&row(&format!("PG-{i:04}"), &format!("+9617033{i:04}")));
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_read_that_fails_mid_run_never_reports_paid_rows_not_sent() {
    let Some(admin) = whish_testkit::postgres_admin_url("journal_fails") else {
        return;
    };
    let name = format!(
        "whish_journal_fails_{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    );
    assert!(
        psql(&admin, &format!("CREATE DATABASE {name}")),
        "create db"
    );
    let (base, _) = admin.rsplit_once('/').expect("url");
    let url = format!("{base}/{name}");
    const ROWS: usize = 120;
    let d = dir("pg-down");
    let sb = sandbox().await;
    let j = Journal::open(&url).await.expect("journal");
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(&file, &rows(ROWS));
    let batch = Batch::new("pg-down", &file, defaults()).expect("batch");

    // Run 1: every row paid and accepted.
    let (s, r) = run(&batch, &j, &c, &RunOptions::new().concurrency(4), |_| {}).await;
    s.expect("run 1");
    assert!(
        r.iter().all(|x| x.outcome == RowOutcome::Accepted),
        "setup: {r:?}"
    );
    assert_eq!(sb.transfers().len(), ROWS);

    // Run 2 (the same file again, by mistake or to get the results): after the fifth row is
    // reported, the database goes away (every connection cut, new ones refused).
    let mut cut = false;
    let (admin2, name2) = (admin.clone(), name.clone());
    let mut delivered = 0;
    let (s, r) = run(
        &batch,
        &j,
        &c,
        &RunOptions::new().concurrency(4),
        |_r: &RowResult| {
            delivered += 1;
            if delivered == 5 && !cut {
                cut = psql(
                    &admin2,
                    &format!("ALTER DATABASE {name2} ALLOW_CONNECTIONS false"),
                ) && psql(
                    &admin2,
                    &format!(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name2}'"
                    ),
                );
            }
        },
    )
    .await;
    assert!(cut, "could not take the database away");
    // The database back, to read what the journal holds.
    assert!(psql(
        &admin,
        &format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true")
    ));
    eprintln!("run 2: {s:?}");
    let paid: std::collections::HashSet<i64> =
        sb.transfers().iter().map(|t| t.request_id).collect();
    assert_eq!(sb.transfers().len(), ROWS, "a row paid twice");
    let mut lies = Vec::new();
    for x in &r {
        let id = x.request_id.map(|i| i.get());
        let at_service = id.is_some_and(|i| paid.contains(&i));
        let by_reference = x
            .reference
            .as_deref()
            .and_then(|rf| rf.strip_prefix("PG-"))
            .is_some();
        if matches!(x.outcome, RowOutcome::NotSent | RowOutcome::Refused)
            && (at_service || by_reference)
        {
            lies.push(format!(
                "line {} ({:?}) is paid (accepted by run 1) but run 2 reports it {:?}: {:?}",
                x.line, x.reference, x.outcome, x.message
            ));
        }
    }
    let j2 = Journal::open(&url).await.expect("journal again");
    let accepted = j2
        .list(&whish_journal::Listing::new().limit(10_000))
        .await
        .expect("list")
        .iter()
        .filter(|e| e.state == whish_journal::State::Accepted)
        .count();
    eprintln!("the journal holds {accepted} accepted entries of {ROWS}");
    assert!(
        lies.is_empty(),
        "{} of {ROWS} paid rows reported unpaid (summary {s:?}); first: {:#?}",
        lies.len(),
        &lies[..lies.len().min(3)]
    ); // A journal that cannot be read stops the batch: every row after would meet it too.
    let stopped = s
        .as_ref()
        .expect("run 2")
        .stopped
        .clone()
        .expect("the batch says it stopped");
    assert!(stopped.contains("the journal failed on line"), "{stopped}");
}

/// Run a statement with the `sqlite3` shell on `db`.
fn sqlite3(db: &Path, sql: &str) {
    let out = Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .output()
        .expect("sqlite3");
    assert!(
        out.status.success(),
        "sqlite3: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A batch run again in the same process (a service that reruns the batch, as the stop message
/// says: "make the journal work again, then run the batch again"), with the same `Journal`. Run
/// 1 sends row A; the service applies it; its reply is lost and the journal cannot record that
/// (its write fails): A's entry stays as its reservation left it, `intended`, this journal's
/// owner. Run 2 sends A again (`Sending::Recorded`); that insert fails (here a trigger; in life
/// SQLITE_BUSY past the busy wait, with the lock gone by the next write). The failed insert's
/// orphan is found by its own token, so A's entry is never taken for it: row A, paid, is never
/// reported `not-sent`. Needs the `sqlite3` command (for the triggers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paid_row_is_never_reported_not_sent_when_the_batch_runs_again_in_the_same_process() {
    if !whish_testkit::has_command("sqlite3") {
        whish_testkit::not_run(
            "journal_fails",
            "the test",
            "no sqlite3 command (Debian package sqlite3)",
        );
        return;
    }
    let d = dir("rerun");
    let db = d.join("journal.sqlite");
    let sb = sandbox().await;
    let j = Journal::open(&format!("sqlite:{}", db.display()))
        .await
        .expect("journal");
    let c = client(&sb);
    let file = d.join("aid.csv");
    write(
        &file,
        &format!(
            "{HEADER}\nA-1,Rami,Haddad,+96170111001,07-03-1990,25,USD,Family Support,Savings\n"
        ),
    );
    let batch = Batch::new("rerun", &file, defaults()).expect("batch");

    // Run 1: A's reply is lost after the service applied it, and its outcome is not recorded.
    sqlite3(
        &db,
        "CREATE TRIGGER fail_outcome BEFORE UPDATE ON whish_journal_entries \
         WHEN NEW.state <> 'intended' BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END;",
    );
    sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    let (s, r) = run(&batch, &j, &c, &RunOptions::new().concurrency(1), |_| {}).await;
    j.flush().await;
    sqlite3(&db, "DROP TRIGGER fail_outcome;");
    eprintln!("run 1: {s:?}");
    for x in &r {
        eprintln!("  {x:?}");
    }
    let a_id = r[0].request_id.expect("A's Request-id").get();
    assert_eq!(r[0].outcome, RowOutcome::Unknown, "setup: {r:?}");
    assert!(
        sb.transfers().iter().any(|t| t.request_id == a_id),
        "setup: the service holds A's transfer"
    );

    // Run 2, same process, same journal: A's insert fails, the writes after it go through.
    sqlite3(
        &db,
        "CREATE TRIGGER fail_insert BEFORE INSERT ON whish_journal_entries \
         WHEN NEW.state = 'intended' AND EXISTS (SELECT 1 FROM whish_journal_entries e \
           WHERE e.service = NEW.service AND e.operation = NEW.operation AND e.idem_key = NEW.idem_key) \
         BEGIN SELECT RAISE(ABORT, 'database is locked'); END;",
    );
    let (s, r) = run(&batch, &j, &c, &RunOptions::new().concurrency(1), |_| {}).await;
    sqlite3(&db, "DROP TRIGGER fail_insert;");
    eprintln!("run 2: {s:?}");
    for x in &r {
        eprintln!("  {x:?}");
    }
    let entry = j
        .entry(
            whish_journal::Service::MoneyTransfer,
            whish_journal::Operation::Send,
            &a_id.to_string(),
        )
        .await
        .expect("read")
        .expect("A's entry");
    eprintln!("A's entry now: {:?} {:?}", entry.state, entry.outcome);
    let a = r.iter().find(|x| x.line == 2).expect("A's result").clone();
    // Run 3: what the batch says of A once the journal is healthy.
    let (s3, r3) = run(&batch, &j, &c, &RunOptions::new().concurrency(1), |_| {}).await;
    eprintln!("run 3: {s3:?}");
    for x in &r3 {
        eprintln!("  {x:?}");
    }
    assert_eq!(
        sb.transfers()
            .iter()
            .filter(|t| t.request_id == a_id)
            .count(),
        1,
        "paid twice"
    );
    assert!(
        !matches!(a.outcome, RowOutcome::NotSent | RowOutcome::Refused),
        "LIE: row A is paid at the service (Request-id {a_id}) but run 2 reports it {:?}: {a:?}",
        a.outcome
    );
    assert_ne!(
        entry.state,
        whish_journal::State::Refused,
        "LIE: the journal records paid row A {:?}",
        entry.outcome
    );
    assert!(
        r3.iter()
            .all(|x| !matches!(x.outcome, RowOutcome::NotSent | RowOutcome::Refused)),
        "LIE: run 3 reports paid row A {r3:?}"
    );

    j.close().await;
}
