//! One row of a batch file: its columns, and the transfer it describes.

use std::collections::BTreeMap;
use std::str::FromStr;

use whish_core::{Amount, Currency};
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
    LastName, MobileWalletSend, PaymentMode, Reason, SendRequest, Sender, SourceOfFunds,
    WalletReceiver,
};

/// A column of a batch file: its name in the CSV header (or the JSON-lines key), whether every
/// row needs it, and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Column {
    /// The header name (CSV) or key (JSON lines).
    pub name: &'static str,
    /// Every row must give it (a batch default may stand in for the sender's columns).
    pub required: bool,
    /// What it holds.
    pub about: &'static str,
}

const fn col(name: &'static str, required: bool, about: &'static str) -> Column {
    Column {
        name,
        required,
        about,
    }
}

/// Every column a batch file may have, in the order the documentation lists them. A column not
/// in this list is refused (a misspelt header would otherwise be silently ignored).
pub const COLUMNS: &[Column] = &[
    col(
        "reference",
        false,
        "Your own unique reference of the row (an invoice or beneficiary number), in printable \
         ASCII. Required unless the batch keys rows by line (--key-by-line): the row's \
         Request-id is derived from it, so the row keeps its identity when lines are added, \
         removed or reordered, or the file is saved in the other format.",
    ),
    col(
        "payment_mode",
        false,
        "CASH_COLLECTION (default: the receiver collects at a shop with the LTN) or MOBILE_WALLET.",
    ),
    col(
        "receiver_first_name",
        true,
        "The receiver's first name, in English letters.",
    ),
    col("receiver_middle_name", false, "The receiver's middle name."),
    col(
        "receiver_last_name",
        true,
        "The receiver's last name, in English letters.",
    ),
    col("receiver_phone", true, "The receiver's phone number."),
    col(
        "receiver_date_of_birth",
        false,
        "dd-MM-yyyy. Required for cash collection.",
    ),
    col("receiver_nationality", false, "The receiver's nationality."),
    col(
        "amount",
        true,
        "Plain decimal digits (`150`, `12.50`), in the row's currency; not in exponent notation (`1e2`). In JSON lines a string or a number, read from its digits as written.",
    ),
    col("currency", true, "USD or LBP."),
    col(
        "reason",
        true,
        "Exactly one of the service's reasons (`Family Support`, `Education`, ...).",
    ),
    col(
        "source_of_funds",
        true,
        "Exactly one of the service's sources of funds (`Salary`, `Savings`, ...).",
    ),
    col(
        "deduct_fees",
        false,
        "true to take the fee out of the amount (the receiver gets less); default false.",
    ),
    col(
        "sender_first_name",
        false,
        "The sender, when this row's differs from the batch's default sender.",
    ),
    col("sender_last_name", false, "The sender's last name."),
    col("sender_phone", false, "The sender's phone number."),
    col("sender_date_of_birth", false, "dd-MM-yyyy (optional)."),
    col(
        "from_country",
        false,
        "The sending country's id, when this row's differs from the batch default.",
    ),
];

/// Look up a column by name.
pub(crate) fn column(name: &str) -> Option<&'static Column> {
    COLUMNS.iter().find(|c| c.name == name)
}

/// A bad row: its line in the file, the column at fault and why. Nothing of a batch is sent
/// while any row is bad (unless bad rows are skipped on purpose).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RowError {
    /// The line of the file (1 is the first line; a CSV file's header is line 1).
    pub line: u64,
    /// The column at fault (empty when the whole line is).
    pub field: String,
    /// Why.
    pub message: String,
}

impl RowError {
    pub(crate) fn new(line: u64, field: &str, message: impl Into<String>) -> RowError {
        RowError {
            line,
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "line {}: {}", self.line, self.message)
        } else {
            write!(f, "line {}, {}: {}", self.line, self.field, self.message)
        }
    }
}

/// A row as read: its line and the non-empty values of its columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawRow {
    pub line: u64,
    pub values: BTreeMap<&'static str, String>,
}

/// The batch-level defaults: the sending country and the sender of every row that does not
/// name its own, and the callback address of every cash-collection row.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Defaults {
    from_country: Option<CountryId>,
    sender: Option<Customer>,
    callback_url: Option<String>,
}

impl Defaults {
    /// No defaults: every row names its sending country and sender.
    pub fn new() -> Defaults {
        Defaults::default()
    }

    /// The sending country of every row without `from_country`.
    pub fn from_country(mut self, country: CountryId) -> Self {
        self.from_country = Some(country);
        self
    }

    /// The sender of every row without sender columns (the paying organisation, the employer).
    pub fn sender(mut self, sender: Customer) -> Self {
        self.sender = Some(sender);
        self
    }

