//! The collection callback: parse it, check its timestamp, verify its signature with a scheme you
//! plug in, and turn repeats into one state change.
//!
//! When a cash-collection transfer sent with a `callbackUrl` is collected (SENT to RECEIVED), the
//! service POSTs a flat JSON body `{date, externalId, transferId, status}` (externalId is the
//! numeric Request-id of the create) with two headers: `timestamp` (epoch milliseconds) and
//! `signature` (base64, no prefix). Answer HTTP 200 to acknowledge.
//!
//! **The specification does not show the signature scheme**, nor the source addresses or the
//! redelivery policy. So verification is pluggable ([`SignatureVerifier`]): the SDK decodes the
//! signature and hands you the exact bytes; you supply the check your operator documents to you.
//! Until then [`AcceptUnverified`] says out loud that nothing is verified.
//!
//! Whatever the signature, **a callback is a notification, not proof**: confirm with
//! [`TransferClient::status`](crate::TransferClient::status) before acting, and trigger one-time
//! side effects on the recorded change of status ([`StatusChanges`]), not on the arrival of a POST.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use http::HeaderMap;
use serde::Deserialize;
use whish_core::{EpochMillis, RequestId};

use crate::model::TransferStatus;

/// A callback as received.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReceivedCallback {
    /// Human-readable time of the event, as sent.
    pub date: String,
    /// The Request-id given at create (sent as `externalId`, a JSON number).
    pub external_id: RequestId,
    /// The transfer the callback is about.
    pub transfer_id: String,
    /// The transfer status reported (RECEIVED).
    pub status: TransferStatus,
    /// The `timestamp` header: when the callback was sent.
    pub timestamp: EpochMillis,
    /// The `signature` header, decoded from base64.
    pub signature: Vec<u8>,
}

/// Why a callback was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallbackError {
    /// A required header is absent or not text.
    MissingHeader(&'static str),
    /// The `timestamp` header is not epoch milliseconds.
    BadTimestamp,
    /// The `signature` header is not base64.
    BadSignatureEncoding,
    /// The body is not the documented object; the JSON path and the problem.
    BadBody {
        /// Where.
        path: String,
        /// What.
        message: String,
    },
    /// The timestamp is further from now than the tolerance (a replay, or a clock problem).
    Stale {
        /// How far from now, in milliseconds (positive: in the past).
        age_ms: i64,
    },
    /// The verifier rejected the signature.
    SignatureRejected,
}

impl fmt::Display for CallbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallbackError::MissingHeader(h) => write!(f, "the `{h}` header is missing"),
            CallbackError::BadTimestamp => {
                f.write_str("the `timestamp` header is not epoch milliseconds")
            }
            CallbackError::BadSignatureEncoding => {
                f.write_str("the `signature` header is not base64")
            }
            CallbackError::BadBody { path, message } => {
                write!(
                    f,
                    "the callback body is not the documented object at `{path}`: {}",
                    message.chars().take(160).collect::<String>()
                )
            }
            CallbackError::Stale { age_ms } => write!(
                f,
                "the callback timestamp is {age_ms} ms away from now, outside the tolerance"
            ),
            CallbackError::SignatureRejected => f.write_str("the callback signature was rejected"),
        }
    }
}

impl CallbackError {
    /// What to do: answer non-200, hand nothing on, and rely on the status endpoint.
    pub fn hint(&self) -> &'static str {
        "answer non-200, act on nothing, and rely on the status endpoint"
    }
}

impl std::error::Error for CallbackError {}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    #[serde(default)]
    date: String,
    external_id: RequestId,
    transfer_id: String,
    status: TransferStatus,
}

fn header<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, CallbackError> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(CallbackError::MissingHeader(name))
}

