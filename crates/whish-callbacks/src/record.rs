//! The one way a route answers: record the change in the inbox, then 200; 503 when the record
//! cannot be confirmed, so the service delivers again. No 200 is decided by a check.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use tokio::sync::Semaphore;

use crate::change::Body;
use crate::{Shared, answer};

/// Record `row` and answer. The write runs in a task of its own: a request deadline that fires
/// meanwhile answers 408, and the write still completes and the change is handed on.
pub(crate) async fn record_then_answer(
    shared: &Arc<Shared>,
    slots: &Arc<Semaphore>,
    row: Body,
    kind: &'static str,
) -> Response {
    let key = row.key();
    // A replay of a change recorded lately: no slot, no write.
    if shared.recent.seen(&key) {
        whish_core::metrics::callback(kind, "duplicate");
        return answer(StatusCode::OK, "already recorded\n");
    }
    let Ok(slot) = slots.clone().try_acquire_owned() else {
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy, deliver again later\n",
        );
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task_shared = shared.clone();
    tokio::spawn(async move {
        let recorded = task_shared.inbox.record(&key, &row.encode()).await;
        drop(slot);
        match recorded {
            Ok(held) => {
                task_shared.recent.remember(key);
                let _ = tx.send(Ok(held.is_some()));
                if let Some(held) = held {
                    crate::work::spawn(&task_shared, held);
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e.to_string()));
            }
        }
    });
    match rx.await {
        Ok(Ok(true)) => {
            whish_core::metrics::callback(kind, "received");
            answer(StatusCode::OK, "recorded\n")
        }
        Ok(Ok(false)) => {
            whish_core::metrics::callback(kind, "duplicate");
            answer(StatusCode::OK, "already recorded\n")
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the inbox cannot be written: 503, deliver again");
            answer(
                StatusCode::SERVICE_UNAVAILABLE,
                "cannot record, deliver again\n",
            )
        }
        Err(_) => answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "cannot record, deliver again\n",
        ),
    }
}
