//! Wire behaviour of the transport against loopback peers.

use std::time::Duration;

use crate::support::{Error, SECRET_KEY, TestCode};
use http::HeaderValue;
use serde_json::{Value, json};
use whish_core::CallOptions;
use whish_core::runtime::Resend;
use whish_core::runtime::{Method, Request, Transport};
use whish_core::{ClientSettings, SecretString, ServiceHeaders, TransportErrorKind, UserAgent};
use whish_testkit::{ScriptedServer, Step, fixture};

fn transport(base: &str, retries: u32) -> Transport {
    transport_with(base, whish_testkit::fast_policy(retries))
}

fn transport_with(base: &str, policy: whish_core::Policy) -> Transport {
    let ua: UserAgent = "WhishTests/1.0 (https://tests.example.com; dev@example.com)"
        .parse()
        .expect("ua");
    ClientSettings::new(base)
        .user_agent(ua)
        .policy(policy)
        .build_transport(
            "test",
            ServiceHeaders::new()
                .required("username", "username", Some("merchant-7"))
                .secret("key", "key", Some(&SecretString::from(SECRET_KEY))),
        )
        .expect("transport")
}

fn send_request(resend: Resend) -> Request {
    Request::new("transfer.send", Method::POST, "/api/woo/send/money")
        .json(&json!({"amount": 12.34, "currencyId": 2}))
        .expect("body")
        .header(
            http::HeaderName::from_static("request-id"),
            HeaderValue::from_static("1755770400000001"),
        )
        .idempotency_key("1755770400000001")
        .resend(resend)
}

#[tokio::test]
async fn request_on_the_wire_with_doubled_api_segment() {
    let server = ScriptedServer::start(vec![Step::json(fixture(
        "money-transfer/send.cash-collection.success.json",
    ))])
    .await;
    let t = transport(&format!("{}/x/api", server.base), 0);
    let reply = t
        .call::<Value, TestCode>(send_request(Resend::SameKey { on_pending: true }))
        .await
        .expect("success");
    assert_eq!(reply.data.expect("data")["ltnNumber"], "48213590");
    assert_eq!(reply.attempts, 1);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/x/api/api/woo/send/money");
    insta::assert_json_snapshot!("send_on_the_wire", reqs[0]);
    assert_eq!(
        server.raw_secret_values(),
        vec![SECRET_KEY.to_owned()],
        "the key is sent"
    );
}

#[test]
fn every_path_joins_the_base_the_same_on_every_call() {
    let t = transport("https://api.example.com/x/api/", 0);
    let url = |path: &str| t.url_of(&Request::new("test.any", Method::GET, path));
    // More paths than the transport keeps joined, each asked twice, the query kept apart.
    for round in 0..2 {
        for n in 0..80 {
            assert_eq!(
                url(&format!("/v2/segment-{n}/fetch")),
                format!("https://api.example.com/x/api/v2/segment-{n}/fetch"),
                "round {round}"
            );
        }
        assert_eq!(url("no-slash"), "https://api.example.com/x/api/no-slash");
        assert_eq!(
            t.url_of(
                &Request::new("test.any", Method::GET, "/v2/segment-3/fetch").query("q", "a b")
            ),
            "https://api.example.com/x/api/v2/segment-3/fetch?q=a+b"
        );
        assert_eq!(
            url("/v2/segment-3/fetch"),
            "https://api.example.com/x/api/v2/segment-3/fetch",
            "a query never sticks to a path joined before"
        );
    }
}

