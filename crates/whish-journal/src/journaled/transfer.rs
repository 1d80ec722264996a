//! The journaled money-transfer client: sends and cancels.

use whish_money_transfer::{
    Cancellation, PreparedCancel, PreparedTransfer, SendOutcome, StatusResult, TransferClient,
};

use super::{Recording, Request, Reservation, Unreserved};
use crate::entry::{Operation, References, Service};
use crate::{Journal, JournalError};

pub(crate) fn transfer_refs(outcome: &SendOutcome) -> References {
    let mut refs = References {
        ltn_number: outcome.ltn_number().map(str::to_owned),
        transfer_id: outcome.transfer_id().map(str::to_owned),
        charges: match outcome {
            SendOutcome::Sent(s) => s.charges,
            SendOutcome::Credited(c) => c.charges,
            _ => None,
        },
        ..References::default()
    };
    refs.transfer_status = Some(match outcome {
        SendOutcome::Confirmed { status, .. } => status.status.to_string(),
        SendOutcome::Credited(_) => "CREDITED".to_owned(),
        _ => "SENT".to_owned(),
    });
    refs
}

pub(crate) fn status_refs(status: &StatusResult) -> References {
    References {
        ltn_number: status.ltn_number.clone(),
        transfer_id: status.transfer_id.clone(),
        transfer_status: Some(status.status.to_string()),
        ..References::default()
    }
}

pub(crate) fn send_verdict(
    result: &Result<SendOutcome, whish_money_transfer::Error>,
    resend: bool,
) -> Recording {
    match result {
        Ok(o @ SendOutcome::Confirmed { .. }) => Recording::accepted("confirmed", transfer_refs(o)),
        Ok(o) => Recording::accepted("accepted", transfer_refs(o)),
        Err(e) => Recording::of_error(e, resend),
    }
}

pub(crate) fn cancel_verdict(
    result: &Result<Cancellation, whish_money_transfer::Error>,
    resend: bool,
) -> Recording {
    match result {
        Ok(c) => Recording::accepted(
            "accepted",
            References {
                ltn_number: c.ltn_number.clone(),
                transfer_id: c.transfer_id.clone(),
                transfer_status: Some(c.status.to_string()),
                ..References::default()
            },
        ),
        Err(e) => Recording::of_error(e, resend),
    }
}

/// A send recorded in the journal ahead of time by [`JournaledTransfer::reserve`]: send it with
/// [`JournaledTransfer::send_reserved`], or give it back with [`JournaledTransfer::unreserve`].
///
/// While it is neither, the journal holds the request open under this process's lease, as it
/// holds any request between its write and its send: if the process dies, recovery sends it
/// (with the same Request-id, so at most once). Dropping one without either leaves it so.
#[derive(Debug)]
#[must_use = "a reserved send is open in the journal until it is sent or given back"]
pub struct ReservedSend {
    prepared: PreparedTransfer,
    reservation: Reservation,
    /// The target of the client that reserved it: the one its entry records.
    target: std::sync::Arc<str>,
}

impl ReservedSend {
    /// The prepared transfer it reserves.
    pub fn prepared(&self) -> &PreparedTransfer {
        &self.prepared
    }

    /// True when the reservation recorded the request and holds it; false when the Request-id
    /// was in the journal already, or the journal could not be written (the send then records
    /// it on its own, as [`JournaledTransfer::send`] does).
    pub fn is_held(&self) -> bool {
        matches!(self.reservation, Reservation::Held { .. })
    }
}

