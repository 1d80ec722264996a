//! A row's cells, read one column at a time: each reader returns the column's value or records
//! why it is not one (with the row's line and the column's name) and returns nothing, so one
//! pass over a row reports every bad cell at once, in the order of the columns read.

use std::str::FromStr;

use whish_core::{Amount, Currency};
use whish_money_transfer::{
    CountryId, Customer, DateOfBirth, FirstName, Identity, LastName, PaymentMode,
};

use super::{COLUMNS, Defaults, RawRow, RowError};

/// The place of a column, by its name, worked out when the crate is built.
macro_rules! at {
    ($name:literal) => {
        const { super::column_index($name) }
    };
}

/// The sender columns (their places in [`COLUMNS`]): any of them makes the row name its own
/// sender.
const SENDER_COLUMNS: [usize; 4] = [
    at!("sender_first_name"),
    at!("sender_last_name"),
    at!("sender_phone"),
    at!("sender_date_of_birth"),
];

pub(super) struct Cells<'a> {
    row: &'a RawRow,
    pub(super) line: u64,
    pub(super) errors: Vec<RowError>,
}

impl<'a> Cells<'a> {
    pub(super) fn new(row: &'a RawRow) -> Cells<'a> {
        Cells {
            row,
            line: row.line,
            errors: Vec::new(),
        }
    }

    /// The text of the column at `column` (its place in [`COLUMNS`], see `at!`), trimmed;
    /// nothing when it is absent or blank.
    pub(super) fn get(&self, column: usize) -> Option<&'a str> {
        self.row.at(column).map(str::trim).filter(|v| !v.is_empty())
    }

