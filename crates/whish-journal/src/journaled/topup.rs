//! The journaled top-up client: payments.

use whish_intl_topup::{PayOutcome, PreparedPay, TopupClient};

use super::{Recording, Request};
use crate::Journal;
use crate::entry::{Operation, RecordedOutcome, References, Service, State};

pub(crate) fn pay_verdict(
    result: &Result<PayOutcome, whish_intl_topup::Error>,
    resend: bool,
) -> Recording {
    match result {
        Ok(PayOutcome::Paid(p)) => {
            let mut v = Recording::accepted(
                "accepted",
                References {
                    sold_item_ids: p
                        .sold_items()
                        .iter()
                        .map(|i| i.transaction_id().to_owned())
                        .collect(),
                    ..References::default()
                },
            );
            v.outcome.retrieved = p.retrieved;
            v
        }
        // A challenge is final for this externalId (a replay answers the same) and charged
        // nothing.
        Ok(PayOutcome::Challenge(c)) => {
            let mut outcome = RecordedOutcome::new("challenge");
            outcome.code = Some(c.code.as_str().to_owned());
            Recording {
                state: Some(State::Refused),
                outcome,
                refs: References::default(),
            }
        }
        Ok(_) => Recording {
            state: Some(State::Refused),
            outcome: RecordedOutcome::new("challenge"),
            refs: References::default(),
        },
        Err(e) => Recording::of_error(e, resend),
    }
}

/// A [`TopupClient`] whose payments are journaled. From [`Journal::topup`].
#[derive(Debug, Clone)]
pub struct JournaledTopup {
    pub(crate) journal: Journal,
    pub(crate) client: TopupClient,
    /// The client's target, drawn once.
    pub(crate) target: std::sync::Arc<str>,
}

impl JournaledTopup {
    /// The client, for balance and options.
    pub fn client(&self) -> &TopupClient {
        &self.client
    }

    /// Record the payment (provider, externalId, exact bytes), pay, record the outcome; the
    /// answer is [`TopupClient::pay`]'s. The journal keeps the sold items' transaction ids,
    /// never a PIN.
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
    pub async fn pay(&self, prepared: &PreparedPay) -> Result<PayOutcome, whish_intl_topup::Error> {
        self.journal
            .journaled(
                Request {
                    service: Service::IntlTopup,
                    operation: Operation::Pay,
                    key: prepared.external_id().as_str(),
                    context: Some(prepared.provider()),
                    body: prepared.body(),
                    target: &self.target,
                },
                |resend| {
                    if resend {
                        prepared.delivery().set();
                    }
                    self.client.pay(prepared)
                },
                pay_verdict,
            )
            .await
    }
}
