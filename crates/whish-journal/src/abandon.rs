//! A person's decision that an entry waiting for the operator is not to be sent: checked with
//! the service first, then closed, so that neither the journal nor a batch keeps reporting it.
//!
//! Only what the service can prove it never received is closed: a transfer's send when the
//! status read by its Request-id finds no transfer and the activity log lists none, a cancel
//! when the transfer's status shows it did not apply. Anything else is left exactly as it was,
//! with the reason.

#[cfg(feature = "money-transfer")]
use whish_money_transfer::{Held, PreparedCancel, StatusQuery, TransferStatus};

use crate::entry::{Operation, RecordedOutcome, Service, State};
use crate::recover::Clients;
use crate::store::millis;
use crate::{Journal, JournalError};

pub use crate::entry::ABANDONED;

/// What [`Journal::abandon`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Abandoned {
    /// Closed: recorded `refused` with outcome `abandoned` and the reason given. Nothing sends
    /// it again under its key (a send of the same key is refused as final), and a batch reports
    /// its row refused with code `abandoned`.
    Recorded {
        /// What the service said, which showed the request never took effect.
        checked: String,
    },
    /// Left as it was: the service received it (a transfer exists under the Request-id, or
    /// the transfer was cancelled). Settle it with recovery instead
    /// ([`Recovery::retry_needs_operator`](crate::Recovery::retry_needs_operator)), and cancel
    /// the transfer if it must not be paid.
    Received {
        /// What the service said.
        status: String,
    },
    /// Left as it was: the service's status read did not answer (unreachable, a proxy's page,
    /// a refusal of the read itself). Try again later.
    NoAnswer {
        /// What the read met.
        why: String,
    },
    /// Left as it was: the check cannot be made (the entry's row cannot be trusted, a service
    /// whose requests cannot be checked without sending them again, no client for its
    /// service, a client of another service or account than the entry's, or another process
    /// took the entry during the check).
    Unchecked {
        /// Why.
        why: String,
    },
    /// Left as it was: another process holds the entry now (a recovery settling it, or a call
    /// sending it), or another task of this one. Try again once it is done: it may be settled
    /// by then.
    HeldElsewhere {
        /// The holder's journal owner name.
        holder: String,
    },
    /// Left as it was: the entry is not waiting for the operator (it is final, or open and
    /// still recovery's to settle).
    NotWaiting {
        /// Its state when it was read.
        state: State,
    },
    /// The journal holds no entry for this service, operation and key.
    NoEntry,
}

/// What the service said of a request.
#[cfg_attr(not(feature = "money-transfer"), allow(dead_code))]
enum Check {
    NeverTookEffect(String),
    TookEffect(String),
    NoAnswer(String),
    CannotTell(String),
}

impl Journal {
    /// Close an entry waiting for the operator (`needs-operator`) that a person decided not to
    /// send, once the service shows the request never took effect: a transfer's send is read
    /// by status with its Request-id, then in the activity log of the last 40 days (closed only
    /// when neither holds a transfer under it; a transfer the log lists with another amount or
    /// currency may be someone else's, and leaves it [`Abandoned::Unchecked`]); a cancel is
    /// decided by the transfer's status (closed only when the transfer is not cancelled). The
    /// entry is leased while it is checked, so no recovery sends it meanwhile, and a call
    /// dropped mid-check gives the lease back. It is then `refused`, outcome `abandoned`, with
    /// `why` in its message: no recovery or batch sends it, prune keeps it, and
    /// `journal list --open` no longer shows it.
    ///
    /// What the check cannot rule out: a request still travelling after the read (days after
    /// it was recorded, as entries waiting for the operator are) that arrives later. The
    /// reconciliation reports such a transfer (the journal says refused, the service has it).
    ///
    /// Only money-transfer entries can be checked (a `clients` with
    /// [`Clients::transfer`]); the others are [`Abandoned::Unchecked`].
    ///
    /// # Examples
    ///
    /// A person decided not to send a transfer left waiting for the operator:
    ///
    /// ```no_run
    /// # async fn run(
    /// #     journal: whish_journal::Journal,
    /// #     client: whish_money_transfer::TransferClient,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// use whish_journal::{Abandoned, Clients, Operation, Service};
    /// let clients = Clients::new().transfer(client);
    /// let why = "the beneficiary was paid by cheque instead";
    /// let done = journal
    ///     .abandon(&clients, Service::MoneyTransfer, Operation::Send, "1732700000001", why)
    ///     .await?;
    /// match done {
    ///     Abandoned::Recorded { .. } => println!("closed: never sent, never will be"),
    ///     Abandoned::Received { .. } => println!("the service has it: cancel it instead"),
    ///     other => println!("left waiting: {other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A `JournalError` when the journal cannot be read or written. When the final write
    /// fails the entry stays waiting for the operator (nothing was sent either way).
    pub async fn abandon(
        &self,
        clients: &Clients,
        service: Service,
        operation: Operation,
        key: &str,
        why: &str,
    ) -> Result<Abandoned, JournalError> {
        self.inner.background_written().await;
        let Some(found) = self.inner.db.get(service, operation, key).await? else {
            return Ok(Abandoned::NoEntry);
        };
        if found.state != State::NeedsOperator {
            return Ok(Abandoned::NotWaiting { state: found.state });
        }
        let owner = self.inner.owner.as_str();
        let lease_ms = millis(self.inner.lease);
        // A process of this host that died holding it (a killed `journal abandon`, a killed
        // recovery) leaves it at once, as recovery takes such entries.
        self.free_if_its_holder_died(found.id).await?;
        let Some(claimed) = self
            .inner
            .db
            .claim_one(found.id, owner, lease_ms, true)
            .await?
        else {
            // Another process (or another task of this one) holds it, or it moved on.
            let now = self.inner.db.get(service, operation, key).await?;
            return Ok(match now {
                Some(e) if e.state == State::NeedsOperator => {
                    let holder = self
                        .held_now(found.id)
                        .await?
                        .and_then(|h| h.holder)
                        .unwrap_or_else(|| owner.to_owned());
                    Abandoned::HeldElsewhere { holder }
                }
                Some(e) => Abandoned::NotWaiting { state: e.state },
                None => Abandoned::NoEntry,
            });
        };
        // From here the entry is leased to this call: a call dropped before it ends (a
        // timeout, a task aborted) gives the lease back at once rather than hold the entry
        // from everyone, its own process's recovery included, until the lease runs out.
        let mut guard = GiveBack {
            journal: Some(self.clone()),
            lease: claimed.lease,
        };
        let done = self.check_and_close(clients, claimed, why).await;
        guard.journal = None;
        done
    }

