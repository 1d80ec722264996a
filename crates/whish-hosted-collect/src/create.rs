//! Creating a payment.

use serde::Serialize;
use url::Url;
use whish_core::runtime::Bytes;
use whish_core::{Amount, CallbackAddresses, Currency, ExternalId, ValidationError};

macro_rules! address {
    ($(#[$m:meta])* $name:ident, $field:literal) => {
        $(#[$m])*
        ///
        /// Its own type, so it cannot be passed where another of the four addresses is expected.
        /// Built from an `http`/`https` address with a host; what is sent is the parsed URL's
        /// own serialization, exactly what was checked. Whether it must be public is the
        /// client's rule, checked when the payment is prepared.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(Url);

        impl $name {
            /// Parse and keep the address.
            ///
            /// # Errors
            ///
            /// A `ValidationError` naming the field and the rule the value breaks.
            pub fn new(url: &str) -> Result<$name, ValidationError> {
                CallbackAddresses::AllowLocal
                    .check(url, $field)
                    .map($name)
            }

            /// The same address with `name=value` appended to its query (percent-encoded), for
            /// your own reference: the service adds none of its own. Read it back with
            /// [`callback::reference`](crate::callback::reference).
            pub fn with_reference(mut self, name: &str, value: &str) -> $name {
                self.0.query_pairs_mut().append_pair(name, value);
                self
            }

            /// The address as it will be sent.
            pub fn as_str(&self) -> &str {
                self.0.as_str()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = ValidationError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $name::new(s)
            }
        }
    };
}

address!(
    /// `successCallbackUrl`: the service calls it with a bodiless GET when the link is paid.
    SuccessCallbackUrl,
    "successCallbackUrl"
);
address!(
    /// `failureCallbackUrl`: the service calls it with a bodiless GET when one attempt fails (the
    /// link stays payable).
    FailureCallbackUrl,
    "failureCallbackUrl"
);
address!(
    /// `successRedirectUrl`: the payer's browser goes here after paying.
    SuccessRedirectUrl,
    "successRedirectUrl"
);
address!(
    /// `failureRedirectUrl`: the payer's browser goes here after a failed attempt.
    FailureRedirectUrl,
    "failureRedirectUrl"
);

/// The four addresses every payment needs. All four must be public http(s) addresses: the
/// service answers HTTP 403 for loopback, private or local ones, and the SDK refuses them before
/// sending.
///
/// Each address has its own type, so swapping two of them does not compile:
///
/// ```compile_fail
/// use whish_hosted_collect::{CollectUrls, FailureCallbackUrl, SuccessCallbackUrl, SuccessRedirectUrl, FailureRedirectUrl};
/// let ok = SuccessCallbackUrl::new("https://shop.example.com/ok").unwrap();
/// let ko = FailureCallbackUrl::new("https://shop.example.com/ko").unwrap();
/// let thanks = SuccessRedirectUrl::new("https://shop.example.com/thanks").unwrap();
/// let retry = FailureRedirectUrl::new("https://shop.example.com/retry").unwrap();
/// let urls = CollectUrls::new(ko, ok, thanks, retry); // success and failure swapped
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectUrls {
    /// GET when the link is paid.
    pub success_callback_url: SuccessCallbackUrl,
    /// GET when an attempt fails (the link stays payable).
    pub failure_callback_url: FailureCallbackUrl,
    /// The payer's browser goes here after success.
    pub success_redirect_url: SuccessRedirectUrl,
    /// The payer's browser goes here after failure.
    pub failure_redirect_url: FailureRedirectUrl,
}

impl CollectUrls {
    /// The four addresses.
    ///
    /// ```
    /// use whish_hosted_collect::{CollectUrls, FailureCallbackUrl, FailureRedirectUrl, SuccessCallbackUrl, SuccessRedirectUrl};
    /// let urls = CollectUrls::new(
    ///     SuccessCallbackUrl::new("https://shop.example.com/whish/ok")?.with_reference("order", "A-17"),
    ///     FailureCallbackUrl::new("https://shop.example.com/whish/ko")?.with_reference("order", "A-17"),
    ///     SuccessRedirectUrl::new("https://shop.example.com/thanks")?,
    ///     FailureRedirectUrl::new("https://shop.example.com/retry")?,
    /// );
    /// assert_eq!(urls.success_callback_url.as_str(), "https://shop.example.com/whish/ok?order=A-17");
    /// # Ok::<(), whish_core::ValidationError>(())
    /// ```
    pub fn new(
        success_callback_url: SuccessCallbackUrl,
        failure_callback_url: FailureCallbackUrl,
        success_redirect_url: SuccessRedirectUrl,
        failure_redirect_url: FailureRedirectUrl,
    ) -> CollectUrls {
        CollectUrls {
            success_callback_url,
            failure_callback_url,
            success_redirect_url,
            failure_redirect_url,
        }
    }
}

/// A payment to create: amount, currency and the four addresses are required; invoice and
/// externalId are optional (an externalId is generated when you give none).
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a payment does nothing until it is prepared and created"]
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
#[must_use = "a prepared payment does nothing until it is created"]
pub struct PreparedPayment {
    pub(crate) external_id: ExternalId,
    pub(crate) currency: Currency,
    pub(crate) amount: Amount,
    pub(crate) body: Bytes,
    /// Set before the first byte of a create leaves (see [`whish_core::verdict::DeliveryMark`]).
    pub(crate) delivery: whish_core::verdict::DeliveryMark,
    /// One of its four addresses is not public (a local sandbox's opt-in): only then can a 403
    /// be the service's own refusal of it.
    pub(crate) non_public: bool,
}

impl PreparedPayment {
    /// The delivery mark this request carries across calls: set before the first byte of a
    /// send leaves, so a dropped future still counts as "may have arrived". A store that
    /// knows the request was sent before (a journal) sets it before sending it again.
    pub fn delivery(&self) -> &whish_core::verdict::DeliveryMark {
        &self.delivery
    }

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

    /// Rebuild a prepared payment from the exact bytes of [`body`](Self::body), stored before
    /// its first send (the externalId, currency and amount are read from them). Creating it
    /// again replays the recorded result; it never creates a second payment. Pass only bytes
    /// that came from `body()`: the checks of
    /// [`prepare_payment`](crate::CollectClient::prepare_payment) are not repeated.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn from_stored(body: impl Into<Bytes>) -> Result<PreparedPayment, ValidationError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Stored {
            #[serde(with = "whish_core::runtime::amount_as_string")]
            amount: Amount,
            currency: Currency,
            external_id: String,
        }
        let body = body.into();
        let s: Stored = serde_json::from_slice(&body)
            .map_err(|_| ValidationError::invalid("body", "is not a stored create body"))?;
        Ok(PreparedPayment {
            external_id: ExternalId::new(s.external_id)?,
            currency: s.currency,
            amount: s.amount,
            body,
            delivery: whish_core::verdict::DeliveryMark::sent_before(),
            // Sent before: whatever answers now, a page says nothing of the first attempt.
            non_public: false,
        })
    }
}

