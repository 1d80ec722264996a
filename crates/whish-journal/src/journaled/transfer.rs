//! The journaled money-transfer client: sends and cancels.

use whish_money_transfer::{
    Cancellation, PreparedCancel, PreparedTransfer, SendOutcome, StatusResult, TransferClient,
};

use super::{Request, Verdict};
use crate::Journal;
use crate::entry::{Operation, References, Service};

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
) -> Verdict {
    match result {
        Ok(o @ SendOutcome::Confirmed { .. }) => Verdict::accepted("confirmed", transfer_refs(o)),
        Ok(o) => Verdict::accepted("accepted", transfer_refs(o)),
        Err(e) => Verdict::of_error(e, resend),
    }
}

pub(crate) fn cancel_verdict(
    result: &Result<Cancellation, whish_money_transfer::Error>,
    resend: bool,
) -> Verdict {
    match result {
        Ok(c) => Verdict::accepted(
            "accepted",
            References {
                ltn_number: c.ltn_number.clone(),
                transfer_id: c.transfer_id.clone(),
                transfer_status: Some(c.status.to_string()),
                ..References::default()
            },
        ),
        Err(e) => Verdict::of_error(e, resend),
    }
}

/// A [`TransferClient`] whose sends and cancels are journaled. From [`Journal::transfer`].
#[derive(Debug, Clone)]
pub struct JournaledTransfer {
    pub(crate) journal: Journal,
    pub(crate) client: TransferClient,
}

impl JournaledTransfer {
    /// The client, for the calls that move no money (fees, status, reports).
    pub fn client(&self) -> &TransferClient {
        &self.client
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
        let key = prepared.request_id().to_string();
        self.journal
            .journaled(
                Request {
                    service: Service::MoneyTransfer,
                    operation: Operation::Send,
                    key: &key,
                    context: None,
                    body: prepared.body(),
                },
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
