//! What the journal costs, in one run, per backend (SQLite always; PostgreSQL when
//! `WHISH_TEST_POSTGRES_URL` names a server):
//!
//! - (a) the latency of one durable journal write (a status change claimed: a read and an
//!   insert committed to disk), median, p90, p99, measured a share in each round of (b);
//! - (b) a money-transfer send through the journal against the same send without it, one at a
//!   time, against the same in-process sandbox, in interleaved rounds (A B, B A, ...) so that a
//!   busy neighbour slows both alike: journaled minus plain, as a multiple of (a), each round's
//!   over its own writes and the median of the rounds (goal: at most 1.2, one durable write a
//!   send);
//! - (c) the throughput of 16 sends in flight, journaled over plain, in interleaved rounds
//!   (goal: at least 0.8), against the sandbox as it is, and against one that answers each
//!   send 20 ms later;
//! - (e) the same 16 in flight, the sends recorded ahead in one reservation
//!   (`JournaledTransfer::reserve`, what a payout batch does) over plain (goal: at least 0.8);
//! - (d) `list(Listing::new().open())` and `recover()` over a journal of 1 000 000 final entries
//!   and 100 open ones against 1 000 final and 100 open (goal: within 2x), the journals built
//!   with one bulk statement, their keys spread over the Request-id space as drawn ones are;
//! - (f) over the same two journals, what a payout batch's reservation costs a send (40
//!   reservations of 256 sends with drawn Request-ids): no goal, a figure for sizing retention.
//!
//! `cargo bench -p whish-journal --bench journal`; `WHISH_BENCH_DURABLE_OUTCOMES=1` opens the
//! journals with `durable_outcomes(true)`; `WHISH_BENCH_ONLY=ab` measures (a) and (b) alone,
//! `WHISH_BENCH_ONLY=scale` (d) and (f) alone. On PostgreSQL each journal is a fresh database of
//! the server, dropped at the end. docs/performance.md holds the latest figures.

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
/// Journal writes for (a), spread evenly over the rounds of (b).
const WRITES: usize = 600;
/// Sends in flight in (c), and sends per round.
const IN_FLIGHT: usize = 16;
const BURST: usize = 320;

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

