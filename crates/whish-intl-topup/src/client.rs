//! The top-up client.

use whish_core::retry::Resend;
use whish_core::transport::{CallOptions, Method, Policy, Request, Transport};
use whish_core::{
    BaseUrl, Error as CoreError, SecretString, UserAgent, ValidationError, ValidationKind,
};

use crate::code::TopupCode;
use crate::model::{Balance, BalanceData, FetchData, FetchedOptions, TopupOption};
use crate::pay::{Challenge, PayOptions, PayOutcome, Payment, PreparedPay, prepare};
use crate::{Error, model::SoldItem};

/// Builds a [`TopupClient`].
#[derive(Debug)]
pub struct TopupClientBuilder {
    base_url: String,
    session_id: SecretString,
    token: SecretString,
    user_agent: UserAgent,
    language: Option<String>,
    policy: Policy,
}

impl TopupClientBuilder {
    /// Send a `language` header (the service's sample carries one; its meaning is not described).
    pub fn language(mut self, language: impl Into<String>) -> Self {
        self.language = Some(language.into());
        self
    }

    /// Retry and timeout settings.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Check the settings and build the client. Nothing is sent.
    pub fn build(self) -> Result<TopupClient, ValidationError> {
        let base = BaseUrl::parse(&self.base_url, "WHISH_TOPUP_BASE_URL")?;
        let mut t = Transport::builder("intl-topup", base)
            .secret_header("sessionid", &self.session_id)
            .secret_header("token", &self.token)
            .user_agent(&self.user_agent)
            .policy(self.policy);
        if let Some(lang) = &self.language {
            t = t.header("language", lang);
        }
        Ok(TopupClient {
            transport: t.build()?,
        })
    }
}

/// The international top-up client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TopupClient {
    transport: Transport,
}

pub(crate) fn check_target(target: &str) -> Result<String, ValidationError> {
    let t = target.trim();
    if t.is_empty() {
        return Err(ValidationError::new("target", ValidationKind::Missing));
    }
    if t.chars().any(char::is_control) {
        return Err(ValidationError::invalid(
            "target",
            "holds control characters",
        ));
    }
    Ok(t.to_owned())
}

impl TopupClient {
    /// Start building a client from the base URL, the session's `sessionId` and `token` (both
    /// secret) and your `User-Agent`.
    pub fn builder(
        base_url: impl Into<String>,
        session_id: SecretString,
        token: SecretString,
        user_agent: UserAgent,
    ) -> TopupClientBuilder {
        TopupClientBuilder {
            base_url: base_url.into(),
            session_id,
            token,
            user_agent,
            language: None,
            policy: Policy::default(),
        }
    }

    /// The account balance, in the session's currency. `void_balance` is not cash.
    pub async fn balance(&self) -> Result<Balance, Error> {
        self.balance_with(CallOptions::default()).await
    }

    /// [`balance`](Self::balance) with per-call retry and timeout settings.
    pub async fn balance_with(&self, options: CallOptions) -> Result<Balance, Error> {
        let req = Request::new("topup.balance", Method::GET, "/account/balance")
            .resend(Resend::Read)
            .options(options);
        let reply = self.transport.call::<BalanceData, TopupCode>(req).await?;
        Ok(reply.require_data()?.balance_details)
    }

    /// The options `provider` offers for `target` (for the example provider, the destination
    /// mobile number). The provider code is sent as exactly one path segment.
    pub async fn fetch_options(
        &self,
        provider: &str,
        target: &str,
    ) -> Result<FetchedOptions, Error> {
        self.fetch_options_with(provider, target, CallOptions::default())
            .await
    }

    /// [`fetch_options`](Self::fetch_options) with per-call retry and timeout settings.
    pub async fn fetch_options_with(
        &self,
        provider: &str,
        target: &str,
        options: CallOptions,
    ) -> Result<FetchedOptions, Error> {
        let segment = whish_core::path::segment(provider, "provider")?;
        let target = check_target(target)?;
        let req = Request::new("topup.fetch", Method::POST, format!("/v2/{segment}/fetch"))
            .json(&serde_json::json!({ "target": target }))?
            .resend(Resend::Read)
            .options(options);
        let data = self
            .transport
            .call::<FetchData, TopupCode>(req)
            .await?
            .require_data()?;
        let normalized = data.target.unwrap_or_else(|| target.clone());
        let options = data
            .options
            .into_iter()
            .map(|o| TopupOption {
                provider: provider.to_owned(),
                // Pay uses the target given to fetch, as the spec says, not the normalized one.
                target: target.clone(),
                id: o.id,
                display_name: o.display_name,
                amount: o.amount,
                price: o.price,
                currency: o.currency,
                metadata: o.metadata.filter(|m| !m.is_null()),
            })
            .collect();
        Ok(FetchedOptions {
            provider: provider.to_owned(),
            target: normalized,
            options,
        })
    }

    /// Prepare a payment for a fetched option, with a new externalId. Store
    /// [`PreparedPay::external_id`] before calling [`pay`](Self::pay).
    pub fn prepare_pay(&self, option: &TopupOption) -> Result<PreparedPay, Error> {
        self.prepare_pay_with(option, PayOptions::default())
    }

    /// Prepare a payment with your own externalId or, when the operator instructs it, another
    /// target.
    pub fn prepare_pay_with(
        &self,
        option: &TopupOption,
        options: PayOptions,
    ) -> Result<PreparedPay, Error> {
        let segment = whish_core::path::segment(&option.provider, "provider")?;
        Ok(prepare(option, segment, options)?)
    }

    /// Pay. Resends the same bytes with the same externalId after a timeout, a dropped reply or
    /// Pending, within the policy; a replay comes back with `retrieved` true. If the outcome is
    /// still unknown when the policy runs out (`Error::Pending` or a transport error with
    /// `may_have_reached`), call `pay` again later with the same `PreparedPay`.
    pub async fn pay(&self, prepared: &PreparedPay) -> Result<PayOutcome, Error> {
        self.pay_with(prepared, CallOptions::default()).await
    }

    /// [`pay`](Self::pay) with per-call retry and timeout settings.
    pub async fn pay_with(
        &self,
        prepared: &PreparedPay,
        options: CallOptions,
    ) -> Result<PayOutcome, Error> {
        #[derive(serde::Deserialize)]
        struct PayData {
            #[serde(rename = "listOfSoldItems", default)]
            list_of_sold_items: Vec<SoldItem>,
        }
        let req = Request::new(
            "topup.pay",
            Method::POST,
            format!("/v2/{}/pay", prepared.provider_segment),
        )
        .json_bytes(prepared.body.clone())
        .idempotency_key(prepared.external_id.as_str())
        .resend(Resend::SameKey { on_pending: true })
        .options(options);
        match self.transport.call::<PayData, TopupCode>(req).await {
            Ok(reply) => {
                let retrieved = reply.retrieved == Some(true);
                let (dialog, attempts) = (reply.dialog.clone(), reply.attempts);
                let data = reply.require_data()?;
                Ok(PayOutcome::Paid(Payment {
                    sold_items: data.list_of_sold_items,
                    dialog,
                    retrieved,
                    external_id: prepared.external_id.clone(),
                    attempts,
                }))
            }
            Err(CoreError::Failed(f)) if f.code.is_challenge() => {
                Ok(PayOutcome::Challenge(Challenge {
                    code: f.code,
                    dialog: f.dialog,
                    external_id: prepared.external_id.clone(),
                }))
            }
            Err(e) => Err(e),
        }
    }
}
