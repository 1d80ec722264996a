//! Creating a payment.

use serde::Serialize;
use whish_core::transport::Bytes;
use whish_core::{
    Amount, CallbackAddresses, Currency, ExternalId, ValidationError, ValidationKind,
};

/// The four addresses every payment needs. The callbacks receive bodiless GETs; the redirects are
/// where the payer's browser goes. All four must be public http(s) addresses: the service answers
/// HTTP 403 for loopback, private or local ones, and the SDK refuses them before sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectUrls {
    /// GET when the link is paid.
    pub success_callback_url: String,
    /// GET when an attempt fails (the link stays payable).
    pub failure_callback_url: String,
    /// The payer's browser goes here after success.
    pub success_redirect_url: String,
    /// The payer's browser goes here after failure.
    pub failure_redirect_url: String,
}

impl CollectUrls {
    /// The four addresses, in the order success callback, failure callback, success redirect,
    /// failure redirect.
    pub fn new(
        success_callback_url: impl Into<String>,
        failure_callback_url: impl Into<String>,
        success_redirect_url: impl Into<String>,
        failure_redirect_url: impl Into<String>,
    ) -> CollectUrls {
        CollectUrls {
            success_callback_url: success_callback_url.into(),
            failure_callback_url: failure_callback_url.into(),
            success_redirect_url: success_redirect_url.into(),
            failure_redirect_url: failure_redirect_url.into(),
        }
    }
}

/// A payment to create: amount, currency and the four addresses are required; invoice and
/// externalId are optional (an externalId is generated when you give none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPayment {
    amount: Amount,
    currency: Currency,
    urls: CollectUrls,
    invoice: Option<String>,
    external_id: Option<ExternalId>,
}

impl NewPayment {
    /// A payment of `amount` in `currency` (USD or LBP).
    pub fn new(amount: Amount, currency: Currency, urls: CollectUrls) -> NewPayment {
        NewPayment {
            amount,
            currency,
            urls,
            invoice: None,
            external_id: None,
        }
    }

    /// A description of the payment.
    pub fn invoice(mut self, invoice: impl Into<String>) -> Self {
        self.invoice = Some(invoice.into());
        self
    }

    /// Your own externalId (unique per payment).
    pub fn external_id(mut self, id: ExternalId) -> Self {
        self.external_id = Some(id);
        self
    }
}

/// A create request ready to send, its body serialized once. Store
/// [`external_id`](Self::external_id) with your order **before** sending: it is what status,
/// refund and a resend use.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedPayment {
    pub(crate) external_id: ExternalId,
    pub(crate) currency: Currency,
    pub(crate) amount: Amount,
    pub(crate) body: Bytes,
}

impl PreparedPayment {
    /// The externalId of this payment.
    pub fn external_id(&self) -> &ExternalId {
        &self.external_id
    }
    /// The currency.
    pub fn currency(&self) -> &Currency {
        &self.currency
    }
    /// The amount.
    pub fn amount(&self) -> Amount {
        self.amount
    }
    /// The exact JSON body that will be sent.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody<'a> {
    #[serde(with = "whish_core::money::as_string")]
    amount: Amount,
    currency: &'a Currency,
    #[serde(skip_serializing_if = "Option::is_none")]
    invoice: Option<&'a str>,
    external_id: &'a ExternalId,
    success_callback_url: &'a str,
    failure_callback_url: &'a str,
    success_redirect_url: &'a str,
    failure_redirect_url: &'a str,
}

pub(crate) fn prepare(
    p: NewPayment,
    callbacks: CallbackAddresses,
) -> Result<PreparedPayment, ValidationError> {
    p.currency.require_usd_or_lbp("currency")?;
    p.amount.check_rules(&p.currency, "amount")?;
    let u = &p.urls;
    let urls = [
        ("successCallbackUrl", &u.success_callback_url),
        ("failureCallbackUrl", &u.failure_callback_url),
        ("successRedirectUrl", &u.success_redirect_url),
        ("failureRedirectUrl", &u.failure_redirect_url),
    ];
    for (field, url) in urls {
        if url.trim().is_empty() {
            return Err(ValidationError::new(field, ValidationKind::Missing));
        }
        callbacks.check(url, field)?;
    }
    if let Some(inv) = &p.invoice
        && inv.chars().any(|c| c.is_control() && c != '\n')
    {
        return Err(ValidationError::invalid(
            "invoice",
            "holds control characters",
        ));
    }
    let external_id = p.external_id.unwrap_or_else(ExternalId::generate);
    let amount = p.amount;
    let body = serde_json::to_vec(&CreateBody {
        amount,
        currency: &p.currency,
        invoice: p.invoice.as_deref(),
        external_id: &external_id,
        success_callback_url: u.success_callback_url.trim(),
        failure_callback_url: u.failure_callback_url.trim(),
        success_redirect_url: u.success_redirect_url.trim(),
        failure_redirect_url: u.failure_redirect_url.trim(),
    })
    .map_err(|e| ValidationError::invalid("body", e.to_string()))?;
    Ok(PreparedPayment {
        external_id,
        currency: p.currency,
        amount,
        body: Bytes::from(body),
    })
}

/// A created payment: the hosted page exists. **It does not mean the payer paid**: redirect the
/// payer to `collect_url`, then confirm with status.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreatedPayment {
    /// The hosted payment page; redirect the payer here.
    pub collect_url: String,
    /// The externalId of the payment.
    pub external_id: ExternalId,
    /// True when the service replayed an earlier create with this externalId.
    pub retrieved: bool,
}
