//! Requests recorded ahead of their sends: many intents in one durable commit.
//!
//! A batch knows its next requests before it sends them. Recording them one commit each (or a
//! group commit of whatever happens to be waiting) makes every send wait for a disk flush;
//! recording a whole chunk in one transaction pays one flush for all of them, before the first
//! is sent. Each reserved entry is `intended` and leased to this process, exactly as a single
//! send's entry is between its write and its send, so everything the journal guarantees holds:
//! a request is on disk before its first byte leaves, and a process that dies leaves its
//! reserved entries to recovery (which asks the service with the same key: at most one
//! transfer).
//!
//! What a reservation adds is a request that is recorded and then **not** sent (a batch
//! stopped): it must be given back ([`Journal::unreserve`]), which records it as never sent, so
//! that no recovery sends it and a later send of it is a first send.

use std::time::Instant;

use whish_core::{Error, RecordError};

use super::{Held, Recording, Request};
use crate::entry::{RecordedOutcome, References, State};
use crate::store::{Lease, insert_token, millis};
use crate::{Journal, JournalError};

/// Where one reserved request stands.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reservation {
    /// Recorded by the reservation and leased to this process since `since` (a local instant
    /// taken before the write, so that the lease's age is never underestimated).
    Held { lease: Lease, since: Instant },
    /// The key was in the journal already: the reservation recorded nothing.
    RecordedBefore,
    /// The reservation's write failed, and may or may not have committed; `token` is the one it
    /// wrote on every entry it may have made. `never_committed`: the failure proves it did not
    /// (see [`JournalError::never_committed`](crate::JournalError)).
    Unsure { token: i64, never_committed: bool },
}

/// What giving back a reserved request left in the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unreserved {
    /// Recorded as never sent: no recovery sends it, and a later send of the same request is a
    /// first send.
    NeverSent,
    /// The reservation had recorded nothing (the request was in the journal before): its entry
    /// stays as it was. This reservation sent nothing.
    AsBefore,
    /// The entry is not this reservation's to give back: another process took it over (this
    /// process's lease ran out first), or a reservation whose write failed finds an entry it
    /// cannot tell its own. It may be sent, or may have been: look at the entry, or run
    /// recovery.
    TakenOver,
}

