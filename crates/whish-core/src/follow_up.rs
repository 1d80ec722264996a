//! Following up an unknown outcome.

use std::future::Future;
use std::time::{Duration, Instant};

/// How a follow-up paces itself: the first wait, doubling up to `max_wait`, with full jitter.
///
/// Following up an unknown outcome: ask again, with backoff, until the answer is final or a
/// deadline passes. The service crates build their `await_final` helpers on it (transfer status
/// by Request-id, collect status by externalId, a top-up pay replayed with its externalId).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FollowUp {
    /// Give up after this long; the last answer is returned.
    pub deadline: Duration,
    /// The wait before the second question.
    pub first_wait: Duration,
    /// The longest wait between two questions.
    pub max_wait: Duration,
}

impl FollowUp {
    /// Ask until `deadline` has passed, waiting 1 s, then 2 s, 4 s, ... at most 30 s between
    /// questions.
    pub fn within(deadline: Duration) -> FollowUp {
        FollowUp {
            deadline,
            first_wait: Duration::from_secs(1),
            max_wait: Duration::from_secs(30),
        }
    }

    /// The waits between questions.
    pub fn waits(mut self, first: Duration, max: Duration) -> Self {
        self.first_wait = first;
        self.max_wait = max.max(first);
        self
    }

    /// Ask `ask` until `settled` says its answer is final, or the deadline passes; return the
    /// last answer either way. The first question is asked at once.
    pub async fn run<T, F, Fut>(self, mut ask: F, settled: impl Fn(&T) -> bool) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = T>,
    {
        let started = Instant::now();
        let mut wait = self.first_wait;
        loop {
            let answer = ask().await;
            let elapsed = started.elapsed();
            if settled(&answer) || elapsed >= self.deadline {
                return answer;
            }
            let left = self.deadline - elapsed;
            let pause = wait.mul_f64(crate::ids::unit_random()).min(left);
            tracing::debug!(
                wait_ms = pause.as_millis() as u64,
                "outcome not final yet; asking again"
            );
            tokio::time::sleep(pause).await;
            wait = wait.saturating_mul(2).min(self.max_wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn asks_until_settled() {
        let n = AtomicU32::new(0);
        let answer = FollowUp::within(Duration::from_secs(5))
            .waits(Duration::from_millis(1), Duration::from_millis(2))
            .run(
                || async { n.fetch_add(1, Ordering::SeqCst) + 1 },
                |v| *v >= 3,
            )
            .await;
        assert_eq!(answer, 3);
    }

    #[tokio::test]
    async fn stops_at_the_deadline_with_the_last_answer() {
        let n = AtomicU32::new(0);
        let answer = FollowUp::within(Duration::from_millis(30))
            .waits(Duration::from_millis(5), Duration::from_millis(5))
            .run(|| async { n.fetch_add(1, Ordering::SeqCst) + 1 }, |_| false)
            .await;
        assert!(answer >= 1 && answer == n.load(Ordering::SeqCst));
    }
}
