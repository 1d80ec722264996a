//! The binary against httpmock: exit statuses, stdout JSON, and refusals that send nothing.

use crate::support;

use crate::support::*;
use whish_testkit::fixture;

fn env(base: &str) -> Vec<(String, String)> {
    vec![
        ("WHISH_TRANSFER_BASE_URL".into(), base.into()),
        ("WHISH_TRANSFER_USERNAME".into(), "user".into()),
        ("WHISH_TRANSFER_KEY".into(), "transfer-KEY-9911".into()),
        ("WHISH_COLLECT_BASE_URL".into(), base.into()),
        ("WHISH_COLLECT_CHANNEL".into(), "chan".into()),
        ("WHISH_COLLECT_SECRET".into(), "collect-SECRET-7".into()),
        (
            "WHISH_COLLECT_WEBSITE_URL".into(),
            "shop.example.com".into(),
        ),
        (
            "WHISH_USER_AGENT".into(),
            "Shop/1.0 (https://shop.example.com; dev@shop.example.com)".into(),
        ),
    ]
}

async fn fees_with(reply_status: u16, body: &str, content_type: &str) -> (Run, usize) {
    let server = httpmock::MockServer::start_async().await;
    let m = server
        .mock_async(|when, then| {
            when.method("POST").path("/api/woo/send/money/fees");
            then.status(reply_status)
                .header("content-type", content_type)
                .body(body);
        })
        .await;
    let run = whish(
        &[&QUOTE_100_USD[..], &["--retries", "0"]].concat(),
        &env(&server.base_url()),
    )
    .await;
    (run, m.calls_async().await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_is_json_with_exact_amounts_and_exit_0() {
    let (run, hits) = fees_with(
        200,
        &fixture("money-transfer/fees.success.json"),
        "application/json",
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(hits, 1);
    let v = run.json();
    assert!(v["fees"].is_number() && v["totalAmount"].is_number(), "{v}");
    assert!(!run.stdout.contains("transfer-KEY-9911") && !run.stderr.contains("transfer-KEY-9911"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_code_is_exit_1_with_the_code_and_a_next_step() {
    let (run, _) = fees_with(
        200,
        &fixture("money-transfer/fees.failure.invalid-amount.json"),
        "application/json",
    )
    .await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.json()["code"], "transfer.invalid_amount");
    assert!(run.json().get("dialog").is_some());
    assert_eq!(
        run.stderr.lines().count(),
        1,
        "one line saying what to do: {}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_is_exit_3_with_code_500() {
    let (run, _) = fees_with(
        200,
        &fixture("money-transfer/send.pending.number.json"),
        "application/json",
    )
    .await;
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(run.json()["code"], "500");
    assert!(run.stderr.contains("not failed"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_5xx_is_exit_4_and_a_dead_address_is_exit_2() {
    let (run, _) = fees_with(502, "<html>Bad gateway</html>", "text/html").await;
    assert_eq!(run.code, 4, "{run:?}");
    let dead = whish(
        &["transfer", "countries", "--retries", "0", "--timeout", "2"],
        &env("http://127.0.0.1:9"),
    )
    .await;
    // A connection that never opened: nothing was sent (exit 2, was 4 before 0.3).
    assert_eq!(dead.code, 2, "{dead:?}");
    assert_eq!(dead.json()["error"], "transport");
    assert_eq!(dead.json()["outcome"], "not-sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_goes_through_the_proxy_of_the_environment() {
    // The service's address is dead; only the proxy named by HTTP_PROXY answers (a plain-http
    // loopback base takes HTTP_PROXY; an https base takes HTTPS_PROXY, as reqwest reads them).
    let proxy = httpmock::MockServer::start_async().await;
    let relayed = proxy
        .mock_async(|when, then| {
            when.method("GET").path("/api/api/woo/sending/countries");
            then.status(200).body(whish_testkit::fixture(
                "money-transfer/countries.success.json",
            ));
        })
        .await;
    let mut vars = env("http://127.0.0.1:9/api");
    vars.push(("HTTP_PROXY".into(), proxy.base_url()));
    let run = whish(&["transfer", "countries", "--retries", "0"], &vars).await;
    assert_eq!(run.code, 0, "{run:?}");
    relayed.assert_calls_async(1).await;
    // NO_PROXY turns it off again: the dead address answers nothing.
    vars.push(("NO_PROXY".into(), "127.0.0.1".into()));
    let run = whish(
        &["transfer", "countries", "--retries", "0", "--timeout", "2"],
        &vars,
    )
    .await;
    assert_eq!(run.code, 2, "nothing reached the dead address: {run:?}");
}

/// A 403 page to a create whose four addresses are public cannot be the service's own 403 (for
/// a non-public address): something in front of the service answered, and may have passed the
/// create on. Unknown (exit 4), never refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_page_to_a_create_with_public_addresses_is_exit_4() {
    let server = httpmock::MockServer::start_async().await;
    server
        .mock_async(|when, then| {
            when.method("POST").path("/payment/whish");
            then.status(403).body("Forbidden");
        })
        .await;
    let run = whish(
        &[
            "collect",
            "create",
            "--amount",
            "10",
            "--currency",
            "USD",
            "--success-callback-url",
            "https://shop.example.com/ok",
            "--failure-callback-url",
            "https://shop.example.com/ko",
            "--success-redirect-url",
            "https://shop.example.com/a",
            "--failure-redirect-url",
            "https://shop.example.com/b",
        ],
        &env(&server.base_url()),
    )
    .await;
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(run.json()["outcome"], "unknown");
    assert_eq!(run.json()["httpStatus"], 403);
    assert!(!run.stdout.contains("collect-SECRET-7") && !run.stderr.contains("collect-SECRET-7"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_missing_settings_are_exit_2_and_send_nothing() {
    let server = httpmock::MockServer::start_async().await;
    let any = server
        .mock_async(|_, then| {
            then.status(200)
                .body(fixture("money-transfer/send.cash-collection.success.json"));
        })
        .await;
    let e = env(&server.base_url());
    let mut no_birth: serde_json::Value = serde_json::from_str(&cash_body("100")).expect("json");
    no_birth["receiver"]
        .as_object_mut()
        .expect("receiver")
        .remove("identity");
    let no_birth = no_birth.to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "transfer".into(),
                "send".into(),
                "--body".into(),
                temp_file("a.json", &no_birth).display().to_string(),
            ],
            "dateBirth",
        ),
        (
            vec![
                "transfer".into(),
                "send".into(),
                "--body".into(),
                temp_file(
                    "b.json",
                    &cash_body("100").replace("Family Support", "Gift"),
                )
                .display()
                .to_string(),
            ],
            "reason",
        ),
        (
            vec![
                "transfer".into(),
                "send".into(),
                "--body".into(),
                temp_file("c.json", &cash_body("0.505"))
                    .display()
                    .to_string(),
            ],
            "amount",
        ),
        (
            vec![
                "transfer".into(),
                "send".into(),
                "--body".into(),
                temp_file(
                    "d.json",
                    &cash_body("100").replace("\"deductFees\"", "\"deductFee\""),
                )
                .display()
                .to_string(),
            ],
            "deductFee",
        ),
        (
            vec![
                "transfer".into(),
                "fees".into(),
                "--from-country".into(),
                "1".into(),
                "--currency".into(),
                "USD".into(),
                "--amount".into(),
                "ten".into(),
            ],
            "amount",
        ),
        (
            vec!["transfer".into(), "status".into()],
            "--transfer-id <ID>|--ltn <N>|--request-id <N>",
        ),
        (vec!["transfer".into(), "nope".into()], "unrecognized"),
    ];
    for (args, needle) in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = whish(&a, &e).await;
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    let mut missing = e.clone();
    missing.retain(|(k, _)| k != "WHISH_TRANSFER_KEY");
    let run = whish(&["transfer", "countries"], &missing).await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("WHISH_TRANSFER_KEY"), "{}", run.stderr);
    let mut no_ua = e.clone();
    no_ua.retain(|(k, _)| k != "WHISH_USER_AGENT");
    let run = whish(&["collect", "balance", "--currency", "USD"], &no_ua).await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("WHISH_USER_AGENT"), "{}", run.stderr);
    assert_eq!(any.calls_async().await, 0, "nothing was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_amounts_are_read_as_exact_text_and_bad_inputs_send_nothing() {
    let server = httpmock::MockServer::start_async().await;
    let any = server
        .mock_async(|_, then| {
            then.status(200).body(whish_testkit::fixture(
                "money-transfer/send.cash-collection.success.json",
            ));
        })
        .await;
    // Each would have been rounded through a double (99.999999999999999 -> 100, 1e20) or read
    // loosely ("1_000"); each is refused, exit 2, and nothing is sent.
    for amount in [
        "99.999999999999999",
        "1000.0000000000000001",
        "100000000000000000001",
        "\"1_000\"",
        "true",
    ] {
        let body = support::temp_file("amount.json", &support::cash_body(amount))
            .display()
            .to_string();
        let run = whish(
            &["transfer", "send", "--body", &body],
            &env(&server.base_url()),
        )
        .await;
        assert_eq!(run.code, 2, "{amount}: {run:?}");
    }
    // Not a regular file: /dev/zero would grow without bound, a FIFO would hang.
    let run = whish(
        &["transfer", "send", "--body", "/dev/zero"],
        &env(&server.base_url()),
    )
    .await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
    let big = support::temp_file("big.json", &" ".repeat(2 * 1024 * 1024))
        .display()
        .to_string();
    let run = whish(
        &["transfer", "send", "--body", &big],
        &env(&server.base_url()),
    )
    .await;
    assert_eq!(run.code, 2, "{run:?}");
    any.assert_calls_async(0).await;
    // The exact text goes out as it was written.
    let body = support::temp_file("exact.json", &support::cash_body("100.10"))
        .display()
        .to_string();
    let run = whish(
        &["transfer", "send", "--body", &body],
        &env(&server.base_url()),
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    any.assert_calls_async(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_cannot_write_escape_sequences_to_the_terminal() {
    let server = httpmock::MockServer::start_async().await;
    server
        .mock_async(|_, then| {
            then.status(200).body(
                r#"{"status":false,"code":"x\u001b]0;owned\u0007","dialog":{"title":"\u001b[2J","message":"bye\u001b[31m\u202e"}}"#,
            );
        })
        .await;
    for output in ["table", "json"] {
        let run = whish(
            &["transfer", "countries", "--output", output],
            &env(&server.base_url()),
        )
        .await;
        assert_eq!(run.code, 1, "{run:?}");
        for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202e}'),
                "{output} {name}: {text:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_200_reply_to_a_money_moving_command_is_an_unknown_outcome() {
    // The request may have been applied: exit 4 (resend with the same key), never exit 1.
    for body in [
        r#"{"status":true,"code":null,"data":{"ltnNum"#,
        "{}",
        r#"{"status":"true","code":null,"data":null}"#,
        "<html><body>Proxy: all is well</body></html>",
    ] {
        let server = httpmock::MockServer::start_async().await;
        server
            .mock_async(|_, then| {
                then.status(200)
                    .header("content-type", "text/html")
                    .body(body);
            })
            .await;
        let send_body = support::temp_file("send.json", &support::cash_body("100"))
            .display()
            .to_string();
        // A journal of its own: the same body left open (exit 4) in a shared journal would
        // refuse the next one, and httpmock hands the same server (the same base URL) back.
        let journal = support::temp_file("unreadable-200.sqlite", "");
        let _ = std::fs::remove_file(&journal);
        let mut vars = env(&server.base_url());
        vars.push(support::journal_at(&journal));
        let send = whish(
            &["transfer", "send", "--body", &send_body, "--retries", "0"],
            &vars,
        )
        .await;
        assert_eq!(send.code, 4, "transfer send, {body}: {send:?}");
        let refund = whish(
            &[
                "collect",
                "refund",
                "--currency",
                "USD",
                "--external-id",
                "order-1",
                "--retries",
                "0",
            ],
            &vars,
        )
        .await;
        assert_eq!(refund.code, 4, "collect refund, {body}: {refund:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_without_a_date_of_birth_is_refused_before_sending() {
    // The service checks identity.dateBirth whenever an identity is sent.
    let server = httpmock::MockServer::start_async().await;
    let any = server
        .mock_async(|_, then| {
            then.status(200).body(whish_testkit::fixture(
                "money-transfer/send.cash-collection.success.json",
            ));
        })
        .await;
    let body = support::cash_body("100").replace(
        r#""sender": {"firstName": "John", "lastName": "Smith", "phone": "+14155550100"}"#,
        r#""sender": {"firstName": "John", "lastName": "Smith", "phone": "+14155550100", "identity": {"nationality": "US"}}"#,
    );
    assert!(body.contains("nationality"));
    let file = support::temp_file("identity.json", &body)
        .display()
        .to_string();
    let run = whish(
        &["transfer", "send", "--body", &file],
        &env(&server.base_url()),
    )
    .await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("sender.identity needs dateBirth"),
        "{}",
        run.stderr
    );
    any.assert_calls_async(0).await;
}

/// A Long the service sends as `requestId` is any Long: a line with `requestId: 0` (an entry
/// with no originating request) does not make the whole log unreadable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activity_line_with_request_id_zero_is_read() {
    let server = httpmock::MockServer::start_async().await;
    server
        .mock_async(|when, then| {
            when.method("POST").path("/api/woo/activity");
            then.status(200)
                .header("content-type", "application/json")
                .body(fixture("money-transfer/activity.success.json").replacen(
                    "\"requestId\": 1755770400000001",
                    "\"requestId\": 0",
                    1,
                ));
        })
        .await;
    let run = whish(
        &[
            "transfer",
            "activity",
            "--from",
            "2026-11-01 00:00:00",
            "--to",
            "2026-11-30 00:00:00",
        ],
        &env(&server.base_url()),
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()[0]["requestId"], 0, "{run:?}");
}
