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

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// The parent.
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
    let env: Vec<(String, String)> = sb
        .env_exports()
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim_matches('\'').to_owned()))
        .collect();
    let mut ports = Vec::new();
    for _ in 0..receivers {
        let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        ports.push(l.local_addr().map_err(|e| e.to_string())?);
    }
    let base = format!(
        "http://{}",
        front(ports.clone()).await.map_err(|e| e.to_string())?
    );
    let injected = Arc::new(Injected::default());
    let windows = Arc::new(Windows::default());
    let stop = Arc::new(AtomicBool::new(false));

    // The receivers, each killed at random and started again until the end.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut procs = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let args = vec![
            "callbacks-child".to_owned(),
            store.url().to_owned(),
            port.port().to_string(),
            log.display().to_string(),
            (a.seed + i as u64).to_string(),
        ];
        let (exe, env, stop, injected, windows) = (
            exe.clone(),
            env.clone(),
            stop.clone(),
            injected.clone(),
            windows.clone(),
        );
        let mut rng = fastrand::Rng::with_seed(a.seed * 31 + i as u64);
        procs.push(tokio::spawn(async move {
            loop {
                let mut child = tokio::process::Command::new(&exe)
                    .args(&args)
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|e| format!("cannot start a receiver: {e}"))?;
                let pid = child.id().unwrap_or(0);
                let life = Duration::from_millis(rng.u64(1500..4000));
                let deadline = Instant::now() + life;
                while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    if let Ok(Some(status)) = child.try_wait() {
                        return Err(format!("a receiver exited by itself: {status}"));
                    }
                }
                if stop.load(Ordering::SeqCst) {
                    return Ok::<_, String>(child);
                }
                child.kill().await.map_err(|e| format!("kill: {e}"))?; // SIGKILL
                lock(&windows.kills).push((pid, now_ms()));
                injected.kills.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(rng.u64(50..400))).await;
            }
        }));
    }

    // Status reads failing and slow.
    let faults = {
        let (sb, stop, injected) = (sb.clone(), stop.clone(), injected.clone());
        let mut rng = fastrand::Rng::with_seed(a.seed ^ 0x5eed);
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                if sb.queued_faults(Endpoint::CollectStatus) == 0 {
                    if rng.bool() {
                        sb.inject(Endpoint::CollectStatus, Fault::Page(503), 6);
                        injected.status_failing.fetch_add(1, Ordering::SeqCst);
                    } else {
                        sb.inject(
                            Endpoint::CollectStatus,
                            Fault::Delay(Duration::from_millis(1500)),
                            1,
                        );
                        injected.status_slow.fetch_add(1, Ordering::SeqCst);
                    }
                }
                tokio::time::sleep(Duration::from_millis(rng.u64(100..600))).await;
            }
        })
    };

    // The service's side: every delivery not answered 200 is delivered again.
    let undelivered: Arc<Mutex<Vec<CallbackDelivery>>> = Arc::default();
    let redeliverer = {
        let (undelivered, stop, injected) = (undelivered.clone(), stop.clone(), injected.clone());
        let key = sb.callback_key().to_vec();
        let http = reqwest_client()?;
        tokio::spawn(async move {
            loop {
                let due: Vec<CallbackDelivery> = std::mem::take(&mut *lock(&undelivered));
                let drained = due.is_empty();
                for d in due {
                    injected.redeliveries.fetch_add(1, Ordering::SeqCst);
                    if !redeliver(&http, &key, &d).await {
                        lock(&undelivered).push(d);
                    }
                }
                if drained && stop.load(Ordering::SeqCst) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };

    // The changes, with the outage a third of the way through.
    let clients = Clients::new(&sb)?;
    let started = Instant::now();
    let outage_at = a.changes / 3;
    let next = Arc::new(AtomicUsize::new(0));
    let plan = Arc::new(plan(a.changes, a.seed));
    let store = Arc::new(store);
    let outage = {
        let (store, windows, injected, next) = (
            store.clone(),
            windows.clone(),
            injected.clone(),
            next.clone(),
        );
        let length = a.outage;
        tokio::spawn(async move {
            while next.load(Ordering::SeqCst) < outage_at {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let from = now_ms();
            store.outage(length).await;
            lock(&windows.outages).push((from, now_ms()));
            injected.outages.fetch_add(1, Ordering::SeqCst);
        })
    };
    let mut makers = Vec::new();
    for _ in 0..8 {
        let (sb, clients, plan, next, undelivered, base) = (
            sb.clone(),
            clients.clone(),
            plan.clone(),
            next.clone(),
            undelivered.clone(),
            base.clone(),
        );
        makers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(change) = plan.get(i) else { break };
                for d in make(&sb, &clients, &base, *change, i).await {
                    if !d.acknowledged() {
                        lock(&undelivered).push(d);
                    }
                }
            }
        }));
    }
    for m in makers {
        m.await.map_err(|e| e.to_string())?;
    }
    outage.await.map_err(|e| e.to_string())?;

    // Every change made: wait until each is handed on (or a long while passed).
    let expected = expected(&sb);
    let settle = Instant::now();
    loop {
        let (handled, _) = read_log(&log);
        let missing = expected
            .iter()
            .filter(|alts| !alts.iter().any(|k| handled.contains_key(k)))
            .count();
        if (missing == 0 && lock(&undelivered).is_empty())
            || settle.elapsed() > Duration::from_secs(120)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.store(true, Ordering::SeqCst);
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

    let (handled, handler_faults) = read_log(&log);
    let lost = expected
        .iter()
        .filter(|alts| !alts.iter().any(|k| handled.contains_key(k)))
        .count();
    let twice: Vec<(&String, &Vec<(u32, u64)>)> =
        handled.iter().filter(|(_, seen)| seen.len() > 1).collect();
    let kills = lock(&windows.kills).clone();
    let outages = lock(&windows.outages).clone();
    // Inside the window: the first hand-on's process was killed after it, or the journal was
    // unreachable from then until the mark was due (a lease and a little later).
    let (mut by_kill, mut by_outage) = (0, 0);
    for (_, seen) in &twice {
        let (pid, at) = seen[0];
        if kills.iter().any(|(p, when)| *p == pid && *when >= at) {
            by_kill += 1;
        } else if outages
            .iter()
            .any(|(from, to)| *from <= at + LEASE.as_millis() as u64 * 2 && *to >= at)
        {
            by_outage += 1;
        }
    }
    let inside = by_kill + by_outage;
    let classes = [
        (
            "receivers killed with SIGKILL",
            injected.kills.load(Ordering::SeqCst),
        ),
        ("journal outages", injected.outages.load(Ordering::SeqCst)),
        (
            "status reads failing (503 pages)",
            injected.status_failing.load(Ordering::SeqCst),
        ),
        (
            "status reads slow (1.5 s)",
            injected.status_slow.load(Ordering::SeqCst),
        ),
        ("handlers failing", handler_faults.0),
        ("handlers panicking", handler_faults.1),
        ("handlers hanging", handler_faults.2),
        (
            "redeliveries by the service",
            injected.redeliveries.load(Ordering::SeqCst),
        ),
    ];
    println!("faults injected:");
    for (name, n) in classes {
        println!("  {name}: {n}");
    }
    let never: Vec<&str> = classes
        .iter()
        .filter(|(_, n)| *n == 0)
        .map(|(name, _)| *name)
        .collect();
    let handed = expected.len() - lost;
    println!(
        "changes {}, handed on {handed}, lost {lost}, handled twice {} (inside the window {inside})",
        expected.len(),
        twice.len()
    );
    println!(
        "  inside the window: {by_kill} handed on by a process killed before its mark, {by_outage} while the journal was unreachable"
    );
    println!("{:.1} s", elapsed.as_secs_f64());
    if !never.is_empty() {
        println!("FAILED: never injected: {}", never.join(", "));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(lost == 0 && twice.len() == inside && never.is_empty())
}

/// Each key handed on, with the (pid, ms) of every hand-on.
type Handed = HashMap<String, Vec<(u32, u64)>>;

/// The keys handed on, and the handler faults (failed, panicked, hung).
fn read_log(path: &Path) -> (Handed, (usize, usize, usize)) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut handled: Handed = HashMap::new();
    let mut faults = (0, 0, 0);
    for line in text.lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(pid), Some(at), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        match rest.split_once(' ') {
            Some(("!failed", _)) => faults.0 += 1,
            Some(("!panicked", _)) => faults.1 += 1,
            Some(("!hung", _)) => faults.2 += 1,
            _ => handled
                .entry(rest.to_owned())
                .or_default()
                .push((pid.parse().unwrap_or(0), at.parse().unwrap_or(0))),
        }
    }
    (handled, faults)
}

/// What must have been handed on: each collected transfer as RECEIVED; each paid link as paid
/// or (a refund before the status read) refunded; each link with only failed attempts as
/// pending. Each entry lists the keys any of which is enough.
fn expected(sb: &Sandbox) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for t in sb.transfers() {
        if t.status == "RECEIVED" && t.payment_mode == "CASH_COLLECTION" {
            out.push(vec![format!("transfer:{}:RECEIVED", t.transfer_id)]);
        }
    }
    let failed: HashSet<String> = sb
        .callbacks()
        .into_iter()
        .filter(|d| d.kind == "collect.failure")
        .filter_map(|d| {
            url::Url::parse(&d.url).ok().and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "externalId")
                    .map(|(_, v)| v.into_owned())
            })
        })
        .collect();
    for p in sb.payments() {
        let id = &p.external_id;
        match p.collect_status.as_str() {
            "success" | "refunded" => out.push(vec![
                format!("collect:{id}:success"),
                format!("collect:{id}:refunded"),
            ]),
            "pending" if failed.contains(id) => out.push(vec![format!("collect:{id}:pending")]),
            _ => {}
        }
    }
    out
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