    /// The same, by the column's name (for the columns a reader is handed by name).
    fn named_value(&self, name: &str) -> Option<&'a str> {
        self.row
            .value(name)
            .map(str::trim)
            .filter(|v| !v.is_empty())
    }

    pub(super) fn fail(&mut self, column: &str, why: impl Into<String>) {
        self.errors.push(RowError::new(self.line, column, why));
    }

    /// Record every required column the row leaves blank.
    pub(super) fn require_columns(&mut self) {
        for (i, c) in COLUMNS.iter().enumerate().filter(|(_, c)| c.required) {
            if self.get(i).is_none() {
                self.fail(c.name, "is required");
            }
        }
    }

    /// `payment_mode`, cash collection when blank.
    pub(super) fn mode(&mut self) -> Option<PaymentMode> {
        match self.get(at!("payment_mode")).unwrap_or("CASH_COLLECTION") {
            "CASH_COLLECTION" => Some(PaymentMode::CashCollection),
            "MOBILE_WALLET" => Some(PaymentMode::MobileWallet),
            _ => {
                self.fail("payment_mode", "must be CASH_COLLECTION or MOBILE_WALLET");
                None
            }
        }
    }

    /// `currency`: USD or LBP.
    pub(super) fn currency(&mut self) -> Option<Currency> {
        let c = Currency::from_code(self.get(at!("currency"))?);
        match c.require_usd_or_lbp("currency") {
            Ok(()) => Some(c),
            Err(e) => {
                self.fail("currency", e.to_string());
                None
            }
        }
    }

    /// `amount`: a person's text of plain decimal digits (`str::parse`), never an exponent
    /// (exact, but a spreadsheet that writes `1.5E+06` may have rounded the cell to write it),
    /// within the currency's rules.
    pub(super) fn amount(&mut self, currency: Option<&Currency>) -> Option<Amount> {
        let v = self.get(at!("amount"))?;
        let amount = match v.parse::<Amount>() {
            Ok(a) => a,
            Err(e) => {
                let why = if v.contains(['e', 'E']) && Amount::parse(v).is_ok() {
                    format!(
                        "`{v}` is in exponent notation: write the amount in plain digits (150, 12.50), as the sum to pay"
                    )
                } else {
                    e.to_string()
                };
                self.fail("amount", why);
                return None;
            }
        };
        if let Some(c) = currency
            && let Err(e) = amount.check_rules(c, "amount")
        {
            self.fail("amount", e.to_string());
        }
        Some(amount)
    }

    /// A column holding one of the service's named values (a reason, a source of funds).
    pub(super) fn named<T: FromStr<Err: ToString>>(&mut self, column: &str) -> Option<T> {
        match T::from_str(self.named_value(column)?) {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(column, e.to_string());
                None
            }
        }
    }

    /// `deduct_fees`, false when blank.
    pub(super) fn deduct_fees(&mut self) -> bool {
        let Some(v) = self.get(at!("deduct_fees")) else {
            return false;
        };
        match v.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => true,
            "false" | "no" | "0" => false,
            _ => {
                self.fail("deduct_fees", "must be true or false");
                false
            }
        }
    }

    /// `from_country`, else the batch's default.
    pub(super) fn sending_country(&mut self, defaults: &Defaults) -> Option<CountryId> {
        let Some(v) = self.get(at!("from_country")) else {
            if defaults.from_country.is_none() {
                self.fail(
                    "from_country",
                    "is required: give it in the row or as the batch's default",
                );
            }
            return defaults.from_country;
        };
        match v.parse::<i64>().ok().map(CountryId::new) {
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                self.fail("from_country", e.to_string());
                None
            }
            None => {
                self.fail("from_country", "must be a country id");
                None
            }
        }
    }

    fn date_of_birth(&mut self, column: &str) -> Option<DateOfBirth> {
        match DateOfBirth::parse(self.named_value(column)?) {
            Ok(d) => Some(d),
            Err(e) => {
                self.fail(column, e.to_string());
                None
            }
        }
    }

    /// The sender: the row's own when it has any sender column, else the batch's.
    pub(super) fn sender(&mut self, defaults: &Defaults) -> Option<Customer> {
        if !SENDER_COLUMNS.iter().any(|&c| self.get(c).is_some()) {
            if defaults.sender.is_none() {
                self.fail(
                    "sender_first_name",
                    "no sender: give sender columns in the row or a default sender for the batch",
                );
            }
            return defaults.sender.clone();
        }
        for &c in &SENDER_COLUMNS[..3] {
            if self.get(c).is_none() {
                self.fail(
                    COLUMNS[c].name,
                    "is required when the row names its own sender",
                );
            }
        }
        let mut s = Customer::new(
            FirstName::new(self.get(at!("sender_first_name")).unwrap_or_default()),
            LastName::new(self.get(at!("sender_last_name")).unwrap_or_default()),
            self.get(at!("sender_phone")).unwrap_or_default(),
        );
        if let Some(d) = self.date_of_birth("sender_date_of_birth") {
            s = s.identity(Identity::new(d));
        }
        Some(s)
    }

    /// The receiver, and the identity the service needs for cash collection (its date of
    /// birth, with the nationality when given).
    pub(super) fn receiver(&mut self) -> (Customer, Option<Identity>) {
        let mut receiver = Customer::new(
            FirstName::new(self.get(at!("receiver_first_name")).unwrap_or_default()),
            LastName::new(self.get(at!("receiver_last_name")).unwrap_or_default()),
            self.get(at!("receiver_phone")).unwrap_or_default(),
        );
        if let Some(m) = self.get(at!("receiver_middle_name")) {
            receiver = receiver.middle_name(m);
        }
        let dob = self.date_of_birth("receiver_date_of_birth");
        let nationality = self.get(at!("receiver_nationality"));
        // The service's identity carries the nationality and needs a date of birth: a
        // nationality alone would be dropped, not sent.
        if nationality.is_some() && self.get(at!("receiver_date_of_birth")).is_none() {
            self.fail(
                "receiver_nationality",
                "needs receiver_date_of_birth: the receiver's identity, which holds the nationality, needs a date of birth",
            );
        }
        let identity = dob.map(|d| {
            let i = Identity::new(d);
            match nationality {
                Some(n) => i.nationality(n),
                None => i,
            }
        });
        (receiver, identity)
    }

    /// `reference`: printable ASCII only (a zero-width space, a stray byte-order mark or the
    /// decomposed spelling of a letter looks the same and is another reference, so two rows
    /// that read alike would be two payments); required when `required`.
    pub(super) fn reference(&mut self, required: bool) -> Option<String> {
        let reference = self.get(at!("reference")).map(str::to_owned);
        if let Some(r) = &reference
            && !r.bytes().all(|b| (0x20..0x7f).contains(&b))
        {
            self.fail(
                "reference",
                "must be printable ASCII (letters, digits, punctuation, spaces): a reference with an invisible or look-alike character reads like another and is not",
            );
        }
        if reference.is_none() && required {
            self.fail(
                "reference",
                "is required: a row without one is known by its line, so a line added above it, or the file saved as JSON lines, makes it another payment (paid again); give each row your own reference, or key the rows by their lines on purpose (--key-by-line)",
            );
        }
        reference
    }
}
