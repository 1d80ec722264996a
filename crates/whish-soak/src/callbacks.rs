//! The receiver soak: the sandbox makes changes (cash collected, links paid, failed attempts,
//! refunds) whose callbacks reach `whish::callbacks` receivers running as child processes on
//! one journal, while faults hit them: the journal unreachable (PostgreSQL cut for a while, or
//! the SQLite disk full), status reads failing and slow, handlers failing, panicking and
//! hanging, receivers killed with SIGKILL at random and restarted, and (on PostgreSQL) two
//! receivers at once. The service's side redelivers every callback not answered 200.
//!
//! Each handler's one side effect is a line `pid ms key` appended to a log. At the end every
//! change the sandbox holds must be in it (lost 0), and a key twice only inside the documented
//! window: its first hand-on was by a process killed afterwards, or while the journal was
//! unreachable (the mark could not be written for a whole lease).
//!
//! `whish-soak --callbacks N [--journal postgres://...] [--outage SECS] [--seed S]`; the child
//! is `whish-soak callbacks-child JOURNAL PORT LOG SEED`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use whish::callbacks::{
    HandlerError, PaymentUpdate, Receiver, RetrySettings, ServeLimits, TransferNotification,
};
use whish::collect::{CollectClient, CollectUrls, NewPayment};
use whish::journal::Journal;
use whish::transfer::callback::SignedInput;
use whish::transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
    LastName, Reason, Sender, SourceOfFunds, TransferClient,
};
use whish::{Amount, ClientSettings, Currency, Decimal, ExternalId, SecretString};
use whish_sandbox::{CallbackDelivery, Endpoint, Fault, Sandbox};

use crate::proxy::{Cut, front};

mod report;

use report::{Outcome, expected, missing, read_log};

/// How long a receiver holds a change before another may take it.
const LEASE: Duration = Duration::from_secs(2);

pub struct CallbackArgs {
    pub changes: usize,
    pub seed: u64,
    pub journal: Option<String>,
    pub outage: Duration,
}

/// What the faults did, by class.
#[derive(Default)]
struct Injected {
    kills: AtomicUsize,
    outages: AtomicUsize,
    status_failing: AtomicUsize,
    status_slow: AtomicUsize,
    redeliveries: AtomicUsize,
}

/// When a receiver was killed, and when the journal was unreachable (ms since the epoch).
#[derive(Default)]
struct Windows {
    kills: Mutex<Vec<(u32, u64)>>,
    outages: Mutex<Vec<(u64, u64)>>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The journal the receivers use, with the fault that makes it unreachable.
enum Store {
    Sqlite {
        url: String,
        disk: whish_testkit::Tmpfs,
    },
    Postgres {
        url: String,
        cut: Cut,
    },
}

impl Store {
    async fn new(journal: Option<&str>) -> Result<Store, String> {
        match journal {
            Some(url) if url.starts_with("postgres") => {
                let parsed = url::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
                let host = parsed.host_str().unwrap_or("127.0.0.1").to_owned();
                let port = parsed.port().unwrap_or(5432);
                let upstream: SocketAddr = tokio::net::lookup_host((host.as_str(), port))
                    .await
                    .map_err(|e| e.to_string())?
                    .next()
                    .ok_or("the PostgreSQL host has no address")?;
                let cut = Cut::start(upstream).await.map_err(|e| e.to_string())?;
                // A fresh database of its own, so that earlier runs leave nothing behind.
                let mut through = parsed.clone();
                through
                    .set_port(Some(cut.addr.port()))
                    .map_err(|_| "cannot set the port")?;
                let _ = through.set_host(Some("127.0.0.1"));
                let url = fresh_postgres(through.as_str()).await?;
                Ok(Store::Postgres { url, cut })
            }
            Some(other) => Err(format!(
                "--journal {other}: the receiver soak takes a postgres:// URL (SQLite is the default, on a tmpfs of its own)"
            )),
            None => {
                let Some(disk) = whish_testkit::tmpfs("64m") else {
                    return Err(
                        "the full-disk fault needs a tmpfs: run as root (mount -t tmpfs)".into(),
                    );
                };
                let url = format!("sqlite:{}", disk.path().join("journal.sqlite").display());
                Ok(Store::Sqlite { url, disk })
            }
        }
    }

