//! The money-transfer world: balances, transfers, the activity event log and the statement.

use std::collections::HashMap;

use rust_decimal::Decimal;
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::clock::date_time;
use crate::config::{FeeBracket, Limits, Settings};
use crate::values::num;

/// The mode of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Cash,
    Wallet,
}

/// Where a transfer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Sent,
    Received,
    CanceledFull,
    /// A wallet send whose outcome stays unknown (the pending wallet phone).
    WalletPending,
}

impl State {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Sent => "SENT",
            State::Received => "RECEIVED",
            State::CanceledFull => "CANCELED_FULL",
            State::WalletPending => "PENDING",
        }
    }
}

/// One transfer.
#[derive(Debug, Clone)]
pub(crate) struct Transfer {
    pub transfer_id: String,
    pub ltn_number: String,
    pub request_id: i64,
    pub mode: Mode,
    pub currency: &'static str,
    /// What the receiver gets.
    pub amount: Decimal,
    pub fee: Decimal,
    /// What the account was charged.
    pub total: Decimal,
    pub state: State,
    pub callback_url: Option<String>,
    pub identity_number: Option<String>,
    pub cancel_reason: Option<String>,
    pub created: OffsetDateTime,
}

/// One line of the activity event log.
#[derive(Debug, Clone)]
pub(crate) struct ActivityEvent {
    pub transfer_id: String,
    pub status: &'static str,
    pub amount: Decimal,
    pub fee: Decimal,
    pub total: Decimal,
    pub currency: &'static str,
    pub at: OffsetDateTime,
    pub request_id: i64,
}

/// One line of a currency's statement.
#[derive(Debug, Clone)]
pub(crate) struct StatementLine {
    pub id: String,
    pub kind: &'static str,
    pub debit: Decimal,
    pub credit: Decimal,
    pub balance: Decimal,
    pub at: OffsetDateTime,
    pub request_id: Option<i64>,
}

/// The transfer service's state.
#[derive(Debug)]
pub(crate) struct TransferWorld {
    pub price_list: Vec<FeeBracket>,
    pub limits: Vec<Limits>,
    pub countries: Vec<(i64, String, String)>,
    pub countries_created: OffsetDateTime,
    pub transfers: Vec<Transfer>,
    /// Request-ids of accepted sends: a second send with one answers transfer.already.done.
    pub used_request_ids: HashMap<i64, usize>,
    pub activity: Vec<ActivityEvent>,
    pub statements: HashMap<&'static str, Vec<StatementLine>>,
    pub next: u64,
    /// Where each transfer is in `transfers`, by LTN number and by transfer id: a batch of ten
    /// thousand sends, its statuses and its collections stay in constant time each.
    pub by_ltn: HashMap<String, usize>,
    pub by_transfer_id: HashMap<String, usize>,
    /// The total sent (not cancelled) per currency and UTC day: the daily limit's check, kept as
    /// transfers are sent and cancelled instead of summed over every transfer on each send.
    pub sent_by_day: HashMap<(&'static str, time::Date), Decimal>,
}

/// `USD` or `LBP` for a currency id, as the service numbers them.
pub(crate) fn currency_of(id: i64) -> Option<&'static str> {
    match id {
        1 => Some("LBP"),
        2 => Some("USD"),
        _ => None,
    }
}

/// A fee quote: what the receiver gets, the fee, and what the account pays.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quote {
    pub amount: Decimal,
    pub fee: Decimal,
    pub total: Decimal,
}

impl TransferWorld {
    pub(crate) fn new(s: &Settings, now: OffsetDateTime) -> TransferWorld {
        let mut w = TransferWorld {
            price_list: s.price_list.clone(),
            limits: s.limits.clone(),
            countries: s.sending_countries.clone(),
            countries_created: now,
            transfers: Vec::new(),
            used_request_ids: HashMap::new(),
            activity: Vec::new(),
            statements: HashMap::new(),
            next: 1,
            by_ltn: HashMap::new(),
            by_transfer_id: HashMap::new(),
            sent_by_day: HashMap::new(),
        };
        for (currency, amount) in &s.transfer_balances {
            if let Some(c) = static_currency(currency) {
                w.set_balance(c, *amount, now);
            }
        }
        w
    }

    pub(crate) fn balance(&self, currency: &str) -> Decimal {
        self.statements
            .get(currency)
            .and_then(|l| l.last())
            .map(|l| l.balance)
            .unwrap_or(Decimal::ZERO)
    }

    /// Append a statement line, computing its balance: `balance = previous + debit - credit`.
    pub(crate) fn post(&mut self, currency: &'static str, mut line: StatementLine) {
        line.balance = self.balance(currency) + line.debit - line.credit;
        self.statements.entry(currency).or_default().push(line);
    }

    /// Move the balance to `amount` with a TOPUP line: a debit when it goes up, a credit when it
    /// goes down (a sandbox choice: the spec names only TRANSFER and TOPUP, and no type for a
    /// decrease; the balance rule holds either way).
    pub(crate) fn set_balance(
        &mut self,
        currency: &'static str,
        amount: Decimal,
        at: OffsetDateTime,
    ) {
        let current = self.balance(currency);
        let line = |kind, debit, credit| StatementLine {
            id: String::new(),
            kind,
            debit,
            credit,
            balance: Decimal::ZERO,
            at,
            request_id: None,
        };
        if amount > current {
            self.post(currency, line("TOPUP", amount - current, Decimal::ZERO));
        } else if amount < current {
            self.post(currency, line("TOPUP", Decimal::ZERO, current - amount));
        }
    }

