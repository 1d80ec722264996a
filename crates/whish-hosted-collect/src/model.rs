//! The collect service's data.

use serde::Deserialize;
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

/// `data` of the balance reply: `{"balance": ...}` as the spec documents it, or the older nested
/// `{"balanceDetails": {"balance": ...}}` seen in real replies. Both are read.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum BalanceData {
    Flat {
        balance: Amount,
    },
    Nested {
        #[serde(rename = "balanceDetails")]
        balance_details: NestedBalance,
    },
}

#[derive(Deserialize)]
pub(crate) struct NestedBalance {
    balance: Amount,
}

impl BalanceData {
    pub(crate) fn balance(self) -> Amount {
        match self {
            BalanceData::Flat { balance } => balance,
            BalanceData::Nested { balance_details } => balance_details.balance,
        }
    }
}

whish_core::open_enum! {
    /// `collectStatus`: where a payment link stands.
    pub CollectStatus {
        /// The link is still payable, including after a failed attempt. Not a failure.
        Pending => "pending",
        /// Paid; the link is now expired. Settled.
        Success => "success",
        /// The link expired without being paid. Settled.
        Failed => "failed",
        /// A successful payment was refunded.
        Refunded => "refunded",
        /// The final state could not be determined; ask again later or contact the operator.
        Unknown => "unknown",
    }
}

impl CollectStatus {
    /// Only `success` and `failed` are settled outcomes.
    pub fn is_settled(&self) -> bool {
        matches!(self, CollectStatus::Success | CollectStatus::Failed)
    }

    /// True only for `success`: the one state in which to fulfil the order.
    pub fn is_paid(&self) -> bool {
        matches!(self, CollectStatus::Success)
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
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Refund {
    /// The externalId of the refunded payment.
    pub external_id: ExternalId,
    /// True when this refund had already been processed (a duplicate request): nothing was
    /// refunded twice.
    pub retrieved: bool,
    /// The display message the answer carried, if any (usually none on success).
    pub dialog: Option<whish_core::Dialog>,
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