/// A checked refund, its body serialized once; from
/// [`CollectClient::prepare_refund`](crate::CollectClient::prepare_refund). Its idempotency key
/// is the original payment's externalId: sending it again refunds nothing twice.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a prepared refund does nothing until it is sent"]
pub struct PreparedRefund {
    pub(crate) external_id: ExternalId,
    pub(crate) currency: Currency,
    pub(crate) body: Bytes,
    /// Set before the first byte of a refund leaves (see [`whish_core::verdict::DeliveryMark`]).
    pub(crate) delivery: whish_core::verdict::DeliveryMark,
}

impl PreparedRefund {
    /// The delivery mark this request carries across calls: set before the first byte of a
    /// send leaves, so a dropped future still counts as "may have arrived". A store that
    /// knows the request was sent before (a journal) sets it before sending it again.
    pub fn delivery(&self) -> &whish_core::verdict::DeliveryMark {
        &self.delivery
    }

    /// The externalId of the payment to refund (the refund's idempotency key).
    pub fn external_id(&self) -> &ExternalId {
        &self.external_id
    }
    /// The currency of the payment.
    pub fn currency(&self) -> &Currency {
        &self.currency
    }
    /// The exact JSON body every send of this refund carries.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Rebuild a prepared refund from the exact bytes of [`body`](Self::body).
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn from_stored(body: impl Into<Bytes>) -> Result<PreparedRefund, ValidationError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Stored {
            currency: Currency,
            external_id: String,
        }
        let body = body.into();
        let s: Stored = serde_json::from_slice(&body)
            .map_err(|_| ValidationError::invalid("body", "is not a stored refund body"))?;
        Ok(PreparedRefund {
            external_id: ExternalId::new(s.external_id)?,
            currency: s.currency,
            body,
            delivery: whish_core::verdict::DeliveryMark::sent_before(),
        })
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody<'a> {
    #[serde(with = "whish_core::runtime::amount_as_string")]
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
        ("successCallbackUrl", &u.success_callback_url.0),
        ("failureCallbackUrl", &u.failure_callback_url.0),
        ("successRedirectUrl", &u.success_redirect_url.0),
        ("failureRedirectUrl", &u.failure_redirect_url.0),
    ];
    let mut non_public = false;
    for (field, url) in urls {
        // The client's rule (public only, unless the sandbox opt-in) on the parsed address.
        callbacks.check_parsed(url, field)?;
        non_public |= CallbackAddresses::PublicOnly
            .check_parsed(url, field)
            .is_err();
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
        success_callback_url: u.success_callback_url.as_str(),
        failure_callback_url: u.failure_callback_url.as_str(),
        success_redirect_url: u.success_redirect_url.as_str(),
        failure_redirect_url: u.failure_redirect_url.as_str(),
    })
    .map_err(|e| ValidationError::invalid("body", e.to_string()))?;
    Ok(PreparedPayment {
        external_id,
        currency: p.currency,
        amount,
        body: Bytes::from(body),
        delivery: whish_core::verdict::DeliveryMark::new(),
        non_public,
    })
}

/// A created payment: the hosted page exists. **It does not mean the payer paid**: redirect the
/// payer to `collect_url`, then confirm with status.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CreatedPayment {
    /// The hosted payment page; redirect the payer here.
    pub collect_url: String,
    /// The externalId of the payment.
    pub external_id: ExternalId,
    /// True when the service replayed an earlier create with this externalId.
    pub retrieved: bool,
    /// The display message the answer carried, if any (usually none on success).
    pub dialog: Option<whish_core::Dialog>,
}
