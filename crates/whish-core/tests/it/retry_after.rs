//! Resends that listen: a `Retry-After` on a 429 or 503 is waited for (within the policy's
//! `max_backoff`, else not resent), and a client's resends are paid from one budget, so a fleet
//! does not multiply an outage.

use std::time::{Duration, Instant};

use crate::support::{Error, TestCode};
use whish_core::Policy;
use whish_core::runtime::Resend;
use whish_core::runtime::{Method, Request, Transport};
use whish_core::{ClientSettings, ServiceHeaders};
use whish_core::{RetryBudget, RetryPolicy, Timeouts};
use whish_testkit::{ScriptedServer, Step};

fn transport(base: &str, retries: u32, max_backoff: Duration, budget: RetryBudget) -> Transport {
    ClientSettings::new(base)
        .policy(Policy {
            retry: RetryPolicy {
                max_retries: retries,
                initial_backoff: Duration::from_millis(1),
                max_backoff,
            },
            timeouts: Timeouts {
                connect: Duration::from_secs(1),
                attempt: Duration::from_secs(5),
            },
        })
        .retry_budget(budget)
        .build_transport(
            "test",
            ServiceHeaders::new().required("username", "username", Some("merchant-7")),
        )
        .expect("transport")
}

fn read() -> Request {
    Request::new("transfer.countries", Method::POST, "/api/woo/countries").resend(Resend::Read)
}

fn busy(retry_after: &str) -> Step {
    Step::Header(
        "Retry-After",
        retry_after.to_owned(),
        Box::new(Step::status(503, "text/html", "<html>busy</html>")),
    )
}

const OK: &str = r#"{"status":true,"code":null,"data":[]}"#;

#[tokio::test]
async fn a_retry_after_within_the_policy_is_waited_for() {
    let server = ScriptedServer::start(vec![busy("1"), Step::json(OK)]).await;
    let t = transport(
        &server.base,
        2,
        Duration::from_secs(5),
        RetryBudget::default(),
    );
    let started = Instant::now();
    let r: Result<_, Error> = t.call::<serde_json::Value, TestCode>(read()).await;
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(server.hits(), 2);
    // The backoff alone is a millisecond: the second attempt waited for the server.
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_retry_after_beyond_max_backoff_ends_the_call_with_the_answer() {
    let server = ScriptedServer::start(vec![busy("120"), Step::json(OK)]).await;
    let t = transport(
        &server.base,
        3,
        Duration::from_secs(5),
        RetryBudget::default(),
    );
    let e = t
        .call::<serde_json::Value, TestCode>(read())
        .await
        .expect_err("not resent");
    assert!(matches!(e, Error::Http(ref h) if h.status == 503), "{e:?}");
    assert_eq!(server.hits(), 1, "not hammered");
}

#[tokio::test]
async fn the_budget_stops_resends_once_spent_and_successes_earn_them_back() {
    // Every answer a 502 page; 3 resends allowed per call; the budget pays for 2 resends.
    let mut steps: Vec<Step> = (0..6)
        .map(|_| Step::status(502, "text/html", "bad gateway"))
        .collect();
    steps.extend((0..10).map(|_| Step::json(OK)));
    steps.push(Step::status(502, "text/html", "bad gateway"));
    steps.push(Step::json(OK));
    let server = ScriptedServer::start(steps).await;
    let budget = RetryBudget {
        capacity: 10,
        retry_cost: 5,
        timeout_cost: 10,
        success_refill: 1,
    };
    let t = transport(&server.base, 3, Duration::from_millis(5), budget);
    let clone = t.clone();

    // The first call makes its two paid resends, then stops: 3 attempts, not 4.
    let e = t.call::<serde_json::Value, TestCode>(read()).await;
    assert!(e.is_err());
    assert_eq!(server.hits(), 3);
    assert_eq!(t.retry_budget_left(), 0);
    // A clone shares the budget: its call is not resent at all.
    let e = clone.call::<serde_json::Value, TestCode>(read()).await;
    assert!(e.is_err());
    assert_eq!(server.hits(), 4);
    // Two more failures without a resend, then ten calls that succeed earn 10 tokens back.
    let _ = t.call::<serde_json::Value, TestCode>(read()).await;
    let _ = t.call::<serde_json::Value, TestCode>(read()).await;
    assert_eq!(server.hits(), 6);
    for _ in 0..10 {
        t.call::<serde_json::Value, TestCode>(read())
            .await
            .expect("ok");
    }
    assert_eq!(t.retry_budget_left(), 10);
    // And a failure is resent again.
    t.call::<serde_json::Value, TestCode>(read())
        .await
        .expect("resent, then ok");
    assert_eq!(server.hits(), 18);
}

#[tokio::test]
async fn an_unlimited_budget_resends_as_the_policy_says() {
    let steps: Vec<Step> = (0..4)
        .map(|_| Step::status(502, "text/html", "bad gateway"))
        .collect();
    let server = ScriptedServer::start(steps).await;
    let t = transport(
        &server.base,
        3,
        Duration::from_millis(5),
        RetryBudget::UNLIMITED,
    );
    let e = t.call::<serde_json::Value, TestCode>(read()).await;
    assert!(e.is_err());
    assert_eq!(server.hits(), 4);
}
