//! The reply envelope every service answers with: HTTP 200, `status`, `code`, `data`, `dialog`.

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A reply: the envelope body, kept as JSON so a recorded reply can be replayed verbatim.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply(pub Value);

impl Reply {
    /// Success with `data`.
    pub(crate) fn ok(data: Value) -> Reply {
        Reply(json!({
            "status": true, "code": null, "data": data, "dialog": null, "extra": null, "actions": null
        }))
    }

    /// A failure code with its dialog.
    pub(crate) fn fail(code: &str, message: &str) -> Reply {
        Reply(json!({
            "status": false, "code": code, "data": null,
            "dialog": {"title": "Error", "message": message}, "extra": null, "actions": null
        }))
    }

    /// Pending: `code` 500, outcome unknown.
    /// Pending as the transfer service writes it: the number 500 ("String (or the value 500)").
    pub(crate) fn pending() -> Reply {
        Reply(json!({
            "status": false, "code": 500, "data": null,
            "dialog": {"title": "Pending", "message": "The operation is being processed; its outcome is not known yet."},
            "extra": null, "actions": null
        }))
    }

    /// Pending as a service whose `code` is typed String writes it: `"500"` (collect, top-up).
    pub(crate) fn pending_text() -> Reply {
        let mut r = Reply::pending();
        if let Some(o) = r.0.as_object_mut() {
            o.insert("code".into(), json!("500"));
        }
        r
    }

    /// The failure code, when this reply has a string one.
    pub(crate) fn code(&self) -> Option<&str> {
        self.0.get("code").and_then(serde_json::Value::as_str)
    }

    /// Add `retrieved` (collect and top-up idempotent operations).
    pub(crate) fn retrieved(mut self, retrieved: bool) -> Reply {
        if let Some(o) = self.0.as_object_mut() {
            o.insert("retrieved".into(), Value::Bool(retrieved));
        }
        self
    }

    /// Set the dialog (a success that carries an informational message).
    pub(crate) fn dialog(mut self, title: &str, message: &str) -> Reply {
        if let Some(o) = self.0.as_object_mut() {
            o.insert("dialog".into(), json!({"title": title, "message": message}));
        }
        self
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        Json(self.0).into_response()
    }
}
