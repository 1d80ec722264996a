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
//! - SQLite by default: one file, WAL. The write of a request before it is sent is synchronous
//!   (`synchronous = FULL`), and the intents of concurrent sends share one such commit (group
//!   commit); the write of its outcome does not wait for the disk, and for an answer the
//!   journal cannot change (an acceptance, Pending, unknown) the call does not wait for it at
//!   all (see [`JournalBuilder::durable_outcomes`]): a journaled call costs one durable write.
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
//! # #[cfg(all(feature = "sqlite", feature = "money-transfer"))]
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
#![cfg_attr(docsrs, feature(doc_cfg))]
// With no service feature, the journal holds entries and notifications only: the sending
// machinery is there, unused.
#![cfg_attr(
    not(any(
        feature = "money-transfer",
        feature = "hosted-collect",
        feature = "intl-topup"
    )),
    allow(dead_code, unused_variables)
)]

#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
compile_error!(
    "whish-journal needs a backend: enable its feature `sqlite` or `postgres` (the facade: \
     `journal-sqlite` or `journal-postgres`)"
);

mod abandon;
mod background;
mod entry;
mod error;
mod inbox;
mod journaled;
pub mod lifecycle;
#[cfg(feature = "model")]
#[cfg_attr(docsrs, doc(cfg(feature = "model")))]
pub mod model;
mod owner;
mod recover;
mod repeats;
mod status;
mod store;

#[cfg(feature = "sqlite")]
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use abandon::{ABANDONED, Abandoned};
pub use entry::{Entry, Operation, REPEAT_LOOKBACK, RecordedOutcome, References, Service, State};
pub use error::{JournalError, JournalErrorKind};
pub use inbox::{InboxChange, Recorded, Taken};
#[cfg(feature = "hosted-collect")]
pub use journaled::JournaledCollect;
#[cfg(feature = "intl-topup")]
pub use journaled::JournaledTopup;
#[cfg(feature = "money-transfer")]
pub use journaled::Unreserved;
#[cfg(feature = "money-transfer")]
pub use journaled::{JournaledTransfer, ReservedSend};
pub use recover::{
    Change, Clients, HeldElsewhere, OtherService, Recovery, RecoveryReport, UNTARGETED,
};
pub use repeats::{RecordedSend, RepeatCheckLock, SendsMark};
pub use store::Backend;

/// Which entries [`Journal::list`] returns, newest first. `Listing::new()` is every entry, at
/// most 1 000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct Listing {
    pub(crate) open_only: bool,
    pub(crate) state: Option<State>,
    pub(crate) since_ms: Option<i64>,
    pub(crate) limit: u32,
}

impl Default for Listing {
    fn default() -> Self {
        Listing {
            open_only: false,
            state: None,
            since_ms: None,
            limit: 1000,
        }
    }
}

impl Listing {
    /// Every entry, at most 1 000.
    pub fn new() -> Listing {
        Listing::default()
    }

    /// Only the entries still open or waiting for an operator.
    pub fn open(mut self) -> Self {
        self.open_only = true;
        self
    }

    /// Only the entries in this state.
    pub fn state(mut self, state: State) -> Self {
        self.state = Some(state);
        self
    }

    /// Only the entries recorded at or after this time.
    pub fn since(mut self, at: time::OffsetDateTime) -> Self {
        let ms = at.unix_timestamp_nanos() / 1_000_000;
        self.since_ms = Some(i64::try_from(ms).unwrap_or(i64::MAX));
        self
    }

    /// At most this many.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }
}

use store::Db;
#[cfg(feature = "hosted-collect")]
use whish_hosted_collect::CollectClient;
#[cfg(feature = "intl-topup")]
use whish_intl_topup::TopupClient;
#[cfg(feature = "money-transfer")]
use whish_money_transfer::TransferClient;

/// The default lease: how long a process holds an entry it is sending or recovering before
/// another process may take it, unless it renews it. A call in flight renews its lease every
/// third of it (a heartbeat), so a slow call keeps its entry however long it takes, and the
/// entries of a process that died come back after at most this long (at once, on the same
/// host: see [`Journal::recover`]).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// How many keys one query of [`Journal::entries`] looks up.
pub const MANY_KEYS: usize = 500;

