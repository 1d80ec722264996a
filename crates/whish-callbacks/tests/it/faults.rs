//! The receiver under faults: a handler that panics, a record that is down when a collect GET
//! arrives, and the signed and unsigned routes kept apart.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;
use whish_callbacks::{BoxFuture, InMemory, Notifications, StoreError};
use whish_callbacks::{HandlerError, PaymentUpdate, Receiver, TransferNotification};
use whish_core::{ClientSettings, SecretString};
use whish_hosted_collect::CollectClient;

/// A record that can be switched off, wrapped around the in-memory one.
#[derive(Clone)]
struct Flaky {
    inner: InMemory,
    down: Arc<AtomicBool>,
}

impl Flaky {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            Err("the record is down".into())
        } else {
            Ok(())
        }
    }
}

impl Notifications for Flaky {
    fn claim<'a>(&'a self, s: &'a str, t: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.claim(s, t).await
        })
    }
    fn complete<'a>(&'a self, s: &'a str, t: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.complete(s, t).await
        })
    }
    fn release<'a>(&'a self, s: &'a str, t: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.release(s, t).await
        })
    }
    fn ready(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move { self.check() })
    }
}

fn collect_client() -> CollectClient {
    // Never reached by these tests: the status read runs after the answer, against nothing.
    CollectClient::builder(
        ClientSettings::new("http://127.0.0.1:9").user_agent(
            "ReceiverTests/1.0 (https://shop.example.com; dev@shop.example.com)"
                .parse()
                .expect("ua"),
        ),
    )
    .channel("c")
    .secret(SecretString::from("s"))
    .website_url("https://shop.example.com")
    .build()
    .expect("client")
}

/// POST a transfer callback `body`, signed now (the tests' receivers accept any signature).
async fn post_signed(router: &axum::Router, body: &'static str) -> StatusCode {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    router
        .clone()
        .oneshot(
            Request::post(whish_callbacks::TRANSFER_PATH)
                .header("content-type", "application/json")
                .header("timestamp", now.to_string())
                .header(
                    "signature",
                    whish_sandbox::callback::sign(b"key", now, body.as_bytes()),
                )
                .body(Body::from(body))
                .expect("request"),
        )
        .await
        .expect("answer")
        .status()
}

async fn get(router: &axum::Router, uri: &str) -> StatusCode {
    router
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).expect("request"))
        .await
        .expect("answer")
        .status()
}

/// With its record down, a collect GET is answered 503 (the service delivers again), never a
/// 200 after which nothing is recorded.
#[tokio::test]
async fn a_collect_callback_is_not_acknowledged_while_the_record_is_down() {
    let down = Arc::new(AtomicBool::new(true));
    let record = Flaky {
        inner: InMemory::default(),
        down: down.clone(),
    };
    let receiver = Receiver::builder()
        .collect(collect_client(), |_: PaymentUpdate| async {
            Ok::<(), HandlerError>(())
        })
        .notifications(record)
        .build();
    let router = receiver.router();
    let uri = format!(
        "{}?externalId=order-1&currency=USD",
        whish_callbacks::SUCCESS_PATH
    );
    assert_eq!(get(&router, &uri).await, StatusCode::SERVICE_UNAVAILABLE);
    down.store(false, Ordering::SeqCst);
    assert_eq!(get(&router, &uri).await, StatusCode::OK);
    receiver.shutdown().await;
}

