//! The money-transfer service's data, with every documented field.

use serde::{Deserialize, Serialize};
use whish_core::{Amount, Currency, DateTime, EpochMillis, RequestId};

whish_core::open_enum! {
    /// `paymentMode`.
    pub PaymentMode {
        /// The receiver collects cash at a branch or partner agent with the LTN number.
        CashCollection => "CASH_COLLECTION",
        /// Funds go straight to the receiver's wallet; the create response is final.
        MobileWallet => "MOBILE_WALLET",
    }
}

whish_core::open_enum! {
    /// The status of a cash-collection transfer (status, cancel and callback).
    pub TransferStatus {
        /// Available for collection.
        Sent => "SENT",
        /// Collected by the receiver.
        Received => "RECEIVED",
        /// Fully cancelled (shown as `CANCELLED` in the activity log).
        CanceledFull => "CANCELED_FULL",
    }
}

whish_core::open_enum! {
    /// The status of an activity-log event.
    pub ActivityStatus {
        /// The transfer was sent.
        Sent => "SENT",
        /// The transfer was collected.
        Received => "RECEIVED",
        /// The transfer was cancelled (`CANCELED_FULL` elsewhere).
        Cancelled => "CANCELLED",
    }
}

impl ActivityStatus {
    /// The same state in the vocabulary of the status endpoint (`CANCELLED` is `CANCELED_FULL`).
    pub fn as_transfer_status(&self) -> TransferStatus {
        match self {
            ActivityStatus::Sent => TransferStatus::Sent,
            ActivityStatus::Received => TransferStatus::Received,
            ActivityStatus::Cancelled => TransferStatus::CanceledFull,
            ActivityStatus::Other(s) => TransferStatus::Other(s.clone()),
        }
    }
}

whish_core::open_enum! {
    /// The type of a statement line: an open set.
    pub StatementType {
        /// A send (credit = amount plus fee).
        Transfer => "TRANSFER",
        /// Account funding (debit).
        Topup => "TOPUP",
        /// Named by an earlier revision of the specification.
        Cancellation => "CANCELLATION",
    }
}

/// A fee quote.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FeeQuote {
    /// Fees in the sending currency.
    pub fees: Amount,
    /// Amount to be sent.
    pub amount: Amount,
    /// Amount plus fees.
    pub total_amount: Amount,
}

/// The data of a create response (mobile-wallet fields are `None` for cash collection).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendData {
    pub(crate) ltn_number: String,
    pub(crate) transfer_id: String,
    #[serde(default)]
    pub(crate) charges: Option<Amount>,
    #[serde(default)]
    pub(crate) collection_amount: Option<Amount>,
    #[serde(default)]
    pub(crate) balance: Option<Amount>,
    #[serde(default)]
    pub(crate) transaction_id: Option<i64>,
    #[serde(default)]
    pub(crate) currency: Option<String>,
}

/// The receiver's identity, populated once the receiver is identified (typically at collection).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReceiverIdentity {
    /// Identity number.
    #[serde(default)]
    pub number: Option<String>,
    /// Identity type.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// URL of the front image.
    #[serde(default)]
    pub front_image: Option<String>,
    /// URL of the back image.
    #[serde(default)]
    pub back_image: Option<String>,
}

/// The status of a transfer. The status endpoint is authoritative.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StatusResult {
    /// LTN number.
    pub ltn_number: Option<String>,
    /// Transfer reference.
    pub transfer_id: Option<String>,
    /// SENT, RECEIVED, CANCELED_FULL, or another value.
    pub status: TransferStatus,
    /// The receiver's identity, once identified.
    #[serde(default)]
    pub receiver_identity: Option<ReceiverIdentity>,
}

/// The result of a cancellation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Cancellation {
    /// LTN number.
    pub ltn_number: Option<String>,
    /// Transfer reference.
    pub transfer_id: Option<String>,
    /// CANCELED_FULL on success.
    pub status: TransferStatus,
    /// Always null for a cancellation.
    #[serde(default)]
    pub receiver_identity: Option<ReceiverIdentity>,
}

/// A country money can be sent from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SendingCountry {
    /// Country id (`fromCountry`).
    pub id: i64,
    /// Name.
    pub name: String,
    /// ISO code.
    pub code: String,
    /// Default currency id, or none.
    #[serde(default)]
    pub default_currency_id: Option<i64>,
    /// When the country was added, epoch milliseconds.
    #[serde(default)]
    pub date_creation: Option<EpochMillis>,
}

/// One event of the activity log. A cancelled transfer shows twice (SENT, then CANCELLED) with
/// the same id and requestId.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ActivityEntry {
    /// Transfer id.
    pub id: String,
    /// SENT, RECEIVED or CANCELLED.
    pub status: ActivityStatus,
    /// Transfer amount.
    pub amount: Amount,
    /// Fee.
    pub fee: Amount,
    /// Amount plus fee.
    pub total: Amount,
    /// Currency code.
    pub currency: String,
    /// When, `yyyy-MM-dd HH:mm:ss`.
    pub date: DateTime,
    /// The Request-id given at creation.
    #[serde(default)]
    pub request_id: Option<RequestId>,
}

/// One line of a statement.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StatementLine {
    /// Transaction id (may be empty for account funding; `null` reads as empty too).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub id: String,
    /// TRANSFER, TOPUP, or another value.
    #[serde(rename = "type")]
    pub kind: StatementType,
    /// Amount that raised the balance.
    pub debit: Amount,
    /// Amount that reduced the balance.
    pub credit: Amount,
    /// Balance after the line: previous + debit - credit.
    pub balance: Amount,
    /// Currency code (an unknown code is kept in `Currency::Other`).
    pub currency: Currency,
    /// When, `yyyy-MM-dd HH:mm:ss`.
    pub date: DateTime,
    /// The Request-id of the originating transfer; none for lines without one (TOPUP).
    #[serde(default)]
    pub request_id: Option<RequestId>,
}

/// The current balance of one currency.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[non_exhaustive]
pub struct CurrentBalance {
    /// Currency code (an unknown code is kept in `Currency::Other`).
    pub currency: Currency,
    /// Current balance.
    pub balance: Amount,
    /// As of, `yyyy-MM-dd HH:mm:ss`.
    pub date: DateTime,
}

/// The statement of one currency.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CurrencyStatement {
    /// The lines, oldest first.
    #[serde(default)]
    pub transactions: Vec<StatementLine>,
    /// The current balance.
    #[serde(default)]
    pub current_balance: Option<CurrentBalance>,
}

#[derive(Deserialize)]
pub(crate) struct ListData<T> {
    #[serde(default = "Vec::new")]
    pub(crate) list: Vec<T>,
}

/// `null` or a missing key reads as the empty string.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_enums_keep_unknown_values() {
        assert_eq!(
            TransferStatus::parse("ON_HOLD"),
            TransferStatus::Other("ON_HOLD".into())
        );
        assert_eq!(
            TransferStatus::parse("CANCELED_FULL"),
            TransferStatus::CanceledFull
        );
        assert_eq!(
            ActivityStatus::Cancelled.as_transfer_status(),
            TransferStatus::CanceledFull
        );
        assert_eq!(StatementType::parse("REVERSAL").as_str(), "REVERSAL");
        assert_eq!(PaymentMode::MobileWallet.to_string(), "MOBILE_WALLET");
    }
}
