//! The SDK against the same work written by hand, in interleaved rounds of one process
//! (`whish_testkit::bench`): each figure is the median of the per-round ratios, with its spread.
//!
//! - fee quote latency: one `fees` call against a loopback server. The baseline is what a careful
//!   hand-written call does: reqwest + serde_json, the same headers and body, a reply struct with
//!   `f64` fields. Goal: SDK/baseline <= 1.02.
//! - 64 concurrent quotes on one client. Goal: throughput ratio (baseline time / SDK time) >= 0.98.
//! - one fee reply decoded (CPU only). Goal: <= 1.2.
//! - a 100 000-transaction statement decoded by the SDK (envelope, exact decimals, parsed dates,
//!   typed enums) and by serde_json into an equivalent plain struct with `f64` fields and
//!   `String` dates. Goal: <= 1.0. Peak memory of each decode is measured in a child process from
//!   the kernel's high-water mark (Linux): goal under 3x the JSON size.
//!
//! `cargo bench -p whish-money-transfer --bench transfer`; docs/performance.md holds the figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::Deserialize;
use whish_core::{Amount, Currency, Envelope, SecretString};
use whish_money_transfer::{CountryId, CurrencyStatement, FeeRequest, TransferClient};
use whish_testkit::bench::{Compare, Goal, Report, baseline_client, concurrently};

#[global_allocator]
static ALLOC: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

const FEES_BODY: &str = r#"{"status":true,"code":null,"data":{"fees":5.0,"amount":100.0,"totalAmount":105.0},"dialog":null,"extra":null,"actions":null}"#;
const KEY: &str = "bench-key";
const USER: &str = "merchant-7";
const LINES: usize = 100_000;
const CONCURRENT: usize = 64;

// ---- the hand-written baseline ----

