//! The top-up client on the wire: every request pinned, every fixture decoded, the exact amount
//! round trip, resends with one externalId, and refusals that send nothing.

use std::time::Duration;

use whish_core::{Error as CoreError, ExternalId, SecretString, UserAgent};
use whish_intl_topup::{PayOutcome, PayRequest, TopupClient, TopupCode};
use whish_testkit::{ScriptedServer, Step, fixture};

const SESSION: &str = "sess-SECRET-4471";
const TOKEN: &str = "tok-SECRET-9912";

fn client(base: &str, retries: u32) -> TopupClient {
    let ua: UserAgent = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)"
        .parse()
        .expect("ua");
    TopupClient::builder(
        whish_core::ClientSettings::new(base)
            .policy(whish_testkit::fast_policy(retries))
            .user_agent(ua),
    )
    .session_id(SecretString::from(SESSION))
    .token(SecretString::from(TOKEN))
    .language("en")
    .build()
    .expect("client")
}

async fn fetched(server: &ScriptedServer) -> whish_intl_topup::FetchedOptions {
    client(&server.base, 0)
        .fetch_options(
            whish_intl_topup::ProviderId::new("example-provider"),
            "971501234567",
        )
        .await
        .expect("fetch")
}

#[tokio::test]
async fn balance_request_and_decode() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/balance.success.json")),
        Step::json(fixture("intl-topup/balance.void.success.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let b = c.balance().await.expect("balance");
    assert_eq!(b.balance.to_string(), "250.5");
    assert_eq!(b.void_balance.to_string(), "0");
    let b = c.balance().await.expect("balance");
    assert_eq!(b.void_balance.to_string(), "12.5");
    insta::assert_json_snapshot!("balance_request", server.requests()[0]);
    let mut sent = server.raw_secret_values();
    sent.sort();
    sent.dedup();
    assert_eq!(sent, vec![SESSION.to_owned(), TOKEN.to_owned()]);
}

#[tokio::test]
async fn fetch_request_and_decode() {
    let server =
        ScriptedServer::start(vec![Step::json(fixture("intl-topup/fetch.success.json"))]).await;
    let offer = fetched(&server).await;
    insta::assert_json_snapshot!("fetch_request", server.requests()[0]);
    insta::assert_debug_snapshot!("fetch_decoded", offer);
    assert_eq!(offer.target(), "971501234567");
    assert_eq!(offer.options().len(), 3);
    let third = offer.option("opt-third").expect("on offer");
    assert_eq!(third.amount().to_string(), "3.3333333333333335");
    assert_eq!(third.display_name(), Some("Data bundle 1GB (3.33 USD)"));
    assert_eq!(third.metadata().expect("metadata")["validityDays"], 7);
    assert!(
        offer
            .option("opt-voucher")
            .expect("voucher")
            .metadata()
            .is_none()
    );
}

#[tokio::test]
async fn pay_sends_the_fetched_amount_exactly() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::json(fixture("intl-topup/pay.bundle.success.json")),
    ])
    .await;
    let offer = fetched(&server).await;
    let c = client(&server.base, 0);
    let prepared = c
        .prepare_pay(
            PayRequest::new(offer.option("opt-third").expect("option"))
                .external_id(ExternalId::new("order-1001").expect("id")),
        )
        .expect("prepared");
    assert_eq!(prepared.external_id().as_str(), "order-1001");
    let outcome = c.pay(&prepared).await.expect("paid");
    let pay_req = &server.requests()[1];
    insta::assert_json_snapshot!("pay_request", pay_req);
    assert!(
        pay_req.raw_body.contains(r#""amount":3.3333333333333335"#),
        "the amount goes back exactly as it arrived: {}",
        pay_req.raw_body
    );
    match outcome {
        PayOutcome::Paid(p) => {
            assert!(!p.retrieved);
            assert_eq!(p.sold_items[0].transaction_id(), "TX-88232");
            assert!(p.sold_items[0].pin().is_none(), "bundles carry no PIN");
            assert!(p.sold_items[0].from_void);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn pending_then_replay_uses_one_external_id() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::json(fixture("intl-topup/pay.pending.json")),
        Step::json(fixture("intl-topup/pay.replay.success.json")),
    ])
    .await;
    let offer = fetched(&server).await;
    let c = client(&server.base, 2);
    let prepared = c
        .prepare_pay(offer.option("opt-voucher").expect("option"))
        .expect("prepared");
    let id = prepared.external_id().clone();
    let outcome = c.pay(&prepared).await.expect("replayed");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "fetch + pay + one resend");
    assert_eq!(reqs[1].raw_body, reqs[2].raw_body, "same bytes");
    assert_eq!(reqs[1].body["externalId"], id.as_str());
    assert_eq!(reqs[2].body["externalId"], id.as_str());
    match outcome {
        PayOutcome::Paid(p) => {
            assert!(p.retrieved, "the replay is exposed");
            assert_eq!(p.attempts, 2);
            assert_eq!(p.external_id, id);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn timeout_then_replay() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::Delay(
            Duration::from_millis(1500),
            Box::new(Step::json(fixture("intl-topup/pay.success.json"))),
        ),
        Step::json(fixture("intl-topup/pay.replay.success.json")),
    ])
    .await;
    let offer = fetched(&server).await;
    let c = client(&server.base, 2);
    let prepared = c.prepare_pay(&offer.options()[2]).expect("prepared");
    let PayOutcome::Paid(p) = c.pay(&prepared).await.expect("paid") else {
        panic!("not paid")
    };
    assert!(p.retrieved);
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn pending_beyond_the_policy_is_pending_with_the_key() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::json(fixture("intl-topup/pay.pending.json")),
    ])
    .await;
    let offer = fetched(&server).await;
    let c = client(&server.base, 1);
    let prepared = c.prepare_pay(&offer.options()[0]).expect("prepared");
    let err = c.pay(&prepared).await.expect_err("pending");
    assert!(err.is_pending());
    assert_eq!(err.idempotency_key(), Some(prepared.external_id().as_str()));
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn failure_codes_are_failures() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::json(fixture("intl-topup/pay.failure.amount-mismatch.json")),
        Step::json(fixture("intl-topup/fetch.failure.unknown-provider.json")),
        Step::json(fixture("intl-topup/fetch.failure.no-offers.json")),
        Step::json(fixture("intl-topup/pay.failure.failed-payment.json")),
    ])
    .await;
    let offer = fetched(&server).await;
    let c = client(&server.base, 3);
    let prepared = c.prepare_pay(&offer.options()[0]).expect("prepared");
    let err = c.pay(&prepared).await.expect_err("mismatch");
    assert_eq!(err.code(), Some(&TopupCode::ExternalAmountMismatch));
    assert!(err.hint().contains("exactly as fetched"), "{}", err.hint());
    assert!(
        err.to_string()
            .starts_with("topup.pay: refused with external.amount.mismatch"),
        "{err}"
    );
    let err = c
        .fetch_options(whish_intl_topup::ProviderId::new("nope"), "1")
        .await
        .expect_err("unknown");
    assert_eq!(err.code(), Some(&TopupCode::ExternalUnknownProvider));
    let err = c
        .fetch_options(whish_intl_topup::ProviderId::new("p"), "1")
        .await
        .expect_err("no offers");
    assert_eq!(err.code(), Some(&TopupCode::ExternalErrorNoOffers));
    let err = c.pay(&prepared).await.expect_err("failed");
    assert_eq!(err.code(), Some(&TopupCode::ExternalFailedPayment));
    assert_eq!(server.hits(), 5, "failure codes are never resent");
}

