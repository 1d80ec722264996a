//! The control API over HTTP, under `/_sandbox/`: typed JSON bodies in, JSON out, and one error
//! type that is its own response (`{"error": "..."}` with 400, 404 or 409).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rust_decimal::Decimal;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{
    CashCollected, ControlError, LinkAttempt, PaymentRecord, SaleRecord, TransferRecord, payments,
    sales, transfers,
};
use crate::Shared;
use crate::clock::lock;
use crate::endpoint::Endpoint;
use crate::fault::Fault;
use crate::journal::ReceivedRequest;

pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/transfer/collect", post(collect_cash))
        .route("/transfer/collect-share", post(collect_share))
        .route("/collect/pay", post(pay))
        .route("/collect/fail", post(fail))
        .route("/collect/expire", post(expire))
        .route("/balances", post(balance))
        .route("/faults", post(fault))
        .route("/requests", get(requests))
        .route("/callbacks", get(callbacks))
        .route("/state", get(state))
        .route("/clock/advance", post(advance))
        .route("/reset", post(reset))
}

/// The control routes behind [`same_machine_json_only`].
pub(crate) fn guarded(shared: Arc<Shared>) -> Router<Arc<Shared>> {
    routes().route_layer(axum::middleware::from_fn_with_state(
        shared,
        same_machine_json_only,
    ))
}

/// The control API has no credentials, so it answers only what a page in a browser cannot send:
/// a `Host` that names a loopback address (a DNS-rebinding page sends its own name), and, for a
/// POST, a JSON content type (a cross-site "simple" POST is `text/plain` or a form).
async fn same_machine_json_only(
    State(shared): State<Arc<Shared>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let host = request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let bound = shared.settings.bind;
    let named = name.trim_start_matches('[').trim_end_matches(']');
    let loopback = name.eq_ignore_ascii_case("localhost")
        || named
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || (ip == bound && !bound.is_unspecified()));
    if !loopback {
        return ControlError::Forbidden(format!(
            "the control API answers only a loopback Host, not `{}`",
            host.chars().take(80).collect::<String>()
        ))
        .into_response();
    }
    if request.method() == axum::http::Method::POST {
        let json = request
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        if !json {
            return ControlError::BadRequest(
                "the control API takes `Content-Type: application/json`".into(),
            )
            .into_response();
        }
    }
    next.run(request).await
}

impl IntoResponse for ControlError {
    fn into_response(self) -> Response {
        let status = match self {
            ControlError::NotFound(_) => StatusCode::NOT_FOUND,
            ControlError::InvalidState(_) => StatusCode::CONFLICT,
            ControlError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ControlError::Forbidden(_) => StatusCode::FORBIDDEN,
        };
        (status, Json(json!({"error": self.to_string()}))).into_response()
    }
}

/// A JSON body of type `T`; a missing field, a wrong type or a body that is not JSON (including
/// a `text/plain` one) is a [`ControlError::BadRequest`].
struct Body<T>(T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ControlError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Body(v)),
            Err(rejection) => Err(ControlError::BadRequest(rejection_text(&rejection))),
        }
    }
}

fn rejection_text(r: &JsonRejection) -> String {
    let text = r.body_text();
    // serde's message names the missing or wrong field; keep it short.
    text.chars().take(200).collect()
}

type Answer<T> = Result<Json<T>, ControlError>;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ByLtn {
    ltn_number: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ByExternalId {
    external_id: String,
}

#[derive(Deserialize)]
struct ShareBody {
    share: f64,
}

#[derive(Deserialize)]
struct BalanceBody {
    service: String,
    currency: String,
    amount: Decimal,
}

#[derive(Deserialize)]
struct FaultBody {
    endpoint: String,
    fault: String,
    #[serde(default = "one")]
    count: u64,
}

fn one() -> u64 {
    1
}

#[derive(Deserialize)]
struct AdvanceBody {
    #[serde(default)]
    seconds: u64,
}

async fn collect_cash(State(s): State<Arc<Shared>>, Body(b): Body<ByLtn>) -> Answer<CashCollected> {
    s.collect_cash(&b.ltn_number).await.map(Json)
}

async fn collect_share(State(s): State<Arc<Shared>>, Body(b): Body<ShareBody>) -> Answer<Value> {
    if !(0.0..=1.0).contains(&b.share) {
        return Err(ControlError::BadRequest(
            "share must be between 0 and 1".into(),
        ));
    }
    let collected = s.collect_share(b.share).await;
    Ok(Json(json!({"collected": collected})))
}

async fn pay(State(s): State<Arc<Shared>>, Body(b): Body<ByExternalId>) -> Answer<LinkAttempt> {
    s.payer_attempt(&b.external_id, true).await.map(Json)
}

async fn fail(State(s): State<Arc<Shared>>, Body(b): Body<ByExternalId>) -> Answer<LinkAttempt> {
    s.payer_attempt(&b.external_id, false).await.map(Json)
}

async fn expire(State(s): State<Arc<Shared>>, Body(b): Body<ByExternalId>) -> Answer<Value> {
    s.expire_link(&b.external_id)?;
    Ok(Json(json!({"collectStatus": "failed"})))
}

async fn balance(State(s): State<Arc<Shared>>, Body(b): Body<BalanceBody>) -> Answer<Value> {
    s.set_balance(&b.service, &b.currency, b.amount)?;
    Ok(Json(json!({"ok": true})))
}

async fn fault(State(s): State<Arc<Shared>>, Body(b): Body<FaultBody>) -> Answer<Value> {
    let endpoint: Endpoint = b.endpoint.parse().map_err(ControlError::BadRequest)?;
    let fault: Fault = b.fault.parse().map_err(ControlError::BadRequest)?;
    if b.count > 0 {
        lock(&s.faults)
            .entry(endpoint)
            .or_default()
            .push_back((fault, b.count));
    }
    Ok(Json(
        json!({"endpoint": endpoint.as_str(), "fault": fault.to_string(), "count": b.count}),
    ))
}

async fn requests(State(s): State<Arc<Shared>>) -> Json<Vec<ReceivedRequest>> {
    Json(lock(&s.journal).list())
}

async fn callbacks(State(s): State<Arc<Shared>>) -> Json<Value> {
    Json(json!(lock(&s.deliveries).clone()))
}

#[derive(serde::Serialize)]
struct StateView {
    transfers: Vec<TransferRecord>,
    payments: Vec<PaymentRecord>,
    sales: Vec<SaleRecord>,
}

async fn state(State(s): State<Arc<Shared>>) -> Json<StateView> {
    let mut world = lock(&s.world);
    world.collect.expire(s.clock.now());
    Json(StateView {
        transfers: transfers(&world),
        payments: payments(&world),
        sales: sales(&world),
    })
}

async fn advance(State(s): State<Arc<Shared>>, Body(b): Body<AdvanceBody>) -> Answer<Value> {
    s.clock
        .advance(Duration::from_secs(b.seconds))
        .map_err(ControlError::BadRequest)?;
    Ok(Json(json!({"advancedSeconds": b.seconds})))
}

async fn reset(State(s): State<Arc<Shared>>) -> Json<Value> {
    s.reset();
    Json(json!({"ok": true}))
}
