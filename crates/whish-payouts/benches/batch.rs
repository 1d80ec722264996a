//! What the journal costs a batch: the same rows sent at 16 in flight through `Batch::run` (every
//! row journaled before it is sent, its outcome recorded after), as plain sends with the client
//! (no journal, no file), and as the same file sent without a journal (read line by line, each
//! row parsed and sent: the hand-written loop), against the same in-process sandbox, in
//! interleaved rounds (plain first in even rounds, the batch first in odd ones).
//!
//! `cargo bench -p whish-payouts --bench batch [-- ROWS ROUNDS [LATENCY_MS]]` prints the median
//! of the per-round throughput ratios batch/plain with their spread (goal: at least 0.9 against
//! a service that answers in 2 ms or more; none at 0 ms, where the two cores are the limit),
//! and the same against the unjournaled file loop; then the whole process's CPU time per row of
//! each leg beyond what a run costs whatever its rows (each way measured with one row in every
//! round), and the median of the rounds' ratios of the batch's over plain sends' (goal: at most
//! 1.4), with the ratio of the whole runs beside it.
//! LATENCY_MS makes the sandbox answer every send that much later, as a real service over the
//! network does (default 0: the loopback sandbox answers at once).
//! docs/performance.md holds the latest figures.

use std::io::Write;
use std::time::{Duration, Instant};

use rust_decimal::Decimal;
use tokio::task::JoinSet;
use whish_core::{Amount, ClientSettings, Currency, SecretString};
use whish_journal::Journal;
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
    LastName, Reason, Sender, SourceOfFunds, TransferClient,
};
use whish_payouts::{Batch, Defaults, RowOutcome, RunOptions};
use whish_sandbox::Sandbox;

const IN_FLIGHT: usize = 16;

fn sender() -> Customer {
    Customer::new(
        FirstName::new("Relief"),
        LastName::new("Org"),
        "+9611000000",
    )
}

fn plain_send(i: usize) -> CashCollectionSend {
    CashCollectionSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        Amount::new(Decimal::from(10 + i % 90)),
        Sender::new(sender()),
        CashReceiver::new(
            Customer::new(
                FirstName::new("Karim"),
                LastName::new("Nassar"),
                format!("+9617{i:07}"),
            ),
            Identity::new(DateOfBirth::parse("09-09-1989").expect("date")),
        ),
        Reason::FamilySupport,
        SourceOfFunds::Savings,
    )
}

async fn plain(client: &TransferClient, rows: usize) -> Duration {
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for i in 0..rows {
        while tasks.len() >= IN_FLIGHT {
            tasks.join_next().await;
        }
        let c = client.clone();
        tasks.spawn(async move {
            let p = c.prepare_send(plain_send(i)).expect("prepare");
            c.send(&p).await.expect("send")
        });
    }
    while tasks.join_next().await.is_some() {}
    started.elapsed()
}

/// The rows of a bench file, as the batch reads them.
fn write_file(file: &std::path::Path, rows: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(file).expect("file"));
    writeln!(f, "reference,receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds").expect("w");
    for i in 0..rows {
        writeln!(
            f,
            "B{i},Karim,Nassar,+9617{i:07},09-09-1989,{},USD,Family Support,Savings",
            10 + i % 90
        )
        .expect("w");
    }
}

/// The same file sent without a journal, the way a hand-written loop does it: read line by
/// line, each row parsed into a send, sent at 16 in flight (no check pass, no record of
/// anything: a crash or a second run pays rows again).
async fn unjournaled(
    client: &TransferClient,
    dir: &std::path::Path,
    round: usize,
    rows: usize,
) -> Duration {
    use std::io::BufRead;
    let file = dir.join(format!("plain-{round}.csv"));
    write_file(&file, rows);
    let started = Instant::now();
    let reader = std::io::BufReader::new(std::fs::File::open(&file).expect("open"));
    let mut tasks = JoinSet::new();
    for line in reader.lines().skip(1) {
        let line = line.expect("line");
        let f: Vec<&str> = line.split(',').collect();
        let send = CashCollectionSend::new(
            CountryId::LEBANON,
            Currency::parse(f[6]),
            Amount::parse(f[5]).expect("amount"),
            Sender::new(sender()),
            CashReceiver::new(
                Customer::new(FirstName::new(f[1]), LastName::new(f[2]), f[3]),
                Identity::new(DateOfBirth::parse(f[4]).expect("date")),
            ),
            f[7].parse::<Reason>().expect("reason"),
            f[8].parse::<SourceOfFunds>().expect("source"),
        );
        while tasks.len() >= IN_FLIGHT {
            tasks.join_next().await;
        }
        let c = client.clone();
        tasks.spawn(async move {
            let p = c.prepare_send(send).expect("prepare");
            c.send(&p).await.expect("send")
        });
    }
    while tasks.join_next().await.is_some() {}
    started.elapsed()
}

