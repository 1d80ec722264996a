//! The transfer callback's de-duplication, kept in the journal: a status change is handed to
//! the integrator's code once, across restarts and across processes sharing the journal.

use whish_money_transfer::TransferStatus;
use whish_money_transfer::callback::{ReceivedCallback, StatusChange};

use crate::{Journal, JournalError};

impl Journal {
    /// The change of status this (verified) callback brings, or `None` when the journal has
    /// recorded that status for that transfer before: a callback reports the current status, so
    /// a repeat is not a new event (the spec). The record is one atomic insert, so two
    /// processes receiving the same callback at once get `Some` in exactly one of them.
    ///
    /// Recorded before your code runs: if your handler fails, call
    /// [`forget_change`](Self::forget_change) so that the sender's redelivery (or your status
    /// poller) hands it on again. A callback is a notification, not proof: confirm with the
    /// status endpoint before acting on it.
    ///
    /// ```no_run
    /// # async fn run(journal: whish_journal::Journal,
    /// #              cb: whish_money_transfer::callback::ReceivedCallback) -> Result<(), whish_journal::JournalError> {
    /// if let Some(change) = journal.observe_callback(&cb).await? {
    ///     println!("{} is now {}", change.transfer_id, change.to);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn observe_callback(
        &self,
        cb: &ReceivedCallback,
    ) -> Result<Option<StatusChange>, JournalError> {
        self.observe_status(&cb.transfer_id, cb.external_id, &cb.status)
            .await
    }

    /// The same record for a status read from the status endpoint (a poller): `Some` once per
    /// transfer and status, whichever path saw it first.
    pub async fn observe_status(
        &self,
        transfer_id: &str,
        request_id: whish_core::RequestId,
        status: &TransferStatus,
    ) -> Result<Option<StatusChange>, JournalError> {
        let db = &self.inner.db;
        let earlier = db.statuses(transfer_id).await?;
        if !db
            .record_status(transfer_id, status.as_str(), request_id.get())
            .await?
        {
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

    /// Undo [`observe_callback`](Self::observe_callback) for a change your code could not
    /// handle, so that it is handed on again the next time it is seen.
    pub async fn forget_change(&self, change: &StatusChange) -> Result<(), JournalError> {
        self.inner
            .db
            .forget_status(&change.transfer_id, change.to.as_str())
            .await
    }
}
