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
use crate::inbox::Held;
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

/// Hand `held` on in the background, in a worker slot.
pub(crate) fn spawn(shared: &Arc<Shared>, held: Held) {
    let shared = shared.clone();
    tokio::spawn(async move {
        let slots = shared.workers_for(&held.key).clone();
        let Ok(slot) = slots.acquire_owned().await else {
            return; // shutting down: the lease runs out and the change is taken at the next start
        };
        hand_on(shared, held, slot).await;
    });
}

/// Hand one change on and mark it.
pub(crate) async fn hand_on(shared: Arc<Shared>, held: Held, slot: OwnedSemaphorePermit) {
    let held = Arc::new(held);
    let (lost_tx, lost) = watch::channel(false);
    let beat = tokio::spawn(heartbeat(shared.clone(), held.clone(), lost_tx));
    let outcome = work(&shared, &held, lost.clone()).await;
    beat.abort();
    if *lost.borrow() {
        tracing::warn!(key = %held.key, "the change's lease was lost while it was handed on; its new holder hands it on");
        drop(slot);
        return;
    }
    let kind = kind_of(&held.key);
    let written = match &outcome {
        Ok(()) => {
            whish_core::metrics::callback(kind, "handled");
            shared.inbox.handed_on(&held).await
        }
        Err(error) => {
            whish_core::metrics::callback(kind, "failed");
            let backoff = shared.retry.wait_after(held.attempts);
            tracing::warn!(key = %held.key, attempts = held.attempts, %error, backoff_ms = backoff.as_millis() as u64, "the change could not be handed on; tried again after the backoff");
            shared
                .inbox
                .failed(&held, error, backoff, shared.retry.deadline)
                .await
        }
    };
    match written {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(key = %held.key, "the change's lease was lost before it was marked; its new holder hands it on")
        }
        Err(e) => {
            tracing::warn!(key = %held.key, error = %e, "the inbox cannot be written; the change is taken again when its lease runs out")
        }
    }
    drop(slot);
}

/// Renew the lease every third of it; say so when it was lost.
async fn heartbeat(shared: Arc<Shared>, held: Arc<Held>, lost: watch::Sender<bool>) {
    let every = (shared.inbox.lease() / 3).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(every).await;
        match shared.inbox.renew(&held).await {
            Ok(true) => {}
            Ok(false) => {
                let _ = lost.send(true);
                return;
            }
            Err(e) => {
                tracing::warn!(key = %held.key, error = %e, "the change's lease cannot be renewed now");
            }
        }
    }
}

/// The `kind` label of a change's key.
pub(crate) fn kind_of(key: &str) -> &'static str {
    if key.starts_with(crate::change::TRANSFER_PREFIX) {
        "transfer"
    } else {
        "collect"
    }
}

/// Run `fut` in a task of its own (the handler is called inside it, so that a panic even in
/// its synchronous part is seen), aborted after the handler timeout or as soon as the lease is
/// lost.
async fn bounded<T, F>(
    shared: &Shared,
    mut lost: watch::Receiver<bool>,
    what: &str,
    fut: F,
) -> Result<T, String>
where
    T: Send + 'static,
    F: Future<Output = Result<T, String>> + Send + 'static,
{
    let running = tokio::spawn(fut);
    let abort = running.abort_handle();
    let lease_lost = async move {
        while !*lost.borrow_and_update() {
            if lost.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        joined = running => match joined {
            Ok(result) => result,
            Err(e) if e.is_panic() => Err(format!("the {what} panicked")),
            Err(_) => Err(format!("the {what} was cancelled")),
        },
        _ = tokio::time::sleep(shared.handler_timeout) => {
            abort.abort();
            Err(format!("the {what} ran out of time ({} ms)", shared.handler_timeout.as_millis()))
        }
        _ = lease_lost => {
            abort.abort();
            Err(format!("the {what} was stopped: the lease was lost"))
        }
    }
}

/// What one change needs: a handler call, or (a collect callback) a status read and the
/// payment's row recorded.
async fn work(
    shared: &Arc<Shared>,
    held: &Held,
    lost: watch::Receiver<bool>,
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
            bounded(shared, lost, "handler", async move {
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
            bounded(shared, lost, "handler", async move {
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
            let status = bounded(shared, lost, "status read", async move {
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
/// backoff, this process's own at start-up) while workers are free.
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
            let free = (shared.transfer_workers.available_permits()
                + shared.collect_workers.available_permits())
            .min(256) as u32;
            if free > 0 {
                match shared.inbox.take(free).await {
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
