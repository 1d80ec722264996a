//! The SDK's metrics for a Prometheus scrape: install `metrics-exporter-prometheus`'s recorder,
//! serve its rendering at `/metrics`, and every call of every client is counted and timed.
//!
//! ```sh
//! cargo run -p whish --example prometheus --features testing,metrics,callbacks
//! ```

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use whish::callbacks::axum;
use whish::prelude::*;
use whish::testing::{Endpoint, Fault, Sandbox};

/// Serve `handle`'s rendering at `/metrics` on a loopback port; its address.
async fn serve_metrics(handle: PrometheusHandle) -> std::io::Result<std::net::SocketAddr> {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let handle = handle.clone();
            async move { handle.render() }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}

/// A few calls against the sandbox: quotes, one resent after a gateway's 502, one refusal.
async fn some_calls(sandbox: &Sandbox) -> Result<(), Box<dyn std::error::Error>> {
    let creds = sandbox.transfer_credentials();
    let client = TransferClient::builder(sandbox.transfer_base_url())
        .username(creds.username.clone())
        .key(SecretString::from(creds.key.clone()))
        .build()?;
    let quote = FeeRequest::new(CountryId::LEBANON, Currency::Usd, "100".parse()?);
    client.fees(&quote).await?;
    sandbox.inject(Endpoint::TransferFees, Fault::Page(502), 1);
    client.fees(&quote).await?; // resent once
    let refused = FeeRequest::new(CountryId::LEBANON, Currency::Usd, "99999999".parse()?);
    let _ = client.fees(&refused).await; // outside the price list: refused
    Ok(())
}

/// A scrape, as Prometheus does it: GET /metrics over HTTP.
async fn scrape(addr: std::net::SocketAddr) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await?;
    Ok(text)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let handle = PrometheusBuilder::new().install_recorder()?;
    let addr = serve_metrics(handle).await?;
    let sandbox = Sandbox::start().await?;
    some_calls(&sandbox).await?;
    println!("{}", scrape(addr).await?);
    sandbox.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_scrape_after_a_few_calls_shows_calls_outcomes_resends_and_durations() {
        let handle = PrometheusBuilder::new()
            .install_recorder()
            .expect("the only recorder of this test binary");
        let addr = serve_metrics(handle).await.expect("serve");
        let sandbox = Sandbox::start().await.expect("sandbox");
        some_calls(&sandbox).await.expect("calls");
        let text = scrape(addr).await.expect("scrape");
        let has = |needle: &str| {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        };
        has(
            r#"whish_calls_total{service="money-transfer",operation="transfer.fees",outcome="accepted"} 2"#,
        );
        has(
            r#"whish_calls_total{service="money-transfer",operation="transfer.fees",outcome="refused"} 1"#,
        );
        has(r#"whish_resends_total{service="money-transfer",operation="transfer.fees"} 1"#);
        has(
            r#"whish_attempt_duration_seconds_count{service="money-transfer",operation="transfer.fees",result="502"} 1"#,
        );
        has("whish_call_duration_seconds_count");
        // No key, amount or phone in any label.
        assert!(!text.contains(&sandbox.transfer_credentials().key));
        sandbox.shutdown().await;
    }
}
