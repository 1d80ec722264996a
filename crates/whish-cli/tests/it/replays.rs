//! Through the command: a failure the collect service answers for an externalId is that
//! externalId's final answer (the service never runs one twice; it replays what it recorded),
//! unless the spec asks for a retry with the same one (`fatal`).

use whish_sandbox::{Endpoint, Fault};

use crate::support::*;

fn create(id: &str) -> Vec<String> {
    [
        "collect",
        "create",
        "--amount",
        "12.5",
        "--currency",
        "USD",
        "--external-id",
        id,
        "--allow-local-callbacks",
        "--success-callback-url",
        "http://127.0.0.1:9/ok",
        "--failure-callback-url",
        "http://127.0.0.1:9/ko",
        "--success-redirect-url",
        "https://shop.example.com/thanks",
        "--failure-redirect-url",
        "https://shop.example.com/retry",
    ]
    .map(String::from)
    .to_vec()
}

/// The journal state of the entry under `key`.
async fn state(env: &[(String, String)], key: &str) -> String {
    let shown = whish(&["journal", "show", key], env).await;
    assert_eq!(shown.code, 0, "{shown:?}");
    shown.json()[0]["state"].as_str().expect("state").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_failure_is_final_for_its_external_id_except_fatal() {
    let _ = std::fs::remove_file(
        temp_file("journal.sqlite", "").with_file_name("replays-journal.sqlite"),
    );
    let (sb, env) = lenient_sandbox_with_journal("replays-journal.sqlite").await;
    for (n, code) in [
        "sales.denomination_not_active",
        "refresh.denominations",
        "svc_pay.code_generation_failed",
        "svc.unknown_error",
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("replay-{n}");
        sb.inject(Endpoint::CollectCreate, Fault::Code(code), 1);
        let run = whish(&strs(&create(&id)), &env).await;
        assert_eq!(run.code, 1, "{code}: a final failure: {run:?}");
        assert_eq!(run.json()["code"], code);
        assert_eq!(state(&env, &id).await, "refused", "{code}");
    }
    // `fatal`: the externalId was never registered; the spec asks to retry with it.
    sb.inject(Endpoint::CollectCreate, Fault::Code("fatal"), 1);
    let run = whish(&strs(&create("replay-fatal")), &env).await;
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(state(&env, "replay-fatal").await, "may-have-arrived");
}
