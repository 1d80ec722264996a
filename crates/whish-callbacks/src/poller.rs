//! The poller: the specs reconcile a missing callback by polling status. Watched transfers and
//! payments are read with backoff, and what they say is recorded in the same inbox as the
//! callbacks (the same keys: a change told by both is handed on once). An item is forgotten
//! only once its final change has been handed on (or left to a person), not when its status
//! is final.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use whish_core::{Currency, ExternalId, RequestId};
use whish_hosted_collect::CollectStatus;
use whish_money_transfer::{StatusQuery, TransferStatus};

use crate::change::Body;
use crate::inbox::ChangeState;
use crate::{Shared, Source, Trigger, work};

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
    /// The key of its final change, once recorded: the item is forgotten when it is handed on.
    last: Option<String>,
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
        last: None,
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

/// Read every item that is due (at most `reads_per_round`), record what it says, forget what
/// was handed on in the end, and back off the rest.
async fn round(shared: &Arc<Shared>, settings: PollSettings) {
    let due: Vec<(Item, Option<String>)> = {
        let w = shared.watched.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let mut due: Vec<(&Item, &Watch)> = w.items.iter().filter(|(_, v)| v.next <= now).collect();
        due.sort_by_key(|(_, v)| v.next);
        due.into_iter()
            .take(settings.reads_per_round)
            .map(|(k, v)| (k.clone(), v.last.clone()))
            .collect()
    };
    for (item, last) in due {
        let outcome = match last {
            // The final change is recorded: is it handed on yet?
            Some(key) => match shared.inbox.state(&key).await {
                Ok(Some(ChangeState::HandedOn | ChangeState::Escalated)) => Seen::Done,
                Ok(Some(_)) => Seen::Final(key),
                // Not there (an in-memory inbox forgot it, or it was pruned): read again.
                Ok(None) => Seen::Nothing,
                Err(e) => {
                    tracing::debug!(%key, error = %e, "the inbox cannot be read now");
                    Seen::Final(key)
                }
            },
            None => match &item {
                Item::Transfer(id) => poll_transfer(shared, *id).await,
                Item::Payment(currency, id) => poll_payment(shared, currency, id).await,
            },
        };
        let mut w = shared.watched.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(outcome, Seen::Done) {
            w.items.remove(&item);
        } else if let Some(watch) = w.items.get_mut(&item) {
            if let Seen::Final(key) = outcome {
                watch.last = Some(key);
            } else {
                watch.last = None;
            }
            watch.wait = (watch.wait * 2).min(settings.max_interval);
            watch.next = Instant::now() + watch.wait;
        }
    }
}

/// What a read of one item found.
enum Seen {
    /// Nothing final recorded (not read, or not final).
    Nothing,
    /// Its final change is recorded under this key, not yet handed on.
    Final(String),
    /// Its final change was handed on: forget the item.
    Done,
}

/// Read a transfer by Request-id and record its status.
async fn poll_transfer(shared: &Arc<Shared>, id: RequestId) -> Seen {
    let Some(client) = shared.transfer_client.as_ref() else {
        return Seen::Nothing;
    };
    let status = match client.status(&StatusQuery::RequestId(id)).await {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!(request_id = %id, error = %e, "transfer status not read");
            return Seen::Nothing;
        }
    };
    let Some(transfer_id) = status.transfer_id.clone() else {
        return Seen::Nothing;
    };
    let row = Body::transfer(&transfer_id, id, &status.status, Source::Poller);
    let final_state = matches!(
        status.status,
        TransferStatus::Received | TransferStatus::CanceledFull
    );
    recorded(work::record(shared, &row).await, final_state)
}

/// Read a payment and record its status.
async fn poll_payment(shared: &Arc<Shared>, currency: &Currency, id: &ExternalId) -> Seen {
    let Some(side) = shared.collect.as_ref() else {
        return Seen::Nothing;
    };
    let status = match side.client.status(currency.clone(), id).await {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!(external_id = %id, error = %e, "payment status not read");
            return Seen::Nothing;
        }
    };
    let final_state = matches!(
        status.collect_status,
        CollectStatus::Success | CollectStatus::Failed | CollectStatus::Refunded
    );
    let row = Body::payment(currency, id, &status, Trigger::Poller);
    recorded(work::record(shared, &row).await, final_state)
}

fn recorded(key: Result<String, String>, final_state: bool) -> Seen {
    match key {
        Ok(key) if final_state => Seen::Final(key),
        Ok(_) => Seen::Nothing,
        Err(e) => {
            tracing::warn!(error = %e, "the poller's read cannot be recorded; read again later");
            Seen::Nothing
        }
    }
}