impl crate::SendsMark {
    /// This mark moved past the entries `reserved` recorded, when they are every entry
    /// recorded after it (their ids follow the mark without a gap): a check that reads the
    /// sends recorded since a mark, then reserves its own, need not read those back. Otherwise
    /// (another entry among them, a reservation that may have written rows it cannot name)
    /// the mark as it was. The default mark moves only past the first entries a journal ever
    /// held (ids from 1): nothing can lie before them.
    #[must_use]
    pub fn past<'a>(
        self,
        reserved: impl IntoIterator<Item = &'a ReservedSend>,
    ) -> crate::SendsMark {
        let mut ids: Vec<i64> = Vec::new();
        for r in reserved {
            match r.reservation {
                Reservation::Held { lease, .. } => ids.push(lease.id),
                Reservation::RecordedBefore => {}
                // It may have recorded rows this call cannot name.
                Reservation::Unsure { .. } => return self,
            }
        }
        ids.sort_unstable();
        let gapless = ids
            .iter()
            .zip(self.0 + 1..)
            .all(|(id, expected)| *id == expected);
        match ids.last() {
            Some(last) if gapless => crate::SendsMark(*last),
            _ => self,
        }
    }
}

/// A send's entry: its Request-id as text (`key`) and its exact bytes.
fn send_request<'a>(prepared: &'a PreparedTransfer, key: &'a str, target: &'a str) -> Request<'a> {
    Request {
        service: Service::MoneyTransfer,
        operation: Operation::Send,
        key,
        context: None,
        body: prepared.body(),
        target,
    }
}

/// A [`TransferClient`] whose sends and cancels are journaled. From [`Journal::transfer`].
#[derive(Debug, Clone)]
pub struct JournaledTransfer {
    pub(crate) journal: Journal,
    pub(crate) client: TransferClient,
    /// The client's target, drawn once.
    pub(crate) target: std::sync::Arc<str>,
}

impl JournaledTransfer {
    /// The client, for the calls that move no money (fees, status, reports).
    pub fn client(&self) -> &TransferClient {
        &self.client
    }

    /// Follow a send that answered Pending (or whose outcome is unknown) to its end, and
    /// record it: the entry under `prepared`'s Request-id is settled as recovery settles it (the
    /// status read by Request-id, with the activity log as a second witness; a send that never
    /// arrived is sent again with its own Request-id and bytes), again and again on
    /// `follow_up`'s schedule, until it is final or the follow-up's deadline passes. Returns the
    /// entry as it stands then: `accepted` (its references hold the transfer), `refused`, or
    /// still open (`pending`, `may-have-arrived`) or with a person, when no final answer came.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the journal cannot be read or written, or holds no entry under
    /// this Request-id.
    pub async fn await_final(
        &self,
        prepared: &PreparedTransfer,
        follow_up: whish_core::FollowUp,
    ) -> Result<crate::Entry, crate::JournalError> {
        let key = prepared.request_id().to_string();
        let clients = crate::Clients::new().transfer(self.client.clone());
        let options = crate::Recovery::new();
        follow_up
            .run(
                || async {
                    self.journal
                        .recover_entries(
                            &clients,
                            &options,
                            &[(Service::MoneyTransfer, Operation::Send, key.as_str())],
                        )
                        .await?;
                    self.journal
                        .entry(Service::MoneyTransfer, Operation::Send, &key)
                        .await?
                        .ok_or_else(|| {
                            crate::JournalError::new(
                                crate::JournalErrorKind::Read,
                                format!("no journal entry has the Request-id {key}"),
                            )
                        })
                },
                |answer: &Result<crate::Entry, crate::JournalError>| match answer {
                    Ok(entry) => {
                        entry.state.is_final() || entry.state == crate::State::NeedsOperator
                    }
                    Err(_) => true,
                },
            )
            .await
    }

    /// Record the transfer (its Request-id and exact bytes), durably, then send it, then
    /// record the outcome. The answer is [`TransferClient::send`]'s. If this process dies at
    /// any point, [`Journal::recover`] finishes it with the same Request-id: one transfer.
    ///
    /// A Request-id already in the journal with the same bytes is sent as a resend
    /// (`transfer.already.done` confirms it); with other bytes it is refused before sending.
    ///
    /// # Errors
    ///
    /// `Err` for every answer but acceptance, told apart by
    /// [`Error::verdict`](whish_core::Error::verdict): a refusal (`code()`; final), Pending
    /// (`is_pending()`), an outcome left unknown after the request may have arrived
    /// (`outcome_unknown()`: send the same prepared request again, never a new one), or nothing
    /// sent (`nothing_sent()`: a transport failure before the first byte). A journal that cannot
    /// record the request first is an error with `nothing_sent()` true; one that cannot tell
    /// whether it was sent is an unknown outcome (run recovery).
    pub async fn send(
        &self,
        prepared: &PreparedTransfer,
    ) -> Result<SendOutcome, whish_money_transfer::Error> {
        self.send_as(prepared, crate::journaled::Reopen::AsFirstSend)
            .await
    }

