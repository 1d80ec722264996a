//! The crash soak: the client runs as child processes on one journal and is killed with SIGKILL
//! at random moments; each restart recovers what the dead one left, then goes on. At the end the
//! journal's record is compared with the sandbox's: no duplicate, nothing lost, nothing left
//! unresolved.
//!
//! `whish-soak --crash K --ops N --seed S [--journal URL] [--workers W]`: the parent (sandbox,
//! fault injector, killer, final recovery, table). `whish-soak crash-child ...` is the child.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use whish::collect::{CollectClient, CollectUrls, NewPayment};
use whish::journal::{Clients as Recovering, Journal, Operation, Recovery, Service, State};
use whish::topup::TopupClient;
use whish::transfer::{
    CashCollectionSend, Customer, FirstName, LastName, MobileWalletSend, PreparedCancel, Reason,
    SendRequest, SourceOfFunds, TransferClient,
};
use whish::{Amount, ClientSettings, Currency, Decimal, ExternalId, RequestId, SecretString};
use whish_sandbox::{Endpoint, Fault, Sandbox};

use crate::reconcile::{Row, Table, counts, row, total};
use crate::run::{Belief, policy};

/// How long a child holds an entry before another process may take it.
const LEASE: Duration = Duration::from_secs(3);

/// One intended operation of the crash soak.
#[derive(Debug, Clone, Copy)]
enum Op {
    Cash { dollars: u32 },
    Wallet { dollars: u32, failing: bool },
    SendThenCancel { dollars: u32 },
    Create { cents: u32 },
    Pay { option: usize },
}

fn plan(n: usize, seed: u64) -> Vec<Op> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| match rng.u32(0..100) {
            0..35 => Op::Cash {
                dollars: rng.u32(10..=500),
            },
            35..45 => Op::Wallet {
                dollars: rng.u32(10..=500),
                failing: rng.u32(0..4) == 0,
            },
            45..55 => Op::SendThenCancel {
                dollars: rng.u32(10..=500),
            },
            55..80 => Op::Create {
                cents: rng.u32(100..=50_000),
            },
            _ => Op::Pay {
                option: rng.usize(0..crate::plan::TOPUP_OPTIONS.len()),
            },
        })
        .collect()
}

/// The keys of op `i` in run `nonce`: they are fixed before anything is sent, so a restarted
/// child finds in the journal what its predecessor recorded.
struct Keys;

impl Keys {
    fn send(nonce: u64, i: usize) -> i64 {
        (nonce * 100_000_000 + 2 * i as u64 + 2) as i64
    }
    fn cancel(nonce: u64, i: usize) -> i64 {
        Keys::send(nonce, i) + 1
    }
    fn external(nonce: u64, i: usize) -> String {
        format!("crash-{nonce}-{i}")
    }
}

/// Settings handed from the parent to its children.
#[derive(Debug, Clone)]
pub struct ChildArgs {
    pub journal: String,
    pub ops: usize,
    pub seed: u64,
    pub nonce: u64,
    pub worker: usize,
    pub workers: usize,
    pub inflight: usize,
}

impl ChildArgs {
    fn to_args(&self) -> Vec<String> {
        vec![
            "crash-child".into(),
            self.journal.clone(),
            self.ops.to_string(),
            self.seed.to_string(),
            self.nonce.to_string(),
            self.worker.to_string(),
            self.workers.to_string(),
            self.inflight.to_string(),
        ]
    }

    /// Read `crash-child JOURNAL OPS SEED NONCE WORKER WORKERS INFLIGHT`.
    pub fn parse(args: &[String]) -> Result<ChildArgs, String> {
        let [journal, ops, seed, nonce, worker, workers, inflight] = args else {
            return Err("crash-child JOURNAL OPS SEED NONCE WORKER WORKERS INFLIGHT".into());
        };
        let n = |s: &str| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
        Ok(ChildArgs {
            journal: journal.clone(),
            ops: n(ops)? as usize,
            seed: n(seed)?,
            nonce: n(nonce)?,
            worker: n(worker)? as usize,
            workers: n(workers)? as usize,
            inflight: n(inflight)? as usize,
        })
    }
}

