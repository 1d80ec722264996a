//! The journals the tests run on (a fresh SQLite file always; a fresh PostgreSQL database when
//! a server is given), and SDK clients pointed at a sandbox.

#![allow(dead_code)]

use std::time::Duration;

use rust_decimal::Decimal;
use whish_core::{Amount, ClientSettings, Currency, Policy, RetryPolicy, SecretString, Timeouts};
use whish_hosted_collect::{
    CollectClient, CollectUrls, FailureCallbackUrl, FailureRedirectUrl, NewPayment,
    SuccessCallbackUrl, SuccessRedirectUrl,
};
use whish_intl_topup::TopupClient;
use whish_journal::Journal;
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
    LastName, Reason, SendRequest, Sender, SourceOfFunds, TransferClient,
};
use whish_sandbox::Sandbox;

/// The lease of the tests: short, so that an entry a "crashed" journal held comes back soon.
pub const LEASE: Duration = Duration::from_millis(300);

/// A place for one test's journal.
#[derive(Debug, Clone)]
pub enum Place {
    /// A SQLite file.
    Sqlite(String),
    /// A fresh database on the test server.
    Postgres(String),
}

impl Place {
    pub fn url(&self) -> &str {
        match self {
            Place::Sqlite(u) | Place::Postgres(u) => u,
        }
    }

    /// Open it as a new process would: its own connections, its own lease owner.
    pub async fn open(&self) -> Journal {
        Journal::builder(self.url())
            .lease(LEASE)
            .open()
            .await
            .expect("open the journal")
    }

    /// Open it as [`Place::open`] does, with a lease no renewal misses however loaded the
    /// machine: for a test whose subject is not a lease running out (that fault is the model
    /// checker's, where a takeover resends under the same key while the first send is out).
    pub async fn open_steady(&self) -> Journal {
        Journal::builder(self.url())
            .lease(Duration::from_secs(60))
            .open()
            .await
            .expect("open the journal")
    }
}

/// A fresh SQLite file, and a fresh PostgreSQL database when a server is given. Without one,
/// the PostgreSQL half says plainly that it did not run; under `CI=true` that is a failure.
pub async fn places(test: &str) -> Vec<Place> {
    let dir = std::env::temp_dir().join(format!("whish-journal-{test}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut out = vec![Place::Sqlite(format!(
        "sqlite:{}",
        dir.join("journal.sqlite").display()
    ))];
    if let Some(admin) = whish_testkit::postgres_admin_url(test) {
        out.push(Place::Postgres(
            whish_testkit::fresh_postgres_database(&admin).await,
        ));
    }
    out
}

pub fn policy(retries: u32) -> Policy {
    Policy {
        retry: RetryPolicy {
            max_retries: retries,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(40),
        },
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            attempt: Duration::from_millis(1500),
        },
    }
}

fn ua() -> whish_core::UserAgent {
    "JournalTests/1.0 (https://shop.example.com; dev@shop.example.com)"
        .parse()
        .expect("user agent")
}

pub async fn sandbox() -> Sandbox {
    let plenty = Decimal::from(1_000_000u64);
    Sandbox::builder()
        .lenient(true)
        .transfer_balance("USD", plenty)
        .limits("USD", plenty, plenty)
        .collect_balance("USD", plenty)
        .topup_balance(plenty, Decimal::ZERO)
        .start()
        .await
        .expect("sandbox")
}

pub fn transfer_at(base: &str, sb: &Sandbox, retries: u32) -> TransferClient {
    transfer_with(base, sb, policy(retries))
}

/// A transfer client that waits up to 10 s for an answer: for calls meant to outlast leases.
pub fn patient_transfer(sb: &Sandbox) -> TransferClient {
    let mut patient = policy(0);
    patient.timeouts.attempt = Duration::from_secs(10);
    transfer_with(&sb.transfer_base_url(), sb, patient)
}

fn transfer_with(base: &str, sb: &Sandbox, policy: Policy) -> TransferClient {
    let c = sb.transfer_credentials();
    TransferClient::builder(ClientSettings::new(base).policy(policy))
        .username(c.username.clone())
        .key(SecretString::from(c.key.clone()))
        .build()
        .expect("transfer client")
}

pub fn transfer(sb: &Sandbox, retries: u32) -> TransferClient {
    transfer_at(&sb.transfer_base_url(), sb, retries)
}

