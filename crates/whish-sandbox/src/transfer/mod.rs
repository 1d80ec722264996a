//! The money-transfer service and the location lookups.

pub(crate) mod data;
mod send;
pub(crate) mod state;

use rust_decimal::Decimal;
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::clock::parse_date_time;
use crate::config::Settings;
use crate::envelope::Reply;
use crate::values::{absent, decimal_number, int, object, text};
use state::{Mode, State, StatementLine, Transfer, TransferWorld, currency_of};

const BAD_REQUEST: &str = "api.account.invalid_request";

/// POST /api/woo/send/money/fees
pub(crate) fn fees(w: &TransferWorld, body: &[u8]) -> Reply {
    let Some(b) = object(body) else {
        return Reply::fail(BAD_REQUEST, "The body is not a JSON object.");
    };
    if int(&b, "fromCountry").is_none() || int(&b, "toCountry").is_none() {
        return Reply::fail(BAD_REQUEST, "fromCountry and toCountry are required.");
    }
    let Some(currency) = int(&b, "currencyId").and_then(currency_of) else {
        return Reply::fail("currency.not_supported", "Currency not supported.");
    };
    let Some(amount) = b.get("amount").and_then(decimal_number) else {
        return Reply::fail(BAD_REQUEST, "amount is required (a number).");
    };
    if amount <= Decimal::ZERO {
        return Reply::fail(
            "amount.not_allowed",
            "The amount is below the price or negative.",
        );
    }
    let deduct = b
        .get("deductFees")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match w.quote(currency, amount, deduct) {
        Some(q) => Reply::ok(json!({
            "fees": crate::values::num(q.fee),
            "amount": crate::values::num(q.amount),
            "totalAmount": crate::values::num(q.total),
        })),
        None if deduct && w.quote(currency, amount, false).is_some() => {
            Reply::fail("amount.not_allowed", "The amount does not cover the fee.")
        }
        None => Reply::fail(
            "transfer.invalid_amount",
            "The amount is not in the price list.",
        ),
    }
}

/// POST /api/woo/send/money
pub(crate) fn send(
    w: &mut TransferWorld,
    s: &Settings,
    request_id: i64,
    body: &[u8],
    now: OffsetDateTime,
) -> Reply {
    if w.used_request_ids.contains_key(&request_id) {
        return Reply::fail(
            "transfer.already.done",
            "This Request-id was already used; no transfer was created.",
        );
    }
    let Some(b) = object(body) else {
        return Reply::fail(BAD_REQUEST, "The body is not a JSON object.");
    };
    let c = match send::check(w, &b, s.strict, now) {
        Ok(c) => c,
        Err((code, msg)) => return Reply::fail(code, &msg),
    };
    let Some(q) = (c.amount > Decimal::ZERO)
        .then(|| w.quote(c.currency, c.amount, c.deduct_fees))
        .flatten()
    else {
        return Reply::fail(
            "transfer.invalid_amount",
            "The amount is not in the price list.",
        );
    };
    if let Some(l) = w.limits(c.currency) {
        if c.amount > l.per_transfer {
            return Reply::fail(
                "transfer.exceeds_account_transaction_limit",
                "The amount is above the per-transfer limit.",
            );
        }
        if w.sent_today(c.currency, now) + q.total > l.daily {
            return Reply::fail(
                "transfer.exceeds_account_daily_limit",
                "The daily sending limit is reached.",
            );
        }
    }
    if w.balance(c.currency) < q.total {
        return Reply::fail(
            "transfer.account_reach_balance_limit",
            "Insufficient funds.",
        );
    }
    let wallet_state = match c.mode {
        Mode::Cash => None,
        Mode::Wallet if c.receiver_phone == s.wallets.credited => Some(State::Received),
        Mode::Wallet if c.receiver_phone == s.wallets.pending => Some(State::WalletPending),
        Mode::Wallet => {
            return Reply::fail(
                "receiver.svc.account.not.exists",
                "The receiver has no wallet account.",
            );
        }
    };
    let n = w.next_number();
    let t = Transfer {
        transfer_id: format!("TRF{n:07}"),
        ltn_number: format!("77{:08}", n * 7919 % 100_000_000),
        request_id,
        mode: c.mode,
        currency: c.currency,
        amount: q.amount,
        fee: q.fee,
        total: q.total,
        state: wallet_state.unwrap_or(State::Sent),
        callback_url: c.callback_url,
        identity_number: None,
        cancel_reason: None,
        created: now,
    };
    w.post(
        t.currency,
        StatementLine {
            id: t.transfer_id.clone(),
            kind: "TRANSFER",
            debit: Decimal::ZERO,
            credit: t.total,
            balance: Decimal::ZERO,
            at: now,
            request_id: Some(request_id),
        },
    );
    w.record(&t, "SENT", now);
    if t.state == State::Received {
        w.record(&t, "RECEIVED", now);
    }
    let index = w.transfers.len();
    w.used_request_ids.insert(request_id, index);
    let added = w.add(t.clone());
    debug_assert_eq!(added, index);
    let mut data = json!({
        "ltnNumber": t.ltn_number,
        "transferId": t.transfer_id,
        "charges": crate::values::num(t.fee),
    });
    match t.state {
        State::WalletPending => Reply::pending(),
        State::Received => {
            data["collectionAmount"] = crate::values::num(t.amount);
            data["balance"] = crate::values::num(w.balance(t.currency));
            data["transactionId"] = json!(900_000 + n);
            data["currency"] = json!(t.currency);
            Reply::ok(data).dialog("Success", "The receiver's wallet was credited.")
        }
        _ => Reply::ok(data),
    }
}

