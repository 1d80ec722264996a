//! The objects the command prints, pinned: each command below runs against a fresh sandbox and
//! its JSON is held to a snapshot (`snapshots/`), with the values that change from run to run
//! (identifiers, times, paths) replaced by their kind. A renamed, added or dropped field, or a
//! value printed with another type, shows up as a reviewable diff of the snapshot.

use serde_json::Value;
use whish_sandbox::{Endpoint, Fault};

use crate::support::*;

/// The keys whose values differ between runs: they are replaced by `[key]`, their type kept
/// visible (`null` stays `null`).
const VOLATILE: [&str; 15] = [
    "collectUrl",
    "created",
    "date",
    "expiry",
    "externalId",
    "idempotencyKey",
    "key",
    "ltnNumber",
    "message",
    "recorded",
    "requestId",
    "results",
    "time",
    "transactionId",
    "transferId",
];

fn redacted(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, x)| {
                    let x = if VOLATILE.contains(&k.as_str()) && !x.is_null() {
                        Value::from(format!("[{k}]"))
                    } else {
                        redacted(x)
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redacted).collect()),
        other => other.clone(),
    }
}

/// Run `args`, expect exit `code`, and hold its stdout to the snapshot `name`.
async fn pinned(name: &str, env: &[(String, String)], args: &[&str], code: i32) -> Run {
    let run = whish(args, env).await;
    assert_eq!(run.code, code, "{args:?}: {run:?}");
    insta::assert_json_snapshot!(name, redacted(&run.json()));
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_the_command_prints_is_pinned_by_a_snapshot() {
    let (sb, env) = lenient_sandbox_with_journal("printed-objects.sqlite").await;
    let body = temp_file("printed-body.json", &cash_body("60"))
        .display()
        .to_string();

    pinned("transfer_fees", &env, &QUOTE_100_USD, 0).await;
    pinned("transfer_modes", &env, &["transfer", "modes"], 0).await;
    pinned(
        "transfer_send_sent",
        &env,
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "7100001",
        ],
        0,
    )
    .await;
    pinned(
        "transfer_status",
        &env,
        &["transfer", "status", "--request-id", "7100001"],
        0,
    )
    .await;
    sb.inject(
        Endpoint::TransferSend,
        Fault::Code("transfer.account_reach_balance_limit"),
        1,
    );
    pinned(
        "transfer_send_refused",
        &env,
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "7100002",
        ],
        1,
    )
    .await;
    sb.inject(Endpoint::TransferSend, Fault::Pending, 1);
    pinned(
        "transfer_send_pending",
        &env,
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "7100004",
        ],
        3,
    )
    .await;
    // A status read answered Pending: the read's own key is never offered as the one to
    // follow up; the advice is to read what was asked again.
    sb.inject(Endpoint::TransferStatus, Fault::Pending, 4);
    let pending = pinned(
        "transfer_status_pending",
        &env,
        &["transfer", "status", "--request-id", "7100001"],
        3,
    )
    .await;
    assert!(
        pending
            .stderr
            .contains("check what was asked, then read it again"),
        "{pending:?}"
    );
    assert!(!pending.stderr.contains("Pending (key"), "{pending:?}");
    pinned(
        "transfer_status_failed",
        &env,
        &["transfer", "status", "--request-id", "7100003"],
        1,
    )
    .await;

    pinned(
        "collect_balance",
        &env,
        &["collect", "balance", "--currency", "USD"],
        0,
    )
    .await;
    pinned("collect_create", &env, &strs(&create_args("po-1")), 0).await;
    pinned(
        "collect_status",
        &env,
        &[
            "collect",
            "status",
            "--currency",
            "USD",
            "--external-id",
            "po-1",
        ],
        0,
    )
    .await;

    // A read is tried four times: each fault is met once, none is left for the next run.
    sb.inject(Endpoint::CollectBalance, Fault::Page(502), 4);
    let page = pinned(
        "collect_balance_page",
        &env,
        &["collect", "balance", "--currency", "USD"],
        4,
    )
    .await;
    // A read changed nothing: read it again, never a change's "confirm" or "create again".
    assert!(page.stderr.contains("read it again"), "{page:?}");
    assert!(!page.stderr.contains("create again"), "{page:?}");
    sb.inject(Endpoint::TopupBalance, Fault::DropRequest, 4);
    let dropped = pinned("topup_balance_dropped", &env, &["topup", "balance"], 4).await;
    assert!(dropped.stderr.contains("read it again"), "{dropped:?}");
    assert!(
        dropped.stderr.contains("connection closed"),
        "the cause of a failed connection is said: {dropped:?}"
    );
    assert_eq!(sb.queued_faults(Endpoint::CollectBalance), 0);
    assert_eq!(sb.queued_faults(Endpoint::TopupBalance), 0);

    pinned("topup_balance", &env, &["topup", "balance"], 0).await;
    let offer = ["--provider", "gift-voucher", "--target", "a@b.co"];
    let options: Vec<&str> = ["topup", "options"].iter().chain(&offer).copied().collect();
    pinned("topup_options", &env, &options, 0).await;
    let pay: Vec<&str> = ["topup", "pay"]
        .iter()
        .chain(&offer)
        .chain(&["--option-id", "GV-20", "--external-id", "tu-1"])
        .copied()
        .collect();
    pinned("topup_pay", &env, &pay, 0).await;

    pinned("payouts_columns", &env, &["payouts", "columns"], 0).await;
    let list = whish(&["journal", "list"], &env).await;
    assert_eq!(list.code, 0, "{list:?}");
    // One entry a line: the lines as one array.
    let lines: Vec<Value> = list
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    insta::assert_json_snapshot!("journal_list", redacted(&Value::from(lines)));
}
