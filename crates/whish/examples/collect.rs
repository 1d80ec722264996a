//! A hosted-collect checkout against the in-process sandbox: create a payment, send the payer
//! to its hosted page (here the sandbox's test payer pays it), confirm with the status endpoint
//! before fulfilling, then refund.
//!
//! ```sh
//! cargo run -p whish --example collect --features testing
//! ```

use whish::prelude::*;
use whish::testing::Sandbox;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Lenient: the callback addresses below are on this machine, which the real service (and a
    // strict sandbox) refuses with HTTP 403. In production they are your public HTTPS endpoints.
    let sandbox = Sandbox::builder().lenient(true).start().await?;
    let creds = sandbox.collect_credentials();
    let ua: UserAgent =
        "ExampleShop/1.0 (https://shop.example.com; dev@shop.example.com)".parse()?;
    let client = CollectClient::builder(
        ClientSettings::new(sandbox.collect_base_url())
            .user_agent(ua)
            // Only with a loopback base URL: lets local callback addresses through the checks.
            .allow_local_callbacks(),
    )
    .channel(creds.channel.clone())
    .secret(SecretString::from(creds.secret.clone()))
    .website_url(creds.website_url.clone())
    .build()?;

    let order = "A-1017";
    // Nothing listens on this port: the callbacks example (remittance_service) serves them.
    let urls = CollectUrls::new(
        SuccessCallbackUrl::new("http://127.0.0.1:9/whish/collect/success")?
            .with_reference("order", order),
        FailureCallbackUrl::new("http://127.0.0.1:9/whish/collect/failure")?
            .with_reference("order", order),
        SuccessRedirectUrl::new("https://shop.example.com/thanks")?,
        FailureRedirectUrl::new("https://shop.example.com/retry")?,
    );
    let payment = NewPayment::new("25.50".parse()?, Currency::Usd, urls).invoice("Order A-1017");

    // Prepare: the externalId exists now; store it with the order before creating.
    let prepared = client.prepare_payment(payment)?;
    let external_id = prepared.external_id().clone();
    let created = client.create_payment(&prepared).await?;
    println!("send the payer to {}", created.collect_url);

    // The payer pays on the hosted page (in the sandbox, its test payer does).
    sandbox.pay_link(external_id.as_str()).await?;

    // Never fulfil on a callback or a redirect: ask the status endpoint.
    let status = client.status(Currency::Usd, &external_id).await?;
    println!("order {order}: {}", status.collect_status);
    assert!(status.collect_status.is_paid());

    // Refund only after status said success; a resend never refunds twice.
    let refund = client.prepare_refund(Currency::Usd, &external_id, Some("out of stock"))?;
    let refunded = client.refund(&refund).await?;
    println!(
        "refunded {} (replayed: {})",
        refunded.external_id, refunded.retrieved
    );

    sandbox.shutdown().await;
    Ok(())
}
