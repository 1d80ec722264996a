//! The simulated endpoints, by name: faults are injected and requests journaled per endpoint.

use std::fmt;
use std::str::FromStr;

use axum::http::Method;

/// One endpoint of the three services. Its name (`transfer.send`, `collect.create`, ...) is what
/// the HTTP control API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Endpoint {
    /// POST /api/woo/send/money/fees
    TransferFees,
    /// POST /api/woo/send/money
    TransferSend,
    /// POST /api/woo/cancel/send/money
    TransferCancel,
    /// POST /api/woo/send/money/status
    TransferStatus,
    /// GET /api/woo/sending/countries
    TransferCountries,
    /// POST /api/woo/activity
    TransferActivity,
    /// POST /api/woo/statement
    TransferStatement,
    /// GET /api/woo/send/money/modes
    TransferModes,
    /// GET /api/governorates
    Governorates,
    /// GET /api/shops
    Shops,
    /// GET /payment/account/balance
    CollectBalance,
    /// POST /payment/whish (or the spec's /payment/svc)
    CollectCreate,
    /// POST /payment/collect/status
    CollectStatus,
    /// POST /payment/whish/refund (or the spec's /payment/svc/refund)
    CollectRefund,
    /// GET /account/balance
    TopupBalance,
    /// POST /v2/{provider}/fetch
    TopupFetch,
    /// POST /v2/{provider}/pay
    TopupPay,
}

/// Where the three services live under the sandbox's one listener.
pub(crate) const TRANSFER_PREFIX: &str = "/transfer/api";
pub(crate) const COLLECT_PREFIX: &str = "/collect";
pub(crate) const TOPUP_PREFIX: &str = "/topup";

impl Endpoint {
    /// Every endpoint.
    pub const ALL: [Endpoint; 17] = [
        Endpoint::TransferFees,
        Endpoint::TransferSend,
        Endpoint::TransferCancel,
        Endpoint::TransferStatus,
        Endpoint::TransferCountries,
        Endpoint::TransferActivity,
        Endpoint::TransferStatement,
        Endpoint::TransferModes,
        Endpoint::Governorates,
        Endpoint::Shops,
        Endpoint::CollectBalance,
        Endpoint::CollectCreate,
        Endpoint::CollectStatus,
        Endpoint::CollectRefund,
        Endpoint::TopupBalance,
        Endpoint::TopupFetch,
        Endpoint::TopupPay,
    ];

    /// The name used by the control API.
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::TransferFees => "transfer.fees",
            Endpoint::TransferSend => "transfer.send",
            Endpoint::TransferCancel => "transfer.cancel",
            Endpoint::TransferStatus => "transfer.status",
            Endpoint::TransferCountries => "transfer.countries",
            Endpoint::TransferActivity => "transfer.activity",
            Endpoint::TransferStatement => "transfer.statement",
            Endpoint::TransferModes => "transfer.modes",
            Endpoint::Governorates => "locations.governorates",
            Endpoint::Shops => "locations.shops",
            Endpoint::CollectBalance => "collect.balance",
            Endpoint::CollectCreate => "collect.create",
            Endpoint::CollectStatus => "collect.status",
            Endpoint::CollectRefund => "collect.refund",
            Endpoint::TopupBalance => "topup.balance",
            Endpoint::TopupFetch => "topup.fetch",
            Endpoint::TopupPay => "topup.pay",
        }
    }

    /// The service whose credentials the endpoint takes.
    pub(crate) fn service(self) -> Service {
        match self {
            Endpoint::CollectBalance
            | Endpoint::CollectCreate
            | Endpoint::CollectStatus
            | Endpoint::CollectRefund => Service::Collect,
            Endpoint::TopupBalance | Endpoint::TopupFetch | Endpoint::TopupPay => Service::Topup,
            _ => Service::Transfer,
        }
    }

    /// Find the endpoint of a request, and the provider path segment for the top-up ones.
    pub(crate) fn identify(method: &Method, path: &str) -> Option<(Endpoint, Option<String>)> {
        let get = method == Method::GET;
        let post = method == Method::POST;
        if let Some(p) = path.strip_prefix(TRANSFER_PREFIX) {
            let e = match (p, get, post) {
                ("/api/woo/send/money/fees", _, true) => Endpoint::TransferFees,
                ("/api/woo/send/money", _, true) => Endpoint::TransferSend,
                ("/api/woo/cancel/send/money", _, true) => Endpoint::TransferCancel,
                ("/api/woo/send/money/status", _, true) => Endpoint::TransferStatus,
                ("/api/woo/sending/countries", true, _) => Endpoint::TransferCountries,
                ("/api/woo/activity", _, true) => Endpoint::TransferActivity,
                ("/api/woo/statement", _, true) => Endpoint::TransferStatement,
                ("/api/woo/send/money/modes", true, _) => Endpoint::TransferModes,
                ("/api/governorates", true, _) => Endpoint::Governorates,
                ("/api/shops", true, _) => Endpoint::Shops,
                _ => return None,
            };
            return Some((e, None));
        }
        if let Some(p) = path.strip_prefix(COLLECT_PREFIX) {
            let e = match (p, get, post) {
                ("/payment/account/balance", true, _) => Endpoint::CollectBalance,
                // The spec anonymizes the brand as `svc`; the live service uses `whish`.
                ("/payment/svc" | "/payment/whish", _, true) => Endpoint::CollectCreate,
                ("/payment/collect/status", _, true) => Endpoint::CollectStatus,
                ("/payment/svc/refund" | "/payment/whish/refund", _, true) => {
                    Endpoint::CollectRefund
                }
                _ => return None,
            };
            return Some((e, None));
        }
        if let Some(p) = path.strip_prefix(TOPUP_PREFIX) {
            if p == "/account/balance" && get {
                return Some((Endpoint::TopupBalance, None));
            }
            let rest = p.strip_prefix("/v2/")?;
            let (provider, action) = rest.split_once('/')?;
            if provider.is_empty() || !post {
                return None;
            }
            let provider = decode_segment(provider);
            return match action {
                "fetch" => Some((Endpoint::TopupFetch, Some(provider))),
                "pay" => Some((Endpoint::TopupPay, Some(provider))),
                _ => None,
            };
        }
        None
    }
}

/// Percent-decode one path segment (the provider code).
fn decode_segment(s: &str) -> String {
    url::form_urlencoded::parse(format!("p={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Endpoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Endpoint::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| format!("unknown endpoint `{s}`"))
    }
}

/// The three services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    Transfer,
    Collect,
    Topup,
}

/// The collect rate query that v1.4.2 removed (`/payment/whish/rate`, `/payment/svc/rate`).
pub(crate) fn is_removed_rate_query(path: &str) -> bool {
    path.strip_prefix(COLLECT_PREFIX)
        .is_some_and(|p| matches!(p, "/payment/whish/rate" | "/payment/svc/rate"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_paths_are_found() {
        for e in Endpoint::ALL {
            assert_eq!(e.as_str().parse::<Endpoint>(), Ok(e));
        }
        assert_eq!(
            Endpoint::identify(&Method::POST, "/transfer/api/api/woo/send/money"),
            Some((Endpoint::TransferSend, None))
        );
        assert_eq!(
            Endpoint::identify(&Method::POST, "/topup/v2/du%2Fae/pay"),
            Some((Endpoint::TopupPay, Some("du/ae".into())))
        );
        assert_eq!(
            Endpoint::identify(&Method::GET, "/transfer/api/api/woo/send/money"),
            None
        );
    }
}
