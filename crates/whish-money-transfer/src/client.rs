//! The money-transfer client.

use whish_core::retry::Resend;
use whish_core::transport::{CallOptions, Method, Policy, Request, Transport};
use whish_core::{
    Amount, BaseUrl, CallbackAddresses, Currency, DateTime, Error as CoreError, RequestId,
    SecretString, UserAgent, ValidationError, ValidationKind,
};

use crate::Error;
use crate::code::TransferCode;
use crate::model::{
    ActivityEntry, Cancellation, CurrencyStatement, FeeQuote, ListData, PaymentMode, SendData,
    SendingCountry, StatusResult,
};
use crate::send::{
    CashSent, LEBANON, PreparedTransfer, SendOutcome, SendRequest, WalletCredited,
    check_common_money,
};

/// Builds a [`TransferClient`].
#[derive(Debug)]
pub struct TransferClientBuilder {
    base_url: String,
    username: String,
    key: SecretString,
    user_agent: Option<UserAgent>,
    policy: Policy,
    callbacks: CallbackAddresses,
}

impl TransferClientBuilder {
    /// Send a `User-Agent` (`AppName/version (website; contact-email)`); the transfer service
    /// does not require one.
    pub fn user_agent(mut self, ua: UserAgent) -> Self {
        self.user_agent = Some(ua);
        self
    }

    /// Retry and timeout settings.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Accept a loopback or private `callbackUrl` (a listener on this machine). Only for the local
    /// sandbox: [`build`](Self::build) refuses it unless the base URL is loopback, and the real
    /// service cannot reach such an address.
    pub fn allow_local_callbacks(mut self) -> Self {
        self.callbacks = CallbackAddresses::AllowLocal;
        self
    }

    /// Check the settings and build the client. Nothing is sent.
    pub fn build(self) -> Result<TransferClient, ValidationError> {
        let base = BaseUrl::parse(&self.base_url, "WHISH_TRANSFER_BASE_URL")?;
        let callbacks = self.callbacks.for_base(&base, "callbackUrl")?;
        if self.username.trim().is_empty() {
            return Err(ValidationError::new(
                "WHISH_TRANSFER_USERNAME",
                ValidationKind::Missing,
            ));
        }
        let mut t = Transport::builder("money-transfer", base)
            .header("username", self.username.trim())
            .secret_header("key", &self.key)
            .policy(self.policy);
        if let Some(ua) = &self.user_agent {
            t = t.user_agent(ua);
        }
        Ok(TransferClient {
            transport: t.build()?,
            options: CallOptions::default(),
            callbacks,
        })
    }
}

/// The money-transfer client. Cheap to clone.
///
/// Every request carries a `Request-id`. A send uses the one fixed by
/// [`prepare_send`](Self::prepare_send); every other call gets a new one, kept on its resends.
#[derive(Debug, Clone)]
pub struct TransferClient {
    transport: Transport,
    options: CallOptions,
    callbacks: CallbackAddresses,
}

/// A fee quote request. `payment_mode` defaults to cash collection and `deduct_fees` to false.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeeRequest {
    from_country: i64,
    currency: Currency,
    amount: Amount,
    payment_mode: PaymentMode,
    deduct_fees: bool,
    phone_number: Option<String>,
}

impl FeeRequest {
    /// Quote sending `amount` in `currency` from `from_country` to Lebanon.
    pub fn new(from_country: i64, currency: Currency, amount: Amount) -> FeeRequest {
        FeeRequest {
            from_country,
            currency,
            amount,
            payment_mode: PaymentMode::CashCollection,
            deduct_fees: false,
            phone_number: None,
        }
    }
    /// The payment mode to quote for.
    pub fn payment_mode(mut self, mode: PaymentMode) -> Self {
        self.payment_mode = mode;
        self
    }
    /// Quote with the fee taken out of the amount.
    pub fn deduct_fees(mut self, yes: bool) -> Self {
        self.deduct_fees = yes;
        self
    }
    /// The recipient phone the fee is quoted for.
    pub fn phone_number(mut self, phone: impl Into<String>) -> Self {
        self.phone_number = Some(phone.into());
        self
    }
}

