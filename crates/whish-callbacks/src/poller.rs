//! The poller: the specs reconcile a missing callback by polling status. Watched transfers and
//! payments are read with backoff until final, and feed the same handlers through the same
//! record as the callbacks.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use whish_core::{Currency, ExternalId, RequestId};
use whish_hosted_collect::CollectStatus;
use whish_money_transfer::{StatusQuery, TransferStatus};

use crate::collect::confirm_and_deliver;
use crate::{Shared, Source, TransferNotification, Trigger, deliver};

/// How the poller reads.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PollSettings {
    /// The first wait after a read, doubled after each read that changed nothing.
    pub min_interval: Duration,
    /// The longest wait between two reads of one item.
    pub max_interval: Duration,
    /// At most this many items watched; the oldest is dropped past it.
    pub max_watched: usize,
    /// At most this many reads per round.
    pub reads_per_round: usize,
}

impl Default for PollSettings {
    fn default() -> Self {
        PollSettings {
            min_interval: Duration::from_secs(5),
            max_interval: Duration::from_secs(600),
            max_watched: 10_000,
            reads_per_round: 32,
        }
    }
}

impl PollSettings {
    /// Reads from `min` apart, backing off to `max`.
    pub fn intervals(mut self, min: Duration, max: Duration) -> Self {
        self.min_interval = min;
        self.max_interval = max.max(min);
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Item {
    Transfer(RequestId),
    Payment(Currency, ExternalId),
}

#[derive(Debug)]
struct Watch {
    next: Instant,
    wait: Duration,
    since: Instant,
}

#[derive(Debug, Default)]
pub(crate) struct Watched {
    items: HashMap<Item, Watch>,
    settings: Option<PollSettings>,
}

pub(crate) fn watch(shared: &Shared, item: Item) {
    let mut w = shared.watched.lock().unwrap_or_else(|p| p.into_inner());
    let settings = w.settings.unwrap_or_default();
    if w.items.len() >= settings.max_watched
        && let Some(oldest) = w
            .items
            .iter()
            .min_by_key(|(_, v)| v.since)
            .map(|(k, _)| k.clone())
    {
        w.items.remove(&oldest);
    }
    let now = Instant::now();
    w.items.entry(item).or_insert(Watch {
        next: now,
        wait: settings.min_interval,
        since: now,
    });
}

pub(crate) fn start(shared: Arc<Shared>, settings: PollSettings) {
    shared
        .watched
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .settings = Some(settings);
    let mut stop = shared.stop.subscribe();
    tokio::spawn(async move {
        let tick = settings.min_interval.min(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                _ = tokio::time::sleep(tick) => {}
            }
            if *stop.borrow() {
                break;
            }
            round(&shared, settings).await;
        }
    });
}

/// Read every item that is due (at most `reads_per_round`), hand on what changed, forget what
/// is final, and back off the rest.
async fn round(shared: &Shared, settings: PollSettings) {
    let due: Vec<Item> = {
        let w = shared.watched.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let mut due: Vec<(&Item, &Watch)> = w.items.iter().filter(|(_, v)| v.next <= now).collect();
        due.sort_by_key(|(_, v)| v.next);
        due.into_iter()
            .take(settings.reads_per_round)
            .map(|(k, _)| k.clone())
            .collect()
    };
    for item in due {
        let final_state = match &item {
            Item::Transfer(id) => poll_transfer(shared, *id).await,
            Item::Payment(currency, id) => {
                confirm_and_deliver(shared, currency.clone(), id.clone(), Trigger::Poller)
                    .await
                    .map(|s| {
                        matches!(
                            s,
                            CollectStatus::Success
                                | CollectStatus::Failed
                                | CollectStatus::Refunded
                        )
                    })
            }
        };
        let mut w = shared.watched.lock().unwrap_or_else(|p| p.into_inner());
        if final_state == Some(true) {
            w.items.remove(&item);
        } else if let Some(watch) = w.items.get_mut(&item) {
            watch.wait = (watch.wait * 2).min(settings.max_interval);
            watch.next = Instant::now() + watch.wait;
        }
    }
}

/// Read a transfer by Request-id; `Some(true)` when it is final.
async fn poll_transfer(shared: &Shared, id: RequestId) -> Option<bool> {
    let client = shared.transfer_client.as_ref()?;
    let side = shared.transfer.as_ref()?;
    let status = match client.status(&StatusQuery::RequestId(id)).await {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!(request_id = %id, error = %e, "transfer status not read");
            return None;
        }
    };
    let transfer_id = status.transfer_id.clone()?;
    let notification = TransferNotification {
        transfer_id: transfer_id.clone(),
        request_id: id,
        status: status.status.clone(),
        source: Source::Poller,
    };
    deliver(
        shared,
        crate::notifications::transfer_subject(&transfer_id),
        status.status.as_str().to_owned(),
        side.handler.clone(),
        notification,
    )
    .await;
    Some(matches!(
        status.status,
        TransferStatus::Received | TransferStatus::CanceledFull
    ))
}
