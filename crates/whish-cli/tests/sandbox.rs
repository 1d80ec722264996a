//! The binary against the sandbox: every command, end to end, with the settings from
//! `env_exports`, and no secret in any output even at trace level.

mod common;

use common::*;
use whish_sandbox::{Endpoint, Sandbox};

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_commands_end_to_end() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let env = sandbox_env(&sb);
    let body = temp_file("send.json", &cash_body("100"));
    let body = body.display().to_string();

    let fees = whish(
        &[
            "transfer",
            "fees",
            "--from-country",
            "1",
            "--currency",
            "USD",
            "--amount",
            "100",
        ],
        &env,
    )
    .await;
    assert_eq!(fees.code, 0, "{fees:?}");
    assert_eq!(fees.json()["totalAmount"], 105);

    let sent = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "777001",
        ],
        &env,
    )
    .await;
    assert_eq!(sent.code, 0, "{sent:?}");
    let v = sent.json();
    assert_eq!(v["outcome"], "sent");
    assert_eq!(v["requestId"], 777001);
    assert!(
        sent.stderr.contains("777001"),
        "the Request-id is printed before sending"
    );
    let ltn = v["ltnNumber"].as_str().expect("ltn").to_owned();

    // The same body and Request-id again: the service says already done; as a first attempt of
    // this process that is a failure code (the caller chose to reuse the id).
    let again = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "777001",
        ],
        &env,
    )
    .await;
    assert_eq!(again.code, 1, "{again:?}");
    assert_eq!(again.json()["code"], "transfer.already.done");
    assert_eq!(sb.transfers().len(), 1);

    sb.collect_cash(&ltn).await.expect("collect");
    let status = whish(&["transfer", "status", "--request-id", "777001"], &env).await;
    assert_eq!(status.json()["status"], "RECEIVED", "{status:?}");
    let cancel = whish(&["transfer", "cancel", "--ltn", &ltn], &env).await;
    assert_eq!(cancel.code, 1);
    assert_eq!(cancel.json()["code"], "transfer.cannot_be_canceled");

    let second = whish(&["transfer", "send", "--body", &body], &env).await;
    let ltn2 = second.json()["ltnNumber"].as_str().expect("ltn").to_owned();
    let cancel = whish(
        &["transfer", "cancel", "--ltn", &ltn2, "--reason", "asked"],
        &env,
    )
    .await;
    assert_eq!(cancel.json()["status"], "CANCELED_FULL", "{cancel:?}");

    let countries = whish(&["transfer", "countries"], &env).await;
    assert_eq!(countries.json()[0]["code"], "LB");
    let modes = whish(&["transfer", "modes"], &env).await;
    assert_eq!(modes.json().as_array().map(Vec::len), Some(2));
    let range = [
        "--from",
        "2000-01-01 00:00:00",
        "--to",
        "2100-01-01 00:00:00",
    ];
    let mut args = vec!["transfer", "activity"];
    args.extend(range);
    let activity = whish(&args, &env).await;
    assert_eq!(
        activity.json().as_array().map(Vec::len),
        Some(4),
        "{activity:?}"
    );
    let mut args = vec!["transfer", "statement", "--verify", "--currency", "USD"];
    args.extend(range);
    let statement = whish(&args, &env).await;
    assert_eq!(statement.code, 0, "{statement:?}");
    assert!(
        statement
            .stderr
            .contains("balance = previous + debit - credit")
    );

    let g = whish(&["locations", "governorates"], &env).await;
    assert_eq!(g.json().as_array().map(Vec::len), Some(8));
    let shops = whish(&["locations", "shops", "--district-id", "8"], &env).await;
    assert_eq!(shops.json().as_array().map(Vec::len), Some(1));
    let table = whish(
        &[
            "locations",
            "shops",
            "--governorate-id",
            "1",
            "--output",
            "table",
        ],
        &env,
    )
    .await;
    assert!(
        table
            .stdout
            .lines()
            .next()
            .is_some_and(|h| h.contains(" id "))
            && table.stdout.contains("Hamra Branch"),
        "{}",
        table.stdout
    );
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_send_reply_is_confirmed_by_the_resend() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let env = sandbox_env(&sb);
    sb.inject(Endpoint::TransferSend, whish_sandbox::Fault::DropReply, 1);
    let body = temp_file("send.json", &cash_body("100"))
        .display()
        .to_string();
    let run = whish(
        &["transfer", "send", "--body", &body, "--retries", "2"],
        &env,
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["outcome"], "confirmed");
    assert_eq!(sb.transfers().len(), 1, "no duplicate");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_send_is_recovered_with_transfer_resend() {
    // Spec rule 5: the resend of the identical request with the same Request-id answers
    // transfer.already.done when the original had arrived; that is a confirmation.
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let env = sandbox_env(&sb);
    sb.inject(Endpoint::TransferSend, whish_sandbox::Fault::DropReply, 1);
    let body = temp_file("lost.json", &cash_body("100"))
        .display()
        .to_string();
    let lost = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "880001",
            "--retries",
            "0",
        ],
        &env,
    )
    .await;
    assert_eq!(lost.code, 4, "the reply was lost: unknown outcome {lost:?}");
    assert!(lost.stderr.contains("transfer resend"), "{}", lost.stderr);
    assert_eq!(sb.transfers().len(), 1, "it had arrived");
    let resend = whish(
        &[
            "transfer",
            "resend",
            "--body",
            &body,
            "--request-id",
            "880001",
        ],
        &env,
    )
    .await;
    assert_eq!(resend.code, 0, "{resend:?}");
    assert_eq!(resend.json()["outcome"], "confirmed");
    assert_eq!(resend.json()["status"]["status"], "SENT");
    // `send --request-id` stays a NEW transfer with an own reference: a used one is refused.
    let reuse = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "880001",
        ],
        &env,
    )
    .await;
    assert_eq!(reuse.code, 1, "{reuse:?}");
    assert_eq!(sb.transfers().len(), 1, "exactly one transfer");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collect_commands_end_to_end() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let env = sandbox_env(&sb);
    let create: Vec<String> = [
        "collect",
        "create",
        "--amount",
        "12.5",
        "--currency",
        "USD",
        "--external-id",
        "order-9",
        "--allow-local-callbacks",
        "--success-callback-url",
        "http://127.0.0.1:9/ok?o=9",
        "--failure-callback-url",
        "http://127.0.0.1:9/ko?o=9",
        "--success-redirect-url",
        "https://shop.example.com/thanks",
        "--failure-redirect-url",
        "https://shop.example.com/retry",
        "--invoice",
        "Order 9",
    ]
    .map(String::from)
    .to_vec();
    let created = whish(&strs(&create), &env).await;
    assert_eq!(created.code, 0, "{created:?}");
    let v = created.json();
    assert!(
        v["collectUrl"]
            .as_str()
            .is_some_and(|u| u.contains("/collect/pay/"))
    );
    assert_eq!(
        (v["externalId"].as_str(), v["retrieved"].as_bool()),
        (Some("order-9"), Some(false))
    );
    let replay = whish(&strs(&create), &env).await;
    assert_eq!(replay.json()["retrieved"], true);

    let status = whish(
        &[
            "collect",
            "status",
            "--currency",
            "USD",
            "--external-id",
            "order-9",
        ],
        &env,
    )
    .await;
    assert_eq!(status.json()["collectStatus"], "pending");
    let early = whish(
        &[
            "collect",
            "refund",
            "--currency",
            "USD",
            "--external-id",
            "order-9",
        ],
        &env,
    )
    .await;
    assert_eq!(
        early.code, 1,
        "a pending payment cannot be refunded: {early:?}"
    );
    sb.pay_link("order-9").await.expect("paid");
    let status = whish(
        &[
            "collect",
            "status",
            "--currency",
            "USD",
            "--external-id",
            "order-9",
        ],
        &env,
    )
    .await;
    assert_eq!(status.json()["collectStatus"], "success");
    let refund = whish(
        &[
            "collect",
            "refund",
            "--currency",
            "USD",
            "--external-id",
            "order-9",
            "--reason",
            "r",
        ],
        &env,
    )
    .await;
    // Collect rule 1: a used externalId replays its recorded result verbatim, an error code
    // included. The early refund of the pending payment was recorded; it replays.
    assert_eq!(refund.code, 1, "{refund:?}");
    assert_eq!(refund.json()["retrieved"], true, "{refund:?}");
    let balance = whish(&["collect", "balance", "--currency", "USD"], &env).await;
    assert_eq!(balance.json()["balance"], 12.5, "paid, not refunded");

    let local: Vec<String> = [
        "collect",
        "create",
        "--amount",
        "5",
        "--currency",
        "USD",
        "--success-callback-url",
        "http://127.0.0.1:1/ok",
        "--failure-callback-url",
        "http://127.0.0.1:1/ko",
        "--success-redirect-url",
        "https://shop.example.com/a",
        "--failure-redirect-url",
        "https://shop.example.com/b",
    ]
    .map(String::from)
    .to_vec();
    let refused = whish(&strs(&local), &env).await;
    assert_eq!(
        refused.code, 2,
        "local addresses need --allow-local-callbacks: {refused:?}"
    );
    let mut allowed = local.clone();
    allowed.push("--allow-local-callbacks".into());
    assert_eq!(whish(&strs(&allowed), &env).await.code, 0);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topup_commands_end_to_end_and_an_option_not_on_offer_sends_no_pay() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let env = sandbox_env(&sb);
    let balance = whish(&["topup", "balance"], &env).await;
    assert_eq!(balance.json()["balance"], 500, "{balance:?}");
    let options = whish(
        &[
            "topup",
            "options",
            "--provider",
            "gift-voucher",
            "--target",
            "a@b.co",
        ],
        &env,
    )
    .await;
    assert_eq!(options.json()["options"].as_array().map(Vec::len), Some(2));
    let pay = whish(
        &[
            "topup",
            "pay",
            "--provider",
            "gift-voucher",
            "--target",
            "a@b.co",
            "--option-id",
            "GV-20",
            "--external-id",
            "tu-1",
        ],
        &env,
    )
    .await;
    assert_eq!(pay.code, 0, "{pay:?}");
    let item = &pay.json()["listOfSoldItems"][0];
    assert_eq!(item["secret"], "<hidden: --show-pin>");
    let pin = sb.sales()[0].transaction_id.clone();
    assert!(!pin.is_empty());
    let shown = whish(
        &[
            "topup",
            "pay",
            "--provider",
            "gift-voucher",
            "--target",
            "a@b.co",
            "--option-id",
            "GV-20",
            "--external-id",
            "tu-1",
            "--show-pin",
        ],
        &env,
    )
    .await;
    assert_eq!(
        shown.json()["retrieved"],
        true,
        "the same externalId replays"
    );
    assert_eq!(
        shown.json()["listOfSoldItems"][0]["secret"]
            .as_str()
            .map(str::len),
        Some(16)
    );
    assert_eq!(sb.sales().len(), 1);

    let missing = whish(
        &[
            "topup",
            "pay",
            "--provider",
            "gift-voucher",
            "--target",
            "a@b.co",
            "--option-id",
            "GV-999",
        ],
        &env,
    )
    .await;
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(
        missing.stderr.contains("GV-20"),
        "it names what is on offer"
    );
    let pays = sb
        .requests()
        .iter()
        .filter(|r| r.endpoint == Endpoint::TopupPay)
        .count();
    assert_eq!(pays, 2, "no pay was sent for the option not on offer");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_in_any_output_at_trace_level() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let env = sandbox_env(&sb);
    let secrets = [
        sb.transfer_credentials().key.clone(),
        sb.collect_credentials().secret.clone(),
        sb.topup_credentials().session_id.clone(),
        sb.topup_credentials().token.clone(),
    ];
    let body = temp_file("send.json", &cash_body("100"))
        .display()
        .to_string();
    let runs = [
        whish(&["-vvv", "transfer", "send", "--body", &body], &env).await,
        whish(&["-vvv", "transfer", "status", "--request-id", "1"], &env).await,
        whish(&["-vvv", "collect", "balance", "--currency", "USD"], &env).await,
        whish(
            &[
                "-vvv",
                "topup",
                "pay",
                "--provider",
                "gift-voucher",
                "--target",
                "a@b.co",
                "--option-id",
                "GV-20",
            ],
            &env,
        )
        .await,
    ];
    let pin = {
        let replay_id = sb.sales()[0].external_id.clone();
        let shown = whish(
            &[
                "topup",
                "pay",
                "--provider",
                "gift-voucher",
                "--target",
                "a@b.co",
                "--option-id",
                "GV-20",
                "--external-id",
                &replay_id,
                "--show-pin",
            ],
            &env,
        )
        .await;
        shown.json()["listOfSoldItems"][0]["secret"]
            .as_str()
            .expect("pin")
            .to_owned()
    };
    for run in &runs {
        assert!(
            run.stderr.contains("TRACE") || run.stderr.contains("DEBUG"),
            "logging is on: {}",
            run.stderr
        );
        for s in secrets.iter().chain([&pin]) {
            assert!(
                !run.stdout.contains(s.as_str()) && !run.stderr.contains(s.as_str()),
                "a secret leaked: {run:?}"
            );
        }
    }
    sb.shutdown().await;
}