/// [`BURST`] sends, [`IN_FLIGHT`] at a time (each of 16 tasks sends its share one after the
/// other), through the journal or not.
async fn burst(client: &TransferClient, journal: Option<&Journal>) -> Duration {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let client = client.clone();
        let journaled = journal.map(|j| j.transfer(client.clone()));
        tasks.spawn(async move {
            for _ in 0..BURST / IN_FLIGHT {
                let p = client.prepare_send(send()).expect("prepare");
                let _ = match &journaled {
                    Some(t) => t.send(&p).await.expect("sent"),
                    None => client.send(&p).await.expect("sent"),
                };
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("join");
    }
    started.elapsed()
}

/// [`BURST`] sends recorded ahead in one reservation (`JournaledTransfer::reserve`), then sent
/// [`IN_FLIGHT`] at a time: what a batch does.
async fn burst_reserved(client: &TransferClient, journal: &Journal) -> Duration {
    let started = Instant::now();
    let t = journal.transfer(client.clone());
    let prepared: Vec<_> = (0..BURST)
        .map(|_| client.prepare_send(send()).expect("prepare"))
        .collect();
    let reserved = t.reserve(prepared).await;
    let mut tasks = tokio::task::JoinSet::new();
    for r in reserved {
        while tasks.len() >= IN_FLIGHT {
            tasks.join_next().await.expect("a task").expect("join");
        }
        let t = t.clone();
        tasks.spawn(async move {
            let _ = t.send_reserved(r).await.expect("sent");
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("join");
    }
    started.elapsed()
}

/// (e): `rounds` interleaved rounds of [`BURST`] sends reserved ahead against [`BURST`] plain
/// sends, [`IN_FLIGHT`] at a time.
async fn reserved_throughput(
    name: &str,
    client: &TransferClient,
    journal: &Journal,
    rounds: usize,
) {
    let mut throughput = Vec::new();
    let (mut plain_rate, mut journal_rate) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (p, j) = if round % 2 == 0 {
            let p = burst(client, None).await;
            (p, burst_reserved(client, journal).await)
        } else {
            let j = burst_reserved(client, journal).await;
            (burst(client, None).await, j)
        };
        throughput.push(p.as_secs_f64() / j.as_secs_f64());
        plain_rate.push(BURST as f64 / p.as_secs_f64());
        journal_rate.push(BURST as f64 / j.as_secs_f64());
    }
    let (lo, hi) = spread(&throughput);
    println!(
        "{name:<10} (e) {BURST} sends reserved ahead, {IN_FLIGHT} in flight, answered after 0 ms: plain {:.0} sends/s, journaled {:.0} sends/s; throughput journaled/plain {:.2} (spread {lo:.2}..{hi:.2}, {rounds} interleaved rounds; goal: at least 0.8)",
        median(&mut plain_rate),
        median(&mut journal_rate),
        median(&mut throughput),
    );
}

fn spread(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::MAX, f64::min),
        v.iter().copied().fold(0.0, f64::max),
    )
}

/// (c): `rounds` interleaved rounds of [`BURST`] sends, [`IN_FLIGHT`] at a time, each send
/// answered `latency` later.
async fn throughput(
    name: &str,
    client: &TransferClient,
    journal: &Journal,
    sb: &Sandbox,
    latency: Duration,
    rounds: usize,
) {
    let mut throughput = Vec::new();
    let (mut plain_rate, mut journal_rate) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if !latency.is_zero() {
            // Every send of the round, both ways alike.
            sb.inject(
                whish_sandbox::Endpoint::TransferSend,
                whish_sandbox::Fault::Delay(latency),
                2 * BURST as u32,
            );
        }
        let (p, j) = if round % 2 == 0 {
            let p = burst(client, None).await;
            (p, burst(client, Some(journal)).await)
        } else {
            let j = burst(client, Some(journal)).await;
            (burst(client, None).await, j)
        };
        throughput.push(p.as_secs_f64() / j.as_secs_f64());
        plain_rate.push(BURST as f64 / p.as_secs_f64());
        journal_rate.push(BURST as f64 / j.as_secs_f64());
    }
    let (lo, hi) = spread(&throughput);
    println!(
        "{name:<10} (c) {IN_FLIGHT} in flight, sends answered after {} ms: plain {:.0} sends/s, journaled {:.0} sends/s; throughput journaled/plain {:.2} (spread {lo:.2}..{hi:.2}, {rounds} interleaved rounds of {BURST}; goal: at least 0.8)",
        latency.as_millis(),
        median(&mut plain_rate),
        median(&mut journal_rate),
        median(&mut throughput),
    );
}

/// `WHISH_BENCH_ONLY=ab`: measure (a) and (b) only.
fn ab_only() -> bool {
    std::env::var("WHISH_BENCH_ONLY").is_ok_and(|v| v == "ab")
}

/// `WHISH_BENCH_ONLY=scale`: measure (d) and (f) only.
fn scale_only() -> bool {
    std::env::var("WHISH_BENCH_ONLY").is_ok_and(|v| v == "scale")
}