/// Parse a callback from its headers and body, without checking time or signature.
///
/// # Errors
///
/// A `CallbackError` when a header is missing or malformed, the signature does not verify, or the
/// body is not the documented callback.
pub fn parse(headers: &HeaderMap, body: &[u8]) -> Result<ReceivedCallback, CallbackError> {
    let timestamp: i64 = header(headers, "timestamp")?
        .parse()
        .map_err(|_| CallbackError::BadTimestamp)?;
    let signature =
        decode_base64(header(headers, "signature")?).ok_or(CallbackError::BadSignatureEncoding)?;
    let b: Body = serde_json::from_slice(body).map_err(|e| CallbackError::BadBody {
        path: format!("line {} column {}", e.line(), e.column()),
        message: e.to_string(),
    })?;
    // What a create could have been given and answered: a positive Request-id, a transfer.
    if b.external_id.get() <= 0 {
        return Err(CallbackError::BadBody {
            path: "externalId".into(),
            message: "is not a positive Request-id".into(),
        });
    }
    if b.transfer_id.trim().is_empty() {
        return Err(CallbackError::BadBody {
            path: "transferId".into(),
            message: "is empty".into(),
        });
    }
    Ok(ReceivedCallback {
        date: b.date,
        external_id: b.external_id,
        transfer_id: b.transfer_id,
        status: b.status,
        timestamp: EpochMillis(timestamp),
        signature,
    })
}

/// What a signature is computed over, as received.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SignedInput<'a> {
    /// The `timestamp` header value.
    pub timestamp: i64,
    /// The raw request body, byte for byte.
    pub body: &'a [u8],
    /// The decoded `signature` header.
    pub signature: &'a [u8],
}

/// Verifies a callback signature. The service's scheme is not in the specification: implement
/// the one your operator gives you (for example an HMAC over the timestamp and the body).
pub trait SignatureVerifier: Send + Sync {
    /// True when the signature is valid for this input.
    fn verify(&self, input: &SignedInput<'_>) -> bool;
}

impl<F> SignatureVerifier for F
where
    F: Fn(&SignedInput<'_>) -> bool + Send + Sync,
{
    fn verify(&self, input: &SignedInput<'_>) -> bool {
        self(input)
    }
}

/// Accepts every signature. Use it only while the scheme is unknown, knowing that a callback
/// then proves nothing at all (confirm with status, as you must anyway).
#[derive(Debug, Clone, Copy, Default)]
pub struct AcceptUnverified;

impl SignatureVerifier for AcceptUnverified {
    fn verify(&self, _: &SignedInput<'_>) -> bool {
        true
    }
}

/// Receives callbacks: parse, signature, and a timestamp window when you ask for one.
#[derive(Debug, Clone)]
pub struct CallbackReceiver<V> {
    verifier: V,
    tolerance: Option<Duration>,
}

impl<V: SignatureVerifier> CallbackReceiver<V> {
    /// A receiver with this verifier and no timestamp window: the specification defines none, so
    /// a late but genuine callback (a redelivery, a queue) is not dropped by default.
    pub fn new(verifier: V) -> Self {
        CallbackReceiver {
            verifier,
            tolerance: None,
        }
    }

    /// Refuse timestamps further than this from now, either way ([`CallbackError::Stale`]). An
    /// option of yours, not a rule of the service: a refused callback is only one notification,
    /// and the status endpoint still tells the truth.
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = Some(tolerance);
        self
    }

    /// Parse and check a callback received at `now`.
    ///
    /// # Errors
    ///
    /// A `CallbackError` when a header is missing or malformed, the signature does not verify, or
    /// the body is not the documented callback.
    pub fn receive(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: EpochMillis,
    ) -> Result<ReceivedCallback, CallbackError> {
        let cb = parse(headers, body)?;
        let age_ms = now.0.saturating_sub(cb.timestamp.0);
        if let Some(tolerance) = self.tolerance
            && u128::from(age_ms.unsigned_abs()) > tolerance.as_millis()
        {
            return Err(CallbackError::Stale { age_ms });
        }
        let input = SignedInput {
            timestamp: cb.timestamp.0,
            body,
            signature: &cb.signature,
        };
        if !self.verifier.verify(&input) {
            return Err(CallbackError::SignatureRejected);
        }
        Ok(cb)
    }
}

/// A recorded change of a transfer's status.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatusChange {
    /// The transfer.
    pub transfer_id: String,
    /// Its Request-id.
    pub request_id: RequestId,
    /// The status before, if one was recorded.
    pub from: Option<TransferStatus>,
    /// The new status.
    pub to: TransferStatus,
}