/// The service clients of a child, from the `WHISH_*` variables the parent sets.
struct Clients {
    transfer: TransferClient,
    collect: CollectClient,
    topup: TopupClient,
    wallet_ok: String,
    wallet_failing: String,
}

impl Clients {
    /// From this process's environment (a child).
    fn from_env() -> Result<Clients, String> {
        Clients::from_lookup(&|name| std::env::var(name).ok())
    }

    /// From the variables the parent hands its children.
    fn from_pairs(env: &[(String, String)]) -> Result<Clients, String> {
        Clients::from_lookup(&|name| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Clients, String> {
        let var = |name: &str| lookup(name).ok_or_else(|| format!("{name} is not set"));
        let ua: whish::UserAgent =
            "WhishCrashSoak/0.2 (https://github.com/whish-rs/whish-rs; soak@example.com)"
                .parse()
                .map_err(|e| format!("{e}"))?;
        let err = |e: whish::SetupError| e.to_string();
        Ok(Clients {
            transfer: TransferClient::builder(
                ClientSettings::new(var("WHISH_TRANSFER_BASE_URL")?).policy(policy()),
            )
            .username(var("WHISH_TRANSFER_USERNAME")?)
            .key(SecretString::from(var("WHISH_TRANSFER_KEY")?))
            .build()
            .map_err(err)?,
            collect: CollectClient::builder(
                ClientSettings::new(var("WHISH_COLLECT_BASE_URL")?)
                    .policy(policy())
                    .user_agent(ua.clone())
                    .allow_local_callbacks(),
            )
            .channel(var("WHISH_COLLECT_CHANNEL")?)
            .secret(SecretString::from(var("WHISH_COLLECT_SECRET")?))
            .website_url(var("WHISH_COLLECT_WEBSITE_URL")?)
            .build()
            .map_err(err)?,
            topup: TopupClient::builder(
                ClientSettings::new(var("WHISH_TOPUP_BASE_URL")?)
                    .policy(policy())
                    .user_agent(ua),
            )
            .session_id(SecretString::from(var("WHISH_TOPUP_SESSION_ID")?))
            .token(SecretString::from(var("WHISH_TOPUP_TOKEN")?))
            .build()
            .map_err(err)?,
            wallet_ok: var("WHISH_SOAK_WALLET_OK")?,
            wallet_failing: var("WHISH_SOAK_WALLET_FAILING")?,
        })
    }

    fn recovering(&self) -> Recovering {
        Recovering::new()
            .transfer(self.transfer.clone())
            .collect(self.collect.clone())
            .topup(self.topup.clone())
    }
}

fn send_request(c: &Clients, op: Op, id: RequestId) -> Option<SendRequest> {
    let sender = whish::transfer::Sender::new(Customer::new(
        FirstName::new("John"),
        LastName::new("Smith"),
        "+14155550100",
    ));
    let request: SendRequest = match op {
        Op::Cash { dollars } | Op::SendThenCancel { dollars } => CashCollectionSend::new(
            whish::transfer::CountryId::LEBANON,
            Currency::Usd,
            Amount::new(Decimal::from(dollars)),
            sender,
            whish::transfer::CashReceiver::new(
                Customer::new(
                    FirstName::new("Rami"),
                    LastName::new("Haddad"),
                    "+96170123456",
                ),
                whish::transfer::Identity::new(
                    whish::transfer::DateOfBirth::parse("07-03-1990").ok()?,
                ),
            ),
            Reason::FamilySupport,
            SourceOfFunds::Salary,
        )
        .into(),
        Op::Wallet { dollars, failing } => MobileWalletSend::new(
            whish::transfer::CountryId::LEBANON,
            Currency::Usd,
            Amount::new(Decimal::from(dollars)),
            sender,
            whish::transfer::WalletReceiver::new(Customer::new(
                FirstName::new("Rami"),
                LastName::new("Haddad"),
                if failing {
                    &c.wallet_failing
                } else {
                    &c.wallet_ok
                },
            )),
            Reason::Education,
            SourceOfFunds::Savings,
        )
        .into(),
        _ => return None,
    };
    Some(request.request_id(id))
}

/// One op, through the journal, unless the journal already holds it (a predecessor did it).
async fn one(j: &Journal, c: &Clients, a: &ChildArgs, i: usize, op: Op) -> Result<(), String> {
    let jerr = |e: whish::journal::JournalError| e.to_string();
    match op {
        Op::Cash { .. } | Op::Wallet { .. } | Op::SendThenCancel { .. } => {
            let id = RequestId::new(Keys::send(a.nonce, i)).map_err(|e| e.to_string())?;
            let key = id.to_string();
            if j.entry(Service::MoneyTransfer, Operation::Send, &key)
                .await
                .map_err(jerr)?
                .is_none()
            {
                let request = send_request(c, op, id).ok_or("no request")?;
                let prepared = c
                    .transfer
                    .prepare_send(request)
                    .map_err(|e| e.to_string())?;
                let _ = j.transfer(c.transfer.clone()).send(&prepared).await;
            }
            if !matches!(op, Op::SendThenCancel { .. }) {
                return Ok(());
            }
            let cancel_key = Keys::cancel(a.nonce, i).to_string();
            if j.entry(Service::MoneyTransfer, Operation::Cancel, &cancel_key)
                .await
                .map_err(jerr)?
                .is_some()
            {
                return Ok(());
            }
            let sent = j
                .entry(Service::MoneyTransfer, Operation::Send, &key)
                .await
                .map_err(jerr)?;
            // Only a send known to be accepted is cancelled; an open one is recovery's.
            let Some(ltn) = sent
                .filter(|e| e.state == State::Accepted)
                .and_then(|e| e.references.ltn_number)
            else {
                return Ok(());
            };
            let fresh = c
                .transfer
                .prepare_cancel(&ltn, Some("crash soak"))
                .map_err(|e| e.to_string())?;
            let cancel_id = RequestId::new(Keys::cancel(a.nonce, i)).map_err(|e| e.to_string())?;
            let prepared = PreparedCancel::from_stored(cancel_id, fresh.body().to_vec())
                .map_err(|e| e.to_string())?;
            let _ = j.transfer(c.transfer.clone()).cancel(&prepared).await;
        }
        Op::Create { cents } => {
            let x = Keys::external(a.nonce, i);
            if j.entry(Service::HostedCollect, Operation::Create, &x)
                .await
                .map_err(jerr)?
                .is_some()
            {
                return Ok(());
            }
            let urls = CollectUrls::new(
                whish::collect::SuccessCallbackUrl::new("http://127.0.0.1:9/ok")
                    .map_err(|e| e.to_string())?,
                whish::collect::FailureCallbackUrl::new("http://127.0.0.1:9/ko")
                    .map_err(|e| e.to_string())?,
                whish::collect::SuccessRedirectUrl::new("https://shop.example.com/thanks")
                    .map_err(|e| e.to_string())?,
                whish::collect::FailureRedirectUrl::new("https://shop.example.com/retry")
                    .map_err(|e| e.to_string())?,
            );
            let payment = NewPayment::new(
                Amount::new(Decimal::new(i64::from(cents), 2)),
                Currency::Usd,
                urls,
            )
            .external_id(ExternalId::new(x).map_err(|e| e.to_string())?);
            let prepared = c
                .collect
                .prepare_payment(payment)
                .map_err(|e| e.to_string())?;
            let _ = j.collect(c.collect.clone()).create_payment(&prepared).await;
        }
        Op::Pay { option } => {
            let x = Keys::external(a.nonce, i);
            if j.entry(Service::IntlTopup, Operation::Pay, &x)
                .await
                .map_err(jerr)?
                .is_some()
            {
                return Ok(());
            }
            let (provider, target, option_id) = crate::plan::TOPUP_OPTIONS[option];
            // Fetching is a read: when it fails nothing was recorded, and the op is done later.
            let Ok(offer) = c
                .topup
                .fetch_options(whish::topup::ProviderId::new(provider), target)
                .await
            else {
                return Err(format!("fetch options of op {i} failed"));
            };
            let chosen = offer.option(option_id).ok_or("option not on offer")?;
            let request = whish::topup::PayRequest::new(chosen)
                .external_id(ExternalId::new(x).map_err(|e| e.to_string())?);
            let prepared = c.topup.prepare_pay(request).map_err(|e| e.to_string())?;
            let _ = j.topup(c.topup.clone()).pay(&prepared).await;
        }
    }
    Ok(())
}

/// A child: recover what a dead predecessor left, do this worker's share of the plan, then
/// recover until nothing is open.
pub async fn child(a: ChildArgs) -> Result<(), String> {
    let c = Arc::new(Clients::from_env()?);
    let j = Journal::builder(&a.journal)
        .lease(LEASE)
        .open()
        .await
        .map_err(|e| e.to_string())?;
    // A lone worker knows its predecessor is dead: take over its leases at once.
    let alone = a.workers == 1;
    j.recover(&c.recovering(), &Recovery::new().take_over(alone))
        .await
        .map_err(|e| e.to_string())?;
    let ops = Arc::new(plan(a.ops, a.seed));
    let next = Arc::new(AtomicUsize::new(0));
    let a = Arc::new(a);
    let mut tasks = Vec::new();
    for _ in 0..a.inflight.max(1) {
        let (j, c, a, ops, next) = (j.clone(), c.clone(), a.clone(), ops.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let i = k * a.workers + a.worker;
                let Some(op) = ops.get(i) else { break };
                // A read that failed (fetch options) is tried again until it answers.
                for _ in 0..20 {
                    if one(&j, &c, &a, i, *op).await.is_ok() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| format!("a task panicked: {e}"))?;
    }
    // The outcomes recorded after their calls returned, written before the recovery looks.
    j.flush().await;
    settle(&j, &c.recovering(), alone, Duration::from_secs(60)).await
}

/// Recover until no entry is open, or fail after `within`.
async fn settle(
    j: &Journal,
    clients: &Recovering,
    take_over: bool,
    within: Duration,
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        j.recover(clients, &Recovery::new().take_over(take_over))
            .await
            .map_err(|e| e.to_string())?;
        let open = j
            .list(&whish::journal::Listing::new().open().limit(1_000_000))
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|e| e.state.is_open())
            .count();
        if open == 0 {
            return Ok(());
        }
        if started.elapsed() > within {
            return Err(format!("{open} entries still open after {within:?}"));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The parent's settings.
pub struct CrashArgs {
    pub kills: usize,
    pub ops: usize,
    pub seed: u64,
    pub journal: Option<String>,
    pub workers: usize,
}

/// The parent: sandbox, faults, children killed at random, final recovery, table.
pub async fn parent(sb: Arc<Sandbox>, a: CrashArgs) -> Result<bool, String> {
    let nonce = fastrand::u64(1..90_000);
    let journal = match &a.journal {
        Some(url) => url.clone(),
        None => {
            let dir = std::env::temp_dir().join(format!("whish-crash-soak-{nonce}"));
            format!("sqlite:{}", dir.join("journal.sqlite").display())
        }
    };
    let backend = if journal.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    println!(
        "whish crash soak: {} operations, seed {}, {} kills, {} worker process(es) on one {backend} journal",
        a.ops, a.seed, a.kills, a.workers
    );
    let mut env = sb.env_vars();
    env.push((
        "WHISH_SOAK_WALLET_OK".into(),
        sb.wallet_phones().credited.clone(),
    ));
    env.push((
        "WHISH_SOAK_WALLET_FAILING".into(),
        sb.wallet_phones().failing.clone(),
    ));

    // Faults on about a fifth of the money-moving calls, injected as the children run.
    let stop = Arc::new(AtomicBool::new(false));
    let injector = tokio::spawn(inject_faults(sb.clone(), stop.clone(), a.seed));

    let started = Instant::now();
    let (kills, starts) = run_workers(&a, &journal, nonce, &env).await?;
    stop.store(true, Ordering::Relaxed);
    let injected = injector.await.map_err(|e| e.to_string())?;
    // Every child is gone: the parent takes over whatever is still open, without faults.
    // Faults still queued are met by the recovery below, which resends until it knows.
    let j = Journal::builder(&journal)
        .lease(LEASE)
        .open()
        .await
        .map_err(|e| e.to_string())?;
    let clients = Clients::from_pairs(&env)?;
    settle(&j, &clients.recovering(), true, Duration::from_secs(120)).await?;
    let elapsed = started.elapsed();

    let rows = compare(&sb, &j, &a, nonce).await?;
    println!("\n{}", Table(&rows));
    println!(
        "{kills} of {} kills done (SIGKILL; a child that finishes first is not killed), {starts} child processes started, {injected} faults injected; {:.1} s",
        a.kills,
        elapsed.as_secs_f64()
    );
    let t = total(&rows);
    if t.duplicates == 0 && t.lost == 0 && t.unresolved == 0 {
        println!("no duplicates, nothing lost, nothing unresolved");
        Ok(true)
    } else {
        println!(
            "FAILED: {} duplicates, {} lost, {} unresolved",
            t.duplicates, t.lost, t.unresolved
        );
        Ok(false)
    }
}

/// Queue a fault (a dropped request or reply, a delay, Pending) on a money-moving endpoint
/// every 40 ms until `stop`; how many were queued.
async fn inject_faults(sb: Arc<Sandbox>, stop: Arc<AtomicBool>, seed: u64) -> usize {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed);
    let endpoints = [
        Endpoint::TransferSend,
        Endpoint::TransferCancel,
        Endpoint::CollectCreate,
        Endpoint::TopupPay,
    ];
    let mut injected = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let fault = match rng.u32(0..4) {
            0 => Fault::DropRequest,
            1 => Fault::DropReply,
            2 => Fault::Delay(crate::plan::DELAY),
            _ => Fault::Pending,
        };
        // One fault queued per endpoint at most: a rarely called endpoint (cancel) does
        // not pile up faults that every later call would meet.
        let endpoint = endpoints[rng.usize(0..endpoints.len())];
        if sb.queued_faults(endpoint) == 0 {
            sb.inject(endpoint, fault, 1);
            injected += 1;
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    injected
}

/// Run every worker's child processes to the end, the kills shared out among the workers;
/// the kills done and the child processes started, in all.
async fn run_workers(
    a: &CrashArgs,
    journal: &str,
    nonce: u64,
    env: &[(String, String)],
) -> Result<(usize, usize), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut rng = fastrand::Rng::with_seed(a.seed);
    let mut workers = Vec::new();
    for w in 0..a.workers.max(1) {
        let kills = a.kills / a.workers.max(1) + usize::from(w < a.kills % a.workers.max(1));
        let child = ChildArgs {
            journal: journal.to_owned(),
            ops: a.ops,
            seed: a.seed,
            nonce,
            worker: w,
            workers: a.workers.max(1),
            inflight: 8,
        };
        let lifetimes: Vec<u64> = (0..kills).map(|_| rng.u64(80..500)).collect();
        workers.push(tokio::spawn(run_worker(
            exe.clone(),
            env.to_vec(),
            child,
            lifetimes,
        )));
    }
    let mut kills = 0;
    let mut starts = 0;
    for w in workers {
        let (k, s) = w.await.map_err(|e| e.to_string())??;
        kills += k;
        starts += s;
    }
    Ok((kills, starts))
}

/// One worker: its child started again after each kill, the k-th start killed with SIGKILL
/// after `lifetimes[k]` ms unless it finished first; the kills done and the starts.
async fn run_worker(
    exe: std::path::PathBuf,
    env: Vec<(String, String)>,
    child: ChildArgs,
    lifetimes: Vec<u64>,
) -> Result<(usize, usize), String> {
    let w = child.worker;
    let mut killed = 0usize;
    let mut starts = 0usize;
    loop {
        starts += 1;
        let mut proc = tokio::process::Command::new(&exe)
            .args(child.to_args())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start a child: {e}"))?;
        if let Some(ms) = lifetimes.get(killed) {
            match tokio::time::timeout(Duration::from_millis(*ms), proc.wait()).await {
                Err(_) => {
                    proc.kill().await.map_err(|e| format!("kill: {e}"))?; // SIGKILL
                    killed += 1;
                    continue;
                }
                Ok(status) => {
                    let status = status.map_err(|e| e.to_string())?;
                    if status.success() {
                        return Ok((killed, starts));
                    }
                    return Err(format!("child {w} failed: {status}"));
                }
            }
        }
        let status = proc.wait().await.map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("child {w} failed: {status}"));
        }
        return Ok((killed, starts));
    }
}

async fn compare(sb: &Sandbox, j: &Journal, a: &CrashArgs, nonce: u64) -> Result<Vec<Row>, String> {
    let ops = plan(a.ops, a.seed);
    let belief = |state: Option<State>| match state {
        Some(State::Accepted) => Belief::Done,
        Some(s) if s.is_open() || s == State::NeedsOperator => Belief::Unknown,
        // Refused, or never recorded (then never sent: the record comes first).
        _ => Belief::NotDone,
    };
    let state = |e: Option<whish::journal::Entry>| e.map(|e| e.state);
    let (mut sends, mut cancels, mut creates, mut pays) = (vec![], vec![], vec![], vec![]);
    for (i, op) in ops.iter().enumerate() {
        let get =
            |s, o, k: String| async move { j.entry(s, o, &k).await.map_err(|e| e.to_string()) };
        match op {
            Op::Cash { .. } | Op::Wallet { .. } | Op::SendThenCancel { .. } => {
                let id = Keys::send(nonce, i);
                let e = get(Service::MoneyTransfer, Operation::Send, id.to_string()).await?;
                sends.push((id, belief(state(e))));
                if matches!(op, Op::SendThenCancel { .. }) {
                    let c = get(
                        Service::MoneyTransfer,
                        Operation::Cancel,
                        Keys::cancel(nonce, i).to_string(),
                    )
                    .await?;
                    if c.is_some() {
                        cancels.push((id, belief(state(c))));
                    }
                }
            }
            Op::Create { .. } => {
                let x = Keys::external(nonce, i);
                let e = get(Service::HostedCollect, Operation::Create, x.clone()).await?;
                creates.push((x, belief(state(e))));
            }
            Op::Pay { .. } => {
                let x = Keys::external(nonce, i);
                let e = get(Service::IntlTopup, Operation::Pay, x.clone()).await?;
                pays.push((x, belief(state(e))));
            }
        }
    }
    let transfers = sb.transfers();
    Ok(vec![
        row(
            "transfer send",
            &sends,
            counts(transfers.iter().map(|t| t.request_id)),
        ),
        row(
            "transfer cancel",
            &cancels,
            counts(
                transfers
                    .iter()
                    .filter(|t| t.status == "CANCELED_FULL")
                    .map(|t| t.request_id),
            ),
        ),
        row(
            "collect create",
            &creates,
            counts(sb.payments().into_iter().map(|p| p.external_id)),
        ),
        row(
            "top-up pay",
            &pays,
            counts(sb.sales().into_iter().map(|s| s.external_id)),
        ),
    ])
}
