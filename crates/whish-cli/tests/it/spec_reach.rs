//! Through the command: what the specifications allow the command can say. A status read by
//! several identifiers, the top-up `language` header and a pay to another target, the
//! specification's collect path, a send checked against the total quoted, and a collection
//! callback checked from the shell.

use serde_json::Value;

use crate::support::*;
use whish_testkit::fixture;

fn topup_env(base: &str) -> Vec<(String, String)> {
    vec![
        ("WHISH_TOPUP_BASE_URL".into(), base.into()),
        ("WHISH_TOPUP_SESSION_ID".into(), "session-1".into()),
        ("WHISH_TOPUP_TOKEN".into(), "token-1".into()),
        (
            "WHISH_USER_AGENT".into(),
            "Shop/1.0 (https://shop.example.com; dev@shop.example.com)".into(),
        ),
    ]
}

#[tokio::test]
async fn a_status_read_by_several_identifiers_sends_them_all_and_a_failure_names_them() {
    let sb = funded_sandbox().await;
    let env = sb.env_vars();
    let body = temp_file("reach-body.json", &cash_body("40"))
        .display()
        .to_string();
    let sent = whish(&["transfer", "send", "--body", &body], &env).await;
    assert_eq!(sent.code, 0, "{sent:?}");
    let v = sent.json();
    let id = v["requestId"]
        .as_str()
        .map_or_else(|| v["requestId"].to_string(), str::to_owned);
    let ltn = v["ltnNumber"].as_str().expect("ltn").to_owned();

    let both = whish(
        &["transfer", "status", "--request-id", &id, "--ltn", &ltn],
        &env,
    )
    .await;
    assert_eq!(both.code, 0, "{both:?}");
    assert_eq!(both.json()["ltnNumber"], Value::from(ltn.clone()));

    let missing = whish(
        &["transfer", "status", "--transfer-id", "TR-NOT-THERE"],
        &env,
    )
    .await;
    assert_eq!(missing.code, 1, "{missing:?}");
    let failed = missing.json();
    assert_eq!(failed["asked"]["transferId"], "TR-NOT-THERE", "{failed}");
    assert!(failed.get("idempotencyKey").is_none(), "{failed}");
    assert!(
        missing.stderr.contains("transferId TR-NOT-THERE"),
        "{missing:?}"
    );

    let none = whish(&["transfer", "status"], &env).await;
    assert_eq!(none.code, 2, "{none:?}");
}

#[tokio::test]
async fn a_send_goes_out_only_while_its_quote_is_the_total_the_customer_was_shown() {
    let sb = funded_sandbox().await;
    let env = sb.env_vars();
    let body = temp_file("quoted-body.json", &cash_body("100"))
        .display()
        .to_string();
    let quote = whish(&QUOTE_100_USD, &env).await;
    assert_eq!(quote.code, 0, "{quote:?}");
    let total = quote.json()["totalAmount"].to_string();

    let shown_less = format!("{}", total.parse::<f64>().expect("total") - 1.0);
    let refused = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--quoted-total",
            &shown_less,
        ],
        &env,
    )
    .await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(refused.stderr.contains("not the"), "{refused:?}");
    assert!(sb.transfers().is_empty(), "nothing was sent");

    let sent = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--quoted-total",
            &format!("{total}.00"),
        ],
        &env,
    )
    .await;
    assert_eq!(sent.code, 0, "{sent:?}");
    assert_eq!(sb.transfers().len(), 1);
}

