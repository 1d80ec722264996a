//! The collect client on the wire: every request pinned, every fixture decoded, refusals that send
//! nothing, the 403 reply, replays, and the callback-URL round trip.

use whish_core::{
    Amount, Currency, Error as CoreError, ExternalId, SecretString, UserAgent, ValidationKind,
};
use whish_hosted_collect::{
    CollectClient, CollectCode, CollectStatus, CollectUrls, FailureCallbackUrl, FailureRedirectUrl,
    NewPayment, SuccessCallbackUrl, SuccessRedirectUrl, callback,
};
use whish_testkit::{ScriptedServer, Step, fixture};

const SECRET: &str = "collect-SECRET-5521";

fn client(base: &str, retries: u32) -> CollectClient {
    let ua: UserAgent = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)"
        .parse()
        .expect("ua");
    CollectClient::builder(
        whish_core::ClientSettings::new(base)
            .policy(whish_testkit::fast_policy(retries))
            .user_agent(ua),
    )
    .channel("chan-42")
    .secret(SecretString::from(SECRET))
    .website_url("shop.example.com")
    .build()
    .expect("client")
}

fn urls() -> CollectUrls {
    CollectUrls::new(
        SuccessCallbackUrl::new("https://shop.example.com/whish/ok")
            .expect("url")
            .with_reference("order", "A&B 17"),
        FailureCallbackUrl::new("https://shop.example.com/whish/ko")
            .expect("url")
            .with_reference("order", "A&B 17"),
        SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
        FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
    )
}

fn payment(amount: &str, currency: Currency) -> NewPayment {
    NewPayment::new(amount.parse::<Amount>().expect("amount"), currency, urls())
}