/// POST /api/woo/send/money/status
pub(crate) fn status(w: &TransferWorld, body: &[u8]) -> Reply {
    let Some(b) = object(body) else {
        return Reply::fail(BAD_REQUEST, "The body is not a JSON object.");
    };
    let found = if let Some(id) = text(&b, "transferId") {
        w.by_transfer_id(id)
    } else if let Some(ltn) = text(&b, "ltnNumber") {
        w.by_ltn(ltn)
    } else if let Some(rid) = int(&b, "requestId") {
        match w.used_request_ids.get(&rid) {
            Some(i) => Some(*i),
            None => {
                return Reply::fail(
                    "sending.transfer.invalid.info",
                    "No transfer was received with this requestId.",
                );
            }
        }
    } else {
        return Reply::fail(BAD_REQUEST, "Give transferId, ltnNumber or requestId.");
    };
    match found.map(|i| &w.transfers[i]) {
        None => Reply::fail("transfer.not_exists", "Transfer does not exist."),
        Some(t) if t.state == State::WalletPending => Reply::pending(),
        Some(t) => Reply::ok(TransferWorld::status_json(t)),
    }
}

/// POST /api/woo/cancel/send/money
pub(crate) fn cancel(
    w: &mut TransferWorld,
    s: &Settings,
    body: &[u8],
    now: OffsetDateTime,
) -> Reply {
    let Some(b) = object(body) else {
        return Reply::fail(BAD_REQUEST, "The body is not a JSON object.");
    };
    let Some(ltn) = text(&b, "ltnNumber") else {
        return Reply::fail(BAD_REQUEST, "ltnNumber is required.");
    };
    let Some(i) = w.by_ltn(ltn) else {
        return Reply::fail("transfer.not_exists", "Transfer does not exist.");
    };
    if w.transfers[i].mode == Mode::Wallet || w.transfers[i].state != State::Sent {
        return Reply::fail(
            "transfer.cannot_be_canceled",
            "The transfer is already cancelled or received, or is a mobile-wallet transfer.",
        );
    }
    w.cancelled(i);
    let t = &mut w.transfers[i];
    t.state = State::CanceledFull;
    t.cancel_reason = text(&b, "reason").map(str::to_owned);
    let t = t.clone();
    w.post(
        t.currency,
        StatementLine {
            id: t.transfer_id.clone(),
            // The current revision names only TRANSFER and TOPUP: the refund is a TRANSFER line
            // that raises the balance. CANCELLATION (an earlier revision's type) only when
            // lenient, for clients written against it.
            kind: if s.strict { "TRANSFER" } else { "CANCELLATION" },
            debit: t.total,
            credit: Decimal::ZERO,
            balance: Decimal::ZERO,
            at: now,
            request_id: Some(t.request_id),
        },
    );
    w.record(&t, "CANCELLED", now);
    Reply::ok(json!({
        "ltnNumber": t.ltn_number,
        "transferId": t.transfer_id,
        "status": "CANCELED_FULL",
        "receiverIdentity": null,
    }))
}

