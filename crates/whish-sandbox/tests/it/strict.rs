//! Strict where the specifications are: each leniency the sandbox keeps for clients written
//! against an older revision is off by default and on only with `lenient(true)`. The requests are
//! written by hand, as a client in another language sends them (the SDK refuses most of them
//! before sending).

use serde_json::{Value, json};
use whish_sandbox::Sandbox;

struct Raw {
    http: reqwest::Client,
    sb: Sandbox,
}

impl Raw {
    async fn start(lenient: bool) -> Raw {
        let sb = Sandbox::builder()
            .lenient(lenient)
            .start()
            .await
            .expect("sandbox");
        let http = whish_core::tls::client_builder()
            .expect("tls")
            .build()
            .expect("http");
        Raw { http, sb }
    }

    async fn transfer(&self, path: &str, request_id: u64, body: Value) -> (u16, Value) {
        let c = self.sb.transfer_credentials();
        let r = self
            .http
            .post(format!("{}{path}", self.sb.transfer_base_url()))
            .header("username", &c.username)
            .header("key", &c.key)
            .header("Request-id", request_id.to_string())
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("sent");
        let status = r.status().as_u16();
        let bytes = r.bytes().await.expect("body");
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    async fn balance_without_currency(&self) -> Value {
        let c = self.sb.collect_credentials();
        self.http
            .get(format!(
                "{}/payment/account/balance",
                self.sb.collect_base_url()
            ))
            .header("channel", &c.channel)
            .header("secret", &c.secret)
            .header("websiteUrl", &c.website_url)
            .header("User-Agent", "Raw/1.0 (https://raw.example.com)")
            .send()
            .await
            .expect("sent")
            .bytes()
            .await
            .map(|b| serde_json::from_slice(&b).expect("json"))
            .expect("body")
    }
}

fn send_body(mode: &str, sender_identity: Value, receiver: Value) -> Value {
    json!({
        "paymentMode": mode,
        "fromCountry": 1,
        "toCountry": 1,
        "currencyId": 2,
        "amount": 100,
        "reason": "Education",
        "sourceOfFunds": "Savings",
        "sender": {"firstName": "John", "lastName": "Smith", "phone": "+14155550100",
                   "identity": sender_identity},
        "receiver": receiver,
    })
}

fn wallet_receiver(identity: Value) -> Value {
    json!({"firstName": "Rami", "lastName": "Haddad", "phone": "+96170000001", "identity": identity})
}

fn cash_receiver() -> Value {
    json!({"firstName": "Rami", "lastName": "Haddad", "phone": "+96170123456",
           "identity": {"dateBirth": "01-01-1980"}})
}

#[tokio::test]
async fn an_identity_sent_without_its_date_of_birth_is_refused_unless_lenient() {
    let strict = Raw::start(false).await;
    // The sender's identity without dateBirth.
    let (http, reply) = strict
        .transfer(
            "/api/woo/send/money",
            1,
            send_body(
                "CASH_COLLECTION",
                json!({"nationality": "US"}),
                cash_receiver(),
            ),
        )
        .await;
    assert_eq!(http, 200);
    assert_eq!(
        reply["code"], "sender.customer.date_of_birth_invalid",
        "{reply}"
    );
    // A wallet receiver's identity without dateBirth.
    let (_, reply) = strict
        .transfer(
            "/api/woo/send/money",
            2,
            send_body(
                "MOBILE_WALLET",
                json!({"dateBirth": "01-01-1980"}),
                wallet_receiver(json!({"nationality": "LB"})),
            ),
        )
        .await;
    assert_eq!(
        reply["code"], "receiver.customer.date_of_birth_invalid",
        "{reply}"
    );
    assert!(strict.sb.transfers().is_empty());

    let lenient = Raw::start(true).await;
    let (_, reply) = lenient
        .transfer(
            "/api/woo/send/money",
            3,
            send_body(
                "MOBILE_WALLET",
                json!({"nationality": "US"}),
                wallet_receiver(json!({"nationality": "LB"})),
            ),
        )
        .await;
    assert_eq!(reply["status"], true, "{reply}");
}

#[tokio::test]
async fn a_balance_without_currency_is_a_missing_parameter_unless_lenient() {
    let strict = Raw::start(false).await;
    let reply = strict.balance_without_currency().await;
    assert_eq!(reply["status"], false, "{reply}");
    assert_eq!(reply["code"], "400", "{reply}");

    let lenient = Raw::start(true).await;
    let reply = lenient.balance_without_currency().await;
    assert_eq!(reply["status"], true, "{reply}");
    assert!(reply["data"]["balance"].is_number(), "{reply}");
}

/// The statement lines of one currency, as (type, debit, credit).
fn lines(statement: &Value) -> Vec<(String, f64, f64)> {
    statement["data"]["list"][0]["transactions"]
        .as_array()
        .expect("transactions")
        .iter()
        .map(|t| {
            (
                t["type"].as_str().unwrap_or_default().to_owned(),
                t["debit"].as_f64().unwrap_or_default(),
                t["credit"].as_f64().unwrap_or_default(),
            )
        })
        .collect()
}

async fn cancel_and_read_statement(raw: &Raw) -> Vec<(String, f64, f64)> {
    let (_, sent) = raw
        .transfer(
            "/api/woo/send/money",
            10,
            send_body(
                "CASH_COLLECTION",
                json!({"dateBirth": "01-01-1980"}),
                cash_receiver(),
            ),
        )
        .await;
    let ltn = sent["data"]["ltnNumber"].as_str().expect("ltn").to_owned();
    let (_, cancelled) = raw
        .transfer("/api/woo/cancel/send/money", 11, json!({"ltnNumber": ltn}))
        .await;
    assert_eq!(cancelled["data"]["status"], "CANCELED_FULL", "{cancelled}");
    let (_, statement) = raw
        .transfer(
            "/api/woo/statement",
            12,
            json!({"fromDate": "2000-01-01 00:00:00", "toDate": "2100-01-01 00:00:00",
                   "currencyId": 2}),
        )
        .await;
    lines(&statement)
}

#[tokio::test]
async fn a_cancel_comes_back_as_a_transfer_line_unless_lenient() {
    let strict = Raw::start(false).await;
    let l = cancel_and_read_statement(&strict).await;
    let (kind, debit, credit) = l.last().expect("a line for the cancel").clone();
    assert_eq!(kind, "TRANSFER", "{l:?}");
    assert!(
        debit > 0.0 && credit == 0.0,
        "the refund raises the balance: {l:?}"
    );
    assert!(
        l.iter().all(|(k, ..)| k == "TRANSFER" || k == "TOPUP"),
        "{l:?}"
    );

    let lenient = Raw::start(true).await;
    let l = cancel_and_read_statement(&lenient).await;
    assert_eq!(l.last().expect("a line").0, "CANCELLATION", "{l:?}");
}

#[tokio::test]
async fn a_non_public_callback_url_is_accepted_with_the_envelope_and_never_called_unless_lenient() {
    let strict = Raw::start(false).await;
    let mut body = send_body(
        "CASH_COLLECTION",
        json!({"dateBirth": "01-01-1980"}),
        cash_receiver(),
    );
    body["callbackUrl"] = json!("http://127.0.0.1:9/cb");
    let (http, sent) = strict.transfer("/api/woo/send/money", 20, body).await;
    assert_eq!(
        http, 200,
        "every transfer endpoint answers 200 with the envelope"
    );
    assert_eq!(sent["status"], true, "{sent}");
    let ltn = sent["data"]["ltnNumber"].as_str().expect("ltn");
    let collected = strict.sb.collect_cash(ltn).await.expect("collected");
    let d = collected.callback.expect("a delivery record");
    assert_eq!(d.status, None, "never called: {d:?}");
    assert!(
        d.error.as_deref().is_some_and(|e| e.contains("not public")),
        "{d:?}"
    );
}
