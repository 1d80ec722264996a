//! Hosted-collect create: the SDK against the same work written by hand, in interleaved rounds
//! of one process (`whish_testkit::bench`).
//!
//! - create latency: `prepare_payment` + `create_payment` against a loopback server answering
//!   the documented reply. The baseline is a careful hand-written call: reqwest + serde_json, the
//!   same headers and body (a counter for the externalId, no address checks), a plain reply
//!   struct. Goal: SDK/baseline <= 1.02.
//! - 64 concurrent creates on one client. Goal: throughput ratio >= 0.98.
//! - one create reply decoded (CPU only). Goal: <= 1.2.
//!
//! `cargo bench -p whish-hosted-collect --bench collect`; docs/performance.md holds the figures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use whish_core::{Amount, Currency, Envelope, SecretString};
use whish_hosted_collect::{
    CollectClient, CollectUrls, FailureCallbackUrl, FailureRedirectUrl, NewPayment,
    SuccessCallbackUrl, SuccessRedirectUrl,
};
use whish_testkit::bench::{Compare, Goal, Report, baseline_client, concurrently};

#[global_allocator]
static ALLOC: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

const CONCURRENT: usize = 64;
const UA: &str = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)";
static REPLY: OnceLock<&'static str> = OnceLock::new();

fn reply() -> &'static str {
    REPLY.get_or_init(|| {
        Box::leak(whish_testkit::fixture("hosted-collect/create.success.json").into_boxed_str())
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
struct PlainCreated {
    #[serde(rename = "collectUrl")]
    collect_url: String,
}

struct Baseline {
    http: reqwest::Client,
    url: String,
    next: AtomicU64,
}

/// The SDK's client of the service at `base`.
fn sdk_client(base: &str) -> CollectClient {
    CollectClient::builder(
        whish_core::ClientSettings::new(base).user_agent(UA.parse().expect("user agent")),
    )
    .channel("chan-42")
    .secret(SecretString::from("collect-secret"))
    .website_url("shop.example.com")
    .build()
    .expect("client")
}

impl Baseline {
    /// The hand-written client of the service at `base`.
    fn against(base: &str) -> Baseline {
        Baseline {
            http: baseline_client(),
            url: format!("{base}/payment/whish"),
            next: AtomicU64::new(1),
        }
    }

    async fn create(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(&serde_json::json!({
            "amount": "25.5",
            "currency": "USD",
            "externalId": format!("order-{n}"),
            "invoice": "Order A-17",
            "successCallbackUrl": "https://shop.example.com/whish/ok?order=A-17",
            "failureCallbackUrl": "https://shop.example.com/whish/ko?order=A-17",
            "successRedirectUrl": "https://shop.example.com/thanks",
            "failureRedirectUrl": "https://shop.example.com/retry",
        }))
        .expect("body");
        let reply = self
            .http
            .post(&self.url)
            .header("accept", "application/json")
            .header("user-agent", UA)
            .header("channel", "chan-42")
            .header("secret", "collect-secret")
            .header("websiteurl", "shop.example.com")
            .header("content-type", "application/json")
            .timeout(Duration::from_secs(30))
            .body(body)
            .send()
            .await
            .expect("send")
            .bytes()
            .await
            .expect("body");
        serde_json::from_slice::<PlainEnvelope<PlainCreated>>(&reply)
            .expect("decode")
            .data
            .expect("data")
            .collect_url
    }
}

// ---- the SDK ----

/// What `create_payment` decodes (its reply type is private; this is the same shape).
#[derive(Deserialize)]
struct Created {
    #[serde(rename = "collectUrl")]
    #[allow(dead_code)]
    collect_url: String,
}

fn urls() -> CollectUrls {
    CollectUrls::new(
        SuccessCallbackUrl::new("https://shop.example.com/whish/ok")
            .expect("url")
            .with_reference("order", "A-17"),
        FailureCallbackUrl::new("https://shop.example.com/whish/ko")
            .expect("url")
            .with_reference("order", "A-17"),
        SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
        FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
    )
}

async fn sdk_create(sdk: &CollectClient, urls: &CollectUrls) {
    let payment = NewPayment::new(
        "25.5".parse::<Amount>().expect("amount"),
        Currency::Usd,
        urls.clone(),
    )
    .invoice("Order A-17");
    let prepared = sdk.prepare_payment(payment).expect("prepared");
    sdk.create_payment(&prepared).await.expect("created");
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    reply();
    let base = rt.block_on(whish_testkit::bench::serve(|_| reply()));
    let sdk = Arc::new(sdk_client(&base));
    let baseline = Arc::new(Baseline::against(&base));
    let urls = Arc::new(urls());
    rt.block_on(sdk_create(&sdk, &urls));
    assert!(rt.block_on(baseline.create()).starts_with("https://"));

    let mut report = Report::new("whish-hosted-collect");
    report.pair_async(
        &rt,
        "create latency, SDK/baseline",
        Compare::Latency,
        Goal::AtMost(1.02),
        1,
        || sdk_create(&sdk, &urls),
        || async {
            baseline.create().await;
        },
    );
    report.pair_async(
        &rt,
        "64 concurrent creates, throughput SDK/baseline",
        Compare::Throughput,
        Goal::AtLeast(0.98),
        CONCURRENT as u64,
        || {
            concurrently(CONCURRENT, || {
                let (sdk, urls) = (sdk.clone(), urls.clone());
                async move {
                    sdk_create(&sdk, &urls).await;
                }
            })
        },
        || {
            concurrently(CONCURRENT, || {
                let baseline = baseline.clone();
                async move {
                    baseline.create().await;
                }
            })
        },
    );
    // The client's own CPU per call, on clients of their own against a server on another
    // thread: the figure a few microseconds of work added to a call shows in.
    let cpu_base = whish_testkit::bench::serve_elsewhere(|_| reply());
    let cpu_sdk = sdk_client(&cpu_base);
    let cpu_baseline = Baseline::against(&cpu_base);
    report.pair_cpu(
        "create, client CPU per call, SDK/baseline",
        Goal::AtMost(1.02),
        || sdk_create(&cpu_sdk, &urls),
        || async {
            cpu_baseline.create().await;
        },
    );
    let body = reply().as_bytes();
    report.pair(
        "decode one create reply, SDK/baseline",
        Compare::Latency,
        Goal::AtMost(1.2),
        |n| {
            for _ in 0..n {
                std::hint::black_box(
                    Envelope::<Created>::from_slice(std::hint::black_box(body)).expect("decode"),
                );
            }
        },
        |n| {
            for _ in 0..n {
                std::hint::black_box(
                    serde_json::from_slice::<PlainEnvelope<PlainCreated>>(std::hint::black_box(
                        body,
                    ))
                    .expect("decode")
                    .data,
                );
            }
        },
    );
    report.note(format!(
        "call future: SDK {} bytes, baseline {} bytes",
        std::mem::size_of_val(&sdk_create(&sdk, &urls)),
        std::mem::size_of_val(&baseline.create()),
    ));
    report.print();
}
