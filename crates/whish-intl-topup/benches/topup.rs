//! International top-up pay: the SDK against the same work written by hand, in interleaved rounds
//! of one process (`whish_testkit::bench`).
//!
//! - pay latency: `prepare_pay` + `pay` of a fetched option against a loopback server answering
//!   the documented reply. The baseline is a careful hand-written call: reqwest + serde_json, the
//!   same headers and body (the amount as an `f64`, a counter for the externalId), a plain reply
//!   struct. Goal: SDK/baseline <= 1.02.
//! - 64 concurrent pays on one client. Goal: throughput ratio >= 0.98.
//! - one pay reply decoded (CPU only). Goal: <= 1.2.
//!
//! `cargo bench -p whish-intl-topup --bench topup`; docs/performance.md holds the figures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use whish_core::{Envelope, SecretString};
use whish_intl_topup::{PayOutcome, SoldItem, TopupClient, TopupOption};
use whish_testkit::bench::{Compare, Goal, Report, baseline_client, concurrently};

#[global_allocator]
static ALLOC: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

const CONCURRENT: usize = 64;
const UA: &str = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)";
static REPLIES: OnceLock<(&'static str, &'static str)> = OnceLock::new();

/// The fetch and pay replies.
fn replies() -> (&'static str, &'static str) {
    *REPLIES.get_or_init(|| {
        let leak =
            |f: &str| -> &'static str { Box::leak(whish_testkit::fixture(f).into_boxed_str()) };
        (
            leak("intl-topup/fetch.success.json"),
            leak("intl-topup/pay.bundle.success.json"),
        )
    })
}

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
struct PlainPaid {
    #[serde(rename = "listOfSoldItems")]
    list_of_sold_items: Vec<PlainSoldItem>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct PlainSoldItem {
    transaction_id: String,
    phone: Option<String>,
    amount: Option<String>,
    original_amount: Option<String>,
    fees: Option<String>,
    service: Option<String>,
    denomination: Option<String>,
    serial: Option<String>,
    secret: Option<String>,
    formatted_secret: Option<String>,
    validity: Option<String>,
    help: Option<String>,
    expiry: Option<String>,
    date: Option<String>,
    time: Option<String>,
    picture: Option<String>,
    picture_url: Option<String>,
    voided: bool,
    from_void: bool,
    print_type: Option<i64>,
    view_type: Option<i64>,
}

struct Baseline {
    http: reqwest::Client,
    url: String,
    next: AtomicU64,
}

/// The SDK's client of the service at `base`.
fn sdk_client(base: &str) -> TopupClient {
    TopupClient::builder(
        whish_core::ClientSettings::new(base).user_agent(UA.parse().expect("user agent")),
    )
    .session_id(SecretString::from("topup-session"))
    .token(SecretString::from("topup-token"))
    .language("en")
    .build()
    .expect("client")
}

impl Baseline {
    /// The hand-written client of the service at `base`.
    fn against(base: &str) -> Baseline {
        Baseline {
            http: baseline_client(),
            url: format!("{base}/v2/example-provider/pay"),
            next: AtomicU64::new(1),
        }
    }

    async fn pay(&self) -> usize {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(&serde_json::json!({
            "amount": 3.3333333333333335_f64,
            "externalId": format!("order-{n}"),
            "optionId": "opt-third",
            "target": "971501234567",
        }))
        .expect("body");
        let reply = self
            .http
            .post(&self.url)
            .header("accept", "application/json")
            .header("user-agent", UA)
            .header("sessionid", "topup-session")
            .header("token", "topup-token")
            .header("language", "en")
            .header("content-type", "application/json")
            .timeout(Duration::from_secs(30))
            .body(body)
            .send()
            .await
            .expect("send")
            .bytes()
            .await
            .expect("body");
        serde_json::from_slice::<PlainEnvelope<PlainPaid>>(&reply)
            .expect("decode")
            .data
            .expect("data")
            .list_of_sold_items
            .len()
    }
}

// ---- the SDK ----

/// What `pay` decodes (its reply type is private; this is the same shape).
#[derive(Deserialize)]
struct Paid {
    #[serde(rename = "listOfSoldItems", default)]
    #[allow(dead_code)]
    list_of_sold_items: Vec<SoldItem>,
}

/// The service's answer to a request for `path`: the options of a fetch, else the sale.
fn answer(path: &str) -> &'static str {
    if path.ends_with("/fetch") {
        replies().0
    } else {
        replies().1
    }
}

async fn sdk_pay(sdk: &TopupClient, option: &TopupOption) -> usize {
    let prepared = sdk.prepare_pay(option).expect("prepared");
    match sdk.pay(&prepared).await.expect("paid") {
        PayOutcome::Paid(p) => p.sold_items.len(),
        other => panic!("{other:?}"),
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    replies();
    let base = rt.block_on(whish_testkit::bench::serve(answer));
    let sdk = Arc::new(sdk_client(&base));
    let baseline = Arc::new(Baseline::against(&base));
    let offer = rt
        .block_on(sdk.fetch_options(
            whish_intl_topup::ProviderId::new("example-provider"),
            "971501234567",
        ))
        .expect("fetch");
    let option = Arc::new(offer.option("opt-third").expect("option").clone());
    assert_eq!(rt.block_on(sdk_pay(&sdk, &option)), 1);
    assert_eq!(rt.block_on(baseline.pay()), 1);

    let mut report = Report::new("whish-intl-topup");
    report.pair_async(
        &rt,
        "pay latency, SDK/baseline",
        Compare::Latency,
        Goal::AtMost(1.02),
        1,
        || async {
            sdk_pay(&sdk, &option).await;
        },
        || async {
            baseline.pay().await;
        },
    );
    report.pair_async(
        &rt,
        "64 concurrent pays, throughput SDK/baseline",
        Compare::Throughput,
        Goal::AtLeast(0.98),
        CONCURRENT as u64,
        || {
            concurrently(CONCURRENT, || {
                let (sdk, option) = (sdk.clone(), option.clone());
                async move {
                    sdk_pay(&sdk, &option).await;
                }
            })
        },
        || {
            concurrently(CONCURRENT, || {
                let baseline = baseline.clone();
                async move {
                    baseline.pay().await;
                }
            })
        },
    );
    // The client's own CPU per call, on clients of their own against a server on another
    // thread: the figure a few microseconds of work added to a call shows in.
    let cpu_base = whish_testkit::bench::serve_elsewhere(answer);
    let cpu_sdk = sdk_client(&cpu_base);
    let cpu_baseline = Baseline::against(&cpu_base);
    report.pair_cpu(
        "pay, client CPU per call, SDK/baseline",
        Goal::AtMost(1.02),
        || async {
            sdk_pay(&cpu_sdk, &option).await;
        },
        || async {
            cpu_baseline.pay().await;
        },
    );
    let body = replies().1.as_bytes();
    report.pair(
        "decode one pay reply, SDK/baseline",
        Compare::Latency,
        Goal::AtMost(1.2),
        |n| {
            for _ in 0..n {
                std::hint::black_box(
                    Envelope::<Paid>::from_slice(std::hint::black_box(body)).expect("decode"),
                );
            }
        },
        |n| {
            for _ in 0..n {
                std::hint::black_box(
                    serde_json::from_slice::<PlainEnvelope<PlainPaid>>(std::hint::black_box(body))
                        .expect("decode")
                        .data,
                );
            }
        },
    );
    report.note(format!(
        "call future: SDK {} bytes, baseline {} bytes",
        std::mem::size_of_val(&sdk_pay(&sdk, &option)),
        std::mem::size_of_val(&baseline.pay()),
    ));
    report.print();
}