    /// [`send`](Self::send) a transfer as the journal held it when you read its entry, for a
    /// program that checked the journal for repeats under
    /// [`Journal::lock_repeat_check`](crate::Journal::lock_repeat_check) and found it open:
    /// an entry given back since (recorded as never sent, by another process) is not sent
    /// again here, where no other process's check would count it; the answer is then an error
    /// with `nothing_sent()` true. Send such a transfer again through a reservation made under
    /// the lock ([`reserve_under`](Self::reserve_under)), which checks it as a new one.
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    pub async fn send_recorded(
        &self,
        prepared: &PreparedTransfer,
    ) -> Result<SendOutcome, whish_money_transfer::Error> {
        self.send_as(prepared, crate::journaled::Reopen::Never)
            .await
    }

    async fn send_as(
        &self,
        prepared: &PreparedTransfer,
        reopen: crate::journaled::Reopen,
    ) -> Result<SendOutcome, whish_money_transfer::Error> {
        let key = prepared.request_id().to_string();
        self.journal
            .journaled_as(
                send_request(prepared, &key, &self.target),
                reopen,
                |resend| async move {
                    if resend {
                        self.client.resend(prepared).await
                    } else {
                        self.client.send(prepared).await
                    }
                },
                send_verdict,
            )
            .await
    }

    /// Record many transfers in the journal at once, before any is sent: one transaction, one
    /// durable commit for all of them, instead of one for each send (or for each group of sends
    /// that happen to start together). A batch does this for its next rows, then sends each
    /// with [`send_reserved`](Self::send_reserved).
    ///
    /// Each reserved transfer is recorded exactly as [`send`](Self::send) records it before it
    /// sends (open, leased to this process), so a crash leaves it to recovery, which sends it
    /// with the same Request-id: at most one transfer. One that will not be sent (the batch
    /// stopped) must be given back with [`unreserve`](Self::unreserve), which records it as
    /// never sent. A Request-id already in the journal is not recorded again (it is sent the
    /// way `send` sends it), except a transfer recorded as never sent with the same bytes for
    /// this service: that one is recorded afresh, a new entry (open, held by the reservation)
    /// taking the old one's place, so that a check reading the sends recorded since a mark
    /// ([`Journal::sends_that_may_have_paid_since`](crate::Journal::sends_that_may_have_paid_since))
    /// reads it. A journal that cannot be written reserves nothing, and each send then
    /// records its transfer on its own.
    ///
    /// Reserve what you will send within a fraction of the journal's lease
    /// ([`JournalBuilder::lease`](crate::JournalBuilder::lease)): a reservation older than a
    /// third of it is renewed before its send, and one whose lease ran out may be taken over
    /// (by a recovery elsewhere) and is then sent, if at all, the way `send` decides.
    pub async fn reserve(&self, prepared: Vec<PreparedTransfer>) -> Vec<ReservedSend> {
        self.reserve_many(None, prepared).await
    }

    /// [`reserve`](Self::reserve) transfers while holding the journal's repeat check
    /// ([`Journal::lock_repeat_check`]), after checking the journal for their bodies: the
    /// intents are written while the check is held, so whoever checks next finds them. On
    /// PostgreSQL the write runs on the lock's own session: it commits only while the lock is
    /// held, and when that session has ended (the server restarted, the connection was cut:
    /// the server let the lock go, and another process may have checked meanwhile) it fails,
    /// and no transfer is held ([`ReservedSend::is_held`] false).
    ///
    /// A transfer not held must not be sent on the strength of the check: give it back with
    /// [`unreserve`](Self::unreserve) (which records it as never sent where it can, and
    /// answers what it could not prove), and check again.
    pub async fn reserve_under(
        &self,
        check: &mut crate::RepeatCheckLock,
        prepared: Vec<PreparedTransfer>,
    ) -> Vec<ReservedSend> {
        self.reserve_many(Some(check.store_lock()), prepared).await
    }

