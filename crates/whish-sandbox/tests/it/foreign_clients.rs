//! Clients written in other languages, unmodified: requests shaped byte for byte like those of
//! public integrations of the live collect service (the `/payment/whish` paths, `amount` and
//! `externalId` as JSON numbers, balance without `?currency`, mixed-case header names, a `"500"`
//! compared as a string) go through balance, create, the hosted page, status and refund.

use whish_sandbox::Sandbox;

const UA: &str = "NodeShop/2.1 (https://node.example.com; dev@node.example.com)";

struct Foreign {
    http: reqwest::Client,
    base: String,
    channel: String,
    secret: String,
    site: String,
}

impl Foreign {
    /// The credential headers, in the given case (header names are case-insensitive).
    fn signed(&self, r: reqwest::RequestBuilder, names: [&str; 3]) -> reqwest::RequestBuilder {
        r.header(names[0], &self.channel)
            .header(names[1], &self.secret)
            .header(names[2], &self.site)
            .header("User-Agent", UA)
    }

    /// A raw POST with the header case such clients use and a body written by hand.
    async fn post(&self, path: &str, body: &str) -> (u16, serde_json::Value) {
        let r = self
            .signed(
                self.http.post(format!("{}{path}", self.base)),
                ["Channel", "Secret", "WebsiteUrl"],
            )
            .header("Content-Type", "application/json; charset=utf-8")
            .body(body.to_owned())
            .send()
            .await
            .expect("sent");
        let status = r.status().as_u16();
        let bytes = r.bytes().await.expect("body");
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    async fn get(&self, path: &str) -> serde_json::Value {
        let bytes = self
            .signed(
                self.http.get(format!("{}{path}", self.base)),
                ["CHANNEL", "SECRET", "WEBSITEURL"],
            )
            .send()
            .await
            .expect("sent")
            .bytes()
            .await
            .expect("body");
        serde_json::from_slice(&bytes).expect("json")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_integration_written_for_the_live_service_completes_a_payment() {
    // The credentials the integration already has: the sandbox issues them.
    // Lenient: the callbacks go to loopback (a closed port), never off this machine.
    let sb = Sandbox::builder()
        .lenient(true)
        .collect_credentials("node-channel", "node-secret", "node.example.com")
        .start()
        .await
        .expect("sandbox");
    let c = Foreign {
        http: whish_core::tls::client_builder()
            .expect("tls")
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("http"),
        base: sb.collect_base_url(),
        channel: "node-channel".into(),
        secret: "node-secret".into(),
        site: "node.example.com".into(),
    };

    // Balance without ?currency (LBP, as before v1.4.1), read from either shape.
    let balance = c.get("/payment/account/balance").await;
    assert_eq!(balance["status"], true, "{balance}");
    assert_eq!(
        balance["data"]["balance"],
        balance["data"]["balanceDetails"]["balance"]
    );

    // A malformed create first: a 400 to fix, which must not burn the order id.
    let (_, bad) = c
        .post(
            "/payment/whish",
            r#"{"amount":0.5,"currency":"USD","externalId":1001,"successCallbackUrl":"https://node.example.com/ok","failureCallbackUrl":"https://node.example.com/ko","successRedirectUrl":"https://node.example.com/thanks","failureRedirectUrl":"https://node.example.com/retry"}"#,
        )
        .await;
    assert_eq!(bad["code"], "400", "{bad}");
    // The fixed payload, the same order id as a JSON number, amount as a number.
    let (status, created) = c
        .post(
            "/payment/whish",
            r#"{"amount":25.5,"currency":"USD","invoice":"Order 1001","externalId":1001,"successCallbackUrl":"http://127.0.0.1:9/ok?order=1001","failureCallbackUrl":"http://127.0.0.1:9/ko?order=1001","successRedirectUrl":"https://node.example.com/thanks","failureRedirectUrl":"https://node.example.com/retry"}"#,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(created["status"], true, "{created}");
    let collect_url = created["data"]["collectUrl"].as_str().expect("collectUrl");

    // The payer on the hosted page, the phone typed without its +.
    let payer = sb.test_payer().clone();
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("phone", payer.phone.trim_start_matches('+'))
        .append_pair("code", &payer.code)
        .finish();
    let paid = c
        .http
        .post(collect_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("attempt");
    assert_eq!(
        paid.headers()["location"],
        "https://node.example.com/thanks"
    );

    // Status by the numeric order id, then a refund on the live path.
    let (_, status) = c
        .post(
            "/payment/collect/status",
            r#"{"currency":"USD","externalId":1001}"#,
        )
        .await;
    assert_eq!(status["data"]["collectStatus"], "success", "{status}");
    let (_, refund) = c
        .post(
            "/payment/whish/refund",
            r#"{"currency":"USD","externalId":1001,"refundReason":"test"}"#,
        )
        .await;
    assert_eq!(refund["status"], true, "{refund}");
    assert_eq!(refund["retrieved"], false);

    // The retired rate query answers the spec's code, not a 404.
    let (status, rate) = c.post("/payment/whish/rate", "{}").await;
    assert_eq!((status, rate["code"].as_str()), (200, Some("deprecation")));
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_is_the_string_500_where_code_is_a_string() {
    let sb = Sandbox::start().await.expect("sandbox");
    sb.inject(
        whish_sandbox::Endpoint::CollectBalance,
        whish_sandbox::Fault::Pending,
        1,
    );
    sb.inject(
        whish_sandbox::Endpoint::TransferCountries,
        whish_sandbox::Fault::Pending,
        1,
    );
    let creds = sb.collect_credentials().clone();
    let c = Foreign {
        http: whish_core::tls::client_builder()
            .expect("tls")
            .build()
            .expect("client"),
        base: sb.collect_base_url(),
        channel: creds.channel.clone(),
        secret: creds.secret.clone(),
        site: creds.website_url.clone(),
    };
    let pending = c.get("/payment/account/balance?currency=USD").await;
    assert_eq!(
        pending["code"], "500",
        "collect: a string, like its other codes"
    );
    let t = sb.transfer_credentials().clone();
    let bytes = whish_core::tls::client_builder()
        .expect("tls")
        .build()
        .expect("client")
        .get(format!(
            "{}/api/woo/sending/countries",
            sb.transfer_base_url()
        ))
        .header("username", t.username)
        .header("key", t.key)
        .header("Request-id", "42")
        .send()
        .await
        .expect("sent")
        .bytes()
        .await
        .expect("body");
    let pending: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(pending["code"], 500, "transfer: the value 500");
    sb.shutdown().await;
}
