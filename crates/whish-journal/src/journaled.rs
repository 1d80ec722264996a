//! The journaled clients: record, send, record the outcome. They return exactly what the
//! service clients return, so code written for a client works unchanged with its journaled
//! twin; a journal that cannot record is `Err` with
//! [`nothing_sent`](whish_core::Error::nothing_sent), before anything is sent.

use whish_core::{Error, RecordError};

use crate::Journal;
use crate::entry::{RecordedOutcome, References, State};
pub(crate) use crate::store::Request;
use crate::store::{Lease, millis};

#[cfg(feature = "hosted-collect")]
mod collect;
#[cfg(feature = "money-transfer")]
mod reserve;
#[cfg(feature = "intl-topup")]
mod topup;
#[cfg(feature = "money-transfer")]
mod transfer;

#[cfg(feature = "hosted-collect")]
pub use collect::JournaledCollect;
#[cfg(feature = "hosted-collect")]
pub(crate) use collect::{create_verdict, refund_verdict};
#[cfg(feature = "money-transfer")]
pub(crate) use reserve::Reservation;
#[cfg(feature = "money-transfer")]
pub use reserve::Unreserved;
#[cfg(feature = "intl-topup")]
pub use topup::JournaledTopup;
#[cfg(feature = "intl-topup")]
pub(crate) use topup::pay_verdict;
#[cfg(feature = "money-transfer")]
pub use transfer::{JournaledTransfer, ReservedSend};
#[cfg(feature = "money-transfer")]
pub(crate) use transfer::{cancel_verdict, send_verdict, status_refs};

/// What a send does with an entry of its key recorded as never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reopen {
    /// Reopens it and sends it as a first send (a later send of a request given back).
    AsFirstSend,
    /// Sends nothing: the caller sends only a request recorded before it looked.
    Never,
}

/// An entry this process holds the lease of, for one send.
pub(crate) struct Held {
    pub lease: Lease,
    /// True when the entry was there before: this send is a resend of a recorded request.
    pub resend: bool,
}

/// Where an answer leaves an entry: a new state (`None`: leave it as it was) and its summary.
pub(crate) struct Recording {
    pub state: Option<State>,
    pub outcome: RecordedOutcome,
    pub refs: References,
}

impl Recording {
    pub(crate) fn accepted(result: &str, refs: References) -> Recording {
        debug_assert_eq!(
            State::of_verdict(whish_core::verdict::Verdict::Accepted),
            State::Accepted
        );
        Recording {
            state: Some(State::Accepted),
            outcome: RecordedOutcome::new(result),
            refs,
        }
    }

    /// The state an error leaves an entry in: a function of the one verdict
    /// ([`whish_core::verdict`]) and nothing else, so the journal, the client's predicates and
    /// the command's exit code cannot disagree. Nothing sent is final for a first send, and
    /// changes nothing for a resend (an earlier send may still have arrived).
    pub(crate) fn of_error<C: whish_core::ErrorCode>(e: &Error<C>, resend: bool) -> Recording {
        let verdict = e.verdict();
        let state = crate::lifecycle::state_after(verdict, resend);
        let result = verdict.as_str();
        let mut outcome = RecordedOutcome::new(result);
        if let Error::Failed(f) = e {
            outcome.code = Some(f.raw.clone());
            outcome.retrieved = f.retrieved == Some(true);
        }
        outcome.message = Some(e.to_string());
        Recording {
            state,
            outcome,
            refs: References::default(),
        }
    }
}

/// A journal failure as the caller sees it: the request was not recorded, so nothing was sent.
fn record_error<C>(key: &str, message: String, source: Option<crate::JournalError>) -> Error<C> {
    Error::Record(RecordError::new(
        message,
        Some(key.to_owned()),
        source.map(|s| std::sync::Arc::new(s) as _),
    ))
}