    async fn reserve_many(
        &self,
        lock: Option<&mut crate::store::RepeatLock>,
        prepared: Vec<PreparedTransfer>,
    ) -> Vec<ReservedSend> {
        let keys: Vec<String> = prepared
            .iter()
            .map(|p| p.request_id().to_string())
            .collect();
        let requests: Vec<Request<'_>> = prepared
            .iter()
            .zip(&keys)
            .map(|(p, k)| send_request(p, k, &self.target))
            .collect();
        let reservations = self.journal.reserve_all(lock, &requests).await;
        drop(requests);
        prepared
            .into_iter()
            .zip(reservations)
            .map(|(prepared, reservation)| ReservedSend {
                prepared,
                reservation,
                target: self.target.clone(),
            })
            .collect()
    }

    /// Send a transfer [`reserve`](Self::reserve) recorded: it goes at once (its entry is held
    /// already), and its outcome is recorded as [`send`](Self::send) records it. The answer is
    /// `send`'s, with the same errors.
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    pub async fn send_reserved(
        &self,
        reserved: ReservedSend,
    ) -> Result<SendOutcome, whish_money_transfer::Error> {
        self.reserved(reserved, false).await
    }

    /// Send a transfer [`reserve`](Self::reserve) recorded as a resend of one you know you sent
    /// before: as [`resend`](Self::resend) sends it (`transfer.already.done` is a confirmation),
    /// from an entry recorded ahead. For a resend under a Request-id the journal does not hold,
    /// recorded while holding [`Journal::lock_repeat_check`].
    ///
    /// # Errors
    ///
    /// As [`resend`](Self::resend).
    pub async fn resend_reserved(
        &self,
        reserved: ReservedSend,
    ) -> Result<SendOutcome, whish_money_transfer::Error> {
        self.reserved(reserved, true).await
    }

    /// [`send_reserved`](Self::send_reserved), or its resend (`known`: the request was sent
    /// before, so `transfer.already.done` confirms it).
    async fn reserved(
        &self,
        reserved: ReservedSend,
        known: bool,
    ) -> Result<SendOutcome, whish_money_transfer::Error> {
        let ReservedSend {
            prepared,
            reservation,
            target,
        } = reserved;
        let key = prepared.request_id().to_string();
        // Reserved through another service's or account's client: its entry names that one,
        // and a send here would be a request that entry does not describe (and a recovery
        // there a second one). It stays open for that client, or a recovery with its settings.
        if target != self.target {
            return Err(whish_core::Error::Record(
                whish_core::RecordError::outcome_unknown(
                    format!(
                        "this transfer was reserved for another service ({target}); this client sends to {}: this call sent nothing, and its entry stays open for that service",
                        self.target
                    ),
                    Some(key),
                    None,
                ),
            ));
        }
        let prepared = &prepared;
        self.journal
            .journaled_reserved(
                send_request(prepared, &key, &self.target),
                reservation,
                |resend| async move {
                    if resend || known {
                        self.client.resend(prepared).await
                    } else {
                        self.client.send(prepared).await
                    }
                },
                move |result, resend| send_verdict(result, resend || known),
            )
            .await
    }

    /// Give back a transfer [`reserve`](Self::reserve) recorded and that will not be sent: the
    /// journal records it as never sent (so no recovery sends it, and a later send of it is a
    /// first send). Sends nothing.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the journal cannot be written: the entry stays open, and a
    /// recovery may send it.
    pub async fn unreserve(&self, reserved: ReservedSend) -> Result<Unreserved, JournalError> {
        let key = reserved.prepared.request_id().to_string();
        self.journal
            .unreserve(
                &send_request(&reserved.prepared, &key, &reserved.target),
                reserved.reservation,
            )
            .await
    }

