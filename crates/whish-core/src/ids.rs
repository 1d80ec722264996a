//! Idempotency keys: the transfer service's numeric `Request-id` and the collect and top-up
//! services' string `externalId`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::validation::ValidationError;

/// The transfer service's `Request-id`: a Long. The ones the SDK makes, and the ones it takes
/// from a caller ([`RequestId::new`]), are positive; one read from the service's replies
/// (`requestId` in the activity log, the statement, the callback) is any Long it sends, `0`
/// included, so that a reply the service considers valid is never unreadable.
///
/// The Request-id of a create is what later identifies the transfer as `requestId` in status,
/// activity and statement, and as `externalId` in callbacks.
///
/// The caller stores the key **before** the request goes out; every resend of that request
/// carries the same key. The clients generate one when the caller gives none and hand it back
/// before sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(into = "i64")]
pub struct RequestId(i64);

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        i64::deserialize(d).map(RequestId)
    }
}

impl RequestId {
    /// A Request-id from a caller's own numeric reference. It must be positive.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn new(value: i64) -> Result<RequestId, ValidationError> {
        if value > 0 {
            Ok(RequestId(value))
        } else {
            Err(ValidationError::invalid(
                "Request-id",
                "must be a positive whole number",
            ))
        }
    }

    /// A new id, unique across threads, processes and machines without any coordination.
    ///
    /// Each process draws a random starting point in `[10^9, 2^62)` from the operating
    /// system's random source once, and counts up from it; the ids of one process never repeat.
    /// Two processes can only collide when their starting points land closer than the number of
    /// ids they generate. Over the life of a fleet that starts `P` processes in all and generates
    /// `N` ids in all, the chance that any two collide is at most about `P x N / 2^62`: for a
    /// fleet sending 100 transfers a second for ten years (N = 3.2 x 10^10) across 36 500
    /// process starts (ten workers restarted daily), about 2.5 in 10 000; at 1 000 a second for
    /// a year, with 3 650 starts, about 2.5 in 100 000. A collision is caught by the service on
    /// the first attempt (`transfer.already.done` on a request never sent before is a refusal:
    /// see [`crate::verdict`]), never read as a confirmation.
    ///
    /// The ids are not ordered by time. (0.2 used epoch milliseconds x 1000 plus a
    /// process-local counter, which two processes drew alike in the same millisecond.)
    pub fn generate() -> RequestId {
        RequestId(next_request_id())
    }

    /// The numeric value.
    pub fn get(self) -> i64 {
        self.0
    }
}

impl TryFrom<i64> for RequestId {
    type Error = ValidationError;
    fn try_from(v: i64) -> Result<Self, Self::Error> {
        RequestId::new(v)
    }
}

/// The Request-id as an idempotency key, written in one allocation.
impl From<RequestId> for Arc<str> {
    fn from(id: RequestId) -> Arc<str> {
        use std::fmt::Write;
        let mut text = crate::stack_text::StackText::<20>::new(); // i64::MAX has 19 digits
        write!(text, "{}", id.0).expect("19 digits fit");
        Arc::from(text.as_str())
    }
}

