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
}

#[derive(Debug, Clone, Copy)]
enum Mark {
    Claimed(Instant),
    Delivered,
}

/// The in-memory record: one process, forgotten at restart (the sender's redelivery and the
/// poller then hand a change on again). Claims not completed within `reclaim_after` are taken
/// again.
#[derive(Debug, Clone)]
pub struct InMemory {
    marks: Arc<Mutex<HashMap<(String, String), Mark>>>,
    reclaim_after: Duration,
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
        }
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
                Some(Mark::Delivered) => false,
                Some(Mark::Claimed(at)) if at.elapsed() < self.reclaim_after => false,
                _ => {
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
        self.with(|m| m.insert((subject.to_owned(), status.to_owned()), Mark::Delivered));
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
}
