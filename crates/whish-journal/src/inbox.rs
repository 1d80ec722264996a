//! The inbox: every change a service reports (a callback, or a status a poller read) is an
//! entry of the journal, recorded durably **before** the receiver answers 200, with what is
//! needed to finish it; workers then hand it on under the same lease, fencing token and
//! heartbeat as a send (`crate::lifecycle`: the steps `record` and `take a waiting change`).
//!
//! A change is `waiting` until a handler took it (`handed-on`, final); a handler that fails
//! leaves it `waiting` with the error, for the next worker; past the deadline it waits for a
//! person (`escalated`). A worker that dies leaves its lease to run out, and the change is
//! taken again: a handler sees a change **at least once**, and twice only when its process
//! dies after the handler returned and before the change was marked handed on.

use std::time::Duration;

use time::OffsetDateTime;

use crate::entry::{Operation, RecordedOutcome, References, Service, State};
use crate::store::{Lease, Request, insert_token, millis};
use crate::{Journal, JournalError};

/// A change recorded in the inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InboxChange {
    /// The service that reported it.
    pub service: Service,
    /// The change's own key: stable across redeliveries, and the key for your handler's own
    /// idempotency.
    pub key: String,
    /// What finishing it needs (the verified callback body; the collect route and query).
    pub body: Vec<u8>,
    /// Where it stands: `waiting`, `handed-on` or `escalated`.
    pub state: State,
    /// How many times a worker took it.
    pub attempts: u32,
    /// When it was recorded.
    pub recorded: OffsetDateTime,
    /// The last handler's or status read's failure, if any.
    pub last_error: Option<String>,
}

/// A change this process holds the lease of: hand it on, then [`Journal::handed_on`] (or
/// [`Journal::hand_on_failed`]).
#[derive(Debug)]
pub struct Taken {
    /// The change.
    pub change: InboxChange,
    lease: Lease,
}

/// What [`Journal::record_change`] did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Recorded {
    /// Recorded now, and leased to this process: hand it on.
    New(Taken),
    /// Recorded before (a redelivery): nothing to do, and the 200 is owed all the same.
    Before,
}

impl Journal {
    /// Record a change a service reported, durably, before the receiver answers: `key` is the
    /// change's own key, `body` what finishing it needs. Answer 200 only on `Ok`; on `Err` the
    /// write failed or cannot be confirmed, and the service must deliver again (503).
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or written (`kind` says which).
    pub async fn record_change(
        &self,
        service: Service,
        key: &str,
        body: &[u8],
    ) -> Result<Recorded, JournalError> {
        let request = Request {
            service,
            operation: Operation::Callback,
            key,
            context: None,
            body,
            target: "inbox",
        };
        let owner = self.inner.owner.as_str();
        let lease = self
            .inner
            .db
            .record(&request, owner, millis(self.inner.lease), insert_token())
            .await?;
        self.check_still_there().await?;
        let Some(lease) = lease else {
            return Ok(Recorded::Before);
        };
        let now = OffsetDateTime::now_utc();
        Ok(Recorded::New(Taken {
            change: InboxChange {
                service,
                key: key.to_owned(),
                body: body.to_vec(),
                state: State::Waiting,
                attempts: 1,
                recorded: now,
                last_error: None,
            },
            lease,
        }))
    }

    /// Take up to `limit` changes waiting to be handed on whose lease is free or has run out
    /// (a worker that died, a handler that failed), oldest first, each leased to this process.
    /// `needs_operator`: also those waiting for a person (their word to try again).
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or written (`kind` says which).
    pub async fn take_changes(
        &self,
        limit: u32,
        needs_operator: bool,
    ) -> Result<Vec<Taken>, JournalError> {
        self.take_changes_of(None, limit, needs_operator).await
    }

    /// [`take_changes`](Self::take_changes) of one service only (`None`: any): a receiver
    /// takes only the changes it has handlers for. A change whose row cannot be read is left to
    /// a person (`escalated`) instead of failing the whole take.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or written (`kind` says which).
    pub async fn take_changes_of(
        &self,
        service: Option<Service>,
        limit: u32,
        needs_operator: bool,
    ) -> Result<Vec<Taken>, JournalError> {
        let owner = self.inner.owner.as_str();
        let claimed = self
            .inner
            .db
            .take_waiting(
                owner,
                millis(self.inner.lease),
                0,
                i64::from(limit),
                needs_operator,
                service,
            )
            .await?;
        let mut taken = Vec::with_capacity(claimed.len());
        for c in claimed {
            match c.entry {
                Ok(entry) => taken.push(Taken {
                    change: change_of(entry),
                    lease: c.lease,
                }),
                Err(e) => {
                    let mut outcome = RecordedOutcome::new("unreadable");
                    outcome.message = Some(e.to_string());
                    self.inner
                        .db
                        .mark_needs_operator(c.lease, owner, &outcome)
                        .await?;
                }
            }
        }
        Ok(taken)
    }