    fn url(&self) -> &str {
        match self {
            Store::Sqlite { url, .. } | Store::Postgres { url, .. } => url,
        }
    }

    fn receivers(&self) -> usize {
        match self {
            Store::Sqlite { .. } => 1,
            Store::Postgres { .. } => 2,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Store::Sqlite { .. } => "SQLite (disk filled)",
            Store::Postgres { .. } => "PostgreSQL (connections cut)",
        }
    }

    /// Make the journal unreachable for `secs`.
    async fn outage(&self, length: Duration) {
        match self {
            Store::Postgres { cut, .. } => {
                cut.cut();
                tokio::time::sleep(length).await;
                cut.restore();
            }
            Store::Sqlite { disk, .. } => {
                let filler = disk.path().join("filler");
                let path = filler.clone();
                let _ = tokio::task::spawn_blocking(move || fill(&path)).await;
                tokio::time::sleep(length).await;
                let _ = std::fs::remove_file(&filler);
            }
        }
    }
}

/// Write `path` until the disk is full.
fn fill(path: &Path) {
    let Ok(mut f) = std::fs::File::create(path) else {
        return;
    };
    let chunk = vec![0u8; 256 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
}

/// A database of its own on the server behind `url`: its URL.
async fn fresh_postgres(url: &str) -> Result<String, String> {
    use sqlx::Connection;
    let name = format!("whish_soak_inbox_{}_{}", std::process::id(), now_ms());
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .map_err(|e| format!("cannot reach PostgreSQL: {e}"))?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .map_err(|e| format!("cannot create a database: {e}"))?;
    let mut u = url::Url::parse(url).map_err(|e| e.to_string())?;
    u.set_path(&format!("/{name}"));
    Ok(u.to_string())
}

/// The child: one receiver on `journal`, served on `port`, its handlers' side effect a line in
/// `log`; a handler fails, panics or hangs now and then.
pub async fn child(args: &[String]) -> Result<(), String> {
    let [journal, port, log, seed] = args else {
        return Err("callbacks-child JOURNAL PORT LOG SEED".into());
    };
    // The injected panics are counted in the log; one short line each is enough here.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("whish-soak receiver: {info}");
    }));
    let port: u16 = port.parse().map_err(|e| format!("{port}: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("{seed}: {e}"))?;
    let var = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
    let collect = CollectClient::builder(
        ClientSettings::new(var("WHISH_COLLECT_BASE_URL")?)
            .policy(crate::run::policy())
            .user_agent(
                "WhishInboxSoak/0.4 (https://github.com/whish-rs/whish-rs; soak@example.com)"
                    .parse()
                    .map_err(|e| format!("{e}"))?,
            )
            .allow_local_callbacks(),
    )
    .channel(var("WHISH_COLLECT_CHANNEL")?)
    .secret(SecretString::from(var("WHISH_COLLECT_SECRET")?))
    .website_url(var("WHISH_COLLECT_WEBSITE_URL")?)
    .build()
    .map_err(|e| e.to_string())?;
    let key = var("WHISH_SANDBOX_CALLBACK_KEY")?.into_bytes();
    let verifier = move |i: &SignedInput<'_>| {
        whish_sandbox::callback::verify_signature(&key, i.timestamp, i.body, i.signature)
    };
    // A receiver started while the journal is unreachable waits for it, as a service manager
    // restarting it would.
    let journal = loop {
        match Journal::builder(journal).lease(LEASE).open().await {
            Ok(j) => break j,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    let log = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("{log}: {e}"))?,
    ));
    let rng = Arc::new(Mutex::new(fastrand::Rng::with_seed(
        seed ^ u64::from(std::process::id()),
    )));
    let (t_log, t_rng) = (log.clone(), rng.clone());
    let receiver = Receiver::builder()
        .transfer(verifier, move |n: TransferNotification| {
            handle(&t_log, &t_rng, n.key)
        })
        .collect(collect, move |u: PaymentUpdate| handle(&log, &rng, u.key))
        .collect_currency(Currency::Usd)
        .inbox(journal)
        .handler_timeout(Duration::from_secs(1))
        .retry(
            RetrySettings::default()
                .backoff(Duration::from_millis(100), Duration::from_secs(1))
                .deadline(Duration::from_secs(3600)),
        )
        .pump_interval(Duration::from_millis(200))
        .build();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot listen on {port}: {e}"))?;
    receiver
        .serve(listener, ServeLimits::new())
        .await
        .map_err(|e| e.to_string())
}