impl Journal {
    /// Record a request before it is sent, and hold its lease. A key already recorded with the
    /// same bytes is a resend of that request; with other bytes it is refused.
    ///
    /// When the insert's answer is lost (the connection dropped after the database may have
    /// committed), the journal finds out before it says anything: it records the request as
    /// never sent (`refused`, `not-sent`) on a fresh connection, whether or not the lost insert
    /// committed, so no recovery ever sends it; only then is the answer "nothing was sent". If
    /// it cannot, the answer is an unknown outcome, never "nothing was sent".
    ///
    /// `reopen`: what becomes of an entry of the key recorded as never sent.
    pub(crate) async fn hold<C>(
        &self,
        request: &Request<'_>,
        reopen: Reopen,
    ) -> Result<Held, Error<C>> {
        let lease_ms = millis(self.inner.lease);
        let owner = self.inner.owner.as_str();
        let token = crate::store::insert_token();
        match self.inner.db.insert(request, owner, lease_ms, token).await {
            Ok(Some(lease)) => {
                self.check_still_there()
                    .await
                    .map_err(|e| record_error(request.key, e.to_string(), Some(e)))?;
                return Ok(Held {
                    lease,
                    resend: false,
                });
            }
            Ok(None) => {}
            Err(e) => self.after_failed_insert(request, token, e).await?,
        }
        self.hold_recorded(request, reopen).await
    }

    /// The insert of `request` failed (`token` was its fencing token): say nothing was sent only
    /// once no recovery can ever send it. `Ok` when the key holds an entry recorded before the
    /// insert: this call is then a resend of it, read as when the insert finds the key.
    async fn after_failed_insert<C>(
        &self,
        request: &Request<'_>,
        token: i64,
        e: crate::JournalError,
    ) -> Result<(), Error<C>> {
        let Request {
            service,
            operation,
            key,
            ..
        } = *request;
        let owner = self.inner.owner.as_str();
        let record = |message: String, source: Option<crate::JournalError>| {
            record_error(key, message, source)
        };
        // The file was deleted or replaced under this process: whatever the insert did
        // went to a file nobody will read, so nothing can ever send it. Say that.
        if let Err(gone) = self.check_still_there().await {
            return Err(record(gone.to_string(), Some(gone)));
        }
        if crate::lifecycle::on_insert_error() == crate::lifecycle::OnInsertError::ReportNothingSent
        {
            return Err(record(e.to_string(), Some(e)));
        }
        let mut outcome = RecordedOutcome::new("not-sent");
        outcome.message = Some(format!(
            "the journal's write of this request failed ({e}); it was not sent"
        ));
        match self
            .inner
            .db
            .settle_lost_insert(request, owner, token, &outcome)
            .await
        {
            Ok(true) => Err(record(e.to_string(), Some(e))),
            // The key holds an entry recorded before this insert (an earlier send of this
            // request, which may have reached the service): this call is a resend of it,
            // never "nothing was sent".
            Ok(false) => Ok(()),
            // The settlement failed too (a full disk refuses every write), but the insert
            // provably never committed: when no entry was recorded before it, nothing was,
            // and nothing can send it. One recorded before makes this call a resend.
            Err(_) if e.never_committed() => match self.inner.db.get(service, operation, key).await
            {
                Ok(None) => Err(record(e.to_string(), Some(e))),
                Ok(Some(_)) => Ok(()),
                Err(again) => Err(Error::Record(RecordError::outcome_unknown(
                    format!(
                        "the journal could not record this request ({e}) nor read whether it was recorded before ({again}): it was not sent by this call, but a recovery may send it"
                    ),
                    Some(key.to_owned()),
                    Some(std::sync::Arc::new(e)),
                ))),
            },
            Err(again) => Err(Error::Record(RecordError::outcome_unknown(
                format!(
                    "the journal could not tell whether it recorded this request ({e}; then {again}): it was not sent by this call, but a recovery may send it"
                ),
                Some(key.to_owned()),
                Some(std::sync::Arc::new(e)),
            ))),
        }
    }

