//! The HTTP settings a user brings (proxy, extra root certificates, pool, reply cap, their own
//! `reqwest::ClientBuilder`) and the rules that hold whatever they set: no redirect followed,
//! HTTPS only outside loopback, no reply read past the cap.

use crate::support::TestCode;
use httpmock::Method::GET;
use whish_core::runtime::{Method, Request};
use whish_core::{ClientSettings, Error, ServiceHeaders, TransportErrorKind};
use whish_testkit::{ScriptedServer, Step};

/// A self-signed test root (EC P-256, no private key kept), for the root-certificate setting.
const TEST_ROOT_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBjDCCATGgAwIBAgIULVHQHeiy0Kwn24amr9FSd30layowCgYIKoZIzj0EAwIw\nGjEYMBYGA1UEAwwPd2hpc2gtdGVzdC1yb290MCAXDTI2MTEyMjA1MjQxOVoYDzIx\nMjYxMDI5MDUyNDE5WjAaMRgwFgYDVQQDDA93aGlzaC10ZXN0LXJvb3QwWTATBgcq\nhkjOPQIBBggqhkjOPQMBBwNCAASAlfjSER11/fPvVMk9ck4vOtYGEqKrD91PE55K\nmsnrbmbpxueDRMQPmol/KxcWOaMjqZsG9mkDhPebz/jruSkoo1MwUTAdBgNVHQ4E\nFgQUtG0mO+njX/0fhaLTD5PCzC3Kup8wHwYDVR0jBBgwFoAUtG0mO+njX/0fhaLT\nD5PCzC3Kup8wDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEA35i1\nPKnVjIM0gntR0Svy+5IkVE1Bibcsppd+Wp51niACIQCLaN7gjYZKzX00flw5iL+o\nFSdAJ6ys3MZ0uUC2ks69zQ==\n-----END CERTIFICATE-----\n";

fn get(path: &str) -> Request {
    Request::new("test.read", Method::GET, path)
}

#[tokio::test]
async fn every_request_goes_through_the_configured_proxy() {
    // The proxy: a plain HTTP peer that answers whatever is asked of it.
    let proxy =
        ScriptedServer::start(vec![Step::json(r#"{"status":true,"code":null,"data":7}"#)]).await;
    // The service itself is unreachable (nothing listens on port 9): only the proxy can answer.
    let t = ClientSettings::new("http://127.0.0.1:9/api")
        .proxy(proxy.base.clone())
        .build_transport("test", ServiceHeaders::new())
        .expect("transport");
    let reply = t
        .call::<i64, TestCode>(get("/api/woo/sending/countries"))
        .await
        .expect("answered by way of the proxy");
    assert_eq!(reply.data, Some(7));
    let seen = &proxy.requests()[0];
    assert!(
        seen.path
            .ends_with("127.0.0.1:9/api/api/woo/sending/countries"),
        "the proxy is asked for the service's absolute URL: {}",
        seen.path
    );
}

#[tokio::test]
async fn no_proxy_ignores_the_proxy_and_a_bad_proxy_is_a_setup_error() {
    let server =
        ScriptedServer::start(vec![Step::json(r#"{"status":true,"code":null,"data":1}"#)]).await;
    let t = ClientSettings::new(server.base.clone())
        .no_proxy()
        .build_transport("test", ServiceHeaders::new())
        .expect("transport");
    assert!(t.call::<i64, TestCode>(get("/x")).await.is_ok());
    let e = ClientSettings::new("https://h.example.com")
        .proxy("not a proxy url")
        .build_transport("test", ServiceHeaders::new())
        .expect_err("bad proxy");
    assert_eq!(e.setting, "proxy");
}

#[test]
fn extra_root_certificates_are_checked_when_the_client_is_built() {
    ClientSettings::new("https://h.example.com")
        .add_root_certificate_pem(TEST_ROOT_PEM)
        .build_transport("test", ServiceHeaders::new())
        .expect("a PEM root is accepted");
    for bad in [
        "",
        "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
    ] {
        let e = ClientSettings::new("https://h.example.com")
            .add_root_certificate_pem(bad)
            .build_transport("test", ServiceHeaders::new())
            .expect_err("not a certificate");
        assert_eq!(e.setting, "root_certificate", "{e}");
    }
}

#[tokio::test]
async fn a_customized_client_still_follows_no_redirect() {
    let server = httpmock::MockServer::start_async().await;
    let elsewhere = server
        .mock_async(|when, then| {
            when.method(GET).path("/elsewhere");
            then.status(200)
                .body(r#"{"status":true,"code":null,"data":1}"#);
        })
        .await;
    server
        .mock_async(|when, then| {
            when.method(GET).path("/x");
            then.status(302).header("location", "/elsewhere");
        })
        .await;
    let t = ClientSettings::new(server.base_url())
        // The user asks for redirects; the SDK's rule is applied after, and wins: a redirect
        // would carry the credential headers to another host.
        .http_client(|b| b.redirect(reqwest::redirect::Policy::limited(10)))
        .pool_idle_timeout(std::time::Duration::from_secs(5))
        .pool_max_idle_per_host(2)
        .tcp_keepalive(std::time::Duration::from_secs(30))
        .build_transport("test", ServiceHeaders::new())
        .expect("transport");
    let e = t
        .call::<i64, TestCode>(get("/x"))
        .await
        .expect_err("302 is not the envelope");
    assert!(matches!(&e, Error::Http(h) if h.status == 302), "{e:?}");
    elsewhere.assert_calls_async(0).await;
}

#[test]
fn plain_http_outside_loopback_is_refused_whatever_the_customization() {
    let e = ClientSettings::new("http://transfer.example.com")
        .http_client(|b| b.https_only(false))
        .build_transport("test", ServiceHeaders::new())
        .expect_err("plain http to a public host");
    assert_eq!(e.setting, "base_url");
}

#[tokio::test]
async fn a_reply_larger_than_the_cap_is_not_read_and_its_outcome_is_unknown() {
    let big = format!(
        r#"{{"status":true,"code":null,"data":"{}"}}"#,
        "x".repeat(64 * 1024)
    );
    let server = ScriptedServer::start(vec![Step::json(big)]).await;
    let t = ClientSettings::new(server.base.clone())
        .max_reply_bytes(16 * 1024)
        .build_transport("test", ServiceHeaders::new())
        .expect("transport");
    let e = t
        .call::<String, TestCode>(get("/x"))
        .await
        .expect_err("too large");
    match &e {
        Error::Transport(t) => assert_eq!(t.kind, TransportErrorKind::ReplyTooLarge),
        other => panic!("{other:?}"),
    }
    assert!(
        e.outcome_unknown(),
        "a create's reply that was not read may follow an applied request"
    );
}
