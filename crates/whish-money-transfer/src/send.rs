//! Building a send: customers, the two payment modes, and the prepared request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use whish_core::transport::Bytes;
use whish_core::{
    Amount, CallbackAddresses, Currency, DayMonthYear, Dialog, RequestId, ValidationError,
    ValidationKind, dates::today_utc,
};

use crate::code::TransferCode;
use crate::model::{PaymentMode, StatusResult};
use crate::reference::{Reason, SourceOfFunds};

/// The receiving country: always Lebanon, id 1.
pub const LEBANON: i64 = 1;

/// A sender or receiver. Names must be in English (Latin letters, space, hyphen, apostrophe,
/// dot); this is checked when the send is prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Customer {
    first_name: String,
    middle_name: Option<String>,
    last_name: String,
    phone: String,
    extra_information: Option<String>,
    nationality: Option<String>,
    date_birth: Option<String>,
}

impl Customer {
    /// A customer with the required fields.
    pub fn new(
        first_name: impl Into<String>,
        last_name: impl Into<String>,
        phone: impl Into<String>,
    ) -> Customer {
        Customer {
            first_name: first_name.into(),
            middle_name: None,
            last_name: last_name.into(),
            phone: phone.into(),
            extra_information: None,
            nationality: None,
            date_birth: None,
        }
    }
    /// Middle name (in English).
    pub fn middle_name(mut self, v: impl Into<String>) -> Self {
        self.middle_name = Some(v.into());
        self
    }
    /// Free text.
    pub fn extra_information(mut self, v: impl Into<String>) -> Self {
        self.extra_information = Some(v.into());
        self
    }
    /// `identity.nationality`.
    pub fn nationality(mut self, v: impl Into<String>) -> Self {
        self.nationality = Some(v.into());
        self
    }
    /// `identity.dateBirth`, `dd-MM-yyyy`: optional for the sender and for a mobile-wallet
    /// receiver. A cash-collection receiver's date of birth is a parameter of
    /// [`CashCollectionSend::new`] instead, so it cannot be forgotten.
    pub fn date_birth(mut self, v: impl Into<String>) -> Self {
        self.date_birth = Some(v.into());
        self
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CustomerWire<'a> {
    first_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    middle_name: Option<&'a str>,
    last_name: &'a str,
    phone: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_information: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<IdentityWire<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IdentityWire<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    nationality: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    date_birth: Option<String>,
}

/// True when `name` is written in English: Latin letters, space, hyphen, apostrophe, dot, with
/// at least one letter.
pub fn is_english_name(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, ' ' | '-' | '\'' | '.'))
}

fn check_name(value: &str, field: String) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        return Err(ValidationError::new(field, ValidationKind::Missing));
    }
    if !is_english_name(value.trim()) {
        return Err(ValidationError::new(field, ValidationKind::NotEnglish));
    }
    Ok(())
}

impl Customer {
    fn wire(&self, role: &str, birth_required: bool) -> Result<CustomerWire<'_>, ValidationError> {
        check_name(&self.first_name, format!("{role}.firstName"))?;
        check_name(&self.last_name, format!("{role}.lastName"))?;
        if let Some(m) = self.middle_name.as_deref().filter(|m| !m.trim().is_empty()) {
            check_name(m, format!("{role}.middleName"))?;
        }
        if self.phone.trim().is_empty() {
            return Err(ValidationError::new(
                format!("{role}.phone"),
                ValidationKind::Missing,
            ));
        }
        let field = format!("{role}.identity.dateBirth");
        let date_birth = match self.date_birth.as_deref() {
            Some(d) => Some(DayMonthYear::parse_birth_date(d, &field, today_utc())?.to_string()),
            None if birth_required => {
                return Err(ValidationError::new(field, ValidationKind::Missing));
            }
            None => None,
        };
        let identity =
            (self.nationality.is_some() || date_birth.is_some()).then_some(IdentityWire {
                nationality: self.nationality.as_deref(),
                date_birth,
            });
        Ok(CustomerWire {
            first_name: self.first_name.trim(),
            middle_name: self
                .middle_name
                .as_deref()
                .map(str::trim)
                .filter(|m| !m.is_empty()),
            last_name: self.last_name.trim(),
            phone: self.phone.trim(),
            extra_information: self.extra_information.as_deref(),
            identity,
        })
    }
}

/// What every send needs, whatever the mode.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Common {
    from_country: i64,
    currency: Currency,
    amount: Amount,
    sender: Customer,
    receiver: Customer,
    reason: Reason,
    source_of_funds: SourceOfFunds,
    deduct_fees: bool,
}

/// A cash-collection send: the receiver collects cash with the LTN number. The receiver's date
/// of birth is required by construction; a callback address is optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CashCollectionSend {
    common: Common,
    callback_url: Option<String>,
}

