//! The top-up service's data.

use std::fmt;

use serde::Deserialize;
use serde_json::Value;
use whish_core::{Amount, Currency};

/// The account balance (`data.balanceDetails`), in the session's single currency.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Balance {
    /// The real balance of the account.
    pub balance: Amount,
    /// The value of voided items held for reuse on a future purchase of the same product.
    /// **Not cash**: it cannot be refunded or spent on anything else, and stays 0 for bills and
    /// airtime.
    #[serde(rename = "voidBalance")]
    pub void_balance: Amount,
}

#[derive(Deserialize)]
pub(crate) struct BalanceData {
    #[serde(rename = "balanceDetails")]
    pub(crate) balance_details: Balance,
}

/// What fetch returned: the normalized target and the options on offer.
///
/// Only [`TopupClient::fetch_options`](crate::TopupClient::fetch_options) produces it.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedOptions {
    pub(crate) provider: String,
    pub(crate) target: String,
    pub(crate) options: Vec<TopupOption>,
}

impl FetchedOptions {
    /// The provider code the options were fetched for.
    pub fn provider(&self) -> &str {
        &self.provider
    }
    /// The normalized target, as the service returned it.
    pub fn target(&self) -> &str {
        &self.target
    }
    /// The options, in the service's order.
    pub fn options(&self) -> &[TopupOption] {
        &self.options
    }
    /// The option with this id, if on offer.
    pub fn option(&self, id: &str) -> Option<&TopupOption> {
        self.options.iter().find(|o| o.id == id)
    }
}

/// A top-up provider's id (`etisalat-ae`, `du-ae`): its own type, so that it cannot be given
/// where the target (the number to top up) goes, in
/// [`TopupClient::fetch_options`](crate::TopupClient::fetch_options).
///
/// ```compile_fail
/// # async fn run(client: whish_intl_topup::TopupClient) {
/// // The target and the provider the wrong way round: does not compile.
/// let _ = client.fetch_options("971501234567", "du-ae").await;
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProviderId(String);

impl ProviderId {
    /// A provider id, as the service names it; checked (one path segment) when options are
    /// fetched.
    pub fn new(id: impl Into<String>) -> ProviderId {
        ProviderId(id.into())
    }

    /// The id as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One option on offer. It can only come from a fetch, which is what lets pay send its amount
/// exactly as the service gave it.
#[derive(Clone, PartialEq)]
pub struct TopupOption {
    pub(crate) provider: String,
    pub(crate) target: String,
    pub(crate) id: String,
    pub(crate) display_name: Option<String>,
    pub(crate) amount: Amount,
    /// The JSON number that carries `amount` back exactly, worked out once when the option is
    /// read (`None`: no number can); each pay of the option sends it.
    pub(crate) wire_amount: Option<serde_json::Number>,
    pub(crate) price: Option<Amount>,
    pub(crate) currency: Option<Currency>,
    pub(crate) metadata: Option<Value>,
}

/// The option as the service gave it (the number worked out for pay is not the service's).
impl std::fmt::Debug for TopupOption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopupOption")
            .field("provider", &self.provider)
            .field("target", &self.target)
            .field("id", &self.id)
            .field("display_name", &self.display_name)
            .field("amount", &self.amount)
            .field("price", &self.price)
            .field("currency", &self.currency)
            .field("metadata", &self.metadata)
            .finish()
    }
}

impl TopupOption {
    /// The option id (sent as `optionId`).
    pub fn id(&self) -> &str {
        &self.id
    }
    /// Display text for the customer. It mentions a price but is not always exact: show it,
    /// never parse it; the amount is [`amount`](Self::amount).
    pub fn display_name(&self) -> Option<&str> {
        self.display_name.as_deref()
    }
    /// The amount to pay, exactly as fetched; pay sends it back unchanged.
    pub fn amount(&self) -> Amount {
        self.amount
    }
    /// The option's price, in [`currency`](Self::currency).
    pub fn price(&self) -> Option<Amount> {
        self.price
    }
    /// The currency the option is priced in (AED in the examples).
    pub fn currency(&self) -> Option<&Currency> {
        self.currency.as_ref()
    }
    /// Provider-specific fields; their contents are not documented.
    pub fn metadata(&self) -> Option<&Value> {
        self.metadata.as_ref()
    }
    /// The provider this option was fetched from.
    pub fn provider(&self) -> &str {
        &self.provider
    }
    /// The target this option was fetched for.
    pub fn target(&self) -> &str {
        &self.target
    }
}

#[derive(Deserialize)]
pub(crate) struct FetchData {
    #[serde(default)]
    pub(crate) target: Option<String>,
    #[serde(default)]
    pub(crate) options: Vec<OptionWire>,
}

#[derive(Deserialize)]
pub(crate) struct OptionWire {
    pub(crate) id: String,
    #[serde(rename = "displayName", default)]
    pub(crate) display_name: Option<String>,
    pub(crate) amount: Amount,
    #[serde(default)]
    pub(crate) price: Option<Amount>,
    #[serde(default)]
    pub(crate) currency: Option<Currency>,
    #[serde(default)]
    pub(crate) metadata: Option<Value>,
}

/// A PIN or voucher secret sold to the customer. Its `Debug` never shows the value; call
/// [`expose`](Pin::expose) to hand it to the customer. It decodes from a JSON string or a JSON
/// number (the spec types it String; a number is kept as its digits), and a reply where it is
/// anything else fails to decode with an error that never quotes the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Pin(String);

