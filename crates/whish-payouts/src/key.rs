//! The Request-id of a row: derived from the batch and the row, never drawn at random, so that
//! the same file run again names the same transfers.

use whish_core::RequestId;

/// The Request-id of attempt `attempt` (0 first) of the row `row_key` of batch `batch`: the first
/// 63 bits of SHA-256 over the three, as a positive number. The same inputs give the same
/// Request-id on every machine and in every version of this crate (tests pin values).
///
/// A row is given a new attempt only after the service refused the previous one with an
/// account-level refusal (a limit or the balance) that created nothing: see
/// [`RETRYABLE`](crate::RETRYABLE).
pub fn request_id(batch: &str, row_key: &str, attempt: u32) -> RequestId {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"whish-payouts/1\0");
    ctx.update(&(batch.len() as u64).to_be_bytes());
    ctx.update(batch.as_bytes());
    ctx.update(&(row_key.len() as u64).to_be_bytes());
    ctx.update(row_key.as_bytes());
    ctx.update(&attempt.to_be_bytes());
    let digest = ctx.finish();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    let value = (u64::from_be_bytes(first) >> 1).max(1);
    // `value` is at most 2^63 - 1 and at least 1: always a valid Request-id.
    RequestId::new(i64::try_from(value).unwrap_or(i64::MAX))
        .unwrap_or_else(|_| RequestId::generate())
}

/// The Request-id of the cancel of a row's transfer (one per row and attempt).
pub fn cancel_request_id(batch: &str, row_key: &str, attempt: u32) -> RequestId {
    request_id(batch, &format!("cancel:{row_key}"), attempt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_and_distinct() {
        let a = request_id("payroll-2026-11", "ref:EMP-001", 0);
        assert_eq!(a, request_id("payroll-2026-11", "ref:EMP-001", 0));
        assert_ne!(a, request_id("payroll-2026-11", "ref:EMP-001", 1));
        assert_ne!(a, request_id("payroll-2026-12", "ref:EMP-001", 0));
        assert_ne!(a, request_id("payroll-2026-11", "ref:EMP-002", 0));
        // Length-prefixed: moving a byte from one part to the other is another key.
        assert_ne!(request_id("ab", "c", 0), request_id("a", "bc", 0));
        assert!(a.get() > 0);
        // Pinned: a change of derivation would pay every resumed batch twice.
        assert_eq!(request_id("b", "line:2", 0).get(), PINNED);
    }

    const PINNED: i64 = 3_784_974_256_195_035_782;
}