async fn measure(name: &str, url: &str, client: &TransferClient, sb: &Sandbox) {
    // WHISH_BENCH_DURABLE_OUTCOMES=1: every write waits for the disk (the outcome's too).
    let durable = std::env::var("WHISH_BENCH_DURABLE_OUTCOMES").is_ok_and(|v| v == "1");
    let journal = Journal::builder(url)
        .durable_outcomes(durable)
        .open()
        .await
        .expect("journal");
    // Warm every path (connections, the journal's tables).
    plain_round(client).await;
    journaled_round(client, &journal).await;
    burst(client, None).await;
    burst(client, Some(&journal)).await;
    // (a) One durable write: the status-change record (a read, then an insert committed to
    // disk), and (b) one send at a time, in interleaved rounds: a round times plain sends,
    // journaled sends and a share of the writes (plain, writes, journaled in even rounds;
    // journaled, writes, plain in odd ones). A disk's fsync time moves from second to second
    // on a shared machine, so each round's journaled-minus-plain is taken over that round's
    // own write median, and the figure is the median of the rounds.
    let run = fastrand::u64(..);
    let mut writes = Vec::with_capacity(WRITES);
    let mut ratios = Vec::new();
    let mut multiples = Vec::new();
    let (mut plain_us, mut journal_us) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let writes_round = async {
            let mut these = Vec::with_capacity(WRITES / ROUNDS);
            for n in 0..WRITES / ROUNDS {
                let id = RequestId::new(1 + (round * WRITES + n) as i64).expect("id");
                let started = Instant::now();
                journal
                    .observe_status(
                        &format!("bench-{run}-{round}-{n}"),
                        id,
                        &TransferStatus::Sent,
                    )
                    .await
                    .expect("write");
                these.push(started.elapsed().as_secs_f64() * 1e6);
            }
            these
        };
        let (p, mut these, j) = if round % 2 == 0 {
            let p = plain_round(client).await;
            let these = writes_round.await;
            (p, these, journaled_round(client, &journal).await)
        } else {
            let j = journaled_round(client, &journal).await;
            let these = writes_round.await;
            (plain_round(client).await, these, j)
        };
        writes.extend_from_slice(&these);
        let (p_us, j_us) = (
            p.as_secs_f64() * 1e6 / PER_ROUND as f64,
            j.as_secs_f64() * 1e6 / PER_ROUND as f64,
        );
        multiples.push((j_us - p_us) / percentile(&mut these, 0.5));
        ratios.push(j.as_secs_f64() / p.as_secs_f64());
        plain_us.push(p_us);
        journal_us.push(j_us);
    }
    let write_median = percentile(&mut writes, 0.5);
    println!(
        "{name:<10} (a) one journal write: median {write_median:.0} us, p90 {:.0} us, p99 {:.0} us ({} writes, {} a round)",
        percentile(&mut writes, 0.9),
        percentile(&mut writes, 0.99),
        writes.len(),
        WRITES / ROUNDS,
    );
    let (lo, hi) = spread(&ratios);
    let (plain_median, journal_median) = (median(&mut plain_us), median(&mut journal_us));
    println!(
        "{name:<10} (b) one send at a time: plain {plain_median:.0} us, journaled {journal_median:.0} us (ratio {:.2}, spread {lo:.2}..{hi:.2}, {ROUNDS} interleaved rounds of {PER_ROUND})",
        median(&mut ratios),
    );
    let (lo, hi) = spread(&multiples);
    let cost = median(&mut multiples);
    println!(
        "{name:<10} (b) journaled minus plain = {cost:.2} x one journal write (median of the rounds, each over its own writes: {lo:.2}..{hi:.2}; goal: at most 1.2)",
    );
    whish_testkit::budget::record(
        "whish-journal",
        &format!("{name}: journaled send minus plain, in journal writes"),
        cost,
        whish_testkit::budget::Goal::AtMost(1.2),
    );
    // WHISH_BENCH_ONLY=ab: (a) and (b) alone (a quick look at one send's cost).
    if ab_only() {
        journal.close().await;
        return;
    }
    // (c) 16 in flight, against the sandbox as it is (it answers in a few microseconds), then
    // against one that answers each send 20 ms later, as a service across a network does.
    throughput(name, client, &journal, sb, Duration::ZERO, ROUNDS).await;
    throughput(name, client, &journal, sb, Duration::from_millis(20), 5).await;
    // (e) What a batch does: a whole round recorded in one write before any is sent.
    burst_reserved(client, &journal).await;
    reserved_throughput(name, client, &journal, ROUNDS).await;
    journal.close().await;
}

/// The recorded request of every bulk entry: a JSON object about as long as a cash send's body
/// (480 bytes), so that the journal is as large on disk as a real one of that many entries.
fn bulk_request() -> Vec<u8> {
    format!("{{\"pad\":\"{}\"}}", "x".repeat(470)).into_bytes()
}