/// Which transfer a status query is about: exactly one identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusQuery {
    /// By transfer reference.
    TransferId(String),
    /// By LTN number.
    LtnNumber(String),
    /// By the Request-id of the create.
    RequestId(RequestId),
}

/// The date range (and optional currency) of an activity or statement report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRange {
    from: DateTime,
    to: DateTime,
    currency: Option<Currency>,
}

impl ReportRange {
    /// From and to, `yyyy-MM-dd HH:mm:ss`; `from` must not be after `to`.
    pub fn new(from: &str, to: &str) -> Result<ReportRange, ValidationError> {
        let from = DateTime::parse(from, "fromDate")?;
        let to = DateTime::parse(to, "toDate")?;
        if from > to {
            return Err(ValidationError::invalid("fromDate", "is after toDate"));
        }
        Ok(ReportRange {
            from,
            to,
            currency: None,
        })
    }
    /// Only this currency (USD or LBP); both when not set.
    pub fn currency(mut self, currency: Currency) -> Self {
        self.currency = Some(currency);
        self
    }
}

impl TransferClient {
    /// Start building a client from the base URL (the sandbox's ends in `/api`), the account
    /// `username` and the secret `key`.
    pub fn builder(
        base_url: impl Into<String>,
        username: impl Into<String>,
        key: SecretString,
    ) -> TransferClientBuilder {
        TransferClientBuilder {
            base_url: base_url.into(),
            username: username.into(),
            key,
            user_agent: None,
            policy: Policy::default(),
            callbacks: CallbackAddresses::PublicOnly,
        }
    }

    /// A client whose calls use these retry and timeout overrides.
    pub fn with_options(&self, options: CallOptions) -> TransferClient {
        TransferClient {
            transport: self.transport.clone(),
            options,
            callbacks: self.callbacks,
        }
    }

    fn request(&self, endpoint: &'static str, method: Method, path: &str) -> Request {
        Request::new(endpoint, method, path)
            .request_id(RequestId::generate())
            .options(self.options)
    }

    /// Quote the fee. Send later with the same amount and currency that were quoted.
    pub async fn fees(&self, q: &FeeRequest) -> Result<FeeQuote, Error> {
        let currency_id = check_common_money(q.from_country, &q.currency, q.amount)?;
        if let Some(p) = &q.phone_number
            && p.trim().is_empty()
        {
            return Err(ValidationError::new("phoneNumber", ValidationKind::Missing).into());
        }
        let mut body = serde_json::json!({
            "fromCountry": q.from_country,
            "toCountry": LEBANON,
            "currencyId": currency_id,
            "paymentMode": q.payment_mode,
            "amount": q.amount,
            "deductFees": q.deduct_fees,
        });
        if let Some(p) = &q.phone_number {
            body["phoneNumber"] = serde_json::Value::from(p.trim());
        }
        let req = self
            .request("transfer.fees", Method::POST, "/api/woo/send/money/fees")
            .json(&body)?
            .resend(Resend::Read);
        self.transport
            .call::<FeeQuote, TransferCode>(req)
            .await?
            .require_data()
    }

    /// Check a send and fix its Request-id (a new one). Nothing is sent. Store
    /// [`PreparedTransfer::request_id`] before calling [`send`](Self::send).
    pub fn prepare_send(&self, request: impl Into<SendRequest>) -> Result<PreparedTransfer, Error> {
        self.prepare_send_with_id(request, RequestId::generate())
    }

    /// As [`prepare_send`](Self::prepare_send) with your own numeric reference as Request-id. A
    /// new transfer needs a new Request-id.
    pub fn prepare_send_with_id(
        &self,
        request: impl Into<SendRequest>,
        request_id: RequestId,
    ) -> Result<PreparedTransfer, Error> {
        Ok(PreparedTransfer::new(
            &request.into(),
            request_id,
            self.callbacks,
        )?)
    }

