//! The generated code enum keeps every documented string exactly and decodes unknown ones.

use whish_locations::LocationsCode;

#[test]
fn every_documented_code_round_trips_and_unknown_codes_decode() {
    assert_eq!(LocationsCode::DOCUMENTED.len(), 1);
    whish_testkit::check_code_enum(
        LocationsCode::DOCUMENTED,
        LocationsCode::meaning,
        LocationsCode::endpoints,
    );
}
