//! The international top-up service: balance, fetch options, pay.

mod catalogue;

use std::collections::HashMap;

use rust_decimal::Decimal;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::format_description;

use crate::config::Settings;
use crate::envelope::Reply;
use crate::values::{decimal_number, num, object, text};

const INVALID: &str = "external.invalid.request";

/// One sold item, as the control API reports it.
#[derive(Debug, Clone)]
pub(crate) struct Sale {
    pub external_id: String,
    pub transaction_id: String,
    pub provider: String,
    pub option_id: String,
    pub amount: Decimal,
    pub pin: Option<String>,
}

/// The top-up service's state (the session's currency is USD).
#[derive(Debug)]
pub(crate) struct TopupWorld {
    pub balance: Decimal,
    pub void_balance: Decimal,
    pub sales: Vec<Sale>,
    /// The recorded reply of each externalId given to pay, replayed verbatim.
    pub replies: HashMap<String, Reply>,
    pub next: u64,
}

impl TopupWorld {
    pub(crate) fn new(s: &Settings) -> TopupWorld {
        TopupWorld {
            balance: s.topup_balance,
            void_balance: s.topup_void_balance,
            sales: Vec::new(),
            replies: HashMap::new(),
            next: 1,
        }
    }
}

/// GET /account/balance
pub(crate) fn balance(w: &TopupWorld) -> Reply {
    Reply::ok(
        json!({"balanceDetails": {"balance": num(w.balance), "voidBalance": num(w.void_balance)}}),
    )
}

/// POST /v2/{provider}/fetch
pub(crate) fn fetch(provider: &str, body: &[u8]) -> Reply {
    let Some(p) = catalogue::provider(provider) else {
        return Reply::fail(
            "external.unknown.provider",
            "Provider code unknown or not active.",
        );
    };
    let Some(target) = object(body).and_then(|b| text(&b, "target").map(str::to_owned)) else {
        return Reply::fail(INVALID, "target is required.");
    };
    let Some(normalized) = p.normalize(&target) else {
        return Reply::fail(
            "external.error.no.offers",
            "Offers could not be retrieved for this target.",
        );
    };
    Reply::ok(json!({
        "target": normalized,
        "options": p.options.iter().map(|o| json!({
            "id": o.id,
            "displayName": o.display_name,
            "amount": o.amount,
            "price": o.price,
            "currency": "AED",
            "metadata": {"provider": p.code, "kind": if p.vouchers { "voucher" } else { "airtime" }},
        })).collect::<Vec<_>>(),
    }))
}

/// POST /v2/{provider}/pay
pub(crate) fn pay(w: &mut TopupWorld, provider: &str, body: &[u8], now: OffsetDateTime) -> Reply {
    let Some(b) = object(body) else {
        return Reply::fail(INVALID, "The body is not a JSON object.");
    };
    let Some(external_id) = text(&b, "externalId").map(str::to_owned) else {
        return Reply::fail(INVALID, "externalId is required.");
    };
    if let Some(recorded) = w.replies.get(&external_id) {
        return recorded.clone().retrieved(true);
    }
    let reply = pay_new(w, provider, &b, &external_id, now);
    w.replies.insert(external_id, reply.clone());
    reply.retrieved(false)
}

fn pay_new(
    w: &mut TopupWorld,
    provider: &str,
    b: &Value,
    external_id: &str,
    now: OffsetDateTime,
) -> Reply {
    let Some(p) = catalogue::provider(provider) else {
        return Reply::fail(
            "external.unknown.provider",
            "Provider code unknown or not active.",
        );
    };
    let (Some(target), Some(option_id)) = (text(b, "target"), text(b, "optionId")) else {
        return Reply::fail(INVALID, "target and optionId are required.");
    };
    let Some(target) = p.normalize(target) else {
        return Reply::fail(
            "external.error.no.offers",
            "Offers could not be retrieved for this target.",
        );
    };
    let Some(option) = p.options.iter().find(|o| o.id == option_id) else {
        return Reply::fail(INVALID, "optionId is not an option of this provider.");
    };
    let Some(amount) = b.get("amount").and_then(Value::as_f64) else {
        return Reply::fail(INVALID, "amount is required (a number).");
    };
    // The exact number fetch returned, bit for bit: no rounding, no tolerance.
    if amount.to_bits() != option.amount.to_bits() {
        return Reply::fail(
            "external.amount.mismatch",
            "The amount differs from the option's amount.",
        );
    }
    let Some(cost) = b.get("amount").and_then(decimal_number) else {
        return Reply::fail(INVALID, "amount is not a number.");
    };
    let from_void = p.vouchers && w.void_balance >= cost;
    if !from_void && w.balance < cost {
        return Reply::fail(
            "external.failed.payment",
            "Payment could not be completed: insufficient balance.",
        );
    }
    if from_void {
        w.void_balance -= cost;
    } else {
        w.balance -= cost;
    }
    let n = w.next;
    w.next += 1;
    let transaction_id = format!("TU{n:08}");
    let (serial, secret) = if p.vouchers {
        let pin = format!(
            "{:016}",
            (n * 7_777_777_777 + 1_234_567) % 10_000_000_000_000_000
        );
        (Some(format!("SN{n:010}")), Some(pin))
    } else {
        (None, None)
    };
    let pin_issued = secret.clone();
    let formatted = secret.as_ref().map(|s| {
        s.as_bytes()
            .chunks(4)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
            .join("-")
    });
    let charged = format!("{} USD", cost.normalize());
    let item = json!({
        "transactionId": transaction_id,
        "phone": target,
        "amount": charged,
        "originalAmount": charged,
        "fees": null,
        "service": p.service,
        "denomination": option.display_name,
        "serial": serial,
        "secret": secret,
        "formattedSecret": formatted,
        "validity": if p.vouchers { Value::from("12 months") } else { Value::Null },
        "help": p.help,
        "expiry": if p.vouchers { Value::from((now + time::Duration::days(365)).date().to_string()) } else { Value::Null },
        "date": now.date().to_string(),
        "time": now.format(format_description!("[hour]:[minute]")).unwrap_or_default(),
        "picture": "",
        "pictureUrl": "",
        "voided": false,
        "fromVoid": from_void,
        "printType": 1,
        "viewType": 1,
    });
    w.sales.push(Sale {
        external_id: external_id.to_owned(),
        transaction_id,
        provider: p.code.to_owned(),
        option_id: option.id.to_owned(),
        amount: cost,
        pin: pin_issued,
    });
    let mut reply = Reply::ok(json!({ "listOfSoldItems": [item] }));
    if let Some(o) = reply.0.as_object_mut() {
        o.insert(
            "dialog".into(),
            json!({"title": "Success", "message": "Top-up completed.", "yesButton": null, "noButton": null}),
        );
    }
    reply
}