impl CashCollectionSend {
    /// A cash-collection send of `amount` in `currency` (USD or LBP) from `from_country` to
    /// Lebanon. `receiver_date_birth` is `dd-MM-yyyy`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        from_country: i64,
        currency: Currency,
        amount: Amount,
        sender: Customer,
        receiver: Customer,
        receiver_date_birth: impl Into<String>,
        reason: Reason,
        source_of_funds: SourceOfFunds,
    ) -> CashCollectionSend {
        CashCollectionSend {
            common: Common {
                from_country,
                currency,
                amount,
                sender,
                receiver: receiver.date_birth(receiver_date_birth),
                reason,
                source_of_funds,
                deduct_fees: false,
            },
            callback_url: None,
        }
    }

    /// Take the fee out of the amount (the receiver collects less) instead of on top.
    pub fn deduct_fees(mut self, yes: bool) -> Self {
        self.common.deduct_fees = yes;
        self
    }

    /// The address the service POSTs to when the receiver collects. It must be a public address.
    pub fn callback_url(mut self, url: impl Into<String>) -> Self {
        self.callback_url = Some(url.into());
        self
    }
}

/// A mobile-wallet send: funds go straight to the receiver's wallet and the create response is
/// final. There is no callback and no cancellation, so this type has no `callback_url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MobileWalletSend {
    common: Common,
}

impl MobileWalletSend {
    /// A mobile-wallet send of `amount` in `currency` (USD or LBP); `receiver.phone` is the wallet.
    pub fn new(
        from_country: i64,
        currency: Currency,
        amount: Amount,
        sender: Customer,
        receiver: Customer,
        reason: Reason,
        source_of_funds: SourceOfFunds,
    ) -> MobileWalletSend {
        MobileWalletSend {
            common: Common {
                from_country,
                currency,
                amount,
                sender,
                receiver,
                reason,
                source_of_funds,
                deduct_fees: false,
            },
        }
    }

    /// Take the fee out of the amount instead of on top.
    pub fn deduct_fees(mut self, yes: bool) -> Self {
        self.common.deduct_fees = yes;
        self
    }
}

/// A send in either mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendRequest {
    /// Cash collection.
    CashCollection(CashCollectionSend),
    /// Mobile wallet.
    MobileWallet(MobileWalletSend),
}

impl From<CashCollectionSend> for SendRequest {
    fn from(v: CashCollectionSend) -> Self {
        SendRequest::CashCollection(v)
    }
}

impl From<MobileWalletSend> for SendRequest {
    fn from(v: MobileWalletSend) -> Self {
        SendRequest::MobileWallet(v)
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SendWire<'a> {
    payment_mode: &'a PaymentMode,
    from_country: i64,
    to_country: i64,
    currency_id: i64,
    amount: Amount,
    sender: CustomerWire<'a>,
    receiver: CustomerWire<'a>,
    deduct_fees: bool,
    reason: Reason,
    source_of_funds: SourceOfFunds,
    #[serde(skip_serializing_if = "Option::is_none")]
    callback_url: Option<&'a str>,
}

pub(crate) fn check_common_money(
    from_country: i64,
    currency: &Currency,
    amount: Amount,
) -> Result<i64, ValidationError> {
    if from_country <= 0 {
        return Err(ValidationError::invalid(
            "fromCountry",
            "must be a country id from the sending countries",
        ));
    }
    currency.require_usd_or_lbp("currencyId")?;
    amount.check_rules(currency, "amount")?;
    currency
        .id()
        .ok_or_else(|| ValidationError::new("currencyId", ValidationKind::UnsupportedCurrency))
}

impl SendRequest {
    /// The payment mode.
    pub fn payment_mode(&self) -> PaymentMode {
        match self {
            SendRequest::CashCollection(_) => PaymentMode::CashCollection,
            SendRequest::MobileWallet(_) => PaymentMode::MobileWallet,
        }
    }