    /// The key of `request` was recorded before this call: hold its entry's lease for a resend,
    /// or for a first send again when it is recorded as never sent; anything else is refused or
    /// an unknown outcome, never "nothing was sent".
    async fn hold_recorded<C>(
        &self,
        request: &Request<'_>,
        reopen: Reopen,
    ) -> Result<Held, Error<C>> {
        let Request {
            service,
            operation,
            key,
            context,
            body,
            target,
        } = *request;
        let lease_ms = millis(self.inner.lease);
        let owner = self.inner.owner.as_str();
        let record = |message: String, source: Option<crate::JournalError>| {
            record_error(key, message, source)
        };
        // A resend from this process of a request whose outcome it is still recording: read
        // that outcome, not the entry it leaves behind.
        self.inner.background_written().await;
        // The key was recorded before this call: whatever goes wrong from here, the request may
        // have been sent by then, so an error is an unknown outcome, never "nothing was sent".
        let earlier = |message: String, source: Option<crate::JournalError>| {
            Error::Record(RecordError::outcome_unknown(
                format!(
                    "{message}: this call sent nothing, but the request was recorded before it and may have been sent then"
                ),
                Some(key.to_owned()),
                source.map(|s| std::sync::Arc::new(s) as _),
            ))
        };
        let existing = match self.inner.db.get(service, operation, key).await {
            Ok(Some(e)) => e,
            Ok(None) => return Err(earlier("its entry vanished while it was read".into(), None)),
            Err(e) => {
                // The file was deleted or replaced under this process (the insert met the old
                // file, this read the new one): said as the insert's own failure says it.
                if let Err(gone) = self.check_still_there().await {
                    return Err(record(gone.to_string(), Some(gone)));
                }
                return Err(earlier(
                    format!("its entry could not be read ({e})"),
                    Some(e),
                ));
            }
        };
        // The file deleted or replaced since this process opened it: a pooled connection may
        // still read the old one, and what that holds is nobody's to send on (checked here too:
        // a key recorded before never reaches the check after a new insert).
        if let Err(gone) = self.check_still_there().await {
            return Err(record(gone.to_string(), Some(gone)));
        }
        if existing.request != body || existing.context.as_deref() != context {
            return Err(record(
                format!("{service} {operation} key already names a different request"),
                None,
            ));
        }
        // A request recorded for another service or account is never sent through this client
        // (a sandbox's request would become a real payment, one account's a second transfer in
        // another): the entry stays as it is, for a recovery with its own service's settings.
        // It may have been sent there, so this is an unknown outcome, never "nothing was sent".
        if let Some(recorded) = existing.target.as_deref().filter(|t| *t != target) {
            return Err(Error::Record(RecordError::outcome_unknown(
                format!(
                    "{service} {operation} {key} was recorded for another service ({recorded}); this client sends to {target}: this call sent nothing, and the entry is left for a recovery with its own service's settings"
                ),
                Some(key.to_owned()),
                None,
            )));
        }
        // A request the service refused is not sent again under the same key: a second send
        // would be read as a resend, and a code such as `transfer.already.done` as a
        // confirmation of someone else's request. Only a request that never left (recorded
        // `not-sent`) may be sent again, as a first send.
        let never_left = existing.never_left();
        if existing.state == State::Refused && !never_left {
            let why = existing
                .outcome
                .as_ref()
                .and_then(|o| match &o.code {
                    Some(c) => Some(format!(" with `{c}`")),
                    None if o.result == crate::ABANDONED => Some(
                        " (abandoned by a person, after the service showed it never took effect)"
                            .to_owned(),
                    ),
                    None => None,
                })
                .unwrap_or_default();
            return Err(Error::Record(RecordError::already_refused(
                format!("{service} {operation} {key} was refused{why} and is final"),
                Some(key.to_owned()),
            )));
        }
        // A caller that sends only what was recorded before it read (a batch's row found open)
        // never reopens an entry given back since: reopened here, after the check the caller
        // made under the repeat check's lock, no other process's check would count it.
        if never_left && reopen == Reopen::Never {
            return Err(record(
                format!(
                    "{service} {operation} {key} was given back (recorded as never sent) after this call read it: this call sent nothing; send it again as a new send"
                ),
                None,
            ));
        }
        // From here on this call sends nothing, but the request is not this call's alone: it
        // may have been sent before (an open or accepted entry), or is being sent now by
        // another process. Its outcome is unknown, never "nothing was sent" (the truth checker
        // found a cancel reported not sent while a racing recovery had just applied it).
        let unknown = |message: String, source: Option<crate::JournalError>| {
            Error::Record(RecordError::outcome_unknown(
                message,
                Some(key.to_owned()),
                source.map(|s| std::sync::Arc::new(s) as _),
            ))
        };
        match self
            .inner
            .db
            .take_lease_as(existing.id, owner, lease_ms, never_left)
            .await
        {
            Ok(Some(lease)) => Ok(Held {
                lease,
                resend: !never_left,
            }),
            Ok(None) => Err(unknown(
                format!(
                    "another process is sending or recovering this request now (its entry is {}); this call sent nothing",
                    existing.state
                ),
                None,
            )),
            // The reopening write may have committed with its answer lost: the entry is then
            // open and leased, and a recovery sends it. Never "nothing was sent" then.
            Err(e)
                if never_left
                    && crate::lifecycle::told_when_take_fails(true)
                        == whish_core::verdict::Verdict::NothingSent =>
            {
                Err(record(e.to_string(), Some(e)))
            }
            Err(e) if never_left => Err(unknown(
                format!(
                    "the journal could not tell whether it reopened this request ({e}): it was not sent by this call, but a recovery may send it"
                ),
                Some(e),
            )),
            Err(e) => Err(unknown(
                format!("{e}; the request was recorded before, and may have been sent then"),
                Some(e),
            )),
        }
    }