/// The soak's handler: now and then it fails, panics or hangs (no side effect then);
/// otherwise its one side effect, a line in the log, and Ok.
fn handle(
    log: &Arc<Mutex<std::fs::File>>,
    rng: &Arc<Mutex<fastrand::Rng>>,
    key: String,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), HandlerError>> + Send>> {
    let roll = lock(rng).u32(0..100);
    let line = |what: &str| format!("{} {} {what}{key}\n", std::process::id(), now_ms());
    let write = |text: String| {
        let mut f = lock(log);
        let _ = f.write_all(text.as_bytes());
        let _ = f.flush();
    };
    match roll {
        0..8 => {
            write(line("!failed "));
            Box::pin(async { Err::<(), HandlerError>("the handler's database is down".into()) })
        }
        8..11 => {
            write(line("!panicked "));
            panic!("the soak's handler panicked")
        }
        11..13 => {
            write(line("!hung "));
            Box::pin(std::future::pending())
        }
        _ => {
            write(line(""));
            Box::pin(async { Ok(()) })
        }
    }
}

/// The parent: the journal and its outage, the receivers killed and restarted, the status
/// faults, the service's redeliveries, the changes; then the log against the sandbox.
pub async fn parent(sb: Arc<Sandbox>, a: CallbackArgs) -> Result<bool, String> {
    let store = Store::new(a.journal.as_deref()).await?;
    let receivers = store.receivers();
    println!(
        "whish receiver soak: {} changes, seed {}, {receivers} receiver process(es) on one {} journal, an outage of {} s",
        a.changes,
        a.seed,
        store.name(),
        a.outage.as_secs()
    );
    let dir = std::env::temp_dir().join(format!("whish-soak-inbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let log = dir.join("handled.log");
    let _ = std::fs::remove_file(&log);
    let env = sb.env_vars();
    let ports = free_ports(receivers)?;
    let base = format!(
        "http://{}",
        front(ports.clone()).await.map_err(|e| e.to_string())?
    );
    let shared = Arc::new(Shared::default());

    // The receivers, each killed at random and started again until the end.
    let procs = start_receivers(&store, &ports, &log, &env, a.seed, &shared)?;
    let faults = tokio::spawn(fail_status_reads(sb.clone(), shared.clone(), a.seed));
    let redeliverer = tokio::spawn(redeliver_until_stop(
        reqwest_client()?,
        sb.callback_key().to_vec(),
        shared.clone(),
    ));

    let clients = Clients::new(&sb)?;
    let started = Instant::now();
    // The journal stays until the parent returns: dropping it unmounts the SQLite disk.
    let store = Arc::new(store);
    make_changes(&sb, &clients, &base, &store, &a, &shared).await?;

    let expected = expected(&sb);
    wait_until_handed_on(&log, &expected, &shared).await;
    shared.stop.store(true, Ordering::SeqCst);
    faults.abort();
    let _ = redeliverer.await;
    let mut children = Vec::new();
    for p in procs {
        children.push(p.await.map_err(|e| e.to_string())??);
    }
    // A last moment for marks in flight, then the receivers go.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for mut c in children {
        let _ = c.kill().await;
    }
    let elapsed = started.elapsed();

    let outcome = Outcome::read(&log, &expected, &shared);
    outcome.print(elapsed);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(outcome.passed())
}

/// What the parent's tasks share: the stop signal, the faults injected and their windows, and
/// the deliveries not yet answered 200.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    injected: Injected,
    windows: Windows,
    undelivered: Mutex<Vec<CallbackDelivery>>,
}

