//! A first attempt of `transfer send`, `topup pay` and `collect
//! refund` answered by a page without the envelope, applied behind it (`AppliedPage(403)`,
//! `AppliedPage(404)`) or not (`Page(404)`). The command must say unknown (exit 4), the journal
//! `may-have-arrived`; `journal recover` then settles it (exit 0, `accepted`); the same command
//! run again is the same request (exit 0); the sandbox holds it once.

use crate::support::ops::{OPS, command};
use crate::support::*;
use whish_sandbox::{Endpoint, Fault, Sandbox};

async fn state_of(env: &[(String, String)], key: &str) -> Vec<String> {
    let shown = whish(&["journal", "show", key], env).await;
    shown
        .json()
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| format!("{} {}", e["operation"], e["state"]))
                .collect()
        })
        .unwrap_or_default()
}

/// How many times the sandbox holds the effect of `key` for `op`.
fn held(sb: &Sandbox, op: &str, key: &str) -> (usize, String) {
    match op {
        "send" => {
            let n = sb
                .transfers()
                .iter()
                .filter(|t| t.request_id.to_string() == key)
                .count();
            (n, format!("{n} transfer(s)"))
        }
        "pay" => {
            let n = sb.sales().iter().filter(|s| s.external_id == key).count();
            (n, format!("{n} sale(s)"))
        }
        _ => {
            let p: Vec<_> = sb
                .payments()
                .into_iter()
                .filter(|p| p.external_id == key)
                .collect();
            let refunded = p
                .iter()
                .filter(|p| p.collect_status.to_ascii_lowercase().contains("refund"))
                .count();
            (refunded, format!("{p:?}"))
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_a_first_money_moving_attempt_is_unknown_then_settled_once() {
    let (sb, env) = lenient_sandbox_with_journal("page-journal.sqlite").await;
    let faults = [
        (Fault::AppliedPage(403), true),
        (Fault::AppliedPage(404), true),
        (Fault::Page(404), false),
    ];
    let mut failures = Vec::new();
    let mut n = 0;
    for op in OPS
        .iter()
        .filter(|op| ["send", "pay", "refund"].contains(&op.service_flag))
    {
        for (fault, applied) in faults {
            n += 1;
            let (args, key) = command(&sb, &env, op, n).await;
            let endpoint = op.endpoint;
            let op = op.service_flag;
            let a = strs(&args);
            sb.inject(endpoint, fault, 1);
            let first = whish(&a, &env).await;
            let s1 = state_of(&env, &key).await;
            let h1 = held(&sb, op, &key);
            let recover = whish(&["journal", "recover"], &env).await;
            let s2 = state_of(&env, &key).await;
            let again = whish(&a, &env).await;
            let h2 = held(&sb, op, &key);
            let s3 = state_of(&env, &key).await;
            let what = format!(
                "{op} / {fault:?}: first exit {} {}; journal {s1:?}; sandbox {}; recover exit {} ({}) journal {s2:?}; again exit {} {}; sandbox {}; journal {s3:?}",
                first.code,
                first.stdout.trim(),
                h1.1,
                recover.code,
                recover.stdout.trim(),
                again.code,
                again.stdout.trim(),
                h2.1
            );
            let ok = first.code == 4
                && s1.iter().any(|s| s.contains("may-have-arrived"))
                && (h1.0 == 1) == applied
                && recover.code == 0
                && again.code == 0
                && h2.0 == 1;
            if !ok {
                failures.push(what);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `transfer send` met by a page on its first attempt, then `transfer resend` (the documented
/// next step): exit 0, `confirmed` when it had been applied, `sent` when not; one transfer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_answered_by_a_page_then_resent_is_one_transfer() {
    let (sb, env) = lenient_sandbox_with_journal("resend-journal.sqlite").await;
    let mut failures = Vec::new();
    for (i, (fault, result)) in [
        (Fault::AppliedPage(403), "confirmed"),
        (Fault::Page(404), "sent"),
    ]
    .into_iter()
    .enumerate()
    {
        let body = temp_file("send.json", &cash_body("100"));
        let body = body.display().to_string();
        let id = (990_200_000 + i).to_string();
        sb.inject(Endpoint::TransferSend, fault, 1);
        let first = whish(
            &["transfer", "send", "--body", &body, "--request-id", &id],
            &env,
        )
        .await;
        let resend = whish(
            &["transfer", "resend", "--body", &body, "--request-id", &id],
            &env,
        )
        .await;
        let (n, _) = held(&sb, "send", &id);
        let state = state_of(&env, &id).await;
        let ok = first.code == 4
            && resend.code == 0
            && resend.json()["result"] == result
            && n == 1
            && state.iter().all(|s| s.contains("accepted"));
        if !ok {
            failures.push(format!(
                "{fault:?}: send exit {} {}; resend exit {} {}; sandbox {n} transfer(s); journal {state:?}",
                first.code,
                first.stdout.trim(),
                resend.code,
                resend.stdout.trim()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
