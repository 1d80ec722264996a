//! The SDK against the same work written by hand, each pair measured in the same run.
//!
//! - `fee_quote/{sdk,baseline}`: one fee quote against a local server. The baseline is what a
//!   careful hand-written call does: reqwest + serde_json, the same headers and body, a struct
//!   with `f64` fields. Goal: SDK/baseline median <= 1.05.
//! - `fee_quote_x64/{sdk,baseline}`: 64 concurrent quotes on one client. Goal: throughput ratio
//!   (baseline time / SDK time) >= 0.95.
//! - `fee_decode/{sdk,baseline}`: the CPU part of one quote, decoding its reply (no goal; it
//!   shows what the SDK's exact decimals and envelope cost on a small reply).
//! - `statement_decode/{sdk,baseline}`: a 100 000-transaction statement body decoded by the SDK
//!   (envelope, exact decimals, parsed dates, typed enums) and by serde_json into an equivalent
//!   plain struct with `f64` fields. Goal: <= 1.3x. Peak memory of each decode is measured in a
//!   child process from the kernel's high-water mark (Linux): goal under 3x the JSON size.
//!
//! `cargo bench -p whish-money-transfer --bench transfer` prints criterion's figures, then the
//! ratios and the memory table. docs/performance.md holds the latest ones.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use criterion::Criterion;
use serde::Deserialize;
use whish_core::{Amount, Currency, Envelope, SecretString};
use whish_money_transfer::{CountryId, CurrencyStatement, FeeRequest, TransferClient};

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

impl Baseline {
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

fn output_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
        .join("criterion")
}

fn median_ns(dir: &std::path::Path, id: &str) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join(id).join("new/estimates.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

async fn server() -> String {
    let app = axum::Router::new().fallback(|| async {
        (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            FEES_BODY,
        )
    });
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = tcp.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(tcp, app).await.expect("serve") });
    format!("http://{addr}/api")
}

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
    let base = rt.block_on(server());
    let sdk = Arc::new(
        TransferClient::builder(base.clone())
            .username(USER)
            .key(SecretString::from(KEY))
            .build()
            .expect("client"),
    );
    let baseline = Arc::new(Baseline {
        http: reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client"),
        url: format!("{base}/api/woo/send/money/fees"),
        next_id: AtomicI64::new(1),
    });
    let request = FeeRequest::new(
        CountryId::LEBANON,
        Currency::Usd,
        "100".parse::<Amount>().expect("amount"),
    );
    // Both answer the same quote before anything is timed.
    let q = rt.block_on(sdk.fees(&request)).expect("sdk quote");
    let b = rt.block_on(baseline.quote());
    assert_eq!(q.total_amount.to_exact_f64(), Some(b.total_amount));

    // Warm both alike before anything is timed (connection pools of 64, allocator arenas):
    // without it the pair measured first pays for the process's cold start.
    rt.block_on(async {
        for _ in 0..200 {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..CONCURRENT {
                let (sdk, request, baseline) = (sdk.clone(), request.clone(), baseline.clone());
                set.spawn(async move {
                    sdk.fees(&request).await.expect("quote");
                    baseline.quote().await;
                });
            }
            set.join_all().await;
        }
    });
    let dir = output_dir();
    let mut c = Criterion::default()
        .output_directory(&dir)
        .sample_size(60)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6))
        .configure_from_args();

    let mut g = c.benchmark_group("fee_quote");
    g.bench_function("sdk", |bn| {
        bn.to_async(&rt)
            .iter(|| async { sdk.fees(&request).await.expect("quote") })
    });
    g.bench_function("baseline", |bn| {
        bn.to_async(&rt).iter(|| async { baseline.quote().await })
    });
    g.finish();

    let mut g = c.benchmark_group("fee_quote_x64");
    g.bench_function("sdk", |bn| {
        bn.to_async(&rt).iter(|| async {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..CONCURRENT {
                let (sdk, request) = (sdk.clone(), request.clone());
                set.spawn(async move { sdk.fees(&request).await.expect("quote") });
            }
            set.join_all().await
        })
    });
    g.bench_function("baseline", |bn| {
        bn.to_async(&rt).iter(|| async {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..CONCURRENT {
                let baseline = baseline.clone();
                set.spawn(async move { baseline.quote().await });
            }
            set.join_all().await
        })
    });
    g.finish();

    let mut g = c.benchmark_group("fee_decode");
    g.bench_function("sdk", |bn| {
        bn.iter(|| {
            Envelope::<whish_money_transfer::FeeQuote>::from_slice(FEES_BODY.as_bytes())
                .expect("decode")
        })
    });
    g.bench_function("baseline", |bn| {
        bn.iter(|| {
            serde_json::from_slice::<PlainEnvelope<PlainQuote>>(FEES_BODY.as_bytes())
                .expect("decode")
                .data
        })
    });
    g.finish();

    let body = statement_body(LINES);
    assert_eq!(sdk_decode(&body), LINES);
    assert_eq!(baseline_decode(&body), LINES);
    let mut g = c.benchmark_group("statement_decode");
    g.sample_size(20);
    g.bench_function("sdk", |bn| bn.iter(|| sdk_decode(&body)));
    g.bench_function("baseline", |bn| bn.iter(|| baseline_decode(&body)));
    g.finish();
    c.final_summary();

    report(&dir, body.len());
}