#[tokio::test]
async fn a_request_header_set_twice_goes_once_with_its_last_value() {
    let server =
        ScriptedServer::start(vec![Step::json(r#"{"status":true,"data":{"balance":1}}"#)]).await;
    let t = transport(&server.base, 0);
    let id = http::HeaderName::from_static("request-id");
    let req = Request::new("collect.balance", Method::GET, "/payment/account/balance")
        .header(id.clone(), HeaderValue::from_static("1"))
        .header(id, HeaderValue::from_static("2"));
    t.call::<Value, TestCode>(req).await.expect("ok");
    let r = &server.requests()[0];
    let sent: Vec<_> = r
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("request-id"))
        .collect();
    assert_eq!(sent.len(), 1, "{:?}", r.headers);
    assert_eq!(r.header("request-id"), Some("2"));
}

#[tokio::test]
async fn query_is_encoded() {
    let server =
        ScriptedServer::start(vec![Step::json(r#"{"status":true,"data":{"balance":1}}"#)]).await;
    let t = transport(&server.base, 0);
    let req = Request::new("collect.balance", Method::GET, "/payment/account/balance")
        .query("currency", "USD")
        .query("note", "a b&c");
    t.call::<Value, TestCode>(req).await.expect("ok");
    let r = &server.requests()[0];
    assert_eq!(r.path, "/payment/account/balance?currency=USD&note=a+b%26c");
    assert_eq!(r.header("content-type"), None, "no body, no Content-Type");
}

#[tokio::test]
async fn read_is_retried_after_proxy_502_with_identical_bytes() {
    let server = ScriptedServer::start(vec![
        Step::status(502, "text/html", fixture("common/proxy-502.html")),
        Step::json(fixture("money-transfer/modes.success.json")),
    ])
    .await;
    let t = transport(&server.base, 2);
    let req = Request::new("transfer.modes", Method::GET, "/api/woo/send/money/modes")
        .resend(Resend::Read);
    let reply = t
        .call::<Vec<String>, TestCode>(req)
        .await
        .expect("second attempt works");
    assert_eq!(reply.attempts, 2);
    assert_eq!(
        reply.data.expect("data"),
        vec!["CASH_COLLECTION", "MOBILE_WALLET"]
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0], reqs[1]);
}

#[tokio::test]
async fn unsafe_request_is_never_resent() {
    let server = ScriptedServer::start(vec![Step::status(503, "text/html", "down")]).await;
    let t = transport(&server.base, 3);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::Never))
        .await
        .expect_err("503");
    assert_eq!(server.hits(), 1);
    match err {
        Error::Http(h) => {
            assert_eq!(h.status, 503);
            assert_eq!(h.body_prefix, "down");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn timeout_then_resend_same_key_and_same_bytes() {
    let server = ScriptedServer::start(vec![
        Step::Delay(
            Duration::from_millis(1500),
            Box::new(Step::json(fixture(
                "money-transfer/send.cash-collection.success.json",
            ))),
        ),
        Step::json(fixture("money-transfer/send.failure.already-done.json")),
    ])
    .await;
    let t = transport(&server.base, 2);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::SameKey { on_pending: true }))
        .await
        .expect_err("already done");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].raw_body, reqs[1].raw_body, "same bytes");
    assert_eq!(
        reqs[0].header("request-id"),
        reqs[1].header("request-id"),
        "same key"
    );
    match err {
        Error::Failed(f) => {
            assert_eq!(f.code, TestCode::AlreadyDone);
            assert_eq!(f.attempts, 2);
            assert!(
                f.resent_after_possible_delivery,
                "the first attempt may have arrived"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn timeout_exhausted_reports_may_have_reached() {
    let slow = Step::Delay(Duration::from_millis(1500), Box::new(Step::json("{}")));
    let server = ScriptedServer::start(vec![slow]).await;
    let t = transport(&server.base, 1);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::SameKey { on_pending: true }))
        .await
        .expect_err("timeout");
    assert_eq!(server.hits(), 2);
    match &err {
        Error::Transport(e) => {
            assert_eq!(e.kind, TransportErrorKind::Timeout);
            assert!(e.may_have_reached);
            assert_eq!(e.attempts, 2);
            assert_eq!(e.idempotency_key.as_deref(), Some("1755770400000001"));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.outcome_unknown());
    assert!(
        err.hint().contains("may have been applied") && err.hint().contains("confirm"),
        "{}",
        err.hint()
    );
    assert_eq!(
        err.to_string(),
        "transfer.send: timed out after 2 attempts, the request may have been applied"
    );
}

#[tokio::test]
async fn per_call_timeout_override() {
    let slow = Step::Delay(
        Duration::from_millis(150),
        Box::new(Step::json(r#"{"status":true,"data":1}"#)),
    );
    let server = ScriptedServer::start(vec![slow]).await;
    // The client's own timeout is far above the reply's delay: only the override times out.
    let mut patient = whish_testkit::fast_policy(0);
    patient.timeouts.attempt = Duration::from_secs(5);
    let t = transport_with(&server.base, patient);
    let req = Request::new("x", Method::GET, "/x")
        .options(CallOptions::new().attempt_timeout(Duration::from_millis(50)));
    let err = t.call::<Value, TestCode>(req).await.expect_err("timeout");
    assert!(matches!(err, Error::Transport(ref e) if e.kind == TransportErrorKind::Timeout));
    let req = Request::new("x", Method::GET, "/x");
    assert!(
        t.call::<Value, TestCode>(req).await.is_ok(),
        "the override was for one call: the client's 5 s applies again"
    );
}

#[tokio::test]
async fn dropped_reply_is_resent_when_safe() {
    let server = ScriptedServer::start(vec![
        Step::Drop,
        Step::json(fixture("intl-topup/pay.replay.success.json")),
    ])
    .await;
    let t = transport(&server.base, 2);
    let reply = t
        .call::<Value, TestCode>(send_request(Resend::SameKey { on_pending: true }))
        .await
        .expect("replayed");
    assert_eq!(reply.retrieved, Some(true));
    assert!(reply.resent_after_possible_delivery);
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn pending_is_resent_only_where_the_service_defines_it() {
    let pending = fixture("money-transfer/send.pending.number.json");
    let server = ScriptedServer::start(vec![Step::json(pending.clone())]).await;
    let t = transport(&server.base, 2);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::SameKey { on_pending: true }))
        .await
        .expect_err("pending");
    assert_eq!(server.hits(), 3, "first attempt + 2 resends");
    match &err {
        Error::Pending(p) => {
            assert_eq!(p.attempts, 3);
            assert_eq!(p.idempotency_key.as_deref(), Some("1755770400000001"));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_pending());
    assert!(
        !err.to_string().contains("failed:"),
        "Pending is never called a failure"
    );

    let server = ScriptedServer::start(vec![Step::json(pending)]).await;
    let t = transport(&server.base, 2);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::SameKey { on_pending: false }))
        .await
        .expect_err("pending");
    assert!(err.is_pending());
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn pending_as_string_is_pending() {
    let server = ScriptedServer::start(vec![Step::json(fixture(
        "money-transfer/send.pending.string.json",
    ))])
    .await;
    let t = transport(&server.base, 0);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::Never))
        .await
        .expect_err("pending");
    assert!(err.is_pending());
}

#[tokio::test]
async fn forbidden_403_is_its_own_error_and_not_retried() {
    let server = ScriptedServer::start(vec![Step::status(
        403,
        "text/html",
        fixture("hosted-collect/create.forbidden.403.html"),
    )])
    .await;
    let t = transport(&server.base, 3);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::SameKey { on_pending: true }))
        .await
        .expect_err("403");
    assert_eq!(server.hits(), 1);
    match &err {
        Error::Http(h) => {
            assert_eq!(h.status, 403);
            assert!(h.body_prefix.contains("Forbidden"));
        }
        other => panic!("{other:?}"),
    }
    // whish-core knows no service: the 403 advice belongs to the collect service's data file.
    assert_eq!(
        err.to_string(),
        "transfer.send: http 403 without the service envelope"
    );
    assert!(!err.hint().contains("public"), "{}", err.hint());
}

#[tokio::test]
async fn non_envelope_body_is_kept_to_512_bytes() {
    let big = "x".repeat(5000);
    let server = ScriptedServer::start(vec![Step::status(502, "text/plain", big)]).await;
    let t = transport(&server.base, 0);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::Read))
        .await
        .expect_err("502");
    match err {
        Error::Http(h) => {
            assert_eq!(h.status, 502);
            assert_eq!(h.body_prefix.len(), 512);
            assert!(h.is_server_side());
        }
        other => panic!("{other:?}"),
    }
}