    /// Send. After a timeout, a dropped reply or Pending the same bytes are resent with the same
    /// Request-id within the policy; if a resend answers `transfer.already.done`, the earlier
    /// attempt had arrived, and the outcome is read from status and returned as
    /// [`SendOutcome::Confirmed`]. On a first attempt, `transfer.already.done` means the
    /// Request-id was used before: [`SendOutcome::Failed`].
    ///
    /// Calling `send` again with the same `PreparedTransfer` after an unknown outcome is a
    /// resend, with the same rules.
    pub async fn send(&self, prepared: &PreparedTransfer) -> Result<SendOutcome, Error> {
        self.send_inner(prepared, false).await
    }

    /// Resend a transfer you know you sent before (for example after a restart, with a
    /// `PreparedTransfer` rebuilt from the stored request and Request-id):
    /// `transfer.already.done` is read as a confirmation in every case.
    pub async fn resend(&self, prepared: &PreparedTransfer) -> Result<SendOutcome, Error> {
        self.send_inner(prepared, true).await
    }

    async fn send_inner(
        &self,
        prepared: &PreparedTransfer,
        known_resend: bool,
    ) -> Result<SendOutcome, Error> {
        let sent_before = known_resend || prepared.may_have_arrived();
        let request_id = prepared.request_id;
        let req = Request::new("transfer.send", Method::POST, "/api/woo/send/money")
            .json_bytes(prepared.body.clone())
            .request_id(request_id)
            .resend(Resend::SameKey { on_pending: true })
            .options(self.options);
        match self.transport.call::<SendData, TransferCode>(req).await {
            Ok(reply) => {
                prepared.mark_may_have_arrived();
                let dialog = reply.dialog.clone();
                let d = reply.require_data()?;
                Ok(match prepared.payment_mode {
                    PaymentMode::MobileWallet => SendOutcome::Credited(WalletCredited {
                        ltn_number: d.ltn_number,
                        transfer_id: d.transfer_id,
                        charges: d.charges,
                        collection_amount: d.collection_amount,
                        balance: d.balance,
                        transaction_id: d.transaction_id,
                        currency: d.currency,
                        dialog,
                        request_id,
                    }),
                    _ => SendOutcome::Sent(CashSent {
                        ltn_number: d.ltn_number,
                        transfer_id: d.transfer_id,
                        charges: d.charges,
                        request_id,
                    }),
                })
            }
            Err(CoreError::Failed(f))
                if f.code == TransferCode::TransferAlreadyDone
                    && (f.resent_after_possible_delivery || sent_before) =>
            {
                tracing::info!(%request_id, "transfer.already.done after a resend: confirming with status");
                prepared.mark_may_have_arrived();
                let status = self.status(&StatusQuery::RequestId(request_id)).await?;
                Ok(SendOutcome::Confirmed { request_id, status })
            }
            Err(CoreError::Failed(f)) => Ok(SendOutcome::Failed {
                code: f.code,
                raw: f.raw,
                dialog: f.dialog,
                request_id,
            }),
            Err(CoreError::Pending(p)) => {
                prepared.mark_may_have_arrived();
                Ok(SendOutcome::Pending {
                    request_id,
                    dialog: p.dialog,
                })
            }
            Err(e) => {
                if e.outcome_unknown() {
                    prepared.mark_may_have_arrived();
                }
                Err(e)
            }
        }
    }

