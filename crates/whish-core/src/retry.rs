//! Retry policy and the retry decision, as pure functions.

use std::time::Duration;

/// How many resends, and how long to wait between them.
///
/// Only requests marked safe are resent, and only for a connect failure, a timeout, a broken
/// connection, an HTTP 5xx/429 reply without an envelope, and Pending: on a read (which changes
/// nothing, so Pending there is a server that could not answer yet) and where the service defines
/// a resend with the same idempotency key as the way to reconcile. A resend carries the same bytes
/// and the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Resends after the first attempt (0 = never resend).
    pub max_retries: u32,
    /// The backoff ceiling of the first resend; it doubles for each later one.
    pub initial_backoff: Duration,
    /// The largest backoff ceiling.
    pub max_backoff: Duration,
}

impl RetryPolicy {
    /// No resends at all.
    pub const NONE: RetryPolicy = RetryPolicy {
        max_retries: 0,
        initial_backoff: Duration::ZERO,
        max_backoff: Duration::ZERO,
    };

    /// The ceiling of the wait before resend number `retry` (0-based):
    /// `min(max_backoff, initial_backoff * 2^retry)`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.min(31));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }

    /// Full jitter: a wait drawn uniformly from `[0, ceiling(retry)]`; `unit` is in `[0, 1]`.
    pub fn backoff(&self, retry: u32, unit: f64) -> Duration {
        self.ceiling(retry).mul_f64(unit.clamp(0.0, 1.0))
    }
}

impl Default for RetryPolicy {
    /// Three resends, backoff ceilings 200 ms, 400 ms, 800 ms (at most 5 s).
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// Connect and per-attempt timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Time allowed to open the connection (TCP and TLS).
    pub connect: Duration,
    /// Time allowed for one attempt, from sending to the last byte of the reply.
    pub attempt: Duration,
}

impl Default for Timeouts {
    /// 10 s to connect, 30 s per attempt.
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            attempt: Duration::from_secs(30),
        }
    }
}

/// Whether a request may be resent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resend {
    /// Never resent (a create without an idempotency key the service honours).
    Never,
    /// A read: resending changes nothing, so a Pending answer is asked again too.
    Read,
    /// A create or change carrying an idempotency key the service deduplicates on. When
    /// `on_pending` is true the service defines "resend with the same key" as the way to read
    /// a Pending outcome, so Pending is resent too.
    SameKey {
        /// Resend after Pending too.
        on_pending: bool,
    },
}

/// What one attempt produced, as far as the retry decision cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The connection could not be opened.
    ConnectFailed,
    /// The TLS handshake failed (a certificate problem does not fix itself).
    TlsFailed,
    /// The request could not be formed; nothing was sent.
    SetupFailed,
    /// The reply was larger than the client's cap; reading stopped.
    ReplyTooLarge,
    /// The attempt timed out.
    TimedOut,
    /// The connection broke after sending.
    ConnectionBroken,
    /// An HTTP reply that was not the envelope.
    NoEnvelope {
        /// Its status.
        status: u16,
    },
    /// An envelope with code 500.
    Pending,
    /// Any other envelope: success or a failure code; nothing to resend.
    Answered,
}

/// What to do after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Wait this long, then resend the same bytes with the same key.
    RetryAfter(Duration),
    /// Stop and report this attempt's outcome.
    Stop,
}

/// Whether this outcome is one a safe request is resent for.
pub fn is_retryable(resend: Resend, outcome: AttemptOutcome) -> bool {
    let transient = match outcome {
        AttemptOutcome::ConnectFailed
        | AttemptOutcome::TimedOut
        | AttemptOutcome::ConnectionBroken => true,
        AttemptOutcome::NoEnvelope { status } => status >= 500 || status == 429,
        AttemptOutcome::TlsFailed
        | AttemptOutcome::SetupFailed
        | AttemptOutcome::ReplyTooLarge
        | AttemptOutcome::Answered
        | AttemptOutcome::Pending => false,
    };
    match resend {
        Resend::Never => false,
        Resend::Read => transient || outcome == AttemptOutcome::Pending,
        Resend::SameKey { on_pending } => {
            transient || (on_pending && outcome == AttemptOutcome::Pending)
        }
    }
}

