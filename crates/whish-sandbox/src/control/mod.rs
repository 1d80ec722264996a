//! The control API: make the world move (a receiver collects, a payer pays or mistypes, a link
//! expires), set balances, inject faults, read what was received, reset. The Rust methods on
//! [`Sandbox`] are here; the same operations as HTTP under `/_sandbox/` are in [`http`].

mod http;

pub(crate) use http::guarded;

use std::time::Duration;

use rust_decimal::Decimal;
use serde::Serialize;

use crate::callback::{self, CallbackDelivery};
use crate::clock::lock;
use crate::collect::{
    self,
    state::{CollectWorld, LinkState},
};
use crate::endpoint::Endpoint;
use crate::fault::Fault;
use crate::journal::ReceivedRequest;
use crate::transfer::state::static_currency;
use crate::{Sandbox, Shared, World, transfer};

/// Why a control call was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlError {
    /// No such transfer or link.
    NotFound(String),
    /// It exists but is not in a state that allows this.
    InvalidState(String),
    /// The call itself is malformed (an unknown currency, endpoint or fault).
    BadRequest(String),
    /// The control API refused the caller (a `Host` that is not loopback).
    Forbidden(String),
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControlError::NotFound(m) => write!(f, "not found: {m}"),
            ControlError::InvalidState(m) => write!(f, "invalid state: {m}"),
            ControlError::BadRequest(m) => write!(f, "bad request: {m}"),
            ControlError::Forbidden(m) => write!(f, "forbidden: {m}"),
        }
    }
}

impl std::error::Error for ControlError {}

/// A receiver collected cash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CashCollected {
    /// The transfer, now RECEIVED.
    pub transfer_id: String,
    /// The callback POST, when the transfer was sent with a `callbackUrl`.
    pub callback: Option<CallbackDelivery>,
}

/// A payer's attempt on a hosted link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LinkAttempt {
    /// The collectStatus after the attempt (`success`, or `pending` after a wrong code).
    pub collect_status: String,
    /// The callback GET of the attempt.
    pub callback: CallbackDelivery,
    /// Where the payer's browser was sent.
    pub redirect: String,
}

/// A transfer as the sandbox holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TransferRecord {
    /// transferId.
    pub transfer_id: String,
    /// ltnNumber.
    pub ltn_number: String,
    /// The Request-id of the send that created it.
    pub request_id: i64,
    /// SENT, RECEIVED, CANCELED_FULL, or PENDING (the pending wallet phone).
    pub status: String,
    /// `CASH_COLLECTION` or `MOBILE_WALLET`.
    pub payment_mode: String,
    /// `USD` or `LBP`.
    pub currency: String,
    /// What the account was charged (amount plus fee).
    pub total: Decimal,
}

/// A hosted payment as the sandbox holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PaymentRecord {
    /// externalId.
    pub external_id: String,
    /// collectStatus.
    pub collect_status: String,
    /// `USD` or `LBP`.
    pub currency: String,
    /// The amount.
    pub amount: Decimal,
    /// Failed attempts (wrong codes).
    pub failed_attempts: u32,
}

/// A top-up sale as the sandbox holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SaleRecord {
    /// externalId of the pay.
    pub external_id: String,
    /// transactionId of the sold item.
    pub transaction_id: String,
    /// Provider code.
    pub provider: String,
    /// Option id.
    pub option_id: String,
    /// Amount charged (USD).
    pub amount: Decimal,
    /// The voucher PIN issued, for vouchers (a fake, sandbox-made PIN: tests use it to check
    /// that the real one never reaches a log).
    pub pin: Option<String>,
}

impl Shared {
    /// See [`Sandbox::collect_share`].
    pub(crate) async fn collect_share(&self, share: f64) -> Vec<String> {
        let chosen: Vec<String> = {
            let w = lock(&self.world);
            w.transfer
                .transfers
                .iter()
                .filter(|t| {
                    t.mode == transfer::state::Mode::Cash
                        && t.state == transfer::state::State::Sent
                        && in_share(t.request_id, share)
                })
                .map(|t| t.ltn_number.clone())
                .collect()
        };
        let mut collected = Vec::with_capacity(chosen.len());
        for ltn in chosen {
            if self.collect_cash(&ltn).await.is_ok() {
                collected.push(ltn);
            }
        }
        collected
    }

