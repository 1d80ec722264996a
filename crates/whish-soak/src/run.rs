//! Running the plan: concurrent workers drive the SDK clients against the sandbox the way a
//! careful caller does (store the key, resend the same prepared request on an unknown outcome,
//! then confirm with status), and write down what they end up believing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use whish::collect::{CollectClient, CollectStatus, CollectUrls, NewPayment};
use whish::core::{Error, verdict::Verdict};
use whish::journal::{Journal, JournaledCollect, JournaledTopup, JournaledTransfer};
use whish::topup::{PayOutcome, TopupClient};
use whish::transfer::{
    CashCollectionSend, Customer, FirstName, LastName, MobileWalletSend, PreparedTransfer, Reason,
    SendOutcome, SendRequest, SourceOfFunds, StatusQuery, TransferClient, TransferStatus,
};
use whish::{Amount, Currency, Decimal, ExternalId, Policy, RetryPolicy, SecretString, Timeouts};
use whish_sandbox::{Endpoint, Fault, Sandbox};

use crate::plan::{DELAY, Kind, Op, TOPUP_OPTIONS, Trouble};
use crate::truth::{self, Report};

/// What the caller ends up believing about one operation it intended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Belief {
    /// It happened.
    Done,
    /// It did not happen.
    NotDone,
    /// The outcome is still unknown after resending and asking for the status.
    Unknown,
}

/// An intended operation keyed by what identifies it at the service, with the final belief.
pub type Entries<K> = Mutex<Vec<(K, Belief)>>;

/// Everything the workers believe, and the targets later operations pick from.
#[derive(Default)]
pub struct Ledger {
    /// Sends by Request-id.
    pub sends: Entries<i64>,
    /// Cancels by the Request-id of the transfer.
    pub cancels: Entries<i64>,
    /// Hosted payments by externalId.
    pub creates: Entries<String>,
    /// Refunds by externalId.
    pub refunds: Entries<String>,
    /// Top-up pays by externalId.
    pub pays: Entries<String>,
    /// Status reads that answered, and those that did not.
    pub reads: (AtomicUsize, AtomicUsize),
    /// Sandbox-control operations run (collect cash, pay a link) and those with no target.
    pub controls: (AtomicUsize, AtomicUsize),
    /// Client operations that found no target (nothing to cancel or refund yet).
    pub skipped: AtomicUsize,
    /// What every money-moving call reported, for the truth checker.
    pub reports: Mutex<Vec<Report>>,
    cancellable: Mutex<Vec<(i64, String)>>,
    sent: Mutex<Vec<i64>>,
    unpaid: Mutex<Vec<String>>,
    refundable: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn take<T>(pool: &Mutex<Vec<T>>, pick: u64) -> Option<T> {
    let mut v = lock(pool);
    if v.is_empty() {
        return None;
    }
    let i = (pick % v.len() as u64) as usize;
    Some(v.swap_remove(i))
}

/// The clients, pointed at the sandbox.
pub struct Clients {
    pub(crate) transfer: TransferClient,
    pub(crate) collect: CollectClient,
    topup: TopupClient,
    /// The base URL of the callback receiver (`whish::callbacks`).
    callbacks: String,
}

/// The client policy of the soak: three resends, a 1 s attempt timeout (the delay fault holds a
/// reply 1.5 s), short backoffs.
pub fn policy() -> Policy {
    Policy {
        retry: RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(100),
        },
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            attempt: Duration::from_secs(1),
        },
    }
}

