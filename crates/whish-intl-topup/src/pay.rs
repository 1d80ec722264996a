//! Paying for a fetched option.

use serde::Serialize;
use whish_core::runtime::Bytes;
use whish_core::{Amount, Dialog, ExternalId};

use crate::code::TopupCode;
use crate::model::{SoldItem, TopupOption};

/// A pay request ready to send: the body is serialized once, here, and every send and resend of
/// it carries these same bytes and this same externalId.
///
/// Store [`external_id`](Self::external_id) before calling
/// [`TopupClient::pay`](crate::TopupClient::pay): it is the only way to recover the outcome of a
/// payment whose reply was lost (pay again with the same `PreparedPay`; the service replays the
/// original result instead of charging twice).
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a prepared pay does nothing until it is paid"]
pub struct PreparedPay {
    pub(crate) provider: String,
    pub(crate) external_id: ExternalId,
    pub(crate) option_id: String,
    pub(crate) amount: Amount,
    pub(crate) target: String,
    pub(crate) body: Bytes,
    /// Set before the first byte of a pay leaves (see [`whish_core::verdict::DeliveryMark`]).
    pub(crate) delivery: whish_core::verdict::DeliveryMark,
}

impl PreparedPay {
    /// The delivery mark this request carries across calls: set before the first byte of a
    /// send leaves, so a dropped future still counts as "may have arrived". A store that
    /// knows the request was sent before (a journal) sets it before sending it again.
    pub fn delivery(&self) -> &whish_core::verdict::DeliveryMark {
        &self.delivery
    }

    /// The idempotency key of this payment. Store it before sending.
    pub fn external_id(&self) -> &ExternalId {
        &self.external_id
    }
    /// The provider code.
    pub fn provider(&self) -> &str {
        &self.provider
    }
    /// The option id.
    pub fn option_id(&self) -> &str {
        &self.option_id
    }
    /// The amount, exactly as fetched.
    pub fn amount(&self) -> Amount {
        self.amount
    }
    /// The target.
    pub fn target(&self) -> &str {
        &self.target
    }
    /// The exact JSON body that will be sent.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Rebuild a prepared pay from what was stored before its first send: the provider and the
    /// exact bytes of [`body`](Self::body) (the externalId, option, amount and target are read
    /// from them). Paying it again replays the original result; it never charges twice. Pass
    /// only bytes that came from `body()`: the checks of
    /// [`prepare_pay`](crate::TopupClient::prepare_pay) are not repeated.
    ///
    /// ```
    /// use whish_intl_topup::PreparedPay;
    /// let body = br#"{"target":"971501234567","optionId":"ETI-10","amount":10.5,"externalId":"order-17"}"#;
    /// let p = PreparedPay::from_stored("etisalat-ae", body.to_vec())?;
    /// assert_eq!(p.external_id().as_str(), "order-17");
    /// assert_eq!(p.amount().to_string(), "10.5");
    /// # Ok::<(), whish_core::ValidationError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn from_stored(
        provider: &str,
        body: impl Into<Bytes>,
    ) -> Result<PreparedPay, whish_core::ValidationError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Stored {
            target: String,
            option_id: String,
            amount: Amount,
            external_id: String,
        }
        whish_core::runtime::path_segment(provider, "provider")?;
        let body = body.into();
        let s: Stored = serde_json::from_slice(&body).map_err(|_| {
            whish_core::ValidationError::invalid("body", "is not a stored pay body")
        })?;
        Ok(PreparedPay {
            provider: provider.to_owned(),
            external_id: ExternalId::new(s.external_id)?,
            option_id: s.option_id,
            amount: s.amount,
            target: s.target,
            body,
            delivery: whish_core::verdict::DeliveryMark::sent_before(),
        })
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PayBody<'a> {
    pub(crate) target: &'a str,
    pub(crate) option_id: &'a str,
    pub(crate) amount: serde_json::Number,
    pub(crate) external_id: &'a ExternalId,
}