pub fn collect(sb: &Sandbox, retries: u32) -> CollectClient {
    let c = sb.collect_credentials();
    CollectClient::builder(
        ClientSettings::new(sb.collect_base_url())
            .policy(policy(retries))
            .user_agent(ua())
            .allow_local_callbacks(),
    )
    .channel(c.channel.clone())
    .secret(SecretString::from(c.secret.clone()))
    .website_url(c.website_url.clone())
    .build()
    .expect("collect client")
}

pub fn topup(sb: &Sandbox, retries: u32) -> TopupClient {
    let c = sb.topup_credentials();
    TopupClient::builder(
        ClientSettings::new(sb.topup_base_url())
            .policy(policy(retries))
            .user_agent(ua()),
    )
    .session_id(SecretString::from(c.session_id.clone()))
    .token(SecretString::from(c.token.clone()))
    .build()
    .expect("topup client")
}

pub fn cash_send(dollars: i64) -> SendRequest {
    cash(dollars).into()
}

/// A cash-collection send whose fee is taken out of the amount (the receiver collects less).
pub fn cash_send_fee_deducted(dollars: i64) -> SendRequest {
    cash(dollars).deduct_fees(true).into()
}

fn cash(dollars: i64) -> CashCollectionSend {
    CashCollectionSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        Amount::new(Decimal::from(dollars)),
        Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        CashReceiver::new(
            Customer::new(
                FirstName::new("Rami"),
                LastName::new("Haddad"),
                "+96170123456",
            ),
            Identity::new(DateOfBirth::parse("07-03-1990").expect("date")),
        ),
        Reason::FamilySupport,
        SourceOfFunds::Salary,
    )
}

pub fn payment(cents: i64) -> NewPayment {
    NewPayment::new(
        Amount::new(Decimal::new(cents, 2)),
        Currency::Usd,
        CollectUrls::new(
            SuccessCallbackUrl::new("http://127.0.0.1:9/ok").expect("url"),
            FailureCallbackUrl::new("http://127.0.0.1:9/ko").expect("url"),
            SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
            FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
        ),
    )
}

/// How many transfers the sandbox holds for this Request-id.
pub fn transfers_with(sb: &Sandbox, request_id: i64) -> usize {
    sb.transfers()
        .iter()
        .filter(|t| t.request_id == request_id)
        .count()
}

/// The arguments that run one test of this binary alone, its output shown, in a child process
/// (after `std::env::current_exe()`): `module` is the test's `module_path!()`.
pub fn child_test_args(module: &str, test: &str) -> [String; 3] {
    let module = module.split_once("::").map_or("", |(_, m)| m);
    [
        "--exact".to_owned(),
        format!("{module}::{test}"),
        "--nocapture".to_owned(),
    ]
}

/// How many requests of `endpoint` reached the sandbox.
pub fn calls(sb: &Sandbox, endpoint: whish_sandbox::Endpoint) -> usize {
    sb.requests()
        .iter()
        .filter(|r| r.endpoint == endpoint)
        .count()
}

/// Until `n` requests of `endpoint` reached the sandbox (a call of another task is in flight),
/// for at most 10 s.
pub async fn until_calls(sb: &Sandbox, endpoint: whish_sandbox::Endpoint, n: usize) {
    let started = std::time::Instant::now();
    while calls(sb, endpoint) < n && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(calls(sb, endpoint) >= n, "setup: the call never came");
}

/// Until the journal holds an entry for the request (another task recorded it), for at most
/// 10 s.
pub async fn until_entry(
    journal: &Journal,
    service: whish_journal::Service,
    operation: whish_journal::Operation,
    key: &str,
) {
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(_)) = journal.entry(service, operation, key).await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("setup: the entry of {key} was never recorded");
}

/// The state of one request's entry, which the test expects to be there.
pub async fn state_of(
    journal: &Journal,
    service: whish_journal::Service,
    operation: whish_journal::Operation,
    key: &str,
) -> whish_journal::State {
    entry_of(journal, service, operation, key).await.state
}

/// The entry of one request, which the test expects to be there.
pub async fn entry_of(
    journal: &Journal,
    service: whish_journal::Service,
    operation: whish_journal::Operation,
    key: &str,
) -> whish_journal::Entry {
    journal
        .entry(service, operation, key)
        .await
        .expect("read the journal")
        .expect("an entry")
}