impl Clients {
    /// Clients with the soak's policy.
    pub fn new(sb: &Sandbox, callbacks: String) -> Result<Clients, String> {
        let ua: whish::UserAgent =
            "WhishSoak/0.1 (https://github.com/whish-rs/whish-rs; soak@example.com)"
                .parse()
                .map_err(|e| format!("{e}"))?;
        let (t, c, u) = (
            sb.transfer_credentials(),
            sb.collect_credentials(),
            sb.topup_credentials(),
        );
        let err = |e: whish::SetupError| e.to_string();
        Ok(Clients {
            transfer: TransferClient::builder(
                whish::ClientSettings::new(sb.transfer_base_url())
                    .policy(policy())
                    .allow_local_callbacks(),
            )
            .username(t.username.clone())
            .key(SecretString::from(t.key.clone()))
            .build()
            .map_err(err)?,
            collect: CollectClient::builder(
                whish::ClientSettings::new(sb.collect_base_url())
                    .policy(policy())
                    .user_agent(ua.clone())
                    .allow_local_callbacks(),
            )
            .channel(c.channel.clone())
            .secret(SecretString::from(c.secret.clone()))
            .website_url(c.website_url.clone())
            .build()
            .map_err(err)?,
            topup: TopupClient::builder(
                whish::ClientSettings::new(sb.topup_base_url())
                    .policy(policy())
                    .user_agent(ua),
            )
            .session_id(SecretString::from(u.session_id.clone()))
            .token(SecretString::from(u.token.clone()))
            .build()
            .map_err(err)?,
            callbacks,
        })
    }
}