    /// The address the service calls when a cash-collection row's receiver collects.
    pub fn callback_url(mut self, url: impl Into<String>) -> Self {
        self.callback_url = Some(url.into());
        self
    }
}

/// One checked row: its line, its key, and the transfer it describes (without its Request-id,
/// which is derived from the batch and the key).
#[derive(Debug, Clone)]
pub(crate) struct Payout {
    pub line: u64,
    pub reference: Option<String>,
    pub amount: Amount,
    pub currency: Currency,
    pub request: SendRequest,
}

impl Payout {
    /// The key the row's Request-id is derived from: its reference, or its line.
    pub fn row_key(&self) -> String {
        match &self.reference {
            Some(r) => format!("ref:{r}"),
            None => format!("line:{}", self.line),
        }
    }
}

fn parse_bool(line: u64, field: &str, v: &str) -> Result<bool, RowError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => Err(RowError::new(line, field, "must be true or false")),
    }
}

fn date_of_birth(line: u64, field: &str, v: &str) -> Result<DateOfBirth, RowError> {
    DateOfBirth::parse(v.trim()).map_err(|e| RowError::new(line, field, e.to_string()))
}

/// Build the transfer of one row, every error with its line and column; a row without a
/// reference is a bad row when `require_reference` (see [`crate::Batch::key_rows_by_line`]).
pub(crate) fn payout(
    row: &RawRow,
    defaults: &Defaults,
    require_reference: bool,
) -> Result<Payout, Vec<RowError>> {
    let line = row.line;
    let mut errors = Vec::new();
    let get = |name: &str| {
        row.values
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    };
    for c in COLUMNS.iter().filter(|c| c.required) {
        if get(c.name).is_none() {
            errors.push(RowError::new(line, c.name, "is required"));
        }
    }
    let mode = match get("payment_mode").unwrap_or("CASH_COLLECTION") {
        "CASH_COLLECTION" => Some(PaymentMode::CashCollection),
        "MOBILE_WALLET" => Some(PaymentMode::MobileWallet),
        _ => {
            errors.push(RowError::new(
                line,
                "payment_mode",
                "must be CASH_COLLECTION or MOBILE_WALLET",
            ));
            None
        }
    };
    let currency = get("currency").and_then(|v| {
        let c = Currency::from_code(v);
        match c.require_usd_or_lbp("currency") {
            Ok(()) => Some(c),
            Err(e) => {
                errors.push(RowError::new(line, "currency", e.to_string()));
                None
            }
        }
    });
    // A person's text: plain decimal digits (`str::parse`), never an exponent: exact, but a
    // spreadsheet that writes `1.5E+06` may have rounded the cell to write it.
    let amount = get("amount").and_then(|v| match v.parse::<Amount>() {
        Ok(a) => Some(a),
        Err(e) => {
            let why = if v.contains(['e', 'E']) && Amount::parse(v).is_ok() {
                format!(
                    "`{v}` is in exponent notation: write the amount in plain digits (150, 12.50), as the sum to pay"
                )
            } else {
                e.to_string()
            };
            errors.push(RowError::new(line, "amount", why));
            None
        }
    });
    if let (Some(a), Some(c)) = (amount, &currency)
        && let Err(e) = a.check_rules(c, "amount")
    {
        errors.push(RowError::new(line, "amount", e.to_string()));
    }
    let reason = get("reason").and_then(|v| match Reason::from_str(v) {
        Ok(r) => Some(r),
        Err(e) => {
            errors.push(RowError::new(line, "reason", e.to_string()));
            None
        }
    });
    let source = get("source_of_funds").and_then(|v| match SourceOfFunds::from_str(v) {
        Ok(s) => Some(s),
        Err(e) => {
            errors.push(RowError::new(line, "source_of_funds", e.to_string()));
            None
        }
    });
    let deduct = match get("deduct_fees") {
        Some(v) => match parse_bool(line, "deduct_fees", v) {
            Ok(b) => b,
            Err(e) => {
                errors.push(e);
                false
            }
        },
        None => false,
    };
    let from_country = match get("from_country") {
        Some(v) => match v.parse::<i64>().ok().map(CountryId::new) {
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                errors.push(RowError::new(line, "from_country", e.to_string()));
                None
            }
            None => {
                errors.push(RowError::new(line, "from_country", "must be a country id"));
                None
            }
        },
        None => match defaults.from_country {
            Some(c) => Some(c),
            None => {
                errors.push(RowError::new(
                    line,
                    "from_country",
                    "is required: give it in the row or as the batch's default",
                ));
                None
            }
        },
    };
    // The sender: the row's own when it has any sender column, else the batch's.
    let has_sender = [
        "sender_first_name",
        "sender_last_name",
        "sender_phone",
        "sender_date_of_birth",
    ]
    .iter()
    .any(|c| get(c).is_some());
    let sender = if has_sender {
        for c in ["sender_first_name", "sender_last_name", "sender_phone"] {
            if get(c).is_none() {
                errors.push(RowError::new(
                    line,
                    c,
                    "is required when the row names its own sender",
                ));
            }
        }
        let mut s = Customer::new(
            FirstName::new(get("sender_first_name").unwrap_or_default()),
            LastName::new(get("sender_last_name").unwrap_or_default()),
            get("sender_phone").unwrap_or_default(),
        );
        if let Some(v) = get("sender_date_of_birth") {
            match date_of_birth(line, "sender_date_of_birth", v) {
                Ok(d) => s = s.identity(Identity::new(d)),
                Err(e) => errors.push(e),
            }
        }
        Some(s)
    } else if let Some(s) = &defaults.sender {
        Some(s.clone())
    } else {
        errors.push(RowError::new(
            line,
            "sender_first_name",
            "no sender: give sender columns in the row or a default sender for the batch",
        ));
        None
    };
    let mut receiver = Customer::new(
        FirstName::new(get("receiver_first_name").unwrap_or_default()),
        LastName::new(get("receiver_last_name").unwrap_or_default()),
        get("receiver_phone").unwrap_or_default(),
    );
    if let Some(m) = get("receiver_middle_name") {
        receiver = receiver.middle_name(m);
    }
    let dob = match get("receiver_date_of_birth") {
        Some(v) => match date_of_birth(line, "receiver_date_of_birth", v) {
            Ok(d) => Some(d),
            Err(e) => {
                errors.push(e);
                None
            }
        },
        None => None,
    };
    let identity = dob.map(|d| {
        let i = Identity::new(d);
        match get("receiver_nationality") {
            Some(n) => i.nationality(n),
            None => i,
        }
    });
    // The service's identity carries the nationality and needs a date of birth: a nationality
    // alone would be dropped, not sent.
    if dob.is_none()
        && get("receiver_nationality").is_some()
        && get("receiver_date_of_birth").is_none()
    {
        errors.push(RowError::new(
            line,
            "receiver_nationality",
            "needs receiver_date_of_birth: the receiver's identity, which holds the nationality, needs a date of birth",
        ));
    }
    if matches!(mode, Some(PaymentMode::CashCollection)) && dob.is_none() && errors.is_empty() {
        errors.push(RowError::new(
            line,
            "receiver_date_of_birth",
            "is required for cash collection",
        ));
    }
    let reference = get("reference").map(str::to_owned);
    // Printable ASCII only: a zero-width space, a stray byte-order mark or the decomposed
    // spelling of a letter looks the same and is another reference, so two rows that read
    // alike would be two payments.
    if let Some(r) = &reference
        && !r.bytes().all(|b| (0x20..0x7f).contains(&b))
    {
        errors.push(RowError::new(
            line,
            "reference",
            "must be printable ASCII (letters, digits, punctuation, spaces): a reference with an invisible or look-alike character reads like another and is not",
        ));
    }
    if reference.is_none() && require_reference {
        errors.push(RowError::new(
            line,
            "reference",
            "is required: a row without one is known by its line, so a line added above it, or the file saved as JSON lines, makes it another payment (paid again); give each row your own reference, or key the rows by their lines on purpose (--key-by-line)",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let (Some(mode), Some(currency), Some(amount), Some(reason), Some(source), Some(from)) =
        (mode, currency, amount, reason, source, from_country)
    else {
        return Err(vec![RowError::new(line, "", "the row is incomplete")]);
    };
    let sender = Sender::new(
        sender.unwrap_or_else(|| Customer::new(FirstName::new(""), LastName::new(""), "")),
    );
    let request = match mode {
        PaymentMode::MobileWallet => {
            if let Some(i) = identity {
                receiver = receiver.identity(i);
            }
            SendRequest::from(
                MobileWalletSend::new(
                    from,
                    currency.clone(),
                    amount,
                    sender,
                    WalletReceiver::new(receiver),
                    reason,
                    source,
                )
                .deduct_fees(deduct),
            )
        }
        _ => {
            let Some(identity) = identity else {
                return Err(vec![RowError::new(
                    line,
                    "receiver_date_of_birth",
                    "is required for cash collection",
                )]);
            };
            let mut send = CashCollectionSend::new(
                from,
                currency.clone(),
                amount,
                sender,
                CashReceiver::new(receiver, identity),
                reason,
                source,
            )
            .deduct_fees(deduct);
            if let Some(u) = &defaults.callback_url {
                send = send.callback_url(u.clone());
            }
            SendRequest::from(send)
        }
    };
    Ok(Payout {
        line,
        reference,
        amount,
        currency,
        request,
    })
}
