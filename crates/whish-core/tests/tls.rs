//! A real TLS handshake with the stack this build chose (`whish_core::tls`): a local rustls server
//! with a test CA (tests/fixtures/tls: a CA certificate whose key was discarded, and a
//! `127.0.0.1` leaf). `cargo xtask features` runs this file once per TLS feature.
//!
//! A binary of its own, apart from `tests/it`: it is built once per TLS choice, and it reads the
//! process-wide rustls provider, which the other tests install.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;
use whish_core::runtime::{Method, Request};
use whish_core::{ClientSettings, Error, ServiceHeaders};
use whish_testkit::TestCode;

const CA: &str = include_str!("fixtures/tls/ca.pem");
const CERT: &str = include_str!("fixtures/tls/server.pem");
const KEY: &str = include_str!("fixtures/tls/server.key");
const REPLY: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 36\r\nconnection: close\r\n\r\n{\"status\":true,\"code\":null,\"data\":7}";

/// A TLS server on loopback answering every request with one envelope; it records the ALPN
/// protocol each handshake agreed on.
async fn tls_server() -> (String, Arc<Mutex<Vec<Option<Vec<u8>>>>>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_slice_iter(CERT.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("certificate");
    let key = PrivateKeyDer::from_pem_slice(KEY.as_bytes()).expect("key");
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .expect("server config");
    // h2 first, so a client that offers it gets it; with the `http2` feature the client does,
    // and this server speaks only HTTP/1.1.
    config.alpn_protocols = if cfg!(feature = "http2") {
        vec![b"http/1.1".to_vec()]
    } else {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = tcp.local_addr().expect("addr");
    let alpn = Arc::new(Mutex::new(Vec::new()));
    let seen = alpn.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = tcp.accept().await {
            let (acceptor, seen) = (acceptor.clone(), seen.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                seen.lock()
                    .expect("lock")
                    .push(tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec));
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tls.write_all(REPLY.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (format!("https://127.0.0.1:{}/api", addr.port()), alpn)
}

fn get() -> Request {
    Request::new("test.read", Method::GET, "/api/woo/sending/countries")
}

#[cfg(any(
    feature = "rustls-ring",
    feature = "rustls-aws-lc-rs",
    feature = "native-tls"
))]
#[tokio::test]
async fn https_with_the_chosen_stack_trusts_an_added_root_and_speaks_http1() {
    let (base, alpn) = tls_server().await;
    let t = ClientSettings::new(base.clone())
        .add_root_certificate_pem(CA)
        .build_transport("test", ServiceHeaders::new())
        .expect("transport");
    let reply = t
        .call::<i64, TestCode>(get())
        .await
        .unwrap_or_else(|e| panic!("{:?}: {e}", whish_core::tls::backend()));
    assert_eq!(reply.data, Some(7));
    let agreed = alpn.lock().expect("lock").clone();
    assert_eq!(agreed.len(), 1, "one handshake");
    // HTTP/1.1 by ALPN (or no ALPN at all): HTTP/2 is not offered
    // unless the `http2` feature asks for it.
    if !cfg!(feature = "http2") {
        assert_ne!(agreed[0].as_deref(), Some(&b"h2"[..]), "{agreed:?}");
    }

    // Without the test root the same server is refused, before any request is written.
    let t = ClientSettings::new(base)
        .build_transport("test", ServiceHeaders::new())
        .expect("transport");
    match t.call::<i64, TestCode>(get()).await {
        Err(Error::Transport(e)) => {
            assert_eq!(e.kind, whish_core::TransportErrorKind::Tls, "{e}");
            assert!(!e.may_have_reached, "{e}");
        }
        other => panic!("an unknown root must fail the handshake: {other:?}"),
    }
}

#[cfg(not(any(
    feature = "rustls-ring",
    feature = "rustls-aws-lc-rs",
    feature = "native-tls"
)))]
#[tokio::test]
async fn a_build_without_tls_refuses_https_at_build_time() {
    assert_eq!(whish_core::tls::backend(), None);
    let (base, _) = tls_server().await;
    let e = ClientSettings::new(base)
        .build_transport("test", ServiceHeaders::new())
        .expect_err("no TLS stack");
    assert_eq!(e.setting, "base_url", "{e}");
    assert!(e.to_string().contains("rustls-ring"), "{e}");
    // Plain HTTP to loopback still works.
    assert!(
        ClientSettings::new("http://127.0.0.1:9/api")
            .build_transport("test", ServiceHeaders::new())
            .is_ok()
    );
}

#[test]
fn the_backend_is_named() {
    let expected = if cfg!(feature = "native-tls") {
        Some("native-tls")
    } else if cfg!(feature = "rustls-aws-lc-rs") {
        Some("rustls-aws-lc-rs")
    } else if cfg!(feature = "rustls-ring") {
        Some("rustls-ring")
    } else {
        None
    };
    assert_eq!(whish_core::tls::backend(), expected);
}

/// With ring alone, reqwest is built without a provider of its own: the first SDK client built
/// installs ring as the process default (none was installed), so a program's own reqwest client
/// built after it does not panic; and the SDK never replaces a provider already there.
#[cfg(all(
    feature = "rustls-ring",
    not(feature = "rustls-aws-lc-rs"),
    not(feature = "native-tls")
))]
#[test]
fn an_sdk_client_leaves_a_default_provider_for_the_programs_own_clients() {
    let _sdk = whish_core::ClientSettings::new("https://transfer.example.com")
        .build_transport("test", whish_core::ServiceHeaders::new())
        .expect("an SDK transport");
    assert!(
        !whish_core::tls::install_default_provider(),
        "already installed by the SDK client"
    );
    reqwest::Client::builder()
        .build()
        .expect("the program's own client builds with the installed provider");
}