#[tokio::test]
async fn balance_request_and_decode() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("hosted-collect/balance.success.json")),
        Step::json(fixture("hosted-collect/balance.lbp.success.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let b = c.balance(Currency::Usd).await.expect("balance");
    assert_eq!(b.balance.to_string(), "1520.75");
    let b = c.balance(Currency::Lbp).await.expect("balance");
    assert_eq!(b.balance.to_string(), "135000000");
    insta::assert_json_snapshot!("balance_request", server.requests()[0]);
    assert_eq!(
        server.requests()[1].path,
        "/payment/account/balance?currency=LBP"
    );
    assert!(server.raw_secret_values().iter().all(|s| s == SECRET));
}

#[tokio::test]
async fn create_request_and_decode() {
    let server = ScriptedServer::start(vec![Step::json(fixture(
        "hosted-collect/create.success.json",
    ))])
    .await;
    let c = client(&server.base, 0);
    let prepared = c
        .prepare_payment(
            payment("25.50", Currency::Usd)
                .invoice("Order A-17")
                .external_id(ExternalId::new("order-A-17").expect("id")),
        )
        .expect("valid");
    let created = c.create_payment(&prepared).await.expect("created");
    assert_eq!(
        created.collect_url,
        "https://pay.example.com/collect/7f3c2a9e-5b1d-4c1e-9a77-2f0d8c1b6e42"
    );
    assert!(!created.retrieved);
    assert_eq!(created.external_id.as_str(), "order-A-17");
    let req = &server.requests()[0];
    insta::assert_json_snapshot!("create_request", req);
    assert!(
        req.raw_body.contains(r#""amount":"25.5""#),
        "amount is a JSON string: {}",
        req.raw_body
    );
}

#[tokio::test]
async fn status_request_and_every_status_fixture() {
    let names = [
        "pending", "success", "failed", "refunded", "unknown", "other",
    ];
    let steps = names
        .iter()
        .map(|n| Step::json(fixture(&format!("hosted-collect/status.{n}.success.json"))))
        .collect();
    let server = ScriptedServer::start(steps).await;
    let c = client(&server.base, 0);
    let id = ExternalId::new("order-A-17").expect("id");
    let mut decoded = Vec::new();
    for _ in names {
        decoded.push(c.status(Currency::Usd, &id).await.expect("status"));
    }
    insta::assert_json_snapshot!("status_request", server.requests()[0]);
    insta::assert_debug_snapshot!("status_decoded", decoded);
    assert_eq!(decoded[0].collect_status, CollectStatus::Pending);
    assert_eq!(decoded[0].payer_phone_number, None, "absent while pending");
    assert!(decoded[1].is_paid() && decoded[1].is_settled());
    assert!(!decoded[2].is_paid() && decoded[2].is_settled());
    assert!(!decoded[3].is_paid() && !decoded[3].is_settled());
    assert_eq!(
        decoded[5].collect_status,
        CollectStatus::Other("on_review".into())
    );
}

#[tokio::test]
async fn refund_request_and_retrieved_flag() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("hosted-collect/refund.success.json")),
        Step::json(fixture("hosted-collect/refund.replay.success.json")),
        Step::json(fixture("hosted-collect/refund.failure.not-exists.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let id = ExternalId::new("order-A-17").expect("id");
    let r = c
        .refund(
            &c.prepare_refund(Currency::Usd, &id, Some("customer cancelled"))
                .expect("prepared"),
        )
        .await
        .expect("refund");
    assert!(!r.retrieved);
    let r = c
        .refund(
            &c.prepare_refund(Currency::Usd, &id, None)
                .expect("prepared"),
        )
        .await
        .expect("replay");
    assert!(r.retrieved, "duplicate refund is exposed");
    let err = c
        .refund(
            &c.prepare_refund(Currency::Usd, &id, None)
                .expect("prepared"),
        )
        .await
        .expect_err("unknown id");
    assert_eq!(err.code(), Some(&CollectCode::ExternalIdNotExists));
    let reqs = server.requests();
    insta::assert_json_snapshot!("refund_request", reqs[0]);
    assert!(
        reqs[1].body.get("refundReason").is_none(),
        "omitted when not given"
    );
}

#[tokio::test]
async fn failure_fixtures_decode() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("hosted-collect/create.failure.400-string.json")),
        Step::json(fixture(
            "hosted-collect/create.failure.purchase-confirm.json",
        )),
        Step::json(fixture("hosted-collect/create.failure.replayed.json")),
        Step::json(fixture("hosted-collect/failure.session-expired.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let prepared = c
        .prepare_payment(
            payment("10", Currency::Usd).external_id(ExternalId::new("order-9").expect("id")),
        )
        .expect("valid");
    let mut errors = Vec::new();
    for _ in 0..4 {
        errors.push(c.create_payment(&prepared).await.expect_err("failure"));
    }
    insta::assert_debug_snapshot!("failures_decoded", errors);
    let CoreError::Failed(f) = &errors[0] else {
        panic!("{:?}", errors[0])
    };
    assert_eq!(f.code, CollectCode::BadRequest);
    assert_eq!(f.raw, "400");
    let dialog = f.dialog.as_ref().expect("dialog");
    assert_eq!(
        dialog.other.get("yesButton"),
        Some(&serde_json::json!("OK"))
    );
    assert!(dialog.other.contains_key("noButton"));
    let CoreError::Failed(f) = &errors[1] else {
        panic!()
    };
    assert_eq!(f.code, CollectCode::PurchaseConfirm);
    assert_eq!(f.extra.as_ref().expect("extra")["price"], 12.75);
    assert_eq!(
        errors[2].retrieved(),
        Some(true),
        "a replayed error is still that error, marked"
    );
    assert_eq!(
        errors[2].code(),
        Some(&CollectCode::SalesAccountBalanceInsufficient)
    );
    assert!(errors[2].to_string().contains("replayed"));
    assert_eq!(errors[3].code(), Some(&CollectCode::AuthSessionExpired));
}

#[tokio::test]
async fn pending_then_replay_with_the_same_external_id() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("hosted-collect/create.pending.json")),
        Step::json(fixture("hosted-collect/create.replay.success.json")),
    ])
    .await;
    let c = client(&server.base, 2);
    let prepared = c
        .prepare_payment(payment("1000", Currency::Lbp))
        .expect("valid");
    let created = c.create_payment(&prepared).await.expect("created");
    assert!(created.retrieved);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].raw_body, reqs[1].raw_body);
    assert_eq!(reqs[0].body["externalId"], prepared.external_id().as_str());
    assert_eq!(reqs[0].body["amount"], "1000");
}

#[tokio::test]
async fn pending_beyond_policy_is_pending_with_the_external_id() {
    let server = ScriptedServer::start(vec![Step::json(fixture(
        "hosted-collect/create.pending.json",
    ))])
    .await;
    let c = client(&server.base, 1);
    let prepared = c
        .prepare_payment(payment("5", Currency::Usd))
        .expect("valid");
    let err = c.create_payment(&prepared).await.expect_err("pending");
    assert!(err.is_pending());
    assert_eq!(err.idempotency_key(), Some(prepared.external_id().as_str()));
    assert!(err.code().is_none(), "Pending is not a failure code");
}