async fn batch(
    client: &TransferClient,
    dir: &std::path::Path,
    round: usize,
    rows: usize,
) -> Duration {
    let file = dir.join(format!("round-{round}.csv"));
    write_file(&file, rows);
    let journal = Journal::open(&format!(
        "sqlite:{}",
        dir.join(format!("journal-{round}.sqlite")).display()
    ))
    .await
    .expect("journal");
    let b = Batch::new(
        format!("bench-{round}"),
        &file,
        Defaults::new()
            .from_country(CountryId::LEBANON)
            .sender(sender()),
    )
    .expect("batch");
    let started = Instant::now();
    let summary = b
        .run(
            &journal,
            client,
            &RunOptions::new().concurrency(IN_FLIGHT),
            &mut |_| Ok(()),
        )
        .await
        .expect("run");
    let took = started.elapsed();
    assert_eq!(summary.count(RowOutcome::Accepted), summary.rows);
    journal.close().await;
    took
}

/// A leg's wall time (as it measures it) and the CPU time the whole process spent while it
/// ran (the process CPU clock; zero where there is none).
async fn with_cpu(leg: impl std::future::Future<Output = Duration>) -> (Duration, Duration) {
    let cpu = || whish_testkit::bench::process_cpu().unwrap_or_default();
    let before = cpu();
    let took = leg.await;
    (took, cpu().saturating_sub(before))
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rows = args.first().copied().unwrap_or(2000);
    let rounds = args.get(1).copied().unwrap_or(7);
    let latency = Duration::from_millis(args.get(2).copied().unwrap_or(0) as u64);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let plenty = Decimal::from(1_000_000_000u64);
        let sb = Sandbox::builder()
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
        let dir = std::env::var("WHISH_BENCH_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| std::env::temp_dir())
            .join(format!("whish-batch-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        // Warm up both paths.
        let _ = plain(&client, 200).await;
        let _ = batch(&client, &dir, 999, 200).await;
        let _ = unjournaled(&client, &dir, 999, 200).await;
        let (mut ratios, mut file_ratios) = (Vec::new(), Vec::new());
        let (mut cpu_ratios, mut whole_ratios, mut b_fixed) = (Vec::new(), Vec::new(), Duration::ZERO);
        let (mut p_total, mut b_total, mut u_total) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let (mut p_cpu, mut b_cpu, mut u_cpu) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let slow = |n: usize| {
            if !latency.is_zero() {
                sb.inject(
                    whish_sandbox::Endpoint::TransferSend,
                    whish_sandbox::Fault::Delay(latency),
                    n as u32,
                );
            }
        };
        // WHISH_BENCH_LEG=batch|plain|file runs only that leg (to profile one of them), its sends
        // answered after the latency given.
        if let Ok(leg) = std::env::var("WHISH_BENCH_LEG") {
            let started = Instant::now();
            for round in 0..rounds {
                slow(rows);
                match leg.as_str() {
                    "plain" => drop(plain(&client, rows).await),
                    "file" => drop(unjournaled(&client, &dir, round, rows).await),
                    _ => drop(batch(&client, &dir, round, rows).await),
                }
            }
            println!("{leg}: {:.0} rows/s", (rows * rounds) as f64 / started.elapsed().as_secs_f64());
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        for round in 0..rounds {
            // Every send of the round answers `latency` later (every way alike), the one-row
            // legs' too.
            slow(3 * rows + 2);
            // What a run costs whatever its rows, measured with one row each way (a fresh
            // journal opened and closed, its statements prepared on each new connection, the
            // start-up recovery, the check's reads): a row's CPU is the rest.
            let ((_, b1), (_, p1)) = if round % 2 == 0 {
                let p1 = with_cpu(plain(&client, 1)).await;
                (with_cpu(batch(&client, &dir, rounds + round, 1)).await, p1)
            } else {
                let b1 = with_cpu(batch(&client, &dir, rounds + round, 1)).await;
                (b1, with_cpu(plain(&client, 1)).await)
            };
            let ((p, pc), (u, uc), (b, bc)) = if round % 2 == 0 {
                let p = with_cpu(plain(&client, rows)).await;
                let u = with_cpu(unjournaled(&client, &dir, round, rows)).await;
                (p, u, with_cpu(batch(&client, &dir, round, rows)).await)
            } else {
                let b = with_cpu(batch(&client, &dir, round, rows)).await;
                let u = with_cpu(unjournaled(&client, &dir, round, rows)).await;
                (with_cpu(plain(&client, rows)).await, u, b)
            };
            p_total += p;
            b_total += b;
            u_total += u;
            u_cpu += uc;
            // Throughput ratio batch/plain = time plain / time batch.
            ratios.push(p.as_secs_f64() / b.as_secs_f64());
            whole_ratios.push(bc.as_secs_f64() / pc.as_secs_f64());
            // A round whose legs read no more than their one-row runs (a clock that cannot
            // tell) has no ratio.
            if bc > b1 && pc > p1 {
                cpu_ratios.push((bc - b1).as_secs_f64() / (pc - p1).as_secs_f64());
            }
            b_fixed += b1.saturating_sub(p1);
            b_cpu += bc.saturating_sub(b1);
            p_cpu += pc.saturating_sub(p1);
            file_ratios.push(u.as_secs_f64() / b.as_secs_f64());
        }
        ratios.sort_by(|a, b| a.total_cmp(b));
        file_ratios.sort_by(|a, b| a.total_cmp(b));
        cpu_ratios.sort_by(|a, b| a.total_cmp(b));
        whole_ratios.sort_by(|a, b| a.total_cmp(b));
        let per_s = |d: Duration| (rows * rounds) as f64 / d.as_secs_f64();
        println!(
            "batch of {rows} rows at {IN_FLIGHT} in flight, sends answered after {} ms: plain {:.0} rows/s, journaled batch {:.0} rows/s; throughput ratio batch/plain median {:.2} (spread {:.2}..{:.2}, {rounds} interleaved rounds; {})",
            latency.as_millis(),
            per_s(p_total),
            per_s(b_total),
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1],
            if latency.is_zero() {
                "no goal: against a service that answers at once the two cores are the limit"
            } else {
                "goal at least 0.9"
            },
        );
        whish_testkit::budget::record(
            "whish-payouts",
            &format!("journaled batch / plain, answered after {} ms", latency.as_millis()),
            ratios[ratios.len() / 2],
            // Against a service that answers at once the two cores, not the journal, are the
            // limit (docs/performance.md): the goal is the batch against a 2 ms service.
            if latency.is_zero() {
                whish_testkit::budget::Goal::None
            } else {
                whish_testkit::budget::Goal::AtLeast(0.9)
            },
        );
        println!(
            "the same file sent without a journal (read, parsed, sent at {IN_FLIGHT} in flight): {:.0} rows/s; throughput ratio journaled batch/unjournaled median {:.2} (spread {:.2}..{:.2})",
            per_s(u_total),
            file_ratios[file_ratios.len() / 2],
            file_ratios[0],
            file_ratios[file_ratios.len() - 1],
        );
        // CPU per row: the whole process's (the sandbox's share is the same in every leg),
        // beyond what a run costs whatever its rows; the figure is the median of the rounds'
        // ratios, as for throughput (a round disturbed by the machine moves it least).
        let per_row = |d: Duration, n: usize| d.as_secs_f64() * 1e6 / (n * rounds) as f64;
        assert!(
            !cpu_ratios.is_empty(),
            "no round's CPU could be told from its one-row runs'"
        );
        let cpu_ratio = cpu_ratios[cpu_ratios.len() / 2];
        println!(
            "CPU per row (whole process, sandbox included), sends answered after {} ms: plain {:.1} us, journaled batch {:.1} us beyond a run's {:.1} ms (a fresh journal, its first statements, the recovery, the check's reads), unjournaled file {:.1} us; batch/plain median {cpu_ratio:.2} (spread {:.2}..{:.2}; goal at most 1.4); whole runs, their fixed cost included, median {:.2}",
            latency.as_millis(),
            per_row(p_cpu, rows - 1),
            per_row(b_cpu, rows - 1),
            b_fixed.as_secs_f64() * 1e3 / rounds as f64,
            per_row(u_cpu, rows),
            cpu_ratios[0],
            cpu_ratios[cpu_ratios.len() - 1],
            whole_ratios[whole_ratios.len() / 2],
        );
        whish_testkit::budget::record(
            "whish-payouts",
            &format!(
                "journaled batch, CPU per row / plain, answered after {} ms",
                latency.as_millis()
            ),
            cpu_ratio,
            whish_testkit::budget::Goal::AtMost(1.4),
        );
        let _ = std::fs::remove_dir_all(&dir);
    });
}
