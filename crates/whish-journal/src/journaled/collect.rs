//! The journaled hosted-collect client: creates and refunds.

use whish_hosted_collect::{
    CollectClient, CreatedPayment, PreparedPayment, PreparedRefund, Refund,
};

use super::{Recording, Request};
use crate::Journal;
use crate::entry::{Operation, References, Service};

pub(crate) fn create_verdict(
    result: &Result<CreatedPayment, whish_hosted_collect::Error>,
    resend: bool,
) -> Recording {
    match result {
        Ok(c) => {
            let mut v = Recording::accepted(
                "accepted",
                References {
                    collect_url: Some(c.collect_url.clone()),
                    ..References::default()
                },
            );
            v.outcome.retrieved = c.retrieved;
            v
        }
        Err(e) => Recording::of_error(e, resend),
    }
}

pub(crate) fn refund_verdict(
    result: &Result<Refund, whish_hosted_collect::Error>,
    resend: bool,
) -> Recording {
    match result {
        Ok(r) => {
            let mut v = Recording::accepted("accepted", References::default());
            v.outcome.retrieved = r.retrieved;
            v
        }
        Err(e) => Recording::of_error(e, resend),
    }
}

/// A [`CollectClient`] whose creates and refunds are journaled. From [`Journal::collect`].
#[derive(Debug, Clone)]
pub struct JournaledCollect {
    pub(crate) journal: Journal,
    pub(crate) client: CollectClient,
    /// The client's target, drawn once.
    pub(crate) target: std::sync::Arc<str>,
}

impl JournaledCollect {
    /// The client, for balance and status.
    pub fn client(&self) -> &CollectClient {
        &self.client
    }

    /// Record the payment (its externalId and exact bytes), create it, record the outcome; the
    /// answer is [`CollectClient::create_payment`]'s. It still does not mean the payer paid.
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
    pub async fn create_payment(
        &self,
        prepared: &PreparedPayment,
    ) -> Result<CreatedPayment, whish_hosted_collect::Error> {
        self.journal
            .journaled(
                Request {
                    service: Service::HostedCollect,
                    operation: Operation::Create,
                    key: prepared.external_id().as_str(),
                    context: None,
                    body: prepared.body(),
                    target: &self.target,
                },
                |resend| {
                    if resend {
                        prepared.delivery().set();
                    }
                    self.client.create_payment(prepared)
                },
                create_verdict,
            )
            .await
    }

    /// Record the refund (keyed by the payment's externalId), send it, record the outcome; the
    /// answer is [`CollectClient::refund`]'s.
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
    pub async fn refund(
        &self,
        prepared: &PreparedRefund,
    ) -> Result<Refund, whish_hosted_collect::Error> {
        self.journal
            .journaled(
                Request {
                    service: Service::HostedCollect,
                    operation: Operation::Refund,
                    key: prepared.external_id().as_str(),
                    context: None,
                    body: prepared.body(),
                    target: &self.target,
                },
                |resend| {
                    if resend {
                        prepared.delivery().set();
                    }
                    self.client.refund(prepared)
                },
                refund_verdict,
            )
            .await
    }
}
