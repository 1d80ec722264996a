//! The SDK's metrics, through the [`metrics`](https://docs.rs/metrics) facade (feature
//! `metrics`): install the recorder of your choice (`metrics-exporter-prometheus` for a
//! Prometheus scrape, an OTLP exporter) and these appear. Without the feature, nothing is
//! recorded and nothing is built.
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `whish_call_duration_seconds` | histogram | `service`, `operation`, `outcome` |
//! | `whish_calls_total` | counter | `service`, `operation`, `outcome` (the verdict) |
//! | `whish_attempt_duration_seconds` | histogram | `service`, `operation`, `result` |
//! | `whish_resends_total` | counter | `service`, `operation` |
//! | `whish_journal_open_entries` | gauge | (set by a recovery run) |
//! | `whish_journal_needs_operator` | gauge | (set by a recovery run) |
//! | `whish_callbacks_total` | counter | `kind` (`transfer`, `collect`), `result` (`received`, `duplicate`, `rejected`, `handled`, `failed`) |
//!
//! `outcome` is `accepted`, `refused`, `pending`, `unknown` or `not-sent`; an attempt's `result`
//! is its HTTP status (`200`, `502`) or the failure that ended it (`timeout`, `connect`, ...).
//! Every label is low in cardinality: no key, no amount, no phone.

/// The names, for dashboards and tests.
pub mod names {
    /// Histogram of a call's duration, all attempts and waits included.
    pub const CALL_DURATION: &str = "whish_call_duration_seconds";
    /// Counter of calls by outcome.
    pub const CALLS: &str = "whish_calls_total";
    /// Histogram of one attempt's duration.
    pub const ATTEMPT_DURATION: &str = "whish_attempt_duration_seconds";
    /// Counter of resends.
    pub const RESENDS: &str = "whish_resends_total";
    /// Gauge of the journal's open entries, after a recovery run.
    pub const JOURNAL_OPEN: &str = "whish_journal_open_entries";
    /// Gauge of the journal's entries waiting for an operator, after a recovery run.
    pub const JOURNAL_NEEDS_OPERATOR: &str = "whish_journal_needs_operator";
    /// Counter of callbacks by kind and result.
    pub const CALLBACKS: &str = "whish_callbacks_total";
}

/// Record a finished call.
#[cfg(feature = "metrics")]
pub(crate) fn call(
    service: &'static str,
    operation: &'static str,
    outcome: &'static str,
    took: std::time::Duration,
) {
    let labels = [
        ("service", service),
        ("operation", operation),
        ("outcome", outcome),
    ];
    ::metrics::histogram!(names::CALL_DURATION, &labels).record(took.as_secs_f64());
    ::metrics::counter!(names::CALLS, &labels).increment(1);
}

/// Record a finished attempt; `resend` when it was not the first.
#[cfg(feature = "metrics")]
pub(crate) fn attempt(
    service: &'static str,
    operation: &'static str,
    result: &str,
    resend: bool,
    took: std::time::Duration,
) {
    let labels = [
        ("service", service.to_owned()),
        ("operation", operation.to_owned()),
        ("result", result.to_owned()),
    ];
    ::metrics::histogram!(names::ATTEMPT_DURATION, &labels).record(took.as_secs_f64());
    if resend {
        ::metrics::counter!(names::RESENDS, "service" => service, "operation" => operation)
            .increment(1);
    }
}

/// Set the journal's gauges (the journal calls it after a recovery run).
#[doc(hidden)]
pub fn journal_gauges(open: usize, needs_operator: usize) {
    #[cfg(feature = "metrics")]
    {
        ::metrics::gauge!(names::JOURNAL_OPEN).set(open as f64);
        ::metrics::gauge!(names::JOURNAL_NEEDS_OPERATOR).set(needs_operator as f64);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (open, needs_operator);
}

/// Count one callback (the receiver calls it).
#[doc(hidden)]
pub fn callback(kind: &'static str, result: &'static str) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(names::CALLBACKS, "kind" => kind, "result" => result).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (kind, result);
}