/// The retry decision after `attempts_made` attempts (1 after the first), with `unit` a random
/// number in `[0, 1]` for the jitter.
pub fn decide(
    policy: &RetryPolicy,
    resend: Resend,
    attempts_made: u32,
    outcome: AttemptOutcome,
    unit: f64,
) -> Decision {
    if attempts_made > policy.max_retries || !is_retryable(resend, outcome) {
        return Decision::Stop;
    }
    Decision::RetryAfter(policy.backoff(attempts_made - 1, unit))
}

/// A budget for resends, shared by every call of one client (and of its clones): when a fleet
/// resends every failure, an outage gets all of its traffic again several times over; the budget
/// stops the resends once they run far ahead of the calls that succeed.
///
/// Each resend takes `retry_cost` tokens (`timeout_cost` after a timeout, which holds a
/// connection the longest); each call that succeeds gives `success_refill` back, up to
/// `capacity`. A resend the budget cannot pay for is not made: the call ends with the answer it
/// has (for a money-moving request, unknown: send the same prepared request again later).
///
/// The defaults (500 tokens, 5 a resend, 10 after a timeout, 1 back per success) allow a
/// hundred resends in a burst and then about one resend per five calls that succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBudget {
    /// The tokens the bucket holds when full (and at start).
    pub capacity: u32,
    /// What a resend costs.
    pub retry_cost: u32,
    /// What a resend after a timeout costs.
    pub timeout_cost: u32,
    /// What a call that succeeds gives back.
    pub success_refill: u32,
}

impl RetryBudget {
    /// No budget: every resend the policy allows is made.
    pub const UNLIMITED: RetryBudget = RetryBudget {
        capacity: u32::MAX,
        retry_cost: 0,
        timeout_cost: 0,
        success_refill: 0,
    };
}

impl Default for RetryBudget {
    fn default() -> Self {
        RetryBudget {
            capacity: 500,
            retry_cost: 5,
            timeout_cost: 10,
            success_refill: 1,
        }
    }
}

/// The tokens of a [`RetryBudget`], shared by a client's calls.
#[derive(Debug)]
pub(crate) struct Bucket {
    budget: RetryBudget,
    tokens: std::sync::atomic::AtomicU32,
}

impl Bucket {
    pub(crate) fn new(budget: RetryBudget) -> Bucket {
        Bucket {
            budget,
            tokens: std::sync::atomic::AtomicU32::new(budget.capacity),
        }
    }

