//! Building a send: customers, the two payment modes, and the prepared request.

use serde::Serialize;
use whish_core::runtime::Bytes;
use whish_core::{
    Amount, CallbackAddresses, Currency, DayMonthYear, Dialog, RequestId, ValidationError,
    ValidationKind, runtime::today_utc, verdict::DeliveryMark,
};

use crate::client::FeeRequest;
use crate::model::{PaymentMode, StatusResult};
use crate::reference::{Reason, SourceOfFunds};

/// The receiving country: always Lebanon, id 1.
pub const LEBANON: CountryId = CountryId(1);

/// A country id of the service (`fromCountry`, `toCountry`): a positive number from the sending
/// countries list ([`TransferClient::sending_countries`](crate::TransferClient::sending_countries)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct CountryId(i64);

impl CountryId {
    /// Lebanon, id 1: the receiving country, and in the sandbox the one sending country enabled.
    pub const LEBANON: CountryId = LEBANON;

    /// A country id; it must be positive.
    ///
    /// ```
    /// use whish_money_transfer::CountryId;
    /// assert_eq!(CountryId::new(1).unwrap(), CountryId::LEBANON);
    /// assert!(CountryId::new(0).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn new(id: i64) -> Result<CountryId, ValidationError> {
        if id <= 0 {
            return Err(ValidationError::invalid(
                "fromCountry",
                "must be a country id from the sending countries",
            ));
        }
        Ok(CountryId(id))
    }

    /// The number.
    pub fn get(self) -> i64 {
        self.0
    }
}

impl std::fmt::Display for CountryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A date of birth (`identity.dateBirth`): a real `dd-MM-yyyy` date, not in the future, checked
/// when it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DateOfBirth(DayMonthYear);

impl DateOfBirth {
    /// Read `dd-MM-yyyy` (`07-03-1990`); `31-02-1990` and a date after today are refused.
    ///
    /// ```
    /// use whish_money_transfer::DateOfBirth;
    /// assert_eq!(DateOfBirth::parse("07-03-1990").unwrap().to_string(), "07-03-1990");
    /// assert!(DateOfBirth::parse("1990-03-07").is_err());
    /// assert!(DateOfBirth::parse("31-02-1990").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn parse(text: &str) -> Result<DateOfBirth, ValidationError> {
        DayMonthYear::parse_birth_date(text, "identity.dateBirth", today_utc()).map(DateOfBirth)
    }

    /// A date of birth from a calendar date; it must not be after today.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn from_date(date: time::Date) -> Result<DateOfBirth, ValidationError> {
        if date > today_utc() {
            return Err(ValidationError::new(
                "identity.dateBirth",
                ValidationKind::DateInFuture,
            ));
        }
        Ok(DateOfBirth(DayMonthYear(date)))
    }

    /// The calendar date.
    pub fn date(self) -> time::Date {
        self.0.0
    }
}

impl std::fmt::Display for DateOfBirth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for DateOfBirth {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DateOfBirth::parse(s)
    }
}

/// `identity`: a date of birth, and optionally a nationality. The service checks
/// `dateBirth` whenever an identity is sent (`*.customer.date_of_birth_invalid` when it is
/// missing), so an identity cannot be built without one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    date_of_birth: DateOfBirth,
    nationality: Option<String>,
}

impl Identity {
    /// An identity with its date of birth.
    pub fn new(date_of_birth: DateOfBirth) -> Identity {
        Identity {
            date_of_birth,
            nationality: None,
        }
    }

    /// `identity.nationality`.
    pub fn nationality(mut self, nationality: impl Into<String>) -> Self {
        self.nationality = Some(nationality.into());
        self
    }
}

/// A first name (given name), in English. Its own type so that it cannot be swapped with the
/// [`LastName`] in [`Customer::new`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FirstName(String);

