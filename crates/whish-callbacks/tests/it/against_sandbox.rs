//! The receiver against the sandbox: the sandbox calls it over HTTP, as the services would.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use rust_decimal::Decimal;
use tower::ServiceExt;
use whish_callbacks::{
    HandlerError, PaymentUpdate, PollSettings, Receiver, RedirectVerdict, Source,
    TransferNotification, Trigger, confirm_redirect,
};
use whish_core::{Amount, ClientSettings, Currency, ExternalId, SecretString};
use whish_hosted_collect::{
    CollectClient, CollectUrls, FailureCallbackUrl, FailureRedirectUrl, NewPayment,
    SuccessCallbackUrl, SuccessRedirectUrl,
};
use whish_money_transfer::callback::SignedInput;
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
    LastName, Reason, Sender, SourceOfFunds, TransferClient, TransferStatus,
};
use whish_sandbox::Sandbox;

type Seen<N> = Arc<Mutex<Vec<N>>>;

async fn sandbox() -> Sandbox {
    Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox")
}

fn transfer_client(sb: &Sandbox) -> TransferClient {
    let c = sb.transfer_credentials();
    TransferClient::builder(ClientSettings::new(sb.transfer_base_url()).allow_local_callbacks())
        .username(c.username.clone())
        .key(SecretString::from(c.key.clone()))
        .build()
        .expect("client")
}

fn collect_client(sb: &Sandbox) -> CollectClient {
    let c = sb.collect_credentials();
    let ua: whish_core::UserAgent =
        "ReceiverTests/1.0 (https://shop.example.com; dev@shop.example.com)"
            .parse()
            .expect("ua");
    CollectClient::builder(
        ClientSettings::new(sb.collect_base_url())
            .user_agent(ua)
            .allow_local_callbacks(),
    )
    .channel(c.channel.clone())
    .secret(SecretString::from(c.secret.clone()))
    .website_url(c.website_url.clone())
    .build()
    .expect("client")
}

/// The sandbox's signature scheme, as a verifier that owns its key.
fn verifier(sb: &Sandbox) -> impl Fn(&SignedInput<'_>) -> bool + Send + Sync + 'static {
    let key = sb.callback_key().to_vec();
    move |i: &SignedInput<'_>| {
        whish_sandbox::callback::verify_signature(&key, i.timestamp, i.body, i.signature)
    }
}

fn recorder<N: Send + 'static>() -> (
    Seen<N>,
    impl Fn(N) -> std::future::Ready<Result<(), HandlerError>> + Send + Sync + 'static,
) {
    let seen: Seen<N> = Arc::default();
    let sink = seen.clone();
    (seen, move |n: N| {
        sink.lock().expect("lock").push(n);
        std::future::ready(Ok(()))
    })
}

/// Serve the receiver on a loopback port; its base URL.
async fn serve(receiver: &Receiver) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let serving = receiver.clone();
    tokio::spawn(async move {
        let _ = serving
            .serve(listener, whish_callbacks::ServeLimits::new())
            .await;
    });
    base
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what}: not within 5 s");
}

