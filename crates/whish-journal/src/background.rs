//! Outcomes recorded after the call returned.
//!
//! An answer whose report cannot depend on what the journal records (an acceptance, Pending, an
//! unknown outcome: the call tells it as it is whether or not this process still held the
//! entry) is recorded by a task of its own, and the call returns at once. The entry stays open
//! and leased to this process until the write lands, so no other process sends it meanwhile;
//! if the write never lands (the process died), recovery asks the service again with the same
//! key, a resend the service answers without acting twice.
//!
//! This process always reads what it did: the journal's reads, recovery and a resend of a key
//! wait first for the writes begun before them ([`Background::wait`]). Writes that begin
//! meanwhile are not waited for, so a busy journal never keeps a reader waiting.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// The outcome writes under way in the background, by the order they began in.
#[derive(Debug, Default)]
pub(crate) struct Background {
    under_way: Mutex<BTreeSet<u64>>,
    next: AtomicU64,
    idle: Notify,
}

impl Background {
    /// Put a write on the list; it comes off when the returned guard is dropped, however its
    /// task ends (done, panicked, or dropped with its runtime), so a wait never waits for a
    /// write that will not come.
    pub(crate) fn begin(self: &std::sync::Arc<Self>) -> Done {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut u) = self.under_way.lock() {
            u.insert(id);
        }
        Done {
            list: self.clone(),
            id,
        }
    }

    /// Wait until every write begun before this call has ended.
    pub(crate) async fn wait(&self) {
        let before = self.next.load(Ordering::SeqCst);
        loop {
            let idle = self.idle.notified();
            let oldest = self
                .under_way
                .lock()
                .map(|u| u.first().copied())
                .unwrap_or(None);
            if oldest.is_none_or(|o| o >= before) {
                return;
            }
            idle.await;
        }
    }

    /// How many writes are under way.
    pub(crate) fn len(&self) -> usize {
        self.under_way.lock().map(|u| u.len()).unwrap_or(0)
    }
}

/// One background write on the list; dropping it takes the write off.
pub(crate) struct Done {
    list: std::sync::Arc<Background>,
    id: u64,
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Ok(mut u) = self.list.under_way.lock() {
            u.remove(&self.id);
        }
        self.list.idle.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_wait_ends_when_the_writes_begun_before_it_end_and_not_later_ones() {
        let list = Arc::new(Background::default());
        let first = list.begin();
        let waiter = {
            let list = list.clone();
            tokio::spawn(async move { list.wait().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        // A write begun after the wait does not hold it up.
        let later = list.begin();
        assert!(!waiter.is_finished(), "it waits for the earlier write");
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("the wait ended once the earlier write did")
            .expect("join");
        assert_eq!(list.len(), 1);
        drop(later);
        assert_eq!(list.len(), 0);
        // Nothing under way: no wait at all.
        tokio::time::timeout(Duration::from_millis(100), list.wait())
            .await
            .expect("an idle list never waits");
    }

    #[tokio::test]
    async fn a_write_whose_task_is_dropped_comes_off_the_list() {
        let list = Arc::new(Background::default());
        let done = list.begin();
        let task = tokio::spawn(async move {
            let _done = done;
            std::future::pending::<()>().await;
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        task.abort();
        tokio::time::timeout(Duration::from_secs(5), list.wait())
            .await
            .expect("an aborted write does not keep a wait waiting");
    }
}
