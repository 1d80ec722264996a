//! Every command prints every field its service documents for the answer: the lists below are
//! the specifications' response tables, field by field. A field is printed with its documented
//! name, `null` when the answer did not carry it, never left out. (`transfer send` and
//! `resend` are held to theirs in `operators.rs`; `topup pay`'s sold items in
//! `end_to_end.rs`.)

use serde_json::Value;

use crate::support::*;

/// The keys `v` lacks among `documented`.
fn missing<'a>(v: &Value, documented: &[&'a str]) -> Vec<&'a str> {
    documented
        .iter()
        .copied()
        .filter(|k| v.get(*k).is_none())
        .collect()
}

/// Run the command and check each documented key at `at` (a JSON pointer to the object, or to
/// the first element of the list the service returns).
async fn check(env: &[(String, String)], args: &[&str], at: &str, documented: &[&str]) -> Value {
    let run = whish(args, env).await;
    assert_eq!(run.code, 0, "{args:?}: {run:?}");
    let v = run.json();
    let item = v
        .pointer(at)
        .unwrap_or_else(|| panic!("{args:?}: nothing at {at}: {v}"));
    let lacking = missing(item, documented);
    assert!(
        lacking.is_empty(),
        "{args:?} does not print {lacking:?}: {item}"
    );
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_field_of_every_answer_is_printed() {
    let (_sb, env) = lenient_sandbox_with_journal("output-fields.sqlite").await;
    let body = temp_file("fields-body.json", &cash_body("60"))
        .display()
        .to_string();
    let sent = whish(&["transfer", "send", "--body", &body], &env).await;
    assert_eq!(sent.code, 0, "{sent:?}");
    let ltn = sent.json()["ltnNumber"].as_str().expect("ltn").to_owned();
    check(&env, &QUOTE_100_USD, "", &["fees", "amount", "totalAmount"]).await;
    let status = ["transfer", "status", "--ltn", &ltn];
    let four = ["ltnNumber", "transferId", "status", "receiverIdentity"];
    check(&env, &status, "", &four).await;
    let countries = ["transfer", "countries"];
    let country = ["id", "name", "code", "defaultCurrencyId", "dateCreation"];
    check(&env, &countries, "/0", &country).await;
    let modes = whish(&["transfer", "modes"], &env).await;
    assert!(
        modes.json().as_array().is_some_and(|m| m.len() == 2),
        "{modes:?}"
    );
    let now = time::OffsetDateTime::now_utc();
    let day = |d: time::OffsetDateTime| {
        d.format(time::macros::format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second]"
        ))
        .expect("format")
    };
    let (from, to) = (
        day(now - time::Duration::days(1)),
        day(now + time::Duration::days(1)),
    );
    let activity = ["transfer", "activity", "--from", &from, "--to", &to];
    let entry = [
        "id",
        "status",
        "amount",
        "fee",
        "total",
        "currency",
        "date",
        "requestId",
    ];
    check(&env, &activity, "/0", &entry).await;
    let statement = ["transfer", "statement", "--from", &from, "--to", &to];
    let per_currency = check(&env, &statement, "/0", &["transactions", "currentBalance"]).await;
    let line = [
        "id",
        "type",
        "debit",
        "credit",
        "balance",
        "currency",
        "date",
        "requestId",
    ];
    let lacking = missing(
        per_currency.pointer("/0/transactions/0").expect("a line"),
        &line,
    );
    assert!(lacking.is_empty(), "statement lines lack {lacking:?}");
    let current = per_currency
        .pointer("/0/currentBalance")
        .expect("current balance");
    assert!(
        missing(current, &["currency", "balance", "date"]).is_empty(),
        "{current}"
    );
    let cancel = ["transfer", "cancel", "--ltn", &ltn];
    check(&env, &cancel, "", &four).await;

    let governorates = ["locations", "governorates"];
    let g = check(&env, &governorates, "/0", &["id", "label", "districts"]).await;
    let district = g.pointer("/0/districts/0").expect("a district");
    assert!(
        missing(district, &["id", "governorate", "label"]).is_empty(),
        "{district}"
    );
    let shops = ["locations", "shops"];
    let shop = [
        "id",
        "name",
        "phone",
        "address",
        "latitude",
        "longitude",
        "url",
        "type",
        "workingHours",
    ];
    check(&env, &shops, "/0", &shop).await;

    let balance = ["collect", "balance", "--currency", "USD"];
    check(&env, &balance, "", &["balance"]).await;
    let create = create_args("fields-order-1");
    let created = check(
        &env,
        &strs(&create),
        "",
        &["collectUrl", "retrieved", "dialog"],
    )
    .await;
    assert!(created["collectUrl"].is_string(), "{created}");
    let status = [
        "collect",
        "status",
        "--currency",
        "USD",
        "--external-id",
        "fields-order-1",
    ];
    check(&env, &status, "", &["collectStatus", "payerPhoneNumber"]).await;

    let topup_balance = ["topup", "balance"];
    check(&env, &topup_balance, "", &["balance", "voidBalance"]).await;
    let options = [
        "topup",
        "options",
        "--provider",
        "gift-voucher",
        "--target",
        "a@b.co",
    ];
    let fetched = check(&env, &options, "", &["target", "options"]).await;
    let option = fetched.pointer("/options/0").expect("an option");
    let documented = [
        "id",
        "displayName",
        "amount",
        "price",
        "currency",
        "metadata",
    ];
    assert!(missing(option, &documented).is_empty(), "{option}");
}
