//! Running the built `whish` binary with a clean environment.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use whish_sandbox::Sandbox;

pub mod ops;

const VARS: [&str; 21] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "WHISH_TRANSFER_BASE_URL",
    "WHISH_TRANSFER_USERNAME",
    "WHISH_TRANSFER_KEY",
    "WHISH_COLLECT_BASE_URL",
    "WHISH_COLLECT_CHANNEL",
    "WHISH_COLLECT_SECRET",
    "WHISH_COLLECT_WEBSITE_URL",
    "WHISH_TOPUP_BASE_URL",
    "WHISH_TOPUP_SESSION_ID",
    "WHISH_TOPUP_TOKEN",
    "WHISH_USER_AGENT",
    "WHISH_JOURNAL",
    "RUST_LOG",
];

/// What a run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// What a finished process printed and how it exited.
    pub fn of(out: std::process::Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// The settings of a sandbox as `(variable, value)` pairs.
pub fn sandbox_env(sb: &Sandbox) -> Vec<(String, String)> {
    sb.env_exports()
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim_matches('\'').to_owned()))
        .collect()
}

/// The command `whish args...` with only `env` set among the WHISH_* and proxy variables, run
/// by `runner` when one is given (`faketime -f +25h`: its program and arguments before the
/// binary's path).
pub fn whish_command(args: &[&str], env: &[(String, String)], runner: Option<&[&str]>) -> Command {
    let mut cmd = match runner {
        Some([program, before @ ..]) => {
            let mut c = Command::new(program);
            c.args(before).arg(env!("CARGO_BIN_EXE_whish"));
            c
        }
        _ => Command::new(env!("CARGO_BIN_EXE_whish")),
    };
    for v in VARS {
        cmd.env_remove(v);
    }
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
    let dir = std::env::temp_dir().join(format!(
        "whish-cli-test-{}-{}",
        std::process::id(),
        fastrand_suffix()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write");
    path
}

fn fastrand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
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

/// A small tmpfs, mounted at a fresh directory and unmounted when dropped: a disk that fills up.
pub struct Tmpfs(pub PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A tmpfs of `size` (`256k`), or None when it cannot be mounted here (not root): the tests
/// that need one say so and pass.
pub fn tmpfs(size: &str) -> Option<Tmpfs> {
    // The process and a counter: two tests of one binary mounting at the same instant must not
    // share a mount point (the first to finish would unmount the other's disk under it; CI saw
    // a results file vanish that way when the name was the process and the clock).
    let dir = std::env::temp_dir().join(format!(
        "whish-tmpfs-{}-{}",
        std::process::id(),
        fastrand_suffix()
    ));
    std::fs::create_dir_all(&dir).ok()?;
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(Tmpfs(dir))
}

/// A sandbox whose transfer account has 10 000 000 USD and limits as high: a payout batch is
/// never stopped by the account.
pub async fn funded_sandbox() -> Sandbox {
    let plenty = whish::Decimal::from(10_000_000u64);
    Sandbox::builder()
        .transfer_balance("USD", plenty)
        .limits("USD", plenty, plenty)
        .start()
        .await
        .expect("sandbox")
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

/// A lenient sandbox (local callback addresses accepted) and its settings, with a journal of
/// the test's own named `file` (in a fresh temporary directory).
pub async fn lenient_sandbox_with_journal(file: &str) -> (Sandbox, Vec<(String, String)>) {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let journal = temp_file("journal.sqlite", "").with_file_name(file);
    let mut env = sandbox_env(&sb);
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
