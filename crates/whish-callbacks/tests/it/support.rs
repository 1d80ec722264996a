//! Helpers of the receiver's tests: requests without a network, clients pointed at stubs, an
//! inbox that fails on demand, waiting for what happens in the background.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;
use whish_callbacks::{BoxFuture, ChangeKind, ChangeState, Held, InMemory, Inbox, StoreError};
use whish_core::{ClientSettings, SecretString};
use whish_hosted_collect::CollectClient;

/// An inbox wrapped around the in-memory one whose writes fail while `down`, whose records
/// take `slow_ms` first, whose renewals fail while `renew_down`, and whose next
/// `mark_failures` marks fail.
#[derive(Clone, Default)]
pub struct Flaky {
    pub inner: InMemory,
    pub down: Arc<AtomicBool>,
    pub slow_ms: Arc<AtomicU64>,
    pub renew_down: Arc<AtomicBool>,
    pub mark_failures: Arc<AtomicU64>,
}

impl Flaky {
    /// Around an in-memory inbox with this lease.
    pub fn with_lease(lease: Duration) -> Flaky {
        Flaky {
            inner: InMemory::new(lease),
            ..Flaky::default()
        }
    }
}

impl Flaky {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            Err("the disk is full".into())
        } else {
            Ok(())
        }
    }
}

impl Inbox for Flaky {
    fn record<'a>(
        &'a self,
        key: &'a str,
        body: &'a [u8],
    ) -> BoxFuture<'a, Result<Option<Held>, StoreError>> {
        Box::pin(async move {
            // Down is read when the write starts: a write begun while up is only slow.
            self.check()?;
            let slow = self.slow_ms.load(Ordering::SeqCst);
            if slow > 0 {
                tokio::time::sleep(Duration::from_millis(slow)).await;
            }
            self.inner.record(key, body).await
        })
    }
    fn take(&self, kind: ChangeKind, limit: u32) -> BoxFuture<'_, Result<Vec<Held>, StoreError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.take(kind, limit).await
        })
    }
    fn renew<'a>(&'a self, held: &'a Held) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            self.check()?;
            if self.renew_down.load(Ordering::SeqCst) {
                return Err("the database is locked".into());
            }
            self.inner.renew(held).await
        })
    }
    fn handed_on<'a>(&'a self, held: &'a Held) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            self.check()?;
            if self
                .mark_failures
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                return Err("the database is locked".into());
            }
            self.inner.handed_on(held).await
        })
    }
    fn failed<'a>(
        &'a self,
        held: &'a Held,
        error: &'a str,
        backoff: Duration,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.failed(held, error, backoff, deadline).await
        })
    }
    fn state<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<ChangeState>, StoreError>> {
        self.inner.state(key)
    }
    fn lease(&self) -> Duration {
        self.inner.lease()
    }
}

/// A collect client whose status endpoint is `base` (a closed port by default).
pub fn collect_client_at(base: &str) -> CollectClient {
    CollectClient::builder(
        ClientSettings::new(base).user_agent(
            "ReceiverTests/1.0 (https://shop.example.com; dev@shop.example.com)"
                .parse()
                .expect("ua"),
        ),
    )
    .channel("c")
    .secret(SecretString::from("s"))
    .website_url("https://shop.example.com")
    .build()
    .expect("client")
}

/// A transfer callback body.
pub fn transfer_body(transfer_id: &str, external_id: i64) -> String {
    format!(
        r#"{{"date":"2026-11-23 10:00:00","externalId":{external_id},"transferId":"{transfer_id}","status":"RECEIVED"}}"#
    )
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

/// POST a transfer callback `body`, signed now (the tests' receivers accept any signature).
pub async fn post_signed(router: &axum::Router, body: &str) -> StatusCode {
    let now = now_ms();
    router
        .clone()
        .oneshot(
            Request::post(whish_callbacks::TRANSFER_PATH)
                .header("content-type", "application/json")
                .header("timestamp", now.to_string())
                .header(
                    "signature",
                    whish_sandbox::callback::sign(b"key", now, body.as_bytes()),
                )
                .body(Body::from(body.to_owned()))
                .expect("request"),
        )
        .await
        .expect("answer")
        .status()
}

pub async fn get(router: &axum::Router, uri: &str) -> StatusCode {
    router
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).expect("request"))
        .await
        .expect("answer")
        .status()
}

/// Wait up to 10 s for `check`.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never: {what}");
}