#[tokio::test]
async fn forbidden_403_is_decoded_as_its_own_error() {
    let server = ScriptedServer::start(vec![Step::status(
        403,
        "text/html",
        fixture("hosted-collect/create.forbidden.403.html"),
    )])
    .await;
    let c = client(&server.base, 3);
    let prepared = c
        .prepare_payment(payment("5", Currency::Usd))
        .expect("valid");
    let err = c.create_payment(&prepared).await.expect_err("403");
    match &err {
        CoreError::Http(h) => {
            assert_eq!(h.status, 403);
            assert!(h.body_prefix.contains("Local addresses are not allowed"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.hits(), 1, "a 403 is not retried");
    // Its four addresses are public, so the service's own 403 (a non-public address) cannot
    // be the answer: a page in front of it (a WAF) may have passed the create on. Unknown,
    // never refused (a journal closing it `refused` would leave a payment that exists).
    assert_eq!(err.verdict(), whish_core::verdict::Verdict::Unknown);
    // The advice is this service's own, from codes/hosted-collect.toml.
    assert!(err.hint().contains("public addresses"), "{}", err.hint());
    assert_eq!(
        err.to_string(),
        "collect.create: http 403 without the service envelope"
    );
}

#[tokio::test]
async fn question_mark_propagates_a_refusal_and_a_pending() {
    async fn create_with_question_mark(
        c: &CollectClient,
        p: &whish_hosted_collect::PreparedPayment,
    ) -> Result<String, whish_hosted_collect::Error> {
        let created = c.create_payment(p).await?;
        Ok(created.collect_url)
    }
    async fn refund_with_question_mark(
        c: &CollectClient,
        id: &ExternalId,
    ) -> Result<bool, whish_hosted_collect::Error> {
        let refund = c
            .refund(&c.prepare_refund(Currency::Usd, id, None).expect("prepared"))
            .await?;
        Ok(refund.retrieved)
    }
    let server = ScriptedServer::start(vec![
        Step::json(fixture("hosted-collect/create.failure.400-string.json")),
        Step::json(fixture("hosted-collect/create.pending.json")),
        Step::json(fixture("hosted-collect/refund.failure.not-exists.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let p = c
        .prepare_payment(payment("5", Currency::Usd))
        .expect("valid");
    let refused = create_with_question_mark(&c, &p)
        .await
        .expect_err("a refusal is an Err");
    assert!(refused.code().is_some() && !refused.outcome_unknown());
    let pending = create_with_question_mark(&c, &p)
        .await
        .expect_err("Pending is an Err");
    assert!(pending.is_pending() && pending.outcome_unknown());
    assert_eq!(pending.idempotency_key(), Some(p.external_id().as_str()));
    let refused = refund_with_question_mark(&c, p.external_id())
        .await
        .expect_err("refund refused");
    assert_eq!(refused.code(), Some(&CollectCode::ExternalIdNotExists));
}

#[tokio::test]
async fn refusals_send_nothing() {
    let server = httpmock::MockServer::start_async().await;
    let any = server
        .mock_async(|_, then| {
            then.status(200)
                .body(fixture("hosted-collect/create.success.json"));
        })
        .await;
    let c = client(&server.base_url(), 0);
    let cases: Vec<(NewPayment, &str)> = vec![
        (payment("0.99", Currency::Usd), "amount"),
        (payment("1.005", Currency::Usd), "amount"),
        (payment("999", Currency::Lbp), "amount"),
        (payment("1000.5", Currency::Lbp), "amount"),
        (payment("-3", Currency::Usd), "amount"),
        (payment("10", Currency::Other("EUR".into())), "currency"),
        (
            NewPayment::new(
                "10".parse().expect("a"),
                Currency::Usd,
                CollectUrls::new(
                    SuccessCallbackUrl::new("http://localhost/cb").expect("url"),
                    FailureCallbackUrl::new("https://shop.example.com/ko").expect("url"),
                    SuccessRedirectUrl::new("https://shop.example.com/a").expect("url"),
                    FailureRedirectUrl::new("https://shop.example.com/b").expect("url"),
                ),
            ),
            "successCallbackUrl",
        ),
        (
            NewPayment::new(
                "10".parse().expect("a"),
                Currency::Usd,
                CollectUrls::new(
                    SuccessCallbackUrl::new("https://shop.example.com/ok").expect("url"),
                    FailureCallbackUrl::new("http://10.0.0.7/ko").expect("url"),
                    SuccessRedirectUrl::new("https://shop.example.com/a").expect("url"),
                    FailureRedirectUrl::new("https://shop.example.com/b").expect("url"),
                ),
            ),
            "failureCallbackUrl",
        ),
        (
            NewPayment::new(
                "10".parse().expect("a"),
                Currency::Usd,
                CollectUrls::new(
                    SuccessCallbackUrl::new("https://shop.example.com/ok").expect("url"),
                    FailureCallbackUrl::new("https://shop.example.com/ko").expect("url"),
                    SuccessRedirectUrl::new("http://127.0.0.1:3000/a").expect("url"),
                    FailureRedirectUrl::new("https://shop.example.com/b").expect("url"),
                ),
            ),
            "successRedirectUrl",
        ),
    ];
    // An empty or non-http address cannot even be built.
    let e = FailureRedirectUrl::new("").expect_err("empty");
    assert_eq!(e.field, "failureRedirectUrl");
    assert!(SuccessCallbackUrl::new("ftp://shop.example.com/cb").is_err());
    for (p, field) in cases {
        let err = c.prepare_payment(p).expect_err(field);
        match &err {
            CoreError::Validation(v) => assert_eq!(v.field, field, "{err}"),
            other => panic!("{other:?}"),
        }
    }
    let id = ExternalId::new("x").expect("id");
    let e = c
        .status(Currency::Other("EUR".into()), &id)
        .await
        .expect_err("currency");
    assert!(
        matches!(e, CoreError::Validation(ref v) if v.kind == ValidationKind::UnsupportedCurrency)
    );
    assert!(c.balance(Currency::Other("AED".into())).await.is_err());
    assert!(
        c.prepare_refund(Currency::Other("AED".into()), &id, None)
            .is_err()
    );
    any.assert_calls_async(0).await;
}

#[test]
fn callback_reference_round_trip_through_the_request_target() {
    let value = "A&B 17/é?#%+";
    let url = SuccessCallbackUrl::new("https://shop.example.com/whish/ok?src=whish")
        .expect("url")
        .with_reference("order", value)
        .to_string();
    // What an HTTP server receives as the request target of the GET callback:
    let target = &url["https://shop.example.com".len()..];
    assert_eq!(callback::reference(target, "order").as_deref(), Some(value));
    assert_eq!(callback::reference(target, "src").as_deref(), Some("whish"));
}

#[test]
fn client_debug_shows_no_secret() {
    let c = client("https://collect.example.com/api", 0);
    let text = format!("{c:?}");
    assert!(!text.contains(SECRET), "{text}");
    let ua: UserAgent = "A/1 (w.example; a@b.co)".parse().expect("ua");
    let e = CollectClient::builder(
        whish_core::ClientSettings::new("https://c.example.com").user_agent(ua),
    )
    .channel(" ")
    .secret(SecretString::from("s"))
    .website_url("w")
    .build()
    .expect_err("no channel");
    assert_eq!(e.setting, "channel");
    let e = CollectClient::builder("https://c.example.com")
        .channel("c")
        .secret(SecretString::from("s"))
        .website_url("w")
        .build()
        .expect_err("no user agent");
    assert_eq!(e.setting, "user_agent");
}

#[test]
fn local_callbacks_are_an_opt_in_for_a_loopback_base_only() {
    let ua: UserAgent = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)"
        .parse()
        .expect("ua");
    let build = |base: &str| {
        CollectClient::builder(
            whish_core::ClientSettings::new(base)
                .allow_local_callbacks()
                .user_agent(ua.clone()),
        )
        .channel("chan-42")
        .secret(SecretString::from(SECRET))
        .website_url("shop.example.com")
        .build()
    };
    let err = build("https://collect.example.com").expect_err("not loopback");
    assert_eq!(err.setting, "allow_local_callbacks");
    let c = build("http://127.0.0.1:9").expect("loopback base");
    let local = CollectUrls::new(
        SuccessCallbackUrl::new("http://127.0.0.1:8080/ok?order=1").expect("url"),
        FailureCallbackUrl::new("http://127.0.0.1:8080/ko?order=1").expect("url"),
        SuccessRedirectUrl::new("http://localhost:8080/thanks").expect("url"),
        FailureRedirectUrl::new("http://10.0.0.7/retry").expect("url"),
    );
    let prepared = c
        .prepare_payment(NewPayment::new(
            "10".parse().expect("a"),
            Currency::Usd,
            local,
        ))
        .expect("local addresses are accepted against the sandbox");
    let body: serde_json::Value = serde_json::from_slice(prepared.body()).expect("json");
    assert_eq!(
        body["successCallbackUrl"],
        "http://127.0.0.1:8080/ok?order=1"
    );
}

#[test]
fn a_reference_on_a_local_address_is_refused_by_the_default_client_at_prepare() {
    let url = SuccessCallbackUrl::new("http://127.0.0.1:8080/ok")
        .expect("any http address takes a reference")
        .with_reference("order", "A-1");
    let c = client("https://collect.example.com/api", 0);
    let err = c
        .prepare_payment(NewPayment::new(
            "10".parse().expect("a"),
            Currency::Usd,
            CollectUrls::new(
                url,
                FailureCallbackUrl::new("https://shop.example.com/ko").expect("url"),
                SuccessRedirectUrl::new("https://shop.example.com/a").expect("url"),
                FailureRedirectUrl::new("https://shop.example.com/b").expect("url"),
            ),
        ))
        .expect_err("not public");
    assert!(
        matches!(&err, CoreError::Validation(v) if v.field == "successCallbackUrl"),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_brand_segment_is_a_setting_and_codes_decode_under_either_spelling() {
    let server = ScriptedServer::start(vec![
        Step::json(r#"{"status":false,"code":"whish_pay.missing_pricing_id","data":null}"#),
        Step::json(r#"{"status":false,"code":"svc_pay.missing_pricing_id","data":null}"#),
    ])
    .await;
    let ua: UserAgent = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)"
        .parse()
        .expect("ua");
    let live = client(&server.base, 0);
    let spec = CollectClient::builder(
        whish_core::ClientSettings::new(server.base.clone())
            .policy(whish_testkit::fast_policy(0))
            .user_agent(ua),
    )
    .channel("chan-42")
    .secret(SecretString::from(SECRET))
    .website_url("shop.example.com")
    .brand(whish_hosted_collect::SPEC_BRAND)
    .build()
    .expect("client");
    let p = live
        .prepare_payment(payment("5", Currency::Usd))
        .expect("valid");
    let a = live.create_payment(&p).await.expect_err("refused");
    let b = spec.create_payment(&p).await.expect_err("refused");
    assert_eq!(a.code(), Some(&CollectCode::SvcPayMissingPricingId));
    assert_eq!(a.code(), b.code(), "one variant for both spellings");
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/payment/whish", "/payment/svc"]);
    let bad = CollectClient::builder("https://c.example.com")
        .brand("a/b")
        .build()
        .expect_err("one path segment");
    assert_eq!(bad.setting, "brand");
}

#[tokio::test]
async fn await_final_polls_status_until_the_payment_settles() {
    use whish_core::FollowUp;
    let server = ScriptedServer::start(vec![
        Step::json(fixture("hosted-collect/status.pending.success.json")),
        Step::json(r#"{"status":false,"code":500,"data":null}"#),
        Step::json(fixture("hosted-collect/status.success.success.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let id = ExternalId::new("order-7").expect("id");
    let follow = FollowUp::within(std::time::Duration::from_secs(5)).waits(
        std::time::Duration::from_millis(1),
        std::time::Duration::from_millis(5),
    );
    let status = c
        .await_final(Currency::Usd, &id, follow)
        .await
        .expect("settled");
    assert!(status.collect_status.is_paid());
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn the_older_nested_balance_shape_is_read_too() {
    let server = ScriptedServer::start(vec![Step::json(
        r#"{"status":true,"code":null,"data":{"balanceDetails":{"balance":12.5}}}"#,
    )])
    .await;
    let b = client(&server.base, 0)
        .balance(Currency::Usd)
        .await
        .expect("nested shape");
    assert_eq!(b.balance.to_string(), "12.5");
}

/// `retrieved: true` proves the service looked this externalId up and replays what it recorded:
/// a replayed failure is that payment's final failure, whatever its code's class (one the spec
/// asks to retry with the same externalId, or one checked before the request is looked at).
#[tokio::test]
async fn a_replayed_failure_is_final_whatever_its_code() {
    let replayed = |code: &str| {
        Step::json(format!(
            r#"{{"status":false,"code":"{code}","dialog":null,"extra":null,"retrieved":true}}"#
        ))
    };
    let server = ScriptedServer::start(vec![
        replayed("fatal"),
        replayed("auth.session_expired"),
        Step::json(r#"{"status":false,"code":"fatal","dialog":null,"extra":null}"#.to_owned()),
    ])
    .await;
    let c = client(&server.base, 0);
    let prepared = c
        .prepare_payment(
            payment("10", Currency::Usd).external_id(ExternalId::new("order-10").expect("id")),
        )
        .expect("valid");
    for _ in 0..2 {
        let e = c.create_payment(&prepared).await.expect_err("failure");
        assert_eq!(e.verdict(), whish_core::verdict::Verdict::Refused, "{e}");
        assert!(e.to_string().contains("refused with"), "{e}");
    }
    // Not replayed: `fatal` is the one code to retry with the same externalId.
    let e = c.create_payment(&prepared).await.expect_err("failure");
    assert_eq!(e.verdict(), whish_core::verdict::Verdict::Unknown, "{e}");
}
