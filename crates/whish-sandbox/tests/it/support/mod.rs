//! Shared setup of the end-to-end tests: SDK clients pointed at a sandbox, and a loopback
//! listener that records the callbacks it receives.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri};
use tokio::sync::Notify;
use whish::collect::CollectClient;
use whish::locations::LocationsClient;
use whish::topup::TopupClient;
use whish::transfer::TransferClient;
use whish::{Policy, RetryPolicy, SecretString, Timeouts, UserAgent};
use whish_sandbox::Sandbox;

/// The retry policy of the tests: short timeouts, `retries` resends.
pub fn policy(retries: u32) -> Policy {
    Policy {
        retry: RetryPolicy {
            max_retries: retries,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(40),
        },
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            attempt: Duration::from_millis(1500),
        },
    }
}

pub fn ua() -> UserAgent {
    "SandboxTests/1.0 (https://shop.example.com; dev@shop.example.com)"
        .parse()
        .expect("user agent")
}

pub fn transfer(sb: &Sandbox, retries: u32) -> TransferClient {
    let c = sb.transfer_credentials();
    TransferClient::builder(
        whish::ClientSettings::new(sb.transfer_base_url())
            .allow_local_callbacks()
            .policy(policy(retries)),
    )
    .username(c.username.clone())
    .key(SecretString::from(c.key.clone()))
    .build()
    .expect("transfer client")
}

pub fn locations(sb: &Sandbox) -> LocationsClient {
    let c = sb.transfer_credentials();
    LocationsClient::builder(whish::ClientSettings::new(sb.transfer_base_url()).policy(policy(0)))
        .username(c.username.clone())
        .key(SecretString::from(c.key.clone()))
        .build()
        .expect("locations client")
}

pub fn collect(sb: &Sandbox, retries: u32) -> CollectClient {
    let c = sb.collect_credentials();
    CollectClient::builder(
        whish::ClientSettings::new(sb.collect_base_url())
            .allow_local_callbacks()
            .policy(policy(retries))
            .user_agent(ua()),
    )
    .channel(c.channel.clone())
    .secret(SecretString::from(c.secret.clone()))
    .website_url(c.website_url.clone())
    .build()
    .expect("collect client")
}

pub fn topup(sb: &Sandbox, retries: u32) -> TopupClient {
    let c = sb.topup_credentials();
    TopupClient::builder(
        whish::ClientSettings::new(sb.topup_base_url())
            .policy(policy(retries))
            .user_agent(ua()),
    )
    .session_id(SecretString::from(c.session_id.clone()))
    .token(SecretString::from(c.token.clone()))
    .build()
    .expect("topup client")
}

/// One request the listener received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A loopback HTTP listener that answers 200 to everything and records it.
#[derive(Clone)]
pub struct Listener {
    pub base: String,
    received: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
}

impl Listener {
    pub async fn start() -> Listener {
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let arrived = Arc::new(Notify::new());
        let (r, a) = (received.clone(), arrived.clone());
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (r, a) = (r.clone(), a.clone());
                async move {
                    r.lock().expect("lock").push(Received {
                        method,
                        uri,
                        headers,
                        body,
                    });
                    a.notify_waiters();
                    "ok"
                }
            },
        );
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", tcp.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(tcp, app).await;
        });
        Listener {
            base,
            received,
            arrived,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}