impl FirstName {
    /// A first name; checked (present, in English) when the send is prepared.
    pub fn new(name: impl Into<String>) -> FirstName {
        FirstName(name.into())
    }
    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A last name (family name), in English. Its own type so that it cannot be swapped with the
/// [`FirstName`] in [`Customer::new`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LastName(String);

impl LastName {
    /// A last name; checked (present, in English) when the send is prepared.
    pub fn new(name: impl Into<String>) -> LastName {
        LastName(name.into())
    }
    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A person: first name, last name and phone are required; names must be in English (checked
/// when the send is prepared). Used as the [`Sender`] or inside a receiver.
///
/// The names have their own types, so they cannot be given the wrong way round:
///
/// ```
/// use whish_money_transfer::{Customer, FirstName, LastName};
/// let c = Customer::new(FirstName::new("John"), LastName::new("Smith"), "+14155550100");
/// # let _ = c;
/// ```
///
/// ```compile_fail
/// use whish_money_transfer::{Customer, FirstName, LastName};
/// // The last name where the first is expected: does not compile.
/// let c = Customer::new(LastName::new("Smith"), FirstName::new("John"), "+14155550100");
/// ```
///
/// ```compile_fail
/// use whish_money_transfer::Customer;
/// // Bare strings: does not compile either.
/// let c = Customer::new("John", "Smith", "+14155550100");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Customer {
    first_name: String,
    middle_name: Option<String>,
    last_name: String,
    phone: String,
    extra_information: Option<String>,
    identity: Option<Identity>,
}

impl Customer {
    /// A customer with the required fields: the names as [`FirstName`] and [`LastName`], and
    /// the phone in international form (`+14155550100`).
    pub fn new(first_name: FirstName, last_name: LastName, phone: impl Into<String>) -> Customer {
        Customer {
            first_name: first_name.0,
            middle_name: None,
            last_name: last_name.0,
            phone: phone.into(),
            extra_information: None,
            identity: None,
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
    /// `identity`: optional for the sender and for a mobile-wallet receiver. A cash-collection
    /// receiver's identity is a parameter of [`CashReceiver::new`] instead, so it cannot be
    /// forgotten.
    pub fn identity(mut self, identity: Identity) -> Self {
        self.identity = Some(identity);
        self
    }
}

/// The sender of a transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender(Customer);

impl Sender {
    /// This customer as the sender.
    pub fn new(customer: Customer) -> Sender {
        Sender(customer)
    }
}

impl From<Customer> for Sender {
    fn from(c: Customer) -> Self {
        Sender(c)
    }
}

/// The receiver of a cash-collection transfer: the identity, with its date of birth, is required.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CashReceiver(Customer);

impl CashReceiver {
    /// This customer, with this identity, as the receiver who collects the cash.
    pub fn new(customer: Customer, identity: Identity) -> CashReceiver {
        CashReceiver(customer.identity(identity))
    }
}

/// The receiver of a mobile-wallet transfer: `phone` is the wallet; the identity is optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletReceiver(Customer);

impl WalletReceiver {
    /// This customer as the wallet holder.
    pub fn new(customer: Customer) -> WalletReceiver {
        WalletReceiver(customer)
    }
}

impl From<Customer> for WalletReceiver {
    fn from(c: Customer) -> Self {
        WalletReceiver(c)
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
    date_birth: String,
}

/// True when `name` is written in English: Latin letters, space, hyphen, apostrophe, dot, with
/// at least one letter.
pub fn is_english_name(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, ' ' | '-' | '\'' | '.'))
}

/// Check the name in `role`'s `field` (`sender`, `firstName`); the field's path is built only
/// for an error (a send checks six names).
fn check_name(value: &str, role: &str, field: &str) -> Result<(), ValidationError> {
    let kind = if value.trim().is_empty() {
        ValidationKind::Missing
    } else if !is_english_name(value.trim()) {
        ValidationKind::NotEnglish
    } else {
        return Ok(());
    };
    Err(ValidationError::new(format!("{role}.{field}"), kind))
}

impl Customer {
    fn wire(&self, role: &str) -> Result<CustomerWire<'_>, ValidationError> {
        check_name(&self.first_name, role, "firstName")?;
        check_name(&self.last_name, role, "lastName")?;
        if let Some(m) = self.middle_name.as_deref().filter(|m| !m.trim().is_empty()) {
            check_name(m, role, "middleName")?;
        }
        if self.phone.trim().is_empty() {
            return Err(ValidationError::new(
                format!("{role}.phone"),
                ValidationKind::Missing,
            ));
        }
        let identity = self.identity.as_ref().map(|i| IdentityWire {
            nationality: i
                .nationality
                .as_deref()
                .map(str::trim)
                .filter(|n| !n.is_empty()),
            date_birth: i.date_of_birth.to_string(),
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
    from_country: CountryId,
    currency: Currency,
    amount: Amount,
    sender: Customer,
    receiver: Customer,
    reason: Reason,
    source_of_funds: SourceOfFunds,
    deduct_fees: bool,
    request_id: Option<RequestId>,
}

/// A cash-collection send: the receiver collects cash with the LTN number. The receiver's
/// identity (with a date of birth) is required by construction; a callback address is optional.
///
/// # Examples
///
/// ```
/// use whish_core::{Amount, Currency};
/// use whish_money_transfer::{
///     CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
///     LastName, Reason, Sender, SourceOfFunds,
/// };
///
/// let receiver = CashReceiver::new(
///     Customer::new(FirstName::new("Rami"), LastName::new("Haddad"), "+96170123456"),
///     Identity::new(DateOfBirth::parse("07-03-1990")?),
/// );
/// let send = CashCollectionSend::new(
///     CountryId::LEBANON,
///     Currency::Usd,
///     "100".parse::<Amount>()?,
///     Sender::new(Customer::new(FirstName::new("John"), LastName::new("Smith"), "+14155550100")),
///     receiver,
///     Reason::FamilySupport,
///     SourceOfFunds::Salary,
/// )
/// .callback_url("https://shop.example.com/whish/collected");
/// # let _ = send;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a send does nothing until it is prepared and sent"]
pub struct CashCollectionSend {
    common: Common,
    callback_url: Option<String>,
}

impl CashCollectionSend {
    /// A cash-collection send of `amount` in `currency` (USD or LBP) from `from_country` to
    /// Lebanon. Every argument has its own type, so none can be swapped with another.
    pub fn new(
        from_country: CountryId,
        currency: Currency,
        amount: Amount,
        sender: Sender,
        receiver: CashReceiver,
        reason: Reason,
        source_of_funds: SourceOfFunds,
    ) -> CashCollectionSend {
        CashCollectionSend {
            common: Common {
                from_country,
                currency,
                amount,
                sender: sender.0,
                receiver: receiver.0,
                reason,
                source_of_funds,
                deduct_fees: false,
                request_id: None,
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

    /// Use your own numeric reference as the Request-id (a new transfer needs a new one). One is
    /// generated when you give none.
    pub fn request_id(mut self, id: RequestId) -> Self {
        self.common.request_id = Some(id);
        self
    }
}

/// A mobile-wallet send: funds go straight to the receiver's wallet and the create response is
/// final. There is no callback and no cancellation, so this type has no `callback_url`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a send does nothing until it is prepared and sent"]
pub struct MobileWalletSend {
    common: Common,
}

impl MobileWalletSend {
    /// A mobile-wallet send of `amount` in `currency` (USD or LBP) to the receiver's wallet.
    pub fn new(
        from_country: CountryId,
        currency: Currency,
        amount: Amount,
        sender: Sender,
        receiver: WalletReceiver,
        reason: Reason,
        source_of_funds: SourceOfFunds,
    ) -> MobileWalletSend {
        MobileWalletSend {
            common: Common {
                from_country,
                currency,
                amount,
                sender: sender.0,
                receiver: receiver.0,
                reason,
                source_of_funds,
                deduct_fees: false,
                request_id: None,
            },
        }
    }

    /// Take the fee out of the amount instead of on top.
    pub fn deduct_fees(mut self, yes: bool) -> Self {
        self.common.deduct_fees = yes;
        self
    }

    /// Use your own numeric reference as the Request-id (a new transfer needs a new one).
    pub fn request_id(mut self, id: RequestId) -> Self {
        self.common.request_id = Some(id);
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
    from_country: CountryId,
    to_country: CountryId,
    currency_id: i64,
    amount: Amount,
    sender: CustomerWire<'a>,
    receiver: CustomerWire<'a>,
    deduct_fees: bool,
    reason: Reason,
    source_of_funds: SourceOfFunds,
    #[serde(skip_serializing_if = "Option::is_none")]
    callback_url: Option<String>,
}

pub(crate) fn check_common_money(
    currency: &Currency,
    amount: Amount,
) -> Result<i64, ValidationError> {
    currency.require_usd_or_lbp("currencyId")?;
    // No minimum: the transfer spec leaves amounts to the price list.
    amount.check_precision(currency, "amount")?;
    currency
        .id()
        .ok_or_else(|| ValidationError::new("currencyId", ValidationKind::UnsupportedCurrency))
}

impl SendRequest {
    /// Use your own numeric reference as the Request-id (a new transfer needs a new one).
    pub fn request_id(self, id: RequestId) -> Self {
        match self {
            SendRequest::CashCollection(c) => SendRequest::CashCollection(c.request_id(id)),
            SendRequest::MobileWallet(m) => SendRequest::MobileWallet(m.request_id(id)),
        }
    }

    /// The payment mode.
    pub fn payment_mode(&self) -> PaymentMode {
        match self {
            SendRequest::CashCollection(_) => PaymentMode::CashCollection,
            SendRequest::MobileWallet(_) => PaymentMode::MobileWallet,
        }
    }

    fn common(&self) -> &Common {
        match self {
            SendRequest::CashCollection(c) => &c.common,
            SendRequest::MobileWallet(m) => &m.common,
        }
    }

    /// The fee quote of exactly this send: its sending country, currency, amount, payment mode
    /// and fee deduction (and, for a wallet, the receiver's phone). The service's rule is to
    /// send the amount and currency that were quoted; quoting with this request keeps it by
    /// construction.
    ///
    /// ```no_run
    /// # async fn run(client: whish_money_transfer::TransferClient,
    /// #              send: whish_money_transfer::SendRequest) -> Result<(), whish_money_transfer::Error> {
    /// let quote = client.fees(&send.fee_request()).await?;
    /// println!("the customer pays {} in all", quote.total_amount);
    /// # Ok(()) }
    /// ```
    pub fn fee_request(&self) -> FeeRequest {
        let c = self.common();
        let quote = FeeRequest::new(c.from_country, c.currency.clone(), c.amount)
            .payment_mode(self.payment_mode())
            .deduct_fees(c.deduct_fees);
        match self {
            SendRequest::MobileWallet(_) => quote.phone_number(c.receiver.phone.clone()),
            SendRequest::CashCollection(_) => quote,
        }
    }

    /// Check this send against the quote the customer was shown: the same amount (as money:
    /// `100` and `100.00` are one amount), currency, sending country, payment mode and fee
    /// deduction. Nothing is sent.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the first field that differs from the quote.
    pub fn check_quoted(&self, quoted: &FeeRequest) -> Result<(), ValidationError> {
        let own = self.fee_request();
        let differs = |field: &'static str, quoted: String| {
            Err(ValidationError::invalid(
                field,
                format!("differs from the quote ({quoted}): send what was quoted, or quote again"),
            ))
        };
        if own.currency != quoted.currency {
            return differs("currencyId", quoted.currency.to_string());
        }
        if own.amount != quoted.amount {
            return differs("amount", quoted.amount.to_string());
        }
        if own.from_country != quoted.from_country {
            return differs("fromCountry", quoted.from_country.get().to_string());
        }
        if own.payment_mode != quoted.payment_mode {
            return differs("paymentMode", quoted.payment_mode.to_string());
        }
        if own.deduct_fees != quoted.deduct_fees {
            return differs("deductFees", quoted.deduct_fees.to_string());
        }
        Ok(())
    }

    pub(crate) fn to_body(&self, callbacks: CallbackAddresses) -> Result<Vec<u8>, ValidationError> {
        let (common, callback_url, cash) = match self {
            SendRequest::CashCollection(c) => (&c.common, c.callback_url.as_deref(), true),
            SendRequest::MobileWallet(m) => (&m.common, None, false),
        };
        let currency_id = check_common_money(&common.currency, common.amount)?;
        let sender = common.sender.wire("sender")?;
        let receiver = common.receiver.wire("receiver")?;
        if cash && common.receiver.identity.is_none() {
            // Unreachable through CashReceiver; kept so the rule lives next to the wire shape.
            return Err(ValidationError::new(
                "receiver.identity.dateBirth",
                ValidationKind::Missing,
            ));
        }
        // What goes out is the parsed URL's own serialization: exactly what was checked.
        let callback_url = match callback_url {
            Some(u) => Some(callbacks.check(u, "callbackUrl")?.to_string()),
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
#[must_use = "a prepared transfer does nothing until it is sent"]
pub struct PreparedTransfer {
    pub(crate) request_id: RequestId,
    pub(crate) payment_mode: PaymentMode,
    pub(crate) body: Bytes,
    /// Set before the first byte of a send leaves; kept while the transfer may exist.
    pub(crate) delivery: DeliveryMark,
    /// The amount and currency the body carries, and whether the fee is deducted from the
    /// amount: what a confirmation is checked against.
    pub(crate) money: Option<Money>,
}

/// What a send moves, as its body says: checked against the activity log before a status
/// read by Request-id is taken as this send's outcome.
#[derive(Debug, Clone)]
pub(crate) struct Money {
    /// The amount sent.
    pub amount: Amount,
    /// Its currency.
    pub currency: Currency,
    /// The fee is taken out of the amount: the log's `amount` is then what the receiver
    /// collects, and its `total` the amount sent.
    pub deduct_fees: bool,
}

/// The money of a stored send body.
fn money_of(body: &[u8]) -> Option<Money> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Stored {
        amount: Amount,
        currency_id: i64,
        #[serde(default)]
        deduct_fees: bool,
    }
    let m = serde_json::from_slice::<Stored>(body).ok()?;
    Some(Money {
        amount: m.amount,
        currency: Currency::from_id(m.currency_id)?,
        deduct_fees: m.deduct_fees,
    })
}

impl PreparedTransfer {
    pub(crate) fn new(
        request: &SendRequest,
        callbacks: CallbackAddresses,
    ) -> Result<Self, ValidationError> {
        let common = match request {
            SendRequest::CashCollection(c) => &c.common,
            SendRequest::MobileWallet(m) => &m.common,
        };
        Ok(PreparedTransfer {
            request_id: common.request_id.unwrap_or_else(RequestId::generate),
            payment_mode: request.payment_mode(),
            body: Bytes::from(request.to_body(callbacks)?),
            delivery: DeliveryMark::new(),
            // Known from the request: the body is not read back on the way to a send.
            money: Some(Money {
                amount: common.amount,
                currency: common.currency.clone(),
                deduct_fees: common.deduct_fees,
            }),
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

    /// Rebuild a prepared transfer from what was stored before its first send: its Request-id
    /// and the exact bytes of [`body`](Self::body). This is how a journal or your own store
    /// resends the same request after a restart ([`TransferClient::resend`](crate::TransferClient::resend)).
    /// The bytes must be a JSON object; the payment mode is read from them. The checks of
    /// [`prepare_send`](crate::TransferClient::prepare_send) ran when they were first built and
    /// are not repeated: pass only bytes that came from `body()`.
    ///
    /// ```
    /// use whish_core::RequestId;
    /// use whish_money_transfer::{PaymentMode, PreparedTransfer};
    /// let stored = br#"{"paymentMode":"MOBILE_WALLET","amount":10}"#;
    /// let p = PreparedTransfer::from_stored(RequestId::new(42)?, stored.to_vec())?;
    /// assert_eq!(p.payment_mode(), &PaymentMode::MobileWallet);
    /// assert!(PreparedTransfer::from_stored(RequestId::new(42)?, b"[1]".to_vec()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn from_stored(
        request_id: RequestId,
        body: impl Into<Bytes>,
    ) -> Result<PreparedTransfer, ValidationError> {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(rename = "paymentMode", default)]
            payment_mode: Option<PaymentMode>,
        }
        let body = body.into();
        let head: Head = serde_json::from_slice(&body)
            .map_err(|_| ValidationError::invalid("body", "is not a stored send body"))?;
        Ok(PreparedTransfer {
            request_id,
            payment_mode: head.payment_mode.unwrap_or(PaymentMode::CashCollection),
            money: money_of(&body),
            body,
            // Stored before a send: it may have arrived, so `transfer.already.done` confirms
            // (once the status read returns the transfer).
            delivery: DeliveryMark::sent_before(),
        })
    }

    /// The delivery mark this request carries across calls: set before the first byte of a
    /// send leaves, so a dropped future still counts as "may have arrived". A store that
    /// knows the request was sent before (a journal) sets it before sending it again.
    pub fn delivery(&self) -> &whish_core::verdict::DeliveryMark {
        &self.delivery
    }

    /// True when an earlier send of this transfer may have reached the service (and so
    /// `transfer.already.done` is read as a confirmation, not a refusal). Set before the first
    /// byte of a send leaves, so a send whose future was dropped counts too; clones share it.
    pub fn may_have_arrived(&self) -> bool {
        self.delivery.may_have_arrived()
    }
}

impl PartialEq for PreparedTransfer {
    fn eq(&self, other: &Self) -> bool {
        self.request_id == other.request_id && self.body == other.body
    }
}

/// A checked cancel with its Request-id fixed and its body serialized once; from
/// [`TransferClient::prepare_cancel`](crate::TransferClient::prepare_cancel). Store
/// [`request_id`](Self::request_id) (and the LTN) before sending if you journal it.
#[derive(Debug, Clone)]
#[must_use = "a prepared cancel does nothing until it is sent"]
pub struct PreparedCancel {
    pub(crate) request_id: RequestId,
    pub(crate) ltn_number: String,
    pub(crate) body: Bytes,
    /// Set before the first byte of a cancel leaves; kept while it may have applied.
    pub(crate) delivery: DeliveryMark,
}

impl PartialEq for PreparedCancel {
    fn eq(&self, other: &Self) -> bool {
        self.request_id == other.request_id && self.body == other.body
    }
}

impl PreparedCancel {
    /// The Request-id this cancel carries.
    pub fn request_id(&self) -> RequestId {
        self.request_id
    }
    /// The LTN number of the transfer to cancel.
    pub fn ltn_number(&self) -> &str {
        &self.ltn_number
    }
    /// The exact JSON body every send of this cancel carries.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Rebuild a prepared cancel from its stored Request-id and the exact bytes of
    /// [`body`](Self::body) (a JSON object with `ltnNumber`).
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn from_stored(
        request_id: RequestId,
        body: impl Into<Bytes>,
    ) -> Result<PreparedCancel, ValidationError> {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(rename = "ltnNumber")]
            ltn_number: String,
        }
        let body = body.into();
        let head: Head = serde_json::from_slice(&body)
            .map_err(|_| ValidationError::invalid("body", "is not a stored cancel body"))?;
        Ok(PreparedCancel {
            request_id,
            ltn_number: head.ltn_number,
            body,
            delivery: DeliveryMark::sent_before(),
        })
    }

    /// The delivery mark this request carries across calls: set before the first byte of a
    /// send leaves, so a dropped future still counts as "may have arrived". A store that
    /// knows the request was sent before (a journal) sets it before sending it again.
    pub fn delivery(&self) -> &whish_core::verdict::DeliveryMark {
        &self.delivery
    }

    /// True when an earlier send of this cancel may have reached the service.
    pub fn may_have_arrived(&self) -> bool {
        self.delivery.may_have_arrived()
    }
}

/// A cash-collection transfer that was created.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CashSent {
    /// The number the receiver uses to collect.
    pub ltn_number: String,
    /// Transfer reference.
    pub transfer_id: String,
    /// Fees applied.
    pub charges: Option<Amount>,
    /// The informational dialog of the success reply.
    pub dialog: Option<Dialog>,
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

/// What an accepted send produced. A refusal (a failure code) and Pending (code 500) are
/// `Err`: see [`Error::code`](whish_core::Error::code) and
/// [`Error::is_pending`](whish_core::Error::is_pending).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[must_use = "the outcome says what was created: store it"]
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
}

impl SendOutcome {
    /// The Request-id of the transfer.
    pub fn request_id(&self) -> RequestId {
        match self {
            SendOutcome::Sent(s) => s.request_id,
            SendOutcome::Credited(c) => c.request_id,
            SendOutcome::Confirmed { request_id, .. } => *request_id,
        }
    }

    /// The transfer reference.
    pub fn transfer_id(&self) -> Option<&str> {
        match self {
            SendOutcome::Sent(s) => Some(&s.transfer_id),
            SendOutcome::Credited(c) => Some(&c.transfer_id),
            SendOutcome::Confirmed { status, .. } => status.transfer_id.as_deref(),
        }
    }

    /// The LTN number (the receiver's collection number for cash collection).
    pub fn ltn_number(&self) -> Option<&str> {
        match self {
            SendOutcome::Sent(s) => Some(&s.ltn_number),
            SendOutcome::Credited(c) => Some(&c.ltn_number),
            SendOutcome::Confirmed { status, .. } => status.ltn_number.as_deref(),
        }
    }
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
