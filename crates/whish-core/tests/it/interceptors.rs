//! The interceptor: run before and after every attempt, it adds the headers a gateway needs and
//! observes each attempt, and cannot replace what the SDK sets nor see a credential unmarked.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Error, SECRET_KEY, TestCode};
use whish_core::Policy;
use whish_core::intercept::{AfterAttempt, BeforeAttempt, Interceptor};
use whish_core::runtime::Resend;
use whish_core::runtime::{HeaderValue, Method, Request};
use whish_core::{ClientSettings, SecretString, ServiceHeaders, TransportErrorKind};
use whish_core::{RetryPolicy, Timeouts};
use whish_testkit::{ScriptedServer, Step};

/// An attempt as seen after it: its number, its status, its failure.
type Seen = (u32, Option<u16>, Option<TransportErrorKind>);

#[derive(Default)]
struct Recorder {
    refused: Mutex<Vec<String>>,
    seen: Mutex<Vec<Seen>>,
    credential_debug: Mutex<Vec<String>>,
}

impl Interceptor for Recorder {
    fn before_attempt(&self, a: &mut BeforeAttempt<'_>) {
        a.insert_header("x-gateway-route", &format!("payments-{}", a.attempt))
            .expect("a header of the caller's own");
        // What the SDK sets cannot be replaced, nor can the framing headers.
        for name in ["key", "request-id", "content-type", "host", "username"] {
            match a.insert_header(name, "forged") {
                Err(e) => self.refused.lock().expect("lock").push(e.to_string()),
                Ok(()) => panic!("{name} was replaced"),
            }
        }
        assert!(a.url().as_str().ends_with("/api/woo/send/money"));
        assert_eq!(a.method(), "POST");
        // Asking for the headers marks them sensitive first.
        let headers = a.headers();
        let key = headers.get("key").expect("the credential is there");
        assert!(key.is_sensitive());
        self.credential_debug
            .lock()
            .expect("lock")
            .push(format!("{key:?}"));
    }

    fn after_attempt(&self, a: &AfterAttempt<'_>) {
        assert!(a.elapsed < Duration::from_secs(10));
        assert_eq!(a.operation, "transfer.send");
        assert_eq!(a.idempotency_key, Some("1755770400000009"));
        self.seen
            .lock()
            .expect("lock")
            .push((a.attempt, a.status, a.failure));
    }
}

#[tokio::test]
async fn an_interceptor_adds_headers_and_observes_every_attempt_within_the_rules() {
    let server = ScriptedServer::start(vec![
        Step::status(502, "text/html", "bad gateway"),
        Step::json(r#"{"status":true,"code":null,"data":{"ok":1}}"#),
    ])
    .await;
    let recorder = Arc::new(Recorder::default());
    let t = ClientSettings::new(server.base.clone())
        .policy(Policy {
            retry: RetryPolicy {
                max_retries: 2,
                initial_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(2),
            },
            timeouts: Timeouts::default(),
        })
        .interceptor(recorder.clone())
        .build_transport(
            "test",
            ServiceHeaders::new()
                .required("username", "username", Some("merchant-7"))
                .secret("key", "key", Some(&SecretString::from(SECRET_KEY))),
        )
        .expect("transport");
    let req = Request::new("transfer.send", Method::POST, "/api/woo/send/money")
        .json(&serde_json::json!({"amount": 1}))
        .expect("body")
        .header(
            http::HeaderName::from_static("request-id"),
            HeaderValue::from_static("1755770400000009"),
        )
        .idempotency_key("1755770400000009")
        .resend(Resend::SameKey { on_pending: true });
    let r: Result<_, Error> = t.call::<serde_json::Value, TestCode>(req).await;
    assert!(r.is_ok(), "{r:?}");

    // On the wire: the added header on each attempt, the SDK's own untouched.
    let wire = server.requests();
    assert_eq!(wire.len(), 2);
    for (i, w) in wire.iter().enumerate() {
        let get = |n: &str| {
            w.headers
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            get("x-gateway-route").as_deref(),
            Some(format!("payments-{}", i + 1).as_str())
        );
        assert_eq!(get("request-id").as_deref(), Some("1755770400000009"));
        assert_eq!(get("username").as_deref(), Some("merchant-7"));
        assert_eq!(get("content-type").as_deref(), Some("application/json"));
    }
    assert_eq!(recorder.refused.lock().expect("lock").len(), 10);
    assert!(
        recorder
            .credential_debug
            .lock()
            .expect("lock")
            .iter()
            .all(|d| d == "Sensitive" && !d.contains(SECRET_KEY))
    );
    assert_eq!(
        *recorder.seen.lock().expect("lock"),
        vec![(1, Some(502), None), (2, Some(200), None)]
    );
}

#[tokio::test]
async fn an_interceptor_sees_a_failure_without_an_answer() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let recorder = Arc::new(Recorder::default());
    let t = ClientSettings::new(format!("http://127.0.0.1:{port}"))
        .retry(RetryPolicy::NONE)
        .interceptor(recorder.clone())
        .build_transport(
            "test",
            ServiceHeaders::new()
                .required("username", "username", Some("merchant-7"))
                .secret("key", "key", Some(&SecretString::from(SECRET_KEY))),
        )
        .expect("transport");
    // No Request-id header on this request: an interceptor still may not add one.
    let req = Request::new("transfer.send", Method::POST, "/api/woo/send/money")
        .json(&serde_json::json!({"amount": 1}))
        .expect("body")
        .idempotency_key("1755770400000009")
        .resend(Resend::Never);
    let r: Result<_, Error> = t.call::<serde_json::Value, TestCode>(req).await;
    assert!(r.is_err());
    assert_eq!(
        *recorder.seen.lock().expect("lock"),
        vec![(1, None, Some(TransportErrorKind::Connect))]
    );
}

/// A credential read from a source is the SDK's header too: an interceptor cannot replace it.
#[tokio::test]
async fn an_interceptor_cannot_replace_a_credential_read_from_a_source() {
    struct Forger;
    impl Interceptor for Forger {
        fn before_attempt(&self, a: &mut BeforeAttempt<'_>) {
            assert!(a.insert_header("key", "forged").is_err());
        }
    }
    let server = ScriptedServer::start(vec![Step::json(
        r#"{"status":true,"code":null,"data":null}"#,
    )])
    .await;
    let t = ClientSettings::new(server.base.clone())
        .interceptor(Arc::new(Forger))
        .build_transport(
            "test",
            ServiceHeaders::new().secret_from(
                "key",
                "key",
                Arc::new(SecretString::from(SECRET_KEY)),
            ),
        )
        .expect("transport");
    let req = Request::new("test.read", Method::POST, "/read").resend(Resend::Read);
    let r: Result<_, Error> = t.call::<serde_json::Value, TestCode>(req).await;
    assert!(r.is_ok());
    assert_eq!(server.raw_secret_values(), [SECRET_KEY]);
}
