//! What the batch tests share: a funded sandbox, a client with short timeouts, a
//! payouts file, a journal per process with a short lease, and a run that collects its rows.
#![allow(dead_code, unused_imports)]

pub mod proxy;

pub use std::io::Write;
pub use std::path::{Path, PathBuf};
pub use std::time::Duration;

pub use rust_decimal::Decimal;
pub use whish_core::{ClientSettings, Policy, RetryPolicy, SecretString, Timeouts};
pub use whish_journal::Journal;
pub use whish_money_transfer::{CountryId, Customer, FirstName, LastName, TransferClient};
pub use whish_payouts::{Batch, BatchError, Defaults, RowResult, RunOptions};
pub use whish_sandbox::Sandbox;

pub const LEASE: Duration = Duration::from_millis(300);

/// A fresh directory for one test.
pub fn dir(test: &str) -> PathBuf {
    whish_testkit::temp_dir(&format!("whish-payouts-{test}"))
}

/// [`whish_testkit::funded_sandbox`]: `balance` USD under limits of 10 000 000.
pub async fn sandbox(balance: u64) -> Sandbox {
    whish_testkit::funded_sandbox(balance).await
}

pub fn client_at(base: &str, user: &str, key: &str) -> TransferClient {
    TransferClient::builder(ClientSettings::new(base).policy(Policy {
        retry: RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(20),
        },
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            attempt: Duration::from_millis(400),
        },
    }))
    .username(user.to_owned())
    .key(SecretString::from(key.to_owned()))
    .build()
    .expect("client")
}

pub fn client(sb: &Sandbox) -> TransferClient {
    let c = sb.transfer_credentials();
    client_at(&sb.transfer_base_url(), &c.username, &c.key)
}

pub fn defaults() -> Defaults {
    Defaults::new()
        .from_country(CountryId::LEBANON)
        .sender(Customer::new(
            FirstName::new("Relief"),
            LastName::new("Org"),
            "+9611000000",
        ))
}

pub const HEADER: &str = "reference,receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds";

pub fn csv_rows(n: usize, amount: &str) -> String {
    let mut s = format!("{HEADER}\n");
    for i in 0..n {
        s.push_str(&format!(
            "AID-{i:05},Rami,Haddad,+9617012{i:04},07-03-1990,{amount},USD,Family Support,Savings\n"
        ));
    }
    s
}

pub fn write(path: &Path, text: &str) {
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("write file");
}

pub fn url(d: &Path) -> String {
    format!("sqlite:{}", d.join("journal.sqlite").display())
}

/// A new process's journal: its own connections and lease owner, a short lease.
pub async fn journal(d: &Path) -> Journal {
    Journal::builder(url(d))
        .lease(LEASE)
        .open()
        .await
        .expect("journal")
}

pub async fn run(
    batch: &Batch,
    j: &Journal,
    c: &TransferClient,
    options: &RunOptions,
) -> (
    Result<whish_payouts::RunSummary, BatchError>,
    Vec<RowResult>,
) {
    let mut results = Vec::new();
    let summary = batch
        .run(j, c, options, &mut |r| {
            results.push(r.clone());
            Ok(())
        })
        .await;
    results.sort_by_key(|r| r.line);
    (summary, results)
}
