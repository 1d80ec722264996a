//! The money-transfer client.

use std::sync::Arc;

use http::header::{HeaderName, HeaderValue};
use whish_core::CallOptions;
use whish_core::credentials::SecretSource;
use whish_core::runtime::Resend;
use whish_core::runtime::{Method, Request, Transport};
use whish_core::{
    Amount, ClientSettings, Currency, DateTime, Error as CoreError, FollowUp, RequestId,
    SecretString, ServiceHeaders, SetupError, ValidationError, ValidationKind,
};

use crate::Error;
use crate::code::TransferCode;
use crate::model::{
    ActivityEntry, Cancellation, CurrencyStatement, FeeQuote, ListData, PaymentMode, SendData,
    SendingCountry, StatusResult,
};
use crate::send::{
    CashSent, CountryId, LEBANON, PreparedCancel, PreparedTransfer, SendOutcome, SendRequest,
    WalletCredited, check_common_money,
};

/// Builds a [`TransferClient`]: the shared [`ClientSettings`] plus the account's `username` and
/// secret `key`.
#[derive(Debug)]
#[must_use = "a builder does nothing until build() is called"]
pub struct TransferClientBuilder {
    settings: ClientSettings,
    username: Option<String>,
    key: Option<SecretString>,
    key_source: Option<Arc<dyn SecretSource>>,
}

impl TransferClientBuilder {
    /// The account username (setting `username`).
    pub fn username(mut self, username: impl Into<String>) -> Self {
        self.username = Some(username.into());
        self
    }

    /// The secret API key (setting `key`). It never shows in `Debug`, errors or logs.
    pub fn key(mut self, key: SecretString) -> Self {
        self.key = Some(key);
        self
    }

    /// The key read from `source` before every attempt (an environment variable, a file read
    /// again when it changes, a closure: see [`whish_core::credentials`]): a rotated key takes
    /// effect on the next attempt, without a new client. Replaces [`key`](Self::key).
    pub fn key_from(mut self, source: impl SecretSource) -> Self {
        self.key_source = Some(Arc::new(source));
        self
    }

