//! Callbacks: valid, stale, bad signature, repeated status.

use http::{HeaderMap, HeaderValue};
use whish_core::EpochMillis;
use whish_money_transfer::TransferStatus;
use whish_money_transfer::callback::{
    AcceptUnverified, CallbackError, CallbackReceiver, SignedInput, StatusChanges, parse,
};

const NOW: i64 = 1_755_790_200_000;

fn headers(timestamp: &str, signature: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("timestamp", HeaderValue::from_str(timestamp).expect("h"));
    h.insert("signature", HeaderValue::from_str(signature).expect("h"));
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h
}

fn body() -> Vec<u8> {
    whish_testkit::fixture("money-transfer/callback.received.body.json").into_bytes()
}

/// A stand-in scheme for the test: the signature must be the timestamp's bytes followed by the
/// body length. The real scheme is not in the specification; callers plug in theirs.
fn toy_verifier(input: &SignedInput<'_>) -> bool {
    let mut expected = input.timestamp.to_string().into_bytes();
    expected.extend_from_slice(input.body.len().to_string().as_bytes());
    whish_money_transfer::callback::constant_time_eq(input.signature, &expected)
}

fn b64(bytes: &[u8]) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn signed_headers(ts: i64, body: &[u8]) -> HeaderMap {
    let mut sig = ts.to_string().into_bytes();
    sig.extend_from_slice(body.len().to_string().as_bytes());
    headers(&ts.to_string(), &b64(&sig))
}

#[test]
fn a_valid_callback() {
    let body = body();
    let receiver = CallbackReceiver::new(toy_verifier);
    let cb = receiver
        .receive(&signed_headers(NOW - 2_000, &body), &body, EpochMillis(NOW))
        .expect("valid");
    assert_eq!(
        cb.external_id.get(),
        1_755_777_600_000_001,
        "externalId is the numeric Request-id"
    );
    assert_eq!(cb.transfer_id, "TR-20260821-000127");
    assert_eq!(cb.status, TransferStatus::Received);
    assert_eq!(cb.timestamp, EpochMillis(NOW - 2_000));
}

#[test]
fn without_a_tolerance_a_late_genuine_callback_is_accepted() {
    // The spec defines no window: an hour-old (redelivered) callback is not dropped by default.
    let body = body();
    CallbackReceiver::new(toy_verifier)
        .receive(
            &signed_headers(NOW - 3_600_000, &body),
            &body,
            EpochMillis(NOW),
        )
        .expect("accepted");
    // A tolerance too large for milliseconds in 64 bits does not wrap.
    let huge = CallbackReceiver::new(toy_verifier).tolerance(std::time::Duration::MAX);
    huge.receive(&signed_headers(0, &body), &body, EpochMillis(NOW))
        .expect("within an unbounded tolerance");
}

#[test]
fn a_stale_or_future_timestamp_is_refused_when_a_tolerance_is_asked_for() {
    let body = body();
    let receiver =
        CallbackReceiver::new(AcceptUnverified).tolerance(std::time::Duration::from_secs(60));
    let err = receiver
        .receive(
            &signed_headers(NOW - 61_000, &body),
            &body,
            EpochMillis(NOW),
        )
        .expect_err("stale");
    assert_eq!(err, CallbackError::Stale { age_ms: 61_000 });
    let err = receiver
        .receive(
            &signed_headers(NOW + 120_000, &body),
            &body,
            EpochMillis(NOW),
        )
        .expect_err("future");
    assert_eq!(err, CallbackError::Stale { age_ms: -120_000 });
    assert!(err.hint().contains("status endpoint"));
    assert!(!err.to_string().ends_with('.'), "{err}");
}

#[test]
fn a_bad_signature_is_refused() {
    let body = body();
    let receiver = CallbackReceiver::new(toy_verifier);
    let err = receiver
        .receive(
            &headers(&(NOW - 1_000).to_string(), &b64(b"forged")),
            &body,
            EpochMillis(NOW),
        )
        .expect_err("rejected");
    assert_eq!(err, CallbackError::SignatureRejected);
    let err = receiver
        .receive(
            &headers(&NOW.to_string(), "not base64!"),
            &body,
            EpochMillis(NOW),
        )
        .expect_err("encoding");
    assert_eq!(err, CallbackError::BadSignatureEncoding);
    let mut tampered = body.clone();
    tampered.push(b' ');
    assert_eq!(
        receiver
            .receive(&signed_headers(NOW, &body), &tampered, EpochMillis(NOW))
            .expect_err("body changed"),
        CallbackError::SignatureRejected
    );
}

#[test]
fn malformed_input_is_refused() {
    let body = body();
    let mut h = headers(&NOW.to_string(), "c2ln");
    h.remove("timestamp");
    assert_eq!(
        parse(&h, &body).expect_err("no ts"),
        CallbackError::MissingHeader("timestamp")
    );
    assert_eq!(
        parse(&headers("yesterday", "c2ln"), &body).expect_err("ts"),
        CallbackError::BadTimestamp
    );
    let quoted =
        br#"{"date":"x","externalId":"1755777600000001","transferId":"T","status":"RECEIVED"}"#;
    assert!(matches!(
        parse(&headers(&NOW.to_string(), "c2ln"), quoted).expect_err("externalId must be a number"),
        CallbackError::BadBody { .. }
    ));
    // No create could have had these: a Request-id is positive, a transfer has an id.
    for (body, path) in [
        (
            &br#"{"date":"x","externalId":-5,"transferId":"T","status":"RECEIVED"}"#[..],
            "externalId",
        ),
        (
            br#"{"date":"x","externalId":0,"transferId":"T","status":"RECEIVED"}"#,
            "externalId",
        ),
        (
            br#"{"date":"x","externalId":7,"transferId":" ","status":"RECEIVED"}"#,
            "transferId",
        ),
    ] {
        match parse(&headers(&NOW.to_string(), "c2ln"), body).expect_err(path) {
            CallbackError::BadBody { path: p, .. } => assert_eq!(p, path),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_repeated_status_is_not_a_new_event() {
    let body = body();
    let receiver = CallbackReceiver::new(AcceptUnverified);
    let cb = receiver
        .receive(&signed_headers(NOW, &body), &body, EpochMillis(NOW))
        .expect("valid");
    let mut changes = StatusChanges::new();
    changes.record("TR-20260821-000127", TransferStatus::Sent);
    let change = changes.observe(&cb).expect("SENT to RECEIVED is a change");
    assert_eq!(change.from, Some(TransferStatus::Sent));
    assert_eq!(change.to, TransferStatus::Received);
    assert_eq!(
        changes.observe(&cb),
        None,
        "the same status again is not an event"
    );
    assert_eq!(changes.observe(&cb.clone()), None);
}
