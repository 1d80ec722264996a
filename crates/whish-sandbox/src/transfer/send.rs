//! The checks the transfer service makes on a send, in order, each with its documented code.

use rust_decimal::Decimal;
use serde_json::Value;
use time::macros::format_description;
use time::{Date, OffsetDateTime};

use super::data::{REASONS, SOURCES_OF_FUNDS};
use super::state::{Mode, TransferWorld, currency_of};
use crate::values::{absent, decimal_number, int, text};

/// A send that passed every check.
#[derive(Debug)]
pub(crate) struct CheckedSend {
    pub mode: Mode,
    pub currency: &'static str,
    pub amount: Decimal,
    pub deduct_fees: bool,
    pub receiver_phone: String,
    pub callback_url: Option<String>,
}

/// Check a send body; `Err` is the failure code and a message.
pub(crate) fn check(
    w: &TransferWorld,
    body: &Value,
    strict: bool,
    now: OffsetDateTime,
) -> Result<CheckedSend, (&'static str, String)> {
    let fail = |code: &'static str, msg: &str| Err((code, msg.to_owned()));
    let mode = match body.get("paymentMode").and_then(Value::as_str) {
        None if absent(body, "paymentMode") => Mode::Cash,
        Some("CASH_COLLECTION") => Mode::Cash,
        Some("MOBILE_WALLET") => Mode::Wallet,
        _ => {
            return fail(
                "api.account.invalid_request",
                "paymentMode is not CASH_COLLECTION or MOBILE_WALLET",
            );
        }
    };
    let sender = body.get("sender").filter(|v| v.is_object());
    let receiver = body.get("receiver").filter(|v| v.is_object());
    let Some(sender) = sender else {
        return fail("sender.missing_info", "Sender information is missing.");
    };
    let Some(receiver) = receiver else {
        return fail("receiver.empty", "Receiver information is missing.");
    };
    let Some(currency) = int(body, "currencyId").and_then(currency_of) else {
        return fail("currency.not_supported", "Currency not supported.");
    };
    match int(body, "fromCountry") {
        Some(id) if w.countries.iter().any(|c| c.0 == id) => {}
        _ => {
            return fail(
                "transfer.from_country_not_allowed",
                "Sending from this country is not allowed.",
            );
        }
    }
    if int(body, "toCountry") != Some(1) {
        return fail(
            "transfer.not_allowed_countries",
            "Transfers go to Lebanon (country id 1) only.",
        );
    }
    if !text(body, "reason").is_some_and(|r| REASONS.contains(&r)) {
        return fail(
            "transfer.reason_empty",
            "reason must be one of the documented strings.",
        );
    }
    if !text(body, "sourceOfFunds").is_some_and(|r| SOURCES_OF_FUNDS.contains(&r)) {
        return fail(
            "transfer.sourceOfFunds_empty",
            "sourceOfFunds must be one of the documented strings.",
        );
    }
    check_customer(sender, Role::Sender, mode, strict, now)?;
    check_customer(receiver, Role::Receiver, mode, strict, now)?;
    let Some(amount) = body.get("amount").and_then(decimal_number) else {
        return fail("transfer.invalid_amount", "amount must be a number.");
    };
    let deduct_fees = body
        .get("deductFees")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let callback_url = match mode {
        Mode::Cash => text(body, "callbackUrl").map(str::to_owned),
        Mode::Wallet => None,
    };
    Ok(CheckedSend {
        mode,
        currency,
        amount,
        deduct_fees,
        receiver_phone: text(receiver, "phone").unwrap_or_default().to_owned(),
        callback_url,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Sender,
    Receiver,
}

fn check_customer(
    c: &Value,
    role: Role,
    mode: Mode,
    strict: bool,
    now: OffsetDateTime,
) -> Result<(), (&'static str, String)> {
    let sender = role == Role::Sender;
    let code = |s: &'static str, r: &'static str| if sender { s } else { r };
    let who = if sender { "Sender" } else { "Receiver" };
    let err = |c: &'static str, m: String| Err((c, m));
    for key in ["firstName", "lastName"] {
        match text(c, key) {
            None => {
                return err(
                    code(
                        "sender.customer.invalid_name",
                        "receiver.customer.invalid_name",
                    ),
                    format!("{who} {key} is missing."),
                );
            }
            Some(name) if !is_english(name) => {
                return err(
                    code(
                        "sender.customer.name_enlgish",
                        "receiver.customer.name_enlgish",
                    ),
                    format!("{who} name must be in English."),
                );
            }
            Some(_) => {}
        }
    }
    if let Some(middle) = text(c, "middleName")
        && !is_english(middle)
    {
        return err(
            code(
                "sender.customer.name_enlgish",
                "receiver.customer.name_enlgish",
            ),
            format!("{who} name must be in English."),
        );
    }
    match text(c, "phone") {
        None if sender => {
            return err(
                "sender.invalid.phone.number",
                "Sender phone is empty.".into(),
            );
        }
        Some(p) if is_phone(p) => {}
        _ => {
            return err(
                code(
                    "sender.invalid.phone_number",
                    "receiver.invalid.phone_number",
                ),
                format!("{who} phone is invalid."),
            );
        }
    }
    let identity = c.get("identity").filter(|v| v.is_object());
    if !sender && mode == Mode::Cash && identity.is_none() {
        return err(
            "receiver.customer.info_invalid",
            "A cash-collection receiver needs identity.dateBirth.".into(),
        );
    }
    let Some(identity) = identity else {
        return Ok(());
    };
    let dob_code = code(
        "sender.customer.date_of_birth_invalid",
        "receiver.customer.date_of_birth_invalid",
    );
    // The identity is optional for the sender and for a wallet receiver, but once sent its
    // dateBirth is checked ("checked only when identity is sent"); lenient mode lets it go.
    let birth = match text(identity, "dateBirth") {
        None if !strict && (sender || mode == Mode::Wallet) => return Ok(()),
        None => return err(dob_code, format!("{who} identity.dateBirth is missing.")),
        Some(t) => t,
    };
    let Ok(date) = Date::parse(birth, format_description!("[day]-[month]-[year]")) else {
        return err(
            dob_code,
            format!("{who} identity.dateBirth is not dd-MM-yyyy."),
        );
    };
    if date > now.date() {
        return err(
            dob_code,
            format!("{who} identity.dateBirth is in the future."),
        );
    }
    if !sender && years_between(date, now.date()) < 18 {
        return err(
            "receiver.customer.under_age",
            "Receiver is under age.".into(),
        );
    }
    Ok(())
}

fn years_between(birth: Date, today: Date) -> i32 {
    let mut years = today.year() - birth.year();
    if (today.month() as u8, today.day()) < (birth.month() as u8, birth.day()) {
        years -= 1;
    }
    years
}

/// Latin letters, spaces, hyphens, apostrophes and dots.
fn is_english(name: &str) -> bool {
    name.chars()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, ' ' | '-' | '\'' | '.'))
}

/// An optional `+` then 8 to 15 digits (spaces ignored).
fn is_phone(p: &str) -> bool {
    let digits: String = p
        .strip_prefix('+')
        .unwrap_or(p)
        .chars()
        .filter(|c| *c != ' ')
        .collect();
    (8..=15).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_phones_and_ages() {
        assert!(is_english("Jean-Pierre O'Neil"));
        assert!(!is_english("رامي"));
        assert!(is_phone("+96170123456"));
        assert!(!is_phone("+1"));
        let d =
            |s: &str| Date::parse(s, format_description!("[day]-[month]-[year]")).expect("date");
        assert_eq!(years_between(d("21-11-2008"), d("21-11-2026")), 18);
        assert_eq!(years_between(d("22-11-2008"), d("21-11-2026")), 17);
    }
}
