//! The inbox: every change a service reports is recorded here, durably and with what finishing
//! it needs, **before** the receiver answers 200; workers then take it under a lease, hand it
//! on, and mark it. In memory by default (one process; forgotten at restart, when the service's
//! redelivery and the poller bring the changes back); the journal's inbox with the `journal`
//! feature, where a restart, a second receiver or a dead worker loses nothing.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A boxed future, for the object-safe traits of this crate.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An inbox that could not be read or written. A route answers 503 then, so the service
/// delivers again; a worker leaves the change to its lease, and it is taken again.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

/// Where a change stands in the inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangeState {
    /// Not handed on yet: new, being handed on, or failed and waiting for its next try.
    Waiting,
    /// A handler took it; it is never handed on again.
    HandedOn,
    /// It kept failing until the deadline: it waits for a person (`whish inbox hand-on`).
    Escalated,
}

/// Which handler a change goes to, as its key says: `transfer:` keys to the transfer handler,
/// the others (`signal:`, `collect:`) to the collect side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeKind {
    /// A transfer's status change.
    Transfer,
    /// A collect callback or a payment's status.
    Collect,
}

impl ChangeKind {
    /// The kind of the change under `key`.
    pub fn of(key: &str) -> ChangeKind {
        if key.starts_with(crate::change::TRANSFER_PREFIX) {
            ChangeKind::Transfer
        } else {
            ChangeKind::Collect
        }
    }

    /// `transfer` or `collect` (the metrics' `kind` label).
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Transfer => "transfer",
            ChangeKind::Collect => "collect",
        }
    }
}

/// A change this process holds the lease of: the receiver's workers hand it on and mark it.
pub struct Held {
    /// The change's key: stable across redeliveries, the key of your handler's idempotency.
    pub key: String,
    /// What finishing it needs, as the receiver wrote it.
    pub body: Vec<u8>,
    /// How many times a worker took it, this time included.
    pub attempts: u32,
    /// The last failure of its status read or handler, if any.
    pub last_error: Option<String>,
    lease: Box<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("key", &self.key)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

impl Held {
    /// A held change, for an [`Inbox`] of your own: `lease` is whatever your inbox needs to
    /// renew and mark it (read back with [`lease`](Self::lease)).
    pub fn new(
        key: String,
        body: Vec<u8>,
        attempts: u32,
        last_error: Option<String>,
        lease: impl Any + Send + Sync,
    ) -> Held {
        Held {
            key,
            body,
            attempts,
            last_error,
            lease: Box::new(lease),
        }
    }

    /// The lease this change was given by its inbox.
    pub fn lease<T: Any>(&self) -> Option<&T> {
        self.lease.downcast_ref()
    }
}

/// Where the receiver records the changes it is told of. [`InMemory`] and (feature `journal`)
/// `whish_journal::Journal` are the two the crate offers.
///
/// The contract every implementation keeps:
/// - [`record`](Self::record) returns only once the change is stored as durably as the inbox
///   stores anything, and an error when that cannot be confirmed (the route answers 503).
/// - a held change's lease lasts [`lease`](Self::lease) unless renewed; an expired one may be
///   taken by another worker, and the old holder's marks then change nothing.
pub trait Inbox: Send + Sync + 'static {
    /// Record a change under `key` with `body`: `Some` when it is new (held by this process:
    /// the receiver hands it on), `None` when it was recorded before (a redelivery).
    fn record<'a>(
        &'a self,
        key: &'a str,
        body: &'a [u8],
    ) -> BoxFuture<'a, Result<Option<Held>, StoreError>>;
    /// Take up to `limit` waiting changes of `kind` whose lease is free or over, oldest first.
    fn take(&self, kind: ChangeKind, limit: u32) -> BoxFuture<'_, Result<Vec<Held>, StoreError>>;
    /// Renew the lease of a held change: false when it was lost.
    fn renew<'a>(&'a self, held: &'a Held) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// The handler took it: never hand it on again. False when the lease was lost.
    fn handed_on<'a>(&'a self, held: &'a Held) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Its status read or handler failed with `error`: take it again after `backoff`, or, past
    /// `deadline` after it was recorded, leave it to a person. False when the lease was lost.
    fn failed<'a>(
        &'a self,
        held: &'a Held,
        error: &'a str,
        backoff: Duration,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Where the change under `key` stands, if it is recorded.
    fn state<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<ChangeState>, StoreError>>;
    /// How long a lease lasts unless renewed; the receiver renews every third of it.
    fn lease(&self) -> Duration;
}

/// The most changes the in-memory inbox keeps by default.
pub const IN_MEMORY_CAPACITY: usize = 100_000;

#[derive(Debug)]
struct Row {
    body: Vec<u8>,
    state: ChangeState,
    token: u64,
    until: Option<Instant>,
    attempts: u32,
    last_error: Option<String>,
    recorded: Instant,
    updated: Instant,
    seq: u64,
}

