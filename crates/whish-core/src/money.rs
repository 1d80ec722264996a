//! Money: currencies and exact amounts.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::stack_text::StackText;
use crate::validation::{ValidationError, ValidationKind};

/// Trimmed and upper case; borrowed (no allocation) when the code already is, as the services
/// write it.
fn normalize_currency(code: &str) -> std::borrow::Cow<'_, str> {
    let code = code.trim();
    if code.bytes().any(|b| b.is_ascii_lowercase()) {
        std::borrow::Cow::Owned(code.to_ascii_uppercase())
    } else {
        std::borrow::Cow::Borrowed(code)
    }
}

crate::open_enum! {
    /// A currency as the services name it. Transfers use numeric ids (LBP 1, USD 2); the collect
    /// service and the reports use the ISO code. Codes are read case-insensitively.
    pub Currency normalize = normalize_currency {
        /// Lebanese pound, id 1.
        Lbp => "LBP",
        /// US dollar, id 2.
        Usd => "USD",
    }
}

impl Currency {
    /// The ISO code.
    pub fn code(&self) -> &str {
        self.as_str()
    }

    /// The transfer service's `currencyId`: LBP 1, USD 2, none for others.
    pub fn id(&self) -> Option<i64> {
        match self {
            Currency::Lbp => Some(1),
            Currency::Usd => Some(2),
            Currency::Other(_) => None,
        }
    }

    /// The currency of a transfer-service `currencyId`.
    pub fn from_id(id: i64) -> Option<Currency> {
        match id {
            1 => Some(Currency::Lbp),
            2 => Some(Currency::Usd),
            _ => None,
        }
    }

    /// The decimals of the currency's smallest unit: USD 2 (cents), LBP 0; 2 for any other.
    pub fn decimals(&self) -> u32 {
        match self {
            Currency::Lbp => 0,
            Currency::Usd | Currency::Other(_) => 2,
        }
    }

    /// `value` written as money of this currency: rounded half away from zero to its smallest
    /// unit, with exactly its decimals (`2481.00` USD, `150000` LBP). The one way to print a
    /// sum, so that one amount never reads two ways (`2481.0` and `2481.00`).
    ///
    /// ```
    /// use rust_decimal::Decimal;
    /// use whish_core::Currency;
    /// assert_eq!(Currency::Usd.money_text(Decimal::new(24810, 1)), "2481.00");
    /// assert_eq!(Currency::Usd.money_text("10.280000000000001".parse().unwrap()), "10.28");
    /// assert_eq!(Currency::Lbp.money_text(Decimal::new(1500005, 1)), "150001");
    /// ```
    pub fn money_text(&self, value: Decimal) -> String {
        let decimals = self.decimals();
        let mut v = value.round_dp_with_strategy(
            decimals,
            rust_decimal::RoundingStrategy::MidpointAwayFromZero,
        );
        v.rescale(decimals);
        v.to_string()
    }

    /// A currency from its code, case-insensitively; never fails (unknown codes are `Other`).
    pub fn from_code(code: &str) -> Currency {
        Currency::parse(code)
    }

    /// USD or LBP, the two currencies the transfer and collect services accept; a clear error
    /// naming `field` otherwise.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn require_usd_or_lbp(&self, field: &str) -> Result<(), ValidationError> {
        match self {
            Currency::Usd | Currency::Lbp => Ok(()),
            Currency::Other(_) => Err(ValidationError::new(
                field,
                ValidationKind::UnsupportedCurrency,
            )),
        }
    }
}

/// An exact amount of money.
///
/// Reads a JSON number or a numeric string exactly and writes the shortest exact form.
/// Serializes as a JSON number; use [`as_string`] for fields the service wants as a string.
///
/// Amounts are [`rust_decimal::Decimal`], never `f64`. The services send amounts as JSON numbers
/// (doubles on their side) or, in the collect service, as JSON strings; both are read exactly:
/// `12.34` is 12.34, never 12.339999. Writing gives the shortest exact form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Amount(Decimal);

impl Amount {
    /// Zero.
    pub const ZERO: Amount = Amount(Decimal::ZERO);

    /// An amount from a decimal.
    pub fn new(value: Decimal) -> Amount {
        Amount(value)
    }

    /// The decimal value.
    pub fn value(self) -> Decimal {
        self.0
    }