    /// The leased part of [`abandon`](Self::abandon): check with the service, then close the
    /// entry or give its lease back.
    async fn check_and_close(
        &self,
        clients: &Clients,
        claimed: crate::store::Claimed,
        why: &str,
    ) -> Result<Abandoned, JournalError> {
        let owner = self.inner.owner.as_str();
        let lease = claimed.lease;
        let entry = match claimed.entry {
            Ok(entry) if entry.state == State::NeedsOperator => entry,
            Ok(entry) => {
                self.inner.db.release(lease, owner).await?;
                return Ok(Abandoned::NotWaiting { state: entry.state });
            }
            Err(e) => {
                self.inner.db.release(lease, owner).await?;
                return Ok(Abandoned::Unchecked {
                    why: format!("its row cannot be read ({e})"),
                });
            }
        };
        if let Some(other) = clients.other_service(&entry) {
            self.inner.db.release(lease, owner).await?;
            return Ok(Abandoned::Unchecked {
                why: format!(
                    "it was recorded for another service ({}); the client given sends to {}: a check there proves nothing",
                    other.recorded, other.current
                ),
            });
        }
        let quarantined = entry
            .outcome
            .as_ref()
            .is_some_and(|o| o.result == crate::recover::UNREADABLE);
        let held = crate::journaled::Held {
            lease,
            resend: true,
        };
        let (check, lost) = self
            .while_held(&held, check(clients, &entry, quarantined))
            .await;
        if lost {
            return Ok(Abandoned::Unchecked {
                why: "another process took the entry over during the check".into(),
            });
        }
        match check {
            Check::NeverTookEffect(checked) => {
                let mut outcome = RecordedOutcome::new(ABANDONED);
                outcome.message = Some(format!(
                    "abandoned by a person: {why}; when checked, {checked}"
                ));
                if self
                    .inner
                    .db
                    .finish(lease, owner, State::Refused, &outcome, &entry.references)
                    .await?
                {
                    Ok(Abandoned::Recorded { checked })
                } else {
                    Ok(Abandoned::Unchecked {
                        why: "another process took the entry over during the check".into(),
                    })
                }
            }
            Check::TookEffect(status) => {
                self.inner.db.release(lease, owner).await?;
                Ok(Abandoned::Received { status })
            }
            Check::NoAnswer(why) => {
                self.inner.db.release(lease, owner).await?;
                Ok(Abandoned::NoAnswer { why })
            }
            Check::CannotTell(why) => {
                self.inner.db.release(lease, owner).await?;
                Ok(Abandoned::Unchecked { why })
            }
        }
    }
}

/// Gives an abandon's lease back when the call is dropped before it ends (the release is
/// fenced by the lease's token: after the entry was closed or released, it changes nothing).
struct GiveBack {
    journal: Option<Journal>,
    lease: crate::store::Lease,
}