    /// Check the settings and build the client. Nothing is sent. An error names the setting.
    ///
    /// # Errors
    ///
    /// A `SetupError` when a required setting is missing or a setting is invalid (the base URL, a
    /// credential, `https://` with no TLS stack built in, local callbacks with a base URL that is
    /// not loopback).
    pub fn build(self) -> Result<TransferClient, SetupError> {
        let headers = ServiceHeaders::new()
            .required("username", "username", self.username.as_deref())
            .secret_or_source("key", "key", self.key.as_ref(), self.key_source);
        Ok(TransferClient {
            transport: self.settings.build_transport("money-transfer", headers)?,
            options: CallOptions::default(),
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
}

/// The `Request-id` header of the transfer service, used as the idempotency key too.
pub(crate) fn with_request_id(request: Request, id: RequestId) -> Request {
    request
        .header(REQUEST_ID, HeaderValue::from(id.get()))
        .idempotency_key(id)
}

const REQUEST_ID: HeaderName = HeaderName::from_static("request-id");

// Request bodies are written straight from the caller's values: no `serde_json::Value` is built,
// and nothing allocated for the body outlives the call's first await but the bytes themselves.
// (A `Value` kept alive until the reply held a dozen small allocations per call in flight; with
// 64 calls in flight that cost 5 % of the throughput: docs/performance.md, round 3.)

/// The fee quote's body.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct FeeBody<'a> {
    from_country: CountryId,
    to_country: CountryId,
    currency_id: i64,
    payment_mode: &'a PaymentMode,
    amount: Amount,
    deduct_fees: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    phone_number: Option<&'a str>,
}

/// The status query's body: the references asked by, at least one.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    transfer_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ltn_number: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<RequestId>,
}

impl<'a> StatusBody<'a> {
    /// The body of `query`, blank references left out; `None` when no reference is left.
    fn of(query: &'a StatusQuery) -> Option<StatusBody<'a>> {
        let text = |t: &'a str| Some(t.trim()).filter(|t| !t.is_empty());
        let body = match query {
            StatusQuery::TransferId(t) => StatusBody {
                transfer_id: text(t),
                ltn_number: None,
                request_id: None,
            },
            StatusQuery::LtnNumber(l) => StatusBody {
                transfer_id: None,
                ltn_number: text(l),
                request_id: None,
            },
            StatusQuery::RequestId(r) => StatusBody {
                transfer_id: None,
                ltn_number: None,
                request_id: Some(*r),
            },
            StatusQuery::Several {
                transfer_id,
                ltn_number,
                request_id,
            } => StatusBody {
                transfer_id: transfer_id.as_deref().and_then(text),
                ltn_number: ltn_number.as_deref().and_then(text),
                request_id: *request_id,
            },
        };
        let any = body.transfer_id.is_some() || body.ltn_number.is_some();
        (any || body.request_id.is_some()).then_some(body)
    }

    /// The reference of this body that the reply names another transfer by, as the reply's
    /// field and the value asked for: a reply about another transfer answers nothing asked.
    fn contradicted_by(&self, reply: &StatusResult) -> Option<(&'static str, &'a str)> {
        let differs = |asked: Option<&str>, said: &Option<String>| matches!((asked, said.as_deref().map(str::trim)), (Some(a), Some(s)) if a != s);
        if differs(self.transfer_id, &reply.transfer_id) {
            return self.transfer_id.map(|t| ("transferId", t));
        }
        if differs(self.ltn_number, &reply.ltn_number) {
            return self.ltn_number.map(|l| ("ltnNumber", l));
        }
        None
    }
}

/// A fee quote request. `payment_mode` defaults to cash collection and `deduct_fees` to false.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a fee request does nothing until it is passed to fees()"]
pub struct FeeRequest {
    pub(crate) from_country: CountryId,
    pub(crate) currency: Currency,
    pub(crate) amount: Amount,
    pub(crate) payment_mode: PaymentMode,
    pub(crate) deduct_fees: bool,
    pub(crate) phone_number: Option<String>,
}

impl FeeRequest {
    /// Quote sending `amount` in `currency` from `from_country` to Lebanon.
    pub fn new(from_country: CountryId, currency: Currency, amount: Amount) -> FeeRequest {
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
    /// The currency quoted: the one the quote's amounts are in.
    pub fn currency(&self) -> &Currency {
        &self.currency
    }
}

/// Which transfer a status query is about: one identifier, or several at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusQuery {
    /// By transfer reference.
    TransferId(String),
    /// By LTN number.
    LtnNumber(String),
    /// By the Request-id of the create.
    RequestId(RequestId),
    /// By every identifier given (at least one), sent together: the service locates the
    /// transfer by them. They must all name one transfer: a reply whose `transferId` or
    /// `ltnNumber` differs from the one asked for is an error, never another transfer's status.
    Several {
        /// The transfer reference, if known.
        transfer_id: Option<String>,
        /// The LTN number, if known.
        ltn_number: Option<String>,
        /// The Request-id of the create, if known.
        request_id: Option<RequestId>,
    },
}

/// The date range (and optional currency) of an activity or statement report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRange {
    from: DateTime,
    to: DateTime,
    currency: Option<Currency>,
}

/// The start of a [`ReportRange`]; [`until`](Self::until) gives the range. The two dates are
/// named at the call site, so they cannot be swapped unseen.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a range needs its end: call until()"]
pub struct ReportStart {
    from: DateTime,
}

impl ReportStart {
    /// The end of the range (`toDate`, `yyyy-MM-dd HH:mm:ss`); it must not be before the start.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn until(self, to: &str) -> Result<ReportRange, ValidationError> {
        let to = DateTime::parse(to, "toDate")?;
        if self.from > to {
            return Err(ValidationError::invalid("fromDate", "is after toDate"));
        }
        Ok(ReportRange {
            from: self.from,
            to,
            currency: None,
        })
    }
}