/// The bulk insert of (d): `$1` entries, one in `$1 / $2` open (`intended`), the rest
/// `accepted`; `n(i)` is the numbers 1 to `$1`, and `key` a random positive 63-bit number as
/// text (a drawn Request-id: the keys of a real journal are spread over the whole key space),
/// both written per backend.
fn bulk(key: &str) -> String {
    format!(
        "INSERT INTO whish_journal_entries (service, operation, idem_key, context, \
         request, state, attempts, created_ms, updated_ms, outcome, lease_token) \
         SELECT 'money-transfer', 'send', {key}, NULL, $3, \
             CASE WHEN i % ($1 / $2) = 0 THEN 'intended' ELSE 'accepted' END, 1, i, i, NULL, 0 \
         FROM n"
    )
}

/// A SQLite journal of `finals` final entries and `open` open ones, built with one statement
/// (one transaction).
async fn built_sqlite(dir: &std::path::Path, finals: i64, open: i64) -> Journal {
    use sqlx::Connection;
    let path = dir.join(format!("scale-{finals}.sqlite"));
    let url = format!("sqlite:{}", path.display());
    Journal::open(&url).await.expect("journal").close().await;
    let mut c = sqlx::SqliteConnection::connect(&url)
        .await
        .expect("connect");
    let sql = format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) {}",
        bulk("CAST((random() & 9223372036854775807) AS TEXT)")
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(finals + open)
        .bind(open)
        .bind(bulk_request())
        .execute(&mut c)
        .await
        .expect("bulk insert");
    let _ = c.close().await;
    Journal::open(&url).await.expect("journal")
}

/// A fresh database on the server `admin` names: its URL and its name.
async fn fresh_postgres(admin: &str) -> (String, String) {
    use sqlx::Connection;
    let name = format!("whish_bench_{}", uuid::Uuid::new_v4().simple());
    let mut c = sqlx::PgConnection::connect(admin).await.expect("connect");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut c)
        .await
        .expect("create a database");
    let _ = c.close().await;
    let (base, _) = admin.rsplit_once('/').expect("a URL with a database name");
    (format!("{base}/{name}"), name)
}

/// Drop the databases the bench made.
async fn drop_postgres(admin: &str, names: Vec<String>) {
    use sqlx::Connection;
    if let Ok(mut c) = sqlx::PgConnection::connect(admin).await {
        for name in names {
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name}")))
                .execute(&mut c)
                .await;
        }
    }
}

/// A PostgreSQL journal in a fresh database of the server `admin` names, built the same way,
/// then analyzed (as autovacuum does after such an insert); with the database's name, to drop.
async fn built_postgres(admin: &str, finals: i64, open: i64) -> (Journal, String) {
    use sqlx::Connection;
    let (url, name) = fresh_postgres(admin).await;
    Journal::open(&url).await.expect("journal").close().await;
    let mut c = sqlx::PgConnection::connect(&url).await.expect("connect");
    let sql = format!(
        "WITH n(i) AS (SELECT generate_series(1, $1::BIGINT)) {}",
        bulk("(floor(random() * 9.2e18))::BIGINT::TEXT")
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(finals + open)
        .bind(open)
        .bind(bulk_request())
        .execute(&mut c)
        .await
        .expect("bulk insert");
    sqlx::query("ANALYZE whish_journal_entries")
        .execute(&mut c)
        .await
        .expect("analyze");
    let _ = c.close().await;
    (Journal::open(&url).await.expect("journal"), name)
}

/// (d) `list --open` and `recover` over one journal: medians of 15, in ms.
async fn list_and_recover(journal: &Journal) -> (f64, f64) {
    use whish_journal::{Clients, Listing, Recovery};
    let (mut lists, mut recovers) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        let started = Instant::now();
        let open = journal.list(&Listing::new().open()).await.expect("list");
        lists.push(started.elapsed().as_secs_f64() * 1e3);
        assert!(open.len() >= 100);
        // No client: the open entries are claimed, examined and left as they are (the
        // database's share of a recovery, without the calls).
        let started = Instant::now();
        let _ = journal
            .recover(&Clients::new(), &Recovery::new())
            .await
            .expect("recover");
        recovers.push(started.elapsed().as_secs_f64() * 1e3);
    }
    (median(&mut lists), median(&mut recovers))
}