    /// Whether two sums of `currency` are the same money: they differ by less than half its
    /// smallest unit (a cent, one LBP). The services type amounts and balances as doubles, and a
    /// book kept in doubles writes 10000.1 - 45.3 as `9954.800000000001`: that is 9954.80, not
    /// a difference. Use it to compare what the service reports; compare what you send exactly.
    pub fn is_same_sum(self, other: Amount, currency: &Currency) -> bool {
        let half = Decimal::new(5, currency.decimals() + 1);
        self.0.checked_sub(other.0).is_some_and(|d| d.abs() < half)
    }

    /// The shortest exact text: `12.34`, `1000`, `0.1`.
    pub fn to_plain_string(self) -> String {
        self.0.normalize().to_string()
    }

    /// Check the amount rules of the collect service: USD at least 1.00 with at most 2 decimals;
    /// LBP a whole number, at least 1000 (spec 001, "Limits"). Other currencies are refused.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn check_rules(self, currency: &Currency, field: &str) -> Result<(), ValidationError> {
        self.check_precision(currency, field)?;
        let (min, minimum) = match currency {
            Currency::Usd => (Decimal::ONE, "1.00 USD"),
            _ => (Decimal::from(1000), "1000 LBP"),
        };
        if self.0 < min {
            return Err(ValidationError::new(
                field,
                ValidationKind::BelowMinimum {
                    minimum: minimum.to_owned(),
                },
            ));
        }
        Ok(())
    }

    /// The checks no price list could pass: the amount is greater than zero, has no more
    /// decimals than its currency (USD 2, LBP 0), and can be sent exactly as a JSON number.
    /// The transfer service states no minimum: the price list decides (`transfer.invalid_amount`,
    /// `amount.not_allowed`), so only these are checked before a transfer is sent. Other
    /// currencies are refused.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn check_precision(self, currency: &Currency, field: &str) -> Result<(), ValidationError> {
        let v = self.0.normalize();
        if v <= Decimal::ZERO {
            return Err(ValidationError::new(field, ValidationKind::NotPositive));
        }
        let decimals = match currency {
            Currency::Usd => 2,
            Currency::Lbp => 0,
            Currency::Other(_) => {
                return Err(ValidationError::new(
                    "currency",
                    ValidationKind::UnsupportedCurrency,
                ));
            }
        };
        if v.scale() > decimals {
            return Err(ValidationError::new(
                field,
                ValidationKind::TooManyDecimals { allowed: decimals },
            ));
        }
        self.check_exact_json_number(field).map(|_| ())
    }

    /// Parse text such as `12.34`, `1000`, `1.5E3`, as a service's reply may write it: an
    /// optional sign, digits with at most one `.`, and an optional exponent. Text from a person
    /// (a form, a flag) goes through [`str::parse`] instead, which takes plain decimal text only. Nothing else (no `_`, no spaces inside, no `inf`), and
    /// nothing a decimal cannot hold exactly (more than 28 decimals, or beyond about 7.9e28): a
    /// value is never rounded on the way in.
    ///
    /// # Errors
    ///
    /// An `AmountParseError` when the text is not a plain decimal number (digits with at most one
    /// point, an optional leading minus; no exponent, no leading `+` or `.`).
    pub fn parse(text: &str) -> Result<Amount, AmountParseError> {
        let t = text.trim();
        if !is_decimal_text(t) {
            return Err(AmountParseError(text.to_owned()));
        }
        Decimal::from_str_exact(t)
            .or_else(|_| Decimal::from_scientific(t))
            .map(Amount)
            .map_err(|_| AmountParseError(text.to_owned()))
    }

    /// Whether this amount can be written as a JSON number that reads back as exactly this
    /// value (an integer that fits in 64 bits, or a double whose shortest form is this text).
    /// The transfer and top-up services type amounts as doubles; an amount that is not is
    /// refused before sending rather than rounded.
    pub fn is_exact_json_number(self) -> bool {
        self.to_json_number().is_some()
    }

    /// The JSON number that reads back as exactly this amount (an integer, or the double whose
    /// shortest form is this decimal), or `None` when there is none.
    pub fn to_json_number(self) -> Option<serde_json::Number> {
        let v = self.0.normalize();
        if v.scale() == 0
            && let Ok(i) = i64::try_from(v.mantissa())
        {
            return Some(serde_json::Number::from(i));
        }
        Self::exact_f64_of(v).and_then(serde_json::Number::from_f64)
    }

    /// [`to_json_number`](Self::to_json_number) as a check naming `field`: the number to send
    /// (worked out once), or the reason none can carry this amount.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn check_exact_json_number(
        self,
        field: &str,
    ) -> Result<serde_json::Number, ValidationError> {
        self.to_json_number().ok_or_else(|| {
            ValidationError::invalid(
                field,
                "cannot be sent exactly as a JSON number (too many significant digits)",
            )
        })
    }

    /// The amount of a double as the service meant it: the shortest decimal that round-trips to
    /// the same double (`0.1`, not `0.1000000000000000055511151231257827`).
    pub fn from_f64(v: f64) -> Option<Amount> {
        if !v.is_finite() {
            return None;
        }
        if let Some(d) = Self::from_f64_cents(v) {
            return Some(Amount(d));
        }
        Decimal::from_str_exact(&format!("{v}")).ok().map(Amount)
    }

    /// The common case without formatting: a double below 10^12 that is the nearest double to a
    /// decimal with at most 2 places. That decimal is then the shortest round-trip form, because
    /// below 10^12 two such decimals are further apart than the double's rounding interval.
    fn from_f64_cents(v: f64) -> Option<Decimal> {
        if v.abs() >= 1e12 {
            return None;
        }
        // A whole number (most amounts on the wire): the conversion is exact both ways.
        let whole = v as i64;
        if whole as f64 == v {
            return Some(Decimal::from(whole));
        }
        // The nearest whole number of cents, by integer conversion (below 10^14 adding one half
        // is exact), without a call to the C library's `round`.
        let scaled = v * 100.0;
        let cents = if scaled < 0.0 {
            (scaled - 0.5) as i64
        } else {
            (scaled + 0.5) as i64
        };
        // IEEE division is correctly rounded: equal means cents / 100 reads as v. Then the
        // fewest places that hold it (one when the cents end in 0: the shortest form).
        if cents as f64 / 100.0 != v {
            return None;
        }
        Some(if cents % 10 == 0 {
            Decimal::new(cents / 10, 1)
        } else {
            Decimal::new(cents, 2)
        })
    }

    /// The double the service will read for this amount, when it is exactly representable as the
    /// shortest round-trip form; `None` when writing it as a JSON number would change it.
    pub fn to_exact_f64(self) -> Option<f64> {
        Self::exact_f64_of(self.0.normalize())
    }

    /// [`to_exact_f64`](Self::to_exact_f64) of a decimal already normalized.
    fn exact_f64_of(v: Decimal) -> Option<f64> {
        let (m, scale) = (v.mantissa(), v.scale() as usize);
        // At most 15 significant digits: every such decimal is the shortest round-trip form of
        // its nearest double (IEEE 754's 15-digit guarantee: two of them never share a double),
        // and that double is m / 10^scale, correctly rounded, both operands exact.
        if m != 0 && m.unsigned_abs() < 1_000_000_000_000_000 && scale < POW10.len() {
            return Some(m as f64 / POW10[scale]);
        }
        Self::to_exact_f64_by_text(v)
    }

    /// The general rule, by text: the double nearest the decimal, if it prints back as the same
    /// decimal. Written into stack buffers (a `Decimal` prints at most 31 characters, and so
    /// does a double that can equal one).
    fn to_exact_f64_by_text(v: Decimal) -> Option<f64> {
        use std::fmt::Write;
        let mut text = StackText::<64>::new();
        write!(text, "{v}").ok()?;
        let f: f64 = text.as_str().parse().ok()?;
        let mut back = StackText::<64>::new();
        // A double too long for the buffer is not the decimal's text either.
        write!(back, "{f}").ok()?;
        (back.as_str() == text.as_str()).then_some(f)
    }
}

