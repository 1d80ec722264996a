//! Reading a JSON string without copying it first.
//!
//! serde's `Cow<str>` and `String` always allocate; a statement of 100 000 lines has half a
//! million short strings that are parsed and dropped at once (dates, enum values). [`with_str`]
//! hands the borrowed text to a parse function instead.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// Deserialize a string and pass it, borrowed, to `parse`; an `Err` from `parse` becomes a
/// deserialization error with its text.
///
/// ```
/// use serde::Deserialize;
/// struct Upper(String);
/// impl<'de> Deserialize<'de> for Upper {
///     fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
///         whish_core::runtime::with_str(d, "a string", |s| Ok::<_, String>(Upper(s.to_uppercase())))
///     }
/// }
/// let u: Upper = serde_json::from_str("\"usd\"").unwrap();
/// assert_eq!(u.0, "USD");
/// ```
///
/// # Errors
///
/// The (de)serializer's error when the value is not the expected text or number.
pub fn with_str<'de, D, T, E, F>(d: D, expecting: &'static str, parse: F) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    E: fmt::Display,
    F: FnOnce(&str) -> Result<T, E>,
{
    d.deserialize_str(StrVisitor {
        expecting,
        parse,
        _out: PhantomData,
    })
}

struct StrVisitor<F, T> {
    expecting: &'static str,
    parse: F,
    _out: PhantomData<fn() -> T>,
}

impl<'de, F, T, E> Visitor<'de> for StrVisitor<F, T>
where
    E: fmt::Display,
    F: FnOnce(&str) -> Result<T, E>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<Er: de::Error>(self, v: &str) -> Result<T, Er> {
        (self.parse)(v).map_err(Er::custom)
    }
}
