//! Validation that fails before anything is sent.

use std::fmt;

/// What was wrong with a value the caller supplied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValidationKind {
    /// A required value is missing.
    Missing,
    /// The amount is zero or negative.
    NotPositive,
    /// The amount is below the currency's minimum.
    BelowMinimum {
        /// The minimum, as text.
        minimum: String,
    },
    /// The amount has more decimals than the currency allows.
    TooManyDecimals {
        /// How many decimals are allowed.
        allowed: u32,
    },
    /// The currency is not accepted by this operation.
    UnsupportedCurrency,
    /// A date could not be read in the documented format.
    BadDate {
        /// The format the service expects, e.g. `dd-MM-yyyy`.
        format: &'static str,
    },
    /// The date is later than today.
    DateInFuture,
    /// A name holds characters other than Latin letters, space, hyphen, apostrophe and dot.
    NotEnglish,
    /// A URL is not an `https` (or loopback `http`) address.
    InsecureUrl,
    /// A URL is not a public address the service can reach.
    NotPublicUrl {
        /// Why it is not public.
        reason: String,
    },
    /// The text is not a valid value for this field.
    Invalid {
        /// Why.
        reason: String,
    },
}

/// A request the SDK refused to send. `Display` is one line: the field as the service names it,
/// and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {kind}")]
#[non_exhaustive]
pub struct ValidationError {
    /// The field, as the service names it (`receiver.identity.dateBirth`).
    pub field: String,
    /// What was wrong with it.
    pub kind: ValidationKind,
}

impl ValidationError {
    /// A new validation error for `field`.
    pub fn new(field: impl Into<String>, kind: ValidationKind) -> Self {
        ValidationError {
            field: field.into(),
            kind,
        }
    }

    /// A field that is not valid, with a reason.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ValidationError::new(
            field,
            ValidationKind::Invalid {
                reason: reason.into(),
            },
        )
    }
}

impl fmt::Display for ValidationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValidationKind::Missing => f.write_str("is required"),
            ValidationKind::NotPositive => f.write_str("must be greater than zero"),
            ValidationKind::BelowMinimum { minimum } => {
                write!(f, "is below the minimum of {minimum}")
            }
            ValidationKind::TooManyDecimals { allowed: 0 } => f.write_str("must be a whole number"),
            ValidationKind::TooManyDecimals { allowed } => {
                write!(f, "has more than {allowed} decimals")
            }
            ValidationKind::UnsupportedCurrency => f.write_str("accepts only USD and LBP"),
            ValidationKind::BadDate { format } => {
                write!(f, "is not a real date in the format {format}")
            }
            ValidationKind::DateInFuture => f.write_str("is in the future"),
            ValidationKind::NotEnglish => f.write_str(
                "must be written in English (Latin letters, space, hyphen, apostrophe, dot)",
            ),
            ValidationKind::InsecureUrl => {
                f.write_str("must use https (plain http only for loopback hosts)")
            }
            ValidationKind::NotPublicUrl { reason } => {
                write!(f, "is not a public address: {reason}")
            }
            ValidationKind::Invalid { reason } => write!(f, "is invalid: {reason}"),
        }
    }
}