#[derive(Debug, serde::Deserialize)]
struct Quote {
    #[allow(dead_code)]
    fees: whish_core::Amount,
}

#[tokio::test]
async fn decode_error_names_the_path() {
    let server = ScriptedServer::start(vec![Step::json(
        r#"{"status":true,"code":null,"data":{"fees":"many"}}"#,
    )])
    .await;
    let t = transport(&server.base, 2);
    let err = t
        .call::<Quote, TestCode>(
            Request::new("transfer.fees", Method::POST, "/f").resend(Resend::Read),
        )
        .await
        .expect_err("decode");
    assert_eq!(server.hits(), 1, "a decode error is not retried");
    match &err {
        Error::Decode(d) => {
            assert_eq!(d.path, "data.fees");
            assert_eq!(d.http_status, 200);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn connect_failure_did_not_reach() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let t = transport(&format!("http://127.0.0.1:{port}"), 1);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::Read))
        .await
        .expect_err("refused");
    match &err {
        Error::Transport(e) => {
            assert_eq!(e.kind, TransportErrorKind::Connect);
            assert!(!e.may_have_reached);
            assert_eq!(e.attempts, 2);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.nothing_sent());
}

/// A name that does not resolve, with "tls" and "certificate" in it: the failure is told by the
/// error's type (no TLS error in the chain), never by its text.
#[cfg(any(
    feature = "rustls-ring",
    feature = "rustls-aws-lc-rs",
    feature = "native-tls"
))]
#[tokio::test]
async fn a_name_lookup_failure_is_a_connect_failure_whatever_the_name_says() {
    let t = transport("https://tls-certificate-handshake.invalid", 0);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::Read))
        .await
        .expect_err("no such host");
    match &err {
        Error::Transport(e) => {
            assert_ne!(e.kind, TransportErrorKind::Tls, "{e}");
            assert!(
                !e.may_have_reached || e.kind == TransportErrorKind::Timeout,
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn failure_carries_dialog_and_unknown_codes_decode() {
    let server = ScriptedServer::start(vec![Step::json(fixture(
        "money-transfer/send.failure.unknown-code.json",
    ))])
    .await;
    let t = transport(&server.base, 3);
    let err = t
        .call::<Value, TestCode>(send_request(Resend::SameKey { on_pending: true }))
        .await
        .expect_err("fail");
    assert_eq!(server.hits(), 1, "a failure code is final");
    match &err {
        Error::Failed(f) => {
            assert_eq!(f.code, TestCode::Unknown("transfer.brand_new_rule".into()));
            assert_eq!(f.raw, "transfer.brand_new_rule");
            assert!(
                f.dialog
                    .as_ref()
                    .and_then(|d| d.message.as_deref())
                    .is_some()
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn httpmock_hit_counts_for_a_read() {
    let server = httpmock::MockServer::start_async().await;
    let mock = server
        .mock_async(|when, then| {
            when.method("GET")
                .path("/api/api/woo/sending/countries")
                .header("username", "merchant-7")
                .header("key", SECRET_KEY);
            then.status(200)
                .body(fixture("money-transfer/countries.success.json"));
        })
        .await;
    let t = transport(&format!("{}/api", server.base_url()), 0);
    let reply = t
        .call::<Value, TestCode>(Request::new(
            "transfer.countries",
            Method::GET,
            "/api/woo/sending/countries",
        ))
        .await
        .expect("ok");
    assert_eq!(reply.data.expect("data")["list"][0]["code"], "LB");
    mock.assert_calls_async(1).await;
}
