//! How to test your own integration against the in-process sandbox (`whish::testing`, feature
//! `testing` in your `[dev-dependencies]`): your function under test takes the SDK client, the
//! test points the client at the sandbox, injects the faults production will meet and checks
//! what the sandbox recorded.
//!
//! ```sh
//! cargo test -p whish --example testing_your_code --features testing
//! ```

use whish::prelude::*;
use whish::topup::Error;

/// Your code: sell a top-up, and never charge twice. A lost reply or Pending is settled by paying
/// again with the same prepared request (the service replays the first sale); up to `tries`.
///
/// # Errors
///
/// A refusal, or the last unknown outcome when `tries` ran out (pay again later, same request).
pub async fn sell_topup(
    client: &TopupClient,
    provider: &str,
    number: &str,
    option_id: &str,
    tries: u32,
) -> Result<String, Error> {
    let offer = client
        .fetch_options(whish::topup::ProviderId::new(provider), number)
        .await?;
    let Some(option) = offer.option(option_id) else {
        return Err(whish::ValidationError::invalid("optionId", "not on offer").into());
    };
    let prepared = client.prepare_pay(option)?;
    // (Store prepared.external_id() with the sale here, before paying.)
    let mut last = None;
    for _ in 0..tries.max(1) {
        match client.pay(&prepared).await {
            Ok(PayOutcome::Paid(paid)) => {
                let item = paid.sold_items().first().map(|i| i.transaction_id.clone());
                return Ok(item.unwrap_or_default());
            }
            Ok(other) => {
                return Err(whish::ValidationError::invalid("pay", format!("{other:?}")).into());
            }
            Err(e) if e.outcome_unknown() => last = Some(e), // pay again, same request
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("at least one try"))
}

/// The client your code gets, pointed at the sandbox; `retries` of the SDK's own.
///
/// # Errors
///
/// A `SetupError` for a setting the client refuses.
pub fn client(
    sandbox: &whish::testing::Sandbox,
    retries: u32,
) -> Result<TopupClient, whish::SetupError> {
    let creds = sandbox.topup_credentials();
    let mut policy = whish::Policy::default();
    policy.retry.max_retries = retries;
    TopupClient::builder(
        ClientSettings::new(sandbox.topup_base_url())
            .policy(policy)
            .user_agent(
                "MyKiosk/1.0 (https://kiosk.example.com; qa@kiosk.example.com)"
                    .parse()
                    .expect("ua"),
            ),
    )
    .session_id(SecretString::from(creds.session_id.clone()))
    .token(SecretString::from(creds.token.clone()))
    .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sandbox = whish::testing::Sandbox::start().await?;
    let client = client(&sandbox, 0)?;
    let transaction = sell_topup(&client, "du-ae", "971501234567", "DU-1GB", 3).await?;
    println!("sold: {transaction}");
    sandbox.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use whish::testing::{Endpoint, Fault, Sandbox};

    #[tokio::test]
    async fn a_sale_is_made_once() {
        let sandbox = Sandbox::start().await.expect("sandbox");
        let c = client(&sandbox, 0).expect("client");
        let id = sell_topup(&c, "du-ae", "971501234567", "DU-1GB", 1)
            .await
            .expect("sold");
        assert!(!id.is_empty());
        assert_eq!(sandbox.sales().len(), 1);
        sandbox.shutdown().await;
    }

    #[tokio::test]
    async fn a_lost_reply_is_settled_without_a_second_charge() {
        let sandbox = Sandbox::start().await.expect("sandbox");
        // The SDK's own resends off, so that your loop meets the fault.
        let c = client(&sandbox, 0).expect("client");
        // The service applies the pay, then the reply is lost on the way back.
        sandbox.inject(Endpoint::TopupPay, Fault::DropReply, 1);
        let id = sell_topup(&c, "du-ae", "971501234567", "DU-1GB", 3)
            .await
            .expect("sold");
        assert!(!id.is_empty());
        assert_eq!(sandbox.sales().len(), 1, "one sale, not two");
        sandbox.shutdown().await;
    }

    #[tokio::test]
    async fn pending_is_followed_up_not_taken_as_failure() {
        let sandbox = Sandbox::start().await.expect("sandbox");
        let c = client(&sandbox, 0).expect("client");
        sandbox.inject(Endpoint::TopupPay, Fault::Pending, 2);
        let e = sell_topup(&c, "du-ae", "971501234567", "DU-1GB", 2)
            .await
            .expect_err("still pending after two tries");
        assert!(e.is_pending() && !e.nothing_sent());
        // The third try finds the recorded sale.
        let id = sell_topup(&c, "du-ae", "971501234567", "DU-1GB", 1).await;
        assert!(id.is_ok());
        sandbox.shutdown().await;
    }
}