#[derive(Deserialize)]
struct PlainEnvelope<T> {
    #[allow(dead_code)]
    status: bool,
    #[allow(dead_code)]
    code: Option<serde_json::Value>,
    data: Option<T>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct PlainQuote {
    fees: f64,
    amount: f64,
    total_amount: f64,
}

#[derive(Deserialize)]
struct PlainList {
    list: Vec<PlainStatement>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct PlainStatement {
    transactions: Vec<PlainLine>,
    current_balance: Option<PlainBalance>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct PlainLine {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    debit: f64,
    credit: f64,
    balance: f64,
    currency: String,
    date: String,
    request_id: Option<i64>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct PlainBalance {
    currency: String,
    balance: f64,
    date: String,
}

struct Baseline {
    http: reqwest::Client,
    url: String,
    next_id: AtomicI64,
}

/// The SDK's client of the service at `base`.
fn sdk_client(base: &str) -> TransferClient {
    TransferClient::builder(base)
        .username(USER)
        .key(SecretString::from(KEY))
        .build()
        .expect("client")
}

impl Baseline {
    /// The hand-written client of the service at `base`.
    fn against(base: &str) -> Baseline {
        Baseline {
            http: baseline_client(),
            url: format!("{base}/api/woo/send/money/fees"),
            next_id: AtomicI64::new(1),
        }
    }

    async fn quote(&self) -> PlainQuote {
        let body = serde_json::to_vec(&serde_json::json!({
            "fromCountry": 1, "toCountry": 1, "currencyId": 2,
            "paymentMode": "CASH_COLLECTION", "amount": 100, "deductFees": false,
        }))
        .expect("body");
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let reply = self
            .http
            .post(&self.url)
            .header("accept", "application/json")
            .header("username", USER)
            .header("key", KEY)
            .header("request-id", id)
            .header("content-type", "application/json")
            .timeout(Duration::from_secs(30))
            .body(body)
            .send()
            .await
            .expect("send")
            .bytes()
            .await
            .expect("body");
        serde_json::from_slice::<PlainEnvelope<PlainQuote>>(&reply)
            .expect("decode")
            .data
            .expect("data")
    }
}

// ---- the SDK ----

#[derive(Deserialize)]
struct List {
    list: Vec<CurrencyStatement>,
}

fn sdk_decode(body: &[u8]) -> usize {
    let e = Envelope::<List>::from_slice(body).expect("decode");
    e.data.map_or(0, |d| d.list[0].transactions.len())
}

fn baseline_decode(body: &[u8]) -> usize {
    let e: PlainEnvelope<PlainList> = serde_json::from_slice(body).expect("decode");
    e.data.map_or(0, |d| d.list[0].transactions.len())
}

/// A statement of `n` transactions, written directly as text (the shape of the fixture).
fn statement_body(n: usize) -> Vec<u8> {
    use std::fmt::Write;
    let mut s = String::with_capacity(n * 170 + 256);
    s.push_str(r#"{"status":true,"code":null,"data":{"list":[{"transactions":["#);
    let mut balance: i64 = 100_000_000_000; // cents, enough to stay positive
    for i in 0..n {
        let cents = 1_000 + (i as i64 * 7_919) % 49_000;
        let topup = i % 10 == 0;
        let (debit, credit) = if topup { (cents, 0) } else { (0, cents) };
        balance += debit - credit;
        let money = |c: i64| format!("{}.{:02}", c / 100, c % 100);
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            r#"{{"id":"{}","type":"{}","debit":{},"credit":{},"balance":{},"currency":"USD","date":"2026-08-{:02} {:02}:{:02}:{:02}","requestId":{}}}"#,
            if topup {
                String::new()
            } else {
                format!("TR-2026-{i:07}")
            },
            if topup { "TOPUP" } else { "TRANSFER" },
            money(debit),
            money(credit),
            money(balance),
            1 + i % 28,
            i % 24,
            i % 60,
            (i * 7) % 60,
            if topup {
                "null".to_owned()
            } else {
                (1_755_770_400_000_001i64 + i as i64).to_string()
            },
        );
    }
    let _ = write!(
        s,
        r#"],"currentBalance":{{"currency":"USD","balance":{}.{:02},"date":"2026-08-31 23:59:59"}}}}]}},"dialog":null}}"#,
        balance / 100,
        balance % 100
    );
    s.into_bytes()
}

// ---- peak memory, in a child process ----

fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// In the child: build the body, reset the high-water mark, decode, report the growth.
fn measure_memory_child(which: &str) {
    let body = statement_body(LINES);
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the RSS high-water mark");
    let before = rss_kib("VmRSS:");
    let n = match which {
        "sdk" => sdk_decode(&body),
        _ => baseline_decode(&body),
    };
    let peak = rss_kib("VmHWM:");
    assert_eq!(n, LINES);
    println!("{} {}", body.len(), peak.saturating_sub(before) * 1024);
}

fn memory(which: &str) -> Option<(u64, u64)> {
    let out = std::process::Command::new(std::env::current_exe().ok()?)
        .env("WHISH_BENCH_MEMORY", which)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}

// ---- the run ----

/// The client's CPU per call, SDK over baseline: the SDK's checks, exact amounts, spans and
/// resend machinery against a bare reqwest call, held to the latency goal (what a user did not
/// install costs nothing).
const CPU_GOAL: f64 = 1.02;

fn main() {
    if let Ok(which) = std::env::var("WHISH_BENCH_MEMORY") {
        measure_memory_child(&which);
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let base = rt.block_on(whish_testkit::bench::serve(|_| FEES_BODY));
    let base = format!("{base}/api");
    let sdk = Arc::new(sdk_client(&base));
    let baseline = Arc::new(Baseline::against(&base));
    let request = FeeRequest::new(
        CountryId::LEBANON,
        Currency::Usd,
        "100".parse::<Amount>().expect("amount"),
    );
    // Both answer the same quote before anything is timed.
    let q = rt.block_on(sdk.fees(&request)).expect("sdk quote");
    let b = rt.block_on(baseline.quote());
    assert_eq!(q.total_amount.to_exact_f64(), Some(b.total_amount));
    // One task of a concurrent batch: `n` calls in a row, on its own handles to the clients.
    let sdk_calls = |n: usize| {
        let (sdk, request) = (sdk.clone(), request.clone());
        async move {
            for _ in 0..n {
                sdk.fees(&request).await.expect("quote");
            }
        }
    };
    let baseline_calls = |n: usize| {
        let baseline = baseline.clone();
        async move {
            for _ in 0..n {
                baseline.quote().await;
            }
        }
    };

    // Profiling aid: one side alone, 64 wide, for `perf` or `strace -c`
    // (WHISH_BENCH_SIDE=sdk|baseline, WHISH_BENCH_CALLS, default 20 000). With
    // WHISH_BENCH_ONE=1, one call at a time on a single-threaded runtime against a server on
    // another thread, after 2 000 calls to warm up: the client CPU figure's set-up, for
    // `valgrind --tool=callgrind --separate-threads=yes --cache-sim=yes --branch-sim=yes`
    // (the client is thread 1; docs/performance.md).
    if let Ok(side) = std::env::var("WHISH_BENCH_SIDE") {
        let calls: usize = std::env::var("WHISH_BENCH_CALLS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000);
        if std::env::var("WHISH_BENCH_ONE").is_ok_and(|v| v == "1") {
            let base = format!(
                "{}/api",
                whish_testkit::bench::serve_elsewhere(|_| FEES_BODY)
            );
            let (sdk, baseline) = (sdk_client(&base), Baseline::against(&base));
            let one = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            one.block_on(async {
                for _ in 0..2_000 + calls {
                    if side == "sdk" {
                        sdk.fees(&request).await.expect("quote");
                    } else {
                        baseline.quote().await;
                    }
                }
            });
            return;
        }
        rt.block_on(async {
            for _ in 0..calls / CONCURRENT {
                if side == "sdk" {
                    concurrently(CONCURRENT, || sdk_calls(1)).await;
                } else {
                    concurrently(CONCURRENT, || baseline_calls(1)).await;
                }
            }
        });
        return;
    }
    let mut report = Report::new("whish-money-transfer");
    report.pair_async(
        &rt,
        "fee quote latency, SDK/baseline",
        Compare::Latency,
        Goal::AtMost(1.02),
        1,
        || async {
            sdk.fees(&request).await.expect("quote");
        },
        || async {
            baseline.quote().await;
        },
    );
    report.pair_async(
        &rt,
        "64 concurrent quotes, throughput SDK/baseline",
        Compare::Throughput,
        Goal::AtLeast(0.98),
        CONCURRENT as u64,
        || concurrently(CONCURRENT, || sdk_calls(1)),
        || concurrently(CONCURRENT, || baseline_calls(1)),
    );
    // The same load without the batch barrier: 64 tasks, each making 16 calls in a row, so
    // that no core idles while a batch's last calls finish.
    report.pair_async(
        &rt,
        "64 concurrent, 16 calls each, throughput",
        Compare::Throughput,
        Goal::None,
        (CONCURRENT * 16) as u64,
        || concurrently(CONCURRENT, || sdk_calls(16)),
        || concurrently(CONCURRENT, || baseline_calls(16)),
    );
    // The client's own CPU per call, on clients of their own against a server on another
    // thread: the figure a few microseconds of work added to a call shows in.
    let cpu_base = format!(
        "{}/api",
        whish_testkit::bench::serve_elsewhere(|_| FEES_BODY)
    );
    let cpu_sdk = sdk_client(&cpu_base);
    let cpu_baseline = Baseline::against(&cpu_base);
    report.pair_cpu(
        "fee quote, client CPU per call, SDK/baseline",
        Goal::AtMost(CPU_GOAL),
        || async {
            cpu_sdk.fees(&request).await.expect("quote");
        },
        || async {
            cpu_baseline.quote().await;
        },
    );
    report.pair(
        "decode one fee reply, SDK/baseline",
        Compare::Latency,
        Goal::AtMost(1.2),
        |n| {
            for _ in 0..n {
                std::hint::black_box(
                    Envelope::<whish_money_transfer::FeeQuote>::from_slice(std::hint::black_box(
                        FEES_BODY.as_bytes(),
                    ))
                    .expect("decode"),
                );
            }
        },
        |n| {
            for _ in 0..n {
                std::hint::black_box(
                    serde_json::from_slice::<PlainEnvelope<PlainQuote>>(std::hint::black_box(
                        FEES_BODY.as_bytes(),
                    ))
                    .expect("decode")
                    .data,
                );
            }
        },
    );
    let body = statement_body(LINES);
    assert_eq!(sdk_decode(&body), LINES);
    assert_eq!(baseline_decode(&body), LINES);
    report.pair(
        "decode 100 000 statement lines, SDK/baseline",
        Compare::Latency,
        Goal::AtMost(1.0),
        |n| {
            for _ in 0..n {
                std::hint::black_box(sdk_decode(&body));
            }
        },
        |n| {
            for _ in 0..n {
                std::hint::black_box(baseline_decode(&body));
            }
        },
    );
    report.note(format!(
        "call future: SDK {} bytes, baseline {} bytes",
        std::mem::size_of_val(&sdk.fees(&request)),
        std::mem::size_of_val(&baseline.quote()),
    ));
    match (memory("sdk"), memory("baseline")) {
        (Some((len, s)), Some((_, b))) => report.note(format!(
            "decode peak memory growth: SDK {:.1} MB, baseline {:.1} MB for a {:.1} MB body: \
             SDK {:.2}x the JSON size (goal < 3x), baseline {:.2}x",
            s as f64 / 1e6,
            b as f64 / 1e6,
            len as f64 / 1e6,
            s as f64 / len as f64,
            b as f64 / len as f64,
        )),
        _ => report.note("peak memory: not measured (needs Linux /proc/self/clear_refs)"),
    }
    report.print();
}