#[tokio::test]
async fn provider_codes_stay_one_path_segment() {
    let server =
        ScriptedServer::start(vec![Step::json(fixture("intl-topup/fetch.success.json"))]).await;
    let c = client(&server.base, 0);
    for provider in ["a/b", "a b", "../account", "x?y#z", "100%"] {
        let offer = c
            .fetch_options(whish_intl_topup::ProviderId::new(provider), "971501234567")
            .await
            .expect("fetch");
        assert_eq!(offer.provider(), provider);
    }
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            "/v2/a%2Fb/fetch",
            "/v2/a%20b/fetch",
            "/v2/..%2Faccount/fetch",
            "/v2/x%3Fy%23z/fetch",
            "/v2/100%25/fetch"
        ]
    );
}

#[tokio::test]
async fn pay_for_a_slashed_provider_stays_one_segment() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::json(fixture("intl-topup/pay.success.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let offer = c
        .fetch_options(
            whish_intl_topup::ProviderId::new("../account"),
            "971501234567",
        )
        .await
        .expect("fetch");
    let prepared = c.prepare_pay(&offer.options()[0]).expect("prepared");
    let _ = c.pay(&prepared).await.expect("paid");
    assert_eq!(server.requests()[1].path, "/v2/..%2Faccount/pay");
}

#[tokio::test]
async fn refusals_send_nothing() {
    let server = httpmock::MockServer::start_async().await;
    let any = server
        .mock_async(|_, then| {
            then.status(200)
                .body(fixture("intl-topup/fetch.success.json"));
        })
        .await;
    let c = client(&server.base_url(), 0);
    for (provider, target) in [
        ("..", "9715"),
        (".", "9715"),
        ("", "9715"),
        ("p", ""),
        ("p", "  "),
        ("p", "97\n15"),
    ] {
        let err = c
            .fetch_options(whish_intl_topup::ProviderId::new(provider), target)
            .await
            .expect_err("refused");
        assert!(
            matches!(err, CoreError::Validation(_)),
            "{provider:?} {target:?}: {err:?}"
        );
        assert!(err.nothing_sent());
    }
    any.assert_calls_async(0).await;
    let offer = c
        .fetch_options(whish_intl_topup::ProviderId::new("p"), "9715")
        .await
        .expect("fetch");
    assert!(
        c.prepare_pay(PayRequest::new(&offer.options()[0]).target(""))
            .is_err()
    );
    assert!(ExternalId::new("").is_err());
    any.assert_calls_async(1).await;
}

#[tokio::test]
async fn sold_item_pin_never_in_debug() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::json(fixture("intl-topup/pay.success.json")),
    ])
    .await;
    let offer = fetched(&server).await;
    let c = client(&server.base, 0);
    let prepared = c.prepare_pay(&offer.options()[2]).expect("prepared");
    let PayOutcome::Paid(p) = c.pay(&prepared).await.expect("paid") else {
        panic!("not paid")
    };
    let item = &p.sold_items()[0];
    for text in [format!("{p:?}"), format!("{p:#?}"), format!("{item:?}")] {
        assert!(!text.contains("4481-2290-7713"), "{text}");
        assert!(!text.contains("4481 2290 7713"), "{text}");
        assert!(text.contains("Pin([REDACTED])"));
    }
    assert_eq!(item.pin().expect("pin").expose(), "4481-2290-7713");
    assert_eq!(item.serial.as_deref(), Some("SN-5512-9981"));
    let (amount, currency) = item.parsed_amount().expect("parsed");
    assert_eq!(amount.to_string(), "13.61");
    assert_eq!(currency, Some(whish_core::Currency::Usd));
    assert_eq!(item.print_type, Some(1));
    assert_eq!(item.view_type, Some(2));
    assert!(!item.voided);
    let dialog = p.dialog.as_ref().expect("dialog");
    assert!(dialog.other.contains_key("yesButton") && dialog.other.contains_key("noButton"));
    insta::assert_debug_snapshot!("pay_decoded", p.sold_items());
    let client_debug = format!("{c:?}");
    assert!(
        !client_debug.contains(SESSION) && !client_debug.contains(TOKEN),
        "{client_debug}"
    );
}

