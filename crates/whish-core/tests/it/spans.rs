//! The spans a call leaves: one `whish.call` per call with the OpenTelemetry conventions' fields
//! for an HTTP client call and ours under `whish.`, and one `whish.attempt` child per attempt,
//! so that no field is recorded twice on one span (a resend used to show `attempt=1 attempt=2`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Error, TestCode};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use whish_core::Policy;
use whish_core::runtime::Resend;
use whish_core::runtime::{Method, Request, Transport};
use whish_core::{ClientSettings, ServiceHeaders};
use whish_core::{RetryPolicy, Timeouts};
use whish_testkit::{ScriptedServer, Step};

/// A span as a layer saw it: its name, its parent and every value recorded on each field, in
/// order (a field recorded twice shows two values).
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    parent: Option<u64>,
    fields: BTreeMap<String, Vec<String>>,
}

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<BTreeMap<u64, Seen>>>);

struct Fields<'a>(&'a mut BTreeMap<String, Vec<String>>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .entry(field.name().to_owned())
            .or_default()
            .push(format!("{value:?}").trim_matches('"').to_owned());
    }
}

impl<S> Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.id().into_u64());
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            parent,
            ..Seen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        self.0.lock().expect("lock").insert(id.into_u64(), seen);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(seen) = self.0.lock().expect("lock").get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
}

fn transport(base: &str) -> Transport {
    ClientSettings::new(base)
        .policy(Policy {
            retry: RetryPolicy {
                max_retries: 2,
                initial_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(2),
            },
            timeouts: Timeouts {
                connect: Duration::from_secs(1),
                attempt: Duration::from_secs(2),
            },
        })
        .build_transport(
            "test",
            ServiceHeaders::new().required("username", "username", Some("merchant-7")),
        )
        .expect("transport")
}

fn one(seen: &Seen, field: &str) -> String {
    let values = seen.fields.get(field).cloned().unwrap_or_default();
    assert_eq!(values.len(), 1, "{field} on {}: {values:?}", seen.name);
    values[0].clone()
}

#[test]
fn a_resent_call_is_one_call_span_with_a_child_per_attempt() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            // A gateway's 502, then the answer: a read is resent.
            let server = ScriptedServer::start(vec![
                Step::status(502, "text/html", "<html>bad gateway</html>"),
                Step::json(r#"{"status":true,"code":null,"data":{"ok":1}}"#),
            ])
            .await;
            let t = transport(&server.base);
            let req = Request::new("transfer.status", Method::POST, "/api/woo/status")
                .query("phone", "+96170123456")
                .json(&serde_json::json!({"requestId": 7}))
                .expect("body")
                .idempotency_key("7")
                .resend(Resend::Read);
            let r: Result<_, Error> = t.call::<serde_json::Value, TestCode>(req).await;
            assert!(r.is_ok(), "{r:?}");
        });
    });
    let all = spans.0.lock().expect("lock").clone();
    let calls: Vec<(&u64, &Seen)> = all.iter().filter(|(_, s)| s.name == "whish.call").collect();
    assert_eq!(calls.len(), 1, "{all:#?}");
    let (call_id, call) = calls[0];
    let attempts: Vec<&Seen> = all.values().filter(|s| s.name == "whish.attempt").collect();
    assert_eq!(attempts.len(), 2, "{all:#?}");
    assert!(attempts.iter().all(|a| a.parent == Some(*call_id)));

    // The conventions' fields, each once.
    assert_eq!(one(call, "otel.kind"), "client");
    assert_eq!(one(call, "otel.name"), "transfer.status");
    assert_eq!(one(call, "http.request.method"), "POST");
    assert_eq!(one(call, "server.address"), "127.0.0.1");
    assert!(one(call, "server.port").parse::<u16>().is_ok());
    let url = one(call, "url.full");
    assert!(
        url.ends_with("/api/woo/status"),
        "no query in the URL: {url}"
    );
    assert!(!url.contains("96170123456"), "no personal value: {url}");
    assert_eq!(one(call, "rpc.system"), "whish");
    assert_eq!(one(call, "rpc.method"), "transfer.status");
    assert_eq!(one(call, "http.response.status_code"), "200");
    assert!(!call.fields.contains_key("error.type"), "{call:?}");
    // Ours, under one prefix.
    assert_eq!(one(call, "whish.service"), "test");
    assert_eq!(one(call, "whish.operation"), "transfer.status");
    assert_eq!(one(call, "whish.idempotency_key"), "7");
    assert_eq!(one(call, "whish.attempts"), "2");
    assert_eq!(one(call, "whish.outcome"), "accepted");
    assert!(one(call, "whish.duration_ms").parse::<u64>().is_ok());
    // No field repeats, on any span.
    for s in all.values() {
        for (field, values) in &s.fields {
            assert_eq!(
                values.len(),
                1,
                "{} records {field} twice: {values:?}",
                s.name
            );
        }
    }

    // Each attempt: its resend count, its own answer.
    let mut by_number: Vec<&Seen> = attempts.clone();
    by_number.sort_by_key(|a| one(a, "whish.attempt"));
    assert_eq!(one(by_number[0], "http.request.resend_count"), "0");
    assert_eq!(one(by_number[0], "http.response.status_code"), "502");
    assert_eq!(one(by_number[1], "http.request.resend_count"), "1");
    assert_eq!(one(by_number[1], "http.response.status_code"), "200");
}

#[test]
fn a_failed_call_records_a_low_cardinality_error_type() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let server = ScriptedServer::start(vec![
                Step::json(r#"{"status":false,"code":"transfer.not_exists","data":null}"#),
                Step::json(r#"{"status":false,"code":500,"data":null}"#),
            ])
            .await;
            let t = transport(&server.base);
            for _ in 0..2 {
                let req = Request::new("transfer.send", Method::POST, "/api/woo/send/money")
                    .json(&serde_json::json!({"amount": 1}))
                    .expect("body")
                    .idempotency_key("8")
                    .resend(Resend::Never);
                let r: Result<_, Error> = t.call::<serde_json::Value, TestCode>(req).await;
                assert!(r.is_err());
            }
        });
    });
    let all = spans.0.lock().expect("lock").clone();
    let mut calls: Vec<&Seen> = all.values().filter(|s| s.name == "whish.call").collect();
    calls.sort_by_key(|s| s.parent);
    let types: Vec<String> = calls.iter().map(|c| one(c, "error.type")).collect();
    assert!(types.contains(&"pending".to_owned()), "{types:?}");
    assert!(
        types
            .iter()
            .any(|t| t == "undocumented_code" || t == "transfer.not_exists"),
        "{types:?}"
    );
    for c in &calls {
        assert_eq!(one(c, "otel.status_code"), "ERROR");
    }
    let outcomes: Vec<String> = calls.iter().map(|c| one(c, "whish.outcome")).collect();
    assert!(outcomes.contains(&"pending".to_owned()), "{outcomes:?}");
}
