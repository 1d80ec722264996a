//! The command as operators use it: one JSON shape per command result whichever way it was
//! reached, help grouped by heading with a description on every flag, negative numbers read as
//! values, and no "store the key" line for a request that never left.

use std::collections::BTreeSet;

use crate::support::*;
use whish_sandbox::{Endpoint, Fault, Sandbox};

fn keys(v: &serde_json::Value) -> BTreeSet<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

const SEND_KEYS: [&str; 13] = [
    "outcome",
    "result",
    "requestId",
    "transferId",
    "ltnNumber",
    "status",
    "charges",
    "collectionAmount",
    "balance",
    "transactionId",
    "currency",
    "receiverIdentity",
    "dialog",
];

fn wallet_body(phone: &str) -> String {
    format!(
        r#"{{
  "paymentMode": "MOBILE_WALLET",
  "fromCountry": 1,
  "toCountry": 1,
  "currencyId": 2,
  "amount": 50,
  "sender": {{"firstName": "John", "lastName": "Smith", "phone": "+14155550100"}},
  "receiver": {{"firstName": "Rami", "lastName": "Haddad", "phone": "{phone}"}},
  "reason": "Family Support",
  "sourceOfFunds": "Salary"
}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_prints_one_shape_whether_sent_credited_or_confirmed_after_a_resend() {
    let sb = Sandbox::start().await.expect("sandbox");
    let env = sb.env_vars();
    let want: BTreeSet<String> = SEND_KEYS.iter().map(|k| (*k).to_owned()).collect();

    let cash = temp_file("cash.json", &cash_body("100"))
        .display()
        .to_string();
    let sent = whish(
        &[
            "transfer",
            "send",
            "--body",
            &cash,
            "--request-id",
            "661001",
        ],
        &env,
    )
    .await;
    assert_eq!(sent.code, 0, "{sent:?}");
    let sent = sent.json();
    assert_eq!(keys(&sent), want, "{sent}");
    assert_eq!(
        (sent["outcome"].as_str(), sent["result"].as_str()),
        (Some("accepted"), Some("sent"))
    );
    assert_eq!(sent["requestId"], 661001);

    let wallet = temp_file("wallet.json", &wallet_body(&sb.wallet_phones().credited))
        .display()
        .to_string();
    let credited = whish(
        &[
            "transfer",
            "send",
            "--body",
            &wallet,
            "--request-id",
            "661002",
        ],
        &env,
    )
    .await;
    assert_eq!(credited.code, 0, "{credited:?}");
    let credited = credited.json();
    assert_eq!(keys(&credited), want, "{credited}");
    assert_eq!(credited["result"], "credited");
    assert_eq!(
        credited["requestId"], 661002,
        "the wallet result has its Request-id"
    );

    // A reply lost after the transfer was made; the resend confirms it through status.
    sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    let lost = whish(
        &[
            "transfer",
            "send",
            "--body",
            &cash,
            "--request-id",
            "661003",
            "--retries",
            "0",
        ],
        &env,
    )
    .await;
    assert_eq!(lost.code, 4, "{lost:?}");
    let confirmed = whish(
        &[
            "transfer",
            "resend",
            "--body",
            &cash,
            "--request-id",
            "661003",
        ],
        &env,
    )
    .await;
    assert_eq!(confirmed.code, 0, "{confirmed:?}");
    let confirmed = confirmed.json();
    assert_eq!(keys(&confirmed), want, "{confirmed}");
    assert_eq!(confirmed["result"], "confirmed");
    assert_eq!(confirmed["status"], "SENT", "flat, as for a send");
    assert!(confirmed["ltnNumber"].is_string(), "{confirmed}");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collect_and_topup_results_carry_their_key_and_the_outcome() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let env = sb.env_vars();
    let create = create_args("ops-1");
    let first = whish(&strs(&create), &env).await;
    let replay = whish(&strs(&create), &env).await;
    for run in [&first, &replay] {
        assert_eq!(run.code, 0, "{run:?}");
        let v = run.json();
        assert_eq!(
            keys(&v),
            ["collectUrl", "dialog", "externalId", "outcome", "retrieved"]
                .map(String::from)
                .into(),
            "{v}"
        );
        assert_eq!(v["outcome"], "accepted");
        assert_eq!(v["externalId"], "ops-1");
    }
    sb.pay_link("ops-1").await.expect("paid");
    let refund = whish(
        &[
            "collect",
            "refund",
            "--currency",
            "USD",
            "--external-id",
            "ops-1",
        ],
        &env,
    )
    .await;
    assert_eq!(refund.code, 0, "{refund:?}");
    assert_eq!(
        keys(&refund.json()),
        ["dialog", "externalId", "outcome", "retrieved"]
            .map(String::from)
            .into()
    );

    let pay = whish(
        &[
            "topup",
            "pay",
            "--provider",
            "du-ae",
            "--target",
            "971501234567",
            "--option-id",
            "DU-1GB",
            "--external-id",
            "ops-pay-1",
        ],
        &env,
    )
    .await;
    assert_eq!(pay.code, 0, "{pay:?}");
    let v = pay.json();
    assert_eq!(v["outcome"], "accepted");
    assert_eq!(v["externalId"], "ops-pay-1");
    let item = &v["listOfSoldItems"][0];
    for field in ["picture", "pictureUrl", "printType", "viewType"] {
        assert!(item.get(field).is_some(), "{field} printed: {item}");
    }
    assert!(v.get("dialog").is_some());
    sb.shutdown().await;
}

#[test]
fn help_lists_the_commands_own_flags_first_then_its_own_services_settings_each_described() {
    let run = whish_blocking(&["topup", "pay", "--help"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let text = run.stdout;
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing from:\n{text}"))
    };
    // The command's own flags, then its own service's account settings, then global options.
    assert!(at("--provider") < at("Top-up account:"), "{text}");
    assert!(at("--option-id") < at("Top-up account:"));
    assert!(at("Top-up account:") < at("Global options:"));
    assert!(at("--topup-base-url") > at("Top-up account:"));
    // Another service's settings are not this command's.
    for (cmd, own, others) in [
        (
            &["topup", "pay"][..],
            "--topup-token",
            &["--transfer-key", "--collect-secret"][..],
        ),
        (
            &["transfer", "fees"],
            "--transfer-key",
            &["--topup-token", "--collect-secret"],
        ),
        (
            &["collect", "create"],
            "--collect-secret",
            &["--transfer-key", "--topup-token"],
        ),
        (
            &["payouts", "send"],
            "--transfer-key",
            &["--topup-token", "--collect-secret"],
        ),
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let help = whish_blocking(&args, &[]).stdout;
        assert!(help.contains(own), "{cmd:?}: {help}");
        for other in others {
            assert!(!help.contains(other), "{cmd:?} lists {other}: {help}");
        }
    }
    let recover = whish_blocking(&["journal", "recover", "--help"], &[]).stdout;
    for every in ["--transfer-key", "--collect-secret", "--topup-token"] {
        assert!(
            recover.contains(every),
            "recovery settles all three: {recover}"
        );
    }
    // Settings that come from the environment are not shown as required in the usage line.
    let usage = text
        .lines()
        .find(|l| l.starts_with("Usage:"))
        .expect("usage");
    assert!(!usage.contains("base-url"), "{usage}");
    // Every flag of every command has a description.
    for cmd in [
        &["transfer", "fees"][..],
        &["transfer", "send"],
        &["transfer", "status"],
        &["transfer", "cancel"],
        &["transfer", "activity"],
        &["collect", "create"],
        &["collect", "refund"],
        &["topup", "options"],
        &["topup", "pay"],
        &["locations", "shops"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let run = whish_blocking(&args, &[]);
        let mut lines = run.stdout.lines().peekable();
        while let Some(line) = lines.next() {
            let t = line.trim_start();
            if !t.starts_with("--") && !t.starts_with("-v") {
                continue;
            }
            // `--flag <V>  text`, or the text on the next line (long help).
            let described = t.split("  ").filter(|p| !p.trim().is_empty()).count() > 1
                || lines
                    .peek()
                    .is_some_and(|next| next.starts_with("          ") && !next.trim().is_empty());
            assert!(described, "{cmd:?}: `{t}` has no description");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_negative_amount_is_the_amount_message_not_an_unknown_flag() {
    let sb = Sandbox::start().await.expect("sandbox");
    let env = sb.env_vars();
    let run = whish(
        &[
            "transfer",
            "fees",
            "--from-country",
            "1",
            "--currency",
            "USD",
            "--amount",
            "-5",
        ],
        &env,
    )
    .await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("--amount") || run.stderr.contains("amount"),
        "{run:?}"
    );
    assert!(!run.stderr.contains("unexpected argument"), "{run:?}");
    assert!(sb.requests().is_empty(), "nothing was sent");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_store_the_key_line_when_the_journal_cannot_be_opened() {
    let sb = Sandbox::start().await.expect("sandbox");
    let mut env = sb.env_vars();
    env.push((
        "WHISH_JOURNAL".to_owned(),
        "sqlite:/proc/whish-cannot-write-here/journal.sqlite".to_owned(),
    ));
    let body = temp_file("send.json", &cash_body("100"))
        .display()
        .to_string();
    let run = whish(
        &[
            "transfer",
            "send",
            "--body",
            &body,
            "--request-id",
            "662001",
        ],
        &env,
    )
    .await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(!run.stderr.contains("store it"), "{run:?}");
    assert!(sb.transfers().is_empty());
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_list_is_newest_first_with_limit_state_since_and_a_table() {
    let sb = Sandbox::start().await.expect("sandbox");
    let mut env = sb.env_vars();
    let journal = temp_file("j.sqlite", "").with_file_name("list-journal.sqlite");
    env.push(journal_at(&journal));
    let body = temp_file("send.json", &cash_body("100"))
        .display()
        .to_string();
    for id in ["663001", "663002", "663003"] {
        let run = whish(
            &["transfer", "send", "--body", &body, "--request-id", id],
            &env,
        )
        .await;
        assert_eq!(run.code, 0, "{run:?}");
    }
    let keys_of = |stdout: &str| -> Vec<String> {
        stdout
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
            .map(|v| v["key"].as_str().expect("key").to_owned())
            .collect()
    };
    let newest = whish(&["journal", "list", "--limit", "2"], &env).await;
    assert_eq!(newest.code, 0, "{newest:?}");
    assert_eq!(
        keys_of(&newest.stdout),
        ["663003", "663002"],
        "the newest two"
    );
    let accepted = whish(&["journal", "list", "--state", "accepted"], &env).await;
    assert_eq!(keys_of(&accepted.stdout).len(), 3);
    let none = whish(&["journal", "list", "--state", "pending"], &env).await;
    assert!(none.stdout.trim().is_empty(), "{none:?}");
    let later = whish(&["journal", "list", "--since", "2999-01-01"], &env).await;
    assert_eq!(later.code, 0, "{later:?}");
    assert!(later.stdout.trim().is_empty(), "{later:?}");
    let earlier = whish(&["journal", "list", "--since", "2000-01-01 00:00:00"], &env).await;
    assert_eq!(keys_of(&earlier.stdout).len(), 3);
    let bad = whish(&["journal", "list", "--state", "done"], &env).await;
    assert_eq!(bad.code, 2, "{bad:?}");
    let table = whish(&["journal", "list", "--output", "table"], &env).await;
    assert_eq!(table.code, 0, "{table:?}");
    let header = table.stdout.lines().next().expect("a header");
    assert!(
        header.contains("key") && header.contains("state"),
        "{table:?}"
    );
    assert!(!table.stdout.contains('{'), "a table, not JSON: {table:?}");

    // A row this version cannot read is a line of its own when the listing selects it, and
    // is not when it lies beyond the listing.
    {
        use sqlx::Connection;
        let url = format!("sqlite:{}", journal.display());
        let mut c = sqlx::SqliteConnection::connect(&url)
            .await
            .expect("connect");
        let spoiled = sqlx::raw_sql(
            "UPDATE whish_journal_entries SET outcome = '{not json' WHERE idem_key = '663002'",
        )
        .execute(&mut c)
        .await
        .expect("spoil")
        .rows_affected();
        assert_eq!(spoiled, 1, "setup");
        c.close().await.expect("close");
    }
    let two = whish(&["journal", "list", "--limit", "2"], &env).await;
    assert_eq!(two.code, 0, "{two:?}");
    let lines: Vec<serde_json::Value> = two
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{two:?}");
    assert_eq!(lines[0]["key"], "663003");
    assert_eq!(
        (&lines[1]["key"], &lines[1]["state"]),
        (&"663002".into(), &"unreadable".into()),
        "{two:?}"
    );
    assert!(lines[1]["reason"].as_str().is_some_and(|r| !r.is_empty()));
    let one = whish(&["journal", "list", "--limit", "1"], &env).await;
    assert_eq!(keys_of(&one.stdout), ["663003"], "{one:?}");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_shows_nested_lists_as_tables_and_numbers_right_aligned() {
    let sb = Sandbox::start().await.expect("sandbox");
    let env = sb.env_vars();
    let body = temp_file("send.json", &cash_body("100"))
        .display()
        .to_string();
    for id in ["664001", "664002"] {
        let run = whish(
            &["transfer", "send", "--body", &body, "--request-id", id],
            &env,
        )
        .await;
        assert_eq!(run.code, 0, "{run:?}");
    }
    let run = whish(
        &[
            "transfer",
            "statement",
            "--from",
            "2000-01-01 00:00:00",
            "--to",
            "2100-01-01 00:00:00",
            "--currency",
            "USD",
            "--output",
            "table",
        ],
        &env,
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    let text = run.stdout;
    assert!(
        !text.contains('{') && !text.contains('['),
        "no JSON in a cell:\n{text}"
    );
    // The transactions are a table of their own, under their currency.
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_end().ends_with("transactions:"))
        .unwrap_or_else(|| panic!("a transactions table:\n{text}"));
    let header = lines[at + 1];
    assert!(
        header.contains("debit") && header.contains("credit"),
        "{text}"
    );
    // Money right-aligned: every row of the balance column ends where its header ends.
    let end = header.find("balance").expect("balance column") + "balance".len();
    let rows: Vec<&str> = lines[at + 2..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .copied()
        .collect();
    assert!(rows.len() >= 3, "{text}");
    for r in &rows {
        let cell_end = r[..end.min(r.len())].trim_end().len();
        assert_eq!(cell_end, end, "right-aligned: `{r}` in\n{text}");
    }
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_prints_one_line_per_call_without_colour_in_a_pipe() {
    let sb = Sandbox::start().await.expect("sandbox");
    let env = sb.env_vars();
    sb.inject(Endpoint::TransferFees, Fault::Page(502), 1);
    let run = whish(&[&["-v"][..], &QUOTE_100_USD].concat(), &env).await;
    assert_eq!(run.code, 0, "{run:?}");
    let calls: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("transfer.fees accepted after"))
        .collect();
    assert_eq!(calls.len(), 1, "one line for the call: {}", run.stderr);
    assert!(calls[0].contains("after 2 attempt(s) in"), "{}", calls[0]);
    assert!(
        !run.stderr.contains("resending"),
        "a resend is -vv detail: {}",
        run.stderr
    );
    assert!(
        !run.stderr.contains('\u{1b}'),
        "no colour codes in a pipe: {:?}",
        run.stderr
    );
    sb.shutdown().await;
}

/// The exit statuses a document lists: the numbers of its table rows `| N | ...`.
fn exit_rows(text: &str) -> Vec<u8> {
    text.lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split_once(" |"))
        .filter_map(|(n, _)| n.trim().parse().ok())
        .collect()
}

#[test]
fn the_crate_readme_the_guide_and_the_help_list_the_same_exit_statuses() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    let guide = std::fs::read_to_string(root.join("../../docs/cli.md")).expect("cli.md");
    let guide = &guide[guide.find("## Output and exit status").expect("section")..];
    let all: Vec<u8> = (0..=6).collect();
    assert_eq!(exit_rows(&readme), all, "{readme}");
    assert_eq!(exit_rows(guide), all);
    let help = whish_blocking(&["--help"], &[]).stdout;
    for code in all {
        assert!(help.contains(&format!("\n  {code}  ")), "{code}: {help}");
    }
}

#[test]
fn the_columns_table_names_each_column_before_its_description() {
    let run = whish_blocking(&["payouts", "columns", "--output", "table"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let header = run.stdout.lines().next().expect("header");
    assert!(header.starts_with("column"), "{header}");
    let first_row = run.stdout.lines().nth(1).expect("a row");
    assert!(
        first_row.len() < 400 && !first_row.starts_with(' '),
        "{first_row}"
    );
}
