//! Where the receiver records what it handed on: a (subject, status) pair is claimed before the
//! handler runs, completed after it finished, released when it failed. In memory by default; in
//! the journal (feature `journal`) so that a restart or a second process does not hand the same
//! change on twice.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A boxed future, for the object-safe traits of this crate.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A record that could not be read or written. The receiver answers 503 then, so the sender
/// delivers again later.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

/// The subject of a transfer's status changes: `transfer:<transferId>`, the spelling
/// `whish_journal::Journal::observe_callback` records too, so both paths share one record.
pub(crate) fn transfer_subject(transfer_id: &str) -> String {
    format!("transfer:{transfer_id}")
}

/// The subject of a hosted payment's statuses: `collect:<externalId>`.
pub(crate) fn payment_subject(external_id: &str) -> String {
    format!("collect:{external_id}")
}

/// The record of (subject, status) pairs handed on. Subjects are `transfer:<transferId>` and
/// `collect:<externalId>`.
pub trait Notifications: Send + Sync + 'static {
    /// Claim a pair for the handler: true the first time, and again when an earlier claim was
    /// neither completed nor released in time (its process died in the handler).
    fn claim<'a>(
        &'a self,
        subject: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// The handler finished: never hand this pair on again.
    fn complete<'a>(
        &'a self,
        subject: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The handler failed: the next sighting hands it on again.
    fn release<'a>(
        &'a self,
        subject: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Whether the record can be written now. A route that answers 200 before it records (the
    /// collect GETs, whose status is read in the background) asks first, and answers 503 when
    /// it cannot. The default says yes.
    fn ready(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }
}

#[derive(Debug, Clone, Copy)]
enum Mark {
    Claimed(Instant),
    Delivered(Instant),
}

/// The most pairs the in-memory record keeps by default.
pub const IN_MEMORY_CAPACITY: usize = 100_000;

/// The in-memory record: one process, forgotten at restart (the sender's redelivery and the
/// poller then hand a change on again). Claims not completed within `reclaim_after` are taken
/// again.
///
/// It is bounded: past its capacity ([`IN_MEMORY_CAPACITY`] pairs by default, a few tens of
/// megabytes at most) the older half of the delivered pairs is forgotten. A forgotten pair seen
/// again (a late redelivery of a change handed on long ago) is handed on again: at least once,
/// as after a restart. Use the journal for exactly once across restarts and forever.
#[derive(Debug, Clone)]
pub struct InMemory {
    marks: Arc<Mutex<HashMap<(String, String), Mark>>>,
    reclaim_after: Duration,
    capacity: usize,
}

impl Default for InMemory {
    fn default() -> Self {
        InMemory::new(Duration::from_secs(120))
    }
}

impl InMemory {
    /// A record whose unfinished claims are taken again after `reclaim_after`.
    pub fn new(reclaim_after: Duration) -> InMemory {
        InMemory {
            marks: Arc::default(),
            reclaim_after,
            capacity: IN_MEMORY_CAPACITY,
        }
    }

    /// At most this many pairs (at least 2): past it, the older half of the delivered ones is
    /// forgotten.
    pub fn capacity(mut self, pairs: usize) -> Self {
        self.capacity = pairs.max(2);
        self
    }

