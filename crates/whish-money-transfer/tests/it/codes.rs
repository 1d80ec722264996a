//! The generated code enum keeps every documented string exactly and decodes unknown ones.

use whish_money_transfer::TransferCode;

#[test]
fn every_documented_code_round_trips_and_unknown_codes_decode() {
    assert_eq!(TransferCode::DOCUMENTED.len(), 46);
    whish_testkit::check_code_enum(
        TransferCode::DOCUMENTED,
        TransferCode::meaning,
        TransferCode::endpoints,
    );
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
