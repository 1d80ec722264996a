//! The workers: a change held from the inbox is handed on under its lease, renewed every third
//! of it while the work runs, then marked handed on, or failed and tried again after a backoff
//! (past the deadline: left to a person). Nothing here is stopped by a time limit mid-await: a
//! status read or a handler that runs too long is aborted in its own task and counted as a
//! failure, and the mark is always written (or, if it cannot be, the lease runs out and the
//! change is taken again).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, watch};
use whish_core::RequestId;
use whish_hosted_collect::CollectStatus;
use whish_money_transfer::TransferStatus;

use crate::change::{Body, payment_of, status_of, trigger_of};
use crate::inbox::{ChangeKind, Held};
use crate::{PaymentUpdate, Shared, Source, TransferNotification, Trigger};

/// How a failed hand-on is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetrySettings {
    /// The wait after the first failure, doubled after each one (default 1 s).
    pub min_backoff: Duration,
    /// The longest wait between two tries (default 5 min).
    pub max_backoff: Duration,
    /// After this long since the change was recorded, a failure leaves it to a person
    /// (default 24 h).
    pub deadline: Duration,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            min_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            deadline: Duration::from_secs(24 * 3600),
        }
    }
}

impl RetrySettings {
    /// Waits from `min` doubling to `max`.
    pub fn backoff(mut self, min: Duration, max: Duration) -> Self {
        self.min_backoff = min;
        self.max_backoff = max.max(min);
        self
    }

    /// After this long since a change was recorded, a failure leaves it to a person.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The wait after the `attempts`-th failed try.
    pub(crate) fn wait_after(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(30);
        self.min_backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff)
    }
}

/// Hand `held` on in the background, in a worker slot of its kind.
pub(crate) fn spawn(shared: &Arc<Shared>, held: Held) {
    let shared = shared.clone();
    tokio::spawn(async move {
        let slots = shared.workers_for(ChangeKind::of(&held.key)).clone();
        let Ok(slot) = slots.acquire_owned().await else {
            return; // shutting down: the lease runs out and the change is taken at the next start
        };
        hand_on(shared, held, slot).await;
    });
}

/// How the lease of a change being handed on stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lease {
    Held,
    /// Not renewed for two thirds of a lease (the inbox unreachable): it may have run out.
    Unsure,
    /// Another worker holds it now.
    Lost,
}

/// Hand one change on and mark it.
pub(crate) async fn hand_on(shared: Arc<Shared>, held: Held, slot: OwnedSemaphorePermit) {
    // The lease may have run out while the change waited for a slot, and another worker may
    // hold it now: run nothing unless it is still ours (the rule the model checker explores,
    // `whish_journal::lifecycle::renew_before_work`).
    match shared.inbox.renew(&held).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::debug!(key = %held.key, "the change was taken by another worker while it waited for a slot");
            return;
        }
        Err(e) => {
            tracing::warn!(key = %held.key, error = %e, "the change's lease cannot be renewed; it is taken again when the lease runs out");
            return;
        }
    }
    let held = Arc::new(held);
    let (lease_tx, lease) = watch::channel(Lease::Held);
    let beat = tokio::spawn(heartbeat(shared.clone(), held.clone(), lease_tx));
    let outcome = work(&shared, &held, lease.clone()).await;
    let kind = ChangeKind::of(&held.key).as_str();
    whish_core::metrics::callback(kind, if outcome.is_ok() { "handled" } else { "failed" });
    if let Err(error) = &outcome {
        tracing::warn!(key = %held.key, attempts = held.attempts, %error, "the change could not be handed on; tried again after the backoff");
    }
    // The mark, written until it is known to have been written or not: a write that fails is
    // tried again (a mark never written means a second hand-on) while the heartbeat keeps the
    // lease; it stops when another worker holds the change, or at shutdown.
    let mut wait = Duration::from_millis(100);
    loop {
        if *lease.borrow() == Lease::Lost {
            tracing::warn!(key = %held.key, "the change's lease was lost; its new holder hands it on");
            break;
        }
        let written = match &outcome {
            Ok(()) => shared.inbox.handed_on(&held).await,
            Err(error) => {
                shared
                    .inbox
                    .failed(
                        &held,
                        error,
                        shared.retry.wait_after(held.attempts),
                        shared.retry.deadline,
                    )
                    .await
            }
        };
        match written {
            Ok(true) => break,
            Ok(false) => {
                tracing::warn!(key = %held.key, "the change's lease was lost before it was marked; its new holder hands it on");
                break;
            }
            Err(e) => {
                if *shared.stop.borrow() {
                    tracing::warn!(key = %held.key, error = %e, "stopping: the change's mark is not written; it is handed on again at the next start");
                    break;
                }
                tracing::warn!(key = %held.key, error = %e, "the inbox cannot be written; the mark is tried again");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_millis(500));
            }
        }
    }
    beat.abort();
    drop(slot);
}

