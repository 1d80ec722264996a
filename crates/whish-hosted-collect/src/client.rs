//! The collect client.

use std::sync::Arc;

use serde::Deserialize;
use whish_core::CallOptions;
use whish_core::credentials::SecretSource;
use whish_core::runtime::Resend;
use whish_core::runtime::{Method, Request, Transport};
use whish_core::{
    ClientSettings, Currency, ExternalId, FollowUp, SecretString, ServiceHeaders, SetupError,
    ValidationError,
};

use crate::Error;
use crate::code::CollectCode;
use crate::create::{CreatedPayment, NewPayment, PreparedPayment, PreparedRefund, prepare};
use crate::model::{BalanceData, CollectBalance, CollectStatus, PaymentStatus, Refund};

/// Builds a [`CollectClient`]: the shared [`ClientSettings`] (which must carry a `user_agent`:
/// the service requires one) plus the issued `channel`, `secret` and `website_url`.
#[derive(Debug)]
#[must_use = "a builder does nothing until build() is called"]
pub struct CollectClientBuilder {
    settings: ClientSettings,
    channel: Option<String>,
    secret: Option<SecretString>,
    secret_source: Option<Arc<dyn SecretSource>>,
    website_url: Option<String>,
    brand: String,
}

/// The brand segment of the live service's paths and codes: `/payment/whish`, `whish_pay.*`.
pub const LIVE_BRAND: &str = "whish";

/// The brand segment as the specification writes it (anonymized): `/payment/svc`.
pub const SPEC_BRAND: &str = "svc";

impl CollectClientBuilder {
    /// The `channel` issued to the merchant.
    pub fn channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = Some(channel.into());
        self
    }

    /// The `secret` issued to the merchant. It never shows in `Debug`, errors or logs.
    pub fn secret(mut self, secret: SecretString) -> Self {
        self.secret = Some(secret);
        self
    }

    /// The secret read from `source` before every attempt (see [`whish_core::credentials`]): a
    /// rotated secret takes effect on the next attempt. Replaces [`secret`](Self::secret).
    pub fn secret_from(mut self, source: impl SecretSource) -> Self {
        self.secret_source = Some(Arc::new(source));
        self
    }

    /// The `websiteUrl`, exactly as issued with the keys.
    pub fn website_url(mut self, website_url: impl Into<String>) -> Self {
        self.website_url = Some(website_url.into());
        self
    }

    /// The brand segment of the create and refund paths (`/payment/{brand}`,
    /// `/payment/{brand}/refund`): [`LIVE_BRAND`] (`whish`) by default, as the live service and
    /// every public integration of it use; [`SPEC_BRAND`] (`svc`) is the specification's
    /// anonymized spelling. Failure codes decode under either spelling.
    pub fn brand(mut self, brand: impl Into<String>) -> Self {
        self.brand = brand.into();
        self
    }

    /// Check the settings and build the client. Nothing is sent. An error names the setting.
    ///
    /// # Errors
    ///
    /// A `SetupError` when a required setting is missing or a setting is invalid (the base URL, a
    /// credential, `https://` with no TLS stack built in, local callbacks with a base URL that is
    /// not loopback).
    pub fn build(self) -> Result<CollectClient, SetupError> {
        let brand = self.brand.trim();
        if whish_core::runtime::path_segment(brand, "brand")? != brand {
            return Err(SetupError::invalid(
                "brand",
                "must be one path segment of letters, digits, `-`, `.`, `_` or `~`",
            ));
        }
        let headers = ServiceHeaders::new()
            .required("channel", "channel", self.channel.as_deref())
            .secret_or_source("secret", "secret", self.secret.as_ref(), self.secret_source)
            .required("websiteurl", "website_url", self.website_url.as_deref())
            .require("user_agent", self.settings.user_agent_value().is_some());
        Ok(CollectClient {
            transport: self.settings.build_transport("hosted-collect", headers)?,
            options: CallOptions::default(),
            create_path: format!("/payment/{brand}"),
            refund_path: format!("/payment/{brand}/refund"),
        })
    }
}

/// The hosted-collect client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct CollectClient {
    transport: Transport,
    options: CallOptions,
    create_path: String,
    refund_path: String,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ByExternalId<'a> {
    currency: &'a Currency,
    external_id: &'a ExternalId,
    #[serde(skip_serializing_if = "Option::is_none")]
    refund_reason: Option<&'a str>,
}

impl CollectClient {
    /// The service and account this client sends to, as a journal records it beside each
    /// request (base URL and a fingerprint of the account's plain settings, never a secret):
    /// see [`Transport::target`](whish_core::runtime::Transport::target).
    pub fn target(&self) -> String {
        self.transport.target()
    }

