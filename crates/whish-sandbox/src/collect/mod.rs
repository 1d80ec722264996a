//! The hosted-collect service: balance, create with a hosted page, status, refund.

pub(crate) mod page;
pub(crate) mod state;

use rust_decimal::Decimal;
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::config::Settings;
use crate::envelope::Reply;
use crate::values::{object, text, text_or_number};
use state::{CollectWorld, LinkState, Payment};

const BAD: &str = "400";

/// What create answers: an envelope, or the HTTP 403 of strict mode.
pub(crate) enum Created {
    Reply(Reply),
    Forbidden(String),
}

/// GET /payment/account/balance
pub(crate) fn balance(w: &CollectWorld, s: &Settings, query: Option<&str>) -> Reply {
    let currency = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == "currency")
        .map(|(_, v)| v.into_owned());
    // `currency` is required: without it strict mode answers `400` (a required parameter
    // missing). Lenient mode answers in LBP, the only currency before v1.4.1, for clients written
    // for the older version. `balanceDetails.balance` repeats the balance in the older nested
    // shape some clients read.
    let c = match currency.as_deref().map(str::trim) {
        None | Some("") if s.strict => {
            return Reply::fail(
                BAD,
                "The query parameter currency (USD or LBP) is required.",
            );
        }
        None | Some("") => "LBP",
        Some(c) => c,
    };
    match crate::transfer::state::static_currency(c) {
        Some(c) => {
            let balance = crate::values::num(w.balances.get(c).copied().unwrap_or_default());
            Reply::ok(json!({"balance": balance, "balanceDetails": {"balance": balance}}))
        }
        None => Reply::fail("currency.not_supported", "Only LBP and USD are accepted."),
    }
}

/// POST /payment/svc
pub(crate) fn create(
    w: &mut CollectWorld,
    s: &Settings,
    root: &str,
    body: &[u8],
    now: OffsetDateTime,
) -> Created {
    let Some(b) = object(body) else {
        return Created::Reply(Reply::fail(BAD, "The body is not a JSON object."));
    };
    // The spec types externalId as String; a number is read as its text (clients written in
    // other languages send one).
    let Some(external_id) = text_or_number(&b, "externalId") else {
        return Created::Reply(Reply::fail(BAD, "externalId is required."));
    };
    if let Some(recorded) = w.create_replies.get(&external_id) {
        return Created::Reply(recorded.clone().retrieved(true));
    }
    let urls = [
        "successCallbackUrl",
        "failureCallbackUrl",
        "successRedirectUrl",
        "failureRedirectUrl",
    ];
    let mut local = Vec::new();
    for key in urls {
        if let Some(u) = text(&b, key)
            && let Err(e) = whish_core::check_public_url(u, key)
        {
            local.push(e.to_string());
        }
    }
    if let Some(first) = local.first() {
        if s.strict {
            return Created::Forbidden(first.clone());
        }
        tracing::warn!(
            external_id,
            "sandbox: accepting a non-public callback or redirect address; the real service answers HTTP 403 for it ({first})"
        );
    }
    let reply = match check_and_create(w, s, root, &b, &external_id, now) {
        Ok(r) | Err(r) => r,
    };
    // A 400 is a payload to fix, not a transaction: it does not burn the externalId. Every other
    // result is recorded and replayed verbatim.
    if reply.code() != Some(BAD) {
        w.create_replies.insert(external_id, reply.clone());
    }
    Created::Reply(reply.retrieved(false))
}

fn check_and_create(
    w: &mut CollectWorld,
    s: &Settings,
    root: &str,
    b: &Value,
    external_id: &str,
    now: OffsetDateTime,
) -> Result<Reply, Reply> {
    let currency = match text(b, "currency") {
        None => return Err(Reply::fail(BAD, "currency is required.")),
        Some(c) => crate::transfer::state::static_currency(c).ok_or_else(|| {
            Reply::fail("currency.not_supported", "Only LBP and USD are accepted.")
        })?,
    };
    // The spec types amount as String; a JSON number is read as its text, with the same rules.
    let Some(amount_text) = text_or_number(b, "amount") else {
        return Err(Reply::fail(BAD, "amount is required."));
    };
    let amount: Decimal = amount_text
        .trim()
        .parse()
        .map_err(|_| Reply::fail(BAD, "amount is not a decimal number."))?;
    let ok = match currency {
        "USD" => amount >= Decimal::ONE && amount.normalize().scale() <= 2,
        _ => amount >= Decimal::from(1000) && amount.normalize().scale() == 0,
    };
    if !ok {
        return Err(Reply::fail(
            BAD,
            "amount: USD at least 1.00 with up to 2 decimals; LBP a whole number of at least 1000.",
        ));
    }
    let url = |k: &str| text(b, k).map(str::to_owned);
    let (Some(sc), Some(fc), Some(sr), Some(fr)) = (
        url("successCallbackUrl"),
        url("failureCallbackUrl"),
        url("successRedirectUrl"),
        url("failureRedirectUrl"),
    ) else {
        return Err(Reply::fail(
            BAD,
            "The four callback and redirect addresses are required.",
        ));
    };
    w.next += 1;
    let token = unguessable_token();
    w.payments.push(Payment {
        external_id: external_id.to_owned(),
        token: token.clone(),
        currency,
        amount,
        invoice: text(b, "invoice").map(str::to_owned),
        success_callback_url: sc,
        failure_callback_url: fc,
        success_redirect_url: sr,
        failure_redirect_url: fr,
        state: LinkState::Pending,
        payer_phone: None,
        expires_at: now + s.link_expiry,
        failed_attempts: 0,
    });
    Ok(Reply::ok(
        json!({ "collectUrl": format!("{root}/collect/pay/{token}") }),
    ))
}

