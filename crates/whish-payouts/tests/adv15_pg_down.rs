//! Adversarial (15th review): the journal's database goes away for a while in the middle of a
//! batch run again (a PostgreSQL restart or failover: its connections cut, new ones refused),
//! the rows of this run all paid and accepted by an earlier run. The batch reads each chunk's
//! entries from the journal before it reports them; a read that fails must not turn a paid
//! row into `not-sent` (the SDK's promise: never report a paid row as unpaid; docs/payouts.md:
//! `not-sent` rows were not sent, "running again does not send it").
//!
//! Needs `WHISH_TEST_POSTGRES_URL` (`scripts/postgres-throwaway.sh start`) and `psql`; says so
//! and passes without them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rust_decimal::Decimal;
use whish_core::{ClientSettings, Policy, RetryPolicy, SecretString, Timeouts};
use whish_journal::Journal;
use whish_money_transfer::{CountryId, Customer, FirstName, LastName, TransferClient};
use whish_payouts::{Batch, BatchError, Defaults, RowOutcome, RowResult, RunOptions};
use whish_sandbox::Sandbox;

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "whish-payouts-adv15-{test}-{}-{}",
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

fn defaults() -> Defaults {
    Defaults::new()
        .from_country(CountryId::LEBANON)
        .sender(Customer::new(
            FirstName::new("Relief"),
            LastName::new("Org"),
            "+9611000000",
        ))
}

const HEADER: &str = "reference,receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds";

fn row(reference: &str, phone: &str) -> String {
    format!("{reference},Rami,Haddad,{phone},07-03-1990,25,USD,Family Support,Savings\n")
}

fn write(path: &Path, text: &str) {
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("write file");
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
    let admin = match std::env::var("WHISH_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => {
            eprintln!("adv15_pg_down NOT RUN: WHISH_TEST_POSTGRES_URL is not set");
            return;
        }
    };
    let name = format!(
        "whish_adv15_{}",
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
    let batch = Batch::new("adv15-pg-down", &file, defaults()).expect("batch");

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