    pub(crate) fn to_body(&self, callbacks: CallbackAddresses) -> Result<Vec<u8>, ValidationError> {
        let (common, callback_url, cash) = match self {
            SendRequest::CashCollection(c) => (&c.common, c.callback_url.as_deref(), true),
            SendRequest::MobileWallet(m) => (&m.common, None, false),
        };
        let currency_id = check_common_money(common.from_country, &common.currency, common.amount)?;
        let sender = common.sender.wire("sender", false)?;
        let receiver = common.receiver.wire("receiver", cash)?;
        let callback_url = match callback_url.map(str::trim) {
            Some(u) => Some(callbacks.check(u, "callbackUrl").map(|_| u)?),
            None => None,
        };
        let mode = self.payment_mode();
        serde_json::to_vec(&SendWire {
            payment_mode: &mode,
            from_country: common.from_country,
            to_country: LEBANON,
            currency_id,
            amount: common.amount,
            sender,
            receiver,
            deduct_fees: common.deduct_fees,
            reason: common.reason,
            source_of_funds: common.source_of_funds,
            callback_url,
        })
        .map_err(|e| ValidationError::invalid("amount", e.to_string()))
    }
}

/// A checked send with its Request-id fixed and its body serialized once. **Store
/// [`request_id`](Self::request_id) before sending**: it identifies the transfer in status,
/// activity, statement and callbacks, and it is what makes a resend safe.
#[derive(Debug, Clone)]
pub struct PreparedTransfer {
    pub(crate) request_id: RequestId,
    pub(crate) payment_mode: PaymentMode,
    pub(crate) body: Bytes,
    /// Set once an earlier send of this transfer may have reached the service.
    pub(crate) may_have_arrived: Arc<AtomicBool>,
}

impl PreparedTransfer {
    pub(crate) fn new(
        request: &SendRequest,
        request_id: RequestId,
        callbacks: CallbackAddresses,
    ) -> Result<Self, ValidationError> {
        Ok(PreparedTransfer {
            request_id,
            payment_mode: request.payment_mode(),
            body: Bytes::from(request.to_body(callbacks)?),
            may_have_arrived: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The Request-id. Store it before sending.
    pub fn request_id(&self) -> RequestId {
        self.request_id
    }

    /// The payment mode.
    pub fn payment_mode(&self) -> &PaymentMode {
        &self.payment_mode
    }

    /// The exact JSON body every send of this transfer carries.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    pub(crate) fn mark_may_have_arrived(&self) {
        self.may_have_arrived.store(true, Ordering::SeqCst);
    }

    pub(crate) fn may_have_arrived(&self) -> bool {
        self.may_have_arrived.load(Ordering::SeqCst)
    }
}

impl PartialEq for PreparedTransfer {
    fn eq(&self, other: &Self) -> bool {
        self.request_id == other.request_id && self.body == other.body
    }
}

/// A cash-collection transfer that was created.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CashSent {
    /// The number the receiver uses to collect.
    pub ltn_number: String,
    /// Transfer reference.
    pub transfer_id: String,
    /// Fees applied.
    pub charges: Option<Amount>,
    /// The Request-id of the send.
    pub request_id: RequestId,
}

/// A mobile-wallet transfer that was credited.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WalletCredited {
    /// Reference only; nothing to collect.
    pub ltn_number: String,
    /// Transfer reference.
    pub transfer_id: String,
    /// Fees applied.
    pub charges: Option<Amount>,
    /// Amount credited to the receiver's wallet.
    pub collection_amount: Option<Amount>,
    /// Your account balance after the send.
    pub balance: Option<Amount>,
    /// The wallet transaction id (distinct from the transfer id; may exceed 2^53).
    pub transaction_id: Option<i64>,
    /// Currency of the credited amount; may be absent.
    pub currency: Option<String>,
    /// The informational dialog of the success reply.
    pub dialog: Option<Dialog>,
    /// The Request-id of the send.
    pub request_id: RequestId,
}

/// What a send produced.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SendOutcome {
    /// Cash collection created: status SENT, give the LTN number to the receiver.
    Sent(CashSent),
    /// Mobile wallet credited: final.
    Credited(WalletCredited),
    /// A resend answered `transfer.already.done`: the transfer exists, and this is its state as
    /// read from the status endpoint with the Request-id.
    Confirmed {
        /// The Request-id.
        request_id: RequestId,
        /// The authoritative state.
        status: StatusResult,
    },
    /// Code 500: the outcome is unknown, **not failed**. Keep the Request-id; resend the same
    /// [`PreparedTransfer`] later (never a new one), then confirm with status.
    Pending {
        /// The Request-id to reconcile with.
        request_id: RequestId,
        /// The service's message.
        dialog: Option<Dialog>,
    },
    /// A failure code: final, nothing was created (a new attempt needs a new Request-id).
    Failed {
        /// The code.
        code: TransferCode,
        /// The code as sent.
        raw: String,
        /// The service's message.
        dialog: Option<Dialog>,
        /// The Request-id.
        request_id: RequestId,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_names() {
        for ok in ["John", "Mary-Jane", "O'Neil", "J. R. R.", "de la Cruz"] {
            assert!(is_english_name(ok), "{ok}");
        }
        for bad in ["", "  ", "محمد", "José", "Anna2", "x_y", "--", "Zoë"] {
            assert!(!is_english_name(bad), "{bad}");
        }
    }
}