#[test]
fn sandbox_serve_prints_export_lines() {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_whish"))
        .args([
            "sandbox",
            "serve",
            "--port",
            "0",
            "--collect-channel",
            "fixed-channel",
            "--transfer-username",
            "fixed-user",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .take(12)
        .map(|l| l.expect("line"))
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        lines[0].starts_with("export WHISH_TRANSFER_BASE_URL='http://127.0.0.1:"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("export WHISH_USER_AGENT="))
    );
    assert!(lines[11].contains("/_sandbox/"));
    // The credentials a client already has are the ones issued.
    assert!(
        lines
            .iter()
            .any(|l| l == "export WHISH_COLLECT_CHANNEL='fixed-channel'"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "export WHISH_TRANSFER_USERNAME='fixed-user'"),
        "{lines:?}"
    );
}

#[test]
fn sandbox_serve_shows_only_its_own_options() {
    let run = whish_blocking(&["sandbox", "serve", "--help"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    for own in ["--port", "--bind", "--lenient", "--collect-channel"] {
        assert!(run.stdout.contains(own), "{own}: {}", run.stdout);
    }
    for client_only in [
        "--collect-base-url",
        "--transfer-base-url",
        "--topup-base-url",
        "--user-agent",
    ] {
        assert!(
            !run.stdout.contains(client_only),
            "{client_only}: {}",
            run.stdout
        );
    }
}

#[test]
fn the_demo_walks_every_flow_and_exits_0() {
    let run = whish_blocking(&["demo"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("all 15 steps matched"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("FAIL"));
}
