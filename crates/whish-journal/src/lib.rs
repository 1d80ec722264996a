//! Idempotency that survives a crash.
//!
//! Every guide of these services says "store the Request-id (or externalId) before sending".
//! The journal does it: each money-moving request (transfer send and cancel, collect create
//! and refund, top-up pay) is written durably, with its key and its exact bytes, **before the
//! first byte is sent**; each outcome is written when it arrives; and
//! [`recover`](Journal::recover) finishes whatever a crash, a deploy or a lost reply left open,
//! with the same key and the same bytes. A second transfer or a second charge cannot come out
//! of a restart.
//!
//! - SQLite by default: one file, WAL, every commit synchronous (`synchronous = FULL`).
//! - PostgreSQL for several processes or machines on one journal: entries are leased while
//!   they are worked on (`FOR UPDATE SKIP LOCKED`, with an expiry), so two recovering
//!   processes never work on the same entry.
//!
//! The journal keeps no credential (they travel in headers) and no sold PIN; it keeps request
//! bodies, which hold personal data: [`prune`](Journal::prune) final entries on your
//! retention schedule.
//!
//! # Examples
//!
//! ```no_run
//! # async fn run(client: whish_money_transfer::TransferClient,
//! #              send: whish_money_transfer::CashCollectionSend) -> Result<(), Box<dyn std::error::Error>> {
//! use whish_journal::{Clients, Journal, Recovery};
//!
//! let journal = Journal::open("sqlite:/var/lib/shop/whish-journal.sqlite").await?;
//!
//! // At start-up: finish what the last run left open.
//! let report = journal
//!     .recover(&Clients::new().transfer(client.clone()), &Recovery::new())
//!     .await?;
//! println!("{} entries recovered", report.changes.len());
//!
//! // Then send through the journal: the same answers as the client's.
//! let transfers = journal.transfer(client.clone());
//! let prepared = transfers.client().prepare_send(send)?;
//! let outcome = transfers.send(&prepared).await?;
//! println!("LTN {:?}", outcome.ltn_number());
//! # Ok(()) }
//! ```

mod entry;
mod error;
mod journaled;
mod recover;
mod status;
mod store;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use entry::{Entry, Operation, Outcome, References, Service, State};
pub use error::{JournalError, JournalErrorKind};
pub use journaled::{JournaledCollect, JournaledTopup, JournaledTransfer};
pub use recover::{Change, Clients, HeldElsewhere, Recovery, RecoveryReport};
pub use store::Backend;

use store::{Db, now_ms};
use whish_hosted_collect::CollectClient;
use whish_intl_topup::TopupClient;
use whish_money_transfer::TransferClient;

/// The default lease: how long a process holds an entry it is sending or recovering before
/// another process may take it. Longer than one call with the default policy.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(120);

/// A journal: cheap to clone, shared by every client that records in it.
#[derive(Debug, Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    db: Db,
    /// This process's name on the leases it takes.
    owner: String,
    lease: Duration,
}

/// Opens a [`Journal`] with settings other than the defaults.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until open() is called"]
pub struct JournalBuilder {
    url: String,
    lease: Duration,
}

impl JournalBuilder {
    /// How long this process holds an entry it is sending or recovering (default
    /// [`DEFAULT_LEASE`]). Make it longer than your longest call (every attempt and backoff of
    /// the policy): an entry whose lease expired may be taken by another process's recovery.
    /// After a crash, the entries the dead process held wait this long before recovery takes
    /// them.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Open (and create, or bring up to date) the journal.
    pub async fn open(self) -> Result<Journal, JournalError> {
        let db = match Target::parse(&self.url)? {
            Target::Sqlite(path) => {
                if let Some(dir) = Path::new(&path).parent()
                    && !dir.as_os_str().is_empty()
                {
                    std::fs::create_dir_all(dir).map_err(JournalError::open)?;
                }
                Db::open_sqlite(Path::new(&path)).await?
            }
            Target::Postgres(url) => Db::open_postgres(&url).await?,
        };
        Ok(Journal {
            inner: Arc::new(Inner {
                db,
                owner: uuid::Uuid::new_v4().to_string(),
                lease: self.lease,
            }),
        })
    }
}

