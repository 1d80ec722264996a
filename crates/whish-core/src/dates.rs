//! The date formats of the services.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

use crate::validation::{ValidationError, ValidationKind};

/// The number written in `b[from..to]`, all ASCII digits.
fn digits(b: &[u8], from: usize, to: usize) -> Option<u32> {
    b[from..to].iter().try_fold(0u32, |acc, c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

/// A real calendar date from its year, month and day numbers.
fn calendar_date(year: u32, month: u32, day: u32) -> Option<Date> {
    let month = Month::try_from(u8::try_from(month).ok()?).ok()?;
    Date::from_calendar_date(i32::try_from(year).ok()?, month, u8::try_from(day).ok()?).ok()
}

/// A year as four digits (a sign before it, outside 0..=9999).
fn write_year(f: &mut fmt::Formatter<'_>, year: i32) -> fmt::Result {
    if (0..=9999).contains(&year) {
        write!(f, "{year:04}")
    } else {
        write!(
            f,
            "{}{:04}",
            if year < 0 { '-' } else { '+' },
            year.unsigned_abs()
        )
    }
}

/// A `yyyy-MM-dd HH:mm:ss` time, as used by activity and statement. The services do not state a
/// zone; the value is kept as the service's local time.
///
/// The date formats of the services, held as `time` values and read and written by hand (two
/// fixed-width formats do not need `time`'s format interpreter, which would add its parsing and
/// formatting code to every build): `yyyy-MM-dd HH:mm:ss` (activity, statement), `dd-MM-yyyy`
/// (dateBirth) and epoch milliseconds (sending countries' dateCreation, the callback's timestamp
/// header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime(pub PrimitiveDateTime);

impl DateTime {
    /// The format, in the spec's notation.
    pub const FORMAT: &'static str = "yyyy-MM-dd HH:mm:ss";

    /// Parse `yyyy-MM-dd HH:mm:ss` (surrounding blanks ignored); an impossible date or time is
    /// refused.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn parse(text: &str, field: &str) -> Result<DateTime, ValidationError> {
        Self::parse_exact(text.trim()).ok_or_else(|| {
            ValidationError::new(
                field,
                ValidationKind::BadDate {
                    format: Self::FORMAT,
                },
            )
        })
    }

    /// Exactly 19 bytes, digits where the format has them, a real date and time.
    fn parse_exact(t: &str) -> Option<DateTime> {
        let b = t.as_bytes();
        if b.len() != 19
            || b[4] != b'-'
            || b[7] != b'-'
            || b[10] != b' '
            || b[13] != b':'
            || b[16] != b':'
        {
            return None;
        }
        let date = calendar_date(digits(b, 0, 4)?, digits(b, 5, 7)?, digits(b, 8, 10)?)?;
        let time = Time::from_hms(
            u8::try_from(digits(b, 11, 13)?).ok()?,
            u8::try_from(digits(b, 14, 16)?).ok()?,
            u8::try_from(digits(b, 17, 19)?).ok()?,
        )
        .ok()?;
        Some(DateTime(PrimitiveDateTime::new(date, time)))
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (d, t) = (self.0.date(), self.0.time());
        write_year(f, d.year())?;
        write!(
            f,
            "-{:02}-{:02} {:02}:{:02}:{:02}",
            u8::from(d.month()),
            d.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    }
}

impl FromStr for DateTime {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DateTime::parse(s, "date")
    }
}

impl Serialize for DateTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DateTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::de::with_str(d, "a `yyyy-MM-dd HH:mm:ss` date", |s| {
            DateTime::parse(s, "date")
        })
    }
}

/// A `dd-MM-yyyy` calendar date (dateBirth).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DayMonthYear(pub Date);

impl DayMonthYear {
    /// The format, in the spec's notation.
    pub const FORMAT: &'static str = "dd-MM-yyyy";

