//! What the journal costs: a money-transfer send through the journal against the same send
//! without it, both against the same in-process sandbox, in interleaved rounds (A B, B A, ...)
//! so that a busy neighbour slows both alike; and the latency of one durable journal write.
//!
//! `cargo bench -p whish-journal --bench journal` prints, per backend (SQLite always; PostgreSQL
//! when `WHISH_TEST_POSTGRES_URL` names a server): the median of the per-round ratios
//! journaled/plain with its spread (min..max), and the write latency (median, p90, p99).
//! docs/performance.md holds the latest figures.

use std::time::{Duration, Instant};

use rust_decimal::Decimal;
use whish_core::{Amount, ClientSettings, Currency, RequestId, SecretString};
use whish_journal::Journal;
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
    LastName, Reason, Sender, SourceOfFunds, TransferClient, TransferStatus,
};
use whish_sandbox::Sandbox;

const ROUNDS: usize = 15;
const PER_ROUND: usize = 40;
const WRITES: usize = 400;

fn send() -> CashCollectionSend {
    CashCollectionSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        Amount::new(Decimal::from(10)),
        Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        CashReceiver::new(
            Customer::new(
                FirstName::new("Rami"),
                LastName::new("Haddad"),
                "+96170123456",
            ),
            Identity::new(DateOfBirth::parse("07-03-1990").expect("date")),
        ),
        Reason::FamilySupport,
        SourceOfFunds::Salary,
    )
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

async fn plain_round(client: &TransferClient) -> Duration {
    let started = Instant::now();
    for _ in 0..PER_ROUND {
        let p = client.prepare_send(send()).expect("prepare");
        let _ = client.send(&p).await.expect("sent");
    }
    started.elapsed()
}

async fn journaled_round(client: &TransferClient, journal: &Journal) -> Duration {
    let t = journal.transfer(client.clone());
    let started = Instant::now();
    for _ in 0..PER_ROUND {
        let p = client.prepare_send(send()).expect("prepare");
        let _ = t.send(&p).await.expect("sent");
    }
    started.elapsed()
}

async fn measure(name: &str, url: &str, client: &TransferClient) {
    // WHISH_BENCH_DURABLE_OUTCOMES=1: every write waits for the disk (the outcome's too).
    let durable = std::env::var("WHISH_BENCH_DURABLE_OUTCOMES").is_ok_and(|v| v == "1");
    let journal = Journal::builder(url)
        .durable_outcomes(durable)
        .open()
        .await
        .expect("journal");
    // Warm both paths (connections, the journal's tables).
    plain_round(client).await;
    journaled_round(client, &journal).await;
    let mut ratios = Vec::new();
    let (mut plain_us, mut journal_us) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (p, j) = if round % 2 == 0 {
            let p = plain_round(client).await;
            (p, journaled_round(client, &journal).await)
        } else {
            let j = journaled_round(client, &journal).await;
            (plain_round(client).await, j)
        };
        ratios.push(j.as_secs_f64() / p.as_secs_f64());
        plain_us.push(p.as_secs_f64() * 1e6 / PER_ROUND as f64);
        journal_us.push(j.as_secs_f64() * 1e6 / PER_ROUND as f64);
    }
    let (lo, hi) = (
        ratios.iter().copied().fold(f64::MAX, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
    let (plain_median, journal_median) = (median(&mut plain_us), median(&mut journal_us));
    println!(
        "{name:<10} send: plain {plain_median:>7.0} us, journaled {journal_median:>7.0} us; ratio journaled/plain median {:.2} (spread {lo:.2}..{hi:.2}, {ROUNDS} interleaved rounds of {PER_ROUND})",
        median(&mut ratios),
    );
    // One durable write: the status-change record (a read, then an insert committed to disk).
    let mut writes = Vec::with_capacity(WRITES);
    let run = fastrand::u64(..);
    for n in 0..WRITES {
        let id = RequestId::new(1 + n as i64).expect("id");
        let started = Instant::now();
        journal
            .observe_status(&format!("bench-{run}-{n}"), id, &TransferStatus::Sent)
            .await
            .expect("write");
        writes.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let write_median = percentile(&mut writes, 0.5);
    println!(
        "{name:<10} one journal write: median {write_median:.0} us, p90 {:.0} us, p99 {:.0} us ({WRITES} writes)",
        percentile(&mut writes, 0.9),
        percentile(&mut writes, 0.99),
    );
    println!(
        "{name:<10} journaled minus plain = {:.2} x one journal write (goal: at most 1.2: one durable write a send, not two)",
        (journal_median - plain_median) / write_median
    );
    journal.close().await;
}

/// A SQLite journal of `finals` final entries and `open` open ones, built with one statement.
async fn built(dir: &std::path::Path, finals: i64, open: i64) -> Journal {
    use sqlx::Connection;
    let path = dir.join(format!("scale-{finals}.sqlite"));
    let url = format!("sqlite:{}", path.display());
    Journal::open(&url).await.expect("journal").close().await;
    let mut c = sqlx::SqliteConnection::connect(&url)
        .await
        .expect("connect");
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) \
         INSERT INTO whish_journal_entries (service, operation, idem_key, context, request, \
             state, attempts, created_ms, updated_ms, outcome, lease_token) \
         SELECT 'money-transfer', 'send', 'bulk-' || i, NULL, x'7b7d', \
             CASE WHEN i % ($1 / $2) = 0 THEN 'intended' ELSE 'accepted' END, 1, i, i, NULL, 0 \
         FROM n",
    )
    .bind(finals + open)
    .bind(open)
    .execute(&mut c)
    .await
    .expect("bulk insert");
    Journal::open(&url).await.expect("journal")
}

