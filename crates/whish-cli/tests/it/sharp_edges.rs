//! Through the command, under faults: what a quote, a several-identifier status read, a
//! follow-up with `--wait` and a recovery in a shell with settings of two environments answer.

use std::time::{Duration, Instant};

use serde_json::Value;
use whish_sandbox::{Endpoint, Fault};

use crate::support::*;

fn fresh_journal(name: &str) -> (String, String) {
    let j = temp_file(name, "");
    let _ = std::fs::remove_file(&j);
    journal_at(&j)
}

fn key_of(v: &Value, field: &str) -> String {
    v[field]
        .as_str()
        .map_or_else(|| v[field].to_string(), str::to_owned)
}

/// A quote is a read: when it is Pending, the send is not sent, the command says so (exit 2)
/// and prints no key a person could take for the send's and follow up.
#[tokio::test]
async fn a_pending_quote_sends_nothing_and_names_no_key_to_follow() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    env.push(fresh_journal("edge-quoted.sqlite"));
    let body = temp_file("edge-quoted.json", &cash_body("100"))
        .display()
        .to_string();
    sb.inject(Endpoint::TransferFees, Fault::Pending, 4);
    let quoted = whish(
        &["transfer", "send", "--body", &body, "--quoted-total", "105"],
        &env,
    )
    .await;
    assert_eq!(quoted.code, 2, "{quoted:?}");
    assert!(!quoted.stdout.contains("idempotencyKey"), "{quoted:?}");
    assert!(quoted.stderr.contains("nothing was sent"), "{quoted:?}");
    assert!(sb.transfers().is_empty());
}

/// A transfer id of one transfer and the Request-id of another name no transfer: the read is
/// not taken for either's status.
#[tokio::test]
async fn identifiers_of_two_transfers_are_no_answer() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    env.push(fresh_journal("edge-status.sqlite"));
    let a = temp_file("edge-status-a.json", &cash_body("41"))
        .display()
        .to_string();
    let b = temp_file("edge-status-b.json", &cash_body("42"))
        .display()
        .to_string();
    let first = whish(&["transfer", "send", "--body", &a], &env)
        .await
        .json();
    let second = whish(&["transfer", "send", "--body", &b], &env)
        .await
        .json();
    let tid_a = first["transferId"].as_str().expect("tid").to_owned();
    let rid_b = key_of(&second, "requestId");

    let mixed = whish(
        &[
            "transfer",
            "status",
            "--transfer-id",
            &tid_a,
            "--request-id",
            &rid_b,
        ],
        &env,
    )
    .await;
    assert_ne!(
        mixed.code, 0,
        "transfer {tid_a} is not Request-id {rid_b}'s, yet it is printed as the status: {mixed:?}"
    );
}

/// The default journal is named after every service's base URL in the environment, whichever
/// settings a command takes: a send (transfer settings) and the recovery that settles it (all
/// three) open the same file.
#[tokio::test]
async fn a_recovery_opens_the_default_journal_its_send_recorded_in() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    env.push((
        "WHISH_COLLECT_BASE_URL".into(),
        "https://collect.example.com".into(),
    ));
    let data = temp_file("edge-xdg-marker", "");
    let data = data.parent().expect("dir").join("xdg");
    env.push(("XDG_DATA_HOME".into(), data.display().to_string()));
    let run = |args: Vec<String>, env: Vec<(String, String)>| async move {
        tokio::task::spawn_blocking(move || {
            let mut cmd = whish_testkit::clean_command(env!("CARGO_BIN_EXE_whish"), None);
            cmd.args(&args).envs(env);
            Run::of(cmd.output().expect("run"))
        })
        .await
        .expect("join")
    };
    let body = temp_file("edge-env.json", &cash_body("43"))
        .display()
        .to_string();
    sb.inject(Endpoint::TransferSend, Fault::Pending, 1);
    let sent = run(
        vec!["transfer".into(), "send".into(), "--body".into(), body],
        env.clone(),
    )
    .await;
    assert_eq!(sent.code, 3, "{sent:?}");
    let recovered = run(vec!["journal".into(), "recover".into()], env.clone()).await;
    let open = run(
        vec!["journal".into(), "list".into(), "--open".into()],
        env.clone(),
    )
    .await;
    assert_eq!(recovered.code, 0, "{recovered:?}");
    let report = &recovered.json()["report"];
    assert_eq!(
        report["examined"], 1,
        "the send's entry is found: {recovered:?}"
    );
    assert_eq!(report["changes"][0]["to"], "accepted", "{recovered:?}");
    assert!(open.stdout.trim().is_empty(), "settled: {open:?}");
}

/// `--wait SECS` bounds the whole follow-up, a hanging status read included; a send answered
/// Pending stays Pending (exit 3) until a final answer.
#[tokio::test]
async fn wait_bounds_the_follow_up_and_pending_stays_pending() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    env.push(fresh_journal("edge-wait.sqlite"));
    let body = temp_file("edge-wait.json", &cash_body("44"))
        .display()
        .to_string();
    sb.inject(Endpoint::TransferSend, Fault::Pending, 1);
    sb.inject(Endpoint::TransferStatus, Fault::Stall, 100);
    let started = Instant::now();
    let run = whish(
        &[
            // A status read left to its own timeout would take 30 s: far past the bound
            // below, which leaves a loaded machine room to start the process.
            "--timeout",
            "30",
            "transfer",
            "send",
            "--body",
            &body,
            "--wait",
            "2",
        ],
        &env,
    )
    .await;
    let took = started.elapsed();
    eprintln!("took {took:?}: {run:?}");
    assert!(took < Duration::from_secs(20), "--wait 2 took {took:?} ");
    assert_eq!(
        run.code, 3,
        "the service said Pending; nothing says otherwise: {run:?}"
    );
}

/// A send followed up with `--wait` prints the fields of every send, `null` where unknown.
#[tokio::test]
async fn a_followed_up_send_prints_the_shape_of_a_send() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    env.push(fresh_journal("edge-shape.sqlite"));
    let body = temp_file("edge-shape.json", &cash_body("45"))
        .display()
        .to_string();
    sb.inject(Endpoint::TransferSend, Fault::Pending, 1);
    let waited = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--wait",
            "20",
            "--request-id",
            "77001",
        ],
        &env,
    )
    .await;
    assert_eq!(waited.code, 0, "{waited:?}");
    let v = waited.json();
    let missing: Vec<&str> = [
        "charges",
        "collectionAmount",
        "balance",
        "transactionId",
        "currency",
        "receiverIdentity",
        "dialog",
    ]
    .into_iter()
    .filter(|k| v.get(*k).is_none())
    .collect();
    assert!(missing.is_empty(), "missing {missing:?} in {v}");
}
