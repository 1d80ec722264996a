//! A lease's holder is taken for dead only when this process can prove it: a sender alive in
//! another PID namespace (a container with the same host name, sharing the journal) keeps its
//! entry until its lease runs out, and nothing is sent twice. Needs root (`unshare --pid`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{self, cash_send, places, sandbox};
use whish_journal::{Clients, Journal, Recovery};
use whish_sandbox::{Endpoint, Fault};

const CHILD: &str = "WHISH_JOURNAL_NAMESPACE_CHILD";

/// In a child run in a new PID namespace: send one transfer through the journal named in the
/// environment, and wait on it (the sandbox stalls it). In the parent: does nothing.
#[tokio::test]
async fn sender_in_another_namespace() {
    let Ok(url) = std::env::var(CHILD) else {
        return;
    };
    let var = |n: &str| std::env::var(n).expect(n);
    let client = whish_money_transfer::TransferClient::builder(
        whish_core::ClientSettings::new(var("NS_BASE")).policy(support::policy(0)),
    )
    .username(var("NS_USER"))
    .key(whish_core::SecretString::from(var("NS_KEY")))
    .build()
    .expect("client")
    .with_options(whish_core::CallOptions::new().attempt_timeout(Duration::from_secs(60)));
    let journal = Journal::open(&url).await.expect("open");
    let t = journal.transfer(client);
    let prepared = t.client().prepare_send(cash_send(41)).expect("prepare");
    println!("NAMESPACE child pid {} sending", std::process::id());
    let _ = t.send(&prepared).await;
}

/// A sender alive in another PID namespace, mid-call, and a recovery in this one on the same
/// journal: the holder cannot be seen from here, so it is held, not taken from the dead, and
/// the service receives the request once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_holder_in_another_pid_namespace_is_not_taken_for_dead() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let unshare = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !unshare {
        whish_testkit::not_run(
            "holder_liveness",
            "the test",
            "cannot make a PID namespace here (unshare --pid needs root)",
        );
        return;
    }
    for place in places("holder_other_namespace").await {
        let sb = sandbox().await;
        sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
        let creds = sb.transfer_credentials();
        let mut child = Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc"])
            .arg(std::env::current_exe().expect("exe"))
            .args(support::child_test_args(
                module_path!(),
                "sender_in_another_namespace",
            ))
            .env(CHILD, place.url())
            .env("NS_BASE", sb.transfer_base_url())
            .env("NS_USER", &creds.username)
            .env("NS_KEY", &creds.key)
            .stdout(Stdio::null())
            .spawn()
            .expect("start the sender in a new PID namespace");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !sb
            .requests()
            .iter()
            .any(|r| r.endpoint == Endpoint::TransferSend)
        {
            assert!(Instant::now() < deadline, "the child never sent");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let recoverer = Journal::open(place.url()).await.expect("open");
        let report = recoverer
            .recover(
                &Clients::new().transfer(support::transfer(&sb, 0)),
                &Recovery::new(),
            )
            .await
            .expect("recover");
        let sends = sb
            .requests()
            .iter()
            .filter(|r| r.endpoint == Endpoint::TransferSend)
            .count();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            report.taken_from_dead, 0,
            "{place:?}: a live sender in another PID namespace was taken for dead"
        );
        assert_eq!(
            report.held_elsewhere.len(),
            1,
            "{place:?}: the entry is held by its live sender: {report:?}"
        );
        assert_eq!(
            sends, 1,
            "{place:?}: the request reached the service {sends} times"
        );
        recoverer.close().await;
    }
}
