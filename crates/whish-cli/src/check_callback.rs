//! `whish transfer check-callback`: a collection callback checked as the receiver checks it,
//! from the shell, to debug a receiver.

use std::io::Read as _;
use std::path::Path;
use std::time::Duration;

use crate::printed;
use reqwest::header::HeaderMap;
use whish::transfer::callback::{CallbackError, CallbackReceiver, SignedInput};

use crate::output::{Out, REFUSED, usage};

/// The inputs of one check.
pub struct Check<'a> {
    pub body: &'a Path,
    pub timestamp: &'a str,
    pub signature: &'a str,
    pub window: Duration,
    pub sandbox_key: Option<&'a str>,
}

/// Check the callback; exit 0 when a receiver would record it, 1 when it would refuse it.
pub fn run(out: Out, c: &Check<'_>) -> Result<u8, u8> {
    let body = read(c.body)?;
    let mut headers = HeaderMap::new();
    for (name, value) in [("timestamp", c.timestamp), ("signature", c.signature)] {
        let value = value
            .parse()
            .map_err(|_| usage(format!("the {name} value is not a header value")))?;
        headers.insert(name, value);
    }
    let now = whish::core::EpochMillis::now();
    let key = c.sandbox_key.map(|k| k.as_bytes().to_vec());
    let verified = key.is_some();
    let receiver = CallbackReceiver::new(move |i: &SignedInput<'_>| match &key {
        Some(k) => whish_sandbox::callback::verify_signature(k, i.timestamp, i.body, i.signature),
        None => true,
    })
    .tolerance(c.window);
    let signature = if verified {
        "verified with the sandbox's scheme"
    } else {
        "decoded, not verified: the service's scheme is not documented (--sandbox-key checks the sandbox's)"
    };
    match receiver.receive(&headers, &body, now) {
        Ok(cb) => Ok(out.success(&printed::CallbackChecked {
            outcome: "would be recorded",
            external_id: cb.external_id.to_string(),
            transfer_id: &cb.transfer_id,
            status: &cb.status,
            date: &cb.date,
            timestamp_age_ms: now.0.saturating_sub(cb.timestamp.0),
            signature,
            signature_bytes: cb.signature.len(),
        })),
        Err(e) => Err(out.failure(
            &printed::CallbackRefused {
                outcome: "would be refused",
                reason: reason(&e),
                message: e.to_string(),
            },
            &format!("{e}: a receiver answers non-200 and records nothing"),
            REFUSED,
        )),
    }
}

fn reason(e: &CallbackError) -> &'static str {
    match e {
        CallbackError::MissingHeader(_) => "missing-header",
        CallbackError::BadTimestamp => "bad-timestamp",
        CallbackError::BadSignatureEncoding => "bad-signature-encoding",
        CallbackError::BadBody { .. } => "bad-body",
        CallbackError::Stale { .. } => "outside-window",
        CallbackError::SignatureRejected => "signature-rejected",
        _ => "other",
    }
}

fn read(path: &Path) -> Result<Vec<u8>, u8> {
    let mut bytes = Vec::new();
    let read = if path == Path::new("-") {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(path).map(|b| bytes = b)
    };
    read.map_err(|e| usage(format!("{}: {e}", path.display())))?;
    Ok(bytes)
}
