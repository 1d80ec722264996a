//! Through the command: an identifier a script reads back is the identifier the command
//! printed, and a resend under a mistyped Request-id never pays the same transfer twice.

use serde_json::Value;

use crate::support::*;

/// The Request-id the command printed on stdout, as a script reads it (jq keeps strings as
/// they are; a number above 2^53 it would round).
fn printed_id(v: &Value) -> String {
    v["requestId"]
        .as_str()
        .unwrap_or_else(|| panic!("a Request-id above 2^53 is printed as a string: {v}"))
        .to_owned()
}

#[tokio::test]
async fn a_large_request_id_is_printed_exactly_and_a_resend_under_another_id_is_refused() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let journal = temp_file("identifiers.sqlite", "");
    let _ = std::fs::remove_file(&journal);
    env.push(journal_at(&journal));
    let body = temp_file("identifiers-body.json", &cash_body("120"))
        .display()
        .to_string();

    // A Request-id above 2^53 (a generated one is below it once in 512), one a double cannot
    // hold.
    let large = ((1u64 << 53) + 1).to_string();
    let sent = whish(
        &["transfer", "send", "--body", &body, "--request-id", &large],
        &env,
    )
    .await;
    assert_eq!(sent.code, 0, "{sent:?}");
    let id = printed_id(&sent.json());
    assert_eq!(id, large);
    assert!(sent.stderr.contains(&id), "{sent:?}");
    assert_eq!(sb.transfers().len(), 1);

    // What jq 1.6 would have printed had the id been a number: the nearest double.
    let rounded = format!("{}", id.parse::<u64>().expect("digits") as f64 as u64);
    let wrong = if rounded == id {
        (id.parse::<u64>().expect("digits") + 1).to_string()
    } else {
        rounded
    };
    let resent = whish(
        &[
            "transfer",
            "resend",
            "--body",
            &body,
            "--request-id",
            &wrong,
        ],
        &env,
    )
    .await;
    assert_eq!(resent.code, 2, "{resent:?}");
    assert!(
        resent.stderr.contains(&id) && resent.stderr.contains(&wrong),
        "both ids are named: {resent:?}"
    );
    // A script reads the refusal and the Request-id to resend from stdout, exactly.
    let refusal = resent.json();
    assert_eq!(refusal["outcome"], "not-sent", "{refusal}");
    assert_eq!(refusal["error"], "same-body-elsewhere", "{refusal}");
    assert_eq!(refusal["idempotencyKey"], wrong.as_str(), "{refusal}");
    assert_eq!(refusal["heldUnder"], id.as_str(), "{refusal}");
    assert_eq!(refusal["heldState"], "accepted", "{refusal}");
    assert_eq!(sb.transfers().len(), 1, "no second transfer");

    // Under its own id, the resend is the known resend: confirmed, still one transfer.
    let own = whish(
        &["transfer", "resend", "--body", &body, "--request-id", &id],
        &env,
    )
    .await;
    assert_eq!(own.code, 0, "{own:?}");
    assert_eq!(printed_id(&own.json()), id);
    assert_eq!(sb.transfers().len(), 1);

    // Another process's journal knows nothing of the body: its resend goes out (the spec's
    // retry rule), here as the transfer it names.
    let elsewhere = temp_file("identifiers-other.sqlite", "");
    let _ = std::fs::remove_file(&elsewhere);
    let mut other = sb.env_vars();
    other.push(journal_at(&elsewhere));
    let theirs = whish(
        &["transfer", "resend", "--body", &body, "--request-id", &id],
        &other,
    )
    .await;
    assert_eq!(theirs.code, 0, "{theirs:?}");
    assert_eq!(sb.transfers().len(), 1);

    // Listings print the ids exactly too.
    let listed = whish(&["journal", "list"], &env).await;
    assert!(
        listed.stdout.contains(&format!("\"key\":\"{id}\"")) || listed.stdout.contains(&id),
        "{listed:?}"
    );
}
