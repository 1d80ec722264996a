//! Running the built `whish` binary with a clean environment.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use whish_sandbox::Sandbox;

pub mod cancel;
pub mod ops;

pub use whish_testkit::Run;

/// `whish transfer fees` of 100 USD sent from Lebanon (country 1).
pub const QUOTE_100_USD: [&str; 8] = [
    "transfer",
    "fees",
    "--from-country",
    "1",
    "--currency",
    "USD",
    "--amount",
    "100",
];

/// The command `whish args...` with only `env` set among the WHISH_* and proxy variables, run
/// by `runner` when one is given (`faketime -f +25h`: its program and arguments before the
/// binary's path).
pub fn whish_command(args: &[&str], env: &[(String, String)], runner: Option<&[&str]>) -> Command {
    let mut cmd = whish_testkit::clean_command(env!("CARGO_BIN_EXE_whish"), runner);
    if !env.iter().any(|(k, _)| k == "WHISH_JOURNAL") {
        // Never the user's own journal: one file per test binary run.
        cmd.env("WHISH_JOURNAL", test_journal());
    }
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
    cmd
}

/// Run `whish args...` with only `env` set among the WHISH_* and proxy variables. Blocking: call it from
/// `spawn_blocking` when a sandbox runs in the same test.
pub fn whish_blocking(args: &[&str], env: &[(String, String)]) -> Run {
    Run::of(whish_command(args, env, None).output().expect("run whish"))
}

/// The journal the commands of this test binary record in, unless a test names its own.
pub fn test_journal() -> String {
    let dir = std::env::temp_dir().join(format!("whish-cli-journal-{}", std::process::id()));
    format!("sqlite:{}", dir.join("journal.sqlite").display())
}

/// [`whish_blocking`] off the async runtime.
pub async fn whish(args: &[&str], env: &[(String, String)]) -> Run {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let env = env.to_vec();
    tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        whish_blocking(&a, &env)
    })
    .await
    .expect("join")
}

/// A file in a fresh temporary directory.
pub fn temp_file(name: &str, contents: &str) -> PathBuf {
    whish_testkit::temp_file("whish-cli-test", name, contents)
}

/// A spec-shaped cash-collection send body.
pub fn cash_body(amount: &str) -> String {
    format!(
        r#"{{
  "paymentMode": "CASH_COLLECTION",
  "fromCountry": 1,
  "toCountry": 1,
  "currencyId": 2,
  "amount": {amount},
  "sender": {{"firstName": "John", "lastName": "Smith", "phone": "+14155550100"}},
  "receiver": {{"firstName": "Rami", "lastName": "Haddad", "phone": "+96170123456",
               "identity": {{"dateBirth": "07-03-1990"}}}},
  "deductFees": false,
  "reason": "Family Support",
  "sourceOfFunds": "Salary"
}}"#
    )
}

/// The batch-level sender options of `whish payouts`, as the payouts tests give them.
pub const SENDER: [&str; 8] = [
    "--from-country",
    "1",
    "--sender-first-name",
    "Relief",
    "--sender-last-name",
    "Org",
    "--sender-phone",
    "+9611000000",
];

/// A payouts file of `rows` cash-collection rows, references `{prefix}{i}` and phones
/// `{phone}{i}` (`i` zero-padded to `width`), amounts 20 to 26 USD.
pub fn cash_payouts_file(
    name: &str,
    prefix: &str,
    phone: &str,
    width: usize,
    rows: usize,
) -> PathBuf {
    let mut text = String::from(
        "reference,payment_mode,receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds\n",
    );
    for i in 0..rows {
        text.push_str(&format!(
            "{prefix}{i:0width$},CASH_COLLECTION,Hiba,Mansour,{phone}{i:0width$},05-06-1991,{},USD,Family Support,Savings\n",
            20 + i % 7
        ));
    }
    temp_file(name, &text)
}

/// A sandbox whose transfer account has 10 000 000 USD and limits as high: a payout batch is
/// never stopped by the account.
pub async fn funded_sandbox() -> Sandbox {
    whish_testkit::funded_sandbox(10_000_000).await
}

/// `whish collect create` of 12.50 USD under `external_id`, with loopback callbacks allowed.
pub fn create_args(external_id: &str) -> Vec<String> {
    [
        "collect",
        "create",
        "--amount",
        "12.5",
        "--currency",
        "USD",
        "--external-id",
        external_id,
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

/// `transfer send` of `body` under `id` whose one attempt meets `fault` (a request or a reply
/// lost): exit 4, the outcome unknown, the entry left open.
pub async fn lost_send(
    sb: &Sandbox,
    env: &[(String, String)],
    body: &str,
    id: &str,
    fault: whish_sandbox::Fault,
) {
    sb.inject(whish_sandbox::Endpoint::TransferSend, fault, 1);
    let lost = whish(
        &[
            "transfer",
            "send",
            "--body",
            body,
            "--request-id",
            id,
            "--retries",
            "0",
        ],
        env,
    )
    .await;
    assert_eq!(lost.code, 4, "setup, an unknown outcome: {lost:?}");
}

/// A lenient sandbox (local callback addresses accepted) and its settings, with a journal of
/// the test's own named `file` (in a fresh temporary directory).
pub async fn lenient_sandbox_with_journal(file: &str) -> (Sandbox, Vec<(String, String)>) {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let journal = temp_file("journal.sqlite", "").with_file_name(file);
    let mut env = sb.env_vars();
    env.push(journal_at(&journal));
    (sb, env)
}

/// `whish payouts SUB FILE --batch BATCH --results RESULTS`, with the batch's sender
/// ([`SENDER`]).
pub fn payouts_cmd<'a>(
    sub: &'a str,
    file: &'a str,
    batch: &'a str,
    results: &'a str,
) -> Vec<&'a str> {
    let mut a = vec!["payouts", sub, file, "--batch", batch, "--results", results];
    a.extend(SENDER);
    a
}

/// The `WHISH_JOURNAL` setting of a SQLite journal at `path`.
pub fn journal_at(path: &std::path::Path) -> (String, String) {
    (
        "WHISH_JOURNAL".to_owned(),
        format!("sqlite:{}", path.display()),
    )
}

/// Borrowed arguments for [`whish`].
pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The journal URL `env` names (`WHISH_JOURNAL`).
pub fn journal_url(env: &[(String, String)]) -> String {
    env.iter()
        .find(|(k, _)| k == "WHISH_JOURNAL")
        .map(|(_, v)| v.clone())
        .expect("a journal in the environment")
}

/// Run `sql` on the SQLite journal `env` names, as another program would (a test's setup: a
/// row spoiled, or written as a release of the journal writes it): the rows it changed.
pub async fn sql_on_journal(env: &[(String, String)], sql: &str) -> u64 {
    use sqlx::Connection;
    let mut c = sqlx::SqliteConnection::connect(&journal_url(env))
        .await
        .expect("connect");
    let n = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut c)
        .await
        .expect("sql")
        .rows_affected();
    c.close().await.expect("close");
    n
}