    /// Start building a client for the service at `settings`: a [`ClientSettings`] with your
    /// `User-Agent` (the service requires one).
    ///
    /// # Examples
    ///
    /// ```
    /// use whish_core::{ClientSettings, SecretString, UserAgent};
    /// use whish_hosted_collect::CollectClient;
    ///
    /// let ua: UserAgent = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)".parse()?;
    /// let client = CollectClient::builder(
    ///     ClientSettings::new("https://collect.example.com/api").user_agent(ua),
    /// )
    /// .channel("my-channel")
    /// .secret(SecretString::from("my-secret"))
    /// .website_url("shop.example.com")
    /// .build()?;
    /// # let _ = client;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(settings: impl Into<ClientSettings>) -> CollectClientBuilder {
        CollectClientBuilder {
            settings: settings.into(),
            channel: None,
            secret: None,
            secret_source: None,
            website_url: None,
            brand: LIVE_BRAND.to_owned(),
        }
    }

    /// The same client for another merchant account (its `channel`, `secret`, fixed or from a
    /// source, and `website_url`), sharing this one's connection pool, retry budget,
    /// interceptors, User-Agent and settings.
    ///
    /// # Errors
    ///
    /// A `SetupError` naming the setting, as [`CollectClientBuilder::build`].
    pub fn with_credentials(
        &self,
        channel: &str,
        secret: impl SecretSource,
        website_url: &str,
    ) -> Result<CollectClient, SetupError> {
        let headers = ServiceHeaders::new()
            .required("channel", "channel", Some(channel))
            .secret_from("secret", "secret", Arc::new(secret))
            .required("websiteurl", "website_url", Some(website_url));
        Ok(CollectClient {
            transport: self.transport.with_headers(headers)?,
            ..self.clone()
        })
    }

    /// A client whose calls use these retry and timeout overrides; it shares the connection pool.
    pub fn with_options(&self, options: CallOptions) -> CollectClient {
        CollectClient {
            transport: self.transport.clone(),
            options,
            create_path: self.create_path.clone(),
            refund_path: self.refund_path.clone(),
        }
    }

    /// The account balance in `currency` (USD or LBP). A read: resent after transient failures.
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
    pub async fn balance(&self, currency: Currency) -> Result<CollectBalance, Error> {
        currency.require_usd_or_lbp("currency")?;
        let req = Request::new("collect.balance", Method::GET, "/payment/account/balance")
            .query("currency", currency.code())
            .resend(Resend::Read)
            .options(self.options);
        let data = self
            .transport
            .call::<BalanceData, CollectCode>(req)
            .await?
            .require_data()?;
        Ok(CollectBalance {
            balance: data.balance(),
            currency,
        })
    }

    /// Check a payment and fix its externalId (generated when you gave none), without sending.
    /// Refuses, with a clear error: a currency other than USD or LBP, an amount outside the rules
    /// (USD at least 1.00 with at most 2 decimals; LBP a whole number, at least 1000), and any of
    /// the four addresses that is not a public http(s) address.
    ///
    /// # Errors
    ///
    /// An error with `nothing_sent()` true (a validation error) when the request breaks a rule the
    /// SDK checks locally; nothing is sent.
    pub fn prepare_payment(&self, payment: NewPayment) -> Result<PreparedPayment, Error> {
        Ok(prepare(payment, self.transport.callbacks())?)
    }

    /// Create the payment. `Ok` is the hosted page address; it does **not** mean the payer
    /// paid. Resent with the same bytes and externalId after a timeout, a dropped reply or
    /// Pending (the spec: retry a 500 with backoff using the same externalId). A Pending that
    /// outlasts the policy is `Err` with [`is_pending`](whish_core::Error::is_pending), a
    /// refusal `Err` with its [`code`](whish_core::Error::code): reconcile with
    /// [`status`](Self::status), never create a second payment for the same order.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: whish_hosted_collect::CollectClient,
    /// #              payment: whish_hosted_collect::NewPayment) -> Result<(), whish_hosted_collect::Error> {
    /// let prepared = client.prepare_payment(payment)?;
    /// let external_id = prepared.external_id().clone(); // store it with the order, now
    /// # let _ = external_id;
    /// match client.create_payment(&prepared).await {
    ///     Ok(created) => println!("send the payer to {}", created.collect_url),
    ///     Err(e) if e.outcome_unknown() => println!("create again with the same prepared payment"),
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
    pub async fn create_payment(
        &self,
        prepared: &PreparedPayment,
    ) -> Result<CreatedPayment, Error> {
        #[derive(Deserialize)]
        struct Data {
            #[serde(rename = "collectUrl")]
            collect_url: String,
        }
        // The service's one answer without the envelope: 403 for a non-public callback or
        // redirect address, a refusal. A payment whose four addresses are public (checked
        // before sending) cannot earn it: a 403 then is a page in front of the service (a WAF)
        // that may have passed the request on, so the outcome is unknown, never refused.
        let refused_with: &'static [u16] = if prepared.non_public { &[403] } else { &[] };
        let req = Request::new("collect.create", Method::POST, self.create_path.as_str())
            .json_bytes(prepared.body.clone())
            .idempotency_key(&prepared.external_id)
            .resend(Resend::SameKey { on_pending: true })
            .options(self.options)
            .delivery(&prepared.delivery)
            .refused_with(refused_with);
        let reply = self.transport.call::<Data, CollectCode>(req).await?;
        let retrieved = reply.retrieved == Some(true);
        let dialog = reply.dialog.clone();
        let data = reply.require_data()?;
        Ok(CreatedPayment {
            collect_url: data.collect_url,
            external_id: prepared.external_id.clone(),
            retrieved,
            dialog,
        })
    }

    /// The status of the payment with this externalId. Call it before fulfilling an order, on
    /// every callback, and as the fallback when no callback arrived. A read: resent after
    /// transient failures.
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
    pub async fn status(
        &self,
        currency: Currency,
        external_id: &ExternalId,
    ) -> Result<PaymentStatus, Error> {
        currency.require_usd_or_lbp("currency")?;
        let req = Request::new("collect.status", Method::POST, "/payment/collect/status")
            .json(&ByExternalId {
                currency: &currency,
                external_id,
                refund_reason: None,
            })?
            .idempotency_key(external_id)
            .resend(Resend::Read)
            .options(self.options);
        self.transport
            .call::<PaymentStatus, CollectCode>(req)
            .await?
            .require_data()
    }

    /// Follow up a payment: ask the status, with backoff, until it is settled (`success` or
    /// `failed`) or `refunded`, or until the deadline; the last status comes back either way
    /// (check [`CollectStatus::is_settled`](crate::CollectStatus::is_settled)). The spec's
    /// fallback when no callback arrived, and the follow-up of a Pending create.
    ///
    /// ```no_run
    /// # async fn run(client: whish_hosted_collect::CollectClient, id: whish_core::ExternalId) -> Result<(), whish_hosted_collect::Error> {
    /// use std::time::Duration;
    /// use whish_core::{Currency, FollowUp};
    /// let status = client
    ///     .await_final(Currency::Usd, &id, FollowUp::within(Duration::from_secs(900)))
    ///     .await?;
    /// if status.collect_status.is_paid() {
    ///     // fulfil the order
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
        currency: Currency,
        external_id: &ExternalId,
        follow_up: FollowUp,
    ) -> Result<PaymentStatus, Error> {
        follow_up
            .run(
                || self.status(currency.clone(), external_id),
                |answer| match answer {
                    Ok(s) => matches!(
                        s.collect_status,
                        CollectStatus::Success | CollectStatus::Failed | CollectStatus::Refunded
                    ),
                    Err(e) => !e.outcome_unknown(),
                },
            )
            .await
    }

    /// Check a refund of the payment with this externalId, without sending.
    ///
    /// # Errors
    ///
    /// An error with `nothing_sent()` true (a validation error) when the request breaks a rule the
    /// SDK checks locally; nothing is sent.
    pub fn prepare_refund(
        &self,
        currency: Currency,
        external_id: &ExternalId,
        refund_reason: Option<&str>,
    ) -> Result<PreparedRefund, Error> {
        currency.require_usd_or_lbp("currency")?;
        let body = serde_json::to_vec(&ByExternalId {
            currency: &currency,
            external_id,
            refund_reason,
        })
        .map_err(|e| ValidationError::invalid("refundReason", e.to_string()))?;
        Ok(PreparedRefund {
            external_id: external_id.clone(),
            currency,
            body: body.into(),
            delivery: whish_core::verdict::DeliveryMark::new(),
        })
    }

    /// Refund a successful payment, by its original externalId. The service accepts refunds only
    /// from the source IP addresses registered for the account (see
    /// [`ClientSettings::proxy`] for a fixed-egress proxy). Resent with the same externalId
    /// after a timeout or Pending; a duplicate comes back with `retrieved` true and refunds
    /// nothing twice.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: whish_hosted_collect::CollectClient,
    /// #              external_id: whish_core::ExternalId) -> Result<(), whish_hosted_collect::Error> {
    /// use whish_core::Currency;
    /// let refund = client.prepare_refund(Currency::Usd, &external_id, Some("returned goods"))?;
    /// let refunded = client.refund(&refund).await?;
    /// if refunded.retrieved {
    ///     println!("already refunded before; nothing refunded twice");
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
    pub async fn refund(&self, prepared: &PreparedRefund) -> Result<Refund, Error> {
        let req = Request::new("collect.refund", Method::POST, self.refund_path.as_str())
            .json_bytes(prepared.body.clone())
            .idempotency_key(&prepared.external_id)
            .resend(Resend::SameKey { on_pending: true })
            .options(self.options)
            .delivery(&prepared.delivery);
        let reply = self
            .transport
            .call::<serde_json::Value, CollectCode>(req)
            .await?;
        Ok(Refund {
            external_id: prepared.external_id.clone(),
            retrieved: reply.retrieved == Some(true),
            dialog: reply.dialog,
        })
    }
}
