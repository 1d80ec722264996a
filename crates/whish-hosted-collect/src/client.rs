//! The collect client.

use serde::Deserialize;
use whish_core::retry::Resend;
use whish_core::transport::{CallOptions, Method, Policy, Request, Transport};
use whish_core::{
    BaseUrl, CallbackAddresses, Currency, ExternalId, SecretString, UserAgent, ValidationError,
};

use crate::Error;
use crate::code::CollectCode;
use crate::create::{CreatedPayment, NewPayment, PreparedPayment, prepare};
use crate::model::{BalanceData, CollectBalance, PaymentStatus, Refund};

/// Builds a [`CollectClient`].
#[derive(Debug)]
pub struct CollectClientBuilder {
    base_url: String,
    channel: String,
    secret: SecretString,
    website_url: String,
    user_agent: UserAgent,
    policy: Policy,
    callbacks: CallbackAddresses,
}

impl CollectClientBuilder {
    /// Retry and timeout settings.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Accept loopback or private callback and redirect addresses (a listener on this machine).
    /// Only for the local sandbox: [`build`](Self::build) refuses it unless the base URL is
    /// loopback, and the real service answers HTTP 403 for such addresses.
    pub fn allow_local_callbacks(mut self) -> Self {
        self.callbacks = CallbackAddresses::AllowLocal;
        self
    }

    /// Check the settings and build the client. Nothing is sent.
    pub fn build(self) -> Result<CollectClient, ValidationError> {
        let base = BaseUrl::parse(&self.base_url, "WHISH_COLLECT_BASE_URL")?;
        let callbacks = self.callbacks.for_base(&base, "successCallbackUrl")?;
        if self.channel.trim().is_empty() {
            return Err(ValidationError::new(
                "WHISH_COLLECT_CHANNEL",
                whish_core::ValidationKind::Missing,
            ));
        }
        if self.website_url.trim().is_empty() {
            return Err(ValidationError::new(
                "WHISH_COLLECT_WEBSITE_URL",
                whish_core::ValidationKind::Missing,
            ));
        }
        let transport = Transport::builder("hosted-collect", base)
            .header("channel", self.channel.trim())
            .secret_header("secret", &self.secret)
            .header("websiteurl", self.website_url.trim())
            .user_agent(&self.user_agent)
            .policy(self.policy)
            .build()?;
        Ok(CollectClient {
            transport,
            callbacks,
        })
    }
}