fn report(dir: &std::path::Path, json_len: usize) {
    let ratio = |group: &str| {
        let s = median_ns(dir, &format!("{group}/sdk"))?;
        let b = median_ns(dir, &format!("{group}/baseline"))?;
        Some((s, b))
    };
    println!("\nwhish-rs benchmark ratios (criterion medians, same run)");
    println!(
        "{:<44} {:>12} {:>12} {:>8} {:>8}",
        "figure", "sdk", "baseline", "ratio", "goal"
    );
    if let Some((s, b)) = ratio("fee_quote") {
        println!(
            "{:<44} {:>10.1}us {:>10.1}us {:>8.3} {:>8}",
            "fee quote latency, SDK/baseline",
            s / 1e3,
            b / 1e3,
            s / b,
            "<= 1.05"
        );
    }
    if let Some((s, b)) = ratio("fee_quote_x64") {
        println!(
            "{:<44} {:>8.0} op/s {:>8.0} op/s {:>8.3} {:>8}",
            "64 concurrent quotes, throughput SDK/baseline",
            CONCURRENT as f64 / (s / 1e9),
            CONCURRENT as f64 / (b / 1e9),
            b / s,
            ">= 0.95"
        );
    }
    if let Some((s, b)) = ratio("fee_decode") {
        println!(
            "{:<44} {:>10.0}ns {:>10.0}ns {:>8.3} {:>8}",
            "decode one fee reply, SDK/baseline",
            s,
            b,
            s / b,
            "-"
        );
    }
    if let Some((s, b)) = ratio("statement_decode") {
        println!(
            "{:<44} {:>10.1}ms {:>10.1}ms {:>8.3} {:>8}",
            "decode 100 000 lines, SDK/baseline",
            s / 1e6,
            b / 1e6,
            s / b,
            "<= 1.3"
        );
    }
    match (memory("sdk"), memory("baseline")) {
        (Some((len, s)), Some((_, b))) => println!(
            "{:<44} {:>10.1}MB {:>10.1}MB {:>8.2} {:>8}\n  (JSON body {:.1} MB: SDK peak {:.2}x the JSON size, baseline {:.2}x)",
            "decode peak memory growth",
            s as f64 / 1e6,
            b as f64 / 1e6,
            s as f64 / b.max(1) as f64,
            "< 3x JSON",
            len as f64 / 1e6,
            s as f64 / len as f64,
            b as f64 / len as f64,
        ),
        _ => println!(
            "peak memory: not measured (needs Linux /proc/self/clear_refs) for {json_len} bytes"
        ),
    }
}