/// One receiver process per port on the store's journal, each in a task that kills it at random
/// and starts it again until stop; each task ends with the receiver running then.
fn start_receivers(
    store: &Store,
    ports: &[SocketAddr],
    log: &Path,
    env: &[(String, String)],
    seed: u64,
    shared: &Arc<Shared>,
) -> Result<Vec<JoinHandle<Result<tokio::process::Child, String>>>, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut procs = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let args = vec![
            "callbacks-child".to_owned(),
            store.url().to_owned(),
            port.port().to_string(),
            log.display().to_string(),
            (seed + i as u64).to_string(),
        ];
        let rng = fastrand::Rng::with_seed(seed * 31 + i as u64);
        let receiver = ReceiverProcess {
            exe: exe.clone(),
            args,
            env: env.to_vec(),
        };
        procs.push(tokio::spawn(receiver.run_until_stop(shared.clone(), rng)));
    }
    Ok(procs)
}

/// Every change made: wait until each `expected` one is in the log and no delivery is owed, or
/// 120 s passed.
async fn wait_until_handed_on(log: &Path, expected: &[Vec<String>], shared: &Shared) {
    let settle = Instant::now();
    loop {
        let (handled, _) = read_log(log);
        if (missing(expected, &handled) == 0 && lock(&shared.undelivered).is_empty())
            || settle.elapsed() > Duration::from_secs(120)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `n` loopback ports free a moment ago, for the receivers to listen on.
fn free_ports(n: usize) -> Result<Vec<SocketAddr>, String> {
    let mut ports = Vec::new();
    for _ in 0..n {
        let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        ports.push(l.local_addr().map_err(|e| e.to_string())?);
    }
    Ok(ports)
}

/// How to start one receiver process: `whish-soak callbacks-child ...` with the sandbox's
/// variables.
struct ReceiverProcess {
    exe: std::path::PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl ReceiverProcess {
    /// Start the receiver, let it live 1.5 to 4 s, kill it with SIGKILL and start it again,
    /// until stop; the one running then. A receiver that exits by itself is an error.
    async fn run_until_stop(
        self,
        shared: Arc<Shared>,
        mut rng: fastrand::Rng,
    ) -> Result<tokio::process::Child, String> {
        loop {
            let mut child = tokio::process::Command::new(&self.exe)
                .args(&self.args)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("cannot start a receiver: {e}"))?;
            let pid = child.id().unwrap_or(0);
            let life = Duration::from_millis(rng.u64(1500..4000));
            let deadline = Instant::now() + life;
            while Instant::now() < deadline && !shared.stop.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("a receiver exited by itself: {status}"));
                }
            }
            if shared.stop.load(Ordering::SeqCst) {
                return Ok(child);
            }
            child.kill().await.map_err(|e| format!("kill: {e}"))?; // SIGKILL
            lock(&shared.windows.kills).push((pid, now_ms()));
            shared.injected.kills.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(rng.u64(50..400))).await;
        }
    }
}

/// Status reads failing (six 503 pages) and slow (1.5 s): one or the other queued whenever
/// none is, until stop.
async fn fail_status_reads(sb: Arc<Sandbox>, shared: Arc<Shared>, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed);
    while !shared.stop.load(Ordering::SeqCst) {
        if sb.queued_faults(Endpoint::CollectStatus) == 0 {
            if rng.bool() {
                sb.inject(Endpoint::CollectStatus, Fault::Page(503), 6);
                shared
                    .injected
                    .status_failing
                    .fetch_add(1, Ordering::SeqCst);
            } else {
                sb.inject(
                    Endpoint::CollectStatus,
                    Fault::Delay(Duration::from_millis(1500)),
                    1,
                );
                shared.injected.status_slow.fetch_add(1, Ordering::SeqCst);
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(100..600))).await;
    }
}

