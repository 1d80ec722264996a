//! The hosted-collect flows, end to end: create, the hosted page over HTTP, callbacks received by
//! a local listener, status, refund, replay, expiry and strict mode.

use std::time::Duration;

use crate::support::*;
use whish::collect::{CollectStatus, callback};
use whish::core::Error;
use whish::prelude::*;
use whish_sandbox::Sandbox;

fn payment(listener: &Listener, order: &str, amount: &str) -> NewPayment {
    let urls = CollectUrls::new(
        whish::collect::SuccessCallbackUrl::new(&format!("{}/ok?shop=1", listener.base))
            .expect("url")
            .with_reference("order", order),
        whish::collect::FailureCallbackUrl::new(&format!("{}/ko", listener.base))
            .expect("url")
            .with_reference("order", order),
        whish::collect::SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
        whish::collect::FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
    );
    NewPayment::new(amount.parse().expect("amount"), Currency::Usd, urls)
        .invoice("Order <A-17> & co")
}

fn form(phone: &str, code: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("phone", phone)
        .append_pair("code", code)
        .finish()
}

fn page_client() -> reqwest::Client {
    whish_core::tls::client_builder()
        .expect("tls")
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http")
}

#[tokio::test]
async fn pay_on_the_hosted_page_with_a_wrong_code_first_then_refund_once() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = collect(&sb, 0);
    let listener = Listener::start().await;
    let prepared = client
        .prepare_payment(payment(&listener, "A-17", "25.50"))
        .expect("prepared");
    let id = prepared.external_id().clone();
    let created = client.create_payment(&prepared).await.expect("created");
    assert!(!created.retrieved);

    let http = page_client();
    let page = http.get(&created.collect_url).send().await.expect("page");
    assert_eq!(page.status(), 200);
    let html = page.text().await.expect("html");
    assert!(
        html.contains("<form") && html.contains("25.50 USD"),
        "{html}"
    );
    assert!(
        html.contains("Order &lt;A-17&gt; &amp; co"),
        "the invoice is escaped"
    );

    let payer = sb.test_payer().clone();
    let wrong = http
        .post(&created.collect_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&payer.phone, "999999"))
        .send()
        .await
        .expect("attempt");
    assert_eq!(wrong.status(), 303);
    assert_eq!(
        wrong.headers()["location"],
        "https://shop.example.com/retry"
    );
    let status = client.status(Currency::Usd, &id).await.expect("status");
    assert_eq!(
        status.collect_status,
        CollectStatus::Pending,
        "a failed attempt is not a failure"
    );

    let right = http
        .post(&created.collect_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&payer.phone, &payer.code))
        .send()
        .await
        .expect("attempt");
    assert_eq!(
        right.headers()["location"],
        "https://shop.example.com/thanks"
    );
    let got = listener.received();
    let paths: Vec<String> = got.iter().map(|r| r.uri.to_string()).collect();
    assert_eq!(
        paths,
        ["/ko?order=A-17", "/ok?shop=1&order=A-17"],
        "one callback per attempt, query untouched"
    );
    assert!(got.iter().all(|r| r.method == "GET" && r.body.is_empty()));
    assert_eq!(
        callback::reference(&format!("http://x{}", paths[1]), "order").as_deref(),
        Some("A-17")
    );
    let status = client.status(Currency::Usd, &id).await.expect("status");
    assert_eq!(status.collect_status, CollectStatus::Success);
    assert_eq!(
        status.payer_phone_number.as_deref(),
        Some(payer.phone.as_str())
    );
    let closed = http
        .get(&created.collect_url)
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("html");
    assert!(
        closed.contains("no longer payable"),
        "a paid link expires at once"
    );
    assert_eq!(
        client
            .balance(Currency::Usd)
            .await
            .expect("balance")
            .balance,
        "25.50".parse::<Amount>().expect("a")
    );

    let first = client
        .refund(
            &client
                .prepare_refund(Currency::Usd, &id, Some("damaged"))
                .expect("prepared"),
        )
        .await
        .expect("refund");
    assert!(!first.retrieved);
    let second = client
        .refund(
            &client
                .prepare_refund(Currency::Usd, &id, None)
                .expect("prepared"),
        )
        .await
        .expect("replayed");
    assert!(second.retrieved, "a second refund replays the first");
    let status = client.status(Currency::Usd, &id).await.expect("status");
    assert_eq!(status.collect_status, CollectStatus::Refunded);
    sb.shutdown().await;
}

