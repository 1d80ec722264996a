//! An international top-up kiosk against the in-process sandbox: fetch the options a provider
//! offers for a number, pay one with the exact fetched amount, and replay the pay (the one way
//! to read a sale back: the service has no status endpoint).
//!
//! ```sh
//! cargo run -p whish --example topup --features testing
//! ```

use whish::prelude::*;
use whish::testing::Sandbox;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sandbox = Sandbox::start().await?;
    let creds = sandbox.topup_credentials();
    let ua: UserAgent =
        "ExampleKiosk/1.0 (https://kiosk.example.com; dev@kiosk.example.com)".parse()?;
    let client = TopupClient::builder(ClientSettings::new(sandbox.topup_base_url()).user_agent(ua))
        .session_id(SecretString::from(creds.session_id.clone()))
        .token(SecretString::from(creds.token.clone()))
        .build()?;

    let balance = client.balance().await?;
    println!(
        "balance {} USD, void balance {} USD",
        balance.balance, balance.void_balance
    );

    let offer = client
        .fetch_options(whish::topup::ProviderId::new("du-ae"), "971501234567")
        .await?;
    for o in offer.options() {
        let name = o.display_name().unwrap_or("");
        println!("option {}: {name} (pays {})", o.id(), o.amount());
    }
    let option = offer
        .options()
        .first()
        .ok_or("the provider offers something")?;

    // Prepare: the externalId exists now; store it before paying. The amount is the fetched
    // one, exactly: there is nothing to type wrong.
    let prepared = client.prepare_pay(option)?;
    println!("store externalId {} before paying", prepared.external_id());
    match client.pay(&prepared).await {
        Ok(PayOutcome::Paid(paid)) => {
            for item in paid.sold_items() {
                println!("sold: transaction {}", item.transaction_id);
            }
        }
        Ok(PayOutcome::Challenge(c)) => println!("the service asks for a next step: {}", c.code),
        // Pending or a lost reply: pay again with the same prepared request, later.
        Err(e) if e.outcome_unknown() => println!("{e}: {}", e.hint()),
        Err(e) => return Err(e.into()),
        Ok(other) => println!("an outcome this example does not know: {other:?}"),
    }

    // The same prepared pay again: the first sale comes back, nothing is charged twice.
    if let Ok(PayOutcome::Paid(replayed)) = client.pay(&prepared).await {
        println!("replayed: {}", replayed.retrieved);
    }
    sandbox.shutdown().await;
    Ok(())
}