    pub(crate) async fn collect_cash(&self, ltn: &str) -> Result<CashCollected, ControlError> {
        let now = self.clock.now();
        let collected = transfer::collect_cash(&mut lock(&self.world).transfer, ltn, now)?;
        let callback = match collected.callback {
            // The real service calls from the internet: a loopback or private address never
            // hears from it. Strict mode does the same (the send was accepted, as the transfer
            // spec shows no refusal for the address); lenient mode delivers.
            Some((url, body))
                if self.settings.strict
                    && whish_core::check_public_url(&url, "callbackUrl").is_err() =>
            {
                let d = callback::unreachable("transfer.received", "POST", &url, Some(body));
                lock(&self.deliveries).push(d.clone());
                Some(d)
            }
            Some((url, body)) => {
                let ts = (now.unix_timestamp_nanos() / 1_000_000) as i64;
                let d = callback::post_transfer(
                    &self.http,
                    &self.settings.callback_key,
                    &url,
                    ts,
                    body,
                )
                .await;
                lock(&self.deliveries).push(d.clone());
                Some(d)
            }
            None => None,
        };
        Ok(CashCollected {
            transfer_id: collected.transfer_id,
            callback,
        })
    }

    /// A payer attempt on the link `find` locates. The link is found, checked pending and the
    /// attempt applied under one lock, so two attempts cannot both pay it; the callback is
    /// delivered after the lock is released.
    pub(crate) async fn link_attempt(
        &self,
        find: impl Fn(&CollectWorld) -> Option<usize>,
        phone: &str,
        code: &str,
    ) -> Result<LinkAttempt, ControlError> {
        let attempt = {
            let mut world = lock(&self.world);
            world.collect.expire(self.clock.now());
            let i = find(&world.collect)
                .ok_or_else(|| ControlError::NotFound("no such payment link".into()))?;
            let state = world.collect.payments[i].state;
            if state != LinkState::Pending {
                return Err(ControlError::InvalidState(format!(
                    "the link is {}, not pending",
                    state.as_str()
                )));
            }
            collect::attempt(&mut world.collect, &self.settings, i, phone, code)
                .map_err(ControlError::InvalidState)?
        };
        let (kind, url) = &attempt.callback;
        let d = callback::get_collect(&self.http, kind, url).await;
        lock(&self.deliveries).push(d.clone());
        Ok(LinkAttempt {
            collect_status: attempt.state.as_str().to_owned(),
            callback: d,
            redirect: attempt.redirect,
        })
    }

    /// The test payer pays (`pay`) or mistypes the code on the link of this externalId.
    async fn payer_attempt(
        &self,
        external_id: &str,
        pay: bool,
    ) -> Result<LinkAttempt, ControlError> {
        let payer = &self.settings.payer;
        let code = if pay { payer.code.as_str() } else { "000000x" };
        self.link_attempt(|c| c.by_external_id(external_id), &payer.phone, code)
            .await
            .map_err(|e| match e {
                ControlError::NotFound(_) => {
                    ControlError::NotFound(format!("no payment with externalId {external_id}"))
                }
                other => other,
            })
    }

    /// A pending link of this externalId settles as failed now.
    fn expire_link(&self, external_id: &str) -> Result<(), ControlError> {
        let mut world = lock(&self.world);
        world.collect.expire(self.clock.now());
        let i = world.collect.by_external_id(external_id).ok_or_else(|| {
            ControlError::NotFound(format!("no payment with externalId {external_id}"))
        })?;
        let p = &mut world.collect.payments[i];
        if p.state != LinkState::Pending {
            return Err(ControlError::InvalidState(format!(
                "the link is {}, not pending",
                p.state.as_str()
            )));
        }
        p.state = LinkState::Failed;
        Ok(())
    }

    fn set_balance(
        &self,
        service: &str,
        currency: &str,
        amount: Decimal,
    ) -> Result<(), ControlError> {
        let now = self.clock.now();
        let mut world = lock(&self.world);
        match service {
            "topup" => match currency {
                "USD" => world.topup.balance = amount,
                "VOID" => world.topup.void_balance = amount,
                _ => {
                    return Err(ControlError::BadRequest(
                        "top-up balances are USD or VOID".into(),
                    ));
                }
            },
            "transfer" | "collect" => {
                let c = static_currency(currency).ok_or_else(|| {
                    ControlError::BadRequest(format!("currency {currency} is not USD or LBP"))
                })?;
                if service == "transfer" {
                    world.transfer.set_balance(c, amount, now);
                } else {
                    world.collect.balances.insert(c, amount);
                }
            }
            other => return Err(ControlError::BadRequest(format!("unknown service {other}"))),
        }
        Ok(())
    }
}

