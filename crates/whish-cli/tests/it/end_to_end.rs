//! The binary against the sandbox: every command, end to end, with the settings from
//! `env_exports`, and no secret in any output even at trace level.

use crate::support::*;
use whish_sandbox::{Endpoint, Sandbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_commands_end_to_end() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let env = sb.env_vars();
    let body = temp_file("send.json", &cash_body("100"));
    let body = body.display().to_string();

    let fees = whish(&QUOTE_100_USD, &env).await;
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
    assert_eq!(v["outcome"], "accepted");
    assert_eq!(v["result"], "sent");
    assert_eq!(v["requestId"], 777001);
    assert!(
        sent.stderr.contains("777001"),
        "the Request-id is printed before sending"
    );
    let ltn = v["ltnNumber"].as_str().expect("ltn").to_owned();

    // The same body and Request-id again: the journal knows this transfer, so it is resent as
    // itself and `transfer.already.done` confirms it (read through status).
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
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.json()["result"], "confirmed");
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
    let env = sb.env_vars();
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
    assert_eq!(run.json()["result"], "confirmed");
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
    let env = sb.env_vars();
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
    assert_eq!(resend.json()["result"], "confirmed");
    assert_eq!(resend.json()["status"], "SENT");
    // The journal knows Request-id 880001: `send` with the same body is the same transfer
    // (confirmed again); with another body it is refused before anything is sent.
    let again = whish(
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
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.json()["result"], "confirmed");
    let other = temp_file("other.json", &cash_body("101"))
        .display()
        .to_string();
    let sent_before = sb.requests().len();
    let reuse = whish(
        &[
            "transfer",
            "send",
            "--body",
            &other,
            "--request-id",
            "880001",
        ],
        &env,
    )
    .await;
    assert_eq!(reuse.code, 2, "{reuse:?}");
    assert!(
        reuse.stderr.contains("different request"),
        "{}",
        reuse.stderr
    );
    assert_eq!(sb.requests().len(), sent_before, "nothing was sent");
    // Without the journal's record (another journal), the service's guard refuses it.
    let elsewhere = format!(
        "sqlite:{}",
        std::env::temp_dir()
            .join(format!("whish-cli-other-journal-{}", std::process::id()))
            .join("j.sqlite")
            .display()
    );
    let mut env_elsewhere = env.clone();
    env_elsewhere.push(("WHISH_JOURNAL".into(), elsewhere));
    let guarded = whish(
        &[
            "transfer",
            "send",
            "--body",
            &other,
            "--request-id",
            "880001",
        ],
        &env_elsewhere,
    )
    .await;
    assert_eq!(guarded.code, 1, "{guarded:?}");
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
    let env = sb.env_vars();
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
    // The journal holds the early refund of order-9 with other bytes (no reason): a refund
    // keyed by the same externalId with a reason is another request, refused unsent.
    assert_eq!(refund.code, 2, "{refund:?}");
    assert!(refund.stderr.contains("different request"), "{refund:?}");
    let refund = whish(
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
    // The early refund of the pending payment was refused and recorded so: the same refund
    // run again is not sent (the service would replay that refusal verbatim, collect rule 1);
    // it exits 1 as the first run did, and says the journal holds it refused.
    assert_eq!(refund.code, 1, "{refund:?}");
    assert!(refund.stderr.contains("was refused"), "{refund:?}");
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
    assert!(
        refused.stderr.contains("--allow-local-callbacks") && !refused.stderr.contains("::"),
        "the hint names the command's flag, not a Rust item: {refused:?}"
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
    let env = sb.env_vars();
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
    let env = sb.env_vars();
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
            "--callback-key",
            "fixed-signing-key",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .take(13)
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
    assert!(lines[12].contains("/_sandbox/"));
    // The key transfer callbacks are signed with, as set.
    assert!(
        lines
            .iter()
            .any(|l| l == "export WHISH_SANDBOX_CALLBACK_KEY='fixed-signing-key'"),
        "{lines:?}"
    );
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
        run.stdout.contains("all 16 steps matched"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("FAIL"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_killed_midway_is_resolved_by_journal_recover_to_one_transfer() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let mut env = sb.env_vars();
    let journal = format!(
        "sqlite:{}",
        temp_file("placeholder", "")
            .with_file_name("killed.sqlite")
            .display()
    );
    env.push(("WHISH_JOURNAL".into(), journal));
    // The sandbox applies the send and holds its reply; the process is killed meanwhile.
    sb.inject(
        Endpoint::TransferSend,
        whish_sandbox::Fault::Delay(std::time::Duration::from_secs(30)),
        1,
    );
    let body = temp_file("killed.json", &cash_body("75"))
        .display()
        .to_string();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_whish"));
    child
        .args([
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "880077",
        ])
        .env_remove("WHISH_JOURNAL")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = child.spawn().expect("spawn whish");
    while !sb.transfers().iter().any(|t| t.request_id == 880077) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();

    let open = whish(&["journal", "list", "--open"], &env).await;
    assert_eq!(open.code, 0, "{open:?}");
    let line: serde_json::Value = serde_json::from_str(open.stdout.trim()).expect("one line");
    assert_eq!(line["key"], "880077");
    assert_eq!(line["state"], "intended");

    // Its lease is the killed process's, of this host and gone: recover takes it at once,
    // without --take-over.
    let recovered = whish(&["journal", "recover"], &env).await;
    assert_eq!(recovered.code, 0, "{recovered:?}");
    assert_eq!(
        recovered.json()["report"]["taken_from_dead"],
        1,
        "{recovered:?}"
    );
    let changes = &recovered.json()["report"]["changes"];
    assert_eq!(changes[0]["to"], "accepted", "{changes}");
    assert_eq!(changes[0]["outcome"]["result"], "confirmed", "{changes}");
    assert_eq!(
        sb.transfers()
            .iter()
            .filter(|t| t.request_id == 880077)
            .count(),
        1,
        "exactly one transfer"
    );
    let show = whish(&["journal", "show", "880077"], &env).await;
    assert_eq!(show.code, 0, "{show:?}");
    assert_eq!(show.json()[0]["state"], "accepted");
    assert_eq!(show.json()[0]["request"]["amount"], 75);
    assert!(show.json()[0]["references"]["ltnNumber"].is_string());
    sb.shutdown().await;
}

/// A lenient sandbox, a journal file `NAME.sqlite` of its own, and one `transfer send` (its body
/// in `NAME.json`, returned) that `fault` left with an unknown outcome (exit 4, entry open).
async fn one_lost_send(
    name: &str,
    fault: whish_sandbox::Fault,
) -> (Sandbox, Vec<(String, String)>, String) {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let mut env = sb.env_vars();
    env.push(journal_at(
        &temp_file("placeholder", "").with_file_name(format!("{name}.sqlite")),
    ));
    let body = temp_file(&format!("{name}.json"), &cash_body("60"))
        .display()
        .to_string();
    sb.inject(Endpoint::TransferSend, fault, 1);
    let lost = whish(
        &["transfer", "send", "--body", &body, "--retries", "0"],
        &env,
    )
    .await;
    assert_eq!(lost.code, 4, "setup: {lost:?}");
    (sb, env, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_recover_says_4_while_the_service_is_unreachable_and_a_broken_journal_sends_nothing()
 {
    let (sb, env, body) = one_lost_send("unreachable", whish_sandbox::Fault::DropReply).await;

    // The service cannot be reached (its connection drops before it reads the request): exit
    // 4, the entry stays open.
    sb.inject(
        whish_sandbox::Endpoint::TransferSend,
        whish_sandbox::Fault::DropRequest,
        1,
    );
    let unreachable = whish(&["journal", "recover", "--retries", "0"], &env).await;
    assert_eq!(unreachable.code, 4, "{unreachable:?}");
    assert_eq!(unreachable.json()["open"][0]["state"], "may-have-arrived");
    // Reachable again: exit 0, one transfer.
    let recovered = whish(&["journal", "recover"], &env).await;
    assert_eq!(recovered.code, 0, "{recovered:?}");
    assert_eq!(sb.transfers().len(), 1);

    // A journal that cannot be opened: exit 2 and nothing sent.
    let mut broken = env.clone();
    broken.retain(|(k, _)| k != "WHISH_JOURNAL");
    broken.push((
        "WHISH_JOURNAL".into(),
        "sqlite:/proc/whish/cannot/journal.sqlite".into(),
    ));
    let before = sb.requests().len();
    let refused = whish(&["transfer", "send", "--body", &body], &broken).await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("WHISH_JOURNAL"),
        "{}",
        refused.stderr
    );
    assert_eq!(sb.requests().len(), before, "nothing was sent");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_for_the_operator_is_settled_only_when_asked() {
    let (sb, env, _) = one_lost_send("operator", whish_sandbox::Fault::DropRequest).await;
    // Past the deadline: to the operator, nothing sent; a plain recovery leaves it there.
    let late = whish(&["journal", "recover", "--deadline-hours", "0"], &env).await;
    assert_eq!(late.code, 3, "{late:?}");
    assert_eq!(
        late.json()["open"][0]["state"],
        "needs-operator",
        "{late:?}"
    );
    let plain = whish(&["journal", "recover"], &env).await;
    assert_eq!(plain.code, 3, "{plain:?}");
    assert!(sb.transfers().is_empty(), "nothing was sent");
    // A person's word: read by status (never received), then sent with its own Request-id.
    let settled = whish(&["journal", "recover", "--retry-needs-operator"], &env).await;
    assert_eq!(settled.code, 0, "{settled:?}");
    assert_eq!(sb.transfers().len(), 1);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_recover_with_a_key_settles_that_entry_only() {
    let (sb, env, _) = one_lost_send("by-key", whish_sandbox::Fault::DropRequest).await;
    // A second lost send in the same journal.
    let other = temp_file("by-key-2.json", &cash_body("61"))
        .display()
        .to_string();
    sb.inject(Endpoint::TransferSend, whish_sandbox::Fault::DropRequest, 1);
    let lost = whish(
        &["transfer", "send", "--body", &other, "--retries", "0"],
        &env,
    )
    .await;
    assert_eq!(lost.code, 4, "setup: {lost:?}");
    let late = whish(&["journal", "recover", "--deadline-hours", "0"], &env).await;
    assert_eq!(late.code, 3, "{late:?}");
    let waiting = late.json()["open"].as_array().expect("open").clone();
    assert_eq!(waiting.len(), 2, "{late:?}");
    assert!(waiting.iter().all(|e| e["state"] == "needs-operator"));
    let (first, second) = (
        waiting[0]["key"].as_str().expect("key").to_owned(),
        waiting[1]["key"].as_str().expect("key").to_owned(),
    );

    // A key with no entry: an error, nothing sent, nothing changed.
    let unknown = whish(
        &["journal", "recover", "123456789", "--retry-needs-operator"],
        &env,
    )
    .await;
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(
        unknown.stderr.contains("no journal entry has the key"),
        "{unknown:?}"
    );
    assert!(sb.transfers().is_empty(), "nothing was sent");
    // A key cannot be taken over from another process: that is every entry's recovery.
    let take_over = whish(&["journal", "recover", &first, "--take-over"], &env).await;
    assert_eq!(take_over.code, 2, "{take_over:?}");

    // The person's word on one entry: that one is read by status (never received) and sent
    // with its own Request-id; the other still waits.
    let one = whish(
        &["journal", "recover", &first, "--retry-needs-operator"],
        &env,
    )
    .await;
    assert_eq!(one.code, 0, "{one:?}");
    assert_eq!(one.json()["open"], serde_json::json!([]), "{one:?}");
    let sent = sb.transfers();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].request_id.to_string(), first);
    let show = whish(&["journal", "show", &second], &env).await;
    assert_eq!(show.json()[0]["state"], "needs-operator", "{show:?}");
    // Named again, the other is settled too; the first is not sent twice.
    let both = whish(
        &[
            "journal",
            "recover",
            &first,
            &second,
            "--retry-needs-operator",
        ],
        &env,
    )
    .await;
    assert_eq!(both.code, 0, "{both:?}");
    assert_eq!(sb.transfers().len(), 2);
    sb.shutdown().await;
}

#[test]
fn whish_processes_opening_a_new_journal_at_once_all_open_it() {
    // CI found two `whish` processes racing on a new SQLite file ("table already exists",
    // then "database is locked" while one switched it to WAL): every one must open it.
    for round in 0..5 {
        let journal = format!(
            "sqlite:{}",
            temp_file("placeholder", "")
                .with_file_name(format!("race-{round}.sqlite"))
                .display()
        );
        let env = vec![("WHISH_JOURNAL".to_owned(), journal)];
        let runs: Vec<_> = (0..8)
            .map(|_| {
                let env = env.clone();
                std::thread::spawn(move || whish_blocking(&["journal", "list"], &env))
            })
            .collect();
        for r in runs {
            let run = r.join().expect("thread");
            assert_eq!(run.code, 0, "{run:?}");
        }
    }
}
