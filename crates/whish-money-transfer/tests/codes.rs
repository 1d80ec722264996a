//! The generated code enum keeps every documented string exactly and decodes unknown ones.

use whish_core::ErrorCode;
use whish_money_transfer::TransferCode;

#[test]
fn every_documented_code_round_trips() {
    assert_eq!(TransferCode::DOCUMENTED.len(), 46);
    for code in TransferCode::DOCUMENTED {
        let text = code.as_str();
        assert_eq!(text.parse::<TransferCode>().expect("infallible"), *code);
        assert_eq!(code.to_string(), text);
        assert!(!code.is_unknown());
        assert!(!code.meaning().is_empty() && !code.handling().is_empty());
        assert!(!code.endpoints().is_empty());
        let json = serde_json::to_string(code).expect("json");
        assert_eq!(
            serde_json::from_str::<TransferCode>(&json).expect("back"),
            *code
        );
    }
}

#[test]
fn unknown_codes_decode_and_are_final() {
    let c: TransferCode = "some.new.code".parse().expect("infallible");
    assert_eq!(c, TransferCode::Unknown("some.new.code".into()));
    assert_eq!(c.as_str(), "some.new.code");
    assert!(c.is_final());
    assert!(ErrorCode::is_unknown(&c));
    assert!(!c.is_challenge());
}

#[test]
fn literal_spellings_are_kept() {
    assert_eq!(
        TransferCode::ReceiverCustomerNameEnlgish.as_str(),
        "receiver.customer.name_enlgish"
    );
    assert_eq!(
        TransferCode::SenderCustomerNameEnlgish.as_str(),
        "sender.customer.name_enlgish"
    );
    assert_eq!(
        "sender.invalid.phone_number"
            .parse::<TransferCode>()
            .expect("ok"),
        TransferCode::SenderInvalidPhoneNumber
    );
    assert_eq!(
        "sender.invalid.phone.number"
            .parse::<TransferCode>()
            .expect("ok"),
        TransferCode::SenderInvalidPhoneNumberEmpty
    );
    assert_eq!(TransferCode::GenericError.as_str(), "error");
    assert_eq!(
        "transfer.already.done".parse::<TransferCode>().expect("ok"),
        TransferCode::TransferAlreadyDone
    );
    assert!(
        TransferCode::DOCUMENTED.iter().all(|c| c.is_final()),
        "every documented transfer code is final"
    );
    assert!(
        "500".parse::<TransferCode>().expect("ok").is_unknown(),
        "500 is Pending, never a code"
    );
}
