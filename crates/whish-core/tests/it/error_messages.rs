//! Errors read well: every variant renders as one line, lower case, with no trailing period and no
//! advice (that is `hint()`); `source()` returns the underlying error; the predicates sort every
//! variant the same way in every service.

use std::error::Error as _;
use std::time::Duration;

use crate::support::{Error, TestCode};
use whish_core::Policy;
use whish_core::runtime::Resend;
use whish_core::runtime::{Method, Request};
use whish_core::{ClientSettings, ServiceHeaders, SetupError, ValidationError, ValidationKind};
use whish_core::{RetryPolicy, Timeouts};
use whish_testkit::{ScriptedServer, Step};

fn transport(base: &str) -> whish_core::runtime::Transport {
    ClientSettings::new(base)
        .policy(Policy {
            retry: RetryPolicy::NONE,
            timeouts: Timeouts {
                connect: Duration::from_secs(1),
                attempt: Duration::from_millis(300),
            },
        })
        .build_transport("test", ServiceHeaders::new())
        .expect("transport")
}

fn send() -> Request {
    Request::new("transfer.send", Method::POST, "/api/woo/send/money")
        .json(&serde_json::json!({"amount": 1}))
        .expect("body")
        .idempotency_key("42")
        .resend(Resend::SameKey { on_pending: false })
}

/// One line, starting lower case, no trailing period, no advice words.
fn assert_reads_well(e: &Error) {
    let text = e.to_string();
    assert!(!text.contains('\n'), "one line: {text:?}");
    assert!(
        text.chars().next().is_some_and(|c| !c.is_uppercase()),
        "lower case: {text:?}"
    );
    assert!(!text.ends_with('.'), "no trailing period: {text:?}");
    for advice in ["Next:", "Do not", "resend it", "reconcile"] {
        assert!(!text.contains(advice), "advice belongs to hint(): {text:?}");
    }
    assert!(!e.hint().is_empty());
}

#[tokio::test]
async fn every_variant_renders_as_one_line() {
    let failed = r#"{"status":false,"code":"transfer.invalid_amount","data":null,"dialog":{"title":"Error","message":"Amount not allowed"}}"#;
    let server = ScriptedServer::start(vec![
        Step::json(failed),
        Step::json(r#"{"status":false,"code":500,"dialog":null}"#),
        Step::status(502, "text/html", "<html>Bad gateway\n</html>"),
        Step::status(200, "text/html", "<html>a proxy's page</html>"),
        Step::json(r#"{"status":true,"code":null,"data":{"amount":"not a number"}}"#),
        Step::Delay(Duration::from_secs(2), Box::new(Step::json("{}"))),
    ])
    .await;
    let t = transport(&server.base);
    let mut errors = Vec::new();
    for _ in 0..6 {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Data {
            amount: f64,
        }
        errors.push(
            t.call::<Data, TestCode>(send())
                .await
                .expect_err("an error"),
        );
    }
    // Nothing listens on port 9 of loopback: a connection that never opened.
    errors.push(
        transport("http://127.0.0.1:9")
            .call::<serde_json::Value, TestCode>(send())
            .await
            .expect_err("refused"),
    );
    errors.push(Error::Validation(ValidationError::new(
        "amount",
        ValidationKind::NotPositive,
    )));
    errors.push(Error::Setup(SetupError::missing("username")));
    errors.push(Error::Record(whish_core::RecordError::new(
        "the key already names a different request",
        Some("42".into()),
        None,
    )));

    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts[0],
        r#"transfer.send: refused with transfer.invalid_amount: "Amount not allowed""#
    );
    assert_eq!(
        texts[1],
        "transfer.send: pending (code 500) after 1 attempt, outcome unknown, idempotency key 42"
    );
    assert_eq!(
        texts[2],
        "transfer.send: http 502 without the service envelope"
    );
    assert!(
        texts[3].starts_with("transfer.send: unreadable reply at `.`"),
        "{}",
        texts[3]
    );
    assert!(
        texts[4].starts_with("transfer.send: unreadable reply at `data.amount`"),
        "{}",
        texts[4]
    );
    assert_eq!(
        texts[5],
        "transfer.send: timed out after 1 attempt, the request may have been applied"
    );
    assert_eq!(texts[6], "transfer.send: could not connect after 1 attempt");
    assert_eq!(
        texts[7],
        "refused before sending: `amount` must be greater than zero"
    );
    assert_eq!(texts[8], "setting `username` is required");
    assert_eq!(
        texts[9],
        "journal: the key already names a different request, idempotency key 42; nothing was sent"
    );
    assert!(errors[9].nothing_sent() && !errors[9].outcome_unknown());
    assert_eq!(errors[9].idempotency_key(), Some("42"));
    for e in &errors {
        assert_reads_well(e);
    }

    // The predicates, the same for every service.
    assert!(errors[0].code().is_some() && !errors[0].outcome_unknown());
    assert!(errors[1].is_pending() && errors[1].outcome_unknown());
    assert!(
        errors[2].outcome_unknown(),
        "a 502 may follow an applied request"
    );
    assert!(
        errors[3].outcome_unknown(),
        "an unreadable 200 reply to a create may follow an applied request"
    );
    assert!(errors[4].outcome_unknown());
    assert!(errors[5].outcome_unknown() && !errors[5].nothing_sent());
    assert!(errors[6].nothing_sent() && !errors[6].outcome_unknown());
    assert!(errors[7].nothing_sent() && errors[8].nothing_sent());

    // source(): the underlying I/O error of a transport failure; none where the text is all.
    assert!(errors[6].source().is_some(), "connect failure has a cause");
    assert!(errors[5].source().is_some(), "timeout has a cause");
    assert!(errors[0].source().is_none());
    // The advice is a method.
    assert!(
        errors[0].hint().contains("undocumented code"),
        "a code this test set does not list: {}",
        errors[0].hint()
    );
    assert!(errors[5].hint().contains("confirm the outcome"));
}

#[test]
fn a_decode_message_is_a_short_excerpt() {
    let huge = "x".repeat(10_000);
    let e = whish_core::DecodeError::new("data", huge, 200, "transfer.fees", None);
    assert!(e.message.chars().count() <= whish_core::runtime::DECODE_MESSAGE_LIMIT + 1);
    assert!(e.message.ends_with('…'));
}