impl From<RequestId> for i64 {
    fn from(v: RequestId) -> i64 {
        v.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for RequestId {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v: i64 = s
            .trim()
            .parse()
            .map_err(|_| ValidationError::invalid("Request-id", "must be numeric (a Long)"))?;
        RequestId::new(v)
    }
}

/// The first id of this process: drawn once from the operating system's random source (through
/// the standard library's hash keys), below 2^62 so that the counter after it never reaches
/// `i64::MAX`.
static PROCESS_BASE: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
static NEXT_IN_PROCESS: AtomicI64 = AtomicI64::new(0);

/// The width of the random range each process starts in.
const BASE_BITS: u32 = 62;

/// A random base drawn once per process, plus a counter: unique inside the process by
/// construction, and across processes and machines unless two bases land within the number of
/// ids the processes generate (see [`RequestId::generate`] for the odds).
fn next_request_id() -> i64 {
    let base = *PROCESS_BASE.get_or_init(|| {
        let r = (random_u128() as u64) >> (64 - BASE_BITS);
        // At least 10^9, so an id never looks like a small hand-made reference.
        (r as i64).max(1_000_000_000)
    });
    base + NEXT_IN_PROCESS.fetch_add(1, Ordering::Relaxed)
}

/// The collect and top-up services' `externalId`: a non-empty string, unique per payment.
///
/// Resending a used externalId never re-executes the payment: the service replays the recorded
/// result with `retrieved: true`. Reuse it only to retry the same intended payment.
///
/// Cheap to clone: the text is shared, and it becomes a request's idempotency key without a copy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct ExternalId(Arc<str>);

impl Serialize for ExternalId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl From<&ExternalId> for Arc<str> {
    fn from(id: &ExternalId) -> Arc<str> {
        Arc::clone(&id.0)
    }
}

/// The longest externalId the SDK accepts. The specs set no limit; this guards against mistakes.
pub const EXTERNAL_ID_MAX_LEN: usize = 128;

impl ExternalId {
    /// An externalId from the caller's own reference.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn new(value: impl Into<String>) -> Result<ExternalId, ValidationError> {
        let value = value.into();
        if value.trim().is_empty() {
            return Err(ValidationError::new(
                "externalId",
                crate::validation::ValidationKind::Missing,
            ));
        }
        if value.len() > EXTERNAL_ID_MAX_LEN || value.chars().any(char::is_control) {
            return Err(ValidationError::invalid(
                "externalId",
                format!("at most {EXTERNAL_ID_MAX_LEN} characters, no control characters"),
            ));
        }
        Ok(ExternalId(Arc::from(value)))
    }

    /// A new random externalId, written as a UUID v4 (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`).
    ///
    /// Its 122 random bits come from SipHash keys the standard library seeds from the operating
    /// system's random source, over a process-wide counter, the process id and the clock: unique
    /// across threads, processes and machines. An externalId is a reference, not a secret.
    pub fn generate() -> ExternalId {
        let mut text = [0u8; 36];
        format_uuid_v4(random_u128(), &mut text);
        // Only ASCII hex digits and dashes were written.
        ExternalId(Arc::from(std::str::from_utf8(&text).expect("ASCII")))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A uniform draw in `[0, 1)` for jitter, from the same source as a generated externalId: no
/// system call, and no random-number crate in the build.
pub(crate) fn unit_random() -> f64 {
    // The top 53 bits: every value is exact in an f64.
    (random_u128() >> 75) as f64 / (1u64 << 53) as f64
}

fn random_u128() -> u128 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut out = 0u128;
    for half in 0u8..2 {
        // Each `RandomState` has fresh keys (random per thread, then stepped per instance).
        let mut h = RandomState::new().build_hasher();
        // The keys are drawn from the OS once per thread: they, the counter and the clock make
        // the value unique across threads and processes without a system call per id.
        h.write_u64(n);
        h.write_u128(now);
        h.write_u8(half);
        out = (out << 64) | u128::from(h.finish());
    }
    out
}

/// Write `bits` as a UUID v4 (`8-4-4-4-12` lower-case hex digits) into `out`, without allocating.
fn format_uuid_v4(bits: u128, out: &mut [u8; 36]) {
    // Version 4 in bits 76..80, the RFC 9562 variant (10) in bits 62..64.
    let v = (bits & !(0xF << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
    let mut digit = 0;
    for (i, slot) in out.iter_mut().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            *slot = b'-';
        } else {
            let nibble = (v >> (124 - 4 * digit)) & 0xF;
            *slot = b"0123456789abcdef"[nibble as usize];
            digit += 1;
        }
    }
}

impl TryFrom<String> for ExternalId {
    type Error = ValidationError;
    fn try_from(v: String) -> Result<Self, Self::Error> {
        ExternalId::new(v)
    }
}

impl From<ExternalId> for String {
    fn from(v: ExternalId) -> String {
        v.0.as_ref().to_owned()
    }
}

impl FromStr for ExternalId {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ExternalId::new(s)
    }
}

