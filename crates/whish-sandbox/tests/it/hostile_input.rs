//! The sandbox under hostile input: a clock moved absurdly far, floods of large unauthenticated
//! requests, half-sent requests, callbacks aimed at the control API, balances that overflow, and
//! guessable page tokens. None of them panics it, grows it without bound or changes its state.

use crate::support;

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use whish::Currency;
use whish::collect::{
    CollectUrls, FailureCallbackUrl, FailureRedirectUrl, NewPayment, SuccessCallbackUrl,
    SuccessRedirectUrl,
};
use whish::transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
    LastName, Reason, Sender, SourceOfFunds,
};
use whish_sandbox::{ControlError, JOURNAL_MAX_BODY_BYTES, JOURNAL_MAX_REQUESTS, Sandbox};

fn payment(amount: &str) -> NewPayment {
    let urls = CollectUrls::new(
        SuccessCallbackUrl::new("https://shop.example.com/ok").expect("url"),
        FailureCallbackUrl::new("https://shop.example.com/ko").expect("url"),
        SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
        FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
    );
    NewPayment::new(amount.parse().expect("amount"), Currency::Usd, urls)
}

fn cash_with_callback(url: &str) -> CashCollectionSend {
    CashCollectionSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        "20".parse().expect("a"),
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
            Identity::new(DateOfBirth::parse("07-03-1990").expect("dob")),
        ),
        Reason::Other,
        SourceOfFunds::Other,
    )
    .callback_url(url)
}

#[tokio::test]
async fn an_absurd_clock_advance_is_refused_and_changes_nothing() {
    let sb = Sandbox::start().await.expect("sandbox");
    let e = sb
        .advance_clock(Duration::from_secs(1_000_000_000_000))
        .expect_err("too far");
    assert!(matches!(e, ControlError::BadRequest(_)), "{e:?}");
    // Everything still answers, /reset included.
    let r = whish_core::tls::client_builder()
        .expect("tls")
        .build()
        .expect("client")
        .post(format!("{}/_sandbox/clock/advance", sb.root_url()))
        .header("content-type", "application/json")
        .body(r#"{"seconds":1000000000000}"#)
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status().as_u16(), 400);
    sb.advance_clock(Duration::from_secs(3600))
        .expect("an hour is fine");
    let c = support::collect(&sb, 0);
    let p = c.prepare_payment(payment("5")).expect("valid");
    c.create_payment(&p).await.expect("still serving");
    sb.reset();
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_journal_is_bounded_in_count_and_bytes() {
    let sb = Sandbox::start().await.expect("sandbox");
    let big = "x".repeat(200 * 1024);
    let http = whish_core::tls::client_builder()
        .expect("tls")
        .build()
        .expect("client");
    for _ in 0..(JOURNAL_MAX_REQUESTS + 50) {
        // Unauthenticated, and large.
        let _ = http
            .post(format!("{}/payment/svc", sb.collect_base_url()))
            .body(big.clone())
            .send()
            .await
            .expect("sent");
    }
    let kept = sb.requests();
    assert_eq!(kept.len(), JOURNAL_MAX_REQUESTS);
    assert!(
        kept.iter()
            .all(|r| r.body.len() <= JOURNAL_MAX_BODY_BYTES + "…[cut]".len())
    );
    assert_eq!(
        kept.last().map(|r| r.seq),
        Some((JOURNAL_MAX_REQUESTS + 50) as u64),
        "sequence numbers keep counting"
    );
    sb.shutdown().await;
}

#[tokio::test]
async fn a_half_sent_request_is_closed_and_a_slow_one_answered_408() {
    let sb = Sandbox::builder()
        .request_timeouts(Duration::from_millis(300), Duration::from_millis(600))
        .start()
        .await
        .expect("sandbox");
    let addr = sb.addr();
    // Headers that never end.
    let mut half = tokio::net::TcpStream::connect(addr).await.expect("connect");
    half.write_all(b"GET /_sandbox/state HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("write");
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), half.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the connection is closed, not held open");
    // A body that arrives too slowly.
    let mut slow = tokio::net::TcpStream::connect(addr).await.expect("connect");
    slow.write_all(
        b"POST /_sandbox/collect/pay HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
    )
    .await
    .expect("write");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_never_targets_the_control_api() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let c = support::transfer(&sb, 0);
    let send = cash_with_callback(&format!("{}/_sandbox/reset", sb.root_url()));
    let p = c.prepare_send(send).expect("local callbacks allowed");
    let sent = c.send(&p).await.expect("sent");
    let ltn = sent.ltn_number().expect("ltn").to_owned();
    let collected = sb.collect_cash(&ltn).await.expect("collected");
    let delivery = collected.callback.expect("a delivery record");
    assert!(
        delivery
            .error
            .as_deref()
            .is_some_and(|e| e.contains("control API")),
        "{delivery:?}"
    );
    assert_eq!(sb.transfers().len(), 1, "nothing was reset");
    sb.shutdown().await;

    // Strict mode accepts the send (the transfer spec answers every request with the envelope)
    // and never calls a non-public address, as the real service could not.
    let strict = Sandbox::builder()
        .lenient(false)
        .start()
        .await
        .expect("sandbox");
    let c = support::transfer(&strict, 0);
    let p = c
        .prepare_send(cash_with_callback("http://127.0.0.1:9/cb"))
        .expect("the client allows it against the sandbox");
    let sent = c.send(&p).await.expect("accepted");
    let collected = strict
        .collect_cash(sent.ltn_number().expect("ltn"))
        .await
        .expect("collected");
    let d = collected.callback.expect("a delivery record");
    assert_eq!(d.status, None, "{d:?}");
    strict.shutdown().await;
}

#[tokio::test]
async fn a_payment_the_balance_cannot_hold_is_refused_with_nothing_changed() {
    let sb = Sandbox::builder()
        .collect_balance("USD", whish::Decimal::MAX)
        .start()
        .await
        .expect("sandbox");
    let c = support::collect(&sb, 0);
    let p = c.prepare_payment(payment("5")).expect("valid");
    c.create_payment(&p).await.expect("created");
    let e = sb
        .pay_link(p.external_id().as_str())
        .await
        .expect_err("overflow");
    assert!(matches!(e, ControlError::InvalidState(_)), "{e:?}");
    let status = c
        .status(Currency::Usd, p.external_id())
        .await
        .expect("still serving");
    assert_eq!(
        status.collect_status.as_str(),
        "pending",
        "the link was not marked paid"
    );
    let record = sb
        .payments()
        .into_iter()
        .find(|r| r.external_id == p.external_id().as_str())
        .expect("the payment");
    assert_eq!(record.collect_status, "pending", "{record:?}");
    sb.shutdown().await;
}

#[tokio::test]
async fn hosted_page_tokens_are_unguessable() {
    let sb = Sandbox::start().await.expect("sandbox");
    let c = support::collect(&sb, 0);
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let p = c.prepare_payment(payment("5")).expect("valid");
        let created = c.create_payment(&p).await.expect("created");
        let token = created
            .collect_url
            .rsplit('/')
            .next()
            .expect("token")
            .to_owned();
        assert_eq!(token.len(), 32, "{token}");
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        tokens.push(token);
    }
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 3);
    sb.shutdown().await;
}
