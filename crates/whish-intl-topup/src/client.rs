//! The top-up client.

use std::sync::Arc;

use whish_core::CallOptions;
use whish_core::credentials::SecretSource;
use whish_core::runtime::Resend;
use whish_core::runtime::{Method, Request, Transport};
use whish_core::{
    ClientSettings, Error as CoreError, FollowUp, SecretString, ServiceHeaders, SetupError,
    ValidationError, ValidationKind,
};

use crate::code::TopupCode;
use crate::model::{Balance, BalanceData, FetchData, FetchedOptions, ProviderId, TopupOption};
use crate::pay::{Challenge, PayOutcome, PayRequest, Payment, PreparedPay, prepare};
use crate::{Error, model::SoldItem};

/// Builds a [`TopupClient`]: the shared [`ClientSettings`] (which must carry a `user_agent`: the
/// service requires one) plus the session's `session_id` and `token`.
#[derive(Debug)]
#[must_use = "a builder does nothing until build() is called"]
pub struct TopupClientBuilder {
    settings: ClientSettings,
    session_id: Option<SecretString>,
    session_id_source: Option<Arc<dyn SecretSource>>,
    token: Option<SecretString>,
    token_source: Option<Arc<dyn SecretSource>>,
    language: Option<String>,
}

impl TopupClientBuilder {
    /// The `sessionId` issued to the account (tied to one currency). Kept secret.
    pub fn session_id(mut self, session_id: SecretString) -> Self {
        self.session_id = Some(session_id);
        self
    }

    /// The `token` issued to the account. Kept secret.
    pub fn token(mut self, token: SecretString) -> Self {
        self.token = Some(token);
        self
    }

    /// The `sessionId` read from `source` before every attempt (see
    /// [`whish_core::credentials`]). Replaces [`session_id`](Self::session_id).
    pub fn session_id_from(mut self, source: impl SecretSource) -> Self {
        self.session_id_source = Some(Arc::new(source));
        self
    }

    /// The `token` read from `source` before every attempt: a rotated token takes effect on the
    /// next attempt. Replaces [`token`](Self::token).
    pub fn token_from(mut self, source: impl SecretSource) -> Self {
        self.token_source = Some(Arc::new(source));
        self
    }

    /// Send a `language` header (the service's sample carries one; its meaning is not described).
    pub fn language(mut self, language: impl Into<String>) -> Self {
        self.language = Some(language.into());
        self
    }

    /// Check the settings and build the client. Nothing is sent. An error names the setting.
    ///
    /// # Errors
    ///
    /// A `SetupError` when a required setting is missing or a setting is invalid (the base URL, a
    /// credential, `https://` with no TLS stack built in, local callbacks with a base URL that is
    /// not loopback).
    pub fn build(self) -> Result<TopupClient, SetupError> {
        let headers = ServiceHeaders::new()
            .secret_or_source(
                "sessionid",
                "session_id",
                self.session_id.as_ref(),
                self.session_id_source,
            )
            .secret_or_source("token", "token", self.token.as_ref(), self.token_source)
            .preference("language", "language", self.language.as_deref())
            .require("user_agent", self.settings.user_agent_value().is_some());
        Ok(TopupClient {
            transport: self.settings.build_transport("intl-topup", headers)?,
            options: CallOptions::default(),
        })
    }
}

