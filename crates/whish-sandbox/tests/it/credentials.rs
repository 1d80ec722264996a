//! Two accounts on one connection pool against the sandbox, and a key rotated under a running
//! client: the next call sends the new key, with no new client.

use std::sync::{Arc, Mutex};

use crate::support::*;
use whish::core::credentials::FromFn;
use whish::prelude::*;
use whish_sandbox::Sandbox;

#[tokio::test]
async fn two_accounts_share_a_pool_and_each_is_its_own_account() {
    let sb = Sandbox::start().await.expect("sandbox");
    let issued = transfer(&sb, 0);
    // An account the sandbox did not issue, on the same pool.
    let other = issued
        .with_credentials("another-merchant", SecretString::from("another-key"))
        .expect("client");
    assert!(issued.sending_countries().await.is_ok());
    let e = other
        .sending_countries()
        .await
        .expect_err("not this sandbox's account");
    assert_eq!(
        e.code().map(|c| c.as_str().to_owned()).as_deref(),
        Some("api.account.invalid_request"),
        "{e:?}"
    );
    // And the first account is unchanged by the second's existence.
    assert!(issued.sending_countries().await.is_ok());
    sb.shutdown().await;
}

#[tokio::test]
async fn a_rotated_key_takes_effect_on_the_next_call() {
    let sb = Sandbox::start().await.expect("sandbox");
    let creds = sb.transfer_credentials().clone();
    let current = Arc::new(Mutex::new("an-old-key".to_owned()));
    let read = current.clone();
    let client = TransferClient::builder(sb.transfer_base_url())
        .username(creds.username.clone())
        .key_from(FromFn(move || {
            Ok(SecretString::from(read.lock().expect("lock").clone()))
        }))
        .build()
        .expect("client");
    assert!(client.sending_countries().await.is_err(), "the old key");
    *current.lock().expect("lock") = creds.key.clone();
    assert!(
        client.sending_countries().await.is_ok(),
        "the new key, same client"
    );
    sb.shutdown().await;
}