impl StatusChange {
    /// A change of `transfer_id` (created with `request_id`) from `from` to `to`; for stores
    /// that keep the record elsewhere (a journal, a database of your own).
    pub fn new(
        transfer_id: impl Into<String>,
        request_id: RequestId,
        from: Option<TransferStatus>,
        to: TransferStatus,
    ) -> StatusChange {
        StatusChange {
            transfer_id: transfer_id.into(),
            request_id,
            from,
            to,
        }
    }
}

/// Turns callbacks into one state change per recorded change of status: a repeated callback
/// reports the current status again and is not a new event.
///
/// It remembers statuses in memory; seed it with [`record`](Self::record) from your own store
/// at start-up so a redelivery after a restart is still recognised.
#[derive(Debug, Clone, Default)]
pub struct StatusChanges {
    known: HashMap<String, TransferStatus>,
}

impl StatusChanges {
    /// An empty record.
    pub fn new() -> Self {
        StatusChanges::default()
    }

    /// Record a status you already know (from your store or from the status endpoint).
    pub fn record(&mut self, transfer_id: impl Into<String>, status: TransferStatus) {
        self.known.insert(transfer_id.into(), status);
    }

    /// The change this callback brings, or `None` when it repeats the recorded status.
    pub fn observe(&mut self, cb: &ReceivedCallback) -> Option<StatusChange> {
        let previous = self.known.get(&cb.transfer_id);
        if previous == Some(&cb.status) {
            return None;
        }
        let change = StatusChange {
            transfer_id: cb.transfer_id.clone(),
            request_id: cb.external_id,
            from: previous.cloned(),
            to: cb.status.clone(),
        };
        self.known.insert(cb.transfer_id.clone(), cb.status.clone());
        Some(change)
    }
}

/// Decode canonical base64: the standard alphabet (`+`, `/`), `=` padding to a multiple of four,
/// and zero unused bits, so that one signature has exactly one spelling. The URL-safe alphabet,
/// missing padding and non-zero trailing bits are refused.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let text = text.trim();
    if text.is_empty() || !text.len().is_multiple_of(4) {
        return None;
    }
    let body = text.trim_end_matches('=');
    let padding = text.len() - body.len();
    if padding > 2 || body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in body.bytes() {
        acc = (acc << 6) | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // The bits left over must be zero: otherwise several texts decode to the same bytes.
    (acc == 0).then_some(out)
}

/// Compare two byte strings in time that depends only on their lengths, not on where they
/// differ: use it to compare a computed signature with the received one.
///
/// ```
/// use whish_money_transfer::callback::constant_time_eq;
/// assert!(constant_time_eq(b"same", b"same"));
/// assert!(!constant_time_eq(b"same", b"sane"));
/// assert!(!constant_time_eq(b"short", b"longer"));
/// ```
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_canonical_only() {
        assert_eq!(decode_base64("aGVsbG8=").expect("ok"), b"hello");
        assert_eq!(decode_base64("+/8=").expect("ok"), vec![0xfb, 0xff]);
        assert_eq!(decode_base64("AAAA").expect("ok"), vec![0, 0, 0]);
        // Other spellings of the same bytes are refused: one signature, one text.
        assert!(decode_base64("aGVsbG8").is_none(), "unpadded");
        assert!(decode_base64("-_8=").is_none(), "URL-safe alphabet");
        assert!(decode_base64("+/9=").is_none(), "non-zero trailing bits");
        assert!(decode_base64("aGVsbG8===").is_none());
        assert!(decode_base64("").is_none());
        assert!(decode_base64("a===").is_none());
        assert!(decode_base64("ab!d").is_none());
    }
}