    /// Renew the lease of a change this process is handing on (a heartbeat while the handler
    /// runs). False when another worker has taken it over.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or written (`kind` says which).
    pub async fn renew_change(&self, taken: &Taken) -> Result<bool, JournalError> {
        self.inner
            .db
            .renew(
                taken.lease,
                self.inner.owner.as_str(),
                millis(self.inner.lease),
            )
            .await
    }

    /// The handler took the change: it is never handed on again. False when this process had
    /// lost the lease (another worker has it: it will hand it on, or has).
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or written (`kind` says which):
    /// the change stays waiting and is handed on again.
    pub async fn handed_on(&self, taken: &Taken) -> Result<bool, JournalError> {
        let done = self
            .inner
            .db
            .finish(
                taken.lease,
                self.inner.owner.as_str(),
                State::HandedOn,
                &RecordedOutcome::new("handed-on"),
                &References::default(),
            )
            .await?;
        self.inner.db.sync().await?;
        Ok(done)
    }

    /// The status read or the handler failed: the change stays waiting, with `error`, and no
    /// worker takes it again for `backoff` (its lease is kept that long). Past `deadline` after
    /// it was recorded, it waits for a person instead.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or written (`kind` says which):
    /// the change's lease then runs out, and it is taken again.
    pub async fn hand_on_failed(
        &self,
        taken: &Taken,
        error: &str,
        backoff: Duration,
        deadline: Duration,
    ) -> Result<bool, JournalError> {
        // Both times from the database's clock: the entry's creation as it recorded it.
        let recorded = match self
            .inner
            .db
            .get(taken.change.service, Operation::Callback, &taken.change.key)
            .await?
        {
            Some(entry) => entry.created,
            None => taken.change.recorded,
        };
        let recorded = (recorded.unix_timestamp_nanos() / 1_000_000) as i64;
        let now = self.inner.db.now().await?;
        let mut outcome = RecordedOutcome::new("failed");
        outcome.message = Some(error.to_owned());
        let owner = self.inner.owner.as_str();
        let to = crate::lifecycle::after_hand_on_failure(crate::lifecycle::overdue(
            recorded,
            millis(deadline),
            now,
        ));
        match to {
            State::Escalated => {
                self.inner
                    .db
                    .mark_needs_operator(taken.lease, owner, &outcome)
                    .await
            }
            State::Waiting => {
                self.inner
                    .db
                    // A lease over once the backoff has passed (a take needs its end before
                    // `now`): with no backoff, free at once, even in the same millisecond.
                    .defer(taken.lease, owner, &outcome, millis(backoff) - 1)
                    .await
            }
            state => {
                self.inner
                    .db
                    .finish(taken.lease, owner, state, &outcome, &References::default())
                    .await
            }
        }
    }
}

impl Journal {
    /// The change recorded under `key`, wherever it stands.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be read.
    pub async fn change(
        &self,
        service: Service,
        key: &str,
    ) -> Result<Option<InboxChange>, JournalError> {
        let entry = self.inner.db.get(service, Operation::Callback, key).await?;
        Ok(entry.map(change_of))
    }

    /// On a person's word: hand the change under `key` on again, now. It must be waiting or
    /// waiting for a person, and no worker may hold it; it becomes `waiting` with its lease
    /// free, and the next worker of a running receiver takes it (one more try: the deadline
    /// still counts from when it was recorded). False when it is not there, already handed
    /// on, or held by a worker at this moment.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or written.
    pub async fn hand_on_again(&self, service: Service, key: &str) -> Result<bool, JournalError> {
        let Some(entry) = self.inner.db.get(service, Operation::Callback, key).await? else {
            return Ok(false);
        };
        let owner = self.inner.owner.as_str();
        let Some(claimed) = self
            .inner
            .db
            .take_one_waiting(entry.id, owner, millis(self.inner.lease))
            .await?
        else {
            return Ok(false);
        };
        let mut outcome = RecordedOutcome::new("failed");
        outcome.message = Some("a person asked to hand it on again".to_owned());
        // A lease already over: the next worker takes it at once, even in this millisecond.
        self.inner
            .db
            .defer(claimed.lease, owner, &outcome, -1)
            .await
    }
}

fn change_of(entry: crate::entry::Entry) -> InboxChange {
    InboxChange {
        service: entry.service,
        key: entry.key,
        body: entry.request,
        state: entry.state,
        attempts: entry.attempts,
        recorded: entry.created,
        last_error: entry.outcome.and_then(|o| o.message),
    }
}
