//! The hosted payment page at `collectUrl`: GET shows the form, POST is the payer's attempt.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};

use crate::clock::lock;
use crate::collect::page;
use crate::collect::state::LinkState;
use crate::{ControlError, Shared};

pub(crate) async fn show(State(s): State<Arc<Shared>>, Path(token): Path<String>) -> Response {
    let mut world = lock(&s.world);
    world.collect.expire(s.clock.now());
    match world
        .collect
        .by_token(&token)
        .map(|i| &world.collect.payments[i])
    {
        None => (StatusCode::NOT_FOUND, Html(page::unknown())).into_response(),
        Some(p) if p.state == LinkState::Pending => Html(page::form(p)).into_response(),
        Some(p) => Html(page::closed(p)).into_response(),
    }
}

pub(crate) async fn submit(
    State(s): State<Arc<Shared>>,
    Path(token): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let get = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    match s
        .link_attempt(|c| c.by_token(&token), get("phone"), get("code"))
        .await
    {
        Ok(attempt) => Redirect::to(&attempt.redirect).into_response(),
        Err(ControlError::InvalidState(_)) => show(State(s), Path(token)).await,
        Err(_) => (StatusCode::NOT_FOUND, Html(page::unknown())).into_response(),
    }
}