impl<'de> Deserialize<'de> for Pin {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PinVisitor;
        impl serde::de::Visitor<'_> for PinVisitor {
            type Value = Pin;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a PIN as a string or a number")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Pin, E> {
                Ok(Pin(v.to_owned()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Pin, E> {
                Ok(Pin(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Pin, E> {
                Ok(Pin(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Pin, E> {
                // Digits beyond a double's precision are already lost: refuse rather than hand
                // the customer a wrong PIN, and say so without the value.
                Err(E::custom(
                    "a PIN sent as a number too large to keep exactly",
                ))
            }
        }
        d.deserialize_any(PinVisitor)
    }
}

/// `null` or a missing key reads as `false` (a reply that has already charged the account must
/// not fail over an unset flag).
fn null_as_false<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

impl Pin {
    /// The PIN itself, for showing to the customer who bought it. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Pin([REDACTED])")
    }
}

/// One sold item of a pay result (`data.listOfSoldItems[]`).
///
/// `amount` and `original_amount` are kept as the strings the service sent ("13.61 USD");
/// [`parsed_amount`](Self::parsed_amount) reads them on a best-effort basis.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SoldItem {
    /// Transaction identifier of this payment: store it.
    pub transaction_id: String,
    /// Target that was topped up.
    #[serde(default)]
    pub phone: Option<String>,
    /// Amount charged, a formatted string including the currency.
    #[serde(default)]
    pub amount: Option<String>,
    /// Amount before any adjustment, same format.
    #[serde(default)]
    pub original_amount: Option<String>,
    /// Fees when reported.
    #[serde(default)]
    pub fees: Option<String>,
    /// Provider service of the option.
    #[serde(default)]
    pub service: Option<String>,
    /// Option name sold.
    #[serde(default)]
    pub denomination: Option<String>,
    /// Serial, when the provider issues one (none for bundles).
    #[serde(default)]
    pub serial: Option<String>,
    /// PIN or secret, when issued (none for bundles). Redacted in `Debug`.
    #[serde(default)]
    pub secret: Option<Pin>,
    /// Display-formatted variant of the secret. Redacted in `Debug`.
    #[serde(default)]
    pub formatted_secret: Option<Pin>,
    /// Validity period, when reported.
    #[serde(default)]
    pub validity: Option<String>,
    /// Provider assistance text to show the customer.
    #[serde(default)]
    pub help: Option<String>,
    /// Expiry date `YYYY-MM-DD`, when applicable.
    #[serde(default)]
    pub expiry: Option<String>,
    /// Sale date `YYYY-MM-DD`.
    #[serde(default)]
    pub date: Option<String>,
    /// Sale time `HH:mm`.
    #[serde(default)]
    pub time: Option<String>,
    /// Artwork, when supplied (else empty).
    #[serde(default)]
    pub picture: Option<String>,
    /// Artwork address, when supplied (else empty).
    #[serde(default)]
    pub picture_url: Option<String>,
    /// True if the item was voided (set aside for reuse, not a refund). `null` reads as false.
    #[serde(default, deserialize_with = "null_as_false")]
    pub voided: bool,
    /// True if the item came from voided stock, drawing on the void balance. `null` reads as
    /// false.
    #[serde(default, deserialize_with = "null_as_false")]
    pub from_void: bool,
    /// Presentation code assigned by the operator.
    #[serde(default)]
    pub print_type: Option<i64>,
    /// Presentation code assigned by the operator.
    #[serde(default)]
    pub view_type: Option<i64>,
}

impl SoldItem {
    /// The transaction id.
    pub fn transaction_id(&self) -> &str {
        &self.transaction_id
    }
    /// The option name sold.
    pub fn denomination(&self) -> Option<&str> {
        self.denomination.as_deref()
    }
    /// The PIN, when one was issued.
    pub fn pin(&self) -> Option<&Pin> {
        self.secret.as_ref()
    }
    /// Best effort: the charged amount and currency read from [`amount`](Self::amount)
    /// ("13.61 USD" gives 13.61 and USD). `None` when the text has another shape.
    pub fn parsed_amount(&self) -> Option<(Amount, Option<Currency>)> {
        self.amount.as_deref().and_then(parse_money_text)
    }
    /// Best effort, as [`parsed_amount`](Self::parsed_amount), for `originalAmount`.
    pub fn parsed_original_amount(&self) -> Option<(Amount, Option<Currency>)> {
        self.original_amount.as_deref().and_then(parse_money_text)
    }
}

/// Read "13.61 USD", "USD 13.61", "13.61" or "1,250.50 AED".
pub(crate) fn parse_money_text(text: &str) -> Option<(Amount, Option<Currency>)> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let is_code = |s: &str| s.len() == 3 && s.chars().all(|c| c.is_ascii_alphabetic());
    let (number, code) = match parts.as_slice() {
        [n] => (*n, None),
        [n, c] if is_code(c) => (*n, Some(*c)),
        [c, n] if is_code(c) => (*n, Some(*c)),
        _ => return None,
    };
    let amount = Amount::parse(&number.replace(',', "")).ok()?;
    Some((
        amount,
        code.map(|c| Currency::from_code(&c.to_ascii_uppercase())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_text() {
        let (a, c) = parse_money_text("13.61 USD").expect("ok");
        assert_eq!(a.to_string(), "13.61");
        assert_eq!(c, Some(Currency::Usd));
        let (a, c) = parse_money_text("AED 1,250.50").expect("ok");
        assert_eq!(a.to_string(), "1250.5");
        assert_eq!(c, Some(Currency::Other("AED".into())));
        assert_eq!(parse_money_text("12").map(|x| x.1), Some(None));
        assert!(parse_money_text("about twelve dollars").is_none());
        assert!(parse_money_text("").is_none());
    }
}