fn print_scale(name: &str, finals: i64, (l, r): (f64, f64)) {
    println!(
        "{name:<10} (d) {finals:>9} final + 100 open entries: list --open {l:.2} ms, recover {r:.2} ms (medians of 15)"
    );
}

fn print_scale_ratio(name: &str, times: &[(f64, f64)]) {
    println!(
        "{name:<10} (d) 1 000 000 against 1 000 final entries: list --open {:.2}x, recover {:.2}x (goal: within 2x)",
        times[1].0 / times[0].0,
        times[1].1 / times[0].1
    );
}

/// Reservations of 256 sends in (f).
const RESERVATIONS: usize = 40;

/// (f) What a reservation costs a send over `journal`: [`RESERVATIONS`] of 256 sends with
/// drawn Request-ids (recorded, never sent), their whole time over their sends, in us (a mean,
/// so that the checkpoints some of them pay are counted, as a batch pays them).
async fn reserve_cost(journal: &Journal, client: &TransferClient) -> f64 {
    let t = journal.transfer(client.clone());
    let mut spent = Duration::ZERO;
    for _ in 0..RESERVATIONS {
        let prepared: Vec<_> = (0..256)
            .map(|_| client.prepare_send(send()).expect("prepare"))
            .collect();
        let started = Instant::now();
        let reserved = t.reserve(prepared).await;
        spent += started.elapsed();
        assert_eq!(reserved.len(), 256);
    }
    spent.as_secs_f64() * 1e6 / (RESERVATIONS * 256) as f64
}

fn print_reserve(name: &str, costs: &[f64]) {
    println!(
        "{name:<10} (f) a batch's reservation ({RESERVATIONS} of 256 sends): {:.1} us a send over 1 000 final entries, {:.1} us over 1 000 000 ({:.1}x)",
        costs[0],
        costs[1],
        costs[1] / costs[0]
    );
}

/// (d) and (f) over a small and a large journal with the same open entries, per backend.
async fn scale(postgres: Option<&str>, client: &TransferClient) {
    let dir = std::env::temp_dir().join(format!("whish-journal-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (mut times, mut reserves) = (Vec::new(), Vec::new());
    for finals in [1_000i64, 1_000_000] {
        let journal = built_sqlite(&dir, finals, 100).await;
        let t = list_and_recover(&journal).await;
        print_scale("sqlite", finals, t);
        times.push(t);
        reserves.push(reserve_cost(&journal, client).await);
        journal.close().await;
    }
    print_scale_ratio("sqlite", &times);
    print_reserve("sqlite", &reserves);
    let _ = std::fs::remove_dir_all(&dir);
    let Some(admin) = postgres else {
        println!("postgres   (d) NOT RUN: WHISH_TEST_POSTGRES_URL is not set");
        return;
    };
    let (mut times, mut reserves) = (Vec::new(), Vec::new());
    let mut made = Vec::new();
    for finals in [1_000i64, 1_000_000] {
        let (journal, name) = built_postgres(admin, finals, 100).await;
        let t = list_and_recover(&journal).await;
        print_scale("postgres", finals, t);
        times.push(t);
        reserves.push(reserve_cost(&journal, client).await);
        journal.close().await;
        made.push(name);
    }
    print_scale_ratio("postgres", &times);
    print_reserve("postgres", &reserves);
    drop_postgres(admin, made).await;
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
        let postgres = std::env::var("WHISH_TEST_POSTGRES_URL")
            .ok()
            .filter(|u| !u.is_empty());
        if !scale_only() {
            measure(
                "sqlite",
                &format!("sqlite:{}", dir.join("journal.sqlite").display()),
                &client,
                &sb,
            )
            .await;
            match &postgres {
                Some(admin) => {
                    let (url, name) = fresh_postgres(admin).await;
                    measure("postgres", &url, &client, &sb).await;
                    drop_postgres(admin, vec![name]).await;
                }
                None => println!("postgres   NOT RUN: WHISH_TEST_POSTGRES_URL is not set"),
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        if !ab_only() {
            scale(postgres.as_deref(), &client).await;
        }
        sb.shutdown().await;
    });
}