/// Run `plan` with `workers` operations in flight.
pub async fn run(
    sb: Arc<Sandbox>,
    plan: Arc<Vec<Op>>,
    workers: usize,
    callbacks: String,
) -> Result<Ledger, String> {
    let clients = Arc::new(Clients::new(&sb, callbacks)?);
    // Every money-moving call goes through a journal, so the truth checker can compare the
    // state each answer left with its verdict.
    let dir = std::env::temp_dir().join(format!("whish-soak-truth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let url = format!("sqlite:{}", dir.join("journal.sqlite").display());
    // A lease shorter than the delay fault (1.5 s): the heartbeat keeps a slow call's entry.
    let journal = Journal::builder(&url)
        .lease(SOAK_LEASE)
        .open()
        .await
        .map_err(|e| format!("the truth checker's journal: {e}"))?;
    // A second process's recovery racing the live senders on the same journal, the whole run:
    // it must never take an entry a live sender holds (fencing, heartbeats).
    let recoverer = Journal::builder(&url)
        .lease(SOAK_LEASE)
        .open()
        .await
        .map_err(|e| format!("the racing recoverer's journal: {e}"))?;
    let (stop_racing, racing) = {
        let (tx, mut rx) = tokio::sync::watch::channel(false);
        let clients = whish::journal::Clients::new()
            .transfer(clients.transfer.clone())
            .collect(clients.collect.clone())
            .topup(clients.topup.clone());
        let task = tokio::spawn(async move {
            let mut runs = RacerStats::default();
            loop {
                tokio::select! {
                    _ = rx.changed() => break,
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                }
                match recoverer
                    .recover(&clients, &whish::journal::Recovery::new())
                    .await
                {
                    Ok(r) => {
                        runs.runs += 1;
                        runs.examined += r.examined;
                        runs.held += r.held_elsewhere.len();
                    }
                    Err(e) => {
                        runs.errors += 1;
                        eprintln!("the racing recoverer failed: {e}");
                    }
                }
            }
            recoverer.close().await;
            runs
        });
        (tx, task)
    };
    let journaled = Arc::new(Journaled {
        t: journal.transfer(clients.transfer.clone()),
        c: journal.collect(clients.collect.clone()),
        u: journal.topup(clients.topup.clone()),
        journal: journal.clone(),
    });
    let ledger = Arc::new(Ledger::default());
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..workers.max(1) {
        let (sb, plan, clients, journaled, ledger, next) = (
            sb.clone(),
            plan.clone(),
            clients.clone(),
            journaled.clone(),
            ledger.clone(),
            next.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(op) = plan.get(i) else { break };
                if let (Some(trouble), Some(endpoint)) = (op.fault, op.kind.endpoint()) {
                    inject(&sb, endpoint, trouble);
                }
                let drop_first = op.fault == Some(Trouble::DroppedFuture);
                one(&sb, &clients, &journaled, &ledger, op, drop_first).await;
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| format!("a worker panicked: {e}"))?;
    }
    let _ = stop_racing.send(true);
    let racer = racing
        .await
        .map_err(|e| format!("the racing recoverer panicked: {e}"))?;
    println!(
        "racing recoverer: {} runs, {} entries examined (left open by the callers), {} seen held by a live sender, {} errors",
        racer.runs, racer.examined, racer.held, racer.errors
    );
    if racer.errors > 0 {
        return Err(format!(
            "the racing recoverer failed {} times",
            racer.errors
        ));
    }
    journal.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Arc::try_unwrap(ledger).map_err(|_| "the ledger is still shared".to_owned())
}

/// The soak journal's lease: shorter than the delay fault, so slow calls live on heartbeats.
const SOAK_LEASE: Duration = Duration::from_millis(600);

/// What the racing recoverer did.
#[derive(Debug, Default)]
struct RacerStats {
    runs: usize,
    examined: usize,
    held: usize,
    errors: usize,
}

/// The journaled twins of the clients.
pub struct Journaled {
    t: JournaledTransfer,
    c: JournaledCollect,
    u: JournaledTopup,
    journal: Journal,
}

/// Queue the sandbox faults a trouble stands for on `endpoint`.
fn inject(sb: &Sandbox, endpoint: Endpoint, trouble: Trouble) {
    match trouble {
        Trouble::Fault(f) => sb.inject(endpoint, f, 1),
        Trouble::PageAfterTimeout(status) => {
            sb.inject(endpoint, Fault::Delay(DELAY), 1);
            sb.inject(endpoint, Fault::Page(status), 1);
        }
        Trouble::UnreadConfirmation => {
            sb.inject(endpoint, Fault::DropReply, 1);
            match endpoint {
                Endpoint::TransferSend => sb.inject(
                    Endpoint::TransferStatus,
                    Fault::Code("sending.transfer.invalid.info"),
                    1,
                ),
                Endpoint::TransferCancel => sb.inject(
                    Endpoint::TransferStatus,
                    Fault::Code("transfer.not_exists"),
                    1,
                ),
                _ => {}
            }
        }
        Trouble::DroppedFuture => sb.inject(endpoint, Fault::Delay(DELAY), 1),
    }
}

async fn one(sb: &Sandbox, c: &Clients, j: &Journaled, l: &Ledger, op: &Op, drop_first: bool) {
    match op.kind {
        Kind::Send {
            cash,
            dollars,
            failing_wallet,
        } => {
            let request = send_request(sb, c, cash, dollars, failing_wallet);
            let Ok(prepared) = c.transfer.prepare_send(request) else {
                return;
            };
            // The Request-id is stored before anything is sent.
            let id = prepared.request_id().get();
            let (belief, ltn) = send(c, j, l, &prepared, drop_first).await;
            lock(&l.sends).push((id, belief));
            if belief == Belief::Done {
                lock(&l.sent).push(id);
                if let Some(ltn) = ltn {
                    lock(&l.cancellable).push((id, ltn));
                }
            }
        }
        Kind::Cancel => match take(&l.cancellable, op.pick) {
            Some((id, ltn)) => {
                let belief = cancel(c, j, l, id, &ltn, drop_first).await;
                lock(&l.cancels).push((id, belief));
            }
            None => {
                l.skipped.fetch_add(1, Ordering::Relaxed);
            }
        },
        Kind::CollectCash => match take(&l.cancellable, op.pick) {
            Some((_, ltn)) => {
                let _ = sb.collect_cash(&ltn).await;
                l.controls.0.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                l.controls.1.fetch_add(1, Ordering::Relaxed);
            }
        },
        Kind::Status => {
            let id = {
                let sent = lock(&l.sent);
                (!sent.is_empty()).then(|| sent[(op.pick % sent.len() as u64) as usize])
            };
            let Some(id) = id else {
                l.skipped.fetch_add(1, Ordering::Relaxed);
                return;
            };
            let Ok(rid) = whish::RequestId::new(id) else {
                return;
            };
            match c.transfer.status(&StatusQuery::RequestId(rid)).await {
                Ok(_) => l.reads.0.fetch_add(1, Ordering::Relaxed),
                Err(_) => l.reads.1.fetch_add(1, Ordering::Relaxed),
            };
        }
        Kind::CollectCreate { cents } => {
            let (id, belief) = create(c, j, l, cents, drop_first).await;
            lock(&l.creates).push((id.clone(), belief));
            if belief == Belief::Done {
                lock(&l.unpaid).push(id);
            }
        }
        Kind::PayLink => match take(&l.unpaid, op.pick) {
            Some(id) => {
                if sb.pay_link(&id).await.is_ok() {
                    lock(&l.refundable).push(id);
                }
                l.controls.0.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                l.controls.1.fetch_add(1, Ordering::Relaxed);
            }
        },
        Kind::Refund => match take(&l.refundable, op.pick) {
            Some(id) => {
                let belief = refund(c, j, l, &id, drop_first).await;
                lock(&l.refunds).push((id, belief));
            }
            None => {
                l.skipped.fetch_add(1, Ordering::Relaxed);
            }
        },
        Kind::TopupPay { option } => {
            if let Some((id, belief)) = pay(c, j, l, option, drop_first).await {
                lock(&l.pays).push((id, belief));
            }
        }
    }
}

fn send_request(sb: &Sandbox, c: &Clients, cash: bool, dollars: u32, failing: bool) -> SendRequest {
    let amount = Amount::new(Decimal::from(dollars));
    let sender = Customer::new(
        FirstName::new("John"),
        LastName::new("Smith"),
        "+14155550100",
    );
    if cash {
        CashCollectionSend::new(
            whish::transfer::CountryId::LEBANON,
            Currency::Usd,
            amount,
            whish::transfer::Sender::new(sender),
            whish::transfer::CashReceiver::new(
                Customer::new(
                    FirstName::new("Rami"),
                    LastName::new("Haddad"),
                    "+96170123456",
                ),
                whish::transfer::Identity::new(
                    whish::transfer::DateOfBirth::parse("07-03-1990").expect("valid"),
                ),
            ),
            Reason::FamilySupport,
            SourceOfFunds::Salary,
        )
        .callback_url(format!(
            "{}{}",
            c.callbacks,
            whish::callbacks::TRANSFER_PATH
        ))
        .into()
    } else {
        let phones = sb.wallet_phones();
        let phone = if failing {
            &phones.failing
        } else {
            &phones.credited
        };
        MobileWalletSend::new(
            whish::transfer::CountryId::LEBANON,
            Currency::Usd,
            amount,
            whish::transfer::Sender::new(sender),
            whish::transfer::WalletReceiver::new(Customer::new(
                FirstName::new("Rami"),
                LastName::new("Haddad"),
                phone.clone(),
            )),
            Reason::Education,
            SourceOfFunds::Savings,
        )
        .into()
    }
}

/// How many times a caller resends the same prepared request before asking for the status.
const RECONCILE_RESENDS: usize = 3;

/// How long a caller waits before it drops a call's future (a `DroppedFuture` trouble).
const DROP_AFTER: Duration = Duration::from_millis(200);

/// Where one call's answer is checked: its key at the sandbox and its journal entry.
struct Target {
    op: truth::Op,
    key: String,
    service: whish::journal::Service,
    operation: whish::journal::Operation,
    journal_key: String,
}

/// Call through the journal, then call again (the same prepared request: the same bytes and
/// key) while the outcome is unknown, at most [`RECONCILE_RESENDS`] more times; the first call's
/// future is dropped after [`DROP_AFTER`] when `drop_first`. Every call that answered is
/// reported with its verdict and the journal state it left.
async fn reported<T, C, Fut>(
    j: &Journaled,
    l: &Ledger,
    target: &Target,
    drop_first: bool,
    mut call: impl FnMut() -> Fut,
    accepted: impl Fn(&T) -> (Verdict, Option<String>),
) -> Result<T, Error<C>>
where
    C: whish::core::ErrorCode,
    Fut: std::future::Future<Output = Result<T, Error<C>>>,
{
    let mut seen_entry = false;
    let mut last = None;
    for i in 0..=RECONCILE_RESENDS {
        let result = if i == 0 && drop_first {
            match tokio::time::timeout(DROP_AFTER, call()).await {
                Ok(r) => r,
                Err(_) => {
                    // Dropped mid-call; the journal entry (if it was written) stays open.
                    seen_entry = true;
                    continue;
                }
            }
        } else {
            call().await
        };
        let (verdict, transfer_id) = match &result {
            Ok(v) => accepted(v),
            Err(e) => (e.verdict(), None),
        };
        // The journal's state agrees with the verdict once its background writes (acceptances)
        // are done.
        j.journal.flush().await;
        let state = j
            .journal
            .entry(target.service, target.operation, &target.journal_key)
            .await
            .ok()
            .flatten()
            .map(|e| (e.state, seen_entry));
        seen_entry = true;
        lock(&l.reports).push(Report {
            op: target.op,
            key: target.key.clone(),
            verdict,
            transfer_id,
            journal: state,
        });
        let unknown = verdict.is_open();
        last = Some(result);
        if !unknown {
            break;
        }
    }
    match last {
        Some(r) => r,
        None => call().await,
    }
}

/// Send, resending the same prepared transfer while the outcome is unknown, then ask status.
async fn send(
    c: &Clients,
    j: &Journaled,
    l: &Ledger,
    prepared: &PreparedTransfer,
    drop_first: bool,
) -> (Belief, Option<String>) {
    let key = prepared.request_id().to_string();
    let target = Target {
        op: truth::Op::Send,
        key: key.clone(),
        service: whish::journal::Service::MoneyTransfer,
        operation: whish::journal::Operation::Send,
        journal_key: key,
    };
    let result = reported(
        j,
        l,
        &target,
        drop_first,
        || j.t.send(prepared),
        |o: &SendOutcome| (Verdict::Accepted, o.transfer_id().map(str::to_owned)),
    )
    .await;
    match result {
        Ok(SendOutcome::Sent(s)) => (Belief::Done, Some(s.ltn_number)),
        Ok(SendOutcome::Confirmed { status, .. }) => {
            let ltn = (status.status == TransferStatus::Sent)
                .then_some(status.ltn_number)
                .flatten()
                .filter(|l| !l.is_empty());
            (Belief::Done, ltn)
        }
        Ok(SendOutcome::Credited(_)) => (Belief::Done, None),
        Ok(_) => (Belief::Done, None),
        Err(e) if !e.outcome_unknown() => (Belief::NotDone, None),
        _ => {
            let query = StatusQuery::RequestId(prepared.request_id());
            match c.transfer.status(&query).await {
                Ok(_) => (Belief::Done, None),
                Err(Error::Failed(_)) => (Belief::NotDone, None),
                Err(_) => (Belief::Unknown, None),
            }
        }
    }
}

/// Cancel: sent again while the outcome is unknown (the client reads the status by LTN when
/// the service answers that it cannot be cancelled), then the caller reads the status.
async fn cancel(
    c: &Clients,
    j: &Journaled,
    l: &Ledger,
    id: i64,
    ltn: &str,
    drop_first: bool,
) -> Belief {
    let Ok(prepared) = c.transfer.prepare_cancel(ltn, Some("soak")) else {
        return Belief::NotDone;
    };
    let target = Target {
        op: truth::Op::Cancel,
        key: id.to_string(),
        service: whish::journal::Service::MoneyTransfer,
        operation: whish::journal::Operation::Cancel,
        journal_key: prepared.request_id().to_string(),
    };
    let result = reported(
        j,
        l,
        &target,
        drop_first,
        || j.t.cancel(&prepared),
        |_| (Verdict::Accepted, None),
    )
    .await;
    match result {
        Ok(_) => Belief::Done,
        Err(e) if !e.outcome_unknown() => Belief::NotDone,
        Err(_) => {
            let Ok(rid) = whish::RequestId::new(id) else {
                return Belief::Unknown;
            };
            match c.transfer.status(&StatusQuery::RequestId(rid)).await {
                Ok(s) if s.status == TransferStatus::CanceledFull => Belief::Done,
                Ok(_) => Belief::NotDone,
                Err(_) => Belief::Unknown,
            }
        }
    }
}

async fn create(
    c: &Clients,
    j: &Journaled,
    l: &Ledger,
    cents: u32,
    drop_first: bool,
) -> (String, Belief) {
    // The callbacks go to the soak's receiver on loopback, with the payment's reference.
    let id = ExternalId::generate();
    let at = |path: &str| format!("{}{path}", c.callbacks);
    let urls = CollectUrls::new(
        whish::collect::SuccessCallbackUrl::new(&at(whish::callbacks::SUCCESS_PATH))
            .expect("url")
            .with_reference("externalId", id.as_str())
            .with_reference("currency", "USD"),
        whish::collect::FailureCallbackUrl::new(&at(whish::callbacks::FAILURE_PATH))
            .expect("url")
            .with_reference("externalId", id.as_str())
            .with_reference("currency", "USD"),
        whish::collect::SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
        whish::collect::FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
    );
    let payment = NewPayment::new(
        Amount::new(Decimal::new(i64::from(cents), 2)),
        Currency::Usd,
        urls,
    )
    .external_id(id);
    let prepared = match c.collect.prepare_payment(payment) {
        Ok(p) => p,
        Err(_) => return (String::new(), Belief::NotDone),
    };
    let id = prepared.external_id().to_string();
    let target = Target {
        op: truth::Op::Create,
        key: id.clone(),
        service: whish::journal::Service::HostedCollect,
        operation: whish::journal::Operation::Create,
        journal_key: id.clone(),
    };
    let result = reported(
        j,
        l,
        &target,
        drop_first,
        || j.c.create_payment(&prepared),
        |_| (Verdict::Accepted, None),
    )
    .await;
    let belief = match result {
        Ok(_) => Belief::Done,
        Err(e) if !e.outcome_unknown() => Belief::NotDone,
        Err(_) => match c
            .collect
            .status(Currency::Usd, prepared.external_id())
            .await
        {
            Ok(_) => Belief::Done,
            Err(Error::Failed(_)) => Belief::NotDone,
            Err(_) => Belief::Unknown,
        },
    };
    (id, belief)
}

async fn refund(c: &Clients, j: &Journaled, l: &Ledger, id: &str, drop_first: bool) -> Belief {
    let Ok(external) = ExternalId::new(id) else {
        return Belief::NotDone;
    };
    let Ok(prepared) = c
        .collect
        .prepare_refund(Currency::Usd, &external, Some("soak"))
    else {
        return Belief::NotDone;
    };
    let target = Target {
        op: truth::Op::Refund,
        key: id.to_owned(),
        service: whish::journal::Service::HostedCollect,
        operation: whish::journal::Operation::Refund,
        journal_key: id.to_owned(),
    };
    let result = reported(
        j,
        l,
        &target,
        drop_first,
        || j.c.refund(&prepared),
        |_| (Verdict::Accepted, None),
    )
    .await;
    match result {
        Ok(_) => Belief::Done,
        Err(e) if !e.outcome_unknown() => Belief::NotDone,
        Err(_) => match c.collect.status(Currency::Usd, &external).await {
            Ok(s) if s.collect_status == CollectStatus::Refunded => Belief::Done,
            Ok(_) => Belief::NotDone,
            Err(_) => Belief::Unknown,
        },
    }
}

/// Fetch, then pay the fetched option; the top-up service has no status endpoint, so an unknown
/// outcome is resolved only by resending the same prepared pay (the same externalId replays).
async fn pay(
    c: &Clients,
    j: &Journaled,
    l: &Ledger,
    option: usize,
    drop_first: bool,
) -> Option<(String, Belief)> {
    let (provider, target_phone, option_id) = TOPUP_OPTIONS[option % TOPUP_OPTIONS.len()];
    let offer = c
        .topup
        .fetch_options(whish::topup::ProviderId::new(provider), target_phone)
        .await
        .ok()?;
    let prepared = c.topup.prepare_pay(offer.option(option_id)?).ok()?;
    let id = prepared.external_id().to_string();
    let target = Target {
        op: truth::Op::Pay,
        key: id.clone(),
        service: whish::journal::Service::IntlTopup,
        operation: whish::journal::Operation::Pay,
        journal_key: id.clone(),
    };
    let result = reported(
        j,
        l,
        &target,
        drop_first,
        || j.u.pay(&prepared),
        |o: &PayOutcome| {
            // A challenge charged nothing: a refusal of this externalId.
            match o {
                PayOutcome::Paid(_) => (Verdict::Accepted, None),
                _ => (Verdict::Refused, None),
            }
        },
    )
    .await;
    let belief = match result {
        Ok(PayOutcome::Paid(_)) => Belief::Done,
        Ok(_) => Belief::Unknown,
        Err(e) if !e.outcome_unknown() => Belief::NotDone,
        Err(_) => Belief::Unknown,
    };
    Some((id, belief))
}