/// A handler that panics releases its claim at once, like one that returns an error: the
/// redelivery is handed on again, not dropped as "already recorded" for the claim window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_releases_its_claim_at_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let record = InMemory::new(Duration::from_secs(3600));
    let receiver = Receiver::builder()
        .transfer(
            |_: &whish_money_transfer::callback::SignedInput<'_>| true,
            move |_: TransferNotification| {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n == 0 {
                        panic!("the integrator's handler panicked");
                    }
                    Ok::<(), HandlerError>(())
                }
            },
        )
        .notifications(record.clone())
        .build();
    let router = receiver.router();
    let body =
        r#"{"date":"2026-11-23 10:00:00","externalId":42,"transferId":"TRF1","status":"RECEIVED"}"#;
    let post = || post_signed(&router, body);
    assert_eq!(post().await, StatusCode::OK);
    for _ in 0..100 {
        if calls.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The redeliveries: claimed again as soon as the panic released the claim (the claim
    // window is an hour: a claim kept by the panic would drop every one of them).
    for _ in 0..250 {
        if calls.load(Ordering::SeqCst) == 2 {
            break;
        }
        assert_eq!(post().await, StatusCode::OK);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "handed on again after the panic"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !record.claim("transfer:TRF1", "RECEIVED").await.expect("ok"),
        "delivered once the second run finished"
    );
    receiver.shutdown().await;
}

/// Clients that trickle their headers are closed after the header deadline, and the connection
/// cap holds the rest in the backlog: a genuine callback is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_do_not_starve_genuine_callbacks() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let receiver = Receiver::builder()
        .transfer(
            |_: &whish_money_transfer::callback::SignedInput<'_>| true,
            |_: TransferNotification| async { Ok::<(), HandlerError>(()) },
        )
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = receiver.clone();
    tokio::spawn(async move {
        serving
            .serve(
                listener,
                whish_callbacks::ServeLimits::new()
                    .header_read_timeout(Duration::from_millis(300))
                    .max_connections(16),
            )
            .await
    });
    // Forty clients that send half a request line and stall: more than the cap.
    let mut slow = Vec::new();
    for _ in 0..40 {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(b"POST /whish/transfer HTTP/1.1\r\nHost: x\r\n")
            .await
            .expect("write");
        slow.push(s);
    }
    let genuine = tokio::time::timeout(Duration::from_secs(10), async {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(b"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    })
    .await
    .expect("answered while the slow clients were held off");
    assert!(genuine.starts_with("HTTP/1.1 "), "{genuine}");
    // And the slow ones were closed by the header deadline.
    let mut first = slow.remove(0);
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(5), first.read(&mut buf)).await;
    assert!(
        closed.is_ok(),
        "a slow client is closed after the header deadline"
    );
    receiver.shutdown().await;
}

/// With the journal as the record and its SQLite file gone (deleted under the process), a
/// collect GET is answered 503: the record cannot be written, so the service must deliver again.
#[cfg(feature = "journal")]
#[tokio::test]
async fn a_collect_callback_with_the_journal_gone_is_not_acknowledged() {
    let dir = std::env::temp_dir().join(format!(
        "whish-callbacks-gone-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_nanos()
    ));
    let url = format!("sqlite:{}", dir.join("j.sqlite").display());
    let journal = whish_journal::Journal::open(&url).await.expect("journal");
    let receiver = Receiver::builder()
        .collect(collect_client(), |_: PaymentUpdate| async {
            Ok::<(), HandlerError>(())
        })
        .notifications(journal)
        .build();
    let router = receiver.router();
    let uri = format!(
        "{}?externalId=order-2&currency=USD",
        whish_callbacks::SUCCESS_PATH
    );
    assert_eq!(get(&router, &uri).await, StatusCode::OK);
    std::fs::remove_dir_all(&dir).expect("delete the journal");
    assert_eq!(get(&router, &uri).await, StatusCode::SERVICE_UNAVAILABLE);
    receiver.shutdown().await;
}

/// Unauthenticated collect GETs that each wait on a slow status endpoint fill their own slots
/// only: a signed transfer callback arriving meanwhile is still taken (not 503).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_collect_gets_does_not_take_the_slots_of_signed_callbacks() {
    // A status endpoint that never answers: every collect GET holds its slot.
    let stall = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let stall_addr = stall.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = stall.accept().await {
            held.push(s);
        }
    });
    let slow = CollectClient::builder(
        ClientSettings::new(format!("http://{stall_addr}")).user_agent(
            "ReceiverTests/1.0 (https://shop.example.com; dev@shop.example.com)"
                .parse()
                .expect("ua"),
        ),
    )
    .channel("c")
    .secret(SecretString::from("s"))
    .website_url("https://shop.example.com")
    .build()
    .expect("client");
    let handled = Arc::new(AtomicUsize::new(0));
    let counted = handled.clone();
    let receiver = Receiver::builder()
        .collect(slow, |_: PaymentUpdate| async {
            Ok::<(), HandlerError>(())
        })
        .transfer(
            |_: &whish_money_transfer::callback::SignedInput<'_>| true,
            move |_: TransferNotification| {
                counted.fetch_add(1, Ordering::SeqCst);
                async { Ok::<(), HandlerError>(()) }
            },
        )
        .max_in_flight(4)
        .build();
    let router = receiver.router();
    let mut busy = 0;
    for i in 0..12 {
        let uri = format!(
            "{}?externalId=flood-{i}&currency=USD",
            whish_callbacks::SUCCESS_PATH
        );
        if get(&router, &uri).await == StatusCode::SERVICE_UNAVAILABLE {
            busy += 1;
        }
    }
    assert_eq!(busy, 8, "the collect GETs have four slots of their own");
    let body =
        r#"{"date":"2026-11-23 10:00:00","externalId":7,"transferId":"TRF7","status":"RECEIVED"}"#;
    let status = post_signed(&router, body).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the signed callback still has its slots"
    );
    for _ in 0..100 {
        if handled.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(handled.load(Ordering::SeqCst), 1);
}
