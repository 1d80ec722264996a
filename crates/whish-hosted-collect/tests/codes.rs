//! The generated code enum keeps every documented string exactly and decodes unknown ones.

use whish_core::ErrorCode;
use whish_hosted_collect::CollectCode;

#[test]
fn every_documented_code_round_trips() {
    assert_eq!(CollectCode::DOCUMENTED.len(), 33);
    for code in CollectCode::DOCUMENTED {
        let text = code.as_str();
        assert_eq!(text.parse::<CollectCode>().expect("infallible"), *code);
        assert_eq!(code.to_string(), text);
        assert!(!code.is_unknown());
        assert!(!code.meaning().is_empty() && !code.handling().is_empty());
        assert!(!code.endpoints().is_empty());
        let json = serde_json::to_string(code).expect("json");
        assert_eq!(
            serde_json::from_str::<CollectCode>(&json).expect("back"),
            *code
        );
    }
}

#[test]
fn unknown_codes_decode_and_are_final() {
    let c: CollectCode = "some.new.code".parse().expect("infallible");
    assert_eq!(c, CollectCode::Unknown("some.new.code".into()));
    assert_eq!(c.as_str(), "some.new.code");
    assert!(c.is_final());
    assert!(ErrorCode::is_unknown(&c));
    assert!(!c.is_challenge());
}

#[test]
fn collect_specifics() {
    assert_eq!(
        "400".parse::<CollectCode>().expect("ok"),
        CollectCode::BadRequest
    );
    assert!(
        !CollectCode::SvcUnknownError.is_final(),
        "retry with backoff"
    );
    assert!(
        !CollectCode::Fatal.is_final(),
        "retry with the same externalId"
    );
    assert!(CollectCode::PurchaseConfirm.is_final());
    assert_eq!(
        CollectCode::ExternalIdNotExists.as_str(),
        "external_id.not_exists"
    );
}
