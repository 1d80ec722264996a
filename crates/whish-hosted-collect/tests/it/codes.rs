//! The generated code enum keeps every documented string exactly and decodes unknown ones.

use whish_hosted_collect::CollectCode;

#[test]
fn every_documented_code_round_trips_and_unknown_codes_decode() {
    assert_eq!(CollectCode::DOCUMENTED.len(), 33);
    whish_testkit::check_code_enum(
        CollectCode::DOCUMENTED,
        CollectCode::meaning,
        CollectCode::endpoints,
    );
}

#[test]
fn collect_specifics() {
    assert_eq!(
        "400".parse::<CollectCode>().expect("ok"),
        CollectCode::BadRequest
    );
    // Final for its externalId: the service replays a recorded failure (spec rule 1); a
    // retry with backoff is a new payment.
    assert!(CollectCode::SvcUnknownError.is_final());
    assert!(CollectCode::RefreshDenominations.is_final());
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