/// The international top-up client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TopupClient {
    transport: Transport,
    options: CallOptions,
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
    /// use whish_intl_topup::TopupClient;
    ///
    /// let ua: UserAgent = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)".parse()?;
    /// let client = TopupClient::builder(ClientSettings::new("https://topup.example.com").user_agent(ua))
    ///     .session_id(SecretString::from("session-id"))
    ///     .token(SecretString::from("token"))
    ///     .build()?;
    /// # let _ = client;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(settings: impl Into<ClientSettings>) -> TopupClientBuilder {
        TopupClientBuilder {
            settings: settings.into(),
            session_id: None,
            session_id_source: None,
            token: None,
            token_source: None,
            language: None,
        }
    }

    /// The same client for another account (its `session_id` and `token`, fixed or from a
    /// source), sharing this one's connection pool, retry budget, interceptors, User-Agent and
    /// settings.
    ///
    /// # Errors
    ///
    /// A `SetupError` naming the setting, as [`TopupClientBuilder::build`].
    pub fn with_credentials(
        &self,
        session_id: impl SecretSource,
        token: impl SecretSource,
    ) -> Result<TopupClient, SetupError> {
        let headers = ServiceHeaders::new()
            .secret_from("sessionid", "session_id", Arc::new(session_id))
            .secret_from("token", "token", Arc::new(token));
        Ok(TopupClient {
            transport: self.transport.with_headers(headers)?,
            options: self.options,
        })
    }

    /// A client whose calls use these retry and timeout overrides; it shares the connection pool.
    pub fn with_options(&self, options: CallOptions) -> TopupClient {
        TopupClient {
            transport: self.transport.clone(),
            options,
        }
    }

    /// The account balance, in the session's currency. `void_balance` is not cash.
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
    pub async fn balance(&self) -> Result<Balance, Error> {
        let req = Request::new("topup.balance", Method::GET, "/account/balance")
            .resend(Resend::Read)
            .options(self.options);
        let reply = self.transport.call::<BalanceData, TopupCode>(req).await?;
        Ok(reply.require_data()?.balance_details)
    }

    /// The options `provider` offers for `target` (for the example provider, the destination
    /// mobile number). The provider code is sent as exactly one path segment.
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
    pub async fn fetch_options(
        &self,
        provider: ProviderId,
        target: &str,
    ) -> Result<FetchedOptions, Error> {
        let provider = provider.as_str();
        let segment = whish_core::runtime::path_segment(provider, "provider")?;
        let target = check_target(target)?;
        let req = Request::new("topup.fetch", Method::POST, format!("/v2/{segment}/fetch"))
            .json(&serde_json::json!({ "target": target }))?
            .resend(Resend::Read)
            .options(self.options);
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
                wire_amount: o.amount.to_json_number(),
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

    /// Prepare a payment for a fetched option (`&option`), or a [`PayRequest`] with your own
    /// externalId or another target. Nothing is sent. Store [`PreparedPay::external_id`]
    /// before calling [`pay`](Self::pay).
    ///
    /// # Errors
    ///
    /// An error with `nothing_sent()` true (a validation error) when the request breaks a rule the
    /// SDK checks locally; nothing is sent.
    pub fn prepare_pay<'a>(
        &self,
        request: impl Into<PayRequest<'a>>,
    ) -> Result<PreparedPay, Error> {
        Ok(prepare(request.into())?)
    }

    /// Follow up a payment whose outcome is unknown (Pending, or a transport failure after the
    /// resends): the service has no status endpoint, so this pays again with the same
    /// `PreparedPay` (same bytes, same externalId; the service replays the original result and
    /// never charges twice), with backoff, until the answer is final or the deadline passes.
    ///
    /// ```no_run
    /// # async fn run(client: whish_intl_topup::TopupClient, prepared: whish_intl_topup::PreparedPay) -> Result<(), whish_intl_topup::Error> {
    /// use std::time::Duration;
    /// use whish_core::FollowUp;
    /// let outcome = client
    ///     .await_final(&prepared, FollowUp::within(Duration::from_secs(120)))
    ///     .await?;
    /// println!("{outcome:?}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// The status read's error; Pending or an unknown outcome when no final answer came within the
    /// follow-up.
    pub async fn await_final(
        &self,
        prepared: &PreparedPay,
        follow_up: FollowUp,
    ) -> Result<PayOutcome, Error> {
        follow_up
            .run(
                || self.pay(prepared),
                |answer| !matches!(answer, Err(e) if e.outcome_unknown()),
            )
            .await
    }

    /// Pay. `Ok` means paid ([`PayOutcome::Paid`], with the sold items) or a documented
    /// challenge ([`PayOutcome::Challenge`], an expected next step). A refusal is `Err` with its
    /// [`code`](whish_core::Error::code).
    ///
    /// The service has no status endpoint: after a timeout, a dropped reply or Pending the same
    /// bytes are resent with the same externalId (it replays the original result with
    /// `retrieved` true and never charges twice). If the outcome is still unknown when the
    /// policy runs out ([`outcome_unknown`](whish_core::Error::outcome_unknown)), call `pay`
    /// again later with the same `PreparedPay`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: whish_intl_topup::TopupClient) -> Result<(), whish_intl_topup::Error> {
    /// use whish_intl_topup::PayOutcome;
    /// let offer = client.fetch_options(whish_intl_topup::ProviderId::new("example-provider"), "971501234567").await?;
    /// let prepared = client.prepare_pay(&offer.options()[0])?;
    /// let external_id = prepared.external_id().clone(); // store it now
    /// # let _ = external_id;
    /// match client.pay(&prepared).await {
    ///     Ok(PayOutcome::Paid(payment)) => println!("{} item(s) sold", payment.sold_items().len()),
    ///     Ok(other) => println!("next step: {other:?}"),
    ///     Err(e) if e.outcome_unknown() => println!("pay again later with the same prepared pay"),
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
    pub async fn pay(&self, prepared: &PreparedPay) -> Result<PayOutcome, Error> {
        #[derive(serde::Deserialize)]
        struct PayData {
            #[serde(rename = "listOfSoldItems", default)]
            list_of_sold_items: Vec<SoldItem>,
        }
        let req = Request::new(
            "topup.pay",
            Method::POST,
            format!(
                "/v2/{}/pay",
                whish_core::runtime::path_segment(&prepared.provider, "provider")?
            ),
        )
        .json_bytes(prepared.body.clone())
        .idempotency_key(&prepared.external_id)
        .resend(Resend::SameKey { on_pending: true })
        .options(self.options)
        .delivery(&prepared.delivery);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_header_is_not_part_of_the_account_a_journal_records() {
        let client = |language: Option<&str>| {
            let settings = ClientSettings::new("http://127.0.0.1:9").user_agent(
                "Shop/1.0 (https://shop.example.com; dev@shop.example.com)"
                    .parse()
                    .expect("ua"),
            );
            let mut b = TopupClient::builder(settings)
                .session_id(SecretString::from("session".to_owned()))
                .token(SecretString::from("token".to_owned()));
            if let Some(l) = language {
                b = b.language(l);
            }
            b.build().expect("client")
        };
        assert_eq!(client(Some("ar")).target(), client(None).target());
        assert_eq!(client(Some("ar")).target(), client(Some("en")).target());
    }
}