/// Refusals of a money-transfer send that created nothing and ask for the transfer again under
/// a **new** Request-id (the account's balance or daily limit, the receiver's daily limit): a
/// payout batch sends such a row again under its next derived Request-id, and finds the row's
/// attempts by reading them in order from the first. [`Journal::prune`] therefore keeps these
/// refusals: with one of them gone and a later attempt paid, the row would look never sent and
/// be paid again under its first Request-id.
/// (The codes table's column `retry_under_new_key`; empty without the money-transfer service.)
#[cfg(feature = "money-transfer")]
pub const RETRY_UNDER_NEW_KEY: &[&str] = whish_money_transfer::TransferCode::RETRY_UNDER_NEW_KEY;
/// Refusals that ask for the request again under a new key: none without the money-transfer
/// service.
#[cfg(not(feature = "money-transfer"))]
pub const RETRY_UNDER_NEW_KEY: &[&str] = &[];

/// The default claim window of a notification handed to a handler: a claim neither completed
/// nor released within it (its process died in the handler) is claimed again.
pub const DEFAULT_CLAIM_WINDOW: Duration = Duration::from_secs(120);

/// A journal row this version cannot read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Unreadable {
    /// The journal's own row id.
    pub id: i64,
    /// The idempotency key.
    pub key: String,
    /// Why it cannot be read.
    pub reason: String,
}

/// A journal: cheap to clone, shared by every client that records in it.
#[derive(Debug, Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    db: Db,
    /// This process's name on the leases it takes (host, pid, start time, a random id).
    owner: String,
    lease: Duration,
    claim_window: Duration,
    /// Every outcome written before the call returns, and on disk (see
    /// [`JournalBuilder::durable_outcomes`]).
    durable_outcomes: bool,
    /// The outcomes being recorded after their calls returned.
    background: Arc<background::Background>,
}

impl Inner {
    /// Wait until every outcome this process began recording in the background before this
    /// call is written; the writer writes what it is gathering at once.
    async fn background_written(&self) {
        if self.background.len() > 0 {
            self.db.hurry();
        }
        self.background.wait().await;
    }
}

/// Opens a [`Journal`] with settings other than the defaults.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until open() is called"]
pub struct JournalBuilder {
    url: String,
    lease: Duration,
    claim_window: Option<Duration>,
    durable_outcomes: bool,
}

impl JournalBuilder {
    /// How long this process holds an entry it is sending or recovering before it must renew
    /// it (default [`DEFAULT_LEASE`]). A call in flight renews it every third of this, so it
    /// need not be longer than a call; it is how long the entries of a process that died on
    /// another host wait before recovery takes them, and the longest a stalled process (a
    /// paused VM, a database it cannot reach) keeps its entries. Unless
    /// [`claim_window`](Self::claim_window) is set, it is the notifications' claim window too.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How long a notification handed to a handler stays claimed before another sighting may
    /// claim it again (default [`DEFAULT_CLAIM_WINDOW`]): longer than your slowest handler.
    pub fn claim_window(mut self, window: Duration) -> Self {
        self.claim_window = Some(window);
        self
    }

    /// Wait for the disk on the write of every outcome too (default false: only on the write
    /// before each send).
    ///
    /// The write of a request **before** it is sent is always durable: its entry is on disk
    /// before the first byte leaves, so no crash can make the journal forget a request that may
    /// have reached the service. The write of the outcome after the answer is different: if it
    /// is lost, the entry is simply still open, and recovery asks the service again with the
    /// same key and the same bytes (a resend the service answers without acting twice). Losing
    /// it costs a resend, never a second transfer or charge. So by default the outcome, the
    /// lease's release and its renewals are committed without waiting for the disk (SQLite
    /// `synchronous = NORMAL` on a connection of their own; PostgreSQL
    /// `synchronous_commit = off`), and a journaled call waits for the disk once.
    ///
    /// Nor does the call wait for the outcome's write when its answer cannot depend on it:
    /// an **acceptance**, **Pending**, or an **unknown** outcome is told as it is whether or not
    /// this process still held the entry, so it is recorded by a task of its own and the call
    /// returns at once. Until that write lands (on SQLite a group of them, up to 20 ms later,
    /// or a tenth of the lease when that is shorter), the entry reads as open and leased to
    /// this process, so no other process or recovery sends it; this process's own reads
    /// ([`Journal::entry`], [`Journal::find`], [`Journal::list`], [`Journal::entries`]),
    /// [`Journal::recover`] and a resend of the same key wait for the writes begun before them,
    /// so a process always reads what it did. A **refusal** or "nothing sent" is recorded before
    /// the call returns: whether the lease still held decides whether it may be told as final (a
    /// lease taken over meanwhile turns it into "unknown").
    ///
    /// Every outcome is written under the lease's fencing token, and becomes durable with the
    /// next durable write of the journal (the next request's, a claim, a [`Journal::flush`]):
    /// on SQLite the write-ahead log is appended to in order, and a synchronous commit's flush
    /// covers every commit before it; on PostgreSQL a synchronous commit waits for the log to
    /// be flushed up to itself. A process that dies before an outcome lands, or a power cut
    /// before it is durable, leaves that entry open for recovery: a resend, never a second
    /// transfer or charge. Call [`Journal::flush`] (or [`Journal::close`]) before a process
    /// exits on purpose.
    ///
    /// Set this when something outside the journal must find the outcome of every call the
    /// moment it returns, even after a power cut (and cannot ask recovery), at the price of a
    /// second durable write each call, waited for.
    pub fn durable_outcomes(mut self, yes: bool) -> Self {
        self.durable_outcomes = yes;
        self
    }