/// 10^0 to 10^22, every one exact as a double.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

impl From<Decimal> for Amount {
    fn from(v: Decimal) -> Self {
        Amount(v)
    }
}

impl From<Amount> for Decimal {
    fn from(v: Amount) -> Self {
        v.0
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_plain_string())
    }
}

/// Plain decimal text only, as a person writes an amount: digits with at most one `.` between
/// digits, and a leading `-` at most (`12.34`, `1000`, `-5`). No exponent (`1e3`), no bare
/// point (`.5`, `5.`), no `+`, no negative zero. [`Amount::parse`] also reads the forms a
/// service's reply may use (an exponent), and is what decoding uses.
///
/// ```
/// use whish_core::Amount;
/// assert!("12.34".parse::<Amount>().is_ok());
/// for bad in ["1e3", ".5", "5.", "+5", "-0", "1_000", " 1 2"] {
///     assert!(bad.parse::<Amount>().is_err(), "{bad}");
/// }
/// ```
impl FromStr for Amount {
    type Err = AmountParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if !is_plain_decimal_text(t) {
            return Err(AmountParseError(s.to_owned()));
        }
        Amount::parse(t)
    }
}

/// `-?digits(.digits)?`, and not a negative zero.
fn is_plain_decimal_text(t: &str) -> bool {
    let unsigned = t.strip_prefix('-').unwrap_or(t);
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (unsigned, None),
    };
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    let shaped = digits(whole) && fraction.is_none_or(digits);
    let negative_zero = t.starts_with('-') && unsigned.bytes().all(|b| b == b'0' || b == b'.');
    shaped && !negative_zero
}

