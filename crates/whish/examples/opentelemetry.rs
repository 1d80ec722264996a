//! The SDK's spans exported through `tracing-opentelemetry`: install its layer with your
//! tracer, and every call is a client span named after its operation, with the HTTP client
//! conventions' attributes and a child span per attempt. Here the exporter is in memory (yours
//! is OTLP, Jaeger, ...), and the test reads what was exported.
//!
//! ```sh
//! cargo run -p whish --example opentelemetry --features testing
//! ```

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;
use whish::prelude::*;
use whish::testing::{Endpoint, Fault, Sandbox};

/// A quote resent once after a gateway's 502, with the spans exported to `exporter`.
async fn traced_quote(sandbox: &Sandbox, exporter: &InMemorySpanExporter) -> Vec<SpanData> {
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("my-service"));
    let subscriber = tracing_subscriber::registry().with(layer);
    let _guard = tracing::subscriber::set_default(subscriber);

    let creds = sandbox.transfer_credentials();
    let client = TransferClient::builder(sandbox.transfer_base_url())
        .username(creds.username.clone())
        .key(SecretString::from(creds.key.clone()))
        .build()
        .expect("client");
    sandbox.inject(Endpoint::TransferFees, Fault::Page(502), 1);
    let quote = FeeRequest::new(
        CountryId::LEBANON,
        Currency::Usd,
        "100".parse().expect("amount"),
    );
    client.fees(&quote).await.expect("quoted after one resend");
    let _ = provider.force_flush();
    exporter.get_finished_spans().expect("spans")
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let sandbox = Sandbox::start().await.expect("sandbox");
    let exporter = InMemorySpanExporter::default();
    for span in traced_quote(&sandbox, &exporter).await {
        let outcome = attribute(&span, "whish.outcome").unwrap_or_default();
        println!("{} {:?} {outcome}", span.name, span.span_kind);
        for kv in &span.attributes {
            println!("    {} = {}", kv.key, kv.value);
        }
    }
    sandbox.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::SpanKind;

    #[tokio::test(flavor = "current_thread")]
    async fn a_call_is_one_client_span_with_a_child_per_attempt() {
        let sandbox = Sandbox::start().await.expect("sandbox");
        let exporter = InMemorySpanExporter::default();
        let spans = traced_quote(&sandbox, &exporter).await;
        let call = spans
            .iter()
            .find(|s| attribute(s, "whish.operation").is_some())
            .expect("the call span");
        assert_eq!(call.name, "transfer.fees");
        assert_eq!(call.span_kind, SpanKind::Client);
        assert_eq!(
            attribute(call, "http.request.method").as_deref(),
            Some("POST")
        );
        assert_eq!(
            attribute(call, "server.address").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            attribute(call, "http.response.status_code").as_deref(),
            Some("200")
        );
        assert_eq!(
            attribute(call, "whish.outcome").as_deref(),
            Some("accepted")
        );
        assert_eq!(attribute(call, "whish.attempts").as_deref(), Some("2"));
        let attempts: Vec<&SpanData> = spans
            .iter()
            .filter(|s| attribute(s, "whish.attempt").is_some())
            .collect();
        assert_eq!(attempts.len(), 2);
        for a in &attempts {
            assert_eq!(a.parent_span_id, call.span_context.span_id());
            assert_eq!(a.span_kind, SpanKind::Client);
        }
        let statuses: Vec<Option<String>> = attempts
            .iter()
            .map(|a| attribute(a, "http.response.status_code"))
            .collect();
        assert!(statuses.contains(&Some("502".to_owned())), "{statuses:?}");
        // Nothing secret: the key is in no attribute of any span.
        let key = &sandbox.transfer_credentials().key;
        for s in &spans {
            assert!(
                s.attributes
                    .iter()
                    .all(|kv| !kv.value.to_string().contains(key.as_str()))
            );
        }
        sandbox.shutdown().await;
    }
}