    /// Open (and create, or bring up to date) the journal.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the URL names no journal (or a backend this build leaves out), the
    /// database cannot be opened, or its tables cannot be brought up to date.
    pub async fn open(self) -> Result<Journal, JournalError> {
        let db = match Target::parse(&self.url)? {
            #[cfg(feature = "sqlite")]
            Target::Sqlite(path) => {
                if let Some(dir) = Path::new(&path).parent()
                    && !dir.as_os_str().is_empty()
                {
                    std::fs::create_dir_all(dir).map_err(JournalError::open)?;
                }
                Db::open_sqlite(Path::new(&path), self.durable_outcomes).await?
            }
            #[cfg(feature = "postgres")]
            Target::Postgres(url) => Db::open_postgres(&url, self.durable_outcomes).await?,
            #[allow(unreachable_patterns)]
            other => {
                return Err(JournalError::new(
                    JournalErrorKind::Url,
                    format!(
                        "this build has no {} journal: enable the feature `{}` (facade: `journal-{}`)",
                        other.name(),
                        other.name(),
                        other.name()
                    ),
                ));
            }
        };
        db.gather_outcomes_within(self.lease);
        let claim_window = self.claim_window.unwrap_or(if self.lease == DEFAULT_LEASE {
            DEFAULT_CLAIM_WINDOW
        } else {
            self.lease
        });
        Ok(Journal {
            inner: Arc::new(Inner {
                db,
                owner: owner::this_process(),
                lease: self.lease,
                claim_window,
                durable_outcomes: self.durable_outcomes,
                background: Arc::default(),
            }),
        })
    }
}

#[allow(dead_code)]
enum Target {
    Sqlite(String),
    Postgres(String),
}