    /// Take the price of one resend; false (nothing taken) when the budget cannot pay.
    pub(crate) fn try_take(&self, after_timeout: bool) -> bool {
        use std::sync::atomic::Ordering;
        let cost = if after_timeout {
            self.budget.timeout_cost
        } else {
            self.budget.retry_cost
        };
        self.tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(cost))
            .is_ok()
    }

    /// A call succeeded: give some back.
    pub(crate) fn refill(&self) {
        use std::sync::atomic::Ordering;
        let (add, cap) = (self.budget.success_refill, self.budget.capacity);
        if add == 0 {
            return;
        }
        let _ = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_add(add).min(cap))
            });
    }

    /// The tokens left.
    pub(crate) fn tokens(&self) -> u32 {
        self.tokens.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// The wait a `Retry-After` header asks for: delta-seconds, or an HTTP date (from `now`).
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate(v)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form HTTP/1.1 senders use, read by
/// hand (the SDK builds `time` without its parsing feature).
fn httpdate(v: &str) -> Option<std::time::SystemTime> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let parts: Vec<&str> = v.split_ascii_whitespace().collect();
    let [_weekday, day, month, year, clock, "GMT"] = parts.as_slice() else {
        return None;
    };
    let month = MONTHS.iter().position(|m| m == month)? as u8 + 1;
    let mut hms = clock.split(':').map(str::parse::<u8>);
    let (h, m, sec) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    let date = time::Date::from_calendar_date(
        year.parse().ok()?,
        time::Month::try_from(month).ok()?,
        day.parse().ok()?,
    )
    .ok()?;
    let at = date.with_hms(h, m, sec).ok()?.assume_utc();
    let secs = u64::try_from(at.unix_timestamp()).ok()?;
    Some(std::time::UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use AttemptOutcome::*;

    const SAFE: [Resend; 3] = [
        Resend::Read,
        Resend::SameKey { on_pending: false },
        Resend::SameKey { on_pending: true },
    ];

    #[test]
    fn what_is_retried() {
        for r in SAFE {
            for o in [
                ConnectFailed,
                TimedOut,
                ConnectionBroken,
                NoEnvelope { status: 502 },
                NoEnvelope { status: 503 },
                NoEnvelope { status: 429 },
            ] {
                assert!(is_retryable(r, o), "{r:?} {o:?}");
            }
            for o in [
                TlsFailed,
                Answered,
                NoEnvelope { status: 403 },
                NoEnvelope { status: 404 },
                NoEnvelope { status: 200 },
            ] {
                assert!(!is_retryable(r, o), "{r:?} {o:?}");
            }
        }
        for o in [ConnectFailed, TimedOut, Pending, NoEnvelope { status: 503 }] {
            assert!(
                !is_retryable(Resend::Never, o),
                "unsafe requests are never resent"
            );
        }
        assert!(is_retryable(Resend::SameKey { on_pending: true }, Pending));
        assert!(!is_retryable(
            Resend::SameKey { on_pending: false },
            Pending
        ));
        // A read that answered Pending is asked again: it changes nothing.
        assert!(is_retryable(Resend::Read, Pending));
    }

    #[test]
    fn bounded_by_max_retries() {
        let p = RetryPolicy {
            max_retries: 2,
            ..RetryPolicy::default()
        };
        let r = Resend::Read;
        assert!(matches!(
            decide(&p, r, 1, TimedOut, 0.5),
            Decision::RetryAfter(_)
        ));
        assert!(matches!(
            decide(&p, r, 2, TimedOut, 0.5),
            Decision::RetryAfter(_)
        ));
        assert_eq!(decide(&p, r, 3, TimedOut, 0.5), Decision::Stop);
        assert_eq!(
            decide(&RetryPolicy::NONE, r, 1, TimedOut, 0.5),
            Decision::Stop
        );
        assert_eq!(decide(&p, r, 1, Answered, 0.5), Decision::Stop);
    }

    #[test]
    fn a_budget_pays_for_resends_until_it_is_spent_and_successes_refill_it() {
        let b = Bucket::new(RetryBudget {
            capacity: 20,
            retry_cost: 5,
            timeout_cost: 10,
            success_refill: 1,
        });
        assert!(b.try_take(true));
        assert!(b.try_take(false));
        assert!(b.try_take(false));
        assert!(!b.try_take(false), "0 left");
        assert_eq!(b.tokens(), 0);
        for _ in 0..5 {
            b.refill();
        }
        assert!(b.try_take(false));
        for _ in 0..100 {
            b.refill();
        }
        assert_eq!(b.tokens(), 20, "never above capacity");
        let u = Bucket::new(RetryBudget::UNLIMITED);
        for _ in 0..10_000 {
            assert!(u.try_take(true));
        }
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(0)),
            "784111777 is 1994-11-06 08:49:37"
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn backoff_bounds() {
        let p = RetryPolicy {
            max_retries: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
        };
        assert_eq!(p.ceiling(0), Duration::from_millis(100));
        assert_eq!(p.ceiling(1), Duration::from_millis(200));
        assert_eq!(p.ceiling(3), Duration::from_millis(800));
        assert_eq!(p.ceiling(4), Duration::from_millis(1000), "capped");
        assert_eq!(p.ceiling(60), Duration::from_millis(1000), "no overflow");
        assert_eq!(
            p.backoff(2, 0.0),
            Duration::ZERO,
            "full jitter reaches zero"
        );
        assert_eq!(p.backoff(2, 1.0), Duration::from_millis(400));
        assert_eq!(
            p.backoff(2, 7.0),
            Duration::from_millis(400),
            "unit clamped"
        );
        for i in 0..=20 {
            let u = f64::from(i) / 20.0;
            let d = p.backoff(5, u);
            assert!(d <= p.max_backoff);
        }
        match decide(&p, Resend::Read, 2, ConnectFailed, 0.5) {
            Decision::RetryAfter(d) => assert_eq!(d, Duration::from_millis(100)),
            Decision::Stop => panic!("should retry"),
        }
    }
}