/// Text that is not a decimal number (kept as given; `Display` shows at most 40 characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{}` is not a decimal amount", crate::error::excerpt(.0, 40))]
#[non_exhaustive]
pub struct AmountParseError(pub String);

/// `[+-]digits[.digits][(e|E)[+-]digits]`, or `[+-].digits` / `digits.`.
fn is_decimal_text(t: &str) -> bool {
    let b = t.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return false;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        i += 1;
        if i < b.len() && matches!(b[i], b'+' | b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    i == b.len()
}

impl Serialize for Amount {
    /// A JSON number with the shortest exact text. An amount no JSON number can carry exactly
    /// (more significant digits than a double holds, as a reply may send in a string) is written
    /// as a JSON string of its exact text rather than rounded; requests never carry one, because
    /// [`Amount::check_rules`] and the request builders refuse it before sending.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.to_json_number() {
            Some(n) => n.serialize(s),
            None => s.serialize_str(&self.to_plain_string()),
        }
    }
}

struct AmountVisitor;

impl<'de> Visitor<'de> for AmountVisitor {
    type Value = Amount;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number or a numeric string")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Amount, E> {
        Ok(Amount(Decimal::from(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Amount, E> {
        Ok(Amount(Decimal::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Amount, E> {
        Amount::from_f64(v).ok_or_else(|| E::custom(format!("{v} is out of range for an amount")))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Amount, E> {
        Amount::parse(v).map_err(E::custom)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Amount, A::Error> {
        // serde_json's arbitrary_precision form, if another crate in the build enabled it.
        match map.next_entry::<String, String>()? {
            Some((_, text)) => Amount::parse(&text).map_err(de::Error::custom),
            None => Err(de::Error::custom("empty object is not an amount")),
        }
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Amount, D::Error> {
        d.deserialize_any(AmountVisitor)
    }
}

/// `#[serde(with = "whish_core::runtime::amount_as_string")]`: an [`Amount`] written as a JSON string
/// (the collect service's `amount`), read from a string or a number.
pub mod as_string {
    use super::*;

    /// Write the shortest exact text as a JSON string.
    ///
    /// # Errors
    ///
    /// The (de)serializer's error when the value is not the expected text or number.
    pub fn serialize<S: Serializer>(v: &Amount, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_plain_string())
    }

    /// Read a string or a number.
    ///
    /// # Errors
    ///
    /// The (de)serializer's error when the value is not the expected text or number.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Amount, D::Error> {
        d.deserialize_any(AmountVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) {
        let a: Amount = serde_json::from_str(text).expect("reads");
        assert_eq!(a.to_plain_string(), text, "value kept exactly");
        assert_eq!(
            serde_json::to_string(&a).expect("writes"),
            text,
            "written back identical"
        );
        let s: Amount = serde_json::from_str(&format!("\"{text}\"")).expect("reads string");
        assert_eq!(s, a);
    }

    #[test]
    fn a_double_of_cents_reads_as_its_shortest_decimal() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for i in 0..200_000i64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Small and large cents, both signs, and every tenth one a whole number of dimes.
            let cents =
                (x % 100_000_000_000_000) as i64 / if i % 3 == 0 { 1_000_000_000 } else { 1 };
            let cents = if i % 10 == 0 { cents / 10 * 10 } else { cents };
            let cents = if i % 2 == 0 { cents } else { -cents };
            let v = cents as f64 / 100.0;
            let text = Decimal::from_str_exact(&format!("{v}")).expect("decimal");
            let read = Amount::from_f64(v).expect("amount").value();
            assert_eq!((read, read.scale()), (text, text.scale()), "{v}");
        }
    }

    #[test]
    fn the_fifteen_digit_shortcut_agrees_with_the_text_rule() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200_000 {
            let digits = 1 + next() % 15;
            let m = (next() % 10u64.pow(digits as u32)) as i64;
            let m = if next() % 2 == 0 { m } else { -m };
            let scale = (next() % 23) as u32;
            let v = Decimal::new(m, scale);
            let a = Amount(v);
            assert_eq!(
                a.to_exact_f64().map(f64::to_bits),
                Amount::to_exact_f64_by_text(v.normalize()).map(f64::to_bits),
                "{v}"
            );
        }
        // Beyond 15 digits the text decides: 17 digits that print back, and some that do not.
        assert_eq!(
            Amount(Decimal::from_str_exact("3.3333333333333335").unwrap()).to_exact_f64(),
            Some(3.3333333333333335)
        );
        assert_eq!(
            Amount(Decimal::from_str_exact("0.10000000000000001").unwrap()).to_exact_f64(),
            None
        );
    }

    #[test]
    fn amounts_round_trip_exactly() {
        for t in [
            "0.1",
            "12.34",
            "101.1",
            "3.3333333333333335",
            "1000",
            "0.01",
            "250000",
        ] {
            round_trip(t);
        }
    }

    #[test]
    fn reads_exact_decimal_not_binary_expansion() {
        let a: Amount = serde_json::from_str("12.34").expect("reads");
        assert_eq!(a.value(), Decimal::new(1234, 2));
        let a: Amount = serde_json::from_str("0.1").expect("reads");
        assert_eq!(a.value(), Decimal::new(1, 1));
    }

    #[test]
    fn writes_shortest_form() {
        assert_eq!(
            serde_json::to_string(&Amount::new(Decimal::new(1200, 2))).expect("w"),
            "12"
        );
        assert_eq!(
            serde_json::to_string(&Amount::new(Decimal::new(1230, 2))).expect("w"),
            "12.3"
        );
        assert_eq!(Amount::new(Decimal::new(100000, 2)).to_string(), "1000");
    }

    #[test]
    fn as_string_writes_a_json_string() {
        #[derive(Serialize, Deserialize)]
        struct Body {
            #[serde(with = "as_string")]
            amount: Amount,
        }
        let b = Body {
            amount: Amount::parse("12.50").expect("ok"),
        };
        assert_eq!(
            serde_json::to_string(&b).expect("w"),
            r#"{"amount":"12.5"}"#
        );
        let back: Body = serde_json::from_str(r#"{"amount":"12.34"}"#).expect("r");
        assert_eq!(back.amount.to_string(), "12.34");
        let back: Body = serde_json::from_str(r#"{"amount":12.34}"#).expect("r");
        assert_eq!(back.amount.to_string(), "12.34");
    }

    #[test]
    fn not_representable_as_json_number_is_refused_before_sending_and_never_rounded() {
        let a = Amount::parse("0.12345678901234567890123").expect("ok");
        assert!(!a.is_exact_json_number());
        // Written, it keeps its exact text (as a string) instead of failing or rounding.
        assert_eq!(
            serde_json::to_string(&a).expect("w"),
            "\"0.12345678901234567890123\""
        );
        // Two decimals, but more digits than a double holds: refused by the rules.
        let big = Amount::parse("12345678901234567.89").expect("ok");
        assert!(big.check_rules(&Currency::Usd, "amount").is_err());
        assert!(Amount::parse("5.0000000000000000000000000001").is_ok());
    }

    #[test]
    fn a_double_with_an_exponent_reads_as_its_shortest_decimal() {
        // Found by the amount property test: without serde_json's correctly rounded float
        // parsing (`float_roundtrip`), 2.21e25 read back as 22099999999999997000000000.
        for text in ["2.21e25", "61E23", "1e22", "9007199254740993e3"] {
            let a: Amount = serde_json::from_str(text).expect("reads");
            let back: Amount =
                serde_json::from_str(&serde_json::to_string(&a).expect("w")).expect("r");
            assert_eq!(a, back, "{text}");
        }
        let a: Amount = serde_json::from_str("2.21e25").expect("reads");
        assert_eq!(a.to_plain_string(), "22100000000000000000000000");
    }

    #[test]
    fn only_plain_decimal_text_is_an_amount() {
        for ok in ["1", "-1", "+1.5", "0.1", ".5", "5.", "1e3", "1.5E-2"] {
            assert!(Amount::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "1_000", "", " ", "1.2.3", "e5", "1e", "inf", "NaN", "0x10", "1 000", "--1",
        ] {
            assert!(Amount::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn text_from_a_person_is_plain_decimal_only() {
        for ok in ["1", "-1", "0.1", "12.34", "1000", " 7 "] {
            assert!(ok.parse::<Amount>().is_ok(), "{ok}");
        }
        for bad in [
            "+1.5", ".5", "5.", "1e3", "1.5E-2", "-0", "-0.00", "1_000", "",
        ] {
            assert!(bad.parse::<Amount>().is_err(), "{bad:?}");
        }
        // A reply may still use the other forms.
        let a: Amount = serde_json::from_str(r#""1.5E3""#).expect("reads");
        assert_eq!(a.to_plain_string(), "1500");
    }

    #[test]
    fn rejects_non_numbers() {
        assert!(serde_json::from_str::<Amount>(r#""abc""#).is_err());
        assert!(serde_json::from_str::<Amount>(r#""""#).is_err());
        assert!(serde_json::from_str::<Amount>("true").is_err());
    }

    fn rule(text: &str, c: Currency) -> Result<(), ValidationKind> {
        Amount::parse(text)
            .expect("ok")
            .check_rules(&c, "amount")
            .map_err(|e| e.kind)
    }

    #[test]
    fn amount_rules() {
        assert_eq!(rule("1.00", Currency::Usd), Ok(()));
        assert_eq!(rule("1", Currency::Usd), Ok(()));
        assert_eq!(rule("12.34", Currency::Usd), Ok(()));
        assert_eq!(
            rule("12.340", Currency::Usd),
            Ok(()),
            "trailing zeros are not decimals"
        );
        assert_eq!(
            rule("0.99", Currency::Usd),
            Err(ValidationKind::BelowMinimum {
                minimum: "1.00 USD".into()
            })
        );
        assert_eq!(
            rule("1.001", Currency::Usd),
            Err(ValidationKind::TooManyDecimals { allowed: 2 })
        );
        assert_eq!(rule("0", Currency::Usd), Err(ValidationKind::NotPositive));
        assert_eq!(rule("-5", Currency::Lbp), Err(ValidationKind::NotPositive));
        assert_eq!(rule("1000", Currency::Lbp), Ok(()));
        assert_eq!(rule("1000.00", Currency::Lbp), Ok(()));
        assert_eq!(
            rule("999", Currency::Lbp),
            Err(ValidationKind::BelowMinimum {
                minimum: "1000 LBP".into()
            })
        );
        assert_eq!(
            rule("1000.5", Currency::Lbp),
            Err(ValidationKind::TooManyDecimals { allowed: 0 })
        );
        assert_eq!(
            rule("10", Currency::Other("AED".into())),
            Err(ValidationKind::UnsupportedCurrency)
        );
    }

    #[test]
    fn currencies() {
        assert_eq!(Currency::Lbp.id(), Some(1));
        assert_eq!(Currency::Usd.id(), Some(2));
        assert_eq!(Currency::from_id(2), Some(Currency::Usd));
        assert_eq!(Currency::from_id(9), None);
        assert_eq!(Currency::from_code("AED"), Currency::Other("AED".into()));
        assert_eq!(
            serde_json::to_string(&Currency::Usd).expect("w"),
            r#""USD""#
        );
        let c: Currency = serde_json::from_str(r#""EUR""#).expect("r");
        assert_eq!(c, Currency::Other("EUR".into()));
    }
}
