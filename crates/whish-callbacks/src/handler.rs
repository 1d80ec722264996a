//! What the integrator's code receives: notifications, never proof.

use std::future::Future;
use std::sync::Arc;

use whish_core::{Currency, ExternalId, RequestId};
use whish_hosted_collect::{CollectClient, PaymentStatus};
use whish_money_transfer::{StatusQuery, StatusResult, TransferClient, TransferStatus};

use crate::inbox::BoxFuture;

/// What a handler may answer when it could not take a notification: the change stays in the
/// inbox and is handed on again after a backoff, until the deadline (then a person decides).
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// The integrator's code for one kind of notification. Any
/// `Fn(N) -> impl Future<Output = Result<(), HandlerError>>` is one.
pub trait Handler<N>: Send + Sync + 'static {
    /// Take one notification.
    fn handle(&self, notification: N) -> BoxFuture<'static, Result<(), HandlerError>>;
}

impl<N, F, Fut> Handler<N> for F
where
    F: Fn(N) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    fn handle(&self, notification: N) -> BoxFuture<'static, Result<(), HandlerError>> {
        Box::pin(self(notification))
    }
}

pub(crate) type DynHandler<N> = Arc<dyn Handler<N>>;

/// Where a notification came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// The service called the callback address (its signature checked, if you configured a
    /// verifier).
    Callback,
    /// The poller read it from the status endpoint because no callback had told it yet.
    Poller,
}

/// A transfer's status changed, as a callback or the poller reported it. **A notification, not
/// proof**: confirm it with [`confirm`](Self::confirm) (the status endpoint is authoritative)
/// before paying out, shipping, or anything else that cannot be undone.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransferNotification {
    /// The change's key in the inbox (`transfer:<transferId>:<status>`): the same on every
    /// hand-on of this change, by a callback or by the poller. Key your own side effects on it.
    pub key: String,
    /// The transfer.
    pub transfer_id: String,
    /// The Request-id of its create.
    pub request_id: RequestId,
    /// The status reported.
    pub status: TransferStatus,
    /// Callback or poller.
    pub source: Source,
}

impl TransferNotification {
    /// Ask the status endpoint, by transfer id, for the transfer's real state.
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
    pub async fn confirm(
        &self,
        client: &TransferClient,
    ) -> Result<StatusResult, whish_money_transfer::Error> {
        client
            .status(&StatusQuery::TransferId(self.transfer_id.clone()))
            .await
    }
}

/// What brought a hosted payment's status to the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trigger {
    /// The success callback (then confirmed with the status endpoint).
    SuccessCallback,
    /// The failure callback: **one attempt failed**; the link may still be paid.
    FailureCallback,
    /// The poller (no callback had told it yet).
    Poller,
}

/// A hosted payment's status, **read from the status endpoint** after a callback or by the
/// poller. `status.collect_status.is_paid()` is the one reason to fulfil an order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PaymentUpdate {
    /// The change's key in the inbox (`collect:<externalId>:<status>`): the same on every
    /// hand-on of this change, whatever brought it. Key your own side effects on it.
    pub key: String,
    /// The payment.
    pub external_id: ExternalId,
    /// Its currency.
    pub currency: Currency,
    /// Its status, as the status endpoint answered it.
    pub status: PaymentStatus,
    /// What prompted the status read.
    pub trigger: Trigger,
}

/// What to show a payer who lands on a redirect page.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedirectVerdict {
    /// The status endpoint says `success`: show "paid".
    Paid,
    /// Not settled (`pending`, or `unknown`): the link may still be paid; show "processing"
    /// and let the callback or the poller finish it.
    NotYet,
    /// Settled unpaid (`failed`: the link expired), or `refunded`.
    NotPaid(PaymentStatus),
}

/// The redirect pages: the payer's browser landing on your success (or failure) page proves
/// nothing; ask the status endpoint before you show "paid".
///
/// # Errors
///
/// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read, as
/// the service's `Error`; a read is resent after transient failures before it fails.
pub async fn confirm_redirect(
    client: &CollectClient,
    currency: Currency,
    external_id: &ExternalId,
) -> Result<RedirectVerdict, whish_hosted_collect::Error> {
    use whish_hosted_collect::CollectStatus;
    let status = client.status(currency, external_id).await?;
    Ok(match status.collect_status {
        CollectStatus::Success => RedirectVerdict::Paid,
        CollectStatus::Failed | CollectStatus::Refunded => RedirectVerdict::NotPaid(status),
        _ => RedirectVerdict::NotYet,
    })
}
