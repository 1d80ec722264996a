//! The command's journal after a crash: `whish journal recover` run right after a killed send
//! resolves it without `--take-over` (the dead process's lease is let go at once on its host).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;
use whish_sandbox::{Endpoint, Fault, Sandbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_right_after_a_killed_send_needs_no_take_over() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let journal = temp_file("x", "").with_file_name("killed-send.sqlite");
    let mut env = sb.env_vars();
    env.push(journal_at(&journal));
    let body = temp_file("send.json", &cash_body("100"));
    sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_whish"));
    cmd.args([
        "transfer",
        "send",
        "--body",
        &body.display().to_string(),
        "--request-id",
        "950000001",
        "--timeout",
        "60",
    ])
    .envs(env.iter().map(|(k, v)| (k, v)))
    .env_remove("HTTPS_PROXY")
    .env_remove("HTTP_PROXY")
    .env_remove("ALL_PROXY")
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn whish");
    // Killed once the request reached the service (which applied it and stalls its answer).
    let started = Instant::now();
    while !sb
        .requests()
        .iter()
        .any(|r| r.endpoint == Endpoint::TransferSend)
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the send never arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let recovered = whish(&["journal", "recover"], &env).await;
    assert_eq!(recovered.code, 0, "{recovered:?}");
    assert!(
        recovered.stderr.contains("taken over"),
        "it says the dead process's entry was taken: {recovered:?}"
    );
    let show = whish(&["journal", "show", "950000001"], &env).await;
    assert_eq!(show.json()[0]["state"], "accepted", "{show:?}");
    let transfers = sb
        .transfers()
        .iter()
        .filter(|t| t.request_id == 950000001)
        .count();
    assert_eq!(transfers, 1);
}
