//! What an inbox row holds: its key (the change's own, stable across redeliveries) and a body
//! that lets any worker finish it.
//!
//! Three kinds of row:
//! - a transfer's status change (`transfer:<transferId>:<status>`), from a verified callback or
//!   the poller: handed to the transfer handler;
//! - a hosted payment's status (`collect:<externalId>:<status>`), as the status endpoint
//!   answered it: handed to the collect handler;
//! - a collect callback (`signal:<success|failure>:<currency>:<externalId>`), which holds no
//!   status: a worker reads the payment's status and records the payment's row. A success
//!   callback whose status does not show the payment settled is tried again.

use serde::{Deserialize, Serialize};
use whish_core::{Currency, ExternalId, RequestId};
use whish_hosted_collect::PaymentStatus;
use whish_money_transfer::TransferStatus;

use crate::{Source, Trigger};

/// The key prefix of a transfer's changes.
pub(crate) const TRANSFER_PREFIX: &str = "transfer:";

/// The body of an inbox row, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub(crate) enum Body {
    /// A transfer's status change.
    Transfer {
        transfer_id: String,
        request_id: i64,
        status: String,
        poller: bool,
    },
    /// A collect callback, to confirm with the status endpoint.
    Signal {
        success: bool,
        currency: String,
        external_id: String,
    },
    /// A hosted payment's status as the status endpoint answered it.
    Payment {
        currency: String,
        external_id: String,
        status: String,
        payer_phone_number: Option<String>,
        trigger: String,
    },
}

impl Body {
    pub(crate) fn transfer(
        transfer_id: &str,
        request_id: RequestId,
        status: &TransferStatus,
        source: Source,
    ) -> Body {
        Body::Transfer {
            transfer_id: transfer_id.to_owned(),
            request_id: request_id.get(),
            status: status.as_str().to_owned(),
            poller: source == Source::Poller,
        }
    }

    pub(crate) fn signal(success: bool, currency: &Currency, external_id: &ExternalId) -> Body {
        Body::Signal {
            success,
            currency: currency.code().to_owned(),
            external_id: external_id.as_str().to_owned(),
        }
    }

    pub(crate) fn payment(
        currency: &Currency,
        external_id: &ExternalId,
        status: &PaymentStatus,
        trigger: Trigger,
    ) -> Body {
        Body::Payment {
            currency: currency.code().to_owned(),
            external_id: external_id.as_str().to_owned(),
            status: status.collect_status.as_str().to_owned(),
            payer_phone_number: status.payer_phone_number.clone(),
            trigger: trigger_name(trigger).to_owned(),
        }
    }

    /// The row's key.
    pub(crate) fn key(&self) -> String {
        match self {
            Body::Transfer {
                transfer_id,
                status,
                ..
            } => format!("{TRANSFER_PREFIX}{transfer_id}:{status}"),
            Body::Signal {
                success,
                currency,
                external_id,
            } => format!(
                "signal:{}:{currency}:{external_id}",
                if *success { "success" } else { "failure" }
            ),
            Body::Payment {
                external_id,
                status,
                ..
            } => format!("collect:{external_id}:{status}"),
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Body, String> {
        serde_json::from_slice(bytes)
            .map_err(|e| format!("an inbox row this receiver cannot read: {e}"))
    }
}

fn trigger_name(trigger: Trigger) -> &'static str {
    match trigger {
        Trigger::SuccessCallback => "success-callback",
        Trigger::FailureCallback => "failure-callback",
        Trigger::Poller => "poller",
    }
}

pub(crate) fn trigger_of(name: &str) -> Trigger {
    match name {
        "success-callback" => Trigger::SuccessCallback,
        "failure-callback" => Trigger::FailureCallback,
        _ => Trigger::Poller,
    }
}

/// The payment a signal or payment row names.
pub(crate) fn payment_of(
    currency: &str,
    external_id: &str,
) -> Result<(Currency, ExternalId), String> {
    let id = ExternalId::new(external_id).map_err(|e| format!("an inbox row's externalId: {e}"))?;
    Ok((Currency::parse(currency), id))
}

/// A hosted payment's status as a payment row holds it (`collectStatus` is an open set: any
/// string decodes).
pub(crate) fn status_of(
    status: &str,
    payer_phone_number: Option<String>,
) -> Result<PaymentStatus, String> {
    serde_json::from_value(serde_json::json!({
        "collectStatus": status,
        "payerPhoneNumber": payer_phone_number,
    }))
    .map_err(|e| format!("an inbox row's status: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_row_reads_back_as_written_with_a_stable_key() {
        let id = ExternalId::new("order-7").expect("id");
        let status = status_of("success", Some("96170000000".into())).expect("a status");
        let rows = [
            Body::transfer(
                "T1",
                RequestId::new(42).expect("id"),
                &TransferStatus::Received,
                Source::Callback,
            ),
            Body::signal(true, &Currency::Usd, &id),
            Body::payment(&Currency::Lbp, &id, &status, Trigger::FailureCallback),
        ];
        let keys: Vec<String> = rows.iter().map(Body::key).collect();
        assert_eq!(
            keys,
            [
                "transfer:T1:RECEIVED",
                "signal:success:USD:order-7",
                "collect:order-7:success"
            ]
        );
        for row in rows {
            assert_eq!(Body::decode(&row.encode()).expect("decodes"), row);
        }
        assert!(Body::decode(b"{\"kind\":\"parcel\"}").is_err());
    }
}
