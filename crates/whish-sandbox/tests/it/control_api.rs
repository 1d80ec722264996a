//! The control API over HTTP under `/_sandbox/`, the journal, faults and authentication.

use std::time::Duration;

use crate::support::*;
use whish::core::Error;
use whish::prelude::*;
use whish_sandbox::{Endpoint, Fault, Sandbox};

async fn post(sb: &Sandbox, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    let r = whish_core::tls::client_builder()
        .expect("tls")
        .build()
        .expect("client")
        .post(format!("{}/_sandbox{path}", sb.root_url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("sent");
    let status = r.status().as_u16();
    let bytes = r.bytes().await.expect("body");
    (status, serde_json::from_slice(&bytes).expect("json"))
}

async fn get(sb: &Sandbox, path: &str) -> serde_json::Value {
    let bytes = whish_core::tls::client_builder()
        .expect("tls")
        .build()
        .expect("client")
        .get(format!("{}/_sandbox{path}", sb.root_url()))
        .send()
        .await
        .expect("sent")
        .bytes()
        .await
        .expect("body");
    serde_json::from_slice(&bytes).expect("json")
}

fn cash() -> CashCollectionSend {
    CashCollectionSend::new(
        whish::transfer::CountryId::LEBANON,
        Currency::Usd,
        "20".parse().expect("a"),
        whish::transfer::Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        whish::transfer::CashReceiver::new(
            Customer::new(
                FirstName::new("Rami"),
                LastName::new("Haddad"),
                "+96170123456",
            ),
            whish::transfer::Identity::new(
                whish::transfer::DateOfBirth::parse("07-03-1990").expect("valid"),
            ),
        ),
        Reason::Other,
        SourceOfFunds::Other,
    )
}

#[tokio::test]
async fn the_http_control_api_drives_the_world() {
    let sb = Sandbox::start().await.expect("sandbox");
    let client = transfer(&sb, 0);
    let p = client.prepare_send(cash()).expect("p");
    let SendOutcome::Sent(sent) = client.send(&p).await.expect("send") else {
        panic!()
    };

    let (status, body) = post(
        &sb,
        "/transfer/collect",
        serde_json::json!({"ltnNumber": sent.ltn_number}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["transferId"], sent.transfer_id.as_str());
    let (status, _) = post(
        &sb,
        "/transfer/collect",
        serde_json::json!({"ltnNumber": sent.ltn_number}),
    )
    .await;
    assert_eq!(status, 409, "collected once");
    let (status, _) = post(
        &sb,
        "/transfer/collect",
        serde_json::json!({"ltnNumber": "nope"}),
    )
    .await;
    assert_eq!(status, 404);

    let state = get(&sb, "/state").await;
    assert_eq!(state["transfers"][0]["status"], "RECEIVED");

    let (status, _) = post(
        &sb,
        "/balances",
        serde_json::json!({"service": "transfer", "currency": "USD", "amount": "7"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = post(
        &sb,
        "/faults",
        serde_json::json!({"endpoint": "transfer.countries", "fault": "pending", "count": 1}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = post(
        &sb,
        "/faults",
        serde_json::json!({"endpoint": "nope", "fault": "pending"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let pending = client.sending_countries().await.expect_err("pending");
    assert!(matches!(pending, Error::Pending(_)));

    let requests = get(&sb, "/requests").await;
    let first = &requests[0];
    assert_eq!(first["endpoint"], "transfer.send");
    let headers = first["headers"].to_string();
    assert!(headers.contains("key: <redacted>"), "{headers}");
    assert!(
        !headers.contains(&sb.transfer_credentials().key),
        "the key is never journaled"
    );

    let (status, _) = post(&sb, "/reset", serde_json::json!({})).await;
    assert_eq!(status, 200);
    assert!(sb.transfers().is_empty() && sb.requests().is_empty());
    sb.shutdown().await;
}

#[tokio::test]
async fn a_delay_longer_than_the_timeout_leaves_the_request_applied() {
    let sb = Sandbox::start().await.expect("sandbox");
    let client = transfer(&sb, 0);
    sb.inject(
        Endpoint::TransferSend,
        Fault::Delay(Duration::from_millis(2500)),
        1,
    );
    let p = client.prepare_send(cash()).expect("p");
    let err = client.send(&p).await.expect_err("timed out");
    assert!(
        matches!(&err, Error::Transport(t) if t.may_have_reached),
        "{err:?}"
    );
    // Applied anyway: calling send again with the same prepared transfer confirms it.
    match client.send(&p).await.expect("resend") {
        SendOutcome::Confirmed { status, .. } => assert_eq!(
            status.transfer_id,
            Some(sb.transfers()[0].transfer_id.clone())
        ),
        other => panic!("expected Confirmed, got {other:?}"),
    }
    assert_eq!(sb.transfers().len(), 1);
    sb.shutdown().await;
}

#[tokio::test]
async fn each_service_checks_its_own_credentials_and_headers() {
    let sb = Sandbox::start().await.expect("sandbox");
    let c = sb.collect_credentials();
    let wrong_secret = whish::collect::CollectClient::builder(
        whish::ClientSettings::new(sb.collect_base_url()).user_agent(ua()),
    )
    .channel(c.channel.clone())
    .secret(SecretString::from("wrong"))
    .website_url(c.website_url.clone())
    .build()
    .expect("client");
    let e = wrong_secret
        .balance(Currency::Usd)
        .await
        .expect_err("refused");
    assert!(
        matches!(&e, Error::Failed(f) if f.raw == "auth.session_not_exist"),
        "{e:?}"
    );
    let wrong_site = whish::collect::CollectClient::builder(
        whish::ClientSettings::new(sb.collect_base_url()).user_agent(ua()),
    )
    .channel(c.channel.clone())
    .secret(SecretString::from(c.secret.clone()))
    .website_url("other.example.com")
    .build()
    .expect("client");
    let e = wrong_site
        .balance(Currency::Usd)
        .await
        .expect_err("refused");
    assert!(matches!(&e, Error::Failed(f) if f.raw == "400"), "{e:?}");

    let t = sb.topup_credentials();
    let wrong_token = whish::topup::TopupClient::builder(
        whish::ClientSettings::new(sb.topup_base_url()).user_agent(ua()),
    )
    .session_id(SecretString::from(t.session_id.clone()))
    .token(SecretString::from("wrong"))
    .build()
    .expect("client");
    let e = wrong_token.balance().await.expect_err("refused");
    assert!(
        matches!(&e, Error::Failed(f) if f.raw == "external.invalid.request"),
        "{e:?}"
    );

    // No Request-id header: the transfer service refuses in the envelope.
    let k = sb.transfer_credentials();
    let bytes = whish_core::tls::client_builder()
        .expect("tls")
        .build()
        .expect("client")
        .get(format!(
            "{}/api/woo/sending/countries",
            sb.transfer_base_url()
        ))
        .header("username", &k.username)
        .header("key", &k.key)
        .send()
        .await
        .expect("sent")
        .bytes()
        .await
        .expect("body");
    let reply: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(reply["status"], false);
    assert_eq!(reply["code"], "api.account.invalid_request");
    sb.shutdown().await;
}

#[tokio::test]
async fn env_exports_name_every_setting_of_the_whish_command() {
    let sb = Sandbox::start().await.expect("sandbox");
    let text = sb.env_exports();
    for var in [
        "WHISH_TRANSFER_BASE_URL",
        "WHISH_TRANSFER_USERNAME",
        "WHISH_TRANSFER_KEY",
        "WHISH_COLLECT_BASE_URL",
        "WHISH_COLLECT_CHANNEL",
        "WHISH_COLLECT_SECRET",
        "WHISH_COLLECT_WEBSITE_URL",
        "WHISH_TOPUP_BASE_URL",
        "WHISH_TOPUP_SESSION_ID",
        "WHISH_TOPUP_TOKEN",
        "WHISH_USER_AGENT",
        "WHISH_SANDBOX_CALLBACK_KEY",
    ] {
        assert!(text.contains(&format!("export {var}='")), "{var}");
    }
    let key = String::from_utf8(sb.callback_key().to_vec()).expect("a text key");
    assert!(text.contains(&format!("export WHISH_SANDBOX_CALLBACK_KEY='{key}'")));
    assert!(text.contains(&format!("'{}/transfer/api'", sb.root_url())));
    sb.shutdown().await;
}

#[tokio::test]
async fn faults_are_consumed_in_order_and_a_huge_count_costs_nothing() {
    let sb = Sandbox::start().await.expect("sandbox");
    let client = locations(&sb);
    sb.inject(Endpoint::Governorates, Fault::Pending, 2);
    sb.inject(
        Endpoint::Governorates,
        Fault::Delay(Duration::from_millis(1)),
        1,
    );
    sb.inject(Endpoint::Shops, Fault::Pending, u32::MAX);
    for _ in 0..2 {
        assert!(matches!(
            client.governorates().await,
            Err(Error::Pending(_))
        ));
    }
    assert_eq!(client.governorates().await.expect("delayed").len(), 8);
    assert_eq!(client.governorates().await.expect("no fault left").len(), 8);
    let faults: Vec<Option<String>> = sb
        .requests()
        .into_iter()
        .filter(|r| r.endpoint == Endpoint::Governorates)
        .map(|r| r.fault)
        .collect();
    assert_eq!(
        faults,
        [
            Some("pending".into()),
            Some("pending".into()),
            Some("delay 1 ms".into()),
            None
        ]
    );
    assert!(matches!(
        client.shops(&ShopFilter::default()).await,
        Err(Error::Pending(_))
    ));
    sb.shutdown().await;
}

#[tokio::test]
async fn malformed_control_calls_are_400_with_a_json_error() {
    let sb = Sandbox::start().await.expect("sandbox");
    // A typed body: a missing field names itself.
    let (status, body) = post(&sb, "/transfer/collect", serde_json::json!({})).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().expect("error").contains("ltnNumber"),
        "{body}"
    );
    // A wrong type.
    let (status, body) = post(
        &sb,
        "/clock/advance",
        serde_json::json!({"seconds": "soon"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    // Not JSON at all, and a `text/plain` simple POST (what any web page can send): refused.
    for content_type in ["application/json", "text/plain"] {
        let r = whish_core::tls::client_builder()
            .expect("tls")
            .build()
            .expect("client")
            .post(format!("{}/_sandbox/reset", sb.root_url()))
            .header("content-type", content_type)
            .body("not json")
            .send()
            .await
            .expect("sent");
        // `/reset` reads no body, but a cross-site simple POST must not reach it.
        let expected = if content_type == "text/plain" {
            400
        } else {
            200
        };
        assert_eq!(r.status().as_u16(), expected, "{content_type}");
        let r = whish_core::tls::client_builder()
            .expect("tls")
            .build()
            .expect("client")
            .post(format!("{}/_sandbox/collect/pay", sb.root_url()))
            .header("content-type", content_type)
            .body("externalId=x")
            .send()
            .await
            .expect("sent");
        assert_eq!(r.status().as_u16(), 400, "{content_type}");
        let bytes = r.bytes().await.expect("body");
        let body: serde_json::Value = serde_json::from_slice(&bytes).expect("a JSON error");
        assert!(body["error"].is_string(), "{body}");
    }
    // A page that rebinds its own name to 127.0.0.1 sends its own Host: refused.
    let r = whish_core::tls::client_builder()
        .expect("tls")
        .build()
        .expect("client")
        .get(format!("{}/_sandbox/state", sb.root_url()))
        .header("host", "attacker.example:80")
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status().as_u16(), 403);
    let r = whish_core::tls::client_builder()
        .expect("tls")
        .build()
        .expect("client")
        .get(format!("{}/_sandbox/state", sb.root_url()))
        .header("host", "localhost")
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status().as_u16(), 200);
    // Unknown link: 404 through the same error type.
    let (status, _) = post(
        &sb,
        "/collect/pay",
        serde_json::json!({"externalId": "nope"}),
    )
    .await;
    assert_eq!(status, 404);
    sb.shutdown().await;
}
