//! The generated code enum keeps every documented string exactly and decodes unknown ones.

use whish_intl_topup::TopupCode;

#[test]
fn every_documented_code_round_trips_and_unknown_codes_decode() {
    assert_eq!(TopupCode::DOCUMENTED.len(), 5);
    whish_testkit::check_code_enum(
        TopupCode::DOCUMENTED,
        TopupCode::meaning,
        TopupCode::endpoints,
    );
}