    /// Run `call` while holding `held`, renewing its lease every third of it (a heartbeat), so
    /// that a slow call keeps its entry and no recovery sends it meanwhile. Returns the answer
    /// and whether the lease was lost on the way (another process took the entry over).
    pub(crate) async fn while_held<T>(
        &self,
        held: &Held,
        call: impl std::future::Future<Output = T>,
    ) -> (T, bool) {
        let owner = self.inner.owner.as_str();
        let lease_ms = millis(self.inner.lease);
        let period = (self.inner.lease / 3).max(std::time::Duration::from_millis(10));
        let lost = std::sync::atomic::AtomicBool::new(false);
        // The heartbeat is a future of its own, polled beside the call: a renewal that waits
        // on a slow database never stops the call from being driven.
        let heartbeat = async {
            loop {
                tokio::time::sleep(period).await;
                match self.inner.db.renew(held.lease, owner, lease_ms).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(
                            entry = held.lease.id,
                            "the journal lease was taken over while the request was in flight"
                        );
                        lost.store(true, std::sync::atomic::Ordering::SeqCst);
                        return;
                    }
                    // The database is unreachable for now; the next beat tries again.
                    Err(e) => {
                        tracing::warn!(entry = held.lease.id, error = %e, "the journal lease could not be renewed")
                    }
                }
            }
        };
        let mut call = std::pin::pin!(call);
        let mut heartbeat = std::pin::pin!(heartbeat);
        let mut beating = true;
        let answer = loop {
            tokio::select! {
                answer = &mut call => break answer,
                () = &mut heartbeat, if beating => beating = false,
            }
        };
        (answer, lost.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Record where a send left its entry and release the lease, under the lease's token.
    /// Returns false when the lease was no longer this process's (nothing written): the caller
    /// must then not report its own answer as the request's outcome. A write that fails is
    /// logged, not returned: the entry stays open and the next recovery reads it again with the
    /// same key.
    pub(crate) async fn settle(&self, held: &Held, verdict: Recording) -> Settled {
        let owner = self.inner.owner.as_str();
        let result = match verdict.state {
            Some(state) => {
                self.inner
                    .db
                    .finish(held.lease, owner, state, &verdict.outcome, &verdict.refs)
                    .await
            }
            None => self.inner.db.release(held.lease, owner).await,
        };
        match result {
            Ok(true) => Settled::Kept,
            Ok(false) => Settled::Lost,
            Err(e) => {
                tracing::warn!(entry = held.lease.id, error = %e, "the journal could not record an outcome; recover() will read it again");
                Settled::Unrecorded(e)
            }
        }
    }

    /// Record an answer without waiting for it (see the `background` module): on SQLite handed
    /// to the journal's writer, elsewhere written by a task of its own.
    fn settle_in_background(&self, held: Held, verdict: Recording) {
        let done = self.inner.background.begin();
        let done = match verdict.state {
            Some(state) => match self.inner.db.finish_later(
                held.lease,
                self.inner.owner.as_str(),
                state,
                &verdict.outcome,
                &verdict.refs,
                done,
            ) {
                Ok(()) => return,
                Err(done) => done,
            },
            None => done,
        };
        let journal = self.clone();
        tokio::spawn(async move {
            // Logged by settle when it fails or the lease was lost: the entry then stays as
            // another process or recovery leaves it.
            let _ = journal.settle(&held, verdict).await;
            drop(done);
        });
    }

    /// A SQLite journal whose file was deleted or replaced under this process writes to a file
    /// nobody will read: say so instead of a silent success.
    pub(crate) async fn check_still_there(&self) -> Result<(), crate::JournalError> {
        self.inner.db.check_file()
    }
}

/// Whether an answer was recorded under the lease.
pub(crate) enum Settled {
    /// Recorded.
    Kept,
    /// The lease was another process's by then: nothing written.
    Lost,
    /// The write failed: the entry stays as it was (open).
    Unrecorded(crate::JournalError),
}

