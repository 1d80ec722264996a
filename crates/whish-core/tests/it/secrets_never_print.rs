//! No secret ever shows: not in `Debug` or `Display` of any config or error type, and not in any
//! tracing output, at any level.

use std::time::Duration;

use crate::support::{Error, SECRET_KEY, TestCode};
use whish_core::Policy;
use whish_core::runtime::Resend;
use whish_core::runtime::{Method, Request, Transport};
use whish_core::{ClientSettings, SecretString, ServiceHeaders, UserAgent};
use whish_core::{RetryPolicy, Timeouts};
use whish_testkit::{ScriptedServer, Step, fixture};

fn transport(base: &str) -> Transport {
    let ua: UserAgent = "WhishTests/1.0 (https://tests.example.com; dev@example.com)"
        .parse()
        .expect("ua");
    ClientSettings::new(base)
        .user_agent(ua)
        .policy(Policy {
            retry: RetryPolicy {
                max_retries: 1,
                initial_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(2),
            },
            timeouts: Timeouts {
                connect: Duration::from_secs(1),
                attempt: Duration::from_millis(200),
            },
        })
        .build_transport(
            "test",
            ServiceHeaders::new()
                .required("username", "username", Some("merchant-7"))
                .secret("key", "key", Some(&SecretString::from(SECRET_KEY)))
                .secret(
                    "token",
                    "token",
                    Some(&SecretString::from("tok_SECOND_SECRET_987")),
                ),
        )
        .expect("transport")
}

#[derive(Debug, serde::Deserialize)]
struct Loose {
    #[serde(default)]
    #[allow(dead_code)]
    fees: Option<whish_core::Amount>,
}

const SECRETS: [&str; 2] = [SECRET_KEY, "tok_SECOND_SECRET_987"];

fn assert_clean(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} shows a secret: {text}");
    }
}

#[test]
fn no_secret_in_debug_display_or_trace_output() {
    let buf = whish_testkit::LogCapture::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let secret = SecretString::from(SECRET_KEY);
            assert_clean("SecretString Debug", &format!("{secret:?}"));

            let steps = vec![
                Step::json(fixture("money-transfer/send.cash-collection.success.json")),
                Step::json(fixture("money-transfer/send.failure.already-done.json")),
                Step::json(fixture("money-transfer/send.pending.number.json")),
                Step::status(
                    403,
                    "text/html",
                    fixture("hosted-collect/create.forbidden.403.html"),
                ),
                Step::json(r#"{"status":true,"data":{"fees":"x"}}"#),
                Step::Delay(Duration::from_millis(800), Box::new(Step::json("{}"))),
            ];
            let server = ScriptedServer::start(steps).await;
            let t = transport(&server.base);
            assert_clean("Transport Debug", &format!("{t:?}"));
            assert_clean("Policy Debug", &format!("{:?}", t.policy()));
            let mut errors: Vec<Error> = Vec::new();
            let mut replies = Vec::new();
            for _ in 0..6 {
                let req = Request::new("transfer.send", Method::POST, "/api/woo/send/money")
                    .json(&serde_json::json!({"amount": 1}))
                    .expect("body")
                    .idempotency_key("1755770400000001")
                    .resend(Resend::Never);
                match t.call::<Loose, TestCode>(req).await {
                    Ok(r) => replies.push(r),
                    Err(e) => errors.push(e),
                }
            }
            errors.push(Error::from(whish_core::ValidationError::invalid(
                "key", "bad",
            )));
            let kinds: Vec<&str> = errors
                .iter()
                .map(|e| match e {
                    Error::Failed(_) => "failed",
                    Error::Pending(_) => "pending",
                    Error::Http(_) => "http",
                    Error::Decode(_) => "decode",
                    Error::Transport(_) => "transport",
                    Error::Validation(_) => "validation",
                    _ => "other",
                })
                .collect();
            assert_eq!(
                kinds,
                [
                    "failed",
                    "pending",
                    "http",
                    "decode",
                    "transport",
                    "validation"
                ]
            );
            for e in &errors {
                assert_clean("error Display", &e.to_string());
                assert_clean("error Debug", &format!("{e:?}"));
                assert_clean("error Debug (pretty)", &format!("{e:#?}"));
            }
            for r in &replies {
                assert_clean("reply Debug", &format!("{r:?}"));
            }
            assert_eq!(
                server.raw_secret_values().len(),
                12,
                "both secrets were sent on each call"
            );
        });
    });
    let out = buf.text();
    assert!(out.contains("whish.call"), "the call span is logged");
    assert!(out.contains("whish.attempt"), "each attempt has its span");
    // Every field of the spans is in the output checked for secrets, the conventions' fields
    // (the URL among them) and ours.
    for field in [
        "otel.kind=\"client\"",
        "http.request.method=\"POST\"",
        "server.address=\"127.0.0.1\"",
        "url.full=",
        "http.request.resend_count=0",
        "rpc.method=\"transfer.send\"",
        "whish.operation=\"transfer.send\"",
        "whish.idempotency_key=\"1755770400000001\"",
        "outcome=",
    ] {
        assert!(out.contains(field), "{field} missing from {out}");
    }
    assert_clean("trace output", &out);
}

#[test]
fn invalid_or_empty_secrets_are_refused_without_showing_them() {
    let settings = ClientSettings::new("https://h.example.com");
    let err = settings
        .clone()
        .build_transport(
            "test",
            ServiceHeaders::new().secret(
                "key",
                "key",
                Some(&SecretString::from("bad\nvalue-SECRET")),
            ),
        )
        .expect_err("newline");
    assert!(!err.to_string().contains("SECRET"));
    assert!(!format!("{err:?}").contains("SECRET"));
    let err = settings
        .build_transport(
            "test",
            ServiceHeaders::new().secret("key", "key", Some(&SecretString::from("  "))),
        )
        .expect_err("empty");
    assert_eq!(err.setting, "key");
    // A proxy URL may carry a password: it never shows either.
    let with_proxy =
        ClientSettings::new("https://h.example.com").proxy("http://u:pw-SECRET@proxy:3128");
    assert!(!format!("{with_proxy:?}").contains("SECRET"));
    let err = ClientSettings::new("https://h.example.com")
        .proxy("::not a url pw-SECRET")
        .build_transport("test", ServiceHeaders::new())
        .expect_err("bad proxy");
    assert_eq!(err.setting, "proxy");
    assert!(!err.to_string().contains("SECRET") && !format!("{err:?}").contains("SECRET"));
}
