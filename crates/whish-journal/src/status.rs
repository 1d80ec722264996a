//! Notifications handed on once: the transfer callback's status changes (and any other
//! (subject, status) pair, such as a hosted payment's status), kept in the journal so that a
//! change reaches the integrator's code once across restarts and across processes.
//!
//! The record is a claim, then a delivery: [`Journal::observe_callback`] claims the change and
//! returns it; your handler runs; [`Journal::complete_change`] marks it delivered. A claim that
//! was never completed (the process died in the handler) is claimed again by the next sighting
//! after the journal's lease; [`Journal::forget_change`] releases it at once (the handler
//! failed). Your handler therefore sees a change at least once and, once it has completed, never
//! again.

#[cfg(feature = "money-transfer")]
use whish_money_transfer::TransferStatus;
#[cfg(feature = "money-transfer")]
use whish_money_transfer::callback::{ReceivedCallback, StatusChange};

use crate::store::millis;
use crate::{Journal, JournalError};

/// `transfer:<transferId>`: the callback receiver (`whish-callbacks`) spells it the same way, so
/// a change it hands on and one `observe_callback` hands on share one record.
#[cfg(feature = "money-transfer")]
fn transfer_subject(transfer_id: &str) -> String {
    format!("transfer:{transfer_id}")
}

#[cfg(feature = "money-transfer")]
#[cfg_attr(docsrs, doc(cfg(feature = "money-transfer")))]
impl Journal {
    /// The change of status this (verified) callback brings, claimed for your handler; `None`
    /// when the journal has it already (delivered, or claimed by a live process): a callback
    /// reports the current status, so a repeat is not a new event. The claim is one atomic
    /// statement, so two processes receiving the same callback at once get `Some` in exactly
    /// one of them.
    ///
    /// After your handler: [`complete_change`](Self::complete_change), or
    /// [`forget_change`](Self::forget_change) if it failed. A callback is a notification, not
    /// proof: confirm with the status endpoint before acting on it.
    ///
    /// ```no_run
    /// # async fn run(journal: whish_journal::Journal,
    /// #              cb: whish_money_transfer::callback::ReceivedCallback) -> Result<(), whish_journal::JournalError> {
    /// if let Some(change) = journal.observe_callback(&cb).await? {
    ///     println!("{} is now {}", change.transfer_id, change.to);
    ///     journal.complete_change(&change).await?;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn observe_callback(
        &self,
        cb: &ReceivedCallback,
    ) -> Result<Option<StatusChange>, JournalError> {
        self.observe_status(&cb.transfer_id, cb.external_id, &cb.status)
            .await
    }

    /// The same claim for a status read from the status endpoint (a poller): whichever path
    /// sees a (transfer, status) first hands it on.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn observe_status(
        &self,
        transfer_id: &str,
        request_id: whish_core::RequestId,
        status: &TransferStatus,
    ) -> Result<Option<StatusChange>, JournalError> {
        let subject = transfer_subject(transfer_id);
        let earlier = self.inner.db.statuses(&subject).await?;
        if !self.claim_notification(&subject, status.as_str()).await? {
            return Ok(None);
        }
        let from = earlier
            .into_iter()
            .rfind(|s| s != status.as_str())
            .map(|s| {
                s.parse::<TransferStatus>()
                    .unwrap_or(TransferStatus::Other(s))
            });
        Ok(Some(StatusChange::new(
            transfer_id,
            request_id,
            from,
            status.clone(),
        )))
    }

    /// Your handler finished with this change: it is never handed on again.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn complete_change(&self, change: &StatusChange) -> Result<(), JournalError> {
        self.complete_notification(&transfer_subject(&change.transfer_id), change.to.as_str())
            .await
    }

    /// Your handler could not take this change: release the claim, so that the next sighting
    /// (the sender's redelivery, your status poller) hands it on again.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn forget_change(&self, change: &StatusChange) -> Result<(), JournalError> {
        self.release_notification(&transfer_subject(&change.transfer_id), change.to.as_str())
            .await
    }
}

impl Journal {
    /// Claim any (subject, status) pair for delivery: true the first time, and again when an
    /// earlier claim was neither completed nor released within the journal's lease. The
    /// callback receiver keys hosted payments as `collect:<externalId>`.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn claim_notification(
        &self,
        subject: &str,
        status: &str,
    ) -> Result<bool, JournalError> {
        self.inner
            .db
            .claim(subject, status, millis(self.inner.claim_window))
            .await
    }

    /// Mark a claimed (subject, status) delivered.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn complete_notification(
        &self,
        subject: &str,
        status: &str,
    ) -> Result<(), JournalError> {
        self.inner.db.delivered(subject, status).await
    }

    /// Release a claimed, undelivered (subject, status).
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached, read or written (`kind` says which).
    pub async fn release_notification(
        &self,
        subject: &str,
        status: &str,
    ) -> Result<(), JournalError> {
        self.inner.db.release_claim(subject, status).await
    }
}