#[tokio::test]
async fn create_replays_by_external_id_and_refund_needs_a_success() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = collect(&sb, 0);
    let listener = Listener::start().await;
    let prepared = client
        .prepare_payment(payment(&listener, "B-1", "10"))
        .expect("prepared");
    let first = client.create_payment(&prepared).await.expect("created");
    let again = client.create_payment(&prepared).await.expect("replayed");
    assert!(again.retrieved);
    assert_eq!(
        first.collect_url, again.collect_url,
        "the recorded result, verbatim"
    );
    assert_eq!(sb.payments().len(), 1);

    let early = client
        .refund(
            &client
                .prepare_refund(Currency::Usd, prepared.external_id(), None)
                .expect("prepared"),
        )
        .await
        .expect_err("not paid");
    assert!(matches!(&early, Error::Failed(_)), "{early:?}");
    let unknown = client
        .refund(
            &client
                .prepare_refund(Currency::Usd, &ExternalId::new("nope").expect("id"), None)
                .expect("prepared"),
        )
        .await
        .expect_err("unknown");
    assert!(matches!(&unknown, Error::Failed(f) if f.raw == "external_id.not_exists"));
    sb.shutdown().await;
}

#[tokio::test]
async fn control_calls_pay_fail_and_expire_links() {
    let sb = Sandbox::builder()
        .lenient(true)
        .link_expiry(Duration::from_secs(60))
        .start()
        .await
        .expect("sandbox");
    let client = collect(&sb, 0);
    let listener = Listener::start().await;
    let make = |order: &str| {
        client
            .prepare_payment(payment(&listener, order, "5"))
            .expect("prepared")
    };

    let a = make("C-1");
    client.create_payment(&a).await.expect("created");
    let failed = sb.fail_link(a.external_id().as_str()).await.expect("fail");
    assert_eq!(failed.collect_status, "pending");
    assert!(failed.callback.acknowledged());
    let paid = sb.pay_link(a.external_id().as_str()).await.expect("pay");
    assert_eq!(paid.collect_status, "success");
    assert!(
        sb.pay_link(a.external_id().as_str()).await.is_err(),
        "paid once"
    );

    let b = make("C-2");
    client.create_payment(&b).await.expect("created");
    sb.advance_clock(Duration::from_secs(61)).expect("advance");
    let status = client
        .status(Currency::Usd, b.external_id())
        .await
        .expect("status");
    assert_eq!(
        status.collect_status,
        CollectStatus::Failed,
        "expired unpaid"
    );

    let c = make("C-3");
    client.create_payment(&c).await.expect("created");
    sb.expire_link(c.external_id().as_str()).expect("expire");
    let status = client
        .status(Currency::Usd, c.external_id())
        .await
        .expect("status");
    assert_eq!(status.collect_status, CollectStatus::Failed);
    sb.shutdown().await;
}

#[tokio::test]
async fn strict_by_default_answers_403_for_local_addresses() {
    // As strict as production unless asked to be lenient.
    let sb = Sandbox::start().await.expect("sandbox");
    let client = collect(&sb, 0);
    let listener = Listener::start().await;
    let prepared = client
        .prepare_payment(payment(&listener, "D-1", "5"))
        .expect("prepared");
    let err = client.create_payment(&prepared).await.expect_err("403");
    assert!(matches!(&err, Error::Http(h) if h.status == 403), "{err:?}");
    assert!(sb.payments().is_empty());
    sb.shutdown().await;
}

#[tokio::test]
async fn a_pending_create_is_resent_and_replayed() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = collect(&sb, 2);
    let listener = Listener::start().await;
    sb.inject(
        whish_sandbox::Endpoint::CollectCreate,
        whish_sandbox::Fault::Pending,
        1,
    );
    let prepared = client
        .prepare_payment(payment(&listener, "E-1", "5"))
        .expect("prepared");
    let created = client.create_payment(&prepared).await.expect("created");
    assert!(created.retrieved, "the resend found the recorded result");
    assert_eq!(sb.payments().len(), 1);
    sb.shutdown().await;
}
