//! `transfer send` of a body the journal holds as a send under another Request-id whose
//! outcome is still open: refused (exit 2, nothing sent) unless `--allow-repeat`, because it is
//! most often the same transfer sent again by hand where `transfer resend` was meant. Once the
//! first send's outcome is known, or for another service or account, the body is a new
//! transfer.

use whish_sandbox::{Fault, Sandbox};

use crate::support::*;

/// A sandbox, the environment of a command using a journal of its own, and a body file.
async fn sandbox_and_body(name: &str) -> (Sandbox, Vec<(String, String)>, String) {
    let (sb, env) = lenient_sandbox_with_journal(&format!("{name}.sqlite")).await;
    let body = temp_file(&format!("{name}.json"), &cash_body("75"))
        .display()
        .to_string();
    (sb, env, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_whose_outcome_is_unknown_is_pointed_to_its_resend_not_sent_again() {
    let (sb, env, body) = sandbox_and_body("outcome-unknown").await;
    lost_send(&sb, &env, &body, "770101", Fault::DropReply).await;
    assert_eq!(sb.transfers().len(), 1);

    // The operator runs `send` again (a new Request-id): it would pay twice.
    let again = whish(&["transfer", "send", "--body", &body], &env).await;
    assert_eq!(again.code, 2, "refused before sending: {again:?}");
    let refusal = again.json();
    assert_eq!(
        (&refusal["outcome"], &refusal["error"]),
        (&"not-sent".into(), &"same-body-elsewhere".into()),
        "a script tells this refusal from a bad body: {refusal}"
    );
    assert_eq!(refusal["heldUnder"], "770101", "{refusal}");
    assert_eq!(refusal["heldState"], "may-have-arrived", "{refusal}");
    assert!(
        again.stderr.contains("transfer resend")
            && again.stderr.contains("770101")
            && again.stderr.contains("--allow-repeat"),
        "points to the resend under the first id, and to the way to pay again: {}",
        again.stderr
    );
    assert_eq!(sb.transfers().len(), 1, "nothing sent");

    let resent = whish(
        &[
            "transfer",
            "resend",
            "--body",
            &body,
            "--request-id",
            "770101",
        ],
        &env,
    )
    .await;
    assert_eq!(resent.code, 0, "{resent:?}");
    assert_eq!(resent.json()["result"], "confirmed");
    assert_eq!(sb.transfers().len(), 1, "one transfer in all");

    // Its outcome known (accepted), the same body is a new payment: the same amount to the
    // same receiver again.
    let next = whish(&["transfer", "send", "--body", &body], &env).await;
    assert_eq!(next.code, 0, "{next:?}");
    assert_eq!(sb.transfers().len(), 2);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_is_sent_on_purpose_with_allow_repeat() {
    let (sb, env, body) = sandbox_and_body("on-purpose").await;
    lost_send(&sb, &env, &body, "770201", Fault::DropReply).await;
    let on_purpose = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "770202",
            "--allow-repeat",
        ],
        &env,
    )
    .await;
    assert_eq!(on_purpose.code, 0, "{on_purpose:?}");
    assert_eq!(sb.transfers().len(), 2, "the same payment again, asked for");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_body_sent_to_another_service_is_another_transfer() {
    let (first, env, body) = sandbox_and_body("other-service").await;
    lost_send(&first, &env, &body, "770301", Fault::DropReply).await;

    // The same journal, another service's base URL and account.
    let (second, _) = lenient_sandbox_with_journal("unused.sqlite").await;
    let mut elsewhere = second.env_vars();
    elsewhere.push(("WHISH_JOURNAL".to_owned(), journal_url(&env)));
    let there = whish(&["transfer", "send", "--body", &body], &elsewhere).await;
    assert_eq!(there.code, 0, "{there:?}");
    assert_eq!(first.transfers().len(), 1);
    assert_eq!(second.transfers().len(), 1);
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_of_one_body_started_at_once_pay_it_once() {
    let (sb, env, body) = sandbox_and_body("at-once").await;
    // Each send's reply takes 3 s: every send started here is open while the others check.
    let runs = 5;
    sb.inject(
        whish_sandbox::Endpoint::TransferSend,
        Fault::Delay(std::time::Duration::from_secs(3)),
        runs,
    );
    let sends: Vec<_> = (0..runs)
        .map(|_| {
            let (body, env) = (body.clone(), env.clone());
            tokio::spawn(async move { whish(&["transfer", "send", "--body", &body], &env).await })
        })
        .collect();
    let mut done = Vec::new();
    for send in sends {
        done.push(send.await.expect("join"));
    }
    let sent: Vec<_> = done.iter().filter(|r| r.code == 0).collect();
    let refused: Vec<_> = done
        .iter()
        .filter(|r| r.code == 2 && r.json()["error"] == "same-body-elsewhere")
        .collect();
    assert_eq!(
        (sent.len(), refused.len()),
        (1, runs as usize - 1),
        "one send goes out, every other one is refused as its repeat: {done:#?}"
    );
    assert_eq!(sb.transfers().len(), 1, "one transfer");
    sb.shutdown().await;
}

/// The journal `env` names, opened by the test itself: another process, as the command sees it.
async fn journal_of(env: &[(String, String)]) -> whish::journal::Journal {
    whish::journal::Journal::open(&journal_url(env))
        .await
        .expect("open the journal")
}

/// Start `whish transfer send --body BODY` with `env` in the background.
fn send_in_background(
    body: &str,
    env: &[(String, String)],
) -> tokio::task::JoinHandle<whish_testkit::Run> {
    let (body, env) = (body.to_owned(), env.to_vec());
    tokio::spawn(async move { whish(&["transfer", "send", "--body", &body], &env).await })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_waits_while_another_process_holds_the_repeat_check() {
    let (sb, env, body) = sandbox_and_body("check-held").await;
    let other = journal_of(&env).await;
    let held = other.lock_repeat_check().await.expect("held");
    let send = send_in_background(&body, &env);
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert!(!send.is_finished(), "the send waits for the check");
    assert!(sb.transfers().is_empty(), "nothing sent while it waits");
    held.release().await;
    let sent = send.await.expect("join");
    assert_eq!(sent.code, 0, "{sent:?}");
    assert!(
        sent.stderr
            .contains("waiting for the journal's repeat check"),
        "says why it waited: {}",
        sent.stderr
    );
    assert_eq!(sb.transfers().len(), 1);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_named_through_a_link_shares_its_repeat_check() {
    let (sb, env, body) = sandbox_and_body("check-link").await;
    let other = journal_of(&env).await;
    let held = other.lock_repeat_check().await.expect("held");
    // The same journal under another name: a symbolic link in another directory, given as a
    // plain path.
    let real = journal_url(&env)
        .strip_prefix("sqlite:")
        .expect("a SQLite journal")
        .to_owned();
    let link = temp_file("elsewhere.txt", "")
        .with_file_name("journal-link.sqlite")
        .display()
        .to_string();
    std::os::unix::fs::symlink(&real, &link).expect("link");
    let mut linked = env.clone();
    linked.retain(|(k, _)| k != "WHISH_JOURNAL");
    linked.push(("WHISH_JOURNAL".to_owned(), link));
    let send = send_in_background(&body, &linked);
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert!(
        !send.is_finished() && sb.transfers().is_empty(),
        "a send through the link waits for the check held through the real path"
    );
    held.release().await;
    assert_eq!(send.await.expect("join").code, 0);
    assert_eq!(sb.transfers().len(), 1);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_started_during_a_resend_of_the_same_body_is_its_repeat() {
    let (sb, env, body) = sandbox_and_body("resend-then-send").await;
    // A resend under a Request-id this journal has never held (its first send was recorded
    // elsewhere), answered in 3 s; the same body sent while it is out.
    sb.inject(
        whish_sandbox::Endpoint::TransferSend,
        Fault::Delay(std::time::Duration::from_secs(3)),
        2,
    );
    let resend = {
        let (body, env) = (body.clone(), env.clone());
        tokio::spawn(async move {
            whish(
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
            .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(1_000)).await;
    let again = whish(&["transfer", "send", "--body", &body], &env).await;
    assert_eq!(again.code, 2, "refused: the resend is still out: {again:?}");
    assert_eq!(again.json()["heldUnder"], "880001", "{}", again.stdout);
    let resent = resend.await.expect("join");
    assert_eq!(resent.code, 0, "{resent:?}");
    assert_eq!(sb.transfers().len(), 1, "one transfer");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_left_unsent_is_checked_as_a_new_send() {
    let (sb, env, body) = sandbox_and_body("left-unsent").await;
    // A send whose outcome is unknown, still open under 770301.
    lost_send(&sb, &env, &body, "770301", Fault::DropReply).await;
    assert_eq!(sb.transfers().len(), 1);
    // The same body recorded as never sent under 770302 (a send given back: its reservation
    // was not held), as the journal writes it.
    let recorded = sql_on_journal(
        &env,
        "INSERT INTO whish_journal_entries (service, operation, idem_key, context, request, \
         state, attempts, created_ms, updated_ms, outcome, lease_token, target) \
         SELECT service, operation, '770302', context, request, 'refused', 1, created_ms, \
         updated_ms, '{\"result\":\"not-sent\",\"message\":\"given back\"}', 1, target \
         FROM whish_journal_entries WHERE idem_key = '770301'",
    )
    .await;
    assert_eq!(recorded, 1, "setup");
    // Sent again under 770302 (its first send, as far as the journal knows): the body is held
    // open under 770301, so it is refused, nothing sent.
    let again = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "770302",
        ],
        &env,
    )
    .await;
    assert_eq!(again.code, 2, "refused before sending: {again:?}");
    assert_eq!(again.json()["heldUnder"], "770301", "{}", again.stdout);
    assert_eq!(sb.transfers().len(), 1, "nothing sent");
    // Once 770301 is settled (confirmed by its resend), 770302 goes as a new payment, recorded
    // afresh: a later check finds it.
    let resent = whish(
        &[
            "transfer",
            "resend",
            "--body",
            &body,
            "--request-id",
            "770301",
        ],
        &env,
    )
    .await;
    assert_eq!(resent.code, 0, "{resent:?}");
    let paid = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "770302",
        ],
        &env,
    )
    .await;
    assert_eq!(paid.code, 0, "{paid:?}");
    assert_eq!(sb.transfers().len(), 2);
    sb.shutdown().await;
}