/// The service's side: every delivery not answered 200 is delivered again, every 300 ms,
/// until stop and none is left.
async fn redeliver_until_stop(http: reqwest::Client, key: Vec<u8>, shared: Arc<Shared>) {
    loop {
        let due: Vec<CallbackDelivery> = std::mem::take(&mut *lock(&shared.undelivered));
        let drained = due.is_empty();
        for d in due {
            shared.injected.redeliveries.fetch_add(1, Ordering::SeqCst);
            if !redeliver(&http, &key, &d).await {
                lock(&shared.undelivered).push(d);
            }
        }
        if drained && shared.stop.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Make the plan's changes, eight at a time, with the journal's outage a third of the way
/// through; each delivery not answered 200 is left to the service's redeliveries.
async fn make_changes(
    sb: &Arc<Sandbox>,
    clients: &Clients,
    base: &str,
    store: &Arc<Store>,
    a: &CallbackArgs,
    shared: &Arc<Shared>,
) -> Result<(), String> {
    let next = Arc::new(AtomicUsize::new(0));
    let plan = Arc::new(plan(a.changes, a.seed));
    let outage = tokio::spawn(outage_at(
        store.clone(),
        a.changes / 3,
        a.outage,
        next.clone(),
        shared.clone(),
    ));
    let mut makers = Vec::new();
    for _ in 0..8 {
        let (sb, clients, plan, next, shared, base) = (
            sb.clone(),
            clients.clone(),
            plan.clone(),
            next.clone(),
            shared.clone(),
            base.to_owned(),
        );
        makers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(change) = plan.get(i) else { break };
                for d in make(&sb, &clients, &base, *change, i).await {
                    if !d.acknowledged() {
                        lock(&shared.undelivered).push(d);
                    }
                }
            }
        }));
    }
    for m in makers {
        m.await.map_err(|e| e.to_string())?;
    }
    outage.await.map_err(|e| e.to_string())
}

/// Once change `at` is taken, make the journal unreachable for `length`, and record the window.
async fn outage_at(
    store: Arc<Store>,
    at: usize,
    length: Duration,
    next: Arc<AtomicUsize>,
    shared: Arc<Shared>,
) {
    while next.load(Ordering::SeqCst) < at {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let from = now_ms();
    store.outage(length).await;
    lock(&shared.windows.outages).push((from, now_ms()));
    shared.injected.outages.fetch_add(1, Ordering::SeqCst);
}

/// Deliver again as the service would: the POST signed anew, the GET as it was.
async fn redeliver(http: &reqwest::Client, key: &[u8], d: &CallbackDelivery) -> bool {
    let request = if d.method == "POST" {
        let body = d.body.clone().unwrap_or_default();
        let ts = now_ms() as i64;
        http.post(&d.url)
            .header("content-type", "application/json")
            .header("timestamp", ts.to_string())
            .header(
                "signature",
                whish_sandbox::callback::sign(key, ts, body.as_bytes()),
            )
            .body(body)
    } else {
        http.get(&d.url)
    };
    matches!(request.send().await, Ok(r) if r.status().as_u16() == 200)
}

/// The service's HTTP client: the TLS stack the SDK was built with (no process-wide provider).
fn reqwest_client() -> Result<reqwest::Client, String> {
    whish::core::tls::client_builder()
        .map_err(|e| e.to_string())?
        .timeout(Duration::from_secs(15))
        .build()
        .map_err(|e| e.to_string())
}

/// One change of the plan.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// A cash transfer sent and collected.
    Collected,
    /// A link paid, after `failures` failed attempts.
    Paid { failures: u8 },
    /// A link with one failed attempt, never paid.
    FailedOnly,
    /// A link paid, then refunded.
    Refunded,
}