/// `list --open` and `recover` over a small and a large journal with the same open entries.
async fn scale() {
    use whish_journal::{Clients, Listing, Recovery};
    let dir = std::env::temp_dir().join(format!("whish-journal-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut times = Vec::new();
    for finals in [1_000i64, 1_000_000] {
        let journal = built(&dir, finals, 100).await;
        let (mut lists, mut recovers) = (Vec::new(), Vec::new());
        for _ in 0..15 {
            let started = Instant::now();
            let open = journal.list(&Listing::new().open()).await.expect("list");
            lists.push(started.elapsed().as_secs_f64() * 1e3);
            assert!(open.len() >= 100);
            // No client: the open entries are examined and left as they are (the database's
            // share of a recovery, without the calls).
            let started = Instant::now();
            let _ = journal
                .recover(&Clients::new(), &Recovery::new())
                .await
                .expect("recover");
            recovers.push(started.elapsed().as_secs_f64() * 1e3);
        }
        let (l, r) = (median(&mut lists), median(&mut recovers));
        println!(
            "sqlite     {finals:>9} final + 100 open entries: list --open {l:.2} ms, recover {r:.2} ms (medians of 15)"
        );
        times.push((l, r));
        journal.close().await;
    }
    println!(
        "sqlite     1 000 000 against 1 000 final entries: list --open {:.2}x, recover {:.2}x (goal: within 2x)",
        times[1].0 / times[0].0,
        times[1].1 / times[0].1
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    // `cargo test --benches` runs this binary with `--bench` absent: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let plenty = Decimal::from(1_000_000_000u64);
        let sb = Sandbox::builder()
            .lenient(true)
            .transfer_balance("USD", plenty)
            .limits("USD", plenty, plenty)
            .start()
            .await
            .expect("sandbox");
        let c = sb.transfer_credentials();
        let client = TransferClient::builder(ClientSettings::new(sb.transfer_base_url()))
            .username(c.username.clone())
            .key(SecretString::from(c.key.clone()))
            .build()
            .expect("client");
        println!("whish-journal: the journal's cost on a send, against the in-process sandbox");
        let dir = std::env::temp_dir().join(format!("whish-journal-bench-{}", std::process::id()));
        measure(
            "sqlite",
            &format!("sqlite:{}", dir.join("journal.sqlite").display()),
            &client,
        )
        .await;
        match std::env::var("WHISH_TEST_POSTGRES_URL") {
            Ok(url) if !url.is_empty() => measure("postgres", &url, &client).await,
            _ => println!("postgres   NOT RUN: WHISH_TEST_POSTGRES_URL is not set"),
        }
        let _ = std::fs::remove_dir_all(&dir);
        scale().await;
        sb.shutdown().await;
    });
}
