//! `POST` transfer collection callback.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use tracing::Instrument;
use whish_core::EpochMillis;
use whish_money_transfer::callback::CallbackError;

use crate::{Shared, Source, TransferNotification, answer, run_claimed};

pub(crate) async fn route(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(side) = &shared.transfer else {
        return answer(StatusCode::NOT_FOUND, "no transfer callbacks here\n");
    };
    let now = EpochMillis(time_now_ms().unwrap_or(i64::MAX));
    let cb = match side.receiver.receive(&headers, &body, now) {
        Ok(cb) => cb,
        Err(e) => {
            // Nothing is handed on. A missing or wrong signature (or a timestamp outside the
            // window you asked for) is 401; a body that is not the documented one is 400.
            let status = match e {
                CallbackError::BadBody { .. } | CallbackError::BadTimestamp => {
                    StatusCode::BAD_REQUEST
                }
                CallbackError::MissingHeader("timestamp") => StatusCode::BAD_REQUEST,
                _ => StatusCode::UNAUTHORIZED,
            };
            tracing::info!(error = %e, "transfer callback refused");
            whish_core::metrics::callback("transfer", "rejected");
            return answer(status, "refused\n");
        }
    };
    let span = tracing::info_span!(
        "whish.callback.transfer",
        transfer_id = %cb.transfer_id,
        status = %cb.status
    );
    accept(shared.clone(), cb).instrument(span).await
}

async fn accept(
    shared: Arc<Shared>,
    cb: whish_money_transfer::callback::ReceivedCallback,
) -> Response {
    let Some(side) = &shared.transfer else {
        return answer(StatusCode::NOT_FOUND, "no transfer callbacks here\n");
    };
    let subject = crate::notifications::transfer_subject(&cb.transfer_id);
    let status = cb.status.as_str().to_owned();
    // The slot first: a callback the receiver cannot run now is not claimed, and 503 asks the
    // sender to deliver it again.
    let Some(slot) = shared.tasks.slot() else {
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy, deliver again later\n",
        );
    };
    match shared.notifications.claim(&subject, &status).await {
        Ok(true) => whish_core::metrics::callback("transfer", "received"),
        Ok(false) => {
            whish_core::metrics::callback("transfer", "duplicate");
            return answer(StatusCode::OK, "already recorded\n");
        }
        Err(e) => {
            tracing::warn!(error = %e, "the notification record cannot be written");
            return answer(
                StatusCode::SERVICE_UNAVAILABLE,
                "cannot record, deliver again\n",
            );
        }
    }
    // Recorded (durably, when the journal is the record): answer now, run the handler in the
    // background.
    let notification = TransferNotification {
        transfer_id: cb.transfer_id.clone(),
        request_id: cb.external_id,
        status: cb.status.clone(),
        source: Source::Callback,
    };
    let handler = side.handler.clone();
    let limit = shared.handler_timeout + std::time::Duration::from_secs(1);
    let task_shared = shared.clone();
    shared.tasks.spawn(
        slot,
        limit,
        async move {
            run_claimed(&task_shared, subject, status, handler, notification).await;
        }
        .in_current_span(),
    );
    answer(StatusCode::OK, "recorded\n")
}

fn time_now_ms() -> Option<i64> {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    i64::try_from(d.as_millis()).ok()
}
