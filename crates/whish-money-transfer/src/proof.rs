//! What the service holds under a send's Request-id: the one reading of what a status read
//! proves, which the client's confirmation of `transfer.already.done`, the journal's recovery
//! and abandon all ask, so that none of them decides it alone.
//!
//! The status endpoint, read by Request-id, finds the transfer the service holds under that
//! number, but its result names no amount: a number reused for another transfer (a caller's
//! own reference, someone else's send) would look like this one. The activity log, which lists
//! the amount and currency of each transfer under its Request-id, tells them apart, and is the
//! second witness before anyone decides that nothing was received (a stale or lying status read
//! alone would close a transfer that exists).

use whish_core::RequestId;

use crate::code::TransferCode;
use crate::{Error, PreparedTransfer, StatusQuery, StatusResult, TransferClient};

/// What the service holds under a send's Request-id.
#[derive(Debug)]
#[non_exhaustive]
pub enum Held {
    /// A transfer that is this send: the activity log lists it with this send's amount and
    /// currency, or (a transfer older than the log's window) lists nothing under the number.
    This(StatusResult),
    /// A transfer that may be someone else's: the activity log lists it with another amount or
    /// currency, it could not be read to tell, or there was no request to compare with.
    MaybeSomeoneElses(StatusResult),
    /// The status read found no transfer under the number (and no second witness was asked).
    NotFound,
    /// No transfer: the status read found none, and the activity log lists none under the
    /// number.
    Nothing,
    /// The status read found none, but the activity log lists one: the service received it.
    LoggedOnly,
    /// It cannot be told now: the status read, or the activity log asked as second witness,
    /// did not answer.
    Unknown(Error),
}

impl TransferClient {
    /// What the service holds under `request_id`, compared with `prepared` (the send as it
    /// was prepared; `None` when it cannot be trusted, and then a transfer found may be
    /// someone else's). `second_witness`: when the status read finds nothing, read the activity
    /// log before saying so ([`Held::Nothing`], [`Held::LoggedOnly`]); without it the answer is
    /// [`Held::NotFound`], enough to decide to send the same request again (the Request-id
    /// cannot make a second transfer) but never to decide it was not received.
    pub async fn held_under(
        &self,
        request_id: RequestId,
        prepared: Option<&PreparedTransfer>,
        second_witness: bool,
    ) -> Held {
        match self.status(&StatusQuery::RequestId(request_id)).await {
            Ok(status) => {
                let mine = match prepared {
                    Some(p) => !self.may_be_someone_elses(p).await,
                    None => false,
                };
                if mine {
                    Held::This(status)
                } else {
                    Held::MaybeSomeoneElses(status)
                }
            }
            Err(e) if e.code() == Some(&TransferCode::SendingTransferInvalidInfo) => {
                if !second_witness {
                    return Held::NotFound;
                }
                match self.logged_under(request_id).await {
                    Ok(false) => Held::Nothing,
                    Ok(true) => Held::LoggedOnly,
                    Err(e) => Held::Unknown(e),
                }
            }
            Err(e) => Held::Unknown(e),
        }
    }
}
