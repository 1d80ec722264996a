//! Shared helpers of the transfer tests.
#![allow(dead_code)]

use whish_core::{Amount, ClientSettings, Currency, RequestId, SecretString};
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
    LastName, MobileWalletSend, Reason, Sender, SourceOfFunds, TransferClient, WalletReceiver,
};
use whish_testkit::WireRequest;

pub const KEY: &str = "transfer-KEY-SECRET-77";

pub fn client(base: &str, retries: u32) -> TransferClient {
    TransferClient::builder(
        ClientSettings::new(format!("{base}/sandbox/api"))
            .policy(whish_testkit::fast_policy(retries)),
    )
    .username("merchant-7")
    .key(SecretString::from(KEY))
    .build()
    .expect("client")
}

pub fn dob(text: &str) -> DateOfBirth {
    DateOfBirth::parse(text).expect("date of birth")
}

pub fn sender() -> Sender {
    Sender::new(
        Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )
        .identity(Identity::new(dob("01-01-1980")).nationality("US")),
    )
}

pub fn receiver() -> Customer {
    Customer::new(
        FirstName::new("Rami"),
        LastName::new("Haddad"),
        "+96170123456",
    )
    .middle_name("K.")
}

pub fn amount(s: &str) -> Amount {
    s.parse().expect("amount")
}

pub fn cash(amount_text: &str, currency: Currency) -> CashCollectionSend {
    CashCollectionSend::new(
        CountryId::LEBANON,
        currency,
        amount(amount_text),
        sender(),
        CashReceiver::new(receiver(), Identity::new(dob("07-03-1990"))),
        Reason::FamilySupport,
        SourceOfFunds::Salary,
    )
}

pub fn wallet(amount_text: &str) -> MobileWalletSend {
    MobileWalletSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        amount(amount_text),
        sender(),
        WalletReceiver::new(receiver()),
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
