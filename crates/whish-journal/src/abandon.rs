//! A person's decision that an entry waiting for the operator is not to be sent: checked with
//! the service first, then closed, so that neither the journal nor a batch keeps reporting it.
//!
//! Only what the service can prove it never received is closed: a transfer's send when the
//! status read by its Request-id finds no transfer and the activity log lists none, a cancel when the transfer's status shows it
//! did not apply. Anything else is left exactly as it was, with the reason.

#[cfg(feature = "money-transfer")]
use whish_money_transfer::{PreparedCancel, StatusQuery, TransferCode, TransferStatus};

use crate::entry::{Operation, Outcome, Service, State};
use crate::recover::Clients;
use crate::store::millis;
use crate::{Journal, JournalError};

/// The outcome `result` of an entry a person abandoned.
pub const ABANDONED: &str = "abandoned";

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
    /// service, or another process took the entry during the check).
    Unchecked {
        /// Why.
        why: String,
    },
    /// Left as it was: the entry is not waiting for the operator (it is final, or open and
    /// still recovery's to settle), or another process holds it now.
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
    /// when neither holds a transfer under it); a cancel is decided by the transfer's status (closed only when the transfer is not
    /// cancelled). The entry is leased while it is checked, so no recovery sends it meanwhile.
    /// It is then `refused`, outcome `abandoned`, with `why` in its message: no recovery or
    /// batch sends it, and `journal list --open` no longer shows it.
    ///
    /// What the check cannot rule out: a request still travelling after the read (days after
    /// it was recorded, as entries waiting for the operator are) that arrives later. The
    /// reconciliation reports such a transfer (the journal says refused, the service has it).
    ///
    /// Only money-transfer entries can be checked (a `clients` with
    /// [`Clients::transfer`]); the others are [`Abandoned::Unchecked`].
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
        self.inner.background.wait().await;
        let Some(found) = self.inner.db.get(service, operation, key).await? else {
            return Ok(Abandoned::NoEntry);
        };
        if found.state != State::NeedsOperator {
            return Ok(Abandoned::NotWaiting { state: found.state });
        }
        let owner = self.inner.owner.as_str();
        let lease_ms = millis(self.inner.lease);
        let Some(claimed) = self
            .inner
            .db
            .claim_one(found.id, owner, lease_ms, true)
            .await?
        else {
            // Another process holds it (a recovery working it now), or it moved on.
            let state = self
                .inner
                .db
                .get(service, operation, key)
                .await?
                .map_or(found.state, |e| e.state);
            return Ok(Abandoned::NotWaiting { state });
        };
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
                let mut outcome = Outcome::new(ABANDONED);
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
            match client.status(&StatusQuery::RequestId(id)).await {
                Ok(s) => Check::TookEffect(format!(
                    "the service holds a transfer under Request-id {id}: {}{}",
                    s.status,
                    s.ltn_number
                        .as_deref()
                        .map(|l| format!(", LTN {l}"))
                        .unwrap_or_default()
                )),
                // Not found by the status read: the activity log is the second witness (a
                // stale or lying read would otherwise close a transfer that exists).
                Err(e) if e.code() == Some(&TransferCode::SendingTransferInvalidInfo) => {
                    match client.logged_under(id).await {
                        Ok(false) => Check::NeverTookEffect(format!(
                            "the service held no transfer under Request-id {id}, and its activity log of the last 40 days listed none"
                        )),
                        Ok(true) => Check::TookEffect(format!(
                            "the status read found no transfer under Request-id {id}, but the activity log lists one"
                        )),
                        Err(e) => Check::NoAnswer(format!(
                            "the status read found no transfer under Request-id {id}, and the activity log could not be read to confirm it ({e})"
                        )),
                    }
                }
                Err(e) => Check::NoAnswer(format!("the status read did not answer ({e})")),
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
