//! Every refusal happens before anything is sent (hit count 0), with its own clear error.

use crate::support::*;
use whish_core::{Currency, Error as CoreError, ValidationKind};
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FeeRequest, FirstName,
    Identity, LastName, Reason, ReportRange, SourceOfFunds, StatusQuery,
};

fn kind_of<T: std::fmt::Debug>(
    r: Result<T, whish_money_transfer::Error>,
) -> (String, ValidationKind) {
    match r.expect_err("refused") {
        CoreError::Validation(v) => (v.field, v.kind),
        other => panic!("not a validation error: {other:?}"),
    }
}

#[tokio::test]
async fn refusals_send_nothing() {
    let server = httpmock::MockServer::start_async().await;
    let any = server
        .mock_async(|_, then| {
            then.status(200).body(whish_testkit::fixture(
                "money-transfer/send.cash-collection.success.json",
            ));
        })
        .await;
    let c = client(&server.base_url(), 0);
    let with_receiver = |r: Customer, birth: &str| {
        CashCollectionSend::new(
            CountryId::LEBANON,
            Currency::Usd,
            amount("10"),
            sender(),
            CashReceiver::new(r, Identity::new(dob(birth))),
            Reason::Other,
            SourceOfFunds::Other,
        )
    };
    let cases: Vec<(CashCollectionSend, &str, ValidationKind)> = vec![
        (
            with_receiver(
                Customer::new(FirstName::new("محمد"), LastName::new("Haddad"), "+9613"),
                "07-03-1990",
            ),
            "receiver.firstName",
            ValidationKind::NotEnglish,
        ),
        (
            with_receiver(
                Customer::new(FirstName::new("Rami"), LastName::new("Hadd4d"), "+9613"),
                "07-03-1990",
            ),
            "receiver.lastName",
            ValidationKind::NotEnglish,
        ),
        (
            with_receiver(
                Customer::new(FirstName::new("Rami"), LastName::new("Haddad"), "+9613")
                    .middle_name("José"),
                "07-03-1990",
            ),
            "receiver.middleName",
            ValidationKind::NotEnglish,
        ),
        (
            with_receiver(
                Customer::new(FirstName::new(""), LastName::new("Haddad"), "+9613"),
                "07-03-1990",
            ),
            "receiver.firstName",
            ValidationKind::Missing,
        ),
        (
            with_receiver(
                Customer::new(FirstName::new("Rami"), LastName::new("Haddad"), " "),
                "07-03-1990",
            ),
            "receiver.phone",
            ValidationKind::Missing,
        ),
        (
            cash("10.123", Currency::Usd),
            "amount",
            ValidationKind::TooManyDecimals { allowed: 2 },
        ),
        (
            cash("1000.5", Currency::Lbp),
            "amount",
            ValidationKind::TooManyDecimals { allowed: 0 },
        ),
        (
            cash("0", Currency::Usd),
            "amount",
            ValidationKind::NotPositive,
        ),
        (
            cash("10", Currency::Other("EUR".into())),
            "currencyId",
            ValidationKind::UnsupportedCurrency,
        ),
        (
            cash("10", Currency::Usd).callback_url("http://localhost:8080/cb"),
            "callbackUrl",
            ValidationKind::NotPublicUrl {
                reason: "localhost names are loopback".into(),
            },
        ),
    ];
    for (send, field, kind) in cases {
        assert_eq!(
            kind_of(c.prepare_send(send)),
            (field.to_owned(), kind),
            "{field}"
        );
    }
    // A date of birth is checked when it is built: a bad one never reaches a send.
    for (text, kind) in [
        (
            "31-02-1990",
            ValidationKind::BadDate {
                format: "dd-MM-yyyy",
            },
        ),
        (
            "1990-03-07",
            ValidationKind::BadDate {
                format: "dd-MM-yyyy",
            },
        ),
        ("01-01-2999", ValidationKind::DateInFuture),
    ] {
        let e = DateOfBirth::parse(text).expect_err(text);
        assert_eq!((e.field.as_str(), e.kind), ("identity.dateBirth", kind));
    }
    assert!(CountryId::new(0).is_err() && CountryId::new(-3).is_err());
    // No invented minimum: the transfer spec leaves amounts to the price list.
    let _ = c
        .prepare_send(cash("0.5", Currency::Usd))
        .expect("USD 0.50 is the price list's to judge");
    let _ = c
        .prepare_send(cash("999", Currency::Lbp))
        .expect("LBP 999 is the price list's to judge");

    assert_eq!(
        kind_of(
            c.fees(&FeeRequest::new(
                CountryId::LEBANON,
                Currency::Usd,
                amount("-1")
            ))
            .await
        )
        .0,
        "amount"
    );
    assert_eq!(
        kind_of(
            c.fees(
                &FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount("5")).phone_number(" ")
            )
            .await
        )
        .0,
        "phoneNumber"
    );
    assert_eq!(
        kind_of(c.status(&StatusQuery::TransferId(" ".into())).await).0,
        "transferId"
    );
    assert_eq!(
        kind_of(c.status(&StatusQuery::LtnNumber(String::new())).await).0,
        "transferId"
    );
    assert_eq!(kind_of(c.prepare_cancel("", None)).0, "ltnNumber");
    assert!(
        ReportRange::starting("2026-08-31 00:00:00")
            .and_then(|r| r.until("2026-08-01 00:00:00"))
            .is_err()
    );
    assert!(
        ReportRange::starting("2026-08-01")
            .and_then(|r| r.until("2026-08-31 00:00:00"))
            .is_err()
    );
    let eur = ReportRange::starting("2026-08-01 00:00:00")
        .and_then(|r| r.until("2026-08-31 00:00:00"))
        .expect("range")
        .currency(Currency::Other("EUR".into()));
    assert_eq!(kind_of(c.activity(&eur).await).0, "currencyId");
    assert!("Gifts".parse::<Reason>().is_err());
    any.assert_calls_async(0).await;
}

