//! `whish journal recover KEY...` under faults. The truths asserted: at most one transfer
//! per Request-id; an exit code of 0 only when every named entry is final in the journal and
//! the service agrees; a needs-operator entry a person named is never reported settled when the
//! status read was answered by a proxy's page or lost; a killed `whish` holding the named entry
//! does not keep it from a keyed recovery. (The journaled send under another process's write
//! lock is tested in whish-payouts, `journal_fails`: the command itself cannot be driven there,
//! as its journal's open meets the lock first and honestly sends nothing.)

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;
use whish_sandbox::{Endpoint, Fault, Sandbox};

async fn sandbox_with_journal(name: &str) -> (Sandbox, Vec<(String, String)>, std::path::PathBuf) {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let mut env = sb.env_vars();
    let journal = temp_file("placeholder", "").with_file_name(format!("{name}.sqlite"));
    env.push(journal_at(&journal));
    (sb, env, journal)
}

/// A send under `id` whose first attempt met `fault` (exit 4), then the journal-wide recovery
/// with deadline 0 that parks it for an operator.
async fn parked(sb: &Sandbox, env: &[(String, String)], id: &str, fault: Fault) {
    let body = temp_file(&format!("{id}.json"), &cash_body("60"))
        .display()
        .to_string();
    lost_send(sb, env, &body, id, fault).await;
    let late = whish(&["journal", "recover", "--deadline-hours", "0"], env).await;
    assert_eq!(late.code, 3, "setup: {late:?}");
    let show = whish(&["journal", "show", id], env).await;
    assert_eq!(show.json()[0]["state"], "needs-operator", "setup: {show:?}");
}

fn transfers_under(sb: &Sandbox, id: &str) -> usize {
    sb.transfers()
        .iter()
        .filter(|t| t.request_id.to_string() == id)
        .count()
}

async fn state_of(env: &[(String, String)], id: &str) -> String {
    let show = whish(&["journal", "show", id], env).await;
    show.json()[0]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Two people settle the same parked entry at once (`recover KEY --retry-needs-operator` twice,
/// the status reads slow): one transfer at most, and neither exit code says more than the
/// journal holds afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_keyed_recoveries_of_one_entry_at_once_send_once_and_agree_with_the_journal() {
    let (sb, env, _) = sandbox_with_journal("two-at-once").await;
    let id = "951500001";
    parked(&sb, &env, id, Fault::DropRequest).await;
    sb.inject(
        Endpoint::TransferStatus,
        Fault::Delay(Duration::from_millis(1500)),
        2,
    );
    let args = ["journal", "recover", id, "--retry-needs-operator"];
    let (a, b) = tokio::join!(whish(&args, &env), whish(&args, &env));
    eprintln!("A: {a:?}\nB: {b:?}");
    assert_eq!(transfers_under(&sb, id), 1, "one transfer: {a:?} {b:?}");
    let state = state_of(&env, id).await;
    for run in [&a, &b] {
        assert!(
            [0, 3].contains(&run.code),
            "exit {} for a recovery that could reach the service: {run:?}",
            run.code
        );
        if run.code == 0 {
            assert_eq!(state, "accepted", "exit 0 but the journal says {state}");
            assert_eq!(run.json()["open"], serde_json::json!([]), "{run:?}");
        }
        let changes = run.json()["report"]["changes"].clone();
        assert!(
            !changes.to_string().contains("\"refused\""),
            "a refusal reported for a transfer that was made: {run:?}"
        );
    }
    assert!(a.code == 0 || b.code == 0, "one of them settled it");
    assert_eq!(state, "accepted");
}

/// The person's word on one parked entry, whose send the service did apply, while a proxy in
/// front of the service answers the status read with a 403 page (and then a dropped reply):
/// nothing is settled on a page or on silence, no second transfer, exit not 0; once the
/// service answers, the entry is confirmed from the one transfer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_recovery_whose_status_read_meets_a_page_or_silence_settles_nothing() {
    let (sb, env, _) = sandbox_with_journal("page").await;
    let id = "951500002";
    parked(&sb, &env, id, Fault::DropReply).await;
    assert_eq!(transfers_under(&sb, id), 1, "setup: the service applied it");
    for fault in [Fault::Page(403), Fault::DropReply, Fault::AppliedPage(403)] {
        sb.inject(Endpoint::TransferStatus, fault, 1);
        let run = whish(
            &[
                "journal",
                "recover",
                id,
                "--retry-needs-operator",
                "--retries",
                "0",
            ],
            &env,
        )
        .await;
        eprintln!("{fault:?}: {run:?}");
        let state = state_of(&env, id).await;
        assert_ne!(
            run.code, 0,
            "{fault:?}: exit 0 on a status read that said nothing: {run:?}"
        );
        assert!(
            !["accepted", "refused"].contains(&state.as_str()),
            "{fault:?}: the journal settled it on a status read that said nothing ({state})"
        );
        assert_eq!(transfers_under(&sb, id), 1, "{fault:?}: a second transfer");
        assert!(
            !run.stderr.contains("nothing was sent") || transfers_under(&sb, id) == 0,
            "{fault:?}: {run:?}"
        );
    }
    let settled = whish(&["journal", "recover", id, "--retry-needs-operator"], &env).await;
    assert_eq!(settled.code, 0, "{settled:?}");
    assert_eq!(state_of(&env, id).await, "accepted");
    assert_eq!(transfers_under(&sb, id), 1);
}

/// A `whish transfer send` killed while its request was at the service (the answer stalled)
/// leaves its entry leased to a dead process; `recover KEY` takes it at once and confirms it
/// from the one transfer, and a second keyed recovery finds nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_recovery_takes_the_entry_of_a_killed_whish_at_once() {
    let (sb, env, _) = sandbox_with_journal("killed").await;
    let id = "951500003";
    let body = temp_file("killed.json", &cash_body("70"));
    sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
    let mut child = whish_command(
        &[
            "transfer",
            "send",
            "--body",
            &body.display().to_string(),
            "--request-id",
            id,
            "--timeout",
            "60",
        ],
        &env,
        None,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    let started = Instant::now();
    while transfers_under(&sb, id) == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let other_body = temp_file("other.json", &cash_body("71"));
    // Another open entry, not named: left as it is.
    sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
    let other = whish(
        &[
            "transfer",
            "send",
            "--body",
            &other_body.display().to_string(),
            "--request-id",
            "951500004",
            "--retries",
            "0",
        ],
        &env,
    )
    .await;
    assert_eq!(other.code, 4, "setup: {other:?}");
    let run = whish(&["journal", "recover", id], &env).await;
    eprintln!("{run:?}");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["report"]["taken_from_dead"], 1, "{run:?}");
    assert_eq!(state_of(&env, id).await, "accepted");
    assert_eq!(transfers_under(&sb, id), 1);
    // The other entry was not named: not sent, still open.
    assert_eq!(transfers_under(&sb, "951500004"), 0);
    assert_eq!(state_of(&env, "951500004").await, "may-have-arrived");
    let again = whish(&["journal", "recover", id], &env).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(transfers_under(&sb, id), 1);
}