#[tokio::test]
async fn the_top_up_language_header_and_a_pay_to_another_target_reach_the_wire() {
    let server = httpmock::MockServer::start_async().await;
    let fetch = server
        .mock_async(|when, then| {
            when.method("POST")
                .path("/v2/etisalat-ae/fetch")
                .header("language", "ar")
                .body_includes(r#""target":"971501234567""#);
            then.status(200)
                .header("content-type", "application/json")
                .body(fixture("intl-topup/fetch.success.json"));
        })
        .await;
    let pay = server
        .mock_async(|when, then| {
            when.method("POST")
                .path("/v2/etisalat-ae/pay")
                .header("language", "ar")
                .body_includes(r#""target":"971509999999","optionId":"opt-10""#);
            then.status(200)
                .header("content-type", "application/json")
                .body(fixture("intl-topup/pay.success.json"));
        })
        .await;
    let mut env = topup_env(&server.base_url());
    env.push(("WHISH_TOPUP_LANGUAGE".into(), "ar".into()));
    let run = whish(
        &[
            "topup",
            "pay",
            "--provider",
            "etisalat-ae",
            "--target",
            "971501234567",
            "--option-id",
            "opt-10",
            "--pay-target",
            "971509999999",
        ],
        &env,
    )
    .await;
    assert_eq!(
        (fetch.calls_async().await, pay.calls_async().await),
        (1, 1),
        "{run:?}"
    );
    assert_eq!(run.code, 0, "{run:?}");
}

#[tokio::test]
async fn the_collect_create_takes_the_specification_path_when_asked() {
    let server = httpmock::MockServer::start_async().await;
    let create = server
        .mock_async(|when, then| {
            when.method("POST").path("/payment/svc");
            then.status(200)
                .header("content-type", "application/json")
                .body(fixture("hosted-collect/create.success.json"));
        })
        .await;
    let base = server.base_url();
    let env = vec![
        ("WHISH_COLLECT_BASE_URL".to_owned(), base),
        ("WHISH_COLLECT_CHANNEL".into(), "chan".into()),
        ("WHISH_COLLECT_SECRET".into(), "collect-SECRET-7".into()),
        (
            "WHISH_COLLECT_WEBSITE_URL".into(),
            "shop.example.com".into(),
        ),
        ("WHISH_COLLECT_BRAND".into(), "svc".into()),
        (
            "WHISH_USER_AGENT".into(),
            "Shop/1.0 (https://shop.example.com; dev@shop.example.com)".into(),
        ),
    ];
    let args = create_args("order-svc-1");
    let run = whish(&strs(&args), &env).await;
    assert_eq!(create.calls_async().await, 1, "{run:?}");
    assert_eq!(run.code, 0, "{run:?}");
}

#[tokio::test]
async fn a_callback_is_checked_from_the_shell_as_the_receiver_checks_it() {
    let key = "sandbox-callback-key";
    let body = br#"{"date":"2026-11-27 10:00:00","externalId":1755770400000001,"transferId":"TR-1","status":"RECEIVED"}"#;
    let file = temp_file("callback.json", std::str::from_utf8(body).expect("utf-8"));
    let file = file.display().to_string();
    let now = whish::core::EpochMillis::now().0;
    let signature = whish_sandbox::callback::sign(key.as_bytes(), now, body);
    let check = |ts: i64, signature: String, key: Option<&str>| {
        let file = file.clone();
        let key = key.map(str::to_owned);
        async move {
            let ts = ts.to_string();
            let mut args = vec!["transfer", "check-callback", "--body", &file];
            args.extend(["--timestamp", &ts, "--signature", &signature]);
            let k;
            if let Some(key) = &key {
                k = key.clone();
                args.extend(["--sandbox-key", &k]);
            }
            whish(&args, &[]).await
        }
    };
    let good = check(now, signature.clone(), Some(key)).await;
    assert_eq!(good.code, 0, "{good:?}");
    assert_eq!(good.json()["externalId"], "1755770400000001");
    assert!(
        good.json()["signature"]
            .as_str()
            .expect("text")
            .starts_with("verified")
    );

    let wrong_key = check(now, signature.clone(), Some("another-key")).await;
    assert_eq!(wrong_key.code, 1, "{wrong_key:?}");
    assert_eq!(wrong_key.json()["reason"], "signature-rejected");

    let unverified = check(now, signature.clone(), None).await;
    assert_eq!(unverified.code, 0, "{unverified:?}");
    assert!(
        unverified.json()["signature"]
            .as_str()
            .expect("text")
            .contains("not verified")
    );

    let old = now - 2 * 3_600_000;
    let stale = check(
        old,
        whish_sandbox::callback::sign(key.as_bytes(), old, body),
        Some(key),
    )
    .await;
    assert_eq!(stale.code, 1, "{stale:?}");
    assert_eq!(stale.json()["reason"], "outside-window");

    let not_base64 = check(now, "not base64!".into(), None).await;
    assert_eq!(
        not_base64.json()["reason"],
        "bad-signature-encoding",
        "{not_base64:?}"
    );
}

#[tokio::test]
async fn a_pending_send_is_followed_to_its_end_with_wait_and_recorded() {
    use whish_sandbox::{Endpoint, Fault};
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let journal = temp_file("wait.sqlite", "");
    let _ = std::fs::remove_file(&journal);
    env.push(journal_at(&journal));
    let body = temp_file("wait-body.json", &cash_body("31"))
        .display()
        .to_string();

    sb.inject(Endpoint::TransferSend, Fault::Pending, 1);
    let waited = whish(&["transfer", "send", "--body", &body, "--wait", "20"], &env).await;
    assert_eq!(waited.code, 0, "{waited:?}");
    let v = waited.json();
    assert_eq!(v["outcome"], "accepted", "{v}");
    assert!(v["ltnNumber"].is_string(), "{v}");
    // A generated Request-id is printed as a string above 2^53, as a number below it.
    let id = match &v["requestId"] {
        serde_json::Value::String(id) => id.clone(),
        id => id.as_u64().expect("a Request-id").to_string(),
    };
    let shown = whish(&["journal", "show", &id], &env).await;
    assert!(shown.stdout.contains("\"accepted\""), "recorded: {shown:?}");

    // Without --wait, Pending is exit 3 and the entry stays pending.
    sb.inject(Endpoint::TransferSend, Fault::Pending, 1);
    let other = temp_file("wait-body-2.json", &cash_body("32"))
        .display()
        .to_string();
    let pending = whish(&["transfer", "send", "--body", &other], &env).await;
    assert_eq!(pending.code, 3, "{pending:?}");
}