    /// How many pairs it holds now.
    pub fn len(&self) -> usize {
        self.with(|m| m.len())
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<(String, String), Mark>) -> T) -> T {
        f(&mut self.marks.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Notifications for InMemory {
    fn claim<'a>(
        &'a self,
        subject: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let claimed = self.with(|m| {
            let key = (subject.to_owned(), status.to_owned());
            match m.get(&key) {
                Some(Mark::Delivered(_)) => false,
                Some(Mark::Claimed(at)) if at.elapsed() < self.reclaim_after => false,
                _ => {
                    if m.len() >= self.capacity {
                        forget_older_half(m);
                    }
                    m.insert(key, Mark::Claimed(Instant::now()));
                    true
                }
            }
        });
        Box::pin(async move { Ok(claimed) })
    }

    fn complete<'a>(
        &'a self,
        subject: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.with(|m| {
            m.insert(
                (subject.to_owned(), status.to_owned()),
                Mark::Delivered(Instant::now()),
            )
        });
        Box::pin(async { Ok(()) })
    }

    fn release<'a>(
        &'a self,
        subject: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.with(|m| {
            let key = (subject.to_owned(), status.to_owned());
            if matches!(m.get(&key), Some(Mark::Claimed(_))) {
                m.remove(&key);
            }
        });
        Box::pin(async { Ok(()) })
    }
}

/// Forget the older half of the delivered pairs (claims in progress are kept).
fn forget_older_half(m: &mut HashMap<(String, String), Mark>) {
    let mut delivered: Vec<Instant> = m
        .values()
        .filter_map(|mark| match mark {
            Mark::Delivered(at) => Some(*at),
            Mark::Claimed(_) => None,
        })
        .collect();
    if delivered.is_empty() {
        return;
    }
    let middle = delivered.len() / 2;
    let (_, cut, _) = delivered.select_nth_unstable(middle);
    let cut = *cut;
    m.retain(|_, mark| !matches!(mark, Mark::Delivered(at) if *at <= cut));
}

/// The journal as the record: a change is handed on once across restarts and processes.
#[cfg(feature = "journal")]
impl Notifications for whish_journal::Journal {
    fn claim<'a>(
        &'a self,
        subject: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { Ok(self.claim_notification(subject, status).await?) })
    }
    fn complete<'a>(
        &'a self,
        subject: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.complete_notification(subject, status).await?) })
    }
    fn release<'a>(
        &'a self,
        subject: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.release_notification(subject, status).await?) })
    }
    fn ready(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.ping().await?) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn claim_complete_release_and_reclaim() {
        let n = InMemory::new(Duration::from_millis(50));
        assert!(n.claim("transfer:T1", "RECEIVED").await.expect("ok"));
        assert!(
            !n.claim("transfer:T1", "RECEIVED").await.expect("ok"),
            "claimed"
        );
        n.release("transfer:T1", "RECEIVED").await.expect("ok");
        assert!(
            n.claim("transfer:T1", "RECEIVED").await.expect("ok"),
            "released"
        );
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert!(
            n.claim("transfer:T1", "RECEIVED").await.expect("ok"),
            "expired claim"
        );
        n.complete("transfer:T1", "RECEIVED").await.expect("ok");
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert!(
            !n.claim("transfer:T1", "RECEIVED").await.expect("ok"),
            "delivered"
        );
        n.release("transfer:T1", "RECEIVED").await.expect("ok");
        assert!(
            !n.claim("transfer:T1", "RECEIVED").await.expect("ok"),
            "delivered stays"
        );
    }

    #[tokio::test]
    async fn the_in_memory_record_is_bounded() {
        let n = InMemory::default().capacity(1000);
        for i in 0..100_000 {
            let subject = format!("transfer:T{i}");
            assert!(n.claim(&subject, "RECEIVED").await.expect("ok"));
            n.complete(&subject, "RECEIVED").await.expect("ok");
        }
        assert!(n.len() <= 1000, "{}", n.len());
        // The newest pairs are remembered; a claim in progress is never forgotten.
        assert!(!n.claim("transfer:T99999", "RECEIVED").await.expect("ok"));
        assert!(n.claim("transfer:busy", "SENT").await.expect("ok"));
        for i in 0..5000 {
            let subject = format!("collect:X{i}");
            n.claim(&subject, "success").await.expect("ok");
            n.complete(&subject, "success").await.expect("ok");
        }
        assert!(
            !n.claim("transfer:busy", "SENT").await.expect("ok"),
            "still claimed"
        );
    }
}