impl Target {
    /// The backend's feature name.
    #[allow(dead_code)]
    fn name(&self) -> &'static str {
        match self {
            Target::Sqlite(_) => "sqlite",
            Target::Postgres(_) => "postgres",
        }
    }

    fn parse(url: &str) -> Result<Target, JournalError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Target::Postgres(url.to_owned()));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        // SQLite reads a name starting `file:` as a URI (`file::memory:`, `file:PATH?mode=`):
        // not a file this journal can watch for being deleted or replaced.
        let uri = path
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("file:"));
        if path.is_empty() || path.contains("://") || path.starts_with(':') || uri {
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
    /// file and its folder are created; not a `file:` URI, which SQLite would read as one) or
    /// `postgres://user:password@host/db`.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), whish_journal::JournalError> {
    /// let local = whish_journal::Journal::open("sqlite:whish-journal.sqlite").await?;
    /// let fleet = whish_journal::Journal::open("postgres://app@db.internal/payments").await?;
    /// # let _ = (local, fleet); Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A `JournalError` when the URL names no journal (or a backend this build leaves out), the
    /// database cannot be opened, or its tables cannot be brought up to date.
    pub async fn open(url: &str) -> Result<Journal, JournalError> {
        Journal::builder(url).open().await
    }

    /// A builder, for the lease.
    pub fn builder(url: impl Into<String>) -> JournalBuilder {
        JournalBuilder {
            url: url.into(),
            lease: DEFAULT_LEASE,
            claim_window: None,
            durable_outcomes: false,
        }
    }

    /// How long this process holds an entry before it must renew it (see
    /// [`JournalBuilder::lease`]): a worker handing on an inbox change renews it every third.
    pub fn lease_length(&self) -> Duration {
        self.inner.lease
    }

    /// Which database holds it.
    pub fn backend(&self) -> Backend {
        self.inner.db.backend()
    }

    /// Whether `other` is a clone of this handle (the same opening of the same journal): what
    /// one read of it found holds for the other.
    pub fn same_as(&self, other: &Journal) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Send transfers and cancels through the journal.
    ///
    /// # Examples
    ///
    /// The Request-id is the caller's before anything goes out; every answer, a lost one
    /// included, leaves the entry where a later resend or recovery finds it:
    ///
    /// ```no_run
    /// # async fn run(
    /// #     client: whish_money_transfer::TransferClient,
    /// #     request: whish_money_transfer::SendRequest,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// let journal = whish_journal::Journal::open("sqlite:whish/journal-live.sqlite").await?;
    /// let prepared = client.prepare_send(request)?;
    /// println!("store {} with the order", prepared.request_id());
    /// match journal.transfer(client).send(&prepared).await {
    ///     Ok(sent) => println!("sent: {:?}", sent.transfer_id()),
    ///     Err(e) if e.outcome_unknown() => println!("unknown: resend `prepared` later"),
    ///     Err(e) => println!("not paid: {e}"),
    /// }
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "money-transfer")]
    #[cfg_attr(docsrs, doc(cfg(feature = "money-transfer")))]
    pub fn transfer(&self, client: TransferClient) -> JournaledTransfer {
        JournaledTransfer {
            journal: self.clone(),
            target: client.target().into(),
            client,
        }
    }

    /// Create and refund payments through the journal.
    #[cfg(feature = "hosted-collect")]
    #[cfg_attr(docsrs, doc(cfg(feature = "hosted-collect")))]
    pub fn collect(&self, client: CollectClient) -> JournaledCollect {
        JournaledCollect {
            journal: self.clone(),
            target: client.target().into(),
            client,
        }
    }

    /// Pay top-ups through the journal.
    #[cfg(feature = "intl-topup")]
    #[cfg_attr(docsrs, doc(cfg(feature = "intl-topup")))]
    pub fn topup(&self, client: TopupClient) -> JournaledTopup {
        JournaledTopup {
            journal: self.clone(),
            target: client.target().into(),
            client,
        }
    }

    /// The entries a [`Listing`] selects, **newest first**: all of them or only the open ones
    /// and those waiting for an operator, of one state, recorded since a time; at most its limit.
    /// The database selects and orders them (an index on the row id), so a listing costs what it
    /// returns.
    ///
    /// A row this version cannot read is left out (one bad row never hides the others):
    /// [`unreadable`](Self::unreadable) lists those.
    ///
    /// ```no_run
    /// # async fn run(journal: whish_journal::Journal) -> Result<(), whish_journal::JournalError> {
    /// use whish_journal::{Listing, State};
    /// // The ten newest entries still waiting for a person.
    /// let waiting = journal
    ///     .list(&Listing::new().state(State::NeedsOperator).limit(10))
    ///     .await?;
    /// # let _ = waiting;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be read.
    pub async fn list(&self, listing: &Listing) -> Result<Vec<Entry>, JournalError> {
        self.inner.background_written().await;
        Ok(self.inner.db.listing(listing).await?.0)
    }

    /// What [`list`](Self::list) selects, and apart, newest first, the rows this version cannot
    /// read among the rows the listing selects, with every row in a state it does not know,
    /// wherever it is (those are found through an index; a newer version sharing the journal
    /// may have written many): a listing in which one bad row never hides the others, at the
    /// cost of the listing. ([`unreadable`](Self::unreadable) looks at every row of the
    /// journal.)
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be read.
    pub async fn list_with_unreadable(
        &self,
        listing: &Listing,
    ) -> Result<(Vec<Entry>, Vec<Unreadable>), JournalError> {
        self.inner.background_written().await;
        let (entries, bad) = self.inner.db.listing(listing).await?;
        let mut out: Vec<Unreadable> = bad
            .into_iter()
            .map(|(id, key, reason)| Unreadable { id, key, reason })
            .collect();
        self.add_unknown_states(&mut out).await?;
        out.reverse();
        Ok((entries, out))
    }

    /// The rows this version cannot read (an outcome that does not parse, a state or service it
    /// does not know), with why. Recovery sends none of them: an open one goes to
    /// `needs-operator` with the reason; the others are reported as they are.
    ///
    /// Every row is looked at, a page at a time: the time this takes grows with the journal
    /// (5 to 8 ms for 1 000 entries on SQLite); what it holds is a page of rows and the rows it
    /// cannot read, never the journal.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn unreadable(&self) -> Result<Vec<Unreadable>, JournalError> {
        self.inner.background_written().await;
        let bad = self.inner.db.unreadable_rows().await?;
        let mut out: Vec<Unreadable> = bad
            .into_iter()
            .map(|(id, key, reason)| Unreadable { id, key, reason })
            .collect();
        self.add_unknown_states(&mut out).await?;
        Ok(out)
    }

    /// Add to `out` every row in a state this version does not know, once, and sort by id.
    async fn add_unknown_states(&self, out: &mut Vec<Unreadable>) -> Result<(), JournalError> {
        let found: std::collections::HashSet<i64> = out.iter().map(|u| u.id).collect();
        for (id, key, state) in self.inner.db.unknown_states().await? {
            if !found.contains(&id) {
                out.push(Unreadable {
                    id,
                    key,
                    reason: format!(
                        "state `{}` is unknown to this version",
                        state.escape_debug()
                    ),
                });
            }
        }
        out.sort_by_key(|u| u.id);
        Ok(())
    }

    /// The entries with this idempotency key (a Request-id or an externalId; a refund shares
    /// its payment's).
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn find(&self, key: &str) -> Result<Vec<Entry>, JournalError> {
        self.inner.background_written().await;
        self.inner.db.by_key(key).await
    }

    /// The entry of one request.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or read, or for SQLite when its
    /// file was deleted or replaced since it was opened (as [`entries`](Self::entries)).
    pub async fn entry(
        &self,
        service: Service,
        operation: Operation,
        key: &str,
    ) -> Result<Option<Entry>, JournalError> {
        self.inner.background_written().await;
        self.still_there()?;
        self.inner.db.get(service, operation, key).await
    }

    /// The entries of many requests of one service and operation at once, in one query per
    /// [`MANY_KEYS`] keys (a batch reads its rows' entries this way, not one by one). Keys with
    /// no entry are left out; the order is the database's.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or read, or for SQLite when its
    /// file was deleted or replaced since it was opened: what a file nobody else reads holds
    /// is no ground to send on.
    pub async fn entries(
        &self,
        service: Service,
        operation: Operation,
        keys: &[&str],
    ) -> Result<Vec<Entry>, JournalError> {
        self.inner.background_written().await;
        self.still_there()?;
        let mut out = Vec::new();
        for chunk in keys.chunks(MANY_KEYS) {
            out.extend(self.inner.db.get_many(service, operation, chunk).await?);
        }
        Ok(out)
    }

    /// Delete the final entries (`accepted`, `refused`, and the inbox's `handed-on`) last
    /// changed more than `older_than` ago, and the status changes recorded before then; returns
    /// how many entries went. Open entries, changes not yet handed on, and those waiting for a
    /// person are never pruned, nor the refusals of
    /// [`RETRY_UNDER_NEW_KEY`] (a later attempt of the same payout row is found through them),
    /// nor the entries a person abandoned ([`Journal::abandon`]: a batch run again after they
    /// were gone would send their rows, which nothing at the service refuses). Both are rare,
    /// and hold no transfer. Request bodies hold personal data (names, phones,
    /// dates of birth): prune on your retention schedule.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn prune(&self, older_than: Duration) -> Result<u64, JournalError> {
        self.inner.db.prune(store::millis(older_than)).await
    }

    /// Check that the journal is still the one opened: for SQLite, that its file was not
    /// deleted or replaced while this process had it open (writes would go to a file nobody
    /// reads). A journaled call checks it before it sends; call it after a batch of calls to
    /// know their outcomes were recorded.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the SQLite file was deleted or replaced while this process had it
    /// open.
    pub fn check(&self) -> Result<(), JournalError> {
        self.inner.db.check_file()
    }

    /// [`check`](Self::check) before a lookup: a read error.
    fn still_there(&self) -> Result<(), JournalError> {
        self.inner.db.check_file().map_err(|mut e| {
            e.kind = JournalErrorKind::Read;
            e
        })
    }

    /// Reach the database (one trivial read): `Err` when it is down, or for SQLite when its file
    /// was deleted or replaced.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn ping(&self) -> Result<(), JournalError> {
        self.inner.db.check_file()?;
        self.inner.db.now().await.map(|_| ())
    }

    /// Wait for the outcomes this process is still recording after their calls returned (those
    /// begun before this call), then make every outcome it recorded so far durable: one
    /// synchronous commit, which puts every earlier write of the journal on disk with it (see
    /// [`JournalBuilder::durable_outcomes`]). Call it before a process exits on purpose, so that
    /// its last outcomes are not left for recovery. It costs nothing when there is nothing to
    /// wait for or to make durable. A failure is logged: the outcomes stay as they are, durable
    /// with the next durable write, or open for recovery.
    pub async fn flush(&self) {
        self.inner.background_written().await;
        if let Err(e) = self.inner.db.sync().await {
            tracing::warn!(error = %e, "the journal could not make its last outcomes durable; a power cut may leave them for recovery");
        }
    }

    /// Write the last outcomes and make them durable ([`flush`](Self::flush)), then close the
    /// connections (waits for those in use).
    pub async fn close(&self) {
        self.flush().await;
        self.inner.db.close().await
    }
}

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