/// POST /api/woo/activity and /api/woo/statement
pub(crate) fn report(
    w: &TransferWorld,
    body: &[u8],
    statement: bool,
    now: OffsetDateTime,
) -> Reply {
    let Some(b) = object(body) else {
        return Reply::fail(BAD_REQUEST, "The body is not a JSON object.");
    };
    let (Some(from), Some(to)) = (
        text(&b, "fromDate").and_then(parse_date_time),
        text(&b, "toDate").and_then(parse_date_time),
    ) else {
        return Reply::fail(
            BAD_REQUEST,
            "fromDate and toDate are required, yyyy-MM-dd HH:mm:ss.",
        );
    };
    let currency = if absent(&b, "currencyId") {
        None
    } else {
        match int(&b, "currencyId").and_then(currency_of) {
            Some(c) => Some(c),
            None => return Reply::fail(BAD_REQUEST, "currencyId is 1 (LBP), 2 (USD) or null."),
        }
    };
    if statement {
        Reply::ok(w.statement_json(from, to, currency, now))
    } else {
        Reply::ok(w.activity_json(from, to, currency))
    }
}

/// GET /api/shops
pub(crate) fn shops(query: Option<&str>) -> Reply {
    let mut governorate = None;
    let mut district = None;
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let Ok(n) = v.parse::<i64>() else {
            return Reply::fail(BAD_REQUEST, "governorateId and districtId are numbers.");
        };
        match k.as_ref() {
            "governorateId" => governorate = Some(n),
            "districtId" => district = Some(n),
            _ => {}
        }
    }
    Reply::ok(data::shops(governorate, district))
}

/// What collecting cash did: the transfer, and the callback to deliver, if one was given.
#[derive(Debug)]
pub(crate) struct Collected {
    pub transfer_id: String,
    pub callback: Option<(String, String)>,
}

/// The receiver collects the cash: SENT to RECEIVED, and the callback body to POST.
pub(crate) fn collect_cash(
    w: &mut TransferWorld,
    ltn: &str,
    now: OffsetDateTime,
) -> Result<Collected, crate::ControlError> {
    let i = w
        .by_ltn(ltn)
        .filter(|i| w.transfers[*i].mode == Mode::Cash)
        .ok_or_else(|| {
            crate::ControlError::NotFound(format!("no cash-collection transfer with LTN {ltn}"))
        })?;
    if w.transfers[i].state != State::Sent {
        return Err(crate::ControlError::InvalidState(format!(
            "transfer {} is {}, not SENT",
            w.transfers[i].transfer_id,
            w.transfers[i].state.as_str()
        )));
    }
    let n = w.next_number();
    let t = &mut w.transfers[i];
    t.state = State::Received;
    t.identity_number = Some(format!("LB{:09}", n * 104_729 % 1_000_000_000));
    let t = t.clone();
    w.record(&t, "RECEIVED", now);
    let callback = t.callback_url.clone().map(|url| {
        let body = json!({
            "date": crate::clock::date_time(now),
            "externalId": t.request_id,
            "transferId": t.transfer_id,
            "status": "RECEIVED",
        });
        (url, body.to_string())
    });
    Ok(Collected {
        transfer_id: t.transfer_id,
        callback,
    })
}