impl Sandbox {
    /// The receiver collects the cash of this cash-collection transfer: SENT becomes RECEIVED,
    /// the activity log gains a RECEIVED line, and when the send carried a `callbackUrl` the
    /// signed callback is POSTed to it (awaited; the delivery is returned and listed by
    /// [`callbacks`](Self::callbacks)).
    ///
    /// # Errors
    ///
    /// `ControlError::NotFound` when there is no such transfer or link,
    /// `ControlError::InvalidState` when its state does not allow this.
    pub async fn collect_cash(&self, ltn_number: &str) -> Result<CashCollected, ControlError> {
        self.shared.collect_cash(ltn_number).await
    }

    /// Receivers collect `share` (0.0 to 1.0) of the cash-collection transfers still SENT, each
    /// as [`collect_cash`](Self::collect_cash) does (callbacks included), so that a batch's
    /// follow-up and reconciliation have collections to find. Which transfers is decided by their
    /// Request-id: the same share of the same transfers on every run. Returns the LTN numbers
    /// collected.
    pub async fn collect_share(&self, share: f64) -> Vec<String> {
        self.shared.collect_share(share).await
    }

    /// A fault for reconciliation: from now on the service's records show `fee` for this
    /// transfer instead of the fee its answer gave. Its activity-log events change fee and total
    /// (amount plus fee); the statement keeps what was charged. A reconciliation must flag it.
    ///
    /// # Errors
    ///
    /// `ControlError::NotFound` when there is no transfer with this LTN number.
    pub fn misreport_fee(&self, ltn_number: &str, fee: Decimal) -> Result<(), ControlError> {
        let mut w = lock(&self.shared.world);
        let t = w
            .transfer
            .transfers
            .iter_mut()
            .find(|t| t.ltn_number == ltn_number)
            .ok_or_else(|| ControlError::NotFound(format!("no transfer with LTN {ltn_number}")))?;
        t.fee = fee;
        t.total = t.amount + fee;
        let (id, total) = (t.transfer_id.clone(), t.total);
        for e in w
            .transfer
            .activity
            .iter_mut()
            .filter(|e| e.transfer_id == id)
        {
            e.fee = fee;
            e.total = total;
        }
        Ok(())
    }

    /// The test payer pays the link created with this externalId, as on the hosted page: the
    /// link becomes success and the success callback GET is delivered.
    ///
    /// # Errors
    ///
    /// `ControlError::NotFound` when there is no such transfer or link,
    /// `ControlError::InvalidState` when its state does not allow this.
    pub async fn pay_link(&self, external_id: &str) -> Result<LinkAttempt, ControlError> {
        self.shared.payer_attempt(external_id, true).await
    }

    /// A payer mistypes the code on the link created with this externalId: the failure callback
    /// GET is delivered and the link stays pending.
    ///
    /// # Errors
    ///
    /// `ControlError::NotFound` when there is no such transfer or link,
    /// `ControlError::InvalidState` when its state does not allow this.
    pub async fn fail_link(&self, external_id: &str) -> Result<LinkAttempt, ControlError> {
        self.shared.payer_attempt(external_id, false).await
    }

    /// The link created with this externalId expires now: a pending link settles as failed.
    ///
    /// # Errors
    ///
    /// `ControlError::NotFound` when there is no such transfer or link,
    /// `ControlError::InvalidState` when its state does not allow this.
    pub fn expire_link(&self, external_id: &str) -> Result<(), ControlError> {
        self.shared.expire_link(external_id)
    }

    /// Set the transfer balance of `USD` or `LBP` (a TOPUP statement line keeps the
    /// balance rule).
    ///
    /// # Errors
    ///
    /// `ControlError::BadRequest` for a currency other than `USD` or `LBP`, or a negative amount.
    pub fn set_transfer_balance(
        &self,
        currency: &str,
        amount: Decimal,
    ) -> Result<(), ControlError> {
        self.shared.set_balance("transfer", currency, amount)
    }

    /// Set the collect (merchant) balance of `USD` or `LBP`.
    ///
    /// # Errors
    ///
    /// `ControlError::BadRequest` for a currency other than `USD` or `LBP`, or a negative amount.
    pub fn set_collect_balance(&self, currency: &str, amount: Decimal) -> Result<(), ControlError> {
        self.shared.set_balance("collect", currency, amount)
    }

    /// Set the top-up balance and void balance.
    pub fn set_topup_balance(&self, balance: Decimal, void_balance: Decimal) {
        let mut world = lock(&self.shared.world);
        world.topup.balance = balance;
        world.topup.void_balance = void_balance;
    }