/// POST /payment/collect/status
pub(crate) fn status(w: &CollectWorld, body: &[u8]) -> Reply {
    let Some((currency, id)) = currency_and_id(body) else {
        return Reply::fail(BAD, "currency and externalId are required.");
    };
    match w.by_external_id(&id).map(|i| &w.payments[i]) {
        Some(p) if p.currency == currency => Reply::ok(json!({
            "collectStatus": p.state.as_str(),
            "payerPhoneNumber": p.payer_phone,
        })),
        _ => Reply::fail(
            "external_id.not_exists",
            "No payment with this externalId and currency.",
        ),
    }
}

/// POST /payment/svc/refund
pub(crate) fn refund(w: &mut CollectWorld, body: &[u8]) -> Reply {
    let Some((currency, id)) = currency_and_id(body) else {
        return Reply::fail(BAD, "currency and externalId are required.");
    };
    if let Some(recorded) = w.refund_replies.get(&id) {
        return recorded.clone().retrieved(true);
    }
    let Some(i) = w
        .by_external_id(&id)
        .filter(|i| w.payments[*i].currency == currency)
    else {
        // Nothing to record against: no such payment.
        return Reply::fail(
            "external_id.not_exists",
            "No payment with this externalId and currency.",
        );
    };
    if w.payments[i].state != LinkState::Success {
        // Rule 1: a resend replays the recorded result verbatim, an error code included.
        let reply = Reply::fail(
            "fail",
            "Only a successful payment that was not refunded can be refunded.",
        );
        w.refund_replies.insert(id, reply.clone());
        return reply.retrieved(false);
    }
    let (c, a) = (w.payments[i].currency, w.payments[i].amount);
    let balance = w.balances.entry(c).or_default();
    let Some(after) = balance.checked_sub(a) else {
        // Refused, and nothing changed.
        return Reply::fail("fail", "The refund cannot be computed for this balance.");
    };
    *balance = after;
    w.payments[i].state = LinkState::Refunded;
    let reply = Reply::ok(Value::Null);
    w.refund_replies.insert(id, reply.clone());
    reply.retrieved(false)
}

fn currency_and_id(body: &[u8]) -> Option<(String, String)> {
    let b = object(body)?;
    Some((
        text(&b, "currency")?.to_owned(),
        text_or_number(&b, "externalId")?,
    ))
}

/// One payer attempt on a link: what changed, which callback to call, where the browser goes.
#[derive(Debug)]
pub(crate) struct Attempt {
    pub state: LinkState,
    pub callback: (&'static str, String),
    pub redirect: String,
}

/// The payer submits phone and code for the link `i`. The link must be pending. A payment the
/// merchant balance cannot hold is refused with nothing changed (the link stays pending, the
/// balance as it was).
pub(crate) fn attempt(
    w: &mut CollectWorld,
    s: &Settings,
    i: usize,
    phone: &str,
    code: &str,
) -> Result<Attempt, String> {
    // The test phone is accepted with or without its leading `+`.
    let digits = |p: &str| p.trim().trim_start_matches('+').to_owned();
    let paid = digits(phone) == digits(&s.payer.phone) && code.trim() == s.payer.code;
    if paid {
        let (c, a) = (w.payments[i].currency, w.payments[i].amount);
        let balance = w.balances.entry(c).or_default();
        let after = balance
            .checked_add(a)
            .ok_or_else(|| "the merchant balance cannot hold this payment".to_owned())?;
        *balance = after;
        let p = &mut w.payments[i];
        p.state = LinkState::Success;
        p.payer_phone = Some(s.payer.phone.clone());
        Ok(Attempt {
            state: p.state,
            callback: ("collect.success", p.success_callback_url.clone()),
            redirect: p.success_redirect_url.clone(),
        })
    } else {
        let p = &mut w.payments[i];
        p.failed_attempts = p.failed_attempts.saturating_add(1);
        Ok(Attempt {
            state: p.state,
            callback: ("collect.failure", p.failure_callback_url.clone()),
            redirect: p.failure_redirect_url.clone(),
        })
    }
}

/// A hosted-page token nobody can guess from another one: 128 bits from the system's secure
/// random source, as hex.
fn unguessable_token() -> String {
    use ring::rand::{SecureRandom, SystemRandom};
    let mut bytes = [0u8; 16];
    if SystemRandom::new().fill(&mut bytes).is_err() {
        // The OS random source failing is not something a test tool can work around.
        tracing::error!("the system random source failed");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