impl ReportRange {
    /// A range starting at `from` (`fromDate`, `yyyy-MM-dd HH:mm:ss`); end it with
    /// [`ReportStart::until`].
    ///
    /// ```
    /// use whish_money_transfer::ReportRange;
    /// let august = ReportRange::starting("2026-08-01 00:00:00")?.until("2026-08-31 23:59:59")?;
    /// assert!(ReportRange::starting("2026-08-31 00:00:00")?.until("2026-08-01 00:00:00").is_err());
    /// # let _ = august;
    /// # Ok::<(), whish_core::ValidationError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn starting(from: &str) -> Result<ReportStart, ValidationError> {
        Ok(ReportStart {
            from: DateTime::parse(from, "fromDate")?,
        })
    }
    /// Only this currency (USD or LBP); both when not set.
    pub fn currency(mut self, currency: Currency) -> Self {
        self.currency = Some(currency);
        self
    }

    /// The start (`fromDate`).
    pub fn start(&self) -> DateTime {
        self.from
    }

    /// The end (`toDate`).
    pub fn end(&self) -> DateTime {
        self.to
    }

    /// Whether `date` falls in the range, both ends included.
    pub fn contains(&self, date: DateTime) -> bool {
        self.from <= date && date <= self.to
    }

    /// The `by` before this range: from `by` before its start to the second before it.
    pub fn preceding(&self, by: time::Duration) -> ReportRange {
        let end = self
            .from
            .0
            .checked_sub(time::Duration::SECOND)
            .unwrap_or(self.from.0);
        ReportRange {
            from: DateTime(end.checked_sub(by).unwrap_or(end)),
            to: DateTime(end),
            currency: self.currency.clone(),
        }
    }

    /// The same range, `by` wider on each side (at the calendar's ends, as far as it goes): to
    /// pair an event at the range's edge with its other half just outside it (a send at
    /// 23:59:59 charged at 00:00:00).
    pub fn widened(&self, by: time::Duration) -> ReportRange {
        ReportRange {
            from: DateTime(self.from.0.checked_sub(by).unwrap_or(self.from.0)),
            to: DateTime(self.to.0.checked_add(by).unwrap_or(self.to.0)),
            currency: self.currency.clone(),
        }
    }
}

impl TransferClient {
    /// The service and account this client sends to, as a journal records it beside each
    /// request (base URL and a fingerprint of the account's plain settings, never a secret):
    /// see [`Transport::target`](whish_core::runtime::Transport::target).
    pub fn target(&self) -> String {
        self.transport.target()
    }

    /// Which callback addresses [`prepare_send`](Self::prepare_send) accepts (set with the
    /// client's [`ClientSettings`]): two clients alike here prepare the same request into
    /// the same transfer.
    pub fn callback_addresses(&self) -> whish_core::CallbackAddresses {
        self.transport.callbacks()
    }