#[derive(Debug, Default)]
struct Rows {
    rows: HashMap<String, Row>,
    next: u64,
}

/// The in-memory inbox: the same contract as the journal's for one process, forgotten at
/// restart (the service's redelivery and the poller then bring changes back: at least once).
///
/// It is bounded: past its capacity ([`IN_MEMORY_CAPACITY`] changes by default) the older half
/// of the changes handed on is forgotten; a change not yet handed on is never forgotten. A
/// forgotten change delivered again is handed on again. Use the journal for a change handed on
/// once across restarts and processes.
#[derive(Debug, Clone)]
pub struct InMemory {
    rows: Arc<Mutex<Rows>>,
    lease: Duration,
    capacity: usize,
}

impl Default for InMemory {
    fn default() -> Self {
        InMemory::new(Duration::from_secs(30))
    }
}

impl InMemory {
    /// An inbox whose leases last `lease` unless renewed.
    pub fn new(lease: Duration) -> InMemory {
        InMemory {
            rows: Arc::default(),
            lease: lease.max(Duration::from_millis(30)),
            capacity: IN_MEMORY_CAPACITY,
        }
    }

    /// At most this many changes handed on are remembered (at least 2).
    pub fn capacity(mut self, changes: usize) -> Self {
        self.capacity = changes.max(2);
        self
    }

    /// How many changes it holds now.
    pub fn len(&self) -> usize {
        self.with(|r| r.rows.len())
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with<T>(&self, f: impl FnOnce(&mut Rows) -> T) -> T {
        f(&mut self.rows.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Lease `row` to a new holder: its token.
    fn lease_row(&self, rows_next: &mut u64, row: &mut Row, now: Instant) -> u64 {
        *rows_next += 1;
        row.token = *rows_next;
        row.until = Some(now + self.lease);
        row.token
    }

    /// Run `f` on the row of `held` if `held` still holds its lease.
    fn if_held<T>(&self, held: &Held, f: impl FnOnce(&mut Row, Instant) -> T) -> Option<T> {
        let token = *held.lease::<u64>()?;
        self.with(|r| {
            let row = r.rows.get_mut(&held.key)?;
            let now = Instant::now();
            let live = row.token == token
                && row.state == ChangeState::Waiting
                && row.until.is_some_and(|u| u > now);
            live.then(|| f(row, now))
        })
    }
}

fn held_of(key: &str, row: &Row) -> Held {
    Held::new(
        key.to_owned(),
        row.body.clone(),
        row.attempts,
        row.last_error.clone(),
        row.token,
    )
}

impl Inbox for InMemory {
    fn record<'a>(
        &'a self,
        key: &'a str,
        body: &'a [u8],
    ) -> BoxFuture<'a, Result<Option<Held>, StoreError>> {
        let held = self.with(|r| {
            if r.rows.contains_key(key) {
                return None;
            }
            if r.rows.len() >= self.capacity {
                forget_older_half(&mut r.rows);
            }
            let now = Instant::now();
            r.next += 1;
            let mut row = Row {
                body: body.to_vec(),
                state: ChangeState::Waiting,
                token: 0,
                until: None,
                attempts: 1,
                last_error: None,
                recorded: now,
                updated: now,
                seq: r.next,
            };
            self.lease_row(&mut r.next, &mut row, now);
            let held = held_of(key, &row);
            r.rows.insert(key.to_owned(), row);
            Some(held)
        });
        Box::pin(async move { Ok(held) })
    }

    fn take(&self, kind: ChangeKind, limit: u32) -> BoxFuture<'_, Result<Vec<Held>, StoreError>> {
        let taken = self.with(|r| {
            let now = Instant::now();
            let mut due: Vec<(u64, String)> = r
                .rows
                .iter()
                .filter(|(key, row)| {
                    row.state == ChangeState::Waiting
                        && row.until.is_none_or(|u| u <= now)
                        && ChangeKind::of(key) == kind
                })
                .map(|(k, row)| (row.seq, k.clone()))
                .collect();
            due.sort();
            due.truncate(limit as usize);
            let mut taken = Vec::with_capacity(due.len());
            for (_, key) in due {
                let mut next = r.next;
                if let Some(row) = r.rows.get_mut(&key) {
                    row.attempts += 1;
                    self.lease_row(&mut next, row, now);
                    taken.push(held_of(&key, row));
                }
                r.next = next;
            }
            taken
        });
        Box::pin(async move { Ok(taken) })
    }

    fn renew<'a>(&'a self, held: &'a Held) -> BoxFuture<'a, Result<bool, StoreError>> {
        let lease = self.lease;
        let renewed = self
            .if_held(held, |row, now| row.until = Some(now + lease))
            .is_some();
        Box::pin(async move { Ok(renewed) })
    }

    fn handed_on<'a>(&'a self, held: &'a Held) -> BoxFuture<'a, Result<bool, StoreError>> {
        let done = self
            .if_held(held, |row, now| {
                row.state = ChangeState::HandedOn;
                row.until = None;
                row.updated = now;
            })
            .is_some();
        Box::pin(async move { Ok(done) })
    }