enum Target {
    Sqlite(String),
    Postgres(String),
}

impl Target {
    fn parse(url: &str) -> Result<Target, JournalError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Target::Postgres(url.to_owned()));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        if path.is_empty() || path.contains("://") || path.starts_with(':') {
            return Err(JournalError::new(
                JournalErrorKind::Url,
                format!(
                    "`{}` is not a journal: use sqlite:PATH, a file path, or postgres://...",
                    error::redact(url).escape_debug()
                ),
            ));
        }
        Ok(Target::Sqlite(path.to_owned()))
    }
}

impl Journal {
    /// Open the journal at `url`: `sqlite:PATH` (or `sqlite://PATH`, or a plain file path; the
    /// file and its folder are created) or `postgres://user:password@host/db`.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), whish_journal::JournalError> {
    /// let local = whish_journal::Journal::open("sqlite:whish-journal.sqlite").await?;
    /// let fleet = whish_journal::Journal::open("postgres://app@db.internal/payments").await?;
    /// # let _ = (local, fleet); Ok(()) }
    /// ```
    pub async fn open(url: &str) -> Result<Journal, JournalError> {
        Journal::builder(url).open().await
    }

    /// A builder, for the lease.
    pub fn builder(url: impl Into<String>) -> JournalBuilder {
        JournalBuilder {
            url: url.into(),
            lease: DEFAULT_LEASE,
        }
    }

    /// Which database holds it.
    pub fn backend(&self) -> Backend {
        self.inner.db.backend()
    }

    /// Send transfers and cancels through the journal.
    pub fn transfer(&self, client: TransferClient) -> JournaledTransfer {
        JournaledTransfer {
            journal: self.clone(),
            client,
        }
    }

    /// Create and refund payments through the journal.
    pub fn collect(&self, client: CollectClient) -> JournaledCollect {
        JournaledCollect {
            journal: self.clone(),
            client,
        }
    }

    /// Pay top-ups through the journal.
    pub fn topup(&self, client: TopupClient) -> JournaledTopup {
        JournaledTopup {
            journal: self.clone(),
            client,
        }
    }

    /// The entries in the order they were recorded: all of them, or only the open ones and
    /// those waiting for an operator. At most `limit`.
    pub async fn list(&self, open_only: bool, limit: u32) -> Result<Vec<Entry>, JournalError> {
        self.inner.db.list(open_only, i64::from(limit)).await
    }

    /// The entries with this idempotency key (a Request-id or an externalId; a refund shares
    /// its payment's).
    pub async fn find(&self, key: &str) -> Result<Vec<Entry>, JournalError> {
        self.inner.db.by_key(key).await
    }

    /// The entry of one request.
    pub async fn entry(
        &self,
        service: Service,
        operation: Operation,
        key: &str,
    ) -> Result<Option<Entry>, JournalError> {
        self.inner.db.get(service, operation, key).await
    }

    /// Delete the final entries (`accepted`, `refused`) last changed more than `older_than`
    /// ago, and the status changes recorded before then; returns how many entries went. Open
    /// entries and those waiting for an operator are never pruned. Request bodies hold personal
    /// data (names, phones, dates of birth): prune on your retention schedule.
    pub async fn prune(&self, older_than: Duration) -> Result<u64, JournalError> {
        let cutoff = now_ms().saturating_sub(store::millis(older_than));
        self.inner.db.prune(cutoff).await
    }

    /// Close the connections (waits for those in use).
    pub async fn close(&self) {
        self.inner.db.close().await
    }
}

/// The examples of `docs/journal.md`, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/journal.md")]
pub struct GuideDoctests;

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