    /// Record transfers you decided not to send (a batch stopped before them) as never sent,
    /// in one durable commit, so that the journal, not a guess, says nothing was sent: each is
    /// [`Unreserved::NeverSent`] (recorded: no recovery sends it, and a later send of it is a
    /// first send) or [`Unreserved::AsBefore`] when its Request-id was in the journal already
    /// (left as it was: another process, or an earlier run, may have sent it). `why` is
    /// recorded as the entries' message.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the journal cannot be written: this call sent nothing, but
    /// nothing is known of the entries another process may have made.
    pub async fn record_unsent(
        &self,
        prepared: &[PreparedTransfer],
        why: &str,
    ) -> Result<Vec<Unreserved>, JournalError> {
        let keys: Vec<String> = prepared
            .iter()
            .map(|p| p.request_id().to_string())
            .collect();
        let requests: Vec<Request<'_>> = prepared
            .iter()
            .zip(&keys)
            .map(|(p, k)| send_request(p, k, &self.target))
            .collect();
        self.journal.record_unsent_all(&requests, why).await
    }

    /// Resend a transfer you know you sent before (`transfer.already.done` is a confirmation
    /// in every case), recording it like [`send`](Self::send): the answer is
    /// [`TransferClient::resend`]'s.
    ///
    /// # Errors
    ///
    /// `Err` for every answer but acceptance, told apart by
    /// [`Error::verdict`](whish_core::Error::verdict): a refusal (`code()`; final), Pending
    /// (`is_pending()`), an outcome left unknown after the request may have arrived
    /// (`outcome_unknown()`: send the same prepared request again, never a new one), or nothing
    /// sent (`nothing_sent()`: a transport failure before the first byte). A journal that cannot
    /// record the request first is an error with `nothing_sent()` true; one that cannot tell
    /// whether it was sent is an unknown outcome (run recovery).
    pub async fn resend(
        &self,
        prepared: &PreparedTransfer,
    ) -> Result<SendOutcome, whish_money_transfer::Error> {
        let key = prepared.request_id().to_string();
        self.journal
            .journaled(
                Request {
                    service: Service::MoneyTransfer,
                    operation: Operation::Send,
                    key: &key,
                    context: None,
                    body: prepared.body(),
                    target: &self.target,
                },
                |_| self.client.resend(prepared),
                // Known to be a resend even when the entry is new: a request that reached
                // nothing leaves it open.
                |result, _| send_verdict(result, true),
            )
            .await
    }

    /// Record the cancel, send it, record the outcome; the answer is
    /// [`TransferClient::cancel`]'s. Recovery reads the transfer's status by LTN before it
    /// sends the same cancel again.
    ///
    /// # Errors
    ///
    /// `Err` for every answer but acceptance, told apart by
    /// [`Error::verdict`](whish_core::Error::verdict): a refusal (`code()`; final), Pending
    /// (`is_pending()`), an outcome left unknown after the request may have arrived
    /// (`outcome_unknown()`: send the same prepared request again, never a new one), or nothing
    /// sent (`nothing_sent()`: a transport failure before the first byte). A journal that cannot
    /// record the request first is an error with `nothing_sent()` true; one that cannot tell
    /// whether it was sent is an unknown outcome (run recovery).
    pub async fn cancel(
        &self,
        prepared: &PreparedCancel,
    ) -> Result<Cancellation, whish_money_transfer::Error> {
        let key = prepared.request_id().to_string();
        self.journal
            .journaled(
                Request {
                    service: Service::MoneyTransfer,
                    operation: Operation::Cancel,
                    key: &key,
                    context: None,
                    body: prepared.body(),
                    target: &self.target,
                },
                |resend| {
                    // Sent before: `transfer.cannot_be_canceled` may mean that earlier cancel
                    // applied, and the client reads the status by LTN to say which.
                    if resend {
                        prepared.delivery().set();
                    }
                    self.client.cancel(prepared)
                },
                cancel_verdict,
            )
            .await
    }
}