/// A payment to prepare: a fetched option (borrowed: preparing copies only the fields the
/// payment keeps), and optionally your own externalId or (only when the operator instructs it)
/// another target. `&TopupOption` converts into one.
///
/// ```no_run
/// # fn f(client: whish_intl_topup::TopupClient, option: whish_intl_topup::TopupOption) -> Result<(), whish_intl_topup::Error> {
/// use whish_core::ExternalId;
/// use whish_intl_topup::PayRequest;
/// let prepared = client.prepare_pay(PayRequest::new(&option).external_id(ExternalId::new("order-17")?))?;
/// # let _ = prepared; Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a pay request does nothing until it is prepared and paid"]
pub struct PayRequest<'a> {
    pub(crate) option: &'a TopupOption,
    pub(crate) external_id: Option<ExternalId>,
    pub(crate) target: Option<String>,
}

impl<'a> PayRequest<'a> {
    /// Pay for this fetched option, at exactly its fetched amount.
    pub fn new(option: &'a TopupOption) -> PayRequest<'a> {
        PayRequest {
            option,
            external_id: None,
            target: None,
        }
    }
    /// Use this externalId (unique per payment); one is generated when you give none.
    pub fn external_id(mut self, id: ExternalId) -> Self {
        self.external_id = Some(id);
        self
    }
    /// Pay for another target than the fetched one (only when the operator instructs it).
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }
}

impl<'a> From<&'a TopupOption> for PayRequest<'a> {
    fn from(option: &'a TopupOption) -> Self {
        PayRequest::new(option)
    }
}

pub(crate) fn prepare(request: PayRequest<'_>) -> Result<PreparedPay, whish_core::ValidationError> {
    let option = request.option;
    // The provider becomes a path segment when paying; refuse one that cannot, now.
    whish_core::runtime::path_segment(&option.provider, "provider")?;
    // The amount goes back exactly as fetched, as a JSON number: one that no JSON number can
    // carry exactly (a reply may send more digits than a double holds) is refused, not rounded.
    let amount = match &option.wire_amount {
        Some(number) => number.clone(),
        None => option.amount.check_exact_json_number("amount")?,
    };
    let external_id = request.external_id.unwrap_or_else(ExternalId::generate);
    let target = match request.target {
        Some(t) => crate::client::check_target(&t)?,
        None => option.target.clone(),
    };
    let body = serde_json::to_vec(&PayBody {
        target: &target,
        option_id: &option.id,
        amount,
        external_id: &external_id,
    })
    .map_err(|e| whish_core::ValidationError::invalid("amount", e.to_string()))?;
    Ok(PreparedPay {
        provider: option.provider.clone(),
        external_id,
        option_id: option.id.clone(),
        amount: option.amount,
        target,
        body: Bytes::from(body),
        delivery: whish_core::verdict::DeliveryMark::new(),
    })
}

/// A completed payment.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Payment {
    /// The sold items; store each one's transaction id.
    pub sold_items: Vec<SoldItem>,
    /// The informational dialog of the reply (with `yesButton`/`noButton` in `other`).
    pub dialog: Option<Dialog>,
    /// True when the service replayed an already-processed payment (a resend after a timeout or
    /// Pending, or a second `pay` with the same `PreparedPay`): nothing was charged again.
    pub retrieved: bool,
    /// The externalId of the payment.
    pub external_id: ExternalId,
    /// How many attempts the call took.
    pub attempts: u32,
}

impl Payment {
    /// The sold items.
    pub fn sold_items(&self) -> &[SoldItem] {
        &self.sold_items
    }
}

/// A documented challenge: an expected next step (such as a provider one-time code), not a
/// failure. None is documented yet; the data file `codes/intl-topup.toml` marks them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Challenge {
    /// The challenge code.
    pub code: TopupCode,
    /// The dialog to show.
    pub dialog: Option<Dialog>,
    /// The externalId of the payment the challenge belongs to.
    pub external_id: ExternalId,
}

/// What an accepted pay call produced. A refusal and Pending are `Err`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[must_use = "the outcome holds the sold items: store their transaction ids"]
pub enum PayOutcome {
    /// Paid: the sold items.
    Paid(Payment),
    /// A challenge the caller must complete.
    Challenge(Challenge),
}
