//! A remittance service as it runs in production, against the in-process sandbox: every send
//! recorded in the journal before it leaves, the callback receiver served in an axum app, and
//! each collection confirmed with the status endpoint before it is acted on.
//!
//! ```sh
//! cargo run -p whish --example remittance_service --features testing,journal,callbacks
//! ```

use std::time::Duration;

use whish::callbacks::{HandlerError, Receiver, TransferNotification};
use whish::journal::{Clients, Journal, Recovery};
use whish::prelude::*;
use whish::testing::Sandbox;
use whish::transfer::callback::SignedInput;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Lenient: the sandbox then calls a callback address on this machine (the real service
    // calls public HTTPS addresses only).
    let sandbox = Sandbox::builder().lenient(true).start().await?;
    let creds = sandbox.transfer_credentials();
    let client = TransferClient::builder(
        ClientSettings::new(sandbox.transfer_base_url()).allow_local_callbacks(),
    )
    .username(creds.username.clone())
    .key(SecretString::from(creds.key.clone()))
    .build()?;

    // The journal: a SQLite file here; `postgres://...` for a fleet.
    let dir = std::env::temp_dir().join(format!("whish-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let journal =
        Journal::open(&format!("sqlite:{}", dir.join("journal.sqlite").display())).await?;
    // At start-up, before new work: finish whatever a previous run left open.
    let report = journal
        .recover(&Clients::new().transfer(client.clone()), &Recovery::new())
        .await?;
    println!("recovered {} entries left open", report.changes.len());

    // The receiver. The signature scheme is your operator's; the sandbox signs with its own key.
    let key = sandbox.callback_key().to_vec();
    let verify = move |i: &SignedInput<'_>| {
        whish::testing::callback::verify_signature(&key, i.timestamp, i.body, i.signature)
    };
    let (collected_tx, mut collected) = tokio::sync::mpsc::unbounded_channel();
    let confirm_with = client.clone();
    let receiver = Receiver::builder()
        .transfer(verify, move |n: TransferNotification| {
            let (client, tx) = (confirm_with.clone(), collected_tx.clone());
            async move {
                // A callback is a notification, not proof: the status endpoint decides.
                let state = n.confirm(&client).await?;
                let _ = tx.send((n.request_id, state.status));
                Ok::<(), HandlerError>(())
            }
        })
        .transfer_client(client.clone())
        // Every change recorded before its 200 and handed on, across restarts and processes.
        .inbox(journal.clone())
        .build();
    let app = whish::callbacks::axum::Router::new().merge(receiver.router());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let callback_url = format!(
        "http://{}{}",
        tcp.local_addr()?,
        whish::callbacks::TRANSFER_PATH
    );
    // Served with the limits a public endpoint needs (a head cap and deadline, slow heads
    // shed first at the connection cap), which `axum::serve` does not have.
    let serving = receiver.clone();
    let server = tokio::spawn(async move {
        serving
            .serve_app(tcp, app, whish::callbacks::ServeLimits::new())
            .await
    });

    // A payout: recorded durably, then sent; a crash in between is finished by `recover`.
    let transfers = journal.transfer(client.clone());
    let send = CashCollectionSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        "100".parse()?,
        Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        CashReceiver::new(
            Customer::new(
                FirstName::new("Rami"),
                LastName::new("Haddad"),
                "+96170123456",
            ),
            Identity::new(DateOfBirth::parse("07-03-1990")?),
        ),
        Reason::FamilySupport,
        SourceOfFunds::Salary,
    )
    .callback_url(callback_url);
    let prepared = transfers.client().prepare_send(send)?;
    let request_id = prepared.request_id();
    let sent = transfers.send(&prepared).await?;
    let ltn = sent
        .ltn_number()
        .ok_or("a cash send has an LTN")?
        .to_owned();
    println!("payout {request_id}: LTN {ltn}");

    // The receiver collects at a shop; the sandbox POSTs the signed callback.
    sandbox.collect_cash(&ltn).await?;
    let (id, status) = tokio::time::timeout(Duration::from_secs(10), collected.recv())
        .await?
        .ok_or("the receiver stopped")?;
    println!("payout {id} confirmed by status: {status}");
    assert_eq!(id, request_id);
    assert_eq!(status, TransferStatus::Received);

    receiver.shutdown().await;
    server.abort();
    sandbox.shutdown().await;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
