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

/// A top-up pay whose reply was lost, paid again with its externalId while the options cannot
/// be fetched: the recorded pay is resent (no fetch first), the service replays it, and the
/// command says paid. A failed fetch is never the payment's refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_top_up_retried_under_its_external_id_resends_the_recorded_pay() {
    let _ = std::fs::remove_file(
        temp_file("journal.sqlite", "").with_file_name("replays-topup.sqlite"),
    );
    let (sb, env) = lenient_sandbox_with_journal("replays-topup.sqlite").await;
    let pay = |x: &'static str| {
        vec![
            "topup",
            "pay",
            "--provider",
            "gift-voucher",
            "--target",
            "a@b.co",
            "--option-id",
            "GV-20",
            "--external-id",
            x,
            "--retries",
            "0",
        ]
    };
    sb.inject(Endpoint::TopupPay, Fault::DropReply, 1);
    let lost = whish(&pay("tu-lost"), &env).await;
    assert_eq!(lost.code, 4, "{lost:?}");
    assert_eq!(sb.sales().len(), 1, "the pay was applied");
    let shown = whish(&["journal", "show", "tu-lost"], &env).await;
    assert_eq!(
        shown.json()[0]["state"],
        "may-have-arrived",
        "the outcome recorded before the command exited: {shown:?}"
    );
    sb.inject(
        Endpoint::TopupFetch,
        Fault::Code("external.error.no.offers"),
        5,
    );
    let again = whish(&pay("tu-lost"), &env).await;
    let fetches = sb
        .requests()
        .iter()
        .filter(|r| r.endpoint == Endpoint::TopupFetch)
        .count();
    assert_eq!(
        fetches, 1,
        "only the first pay fetched the options: {again:?}"
    );
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.json()["retrieved"], true);
    assert_eq!(sb.sales().len(), 1, "one sale");
    // A new pay whose fetch fails: nothing was paid (exit 2), never "refused" (exit 1).
    let fresh = whish(&pay("tu-fresh"), &env).await;
    assert_eq!(fresh.code, 2, "{fresh:?}");
    assert_eq!(sb.sales().len(), 1);
}

/// A payouts run refused for bad rows (here: run without the batch's sender) sends nothing and
/// leaves the earlier run's results file, with its LTNs, as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_refused_for_bad_rows_keeps_the_earlier_results() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let journal = temp_file("results-kept.sqlite", "");
    let _ = std::fs::remove_file(&journal);
    env.push(journal_at(&journal));
    let file = cash_payouts_file("results-kept.csv", "RK", "+961703", 5, 4);
    let results = file.with_file_name("results-kept.results.csv");
    let (file_arg, results_arg) = (file.display().to_string(), results.display().to_string());
    let first = whish(
        &payouts_cmd("send", &file_arg, "results-kept", &results_arg),
        &env,
    )
    .await;
    assert_eq!(first.code, 0, "{first:?}");
    let written = std::fs::read_to_string(&results).expect("results");
    assert_eq!(
        written.lines().count(),
        5,
        "a header and four rows: {written}"
    );
    // A row added with a bad amount: the run is refused before anything is sent.
    let mut text = std::fs::read_to_string(&file).expect("batch file");
    text.push_str("RK-bad,CASH_COLLECTION,Hiba,Mansour,+96170399999,05-06-1991,-5,USD,Family Support,Savings\n");
    std::fs::write(&file, text).expect("edit");
    let bad_row = whish(
        &payouts_cmd("send", &file_arg, "results-kept", &results_arg),
        &env,
    )
    .await;
    assert_eq!(bad_row.code, 2, "{bad_row:?}");
    assert_eq!(
        std::fs::read_to_string(&results).expect("results"),
        written,
        "the earlier results are kept"
    );
    assert_eq!(sb.transfers().len(), 4);
}

/// The same payouts file run again under a mistyped batch name: every row is refused before
/// anything is sent, naming the Request-id it was paid under; `--allow-repeat` pays them again
/// on purpose.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_run_again_under_another_name_pays_nothing_twice() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let journal = temp_file("repeat.sqlite", "");
    let _ = std::fs::remove_file(&journal);
    env.push(journal_at(&journal));
    let file = cash_payouts_file("repeat.csv", "RP", "+961704", 5, 3);
    let results = file.with_file_name("repeat.results.csv");
    let (file_arg, results_arg) = (file.display().to_string(), results.display().to_string());
    let first = whish(
        &payouts_cmd("send", &file_arg, "payroll-2026-11", &results_arg),
        &env,
    )
    .await;
    assert_eq!(first.code, 0, "{first:?}");
    assert_eq!(sb.transfers().len(), 3);
    let typo = whish(
        &payouts_cmd("send", &file_arg, "payrol-2026-11", &results_arg),
        &env,
    )
    .await;
    assert_eq!(typo.code, 2, "{typo:?}");
    assert_eq!(
        typo.json()["badRows"].as_array().map(Vec::len),
        Some(3),
        "{typo:?}"
    );
    assert!(
        typo.stdout.contains("already sent under Request-id"),
        "{typo:?}"
    );
    assert_eq!(sb.transfers().len(), 3, "nothing paid twice");
    let mut meant = payouts_cmd("send", &file_arg, "payroll-2026-12", &results_arg);
    meant.push("--allow-repeat");
    let again = whish(&meant, &env).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(sb.transfers().len(), 6);
}

/// A payouts file tried at one service (the sandbox) and then run at another, under another
/// batch name, with the same journal: the rows are new payments there, not repeats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_paid_at_one_service_is_not_a_repeat_at_another() {
    let tried = funded_sandbox().await;
    let journal = temp_file("tried.sqlite", "");
    let _ = std::fs::remove_file(&journal);
    let mut env = tried.env_vars();
    env.push(journal_at(&journal));
    let file = cash_payouts_file("tried.csv", "TR", "+961705", 5, 3);
    let results = file.with_file_name("tried.results.csv");
    let (file_arg, results_arg) = (file.display().to_string(), results.display().to_string());
    let first = whish(
        &payouts_cmd("send", &file_arg, "trial-2026-11", &results_arg),
        &env,
    )
    .await;
    assert_eq!(first.code, 0, "{first:?}");
    assert_eq!(tried.transfers().len(), 3);

    let live = funded_sandbox().await;
    let mut there = live.env_vars();
    there.push(journal_at(&journal));
    let run = whish(
        &payouts_cmd("send", &file_arg, "payroll-2026-11", &results_arg),
        &there,
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(live.transfers().len(), 3, "paid at the other service");
    assert_eq!(tried.transfers().len(), 3, "nothing more at the first");
}
