//! Money transfer into Lebanon, end to end, against the in-process sandbox: quote, send by cash
//! collection, the receiver collects, confirm by status; then a second send cancelled before
//! it is collected.
//!
//! ```sh
//! cargo run -p whish --example transfer --features testing
//! ```
//!
//! Against the real service, build the client with your base URL and credentials instead of the
//! sandbox's (see `client` below); everything else is the same.

use whish::prelude::*;
use whish::testing::Sandbox;
use whish::transfer::StatusQuery;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sandbox = Sandbox::start().await?;
    let creds = sandbox.transfer_credentials();
    // In production: TransferClient::builder("https://<your transfer base URL>") and the
    // username and key the operator gave you (keep the key in your secrets store).
    let client = TransferClient::builder(sandbox.transfer_base_url())
        .username(creds.username.clone())
        .key(SecretString::from(creds.key.clone()))
        .build()?;

    // 1. Quote first, and send the amount and currency that were quoted.
    let amount: Amount = "100".parse()?;
    let quote = client
        .fees(&FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount))
        .await?;
    println!(
        "quote: fee {} USD, total {} USD",
        quote.fees, quote.total_amount
    );

    // 2. Prepare: checked locally, nothing sent. Store the Request-id before sending.
    let prepared = client.prepare_send(cash_send(amount)?)?;
    println!(
        "store Request-id {} with the order, then send",
        prepared.request_id()
    );

    // 3. Send. Ok only when the service accepted; Pending and unknown outcomes are errors that
    //    say so (`e.is_pending()`, `e.outcome_unknown()`), never a failure to retry with a new id.
    let sent = match client.send(&prepared).await {
        Ok(sent) => sent,
        Err(e) if e.outcome_unknown() => {
            eprintln!("{e}: {}", e.hint());
            return Err(e.into());
        }
        Err(e) => return Err(e.into()), // refused: final
    };
    let ltn = sent
        .ltn_number()
        .ok_or("a cash send has an LTN")?
        .to_owned();
    println!("sent: the receiver collects with LTN {ltn}");

    // 4. In the sandbox, the receiver walks into a shop.
    sandbox.collect_cash(&ltn).await?;

    // 5. Confirm with the status endpoint: it is authoritative (a callback is only a hint).
    let status = client
        .status(&StatusQuery::RequestId(prepared.request_id()))
        .await?;
    println!("status by Request-id: {}", status.status);
    assert_eq!(status.status, TransferStatus::Received);

    // 6. A second transfer, cancelled while still uncollected.
    let second = client.prepare_send(cash_send(amount)?)?;
    let sent = client.send(&second).await?;
    let cancel =
        client.prepare_cancel(sent.ltn_number().ok_or("an LTN")?, Some("customer asked"))?;
    let cancelled = client.cancel(&cancel).await?;
    println!("cancelled: {:?}", cancelled.status);

    sandbox.shutdown().await;
    Ok(())
}

fn cash_send(amount: Amount) -> Result<CashCollectionSend, Box<dyn std::error::Error>> {
    let sender = Sender::new(Customer::new(
        FirstName::new("John"),
        LastName::new("Smith"),
        "+14155550100",
    ));
    let receiver = CashReceiver::new(
        Customer::new(
            FirstName::new("Rami"),
            LastName::new("Haddad"),
            "+96170123456",
        ),
        Identity::new(DateOfBirth::parse("07-03-1990")?),
    );
    Ok(CashCollectionSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        amount,
        sender,
        receiver,
        Reason::FamilySupport,
        SourceOfFunds::Salary,
    ))
}