    /// Parse `dd-MM-yyyy` (surrounding blanks ignored); `31-02-1990` is refused because it is
    /// not a real date.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn parse(text: &str, field: &str) -> Result<DayMonthYear, ValidationError> {
        let b = text.trim().as_bytes();
        (b.len() == 10 && b[2] == b'-' && b[5] == b'-')
            .then(|| calendar_date(digits(b, 6, 10)?, digits(b, 3, 5)?, digits(b, 0, 2)?))
            .flatten()
            .map(DayMonthYear)
            .ok_or_else(|| {
                ValidationError::new(
                    field,
                    ValidationKind::BadDate {
                        format: Self::FORMAT,
                    },
                )
            })
    }

    /// Parse a date of birth: a real `dd-MM-yyyy` date not after `today`.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn parse_birth_date(
        text: &str,
        field: &str,
        today: Date,
    ) -> Result<DayMonthYear, ValidationError> {
        let d = DayMonthYear::parse(text, field)?;
        if d.0 > today {
            return Err(ValidationError::new(field, ValidationKind::DateInFuture));
        }
        Ok(d)
    }
}

/// Today's date in UTC, the reference for "not in the future".
pub fn today_utc() -> Date {
    OffsetDateTime::now_utc().date()
}

impl fmt::Display for DayMonthYear {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}-{:02}-", self.0.day(), u8::from(self.0.month()))?;
        write_year(f, self.0.year())
    }
}

impl Serialize for DayMonthYear {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DayMonthYear {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        DayMonthYear::parse(&s, "date").map_err(serde::de::Error::custom)
    }
}

/// An instant in epoch milliseconds, kept as the number the service sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EpochMillis(pub i64);

impl EpochMillis {
    /// The instant, in UTC; `None` when out of range.
    pub fn to_offset_date_time(self) -> Option<OffsetDateTime> {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000).ok()
    }

    /// The milliseconds of an instant.
    pub fn from_offset_date_time(t: OffsetDateTime) -> EpochMillis {
        EpochMillis((t.unix_timestamp_nanos() / 1_000_000) as i64)
    }

    /// Now.
    pub fn now() -> EpochMillis {
        EpochMillis::from_offset_date_time(OffsetDateTime::now_utc())
    }
}

impl fmt::Display for EpochMillis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::{date, datetime};

    #[test]
    fn date_time_round_trip() {
        let d: DateTime = serde_json::from_str(r#""2026-08-21 13:05:09""#).expect("reads");
        assert_eq!(d.0, datetime!(2026-08-21 13:05:09));
        assert_eq!(
            serde_json::to_string(&d).expect("w"),
            r#""2026-08-21 13:05:09""#
        );
        assert!(DateTime::parse("2026-08-21T13:05:09", "fromDate").is_err());
        assert!(DateTime::parse("2026-02-30 00:00:00", "fromDate").is_err());
        let e = DateTime::parse("21-08-2026", "fromDate").expect_err("wrong format");
        assert_eq!(e.field, "fromDate");
    }

    #[test]
    fn day_month_year() {
        let d = DayMonthYear::parse("07-03-1990", "dateBirth").expect("ok");
        assert_eq!(d.0, date!(1990 - 03 - 07));
        assert_eq!(d.to_string(), "07-03-1990");
        assert_eq!(
            DayMonthYear::parse("31-02-1990", "dateBirth")
                .expect_err("no 31 Feb")
                .kind,
            ValidationKind::BadDate {
                format: "dd-MM-yyyy"
            }
        );
        assert!(DayMonthYear::parse("1990-03-07", "dateBirth").is_err());
        assert!(DayMonthYear::parse("7-3-1990", "dateBirth").is_err());
    }

    #[test]
    fn birth_date_not_in_future() {
        let today = date!(2026 - 11 - 21);
        assert!(DayMonthYear::parse_birth_date("21-11-2026", "dateBirth", today).is_ok());
        assert_eq!(
            DayMonthYear::parse_birth_date("22-11-2026", "dateBirth", today)
                .expect_err("future")
                .kind,
            ValidationKind::DateInFuture
        );
        assert!(DayMonthYear::parse_birth_date("01-01-2100", "dateBirth", today_utc()).is_err());
    }

    #[test]
    fn epoch_millis() {
        let e: EpochMillis = serde_json::from_str("1755777600123").expect("reads");
        let t = e.to_offset_date_time().expect("in range");
        assert_eq!(t.unix_timestamp(), 1_755_777_600);
        assert_eq!(t.millisecond(), 123);
        assert_eq!(EpochMillis::from_offset_date_time(t), e);
        assert_eq!(serde_json::to_string(&e).expect("w"), "1755777600123");
    }
}