    pub(crate) fn quote(&self, currency: &str, amount: Decimal, deduct: bool) -> Option<Quote> {
        let bracket = self
            .price_list
            .iter()
            .find(|b| b.currency == currency && b.min <= amount && amount <= b.max)?;
        let fee = bracket.fee;
        if deduct {
            (amount > fee).then_some(Quote {
                amount: amount - fee,
                fee,
                total: amount,
            })
        } else {
            Some(Quote {
                amount,
                fee,
                total: amount + fee,
            })
        }
    }

    pub(crate) fn limits(&self, currency: &str) -> Option<&Limits> {
        self.limits.iter().find(|l| l.currency == currency)
    }

    /// The sum sent today (UTC day of `now`) in a currency, cancelled transfers left out.
    pub(crate) fn sent_today(&self, currency: &str, now: OffsetDateTime) -> Decimal {
        static_currency(currency)
            .and_then(|c| self.sent_by_day.get(&(c, now.date())))
            .copied()
            .unwrap_or_default()
    }

    /// Add a transfer to the world and its indexes.
    pub(crate) fn add(&mut self, t: Transfer) -> usize {
        let index = self.transfers.len();
        self.by_ltn.insert(t.ltn_number.clone(), index);
        self.by_transfer_id.insert(t.transfer_id.clone(), index);
        if t.state != State::CanceledFull {
            *self
                .sent_by_day
                .entry((t.currency, t.created.date()))
                .or_default() += t.total;
        }
        self.transfers.push(t);
        index
    }

    /// A transfer was cancelled: its total no longer counts against its day's limit.
    pub(crate) fn cancelled(&mut self, index: usize) {
        let t = &self.transfers[index];
        if let Some(sum) = self.sent_by_day.get_mut(&(t.currency, t.created.date())) {
            *sum -= t.total;
        }
    }

    /// The transfer with this LTN number.
    pub(crate) fn by_ltn(&self, ltn: &str) -> Option<usize> {
        self.by_ltn.get(ltn).copied()
    }

    /// The transfer with this id.
    pub(crate) fn by_transfer_id(&self, id: &str) -> Option<usize> {
        self.by_transfer_id.get(id).copied()
    }

    pub(crate) fn record(&mut self, t: &Transfer, status: &'static str, at: OffsetDateTime) {
        self.activity.push(ActivityEvent {
            transfer_id: t.transfer_id.clone(),
            status,
            amount: t.amount,
            fee: t.fee,
            total: t.total,
            currency: t.currency,
            at,
            request_id: t.request_id,
        });
    }

    pub(crate) fn next_number(&mut self) -> u64 {
        let n = self.next;
        self.next += 1;
        n
    }

    pub(crate) fn countries_json(&self) -> Value {
        let created = (self.countries_created.unix_timestamp_nanos() / 1_000_000) as i64;
        json!({"list": self.countries.iter().map(|(id, name, code)| json!({
            "id": id, "name": name, "code": code,
            "defaultCurrencyId": if *id == 1 { Some(2) } else { None::<i64> },
            "dateCreation": created,
        })).collect::<Vec<_>>()})
    }

    pub(crate) fn status_json(t: &Transfer) -> Value {
        let identity = match (&t.identity_number, t.state) {
            (Some(n), State::Received) => json!({
                "number": n,
                "type": "ID_CARD",
                "frontImage": format!("https://identity.sandbox.invalid/{n}/front.png"),
                "backImage": format!("https://identity.sandbox.invalid/{n}/back.png"),
            }),
            _ => Value::Null,
        };
        json!({
            "ltnNumber": t.ltn_number,
            "transferId": t.transfer_id,
            "status": t.state.as_str(),
            "receiverIdentity": identity,
        })
    }

    pub(crate) fn activity_json(
        &self,
        from: OffsetDateTime,
        to: OffsetDateTime,
        currency: Option<&str>,
    ) -> Value {
        json!({"list": self.activity.iter()
            .filter(|e| e.at >= from && e.at <= to && currency.is_none_or(|c| c == e.currency))
            .map(|e| json!({
                "id": e.transfer_id, "status": e.status, "amount": num(e.amount), "fee": num(e.fee),
                "total": num(e.total), "currency": e.currency, "date": date_time(e.at),
                "requestId": e.request_id,
            })).collect::<Vec<_>>()})
    }

    pub(crate) fn statement_json(
        &self,
        from: OffsetDateTime,
        to: OffsetDateTime,
        currency: Option<&str>,
        now: OffsetDateTime,
    ) -> Value {
        let mut list = Vec::new();
        for c in ["USD", "LBP"] {
            if currency.is_some_and(|x| x != c) {
                continue;
            }
            let lines = self.statements.get(c).map(Vec::as_slice).unwrap_or(&[]);
            list.push(json!({
                "transactions": lines.iter().filter(|l| l.at >= from && l.at <= to).map(|l| json!({
                    "id": l.id, "type": l.kind, "debit": num(l.debit), "credit": num(l.credit),
                    "balance": num(l.balance), "currency": c, "date": date_time(l.at),
                    "requestId": l.request_id,
                })).collect::<Vec<_>>(),
                "currentBalance": {"currency": c, "balance": num(self.balance(c)), "date": date_time(now)},
            }));
        }
        json!({ "list": list })
    }
}

/// The `&'static str` of a currency code the transfer service knows.
pub(crate) fn static_currency(code: &str) -> Option<&'static str> {
    match code {
        "USD" => Some("USD"),
        "LBP" => Some("LBP"),
        _ => None,
    }
}
