//! `GET` hosted-collect success and failure callbacks.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use tracing::Instrument;
use whish_core::{Currency, ExternalId};
use whish_hosted_collect::callback::reference;

use crate::change::Body;
use crate::record::record_then_answer;
use crate::{Shared, Trigger, answer};

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
    let span = tracing::info_span!(
        "whish.callback.collect",
        external_id = %external_id,
        trigger = ?trigger
    );
    // The callback holds no status: it is recorded as a signal, and a worker reads the
    // payment's status (a callback proves nothing) and records what it says.
    let row = Body::signal(trigger == Trigger::SuccessCallback, &currency, &external_id);
    record_then_answer(&shared, &shared.collect_slots, row, "collect")
        .instrument(span)
        .await
}