impl fmt::Display for ExternalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jitter_draw_is_in_the_unit_interval_and_spread_over_it() {
        let draws: Vec<f64> = (0..4000).map(|_| unit_random()).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        // Each tenth of the interval holds about 400 draws; none is empty or holds half.
        for tenth in 0..10 {
            let lo = f64::from(tenth) / 10.0;
            let n = draws.iter().filter(|d| (lo..lo + 0.1).contains(*d)).count();
            assert!((200..800).contains(&n), "tenth {tenth}: {n}");
        }
    }

    #[test]
    fn a_request_id_read_from_a_reply_is_any_long_and_one_we_make_is_positive() {
        for text in ["0", "-7", "9223372036854775807"] {
            let id: RequestId = serde_json::from_str(text).expect("a Long decodes");
            assert_eq!(id.get().to_string(), text);
        }
        assert!(RequestId::new(0).is_err());
        assert!(RequestId::new(-7).is_err());
        assert!(RequestId::generate().get() > 0);
    }
    use std::collections::HashSet;

    #[test]
    fn request_ids_unique_and_increasing_across_threads() {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    let ids: Vec<i64> = (0..10_000).map(|_| RequestId::generate().get()).collect();
                    assert!(ids.windows(2).all(|w| w[0] < w[1]), "increasing per thread");
                    ids
                })
            })
            .collect();
        let mut all = HashSet::new();
        for h in handles {
            for id in h.join().expect("thread") {
                assert!(id > 0);
                assert!(all.insert(id), "duplicate id {id}");
            }
        }
        assert_eq!(all.len(), 80_000);
    }

    #[test]
    fn request_id_is_on_the_clock() {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_millis() as i64;
        let id = RequestId::generate().get();
        assert!(
            id >= now_ms * 1000,
            "ids survive a restart because they start at epoch ms x 1000"
        );
    }

    #[test]
    fn request_id_rules() {
        assert!(RequestId::new(0).is_err());
        assert!(RequestId::new(-5).is_err());
        assert_eq!("42".parse::<RequestId>().expect("numeric").get(), 42);
        assert!("4a2".parse::<RequestId>().is_err());
        let json = serde_json::to_string(&RequestId::new(7).expect("ok")).expect("json");
        assert_eq!(json, "7");
        // Read from a reply: any Long the service sends.
        assert_eq!(
            serde_json::from_str::<RequestId>("-1")
                .expect("a Long")
                .get(),
            -1
        );
    }

    #[test]
    fn request_id_key_is_its_decimal_text() {
        for v in [1, 42, i64::MAX] {
            let key: Arc<str> = RequestId::new(v).expect("positive").into();
            assert_eq!(&*key, v.to_string());
        }
    }

    #[test]
    fn uuid_v4_text_sets_version_and_variant() {
        let mut text = [0u8; 36];
        format_uuid_v4(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef, &mut text);
        assert_eq!(&text, b"01234567-89ab-4def-8123-456789abcdef");
        format_uuid_v4(u128::MAX, &mut text);
        assert_eq!(&text, b"ffffffff-ffff-4fff-bfff-ffffffffffff");
    }

    #[test]
    fn generated_external_ids_do_not_repeat_across_threads() {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    (0..25_000)
                        .map(|_| ExternalId::generate().0.to_string())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = std::collections::HashSet::new();
        for t in threads {
            for id in t.join().expect("thread") {
                assert!(all.insert(id), "an externalId repeated");
            }
        }
        assert_eq!(all.len(), 100_000);
    }

    #[test]
    fn external_ids() {
        let a = ExternalId::generate();
        let b = ExternalId::generate();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 36);
        for id in [&a, &b] {
            let u = uuid::Uuid::parse_str(id.as_str()).expect("a UUID");
            assert_eq!(u.get_version_num(), 4, "{id}");
            assert_eq!(u.get_variant(), uuid::Variant::RFC4122, "{id}");
        }
        assert!(ExternalId::new("").is_err());
        assert!(ExternalId::new("  ").is_err());
        assert!(ExternalId::new("a\nb").is_err());
        assert!(ExternalId::new("x".repeat(129)).is_err());
        assert_eq!(
            ExternalId::new("order-17").expect("ok").to_string(),
            "order-17"
        );
    }
}