    fn failed<'a>(
        &'a self,
        held: &'a Held,
        error: &'a str,
        backoff: Duration,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let done = self
            .if_held(held, |row, now| {
                row.last_error = Some(error.to_owned());
                row.updated = now;
                if now.duration_since(row.recorded) > deadline {
                    row.state = ChangeState::Escalated;
                    row.until = None;
                } else {
                    row.until = Some(now + backoff);
                }
            })
            .is_some();
        Box::pin(async move { Ok(done) })
    }

    fn state<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<ChangeState>, StoreError>> {
        let state = self.with(|r| r.rows.get(key).map(|row| row.state));
        Box::pin(async move { Ok(state) })
    }

    fn lease(&self) -> Duration {
        self.lease
    }
}

/// Forget the older half of the changes handed on (the others are never forgotten).
fn forget_older_half(rows: &mut HashMap<String, Row>) {
    let mut done: Vec<Instant> = rows
        .values()
        .filter(|row| row.state == ChangeState::HandedOn)
        .map(|row| row.updated)
        .collect();
    if done.is_empty() {
        return;
    }
    let middle = done.len() / 2;
    let (_, cut, _) = done.select_nth_unstable(middle);
    let cut = *cut;
    rows.retain(|_, row| !(row.state == ChangeState::HandedOn && row.updated <= cut));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_is_recorded_once_held_and_taken_again_only_when_its_lease_is_over() {
        let inbox = InMemory::new(Duration::from_millis(300));
        let held = inbox.record("k", b"body").await.expect("ok").expect("new");
        assert!(inbox.record("k", b"body").await.expect("ok").is_none());
        assert!(
            inbox
                .take(ChangeKind::Collect, 10)
                .await
                .expect("ok")
                .is_empty(),
            "leased"
        );
        assert!(inbox.renew(&held).await.expect("ok"));
        tokio::time::sleep(Duration::from_millis(450)).await;
        let again = inbox.take(ChangeKind::Collect, 10).await.expect("ok");
        assert_eq!(again.len(), 1);
        assert_eq!(
            (again[0].attempts, again[0].body.as_slice()),
            (2, &b"body"[..])
        );
        // The first holder's lease is over: its marks change nothing.
        assert!(!inbox.handed_on(&held).await.expect("ok"));
        assert!(!inbox.renew(&held).await.expect("ok"));
        assert!(inbox.handed_on(&again[0]).await.expect("ok"));
        assert_eq!(
            inbox.state("k").await.expect("ok"),
            Some(ChangeState::HandedOn)
        );
        tokio::time::sleep(Duration::from_millis(90)).await;
        assert!(
            inbox
                .take(ChangeKind::Collect, 10)
                .await
                .expect("ok")
                .is_empty(),
            "handed on"
        );
    }

    #[tokio::test]
    async fn a_failure_waits_out_its_backoff_and_past_the_deadline_waits_for_a_person() {
        let inbox = InMemory::new(Duration::from_secs(60));
        let held = inbox.record("k", b"").await.expect("ok").expect("new");
        let backoff = Duration::from_millis(50);
        assert!(
            inbox
                .failed(&held, "503", backoff, Duration::from_secs(60))
                .await
                .expect("ok")
        );
        assert!(
            inbox
                .take(ChangeKind::Collect, 10)
                .await
                .expect("ok")
                .is_empty(),
            "inside the backoff"
        );
        tokio::time::sleep(Duration::from_millis(70)).await;
        let again = inbox.take(ChangeKind::Collect, 10).await.expect("ok");
        assert_eq!(again[0].last_error.as_deref(), Some("503"));
        assert!(
            inbox
                .failed(&again[0], "503 again", backoff, Duration::ZERO)
                .await
                .expect("ok")
        );
        assert_eq!(
            inbox.state("k").await.expect("ok"),
            Some(ChangeState::Escalated)
        );
        tokio::time::sleep(Duration::from_millis(70)).await;
        assert!(
            inbox
                .take(ChangeKind::Collect, 10)
                .await
                .expect("ok")
                .is_empty(),
            "a person's"
        );
    }

    #[tokio::test]
    async fn the_in_memory_inbox_forgets_only_changes_handed_on() {
        let inbox = InMemory::default().capacity(1000);
        let busy = inbox.record("busy", b"").await.expect("ok").expect("new");
        for i in 0..20_000 {
            let key = format!("k{i}");
            let held = inbox.record(&key, b"").await.expect("ok").expect("new");
            assert!(inbox.handed_on(&held).await.expect("ok"));
        }
        assert!(inbox.len() <= 1000, "{}", inbox.len());
        assert!(inbox.record("k19999", b"").await.expect("ok").is_none());
        assert_eq!(
            inbox.state("busy").await.expect("ok"),
            Some(ChangeState::Waiting)
        );
        assert!(inbox.renew(&busy).await.expect("ok"));
    }
}
