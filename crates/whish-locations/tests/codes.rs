//! The generated code enum keeps every documented string exactly and decodes unknown ones.

use whish_core::ErrorCode;
use whish_locations::LocationsCode;

#[test]
fn every_documented_code_round_trips() {
    assert_eq!(LocationsCode::DOCUMENTED.len(), 1);
    for code in LocationsCode::DOCUMENTED {
        let text = code.as_str();
        assert_eq!(text.parse::<LocationsCode>().expect("infallible"), *code);
        assert_eq!(code.to_string(), text);
        assert!(!code.is_unknown());
        assert!(!code.meaning().is_empty() && !code.handling().is_empty());
        assert!(!code.endpoints().is_empty());
        let json = serde_json::to_string(code).expect("json");
        assert_eq!(
            serde_json::from_str::<LocationsCode>(&json).expect("back"),
            *code
        );
    }
}

#[test]
fn unknown_codes_decode_and_are_final() {
    let c: LocationsCode = "some.new.code".parse().expect("infallible");
    assert_eq!(c, LocationsCode::Unknown("some.new.code".into()));
    assert_eq!(c.as_str(), "some.new.code");
    assert!(c.is_final());
    assert!(ErrorCode::is_unknown(&c));
    assert!(!c.is_challenge());
}
