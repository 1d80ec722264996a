//! Serving that a flood cannot starve: slow heads are shed first, heads are capped, and the
//! unauthenticated GETs cannot hold up the signed callbacks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use whish_callbacks::{HandlerError, PaymentUpdate, Receiver, ServeLimits, TransferNotification};
use whish_money_transfer::callback::SignedInput;

use crate::support::{collect_client_at, eventually, get, post_signed, transfer_body};

async fn serve(receiver: &Receiver, limits: ServeLimits) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = receiver.clone();
    tokio::spawn(async move { serving.serve(listener, limits).await });
    addr
}

/// One whole request; the answer's status line.
async fn ask(addr: std::net::SocketAddr, head: &[u8]) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(head).await.expect("write");
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

/// A reconnecting flood of clients that trickle their heads fills the connection cap again and
/// again; genuine requests, which send their heads at once, are still answered: when the cap
/// is reached the connection that has waited longest for its head is shed, not the newcomer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_slowloris_does_not_starve_genuine_callbacks() {
    flood_then_ask(|| b"POST /whish/transfer HTTP/1.1\r\nHost: x\r\n".to_vec()).await;
}

/// The same with clients that send a whole head (a fresh timestamp, a signature header) and
/// then stall their body: a stalled body is shed like a stalled head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_stalled_bodies_does_not_starve_genuine_callbacks() {
    flood_then_ask(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis();
        format!(
            "POST /whish/transfer HTTP/1.1\r\nHost: x\r\ntimestamp: {now}\r\nsignature: x\r\ncontent-type: application/json\r\nContent-Length: 9000\r\n\r\n{{"
        )
        .into_bytes()
    })
    .await;
}

/// 120 attackers for 32 connections, each sending `opening` and stalling, reconnecting as soon
/// as it is closed; meanwhile 20 genuine requests must be answered within 5 s, all but one.
async fn flood_then_ask(opening: impl Fn() -> Vec<u8> + Send + Sync + 'static) {
    let opening = Arc::new(opening);
    let receiver = Receiver::builder()
        .transfer(
            |_: &SignedInput<'_>| true,
            |_: TransferNotification| async { Ok::<(), HandlerError>(()) },
        )
        .build();
    let addr = serve(
        &receiver,
        ServeLimits::new()
            .header_read_timeout(Duration::from_secs(30))
            .max_connections(32),
    )
    .await;
    // 120 attackers for 32 connections: each sends half a head, stalls, and reconnects as soon
    // as it is closed.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut attackers = Vec::new();
    for _ in 0..120 {
        let (stop, opening) = (stop.clone(), opening.clone());
        attackers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                };
                if s.write_all(&opening()).await.is_err() {
                    continue;
                }
                let mut buf = [0u8; 16];
                let _ = s.read(&mut buf).await; // until the server closes it
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut answered = 0;
    for _ in 0..20 {
        let started = Instant::now();
        let line = tokio::time::timeout(
            Duration::from_secs(5),
            ask(
                addr,
                b"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            ),
        )
        .await;
        if matches!(&line, Ok(l) if l.starts_with("HTTP/1.1 404"))
            && started.elapsed() < Duration::from_secs(5)
        {
            answered += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    for a in attackers {
        a.abort();
    }
    assert!(
        answered >= 19,
        "only {answered} of 20 genuine requests answered"
    );
    receiver.shutdown().await;
}

/// A head larger than the cap is refused without being read whole.
#[tokio::test]
async fn a_head_beyond_the_cap_is_refused() {
    let receiver = Receiver::builder()
        .transfer(
            |_: &SignedInput<'_>| true,
            |_: TransferNotification| async { Ok::<(), HandlerError>(()) },
        )
        .build();
    let addr = serve(&receiver, ServeLimits::new()).await;
    let mut head = b"GET /nowhere HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..400 {
        head.extend_from_slice(format!("x-padding-{i}: {}\r\n", "a".repeat(40)).as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    let line = ask(addr, &head).await;
    assert!(
        line.is_empty() || line.starts_with("HTTP/1.1 431"),
        "a 20 KiB head: {line:?}"
    );
    let small = ask(
        addr,
        b"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(small.starts_with("HTTP/1.1 404"), "{small}");
    receiver.shutdown().await;
}

/// Unauthenticated collect GETs whose status reads never end fill the collect workers only: a
/// signed transfer callback arriving meanwhile is recorded and handed on at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_collect_gets_does_not_hold_up_signed_callbacks() {
    // A status endpoint that never answers: every status read holds its worker.
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
    let handled = Arc::new(AtomicUsize::new(0));
    let counted = handled.clone();
    let receiver = Receiver::builder()
        .collect(
            collect_client_at(&format!("http://{stall_addr}")),
            |_: PaymentUpdate| async { Ok::<(), HandlerError>(()) },
        )
        .transfer(
            |_: &SignedInput<'_>| true,
            move |_: TransferNotification| {
                counted.fetch_add(1, Ordering::SeqCst);
                async { Ok::<(), HandlerError>(()) }
            },
        )
        .max_in_flight(4)
        .build();
    let router = receiver.router();
    for i in 0..12 {
        let uri = format!(
            "{}?externalId=flood-{i}&currency=USD",
            whish_callbacks::SUCCESS_PATH
        );
        assert_eq!(get(&router, &uri).await, StatusCode::OK, "recorded");
    }
    assert_eq!(
        post_signed(&router, &transfer_body("TRF7", 7)).await,
        StatusCode::OK
    );
    eventually("the signed callback handed on", || {
        handled.load(Ordering::SeqCst) == 1
    })
    .await;
}
