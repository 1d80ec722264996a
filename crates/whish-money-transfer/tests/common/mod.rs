//! Shared helpers of the transfer tests.
#![allow(dead_code)]

use whish_core::{Amount, Currency, RequestId, SecretString};
use whish_money_transfer::{
    CashCollectionSend, Customer, MobileWalletSend, Reason, SourceOfFunds, TransferClient,
};
use whish_testkit::WireRequest;

pub const KEY: &str = "transfer-KEY-SECRET-77";

pub fn client(base: &str, retries: u32) -> TransferClient {
    TransferClient::builder(
        format!("{base}/sandbox/api"),
        "merchant-7",
        SecretString::from(KEY),
    )
    .policy(whish_testkit::fast_policy(retries))
    .build()
    .expect("client")
}

pub fn sender() -> Customer {
    Customer::new("John", "Smith", "+14155550100").nationality("US")
}

pub fn receiver() -> Customer {
    Customer::new("Rami", "Haddad", "+96170123456").middle_name("K.")
}

pub fn amount(s: &str) -> Amount {
    s.parse().expect("amount")
}

pub fn cash(amount_text: &str, currency: Currency) -> CashCollectionSend {
    CashCollectionSend::new(
        1,
        currency,
        amount(amount_text),
        sender(),
        receiver(),
        "07-03-1990",
        Reason::FamilySupport,
        SourceOfFunds::Salary,
    )
}

pub fn wallet(amount_text: &str) -> MobileWalletSend {
    MobileWalletSend::new(
        1,
        Currency::Usd,
        amount(amount_text),
        sender(),
        receiver(),
        Reason::Education,
        SourceOfFunds::Savings,
    )
}

pub fn rid(n: i64) -> RequestId {
    RequestId::new(n).expect("id")
}

/// A request with its generated Request-id replaced, for stable snapshots.
pub fn stable(mut r: WireRequest) -> WireRequest {
    for h in &mut r.headers {
        if h.0 == "request-id" && h.1.len() > 12 && !h.1.starts_with("1755") {
            h.1 = "[generated]".into();
        }
    }
    r
}
