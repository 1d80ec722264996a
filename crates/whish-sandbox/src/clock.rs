//! The sandbox clock: the system time plus an offset that tests can advance (link expiry, dates).

use std::sync::Mutex;
use std::time::Duration;

use time::OffsetDateTime;
use time::macros::format_description;

/// The furthest the sandbox clock moves ahead of the system time: a hundred years.
pub(crate) const MAX_ADVANCE: Duration = Duration::from_secs(100 * 366 * 86_400);

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

    /// Move the clock forward. Refused (and nothing changes) when the clock would end up more
    /// than [`MAX_ADVANCE`] ahead of the system time, or past what a date can hold: every later
    /// date computed from it (expiries, statements) then stays in range.
    pub(crate) fn advance(&self, by: Duration) -> Result<(), String> {
        let mut mode = lock(&self.mode);
        let next = match *mode {
            ClockMode::System(offset) => offset
                .checked_add(by)
                .filter(|o| *o <= MAX_ADVANCE)
                .map(ClockMode::System),
            ClockMode::Fixed(at) => time::Duration::try_from(by)
                .ok()
                .filter(|_| by <= MAX_ADVANCE)
                .and_then(|d| at.checked_add(d))
                .filter(|t| t.year() <= 9000)
                .map(ClockMode::Fixed),
        };
        match next {
            Some(m) => {
                *mode = m;
                Ok(())
            }
            None => Err(format!(
                "the clock cannot move that far (at most {} days ahead)",
                MAX_ADVANCE.as_secs() / 86_400
            )),
        }
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
