//! Where the receiver of a cash-collection transfer can collect it: governorates, their
//! districts, and the shops of one district, against the in-process sandbox.
//!
//! ```sh
//! cargo run -p whish --example locations --features testing
//! ```

use whish::prelude::*;
use whish::testing::Sandbox;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sandbox = Sandbox::start().await?;
    let creds = sandbox.transfer_credentials();
    // The lookups use the transfer service's base URL and credentials.
    let client = LocationsClient::builder(sandbox.transfer_base_url())
        .username(creds.username.clone())
        .key(SecretString::from(creds.key.clone()))
        .build()?;

    let governorates = client.governorates().await?;
    for g in &governorates {
        println!("{} ({} districts)", g.label, g.districts.len());
    }
    let district = governorates
        .first()
        .and_then(|g| g.districts.first())
        .ok_or("the sandbox has districts")?;
    let shops = client
        .shops(&ShopFilter::default().district_id(district.id))
        .await?;
    println!("{} shops in {}:", shops.len(), district.label);
    for s in &shops {
        println!("  {}", s.name);
    }
    sandbox.shutdown().await;
    Ok(())
}