#[test]
fn bad_settings_are_refused() {
    let ua: UserAgent = "A/1 (w.example; a@b.co)".parse().expect("ua");
    let e = TopupClient::builder(
        whish_core::ClientSettings::new("http://topup.example.com").user_agent(ua.clone()),
    )
    .session_id(SecretString::from("s"))
    .token(SecretString::from("t"))
    .build()
    .expect_err("http to a public host");
    assert_eq!(e.setting, "base_url");
    assert!(
        TopupClient::builder(
            whish_core::ClientSettings::new("https://t.example.com").user_agent(ua)
        )
        .session_id(SecretString::from(""))
        .token(SecretString::from("t"))
        .build()
        .is_err()
    );
}

#[tokio::test]
async fn question_mark_propagates_a_refusal_and_a_pending() {
    async fn pay_with_question_mark(
        c: &TopupClient,
        p: &whish_intl_topup::PreparedPay,
    ) -> Result<PayOutcome, whish_intl_topup::Error> {
        let outcome = c.pay(p).await?;
        Ok(outcome)
    }
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::json(fixture("intl-topup/pay.failure.failed-payment.json")),
        Step::json(fixture("intl-topup/pay.pending.json")),
    ])
    .await;
    let offer = fetched(&server).await;
    let c = client(&server.base, 0);
    let prepared = c.prepare_pay(&offer.options()[0]).expect("prepared");
    let refused = pay_with_question_mark(&c, &prepared)
        .await
        .expect_err("a refusal is an Err");
    assert_eq!(refused.code(), Some(&TopupCode::ExternalFailedPayment));
    assert!(!refused.outcome_unknown());
    let pending = pay_with_question_mark(&c, &prepared)
        .await
        .expect_err("Pending is an Err");
    assert!(pending.is_pending() && pending.outcome_unknown());
    assert_eq!(
        pending.idempotency_key(),
        Some(prepared.external_id().as_str())
    );
}

