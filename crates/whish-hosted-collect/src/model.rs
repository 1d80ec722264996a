//! The collect service's data.

use std::fmt;

use serde::{Deserialize, Deserializer};
use whish_core::{Amount, Currency, ExternalId};

/// The account balance in one currency.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CollectBalance {
    /// The real balance.
    pub balance: Amount,
    /// The currency asked for.
    pub currency: Currency,
}

#[derive(Deserialize)]
pub(crate) struct BalanceData {
    pub(crate) balance: Amount,
}

/// `collectStatus`: where a payment link stands.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CollectStatus {
    /// The link is still payable, including after a failed attempt. Not a failure.
    Pending,
    /// Paid; the link is now expired. Settled.
    Success,
    /// The link expired without being paid. Settled.
    Failed,
    /// A successful payment was refunded.
    Refunded,
    /// The final state could not be determined; ask again later or contact the operator.
    Unknown,
    /// A value the specification does not list, kept as sent.
    Other(String),
}

impl CollectStatus {
    /// The string as the service writes it.
    pub fn as_str(&self) -> &str {
        match self {
            CollectStatus::Pending => "pending",
            CollectStatus::Success => "success",
            CollectStatus::Failed => "failed",
            CollectStatus::Refunded => "refunded",
            CollectStatus::Unknown => "unknown",
            CollectStatus::Other(s) => s,
        }
    }

    /// Only `success` and `failed` are settled outcomes.
    pub fn is_settled(&self) -> bool {
        matches!(self, CollectStatus::Success | CollectStatus::Failed)
    }

    /// True only for `success`: the one state in which to fulfil the order.
    pub fn is_paid(&self) -> bool {
        matches!(self, CollectStatus::Success)
    }

    fn parse(s: &str) -> CollectStatus {
        match s {
            "pending" => CollectStatus::Pending,
            "success" => CollectStatus::Success,
            "failed" => CollectStatus::Failed,
            "refunded" => CollectStatus::Refunded,
            "unknown" => CollectStatus::Unknown,
            other => CollectStatus::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for CollectStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CollectStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whish_core::de::with_str(d, "a string", |s| {
            Ok::<_, std::convert::Infallible>(CollectStatus::parse(s))
        })
    }
}

impl serde::Serialize for CollectStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The status of a payment.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct PaymentStatus {
    /// Where the link stands.
    #[serde(rename = "collectStatus")]
    pub collect_status: CollectStatus,
    /// The phone number that paid; absent while pending.
    #[serde(rename = "payerPhoneNumber", default)]
    pub payer_phone_number: Option<String>,
}

impl PaymentStatus {
    /// See [`CollectStatus::is_settled`].
    pub fn is_settled(&self) -> bool {
        self.collect_status.is_settled()
    }
    /// See [`CollectStatus::is_paid`].
    pub fn is_paid(&self) -> bool {
        self.collect_status.is_paid()
    }
}

/// An accepted refund.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refund {
    /// The externalId of the refunded payment.
    pub external_id: ExternalId,
    /// True when this refund had already been processed (a duplicate request): nothing was
    /// refunded twice.
    pub retrieved: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        for (s, settled, paid) in [
            ("pending", false, false),
            ("success", true, true),
            ("failed", true, false),
            ("refunded", false, false),
            ("unknown", false, false),
            ("expired_soon", false, false),
        ] {
            let st: CollectStatus = serde_json::from_str(&format!("\"{s}\"")).expect("decodes");
            assert_eq!(st.as_str(), s);
            assert_eq!(st.is_settled(), settled, "{s}");
            assert_eq!(st.is_paid(), paid, "{s}");
        }
    }
}
