//! Running the plan: concurrent workers drive the SDK clients against the sandbox the way a
//! careful caller does (store the key, resend the same prepared request on an unknown outcome,
//! then confirm with status), and write down what they end up believing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use whish::collect::{CollectClient, CollectStatus, CollectUrls, NewPayment};
use whish::core::Error;
use whish::topup::{PayOutcome, TopupClient};
use whish::transfer::{
    CashCollectionSend, Customer, MobileWalletSend, PreparedTransfer, Reason, SendOutcome,
    SendRequest, SourceOfFunds, StatusQuery, TransferClient, TransferStatus,
};
use whish::{Amount, Currency, Decimal, ExternalId, Policy, RetryPolicy, SecretString, Timeouts};
use whish_sandbox::Sandbox;

use crate::plan::{Kind, Op, TOPUP_OPTIONS};

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
    transfer: TransferClient,
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
    let ledger = Arc::new(Ledger::default());
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..workers.max(1) {
        let (sb, plan, clients, ledger, next) = (
            sb.clone(),
            plan.clone(),
            clients.clone(),
            ledger.clone(),
            next.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(op) = plan.get(i) else { break };
                if let (Some(fault), Some(endpoint)) = (op.fault, op.kind.endpoint()) {
                    sb.inject(endpoint, fault, 1);
                }
                one(&sb, &clients, &ledger, op).await;
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| format!("a worker panicked: {e}"))?;
    }
    Arc::try_unwrap(ledger).map_err(|_| "the ledger is still shared".to_owned())
}

async fn one(sb: &Sandbox, c: &Clients, l: &Ledger, op: &Op) {
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
            let (belief, ltn) = send(c, &prepared).await;
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
                let belief = cancel(c, id, &ltn).await;
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
            let (id, belief) = create(c, cents).await;
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
                let belief = refund(c, &id).await;
                lock(&l.refunds).push((id, belief));
            }
            None => {
                l.skipped.fetch_add(1, Ordering::Relaxed);
            }
        },
        Kind::TopupPay { option } => {
            if let Some((id, belief)) = pay(c, option).await {
                lock(&l.pays).push((id, belief));
            }
        }
    }
}

fn send_request(sb: &Sandbox, c: &Clients, cash: bool, dollars: u32, failing: bool) -> SendRequest {
    let amount = Amount::new(Decimal::from(dollars));
    let sender = Customer::new("John", "Smith", "+14155550100");
    if cash {
        CashCollectionSend::new(
            whish::transfer::CountryId::LEBANON,
            Currency::Usd,
            amount,
            whish::transfer::Sender::new(sender),
            whish::transfer::CashReceiver::new(
                Customer::new("Rami", "Haddad", "+96170123456"),
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
            whish::transfer::WalletReceiver::new(Customer::new("Rami", "Haddad", phone.clone())),
            Reason::Education,
            SourceOfFunds::Savings,
        )
        .into()
    }
}

/// How many times a caller resends the same prepared request before asking for the status.
const RECONCILE_RESENDS: usize = 3;

/// Call, then call again (the same prepared request: the same bytes and key) while `unknown`
/// says the outcome is not known, at most [`RECONCILE_RESENDS`] more times.
async fn resend_while_unknown<R, Fut>(
    mut call: impl FnMut() -> Fut,
    unknown: impl Fn(&R) -> bool,
) -> R
where
    Fut: std::future::Future<Output = R>,
{
    let mut result = call().await;
    for _ in 0..RECONCILE_RESENDS {
        if !unknown(&result) {
            break;
        }
        result = call().await;
    }
    result
}

/// An error after which the request may have been applied.
fn failed_unknown<T, C: whish::core::ErrorCode>(r: &Result<T, Error<C>>) -> bool {
    r.as_ref().is_err_and(Error::outcome_unknown)
}

/// Send, resending the same prepared transfer while the outcome is unknown, then ask status.
async fn send(c: &Clients, prepared: &PreparedTransfer) -> (Belief, Option<String>) {
    let result = resend_while_unknown(|| c.transfer.send(prepared), failed_unknown).await;
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

/// Cancel is not resent by the SDK (a resend could fail as "cannot be canceled" after a success):
/// on an unknown outcome the caller reads the status.
async fn cancel(c: &Clients, id: i64, ltn: &str) -> Belief {
    let Ok(prepared) = c.transfer.prepare_cancel(ltn, Some("soak")) else {
        return Belief::NotDone;
    };
    match c.transfer.cancel(&prepared).await {
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

async fn create(c: &Clients, cents: u32) -> (String, Belief) {
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
    let result = resend_while_unknown(|| c.collect.create_payment(&prepared), failed_unknown).await;
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

async fn refund(c: &Clients, id: &str) -> Belief {
    let Ok(external) = ExternalId::new(id) else {
        return Belief::NotDone;
    };
    let Ok(prepared) = c
        .collect
        .prepare_refund(Currency::Usd, &external, Some("soak"))
    else {
        return Belief::NotDone;
    };
    let result = resend_while_unknown(|| c.collect.refund(&prepared), failed_unknown).await;
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
async fn pay(c: &Clients, option: usize) -> Option<(String, Belief)> {
    let (provider, target, option_id) = TOPUP_OPTIONS[option % TOPUP_OPTIONS.len()];
    let offer = c.topup.fetch_options(provider, target).await.ok()?;
    let prepared = c.topup.prepare_pay(offer.option(option_id)?).ok()?;
    let id = prepared.external_id().to_string();
    let result = resend_while_unknown(|| c.topup.pay(&prepared), failed_unknown).await;
    let belief = match result {
        Ok(PayOutcome::Paid(_)) => Belief::Done,
        Ok(_) => Belief::Unknown,
        Err(e) if !e.outcome_unknown() => Belief::NotDone,
        Err(_) => Belief::Unknown,
    };
    Some((id, belief))
}