/// Renew the lease every third of it. After two thirds of a lease without a renewal it is
/// `Unsure` (the work is stopped: another worker may take the change); `Lost` once another
/// worker holds it.
async fn heartbeat(shared: Arc<Shared>, held: Arc<Held>, lease: watch::Sender<Lease>) {
    let length = shared.inbox.lease();
    let every = (length / 3).max(Duration::from_millis(10));
    let mut renewed = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(every).await;
        match shared.inbox.renew(&held).await {
            Ok(true) => {
                renewed = tokio::time::Instant::now();
                lease.send_if_modified(|l| std::mem::replace(l, Lease::Held) != Lease::Held);
            }
            Ok(false) => {
                let _ = lease.send(Lease::Lost);
                return;
            }
            Err(e) => {
                tracing::warn!(key = %held.key, error = %e, "the change's lease cannot be renewed now");
                if renewed.elapsed() >= length * 2 / 3 {
                    lease
                        .send_if_modified(|l| std::mem::replace(l, Lease::Unsure) != Lease::Unsure);
                }
            }
        }
    }
}

/// Run `fut` in a task of its own (the handler is called inside it, so that a panic even in
/// its synchronous part is seen), stopped after the handler timeout or as soon as the lease is
/// not surely held. A stopped task is waited for until it has ended (one blocked in
/// synchronous code ends only when it returns to the runtime), so that it never runs beside
/// the next try; the heartbeat keeps the lease meanwhile.
async fn bounded<T, F>(
    shared: &Shared,
    mut lease: watch::Receiver<Lease>,
    what: &str,
    fut: F,
) -> Result<T, String>
where
    T: Send + 'static,
    F: Future<Output = Result<T, String>> + Send + 'static,
{
    let mut running = tokio::spawn(fut);
    let not_held = async move {
        loop {
            if *lease.borrow_and_update() != Lease::Held {
                return;
            }
            if lease.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    let stopped = tokio::select! {
        joined = &mut running => return match joined {
            Ok(result) => result,
            Err(e) if e.is_panic() => Err(format!("the {what} panicked")),
            Err(_) => Err(format!("the {what} was cancelled")),
        },
        _ = tokio::time::sleep(shared.handler_timeout) => {
            format!("the {what} ran out of time ({} ms)", shared.handler_timeout.as_millis())
        }
        _ = not_held => format!("the {what} was stopped: the lease was not renewed"),
    };
    running.abort();
    let _ = running.await;
    Err(stopped)
}

/// What one change needs: a handler call, or (a collect callback) a status read and the
/// payment's row recorded.
async fn work(
    shared: &Arc<Shared>,
    held: &Held,
    lease: watch::Receiver<Lease>,
) -> Result<(), String> {
    match Body::decode(&held.body)? {
        Body::Transfer {
            transfer_id,
            request_id,
            status,
            poller,
        } => {
            let side = shared
                .transfer
                .as_ref()
                .ok_or("no transfer handler is configured")?;
            let notification = TransferNotification {
                key: held.key.clone(),
                transfer_id,
                request_id: RequestId::new(request_id).map_err(|e| e.to_string())?,
                status: TransferStatus::parse(&status),
                source: if poller {
                    Source::Poller
                } else {
                    Source::Callback
                },
            };
            let handler = side.handler.clone();
            bounded(shared, lease, "handler", async move {
                handler
                    .handle(notification)
                    .await
                    .map_err(|e| e.to_string())
            })
            .await
        }
        Body::Payment {
            currency,
            external_id,
            status,
            payer_phone_number,
            trigger,
        } => {
            let side = shared
                .collect
                .as_ref()
                .ok_or("no collect handler is configured")?;
            let (currency, external_id) = payment_of(&currency, &external_id)?;
            let update = PaymentUpdate {
                key: held.key.clone(),
                external_id,
                currency,
                status: status_of(&status, payer_phone_number)?,
                trigger: trigger_of(&trigger),
            };
            let handler = side.handler.clone();
            bounded(shared, lease, "handler", async move {
                handler.handle(update).await.map_err(|e| e.to_string())
            })
            .await
        }
        Body::Signal {
            success,
            currency,
            external_id,
        } => {
            let side = shared
                .collect
                .as_ref()
                .ok_or("no collect handler is configured")?;
            let (currency, external_id) = payment_of(&currency, &external_id)?;
            let client = side.client.clone();
            let (c, id) = (currency.clone(), external_id.clone());
            let status = bounded(shared, lease, "status read", async move {
                client.status(c, &id).await.map_err(|e| e.to_string())
            })
            .await?;
            let confirmed = matches!(
                status.collect_status,
                CollectStatus::Success | CollectStatus::Failed | CollectStatus::Refunded
            );
            if success && !confirmed {
                return Err(format!(
                    "a success callback, but the status endpoint says {}: read again later",
                    status.collect_status
                ));
            }
            let trigger = if success {
                Trigger::SuccessCallback
            } else {
                Trigger::FailureCallback
            };
            record_payment(shared, &currency, &external_id, &status, trigger).await
        }
    }
}

/// Record a payment's status as read, and hand it on if it is new.
pub(crate) async fn record_payment(
    shared: &Arc<Shared>,
    currency: &whish_core::Currency,
    external_id: &whish_core::ExternalId,
    status: &whish_hosted_collect::PaymentStatus,
    trigger: Trigger,
) -> Result<(), String> {
    let row = Body::payment(currency, external_id, status, trigger);
    record(shared, &row).await.map(|_| ())
}

/// Record a row; hand it on in the background if it is new. Its key.
pub(crate) async fn record(shared: &Arc<Shared>, row: &Body) -> Result<String, String> {
    let key = row.key();
    match shared.inbox.record(&key, &row.encode()).await {
        Ok(Some(held)) => spawn(shared, held),
        Ok(None) => {}
        Err(e) => return Err(format!("the change cannot be recorded: {e}")),
    }
    Ok(key)
}

/// Take the changes whose lease is free or over (a dead worker's, a failure's after its
/// backoff, this process's own at start-up), of the kinds this receiver has handlers for, as
/// many as its workers of each kind can start now.
pub(crate) fn start_pump(shared: Arc<Shared>) {
    if shared
        .pumping
        .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        return;
    }
    let mut stop = shared.stop.subscribe();
    tokio::spawn(async move {
        loop {
            if *stop.borrow() {
                break;
            }
            for kind in shared.kinds() {
                let free = shared.workers_for(kind).available_permits().min(256) as u32;
                if free == 0 {
                    continue;
                }
                match shared.inbox.take(kind, free).await {
                    Ok(taken) => {
                        for held in taken {
                            spawn(&shared, held);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "the inbox cannot be read now"),
                }
            }
            tokio::select! {
                _ = stop.changed() => {}
                _ = tokio::time::sleep(shared.pump_interval) => {}
            }
        }
    });
}
