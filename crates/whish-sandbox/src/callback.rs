//! Callbacks the sandbox delivers: the transfer collection POST (signed) and the collect GETs.
//!
//! **The signature scheme is the sandbox's own**, because the transfer specification does not
//! show the service's: `signature = base64(HMAC-SHA256(key, "<timestamp>.<body>"))`, where
//! `timestamp` is the header value (epoch milliseconds) and `body` the exact bytes posted. Verify
//! it with [`verify_signature`] (plugged into the transfer client's callback receiver); do not
//! assume the real service signs the same way.

use std::time::Duration;

use ring::hmac;
use serde::Serialize;

/// The signature the sandbox puts on a transfer callback.
pub fn sign(key: &[u8], timestamp: i64, body: &[u8]) -> String {
    let k = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut ctx = hmac::Context::with_key(&k);
    ctx.update(timestamp.to_string().as_bytes());
    ctx.update(b".");
    ctx.update(body);
    base64(ctx.sign().as_ref())
}

/// True when `signature` (decoded from base64) is the sandbox's signature of this callback.
/// Constant-time comparison.
pub fn verify_signature(key: &[u8], timestamp: i64, body: &[u8], signature: &[u8]) -> bool {
    let k = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut msg = timestamp.to_string().into_bytes();
    msg.push(b'.');
    msg.extend_from_slice(body);
    hmac::verify(&k, &msg, signature).is_ok()
}

/// Standard base64 with padding.
pub(crate) fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One callback the sandbox delivered (or tried to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallbackDelivery {
    /// `transfer.received`, `collect.success` or `collect.failure`.
    pub kind: String,
    /// `POST` (transfer) or `GET` (collect).
    pub method: String,
    /// The address called, exactly as the caller gave it.
    pub url: String,
    /// The body posted (transfer), if any.
    pub body: Option<String>,
    /// The HTTP status the receiver answered, when it answered.
    pub status: Option<u16>,
    /// Why the delivery failed, when it did (connection refused, timeout, ...).
    pub error: Option<String>,
}

impl CallbackDelivery {
    /// True when the receiver acknowledged with HTTP 200.
    pub fn acknowledged(&self) -> bool {
        self.status == Some(200)
    }
}

/// The HTTP client the sandbox calls callbacks with: no redirects, short timeouts, and the TLS
/// stack the SDK was built with (`whish_core::tls`), so it needs no process-wide provider.
pub(crate) fn http_client() -> reqwest::Client {
    whish_core::tls::client_builder()
        .expect("the TLS stack of this build can be configured")
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(5))
        .build()
        .expect("the callback HTTP client can be built")
}

/// A callback never reaches the sandbox's own control API (a `callbackUrl` of
/// `http://127.0.0.1:PORT/_sandbox/reset` would otherwise wipe it when the cash is collected).
fn targets_control_api(url: &str) -> bool {
    url::Url::parse(url).map_or(true, |u| {
        let path = u.path().to_ascii_lowercase();
        path.starts_with("/_sandbox") || path.contains("/../") || path.contains("%2e")
    })
}

/// A callback to an address the real service could not reach (loopback, private): not called in
/// strict mode, recorded with the reason.
pub(crate) fn unreachable(
    kind: &str,
    method: &str,
    url: &str,
    body: Option<String>,
) -> CallbackDelivery {
    tracing::warn!(
        kind,
        url,
        "sandbox callback not delivered: the address is not public, so the service could not \
         reach it; serve the sandbox with --lenient (Rust: lenient(true)) to deliver it"
    );
    CallbackDelivery {
        kind: kind.to_owned(),
        method: method.to_owned(),
        url: url.to_owned(),
        body,
        status: None,
        error: Some(
            "not delivered: the address is not public (strict sandbox; lenient delivers it)"
                .to_owned(),
        ),
    }
}

fn refused(kind: &str, method: &str, url: &str, body: Option<String>) -> CallbackDelivery {
    tracing::warn!(
        kind,
        url,
        "sandbox callback refused: it targets the control API"
    );
    CallbackDelivery {
        kind: kind.to_owned(),
        method: method.to_owned(),
        url: url.to_owned(),
        body,
        status: None,
        error: Some("refused: a callback never targets the sandbox's control API".to_owned()),
    }
}

/// POST a signed transfer callback.
pub(crate) async fn post_transfer(
    http: &reqwest::Client,
    key: &[u8],
    url: &str,
    timestamp: i64,
    body: String,
) -> CallbackDelivery {
    if targets_control_api(url) {
        return refused("transfer.received", "POST", url, Some(body));
    }
    let signature = sign(key, timestamp, body.as_bytes());
    let result = http
        .post(url)
        .header("content-type", "application/json")
        .header("timestamp", timestamp.to_string())
        .header("signature", signature)
        .body(body.clone())
        .send()
        .await;
    delivery("transfer.received", "POST", url, Some(body), result)
}

/// GET a collect callback address, its query untouched.
pub(crate) async fn get_collect(http: &reqwest::Client, kind: &str, url: &str) -> CallbackDelivery {
    if targets_control_api(url) {
        return refused(kind, "GET", url, None);
    }
    let result = http.get(url).send().await;
    delivery(kind, "GET", url, None, result)
}

fn delivery(
    kind: &str,
    method: &str,
    url: &str,
    body: Option<String>,
    result: Result<reqwest::Response, reqwest::Error>,
) -> CallbackDelivery {
    let (status, error) = match result {
        Ok(r) => (Some(r.status().as_u16()), None),
        Err(e) => (None, Some(e.without_url().to_string())),
    };
    if let Some(e) = &error {
        tracing::warn!(kind, url, error = %e, "sandbox callback not delivered");
    }
    CallbackDelivery {
        kind: kind.to_owned(),
        method: method.to_owned(),
        url: url.to_owned(),
        body,
        status,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn a_signature_verifies_only_for_its_own_input() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let k = hmac::Key::new(hmac::HMAC_SHA256, b"Jefe");
        let tag = hmac::sign(&k, b"what do ya want for nothing?");
        assert_eq!(
            tag.as_ref()[..4],
            [0x5b, 0xdc, 0xc1, 0x46],
            "HMAC-SHA256 is the standard one"
        );
        let sig = sign(b"key", 1_700_000_000_000, b"{\"a\":1}");
        let raw = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, b"key"),
            b"1700000000000.{\"a\":1}",
        );
        assert_eq!(sig, base64(raw.as_ref()));
        assert!(verify_signature(
            b"key",
            1_700_000_000_000,
            b"{\"a\":1}",
            raw.as_ref()
        ));
        assert!(!verify_signature(
            b"key",
            1_700_000_000_001,
            b"{\"a\":1}",
            raw.as_ref()
        ));
        assert!(!verify_signature(
            b"other",
            1_700_000_000_000,
            b"{\"a\":1}",
            raw.as_ref()
        ));
    }
}
