//! `whish journal recover` with settings for another service than an entry was recorded for (a
//! sandbox's entry met by another sandbox's settings, as production settings would meet it):
//! nothing is sent there, both services are named, and the exit is 3 while the entry waits for a
//! recovery with its own settings.

use whish_sandbox::{Endpoint, Fault, Sandbox};

use crate::support::{cash_body, journal_at, temp_file, whish};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_with_another_services_settings_sends_nothing_and_exits_3() {
    let meant = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let other = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let journal = temp_file("journal.sqlite", "").with_file_name("other-service.sqlite");
    let mut env_meant = meant.env_vars();
    env_meant.push(journal_at(&journal));
    let mut env_other = other.env_vars();
    env_other.push(journal_at(&journal));
    meant.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    let body = temp_file("lost.json", &cash_body("100"))
        .display()
        .to_string();
    let args = [
        "transfer",
        "send",
        "--body",
        &body,
        "--request-id",
        "770001",
        "--retries",
        "0",
    ];
    let lost = whish(&args, &env_meant).await;
    assert_eq!(lost.code, 4, "the reply was lost: unknown outcome {lost:?}");
    assert_eq!(meant.transfers().len(), 1, "it had arrived");

    let wrong = whish(&["journal", "recover"], &env_other).await;
    assert_eq!(
        wrong.code, 3,
        "an entry of another service stays open: {wrong:?}"
    );
    assert!(
        wrong.stderr.contains("recorded for another service"),
        "{}",
        wrong.stderr
    );
    assert!(
        wrong.stderr.contains(&meant.transfer_base_url()),
        "names the entry's service: {}",
        wrong.stderr
    );
    assert_eq!(
        wrong.json()["report"]["other_service"][0]["key"],
        "770001",
        "{}",
        wrong.stdout
    );
    let sent_there = other
        .requests()
        .iter()
        .filter(|r| r.endpoint == Endpoint::TransferSend)
        .count();
    assert_eq!(sent_there, 0, "nothing is sent to another service");
    assert!(other.transfers().is_empty());

    let right = whish(&["journal", "recover"], &env_meant).await;
    assert_eq!(right.code, 0, "settled with its own settings: {right:?}");
    assert_eq!(
        meant.transfers().len(),
        1,
        "one transfer, where it was meant"
    );
}