impl Drop for GiveBack {
    fn drop(&mut self) {
        let Some(journal) = self.journal.take() else {
            return;
        };
        let lease = self.lease;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let owner = journal.inner.owner.as_str();
                if let Err(e) = journal.inner.db.release(lease, owner).await {
                    tracing::warn!(entry = lease.id, error = %e, "the lease of a dropped abandon could not be given back; it runs out by itself");
                }
            });
        }
    }
}

/// The send as recorded, to compare with what the service holds: none when its row is not
/// trusted (quarantined) or cannot be read, and then a transfer found may be someone else's.
#[cfg(feature = "money-transfer")]
fn trusted_send(
    id: whish_core::RequestId,
    entry: &crate::Entry,
    quarantined: bool,
) -> Option<whish_money_transfer::PreparedTransfer> {
    if quarantined {
        return None;
    }
    whish_money_transfer::PreparedTransfer::from_stored(id, entry.request.clone()).ok()
}

/// Ask the service whether the entry's request took effect; never sends it.
#[allow(unused_variables)]
async fn check(clients: &Clients, entry: &crate::Entry, quarantined: bool) -> Check {
    match (entry.service, entry.operation) {
        #[cfg(feature = "money-transfer")]
        (Service::MoneyTransfer, Operation::Send) => {
            let Some(client) = clients.transfer_client() else {
                return Check::CannotTell("no transfer client was given to check it".into());
            };
            // The key alone is read (never the request's bytes, which a quarantine distrusts).
            let id = match crate::recover::request_id(&entry.key) {
                Ok(id) => id,
                Err(e) => return Check::CannotTell(format!("its key is not a Request-id ({e})")),
            };
            let prepared = trusted_send(id, entry, quarantined);
            match client.held_under(id, prepared.as_ref(), true).await {
                // The status result names no amount: the transfer under the number may be
                // someone else's (a Request-id reused), and this request may never have
                // arrived. Neither "received" (with advice to cancel a stranger's transfer)
                // nor "never took effect" is known then.
                Held::MaybeSomeoneElses(_) => Check::CannotTell(format!(
                    "the service holds a transfer under Request-id {id}, but the activity log lists it with another amount or currency than this request, or could not be read to tell: it may be someone else's transfer, and this request may never have arrived; a person must look (`whish transfer status --request-id {id}`)"
                )),
                Held::This(s) => Check::TookEffect(format!(
                    "the service holds a transfer under Request-id {id}: {}{}",
                    s.status,
                    s.ltn_number
                        .as_deref()
                        .map(|l| format!(", LTN {l}"))
                        .unwrap_or_default()
                )),
                // Not found by the status read, and the activity log (the second witness: a
                // stale or lying read would otherwise close a transfer that exists) lists none.
                Held::Nothing => Check::NeverTookEffect(format!(
                    "the service held no transfer under Request-id {id}, and its activity log of the last 40 days listed none"
                )),
                Held::LoggedOnly => Check::TookEffect(format!(
                    "the status read found no transfer under Request-id {id}, but the activity log lists one"
                )),
                Held::Unknown(e) => Check::NoAnswer(format!(
                    "the service could not say what it holds under Request-id {id} ({e})"
                )),
                // Asked with a second witness: not answered without one.
                _ => Check::NoAnswer(format!(
                    "the service could not say what it holds under Request-id {id}"
                )),
            }
        }
        #[cfg(feature = "money-transfer")]
        (Service::MoneyTransfer, Operation::Cancel) => {
            let Some(client) = clients.transfer_client() else {
                return Check::CannotTell("no transfer client was given to check it".into());
            };
            if quarantined {
                return Check::CannotTell(
                    "its row could not be read when recovery met it, so the LTN it names is not trusted: look at it with `whish journal show`".into(),
                );
            }
            let prepared = match crate::recover::request_id(&entry.key).and_then(|id| {
                PreparedCancel::from_stored(id, entry.request.clone()).map_err(|e| e.to_string())
            }) {
                Ok(p) => p,
                Err(e) => return Check::CannotTell(format!("its request cannot be read ({e})")),
            };
            let ltn = prepared.ltn_number().to_owned();
            match client.status(&StatusQuery::LtnNumber(ltn.clone())).await {
                Ok(s) if s.status == TransferStatus::CanceledFull => {
                    Check::TookEffect(format!("the transfer of LTN {ltn} is cancelled"))
                }
                Ok(s) if matches!(s.status, TransferStatus::Sent | TransferStatus::Received) => {
                    Check::NeverTookEffect(format!(
                        "the transfer of LTN {ltn} is {}, not cancelled",
                        s.status
                    ))
                }
                Ok(s) => Check::CannotTell(format!(
                    "the transfer of LTN {ltn} is {}, a status this version does not know",
                    s.status
                )),
                Err(e) => Check::NoAnswer(format!("the status read did not answer ({e})")),
            }
        }
        (service, operation) => Check::CannotTell(format!(
            "a {service} {operation} cannot be checked without sending it again: settle it with recovery (retrying the entries waiting for the operator)"
        )),
    }
}
