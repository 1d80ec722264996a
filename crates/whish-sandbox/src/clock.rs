//! The sandbox clock: the system time plus an offset that tests can advance (link expiry, dates).

use std::sync::Mutex;
use std::time::Duration;

use time::OffsetDateTime;
use time::macros::format_description;

/// The sandbox's notion of now.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    mode: Mutex<ClockMode>,
}

#[derive(Debug, Clone, Copy)]
enum ClockMode {
    /// System time plus an offset.
    System(Duration),
    /// A fixed instant, moved only by `advance`.
    Fixed(OffsetDateTime),
}

impl Default for ClockMode {
    fn default() -> Self {
        ClockMode::System(Duration::ZERO)
    }
}

impl Clock {
    pub(crate) fn fixed(at: OffsetDateTime) -> Clock {
        Clock {
            mode: Mutex::new(ClockMode::Fixed(at)),
        }
    }

    pub(crate) fn now(&self) -> OffsetDateTime {
        match *lock(&self.mode) {
            ClockMode::System(offset) => OffsetDateTime::now_utc() + offset,
            ClockMode::Fixed(at) => at,
        }
    }

    pub(crate) fn advance(&self, by: Duration) {
        let mut mode = lock(&self.mode);
        *mode = match *mode {
            ClockMode::System(offset) => ClockMode::System(offset + by),
            ClockMode::Fixed(at) => ClockMode::Fixed(at + by),
        };
    }
}

/// `yyyy-MM-dd HH:mm:ss`, the transfer service's date format.
pub(crate) fn date_time(t: OffsetDateTime) -> String {
    t.format(format_description!(
        "[year]-[month]-[day] [hour]:[minute]:[second]"
    ))
    .unwrap_or_default()
}

/// Parse `yyyy-MM-dd HH:mm:ss` (UTC).
pub(crate) fn parse_date_time(text: &str) -> Option<OffsetDateTime> {
    time::PrimitiveDateTime::parse(
        text,
        format_description!("[year]-[month]-[day] [hour]:[minute]:[second]"),
    )
    .ok()
    .map(|p| p.assume_utc())
}

/// Lock a mutex, recovering the data if a panicking thread poisoned it: the sandbox state stays
/// usable for the rest of a test run.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
