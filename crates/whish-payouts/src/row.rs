//! One row of a batch file: its columns, and the transfer it describes.

use whish_core::RequestId;
use whish_core::{Amount, Currency};
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, FirstName, LastName, MobileWalletSend,
    PaymentMode, PreparedTransfer, Reason, SendRequest, Sender, SourceOfFunds, WalletReceiver,
};

mod cells;

use cells::Cells;

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

/// The place of column `name` in [`COLUMNS`]; a name that is not a column stops the build
/// where it is evaluated in a constant (see `at!` in `cells`).
pub(crate) const fn column_index(name: &str) -> usize {
    let mut i = 0;
    while i < COLUMNS.len() {
        if eq(COLUMNS[i].name.as_bytes(), name.as_bytes()) {
            return i;
        }
        i += 1;
    }
    panic!("not a column of a batch file");
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A row as read: its line and the non-empty values of its columns, held in one string (a
/// row is read once and its values looked up many times: one allocation, not one a value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawRow {
    pub line: u64,
    /// The values, one after another.
    text: String,
    /// Each column's value in `text`, by the column's place in [`COLUMNS`]; an empty range is
    /// a column absent or blank.
    spans: [(u32, u32); COLUMNS.len()],
}

impl RawRow {
    /// A row of no values yet, at `line`.
    pub(crate) fn new(line: u64) -> RawRow {
        RawRow {
            line,
            text: String::new(),
            spans: [(0, 0); COLUMNS.len()],
        }
    }

    /// A row of no values yet, at `line`, with room for `bytes` of them.
    pub(crate) fn with_capacity(line: u64, bytes: usize) -> RawRow {
        RawRow {
            text: String::with_capacity(bytes),
            ..RawRow::new(line)
        }
    }

    /// Give column `column` (its place in [`COLUMNS`]) the value `value`; an empty value leaves
    /// it absent. A value is at most `MAX_VALUE` bytes (checked by the reader), so a row's
    /// text stays far inside `u32`.
    pub(crate) fn set(&mut self, column: usize, value: &str) {
        if value.is_empty() {
            return;
        }
        let start = self.text.len();
        self.text.push_str(value);
        self.spans[column] = (start as u32, self.text.len() as u32);
    }

    /// The value of column `column` (its place in [`COLUMNS`]), if given.
    pub(crate) fn at(&self, column: usize) -> Option<&str> {
        let (start, end) = self.spans[column];
        (end > start).then(|| &self.text[start as usize..end as usize])
    }

    /// The value of the column named `name`, if given.
    pub(crate) fn value(&self, name: &str) -> Option<&str> {
        COLUMNS
            .iter()
            .position(|c| c.name == name)
            .and_then(|i| self.at(i))
    }

    /// The bytes of the row's values.
    pub(crate) fn bytes(&self) -> usize {
        self.text.len()
    }

    /// A row of `values` (column name, value), for tests.
    #[cfg(test)]
    pub(crate) fn of(line: u64, values: &[(&str, &str)]) -> RawRow {
        let mut row = RawRow::new(line);
        for (name, value) in values {
            let i = COLUMNS
                .iter()
                .position(|c| c.name == *name)
                .expect("a column");
            row.set(i, value);
        }
        row
    }
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
    /// The Request-id of the row's first attempt ([`crate::key::request_id`], derived once).
    pub first: RequestId,
    /// `request` as the check prepared it (under the Request-id it named), for the run that
    /// sends the rows the check kept; sent only under that Request-id, by a client that
    /// checks callback addresses as the check's did.
    pub prepared: Option<PreparedTransfer>,
    /// The check found no entry under `first`: the run reserves the row without looking it
    /// up again (a key recorded since is found taken by the reservation).
    pub absent: bool,
}

impl Payout {
    /// The key the row's Request-id is derived from: its reference, or its line.
    pub fn row_key(&self) -> String {
        row_key(self.reference.as_deref(), self.line)
    }
}

/// The key of the row at `line` with `reference`: the reference, or else the line.
fn row_key(reference: Option<&str>, line: u64) -> String {
    match reference {
        Some(r) => format!("ref:{r}"),
        None => format!("line:{line}"),
    }
}

/// Build the transfer of one row of batch `batch`, every error with its line and column; a row
/// without a reference is a bad row when `require_reference` (see
/// [`crate::Batch::key_rows_by_line`]).
pub(crate) fn payout(
    row: &RawRow,
    defaults: &Defaults,
    batch: &str,
    require_reference: bool,
) -> Result<Payout, Vec<RowError>> {
    let mut cells = Cells::new(row);
    cells.require_columns();
    let mode = cells.mode();
    let currency = cells.currency();
    let amount = cells.amount(currency.as_ref());
    let reason = cells.named::<Reason>("reason");
    let source = cells.named::<SourceOfFunds>("source_of_funds");
    let deduct = cells.deduct_fees();
    let from_country = cells.sending_country(defaults);
    let sender = cells.sender(defaults);
    let (receiver, identity) = cells.receiver();
    if matches!(mode, Some(PaymentMode::CashCollection))
        && identity.is_none()
        && cells.errors.is_empty()
    {
        cells.fail("receiver_date_of_birth", "is required for cash collection");
    }
    let reference = cells.reference(require_reference);
    let line = cells.line;
    if !cells.errors.is_empty() {
        return Err(cells.errors);
    }
    let (Some(mode), Some(currency), Some(amount), Some(reason), Some(source), Some(from)) =
        (mode, currency, amount, reason, source, from_country)
    else {
        return Err(vec![RowError::new(line, "", "the row is incomplete")]);
    };
    let sender = Sender::new(
        sender.unwrap_or_else(|| Customer::new(FirstName::new(""), LastName::new(""), "")),
    );
    let request = match (mode, identity) {
        (PaymentMode::MobileWallet, identity) => {
            let receiver = match identity {
                Some(i) => receiver.identity(i),
                None => receiver,
            };
            let send = MobileWalletSend::new(
                from,
                currency.clone(),
                amount,
                sender,
                WalletReceiver::new(receiver),
                reason,
                source,
            );
            SendRequest::from(send.deduct_fees(deduct))
        }
        (_, None) => {
            return Err(vec![RowError::new(
                line,
                "receiver_date_of_birth",
                "is required for cash collection",
            )]);
        }
        (_, Some(identity)) => {
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
    let first = crate::key::request_id(batch, &row_key(reference.as_deref(), line), 0);
    Ok(Payout {
        line,
        reference,
        amount,
        currency,
        request,
        first,
        prepared: None,
        absent: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_is_found_at_its_place_and_a_row_gives_back_what_it_was_given() {
        for (i, c) in COLUMNS.iter().enumerate() {
            assert_eq!(column_index(c.name), i, "{}", c.name);
        }
        let mut row = RawRow::with_capacity(4, 8);
        row.set(column_index("amount"), "12.50");
        row.set(column_index("reference"), "");
        row.set(column_index("currency"), "USD");
        assert_eq!(row.value("amount"), Some("12.50"));
        assert_eq!(row.value("currency"), Some("USD"));
        assert_eq!(row.value("reference"), None, "an empty value is absent");
        assert_eq!(row.value("receiver_phone"), None);
        assert_eq!(row.value("no such column"), None);
        assert_eq!(row.bytes(), 8);
    }
}