#[tokio::test]
async fn a_numeric_pin_decodes_and_no_decode_error_quotes_a_pin() {
    let numeric = fixture("intl-topup/pay.success.json")
        .replace(
            r#""secret": "4481-2290-7713""#,
            r#""secret": 1111222233334444"#,
        )
        .replace(r#""voided": false"#, r#""voided": null"#)
        .replace(r#""fromVoid": false"#, r#""fromVoid": null"#);
    let too_big = fixture("intl-topup/pay.success.json").replace(
        r#""secret": "4481-2290-7713""#,
        r#""secret": 99999999999999999999999"#,
    );
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::json(numeric),
        Step::json(too_big),
    ])
    .await;
    let offer = fetched(&server).await;
    let c = client(&server.base, 0);
    let prepared = c.prepare_pay(&offer.options()[0]).expect("prepared");
    let PayOutcome::Paid(paid) = c.pay(&prepared).await.expect("paid") else {
        panic!("not paid")
    };
    let item = &paid.sold_items()[0];
    assert_eq!(item.pin().map(|p| p.expose()), Some("1111222233334444"));
    assert!(!item.voided && !item.from_void, "null reads as false");
    let e = c
        .pay(&prepared)
        .await
        .expect_err("a PIN no number holds exactly");
    assert!(e.outcome_unknown(), "the charge may have happened: {e}");
    for text in [e.to_string(), format!("{e:?}")] {
        assert!(!text.contains("99999999"), "{text}");
    }
}

#[tokio::test]
async fn await_final_replays_the_same_pay_until_the_outcome_is_known() {
    use whish_core::FollowUp;
    let server = ScriptedServer::start(vec![
        Step::json(fixture("intl-topup/fetch.success.json")),
        Step::json(fixture("intl-topup/pay.pending.json")),
        Step::json(fixture("intl-topup/pay.pending.json")),
        Step::json(fixture("intl-topup/pay.replay.success.json")),
    ])
    .await;
    let offer = fetched(&server).await;
    let c = client(&server.base, 0);
    let prepared = c.prepare_pay(&offer.options()[0]).expect("prepared");
    assert!(c.pay(&prepared).await.expect_err("pending").is_pending());
    let follow = FollowUp::within(std::time::Duration::from_secs(5)).waits(
        std::time::Duration::from_millis(1),
        std::time::Duration::from_millis(5),
    );
    let PayOutcome::Paid(paid) = c.await_final(&prepared, follow).await.expect("paid") else {
        panic!("not paid")
    };
    assert!(paid.retrieved, "a replay: nothing charged twice");
    let pays: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/pay"))
        .collect();
    assert_eq!(pays.len(), 3);
    assert!(
        pays.iter().all(|r| r.raw_body == pays[0].raw_body),
        "same bytes, same externalId"
    );
}