    /// The next `count` requests to `endpoint` suffer `fault`, after any faults already queued.
    ///
    /// # Examples
    ///
    /// A reply lost after the transfer was made, to test that your code resends with the same
    /// Request-id rather than paying twice:
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// use whish_sandbox::{Endpoint, Fault, Sandbox};
    /// let sb = Sandbox::start().await?;
    /// sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    /// // ... run your code against sb.transfer_base_url(), then:
    /// assert!(sb.transfers().len() <= 1);
    /// # Ok(()) }
    /// ```
    pub fn inject(&self, endpoint: Endpoint, fault: Fault, count: u32) {
        if count > 0 {
            let mut faults = lock(&self.shared.faults);
            faults
                .entry(endpoint)
                .or_default()
                .push_back((fault, u64::from(count)));
        }
    }

    /// How many requests to `endpoint` the faults already queued will still meet.
    pub fn queued_faults(&self, endpoint: Endpoint) -> u64 {
        lock(&self.shared.faults)
            .get(&endpoint)
            .map_or(0, |q| q.iter().map(|(_, n)| n).sum())
    }

    /// Every request received on a service endpoint, in order, secrets redacted.
    pub fn requests(&self) -> Vec<ReceivedRequest> {
        lock(&self.shared.journal).list()
    }

    /// Every callback delivered (or tried), in order.
    pub fn callbacks(&self) -> Vec<CallbackDelivery> {
        lock(&self.shared.deliveries).clone()
    }

    /// The transfers the sandbox holds.
    pub fn transfers(&self) -> Vec<TransferRecord> {
        transfers(&lock(&self.shared.world))
    }

    /// The hosted payments the sandbox holds.
    pub fn payments(&self) -> Vec<PaymentRecord> {
        let mut world = lock(&self.shared.world);
        world.collect.expire(self.shared.clock.now());
        payments(&world)
    }

    /// The top-up sales the sandbox holds.
    pub fn sales(&self) -> Vec<SaleRecord> {
        sales(&lock(&self.shared.world))
    }

    /// Move the sandbox clock forward (link expiry, dates).
    ///
    /// Refused with [`ControlError::BadRequest`], changing nothing, beyond a hundred years.
    ///
    /// # Errors
    ///
    /// `ControlError::BadRequest` for a move of more than a hundred years.
    pub fn advance_clock(&self, by: Duration) -> Result<(), ControlError> {
        self.shared
            .clock
            .advance(by)
            .map_err(ControlError::BadRequest)
    }

    /// Back to the starting state: balances, no transfers, links or sales, no faults, empty
    /// journal and callback list. The listener and the clock keep running.
    pub fn reset(&self) {
        self.shared.reset();
    }
}

impl Shared {
    fn reset(&self) {
        *lock(&self.world) = World::new(&self.settings, &self.clock);
        lock(&self.faults).clear();
        lock(&self.journal).clear();
        lock(&self.deliveries).clear();
    }
}

fn transfers(w: &World) -> Vec<TransferRecord> {
    w.transfer
        .transfers
        .iter()
        .map(|t| TransferRecord {
            transfer_id: t.transfer_id.clone(),
            ltn_number: t.ltn_number.clone(),
            request_id: t.request_id,
            status: t.state.as_str().to_owned(),
            payment_mode: match t.mode {
                transfer::state::Mode::Cash => "CASH_COLLECTION".into(),
                transfer::state::Mode::Wallet => "MOBILE_WALLET".into(),
            },
            currency: t.currency.to_owned(),
            total: t.total,
        })
        .collect()
}

fn payments(w: &World) -> Vec<PaymentRecord> {
    w.collect
        .payments
        .iter()
        .map(|p| PaymentRecord {
            external_id: p.external_id.clone(),
            collect_status: p.state.as_str().to_owned(),
            currency: p.currency.to_owned(),
            amount: p.amount,
            failed_attempts: p.failed_attempts,
        })
        .collect()
}

fn sales(w: &World) -> Vec<SaleRecord> {
    w.topup
        .sales
        .iter()
        .map(|s| SaleRecord {
            external_id: s.external_id.clone(),
            transaction_id: s.transaction_id.clone(),
            provider: s.provider.clone(),
            option_id: s.option_id.clone(),
            amount: s.amount,
            pin: s.pin.clone(),
        })
        .collect()
}

/// Whether a Request-id falls in a share (0.0 to 1.0) of all: a fixed mix of its bits, so the
/// choice is the same on every run and spread evenly over ids drawn in sequence or at random.
fn in_share(request_id: i64, share: f64) -> bool {
    let mut z = (request_id as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z % 1_000_000) as f64) < share.clamp(0.0, 1.0) * 1_000_000.0
}