    /// The status of a transfer; authoritative for every status. `sending.transfer.invalid.info`
    /// means the transfer never arrived: resend the original create with the same Request-id,
    /// then ask again.
    pub async fn status(&self, query: &StatusQuery) -> Result<StatusResult, Error> {
        let body = match query {
            StatusQuery::TransferId(t) if !t.trim().is_empty() => {
                serde_json::json!({ "transferId": t.trim() })
            }
            StatusQuery::LtnNumber(l) if !l.trim().is_empty() => {
                serde_json::json!({ "ltnNumber": l.trim() })
            }
            StatusQuery::RequestId(r) => serde_json::json!({ "requestId": r }),
            _ => {
                return Err(ValidationError::new("transferId", ValidationKind::Missing).into());
            }
        };
        let req = self
            .request(
                "transfer.status",
                Method::POST,
                "/api/woo/send/money/status",
            )
            .json(&body)?
            .resend(Resend::Read);
        self.transport
            .call::<StatusResult, TransferCode>(req)
            .await?
            .require_data()
    }

    /// Cancel a cash-collection transfer not yet collected. Not resent automatically: if the
    /// outcome is unknown, read it with [`status`](Self::status). The reason is kept in the
    /// account's audit log only.
    pub async fn cancel(
        &self,
        ltn_number: &str,
        reason: Option<&str>,
    ) -> Result<Cancellation, Error> {
        if ltn_number.trim().is_empty() {
            return Err(ValidationError::new("ltnNumber", ValidationKind::Missing).into());
        }
        let mut body = serde_json::json!({ "ltnNumber": ltn_number.trim() });
        if let Some(r) = reason {
            body["reason"] = serde_json::Value::from(r);
        }
        let req = self
            .request(
                "transfer.cancel",
                Method::POST,
                "/api/woo/cancel/send/money",
            )
            .json(&body)?
            .resend(Resend::Never);
        self.transport
            .call::<Cancellation, TransferCode>(req)
            .await?
            .require_data()
    }

    /// The countries money can be sent from (in the sandbox, only Lebanon unless asked).
    pub async fn sending_countries(&self) -> Result<Vec<SendingCountry>, Error> {
        let req = self
            .request(
                "transfer.countries",
                Method::GET,
                "/api/woo/sending/countries",
            )
            .resend(Resend::Read);
        Ok(self
            .transport
            .call::<ListData<SendingCountry>, TransferCode>(req)
            .await?
            .require_data()?
            .list)
    }

    /// The supported payment modes.
    pub async fn payment_modes(&self) -> Result<Vec<PaymentMode>, Error> {
        let req = self
            .request("transfer.modes", Method::GET, "/api/woo/send/money/modes")
            .resend(Resend::Read);
        self.transport
            .call::<Vec<PaymentMode>, TransferCode>(req)
            .await?
            .require_data()
    }

    fn report_body(range: &ReportRange) -> Result<serde_json::Value, ValidationError> {
        let currency_id = match &range.currency {
            Some(c) => {
                c.require_usd_or_lbp("currencyId")?;
                c.id()
            }
            None => None,
        };
        Ok(serde_json::json!({
            "fromDate": range.from,
            "toDate": range.to,
            "currencyId": currency_id,
        }))
    }

    /// The activity log: an event log (a cancelled transfer shows twice). Use
    /// [`crate::reconcile::latest_states`] for the latest state per transfer.
    pub async fn activity(&self, range: &ReportRange) -> Result<Vec<ActivityEntry>, Error> {
        let req = self
            .request("transfer.activity", Method::POST, "/api/woo/activity")
            .json(&Self::report_body(range)?)?
            .resend(Resend::Read);
        Ok(self
            .transport
            .call::<ListData<ActivityEntry>, TransferCode>(req)
            .await?
            .require_data()?
            .list)
    }

    /// The statement, one entry per currency. Check it with
    /// [`crate::reconcile::check_balance_rule`].
    pub async fn statement(&self, range: &ReportRange) -> Result<Vec<CurrencyStatement>, Error> {
        let req = self
            .request("transfer.statement", Method::POST, "/api/woo/statement")
            .json(&Self::report_body(range)?)?
            .resend(Resend::Read);
        Ok(self
            .transport
            .call::<ListData<CurrencyStatement>, TransferCode>(req)
            .await?
            .require_data()?
            .list)
    }
}