fn plan(n: usize, seed: u64) -> Vec<Change> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| match rng.u32(0..100) {
            0..40 => Change::Collected,
            40..75 => Change::Paid {
                failures: rng.u8(0..3),
            },
            75..88 => Change::FailedOnly,
            _ => Change::Refunded,
        })
        .collect()
}

#[derive(Clone)]
struct Clients {
    transfer: TransferClient,
    collect: CollectClient,
}

impl Clients {
    fn new(sb: &Sandbox) -> Result<Clients, String> {
        let c = crate::run::Clients::new(sb, String::new())?;
        Ok(Clients {
            transfer: c.transfer,
            collect: c.collect,
        })
    }
}

/// Make one change; the callbacks the sandbox delivered for it.
async fn make(
    sb: &Sandbox,
    c: &Clients,
    base: &str,
    change: Change,
    i: usize,
) -> Vec<CallbackDelivery> {
    let mut out = Vec::new();
    match change {
        Change::Collected => {
            let send = CashCollectionSend::new(
                CountryId::LEBANON,
                Currency::Usd,
                Amount::new(Decimal::from(10 + (i % 400) as u32)),
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
                    Identity::new(DateOfBirth::parse("07-03-1990").expect("a valid date")),
                ),
                Reason::FamilySupport,
                SourceOfFunds::Salary,
            )
            .callback_url(format!("{base}{}", whish::callbacks::TRANSFER_PATH));
            let Ok(prepared) = c.transfer.prepare_send(send) else {
                return out;
            };
            let Ok(sent) = c.transfer.send(&prepared).await else {
                return out;
            };
            let Some(ltn) = sent.ltn_number().map(str::to_owned) else {
                return out;
            };
            if let Ok(collected) = sb.collect_cash(&ltn).await
                && let Some(d) = collected.callback
            {
                out.push(d);
            }
        }
        Change::Paid { .. } | Change::FailedOnly | Change::Refunded => {
            let id = ExternalId::generate();
            let at = |path: &str| format!("{base}{path}");
            let urls = CollectUrls::new(
                whish::collect::SuccessCallbackUrl::new(&at(whish::callbacks::SUCCESS_PATH))
                    .expect("url")
                    .with_reference("externalId", id.as_str())
                    .with_reference("currency", "USD"),
                whish::collect::FailureCallbackUrl::new(&at(whish::callbacks::FAILURE_PATH))
                    .expect("url")
                    .with_reference("externalId", id.as_str())
                    .with_reference("currency", "USD"),
                whish::collect::SuccessRedirectUrl::new("https://shop.example.com/thanks")
                    .expect("url"),
                whish::collect::FailureRedirectUrl::new("https://shop.example.com/retry")
                    .expect("url"),
            );
            let payment = NewPayment::new(
                Amount::new(Decimal::new(100 + (i % 5000) as i64, 2)),
                Currency::Usd,
                urls,
            )
            .external_id(id.clone());
            let Ok(prepared) = c.collect.prepare_payment(payment) else {
                return out;
            };
            if c.collect.create_payment(&prepared).await.is_err() {
                return out;
            }
            let failures = match change {
                Change::Paid { failures } => failures,
                _ => 1,
            };
            for _ in 0..failures {
                if let Ok(attempt) = sb.fail_link(id.as_str()).await {
                    out.push(attempt.callback);
                }
            }
            if matches!(change, Change::FailedOnly) {
                return out;
            }
            if let Ok(attempt) = sb.pay_link(id.as_str()).await {
                out.push(attempt.callback);
            }
            if matches!(change, Change::Refunded)
                && let Ok(refund) = c.collect.prepare_refund(Currency::Usd, &id, Some("soak"))
            {
                let _ = c.collect.refund(&refund).await;
            }
        }
    }
    out
}
