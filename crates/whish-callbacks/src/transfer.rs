//! `POST` transfer collection callback.

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::Request;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;
use whish_core::EpochMillis;
use whish_money_transfer::callback::CallbackError;

use crate::change::Body;
use crate::record::record_then_answer;
use crate::serve::BodyRead;
use crate::{Shared, Source, answer};

pub(crate) async fn route(
    State(shared): State<Arc<Shared>>,
    read: Option<Extension<BodyRead>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(Extension(read)) = read {
        read.done();
    }
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
    let row = Body::transfer(
        &cb.transfer_id,
        cb.external_id,
        &cb.status,
        Source::Callback,
    );
    record_then_answer(&shared, &shared.transfer_slots, row, "transfer").await
}

fn time_now_ms() -> Option<i64> {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    i64::try_from(d.as_millis()).ok()
}

/// Before the body is read: a transfer callback must carry a `timestamp` inside the window and a
/// `signature`; one that does not is refused without reading a byte of its body.
pub(crate) async fn check_head(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let Some(ts) = headers
        .get("timestamp")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
    else {
        whish_core::metrics::callback("transfer", "rejected");
        return answer(StatusCode::BAD_REQUEST, "refused\n");
    };
    let now = time_now_ms().unwrap_or(i64::MAX);
    let off = u128::from(now.abs_diff(ts));
    if !headers.contains_key("signature") || off > shared.tolerance.as_millis() {
        whish_core::metrics::callback("transfer", "rejected");
        return answer(StatusCode::UNAUTHORIZED, "refused\n");
    }
    next.run(request).await
}
