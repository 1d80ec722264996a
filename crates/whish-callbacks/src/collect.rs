//! `GET` hosted-collect success and failure callbacks.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use tracing::Instrument;
use whish_core::{Currency, ExternalId};
use whish_hosted_collect::callback::reference;

use crate::{PaymentUpdate, Shared, Trigger, answer, deliver};

pub(crate) async fn success(state: State<Arc<Shared>>, uri: Uri) -> Response {
    callback(state, uri, Trigger::SuccessCallback).await
}

pub(crate) async fn failure(state: State<Arc<Shared>>, uri: Uri) -> Response {
    callback(state, uri, Trigger::FailureCallback).await
}

/// The payment a callback address names: its externalId and currency from the query.
fn payment_of(shared: &Shared, uri: &Uri) -> Option<(Currency, ExternalId)> {
    let side = shared.collect.as_ref()?;
    let target = uri.to_string();
    let id = ExternalId::new(reference(&target, &side.reference)?).ok()?;
    let currency = match reference(&target, &side.currency_param) {
        Some(c) if c.eq_ignore_ascii_case("USD") => Currency::Usd,
        Some(c) if c.eq_ignore_ascii_case("LBP") => Currency::Lbp,
        Some(_) => return None,
        None => side.currency.clone()?,
    };
    Some((currency, id))
}

async fn callback(State(shared): State<Arc<Shared>>, uri: Uri, trigger: Trigger) -> Response {
    let Some((currency, external_id)) = payment_of(&shared, &uri) else {
        whish_core::metrics::callback("collect", "rejected");
        return answer(
            StatusCode::BAD_REQUEST,
            "the address holds no known payment reference\n",
        );
    };
    let Some(slot) = shared.collect_tasks.slot() else {
        return answer(StatusCode::SERVICE_UNAVAILABLE, "busy, call again later\n");
    };
    // Nothing is recorded before the status is read (in the background), so the 200 waits for
    // the record to be writable: a journal that is down gets 503, and the service delivers
    // again, instead of a 200 after which nothing is recorded and nothing comes back.
    if let Err(e) = shared.notifications.ready().await {
        tracing::warn!(error = %e, "the notification record is not reachable: 503, deliver again");
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "the record is not reachable, call again later\n",
        );
    }
    let span = tracing::info_span!(
        "whish.callback.collect",
        external_id = %external_id,
        trigger = ?trigger
    );
    let limit = shared.handler_timeout + std::time::Duration::from_secs(1);
    let task_shared = shared.clone();
    whish_core::metrics::callback("collect", "received");
    // Answer at once; the status read and the handler run in the background.
    shared.tasks.spawn(
        slot,
        limit,
        async move {
            confirm_and_deliver(&task_shared, currency, external_id, trigger).await;
        }
        .instrument(span),
    );
    answer(StatusCode::OK, "ok\n")
}

/// Read the payment's status (a callback proves nothing) and hand each new status on once.
pub(crate) async fn confirm_and_deliver(
    shared: &Shared,
    currency: Currency,
    external_id: ExternalId,
    trigger: Trigger,
) -> Option<whish_hosted_collect::CollectStatus> {
    let side = shared.collect.as_ref()?;
    let status = match side.client.status(currency.clone(), &external_id).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "the payment status could not be read; the poller (or the next callback) will");
            return None;
        }
    };
    let collect_status = status.collect_status.clone();
    let update = PaymentUpdate {
        external_id: external_id.clone(),
        currency,
        status,
        trigger,
    };
    deliver(
        shared,
        crate::notifications::payment_subject(external_id.as_str()),
        collect_status.as_str().to_owned(),
        side.handler.clone(),
        update,
    )
    .await;
    Some(collect_status)
}