fn cash() -> CashCollectionSend {
    CashCollectionSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        Amount::new(Decimal::from(40)),
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

async fn post(router: &axum::Router, headers: &[(&str, String)], body: Vec<u8>) -> StatusCode {
    let mut req = Request::post(whish_callbacks::TRANSFER_PATH);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    router
        .clone()
        .oneshot(req.body(Body::from(body)).expect("request"))
        .await
        .expect("answer")
        .status()
}

fn signed(sb: &Sandbox, timestamp: i64, body: &str) -> Vec<(&'static str, String)> {
    vec![
        ("content-type", "application/json".to_owned()),
        ("timestamp", timestamp.to_string()),
        (
            "signature",
            whish_sandbox::callback::sign(sb.callback_key(), timestamp, body.as_bytes()),
        ),
    ]
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_callback_delivered_twice_is_handled_once() {
    let sb = sandbox().await;
    let (seen, handler) = recorder::<TransferNotification>();
    let receiver = Receiver::builder().transfer(verifier(&sb), handler).build();
    let base = serve(&receiver).await;
    let client = transfer_client(&sb);
    let prepared = client
        .prepare_send(cash().callback_url(format!("{base}{}", whish_callbacks::TRANSFER_PATH)))
        .expect("prepare");
    let sent = client.send(&prepared).await.expect("sent");
    sb.collect_cash(sent.ltn_number().expect("ltn"))
        .await
        .expect("collected");
    eventually("the handler ran", || seen.lock().expect("l").len() == 1).await;
    let delivered = sb.callbacks();
    assert!(delivered[0].acknowledged(), "{delivered:?}");

    // The same callback again (a redelivery): 200, nothing handed on.
    let body = delivered[0].body.clone().expect("body");
    let router = receiver.router();
    assert_eq!(
        post(
            &router,
            &signed(&sb, now_ms(), &body),
            body.clone().into_bytes()
        )
        .await,
        StatusCode::OK
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let seen = seen.lock().expect("l").clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].status, TransferStatus::Received);
    assert_eq!(seen[0].source, Source::Callback);
    assert_eq!(seen[0].request_id, prepared.request_id());
    // The helper confirms with the status endpoint.
    let confirmed = seen[0].confirm(&client).await.expect("status");
    assert_eq!(confirmed.status, TransferStatus::Received);
    receiver.shutdown().await;
}

#[tokio::test]
async fn oversized_unsigned_and_badly_signed_callbacks_hand_nothing_on() {
    let sb = sandbox().await;
    let (seen, handler) = recorder::<TransferNotification>();
    let receiver = Receiver::builder()
        .transfer(verifier(&sb), handler)
        .body_limit(1024)
        .build();
    let router = receiver.router();
    let body =
        r#"{"date":"2026-11-22 10:00:00","externalId":42,"transferId":"TRF1","status":"RECEIVED"}"#;
    let ts = now_ms();

    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(4096));
    assert_eq!(
        post(&router, &signed(&sb, ts, &huge), huge.clone().into_bytes()).await,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    // No signature, a wrong one, one over other bytes, one that is not base64.
    let mut missing = signed(&sb, ts, body);
    missing.retain(|(k, _)| *k != "signature");
    assert_eq!(
        post(&router, &missing, body.into()).await,
        StatusCode::UNAUTHORIZED
    );
    let mut wrong = signed(&sb, ts, body);
    wrong[2].1 = whish_sandbox::callback::sign(b"another key", ts, body.as_bytes());
    assert_eq!(
        post(&router, &wrong, body.into()).await,
        StatusCode::UNAUTHORIZED
    );
    let other = signed(&sb, ts, "{}");
    assert_eq!(
        post(&router, &other, body.into()).await,
        StatusCode::UNAUTHORIZED
    );
    let mut garbage = signed(&sb, ts, body);
    garbage[2].1 = "not base64!".into();
    assert_eq!(
        post(&router, &garbage, body.into()).await,
        StatusCode::UNAUTHORIZED
    );
    // A body that is not the documented object: 400.
    assert_eq!(
        post(&router, &signed(&sb, ts, "[1]"), b"[1]".to_vec()).await,
        StatusCode::BAD_REQUEST
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(seen.lock().expect("l").is_empty(), "nothing handed on");
    // A good one passes.
    assert_eq!(
        post(&router, &signed(&sb, ts, body), body.into()).await,
        StatusCode::OK
    );
    eventually("handed on", || seen.lock().expect("l").len() == 1).await;
}

#[tokio::test]
async fn an_old_callback_is_refused_by_the_default_window_which_is_a_setting() {
    let sb = sandbox().await;
    let body =
        r#"{"date":"2026-11-22 10:00:00","externalId":43,"transferId":"TRF2","status":"RECEIVED"}"#;
    let two_hours_ago = now_ms() - 7_200_000;
    let (seen, h1) = recorder::<TransferNotification>();
    let default = Receiver::builder()
        .transfer(verifier(&sb), h1)
        .build()
        .router();
    assert_eq!(
        post(&default, &signed(&sb, two_hours_ago, body), body.into()).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post(&default, &signed(&sb, now_ms(), body), body.into()).await,
        StatusCode::OK
    );
    eventually("handed on", || seen.lock().expect("l").len() == 1).await;
    let (wide_seen, h2) = recorder::<TransferNotification>();
    let wide = Receiver::builder()
        .transfer(verifier(&sb), h2)
        .tolerance(Duration::from_secs(3 * 3600))
        .build()
        .router();
    assert_eq!(
        post(&wide, &signed(&sb, two_hours_ago, body), body.into()).await,
        StatusCode::OK
    );
    eventually("handed on", || wide_seen.lock().expect("l").len() == 1).await;
}

fn payment(base: &str, id: &ExternalId) -> NewPayment {
    let with = |path: &str| format!("{base}{path}");
    NewPayment::new(
        Amount::new(Decimal::new(2500, 2)),
        Currency::Usd,
        CollectUrls::new(
            SuccessCallbackUrl::new(&with(whish_callbacks::SUCCESS_PATH))
                .expect("url")
                .with_reference("externalId", id.as_str())
                .with_reference("currency", "USD"),
            FailureCallbackUrl::new(&with(whish_callbacks::FAILURE_PATH))
                .expect("url")
                .with_reference("externalId", id.as_str())
                .with_reference("currency", "USD"),
            SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
            FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
        ),
    )
    .external_id(id.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_callback_then_a_successful_payment_ends_as_paid() {
    let sb = sandbox().await;
    let client = collect_client(&sb);
    let (seen, handler) = recorder::<PaymentUpdate>();
    let receiver = Receiver::builder().collect(client.clone(), handler).build();
    let base = serve(&receiver).await;
    let id = ExternalId::new("order-501").expect("id");
    let prepared = client
        .prepare_payment(payment(&base, &id))
        .expect("prepare");
    client.create_payment(&prepared).await.expect("created");

    sb.fail_link(id.as_str()).await.expect("a failed attempt");
    eventually("the failed attempt read", || {
        seen.lock().expect("l").len() == 1
    })
    .await;
    {
        let first = &seen.lock().expect("l")[0];
        assert_eq!(first.trigger, Trigger::FailureCallback);
        assert!(
            !first.status.collect_status.is_settled(),
            "one attempt failed; the link is payable"
        );
    }
    assert_eq!(
        confirm_redirect(&client, Currency::Usd, &id)
            .await
            .expect("status"),
        RedirectVerdict::NotYet
    );

    sb.pay_link(id.as_str()).await.expect("paid");
    eventually("the payment read", || seen.lock().expect("l").len() == 2).await;
    let last = seen.lock().expect("l")[1].clone();
    assert_eq!(last.trigger, Trigger::SuccessCallback);
    assert!(last.status.collect_status.is_paid(), "{last:?}");
    assert_eq!(
        confirm_redirect(&client, Currency::Usd, &id)
            .await
            .expect("status"),
        RedirectVerdict::Paid
    );
    // A forged or repeated success callback hands nothing new on: the status is the same.
    let forged = receiver
        .router()
        .oneshot(
            Request::get(format!(
                "{}?externalId=order-501&currency=USD",
                whish_callbacks::SUCCESS_PATH
            ))
            .body(Body::empty())
            .expect("req"),
        )
        .await
        .expect("answer");
    assert_eq!(forged.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(seen.lock().expect("l").len(), 2);
    // No reference: 400, nothing read.
    let bare = receiver
        .router()
        .oneshot(
            Request::get(whish_callbacks::SUCCESS_PATH)
                .body(Body::empty())
                .expect("req"),
        )
        .await
        .expect("answer");
    assert_eq!(bare.status(), StatusCode::BAD_REQUEST);
    receiver.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_poller_finds_what_no_callback_reported() {
    let sb = sandbox().await;
    let (transfers, th) = recorder::<TransferNotification>();
    let (payments, ph) = recorder::<PaymentUpdate>();
    let tclient = transfer_client(&sb);
    let cclient = collect_client(&sb);
    let receiver = Receiver::builder()
        .transfer(verifier(&sb), th)
        .transfer_client(tclient.clone())
        .collect(cclient.clone(), ph)
        .build();
    receiver.start_poller(
        PollSettings::default().intervals(Duration::from_millis(50), Duration::from_millis(200)),
    );

    // A transfer sent without a callback address, and a payment whose callbacks go nowhere.
    let prepared = tclient.prepare_send(cash()).expect("prepare");
    let sent = tclient.send(&prepared).await.expect("sent");
    receiver.watch_transfer(prepared.request_id());
    let id = ExternalId::new("order-777").expect("id");
    let p = cclient
        .prepare_payment(payment("http://127.0.0.1:9", &id))
        .expect("prepare");
    cclient.create_payment(&p).await.expect("created");
    receiver.watch_payment(Currency::Usd, id.clone());

    eventually("SENT seen", || transfers.lock().expect("l").len() == 1).await;
    sb.collect_cash(sent.ltn_number().expect("ltn"))
        .await
        .expect("collected");
    sb.pay_link(id.as_str()).await.expect("paid");
    eventually("RECEIVED seen", || transfers.lock().expect("l").len() == 2).await;
    eventually("paid seen", || {
        payments
            .lock()
            .expect("l")
            .iter()
            .any(|u| u.status.collect_status.is_paid())
    })
    .await;
    let t = transfers.lock().expect("l").clone();
    assert_eq!(t[1].status, TransferStatus::Received);
    assert!(t.iter().all(|n| n.source == Source::Poller));
    assert!(
        payments
            .lock()
            .expect("l")
            .iter()
            .all(|u| u.trigger == Trigger::Poller)
    );
    receiver.shutdown().await;
    // Final items are no longer read.
    let reads = sb.requests().len();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        sb.requests().len(),
        reads,
        "nothing polled after final and shutdown"
    );
}

/// Needs the crate's `journal` feature (the journal as the inbox): `cargo test -p
/// whish-callbacks --features journal`, or the workspace's `--all-features`.
#[cfg(feature = "journal")]
#[tokio::test]
async fn with_the_journal_two_receivers_hand_a_change_on_once_and_a_failed_handler_gets_it_again() {
    let sb = sandbox().await;
    let dir = std::env::temp_dir().join(format!("whish-callbacks-{}", std::process::id()));
    let url = format!("sqlite:{}", dir.join("j.sqlite").display());
    let count = Arc::new(Mutex::new(0usize));
    let fail_first = Arc::new(Mutex::new(true));
    let make = |journal: whish_journal::Journal| {
        let (count, fail_first) = (count.clone(), fail_first.clone());
        Receiver::builder()
            .transfer(verifier(&sb), move |_: TransferNotification| {
                let (count, fail_first) = (count.clone(), fail_first.clone());
                async move {
                    let mut f = fail_first.lock().expect("l");
                    if *f {
                        *f = false;
                        return Err::<(), HandlerError>("the handler's database is down".into());
                    }
                    *count.lock().expect("l") += 1;
                    Ok(())
                }
            })
            .inbox(journal)
            .retry(
                whish_callbacks::RetrySettings::default()
                    .backoff(Duration::from_millis(50), Duration::from_millis(50)),
            )
            .pump_interval(Duration::from_millis(20))
            .build()
    };
    let a = make(whish_journal::Journal::open(&url).await.expect("journal"));
    let b = make(whish_journal::Journal::open(&url).await.expect("journal"));
    let (ra, rb) = (a.router(), b.router());
    let body =
        r#"{"date":"2026-11-22 10:00:00","externalId":44,"transferId":"TRF3","status":"RECEIVED"}"#;
    // The first hand-on fails: the change stays in the inbox and is handed on again after the
    // backoff, with no redelivery; the redeliveries to either receiver hand nothing on twice.
    assert_eq!(
        post(&ra, &signed(&sb, now_ms(), body), body.into()).await,
        StatusCode::OK
    );
    eventually("handed on after the failure", || {
        *count.lock().expect("l") == 1
    })
    .await;
    for router in [&rb, &ra, &rb] {
        assert_eq!(
            post(router, &signed(&sb, now_ms(), body), body.into()).await,
            StatusCode::OK
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(*count.lock().expect("l"), 1);
    a.shutdown().await;
    b.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