/// The hosted-collect client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct CollectClient {
    transport: Transport,
    callbacks: CallbackAddresses,
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
    /// Start building a client from the base URL, the issued `channel` and `secret`, the
    /// `websiteUrl` exactly as issued with the keys, and your `User-Agent`.
    pub fn builder(
        base_url: impl Into<String>,
        channel: impl Into<String>,
        secret: SecretString,
        website_url: impl Into<String>,
        user_agent: UserAgent,
    ) -> CollectClientBuilder {
        CollectClientBuilder {
            base_url: base_url.into(),
            channel: channel.into(),
            secret,
            website_url: website_url.into(),
            user_agent,
            policy: Policy::default(),
            callbacks: CallbackAddresses::PublicOnly,
        }
    }

    /// The account balance in `currency` (USD or LBP). A read: resent after transient failures.
    pub async fn balance(&self, currency: Currency) -> Result<CollectBalance, Error> {
        self.balance_with(currency, CallOptions::default()).await
    }

    /// [`balance`](Self::balance) with per-call retry and timeout settings.
    pub async fn balance_with(
        &self,
        currency: Currency,
        options: CallOptions,
    ) -> Result<CollectBalance, Error> {
        currency.require_usd_or_lbp("currency")?;
        let req = Request::new("collect.balance", Method::GET, "/payment/account/balance")
            .query("currency", currency.code())
            .resend(Resend::Read)
            .options(options);
        let data = self
            .transport
            .call::<BalanceData, CollectCode>(req)
            .await?
            .require_data()?;
        Ok(CollectBalance {
            balance: data.balance,
            currency,
        })
    }

    /// Check a payment and fix its externalId (generated when you gave none), without sending.
    /// Refuses, with a clear error: a currency other than USD or LBP, an amount outside the rules
    /// (USD at least 1.00 with at most 2 decimals; LBP a whole number, at least 1000), and any of
    /// the four addresses that is not a public http(s) address.
    pub fn prepare_payment(&self, payment: NewPayment) -> Result<PreparedPayment, Error> {
        Ok(prepare(payment, self.callbacks)?)
    }

    /// Create the payment. The result is the hosted page address; it does **not** mean the payer
    /// paid. Resent with the same bytes and externalId after a timeout, a dropped reply or
    /// Pending; a Pending that outlasts the policy comes back as `Error::Pending` carrying the
    /// externalId: reconcile with [`status`](Self::status), never create a second payment for
    /// the same order.
    pub async fn create_payment(
        &self,
        prepared: &PreparedPayment,
    ) -> Result<CreatedPayment, Error> {
        self.create_payment_with(prepared, CallOptions::default())
            .await
    }

    /// [`create_payment`](Self::create_payment) with per-call retry and timeout settings.
    pub async fn create_payment_with(
        &self,
        prepared: &PreparedPayment,
        options: CallOptions,
    ) -> Result<CreatedPayment, Error> {
        #[derive(Deserialize)]
        struct Data {
            #[serde(rename = "collectUrl")]
            collect_url: String,
        }
        let req = Request::new("collect.create", Method::POST, "/payment/svc")
            .json_bytes(prepared.body.clone())
            .idempotency_key(prepared.external_id.as_str())
            .resend(Resend::SameKey { on_pending: true })
            .options(options);
        let reply = self.transport.call::<Data, CollectCode>(req).await?;
        let retrieved = reply.retrieved == Some(true);
        let data = reply.require_data()?;
        Ok(CreatedPayment {
            collect_url: data.collect_url,
            external_id: prepared.external_id.clone(),
            retrieved,
        })
    }

    /// The status of the payment with this externalId. Call it before fulfilling an order, on
    /// every callback, and as the fallback when no callback arrived. A read: resent after
    /// transient failures.
    pub async fn status(
        &self,
        currency: Currency,
        external_id: &ExternalId,
    ) -> Result<PaymentStatus, Error> {
        self.status_with(currency, external_id, CallOptions::default())
            .await
    }

    /// [`status`](Self::status) with per-call retry and timeout settings.
    pub async fn status_with(
        &self,
        currency: Currency,
        external_id: &ExternalId,
        options: CallOptions,
    ) -> Result<PaymentStatus, Error> {
        currency.require_usd_or_lbp("currency")?;
        let req = Request::new("collect.status", Method::POST, "/payment/collect/status")
            .json(&ByExternalId {
                currency: &currency,
                external_id,
                refund_reason: None,
            })?
            .idempotency_key(external_id.as_str())
            .resend(Resend::Read)
            .options(options);
        self.transport
            .call::<PaymentStatus, CollectCode>(req)
            .await?
            .require_data()
    }

    /// Refund a successful payment, by its original externalId. The service accepts refunds only
    /// from the source IP addresses registered for the account. Resent with the same externalId
    /// after a timeout or Pending; a duplicate comes back with `retrieved` true and refunds
    /// nothing twice.
    pub async fn refund(
        &self,
        currency: Currency,
        external_id: &ExternalId,
        refund_reason: Option<&str>,
    ) -> Result<Refund, Error> {
        self.refund_with(currency, external_id, refund_reason, CallOptions::default())
            .await
    }

    /// [`refund`](Self::refund) with per-call retry and timeout settings.
    pub async fn refund_with(
        &self,
        currency: Currency,
        external_id: &ExternalId,
        refund_reason: Option<&str>,
        options: CallOptions,
    ) -> Result<Refund, Error> {
        currency.require_usd_or_lbp("currency")?;
        let req = Request::new("collect.refund", Method::POST, "/payment/svc/refund")
            .json(&ByExternalId {
                currency: &currency,
                external_id,
                refund_reason,
            })?
            .idempotency_key(external_id.as_str())
            .resend(Resend::SameKey { on_pending: true })
            .options(options);
        let reply = self
            .transport
            .call::<serde_json::Value, CollectCode>(req)
            .await?;
        Ok(Refund {
            external_id: external_id.clone(),
            retrieved: reply.retrieved == Some(true),
        })
    }
}
