//! The background work of the receiver (handlers, status reads): bounded, timed, and waited for
//! at shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug, Clone)]
pub(crate) struct Tasks {
    permits: Arc<Semaphore>,
    size: u32,
}

impl Tasks {
    pub(crate) fn new(size: u32) -> Tasks {
        let size = size.max(1);
        Tasks {
            permits: Arc::new(Semaphore::new(size as usize)),
            size,
        }
    }

    /// A slot for one more task, or `None` when `size` are running (or shutdown began).
    pub(crate) fn slot(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }

    /// Run `work` in the background in `slot`, stopped after `limit`.
    pub(crate) fn spawn<F>(&self, slot: OwnedSemaphorePermit, limit: Duration, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        tokio::spawn(async move {
            if tokio::time::timeout(limit, work).await.is_err() {
                tracing::warn!(
                    limit_ms = limit.as_millis() as u64,
                    "a callback task ran out of time; its notification is handed on again later"
                );
            }
            drop(slot);
        });
    }

    /// Take no more work and wait for what runs to finish.
    pub(crate) async fn shutdown(&self) {
        if let Ok(all) = self.permits.acquire_many(self.size).await {
            all.forget();
        }
        self.permits.close();
    }
}