    /// Start building a client for the service at `settings` (a base URL, or a
    /// [`ClientSettings`] with proxy, policy and the rest). The sandbox's base URL ends in `/api`.
    ///
    /// # Examples
    ///
    /// ```
    /// use whish_core::{ClientSettings, SecretString};
    /// use whish_money_transfer::TransferClient;
    ///
    /// let client = TransferClient::builder("https://transfer.example.com")
    ///     .username("my-account")
    ///     .key(SecretString::from("my-key"))
    ///     .build()?;
    ///
    /// // A missing setting is named, and nothing is sent.
    /// let err = TransferClient::builder("https://transfer.example.com").build().unwrap_err();
    /// assert_eq!(err.setting, "username");
    /// # let _ = client;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(settings: impl Into<ClientSettings>) -> TransferClientBuilder {
        TransferClientBuilder {
            settings: settings.into(),
            username: None,
            key: None,
            key_source: None,
        }
    }

    /// The same client for another account (another `username` and `key`, fixed or from a
    /// source), sharing this one's connection pool, retry budget, interceptors and settings:
    /// an aggregator holds one pool for all of its merchants.
    ///
    /// # Errors
    ///
    /// A `SetupError` naming the setting, as [`TransferClientBuilder::build`].
    pub fn with_credentials(
        &self,
        username: &str,
        key: impl SecretSource,
    ) -> Result<TransferClient, SetupError> {
        let headers = ServiceHeaders::new()
            .required("username", "username", Some(username))
            .secret_from("key", "key", Arc::new(key));
        Ok(TransferClient {
            transport: self.transport.with_headers(headers)?,
            options: self.options,
        })
    }

    /// A client whose calls use these retry and timeout overrides; it shares the connection pool.
    ///
    /// ```
    /// # fn f(client: whish_money_transfer::TransferClient) {
    /// use whish_core::{CallOptions, RetryPolicy};
    /// let no_resends = client.with_options(CallOptions::new().retry(RetryPolicy::NONE));
    /// # let _ = no_resends; }
    /// ```
    pub fn with_options(&self, options: CallOptions) -> TransferClient {
        TransferClient {
            transport: self.transport.clone(),
            options,
        }
    }

    fn request(&self, endpoint: &'static str, method: Method, path: &str) -> Request {
        with_request_id(
            Request::new(endpoint, method, path).options(self.options),
            RequestId::generate(),
        )
    }

    /// Quote the fee. Send later with the same amount and currency that were quoted.
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
    pub async fn fees(&self, q: &FeeRequest) -> Result<FeeQuote, Error> {
        let currency_id = check_common_money(&q.currency, q.amount)?;
        if let Some(p) = &q.phone_number
            && p.trim().is_empty()
        {
            return Err(ValidationError::new("phoneNumber", ValidationKind::Missing).into());
        }
        let req = self
            .request("transfer.fees", Method::POST, "/api/woo/send/money/fees")
            .json(&FeeBody {
                from_country: q.from_country,
                to_country: LEBANON,
                currency_id,
                payment_mode: &q.payment_mode,
                amount: q.amount,
                deduct_fees: q.deduct_fees,
                phone_number: q.phone_number.as_deref().map(str::trim),
            })?
            .resend(Resend::Read);
        self.transport
            .call::<FeeQuote, TransferCode>(req)
            .await?
            .require_data()
    }

    /// Check a send and fix its Request-id (the one set with `request_id`, or a new one).
    /// Nothing is sent. Store [`PreparedTransfer::request_id`] before calling
    /// [`send`](Self::send).
    ///
    /// # Errors
    ///
    /// An error with `nothing_sent()` true (a validation error) when the request breaks a rule the
    /// SDK checks locally; nothing is sent.
    pub fn prepare_send(&self, request: impl Into<SendRequest>) -> Result<PreparedTransfer, Error> {
        Ok(PreparedTransfer::new(
            &request.into(),
            self.transport.callbacks(),
        )?)
    }

    /// Send a prepared transfer.
    ///
    /// `Ok` means the service accepted it: [`SendOutcome::Sent`] (cash collection, SENT),
    /// [`SendOutcome::Credited`] (mobile wallet, final) or [`SendOutcome::Confirmed`] (a send
    /// after an attempt that may have arrived met `transfer.already.done`, and the status read by
    /// Request-id returned the transfer). Everything else is `Err`, read the same way in every
    /// service through [`Error::verdict`](whish_core::Error::verdict):
    ///
    /// - refused ([`Error::is_refused`](whish_core::Error::is_refused), a failure code): final,
    ///   nothing created; a new attempt needs a new Request-id. `transfer.already.done` on a
    ///   first attempt means the Request-id belongs to another transfer.
    /// - `transfer.already.done` after an attempt that may have arrived, when the status read
    ///   answered anything but the transfer: unknown, not refused (keep the Request-id).
    ///
    /// "May have arrived" includes an earlier call of this `PreparedTransfer` whose future was
    /// dropped: its [`delivery`](PreparedTransfer::delivery) mark goes on before the first byte
    /// leaves. For a bound on the whole call use
    /// [`CallOptions::deadline`](whish_core::CallOptions::deadline) rather than a timeout around it.
    /// - Pending ([`Error::is_pending`](whish_core::Error::is_pending), code 500): the outcome
    ///   is unknown, **not failed**; it is not resent (the spec resends after a timeout, not
    ///   after Pending). Keep the Request-id and follow up with [`status`](Self::status).
    /// - an unknown outcome ([`Error::outcome_unknown`](whish_core::Error::outcome_unknown)):
    ///   timeouts and dropped replies are resent with the same bytes and Request-id within the
    ///   policy; after that, call `send` again with the same `PreparedTransfer` (a resend), then
    ///   read status.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: whish_money_transfer::TransferClient,
    /// #              send: whish_money_transfer::CashCollectionSend) -> Result<(), whish_money_transfer::Error> {
    /// use whish_money_transfer::SendOutcome;
    ///
    /// let prepared = client.prepare_send(send)?;
    /// let request_id = prepared.request_id(); // store it before sending
    /// # let _ = request_id;
    /// match client.send(&prepared).await {
    ///     Ok(SendOutcome::Sent(sent)) => println!("give LTN {} to the receiver", sent.ltn_number),
    ///     Ok(other) => println!("accepted: {other:?}"),
    ///     Err(e) if e.outcome_unknown() => println!("unknown: resend the same prepared transfer"),
    ///     Err(e) => return Err(e), // refused: final
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `Err` for every answer but acceptance, told apart by
    /// [`Error::verdict`](whish_core::Error::verdict): a refusal (`code()`; final), Pending
    /// (`is_pending()`), an outcome left unknown after the request may have arrived
    /// (`outcome_unknown()`: send the same prepared request again, never a new one), or nothing
    /// sent (`nothing_sent()`: a transport failure before the first byte).
    pub async fn send(&self, prepared: &PreparedTransfer) -> Result<SendOutcome, Error> {
        self.send_inner(prepared, false).await
    }

    /// Resend a transfer you know you sent before (for example after a restart, with a
    /// `PreparedTransfer` rebuilt from the stored request and Request-id): it is marked sent
    /// before, so `transfer.already.done` is read as a confirmation, made when the status read
    /// by Request-id returns the transfer (else the outcome stays unknown).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: whish_money_transfer::TransferClient,
    /// #              stored: whish_money_transfer::CashCollectionSend,
    /// #              stored_id: whish_core::RequestId) -> Result<(), whish_money_transfer::Error> {
    /// // The same send, with the Request-id stored before the first attempt.
    /// let prepared = client.prepare_send(stored.request_id(stored_id))?;
    /// let outcome = client.resend(&prepared).await?;
    /// println!("transfer {:?} exists", outcome.transfer_id());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `Err` for every answer but acceptance, told apart by
    /// [`Error::verdict`](whish_core::Error::verdict): a refusal (`code()`; final), Pending
    /// (`is_pending()`), an outcome left unknown after the request may have arrived
    /// (`outcome_unknown()`: send the same prepared request again, never a new one), or nothing
    /// sent (`nothing_sent()`: a transport failure before the first byte).
    pub async fn resend(&self, prepared: &PreparedTransfer) -> Result<SendOutcome, Error> {
        self.send_inner(prepared, true).await
    }

    async fn send_inner(
        &self,
        prepared: &PreparedTransfer,
        known_resend: bool,
    ) -> Result<SendOutcome, Error> {
        if known_resend {
            prepared.delivery.set();
        }
        let request_id = prepared.request_id;
        let req = with_request_id(
            Request::new("transfer.send", Method::POST, "/api/woo/send/money")
                .json_bytes(prepared.body.clone())
                .resend(Resend::SameKey { on_pending: false })
                .options(self.options)
                .delivery(&prepared.delivery),
            request_id,
        );
        match self.transport.call::<SendData, TransferCode>(req).await {
            Ok(reply) => {
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
                        dialog,
                        request_id,
                    }),
                })
            }
            // `transfer.already.done` after an attempt that may have arrived: the verdict is
            // unknown until the status read by Request-id returns the transfer (spec rule 5).
            // On a request never sent before it is a refusal and is returned as such.
            Err(CoreError::Failed(f))
                if f.code == TransferCode::TransferAlreadyDone
                    && f.resent_after_possible_delivery =>
            {
                tracing::info!(%request_id, "transfer.already.done after a possible delivery: confirming with status");
                match self.held_under(request_id, Some(prepared), false).await {
                    crate::Held::This(status) => Ok(SendOutcome::Confirmed { request_id, status }),
                    // A Request-id reused for another transfer (a caller's own reference)
                    // would confirm that one: not confirmed, the outcome stays unknown.
                    crate::Held::MaybeSomeoneElses(_) => {
                        tracing::warn!(%request_id, "the transfer under this Request-id has another amount or currency, or the activity log could not be read to tell: not confirmed; the outcome stays unknown");
                        Err(CoreError::Failed(f))
                    }
                    // Contradictory answers, or none: the outcome is not known yet.
                    held => {
                        tracing::warn!(%request_id, ?held, "the status read did not confirm transfer.already.done: the outcome stays unknown");
                        Err(CoreError::Failed(f))
                    }
                }
            }
            Err(e) => Err(e),
        }
    }

    /// True when the transfer the service holds under this Request-id may not be `prepared`:
    /// the activity log (both currencies, the last 40 days) lists it with another amount or
    /// currency (a Request-id reused for another transfer: someone else's, sent under the same
    /// number), or the log cannot be read to tell. False when a line under the Request-id
    /// matches, and when the log, read, lists none (a transfer older than its window): the
    /// status read is then the confirmation, as the spec has it.
    ///
    /// A send's line matches on its currency and on what it moved: with the fee on top, the
    /// line's `amount` is the amount sent; with the fee deducted, its `total` (amount plus fee,
    /// the quote's `totalAmount`) is the amount sent, and its `amount` what the receiver
    /// collects. Someone else's transfer of the same amount and currency cannot be told apart:
    /// the log names no sender or receiver.
    ///
    /// The status result carries no amount, so a status read by Request-id alone would confirm
    /// whichever transfer holds the number. [`send`](Self::send) and [`resend`](Self::resend)
    /// ask this before they call `transfer.already.done` a confirmation; ask it too before you
    /// take a status read by Request-id as the outcome of your own send.
    pub async fn may_be_someone_elses(&self, prepared: &PreparedTransfer) -> bool {
        let Some(money) = prepared.money.clone() else {
            return false;
        };
        // Both currencies: someone else's transfer in the other currency is a line too.
        let Ok(entries) = self.recent_activity().await else {
            return true;
        };
        let mine: Vec<_> = entries
            .iter()
            .filter(|e| e.request_id == Some(prepared.request_id))
            .collect();
        // The log's amounts are the service's doubles (10.28 reads `10.280000000000001`):
        // compared as money of the send's currency, never bit for bit.
        let same = |e: &&crate::model::ActivityEntry| {
            let line = if money.deduct_fees { e.total } else { e.amount };
            line.is_same_sum(money.amount, &money.currency)
                && e.currency.eq_ignore_ascii_case(money.currency.code())
        };
        !mine.is_empty() && !mine.iter().any(same)
    }

    /// True when the activity log of the last 40 days (both currencies) lists a line under this
    /// Request-id: a transfer was sent under it, whatever a status read says. A second witness
    /// before deciding that a request never took effect (the status read alone answers
    /// `sending.transfer.invalid.info` for a transfer it does not find, and a lying or stale
    /// read would then close a transfer that exists).
    ///
    /// # Errors
    ///
    /// The activity read's error: then nothing is known.
    pub async fn logged_under(&self, request_id: RequestId) -> Result<bool, Error> {
        Ok(self
            .recent_activity()
            .await?
            .iter()
            .any(|e| e.request_id == Some(request_id)))
    }

    /// The activity log of the last 40 days and the next two (a clock behind the service's),
    /// both currencies.
    async fn recent_activity(&self) -> Result<Vec<ActivityEntry>, Error> {
        let now = time::OffsetDateTime::now_utc();
        let at = |t: time::OffsetDateTime| {
            DateTime(time::PrimitiveDateTime::new(
                t.date(),
                t.time().replace_nanosecond(0).unwrap_or(t.time()),
            ))
            .to_string()
        };
        let range = ReportRange::starting(&at(now - time::Duration::days(40)))
            .and_then(|start| start.until(&at(now + time::Duration::days(2))))?;
        self.activity(&range).await
    }

    /// Follow up a send whose outcome is not known yet (a Pending create, or an unknown outcome
    /// after the resends): ask the status by Request-id, with backoff, until the service knows
    /// the transfer, or until the deadline. The spec says a Pending create "must be followed
    /// up"; this is that follow-up, with the status endpoint it names as authoritative.
    ///
    /// `Ok` is the transfer's state: it exists. `Err` with `sending.transfer.invalid.info` at
    /// the deadline means it is still not in the records: resend the original create with the
    /// same Request-id ([`resend`](Self::resend)), then ask again. Pending or a transport error
    /// at the deadline: the outcome is still unknown; follow up later (or with the operator).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: whish_money_transfer::TransferClient,
    /// #              prepared: whish_money_transfer::PreparedTransfer) -> Result<(), whish_money_transfer::Error> {
    /// use std::time::Duration;
    /// use whish_core::FollowUp;
    /// match client.send(&prepared).await {
    ///     Err(e) if e.is_pending() => {
    ///         let state = client
    ///             .await_final(prepared.request_id(), FollowUp::within(Duration::from_secs(120)))
    ///             .await?;
    ///         println!("the transfer exists: {}", state.status);
    ///     }
    ///     other => { let _ = other?; }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// The status read's error; Pending or an unknown outcome when no final answer came within the
    /// follow-up.
    pub async fn await_final(
        &self,
        request_id: RequestId,
        follow_up: FollowUp,
    ) -> Result<StatusResult, Error> {
        let query = StatusQuery::RequestId(request_id);
        follow_up
            .run(
                || self.status(&query),
                |answer| match answer {
                    Ok(_) => true,
                    Err(e) if e.outcome_unknown() => false,
                    Err(e) => e.code() != Some(&TransferCode::SendingTransferInvalidInfo),
                },
            )
            .await
    }

    /// The status of a transfer; authoritative for every status. `sending.transfer.invalid.info`
    /// means the transfer never arrived: resend the original create with the same Request-id,
    /// then ask again.
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
    pub async fn status(&self, query: &StatusQuery) -> Result<StatusResult, Error> {
        let Some(body) = StatusBody::of(query) else {
            return Err(ValidationError::new("transferId", ValidationKind::Missing).into());
        };
        let status = self.read_status(&body).await?;
        // The reply names no Request-id: a Request-id asked beside another identifier is
        // checked by a read of its own, which must name the same transfer.
        if let (Some(request_id), true) = (
            body.request_id,
            body.transfer_id.is_some() || body.ltn_number.is_some(),
        ) {
            let alone = StatusBody {
                transfer_id: None,
                ltn_number: None,
                request_id: Some(request_id),
            };
            let by_request_id = self.read_status(&alone).await?;
            let same = |a: &Option<String>, b: &Option<String>| match (a, b) {
                (Some(a), Some(b)) => a.trim() == b.trim(),
                _ => true,
            };
            if !same(&by_request_id.transfer_id, &status.transfer_id)
                || !same(&by_request_id.ltn_number, &status.ltn_number)
            {
                return Err(Error::Decode(whish_core::DecodeError::new(
                    "data.transferId",
                    format!(
                        "Request-id {request_id} names another transfer than the other identifiers asked for"
                    ),
                    200,
                    "transfer.status",
                    None,
                )));
            }
        }
        Ok(status)
    }

    /// One status read of `body`, refused when the reply names another transfer than one the
    /// body asks by.
    async fn read_status(&self, body: &StatusBody<'_>) -> Result<StatusResult, Error> {
        let req = self
            .request(
                "transfer.status",
                Method::POST,
                "/api/woo/send/money/status",
            )
            .json(body)?
            .resend(Resend::Read);
        let status = self
            .transport
            .call::<StatusResult, TransferCode>(req)
            .await?
            .require_data()?;
        if let Some((field, asked)) = body.contradicted_by(&status) {
            return Err(Error::Decode(whish_core::DecodeError::new(
                format!("data.{field}"),
                format!("names another transfer than the {field} asked for ({asked})"),
                200,
                "transfer.status",
                None,
            )));
        }
        Ok(status)
    }

    /// Check a cancel and fix its Request-id. Nothing is sent. The reason is kept in the
    /// account's audit log only.
    ///
    /// # Errors
    ///
    /// An error with `nothing_sent()` true (a validation error) when the request breaks a rule the
    /// SDK checks locally; nothing is sent.
    pub fn prepare_cancel(
        &self,
        ltn_number: &str,
        reason: Option<&str>,
    ) -> Result<PreparedCancel, Error> {
        let ltn_number = ltn_number.trim();
        if ltn_number.is_empty() {
            return Err(ValidationError::new("ltnNumber", ValidationKind::Missing).into());
        }
        let mut body = serde_json::json!({ "ltnNumber": ltn_number });
        if let Some(r) = reason {
            body["reason"] = serde_json::Value::from(r);
        }
        let body = serde_json::to_vec(&body)
            .map_err(|e| ValidationError::invalid("reason", e.to_string()))?;
        Ok(PreparedCancel {
            request_id: RequestId::generate(),
            ltn_number: ltn_number.to_owned(),
            body: body.into(),
            delivery: whish_core::verdict::DeliveryMark::new(),
        })
    }

    /// Cancel a cash-collection transfer not yet collected. Not resent automatically: if the
    /// outcome is unknown, read it with [`status`](Self::status) by LTN (`CANCELED_FULL` means
    /// it was applied) before sending the same prepared cancel again.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: whish_money_transfer::TransferClient) -> Result<(), whish_money_transfer::Error> {
    /// use whish_money_transfer::TransferCode;
    /// let cancel = client.prepare_cancel("LTN-123", Some("customer asked"))?;
    /// match client.cancel(&cancel).await {
    ///     Ok(c) => println!("now {:?}", c.status),
    ///     Err(e) if e.code() == Some(&TransferCode::TransferCannotBeCanceled) => {
    ///         println!("already collected or cancelled")
    ///     }
    ///     Err(e) if e.outcome_unknown() => println!("ask status before anything else"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `Err` for every answer but acceptance, told apart by
    /// [`Error::verdict`](whish_core::Error::verdict): a refusal (`code()`; final), Pending
    /// (`is_pending()`), an outcome left unknown after the request may have arrived
    /// (`outcome_unknown()`: send the same prepared request again, never a new one), or nothing
    /// sent (`nothing_sent()`: a transport failure before the first byte).
    pub async fn cancel(&self, prepared: &PreparedCancel) -> Result<Cancellation, Error> {
        let req = with_request_id(
            Request::new(
                "transfer.cancel",
                Method::POST,
                "/api/woo/cancel/send/money",
            )
            .json_bytes(prepared.body.clone())
            .resend(Resend::Never)
            .options(self.options)
            .delivery(&prepared.delivery),
            prepared.request_id,
        );
        match self.transport.call::<Cancellation, TransferCode>(req).await {
            Ok(reply) => reply.require_data(),
            // `transfer.cannot_be_canceled` after an earlier cancel that may have arrived: the
            // status by LTN says whether that one applied (CANCELED_FULL) or could not
            // (RECEIVED); any other answer leaves the outcome unknown.
            Err(CoreError::Failed(mut f))
                if f.code == TransferCode::TransferCannotBeCanceled
                    && f.resent_after_possible_delivery =>
            {
                let query = StatusQuery::LtnNumber(prepared.ltn_number.clone());
                match self.status(&query).await {
                    Ok(s) if s.status == crate::TransferStatus::CanceledFull => Ok(Cancellation {
                        ltn_number: s.ltn_number,
                        transfer_id: s.transfer_id,
                        status: s.status,
                        receiver_identity: None,
                    }),
                    Ok(s) if s.status == crate::TransferStatus::Received => {
                        // Collected: no cancel of ours applied.
                        prepared.delivery.clear();
                        f.resent_after_possible_delivery = false;
                        Err(CoreError::Failed(f))
                    }
                    other => {
                        if let Err(e) = other {
                            tracing::warn!(error = %e, "the status read did not settle transfer.cannot_be_canceled: the outcome stays unknown");
                        }
                        Err(CoreError::Failed(f))
                    }
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The countries money can be sent from (in the sandbox, only Lebanon unless asked).
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
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
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
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
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
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
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
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
