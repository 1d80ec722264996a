//! The top-up flows, end to end: options, pay with the exact amount, replay, vouchers, faults.

use crate::support::*;
use whish::core::Error;
use whish::prelude::*;
use whish_sandbox::{Endpoint, Fault, Sandbox};

#[tokio::test]
async fn options_pay_and_replay() {
    let sb = Sandbox::start().await.expect("sandbox");
    let client = topup(&sb, 0);
    let before = client.balance().await.expect("balance");
    let offer = client
        .fetch_options(
            whish::topup::ProviderId::new("etisalat-ae"),
            "+971 50 123 4567",
        )
        .await
        .expect("options");
    assert_eq!(offer.target(), "971501234567");
    let option = offer.option("ETI-12").expect("an option");
    assert_eq!(option.amount().to_string(), "3.3333333333333335");
    let prepared = client.prepare_pay(option).expect("prepared");
    let PayOutcome::Paid(paid) = client.pay(&prepared).await.expect("pay") else {
        panic!("not paid")
    };
    assert!(!paid.retrieved);
    assert_eq!(paid.sold_items().len(), 1);
    assert!(paid.sold_items()[0].pin().is_none(), "airtime has no PIN");
    let PayOutcome::Paid(replayed) = client.pay(&prepared).await.expect("replay") else {
        panic!("not paid")
    };
    assert!(
        replayed.retrieved,
        "the same externalId replays, without charging again"
    );
    assert_eq!(
        replayed.sold_items()[0].transaction_id(),
        paid.sold_items()[0].transaction_id()
    );
    assert_eq!(sb.sales().len(), 1);
    assert_eq!(
        sb.sales()[0].amount.to_string(),
        "3.3333333333333335",
        "the service received the fetched amount exactly"
    );
    let after = client.balance().await.expect("balance");
    let spent = before.balance.value() - after.balance.value();
    // The balance is a Double on the wire; charged once, not twice.
    assert!(
        spent > Decimal::new(333, 2) && spent < Decimal::new(334, 2),
        "{spent}"
    );
    sb.shutdown().await;
}

#[tokio::test]
async fn vouchers_carry_a_pin_and_can_draw_on_the_void_balance() {
    let sb = Sandbox::start().await.expect("sandbox");
    sb.set_topup_balance("100".parse().expect("d"), "10".parse().expect("d"));
    let client = topup(&sb, 0);
    let offer = client
        .fetch_options(
            whish::topup::ProviderId::new("gift-voucher"),
            "buyer@example.com",
        )
        .await
        .expect("options");
    let prepared = client
        .prepare_pay(offer.option("GV-20").expect("option"))
        .expect("prepared");
    let PayOutcome::Paid(paid) = client.pay(&prepared).await.expect("pay") else {
        panic!()
    };
    let item = &paid.sold_items()[0];
    let pin = item.pin().expect("a PIN");
    assert_eq!(pin.expose().len(), 16);
    assert!(
        !format!("{item:?}").contains(pin.expose()),
        "the PIN never prints"
    );
    let balance = client.balance().await.expect("balance");
    assert_eq!(balance.void_balance, "4.55".parse::<Amount>().expect("a"));
    sb.shutdown().await;
}

#[tokio::test]
async fn unknown_provider_no_offers_and_amount_mismatch() {
    let sb = Sandbox::start().await.expect("sandbox");
    let client = topup(&sb, 0);
    let e = client
        .fetch_options(whish::topup::ProviderId::new("nope"), "971501234567")
        .await
        .expect_err("unknown");
    assert!(
        matches!(&e, Error::Failed(f) if f.raw == "external.unknown.provider"),
        "{e:?}"
    );
    let e = client
        .fetch_options(whish::topup::ProviderId::new("du-ae"), "96170123456")
        .await
        .expect_err("no offers");
    assert!(matches!(&e, Error::Failed(f) if f.raw == "external.error.no.offers"));
    // The SDK cannot send a different amount; a hand-written call shows the service's check.
    let c = sb.topup_credentials();
    let reply = whish_core::tls::client_builder()
        .expect("tls")
        .build()
        .expect("client")
        .post(format!("{}/v2/etisalat-ae/pay", sb.topup_base_url()))
        .header("sessionId", &c.session_id)
        .header("token", &c.token)
        .header("user-agent", "x/1 (https://e.com; a@e.com)")
        .header("content-type", "application/json")
        .body(
            r#"{"target":"971501234567","optionId":"ETI-12","amount":3.33,"externalId":"hand-1"}"#,
        )
        .send()
        .await
        .expect("sent")
        .bytes()
        .await
        .expect("body");
    let reply: serde_json::Value = serde_json::from_slice(&reply).expect("json");
    assert_eq!(reply["code"], "external.amount.mismatch");
    assert!(sb.sales().is_empty());
    sb.shutdown().await;
}

#[tokio::test]
async fn a_dropped_pay_reply_is_replayed_by_the_resend_with_no_second_sale() {
    let sb = Sandbox::start().await.expect("sandbox");
    let client = topup(&sb, 2);
    sb.inject(Endpoint::TopupPay, Fault::DropReply, 1);
    let offer = client
        .fetch_options(whish::topup::ProviderId::new("du-ae"), "971501234567")
        .await
        .expect("options");
    let prepared = client
        .prepare_pay(offer.option("DU-1GB").expect("option"))
        .expect("prepared");
    let PayOutcome::Paid(paid) = client.pay(&prepared).await.expect("pay") else {
        panic!()
    };
    assert!(paid.retrieved);
    assert_eq!(paid.attempts, 2);
    assert_eq!(sb.sales().len(), 1);
    sb.shutdown().await;
}
