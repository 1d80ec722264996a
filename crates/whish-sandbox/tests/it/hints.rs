//! Every hint says what to do in the terms of its own service and of its cause: the top-up hint
//! never sends the caller to a status endpoint the service does not have, Pending of a transfer
//! is followed up rather than resent, a refund's 403 is the source-IP rule, a local callback
//! address names `allow_local_callbacks`, and no hint says "Re-authenticate".

use crate::support::*;
use whish::prelude::*;
use whish::transfer::{MobileWalletSend, WalletReceiver};
use whish_sandbox::{Endpoint, Fault, Sandbox};

fn urls(base: &str) -> CollectUrls {
    CollectUrls::new(
        SuccessCallbackUrl::new(&format!("{base}/ok")).expect("url"),
        FailureCallbackUrl::new(&format!("{base}/ko")).expect("url"),
        SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
        FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
    )
}

fn wallet(phone: &str) -> MobileWalletSend {
    MobileWalletSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        "50".parse().expect("amount"),
        Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        WalletReceiver::new(Customer::new(
            FirstName::new("Rami"),
            LastName::new("Haddad"),
            phone,
        )),
        Reason::Other,
        SourceOfFunds::Other,
    )
}

#[tokio::test]
async fn transfer_hints_follow_up_with_the_status_endpoint_by_request_id() {
    let sb = Sandbox::start().await.expect("sandbox");
    let c = transfer(&sb, 0);
    // Pending (this wallet phone always answers 500): followed up, never resent under a new id.
    let p = c.prepare_send(wallet("+96170000003")).expect("prepared");
    let e = c.send(&p).await.expect_err("pending");
    assert!(e.is_pending());
    let hint = e.hint();
    assert!(hint.contains("status endpoint by the Request-id"), "{hint}");
    assert!(!hint.contains("resend the same"), "{hint}");

    // A reply lost after the request was applied.
    sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    let p = c.prepare_send(wallet("+96170000001")).expect("prepared");
    let e = c.send(&p).await.expect_err("lost reply");
    assert!(e.outcome_unknown());
    assert!(
        e.hint().contains("status endpoint by the Request-id"),
        "{}",
        e.hint()
    );

    // A proxy's 403 on a first attempt: a page, not the service, and nothing about callbacks.
    sb.inject(Endpoint::TransferSend, Fault::Page(403), 1);
    let p = c.prepare_send(wallet("+96170000001")).expect("prepared");
    let e = c.send(&p).await.expect_err("page");
    let hint = e.hint();
    assert!(hint.contains("proxy"), "{hint}");
    assert!(!hint.contains("callback"), "{hint}");
    assert!(!hint.contains("credentials"), "{hint}");
    sb.shutdown().await;
}

#[tokio::test]
async fn topup_hints_never_name_a_status_endpoint() {
    let sb = Sandbox::start().await.expect("sandbox");
    let c = topup(&sb, 0);
    let offer = c
        .fetch_options(whish::topup::ProviderId::new("du-ae"), "971501234567")
        .await
        .expect("options");
    let p = c
        .prepare_pay(offer.option("DU-1GB").expect("option"))
        .expect("prepared");
    sb.inject(Endpoint::TopupPay, Fault::Pending, 1);
    let e = c.pay(&p).await.expect_err("pending");
    assert!(e.is_pending());
    for hint in [e.hint().into_owned(), {
        sb.inject(Endpoint::TopupPay, Fault::DropReply, 1);
        let p = c
            .prepare_pay(offer.option("DU-1GB").expect("option"))
            .expect("prepared");
        let e = c.pay(&p).await.expect_err("lost reply");
        assert!(e.outcome_unknown());
        e.hint().into_owned()
    }] {
        assert!(
            hint.contains("pay again with the same prepared request"),
            "{hint}"
        );
        assert!(!hint.contains("status endpoint"), "{hint}");
    }
    sb.shutdown().await;
}

#[tokio::test]
async fn collect_hints_tell_the_refund_403_from_the_create_403() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let c = collect(&sb, 0);
    let l = Listener::start().await;

    sb.inject(Endpoint::CollectCreate, Fault::Pending, 1);
    let p = c
        .prepare_payment(NewPayment::new(
            "5".parse().expect("a"),
            Currency::Usd,
            urls(&l.base),
        ))
        .expect("prepared");
    let e = c.create_payment(&p).await.expect_err("pending");
    assert!(e.hint().contains("same externalId"), "{}", e.hint());

    sb.inject(Endpoint::CollectCreate, Fault::Page(403), 1);
    let p = c
        .prepare_payment(NewPayment::new(
            "5".parse().expect("a"),
            Currency::Usd,
            urls(&l.base),
        ))
        .expect("prepared");
    let e = c.create_payment(&p).await.expect_err("403");
    assert!(e.hint().contains("public addresses"), "{}", e.hint());

    sb.inject(Endpoint::CollectRefund, Fault::Page(403), 1);
    let id: ExternalId = "E-1".parse().expect("id");
    let r = c
        .prepare_refund(Currency::Usd, &id, None)
        .expect("prepared");
    let e = c.refund(&r).await.expect_err("403");
    let hint = e.hint();
    assert!(hint.contains("source IP"), "{hint}");
    assert!(!hint.contains("callback"), "{hint}");
    sb.shutdown().await;
}

#[tokio::test]
async fn a_local_callback_refused_before_sending_names_allow_local_callbacks() {
    let sb = Sandbox::start().await.expect("sandbox");
    let creds = sb.collect_credentials();
    // A client built without allow_local_callbacks.
    let c = CollectClient::builder(ClientSettings::new(sb.collect_base_url()).user_agent(ua()))
        .channel(creds.channel.clone())
        .secret(SecretString::from(creds.secret.clone()))
        .website_url(creds.website_url.clone())
        .build()
        .expect("client");
    let e = c
        .prepare_payment(NewPayment::new(
            "5".parse().expect("a"),
            Currency::Usd,
            urls("http://127.0.0.1:9"),
        ))
        .expect_err("local address");
    let e = whish::collect::Error::from(e);
    assert!(e.nothing_sent());
    assert!(e.hint().contains("allow_local_callbacks"), "{}", e.hint());
    sb.shutdown().await;
}

#[test]
fn no_documented_handling_says_re_authenticate() {
    for code in ["auth.session_not_exist", "auth.session_expired"] {
        let c: CollectCode = code.parse().expect("infallible");
        let handling = whish::core::ErrorCode::handling(&c);
        assert!(!handling.contains("Re-authenticate"), "{code}: {handling}");
        assert!(handling.contains("credentials"), "{code}: {handling}");
    }
}