#[test]
fn settings_are_checked_and_named() {
    use whish_core::SecretString;
    use whish_money_transfer::TransferClient;
    let e = TransferClient::builder("http://transfer.example.com/api")
        .username("u")
        .key(SecretString::from("k"))
        .build()
        .expect_err("plain http to a public host");
    assert_eq!(e.setting, "base_url");
    let e = TransferClient::builder("https://t.example.com/api")
        .username(" ")
        .key(SecretString::from("k"))
        .build()
        .expect_err("no username");
    assert_eq!(e.setting, "username");
    assert_eq!(e.to_string(), "setting `username` is required");
    let e = TransferClient::builder("https://t.example.com/api")
        .username("u")
        .build()
        .expect_err("no key");
    assert_eq!(e.setting, "key");
    for e in [
        TransferClient::builder("nope").build().expect_err("bad"),
        TransferClient::builder("https://t.example.com")
            .build()
            .expect_err("no username"),
    ] {
        assert!(!e.to_string().contains("WHISH_"), "{e}");
    }
    let c = client("https://t.example.com", 0);
    assert!(!format!("{c:?}").contains(KEY));
}

#[test]
fn local_callbacks_are_an_opt_in_for_a_loopback_base_only() {
    use whish_core::SecretString;
    use whish_money_transfer::TransferClient;
    let build = |base: &str| {
        TransferClient::builder(whish_core::ClientSettings::new(base).allow_local_callbacks())
            .username("user")
            .key(SecretString::from("k"))
            .build()
    };
    let err = build("https://transfer.example.com/api").expect_err("not loopback");
    assert_eq!(err.setting, "allow_local_callbacks");
    let c = build("http://127.0.0.1:9/api").expect("loopback base");
    let prepared = c
        .prepare_send(cash("10", Currency::Usd).callback_url("http://127.0.0.1:8080/cb"))
        .expect("a local callback is accepted in the sandbox");
    let body: serde_json::Value = serde_json::from_slice(prepared.body()).expect("json");
    assert_eq!(body["callbackUrl"], "http://127.0.0.1:8080/cb");
    assert!(matches!(
        kind_of(c.prepare_send(cash("10", Currency::Usd).callback_url("ftp://127.0.0.1/cb"))),
        (field, ValidationKind::Invalid { .. }) if field == "callbackUrl"
    ));
}

#[test]
fn a_send_is_quoted_on_its_own_terms_and_checked_against_the_quote_shown() {
    use whish_money_transfer::{PaymentMode, SendRequest};
    let send = SendRequest::from(cash("100.00", Currency::Usd).deduct_fees(true));
    let own = send.fee_request();
    assert_eq!(
        own,
        FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount("100"))
            .deduct_fees(true)
            .payment_mode(PaymentMode::CashCollection)
    );
    send.check_quoted(&own).expect("its own quote");
    // 100 and 100.00 are one amount.
    let same = FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount("100")).deduct_fees(true);
    send.check_quoted(&same).expect("the same money");
    let cases = [
        (
            FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount("100.01")).deduct_fees(true),
            "amount",
        ),
        (
            FeeRequest::new(CountryId::LEBANON, Currency::Lbp, amount("100")).deduct_fees(true),
            "currencyId",
        ),
        (
            FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount("100")),
            "deductFees",
        ),
        (
            FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount("100"))
                .deduct_fees(true)
                .payment_mode(PaymentMode::MobileWallet),
            "paymentMode",
        ),
    ];
    for (quoted, field) in cases {
        let e = send.check_quoted(&quoted).expect_err(field);
        assert_eq!(e.field, field, "{e}");
    }
    // A wallet is quoted for its receiver's phone.
    let wallet = SendRequest::from(wallet("25"));
    assert_eq!(
        wallet.fee_request(),
        FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount("25"))
            .payment_mode(PaymentMode::MobileWallet)
            .phone_number("+96170123456")
    );
}