/// Two sends waiting for the operator: `lost` never reached the service (its request dropped),
/// `applied` did (its reply dropped); a recovery with a deadline of zero sent both there,
/// unsent. Asserts the setup.
pub async fn lost_and_applied_for_the_operator(
    sb: &Sandbox,
    journal: &Journal,
    lost_dollars: i64,
    applied_dollars: i64,
) -> (
    whish_money_transfer::PreparedTransfer,
    whish_money_transfer::PreparedTransfer,
) {
    use whish_journal::{Clients, Recovery};
    use whish_sandbox::{Endpoint, Fault};
    let t = journal.transfer(transfer(sb, 0));
    let lost = t
        .client()
        .prepare_send(cash_send(lost_dollars))
        .expect("prepare");
    sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
    assert!(t.send(&lost).await.expect_err("dropped").outcome_unknown());
    let applied = t
        .client()
        .prepare_send(cash_send(applied_dollars))
        .expect("prepare");
    sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    assert!(
        t.send(&applied)
            .await
            .expect_err("dropped")
            .outcome_unknown()
    );
    assert_eq!(transfers_with(sb, lost.request_id().get()), 0, "setup");
    assert_eq!(transfers_with(sb, applied.request_id().get()), 1, "setup");
    let report = journal
        .recover(
            &Clients::new().transfer(transfer(sb, 0)),
            &Recovery::new().deadline(Duration::ZERO),
        )
        .await
        .expect("recover");
    assert_eq!(report.needs_operator, 2, "setup: {report:?}");
    (lost, applied)
}

/// Run `sql` on the place's journal directly (a row spoiled by hand or by a bad write, a
/// lease set by hand); the rows it changed.
pub async fn journal_sql(place: &Place, sql: &str) -> u64 {
    use sqlx::Connection;
    match place {
        Place::Sqlite(url) => {
            let mut c = sqlx::SqliteConnection::connect(url).await.expect("connect");
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                .execute(&mut c)
                .await
                .expect("setup: change the journal")
                .rows_affected()
        }
        Place::Postgres(url) => {
            let mut c = sqlx::PgConnection::connect(url).await.expect("connect");
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                .execute(&mut c)
                .await
                .expect("setup: change the journal")
                .rows_affected()
        }
    }
}

/// Make every insert of an intent fail on the place's journal, as a full disk would (`on`),
/// or stop it.
pub async fn intent_writes_fail(place: &Place, on: bool) {
    let sql = match (place, on) {
        (Place::Sqlite(_), true) => {
            "CREATE TRIGGER whish_test_fail BEFORE INSERT ON whish_journal_entries \
             WHEN NEW.state = 'intended' BEGIN SELECT RAISE(ABORT, 'no space left'); END"
        }
        (Place::Sqlite(_), false) => "DROP TRIGGER whish_test_fail",
        (Place::Postgres(_), true) => {
            "CREATE FUNCTION whish_test_fail() RETURNS trigger AS $$ BEGIN \
             IF NEW.state = 'intended' THEN RAISE EXCEPTION 'no space left'; END IF; \
             RETURN NEW; END $$ LANGUAGE plpgsql; \
             CREATE TRIGGER whish_test_fail BEFORE INSERT ON whish_journal_entries \
             FOR EACH ROW EXECUTE FUNCTION whish_test_fail()"
        }
        (Place::Postgres(_), false) => {
            "DROP TRIGGER whish_test_fail ON whish_journal_entries; DROP FUNCTION whish_test_fail()"
        }
    };
    journal_sql(place, sql).await;
}

/// `n` entries of another service, refused, newer than everything before them.
pub async fn fill(place: &Place, n: u32) {
    let batch = uuid::Uuid::new_v4().simple().to_string();
    let values = format!(
        "'hosted-collect', 'create', 'filler-{batch}-' || i, 'refused', 1, 0, 0, 'elsewhere'"
    );
    let sql = match place {
        Place::Sqlite(_) => format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n}) \
             INSERT INTO whish_journal_entries \
             (service, operation, idem_key, state, attempts, created_ms, updated_ms, target, request) \
             SELECT {values}, X'7B7D' FROM n"
        ),
        Place::Postgres(_) => format!(
            "INSERT INTO whish_journal_entries \
             (service, operation, idem_key, state, attempts, created_ms, updated_ms, target, request) \
             SELECT {values}, '\\x7b7d'::bytea FROM generate_series(1, {n}) AS i"
        ),
    };
    assert_eq!(journal_sql(place, &sql).await, u64::from(n));
}

/// `Journal::abandon` of a money-transfer send, which the test expects to answer.
pub async fn abandon_send(
    journal: &Journal,
    clients: &whish_journal::Clients,
    key: &str,
    why: &str,
) -> whish_journal::Abandoned {
    journal
        .abandon(
            clients,
            whish_journal::Service::MoneyTransfer,
            whish_journal::Operation::Send,
            key,
            why,
        )
        .await
        .expect("abandon")
}