impl Journal {
    /// Hold the request's entry, send it with `call` (told whether the entry was there before:
    /// a resend) while renewing the lease, record the answer through `verdict`, and return the
    /// answer.
    ///
    /// A process that lost its lease while the call was in flight (another took the entry
    /// over) does not report its own answer when that answer is a refusal or "nothing sent":
    /// the other process may have sent it first (its own `transfer.already.done` would then be
    /// a false refusal). It answers with an unknown outcome naming what the journal holds.
    pub(crate) async fn journaled<T, C, Fut>(
        &self,
        request: Request<'_>,
        call: impl FnOnce(bool) -> Fut,
        verdict: impl FnOnce(&Result<T, Error<C>>, bool) -> Recording,
    ) -> Result<T, Error<C>>
    where
        C: whish_core::ErrorCode,
        Fut: std::future::Future<Output = Result<T, Error<C>>>,
    {
        self.journaled_as(request, Reopen::AsFirstSend, call, verdict)
            .await
    }

    /// [`journaled`](Self::journaled), with what becomes of an entry recorded as never sent.
    pub(crate) async fn journaled_as<T, C, Fut>(
        &self,
        request: Request<'_>,
        reopen: Reopen,
        call: impl FnOnce(bool) -> Fut,
        verdict: impl FnOnce(&Result<T, Error<C>>, bool) -> Recording,
    ) -> Result<T, Error<C>>
    where
        C: whish_core::ErrorCode,
        Fut: std::future::Future<Output = Result<T, Error<C>>>,
    {
        let held = self.hold(&request, reopen).await?;
        self.send_held(held, request, call, verdict).await
    }

    /// [`journaled`](Self::journaled) from the send on, for an entry this process holds.
    pub(crate) async fn send_held<T, C, Fut>(
        &self,
        held: Held,
        request: Request<'_>,
        call: impl FnOnce(bool) -> Fut,
        verdict: impl FnOnce(&Result<T, Error<C>>, bool) -> Recording,
    ) -> Result<T, Error<C>>
    where
        C: whish_core::ErrorCode,
        Fut: std::future::Future<Output = Result<T, Error<C>>>,
    {
        let (result, lost) = self.while_held(&held, call(held.resend)).await;
        // An answer the journal cannot change (accepted, Pending, unknown) is told as it is
        // whatever the write finds, so it is recorded after the call returns.
        let told_as_is = match &result {
            Ok(_) => true,
            Err(e) => e.outcome_unknown(),
        };
        if told_as_is && !lost && !self.inner.durable_outcomes {
            let recorded = verdict(&result, held.resend);
            self.settle_in_background(held, recorded);
            return result;
        }
        let settled = if lost {
            Settled::Lost
        } else {
            self.settle(&held, verdict(&result, held.resend)).await
        };
        let Err(answer) = &result else {
            return result;
        };
        let recorded = match &settled {
            Settled::Kept => crate::lifecycle::Recorded::Kept,
            Settled::Lost => crate::lifecycle::Recorded::Lost,
            Settled::Unrecorded(_) => crate::lifecycle::Recorded::Failed,
        };
        if crate::lifecycle::told(answer.verdict(), recorded) == answer.verdict() {
            return result;
        }
        let (message, source) = match settled {
            // The entry stays open, so a recovery will send the request again: a refusal or
            // "nothing sent" the journal could not record is not final.
            Settled::Unrecorded(e) => (
                format!(
                    "this call's answer ({answer}) could not be recorded ({e}): the entry stays open and a recovery will send the request again with the same key"
                ),
                Some(std::sync::Arc::new(e) as _),
            ),
            _ => {
                let now = self
                    .inner
                    .db
                    .get(request.service, request.operation, request.key)
                    .await
                    .ok()
                    .flatten()
                    .map(|entry| {
                        format!(
                            "; the journal now says {}{}",
                            entry.state,
                            entry
                                .outcome
                                .map(|o| format!(" ({})", o.result))
                                .unwrap_or_default()
                        )
                    })
                    .unwrap_or_default();
                (
                    format!(
                        "another process took this request over while it was in flight, so this answer ({answer}) is not its outcome{now}"
                    ),
                    None,
                )
            }
        };
        Err(Error::Record(RecordError::outcome_unknown(
            message,
            Some(request.key.to_owned()),
            source,
        )))
    }
}