impl Journal {
    /// Record every request, each `intended` and leased to this process, in one transaction
    /// (one durable commit). Never fails: a write that fails leaves every request
    /// [`Reservation::Unsure`], and each is then recorded on its own when it is sent.
    ///
    /// `lock`: the repeat check, held by the caller: on PostgreSQL the write runs on its
    /// session (see [`Db::reserve`](crate::store::Db::reserve)).
    pub(crate) async fn reserve_all(
        &self,
        lock: Option<&mut crate::store::RepeatLock>,
        requests: &[Request<'_>],
    ) -> Vec<Reservation> {
        let since = Instant::now();
        let owner = self.inner.owner.as_str();
        let lease_ms = millis(self.inner.lease);
        let token = insert_token();
        let written = match self
            .inner
            .db
            .reserve(lock, requests, owner, lease_ms, token)
            .await
        {
            Ok(leases) => self.check_still_there().await.map(|()| leases),
            Err(e) => Err(e),
        };
        match written {
            Ok(leases) => leases
                .into_iter()
                .map(|lease| match lease {
                    Some(lease) => Reservation::Held { lease, since },
                    None => Reservation::RecordedBefore,
                })
                .collect(),
            Err(e) => {
                tracing::warn!(requests = requests.len(), error = %e, "the journal could not reserve a batch of requests; each is recorded on its own when it is sent");
                let never_committed = e.never_committed();
                vec![
                    Reservation::Unsure {
                        token,
                        never_committed
                    };
                    requests.len()
                ]
            }
        }
    }

    /// Send a reserved request: the entry is held already, so the send goes at once (after a
    /// renewal when the lease has aged past a third of itself). A request the reservation did
    /// not hold, or whose lease another process took, goes the way of any send (the journal
    /// decides from what it holds now).
    pub(crate) async fn journaled_reserved<T, C, Fut>(
        &self,
        request: Request<'_>,
        reservation: Reservation,
        call: impl FnOnce(bool) -> Fut,
        verdict: impl FnOnce(&Result<T, Error<C>>, bool) -> Recording,
    ) -> Result<T, Error<C>>
    where
        C: whish_core::ErrorCode,
        Fut: std::future::Future<Output = Result<T, Error<C>>>,
    {
        let Reservation::Held { lease, since } = reservation else {
            return self.journaled(request, call, verdict).await;
        };
        // A journal file deleted or replaced since the reservation: the intent is in a file
        // nobody will read, so nothing may be sent on its strength.
        let key = request.key;
        if let Err(gone) = self.check_still_there().await {
            return Err(Error::Record(RecordError::new(
                gone.to_string(),
                Some(key.to_owned()),
                Some(std::sync::Arc::new(gone)),
            )));
        }
        if since.elapsed() > self.inner.lease / 3 {
            let owner = self.inner.owner.as_str();
            match self
                .inner
                .db
                .renew(lease, owner, millis(self.inner.lease))
                .await
            {
                Ok(true) => {}
                // Another process took it over when the lease ran out: it may be sending it.
                Ok(false) => return self.journaled(request, call, verdict).await,
                Err(e) => {
                    return Err(Error::Record(RecordError::outcome_unknown(
                        format!(
                            "the reservation of this request could not be renewed ({e}): this call sent nothing, but its entry is open and a recovery may send it"
                        ),
                        Some(key.to_owned()),
                        Some(std::sync::Arc::new(e)),
                    )));
                }
            }
        }
        let held = Held {
            lease,
            resend: false,
        };
        self.send_held(held, request, call, verdict).await
    }

    /// Give back a reserved request that will not be sent: recorded as never sent (`refused`,
    /// outcome `not-sent`), under the reservation's lease.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the journal cannot be written: the entry stays open, and a
    /// recovery may send it.
    pub(crate) async fn unreserve(
        &self,
        request: &Request<'_>,
        reservation: Reservation,
    ) -> Result<Unreserved, JournalError> {
        let owner = self.inner.owner.as_str();
        let mut outcome = RecordedOutcome::new("not-sent");
        outcome.message = Some("reserved ahead of its send, then given back unsent".into());
        match reservation {
            Reservation::Held { lease, .. } => {
                let kept = self
                    .inner
                    .db
                    .finish(
                        lease,
                        owner,
                        State::Refused,
                        &outcome,
                        &References::default(),
                    )
                    .await?;
                Ok(if kept {
                    Unreserved::NeverSent
                } else {
                    Unreserved::TakenOver
                })
            }
            Reservation::RecordedBefore => Ok(Unreserved::AsBefore),
            // The reservation may have committed: record the request as never sent whether or
            // not it did (the way a lost insert is settled), unless another entry holds the key.
            // A reservation that provably never committed left the key as it was before it: no
            // entry, or the same request recorded as never sent, and nothing sends it (even when
            // the settlement cannot be written either, as on a full disk). One that may have
            // committed (an I/O error after its log was written) may yet reappear.
            Reservation::Unsure {
                token,
                never_committed,
            } => {
                let settled = self
                    .inner
                    .db
                    .settle_lost_insert(request, owner, token, &outcome)
                    .await;
                match settled {
                    Ok(true) => Ok(Unreserved::NeverSent),
                    _ if never_committed && self.nothing_sends(request).await => {
                        Ok(Unreserved::NeverSent)
                    }
                    Ok(false) => Ok(Unreserved::TakenOver),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Whether nothing can send `request` under its key: the key holds no entry, or this same
    /// request (its bytes, context and service) recorded as never sent. False when it cannot
    /// be read.
    async fn nothing_sends(&self, request: &Request<'_>) -> bool {
        let db = &self.inner.db;
        db.get(request.service, request.operation, request.key)
            .await
            .is_ok_and(|entry| {
                entry.is_none_or(|e| {
                    e.never_left()
                        && e.request == request.body
                        && e.context.as_deref() == request.context
                        && e.may_be_for(request.target)
                })
            })
    }

    /// Record requests this process decided not to send as never sent, in one transaction (one
    /// durable commit), each unless its key is in the journal already: [`Unreserved::NeverSent`]
    /// for those recorded, [`Unreserved::AsBefore`] for the others (left as they were).
    ///
    /// # Errors
    ///
    /// A `JournalError` when the journal cannot be written: then nothing is known of any of
    /// them beyond "this process sent none of them".
    pub(crate) async fn record_unsent_all(
        &self,
        requests: &[Request<'_>],
        why: &str,
    ) -> Result<Vec<Unreserved>, JournalError> {
        let mut outcome = RecordedOutcome::new("not-sent");
        outcome.message = Some(why.to_owned());
        let recorded = self.inner.db.record_unsent(requests, &outcome).await?;
        Ok(recorded
            .into_iter()
            .map(|new| {
                if new {
                    Unreserved::NeverSent
                } else {
                    Unreserved::AsBefore
                }
            })
            .collect())
    }
}
